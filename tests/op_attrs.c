/* op_attrs.c: an operator's attributes written as text (linked into every test binary). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "op_attrs.h"

/* One attribute, "key=value" or "value" (tok is modified). */
static void put(attrs_t *A, char *tok)
{
    assert_true(A->n < 8);
    sp_attr_t *a = &A->a[A->n];
    char *val = tok, *eq = strchr(tok, '=');
    if (eq) {
        *eq = 0;
        snprintf(A->keys[A->n], 64, "%s", tok);
        a->key = A->keys[A->n];
        val = eq + 1;
    }
    if (val[0] == '[') {
        a->kind = SP_ATTR_LIST;
        a->list = A->lists[A->n];
        char *q = val + 1;
        while (*q && *q != ']') {
            assert_true(a->nlist < 8);
            a->list[a->nlist++] = strtoll(q, &q, 10);
            if (*q == ',')
                q++;
        }
    } else if (val[0] == '-' || (val[0] >= '0' && val[0] <= '9')) {
        a->kind = SP_ATTR_NUM;
        assert_int_equal(fmpq_set_str(a->num, val, 10), 0);
        fmpq_canonicalise(a->num);
    } else {
        a->kind = SP_ATTR_NAME;
        snprintf(A->names[A->n], 64, "%s", val);
        a->name = A->names[A->n];
    }
    A->n++;
}

void attrs_init(attrs_t *A, const char *spec)
{
    memset(A, 0, sizeof(*A));
    for (int i = 0; i < 8; i++)
        fmpq_init(A->a[i].num);
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, ";");
        char tok[64];
        assert_true(len < sizeof(tok));
        memcpy(tok, p, len);
        tok[len] = 0;
        p += len + (p[len] == ';');
        put(A, tok);
    }
}

void attrs_add(attrs_t *A, const char *fmt, ...)
{
    char tok[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tok, sizeof tok, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof tok);
    put(A, tok);
}

void attrs_clear(attrs_t *A)
{
    for (int i = 0; i < 8; i++)
        fmpq_clear(A->a[i].num);
}
