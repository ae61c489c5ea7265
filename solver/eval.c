/* eval.c: evaluate expressions at a point: exactly over Q, with Arb balls, and modulo a prime. */
#include <flint/flint.h>
#include "eval.h"

#include <stdlib.h>
#include <string.h>

#include <arb_hypgeom.h>
#include <flint/nmod.h>
#include <flint/ulong_extras.h>

#include "sbuf.h"
#include "hash.h"

/*
 * All three evaluators walk the cone of the roots once, in ascending id order (a topological
 * order, see expr.h), so the depth of the DAG never reaches the C stack.  Every node of the cone
 * gets a value and a status; a value is released as soon as the last node that reads it is done,
 * so a long chain needs memory for its width, not its length.
 *
 * Partiality: ordinary operators are strict (an undefined argument makes the node undefined);
 * where(c, a, b) is lazy: it takes the status of the branch it selects, so where(x > 0, log(x), 0)
 * is defined at x = -1, as an ML engineer reads it.  A condition that is not OK (INEXACT or
 * UNDECIDED may hide an undefined value) gives its own status.
 *
 * Several roots: the status returned is the most severe over the roots (NOMEM > UNDEFINED >
 * UNDECIDED > INEXACT > OK).  Roots that are OK get their values, the others 0 (exact) or
 * [nan +/- inf] (balls).  A root that is SP_EXPR_NONE (a failed constructor) gives SP_EVAL_NOMEM.
 * Outputs are written after all inputs are read, so out may alias vals.
 */

/* The evaluators look at the clock (when they have a deadline) every this many nodes. */
#define CLOCK_EVERY 64

/* Has the CLOCK_MONOTONIC deadline in ns passed?  0 is no deadline. */
static int past(int64_t deadline_ns)
{
    return deadline_ns != 0 && sp_now_ns() > deadline_ns;
}

/* Exact values whose numerator or denominator exceed this many bits give SP_EVAL_NOMEM. */
#define EXACT_MAX_BITS (UWORD(1) << 24)
/* Symbol-free subexpressions are folded exactly in fingerprints while they stay this small. */
#define FP_CONST_MAX_BITS 4096
#define NOPOS UINT32_MAX

/* ---- plan: the cone with argument positions and last uses ----------------------------------- */

typedef struct {
    uint32_t *ids;   /* cone node ids, ascending; flint_malloc'ed by sp_expr_cone */
    size_t n;
    size_t *off;     /* arguments of position i are apos[off[i] .. off[i + 1]) */
    uint32_t *apos;  /* positions (in ids) of the arguments */
    uint32_t *last;  /* position of the last reader of position i; NOPOS for roots */
    uint32_t *rpos;  /* position of root k, or NOPOS when roots[k] is not a node */
    uint32_t maxargs;
} plan_t;

static void plan_clear(plan_t *P)
{
    flint_free(P->ids);
    flint_free(P->off);
    flint_free(P->apos);
    flint_free(P->last);
    flint_free(P->rpos);
    memset(P, 0, sizeof(*P));
}

/* Returns 0 when memory ran out (then P is cleared). */
static int plan_init(plan_t *P, const sp_ectx_t E, const sp_expr_t *roots, slong nroots)
{
    memset(P, 0, sizeof(*P));
    P->n = sp_expr_cone(E, roots, (size_t)nroots, &P->ids);
    if (P->ids == NULL)
        return 0;
    size_t n = P->n, total = 0;
    for (size_t i = 0; i < n; i++)
        total += E->nodes[P->ids[i]].nargs;
    P->off = flint_malloc((n + 1) * sizeof(size_t));
    P->apos = flint_malloc((total ? total : 1) * sizeof(uint32_t));
    P->last = flint_malloc((n ? n : 1) * sizeof(uint32_t));
    P->rpos = flint_malloc((size_t)nroots * sizeof(uint32_t));
    if (P->off == NULL || P->apos == NULL || P->last == NULL || P->rpos == NULL) {
        plan_clear(P);
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const sp_node_t *nd = &E->nodes[P->ids[i]];
        P->off[i] = k;
        P->last[i] = 0;
        if (nd->nargs > P->maxargs)
            P->maxargs = nd->nargs;
        for (uint32_t j = 0; j < nd->nargs; j++) {
            uint32_t pos = (uint32_t)sp_bsearch_u32(P->ids, n, E->argv[nd->args + j]);
            P->apos[k++] = pos;
            P->last[pos] = (uint32_t)i;
        }
    }
    P->off[n] = k;
    for (slong r = 0; r < nroots; r++) {
        sp_expr_t e = roots[r];
        P->rpos[r] = NOPOS;
        if (e != SP_EXPR_NONE && e < E->len) {
            P->rpos[r] = (uint32_t)sp_bsearch_u32(P->ids, n, e);
            P->last[P->rpos[r]] = NOPOS;
        }
    }
    return 1;
}

/* Severity order used to combine statuses: the most informative one wins. */
static int severity(sp_eval_status_t s)
{
    switch (s) {
    case SP_EVAL_OK: return 0;
    case SP_EVAL_INEXACT: return 1;
    case SP_EVAL_UNDECIDED: return 2;
    case SP_EVAL_UNDEFINED: return 3;
    case SP_EVAL_NOMEM: return 4;
    default: return 5;
    }
}

static sp_eval_status_t worse(sp_eval_status_t a, sp_eval_status_t b)
{
    return severity(b) > severity(a) ? b : a;
}

static uint64_t abs_si(int64_t k)
{
    return k < 0 ? (uint64_t)(-(k + 1)) + 1 : (uint64_t)k;
}

/* ---- exact evaluation ----------------------------------------------------------------------- */

static int fmpq_too_big(const fmpq_t x, flint_bitcnt_t limit)
{
    return fmpz_bits(fmpq_numref(x)) > limit || fmpz_bits(fmpq_denref(x)) > limit;
}

static int cmp_holds(int64_t c, int s)
{
    switch (c) {
    case SP_CMP_LT: return s < 0;
    case SP_CMP_LE: return s <= 0;
    case SP_CMP_GT: return s > 0;
    case SP_CMP_GE: return s >= 0;
    case SP_CMP_EQ: return s == 0;
    default: return s != 0; /* SP_CMP_NE; other params are rejected by the caller */
    }
}

