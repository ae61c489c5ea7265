/* mesh.c: device meshes, layouts and the exact semantics of collectives. */
#include <flint/flint.h>
#include "mesh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sp_mesh_axis(const sp_mesh_t *m, const char *name)
{
    for (int i = 0; i < m->naxes; i++)
        if (strcmp(m->name[i], name) == 0)
            return i;
    return -1;
}

static int64_t axis_stride(const sp_mesh_t *m, int axis)
{
    int64_t s = 1;
    for (int i = m->naxes - 1; i > axis; i--)
        s *= m->size[i];
    return s;
}

int64_t sp_mesh_coord(const sp_mesh_t *m, int64_t rank, int axis)
{
    return (rank / axis_stride(m, axis)) % m->size[axis];
}

int64_t sp_mesh_with_coord(const sp_mesh_t *m, int64_t rank, int axis, int64_t c)
{
    int64_t s = axis_stride(m, axis);
    return rank + (c - sp_mesh_coord(m, rank, axis)) * s;
}

void sp_mesh_rank_str(const sp_mesh_t *m, int64_t rank, char *buf, size_t len)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "(");
    for (int i = 0; i < m->naxes && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s=%lld", i ? ", " : "", m->name[i],
                              (long long)sp_mesh_coord(m, rank, i));
    if (k < len)
        snprintf(buf + k, len - k, ")");
}

int64_t sp_axes_count(const sp_mesh_t *m, const sp_axes_t *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->n; i++)
        n *= m->size[a->axis[i]];
    return n;
}

int64_t sp_axes_real_count(const sp_mesh_t *m, const sp_axes_t *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->n; i++)
        n *= m->real[a->axis[i]] > 0 ? m->real[a->axis[i]] : m->size[a->axis[i]];
    return n;
}

int sp_axes_cut(const sp_mesh_t *m, const sp_axes_t *a)
{
    for (int i = 0; i < a->n; i++)
        if (m->real[a->axis[i]] > 0 && m->real[a->axis[i]] != m->size[a->axis[i]])
            return 1;
    return 0;
}

int64_t sp_axes_index(const sp_mesh_t *m, const sp_axes_t *a, int64_t rank)
{
    int64_t k = 0;
    for (int i = 0; i < a->n; i++)
        k = k * m->size[a->axis[i]] + sp_mesh_coord(m, rank, a->axis[i]);
    return k;
}

int64_t sp_axes_member(const sp_mesh_t *m, const sp_axes_t *a, int64_t rank, int64_t k)
{
    int64_t r = rank;
    for (int i = a->n - 1; i >= 0; i--) {
        int64_t s = m->size[a->axis[i]];
        r = sp_mesh_with_coord(m, r, a->axis[i], k % s);
        k /= s;
    }
    return r;
}

static const char *const red_names[] = {"sum", "avg", "max", "min"};

int sp_red_parse(const char *s, sp_red_t *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, red_names[i]) == 0) {
            *out = (sp_red_t)i;
            return 1;
        }
    if (strcmp(s, "mean") == 0) {
        *out = SP_RED_AVG;
        return 1;
    }
    return 0;
}

const char *sp_red_name(sp_red_t r) { return red_names[r]; }

/* ---- layouts ---------------------------------------------------------------------------- */

void sp_layout_init(sp_layout_t *L) { memset(L, 0, sizeof(*L)); }

void sp_layout_clear(sp_layout_t *L)
{
    for (int d = 0; d < SP_MAX_DIMS; d++)
        flint_free(L->split[d]);
    memset(L, 0, sizeof(*L));
}

void sp_layout_copy(sp_layout_t *dst, const sp_layout_t *src)
{
    *dst = *src;
    for (int d = 0; d < SP_MAX_DIMS; d++) {
        dst->split[d] = NULL;
        if (src->split[d]) {
            dst->split[d] = flint_malloc((size_t)src->nsplit[d] * sizeof(int64_t));
            memcpy(dst->split[d], src->split[d], (size_t)src->nsplit[d] * sizeof(int64_t));
        }
    }
}

