/* nnscaler.c: import a (logical, parallel) pair of TrainVerify nnScaler plans (tvplan JSON). */
#include "nnscaler.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flint/flint.h>

#include "ops.h"

/*
 * Overview (docs/nnscaler.md has the user-level description).
 *
 * Both files are loaded and validated (every field the importer reads is checked, errors name
 * the JSON path).  Dimensions: every (full tensor, dim) of both files is a node of a union-find;
 * the einops-style annotations of forward ops unify the dims that carry the same letter,
 * gradient links unify a tensor with its gradient, and parallel tensors are linked to the
 * logical tensors of the same name.  Merged dims "(c 4^)" become products (derived dims), the
 * complex RoPE table [S, D/2] a half.  Each class is one `dim`; the plan writes local sizes as
 * CLASS divided by the mesh axes the split is over (B/dp/mb, D/tp) and by a literal for any
 * other split, pushing the division onto a factor of a product (local_expr_v).
 *
 * The model is the logical plan's forward pass (identity-like ops and multiref are aliases),
 * ending in `train sgd`: shardproof's autodiff gives grad.W, which is what the logical backward
 * pass computes (torch.autograd of the forward).
 *
 * The plan runs on the mesh dp x mb x pp x tp.  mb is the micro-batch index: TrainVerify keys
 * every tensor instance by (rank, micro-batch) and shares only attributes (weights and their
 * gradients) across micro-batches; the plan does the same, with the micro-batch as a mesh axis,
 * so that a micro-batch tensor has a layout (rows of micro-batch g = dp*nm + mb are chunk g of
 * the batch: B@(dp,mb)).  The per-micro-batch accumulation of weight gradients is the sum over
 * mb, done with the reducer's all_reduce.  Each pipeline stage runs its tp devices in lockstep
 * (`on pp = k`), the per-device sequence being the device's schedule for one micro-batch;
 * stages are interleaved so that every recv follows its send.
 */

#define MAXD 8                 /* dims per tensor */
#define MAXTP 64               /* tensor-parallel degree */
#define MAXAX 8
#define LIM_DEV 4096
#define LIM_COUNT 1000000      /* array lengths */
#define LIM_SIZE ((int64_t)1 << 40)

/* ---- arena, errors ---------------------------------------------------------------------------- */

typedef struct ablk {
    struct ablk *next;
    size_t used, cap;
    max_align_t data[];
} ablk_t;

struct plan;

typedef struct ictx {
    jmp_buf jb;
    char *err;
    size_t errlen;
    ablk_t *ar;
    json_t *roots[2];
} ictx_t;

static void *ar_alloc(ictx_t *X, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (X->ar == NULL || X->ar->cap - X->ar->used < n) {
        size_t cap = n > ((size_t)1 << 20) ? n : ((size_t)1 << 20);
        ablk_t *b = flint_malloc(sizeof(ablk_t) + cap);
        b->next = X->ar;
        b->used = 0;
        b->cap = cap;
        X->ar = b;
    }
    void *p = (char *)X->ar->data + X->ar->used;
    X->ar->used += n;
    memset(p, 0, n);
    return p;
}

static void ar_free(ictx_t *X)
{
    while (X->ar) {
        ablk_t *n = X->ar->next;
        flint_free(X->ar);
        X->ar = n;
    }
}

static char *ar_vprintf(ictx_t *X, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = ar_alloc(X, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

static char *ar_printf(ictx_t *X, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static char *ar_printf(ictx_t *X, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = ar_vprintf(X, fmt, ap);
    va_end(ap);
    return s;
}

static char *ar_strdup(ictx_t *X, const char *s) { return ar_printf(X, "%s", s); }

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 2, 3)))
#endif
static void die(ictx_t *X, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(X->err, X->errlen, fmt, ap);
    va_end(ap);
    longjmp(X->jb, 1);
}


/* string builders in the arena (nothing to free on error paths) */
static _Thread_local ictx_t *g_X;

typedef struct {
    char *s;
    size_t len, cap;
} abuf_t;

static void ab_init(abuf_t *b)
{
    b->s = "";
    b->len = b->cap = 0;
}

static void ab_reserve(abuf_t *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t nc = b->cap ? 2 * b->cap : 256;
    while (nc < b->len + more + 1)
        nc *= 2;
    char *n = ar_alloc(g_X, nc);
    memcpy(n, b->s, b->len + 1);
    b->s = n;
    b->cap = nc;
}

static void ab_puts(abuf_t *b, const char *t)
{
    size_t n = strlen(t);
    ab_reserve(b, n);
    memcpy(b->s + b->len, t, n + 1);
    b->len += n;
}

static void ab_putc(abuf_t *b, char c)
{
    char t[2] = {c, 0};
    ab_puts(b, t);
}

static void ab_printf(abuf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void ab_printf(abuf_t *b, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    ab_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void ab_clear(abuf_t *b) { (void)b; }

/* growable arrays */
#define VEC(T) struct { T *v; int n, cap; }
#define VPUSH(X, a, x)                                                                             \
    do {                                                                                           \
        if ((a).n == (a).cap) {                                                                    \
            int nc_ = (a).cap ? 2 * (a).cap : 16;                                                  \
            void *nv_ = ar_alloc((X), (size_t)nc_ * sizeof(*(a).v));                               \
            if ((a).n)                                                                             \
                memcpy(nv_, (a).v, (size_t)(a).n * sizeof(*(a).v));                                \
            (a).v = nv_;                                                                           \
            (a).cap = nc_;                                                                         \
        }                                                                                          \
        (a).v[(a).n++] = (x);                                                                      \
    } while (0)

/* ---- hash maps: int64 -> int and string -> int ------------------------------------------------ */

typedef struct {
    int64_t *key;
    int *val;
    int cap, n;
} imap_t;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static void imap_grow(ictx_t *X, imap_t *m)
{
    int oc = m->cap;
    int64_t *ok = m->key;
    int *ov = m->val;
    m->cap = oc ? 2 * oc : 64;
    m->key = ar_alloc(X, (size_t)m->cap * sizeof(int64_t));
    m->val = ar_alloc(X, (size_t)m->cap * sizeof(int));
    for (int i = 0; i < m->cap; i++)
        m->key[i] = INT64_MIN;
    m->n = 0;
    for (int i = 0; i < oc; i++)
        if (ok[i] != INT64_MIN) {
            uint64_t h = mix64((uint64_t)ok[i]) & (uint64_t)(m->cap - 1);
            while (m->key[h] != INT64_MIN)
                h = (h + 1) & (uint64_t)(m->cap - 1);
            m->key[h] = ok[i];
            m->val[h] = ov[i];
            m->n++;
        }
}

static int *imap_slot(ictx_t *X, imap_t *m, int64_t k, int create)
{
    if (m->cap == 0) {
        if (!create)
            return NULL;
        imap_grow(X, m);
    }
    uint64_t h = mix64((uint64_t)k) & (uint64_t)(m->cap - 1);
    while (m->key[h] != INT64_MIN) {
        if (m->key[h] == k)
            return &m->val[h];
        h = (h + 1) & (uint64_t)(m->cap - 1);
    }
    if (!create)
        return NULL;
    if (2 * (m->n + 1) > m->cap) {
        imap_grow(X, m);
        return imap_slot(X, m, k, create);
    }
    m->key[h] = k;
    m->val[h] = -1;
    m->n++;
    return &m->val[h];
}

static int imap_get(const imap_t *m, int64_t k, int dflt)
{
    if (m->cap == 0)
        return dflt;
    uint64_t h = mix64((uint64_t)k) & (uint64_t)(m->cap - 1);
    while (m->key[h] != INT64_MIN) {
        if (m->key[h] == k)
            return m->val[h];
        h = (h + 1) & (uint64_t)(m->cap - 1);
    }
    return dflt;
}

static void imap_set(ictx_t *X, imap_t *m, int64_t k, int v) { *imap_slot(X, m, k, 1) = v; }

typedef struct {
    const char **key;
    int *val;
    int cap, n;
} smap_t;

static uint64_t shash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int smap_get(const smap_t *m, const char *k, int dflt)
{
    if (m->cap == 0)
        return dflt;
    uint64_t h = shash(k) & (uint64_t)(m->cap - 1);
    while (m->key[h]) {
        if (strcmp(m->key[h], k) == 0)
            return m->val[h];
        h = (h + 1) & (uint64_t)(m->cap - 1);
    }
    return dflt;
}

static void smap_set(ictx_t *X, smap_t *m, const char *k, int v)
{
    if (2 * (m->n + 1) > m->cap) {
        int oc = m->cap;
        const char **ok = m->key;
        int *ov = m->val;
        m->cap = oc ? 2 * oc : 64;
        m->key = ar_alloc(X, (size_t)m->cap * sizeof(char *));
        m->val = ar_alloc(X, (size_t)m->cap * sizeof(int));
        m->n = 0;
        for (int i = 0; i < oc; i++)
            if (ok[i])
                smap_set(X, m, ok[i], ov[i]);
    }
    uint64_t h = shash(k) & (uint64_t)(m->cap - 1);
    while (m->key[h]) {
        if (strcmp(m->key[h], k) == 0) {
            m->val[h] = v;
            return;
        }
        h = (h + 1) & (uint64_t)(m->cap - 1);
    }
    m->key[h] = ar_strdup(X, k);
    m->val[h] = v;
    m->n++;
}

/* ---- the data model --------------------------------------------------------------------------- */

enum { SL_TID, SL_CONST, SL_OBJ };

typedef struct {
    int kind;
    int64_t tid;  /* SL_TID, SL_OBJ */
    int64_t grad; /* per-occurrence gradient link, -1 */
    json_t *cval; /* SL_CONST */
    const char *path;
} slot_t;

enum { P_CHUNK, P_MOVE, P_ALLGATHER, P_ALLREDUCE, P_BROADCAST, P_IDENTITY, P_ARI, P_IAR, P_AGS,
       P_SAG, P_OTHER };

typedef struct {
    const char *cls, *sig, *path;
    int code;
    json_t *kw;
    slot_t *in, *out;
    int nin, nout;
} prim_t;

enum { K_FW, K_BW, K_ADAPTER, K_DATA, K_REDUCER, K_SEGMENT };

typedef struct node {
    int kind;
    int64_t cid;
    const char *name, *sig, *anno, *path;
    json_t *kw;
    int64_t mirror; /* -1 */
    int isfw;
    slot_t *in, *out;
    int nin, nout;
    prim_t *prims;
    int nprims;
    struct node *nodes;
    int nnodes;
    int64_t *devs;
    int ndevs;
    int *inver, *outver; /* forward versions of the slots when the op last ran (plan) */
} node_t;

typedef struct {
    node_t *cells;
    int ncells;
    imap_t cell_of;  /* cid -> index in cells */
    imap_t node_of;  /* cid -> index in allnodes (ops, nested included) */
    VEC(node_t *) allnodes;
    int64_t *sched_cid, *sched_mb;
    int nsched;
    const char *path;
} device_t;

typedef struct {
    int64_t tid;
    const char *name, *dtype, *path;
    int ndim;
    int64_t shape[MAXD];
    int is_attr, is_param, is_grad, is_loss;
    int64_t grad;
    int fwd;      /* index of the tensor whose gradient this is, -1 */
    int copy;     /* produced by multiref or an identity-like op */
    int dense;    /* a MoE routing tensor [tokens, topk]: represented densely as [tokens, experts] */
    int produced; /* produced by some op of the plan */
} full_t;

typedef struct {
    int64_t tid, parent;
    int pidx;
    int ndim;
    int64_t shape[MAXD], lo[MAXD], hi[MAXD];
    int64_t vi, vn;
    const char *path;
} sub_t;

typedef struct plan {
    const char *file;
    int role; /* 0 logical, 1 parallel */
    json_t *root;
    int64_t dp, pp, tp, nm, gbs;
    const char *model_name;
    full_t *full;
    int nfull;
    imap_t fidx;
    sub_t *sub;
    int nsub;
    imap_t sidx;
    device_t *dev;
    int ndev;
    smap_t byname; /* full tensor name -> first index (logical) */
} plan_t;

/* ---- JSON access with paths -------------------------------------------------------------------- */

static const char *jtype(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a JSON number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static json_t *jget(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key)
{
    if (!json_is_object(o))
        die(X, "%s: %s: expected an object, found %s", p->file, path, jtype(o));
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        die(X, "%s: %s%s%s: missing", p->file, path, *path ? "." : "", key);
    return v;
}


static const char *kpath(ictx_t *X, const char *path, const char *key)
{
    return ar_printf(X, "%s%s%s", path, *path ? "." : "", key);
}

static const char *ipath(ictx_t *X, const char *path, size_t i)
{
    return ar_printf(X, "%s[%zu]", path, i);
}

static int64_t jint_v(ictx_t *X, plan_t *p, json_t *v, const char *path, int64_t lo, int64_t hi)
{
    if (!json_is_integer(v))
        die(X, "%s: %s: expected an integer, found %s", p->file, path, jtype(v));
    int64_t x = (int64_t)json_integer_value(v);
    if (x < lo || x > hi)
        die(X, "%s: %s: %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", p->file, path, x,
            lo, hi);
    return x;
}

static int64_t jint(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key,
                    int64_t lo, int64_t hi)
{
    return jint_v(X, p, jget(X, p, o, path, key), kpath(X, path, key), lo, hi);
}

static const char *jstr(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key)
{
    json_t *v = jget(X, p, o, path, key);
    if (!json_is_string(v))
        die(X, "%s: %s: expected a string, found %s", p->file, kpath(X, path, key), jtype(v));
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v))
        die(X, "%s: %s: string contains a NUL character", p->file, kpath(X, path, key));
    return s;
}

static const char *jstr_or_null(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v))
        return NULL;
    return jstr(X, p, o, path, key);
}

static int jbool(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key)
{
    json_t *v = jget(X, p, o, path, key);
    if (!json_is_boolean(v))
        die(X, "%s: %s: expected a boolean, found %s", p->file, kpath(X, path, key), jtype(v));
    return json_is_true(v);
}

static json_t *jarr(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key)
{
    json_t *v = jget(X, p, o, path, key);
    if (!json_is_array(v))
        die(X, "%s: %s: expected an array, found %s", p->file, kpath(X, path, key), jtype(v));
    if (json_array_size(v) > LIM_COUNT)
        die(X, "%s: %s: too many elements (more than %d)", p->file, kpath(X, path, key), LIM_COUNT);
    return v;
}

static int jshape(ictx_t *X, plan_t *p, json_t *v, const char *path, int64_t *shape)
{
    if (!json_is_array(v))
        die(X, "%s: %s: expected an array of sizes, found %s", p->file, path, jtype(v));
    size_t n = json_array_size(v);
    if (n > MAXD)
        die(X, "%s: %s: %zu dimensions (at most %d supported)", p->file, path, n, MAXD);
    for (size_t i = 0; i < n; i++)
        shape[i] = jint_v(X, p, json_array_get(v, i), ipath(X, path, i), 1, LIM_SIZE);
    return (int)n;
}

/* a kwargs value: integer */
static int64_t kw_int(ictx_t *X, plan_t *p, json_t *kw, const char *path, const char *key)
{
    return jint(X, p, kw, path, key, -LIM_SIZE, LIM_SIZE);
}

/* ---- loading ----------------------------------------------------------------------------------- */

static int full_index(plan_t *p, int64_t tid) { return imap_get(&p->fidx, tid, -1); }
static int sub_index(plan_t *p, int64_t tid) { return imap_get(&p->sidx, tid, -1); }

static sub_t *sub_of(plan_t *p, int64_t tid)
{
    int i = sub_index(p, tid);
    return i < 0 ? NULL : &p->sub[i];
}

/* Which of n equal chunks of whole along dim d is part (by their index maps), or -1. */
static int chunk_index(const sub_t *part, const sub_t *whole, int d, int n)
{
    int64_t w = part->hi[d] - part->lo[d], off = part->lo[d] - whole->lo[d];
    if (w <= 0 || off < 0 || off % w != 0 || off / w >= n)
        return -1;
    return (int)(off / w);
}

static full_t *full_of_sub(plan_t *p, int64_t tid)
{
    sub_t *s = sub_of(p, tid);
    return s ? &p->full[s->pidx] : NULL;
}

static void parse_slots(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key,
                        slot_t **out, int *n)
{
    json_t *a = jarr(X, p, o, path, key);
    const char *ap = kpath(X, path, key);
    *n = (int)json_array_size(a);
    *out = ar_alloc(X, (size_t)(*n ? *n : 1) * sizeof(slot_t));
    for (int i = 0; i < *n; i++) {
        json_t *s = json_array_get(a, (size_t)i);
        const char *sp = ipath(X, ap, (size_t)i);
        slot_t *sl = &(*out)[i];
        sl->path = sp;
        sl->grad = -1;
        if (!json_is_object(s))
            die(X, "%s: %s: expected a slot object, found %s", p->file, sp, jtype(s));
        json_t *t = json_object_get(s, "tid"), *c = json_object_get(s, "const"),
               *ob = json_object_get(s, "irobject");
        if ((t != NULL) + (c != NULL) + (ob != NULL) != 1)
            die(X, "%s: %s: a slot has exactly one of 'tid', 'const', 'irobject'", p->file, sp);
        if (t) {
            sl->kind = SL_TID;
            sl->tid = jint_v(X, p, t, kpath(X, sp, "tid"), 0, LIM_SIZE);
            if (sub_index(p, sl->tid) < 0)
                die(X, "%s: %s.tid: %" PRId64 " is not in sub_tensors", p->file, sp, sl->tid);
            json_t *g = json_object_get(s, "grad");
            if (g && !json_is_null(g)) {
                sl->grad = jint_v(X, p, g, kpath(X, sp, "grad"), 0, LIM_SIZE);
                if (sub_index(p, sl->grad) < 0)
                    die(X, "%s: %s.grad: %" PRId64 " is not in sub_tensors", p->file, sp, sl->grad);
            }
        } else if (c) {
            sl->kind = SL_CONST;
            sl->cval = c;
        } else {
            sl->kind = SL_OBJ;
            sl->tid = jint_v(X, p, ob, kpath(X, sp, "irobject"), 0, LIM_SIZE);
        }
    }
}

static int prim_code(const char *cls)
{
    static const struct { const char *n; int c; } t[] = {
        {"ChunkPrim", P_CHUNK},
        {"MovePrim", P_MOVE},
        {"AllGatherPrim", P_ALLGATHER},
        {"AllReducePrim", P_ALLREDUCE},
        {"BroadcastPrim", P_BROADCAST},
        {"IdentityPrim", P_IDENTITY},
        {"AllReduceIdentityPrim", P_ARI},
        {"IdentityAllreducePrim", P_IAR},
        {"AllGatherSplitPrim", P_AGS},
        {"SplitAllGatherPrim", P_SAG},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].n, cls) == 0)
            return t[i].c;
    return P_OTHER;
}

static int is_fused(int code) { return code == P_ARI || code == P_IAR || code == P_AGS || code == P_SAG; }

static void parse_node(ictx_t *X, plan_t *p, device_t *dv, json_t *o, const char *path, node_t *n,
                       int nested)
{
    const char *k = jstr(X, p, o, path, "kind");
    if (!strcmp(k, "fw"))
        n->kind = K_FW;
    else if (!strcmp(k, "bw"))
        n->kind = K_BW;
    else if (!strcmp(k, "adapter"))
        n->kind = K_ADAPTER;
    else if (!strcmp(k, "data") && !nested)
        n->kind = K_DATA;
    else if (!strcmp(k, "reducer") && !nested)
        n->kind = K_REDUCER;
    else if (!strcmp(k, "segment") && !nested)
        n->kind = K_SEGMENT;
    else
        die(X, "%s: %s.kind: unsupported %s kind '%s'", p->file, path,
            nested ? "segment node" : "cell", k);
    n->path = path;
    n->cid = jint(X, p, o, path, "cid", 0, LIM_SIZE);
    n->mirror = -1;
    json_t *nm = json_object_get(o, "name");
    n->name = nm && json_is_string(nm) ? json_string_value(nm) : "";
    n->kw = json_object_get(o, "kwargs");
    if (n->kw == NULL || json_is_null(n->kw))
        n->kw = NULL;
    else if (!json_is_object(n->kw))
        die(X, "%s: %s.kwargs: expected an object, found %s", p->file, path, jtype(n->kw));
    if (n->kind != K_SEGMENT) {
        parse_slots(X, p, o, path, "inputs", &n->in, &n->nin);
        parse_slots(X, p, o, path, "outputs", &n->out, &n->nout);
    }
    json_t *mv = json_object_get(o, "mirror");
    if (mv && !json_is_null(mv))
        n->mirror = jint_v(X, p, mv, kpath(X, path, "mirror"), 0, LIM_SIZE);
    switch (n->kind) {
    case K_FW:
        n->sig = jstr(X, p, o, path, "signature");
        n->anno = jstr_or_null(X, p, o, path, "anno");
        n->name = jstr(X, p, o, path, "name");
        break;
    case K_BW:
        n->name = jstr(X, p, o, path, "name");
        if (n->mirror < 0)
            die(X, "%s: %s.mirror: a backward op needs the cid of its forward op", p->file, path);
        break;
    case K_ADAPTER: {
        n->isfw = jbool(X, p, o, path, "isfw");
        json_t *pr = jarr(X, p, o, path, "prims");
        const char *pp = kpath(X, path, "prims");
        n->nprims = (int)json_array_size(pr);
        n->prims = ar_alloc(X, (size_t)(n->nprims ? n->nprims : 1) * sizeof(prim_t));
        for (int i = 0; i < n->nprims; i++) {
            json_t *po = json_array_get(pr, (size_t)i);
            prim_t *q = &n->prims[i];
            q->path = ipath(X, pp, (size_t)i);
            q->cls = jstr(X, p, po, q->path, "class");
            q->sig = jstr(X, p, po, q->path, "signature");
            q->code = prim_code(q->cls);
            q->kw = jget(X, p, po, q->path, "kwargs");
            if (!json_is_object(q->kw))
                die(X, "%s: %s.kwargs: expected an object, found %s", p->file, q->path, jtype(q->kw));
            parse_slots(X, p, po, q->path, "inputs", &q->in, &q->nin);
            parse_slots(X, p, po, q->path, "outputs", &q->out, &q->nout);
        }
        break;
    }
    case K_REDUCER: {
        json_t *d = jarr(X, p, o, path, "device");
        n->ndevs = (int)json_array_size(d);
        n->devs = ar_alloc(X, (size_t)(n->ndevs ? n->ndevs : 1) * sizeof(int64_t));
        for (int i = 0; i < n->ndevs; i++)
            n->devs[i] = jint_v(X, p, json_array_get(d, (size_t)i),
                                ipath(X, kpath(X, path, "device"), (size_t)i), 0, LIM_DEV - 1);
        break;
    }
    case K_SEGMENT: {
        n->isfw = jbool(X, p, o, path, "isfw");
        json_t *a = jarr(X, p, o, path, "nodes");
        const char *np = kpath(X, path, "nodes");
        n->nnodes = (int)json_array_size(a);
        n->nodes = ar_alloc(X, (size_t)(n->nnodes ? n->nnodes : 1) * sizeof(node_t));
        for (int i = 0; i < n->nnodes; i++)
            parse_node(X, p, dv, json_array_get(a, (size_t)i), ipath(X, np, (size_t)i),
                       &n->nodes[i], 1);
        break;
    }
    default:
        break;
    }
    if (n->kind != K_SEGMENT && n->kind != K_REDUCER) {
        int *sl = imap_slot(X, &dv->node_of, n->cid, 1);
        if (*sl >= 0 && n->kind != K_ADAPTER)
            die(X, "%s: %s.cid: cid %" PRId64 " is used twice on this device", p->file, path, n->cid);
        if (*sl < 0) {
            *sl = dv->allnodes.n;
            VPUSH(X, dv->allnodes, n);
        }
    }
}

