/* bench_engine.c: shardproof's engine against Z3 (C API and process) and cvc5 on the same queries.
 */
/*
 * Every query is built once as shardproof expressions in a fresh engine, then decided by
 *   1. the engine: sp_equiv_vec;
 *   2. Z3 in this process through libz3's C API, on a translation of the same DAG (the encoding of
 *      solver/smt2.h: uninterpreted transcendentals, ite for piecewise operators, definedness
 *      guards, the disjunction of element disequalities);
 *   3. z3 as a process on the script sp_smt2_query prints;
 *   4. cvc5 as a process on the same script.
 * libz3 is linked into this benchmark only, never into the library or the tool.
 * Output: a Markdown table and a summary on stdout, progress on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <z3.h>

#include "expr.h"
#include "sbuf.h"
#include "smt2.h"
#include "solver.h"

/* ---- options ------------------------------------------------------------------------------ */

typedef struct {
    double timeout_s; /* per query and solver */
    int quick;        /* two smallest sizes of each family */
    int skip_larger; /* after a time-out, skip the larger sizes of the same query for that solver */
    int run_engine, run_z3lib, run_z3proc, run_cvc5;
    const char *only;     /* substring filter on "family/variant" */
    const char *keep_dir; /* keep the SMT-LIB2 scripts here */
    const char *z3_bin, *cvc5_bin;
    uint64_t seed;
    int max_size; /* sizes beyond this index are left out (-1: all) */
} opts_t;

/* ---- answers ------------------------------------------------------------------------------ */

typedef enum {
    ANS_NOTRUN = 0,
    ANS_EQ,      /* proved equal (engine EQUAL, solver unsat) */
    ANS_DIFF,    /* different: engine certificate, or sat without uninterpreted functions */
    ANS_DIFF_UF, /* sat with uninterpreted functions: not a certified counterexample */
    ANS_UNKNOWN, /* gave up (engine UNKNOWN, solver unknown) */
    ANS_TIMEOUT,
    ANS_ERROR,
    ANS_SKIP /* timed out on a smaller size of the same query */
} ans_t;

typedef struct {
    ans_t ans;
    double ms;      /* CPU time (user + system) of the decider */
    double wall_ms; /* wall-clock time */
    char note[96];
} cell_t;

enum { COL_SP = 0, COL_Z3LIB, COL_Z3PROC, COL_CVC5, NCOLS };
static const char *const col_names[NCOLS] = {"shardproof", "z3 (C API)", "z3 (process)", "cvc5"};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * CPU time of the calling thread, in ms.  Not CLOCK_PROCESS_CPUTIME_ID: once RLIMIT_CPU is set,
 * Linux reads the process clock from the group timer, which lags by up to a scheduler tick (4 ms
 * here).  The engine and Z3's check run on the calling thread.
 */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Limits are CPU time, so a loaded machine does not turn answers into time-outs: a child gets
 * RLIMIT_CPU = the limit (SIGXCPU, then SIGKILL a second later).  A wall-clock backstop catches
 * a child that sleeps forever (a deadlock).
 */
static void set_cpu_limit(double seconds)
{
    struct rlimit rl;
    rl.rlim_cur = (rlim_t)ceil(seconds);
    rl.rlim_max = rl.rlim_cur + 1;
    setrlimit(RLIMIT_CPU, &rl);
}

static double wall_backstop_ms(double timeout_s)
{
    return timeout_s * 1000 * 4 + 10000;
}

static int killed_by_cpu_limit(int status)
{
    return WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL);
}

/* ---- query construction ------------------------------------------------------------------- */

typedef struct {
    sp_expr_t *a, *b;
    size_t n, alloc;
} pairs_t;

static void pairs_push(pairs_t *p, sp_expr_t a, sp_expr_t b)
{
    if (p->n == p->alloc) {
        p->alloc = p->alloc ? 2 * p->alloc : 64;
        p->a = realloc(p->a, p->alloc * sizeof(sp_expr_t));
        p->b = realloc(p->b, p->alloc * sizeof(sp_expr_t));
        if (p->a == NULL || p->b == NULL) {
            fprintf(stderr, "bench: out of memory\n");
            exit(2);
        }
    }
    p->a[p->n] = a;
    p->b[p->n] = b;
    p->n++;
}

static sp_expr_t *xalloc_exprs(size_t n)
{
    sp_expr_t *v = calloc(n ? n : 1, sizeof(sp_expr_t));
    if (v == NULL) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    return v;
}

/* A rows x cols matrix of symbols name[i,j], row-major. */
static sp_expr_t *mat_syms(sp_ectx_struct *E, const char *name, int rows, int cols)
{
    sp_expr_t *m = xalloc_exprs((size_t)rows * cols);
    char buf[64];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            snprintf(buf, sizeof(buf), "%s[%d,%d]", name, i, j);
            m[(size_t)i * cols + j] = sp_expr_sym(E, buf);
        }
    return m;
}

static sp_expr_t sum(sp_ectx_struct *E, const sp_expr_t *v, size_t n)
{
    return sp_expr_nary(E, SP_OP_ADD, v, (uint32_t)n);
}

/* sum_{k0 <= k < k1} X[i,k] * W[k,j] with X of K columns and W of N columns. */
static sp_expr_t partial(sp_ectx_struct *E, const sp_expr_t *X, const sp_expr_t *W, int i, int j,
                         int k0, int k1, int K, int N)
{
    sp_expr_t *t = xalloc_exprs((size_t)(k1 - k0));
    for (int k = k0; k < k1; k++)
        t[k - k0] = sp_expr_mul(E, X[(size_t)i * K + k], W[(size_t)k * N + j]);
    sp_expr_t s = sum(E, t, (size_t)(k1 - k0));
    free(t);
    return s;
}

typedef enum {
    V_OK = 0,
    V_ANYSHIFT,  /* equal: a common shift that is not the max */
    V_MISSING,   /* one shard's contribution missing */
    V_TWICE,     /* one shard counted twice */
    V_HALF,      /* reduced sum divided by 2 (averaged instead of summed) */
    V_NUMONLY,   /* softmax: numerator shifted, denominator not */
    V_OWNMAX,    /* cross-entropy: each shard shifted by its own max */
    V_LOCALMEAN, /* rmsnorm: mean over the shard's width, not the full width */
    V_NOREDUCE,  /* rmsnorm: each shard normalised by its own sum of squares */
    V__COUNT
} variant_t;

static const char *const variant_names[V__COUNT] = {
    "ok",          "any-shift",      "missing-shard", "shard-twice",
    "halved",      "numerator-only", "own-shard-max", "local-mean",
    "no-allreduce"};

