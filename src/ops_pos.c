/* ops_pos.c: where an axis's positions sit in the tensors it was cut from (shape reduction). */
#include <flint/flint.h>
#include "ops_int.h"

#include <string.h>

/*
 * Shape reduction keeps the multiplicative relations among sizes, not the additive ones
 * (src/reduce_sums.c reads the sums a program writes).  Slicing a slice adds offsets: rows
 * Q1 + Q2 of x, which are the model's rows A at reduced sizes where Q1 + Q2 = A but not at
 * the real ones.  So every axis of every tensor carries what its offset is made of, relative
 * to each tensor it reads (sp_pos_t): per kind of source a descriptor, the monomial in the
 * sizes its size term is a multiple of (an interned id; the coefficient, a rational made of
 * rank coordinates and loop variables, is not kept), whether that term comes from blocks only
 * (a layout's shard, a chunk, a collective's piece, a concatenation's part, a tile) and
 * whether a literal term is added.  An offset is one monomial, or a literal inside blocks
 * (`k*s + p`, which src/reduce.c's block rule covers); anything else is a sum of sizes: the
 * operator that makes it reports SP_CLAMP_OFFSET and the check runs at the real sizes
 * (src/check.c).  Here, operators carry the descriptors from their operands to their outputs,
 * over-approximating (a union) where an output axis reads several; an offset that is not an
 * addition (a tile's index modulo, a reshape's merge of a shifted dim) is SP_POS_MIX, which
 * any further nonzero offset turns into a report.  The interpreter (src/exec.c) refines slices
 * and chunks, whose offsets it reads from the program's text.  docs/soundness.md, "Offsets".
 */

#define D_LIT SP_POS_LIT
#define D_BLK SP_POS_BLK
#define D_ID(d) ((d) >> 2)

int32_t sp_pos_term(int32_t id, int blk)
{
    if (id <= 0)
        return 0;
    if (id == 1)
        return D_LIT;
    return (id << 2) | (blk ? D_BLK : 0);
}

/*
 * d + t into *out: 0 when it is a sum of sizes, 2 when it is a sum of exact terms (src/exec.c
 * sp_pos_monomial maps a monomial of sizes at their real sizes to the literal one), else 1.
 * A block term (D_BLK: a layout's shard, a chunk's piece, a slice that is a piece of an equal
 * cut at both sizes, ...) composes with blocks (nested blocks: the block rule of src/reduce.c
 * covers positions in them); a size term (a slice's start) with a size term or a block of its
 * own monomial only; a literal with blocks, once, and with literals (an exact sum: src/exec.c
 * sp_note_clamped, SP_CLAMP_EXACT).
 */
static int desc_add(int32_t d, int32_t t, int32_t *out)
{
    int32_t id = D_ID(d), blk = d & D_BLK;
    int exact = 1;
    if ((d & D_LIT) && (t & D_LIT)) {
        if (id != 0 || D_ID(t) != 0)
            return 0; /* a position in blocks past the largest literal the block rule saw */
        exact = 2;
    }
    if (D_ID(t) != 0) {
        if (id == 0) {
            id = D_ID(t);
            blk = t & D_BLK;
        } else if (blk && (t & D_BLK)) {
            id = D_ID(t); /* a block inside a block */
        } else if (!blk && id == D_ID(t)) {
            /* a size term, and a size term or a block of its monomial: a multiple of it */
        } else {
            return 0; /* two monomials */
        }
    }
    int lit = (d | t) & D_LIT;
    if (lit && id != 0 && !blk)
        return 0; /* a size start plus a literal */
    *out = (id << 2) | blk | lit;
    return exact;
}

static void set_mix(sp_pos_t *p)
{
    memset(p->off, 0, sizeof p->off);
    p->off[0] = SP_POS_MIX;
}

/* Add descriptor d to the set p: one of the same monomial merges (blocks only if both are, a
   literal if either has one), and blocks merge whatever their monomials (a block composes
   with blocks only, and with a size term of the block's own monomial only when it is one
   term, never a merged descriptor: desc_add) */
static void add_desc(sp_pos_t *p, int32_t d)
{
    if (d == 0 || p->off[0] == SP_POS_MIX)
        return;
    for (int i = 0; i < SP_POS_NOFF; i++) {
        int32_t e = p->off[i];
        if (e == 0) {
            p->off[i] = d;
            return;
        }
        if (D_ID(e) == D_ID(d) || ((e & D_BLK) && (d & D_BLK))) {
            int32_t id = D_ID(e) < D_ID(d) ? D_ID(e) : D_ID(d);
            p->off[i] = (id << 2) | (e & d & D_BLK) | ((e | d) & D_LIT);
            return;
        }
    }
    set_mix(p);
}

