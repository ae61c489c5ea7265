/* cli.c: command-line subcommands: the engine's query files, shared CLI helpers. */
#include "sbuf.h"
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flint/flint.h>
#include <gmp.h>

#include "solver.h"

FLINT_NORETURN static void on_flint_abort(void)
{
    fprintf(stderr, "shardproof: internal error: FLINT aborted (out of memory, or a FLINT precondition we failed to check)\n");
    exit(SP_EXIT_INTERNAL);
}

void sp_cli_install_abort_hook(void) { flint_set_abort(on_flint_abort); }

/*
 * Allocation-failure testing (as Lua's test build does): with SP_FAIL_ALLOC=N in the
 * environment, the N-th allocation through FLINT or GMP fails.  FLINT reports it and calls its
 * abort hook (exit 4); GMP cannot take a NULL, so its allocator exits 4 the same way.  With
 * SP_COUNT_ALLOC=1 the number of allocations is printed at exit.  All of shardproof allocates
 * through flint_malloc, so every allocation is counted.
 */
static long long alloc_count, alloc_fail_at;

static int alloc_fails(void)
{
    long long k = __atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED);
    return alloc_fail_at > 0 && k == alloc_fail_at;
}

static void *t_malloc(size_t n) { return alloc_fails() ? NULL : malloc(n); }
static void *t_calloc(size_t k, size_t n) { return alloc_fails() ? NULL : calloc(k, n); }
static void *t_realloc(void *p, size_t n) { return alloc_fails() ? NULL : realloc(p, n); }
static void t_free(void *p) { free(p); }

static void gmp_oom(void)
{
    fprintf(stderr, "shardproof: internal error: out of memory\n");
    exit(SP_EXIT_INTERNAL);
}

static void *g_malloc(size_t n)
{
    void *p = alloc_fails() ? NULL : malloc(n);
    if (p == NULL)
        gmp_oom();
    return p;
}

static void *g_realloc(void *p, size_t old, size_t n)
{
    (void)old;
    void *q = alloc_fails() ? NULL : realloc(p, n);
    if (q == NULL)
        gmp_oom();
    return q;
}

static void g_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

static void report_count(void) { fprintf(stderr, "shardproof: %lld allocations\n", alloc_count); }

void sp_cli_install_test_allocator(void)
{
    const char *f = getenv("SP_FAIL_ALLOC"), *c = getenv("SP_COUNT_ALLOC");
    if ((f == NULL || *f == 0) && (c == NULL || *c == 0))
        return;
    alloc_fail_at = f ? strtoll(f, NULL, 10) : 0;
    __flint_set_memory_functions(t_malloc, t_calloc, t_realloc, t_free);
    mp_set_memory_functions(g_malloc, g_realloc, g_free);
    if (c && *c)
        atexit(report_count);
}

