/* nnscaler.c: import a (logical, parallel) pair of TrainVerify nnScaler plans (tvplan JSON). */
#include "nnscaler.h"
#include "nns_int.h"

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
 *
 * The files, one phase each (nns_int.h is what they share): nns_read.c loads and validates,
 * nns_dims.c builds the dimension classes, nns_model.c emits the model, nns_plan.c the plan;
 * this file holds the importer's state, the assembly of the two texts and the entry points.
 */

_Thread_local ictx_t *g_X;

/* ---- the importer state ------------------------------------------------------------------------ */

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

const char *sanitize(imp_t *I, const char *s)
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

const char *unique_name(imp_t *I, const char *base, int64_t tid)
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
const char *const_text(imp_t *I, plan_t *p, json_t *v, const char *path, int *is_int)
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
const char *dim_expr(imp_t *I, plan_t *p, int64_t tid, int d, const char *where)
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

const char *shape_text(imp_t *I, plan_t *p, int64_t tid, const char *where)
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
const char *reduce_to(imp_t *I, plan_t *p, const char *e, int64_t from, int64_t to,
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

int is_identity_op(const char *name)
{
    return !strcmp(name, "identity") || !strcmp(name, "float") || !strcmp(name, "to") ||
           !strcmp(name, "contiguous");
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
