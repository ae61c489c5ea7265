/* ops_elem.c: the elementwise tensor operators (unary, binary with broadcasting, clamp, where,
 * comparisons, dropout) and their VJP rules. */
#include <flint/flint.h>
#include "ops_int.h"

#include <string.h>

/* ---- elementwise operators ------------------------------------------------------------------- */

typedef struct {
    int n;                   /* operand slots */
    const sp_tensor_t *t[3]; /* operands; NULL for an absent clamp bound */
    int real[3];             /* index into c->in, or -1 for an attribute constant */
    sp_tensor_t kt[3];       /* attribute constants as 0-d tensors (v points into kv) */
    sp_expr_t kv[3];
    slong k;                 /* pow exponent */
    sp_expr_t factor;        /* dropout: 1/(1-p) */
    int ndim;
    int64_t shape[SP_MAX_DIMS];
    int64_t nout;
    int64_t *map[3];
} ew_t;

static void ew_clear(ew_t *w)
{
    for (int i = 0; i < 3; i++)
        flint_free(w->map[i]);
}

static void ew_const(ew_t *w, int slot, sp_expr_t e)
{
    sp_tensor_init(&w->kt[slot]);
    w->kv[slot] = e;
    w->kt[slot].v = &w->kv[slot];
    w->t[slot] = &w->kt[slot];
    w->real[slot] = -1;
}

/* A clamp bound: the tensor argument `slot`, or the attribute key, or absent. */
static int ew_bound(opc_t *c, ew_t *w, int slot, const char *key)
{
    fmpq_t q;
    fmpq_init(q);
    int present, ok = attr_num(c, key, 0, 1, q, &present);
    if (ok && present && c->nin > slot)
        ok = fail(c, "bound '%s' given both as a tensor and as an attribute", key);
    if (ok && c->nin > slot) {
        w->t[slot] = &c->in[slot];
        w->real[slot] = slot;
    } else if (ok && present) {
        ew_const(w, slot, sp_expr_const_fmpq(c->E, q));
    }
    fmpq_clear(q);
    return ok;
}

static int ew_setup(opc_t *c, int code, ew_t *w)
{
    memset(w, 0, sizeof(*w));
    for (int i = 0; i < 3; i++)
        w->real[i] = -1;
    switch (code) {
    case EW_UNARY:
    case EW_POW:
        w->n = 1;
        break;
    case EW_SCALE:
    case EW_CLAMP:
        w->n = code == EW_SCALE ? 2 : 3;
        break;
    case EW_WHERE:
        w->n = 3;
        break;
    default:
        w->n = 2;
    }
    for (int i = 0; i < w->n && i < c->nin; i++) {
        w->t[i] = &c->in[i];
        w->real[i] = i;
    }
    if (code == EW_SCALE) {
        fmpq_t q;
        fmpq_init(q);
        int present, ok = attr_num(c, "c", 1, 1, q, &present);
        if (ok && !present)
            ok = fail(c, "missing attribute 'c'");
        if (ok)
            ew_const(w, 1, sp_expr_const_fmpq(c->E, q));
        fmpq_clear(q);
        if (!ok)
            return 0;
    } else if (code == EW_POW) {
        int64_t k;
        const sp_attr_t *a = get_attr(c, "k");
        if (a == NULL)
            return fail(c, "missing attribute 'k'");
        if (!attr_int(c, "k", 0, &k, NULL))
            return 0;
        if (k < -100000 || k > 100000)
            return fail(c, "exponent %lld is out of range", (long long)k);
        w->k = (slong)k;
    } else if (code == EW_CLAMP) {
        w->t[1] = w->t[2] = NULL;
        w->real[1] = w->real[2] = -1;
        if (!ew_bound(c, w, 1, "lo") || !ew_bound(c, w, 2, "hi"))
            return 0;
        if (w->t[1] == NULL && w->t[2] == NULL)
            return fail(c, "at least one of 'lo' and 'hi' must be given");
    } else if (code == EW_DROPOUT) {
        fmpq_t p;
        fmpq_init(p);
        int present, ok = attr_num(c, "p", 0, 1, p, &present);
        if (ok && (fmpq_sgn(p) < 0 || fmpq_cmp_si(p, 1) >= 0))
            ok = fail(c, "p must be in [0, 1)");
        if (ok) {
            fmpq_sub_si(p, p, 1);
            fmpq_neg(p, p);
            fmpq_inv(p, p);
            w->factor = sp_expr_const_fmpq(c->E, p);
        }
        fmpq_clear(p);
        if (!ok)
            return 0;
    }
    /* broadcast shape over the operands present */
    int first = 1;
    for (int i = 0; i < w->n; i++) {
        if (w->t[i] == NULL)
            continue;
        if (first) {
            w->ndim = w->t[i]->ndim;
            memcpy(w->shape, w->t[i]->shape, sizeof(w->shape));
            first = 0;
        } else if (!bcast_shape(w->ndim, w->shape, w->t[i]->ndim, w->t[i]->shape, &w->ndim,
                                w->shape)) {
            return fail(c, "shapes %s and %s cannot be broadcast", SH(w->ndim, w->shape).s,
                        TS(w->t[i]).s);
        }
    }
    w->nout = shape_numel(w->ndim, w->shape);
    if (w->nout < 0)
        return fail_too_large(c, SH(w->ndim, w->shape).s);
    if (c->max_numel > 0 && w->nout > c->max_numel)
        return fail_elements(c, SH(w->ndim, w->shape).s, w->nout);
    for (int i = 0; i < w->n; i++) {
        if (w->t[i] == NULL)
            continue;
        w->map[i] = bcast_map(w->t[i]->ndim, w->t[i]->shape, w->ndim, w->shape);
        if (w->map[i] == NULL)
            return fail(c, "out of memory");
    }
    return 1;
}

