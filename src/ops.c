/* ops.c: the tensor operator library: forward semantics and VJP rules on symbolic tensors. */
#include <flint/flint.h>
#include "ops.h"
#include "diag.h"
#include "memo.h"
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
 * VJP rules (sp_ops_vjp) exist for every operator above; comparisons, topk_mask, where's
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

#define NUMEL_LIMIT ((int64_t)1 << 30)
#define ATTR_INT_LIMIT ((int64_t)1 << 40)

/* ---- tensors -------------------------------------------------------------------------------- */

static int64_t shape_numel(int ndim, const int64_t *shape)
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

int sp_tensor_alloc(sp_tensor_t *t, int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > SP_MAX_DIMS)
        return 0;
    int64_t sh[SP_MAX_DIMS] = {0};
    if (ndim > 0)
        memcpy(sh, shape, (size_t)ndim * sizeof(int64_t)); /* shape may alias t->shape */
    int64_t n = shape_numel(ndim, sh);
    if (n < 0)
        return 0;
    sp_expr_t *v = flint_calloc((size_t)(n ? n : 1), sizeof(sp_expr_t));
    if (v == NULL)
        return 0;
    flint_free(t->v);
    t->v = v;
    t->ndim = ndim;
    memcpy(t->shape, sh, sizeof(sh));
    return 1;
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
    if (src->ndim < 0 || src->v == NULL || !sp_tensor_alloc(dst, src->ndim, src->shape)) {
        sp_tensor_clear(dst);
        dst->ndim = -1;
        return;
    }
    memcpy(dst->v, src->v, (size_t)sp_tensor_numel(src) * sizeof(sp_expr_t));
}