/* Sum over shards of the per-shard values part[s], with the variant's reduction bug. */
static sp_expr_t reduce(sp_ectx_struct *E, const sp_expr_t *part, int T, variant_t v)
{
    sp_expr_t buf[64];
    int n = 0;
    for (int s = 0; s < T; s++)
        if (!(v == V_MISSING && s == T - 1))
            buf[n++] = part[s];
    if (v == V_TWICE)
        buf[n++] = part[0];
    sp_expr_t r = sum(E, buf, (size_t)n);
    if (v == V_HALF)
        r = sp_expr_div(E, r, sp_expr_const_si(E, 2, 1));
    return r;
}

/* Row-parallel matmul: Y = sum_s X[:, K_s] @ W[K_s, :] against X @ W. dims M, K, N. */
static void build_matmul(sp_ectx_struct *E, const int *d, int T, variant_t v, pairs_t *p)
{
    int M = d[0], K = d[1], N = d[2], ks = K / T;
    sp_expr_t *X = mat_syms(E, "X", M, K), *W = mat_syms(E, "W", K, N);
    sp_expr_t part[64];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            for (int s = 0; s < T; s++)
                part[s] = partial(E, X, W, i, j, s * ks, (s + 1) * ks, K, N);
            pairs_push(p, reduce(E, part, T, v), partial(E, X, W, i, j, 0, K, K, N));
        }
    free(X);
    free(W);
}

/*
 * Megatron MLP: W1 column-parallel (shard s holds H[:, F_s] = X @ W1[:, F_s]), W2 row-parallel
 * (shard s computes H[:, F_s] @ W2[F_s, :]), partial products summed (all-reduce), against
 * (X @ W1) @ W2.  dims M, K, F, N.
 */
static void build_mlp(sp_ectx_struct *E, const int *d, int T, variant_t v, pairs_t *p)
{
    int M = d[0], K = d[1], F = d[2], N = d[3], fs = F / T;
    sp_expr_t *X = mat_syms(E, "X", M, K), *W1 = mat_syms(E, "W1", K, F),
              *W2 = mat_syms(E, "W2", F, N);
    sp_expr_t *H = xalloc_exprs((size_t)M * F);
    for (int i = 0; i < M; i++)
        for (int f = 0; f < F; f++)
            H[(size_t)i * F + f] = partial(E, X, W1, i, f, 0, K, K, F);
    sp_expr_t part[64];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            for (int s = 0; s < T; s++)
                part[s] = partial(E, H, W2, i, j, s * fs, (s + 1) * fs, F, N);
            pairs_push(p, reduce(E, part, T, v), partial(E, H, W2, i, j, 0, F, F, N));
        }
    free(X);
    free(W1);
    free(W2);
    free(H);
}

static sp_expr_t *vec_syms(sp_ectx_struct *E, const char *name, int row, int n)
{
    sp_expr_t *x = xalloc_exprs((size_t)n);
    char buf[64];
    for (int j = 0; j < n; j++) {
        snprintf(buf, sizeof(buf), "%s[%d,%d]", name, row, j);
        x[j] = sp_expr_sym(E, buf);
    }
    return x;
}

/* Softmax max-shift over one row of n: exp(x_i - m) / sum_j exp(x_j - m) against plain. */
static void build_softmax(sp_ectx_struct *E, const int *d, int T, variant_t v, pairs_t *p)
{
    int n = d[0];
    sp_expr_t *x = vec_syms(E, "x", 0, n);
    sp_expr_t m = v == V_ANYSHIFT ? sp_expr_mul(E, x[0], x[n - 1])
                                  : sp_expr_nary(E, SP_OP_MAX, x, (uint32_t)n);
    sp_expr_t *es = xalloc_exprs((size_t)n), *ep = xalloc_exprs((size_t)n);
    for (int j = 0; j < n; j++) {
        es[j] = sp_expr_unary(E, SP_OP_EXP, sp_expr_sub(E, x[j], m));
        ep[j] = sp_expr_unary(E, SP_OP_EXP, x[j]);
    }
    sp_expr_t zs = sum(E, es, (size_t)(v == V_MISSING ? n - 1 : n)), zp = sum(E, ep, (size_t)n);
    for (int i = 0; i < n; i++) {
        sp_expr_t lhs = sp_expr_div(E, es[i], v == V_NUMONLY ? zp : zs);
        pairs_push(p, lhs, sp_expr_div(E, ep[i], zp));
    }
    free(x);
    free(es);
    free(ep);
}

/*
 * Vocab-parallel cross-entropy for B rows over a vocabulary of V split in T shards: global max
 * m = max of the shard maxima, global sum = sum of the shard sums of exp(x - m), loss =
 * log(sum) + m - x[target]; against the logical log(sum_j exp(x_j)) - x[target].
 */
static void build_xent(sp_ectx_struct *E, const int *d, int T, variant_t v, pairs_t *p)
{
    int B = d[0], V = d[1], vs = V / T;
    for (int r = 0; r < B; r++) {
        sp_expr_t *x = vec_syms(E, "logit", r, V);
        int target = (r * 7 + 3) % V;
        sp_expr_t mloc[64], sloc[64];
        for (int s = 0; s < T; s++)
            mloc[s] = sp_expr_nary(E, SP_OP_MAX, x + s * vs, (uint32_t)vs);
        sp_expr_t m = v == V_ANYSHIFT ? mloc[0] : sp_expr_nary(E, SP_OP_MAX, mloc, (uint32_t)T);
        sp_expr_t *t = xalloc_exprs((size_t)vs);
        for (int s = 0; s < T; s++) {
            sp_expr_t shift = v == V_OWNMAX ? mloc[s] : m;
            for (int j = 0; j < vs; j++)
                t[j] = sp_expr_unary(E, SP_OP_EXP, sp_expr_sub(E, x[s * vs + j], shift));
            sloc[s] = sum(E, t, (size_t)vs);
        }
        free(t);
        sp_expr_t total = reduce(E, sloc, T, v == V_MISSING ? V_MISSING : V_OK);
        sp_expr_t lhs =
            sp_expr_sub(E, sp_expr_add(E, sp_expr_unary(E, SP_OP_LOG, total), m), x[target]);
        sp_expr_t *e = xalloc_exprs((size_t)V);
        for (int j = 0; j < V; j++)
            e[j] = sp_expr_unary(E, SP_OP_EXP, x[j]);
        sp_expr_t rhs =
            sp_expr_sub(E, sp_expr_unary(E, SP_OP_LOG, sum(E, e, (size_t)V)), x[target]);
        free(e);
        pairs_push(p, lhs, rhs);
        free(x);
    }
}

/*
 * Sharded RMSNorm over B rows of width H split in T shards: each shard's sum of squares,
 * all-reduced, then y_j = x_j * rsqrt(ss / H + eps) * g_j; against the logical norm.
 */