void sp_layout_range(const sp_mesh_t *m, const sp_layout_t *L, int d, int64_t rank, int64_t *start,
                     int64_t *end)
{
    const sp_axes_t *a = &L->axes[d];
    if (a->n == 0) {
        *start = 0;
        *end = L->size[d];
        return;
    }
    int64_t n = sp_axes_count(m, a), k = sp_axes_index(m, a, rank);
    if (L->split[d]) {
        int64_t s = 0;
        for (int64_t i = 0; i < k; i++)
            s += L->split[d][i];
        *start = s;
        *end = s + L->split[d][k];
        return;
    }
    int64_t c = (L->size[d] + n - 1) / n; /* torch.chunk: ceil */
    int64_t s = k * c, e = s + c;
    if (s > L->size[d])
        s = L->size[d];
    if (e > L->size[d])
        e = L->size[d];
    *start = s;
    *end = e;
}

void sp_layout_local_shape(const sp_mesh_t *m, const sp_layout_t *L, int64_t rank, int64_t *shape)
{
    for (int d = 0; d < L->ndim; d++) {
        int64_t s, e;
        sp_layout_range(m, L, d, rank, &s, &e);
        shape[d] = e - s;
    }
}

static void strides(const sp_tensor_t *t, int64_t *st)
{
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->shape[d];
    }
}

/*
 * Move the elements of the box of `big` that starts at off[] and has the shape of `small`:
 * into small (extract = 1) or from small into big (extract = 0).
 */
static void box_move(sp_tensor_t *big, sp_tensor_t *small, const int64_t *off, int extract)
{
    int64_t st[SP_MAX_DIMS], idx[SP_MAX_DIMS] = {0};
    strides(big, st);
    int64_t n = sp_tensor_numel(small);
    for (int64_t i = 0; i < n; i++) {
        int64_t p = 0;
        for (int d = 0; d < small->ndim; d++)
            p += (idx[d] + off[d]) * st[d];
        if (extract)
            small->v[i] = big->v[p];
        else
            big->v[p] = small->v[i];
        for (int d = small->ndim - 1; d >= 0; d--) {
            if (++idx[d] < small->shape[d])
                break;
            idx[d] = 0;
        }
    }
}

static void copy_box(sp_tensor_t *dst, const sp_tensor_t *src, const int64_t *off)
{
    box_move((sp_tensor_t *)src, dst, off, 1); /* src is only read */
    sp_masks_join(dst, src); /* the masks it may compose (src/ops.c mask_count) */
}

static void place_box(sp_tensor_t *dst, const sp_tensor_t *src, const int64_t *off)
{
    box_move(dst, (sp_tensor_t *)src, off, 0); /* src is only read */
    sp_masks_join(dst, src); /* pieces side by side: as a concatenation (src/ops.c mask_count) */
}

int sp_layout_project(const sp_mesh_t *m, const sp_layout_t *L, int64_t rank,
                      const sp_tensor_t *full, sp_tensor_t *local)
{
    int64_t shape[SP_MAX_DIMS], off[SP_MAX_DIMS];
    for (int d = 0; d < L->ndim; d++) {
        int64_t s, e;
        sp_layout_range(m, L, d, rank, &s, &e);
        off[d] = s;
        shape[d] = e - s;
    }
    if (!sp_tensor_alloc(local, L->ndim, shape))
        return 0;
    copy_box(local, full, off);
    return 1;
}

/* ---- collectives -------------------------------------------------------------------------- */

/* Do a and b have the same rank and the same sizes but (perhaps) in dim d? */
static int same_off_dim(const sp_tensor_t *a, const sp_tensor_t *b, int d)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int e = 0; e < a->ndim; e++)
        if (e != d && a->shape[e] != b->shape[e])
            return 0;
    return 1;
}