/* Sets r to sqrt(x) and returns 1 when x >= 0 is the square of a rational. */
static int fmpq_sqrt_exact(fmpq_t r, const fmpq_t x)
{
    if (fmpq_sgn(x) < 0 || !fmpz_is_square(fmpq_numref(x)) || !fmpz_is_square(fmpq_denref(x)))
        return 0;
    fmpz_sqrt(fmpq_numref(r), fmpq_numref(x));
    fmpz_sqrt(fmpq_denref(r), fmpq_denref(x));
    return 1;
}

/*
 * r = op(a[0], ..., a[nargs - 1]) over Q for every operator but SYM and CONST.  r does not alias
 * any a[k].  Values beyond limit bits give SP_EVAL_NOMEM.
 */
static sp_eval_status_t exact_op(const sp_node_t *nd, const fmpq *const *a, fmpq_t r,
                                 flint_bitcnt_t limit)
{
    uint32_t n = nd->nargs;
    switch ((sp_op_t)nd->op) {
    case SP_OP_ADD:
        fmpq_zero(r);
        for (uint32_t k = 0; k < n; k++) {
            fmpq_add(r, r, a[k]);
            if (fmpq_too_big(r, limit))
                return SP_EVAL_NOMEM;
        }
        return SP_EVAL_OK;
    case SP_OP_MUL:
        fmpq_one(r);
        for (uint32_t k = 0; k < n; k++) {
            fmpq_mul(r, r, a[k]);
            if (fmpq_too_big(r, limit))
                return SP_EVAL_NOMEM;
        }
        return SP_EVAL_OK;
    case SP_OP_DOT: {
        fmpq_t t;
        fmpq_init(t);
        fmpq_zero(r);
        sp_eval_status_t st = SP_EVAL_OK;
        for (uint32_t k = 0; k + 1 < n && st == SP_EVAL_OK; k += 2) {
            fmpq_mul(t, a[k], a[k + 1]);
            fmpq_add(r, r, t);
            if (fmpq_too_big(t, limit) || fmpq_too_big(r, limit))
                st = SP_EVAL_NOMEM;
        }
        fmpq_clear(t);
        return st;
    }
    case SP_OP_NEG:
        fmpq_neg(r, a[0]);
        return SP_EVAL_OK;
    case SP_OP_SUB:
        fmpq_sub(r, a[0], a[1]);
        return SP_EVAL_OK;
    case SP_OP_DIV:
        if (fmpq_is_zero(a[1]))
            return SP_EVAL_UNDEFINED;
        fmpq_div(r, a[0], a[1]);
        return SP_EVAL_OK;
    case SP_OP_POW: {
        int64_t k = nd->param;
        const fmpq *x = a[0];
        if (k == 0) {
            fmpq_one(r); /* 0^0 = 1, as in torch.pow */
            return SP_EVAL_OK;
        }
        if (fmpq_is_zero(x)) {
            if (k < 0)
                return SP_EVAL_UNDEFINED;
            fmpq_zero(r);
            return SP_EVAL_OK;
        }
        uint64_t m = abs_si(k);
        if (fmpz_is_pm1(fmpq_numref(x)) && fmpz_is_one(fmpq_denref(x))) {
            fmpq_set_si(r, (fmpz_sgn(fmpq_numref(x)) < 0 && (m & 1)) ? -1 : 1, 1);
            return SP_EVAL_OK;
        }
        /* |x| != 0, 1: x^m has at least m * (bits - 1) bits in its numerator or denominator */
        flint_bitcnt_t b = FLINT_MAX(fmpz_bits(fmpq_numref(x)), fmpz_bits(fmpq_denref(x))) - 1;
        if (m > limit / b)
            return SP_EVAL_NOMEM;
        fmpq_pow_si(r, x, (slong)k);
        return SP_EVAL_OK;
    }
    case SP_OP_EXP:
        if (!fmpq_is_zero(a[0]))
            return SP_EVAL_INEXACT;
        fmpq_one(r);
        return SP_EVAL_OK;
    case SP_OP_LOG:
        if (fmpq_sgn(a[0]) <= 0)
            return SP_EVAL_UNDEFINED;
        if (!fmpq_is_one(a[0]))
            return SP_EVAL_INEXACT;
        fmpq_zero(r);
        return SP_EVAL_OK;
    case SP_OP_SQRT:
        if (fmpq_sgn(a[0]) < 0)
            return SP_EVAL_UNDEFINED;
        return fmpq_sqrt_exact(r, a[0]) ? SP_EVAL_OK : SP_EVAL_INEXACT;
    case SP_OP_RSQRT:
        if (fmpq_sgn(a[0]) <= 0)
            return SP_EVAL_UNDEFINED;
        if (!fmpq_sqrt_exact(r, a[0]))
            return SP_EVAL_INEXACT;
        fmpq_inv(r, r);
        return SP_EVAL_OK;
    case SP_OP_TANH: case SP_OP_SILU: case SP_OP_GELU: case SP_OP_ERF:
        if (!fmpq_is_zero(a[0]))
            return SP_EVAL_INEXACT;
        fmpq_zero(r);
        return SP_EVAL_OK;
    case SP_OP_SIGMOID:
        if (!fmpq_is_zero(a[0]))
            return SP_EVAL_INEXACT;
        fmpq_set_si(r, 1, 2);
        return SP_EVAL_OK;
    case SP_OP_MAX: case SP_OP_MIN: {
        uint32_t best = 0;
        for (uint32_t k = 1; k < n; k++) {
            int c = fmpq_cmp(a[k], a[best]);
            if (nd->op == SP_OP_MAX ? c > 0 : c < 0)
                best = k;
        }
        fmpq_set(r, a[best]);
        return SP_EVAL_OK;
    }
    case SP_OP_RELU:
        if (fmpq_sgn(a[0]) < 0)
            fmpq_zero(r);
        else
            fmpq_set(r, a[0]);
        return SP_EVAL_OK;
    case SP_OP_ABS:
        fmpq_abs(r, a[0]);
        return SP_EVAL_OK;
    case SP_OP_CLAMP:
        fmpq_set(r, fmpq_cmp(a[0], a[1]) < 0 ? a[1] : a[0]);
        if (fmpq_cmp(r, a[2]) > 0)
            fmpq_set(r, a[2]);
        return SP_EVAL_OK;
    case SP_OP_CMP:
        if (nd->param < SP_CMP_LT || nd->param > SP_CMP_NE)
            return SP_EVAL_UNDEFINED;
        fmpq_set_si(r, cmp_holds(nd->param, fmpq_cmp(a[0], a[1])), 1);
        return SP_EVAL_OK;
    case SP_OP_WHERE:
        fmpq_set(r, fmpq_is_zero(a[0]) ? a[2] : a[1]);
        return SP_EVAL_OK;
    default:
        /* SYM and CONST are handled by the callers; anything else is not an operator. */
        return SP_EVAL_UNDEFINED;
    }
}

