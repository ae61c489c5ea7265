/* ops_nn.c: the network tensor operators: matmul, embedding, rope, attention, topk_mask, with
 * their VJP rules. */
#include <flint/flint.h>
#include "ops_int.h"
#include "memo.h"

#include <string.h>

/* ---- matmul, embedding -------------------------------------------------------------------- */

typedef struct {
    int64_t n, k, m;
    int bnd;
    int64_t bshape[SP_MAX_DIMS];
    int64_t nb, na_b, nb_b; /* output, a and b batch counts */
    int64_t *amap, *bmap;   /* output batch -> a / b batch */
    int ondim;
    int64_t oshape[SP_MAX_DIMS];
} mm_t;

static void mm_clear(mm_t *m)
{
    flint_free(m->amap);
    flint_free(m->bmap);
}

static int mm_setup(opc_t *c, const sp_tensor_t *a, const sp_tensor_t *b, mm_t *mm)
{
    memset(mm, 0, sizeof(*mm));
    if (a->ndim < 1 || b->ndim < 1)
        return fail(c, "arguments must be at least 1-d, got %s and %s", TS(a).s, TS(b).s);
    int abn = a->ndim >= 2 ? a->ndim - 2 : 0, bbn = b->ndim >= 2 ? b->ndim - 2 : 0;
    mm->n = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    mm->k = a->shape[a->ndim - 1];
    int64_t kb = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    mm->m = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    if (mm->k != kb)
        return fail(c, "inner dimensions differ: %s and %s", TS(a).s, TS(b).s);
    if (!bcast_shape(abn, a->shape, bbn, b->shape, &mm->bnd, mm->bshape))
        return fail(c, "batch dimensions %s and %s cannot be broadcast", SH(abn, a->shape).s,
                    SH(bbn, b->shape).s);
    mm->nb = shape_numel(mm->bnd, mm->bshape);
    mm->na_b = shape_numel(abn, a->shape);
    mm->nb_b = shape_numel(bbn, b->shape);
    mm->ondim = mm->bnd;
    memcpy(mm->oshape, mm->bshape, sizeof(mm->oshape));
    if (a->ndim >= 2)
        mm->oshape[mm->ondim++] = mm->n;
    if (b->ndim >= 2)
        mm->oshape[mm->ondim++] = mm->m;
    mm->amap = bcast_map(abn, a->shape, mm->bnd, mm->bshape);
    mm->bmap = bcast_map(bbn, b->shape, mm->bnd, mm->bshape);
    if (mm->amap == NULL || mm->bmap == NULL)
        return fail(c, "out of memory");
    return 1;
}

static int mm_forward(opc_t *c, const mm_t *mm, const sp_tensor_t *a, const sp_tensor_t *b,
                      sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    if (!out_alloc(c, out, mm->ondim, mm->oshape))
        return 0;
    sp_expr_t *tmp = scratch(c, 2 * mm->k); /* the terms' two factors: [0, k) and [k, 2k) */
    if (tmp == NULL)
        return 0;
    int64_t n = mm->n, k = mm->k, m = mm->m;
    /* a trace's uniform operands: every element is the first (ops_int.h trace_uniform) */
    int once = trace_uniform(c, a) && trace_uniform(c, b);
    for (int64_t ob = 0; ob < mm->nb; ob++) {
        const sp_expr_t *A = a->v + mm->amap[ob] * n * k, *B = b->v + mm->bmap[ob] * k * m;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) {
                if (once && (ob | i | j))
                    continue;
                pairs(tmp, tmp + k, A + i * k, 1, B + j, m, k);
                out->v[(ob * n + i) * m + j] = sp_expr_dot(E, tmp, tmp + k, (uint32_t)k);
            }
    }
    if (once)
        trace_repeat(out->v, 1, mm->nb * n * m);
    flint_free(tmp);
    return 1;
}

