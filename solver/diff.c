/* diff.c: exact symbolic differentiation of expressions (forward mode over the DAG). */
#include <flint/flint.h>
#include "diff.h"

#include <stdlib.h>

#include "sbuf.h"

static sp_expr_t C(sp_ectx_t E, slong n, ulong d) { return sp_expr_const_si(E, n, d); }

static sp_expr_t is_zero(sp_ectx_t E, sp_expr_t e)
{
    return e == C(E, 0, 1);
}

static sp_expr_t mul(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (is_zero(E, a) || is_zero(E, b))
        return C(E, 0, 1);
    if (a == C(E, 1, 1))
        return b;
    if (b == C(E, 1, 1))
        return a;
    return sp_expr_mul(E, a, b);
}

/* indicator that argument k of the n-ary max/min node e is the first extremal one */
static sp_expr_t first_extremal(sp_ectx_t E, sp_expr_t e, uint32_t k, int is_max)
{
    uint32_t n = sp_expr_nargs(E, e);
    sp_expr_t ak = sp_expr_arg(E, e, k);
    sp_expr_t ind = C(E, 1, 1);
    for (uint32_t j = 0; j < n; j++) {
        if (j == k)
            continue;
        sp_expr_t aj = sp_expr_arg(E, e, j);
        /* earlier arguments must be strictly beaten, later ones at least matched */
        sp_cmp_t c = j < k ? (is_max ? SP_CMP_GT : SP_CMP_LT) : (is_max ? SP_CMP_GE : SP_CMP_LE);
        ind = mul(E, ind, sp_expr_cmp(E, c, ak, aj));
    }
    return ind;
}