static void load_plan(ictx_t *X, plan_t *p, int role, const char *fname, const char *text,
                      size_t len)
{
    memset(p, 0, sizeof(*p));
    p->file = fname;
    p->role = role;
    if (len > SP_NNSCALER_MAX_FILE)
        die(X, "%s: file too large (more than %zu bytes)", fname, SP_NNSCALER_MAX_FILE);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        die(X, "%s:%d:%d: invalid JSON: %s", fname, je.line, je.column, je.text);
    X->roots[role] = root;
    p->root = root;
    if (!json_is_object(root))
        die(X, "%s: the top level must be an object, found %s", fname, jtype(root));
    const char *fmt = jstr(X, p, root, "", "format");
    if (strcmp(fmt, "tvplan") != 0)
        die(X, "%s: format: expected \"tvplan\", found \"%s\"", fname, fmt);
    jint(X, p, root, "", "format_version", 1, 1);
    json_t *src = jget(X, p, root, "", "source");
    const char *r = jstr(X, p, src, "source", "role");
    const char *want = role ? "parallel" : "logical";
    if (strcmp(r, want) != 0)
        die(X, "%s: source.role: expected \"%s\" (the %s file of the pair is the %s plan), found "
               "\"%s\"",
            fname, want, role ? "second" : "first", role ? "parallel" : "single-device", r);
    json_t *w = jget(X, p, root, "", "world");
    p->dp = jint(X, p, w, "world", "dp", 1, LIM_DEV);
    p->pp = jint(X, p, w, "world", "pp", 1, LIM_DEV);
    p->tp = jint(X, p, w, "world", "tp", 1, MAXTP);
    p->nm = jint(X, p, w, "world", "nm", 1, LIM_DEV);
    p->gbs = jint(X, p, w, "world", "gbs", 1, LIM_SIZE);
    p->model_name = jstr(X, p, w, "world", "model_name");
    if (p->dp * p->pp * p->tp > LIM_DEV * 16)
        die(X, "%s: world: dp*pp*tp = %" PRId64 " ranks is too many", fname, p->dp * p->pp * p->tp);
    int64_t pnd = jint(X, p, w, "world", "plan_ndevs", 1, LIM_DEV);
    if (pnd != p->tp * p->pp)
        die(X, "%s: world.plan_ndevs: %" PRId64 " plan devices, but tp*pp = %" PRId64, fname, pnd,
            p->tp * p->pp);
    if (role == 0 && (p->dp != 1 || p->pp != 1 || p->tp != 1 || p->nm != 1))
        die(X, "%s: world: the logical plan must be single-device (dp = pp = tp = nm = 1)", fname);

    /* full tensors */
    json_t *ft = jarr(X, p, root, "", "full_tensors");
    p->nfull = (int)json_array_size(ft);
    p->full = ar_alloc(X, (size_t)(p->nfull ? p->nfull : 1) * sizeof(full_t));
    for (int i = 0; i < p->nfull; i++) {
        const char *fp = ipath(X, "full_tensors", (size_t)i);
        json_t *o = json_array_get(ft, (size_t)i);
        full_t *f = &p->full[i];
        f->path = fp;
        f->tid = jint(X, p, o, fp, "tid", 0, LIM_SIZE);
        f->name = jstr(X, p, o, fp, "name");
        if (!*f->name)
            die(X, "%s: %s.name: empty name", fname, fp);
        f->dtype = jstr(X, p, o, fp, "dtype");
        f->ndim = jshape(X, p, jget(X, p, o, fp, "shape"), kpath(X, fp, "shape"), f->shape);
        f->is_attr = jbool(X, p, o, fp, "is_attr");
        f->is_param = jbool(X, p, o, fp, "is_param");
        f->is_grad = jbool(X, p, o, fp, "is_grad");
        f->is_loss = jbool(X, p, o, fp, "is_loss");
        json_t *g = jget(X, p, o, fp, "grad");
        f->grad = json_is_null(g) ? -1 : jint_v(X, p, g, kpath(X, fp, "grad"), 0, LIM_SIZE);
        f->fwd = -1;
        int *sl = imap_slot(X, &p->fidx, f->tid, 1);
        if (*sl >= 0)
            die(X, "%s: %s.tid: tid %" PRId64 " appears twice in full_tensors", fname, fp, f->tid);
        *sl = i;
        if (smap_get(&p->byname, f->name, -1) < 0)
            smap_set(X, &p->byname, f->name, i);
    }
    for (int i = 0; i < p->nfull; i++) {
        full_t *f = &p->full[i];
        if (f->grad < 0)
            continue;
        int g = full_index(p, f->grad);
        if (g < 0)
            die(X, "%s: %s.grad: tid %" PRId64 " is not in full_tensors", fname, f->path, f->grad);
        if (p->full[g].ndim != f->ndim ||
            memcmp(p->full[g].shape, f->shape, (size_t)f->ndim * sizeof(int64_t)) != 0)
            die(X, "%s: %s.grad: the gradient tensor's shape differs from the tensor's", fname,
                f->path);
        p->full[g].fwd = i;
    }
    /* sub tensors */
    json_t *st = jarr(X, p, root, "", "sub_tensors");
    p->nsub = (int)json_array_size(st);
    p->sub = ar_alloc(X, (size_t)(p->nsub ? p->nsub : 1) * sizeof(sub_t));
    for (int i = 0; i < p->nsub; i++) {
        const char *sp = ipath(X, "sub_tensors", (size_t)i);
        json_t *o = json_array_get(st, (size_t)i);
        sub_t *s = &p->sub[i];
        s->path = sp;
        s->tid = jint(X, p, o, sp, "tid", 0, LIM_SIZE);
        s->parent = jint(X, p, o, sp, "parent", 0, LIM_SIZE);
        s->pidx = full_index(p, s->parent);
        if (s->pidx < 0)
            die(X, "%s: %s.parent: tid %" PRId64 " is not in full_tensors", fname, sp, s->parent);
        full_t *f = &p->full[s->pidx];
        s->ndim = jshape(X, p, jget(X, p, o, sp, "shape"), kpath(X, sp, "shape"), s->shape);
        if (s->ndim != f->ndim)
            die(X, "%s: %s.shape: %d dimensions, its parent '%s' has %d", fname, sp, s->ndim,
                f->name, f->ndim);
        json_t *im = jarr(X, p, o, sp, "indmap");
        const char *ip = kpath(X, sp, "indmap");
        if ((int)json_array_size(im) != s->ndim)
            die(X, "%s: %s: %zu ranges for %d dimensions", fname, ip, json_array_size(im), s->ndim);
        for (int d = 0; d < s->ndim; d++) {
            json_t *rg = json_array_get(im, (size_t)d);
            const char *rp = ipath(X, ip, (size_t)d);
            if (!json_is_array(rg) || json_array_size(rg) != 2)
                die(X, "%s: %s: expected [start, end]", fname, rp);
            s->lo[d] = jint_v(X, p, json_array_get(rg, 0), ipath(X, rp, 0), 0, f->shape[d]);
            s->hi[d] = jint_v(X, p, json_array_get(rg, 1), ipath(X, rp, 1), 0, f->shape[d]);
            if (s->hi[d] - s->lo[d] != s->shape[d])
                die(X, "%s: %s: range [%" PRId64 ", %" PRId64 ") does not have the shape's %" PRId64
                       " elements",
                    fname, rp, s->lo[d], s->hi[d], s->shape[d]);
        }
        json_t *vm = jarr(X, p, o, sp, "valmap");
        const char *vp = kpath(X, sp, "valmap");
        if (json_array_size(vm) != 2)
            die(X, "%s: %s: expected [index, parts]", fname, vp);
        s->vn = jint_v(X, p, json_array_get(vm, 1), ipath(X, vp, 1), 1, LIM_DEV);
        s->vi = jint_v(X, p, json_array_get(vm, 0), ipath(X, vp, 0), 0, s->vn - 1);
        int *sl = imap_slot(X, &p->sidx, s->tid, 1);
        if (*sl >= 0)
            die(X, "%s: %s.tid: tid %" PRId64 " appears twice in sub_tensors", fname, sp, s->tid);
        *sl = i;
    }
    /* devices */
    json_t *dv = jarr(X, p, root, "", "devices");
    p->ndev = (int)json_array_size(dv);
    if (p->ndev != p->tp * p->pp)
        die(X, "%s: devices: %d devices, but world says tp*pp = %" PRId64, fname, p->ndev,
            p->tp * p->pp);
    p->dev = ar_alloc(X, (size_t)p->ndev * sizeof(device_t));
    for (int i = 0; i < p->ndev; i++) {
        const char *dp = ipath(X, "devices", (size_t)i);
        json_t *o = json_array_get(dv, (size_t)i);
        device_t *d = &p->dev[i];
        d->path = dp;
        jint(X, p, o, dp, "device", i, i);
        json_t *cells = jarr(X, p, o, dp, "cells");
        const char *cp = kpath(X, dp, "cells");
        d->ncells = (int)json_array_size(cells);
        d->cells = ar_alloc(X, (size_t)(d->ncells ? d->ncells : 1) * sizeof(node_t));
        for (int c = 0; c < d->ncells; c++) {
            parse_node(X, p, d, json_array_get(cells, (size_t)c), ipath(X, cp, (size_t)c),
                       &d->cells[c], 0);
            int *sl = imap_slot(X, &d->cell_of, d->cells[c].cid, 1);
            if (*sl >= 0)
                die(X, "%s: %s.cid: cell %" PRId64 " appears twice", fname,
                    ipath(X, cp, (size_t)c), d->cells[c].cid);
            *sl = c;
        }
        json_t *sc = jarr(X, p, o, dp, "schedule");
        const char *sp = kpath(X, dp, "schedule");
        d->nsched = (int)json_array_size(sc);
        d->sched_cid = ar_alloc(X, (size_t)(d->nsched ? d->nsched : 1) * sizeof(int64_t));
        d->sched_mb = ar_alloc(X, (size_t)(d->nsched ? d->nsched : 1) * sizeof(int64_t));
        for (int e = 0; e < d->nsched; e++) {
            json_t *so = json_array_get(sc, (size_t)e);
            const char *ep = ipath(X, sp, (size_t)e);
            d->sched_cid[e] = jint(X, p, so, ep, "cell", 0, LIM_SIZE);
            d->sched_mb[e] = jint(X, p, so, ep, "mb", 0, LIM_DEV);
            if (imap_get(&d->cell_of, d->sched_cid[e], -1) < 0)
                die(X, "%s: %s.cell: no cell %" PRId64 " on this device", fname, ep,
                    d->sched_cid[e]);
        }
    }
}

/* ---- dimension classes -------------------------------------------------------------------------- */

typedef struct {
    int kind;      /* 0 base, 1 product, 2 half */
    int nf;
    int f[MAXD];   /* product: factor classes, outer to inner */
    int base;      /* half: the class halved */
    int64_t size;  /* real (logical) size */
    const char *name;
    int used;
    int state;     /* cycle check */
} cls_t;

typedef struct {
    int target, nmem, mem[MAXD];
    const char *path;
} pdef_t;

typedef struct {
    VEC(int) par;
    VEC(int64_t) size;
    VEC(const char *) where;
    VEC(pdef_t) prod;
    VEC(int) half_t;
    VEC(int) half_b;
    int base[2];
    imap_t cls_of;  /* root -> class index */
    VEC(cls_t) cls;
    smap_t names;   /* used dim names */
    VEC(int) order; /* classes in emission order */
} dims_t;

static int uf_new(ictx_t *X, dims_t *D, int64_t size, const char *where)
{
    int id = D->par.n;
    VPUSH(X, D->par, id);
    VPUSH(X, D->size, size);
    VPUSH(X, D->where, where);
    return id;
}

static int uf_find(dims_t *D, int x)
{
    while (D->par.v[x] != x) {
        D->par.v[x] = D->par.v[D->par.v[x]];
        x = D->par.v[x];
    }
    return x;
}

static void uf_union(ictx_t *X, dims_t *D, int a, int b, const char *why)
{
    a = uf_find(D, a);
    b = uf_find(D, b);
    if (a == b)
        return;
    int64_t sa = D->size.v[a], sb = D->size.v[b];
    if (sa >= 0 && sb >= 0 && sa != sb)
        die(X, "%s: dimension of size %" PRId64 " (%s) is identified with one of size %" PRId64
               " (%s)",
            why, sa, D->where.v[a], sb, D->where.v[b]);
    if (a > b) {
        int t = a;
        a = b;
        b = t;
    }
    D->par.v[b] = a;
    if (D->size.v[a] < 0)
        D->size.v[a] = D->size.v[b];
}

static int dnode(dims_t *D, int role, int f, int d) { return D->base[role] + f * MAXD + d; }

/* the class of dim d of full tensor f of plan p */
static int dcls(ictx_t *X, dims_t *D, plan_t *p, int f, int d)
{
    int r = uf_find(D, dnode(D, p->role, f, d));
    int c = imap_get(&D->cls_of, r, -1);
    if (c < 0)
        die(X, "%s: %s: dimension %d is not related to any dimension of the logical plan", p->file,
            p->full[f].path, d);
    return c;
}

/* an annotation slot: dims, each a list of member tokens (a group when more than one) */
typedef struct {
    int nontensor;
    int nd;
    int nmem[MAXD];
    char mem[MAXD][MAXD][40];
} aslot_t;

static int parse_anno_side(const char *s, const char *end, aslot_t *slots, int maxslots)
{
    int n = 0;
    const char *p = s;
    while (p < end) {
        if (n == maxslots)
            return -1;
        aslot_t *a = &slots[n++];
        memset(a, 0, sizeof(*a));
        int ingroup = 0;
        for (;;) {
            while (p < end && *p == ' ')
                p++;
            if (p >= end || *p == ',')
                break;
            if (*p == '(') {
                if (ingroup || a->nd == MAXD)
                    return -1;
                ingroup = 1;
                a->nd++;
                p++;
                continue;
            }
            if (*p == ')') {
                if (!ingroup || a->nmem[a->nd - 1] == 0)
                    return -1;
                ingroup = 0;
                p++;
                continue;
            }
            if (*p == '?') {
                a->nontensor = 1;
                p++;
                while (p < end && (*p == '^' || *p == '+'))
                    p++;
                continue;
            }
            if (!(isalnum((unsigned char)*p) || *p == '_'))
                return -1;
            char tok[40];
            int k = 0;
            while (p < end && (isalnum((unsigned char)*p) || *p == '_')) {
                if (k < 38)
                    tok[k++] = *p;
                p++;
            }
            tok[k] = 0;
            while (p < end && (*p == '^' || *p == '+' || *p == '*'))
                p++;
            if (!ingroup) {
                if (a->nd == MAXD)
                    return -1;
                a->nd++;
            }
            int d = a->nd - 1;
            if (a->nmem[d] == MAXD)
                return -1;
            strcpy(a->mem[d][a->nmem[d]++], tok);
        }
        if (ingroup)
            return -1;
        if (p < end && *p == ',')
            p++;
    }
    return n;
}

static void anno_op(ictx_t *X, dims_t *D, plan_t *p, node_t *n)
{
    if (n->anno == NULL)
        return;
    const char *arrow = strstr(n->anno, "->");
    if (arrow == NULL)
        die(X, "%s: %s.anno: no '->' in annotation '%s'", p->file, n->path, n->anno);
    aslot_t *in = ar_alloc(X, sizeof(aslot_t) * 32), *out = ar_alloc(X, sizeof(aslot_t) * 32);
    int ni = parse_anno_side(n->anno, arrow, in, 32);
    int no = parse_anno_side(arrow + 2, n->anno + strlen(n->anno), out, 32);
    if (ni < 0 || no < 0)
        die(X, "%s: %s.anno: cannot parse annotation '%s'", p->file, n->path, n->anno);
    if (ni != n->nin || no != n->nout)
        die(X, "%s: %s.anno: annotation '%s' has %d inputs and %d outputs, the op %d and %d",
            p->file, n->path, n->anno, ni, no, n->nin, n->nout);
    smap_t letters = {0};
    const char *why = ar_printf(X, "%s: %s.anno", p->file, n->path);
    for (int side = 0; side < 2; side++) {
        aslot_t *A = side ? out : in;
        slot_t *S = side ? n->out : n->in;
        int ns = side ? no : ni;
        for (int i = 0; i < ns; i++) {
            if (S[i].kind != SL_TID)
                continue;
            if (A[i].nontensor)
                die(X, "%s: %s: the annotation marks this tensor as a non-tensor argument",
                    p->file, S[i].path);
            sub_t *s = sub_of(p, S[i].tid);
            if (A[i].nd != s->ndim)
                die(X, "%s: %s.anno: slot %d has %d dims in '%s', the tensor has %d", p->file,
                    n->path, i, A[i].nd, n->anno, s->ndim);
            for (int d = 0; d < s->ndim; d++) {
                int node = dnode(D, p->role, s->pidx, d);
                int mem[MAXD], nm = 0;
                for (int m = 0; m < A[i].nmem[d]; m++) {
                    const char *t = A[i].mem[d][m];
                    if (strcmp(t, "1") == 0)
                        continue;
                    char key[48];
                    snprintf(key, sizeof key, "%s%s", isdigit((unsigned char)t[0]) ? "#" : "", t);
                    int ln = smap_get(&letters, key, -1);
                    if (ln < 0) {
                        int64_t sz = isdigit((unsigned char)t[0]) ? strtoll(t, NULL, 10) : -1;
                        ln = uf_new(X, D, sz, ar_printf(X, "'%s' in %s.anno", t, n->path));
                        smap_set(X, &letters, key, ln);
                    }
                    mem[nm++] = ln;
                }
                if (A[i].nmem[d] == 1 && nm == 1) {
                    uf_union(X, D, node, mem[0], why);
                } else if (A[i].nmem[d] > 1) {
                    pdef_t pd;
                    memset(&pd, 0, sizeof pd);
                    pd.target = node;
                    pd.nmem = nm;
                    memcpy(pd.mem, mem, sizeof(int) * (size_t)nm);
                    pd.path = why;
                    VPUSH(X, D->prod, pd);
                }
            }
        }
    }
    /* dense MoE routing: the topk dim of gate_fw's outputs is the experts dim of its weight,
       and nnscaler_moe_gmm's routing weights index its expert weights */
    if (strcmp(n->name, "gate_fw") == 0 && n->nin >= 2 && n->in[1].kind == SL_TID) {
        int e = dnode(D, p->role, sub_of(p, n->in[1].tid)->pidx, 0);
        for (int o = 0; o < n->nout; o++)
            if (n->out[o].kind == SL_TID)
                uf_union(X, D, dnode(D, p->role, sub_of(p, n->out[o].tid)->pidx, 1), e, why);
    }
    if (strcmp(n->name, "nnscaler_moe_gmm") == 0 && n->nin >= 4 && n->in[2].kind == SL_TID &&
        n->in[3].kind == SL_TID)
        uf_union(X, D, dnode(D, p->role, sub_of(p, n->in[2].tid)->pidx, 1),
                 dnode(D, p->role, sub_of(p, n->in[3].tid)->pidx, 0), why);
    /* the complex RoPE table [S, D/2]: its last dim is half the head dim */
    if (strcmp(n->name, "apply_rotary_emb") == 0 && n->nin == 3 && n->in[0].kind == SL_TID &&
        n->in[2].kind == SL_TID) {
        sub_t *x = sub_of(p, n->in[0].tid), *f = sub_of(p, n->in[2].tid);
        if (x->ndim == 4 && f->ndim == 2) {
            VPUSH(X, D->half_t, dnode(D, p->role, f->pidx, 1));
            VPUSH(X, D->half_b, dnode(D, p->role, x->pidx, 3));
        }
    }
}

static void dims_build(ictx_t *X, dims_t *D, plan_t *L, plan_t *P)
{
    memset(D, 0, sizeof(*D));
    D->base[0] = 0;
    D->base[1] = L->nfull * MAXD;
    /* MoE routing: gate_fw's (weights, indices) [tokens, topk] and their gradients are
       represented densely, [tokens, experts] (zero weight for the experts not chosen) */
    for (int r = 0; r < 2; r++) {
        plan_t *p = r ? P : L;
        for (int dv = 0; dv < p->ndev; dv++)
            for (int i = 0; i < p->dev[dv].allnodes.n; i++) {
                node_t *n = p->dev[dv].allnodes.v[i];
                if (n->kind != K_FW || strcmp(n->name, "gate_fw") != 0)
                    continue;
                for (int o = 0; o < n->nout; o++)
                    if (n->out[o].kind == SL_TID) {
                        full_t *f = &p->full[sub_of(p, n->out[o].tid)->pidx];
                        if (f->ndim != 2)
                            die(X, "%s: %s: gate_fw outputs are [tokens, topk]", p->file,
                                n->out[o].path);
                        f->dense = 1;
                        if (f->grad >= 0)
                            p->full[full_index(p, f->grad)].dense = 1;
                    }
            }
        /* parallel copies of them (same name) too */
    }
    for (int f = 0; f < P->nfull; f++) {
        int lf = smap_get(&L->byname, P->full[f].name, -1);
        if (lf >= 0 && L->full[lf].dense)
            P->full[f].dense = 1;
    }
    for (int f = 0; f < L->nfull; f++) {
        int pf = smap_get(&P->byname, L->full[f].name, -1);
        if (pf >= 0 && P->full[pf].dense)
            L->full[f].dense = 1;
    }
    for (int r = 0; r < 2; r++) {
        plan_t *p = r ? P : L;
        for (int f = 0; f < p->nfull; f++)
            for (int d = 0; d < MAXD; d++) {
                int64_t sz = (r == 0 && d < p->full[f].ndim && !(p->full[f].dense && d == 1))
                                 ? p->full[f].shape[d]
                                 : -1;
                uf_new(X, D, sz,
                       ar_printf(X, "dim %d of %s '%s' in %s", d, p->full[f].path, p->full[f].name,
                                 p->file));
            }
    }
    for (int r = 0; r < 2; r++) {
        plan_t *p = r ? P : L;
        for (int dv = 0; dv < p->ndev; dv++)
            for (int i = 0; i < p->dev[dv].allnodes.n; i++) {
                node_t *n = p->dev[dv].allnodes.v[i];
                if (n->kind == K_FW)
                    anno_op(X, D, p, n);
            }
        for (int f = 0; f < p->nfull; f++)
            if (p->full[f].grad >= 0) {
                int g = full_index(p, p->full[f].grad);
                for (int d = 0; d < p->full[f].ndim; d++)
                    uf_union(X, D, dnode(D, r, f, d), dnode(D, r, g, d),
                             ar_printf(X, "%s: %s.grad", p->file, p->full[f].path));
            }
    }
    /* parallel tensors are the logical tensors of the same name */
    for (int f = 0; f < P->nfull; f++) {
        full_t *pf = &P->full[f];
        int lf = smap_get(&L->byname, pf->name, -1);
        if (lf < 0)
            continue;
        if (L->full[lf].ndim != pf->ndim)
            die(X, "%s: %s: '%s' has %d dimensions, the logical plan's '%s' has %d", P->file,
                pf->path, pf->name, pf->ndim, L->full[lf].name, L->full[lf].ndim);
        for (int d = 0; d < pf->ndim; d++)
            uf_union(X, D, dnode(D, 1, f, d), dnode(D, 0, lf, d),
                     ar_printf(X, "%s: %s (linked by name to %s: %s)", P->file, pf->path, L->file,
                               L->full[lf].path));
    }
    /* products with one member are identities */
    for (int i = 0; i < D->prod.n; i++) {
        pdef_t *pd = &D->prod.v[i];
        int k = 0, last = -1;
        for (int m = 0; m < pd->nmem; m++)
            if (D->size.v[uf_find(D, pd->mem[m])] != 1) {
                k++;
                last = pd->mem[m];
            }
        if (k == 1)
            uf_union(X, D, pd->target, last, pd->path);
    }
    /* classes: roots of logical tensor dims, of letters and of product members */
    for (int x = 0; x < D->par.n; x++) {
        int r = uf_find(D, x);
        if (imap_get(&D->cls_of, r, -1) >= 0)
            continue;
        cls_t c;
        memset(&c, 0, sizeof c);
        c.size = D->size.v[r];
        c.base = -1;
        imap_set(X, &D->cls_of, r, D->cls.n);
        VPUSH(X, D->cls, c);
    }
    for (int i = 0; i < D->prod.n; i++) {
        pdef_t *pd = &D->prod.v[i];
        int t = imap_get(&D->cls_of, uf_find(D, pd->target), -1);
        int f[MAXD], nf = 0;
        int64_t prod = 1;
        int known = 1;
        for (int m = 0; m < pd->nmem; m++) {
            int r = uf_find(D, pd->mem[m]);
            if (D->size.v[r] == 1)
                continue;
            f[nf++] = imap_get(&D->cls_of, r, -1);
            if (D->size.v[r] < 0)
                known = 0;
            else
                prod *= D->size.v[r];
        }
        if (nf < 2)
            continue;
        cls_t *c = &D->cls.v[t];
        if (known && c->size >= 0 && prod != c->size)
            die(X, "%s: a merged dimension of size %" PRId64 " is the product of sizes that "
                   "multiply to %" PRId64,
                pd->path, c->size, prod);
        if (c->kind == 1) {
            int same = c->nf == nf;
            for (int k = 0; k < nf && same; k++)
                same = c->f[k] == f[k];
            if (!same)
                die(X, "%s: a merged dimension is split into different factors elsewhere; such "
                       "plans are not supported",
                    pd->path);
            continue;
        }
        c->kind = 1;
        c->nf = nf;
        memcpy(c->f, f, sizeof(int) * (size_t)nf);
    }
    for (int i = 0; i < D->half_t.n; i++) {
        int t = imap_get(&D->cls_of, uf_find(D, D->half_t.v[i]), -1);
        int b = imap_get(&D->cls_of, uf_find(D, D->half_b.v[i]), -1);
        cls_t *c = &D->cls.v[t];
        if (c->kind == 0) {
            c->kind = 2;
            c->base = b;
        } else if (c->kind != 2 || c->base != b) {
            die(X, "%s: the RoPE table's last dimension is used inconsistently", L->file);
        }
        if (D->cls.v[b].size >= 0 && c->size >= 0 && D->cls.v[b].size != 2 * c->size)
            die(X, "%s: the RoPE table's last dimension (%" PRId64 ") is not half the head "
                   "dimension (%" PRId64 ")",
                L->file, c->size, D->cls.v[b].size);
    }
    /* cycles */
    for (int i = 0; i < D->cls.n; i++) {
        /* iterative DFS over factor edges */
        if (D->cls.v[i].state)
            continue;
        int stack[256], top = 0;
        stack[top++] = i;
        while (top) {
            int c = stack[top - 1];
            cls_t *C = &D->cls.v[c];
            if (C->state == 0) {
                C->state = 1;
                int nb = C->kind == 1 ? C->nf : C->kind == 2 ? 1 : 0;
                for (int k = 0; k < nb; k++) {
                    int f = C->kind == 1 ? C->f[k] : C->base;
                    if (D->cls.v[f].state == 1)
                        die(X, "%s: dimensions are defined in terms of each other (a cycle of "
                               "merged dimensions)",
                            L->file);
                    if (D->cls.v[f].state == 0) {
                        if (top == 256)
                            die(X, "%s: merged dimensions nested too deeply", L->file);
                        stack[top++] = f;
                    }
                }
            } else {
                C->state = 2;
                top--;
            }
        }
    }
}

/* the name of a class (marks it and its factors used) */
static const char *cname(ictx_t *X, dims_t *D, int c)
{
    cls_t *C = &D->cls.v[c];
    if (C->size < 0)
        die(X, "a dimension of unknown size is used (internal: class %d)", c);
    if (C->name == NULL) {
        char buf[64];
        for (int k = 0;; k++) {
            if (k == 0)
                snprintf(buf, sizeof buf, "D%" PRId64, C->size);
            else
                snprintf(buf, sizeof buf, "D%" PRId64 "_%d", C->size, k + 1);
            if (smap_get(&D->names, buf, -1) < 0)
                break;
        }
        C->name = ar_strdup(X, buf);
        smap_set(X, &D->names, C->name, c);
    }
    if (!C->used) {
        C->used = 1;
        if (C->kind == 1)
            for (int k = 0; k < C->nf; k++)
                cname(X, D, C->f[k]);
        else if (C->kind == 2)
            cname(X, D, C->base);
        VPUSH(X, D->order, c);
    }
    return C->name;
}

