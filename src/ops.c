/* ops.c: the tensor operator library: forward semantics and VJP rules on symbolic tensors. */
#include <flint/flint.h>
#include "ops.h"
#include "ops_int.h"
#include "diag.h"
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Every operator builds the element expressions of its output with the expr.h constructors; the
 * results are exact (no floating point, no max-shift in softmax: exp(x_i) / sum_j exp(x_j) is
 * the same real function).  Sums over several terms are single n-ary ADD nodes.  Where an
 * operator builds a product or sum with a literal 0 or 1 it folds it (sound, and it keeps
 * scattered gradients small).
 *
 * Attributes.  Each operator has a list of attribute keys; the first `npos` may also be given
 * positionally (key NULL, in that order).  Numeric literals that arrive as trailing 0-d constant
 * tensors beyond an operator's tensor arity are read as positional attributes (so scale(x, 2) and
 * transpose(x, 0, 1) work either way; concat also reads a trailing 0-d constant as its dim).
 * Aliases are listed with '|'.  Conventions (PyTorch unless said otherwise; negative dims count
 * from the end):
 *
 *   add sub mul div maximum minimum lt le gt ge eq ne   (a, b)     NumPy broadcasting
 *   max min            (a, b) elementwise; (x, dim=, keepdim=0) reduction, default all dims
 *   neg exp log sqrt rsqrt tanh sigmoid silu gelu erf relu abs     (x)
 *   scale(x, c)  pow(x, k) k an integer  where(cond, a, b)  dropout(x, mask, p=) = x*mask/(1-p)
 *   clamp(x, lo, hi): bounds as tensors or as attributes lo|min, hi|max (one may be absent)
 *   reshape|view(x, shape=[..]) one -1 may be inferred   transpose(x, dim0, dim1) default -2, -1
 *   permute(x, dims=[..])  slice(x, dim=0, start=0, end=size, step=1) Python clamping
 *   concat|cat(t1, .., dim=0)  chunk(x, chunks=, dim=0, index=, allow_empty=0) torch.chunk ceil
 *   rule (allow_empty=1: XLA rule, trailing chunks may be empty)  split(x, sizes=[..]|size=n,
 *   dim=0, index=)  pad(x, dim=-1, before=0, after=0, value=0)  expand|broadcast_to(x, shape=)
 *   repeat(x, dim=0, times=) or repeat(x, sizes=[..]) (torch.repeat tiling)
 *   repeat_interleave(x, repeats=, dim=)  flatten(x, start=0, end=-1)  unsqueeze(x, dim)
 *   squeeze(x, dim=all size-1 dims)
 *   sum mean amax amin (x, dim=all, keepdim=0)  logsumexp(x, dim=-1, keepdim=0)
 *   softmax(x, dim=-1) and softmax(x, mask) = exp(x)*m / sum(exp(x)*m)  log_softmax(x, dim=-1)
 *   causal_softmax(x, offset=0): last two dims [Sq, Sk], keeps k <= q + offset, others are 0
 *   causal_mask(x, offset=0): 1 where causal_softmax keeps the element, else 0
 *   layernorm(x, [w, [b]], eps=1e-5) and rmsnorm(x, [w], eps=1e-6) over the last dim
 *   cross_entropy(logits, onehot_target, [mask], label_smoothing=0, reduction=mean|sum|none):
 *     loss_p = (1-eps) * -sum_v t_v log_softmax_v + eps * mean_v(-log_softmax_v); mean is
 *     sum(mask*loss)/sum(mask) with a mask; none gives mask*loss per position
 *   matmul(a, b) torch.matmul (1-d, 2-d, batched with broadcasting)
 *   embedding(onehot [.., V], table [V, H]) = onehot @ table; embedding(table, ids=[..],
 *     shape=[..]) gathers concrete rows
 *   rope(x [.., S, D], cos, sin, interleaved=0): cos/sin broadcast to [.., S, D/2] (rotate_half
 *     pairs (i, i+D/2); interleaved=1: pairs (2i, 2i+1)) or to [.., S, D] (HF full tables)
 *   attention(q [.., Hq, Sq, D], k [.., Hkv, Sk, D], v [.., Hkv, Sk, Dv], [mask], scale=,
 *     causal=0, offset=0): GQA, query head h reads kv head h / (Hq/Hkv); scale defaults to
 *     rsqrt(D) of the checked (reduced) head dim; a causal row with no key gives 0
 *   topk_mask(x, k, dim=-1): 1 for the k largest, ties to the lower index (cmp nodes, exact)
 *
 * VJP rules (sp_ops_vjp) exist for every operator above; comparisons, causal_mask, topk_mask, where's
 * condition, masks, one-hot ids/targets and rope tables get no gradient.  Piecewise rules follow
 * sp_expr_diff: relu'(x) = [x > 0], abs' = [x>0]-[x<0], max/min give the gradient to the first
 * extremal argument in the node's sorted argument order, clamp as in diff.c; gelu' and erf' use
 * diff.c's forms (with its symbol __sqrt_pi).
 *
 * Gradient operators for explicit backward passes: <u>_grad(x, dy) for the unary elementwise
 * operators; rmsnorm_grad_x|_w(x, [w], dy); layernorm_grad_x|_w|_b(x, [w, [b]], dy);
 * matmul_grad_a|_b(a, b, dy); attention_grad_q|_k|_v(q, k, v, [mask], dy); embedding_grad(..,
 * dy) (the table's gradient); softmax_grad(y, dy, dim) and log_softmax_grad(y, dy, dim) from
 * the forward output y; rope_grad(dy, cos, sin); cross_entropy_grad(logits, target, [mask,
 * [dloss]]) (dloss defaults to 1).  They take the forward operator's attributes.
 *
 * Error messages are "<op>: <what>", e.g. "matmul: inner dimensions differ: [2, 3] and [4, 5]",
 * "add: shapes [2, 3] and [4] cannot be broadcast", "reshape: cannot reshape [2, 3] (6
 * elements) into [4, 2] (8 elements)", "chunk: chunk index out of range (index 2, 4 elements in
 * chunks of 2 make 2 chunks)", "relu: expected 1 tensor argument, got 2", "sum: unknown
 * attribute 'axis'", "softmax: dimension 2 out of range for a 2-d tensor".
 */

/* ---- tensors -------------------------------------------------------------------------------- */

int64_t shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || shape[d] > NUMEL_LIMIT)
            return -1;
        n *= shape[d];
        if (n > NUMEL_LIMIT)
            return -1;
    }
    return n;
}

void sp_tensor_init(sp_tensor_t *t) { memset(t, 0, sizeof(*t)); }

void sp_tensor_clear(sp_tensor_t *t)
{
    flint_free(t->v);
    sp_tensor_init(t);
}

/* zero: the elements SP_EXPR_NONE (else unset: the caller writes every one) */
static int tensor_alloc(sp_tensor_t *t, int ndim, const int64_t *shape, int zero)
{
    if (ndim < 0 || ndim > SP_MAX_DIMS)
        return 0;
    int64_t sh[SP_MAX_DIMS] = {0};
    if (ndim > 0)
        memcpy(sh, shape, (size_t)ndim * sizeof(int64_t)); /* shape may alias t->shape */
    int64_t n = shape_numel(ndim, sh);
    if (n < 0)
        return 0;
    size_t m = (size_t)(n ? n : 1);
    sp_expr_t *v = zero ? flint_calloc(m, sizeof(sp_expr_t)) : flint_malloc(m * sizeof(sp_expr_t));
    if (v == NULL)
        return 0;
    if (n == 0)
        v[0] = SP_EXPR_NONE; /* the one slot of an empty tensor is never unset */
    flint_free(t->v);
    t->v = v;
    t->ndim = ndim;
    memcpy(t->shape, sh, sizeof(sh));
    memset(t->pos, 0, sizeof(t->pos));
    return 1;
}

int sp_tensor_alloc(sp_tensor_t *t, int ndim, const int64_t *shape)
{
    return tensor_alloc(t, ndim, shape, 1);
}

int64_t sp_tensor_numel(const sp_tensor_t *t)
{
    if (t->ndim < 0 || t->ndim > SP_MAX_DIMS)
        return 0;
    int64_t n = shape_numel(t->ndim, t->shape);
    return n < 0 ? 0 : n;
}

void sp_tensor_copy(sp_tensor_t *dst, const sp_tensor_t *src)
{
    if (dst == src)
        return;
    if (src->ndim < 0 || src->v == NULL || !tensor_alloc(dst, src->ndim, src->shape, 0)) {
        sp_tensor_clear(dst);
        dst->ndim = -1;
        return;
    }
    memcpy(dst->v, src->v, (size_t)sp_tensor_numel(src) * sizeof(sp_expr_t));
    memcpy(dst->pos, src->pos, sizeof(dst->pos));
    dst->masks = src->masks;
    dst->mask_axes = src->mask_axes;
    dst->mask_ext = src->mask_ext;
}