static void fmpq_release(fmpq_t x)
{
    fmpq_clear(x);
    fmpq_init(x);
}

static sp_eval_status_t eval_exact(const sp_ectx_t E, const sp_expr_t *roots, slong n,
                                   const fmpq *vals, int64_t deadline_ns, fmpq *out)
{
    if (n <= 0)
        return SP_EVAL_OK;
    plan_t P;
    fmpq *v = NULL;
    uint8_t *st = NULL;
    const fmpq **argp = NULL;
    sp_eval_status_t res = SP_EVAL_OK;
    int ready = 0;     /* the value array is initialised */
    int timed_out = 0; /* the loop stopped at the deadline: st[] is incomplete */
    if (!plan_init(&P, E, roots, n)) {
        res = SP_EVAL_NOMEM;
        goto cleanup;
    }
    v = flint_malloc((P.n ? P.n : 1) * sizeof(fmpq));
    st = flint_malloc(P.n ? P.n : 1);
    argp = flint_malloc((P.maxargs ? P.maxargs : 1) * sizeof(fmpq *));
    if (v == NULL || st == NULL || argp == NULL) {
        res = SP_EVAL_NOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < P.n; i++)
        fmpq_init(v + i);
    ready = 1;

    for (size_t i = 0; i < P.n; i++) {
        if (i % CLOCK_EVERY == CLOCK_EVERY - 1 && past(deadline_ns)) {
            timed_out = 1;
            break;
        }
        const sp_node_t *nd = &E->nodes[P.ids[i]];
        const uint32_t *ap = P.apos + P.off[i];
        sp_eval_status_t s = SP_EVAL_OK;
        if (nd->op == SP_OP_SYM) {
            fmpq_set(v + i, vals + nd->param);
        } else if (nd->op == SP_OP_CONST) {
            fmpq_set(v + i, E->consts + nd->param);
        } else if (nd->op == SP_OP_WHERE) {
            s = (sp_eval_status_t)st[ap[0]];
            if (s == SP_EVAL_OK) {
                uint32_t sel = fmpq_is_zero(v + ap[0]) ? ap[2] : ap[1];
                s = (sp_eval_status_t)st[sel];
                fmpq_set(v + i, v + sel);
            }
        } else {
            for (uint32_t k = 0; k < nd->nargs; k++) {
                s = worse(s, (sp_eval_status_t)st[ap[k]]);
                argp[k] = v + ap[k];
            }
            if (s == SP_EVAL_OK)
                s = exact_op(nd, argp, v + i, EXACT_MAX_BITS);
        }
        if (s == SP_EVAL_OK && fmpq_too_big(v + i, EXACT_MAX_BITS))
            s = SP_EVAL_NOMEM;
        st[i] = (uint8_t)s;
        for (uint32_t k = 0; k < nd->nargs; k++)
            if (P.last[ap[k]] == i)
                fmpq_release(v + ap[k]);
    }

cleanup:
    for (slong r = 0; r < n; r++) {
        uint32_t pos = ready ? P.rpos[r] : NOPOS;
        sp_eval_status_t s = timed_out     ? SP_EVAL_TIMEOUT
                             : pos == NOPOS ? SP_EVAL_NOMEM
                                            : (sp_eval_status_t)st[pos];
        if (s == SP_EVAL_OK)
            fmpq_set(out + r, v + pos);
        else
            fmpq_zero(out + r);
        res = worse(res, s);
    }
    if (ready)
        for (size_t i = 0; i < P.n; i++)
            fmpq_clear(v + i);
    flint_free(v);
    flint_free(st);
    flint_free(argp);
    plan_clear(&P);
    return res;
}

sp_eval_status_t sp_eval_exact(const sp_ectx_t E, const sp_expr_t *roots, slong n,
                               const fmpq *vals, fmpq *out)
{
    return eval_exact(E, roots, n, vals, 0, out);
}

/* ---- ball evaluation ------------------------------------------------------------------------ */

/*
 * Exponents that outgrow a machine word come from towers such as ((x^99999)^99999)^...; later
 * operations would get slower with every level, so such balls become [nan +/- inf], which is
 * sound (it contains everything) and makes every later decision UNDECIDED.
 */
static void arb_tame(arb_t x)
{
    if (COEFF_IS_MPZ(ARF_EXP(arb_midref(x))) || COEFF_IS_MPZ(MAG_EXP(arb_radref(x))))
        arb_indeterminate(x);
}

/* 1 / (1 + exp(-x)): exp(-x) is accurate for both signs of x, unlike 1 + tanh(x/2). */
static void arb_sigmoid(arb_t r, const arb_t x, slong prec)
{
    arb_neg(r, x);
    arb_exp(r, r, prec);
    arb_add_ui(r, r, 1, prec);
    arb_inv(r, r, prec);
}

/* Domain check for log/sqrt/rsqrt: positive (or nonnegative when closed is set) required. */
static sp_eval_status_t arb_domain(const arb_t x, int closed)
{
    if (closed ? arb_is_nonnegative(x) : arb_is_positive(x))
        return SP_EVAL_OK;
    if (closed ? arb_is_negative(x) : arb_is_nonpositive(x))
        return SP_EVAL_UNDEFINED;
    return SP_EVAL_UNDECIDED;
}

/* A ball's nonzero test: 1 nonzero, 0 exactly zero, -1 undecided. */
static int arb_nonzero(const arb_t x)
{
    if (arb_is_zero(x))
        return 0;
    return arb_contains_zero(x) ? -1 : 1;
}

