/* diff_fuzz.c: differential fuzzer: engine verdicts against exact evaluation on random pairs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval.h"
#include "hash.h"
#include "exprgen.h"
#include "solver.h"

/* Under ASan, LeakSanitizer can be asked after every pair, so a leak names its pair. */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/*
 * Pairs are equal by construction (an expression and a random rewrite of it) or perturbed (the
 * rewrite with one subterm changed).  The engine decides each pair; then:
 *  - DIFFERENT must come with a counterexample that sp_eval_certify_differ re-certifies;
 *  - EQUAL must hold at random rational points (exact evaluation, or Arb balls when a value is
 *    transcendental): a point where both sides are defined and certainly differ is a bug;
 *  - an equal-by-construction pair answered DIFFERENT, or certainly different at some point, is a
 *    bug (of the engine, the evaluators, or a rewrite rule of exprgen.c);
 *  - a query that overruns its time limit by far is a hang.
 * UNKNOWN is allowed and counted.  Pair i depends only on (seed, i), so --pair reruns one.
 */

typedef enum { K_EQUAL, K_PERTURBED, K_ANY } kind_t;

static const char *const kind_names[] = {"equal-by-construction", "perturbed", "given"};
static const char *const answer_names[] = {"EQUAL", "DIFFERENT", "UNKNOWN"};

typedef struct {
    uint64_t seed;
    long iters;
    long only_pair;   /* -1: all */
    int verbose;
    int hard;         /* also rewrite with rules the engine is not expected to prove */
    long max_ms;
    long budget_ms;   /* a query slower than this (wall ms) is a find; 0: 4 max_ms + 10 s */
    long max_finds;
    const char *save_dir;
    int npoints;
    int leak_check;   /* under ASan: a leak check after every pair */
    int show_missed;  /* print UNKNOWN pairs that a random point proves different */
    int deep_expect_equal; /* --deep: the equal query must be proved (a performance check) */
    /* counters */
    long pairs, n_equal_kind, n_pert_kind, ans[3], disagreements;
    long why[16];
    long missed_witness;   /* UNKNOWN although a random point certified a difference */
    long pert_equal;       /* perturbed pairs proved EQUAL (the perturbation was harmless) */
    long eq_unknown;       /* equal-by-construction pairs answered UNKNOWN */
    long reverse_checked;
    long points_checked, points_defined;
    double total_ms, max_query_ms;
    long slowest_pair;
    uint32_t hits[XG_NRULES];
    long templates;
} opts_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void print_point(FILE *f, const sp_ectx_struct *E, sp_expr_t a, sp_expr_t b, const fmpq *vals)
{
    sp_expr_t roots[2] = {a, b};
    uint32_t *cone = NULL;
    size_t n = sp_expr_cone(E, roots, 2, &cone);
    fprintf(f, "  point:");
    for (size_t i = 0; i < n; i++) {
        if (sp_expr_op(E, cone[i]) != SP_OP_SYM)
            continue;
        char *s = fmpq_get_str(NULL, 10, vals + E->nodes[cone[i]].param);
        fprintf(f, " %s=%s", sp_expr_sym_name(E, cone[i]), s);
        flint_free(s);
    }
    fprintf(f, "\n");
    flint_free(cone);
    char *va = NULL, *vb = NULL;
    int exact = 0;
    if (sp_eval_certify_differ(E, a, b, vals, &va, &vb, &exact))
        fprintf(f, "  values: lhs %s, rhs %s (%s)\n", va, vb, exact ? "exact" : "Arb balls");
    else
        fprintf(f, "  values: sp_eval_certify_differ does not certify a difference here\n");
    flint_free(va);
    flint_free(vb);
}