static void cname_set(ictx_t *X, dims_t *D, int c, const char *name)
{
    cls_t *C = &D->cls.v[c];
    if (C->name || smap_get(&D->names, name, -1) >= 0 || C->size <= 1)
        return;
    C->name = ar_strdup(X, name);
    smap_set(X, &D->names, C->name, c);
}

typedef struct {
    int c;
    int64_t k;
} dcons_t;

typedef struct {
    ictx_t *X;
    dims_t D;
    VEC(dcons_t) cons;
    imap_t cons_seen;
    int folded; /* local_expr_v wrote a split over mesh axes as a literal */
} dctx_t;

/* A split of a dimension: over mesh axes (named, with their sizes, major to minor) and by a
   literal remainder.  The plan writes a local size with the axes' names (B/dp/mb, (D32/tp)*D128),
   so that it follows the mesh (docs/nnscaler.md); a literal stays for a split over no axis. */
typedef struct {
    int n;
    const char *ax[3];
    int64_t sz[3];
    int64_t lit;
} dvs_t;

static dvs_t dvs_lit(int64_t k)
{
    dvs_t v;
    memset(&v, 0, sizeof v);
    v.lit = k;
    return v;
}

static void dvs_axis(dvs_t *v, const char *name, int64_t size)
{
    if (size > 1 && v->n < 3) {
        v->ax[v->n] = name;
        v->sz[v->n++] = size;
    }
}

static int64_t dvs_total(const dvs_t *v)
{
    int64_t t = v->lit;
    for (int a = 0; a < v->n; a++)
        t *= v->sz[a];
    return t;
}

static int64_t gcd_i64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* CLASS / v written so that the divisions fall on base dimensions (a product's factors from the
   outermost: each axis on the first factor its size divides, then the literal as before); NULL
   if v does not divide the class's size that way.  An axis that no factor takes alone makes the
   whole split a literal one. */
static const char *local_expr_v(dctx_t *DC, int c, const dvs_t *v)
{
    ictx_t *X = DC->X;
    dims_t *D = &DC->D;
    cls_t *C = &D->cls.v[c];
    const char *nm = cname(X, D, c);
    int64_t k = dvs_total(v);
    if (k == 1)
        return nm;
    if (C->size % k != 0)
        return NULL;
    if (C->kind == 0) {
        abuf_t b;
        ab_init(&b);
        ab_puts(&b, nm);
        for (int a = 0; a < v->n; a++)
            ab_printf(&b, "/%s", v->ax[a]);
        if (v->lit > 1)
            ab_printf(&b, "/%" PRId64, v->lit);
        char *s = b.s;
        ab_clear(&b);
        return s;
    }
    if (C->kind == 2) {
        dvs_t w = *v;
        w.lit *= 2;
        return local_expr_v(DC, C->base, &w);
    }
    /* product: divide factors from the outermost */
    const char *parts[MAXD];
    int used[3] = {0, 0, 0};
    int64_t rem = v->lit;
    for (int i = 0; i < C->nf; i++) {
        dvs_t w = dvs_lit(1);
        int64_t q = D->cls.v[C->f[i]].size;
        for (int a = 0; a < v->n; a++)
            if (!used[a] && q % v->sz[a] == 0) {
                dvs_axis(&w, v->ax[a], v->sz[a]);
                q /= v->sz[a];
                used[a] = 1;
            }
        w.lit = gcd_i64(rem, q);
        rem /= w.lit;
        parts[i] = local_expr_v(DC, C->f[i], &w);
        if (parts[i] == NULL)
            return NULL;
    }
    for (int a = 0; a < v->n; a++)
        if (!used[a]) {
            dvs_t w = dvs_lit(k);
            DC->folded = 1;
            return local_expr_v(DC, c, &w);
        }
    if (rem != 1)
        return NULL;
    abuf_t b;
    ab_init(&b);
    for (int i = 0; i < C->nf; i++)
        ab_printf(&b, "%s%s%s%s", i ? "*" : "", strchr(parts[i], '/') ? "(" : "", parts[i],
                       strchr(parts[i], '/') ? ")" : "");
    char *s = b.s;
    ab_clear(&b);
    return s;
}

static const char *local_expr_(dctx_t *DC, int c, int64_t k)
{
    dvs_t v = dvs_lit(k);
    return local_expr_v(DC, c, &v);
}

/* Record a split for the `dim _cN = CLASS/k` lines, which keep its reduced size even (shape
   reduction does not see the size of a chunk's input).  A dim cannot name a mesh axis; the hint
   holds the split's literal part and its tp part at tp's real size: a chunk over tp names rank.tp
   (or sits in an `on tp` block), so tp keeps its real size in the checked mesh whenever a chunk
   needs the hint.  The batch's split over dp and mb has no hint: the plan writes it with the axes'
   names, in layouts (B@(dp,mb)) and division chains (B/dp/mb), which shape reduction keeps even
   at the checked mesh sizes (a hint B/128 would pin the batch to a multiple of the real ones). */
static int64_t cons_part(const dvs_t *v)
{
    int64_t k = v->lit;
    for (int a = 0; a < v->n; a++)
        if (strcmp(v->ax[a], "dp") && strcmp(v->ax[a], "mb"))
            k *= v->sz[a];
    return k;
}

static void add_cons(dctx_t *DC, int c, int64_t k)
{
    if (k <= 1)
        return;
    int64_t key = (int64_t)c * 100003 + k;
    if (imap_get(&DC->cons_seen, key, -1) >= 0)
        return;
    imap_set(DC->X, &DC->cons_seen, key, 1);
    dcons_t x = {c, k};
    VPUSH(DC->X, DC->cons, x);
}

static const char *local_expr(dctx_t *DC, int c, const dvs_t *v, const char *where)
{
    DC->folded = 0;
    const char *s = local_expr_v(DC, c, v);
    if (s == NULL)
        die(DC->X, "%s: a dimension of size %" PRId64 " is split into %" PRId64
                   " parts, which does not divide it evenly; uneven splits are not supported",
            where, DC->D.cls.v[c].size, dvs_total(v));
    add_cons(DC, c, DC->folded ? dvs_total(v) : cons_part(v));
    return s;
}

/* ---- the importer state ------------------------------------------------------------------------ */

typedef struct {
    int kind; /* IT_OP (fw/bw), IT_ADAPTER, IT_DATA */
    node_t *n[MAXTP];
} item_t;

enum { IT_OP, IT_ADAPTER, IT_DATA };

typedef struct {
    int k, dev0;
    VEC(item_t) items;
    int pos;
    imap_t names[MAXTP];   /* tid -> index into I->vars */
    imap_t prodcnt[MAXTP]; /* tid -> productions so far */
    imap_t prodtot[MAXTP]; /* tid -> productions in the whole sequence */
    imap_t fver[MAXTP];    /* forward tensor tid -> versions produced so far */
    imap_t pgrad[MAXTP];   /* forward key -> the gradient tid linked to its producer's slot */
    imap_t gfwd[MAXTP];    /* gradient key -> the forward key it differentiates */
    imap_t tidseen[MAXTP]; /* tids produced so far (TrainVerify's chunk rule) */
    node_t *reducer[MAXTP];
    abuf_t decl;
    smap_t declared;       /* model input name -> index into decl_lay */
    VEC(const char *) decl_lay;
} stage_t;

typedef struct {
    int64_t cid;
    int consumed;
} msg_t;

typedef struct {
    msg_t *v;
    int n, cap;
} msgq_t;

typedef struct {
    ictx_t *X;
    plan_t L, P;
    dctx_t DC;
    /* model */
    const char **mname; /* per logical full tensor */
    int *mcanon;
    smap_t taken;       /* names in use (tensors, dims, funcs, keywords) */
    smap_t canon_by_name; /* logical full name -> canonical index, -2 if ambiguous */
    int tok_full;       /* logical dataloader output */
    int vcls;           /* vocabulary class */
    abuf_t mdecl, mbody;
    abuf_t omit; /* the model outputs TrainVerify's plans do not check: loss, next.W */
    int use_linear, use_linear_gw, use_rotary, use_rotary_grad, use_gmm;
    VEC(const char *) gate_cfg; /* "score|groups|topk_groups|topk|route_scale|E" per config */
    VEC(int) gate_ecls;         /* the experts class per config */
    /* plan */
    stage_t *st;
    VEC(const char *) vars;
    smap_t var_of;      /* var text -> index */
    VEC(msgq_t) queues;
    imap_t queue_of;    /* src*LIM_DEV+dst -> queue index */
    abuf_t body;
    int cur_stage;
    int *pgrad_done;    /* per logical full: a plan output for grad of this param exists */
    smap_t cut_stage;   /* lineage target -> the pipeline stage that relates it */
    int tv_chunk;       /* SP_NNSCALER_TV_CHUNK_RULE */
    int autograd_sum;   /* SP_NNSCALER_AUTOGRAD_SUM */
} imp_t;

static const char *const reserved[] = {
    "dim", "model", "plan", "of", "func", "input", "param", "output", "train", "mesh", "on", "for",
    "in", "if", "else", "return", "rank", "loss", "grad", "next", "dp", "mb", "pp", "tp",
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send",
    "recv", "linear", "linear_gw", "rotary", "rotary_grad", "momentum", "adam", "clip", NULL};

static void take_reserved(imp_t *I)
{
    for (int i = 0; reserved[i]; i++)
        smap_set(I->X, &I->taken, reserved[i], 1);
    const char *const *ops = sp_ops_names();
    for (int i = 0; ops[i]; i++)
        smap_set(I->X, &I->taken, ops[i], 1);
}

static const char *sanitize(imp_t *I, const char *s)
{
    size_t n = strlen(s);
    char *b = ar_alloc(I->X, n + 3);
    size_t k = 0;
    if (n == 0 || isdigit((unsigned char)s[0]))
        b[k++] = 't', b[k++] = '_';
    for (size_t i = 0; i < n && k < 200; i++)
        b[k++] = (isalnum((unsigned char)s[i]) || s[i] == '_') ? s[i] : '_';
    b[k] = 0;
    return b;
}

static const char *unique_name(imp_t *I, const char *base, int64_t tid)
{
    const char *s = sanitize(I, base);
    if (smap_get(&I->taken, s, -1) >= 0)
        s = ar_printf(I->X, "%s_%" PRId64, s, tid);
    for (int k = 2; smap_get(&I->taken, s, -1) >= 0; k++)
        s = ar_printf(I->X, "%s_%" PRId64 "_%d", sanitize(I, base), tid, k);
    smap_set(I->X, &I->taken, s, 1);
    return s;
}

/* an exact decimal constant from a kwargs/const value: integer or {"float": "<repr>"} */
static const char *const_text(imp_t *I, plan_t *p, json_t *v, const char *path, int *is_int)
{
    ictx_t *X = I->X;
    if (is_int)
        *is_int = 0;
    if (json_is_integer(v)) {
        if (is_int)
            *is_int = 1;
        long long x = json_integer_value(v);
        return x < 0 ? ar_printf(X, "(%lld)", x) : ar_printf(X, "%lld", x);
    }
    if (json_is_boolean(v))
        return json_is_true(v) ? "1" : "0";
    json_t *f = json_is_object(v) ? json_object_get(v, "float") : NULL;
    if (f == NULL || !json_is_string(f) || json_object_size(v) != 1)
        die(X, "%s: %s: expected a number (an integer or {\"float\": \"...\"}), found %s", p->file,
            path, jtype(v));
    const char *s = json_string_value(f);
    /* [-]digits[.digits][e[+-]digits] */
    const char *q = s;
    int neg = 0;
    if (*q == '-')
        neg = 1, q++;
    const char *body = q;
    int nd = 0;
    while (isdigit((unsigned char)*q))
        q++, nd++;
    if (*q == '.') {
        q++;
        int nf = 0;
        while (isdigit((unsigned char)*q))
            q++, nf++;
        if (nf == 0)
            nd = 0;
    }
    if (nd > 0 && (*q == 'e' || *q == 'E')) {
        q++;
        if (*q == '+' || *q == '-')
            q++;
        int ne = 0;
        while (isdigit((unsigned char)*q))
            q++, ne++;
        if (ne == 0)
            nd = 0;
    }
    if (nd == 0 || *q || strlen(body) > 200)
        die(X, "%s: %s.float: '%s' is not a finite decimal number", p->file, path, s);
    /* shardproof numbers need digits after '.', and no '+' in exponents */
    char buf[256];
    size_t k = 0;
    for (const char *c = body; *c && k < sizeof buf - 2; c++) {
        if (*c == '+')
            continue;
        buf[k++] = *c;
        if (*c == '.' && !isdigit((unsigned char)c[1]))
            buf[k++] = '0';
    }
    buf[k] = 0;
    return neg ? ar_printf(X, "(-%s)", buf) : ar_strdup(X, buf);
}

/* the local shape of a sub-tensor as dim expressions */
static const char *dim_expr(imp_t *I, plan_t *p, int64_t tid, int d, const char *where)
{
    sub_t *s = sub_of(p, tid);
    if (s->shape[d] == 1)
        return "1";
    int c = dcls(I->X, &I->DC.D, p, s->pidx, d);
    int64_t sz = I->DC.D.cls.v[c].size;
    if (sz % s->shape[d] != 0)
        die(I->X, "%s: %s: dimension %d has %" PRId64 " elements, which does not divide the "
                  "logical size %" PRId64,
            p->file, where, d, s->shape[d], sz);
    /* the parallel plan's split: the batch over the micro-batches of every data-parallel rank
       (the full tensor has dp*nm times fewer rows than the logical one), then the index map over
       the stage's tensor-parallel devices; any other factor is written as a literal */
    dvs_t v = dvs_lit(sz / s->shape[d]);
    const full_t *pf = &p->full[s->pidx];
    if (p == &I->P && sz % pf->shape[d] == 0 && pf->shape[d] % s->shape[d] == 0) {
        int64_t bf = sz / pf->shape[d], m = pf->shape[d] / s->shape[d];
        v = dvs_lit(1);
        if (bf > 1 && bf == p->dp * p->nm) {
            dvs_axis(&v, "dp", p->dp);
            dvs_axis(&v, "mb", p->nm);
        } else {
            v.lit *= bf;
        }
        if (m > 1 && m == p->tp)
            dvs_axis(&v, "tp", p->tp);
        else
            v.lit *= m;
    }
    return local_expr(&I->DC, c, &v, ar_printf(I->X, "%s: %s", p->file, where));
}

static const char *shape_text(imp_t *I, plan_t *p, int64_t tid, const char *where)
{
    sub_t *s = sub_of(p, tid);
    abuf_t b;
    ab_init(&b);
    ab_putc(&b, '[');
    for (int d = 0; d < s->ndim; d++)
        ab_printf(&b, "%s%s", d ? ", " : "", dim_expr(I, p, tid, d, where));
    ab_putc(&b, ']');
    char *r = ar_strdup(I->X, b.s);
    ab_clear(&b);
    return r;
}

/* sum `e` (of the shape of sub-tensor `from`) down to the shape of sub-tensor `to`
   (undo NumPy broadcasting) */
static const char *reduce_to(imp_t *I, plan_t *p, const char *e, int64_t from, int64_t to,
                             const char *where)
{
    sub_t *f = sub_of(p, from), *t = sub_of(p, to);
    if (t->ndim > f->ndim)
        die(I->X, "%s: %s: a gradient has fewer dimensions than its input", p->file, where);
    int lead = f->ndim - t->ndim;
    abuf_t b;
    ab_init(&b);
    int n1 = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 1 && f->shape[lead + d] != 1)
            ab_printf(&b, "%s%d", n1++ ? ", " : "", lead + d);
        else if (t->shape[d] != f->shape[lead + d])
            die(I->X, "%s: %s: shapes do not broadcast", p->file, where);
    const char *r = e;
    if (n1)
        r = ar_printf(I->X, "sum(%s, dim = [%s], keepdim = 1)", r, b.s);
    ab_clear(&b);
    if (lead) {
        ab_init(&b);
        for (int d = 0; d < lead; d++)
            ab_printf(&b, "%s%d", d ? ", " : "", d);
        r = ar_printf(I->X, "sum(%s, dim = [%s])", r, b.s);
        ab_clear(&b);
    }
    return r;
}

static int is_identity_op(const char *name)
{
    return !strcmp(name, "identity") || !strcmp(name, "float") || !strcmp(name, "to") ||
           !strcmp(name, "contiguous");
}

/* ---- op emitters (shared by the model and the plan) -------------------------------------------- */

typedef struct {
    imp_t *I;
    plan_t *p;
    int model;
    node_t **n;        /* per device (model: one) */
    int ntp, j;        /* render for device j */
    const char **iv;   /* input vars of n[j] (NULL for non-tensors) */
    /* backward */
    node_t *fw;        /* the mirror forward op of n[j] */
    node_t **fwn;      /* the mirror forward ops, per device */
    const char **fiv, **fov;
    const char **gin;  /* per forward output: its gradient var (NULL if not an input) */
    /* composite ops (MoE) also define intermediates, each a cut point: */
    const char *base;  /* variable name prefix of the intermediates */
    const char *mbase; /* plan: the model name prefix of their lineage targets */
    const char *tok;   /* plan: layout text of the token dimension (NULL: no lineage) */
    int stage;         /* plan: pipeline stage */
    abuf_t *pre;       /* statements emitted before the outputs */
} ectx_t;

static const char *cst(ectx_t *E, node_t *n, int slot)
{
    if (slot >= n->nin || n->in[slot].kind != SL_CONST)
        die(E->I->X, "%s: %s.inputs[%d]: expected a constant", E->p->file, n->path, slot);
    return const_text(E->I, E->p, n->in[slot].cval, n->in[slot].path, NULL);
}

static json_t *kw(ectx_t *E, node_t *n, const char *key, int required)
{
    json_t *v = n->kw ? json_object_get(n->kw, key) : NULL;
    if (v == NULL && required)
        die(E->I->X, "%s: %s.kwargs.%s: missing", E->p->file, n->path, key);
    return v;
}

static int64_t kwint(ectx_t *E, node_t *n, const char *key)
{
    return kw_int(E->I->X, E->p, n->kw, kpath(E->I->X, n->path, "kwargs"), key);
}

static void want_null_kw(ectx_t *E, node_t *n, const char *key)
{
    json_t *v = kw(E, n, key, 0);
    if (v && !json_is_null(v))
        die(E->I->X, "%s: %s.kwargs.%s: only null is supported", E->p->file, n->path, key);
}

static int tensor_in(node_t *n, int i) { return i < n->nin && n->in[i].kind == SL_TID; }

/* CLASS split into k equal parts, one per device of the stage when k is its tensor-parallel
   size (written CLASS/tp), else a literal split */
static const char *tp_part(ectx_t *E, int c, int64_t k, const char *path)
{
    dvs_t v = dvs_lit(k);
    if (E->ntp > 1 && k == E->ntp) {
        v = dvs_lit(1);
        dvs_axis(&v, "tp", k);
    }
    return local_expr(&E->I->DC, c, &v, ar_printf(E->I->X, "%s: %s", E->p->file, path));
}

/* the token slice an embedding shard reads: the one-hot columns [start, stop) of the vocabulary */
static const char *emb_tokens(ectx_t *E, node_t *n)
{
    imp_t *I = E->I;
    ictx_t *X = I->X;
    want_null_kw(E, n, "padding_idx");
    sub_t *w = sub_of(E->p, n->in[1].tid);
    int vc = dcls(X, &I->DC.D, E->p, w->pidx, 0);
    int64_t V = I->DC.D.cls.v[vc].size;
    int64_t start = kw(E, n, "start", 0) ? kwint(E, n, "start") : 0;
    int64_t stop = kw(E, n, "stop", 0) ? kwint(E, n, "stop") : V;
    if (stop - start != w->shape[0] || start < 0 || stop > V || start >= stop)
        die(X, "%s: %s.kwargs: the vocabulary range [%" PRId64 ", %" PRId64 ") does not match the "
               "weight shard of %" PRId64 " rows",
            E->p->file, n->path, start, stop, w->shape[0]);
    if (vc != I->vcls)
        die(X, "%s: %s: the embedding table's rows are not the token vocabulary", E->p->file,
            n->path);
    if (stop - start == V)
        return E->iv[0];
    int64_t len = stop - start, k = V / len;
    if (V % len || start % len)
        die(X, "%s: %s.kwargs: vocabulary range [%" PRId64 ", %" PRId64 ") is not one of equal "
               "parts",
            E->p->file, n->path, start, stop);
    const char *part = tp_part(E, vc, k, n->path);
    int affine = E->ntp == k;
    for (int j = 0; j < E->ntp && affine; j++) {
        node_t *m = E->n[j];
        json_t *sv = m->kw ? json_object_get(m->kw, "start") : NULL;
        affine = sv && json_is_integer(sv) && json_integer_value(sv) == j * len;
    }
    if (affine)
        return ar_printf(X, "slice(%s, dim = -1, start = rank.tp*(%s), end = (rank.tp + 1)*(%s))",
                         E->iv[0], part, part);
    return ar_printf(X, "slice(%s, dim = -1, start = %" PRId64 "*(%s), end = %" PRId64 "*(%s))",
                     E->iv[0], start / len, part, start / len + 1, part);
}

/* ---- MoE (DeepSeek-style gate_fw and nnscaler_moe_gmm, dense routing) ----
 * gate_fw(x, w) returns routing weights and expert ids [tokens, topk]; they are represented
 * densely as [tokens, experts]: the weight of each chosen expert, 0 elsewhere (weights), and the
 * 0/1 choice (indices).  nnscaler_moe_gmm(x, ids, weights, gate, up, down) is then
 * sum_e weights[:, e] * down_e(silu(gate_e x) * up_e x) over its local experts, which is what the
 * real op computes (each token's chosen local experts, scaled by their weights).  Top-k selection
 * is topk_mask (exact comparisons; ties go to the lower expert index), group-limited routing is
 * modeled exactly: the top topk_groups groups by their best score, the other groups' scores
 * replaced by -1, below every sigmoid (the real op uses -inf).
 */
static int gate_config(ectx_t *E, node_t *n)
{
    imp_t *I = E->I;
    ictx_t *X = I->X;
    json_t *sf = kw(E, n, "score_func", 1);
    if (!json_is_string(sf) ||
        (strcmp(json_string_value(sf), "sigmoid") && strcmp(json_string_value(sf), "softmax")))
        die(X, "%s: %s.kwargs.score_func: 'sigmoid' or 'softmax' is supported", E->p->file,
            n->path);
    want_null_kw(E, n, "bias");
    int64_t G = kwint(E, n, "n_groups"), TG = kwint(E, n, "topk_groups"), K = kwint(E, n, "topk");
    const char *rs = const_text(I, E->p, kw(E, n, "route_scale", 1),
                                kpath(X, n->path, "kwargs.route_scale"), NULL);
    if (!tensor_in(n, 1))
        die(X, "%s: %s.inputs[1]: the gate weight must be a tensor", E->p->file, n->path);
    sub_t *w = sub_of(E->p, n->in[1].tid);
    int ec = dcls(X, &I->DC.D, E->p, w->pidx, 0);
    int64_t Esz = I->DC.D.cls.v[ec].size;
    if (w->shape[0] != Esz)
        die(X, "%s: %s.inputs[1]: the gate weight must hold every expert", E->p->file, n->path);
    if (G < 1 || Esz % G || TG < 1 || TG > G || K < 1 || K > Esz || (G > 1 && TG * (Esz / G) < K))
        die(X, "%s: %s.kwargs: n_groups %" PRId64 ", topk_groups %" PRId64 ", topk %" PRId64
               " do not fit %" PRId64 " experts",
            E->p->file, n->path, G, TG, K, Esz);
    const char *key = ar_printf(X, "%s|%" PRId64 "|%" PRId64 "|%" PRId64 "|%s|%s",
                                json_string_value(sf), G, TG, K, rs, cname(X, &I->DC.D, ec));
    if (G > 1)
    {
        dvs_t g = dvs_lit(G);
        local_expr(&I->DC, ec, &g, n->path);
    }
    for (int i = 0; i < I->gate_cfg.n; i++)
        if (!strcmp(I->gate_cfg.v[i], key))
            return i + 1;
    VPUSH(X, I->gate_cfg, key);
    VPUSH(X, I->gate_ecls, ec);
    return I->gate_cfg.n;
}

/* the local experts of an nnscaler_moe_gmm shard: [start, end) as dim expressions */
static void gmm_local(ectx_t *E, node_t *n, const char **start, const char **end,
                      const char **after)
{
    imp_t *I = E->I;
    ictx_t *X = I->X;
    if (!tensor_in(n, 3))
        die(X, "%s: %s.inputs[3]: expert weights expected", E->p->file, n->path);
    int ec = dcls(X, &I->DC.D, E->p, sub_of(E->p, n->in[3].tid)->pidx, 0);
    int64_t Esz = I->DC.D.cls.v[ec].size;
    int64_t ne = kwint(E, n, "n_routed_experts"), ls = kwint(E, n, "local_expert_start"),
            le = kwint(E, n, "local_expert_end");
    sub_t *g = sub_of(E->p, n->in[3].tid);
    if (ne != Esz || ls < 0 || le > ne || ls >= le || le - ls != g->shape[0] || g->lo[0] != ls)
        die(X, "%s: %s.kwargs: local experts [%" PRId64 ", %" PRId64 ") of %" PRId64
               " do not match the expert weight shard",
            E->p->file, n->path, ls, le, ne);
    const char *en = cname(X, &I->DC.D, ec);
    if (ls == 0 && le == ne) {
        *start = "0";
        *end = en;
        *after = "0";
        return;
    }
    int64_t len = le - ls, k = ne / len;
    if (ne % len || ls % len)
        die(X, "%s: %s.kwargs: the local experts are not one of equal parts", E->p->file, n->path);
    const char *part = tp_part(E, ec, k, n->path);
    int affine = E->ntp == k;
    for (int j = 0; j < E->ntp && affine; j++) {
        json_t *sv = E->n[j]->kw ? json_object_get(E->n[j]->kw, "local_expert_start") : NULL;
        affine = sv && json_is_integer(sv) && json_integer_value(sv) == j * len;
    }
    if (affine) {
        *start = ar_printf(X, "rank.tp*(%s)", part);
        *end = ar_printf(X, "(rank.tp + 1)*(%s)", part);
        *after = ar_printf(X, "(tp - 1 - rank.tp)*(%s)", part);
    } else {
        *start = ar_printf(X, "%" PRId64 "*(%s)", ls / len, part);
        *end = ar_printf(X, "%" PRId64 "*(%s)", ls / len + 1, part);
        *after = ar_printf(X, "%" PRId64 "*(%s)", k - 1 - ls / len, part);
    }
}