static void build_rmsnorm(sp_ectx_struct *E, const int *d, int T, variant_t v, pairs_t *p)
{
    int B = d[0], H = d[1], hs = H / T;
    sp_expr_t eps = sp_expr_const_si(E, 1, 100000);
    sp_expr_t *g = vec_syms(E, "g", 0, H);
    for (int r = 0; r < B; r++) {
        sp_expr_t *x = vec_syms(E, "x", r, H);
        sp_expr_t *sq = xalloc_exprs((size_t)H);
        for (int j = 0; j < H; j++)
            sq[j] = sp_expr_pow(E, x[j], 2);
        sp_expr_t sloc[64], rloc[64];
        for (int s = 0; s < T; s++)
            sloc[s] = sum(E, sq + s * hs, (size_t)hs);
        sp_expr_t ss = sum(E, sloc, (size_t)T);
        sp_expr_t width = sp_expr_const_si(E, v == V_LOCALMEAN ? hs : H, 1);
        for (int s = 0; s < T; s++) {
            sp_expr_t sums = v == V_NOREDUCE ? sloc[s] : ss;
            rloc[s] =
                sp_expr_unary(E, SP_OP_RSQRT, sp_expr_add(E, sp_expr_div(E, sums, width), eps));
        }
        sp_expr_t mean = sp_expr_mul(E, sum(E, sq, (size_t)H), sp_expr_const_si(E, 1, (ulong)H));
        sp_expr_t rp = sp_expr_unary(E, SP_OP_RSQRT, sp_expr_add(E, mean, eps));
        for (int j = 0; j < H; j++) {
            sp_expr_t lhs = sp_expr_mul(E, sp_expr_mul(E, x[j], rloc[j / hs]), g[j]);
            sp_expr_t rhs = sp_expr_mul(E, x[j], sp_expr_mul(E, rp, g[j]));
            pairs_push(p, lhs, rhs);
        }
        free(sq);
        free(x);
    }
    free(g);
}

typedef void (*builder_t)(sp_ectx_struct *E, const int *d, int T, variant_t v, pairs_t *p);

#define MAX_SIZES 6
typedef struct {
    const char *name;
    const char *dims_label; /* what the size numbers are */
    builder_t build;
    int ndims;
    int nsizes;
    int sizes[MAX_SIZES][4];
    int tp[MAX_SIZES];
    variant_t variants[5];
    int nvariants;
} family_t;

