/* nns_plan.c: the nnScaler importer's plan: layouts, stages and names, emitting items,
 * interleaving, reducers and outputs. */
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

void build_plan(imp_t *I)
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