static sp_expr_t ew_elem(sp_ectx_t E, int code, int sub, const ew_t *w, const sp_expr_t *a)
{
    switch (code) {
    case EW_UNARY: return sp_expr_unary(E, (sp_op_t)sub, a[0]);
    case EW_ADD: return sp_expr_add(E, a[0], a[1]);
    case EW_SUB: return sp_expr_sub(E, a[0], a[1]);
    case EW_MUL: return sp_expr_mul(E, a[0], a[1]);
    case EW_DIV: return sp_expr_div(E, a[0], a[1]);
    case EW_SCALE: return sp_expr_mul(E, a[1], a[0]);
    case EW_POW: return sp_expr_pow(E, a[0], w->k);
    case EW_MAXIMUM: return sp_expr_max2(E, a[0], a[1]);
    case EW_MINIMUM: return sp_expr_min2(E, a[0], a[1]);
    case EW_CLAMP:
        if (w->t[1] != NULL && w->t[2] != NULL)
            return sp_expr_clamp(E, a[0], a[1], a[2]);
        return w->t[1] != NULL ? sp_expr_max2(E, a[0], a[1]) : sp_expr_min2(E, a[0], a[2]);
    case EW_WHERE: return sp_expr_where(E, a[0], a[1], a[2]);
    case EW_CMP: return sp_expr_cmp(E, (sp_cmp_t)sub, a[0], a[1]);
    case EW_DROPOUT: return mul3(E, a[0], a[1], w->factor);
    default: return SP_EXPR_NONE;
    }
}

/* In a trace, are the operands all uniform (ops_int.h trace_uniform)?  Then one element is
   computed and copied.  An attribute's constant is one element. */
static int ew_once(opc_t *c, const ew_t *w)
{
    int once = w->nout > 1;
    for (int k = 0; once && k < w->n; k++)
        once = w->t[k] == NULL || w->real[k] < 0 || trace_uniform(c, w->t[k]);
    return once;
}

int ew_forward(opc_t *c, int code, int sub, sp_tensor_t *out)
{
    ew_t w;
    int ok = ew_setup(c, code, &w) && out_alloc(c, out, w.ndim, w.shape);
    int once = ok && ew_once(c, &w);
    for (int64_t i = 0; ok && i < (once ? 1 : w.nout); i++) {
        sp_expr_t a[3] = {0, 0, 0};
        for (int k = 0; k < w.n; k++)
            if (w.t[k] != NULL)
                a[k] = w.t[k]->v[w.map[k][i]];
        out->v[i] = ew_elem(c->E, code, sub, &w, a);
    }
    if (once)
        trace_repeat(out->v, 1, w.nout);
    ew_clear(&w);
    return ok;
}