int sp_pos_compose(sp_pos_t *p, int32_t term)
{
    if (term == 0)
        return 1;
    if (p->off[0] == SP_POS_MIX)
        return 0;
    int32_t scale = term & D_BLK ? sp_pos_blk_scale(p) : 0;
    if (scale == SP_POS_MIX) {
        set_mix(p); /* a block on a view whose scale in the axis it was cut from is not known */
        return 0;
    }
    int32_t cut = term;
    if (scale > 1 && p->src != 0)
        cut = (scale << 2) | (term & (D_BLK | D_LIT)); /* a block on a split's outer part or a
                           merge: a block of the axis it was cut from (chunk 1 of 2 of A in
                           [A, N/A] is at A/2 rows of N/A, N/2: of N's scale, not A's) */
    int rescaled = (p->rescaled & SP_RESCALED) ||
                   (p->rescaled && !(p->view & SP_VIEW_MERGED)); /* an inner window counts on
                                                                    a merge only */
    if (rescaled && (cut & D_BLK))
        cut &= ~D_BLK; /* a block of a window scaled otherwise: a size term (rank 3 of N@8
                          at 3*N/8 against chunk 1 of a slice 0..M of N, M/2; an inner part K
                          of [N/K, K] at 5*K/8 against N/16) */
    /* on a reshape's view (where every size it is made of keeps its real size, all is exact):
       blocks only, and literals on a split's outer part of exact count; a block of a merge is
       checked for whole rows of it (src/exec_pos.c sp_pos_note) */
    int view = p->view & ~SP_VIEW_BLOCKED, exact = p->ext == 1 && !p->inexact;
    int block = (term & D_BLK) && !(term & D_LIT);
    int outer_lit = view == SP_VIEW_OUTER && p->ext == 1 && term == D_LIT;
    if (view && !exact && !block && !outer_lit) {
        set_mix(p);
        return 0;
    }
    if ((view & SP_VIEW_MERGED) && !exact)
        p->view |= SP_VIEW_BLOCKED;
    if (p->host != 0 && (cut & D_BLK))
        p->hblk = D_ID(cut); /* a block of its own scale in the host's axis */
    if (p->off[0] == 0) {
        p->off[0] = cut;
        return 1;
    }
    sp_pos_t q = {.ext = p->ext};
    int r = 1;
    for (int i = 0; i < SP_POS_NOFF && p->off[i] != 0; i++) {
        int32_t d;
        int k = desc_add(p->off[i], cut, &d);
        if (k == 2 && (p->ext != 1 || p->inexact))
            k = 0; /* literals added on a dim a reduced size reaches (this one, or one it was
                      cut from: helper-33's slice at NKV of a slice at NH of a reduced D): a sum
                      the block rule and the order rule did not see */
        if (k == 0) {
            set_mix(p);
            return 0;
        }
        if (k == 2)
            r = 2;
        add_desc(&q, d);
    }
    for (int i = 0; i < SP_POS_NOFF && p->host != 0; i++)
        if ((q.off[i] & D_BLK) && (q.off[i] & D_LIT)) {
            set_mix(p); /* a literal with blocks of an inner part scaled otherwise: k*K/c + p
                           in N, which the block rule does not cover (a view takes no literal
                           there anyway) */
            return 0;
        }
    memcpy(p->off, q.off, sizeof p->off);
    return r;
}

int32_t sp_pos_blk_scale(const sp_pos_t *p)
{
    if (p->src == SP_POS_MIX || (p->src > 0 && p->src2 != 0))
        return SP_POS_MIX; /* not known, or scales joined not yet compared */
    return p->src > 0 ? p->src : p->ext;
}

/* Does p say anything of an axis (not the empty start of a union)? */
static int pos_known(const sp_pos_t *p)
{
    return p->off[0] != 0 || p->ext != 0 || p->view != 0 || p->inexact || p->rescaled ||
           p->host;
}

/*
 * The scales blocks on s have, joined into dst's (unless s is not read: a broadcast axis of
 * one): the views' (src, up to two) and whether an axis that is no view was joined, whose
 * blocks are of its extent's scale (src2 = -1); more than src/exec_pos.c sp_pos_note can
 * compare is SP_POS_MIX.  A union's empty start is no axis: accumulators start from {0}.
 */
static void join_src(sp_pos_t *dst, const sp_pos_t *s, int counts)
{
    if (!counts)
        return;
    if (dst->src == SP_POS_MIX || s->src == SP_POS_MIX) {
        dst->src = SP_POS_MIX;
        dst->src2 = 0;
        return;
    }
    int plain = dst->src2 < 0 || s->src2 < 0 || (dst->src == 0 && pos_known(dst)) ||
                (s->src == 0 && pos_known(s));
    int32_t v[4] = {dst->src, dst->src2, s->src, s->src2}, ids[2] = {0, 0};
    int n = 0;
    for (int i = 0; i < 4 && n < 3; i++) {
        if (v[i] <= 0 || (n > 0 && ids[0] == v[i]) || (n > 1 && ids[1] == v[i]))
            continue;
        if (n < 2)
            ids[n] = v[i];
        n++;
    }
    if (n + (n > 0 && plain) > 2) {
        dst->src = SP_POS_MIX;
        dst->src2 = 0;
        return;
    }
    dst->src = ids[0];
    dst->src2 = n == 2 ? ids[1] : plain ? -1 : 0;
}

static void pos_union(sp_pos_t *dst, const sp_pos_t *src, int counts)
{
    join_src(dst, src, counts);
    dst->inexact |= src->inexact;
    dst->rescaled |= src->rescaled;
    if (dst->hblk == 0)
        dst->hblk = src->hblk;
    if (dst->host == 0)
        dst->host = src->host;
    else if (src->host != 0 && src->host != dst->host)
        dst->rescaled |= SP_RESCALED; /* inner parts of two hosts: blocks are size terms */
    if (dst->grp == 0)
        dst->grp = src->grp;
    else if (src->grp != 0 && src->grp != dst->grp)
        dst->grp = -1; /* two grouped reads: a block there is reported (note_terms) */
    int dm = dst->view & SP_VIEW_MERGED, sm = src->view & SP_VIEW_MERGED;
    if (sm && !dm) {
        dst->inner_r = src->inner_r;
        dst->inner_id = src->inner_id;
    } else if (sm && (dst->inner_r != src->inner_r || dst->inner_id != src->inner_id)) {
        dst->inner_r = dst->inner_id = 0; /* merges of different inner extents */
    }
    dst->view |= src->view;
    if (src->off[0] == SP_POS_MIX)
        set_mix(dst);
    for (int i = 0; i < SP_POS_NOFF && src->off[0] != SP_POS_MIX; i++)
        add_desc(dst, src->off[i]);
}

