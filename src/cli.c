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
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../include/shardproof.h"
#include "check.h"
#include "import/cli_import.h"
#include "import/nnscaler.h"
#include "smt2.h"
#include "solver.h"

/*
 * Allocation failure is a resource limit: UNKNOWN (exit 3) naming it, not an internal error.
 * The CLI routes FLINT's and GMP's allocations through the functions below; a failed one ends
 * the run with `limit memory` on standard error and, during a check, the report of its format
 * on standard output (UNKNOWN, the limit as the reason).  The stores' own
 * large arrays (sp_big_realloc) stop the store instead (UNKNOWN with a report).  Any other FLINT
 * abort is an internal error (exit 4).
 *
 * Allocation-failure testing (as Lua's test build does): with SP_FAIL_ALLOC=N in the
 * environment, the N-th allocation through FLINT or GMP fails, exactly as a real failure does.
 * With SP_COUNT_ALLOC=1 the number of allocations is printed at exit.  All of shardproof
 * allocates through flint_malloc, so every allocation is counted, except arrays of 4 MB and more
 * (sp_big_realloc, solver/expr.h: mapped directly; a failed mapping is the store's out-of-memory
 * path, a resource limit): SP_FAIL_BIG=N fails the N-th of those mappings, and SP_COUNT_ALLOC
 * prints their number too (tests/alloc_sweep.sh sweeps both).
 */
static long long alloc_count, alloc_fail_at;
static size_t alloc_failed_bytes; /* nonzero once an allocation failed */

/* The report a check writes when an allocation fails: its format, file and options
   (sp_cli_oom_document); busy once the failure is being reported (a second failure while
   writing it ends the run with the message on standard error only). */
static struct {
    const shardproof_options_t *opt;
    shardproof_format_t fmt;
    const char *file;
    int busy;
} oom_doc;

void sp_cli_oom_document(const shardproof_options_t *opt, shardproof_format_t fmt,
                         const char *file)
{
    oom_doc.opt = opt;
    oom_doc.fmt = fmt;
    oom_doc.file = file;
}

FLINT_NORETURN static void out_of_memory(size_t bytes)
{
    if (__atomic_exchange_n(&oom_doc.busy, 1, __ATOMIC_ACQ_REL))
        exit(SP_EXIT_UNKNOWN);
    char msg[256];
    snprintf(msg, sizeof msg, "limit memory: an allocation of %zu bytes failed (the machine's "
             "memory or the address-space limit, ulimit -v, is exhausted)", bytes);
    fprintf(stderr, "shardproof: UNKNOWN: %s\n", msg);
    /* standard output still gets the report its format promises (a document for every
       outcome), built in a fresh context: the failed allocation was most likely a large one */
    if (oom_doc.file && oom_doc.fmt == SHARDPROOF_FORMAT_TEXT) {
        printf("shardproof %s: %s\n\nUNKNOWN\nreason: %s\n", SP_VERSION, oom_doc.file, msg);
    } else if (oom_doc.file) {
        shardproof_t *c = shardproof_new(oom_doc.opt);
        if (c != NULL) {
            sp_check_limit(c, oom_doc.file, msg);
            shardproof_report(c, stdout, oom_doc.fmt);
        }
    }
    exit(SP_EXIT_UNKNOWN);
}

FLINT_NORETURN static void on_flint_abort(void)
{
    if (alloc_failed_bytes > 0)
        out_of_memory(alloc_failed_bytes);
    fprintf(stderr, "shardproof: internal error: FLINT aborted (a FLINT precondition we failed to check)\n");
    exit(SP_EXIT_INTERNAL);
}

void sp_cli_install_abort_hook(void) { flint_set_abort(on_flint_abort); }

static int alloc_fails(void)
{
    if (alloc_fail_at == 0)
        return 0;
    long long k = __atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED);
    return k == alloc_fail_at;
}

/* A failed allocation ends the run here: FLINT would abort on it anyway, after printing its own
   message on standard output, where the report goes. */
static void *noted(void *p, size_t bytes)
{
    if (p == NULL && bytes > 0) {
        alloc_failed_bytes = bytes;
        out_of_memory(bytes);
    }
    return p;
}

static void *a_malloc(size_t n) { return noted(alloc_fails() ? NULL : malloc(n), n ? n : 1); }
static void *a_calloc(size_t k, size_t n)
{
    return noted(alloc_fails() ? NULL : calloc(k, n), k > 0 && n > 0 ? k * n : 1);
}
static void *a_realloc(void *p, size_t n) { return noted(alloc_fails() ? NULL : realloc(p, n), n ? n : 1); }
static void a_free(void *p) { free(p); }

static void *g_malloc(size_t n)
{
    void *p = alloc_fails() ? NULL : malloc(n);
    if (p == NULL)
        out_of_memory(n);
    return p;
}

static void *g_realloc(void *p, size_t old, size_t n)
{
    (void)old;
    void *q = alloc_fails() ? NULL : realloc(p, n);
    if (q == NULL)
        out_of_memory(n);
    return q;
}

static void g_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

static void report_count(void)
{
    fprintf(stderr, "shardproof: %lld allocations, %lld mapped\n", alloc_count, sp_big_count());
}

