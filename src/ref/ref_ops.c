/* ref_ops.c: the reference executor's tensor operators, each built from scalar tape operations. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_int.h"

/* ---- tensors -------------------------------------------------------------------------------- */

void rt_init(rten_t *t) { memset(t, 0, sizeof(*t)); }

void rt_clear(rten_t *t)
{
    free(t->id);
    rt_init(t);
}

int64_t rt_numel(const rten_t *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->nd; d++)
        n *= t->sh[d];
    return n;
}

int rt_copy(rten_t *d, const rten_t *s)
{
    int64_t n = rt_numel(s);
    uint32_t *id = malloc((size_t)(n > 0 ? n : 1) * sizeof(uint32_t));
    if (id == NULL)
        return -1;
    memcpy(id, s->id, (size_t)n * sizeof(uint32_t));
    free(d->id);
    *d = *s;
    d->id = id;
    return 0;
}

void rt_shape_str(char *buf, size_t len, int nd, const int64_t *sh)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < nd && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)sh[d]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

static int fail(ropc_t *c, const char *fmt, ...) SP_PRINTF(2, 3);
static int fail(ropc_t *c, const char *fmt, ...)
{
    int k = snprintf(c->err, sizeof(c->err), "%s: ", c->op);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + k, sizeof(c->err) - (size_t)k, fmt, ap);
    va_end(ap);
    return 0;
}

/* a shape as text for a message (three rotating buffers of the context) */
static const char *shs(ropc_t *c, int nd, const int64_t *sh)
{
    c->shk = (c->shk + 1) % 3;
    rt_shape_str(c->shs[c->shk], sizeof(c->shs[0]), nd, sh);
    return c->shs[c->shk];
}
#define SHS(nd, sh) shs(c, (nd), (sh))

/* Allocate out with a checked shape (the element limit is a size limit, not bad input). */
static int talloc(ropc_t *c, rten_t *t, int nd, const int64_t *sh)
{
    if (nd > RMAXD)
        return fail(c, "more than %d dimensions", RMAXD);
    int64_t n = 1;
    for (int d = 0; d < nd; d++) {
        if (sh[d] < 0)
            return fail(c, "negative size %lld", (long long)sh[d]);
        if (sh[d] > 0 && n > c->max_el / sh[d] + 1) {
            n = c->max_el + 1;
            break;
        }
        n *= sh[d];
    }
    if (n > c->max_el) {
        c->limit = 1;
        return fail(c, "output of more than %lld elements (the limit max-elements)",
                    (long long)c->max_el);
    }
    rt_init(t);
    t->nd = nd;
    if (nd > 0)
        memcpy(t->sh, sh, (size_t)nd * sizeof(int64_t));
    t->id = calloc((size_t)(n > 0 ? n : 1), sizeof(uint32_t));
    if (t->id == NULL) {
        c->limit = 1;
        return fail(c, "out of memory");
    }
    return 1;
}

static void unflat(int64_t i, int nd, const int64_t *sh, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = sh[d] ? i % sh[d] : 0;
        i = sh[d] ? i / sh[d] : 0;
    }
}

static int64_t flat(int nd, const int64_t *sh, const int64_t *idx)
{
    int64_t f = 0;
    for (int d = 0; d < nd; d++)
        f = f * sh[d] + idx[d];
    return f;
}

/* dim d of an nd-dim tensor, negative from the end; lane operators (reductions, softmax, norms,
   top-k) also accept 0 and -1 on a scalar (scalar != 0), as torch does */
static int normdim_s(ropc_t *c, int64_t d, int nd, int scalar, int *out)
{
    int n = nd || !scalar ? nd : 1;
    if (d < -n || d >= n)
        return fail(c, "dimension %lld out of range for a %d-d tensor", (long long)d, nd);
    *out = (int)(d < 0 ? d + n : d);
    return 1;
}

static int normdim(ropc_t *c, int64_t d, int nd, int *out) { return normdim_s(c, d, nd, 0, out); }

/* NumPy broadcasting of shapes a and b into (nd, sh). */
static int bshape(ropc_t *c, int na, const int64_t *a, int nb, const int64_t *b, int *nd,
                  int64_t *sh)
{
    *nd = na > nb ? na : nb;
    for (int k = 0; k < *nd; k++) {
        int64_t x = k < *nd - na ? 1 : a[k - (*nd - na)], y = k < *nd - nb ? 1 : b[k - (*nd - nb)];
        if (x != y && x != 1 && y != 1)
            return fail(c, "shapes %s and %s cannot be broadcast", SHS(na, a), SHS(nb, b));
        sh[k] = x == 1 ? y : x;
    }
    return 1;
}

/* map[i] = the element of x read at element i of the broadcast shape (nd, sh). */
static int64_t *bmap(const rten_t *x, int nd, const int64_t *sh)
{
    int64_t n = 1, idx[RMAXD], xi[RMAXD];
    for (int d = 0; d < nd; d++)
        n *= sh[d];
    int64_t *m = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (m == NULL)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        unflat(i, nd, sh, idx);
        for (int d = 0; d < x->nd; d++) {
            int64_t v = idx[d + nd - x->nd];
            xi[d] = x->sh[d] == 1 ? 0 : v;
        }
        m[i] = flat(x->nd, x->sh, xi);
    }
    return m;
}

/* out = f(a, b[, w]) elementwise with broadcasting (w may be NULL). */
static int broadcast3(ropc_t *c, const rten_t *a, const rten_t *b, const rten_t *w, int nd,
                      int64_t *sh, int64_t **ma, int64_t **mb, int64_t **mw, rten_t *out)
{
    if (!bshape(c, a->nd, a->sh, b->nd, b->sh, &nd, sh))
        return 0;
    if (w && !bshape(c, nd, sh, w->nd, w->sh, &nd, sh))
        return 0;
    if (!talloc(c, out, nd, sh))
        return 0;
    *ma = bmap(a, nd, sh);
    *mb = bmap(b, nd, sh);
    *mw = w ? bmap(w, nd, sh) : NULL;
    if (*ma == NULL || *mb == NULL || (w && *mw == NULL)) {
        free(*ma), free(*mb), free(*mw);
        rt_clear(out);
        c->limit = 1;
        return fail(c, "out of memory");
    }
    return 1;
}

/* a op b (cmp < 0) or the comparison cmp of a and b, elementwise with broadcasting */
static int elementwise2(ropc_t *c, rop_t op, int cmp, const rten_t *a, const rten_t *b, rten_t *out)
{
    int64_t sh[RMAXD], *ma, *mb, *mw;
    if (!broadcast3(c, a, b, NULL, 0, sh, &ma, &mb, &mw, out))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++)
        out->id[i] = cmp < 0 ? rs_op2(c->S, op, a->id[ma[i]], b->id[mb[i]])
                             : rs_cmp(c->S, cmp, a->id[ma[i]], b->id[mb[i]]);
    free(ma);
    free(mb);
    return 1;
}

int rop_binary(ropc_t *c, rop_t op, const rten_t *a, const rten_t *b, rten_t *out)
{
    /* infix arithmetic has no operator name of its own: messages name it like the checker's */
    if (c->op == NULL)
        c->op = op == RO_ADD ? "add" : op == RO_SUB ? "sub" : op == RO_MUL ? "mul" : op == RO_DIV ? "div"
              : op == RO_MAX ? "maximum" : op == RO_MIN ? "minimum" : "arithmetic";
    return elementwise2(c, op, -1, a, b, out);
}

int rop_compare(ropc_t *c, int cmp, const rten_t *a, const rten_t *b, rten_t *out)
{
    if (c->op == NULL)
        c->op = "comparison";
    return elementwise2(c, RO_LEAF, cmp, a, b, out);
}

/* ---- attributes ------------------------------------------------------------------------------ */

typedef struct rdef rdef_t;
typedef int (*rop_fn)(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                      const rattr_t *const *A, rten_t *out);
struct rdef {
    const char *name;
    rop_fn fn;
    int lo, hi;
    const char *keys; /* ','-separated entries, '|' aliases; the first npos may be positional */
    int npos;
    int code;
    const char *base; /* gradient operators: the forward operator */
    int gidx;         /* gradient operators: which forward input (-1: the last) */
};

#define MAXKEYS 6

/* Does key name entry i of spec? */
static int key_is(const char *spec, int i, const char *key)
{
    const char *p = spec;
    for (int k = 0; k < i && p; k++)
        p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
    while (p && *p && *p != ',') {
        size_t n = strcspn(p, "|,");
        if (strlen(key) == n && strncmp(p, key, n) == 0)
            return 1;
        p += n;
        if (*p == '|')
            p++;
    }
    return 0;
}

static int nkeys(const char *spec)
{
    if (!*spec)
        return 0;
    int n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ',';
    return n;
}

static int resolve_attrs(ropc_t *c, const rdef_t *d, const rattr_t *at, int nat,
                         const rattr_t **A)
{
    int nk = nkeys(d->keys), pos = 0;
    for (int i = 0; i < MAXKEYS; i++)
        A[i] = NULL;
    for (int j = 0; j < nat; j++) {
        int i = -1;
        if (at[j].key == NULL) {
            if (pos >= d->npos)
                return fail(c, "too many arguments");
            i = pos++;
        } else
            for (int k = 0; k < nk && i < 0; k++)
                if (key_is(d->keys, k, at[j].key))
                    i = k;
        if (i < 0)
            return fail(c, "unknown attribute '%s'", at[j].key);
        if (A[i] != NULL)
            return fail(c, "attribute %d given twice", i + 1);
        A[i] = &at[j];
    }
    return 1;
}

static int a_int(ropc_t *c, const rattr_t *a, int64_t dflt, int64_t *v)
{
    *v = dflt;
    if (a == NULL)
        return 1;
    if (a->kind == RA_LIST && a->nlist == 1) {
        *v = a->list[0];
        return 1;
    }
    if (a->kind != RA_NUM || !fmpz_is_one(fmpq_denref(&a->num)) ||
        !fmpz_fits_si(fmpq_numref(&a->num)))
        return a->key ? fail(c, "attribute %s must be an integer", a->key)
                      : fail(c, "a positional attribute must be an integer");
    *v = fmpz_get_si(fmpq_numref(&a->num));
    return 1;
}

