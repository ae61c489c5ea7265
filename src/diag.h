/* diag.h: diagnostics (errors, warnings, notes with file:line:col) collected for the user. */
#ifndef SP_DIAG_H
#define SP_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__) || defined(__clang__)
#define SP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SP_PRINTF(fmt, args)
#endif

/*
 * Result of a front-end or pipeline function.  Bad input is never an assertion or an exit: the
 * function returns SP_ERR_INPUT and the reasons are in an sp_diags_t.
 */
typedef enum {
    SP_OK = 0,
    SP_ERR_INPUT,    /* the input is invalid; diagnostics say why */
    SP_ERR_NOMEM,    /* an allocation failed */
    SP_ERR_INTERNAL  /* a bug in shardproof */
} sp_status_t;

/*
 * A source position.  line and col are 1-based; col counts bytes from the start of the line (a
 * tab is one column).  line 0 means "the whole file" (no position); file NULL means "no file".
 * file is borrowed: it points at a string that outlives the location (the AST's copy of the path).
 */
typedef struct {
    const char *file;
    uint32_t line;
    uint32_t col;
} sp_loc_t;

typedef enum { SP_SEV_ERROR = 0, SP_SEV_WARNING, SP_SEV_NOTE } sp_severity_t;

/* What kind of problem a diagnostic reports (for machine-readable reports and tests). */
typedef enum {
    SP_DIAG_NONE = 0,  /* notes */
    SP_DIAG_SYNTAX,    /* lexer and parser */
    SP_DIAG_LIMIT,     /* an input-size, nesting or count limit */
    SP_DIAG_ELEMENTS,  /* a tensor over --max-elements: the check ends in UNKNOWN (src/check.c) */
    SP_DIAG_IO,        /* a file could not be read */
    SP_DIAG_NAME,      /* unknown or duplicate names */
    SP_DIAG_SHAPE,     /* shape and dimension errors */
    SP_DIAG_LAYOUT,    /* layouts, meshes, collectives */
    SP_DIAG_LINEAGE,   /* lineage annotations */
    SP_DIAG_INTERNAL,  /* a bug in shardproof */
    SP_DIAG_NOMEM,
    SP_DIAG_USAGE      /* the command line (reports of the CLI) */
} sp_diag_code_t;

const char *sp_diag_code_name(sp_diag_code_t code);
const char *sp_severity_name(sp_severity_t sev);

/* One diagnostic.  file and msg are owned by the list (file is interned once per list). */
typedef struct {
    sp_severity_t severity;
    sp_diag_code_t code;
    const char *file;
    uint32_t line;
    uint32_t col;
    char *msg;
} sp_diag_t;

/* Source text kept for printing the line under a diagnostic (a copy, owned by the list). */
typedef struct {
    char *file;
    char *text;
    size_t len;
} sp_diag_source_t;

/*
 * An ordered list of diagnostics.  Normal form: items[0..n) in the order they were added, notes
 * directly after the error or warning they belong to; nerrors counts the SP_SEV_ERROR items.
 * Once max_errors errors have been recorded, the next error is replaced by one final
 * "too many errors, stopping now" and the list is full: further diagnostics are dropped and
 * producers should stop (sp_diags_full).  No global state: one list per run or per thread.
 */
typedef struct {
    sp_diag_t *items;
    size_t n, alloc;
    size_t nerrors;
    size_t max_errors;       /* default 20; 0 = unlimited */
    int full;                /* the list stopped accepting diagnostics */
    int last_dropped;        /* the last error/warning was dropped: drop its notes too */
    int nomem;               /* an allocation failed; some diagnostics may be missing */
    char **files;            /* interned file names */
    size_t nfiles, files_alloc;
    sp_diag_source_t *srcs;  /* registered sources, for caret lines */
    size_t nsrcs, srcs_alloc;
} sp_diags_struct;
typedef sp_diags_struct sp_diags_t[1];