int fwd_ew(opc_t *c, sp_tensor_t *out)
{
    return ew_forward(c, c->def->code, c->def->sub, out);
}

/* d op(x) / dx for the unary operators, with y = op(x); sp_expr_diff's forms. */
static sp_expr_t unary_deriv(sp_ectx_t E, sp_op_t op, sp_expr_t x, sp_expr_t y)
{
    sp_expr_t one = K(E, 1, 1), zero = K(E, 0, 1);
    switch (op) {
    case SP_OP_NEG: return K(E, -1, 1);
    case SP_OP_EXP: return y;
    case SP_OP_LOG: return sp_expr_div(E, one, x);
    case SP_OP_SQRT: return sp_expr_div(E, one, sp_expr_mul(E, K(E, 2, 1), y));
    case SP_OP_RSQRT: return sp_expr_mul(E, K(E, -1, 2), sp_expr_div(E, y, x));
    case SP_OP_TANH: return sp_expr_sub(E, one, sp_expr_pow(E, y, 2));
    case SP_OP_SIGMOID: return sp_expr_mul(E, y, sp_expr_sub(E, one, y));
    case SP_OP_SILU: {
        sp_expr_t s = sp_expr_unary(E, SP_OP_SIGMOID, x);
        return sp_expr_add(E, s, mul3(E, x, s, sp_expr_sub(E, one, s)));
    }
    case SP_OP_ERF: {
        /* 2/sqrt(pi) exp(-x^2), with diff.c's opaque symbol for sqrt(pi) */
        sp_expr_t e = sp_expr_unary(E, SP_OP_EXP, sp_expr_unary(E, SP_OP_NEG, sp_expr_pow(E, x, 2)));
        return sp_expr_div(E, sp_expr_mul(E, K(E, 2, 1), e), sp_expr_sym(E, "__sqrt_pi"));
    }
    case SP_OP_GELU: {
        /* Phi(x) + x phi(x) with Phi(x) = (1 + erf(x/sqrt 2))/2, as diff.c writes it */
        sp_expr_t sqrt2 = sp_expr_unary(E, SP_OP_SQRT, K(E, 2, 1));
        sp_expr_t phi = sp_expr_mul(
            E, K(E, 1, 2), sp_expr_add(E, one, sp_expr_unary(E, SP_OP_ERF, sp_expr_div(E, x, sqrt2))));
        sp_expr_t dens = sp_expr_div(
            E, sp_expr_unary(E, SP_OP_EXP, sp_expr_mul(E, K(E, -1, 2), sp_expr_pow(E, x, 2))),
            sp_expr_mul(E, sqrt2, sp_expr_sym(E, "__sqrt_pi")));
        return sp_expr_add(E, phi, sp_expr_mul(E, x, dens));
    }
    case SP_OP_RELU: return sp_expr_cmp(E, SP_CMP_GT, x, zero);
    case SP_OP_ABS:
        return sp_expr_sub(E, sp_expr_cmp(E, SP_CMP_GT, x, zero), sp_expr_cmp(E, SP_CMP_LT, x, zero));
    default: return SP_EXPR_NONE;
    }
}