static void unravel(int64_t i, int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
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

/* A shape as text, by value so that it can be used inline in a message. */
typedef struct {
    char s[160];
} shstr_t;

static shstr_t SH(int ndim, const int64_t *shape)
{
    shstr_t r;
    fmt_shape(r.s, sizeof(r.s), ndim, shape);
    return r;
}

static shstr_t TS(const sp_tensor_t *t) { return SH(t->ndim, t->shape); }

/* ---- operator context, errors, attributes ------------------------------------------------- */

typedef struct op_def op_def_t;

typedef struct {
    sp_ectx_struct *E;
    const op_def_t *def;
    const char *name; /* as called, for messages */
    const sp_tensor_t *in;
    int nin;
    const sp_attr_t *attr;
    int nattr;
    int64_t max_numel;
    sp_op_err_t *err;
    int nconv; /* attr[0..nconv) were made from trailing literal tensors (prepare) */
    unsigned want; /* VJP: the inputs whose gradients are asked for (bit k: in[k]); 0 = all */
} opc_t;

/* Is in[k]'s gradient asked for?  (A rule may compute more; <op>_grad_<k> asks for one.) */
static int wanted(const opc_t *c, int k) { return c->want == 0 || (c->want >> k & 1u); }

/* A gather: output element i is element src[i] of the inputs' element arrays laid end to end,
   or fill when src[i] < 0; src NULL means src[i] = i. */
typedef struct {
    int ndim;
    int64_t shape[SP_MAX_DIMS];
    int64_t *src;
    sp_expr_t fill;
} gather_t;

typedef int (*fwd_fn)(opc_t *c, sp_tensor_t *out);
/* y is the forward output (recomputed), dy its gradient; din has c->nin tensors with ndim -1. */
typedef int (*vjp_fn)(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
typedef int (*gather_fn)(opc_t *c, gather_t *g);

#define OPF_NOGRAD 1u  /* derivative zero almost everywhere: no input gets a gradient */
#define OPF_LITATTR 2u /* trailing 0-d constant tensors are positional attributes */
#define OPF_VJP_OWN 4u /* the VJP rule checks dy's shape itself and never reads y: without the
                          forward output at hand, the forward is not rebuilt for it */

struct op_def {
    const char *name;
    fwd_fn fwd;
    vjp_fn vjp;
    gather_fn gather; /* shape operators */
    int min_in, max_in; /* tensor arguments; max_in < 0: unbounded */
    const char *keys;   /* attribute keys in positional order, ',' separated, '|' aliases */
    int npos;           /* how many leading keys may be positional */
    int code, sub;      /* operator-specific */
    unsigned flags;
    const char *base;   /* gradient operators: the forward operator */
};

static int fail(opc_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(opc_t *c, const char *fmt, ...)
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
static int fail_elements(opc_t *c, const char *shape, int64_t n)
{
    if (c->err != NULL && c->err->msg[0] == 0)
        c->err->elements = 1;
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

static const sp_attr_t *get_attr(const opc_t *c, const char *key)
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

static int num_to_int(const sp_attr_t *a, int64_t *out)
{
    if (a->kind != SP_ATTR_NUM || !fmpz_is_one(fmpq_denref(a->num)) ||
        fmpz_bits(fmpq_numref(a->num)) > 40)
        return 0;
    *out = (int64_t)fmpz_get_si(fmpq_numref(a->num));
    return 1;
}

/* An integer attribute; dflt when absent. */
static int attr_int(opc_t *c, const char *key, int64_t dflt, int64_t *out, int *present)
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

static int attr_need_int(opc_t *c, const char *key, int64_t *out)
{
    int present;
    if (!attr_int(c, key, 0, out, &present))
        return 0;
    if (!present)
        return fail(c, "missing attribute '%s'", key);
    return 1;
}

static int attr_flag(opc_t *c, const char *key, int *out)
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
static int attr_num(opc_t *c, const char *key, slong num, ulong den, fmpq_t out, int *present)
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
static int attr_list(opc_t *c, const char *key, int64_t *one, const int64_t **list, int *n,
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

static int norm_dim(opc_t *c, int64_t d, int ndim, int *out)
{
    *out = 0;
    int n = ndim > 0 ? ndim : 1; /* torch accepts dim 0 / -1 on a 0-d tensor */
    if (d < -n || d >= n)
        return fail(c, "dimension %lld out of range for a %d-d tensor", (long long)d, ndim);
    *out = (int)(d < 0 ? d + n : d);
    return 1;
}

static int out_alloc(opc_t *c, sp_tensor_t *out, int ndim, const int64_t *shape)
{
    if (ndim > SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", ndim, SP_MAX_DIMS);
    int64_t n = shape_numel(ndim, shape);
    if (n < 0)
        return fail(c, "output %s is too large", SH(ndim, shape).s);
    if (c->max_numel > 0 && n > c->max_numel)
        return fail_elements(c, SH(ndim, shape).s, n);
    if (!sp_tensor_alloc(out, ndim, shape))
        return fail(c, "out of memory");
    return 1;
}

/* ---- expression helpers ------------------------------------------------------------------- */

static sp_expr_t K(sp_ectx_t E, slong num, ulong den) { return sp_expr_const_si(E, num, den); }

static int is_const_si(const sp_ectx_t E, sp_expr_t e, slong v)
{
    if (e == SP_EXPR_NONE || sp_expr_op(E, e) != SP_OP_CONST)
        return 0;
    return fmpq_equal_si((fmpq *)sp_expr_const(E, e), v);
}

static sp_expr_t mul2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
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
static void pairs(sp_expr_t *px, sp_expr_t *py, const sp_expr_t *x, int64_t sx, const sp_expr_t *y,
                  int64_t sy, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        px[i] = x[i * sx];
        py[i] = y[i * sy];
    }
}

static sp_expr_t mul3(sp_ectx_t E, sp_expr_t a, sp_expr_t b, sp_expr_t c)
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

static sp_expr_t add2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (is_const_si(E, a, 0))
        return b;
    if (is_const_si(E, b, 0))
        return a;
    return sp_expr_add(E, a, b);
}

static sp_expr_t sub2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (is_const_si(E, b, 0))
        return a;
    if (is_const_si(E, a, 0))
        return sp_expr_unary(E, SP_OP_NEG, b);
    return sp_expr_sub(E, a, b);
}

/* Sum of v[0..n) as one n-ary ADD, literal zeros dropped.  v is scratch (compacted in place). */
static sp_expr_t addv(sp_ectx_t E, sp_expr_t *v, int64_t n)
{
    uint32_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (!is_const_si(E, v[i], 0))
            v[m++] = v[i];
    return m == 0 ? K(E, 0, 1) : sp_expr_nary(E, SP_OP_ADD, v, m);
}

static sp_expr_t *scratch(opc_t *c, int64_t n)
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
static int extremal_grads(sp_ectx_t E, sp_expr_t e, const sp_expr_t *m, uint32_t n, int is_max,
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

static void strides_of(int ndim, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

static int bcast_shape(int an, const int64_t *as, int bn, const int64_t *bs, int *on,
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

static int can_expand(int in_nd, const int64_t *in_shape, int out_nd, const int64_t *out_shape)
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
static int64_t *bcast_map(int in_nd, const int64_t *in_shape, int out_nd,
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

/* Compressed groups: the members of group g are idx[start[g] .. start[g+1]), ascending. */
typedef struct {
    int64_t ng;
    int64_t *start;
    int64_t *idx;
} groups_t;

static void groups_clear(groups_t *g)
{
    flint_free(g->start);
    flint_free(g->idx);
    memset(g, 0, sizeof(*g));
}

/* Group i -> map[i] (entries < 0 belong to no group).  map NULL: the identity. */
static int groups_build(groups_t *g, const int64_t *map, int64_t n, int64_t ng)
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

/* res[k] = sum of vals[i] over i with map[i] == k, as n-ary sums. */
static int scatter_sum(opc_t *c, const sp_expr_t *vals, const int64_t *map, int64_t n, int64_t ng,
                       sp_expr_t *res)
{
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
static int reduce_map(opc_t *c, const sp_tensor_t *x, const int *mask, int keepdim, int *ondim,
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
static int lanes_build(opc_t *c, const sp_tensor_t *x, int dim, groups_t *g)
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
static int lane_dim(opc_t *c, const sp_tensor_t *x, int *dim)
{
    int64_t d;
    if (!attr_int(c, "dim", -1, &d, NULL))
        return 0;
    return norm_dim(c, d, x->ndim, dim);
}

static const op_def_t *find_op(const char *name);

/* ---- elementwise operators ------------------------------------------------------------------- */

enum {
    EW_UNARY = 0, EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_SCALE, EW_POW, EW_MAXIMUM, EW_MINIMUM,
    EW_CLAMP, EW_WHERE, EW_CMP, EW_DROPOUT
};

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
        return fail(c, "output %s is too large", SH(w->ndim, w->shape).s);
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

static int ew_forward(opc_t *c, int code, int sub, sp_tensor_t *out)
{
    ew_t w;
    int ok = ew_setup(c, code, &w) && out_alloc(c, out, w.ndim, w.shape);
    for (int64_t i = 0; ok && i < w.nout; i++) {
        sp_expr_t a[3] = {0, 0, 0};
        for (int k = 0; k < w.n; k++)
            if (w.t[k] != NULL)
                a[k] = w.t[k]->v[w.map[k][i]];
        out->v[i] = ew_elem(c->E, code, sub, &w, a);
    }
    ew_clear(&w);
    return ok;
}

static int fwd_ew(opc_t *c, sp_tensor_t *out)
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

static int ew_vjp(opc_t *c, int code, int sub, const sp_tensor_t *y, const sp_tensor_t *dy,
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
    for (int64_t i = 0; ok && i < w.nout; i++) {
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

static int vjp_ew(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    return ew_vjp(c, c->def->code, c->def->sub, y, dy, din);
}

/* ---- shape operators (gathers) -------------------------------------------------------------- */

enum { DM_AFFINE = 0, DM_MOD, DM_DIV, DM_PAD };

/* Output dim d reads input dim `dim` (or none if dim < 0) at index a*o+b, o%a, o/a or o-b. */
typedef struct {
    int dim;
    int kind;
    int64_t a, b;
} dmap_t;

static int check_numel(opc_t *c, int ndim, const int64_t *shape)
{
    if (ndim > SP_MAX_DIMS)
        return fail(c, "too many dimensions (%d, at most %d)", ndim, SP_MAX_DIMS);
    int64_t n = shape_numel(ndim, shape);
    if (n < 0)
        return fail(c, "output %s is too large", SH(ndim, shape).s);
    if (c->max_numel > 0 && n > c->max_numel)
        return fail_elements(c, SH(ndim, shape).s, n);
    return 1;
}

static int gather_dims(opc_t *c, const sp_tensor_t *x, gather_t *g, const dmap_t *dm)
{
    if (!check_numel(c, g->ndim, g->shape))
        return 0;
    int64_t n = shape_numel(g->ndim, g->shape), st[SP_MAX_DIMS], idx[SP_MAX_DIMS];
    strides_of(x->ndim, x->shape, st);
    g->src = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (g->src == NULL)
        return fail(c, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        unravel(i, g->ndim, g->shape, idx);
        int64_t off = 0;
        int valid = 1;
        for (int d = 0; d < g->ndim; d++) {
            if (dm[d].dim < 0)
                continue;
            int64_t o = idx[d], t;
            switch (dm[d].kind) {
            case DM_MOD: t = dm[d].a ? o % dm[d].a : 0; break;
            case DM_DIV: t = dm[d].a ? o / dm[d].a : 0; break;
            case DM_PAD: t = o - dm[d].b; break;
            default: t = dm[d].a * o + dm[d].b;
            }
            if (t < 0 || t >= x->shape[dm[d].dim])
                valid = 0;
            off += t * st[dm[d].dim];
        }
        g->src[i] = valid ? off : -1;
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

static int g_reshape(opc_t *c, gather_t *g)
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
                return fail(c, "shape %s is too large", SH(n, l).s);
        }
    }
    g->ndim = n;
    if (n > 0)
        memcpy(g->shape, l, (size_t)n * sizeof(int64_t));
    if (infer >= 0 && prod != 0 && total % prod == 0)
        g->shape[infer] = total / prod;
    else if (infer >= 0 || prod != total)
        return fail(c, "cannot reshape %s (%lld elements) into %s (%lld elements)", TS(x).s,
                    (long long)total, SH(n, l).s, (long long)(infer >= 0 ? -1 : prod));
    return 1;
}

static int g_flatten(opc_t *c, gather_t *g)
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

static int g_squeeze(opc_t *c, gather_t *g)
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

static int g_unsqueeze(opc_t *c, gather_t *g)
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

static int g_transpose(opc_t *c, gather_t *g)
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

static int g_permute(opc_t *c, gather_t *g)
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

static int g_expand(opc_t *c, gather_t *g)
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

static int g_slice(opc_t *c, gather_t *g)
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
    s = py_bound(s, n);
    e = py_bound(e, n);
    return slice_gather(c, g, dim, s, e > s ? (e - s + step - 1) / step : 0, step);
}

static int g_chunk(opc_t *c, gather_t *g)
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
    return slice_gather(c, g, dim, s, e - s, 1);
}

static int g_split(opc_t *c, gather_t *g)
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
        for (int i = 0; i < index; i++)
            s += l[i];
        len = l[index];
    }
    return slice_gather(c, g, dim, s, len, 1);
}

static int g_pad(opc_t *c, gather_t *g)
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
    dm[dim] = (dmap_t){dim, DM_PAD, 1, before};
    return gather_dims(c, x, g, dm);
}

static int g_repeat(opc_t *c, gather_t *g)
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
                return fail(c, "output is too large");
            g->shape[d] = x->shape[id] * l[d];
            dm[d] = (dmap_t){id, DM_MOD, x->shape[id], 0};
        }
    }
    return gather_dims(c, x, g, dm);
}

static int g_repeat_interleave(opc_t *c, gather_t *g)
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

static int g_concat(opc_t *c, gather_t *g)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t d;
    int dim;
    if (x->ndim == 0)
        return fail(c, "cannot concatenate 0-d tensors");
    if (!attr_int(c, "dim", 0, &d, NULL) || !norm_dim(c, d, x->ndim, &dim))
        return 0;
    int64_t total = 0;
    for (int k = 0; k < c->nin; k++) {
        const sp_tensor_t *t = &c->in[k];
        int ok = t->ndim == x->ndim;
        for (int e = 0; ok && e < x->ndim; e++)
            ok = e == dim || t->shape[e] == x->shape[e];
        if (!ok)
            return fail(c, "shape %s of argument %d does not match %s outside dimension %d",
                        TS(t).s, k + 1, TS(x).s, dim);
        total += t->shape[dim];
    }
    g->ndim = x->ndim;
    memcpy(g->shape, x->shape, sizeof(g->shape));
    g->shape[dim] = total;
    if (!check_numel(c, g->ndim, g->shape))
        return 0;
    int64_t n = shape_numel(g->ndim, g->shape), idx[SP_MAX_DIMS], st[SP_MAX_DIMS];
    g->src = flint_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (g->src == NULL)
        return fail(c, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        unravel(i, g->ndim, g->shape, idx);
        int64_t o = idx[dim], base = 0;
        int k = 0;
        while (o >= c->in[k].shape[dim]) {
            o -= c->in[k].shape[dim];
            base += sp_tensor_numel(&c->in[k]);
            k++;
        }
        idx[dim] = o;
        strides_of(c->in[k].ndim, c->in[k].shape, st);
        int64_t off = 0;
        for (int e = 0; e < g->ndim; e++)
            off += idx[e] * st[e];
        g->src[i] = base + off;
    }
    return 1;
}

/* Element s of the inputs laid end to end. */
static sp_expr_t gather_elem(const opc_t *c, int64_t s)
{
    for (int k = 0; k < c->nin; k++) {
        int64_t n = sp_tensor_numel(&c->in[k]);
        if (s < n)
            return c->in[k].v[s];
        s -= n;
    }
    return SP_EXPR_NONE;
}

static int fwd_gather(opc_t *c, sp_tensor_t *out)
{
    gather_t g;
    memset(&g, 0, sizeof(g));
    int ok = c->def->gather(c, &g) && out_alloc(c, out, g.ndim, g.shape);
    int64_t n = ok ? sp_tensor_numel(out) : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = g.src ? g.src[i] : i;
        out->v[i] = s < 0 ? g.fill : gather_elem(c, s);
    }
    flint_free(g.src);
    return ok;
}