/* an integer attribute that is a flag: 0 or 1 (the checker refuses any other value too) */
static int a_flag(ropc_t *c, const rattr_t *a, const char *what, int64_t *v)
{
    if (!a_int(c, a, 0, v))
        return 0;
    if (*v != 0 && *v != 1)
        return fail(c, "attribute %s must be 0 or 1", what);
    return 1;
}

/* a required integer attribute */
static int a_req(ropc_t *c, const rattr_t *a, const char *what, int64_t *v)
{
    if (a == NULL)
        return fail(c, "missing attribute %s", what);
    return a_int(c, a, 0, v);
}

static int a_list(ropc_t *c, const rattr_t *a, int64_t *one, const int64_t **l, int *n)
{
    if (a->kind == RA_LIST) {
        *l = a->list;
        *n = a->nlist;
        return 1;
    }
    if (!a_int(c, a, 0, one))
        return 0;
    *l = one;
    *n = 1;
    return 1;
}

static int a_num(ropc_t *c, const rattr_t *a, fmpq_t q)
{
    if (a->kind != RA_NUM)
        return a->key ? fail(c, "attribute %s must be a number", a->key)
                      : fail(c, "a positional attribute must be a number");
    fmpq_set(q, &a->numr); /* a value: at the file's sizes (opts.real_values) */
    return 1;
}

/* The count of the elements of x's axes d with mask[d] (NULL: axis `axis` alone) at the file's
   sizes (rc_count; without opts.real_values the count itself): 1, or 0 with c->err */
static int real_count(ropc_t *c, const rten_t *x, const int *mask, int axis, int64_t *n)
{
    *n = 1;
    for (int d = 0; d < x->nd; d++) {
        int64_t r;
        if (mask ? !mask[d] : d != axis)
            continue;
        if (!rc_count(c, x->sh[d], &r)) {
            c->count_unknown = 1;
            return fail(c, "the count of an axis of %lld elements at the file's sizes is not known "
                           "(no extent the program writes)", (long long)x->sh[d]);
        }
        *n *= r;
    }
    return 1;
}

/* ---- elementwise ------------------------------------------------------------------------- */

static int f_unary(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    if (!talloc(c, out, in[0].nd, in[0].sh))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++)
        out->id[i] = rs_op1(c->S, (rop_t)d->code, in[0].id[i]);
    return 1;
}

static int f_binary(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                    const rattr_t *const *A, rten_t *out)
{
    return rop_binary(c, (rop_t)d->code, &in[0], &in[1], out);
}

static int f_cmp(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                 rten_t *out)
{
    return rop_compare(c, d->code, &in[0], &in[1], out);
}

/* x * constant q */
static int scale_by(ropc_t *c, const rten_t *x, const fmpq_t q, rten_t *out)
{
    if (!talloc(c, out, x->nd, x->sh))
        return 0;
    uint32_t k = rs_constq(c->S, q);
    for (int64_t i = 0, n = rt_numel(out); i < n; i++)
        out->id[i] = rs_op2(c->S, RO_MUL, x->id[i], k);
    return 1;
}

static int f_scale(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    if (A[0] == NULL)
        return fail(c, "missing attribute c");
    fmpq_t q;
    fmpq_init(q);
    int ok = a_num(c, A[0], q) && scale_by(c, &in[0], q, out);
    fmpq_clear(q);
    return ok;
}

static int f_pow(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                 rten_t *out)
{
    int64_t k;
    rattr_t kv; /* the exponent is a value: at the file's sizes (numr) */
    const rattr_t *ka = A[0];
    if (ka != NULL && ka->kind == RA_NUM) {
        kv = *ka;
        kv.num = ka->numr;
        ka = &kv;
    }
    if (!a_req(c, ka, "k", &k))
        return 0;
    if (k < -1024 || k > 1024)
        return fail(c, "exponent %lld out of range (|k| <= 1024)", (long long)k);
    if (!talloc(c, out, in[0].nd, in[0].sh))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++)
        out->id[i] = rs_pow(c->S, in[0].id[i], k);
    return 1;
}

/* a constant 0-d tensor */
static int const_tensor(ropc_t *c, const fmpq_t q, rten_t *t)
{
    if (!talloc(c, t, 0, NULL))
        return 0;
    t->id[0] = rs_constq(c->S, q);
    return 1;
}

/* clamp(x, lo, hi) = min(max(x, lo), hi), bounds as tensors or attributes, each optional */
static int f_clamp(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    rten_t cur, b, nx;
    rt_init(&cur);
    rt_init(&b);
    rt_init(&nx);
    if (rt_copy(&cur, &in[0]) < 0)
        return fail(c, "out of memory");
    int ok = 1;
    for (int k = 0; k < 2 && ok; k++) {
        const rten_t *bt = nin > k + 1 ? &in[k + 1] : NULL;
        if (bt == NULL && A[k] != NULL) {
            fmpq_t q;
            fmpq_init(q);
            ok = a_num(c, A[k], q) && const_tensor(c, q, &b);
            fmpq_clear(q);
            bt = &b;
        }
        if (ok && bt != NULL) {
            ok = rop_binary(c, k == 0 ? RO_MAX : RO_MIN, &cur, bt, &nx);
            rt_clear(&cur);
            cur = nx;
            rt_init(&nx);
        }
        rt_clear(&b);
    }
    if (ok)
        *out = cur;
    else
        rt_clear(&cur);
    return ok;
}

static int f_where(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    int64_t sh[RMAXD], *m0, *m1, *m2;
    if (!broadcast3(c, &in[0], &in[1], &in[2], 0, sh, &m0, &m1, &m2, out))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++)
        out->id[i] = rs_where(c->S, in[0].id[m0[i]], in[1].id[m1[i]], in[2].id[m2[i]]);
    free(m0);
    free(m1);
    free(m2);
    return 1;
}

/* dropout(x, mask, p) = x * mask / (1 - p) */
static int f_dropout(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                     const rattr_t *const *A, rten_t *out)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, 1, 2);
    int ok = A[0] == NULL || a_num(c, A[0], q);
    fmpq_sub_si(q, q, 1);
    fmpq_neg(q, q);
    if (ok && fmpq_sgn(q) <= 0)
        ok = fail(c, "p must be less than 1");
    if (ok)
        fmpq_inv(q, q);
    rten_t t;
    rt_init(&t);
    ok = ok && rop_binary(c, RO_MUL, &in[0], &in[1], &t) && scale_by(c, &t, q, out);
    rt_clear(&t);
    fmpq_clear(q);
    return ok;
}

/* ---- shape operators: each output element is an input element (or a fill value) ----------- */

/* out (shape already allocated) from src[i] (an element of x, or the node fill when < 0) */
static void gather_ids(const rten_t *x, const int64_t *src, rten_t *out, uint32_t fill)
{
    for (int64_t i = 0, n = rt_numel(out); i < n; i++)
        out->id[i] = src[i] < 0 ? fill : x->id[src[i]];
}

static int same_ids(ropc_t *c, const rten_t *x, int nd, const int64_t *sh, rten_t *out)
{
    if (!talloc(c, out, nd, sh))
        return 0;
    memcpy(out->id, x->id, (size_t)rt_numel(x) * sizeof(uint32_t));
    return 1;
}

static int f_reshape(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                     const rattr_t *const *A, rten_t *out)
{
    if (A[0] == NULL)
        return fail(c, "missing attribute shape");
    int64_t one, sh[RMAXD], p = 1, n = rt_numel(&in[0]);
    const int64_t *l;
    int nl, infer = -1;
    if (!a_list(c, A[0], &one, &l, &nl))
        return 0;
    if (nl > RMAXD)
        return fail(c, "more than %d dimensions", RMAXD);
    for (int k = 0; k < nl; k++) {
        sh[k] = l[k];
        if (l[k] == -1 && infer < 0)
            infer = k;
        else if (l[k] < 0)
            return fail(c, "invalid size %lld", (long long)l[k]);
        else
            p *= l[k];
    }
    if (infer >= 0 && p > 0 && n % p == 0)
        sh[infer] = n / p, p = n;
    if (p != n)
        return fail(c, "cannot reshape %s (%lld elements) into %s", SHS(in[0].nd, in[0].sh),
                    (long long)n, SHS(nl, l));
    return same_ids(c, &in[0], nl, sh, out);
}

static int f_flatten(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                     const rattr_t *const *A, rten_t *out)
{
    int64_t s0, e0, sh[RMAXD];
    int s, e, nd = in[0].nd, k = 0;
    if (nd == 0)
        return same_ids(c, &in[0], 1, (int64_t[]){1}, out);
    if (!a_int(c, A[0], 0, &s0) || !a_int(c, A[1], -1, &e0) || !normdim(c, s0, nd, &s) ||
        !normdim(c, e0, nd, &e))
        return 0;
    if (s > e)
        return fail(c, "start dim after end dim");
    for (int i = 0; i < nd; i++) {
        if (i <= s || i > e)
            sh[k++] = in[0].sh[i];
        else
            sh[k - 1] *= in[0].sh[i];
    }
    return same_ids(c, &in[0], k, sh, out);
}

static int f_squeeze(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                     const rattr_t *const *A, rten_t *out)
{
    int64_t sh[RMAXD], dd;
    int nd = in[0].nd, k = 0, only = -1;
    if (A[0] != NULL && (!a_int(c, A[0], 0, &dd) || !normdim(c, dd, nd, &only)))
        return 0;
    for (int i = 0; i < nd; i++)
        if (in[0].sh[i] != 1 || (only >= 0 && i != only))
            sh[k++] = in[0].sh[i];
    return same_ids(c, &in[0], k, sh, out);
}

static int f_unsqueeze(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                       const rattr_t *const *A, rten_t *out)
{
    int64_t sh[RMAXD], dd;
    int nd = in[0].nd, at;
    if (!a_req(c, A[0], "dim", &dd) || !normdim(c, dd, nd + 1, &at))
        return 0;
    if (nd + 1 > RMAXD)
        return fail(c, "more than %d dimensions", RMAXD);
    for (int i = 0, k = 0; i <= nd; i++)
        sh[i] = i == at ? 1 : in[0].sh[k++];
    return same_ids(c, &in[0], nd + 1, sh, out);
}