static const family_t families[] = {
    {"matmul-rowpar",
     "MxKxN",
     build_matmul,
     3,
     5,
     {{2, 4, 2}, {4, 8, 4}, {8, 16, 8}, {16, 32, 16}, {32, 64, 32}},
     {4, 4, 4, 4, 4},
     {V_OK, V_MISSING, V_TWICE, V_HALF},
     4},
    {"mlp-tp",
     "MxKxFxN",
     build_mlp,
     4,
     5,
     {{2, 4, 4, 2}, {4, 8, 8, 4}, {8, 16, 16, 8}, {16, 32, 32, 16}, {32, 64, 64, 32}},
     {4, 4, 4, 4, 4},
     {V_OK, V_MISSING, V_TWICE, V_HALF},
     4},
    {"softmax-shift",
     "n",
     build_softmax,
     1,
     3,
     {{4}, {16}, {64}},
     {1, 1, 1},
     {V_OK, V_ANYSHIFT, V_NUMONLY, V_MISSING},
     4},
    {"xent-vocab",
     "BxV",
     build_xent,
     2,
     3,
     {{1, 8}, {4, 32}, {8, 128}},
     {2, 4, 8},
     {V_OK, V_ANYSHIFT, V_OWNMAX, V_MISSING},
     4},
    {"rmsnorm-tp",
     "BxH",
     build_rmsnorm,
     2,
     3,
     {{1, 8}, {4, 32}, {8, 128}},
     {2, 4, 8},
     {V_OK, V_LOCALMEAN, V_NOREDUCE},
     3},
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static int variant_equal(variant_t v)
{
    return v == V_OK || v == V_ANYSHIFT;
}

static void size_label(char *buf, size_t len, const family_t *f, int si)
{
    size_t k = 0;
    for (int j = 0; j < f->ndims; j++)
        k += (size_t)snprintf(buf + k, len - k, "%s%d", j ? "x" : "", f->sizes[si][j]);
    if (f->tp[si] > 1)
        snprintf(buf + k, len - k, " tp%d", f->tp[si]);
}

/* ---- Z3 through the C API ----------------------------------------------------------------- */

static void z3_error_handler(Z3_context c, Z3_error_code e)
{
    /* errors are read back with Z3_get_error_code; nothing to do here */
    (void)c;
    (void)e;
}

static Z3_ast z3_num(Z3_context c, Z3_sort R, const fmpq *q)
{
    char *s = fmpq_get_str(NULL, 10, q);
    Z3_ast a = Z3_mk_numeral(c, s, R);
    flint_free(s);
    return a;
}

static Z3_ast z3_pick(Z3_context c, int max, Z3_ast x, Z3_ast y)
{
    Z3_ast cond = max ? Z3_mk_ge(c, x, y) : Z3_mk_le(c, x, y);
    return Z3_mk_ite(c, cond, x, y);
}

/* x^k, k >= 1, by the multiplications sp_smt2_query writes. */
static Z3_ast z3_pow_pos(Z3_context c, Z3_ast x, uint64_t k)
{
    if (k == 1)
        return x;
    Z3_ast f[64];
    unsigned n = 0;
    if (k <= 8) {
        for (uint64_t j = 0; j < k; j++)
            f[n++] = x;
        return Z3_mk_mul(c, n, f);
    }
    Z3_ast sq = x;
    for (unsigned j = 0; (k >> j) != 0; j++) {
        if (j > 0) {
            Z3_ast two[2] = {sq, sq};
            sq = Z3_mk_mul(c, 2, two);
        }
        if ((k >> j) & 1)
            f[n++] = sq;
    }
    return n == 1 ? f[0] : Z3_mk_mul(c, n, f);
}

/*
 * The query as one Z3 formula (satisfiable iff some element pair differs where defined).
 * Walks the cone in ascending id order.  *any_uf is set when a function symbol was used.
 */
static Z3_ast z3_query(Z3_context c, const sp_ectx_struct *E, const sp_expr_t *a,
                       const sp_expr_t *b, size_t n, int *any_uf)
{
    Z3_sort R = Z3_mk_real_sort(c);
    Z3_ast zero = Z3_mk_real(c, 0, 1), one = Z3_mk_real(c, 1, 1);
    Z3_func_decl uf[SP_OP__COUNT] = {0};
    sp_expr_t *roots = xalloc_exprs(2 * n);
    for (size_t i = 0; i < n; i++) {
        roots[2 * i] = a[i];
        roots[2 * i + 1] = b[i];
    }
    uint32_t *cone = NULL;
    size_t nc = sp_expr_cone(E, roots, 2 * n, &cone);
    free(roots);
    Z3_ast *t = calloc(nc ? nc : 1, sizeof(Z3_ast));
    Z3_ast *def = calloc(nc ? nc : 1, sizeof(Z3_ast)); /* NULL = always defined */
    Z3_ast *args = NULL, *dv = NULL;
    size_t args_alloc = 0;
    *any_uf = 0;
    for (size_t i = 0; i < nc; i++) {
        sp_expr_t e = cone[i];
        const sp_node_t *nd = sp_expr_node(E, e);
        sp_op_t op = (sp_op_t)nd->op;
        uint32_t na = nd->nargs;
        if (args_alloc < (size_t)na + 2) {
            args_alloc = (size_t)na + 2;
            args = realloc(args, args_alloc * sizeof(Z3_ast));
            dv = realloc(dv, args_alloc * sizeof(Z3_ast));
        }
        /* arguments' terms; definedness = all arguments defined and this node's own guard */
        unsigned nd_def = 0;
        for (uint32_t k = 0; k < na; k++) {
            size_t ak = sp_bsearch_u32(cone, nc, sp_expr_arg(E, e, k));
            args[k] = t[ak];
            if (def[ak] != NULL)
                dv[nd_def++] = def[ak];
        }
        Z3_ast g = NULL;
        switch (op) {
        case SP_OP_SYM:
            t[i] = Z3_mk_const(c, Z3_mk_string_symbol(c, sp_expr_sym_name(E, e)), R);
            break;
        case SP_OP_CONST:
            t[i] = z3_num(c, R, sp_expr_const(E, e));
            break;
        case SP_OP_ADD:
            t[i] = na == 1 ? args[0] : Z3_mk_add(c, na, args);
            break;
        case SP_OP_MUL:
            t[i] = na == 1 ? args[0] : Z3_mk_mul(c, na, args);
            break;
        case SP_OP_NEG:
            t[i] = Z3_mk_unary_minus(c, args[0]);
            break;
        case SP_OP_SUB:
            t[i] = Z3_mk_sub(c, 2, args);
            break;
        case SP_OP_DIV:
            t[i] = Z3_mk_div(c, args[0], args[1]);
            g = Z3_mk_not(c, Z3_mk_eq(c, args[1], zero));
            break;
        case SP_OP_POW: {
            int64_t k = nd->param;
            uint64_t mag = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
            Z3_ast pw = k == 0 ? one : z3_pow_pos(c, args[0], mag);
            t[i] = k < 0 ? Z3_mk_div(c, one, pw) : pw;
            if (k < 0)
                g = Z3_mk_not(c, Z3_mk_eq(c, args[0], zero));
            break;
        }
        case SP_OP_EXP:
        case SP_OP_LOG:
        case SP_OP_SQRT:
        case SP_OP_RSQRT:
        case SP_OP_TANH:
        case SP_OP_SIGMOID:
        case SP_OP_SILU:
        case SP_OP_GELU:
        case SP_OP_ERF: {
            if (uf[op] == NULL) {
                char name[32];
                snprintf(name, sizeof(name), "sp_%s", sp_op_name(op));
                uf[op] = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, name), 1, &R, R);
            }
            *any_uf = 1;
            t[i] = Z3_mk_app(c, uf[op], 1, args);
            if (op == SP_OP_LOG || op == SP_OP_RSQRT)
                g = Z3_mk_gt(c, args[0], zero);
            else if (op == SP_OP_SQRT)
                g = Z3_mk_ge(c, args[0], zero);
            break;
        }
        case SP_OP_MAX:
        case SP_OP_MIN: {
            Z3_ast acc = args[0];
            for (uint32_t k = 1; k < na; k++)
                acc = z3_pick(c, op == SP_OP_MAX, acc, args[k]);
            t[i] = acc;
            break;
        }
        case SP_OP_RELU:
            t[i] = Z3_mk_ite(c, Z3_mk_gt(c, args[0], zero), args[0], zero);
            break;
        case SP_OP_ABS:
            t[i] = Z3_mk_ite(c, Z3_mk_ge(c, args[0], zero), args[0], Z3_mk_unary_minus(c, args[0]));
            break;
        case SP_OP_CLAMP:
            t[i] = z3_pick(c, 0, z3_pick(c, 1, args[0], args[1]), args[2]);
            break;
        case SP_OP_CMP: {
            Z3_ast r;
            switch ((sp_cmp_t)nd->param) {
            case SP_CMP_LT:
                r = Z3_mk_lt(c, args[0], args[1]);
                break;
            case SP_CMP_LE:
                r = Z3_mk_le(c, args[0], args[1]);
                break;
            case SP_CMP_GT:
                r = Z3_mk_gt(c, args[0], args[1]);
                break;
            case SP_CMP_GE:
                r = Z3_mk_ge(c, args[0], args[1]);
                break;
            case SP_CMP_EQ:
                r = Z3_mk_eq(c, args[0], args[1]);
                break;
            default:
                r = Z3_mk_not(c, Z3_mk_eq(c, args[0], args[1]));
                break;
            }
            t[i] = Z3_mk_ite(c, r, one, zero);
            break;
        }
        case SP_OP_WHERE:
            t[i] = Z3_mk_ite(c, Z3_mk_eq(c, args[0], zero), args[2], args[1]);
            break;
        default:
            t[i] = zero;
            break;
        }
        if (g != NULL)
            dv[nd_def++] = g;
        def[i] = nd_def == 0 ? NULL : (nd_def == 1 ? dv[0] : Z3_mk_and(c, nd_def, dv));
    }
    Z3_ast *disj = calloc(n ? n : 1, sizeof(Z3_ast));
    unsigned nd = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] == b[i])
            continue;
        size_t ia = sp_bsearch_u32(cone, nc, a[i]), ib = sp_bsearch_u32(cone, nc, b[i]);
        Z3_ast parts[3];
        unsigned np = 0;
        if (def[ia] != NULL)
            parts[np++] = def[ia];
        if (def[ib] != NULL)
            parts[np++] = def[ib];
        Z3_ast pair[2] = {t[ia], t[ib]};
        parts[np++] = Z3_mk_distinct(c, 2, pair);
        disj[nd++] = np == 1 ? parts[0] : Z3_mk_and(c, np, parts);
    }
    Z3_ast q = nd == 0 ? Z3_mk_false(c) : (nd == 1 ? disj[0] : Z3_mk_or(c, nd, disj));
    free(disj);
    free(args);
    free(dv);
    free(t);
    free(def);
    flint_free(cone);
    return q;
}