void sp_cli_install_allocator(void)
{
    const char *f = getenv("SP_FAIL_ALLOC"), *c = getenv("SP_COUNT_ALLOC"),
               *b = getenv("SP_FAIL_BIG");
    if (b && *b)
        sp_big_set_fail(strtoll(b, NULL, 10));
    alloc_fail_at = f && *f ? strtoll(f, NULL, 10) : 0;
    if (c && *c) {
        alloc_fail_at = alloc_fail_at > 0 ? alloc_fail_at : -1; /* count every allocation */
        atexit(report_count);
    }
    __flint_set_memory_functions(a_malloc, a_calloc, a_realloc, a_free);
    mp_set_memory_functions(g_malloc, g_realloc, g_free);
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

/* ---- the option table ------------------------------------------------------------------------ */

enum {
    O_PLAN = 1, O_NNSCALER, O_TORCH, O_WORLD, O_OUTPUT, O_AUTOGRAD_SUM, O_TV_CHUNK_RULE, O_JOBS,
    O_FORMAT, O_DOT,
    O_SEED, O_DIMS, O_SHAPES, O_SHARD, O_PROBABILISTIC, O_INFER_LINEAGE, O_NO_INFER_LINEAGE,
    O_STRICT_SHAPES, O_FAST_SHAPES, O_MESH_CUTOFF, O_FULL_MESH, O_NO_CROSS_CHECK, O_PROFILE,
    O_VERBOSE, O_MAX_MS, O_TIMEOUT, O_MAX_TERMS,
    O_MAX_DEGREE, O_MAX_SPLITS, O_MAX_COEFF_BITS, O_MAX_NODES, O_MAX_MEMORY, O_MAX_ELEMENTS,
    O_MAX_RANKS, O_MAX_MEMO_KEYS,
    O_MAX_INPUT_BYTES, O_MAX_TOKENS, O_MAX_IDENT, O_MAX_DEPTH, O_SMT2, O_NO_PROGRESS, O_LINEAGE
};

#define CK SP_CMD_CHECK
#define EX SP_CMD_EXPLAIN
#define SM SP_CMD_SMT2
#define MG SP_CMD_MERGE
#define EQ SP_CMD_EQUIV
#define IM SP_CMD_IMPORT
#define TO SP_CMD_TORCH
#define RUN (CK | EX | SM) /* the commands that run a plan file */
#define R SP_OPT_RESULT

const sp_opt_t sp_cli_opts[] = {
    {O_PLAN, "--plan", NULL, SP_ARG_ONE, "NAME", RUN, R,
     "the plan to check, when the file has several"},
    {O_NNSCALER, "--nnscaler", NULL, SP_ARG_TWO, "LOGICAL.json PARALLEL.json", CK | EX, 0,
     "import a pair of nnScaler plans (TrainVerify's tvplan JSON) and check it instead of a FILE "
     "(docs/nnscaler.md)"},
    {O_TORCH, "--torch", NULL, SP_ARG_ONE, "FILE.py", CK | EX, 0,
     "capture the single-device step single() and the distributed step parallel(rank, world) "
     "of a PyTorch file and check them instead of a FILE; needs --world (docs/torch.md)"},
    {O_WORLD, "--world", NULL, SP_ARG_ONE, "N", CK | EX | TO, 0,
     "ranks of the PyTorch capture's world, 1 to 64"},
    {O_OUTPUT, "--output", "-o", SP_ARG_ONE, "OUT.sp", CK | EX | IM | TO, 0,
     "where the imported or captured plan file goes (import, torch: default standard output; "
     "check --nnscaler, check --torch: default a temporary file, removed after EQUIVALENT, "
     "otherwise kept and named on stderr)"},
    {O_AUTOGRAD_SUM, "--autograd-sum", NULL, SP_ARG_NONE, NULL, CK | EX | IM, 0,
     "nnScaler import: sum an activation gradient that two nodes of one device produce, as "
     "PyTorch autograd does"},
    {O_TV_CHUNK_RULE, "--trainverify-chunk-rule", NULL, SP_ARG_NONE, NULL, CK | EX | IM, 0,
     "nnScaler import: reproduce TrainVerify's chunk rule, to compare verdicts with it"},
    {O_JOBS, "--jobs", "-j", SP_ARG_ONE, "N", CK | MG, 0,
     "threads, 0 to 1024 (default 0: all cores); the report does not depend on it"},
    {O_FORMAT, "--format", NULL, SP_ARG_ONE, "FMT", CK | MG, 0,
     "the report on standard output: text, json, sarif or junit; every format is a valid "
     "document for every outcome, bad input included"},
    {O_DOT, "--dot", NULL, SP_ARG_ONE, "OUT", CK | EX | MG, 0,
     "write a Graphviz picture of the stages to OUT, the failing one highlighted"},
    {O_SEED, "--seed", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "seed of the random points (default 1), printed in the report"},
    {O_DIMS, "--dims", NULL, SP_ARG_ONE, "NAME=SIZE,...", RUN, R, "reduced sizes chosen by hand"},
    {O_SHAPES, "--shapes", NULL, SP_ARG_ONE, "N", CK, 0,
     "check N reductions in turn (1 to 64), up to the first that is not EQUIVALENT"},
    {O_SHARD, "--shard", NULL, SP_ARG_ONE, "I/N", CK, 0,
     "execute and prove only shard I (0-based) of N of the stages and write a partial report "
     "(JSON) for merge"},
    {O_PROBABILISTIC, "--probabilistic", NULL, SP_ARG_OPT_NUM, "K", RUN, R,
     "when a limit stops an exact proof, accept K (1 to 64, default 3) agreeing fingerprints as "
     "EQUAL; the report states the error bound"},
    {O_INFER_LINEAGE, "--infer-lineage", NULL, SP_ARG_NONE, NULL, RUN, R,
     "propose lineage for plan assignments without it also when the plan writes some (by "
     "default only a plan without any is inferred); each proposal is proved exactly"},
    {O_NO_INFER_LINEAGE, "--no-infer-lineage", NULL, SP_ARG_NONE, NULL, RUN, R,
     "no lineage inference: a plan without lineage is executed from its inputs to its outputs"},
    {O_VERBOSE, "--verbose", "-v", SP_ARG_NONE, NULL, CK | MG, 0,
     "the text report shows every assignment of a counterexample (by default the first 8)"},
    {O_LINEAGE, "--lineage", NULL, SP_ARG_NONE, NULL, EX, 0,
     "also print the inferred relations as lineage annotations in the language's syntax, to "
     "write back into the plan"},
    {O_PROFILE, "--profile", NULL, SP_ARG_NONE, NULL, CK, 0,
     "print the wall and CPU time, peak memory and expression-store nodes of each phase (parse, "
     "reduce, the --shard trace, execute, prove, reference executor) and the slowest stages on "
     "stderr"},
    {O_NO_CROSS_CHECK, "--no-cross-check", NULL, SP_ARG_NONE, NULL, RUN, R,
     "do not run the reference executor after the proof (by default it re-checks EQUIVALENT at "
     "the real sizes when they are small, and gives NOT EQUIVALENT its end-to-end witness; "
     "without it a stage difference that is not one already is UNKNOWN)"},
    {O_FAST_SHAPES, "--fast-shapes", NULL, SP_ARG_NONE, NULL, RUN, R,
     "a quicker shape reduction to smaller sizes under fewer conditions: a difference found is "
     "reported as usual, but no difference is EQUIVALENT only where the sizes chosen meet every "
     "condition of the default reduction, else UNKNOWN with the condition they miss "
     "(docs/soundness.md)"},
    {O_STRICT_SHAPES, "--strict-shapes", NULL, SP_ARG_NONE, NULL, RUN, R,
     "the default shape reduction (every size on its side of every integer literal; sizes, "
     "mesh sizes, tensor constants and their products apart; two elements per shard): undoes "
     "an earlier --fast-shapes"},
    {O_MESH_CUTOFF, "--mesh-cutoff", NULL, SP_ARG_NONE, NULL, RUN, R,
     "check an axis of 4 or more ranks that the plan never tells apart at a smaller prime size "
     "(docs/soundness.md, \"Mesh cutoff\"): a proof where no sum over the axis counts its "
     "members and no value relates more members than checked; else the real mesh is checked"},
    {O_FULL_MESH, "--full-mesh", NULL, SP_ARG_NONE, NULL, RUN, R,
     "check every rank of the mesh (the default): undoes an earlier --mesh-cutoff"},
    {O_MAX_MS, "--max-ms", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "wall-clock budget of one query (one element of a stage; one line of equiv) in "
     "milliseconds, 0 for none (default 60000); when it runs out the answer is UNKNOWN (limit "
     "max_ms)"},
    {O_TIMEOUT, "--timeout", NULL, SP_ARG_ONE, "SECONDS", RUN | EQ, R,
     "wall-clock budget of the whole run in seconds (decimals allowed), 0 for none (the "
     "default): past it no "
     "expression is built and no query starts, and what is undecided is UNKNOWN (limit "
     "timeout); --max-ms still bounds each query"},
    {O_MAX_TERMS, "--max-terms", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "terms of a polynomial in a query (default 200000); a stage's normal forms together hold "
     "at most 64 times as many, and its monomials 16 times as many (the engine's memory)"},
    {O_MAX_DEGREE, "--max-degree", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "total degree of a monomial (default 256)"},
    {O_MAX_SPLITS, "--max-splits", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "case-split branches per query (default 4096)"},
    {O_MAX_COEFF_BITS, "--max-coeff-bits", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "bits of a rational coefficient of a normal form (default 65536)"},
    {O_MAX_NODES, "--max-nodes", NULL, SP_ARG_ONE, "N", RUN | EQ, R,
     "expression nodes of the run and of each stage's query, a bound on memory (default: none)"},
    {O_MAX_MEMORY, "--max-memory", NULL, SP_ARG_ONE, "MB", RUN | EQ, R,
     "resident memory in MiB at which the expression stores stop growing and the check ends "
     "UNKNOWN (limit memory), 0 for none (default: 90% of the machine's memory, or of the "
     "cgroup's memory.max)"},
    {O_MAX_ELEMENTS, "--max-elements", NULL, SP_ARG_ONE, "N", RUN, R,
     "elements of a tensor after reduction (default 262144; more is UNKNOWN with the limit's "
     "name)"},
    {O_MAX_RANKS, "--max-ranks", NULL, SP_ARG_ONE, "N", RUN, R,
     "ranks of the mesh (default 65536)"},
    {O_MAX_MEMO_KEYS, "--max-memo-keys", NULL, SP_ARG_ONE, "N", RUN, R,
     "32-bit words of memoization keys kept in memory (default 67108864, 256 MiB); past it a "
     "stage is still memoized onto a kept key but keeps none of its own"},
    {O_MAX_INPUT_BYTES, "--max-input-bytes", NULL, SP_ARG_ONE, "N", RUN, R,
     "bytes of the input (default 16 MiB)"},
    {O_MAX_TOKENS, "--max-tokens", NULL, SP_ARG_ONE, "N", RUN, R,
     "tokens of the input (default 2^21)"},
    {O_MAX_IDENT, "--max-ident", NULL, SP_ARG_ONE, "N", RUN, R,
     "characters of an identifier (default 256)"},
    {O_MAX_DEPTH, "--max-depth", NULL, SP_ARG_ONE, "N", RUN, R,
     "nesting depth of the input, at most 200 (default 200)"},
    {O_SMT2, "--smt2", NULL, SP_ARG_ONE, "DIR", EQ, 0,
     "also write every query as SMT-LIB2 into DIR/line-N.smt2 (DIR is created when missing)"},
    {O_NO_PROGRESS, "--no-progress", NULL, SP_ARG_NONE, NULL, RUN | MG, 0,
     "no progress line and no wall time on stderr (shown on a terminal only; reports never "
     "contain times)"},
    {0, NULL, NULL, SP_ARG_NONE, NULL, 0, 0, NULL}};

#undef CK
#undef EX
#undef SM
#undef MG
#undef EQ
#undef IM
#undef TO
#undef RUN
#undef R

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

/* Seconds written as N, N. or N.D with up to three decimals, as milliseconds (no floating
   point).  0 if not that form. */
static int parse_seconds_ms(const char *s, long long *ms)
{
    long long v = 0;
    int digits = 0, decimals = -1;
    for (; *s; s++) {
        if (*s == '.' && decimals < 0) {
            decimals = 0;
            continue;
        }
        if (!isdigit((unsigned char)*s) || decimals == 3 || v > (long long)1 << 50)
            return 0;
        v = v * 10 + (*s - '0');
        digits++;
        if (decimals >= 0)
            decimals++;
    }
    if (digits == 0)
        return 0;
    for (int d = decimals < 0 ? 0 : decimals; d < 3; d++)
        v *= 10;
    *ms = v;
    return 1;
}

/* The value of a numeric option in [lo, hi], or a usage error. */
static int num_arg(sp_args_t *A, const sp_arg_t *a, long long lo, long long hi, long long *x)
{
    if (parse_i64(a->val[0], x) && *x >= lo && *x <= hi)
        return 1;
    sp_args_error(A, "%s takes a number from %lld to %lld, not '%s'", a->opt->name, lo, hi,
                  a->val[0]);
    return 0;
}

/* The engine limits that check, explain, smt2 and equiv share: 1 if a was one of them. */
static int limit_arg(sp_args_t *A, const sp_arg_t *a, shardproof_options_t *opt)
{
    const long long big = (long long)1 << 40;
    long long x;
    switch (a->opt->id) {
    case O_MAX_MS:
        if (num_arg(A, a, 0, big, &x))
            opt->max_ms = x ? (long)x : -1;
        return 1;
    case O_TIMEOUT:
        if (parse_seconds_ms(a->val[0], &x) && x <= (long long)1 << 40)
            opt->timeout_ms = (long)x;
        else
            sp_args_error(A, "%s takes seconds (up to three decimals), not '%s'", a->opt->name,
                          a->val[0]);
        return 1;
    case O_MAX_TERMS:
        if (num_arg(A, a, 1, big, &x))
            opt->max_terms = (long)x;
        return 1;
    case O_MAX_DEGREE:
        if (num_arg(A, a, 1, big, &x))
            opt->max_degree = (long)x;
        return 1;
    case O_MAX_SPLITS:
        if (num_arg(A, a, 1, big, &x))
            opt->max_splits = (long)x;
        return 1;
    case O_MAX_COEFF_BITS:
        if (num_arg(A, a, 1, big, &x))
            opt->max_coeff_bits = (long)x;
        return 1;
    case O_MAX_NODES:
        if (num_arg(A, a, 1, big, &x))
            opt->max_nodes = (long)x;
        return 1;
    case O_MAX_MEMORY:
        if (num_arg(A, a, 0, (long long)1 << 30, &x))
            opt->max_memory_mb = x ? (long)x : -1;
        return 1;
    case O_SEED:
        if (num_arg(A, a, 0, LLONG_MAX, &x))
            opt->seed = (uint64_t)x;
        return 1;
    default:
        return 0;
    }
}

/* ---- equiv ---------------------------------------------------------------------------------- */

/*
 * One expression of a query line: text[0..) (NUL-terminated, modified).  On an error, *errcol is
 * the 0-based byte offset in text where it is and err the message: sp_expr_parse's "column N: "
 * is folded into the offset, so that a diagnostic carries one column.
 */
static sp_expr_t parse_expr_at(sp_ectx_struct *E, char *text, char *err, size_t errlen,
                               size_t *errcol)
{
    sp_expr_t e = sp_expr_parse(E, text, err, errlen);
    if (e != SP_EXPR_NONE)
        return e;
    size_t col = 0;
    int k = 0;
    if (sscanf(err, "column %zu: %n", &col, &k) == 1 && k > 0)
        memmove(err, err + k, strlen(err + k) + 1);
    *errcol = col;
    return SP_EXPR_NONE;
}

/* Split "[a, b, c]" at top-level commas into expressions; or a single expression.  text is
   modified; *errcol is relative to text's start. */
static int parse_side(sp_ectx_struct *E, char *text, sp_expr_t **out, int *n, char *err,
                      size_t errlen, size_t *errcol)
{
    char *base = text;
    while (isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        text[--len] = 0;
    *n = 0;
    *out = NULL;
    if (text[0] != '[') {
        *out = flint_malloc(sizeof(sp_expr_t));
        size_t col = 0;
        (*out)[0] = parse_expr_at(E, text, err, errlen, &col);
        *n = 1;
        *errcol = (size_t)(text - base) + col;
        return (*out)[0] != SP_EXPR_NONE;
    }
    if (len < 2 || text[len - 1] != ']') {
        snprintf(err, errlen, "expected ']' at the end of a vector");
        *errcol = (size_t)(text - base) + len;
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
            size_t col = 0;
            sp_expr_t e = parse_expr_at(E, start, err, errlen, &col);
            if (e == SP_EXPR_NONE) {
                *errcol = (size_t)(start - base) + col;
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

/* mkdir -p: 1, or 0 with a message in err */
static int make_dirs(const char *dir, char *err, size_t errlen)
{
    char *p = sp_strdup(dir);
    int ok = 1;
    for (char *q = p + 1; ok; q++) {
        if (*q != '/' && *q != 0)
            continue;
        char c = *q;
        *q = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", p, strerror(errno));
            ok = 0;
        }
        *q = c;
        if (c == 0)
            break;
    }
    struct stat st;
    if (ok && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        snprintf(err, errlen, "%s is not a directory", dir);
        ok = 0;
    }
    flint_free(p);
    return ok;
}

/* equiv --smt2 DIR: the query of line lineno as DIR/line-LINENO.smt2 */
static int write_query_smt2(sp_ectx_struct *E, const char *dir, int lineno, const sp_expr_t *a,
                            const sp_expr_t *b, int n, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/line-%d.smt2", dir, lineno);
    char *q = sp_smt2_query(E, a, b, n);
    FILE *f = fopen(path, "w");
    int ok = f != NULL && q != NULL && fputs(q, f) >= 0;
    if (f != NULL && fclose(f) != 0)
        ok = 0;
    if (!ok)
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    flint_free(q);
    return ok;
}

static void print_answer(const char *path, int lineno, sp_ectx_struct *E, sp_answer_t ans,
                         const sp_result_t *r, int na)
{
    printf("%s:%d: %s", path, lineno,
           ans == SP_EQUAL ? "EQUAL" : ans == SP_DIFFERENT ? "DIFFERENT" : "UNKNOWN");
    if (ans == SP_UNKNOWN)
        printf(" (%s)", sp_why_name(r->why));
    printf("\n");
    if (ans != SP_DIFFERENT)
        return;
    if (na > 1)
        printf("  element %ld differs\n", (long)r->index);
    printf("  counterexample:");
    for (slong k = 0; k < r->cex.n; k++) {
        char *v = fmpq_get_str(NULL, 10, r->cex.vals + k);
        printf(" %s = %s%s", sp_expr_sym_name(E, r->cex.syms[k]), v, k + 1 < r->cex.n ? "," : "");
        flint_free(v);
    }
    printf("\n  left = %s, right = %s (%s)\n", r->cex.lhs_value, r->cex.rhs_value,
           r->cex.exact ? "exact" : "Arb balls, disjoint");
}

int sp_cli_equiv(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    shardproof_options_t opt;
    shardproof_options_default(&opt);
    const char *path = NULL, *smt2_dir = NULL;
    for (int i = 0; i < A.n; i++) {
        const sp_arg_t *a = &A.a[i];
        if (a->opt == NULL && path == NULL)
            path = a->val[0];
        else if (a->opt == NULL)
            sp_args_error(&A, "unexpected argument '%s'", a->val[0]);
        else if (a->opt->id == O_SMT2)
            smt2_dir = a->val[0];
        else
            limit_arg(&A, a, &opt);
    }
    if (A.nerr == 0 && path == NULL)
        sp_args_error(&A, "equiv needs a FILE ('-' reads standard input)");
    int bad_args = sp_args_report(cmd, &A, stderr);
    sp_args_clear(&A);
    if (bad_args)
        return SP_EXIT_USAGE;
    char err[512];
    if (smt2_dir && !make_dirs(smt2_dir, err, sizeof err)) {
        fprintf(stderr, "shardproof: error: %s\n", err);
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
    sp_limits_t lim;
    sp_check_limits(&lim, &opt);
    sp_engine_t *S = sp_engine_new(&lim, opt.seed);
    sp_ectx_struct *E = sp_engine_exprs(S);
    int worst = SP_EXIT_EQUIVALENT, nq = 0, nbad = 0, io = 0;
    int counts[3] = {0, 0, 0};
    char *line = text;
    /* every line is a query of its own: an error is reported (one position) and the next line
       is decided; the exit code is then 2 */
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
            size_t col = 0;
            sp_expr_t *a = NULL, *b = NULL;
            int na = 0, nb = 0;
            if (eq == NULL) {
                fprintf(stderr, "%s:%d:%d: error: expected 'LHS == RHS'\n", path, lineno,
                        (int)(p - line) + 1);
                nbad++;
            } else {
                *eq = 0;
                if (!parse_side(E, line, &a, &na, err, sizeof err, &col)) {
                    fprintf(stderr, "%s:%d:%d: error: %s\n", path, lineno, (int)col + 1, err);
                    nbad++;
                } else if (!parse_side(E, eq + 2, &b, &nb, err, sizeof err, &col)) {
                    fprintf(stderr, "%s:%d:%d: error: %s\n", path, lineno,
                            (int)(eq + 2 - line + col) + 1, err);
                    nbad++;
                } else if (na != nb) {
                    fprintf(stderr, "%s:%d:%d: error: sides have %d and %d elements\n", path,
                            lineno, (int)(eq - line) + 1, na, nb);
                    nbad++;
                } else {
                    if (smt2_dir && !io &&
                        !write_query_smt2(E, smt2_dir, lineno, a, b, na, err, sizeof err)) {
                        fprintf(stderr, "shardproof: error: %s\n", err);
                        io = 1;
                    }
                    sp_result_t r;
                    sp_result_init(&r);
                    sp_answer_t ans = sp_equiv_vec(S, a, b, (size_t)na, &r);
                    nq++;
                    counts[ans]++;
                    print_answer(path, lineno, E, ans, &r, na);
                    if (ans == SP_DIFFERENT && worst != SP_EXIT_DIFFERENT)
                        worst = SP_EXIT_DIFFERENT;
                    else if (ans == SP_UNKNOWN && worst == SP_EXIT_EQUIVALENT)
                        worst = SP_EXIT_UNKNOWN;
                    sp_result_clear(&r);
                }
            }
            flint_free(a);
            flint_free(b);
        }
        line = nl ? nl + 1 : NULL;
    }
    printf("%d queries: %d equal, %d different, %d unknown", nq, counts[0], counts[1], counts[2]);
    if (nbad)
        printf("; %d line%s with errors (not decided)", nbad, nbad > 1 ? "s" : "");
    printf(" (seed %llu)\n", (unsigned long long)opt.seed);
    if (smt2_dir && !io)
        printf("wrote the %d queries as SMT-LIB2 to %s/line-*.smt2\n", nq, smt2_dir);
    sp_engine_free(S);
    flint_free(text);
    return nbad || io ? SP_EXIT_USAGE : worst;
}

/* ---- check / explain / smt2 ------------------------------------------------------------------ */

/* shardproof merge: the partial reports to take the stage results from */
typedef struct {
    const char *const *texts, *const *names;
    int n;
    const char *file; /* the input file the reports name */
} merge_in_t;

/* A command line of check, explain or smt2, interpreted. */
typedef struct {
    shardproof_options_t opt;
    const char *path, *dot, *smt2_dir, *nnscaler[2], *torch, *import_out;
    int import_flags, world, nshapes, progress, lineage;
    shardproof_format_t fmt;
    const char **dims;   /* NAME=SIZE items, pointing into owned copies */
    int ndims;
    char **owned;
    int nowned;
    const char **kept;   /* the result-changing options and values, for a partial report */
    int nkept;
} check_args_t;

static void check_args_clear(check_args_t *ca)
{
    for (int i = 0; i < ca->nowned; i++)
        flint_free(ca->owned[i]);
    flint_free(ca->owned);
    flint_free(ca->dims);
    flint_free(ca->kept);
}

static void interpret(const sp_cmd_t *cmd, sp_args_t *A, check_args_t *ca)
{
    shardproof_options_t *opt = &ca->opt;
    const char *pos[2] = {NULL, NULL};
    int npos = 0, want = cmd->bit == SP_CMD_SMT2 ? 2 : 1;
    long long x;
    ca->dims = flint_calloc((size_t)A->n + 1, sizeof(char *));
    ca->owned = flint_calloc((size_t)A->n + 1, sizeof(char *));
    ca->kept = flint_calloc(2 * (size_t)A->n + 1, sizeof(char *));
    for (int i = 0; i < A->n; i++) {
        const sp_arg_t *a = &A->a[i];
        if (a->opt == NULL) {
            if (npos < want)
                pos[npos] = a->val[0];
            else if (A->nerr == 0)
                sp_args_error(A, "unexpected argument '%s'", a->val[0]);
            npos++;
            continue;
        }
        if (a->opt->flags & SP_OPT_RESULT) {
            ca->kept[ca->nkept++] = a->opt->name;
            if (a->val[0])
                ca->kept[ca->nkept++] = a->val[0];
        }
        if (limit_arg(A, a, opt))
            continue;
        const char *v = a->val[0];
        switch (a->opt->id) {
        case O_PLAN: opt->plan = v; break;
        case O_LINEAGE: ca->lineage = 1; break;
        case O_NNSCALER:
            ca->nnscaler[0] = v;
            ca->nnscaler[1] = a->val[1];
            break;
        case O_TORCH: ca->torch = v; break;
        case O_WORLD: ca->world = sp_cli_world_arg(A, a); break;
        case O_OUTPUT: ca->import_out = v; break;
        case O_AUTOGRAD_SUM: ca->import_flags |= SP_NNSCALER_AUTOGRAD_SUM; break;
        case O_TV_CHUNK_RULE: ca->import_flags |= SP_NNSCALER_TV_CHUNK_RULE; break;
        case O_JOBS:
            if (num_arg(A, a, 0, 1024, &x))
                opt->jobs = (int)x;
            break;
        case O_FORMAT:
            if (!strcmp(v, "text"))
                ca->fmt = SHARDPROOF_FORMAT_TEXT;
            else if (!strcmp(v, "json"))
                ca->fmt = SHARDPROOF_FORMAT_JSON;
            else if (!strcmp(v, "sarif"))
                ca->fmt = SHARDPROOF_FORMAT_SARIF;
            else if (!strcmp(v, "junit"))
                ca->fmt = SHARDPROOF_FORMAT_JUNIT;
            else
                sp_args_error(A, "unknown format '%s' (text, json, sarif, junit)", v);
            break;
        case O_DOT: ca->dot = v; break;
        case O_DIMS: {
            /* NAME=SIZE[,NAME=SIZE...] */
            char *copy = sp_strdup(v), *save = NULL;
            ca->owned[ca->nowned++] = copy;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '=');
                if (eq == NULL || eq == tok || !parse_i64(eq + 1, &x) || x < 1) {
                    sp_args_error(A, "--dims takes NAME=SIZE with SIZE >= 1, not '%s'", tok);
                    break;
                }
                ca->dims = flint_realloc(ca->dims, (size_t)(ca->ndims + 2) * sizeof(char *));
                ca->dims[ca->ndims++] = tok;
            }
            break;
        }
        case O_SHAPES:
            if (num_arg(A, a, 1, 64, &x))
                ca->nshapes = (int)x;
            break;
        case O_SHARD: {
            long long si, sn;
            char tail;
            if (sscanf(v, "%lld/%lld%c", &si, &sn, &tail) != 2 || sn < 1 || sn > (1 << 20) ||
                si < 0 || si >= sn) {
                sp_args_error(A, "--shard takes I/N with 0 <= I < N (for example --shard 0/4), "
                                 "not '%s'", v);
                break;
            }
            opt->shard_index = (int)si;
            opt->shard_count = sn > 1 ? (int)sn : 0;
            break;
        }
        case O_PROBABILISTIC:
            opt->probabilistic = 3;
            if (v && num_arg(A, a, 1, 64, &x))
                opt->probabilistic = (int)x;
            break;
        case O_INFER_LINEAGE: opt->infer_lineage = 1; break;
        case O_NO_INFER_LINEAGE: opt->infer_lineage = -1; break;
        case O_STRICT_SHAPES: opt->fast_shapes = 0; break;
        case O_FAST_SHAPES: opt->fast_shapes = 1; break;
        case O_FULL_MESH: opt->mesh_cutoff = 0; break;
        case O_MESH_CUTOFF: opt->mesh_cutoff = 1; break;
        case O_NO_CROSS_CHECK: opt->no_cross_check = 1; break;
        case O_PROFILE: opt->profile = 1; break;
        case O_VERBOSE: opt->verbose = 1; break;
        case O_MAX_ELEMENTS:
            if (num_arg(A, a, 1, (long long)1 << 40, &x))
                opt->max_elements = x;
            break;
        case O_MAX_RANKS:
            if (num_arg(A, a, 1, (long long)1 << 40, &x))
                opt->max_ranks = x;
            break;
        case O_MAX_MEMO_KEYS:
            if (num_arg(A, a, 1, (long long)1 << 40, &x))
                opt->max_memo_keys = x;
            break;
        case O_MAX_INPUT_BYTES:
            if (num_arg(A, a, 1, (long long)1 << 40, &x))
                opt->max_input_bytes = (size_t)x;
            break;
        case O_MAX_TOKENS:
            if (num_arg(A, a, 1, (long long)1 << 40, &x))
                opt->max_tokens = (size_t)x;
            break;
        case O_MAX_IDENT:
            if (num_arg(A, a, 1, (long long)1 << 40, &x))
                opt->max_ident = (size_t)x;
            break;
        case O_MAX_DEPTH:
            if (num_arg(A, a, 1, 200, &x))
                opt->max_depth = (unsigned)x;
            break;
        case O_NO_PROGRESS: ca->progress = 0; break;
        default: break;
        }
    }
    ca->path = pos[0];
    if (cmd->bit == SP_CMD_SMT2)
        ca->smt2_dir = pos[1];
    if (A->nerr)
        return;
    if (ca->nnscaler[0] && ca->torch)
        sp_args_error(A, "--nnscaler and --torch cannot be combined");
    else if ((ca->nnscaler[0] || ca->torch) && ca->path)
        sp_args_error(A, "%s %s takes no FILE ('%s')", cmd->name,
                      ca->torch ? "--torch" : "--nnscaler", ca->path);
    else if (ca->torch && ca->world == 0)
        sp_args_error(A, "%s --torch needs --world N", cmd->name);
    else if (ca->world && ca->torch == NULL)
        sp_args_error(A, "--world goes with --torch");
    else if (ca->nnscaler[0] == NULL && ca->torch == NULL && ca->path == NULL)
        sp_args_error(A, "%s needs a FILE ('-' reads standard input)%s", cmd->name,
                      cmd->bit == SP_CMD_SMT2 ? " and a DIR" : "");
    else if (cmd->bit == SP_CMD_SMT2 && ca->smt2_dir == NULL)
        sp_args_error(A, "smt2 needs a FILE and a DIR");
    else if (ca->import_out && ca->nnscaler[0] == NULL && ca->torch == NULL)
        sp_args_error(A, "-o goes with --nnscaler or --torch");
    else if (ca->import_flags && ca->nnscaler[0] == NULL)
        sp_args_error(A, "--autograd-sum and --trainverify-chunk-rule go with --nnscaler");
    else if (ca->nshapes > 1 && opt->shard_count > 1)
        sp_args_error(A, "--shapes cannot be combined with --shard");
    else if (opt->shard_count > 1 && (ca->fmt != SHARDPROOF_FORMAT_TEXT || ca->dot))
        sp_args_error(A, "--shard writes a partial report (JSON) for 'shardproof merge'; give "
                         "--format and --dot to merge");
}

/* A document for --format on a run that stopped before its checker ran: the errors in it. */
static void failure_report(const check_args_t *ca, const char *file, const sp_args_t *A,
                           const char *const *msgs, int nmsgs, int code)
{
    if (ca->fmt == SHARDPROOF_FORMAT_TEXT)
        return;
    shardproof_t *c = shardproof_new(&ca->opt);
    if (c == NULL)
        return;
    for (int i = 0; A && i < A->nerr; i++)
        sp_check_fail(c, file, SP_DIAG_USAGE, A->err[i]);
    for (int i = 0; i < nmsgs; i++)
        sp_check_fail(c, file, (sp_diag_code_t)code, msgs[i]);
    shardproof_report(c, stdout, ca->fmt);
    shardproof_free(c);
}

static int check_cmd(const sp_cmd_t *cmd, int argc, char **argv, const merge_in_t *M)
{
    sp_args_t A;
    check_args_t ca;
    memset(&ca, 0, sizeof ca);
    shardproof_options_default(&ca.opt);
    ca.nshapes = 1;
    ca.progress = isatty(2);
    int explain = cmd->bit == SP_CMD_EXPLAIN, rc = SP_EXIT_USAGE;
    char *text = NULL;
    shardproof_t *c = NULL;
    char tmpdir[256] = "", imported[4096];
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP) {
        rc = 0;
        goto out;
    }
    interpret(cmd, &A, &ca);
    const char *shown = ca.path != NULL ? (!strcmp(ca.path, "-") ? "<stdin>" : ca.path)
                        : ca.torch ? ca.torch : ca.nnscaler[1];
    if (shown && !explain && !M && !ca.smt2_dir && ca.opt.shard_count <= 1)
        sp_cli_oom_document(&ca.opt, ca.fmt, shown);
    if (sp_args_report(cmd, &A, stderr)) {
        if (shown)
            failure_report(&ca, shown, &A, NULL, 0, 0);
        goto out;
    }
    /* --nnscaler and --torch generate the plan file that is then checked like a FILE */
    if (ca.nnscaler[0] || ca.torch) {
        char err[4096];
        int grc = ca.torch ? sp_cli_torch_to_file(ca.torch, ca.world, ca.import_out, imported,
                                                  sizeof imported, tmpdir, sizeof tmpdir, err,
                                                  sizeof err)
                  : sp_cli_nnscaler_to_file(ca.nnscaler[0], ca.nnscaler[1], ca.import_flags,
                                            ca.import_out, imported, sizeof imported, tmpdir,
                                            sizeof tmpdir, err, sizeof err)
                      ? 0
                      : SP_EXIT_USAGE;
        if (grc != 0) {
            fprintf(stderr, "shardproof: %s: %s\n", grc == SP_EXIT_INTERNAL ? "internal error"
                                                                          : "error", err);
            const char *m = err;
            failure_report(&ca, shown, NULL, &m, 1,
                           grc == SP_EXIT_INTERNAL ? SP_DIAG_INTERNAL : SP_DIAG_IO);
            rc = grc;
            goto out;
        }
        ca.path = shown = imported;
        if (!explain && !M && !ca.smt2_dir && ca.opt.shard_count <= 1)
            sp_cli_oom_document(&ca.opt, ca.fmt, shown);
    }
    ca.opt.dims = ca.dims;
    ca.opt.ndims = ca.ndims;
    ca.opt.progress = ca.progress && !explain;
    size_t len;
    /* read a little past the parser's input limit, so that it reports the limit by name */
    size_t cap = ca.opt.max_input_bytes > ((size_t)64 << 20) ? ca.opt.max_input_bytes + 1
                                                              : (size_t)64 << 20;
    text = sp_cli_read_file(ca.path, cap, &len);
    if (text == NULL) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot read: %s", strerror(errno));
        fprintf(stderr, "%s: error: %s\n", ca.path, msg);
        const char *m = msg;
        failure_report(&ca, shown, NULL, &m, 1, SP_DIAG_IO);
        goto out;
    }
    shardproof_verdict_t v = SHARDPROOF_EQUIVALENT;
    /* --shapes N: reductions 0..N-1 in turn, up to the first that is not EQUIVALENT; the text
       report shows every one, the other formats the last one run */
    for (int k = 0; k < ca.nshapes && v == SHARDPROOF_EQUIVALENT; k++) {
        if (c != NULL) {
            if (ca.fmt == SHARDPROOF_FORMAT_TEXT) {
                shardproof_report(c, stdout, ca.fmt);
                printf("\n-- shape %d of %d --\n\n", k + 1, ca.nshapes);
            }
            shardproof_free(c);
        }
        ca.opt.shape_index = k;
        c = shardproof_new(&ca.opt);
        v = explain || M || ca.smt2_dir ? shardproof_prepare(c, shown, text, len)
                                        : shardproof_check(c, shown, text, len);
        shardproof_print_diagnostics(c, stderr);
    }
    if (M && v == SHARDPROOF_EQUIVALENT) {
        char err[1024];
        v = shardproof_merge_partials(c, text, len, M->texts, M->names, M->n, err, sizeof err);
        if (v == SHARDPROOF_BAD_INPUT) {
            fprintf(stderr, "shardproof: error: %s\n", err);
            sp_check_fail(c, shown, SP_DIAG_USAGE, err);
        } else if (v == SHARDPROOF_INTERNAL) {
            /* the reference executor contradicted the merged verdict: its message */
            shardproof_print_diagnostics(c, stderr);
        }
        if (c->merged_whole)
            fprintf(stderr, "shardproof: merge: the shards' results needed what only a whole "
                            "check decides (a dim grown or the real sizes or mesh after a "
                            "stage no proof at the checked sizes or an unreproduced "
                            "difference, or inferred lineage the reference executor found "
                            "wrong): the whole input was checked here\n");
        else if (v == SHARDPROOF_EQUIVALENT || v == SHARDPROOF_NOT_EQUIVALENT ||
                 v == SHARDPROOF_UNKNOWN)
            fprintf(stderr, "shardproof: merge: the stages' results are the partial reports' as "
                            "written, each tied to its stage by fingerprint but not proved again "
                            "here: the verdict is as trustworthy as the parts\n");
    }
    int bad = v == SHARDPROOF_BAD_INPUT || v == SHARDPROOF_INTERNAL;
    /* from here on the run's own report is written (a failure now leaves it on standard error) */
    sp_cli_oom_document(NULL, ca.fmt, NULL);
    if (ca.opt.shard_count > 1 && !bad) {
        shardproof_write_partial(c, stdout, text, len, ca.kept, ca.nkept);
        fprintf(stderr, "shardproof: shard %d/%d of %s: %s\n", ca.opt.shard_index,
                ca.opt.shard_count, shown,
                v == SHARDPROOF_NOT_EQUIVALENT ? "a stage fails"
                : v == SHARDPROOF_UNKNOWN      ? "a stage is undecided"
                                               : "its stages are proved");
        shardproof_profile(c, stderr);
    } else if (ca.smt2_dir && !bad) {
        char err[512];
        if (!make_dirs(ca.smt2_dir, err, sizeof err) ||
            !shardproof_export_smt2(c, ca.smt2_dir, err, sizeof err)) {
            fprintf(stderr, "shardproof: error: %s\n", err);
            v = SHARDPROOF_BAD_INPUT;
        } else {
            printf("wrote the stage queries of %s to %s/stage-*.smt2\n", shown, ca.smt2_dir);
        }
    } else if (explain) {
        if (!bad)
            shardproof_explain(c, stdout);
        if (!bad && ca.lineage)
            sp_explain_lineage(c, stdout);
    } else {
        /* every format but text is a document for every outcome, bad input included */
        shardproof_report(c, stdout, ca.fmt);
        /* the time goes to a terminal's stderr only: reports stay byte-identical */
        if (!bad && ca.opt.progress)
            fprintf(stderr, "shardproof: %s in %.2f s\n", shown, shardproof_seconds(c));
        shardproof_profile(c, stderr);
        if (!bad && ca.nshapes > 1 && ca.fmt == SHARDPROOF_FORMAT_TEXT &&
            v == SHARDPROOF_EQUIVALENT)
            printf("\nEQUIVALENT at all %d shapes (--shapes %d)\n", ca.nshapes, ca.nshapes);
    }
    if (ca.dot && !bad) {
        FILE *f = fopen(ca.dot, "w");
        if (f == NULL) {
            fprintf(stderr, "shardproof: error: cannot write %s: %s\n", ca.dot, strerror(errno));
        } else {
            shardproof_dot(c, f);
            fclose(f);
        }
    }
    rc = (int)v;
    if (tmpdir[0]) {
        if (rc == 0 || explain) {
            unlink(imported);
            rmdir(tmpdir);
        } else {
            fprintf(stderr, "shardproof: the generated plan file is kept at %s\n", imported);
        }
    }