static const char *gmm_weights(ectx_t *E, node_t *n, const char *w)
{
    const char *s0, *s1, *af;
    gmm_local(E, n, &s0, &s1, &af);
    if (!strcmp(s0, "0") && !strcmp(af, "0"))
        return w;
    return ar_printf(E->I->X, "slice(%s, dim = -1, start = %s, end = %s)", w, s0, s1);
}

/* layouts of nnscaler_moe_gmm's intermediates [experts, tokens, d] and [experts, tokens, h] */
static void gmm_layouts(ectx_t *E, node_t *n, const char **lay3, const char **layo)
{
    imp_t *I = E->I;
    ictx_t *X = I->X;
    *lay3 = *layo = NULL;
    if (E->model || !E->tok)
        return;
    sub_t *g = sub_of(E->p, n->in[3].tid), *x = sub_of(E->p, n->in[0].tid);
    int ec = dcls(X, &I->DC.D, E->p, g->pidx, 0), dc = dcls(X, &I->DC.D, E->p, g->pidx, 1),
        hc = dcls(X, &I->DC.D, E->p, x->pidx, 1);
    const char *s0, *s1, *af;
    gmm_local(E, n, &s0, &s1, &af);
    const char *ex;
    if (!strcmp(s0, "0") && !strcmp(af, "0"))
        ex = cname(X, &I->DC.D, ec);
    else if (!strncmp(s0, "rank.tp", 7))
        ex = ar_printf(X, "%s@tp", cname(X, &I->DC.D, ec));
    else
        return;
    *lay3 = ar_printf(X, "[%s, %s, %s]", ex, E->tok, cname(X, &I->DC.D, dc));
    *layo = ar_printf(X, "[%s, %s, %s]", ex, E->tok, cname(X, &I->DC.D, hc));
}

/* an intermediate of a composite op: BASE.SUFFIX = EXPR, with lineage to the model's
   intermediate MBASE.SUFFIX (or, tsuffix "grad.T", to grad.MBASE.T) under layout lay (NULL:
   none) */
static const char *pre_stmt(ectx_t *E, const char *suffix, const char *tsuffix, const char *lay,
                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static const char *pre_stmt(ectx_t *E, const char *suffix, const char *tsuffix, const char *lay,
                            const char *fmt, ...)
{
    imp_t *I = E->I;
    va_list ap;
    va_start(ap, fmt);
    char *e = ar_vprintf(I->X, fmt, ap);
    va_end(ap);
    const char *nm = ar_printf(I->X, "%s.%s", E->base, suffix);
    const char *lin = "";
    if (!E->model && lay && E->mbase) {
        /* tsuffix: "grad.SUFFIX" for a gradient, NULL for the forward intermediate SUFFIX */
        const char *target = tsuffix && !strncmp(tsuffix, "grad.", 5)
                                 ? ar_printf(I->X, "grad.%s.%s", E->mbase, tsuffix + 5)
                                 : ar_printf(I->X, "%s.%s", E->mbase, suffix);
        int other = smap_get(&I->cut_stage, target, -1);
        if (other < 0 || other == E->stage) {
            smap_set(I->X, &I->cut_stage, target, E->stage);
            lin = ar_printf(I->X, " ~ %s : %s", target, lay);
        }
    }
    ab_printf(E->pre, "%s = %s%s\n", nm, e, lin);
    return nm;
}

/* forward: out[i] is the expression of output i; alias[i] = 1 when it is just a name */
static void fw_expr(ectx_t *E, const char **out, int *alias)
{
    imp_t *I = E->I;
    ictx_t *X = I->X;
    node_t *n = E->n[E->j];
    const char *nm = n->name;
    const char **iv = E->iv;
    for (int i = 0; i < n->nout; i++)
        out[i] = NULL, alias[i] = 0;
    if (n->nout < 1)
        die(X, "%s: %s: an op without outputs", E->p->file, n->path);
#define NEED(k)                                                                                    \
    do {                                                                                           \
        for (int q_ = 0; q_ < (k); q_++)                                                           \
            if (!tensor_in(n, q_))                                                                 \
                die(X, "%s: %s.inputs[%d]: '%s' expects a tensor here", E->p->file, n->path, q_,   \
                    nm);                                                                           \
    } while (0)
    if (!strcmp(nm, "multiref") || is_identity_op(nm)) {
        NEED(1);
        for (int i = 0; i < n->nout; i++)
            out[i] = iv[0], alias[i] = 1;
        return;
    }
    if (n->nout != 1 && strcmp(nm, "apply_rotary_emb") != 0 && strcmp(nm, "gate_fw") != 0)
        die(X, "%s: %s: '%s' with %d outputs is not supported", E->p->file, n->path, nm, n->nout);
    if (!strcmp(nm, "embedding")) {
        NEED(2);
        out[0] = ar_printf(X, "matmul(%s, %s)", emb_tokens(E, n), iv[1]);
    } else if (!strcmp(nm, "pow")) {
        NEED(1);
        int isint;
        const char *c = const_text(I, E->p, n->in[1].cval, n->in[1].path, &isint);
        if (n->in[1].kind != SL_CONST || !isint)
            die(X, "%s: %s.inputs[1]: pow supports an integer constant exponent only", E->p->file,
                n->path);
        out[0] = ar_printf(X, "pow(%s, %s)", iv[0], c);
    } else if (!strcmp(nm, "mean")) {
        NEED(1);
        json_t *dv = kw(E, n, "dim", 1), *kd = kw(E, n, "keepdim", 0);
        abuf_t b;
        ab_init(&b);
        if (json_is_integer(dv)) {
            ab_printf(&b, "%lld", (long long)json_integer_value(dv));
        } else if (json_is_array(dv) && json_array_size(dv) > 0) {
            for (size_t k = 0; k < json_array_size(dv); k++) {
                json_t *x = json_array_get(dv, k);
                if (!json_is_integer(x))
                    die(X, "%s: %s.kwargs.dim: expected integers", E->p->file, n->path);
                ab_printf(&b, "%s%lld", k ? ", " : "", (long long)json_integer_value(x));
            }
        } else {
            die(X, "%s: %s.kwargs.dim: expected a dimension or a list of dimensions", E->p->file,
                n->path);
        }
        int keep = kd && json_is_true(kd);
        out[0] = ar_printf(X, "mean(%s, dim = [%s], keepdim = %d)", iv[0], b.s, keep);
        ab_clear(&b);
    } else if (!strcmp(nm, "add") || !strcmp(nm, "mul") || !strcmp(nm, "div")) {
        NEED(1);
        if (n->nin != 2)
            die(X, "%s: %s: '%s' with %d inputs is not supported", E->p->file, n->path, nm, n->nin);
        const char *alpha = NULL;
        if (!strcmp(nm, "add")) {
            json_t *a = kw(E, n, "alpha", 0);
            if (a && !(json_is_integer(a) && json_integer_value(a) == 1))
                alpha = const_text(I, E->p, a, kpath(X, n->path, "kwargs.alpha"), NULL);
        }
        if (!strcmp(nm, "div"))
            want_null_kw(E, n, "rounding_mode");
        const char *y = tensor_in(n, 1) ? iv[1] : cst(E, n, 1);
        const char *op = !strcmp(nm, "add") ? "+" : !strcmp(nm, "mul") ? "*" : "/";
        if (alpha)
            out[0] = ar_printf(X, "%s + %s * %s", iv[0], alpha, y);
        else
            out[0] = ar_printf(X, "%s %s %s", iv[0], op, y);
    } else if (!strcmp(nm, "rsqrt") || !strcmp(nm, "silu")) {
        NEED(1);
        json_t *ip = kw(E, n, "inplace", 0);
        (void)ip;
        out[0] = ar_printf(X, "%s(%s)", nm, iv[0]);
    } else if (!strcmp(nm, "linear")) {
        NEED(2);
        I->use_linear = 1;
        const char *b = tensor_in(n, 2) ? iv[2] : NULL;
        if (!b)
            want_null_kw(E, n, "bias");
        out[0] = b ? ar_printf(X, "linear(%s, %s) + %s", iv[0], iv[1], b)
                   : ar_printf(X, "linear(%s, %s)", iv[0], iv[1]);
    } else if (!strcmp(nm, "view")) {
        NEED(1);
        out[0] = ar_printf(X, "reshape(%s, %s)", iv[0],
                           shape_text(I, E->p, n->out[0].tid, kpath(X, n->path, "outputs[0]")));
    } else if (!strcmp(nm, "transpose")) {
        NEED(1);
        out[0] = ar_printf(X, "transpose(%s, %" PRId64 ", %" PRId64 ")", iv[0], kwint(E, n, "dim0"),
                           kwint(E, n, "dim1"));
    } else if (!strcmp(nm, "matmul")) {
        NEED(2);
        out[0] = ar_printf(X, "matmul(%s, %s)", iv[0], iv[1]);
    } else if (!strcmp(nm, "apply_rotary_emb")) {
        NEED(3);
        if (n->nout != 2)
            die(X, "%s: %s: apply_rotary_emb needs 2 outputs", E->p->file, n->path);
        I->use_rotary = 1;
        out[0] = ar_printf(X, "rotary(%s, %s.re, %s.im)", iv[0], iv[2], iv[2]);
        out[1] = ar_printf(X, "rotary(%s, %s.re, %s.im)", iv[1], iv[2], iv[2]);
    } else if (!strcmp(nm, "apply_mask")) {
        NEED(2);
        out[0] = ar_printf(X, "%s + %s", iv[0], iv[1]);
    } else if (!strcmp(nm, "softmax")) {
        NEED(1);
        want_null_kw(E, n, "dtype");
        out[0] = ar_printf(X, "softmax(%s, dim = %" PRId64 ")", iv[0], kwint(E, n, "dim"));
    } else if (!strcmp(nm, "sum")) {
        NEED(1);
        if (kw(E, n, "dim", 0) && !json_is_null(kw(E, n, "dim", 0)))
            die(X, "%s: %s.kwargs.dim: sum over some dimensions is not supported", E->p->file,
                n->path);
        sub_t *o = sub_of(E->p, n->out[0].tid);
        out[0] = o->ndim == 0 ? ar_printf(X, "sum(%s)", iv[0])
                              : ar_printf(X, "reshape(sum(%s), %s)", iv[0],
                                          shape_text(I, E->p, n->out[0].tid, n->path));
    } else if (!strcmp(nm, "gate_fw")) {
        NEED(2);
        if (n->nout != 2)
            die(X, "%s: %s: gate_fw needs 2 outputs", E->p->file, n->path);
        int c = gate_config(E, n);
        int sig = !strncmp(I->gate_cfg.v[c - 1], "sigmoid|", 8);
        const char *en = cname(X, &I->DC.D, I->gate_ecls.v[c - 1]);
        const char *lay = E->tok ? ar_printf(X, "[%s, %s]", E->tok, en) : NULL;
        const char *l = pre_stmt(E, "l", NULL, lay, "linear(%s, %s)", iv[0], iv[1]);
        const char *sc = pre_stmt(E, "s", NULL, lay, sig ? "sigmoid(%s)" : "softmax(%s, dim = -1)", l);
        const char *m = pre_stmt(E, "m", NULL, lay, "moe_mask_%d(%s)", c, sc);
        out[0] = ar_printf(X, "moe_weights_%d(%s, %s)", c, sc, m);
        out[1] = m;
        alias[1] = 1;
    } else if (!strcmp(nm, "nnscaler_moe_gmm")) {
        NEED(6);
        I->use_gmm = 1;
        const char *lay3 = NULL, *layo = NULL;
        gmm_layouts(E, n, &lay3, &layo);
        const char *h1 = pre_stmt(E, "h1", NULL, lay3, "matmul(%s, transpose(%s, 1, 2))", iv[0], iv[3]);
        const char *h3 = pre_stmt(E, "h3", NULL, lay3, "matmul(%s, transpose(%s, 1, 2))", iv[0], iv[4]);
        const char *hh = pre_stmt(E, "hh", NULL, lay3, "silu(%s) * %s", h1, h3);
        const char *o = pre_stmt(E, "o", NULL, layo, "matmul(%s, transpose(%s, 1, 2))", hh, iv[5]);
        out[0] = ar_printf(X, "sum(%s * unsqueeze(transpose(%s, 0, 1), 2), dim = 0)", o,
                           gmm_weights(E, n, iv[2]));
    } else {
        die(X, "%s: %s.signature: op '%s' (%s) is not supported", E->p->file, n->path, nm,
            n->sig ? n->sig : "?");
    }
#undef NEED
}

/* backward: out[b] is the expression of backward output b (the gradient of a forward input) */
static void bw_expr(ectx_t *E, const char **out, int *alias)
{
    imp_t *I = E->I;
    ictx_t *X = I->X;
    node_t *n = E->n[E->j], *f = E->fw;
    const char *nm = f->name;
    const char **x = E->fiv;
    const char *g = E->gin[0];
    for (int b = 0; b < n->nout; b++) {
        out[b] = NULL;
        alias[b] = 0;
        if (n->out[b].kind != SL_TID)
            continue;
        /* which forward input is this the gradient of */
        int i = -1;
        for (int k = 0; k < f->nin; k++)
            if (f->in[k].kind == SL_TID && f->in[k].grad == n->out[b].tid)
                i = k;
        if (i < 0)
            die(X, "%s: %s: output %d is not the gradient of an input of the forward op %s",
                E->p->file, n->path, b, f->path);
        const char *where = n->out[b].path;
        if (!strcmp(nm, "multiref")) {
            abuf_t s;
            ab_init(&s);
            int k = 0;
            for (int o = 0; o < f->nout; o++)
                if (E->gin[o])
                    ab_printf(&s, "%s%s", k++ ? " + " : "", E->gin[o]);
            if (k == 0)
                die(X, "%s: %s: none of the gradients of the copies is produced", E->p->file,
                    n->path);
            out[b] = ar_strdup(X, s.s);
            alias[b] = k == 1;
            ab_clear(&s);
            continue;
        }
        if (g == NULL && strcmp(nm, "apply_rotary_emb") != 0)
            die(X, "%s: %s.inputs: the gradient of the forward output is missing", E->p->file,
                n->path);
        if (is_identity_op(nm)) {
            out[b] = g;
            alias[b] = 1;
        } else if (!strcmp(nm, "linear")) {
            if (i == 0)
                out[b] = ar_printf(X, "matmul(%s, %s)", g, x[1]);
            else if (i == 1) {
                I->use_linear_gw = 1;
                out[b] = ar_printf(X, "linear_gw(%s, %s, %s)", x[0], x[1], g);
            } else
                out[b] = reduce_to(I, E->p, g, f->out[0].tid, f->in[i].tid, where);
        } else if (!strcmp(nm, "matmul")) {
            out[b] = ar_printf(X, "matmul_grad_%s(%s, %s, %s)", i == 0 ? "a" : "b", x[0], x[1], g);
        } else if (!strcmp(nm, "mul")) {
            if (!tensor_in(f, 1))
                out[b] = ar_printf(X, "%s * %s", g, cst(E, f, 1));
            else
                out[b] = reduce_to(I, E->p, ar_printf(X, "%s * %s", g, x[1 - i]), f->out[0].tid,
                                   f->in[i].tid, where);
        } else if (!strcmp(nm, "add")) {
            const char *r = reduce_to(I, E->p, g, f->out[0].tid, f->in[i].tid, where);
            json_t *a = f->kw ? json_object_get(f->kw, "alpha") : NULL;
            if (i == 1 && a && !(json_is_integer(a) && json_integer_value(a) == 1))
                r = ar_printf(X, "%s * %s", const_text(I, E->p, a, f->path, NULL), r);
            out[b] = r;
            alias[b] = r == g;
        } else if (!strcmp(nm, "div")) {
            if (!tensor_in(f, 1))
                out[b] = ar_printf(X, "%s / %s", g, cst(E, f, 1));
            else if (i == 0)
                out[b] = reduce_to(I, E->p, ar_printf(X, "%s / %s", g, x[1]), f->out[0].tid,
                                   f->in[0].tid, where);
            else
                out[b] = reduce_to(I, E->p,
                                   ar_printf(X, "0 - %s * %s / (%s * %s)", g, x[0], x[1], x[1]),
                                   f->out[0].tid, f->in[1].tid, where);
        } else if (!strcmp(nm, "pow")) {
            int isint;
            const char *c = const_text(I, E->p, f->in[1].cval, f->in[1].path, &isint);
            long long cv = json_integer_value(f->in[1].cval);
            if (cv == 1)
                out[b] = g, alias[b] = 1;
            else if (cv == 2)
                out[b] = ar_printf(X, "%s * (2 * %s)", g, x[0]);
            else
                out[b] = ar_printf(X, "%s * (%s * pow(%s, %lld))", g, c, x[0], cv - 1);
        } else if (!strcmp(nm, "mean")) {
            json_t *dv = json_object_get(f->kw, "dim"), *kd = json_object_get(f->kw, "keepdim");
            int keep = kd && json_is_true(kd);
            sub_t *xs = sub_of(E->p, f->in[0].tid);
            abuf_t nn;
            ab_init(&nn);
            const char *gg = g;
            size_t nd = json_is_array(dv) ? json_array_size(dv) : 1;
            for (size_t k = 0; k < nd; k++) {
                int64_t d = json_is_array(dv) ? json_integer_value(json_array_get(dv, k))
                                              : json_integer_value(dv);
                if (d < 0)
                    d += xs->ndim;
                if (d < 0 || d >= xs->ndim)
                    die(X, "%s: %s.kwargs.dim: out of range", E->p->file, f->path);
                ab_printf(&nn, "%s(%s)", k ? "*" : "",
                               dim_expr(I, E->p, f->in[0].tid, (int)d, f->path));
                if (!keep)
                    gg = ar_printf(X, "unsqueeze(%s, %" PRId64 ")", gg, d);
            }
            out[b] = ar_printf(X, "%s * 0 + %s / (%s)", x[0], gg, nn.s);
            ab_clear(&nn);
        } else if (!strcmp(nm, "rsqrt") || !strcmp(nm, "silu")) {
            out[b] = ar_printf(X, "%s_grad(%s, %s)", nm, x[0], g);
        } else if (!strcmp(nm, "softmax")) {
            out[b] = ar_printf(X, "softmax_grad(%s, %s, dim = %" PRId64 ")", E->fov[0], g,
                               (int64_t)json_integer_value(json_object_get(f->kw, "dim")));
        } else if (!strcmp(nm, "view")) {
            out[b] = ar_printf(X, "reshape(%s, %s)", g,
                               shape_text(I, E->p, f->in[0].tid, kpath(X, f->path, "inputs[0]")));
        } else if (!strcmp(nm, "transpose")) {
            out[b] = ar_printf(X, "transpose(%s, %lld, %lld)", g,
                               (long long)json_integer_value(json_object_get(f->kw, "dim0")),
                               (long long)json_integer_value(json_object_get(f->kw, "dim1")));
        } else if (!strcmp(nm, "apply_rotary_emb")) {
            if (i > 1 || E->gin[i] == NULL)
                die(X, "%s: %s: unexpected gradient of apply_rotary_emb", E->p->file, n->path);
            I->use_rotary_grad = 1;
            out[b] = ar_printf(X, "rotary_grad(%s, %s.re, %s.im)", E->gin[i], x[2], x[2]);
        } else if (!strcmp(nm, "apply_mask")) {
            if (i != 0)
                die(X, "%s: %s: the mask gets no gradient", E->p->file, n->path);
            out[b] = g;
            alias[b] = 1;
        } else if (!strcmp(nm, "sum")) {
            out[b] = ar_printf(X, "%s * 0 + %s", x[0], g);
        } else if (!strcmp(nm, "gate_fw")) {
            if (i > 1)
                die(X, "%s: %s: unexpected gradient of gate_fw", E->p->file, n->path);
            ectx_t E2 = *E;
            E2.n = E->fwn;
            int c = gate_config(&E2, f);
            int sig = !strncmp(I->gate_cfg.v[c - 1], "sigmoid|", 8);
            const char *fb = E->fov[0];
            const char *gl = ar_printf(X, "%s.gl", fb);
            if (strstr(E->pre->s, ar_printf(X, "%s = ", gl)) == NULL) {
                const char *en = cname(X, &I->DC.D, I->gate_ecls.v[c - 1]);
                const char *lay = E->tok ? ar_printf(X, "[%s, %s]", E->tok, en) : NULL;
                E2.base = fb;
                const char *gs = pre_stmt(&E2, "gs", "grad.s", lay, "moe_gate_gs_%d(%s.s, %s.m, %s)",
                                          c, fb, fb, g);
                if (sig)
                    pre_stmt(&E2, "gl", "grad.l", lay, "sigmoid_grad(%s.l, %s)", fb, gs);
                else
                    pre_stmt(&E2, "gl", "grad.l", lay,
                             "softmax_grad(softmax(%s.l, dim = -1), %s, dim = -1)", fb, gs);
            }
            if (i == 0)
                out[b] = ar_printf(X, "matmul(%s, %s)", gl, x[1]);
            else {
                I->use_linear_gw = 1;
                out[b] = ar_printf(X, "linear_gw(%s, %s, %s)", x[0], x[1], gl);
            }
        } else if (!strcmp(nm, "nnscaler_moe_gmm")) {
            ectx_t E2 = *E;
            E2.n = E->fwn;
            const char *s0, *s1, *af;
            gmm_local(&E2, f, &s0, &s1, &af);
            const char *w = gmm_weights(&E2, f, x[2]);
            const char *fb = E->fov[0];
            E2.base = fb;
            I->use_gmm = 1;
            if (strstr(E->pre->s, ar_printf(X, "%s.go = ", fb)) == NULL) {
                const char *lay3 = NULL, *layo = NULL;
                gmm_layouts(&E2, f, &lay3, &layo);
                pre_stmt(&E2, "go", "grad.o", layo, "unsqueeze(transpose(%s, 0, 1), 2) * unsqueeze(%s, 0)",
                         w, g);
                pre_stmt(&E2, "ghh", "grad.hh", lay3, "matmul_grad_a(%s.hh, transpose(%s, 1, 2), %s.go)",
                         fb, x[5], fb);
                pre_stmt(&E2, "gh1", "grad.h1", lay3, "silu_grad(%s.h1, %s.ghh * %s.h3)", fb, fb, fb);
                pre_stmt(&E2, "gh3", "grad.h3", lay3, "%s.ghh * silu(%s.h1)", fb, fb);
            }
            if (i == 0)
                out[b] = ar_printf(X, "matmul_grad_a(%s, transpose(%s, 1, 2), %s.gh1) + "
                                      "matmul_grad_a(%s, transpose(%s, 1, 2), %s.gh3)",
                                   x[0], x[3], fb, x[0], x[4], fb);
            else if (i == 2) {
                const char *gw = ar_printf(X, "transpose(sum(%s.o * unsqueeze(%s, 0), dim = 2), 0, 1)",
                                           fb, g);
                out[b] = !strcmp(s0, "0") && !strcmp(af, "0")
                             ? gw
                             : ar_printf(X, "pad(%s, dim = -1, before = %s, after = %s)", gw, s0, af);
            } else if (i == 3)
                out[b] = ar_printf(X, "transpose(matmul_grad_b(%s, transpose(%s, 1, 2), %s.gh1), 1, 2)",
                                   x[0], x[3], fb);
            else if (i == 4)
                out[b] = ar_printf(X, "transpose(matmul_grad_b(%s, transpose(%s, 1, 2), %s.gh3), 1, 2)",
                                   x[0], x[4], fb);
            else if (i == 5)
                out[b] = ar_printf(X, "transpose(matmul_grad_b(%s.hh, transpose(%s, 1, 2), %s.go), 1, 2)",
                                   fb, x[5], fb);
            else
                die(X, "%s: %s: the expert ids get no gradient", E->p->file, n->path);
        } else if (!strcmp(nm, "embedding")) {
            if (i != 1)
                die(X, "%s: %s: the token ids get no gradient", E->p->file, n->path);
            ectx_t E2 = *E;
            E2.iv = x;
            E2.n = E->fwn;
            out[b] = ar_printf(X, "matmul_grad_b(%s, %s, %s)", emb_tokens(&E2, f), x[1], g);
        } else {
            die(X, "%s: %s: the backward of op '%s' is not supported", E->p->file, n->path, nm);
        }
    }
}

/* ---- the model ----------------------------------------------------------------------------------- */

static int lshape_dims(imp_t *I, int lf, char *buf, size_t len, const char *extra)
{
    plan_t *L = &I->L;
    full_t *f = &L->full[lf];
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < f->ndim; d++)
        k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "%s%s", d ? ", " : "",
                              f->shape[d] == 1 ? "1" : cname(I->X, &I->DC.D, dcls(I->X, &I->DC.D, L, lf, d)));
    if (extra)
        k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "%s%s", f->ndim ? ", " : "", extra);
    snprintf(buf + k, k < len ? len - k : 0, "]");
    return 1;
}