/* da (if non-NULL) and db (if non-NULL) of out = a @ b with out-gradient dy. */
static int mm_backward(opc_t *c, const mm_t *mm, const sp_tensor_t *a, const sp_tensor_t *b,
                       const sp_tensor_t *dy, sp_tensor_t *da, sp_tensor_t *db)
{
    sp_ectx_struct *E = c->E;
    int64_t n = mm->n, k = mm->k, m = mm->m;
    groups_t ga, gb;
    memset(&ga, 0, sizeof(ga));
    memset(&gb, 0, sizeof(gb));
    int ok = groups_build(&ga, mm->amap, mm->nb, mm->na_b) &&
             groups_build(&gb, mm->bmap, mm->nb, mm->nb_b);
    if (!ok)
        fail(c, "out of memory");
    int64_t most = (mm->nb + 1) * (n > m ? n : m);
    sp_expr_t *tmp = ok ? scratch(c, 2 * most) : NULL; /* factors: [0, most), [most, 2 most) */
    ok = ok && tmp != NULL;
    if (ok && da)
        ok = sp_tensor_alloc(da, a->ndim, a->shape) ? 1 : fail(c, "out of memory");
    if (ok && db)
        ok = sp_tensor_alloc(db, b->ndim, b->shape) ? 1 : fail(c, "out of memory");
    /* a trace's uniform operands: in a batch, every element is its first */
    int once = trace_uniform(c, a) && trace_uniform(c, b) && trace_uniform(c, dy);
    /* da[ab, i, l] = sum over ob of batch ab, j: dy[ob, i, j] b[bb(ob), l, j] */
    for (int64_t ab = 0; ok && da && ab < mm->na_b; ab++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t l = 0; l < k; l++) {
                if (once && (i | l))
                    continue;
                int64_t t = 0;
                for (int64_t q = ga.start[ab]; q < ga.start[ab + 1]; q++) {
                    int64_t ob = ga.idx[q];
                    const sp_expr_t *B = b->v + mm->bmap[ob] * k * m;
                    pairs(tmp + t, tmp + most + t, dy->v + (ob * n + i) * m, 1, B + l * m, 1, m);
                    t += m;
                }
                da->v[(ab * n + i) * k + l] = sp_expr_dot(E, tmp, tmp + most, (uint32_t)t);
            }
        if (once)
            trace_repeat(da->v + ab * n * k, 1, n * k);
    }
    /* db[bb, l, j] = sum over ob of batch bb, i: a[ab(ob), i, l] dy[ob, i, j] */
    for (int64_t bb = 0; ok && db && bb < mm->nb_b; bb++) {
        for (int64_t l = 0; l < k; l++)
            for (int64_t j = 0; j < m; j++) {
                if (once && (l | j))
                    continue;
                int64_t t = 0;
                for (int64_t q = gb.start[bb]; q < gb.start[bb + 1]; q++) {
                    int64_t ob = gb.idx[q];
                    const sp_expr_t *A = a->v + mm->amap[ob] * n * k;
                    pairs(tmp + t, tmp + most + t, A + l, k, dy->v + ob * n * m + j, m, n);
                    t += n;
                }
                db->v[(bb * k + l) * m + j] = sp_expr_dot(E, tmp, tmp + most, (uint32_t)t);
            }
        if (once)
            trace_repeat(db->v + bb * k * m, 1, k * m);
    }
    flint_free(tmp);
    groups_clear(&ga);
    groups_clear(&gb);
    return ok;
}

int fwd_matmul(opc_t *c, sp_tensor_t *out)
{
    mm_t mm;
    int ok = mm_setup(c, &c->in[0], &c->in[1], &mm) &&
             mm_forward(c, &mm, &c->in[0], &c->in[1], out);
    mm_clear(&mm);
    return ok;
}

int vjp_matmul(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    mm_t mm;
    int ok = mm_setup(c, &c->in[0], &c->in[1], &mm) && dy_fits(c, dy, mm.ondim, mm.oshape) &&
             mm_backward(c, &mm, &c->in[0], &c->in[1], dy, wanted(c, 0) ? &din[0] : NULL,
                         wanted(c, 1) ? &din[1] : NULL);
    mm_clear(&mm);
    return ok;
}

static int emb_check(opc_t *c)
{
    const sp_tensor_t *table = &c->in[c->nin - 1];
    if (table->ndim != 2)
        return fail(c, "table must be 2-d [V, H], got %s", TS(table).s);
    if (c->nin == 2) {
        const sp_tensor_t *oh = &c->in[0];
        if (oh->ndim < 1 || oh->shape[oh->ndim - 1] != table->shape[0])
            return fail(c, "one-hot shape %s does not match %lld table rows", TS(oh).s,
                        (long long)table->shape[0]);
        if (get_attr(c, "ids") != NULL || get_attr(c, "shape") != NULL)
            return fail(c, "ids and shape are for the form embedding(table, ids=[..])");
    }
    return 1;
}

/* embedding(table, ids=[..], shape=[..]) as a gather of rows. */
int g_embedding_ids(opc_t *c, gather_t *g)
{
    const sp_tensor_t *table = &c->in[0];
    int64_t one, one2;
    const int64_t *ids, *sh;
    int n, ns, present, spresent;
    if (!attr_list(c, "ids", &one, &ids, &n, &present) ||
        !attr_list(c, "shape", &one2, &sh, &ns, &spresent))
        return 0;
    if (!present)
        return fail(c, "missing attribute 'ids' (or give a one-hot tensor)");
    int64_t V = table->shape[0], H = table->shape[1], prod = 1;
    if (!spresent) {
        one2 = n;
        sh = &one2;
        ns = 1;
    }
    for (int i = 0; i < ns; i++)
        prod = sh[i] < 0 || sh[i] > NUMEL_LIMIT ? -1 : prod * sh[i];
    if (ns + 1 > SP_MAX_DIMS || prod != n)
        return fail(c, "shape %s does not hold %d ids", SH(ns, sh).s, n);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return fail(c, "id %lld out of range for %lld rows", (long long)ids[i], (long long)V);
    g->ndim = ns + 1;
    memcpy(g->shape, sh, (size_t)ns * sizeof(int64_t));
    g->shape[ns] = H;
    if (!check_numel(c, g->ndim, g->shape))
        return 0;
    g->src = flint_malloc((size_t)(n * H > 0 ? n * H : 1) * sizeof(int64_t));
    if (g->src == NULL)
        return fail(c, "out of memory");
    for (int i = 0; i < n; i++)
        for (int64_t h = 0; h < H; h++)
            g->src[i * H + h] = ids[i] * H + h;
    return 1;
}