void sp_pos_union(sp_pos_t *dst, const sp_pos_t *src)
{
    pos_union(dst, src, 1);
}

/* The extent id two readings of one extent agree on: a known one over an unknown one, else
   the lower (deterministic) */
static int32_t ext_join(int32_t a, int32_t b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* Output axis p reads operand axis q (of extent n; the output's m, or -1 when p keeps an extent
   of its own): q's offsets; the extents agree where the shapes do, and an operand axis whose
   extent is not exact makes p's positions reach a dim a reduced size may reach, whatever
   extent p is given (a broadcast axis of one reads none).  The scale of blocks on p (src)
   joins q's only where q is read whole (n == m, or p's extent its own): a grouped read
   (attention's NKV key heads for NH query heads, rope's tables' HD/2 for HD) is at p's
   positions divided by the group or modulo n, no offset added, so a block on p is one of
   the axes read whole */
static void read_axis(sp_pos_t *p, const sp_pos_t *q, int64_t n, int64_t m)
{
    pos_union(p, q, n == m || (n != 1 && m < 0));
    if (n == m)
        p->ext = ext_join(p->ext, q->ext);
    if (n == m || n != 1)
        p->inexact |= q->ext != 1;
}

void sp_pos_fill_ext(sp_tensor_t *t, int32_t *next)
{
    if (*next < SP_POS_FRESH)
        *next = SP_POS_FRESH; /* fresh ids above the interned ones (src/exec_pos.c sp_pos_fresh) */
    for (int d = 0; d < t->ndim; d++)
        if (t->pos[d].ext == 0)
            t->pos[d].ext = (*next)++;
}

int sp_pos_block(sp_tensor_t *local, const sp_tensor_t *full, const int64_t *start, int32_t *next)
{
    int ok = 1, exact = 0;
    if (*next < SP_POS_FRESH)
        *next = SP_POS_FRESH; /* fresh ids above the interned ones (src/exec_pos.c sp_pos_fresh) */
    for (int d = 0; d < local->ndim && d < full->ndim; d++) {
        sp_pos_t p = full->pos[d];
        if (start[d] != 0) {
            if (p.ext == 0)
                p.ext = (*next)++;
            int k = sp_pos_compose(&p, sp_pos_term(p.ext, 1));
            ok &= k != 0;
            exact |= k == 2;
        }
        local->pos[d] = p;
    }
    return ok ? 1 + exact : 0;
}

int sp_pos_concat(sp_tensor_t *out, const sp_tensor_t *const *parts, int n, int dim)
{
    int ok = 1;
    if (n <= 0) { /* too many parts to read: every axis mixed */
        for (int d = 0; d < out->ndim; d++)
            set_mix(&out->pos[d]);
        return 1;
    }
    const sp_tensor_t *x = parts[0];
    for (int d = 0; d < out->ndim && d < x->ndim; d++) {
        sp_pos_t p = {.ext = 0};
        for (int k = 0; k < n; k++) {
            sp_pos_union(&p, &parts[k]->pos[d]);
            if (k == 0)
                p.ext = x->pos[d].ext;
            if (parts[k]->pos[d].ext != x->pos[d].ext ||
                (parts[k]->shape[d] != x->shape[d] && x->pos[d].ext != 1))
                p.ext = 0; /* parts of unequal exact extents: an exact extent (id 1) */
        }
        int k = d == dim && n > 1 && p.ext != 0 ? sp_pos_compose(&p, sp_pos_term(p.ext, 1)) : 1;
        if (d == dim && n > 1 && (p.view & SP_VIEW_BLOCKED))
            p.blk_r = x->shape[d] <= INT32_MAX ? (int32_t)x->shape[d] : 0; /* the parts' */
        if (d == dim && n > 1 && (p.ext == 0 || k == 0)) {
            /* part k at k times the parts' extent: a block term of its monomial, which must
               be known when an offset is there to add it to */
            if (p.off[0] != 0 || p.ext != 0)
                ok = 0;
            set_mix(&p);
        } else if (k == 2 && ok) {
            ok = 2;
        }
        out->pos[d] = p;
    }
    return ok;
}

int sp_pos_piece(sp_tensor_t *out, const sp_tensor_t *t, int d, int64_t k)
{
    memcpy(out->pos, t->pos, sizeof out->pos);
    if (k == 0 || d < 0 || d >= out->ndim)
        return 1;
    sp_pos_t *p = &out->pos[d];
    if (p->ext == 0) {
        int had = p->off[0] != 0;
        set_mix(p);
        return !had;
    }
    return sp_pos_compose(p, sp_pos_term(p->ext, 1));
}

int sp_pos_forms(const sp_tensor_t *t)
{
    int f = 0;
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++)
        for (int i = 0; i < SP_POS_NOFF && t->pos[d].off[0] != SP_POS_MIX; i++) {
            int32_t e = t->pos[d].off[i];
            if (D_ID(e) > 1 && !(e & D_BLK))
                f |= SP_POS_SIZE;
            if (D_ID(e) > 1 && (e & D_BLK) && (e & D_LIT))
                f |= SP_POS_BLKLIT;
        }
    return f;
}