static sp_eval_status_t ball_cmp(arb_t r, int64_t c, const arb_t x, const arb_t y)
{
    int t;
    switch (c) {
    case SP_CMP_LT: t = arb_lt(x, y) ? 1 : arb_ge(x, y) ? 0 : -1; break;
    case SP_CMP_LE: t = arb_le(x, y) ? 1 : arb_gt(x, y) ? 0 : -1; break;
    case SP_CMP_GT: t = arb_gt(x, y) ? 1 : arb_le(x, y) ? 0 : -1; break;
    case SP_CMP_GE: t = arb_ge(x, y) ? 1 : arb_lt(x, y) ? 0 : -1; break;
    case SP_CMP_EQ: t = arb_eq(x, y) ? 1 : arb_ne(x, y) ? 0 : -1; break;
    case SP_CMP_NE: t = arb_ne(x, y) ? 1 : arb_eq(x, y) ? 0 : -1; break;
    default: return SP_EVAL_UNDEFINED;
    }
    if (t < 0)
        return SP_EVAL_UNDECIDED;
    arb_set_si(r, t);
    return SP_EVAL_OK;
}

/* r = op(a[0], ...) on balls, for every operator but SYM, CONST and WHERE; r aliases no a[k]. */
static sp_eval_status_t ball_op(const sp_node_t *nd, const arb_struct *const *a, arb_t r,
                                slong prec)
{
    uint32_t n = nd->nargs;
    sp_eval_status_t s;
    switch ((sp_op_t)nd->op) {
    case SP_OP_ADD:
        arb_set(r, a[0]);
        for (uint32_t k = 1; k < n; k++)
            arb_add(r, r, a[k], prec);
        return SP_EVAL_OK;
    case SP_OP_MUL:
        arb_set(r, a[0]);
        for (uint32_t k = 1; k < n; k++)
            arb_mul(r, r, a[k], prec);
        return SP_EVAL_OK;
    case SP_OP_DOT:
        arb_zero(r);
        for (uint32_t k = 0; k + 1 < n; k += 2)
            arb_addmul(r, a[k], a[k + 1], prec);
        return SP_EVAL_OK;
    case SP_OP_NEG:
        arb_neg(r, a[0]);
        return SP_EVAL_OK;
    case SP_OP_SUB:
        arb_sub(r, a[0], a[1], prec);
        return SP_EVAL_OK;
    case SP_OP_DIV:
        switch (arb_nonzero(a[1])) {
        case 0: return SP_EVAL_UNDEFINED;
        case -1: return SP_EVAL_UNDECIDED;
        default: arb_div(r, a[0], a[1], prec); return SP_EVAL_OK;
        }
    case SP_OP_POW: {
        int64_t k = nd->param;
        if (k < 0) {
            switch (arb_nonzero(a[0])) {
            case 0: return SP_EVAL_UNDEFINED;
            case -1: return SP_EVAL_UNDECIDED;
            default: break;
            }
            arb_inv(r, a[0], prec);
            arb_pow_ui(r, r, abs_si(k), prec);
        } else {
            arb_pow_ui(r, a[0], (ulong)k, prec);
        }
        return SP_EVAL_OK;
    }
    case SP_OP_EXP:
        arb_exp(r, a[0], prec);
        return SP_EVAL_OK;
    case SP_OP_LOG:
        if ((s = arb_domain(a[0], 0)) == SP_EVAL_OK)
            arb_log(r, a[0], prec);
        return s;
    case SP_OP_SQRT:
        if ((s = arb_domain(a[0], 1)) == SP_EVAL_OK)
            arb_sqrt(r, a[0], prec);
        return s;
    case SP_OP_RSQRT:
        if ((s = arb_domain(a[0], 0)) == SP_EVAL_OK)
            arb_rsqrt(r, a[0], prec);
        return s;
    case SP_OP_TANH:
        arb_tanh(r, a[0], prec);
        return SP_EVAL_OK;
    case SP_OP_SIGMOID:
        arb_sigmoid(r, a[0], prec);
        return SP_EVAL_OK;
    case SP_OP_SILU:
        arb_sigmoid(r, a[0], prec);
        arb_mul(r, r, a[0], prec);
        return SP_EVAL_OK;
    case SP_OP_GELU: {
        /* x (1 + erf(x / sqrt 2)) / 2 = x erfc(-x / sqrt 2) / 2, without cancellation for x < 0 */
        arb_t t;
        arb_init(t);
        arb_sqrt_ui(t, 2, prec);
        arb_div(t, a[0], t, prec);
        arb_neg(t, t);
        arb_hypgeom_erfc(t, t, prec);
        arb_mul(r, t, a[0], prec);
        arb_mul_2exp_si(r, r, -1);
        arb_clear(t);
        return SP_EVAL_OK;
    }
    case SP_OP_ERF:
        arb_hypgeom_erf(r, a[0], prec);
        return SP_EVAL_OK;
    case SP_OP_MAX: case SP_OP_MIN:
        /* arb_max/arb_min enclose the extremum even when the balls overlap */
        arb_set(r, a[0]);
        for (uint32_t k = 1; k < n; k++) {
            if (nd->op == SP_OP_MAX)
                arb_max(r, r, a[k], prec);
            else
                arb_min(r, r, a[k], prec);
        }
        return SP_EVAL_OK;
    case SP_OP_RELU: {
        arb_t z;
        arb_init(z);
        arb_max(r, a[0], z, prec);
        arb_clear(z);
        return SP_EVAL_OK;
    }
    case SP_OP_ABS:
        arb_abs(r, a[0]);
        return SP_EVAL_OK;
    case SP_OP_CLAMP:
        arb_max(r, a[0], a[1], prec);
        arb_min(r, r, a[2], prec);
        return SP_EVAL_OK;
    case SP_OP_CMP:
        return ball_cmp(r, nd->param, a[0], a[1]);
    default:
        return SP_EVAL_UNDEFINED;
    }
}

static void arb_release(arb_t x)
{
    arb_clear(x);
    arb_init(x);
}

