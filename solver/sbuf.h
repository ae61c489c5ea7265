/* sbuf.h: growable string buffers with an optional length cap, for printers. */
#ifndef SP_SBUF_H
#define SP_SBUF_H

#include <stddef.h>
#include <stdint.h>

#include <flint/fmpq.h>

/*
 * A NUL-terminated string being built.  When cap > 0, the text stops at cap characters and "..."
 * is appended once (truncated = 1).  On allocation failure the buffer keeps what it had and sets
 * failed.  sp_sbuf_take hands the text over (free with flint_free) and resets the buffer.
 */
typedef struct {
    char *s;
    size_t len, alloc, cap;
    int truncated, failed;
} sp_sbuf_t;

void sp_sbuf_init(sp_sbuf_t *b);
void sp_sbuf_clear(sp_sbuf_t *b);
void sp_sbuf_putc(sp_sbuf_t *b, char c);
void sp_sbuf_puts(sp_sbuf_t *b, const char *s);
void sp_sbuf_printf(sp_sbuf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The decimal text of q ("-7", "1/3").  A number longer than the room left under cap is not
   converted at all (a huge constant would cost time and memory the cap is there to bound): the
   text is cut there. */
void sp_sbuf_put_fmpq(sp_sbuf_t *b, const fmpq_t q);
char *sp_sbuf_take(sp_sbuf_t *b);

/* Copies of strings in memory from flint_malloc (free with flint_free); never NULL (FLINT aborts
   through its abort hook when memory runs out). */
char *sp_strdup(const char *s);
char *sp_strndup(const char *s, size_t n);

/* Index of key in the ascending array a[0..n), or n if absent. */
size_t sp_bsearch_u32(const uint32_t *a, size_t n, uint32_t key);

#endif