static void errf(sp_op_err_t *err, const char *fmt, const char *a, long long x, long long y)
{
    snprintf(err->msg, sizeof err->msg, fmt, a, x, y);
}

/* The sum of args[0..n) when they are a whole decomposition, args[n-1] = w - args[0] - ... -
   args[n-2] (src/plan.c distribute: the last member's part): w, an identity at every size;
   SP_EXPR_NONE otherwise */
static sp_expr_t whole_decomposition(sp_ectx_t E, const sp_expr_t *args, int64_t n)
{
    sp_expr_t cur = args[n - 1];
    for (int64_t j = n - 2; j >= 0; j--) {
        if (sp_expr_op(E, cur) != SP_OP_SUB || sp_expr_arg(E, cur, 1) != args[j])
            return SP_EXPR_NONE;
        cur = sp_expr_arg(E, cur, 0);
    }
    return n >= 2 ? cur : SP_EXPR_NONE;
}

/* The sum of a group's values: over a cut axis a sum over an axis (the count test's, SP_NODE_AXSUM) */
static sp_expr_t group_sum(sp_ectx_t E, sp_expr_t *args, int64_t n, int cut)
{
    if (!cut)
        return sp_expr_nary(E, SP_OP_ADD, args, (uint32_t)n);
    sp_expr_t w = whole_decomposition(E, args, n);
    if (w != SP_EXPR_NONE)
        return w;
    sp_expr_t r = sp_expr_nary(E, SP_OP_ADD, args, (uint32_t)n);
    sp_expr_mark_axsum(E, r);
    return r;
}

int sp_reduce_tensors(sp_ectx_t E, sp_red_t op, const sp_tensor_t *const *t, int64_t n,
                      int64_t nreal, int cut, sp_tensor_t *out, sp_op_err_t *err)
{
    for (int64_t i = 1; i < n; i++)
        if (!sp_tensor_same_shape(t[0], t[i])) {
            char a[128], b[128];
            sp_tensor_shape_str(t[0], a, sizeof a);
            sp_tensor_shape_str(t[i], b, sizeof b);
            snprintf(err->msg, sizeof err->msg, "ranks hold different shapes: %s and %s", a, b);
            return 0;
        }
    if (!sp_tensor_alloc(out, t[0]->ndim, t[0]->shape)) {
        snprintf(err->msg, sizeof err->msg, "tensor too large");
        return 0;
    }
    int64_t numel = sp_tensor_numel(out);
    sp_expr_t *args = flint_malloc((size_t)(n ? n : 1) * sizeof(sp_expr_t));
    for (int64_t i = 0; i < numel; i++) {
        for (int64_t k = 0; k < n; k++)
            args[k] = t[k]->v[i];
        switch (op) {
        case SP_RED_SUM:
            out->v[i] = group_sum(E, args, n, cut);
            break;
        case SP_RED_AVG: /* over the group's real size: a size used as a value */
            out->v[i] = sp_expr_div(E, group_sum(E, args, n, cut), sp_expr_const_si(E, nreal, 1));
            break;
        case SP_RED_MAX:
        case SP_RED_MIN: {
            /* the max of copies of one value is that value (a pending max's parts are copies:
               src/plan.c distribute), not an atom of it, which src/members.c would take as
               holding no element (the plan-level fuzzer, seed 4100, mutant 1149) */
            int64_t k = 1;
            while (k < n && args[k] == args[0])
                k++;
            out->v[i] = k == n ? args[0]
                               : sp_expr_nary(E, op == SP_RED_MAX ? SP_OP_MAX : SP_OP_MIN, args,
                                              (uint32_t)n);
            break;
        }
        }
    }
    flint_free(args);
    /* the members' values at one position combined, as by an elementwise operator (a
       member's value may hold its pattern on other axes: src/ops.c mask_count) */
    for (int64_t k = 0; k < n; k++)
        sp_masks_join(out, t[k]);
    for (int64_t k = 0; k < n; k++) /* every member's positions (src/ops_pos.c) */
        for (int d = 0; d < out->ndim; d++) {
            sp_pos_union(&out->pos[d], &t[k]->pos[d]);
            if (k == 0)
                out->pos[d].ext = t[0]->pos[d].ext;
            else if (out->pos[d].ext != t[k]->pos[d].ext)
                out->pos[d].ext = 0;
        }
    return 1;
}