char *sp_cli_read_file(const char *path, size_t max_bytes, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = flint_malloc(cap);
    for (;;) {
        if (buf == NULL)
            break;
        if (n + 1 >= cap) {
            cap *= 2;
            char *b2 = flint_realloc(buf, cap);
            if (b2 == NULL) {
                flint_free(buf);
                buf = NULL;
                break;
            }
            buf = b2;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (n > max_bytes) {
            flint_free(buf);
            buf = NULL;
            errno = EFBIG;
            break;
        }
        if (k == 0)
            break;
    }
    if (f != stdin)
        fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

/* Split "[a, b, c]" at top-level commas into expressions; or a single expression. */
static int parse_side(sp_ectx_struct *E, char *text, sp_expr_t **out, int *n, char *err,
                      size_t errlen, size_t *errcol)
{
    while (isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        text[--len] = 0;
    *n = 0;
    *out = NULL;
    if (text[0] != '[') {
        *out = flint_malloc(sizeof(sp_expr_t));
        (*out)[0] = sp_expr_parse(E, text, err, errlen);
        *n = 1;
        *errcol = 0;
        return (*out)[0] != SP_EXPR_NONE;
    }
    if (len < 2 || text[len - 1] != ']') {
        snprintf(err, errlen, "expected ']' at the end of a vector");
        *errcol = len;
        return 0;
    }
    text[len - 1] = 0;
    char *p = text + 1;
    int depth = 0, cap = 8;
    *out = flint_malloc(cap * sizeof(sp_expr_t));
    char *start = p;
    for (;; p++) {
        if (*p == '(' || *p == '[')
            depth++;
        else if (*p == ')' || *p == ']')
            depth--;
        if ((*p == ',' && depth == 0) || *p == 0) {
            char save = *p;
            *p = 0;
            if (*n == cap) {
                cap *= 2;
                *out = flint_realloc(*out, cap * sizeof(sp_expr_t));
            }
            sp_expr_t e = sp_expr_parse(E, start, err, errlen);
            if (e == SP_EXPR_NONE) {
                *errcol = (size_t)(start - text);
                return 0;
            }
            (*out)[(*n)++] = e;
            if (save == 0)
                break;
            start = p + 1;
        }
    }
    return 1;
}

int sp_cli_equiv(int argc, char **argv)
{
    const char *path = NULL;
    uint64_t seed = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (path == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0))
            path = argv[i];
        else {
            fprintf(stderr, "shardproof: error: unexpected argument '%s'\n", argv[i]);
            return SP_EXIT_USAGE;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "shardproof: error: equiv needs a FILE\n");
        return SP_EXIT_USAGE;
    }
    size_t len;
    char *text = sp_cli_read_file(path, (size_t)64 << 20, &len);
    if (text == NULL) {
        fprintf(stderr, "%s: error: cannot read: %s\n", path, strerror(errno));
        return SP_EXIT_USAGE;
    }
    if (memchr(text, 0, len) != NULL) {
        fprintf(stderr, "%s:1:1: error: file contains a NUL byte\n", path);
        flint_free(text);
        return SP_EXIT_USAGE;
    }
    sp_engine_t *S = sp_engine_new(NULL, seed);
    sp_ectx_struct *E = sp_engine_exprs(S);
    int worst = SP_EXIT_EQUIVALENT, nq = 0, bad = 0;
    int counts[3] = {0, 0, 0};
    char *line = text;
    for (int lineno = 1; line != NULL && *line; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p) {
            char *eq = strstr(line, "==");
            char err[256];
            size_t col = 0;
            sp_expr_t *a = NULL, *b = NULL;
            int na = 0, nb = 0;
            if (eq == NULL) {
                fprintf(stderr, "%s:%d:%d: error: expected 'LHS == RHS'\n", path, lineno,
                        (int)(p - line) + 1);
                bad = 1;
            } else {
                *eq = 0;
                if (!parse_side(E, line, &a, &na, err, sizeof err, &col)) {
                    fprintf(stderr, "%s:%d:%d: error: %s\n", path, lineno, (int)col + 1, err);
                    bad = 1;
                } else if (!parse_side(E, eq + 2, &b, &nb, err, sizeof err, &col)) {
                    fprintf(stderr, "%s:%d:%d: error: %s\n", path, lineno,
                            (int)(eq + 2 - line + col) + 1, err);
                    bad = 1;
                } else if (na != nb) {
                    fprintf(stderr, "%s:%d:%d: error: sides have %d and %d elements\n", path,
                            lineno, (int)(eq - line) + 1, na, nb);
                    bad = 1;
                } else if (!bad) {
                    sp_result_t r;
                    sp_result_init(&r);
                    sp_answer_t ans = sp_equiv_vec(S, a, b, (size_t)na, &r);
                    nq++;
                    counts[ans]++;
                    printf("%s:%d: %s", path, lineno,
                           ans == SP_EQUAL ? "EQUAL" : ans == SP_DIFFERENT ? "DIFFERENT" : "UNKNOWN");
                    if (ans == SP_UNKNOWN)
                        printf(" (%s)", sp_why_name(r.why));
                    printf("\n");
                    if (ans == SP_DIFFERENT) {
                        if (na > 1)
                            printf("  element %ld differs\n", (long)r.index);
                        printf("  counterexample:");
                        for (slong k = 0; k < r.cex.n; k++) {
                            char *v = fmpq_get_str(NULL, 10, r.cex.vals + k);
                            printf(" %s = %s%s", sp_expr_sym_name(E, r.cex.syms[k]), v,
                                   k + 1 < r.cex.n ? "," : "");
                            flint_free(v);
                        }
                        printf("\n  left = %s, right = %s (%s)\n", r.cex.lhs_value,
                               r.cex.rhs_value, r.cex.exact ? "exact" : "Arb balls, disjoint");
                        if (worst == SP_EXIT_EQUIVALENT || worst == SP_EXIT_UNKNOWN)
                            worst = SP_EXIT_DIFFERENT;
                    } else if (ans == SP_UNKNOWN && worst == SP_EXIT_EQUIVALENT) {
                        worst = SP_EXIT_UNKNOWN;
                    }
                    sp_result_clear(&r);
                }
            }
            flint_free(a);
            flint_free(b);
        }
        line = nl ? nl + 1 : NULL;
    }
    if (!bad)
        printf("%d queries: %d equal, %d different, %d unknown (seed %llu)\n", nq, counts[0],
               counts[1], counts[2], (unsigned long long)seed);
    sp_engine_free(S);
    flint_free(text);
    return bad ? SP_EXIT_USAGE : worst;
}