int fwd_embedding(opc_t *c, sp_tensor_t *out)
{
    if (!emb_check(c))
        return 0;
    if (c->nin == 1)
        return fwd_gather(c, out);
    return fwd_matmul(c, out);
}

/* The table's gradient (one-hot ids get none); dy's shape is checked here (OPF_VJP_OWN). */
int vjp_embedding(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    if (!emb_check(c))
        return 0;
    if (c->nin == 1) {
        gather_t g;
        memset(&g, 0, sizeof(g));
        int ok = c->def->gather(c, &g) && dy_fits(c, dy, g.ndim, g.shape);
        flint_free(g.src);
        return ok && vjp_gather(c, y, dy, din);
    }
    mm_t mm;
    int ok = mm_setup(c, &c->in[0], &c->in[1], &mm) && dy_fits(c, dy, mm.ondim, mm.oshape) &&
             mm_backward(c, &mm, &c->in[0], &c->in[1], dy, NULL, &din[1]);
    mm_clear(&mm);
    return ok;
}

/* ---- rope ----------------------------------------------------------------------------------- */

/* out_j = x_j C_c(j) + s(j) x_p(j) S_c(j); the inverse (the VJP) is
   dx_j = dy_j C_c(j) + s(p(j)) dy_p(j) S_c(p(j)). */
static int rope_apply(opc_t *c, const sp_tensor_t *x, const sp_tensor_t *cs,
                      const sp_tensor_t *sn, int inverse, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    int inter;
    if (!attr_flag(c, "interleaved", &inter))
        return 0;
    if (x->ndim < 1)
        return fail(c, "x must be at least 1-d");
    int64_t D = x->shape[x->ndim - 1];
    if (D < 2 || D % 2) {
        if (D >= 2 && c->err) { /* src/check.c run_divisible may grow it (an even real size) */
            c->err->div_size = D;
            c->err->div_by = 2;
        }
        return fail(c, "last dimension %lld must be even", (long long)D);
    }
    if (!sp_tensor_same_shape(cs, sn))
        return fail(c, "cos and sin shapes differ: %s and %s", TS(cs).s, TS(sn).s);
    int64_t h = D / 2, cw = cs->ndim > 0 ? cs->shape[cs->ndim - 1] : 0;
    if (cs->ndim < 1 || (cw != h && cw != D))
        return fail(c, "cos shape %s must end in %lld (half of %lld) or %lld", TS(cs).s,
                    (long long)h, (long long)D, (long long)D);
    int full = cw == D;
    int64_t tsh[SP_MAX_DIMS];
    memcpy(tsh, x->shape, sizeof(tsh));
    tsh[x->ndim - 1] = cw;
    if (!can_expand(cs->ndim, cs->shape, x->ndim, tsh))
        return fail(c, "cos shape %s does not broadcast to %s", TS(cs).s, SH(x->ndim, tsh).s);
    int64_t *cmap = bcast_map(cs->ndim, cs->shape, x->ndim, tsh);
    if (cmap == NULL)
        return fail(c, "out of memory");
    if (!out_alloc(c, out, x->ndim, x->shape)) {
        flint_free(cmap);
        return 0;
    }
    int64_t lanes = sp_tensor_numel(x) / D;
    /* a trace's uniform operands: every lane is the first */
    int once = lanes > 1 && trace_uniform(c, x) && trace_uniform(c, cs) && trace_uniform(c, sn);
    for (int64_t L = 0; L < (once ? 1 : lanes); L++)
        for (int64_t j = 0; j < D; j++) {
            int64_t p = inter ? (j ^ 1) : (j < h ? j + h : j - h);
            int64_t sj = inter ? (j % 2 ? 1 : -1) : (j < h ? -1 : 1);
            int64_t sp = -sj; /* s(p(j)) */
            int64_t cj = full ? j : inter ? j / 2 : j % h;
            int64_t cp = full ? p : cj;
            sp_expr_t C = cs->v[cmap[L * cw + cj]];
            sp_expr_t S = sn->v[cmap[L * cw + (inverse ? cp : cj)]];
            sp_expr_t a = sp_expr_mul(E, x->v[L * D + j], C);
            sp_expr_t b = sp_expr_mul(E, x->v[L * D + p], S);
            int64_t sign = inverse ? sp : sj;
            out->v[L * D + j] = sign > 0 ? sp_expr_add(E, a, b) : sp_expr_sub(E, a, b);
        }
    if (once)
        trace_repeat(out->v, D, lanes);
    flint_free(cmap);
    return 1;
}