/* out dim k reads x dim perm[k] */
static int permute_by(ropc_t *c, const rten_t *x, const int *perm, rten_t *out)
{
    int64_t sh[RMAXD], idx[RMAXD], xi[RMAXD];
    for (int k = 0; k < x->nd; k++)
        sh[k] = x->sh[perm[k]];
    if (!talloc(c, out, x->nd, sh))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++) {
        unflat(i, x->nd, sh, idx);
        for (int k = 0; k < x->nd; k++)
            xi[perm[k]] = idx[k];
        out->id[i] = x->id[flat(x->nd, x->sh, xi)];
    }
    return 1;
}

static int f_transpose(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                       const rattr_t *const *A, rten_t *out)
{
    int64_t a, b;
    int p[RMAXD], i, j, nd = in[0].nd;
    if (!a_int(c, A[0], -2, &a) || !a_int(c, A[1], -1, &b) || !normdim(c, a, nd, &i) ||
        !normdim(c, b, nd, &j))
        return 0;
    for (int k = 0; k < nd; k++)
        p[k] = k;
    p[i] = j;
    p[j] = i;
    return permute_by(c, &in[0], p, out);
}

static int f_permute(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                     const rattr_t *const *A, rten_t *out)
{
    int64_t one;
    const int64_t *l;
    int n, p[RMAXD], seen[RMAXD] = {0};
    if (A[0] == NULL)
        return fail(c, "missing attribute dims");
    if (!a_list(c, A[0], &one, &l, &n))
        return 0;
    if (n != in[0].nd)
        return fail(c, "dims has %d entries for a %d-d tensor", n, in[0].nd);
    for (int k = 0; k < n; k++) {
        if (!normdim(c, l[k], n, &p[k]))
            return 0;
        if (seen[p[k]]++)
            return fail(c, "dims is not a permutation");
    }
    return permute_by(c, &in[0], p, out);
}

static int f_expand(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                    const rattr_t *const *A, rten_t *out)
{
    int64_t one, sh[RMAXD];
    const int64_t *l;
    int n;
    const rten_t *x = &in[0];
    if (A[0] == NULL)
        return fail(c, "missing attribute shape");
    if (!a_list(c, A[0], &one, &l, &n))
        return 0;
    if (n < x->nd || n > RMAXD)
        return fail(c, "cannot expand %s to %d dimensions", SHS(x->nd, x->sh), n);
    for (int k = 0; k < n; k++) {
        int64_t xs = k < n - x->nd ? 1 : x->sh[k - (n - x->nd)];
        sh[k] = l[k] == -1 ? xs : l[k];
        if (sh[k] < 0 || (xs != 1 && xs != sh[k]))
            return fail(c, "cannot expand %s to %s", SHS(x->nd, x->sh), SHS(n, l));
    }
    if (!talloc(c, out, n, sh))
        return 0;
    int64_t *m = bmap(x, n, sh);
    if (m == NULL) {
        rt_clear(out);
        return fail(c, "out of memory");
    }
    gather_ids(x, m, out, 0);
    free(m);
    return 1;
}

/* The output of a gather along one dim: out dim `dim` has size m; src(o) gives the input index
   along dim for output index o (or -1: fill). */
static int along(ropc_t *c, const rten_t *x, int dim, int64_t m, int64_t (*src)(int64_t, const int64_t *),
                 const int64_t *arg, uint32_t fill, rten_t *out)
{
    int64_t sh[RMAXD], idx[RMAXD];
    memcpy(sh, x->sh, sizeof(sh));
    sh[dim] = m;
    if (!talloc(c, out, x->nd, sh))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++) {
        unflat(i, x->nd, sh, idx);
        int64_t s = src(idx[dim], arg);
        if (s < 0) {
            out->id[i] = fill;
            continue;
        }
        idx[dim] = s;
        out->id[i] = x->id[flat(x->nd, x->sh, idx)];
    }
    return 1;
}

static int64_t src_affine(int64_t o, const int64_t *a) { return a[0] + o * a[1]; } /* start, step */
static int64_t src_pad(int64_t o, const int64_t *a) { return o < a[0] || o >= a[0] + a[1] ? -1 : o - a[0]; }
static int64_t src_mod(int64_t o, const int64_t *a) { return o % a[0]; }
static int64_t src_div(int64_t o, const int64_t *a) { return o / a[0]; }

static int64_t py_bound(int64_t v, int64_t n)
{
    if (v < 0)
        v += n;
    return v < 0 ? 0 : v > n ? n : v;
}

static int f_slice(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    int64_t dd, s, e, st;
    int dim;
    if (!a_int(c, A[0], 0, &dd) || !normdim(c, dd, in[0].nd, &dim))
        return 0;
    int64_t n = in[0].sh[dim];
    if (!a_int(c, A[1], 0, &s) || !a_int(c, A[2], n, &e) || !a_int(c, A[3], 1, &st))
        return 0;
    if (st < 1)
        return fail(c, "step must be positive");
    s = py_bound(s, n);
    e = py_bound(e, n);
    int64_t m = e > s ? (e - s + st - 1) / st : 0, arg[2] = {s, st};
    return along(c, &in[0], dim, m, src_affine, arg, 0, out);
}

/* chunk index of torch.chunk (ceil-sized chunks; allow_empty: XLA, trailing chunks empty) */
static int f_chunk(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    int64_t k, dd, idx, ae;
    int dim;
    if (!a_req(c, A[0], "chunks", &k) || !a_int(c, A[1], 0, &dd) || !a_req(c, A[2], "index", &idx) ||
        !a_flag(c, A[3], "allow_empty", &ae) || !normdim(c, dd, in[0].nd, &dim))
        return 0;
    if (k < 1)
        return fail(c, "chunks must be positive");
    int64_t n = in[0].sh[dim], cs = (n + k - 1) / k, nch = ae ? k : (cs ? (n + cs - 1) / cs : 0);
    if (idx < 0 || idx >= nch)
        return fail(c, "chunk index out of range (index %lld, %lld elements in chunks of %lld make %lld chunks)",
                    (long long)idx, (long long)n, (long long)cs, (long long)nch);
    int64_t s = idx * cs < n ? idx * cs : n, e = s + cs < n ? s + cs : n, arg[2] = {s, 1};
    return along(c, &in[0], dim, e - s, src_affine, arg, 0, out);
}

static int f_split(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                   rten_t *out)
{
    int64_t one, dd, idx;
    const int64_t *l;
    int nl, dim;
    if (A[0] == NULL)
        return fail(c, "missing attribute sizes");
    if (!a_list(c, A[0], &one, &l, &nl) || !a_int(c, A[1], 0, &dd) || !a_req(c, A[2], "index", &idx) ||
        !normdim(c, dd, in[0].nd, &dim))
        return 0;
    int64_t n = in[0].sh[dim], s = 0, e;
    if (A[0]->kind != RA_LIST) { /* chunks of one size, the last smaller */
        if (one < 1)
            return fail(c, "split size must be positive");
        s = idx * one;
        if (idx < 0 || s >= n)
            return fail(c, "split index %lld out of range", (long long)idx);
        e = s + one < n ? s + one : n;
    } else {
        int64_t tot = 0;
        for (int k = 0; k < nl; k++)
            tot += l[k] < 0 ? 0 : l[k];
        if (tot != n)
            return fail(c, "split sizes sum to %lld, the dimension has %lld", (long long)tot, (long long)n);
        if (idx < 0 || idx >= nl)
            return fail(c, "split index %lld out of range", (long long)idx);
        for (int k = 0; k < idx; k++)
            s += l[k];
        e = s + l[idx];
    }
    int64_t arg[2] = {s, 1};
    return along(c, &in[0], dim, e - s, src_affine, arg, 0, out);
}

static int f_pad(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                 rten_t *out)
{
    int64_t dd, b, a;
    int dim;
    if (!a_int(c, A[0], -1, &dd) || !a_int(c, A[1], 0, &b) || !a_int(c, A[2], 0, &a) ||
        !normdim(c, dd, in[0].nd, &dim))
        return 0;
    if (b < 0 || a < 0)
        return fail(c, "negative padding");
    fmpq_t q;
    fmpq_init(q);
    int ok = A[3] == NULL || a_num(c, A[3], q);
    uint32_t fill = ok ? rs_constq(c->S, q) : 0;
    fmpq_clear(q);
    int64_t arg[2] = {b, in[0].sh[dim]};
    return ok && along(c, &in[0], dim, b + in[0].sh[dim] + a, src_pad, arg, fill, out);
}

/* repeat(x, sizes=[..]) tiles like torch.repeat; repeat(x, dim=, times=) tiles one dim */
static int f_repeat(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                    rten_t *out)
{
    const rten_t *x = &in[0];
    if (A[0] == NULL) {
        int64_t dd, t;
        int dim;
        if (!a_int(c, A[1], 0, &dd) || !a_req(c, A[2], "times", &t) || !normdim(c, dd, x->nd, &dim))
            return 0;
        if (t < 0)
            return fail(c, "negative repeat count");
        return along(c, x, dim, x->sh[dim] * t, src_mod, &x->sh[dim], 0, out);
    }
    int64_t one, sh[RMAXD], xs[RMAXD], idx[RMAXD], xi[RMAXD];
    const int64_t *l;
    int n;
    if (!a_list(c, A[0], &one, &l, &n))
        return 0;
    if (n < x->nd || n > RMAXD)
        return fail(c, "sizes has %d entries for a %d-d tensor", n, x->nd);
    for (int k = 0; k < n; k++) {
        xs[k] = k < n - x->nd ? 1 : x->sh[k - (n - x->nd)];
        if (l[k] < 0)
            return fail(c, "negative repeat count");
        sh[k] = xs[k] * l[k];
    }
    if (!talloc(c, out, n, sh))
        return 0;
    for (int64_t i = 0, m = rt_numel(out); i < m; i++) {
        unflat(i, n, sh, idx);
        for (int k = 0; k < n; k++)
            xi[k] = idx[k] % xs[k];
        out->id[i] = x->id[flat(n, xs, xi)];
    }
    return 1;
}

static int f_repeat_interleave(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                               const rattr_t *const *A, rten_t *out)
{
    int64_t r, dd;
    int dim;
    rten_t fl;
    if (!a_req(c, A[0], "repeats", &r))
        return 0;
    if (r < 1)
        return fail(c, "repeats must be positive");
    if (A[1] == NULL) { /* torch: flatten first */
        int64_t n = rt_numel(&in[0]);
        if (!same_ids(c, &in[0], 1, &n, &fl))
            return 0;
        int ok = along(c, &fl, 0, n * r, src_div, &r, 0, out);
        rt_clear(&fl);
        return ok;
    }
    if (!a_int(c, A[1], 0, &dd) || !normdim(c, dd, in[0].nd, &dim))
        return 0;
    return along(c, &in[0], dim, in[0].sh[dim] * r, src_div, &r, 0, out);
}