/* ---- check / explain ------------------------------------------------------------------------ */

#include <unistd.h>

#include "../include/shardproof.h"

static int parse_i64(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return 0;
    *out = v;
    return 1;
}

/* shardproof merge: the partial reports to take the stage results from */
typedef struct {
    const char *const *texts, *const *names;
    int n;
} merge_in_t;

/* The options that change results: a partial report records them for merge. */
static int result_option(const char *a)
{
    static const char *const opts[] = {"--plan", "--seed", "--dims", "--max-terms", "--max-degree",
                                       "--max-splits", "--max-ms", "--max-elements", "--max-ranks", "--max-coeff-bits",
                                       "--max-nodes", "--max-input-bytes", "--max-tokens",
                                       "--max-ident", "--max-depth",
                                       "--probabilistic", "--infer-lineage", "--strict-shapes"};
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
        if (!strcmp(a, opts[k]))
            return 1;
    return 0;
}

int sp_cli_check_option_valued(const char *a, const char *next)
{
    static const char *const valued[] = {
        "--plan", "-j", "--jobs", "--format", "--dot", "--seed", "--dims", "--max-terms",
        "--max-degree", "--max-splits", "--max-ms", "--max-coeff-bits", "--max-elements",
        "--max-ranks", "--max-nodes", "--max-input-bytes", "--max-tokens", "--max-ident",
        "--max-depth", "--shapes", "--shard"};
    for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
        if (!strcmp(a, valued[k]))
            return 1;
    /* --probabilistic [K]: the value is optional */
    return !strcmp(a, "--probabilistic") && next && next[0] >= '0' && next[0] <= '9';
}