/* Report one disagreement; write the pair to save_dir when asked. */
static void report(opts_t *o, long pair, kind_t kind, const sp_ectx_struct *E, sp_expr_t a,
                   sp_expr_t b, const sp_result_t *res, const char *what, const fmpq *vals)
{
    o->disagreements++;
    char *sa = sp_expr_print(E, a, 0), *sb = sp_expr_print(E, b, 0);
    printf("diff_fuzz: DISAGREEMENT: %s (pair %ld, seed %" PRIu64 ")\n", what, pair, o->seed);
    printf("  kind: %s\n  engine: %s", kind_names[kind], answer_names[res->answer]);
    if (res->answer == SP_UNKNOWN)
        printf(" (%s)", sp_why_name(res->why));
    printf("\n  lhs: %s\n  rhs: %s\n", sa, sb);
    if (vals != NULL)
        print_point(stdout, E, a, b, vals);
    if (o->save_dir != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/find-s%" PRIu64 "-p%ld.txt", o->save_dir, o->seed, pair);
        FILE *f = fopen(path, "w");
        if (f != NULL) {
            fprintf(f, "# diff_fuzz --seed %" PRIu64 " --pair %ld: %s\n", o->seed, pair, what);
            fprintf(f, "# kind: %s\n%s\n%s\n", kind == K_EQUAL ? "equal" : "any", sa, sb);
            fclose(f);
            printf("  saved: %s\n", path);
        }
    }
    fflush(stdout);
    flint_free(sa);
    flint_free(sb);
}

/* Values by symbol index from a counterexample. */
static fmpq *cex_point(const sp_ectx_struct *E, const sp_result_t *res)
{
    fmpq *vals = _fmpq_vec_init(E->nsyms ? E->nsyms : 1);
    for (slong i = 0; i < res->cex.n; i++)
        fmpq_set(vals + E->nodes[res->cex.syms[i]].param, res->cex.vals + i);
    return vals;
}

/* Decide the pair and check the verdict.  Returns the number of disagreements found. */
static long check_pair(opts_t *o, long pair, kind_t kind, sp_engine_t *S, sp_expr_t a,
                       sp_expr_t b, xg_rng_t *rng)
{
    sp_ectx_struct *E = sp_engine_exprs(S);
    long before = o->disagreements;
    sp_result_t res;
    sp_result_init(&res);
    double t0 = now_ms();
    sp_answer_t ans = sp_equiv(S, a, b, &res);
    double dt = now_ms() - t0;
    o->total_ms += dt;
    if (dt > o->max_query_ms) {
        o->max_query_ms = dt;
        o->slowest_pair = pair;
    }
    o->ans[ans]++;
    if (ans == SP_UNKNOWN && (unsigned)res.why < 16)
        o->why[res.why]++;
    if ((o->max_ms > 0 && dt > 4.0 * (double)o->max_ms + 10000.0) ||
        (o->budget_ms > 0 && dt > (double)o->budget_ms)) {
        char msg[160];
        snprintf(msg, sizeof msg, "query took %.0f ms with max_ms %ld (limit not respected)", dt, o->max_ms);
        report(o, pair, kind, E, a, b, &res, msg, NULL);
    }
    if (o->verbose) {
        char *sa = sp_expr_print(E, a, 300), *sb = sp_expr_print(E, b, 300);
        printf("pair %ld [%s] %s%s%s %.1f ms\n  lhs: %s\n  rhs: %s\n", pair, kind_names[kind],
               answer_names[ans], ans == SP_UNKNOWN ? " " : "",
               ans == SP_UNKNOWN ? sp_why_name(res.why) : "", dt, sa, sb);
        flint_free(sa);
        flint_free(sb);
    }

    if (ans == SP_DIFFERENT) {
        fmpq *vals = cex_point(E, &res);
        if (!sp_eval_certify_differ(E, a, b, vals, NULL, NULL, NULL))
            report(o, pair, kind, E, a, b, &res, "DIFFERENT whose counterexample does not re-certify", vals);
        else if (kind == K_EQUAL)
            report(o, pair, kind, E, a, b, &res, "equal-by-construction pair answered DIFFERENT", vals);
        if (res.cex.lhs_value == NULL || res.cex.rhs_value == NULL)
            report(o, pair, kind, E, a, b, &res, "DIFFERENT without printed values", vals);
        _fmpq_vec_clear(vals, E->nsyms ? E->nsyms : 1);
    }
    if (ans == SP_EQUAL && kind == K_PERTURBED)
        o->pert_equal++;
    if (ans == SP_UNKNOWN && kind == K_EQUAL)
        o->eq_unknown++;

    /* random points: the engine's EQUAL and the construction's equality must hold at each */
    fmpq *vals = _fmpq_vec_init(E->nsyms ? E->nsyms : 1);
    int witnessed = 0;
    for (int p = 0; p < o->npoints && o->disagreements == before; p++) {
        xg_point(rng, vals, E->nsyms);
        int d = xg_differ_at(E, a, b, vals, 128);
        o->points_checked++;
        if (d >= 0)
            o->points_defined++;
        if (d != 1)
            continue;
        if (!sp_eval_certify_differ(E, a, b, vals, NULL, NULL, NULL))
            report(o, pair, kind, E, a, b, &res,
                   "evaluators disagree: balls/exact say different, sp_eval_certify_differ does not", vals);
        else if (ans == SP_EQUAL)
            report(o, pair, kind, E, a, b, &res, "EQUAL but the sides differ at a point", vals);
        else if (kind == K_EQUAL)
            report(o, pair, kind, E, a, b, &res,
                   "equal-by-construction pair differs at a point (rewrite rule or evaluator bug)", vals);
        witnessed = 1;
        if (ans == SP_UNKNOWN && o->show_missed) {
            char *sa = sp_expr_print(E, a, 0), *sb = sp_expr_print(E, b, 0);
            printf("diff_fuzz: missed witness (pair %ld): engine UNKNOWN (%s)\n  lhs: %s\n  rhs: %s\n", pair,
                   sp_why_name(res.why), sa, sb);
            print_point(stdout, E, a, b, vals);
            flint_free(sa);
            flint_free(sb);
        }
        break;
    }
    if (witnessed && ans == SP_UNKNOWN)
        o->missed_witness++;
    _fmpq_vec_clear(vals, E->nsyms ? E->nsyms : 1);

    /* sometimes the reverse query in the same engine (normal forms now cached) */
    if (xg_chance(rng, 1, 4) && o->disagreements == before) {
        sp_result_t r2;
        sp_result_init(&r2);
        sp_answer_t back = sp_equiv(S, b, a, &r2);
        o->reverse_checked++;
        if (back == SP_DIFFERENT) {
            fmpq *v2 = cex_point(E, &r2);
            if (!sp_eval_certify_differ(E, b, a, v2, NULL, NULL, NULL))
                report(o, pair, kind, E, b, a, &r2, "reverse query: DIFFERENT whose counterexample does not re-certify", v2);
            else if (ans == SP_EQUAL)
                report(o, pair, kind, E, a, b, &res, "EQUAL, but the reverse query found a certified counterexample", v2);
            else if (kind == K_EQUAL)
                report(o, pair, kind, E, b, a, &r2, "reverse query: equal-by-construction pair answered DIFFERENT", v2);
            _fmpq_vec_clear(v2, E->nsyms ? E->nsyms : 1);
        }
        sp_result_clear(&r2);
    }
    sp_result_clear(&res);
    return o->disagreements - before;
}