void sp_pos_report(sp_op_err_t *err, int k)
{
    if (err == NULL)
        return;
    if (k == 0 && (err->clamped == SP_CLAMP_NONE || err->clamped == SP_CLAMP_EXACT))
        err->clamped = SP_CLAMP_OFFSET;
    else if (k == 2 && err->clamped == SP_CLAMP_NONE)
        err->clamped = SP_CLAMP_EXACT;
}

static void report(opc_t *c)
{
    sp_pos_report(c->err, 0);
}

static void report_k(opc_t *c, int k)
{
    sp_pos_report(c->err, k);
}

/* Does embedding's or its gradient's `ids` hold an id that is not 0 (not read: as if it did)? */
static int ids_nonzero(opc_t *c)
{
    int64_t one;
    const int64_t *ids = NULL;
    int n = 0, present = 0;
    if (!attr_list(c, "ids", &one, &ids, &n, &present) || !present)
        return 1;
    for (int i = 0; i < n; i++)
        if (ids[i] != 0)
            return 1;
    return 0;
}

/* Every output axis reads every operand axis (an operator without a finer rule). */
static void pos_all(opc_t *c, sp_tensor_t *out)
{
    sp_pos_t u = {.ext = 0};
    for (int k = 0; k < c->nin; k++)
        for (int d = 0; d < c->in[k].ndim; d++)
            sp_pos_union(&u, &c->in[k].pos[d]);
    for (int d = 0; d < out->ndim; d++)
        out->pos[d] = u;
}

/* Output axis j reads the operands' axes aligned with it from the right (broadcasting): for
   operators whose output axes read only the operand axes so aligned (checked per operator in
   pos_op); an operand's leading axes beyond the output's are reduced (a norm's weight
   gradient) and dropped, unless mixed */
static void pos_aligned(opc_t *c, sp_tensor_t *out)
{
    for (int k = 0; k < c->nin; k++)
        for (int a = 0; a < c->in[k].ndim - out->ndim; a++)
            if (c->in[k].pos[a].off[0] == SP_POS_MIX) {
                for (int j = 0; j < out->ndim; j++)
                    set_mix(&out->pos[j]);
                return;
            }
    for (int j = 0; j < out->ndim; j++) {
        sp_pos_t p = {.ext = 0};
        int k0 = out->ndim - 1 - j;
        for (int k = 0; k < c->nin; k++) {
            const sp_tensor_t *t = &c->in[k];
            int a = t->ndim - 1 - k0;
            if (a < 0)
                continue;
            read_axis(&p, &t->pos[a], t->shape[a], out->shape[j]);
        }
        out->pos[j] = p;
    }
}

/* A reduction: the kept axes read theirs; a reduced axis's offset is dropped (each of its
   monomials is compared as it is), unless it is not known to be one */
static void pos_reduce(opc_t *c, sp_tensor_t *out)
{
    const sp_tensor_t *x = &c->in[0];
    int mixed = 0, j = 0;
    for (int d = 0; d < x->ndim; d++) {
        int red = (c->red_mask >> d) & 1u;
        if (red && x->pos[d].off[0] == SP_POS_MIX)
            mixed = 1;
        if (c->red_keep) {
            if (j < out->ndim) {
                out->pos[j] = x->pos[d];
                if (red)
                    out->pos[j].ext = 0;
            }
            j++;
        } else if (!red) {
            if (j < out->ndim)
                out->pos[j] = x->pos[d];
            j++;
        }
    }
    for (int d = 0; mixed && d < out->ndim; d++)
        set_mix(&out->pos[d]);
}

/* Operators whose output axes read only the operand axes aligned with them from the right:
   the same shape as an operand (softmax, the norms, rope and their gradients), matmul's
   [.., M, N] from [.., M, K] and [.., K, N], attention's [.., H, Sq, D] (a gradient's: the shape
   of q, k or v, each axis read from the aligned axes of q, k, v, the mask and dy) */
static int aligned_op(const char *name)
{
    static const char *const ops[] = {
        "softmax", "log_softmax", "causal_softmax", "causal_mask", "layernorm", "rmsnorm", "rope",
        "topk_mask",
        "matmul", "embedding", "attention", "relu_grad", "silu_grad", "gelu_grad", "sigmoid_grad",
        "tanh_grad", "exp_grad", "log_grad", "sqrt_grad", "rsqrt_grad", "erf_grad", "abs_grad",
        "rmsnorm_grad_x", "layernorm_grad_x", "softmax_grad", "log_softmax_grad", "rope_grad",
        NULL};
    for (int i = 0; ops[i]; i++)
        if (strcmp(ops[i], name) == 0)
            return 1;
    return 0;
}

/* Output axis j (from the right: 0 the last) takes src (operand k, its axis from the right)
   where listed; the others the operands' batch axes aligned from the right; the operand axes
   listed as contracted are dropped unless mixed. */
typedef struct {
    int out, k, a;
} pmap_t;