static int vjp_gather(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
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

/* ---- reductions ------------------------------------------------------------------------------ */

enum { RED_SUM = 0, RED_MEAN, RED_MAX, RED_MIN, RED_LSE };

typedef struct {
    int ondim;
    int64_t oshape[SP_MAX_DIMS];
    int64_t nout;
    groups_t g;
} red_t;

static int red_setup(opc_t *c, int code, red_t *r)
{
    const sp_tensor_t *x = &c->in[0];
    int64_t one, keep;
    const int64_t *l;
    int n, present, mask[SP_MAX_DIMS] = {0};
    memset(r, 0, sizeof(*r));
    if (!attr_list(c, "dim", &one, &l, &n, &present) || !attr_int(c, "keepdim", 0, &keep, NULL))
        return 0;
    if (keep != 0 && keep != 1)
        return fail(c, "attribute 'keepdim' must be 0 or 1");
    if (!present && code == RED_LSE) {
        one = -1;
        l = &one;
        n = 1;
        present = 1;
    }
    for (int i = 0; i < n; i++) {
        int d;
        if (!norm_dim(c, l[i], x->ndim, &d))
            return 0;
        if (x->ndim == 0)
            continue;
        if (mask[d])
            return fail(c, "dimension %d repeated", d);
        mask[d] = 1;
    }
    if (!present || n == 0) /* torch: an empty dim list reduces over all dims */
        for (int d = 0; d < x->ndim; d++)
            mask[d] = 1;
    int64_t *map;
    if (!reduce_map(c, x, mask, (int)keep, &r->ondim, r->oshape, &map, &r->nout))
        return 0;
    int ok = groups_build(&r->g, map, sp_tensor_numel(x), r->nout);
    flint_free(map);
    if (!ok)
        return fail(c, "out of memory");
    if (r->nout > 0 && r->g.start[1] == 0 && code != RED_SUM)
        return fail(c, "reduction over zero elements");
    return 1;
}

static int fwd_reduce(opc_t *c, sp_tensor_t *out)
{
    int code = c->def->code;
    if (c->nin == 2) {
        if (c->nattr > 0)
            return fail(c, "the elementwise form (two tensors) takes no attributes");
        return ew_forward(c, code == RED_MAX ? EW_MAXIMUM : EW_MINIMUM, 0, out);
    }
    sp_ectx_struct *E = c->E;
    red_t r;
    int ok = red_setup(c, code, &r) && out_alloc(c, out, r.ondim, r.oshape);
    sp_expr_t *tmp = ok ? scratch(c, sp_tensor_numel(&c->in[0])) : NULL;
    ok = ok && tmp != NULL;
    for (int64_t k = 0; ok && k < r.nout; k++) {
        int64_t m = 0;
        for (int64_t j = r.g.start[k]; j < r.g.start[k + 1]; j++) {
            sp_expr_t x = c->in[0].v[r.g.idx[j]];
            tmp[m++] = code == RED_LSE ? sp_expr_unary(E, SP_OP_EXP, x) : x;
        }
        switch (code) {
        case RED_SUM: out->v[k] = addv(E, tmp, m); break;
        case RED_MEAN: out->v[k] = mul2(E, K(E, 1, (ulong)m), addv(E, tmp, m)); break;
        case RED_MAX:
        case RED_MIN:
            out->v[k] = sp_expr_nary(E, code == RED_MAX ? SP_OP_MAX : SP_OP_MIN, tmp, (uint32_t)m);
            break;
        default: out->v[k] = sp_expr_unary(E, SP_OP_LOG, addv(E, tmp, m));
        }
    }
    flint_free(tmp);
    groups_clear(&r.g);
    return ok;
}

static int vjp_reduce(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    int code = c->def->code;
    if (c->nin == 2)
        return ew_vjp(c, code == RED_MAX ? EW_MAXIMUM : EW_MINIMUM, 0, y, dy, din);
    sp_ectx_struct *E = c->E;
    const sp_tensor_t *x = &c->in[0];
    red_t r;
    int ok = red_setup(c, code, &r);
    ok = ok && (sp_tensor_alloc(&din[0], x->ndim, x->shape) ? 1 : fail(c, "out of memory"));
    int64_t nx = sp_tensor_numel(x);
    sp_expr_t *tmp = ok ? scratch(c, nx) : NULL, *ind = ok ? scratch(c, nx) : NULL;
    ok = ok && tmp != NULL && ind != NULL;
    for (int64_t k = 0; ok && k < r.nout; k++) {
        int64_t b = r.g.start[k], m = r.g.start[k + 1] - b;
        sp_expr_t d = dy->v[k], s = SP_EXPR_NONE;
        if (code == RED_MAX || code == RED_MIN) {
            for (int64_t j = 0; j < m; j++)
                tmp[j] = x->v[r.g.idx[b + j]];
            if (!extremal_grads(E, y->v[k], tmp, (uint32_t)m, code == RED_MAX, ind))
                ok = fail(c, "%s", E->oom ? "out of memory or expression node limit (--max-nodes)"
                                            : "internal error: unexpected max/min node");
        } else if (code == RED_LSE) {
            for (int64_t j = 0; j < m; j++)
                tmp[j] = sp_expr_unary(E, SP_OP_EXP, x->v[r.g.idx[b + j]]);
            s = addv(E, tmp, m);
        }
        for (int64_t j = 0; ok && j < m; j++) {
            int64_t i = r.g.idx[b + j];
            switch (code) {
            case RED_SUM: din[0].v[i] = d; break;
            case RED_MEAN: din[0].v[i] = mul2(E, d, K(E, 1, (ulong)m)); break;
            case RED_LSE:
                din[0].v[i] = mul2(E, d, sp_expr_div(E, sp_expr_unary(E, SP_OP_EXP, x->v[i]), s));
                break;
            default: din[0].v[i] = mul2(E, d, ind[j]);
            }
        }
    }
    flint_free(tmp);
    flint_free(ind);
    groups_clear(&r.g);
    return ok;
}

/* ---- softmax family ----------------------------------------------------------------------- */

enum { SM_SOFTMAX = 0, SM_LOG, SM_CAUSAL };

typedef struct {
    groups_t g;
    int64_t *mmap; /* masked softmax: x offset -> mask offset */
    int causal;
    int64_t sq, sk, offset;
} sm_t;

static void sm_clear(sm_t *s)
{
    groups_clear(&s->g);
    flint_free(s->mmap);
}

static int sm_setup(opc_t *c, int code, sm_t *s)
{
    const sp_tensor_t *x = &c->in[0];
    int dim;
    memset(s, 0, sizeof(*s));
    if (code == SM_CAUSAL) {
        if (x->ndim < 2)
            return fail(c, "needs at least 2 dimensions [.., Sq, Sk], got %s", TS(x).s);
        if (!attr_int(c, "offset", 0, &s->offset, NULL))
            return 0;
        s->causal = 1;
        s->sq = x->shape[x->ndim - 2];
        s->sk = x->shape[x->ndim - 1];
        dim = x->ndim - 1;
    } else if (!lane_dim(c, x, &dim)) {
        return 0;
    }
    if (c->nin == 2) {
        const sp_tensor_t *m = &c->in[1];
        if (!can_expand(m->ndim, m->shape, x->ndim, x->shape))
            return fail(c, "mask shape %s does not broadcast to %s", TS(m).s, TS(x).s);
        if ((s->mmap = bcast_map(m->ndim, m->shape, x->ndim, x->shape)) == NULL)
            return fail(c, "out of memory");
    }
    return lanes_build(c, x, dim, &s->g);
}

/* Whether element i of the input takes part (causal masking). */
static int sm_kept(const sm_t *s, int64_t i)
{
    if (!s->causal)
        return 1;
    int64_t k = i % s->sk, q = (i / s->sk) % s->sq;
    return k <= q + s->offset;
}

/* exp(x_i) [* mask_i] for a kept element. */
static sp_expr_t sm_num(opc_t *c, const sm_t *s, int64_t i)
{
    sp_expr_t e = sp_expr_unary(c->E, SP_OP_EXP, c->in[0].v[i]);
    return s->mmap ? sp_expr_mul(c->E, e, c->in[1].v[s->mmap[i]]) : e;
}

static int fwd_softmax(opc_t *c, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    const sp_tensor_t *x = &c->in[0];
    int code = c->def->code;
    sm_t s;
    int ok = sm_setup(c, code, &s) && out_alloc(c, out, x->ndim, x->shape);
    sp_expr_t *tmp = ok ? scratch(c, sp_tensor_numel(x)) : NULL;
    ok = ok && tmp != NULL;
    for (int64_t k = 0; ok && k < s.g.ng; k++) {
        int64_t m = 0;
        for (int64_t j = s.g.start[k]; j < s.g.start[k + 1]; j++)
            if (sm_kept(&s, s.g.idx[j]))
                tmp[m++] = sm_num(c, &s, s.g.idx[j]);
        sp_expr_t z = addv(E, tmp, m);
        sp_expr_t lz = code == SM_LOG ? sp_expr_unary(E, SP_OP_LOG, z) : SP_EXPR_NONE;
        for (int64_t j = s.g.start[k]; j < s.g.start[k + 1]; j++) {
            int64_t i = s.g.idx[j];
            if (code == SM_LOG)
                out->v[i] = sp_expr_sub(E, x->v[i], lz);
            else
                out->v[i] = sm_kept(&s, i) ? sp_expr_div(E, sm_num(c, &s, i), z) : K(E, 0, 1);
        }
    }
    flint_free(tmp);
    sm_clear(&s);
    return ok;
}

/* dx = y * (dy - sum(y * dy)) over the lanes of g (softmax), or dy - exp(y) sum(dy) when y is a
   log-softmax (is_log), into dx (shape of y). */
static int softmax_back(opc_t *c, const groups_t *g, const sp_expr_t *y, const sp_expr_t *dy,
                        int is_log, const sp_expr_t *sm, sp_expr_t *dx)
{
    sp_ectx_struct *E = c->E;
    int64_t most = 0;
    for (int64_t k = 0; k < g->ng; k++)
        if (g->start[k + 1] - g->start[k] > most)
            most = g->start[k + 1] - g->start[k];
    sp_expr_t *tmp = scratch(c, most);
    if (tmp == NULL)
        return 0;
    for (int64_t k = 0; k < g->ng; k++) {
        int64_t m = 0;
        for (int64_t j = g->start[k]; j < g->start[k + 1]; j++) {
            int64_t i = g->idx[j];
            tmp[m++] = is_log ? dy[i] : mul2(E, y[i], dy[i]);
        }
        sp_expr_t t = addv(E, tmp, m);
        for (int64_t j = g->start[k]; j < g->start[k + 1]; j++) {
            int64_t i = g->idx[j];
            if (is_log)
                dx[i] = sub2(E, dy[i],
                             mul2(E, sm ? sm[i] : sp_expr_unary(E, SP_OP_EXP, y[i]), t));
            else
                dx[i] = mul2(E, y[i], sub2(E, dy[i], t));
        }
    }
    flint_free(tmp);
    return 1;
}

static int vjp_softmax(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    sp_ectx_struct *E = c->E;
    const sp_tensor_t *x = &c->in[0];
    sm_t s;
    sp_expr_t *sm = NULL;
    int ok = sm_setup(c, c->def->code, &s);
    ok = ok && (sp_tensor_alloc(&din[0], x->ndim, x->shape) ? 1 : fail(c, "out of memory"));
    if (ok && c->def->code == SM_LOG) {
        /* softmax_i = exp(x_i) / sum_j exp(x_j), as diff of log writes it */
        int64_t n = sp_tensor_numel(x);
        sm = scratch(c, n);
        sp_expr_t *tmp = sm ? scratch(c, n) : NULL;
        ok = tmp != NULL;
        for (int64_t k = 0; ok && k < s.g.ng; k++) {
            int64_t m = 0;
            for (int64_t j = s.g.start[k]; j < s.g.start[k + 1]; j++)
                tmp[m++] = sp_expr_unary(E, SP_OP_EXP, x->v[s.g.idx[j]]);
            sp_expr_t z = addv(E, tmp, m);
            for (int64_t j = s.g.start[k]; j < s.g.start[k + 1]; j++)
                sm[s.g.idx[j]] = sp_expr_div(E, sp_expr_unary(E, SP_OP_EXP, x->v[s.g.idx[j]]), z);
        }
        flint_free(tmp);
    }
    ok = ok && softmax_back(c, &s.g, y->v, dy->v, c->def->code == SM_LOG, sm, din[0].v);
    flint_free(sm);
    sm_clear(&s);
    return ok;
}

/* softmax_grad(y, dy, dim) and log_softmax_grad(y, dy, dim), from the forward output y. */
static int fwd_softmax_grad(opc_t *c, sp_tensor_t *out)
{
    const sp_tensor_t *y = &c->in[0], *dy = &c->in[1];
    int dim;
    groups_t g;
    if (!sp_tensor_same_shape(y, dy))
        return fail(c, "y and dy shapes differ: %s and %s", TS(y).s, TS(dy).s);
    if (!lane_dim(c, y, &dim) || !lanes_build(c, y, dim, &g))
        return 0;
    int ok = out_alloc(c, out, y->ndim, y->shape) &&
             softmax_back(c, &g, y->v, dy->v, c->def->code == SM_LOG, NULL, out->v);
    groups_clear(&g);
    return ok;
}

/* ---- layernorm, rmsnorm ------------------------------------------------------------------- */

typedef struct {
    const sp_tensor_t *x, *w, *b;
    int64_t n, rows;
    sp_expr_t eps;
} norm_t;

static int norm_setup(opc_t *c, int is_ln, norm_t *nm)
{
    const sp_tensor_t *x = &c->in[0];
    memset(nm, 0, sizeof(*nm));
    if (x->ndim < 1)
        return fail(c, "needs at least 1 dimension, got %s", TS(x).s);
    int64_t d;
    int dim;
    if (!attr_int(c, "dim", -1, &d, NULL) || !norm_dim(c, d, x->ndim, &dim))
        return 0;
    if (dim != x->ndim - 1)
        return fail(c, "only the last dimension is supported");
    nm->x = x;
    nm->n = x->shape[x->ndim - 1];
    if (nm->n == 0)
        return fail(c, "the normalized dimension is empty");
    nm->rows = sp_tensor_numel(x) / nm->n;
    nm->w = c->nin > 1 ? &c->in[1] : NULL;
    nm->b = c->nin > 2 ? &c->in[2] : NULL;
    if (nm->w && !(nm->w->ndim == 1 && nm->w->shape[0] == nm->n))
        return fail(c, "weight shape %s does not match the normalized dimension %lld",
                    TS(nm->w).s, (long long)nm->n);
    if (nm->b && !(nm->b->ndim == 1 && nm->b->shape[0] == nm->n))
        return fail(c, "bias shape %s does not match the normalized dimension %lld", TS(nm->b).s,
                    (long long)nm->n);
    fmpq_t e;
    fmpq_init(e);
    int ok = attr_num(c, "eps", 1, is_ln ? 100000 : 1000000, e, NULL);
    if (ok && fmpq_sgn(e) < 0)
        ok = fail(c, "eps must be non-negative");
    nm->eps = sp_expr_const_fmpq(c->E, e);
    fmpq_clear(e);
    return ok;
}

/* Per row: d (centered x for layernorm, x for rmsnorm), u = variance-or-mean-square + eps and
   r = rsqrt(u).  d has n entries. */
static void norm_row(sp_ectx_t E, const norm_t *nm, int is_ln, int64_t row, sp_expr_t *d,
                     sp_expr_t *tmp, sp_expr_t *u, sp_expr_t *r)
{
    int64_t n = nm->n;
    const sp_expr_t *x = nm->x->v + row * n;
    sp_expr_t inv_n = K(E, 1, (ulong)n);
    if (is_ln) {
        memcpy(tmp, x, (size_t)n * sizeof(sp_expr_t));
        sp_expr_t mu = mul2(E, inv_n, addv(E, tmp, n));
        for (int64_t j = 0; j < n; j++)
            d[j] = sp_expr_sub(E, x[j], mu);
    } else {
        memcpy(d, x, (size_t)n * sizeof(sp_expr_t));
    }
    for (int64_t j = 0; j < n; j++)
        tmp[j] = sp_expr_pow(E, d[j], 2);
    *u = add2(E, mul2(E, inv_n, addv(E, tmp, n)), nm->eps);
    *r = sp_expr_unary(E, SP_OP_RSQRT, *u);
}

static int fwd_norm(opc_t *c, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    int is_ln = c->def->code;
    norm_t nm;
    if (!norm_setup(c, is_ln, &nm) || !out_alloc(c, out, nm.x->ndim, nm.x->shape))
        return 0;
    sp_expr_t *d = scratch(c, nm.n), *tmp = d ? scratch(c, nm.n) : NULL;
    int ok = tmp != NULL;
    for (int64_t row = 0; ok && row < nm.rows; row++) {
        sp_expr_t u, r;
        norm_row(E, &nm, is_ln, row, d, tmp, &u, &r);
        for (int64_t j = 0; j < nm.n; j++) {
            sp_expr_t v = mul3(E, d[j], r, nm.w ? nm.w->v[j] : K(E, 1, 1));
            out->v[row * nm.n + j] = nm.b ? sp_expr_add(E, v, nm.b->v[j]) : v;
        }
    }
    flint_free(d);
    flint_free(tmp);
    return ok;
}

static int vjp_norm(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    sp_ectx_struct *E = c->E;
    int is_ln = c->def->code;
    norm_t nm;
    if (!norm_setup(c, is_ln, &nm))
        return 0;
    int64_t n = nm.n, rows = nm.rows;
    int ok = sp_tensor_alloc(&din[0], nm.x->ndim, nm.x->shape) ? 1 : fail(c, "out of memory");
    if (ok && nm.w)
        ok = sp_tensor_alloc(&din[1], 1, nm.w->shape) ? 1 : fail(c, "out of memory");
    if (ok && nm.b)
        ok = sp_tensor_alloc(&din[2], 1, nm.b->shape) ? 1 : fail(c, "out of memory");
    sp_expr_t *d = ok ? scratch(c, n) : NULL, *tmp = d ? scratch(c, n) : NULL;
    sp_expr_t *gw = tmp ? scratch(c, n * rows) : NULL, *gb = gw ? scratch(c, n * rows) : NULL;
    sp_expr_t *g = gb ? scratch(c, n) : NULL;
    ok = ok && g != NULL;
    sp_expr_t inv_n = K(E, 1, (ulong)n), nn = K(E, n, 1);
    for (int64_t row = 0; ok && row < rows; row++) {
        sp_expr_t u, r;
        const sp_expr_t *dyr = dy->v + row * n;
        norm_row(E, &nm, is_ln, row, d, tmp, &u, &r);
        for (int64_t j = 0; j < n; j++)
            g[j] = mul2(E, dyr[j], nm.w ? nm.w->v[j] : K(E, 1, 1));
        for (int64_t j = 0; j < n; j++)
            tmp[j] = mul2(E, g[j], d[j]);
        sp_expr_t gd = addv(E, tmp, n);
        /* d r / d x_i = -(1/n) d_i r / u, so
           layernorm: dx_i = r (g_i - mean(g)) - r d_i sum(g d) / (n u)
           rmsnorm:   dx_i = r g_i - x_i r sum(g x) / (n u) */
        sp_expr_t corr_mean = K(E, 0, 1);
        if (is_ln) {
            memcpy(tmp, g, (size_t)n * sizeof(sp_expr_t));
            corr_mean = mul2(E, inv_n, addv(E, tmp, n));
        }
        sp_expr_t nu = mul2(E, nn, u);
        for (int64_t j = 0; j < n; j++) {
            sp_expr_t a = mul2(E, r, sub2(E, g[j], corr_mean));
            sp_expr_t bterm = sp_expr_div(E, mul3(E, d[j], r, gd), nu);
            din[0].v[row * n + j] = sub2(E, a, bterm);
            gw[j * rows + row] = mul3(E, dyr[j], d[j], r);
            gb[j * rows + row] = dyr[j];
        }
    }
    for (int64_t j = 0; ok && j < n; j++) {
        if (nm.w)
            din[1].v[j] = addv(E, gw + j * rows, rows);
        if (nm.b)
            din[2].v[j] = addv(E, gb + j * rows, rows);
    }
    flint_free(d);
    flint_free(tmp);
    flint_free(gw);
    flint_free(gb);
    flint_free(g);
    return ok;
}

/* ---- cross entropy ------------------------------------------------------------------------ */

enum { CE_MEAN = 0, CE_SUM, CE_NONE };

typedef struct {
    const sp_tensor_t *x, *t, *m;
    int64_t V, P;
    int pnd;
    int64_t pshape[SP_MAX_DIMS];
    int red;
    fmpq_t eps;
    int64_t *mmap; /* position -> mask offset */
    groups_t g;    /* lanes of the logits over the vocabulary */
} ce_t;

/* q = e / v */
static void rat_div_int(fmpq_t q, const fmpq_t e, int64_t v)
{
    fmpz_t z;
    fmpz_init_set_si(z, (slong)v);
    fmpq_div_fmpz(q, e, z);
    fmpz_clear(z);
}

static void ce_clear(ce_t *ce)
{
    fmpq_clear(ce->eps);
    flint_free(ce->mmap);
    groups_clear(&ce->g);
}

static int ce_setup(opc_t *c, const sp_tensor_t *x, const sp_tensor_t *t, const sp_tensor_t *m,
                    ce_t *ce)
{
    memset(ce, 0, sizeof(*ce));
    fmpq_init(ce->eps);
    ce->x = x;
    ce->t = t;
    ce->m = m;
    if (x->ndim < 1)
        return fail(c, "logits must be at least 1-d");
    if (!sp_tensor_same_shape(x, t))
        return fail(c, "target shape %s does not match logits %s", TS(t).s, TS(x).s);
    ce->V = x->shape[x->ndim - 1];
    ce->pnd = x->ndim - 1;
    memcpy(ce->pshape, x->shape, (size_t)ce->pnd * sizeof(int64_t));
    ce->P = shape_numel(ce->pnd, ce->pshape);
    if (ce->V == 0)
        return fail(c, "the class dimension is empty");
    const sp_attr_t *a = get_attr(c, "reduction");
    if (a != NULL) {
        if (a->kind != SP_ATTR_NAME || a->name == NULL)
            return fail(c, "attribute 'reduction' must be mean, sum or none");
        if (strcmp(a->name, "mean") == 0)
            ce->red = CE_MEAN;
        else if (strcmp(a->name, "sum") == 0)
            ce->red = CE_SUM;
        else if (strcmp(a->name, "none") == 0)
            ce->red = CE_NONE;
        else
            return fail(c, "unknown reduction '%s' (mean, sum or none)", a->name);
    }
    if (!attr_num(c, "label_smoothing", 0, 1, ce->eps, NULL))
        return 0;
    if (fmpq_sgn(ce->eps) < 0 || fmpq_cmp_si(ce->eps, 1) > 0)
        return fail(c, "label_smoothing must be in [0, 1]");
    if (ce->red == CE_MEAN && ce->P == 0)
        return fail(c, "mean over zero positions");
    if (m != NULL) {
        if (!can_expand(m->ndim, m->shape, ce->pnd, ce->pshape))
            return fail(c, "mask shape %s does not broadcast to the positions %s", TS(m).s,
                        SH(ce->pnd, ce->pshape).s);
        if ((ce->mmap = bcast_map(m->ndim, m->shape, ce->pnd, ce->pshape)) == NULL)
            return fail(c, "out of memory");
    }
    return lanes_build(c, x, x->ndim - 1, &ce->g);
}

/* sum_v exp(x_pv) for position p (lane p). */
static sp_expr_t ce_z(opc_t *c, const ce_t *ce, int64_t p, sp_expr_t *tmp)
{
    int64_t m = 0;
    for (int64_t j = ce->g.start[p]; j < ce->g.start[p + 1]; j++)
        tmp[m++] = sp_expr_unary(c->E, SP_OP_EXP, ce->x->v[ce->g.idx[j]]);
    return addv(c->E, tmp, m);
}

static int ce_forward(opc_t *c, ce_t *ce, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    int ok = ce->red == CE_NONE ? out_alloc(c, out, ce->pnd, ce->pshape) : out_alloc(c, out, 0, NULL);
    sp_expr_t *tmp = ok ? scratch(c, ce->V) : NULL, *t2 = tmp ? scratch(c, ce->V) : NULL;
    sp_expr_t *loss = t2 ? scratch(c, ce->P) : NULL, *msk = loss ? scratch(c, ce->P) : NULL;
    ok = ok && msk != NULL;
    fmpq_t q;
    fmpq_init(q);
    fmpq_one(q);
    fmpq_sub(q, q, ce->eps);
    sp_expr_t one_m_eps = sp_expr_const_fmpq(E, q);
    rat_div_int(q, ce->eps, ce->V);
    sp_expr_t eps_v = sp_expr_const_fmpq(E, q);
    fmpq_clear(q);
    for (int64_t p = 0; ok && p < ce->P; p++) {
        sp_expr_t lse = sp_expr_unary(E, SP_OP_LOG, ce_z(c, ce, p, tmp));
        int64_t m = 0;
        for (int64_t j = ce->g.start[p]; j < ce->g.start[p + 1]; j++) {
            int64_t i = ce->g.idx[j];
            sp_expr_t lsm = sp_expr_sub(E, ce->x->v[i], lse);
            tmp[m] = sp_expr_mul(E, ce->t->v[i], lsm);
            t2[m++] = lsm;
        }
        sp_expr_t nll = sp_expr_unary(E, SP_OP_NEG, addv(E, tmp, m));
        if (!fmpq_is_zero(ce->eps))
            nll = sp_expr_add(E, mul2(E, one_m_eps, nll),
                              mul2(E, eps_v, sp_expr_unary(E, SP_OP_NEG, addv(E, t2, m))));
        msk[p] = ce->m ? ce->m->v[ce->mmap[p]] : K(E, 1, 1);
        loss[p] = ce->m ? sp_expr_mul(E, msk[p], nll) : nll;
    }
    if (ok && ce->red == CE_NONE) {
        memcpy(out->v, loss, (size_t)ce->P * sizeof(sp_expr_t));
    } else if (ok) {
        sp_expr_t s = addv(E, loss, ce->P);
        if (ce->red == CE_SUM)
            out->v[0] = s;
        else if (ce->m)
            out->v[0] = sp_expr_div(E, s, addv(E, msk, ce->P));
        else
            out->v[0] = mul2(E, K(E, 1, (ulong)ce->P), s);
    }
    flint_free(tmp);
    flint_free(t2);
    flint_free(loss);
    flint_free(msk);
    return ok;
}

/* d loss / d logits with upstream gradient dy (shape of the loss; NULL means 1). */
static int ce_backward(opc_t *c, ce_t *ce, const sp_tensor_t *dy, sp_tensor_t *dx)
{
    sp_ectx_struct *E = c->E;
    const sp_tensor_t *x = ce->x;
    int ok = sp_tensor_alloc(dx, x->ndim, x->shape) ? 1 : fail(c, "out of memory");
    sp_expr_t *tmp = ok ? scratch(c, ce->V) : NULL, *msk = tmp ? scratch(c, ce->P) : NULL;
    ok = ok && msk != NULL;
    sp_expr_t msum = K(E, 1, 1);
    if (ok && ce->m) {
        for (int64_t p = 0; p < ce->P; p++)
            msk[p] = ce->m->v[ce->mmap[p]];
        msum = addv(E, msk, ce->P);
    }
    fmpq_t q;
    fmpq_init(q);
    fmpq_one(q);
    fmpq_sub(q, q, ce->eps);
    sp_expr_t one_m_eps = sp_expr_const_fmpq(E, q);
    rat_div_int(q, ce->eps, ce->V);
    sp_expr_t eps_v = sp_expr_const_fmpq(E, q), eps = sp_expr_const_fmpq(E, ce->eps);
    fmpq_clear(q);
    int smooth = !fmpq_is_zero(ce->eps);
    for (int64_t p = 0; ok && p < ce->P; p++) {
        sp_expr_t d = dy == NULL ? K(E, 1, 1) : dy->v[ce->red == CE_NONE ? p : 0];
        sp_expr_t mp = ce->m ? ce->m->v[ce->mmap[p]] : K(E, 1, 1);
        sp_expr_t cp;
        if (ce->red == CE_MEAN)
            cp = ce->m ? sp_expr_div(E, mul2(E, d, mp), msum) : mul2(E, d, K(E, 1, (ulong)ce->P));
        else
            cp = mul2(E, d, mp);
        sp_expr_t z = ce_z(c, ce, p, tmp);
        int64_t m = 0;
        for (int64_t j = ce->g.start[p]; j < ce->g.start[p + 1]; j++)
            tmp[m++] = ce->t->v[ce->g.idx[j]];
        sp_expr_t tsum = addv(E, tmp, m);
        sp_expr_t W = smooth ? sp_expr_add(E, mul2(E, one_m_eps, tsum), eps) : tsum;
        for (int64_t j = ce->g.start[p]; j < ce->g.start[p + 1]; j++) {
            int64_t i = ce->g.idx[j];
            sp_expr_t sm = sp_expr_div(E, sp_expr_unary(E, SP_OP_EXP, x->v[i]), z);
            sp_expr_t w = smooth ? sp_expr_add(E, mul2(E, one_m_eps, ce->t->v[i]), eps_v)
                                 : ce->t->v[i];
            dx->v[i] = mul2(E, cp, sp_expr_sub(E, mul2(E, sm, W), w));
        }
    }
    flint_free(tmp);
    flint_free(msk);
    return ok;
}

static int fwd_ce(opc_t *c, sp_tensor_t *out)
{
    ce_t ce;
    int ok = ce_setup(c, &c->in[0], &c->in[1], c->nin > 2 ? &c->in[2] : NULL, &ce) &&
             ce_forward(c, &ce, out);
    ce_clear(&ce);
    return ok;
}

static int vjp_ce(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    ce_t ce;
    int ok = ce_setup(c, &c->in[0], &c->in[1], c->nin > 2 ? &c->in[2] : NULL, &ce) &&
             ce_backward(c, &ce, dy, &din[0]);
    ce_clear(&ce);
    return ok;
}

/* cross_entropy_grad(logits, target, [mask, [dloss]]) */
static int fwd_ce_grad(opc_t *c, sp_tensor_t *out)
{
    ce_t ce;
    const sp_tensor_t *dy = c->nin > 3 ? &c->in[3] : NULL;
    int ok = ce_setup(c, &c->in[0], &c->in[1], c->nin > 2 ? &c->in[2] : NULL, &ce);
    if (ok && dy != NULL) {
        int want = ce.red == CE_NONE ? ce.pnd : 0;
        if (dy->ndim != want || (want && memcmp(dy->shape, ce.pshape, (size_t)want * sizeof(int64_t)) != 0))
            ok = fail(c, "gradient shape %s does not match the loss shape %s", TS(dy).s,
                      SH(want, ce.pshape).s);
    }
    if (ok && c->max_numel > 0 && sp_tensor_numel(&c->in[0]) > c->max_numel)
        ok = fail_elements(c, TS(&c->in[0]).s, sp_tensor_numel(&c->in[0]));
    ok = ok && ce_backward(c, &ce, dy, out);
    ce_clear(&ce);
    return ok;
}

static int valid_tensor(const sp_tensor_t *t);

/* A VJP rule's check that dy has the output's shape (run_vjp's check, for OPF_VJP_OWN rules). */
static int dy_fits(opc_t *c, const sp_tensor_t *dy, int ndim, const int64_t *shape)
{
    if (dy != NULL && valid_tensor(dy) && dy->ndim == ndim &&
        memcmp(dy->shape, shape, (size_t)ndim * sizeof(int64_t)) == 0)
        return 1;
    return fail(c, "gradient shape %s does not match output shape %s",
                dy && dy->ndim >= 0 && dy->ndim <= SP_MAX_DIMS ? TS(dy).s : "?", SH(ndim, shape).s);
}

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
    for (int64_t ob = 0; ob < mm->nb; ob++) {
        const sp_expr_t *A = a->v + mm->amap[ob] * n * k, *B = b->v + mm->bmap[ob] * k * m;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) {
                pairs(tmp, tmp + k, A + i * k, 1, B + j, m, k);
                out->v[(ob * n + i) * m + j] = sp_expr_dot(E, tmp, tmp + k, (uint32_t)k);
            }
    }
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
    /* da[ab, i, l] = sum over ob of batch ab, j: dy[ob, i, j] b[bb(ob), l, j] */
    for (int64_t ab = 0; ok && da && ab < mm->na_b; ab++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t l = 0; l < k; l++) {
                int64_t t = 0;
                for (int64_t q = ga.start[ab]; q < ga.start[ab + 1]; q++) {
                    int64_t ob = ga.idx[q];
                    const sp_expr_t *B = b->v + mm->bmap[ob] * k * m;
                    pairs(tmp + t, tmp + most + t, dy->v + (ob * n + i) * m, 1, B + l * m, 1, m);
                    t += m;
                }
                da->v[(ab * n + i) * k + l] = sp_expr_dot(E, tmp, tmp + most, (uint32_t)t);
            }
    /* db[bb, l, j] = sum over ob of batch bb, i: a[ab(ob), i, l] dy[ob, i, j] */
    for (int64_t bb = 0; ok && db && bb < mm->nb_b; bb++)
        for (int64_t l = 0; l < k; l++)
            for (int64_t j = 0; j < m; j++) {
                int64_t t = 0;
                for (int64_t q = gb.start[bb]; q < gb.start[bb + 1]; q++) {
                    int64_t ob = gb.idx[q];
                    const sp_expr_t *A = a->v + mm->amap[ob] * n * k;
                    pairs(tmp + t, tmp + most + t, A + l, k, dy->v + ob * n * m + j, m, n);
                    t += n;
                }
                db->v[(bb * k + l) * m + j] = sp_expr_dot(E, tmp, tmp + most, (uint32_t)t);
            }
    flint_free(tmp);
    groups_clear(&ga);
    groups_clear(&gb);
    return ok;
}

