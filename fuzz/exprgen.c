/* exprgen.c: random expressions, equality-preserving rewrites and perturbations for the fuzzers. */
#include "exprgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arb.h>

#include "eval.h"

/* ---- small builders ------------------------------------------------------------------------ */

#define OP(e) sp_expr_op(g->E, (e))
#define NA(e) sp_expr_nargs(g->E, (e))
#define ARG(e, i) sp_expr_arg(g->E, (e), (i))

static sp_expr_t K(xg_t *g, slong n, ulong d) { return sp_expr_const_si(g->E, n, d); }
static sp_expr_t neg(xg_t *g, sp_expr_t a) { return sp_expr_unary(g->E, SP_OP_NEG, a); }
static sp_expr_t un(xg_t *g, sp_op_t op, sp_expr_t a) { return sp_expr_unary(g->E, op, a); }
static sp_expr_t add(xg_t *g, sp_expr_t a, sp_expr_t b) { return sp_expr_add(g->E, a, b); }
static sp_expr_t add3(xg_t *g, sp_expr_t a, sp_expr_t b, sp_expr_t c)
{
    sp_expr_t v[3] = {a, b, c};
    return sp_expr_nary(g->E, SP_OP_ADD, v, 3);
}
static sp_expr_t mul(xg_t *g, sp_expr_t a, sp_expr_t b) { return sp_expr_mul(g->E, a, b); }
static sp_expr_t mul3(xg_t *g, sp_expr_t a, sp_expr_t b, sp_expr_t c)
{
    sp_expr_t v[3] = {a, b, c};
    return sp_expr_nary(g->E, SP_OP_MUL, v, 3);
}
static sp_expr_t sub(xg_t *g, sp_expr_t a, sp_expr_t b) { return sp_expr_sub(g->E, a, b); }
static sp_expr_t dv(xg_t *g, sp_expr_t a, sp_expr_t b) { return sp_expr_div(g->E, a, b); }
static sp_expr_t pw(xg_t *g, sp_expr_t a, slong k) { return sp_expr_pow(g->E, a, k); }
static sp_expr_t mx(xg_t *g, sp_expr_t a, sp_expr_t b) { return sp_expr_max2(g->E, a, b); }
static sp_expr_t mn(xg_t *g, sp_expr_t a, sp_expr_t b) { return sp_expr_min2(g->E, a, b); }
static sp_expr_t cmp(xg_t *g, sp_cmp_t c, sp_expr_t a, sp_expr_t b)
{
    return sp_expr_cmp(g->E, c, a, b);
}
static sp_expr_t wh(xg_t *g, sp_expr_t c, sp_expr_t a, sp_expr_t b)
{
    return sp_expr_where(g->E, c, a, b);
}

static int is_const(xg_t *g, sp_expr_t e) { return OP(e) == SP_OP_CONST; }

static int is_const_zero(xg_t *g, sp_expr_t e)
{
    return is_const(g, e) && fmpq_is_zero(sp_expr_const(g->E, e));
}

sp_expr_t xg_rebuild(sp_ectx_struct *E, sp_op_t op, int64_t param, const sp_expr_t *args,
                     uint32_t n)
{
    switch (op) {
    case SP_OP_ADD: case SP_OP_MUL: case SP_OP_MAX: case SP_OP_MIN:
        return sp_expr_nary(E, op, args, n);
    case SP_OP_POW:
        return n == 1 ? sp_expr_pow(E, args[0], (slong)param) : SP_EXPR_NONE;
    case SP_OP_CMP:
        return n == 2 ? sp_expr_cmp(E, (sp_cmp_t)param, args[0], args[1]) : SP_EXPR_NONE;
    case SP_OP_WHERE:
        return n == 3 ? sp_expr_where(E, args[0], args[1], args[2]) : SP_EXPR_NONE;
    case SP_OP_CLAMP:
        return n == 3 ? sp_expr_clamp(E, args[0], args[1], args[2]) : SP_EXPR_NONE;
    case SP_OP_SUB: case SP_OP_DIV:
        return n == 2 ? sp_expr_binary(E, op, args[0], args[1]) : SP_EXPR_NONE;
    case SP_OP_SYM: case SP_OP_CONST:
        return SP_EXPR_NONE;
    default:
        return n == 1 ? sp_expr_unary(E, op, args[0]) : SP_EXPR_NONE;
    }
}

/* ---- generation ------------------------------------------------------------------------------ */

void xg_init(xg_t *g, sp_ectx_struct *E, uint64_t seed)
{
    memset(g, 0, sizeof(*g));
    g->E = E;
    g->rng.s = seed;
    g->nvars = 3;
    g->fam = XG_ALL;
    g->max_cone = 400;
    g->last_rule = -1;
    for (int i = 0; i < XG_MAXSYMS; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        g->sym[i] = sp_expr_sym(E, name);
    }
}

sp_expr_t xg_const(xg_t *g, int nonzero)
{
    static const slong nums[] = {0, 1, -1, 2, -2, 3, -3, 1, 1, 5, -4, 7};
    static const ulong dens[] = {1, 1, 1, 1, 2, 3, 2, 4};
    slong n = nums[xg_below(&g->rng, sizeof nums / sizeof nums[0])];
    ulong d = dens[xg_below(&g->rng, sizeof dens / sizeof dens[0])];
    if (nonzero && n == 0)
        n = 1 + (slong)xg_below(&g->rng, 3);
    return K(g, n, d);
}

static sp_expr_t leaf(xg_t *g)
{
    if (xg_chance(&g->rng, 3, 4))
        return g->sym[xg_below(&g->rng, (uint32_t)g->nvars)];
    return xg_const(g, 0);
}

/* A term positive wherever defined, for the arguments of log, sqrt and rsqrt. */
static sp_expr_t positive(xg_t *g, sp_expr_t a)
{
    unsigned f = g->fam;
    for (int t = 0; t < 8; t++) {
        switch (xg_below(&g->rng, 6)) {
        case 0: if (f & XG_TRANSC) return un(g, SP_OP_EXP, a); break;
        case 1: if (f & XG_POW) return add(g, pw(g, a, 2), K(g, 1, (ulong)(1 + xg_below(&g->rng, 3)))); break;
        case 2: if (f & XG_TRANSC) return un(g, SP_OP_SIGMOID, a); break;
        case 3: if (f & XG_PIECE) return add(g, un(g, SP_OP_RELU, a), K(g, 1, 2)); break;
        case 4: if (f & XG_PIECE) return add(g, un(g, SP_OP_ABS, a), K(g, 1, 1)); break;
        default: return a; /* not positive everywhere: partial expressions are fine too */
        }
    }
    return a;
}

enum {
    G_ADD, G_SUB, G_NEG, G_MUL, G_DIV, G_POW, G_EXP, G_LOG, G_TANH, G_SIGMOID, G_SILU, G_GELU,
    G_ERF, G_SQRT, G_RSQRT, G_MAX, G_MIN, G_RELU, G_ABS, G_CLAMP, G_WHERE, G_CMPMUL, G__N
};
static const unsigned gen_fam[G__N] = {
    [G_ADD] = XG_ARITH, [G_SUB] = XG_ARITH, [G_NEG] = XG_ARITH, [G_MUL] = XG_ARITH,
    [G_DIV] = XG_DIV, [G_POW] = XG_POW, [G_EXP] = XG_TRANSC, [G_LOG] = XG_TRANSC,
    [G_TANH] = XG_TRANSC, [G_SIGMOID] = XG_TRANSC, [G_SILU] = XG_TRANSC, [G_GELU] = XG_TRANSC,
    [G_ERF] = XG_TRANSC, [G_SQRT] = XG_ROOT, [G_RSQRT] = XG_ROOT, [G_MAX] = XG_PIECE,
    [G_MIN] = XG_PIECE, [G_RELU] = XG_PIECE, [G_ABS] = XG_PIECE, [G_CLAMP] = XG_PIECE,
    [G_WHERE] = XG_COND, [G_CMPMUL] = XG_COND,
};