static void pos_listed(opc_t *c, sp_tensor_t *out, const pmap_t *m, int nm, int nbatch_skip)
{
    uint8_t used[8][SP_MAX_DIMS];
    memset(used, 0, sizeof used);
    /* batch axes: out axes from the right at index >= nbatch_skip, aligned over every operand
       (an operand's axes beyond its own last nbatch_skip ones) */
    for (int j = 0; j < out->ndim; j++) {
        sp_pos_t p = {.ext = 0};
        int k0 = out->ndim - 1 - j;
        for (int k = 0; k < c->nin && k0 >= nbatch_skip; k++) {
            const sp_tensor_t *t = &c->in[k];
            int a = t->ndim - 1 - k0;
            if (a < 0)
                continue;
            if (k < 8)
                used[k][a] = 1;
            read_axis(&p, &t->pos[a], t->shape[a], out->shape[j]);
        }
        out->pos[j] = p;
    }
    for (int i = 0; i < nm; i++) {
        const sp_tensor_t *t = m[i].k < c->nin ? &c->in[m[i].k] : NULL;
        int a = t ? t->ndim - 1 - m[i].a : -1;
        if (t == NULL || a < 0)
            continue;
        int j = out->ndim - 1 - m[i].out;
        if (m[i].out < 0 || j < 0)
            continue; /* contracted: dropped below */
        used[m[i].k][a] = 1;
        read_axis(&out->pos[j], &t->pos[a], t->shape[a], out->shape[j]);
    }
    /* an operand axis no output axis reads is contracted or reduced: its offsets are dropped
       (each of the claim's form, compared as such), unless mixed */
    for (int k = 0; k < c->nin; k++)
        for (int a = 0; a < c->in[k].ndim; a++)
            if ((k >= 8 || !used[k][a]) && c->in[k].pos[a].off[0] == SP_POS_MIX) {
                for (int j = 0; j < out->ndim; j++)
                    set_mix(&out->pos[j]);
                return;
            }
}

/* embedding_grad(onehot [.., V], table [V, H], dy [.., H]): the table's [V, H], V from the
   one-hot ids and the table, H from the table and dy; with literal ids, below */
static int pos_embedding_grad(opc_t *c, sp_tensor_t *out)
{
    if (c->nin == 2 && out->ndim == 2 && c->in[0].ndim == 2 && c->in[1].ndim >= 1) {
        /* embedding_grad(table, dy, ids = [..]): row ids[i] of the table's shape gets dy's
           element i: the table's rows and dy's ids axes, each plus a literal term where an id
           is not 0 (src/exec_pos.c adds a size term for an id written with sizes) */
        const sp_tensor_t *t = &c->in[0], *dy = &c->in[1];
        int lit = ids_nonzero(c);
        sp_pos_t rows = t->pos[0], from = {.ext = 1};
        for (int d = 0; d + 1 < dy->ndim; d++)
            read_axis(&from, &dy->pos[d], dy->shape[d], -1);
        rows.inexact |= rows.ext != 1;
        int k1 = lit ? sp_pos_compose(&rows, sp_pos_term(1, 0)) : 1;
        int k2 = lit ? sp_pos_compose(&from, sp_pos_term(1, 0)) : 1;
        if (k1 == 0 || k2 == 0)
            report(c);
        else if (k1 == 2 || k2 == 2)
            report_k(c, 2);
        sp_pos_union(&rows, &from);
        rows.ext = t->pos[0].ext;
        out->pos[0] = rows;
        out->pos[1] = t->pos[1];
        read_axis(&out->pos[1], &dy->pos[dy->ndim - 1], dy->shape[dy->ndim - 1], out->shape[1]);
        return 1;
    }
    if (c->nin != 3 || out->ndim != 2 || c->in[0].ndim < 1 || c->in[1].ndim != 2 ||
        c->in[2].ndim < 1)
        return 0;
    static const pmap_t m[] = {{1, 0, 0}, {1, 1, 1}, {0, 1, 0}, {0, 2, 0}};
    pos_listed(c, out, m, 4, 2);
    return 1;
}

/* matmul [.., M, K] @ [.., K, N] (an embedding's one-hot [.., V] @ [V, H] too): M from a, N
   from b, K contracted; 1-d operands as torch: 0 if not of the 2-d form */
static int pos_matmul(opc_t *c, sp_tensor_t *out)
{
    if (c->nin != 2 || c->in[0].ndim < 2 || c->in[1].ndim < 2 || out->ndim < 2)
        return 0;
    static const pmap_t m[] = {{1, 0, 1}, {0, 1, 0}};
    pos_listed(c, out, m, 2, 2);
    return 1;
}

/* Grouped heads: where the output's heads (third axis from the right) and the heads of one of
   the first n operands differ in extent (a group of query heads reads one key head; a key
   head's gradient sums a group of query heads), a block added on the output's heads reads
   that operand's heads at that operand's scale (heads k*NH/c read key heads k*NKV/c), which
   sp_pos_t.grp records (src/exec_pos.c note_terms; helper-42's find 2) */
static void grouped_heads(opc_t *c, sp_tensor_t *out, int n)
{
    int64_t h = out->shape[out->ndim - 3];
    sp_pos_t *p = &out->pos[out->ndim - 3];
    for (int k = 0; k < n && k < c->nin; k++) {
        const sp_tensor_t *t = &c->in[k];
        if (t->ndim < 3 || t->shape[t->ndim - 3] == h || t->shape[t->ndim - 3] == 1)
            continue;
        int32_t g = t->pos[t->ndim - 3].ext; /* 1: exact, its blocks the same at both sizes */
        p->grp = g == 0 || (p->grp != 0 && p->grp != g) ? -1 : g;
    }
}

/* attention(q [.., Hq, Sq, D], k [.., Hk, Sk, D], v [.., Hk, Sk, Dv], mask [.., Sq, Sk]):
   [.., Hq, Sq, Dv]; the heads from q, k and v (a group of query heads reads one key head),
   Sq from q and the mask, Dv from v; D and Sk contracted */