static int is_complex(const full_t *f) { return strstr(f->dtype, "complex") != NULL; }

/* the model variable of a logical tensor, declaring parameters and buffers on first use */
static const char *mvar(imp_t *I, slot_t *s, const char *opath)
{
    ictx_t *X = I->X;
    plan_t *L = &I->L;
    sub_t *sb = sub_of(L, s->tid);
    int lf = sb->pidx;
    full_t *f = &L->full[lf];
    if (I->mname[lf])
        return I->mname[lf];
    char shape[1024];
    if (f->is_param || (f->is_attr && !f->is_grad)) {
        const char *nm = unique_name(I, f->name, f->tid);
        I->mname[lf] = nm;
        I->mcanon[lf] = 1;
        if (is_complex(f)) {
            lshape_dims(I, lf, shape, sizeof shape, NULL);
            ab_printf(&I->mdecl, "  input %s.re : %s    # real part of the complex %s '%s'\n",
                           nm, shape, f->dtype, f->name);
            ab_printf(&I->mdecl, "  input %s.im : %s\n", nm, shape);
        } else {
            lshape_dims(I, lf, shape, sizeof shape, NULL);
            ab_printf(&I->mdecl, "  %s %s : %s\n", f->is_param ? "param" : "input", nm, shape);
            if (f->is_param)
                ab_printf(&I->omit, ", next.%s", nm);
        }
        return nm;
    }
    die(X, "%s: %s: tensor '%s' (tid %" PRId64 ") is used before it is produced", L->file,
        s->path ? s->path : opath, f->name, s->tid);
}

static void build_model(imp_t *I)
{
    ictx_t *X = I->X;
    plan_t *L = &I->L;
    device_t *d = &L->dev[0];
    I->mname = ar_alloc(X, sizeof(char *) * (size_t)(L->nfull + 1));
    I->mcanon = ar_alloc(X, sizeof(int) * (size_t)(L->nfull + 1));
    I->tok_full = -1;
    I->vcls = -1;
    /* the dataloader output and the vocabulary (the rows of the embedding table reading it) */
    for (int e = 0; e < d->nsched; e++) {
        node_t *c = &d->cells[imap_get(&d->cell_of, d->sched_cid[e], -1)];
        if (c->kind == K_DATA) {
            if (c->nout != 1 || c->out[0].kind != SL_TID)
                die(X, "%s: %s.outputs: a dataloader with one tensor output is expected", L->file,
                    c->path);
            if (I->tok_full >= 0)
                die(X, "%s: %s: a second dataloader", L->file, c->path);
            I->tok_full = sub_of(L, c->out[0].tid)->pidx;
        }
    }
    if (I->tok_full < 0)
        die(X, "%s: devices[0].schedule: no dataloader", L->file);
    full_t *tf = &L->full[I->tok_full];
    if (tf->ndim != 2)
        die(X, "%s: %s.shape: the token batch must be [batch, seqlen]", L->file, tf->path);
    for (int i = 0; i < d->allnodes.n; i++) {
        node_t *n = d->allnodes.v[i];
        if (n->kind == K_FW && !strcmp(n->name, "embedding") && n->nin >= 2 &&
            n->in[0].kind == SL_TID && sub_of(L, n->in[0].tid)->pidx == I->tok_full &&
            n->in[1].kind == SL_TID) {
            sub_t *w = sub_of(L, n->in[1].tid);
            I->vcls = dcls(X, &I->DC.D, L, w->pidx, 0);
            cname_set(X, &I->DC.D, I->vcls, "V");
            cname_set(X, &I->DC.D, dcls(X, &I->DC.D, L, w->pidx, 1), "H");
        }
    }
    if (I->vcls < 0)
        die(X, "%s: no embedding op reads the dataloader's tokens; such plans are not supported",
            L->file);
    cname_set(X, &I->DC.D, dcls(X, &I->DC.D, L, I->tok_full, 0), "B");
    cname_set(X, &I->DC.D, dcls(X, &I->DC.D, L, I->tok_full, 1), "S");
    I->mname[I->tok_full] = unique_name(I, tf->name, tf->tid);
    I->mcanon[I->tok_full] = 1;
    {
        char shape[1024];
        lshape_dims(I, I->tok_full, shape, sizeof shape, cname(X, &I->DC.D, I->vcls));
        ab_printf(&I->mdecl, "  input %s : %s    # one-hot token ids (dataloader output)\n",
                       I->mname[I->tok_full], shape);
    }
    int loss = -1;
    for (int e = 0; e < d->nsched; e++) {
        node_t *c = &d->cells[imap_get(&d->cell_of, d->sched_cid[e], -1)];
        if (c->kind == K_DATA)
            continue;
        if (c->kind != K_SEGMENT)
            die(X, "%s: %s.kind: a logical plan has only data and segment cells", L->file, c->path);
        if (!c->isfw)
            continue; /* the backward pass: train's autodiff */
        for (int k = 0; k < c->nnodes; k++) {
            node_t *n = &c->nodes[k];
            if (n->kind != K_FW)
                die(X, "%s: %s.kind: a forward segment of the logical plan holds forward ops only",
                    L->file, n->path);
            if (!strcmp(n->name, "create_mask")) {
                if (n->nout != 1 || n->out[0].kind != SL_TID)
                    die(X, "%s: %s.outputs: create_mask has one output", L->file, n->path);
                int of = sub_of(L, n->out[0].tid)->pidx;
                const char *nm = unique_name(I, L->full[of].name, L->full[of].tid);
                I->mname[of] = nm;
                I->mcanon[of] = 1;
                char shape[1024];
                lshape_dims(I, of, shape, sizeof shape, NULL);
                ab_printf(&I->mdecl, "  input %s : %s    # the attention mask (create_mask)\n",
                               nm, shape);
                continue;
            }
            const char **iv = ar_alloc(X, sizeof(char *) * (size_t)(n->nin + 1));
            for (int i = 0; i < n->nin; i++)
                if (n->in[i].kind == SL_TID)
                    iv[i] = mvar(I, &n->in[i], n->path);
            for (int i = 0; i < n->nin; i++)
                if (n->in[i].kind == SL_TID && sub_of(L, n->in[i].tid)->pidx == I->tok_full &&
                    strcmp(n->name, "embedding") != 0)
                    die(X, "%s: %s: op '%s' reads the token ids; only embedding and create_mask may",
                        L->file, n->path, n->name);
            node_t *nn[1] = {n};
            ectx_t E;
            memset(&E, 0, sizeof E);
            E.I = I;
            E.p = L;
            E.model = 1;
            E.n = nn;
            E.ntp = 1;
            E.iv = iv;
            abuf_t pre;
            ab_init(&pre);
            E.pre = &pre;
            const char *base0 = NULL;
            if (n->nout > 0 && n->out[0].kind == SL_TID &&
                (!strcmp(n->name, "gate_fw") || !strcmp(n->name, "nnscaler_moe_gmm"))) {
                int of = sub_of(L, n->out[0].tid)->pidx;
                base0 = unique_name(I, L->full[of].name, L->full[of].tid);
                E.base = base0;
            }
            const char **out = ar_alloc(X, sizeof(char *) * (size_t)(n->nout + 1));
            int *alias = ar_alloc(X, sizeof(int) * (size_t)(n->nout + 1));
            fw_expr(&E, out, alias);
            for (char *ln = pre.s; *ln;) {
                char *nl = strchr(ln, '\n');
                ab_printf(&I->mbody, "  %.*s\n", (int)(nl ? nl - ln : (long)strlen(ln)), ln);
                ln = nl ? nl + 1 : ln + strlen(ln);
            }
            for (int o = 0; o < n->nout; o++) {
                if (n->out[o].kind != SL_TID)
                    continue;
                int of = sub_of(L, n->out[o].tid)->pidx;
                if (I->mname[of])
                    die(X, "%s: %s: tensor '%s' is produced twice", L->file, n->out[o].path,
                        L->full[of].name);
                if (alias[o]) {
                    I->mname[of] = out[o];
                    continue;
                }
                const char *nm = o == 0 && base0 ? base0 : unique_name(I, L->full[of].name, L->full[of].tid);
                I->mname[of] = nm;
                I->mcanon[of] = 1;
                ab_printf(&I->mbody, "  %s = %s\n", nm, out[o]);
                if (L->full[of].is_loss) {
                    if (loss >= 0)
                        die(X, "%s: %s: a second loss tensor", L->file, n->out[o].path);
                    loss = of;
                }
            }
        }
    }
    if (loss < 0)
        die(X, "%s: no forward op produces the loss (a full tensor with is_loss)", L->file);
    if (I->L.full[loss].ndim > 1 || (I->L.full[loss].ndim == 1 && I->L.full[loss].shape[0] != 1))
        die(X, "%s: %s: the loss must have one element", L->file, I->L.full[loss].path);
    ab_printf(&I->mbody, "  loss = sum(%s)\n  output loss\n  train sgd\n", I->mname[loss]);
    /* canonical logical tensors by name */
    for (int f = 0; f < L->nfull; f++) {
        if (!I->mcanon[f])
            continue;
        int o = smap_get(&I->canon_by_name, L->full[f].name, -1);
        smap_set(X, &I->canon_by_name, L->full[f].name, o == -1 ? f : -2);
    }
}

/* the canonical logical tensor a parallel full tensor stands for (-1 if none or ambiguous) */
static int lmap(imp_t *I, int pf)
{
    full_t *f = &I->P.full[pf];
    int lf = full_index(&I->L, f->tid);
    if (lf >= 0 && !strcmp(I->L.full[lf].name, f->name) && I->mcanon[lf])
        return lf;
    int c = smap_get(&I->canon_by_name, f->name, -1);
    return c >= 0 ? c : -1;
}

/* ---- layouts ------------------------------------------------------------------------------------- */

/* the layout, relative to logical tensor lf, of the instances tids[j] on the tp devices of stage
   st; NULL with *why set if it cannot be written; mode 1: a parameter or buffer (no batch
   split, no partial value); extra: a trailing replicated dim */
static const char *layout_of(imp_t *I, stage_t *st, const int64_t *tids, int lf, int mode,
                             int loss, const char *extra, const char **why)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P, *L = &I->L;
    int tp = (int)P->tp;
    sub_t *s0 = sub_of(P, tids[0]);
    full_t *pf = &P->full[s0->pidx], *lfp = &L->full[lf];
    *why = NULL;
    if (lf == I->tok_full && extra == NULL)
        extra = cname(X, &I->DC.D, I->vcls); /* token ids are one-hot: [.., V] */
    for (int j = 1; j < tp; j++)
        if (sub_of(P, tids[j])->pidx != s0->pidx) {
            *why = "the tensor-parallel devices hold parts of different tensors";
            return NULL;
        }
    if (pf->ndim != lfp->ndim) {
        *why = "dimensions differ from the logical tensor's";
        return NULL;
    }
    int bd = -1;
    int64_t dpnm = P->dp * P->nm;
    for (int d = 0; d < pf->ndim; d++)
        if (pf->shape[d] != lfp->shape[d]) {
            if (bd >= 0 || mode == 1 || lfp->shape[d] != pf->shape[d] * dpnm) {
                *why = ar_printf(X, "dimension %d has %" PRId64 " elements, the logical tensor's "
                                    "%" PRId64 " (only the batch may differ, by dp*nm = %" PRId64 ")",
                                 d, pf->shape[d], lfp->shape[d], dpnm);
                return NULL;
            }
            bd = d;
        }
    abuf_t b;
    ab_init(&b);
    ab_putc(&b, '[');
    int tpdim = -1;
    for (int d = 0; d < pf->ndim; d++) {
        const char *ax[4];
        int na = 0;
        int64_t nparts = 1;
        if (d == bd) {
            if (P->dp > 1)
                ax[na++] = "dp", nparts *= P->dp;
            if (P->nm > 1)
                ax[na++] = "mb", nparts *= P->nm;
        }
        int full = 1;
        for (int j = 0; j < tp; j++) {
            sub_t *s = sub_of(P, tids[j]);
            if (s->lo[d] != 0 || s->hi[d] != pf->shape[d])
                full = 0;
        }
        if (!full) {
            int64_t c = s0->hi[d] - s0->lo[d];
            int ok = tp > 1 && c * tp == pf->shape[d];
            for (int j = 0; j < tp && ok; j++) {
                sub_t *s = sub_of(P, tids[j]);
                ok = s->lo[d] == j * c && s->hi[d] == (j + 1) * c;
            }
            if (!ok || tpdim >= 0) {
                *why = "its index map is not an even split over the tensor-parallel devices";
                ab_clear(&b);
                return NULL;
            }
            tpdim = d;
            ax[na++] = "tp";
            nparts *= tp;
        }
        if (lfp->shape[d] == 1) {
            ab_printf(&b, "%s1", d ? ", " : "");
            continue;
        }
        int c = dcls(X, &I->DC.D, L, lf, d);
        ab_printf(&b, "%s%s", d ? ", " : "", cname(X, &I->DC.D, c));
        if (na == 1)
            ab_printf(&b, "@%s", ax[0]);
        else if (na > 1) {
            ab_puts(&b, "@(");
            for (int a = 0; a < na; a++)
                ab_printf(&b, "%s%s", a ? "," : "", ax[a]);
            ab_putc(&b, ')');
        }
        if (nparts > 1) {
            dvs_t v = dvs_lit(1);
            for (int a = 0; a < na; a++)
                dvs_axis(&v, ax[a],
                         !strcmp(ax[a], "dp") ? P->dp : !strcmp(ax[a], "mb") ? P->nm : P->tp);
            I->DC.folded = 0;
            if (local_expr_v(&I->DC, c, &v) == NULL) {
                *why = "a dimension is split unevenly";
                ab_clear(&b);
                return NULL;
            }
            add_cons(&I->DC, c, I->DC.folded ? nparts : cons_part(&v));
        }
    }
    if (extra)
        ab_printf(&b, "%s%s", pf->ndim ? ", " : "", extra);
    ab_putc(&b, ']');
    /* value maps (mode 2: a reducer over the tp group summed the parts) */
    int allfull = 1, split = tp > 1;
    if (mode == 2)
        tp = 0;
    for (int j = 0; j < tp; j++) {
        sub_t *s = sub_of(P, tids[j]);
        if (s->vn != 1)
            allfull = 0;
        if (s->vn != tp || s->vi != j)
            split = 0;
    }
    const char *part[2];
    int np = 0;
    if (!allfull) {
        if (!split || tpdim >= 0 || mode == 1) {
            *why = "its value map is not a partial sum over the tensor-parallel devices";
            ab_clear(&b);
            return NULL;
        }
        part[np++] = "sum@tp";
    }
    if (loss && dpnm > 1)
        part[np++] = P->dp > 1 && P->nm > 1 ? "sum@(dp,mb)" : P->dp > 1 ? "sum@dp" : "sum@mb";
    if (np) {
        ab_puts(&b, " partial(");
        for (int k = 0; k < np; k++)
            ab_printf(&b, "%s%s", k ? ", " : "", part[k]);
        ab_putc(&b, ')');
    }
    char *r = ar_strdup(X, b.s);
    ab_clear(&b);
    (void)st;
    return r;
}

/* ---- plan: stages and names ---------------------------------------------------------------------- */

static int var_index(imp_t *I, const char *v)
{
    int k = smap_get(&I->var_of, v, -1);
    if (k < 0) {
        k = I->vars.n;
        VPUSH(I->X, I->vars, ar_strdup(I->X, v));
        smap_set(I->X, &I->var_of, v, k);
    }
    return k;
}

static int dev_pp(imp_t *I, int64_t d) { return (int)(d / I->P.tp); }
static int dev_tp(imp_t *I, int64_t d) { return (int)(d % I->P.tp); }