static int f_concat(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                    rten_t *out)
{
    int64_t dd, sh[RMAXD], idx[RMAXD];
    int dim, nd = in[0].nd;
    if (!a_int(c, A[0], 0, &dd) || !normdim(c, dd, nd, &dim))
        return 0;
    memcpy(sh, in[0].sh, sizeof(sh));
    sh[dim] = 0;
    for (int k = 0; k < nin; k++) {
        int ok = in[k].nd == nd;
        for (int j = 0; j < nd && ok; j++)
            ok = j == dim || in[k].sh[j] == in[0].sh[j];
        if (!ok)
            return fail(c, "shapes %s and %s do not match outside dim %d", SHS(nd, in[0].sh),
                        SHS(in[k].nd, in[k].sh), dim);
        sh[dim] += in[k].sh[dim];
    }
    if (!talloc(c, out, nd, sh))
        return 0;
    for (int64_t i = 0, n = rt_numel(out); i < n; i++) {
        unflat(i, nd, sh, idx);
        int k = 0;
        while (idx[dim] >= in[k].sh[dim])
            idx[dim] -= in[k++].sh[dim];
        out->id[i] = in[k].id[flat(nd, in[k].sh, idx)];
    }
    return 1;
}

/* ---- lanes: reductions, softmax, norms, cross-entropy -------------------------------------- */

/* The reduction groups of x over the dims in mask: out shape (keepdim or not) and, per output
   element g, its members mem[start[g] .. start[g+1]) in ascending input order. */
typedef struct {
    int64_t ng, *start, *mem;
} groups_t;

static int groups(ropc_t *c, const rten_t *x, const int *mask, int keepdim, int *ond,
                  int64_t *osh, groups_t *G)
{
    int64_t gsh[RMAXD], idx[RMAXD], n = rt_numel(x);
    int k = 0;
    for (int d = 0; d < x->nd; d++) {
        gsh[d] = mask[d] ? 1 : x->sh[d];
        if (!mask[d] || keepdim)
            osh[k++] = gsh[d];
    }
    *ond = k;
    G->ng = 1;
    for (int d = 0; d < x->nd; d++)
        G->ng *= gsh[d];
    G->start = calloc((size_t)G->ng + 1, sizeof(int64_t));
    G->mem = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    int64_t *gof = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (G->start == NULL || G->mem == NULL || gof == NULL) {
        free(G->start), free(G->mem), free(gof);
        c->limit = 1;
        return fail(c, "out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        unflat(i, x->nd, x->sh, idx);
        for (int d = 0; d < x->nd; d++)
            if (mask[d])
                idx[d] = 0;
        gof[i] = flat(x->nd, gsh, idx);
        G->start[gof[i] + 1]++;
    }
    for (int64_t g = 0; g < G->ng; g++)
        G->start[g + 1] += G->start[g];
    int64_t *fill = calloc((size_t)G->ng + 1, sizeof(int64_t));
    if (fill == NULL) {
        free(G->start), free(G->mem), free(gof);
        c->limit = 1;
        return fail(c, "out of memory");
    }
    for (int64_t i = 0; i < n; i++)
        G->mem[G->start[gof[i]] + fill[gof[i]]++] = i;
    free(fill);
    free(gof);
    return 1;
}

static void groups_clear(groups_t *G)
{
    free(G->start);
    free(G->mem);
}

/* the lanes of x along one dim (as groups) */
static int lanes(ropc_t *c, const rten_t *x, int dim, groups_t *G)
{
    int mask[RMAXD] = {0}, ond;
    int64_t osh[RMAXD];
    mask[dim] = 1;
    return groups(c, x, mask, 1, &ond, osh, G);
}

/* the ids of group g's members */
static uint32_t *member_ids(const rten_t *x, const groups_t *G, int64_t g, uint32_t *buf)
{
    for (int64_t j = G->start[g]; j < G->start[g + 1]; j++)
        buf[j - G->start[g]] = x->id[G->mem[j]];
    return buf;
}

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_LSE };

/* log(sum_j exp(ids[j])) */
static uint32_t lse(rstore_t *S, const uint32_t *ids, int64_t n, uint32_t *tmp)
{
    for (int64_t j = 0; j < n; j++)
        tmp[j] = rs_op1(S, RO_EXP, ids[j]);
    return rs_op1(S, RO_LOG, rs_op(S, RO_ADD, tmp, (uint32_t)n));
}

static int f_reduce(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                    const rattr_t *const *A, rten_t *out)
{
    if (nin == 2) /* max(a, b), min(a, b) */
        return rop_binary(c, d->code == R_MAX ? RO_MAX : RO_MIN, &in[0], &in[1], out);
    const rten_t *x = &in[0];
    int mask[RMAXD] = {0}, ond, dim;
    int64_t kd, one, osh[RMAXD];
    if (!a_flag(c, A[1], "keepdim", &kd))
        return 0;
    if (A[0] == NULL && d->code != R_LSE)
        for (int k = 0; k < x->nd; k++)
            mask[k] = 1;
    else {
        const int64_t *l = &one;
        int nl = 1;
        one = -1;
        if (A[0] != NULL && !a_list(c, A[0], &one, &l, &nl))
            return 0;
        for (int k = 0; k < nl; k++) {
            if (!normdim_s(c, l[k], x->nd, 1, &dim))
                return 0;
            if (x->nd > 0)
                mask[dim] = 1;
        }
    }
    groups_t G;
    if (!groups(c, x, mask, kd != 0, &ond, osh, &G))
        return 0;
    uint32_t *buf = malloc((size_t)(2 * rt_numel(x) + 1) * sizeof(uint32_t));
    if (buf == NULL || !talloc(c, out, ond, osh)) {
        free(buf);
        groups_clear(&G);
        return buf ? 0 : fail(c, "out of memory");
    }
    rstore_t *S = c->S;
    int ok = 1, known = -1;
    int64_t cnt = 0; /* a mean's count at the file's sizes, once asked (known: 1, 0 not known) */
    for (int64_t g = 0; g < G.ng && ok; g++) {
        int64_t n = G.start[g + 1] - G.start[g];
        uint32_t *m = member_ids(x, &G, g, buf);
        if (d->code == R_MEAN && known < 0)
            known = real_count(c, x, mask, -1, &cnt);
        if (n == 0 && (d->code == R_MAX || d->code == R_MIN))
            ok = fail(c, "reduction over an empty dimension");
        else if (d->code == R_MEAN && !known)
            ok = 0;
        else if (d->code == R_SUM || d->code == R_MEAN) {
            out->id[g] = rs_op(S, RO_ADD, m, (uint32_t)n);
            if (d->code == R_MEAN)
                out->id[g] = rs_op2(S, RO_DIV, out->id[g], rs_const(S, cnt, 1));
        } else if (d->code == R_LSE)
            out->id[g] = lse(S, m, n, buf + n);
        else
            out->id[g] = rs_op(S, d->code == R_MAX ? RO_MAX : RO_MIN, m, (uint32_t)n);
    }
    free(buf);
    groups_clear(&G);
    if (!ok)
        rt_clear(out);
    return ok;
}

/* softmax(x, dim) / softmax(x, mask) = exp(x) m / sum(exp(x) m); log_softmax; causal_softmax */
enum { SM_SOFT, SM_LOG, SM_CAUSAL };

static int f_softmax(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                     const rattr_t *const *A, rten_t *out)
{
    const rten_t *x = &in[0];
    int64_t dd = -1, off = 0, *mm = NULL;
    int dim;
    if (d->code == SM_CAUSAL) {
        if (x->nd < 2)
            return fail(c, "needs at least 2 dimensions");
        if (!a_int(c, A[0], 0, &off))
            return 0;
    } else if (!a_int(c, A[0], -1, &dd))
        return 0;
    if (!normdim_s(c, d->code == SM_CAUSAL ? -1 : dd, x->nd, 1, &dim))
        return 0;
    if (nin == 2) {
        int nd;
        int64_t sh[RMAXD];
        if (!bshape(c, in[1].nd, in[1].sh, x->nd, x->sh, &nd, sh))
            return 0;
        if (nd != x->nd || memcmp(sh, x->sh, (size_t)nd * sizeof(int64_t)))
            return fail(c, "mask %s does not broadcast to %s", SHS(in[1].nd, in[1].sh), SHS(x->nd, x->sh));
        if ((mm = bmap(&in[1], x->nd, x->sh)) == NULL)
            return fail(c, "out of memory");
    }
    groups_t G;
    if (!lanes(c, x, dim, &G)) {
        free(mm);
        return 0;
    }
    int64_t L = x->nd ? x->sh[dim] : 1, idx[RMAXD];
    uint32_t *e = malloc((size_t)(2 * L + 1) * sizeof(uint32_t));
    if (e == NULL || !talloc(c, out, x->nd, x->sh)) {
        free(e), free(mm), groups_clear(&G);
        return e ? 0 : fail(c, "out of memory");
    }
    rstore_t *S = c->S;
    for (int64_t g = 0; g < G.ng; g++) {
        const int64_t *mem = G.mem + G.start[g];
        int64_t nk = 0;
        if (d->code == SM_LOG) {
            uint32_t z = lse(S, member_ids(x, &G, g, e), L, e + L);
            for (int64_t j = 0; j < L; j++)
                out->id[mem[j]] = rs_op2(S, RO_SUB, x->id[mem[j]], z);
            continue;
        }
        int64_t q = 0;
        if (d->code == SM_CAUSAL) {
            unflat(mem[0], x->nd, x->sh, idx);
            q = idx[x->nd - 2];
        }
        for (int64_t j = 0; j < L; j++) {
            if (d->code == SM_CAUSAL && j > q + off)
                continue;
            uint32_t v = rs_op1(S, RO_EXP, x->id[mem[j]]);
            if (mm)
                v = rs_op2(S, RO_MUL, v, in[1].id[mm[mem[j]]]);
            e[nk++] = v;
        }
        uint32_t z = nk ? rs_op(S, RO_ADD, e, (uint32_t)nk) : 0;
        for (int64_t j = 0, k = 0; j < L; j++)
            out->id[mem[j]] = (d->code == SM_CAUSAL && j > q + off) ? 0 : rs_op2(S, RO_DIV, e[k++], z);
    }
    free(e);
    free(mm);
    groups_clear(&G);
    return 1;
}