static int pos_attention(opc_t *c, sp_tensor_t *out)
{
    if (c->nin < 3 || out->ndim < 3)
        return 0;
    for (int k = 0; k < 3; k++)
        if (c->in[k].ndim < 3)
            return 0;
    static const pmap_t m[] = {{2, 0, 2}, {2, 1, 2}, {2, 2, 2}, {2, 3, 2},
                               {1, 0, 1}, {1, 3, 1}, {0, 2, 0}};
    pos_listed(c, out, m, 7, 3);
    grouped_heads(c, out, 3);
    return 1;
}

/* A norm's weight or bias gradient: the weight's axes, the operands' aligned from the right,
   the leading ones reduced */
static int weight_grad(const char *name)
{
    return strcmp(name, "rmsnorm_grad_w") == 0 || strcmp(name, "layernorm_grad_w") == 0 ||
           strcmp(name, "layernorm_grad_b") == 0;
}

/* matmul_grad_a(a, b, dy) has a's shape [.., M, K]: M from a and dy, K from a and b's rows;
   matmul_grad_b(a, b, dy) b's [.., K, N]: K from b and a's columns, N from b and dy; the
   leading axes from the operands aligned from the right.  0 if not of that form. */
static int pos_matmul_grad(opc_t *c, sp_tensor_t *out)
{
    int ga = strcmp(c->def->name, "matmul_grad_a") == 0;
    if ((!ga && strcmp(c->def->name, "matmul_grad_b") != 0) || c->nin != 3 || out->ndim < 2)
        return 0;
    for (int k = 0; k < 3; k++)
        if (c->in[k].ndim < 2)
            return 0;
    pos_aligned(c, out); /* the batch axes; the last two below */
    const sp_tensor_t *a = &c->in[0], *b = &c->in[1], *dy = &c->in[2];
    const sp_tensor_t *own = ga ? a : b;
    sp_pos_t rows = own->pos[own->ndim - 2], cols = own->pos[own->ndim - 1];
    const sp_pos_t *r2 = ga ? &dy->pos[dy->ndim - 2] : &a->pos[a->ndim - 1];
    const sp_pos_t *c2 = ga ? &b->pos[b->ndim - 2] : &dy->pos[dy->ndim - 1];
    read_axis(&rows, r2, ga ? dy->shape[dy->ndim - 2] : a->shape[a->ndim - 1], -1);
    read_axis(&cols, c2, ga ? b->shape[b->ndim - 2] : dy->shape[dy->ndim - 1], -1);
    /* the contracted axes (a's and dy's rows for b's gradient, b's and dy's columns for a's)
       are dropped, unless mixed */
    const sp_pos_t *dropped[2] = {ga ? &b->pos[b->ndim - 1] : &a->pos[a->ndim - 2],
                                  ga ? &dy->pos[dy->ndim - 1] : &dy->pos[dy->ndim - 2]};
    out->pos[out->ndim - 2] = rows;
    out->pos[out->ndim - 1] = cols;
    for (int i = 0; i < 2; i++)
        if (dropped[i]->off[0] == SP_POS_MIX)
            for (int j = 0; j < out->ndim; j++)
                set_mix(&out->pos[j]);
    return 1;
}

/* embedding(table [V, H], ids = [..], shape = [..]): each ids axis reads the table's rows at
   the table's offset plus a literal id (a literal term, when an id is not 0; the ids' count is
   a literal extent), the last axis the table's H */
static void pos_embedding_ids(opc_t *c, sp_tensor_t *out)
{
    const sp_tensor_t *t = &c->in[0];
    memset(out->pos, 0, sizeof(out->pos));
    if (out->ndim < 1 || t->ndim != 2)
        return;
    out->pos[out->ndim - 1] = t->pos[1];
    sp_pos_t rows = t->pos[0];
    rows.inexact |= rows.ext != 1;
    report_k(c, ids_nonzero(c) ? sp_pos_compose(&rows, sp_pos_term(1, 0)) : 1);
    rows.ext = 1;
    for (int d = 0; d + 1 < out->ndim; d++)
        out->pos[d] = rows;
}

/* attention_grad_q|k|v(q, k, v, [mask], dy): the shape of q, k or v.  Heads read the heads of
   every operand; the rows (Sq for q's gradient, Sk for k's and v's) q's rows, the mask's and
   dy's (Sq), or k's and v's and the mask's columns (Sk); the last axis D (q's and k's) or Dv
   (v's and dy's).  The other axes are contracted. */
static int pos_attention_grad(opc_t *c, sp_tensor_t *out)
{
    const char *n = c->def->name;
    if (strncmp(n, "attention_grad_", 15) != 0 || (c->nin != 4 && c->nin != 5) || out->ndim < 3)
        return 0;
    for (int k = 0; k < c->nin; k++)
        if (c->in[k].ndim < (k == 3 && c->nin == 5 ? 2 : 3))
            return 0;
    int mask = c->nin == 5 ? 3 : -1, dy = c->nin - 1, w = n[15];
    pmap_t m[16];
    int nm = 0;
    for (int k = 0; k < c->nin; k++)
        if (k != mask || c->in[k].ndim >= 3)
            m[nm++] = (pmap_t){2, k, 2}; /* heads */
    if (w == 'q') {
        m[nm++] = (pmap_t){1, 0, 1};
        m[nm++] = (pmap_t){1, dy, 1};
        if (mask >= 0)
            m[nm++] = (pmap_t){1, mask, 1};
        m[nm++] = (pmap_t){0, 0, 0};
        m[nm++] = (pmap_t){0, 1, 0};
    } else {
        m[nm++] = (pmap_t){1, 1, 1};
        m[nm++] = (pmap_t){1, 2, 1};
        if (mask >= 0)
            m[nm++] = (pmap_t){1, mask, 0};
        if (w == 'k') {
            m[nm++] = (pmap_t){0, 0, 0};
            m[nm++] = (pmap_t){0, 1, 0};
        } else {
            m[nm++] = (pmap_t){0, 2, 0};
            m[nm++] = (pmap_t){0, dy, 0};
        }
    }
    pos_listed(c, out, m, nm, 3);
    grouped_heads(c, out, 3);
    return 1;
}