/* text in the current stage block */
static void put(imp_t *I, stage_t *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void put(imp_t *I, stage_t *st, const char *fmt, ...)
{
    if (I->cur_stage != st->k) {
        if (I->cur_stage >= 0)
            ab_puts(&I->body, "  }\n");
        ab_printf(&I->body, "  on pp = %d {\n", st->k);
        I->cur_stage = st->k;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = ar_vprintf(I->X, fmt, ap);
    va_end(ap);
    ab_printf(&I->body, "    %s\n", s);
}

/* a statement for devices `mask` (all: -1) of the stage */
static void put_stmt(imp_t *I, stage_t *st, int j, const char *s)
{
    if (j < 0 || I->P.tp == 1)
        put(I, st, "%s", s);
    else
        put(I, st, "on tp = %d { %s }", j, s);
}

/* declare a model input or parameter (name) on the stage with a layout */
static void declare(imp_t *I, stage_t *st, const char *name, const char *layout, int complex_,
                    const char *where)
{
    int k = smap_get(&st->declared, name, -1);
    if (k >= 0) {
        if (strcmp(st->decl_lay.v[k], layout) != 0)
            die(I->X, "%s: %s: '%s' is used with two different layouts on pipeline stage %d (%s "
                      "and %s); such plans are not supported",
                I->P.file, where, name, st->k, st->decl_lay.v[k], layout);
        return;
    }
    smap_set(I->X, &st->declared, name, st->decl_lay.n);
    VPUSH(I->X, st->decl_lay, layout);
    if (complex_) {
        ab_printf(&st->decl, "    %s.re : %s\n", name, layout);
        ab_printf(&st->decl, "    %s.im : %s\n", name, layout);
    } else {
        ab_printf(&st->decl, "    %s : %s\n", name, layout);
    }
}

/* adapter primitive actions of one device */
enum { A_NONE, A_COPY, A_CHUNK, A_GATHER, A_REDUCE, A_SEND, A_RECV, A_BSEND };

typedef struct {
    int op;
    int64_t in, out;
    int dim, n, pos, single;
    int64_t peer;      /* device */
    int64_t ranks[64];
    int nranks;
} act_t;

static void ranks_of(imp_t *I, json_t *kwo, const char *path, act_t *a)
{
    ictx_t *X = I->X;
    json_t *r = jget(X, &I->P, kwo, path, "ranks");
    const char *rp = kpath(X, path, "ranks");
    if (!json_is_array(r) || json_array_size(r) == 0 || json_array_size(r) > 64)
        die(X, "%s: %s: expected a list of 1 to 64 ranks", I->P.file, rp);
    a->nranks = (int)json_array_size(r);
    for (int i = 0; i < a->nranks; i++)
        a->ranks[i] = jint_v(X, &I->P, json_array_get(r, (size_t)i), ipath(X, rp, (size_t)i), 0,
                             I->P.ndev - 1);
}

/* the group of a collective on device d: a tensor-parallel group of d's stage, or d alone */
static void group_check(imp_t *I, stage_t *st, act_t *a, int64_t d, const char *path)
{
    ictx_t *X = I->X;
    int pos = -1;
    for (int i = 0; i < a->nranks; i++) {
        if (a->ranks[i] == d)
            pos = i;
        for (int k = 0; k < i; k++)
            if (a->ranks[k] == a->ranks[i])
                die(X, "%s: %s.kwargs.ranks: device %" PRId64 " is listed twice", I->P.file, path,
                    a->ranks[i]);
    }
    char rs[512];
    size_t k = 0;
    for (int i = 0; i < a->nranks && k < sizeof rs - 16; i++)
        k += (size_t)snprintf(rs + k, sizeof rs - k, "%s%" PRId64, i ? ", " : "", a->ranks[i]);
    if (pos < 0)
        die(X, "%s: %s.kwargs.ranks: the group [%s] does not contain device %" PRId64
               " that runs this primitive",
            I->P.file, path, rs, d);
    a->pos = pos;
    a->n = a->nranks;
    if (a->nranks == 1) {
        a->single = 1;
        return;
    }
    int ok = a->nranks == I->P.tp;
    for (int i = 0; i < a->nranks && ok; i++)
        ok = a->ranks[i] == st->dev0 + i;
    if (!ok)
        die(X, "%s: %s.kwargs.ranks: the group [%s] is not the tensor-parallel group [%d..%" PRId64
               "] of pipeline stage %d; collectives across stages or data-parallel replicas are "
               "not supported (TrainVerify reads only the group's size here: a wrong group of "
               "the right size would pass it)",
            I->P.file, path, rs, st->dev0, st->dev0 + I->P.tp - 1, st->k);
}

static int64_t kwi(imp_t *I, json_t *kwo, const char *path, const char *key)
{
    return kw_int(I->X, &I->P, kwo, path, key);
}

static void prim_act(imp_t *I, stage_t *st, node_t *ad, prim_t *q, int j, act_t *a)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P;
    int64_t d = st->dev0 + j;
    memset(a, 0, sizeof(*a));
    a->in = a->out = -1;
    const char *kp = kpath(X, q->path, "kwargs");
    if (is_fused(q->code)) {
        if (ad->nin != 1 || ad->nout != 1 || ad->in[0].kind != SL_TID || ad->out[0].kind != SL_TID)
            die(X, "%s: %s: a fused primitive needs an adapter with one input and one output",
                P->file, ad->path);
        a->in = ad->in[0].tid;
        a->out = ad->out[0].tid;
        int fw = ad->isfw;
        switch (q->code) {
        case P_ARI: a->op = fw ? A_REDUCE : A_COPY; break;
        case P_IAR: a->op = fw ? A_COPY : A_REDUCE; break;
        case P_AGS: a->op = fw ? A_GATHER : A_CHUNK; break;
        default: a->op = fw ? A_CHUNK : A_GATHER; break;
        }
    } else {
        switch (q->code) {
        case P_CHUNK: a->op = A_CHUNK; break;
        case P_ALLGATHER: a->op = A_GATHER; break;
        case P_ALLREDUCE: a->op = A_REDUCE; break;
        case P_IDENTITY: a->op = A_COPY; break;
        case P_MOVE: {
            int64_t src = kwi(I, q->kw, kp, "src"), dst = kwi(I, q->kw, kp, "dst");
            if (src < 0 || src >= P->ndev || dst < 0 || dst >= P->ndev || src == dst)
                die(X, "%s: %s: src %" PRId64 " and dst %" PRId64 " must be two devices",
                    P->file, kp, src, dst);
            if (d == src) {
                if (q->nin != 1 || q->in[0].kind != SL_TID)
                    die(X, "%s: %s.inputs: the sender of a move has one tensor input", P->file,
                        q->path);
                a->op = A_SEND;
                a->in = q->in[0].tid;
                a->peer = dst;
            } else if (d == dst) {
                if (q->nout != 1 || q->out[0].kind != SL_TID)
                    die(X, "%s: %s.outputs: the receiver of a move has one tensor output",
                        P->file, q->path);
                a->op = A_RECV;
                a->out = q->out[0].tid;
                a->peer = src;
            } else {
                die(X, "%s: %s: device %" PRId64 " is neither src nor dst of the move", P->file,
                    kp, d);
            }
            return;
        }
        case P_BROADCAST: {
            int64_t src = kwi(I, q->kw, kp, "src");
            ranks_of(I, q->kw, kp, a);
            int in = 0;
            for (int i = 0; i < a->nranks; i++)
                in |= a->ranks[i] == d;
            if (!in)
                die(X, "%s: %s.ranks: device %" PRId64 " is not in the broadcast group", P->file,
                    kp, d);
            if (d == src) {
                if (q->nin != 1 || q->in[0].kind != SL_TID)
                    die(X, "%s: %s.inputs: the root of a broadcast has one tensor input", P->file,
                        q->path);
                a->op = A_BSEND;
                a->in = q->in[0].tid;
            } else {
                if (q->nout != 1 || q->out[0].kind != SL_TID)
                    die(X, "%s: %s.outputs: a broadcast receiver has one tensor output", P->file,
                        q->path);
                a->op = A_RECV;
                a->out = q->out[0].tid;
                a->peer = src;
            }
            return;
        }
        default:
            die(X, "%s: %s.class: adapter primitive '%s' (%s) is not supported", P->file, q->path,
                q->cls, q->sig);
        }
        if (q->nin != 1 || q->nout != 1 || q->in[0].kind != SL_TID || q->out[0].kind != SL_TID)
            die(X, "%s: %s: expected one tensor input and one tensor output", P->file, q->path);
        a->in = q->in[0].tid;
        a->out = q->out[0].tid;
    }
    if (a->op == A_COPY) {
        if (a->in == a->out)
            a->op = A_NONE;
        return;
    }
    ranks_of(I, q->kw, kp, a);
    group_check(I, st, a, d, q->path);
    sub_t *si = sub_of(P, a->in), *so = sub_of(P, a->out);
    if (a->op == A_CHUNK || a->op == A_GATHER) {
        a->dim = (int)kwi(I, q->kw, kp, "dim");
        if (a->dim < 0)
            a->dim += si->ndim;
        if (a->dim < 0 || a->dim >= si->ndim || si->ndim != so->ndim)
            die(X, "%s: %s.dim: dimension out of range", P->file, kp);
        for (int k = 0; k < si->ndim; k++) {
            int64_t want = k != a->dim ? si->shape[k]
                           : a->op == A_CHUNK ? si->shape[k] / a->n
                                              : si->shape[k] * a->n;
            if (so->shape[k] != want || (a->op == A_CHUNK && k == a->dim && si->shape[k] % a->n))
                die(X, "%s: %s: the output shape does not match a %s of %d parts along dim %d",
                    P->file, q->path, a->op == A_CHUNK ? "split" : "gather", a->n, a->dim);
        }
        if (a->op == A_CHUNK && !a->single) {
            /* the chunk taken is the one the output's index map names (README: __collective_idx
               = start // (end - start)), not the device's position in the group: a stage may
               hand chunk k to another tp rank than k (pipeline moves between stages do) */
            a->pos = chunk_index(so, si, a->dim, a->n);
            if (a->pos < 0)
                die(X, "%s: %s: the output's index map [%" PRId64 ", %" PRId64 ") along dim %d is "
                       "not one of the %d chunks of the input's [%" PRId64 ", %" PRId64 ")",
                    P->file, q->path, so->lo[a->dim], so->hi[a->dim], a->dim, a->n,
                    si->lo[a->dim], si->hi[a->dim]);
        }
    } else if (a->op == A_REDUCE) {
        if (si->ndim != so->ndim || memcmp(si->shape, so->shape, sizeof(int64_t) * (size_t)si->ndim))
            die(X, "%s: %s: an all-reduce changes the shape", P->file, q->path);
    }
    if (a->single && (a->op == A_GATHER || a->op == A_REDUCE || a->op == A_CHUNK))
        a->op = a->in == a->out ? A_NONE : A_COPY;
}

/*
 * Tensor instances.  nnScaler names tensors by tid, but autograd works on objects: a forward
 * tensor may be produced twice (an adapter chunking a gathered tensor back into a shard that
 * already exists), and gradient contributions belong to the object they differentiate.  So on
 * each device a forward tensor has versions (1, 2, ... in schedule order, a declared input is
 * version 1), and a gradient is keyed by the version of the forward tensor it is the gradient of,
 * found through the mirror links: a backward op's outputs are the gradients of its forward op's
 * inputs at the versions that op read, its inputs the gradients of the forward op's outputs; a
 * backward adapter's outputs and inputs likewise through its mirror forward adapter.  Tensors that
 * a backward adapter produces and consumes internally (a received chunk before the all-gather)
 * are private to it.  Contributions to the same key accumulate (autograd's sum).
 */
static int64_t KEY_F(int64_t tid, int v) { return tid * 64 + (v < 31 ? v : 31); }
static int64_t KEY_G(int64_t tid, int v) { return tid * 64 + 32 + (v < 30 ? v : 30); }
static int64_t KEY_X(int64_t tid) { return tid * 64 + 63; }

static int64_t key_tid(int64_t key) { return key / 64; }

static int fcur(stage_t *st, int j, int64_t tid) { return imap_get(&st->fver[j], tid, 0); }

static int fnew(imp_t *I, stage_t *st, int j, int64_t tid)
{
    int *v = imap_slot(I->X, &st->fver[j], tid, 1);
    *v = *v < 0 ? 1 : *v + 1;
    if (*v > 30)
        die(I->X, "%s: tensor %" PRId64 " is produced more than 30 times on device %d", I->P.file,
            tid, st->dev0 + j);
    return *v;
}

static int *vers(imp_t *I, int **a, int n)
{
    if (*a == NULL)
        *a = ar_alloc(I->X, sizeof(int) * (size_t)(n + 1));
    return *a;
}

static node_t *mirror_of(imp_t *I, stage_t *st, int j, node_t *n)
{
    if (n->mirror < 0)
        return NULL;
    device_t *d = &I->P.dev[st->dev0 + j];
    int k = imap_get(&d->node_of, n->mirror, -1);
    return k < 0 ? NULL : d->allnodes.v[k];
}

/* a declarable input: a parameter, a buffer (not produced by any op) */
static int declarable(full_t *F) { return F->is_param || (F->is_attr && !F->is_grad); }

/* the key of a forward op input (declaring parameters and buffers on first use) */
static int64_t fw_in_key(imp_t *I, stage_t *st, int j, int64_t tid)
{
    int v = fcur(st, j, tid);
    if (v == 0 && declarable(full_of_sub(&I->P, tid)))
        v = fnew(I, st, j, tid);
    return KEY_F(tid, v);
}

/* the version a forward slot had, from the recorded versions (default 1) */
static int slot_version(node_t *f, int isout, int64_t gradtid)
{
    if (f == NULL)
        return 1;
    slot_t *S = isout ? f->out : f->in;
    int n = isout ? f->nout : f->nin;
    int *v = isout ? f->outver : f->inver;
    for (int k = 0; k < n; k++)
        if (S[k].kind == SL_TID && S[k].grad == gradtid)
            return v && v[k] > 0 ? v[k] : 1;
    return 1;
}

/* remember which forward instance a gradient key differentiates: the input slot of forward op
   (or adapter) f whose gradient link is gtid */
static void note_gfwd(imp_t *I, stage_t *st, int j, node_t *f, int64_t gtid, int64_t gkey)
{
    if (f == NULL)
        return;
    for (int k = 0; k < f->nin; k++)
        if (f->in[k].kind == SL_TID && f->in[k].grad == gtid) {
            int v = f->inver && f->inver[k] > 0 ? f->inver[k] : 1;
            int64_t fk = KEY_F(f->in[k].tid, v);
            if (fk > INT32_MAX * (int64_t)1)
                return;
            imap_set(I->X, &st->gfwd[j], gkey, (int)fk);
            return;
        }
}

typedef struct {
    int64_t in[64], out[64]; /* per slot of an op, per primitive of an adapter (-1: none) */
    int nin, nout;
} ikeys_t;

static int is_adapter_slot(slot_t *S, int n, int64_t tid)
{
    for (int k = 0; k < n; k++)
        if (S[k].kind == SL_TID && S[k].tid == tid)
            return 1;
    return 0;
}

/* keys of the item's inputs and outputs on device j; advances the forward versions */
static void item_keys(imp_t *I, stage_t *st, item_t *it, int j, ikeys_t *K)
{
    node_t *n = it->n[j];
    memset(K, 0xff, sizeof(*K));
    K->nin = K->nout = 0;
    if (it->kind == IT_DATA) {
        K->nout = 1;
        K->out[0] = KEY_F(n->out[0].tid, fnew(I, st, j, n->out[0].tid));
        imap_set(I->X, &st->tidseen[j], n->out[0].tid, 1);
        return;
    }
    if (it->kind == IT_OP)
        for (int o = 0; o < n->nout; o++)
            if (n->out[o].kind == SL_TID)
                imap_set(I->X, &st->tidseen[j], n->out[o].tid, 1);
    if (it->kind == IT_OP) {
        if (n->nin > 64 || n->nout > 64)
            die(I->X, "%s: %s: too many inputs or outputs", I->P.file, n->path);
        K->nin = n->nin;
        K->nout = n->nout;
        int pruned = is_identity_op(n->name) && n->nin == 1 && n->nout == 1 &&
                     n->in[0].kind == SL_TID && n->out[0].kind == SL_TID &&
                     n->in[0].tid == n->out[0].tid;
        if (n->kind == K_FW) {
            int *iv = vers(I, &n->inver, n->nin), *ov = vers(I, &n->outver, n->nout);
            for (int i = 0; i < n->nin; i++)
                if (n->in[i].kind == SL_TID) {
                    K->in[i] = fw_in_key(I, st, j, n->in[i].tid);
                    iv[i] = fcur(st, j, n->in[i].tid);
                }
            if (pruned) {
                ov[0] = iv[0];
                return;
            }
            for (int o = 0; o < n->nout; o++)
                if (n->out[o].kind == SL_TID) {
                    ov[o] = fnew(I, st, j, n->out[o].tid);
                    K->out[o] = KEY_F(n->out[o].tid, ov[o]);
                    if (n->out[o].grad >= 0)
                        imap_set(I->X, &st->pgrad[j], K->out[o], (int)n->out[o].grad);
                }
            return;
        }
        /* backward op */
        node_t *f = mirror_of(I, st, j, n);
        for (int b = 0; b < n->nin; b++)
            if (n->in[b].kind == SL_TID)
                K->in[b] = KEY_G(n->in[b].tid, slot_version(f, 1, n->in[b].tid));
        if (pruned)
            return;
        for (int b = 0; b < n->nout; b++)
            if (n->out[b].kind == SL_TID) {
                K->out[b] = KEY_G(n->out[b].tid, slot_version(f, 0, n->out[b].tid));
                note_gfwd(I, st, j, f, n->out[b].tid, K->out[b]);
            }
        return;
    }
    /* adapter */
    K->nin = K->nout = n->nprims;
    if (n->nprims > 64)
        die(I->X, "%s: %s: too many primitives", I->P.file, n->path);
    node_t *fa = n->isfw ? NULL : mirror_of(I, st, j, n);
    if (n->isfw) {
        int *iv = vers(I, &n->inver, n->nin);
        for (int k = 0; k < n->nin; k++)
            if (n->in[k].kind == SL_TID)
                iv[k] = fcur(st, j, n->in[k].tid);
    }
    imap_t inner;
    memset(&inner, 0, sizeof inner);
    for (int p = 0; p < n->nprims; p++) {
        act_t a;
        prim_act(I, st, n, &n->prims[p], j, &a);
        if (a.op == A_NONE)
            continue;
        if (I->tv_chunk && a.op == A_CHUNK && imap_get(&st->tidseen[j], a.out, 0) > 0) {
            /* TrainVerify's patch: a chunk whose output tensor exists is dropped */
            K->in[p] = K->out[p] = -2;
            continue;
        }
        if (a.op != A_SEND && a.op != A_BSEND)
            imap_set(I->X, &st->tidseen[j], a.out, 1);
        if (a.in >= 0) {
            if (n->isfw)
                K->in[p] = KEY_F(a.in, fcur(st, j, a.in));
            else if (imap_get(&inner, a.in, -1) >= 0)
                K->in[p] = KEY_X(a.in);
            else
                K->in[p] = KEY_G(a.in, slot_version(fa, 1, a.in));
        }
        if (a.op == A_SEND || a.op == A_BSEND)
            continue;
        if (n->isfw) {
            /* no pgrad: an adapter's output is a transported copy, whose gradient covers only
               the consumers behind it */
            K->out[p] = KEY_F(a.out, fnew(I, st, j, a.out));
        } else if (is_adapter_slot(n->out, n->nout, a.out)) {
            K->out[p] = KEY_G(a.out, slot_version(fa, 0, a.out));
            note_gfwd(I, st, j, fa, a.out, K->out[p]);
        } else {
            K->out[p] = KEY_X(a.out);
            imap_set(I->X, &inner, a.out, 1);
        }
    }
    if (n->isfw) {
        int *ov = vers(I, &n->outver, n->nout);
        for (int k = 0; k < n->nout; k++)
            if (n->out[k].kind == SL_TID)
                ov[k] = fcur(st, j, n->out[k].tid);
    }
}

/* "bw float (cid 195)", "adapter 573 (AllGatherSplitPrim)" */
static const char *node_what(imp_t *I, node_t *n)
{
    if (n->kind == K_ADAPTER)
        return ar_printf(I->X, "adapter %" PRId64 " (%s%s)", n->cid,
                         n->nprims > 0 ? n->prims[0].cls : "no primitive",
                         n->isfw ? "" : ", backward");
    return ar_printf(I->X, "%s %s (cid %" PRId64 ")", n->kind == K_BW ? "bw" : "fw", n->name,
                     n->cid);
}

/* the forward consumer slot whose gradient link is gtid: "fw float (cid 192)" or NULL */
static const char *consumer_what(imp_t *I, stage_t *st, int j, node_t *n, int64_t gtid,
                                 int64_t *ftid)
{
    node_t *f = mirror_of(I, st, j, n);
    if (f == NULL)
        return NULL;
    for (int k = 0; k < f->nin; k++)
        if (f->in[k].kind == SL_TID && f->in[k].grad == gtid) {
            *ftid = f->in[k].tid;
            return node_what(I, f);
        }
    return NULL;
}

/*
 * A gradient of an activation (not a weight) produced by two nodes of one backward segment on one
 * device.  Across segments this is how nnScaler states accumulation (a tensor sent to the next
 * stage and also used locally gets the received gradient and the local one, which the segment's
 * autograd sums; TrainVerify inserts a local_grad_accumulation).  Inside a segment nnScaler gives
 * every consumer of a tensor its own copy through multiref, so each gradient tensor has one
 * producer; none of TrainVerify's correct plans breaks that.  A plan that does gives one gradient
 * sub-tensor two values, each only one consumer's contribution (autograd would sum them,
 * TrainVerify's chunk rule keeps the first), so it is rejected unless SP_NNSCALER_AUTOGRAD_SUM
 * says to verify the autograd reading.
 */
static void double_production(imp_t *I, stage_t *st, int j, item_t *first, item_t *second,
                              int64_t key)
{
    plan_t *P = &I->P;
    int64_t gtid = key_tid(key), ftid = -1;
    node_t *a = first->n[j], *b = second->n[j];
    sub_t *g = sub_of(P, gtid);
    full_t *G = full_of_sub(P, gtid);
    abuf_t r;
    ab_init(&r);
    for (int d = 0; g && d < g->ndim; d++)
        ab_printf(&r, "%s%" PRId64 ":%" PRId64, d ? ", " : "", g->lo[d], g->hi[d]);
    const char *ca = consumer_what(I, st, j, a, gtid, &ftid);
    const char *cb = consumer_what(I, st, j, b, gtid, &ftid);
    const char *why =
        ca && cb ? ar_printf(I->X, "forward tensor %" PRId64 " has two differentiable consumers "
                                   "in one segment, %s and %s, and no multiref, so ",
                             ftid, ca, cb)
                 : "";
    die(I->X,
        "%s: %s: %s produces gradient %" PRId64 " (%s[%s], value map %" PRId64 "/%" PRId64
        "), which %s, %s, of the same segment already produced on device %d: %sthe plan gives "
        "one gradient tensor two values, each only one consumer's contribution; this is not a "
        "well-formed nnScaler plan (autograd over the segment would sum the two: --autograd-sum "
        "verifies that reading; TrainVerify keeps the first; docs/nnscaler.md)",
        P->file, b->path, node_what(I, b), gtid, G ? G->name : "?", r.s,
        g ? g->vi : 0, g ? g->vn : 1, a->path, node_what(I, a), st->dev0 + j, why);
}

/* both nodes nested in the same segment (their paths share "devices[d].cells[c].nodes[") */
static int same_segment(const node_t *a, const node_t *b)
{
    const char *pa = strstr(a->path, ".nodes["), *pb = strstr(b->path, ".nodes[");
    return pa && pb && pa - a->path == pb - b->path &&
           strncmp(a->path, b->path, (size_t)(pa - a->path)) == 0;
}

static void count_productions(imp_t *I, stage_t *st)
{
    int tp = (int)I->P.tp;
    imap_t first[MAXTP];
    memset(first, 0, sizeof first);
    for (int i = 0; i < st->items.n; i++)
        for (int j = 0; j < tp; j++) {
            ikeys_t K;
            item_keys(I, st, &st->items.v[i], j, &K);
            for (int q = 0; q < K.nout; q++)
                if (K.out[q] >= 0) {
                    int *c = imap_slot(I->X, &st->prodcnt[j], K.out[q], 1);
                    *c = *c < 0 ? 1 : *c + 1;
                    int64_t key = K.out[q], m = key % 64;
                    if (m < 32 || m == 63)
                        continue;
                    full_t *G = full_of_sub(&I->P, key_tid(key));
                    if (G == NULL || G->is_attr)
                        continue;
                    int f = imap_get(&first[j], key, -1);
                    if (f < 0)
                        imap_set(I->X, &first[j], key, i);
                    else if (f != i && !I->autograd_sum &&
                             same_segment(st->items.v[f].n[j], st->items.v[i].n[j]))
                        double_production(I, st, j, &st->items.v[f], &st->items.v[i], key);
                }
        }
    for (int j = 0; j < tp; j++) {
        st->prodtot[j] = st->prodcnt[j];
        memset(&st->prodcnt[j], 0, sizeof(imap_t));
        memset(&st->fver[j], 0, sizeof(imap_t));
        memset(&st->pgrad[j], 0, sizeof(imap_t));
        memset(&st->gfwd[j], 0, sizeof(imap_t));
        memset(&st->tidseen[j], 0, sizeof(imap_t));
    }
}


static void build_stages(imp_t *I)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P;
    int tp = (int)P->tp;
    I->st = ar_alloc(X, sizeof(stage_t) * (size_t)P->pp);
    for (int k = 0; k < P->pp; k++) {
        stage_t *st = &I->st[k];
        st->k = k;
        st->dev0 = k * tp;
        ab_init(&st->decl);
        /* per device: the schedule of one micro-batch */
        int64_t *seq[MAXTP];
        int nseq[MAXTP];
        for (int j = 0; j < tp; j++) {
            device_t *d = &P->dev[st->dev0 + j];
            int64_t maxmb = -1;
            for (int e = 0; e < d->nsched; e++)
                if (d->sched_mb[e] > maxmb)
                    maxmb = d->sched_mb[e];
            if (maxmb + 1 != P->nm)
                die(X, "%s: %s.schedule: the device runs %" PRId64 " micro-batches, world.nm is "
                       "%" PRId64,
                    P->file, d->path, maxmb + 1, P->nm);
            seq[j] = ar_alloc(X, sizeof(int64_t) * (size_t)(d->nsched + 1));
            nseq[j] = 0;
            for (int e = 0; e < d->nsched; e++) {
                node_t *c = &d->cells[imap_get(&d->cell_of, d->sched_cid[e], -1)];
                if (c->kind == K_REDUCER) {
                    if (st->reducer[j] && st->reducer[j] != c)
                        die(X, "%s: %s.schedule[%d]: a second reducer on the device", P->file,
                            d->path, e);
                    st->reducer[j] = c;
                    continue;
                }
                if (d->sched_mb[e] == 0)
                    seq[j][nseq[j]++] = d->sched_cid[e];
            }
            /* every micro-batch runs the same cells in the same order */
            for (int64_t m = 1; m < P->nm; m++) {
                int q = 0;
                for (int e = 0; e < d->nsched; e++) {
                    node_t *c = &d->cells[imap_get(&d->cell_of, d->sched_cid[e], -1)];
                    if (c->kind == K_REDUCER || d->sched_mb[e] != m)
                        continue;
                    if (q >= nseq[j] || seq[j][q] != d->sched_cid[e])
                        die(X, "%s: %s.schedule[%d]: micro-batch %" PRId64 " does not run the cells "
                               "of micro-batch 0 in the same order",
                            P->file, d->path, e, m);
                    q++;
                }
                if (q != nseq[j])
                    die(X, "%s: %s.schedule: micro-batch %" PRId64 " runs %d cells, micro-batch 0 "
                           "runs %d",
                        P->file, d->path, m, q, nseq[j]);
            }
        }
        /* items, aligned across the stage's devices */
        for (int j = 1; j < tp; j++)
            if (nseq[j] != nseq[0])
                die(X, "%s: %s.schedule: the devices of pipeline stage %d run different numbers of "
                       "cells (%d and %d); only SPMD stages are supported",
                    P->file, P->dev[st->dev0 + j].path, k, nseq[0], nseq[j]);
        for (int e = 0; e < nseq[0]; e++) {
            node_t *c[MAXTP];
            for (int j = 0; j < tp; j++) {
                device_t *d = &P->dev[st->dev0 + j];
                c[j] = &d->cells[imap_get(&d->cell_of, seq[j][e], -1)];
                if (c[j]->kind != c[0]->kind)
                    die(X, "%s: %s: the devices of pipeline stage %d run different cells here",
                        P->file, c[j]->path, k);
            }
            if (c[0]->kind == K_SEGMENT) {
                for (int j = 1; j < tp; j++)
                    if (c[j]->nnodes != c[0]->nnodes)
                        die(X, "%s: %s.nodes: the devices of pipeline stage %d run segments of "
                               "different lengths",
                            P->file, c[j]->path, k);
                for (int q = 0; q < c[0]->nnodes; q++) {
                    item_t it;
                    memset(&it, 0, sizeof it);
                    for (int j = 0; j < tp; j++) {
                        node_t *n = &c[j]->nodes[q];
                        it.n[j] = n;
                        if (n->kind != c[0]->nodes[q].kind || strcmp(n->name, c[0]->nodes[q].name) ||
                            n->nprims != c[0]->nodes[q].nprims)
                            die(X, "%s: %s: the devices of pipeline stage %d run different ops "
                                   "here",
                                P->file, n->path, k);
                    }
                    it.kind = it.n[0]->kind == K_ADAPTER ? IT_ADAPTER : IT_OP;
                    VPUSH(X, st->items, it);
                }
            } else {
                item_t it;
                memset(&it, 0, sizeof it);
                for (int j = 0; j < tp; j++)
                    it.n[j] = c[j];
                if (c[0]->kind == K_DATA)
                    it.kind = IT_DATA;
                else if (c[0]->kind == K_ADAPTER) {
                    it.kind = IT_ADAPTER;
                    for (int j = 1; j < tp; j++)
                        if (c[j]->nprims != c[0]->nprims)
                            die(X, "%s: %s.prims: the devices of pipeline stage %d run adapters "
                                   "of different lengths",
                                P->file, c[j]->path, k);
                } else
                    die(X, "%s: %s.kind: unexpected cell in a schedule", P->file, c[0]->path);
                VPUSH(X, st->items, it);
            }
        }
        for (int j = 1; j < tp; j++)
            if ((st->reducer[j] == NULL) != (st->reducer[0] == NULL))
                die(X, "%s: %s: only some devices of pipeline stage %d have a weight reducer",
                    P->file, P->dev[st->dev0 + j].path, k);
        count_productions(I, st);
    }
}

/* ---- plan: emitting items ------------------------------------------------------------------------ */

static int prev_count(stage_t *st, int j, int64_t key) { return imap_get(&st->prodcnt[j], key, 0); }
static int total_count(stage_t *st, int j, int64_t key) { return imap_get(&st->prodtot[j], key, 0); }

static void bump(imp_t *I, stage_t *st, int j, int64_t key)
{
    int *c = imap_slot(I->X, &st->prodcnt[j], key, 1);
    *c = *c < 0 ? 1 : *c + 1;
}

static const char *nget(imp_t *I, stage_t *st, int j, int64_t key)
{
    int v = imap_get(&st->names[j], key, -1);
    return v < 0 ? NULL : I->vars.v[v];
}

static void nset(imp_t *I, stage_t *st, int j, int64_t key, const char *v)
{
    imap_set(I->X, &st->names[j], key, var_index(I, v));
}

/* the variable of a tensor instance: NAME.tTID, .vN for later versions, .x inside an adapter */
static const char *var_for(imp_t *I, int64_t key)
{
    int64_t tid = key_tid(key);
    int r = (int)(key % 64);
    const char *b = ar_printf(I->X, "%s.t%" PRId64, sanitize(I, full_of_sub(&I->P, tid)->name), tid);
    if (r == 63)
        return ar_printf(I->X, "%s.x", b);
    int v = r < 32 ? r : r - 32;
    return v >= 2 ? ar_printf(I->X, "%s.v%d", b, v) : b;
}

/* the lineage annotation of the instances keys[j] being produced now, or "" */
static const char *lineage(imp_t *I, stage_t *st, const int64_t *keys, int op_output)
{
    plan_t *P = &I->P;
    int tp = (int)P->tp;
    /* no cut on a forward output that an explicit backward reads (softmax_grad(y, dy)): train's
       VJP rebuilds y from the op's input, so the model's gradient would not be in terms of the
       cut's fresh value (softmax_grad(y, dy) after a cut at y fails) */
    if (op_output == 2)
        return "";
    int r = (int)(keys[0] % 64);
    if (r == 63)
        return "";
    int64_t tids[MAXTP];
    for (int j = 0; j < tp; j++)
        tids[j] = key_tid(keys[j]);
    sub_t *s = sub_of(P, tids[0]);
    full_t *F = &P->full[s->pidx];
    const char *target;
    int lf, loss = 0;
    if (r >= 32) {
        /* a gradient: complete once its last contribution arrived */
        for (int j = 0; j < tp; j++)
            if (prev_count(st, j, keys[j]) + 1 != total_count(st, j, keys[j]))
                return "";
        if (!F->is_grad || F->fwd < 0 || P->full[F->fwd].copy || P->full[F->fwd].is_attr)
            return "";
        /* the complete gradient of a forward tensor is the one its producing op's backward
           reads: the gradient linked to the op's output slot, once all contributions arrived
           (nnScaler gives each consumer occurrence behind a multiref, an identity adapter or a
           transport its own gradient tensor, a partial one) */
        for (int j = 0; j < tp; j++) {
            int fk = imap_get(&st->gfwd[j], keys[j], -1);
            if (fk < 0 || imap_get(&st->pgrad[j], fk, -1) != key_tid(keys[j]))
                return "";
        }
        lf = lmap(I, F->fwd);
        if (lf < 0)
            return "";
        target = ar_printf(I->X, "grad.%s", I->mname[lf]);
    } else {
        if (F->is_grad || F->copy || F->is_attr)
            return "";
        lf = lmap(I, s->pidx);
        if (lf < 0)
            return "";
        target = I->mname[lf];
        loss = F->is_loss;
    }
    /* a cut point is related on one pipeline stage only: the checker compares ranks that did
       not cross a cut with the model's value before it, even when they received the cut value
       from another stage (a value cut on pp = 0 and sent to pp = 1, related there again, fails) */
    int other = smap_get(&I->cut_stage, target, -1);
    if (other >= 0 && other != st->k)
        return "";
    /* and on the stage whose op computes it: a transported copy of a forward tensor (an
       adapter's output) is related only after the op's output was, on the same stage (a
       gradient is related on the stage of its forward tensor's producer, see above) */
    if (!op_output && other < 0 && r < 32)
        return "";
    const char *why;
    const char *lay = layout_of(I, st, tids, lf, 0, loss, NULL, &why);
    if (lay == NULL)
        return "";
    smap_set(I->X, &I->cut_stage, target, st->k);
    return ar_printf(I->X, " ~ %s : %s", target, lay);
}

/* declare the model input behind parallel instances tids[j] (a parameter, buffer, or the mask) */
static const char *declare_input(imp_t *I, stage_t *st, const int64_t *tids, const char *where)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P;
    sub_t *s = sub_of(P, tids[0]);
    full_t *F = &P->full[s->pidx];
    int lf = lmap(I, s->pidx);
    if (lf < 0 || !I->mname[lf])
        die(X, "%s: %s: '%s' (tid %" PRId64 ") has no counterpart among the logical plan's "
               "parameters and inputs",
            P->file, where, F->name, tids[0]);
    const char *why;
    const char *lay = layout_of(I, st, tids, lf, 1, 0, NULL, &why);
    if (lay == NULL)
        die(X, "%s: %s: the layout of '%s' on pipeline stage %d cannot be written: %s", P->file,
            where, F->name, st->k, why);
    declare(I, st, I->mname[lf], lay, is_complex(F), where);
    return I->mname[lf];
}