sp_expr_t xg_gen(xg_t *g, int depth)
{
    if (depth <= 0 || xg_chance(&g->rng, 1, 6))
        return leaf(g);
    int k;
    for (int t = 0;; t++) {
        k = (int)xg_below(&g->rng, G__N);
        /* arithmetic twice as often as any other family */
        if ((gen_fam[k] & g->fam) && (gen_fam[k] == XG_ARITH || xg_chance(&g->rng, 1, 2)))
            break;
        if (t > 64)
            return leaf(g);
    }
    int d = depth - 1;
    switch (k) {
    case G_ADD:
        if (xg_chance(&g->rng, 1, 3))
            return add3(g, xg_gen(g, d), xg_gen(g, d), xg_gen(g, d));
        return add(g, xg_gen(g, d), xg_gen(g, d));
    case G_SUB: return sub(g, xg_gen(g, d), xg_gen(g, d));
    case G_NEG: return neg(g, xg_gen(g, d));
    case G_MUL:
        if (xg_chance(&g->rng, 1, 3))
            return mul(g, xg_const(g, 1), xg_gen(g, d));
        return mul(g, xg_gen(g, d), xg_gen(g, d));
    case G_DIV: {
        sp_expr_t den = xg_gen(g, d);
        if (xg_chance(&g->rng, 1, 3))
            den = xg_const(g, 1);
        return dv(g, xg_gen(g, d), den);
    }
    case G_POW: {
        static const slong ks[] = {2, 2, 3, 0, -1, -2};
        slong e = ks[xg_below(&g->rng, (g->fam & XG_DIV) ? 6 : 4)];
        return pw(g, xg_gen(g, d), e);
    }
    case G_EXP: return un(g, SP_OP_EXP, xg_gen(g, d));
    case G_LOG: return un(g, SP_OP_LOG, positive(g, xg_gen(g, d > 0 ? d - 1 : 0)));
    case G_TANH: return un(g, SP_OP_TANH, xg_gen(g, d));
    case G_SIGMOID: return un(g, SP_OP_SIGMOID, xg_gen(g, d));
    case G_SILU: return un(g, SP_OP_SILU, xg_gen(g, d));
    case G_GELU: return un(g, SP_OP_GELU, xg_gen(g, d));
    case G_ERF: return un(g, SP_OP_ERF, xg_gen(g, d));
    case G_SQRT: return un(g, SP_OP_SQRT, positive(g, xg_gen(g, d > 0 ? d - 1 : 0)));
    case G_RSQRT: return un(g, SP_OP_RSQRT, positive(g, xg_gen(g, d > 0 ? d - 1 : 0)));
    case G_MAX: case G_MIN: {
        sp_expr_t v[3];
        uint32_t n = 2 + xg_below(&g->rng, 2);
        for (uint32_t i = 0; i < n; i++)
            v[i] = xg_gen(g, d);
        return sp_expr_nary(g->E, k == G_MAX ? SP_OP_MAX : SP_OP_MIN, v, n);
    }
    case G_RELU: return un(g, SP_OP_RELU, xg_gen(g, d));
    case G_ABS: return un(g, SP_OP_ABS, xg_gen(g, d));
    case G_CLAMP: {
        sp_expr_t lo = K(g, -(slong)xg_below(&g->rng, 3), 1), hi = K(g, 1 + (slong)xg_below(&g->rng, 2), 1);
        if (xg_chance(&g->rng, 1, 3))
            lo = xg_gen(g, d);
        if (xg_chance(&g->rng, 1, 4))
            hi = xg_gen(g, d);
        return sp_expr_clamp(g->E, xg_gen(g, d), lo, hi);
    }
    case G_WHERE: {
        sp_expr_t c = cmp(g, (sp_cmp_t)xg_below(&g->rng, 6), xg_gen(g, d ? d - 1 : 0),
                          xg_chance(&g->rng, 1, 2) ? K(g, 0, 1) : xg_gen(g, d ? d - 1 : 0));
        return wh(g, c, xg_gen(g, d), xg_gen(g, d));
    }
    default: { /* G_CMPMUL: an indicator as a value */
        sp_expr_t c = cmp(g, (sp_cmp_t)xg_below(&g->rng, 6), xg_gen(g, d ? d - 1 : 0), xg_gen(g, 0));
        return mul(g, c, xg_gen(g, d));
    }
    }
}

sp_expr_t xg_small(xg_t *g) { return xg_gen(g, (int)xg_below(&g->rng, 2)); }

/* ---- cone helpers ---------------------------------------------------------------------------- */

uint32_t xg_cone_size(const sp_ectx_struct *E, sp_expr_t e)
{
    uint32_t *cone = NULL;
    size_t n = sp_expr_cone(E, &e, 1, &cone);
    flint_free(cone);
    return (uint32_t)n;
}