static int check_cmd(int argc, char **argv, int explain, const merge_in_t *M)
{
    const char *smt2_dir = NULL;
    if (explain == 2) {
        /* shardproof smt2 FILE DIR [options] */
        if (argc < 2) {
            fprintf(stderr, "shardproof: error: smt2 needs FILE and DIR\n");
            return SP_EXIT_USAGE;
        }
        smt2_dir = argv[1];
        for (int i = 1; i + 1 < argc; i++)
            argv[i] = argv[i + 1];
        argc--;
    }
    shardproof_options_t opt;
    shardproof_options_default(&opt);
    const char *path = NULL, *dot = NULL;
    shardproof_format_t fmt = SHARDPROOF_FORMAT_TEXT;
    const char **dims = flint_calloc((size_t)argc + 1, sizeof(char *));
    char **owned = flint_calloc((size_t)argc + 1, sizeof(char *));
    const char **kept = flint_calloc((size_t)argc + 1, sizeof(char *));
    int ndims = 0, nowned = 0, nkept = 0, rc = SP_EXIT_USAGE, nshapes = 1;
    int progress = isatty(2);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (result_option(a)) {
            kept[nkept++] = a;
            if (i + 1 < argc && sp_cli_check_option_valued(a, argv[i + 1]))
                kept[nkept++] = argv[i + 1];
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
#define NEEDV()                                                                                      \
    do {                                                                                             \
        if (v == NULL) {                                                                             \
            fprintf(stderr, "shardproof: error: %s needs a value\n", a);                             \
            goto out;                                                                                \
        }                                                                                            \
        i++;                                                                                         \
    } while (0)
        if (!strcmp(a, "--plan")) {
            NEEDV();
            opt.plan = v;
        } else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
            NEEDV();
            if (!parse_i64(v, &x) || x < 0 || x > 1024) {
                fprintf(stderr, "shardproof: error: -j takes a number from 0 to 1024\n");
                goto out;
            }
            opt.jobs = (int)x;
        } else if (!strcmp(a, "--format")) {
            NEEDV();
            if (!strcmp(v, "text"))
                fmt = SHARDPROOF_FORMAT_TEXT;
            else if (!strcmp(v, "json"))
                fmt = SHARDPROOF_FORMAT_JSON;
            else if (!strcmp(v, "sarif"))
                fmt = SHARDPROOF_FORMAT_SARIF;
            else if (!strcmp(v, "junit"))
                fmt = SHARDPROOF_FORMAT_JUNIT;
            else {
                fprintf(stderr, "shardproof: error: unknown format '%s' (text, json, sarif, junit)\n", v);
                goto out;
            }
        } else if (!strcmp(a, "--dot")) {
            NEEDV();
            dot = v;
        } else if (!strcmp(a, "--seed")) {
            NEEDV();
            if (!parse_i64(v, &x) || x < 0) {
                fprintf(stderr, "shardproof: error: --seed takes a nonnegative number\n");
                goto out;
            }
            opt.seed = (uint64_t)x;
        } else if (!strcmp(a, "--dims")) {
            NEEDV();
            /* NAME=V[,NAME=V...] */
            char *copy = sp_strdup(v);
            owned[nowned++] = copy;
            for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
                char *eq = strchr(tok, '=');
                if (eq == NULL || !parse_i64(eq + 1, &x) || x < 1) {
                    fprintf(stderr, "shardproof: error: --dims takes NAME=SIZE with SIZE >= 1\n");
                    goto out;
                }
                dims = flint_realloc(dims, (size_t)(ndims + 2) * sizeof(char *));
                dims[ndims++] = tok;
            }
        } else if (!strcmp(a, "--max-terms") || !strcmp(a, "--max-degree") ||
                   !strcmp(a, "--max-coeff-bits") ||
                   !strcmp(a, "--max-splits") || !strcmp(a, "--max-ms") ||
                   !strcmp(a, "--max-elements") || !strcmp(a, "--max-ranks")) {
            NEEDV();
            if (!parse_i64(v, &x) || x < 1) {
                fprintf(stderr, "shardproof: error: %s takes a positive number\n", a);
                goto out;
            }
            if (!strcmp(a, "--max-terms"))
                opt.max_terms = (long)x;
            else if (!strcmp(a, "--max-degree"))
                opt.max_degree = (long)x;
            else if (!strcmp(a, "--max-splits"))
                opt.max_splits = (long)x;
            else if (!strcmp(a, "--max-ms"))
                opt.max_ms = (long)x;
            else if (!strcmp(a, "--max-coeff-bits"))
                opt.max_coeff_bits = (long)x;
            else if (!strcmp(a, "--max-elements"))
                opt.max_elements = x;
            else
                opt.max_ranks = x;
        } else if (!strcmp(a, "--max-nodes") || !strcmp(a, "--max-input-bytes") ||
                   !strcmp(a, "--max-tokens") || !strcmp(a, "--max-ident") ||
                   !strcmp(a, "--max-depth")) {
            NEEDV();
            if (!parse_i64(v, &x) || x < 1 || (!strcmp(a, "--max-depth") && x > 200) ||
                x > ((long long)1 << 40)) {
                fprintf(stderr, "shardproof: error: %s takes a positive number%s\n", a,
                        !strcmp(a, "--max-depth") ? " up to 200" : "");
                goto out;
            }
            if (!strcmp(a, "--max-nodes"))
                opt.max_nodes = (long)x;
            else if (!strcmp(a, "--max-input-bytes"))
                opt.max_input_bytes = (size_t)x;
            else if (!strcmp(a, "--max-tokens"))
                opt.max_tokens = (size_t)x;
            else if (!strcmp(a, "--max-ident"))
                opt.max_ident = (size_t)x;
            else
                opt.max_depth = (unsigned)x;
        } else if (!strcmp(a, "--probabilistic")) {
            opt.probabilistic = 3;
            if (v && parse_i64(v, &x)) {
                if (x < 1 || x > 64) {
                    fprintf(stderr, "shardproof: error: --probabilistic takes 1 to 64 points\n");
                    goto out;
                }
                opt.probabilistic = (int)x;
                i++;
            }
        } else if (!strcmp(a, "--infer-lineage")) {
            opt.infer_lineage = 1;
        } else if (!strcmp(a, "--strict-shapes")) {
            opt.strict_shapes = 1;
        } else if (!strcmp(a, "--no-progress")) {
            progress = 0;
        } else if (!strcmp(a, "--shapes") && !explain) {
            NEEDV();
            if (!parse_i64(v, &x) || x < 1 || x > 64) {
                fprintf(stderr, "shardproof: error: --shapes takes a number from 1 to 64\n");
                goto out;
            }
            nshapes = (int)x;
        } else if (!strcmp(a, "--shard") && !explain) {
            NEEDV();
            long long si, sn;
            char tail;
            if (sscanf(v, "%lld/%lld%c", &si, &sn, &tail) != 2 || sn < 1 || sn > (1 << 20) ||
                si < 0 || si >= sn) {
                fprintf(stderr, "shardproof: error: --shard takes I/N with 0 <= I < N (for example "
                                "--shard 0/4)\n");
                goto out;
            }
            opt.shard_index = (int)si;
            opt.shard_count = sn > 1 ? (int)sn : 0;
        } else if (path == NULL && (a[0] != '-' || !strcmp(a, "-"))) {
            path = a;
        } else {
            fprintf(stderr, "shardproof: error: unexpected argument '%s'\n", a);
            goto out;
        }