/* cross_entropy_grad(logits [.., V], target [.., V], [mask, [dloss]]): the logits' shape; the
   mask and dloss broadcast to the positions [..], aligned from the right with the axes before V */
static int pos_ce_grad(opc_t *c, sp_tensor_t *out)
{
    if (strcmp(c->def->name, "cross_entropy_grad") != 0 || out->ndim < 1)
        return 0;
    pmap_t m[2 * SP_MAX_DIMS + 2];
    int nm = 0;
    for (int k = 0; k < c->nin && k < 2; k++)
        for (int a = 0; a < c->in[k].ndim && a < out->ndim; a++)
            m[nm++] = (pmap_t){a, k, a};
    for (int k = 2; k < c->nin; k++)
        for (int a = 0; a < c->in[k].ndim && a + 1 < out->ndim; a++)
            m[nm++] = (pmap_t){a + 1, k, a};
    pos_listed(c, out, m, nm, SP_MAX_DIMS + 1);
    return 1;
}

void pos_op(opc_t *c, sp_tensor_t *out)
{
    if (c->def->fwd == fwd_gather)
        return; /* pos_gather */
    if (c->def->fwd == fwd_reduce && c->nin == 1 && c->red_set) {
        pos_reduce(c, out);
        return;
    }
    if (strcmp(c->def->name, "embedding") == 0 && c->nin == 1) {
        pos_embedding_ids(c, out);
        return;
    }
    if ((strcmp(c->def->name, "matmul") == 0 || strcmp(c->def->name, "embedding") == 0) &&
        pos_matmul(c, out))
        return;
    if (strcmp(c->def->name, "attention") == 0 && pos_attention(c, out))
        return;
    if (strcmp(c->def->name, "embedding_grad") == 0 && pos_embedding_grad(c, out))
        return;
    if (pos_attention_grad(c, out) || pos_ce_grad(c, out))
        return;
    int aligned = c->def->fwd == fwd_ew || c->def->fwd == fwd_reduce || aligned_op(c->def->name);
    for (int k = 0; aligned && k < c->nin; k++)
        if (c->in[k].ndim > out->ndim)
            aligned = 0;
    if (aligned || weight_grad(c->def->name))
        pos_aligned(c, out);
    else if (!pos_matmul_grad(c, out))
        pos_all(c, out);
}

/* Are p's offsets blocks only (no size term, no literal)? */
static int blocks_only(const sp_pos_t *p)
{
    if (p->off[0] == SP_POS_MIX)
        return 0;
    for (int i = 0; i < SP_POS_NOFF; i++)
        if (p->off[i] != 0 && (!(p->off[i] & D_BLK) || (p->off[i] & D_LIT)))
            return 0;
    return 1;
}

/* The scale of blocks on a split's outer part or a merge whose outermost axis is x's axis q:
   q's block scale (0: an exact one, whose blocks' positions are exact; not known: mixed) */
static int32_t outer_src(const sp_pos_t *q)
{
    int32_t e = sp_pos_blk_scale(q);
    return e == 1 ? 0 : e == 0 ? SP_POS_MIX : e;
}

/* A reshape (the flat order kept): an output axis that is an input axis (the same extent and
   the same stride) reads it.  One that splits or merges axes: blocks stay blocks (a rank's
   block of a dim merged with inner dims is a block of the merged dim, and a block split is
   blocks of the outer part), no offset stays none; a size term or a literal there is no sum
   of the axes' offsets (a shifted dim times the inner extent): mixed, and two such merged
   add up (reported).  Blocks added later on a split part or a merge are positions in the
   axis it was cut from (sp_pos_t.src): a split's outer part and a merge starting at an axis
   have that axis's scale; another part is left not known here (src/exec_pos.c sp_view_scales
   compares its extents' scales); a window scaled otherwise stays one (rescaled). */