static sp_eval_status_t eval_ball(const sp_ectx_t E, const sp_expr_t *roots, slong n,
                                  const fmpq *vals, slong prec, int64_t deadline_ns, arb_ptr out)
{
    if (n <= 0)
        return SP_EVAL_OK;
    if (prec < 2)
        prec = 2;
    plan_t P;
    arb_ptr v = NULL;
    uint8_t *st = NULL;
    const arb_struct **argp = NULL;
    sp_eval_status_t res = SP_EVAL_OK;
    int ready = 0;     /* the value array is initialised */
    int timed_out = 0; /* the loop stopped at the deadline: st[] is incomplete */
    if (!plan_init(&P, E, roots, n)) {
        res = SP_EVAL_NOMEM;
        goto cleanup;
    }
    v = flint_malloc((P.n ? P.n : 1) * sizeof(arb_struct));
    st = flint_malloc(P.n ? P.n : 1);
    argp = flint_malloc((P.maxargs ? P.maxargs : 1) * sizeof(arb_struct *));
    if (v == NULL || st == NULL || argp == NULL) {
        res = SP_EVAL_NOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < P.n; i++)
        arb_init(v + i);
    ready = 1;

    for (size_t i = 0; i < P.n; i++) {
        if (i % CLOCK_EVERY == CLOCK_EVERY - 1 && past(deadline_ns)) {
            timed_out = 1;
            break;
        }
        const sp_node_t *nd = &E->nodes[P.ids[i]];
        const uint32_t *ap = P.apos + P.off[i];
        sp_eval_status_t s = SP_EVAL_OK;
        if (nd->op == SP_OP_SYM) {
            arb_set_fmpq(v + i, vals + nd->param, prec);
        } else if (nd->op == SP_OP_CONST) {
            arb_set_fmpq(v + i, E->consts + nd->param, prec);
        } else if (nd->op == SP_OP_WHERE) {
            /*
             * A defined condition whose sign is unknown is harmless when both branches are the
             * same number.  A condition that is not OK may hide an undefined value (UNDECIDED
             * covers "maybe a division by zero"), so its status is the answer.
             */
            int c = st[ap[0]] == SP_EVAL_OK ? arb_nonzero(v + ap[0]) : -2;
            if (c == -2) {
                s = (sp_eval_status_t)st[ap[0]];
            } else if (c >= 0) {
                uint32_t sel = c ? ap[1] : ap[2];
                s = (sp_eval_status_t)st[sel];
                arb_set(v + i, v + sel);
            } else if (st[ap[1]] == SP_EVAL_OK && st[ap[2]] == SP_EVAL_OK &&
                       arb_eq(v + ap[1], v + ap[2])) {
                arb_set(v + i, v + ap[1]);
            } else {
                s = SP_EVAL_UNDECIDED;
            }
        } else {
            for (uint32_t k = 0; k < nd->nargs; k++) {
                s = worse(s, (sp_eval_status_t)st[ap[k]]);
                argp[k] = v + ap[k];
            }
            if (s == SP_EVAL_OK)
                s = ball_op(nd, argp, v + i, prec);
        }
        if (s == SP_EVAL_OK)
            arb_tame(v + i);
        st[i] = (uint8_t)s;
        for (uint32_t k = 0; k < nd->nargs; k++)
            if (P.last[ap[k]] == i)
                arb_release(v + ap[k]);
    }

cleanup:
    for (slong r = 0; r < n; r++) {
        uint32_t pos = ready ? P.rpos[r] : NOPOS;
        sp_eval_status_t s = timed_out     ? SP_EVAL_TIMEOUT
                             : pos == NOPOS ? SP_EVAL_NOMEM
                                            : (sp_eval_status_t)st[pos];
        if (s == SP_EVAL_OK)
            arb_set(out + r, v + pos);
        else
            arb_indeterminate(out + r);
        res = worse(res, s);
    }
    if (ready)
        for (size_t i = 0; i < P.n; i++)
            arb_clear(v + i);
    flint_free(v);
    flint_free(st);
    flint_free(argp);
    plan_clear(&P);
    return res;
}

sp_eval_status_t sp_eval_ball(const sp_ectx_t E, const sp_expr_t *roots, slong n,
                              const fmpq *vals, slong prec, arb_ptr out)
{
    return eval_ball(E, roots, n, vals, prec, 0, out);
}

/* ---- certificates --------------------------------------------------------------------------- */

#define CERT_PREC_MIN 64
#define CERT_PREC_MAX 4096

int sp_eval_certify_differ(const sp_ectx_t E, sp_expr_t a, sp_expr_t b, const fmpq *vals,
                           char **va, char **vb, int *exact)
{
    return sp_eval_certify_differ_by(E, a, b, vals, 0, va, vb, exact);
}

int sp_eval_certify_differ_by(const sp_ectx_t E, sp_expr_t a, sp_expr_t b, const fmpq *vals,
                              int64_t deadline_ns, char **va, char **vb, int *exact)
{
    sp_expr_t roots[2] = {a, b};
    int differ = 0;
    if (va != NULL)
        *va = NULL;
    if (vb != NULL)
        *vb = NULL;
    if (exact != NULL)
        *exact = 0;

    fmpq q[2];
    fmpq_init(q + 0);
    fmpq_init(q + 1);
    sp_eval_status_t s = eval_exact(E, roots, 2, vals, deadline_ns, q);
    if (s == SP_EVAL_OK) {
        differ = !fmpq_equal(q + 0, q + 1);
        if (differ) {
            if (va != NULL)
                *va = fmpq_get_str(NULL, 10, q + 0);
            if (vb != NULL)
                *vb = fmpq_get_str(NULL, 10, q + 1);
            if (exact != NULL)
                *exact = 1;
        }
    }
    fmpq_clear(q + 0);
    fmpq_clear(q + 1);
    if (s != SP_EVAL_INEXACT && s != SP_EVAL_NOMEM)
        return differ; /* decided exactly, or undefined somewhere */

    /* transcendental values, or rationals too large for exact arithmetic: balls */
    arb_ptr x = _arb_vec_init(2);
    for (slong prec = CERT_PREC_MIN; prec <= CERT_PREC_MAX; prec *= 2) {
        s = eval_ball(E, roots, 2, vals, prec, deadline_ns, x);
        if (s == SP_EVAL_UNDEFINED || s == SP_EVAL_NOMEM || s == SP_EVAL_TIMEOUT)
            break;
        if (s == SP_EVAL_OK && !arb_overlaps(x + 0, x + 1)) {
            differ = 1;
            if (va != NULL)
                *va = arb_get_str(x + 0, 20, 0);
            if (vb != NULL)
                *vb = arb_get_str(x + 1, 20, 0);
            break;
        }
    }
    _arb_vec_clear(x, 2);
    return differ;
}