static int all_same(const char **v, int n)
{
    for (int j = 1; j < n; j++)
        if ((v[j] == NULL) != (v[0] == NULL) || (v[j] && strcmp(v[j], v[0]) != 0))
            return 0;
    return 1;
}

/* the variables of input keys[j] (declaring parameters and buffers); 0 if not produced */
static int resolve(imp_t *I, stage_t *st, const int64_t *keys, const char **v, const char *where)
{
    plan_t *P = &I->P;
    int tp = (int)P->tp, have = 0;
    for (int j = 0; j < tp; j++) {
        v[j] = nget(I, st, j, keys[j]);
        have += v[j] != NULL;
    }
    if (have == tp)
        return 1;
    if (have != 0)
        die(I->X, "%s: %s: the input is available on some devices of pipeline stage %d only",
            P->file, where, st->k);
    int64_t tids[MAXTP];
    for (int j = 0; j < tp; j++)
        tids[j] = key_tid(keys[j]);
    full_t *F = full_of_sub(P, tids[0]);
    if ((int)(keys[0] % 64) == 1 && declarable(F)) {
        const char *nm = declare_input(I, st, tids, where);
        for (int j = 0; j < tp; j++) {
            nset(I, st, j, keys[j], nm);
            v[j] = nm;
        }
        return 1;
    }
    return 0;
}

static void unproduced(imp_t *I, stage_t *st, int64_t key, const char *where)
{
    full_t *F = full_of_sub(&I->P, key_tid(key));
    die(I->X, "%s: %s: %s '%s' (tid %" PRId64 ") is used on device %d before it is produced "
              "there",
        I->P.file, where, F->is_grad ? "gradient" : "tensor", F->name, key_tid(key), st->dev0);
}

/* emit one output's statement(s); expr[j] per device */
static void emit_output(imp_t *I, stage_t *st, const int64_t *keys, const char **expr,
                        const int *alias, int op_output, const char *where)
{
    plan_t *P = &I->P;
    int tp = (int)P->tp;
    int prev[MAXTP];
    int grad = (int)(keys[0] % 64) >= 32;
    for (int j = 0; j < tp; j++) {
        prev[j] = prev_count(st, j, keys[j]);
        if ((prev[j] == 0) != (prev[0] == 0))
            die(I->X, "%s: %s: the output exists on some devices of pipeline stage %d only",
                P->file, where, st->k);
        if (prev[j] && !grad)
            die(I->X, "%s: %s: internal: a forward version produced twice", P->file, where);
    }
    /* pure renaming, unless the value is a cut point worth relating (a complete gradient) */
    int rename = 1;
    for (int j = 0; j < tp; j++)
        rename &= alias[j] && prev[j] == 0 && total_count(st, j, keys[j]) <= 1;
    if (rename && grad && op_output) {
        int other = -1;
        int64_t tids[MAXTP];
        for (int j = 0; j < tp; j++)
            tids[j] = key_tid(keys[j]);
        (void)tids;
        full_t *F = full_of_sub(P, key_tid(keys[0]));
        if (F->fwd >= 0) {
            int lf = lmap(I, F->fwd);
            if (lf >= 0)
                other = smap_get(&I->cut_stage, ar_printf(I->X, "grad.%s", I->mname[lf]), -1);
        }
        if (other < 0 && lineage(I, st, keys, op_output)[0])
            rename = 0;
    }
    if (rename) {
        for (int j = 0; j < tp; j++) {
            nset(I, st, j, keys[j], expr[j]);
            bump(I, st, j, keys[j]);
        }
        return;
    }
    const char *var[MAXTP];
    for (int j = 0; j < tp; j++) {
        if (prev[j] == 0) {
            var[j] = var_for(I, keys[0]);
            nset(I, st, j, keys[j], var[j]);
        } else {
            var[j] = nget(I, st, j, keys[j]);
        }
    }
    /* every split of a dimension constrains its reduced size (a chunk of 8 needs a multiple of
       8), whether or not a layout mentions it */
    for (int j = 0; j < tp; j++) {
        sub_t *sb = sub_of(P, key_tid(keys[j]));
        for (int d = 0; d < sb->ndim; d++)
            if (!(P->full[sb->pidx].dense && d == 1))
                dim_expr(I, P, key_tid(keys[j]), d, where);
    }
    const char *lin = lineage(I, st, keys, op_output);
    const char *text[MAXTP];
    for (int j = 0; j < tp; j++)
        text[j] = ar_printf(I->X, "%s %s %s%s", var[j], prev[j] ? "+=" : "=", expr[j], lin);
    if (all_same(text, tp))
        put_stmt(I, st, -1, text[0]);
    else
        for (int j = 0; j < tp; j++)
            put_stmt(I, st, j, text[j]);
    for (int j = 0; j < tp; j++)
        bump(I, st, j, keys[j]);
}

/* the layout text of the token (first) dimension of input slot `slot` (NULL if unknown) */
static const char *tok_text(imp_t *I, stage_t *st, node_t **n, int slot)
{
    int tp = (int)I->P.tp;
    int64_t tids[MAXTP];
    for (int j = 0; j < tp; j++) {
        if (slot >= n[j]->nin || n[j]->in[slot].kind != SL_TID)
            return NULL;
        tids[j] = n[j]->in[slot].tid;
    }
    int lf = lmap(I, sub_of(&I->P, tids[0])->pidx);
    if (lf < 0)
        return NULL;
    const char *why;
    const char *lay = layout_of(I, st, tids, lf, 0, 0, NULL, &why);
    if (lay == NULL || strstr(lay, "partial"))
        return NULL;
    int depth = 0;
    const char *q = lay + 1;
    for (; *q; q++) {
        if (*q == '(')
            depth++;
        else if (*q == ')')
            depth--;
        else if ((*q == ',' || *q == ']') && depth == 0)
            break;
    }
    return ar_printf(I->X, "%.*s", (int)(q - lay - 1), lay + 1);
}

/* the composite ops whose intermediates are cut points */
static int composite(const char *name)
{
    return !strcmp(name, "gate_fw") || !strcmp(name, "nnscaler_moe_gmm");
}

static void emit_pre(imp_t *I, stage_t *st, abuf_t *pre, int tp)
{
    const char *txt[MAXTP];
    for (int j = 0; j < tp; j++)
        txt[j] = pre[j].s;
    int same = all_same(txt, tp);
    for (int j = 0; j < (same ? 1 : tp); j++)
        for (char *ln = pre[j].s; *ln;) {
            char *nl = strchr(ln, '\n');
            const char *line = ar_printf(I->X, "%.*s", (int)(nl ? nl - ln : (long)strlen(ln)), ln);
            put_stmt(I, st, same ? -1 : j, line);
            ln = nl ? nl + 1 : ln + strlen(ln);
        }
}

static void emit_op(imp_t *I, stage_t *st, item_t *it)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P;
    int tp = (int)P->tp;
    node_t *n0 = it->n[0];
    ikeys_t K[MAXTP];
    for (int j = 0; j < tp; j++) {
        if (it->n[j]->nout != n0->nout || it->n[j]->nin != n0->nin)
            die(X, "%s: %s: the devices of pipeline stage %d run ops of different arities here",
                P->file, it->n[j]->path, st->k);
        for (int i = 0; i < n0->nin; i++)
            if ((it->n[j]->in[i].kind == SL_TID) != (n0->in[i].kind == SL_TID))
                die(X, "%s: %s: the devices disagree on the kind of this input", P->file,
                    it->n[j]->in[i].path);
        for (int i = 0; i < n0->nout; i++)
            if ((it->n[j]->out[i].kind == SL_TID) != (n0->out[i].kind == SL_TID))
                die(X, "%s: %s: the devices disagree on the kind of this output", P->file,
                    it->n[j]->out[i].path);
    }
    if (it->kind == IT_DATA) {
        int64_t tids[MAXTP], keys[MAXTP];
        for (int j = 0; j < tp; j++) {
            if (it->n[j]->nout != 1 || it->n[j]->out[0].kind != SL_TID)
                die(X, "%s: %s.outputs: a dataloader has one tensor output", P->file,
                    it->n[j]->path);
            item_keys(I, st, it, j, &K[j]);
            tids[j] = it->n[j]->out[0].tid;
            keys[j] = K[j].out[0];
        }
        sub_t *s = sub_of(P, tids[0]);
        full_t *lt = &I->L.full[I->tok_full];
        int64_t rows = s->shape[0], want = lt->shape[0] / (P->dp * P->nm);
        if (s->ndim != 2 || rows * P->dp * P->nm != lt->shape[0] || s->shape[1] != lt->shape[1]) {
            const char *each =
                lt->shape[0] % (P->dp * P->nm)
                    ? ar_printf(X, "does not split evenly into dp x nm = %" PRId64 " x %" PRId64
                                   " micro-batches",
                                P->dp, P->nm)
                    : ar_printf(X, "split over dp x nm = %" PRId64 " x %" PRId64
                                   " micro-batches gives %" PRId64 " row%s each",
                                P->dp, P->nm, want, want == 1 ? "" : "s");
            die(X, "%s: %s.outputs[0]: the micro-batches' token batches are [%" PRId64 ", %" PRId64
                   "], but the logical plan's batch [%" PRId64 ", %" PRId64 "] %s: the plan "
                   "processes %" PRId64 " x %" PRId64 " x %" PRId64 " = %" PRId64 " rows where the "
                   "logical plan processes %" PRId64 ", so the two files do not describe the same "
                   "training step (world's dp, nm and gbs, parsed from the file name, contradict "
                   "the exported plan)",
                P->file, n0->path, rows, s->ndim > 1 ? s->shape[1] : 0, lt->shape[0],
                lt->shape[1], each, P->dp, P->nm, rows, P->dp * P->nm * rows, lt->shape[0]);
        }
        const char *why;
        const char *lay = layout_of(I, st, tids, I->tok_full, 0, 0,
                                    cname(X, &I->DC.D, I->vcls), &why);
        if (lay == NULL)
            die(X, "%s: %s.outputs[0]: the token batch's layout cannot be written: %s", P->file,
                n0->path, why);
        declare(I, st, I->mname[I->tok_full], lay, 0, n0->path);
        for (int j = 0; j < tp; j++) {
            nset(I, st, j, keys[j], I->mname[I->tok_full]);
            bump(I, st, j, keys[j]);
        }
        return;
    }
    int isbw = n0->kind == K_BW;
    node_t *fwn[MAXTP];
    if (isbw)
        for (int j = 0; j < tp; j++) {
            fwn[j] = mirror_of(I, st, j, it->n[j]);
            if (fwn[j] == NULL || fwn[j]->kind != K_FW)
                die(X, "%s: %s.mirror: no forward op %" PRId64 " on this device", P->file,
                    it->n[j]->path, it->n[j]->mirror);
            if (strcmp(fwn[j]->name, it->n[j]->name) != 0)
                die(X, "%s: %s.mirror: the forward op is '%s', not '%s'", P->file, it->n[j]->path,
                    fwn[j]->name, it->n[j]->name);
        }
    for (int j = 0; j < tp; j++)
        item_keys(I, st, it, j, &K[j]);
    int nout = n0->nout, any = 0;
    for (int o = 0; o < nout; o++)
        any |= K[0].out[o] >= 0;
    if (!any)
        return; /* an identity whose input is its output */
    if (!isbw && !strcmp(n0->name, "create_mask")) {
        int64_t tids[MAXTP], keys[MAXTP];
        for (int j = 0; j < tp; j++) {
            if (it->n[j]->nout != 1 || it->n[j]->out[0].kind != SL_TID)
                die(X, "%s: %s.outputs: create_mask has one output", P->file, it->n[j]->path);
            tids[j] = it->n[j]->out[0].tid;
            keys[j] = K[j].out[0];
        }
        const char *nm = declare_input(I, st, tids, it->n[0]->out[0].path);
        for (int j = 0; j < tp; j++) {
            nset(I, st, j, keys[j], nm);
            bump(I, st, j, keys[j]);
        }
        return;
    }
    const char ***expr = ar_alloc(X, sizeof(char **) * (size_t)(nout + 1));
    int **alias = ar_alloc(X, sizeof(int *) * (size_t)(nout + 1));
    for (int o = 0; o < nout; o++) {
        expr[o] = ar_alloc(X, sizeof(char *) * (size_t)tp);
        alias[o] = ar_alloc(X, sizeof(int) * (size_t)tp);
    }
    const char **out = ar_alloc(X, sizeof(char *) * (size_t)(nout + 1));
    int *al = ar_alloc(X, sizeof(int) * (size_t)(nout + 1));
    if (!isbw) {
        const char ***iv = ar_alloc(X, sizeof(char **) * (size_t)(n0->nin + 1));
        for (int i = 0; i < n0->nin; i++) {
            iv[i] = ar_alloc(X, sizeof(char *) * (size_t)tp);
            if (n0->in[i].kind != SL_TID)
                continue;
            int64_t keys[MAXTP];
            for (int j = 0; j < tp; j++)
                keys[j] = K[j].in[i];
            if (!resolve(I, st, keys, iv[i], n0->in[i].path))
                unproduced(I, st, keys[0], n0->in[i].path);
        }
        abuf_t pre[MAXTP];
        const char *tok = NULL, *mbase = NULL;
        if (composite(n0->name)) {
            tok = tok_text(I, st, it->n, 0);
            int lf = lmap(I, sub_of(P, n0->out[0].tid)->pidx);
            mbase = lf >= 0 ? I->mname[lf] : NULL;
        }
        for (int j = 0; j < tp; j++) {
            const char **ivj = ar_alloc(X, sizeof(char *) * (size_t)(n0->nin + 1));
            for (int i = 0; i < n0->nin; i++)
                ivj[i] = iv[i][j];
            ectx_t E;
            memset(&E, 0, sizeof E);
            E.I = I;
            E.p = P;
            E.n = it->n;
            E.ntp = tp;
            E.j = j;
            E.iv = ivj;
            ab_init(&pre[j]);
            E.pre = &pre[j];
            E.base = K[0].out[0] >= 0 ? var_for(I, K[0].out[0]) : NULL;
            E.mbase = mbase;
            E.tok = tok;
            E.stage = st->k;
            fw_expr(&E, out, al);
            for (int o = 0; o < nout; o++)
                expr[o][j] = out[o], alias[o][j] = al[o];
        }
        emit_pre(I, st, pre, tp);
    } else {
        /* the loss gradient nobody produces is d loss / d loss = 1 */
        for (int b = 0; b < n0->nin; b++) {
            if (n0->in[b].kind != SL_TID)
                continue;
            int need = 0;
            int64_t keys[MAXTP];
            const char *e[MAXTP];
            int noalias[MAXTP];
            for (int j = 0; j < tp; j++) {
                node_t *n = it->n[j], *f = fwn[j];
                full_t *G = full_of_sub(P, n->in[b].tid);
                keys[j] = K[j].in[b];
                e[j] = NULL;
                noalias[j] = 0;
                if (nget(I, st, j, keys[j]) || !G->is_grad || !G->is_loss)
                    continue;
                for (int k = 0; k < f->nout; k++)
                    if (f->out[k].kind == SL_TID && f->out[k].grad == n->in[b].tid)
                        e[j] = nget(I, st, j, KEY_F(f->out[k].tid, f->outver[k]));
                if (e[j] == NULL)
                    die(X, "%s: %s: the loss is not available for its gradient", P->file,
                        n->in[b].path);
                e[j] = ar_printf(X, "%s * 0 + 1", e[j]);
                need++;
            }
            if (need == 0)
                continue;
            if (need != tp)
                die(X, "%s: %s: the loss gradient is seeded on some devices only", P->file,
                    n0->in[b].path);
            emit_output(I, st, keys, e, noalias, 0, n0->in[b].path);
        }
        abuf_t bpre[MAXTP];
        const char *btok = NULL, *bmbase = NULL;
        if (composite(fwn[0]->name)) {
            btok = tok_text(I, st, fwn, 0);
            int lf = lmap(I, sub_of(P, fwn[0]->out[0].tid)->pidx);
            bmbase = lf >= 0 ? I->mname[lf] : NULL;
        }
        for (int j = 0; j < tp; j++) {
            node_t *n = it->n[j], *f = fwn[j];
            const char **fiv = ar_alloc(X, sizeof(char *) * (size_t)(f->nin + 1));
            const char **fov = ar_alloc(X, sizeof(char *) * (size_t)(f->nout + 1));
            const char **gin = ar_alloc(X, sizeof(char *) * (size_t)(f->nout + 1));
            int plain = !strcmp(f->name, "multiref") || is_identity_op(f->name);
            if (f->inver == NULL || f->outver == NULL)
                die(X, "%s: %s: the backward op runs before its forward op %s", P->file, n->path,
                    f->path);
            for (int i = 0; i < f->nin; i++)
                if (f->in[i].kind == SL_TID && !plain) {
                    fiv[i] = nget(I, st, j, KEY_F(f->in[i].tid, f->inver[i]));
                    if (fiv[i] == NULL)
                        die(X, "%s: %s: the forward input %s is not available for the backward op",
                            P->file, n->path, f->in[i].path);
                }
            for (int o = 0; o < f->nout; o++)
                if (f->out[o].kind == SL_TID)
                    fov[o] = nget(I, st, j, KEY_F(f->out[o].tid, f->outver[o]));
            for (int b = 0; b < n->nin; b++) {
                if (n->in[b].kind != SL_TID)
                    continue;
                int o = -1;
                for (int k = 0; k < f->nout; k++)
                    if (f->out[k].kind == SL_TID && f->out[k].grad == n->in[b].tid)
                        o = k;
                if (o < 0)
                    die(X, "%s: %s: not the gradient of an output of the forward op %s", P->file,
                        n->in[b].path, f->path);
                const char *g = nget(I, st, j, K[j].in[b]);
                if (g == NULL && strcmp(f->name, "multiref") != 0)
                    unproduced(I, st, K[j].in[b], n->in[b].path);
                gin[o] = g;
            }
            ectx_t E;
            memset(&E, 0, sizeof E);
            E.I = I;
            E.p = P;
            E.n = it->n;
            E.ntp = tp;
            E.j = j;
            E.fw = f;
            E.fwn = fwn;
            E.fiv = fiv;
            E.fov = fov;
            E.gin = gin;
            ab_init(&bpre[j]);
            E.pre = &bpre[j];
            E.mbase = bmbase;
            E.tok = btok;
            E.stage = st->k;
            bw_expr(&E, out, al);
            for (int o = 0; o < nout; o++)
                expr[o][j] = out[o], alias[o][j] = al[o];
        }
        emit_pre(I, st, bpre, tp);
    }
    for (int o = 0; o < nout; o++) {
        if (n0->out[o].kind != SL_TID || expr[o][0] == NULL || K[0].out[o] < 0)
            continue;
        int64_t keys[MAXTP];
        for (int j = 0; j < tp; j++) {
            keys[j] = K[j].out[o];
            if (expr[o][j] == NULL || keys[j] < 0)
                die(X, "%s: %s: the output is produced on some devices only", P->file,
                    it->n[j]->out[o].path);
        }
        emit_output(I, st, keys, expr[o], alias[o], !isbw && !strcmp(n0->name, "softmax") ? 2 : 1,
                    n0->out[o].path);
    }
}

/* message queues between devices */
static msgq_t *queue(imp_t *I, int64_t src, int64_t dst)
{
    int *k = imap_slot(I->X, &I->queue_of, src * LIM_DEV + dst, 1);
    if (*k < 0) {
        *k = I->queues.n;
        msgq_t q;
        memset(&q, 0, sizeof q);
        VPUSH(I->X, I->queues, q);
    }
    return &I->queues.v[*k];
}

static int pending(msgq_t *q)
{
    int k = 0;
    for (int i = 0; i < q->n; i++)
        k += !q->v[i].consumed;
    return k;
}

static int item_blocked(imp_t *I, stage_t *st, item_t *it)
{
    if (it->kind != IT_ADAPTER)
        return 0;
    int tp = (int)I->P.tp;
    imap_t extra;
    memset(&extra, 0, sizeof extra);
    for (int p = 0; p < it->n[0]->nprims; p++)
        for (int j = 0; j < tp; j++) {
            act_t a;
            prim_act(I, st, it->n[j], &it->n[j]->prims[p], j, &a);
            int64_t d = st->dev0 + j;
            if (a.op == A_SEND) {
                int *c = imap_slot(I->X, &extra, d * LIM_DEV + a.peer, 1);
                *c = *c < 0 ? 1 : *c + 1;
            } else if (a.op == A_BSEND) {
                for (int r = 0; r < a.nranks; r++)
                    if (a.ranks[r] != d) {
                        int *c = imap_slot(I->X, &extra, d * LIM_DEV + a.ranks[r], 1);
                        *c = *c < 0 ? 1 : *c + 1;
                    }
            } else if (a.op == A_RECV) {
                int *c = imap_slot(I->X, &extra, a.peer * LIM_DEV + d, 1);
                int have = pending(queue(I, a.peer, d)) + (*c < 0 ? 0 : *c);
                if (have <= 0)
                    return 1;
                *c = (*c < 0 ? 0 : *c) - 1;
            }
        }
    return 0;
}

static void send_msg(imp_t *I, int64_t src, int64_t dst, int64_t cid)
{
    msgq_t *q = queue(I, src, dst);
    msg_t m = {cid, 0};
    VPUSH(I->X, *q, m);
}

static void recv_msg(imp_t *I, int64_t src, int64_t dst, int64_t cid, const char *path)
{
    msgq_t *q = queue(I, src, dst);
    for (int i = 0; i < q->n; i++)
        if (!q->v[i].consumed) {
            if (q->v[i].cid != cid)
                die(I->X, "%s: %s: device %" PRId64 " receives from device %" PRId64 " for adapter "
                          "%" PRId64 " while the oldest message from it was sent by adapter %" PRId64
                          "; the two devices' schedules disagree on the order of their messages",
                    I->P.file, path, dst, src, cid, q->v[i].cid);
            q->v[i].consumed = 1;
            return;
        }
    die(I->X, "%s: %s: device %" PRId64 " receives from device %" PRId64 " but nothing was sent",
        I->P.file, path, dst, src);
}

static const char *peer_text(imp_t *I, int64_t peer, int bytp)
{
    int pp = dev_pp(I, peer), t = dev_tp(I, peer);
    if (I->P.tp == 1)
        return ar_printf(I->X, "pp = %d", pp);
    if (bytp)
        return ar_printf(I->X, "pp = %d, tp = rank.tp", pp);
    return ar_printf(I->X, "pp = %d, tp = %d", pp, t);
}

/* every device j talks to the device with the same tp coordinate on one stage */
static int peers_by_tp(imp_t *I, const act_t *a, int tp)
{
    for (int j = 0; j < tp; j++)
        if (dev_pp(I, a[j].peer) != dev_pp(I, a[0].peer) || dev_tp(I, a[j].peer) != j)
            return 0;
    return 1;
}