int fwd_rope(opc_t *c, sp_tensor_t *out)
{
    return rope_apply(c, &c->in[0], &c->in[1], &c->in[2], 0, out);
}

int vjp_rope(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    return rope_apply(c, dy, &c->in[1], &c->in[2], 1, &din[0]);
}

/* rope_grad(dy, cos, sin) */
int fwd_rope_grad(opc_t *c, sp_tensor_t *out)
{
    return rope_apply(c, &c->in[0], &c->in[1], &c->in[2], 1, out);
}

/* ---- attention ------------------------------------------------------------------------------ */

typedef struct {
    const sp_tensor_t *q, *k, *v, *mask;
    int64_t nb, hq, hkv, sq, sk, d, dv, grp;
    sp_expr_t scale;
    int causal;
    int64_t offset;
    int64_t *mmap; /* score element -> mask offset */
    int ondim;
    int64_t oshape[SP_MAX_DIMS];
} att_t;

static int att_setup(opc_t *c, att_t *a)
{
    memset(a, 0, sizeof(*a));
    const sp_tensor_t *q = &c->in[0], *k = &c->in[1], *v = &c->in[2];
    a->q = q;
    a->k = k;
    a->v = v;
    a->mask = c->nin > 3 ? &c->in[3] : NULL;
    int nd = q->ndim;
    if (nd < 2 || k->ndim != nd || v->ndim != nd)
        return fail(c, "q, k and v must have the same number (at least 2) of dimensions, got %s, "
                       "%s and %s", TS(q).s, TS(k).s, TS(v).s);
    int lead = nd >= 3 ? nd - 3 : 0;
    for (int d = 0; d < lead; d++)
        if (k->shape[d] != q->shape[d] || v->shape[d] != q->shape[d])
            return fail(c, "batch dimensions of q, k and v differ: %s, %s and %s", TS(q).s, TS(k).s,
                        TS(v).s);
    a->nb = shape_numel(lead, q->shape);
    a->hq = nd >= 3 ? q->shape[nd - 3] : 1;
    a->hkv = nd >= 3 ? k->shape[nd - 3] : 1;
    a->sq = q->shape[nd - 2];
    a->d = q->shape[nd - 1];
    a->sk = k->shape[nd - 2];
    a->dv = v->shape[nd - 1];
    if (nd >= 3 && v->shape[nd - 3] != a->hkv)
        return fail(c, "k and v head counts differ: %s and %s", TS(k).s, TS(v).s);
    if (k->shape[nd - 1] != a->d)
        return fail(c, "q and k head dimensions differ: %s and %s", TS(q).s, TS(k).s);
    if (v->shape[nd - 2] != a->sk)
        return fail(c, "k and v sequence lengths differ: %s and %s", TS(k).s, TS(v).s);
    if (a->hkv == 0 || a->hq % a->hkv != 0) {
        /* at reduced sizes src/check.c may grow the query heads to a multiple of the
           key/value heads, two or more query heads per group (where the real ones divide) */
        if (c->err) {
            c->err->div_size = a->hq;
            c->err->div_by = a->hkv;
            c->err->div_min = 2;
        }
        return fail(c, "%lld query heads are not a multiple of %lld key/value heads",
                    (long long)a->hq, (long long)a->hkv);
    }
    a->grp = a->hq / a->hkv;
    if (a->grp > 1 && c->err && c->err->clamped == SP_CLAMP_NONE)
        c->err->clamped = SP_CLAMP_GROUP; /* src/exec.c: with literal positions, real sizes */
    fmpq_t s;
    fmpq_init(s);
    int present, ok = attr_num(c, "scale", 1, 1, s, &present);
    /* the default 1/sqrt(D): D the real head dim where it is known (count_const) */
    a->scale = present ? sp_expr_const_fmpq(c->E, s)
                       : sp_expr_unary(c->E, SP_OP_RSQRT,
                                       count_const(c, q, 1u << (nd - 1), a->d, 0));
    fmpq_clear(s);
    if (!ok || !attr_flag(c, "causal", &a->causal) || !attr_int(c, "offset", 0, &a->offset, NULL))
        return 0;
    if (a->d == 0 && !present)
        return fail(c, "head dimension is empty");
    /* an offset that shows every key to every query (or none) is a bound past its dim: at the
       real sizes it may not (the review of 2026-12-04: offset = K kept real, S reduced) */
    if (c->err && a->causal && a->offset != 0 &&
        (a->offset >= a->sk - 1 || a->offset <= -a->sq))
        c->err->clamped = SP_CLAMP_BOUND;
    a->ondim = nd;
    memcpy(a->oshape, q->shape, sizeof(a->oshape));
    a->oshape[nd - 1] = a->dv;
    if (a->mask) {
        int64_t ssh[SP_MAX_DIMS];
        memcpy(ssh, q->shape, sizeof(ssh));
        ssh[nd - 1] = a->sk;
        if (!can_expand(a->mask->ndim, a->mask->shape, nd, ssh))
            return fail(c, "mask shape %s does not broadcast to the scores %s", TS(a->mask).s,
                        SH(nd, ssh).s);
        if ((a->mmap = bcast_map(a->mask->ndim, a->mask->shape, nd, ssh)) == NULL)
            return fail(c, "out of memory");
    }
    return 1;
}