static size_t bsearch_id(const uint32_t *a, size_t n, uint32_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* root with every occurrence of target replaced by r (ancestors rebuilt bottom-up). */
static sp_expr_t replace(sp_ectx_struct *E, sp_expr_t root, sp_expr_t target, sp_expr_t r)
{
    uint32_t *cone = NULL;
    size_t n = sp_expr_cone(E, &root, 1, &cone);
    if (cone == NULL || n == 0) {
        flint_free(cone);
        return SP_EXPR_NONE;
    }
    sp_expr_t *map = malloc(n * sizeof(sp_expr_t));
    sp_expr_t args[64];
    sp_expr_t *big = NULL;
    for (size_t i = 0; i < n; i++) {
        sp_expr_t id = cone[i];
        uint32_t na = sp_expr_nargs(E, id);
        if (id == target) {
            map[i] = r;
            continue;
        }
        if (na == 0) {
            map[i] = id;
            continue;
        }
        sp_expr_t *v = na <= 64 ? args : (big = realloc(big, na * sizeof(sp_expr_t)));
        int changed = 0;
        for (uint32_t k = 0; k < na; k++) {
            sp_expr_t a = sp_expr_arg(E, id, k);
            v[k] = map[bsearch_id(cone, n, a)];
            changed |= v[k] != a;
        }
        map[i] = changed ? xg_rebuild(E, sp_expr_op(E, id), sp_expr_node(E, id)->param, v, na) : id;
    }
    sp_expr_t out = map[n - 1];
    free(map);
    free(big);
    flint_free(cone);
    return out;
}

static sp_expr_t random_node(xg_t *g, sp_expr_t root)
{
    uint32_t *cone = NULL;
    size_t n = sp_expr_cone(g->E, &root, 1, &cone);
    sp_expr_t t = n ? cone[xg_below(&g->rng, (uint32_t)n)] : root;
    /* prefer inner nodes: a second draw when the first is a leaf */
    if (n && sp_expr_nargs(g->E, t) == 0)
        t = cone[xg_below(&g->rng, (uint32_t)n)];
    flint_free(cone);
    return t;
}

/* ---- equality-preserving rules --------------------------------------------------------------- */

#define RULES(X)                                                              \
    X(R_ZERO_SQUARE, "e + ((a+b)^2 - a^2 - 2ab - b^2)", XG_ARITH | XG_POW)    \
    X(R_DIVMUL_C, "(e/c)*c", XG_DIV)                                          \
    X(R_MULDIV_C, "(e*c)/c", XG_DIV)                                          \
    X(R_LOG_EXP, "log(exp(e))", XG_TRANSC)                                    \
    X(R_RELU_ID, "relu(e) - relu(-e)", XG_PIECE)                              \
    X(R_MAXMIN_ID, "max(e,m) + min(e,m) - m", XG_PIECE)                       \
    X(R_WHERE_ID, "where(gt(e,m),e,m) + min(e,m) - m", XG_PIECE | XG_COND)    \
    X(R_SIG_SUM, "e*(sigmoid(m) + sigmoid(-m))", XG_TRANSC)                   \
    X(R_EXP_INV, "e*exp(m)*exp(-m)", XG_TRANSC)                               \
    X(R_NEG_NEG, "-(-e)", XG_ARITH)                                           \
    X(R_ODD, "e + tanh(m) + tanh(-m) (erf, gelu)", XG_TRANSC)                 \
    X(R_SUB_SELF, "e + (m - m)", XG_ARITH)                                    \
    X(R_RAT_ONE, "e*(1+m^2)/(1+m^2)", XG_DIV | XG_POW)                        \
    X(R_MAX_DOM, "max(e, e-c), min(e, e+c)", XG_PIECE)                        \
    X(R_WHERE_SAME, "where(cmp(m,n), e, e)", XG_COND)                         \
    X(R_IND_SUM, "gt(m,n)*e + le(m,n)*e", XG_COND)                            \
    X(R_SIGN_ABS, "abs(e)*(gt(e,0) - lt(e,0))", XG_COND | XG_PIECE)           \
    X(R_CLAMP_WIDE, "clamp(e, min(e,m), max(e,m))", XG_PIECE)                 \
    X(R_SQRT_SQ, "sqrt(e)^2 [hard]", XG_ROOT | XG_HARD)                       \
    X(R_EXP_LOG, "exp(log(e))", XG_TRANSC)                                    \
    X(R_MUL_DIV_M, "(e*m)/m", XG_DIV)                                         \
    X(R_ADD_ASSOC, "a+b+c -> a+(b+c)", XG_ARITH)                              \
    X(R_ADD_FLAT, "a+(b+c) -> a+b+c", XG_ARITH)                               \
    X(R_ADD_SUBNEG, "a+b -> a-(-b)", XG_ARITH)                                \
    X(R_ADD_MAXMIN, "a+b -> max(a,b)+min(a,b)", XG_PIECE)                     \
    X(R_MUL_ASSOC, "abc -> a(bc)", XG_ARITH)                                  \
    X(R_MUL_FLAT, "a(bc) -> abc", XG_ARITH)                                   \
    X(R_DISTRIB, "a(b+c) -> ab+ac", XG_ARITH)                                 \
    X(R_MUL_DIVINV, "ab -> a/(1/b)", XG_DIV)                                  \
    X(R_MUL_EXPS, "exp(a)exp(b) -> exp(a+b)", XG_TRANSC)                      \
    X(R_SUB_ADDNEG, "a-b -> a+(-b)", XG_ARITH)                                \
    X(R_SUB_SWAP, "a-b -> -(b-a)", XG_ARITH)                                  \
    X(R_SUB_M1, "a-b -> a+(-1)b", XG_ARITH)                                   \
    X(R_NEG_M1, "-a -> (-1)a, 0-a", XG_ARITH)                                 \
    X(R_DIV_POW, "a/b -> a*b^-1", XG_DIV)                                     \
    X(R_DIV_SCALE, "a/b -> (am)/(bm)", XG_DIV)                                \
    X(R_DIV_SPLIT, "(a+b)/c -> a/c+b/c", XG_DIV)                              \
    X(R_DIV_DIV, "(a/b)/c -> a/(bc)", XG_DIV)                                 \
    X(R_POW_SQ, "(a+b)^2 -> a^2+2ab+b^2", XG_POW)                             \
    X(R_POW_SPLIT, "a^k -> a*a^(k-1), a^-k -> 1/a^k", XG_POW)                 \
    X(R_POW_POW, "a^(jk) -> (a^j)^k", XG_POW)                                 \
    X(R_POW_EXPLOG, "a^k -> exp(k*log(a))", XG_TRANSC | XG_POW)               \
    X(R_EXP_SUM, "exp(a+b) -> exp(a)exp(b)", XG_TRANSC)                       \
    X(R_EXP_SUB, "exp(a-b) -> exp(a)/exp(b)", XG_TRANSC)                      \
    X(R_EXP_NEG, "exp(-a) -> 1/exp(a)", XG_TRANSC)                            \
    X(R_EXP_K, "exp(k a) -> exp(a)^k", XG_TRANSC)                             \
    X(R_EXP_HALF, "exp(a) -> exp(a/2)^2 [hard]", XG_TRANSC | XG_HARD)         \
    X(R_LOG_OF_EXP, "log(exp(a)) -> a", XG_TRANSC)                            \
    X(R_LOG_MUL, "log(ab) -> log a + log b", XG_TRANSC)                       \
    X(R_LOG_DIV, "log(a/b) -> log a - log b", XG_TRANSC)                      \
    X(R_LOG_POW, "log(a^k) -> k log a", XG_TRANSC)                            \
    X(R_SQRT_RSQRT, "sqrt(a) -> 1/rsqrt(a)", XG_ROOT)                         \
    X(R_RSQRT_SQRT, "rsqrt(a) -> 1/sqrt(a)", XG_ROOT)                         \
    X(R_TANH_DEF, "tanh definitions", XG_TRANSC)                              \
    X(R_SIGMOID_DEF, "sigmoid definitions", XG_TRANSC)                        \
    X(R_SILU_DEF, "silu definitions", XG_TRANSC)                              \
    X(R_GELU_SYM, "gelu(a) -> gelu(-a) + a", XG_TRANSC)                       \
    X(R_ERF_ODD, "erf(a) -> -erf(-a)", XG_TRANSC)                             \
    X(R_MAX_NEST, "max(a,b,c) -> max(a,max(b,c))", XG_PIECE)                  \
    X(R_MAX_FLAT, "max(a,max(b,c)) -> max(a,b,c)", XG_PIECE)                  \
    X(R_MAX_WHERE, "max(a,b) -> where(gt(a,b),a,b)", XG_PIECE | XG_COND)      \
    X(R_MAX_NEGMIN, "max(a,b) -> -min(-a,-b)", XG_PIECE)                      \
    X(R_MAX_RELU, "max(a,b) -> a + relu(b-a)", XG_PIECE)                      \
    X(R_MAX_ABS, "max(a,b) -> (a+b+abs(a-b))/2", XG_PIECE)                    \
    X(R_MAX_OVERLAP, "max(a,b,c) -> max(max(a,b),max(b,c))", XG_PIECE)        \
    X(R_MAX_SHIFT, "max(a,b) -> max(a+m,b+m)-m", XG_PIECE)                    \
    X(R_MAX_ZERO, "max(a,0) -> relu(a), max(a,-a) -> abs(a)", XG_PIECE)       \
    X(R_RELU_DEF, "relu definitions", XG_PIECE)                               \
    X(R_ABS_DEF, "abs definitions", XG_PIECE)                                 \
    X(R_CLAMP_DEF, "clamp(x,l,h) -> min(max(x,l),h)", XG_PIECE)               \
    X(R_CMP_FLIP, "cmp(a,b) rewritten", XG_COND)                              \
    X(R_WHERE_NOT, "where(c,a,b) -> where(not c,b,a)", XG_COND)               \
    X(R_WHERE_MASK, "where(c,a,b) -> c*a + (1-c)*b", XG_COND)                 \
    X(R_WHERE_NE, "where(c,a,b) -> where(ne(c,0),a,b)", XG_COND)              \
    X(R_WHERE_SHIFT, "where(c,a,b) -> where(c,a-b,0)+b", XG_COND)

#define X_ENUM(id, name, fam) id,
enum { RULES(X_ENUM) R__COUNT };
#define X_NAME(id, name, fam) name,
static const char *const rule_names[] = {RULES(X_NAME)};
#define X_FAM(id, name, fam) fam,
static const unsigned rule_fam[] = {RULES(X_FAM)};

const char *xg_rule_name(int id) { return id >= 0 && id < R__COUNT ? rule_names[id] : "?"; }

/* The same n-ary op over args except index skip (skip may be n: keep all). */
static sp_expr_t nary_without(xg_t *g, sp_op_t op, sp_expr_t e, uint32_t skip)
{
    sp_expr_t v[64];
    uint32_t n = NA(e), m = 0;
    if (n > 64)
        return SP_EXPR_NONE;
    for (uint32_t i = 0; i < n; i++)
        if (i != skip)
            v[m++] = ARG(e, i);
    return sp_expr_nary(g->E, op, v, m);
}

static sp_cmp_t cmp_not(sp_cmp_t c)
{
    static const sp_cmp_t t[6] = {SP_CMP_GE, SP_CMP_GT, SP_CMP_LE, SP_CMP_LT, SP_CMP_NE, SP_CMP_EQ};
    return t[c];
}

static sp_cmp_t cmp_swap(sp_cmp_t c)
{
    static const sp_cmp_t t[6] = {SP_CMP_GT, SP_CMP_GE, SP_CMP_LT, SP_CMP_LE, SP_CMP_EQ, SP_CMP_NE};
    return t[c];
}

/* Returns the rewritten e, or SP_EXPR_NONE if rule id does not apply to e. */
static sp_expr_t apply_rule(xg_t *g, int id, sp_expr_t e)
{
    sp_op_t op = OP(e);
    uint32_t n = NA(e);
    xg_rng_t *r = &g->rng;
    switch (id) {
    case R_ZERO_SQUARE: {
        sp_expr_t a = xg_small(g), b = xg_small(g);
        sp_expr_t z = sub(g, pw(g, add(g, a, b), 2),
                          add3(g, pw(g, a, 2), mul3(g, K(g, 2, 1), a, b), pw(g, b, 2)));
        return add(g, e, z);
    }
    case R_DIVMUL_C: {
        sp_expr_t c = xg_const(g, 1);
        return mul(g, dv(g, e, c), c);
    }
    case R_MULDIV_C: {
        sp_expr_t c = xg_const(g, 1);
        return dv(g, mul(g, e, c), c);
    }
    case R_LOG_EXP: return un(g, SP_OP_LOG, un(g, SP_OP_EXP, e));
    case R_RELU_ID: return sub(g, un(g, SP_OP_RELU, e), un(g, SP_OP_RELU, neg(g, e)));
    case R_MAXMIN_ID: {
        sp_expr_t m = xg_small(g);
        return sub(g, add(g, mx(g, e, m), mn(g, e, m)), m);
    }
    case R_WHERE_ID: {
        sp_expr_t m = xg_small(g);
        return sub(g, add(g, wh(g, cmp(g, SP_CMP_GT, e, m), e, m), mn(g, e, m)), m);
    }
    case R_SIG_SUM: {
        sp_expr_t m = xg_small(g);
        return mul(g, e, add(g, un(g, SP_OP_SIGMOID, m), un(g, SP_OP_SIGMOID, neg(g, m))));
    }
    case R_EXP_INV: {
        sp_expr_t m = xg_small(g);
        return mul3(g, e, un(g, SP_OP_EXP, m), un(g, SP_OP_EXP, neg(g, m)));
    }
    case R_NEG_NEG: return neg(g, neg(g, e));
    case R_ODD: {
        sp_expr_t m = xg_small(g);
        switch (xg_below(r, 3)) {
        case 0: return add3(g, e, un(g, SP_OP_TANH, m), un(g, SP_OP_TANH, neg(g, m)));
        case 1: return add3(g, e, un(g, SP_OP_ERF, m), un(g, SP_OP_ERF, neg(g, m)));
        default:
            return sub(g, add(g, e, un(g, SP_OP_GELU, m)), add(g, un(g, SP_OP_GELU, neg(g, m)), m));
        }
    }
    case R_SUB_SELF: {
        sp_expr_t m = xg_small(g);
        return add(g, e, sub(g, m, m));
    }
    case R_RAT_ONE: {
        sp_expr_t q = add(g, K(g, 1, 1), pw(g, xg_small(g), 2));
        return dv(g, mul(g, e, q), q);
    }
    case R_MAX_DOM: {
        sp_expr_t c = K(g, 1 + (slong)xg_below(r, 3), 1 + (ulong)xg_below(r, 2));
        return xg_chance(r, 1, 2) ? mx(g, e, sub(g, e, c)) : mn(g, e, add(g, e, c));
    }
    case R_WHERE_SAME: {
        sp_expr_t c = cmp(g, (sp_cmp_t)xg_below(r, 6), xg_small(g), xg_small(g));
        return wh(g, c, e, e);
    }
    case R_IND_SUM: {
        sp_expr_t a = xg_small(g), b = xg_small(g);
        sp_cmp_t c = (sp_cmp_t)xg_below(r, 6);
        return add(g, mul(g, cmp(g, c, a, b), e), mul(g, cmp(g, cmp_not(c), a, b), e));
    }
    case R_SIGN_ABS: {
        sp_expr_t z = K(g, 0, 1);
        return mul(g, un(g, SP_OP_ABS, e), sub(g, cmp(g, SP_CMP_GT, e, z), cmp(g, SP_CMP_LT, e, z)));
    }
    case R_CLAMP_WIDE: {
        sp_expr_t m = xg_small(g);
        return sp_expr_clamp(g->E, e, mn(g, e, m), mx(g, e, m));
    }
    case R_SQRT_SQ: return pw(g, un(g, SP_OP_SQRT, e), 2);
    case R_EXP_LOG: return un(g, SP_OP_EXP, un(g, SP_OP_LOG, e));
    case R_MUL_DIV_M: {
        /* a common factor that may vanish: equal wherever both sides are defined */
        sp_expr_t m = xg_small(g);
        if (is_const_zero(g, m))
            m = sub(g, g->sym[0], K(g, 1, 1));
        return dv(g, mul(g, e, m), m);
    }

    case R_ADD_ASSOC: case R_MUL_ASSOC: {
        sp_op_t want = id == R_ADD_ASSOC ? SP_OP_ADD : SP_OP_MUL;
        if (op != want || n < 3 || n > 64)
            return SP_EXPR_NONE;
        sp_expr_t a[64], b[64];
        uint32_t na = 0, nb = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (xg_chance(r, 1, 2))
                a[na++] = ARG(e, i);
            else
                b[nb++] = ARG(e, i);
        }
        if (na == 0)
            a[na++] = b[--nb];
        if (nb == 0)
            b[nb++] = a[--na];
        sp_expr_t v[2] = {sp_expr_nary(g->E, want, a, na), sp_expr_nary(g->E, want, b, nb)};
        return sp_expr_nary(g->E, want, v, 2);
    }
    case R_ADD_FLAT: case R_MUL_FLAT: case R_MAX_FLAT: {
        sp_op_t want = id == R_ADD_FLAT ? SP_OP_ADD : id == R_MUL_FLAT ? SP_OP_MUL : SP_OP_MAX;
        if (op != want && !(id == R_MAX_FLAT && op == SP_OP_MIN))
            return SP_EXPR_NONE;
        sp_expr_t v[64];
        uint32_t m = 0;
        int any = 0;
        for (uint32_t i = 0; i < n; i++) {
            sp_expr_t a = ARG(e, i);
            if (OP(a) == op && m + NA(a) <= 64) {
                for (uint32_t k = 0; k < NA(a); k++)
                    v[m++] = ARG(a, k);
                any = 1;
            } else if (m < 64) {
                v[m++] = a;
            } else {
                return SP_EXPR_NONE;
            }
        }
        return any ? sp_expr_nary(g->E, op, v, m) : SP_EXPR_NONE;
    }
    case R_ADD_SUBNEG: {
        if (op != SP_OP_ADD)
            return SP_EXPR_NONE;
        uint32_t k = xg_below(r, n);
        return sub(g, nary_without(g, SP_OP_ADD, e, k), neg(g, ARG(e, k)));
    }
    case R_ADD_MAXMIN: {
        if (op != SP_OP_ADD)
            return SP_EXPR_NONE;
        uint32_t k = xg_below(r, n);
        sp_expr_t a = nary_without(g, SP_OP_ADD, e, k), b = ARG(e, k);
        return add(g, mx(g, a, b), mn(g, a, b));
    }
    case R_DISTRIB: {
        if (op != SP_OP_MUL)
            return SP_EXPR_NONE;
        for (uint32_t k = 0; k < n; k++) {
            sp_expr_t s = ARG(e, k);
            if (OP(s) != SP_OP_ADD || NA(s) > 64)
                continue;
            sp_expr_t rest = nary_without(g, SP_OP_MUL, e, k), v[64];
            for (uint32_t i = 0; i < NA(s); i++)
                v[i] = mul(g, rest, ARG(s, i));
            return sp_expr_nary(g->E, SP_OP_ADD, v, NA(s));
        }
        return SP_EXPR_NONE;
    }
    case R_MUL_DIVINV: {
        if (op != SP_OP_MUL)
            return SP_EXPR_NONE;
        uint32_t k = xg_below(r, n);
        return dv(g, nary_without(g, SP_OP_MUL, e, k), dv(g, K(g, 1, 1), ARG(e, k)));
    }
    case R_MUL_EXPS: {
        if (op != SP_OP_MUL || n > 64)
            return SP_EXPR_NONE;
        sp_expr_t v[64], rest[64];
        uint32_t m = 0, nr = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (OP(ARG(e, i)) == SP_OP_EXP)
                v[m++] = ARG(ARG(e, i), 0);
            else
                rest[nr++] = ARG(e, i);
        }
        if (m < 2)
            return SP_EXPR_NONE;
        rest[nr++] = un(g, SP_OP_EXP, sp_expr_nary(g->E, SP_OP_ADD, v, m));
        return sp_expr_nary(g->E, SP_OP_MUL, rest, nr);
    }
    case R_SUB_ADDNEG:
        return op == SP_OP_SUB ? add(g, ARG(e, 0), neg(g, ARG(e, 1))) : SP_EXPR_NONE;
    case R_SUB_SWAP:
        return op == SP_OP_SUB ? neg(g, sub(g, ARG(e, 1), ARG(e, 0))) : SP_EXPR_NONE;
    case R_SUB_M1:
        return op == SP_OP_SUB ? add(g, ARG(e, 0), mul(g, K(g, -1, 1), ARG(e, 1))) : SP_EXPR_NONE;
    case R_NEG_M1:
        if (op != SP_OP_NEG)
            return SP_EXPR_NONE;
        return xg_chance(r, 1, 2) ? mul(g, K(g, -1, 1), ARG(e, 0)) : sub(g, K(g, 0, 1), ARG(e, 0));
    case R_DIV_POW:
        return op == SP_OP_DIV ? mul(g, ARG(e, 0), pw(g, ARG(e, 1), -1)) : SP_EXPR_NONE;
    case R_DIV_SCALE: {
        if (op != SP_OP_DIV)
            return SP_EXPR_NONE;
        sp_expr_t m = xg_small(g);
        if (is_const_zero(g, m) || xg_chance(r, 1, 2))
            m = add(g, K(g, 1, 1), pw(g, m, 2));
        return dv(g, mul(g, ARG(e, 0), m), mul(g, ARG(e, 1), m));
    }
    case R_DIV_SPLIT: {
        if (op != SP_OP_DIV || OP(ARG(e, 0)) != SP_OP_ADD || NA(ARG(e, 0)) > 64)
            return SP_EXPR_NONE;
        sp_expr_t s = ARG(e, 0), v[64];
        for (uint32_t i = 0; i < NA(s); i++)
            v[i] = dv(g, ARG(s, i), ARG(e, 1));
        return sp_expr_nary(g->E, SP_OP_ADD, v, NA(s));
    }
    case R_DIV_DIV:
        if (op != SP_OP_DIV || OP(ARG(e, 0)) != SP_OP_DIV)
            return SP_EXPR_NONE;
        return dv(g, ARG(ARG(e, 0), 0), mul(g, ARG(ARG(e, 0), 1), ARG(e, 1)));
    case R_POW_SQ: {
        if (op != SP_OP_POW || sp_expr_node(g->E, e)->param != 2 || OP(ARG(e, 0)) != SP_OP_ADD)
            return SP_EXPR_NONE;
        sp_expr_t s = ARG(e, 0), a = ARG(s, 0), b = nary_without(g, SP_OP_ADD, s, 0);
        return add3(g, pw(g, a, 2), mul3(g, K(g, 2, 1), a, b), pw(g, b, 2));
    }
    case R_POW_SPLIT: {
        if (op != SP_OP_POW)
            return SP_EXPR_NONE;
        slong k = sp_expr_node(g->E, e)->param;
        sp_expr_t a = ARG(e, 0);
        if (k >= 2)
            return mul(g, a, pw(g, a, k - 1));
        if (k <= -1)
            return dv(g, K(g, 1, 1), pw(g, a, -k));
        if (k == 0)
            return K(g, 1, 1); /* 0^0 = 1 in the evaluators and the engine */
        return SP_EXPR_NONE;
    }
    case R_POW_POW: {
        if (op != SP_OP_POW)
            return SP_EXPR_NONE;
        slong k = sp_expr_node(g->E, e)->param;
        if (k == 0 || k % 2 != 0)
            return SP_EXPR_NONE;
        return pw(g, pw(g, ARG(e, 0), 2), k / 2);
    }
    case R_POW_EXPLOG: {
        if (op != SP_OP_POW)
            return SP_EXPR_NONE;
        slong k = sp_expr_node(g->E, e)->param;
        if (k == 0 || FLINT_ABS(k) > 8)
            return SP_EXPR_NONE;
        return un(g, SP_OP_EXP, mul(g, K(g, k, 1), un(g, SP_OP_LOG, ARG(e, 0))));
    }
    case R_EXP_SUM: {
        if (op != SP_OP_EXP || OP(ARG(e, 0)) != SP_OP_ADD)
            return SP_EXPR_NONE;
        sp_expr_t s = ARG(e, 0);
        uint32_t k = xg_below(r, NA(s));
        return mul(g, un(g, SP_OP_EXP, ARG(s, k)), un(g, SP_OP_EXP, nary_without(g, SP_OP_ADD, s, k)));
    }
    case R_EXP_SUB:
        if (op != SP_OP_EXP || OP(ARG(e, 0)) != SP_OP_SUB)
            return SP_EXPR_NONE;
        return dv(g, un(g, SP_OP_EXP, ARG(ARG(e, 0), 0)), un(g, SP_OP_EXP, ARG(ARG(e, 0), 1)));
    case R_EXP_NEG:
        if (op != SP_OP_EXP || OP(ARG(e, 0)) != SP_OP_NEG)
            return SP_EXPR_NONE;
        if (xg_chance(r, 1, 2))
            return dv(g, K(g, 1, 1), un(g, SP_OP_EXP, ARG(ARG(e, 0), 0)));
        return pw(g, un(g, SP_OP_EXP, ARG(ARG(e, 0), 0)), -1);
    case R_EXP_K: {
        if (op != SP_OP_EXP)
            return SP_EXPR_NONE;
        /* exp(k*b) = exp(b)^k for an integer constant k, else exp(a) = exp(-a)^-1 */
        sp_expr_t a = ARG(e, 0);
        if (OP(a) == SP_OP_MUL && NA(a) == 2 && is_const(g, ARG(a, 0))) {
            const fmpq *c = sp_expr_const(g->E, ARG(a, 0));
            if (fmpz_is_one(fmpq_denref(c)) && fmpz_fits_si(fmpq_numref(c)) &&
                FLINT_ABS(fmpz_get_si(fmpq_numref(c))) <= 8 && !fmpq_is_zero(c))
                return pw(g, un(g, SP_OP_EXP, ARG(a, 1)), fmpz_get_si(fmpq_numref(c)));
        }
        return pw(g, un(g, SP_OP_EXP, neg(g, a)), -1);
    }
    case R_EXP_HALF:
        if (op != SP_OP_EXP)
            return SP_EXPR_NONE;
        return pw(g, un(g, SP_OP_EXP, dv(g, ARG(e, 0), K(g, 2, 1))), 2);
    case R_LOG_OF_EXP:
        if (op != SP_OP_LOG || OP(ARG(e, 0)) != SP_OP_EXP)
            return SP_EXPR_NONE;
        return ARG(ARG(e, 0), 0);
    case R_LOG_MUL: {
        if (op != SP_OP_LOG || OP(ARG(e, 0)) != SP_OP_MUL)
            return SP_EXPR_NONE;
        sp_expr_t s = ARG(e, 0);
        uint32_t k = xg_below(r, NA(s));
        return add(g, un(g, SP_OP_LOG, ARG(s, k)), un(g, SP_OP_LOG, nary_without(g, SP_OP_MUL, s, k)));
    }
    case R_LOG_DIV:
        if (op != SP_OP_LOG || OP(ARG(e, 0)) != SP_OP_DIV)
            return SP_EXPR_NONE;
        return sub(g, un(g, SP_OP_LOG, ARG(ARG(e, 0), 0)), un(g, SP_OP_LOG, ARG(ARG(e, 0), 1)));
    case R_LOG_POW: {
        if (op != SP_OP_LOG || OP(ARG(e, 0)) != SP_OP_POW)
            return SP_EXPR_NONE;
        slong k = sp_expr_node(g->E, ARG(e, 0))->param;
        if (k == 0 || FLINT_ABS(k) > 1000)
            return SP_EXPR_NONE;
        return mul(g, K(g, k, 1), un(g, SP_OP_LOG, ARG(ARG(e, 0), 0)));
    }
    case R_SQRT_RSQRT:
        return op == SP_OP_SQRT ? dv(g, K(g, 1, 1), un(g, SP_OP_RSQRT, ARG(e, 0))) : SP_EXPR_NONE;
    case R_RSQRT_SQRT:
        if (op != SP_OP_RSQRT)
            return SP_EXPR_NONE;
        if (xg_chance(r, 1, 2))
            return dv(g, K(g, 1, 1), un(g, SP_OP_SQRT, ARG(e, 0)));
        return pw(g, un(g, SP_OP_SQRT, ARG(e, 0)), -1);
    case R_TANH_DEF: {
        if (op != SP_OP_TANH)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), one = K(g, 1, 1);
        switch (xg_below(r, 4)) {
        case 0: {
            sp_expr_t t = un(g, SP_OP_EXP, mul(g, K(g, 2, 1), a));
            return dv(g, sub(g, t, one), add(g, t, one));
        }
        case 1: return sub(g, mul(g, K(g, 2, 1), un(g, SP_OP_SIGMOID, mul(g, K(g, 2, 1), a))), one);
        case 2: return neg(g, un(g, SP_OP_TANH, neg(g, a)));
        default: {
            sp_expr_t p = un(g, SP_OP_EXP, a), q = un(g, SP_OP_EXP, neg(g, a));
            return dv(g, sub(g, p, q), add(g, p, q));
        }
        }
    }
    case R_SIGMOID_DEF: {
        if (op != SP_OP_SIGMOID)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), one = K(g, 1, 1);
        switch (xg_below(r, 4)) {
        case 0: return dv(g, one, add(g, one, un(g, SP_OP_EXP, neg(g, a))));
        case 1: return sub(g, one, un(g, SP_OP_SIGMOID, neg(g, a)));
        case 2: {
            sp_expr_t p = un(g, SP_OP_EXP, a);
            return dv(g, p, add(g, one, p));
        }
        default:
            return mul(g, K(g, 1, 2), add(g, one, un(g, SP_OP_TANH, dv(g, a, K(g, 2, 1)))));
        }
    }
    case R_SILU_DEF: {
        if (op != SP_OP_SILU)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0);
        if (xg_chance(r, 1, 2))
            return mul(g, a, un(g, SP_OP_SIGMOID, a));
        return dv(g, a, add(g, K(g, 1, 1), un(g, SP_OP_EXP, neg(g, a))));
    }
    case R_GELU_SYM:
        return op == SP_OP_GELU ? add(g, un(g, SP_OP_GELU, neg(g, ARG(e, 0))), ARG(e, 0)) : SP_EXPR_NONE;
    case R_ERF_ODD:
        return op == SP_OP_ERF ? neg(g, un(g, SP_OP_ERF, neg(g, ARG(e, 0)))) : SP_EXPR_NONE;
    case R_MAX_NEST: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n < 3)
            return SP_EXPR_NONE;
        uint32_t k = xg_below(r, n);
        sp_expr_t v[2] = {ARG(e, k), nary_without(g, op, e, k)};
        return sp_expr_nary(g->E, op, v, 2);
    }
    case R_MAX_WHERE: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n != 2)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), b = ARG(e, 1);
        sp_cmp_t c = op == SP_OP_MAX ? (xg_chance(r, 1, 2) ? SP_CMP_GT : SP_CMP_GE)
                                     : (xg_chance(r, 1, 2) ? SP_CMP_LT : SP_CMP_LE);
        if (xg_chance(r, 1, 2)) {
            sp_expr_t t = a;
            a = b;
            b = t;
        }
        return wh(g, cmp(g, c, a, b), a, b);
    }
    case R_MAX_NEGMIN: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n > 64)
            return SP_EXPR_NONE;
        sp_expr_t v[64];
        for (uint32_t i = 0; i < n; i++)
            v[i] = neg(g, ARG(e, i));
        return neg(g, sp_expr_nary(g->E, op == SP_OP_MAX ? SP_OP_MIN : SP_OP_MAX, v, n));
    }
    case R_MAX_RELU: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n != 2)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), b = ARG(e, 1);
        if (op == SP_OP_MAX)
            return add(g, a, un(g, SP_OP_RELU, sub(g, b, a)));
        return sub(g, a, un(g, SP_OP_RELU, sub(g, a, b)));
    }
    case R_MAX_ABS: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n != 2)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), b = ARG(e, 1), d = un(g, SP_OP_ABS, sub(g, a, b));
        sp_expr_t s = op == SP_OP_MAX ? add3(g, a, b, d) : sub(g, add(g, a, b), d);
        return dv(g, s, K(g, 2, 1));
    }
    case R_MAX_OVERLAP: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n != 3)
            return SP_EXPR_NONE;
        sp_expr_t p = sp_expr_nary(g->E, op, (sp_expr_t[]){ARG(e, 0), ARG(e, 1)}, 2);
        sp_expr_t q = sp_expr_nary(g->E, op, (sp_expr_t[]){ARG(e, 1), ARG(e, 2)}, 2);
        return sp_expr_nary(g->E, op, (sp_expr_t[]){p, q}, 2);
    }
    case R_MAX_SHIFT: {
        if ((op != SP_OP_MAX && op != SP_OP_MIN) || n > 64)
            return SP_EXPR_NONE;
        sp_expr_t m = xg_chance(r, 1, 2) ? xg_const(g, 1) : xg_small(g), v[64];
        for (uint32_t i = 0; i < n; i++)
            v[i] = add(g, ARG(e, i), m);
        return sub(g, sp_expr_nary(g->E, op, v, n), m);
    }
    case R_MAX_ZERO: {
        if (op != SP_OP_MAX || n != 2)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), b = ARG(e, 1);
        if (is_const_zero(g, a))
            return un(g, SP_OP_RELU, b);
        if (is_const_zero(g, b))
            return un(g, SP_OP_RELU, a);
        if (b == neg(g, a))
            return un(g, SP_OP_ABS, a);
        if (a == neg(g, b))
            return un(g, SP_OP_ABS, b);
        return SP_EXPR_NONE;
    }
    case R_RELU_DEF: {
        if (op != SP_OP_RELU)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), z = K(g, 0, 1);
        switch (xg_below(r, 5)) {
        case 0: return mx(g, a, z);
        case 1: return dv(g, add(g, a, un(g, SP_OP_ABS, a)), K(g, 2, 1));
        case 2: return wh(g, cmp(g, SP_CMP_GT, a, z), a, z);
        case 3: return mul(g, a, cmp(g, SP_CMP_GT, a, z));
        default: return mul(g, a, cmp(g, SP_CMP_GE, a, z));
        }
    }
    case R_ABS_DEF: {
        if (op != SP_OP_ABS)
            return SP_EXPR_NONE;
        sp_expr_t a = ARG(e, 0), z = K(g, 0, 1);
        switch (xg_below(r, 5)) {
        case 0: return mx(g, a, neg(g, a));
        case 1: return add(g, un(g, SP_OP_RELU, a), un(g, SP_OP_RELU, neg(g, a)));
        case 2: return wh(g, cmp(g, SP_CMP_GE, a, z), a, neg(g, a));
        case 3: return un(g, SP_OP_ABS, neg(g, a));
        default:
            return mul(g, a, sub(g, cmp(g, SP_CMP_GT, a, z), cmp(g, SP_CMP_LT, a, z)));
        }
    }
    case R_CLAMP_DEF:
        if (op != SP_OP_CLAMP)
            return SP_EXPR_NONE;
        return mn(g, mx(g, ARG(e, 0), ARG(e, 1)), ARG(e, 2));
    case R_CMP_FLIP: {
        if (op != SP_OP_CMP)
            return SP_EXPR_NONE;
        sp_cmp_t c = (sp_cmp_t)sp_expr_node(g->E, e)->param;
        sp_expr_t a = ARG(e, 0), b = ARG(e, 1), z = K(g, 0, 1);
        switch (xg_below(r, 4)) {
        case 0: return cmp(g, cmp_swap(c), b, a);
        case 1: return sub(g, K(g, 1, 1), cmp(g, cmp_not(c), a, b));
        case 2: return cmp(g, c, sub(g, a, b), z);
        default: {
            sp_expr_t m = xg_small(g);
            return cmp(g, c, add(g, a, m), add(g, b, m));
        }
        }
    }
    case R_WHERE_NOT: {
        if (op != SP_OP_WHERE || OP(ARG(e, 0)) != SP_OP_CMP)
            return SP_EXPR_NONE;
        sp_expr_t c = ARG(e, 0);
        sp_cmp_t k = (sp_cmp_t)sp_expr_node(g->E, c)->param;
        return wh(g, cmp(g, cmp_not(k), ARG(c, 0), ARG(c, 1)), ARG(e, 2), ARG(e, 1));
    }
    case R_WHERE_MASK: {
        if (op != SP_OP_WHERE || OP(ARG(e, 0)) != SP_OP_CMP)
            return SP_EXPR_NONE;
        sp_expr_t c = ARG(e, 0);
        return add(g, mul(g, c, ARG(e, 1)), mul(g, sub(g, K(g, 1, 1), c), ARG(e, 2)));
    }
    case R_WHERE_NE:
        if (op != SP_OP_WHERE)
            return SP_EXPR_NONE;
        return wh(g, cmp(g, SP_CMP_NE, ARG(e, 0), K(g, 0, 1)), ARG(e, 1), ARG(e, 2));
    case R_WHERE_SHIFT:
        if (op != SP_OP_WHERE)
            return SP_EXPR_NONE;
        return add(g, wh(g, ARG(e, 0), sub(g, ARG(e, 1), ARG(e, 2)), K(g, 0, 1)), ARG(e, 2));
    default:
        return SP_EXPR_NONE;
    }
}