out:
    sp_cli_oom_document(NULL, ca.fmt, NULL);
    shardproof_free(c);
    flint_free(text);
    check_args_clear(&ca);
    sp_args_clear(&A);
    return rc;
}

int sp_cli_check(const sp_cmd_t *cmd, int argc, char **argv)
{
    return check_cmd(cmd, argc, argv, NULL);
}

/*
 * shardproof merge PART.json... [--format F] [--dot OUT] [-j N]: the input file and the options
 * come from the partial reports; the input is executed again (no proving) and every stage takes
 * its result from the shard that proved it.
 */
int sp_cli_merge(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    char **texts = flint_calloc((size_t)argc + 1, sizeof(char *));
    const char **names = flint_calloc((size_t)argc + 1, sizeof(char *));
    char **cargv = flint_calloc(2 * (size_t)argc + 1, sizeof(char *));
    int n = 0, nc = 0, rc = SP_EXIT_USAGE;
    json_t *first = NULL;
    char **cargs = NULL;
    check_args_t ca; /* merge's own options, for a report of a failed merge */
    memset(&ca, 0, sizeof ca);
    shardproof_options_default(&ca.opt);
    for (int i = 0; i < A.n; i++) {
        const sp_arg_t *a = &A.a[i];
        if (a->opt == NULL) {
            names[n++] = a->val[0];
            continue;
        }
        cargv[nc++] = (char *)a->opt->name;
        if (a->val[0])
            cargv[nc++] = (char *)a->val[0];
        if (a->opt->id == O_FORMAT) {
            ca.fmt = !strcmp(a->val[0], "json")    ? SHARDPROOF_FORMAT_JSON
                     : !strcmp(a->val[0], "sarif") ? SHARDPROOF_FORMAT_SARIF
                     : !strcmp(a->val[0], "junit") ? SHARDPROOF_FORMAT_JUNIT
                                                   : SHARDPROOF_FORMAT_TEXT;
        }
    }
    char msg[1024] = "";
    const char *file = n ? names[0] : NULL;
    if (A.nerr == 0 && n == 0)
        sp_args_error(&A, "merge needs the partial reports of check --shard I/N");
    if (sp_args_report(cmd, &A, stderr)) {
        if (file)
            failure_report(&ca, file, &A, NULL, 0, 0);
        goto out;
    }
    for (int k = 0; k < n; k++) {
        size_t len;
        texts[k] = sp_cli_read_file(names[k], (size_t)256 << 20, &len);
        if (texts[k] == NULL) {
            snprintf(msg, sizeof msg, "%s: cannot read: %s", names[k], strerror(errno));
            goto fail;
        }
    }
    /* the file and the options of the first report (merge checks that all agree) */
    json_error_t je;
    first = json_loads(texts[0], JSON_REJECT_DUPLICATES, &je);
    if (first == NULL) {
        snprintf(msg, sizeof msg, "%s:%d:%d: invalid JSON: %s", names[0], je.line, je.column,
                 je.text);
        goto fail;
    }
    json_t *jfile = json_object_get(first, "file"), *args = json_object_get(first, "args");
    if (!json_is_string(jfile) || !json_is_array(args) || json_array_size(args) > 4096) {
        snprintf(msg, sizeof msg, "%s: not a partial report of check --shard I/N", names[0]);
        goto fail;
    }
    file = json_string_value(jfile);
    size_t na = json_array_size(args);
    cargs = flint_calloc(na + (size_t)nc + 2, sizeof(char *));
    for (size_t k = 0; k < na; k++) {
        const char *v = json_string_value(json_array_get(args, k));
        if (v == NULL) {
            snprintf(msg, sizeof msg, "%s: args[%zu]: expected a string", names[0], k);
            goto fail;
        }
        cargs[k] = (char *)v;
    }
    for (int k = 1; k < n; k++) {
        json_t *o = json_loads(texts[k], JSON_REJECT_DUPLICATES, &je);
        int same = o && json_equal(json_object_get(o, "args"), args) &&
                   json_equal(json_object_get(o, "file"), jfile);
        json_decref(o);
        if (!same) {
            snprintf(msg, sizeof msg, "%s: file, args: not the same run as %s", names[k],
                     names[0]);
            goto fail;
        }
    }
    cargs[na] = (char *)file;
    for (int k = 0; k < nc; k++)
        cargs[na + 1 + (size_t)k] = cargv[k];
    merge_in_t M = {(const char *const *)texts, names, n, file};
    static const sp_cmd_t merged_check = {"check", SP_CMD_CHECK, NULL, NULL, NULL, sp_cli_opts,
                                          sp_cli_check};
    rc = check_cmd(&merged_check, (int)na + 1 + nc, cargs, &M);
    goto out;
fail:
    fprintf(stderr, "shardproof: error: %s\n", msg);
    {
        const char *m = msg;
        failure_report(&ca, file, NULL, &m, 1, SP_DIAG_USAGE);
    }
out:
    json_decref(first);
    for (int k = 0; k < n; k++)
        flint_free(texts[k]);
    flint_free(texts);
    flint_free(names);
    flint_free(cargv);
    flint_free(cargs);
    sp_args_clear(&A);
    return rc;
}