/* Gather the group of rank r in order; 0 (with a message) if a member does not participate. */
static int group(const sp_mesh_t *m, const sp_axes_t *a, int64_t r, const sp_tensor_t *in,
                 const sp_tensor_t **g, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    for (int64_t k = 0; k < n; k++) {
        int64_t q = sp_axes_member(m, a, r, k);
        if (in[q].ndim < 0) {
            char rs[128], qs[128];
            sp_mesh_rank_str(m, r, rs, sizeof rs);
            sp_mesh_rank_str(m, q, qs, sizeof qs);
            snprintf(err->msg, sizeof err->msg,
                     "collective on rank %s needs rank %s, which does not take part", rs, qs);
            return 0;
        }
        g[k] = &in[q];
    }
    return 1;
}

int sp_coll_all_reduce(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, sp_red_t op,
                       const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    const sp_tensor_t **g = flint_malloc((size_t)n * sizeof(*g));
    uint8_t *done = flint_calloc((size_t)m->nranks, 1);
    int ok = 1;
    for (int64_t r = 0; r < m->nranks && ok; r++) {
        if (in[r].ndim < 0)
            continue;
        /* every member of a group gets the same sum: computed once, at the group's first member */
        int64_t q0 = sp_axes_member(m, a, r, 0);
        if (q0 != r && done[q0]) {
            sp_tensor_copy(&out[r], &out[q0]);
            continue;
        }
        ok = group(m, a, r, in, g, err) &&
             sp_reduce_tensors(E, op, g, n, sp_axes_real_count(m, a), sp_axes_cut(m, a), &out[r],
                               err);
        done[r] = (uint8_t)ok;
    }
    flint_free(done);
    flint_free(g);
    return ok;
}

static int norm_dim(int dim, int ndim, sp_op_err_t *err, const char *what)
{
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim) {
        errf(err, "%s: dim %lld out of range for a %lld-d tensor", what, dim, ndim);
        return -1;
    }
    return d;
}

int sp_coll_all_gather(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int dim,
                       const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    const sp_tensor_t **g = flint_malloc((size_t)n * sizeof(*g));
    int ok = 1;
    for (int64_t r = 0; r < m->nranks && ok; r++) {
        if (in[r].ndim < 0)
            continue;
        ok = group(m, a, r, in, g, err);
        int d = ok ? norm_dim(dim, in[r].ndim, err, "all_gather") : -1;
        if (d < 0) {
            ok = 0;
            break;
        }
        int64_t shape[SP_MAX_DIMS];
        memcpy(shape, g[0]->shape, sizeof shape);
        shape[d] = 0;
        for (int64_t k = 0; k < n && ok; k++) {
            if (g[k]->ndim != g[0]->ndim) {
                snprintf(err->msg, sizeof err->msg, "all_gather: ranks hold tensors of different rank");
                ok = 0;
            } else if (!same_off_dim(g[k], g[0], d)) {
                snprintf(err->msg, sizeof err->msg,
                         "all_gather: ranks hold shapes that differ off the gathered dim");
                ok = 0;
            }
            shape[d] += g[k]->shape[d];
            if (g[k]->shape[d] != g[0]->shape[d])
                err->clamped = SP_CLAMP_SUM; /* unequal members: the extent is a sum of sizes */
        }
        if (!ok || !sp_tensor_alloc(&out[r], g[0]->ndim, shape)) {
            if (ok)
                snprintf(err->msg, sizeof err->msg, "tensor too large");
            ok = 0;
            break;
        }
        int64_t off[SP_MAX_DIMS] = {0};
        for (int64_t k = 0; k < n; k++) {
            place_box(&out[r], g[k], off);
            off[d] += g[k]->shape[d];
        }
        sp_pos_report(err, sp_pos_concat(&out[r], g, n <= 1 << 30 ? (int)n : -1, d));
    }
    flint_free(g);
    return ok;
}

