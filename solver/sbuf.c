/* sbuf.c: growable string buffers with an optional length cap. */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <flint/flint.h>

void sp_sbuf_init(sp_sbuf_t *b)
{
    memset(b, 0, sizeof(*b));
}

void sp_sbuf_clear(sp_sbuf_t *b)
{
    flint_free(b->s);
    memset(b, 0, sizeof(*b));
}

static int reserve(sp_sbuf_t *b, size_t extra)
{
    if (b->failed)
        return 0;
    if (b->len + extra + 1 <= b->alloc)
        return 1;
    size_t n = b->alloc ? b->alloc : 64;
    while (n < b->len + extra + 1)
        n *= 2;
    char *s = flint_realloc(b->s, n);
    b->s = s;
    b->alloc = n;
    return 1;
}

static void append(sp_sbuf_t *b, const char *s, size_t n)
{
    if (b->truncated || b->failed)
        return;
    if (b->cap && b->len + n > b->cap) {
        n = b->cap > b->len ? b->cap - b->len : 0;
        b->truncated = 1;
    }
    if (!reserve(b, n + 3))
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    if (b->truncated) {
        memcpy(b->s + b->len, "...", 3);
        b->len += 3;
    }
    b->s[b->len] = 0;
}

void sp_sbuf_putc(sp_sbuf_t *b, char c) { append(b, &c, 1); }

void sp_sbuf_put_fmpq(sp_sbuf_t *b, const fmpq_t q)
{
    if (b->truncated || b->failed)
        return;
    /* sizeinbase may exceed the true digit count by one: only cut what surely does not fit */
    size_t digits = fmpz_sizeinbase(fmpq_numref(q), 10) + fmpz_sizeinbase(fmpq_denref(q), 10);
    if (b->cap && b->len + digits > b->cap + 3) {
        b->len = b->len < b->cap ? b->len : b->cap;
        b->truncated = 1;
        if (!reserve(b, 3))
            return;
        memcpy(b->s + b->len, "...", 4);
        b->len += 3;
        return;
    }
    char *s = fmpq_get_str(NULL, 10, q);
    sp_sbuf_puts(b, s);
    flint_free(s);
}

void sp_sbuf_puts(sp_sbuf_t *b, const char *s) { append(b, s, strlen(s)); }

void sp_sbuf_printf(sp_sbuf_t *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if ((size_t)k < sizeof(small)) {
        append(b, small, (size_t)k);
        return;
    }
    char *big = flint_malloc((size_t)k + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    append(b, big, (size_t)k);
    flint_free(big);
}

char *sp_sbuf_take(sp_sbuf_t *b)
{
    char *s = b->s;
    if (s == NULL) {
        s = flint_malloc(1);
        s[0] = 0;
    }
    memset(b, 0, sizeof(*b));
    return s;
}

size_t sp_bsearch_u32(const uint32_t *a, size_t n, uint32_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < n && a[lo] == key) ? lo : n;
}

char *sp_strdup(const char *s)
{
    size_t n = strlen(s);
    char *d = flint_malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

char *sp_strndup(const char *s, size_t n)
{
    size_t k = strnlen(s, n);
    char *d = flint_malloc(k + 1);
    memcpy(d, s, k);
    d[k] = 0;
    return d;
}
