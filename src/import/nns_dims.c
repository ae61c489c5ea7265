/* nns_dims.c: the nnScaler importer's dimension classes: the union-find over (tensor, dim), merged
 * and derived dims, local size expressions. */
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

/* ---- dimension classes -------------------------------------------------------------------------- */

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
int dcls(ictx_t *X, dims_t *D, plan_t *p, int f, int d)
{
    int r = uf_find(D, dnode(D, p->role, f, d));
    int c = imap_get(&D->cls_of, r, -1);
    if (c < 0)
        die(X, "%s: %s: dimension %d is not related to any dimension of the logical plan", p->file,
            p->full[f].path, d);
    return c;
}

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

void dims_build(ictx_t *X, dims_t *D, plan_t *L, plan_t *P)
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
const char *cname(ictx_t *X, dims_t *D, int c)
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

void cname_set(ictx_t *X, dims_t *D, int c, const char *name)
{
    cls_t *C = &D->cls.v[c];
    if (C->name || smap_get(&D->names, name, -1) >= 0 || C->size <= 1)
        return;
    C->name = ar_strdup(X, name);
    smap_set(X, &D->names, C->name, c);
}

dvs_t dvs_lit(int64_t k)
{
    dvs_t v;
    memset(&v, 0, sizeof v);
    v.lit = k;
    return v;
}

void dvs_axis(dvs_t *v, const char *name, int64_t size)
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
const char *local_expr_v(dctx_t *DC, int c, const dvs_t *v)
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

const char *local_expr_(dctx_t *DC, int c, int64_t k)
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
int64_t cons_part(const dvs_t *v)
{
    int64_t k = v->lit;
    for (int a = 0; a < v->n; a++)
        if (strcmp(v->ax[a], "dp") && strcmp(v->ax[a], "mb"))
            k *= v->sz[a];
    return k;
}

void add_cons(dctx_t *DC, int c, int64_t k)
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

const char *local_expr(dctx_t *DC, int c, const dvs_t *v, const char *where)
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