/* chunk k of n along dim d (torch.chunk); 0 if not divisible (NCCL needs equal chunks) */
static int even_chunk(const sp_tensor_t *t, int d, int64_t n, int64_t k, sp_tensor_t *out,
                      sp_op_err_t *err, const char *what)
{
    if (t->shape[d] % n != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: dim %d of size %lld is not divisible by %lld ranks",
                 what, d, (long long)t->shape[d], (long long)n);
        err->div_size = t->shape[d];
        err->div_by = n;
        return 0;
    }
    int64_t shape[SP_MAX_DIMS], off[SP_MAX_DIMS] = {0};
    memcpy(shape, t->shape, sizeof shape);
    shape[d] = t->shape[d] / n;
    off[d] = k * shape[d];
    if (!sp_tensor_alloc(out, t->ndim, shape)) {
        snprintf(err->msg, sizeof err->msg, "tensor too large");
        return 0;
    }
    copy_box(out, t, off);
    sp_pos_report(err, sp_pos_piece(out, t, d, k));
    return 1;
}

int sp_coll_reduce_scatter(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int dim,
                           sp_red_t op, const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    const sp_tensor_t **g = flint_malloc((size_t)n * sizeof(*g));
    /* the group's sum, computed at its first member and kept until every member took its chunk */
    sp_tensor_t *red = flint_malloc((size_t)m->nranks * sizeof(sp_tensor_t));
    int64_t *left = flint_calloc((size_t)m->nranks, sizeof(int64_t));
    for (int64_t r = 0; r < m->nranks; r++)
        sp_tensor_init(&red[r]);
    int ok = 1;
    for (int64_t r = 0; r < m->nranks && ok; r++) {
        if (in[r].ndim < 0)
            continue;
        int64_t q0 = sp_axes_member(m, a, r, 0), q = r;
        if (q0 != r && left[q0] > 0) {
            q = q0;
        } else {
            ok = group(m, a, r, in, g, err) &&
                 sp_reduce_tensors(E, op, g, n, sp_axes_real_count(m, a), sp_axes_cut(m, a),
                                   &red[r], err);
            left[r] = n;
        }
        int d = ok ? norm_dim(dim, red[q].ndim, err, "reduce_scatter") : -1;
        ok = d >= 0 && even_chunk(&red[q], d, n, sp_axes_index(m, a, r), &out[r], err,
                                  "reduce_scatter");
        if (--left[q] <= 0)
            sp_tensor_clear(&red[q]);
    }
    for (int64_t r = 0; r < m->nranks; r++)
        sp_tensor_clear(&red[r]);
    flint_free(red);
    flint_free(left);
    flint_free(g);
    return ok;
}