/* causal_mask(x, offset=0): 1 at key j <= query i + offset of the last two dims, else 0 */
static int f_causal_mask(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                         const rattr_t *const *A, rten_t *out)
{
    const rten_t *x = &in[0];
    int64_t off = 0, idx[RMAXD];
    if (x->nd < 2)
        return fail(c, "needs at least 2 dimensions");
    if (!a_int(c, A[0], 0, &off) || !talloc(c, out, x->nd, x->sh))
        return 0;
    uint32_t one = rs_const(c->S, 1, 1);
    if (one == 0)
        return fail(c, "out of memory");
    for (int64_t i = 0, n = rt_numel(x); i < n; i++) {
        unflat(i, x->nd, x->sh, idx);
        out->id[i] = idx[x->nd - 1] <= idx[x->nd - 2] + off ? one : 0;
    }
    return 1;
}

/* layernorm (code 1): (x - mean) rsqrt(var + eps) [* w [+ b]]; rmsnorm (code 0):
   x rsqrt(mean(x^2) + eps) [* w], over the dim `dim` (default the last) */
static int f_norm(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                  rten_t *out)
{
    const rten_t *x = &in[0];
    int64_t dd;
    int dim;
    fmpq_t eps;
    fmpq_init(eps);
    fmpq_set_si(eps, 1, d->code ? 100000 : 1000000);
    if ((A[0] != NULL && !a_num(c, A[0], eps)) || !a_int(c, A[1], -1, &dd) ||
        !normdim_s(c, dd, x->nd, 1, &dim)) {
        fmpq_clear(eps);
        return 0;
    }
    groups_t G;
    rten_t y, t;
    rt_init(&y);
    rt_init(&t);
    if (!lanes(c, x, dim, &G)) {
        fmpq_clear(eps);
        return 0;
    }
    int64_t L = x->nd ? x->sh[dim] : 1;
    uint32_t *m = malloc((size_t)(4 * L + 1) * sizeof(uint32_t));
    int oom = m == NULL, ok = !oom && talloc(c, &y, x->nd, x->sh);
    rstore_t *S = c->S;
    int64_t Lr = L;
    ok = ok && real_count(c, x, NULL, dim, &Lr);
    uint32_t ke = rs_constq(S, eps), kn = rs_const(S, Lr, 1);
    for (int64_t g = 0; ok && g < G.ng; g++) {
        const int64_t *mem = G.mem + G.start[g];
        uint32_t *v = member_ids(x, &G, g, m), *dv = m + L, *pr = m + 2 * L;
        if (d->code) {
            uint32_t mu = rs_op2(S, RO_DIV, rs_op(S, RO_ADD, v, (uint32_t)L), kn);
            for (int64_t j = 0; j < L; j++)
                dv[j] = rs_op2(S, RO_SUB, v[j], mu);
        } else
            memcpy(dv, v, (size_t)L * sizeof(uint32_t));
        for (int64_t j = 0; j < L; j++)
            pr[2 * j] = pr[2 * j + 1] = dv[j];
        uint32_t u = rs_op2(S, RO_DIV, rs_op(S, RO_DOT, pr, (uint32_t)(2 * L)), kn);
        uint32_t r = rs_op1(S, RO_RSQRT, rs_op2(S, RO_ADD, u, ke));
        for (int64_t j = 0; j < L; j++)
            y.id[mem[j]] = rs_op2(S, RO_MUL, dv[j], r);
    }
    free(m);
    groups_clear(&G);
    fmpq_clear(eps);
    if (!ok) {
        rt_clear(&y);
        return oom ? fail(c, "out of memory") : 0;
    }
    for (int k = 1; k < nin && ok; k++) {
        ok = rop_binary(c, k == 1 ? RO_MUL : RO_ADD, &y, &in[k], &t);
        rt_clear(&y);
        y = t;
        rt_init(&t);
    }
    if (ok)
        *out = y;
    else
        rt_clear(&y);
    return ok;
}

/* cross_entropy(logits [.., V], target [.., V], [mask [..]], label_smoothing, reduction):
   loss_p = (1-eps) * -sum_v t_v lsm_v + eps * mean_v(-lsm_v), lsm = log_softmax(logits) */
static int f_ce(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                rten_t *out)
{
    const rten_t *x = &in[0], *t = &in[1], *mk = nin > 2 ? &in[2] : NULL;
    if (x->nd < 1 || t->nd != x->nd || memcmp(t->sh, x->sh, (size_t)x->nd * sizeof(int64_t)))
        return fail(c, "target %s must have the shape of the logits %s", SHS(t->nd, t->sh),
                    SHS(x->nd, x->sh));
    if (mk && (mk->nd != x->nd - 1 || memcmp(mk->sh, x->sh, (size_t)mk->nd * sizeof(int64_t))))
        return fail(c, "mask %s must have the shape of the positions %s", SHS(mk->nd, mk->sh),
                    SHS(x->nd - 1, x->sh));
    const char *red = A[1] == NULL ? "mean" : A[1]->kind == RA_NAME ? A[1]->name : "";
    if (strcmp(red, "mean") && strcmp(red, "sum") && strcmp(red, "none"))
        return fail(c, "reduction must be mean, sum or none");
    fmpq_t eps, q;
    fmpq_init(eps);
    fmpq_init(q);
    if (A[0] != NULL && !a_num(c, A[0], eps)) {
        fmpq_clear(eps);
        fmpq_clear(q);
        return 0;
    }
    rstore_t *S = c->S;
    int64_t V = x->sh[x->nd - 1], P = V ? rt_numel(x) / V : 0;
    uint32_t *buf = V ? malloc((size_t)(4 * V + P + 1) * sizeof(uint32_t)) : NULL;
    int oom = V && buf == NULL, ok = buf != NULL || fail(c, V ? "out of memory" : "no classes");
    uint32_t *loss = buf, *pr = buf + P, *ls = pr + 2 * V, *tmp = ls + V;
    fmpq_one(q);
    fmpq_sub(q, q, eps);
    int64_t Vr = V, Pr = P;
    int allbut[RMAXD] = {0};
    for (int k = 0; k + 1 < x->nd; k++)
        allbut[k] = 1;
    ok = ok && real_count(c, x, NULL, x->nd - 1, &Vr) && real_count(c, x, allbut, -1, &Pr);
    uint32_t k1 = rs_constq(S, q), ke = rs_constq(S, eps), kv = rs_const(S, Vr, 1);
    for (int64_t p = 0; ok && p < P; p++) {
        const uint32_t *xs = x->id + p * V;
        uint32_t z = lse(S, xs, V, tmp);
        for (int64_t v = 0; v < V; v++) {
            ls[v] = rs_op2(S, RO_SUB, xs[v], z);
            pr[2 * v] = t->id[p * V + v];
            pr[2 * v + 1] = ls[v];
        }
        uint32_t nll = rs_op1(S, RO_NEG, rs_op(S, RO_DOT, pr, (uint32_t)(2 * V)));
        loss[p] = rs_op2(S, RO_MUL, k1, nll);
        if (!fmpq_is_zero(eps)) {
            uint32_t sm = rs_op2(S, RO_DIV, rs_op1(S, RO_NEG, rs_op(S, RO_ADD, ls, (uint32_t)V)), kv);
            loss[p] = rs_op2(S, RO_ADD, loss[p], rs_op2(S, RO_MUL, ke, sm));
        }
        if (mk)
            loss[p] = rs_op2(S, RO_MUL, mk->id[p], loss[p]);
    }
    if (ok && !strcmp(red, "none")) {
        ok = talloc(c, out, x->nd - 1, x->sh);
        if (ok)
            memcpy(out->id, loss, (size_t)P * sizeof(uint32_t));
    } else if (ok && (ok = talloc(c, out, 0, NULL))) {
        uint32_t s = rs_op(S, RO_ADD, loss, (uint32_t)P);
        if (!strcmp(red, "mean"))
            s = rs_op2(S, RO_DIV, s, mk ? rs_op(S, RO_ADD, mk->id, (uint32_t)P) : rs_const(S, Pr, 1));
        out->id[0] = s;
    }
    free(buf);
    fmpq_clear(eps);
    fmpq_clear(q);
    return oom ? 0 : ok;
}

/* ---- matmul, embedding, rope, attention, top-k ------------------------------------------ */

/* torch.matmul: 1-d operands are promoted (and the promoted dim removed), batch dims broadcast */
static int matmul(ropc_t *c, const rten_t *a, const rten_t *b, rten_t *out)
{
    if (a->nd < 1 || b->nd < 1)
        return fail(c, "operands must have at least one dimension");
    int64_t as[RMAXD + 1], bs[RMAXD + 1], bsh[RMAXD + 1], osh[RMAXD + 1], idx[RMAXD + 1];
    int an = a->nd, bn = b->nd, pa = an == 1, pb = bn == 1, nb;
    if (pa)
        as[0] = 1, as[1] = a->sh[0], an = 2;
    else
        memcpy(as, a->sh, (size_t)an * sizeof(int64_t));
    if (pb)
        bs[0] = b->sh[0], bs[1] = 1, bn = 2;
    else
        memcpy(bs, b->sh, (size_t)bn * sizeof(int64_t));
    int64_t M = as[an - 2], K = as[an - 1], N = bs[bn - 1];
    if (bs[bn - 2] != K)
        return fail(c, "inner dimensions differ: %s and %s", SHS(a->nd, a->sh), SHS(b->nd, b->sh));
    if (!bshape(c, an - 2, as, bn - 2, bs, &nb, bsh))
        return 0;
    int ond = 0;
    for (int k = 0; k < nb; k++)
        osh[ond++] = bsh[k];
    if (!pa)
        osh[ond++] = M;
    if (!pb)
        osh[ond++] = N;
    if (!talloc(c, out, ond, osh))
        return 0;
    uint32_t *pr = malloc((size_t)(2 * K + 1) * sizeof(uint32_t));
    if (pr == NULL) {
        rt_clear(out);
        return fail(c, "out of memory");
    }
    int64_t nbat = 1;
    for (int k = 0; k < nb; k++)
        nbat *= bsh[k];
    for (int64_t bt = 0; bt < nbat; bt++) {
        unflat(bt, nb, bsh, idx);
        int64_t ao = 0, bo = 0; /* offsets of the batch in a and b (broadcast) */
        for (int k = 0; k < an - 2; k++)
            ao = ao * as[k] + (as[k] == 1 ? 0 : idx[k + nb - (an - 2)]);
        for (int k = 0; k < bn - 2; k++)
            bo = bo * bs[k] + (bs[k] == 1 ? 0 : idx[k + nb - (bn - 2)]);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                for (int64_t k = 0; k < K; k++) {
                    pr[2 * k] = a->id[(ao * M + i) * K + k];
                    pr[2 * k + 1] = b->id[(bo * K + k) * N + j];
                }
                out->id[(bt * M + i) * N + j] = rs_op(c->S, RO_DOT, pr, (uint32_t)(2 * K));
            }
    }
    free(pr);
    return 1;
}

