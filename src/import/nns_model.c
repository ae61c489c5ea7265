/* nns_model.c: the nnScaler importer's model: op emitters shared with the plan, MoE (gate_fw
 * and nnscaler_moe_gmm), the logical forward pass. */
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

/* ---- op emitters (shared by the model and the plan) -------------------------------------------- */

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

/* A view's kwargs.size (when given) must be its output's shape (one -1 stands for the rest):
   the plan is built from the output's shape, so a size that says otherwise is refused */
static void view_size_matches(ectx_t *E, node_t *n)
{
    json_t *size = kw(E, n, "size", 0);
    if (size == NULL || json_is_null(size))
        return;
    sub_t *o = sub_of(E->p, n->out[0].tid);
    int ok = json_is_array(size) && (int)json_array_size(size) == o->ndim, holes = 0;
    for (int d = 0; ok && d < o->ndim; d++) {
        json_t *v = json_array_get(size, (size_t)d);
        int64_t x = json_is_integer(v) ? json_integer_value(v) : -2;
        holes += x == -1;
        ok = x == o->shape[d] || (x == -1 && holes == 1);
    }
    if (!ok)
        die(E->I->X, "%s: %s.kwargs.size: not the shape of its output (%s)", E->p->file, n->path,
            shape_text(E->I, E->p, n->out[0].tid, n->path));
}

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
void fw_expr(ectx_t *E, const char **out, int *alias)
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
        json_t *times = !strcmp(nm, "multiref") ? kw(E, n, "times", 0) : NULL;
        if (times && !json_is_null(times) &&
            (!json_is_integer(times) || json_integer_value(times) != n->nout))
            die(X, "%s: %s.kwargs.times: %lld, but the node has %d outputs", E->p->file, n->path,
                json_is_integer(times) ? (long long)json_integer_value(times) : -1LL, n->nout);
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
        view_size_matches(E, n);
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
void bw_expr(ectx_t *E, const char **out, int *alias)
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

int is_complex(const full_t *f) { return strstr(f->dtype, "complex") != NULL; }

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

void build_model(imp_t *I)
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
int lmap(imp_t *I, int pf)
{
    full_t *f = &I->P.full[pf];
    int lf = full_index(&I->L, f->tid);
    if (lf >= 0 && !strcmp(I->L.full[lf].name, f->name) && I->mcanon[lf])
        return lf;
    int c = smap_get(&I->canon_by_name, f->name, -1);
    return c >= 0 ? c : -1;
}
