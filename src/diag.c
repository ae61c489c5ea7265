/* diag.c: diagnostics: collect errors with locations, print them with source and caret lines. */
#include <flint/flint.h>
#include "diag.h"

#include <stdlib.h>
#include <string.h>

/* Longest source line shown whole; longer lines are cut to a window around the column. */
#define SP_DIAG_LINE_WINDOW 160

const char *sp_diag_code_name(sp_diag_code_t code)
{
    switch (code) {
    case SP_DIAG_NONE: return "none";
    case SP_DIAG_SYNTAX: return "syntax";
    case SP_DIAG_LIMIT: return "limit";
    case SP_DIAG_ELEMENTS: return "elements";
    case SP_DIAG_IO: return "io";
    case SP_DIAG_NAME: return "name";
    case SP_DIAG_SHAPE: return "shape";
    case SP_DIAG_LAYOUT: return "layout";
    case SP_DIAG_LINEAGE: return "lineage";
    case SP_DIAG_INTERNAL: return "internal";
    case SP_DIAG_NOMEM: return "nomem";
    case SP_DIAG_USAGE: return "usage";
    }
    return "unknown";
}

const char *sp_severity_name(sp_severity_t sev)
{
    switch (sev) {
    case SP_SEV_ERROR: return "error";
    case SP_SEV_WARNING: return "warning";
    case SP_SEV_NOTE: return "note";
    }
    return "error";
}

void sp_diags_init(sp_diags_t d)
{
    memset(d, 0, sizeof(*d));
    d->max_errors = SP_DIAGS_DEFAULT_MAX_ERRORS;
}

void sp_diags_clear(sp_diags_t d)
{
    for (size_t i = 0; i < d->n; i++)
        flint_free(d->items[i].msg);
    flint_free(d->items);
    for (size_t i = 0; i < d->nfiles; i++)
        flint_free(d->files[i]);
    flint_free(d->files);
    for (size_t i = 0; i < d->nsrcs; i++) {
        flint_free(d->srcs[i].file);
        flint_free(d->srcs[i].text);
    }
    flint_free(d->srcs);
    memset(d, 0, sizeof(*d));
}

void sp_diags_set_max_errors(sp_diags_t d, size_t max_errors) { d->max_errors = max_errors; }

void sp_diags_mark(const sp_diags_t d, sp_diags_mark_t *m)
{
    m->n = d->n;
    m->nerrors = d->nerrors;
    m->full = d->full;
    m->last_dropped = d->last_dropped;
    m->nomem = d->nomem;
}

void sp_diags_restore(sp_diags_t d, const sp_diags_mark_t *m)
{
    for (size_t i = m->n; i < d->n; i++)
        flint_free(d->items[i].msg);
    if (m->n < d->n)
        d->n = m->n;
    d->nerrors = m->nerrors;
    d->full = m->full;
    d->last_dropped = m->last_dropped;
    d->nomem = m->nomem;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *r = flint_malloc(n + 1);
    if (r != NULL)
        memcpy(r, s, n + 1);
    return r;
}

/* The list's copy of a file name, made once per distinct name; NULL for NULL or no memory. */
static const char *intern_file(sp_diags_t d, const char *file)
{
    if (file == NULL)
        return NULL;
    for (size_t i = 0; i < d->nfiles; i++)
        if (strcmp(d->files[i], file) == 0)
            return d->files[i];
    if (d->nfiles == d->files_alloc) {
        size_t na = d->files_alloc ? 2 * d->files_alloc : 4;
        char **nf = flint_realloc(d->files, na * sizeof(*nf));
        if (nf == NULL)
            return NULL;
        d->files = nf;
        d->files_alloc = na;
    }
    char *c = dup_str(file);
    if (c == NULL)
        return NULL;
    d->files[d->nfiles++] = c;
    return c;
}

static int push(sp_diags_t d, sp_severity_t sev, sp_diag_code_t code, sp_loc_t loc, char *msg)
{
    if (d->n == d->alloc) {
        size_t na = d->alloc ? 2 * d->alloc : 16;
        sp_diag_t *ni = flint_realloc(d->items, na * sizeof(*ni));
        if (ni == NULL) {
            flint_free(msg);
            d->nomem = 1;
            return 0;
        }
        d->items = ni;
        d->alloc = na;
    }
    const char *file = intern_file(d, loc.file);
    if (loc.file != NULL && file == NULL) {
        flint_free(msg);
        d->nomem = 1;
        return 0;
    }
    sp_diag_t *g = &d->items[d->n++];
    g->severity = sev;
    g->code = code;
    g->file = file;
    g->line = loc.line;
    g->col = loc.col;
    g->msg = msg;
    if (sev == SP_SEV_ERROR)
        d->nerrors++;
    return 1;
}