int sp_coll_all_to_all(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int split_dim,
                       int concat_dim, const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    const sp_tensor_t **g = flint_malloc((size_t)n * sizeof(*g));
    sp_tensor_t *parts = flint_malloc((size_t)n * sizeof(sp_tensor_t));
    int ok = 1;
    for (int64_t r = 0; r < m->nranks && ok; r++) {
        if (in[r].ndim < 0)
            continue;
        ok = group(m, a, r, in, g, err);
        int sd = ok ? norm_dim(split_dim, in[r].ndim, err, "all_to_all") : -1;
        int cd = sd >= 0 ? norm_dim(concat_dim, in[r].ndim, err, "all_to_all") : -1;
        if (cd < 0) {
            ok = 0;
            break;
        }
        int64_t k = sp_axes_index(m, a, r);
        int64_t got = 0;
        for (int64_t j = 0; j < n && ok; j++) {
            sp_tensor_init(&parts[j]);
            ok = even_chunk(g[j], sd, n, k, &parts[j], err, "all_to_all");
            got = j + 1;
        }
        /* the members' chunks are laid side by side along the concat dim: every other dim
           must agree (members of different shapes, an uneven layout `K@tp{2,3}`) */
        for (int64_t j = 1; j < n && ok; j++) {
            if (!same_off_dim(&parts[j], &parts[0], cd)) {
                char a0[128], aj[128];
                sp_tensor_shape_str(&parts[0], a0, sizeof a0);
                sp_tensor_shape_str(&parts[j], aj, sizeof aj);
                snprintf(err->msg, sizeof err->msg,
                         "all_to_all: the members' chunks have shapes %s and %s, which differ off "
                         "the concat dim %d", a0, aj, cd);
                ok = 0;
            }
        }
        if (ok) {
            int64_t shape[SP_MAX_DIMS], off[SP_MAX_DIMS] = {0};
            memcpy(shape, parts[0].shape, sizeof shape);
            shape[cd] = 0;
            for (int64_t j = 0; j < n; j++) {
                shape[cd] += parts[j].shape[cd];
                if (parts[j].shape[cd] != parts[0].shape[cd])
                    err->clamped = SP_CLAMP_SUM; /* unequal chunks: the extent is a sum of sizes */
            }
            if (!sp_tensor_alloc(&out[r], parts[0].ndim, shape)) {
                snprintf(err->msg, sizeof err->msg, "tensor too large");
                ok = 0;
            }
            for (int64_t j = 0; j < n && ok; j++) {
                place_box(&out[r], &parts[j], off);
                off[cd] += parts[j].shape[cd];
            }
            const sp_tensor_t **pp = ok ? flint_malloc((size_t)n * sizeof(*pp)) : NULL;
            for (int64_t j = 0; pp && j < n; j++)
                pp[j] = &parts[j];
            if (pp)
                sp_pos_report(err, sp_pos_concat(&out[r], pp, n <= 1 << 30 ? (int)n : -1, cd));
            flint_free(pp);
        }
        for (int64_t j = 0; j < got; j++)
            sp_tensor_clear(&parts[j]);
    }
    flint_free(parts);
    flint_free(g);
    return ok;
}

int sp_coll_broadcast(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, int64_t root,
                      const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    if (root < 0 || root >= n) {
        errf(err, "%s: root %lld out of range for a group of %lld ranks", "broadcast", root, n);
        return 0;
    }
    const sp_tensor_t **g = flint_malloc((size_t)n * sizeof(*g));
    int ok = 1;
    for (int64_t r = 0; r < m->nranks && ok; r++) {
        if (in[r].ndim < 0)
            continue;
        ok = group(m, a, r, in, g, err);
        if (ok)
            sp_tensor_copy(&out[r], g[root]);
    }
    flint_free(g);
    return ok;
}

int sp_coll_reduce(sp_ectx_t E, const sp_mesh_t *m, const sp_axes_t *a, sp_red_t op, int64_t root,
                   const sp_tensor_t *in, sp_tensor_t *out, sp_op_err_t *err)
{
    int64_t n = sp_axes_count(m, a);
    if (root < 0 || root >= n) {
        errf(err, "%s: root %lld out of range for a group of %lld ranks", "reduce", root, n);
        return 0;
    }
    const sp_tensor_t **g = flint_malloc((size_t)n * sizeof(*g));
    int ok = 1;
    for (int64_t r = 0; r < m->nranks && ok; r++) {
        if (in[r].ndim < 0)
            continue;
        ok = group(m, a, r, in, g, err);
        if (!ok)
            break;
        /* NCCL writes the result on the root only; other ranks keep their input */
        if (sp_axes_index(m, a, r) == root)
            ok = sp_reduce_tensors(E, op, g, n, sp_axes_real_count(m, a), sp_axes_cut(m, a),
                                   &out[r], err);
        else
            sp_tensor_copy(&out[r], &in[r]);
    }
    flint_free(g);
    return ok;
}