static int f_matmul(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                    const rattr_t *const *A, rten_t *out)
{
    return matmul(c, &in[0], &in[1], out);
}

/* embedding(onehot [.., V], table [V, H]) = onehot @ table; embedding(table, ids=, shape=) */
static int f_embedding(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                       const rattr_t *const *A, rten_t *out)
{
    if (nin == 2) {
        if (in[1].nd != 2)
            return fail(c, "the table must be 2-d, not %s", SHS(in[1].nd, in[1].sh));
        return matmul(c, &in[0], &in[1], out);
    }
    const rten_t *t = &in[0];
    int64_t one, osh[RMAXD], n;
    const int64_t *ids, *shp;
    int ni, ns;
    if (A[0] == NULL)
        return fail(c, "needs a one-hot tensor and a table, or ids=[..]");
    if (t->nd < 1 || !a_list(c, A[0], &one, &ids, &ni))
        return t->nd < 1 ? fail(c, "the table must have a dimension") : 0;
    int64_t one2 = ni;
    shp = &one2, ns = 1;
    if (A[1] != NULL && !a_list(c, A[1], &one, &shp, &ns))
        return 0;
    n = 1;
    for (int k = 0; k < ns; k++)
        n *= shp[k];
    if (n != ni || ns + t->nd - 1 > RMAXD)
        return fail(c, "shape does not hold %d ids", ni);
    memcpy(osh, shp, (size_t)ns * sizeof(int64_t));
    memcpy(osh + ns, t->sh + 1, (size_t)(t->nd - 1) * sizeof(int64_t));
    if (!talloc(c, out, ns + t->nd - 1, osh))
        return 0;
    int64_t row = rt_numel(t) / (t->sh[0] ? t->sh[0] : 1);
    for (int k = 0; k < ni; k++) {
        if (ids[k] < 0 || ids[k] >= t->sh[0]) {
            rt_clear(out);
            return fail(c, "id %lld out of range [0, %lld)", (long long)ids[k], (long long)t->sh[0]);
        }
        memcpy(out->id + k * row, t->id + ids[k] * row, (size_t)row * sizeof(uint32_t));
    }
    return 1;
}

/* rope(x [.., S, D], cos, sin): tables broadcast to [.., S, D/2] (rotate_half pairs (i, i+D/2),
   interleaved: (2i, 2i+1)) or to [.., S, D]; out_j = x_j C_j - x_p C... see docs */
static int f_rope(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                  rten_t *out)
{
    const rten_t *x = &in[0];
    int64_t il, D = x->nd ? x->sh[x->nd - 1] : 0, tsh[RMAXD], idx[RMAXD];
    if (!a_flag(c, A[0], "interleaved", &il))
        return 0;
    if (x->nd < 2 || D % 2)
        return fail(c, "x must be [.., S, D] (two axes or more) with D even, not %s",
                    SHS(x->nd, x->sh));
    int64_t T = in[1].nd ? in[1].sh[in[1].nd - 1] : 0;
    if ((T != D && T != D / 2) || in[2].nd != in[1].nd || memcmp(in[1].sh, in[2].sh, (size_t)in[1].nd * sizeof(int64_t)))
        return fail(c, "cos/sin tables %s and %s must end in D/2 = %lld or D = %lld",
                    SHS(in[1].nd, in[1].sh), SHS(in[2].nd, in[2].sh), (long long)(D / 2), (long long)D);
    memcpy(tsh, x->sh, sizeof(tsh));
    tsh[x->nd - 1] = T;
    int nd;
    int64_t bsh[RMAXD];
    if (!bshape(c, in[1].nd, in[1].sh, x->nd, tsh, &nd, bsh))
        return 0;
    if (nd != x->nd || memcmp(bsh, tsh, (size_t)nd * sizeof(int64_t)))
        return fail(c, "cos/sin tables %s do not broadcast to %s", SHS(in[1].nd, in[1].sh), SHS(nd, tsh));
    int64_t *mc = bmap(&in[1], x->nd, tsh);
    if (mc == NULL || !talloc(c, out, x->nd, x->sh)) {
        free(mc);
        return mc ? 0 : fail(c, "out of memory");
    }
    rstore_t *S = c->S;
    for (int64_t i = 0, n = rt_numel(x); i < n; i++) {
        unflat(i, x->nd, x->sh, idx);
        int64_t j = idx[x->nd - 1], p, f;
        int neg;
        if (il)
            p = j ^ 1, neg = !(j & 1), f = j / 2;
        else
            p = j < D / 2 ? j + D / 2 : j - D / 2, neg = j < D / 2, f = j % (D / 2);
        int64_t ti = T == D ? j : f, base = i - j;
        idx[x->nd - 1] = ti;
        int64_t tf = mc[flat(x->nd, tsh, idx)];
        uint32_t a = rs_op2(S, RO_MUL, x->id[i], in[1].id[tf]);
        uint32_t b = rs_op2(S, RO_MUL, x->id[base + p], in[2].id[tf]);
        out->id[i] = rs_op2(S, neg ? RO_SUB : RO_ADD, a, b);
    }
    free(mc);
    return 1;
}

/* attention(q [.., Hq, Sq, D], k [.., Hkv, Sk, D], v [.., Hkv, Sk, Dv], [mask], scale=, causal=,
   offset=): softmax over the kept keys (causal: j <= i + offset; a row without keys is 0) of
   q.k * scale (default rsqrt(D)), times the mask, applied to v; query head h reads kv head
   h / (Hq/Hkv) */
static int f_attention(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                       const rattr_t *const *A, rten_t *out)
{
    const rten_t *q = &in[0], *k = &in[1], *v = &in[2];
    int nd = q->nd;
    if (nd < 3 || k->nd != nd || v->nd != nd || memcmp(q->sh, k->sh, (size_t)(nd - 3) * 8) ||
        memcmp(q->sh, v->sh, (size_t)(nd - 3) * 8))
        return fail(c, "q %s, k %s, v %s must be [.., H, S, D] with the same leading dims",
                    SHS(q->nd, q->sh), SHS(k->nd, k->sh), SHS(v->nd, v->sh));
    int64_t Hq = q->sh[nd - 3], Sq = q->sh[nd - 2], D = q->sh[nd - 1], Hk = k->sh[nd - 3],
            Sk = k->sh[nd - 2], Dv = v->sh[nd - 1], causal, off, osh[RMAXD], msh[RMAXD];
    if (Hk == 0 || Hq % Hk || k->sh[nd - 1] != D || v->sh[nd - 3] != Hk || v->sh[nd - 2] != Sk)
        return fail(c, "q %s, k %s and v %s do not fit (GQA needs Hq divisible by Hkv)",
                    SHS(q->nd, q->sh), SHS(k->nd, k->sh), SHS(v->nd, v->sh));
    if (!a_flag(c, A[1], "causal", &causal) || !a_int(c, A[2], 0, &off))
        return 0;
    rstore_t *S = c->S;
    uint32_t sc;
    if (A[0] != NULL) {
        fmpq_t s;
        fmpq_init(s);
        int ok = a_num(c, A[0], s);
        sc = rs_constq(S, s);
        fmpq_clear(s);
        if (!ok)
            return 0;
    } else {
        int64_t Dr = D; /* the default 1/sqrt(D): D at the file's sizes */
        if (!real_count(c, q, NULL, nd - 1, &Dr))
            return 0;
        sc = rs_op1(S, RO_RSQRT, rs_const(S, Dr, 1));
    }
    int64_t *mm = NULL;
    memcpy(msh, q->sh, (size_t)nd * 8);
    msh[nd - 1] = Sk;
    if (nin == 4) {
        int mnd;
        int64_t bs[RMAXD];
        if (!bshape(c, in[3].nd, in[3].sh, nd, msh, &mnd, bs) || mnd != nd || memcmp(bs, msh, (size_t)nd * 8))
            return fail(c, "mask %s does not broadcast to %s", SHS(in[3].nd, in[3].sh), SHS(nd, msh));
        if ((mm = bmap(&in[3], nd, msh)) == NULL)
            return fail(c, "out of memory");
    }
    memcpy(osh, q->sh, (size_t)nd * 8);
    osh[nd - 1] = Dv;
    uint32_t *pr = malloc((size_t)(2 * (Sk > D ? Sk : D) + Sk + 1) * sizeof(uint32_t));
    if (pr == NULL || !talloc(c, out, nd, osh)) {
        free(pr), free(mm);
        return pr ? 0 : fail(c, "out of memory");
    }
    uint32_t *e = pr + 2 * (Sk > D ? Sk : D);
    int64_t per = Hq * Sq * D, nbat = per > 0 ? rt_numel(q) / per : 0;
    for (int64_t b = 0; b < nbat; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Sq; i++) {
                int64_t g = h / (Hq / Hk), qo = ((b * Hq + h) * Sq + i) * D;
                int64_t nk = causal ? (i + off + 1 < 0 ? 0 : i + off + 1 > Sk ? Sk : i + off + 1) : Sk;
                for (int64_t j = 0; j < nk; j++) {
                    int64_t ko = ((b * Hk + g) * Sk + j) * D;
                    for (int64_t t = 0; t < D; t++)
                        pr[2 * t] = q->id[qo + t], pr[2 * t + 1] = k->id[ko + t];
                    uint32_t s = rs_op2(S, RO_MUL, rs_op(S, RO_DOT, pr, (uint32_t)(2 * D)), sc);
                    e[j] = rs_op1(S, RO_EXP, s);
                    if (mm)
                        e[j] = rs_op2(S, RO_MUL, e[j], in[3].id[mm[((b * Hq + h) * Sq + i) * Sk + j]]);
                }
                uint32_t z = nk ? rs_op(S, RO_ADD, e, (uint32_t)nk) : 0;
                for (int64_t j = 0; j < nk; j++)
                    e[j] = rs_op2(S, RO_DIV, e[j], z);
                for (int64_t t = 0; t < Dv; t++) {
                    for (int64_t j = 0; j < nk; j++)
                        pr[2 * j] = e[j], pr[2 * j + 1] = v->id[((b * Hk + g) * Sk + j) * Dv + t];
                    out->id[((b * Hq + h) * Sq + i) * Dv + t] = nk ? rs_op(S, RO_DOT, pr, (uint32_t)(2 * nk)) : 0;
                }
            }
    free(pr);
    free(mm);
    return 1;
}