sp_eval_status_t sp_eval_definedness_by(const sp_ectx_t E, sp_expr_t e, const fmpq *vals,
                                        int64_t deadline_ns, char **value, int *exact)
{
    if (value != NULL)
        *value = NULL;
    if (exact != NULL)
        *exact = 0;
    fmpq_t q;
    fmpq_init(q);
    sp_eval_status_t s = eval_exact(E, &e, 1, vals, deadline_ns, q);
    if (s == SP_EVAL_OK) {
        if (value != NULL)
            *value = fmpq_get_str(NULL, 10, q);
        if (exact != NULL)
            *exact = 1;
    }
    fmpq_clear(q);
    if (s != SP_EVAL_INEXACT && s != SP_EVAL_NOMEM)
        return s;
    /* transcendental values, or rationals too large for exact arithmetic: balls */
    arb_t x;
    arb_init(x);
    for (slong prec = CERT_PREC_MIN; prec <= CERT_PREC_MAX; prec *= 2) {
        s = eval_ball(E, &e, 1, vals, prec, deadline_ns, x);
        if (s == SP_EVAL_OK && value != NULL)
            *value = arb_get_str(x, 20, 0);
        if (s != SP_EVAL_UNDECIDED)
            break;
    }
    arb_clear(x);
    return s;
}

/* ---- fingerprints --------------------------------------------------------------------------- */

/*
 * Opaque operators are pseudo-random functions of their argument values, chosen so that the
 * real identities that are cheap to respect hold for fingerprints too (equal fingerprints then
 * survive the rewrites a parallel plan does):
 *  - max/relu/abs and min/clamp are functions of the set of flattened arguments: nested max of
 *    the same kind contribute their own argument set, so max(max(a,b), max(c,d)) = max(a,b,c,d),
 *    relu(x) = max(x, 0) = max(0, x), abs(x) = max(x, -x), clamp(x,l,h) = min(max(x,l), h),
 *    max(x, x) = x (repeated contributions count once; overlapping nested sets are not merged);
 *  - comparisons are functions of the difference: gt(a,b) = lt(b,a), ge = 1 - lt, ne = 1 - eq,
 *    lt(a,a) = 0, eq(a,a) = 1;
 *  - where(c, a, b) = b + t (a - b) with t the condition's value (0/1 for constants), so that
 *    mask arithmetic c*a + (1-c)*b and where(ge(x,y), b, a) = where(lt(x,y), a, b) agree;
 *  - tanh, erf are odd; sigmoid and gelu's Phi satisfy f(-x) = 1 - f(x); tanh(x) = 2
 *    sigmoid(2x) - 1; silu(x) = x sigmoid(x); gelu(x) = x Phi(x); rsqrt = 1/sqrt; exp(0) = 1,
 *    log(1) = 0, sqrt(0) = 0, sqrt(1) = 1;
 *  - symbol-free subexpressions are evaluated exactly first (sqrt(4096/64) = 8, max(2, 3) = 3).
 */

/* A bijection of x for each seed, so distinct symbols never collide before reduction mod p. */
uint64_t sp_fp_hash(uint64_t seed, uint64_t x)
{
    uint64_t h = sp_mix64(seed ^ UINT64_C(0x9e3779b97f4a7c15));
    h = sp_mix64(h + x * UINT64_C(0xbf58476d1ce4e5b9));
    return sp_mix64(h ^ seed);
}

typedef struct {
    uint64_t seed;
    nmod_t mod;
} fpctx_t;

/* Tags of the pseudo-random functions: the operator, a variant and the comparison. */
enum { FP_LEAF = 1, FP_SUMMARY, FP_TRUTH };

static ulong fp_rand(const fpctx_t *F, uint64_t op, uint64_t variant, ulong x)
{
    uint64_t tag = sp_mix64(F->seed + op * UINT64_C(0x632be59bd9b4e019) + (variant << 32));
    return sp_fp_hash(tag, x) % F->mod.n;
}

static int fp_is_neg(const fpctx_t *F, ulong x) { return x > F->mod.n / 2; }

/* f(x) for odd f: f(0) = 0, f(-x) = -f(x). */
static ulong fp_odd(const fpctx_t *F, sp_op_t op, ulong x)
{
    if (x == 0)
        return 0;
    if (fp_is_neg(F, x))
        return nmod_neg(fp_rand(F, op, 0, nmod_neg(x, F->mod)), F->mod);
    return fp_rand(F, op, 0, x);
}

/* f(x) for a CDF-like f: f(0) = 1/2, f(-x) = 1 - f(x). */
static ulong fp_cdf(const fpctx_t *F, sp_op_t op, ulong x)
{
    if (x == 0)
        return (F->mod.n + 1) / 2;
    if (fp_is_neg(F, x))
        return nmod_sub(1, fp_rand(F, op, 0, nmod_neg(x, F->mod)), F->mod);
    return fp_rand(F, op, 0, x);
}

/* num / den mod p; 0 in *ok when p divides the denominator. */
static ulong fp_fmpq(const fpctx_t *F, const fmpq_t q, int *ok)
{
    ulong d = fmpz_fdiv_ui(fmpq_denref(q), F->mod.n);
    if (d == 0) {
        *ok = 0;
        return 0;
    }
    return nmod_mul(fmpz_fdiv_ui(fmpq_numref(q), F->mod.n), n_invmod(d, F->mod.n), F->mod);
}

typedef struct {
    ulong c;  /* contribution to the set summary */
    ulong v;  /* the fingerprint it came from */
} contrib_t;

static int cmp_contrib(const void *x, const void *y)
{
    ulong a = ((const contrib_t *)x)->c, b = ((const contrib_t *)y)->c;
    return (a > b) - (a < b);
}