static int att_kept(const att_t *a, int64_t i, int64_t j)
{
    return !a->causal || j <= i + a->offset;
}

/* Under causality the kept keys of query i are j < att_jend(i), and the queries that keep key j
   are i >= att_istart(j): sums over the rest would add only literal zeros. */
static int64_t att_jend(const att_t *a, int64_t i)
{
    int64_t e = a->causal ? i + a->offset + 1 : a->sk;
    return e < 0 ? 0 : e > a->sk ? a->sk : e;
}

static int64_t att_istart(const att_t *a, int64_t j)
{
    int64_t b = a->causal ? j - a->offset : 0;
    return b < 0 ? 0 : b > a->sq ? a->sq : b;
}

/* In a trace whose operands are all uniform (ops_int.h trace_uniform), every head of every
   batch computes what the first computes: the loops over (b, h) compute block 0 only and
   trace_repeat copies it */
static int att_once(opc_t *c, const att_t *a, const sp_tensor_t *dy)
{
    return trace_uniform(c, a->q) && trace_uniform(c, a->k) && trace_uniform(c, a->v) &&
           (a->mask == NULL || trace_uniform(c, a->mask)) && (dy == NULL || trace_uniform(c, dy));
}

/* The probabilities P[b, h, i, j] (0 where masked out by causality), built. */
static int att_probs_built(opc_t *c, const att_t *a, sp_expr_t *P)
{
    sp_ectx_struct *E = c->E;
    int64_t cap = a->d > a->sk ? a->d : a->sk; /* tmp: [0, cap) and the factors' [cap, 2 cap) */
    sp_expr_t *tmp = scratch(c, 2 * cap), *e = tmp ? scratch(c, a->sk) : NULL;
    if (e == NULL) {
        flint_free(tmp);
        return 0;
    }
    int once = att_once(c, a, NULL);
    for (int64_t b = 0; b < a->nb; b++)
        for (int64_t h = 0; h < a->hq; h++) {
            if (once && (b | h))
                continue;
            int64_t g = h / a->grp;
            const sp_expr_t *Q = a->q->v + (b * a->hq + h) * a->sq * a->d;
            const sp_expr_t *Kk = a->k->v + (b * a->hkv + g) * a->sk * a->d;
            for (int64_t i = 0; i < a->sq; i++) {
                int64_t row = ((b * a->hq + h) * a->sq + i) * a->sk, m = 0;
                for (int64_t j = 0; j < a->sk; j++) {
                    if (!att_kept(a, i, j)) {
                        e[j] = SP_EXPR_NONE;
                        continue;
                    }
                    pairs(tmp, tmp + cap, Q + i * a->d, 1, Kk + j * a->d, 1, a->d);
                    sp_expr_t s = mul2(E, a->scale, sp_expr_dot(E, tmp, tmp + cap, (uint32_t)a->d));
                    e[j] = sp_expr_unary(E, SP_OP_EXP, s);
                    if (a->mmap)
                        e[j] = sp_expr_mul(E, e[j], a->mask->v[a->mmap[row + j]]);
                }
                for (int64_t j = 0; j < a->sk; j++)
                    if (att_kept(a, i, j))
                        tmp[m++] = e[j];
                sp_expr_t z = addv(E, tmp, m);
                for (int64_t j = 0; j < a->sk; j++)
                    P[row + j] = att_kept(a, i, j) ? sp_expr_div(E, e[j], z) : K(E, 0, 1);
            }
        }
    if (once)
        trace_repeat(P, a->sq * a->sk, a->nb * a->hq);
    flint_free(tmp);
    flint_free(e);
    return 1;
}

/*
 * The memo key of a's probabilities (memo.h): every word they depend on — q's shape, the head
 * counts, the scale's id, causality and offset, the mask's shape, and the ids of q, k and the
 * mask; with dy, the key of the scores' gradient dS, which adds v's and dy's shapes and ids.
 * NULL if it cannot be allocated (then no memo).
 */