void unravel(int64_t i, int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

int trace_same(const opc_t *c, const sp_expr_t *v, int64_t n)
{
    if (!c->E->dot_sets || c->E->trace_slow || v == NULL)
        return 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return 1;
}

int trace_uniform(const opc_t *c, const sp_tensor_t *t)
{
    return t != NULL && t->ndim >= 0 && trace_same(c, t->v, sp_tensor_numel(t));
}

void trace_repeat(sp_expr_t *v, int64_t blk, int64_t nblk)
{
    for (int64_t b = 1; b < nblk; b++)
        memcpy(v + b * blk, v, (size_t)blk * sizeof(sp_expr_t));
}

/* Write the decimal digits of v >= 0 at p; returns the end. */
static char *put_index(char *p, int64_t v)
{
    char d[24];
    int n = 0;
    do
        d[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        *p++ = d[--n];
    return p;
}

int sp_tensor_symbols(sp_ectx_t E, sp_tensor_t *t, const char *prefix)
{
    if (t->v == NULL || t->ndim < 0)
        return 0;
    enum { BATCH = 16, LEN = 512 };
    int64_t n = sp_tensor_numel(t), idx[SP_MAX_DIMS];
    char buf[BATCH][LEN];
    const char *names[BATCH];
    size_t plen = strlen(prefix);
    /* the prefix, then "[i,j,...]": at most 20 digits and a separator per dimension */
    if (plen + (size_t)t->ndim * 21 + 2 > LEN)
        return 0;
    for (int k = 0; k < BATCH; k++) {
        memcpy(buf[k], prefix, plen);
        names[k] = buf[k];
    }
    /* a batch of names at a time, so that sp_expr_syms overlaps their table lookups */
    for (int64_t b = 0; b < n; b += BATCH) {
        int64_t m = n - b < BATCH ? n - b : BATCH;
        for (int64_t k = 0; k < m; k++) {
            unravel(b + k, t->ndim, t->shape, idx);
            char *p = buf[k] + plen;
            for (int d = 0; d < t->ndim; d++) {
                *p++ = d ? ',' : '[';
                p = put_index(p, idx[d]);
            }
            if (t->ndim > 0)
                *p++ = ']';
            *p = 0;
        }
        if (!sp_expr_syms(E, names, (size_t)m, t->v + b))
            return 0;
    }
    return 1;
}

int sp_tensor_same_shape(const sp_tensor_t *a, const sp_tensor_t *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

static void fmt_shape(char *buf, size_t len, int ndim, const int64_t *shape)
{
    if (len == 0)
        return;
    size_t k = 0;
    buf[0] = 0;
    k += (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

void sp_tensor_shape_str(const sp_tensor_t *t, char *buf, size_t len)
{
    fmt_shape(buf, len, t->ndim < 0 ? 0 : t->ndim, t->shape);
}

shstr_t SH(int ndim, const int64_t *shape)
{
    shstr_t r;
    fmt_shape(r.s, sizeof(r.s), ndim, shape);
    return r;
}

shstr_t TS(const sp_tensor_t *t) { return SH(t->ndim, t->shape); }

/* ---- operator context, errors, attributes ------------------------------------------------- */

/* Is in[k]'s gradient asked for?  (A rule may compute more; <op>_grad_<k> asks for one.) */
int wanted(const opc_t *c, int k) { return c->want == 0 || (c->want >> k & 1u); }

int fail(opc_t *c, const char *fmt, ...)
{
    if (c->err == NULL || c->err->msg[0] != 0)
        return 0; /* the first message wins */
    size_t size = sizeof(c->err->msg);
    int k = snprintf(c->err->msg, size, "%s: ", c->name);
    if (k < 0)
        k = 0;
    if ((size_t)k < size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->msg + k, size - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* An output of n elements over the limit c->max_numel (sp_op_err_t.elements: a resource limit) */
void mark_elements(opc_t *c)
{
    if (c->err != NULL && c->err->msg[0] == 0)
        c->err->elements = 1;
}

/* An output past what one tensor can hold (NUMEL_LIMIT): a resource limit too, not bad input
   (a plan's real sizes reached by the fallbacks: a [100002, 100002] mask, helper-87's probes) */
int fail_too_large(opc_t *c, const char *shape)
{
    mark_elements(c);
    return fail(c, "output %s has more than %lld elements, the limit of one tensor", shape,
                (long long)NUMEL_LIMIT);
}

int fail_elements(opc_t *c, const char *shape, int64_t n)
{
    mark_elements(c);
    return fail(c, "output %s has %lld elements, more than the limit %lld", shape, (long long)n,
                (long long)c->max_numel);
}

/* Index of key among the ','-separated entries of spec (an entry may list '|' aliases), or -1. */
static int key_index(const char *spec, const char *key)
{
    size_t klen = strlen(key);
    int idx = 0;
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",|");
        if (n == klen && strncmp(p, key, klen) == 0)
            return idx;
        if (p[n] == 0)
            break;
        if (p[n] == ',')
            idx++;
        p += n + 1;
    }
    return -1;
}

const sp_attr_t *get_attr(const opc_t *c, const char *key)
{
    int k = key_index(c->def->keys, key);
    if (k < 0)
        return NULL;
    const sp_attr_t *p = NULL;
    int pos = 0;
    for (int i = 0; i < c->nattr; i++) {
        const sp_attr_t *a = &c->attr[i];
        if (a->key == NULL) {
            if (pos == k && k < c->def->npos)
                p = a;
            pos++;
        } else if (key_index(c->def->keys, a->key) == k) {
            return a;
        }
    }
    return p;
}

/* attribute i (keyword key) is not one of the operator's: say which are, or the closest */
static int unknown_attr(opc_t *c, int i, const char *key)
{
    const char *names[32];
    char buf[256];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", c->def->keys);
    for (char *p = buf; *p && n < 32;) {
        names[n++] = p;
        p += strcspn(p, ",|");
        if (*p)
            *p++ = 0;
    }
    if (c->err)
        c->err->attr = i - c->nconv;
    const char *s = sp_suggest(key, names, n, 2);
    if (s)
        return fail(c, "unknown attribute '%s' (did you mean '%s'?)", key, s);
    if (n == 0)
        return fail(c, "unknown attribute '%s' (%s takes no attributes)", key, c->name);
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    for (size_t k = 0; k < n; k++)
        sp_sbuf_printf(&b, "%s%s", k ? ", " : "", names[k]);
    fail(c, "unknown attribute '%s' (%s takes %s)", key, c->name, b.s);
    sp_sbuf_clear(&b);
    return 0;
}

static int check_attrs(opc_t *c)
{
    int pos = 0;
    for (int i = 0; i < c->nattr; i++) {
        const sp_attr_t *a = &c->attr[i];
        if (a->key == NULL) {
            pos++;
            continue;
        }
        int k = key_index(c->def->keys, a->key);
        if (k < 0)
            return unknown_attr(c, i, a->key);
        for (int j = 0; j < i; j++)
            if (c->attr[j].key != NULL && key_index(c->def->keys, c->attr[j].key) == k)
                return fail(c, "attribute '%s' given twice", a->key);
    }
    if (pos > c->def->npos) {
        if (c->def->npos == 0)
            return fail(c, "takes no positional non-tensor arguments");
        return fail(c, "too many positional arguments (%d, at most %d)", pos, c->def->npos);
    }
    for (int i = 0; i < c->nattr; i++)
        if (c->attr[i].key != NULL && key_index(c->def->keys, c->attr[i].key) < pos)
            return fail(c, "attribute '%s' given twice", c->attr[i].key);
    return 1;
}

int num_to_int(const sp_attr_t *a, int64_t *out)
{
    if (a->kind != SP_ATTR_NUM || !fmpz_is_one(fmpq_denref(a->num)) ||
        fmpz_bits(fmpq_numref(a->num)) > 40)
        return 0;
    *out = (int64_t)fmpz_get_si(fmpq_numref(a->num));
    return 1;
}

/* An integer attribute; dflt when absent. */
int attr_int(opc_t *c, const char *key, int64_t dflt, int64_t *out, int *present)
{
    const sp_attr_t *a = get_attr(c, key);
    if (present)
        *present = a != NULL;
    *out = dflt;
    if (a == NULL)
        return 1;
    if (a->kind == SP_ATTR_LIST && a->nlist == 1 && a->list[0] > -ATTR_INT_LIMIT &&
        a->list[0] < ATTR_INT_LIMIT) {
        *out = a->list[0];
        return 1;
    }
    if (a->kind == SP_ATTR_NAME && a->name != NULL &&
        (strcmp(a->name, "true") == 0 || strcmp(a->name, "True") == 0)) {
        *out = 1;
        return 1;
    }
    if (a->kind == SP_ATTR_NAME && a->name != NULL &&
        (strcmp(a->name, "false") == 0 || strcmp(a->name, "False") == 0)) {
        *out = 0;
        return 1;
    }
    if (!num_to_int(a, out))
        return fail(c, "attribute '%s' must be an integer", key);
    return 1;
}

int attr_need_int(opc_t *c, const char *key, int64_t *out)
{
    int present;
    if (!attr_int(c, key, 0, out, &present))
        return 0;
    if (!present)
        return fail(c, "missing attribute '%s'", key);
    return 1;
}

int attr_flag(opc_t *c, const char *key, int *out)
{
    *out = 0;
    int64_t v;
    if (!attr_int(c, key, 0, &v, NULL))
        return 0;
    if (v != 0 && v != 1)
        return fail(c, "attribute '%s' must be 0 or 1", key);
    *out = (int)v;
    return 1;
}

/* An exact rational attribute; dflt (num/den) when absent. */
int attr_num(opc_t *c, const char *key, slong num, ulong den, fmpq_t out, int *present)
{
    const sp_attr_t *a = get_attr(c, key);
    if (present)
        *present = a != NULL;
    if (a == NULL) {
        fmpq_set_si(out, num, den);
        return 1;
    }
    if (a->kind != SP_ATTR_NUM)
        return fail(c, "attribute '%s' must be a number", key);
    fmpq_set(out, a->num);
    return 1;
}

/* An integer list attribute; a single integer counts as a one-element list (stored in *one). */
int attr_list(opc_t *c, const char *key, int64_t *one, const int64_t **list, int *n,
              int *present)
{
    const sp_attr_t *a = get_attr(c, key);
    *present = a != NULL;
    *list = NULL;
    *n = 0;
    if (a == NULL)
        return 1;
    if (a->kind == SP_ATTR_NUM) {
        if (!num_to_int(a, one))
            return fail(c, "attribute '%s' must be an integer or a list of integers", key);
        *list = one;
        *n = 1;
        return 1;
    }
    if (a->kind != SP_ATTR_LIST || a->nlist < 0 || (a->nlist > 0 && a->list == NULL))
        return fail(c, "attribute '%s' must be a list of integers", key);
    for (int i = 0; i < a->nlist; i++)
        if (a->list[i] <= -ATTR_INT_LIMIT || a->list[i] >= ATTR_INT_LIMIT)
            return fail(c, "attribute '%s' is out of range", key);
    *list = a->list;
    *n = a->nlist;
    return 1;
}

int norm_dim(opc_t *c, int64_t d, int ndim, int *out)
{
    *out = 0;
    int n = ndim > 0 ? ndim : 1; /* torch accepts dim 0 / -1 on a 0-d tensor */
    if (d < -n || d >= n)
        return fail(c, "dimension %lld out of range for a %d-d tensor", (long long)d, ndim);
    *out = (int)(d < 0 ? d + n : d);
    return 1;
}

int out_alloc(opc_t *c, sp_tensor_t *out, int ndim, const int64_t *shape)
{
    if (ndim > SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", ndim, SP_MAX_DIMS);
    int64_t n = shape_numel(ndim, shape);
    if (n < 0)
        return fail_too_large(c, SH(ndim, shape).s);
    if (c->max_numel > 0 && n > c->max_numel)
        return fail_elements(c, SH(ndim, shape).s, n);
    if (!sp_tensor_alloc(out, ndim, shape))
        return fail(c, "out of memory");
    return 1;
}

static const op_def_t *find_op(const char *name);
/* ---- gradient operators ------------------------------------------------------------------- */

static int run_vjp(opc_t *c, const sp_tensor_t *dy, sp_tensor_t *din, sp_tensor_t *y,
                   const sp_tensor_t *known);

/* <op>_grad[_<input>](forward inputs.., dy): one input's gradient through the forward op's VJP. */
static int fwd_grad_generic(opc_t *c, sp_tensor_t *out)
{
    const op_def_t *base = find_op(c->def->base);
    if (base == NULL)
        return fail(c, "internal error: no forward operator '%s'", c->def->base);
    opc_t bc = *c;
    bc.def = base;
    bc.nin = c->nin - 1;
    int idx = c->def->code < 0 ? bc.nin - 1 : c->def->code;
    if (bc.nin < base->min_in || (base->max_in >= 0 && bc.nin > base->max_in))
        return fail(c, "wrong number of tensor arguments (%d)", c->nin);
    if (idx >= bc.nin)
        return fail(c, "the input to differentiate (argument %d) is missing", idx + 1);
    sp_tensor_t *din = flint_calloc((size_t)bc.nin, sizeof(sp_tensor_t));
    sp_tensor_t y;
    sp_tensor_init(&y);
    if (din == NULL)
        return fail(c, "out of memory");
    for (int k = 0; k < bc.nin; k++)
        din[k].ndim = -1;
    bc.want = 1u << idx;
    int ok = run_vjp(&bc, &c->in[c->nin - 1], din, &y, NULL);
    if (ok && din[idx].ndim < 0)
        ok = fail(c, "argument %d gets no gradient", idx + 1);
    if (ok && c->max_numel > 0 && sp_tensor_numel(&din[idx]) > c->max_numel)
        ok = fail_elements(c, TS(&din[idx]).s, sp_tensor_numel(&din[idx]));
    if (ok) {
        *out = din[idx];
        sp_tensor_init(&din[idx]);
    }
    for (int k = 0; k < bc.nin; k++)
        sp_tensor_clear(&din[k]);
    flint_free(din);
    sp_tensor_clear(&y);
    return ok;
}

/* ---- the operator table --------------------------------------------------------------------- */

#define EW(nm, code, sub, lo, hi, keys, npos, fl) \
    {nm, fwd_ew, vjp_ew, NULL, lo, hi, keys, npos, code, sub, fl, NULL}
#define GA(nm, fn, lo, hi, keys, npos, fl) \
    {nm, fwd_gather, vjp_gather, fn, lo, hi, keys, npos, 0, 0, fl, NULL}
#define RED(nm, code, hi, keys) {nm, fwd_reduce, vjp_reduce, NULL, 1, hi, keys, 2, code, 0, 0, NULL}
#define GRAD(nm, base, idx, lo, hi, keys, npos) \
    {nm, fwd_grad_generic, NULL, NULL, lo, hi, keys, npos, idx, 0, 0, base}

static const op_def_t op_table[] = {
    EW("neg", EW_UNARY, SP_OP_NEG, 1, 1, "", 0, 0),
    EW("exp", EW_UNARY, SP_OP_EXP, 1, 1, "", 0, 0),
    EW("log", EW_UNARY, SP_OP_LOG, 1, 1, "", 0, 0),
    EW("sqrt", EW_UNARY, SP_OP_SQRT, 1, 1, "", 0, 0),
    EW("rsqrt", EW_UNARY, SP_OP_RSQRT, 1, 1, "", 0, 0),
    EW("tanh", EW_UNARY, SP_OP_TANH, 1, 1, "", 0, 0),
    EW("sigmoid", EW_UNARY, SP_OP_SIGMOID, 1, 1, "", 0, 0),
    EW("silu", EW_UNARY, SP_OP_SILU, 1, 1, "", 0, 0),
    EW("gelu", EW_UNARY, SP_OP_GELU, 1, 1, "", 0, 0),
    EW("erf", EW_UNARY, SP_OP_ERF, 1, 1, "", 0, 0),
    EW("relu", EW_UNARY, SP_OP_RELU, 1, 1, "", 0, 0),
    EW("abs", EW_UNARY, SP_OP_ABS, 1, 1, "", 0, 0),
    EW("add", EW_ADD, 0, 2, 2, "", 0, 0),
    EW("sub", EW_SUB, 0, 2, 2, "", 0, 0),
    EW("mul", EW_MUL, 0, 2, 2, "", 0, 0),
    EW("div", EW_DIV, 0, 2, 2, "", 0, 0),
    EW("maximum", EW_MAXIMUM, 0, 2, 2, "", 0, 0),
    EW("minimum", EW_MINIMUM, 0, 2, 2, "", 0, 0),
    EW("scale", EW_SCALE, 0, 1, 1, "c|factor", 1, 0),
    EW("pow", EW_POW, 0, 1, 1, "k|exponent", 1, 0),
    EW("clamp", EW_CLAMP, 0, 1, 3, "lo|min,hi|max", 2, 0),
    EW("where", EW_WHERE, 0, 3, 3, "", 0, 0),
    EW("lt", EW_CMP, SP_CMP_LT, 2, 2, "", 0, OPF_NOGRAD),
    EW("le", EW_CMP, SP_CMP_LE, 2, 2, "", 0, OPF_NOGRAD),
    EW("gt", EW_CMP, SP_CMP_GT, 2, 2, "", 0, OPF_NOGRAD),
    EW("ge", EW_CMP, SP_CMP_GE, 2, 2, "", 0, OPF_NOGRAD),
    EW("eq", EW_CMP, SP_CMP_EQ, 2, 2, "", 0, OPF_NOGRAD),
    EW("ne", EW_CMP, SP_CMP_NE, 2, 2, "", 0, OPF_NOGRAD),
    EW("dropout", EW_DROPOUT, 0, 2, 2, "p", 1, 0),
    GA("reshape", g_reshape, 1, 1, "shape", 1, 0),
    GA("view", g_reshape, 1, 1, "shape", 1, 0),
    GA("flatten", g_flatten, 1, 1, "start|start_dim,end|end_dim", 2, 0),
    GA("squeeze", g_squeeze, 1, 1, "dim", 1, 0),
    GA("unsqueeze", g_unsqueeze, 1, 1, "dim", 1, 0),
    GA("transpose", g_transpose, 1, 1, "dim0|d0,dim1|d1", 2, 0),
    GA("permute", g_permute, 1, 1, "dims", 1, 0),
    GA("expand", g_expand, 1, 1, "shape|size", 1, 0),
    GA("broadcast_to", g_expand, 1, 1, "shape|size", 1, 0),
    GA("slice", g_slice, 1, 1, "dim,start,end,step", 4, 0),
    GA("chunk", g_chunk, 1, 1, "chunks,dim,index,allow_empty", 3, 0),
    GA("split", g_split, 1, 1, "sizes|size|split_size,dim,index", 3, 0),
    GA("pad", g_pad, 1, 1, "dim,before,after,value", 4, 0),
    GA("repeat", g_repeat, 1, 1, "sizes,dim,times", 1, 0),
    GA("repeat_interleave", g_repeat_interleave, 1, 1, "repeats,dim", 2, 0),
    GA("concat", g_concat, 1, -1, "dim", 1, OPF_LITATTR),
    GA("cat", g_concat, 1, -1, "dim", 1, OPF_LITATTR),
    RED("sum", RED_SUM, 1, "dim,keepdim"),
    RED("mean", RED_MEAN, 1, "dim,keepdim"),
    RED("max", RED_MAX, 2, "dim,keepdim"),
    RED("min", RED_MIN, 2, "dim,keepdim"),
    RED("amax", RED_MAX, 1, "dim,keepdim"),
    RED("amin", RED_MIN, 1, "dim,keepdim"),
    RED("logsumexp", RED_LSE, 1, "dim,keepdim"),
    {"softmax", fwd_softmax, vjp_softmax, NULL, 1, 2, "dim", 1, SM_SOFTMAX, 0, 0, NULL},
    {"log_softmax", fwd_softmax, vjp_softmax, NULL, 1, 1, "dim", 1, SM_LOG, 0, 0, NULL},
    {"causal_softmax", fwd_softmax, vjp_softmax, NULL, 1, 1, "offset", 1, SM_CAUSAL, 0, 0, NULL},
    {"causal_mask", fwd_causal_mask, NULL, NULL, 1, 1, "offset", 1, SM_CAUSAL, 0, OPF_NOGRAD, NULL},
    {"layernorm", fwd_norm, vjp_norm, NULL, 1, 3, "eps,dim", 1, 1, 0, 0, NULL},
    {"rmsnorm", fwd_norm, vjp_norm, NULL, 1, 2, "eps,dim", 1, 0, 0, 0, NULL},
    {"cross_entropy", fwd_ce, vjp_ce, NULL, 2, 3, "label_smoothing,reduction", 0, 0, 0, 0, NULL},
    {"matmul", fwd_matmul, vjp_matmul, NULL, 2, 2, "", 0, 0, 0, OPF_VJP_OWN, NULL},
    {"embedding", fwd_embedding, vjp_embedding, g_embedding_ids, 1, 2, "ids,shape", 0, 0, 0,
     OPF_VJP_OWN, NULL},
    {"rope", fwd_rope, vjp_rope, NULL, 3, 3, "interleaved", 0, 0, 0, 0, NULL},
    {"attention", fwd_attention, vjp_attention, NULL, 3, 4, "scale,causal,offset", 0, 0, 0,
     OPF_VJP_OWN, NULL},
    {"topk_mask", fwd_topk_mask, NULL, NULL, 1, 1, "k,dim", 2, 0, 0, OPF_NOGRAD, NULL},
    /* gradient operators */
    GRAD("relu_grad", "relu", 0, 2, 2, "", 0),
    GRAD("silu_grad", "silu", 0, 2, 2, "", 0),
    GRAD("gelu_grad", "gelu", 0, 2, 2, "", 0),
    GRAD("sigmoid_grad", "sigmoid", 0, 2, 2, "", 0),
    GRAD("tanh_grad", "tanh", 0, 2, 2, "", 0),
    GRAD("exp_grad", "exp", 0, 2, 2, "", 0),
    GRAD("log_grad", "log", 0, 2, 2, "", 0),
    GRAD("sqrt_grad", "sqrt", 0, 2, 2, "", 0),
    GRAD("rsqrt_grad", "rsqrt", 0, 2, 2, "", 0),
    GRAD("erf_grad", "erf", 0, 2, 2, "", 0),
    GRAD("abs_grad", "abs", 0, 2, 2, "", 0),
    GRAD("rmsnorm_grad_x", "rmsnorm", 0, 2, 3, "eps,dim", 1),
    GRAD("rmsnorm_grad_w", "rmsnorm", 1, 3, 3, "eps,dim", 1),
    GRAD("layernorm_grad_x", "layernorm", 0, 2, 4, "eps,dim", 1),
    GRAD("layernorm_grad_w", "layernorm", 1, 3, 4, "eps,dim", 1),
    GRAD("layernorm_grad_b", "layernorm", 2, 4, 4, "eps,dim", 1),
    GRAD("matmul_grad_a", "matmul", 0, 3, 3, "", 0),
    GRAD("matmul_grad_b", "matmul", 1, 3, 3, "", 0),
    GRAD("attention_grad_q", "attention", 0, 4, 5, "scale,causal,offset", 0),
    GRAD("attention_grad_k", "attention", 1, 4, 5, "scale,causal,offset", 0),
    GRAD("attention_grad_v", "attention", 2, 4, 5, "scale,causal,offset", 0),
    GRAD("embedding_grad", "embedding", -1, 2, 3, "ids,shape", 0),
    {"softmax_grad", fwd_softmax_grad, NULL, NULL, 2, 2, "dim", 1, SM_SOFTMAX, 0, 0, NULL},
    {"log_softmax_grad", fwd_softmax_grad, NULL, NULL, 2, 2, "dim", 1, SM_LOG, 0, 0, NULL},
    {"rope_grad", fwd_rope_grad, NULL, NULL, 3, 3, "interleaved", 0, 0, 0, 0, NULL},
    {"cross_entropy_grad", fwd_ce_grad, NULL, NULL, 2, 4, "label_smoothing,reduction", 0, 0, 0, 0,
     NULL},
};

#undef EW
#undef GA
#undef RED
#undef GRAD

static const char *const op_names[] = {
    "neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu", "erf", "relu", "abs",
    "add", "sub", "mul", "div", "maximum", "minimum", "scale", "pow", "clamp", "where", "lt", "le",
    "gt", "ge", "eq", "ne", "dropout", "reshape", "view", "flatten", "squeeze", "unsqueeze",
    "transpose", "permute", "expand", "broadcast_to", "slice", "chunk", "split", "pad", "repeat",
    "repeat_interleave", "concat", "cat", "sum", "mean", "max", "min", "amax", "amin", "logsumexp",
    "softmax", "log_softmax", "causal_softmax", "causal_mask", "layernorm", "rmsnorm", "cross_entropy", "matmul",
    "embedding", "rope", "attention", "topk_mask", "relu_grad", "silu_grad", "gelu_grad",
    "sigmoid_grad", "tanh_grad", "exp_grad", "log_grad", "sqrt_grad", "rsqrt_grad", "erf_grad",
    "abs_grad", "rmsnorm_grad_x", "rmsnorm_grad_w", "layernorm_grad_x", "layernorm_grad_w",
    "layernorm_grad_b", "matmul_grad_a", "matmul_grad_b", "attention_grad_q", "attention_grad_k",
    "attention_grad_v", "embedding_grad", "softmax_grad", "log_softmax_grad", "rope_grad",
    "cross_entropy_grad", NULL};

static const op_def_t *find_op(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(op_table) / sizeof(op_table[0]); i++)
        if (strcmp(op_table[i].name, name) == 0)
            return &op_table[i];
    return NULL;
}

int sp_ops_attr_is_value(const char *name, const char *key, int pos)
{
    /* the attributes read by attr_num(), and pow's exponent (read as an integer, a value all
       the same: x^K); every other one is a position, an extent, a count or a flag */
    static const char *const values[] = {"c", "value", "p", "label_smoothing", "eps", "lo", "hi",
                                         "scale", NULL};
    const op_def_t *d = find_op(name);
    if (d == NULL)
        return 0;
    int k = key != NULL ? key_index(d->keys, key) : pos < d->npos ? pos : -1;
    const char *p = k < 0 ? NULL : d->keys; /* the k-th key's first alias */
    for (int i = 0; i < k && p != NULL; i++)
        if ((p = strchr(p, ',')) != NULL)
            p++;
    if (p == NULL)
        return 0;
    size_t n = strcspn(p, ",|");
    if (n == 1 && *p == 'k' && (!strcmp(d->name, "pow") || (d->base && !strcmp(d->base, "pow"))))
        return 1;
    for (int i = 0; values[i]; i++)
        if (strlen(values[i]) == n && !strncmp(p, values[i], n))
            return 1;
    return 0;
}

int sp_ops_known(const char *name) { return find_op(name) != NULL; }

const char *const *sp_ops_names(void) { return op_names; }

/* ---- the operator reference (docs/operators.md, `shardproof ops --markdown`) ------------------ */

/*
 * Semantics and engine class of every operator of op_table, keyed by name; sp_ops_info pairs
 * them with the table's arity, attributes and VJP, and test_ops checks that every operator has
 * an entry.  Kinds: "rational" (a polynomial or rational function of the inputs: exact normal
 * forms), "atoms" (transcendental functions kept as atoms keyed by canonical arguments, with the
 * rewrite rules of docs/soundness.md), "piecewise" (max/min/relu/comparison nodes, decided by
 * case splits), or both.
 */
typedef struct {
    const char *name, *kind, *doc;
} op_doc_t;

static const op_doc_t op_docs[] = {
    {"neg", "rational", "`-x`"},
    {"exp", "atoms", "`exp(x)`; `exp(a + b) = exp(a) exp(b)` is a rewrite rule, so max-shifted and "
                     "online softmax cancel exactly"},
    {"log", "atoms", "natural logarithm, defined for `x > 0`; `log(exp(u)) = u`, `log` of a product "
                     "of positive factors splits"},
    {"sqrt", "atoms", "`sqrt(x)`, defined for `x >= 0`"},
    {"rsqrt", "atoms", "`1 / sqrt(x)`, defined for `x > 0`"},
    {"tanh", "atoms", "`tanh(x)`"},
    {"sigmoid", "atoms", "`1 / (1 + exp(-x))`"},
    {"silu", "atoms", "`x * sigmoid(x)`"},
    {"gelu", "atoms", "exact GELU `x * Phi(x)`, `Phi` the standard normal CDF (not the tanh "
                      "approximation)"},
    {"erf", "atoms", "the error function; `erf(-u) = -erf(u)`"},
    {"relu", "piecewise", "`max(x, 0)`; gradient `[x > 0]`"},
    {"abs", "piecewise", "`|x|`; gradient `[x > 0] - [x < 0]`"},
    {"add", "rational", "`a + b`, NumPy broadcasting (also the infix `+`)"},
    {"sub", "rational", "`a - b`, broadcasting (infix `-`)"},
    {"mul", "rational", "`a * b`, broadcasting (infix `*`)"},
    {"div", "rational", "`a / b`, broadcasting (infix `/`); defined where `b != 0`"},
    {"maximum", "piecewise", "elementwise `max(a, b)`, broadcasting; the gradient goes to the first "
                             "extremal argument in canonical order"},
    {"minimum", "piecewise", "elementwise `min(a, b)`, broadcasting"},
    {"scale", "rational", "`c * x` for a rational constant `c`"},
    {"pow", "rational", "`x^k` for an integer `k` (negative: `1 / x^-k`); also the infix `^`"},
    {"clamp", "piecewise", "`min(max(x, lo), hi)`; bounds as tensors or as the attributes `lo`, "
                           "`hi` (either may be absent)"},
    {"where", "piecewise", "`a` where `cond != 0`, else `b`, broadcasting; `cond` gets no gradient"},
    {"lt", "piecewise", "`1` if `a < b` else `0` (an indicator; also the infix `<`)"},
    {"le", "piecewise", "`1` if `a <= b` else `0`"},
    {"gt", "piecewise", "`1` if `a > b` else `0`"},
    {"ge", "piecewise", "`1` if `a >= b` else `0`"},
    {"eq", "piecewise", "`1` if `a == b` else `0`"},
    {"ne", "piecewise", "`1` if `a != b` else `0`"},
    {"dropout", "rational", "`x * mask / (1 - p)` with an explicit mask tensor (the mask gets no "
                            "gradient)"},
    {"reshape", "rational", "row-major reshape to `shape` (one `-1` may be inferred)"},
    {"view", "rational", "`reshape`"},
    {"flatten", "rational", "merge dims `start..end` (inclusive, default all)"},
    {"squeeze", "rational", "drop size-1 dims (`dim`, or all of them)"},
    {"unsqueeze", "rational", "insert a size-1 dim at `dim`"},
    {"transpose", "rational", "swap `dim0` and `dim1` (default the last two)"},
    {"permute", "rational", "reorder the dims as `dims`"},
    {"expand", "rational", "broadcast to `shape` (`-1` keeps a dim); the gradient sums over the "
                           "broadcast dims"},
    {"broadcast_to", "rational", "`expand`"},
    {"slice", "rational", "`x[start:end:step]` along `dim`, Python clamping of the bounds"},
    {"chunk", "rational", "the `index`-th of `chunks` chunks along `dim`, `torch.chunk` sizes "
                          "(ceil); `allow_empty = 1`: the XLA rule, trailing chunks may be empty"},
    {"split", "rational", "the `index`-th piece along `dim` of pieces of sizes `sizes` (or all of "
                          "size `size`, the last smaller)"},
    {"pad", "rational", "`before` and `after` elements of `value` around `dim`"},
    {"repeat", "rational", "tile as `torch.Tensor.repeat(sizes)`, or `times` copies along `dim`"},
    {"repeat_interleave", "rational", "each element `repeats` times along `dim` (GQA's key/value "
                                      "head expansion)"},
    {"concat", "rational", "join the tensors along `dim`"},
    {"cat", "rational", "`concat`"},
    {"sum", "rational", "sum over `dim` (an integer or a list; default all dims), `keepdim`"},
    {"mean", "rational", "mean over `dim` (default all dims), `keepdim`"},
    {"max", "piecewise", "with two tensors: `maximum`; with one: the maximum over `dim` (default "
                         "all), an n-ary max node (so an all-reduce of local maxima equals the "
                         "global max)"},
    {"min", "piecewise", "with two tensors: `minimum`; with one: the minimum over `dim`"},
    {"amax", "piecewise", "the maximum over `dim` (default all dims)"},
    {"amin", "piecewise", "the minimum over `dim`"},
    {"logsumexp", "atoms", "`log(sum(exp(x)))` over `dim` (default -1)"},
    {"softmax", "atoms", "`exp(x_i) / sum_j exp(x_j)` over `dim` (default -1), exact (no max "
                         "shift needed: the shifted form is the same real function); with a second "
                         "tensor `m`: `exp(x) m / sum(exp(x) m)`"},
    {"log_softmax", "atoms", "`x_i - log(sum_j exp(x_j))` over `dim` (default -1)"},
    {"causal_softmax", "atoms", "softmax over the last dim of `[.., Sq, Sk]` keeping key `k <= q + "
                                "offset`, the others 0"},
    {"causal_mask", "rational", "`1` where `causal_softmax` keeps the element (key `k <= q + "
                                "offset` over the last two dims `[.., Sq, Sk]`), else `0`"},
    {"layernorm", "atoms", "`(x - mean) * rsqrt(var + eps) [* w] [+ b]` over the last dim "
                           "(biased variance, `eps` default 1e-5)"},
    {"rmsnorm", "atoms", "`x * rsqrt(mean(x^2) + eps) [* w]` over the last dim (`eps` default "
                         "1e-6)"},
    {"cross_entropy", "atoms", "`(1 - s) * -sum_v t_v log_softmax_v + s * mean_v(-log_softmax_v)` "
                               "per position for logits `[.., V]`, one-hot targets `t` and label "
                               "smoothing `s`; `reduction` `mean` (default; with a mask "
                               "`sum(mask * loss) / sum(mask)`), `sum` or `none`"},
    {"matmul", "rational", "`torch.matmul`: 1-d, 2-d and batched with broadcasting"},
    {"embedding", "rational", "`onehot [.., V] @ table [V, H]` (token ids as symbolic one-hot "
                              "inputs), or `embedding(table, ids = [..], shape = [..])`, a gather of "
                              "concrete rows"},
    {"rope", "rational", "rotary embedding of `x [.., S, D]` by `cos` and `sin` tables (per-position "
                         "symbols: a wrong offset is a different symbol); pairs `(i, i + D/2)` "
                         "(rotate_half), or `(2i, 2i + 1)` with `interleaved = 1`; tables `[.., S, "
                         "D/2]` or full `[.., S, D]`"},
    {"attention", "atoms", "`softmax(q k^T * scale [+ mask]) v` for `q [.., Hq, Sq, D]`, `k [.., "
                           "Hkv, Sk, D]`, `v [.., Hkv, Sk, Dv]` (GQA: query head `h` reads kv head "
                           "`h / (Hq/Hkv)`); `scale` default `rsqrt(D)` of the checked head dim; "
                           "`causal = 1` keeps key `j <= i + offset` (a row with no key gives 0)"},
    {"topk_mask", "piecewise", "`1` at the `k` largest elements along `dim` (ties to the lower "
                               "index), else `0`; exact comparisons"},
    {"relu_grad", "piecewise", "`dy * [x > 0]`: `relu`'s VJP, for explicit backward passes "
                               "(`relu_grad(x, dy)`)"},
    {"silu_grad", "atoms", "`dy * silu'(x)`"},
    {"gelu_grad", "atoms", "`dy * gelu'(x)`"},
    {"sigmoid_grad", "atoms", "`dy * sigmoid'(x)`"},
    {"tanh_grad", "atoms", "`dy * (1 - tanh(x)^2)`"},
    {"exp_grad", "atoms", "`dy * exp(x)`"},
    {"log_grad", "rational", "`dy / x`"},
    {"sqrt_grad", "atoms", "`dy / (2 sqrt(x))`"},
    {"rsqrt_grad", "atoms", "`dy * -rsqrt(x) / (2 x)`"},
    {"erf_grad", "atoms", "`dy * 2 exp(-x^2) / sqrt(pi)`"},
    {"abs_grad", "piecewise", "`dy * ([x > 0] - [x < 0])`"},
    {"rmsnorm_grad_x", "atoms", "the gradient of `rmsnorm(x, [w])` with respect to `x`: "
                                "`rmsnorm_grad_x(x, [w], dy)`"},
    {"rmsnorm_grad_w", "atoms", "with respect to `w`: `rmsnorm_grad_w(x, w, dy)`"},
    {"layernorm_grad_x", "atoms", "the gradient of `layernorm(x, [w, [b]])` with respect to `x`"},
    {"layernorm_grad_w", "atoms", "with respect to `w`"},
    {"layernorm_grad_b", "atoms", "with respect to `b`"},
    {"matmul_grad_a", "rational", "the gradient of `matmul(a, b)` with respect to `a`: "
                                  "`matmul_grad_a(a, b, dy)`"},
    {"matmul_grad_b", "rational", "with respect to `b`"},
    {"attention_grad_q", "atoms", "the gradient of `attention(q, k, v, [mask])` with respect to "
                                  "`q`: `attention_grad_q(q, k, v, [mask], dy)`"},
    {"attention_grad_k", "atoms", "with respect to `k`"},
    {"attention_grad_v", "atoms", "with respect to `v`"},
    {"embedding_grad", "rational", "the gradient of `embedding` with respect to the table"},
    {"softmax_grad", "rational", "`y * (dy - sum(y * dy))` from the forward output `y`: "
                                 "`softmax_grad(y, dy, dim)`"},
    {"log_softmax_grad", "atoms", "`dy - exp(y) sum(dy)` from the forward output `y`"},
    {"rope_grad", "rational", "the inverse rotation: `rope_grad(dy, cos, sin)`"},
    {"cross_entropy_grad", "atoms", "the gradient of `cross_entropy` with respect to the logits: "
                                    "`cross_entropy_grad(logits, target, [mask, [dloss]])` "
                                    "(`dloss` default 1)"},
};

int sp_ops_count(void) { return (int)(sizeof(op_table) / sizeof(op_table[0])); }

int sp_ops_info(int i, sp_op_info_t *out)
{
    if (i < 0 || i >= sp_ops_count())
        return 0;
    const op_def_t *d = &op_table[i];
    memset(out, 0, sizeof(*out));
    out->name = d->name;
    out->min_in = d->min_in;
    out->max_in = d->max_in;
    out->attrs = d->keys;
    out->npos = d->npos;
    out->vjp = d->base ? -1 : (d->flags & OPF_NOGRAD) ? 0 : d->vjp ? 1 : -1;
    out->grad_of = d->base;
    for (size_t k = 0; k < sizeof(op_docs) / sizeof(op_docs[0]); k++)
        if (!strcmp(op_docs[k].name, d->name)) {
            out->kind = op_docs[k].kind;
            out->doc = op_docs[k].doc;
        }
    return 1;
}

/* ---- entry points --------------------------------------------------------------------------- */

/* Attributes made from trailing literal tensors, followed by the caller's attributes. */
typedef struct {
    sp_attr_t *all;
    int nconv;
} attrbuf_t;

static void attrbuf_clear(attrbuf_t *ab)
{
    for (int i = 0; i < ab->nconv; i++)
        fmpq_clear(ab->all[i].num);
    flint_free(ab->all);
    ab->all = NULL;
    ab->nconv = 0;
}

static int is_literal(const sp_ectx_t E, const sp_tensor_t *t)
{
    return t->ndim == 0 && t->v != NULL && t->v[0] != SP_EXPR_NONE && t->v[0] < E->len &&
           sp_expr_op(E, t->v[0]) == SP_OP_CONST;
}

int valid_tensor(const sp_tensor_t *t)
{
    if (t->ndim < 0 || t->ndim > SP_MAX_DIMS || t->v == NULL)
        return 0;
    return shape_numel(t->ndim, t->shape) >= 0;
}

static int prepare(opc_t *c, attrbuf_t *ab)
{
    const op_def_t *d = c->def;
    memset(ab, 0, sizeof(*ab));
    if (c->nin < 0 || (c->nin > 0 && c->in == NULL) || c->nattr < 0 ||
        (c->nattr > 0 && c->attr == NULL))
        return fail(c, "invalid arguments");
    for (int k = 0; k < c->nin; k++)
        if (!valid_tensor(&c->in[k]))
            return fail(c, "argument %d is not a valid tensor", k + 1);
    for (int k = 0; k < c->nattr; k++) {
        const sp_attr_t *a = &c->attr[k];
        if (a->kind == SP_ATTR_NAME && a->name == NULL)
            return fail(c, "attribute %d has no value", k + 1);
    }
    /* trailing literal tensors as positional attributes */
    int n = c->nin, conv = 0;
    while (d->npos > 0 && n > d->min_in && is_literal(c->E, &c->in[n - 1]) &&
           ((d->max_in >= 0 && n > d->max_in) || (d->flags & OPF_LITATTR)))
        n--, conv++;
    if (conv > 0) {
        ab->all = flint_calloc((size_t)(conv + c->nattr), sizeof(sp_attr_t));
        if (ab->all == NULL)
            return fail(c, "out of memory");
        for (int i = 0; i < conv; i++) {
            fmpq_init(ab->all[i].num);
            ab->nconv++;
            ab->all[i].kind = SP_ATTR_NUM;
            fmpq_set(ab->all[i].num, sp_expr_const(c->E, c->in[n + i].v[0]));
        }
        if (c->nattr > 0)
            memcpy(ab->all + conv, c->attr, (size_t)c->nattr * sizeof(sp_attr_t));
        c->attr = ab->all;
        c->nattr += conv;
        c->nin = n;
        c->nconv = conv;
    }
    if (c->nin < d->min_in || (d->max_in >= 0 && c->nin > d->max_in)) {
        if (d->max_in == d->min_in)
            return fail(c, "expected %d tensor argument%s, got %d", d->min_in,
                        d->min_in == 1 ? "" : "s", c->nin);
        if (d->max_in < 0)
            return fail(c, "expected at least %d tensor argument%s, got %d", d->min_in,
                        d->min_in == 1 ? "" : "s", c->nin);
        return fail(c, "expected %d to %d tensor arguments, got %d", d->min_in, d->max_in, c->nin);
    }
    return check_attrs(c);
}

/* Every element built, and the store not out of memory. */
static int check_built(opc_t *c, const sp_tensor_t *t)
{
    if (t->ndim < 0)
        return 1;
    int64_t n = sp_tensor_numel(t);
    int ok = !c->E->oom && t->v != NULL;
    for (int64_t i = 0; ok && i < n; i++)
        ok = t->v[i] != SP_EXPR_NONE;
    return ok ? 1 : fail(c, "out of memory or expression node limit (--max-nodes)");
}

static void set_err(sp_op_err_t *err, const char *fmt, const char *name)
{
    if (err != NULL)
        snprintf(err->msg, sizeof(err->msg), fmt, name ? name : "(null)");
}

/*
 * Hollow operands (src/shard_exec.c): an operand tensor with a hollow element is made hollow
 * in every non-constant element before the operator runs, so that what the operator computes
 * from it costs few nodes (the shapes, and so every check and error, are the real operands';
 * constants, such as indices, are kept).  This only widens the values a sharded run did not
 * compute; a stage that meets one makes the run execute in full.
 */
static int any_hollow(const sp_ectx_t E, const sp_tensor_t *t)
{
    int64_t n = t != NULL && t->v != NULL && t->ndim >= 0 ? sp_tensor_numel(t) : 0;
    for (int64_t e = 0; e < n; e++)
        if (t->v[e] != SP_EXPR_NONE && (E->nodes[t->v[e]].flags & SP_NODE_HOLLOW))
            return 1;
    return 0;
}

/* *h: a copy of t with every non-constant element the hollow symbol */
static int hollow_copy(sp_ectx_t E, const sp_tensor_t *t, sp_tensor_t *h)
{
    sp_tensor_init(h);
    if (t == NULL || t->v == NULL || t->ndim < 0) {
        if (t != NULL)
            h->ndim = t->ndim;
        return 1;
    }
    if (!sp_tensor_alloc(h, t->ndim, t->shape))
        return 0;
    memcpy(h->pos, t->pos, sizeof(h->pos));
    h->masks = t->masks;
    h->mask_axes = t->mask_axes;
    h->mask_ext = t->mask_ext;
    int64_t n = sp_tensor_numel(t);
    for (int64_t e = 0; e < n; e++)
        h->v[e] = t->v[e] != SP_EXPR_NONE && sp_expr_op(E, t->v[e]) == SP_OP_CONST ? t->v[e]
                                                                                 : E->hollow;
    return 1;
}

/* An operator call's operands with each that holds a hollow element replaced by its hollow
   copy (t[k] borrowed from the caller where own[k] is 0) */
typedef struct {
    sp_tensor_t *t;
    uint8_t *own;
    int n;
} hollow_ops_t;

/* Does an operator's call meet a hollow operand (in[], and more[]: a VJP's out and dout)?
   Then H holds in[] and more[] with the hollow ones replaced (free with hollow_free). */
static int hollow_operands(sp_ectx_t E, const sp_tensor_t *in, int nin, const sp_tensor_t *more,
                           int nmore, hollow_ops_t *H)
{
    memset(H, 0, sizeof *H);
    if (E->hollow == SP_EXPR_NONE)
        return 0;
    int n = nin + nmore, hit = 0;
    uint8_t *h = flint_calloc((size_t)(n > 0 ? n : 1), 1);
    for (int k = 0; k < n; k++) {
        const sp_tensor_t *t = k < nin ? &in[k] : &more[k - nin];
        h[k] = (uint8_t)(t->ndim >= 0 && t->v != NULL && (E->force_hollow || any_hollow(E, t)));
        hit |= h[k];
    }
    if (!hit) {
        flint_free(h);
        return 0;
    }
    H->t = flint_calloc((size_t)n, sizeof(sp_tensor_t));
    H->own = h;
    H->n = n;
    for (int k = 0; k < n; k++) {
        const sp_tensor_t *t = k < nin ? &in[k] : &more[k - nin];
        if (!h[k])
            H->t[k] = *t;
        else if (!hollow_copy(E, t, &H->t[k]))
            return 0; /* the call goes on with the real operands */
    }
    return 1;
}

static void hollow_free(hollow_ops_t *H)
{
    for (int k = 0; k < H->n; k++)
        if (H->own[k])
            sp_tensor_clear(&H->t[k]);
    flint_free(H->t);
    flint_free(H->own);
}

static int ops_apply(sp_ectx_t E, const sp_op_env_t *env, const char *name,
                     const sp_tensor_t *in, int nin, const sp_attr_t *attr, int nattr,
                     int64_t max_numel, sp_tensor_t *out, sp_op_err_t *err);

int32_t sp_masks_add(int64_t a, int64_t b)
{
    int64_t m = a + b;
    return (int32_t)(m < (1 << 20) ? m : (1 << 20));
}

void sp_masks_join(sp_tensor_t *dst, const sp_tensor_t *src)
{
    if (src->masks <= 0)
        return;
    if (dst->masks <= 0) {
        dst->masks = src->masks;
        dst->mask_axes = src->mask_axes;
        dst->mask_ext = src->mask_ext;
        return;
    }
    if (dst->mask_axes == src->mask_axes && !(dst->mask_axes & SP_MASK_AXES_ANY) &&
        dst->mask_ext == src->mask_ext && dst->mask_ext >= 0) {
        if (src->masks > dst->masks)
            dst->masks = src->masks;
        return;
    }
    uint32_t u = dst->mask_axes | src->mask_axes;
    dst->masks = sp_masks_add(dst->masks, src->masks);
    dst->mask_axes = u & SP_MASK_AXES_ANY ? SP_MASK_AXES_ANY : u;
    dst->mask_ext = dst->mask_ext == src->mask_ext ? dst->mask_ext : -1;
}

/* t's mask axes as axes of an output of nd axes, t aligned to its last axes (broadcasting) */
static uint32_t axes_aligned(const sp_tensor_t *t, int nd)
{
    if (t->mask_axes & SP_MASK_AXES_ANY || t->ndim > nd)
        return SP_MASK_AXES_ANY;
    return t->mask_axes << (nd - t->ndim);
}

/*
 * The masks an operator's values may compose, and the axes they lie on (sp_tensor_t.masks,
 * .mask_axes).  Patterns compose where positions chain through a shared axis: f1[t,s] f2[s,u]
 * summed over s keeps t < s < u when both masks are strict (helper-88's review, session 45: a
 * slack of 1 each, S - 2 kept).  So an operator over two or more operands that carry masks sums
 * their counts, except where the values only meet at one position of the same axes: an
 * elementwise operator whose operands' patterns lie on the same known axes of the output (after
 * broadcasting: a product of masks expanded from [T, S] and from [S, U] lies on different axes
 * and chains; helper-89's review), and a concatenation (side by side); there the largest stands
 * for all.  A gather (a shape operator) moves its operand's axes as it maps them (fwd_gather sets
 * mask_axes), a reduction drops the reduced ones (recording a masked one's extent, mask_ext:
 * operands summed over axes of different extents are not the same either), and any other
 * operator (a matmul, attention, a norm) makes its output's axes not known.  causal_mask and
 * causal_softmax add 1 (the caller adds |o| for a literal offset: src/exec_pos.c) on their last
 * two axes; a causal attention adds 1 over operands that carry masks (over values without masks
 * its pattern is the inclusive diagonal, which composes into itself and which no later operator
 * sees as a 0/1 mask).
 */
static void mask_count(const opc_t *c, sp_tensor_t *y)
{
    const char *name = c->name;
    int nd = y->ndim, carrying = 0, same = 1;
    int64_t sum = 0, max = 0;
    uint32_t axes = 0, first = 0;
    int32_t ext = 0;
    for (int k = 0; k < c->nin; k++) {
        const sp_tensor_t *t = &c->in[k];
        if (t->masks <= 0)
            continue;
        uint32_t a = c->def->fwd == fwd_ew ? axes_aligned(t, nd) : t->mask_axes;
        if (carrying++ == 0) {
            first = a;
            ext = t->mask_ext;
        }
        same &= a == first && !(a & SP_MASK_AXES_ANY) && t->mask_ext == ext && ext >= 0;
        ext = t->mask_ext == ext ? ext : -1;
        axes |= a;
        sum += t->masks;
        max = t->masks > max ? t->masks : max;
    }
    int cat = strcmp(name, "concat") == 0 || strcmp(name, "cat") == 0;
    int64_t m = carrying <= 1 || (c->def->fwd == fwd_ew && same) || (cat && same) ? max : sum;
    if (c->def->fwd == fwd_ew || cat) {
        /* axes as aligned above */
    } else if (c->def->fwd == fwd_gather && c->nin == 1) {
        axes = carrying ? y->mask_axes : 0; /* fwd_gather mapped them */
    } else if (c->def->fwd == fwd_reduce && c->nin == 1 && carrying &&
               !(axes & SP_MASK_AXES_ANY)) {
        /* a sum over an axis a pattern lies on: the pattern now relates the kept axes to that
           axis's elements in the values (sum(f1 * w, 0) of f1 on [T, S] keeps t < s for each s),
           which a product with a sum over another axis's (f2 on [S, U] summed over U) chains
           through the kept one (helper-90's review): such values are the same only where they
           were summed over axes of one extent */
        for (int d = 0; d < c->in[0].ndim; d++)
            if ((c->red_mask >> d & 1u) && (axes >> d & 1u)) {
                int32_t e = c->in[0].pos[d].ext > 1 ? c->in[0].pos[d].ext : -1;
                ext = ext == 0 || ext == e ? e : -1;
            }
        if (y->ndim != c->in[0].ndim) { /* the reduced axes dropped */
            uint32_t kept = 0;
            for (int d = 0, o = 0; d < c->in[0].ndim; d++)
                if (!(c->red_mask >> d & 1u))
                    kept |= (axes >> d & 1u) << o++;
            axes = kept;
        }
    } else if (carrying && strncmp(name, "attention", 9) != 0) {
        axes = SP_MASK_AXES_ANY;
    }
    if (strcmp(name, "causal_mask") == 0 || strcmp(name, "causal_softmax") == 0) {
        m++;
        if (!(axes & SP_MASK_AXES_ANY) && nd >= 2)
            axes |= 3u << (nd - 2);
    } else if (m > 0 && strncmp(name, "attention", 9) == 0) {
        /* queries [.., Sq, D], keys and values [.., Sk, D] and the outputs and gradients of
           those shapes: a pattern on an operand's axis stays on that axis, and the keys' axis
           chains onto the queries' (its mask), the same index */
        m++;
        axes = nd >= 2 ? 1u << (nd - 2) : SP_MASK_AXES_ANY;
        for (int k = 0; k < c->nin && !(axes & SP_MASK_AXES_ANY); k++)
            if (c->in[k].masks > 0)
                axes |= axes_aligned(&c->in[k], nd);
    }
    y->masks = sp_masks_add(m, 0);
    y->mask_axes = m > 0 ? axes : 0;
    y->mask_ext = m > 0 && !(axes & SP_MASK_AXES_ANY) ? ext : m > 0 ? -1 : 0;
}

int sp_ops_apply_env(sp_ectx_t E, const sp_op_env_t *env, const char *name, const sp_tensor_t *in,
                     int nin, const sp_attr_t *attr, int nattr, int64_t max_numel,
                     sp_tensor_t *out, sp_op_err_t *err)
{
    hollow_ops_t H;
    int hollow = hollow_operands(E, in, nin, NULL, 0, &H);
    int ok = ops_apply(E, env, name, hollow ? H.t : in, nin, attr, nattr, max_numel, out, err);
    hollow_free(&H);
    return ok;
}

int sp_ops_apply(sp_ectx_t E, const char *name, const sp_tensor_t *in, int nin,
                 const sp_attr_t *attr, int nattr, int64_t max_numel, sp_tensor_t *out,
                 sp_op_err_t *err)
{
    return sp_ops_apply_env(E, NULL, name, in, nin, attr, nattr, max_numel, out, err);
}

static int ops_apply(sp_ectx_t E, const sp_op_env_t *env, const char *name,
                     const sp_tensor_t *in, int nin, const sp_attr_t *attr, int nattr,
                     int64_t max_numel, sp_tensor_t *out, sp_op_err_t *err)
{
    if (err != NULL) {
        err->msg[0] = 0;
        err->attr = -1;
        err->elements = 0;
        err->div_size = err->div_by = 0;
        err->div_min = 1;
        err->clamped = SP_CLAMP_NONE;
        err->exact_sum = 0;
        err->counted = 0;
    }
    const op_def_t *def = find_op(name);
    if (def == NULL) {
        set_err(err, "unknown operator '%s'", name);
        return 0;
    }
    opc_t c = {E, def, name, in, nin, attr, nattr, max_numel, err, 0, 0, 0, 0, 0, env};
    attrbuf_t ab;
    sp_tensor_t res;
    sp_tensor_init(&res);
    int ok = prepare(&c, &ab) && def->fwd(&c, &res) && check_built(&c, &res);
    if (ok) {
        pos_op(&c, &res);
        mask_count(&c, &res);
    }
    attrbuf_clear(&ab);
    if (!ok) {
        sp_tensor_clear(&res);
        return 0;
    }
    sp_tensor_clear(out);
    *out = res;
    return 1;
}

/* The forward output into y, then the VJP rule into din (c->nin tensors, ndim -1 on entry). */
static int run_vjp(opc_t *c, const sp_tensor_t *dy, sp_tensor_t *din, sp_tensor_t *y,
                   const sp_tensor_t *known)
{
    /* the forward output: the caller's (a tape's), or rebuilt unless the rule needs none */
    const sp_tensor_t *yv = known;
    if (yv == NULL && !(c->def->flags & OPF_VJP_OWN && c->def->vjp != NULL)) {
        int64_t lim = c->max_numel;
        c->max_numel = 0;
        int ok = c->def->fwd(c, y);
        c->max_numel = lim;
        if (!ok)
            return 0;
        yv = y;
    }
    if (yv != NULL && (dy == NULL || !valid_tensor(dy) || !sp_tensor_same_shape(dy, yv)))
        return fail(c, "gradient shape %s does not match output shape %s",
                    dy && dy->ndim >= 0 && dy->ndim <= SP_MAX_DIMS ? TS(dy).s : "?", TS(yv).s);
    if (c->def->flags & OPF_NOGRAD)
        return 1;
    if (c->def->vjp == NULL)
        return fail(c, "no VJP rule");
    return c->def->vjp(c, yv, dy, din);
}

static int ops_vjp(sp_ectx_t E, const sp_op_env_t *env, const char *name,
                   const sp_tensor_t *in, int nin, const sp_attr_t *attr, int nattr,
                   const sp_tensor_t *out, const sp_tensor_t *dout, sp_tensor_t *din,
                   sp_op_err_t *err);

int sp_ops_vjp(sp_ectx_t E, const char *name, const sp_tensor_t *in, int nin,
               const sp_attr_t *attr, int nattr, const sp_tensor_t *out, const sp_tensor_t *dout,
               sp_tensor_t *din, sp_op_err_t *err)
{
    return sp_ops_vjp_env(E, NULL, name, in, nin, attr, nattr, out, dout, din, err);
}

int sp_ops_vjp_env(sp_ectx_t E, const sp_op_env_t *env, const char *name, const sp_tensor_t *in,
                   int nin, const sp_attr_t *attr, int nattr, const sp_tensor_t *out,
                   const sp_tensor_t *dout, sp_tensor_t *din, sp_op_err_t *err)
{
    hollow_ops_t H;
    sp_tensor_t more[2], y;
    sp_tensor_init(&y);
    /* a hollow forward output (a tape's) with a real dout: the forward again, the very nodes a
       full run's forward made (rules differ in form when they rebuild it themselves) */
    if (out != NULL && valid_tensor(out) && E->hollow != SP_EXPR_NONE && !E->force_hollow &&
        any_hollow(E, out) && dout != NULL && !any_hollow(E, dout) &&
        sp_ops_apply_env(E, env, name, in, nin, attr, nattr, 0, &y, NULL))
        out = &y;
    more[0] = out != NULL ? *out : (sp_tensor_t){.ndim = -1};
    more[1] = dout != NULL ? *dout : (sp_tensor_t){.ndim = -1};
    int ok;
    if (hollow_operands(E, in, nin, more, 2, &H))
        ok = ops_vjp(E, env, name, H.t, nin, attr, nattr, out != NULL ? &H.t[nin] : NULL,
                     dout != NULL ? &H.t[nin + 1] : NULL, din, err);
    else
        ok = ops_vjp(E, env, name, in, nin, attr, nattr, out, dout, din, err);
    hollow_free(&H);
    sp_tensor_clear(&y);
    return ok;
}

static int ops_vjp(sp_ectx_t E, const sp_op_env_t *env, const char *name,
                   const sp_tensor_t *in, int nin, const sp_attr_t *attr, int nattr,
                   const sp_tensor_t *out, const sp_tensor_t *dout, sp_tensor_t *din,
                   sp_op_err_t *err)
{
    if (err != NULL) {
        err->msg[0] = 0;
        err->attr = -1;
        err->elements = 0;
        err->div_size = err->div_by = 0;
        err->div_min = 1;
        err->clamped = SP_CLAMP_NONE;
        err->exact_sum = 0;
        err->counted = 0;
    }
    for (int k = 0; din != NULL && k < nin; k++) {
        sp_tensor_clear(&din[k]);
        din[k].ndim = -1;
    }
    const op_def_t *def = find_op(name);
    if (def == NULL) {
        set_err(err, "unknown operator '%s'", name);
        return 0;
    }
    opc_t c = {E, def, name, in, nin, attr, nattr, 0, err, 0, 0, 0, 0, 0, env};
    if (din == NULL && nin > 0)
        return fail(&c, "no gradient storage");
    attrbuf_t ab;
    sp_tensor_t y;
    sp_tensor_init(&y);
    const sp_tensor_t *known = out != NULL && valid_tensor(out) ? out : NULL;
    int ok = prepare(&c, &ab) && run_vjp(&c, dout, din, &y, known);
    if (ok && out != NULL && known == NULL)
        ok = fail(&c, "output shape %s does not match %s", out->ndim >= 0 &&
                  out->ndim <= SP_MAX_DIMS ? TS(out).s : "?", y.ndim >= 0 ? TS(&y).s : "?");
    for (int k = 0; ok && k < nin; k++)
        ok = check_built(&c, &din[k]);
    /* an adjoint composes what the forward did (the forward output's count, which counts a
       literal offset's slack: src/exec_pos.c) and the output's gradient */
    int64_t mf = 0;
    for (int k = 0; k < nin; k++)
        mf += in[k].masks > 0 ? in[k].masks : 0;
    if (known != NULL && known->masks > mf)
        mf = known->masks;
    int32_t masks = sp_masks_add(mf, dout != NULL && dout->masks > 0 ? dout->masks : 0);
    for (int k = 0; ok && din != NULL && k < nin; k++) {
        din[k].masks = masks;
        din[k].mask_axes = masks > 0 ? SP_MASK_AXES_ANY : 0;
        din[k].mask_ext = masks > 0 ? -1 : 0;
    }
    attrbuf_clear(&ab);
    sp_tensor_clear(&y);
    if (!ok)
        for (int k = 0; din != NULL && k < nin; k++) {
            sp_tensor_clear(&din[k]);
            din[k].ndim = -1;
        }
    return ok;
}