int sp_diags_vadd(sp_diags_t d, sp_severity_t sev, sp_diag_code_t code, sp_loc_t loc,
                  const char *fmt, va_list ap)
{
    if (d->full)
        return 0;
    if (sev == SP_SEV_NOTE) {
        if (d->last_dropped)
            return 0;
    } else {
        d->last_dropped = 1;
        if (sev == SP_SEV_ERROR && d->max_errors != 0 && d->nerrors >= d->max_errors) {
            d->full = 1;
            char *m = dup_str("too many errors, stopping now");
            if (m == NULL) {
                d->nomem = 1;
                return 0;
            }
            push(d, SP_SEV_ERROR, SP_DIAG_LIMIT, loc, m);
            return 0;
        }
    }
    char small[256] = "";
    va_list aq;
    va_copy(aq, ap);
    int len = vsnprintf(small, sizeof small, fmt, aq);
    va_end(aq);
    if (len < 0)
        len = 0;
    char *msg = flint_malloc((size_t)len + 1);
    if (msg == NULL) {
        d->nomem = 1;
        return 0;
    }
    if ((size_t)len < sizeof small)
        memcpy(msg, small, (size_t)len + 1);
    else
        vsnprintf(msg, (size_t)len + 1, fmt, ap);
    int ok = push(d, sev, code, loc, msg);
    if (sev != SP_SEV_NOTE)
        d->last_dropped = !ok;
    return ok;
}

int sp_diags_add(sp_diags_t d, sp_severity_t sev, sp_diag_code_t code, sp_loc_t loc,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = sp_diags_vadd(d, sev, code, loc, fmt, ap);
    va_end(ap);
    return r;
}

int sp_diags_error(sp_diags_t d, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = sp_diags_vadd(d, SP_SEV_ERROR, code, loc, fmt, ap);
    va_end(ap);
    return r;
}

int sp_diags_note(sp_diags_t d, sp_loc_t loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = sp_diags_vadd(d, SP_SEV_NOTE, SP_DIAG_NONE, loc, fmt, ap);
    va_end(ap);
    return r;
}

int sp_diags_add_source(sp_diags_t d, const char *file, const char *text, size_t len)
{
    char *copy = flint_malloc(len + 1);
    if (copy == NULL) {
        d->nomem = 1;
        return -1;
    }
    if (len > 0)
        memcpy(copy, text, len);
    copy[len] = '\0';
    for (size_t i = 0; i < d->nsrcs; i++) {
        if (strcmp(d->srcs[i].file, file) == 0) {
            flint_free(d->srcs[i].text);
            d->srcs[i].text = copy;
            d->srcs[i].len = len;
            return 0;
        }
    }
    if (d->nsrcs == d->srcs_alloc) {
        size_t na = d->srcs_alloc ? 2 * d->srcs_alloc : 2;
        sp_diag_source_t *ns = flint_realloc(d->srcs, na * sizeof(*ns));
        if (ns == NULL) {
            flint_free(copy);
            d->nomem = 1;
            return -1;
        }
        d->srcs = ns;
        d->srcs_alloc = na;
    }
    char *name = dup_str(file);
    if (name == NULL) {
        flint_free(copy);
        d->nomem = 1;
        return -1;
    }
    d->srcs[d->nsrcs].file = name;
    d->srcs[d->nsrcs].text = copy;
    d->srcs[d->nsrcs].len = len;
    d->nsrcs++;
    return 0;
}

static const sp_diag_source_t *find_source(const sp_diags_t d, const char *file)
{
    if (file == NULL)
        return NULL;
    for (size_t i = 0; i < d->nsrcs; i++)
        if (strcmp(d->srcs[i].file, file) == 0)
            return &d->srcs[i];
    return NULL;
}

/* Length of the valid UTF-8 sequence starting at s (at most n bytes), or 0 if it is invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        k = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        k = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        k = 4;
    else
        return 0;
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

/*
 * Print line bytes [a, b) of text (sanitized) and a caret under byte offset c (a <= c <= b).
 * Tabs are kept in both lines so that the caret stays aligned.
 */
static void print_window(FILE *out, const unsigned char *line, size_t a, size_t b, size_t c,
                         int cut_left, int cut_right)
{
    if (cut_left)
        fputs("...", out);
    for (size_t i = a; i < b;) {
        size_t k = utf8_len(line + i, b - i);
        unsigned char ch = line[i];
        if (k == 0) {
            fputc('?', out);
            k = 1;
        } else if (k == 1) {
            if (ch == '\t' || (ch >= 0x20 && ch != 0x7f))
                fputc(ch, out);
            else
                fputc('?', out);
        } else {
            fwrite(line + i, 1, k, out);
        }
        i += k;
    }
    if (cut_right)
        fputs("...", out);
    fputc('\n', out);
    if (cut_left)
        fputs("   ", out);
    for (size_t i = a; i < c;) {
        size_t k = utf8_len(line + i, b - i);
        if (k == 0)
            k = 1;
        if (k == 1 && line[i] == '\t')
            fputc('\t', out);
        else
            fputc(' ', out);
        i += k;
    }
    fputs("^\n", out);
}