static uint32_t *att_key(const att_t *a, const sp_tensor_t *dy, size_t *n)
{
    int64_t nq = sp_tensor_numel(a->q), nk = sp_tensor_numel(a->k);
    int64_t nm = a->mask ? sp_tensor_numel(a->mask) : 0;
    int64_t nv = dy ? sp_tensor_numel(a->v) : 0, ny = dy ? sp_tensor_numel(dy) : 0;
    size_t len = 20 + 4 * SP_MAX_DIMS + (size_t)(nq + nk + nm + nv + ny);
    uint32_t *w = flint_malloc(len * sizeof(uint32_t)), *p = w;
    if (w == NULL)
        return NULL;
    *p++ = (uint32_t)a->q->ndim;
    for (int d = 0; d < a->q->ndim; d++)
        *p++ = (uint32_t)a->q->shape[d];
    *p++ = (uint32_t)a->hkv;
    *p++ = (uint32_t)a->sk;
    *p++ = a->scale;
    *p++ = (uint32_t)a->causal;
    *p++ = (uint32_t)(uint64_t)a->offset;
    *p++ = (uint32_t)((uint64_t)a->offset >> 32);
    *p++ = a->mask ? (uint32_t)a->mask->ndim + 1 : 0;
    for (int d = 0; a->mask && d < a->mask->ndim; d++)
        *p++ = (uint32_t)a->mask->shape[d];
    memcpy(p, a->q->v, (size_t)nq * sizeof(sp_expr_t));
    p += nq;
    memcpy(p, a->k->v, (size_t)nk * sizeof(sp_expr_t));
    p += nk;
    if (nm)
        memcpy(p, a->mask->v, (size_t)nm * sizeof(sp_expr_t));
    p += nm;
    if (dy != NULL) { /* dS: also v and dy, with their shapes */
        *p++ = (uint32_t)a->v->ndim;
        for (int d = 0; d < a->v->ndim; d++)
            *p++ = (uint32_t)a->v->shape[d];
        *p++ = (uint32_t)dy->ndim;
        for (int d = 0; d < dy->ndim; d++)
            *p++ = (uint32_t)dy->shape[d];
        memcpy(p, a->v->v, (size_t)nv * sizeof(sp_expr_t));
        p += nv;
        memcpy(p, dy->v, (size_t)ny * sizeof(sp_expr_t));
        p += ny;
    }
    *n = (size_t)(p - w);
    return w;
}

#define MEMO_ATT_PROBS 1 /* memo kinds: attention's probabilities, */
#define MEMO_ATT_DS 2    /* and the gradient of its scores */

/* The probabilities P[b, h, i, j] (0 where masked out by causality).  Kept in the store's memo:
   the backward pass (vjp_attention) asks again for the forward pass's. */
static int att_probs(opc_t *c, const att_t *a, sp_expr_t *P)
{
    size_t nkey = 0, ns = (size_t)(a->nb * a->hq * a->sq * a->sk);
    uint32_t *key = att_key(a, NULL, &nkey);
    int ok = sp_memo_copy(c->E, MEMO_ATT_PROBS, key, nkey, P, ns);
    if (!ok && (ok = att_probs_built(c, a, P)) && key)
        sp_memo_put(c->E, MEMO_ATT_PROBS, key, nkey, P, ns);
    flint_free(key);
    return ok;
}

int fwd_attention(opc_t *c, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    att_t a;
    int ok = att_setup(c, &a) && out_alloc(c, out, a.ondim, a.oshape);
    int64_t ns = a.nb * a.hq * a.sq * a.sk;
    sp_expr_t *P = ok ? scratch(c, ns) : NULL, *tmp = P ? scratch(c, 2 * a.sk) : NULL;
    ok = ok && tmp != NULL && att_probs(c, &a, P);
    int once = ok && att_once(c, &a, NULL);
    for (int64_t b = 0; ok && b < a.nb; b++)
        for (int64_t h = 0; h < a.hq; h++) {
            if (once && (b | h))
                continue;
            const sp_expr_t *Vv = a.v->v + (b * a.hkv + h / a.grp) * a.sk * a.dv;
            for (int64_t i = 0; i < a.sq; i++) {
                int64_t row = ((b * a.hq + h) * a.sq + i) * a.sk, je = att_jend(&a, i);
                for (int64_t e = 0; e < a.dv; e++) {
                    pairs(tmp, tmp + a.sk, P + row, 1, Vv + e, a.dv, je);
                    out->v[((b * a.hq + h) * a.sq + i) * a.dv + e] =
                        sp_expr_dot(E, tmp, tmp + a.sk, (uint32_t)je);
                }
            }
        }
    if (once)
        trace_repeat(out->v, a.sq * a.dv, a.nb * a.hq);
    flint_free(P);
    flint_free(tmp);
    flint_free(a.mmap);
    return ok;
}

