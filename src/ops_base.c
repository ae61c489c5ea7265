/* ops_base.c: what the tensor operators build on: expression helpers (constructors that fold
 * literal 0 and 1, dot-product factors, max/min tie gradients) and index maps and groups. */
#include <flint/flint.h>
#include "ops_int.h"

#include <string.h>

/* ---- expression helpers ------------------------------------------------------------------- */

sp_expr_t K(sp_ectx_t E, slong num, ulong den) { return sp_expr_const_si(E, num, den); }

void count_real(opc_t *c, const sp_tensor_t *x, unsigned mask, int64_t m, fmpq_t out)
{
    if (c->env == NULL || c->env->real_count == NULL) {
        fmpq_set_si(out, (slong)m, 1);
        return;
    }
    if (!c->env->real_count(c->env->ctx, x, mask, out) || fmpq_sgn(out) <= 0) {
        /* not known at the real sizes: the count seen, and the real sizes decide (a count
           of the shapes seen against real counts elsewhere is no instance of the program) */
        fmpq_set_si(out, (slong)m, 1);
        if (c->err != NULL && c->err->clamped == SP_CLAMP_NONE)
            c->err->clamped = SP_CLAMP_COUNT;
        return;
    }
    if (c->err != NULL && !(fmpz_is_one(fmpq_denref(out)) && fmpz_cmp_si(fmpq_numref(out), m) == 0))
        c->err->counted = 1;
}

sp_expr_t count_const(opc_t *c, const sp_tensor_t *x, unsigned mask, int64_t m, int inverse)
{
    fmpq_t q;
    fmpq_init(q);
    count_real(c, x, mask, m, q);
    if (inverse && !fmpq_is_zero(q))
        fmpq_inv(q, q);
    sp_expr_t r = sp_expr_const_fmpq(c->E, q);
    fmpq_clear(q);
    return r;
}

static int is_const_si(const sp_ectx_t E, sp_expr_t e, slong v)
{
    if (e == SP_EXPR_NONE || sp_expr_op(E, e) != SP_OP_CONST)
        return 0;
    return fmpq_equal_si((fmpq *)sp_expr_const(E, e), v);
}

sp_expr_t mul2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (is_const_si(E, a, 0) || is_const_si(E, b, 0))
        return K(E, 0, 1);
    if (is_const_si(E, a, 1))
        return b;
    if (is_const_si(E, b, 1))
        return a;
    return sp_expr_mul(E, a, b);
}

/*
 * px[i] = x[i * sx], py[i] = y[i * sy] for i < n: the factors of a dot product's terms, which
 * sp_expr_dot (solver/expr.h) then sums: in the checker's execution store as one node (a probe
 * of the node table per dot product, not one per term: docs/benchmarks.md section 15).
 */
void pairs(sp_expr_t *px, sp_expr_t *py, const sp_expr_t *x, int64_t sx, const sp_expr_t *y,
           int64_t sy, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        px[i] = x[i * sx];
        py[i] = y[i * sy];
    }
}

sp_expr_t mul3(sp_ectx_t E, sp_expr_t a, sp_expr_t b, sp_expr_t c)
{
    sp_expr_t v[3];
    uint32_t n = 0;
    sp_expr_t in[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        if (is_const_si(E, in[i], 0))
            return K(E, 0, 1);
        if (!is_const_si(E, in[i], 1))
            v[n++] = in[i];
    }
    return n == 0 ? K(E, 1, 1) : sp_expr_nary(E, SP_OP_MUL, v, n);
}

sp_expr_t add2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (is_const_si(E, a, 0))
        return b;
    if (is_const_si(E, b, 0))
        return a;
    return sp_expr_add(E, a, b);
}

sp_expr_t sub2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (is_const_si(E, b, 0))
        return a;
    if (is_const_si(E, a, 0))
        return sp_expr_unary(E, SP_OP_NEG, b);
    return sp_expr_sub(E, a, b);
}

/* Sum of v[0..m) after literal zeros are dropped (v is scratch, compacted in place), *m set */
static sp_expr_t addv_nz(sp_ectx_t E, sp_expr_t *v, int64_t n, uint32_t *m)
{
    *m = 0;
    for (int64_t i = 0; i < n; i++)
        if (!is_const_si(E, v[i], 0))
            v[(*m)++] = v[i];
    return *m == 0 ? K(E, 0, 1) : sp_expr_nary(E, SP_OP_ADD, v, *m);
}

/* Sum of v[0..n) as one n-ary ADD, literal zeros dropped.  v is scratch (compacted in place). */
sp_expr_t addv_terms(sp_ectx_t E, sp_expr_t *v, int64_t n)
{
    uint32_t m;
    sp_expr_t r = addv_nz(E, v, n, &m);
    sp_expr_mark_xsum(E, r); /* a sum over an axis all the same (src/members.c) */
    return r;
}