static void set_limits(const opts_t *o, sp_limits_t *lim)
{
    sp_limits_default(lim);
    lim->max_terms = 4000;
    lim->max_degree = 64;
    lim->max_splits = 512;
    lim->max_ms = o->max_ms;
    lim->cex_tries = 200;
}

static void run_pair(opts_t *o, long i)
{
    uint64_t ps = sp_mix64(o->seed * UINT64_C(0x9e3779b97f4a7c15) + (uint64_t)i + 1);
    sp_limits_t lim;
    set_limits(o, &lim);
    sp_engine_t *S = sp_engine_new(&lim, ps);
    sp_ectx_struct *E = sp_engine_exprs(S);
    xg_t g;
    xg_init(&g, E, ps);
    kind_t kind = (i & 1) ? K_PERTURBED : K_EQUAL;
    static const unsigned flavors[] = {
        XG_ARITH | XG_POW,
        XG_ARITH | XG_POW | XG_DIV,
        XG_ARITH | XG_PIECE,
        XG_ARITH | XG_PIECE | XG_COND,
        XG_ARITH | XG_TRANSC,
        XG_ARITH | XG_TRANSC | XG_DIV | XG_ROOT,
        XG_ARITH | XG_PIECE | XG_TRANSC,
        XG_ALL,
    };
    g.fam = flavors[xg_below(&g.rng, sizeof flavors / sizeof flavors[0])];
    if (o->hard && xg_chance(&g.rng, 1, 4))
        g.fam |= XG_HARD;
    g.nvars = 1 + (int)xg_below(&g.rng, 4);
    g.max_cone = 160;
    sp_expr_t a, b;
    if (xg_chance(&g.rng, 1, 10)) {
        o->templates++;
        xg_template(&g, &a, &b, kind == K_PERTURBED);
        b = xg_rewrite(&g, b, (int)xg_below(&g.rng, 2));
    } else {
        int depth = 2 + (int)xg_below(&g.rng, 3);
        a = xg_gen(&g, depth);
        b = xg_rewrite(&g, a, 1 + (int)xg_below(&g.rng, 4));
        if (kind == K_PERTURBED) {
            b = xg_perturb(&g, b);
            if (xg_chance(&g.rng, 1, 2))
                b = xg_rewrite(&g, b, 1);
        }
    }
    if (xg_chance(&g.rng, 1, 2)) {
        sp_expr_t t = a;
        a = b;
        b = t;
    }
    if (a == SP_EXPR_NONE || b == SP_EXPR_NONE) {
        fprintf(stderr, "diff_fuzz: pair %ld: expression store full, skipped\n", i);
    } else {
        o->pairs++;
        if (kind == K_EQUAL)
            o->n_equal_kind++;
        else
            o->n_pert_kind++;
        check_pair(o, i, kind, S, a, b, &g.rng);
    }
    for (int r = 0; r < XG_NRULES; r++)
        o->hits[r] += g.hits[r];
    sp_engine_free(S);
#ifdef HAVE_LSAN
    if (o->leak_check && __lsan_do_recoverable_leak_check()) {
        o->leak_check = 0; /* leaked blocks stay leaked: later checks would report them again */
        o->disagreements++;
        printf("diff_fuzz: DISAGREEMENT: memory leak (pair %ld, seed %" PRIu64 "): rerun with --pair %ld --verbose\n",
               i, o->seed, i);
    }
#endif
}