/* The gradients asked for (c->want) of q, k and v; dy's shape is checked here (OPF_VJP_OWN). */
int vjp_attention(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    sp_ectx_struct *E = c->E;
    att_t a;
    if (!att_setup(c, &a))
        return 0;
    if (!dy_fits(c, dy, a.ondim, a.oshape)) {
        flint_free(a.mmap);
        return 0;
    }
    int wq = wanted(c, 0), wk = wanted(c, 1), wv = wanted(c, 2);
    int64_t ns = a.nb * a.hq * a.sq * a.sk;
    int64_t most = a.grp * a.sq + a.sk + a.d + a.dv + 1;
    sp_expr_t *P = scratch(c, ns), *dS = P && (wq || wk) ? scratch(c, ns) : NULL;
    sp_expr_t *tmp = P && (dS || !(wq || wk)) ? scratch(c, 2 * most) : NULL; /* factors: [0, most), [most, 2 most) */
    int ok = tmp != NULL && att_probs(c, &a, P);
    for (int k = 0; ok && k < 3; k++)
        if (wanted(c, k))
            ok = sp_tensor_alloc(&din[k], c->in[k].ndim, c->in[k].shape) ? 1 : fail(c, "out of memory");
    /* dS is kept in the memo too: attention_grad_q and attention_grad_k (a plan's gradient
       operators, one call each) both need it; its key adds v's and dy's ids to P's */
    size_t nkey = 0;
    uint32_t *key = ok && dS ? att_key(&a, dy, &nkey) : NULL;
    int have = sp_memo_copy(E, MEMO_ATT_DS, key, nkey, dS, (size_t)ns);
    int once = ok && att_once(c, &a, dy);
    /* dP_ij = sum_e dO_ie V_je; dS_ij = P_ij (dP_ij - sum_l P_il dP_il) */
    for (int64_t b = 0; ok && dS && !have && b < a.nb; b++)
        for (int64_t h = 0; h < a.hq; h++) {
            if (once && (b | h))
                continue;
            const sp_expr_t *Vv = a.v->v + (b * a.hkv + h / a.grp) * a.sk * a.dv;
            const sp_expr_t *dO = dy->v + (b * a.hq + h) * a.sq * a.dv;
            for (int64_t i = 0; i < a.sq; i++) {
                int64_t row = ((b * a.hq + h) * a.sq + i) * a.sk, je = att_jend(&a, i);
                for (int64_t j = 0; j < a.sk; j++) {
                    if (!att_kept(&a, i, j)) {
                        dS[row + j] = K(E, 0, 1);
                        continue;
                    }
                    pairs(tmp, tmp + most, dO + i * a.dv, 1, Vv + j * a.dv, 1, a.dv);
                    dS[row + j] = sp_expr_dot(E, tmp, tmp + most, (uint32_t)a.dv); /* dP for now */
                }
                pairs(tmp, tmp + most, P + row, 1, dS + row, 1, je);
                sp_expr_t t = sp_expr_dot(E, tmp, tmp + most, (uint32_t)je);
                for (int64_t j = 0; j < a.sk; j++)
                    dS[row + j] = att_kept(&a, i, j) ? mul2(E, P[row + j], sub2(E, dS[row + j], t))
                                                     : K(E, 0, 1);
            }
        }
    if (ok && once && dS && !have) /* dK and dV below read every head of a group */
        trace_repeat(dS, a.sq * a.sk, a.nb * a.hq);
    if (ok && key != NULL && !have)
        sp_memo_put(E, MEMO_ATT_DS, key, nkey, dS, (size_t)ns);
    flint_free(key);
    /* dQ_il = scale sum_j dS_ij K_jl */
    for (int64_t b = 0; ok && wq && b < a.nb; b++)
        for (int64_t h = 0; h < a.hq; h++) {
            if (once && (b | h))
                continue;
            const sp_expr_t *Kk = a.k->v + (b * a.hkv + h / a.grp) * a.sk * a.d;
            for (int64_t i = 0; i < a.sq; i++) {
                int64_t row = ((b * a.hq + h) * a.sq + i) * a.sk, je = att_jend(&a, i);
                for (int64_t l = 0; l < a.d; l++) {
                    pairs(tmp, tmp + most, dS + row, 1, Kk + l, a.d, je);
                    din[0].v[((b * a.hq + h) * a.sq + i) * a.d + l] =
                        mul2(E, a.scale, sp_expr_dot(E, tmp, tmp + most, (uint32_t)je));
                }
            }
        }
    if (ok && once && wq)
        trace_repeat(din[0].v, a.sq * a.d, a.nb * a.hq);
    /* dK[g, j, l] = scale sum_{h in g, i} dS_ij Q_il;  dV[g, j, e] = sum_{h in g, i} P_ij dO_ie */
    for (int64_t b = 0; ok && (wk || wv) && b < a.nb; b++)
        for (int64_t g = 0; g < a.hkv; g++) {
            if (once && (b | g))
                continue;
            for (int64_t j = 0; j < a.sk; j++) {
                int64_t i0 = att_istart(&a, j), ni = a.sq - i0;
                for (int64_t l = 0; wk && l < a.d; l++) {
                    int64_t t = 0;
                    for (int64_t h = g * a.grp; h < (g + 1) * a.grp; h++) {
                        const sp_expr_t *Q = a.q->v + ((b * a.hq + h) * a.sq + i0) * a.d;
                        pairs(tmp + t, tmp + most + t, dS + ((b * a.hq + h) * a.sq + i0) * a.sk + j,
                              a.sk, Q + l, a.d, ni);
                        t += ni;
                    }
                    din[1].v[((b * a.hkv + g) * a.sk + j) * a.d + l] =
                        mul2(E, a.scale, sp_expr_dot(E, tmp, tmp + most, (uint32_t)t));
                }
                for (int64_t e = 0; wv && e < a.dv; e++) {
                    int64_t t = 0;
                    for (int64_t h = g * a.grp; h < (g + 1) * a.grp; h++) {
                        const sp_expr_t *dO = dy->v + ((b * a.hq + h) * a.sq + i0) * a.dv;
                        pairs(tmp + t, tmp + most + t, P + ((b * a.hq + h) * a.sq + i0) * a.sk + j,
                              a.sk, dO + e, a.dv, ni);
                        t += ni;
                    }
                    din[2].v[((b * a.hkv + g) * a.sk + j) * a.dv + e] =
                        sp_expr_dot(E, tmp, tmp + most, (uint32_t)t);
                }
            }
        }
    if (ok && once && wk)
        trace_repeat(din[1].v, a.sk * a.d, a.nb * a.hkv);
    if (ok && once && wv)
        trace_repeat(din[2].v, a.sk * a.dv, a.nb * a.hkv);
    flint_free(P);
    flint_free(dS);
    flint_free(tmp);
    flint_free(a.mmap);
    return ok;
}