#define SP_DIAGS_DEFAULT_MAX_ERRORS 20

void sp_diags_init(sp_diags_t d);
void sp_diags_clear(sp_diags_t d);
void sp_diags_set_max_errors(sp_diags_t d, size_t max_errors);
/* The state of a list, to undo a speculative run: sp_diags_restore drops what came after. */
typedef struct {
    size_t n, nerrors;
    int full, last_dropped, nomem;
} sp_diags_mark_t;
void sp_diags_mark(const sp_diags_t d, sp_diags_mark_t *m);
void sp_diags_restore(sp_diags_t d, const sp_diags_mark_t *m);

/*
 * Add a diagnostic at loc with a printf-style message (no trailing newline, no "error:" prefix).
 * Returns 1 if it was recorded, 0 if it was dropped (list full, a note whose error was dropped,
 * or no memory).
 */
int sp_diags_add(sp_diags_t d, sp_severity_t sev, sp_diag_code_t code, sp_loc_t loc,
                 const char *fmt, ...) SP_PRINTF(5, 6);
int sp_diags_vadd(sp_diags_t d, sp_severity_t sev, sp_diag_code_t code, sp_loc_t loc,
                  const char *fmt, va_list ap);
int sp_diags_error(sp_diags_t d, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
    SP_PRINTF(4, 5);
int sp_diags_note(sp_diags_t d, sp_loc_t loc, const char *fmt, ...) SP_PRINTF(3, 4);

static inline size_t sp_diags_count(const sp_diags_t d) { return d->n; }
static inline size_t sp_diags_error_count(const sp_diags_t d) { return d->nerrors; }
static inline int sp_diags_full(const sp_diags_t d) { return d->full; }
static inline const sp_diag_t *sp_diags_get(const sp_diags_t d, size_t i) { return &d->items[i]; }

/*
 * Register the text of file so that printing can show the offending line and a caret.  The text
 * is copied (it may contain NUL bytes; len counts them).  Registering the same file again
 * replaces the text.  Returns 0, or -1 if out of memory (printing then omits the source lines).
 */
int sp_diags_add_source(sp_diags_t d, const char *file, const char *text, size_t len);

/*
 * Print every diagnostic, compiler style:
 *     plan.sp:12:7: error: unknown collective 'all_gahter'
 *       y = all_gahter(x, tp)
 *           ^
 * The source line is printed when the file's text was registered and the line exists; control
 * bytes and invalid UTF-8 in it are shown as '?', long lines are cut to a window around the
 * column, and the caret is aligned by characters (tabs are kept).  A location with line 0 prints
 * as "file: error: msg", one with no file as "error: msg".
 */
void sp_diags_print(FILE *out, const sp_diags_t d);

/* Print diagnostic i only (with its source and caret lines). */
void sp_diags_print_one(FILE *out, const sp_diags_t d, size_t i);

/* The text sp_diags_print would write, as a string the caller frees with free(); NULL if OOM. */
char *sp_diags_format(const sp_diags_t d);

/*
 * "Did you mean" support.  sp_edit_distance: the Damerau-Levenshtein distance of two names (an
 * adjacent transposition counts 1), SIZE_MAX when either is longer than 64 bytes.  sp_suggest:
 * the first of cands[0..n) (n == SP_SUGGEST_NULL_TERMINATED: up to a NULL entry) closest to word,
 * if its distance is at most maxd and smaller than word's length; else the only one that is a
 * prefix of word or has word as a prefix (at least 2 characters: 'eps' for 'epsilon'); else NULL.
 */
#define SP_SUGGEST_NULL_TERMINATED ((size_t)-1)
size_t sp_edit_distance(const char *a, const char *b);
const char *sp_suggest(const char *word, const char *const *cands, size_t n, size_t maxd);

/* The first line of diagnostic i ("file:line:col: error: msg") as a string to free(); NULL: OOM. */
char *sp_diags_format_head(const sp_diags_t d, size_t i);

#endif