/* ---- replay of saved pairs ------------------------------------------------------------------- */

static int replay_file(opts_t *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "diff_fuzz: cannot open %s\n", path);
        return 1;
    }
    char *lines[2] = {NULL, NULL};
    int nl = 0;
    kind_t kind = K_ANY;
    long max_ms = o->max_ms, budget = 0, save_ms = o->max_ms, save_budget = o->budget_ms;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = 0;
        if (buf[0] == '#') {
            const char *d;
            if (strstr(buf, "kind: equal"))
                kind = K_EQUAL;
            if ((d = strstr(buf, "max-ms:")) != NULL)
                max_ms = strtol(d + 7, NULL, 10);
            if ((d = strstr(buf, "budget-ms:")) != NULL)
                budget = strtol(d + 10, NULL, 10);
            continue;
        }
        if (len == 0 || nl == 2)
            continue;
        lines[nl++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    int rc = 0;
    if (nl != 2) {
        fprintf(stderr, "%s: expected two expression lines\n", path);
        rc = 1;
    } else {
        sp_limits_t lim;
        o->max_ms = max_ms;
        o->budget_ms = budget ? budget : o->budget_ms;
        set_limits(o, &lim);
        sp_engine_t *S = sp_engine_new(&lim, o->seed);
        sp_ectx_struct *E = sp_engine_exprs(S);
        xg_t g;
        xg_init(&g, E, o->seed); /* x0..x5 first, as in generated pairs */
        char err[256];
        sp_expr_t a = sp_expr_parse(E, lines[0], err, sizeof err);
        if (a == SP_EXPR_NONE) {
            fprintf(stderr, "%s:%d: error: %s\n", path, 1, err);
            rc = 1;
        }
        sp_expr_t b = a == SP_EXPR_NONE ? SP_EXPR_NONE : sp_expr_parse(E, lines[1], err, sizeof err);
        if (a != SP_EXPR_NONE && b == SP_EXPR_NONE) {
            fprintf(stderr, "%s:%d: error: %s\n", path, 2, err);
            rc = 1;
        }
        if (rc == 0) {
            o->pairs++;
            long before = o->disagreements;
            for (int rep = 0; rep < 4; rep++) {
                /* the replay also varies the engine seed: witness searches are seeded */
                sp_engine_t *S2 = rep == 0 ? S : sp_engine_new(&lim, o->seed + (uint64_t)rep);
                sp_ectx_struct *E2 = sp_engine_exprs(S2);
                sp_expr_t a2 = a, b2 = b;
                if (rep > 0) {
                    xg_t g2;
                    xg_init(&g2, E2, o->seed);
                    a2 = sp_expr_parse(E2, lines[0], NULL, 0);
                    b2 = sp_expr_parse(E2, lines[1], NULL, 0);
                }
                xg_rng_t rng = {o->seed + (uint64_t)rep};
                check_pair(o, -1, kind, S2, a2, b2, &rng);
                if (rep > 0)
                    sp_engine_free(S2);
            }
            if (o->disagreements != before) {
                printf("diff_fuzz: %s: FAILED\n", path);
                rc = 1;
            } else if (o->verbose) {
                printf("diff_fuzz: %s: ok\n", path);
            }
        }
        sp_engine_free(S);
    }
    o->max_ms = save_ms;
    o->budget_ms = save_budget;
    free(lines[0]);
    free(lines[1]);
    return rc;
}