/* ---- topk_mask ------------------------------------------------------------------------------ */

int fwd_topk_mask(opc_t *c, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    const sp_tensor_t *x = &c->in[0];
    int64_t k;
    int dim;
    groups_t g;
    if (!attr_need_int(c, "k", &k) || !lane_dim(c, x, &dim))
        return 0;
    /* k beyond the lane is refused, as torch.topk and the reference executor do: taking it as
       "all" would let a shape reduction that puts k above a size it is below at the real
       sizes pass a mask as all ones (a review's find, 2026-12-04) */
    int64_t lane = x->ndim ? x->shape[dim] : 1;
    if (k < 0 || k > lane) {
        if (c->err && k > lane)
            c->err->clamped = SP_CLAMP_BOUND; /* the lane may be longer at the real sizes */
        return fail(c, "k = %lld out of range [0, %lld]", (long long)k, (long long)lane);
    }
    if (!out_alloc(c, out, x->ndim, x->shape) || !lanes_build(c, x, dim, &g))
        return 0;
    int64_t most = 0, work = 0;
    for (int64_t l = 0; l < g.ng; l++) {
        int64_t n = g.start[l + 1] - g.start[l];
        if (n > most)
            most = n;
        work = n > 0 && work < ((int64_t)1 << 62) / n ? work + n * (n - 1) : (int64_t)1 << 62;
    }
    /* the comparisons are the work, and over ties they fold to constants, so the store does
       not fill: more than 64 per element of --max-elements is the limit's (a lane of 50001 at
       the real sizes compares 2.5e9 pairs; helper-83's probes ran past 300 s) */
    if (c->max_numel > 0 && work > 64 * c->max_numel) {
        groups_clear(&g);
        mark_elements(c);
        return fail(c, "its lanes compare %lld pairs of elements, more than 64 times the limit "
                       "%lld", (long long)work, (long long)c->max_numel);
    }
    sp_expr_t *tmp = scratch(c, most);
    int ok = tmp != NULL;
    /* rank_i = #{j < i: x_j >= x_i} + #{j > i: x_j > x_i}; selected iff rank_i < k.  A lane of
       n costs n * (n - 1) comparisons: the loop stops once the store is full (memory,
       --max-nodes, --timeout: check_built then names it), and reads the run's deadline every
       2^16 comparisons itself (comparisons already in the store add no node, and the store
       reads the clock only as it grows) */
    int64_t pairs = 0;
    for (int64_t l = 0; ok && !E->oom && l < g.ng; l++) {
        int64_t b = g.start[l], n = g.start[l + 1] - b;
        for (int64_t i = 0; i < n && !E->oom; i++) {
            pairs += n;
            if (pairs >= (int64_t)1 << 16) {
                pairs = 0;
                if (sp_ectx_deadline_passed(E))
                    break;
            }
            sp_expr_t xi = x->v[g.idx[b + i]];
            if (k >= n || k == 0) {
                out->v[g.idx[b + i]] = K(E, k >= n ? 1 : 0, 1);
                continue;
            }
            int64_t m = 0;
            for (int64_t j = 0; j < n; j++)
                if (j != i)
                    tmp[m++] = sp_expr_cmp(E, j < i ? SP_CMP_GE : SP_CMP_GT, x->v[g.idx[b + j]], xi);
            /* the rank is a count by definition, compared with k: a selection, whose reduced
               lanes the top-k rule keeps meaningful (k below the lane), not a value */
            out->v[g.idx[b + i]] = sp_expr_cmp(E, SP_CMP_LT, addv_terms(E, tmp, m), K(E, k, 1));
        }
    }
    flint_free(tmp);
    groups_clear(&g);
    return ok;
}