static void emit_adapter(imp_t *I, stage_t *st, item_t *it)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P;
    int tp = (int)P->tp;
    node_t **n = it->n;
    ikeys_t K[MAXTP];
    for (int j = 0; j < tp; j++)
        item_keys(I, st, it, j, &K[j]);
    for (int p = 0; p < n[0]->nprims; p++) {
        act_t a[MAXTP];
        for (int j = 0; j < tp; j++) {
            if (strcmp(n[j]->prims[p].cls, n[0]->prims[p].cls) != 0)
                die(X, "%s: %s: the devices of pipeline stage %d run different primitives here",
                    P->file, n[j]->prims[p].path, st->k);
            prim_act(I, st, n[j], &n[j]->prims[p], j, &a[j]);
            if (K[j].out[p] == -2)
                a[j].op = A_NONE;
        }
        int op = a[0].op, uniform = 1;
        for (int j = 1; j < tp; j++)
            uniform &= a[j].op == op;
        const char *path = n[0]->prims[p].path;
        if (!uniform)
            for (int j = 0; j < tp; j++)
                if (a[j].op == A_GATHER || a[j].op == A_REDUCE)
                    die(X, "%s: %s: a collective that only some devices of its group run", P->file,
                        n[j]->prims[p].path);
        int chunk_by_tp = uniform && a[0].n == tp && tp > 1;
        for (int q = 0; q < tp && chunk_by_tp; q++)
            chunk_by_tp = a[q].pos == q;
        /* a chunk over tp: the members take the tp chunks, one each (chunks = tp; each member's
           index is rank.tp or written in an `on tp` block, so tp keeps its real size) */
        int chunk_over_tp = uniform && op == A_CHUNK && a[0].n == tp && tp > 1;
        uint64_t taken = 0;
        for (int q = 0; q < tp && chunk_over_tp; q++) {
            chunk_over_tp = a[q].n == tp && a[q].pos >= 0 && a[q].pos < tp &&
                            !(taken >> a[q].pos & 1);
            if (chunk_over_tp)
                taken |= (uint64_t)1 << a[q].pos;
        }
        /* an all-gather places each member's input where its index map says (README: fused
           collectives' inputs are sorted by indmap); when the members hold their chunks in
           another order than their ranks, gather[k] names the member holding chunk k */
        int gather[MAXTP], gather_perm = 0;
        if (uniform && op == A_GATHER && !a[0].single && a[0].n == tp) {
            for (int k = 0; k < tp; k++)
                gather[k] = -1;
            for (int j = 0; j < tp; j++) {
                int k = chunk_index(sub_of(P, a[j].in), sub_of(P, a[j].out), a[j].dim, tp);
                if (k < 0 || gather[k] >= 0)
                    die(X, "%s: %s: the inputs' index maps along dim %d are not the %d chunks of "
                           "the output's",
                        P->file, n[j]->prims[p].path, a[j].dim, tp);
                gather[k] = j;
                gather_perm |= k != j;
            }
        }
        /* inputs */
        const char *iv[MAXTP];
        for (int j = 0; j < tp; j++) {
            iv[j] = NULL;
            if (a[j].op == A_NONE || a[j].op == A_RECV)
                continue;
            iv[j] = nget(I, st, j, K[j].in[p]);
            if (iv[j] == NULL)
                unproduced(I, st, K[j].in[p], n[j]->prims[p].path);
        }
        if (uniform && op == A_NONE)
            continue;
        if (uniform && op == A_SEND && peers_by_tp(I, a, tp) && all_same(iv, tp) && tp > 1) {
            put_stmt(I, st, -1, ar_printf(X, "send(%s, %s)", iv[0], peer_text(I, a[0].peer, 1)));
            for (int j = 0; j < tp; j++)
                send_msg(I, st->dev0 + j, a[j].peer, n[j]->cid);
            continue;
        }
        const char *expr[MAXTP];
        int alias[MAXTP], produce = 0;
        for (int j = 0; j < tp; j++) {
            expr[j] = NULL;
            alias[j] = 0;
            switch (a[j].op) {
            case A_NONE: break;
            case A_SEND:
                put_stmt(I, st, j,
                         ar_printf(X, "send(%s, %s)", iv[j], peer_text(I, a[j].peer, 0)));
                send_msg(I, st->dev0 + j, a[j].peer, n[j]->cid);
                break;
            case A_BSEND:
                for (int r = 0; r < a[j].nranks; r++) {
                    if (a[j].ranks[r] == st->dev0 + j)
                        continue;
                    put_stmt(I, st, j,
                             ar_printf(X, "send(%s, %s)", iv[j], peer_text(I, a[j].ranks[r], 0)));
                    send_msg(I, st->dev0 + j, a[j].ranks[r], n[j]->cid);
                }
                break;
            case A_COPY:
                expr[j] = iv[j];
                alias[j] = 1;
                break;
            case A_CHUNK:
                expr[j] = ar_printf(X, "chunk(%s, chunks = %s, dim = %d, index = %s)", iv[j],
                                    chunk_over_tp ? "tp" : ar_printf(X, "%d", a[j].n),
                                    a[j].dim,
                                    chunk_by_tp ? "rank.tp" : ar_printf(X, "%d", a[j].pos));
                break;
            case A_GATHER:
                expr[j] = ar_printf(X, "all_gather(%s, dim = %d, axis = tp)", iv[j], a[j].dim);
                if (gather_perm) {
                    /* rank order, then the chunks put back in index-map order */
                    const char *g = expr[j], *cat = "concat(";
                    for (int k = 0; k < tp; k++)
                        cat = ar_printf(X, "%schunk(%s, chunks = tp, dim = %d, index = %d), ", cat,
                                        g, a[j].dim, gather[k]);
                    expr[j] = ar_printf(X, "%sdim = %d)", cat, a[j].dim);
                }
                break;
            case A_REDUCE:
                expr[j] = ar_printf(X, "all_reduce(%s, sum, tp)", iv[j]);
                break;
            case A_RECV:
                recv_msg(I, a[j].peer, st->dev0 + j, n[j]->cid, n[j]->prims[p].path);
                expr[j] = ar_printf(X, "recv(%s)", peer_text(I, a[j].peer, 0));
                break;
            }
            produce += expr[j] != NULL;
        }
        if (produce == 0)
            continue;
        if (produce != tp)
            die(X, "%s: %s: a primitive that produces its output on some devices of pipeline "
                   "stage %d only",
                P->file, path, st->k);
        if (uniform && op == A_RECV && tp > 1 && peers_by_tp(I, a, tp))
            for (int j = 0; j < tp; j++)
                expr[j] = ar_printf(X, "recv(%s)", peer_text(I, a[0].peer, 1));
        int64_t keys[MAXTP];
        for (int j = 0; j < tp; j++)
            keys[j] = K[j].out[p];
        emit_output(I, st, keys, expr, alias, 0, path);
    }
}

static void emit_item(imp_t *I, stage_t *st, item_t *it)
{
    if (it->kind == IT_ADAPTER)
        emit_adapter(I, st, it);
    else
        emit_op(I, st, it);
}


/* ---- plan: interleaving, reducers, outputs --------------------------------------------------------- */

/* the gradient of a reducer's weight on device j: TrainVerify follows the grad link of a forward
   op's input slot holding the weight on that device (the reducer cell is shared by the devices
   of a stage, its own links name one device's tensors) */
static int64_t weight_grad(imp_t *I, stage_t *st, int j, slot_t *w)
{
    device_t *d = &I->P.dev[st->dev0 + j];
    int64_t g = -1;
    for (int i = 0; i < d->allnodes.n; i++) {
        node_t *n = d->allnodes.v[i];
        if (n->kind != K_FW)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k].kind == SL_TID && n->in[k].tid == w->tid && n->in[k].grad >= 0) {
                if (g >= 0 && g != n->in[k].grad)
                    die(I->X, "%s: %s: weight tid %" PRId64 " has two gradients (%" PRId64
                              " and %" PRId64 ") on device %d; such plans are not supported",
                        I->P.file, n->in[k].path, w->tid, g, n->in[k].grad, st->dev0 + j);
                g = n->in[k].grad;
            }
    }
    return g >= 0 ? g : w->grad;
}

static void build_plan(imp_t *I)
{
    ictx_t *X = I->X;
    plan_t *P = &I->P;
    int tp = (int)P->tp;
    /* copies: outputs of multiref and identity-like ops */
    for (int dv = 0; dv < P->ndev; dv++)
        for (int i = 0; i < P->dev[dv].allnodes.n; i++) {
            node_t *n = P->dev[dv].allnodes.v[i];
            if (n->kind != K_FW || !(is_identity_op(n->name) || !strcmp(n->name, "multiref")))
                continue;
            for (int o = 0; o < n->nout; o++)
                if (n->out[o].kind == SL_TID && !(n->nin == 1 && n->in[0].kind == SL_TID &&
                                                  n->in[0].tid == n->out[o].tid))
                    P->full[sub_of(P, n->out[o].tid)->pidx].copy = 1;
        }
    build_stages(I);
    I->cur_stage = -1;
    ab_init(&I->body);
    for (;;) {
        int done = 1, progress = 0;
        for (int k = 0; k < P->pp; k++) {
            stage_t *st = &I->st[k];
            while (st->pos < st->items.n && !item_blocked(I, st, &st->items.v[st->pos])) {
                emit_item(I, st, &st->items.v[st->pos]);
                st->pos++;
                progress = 1;
            }
            if (st->pos < st->items.n)
                done = 0;
        }
        if (done)
            break;
        if (!progress) {
            stage_t *st = &I->st[0];
            for (int k = 0; k < P->pp; k++)
                if (I->st[k].pos < I->st[k].items.n) {
                    st = &I->st[k];
                    break;
                }
            die(X, "%s: %s: the pipeline deadlocks here: every stage waits for a message that is "
                   "never sent",
                P->file, st->items.v[st->pos].n[0]->path);
        }
    }
    if (I->cur_stage >= 0)
        ab_puts(&I->body, "  }\n");
    /* weight reducers: all-reduce the accumulated gradients over the micro-batches and the
       data-parallel replicas (and the tensor-parallel group when the reducer spans it) */
    imap_t done;
    memset(&done, 0, sizeof done);
    I->pgrad_done = ar_alloc(X, sizeof(int) * (size_t)(I->L.nfull + 1));
    for (int k = 0; k < P->pp; k++) {
        stage_t *st = &I->st[k];
        abuf_t out;
        ab_init(&out);
        int tp_red = 0;
        if (st->reducer[0]) {
            node_t *r0 = st->reducer[0];
            for (int j = 0; j < tp; j++) {
                node_t *r = st->reducer[j];
                int64_t d = st->dev0 + j;
                int self = r->ndevs == 1 && r->devs[0] == d;
                int group = r->ndevs == tp;
                for (int q = 0; q < r->ndevs && group; q++)
                    group = r->devs[q] == st->dev0 + q;
                if (!self && !(group && tp > 1))
                    die(X, "%s: %s.device: a reducer over devices other than %" PRId64 " alone or "
                           "its tensor-parallel group is not supported",
                        P->file, r->path, d);
                if (j == 0)
                    tp_red = !self;
                else if (tp_red != !self)
                    die(X, "%s: %s.device: the devices of pipeline stage %d reduce over different "
                           "groups",
                        P->file, r->path, k);
                if (r->nin != r0->nin)
                    die(X, "%s: %s.inputs: the devices of pipeline stage %d reduce different "
                           "weights",
                        P->file, r->path, k);
            }
            for (int s = 0; s < r0->nin; s++) {
                int64_t g[MAXTP];
                const char *v[MAXTP];
                for (int j = 0; j < tp; j++) {
                    slot_t *w = &st->reducer[j]->in[s];
                    if (w->kind != SL_TID || w->grad < 0)
                        die(X, "%s: %s: a reducer input must be a weight with a gradient link",
                            P->file, w->path);
                    full_t *W = full_of_sub(P, w->tid);
                    if (!W->is_param)
                        die(X, "%s: %s: '%s' is not a parameter", P->file, w->path, W->name);
                    if (strcmp(W->name, full_of_sub(P, st->reducer[0]->in[s].tid)->name))
                        die(X, "%s: %s: the devices of pipeline stage %d reduce different weights "
                               "in this position",
                            P->file, w->path, k);
                    g[j] = weight_grad(I, st, j, w);
                    int wv = fcur(st, j, w->tid);
                    v[j] = nget(I, st, j, KEY_G(g[j], wv > 0 ? wv : 1));
                    if (v[j] == NULL)
                        die(X, "%s: %s.grad: the gradient of '%s' (tid %" PRId64 ") is never "
                               "produced on device %d",
                            P->file, w->path, W->name, g[j], st->dev0 + j);
                }
                if (!all_same(v, tp))
                    die(X, "%s: %s: the devices of pipeline stage %d accumulate this gradient "
                           "differently",
                        P->file, st->reducer[0]->in[s].path, k);
                if (imap_get(&done, g[0] * 4096 + k, -1) >= 0)
                    continue;
                imap_set(X, &done, g[0] * 4096 + k, 1);
                int lf = lmap(I, sub_of(P, st->reducer[0]->in[s].tid)->pidx);
                if (lf < 0)
                    die(X, "%s: %s: weight '%s' is not a parameter of the logical plan", P->file,
                        st->reducer[0]->in[s].path, full_of_sub(P, st->reducer[0]->in[s].tid)->name);
                /* the gradient's layout: its tensor-parallel parts are summed by a reducer
                   over the tp group */
                int64_t gt[MAXTP];
                for (int j = 0; j < tp; j++)
                    gt[j] = g[j];
                const char *why;
                const char *lay;
                if (tp_red) {
                    /* a reducer over the tp group sums the devices' values: the plan means the
                       complete gradient, whatever the value maps say */
                    lay = layout_of(I, st, gt, lf, 2, 0, NULL, &why);
                    if (lay == NULL)
                        die(X, "%s: %s.grad: the layout of the gradient cannot be written: %s",
                            P->file, st->reducer[0]->in[s].path, why);
                } else {
                    lay = layout_of(I, st, gt, lf, 0, 0, NULL, &why);
                    if (lay == NULL)
                        die(X, "%s: %s.grad: the layout of the gradient cannot be written: %s",
                            P->file, st->reducer[0]->in[s].path, why);
                }
                const char *ax[3];
                int na = 0;
                if (P->nm > 1)
                    ax[na++] = "mb";
                if (P->dp > 1)
                    ax[na++] = "dp";
                if (tp_red)
                    ax[na++] = "tp";
                const char *red = ar_printf(X, "%s.sum", v[0]);
                if (na == 0)
                    ab_printf(&out, "    %s = %s\n", red, v[0]);
                else {
                    ab_printf(&out, "    %s = all_reduce(%s, sum, [", red, v[0]);
                    for (int q = 0; q < na; q++)
                        ab_printf(&out, "%s%s", q ? ", " : "", ax[q]);
                    ab_puts(&out, "])\n");
                }
                ab_printf(&out, "    output grad.%s = %s : %s\n", I->mname[lf], red, lay);
                I->pgrad_done[lf] = 1;
            }
        }
        if (out.len)
            ab_printf(&I->body, "  # weight reducer of pipeline stage %d\n  on pp = %d {\n%s  }\n",
                      k, k, out.s);
    }
    /* parameter gradients that no reducer covers: the local accumulation over micro-batches */
    for (int k = 0; k < P->pp; k++) {
        stage_t *st = &I->st[k];
        abuf_t out;
        ab_init(&out);
        for (int i = 0; i < st->items.n; i++) {
            item_t *it = &st->items.v[i];
            if (it->kind != IT_OP || it->n[0]->kind != K_BW)
                continue;
            for (int o = 0; o < it->n[0]->nout; o++) {
                slot_t *sl = &it->n[0]->out[o];
                if (sl->kind != SL_TID)
                    continue;
                full_t *G = full_of_sub(P, sl->tid);
                if (!G->is_grad || G->fwd < 0 || !P->full[G->fwd].is_param)
                    continue;
                if (imap_get(&done, sl->tid * 4096 + k, -1) >= 0)
                    continue;
                imap_set(X, &done, sl->tid * 4096 + k, 1);
                int64_t gt[MAXTP];
                const char *v[MAXTP];
                for (int j = 0; j < tp; j++) {
                    gt[j] = it->n[j]->out[o].tid;
                    v[j] = nget(I, st, j,
                                KEY_G(gt[j], slot_version(mirror_of(I, st, j, it->n[j]), 0, gt[j])));
                }
                if (v[0] == NULL || !all_same(v, tp))
                    continue;
                int lf = lmap(I, G->fwd);
                if (lf < 0)
                    continue;
                const char *why;
                const char *lay = layout_of(I, st, gt, lf, 0, 0, NULL, &why);
                if (lay == NULL)
                    die(X, "%s: %s: the layout of the gradient cannot be written: %s", P->file,
                        sl->path, why);
                const char *red = ar_printf(X, "%s.sum", v[0]);
                if (P->nm > 1)
                    ab_printf(&out, "    %s = all_reduce(%s, sum, mb)    # no weight reducer\n",
                              red, v[0]);
                else
                    ab_printf(&out, "    %s = %s    # no weight reducer\n", red, v[0]);
                ab_printf(&out, "    output grad.%s = %s : %s\n", I->mname[lf], red, lay);
                I->pgrad_done[lf] = 1;
            }
        }
        if (out.len)
            ab_printf(&I->body, "  on pp = %d {\n%s  }\n", k, out.s);
    }
    /* every parameter the logical plan trains gets a gradient */
    plan_t *L = &I->L;
    for (int i = 0; i < L->dev[0].allnodes.n; i++) {
        node_t *n = L->dev[0].allnodes.v[i];
        if (n->kind != K_BW)
            continue;
        for (int o = 0; o < n->nout; o++) {
            if (n->out[o].kind != SL_TID)
                continue;
            full_t *G = full_of_sub(L, n->out[o].tid);
            if (!G->is_grad || G->fwd < 0 || !L->full[G->fwd].is_param)
                continue;
            if (!I->pgrad_done[G->fwd])
                die(X, "%s: the parallel plan never produces the gradient of parameter '%s' "
                       "(the logical plan does: %s)",
                    P->file, L->full[G->fwd].name, n->out[o].path);
        }
    }
}

/* ---- assembly ------------------------------------------------------------------------------------ */

static int cmp_size(const void *a, const void *b, void *ctx)
{
    dims_t *D = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int64_t sx = D->cls.v[x].size, sy = D->cls.v[y].size;
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return x - y;
}

static void sort_ints(int *a, int n, dims_t *D)
{
    for (int i = 1; i < n; i++) {
        int v = a[i], k = i;
        while (k > 0 && cmp_size(&a[k - 1], &v, D) > 0) {
            a[k] = a[k - 1];
            k--;
        }
        a[k] = v;
    }
}

static char *assemble(imp_t *I, const char *lname, const char *pname)
{
    ictx_t *X = I->X;
    dims_t *D = &I->DC.D;
    plan_t *P = &I->P;
    abuf_t o;
    ab_init(&o);
    /* constraints first: they may name more classes */
    abuf_t cons;
    ab_init(&cons);
    for (int i = 0, nc = 0; i < I->DC.cons.n; i++) {
        dcons_t c = I->DC.cons.v[i];
        const char *e = local_expr_(&I->DC, c.c, c.k);
        if (e) {
            ab_printf(&cons, "%s_c%d = %s", nc ? ", " : "", nc + 1, e);
            nc++;
        }
    }
    ab_printf(&o,
              "# Generated by `shardproof import nnscaler` from\n"
              "#   logical:  %s\n"
              "#   parallel: %s\n"
              "# Modeling (docs/nnscaler.md): token ids are one-hot inputs; create_mask and the "
              "complex RoPE\n"
              "# tables are symbolic inputs (the proof holds for every value of them); the "
              "logical backward\n"
              "# pass is train's autodiff; the mesh axis mb is the micro-batch index (TrainVerify "
              "keys tensor\n"
              "# instances by rank and micro-batch); each stage's tp devices run in lockstep.\n\n",
              lname, pname);
    /* dims: base classes by size, then derived ones in dependency order */
    int *base = ar_alloc(X, sizeof(int) * (size_t)(D->order.n + 1));
    int nb = 0;
    for (int i = 0; i < D->order.n; i++)
        if (D->cls.v[D->order.v[i]].kind == 0)
            base[nb++] = D->order.v[i];
    sort_ints(base, nb, D);
    if (nb) {
        ab_puts(&o, "dim ");
        for (int i = 0; i < nb; i++)
            ab_printf(&o, "%s%s = %" PRId64, i ? ", " : "", D->cls.v[base[i]].name,
                      D->cls.v[base[i]].size);
        ab_putc(&o, '\n');
    }
    for (int i = 0; i < D->order.n; i++) {
        cls_t *C = &D->cls.v[D->order.v[i]];
        if (C->kind == 1) {
            ab_printf(&o, "dim %s = ", C->name);
            for (int k = 0; k < C->nf; k++)
                ab_printf(&o, "%s%s", k ? "*" : "", D->cls.v[C->f[k]].name);
            ab_putc(&o, '\n');
        } else if (C->kind == 2) {
            ab_printf(&o, "dim %s = %s/2\n", C->name, D->cls.v[C->base].name);
        }
    }
    if (cons.len)
        ab_printf(&o, "# the plan splits these dimensions\ndim %s\n", cons.s);
    ab_putc(&o, '\n');
    if (I->use_linear)
        ab_puts(&o, "func linear(x, w) { return matmul(x, transpose(w, 0, 1)) }\n");
    if (I->use_linear_gw)
        ab_puts(&o, "func linear_gw(x, w, g) { return transpose(matmul_grad_b(x, transpose(w, 0, "
                    "1), g), 0, 1) }\n");
    if (I->use_rotary)
        ab_puts(&o, "# apply_rotary_emb: x [b, s, h, d], pairs (2i, 2i+1) rotated by the complex "
                    "table [s, d/2]\n"
                    "func rotary(x, c, s) { return transpose(rope(transpose(x, 1, 2), c, s, "
                    "interleaved = 1), 1, 2) }\n");
    if (I->use_rotary_grad)
        ab_puts(&o, "func rotary_grad(g, c, s) { return transpose(rope_grad(transpose(g, 1, 2), "
                    "c, s, interleaved = 1), 1, 2) }\n");
    for (int c = 0; c < I->gate_cfg.n; c++) {
        char sf[16], rs[256], en[256];
        long long G, TG, K;
        if (sscanf(I->gate_cfg.v[c], "%15[^|]|%lld|%lld|%lld|%255[^|]|%255s", sf, &G, &TG, &K, rs,
                   en) != 6)
            die(X, "internal: gate configuration '%s'", I->gate_cfg.v[c]);
        int sig = !strcmp(sf, "sigmoid");
        int n = c + 1;
        ab_printf(&o, "# gate_fw #%d: %s scores, %lld groups (best %lld kept), top %lld, scale %s\n",
                  n, sf, G, TG, K, rs);
        ab_printf(&o, "func moe_mask_%d(s) {\n", n);
        if (G > 1)
            ab_printf(&o,
                      "  r = repeat_interleave(topk_mask(amax(reshape(s, [-1, %lld, %s/%lld]), dim = -1), k = "
                      "%lld, dim = -1), repeats = %s/%lld, dim = -1)\n"
                      "  return topk_mask(s * r + (r - 1), k = %lld, dim = -1)\n}\n",
                      G, en, G, TG, en, G, K);
        else
            ab_printf(&o, "  return topk_mask(s, k = %lld, dim = -1)\n}\n", K);
        if (sig)
            ab_printf(&o,
                      "func moe_weights_%d(s, m) { return s * m / sum(s * m, dim = -1, keepdim = 1) * %s }\n"
                      "func moe_gate_gs_%d(s, m, g) {\n  u = s * m\n  z = sum(u, dim = -1, keepdim = 1)\n"
                      "  return %s * (g / z - sum(g * u, dim = -1, keepdim = 1) / (z * z)) * m\n}\n",
                      n, rs, n, rs);
        else
            ab_printf(&o,
                      "func moe_weights_%d(s, m) { return s * m * %s }\n"
                      "func moe_gate_gs_%d(s, m, g) { return %s * g * m }\n",
                      n, rs, n, rs);
    }
    if (I->gate_cfg.n && !I->use_linear)
        ab_puts(&o, "func linear(x, w) { return matmul(x, transpose(w, 0, 1)) }\n");
    const char *mn = sanitize(I, P->model_name);
    ab_printf(&o, "\nmodel %s {\n%s%s}\n\n", mn, I->mdecl.s, I->mbody.s);
    ab_printf(&o, "plan dp%" PRId64 "_pp%" PRId64 "_tp%" PRId64 "_nm%" PRId64 " of %s {\n", P->dp,
              P->pp, P->tp, P->nm, mn);
    ab_printf(&o, "  mesh dp = %" PRId64 ", mb = %" PRId64 ", pp = %" PRId64 ", tp = %" PRId64 "\n",
              P->dp, P->nm, P->pp, P->tp);
    for (int k = 0; k < P->pp; k++)
        if (I->st[k].decl.len)
            ab_printf(&o, "  on pp = %d {\n%s  }\n", k, I->st[k].decl.s);
    ab_puts(&o, I->body.s);
    /* TrainVerify compares the gradients of the parameters: the loss and the optimizer's update
       (train sgd's next.W) are the model's outputs too, left unchecked explicitly */
    ab_printf(&o, "  omit loss%s\n", I->omit.len ? I->omit.s : "");
    ab_puts(&o, "}\n");
    char *r = flint_malloc(o.len + 1);
    memcpy(r, o.s, o.len + 1);
    return r;
}

/* ---- entry points -------------------------------------------------------------------------------- */

int sp_nnscaler_import_text(const char *lname, const char *ltext, size_t llen, const char *pname,
                            const char *ptext, size_t plen, char **out, char *err, size_t errlen)
{
    return sp_nnscaler_import_text_ex(lname, ltext, llen, pname, ptext, plen, 0, out, err, errlen);
}

int sp_nnscaler_import_text_ex(const char *lname, const char *ltext, size_t llen, const char *pname,
                               const char *ptext, size_t plen, int flags, char **out, char *err,
                               size_t errlen)
{
    ictx_t *X = flint_calloc(1, sizeof(ictx_t));
    imp_t *I = flint_calloc(1, sizeof(imp_t));
    char dummy[8];
    X->err = errlen ? err : dummy;
    X->errlen = errlen ? errlen : sizeof dummy;
    X->err[0] = 0;
    *out = NULL;
    int rc = 2;
    ictx_t *saved = g_X;
    g_X = X;
    I->X = X;
    I->DC.X = X;
    I->tv_chunk = (flags & SP_NNSCALER_TV_CHUNK_RULE) != 0;
    I->autograd_sum = (flags & SP_NNSCALER_AUTOGRAD_SUM) != 0;
    if (setjmp(X->jb) == 0) {
        load_plan(X, &I->L, 0, lname, ltext, llen);
        load_plan(X, &I->P, 1, pname, ptext, plen);
        take_reserved(I);
        dims_build(X, &I->DC.D, &I->L, &I->P);
        ab_init(&I->mdecl);
        ab_init(&I->omit);
        ab_init(&I->mbody);
        build_model(I);
        build_plan(I);
        *out = assemble(I, lname, pname);
        rc = 0;
    }
    for (int r = 0; r < 2; r++)
        if (X->roots[r])
            json_decref(X->roots[r]);
    ar_free(X);
    g_X = saved;
    flint_free(I);
    flint_free(X);
    return rc;
}

static char *slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = flint_malloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap > SP_NNSCALER_MAX_FILE) {
                snprintf(err, errlen, "%s: file too large (more than %zu bytes)", path,
                         SP_NNSCALER_MAX_FILE);
                flint_free(b);
                fclose(f);
                return NULL;
            }
            cap *= 2;
            b = flint_realloc(b, cap);
        }
        size_t k = fread(b + n, 1, cap - n, f);
        if (k == 0)
            break;
        n += k;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        flint_free(b);
        return NULL;
    }
    *len = n;
    return b;
}

int sp_nnscaler_import(const char *logical_path, const char *parallel_path, char **out,
                       char *err, size_t errlen)
{
    return sp_nnscaler_import_ex(logical_path, parallel_path, 0, out, err, errlen);
}

int sp_nnscaler_import_ex(const char *logical_path, const char *parallel_path, int flags,
                          char **out, char *err, size_t errlen)
{
    size_t ll, pl;
    *out = NULL;
    char *lt = slurp(logical_path, &ll, err, errlen);
    if (lt == NULL)
        return 2;
    char *pt = slurp(parallel_path, &pl, err, errlen);
    if (pt == NULL) {
        flint_free(lt);
        return 2;
    }
    int rc = sp_nnscaler_import_text_ex(logical_path, lt, ll, parallel_path, pt, pl, flags, out, err,
                                        errlen);
    flint_free(lt);
    flint_free(pt);
    return rc;
}