int ew_vjp(opc_t *c, int code, int sub, const sp_tensor_t *y, const sp_tensor_t *dy,
           sp_tensor_t *din)
{
    sp_ectx_struct *E = c->E;
    ew_t w;
    sp_expr_t *g[3] = {NULL, NULL, NULL};
    int ok = ew_setup(c, code, &w);
    for (int k = 0; ok && k < w.n; k++)
        if (w.real[k] >= 0 && !(code == EW_WHERE && k == 0) && !(code == EW_DROPOUT && k == 1))
            ok = (g[k] = scratch(c, w.nout)) != NULL;
    sp_expr_t zero = K(E, 0, 1), one = K(E, 1, 1);
    int once = ok && ew_once(c, &w) && trace_uniform(c, dy) && trace_uniform(c, y);
    for (int64_t i = 0; ok && i < (once ? 1 : w.nout); i++) {
        sp_expr_t a[3] = {0, 0, 0}, d = dy->v[i], e = y->v[i];
        for (int k = 0; k < w.n; k++)
            if (w.t[k] != NULL)
                a[k] = w.t[k]->v[w.map[k][i]];
        switch (code) {
        case EW_UNARY:
            g[0][i] = sub == SP_OP_NEG ? sp_expr_unary(E, SP_OP_NEG, d)
                                       : mul2(E, d, unary_deriv(E, (sp_op_t)sub, a[0], e));
            break;
        case EW_ADD:
        case EW_SUB:
            g[0][i] = d;
            g[1][i] = code == EW_ADD ? d : sp_expr_unary(E, SP_OP_NEG, d);
            break;
        case EW_MUL:
            g[0][i] = mul2(E, d, a[1]);
            g[1][i] = mul2(E, d, a[0]);
            break;
        case EW_DIV:
            g[0][i] = sp_expr_div(E, d, a[1]);
            g[1][i] = sp_expr_unary(E, SP_OP_NEG,
                                    sp_expr_div(E, mul2(E, d, a[0]), sp_expr_pow(E, a[1], 2)));
            break;
        case EW_SCALE:
            g[0][i] = mul2(E, d, a[1]);
            break;
        case EW_POW:
            g[0][i] = w.k == 0   ? zero
                      : w.k == 1 ? d
                                 : mul3(E, d, K(E, w.k, 1), sp_expr_pow(E, a[0], w.k - 1));
            break;
        case EW_MAXIMUM:
        case EW_MINIMUM:
        case EW_CLAMP: {
            if (code == EW_CLAMP && w.t[1] != NULL && w.t[2] != NULL) {
                /* diff.c: below = [x < lo], above = (1 - below)[x > hi], inside = rest */
                sp_expr_t below = sp_expr_cmp(E, SP_CMP_LT, a[0], a[1]);
                sp_expr_t nb = sp_expr_sub(E, one, below);
                sp_expr_t above = sp_expr_mul(E, nb, sp_expr_cmp(E, SP_CMP_GT, a[0], a[2]));
                g[0][i] = mul2(E, d, sp_expr_sub(E, nb, above));
                if (g[1])
                    g[1][i] = mul2(E, d, below);
                if (g[2])
                    g[2][i] = mul2(E, d, above);
                break;
            }
            int is_max = code == EW_MAXIMUM || (code == EW_CLAMP && w.t[1] != NULL);
            int other = code == EW_CLAMP ? (w.t[1] != NULL ? 1 : 2) : 1;
            sp_expr_t m[2] = {a[0], a[other]}, ind[2];
            if (!extremal_grads(E, e, m, 2, is_max, ind)) {
                ok = fail(c, "%s", E->oom ? "out of memory or expression node limit (--max-nodes)"
                                            : "internal error: unexpected max/min node");
                break;
            }
            g[0][i] = mul2(E, d, ind[0]);
            if (g[other])
                g[other][i] = mul2(E, d, ind[1]);
            break;
        }
        case EW_WHERE:
            g[1][i] = sp_expr_where(E, a[0], d, zero);
            g[2][i] = sp_expr_where(E, a[0], zero, d);
            break;
        case EW_DROPOUT:
            g[0][i] = mul3(E, d, a[1], w.factor);
            break;
        default:
            break;
        }
    }
    for (int k = 0; ok && once && k < w.n; k++)
        if (g[k] != NULL)
            trace_repeat(g[k], 1, w.nout);
    for (int k = 0; ok && k < w.n; k++) {
        if (g[k] == NULL)
            continue;
        sp_tensor_t *t = &din[w.real[k]];
        ok = sp_tensor_alloc(t, w.t[k]->ndim, w.t[k]->shape) ? 1 : fail(c, "out of memory");
        ok = ok && scatter_sum(c, g[k], w.map[k], w.nout, sp_tensor_numel(t), t->v);
    }
    for (int k = 0; k < 3; k++)
        flint_free(g[k]);
    ew_clear(&w);
    return ok;
}

int vjp_ew(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    return ew_vjp(c, c->def->code, c->def->sub, y, dy, din);
}