static void pos_reshape(opc_t *c, const sp_tensor_t *x, sp_tensor_t *out)
{
    int64_t sx[SP_MAX_DIMS + 1], so[SP_MAX_DIMS + 1];
    sx[x->ndim] = 1;
    for (int d = x->ndim - 1; d >= 0; d--)
        sx[d] = sx[d + 1] * x->shape[d];
    so[out->ndim] = 1;
    for (int d = out->ndim - 1; d >= 0; d--)
        so[d] = so[d + 1] * out->shape[d];
    for (int j = 0; j < out->ndim; j++) {
        sp_pos_t p = {.ext = 0};
        int same = 0, shifted = 0, blocks = 1, from = -1;
        for (int i = 0; i < x->ndim; i++) {
            if (x->shape[i] == 1 || out->shape[j] == 1)
                continue;
            /* axis i spans flat strides [sx[i+1], sx[i]), axis j [so[j+1], so[j]) */
            if (sx[i + 1] >= so[j] || so[j + 1] >= sx[i])
                continue;
            if (sx[i + 1] == so[j + 1] && sx[i] == so[j]) {
                p = x->pos[i];
                same = 1;
                break;
            }
            if (from < 0)
                from = i; /* the outermost axis j reads */
            int merged = 0; /* a merge: another axis of extent > 1 overlaps j */
            for (int i2 = 0; i2 < x->ndim; i2++)
                merged |= i2 != i && x->shape[i2] != 1 && sx[i2 + 1] < so[j] && so[j + 1] < sx[i2];
            if (merged && p.view == 0 && so[j] == sx[i] && so[j + 1] < sx[i + 1]) {
                /* i is the merge's outermost axis: the inner ones' extent, and its monomial
                   when they are one axis or exact, for a block's check (sp_pos_t.inner) */
                int32_t id = 1;
                int64_t n = 1;
                for (int i2 = i + 1; i2 < x->ndim && sx[i2] > so[j + 1]; i2++) {
                    n *= x->shape[i2];
                    if (x->shape[i2] != 1 && x->pos[i2].ext != 1)
                        id = id == 1 ? x->pos[i2].ext : 0;
                }
                p.inner_r = sx[i + 1] == n * so[j + 1] && n <= INT32_MAX ? (int32_t)n : 0;
                p.inner_id = id;
            }
            p.view |= merged ? SP_VIEW_MERGED
                      : so[j] == sx[i] && so[j + 1] != sx[i + 1] ? SP_VIEW_OUTER
                                                                  : SP_VIEW_INNER;
            p.inexact |= x->pos[i].inexact || x->pos[i].ext != 1;
            /* a window, with or without an offset, on every part of a split and on a merge
               whose outermost axis it is (or holds one); an inner axis of a merge only for a
               part a further split cuts out of it: a block on the merge is whole rows of its
               inner axes (src/exec_pos.c merged_blocks) */
            if (x->pos[i].rescaled || x->pos[i].host) /* an inner part scaled otherwise,
                                                         reshaped again: a window */
                p.rescaled |= merged && i != from ? SP_RESCALED_INNER : SP_RESCALED;
            /* a view of grouped heads keeps the grouped read, offsets or none (helper-43's
               find 1: a merge of attention's heads, then a chunk) */
            if (x->pos[i].grp != 0)
                p.grp = p.grp == 0 || p.grp == x->pos[i].grp ? x->pos[i].grp : -1;
            if (x->pos[i].off[0] != 0) {
                shifted++;
                blocks &= blocks_only(&x->pos[i]);
                sp_pos_union(&p, &x->pos[i]);
            }
        }
        if (!same && from >= 0) {
            p.src2 = 0;
            /* another part than the outermost: src/exec_pos.c sp_view_scales */
            p.src = so[j] == sx[from] ? outer_src(&x->pos[from]) : SP_POS_MIX;
        }
        if (!same) {
            p.ext = 0;
            if (shifted && !blocks) {
                set_mix(&p);
                if (shifted >= 2)
                    report(c); /* two shifted dims merged: their offsets add up */
            }
        }
        out->pos[j] = p;
    }
}

void pos_gather(opc_t *c, const gather_t *g, sp_tensor_t *out)
{
    const sp_tensor_t *x = &c->in[0];
    if (c->def->fwd != fwd_gather)
        return; /* an embedding's rows: pos_op */
    if (g->cat > 0) {
        const sp_tensor_t *parts[64];
        int n = c->nin < 64 ? c->nin : 64;
        for (int k = 0; k < n; k++)
            parts[k] = &c->in[k];
        report_k(c, sp_pos_concat(out, parts, c->nin <= 64 ? n : -1, g->cat - 1));
        return;
    }
    if (g->ndm == 0) {
        pos_reshape(c, x, out);
        return;
    }
    unsigned used = 0;
    for (int d = 0; d < out->ndim && d < g->ndm; d++) {
        const dmap_t *m = &g->dm[d];
        sp_pos_t p = {.ext = 0};
        if (m->dim >= 0 && m->dim < x->ndim) {
            const sp_pos_t *q = &x->pos[m->dim];
            used |= 1u << m->dim;
            p = *q;
            p.ext = out->shape[d] == x->shape[m->dim] ? q->ext : 0;
            switch (m->kind) {
            case DM_AFFINE:
                if (m->a > 1 || (m->a == 1 && m->b != 0))
                    set_mix(&p); /* a step, or a shift (src/exec.c refines slices, chunks) */
                break;
            case DM_MOD: /* tiles: tile k at k times the extent */
                if (out->shape[d] > x->shape[m->dim]) {
                    int k = q->ext != 0 ? sp_pos_compose(&p, sp_pos_term(q->ext, 1)) : 0;
                    if (p.view & SP_VIEW_BLOCKED) /* tiles along a merge: the tile's extent */
                        p.blk_r = x->shape[m->dim] <= INT32_MAX ? (int32_t)x->shape[m->dim] : 0;
                    if (k == 0) {
                        if (q->off[0] != 0)
                            report(c);
                        set_mix(&p);
                    } else if (k == 2) {
                        report_k(c, 2);
                    }
                }
                break;
            case DM_DIV: /* each element repeated: positions divided, no offset added */
                if (m->a > 1)
                    set_mix(&p);
                break;
            default: /* padding before: a shift by a sum of sizes (src/ops_shape.c g_pad) */
                if (m->b != 0)
                    set_mix(&p);
            }
        }
        out->pos[d] = p;
    }
    for (int i = 0; i < x->ndim; i++)
        if (!((used >> i) & 1u) && x->pos[i].off[0] == SP_POS_MIX)
            for (int d = 0; d < out->ndim; d++)
                set_mix(&out->pos[d]);
}