sp_expr_t sp_expr_diff(sp_ectx_t E, sp_expr_t root, sp_expr_t sym)
{
    uint32_t *cone;
    size_t n = sp_expr_cone(E, &root, 1, &cone);
    if (cone == NULL)
        return SP_EXPR_NONE;
    sp_expr_t *d = flint_malloc((n ? n : 1) * sizeof(sp_expr_t));
    if (d == NULL) {
        flint_free(cone);
        return SP_EXPR_NONE;
    }
    sp_expr_t zero = C(E, 0, 1), one = C(E, 1, 1);
    for (size_t i = 0; i < n; i++) {
        sp_expr_t e = cone[i];
        const sp_node_t *nd = sp_expr_node(E, e);
        sp_op_t op = (sp_op_t)nd->op;
        uint32_t na = nd->nargs;
#define A(k) sp_expr_arg(E, e, (k))
#define D(k) d[sp_bsearch_u32(cone, n, A(k))]
        sp_expr_t r = zero;
        switch (op) {
        case SP_OP_SYM:
            r = e == sym ? one : zero;
            break;
        case SP_OP_CONST:
        case SP_OP_CMP:
            r = zero;
            break;
        case SP_OP_ADD: {
            sp_expr_t *t = flint_malloc(na * sizeof(sp_expr_t));
            uint32_t m = 0;
            for (uint32_t k = 0; k < na; k++)
                if (!is_zero(E, D(k)))
                    t[m++] = D(k);
            r = m ? sp_expr_nary(E, SP_OP_ADD, t, m) : zero;
            flint_free(t);
            break;
        }
        case SP_OP_MUL: {
            sp_expr_t *t = flint_malloc(na * sizeof(sp_expr_t));
            uint32_t m = 0;
            for (uint32_t k = 0; k < na; k++) {
                if (is_zero(E, D(k)))
                    continue;
                sp_expr_t p = D(k);
                for (uint32_t j = 0; j < na; j++)
                    if (j != k)
                        p = mul(E, p, A(j));
                t[m++] = p;
            }
            r = m ? sp_expr_nary(E, SP_OP_ADD, t, m) : zero;
            flint_free(t);
            break;
        }
        case SP_OP_DOT: { /* (sum a_i b_i)' = sum a_i' b_i + a_i b_i' */
            sp_expr_t *t = flint_malloc(na * sizeof(sp_expr_t));
            uint32_t m = 0;
            for (uint32_t k = 0; k + 1 < na; k += 2) {
                sp_expr_t p = mul(E, D(k), A(k + 1)), q = mul(E, A(k), D(k + 1));
                if (!is_zero(E, p))
                    t[m++] = p;
                if (!is_zero(E, q))
                    t[m++] = q;
            }
            r = m ? sp_expr_nary(E, SP_OP_ADD, t, m) : zero;
            flint_free(t);
            break;
        }
        case SP_OP_NEG:
            r = is_zero(E, D(0)) ? zero : sp_expr_unary(E, SP_OP_NEG, D(0));
            break;
        case SP_OP_SUB:
            r = is_zero(E, D(1)) ? D(0) : sp_expr_sub(E, D(0), D(1));
            break;
        case SP_OP_DIV: /* (a/b)' = a'/b - a b' / b^2 */
            r = sp_expr_sub(E, sp_expr_div(E, D(0), A(1)),
                            sp_expr_div(E, mul(E, A(0), D(1)), sp_expr_pow(E, A(1), 2)));
            break;
        case SP_OP_POW:
            r = mul(E, mul(E, C(E, nd->param, 1), sp_expr_pow(E, A(0), nd->param - 1)), D(0));
            if (nd->param == 0)
                r = zero;
            break;
        case SP_OP_EXP:
            r = mul(E, e, D(0));
            break;
        case SP_OP_LOG:
            r = sp_expr_div(E, D(0), A(0));
            break;
        case SP_OP_SQRT: /* 1/(2 sqrt x) */
            r = sp_expr_div(E, D(0), mul(E, C(E, 2, 1), e));
            break;
        case SP_OP_RSQRT: /* -1/2 x^(-3/2) = -1/2 rsqrt(x) / x */
            r = mul(E, mul(E, C(E, -1, 2), sp_expr_div(E, e, A(0))), D(0));
            break;
        case SP_OP_TANH:
            r = mul(E, sp_expr_sub(E, one, sp_expr_pow(E, e, 2)), D(0));
            break;
        case SP_OP_SIGMOID:
            r = mul(E, mul(E, e, sp_expr_sub(E, one, e)), D(0));
            break;
        case SP_OP_SILU: { /* s + x s (1 - s) */
            sp_expr_t s = sp_expr_unary(E, SP_OP_SIGMOID, A(0));
            r = mul(E, sp_expr_add(E, s, mul(E, A(0), mul(E, s, sp_expr_sub(E, one, s)))), D(0));
            break;
        }
        case SP_OP_GELU:
        case SP_OP_ERF: {
            /* erf'(x) = 2/sqrt(pi) exp(-x^2); gelu'(x) = Phi(x) + x phi(x).  pi is not rational:
               represented through the opaque atom gelu/erf themselves is impossible, so these
               derivatives are left symbolic as mul(D, diff-atom) via exp and a named constant. */
            sp_expr_t sqrtpi = sp_expr_sym(E, "__sqrt_pi");
            if (op == SP_OP_ERF) {
                r = mul(E, sp_expr_div(E, mul(E, C(E, 2, 1),
                                              sp_expr_unary(E, SP_OP_EXP,
                                                            sp_expr_unary(E, SP_OP_NEG, sp_expr_pow(E, A(0), 2)))),
                                       sqrtpi),
                        D(0));
            } else {
                /* gelu = x Phi(x), Phi(x) = gelu(x)/x is avoided: Phi(x) = (1 + erf(x/sqrt2))/2 */
                sp_expr_t sqrt2 = sp_expr_unary(E, SP_OP_SQRT, C(E, 2, 1));
                sp_expr_t phi = mul(E, C(E, 1, 2),
                                    sp_expr_add(E, one, sp_expr_unary(E, SP_OP_ERF,
                                                                      sp_expr_div(E, A(0), sqrt2))));
                sp_expr_t dens = sp_expr_div(E, sp_expr_unary(E, SP_OP_EXP,
                                                              mul(E, C(E, -1, 2), sp_expr_pow(E, A(0), 2))),
                                             mul(E, sqrt2, sqrtpi));
                r = mul(E, sp_expr_add(E, phi, mul(E, A(0), dens)), D(0));
            }
            break;
        }
        case SP_OP_MAX:
        case SP_OP_MIN: {
            sp_expr_t *t = flint_malloc(na * sizeof(sp_expr_t));
            uint32_t m = 0;
            for (uint32_t k = 0; k < na; k++)
                if (!is_zero(E, D(k)))
                    t[m++] = mul(E, first_extremal(E, e, k, op == SP_OP_MAX), D(k));
            r = m ? sp_expr_nary(E, SP_OP_ADD, t, m) : zero;
            flint_free(t);
            break;
        }
        case SP_OP_RELU:
            r = mul(E, sp_expr_cmp(E, SP_CMP_GT, A(0), zero), D(0));
            break;
        case SP_OP_ABS:
            r = mul(E, sp_expr_sub(E, sp_expr_cmp(E, SP_CMP_GT, A(0), zero),
                                   sp_expr_cmp(E, SP_CMP_LT, A(0), zero)),
                    D(0));
            break;
        case SP_OP_CLAMP: {
            /* x inside [lo, hi] passes x', below gives lo', above gives hi' */
            sp_expr_t below = sp_expr_cmp(E, SP_CMP_LT, A(0), A(1));
            sp_expr_t above = mul(E, sp_expr_sub(E, one, below), sp_expr_cmp(E, SP_CMP_GT, A(0), A(2)));
            sp_expr_t inside = sp_expr_sub(E, sp_expr_sub(E, one, below), above);
            sp_expr_t t3[3] = {mul(E, inside, D(0)), mul(E, below, D(1)), mul(E, above, D(2))};
            r = sp_expr_nary(E, SP_OP_ADD, t3, 3);
            break;
        }
        case SP_OP_WHERE:
            r = sp_expr_where(E, A(0), D(1), D(2));
            break;
        default:
            r = SP_EXPR_NONE;
        }
#undef A
#undef D
        d[i] = r;
    }
    sp_expr_t out = d[n - 1];
    flint_free(d);
    flint_free(cone);
    return out;
}