#undef NEEDV
    }
    if (path == NULL) {
        fprintf(stderr, "shardproof: error: %s needs a FILE ('-' reads standard input)\n",
                explain ? "explain" : "check");
        goto out;
    }
    if (nshapes > 1 && (opt.shard_count > 1 || M || smt2_dir)) {
        fprintf(stderr, "shardproof: error: --shapes cannot be combined with --shard, merge or smt2\n");
        goto out;
    }
    if (opt.shard_count > 1 && (fmt != SHARDPROOF_FORMAT_TEXT || dot)) {
        fprintf(stderr, "shardproof: error: --shard writes a partial report (JSON) for "
                        "'shardproof merge'; give --format and --dot to merge\n");
        goto out;
    }
    opt.dims = dims;
    opt.ndims = ndims;
    opt.progress = progress && !explain;
    size_t len;
    /* read a little past the parser's input limit, so that it reports the limit by name */
    size_t cap = opt.max_input_bytes > ((size_t)64 << 20) ? opt.max_input_bytes + 1 : (size_t)64 << 20;
    char *text = sp_cli_read_file(path, cap, &len);
    if (text == NULL) {
        fprintf(stderr, "%s: error: cannot read: %s\n", path, strerror(errno));
        goto out;
    }
    const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
    shardproof_t *c = NULL;
    shardproof_verdict_t v = SHARDPROOF_EQUIVALENT;
    /* --shapes N: reductions 0..N-1 in turn, up to the first that is not EQUIVALENT; the text
       report shows every one, the other formats the last one run */
    for (int k = 0; k < nshapes && v == SHARDPROOF_EQUIVALENT; k++) {
        if (c != NULL) {
            if (fmt == SHARDPROOF_FORMAT_TEXT) {
                shardproof_report(c, stdout, fmt);
                printf("\n-- shape %d of %d --\n\n", k + 1, nshapes);
            }
            shardproof_free(c);
        }
        opt.shape_index = k;
        c = shardproof_new(&opt);
        v = explain || M ? shardproof_prepare(c, shown, text, len)
                         : shardproof_check(c, shown, text, len);
        shardproof_print_diagnostics(c, stderr);
    }
    if (M && v == SHARDPROOF_EQUIVALENT) {
        char err[1024];
        v = shardproof_merge_partials(c, text, len, M->texts, M->names, M->n, err, sizeof err);
        if (v == SHARDPROOF_BAD_INPUT)
            fprintf(stderr, "shardproof: error: %s\n", err);
    }
    if (opt.shard_count > 1 && v != SHARDPROOF_BAD_INPUT && v != SHARDPROOF_INTERNAL) {
        shardproof_write_partial(c, stdout, text, len, kept, nkept);
        fprintf(stderr, "shardproof: shard %d/%d of %s: %s\n", opt.shard_index, opt.shard_count,
                shown, v == SHARDPROOF_NOT_EQUIVALENT ? "a stage fails"
                       : v == SHARDPROOF_UNKNOWN      ? "a stage is undecided"
                                                      : "its stages are proved");
    } else if (smt2_dir && v != SHARDPROOF_BAD_INPUT && v != SHARDPROOF_INTERNAL) {
        char err[512];
        if (!shardproof_export_smt2(c, smt2_dir, err, sizeof err)) {
            fprintf(stderr, "shardproof: error: %s\n", err);
            v = SHARDPROOF_BAD_INPUT;
        } else {
            printf("wrote the stage queries of %s to %s/stage-*.smt2\n", shown, smt2_dir);
        }
    } else if (v != SHARDPROOF_BAD_INPUT && v != SHARDPROOF_INTERNAL) {
        if (explain)
            shardproof_explain(c, stdout);
        else
            shardproof_report(c, stdout, fmt);
        /* the time goes to a terminal's stderr only: reports stay byte-identical */
        if (!explain && opt.progress)
            fprintf(stderr, "shardproof: %s in %.2f s\n", shown, shardproof_seconds(c));
        if (nshapes > 1 && fmt == SHARDPROOF_FORMAT_TEXT && v == SHARDPROOF_EQUIVALENT)
            printf("\nEQUIVALENT at all %d shapes (--shapes %d)\n", nshapes, nshapes);
        if (dot) {
            FILE *f = fopen(dot, "w");
            if (f == NULL) {
                fprintf(stderr, "shardproof: error: cannot write %s: %s\n", dot, strerror(errno));
            } else {
                shardproof_dot(c, f);
                fclose(f);
            }
        }
    }
    rc = (int)v;
    shardproof_free(c);
    flint_free(text);