/* Translate and check in this process; no time limit here (the caller kills us). */
static void z3lib_solve(const sp_ectx_struct *E, const pairs_t *p, cell_t *cell)
{
    Z3_config cfg = Z3_mk_config();
    Z3_context c = Z3_mk_context(cfg);
    Z3_del_config(cfg);
    Z3_set_error_handler(c, z3_error_handler);
    double t0 = now_ms(), c0 = cpu_ms();
    int any_uf = 0;
    Z3_ast q = z3_query(c, E, p->a, p->b, p->n, &any_uf);
    Z3_solver s = Z3_mk_solver_for_logic(c, Z3_mk_string_symbol(c, any_uf ? "QF_UFNRA" : "QF_NRA"));
    Z3_solver_inc_ref(c, s);
    Z3_solver_assert(c, s, q);
    Z3_lbool r = Z3_solver_check(c, s);
    cell->ms = cpu_ms() - c0;
    cell->wall_ms = now_ms() - t0;
    if (Z3_get_error_code(c) != Z3_OK) {
        cell->ans = ANS_ERROR;
        snprintf(cell->note, sizeof(cell->note), "%s", Z3_get_error_msg(c, Z3_get_error_code(c)));
    } else if (r == Z3_L_FALSE) {
        cell->ans = ANS_EQ;
    } else if (r == Z3_L_TRUE) {
        cell->ans = any_uf ? ANS_DIFF_UF : ANS_DIFF;
    } else {
        cell->ans = ANS_UNKNOWN;
        snprintf(cell->note, sizeof(cell->note), "%s", Z3_solver_get_reason_unknown(c, s));
    }
    /* no clean-up: the process ends right after reporting */
}

/*
 * Z3 through the C API, in a forked copy of this process that the CPU limit kills: libz3
 * 4.8.12's own timeouts can deadlock (the scoped_timer thread pool, Z3Prover/z3 #5371, #5990),
 * so none is set.  The time is measured inside the child, from the translation of the DAG to the
 * end of check-sat; the fork is not counted.
 */