/* ---- deep chains ----------------------------------------------------------------------------- */

/*
 * Robustness (issue 5): chains of depth n of every operator must not overflow the stack or
 * ignore the time limit.  Each chain c is compared with (c + x0) - x0 (equal) and 2c, then
 * printed and evaluated.  The answers are not checked (limits give UNKNOWN); a crash is the find.
 */
static const char *const deep_kinds[] = {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                                         "silu", "gelu", "erf", "relu", "abs", "add", "mul",
                                         "sub", "div", "pow", "max", "min", "clamp", "cmp",
                                         "where", "log-sqrt"};

static sp_expr_t deep_step(sp_ectx_struct *E, const char *k, sp_expr_t e, sp_expr_t x, long i)
{
    static const char *const un_names[] = {"neg", "exp", "log", "sqrt", "rsqrt", "tanh",
                                           "sigmoid", "silu", "gelu", "erf", "relu", "abs"};
    static const sp_op_t un_ops[] = {SP_OP_NEG, SP_OP_EXP, SP_OP_LOG, SP_OP_SQRT,
                                     SP_OP_RSQRT, SP_OP_TANH, SP_OP_SIGMOID, SP_OP_SILU,
                                     SP_OP_GELU, SP_OP_ERF, SP_OP_RELU, SP_OP_ABS};
    sp_expr_t c = sp_expr_const_si(E, (slong)(i % 7) - 3, 1);
    for (size_t u = 0; u < sizeof un_ops / sizeof un_ops[0]; u++)
        if (!strcmp(k, un_names[u]))
            return sp_expr_unary(E, un_ops[u], e);
    if (!strcmp(k, "add")) return sp_expr_add(E, e, x);
    if (!strcmp(k, "mul")) return sp_expr_mul(E, e, x);
    if (!strcmp(k, "sub")) return sp_expr_sub(E, x, e);
    if (!strcmp(k, "div")) return sp_expr_div(E, sp_expr_const_si(E, 1, 1), sp_expr_add(E, e, x));
    if (!strcmp(k, "pow")) return sp_expr_pow(E, sp_expr_add(E, e, c), (i & 1) ? 2 : -1);
    if (!strcmp(k, "max")) return sp_expr_max2(E, e, c);
    if (!strcmp(k, "min")) return sp_expr_min2(E, sp_expr_add(E, e, x), c);
    if (!strcmp(k, "clamp")) return sp_expr_clamp(E, sp_expr_add(E, e, x), c, sp_expr_const_si(E, 5, 1));
    if (!strcmp(k, "cmp")) return sp_expr_mul(E, sp_expr_cmp(E, SP_CMP_GT, e, c), x);
    if (!strcmp(k, "where")) return sp_expr_where(E, sp_expr_cmp(E, SP_CMP_GT, e, c), sp_expr_add(E, e, x), c);
    /* "log-sqrt": sqrt chain under one log */
    return sp_expr_unary(E, SP_OP_SQRT, e);
}

