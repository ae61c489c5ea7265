/* nns_read.c: the nnScaler importer's reading: the arena and errors, hash maps, the data model,
 * JSON access with paths, loading and validating both files. */
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

#include "nns_int.h"
#include "ops.h"

/* ---- arena, errors ---------------------------------------------------------------------------- */

void *ar_alloc(ictx_t *X, size_t n)
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

void ar_free(ictx_t *X)
{
    while (X->ar) {
        ablk_t *n = X->ar->next;
        flint_free(X->ar);
        X->ar = n;
    }
}

char *ar_vprintf(ictx_t *X, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = ar_alloc(X, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *ar_printf(ictx_t *X, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
char *ar_printf(ictx_t *X, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = ar_vprintf(X, fmt, ap);
    va_end(ap);
    return s;
}

char *ar_strdup(ictx_t *X, const char *s) { return ar_printf(X, "%s", s); }

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 2, 3)))
#endif
void die(ictx_t *X, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(X->err, X->errlen, fmt, ap);
    va_end(ap);
    longjmp(X->jb, 1);
}

void ab_init(abuf_t *b)
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

void ab_puts(abuf_t *b, const char *t)
{
    size_t n = strlen(t);
    ab_reserve(b, n);
    memcpy(b->s + b->len, t, n + 1);
    b->len += n;
}

void ab_putc(abuf_t *b, char c)
{
    char t[2] = {c, 0};
    ab_puts(b, t);
}

void ab_printf(abuf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void ab_printf(abuf_t *b, const char *fmt, ...)
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

void ab_clear(abuf_t *b) { (void)b; }

/* ---- hash maps: int64 -> int and string -> int ------------------------------------------------ */

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

int *imap_slot(ictx_t *X, imap_t *m, int64_t k, int create)
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

int imap_get(const imap_t *m, int64_t k, int dflt)
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

void imap_set(ictx_t *X, imap_t *m, int64_t k, int v) { *imap_slot(X, m, k, 1) = v; }

static uint64_t shash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

int smap_get(const smap_t *m, const char *k, int dflt)
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

void smap_set(ictx_t *X, smap_t *m, const char *k, int v)
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

/* ---- JSON access with paths -------------------------------------------------------------------- */

const char *jtype(json_t *v)
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

json_t *jget(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key)
{
    if (!json_is_object(o))
        die(X, "%s: %s: expected an object, found %s", p->file, path, jtype(o));
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        die(X, "%s: %s%s%s: missing", p->file, path, *path ? "." : "", key);
    return v;
}

const char *kpath(ictx_t *X, const char *path, const char *key)
{
    return ar_printf(X, "%s%s%s", path, *path ? "." : "", key);
}

const char *ipath(ictx_t *X, const char *path, size_t i)
{
    return ar_printf(X, "%s[%zu]", path, i);
}

int64_t jint_v(ictx_t *X, plan_t *p, json_t *v, const char *path, int64_t lo, int64_t hi)
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
int64_t kw_int(ictx_t *X, plan_t *p, json_t *kw, const char *path, const char *key)
{
    return jint(X, p, kw, path, key, -LIM_SIZE, LIM_SIZE);
}

/* ---- loading ----------------------------------------------------------------------------------- */

int full_index(plan_t *p, int64_t tid) { return imap_get(&p->fidx, tid, -1); }
static int sub_index(plan_t *p, int64_t tid) { return imap_get(&p->sidx, tid, -1); }

sub_t *sub_of(plan_t *p, int64_t tid)
{
    int i = sub_index(p, tid);
    return i < 0 ? NULL : &p->sub[i];
}

/* Which of n equal chunks of whole along dim d is part (by their index maps), or -1. */
int chunk_index(const sub_t *part, const sub_t *whole, int d, int n)
{
    int64_t w = part->hi[d] - part->lo[d], off = part->lo[d] - whole->lo[d];
    if (w <= 0 || off < 0 || off % w != 0 || off / w >= n)
        return -1;
    return (int)(off / w);
}

full_t *full_of_sub(plan_t *p, int64_t tid)
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

int is_fused(int code) { return code == P_ARI || code == P_IAR || code == P_AGS || code == P_SAG; }

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

void load_plan(ictx_t *X, plan_t *p, int role, const char *fname, const char *text,
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