/* The lattice (max-like or min-like) an operator belongs to, or 0. */
static sp_op_t lattice_of(sp_op_t op)
{
    switch (op) {
    case SP_OP_MAX: case SP_OP_RELU: case SP_OP_ABS: return SP_OP_MAX;
    case SP_OP_MIN: case SP_OP_CLAMP: return SP_OP_MIN;
    default: return (sp_op_t)0;
    }
}

/*
 * Fingerprint of the max or min (kind) of the contributions c[0..m): the summary (sum of the
 * distinct contributions) goes to *summary; the value is the single contributor's value when
 * there is only one distinct contribution, else a pseudo-random function of the summary.
 */
static ulong fp_lattice(const fpctx_t *F, sp_op_t kind, contrib_t *c, size_t m, ulong *summary)
{
    qsort(c, m, sizeof(contrib_t), cmp_contrib);
    size_t distinct = 0;
    ulong sum = 0;
    for (size_t k = 0; k < m; k++) {
        if (k > 0 && c[k].c == c[k - 1].c)
            continue;
        distinct++;
        sum = nmod_add(sum, c[k].c, F->mod);
    }
    *summary = sum;
    return distinct == 1 ? c[0].v : fp_rand(F, kind, FP_SUMMARY, sum);
}

static contrib_t fp_leaf(const fpctx_t *F, sp_op_t kind, ulong v)
{
    contrib_t c = {fp_rand(F, kind, FP_LEAF, v), v};
    return c;
}

static ulong fp_sqrt(const fpctx_t *F, ulong x)
{
    return x <= 1 ? x : fp_rand(F, SP_OP_SQRT, 0, x);
}

/* Fingerprint state per cone position. */
typedef struct {
    ulong *v;        /* fingerprint */
    ulong *sum;      /* lattice summary, for nodes with kind != 0 */
    uint8_t *kind;   /* lattice the node's value is a max/min of, or 0 */
    uint8_t *isc;    /* 1 if the node is symbol-free and cq holds its exact value */
    fmpq *cq;        /* exact values of symbol-free nodes */
} fpvals_t;

/* Fingerprint of a non-polynomial node from argument positions ap; 0 in *ok on failure. */
static ulong fp_opaque(const fpctx_t *F, const sp_ectx_t E, const sp_node_t *nd,
                       const uint32_t *ap, fpvals_t *V, contrib_t *buf, ulong *summary, int *ok)
{
    const ulong *v = V->v;
    sp_op_t op = (sp_op_t)nd->op;
    sp_op_t kind = lattice_of(op);
    ulong x = v[ap[0]];
    size_t m = 0;
    *summary = 0;
    switch (op) {
    case SP_OP_EXP: return x == 0 ? 1 : fp_rand(F, op, 0, x);
    case SP_OP_LOG: return x == 1 ? 0 : fp_rand(F, op, 0, x);
    case SP_OP_SQRT: return fp_sqrt(F, x);
    case SP_OP_RSQRT: {
        ulong s = fp_sqrt(F, x);
        if (s == 0) {
            *ok = 0;
            return 0;
        }
        return n_invmod(s, F->mod.n);
    }
    case SP_OP_TANH: {
        ulong s = fp_cdf(F, SP_OP_SIGMOID, nmod_add(x, x, F->mod));
        return nmod_sub(nmod_add(s, s, F->mod), 1, F->mod);
    }
    case SP_OP_SIGMOID: return fp_cdf(F, SP_OP_SIGMOID, x);
    case SP_OP_SILU: return nmod_mul(x, fp_cdf(F, SP_OP_SIGMOID, x), F->mod);
    case SP_OP_GELU: return nmod_mul(x, fp_cdf(F, SP_OP_GELU, x), F->mod);
    case SP_OP_ERF: return fp_odd(F, SP_OP_ERF, x);
    case SP_OP_CMP: {
        ulong d = nmod_sub(x, v[ap[1]], F->mod), nd_ = nmod_neg(d, F->mod);
        ulong lt_d = d == 0 ? 0 : fp_rand(F, op, SP_CMP_LT, d);   /* lt(a, b) */
        ulong lt_n = d == 0 ? 0 : fp_rand(F, op, SP_CMP_LT, nd_); /* lt(b, a) */
        ulong eq = d == 0 ? 1 : fp_rand(F, op, SP_CMP_EQ, FLINT_MIN(d, nd_));
        switch (nd->param) {
        case SP_CMP_LT: return lt_d;
        case SP_CMP_GT: return lt_n;
        case SP_CMP_GE: return nmod_sub(1, lt_d, F->mod);
        case SP_CMP_LE: return nmod_sub(1, lt_n, F->mod);
        case SP_CMP_EQ: return eq;
        default: return nmod_sub(1, eq, F->mod);
        }
    }
    case SP_OP_WHERE: {
        sp_expr_t cnode = E->argv[nd->args];
        ulong t = x;
        if (E->nodes[cnode].op == SP_OP_CONST)
            t = !fmpq_is_zero(E->consts + E->nodes[cnode].param);
        ulong a = v[ap[1]], b = v[ap[2]];
        return nmod_add(b, nmod_mul(t, nmod_sub(a, b, F->mod), F->mod), F->mod);
    }
    case SP_OP_MAX: case SP_OP_MIN:
        for (uint32_t k = 0; k < nd->nargs; k++) {
            uint32_t p = ap[k];
            if (V->kind[p] == kind) {
                buf[m].c = V->sum[p];
                buf[m++].v = v[p];
            } else {
                buf[m++] = fp_leaf(F, kind, v[p]);
            }
        }
        return fp_lattice(F, kind, buf, m, summary);
    case SP_OP_RELU: case SP_OP_ABS:
        buf[m++] = V->kind[ap[0]] == kind ? (contrib_t){V->sum[ap[0]], x} : fp_leaf(F, kind, x);
        buf[m++] = fp_leaf(F, kind, op == SP_OP_RELU ? 0 : nmod_neg(x, F->mod));
        return fp_lattice(F, kind, buf, m, summary);
    case SP_OP_CLAMP: {
        /* min(max(x, lo), hi) */
        ulong inner_sum;
        for (uint32_t k = 0; k < 2; k++) {
            uint32_t p = ap[k];
            buf[m++] = V->kind[p] == SP_OP_MAX ? (contrib_t){V->sum[p], v[p]}
                                               : fp_leaf(F, SP_OP_MAX, v[p]);
        }
        ulong inner = fp_lattice(F, SP_OP_MAX, buf, m, &inner_sum);
        m = 0;
        buf[m++] = fp_leaf(F, SP_OP_MIN, inner);
        buf[m++] = V->kind[ap[2]] == SP_OP_MIN ? (contrib_t){V->sum[ap[2]], v[ap[2]]}
                                               : fp_leaf(F, SP_OP_MIN, v[ap[2]]);
        return fp_lattice(F, SP_OP_MIN, buf, m, summary);
    }
    default: {
        /* not an operator of expr.h: a generic pseudo-random function of the arguments */
        uint64_t h = (uint64_t)op ^ ((uint64_t)nd->param << 8);
        for (uint32_t k = 0; k < nd->nargs; k++)
            h = sp_fp_hash(h, v[ap[k]]);
        return fp_rand(F, op, 0, h);
    }
    }
}