static int run_deep(opts_t *o, long n, const char *only)
{
    sp_limits_t lim;
    set_limits(o, &lim);
    for (size_t k = 0; k < sizeof deep_kinds / sizeof deep_kinds[0]; k++) {
        const char *kind = deep_kinds[k];
        if (only != NULL && strcmp(only, kind) != 0)
            continue;
        double t0 = now_ms();
        sp_engine_t *S = sp_engine_new(&lim, o->seed);
        sp_ectx_struct *E = sp_engine_exprs(S);
            sp_expr_t x = sp_expr_sym(E, "x0"), e = x;
        for (long i = 0; i < n && e != SP_EXPR_NONE; i++)
            e = deep_step(E, kind, e, x, i);
        if (!strcmp(kind, "log-sqrt"))
            e = sp_expr_unary(E, SP_OP_LOG, e);
        sp_expr_t same = sp_expr_sub(E, sp_expr_add(E, e, x), x); /* c + 0 is folded to c */
        sp_expr_t twice = sp_expr_mul(E, e, sp_expr_const_si(E, 2, 1));
        sp_result_t r1, r2;
        sp_result_init(&r1);
        sp_result_init(&r2);
        double q0 = now_ms();
        sp_answer_t a1 = sp_equiv(S, e, same, &r1);
        double q1 = now_ms();
        sp_answer_t a2 = sp_equiv(S, e, twice, &r2);
        double q2 = now_ms();
        if (a2 == SP_DIFFERENT) {
            fmpq *v = cex_point(E, &r2);
            if (!sp_eval_certify_differ(E, e, twice, v, NULL, NULL, NULL)) {
                printf("diff_fuzz: DISAGREEMENT: deep %s: DIFFERENT whose counterexample does not re-certify\n", kind);
                o->disagreements++;
            }
            _fmpq_vec_clear(v, E->nsyms ? E->nsyms : 1);
        }
        if (a1 == SP_DIFFERENT) {
            printf("diff_fuzz: DISAGREEMENT: deep %s: c and (c + x0) - x0 answered DIFFERENT\n", kind);
            o->disagreements++;
        }
        if (a1 != SP_EQUAL && o->deep_expect_equal) {
            printf("diff_fuzz: deep %s: c and (c + x0) - x0 not proved EQUAL (--deep-expect-equal)\n", kind);
            o->disagreements++;
        }
        char *txt = sp_expr_print(E, e, 60);
        fmpq *vals = _fmpq_vec_init(E->nsyms);
        fmpq_t out;
        fmpq_init(out);
        fmpq_set_si(vals + sp_expr_node(E, x)->param, 1, 3);
        /* exact values of deep mul/div/pow chains have n-bit numerators: costly, so small n only */
        sp_eval_status_t st = n <= 100000 ? sp_eval_exact(E, &e, 1, vals, out) : SP_EVAL_NOMEM;
        fmpq_clear(out);
        _fmpq_vec_clear(vals, E->nsyms);
        double slow = FLINT_MAX(q1 - q0, q2 - q1);
        printf("deep %-8s n=%ld: c vs (c+x0)-x0 %s%s%s (%.0f ms), c vs 2c %s%s%s (%.0f ms), exact eval %d, %.0f ms; %s\n",
               kind, n, answer_names[a1], a1 == SP_UNKNOWN ? " " : "", a1 == SP_UNKNOWN ? sp_why_name(r1.why) : "",
               q1 - q0, answer_names[a2], a2 == SP_UNKNOWN ? " " : "", a2 == SP_UNKNOWN ? sp_why_name(r2.why) : "",
               q2 - q1, (int)st, now_ms() - t0, txt);
        if (o->max_ms > 0 && slow > 4.0 * (double)o->max_ms + 10000.0) {
            printf("diff_fuzz: DISAGREEMENT: deep %s: a query took %.0f ms with max_ms %ld\n", kind, slow, o->max_ms);
            o->disagreements++;
        }
        flint_free(txt);
        sp_result_clear(&r1);
        sp_result_clear(&r2);
        sp_engine_free(S);
    }
    return o->disagreements ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: diff_fuzz [--seed N] [--iters K] [--pair I] [--verbose] [--hard] [--max-ms M] [--budget-ms B]\n"
            "                 [--points P] [--max-finds F] [--save DIR] [--stats] [--show-missed]\n"
            "                 [--leak-check] [--deep N [--deep-op KIND] [--deep-expect-equal]]\n"
            "                 [--replay FILE...]\n");
}