sp_expr_t addv(sp_ectx_t E, sp_expr_t *v, int64_t n)
{
    uint32_t m;
    sp_expr_t r = addv_nz(E, v, n, &m);
    /* every caller sums over an axis: its terms are tested for a count.  A sum of one term is
       that term, which may be a sum of another kind (a gradient's two contributions): marked,
       it would be tested as an axis sum wherever hash-consing shares it (a false count that
       sent a pipeline's backward stage to the real sizes: helper-65's find, 2026-12-07) */
    if (m >= 2)
        sp_expr_mark_axsum(E, r);
    return r;
}

sp_expr_t *scratch(opc_t *c, int64_t n)
{
    sp_expr_t *v = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(sp_expr_t));
    if (v == NULL)
        fail(c, "out of memory");
    return v;
}

/* The derivative of max/min node e with respect to its argument in position k: sp_expr_diff's tie
   rule (the first extremal argument in the node's sorted order takes the gradient). */
static sp_expr_t extremal_ind(sp_ectx_t E, sp_expr_t e, uint32_t k, int is_max)
{
    uint32_t n = sp_expr_nargs(E, e);
    sp_expr_t ak = sp_expr_arg(E, e, k);
    sp_expr_t *f = flint_malloc((n ? n : 1) * sizeof(sp_expr_t));
    if (f == NULL) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    uint32_t m = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (j == k)
            continue;
        sp_cmp_t cm = j < k ? (is_max ? SP_CMP_GT : SP_CMP_LT) : (is_max ? SP_CMP_GE : SP_CMP_LE);
        f[m++] = sp_expr_cmp(E, cm, ak, sp_expr_arg(E, e, j));
    }
    sp_expr_t r = m == 0 ? K(E, 1, 1) : sp_expr_nary(E, SP_OP_MUL, f, m);
    flint_free(f);
    return r;
}

/* For the max/min node e of members m[0..n): the derivative of e with respect to each member
   (equal members take equal arguments in order).  n == 1: e is the member itself. */
int extremal_grads(sp_ectx_t E, sp_expr_t e, const sp_expr_t *m, uint32_t n, int is_max,
                   sp_expr_t *ind)
{
    if (n == 1) {
        ind[0] = K(E, 1, 1);
        return 1;
    }
    sp_op_t op = is_max ? SP_OP_MAX : SP_OP_MIN;
    if (e == SP_EXPR_NONE || sp_expr_op(E, e) != op || sp_expr_nargs(E, e) != n)
        return 0;
    uint8_t *used = flint_calloc(n, 1);
    if (used == NULL)
        return 0;
    int ok = 1;
    for (uint32_t i = 0; i < n && ok; i++) {
        uint32_t j = 0;
        while (j < n && (used[j] || sp_expr_arg(E, e, j) != m[i]))
            j++;
        if (j == n) {
            ok = 0;
            break;
        }
        used[j] = 1;
        ind[i] = extremal_ind(E, e, j, is_max);
    }
    flint_free(used);
    return ok;
}

/* ---- index maps and groups ------------------------------------------------------------------ */

/* map[i] = sum_d idx_d(i) * coef[d] over the elements of shape, row-major. */
static void affine_map(int ndim, const int64_t *shape, const int64_t *coef, int64_t *map)
{
    int64_t n = shape_numel(ndim, shape), idx[SP_MAX_DIMS] = {0}, off = 0;
    for (int64_t i = 0; i < n; i++) {
        map[i] = off;
        for (int d = ndim - 1; d >= 0; d--) {
            off += coef[d];
            if (++idx[d] < shape[d])
                break;
            off -= coef[d] * idx[d];
            idx[d] = 0;
        }
    }
}