/* Generic rules apply to any node; the others need a particular operator. */
static int rule_is_generic(int id) { return id <= R_MUL_DIV_M; }

sp_expr_t xg_rewrite_root(xg_t *g, sp_expr_t e)
{
    int order[R__COUNT];
    int n = 0;
    for (int id = 0; id < R__COUNT; id++) {
        unsigned need = rule_fam[id];
        if ((need & XG_HARD) && !(g->fam & XG_HARD))
            continue;
        if ((need & g->fam & XG_ALL) != (need & XG_ALL))
            continue;
        order[n++] = id;
    }
    /* Fisher-Yates, then try operator-specific rules first most of the time */
    for (int i = n - 1; i > 0; i--) {
        int j = (int)xg_below(&g->rng, (uint32_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int specific_first = xg_chance(&g->rng, 4, 5);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            int id = order[i];
            if (rule_is_generic(id) == (pass == 0 ? !specific_first : specific_first)) {
                sp_expr_t r = apply_rule(g, id, e);
                if (r != SP_EXPR_NONE && r != e) {
                    g->hits[id]++;
                    g->last_rule = id;
                    return r;
                }
            }
        }
    }
    return SP_EXPR_NONE;
}

sp_expr_t xg_rewrite(xg_t *g, sp_expr_t e, int count)
{
    for (int t = 0; t < count && e != SP_EXPR_NONE; t++) {
        if (xg_cone_size(g->E, e) >= g->max_cone)
            break;
        sp_expr_t target = random_node(g, e);
        sp_expr_t r = xg_rewrite_root(g, target);
        if (r == SP_EXPR_NONE)
            continue;
        e = replace(g->E, e, target, r);
    }
    return e;
}

/* ---- perturbations ----------------------------------------------------------------------- */

static sp_expr_t perturb_node(xg_t *g, sp_expr_t e)
{
    sp_op_t op = OP(e);
    uint32_t n = NA(e);
    xg_rng_t *r = &g->rng;
    switch (op) {
    case SP_OP_CONST: {
        fmpq_t c;
        fmpq_init(c);
        fmpq_set(c, sp_expr_const(g->E, e));
        switch (xg_below(r, 4)) {
        case 0: fmpq_add_si(c, c, 1); break;
        case 1: if (fmpq_is_zero(c)) fmpq_set_si(c, 1, 3); else fmpq_neg(c, c); break;
        case 2: fmpq_mul_2exp(c, c, 1); if (fmpq_is_zero(c)) fmpq_one(c); break;
        default: { fmpq_t t; fmpq_init(t); fmpq_set_si(t, 1, 7); fmpq_add(c, c, t); fmpq_clear(t); }
        }
        sp_expr_t out = sp_expr_const_fmpq(g->E, c);
        fmpq_clear(c);
        return out;
    }
    case SP_OP_SYM: {
        if (g->nvars < 2)
            return add(g, e, K(g, 1, 1));
        sp_expr_t s;
        do
            s = g->sym[xg_below(r, (uint32_t)g->nvars)];
        while (s == e);
        return s;
    }
    case SP_OP_ADD: case SP_OP_MUL:
        if (xg_chance(r, 1, 3))
            return nary_without(g, op == SP_OP_ADD ? SP_OP_MUL : SP_OP_ADD, e, n);
        return nary_without(g, op, e, xg_below(r, n));
    case SP_OP_MAX: case SP_OP_MIN:
        if (n > 2 && xg_chance(r, 1, 3))
            return nary_without(g, op, e, xg_below(r, n));
        return nary_without(g, op == SP_OP_MAX ? SP_OP_MIN : SP_OP_MAX, e, n);
    case SP_OP_SUB: return sub(g, ARG(e, 1), ARG(e, 0));
    case SP_OP_DIV: return xg_chance(r, 1, 2) ? dv(g, ARG(e, 1), ARG(e, 0)) : mul(g, ARG(e, 0), ARG(e, 1));
    case SP_OP_NEG: return ARG(e, 0);
    case SP_OP_POW: {
        slong k = sp_expr_node(g->E, e)->param;
        return pw(g, ARG(e, 0), xg_chance(r, 1, 2) ? k + 1 : (k == 2 ? 3 : 2));
    }
    case SP_OP_CMP: {
        static const sp_cmp_t boundary[6] = {SP_CMP_LE, SP_CMP_LT, SP_CMP_GE, SP_CMP_GT, SP_CMP_NE, SP_CMP_EQ};
        sp_cmp_t c = (sp_cmp_t)sp_expr_node(g->E, e)->param;
        if (xg_chance(r, 1, 2))
            return cmp(g, boundary[c], ARG(e, 0), ARG(e, 1)); /* differs only where a == b */
        return cmp(g, c, ARG(e, 1), ARG(e, 0));
    }
    case SP_OP_WHERE: return wh(g, ARG(e, 0), ARG(e, 2), ARG(e, 1));
    case SP_OP_CLAMP:
        return sp_expr_clamp(g->E, ARG(e, 0), ARG(e, 2), ARG(e, 1));
    case SP_OP_RELU: return un(g, xg_chance(r, 1, 2) ? SP_OP_ABS : SP_OP_RELU, neg(g, ARG(e, 0)));
    case SP_OP_ABS: return un(g, SP_OP_RELU, ARG(e, 0));
    case SP_OP_EXP: return un(g, SP_OP_EXP, neg(g, ARG(e, 0)));
    case SP_OP_SIGMOID: return un(g, xg_chance(r, 1, 2) ? SP_OP_TANH : SP_OP_SIGMOID, neg(g, ARG(e, 0)));
    case SP_OP_TANH: return un(g, SP_OP_SIGMOID, ARG(e, 0));
    case SP_OP_SILU: return un(g, SP_OP_GELU, ARG(e, 0));
    case SP_OP_GELU: return un(g, SP_OP_SILU, ARG(e, 0));
    case SP_OP_ERF: return un(g, SP_OP_TANH, ARG(e, 0));
    case SP_OP_LOG: return un(g, SP_OP_LOG, add(g, ARG(e, 0), K(g, 1, 1)));
    case SP_OP_SQRT: return un(g, SP_OP_RSQRT, ARG(e, 0));
    case SP_OP_RSQRT: return un(g, SP_OP_SQRT, ARG(e, 0));
    default: return SP_EXPR_NONE;
    }
}

sp_expr_t xg_perturb(xg_t *g, sp_expr_t e)
{
    for (int t = 0; t < 8; t++) {
        sp_expr_t target = random_node(g, e);
        sp_expr_t p;
        uint32_t how = xg_below(&g->rng, 10);
        if (how == 0) {
            p = add(g, target, K(g, 1, 1000));
        } else if (how == 1) {
            /* differs only on a hyperplane (or a point): the engine needs the tie to see it */
            sp_expr_t u = g->sym[xg_below(&g->rng, (uint32_t)g->nvars)];
            sp_expr_t v = xg_chance(&g->rng, 1, 2) ? g->sym[xg_below(&g->rng, (uint32_t)g->nvars)]
                                                   : xg_const(g, 0);
            p = add(g, target, mul(g, cmp(g, SP_CMP_EQ, u, v), xg_const(g, 1)));
        } else {
            p = perturb_node(g, target);
        }
        if (p == SP_EXPR_NONE || p == target)
            continue;
        sp_expr_t out = replace(g->E, e, target, p);
        if (out != e)
            return out;
    }
    return add(g, e, K(g, 1, 1000));
}

/* ---- templates: softmax and friends ------------------------------------------------------- */

static sp_expr_t sum_of(xg_t *g, const sp_expr_t *v, uint32_t n)
{
    return sp_expr_nary(g->E, SP_OP_ADD, v, n);
}

int xg_template(xg_t *g, sp_expr_t *a, sp_expr_t *b, int broken)
{
    xg_rng_t *r = &g->rng;
    uint32_t n = 2 + xg_below(r, 3); /* 2..4 logits */
    sp_expr_t s[4], ex[4], sh[4], vv[4];
    unsigned save = g->fam;
    g->fam &= XG_ARITH | XG_POW | XG_PIECE;
    for (uint32_t i = 0; i < n; i++)
        s[i] = xg_chance(r, 2, 3) ? g->sym[i % g->nvars] : xg_small(g);
    g->fam = save;
    sp_expr_t m = sp_expr_nary(g->E, SP_OP_MAX, s, n);
    int kind = (int)xg_below(r, 5);
    uint32_t i0 = xg_below(r, n);
    switch (kind) {
    case 0: { /* softmax max-shift (or any common shift) */
        sp_expr_t c = xg_chance(r, 2, 3) ? m : xg_small(g);
        for (uint32_t i = 0; i < n; i++) {
            ex[i] = un(g, SP_OP_EXP, s[i]);
            sh[i] = un(g, SP_OP_EXP, sub(g, s[i], c));
        }
        *a = dv(g, sh[i0], sum_of(g, sh, n));
        /* broken: the numerator is not shifted */
        *b = broken ? dv(g, ex[i0], sum_of(g, sh, n)) : dv(g, ex[i0], sum_of(g, ex, n));
        return kind;
    }
    case 1: { /* log-sum-exp with the max shift */
        for (uint32_t i = 0; i < n; i++) {
            ex[i] = un(g, SP_OP_EXP, s[i]);
            sh[i] = un(g, SP_OP_EXP, sub(g, s[i], m));
        }
        *a = un(g, SP_OP_LOG, sum_of(g, ex, n));
        *b = add(g, broken ? s[i0] : m, un(g, SP_OP_LOG, sum_of(g, sh, n)));
        return kind;
    }
    case 2: { /* cross-entropy: vocab split in two shards, global max from shard maxima */
        uint32_t h = n / 2 ? n / 2 : 1;
        sp_expr_t m1 = sp_expr_nary(g->E, SP_OP_MAX, s, h);
        sp_expr_t m2 = h < n ? sp_expr_nary(g->E, SP_OP_MAX, s + h, n - h) : m1;
        sp_expr_t gm = mx(g, m1, m2);
        for (uint32_t i = 0; i < n; i++) {
            ex[i] = un(g, SP_OP_EXP, s[i]);
            /* broken: each shard shifted by its own max, then summed without rescaling */
            sh[i] = un(g, SP_OP_EXP, sub(g, s[i], broken ? (i < h ? m1 : m2) : gm));
        }
        *a = sub(g, un(g, SP_OP_LOG, sum_of(g, ex, n)), s[i0]);
        *b = sub(g, add(g, gm, un(g, SP_OP_LOG, sum_of(g, sh, n))), s[i0]);
        return kind;
    }
    case 3: { /* two-block online softmax with value weights */
        for (uint32_t i = 0; i < n; i++)
            vv[i] = g->sym[(i + 2) % g->nvars];
        uint32_t h = n / 2 ? n / 2 : 1;
        sp_expr_t m1 = sp_expr_nary(g->E, SP_OP_MAX, s, h);
        sp_expr_t m2 = h < n ? sp_expr_nary(g->E, SP_OP_MAX, s + h, n - h) : m1;
        sp_expr_t mm = mx(g, m1, m2);
        sp_expr_t l1 = K(g, 0, 1), l2 = K(g, 0, 1), o1 = K(g, 0, 1), o2 = K(g, 0, 1);
        for (uint32_t i = 0; i < n; i++) {
            sp_expr_t p = un(g, SP_OP_EXP, sub(g, s[i], i < h ? m1 : m2));
            if (i < h) {
                l1 = add(g, l1, p);
                o1 = add(g, o1, mul(g, p, vv[i]));
            } else {
                l2 = add(g, l2, p);
                o2 = add(g, o2, mul(g, p, vv[i]));
            }
            ex[i] = un(g, SP_OP_EXP, s[i]);
            sh[i] = mul(g, ex[i], vv[i]);
        }
        sp_expr_t c1 = un(g, SP_OP_EXP, sub(g, m1, mm)), c2 = un(g, SP_OP_EXP, sub(g, m2, mm));
        if (broken)
            c2 = K(g, 1, 1); /* forgot to rescale the second block */
        sp_expr_t l = add(g, mul(g, l1, c1), mul(g, l2, c2));
        sp_expr_t o = add(g, mul(g, o1, c1), mul(g, o2, c2));
        *a = dv(g, o, l);
        *b = dv(g, sum_of(g, sh, n), sum_of(g, ex, n));
        return kind;
    }
    default: { /* sigmoid / softmax of two logits */
        sp_expr_t x = s[0], y = s[1 % n];
        *a = dv(g, un(g, SP_OP_EXP, x), add(g, un(g, SP_OP_EXP, x), un(g, SP_OP_EXP, y)));
        *b = un(g, SP_OP_SIGMOID, broken ? sub(g, y, x) : sub(g, x, y));
        return kind;
    }
    }
}

/* ---- points ---------------------------------------------------------------------------------- */

void xg_point(xg_rng_t *r, fmpq *vals, slong nsyms)
{
    for (slong i = 0; i < nsyms; i++) {
        if (i > 0 && xg_chance(r, 1, 4)) {
            fmpq_set(vals + i, vals + xg_below(r, (uint32_t)i));
            if (xg_chance(r, 1, 3))
                fmpq_neg(vals + i, vals + i);
            continue;
        }
        switch (xg_below(r, 6)) {
        case 0: fmpq_zero(vals + i); break;
        case 1: case 2: fmpq_set_si(vals + i, (slong)xg_below(r, 7) - 3, 1); break;
        case 3: fmpq_set_si(vals + i, (slong)xg_below(r, 11) - 5, 2); break;
        case 4: fmpq_set_si(vals + i, (slong)xg_below(r, 13) - 6, 3); break;
        default: fmpq_set_si(vals + i, (slong)xg_below(r, 41) - 20, 1 + xg_below(r, 9)); break;
        }
    }
}

int xg_differ_at(const sp_ectx_struct *E, sp_expr_t a, sp_expr_t b, const fmpq *vals, slong prec)
{
    sp_expr_t roots[2] = {a, b};
    fmpq q[2];
    fmpq_init(q + 0);
    fmpq_init(q + 1);
    sp_eval_status_t s = sp_eval_exact(E, roots, 2, vals, q);
    int res = 0;
    if (s == SP_EVAL_OK)
        res = !fmpq_equal(q + 0, q + 1);
    else if (s == SP_EVAL_UNDEFINED)
        res = -1;
    fmpq_clear(q + 0);
    fmpq_clear(q + 1);
    if (s != SP_EVAL_INEXACT && s != SP_EVAL_NOMEM && s != SP_EVAL_UNDECIDED)
        return res;
    arb_ptr x = _arb_vec_init(2);
    res = 0;
    for (slong p = prec; p <= 4 * prec; p *= 4) {
        s = sp_eval_ball(E, roots, 2, vals, p, x);
        if (s == SP_EVAL_UNDEFINED || s == SP_EVAL_NOMEM) {
            res = -1;
            break;
        }
        if (s == SP_EVAL_OK) {
            if (!arb_overlaps(x + 0, x + 1))
                res = 1;
            break;
        }
    }
    _arb_vec_clear(x, 2);
    return res;
}