/* Lane positions a, b of x: does a come before b in top-k's order (larger first, ties to the
   lower position)?  An undecided comparison (overlapping balls, a taint) sets *t. */
static int topk_before(rstore_t *S, const rten_t *x, const int64_t *mem, int64_t a, int64_t b,
                       int *t)
{
    const rv_t *va = rs_val(S, x->id[mem[a]]), *vb = rs_val(S, x->id[mem[b]]);
    int cm = rv_cmp(va, vb, S->prec);
    if (cm == 2)
        *t |= RT_UNDEC | va->taint | vb->taint;
    return cm == 1 || (cm == 0 && a < b);
}

/* topk_mask(x, k, dim=-1): 1 for the k largest of each lane, ties to the lower index.  Each
   lane's positions are merge-sorted (L log L comparisons: a lane of 200,004 ties compared every
   pair, 4e10 comparisons, and hung: the plan-level fuzzer, session 45); decided comparisons are
   transitive, so with none undecided the order is the values' */
static int f_topk(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                  rten_t *out)
{
    const rten_t *x = &in[0];
    int64_t k, dd;
    int dim;
    if (!a_req(c, A[0], "k", &k) || !a_int(c, A[1], -1, &dd) || !normdim_s(c, dd, x->nd, 1, &dim))
        return 0;
    int64_t L = x->nd ? x->sh[dim] : 1;
    if (k < 0 || k > L)
        return fail(c, "k = %lld out of range [0, %lld]", (long long)k, (long long)L);
    groups_t G;
    if (!lanes(c, x, dim, &G))
        return 0;
    int64_t *ord = malloc((size_t)(2 * L + 1) * sizeof(int64_t));
    if (ord == NULL || !talloc(c, out, x->nd, x->sh)) {
        free(ord), groups_clear(&G);
        return ord ? 0 : fail(c, "out of memory");
    }
    int64_t *tmp = ord + L;
    rstore_t *S = c->S;
    for (int64_t g = 0; g < G.ng; g++) {
        const int64_t *mem = G.mem + G.start[g];
        int t = 0;
        for (int64_t i = 0; i < L; i++)
            ord[i] = i;
        for (int64_t w = 1; w < L; w *= 2) { /* bottom-up merge sort, stable */
            for (int64_t lo = 0; lo < L; lo += 2 * w) {
                int64_t mid = lo + w < L ? lo + w : L, hi = lo + 2 * w < L ? lo + 2 * w : L;
                int64_t i = lo, j = mid, o = lo;
                while (i < mid && j < hi)
                    tmp[o++] = topk_before(S, x, mem, ord[j], ord[i], &t) ? ord[j++] : ord[i++];
                while (i < mid)
                    tmp[o++] = ord[i++];
                while (j < hi)
                    tmp[o++] = ord[j++];
            }
            memcpy(ord, tmp, (size_t)L * sizeof(int64_t));
        }
        /* a tie across the boundary: the last kept and the first dropped are equal */
        if (k > 0 && k < L &&
            rv_cmp(rs_val(S, x->id[mem[ord[k - 1]]]), rs_val(S, x->id[mem[ord[k]]]), S->prec) == 0)
            S->topk_tie = 1;
        for (int64_t r = 0; r < L; r++)
            tmp[ord[r]] = r; /* each position's rank */
        for (int64_t i = 0; i < L; i++) {
            rv_t v;
            rv_init(&v);
            if (t)
                rv_bad(&v, t);
            else
                rv_set_si(&v, tmp[i] < k, 1);
            out->id[mem[i]] = rs_leaf(S, &v);
            rv_clear(&v);
        }
    }
    free(ord);
    groups_clear(&G);
    return 1;
}

/* ---- gradient operators ----------------------------------------------------------------- */

static const rdef_t *find_def(const char *name);

/* softmax_grad(y, dy, dim): y (dy - sum(y dy)); log_softmax_grad: dy - exp(y) sum(dy) */
static int f_softmax_grad(ropc_t *c, const rdef_t *d, const rten_t *in, int nin,
                          const rattr_t *const *A, rten_t *out)
{
    const rten_t *y = &in[0], *dy = &in[1];
    int64_t dd;
    int dim;
    if (y->nd != dy->nd || memcmp(y->sh, dy->sh, (size_t)y->nd * 8))
        return fail(c, "y %s and dy %s differ in shape", SHS(y->nd, y->sh), SHS(dy->nd, dy->sh));
    if (!a_int(c, A[0], -1, &dd) || !normdim_s(c, dd, y->nd, 1, &dim))
        return 0;
    groups_t G;
    if (!lanes(c, y, dim, &G))
        return 0;
    int64_t L = y->nd ? y->sh[dim] : 1;
    uint32_t *pr = malloc((size_t)(2 * L + 1) * sizeof(uint32_t));
    if (pr == NULL || !talloc(c, out, y->nd, y->sh)) {
        free(pr), groups_clear(&G);
        return pr ? 0 : fail(c, "out of memory");
    }
    rstore_t *S = c->S;
    for (int64_t g = 0; g < G.ng; g++) {
        const int64_t *mem = G.mem + G.start[g];
        for (int64_t j = 0; j < L; j++)
            pr[2 * j] = y->id[mem[j]], pr[2 * j + 1] = dy->id[mem[j]];
        uint32_t s = d->code == SM_LOG ? rs_op(S, RO_ADD, member_ids(dy, &G, g, pr), (uint32_t)L)
                                       : rs_op(S, RO_DOT, pr, (uint32_t)(2 * L));
        for (int64_t j = 0; j < L; j++) {
            uint32_t yj = y->id[mem[j]], gj = dy->id[mem[j]];
            out->id[mem[j]] = d->code == SM_LOG
                ? rs_op2(S, RO_SUB, gj, rs_op2(S, RO_MUL, rs_op1(S, RO_EXP, yj), s))
                : rs_op2(S, RO_MUL, yj, rs_op2(S, RO_SUB, gj, s));
        }
    }
    free(pr);
    groups_clear(&G);
    return 1;
}

enum { G_PLAIN = 0, G_OPTDY = 1, G_ZEROX = 2 };

/* <op>_grad(forward inputs.., dy): the forward operator on fresh leaves of a local tape, dy as
   the seed, one reverse sweep, the adjoint of forward input gidx; the local tape is dropped. */
static int f_grad(ropc_t *c, const rdef_t *d, const rten_t *in, int nin, const rattr_t *const *A,
                  rten_t *out)
{
    if (c->no_grad_ops)
        return fail(c, "cannot differentiate through a gradient operator (the model trains)");
    const rdef_t *b = find_def(d->base);
    rstore_t *S = c->S;
    rten_t L[5], y;
    const rten_t *dy = &in[nin - 1], *src[5];
    int nb = nin - 1, ok = 1, zerox = d->code == G_ZEROX;
    if (zerox) /* rope_grad(dy, cos, sin): rope is linear in x, any x (0) will do */
        dy = &in[0], nb = nin;
    else if (d->code == G_OPTDY && nin < 4)
        nb = nin, dy = NULL;
    if (nb < b->lo || nb > b->hi)
        return fail(c, "expected %d to %d tensor arguments", b->lo + 1, b->hi + 1);
    for (int k = 0; k < nb; k++)
        src[k] = &in[k];
    size_t mark = S->len;
    rt_init(&y);
    for (int k = 0; k < nb; k++)
        rt_init(&L[k]);
    for (int k = 0; k < nb && ok; k++)
        if ((ok = talloc(c, &L[k], src[k]->nd, src[k]->sh)))
            for (int64_t i = 0, n = rt_numel(src[k]); i < n; i++)
                L[k].id[i] = zerox && k == 0 ? rs_const(S, 0, 1) : rs_leaf_of(S, src[k]->id[i]);
    const char *op = c->op;
    c->op = b->name;
    ok = ok && b->fn(c, b, L, nb, A, &y);
    c->op = op;
    char sa[160];
    if (ok && dy && (dy->nd != y.nd || memcmp(dy->sh, y.sh, (size_t)y.nd * 8))) {
        rt_shape_str(sa, sizeof(sa), y.nd, y.sh);
        ok = fail(c, "gradient shape %s does not match output shape %s", SHS(dy->nd, dy->sh), sa);
    }
    int gi = d->gidx < 0 ? nb - 1 : d->gidx;
    int64_t n = ok ? rt_numel(&L[gi]) : 0, na = (int64_t)(S->len - mark);
    rv_t *adj = ok ? malloc((size_t)(na + 1) * sizeof(rv_t)) : NULL, *res = NULL;
    long long charged = adj ? (na + n) * (long long)sizeof(rv_t) : 0;
    if (ok && (adj == NULL || rs_charge(S, charged) < 0)) {
        c->limit = 1;
        ok = fail(c, "out of memory (the limit max-mem)");
        free(adj);
        adj = NULL;
    }
    if (adj != NULL) {
        for (int64_t i = 0; i < na; i++)
            rv_init(&adj[i]);
        rv_t one;
        rv_init(&one);
        rv_set_si(&one, 1, 1);
        for (int64_t i = 0, m = rt_numel(&y); i < m; i++)
            if (y.id[i] >= mark)
                rv_add(&adj[y.id[i] - mark], &adj[y.id[i] - mark], dy ? rs_val(S, dy->id[i]) : &one, S->prec);
        rv_clear(&one);
        rs_sweep(S, mark, adj);
        res = malloc((size_t)(n + 1) * sizeof(rv_t));
        for (int64_t i = 0; res && i < n; i++) {
            rv_init(&res[i]);
            rv_set(&res[i], &adj[L[gi].id[i] - mark]);
        }
        for (int64_t i = 0; i < na; i++)
            rv_clear(&adj[i]);
        free(adj);
    }
    rs_truncate(S, mark);
    if (ok && res != NULL && (ok = talloc(c, out, L[gi].nd, L[gi].sh)))
        for (int64_t i = 0; i < n; i++)
            out->id[i] = rs_leaf(S, &res[i]);
    if (ok && res == NULL)
        ok = fail(c, "out of memory");
    for (int64_t i = 0; res && i < n; i++)
        rv_clear(&res[i]);
    free(res);
    rs_charge(S, -charged);
    for (int k = 0; k < nb; k++)
        rt_clear(&L[k]);
    rt_clear(&y);
    return ok;
}