void strides_of(int ndim, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

int bcast_shape(int an, const int64_t *as, int bn, const int64_t *bs, int *on,
                int64_t *os)
{
    int n = an > bn ? an : bn;
    int64_t r[SP_MAX_DIMS];
    for (int d = 0; d < n; d++) {
        int ia = d - (n - an), ib = d - (n - bn);
        int64_t x = ia >= 0 ? as[ia] : 1, y = ib >= 0 ? bs[ib] : 1;
        if (x != y && x != 1 && y != 1)
            return 0;
        r[d] = x == 1 ? y : x;
    }
    *on = n;
    memcpy(os, r, (size_t)n * sizeof(int64_t));
    return 1;
}

int can_expand(int in_nd, const int64_t *in_shape, int out_nd, const int64_t *out_shape)
{
    if (in_nd > out_nd)
        return 0;
    for (int d = 0; d < in_nd; d++) {
        int64_t x = in_shape[d], y = out_shape[d + out_nd - in_nd];
        if (x != y && x != 1)
            return 0;
    }
    return 1;
}

/* Offsets of an input of shape (in_nd, in_shape) read broadcast at each element of out_shape.
   Returns a malloc'd array (NULL on failure); the shapes must be compatible. */
int64_t *bcast_map(int in_nd, const int64_t *in_shape, int out_nd,
                   const int64_t *out_shape)
{
    int64_t coef[SP_MAX_DIMS], s = 1;
    for (int d = out_nd - 1; d >= 0; d--) {
        int id = d - (out_nd - in_nd);
        if (id < 0) {
            coef[d] = 0;
            continue;
        }
        coef[d] = in_shape[id] == 1 ? 0 : s;
        s *= in_shape[id];
    }
    int64_t n = shape_numel(out_nd, out_shape);
    int64_t *map = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (map != NULL)
        affine_map(out_nd, out_shape, coef, map);
    return map;
}

void groups_clear(groups_t *g)
{
    flint_free(g->start);
    flint_free(g->idx);
    memset(g, 0, sizeof(*g));
}

/* Group i -> map[i] (entries < 0 belong to no group).  map NULL: the identity. */
int groups_build(groups_t *g, const int64_t *map, int64_t n, int64_t ng)
{
    g->ng = ng;
    g->start = flint_calloc((size_t)ng + 1, sizeof(int64_t));
    g->idx = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (g->start == NULL || g->idx == NULL) {
        groups_clear(g);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = map ? map[i] : i;
        if (k >= 0 && k < ng)
            g->start[k + 1]++;
    }
    for (int64_t k = 0; k < ng; k++)
        g->start[k + 1] += g->start[k];
    for (int64_t i = 0; i < n; i++) {
        int64_t k = map ? map[i] : i;
        if (k >= 0 && k < ng)
            g->idx[g->start[k]++] = i;
    }
    for (int64_t k = ng; k > 0; k--)
        g->start[k] = g->start[k - 1];
    g->start[0] = 0;
    return 1;
}

/* scatter_sum's in a trace whose vals are one node (ops_int.h trace_uniform): a group's sum
   depends only on its count, so groups are counted, not built, and a count's sum is made once */
static int scatter_uniform(opc_t *c, sp_expr_t v, const int64_t *map, int64_t n, int64_t ng,
                           sp_expr_t *res)
{
    int64_t *cnt = flint_calloc((size_t)(ng > 0 ? ng : 1), sizeof(int64_t));
    sp_expr_t *tmp = cnt ? scratch(c, n) : NULL;
    if (tmp == NULL) {
        flint_free(cnt);
        return cnt ? 0 : fail(c, "out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = map ? map[i] : i;
        if (k >= 0 && k < ng)
            cnt[k]++;
    }
    for (int64_t i = 0; i < n; i++)
        tmp[i] = v;
    int64_t last = -1;
    sp_expr_t sum = SP_EXPR_NONE;
    for (int64_t k = 0; k < ng; k++) {
        if (cnt[k] != last) {
            last = cnt[k];
            sum = addv(c->E, tmp, last);
        }
        res[k] = sum;
    }
    flint_free(tmp);
    flint_free(cnt);
    return 1;
}

/* res[k] = sum of vals[i] over i with map[i] == k, as n-ary sums. */
int scatter_sum(opc_t *c, const sp_expr_t *vals, const int64_t *map, int64_t n, int64_t ng,
                sp_expr_t *res)
{
    if (n > 1 && trace_same(c, vals, n))
        return scatter_uniform(c, vals[0], map, n, ng, res);
    groups_t g;
    if (!groups_build(&g, map, n, ng))
        return fail(c, "out of memory");
    sp_expr_t *tmp = scratch(c, n);
    if (tmp == NULL) {
        groups_clear(&g);
        return 0;
    }
    for (int64_t k = 0; k < ng; k++) {
        int64_t m = 0;
        for (int64_t j = g.start[k]; j < g.start[k + 1]; j++)
            tmp[m++] = vals[g.idx[j]];
        res[k] = addv(c->E, tmp, m);
    }
    flint_free(tmp);
    groups_clear(&g);
    return 1;
}

/* Output shape and map (input offset -> output offset) of a reduction over the dims in mask. */
int reduce_map(opc_t *c, const sp_tensor_t *x, const int *mask, int keepdim, int *ondim,
               int64_t *oshape, int64_t **map, int64_t *nout)
{
    int64_t coef[SP_MAX_DIMS] = {0}, s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (mask[d])
            continue;
        coef[d] = s;
        s *= x->shape[d];
    }
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!mask[d])
            oshape[nd++] = x->shape[d];
        else if (keepdim)
            oshape[nd++] = 1;
    }
    *ondim = nd;
    *nout = shape_numel(nd, oshape);
    int64_t n = sp_tensor_numel(x);
    *map = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (*map == NULL)
        return fail(c, "out of memory");
    affine_map(x->ndim, x->shape, coef, *map);
    return 1;
}

/* The lanes of x along dim: one group per position of the other dims, members in order. */
int lanes_build(opc_t *c, const sp_tensor_t *x, int dim, groups_t *g)
{
    int mask[SP_MAX_DIMS] = {0}, ond;
    int64_t osh[SP_MAX_DIMS], *map, nout;
    if (x->ndim > 0)
        mask[dim] = 1;
    if (!reduce_map(c, x, mask, 0, &ond, osh, &map, &nout))
        return 0;
    int ok = groups_build(g, map, sp_tensor_numel(x), nout);
    flint_free(map);
    return ok ? 1 : fail(c, "out of memory");
}

/* The dim attribute of a lane operator (softmax, ...), normalized. */
int lane_dim(opc_t *c, const sp_tensor_t *x, int *dim)
{
    int64_t d;
    if (!attr_int(c, "dim", -1, &d, NULL))
        return 0;
    return norm_dim(c, d, x->ndim, dim);
}