out:
    for (int i = 0; i < nowned; i++)
        flint_free(owned[i]);
    flint_free(owned);
    flint_free(dims);
    flint_free(kept);
    return rc;
}

int sp_cli_check(int argc, char **argv, int explain) { return check_cmd(argc, argv, explain, NULL); }

/*
 * shardproof merge PART.json... [--format F] [--dot OUT] [-j N]: the input file and the options
 * come from the partial reports; the input is executed again (no proving) and every stage takes
 * its result from the shard that proved it.
 */
int sp_cli_merge(int argc, char **argv)
{
    char **texts = flint_calloc((size_t)argc + 1, sizeof(char *));
    const char **names = flint_calloc((size_t)argc + 1, sizeof(char *));
    char **cargv = flint_calloc((size_t)argc + 1, sizeof(char *));
    int n = 0, nc = 0, rc = SP_EXIT_USAGE;
    json_t *first = NULL;
    char **cargs = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--format") || !strcmp(a, "--dot") || !strcmp(a, "-j")) && i + 1 < argc) {
            cargv[nc++] = argv[i++];
            cargv[nc++] = argv[i];
        } else if (!strcmp(a, "--no-progress")) {
            cargv[nc++] = argv[i];
        } else if (a[0] == '-' && a[1] != 0) {
            fprintf(stderr, "shardproof: error: merge: unexpected argument '%s'\n", a);
            goto out;
        } else {
            size_t len;
            names[n] = a;
            texts[n] = sp_cli_read_file(a, (size_t)256 << 20, &len);
            if (texts[n] == NULL) {
                fprintf(stderr, "%s: error: cannot read: %s\n", a, strerror(errno));
                goto out;
            }
            n++;
        }
    }
    if (n == 0) {
        fprintf(stderr, "shardproof: error: merge needs the partial reports of check --shard I/N\n");
        goto out;
    }
    /* the file and the options of the first report (merge checks that all agree) */
    json_error_t je;
    first = json_loads(texts[0], JSON_REJECT_DUPLICATES, &je);
    if (first == NULL) {
        fprintf(stderr, "%s:%d:%d: error: invalid JSON: %s\n", names[0], je.line, je.column, je.text);
        goto out;
    }
    json_t *file = json_object_get(first, "file"), *args = json_object_get(first, "args");
    if (first == NULL || !json_is_string(file) || !json_is_array(args) ||
        json_array_size(args) > 4096) {
        fprintf(stderr, "%s: error: not a partial report of check --shard I/N\n", names[0]);
        goto out;
    }
    size_t na = json_array_size(args);
    cargs = flint_calloc(na + (size_t)nc + 2, sizeof(char *));
    for (size_t k = 0; k < na; k++) {
        const char *v = json_string_value(json_array_get(args, k));
        if (v == NULL) {
            fprintf(stderr, "%s: error: args[%zu]: expected a string\n", names[0], k);
            goto out;
        }
        cargs[k] = (char *)v;
    }
    for (int k = 1; k < n; k++) {
        json_t *o = json_loads(texts[k], JSON_REJECT_DUPLICATES, &je);
        int same = o && json_equal(json_object_get(o, "args"), args) &&
                   json_equal(json_object_get(o, "file"), file);
        json_decref(o);
        if (!same) {
            fprintf(stderr, "%s: error: file, args: not the same run as %s\n", names[k], names[0]);
            goto out;
        }
    }
    cargs[na] = (char *)json_string_value(file);
    for (int k = 0; k < nc; k++)
        cargs[na + 1 + (size_t)k] = cargv[k];
    merge_in_t M = {(const char *const *)texts, names, n};
    rc = check_cmd((int)na + 1 + nc, cargs, 0, &M);
out:
    json_decref(first);
    for (int k = 0; k < n; k++)
        flint_free(texts[k]);
    flint_free(texts);
    flint_free(names);
    flint_free(cargv);
    flint_free(cargs);
    return rc;
}