static int fwd_matmul(opc_t *c, sp_tensor_t *out)
{
    mm_t mm;
    int ok = mm_setup(c, &c->in[0], &c->in[1], &mm) &&
             mm_forward(c, &mm, &c->in[0], &c->in[1], out);
    mm_clear(&mm);
    return ok;
}

static int vjp_matmul(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
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
static int g_embedding_ids(opc_t *c, gather_t *g)
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

static int fwd_embedding(opc_t *c, sp_tensor_t *out)
{
    if (!emb_check(c))
        return 0;
    if (c->nin == 1)
        return fwd_gather(c, out);
    return fwd_matmul(c, out);
}

/* The table's gradient (one-hot ids get none); dy's shape is checked here (OPF_VJP_OWN). */
static int vjp_embedding(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
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
    if (D < 2 || D % 2)
        return fail(c, "last dimension %lld must be even", (long long)D);
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
    for (int64_t L = 0; L < lanes; L++)
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
    flint_free(cmap);
    return 1;
}

static int fwd_rope(opc_t *c, sp_tensor_t *out)
{
    return rope_apply(c, &c->in[0], &c->in[1], &c->in[2], 0, out);
}

static int vjp_rope(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
{
    return rope_apply(c, dy, &c->in[1], &c->in[2], 1, &din[0]);
}

/* rope_grad(dy, cos, sin) */
static int fwd_rope_grad(opc_t *c, sp_tensor_t *out)
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
    if (a->hkv == 0 || a->hq % a->hkv != 0)
        return fail(c, "%lld query heads are not a multiple of %lld key/value heads",
                    (long long)a->hq, (long long)a->hkv);
    a->grp = a->hq / a->hkv;
    fmpq_t s;
    fmpq_init(s);
    int present, ok = attr_num(c, "scale", 1, 1, s, &present);
    a->scale = present ? sp_expr_const_fmpq(c->E, s)
                       : sp_expr_unary(c->E, SP_OP_RSQRT, K(c->E, a->d, 1));
    fmpq_clear(s);
    if (!ok || !attr_flag(c, "causal", &a->causal) || !attr_int(c, "offset", 0, &a->offset, NULL))
        return 0;
    if (a->d == 0 && !present)
        return fail(c, "head dimension is empty");
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
    for (int64_t b = 0; b < a->nb; b++)
        for (int64_t h = 0; h < a->hq; h++) {
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
    size_t nkey = 0, nval = 0;
    int64_t ns = a->nb * a->hq * a->sq * a->sk;
    uint32_t *key = att_key(a, NULL, &nkey);
    const sp_expr_t *kept = key ? sp_memo_get(c->E, MEMO_ATT_PROBS, key, nkey, &nval) : NULL;
    if (kept != NULL && nval == (size_t)ns) {
        memcpy(P, kept, (size_t)ns * sizeof(sp_expr_t));
        flint_free(key);
        return 1;
    }
    int ok = att_probs_built(c, a, P);
    if (ok && key)
        sp_memo_put(c->E, MEMO_ATT_PROBS, key, nkey, P, (size_t)ns);
    flint_free(key);
    return ok;
}

static int fwd_attention(opc_t *c, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    att_t a;
    int ok = att_setup(c, &a) && out_alloc(c, out, a.ondim, a.oshape);
    int64_t ns = a.nb * a.hq * a.sq * a.sk;
    sp_expr_t *P = ok ? scratch(c, ns) : NULL, *tmp = P ? scratch(c, 2 * a.sk) : NULL;
    ok = ok && tmp != NULL && att_probs(c, &a, P);
    for (int64_t b = 0; ok && b < a.nb; b++)
        for (int64_t h = 0; h < a.hq; h++) {
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
    flint_free(P);
    flint_free(tmp);
    flint_free(a.mmap);
    return ok;
}

/* The gradients asked for (c->want) of q, k and v; dy's shape is checked here (OPF_VJP_OWN). */
static int vjp_attention(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din)
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
    size_t nkey = 0, nval = 0;
    uint32_t *key = ok && dS ? att_key(&a, dy, &nkey) : NULL;
    const sp_expr_t *kept = key ? sp_memo_get(E, MEMO_ATT_DS, key, nkey, &nval) : NULL;
    if (kept != NULL && nval == (size_t)ns) {
        memcpy(dS, kept, (size_t)ns * sizeof(sp_expr_t));
        flint_free(key);
        key = NULL;
        kept = dS;
    }
    /* dP_ij = sum_e dO_ie V_je; dS_ij = P_ij (dP_ij - sum_l P_il dP_il) */
    for (int64_t b = 0; ok && dS && kept == NULL && b < a.nb; b++)
        for (int64_t h = 0; h < a.hq; h++) {
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
    if (key != NULL) {
        sp_memo_put(E, MEMO_ATT_DS, key, nkey, dS, (size_t)ns);
        flint_free(key);
    }
    /* dQ_il = scale sum_j dS_ij K_jl */
    for (int64_t b = 0; ok && wq && b < a.nb; b++)
        for (int64_t h = 0; h < a.hq; h++) {
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
    /* dK[g, j, l] = scale sum_{h in g, i} dS_ij Q_il;  dV[g, j, e] = sum_{h in g, i} P_ij dO_ie */
    for (int64_t b = 0; ok && (wk || wv) && b < a.nb; b++)
        for (int64_t g = 0; g < a.hkv; g++)
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
    flint_free(P);
    flint_free(dS);
    flint_free(tmp);
    flint_free(a.mmap);
    return ok;
}

/* ---- topk_mask ------------------------------------------------------------------------------ */

static int fwd_topk_mask(opc_t *c, sp_tensor_t *out)
{
    sp_ectx_struct *E = c->E;
    const sp_tensor_t *x = &c->in[0];
    int64_t k;
    int dim;
    groups_t g;
    if (!attr_need_int(c, "k", &k) || !lane_dim(c, x, &dim))
        return 0;
    if (k < 0)
        return fail(c, "k must be non-negative");
    if (!out_alloc(c, out, x->ndim, x->shape) || !lanes_build(c, x, dim, &g))
        return 0;
    int64_t most = 0;
    for (int64_t l = 0; l < g.ng; l++)
        if (g.start[l + 1] - g.start[l] > most)
            most = g.start[l + 1] - g.start[l];
    sp_expr_t *tmp = scratch(c, most);
    int ok = tmp != NULL;
    /* rank_i = #{j < i: x_j >= x_i} + #{j > i: x_j > x_i}; selected iff rank_i < k */
    for (int64_t l = 0; ok && l < g.ng; l++) {
        int64_t b = g.start[l], n = g.start[l + 1] - b;
        for (int64_t i = 0; i < n; i++) {
            sp_expr_t xi = x->v[g.idx[b + i]];
            if (k >= n || k == 0) {
                out->v[g.idx[b + i]] = K(E, k >= n ? 1 : 0, 1);
                continue;
            }
            int64_t m = 0;
            for (int64_t j = 0; j < n; j++)
                if (j != i)
                    tmp[m++] = sp_expr_cmp(E, j < i ? SP_CMP_GE : SP_CMP_GT, x->v[g.idx[b + j]], xi);
            out->v[g.idx[b + i]] = sp_expr_cmp(E, SP_CMP_LT, addv(E, tmp, m), K(E, k, 1));
        }
    }
    flint_free(tmp);
    groups_clear(&g);
    return ok;
}

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
    "softmax", "log_softmax", "causal_softmax", "layernorm", "rmsnorm", "cross_entropy", "matmul",
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

static int valid_tensor(const sp_tensor_t *t)
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

int sp_ops_apply(sp_ectx_t E, const char *name, const sp_tensor_t *in, int nin,
                 const sp_attr_t *attr, int nattr, int64_t max_numel, sp_tensor_t *out,
                 sp_op_err_t *err)
{
    if (err != NULL) {
        err->msg[0] = 0;
        err->attr = -1;
        err->elements = 0;
    }
    const op_def_t *def = find_op(name);
    if (def == NULL) {
        set_err(err, "unknown operator '%s'", name);
        return 0;
    }
    opc_t c = {E, def, name, in, nin, attr, nattr, max_numel, err, 0, 0};
    attrbuf_t ab;
    sp_tensor_t res;
    sp_tensor_init(&res);
    int ok = prepare(&c, &ab) && def->fwd(&c, &res) && check_built(&c, &res);
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

int sp_ops_vjp(sp_ectx_t E, const char *name, const sp_tensor_t *in, int nin,
               const sp_attr_t *attr, int nattr, const sp_tensor_t *out, const sp_tensor_t *dout,
               sp_tensor_t *din, sp_op_err_t *err)
{
    if (err != NULL) {
        err->msg[0] = 0;
        err->attr = -1;
        err->elements = 0;
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
    opc_t c = {E, def, name, in, nin, attr, nattr, 0, err, 0, 0};
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
    attrbuf_clear(&ab);
    sp_tensor_clear(&y);
    if (!ok)
        for (int k = 0; din != NULL && k < nin; k++) {
            sp_tensor_clear(&din[k]);
            din[k].ndim = -1;
        }
    return ok;
}