static void print_source_line(FILE *out, const sp_diag_source_t *src, uint32_t lineno,
                              uint32_t col)
{
    const char *text = src->text;
    size_t len = src->len, off = 0;
    for (uint32_t l = 1; l < lineno; l++) {
        const char *nl = memchr(text + off, '\n', len - off);
        if (nl == NULL)
            return;
        off = (size_t)(nl - text) + 1;
    }
    const char *nl = memchr(text + off, '\n', len - off);
    size_t end = nl ? (size_t)(nl - text) : len;
    if (end > off && text[end - 1] == '\r')
        end--;
    const unsigned char *line = (const unsigned char *)text + off;
    size_t n = end - off;
    size_t c = col > 0 ? (size_t)col - 1 : 0;
    if (c > n)
        c = n;
    size_t a = 0, b = n;
    if (n > SP_DIAG_LINE_WINDOW) {
        a = c > SP_DIAG_LINE_WINDOW / 2 ? c - SP_DIAG_LINE_WINDOW / 2 : 0;
        b = a + SP_DIAG_LINE_WINDOW;
        if (b > n) {
            b = n;
            a = n - SP_DIAG_LINE_WINDOW;
        }
    }
    print_window(out, line, a, b, c, a > 0, b < n);
}

static void print_head(FILE *out, const sp_diag_t *g)
{
    if (g->file != NULL && g->line > 0)
        fprintf(out, "%s:%u:%u: ", g->file, (unsigned)g->line, (unsigned)g->col);
    else if (g->file != NULL)
        fprintf(out, "%s: ", g->file);
    fprintf(out, "%s: %s\n", sp_severity_name(g->severity), g->msg);
}

void sp_diags_print_one(FILE *out, const sp_diags_t d, size_t i)
{
    const sp_diag_t *g = &d->items[i];
    print_head(out, g);
    const sp_diag_source_t *src = find_source(d, g->file);
    if (src != NULL && g->line > 0)
        print_source_line(out, src, g->line, g->col);
}

void sp_diags_print(FILE *out, const sp_diags_t d)
{
    for (size_t i = 0; i < d->n; i++)
        sp_diags_print_one(out, d, i);
}

char *sp_diags_format(const sp_diags_t d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    sp_diags_print(f, d);
    if (fclose(f) != 0) {
        flint_free(buf);
        return NULL;
    }
    return buf;
}

char *sp_diags_format_head(const sp_diags_t d, size_t i)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    print_head(f, &d->items[i]);
    if (fclose(f) != 0) {
        flint_free(buf);
        return NULL;
    }
    if (len > 0 && buf[len - 1] == '\n')
        buf[len - 1] = '\0';
    return buf;
}

size_t sp_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t dp[65][65];
    for (size_t x = 0; x <= la; x++)
        dp[x][0] = x;
    for (size_t y = 0; y <= lb; y++)
        dp[0][y] = y;
    for (size_t x = 1; x <= la; x++)
        for (size_t y = 1; y <= lb; y++) {
            size_t c = dp[x - 1][y - 1] + (a[x - 1] != b[y - 1]);
            if (dp[x - 1][y] + 1 < c)
                c = dp[x - 1][y] + 1;
            if (dp[x][y - 1] + 1 < c)
                c = dp[x][y - 1] + 1;
            if (x > 1 && y > 1 && a[x - 1] == b[y - 2] && a[x - 2] == b[y - 1] &&
                dp[x - 2][y - 2] + 1 < c)
                c = dp[x - 2][y - 2] + 1;
            dp[x][y] = c;
        }
    return dp[la][lb];
}

const char *sp_suggest(const char *word, const char *const *cands, size_t n, size_t maxd)
{
    const char *best = NULL;
    size_t bestd = SIZE_MAX, wl = strlen(word);
    for (size_t i = 0; i < n && cands[i] != NULL; i++) {
        size_t d = sp_edit_distance(word, cands[i]);
        if (d < bestd) {
            bestd = d;
            best = cands[i];
        }
    }
    if (best != NULL && bestd <= maxd && bestd < wl)
        return best;
    /* an abbreviation or a longer spelling, when only one fits: 'epsilon' for 'eps' */
    const char *only = NULL;
    for (size_t i = 0; i < n && cands[i] != NULL; i++) {
        size_t cl = strlen(cands[i]), m = cl < wl ? cl : wl;
        if (m >= 2 && strncmp(word, cands[i], m) == 0) {
            if (only != NULL)
                return NULL;
            only = cands[i];
        }
    }
    return only;
}