static void run_z3lib(const opts_t *o, const sp_ectx_struct *E, const pairs_t *p, cell_t *cell)
{
    int fds[2];
    if (pipe(fds) != 0) {
        cell->ans = ANS_ERROR;
        snprintf(cell->note, sizeof(cell->note), "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        cell->ans = ANS_ERROR;
        snprintf(cell->note, sizeof(cell->note), "fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        set_cpu_limit(o->timeout_s);
        cell_t c;
        memset(&c, 0, sizeof(c));
        z3lib_solve(E, p, &c);
        ssize_t w = write(fds[1], &c, sizeof(c));
        _exit(w == (ssize_t)sizeof(c) ? 0 : 1);
    }
    close(fds[1]);
    cell_t got;
    size_t have = 0;
    int killed = 0;
    while (have < sizeof(got)) {
        double left = t0 + wall_backstop_ms(o->timeout_s) - now_ms();
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, (int)fmin(left, 1000.0) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t k = read(fds[0], (char *)&got + have, sizeof(got) - have);
        if (k <= 0)
            break;
        have += (size_t)k;
    }
    close(fds[0]);
    int st = 0;
    if (have == sizeof(got))
        kill(pid, SIGKILL); /* the answer is in; skip libz3's clean-up */
    waitpid(pid, &st, 0);
    if (have == sizeof(got)) {
        *cell = got;
    } else if (killed || killed_by_cpu_limit(st)) {
        cell->ans = ANS_TIMEOUT;
        cell->ms = o->timeout_s * 1000;
        cell->wall_ms = now_ms() - t0;
        if (killed)
            snprintf(cell->note, sizeof(cell->note), "wall-clock backstop");
    } else {
        cell->ans = ANS_ERROR;
        cell->ms = cell->wall_ms = now_ms() - t0;
        if (WIFSIGNALED(st))
            snprintf(cell->note, sizeof(cell->note), "killed by signal %d", WTERMSIG(st));
        else
            snprintf(cell->note, sizeof(cell->note), "exit status %d", WEXITSTATUS(st));
    }
}

/* ---- solvers as processes ----------------------------------------------------------------- */

/*
 * Run argv with stdout+stderr captured (first len-1 bytes into out), under a CPU limit of
 * cpu_s seconds, killed after limit_ms of wall clock.  Returns the wall time in ms and sets *cpu
 * to the child's CPU time; *killed is set when the wall-clock backstop struck.
 */
static double run_process(char *const argv[], double cpu_s, double limit_ms, char *out, size_t len,
                          int *killed, int *status, double *cpu)
{
    int fds[2];
    *killed = 0;
    *status = -1;
    out[0] = 0;
    if (pipe(fds) != 0)
        return -1;
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        set_cpu_limit(cpu_s);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    for (;;) {
        double left = t0 + limit_ms - now_ms();
        if (left <= 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            *killed = 1;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, (int)fmin(left, 1000.0) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        char buf[4096];
        ssize_t k = read(fds[0], buf, sizeof(buf));
        if (k <= 0)
            break;
        if (got + 1 < len) {
            size_t take = (size_t)k < len - 1 - got ? (size_t)k : len - 1 - got;
            memcpy(out + got, buf, take);
            got += take;
            out[got] = 0;
        }
    }
    close(fds[0]);
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    wait4(pid, &st, 0, &ru);
    *status = st;
    *cpu = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
           ru.ru_stime.tv_usec / 1e3;
    return now_ms() - t0;
}

static void classify_output(const opts_t *o, const char *out, double ms, int killed, int any_uf,
                            cell_t *cell)
{
    cell->ms = ms;
    char first[96];
    size_t k = 0;
    while (out[k] == ' ' || out[k] == '\n' || out[k] == '\r')
        k++;
    size_t l = strcspn(out + k, "\r\n");
    if (l >= sizeof(first))
        l = sizeof(first) - 1;
    memcpy(first, out + k, l);
    first[l] = 0;
    if (strcmp(first, "unsat") == 0)
        cell->ans = ANS_EQ;
    else if (strcmp(first, "sat") == 0)
        cell->ans = any_uf ? ANS_DIFF_UF : ANS_DIFF;
    else if (killed || strcmp(first, "timeout") == 0 || strstr(out, "timeout") != NULL ||
             ms >= o->timeout_s * 1000 * 0.98)
        cell->ans = ANS_TIMEOUT;
    else if (strcmp(first, "unknown") == 0)
        cell->ans = ANS_UNKNOWN;
    else {
        cell->ans = ANS_ERROR;
        snprintf(cell->note, sizeof(cell->note), "%s", first);
    }
}

static void run_solver_process(const opts_t *o, int col, const char *path, int any_uf, cell_t *cell)
{
    char a1[64], a2[64];
    char *argv[8];
    int k = 0;
    /* the solvers' own (wall-clock) limits are only the backstop; RLIMIT_CPU is the limit */
    double backstop = wall_backstop_ms(o->timeout_s);
    if (col == COL_Z3PROC) {
        snprintf(a1, sizeof(a1), "-T:%d", (int)ceil(backstop / 1000));
        argv[k++] = (char *)o->z3_bin;
        argv[k++] = a1;
    } else {
        snprintf(a2, sizeof(a2), "--tlimit=%lld", (long long)backstop);
        argv[k++] = (char *)o->cvc5_bin;
        argv[k++] = (char *)"--lang";
        argv[k++] = (char *)"smt2";
        argv[k++] = a2;
    }
    argv[k++] = (char *)path;
    argv[k] = NULL;
    char out[4096];
    int killed, status;
    double cpu = 0;
    double ms =
        run_process(argv, o->timeout_s, backstop + 5000, out, sizeof(out), &killed, &status, &cpu);
    if (ms < 0) {
        cell->ans = ANS_ERROR;
        snprintf(cell->note, sizeof(cell->note), "cannot run %s", argv[0]);
        return;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out[0] == 0) {
        cell->ans = ANS_ERROR;
        snprintf(cell->note, sizeof(cell->note), "%s not found", argv[0]);
        return;
    }
    classify_output(o, out, cpu, killed || killed_by_cpu_limit(status), any_uf, cell);
    cell->wall_ms = ms;
}

/* ---- the engine --------------------------------------------------------------------------- */

static void run_engine(const opts_t *o, sp_engine_t *S, const pairs_t *p, cell_t *cell)
{
    sp_result_t res;
    sp_result_init(&res);
    double t0 = now_ms(), c0 = cpu_ms();
    sp_answer_t r = sp_equiv_vec(S, p->a, p->b, p->n, &res);
    cell->ms = cpu_ms() - c0;
    cell->wall_ms = now_ms() - t0;
    if (r == SP_EQUAL) {
        cell->ans = ANS_EQ;
    } else if (r == SP_DIFFERENT) {
        cell->ans = ANS_DIFF;
        snprintf(cell->note, sizeof(cell->note), "element %lld", (long long)res.index);
    } else {
        cell->ans = res.why == SP_WHY_LIMIT_TIME ? ANS_TIMEOUT : ANS_UNKNOWN;
        snprintf(cell->note, sizeof(cell->note), "%s", sp_why_name(res.why));
    }
    sp_result_clear(&res);
}

/* ---- table -------------------------------------------------------------------------------- */

typedef struct {
    char query[64];
    char size[48];
    size_t n;
    size_t nodes;
    int expect_equal;
    int any_uf;
    cell_t cell[NCOLS];
} row_t;

static const char *ans_short(ans_t a)
{
    switch (a) {
    case ANS_EQ:
        return "EQ";
    case ANS_DIFF:
        return "DIFF";
    case ANS_DIFF_UF:
        return "sat\\*";
    case ANS_UNKNOWN:
        return "unknown";
    case ANS_TIMEOUT:
        return "T/O";
    case ANS_ERROR:
        return "error";
    case ANS_SKIP:
        return "skip";
    default:
        return "—";
    }
}

static void fmt_ms(char *buf, size_t len, double ms)
{
    if (ms < 1)
        snprintf(buf, len, "%.3f ms", ms);
    else if (ms < 10)
        snprintf(buf, len, "%.2f ms", ms);
    else if (ms < 1000)
        snprintf(buf, len, "%.0f ms", ms);
    else
        snprintf(buf, len, "%.1f s", ms / 1000);
}

/* Answer matches the expectation as a proof or a certified counterexample. */
static int cell_right(const row_t *r, const cell_t *c)
{
    return r->expect_equal ? c->ans == ANS_EQ : c->ans == ANS_DIFF;
}

/* Answer contradicts the expectation (a wrong verdict, or a spurious UF model). */
static int cell_wrong(const row_t *r, const cell_t *c)
{
    return r->expect_equal ? (c->ans == ANS_DIFF || c->ans == ANS_DIFF_UF) : c->ans == ANS_EQ;
}

static int cell_gave_up(const cell_t *c)
{
    return c->ans == ANS_TIMEOUT || c->ans == ANS_SKIP || c->ans == ANS_UNKNOWN;
}

static void fmt_cell(char *buf, size_t len, const opts_t *o, const row_t *r, const cell_t *c)
{
    char t[32];
    if (c->ans == ANS_NOTRUN) {
        snprintf(buf, len, "—");
        return;
    }
    if (c->ans == ANS_SKIP) {
        snprintf(buf, len, "skip (T/O smaller)");
        return;
    }
    if (c->ans == ANS_TIMEOUT) {
        snprintf(buf, len, "T/O > %.0f s", o->timeout_s);
        return;
    }
    fmt_ms(t, sizeof(t), c->ms);
    snprintf(buf, len, "%s%s %s", ans_short(c->ans), cell_wrong(r, c) ? " ✗" : "", t);
}

/* Ratio of column col's time to the engine's; lower bound when col gave up. */
static int ratio(const opts_t *o, const row_t *r, int col, double *x, int *lower)
{
    const cell_t *sp = &r->cell[COL_SP], *c = &r->cell[col];
    if (!cell_right(r, sp) || c->ans == ANS_NOTRUN || c->ans == ANS_ERROR)
        return 0;
    double base = sp->ms > 0.001 ? sp->ms : 0.001;
    *lower = 0;
    if (c->ans == ANS_TIMEOUT || c->ans == ANS_SKIP) {
        *x = o->timeout_s * 1000 / base;
        *lower = 1;
    } else {
        *x = c->ms / base;
    }
    return 1;
}

static void fmt_ratio(char *buf, size_t len, const opts_t *o, const row_t *r, int col)
{
    double x;
    int lower;
    if (!ratio(o, r, col, &x, &lower)) {
        snprintf(buf, len, "—");
        return;
    }
    if (x >= 10)
        snprintf(buf, len, "%s%.0f×", lower ? "> " : "", x);
    else
        snprintf(buf, len, "%s%.1f×", lower ? "> " : "", x);
}

static int cmp_double(const void *p, const void *q)
{
    double x = *(const double *)p, y = *(const double *)q;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_summary(const opts_t *o, const row_t *rows, size_t nr)
{
    printf("\n### Summary\n\n");
    size_t neq = 0;
    for (size_t i = 0; i < nr; i++)
        neq += rows[i].expect_equal;
    printf("%zu queries (%zu equal, %zu buggy).  Times are CPU time (user + system); the limit is "
           "%.0f s of CPU per query and solver (the engine's own limit: %.0f s of wall clock).\n\n",
           nr, neq, nr - neq, o->timeout_s, o->timeout_s);
    printf("| solver | proved EQ | certified DIFF | sat with UF (\\*) | wrong | unknown | T/O or "
           "skip | "
           "error | median time |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int col = 0; col < NCOLS; col++) {
        size_t eq = 0, diff = 0, uf = 0, wrong = 0, unk = 0, to = 0, err = 0, ran = 0;
        double *t = calloc(nr ? nr : 1, sizeof(double));
        size_t nt = 0;
        for (size_t i = 0; i < nr; i++) {
            const row_t *r = &rows[i];
            const cell_t *c = &r->cell[col];
            if (c->ans == ANS_NOTRUN)
                continue;
            ran++;
            if (cell_wrong(r, c))
                wrong++;
            else if (c->ans == ANS_EQ)
                eq++;
            else if (c->ans == ANS_DIFF)
                diff++;
            else if (c->ans == ANS_DIFF_UF)
                uf++;
            if (c->ans == ANS_UNKNOWN)
                unk++;
            if (c->ans == ANS_TIMEOUT || c->ans == ANS_SKIP)
                to++;
            if (c->ans == ANS_ERROR)
                err++;
            t[nt++] = (c->ans == ANS_TIMEOUT || c->ans == ANS_SKIP) ? o->timeout_s * 1000 : c->ms;
        }
        if (ran == 0) {
            free(t);
            continue;
        }
        char mt[32];
        fmt_ms(mt, sizeof(mt), median(t, nt));
        printf("| %s | %zu | %zu | %zu | %zu | %zu | %zu | %zu | %s%s |\n", col_names[col], eq,
               diff, uf, wrong, unk, to, err, mt, to ? " (T/O counted at the limit)" : "");
        free(t);
    }
    printf("\n");
    for (int col = COL_Z3LIB; col < NCOLS; col++) {
        double *v = calloc(nr ? nr : 1, sizeof(double)), *w = calloc(nr ? nr : 1, sizeof(double));
        size_t nv = 0, nw = 0, nlow = 0;
        for (size_t i = 0; i < nr; i++) {
            double x;
            int lower;
            if (!ratio(o, &rows[i], col, &x, &lower))
                continue;
            v[nv++] = x;
            nlow += (size_t)lower;
            if (cell_right(&rows[i], &rows[i].cell[col]))
                w[nw++] = x;
        }
        if (nv > 0) {
            printf("- %s / shardproof, median time ratio: %s%.0f× over the %zu queries the engine "
                   "answered right, whatever the solver answered%s",
                   col_names[col], nlow ? "≥ " : "", median(v, nv), nv,
                   nlow ? " (time-outs counted at the limit: a lower bound)" : "");
            if (nw > 0)
                printf("; %.0f× over the %zu queries both answered right", median(w, nw), nw);
            printf("\n");
        }
        free(v);
        free(w);
    }
    /* every query a solver answered right, the engine answers right */
    size_t missed = 0;
    for (size_t i = 0; i < nr; i++) {
        int some = 0;
        for (int col = COL_Z3LIB; col < NCOLS; col++)
            some |= cell_right(&rows[i], &rows[i].cell[col]);
        if (some && rows[i].cell[COL_SP].ans != ANS_NOTRUN &&
            !cell_right(&rows[i], &rows[i].cell[COL_SP])) {
            printf("- the engine did not answer %s %s, which a solver answered\n", rows[i].query,
                   rows[i].size);
            missed++;
        }
    }
    if (missed == 0 && nr > 0 && rows[0].cell[COL_SP].ans != ANS_NOTRUN)
        printf("- every query Z3 or cvc5 answered, the engine answered\n");
    /* buggy queries on which a solver gave up */
    double worst = 0;
    size_t nb = 0;
    for (size_t i = 0; i < nr; i++) {
        const row_t *r = &rows[i];
        if (r->expect_equal)
            continue;
        int gave = 0;
        for (int col = COL_Z3LIB; col < NCOLS; col++)
            gave |= cell_gave_up(&r->cell[col]);
        if (gave && cell_right(r, &r->cell[COL_SP])) {
            nb++;
            worst = fmax(worst, r->cell[COL_SP].ms);
        }
    }
    if (nb > 0) {
        char w[32];
        fmt_ms(w, sizeof(w), worst);
        printf("- %zu buggy queries on which Z3 or cvc5 gave up: the engine certified each, "
               "slowest in %s\n",
               nb, w);
    }
    printf("\n\\* sat with uninterpreted functions: the solver found an interpretation of "
           "exp/log/rsqrt under which the sides differ; not a counterexample for the real "
           "functions (on an equal query it is spurious, marked ✗).\n");
}

/* ---- driver ------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_engine [--quick] [--timeout SEC] [--only SUBSTR] [--max-size I]\n"
            "                    [--no-engine] [--no-z3lib] [--no-z3] [--no-cvc5] [--no-skip]\n"
            "                    [--keep-smt2 DIR] [--z3 PATH] [--cvc5 PATH] [--seed N] [--list]\n"
            "  --quick        the two smallest sizes of every query, time limit 10 s\n"
            "  --timeout SEC  per query and solver (default 60)\n"
            "  --only SUBSTR  queries whose family/variant contains SUBSTR\n"
            "  --max-size I   sizes up to index I (0 = smallest) of every family\n"
            "  --no-skip      also run larger sizes after a solver timed out on a smaller one\n"
            "  --keep-smt2 D  keep the SMT-LIB2 scripts in directory D\n");
}

static int tool_exists(const char *bin)
{
    if (strchr(bin, '/'))
        return access(bin, X_OK) == 0;
    const char *path = getenv("PATH");
    if (path == NULL)
        return 0;
    char buf[4096];
    while (*path) {
        size_t l = strcspn(path, ":");
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, path, bin);
        if (access(buf, X_OK) == 0)
            return 1;
        path += l;
        if (*path == ':')
            path++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {60, 0, 1, 1, 1, 1, 1, NULL, NULL, "z3", "cvc5", 1, -1};
    int timeout_given = 0, list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0)
            o.quick = 1;
        else if (strcmp(a, "--timeout") == 0 && next) {
            o.timeout_s = atof(next);
            timeout_given = 1;
            i++;
        } else if (strcmp(a, "--only") == 0 && next) {
            o.only = next;
            i++;
        } else if (strcmp(a, "--max-size") == 0 && next) {
            o.max_size = atoi(next);
            i++;
        } else if (strcmp(a, "--keep-smt2") == 0 && next) {
            o.keep_dir = next;
            i++;
        } else if (strcmp(a, "--z3") == 0 && next) {
            o.z3_bin = next;
            i++;
        } else if (strcmp(a, "--cvc5") == 0 && next) {
            o.cvc5_bin = next;
            i++;
        } else if (strcmp(a, "--seed") == 0 && next) {
            o.seed = strtoull(next, NULL, 10);
            i++;
        } else if (strcmp(a, "--no-engine") == 0)
            o.run_engine = 0;
        else if (strcmp(a, "--no-z3lib") == 0)
            o.run_z3lib = 0;
        else if (strcmp(a, "--no-z3") == 0)
            o.run_z3proc = 0;
        else if (strcmp(a, "--no-cvc5") == 0)
            o.run_cvc5 = 0;
        else if (strcmp(a, "--no-skip") == 0)
            o.skip_larger = 0;
        else if (strcmp(a, "--list") == 0)
            list = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_engine: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o.quick && !timeout_given)
        o.timeout_s = 10;
    if (o.quick && o.max_size < 0)
        o.max_size = 1;
    if (!(o.timeout_s > 0)) {
        fprintf(stderr, "bench_engine: --timeout must be positive\n");
        return 2;
    }
    if (o.run_z3proc && !tool_exists(o.z3_bin)) {
        fprintf(stderr, "bench_engine: %s not found: z3 (process) column left out\n", o.z3_bin);
        o.run_z3proc = 0;
    }
    if (o.run_cvc5 && !tool_exists(o.cvc5_bin)) {
        fprintf(stderr, "bench_engine: %s not found: cvc5 column left out\n", o.cvc5_bin);
        o.run_cvc5 = 0;
    }
    int run[NCOLS] = {o.run_engine, o.run_z3lib, o.run_z3proc, o.run_cvc5};

    char tmpl[512];
    const char *td = getenv("TMPDIR");
    snprintf(tmpl, sizeof(tmpl), "%s/sp_bench_XXXXXX", td && *td ? td : "/tmp");
    const char *dir = o.keep_dir;
    if (dir == NULL && !list) {
        dir = mkdtemp(tmpl);
        if (dir == NULL) {
            perror("bench_engine: mkdtemp");
            return 2;
        }
    } else if (dir != NULL) {
        mkdir(dir, 0777);
    }

    row_t *rows = NULL;
    size_t nr = 0, ralloc = 0;
    /* per family x variant x column: timed out at a smaller size */
    int gave_up[NFAMILIES][V__COUNT][NCOLS];
    memset(gave_up, 0, sizeof(gave_up));

    for (size_t fi = 0; fi < NFAMILIES; fi++) {
        const family_t *f = &families[fi];
        for (int si = 0; si < f->nsizes; si++) {
            if (o.max_size >= 0 && si > o.max_size)
                continue;
            for (int vi = 0; vi < f->nvariants; vi++) {
                variant_t v = f->variants[vi];
                char qname[64], size[48];
                snprintf(qname, sizeof(qname), "%s/%s", f->name, variant_names[v]);
                if (o.only && strstr(qname, o.only) == NULL)
                    continue;
                size_label(size, sizeof(size), f, si);
                if (list) {
                    printf("%-32s %-16s %s\n", qname, size,
                           variant_equal(v) ? "EQUAL" : "DIFFERENT");
                    continue;
                }
                if (nr == ralloc) {
                    ralloc = ralloc ? 2 * ralloc : 64;
                    rows = realloc(rows, ralloc * sizeof(row_t));
                }
                row_t *r = &rows[nr++];
                memset(r, 0, sizeof(*r));
                snprintf(r->query, sizeof(r->query), "%s", qname);
                snprintf(r->size, sizeof(r->size), "%s", size);
                r->expect_equal = variant_equal(v);

                sp_limits_t lim;
                sp_limits_default(&lim);
                lim.max_ms = (slong)(o.timeout_s * 1000);
                sp_engine_t *S = sp_engine_new(&lim, o.seed);
                if (S == NULL) {
                    fprintf(stderr, "bench_engine: sp_engine_new failed\n");
                    return 2;
                }
                sp_ectx_struct *E = sp_engine_exprs(S);
                pairs_t p = {0};
                f->build(E, f->sizes[si], f->tp[si], v, &p);
                if (E->oom) {
                    fprintf(stderr, "bench_engine: %s %s: expression store full\n", qname, size);
                    return 2;
                }
                r->n = p.n;
                r->nodes = sp_expr_count(E);
                fprintf(stderr, "[%zu] %s %s: %zu elements, %zu nodes\n", nr, qname, size, p.n,
                        r->nodes);

                char *script = NULL;
                char path[1024] = "";
                if (run[COL_Z3PROC] || run[COL_CVC5] || o.keep_dir) {
                    script = sp_smt2_query(E, p.a, p.b, (slong)p.n);
                    if (script == NULL) {
                        fprintf(stderr, "bench_engine: sp_smt2_query failed\n");
                        return 2;
                    }
                    r->any_uf = strstr(script, "(set-logic QF_UFNRA)") != NULL;
                    snprintf(path, sizeof(path), "%s/%s_%s_%s.smt2", dir, f->name, variant_names[v],
                             size);
                    for (char *c = path + strlen(dir) + 1; *c; c++)
                        if (*c == ' ')
                            *c = '_';
                    FILE *fp = fopen(path, "w");
                    if (fp == NULL || fputs(script, fp) < 0 || fclose(fp) != 0) {
                        fprintf(stderr, "bench_engine: cannot write %s\n", path);
                        return 2;
                    }
                }
                for (int col = 0; col < NCOLS; col++) {
                    cell_t *c = &r->cell[col];
                    if (!run[col])
                        continue;
                    if (o.skip_larger && gave_up[fi][v][col]) {
                        c->ans = ANS_SKIP;
                        continue;
                    }
                    if (col == COL_SP)
                        run_engine(&o, S, &p, c);
                    else if (col == COL_Z3LIB)
                        run_z3lib(&o, E, &p, c);
                    else
                        run_solver_process(&o, col, path, r->any_uf, c);
                    if (c->ans == ANS_TIMEOUT)
                        gave_up[fi][v][col] = 1;
                    char cs[96];
                    fmt_cell(cs, sizeof(cs), &o, r, c);
                    fprintf(stderr, "    %-13s %s (wall %.0f ms)%s%s\n", col_names[col], cs,
                            c->wall_ms, c->note[0] ? "  " : "", c->note);
                }
                if (script && !o.keep_dir)
                    unlink(path);
                flint_free(script);
                free(p.a);
                free(p.b);
                sp_engine_free(S);
            }
        }
    }
    if (list)
        return 0;
    if (!o.keep_dir)
        rmdir(dir);

    printf(
        "| query | size | elements | nodes | expected | shardproof | z3 (C API) | z3 (process) | "
        "cvc5 | z3 API / sp | z3 proc / sp | cvc5 / sp |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < nr; i++) {
        const row_t *r = &rows[i];
        char c[NCOLS][96], q[3][32];
        for (int col = 0; col < NCOLS; col++)
            fmt_cell(c[col], sizeof(c[col]), &o, r, &r->cell[col]);
        for (int col = 1; col < NCOLS; col++)
            fmt_ratio(q[col - 1], sizeof(q[col - 1]), &o, r, col);
        printf("| %s | %s | %zu | %zu | %s | %s | %s | %s | %s | %s | %s | %s |\n", r->query,
               r->size, r->n, r->nodes, r->expect_equal ? "EQ" : "DIFF", c[0], c[1], c[2], c[3],
               q[0], q[1], q[2]);
    }
    print_summary(&o, rows, nr);
    free(rows);
    return 0;
}