int sp_fingerprint(const sp_ectx_t E, const sp_expr_t *roots, slong n, uint64_t seed,
                   uint64_t *out)
{
    for (slong r = 0; r < n; r++)
        out[r] = 0;
    if (n <= 0)
        return 1;
    fpctx_t F;
    F.seed = seed;
    nmod_init(&F.mod, SP_FP_PRIME);
    plan_t P;
    fpvals_t V;
    memset(&V, 0, sizeof(V));
    contrib_t *buf = NULL;
    const fmpq **argp = NULL;
    int ok = 1;
    if (!plan_init(&P, E, roots, n))
        return 0;
    size_t cnt = P.n ? P.n : 1, nb = P.maxargs > 2 ? P.maxargs : 2;
    V.v = flint_malloc(cnt * sizeof(ulong));
    V.sum = flint_malloc(cnt * sizeof(ulong));
    V.kind = flint_calloc(cnt, 1);
    V.isc = flint_calloc(cnt, 1);
    V.cq = flint_malloc(cnt * sizeof(fmpq));
    buf = flint_malloc(nb * sizeof(contrib_t));
    argp = flint_malloc(nb * sizeof(fmpq *));
    if (!V.v || !V.sum || !V.kind || !V.isc || !V.cq || !buf || !argp) {
        flint_free(V.cq);
        V.cq = NULL;
        ok = 0;
        goto cleanup;
    }
    for (size_t i = 0; i < P.n; i++)
        fmpq_init(V.cq + i);

    for (size_t i = 0; i < P.n && ok; i++) {
        const sp_node_t *nd = &E->nodes[P.ids[i]];
        const uint32_t *ap = P.apos + P.off[i];
        sp_op_t op = (sp_op_t)nd->op;
        ulong *v = V.v, r = 0;
        V.sum[i] = 0;

        /* symbol-free nodes are folded exactly while small */
        int allc = op != SP_OP_SYM;
        for (uint32_t k = 0; k < nd->nargs && allc; k++) {
            allc = V.isc[ap[k]];
            argp[k] = V.cq + ap[k];
        }
        if (allc) {
            sp_eval_status_t s = SP_EVAL_OK;
            if (op == SP_OP_CONST)
                fmpq_set(V.cq + i, E->consts + nd->param);
            else
                s = exact_op(nd, argp, V.cq + i, FP_CONST_MAX_BITS);
            if (s == SP_EVAL_OK && !fmpq_too_big(V.cq + i, FP_CONST_MAX_BITS)) {
                V.isc[i] = 1;
                v[i] = fp_fmpq(&F, V.cq + i, &ok);
                goto release;
            }
            fmpq_zero(V.cq + i);
        }

        switch (op) {
        case SP_OP_SYM:
            r = sp_fp_hash(seed, (uint64_t)nd->param) % F.mod.n;
            break;
        case SP_OP_CONST:
            r = fp_fmpq(&F, E->consts + nd->param, &ok);
            break;
        case SP_OP_ADD:
            for (uint32_t k = 0; k < nd->nargs; k++)
                r = nmod_add(r, v[ap[k]], F.mod);
            break;
        case SP_OP_MUL:
            r = 1;
            for (uint32_t k = 0; k < nd->nargs; k++)
                r = nmod_mul(r, v[ap[k]], F.mod);
            break;
        case SP_OP_DOT:
            for (uint32_t k = 0; k + 1 < nd->nargs; k += 2)
                r = nmod_add(r, nmod_mul(v[ap[k]], v[ap[k + 1]], F.mod), F.mod);
            break;
        case SP_OP_NEG:
            r = nmod_neg(v[ap[0]], F.mod);
            break;
        case SP_OP_SUB:
            r = nmod_sub(v[ap[0]], v[ap[1]], F.mod);
            break;
        case SP_OP_DIV:
            if (v[ap[1]] == 0)
                ok = 0;
            else
                r = nmod_mul(v[ap[0]], n_invmod(v[ap[1]], F.mod.n), F.mod);
            break;
        case SP_OP_POW: {
            ulong x = v[ap[0]];
            if (nd->param < 0) {
                if (x == 0) {
                    ok = 0;
                    break;
                }
                x = n_invmod(x, F.mod.n);
            }
            r = n_powmod2_ui_preinv(x, abs_si(nd->param), F.mod.n, F.mod.ninv);
            break;
        }
        default:
            r = fp_opaque(&F, E, nd, ap, &V, buf, &V.sum[i], &ok);
            V.kind[i] = (uint8_t)lattice_of(op);
            break;
        }
        v[i] = r;

    release:
        for (uint32_t k = 0; k < nd->nargs; k++)
            if (P.last[ap[k]] == i)
                fmpq_release(V.cq + ap[k]);
    }

    for (slong r = 0; r < n && ok; r++) {
        if (P.rpos[r] == NOPOS)
            ok = 0;
        else
            out[r] = V.v[P.rpos[r]];
    }
    if (!ok)
        for (slong r = 0; r < n; r++)
            out[r] = 0;

cleanup:
    if (V.cq != NULL)
        for (size_t i = 0; i < P.n; i++)
            fmpq_clear(V.cq + i);
    flint_free(V.cq);
    flint_free(V.v);
    flint_free(V.sum);
    flint_free(V.kind);
    flint_free(V.isc);
    flint_free(buf);
    flint_free(argp);
    plan_clear(&P);
    return ok;
}