/* ---- the table ------------------------------------------------------------------------------- */

#define U(nm, op) {nm, f_unary, 1, 1, "", 0, op, NULL, 0}
#define B(nm, op) {nm, f_binary, 2, 2, "", 0, op, NULL, 0}
#define C(nm, k) {nm, f_cmp, 2, 2, "", 0, k, NULL, 0}
#define G(nm, base, idx, lo, hi, keys, npos) {nm, f_grad, lo, hi, keys, npos, G_PLAIN, base, idx}

static const rdef_t defs[] = {
    U("neg", RO_NEG), U("exp", RO_EXP), U("log", RO_LOG), U("sqrt", RO_SQRT),
    U("rsqrt", RO_RSQRT), U("tanh", RO_TANH), U("sigmoid", RO_SIGMOID), U("silu", RO_SILU),
    U("gelu", RO_GELU), U("erf", RO_ERF), U("relu", RO_RELU), U("abs", RO_ABS),
    B("add", RO_ADD), B("sub", RO_SUB), B("mul", RO_MUL), B("div", RO_DIV),
    B("maximum", RO_MAX), B("minimum", RO_MIN),
    {"scale", f_scale, 1, 1, "c|factor", 1, 0, NULL, 0},
    {"pow", f_pow, 1, 1, "k|exponent", 1, 0, NULL, 0},
    {"clamp", f_clamp, 1, 3, "lo|min,hi|max", 2, 0, NULL, 0},
    {"where", f_where, 3, 3, "", 0, 0, NULL, 0},
    C("lt", 0), C("le", 1), C("gt", 2), C("ge", 3), C("eq", 4), C("ne", 5),
    {"dropout", f_dropout, 2, 2, "p", 1, 0, NULL, 0},
    {"reshape", f_reshape, 1, 1, "shape", 1, 0, NULL, 0},
    {"view", f_reshape, 1, 1, "shape", 1, 0, NULL, 0},
    {"flatten", f_flatten, 1, 1, "start|start_dim,end|end_dim", 2, 0, NULL, 0},
    {"squeeze", f_squeeze, 1, 1, "dim", 1, 0, NULL, 0},
    {"unsqueeze", f_unsqueeze, 1, 1, "dim", 1, 0, NULL, 0},
    {"transpose", f_transpose, 1, 1, "dim0|d0,dim1|d1", 2, 0, NULL, 0},
    {"permute", f_permute, 1, 1, "dims", 1, 0, NULL, 0},
    {"expand", f_expand, 1, 1, "shape|size", 1, 0, NULL, 0},
    {"broadcast_to", f_expand, 1, 1, "shape|size", 1, 0, NULL, 0},
    {"slice", f_slice, 1, 1, "dim,start,end,step", 4, 0, NULL, 0},
    {"chunk", f_chunk, 1, 1, "chunks,dim,index,allow_empty", 3, 0, NULL, 0},
    {"split", f_split, 1, 1, "sizes|size|split_size,dim,index", 3, 0, NULL, 0},
    {"pad", f_pad, 1, 1, "dim,before,after,value", 4, 0, NULL, 0},
    {"repeat", f_repeat, 1, 1, "sizes,dim,times", 1, 0, NULL, 0},
    {"repeat_interleave", f_repeat_interleave, 1, 1, "repeats,dim", 2, 0, NULL, 0},
    {"concat", f_concat, 1, -1, "dim", 1, 1, NULL, 0},
    {"cat", f_concat, 1, -1, "dim", 1, 1, NULL, 0},
    {"sum", f_reduce, 1, 1, "dim,keepdim", 2, R_SUM, NULL, 0},
    {"mean", f_reduce, 1, 1, "dim,keepdim", 2, R_MEAN, NULL, 0},
    {"max", f_reduce, 1, 2, "dim,keepdim", 2, R_MAX, NULL, 0},
    {"min", f_reduce, 1, 2, "dim,keepdim", 2, R_MIN, NULL, 0},
    {"amax", f_reduce, 1, 1, "dim,keepdim", 2, R_MAX, NULL, 0},
    {"amin", f_reduce, 1, 1, "dim,keepdim", 2, R_MIN, NULL, 0},
    {"logsumexp", f_reduce, 1, 1, "dim,keepdim", 2, R_LSE, NULL, 0},
    {"softmax", f_softmax, 1, 2, "dim", 1, SM_SOFT, NULL, 0},
    {"log_softmax", f_softmax, 1, 1, "dim", 1, SM_LOG, NULL, 0},
    {"causal_softmax", f_softmax, 1, 1, "offset", 1, SM_CAUSAL, NULL, 0},
    {"causal_mask", f_causal_mask, 1, 1, "offset", 1, 0, NULL, 0},
    {"layernorm", f_norm, 1, 3, "eps,dim", 1, 1, NULL, 0},
    {"rmsnorm", f_norm, 1, 2, "eps,dim", 1, 0, NULL, 0},
    {"cross_entropy", f_ce, 2, 3, "label_smoothing,reduction", 0, 0, NULL, 0},
    {"matmul", f_matmul, 2, 2, "", 0, 0, NULL, 0},
    {"embedding", f_embedding, 1, 2, "ids,shape", 0, 0, NULL, 0},
    {"rope", f_rope, 3, 3, "interleaved", 0, 0, NULL, 0},
    {"attention", f_attention, 3, 4, "scale,causal,offset", 0, 0, NULL, 0},
    {"topk_mask", f_topk, 1, 1, "k,dim", 2, 0, NULL, 0},
    G("relu_grad", "relu", 0, 2, 2, "", 0), G("silu_grad", "silu", 0, 2, 2, "", 0),
    G("gelu_grad", "gelu", 0, 2, 2, "", 0), G("sigmoid_grad", "sigmoid", 0, 2, 2, "", 0),
    G("tanh_grad", "tanh", 0, 2, 2, "", 0), G("exp_grad", "exp", 0, 2, 2, "", 0),
    G("log_grad", "log", 0, 2, 2, "", 0), G("sqrt_grad", "sqrt", 0, 2, 2, "", 0),
    G("rsqrt_grad", "rsqrt", 0, 2, 2, "", 0), G("erf_grad", "erf", 0, 2, 2, "", 0),
    G("abs_grad", "abs", 0, 2, 2, "", 0),
    G("rmsnorm_grad_x", "rmsnorm", 0, 2, 3, "eps,dim", 1),
    G("rmsnorm_grad_w", "rmsnorm", 1, 3, 3, "eps,dim", 1),
    G("layernorm_grad_x", "layernorm", 0, 2, 4, "eps,dim", 1),
    G("layernorm_grad_w", "layernorm", 1, 3, 4, "eps,dim", 1),
    G("layernorm_grad_b", "layernorm", 2, 4, 4, "eps,dim", 1),
    G("matmul_grad_a", "matmul", 0, 3, 3, "", 0), G("matmul_grad_b", "matmul", 1, 3, 3, "", 0),
    G("attention_grad_q", "attention", 0, 4, 5, "scale,causal,offset", 0),
    G("attention_grad_k", "attention", 1, 4, 5, "scale,causal,offset", 0),
    G("attention_grad_v", "attention", 2, 4, 5, "scale,causal,offset", 0),
    G("embedding_grad", "embedding", -1, 2, 3, "ids,shape", 0),
    {"softmax_grad", f_softmax_grad, 2, 2, "dim", 1, SM_SOFT, NULL, 0},
    {"log_softmax_grad", f_softmax_grad, 2, 2, "dim", 1, SM_LOG, NULL, 0},
    {"rope_grad", f_grad, 3, 3, "interleaved", 0, G_ZEROX, "rope", 0},
    {"cross_entropy_grad", f_grad, 2, 4, "label_smoothing,reduction", 0, G_OPTDY, "cross_entropy", 0},
};

static const rdef_t *find_def(const char *name)
{
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (strcmp(defs[i].name, name) == 0)
            return &defs[i];
    return NULL;
}

int rop_info(const char *name, int *lo, int *hi, int *npos, int *litattr)
{
    const rdef_t *d = find_def(name);
    if (d == NULL)
        return 0;
    *lo = d->lo;
    *hi = d->hi;
    *npos = d->npos;
    *litattr = d->fn == f_concat;
    return 1;
}

int rop_apply(ropc_t *c, const char *name, const rten_t *in, int nin, const rattr_t *at, int nat,
              rten_t *out)
{
    const rdef_t *d = find_def(name);
    const rattr_t *A[MAXKEYS];
    c->op = name;
    c->limit = 0;
    c->err[0] = 0;
    if (d == NULL)
        return fail(c, "unknown operator");
    if (nin < d->lo || (d->hi >= 0 && nin > d->hi))
        return d->lo == d->hi ? fail(c, "expected %d tensor argument%s, got %d", d->lo, d->lo == 1 ? "" : "s", nin)
               : fail(c, "expected %d to %d tensor arguments, got %d", d->lo, d->hi, nin);
    if (!resolve_attrs(c, d, at, nat, A))
        return 0;
    rt_init(out);
    if (!d->fn(c, d, in, nin, A, out)) {
        rt_clear(out);
        return 0;
    }
    if (c->S->over) {
        rt_clear(out);
        c->limit = 1;
        return fail(c, "the scalar nodes exceed the memory limit (max-mem)");
    }
    return 1;
}