int main(int argc, char **argv)
{
    opts_t o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.iters = 1000;
    o.only_pair = -1;
    o.max_ms = 5000;
    o.max_finds = 10;
    o.npoints = 12;
    int stats = 0, replay = 0, rc = 0;
    long deep = 0;
    const char *deep_op = NULL;
    int i;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash report on stderr follows the last pair printed */
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--seed") && more)
            o.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--iters") && more)
            o.iters = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--pair") && more)
            o.only_pair = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--max-ms") && more)
            o.max_ms = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--budget-ms") && more)
            o.budget_ms = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--points") && more)
            o.npoints = atoi(argv[++i]);
        else if (!strcmp(a, "--max-finds") && more)
            o.max_finds = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--save") && more)
            o.save_dir = argv[++i];
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v"))
            o.verbose = 1;
        else if (!strcmp(a, "--deep") && more)
            deep = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--deep-expect-equal"))
            o.deep_expect_equal = 1;
        else if (!strcmp(a, "--deep-op") && more)
            deep_op = argv[++i];
        else if (!strcmp(a, "--show-missed"))
            o.show_missed = 1;
        else if (!strcmp(a, "--leak-check"))
            o.leak_check = 1;
        else if (!strcmp(a, "--hard"))
            o.hard = 1;
        else if (!strcmp(a, "--stats"))
            stats = 1;
        else if (!strcmp(a, "--replay")) {
            replay = 1;
            i++;
            break;
        } else {
            usage();
            return 2;
        }
    }
    double t0 = now_ms();
    if (deep > 0) {
        rc = run_deep(&o, deep, deep_op);
        flint_cleanup_master();
        return rc;
    }
    if (replay) {
        for (; i < argc; i++)
            rc |= replay_file(&o, argv[i]);
        printf("diff_fuzz: replayed %ld pairs: %ld EQUAL, %ld DIFFERENT, %ld UNKNOWN, %ld disagreements\n",
               o.pairs, o.ans[0], o.ans[1], o.ans[2], o.disagreements);
        flint_cleanup_master();
        return rc || o.disagreements ? 1 : 0;
    }
    printf("diff_fuzz: seed %" PRIu64 ", %ld iterations\n", o.seed, o.iters);
    fflush(stdout);
    for (long k = 0; k < o.iters; k++) {
        if (o.only_pair >= 0 && k != o.only_pair)
            continue;
        run_pair(&o, k);
        if (o.disagreements >= o.max_finds) {
            printf("diff_fuzz: stopping after %ld disagreements\n", o.disagreements);
            break;
        }
    }
    double dt = now_ms() - t0;
    printf("diff_fuzz: %ld pairs (%ld equal-by-construction, %ld perturbed): %ld EQUAL, %ld DIFFERENT, "
           "%ld UNKNOWN, %ld disagreements (seed %" PRIu64 ")\n",
           o.pairs, o.n_equal_kind, o.n_pert_kind, o.ans[0], o.ans[1], o.ans[2], o.disagreements, o.seed);
    printf("diff_fuzz: UNKNOWN rate %.1f%% (equal-by-construction %.1f%%); perturbed but EQUAL %ld; "
           "UNKNOWN with a witness at a random point %ld; %.1f s, slowest query %.0f ms (pair %ld)\n",
           o.pairs ? 100.0 * (double)o.ans[2] / (double)o.pairs : 0.0,
           o.n_equal_kind ? 100.0 * (double)o.eq_unknown / (double)o.n_equal_kind : 0.0, o.pert_equal,
           o.missed_witness, dt / 1e3, o.max_query_ms, o.slowest_pair);
    if (o.ans[2]) {
        printf("diff_fuzz: UNKNOWN reasons:");
        for (int w = 0; w < 16; w++)
            if (o.why[w])
                printf(" %s %ld;", sp_why_name((sp_why_t)w), o.why[w]);
        printf("\n");
    }
    if (stats) {
        printf("diff_fuzz: %ld templates, %ld reverse queries, %ld/%ld points defined\n", o.templates,
               o.reverse_checked, o.points_defined, o.points_checked);
        for (int r = 0; r < XG_NRULES; r++)
            if (o.hits[r])
                printf("  rule %-45s %u\n", xg_rule_name(r), o.hits[r]);
    }
    flint_cleanup_master();
    return o.disagreements ? 1 : 0;
}
