/* ops_shape.c: the shape tensor operators as gathers (reshape, transpose, slice, chunk, pad,
 * repeat, concat, ...) and their VJP rule. */
#include <flint/flint.h>
#include "ops_int.h"

#include <string.h>

/* ---- shape operators (gathers) -------------------------------------------------------------- */

int check_numel(opc_t *c, int ndim, const int64_t *shape)
{
    if (ndim > SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", ndim, SP_MAX_DIMS);
    int64_t n = shape_numel(ndim, shape);
    if (n < 0)
        return fail_too_large(c, SH(ndim, shape).s);
    if (c->max_numel > 0 && n > c->max_numel)
        return fail_elements(c, SH(ndim, shape).s, n);
    return 1;
}

/* dim d's part of a source offset at output index o: *off, or 0 when it falls outside x */
static int dm_part(const dmap_t *m, int64_t o, int64_t ext, int64_t st, int64_t *off)
{
    int64_t t;
    switch (m->kind) {
    case DM_MOD: t = m->a ? o % m->a : 0; break;
    case DM_DIV: t = m->a ? o / m->a : 0; break;
    case DM_PAD: t = o - m->b; break;
    default: t = m->a * o + m->b;
    }
    *off = t * st;
    return t >= 0 && t < ext;
}

/*
 * src[i] for a gather made by dim maps.  The output index runs as an odometer, and the offset
 * of the dims before d is kept (pre[d], bad[d]: some dim before d falls outside x), so a step
 * recomputes only the dims it changed: no division per element (a third of a --shard trace's
 * gathers was unravelling indices).
 */
static int gather_dims(opc_t *c, const sp_tensor_t *x, gather_t *g, const dmap_t *dm)
{
    if (!check_numel(c, g->ndim, g->shape))
        return 0;
    int nd = g->ndim;
    int64_t n = shape_numel(nd, g->shape), st[SP_MAX_DIMS], idx[SP_MAX_DIMS] = {0};
    int64_t pre[SP_MAX_DIMS + 1];
    int bad[SP_MAX_DIMS + 1];
    strides_of(x->ndim, x->shape, st);
    g->src = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (g->src == NULL)
        return fail(c, "out of memory");
    memcpy(g->dm, dm, (size_t)nd * sizeof(*dm));
    g->ndm = nd;
    pre[0] = 0;
    bad[0] = 0;
    for (int64_t i = 0, from = 0; i < n; i++) {
        for (int d = (int)from; d < nd; d++) {
            int64_t off = 0;
            int ok = dm[d].dim < 0 ||
                     dm_part(&dm[d], idx[d], x->shape[dm[d].dim], st[dm[d].dim], &off);
            pre[d + 1] = pre[d] + off;
            bad[d + 1] = bad[d] || !ok;
        }
        g->src[i] = bad[nd] ? -1 : pre[nd];
        int d = nd - 1;
        while (d >= 0 && ++idx[d] == g->shape[d])
            idx[d--] = 0;
        from = d < 0 ? 0 : d;
    }
    return 1;
}

static void dmap_identity(const sp_tensor_t *x, gather_t *g, dmap_t *dm)
{
    g->ndim = x->ndim;
    memcpy(g->shape, x->shape, sizeof(g->shape));
    for (int d = 0; d < x->ndim; d++)
        dm[d] = (dmap_t){d, DM_AFFINE, 1, 0};
}

/*
 * A reshape's -1 left a remainder: the extents the two shapes share cancel, and where one
 * extent of x is left, it is the size the rest of the new shape must divide.  At reduced sizes
 * src/check.c run_divisible() may grow the dim behind it and run again (a real NH = 20 reduced
 * to 5 in reshape(x, [S, 4, -1, D])).
 */
static void inferred_divisor(opc_t *c, const sp_tensor_t *x, const int64_t *l, int n)
{
    int used[SP_MAX_DIMS] = {0}, left = -1;
    int64_t rest = 1;
    for (int d = 0; d < n; d++) {
        if (l[d] == -1)
            continue;
        int k = 0;
        while (k < x->ndim && (used[k] || x->shape[k] != l[d]))
            k++;
        if (k < x->ndim)
            used[k] = 1;
        else if (__builtin_mul_overflow(rest, l[d], &rest))
            return;
    }
    for (int k = 0; k < x->ndim; k++)
        if (!used[k] && x->shape[k] != 1) {
            if (left >= 0)
                return;
            left = k;
        }
    if (left >= 0 && rest > 1 && c->err) {
        c->err->div_size = x->shape[left];
        c->err->div_by = rest;
    }
}

/*
 * Does the reshape of shape a into shape b only split dims and merge neighbours (each group of
 * consecutive dims of equal product has one dim on one side)?  Otherwise ([B, H] into [H, B]) it
 * reads rows of one size as rows of another: the flat position k*B + p of one is k'*H + p' of
 * the other, an additive relation of sizes that the reduction does not keep, so a program with
 * literal positions is checked at the real sizes (src/exec_pos.c sp_note_clamped).
 */
static int aligned(const int64_t *a, int na, const int64_t *b, int nb)
{
    int i = 0, j = 0;
    while (i < na || j < nb) {
        while (i < na && a[i] == 1)
            i++;
        while (j < nb && b[j] == 1)
            j++;
        if (i == na || j == nb)
            return i == na && j == nb;
        int64_t pa = a[i++], pb = b[j++];
        int ka = 1, kb = 1;
        while (pa != pb) {
            if (pa < pb) {
                if (i == na)
                    return 0;
                pa *= a[i++];
                ka++;
            } else {
                if (j == nb)
                    return 0;
                pb *= b[j++];
                kb++;
            }
            if (pa > ((int64_t)1 << 40) || pb > ((int64_t)1 << 40))
                return 0;
        }
        if (ka > 1 && kb > 1)
            return 0;
    }
    return 1;
}

int g_reshape(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t one;
    const int64_t *l;
    int n, present;
    if (!attr_list(c, "shape", &one, &l, &n, &present))
        return 0;
    if (!present)
        return fail(c, "missing attribute 'shape'");
    if (n > SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", n, SP_MAX_DIMS);
    int infer = -1;
    int64_t prod = 1, total = sp_tensor_numel(x);
    for (int d = 0; d < n; d++) {
        if (l[d] == -1) {
            if (infer >= 0)
                return fail(c, "at most one dimension may be -1");
            infer = d;
        } else if (l[d] < 0) {
            return fail(c, "invalid size %lld", (long long)l[d]);
        } else {
            if (l[d] > NUMEL_LIMIT || (prod *= l[d]) > NUMEL_LIMIT)
                return fail_too_large(c, SH(n, l).s);
        }
    }
    g->ndim = n;
    if (n > 0)
        memcpy(g->shape, l, (size_t)n * sizeof(int64_t));
    int whole = infer >= 0 ? prod != 0 && total % prod == 0 : prod == total;
    if (infer >= 0 && whole)
        g->shape[infer] = total / prod;
    if (whole && !aligned(x->shape, x->ndim, g->shape, n) && c->err &&
        c->err->clamped == SP_CLAMP_NONE)
        c->err->clamped = SP_CLAMP_GROUP; /* with literal positions: the real sizes */
    if (!whole) {
        if (infer >= 0 && prod != 0)
            inferred_divisor(c, x, l, n);
        if (infer < 0 && c->err && c->err->clamped == SP_CLAMP_NONE)
            c->err->clamped = SP_CLAMP_RESHAPE; /* the real sizes decide (src/check.c) */
        return fail(c, "cannot reshape %s (%lld elements) into %s (%lld elements)", TS(x).s,
                    (long long)total, SH(n, l).s, (long long)(infer >= 0 ? -1 : prod));
    }
    return 1;
}

int g_flatten(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t s, e;
    int ds, de;
    if (!attr_int(c, "start", 0, &s, NULL) || !attr_int(c, "end", -1, &e, NULL))
        return 0;
    if (x->ndim == 0) {
        g->ndim = 1;
        g->shape[0] = 1;
        return norm_dim(c, s, 0, &ds) && norm_dim(c, e, 0, &de);
    }
    if (!norm_dim(c, s, x->ndim, &ds) || !norm_dim(c, e, x->ndim, &de))
        return 0;
    if (ds > de)
        return fail(c, "start dimension %d is after end dimension %d", ds, de);
    int nd = 0;
    for (int d = 0; d < ds; d++)
        g->shape[nd++] = x->shape[d];
    int64_t p = 1;
    for (int d = ds; d <= de; d++)
        p *= x->shape[d];
    g->shape[nd++] = p;
    for (int d = de + 1; d < x->ndim; d++)
        g->shape[nd++] = x->shape[d];
    g->ndim = nd;
    return 1;
}

int g_squeeze(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t one;
    const int64_t *l;
    int n, present, drop[SP_MAX_DIMS] = {0};
    if (!attr_list(c, "dim", &one, &l, &n, &present))
        return 0;
    for (int i = 0; i < n; i++) {
        int d;
        if (!norm_dim(c, l[i], x->ndim, &d))
            return 0;
        if (x->ndim > 0 && x->shape[d] == 1)
            drop[d] = 1;
    }
    g->ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!(present ? drop[d] : x->shape[d] == 1))
            g->shape[g->ndim++] = x->shape[d];
    return 1;
}

int g_unsqueeze(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t d;
    if (!attr_need_int(c, "dim", &d))
        return 0;
    if (x->ndim >= SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", x->ndim + 1, SP_MAX_DIMS);
    if (d < -(x->ndim + 1) || d > x->ndim)
        return fail(c, "dimension %lld out of range for a %d-d tensor", (long long)d, x->ndim);
    int at = (int)(d < 0 ? d + x->ndim + 1 : d), nd = 0;
    for (int k = 0; k <= x->ndim; k++) {
        if (k == at)
            g->shape[nd++] = 1;
        if (k < x->ndim)
            g->shape[nd++] = x->shape[k];
    }
    g->ndim = nd;
    return 1;
}

static int g_permute_by(opc_t *c, gather_t *g, const int *perm)
{
    const sp_tensor_t *x = &c->in[0];
    dmap_t dm[SP_MAX_DIMS];
    g->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
        g->shape[d] = x->shape[perm[d]];
        dm[d] = (dmap_t){perm[d], DM_AFFINE, 1, 0};
    }
    return gather_dims(c, x, g, dm);
}

int g_transpose(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t a, b;
    int p[SP_MAX_DIMS], da, db;
    if (!attr_int(c, "dim0", -2, &a, NULL) || !attr_int(c, "dim1", -1, &b, NULL))
        return 0;
    if (x->ndim < 2 && get_attr(c, "dim0") == NULL && get_attr(c, "dim1") == NULL)
        a = b = 0;
    if (!norm_dim(c, a, x->ndim, &da) || !norm_dim(c, b, x->ndim, &db))
        return 0;
    for (int d = 0; d < x->ndim; d++)
        p[d] = d;
    if (x->ndim > 0) {
        p[da] = db;
        p[db] = da;
    }
    return g_permute_by(c, g, p);
}

int g_permute(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t one;
    const int64_t *l;
    int n, present, p[SP_MAX_DIMS], seen[SP_MAX_DIMS] = {0};
    if (!attr_list(c, "dims", &one, &l, &n, &present))
        return 0;
    if (!present)
        return fail(c, "missing attribute 'dims'");
    int ok = n == x->ndim;
    for (int i = 0; ok && i < n; i++) {
        int64_t d = l[i] < 0 ? l[i] + x->ndim : l[i];
        if (d < 0 || d >= x->ndim || seen[d]) {
            ok = 0;
            break;
        }
        seen[d] = 1;
        p[i] = (int)d;
    }
    if (!ok)
        return fail(c, "dims %s are not a permutation of %d dimensions", SH(n, l).s, x->ndim);
    return g_permute_by(c, g, p);
}

int g_expand(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t one;
    const int64_t *l;
    int n, present;
    dmap_t dm[SP_MAX_DIMS];
    if (!attr_list(c, "shape", &one, &l, &n, &present))
        return 0;
    if (!present)
        return fail(c, "missing attribute 'shape'");
    if (n > SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", n, SP_MAX_DIMS);
    int ok = n >= x->ndim;
    g->ndim = n;
    for (int d = 0; ok && d < n; d++) {
        int id = d - (n - x->ndim);
        int64_t t = l[d];
        if (id < 0) {
            ok = t >= 0;
            g->shape[d] = t;
            dm[d] = (dmap_t){-1, DM_AFFINE, 0, 0};
            continue;
        }
        if (t == -1)
            t = x->shape[id];
        ok = t >= 0 && (x->shape[id] == t || x->shape[id] == 1);
        g->shape[d] = t;
        dm[d] = (dmap_t){id, DM_AFFINE, x->shape[id] == 1 ? 0 : 1, 0};
    }
    if (!ok)
        return fail(c, "cannot expand %s to %s", TS(x).s, SH(n, l).s);
    return gather_dims(c, x, g, dm);
}

/* Python slice bounds: negative counts from the end, then clamp to [0, n]. */
static int64_t py_bound(int64_t v, int64_t n)
{
    if (v < 0)
        v += n;
    return v < 0 ? 0 : v > n ? n : v;
}

static int slice_gather(opc_t *c, gather_t *g, int dim, int64_t start, int64_t len, int64_t step)
{
    const sp_tensor_t *x = &c->in[0];
    dmap_t dm[SP_MAX_DIMS];
    dmap_identity(x, g, dm);
    g->shape[dim] = len;
    dm[dim] = (dmap_t){dim, DM_AFFINE, step, start};
    return gather_dims(c, x, g, dm);
}

int g_slice(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t d, s, e, step;
    int dim;
    if (x->ndim == 0)
        return fail(c, "cannot slice a 0-d tensor");
    if (!attr_int(c, "dim", 0, &d, NULL) || !norm_dim(c, d, x->ndim, &dim) ||
        !attr_int(c, "start", 0, &s, NULL) || !attr_int(c, "end", ATTR_INT_LIMIT, &e, NULL) ||
        !attr_int(c, "step", 1, &step, NULL))
        return 0;
    if (step <= 0)
        return fail(c, "step must be positive");
    int64_t n = x->shape[dim];
    /* a bound beyond the dim is clamped (Python); the default end is no bound.  A negative
       bound counts from the end and a start without an end leaves the dim less the start: an
       extent that is a sum of sizes (src/reduce_sums.c) */
    if (c->err && (s < -n || s > n || (e != ATTR_INT_LIMIT && (e < -n || e > n))))
        c->err->clamped = SP_CLAMP_BOUND;
    else if (c->err && (s < 0 || (e != ATTR_INT_LIMIT && e < 0) || (e == ATTR_INT_LIMIT && s > 0) ||
                        step > 1))
        c->err->clamped = SP_CLAMP_SUM; /* also a step: ceil((end - start) / step) elements */
    s = py_bound(s, n);
    e = py_bound(e, n);
    return slice_gather(c, g, dim, s, e > s ? (e - s + step - 1) / step : 0, step);
}

int g_chunk(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t chunks, d, index;
    int dim, allow;
    if (x->ndim == 0)
        return fail(c, "cannot chunk a 0-d tensor");
    if (!attr_need_int(c, "chunks", &chunks) || !attr_int(c, "dim", 0, &d, NULL) ||
        !norm_dim(c, d, x->ndim, &dim) || !attr_need_int(c, "index", &index) ||
        !attr_flag(c, "allow_empty", &allow))
        return 0;
    if (chunks <= 0)
        return fail(c, "chunks must be positive");
    int64_t n = x->shape[dim], size = (n + chunks - 1) / chunks;
    int64_t count = allow ? chunks : n == 0 ? 1 : (n + size - 1) / size;
    if (index < 0 || index >= count)
        return fail(c,
                    "chunk index out of range (index %lld, %lld elements in chunks of %lld make "
                    "%lld chunks)",
                    (long long)index, (long long)n, (long long)size, (long long)count);
    int64_t s = index * size < n ? index * size : n;
    int64_t e = s + size < n ? s + size : n;
    /* ceil(n / chunks) elements, or the rest: partial chunks are a sum of sizes; whole ones
       are n / chunks, with chunks a factor of the reduction (docs/soundness.md) */
    if (c->err && n % chunks != 0)
        c->err->clamped = SP_CLAMP_SUM;
    return slice_gather(c, g, dim, s, e - s, 1);
}

int g_split(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t d, index;
    int dim;
    if (x->ndim == 0)
        return fail(c, "cannot split a 0-d tensor");
    if (!attr_int(c, "dim", 0, &d, NULL) || !norm_dim(c, d, x->ndim, &dim) ||
        !attr_need_int(c, "index", &index))
        return 0;
    const sp_attr_t *a = get_attr(c, "sizes");
    if (a == NULL)
        return fail(c, "missing attribute 'sizes'");
    int64_t n = x->shape[dim], s = 0, len = 0;
    if (a->kind == SP_ATTR_NUM) {
        int64_t size;
        if (!num_to_int(a, &size) || size <= 0)
            return fail(c, "split size must be a positive integer");
        int64_t count = n == 0 ? 1 : (n + size - 1) / size;
        if (index < 0 || index >= count)
            return fail(c, "split index %lld out of range (%lld parts)", (long long)index,
                        (long long)count);
        s = index * size;
        len = s + size < n ? size : n - s;
        if (c->err && n % size != 0)
            c->err->clamped = SP_CLAMP_SUM; /* a partial last part: the dim less whole parts */
    } else {
        int64_t one;
        const int64_t *l;
        int m, present;
        if (!attr_list(c, "sizes", &one, &l, &m, &present))
            return 0;
        int64_t sum = 0;
        for (int i = 0; i < m; i++) {
            if (l[i] < 0)
                return fail(c, "split sizes must be non-negative");
            sum += l[i];
        }
        if (sum != n)
            return fail(c, "sizes sum to %lld but dimension %d has size %lld", (long long)sum, dim,
                        (long long)n);
        if (index < 0 || index >= m)
            return fail(c, "split index %lld out of range (%d parts)", (long long)index, m);
        for (int i = 1; i < m; i++)
            if (c->err && l[i] != l[0])
                c->err->clamped = SP_CLAMP_SUM; /* unequal parts: the dim is their sum */
        for (int i = 0; i < index; i++)
            s += l[i];
        len = l[index];
    }
    return slice_gather(c, g, dim, s, len, 1);
}

int g_pad(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t d, before, after;
    int dim;
    dmap_t dm[SP_MAX_DIMS];
    if (x->ndim == 0)
        return fail(c, "cannot pad a 0-d tensor");
    if (!attr_int(c, "dim", -1, &d, NULL) || !norm_dim(c, d, x->ndim, &dim) ||
        !attr_int(c, "before", 0, &before, NULL) || !attr_int(c, "after", 0, &after, NULL))
        return 0;
    if (before < 0 || after < 0)
        return fail(c, "padding must be non-negative");
    fmpq_t v;
    fmpq_init(v);
    int ok = attr_num(c, "value", 0, 1, v, NULL);
    g->fill = sp_expr_const_fmpq(c->E, v);
    fmpq_clear(v);
    if (!ok)
        return 0;
    dmap_identity(x, g, dm);
    g->shape[dim] = x->shape[dim] + before + after;
    if (c->err && before + after > 0)
        c->err->clamped = SP_CLAMP_SUM; /* the dim plus the padding: a sum of sizes */
    dm[dim] = (dmap_t){dim, DM_PAD, 1, before};
    return gather_dims(c, x, g, dm);
}

int g_repeat(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t one, l1[SP_MAX_DIMS];
    const int64_t *l;
    int n, present;
    dmap_t dm[SP_MAX_DIMS];
    if (!attr_list(c, "sizes", &one, &l, &n, &present))
        return 0;
    if (!present) {
        int64_t d, times;
        int dim;
        if (x->ndim == 0)
            return fail(c, "cannot repeat a 0-d tensor along a dimension");
        if (!attr_int(c, "dim", 0, &d, NULL) || !norm_dim(c, d, x->ndim, &dim) ||
            !attr_need_int(c, "times", &times))
            return 0;
        for (int k = 0; k < x->ndim; k++)
            l1[k] = k == dim ? times : 1;
        l = l1;
        n = x->ndim;
    } else if (get_attr(c, "dim") != NULL || get_attr(c, "times") != NULL) {
        return fail(c, "give either sizes or dim and times");
    }
    if (n < x->ndim || n > SP_MAX_DIMS)
        return fail(c, "sizes %s do not cover the %d dimensions of %s", SH(n, l).s, x->ndim,
                    TS(x).s);
    g->ndim = n;
    for (int d = 0; d < n; d++) {
        if (l[d] < 0)
            return fail(c, "repeat counts must be non-negative");
        int id = d - (n - x->ndim);
        if (id < 0) {
            g->shape[d] = l[d];
            dm[d] = (dmap_t){-1, DM_AFFINE, 0, 0};
        } else {
            if (l[d] > NUMEL_LIMIT || x->shape[id] * l[d] > NUMEL_LIMIT)
                return fail_too_large(c, "of the repeat");
            g->shape[d] = x->shape[id] * l[d];
            dm[d] = (dmap_t){id, DM_MOD, x->shape[id], 0};
        }
    }
    return gather_dims(c, x, g, dm);
}

int g_repeat_interleave(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t r, d;
    int dim;
    dmap_t dm[SP_MAX_DIMS];
    if (x->ndim == 0)
        return fail(c, "cannot repeat a 0-d tensor along a dimension");
    if (!attr_need_int(c, "repeats", &r) || !attr_need_int(c, "dim", &d) ||
        !norm_dim(c, d, x->ndim, &dim))
        return 0;
    if (r < 0)
        return fail(c, "repeats must be non-negative");
    if (r > NUMEL_LIMIT || x->shape[dim] * r > NUMEL_LIMIT)
        return fail(c, "output is too large");
    dmap_identity(x, g, dm);
    g->shape[dim] = x->shape[dim] * r;
    dm[dim] = (dmap_t){dim, DM_DIV, r, 0};
    return gather_dims(c, x, g, dm);
}

int g_concat(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t d;
    int dim;
    if (x->ndim == 0)
        return fail(c, "cannot concatenate 0-d tensors");
    if (!attr_int(c, "dim", 0, &d, NULL) || !norm_dim(c, d, x->ndim, &dim))
        return 0;
    int64_t total = 0;
    int unequal = 0, exact = 1;
    for (int k = 0; k < c->nin; k++) {
        const sp_tensor_t *t = &c->in[k];
        int ok = t->ndim == x->ndim;
        for (int e = 0; ok && e < x->ndim; e++)
            ok = e == dim || t->shape[e] == x->shape[e];
        if (!ok)
            return fail(c, "shape %s of argument %d does not match %s outside dimension %d",
                        TS(t).s, k + 1, TS(x).s, dim);
        total += t->shape[dim];
        unequal |= t->shape[dim] != x->shape[dim];
        exact &= t->pos[dim].ext == 1 && !t->pos[dim].inexact;
    }
    /* unequal parts: their extent is a sum of sizes (src/reduce_sums.c reads those it can),
       unless every part's extent is exact (the same at the real sizes: dims kept real,
       literals), when the sum is one more constant of the program */
    if (c->err && unequal && exact)
        c->err->exact_sum = total;
    else if (c->err && unequal)
        c->err->clamped = SP_CLAMP_SUM_READ;
    g->ndim = x->ndim;
    memcpy(g->shape, x->shape, sizeof(g->shape));
    g->shape[dim] = total;
    g->cat = dim + 1;
    if (!check_numel(c, g->ndim, g->shape))
        return 0;
    int64_t n = shape_numel(g->ndim, g->shape), outer = shape_numel(dim, g->shape);
    int64_t inner = shape_numel(g->ndim - dim - 1, g->shape + dim + 1), i = 0;
    g->src = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (g->src == NULL)
        return fail(c, "out of memory");
    /* for each index of the dims before dim, each part's block in turn (none when the output
       is empty: the dims before dim may still hold up to NUMEL_LIMIT indexes) */
    for (int64_t o = 0; n > 0 && o < outer; o++) {
        int64_t base = 0;
        for (int k = 0; k < c->nin; k++) {
            int64_t blk = c->in[k].shape[dim] * inner;
            for (int64_t j = 0; j < blk; j++)
                g->src[i++] = base + o * blk + j;
            base += sp_tensor_numel(&c->in[k]);
        }
    }
    return 1;
}

/* Element s of the inputs laid end to end; numel[k] the element count of input k. */
static sp_expr_t gather_elem(const opc_t *c, const int64_t *numel, int64_t s)
{
    for (int k = 0; k < c->nin; k++) {
        if (s < numel[k])
            return c->in[k].v[s];
        s -= numel[k];
    }
    return SP_EXPR_NONE;
}

/* x's mask axes on out when out is x with axes of one element inserted or removed (unsqueeze,
   squeeze, a reshape that does only that): the other axes in order; else not known */
static uint32_t axes_by_extent(const sp_tensor_t *x, const sp_tensor_t *out)
{
    uint32_t a = 0;
    int i = 0, j = 0;
    for (;;) {
        while (i < x->ndim && x->shape[i] == 1)
            i++;
        while (j < out->ndim && out->shape[j] == 1)
            j++;
        if (i == x->ndim || j == out->ndim)
            break;
        if (x->shape[i] != out->shape[j])
            return SP_MASK_AXES_ANY;
        a |= (x->mask_axes >> i & 1u) << j;
        i++;
        j++;
    }
    return i == x->ndim && j == out->ndim ? a : SP_MASK_AXES_ANY;
}

int fwd_gather(opc_t *c, sp_tensor_t *out)
{
    gather_t g;
    memset(&g, 0, sizeof(g));
    int ok = c->def->gather(c, &g) && out_alloc(c, out, g.ndim, g.shape);
    int64_t n = ok ? sp_tensor_numel(out) : 0, few[8];
    int64_t *numel = c->nin <= 8 ? few : flint_malloc((size_t)c->nin * sizeof(int64_t));
    if (numel == NULL) {
        ok = fail(c, "out of memory");
        n = 0;
    }
    for (int k = 0; numel != NULL && k < c->nin; k++)
        numel[k] = sp_tensor_numel(&c->in[k]);
    for (int64_t i = 0; i < n; i++) {
        int64_t s = g.src ? g.src[i] : i;
        out->v[i] = s < 0 ? g.fill : gather_elem(c, numel, s);
    }
    if (numel != few)
        flint_free(numel);
    if (ok)
        pos_gather(c, &g, out);
    /* the axes the operand's mask patterns lie on, where this gather maps them (src/ops.c
       mask_count): an axis read from one of the operand's carries its bit; a reshape that
       changes the shape, not known */
    const sp_tensor_t *x = &c->in[0];
    if (ok && c->nin == 1 && x->masks > 0) {
        uint32_t a = 0;
        if (x->mask_axes & SP_MASK_AXES_ANY)
            a = SP_MASK_AXES_ANY;
        else if (g.ndm == out->ndim && g.cat == 0)
            for (int d = 0; d < g.ndm; d++)
                a |= g.dm[d].dim >= 0 ? (x->mask_axes >> g.dm[d].dim & 1u) << d : 0u;
        else
            a = axes_by_extent(x, out);
        out->mask_axes = a;
        out->mask_ext = x->mask_ext;
    }
    flint_free(g.src);
    return ok;
}

int vjp_gather(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    gather_t g;
    memset(&g, 0, sizeof(g));
    int ok = c->def->gather(c, &g);
    int64_t n = sp_tensor_numel(dy), base = 0;
    int64_t *map = ok ? flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t)) : NULL;
    if (ok && map == NULL)
        ok = fail(c, "out of memory");
    for (int k = 0; ok && k < c->nin; k++) {
        int64_t m = sp_tensor_numel(&c->in[k]);
        for (int64_t i = 0; i < n; i++) {
            int64_t s = g.src ? g.src[i] : i;
            map[i] = s >= base && s < base + m ? s - base : -1;
        }
        ok = sp_tensor_alloc(&din[k], c->in[k].ndim, c->in[k].shape) ? 1 : fail(c, "out of memory");
        ok = ok && scatter_sum(c, dy->v, map, n, m, din[k].v);
        base += m;
    }
    flint_free(map);
    flint_free(g.src);
    return ok;
}
