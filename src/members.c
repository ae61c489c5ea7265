/*
 * members.c: how many elements of each reduced dim a stage's monomials hold
 * (docs/soundness.md, "Relations among sums over a reduced dim").
 *
 * A proof at the reduced sizes is one at the real sizes only for monomials that the reduced
 * sizes can hold: with K checked at k, a monomial holding more than k of K's elements does
 * not exist there, so an identity that only such monomials break (Newton's identities: e4 of
 * three values is 0) is proved at k and false at the real K.  Read a value as a polynomial in
 * generators (input and cut symbols, atoms); a symbol holds the elements its coordinates name
 * along each dim, an atom those of its arguments.  A *type* is a monomial up to renaming the
 * elements of K; with no counts (docs/soundness.md, "Counts") its coefficient does not depend
 * on the size, and a type of j elements appears at k when j is at most the smallest block
 * along K (a shard, a chunk, a micro-batch: all j may sit in one).  So a stage proved at the
 * reduced sizes holds at the real ones when, for every reduced dim, every monomial of every
 * compared pair (its element's own coordinates counted) and of every atom's argument holds at
 * most that many elements.  The bound is structural, over the stage's expression DAG: a
 * relation's normal form at k is zero and shows nothing.
 *
 * Per node and dim, up to NALT forms, each a set F of elements and a count c: a monomial's
 * elements lie in F and at most c others (a symbol: its elements; a product: the unions and
 * the sums of the c's; a power k: k c; a sum over an axis: one form, the intersection of the
 * F's and the largest |F_i - F| + c_i; another sum: its terms' forms).  A value is N / D with D
 * a power of one base node (or MIXED, a product of several): a sum over one base multiplies a
 * term over a lower power by the missing power, over several it is the cross product.  An
 * atom holds the elements of its arguments (exp(a + b) is split into exp(a) exp(b) by the
 * engine: the product holds all of them).  Nodes whose element count grows with the size (an
 * atom of a sum over the dim, a max over it, a sum over it of fractions over their own
 * divisors) count as holding none, and where the bound then fails the dim is not tested in
 * that stage (docs/soundness.md: not covered).  Elements are bits while the reduced size is
 * at most 64; an axis whose extent is not one dim, or a larger dim, gives elements of unknown
 * identity, counted in c (an upper bound).
 */
#include <flint/flint.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hash.h"

#define BOUND_MAX 0xFFFF

/* One source tensor: its symbols are "prefix[i,j,...]"; per axis, the dim whose element the
   coordinate is (-1: none known), and the exponents of its extent's monomial over the dims
   (NULL: an extent not known) */
typedef struct {
    char *prefix;
    int ndim;
    int known[SP_MAX_DIMS];
    int *exps;               /* ndim x nd, or NULL */
    uint8_t unknown[SP_MAX_DIMS];
    /* the mesh cutoff's axes (index c into C->cutoff): a part of a pending reduction over a
       group with cut axis c holds its member's coordinate mco[c] along it (-1: none); a value
       decomposed into such parts holds one member of each axis in whole (a bit per c) */
    int64_t mco[SP_MAX_AXES];
    uint8_t whole;
} src_t;

struct sp_members {
    src_t *src;
    int nsrc, capsrc;
    uint32_t *slots;         /* open addressing: 0 empty, else 1 + index into src */
    uint32_t nslots;
    int nd;
    int64_t *blk;            /* per dim: the smallest block seen along it this run (0: none) */
    int *e;                  /* scratch: a monomial's exponents */
    uint8_t unsafe;          /* per cut axis (bit c): a decomposed value that is no source's
                                symbols, or a split over it of an axis that is no dim's:
                                members not known (sp_members_whole, sp_members_partition) */
    int64_t *pblk;           /* [c * nd + v]: dim v partitioned over cut axis c in blocks of
                                pblk (element p is member (p / pblk) % k's; 0: not, -1: in two
                                ways, members not known) */
    /* positional patterns (sp_members_slack, sp_members_couple): n elements of dim v in a
       monomial need an axis of E positions of which a pattern keeps s apart, E - s >= n; the
       smallest such room per dim (ROOM_NONE: no pattern), with its E and s (for regrow), and
       for an axis of no known dim, every dim's */
    int64_t *room, *room_e, *room_s;     /* [kind * nd + v]: per kind of pattern (SP_SLACK_*) */
    int64_t *maxs;                       /* [kind * nd + v]: the kind's largest slack (ROOM_NONE:
                                            every element) */
    int64_t room_all[SP_SLACK_KINDS], room_all_e[SP_SLACK_KINDS], room_all_s[SP_SLACK_KINDS],
        maxs_all[SP_SLACK_KINDS];
    int64_t *mine;                       /* [kind * (nd + 1) + v]: the smallest axis of the kind
                                            (v = nd: an axis of no known dim) */
    /* top-k's call sites (SP_SLACK_TOPK): a top-k of an earlier one's mask breaks ties among
       what that one left (helper-85's review), so their slacks add up, per call site and per
       side (the model's and the plan's values are computed apart); maxs[TOPK] holds the sum */
    struct tk_site { const void *site; uint32_t node; int side, slot; int64_t s; } *tk;
    int ntk, captk;
    /* pieces (sp_members_pieces) per dim: the first piece's extent and structure, and whether
       another one differs */
    int64_t *pc_n;
    uint8_t *pc_st;
    int64_t *couple;         /* [w * nd + v]: keys of dim w in a causal pattern whose queries
                                are of dim v != w: the room on the queries' axis; and queries
                                of dim w with keys of dim v: the room on the keys' axis */
    int64_t *couple_e, *couple_s; /* ... with its axis's extent and slack (for regrow) */
    int64_t couple_any;      /* the same with queries or keys of no known dim: every dim's */
};

static struct sp_members *get(sp_check_t *C)
{
    if (C->members == NULL) {
        C->members = flint_calloc(1, sizeof(struct sp_members));
        C->members->nd = C->ndims;
        C->members->blk = flint_calloc((size_t)(C->ndims ? C->ndims : 1), sizeof(int64_t));
    }
    return C->members;
}

static int find(const struct sp_members *M, const char *s)
{
    if (M == NULL || M->nslots == 0)
        return -1;
    uint32_t mask = M->nslots - 1;
    for (uint32_t i = (uint32_t)sp_str_hash(s) & mask;; i = (i + 1) & mask) {
        uint32_t v = M->slots[i];
        if (v == 0)
            return -1;
        if (strcmp(M->src[v - 1].prefix, s) == 0)
            return (int)(v - 1);
    }
}

/* Source k into the slots (the table has room) */
static void slot_in(struct sp_members *M, int k)
{
    uint32_t mask = M->nslots - 1, i = (uint32_t)sp_str_hash(M->src[k].prefix) & mask;
    while (M->slots[i] != 0)
        i = (i + 1) & mask;
    M->slots[i] = (uint32_t)k + 1;
}

static void rehash(struct sp_members *M)
{
    uint32_t n = M->nslots ? 2 * M->nslots : 1024;
    flint_free(M->slots);
    M->slots = flint_calloc(n, sizeof(uint32_t));
    M->nslots = n;
    for (int k = 0; k < M->nsrc; k++)
        slot_in(M, k);
}

/* Axis d of t: the exponents of its extent's monomial over the dims in e[0 .. nd); 1 when it
   is one dim's whole extent (*known that dim), 2 another extent known (a merge, a shard, a
   block), 0 none known.  An extent the run did not track (an operator without an offset rule,
   src/ops_pos.c pos_all) is one dim's when its reduced extent is that dim's reduced size and
   no other dim's, base or derived (the reduced sizes are distinct: docs/soundness.md,
   "Distinct reduced sizes"; no operator of the language reorders an axis) */
static int axis_info(sp_check_t *C, const sp_tensor_t *t, int d, int *e, int *known)
{
    int nd = C->ndims;
    *known = -1;
    int got = sp_pos_exps(C, t->pos[d].ext, e);
    const sp_pos_t *p = &t->pos[d];
    /* an offset, a view of merged or split axes, a rescaled window: the coordinate is not the
       element (src/ops.h sp_pos_t) */
    int plain = p->off[0] == 0 && p->off[1] == 0 && p->off[2] == 0 && p->view == 0 &&
                p->rescaled == 0;
    if (got == 0) {
        int hit = -1, n = 0, nred = 0;
        for (int v = 0; v < nd; v++)
            if (C->dims[v].red == t->shape[d]) {
                hit = v;
                n++;
                nred += C->dims[v].red < C->dims[v].real;
            }
        if (t->shape[d] == 1)
            return 1; /* one element */
        if (n == 0 || (n > 1 && nred > 0) || (n == 1 && C->dims[hit].derived))
            return 0;
        /* a merge of reduced dims whose sizes multiply to this extent would be another axis:
           taken as one only when no other reduced dim's size divides it */
        for (int w = 0; w < nd; w++)
            if (w != hit && !C->dims[w].derived && C->dims[w].red > 1 &&
                C->dims[w].red < C->dims[w].real && t->shape[d] % C->dims[w].red == 0)
                return 0;
        if (nred == 0)
            return 1; /* the extent of dims kept at their real sizes: no reduced element */
        if (!plain)
            return 0;
        e[hit] = 1;
        *known = hit;
        return 1;
    }
    int one = -1, other = 0;
    for (int v = 0; v < nd; v++) {
        if (e[v] == 0)
            continue;
        if (e[v] == 1 && one < 0)
            one = v;
        else
            other = 1;
    }
    if (one >= 0 && !other && got == 1 && plain && t->shape[d] > 0 &&
        t->shape[d] <= C->dims[one].red && C->dims[one].red % t->shape[d] == 0) {
        /* a whole extent: the coordinate is the element; a block's extent written as a
           fraction of the dim (rope's tables, [S, HD/2]): coordinate p is element p, the
           position the block's generator pairs with in every block (counting it so is at
           least the count in blocks: docs/soundness.md) */
        *known = one;
        return 1;
    }
    return 2;
}

void sp_members_record(sp_check_t *C, const char *prefix, const sp_tensor_t *like)
{
    struct sp_members *M = get(C);
    if (M->nd != C->ndims)
        return; /* dims changed under the record (not expected): nothing is known */
    int k = find(M, prefix);
    if (k < 0) {
        if (M->nsrc == M->capsrc) {
            M->capsrc = M->capsrc ? 2 * M->capsrc : 256;
            M->src = flint_realloc(M->src, (size_t)M->capsrc * sizeof(src_t));
        }
        k = M->nsrc++;
        memset(&M->src[k], 0, sizeof(src_t));
        M->src[k].prefix = flint_malloc(strlen(prefix) + 1);
        strcpy(M->src[k].prefix, prefix);
        if (2 * (uint32_t)M->nsrc > M->nslots)
            rehash(M);
        else
            slot_in(M, k);
    }
    src_t *S = &M->src[k];
    flint_free(S->exps);
    S->exps = NULL;
    for (int c = 0; c < SP_MAX_AXES; c++)
        S->mco[c] = -1;
    S->whole = 0;
    S->ndim = like->ndim < 0 ? 0 : like->ndim;
    int nd = C->ndims;
    if (S->ndim > 0 && nd > 0)
        S->exps = flint_calloc((size_t)S->ndim * (size_t)nd, sizeof(int));
    for (int d = 0; d < S->ndim; d++) {
        S->unknown[d] = 0;
        /* a shard's extent (over a mesh size) has local coordinates: no element known */
        if (axis_info(C, like, d, S->exps + (size_t)d * (size_t)nd, &S->known[d]) == 0)
            S->unknown[d] = 1; /* every reduced dim may have an element here */
    }
}

/* An axis of extent monomial id (one positive dim, of reduced size vr and real size vreal)
   splits that dim into fewer blocks at the reduced sizes than at the real ones: vr * scale <
   vreal, scale the extent's real over reduced value; an extent whose scale is not known is
   taken as one */
static int split_shrank(sp_check_t *C, int32_t id, int64_t vr, int64_t vreal)
{
    fmpq_t q;
    fmpq_init(q);
    int known = sp_pos_scale(C, id, q), r = 1;
    if (known) {
        fmpq_mul_si(q, q, vr);
        r = fmpq_cmp_si(q, vreal) < 0;
    }
    fmpq_clear(q);
    return r;
}

void sp_members_block(sp_check_t *C, const sp_tensor_t *t)
{
    int nd = C->ndims;
    if (t->ndim <= 0)
        return;
    struct sp_members *M = get(C);
    if (M->nd != nd)
        return;
    if (M->e == NULL)
        M->e = flint_malloc((size_t)(nd ? nd : 1) * sizeof(int));
    int *e = M->e;
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++) {
        if (!sp_pos_exps(C, t->pos[d].ext, e))
            continue;
        int one = -1, pos = 0;
        for (int v = 0; v < nd; v++)
            if (e[v] > 0) {
                pos++;
                if (e[v] == 1)
                    one = v;
            }
        if (pos != 1 || one < 0 || t->shape[d] <= 0)
            continue; /* a merge of dims, or a literal extent: no block of one dim */
        if (M->blk[one] == 0 || t->shape[d] < M->blk[one])
            M->blk[one] = t->shape[d];
        /* the other side of the split: the blocks' number, a block of the dim's elements too
           (those at one offset in every block), when the reduction made it smaller than at the
           real sizes: reshape(x, [R, B/R]) with R reduced to 3 has three rows of B, and a
           relation of more than three row sums holds at three only (helper-75's review,
           session 42: 120 e5 of the row sums was EQUIVALENT by default) */
        int64_t vr = C->dims[one].red, nb = t->shape[d] > 0 ? vr / t->shape[d] : 0;
        if (nb > 1 && vr % t->shape[d] == 0 && split_shrank(C, t->pos[d].ext, vr, C->dims[one].real) &&
            (M->blk[one] == 0 || nb < M->blk[one]))
            M->blk[one] = nb;
    }
}

/* The positional patterns' records (sp_members_slack, _couple, _pieces), emptied */
static void patterns_free(struct sp_members *M)
{
    flint_free(M->room);
    flint_free(M->room_e);
    flint_free(M->room_s);
    flint_free(M->maxs);
    flint_free(M->mine);
    flint_free(M->couple);
    flint_free(M->couple_e);
    flint_free(M->couple_s);
    flint_free(M->tk);
    flint_free(M->pc_n);
    flint_free(M->pc_st);
    M->room = M->room_e = M->room_s = M->maxs = M->mine = M->couple = M->couple_e =
        M->couple_s = M->pc_n = NULL;
    M->tk = NULL;
    M->pc_st = NULL;
    M->ntk = M->captk = 0;
}

void sp_members_new_run(sp_check_t *C)
{
    if (C->members != NULL && C->members->nd == C->ndims) {
        memset(C->members->blk, 0, (size_t)(C->ndims ? C->ndims : 1) * sizeof(int64_t));
        C->members->unsafe = 0;
        flint_free(C->members->pblk);
        C->members->pblk = NULL;
        patterns_free(C->members); /* the rooms of positional patterns are of this run's sizes */
    }
}

void sp_members_part(sp_check_t *C, const char *prefix, const int64_t *mco)
{
    struct sp_members *M = get(C);
    int k = find(M, prefix);
    if (k >= 0)
        for (int c = 0; c < C->ncutoff && c < SP_MAX_AXES; c++)
            M->src[k].mco[c] = mco[c];
}

/* Every distinct source of t's values: whole |= mask; a value that is no source's symbol (an
   expression: a part of an earlier decomposition) makes the members of those axes unknown */
void sp_members_whole(sp_check_t *C, const sp_tensor_t *t, uint8_t mask)
{
    struct sp_members *M = get(C);
    int64_t n = t->ndim < 0 ? 0 : sp_tensor_numel(t);
    char pre[1024];
    int last = -1;
    size_t lastlen = 0;
    for (int64_t i = 0; i < n && mask; i++) {
        sp_expr_t x = t->v[i];
        if (sp_expr_op(C->E, x) == SP_OP_CONST)
            continue; /* holds no element */
        if (sp_expr_op(C->E, x) != SP_OP_SYM) {
            M->unsafe |= mask;
            continue;
        }
        const char *nm = sp_expr_sym_name(C->E, x);
        if (strncmp(nm, "__", 2) == 0)
            continue; /* the hollow symbol of a sharded check (src/shard_exec.c): not read */
        const char *b = strrchr(nm, '[');
        size_t len = b ? (size_t)(b - nm) : strlen(nm);
        if (last >= 0 && len == lastlen && strncmp(M->src[last].prefix, nm, len) == 0 &&
            M->src[last].prefix[len] == '\0')
            continue;
        int k = -1;
        if (len < sizeof pre) {
            memcpy(pre, nm, len);
            pre[len] = '\0';
            k = find(M, pre);
        }
        if (k < 0) {
            M->unsafe |= mask;
            continue;
        }
        M->src[k].whole |= mask;
        last = k;
        lastlen = len;
    }
}

#define ROOM_NONE INT64_MAX

/* A pattern of slack s (-1: every element) on an axis of e positions: its room, e - s (0 at
   least) */
static int64_t room_of(int64_t e, int64_t s) { return s < 0 || s >= e ? 0 : e - s; }

static void room_put(int64_t *room, int64_t *re, int64_t *rs, int64_t e, int64_t s)
{
    int64_t r = room_of(e, s);
    if (r < *room) {
        *room = r;
        if (re != NULL) {
            *re = s < 0 ? 0 : e;
            *rs = s;
        }
    }
}

/* The dims t's axis d is made of, as bits of out[] (nd entries, 1: a dim of the axis); returns
   1 when known (none: an axis of unreduced dims), 0 when not */
static int axis_dims(sp_check_t *C, const sp_tensor_t *t, int d, uint8_t *out)
{
    struct sp_members *M = get(C);
    int nd = C->ndims, v = -1;
    if (M->e == NULL)
        M->e = flint_malloc((size_t)(nd ? nd : 1) * sizeof(int));
    memset(M->e, 0, (size_t)nd * sizeof(int));
    memset(out, 0, (size_t)nd);
    int got = axis_info(C, t, d, M->e, &v);
    if (v >= 0) {
        out[v] = 1;
        return 1;
    }
    int any = 0;
    for (int w = 0; got == 2 && w < nd; w++)
        if (M->e[w] > 0)
            out[w] = any = 1;
    return any || got == 1;
}

static void maxs_put(int64_t *m, int64_t s)
{
    if (*m != ROOM_NONE && (s < 0 || s > *m))
        *m = s < 0 ? ROOM_NONE : s;
}

/* top-k's slack s at a call site, on dim slot (nd: an axis of no known dim): the sum over the
   sites of its side, the larger side's, into *m */
static void tk_put(struct sp_members *M, const void *site, uint32_t node, int side, int slot,
                   int64_t s, int64_t *m)
{
    int at = -1;
    for (int i = 0; i < M->ntk && at < 0; i++)
        if (M->tk[i].site == site && M->tk[i].node == node && M->tk[i].side == side &&
            M->tk[i].slot == slot)
            at = i;
    if (at < 0) {
        if (M->ntk == M->captk) {
            M->captk = M->captk ? 2 * M->captk : 16;
            M->tk = flint_realloc(M->tk, (size_t)M->captk * sizeof *M->tk);
        }
        at = M->ntk++;
        M->tk[at] = (struct tk_site){site, node, side, slot, 0};
    }
    if (M->tk[at].s != ROOM_NONE && (s < 0 || s > M->tk[at].s))
        M->tk[at].s = s < 0 ? ROOM_NONE : s;
    int64_t sum[2] = {0, 0};
    for (int i = 0; i < M->ntk; i++) {
        const struct tk_site *x = &M->tk[i];
        if (x->slot != slot)
            continue;
        int64_t *t = &sum[x->side != 0];
        *t = *t == ROOM_NONE || x->s == ROOM_NONE ? ROOM_NONE : *t + x->s;
    }
    *m = sum[0] == ROOM_NONE || sum[1] == ROOM_NONE ? ROOM_NONE : sum[0] > sum[1] ? sum[0] : sum[1];
}

void sp_members_slack(sp_check_t *C, const sp_tensor_t *t, int d, int64_t s, int kind,
                      const void *site)
{
    struct sp_members *M = get(C);
    if (M->nd != C->ndims || d < 0 || d >= t->ndim || s == 0 || kind < 0 ||
        kind >= SP_SLACK_KINDS)
        return;
    int nd = C->ndims;
    if (M->room == NULL) {
        size_t n = (size_t)SP_SLACK_KINDS * (size_t)(nd ? nd : 1);
        M->room = flint_malloc(n * sizeof(int64_t));
        M->room_e = flint_calloc(n, sizeof(int64_t));
        M->room_s = flint_calloc(n, sizeof(int64_t));
        M->maxs = flint_calloc(n, sizeof(int64_t));
        size_t n1 = (size_t)SP_SLACK_KINDS * (size_t)(nd + 1);
        M->mine = flint_malloc(n1 * sizeof(int64_t));
        for (size_t i = 0; i < n; i++)
            M->room[i] = ROOM_NONE;
        for (size_t i = 0; i < n1; i++)
            M->mine[i] = ROOM_NONE;
        for (int k = 0; k < SP_SLACK_KINDS; k++) {
            M->room_all[k] = ROOM_NONE;
            M->maxs_all[k] = 0;
        }
    }
    /* the room is on this axis, of t->shape[d] positions: a chunk or a shard of the dim has
       fewer than its size (helper-80's review) */
    uint8_t *in = flint_malloc((size_t)(nd ? nd : 1));
    int known = axis_dims(C, t, d, in), ndims = 0;
    for (int w = 0; w < nd; w++)
        ndims += in[w];
    /* an axis that merges dims ([B*S]): a pattern's positions are not one dim's, and the
       merged extent is no dim's room (helper-84: the first two of B*S leave S - 2 of row 0,
       not B*S - 2): no room */
    if (ndims > 1)
        s = -1;
    /* an axis of more positions than its dim's elements ([2*S], a dim times a literal m): the
       room counts elements, not positions; s positions remove at most s / m elements whole
       (helper-85: S - 2 rows left of [2*S] less 4, not 2S - 4; deepseek3's router, top-6 of
       E = 4*EQ, removes at most one expert group); an extent that is no multiple: no room */
    int64_t ext = t->shape[d];
    for (int w = 0; w < nd && ndims == 1; w++)
        if (in[w] && ext > C->dims[w].red) {
            int64_t r = C->dims[w].red, m = r > 0 && ext % r == 0 ? ext / r : 0;
            s = m == 0 || s < 0 ? -1 : s < r ? s : r;
            ext = r;
        }
    if (s == 0) {
        flint_free(in);
        return;
    }
    size_t o = (size_t)kind * (size_t)nd, o1 = (size_t)kind * (size_t)(nd + 1);
    int side = C->pos_side != 0;
    /* a top-k of a mask (its operand holds a comparison: another top-k's, in a loop or a
       function called again; helper-86's review) is an evaluation of its own, the operand's
       first value telling them apart; one of other values counts once per call site (a
       layer's router in a loop, recomputed in the backward) */
    uint32_t node = 0;
    if (kind == SP_SLACK_TOPK && sp_tensor_numel(t) > 0 && t->v[0] != SP_EXPR_NONE &&
        (C->E->nodes[t->v[0]].flags & SP_NODE_CMP))
        node = t->v[0];
    /* a dim of the same sizes as the axis's (reduced and real) may be paired with it position
       by position (an elementwise product of [T] and [S]: helper-86): its room too */
    for (int w = 0; w < nd && ndims == 1; w++)
        if (in[w])
            for (int u = 0; u < nd; u++)
                if (u != w && C->dims[u].red == C->dims[w].red &&
                    C->dims[u].real == C->dims[w].real)
                    in[u] = 1;
    for (int w = known ? 0 : nd; w < nd + !known; w++) { /* w = nd: an axis of no known dim */
        if (w < nd && !in[w])
            continue;
        int all = w == nd;
        room_put(all ? &M->room_all[kind] : &M->room[o + w],
                 all ? &M->room_all_e[kind] : &M->room_e[o + w],
                 all ? &M->room_all_s[kind] : &M->room_s[o + w], ext, s);
        int64_t *mx = all ? &M->maxs_all[kind] : &M->maxs[o + w];
        if (kind == SP_SLACK_TOPK)
            tk_put(M, site, node, side, w, s, mx);
        else
            maxs_put(mx, s);
        if (ext < M->mine[o1 + (size_t)w])
            M->mine[o1 + (size_t)w] = ext;
    }
    flint_free(in);
}

/* The largest slack of dim v's patterns of kinds other than `kind` (-1: of every kind), summed
   over those kinds (a pattern of each kind may keep elements apart on one axis: their slacks
   add up; helper-84's review, a causal mask times top-k's ties), ROOM_NONE when one keeps
   every element apart */
static int64_t slack_other(const struct sp_members *M, int v, int kind)
{
    int64_t t = 0;
    for (int k = 0; k < SP_SLACK_KINDS && M->maxs != NULL; k++) {
        if (k == kind)
            continue;
        int64_t a = M->maxs[(size_t)k * (size_t)M->nd + (size_t)v], b = M->maxs_all[k];
        int64_t m = a == ROOM_NONE || b == ROOM_NONE ? ROOM_NONE
                    : k == SP_SLACK_TOPK             ? a + b
                    : a > b                          ? a : b;
        if (m == ROOM_NONE)
            return ROOM_NONE;
        t += m;
    }
    return t;
}

/* Dim v's room (ROOM_NONE: no pattern): over each kind, its smallest room (the dim's, or an
   axis of no known dim's) less the other kinds' slack; *e and *s of the tightest (s with the
   others' slack), for regrow */
static int64_t room_eff(const struct sp_members *M, int v, int64_t *e, int64_t *s)
{
    int64_t best = ROOM_NONE;
    *e = *s = 0;
    for (int k = 0; k < SP_SLACK_KINDS && M->room != NULL; k++) {
        size_t i = (size_t)k * (size_t)M->nd + (size_t)v;
        int all = M->room_all[k] < M->room[i];
        int64_t r = all ? M->room_all[k] : M->room[i];
        if (r == ROOM_NONE)
            continue;
        int64_t re = all ? M->room_all_e[k] : M->room_e[i], rs = all ? M->room_all_s[k] : M->room_s[i];
        if (k == SP_SLACK_TOPK && rs >= 0) {
            /* several call sites: the smallest axis less their summed slack */
            size_t o1 = (size_t)k * (size_t)(M->nd + 1);
            int64_t ex = M->mine[o1 + (size_t)v] < M->mine[o1 + (size_t)M->nd]
                             ? M->mine[o1 + (size_t)v] : M->mine[o1 + (size_t)M->nd];
            int64_t a = M->maxs[i], b = M->maxs_all[k];
            int64_t sk = a == ROOM_NONE || b == ROOM_NONE ? ROOM_NONE : a + b;
            if (sk == ROOM_NONE) {
                rs = -1;
            } else if (ex - sk < r) {
                r = ex > sk ? ex - sk : 0;
                re = ex;
                rs = sk;
            }
        }
        int64_t o = slack_other(M, v, k);
        if (o == ROOM_NONE || rs < 0) {
            r = 0;
            re = 0;
            rs = -1;
        } else {
            r = r > o ? r - o : 0;
            rs += o;
        }
        if (r < best) {
            best = r;
            *e = re;
            *s = rs;
        }
    }
    return best;
}

void sp_members_couple(sp_check_t *C, const sp_tensor_t *q, int qd, const sp_tensor_t *k,
                       int kd, int64_t s)
{
    struct sp_members *M = get(C);
    if (M->nd != C->ndims || qd < 0 || qd >= q->ndim || kd < 0 || kd >= k->ndim || s == 0)
        return;
    int nd = C->ndims;
    uint8_t *qin = flint_malloc((size_t)(nd ? nd : 1)), *kin = flint_malloc((size_t)(nd ? nd : 1));
    int qknown = axis_dims(C, q, qd, qin), kknown = axis_dims(C, k, kd, kin);
    if (M->couple == NULL) {
        size_t n = (size_t)(nd ? nd : 1) * (size_t)(nd ? nd : 1);
        M->couple = flint_malloc(n * sizeof(int64_t));
        M->couple_e = flint_calloc(n, sizeof(int64_t));
        M->couple_s = flint_calloc(n, sizeof(int64_t));
        for (size_t i = 0; i < n; i++)
            M->couple[i] = ROOM_NONE;
        M->couple_any = ROOM_NONE;
    }
    /* n kept keys need n + s query positions on the queries' axis; the other way, the n
       queries one key keeps or drops need n + s key positions (helper-82: the queries before
       key j, j of them, summed per key; s is |o| + 1, which for o < 0 leaves less room than
       the o - 1 + S the dropped ones can reach) */
    if (!qknown || !kknown) {
        room_put(&M->couple_any, NULL, NULL, q->shape[qd], s);
        room_put(&M->couple_any, NULL, NULL, k->shape[kd], s);
    } else {
        for (int w = 0; w < nd; w++)
            for (int v = 0; v < nd; v++)
                if (qin[v] && kin[w] && v != w) {
                    size_t wv = (size_t)w * (size_t)nd + (size_t)v,
                           vw = (size_t)v * (size_t)nd + (size_t)w;
                    room_put(&M->couple[wv], &M->couple_e[wv], &M->couple_s[wv], q->shape[qd], s);
                    room_put(&M->couple[vw], &M->couple_e[vw], &M->couple_s[vw], k->shape[kd], s);
                }
    }
    flint_free(qin);
    flint_free(kin);
}

void sp_members_pieces(sp_check_t *C, const sp_tensor_t *t, int d, int64_t n, int strided)
{
    struct sp_members *M = get(C);
    if (M->nd != C->ndims || d < 0 || d >= t->ndim || n <= 0 || n >= t->shape[d])
        return;
    int nd = C->ndims, one = -1, pos = 0;
    if (M->e == NULL)
        M->e = flint_malloc((size_t)(nd ? nd : 1) * sizeof(int));
    if (sp_pos_exps(C, t->pos[d].ext, M->e))
        for (int v = 0; v < nd; v++)
            if (M->e[v] > 0) {
                pos++;
                if (M->e[v] == 1)
                    one = v;
            }
    /* a merge of dims, or an extent not known (repeat_interleave's output): a block of every
       dim.  Two kinds of pieces on one dim cut each other: rope's halves and its even and odd
       positions make quarters; pieces of two extents make pieces no block bounds (helper-85's
       review), so the dim gets no room */
    if (M->pc_n == NULL) {
        M->pc_n = flint_calloc((size_t)nd + 1, sizeof(int64_t));
        M->pc_st = flint_calloc((size_t)nd + 1, 1);
    }
    int apart = 0;
    for (int v = 0; v < nd; v++) {
        if (!(v == one || pos != 1 || one < 0))
            continue;
        int64_t b = n;
        if (M->pc_n[v] == 0) {
            M->pc_n[v] = n;
            M->pc_st[v] = (uint8_t)(strided != 0);
        } else if (M->pc_n[v] != n) {
            apart = 1;
        } else if (M->pc_st[v] != (strided != 0)) {
            b = n / 2 > 0 ? n / 2 : 1;
        }
        if (M->blk[v] == 0 || b < M->blk[v])
            M->blk[v] = b;
    }
    if (apart)
        sp_members_slack(C, t, d, -1, SP_SLACK_PREFIX, NULL);
}

/* Does t's axis d hold a dim that a causal pattern reached this run (every axis, once one of no
   known dim has)? */
static int diag_axis(sp_check_t *C, const sp_tensor_t *t, int d, uint8_t *in)
{
    const struct sp_members *M = C->members;
    if (M == NULL || M->maxs == NULL)
        return 0;
    if (M->maxs_all[SP_SLACK_DIAG] != 0)
        return 1;
    int nd = C->ndims, hit = 0;
    if (!axis_dims(C, t, d, in))
        return 1; /* no dim known: possibly a reached one */
    for (int v = 0; v < nd; v++)
        hit |= in[v] && M->maxs[(size_t)SP_SLACK_DIAG * (size_t)nd + (size_t)v] != 0;
    return hit;
}

void sp_members_masks(sp_check_t *C, const sp_tensor_t *y, const sp_tensor_t *in, int nin)
{
    struct sp_members *M = get(C);
    if (y->masks <= 1 || M->nd != C->ndims || M->maxs == NULL)
        return;
    /* a composition of masks of slack m counts positions between: f1[t, s] f2[s, u] summed
       over s is u - t - 1, a value that grows with the gap past its threshold.  Its threshold
       is at most m and it is a polynomial in the gap of degree below m (one per sum along the
       chain), so two such values that agree on the gaps up to 2m - 1 agree on all: the axes
       keep 2m - 1 positions apart, so that one element of each dim asks for 2m positions
       (helper-90's review: a single element of T and of U never grew the dims past 3, where
       u - t - 1 never reaches 2) */
    int64_t m = sp_masks_add(2 * (int64_t)y->masks, -1);
    uint8_t *dims = flint_malloc((size_t)(C->ndims ? C->ndims : 1));
    for (int k = -1; k < nin; k++) {
        const sp_tensor_t *t = k < 0 ? y : &in[k];
        int ax[SP_MAX_DIMS], n = 0;
        for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++)
            if (t->shape[d] > 1 && diag_axis(C, t, d, dims))
                ax[n++] = d;
        for (int i = 0; i < n; i++)
            sp_members_slack(C, t, ax[i], m, SP_SLACK_DIAG, NULL);
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                sp_members_couple(C, t, ax[i], t, ax[j], m);
    }
    flint_free(dims);
}

/* The slack of v's patterns of literal positions (prefixes, top-k's ties), which may fall in
   one block: a block keeps that many fewer (helper-85: rope's halves times top-k's ties) */
static int64_t block_slack(const struct sp_members *M, int v)
{
    return M->maxs == NULL ? 0 : slack_other(M, v, -1);
}

void sp_members_dim(const sp_check_t *C, int v, int64_t *blk, int64_t *blk_s, int64_t *room_e,
                    int64_t *room_s, int *on)
{
    const struct sp_members *M = C->members;
    *blk = *blk_s = *room_e = *room_s = 0;
    *on = v;
    if (M == NULL || M->nd != C->ndims || v < 0 || v >= M->nd)
        return;
    *blk = M->blk[v];
    int64_t lim = M->blk[v] > 0 && M->blk[v] < C->dims[v].red ? M->blk[v] : C->dims[v].red;
    if (M->blk[v] > 0 && M->blk[v] < C->dims[v].red) {
        int64_t bs = block_slack(M, v);
        *blk_s = bs == ROOM_NONE ? -1 : bs;
        lim = bs == ROOM_NONE ? 0 : lim > bs ? lim - bs : 0;
    }
    int64_t r = room_eff(M, v, room_e, room_s);
    if (r < lim)
        lim = r;
    /* the tightest room on another dim's axis (as sp_members_test reads it): that dim grows */
    int64_t o = M->couple != NULL ? slack_other(M, v, SP_SLACK_DIAG) : 0;
    for (int u = 0; u < M->nd && M->couple != NULL; u++) {
        const sp_dimdef_t *U = &C->dims[u];
        size_t vu = (size_t)v * (size_t)M->nd + (size_t)u;
        int64_t c = M->couple[vu];
        if (U->derived || U->red <= 0 || U->red >= U->real || c == ROOM_NONE)
            continue;
        c = o == ROOM_NONE ? 0 : c > o ? c - o : 0;
        if (c >= lim)
            continue;
        lim = c;
        *on = u;
        *room_e = o == ROOM_NONE ? 0 : M->couple_e[vu];
        *room_s = o == ROOM_NONE ? -1 : M->couple_s[vu] + o;
    }
}

int sp_members_coupled(const sp_check_t *C, int v, int u)
{
    const struct sp_members *M = C->members;
    if (M == NULL || M->couple == NULL || M->nd != C->ndims || v == u || v < 0 || u < 0 ||
        v >= M->nd || u >= M->nd)
        return 0;
    return M->couple[(size_t)v * (size_t)M->nd + (size_t)u] != ROOM_NONE ||
           M->couple[(size_t)u * (size_t)M->nd + (size_t)v] != ROOM_NONE;
}

void sp_members_partition(sp_check_t *C, const sp_tensor_t *t, int d, int c, int64_t blk)
{
    struct sp_members *M = get(C);
    if (c < 0 || c >= SP_MAX_AXES || c >= C->ncutoff || M->nd != C->ndims)
        return;
    int nd = C->ndims, v = -1;
    if (M->e == NULL)
        M->e = flint_malloc((size_t)(nd ? nd : 1) * sizeof(int));
    if (d >= 0 && d < t->ndim && axis_info(C, t, d, M->e, &v) != 1)
        v = -1;
    if (v < 0 || blk <= 0) {
        M->unsafe |= (uint8_t)(1u << c); /* an axis that is no dim's, or uneven blocks */
        return;
    }
    if (M->pblk == NULL)
        M->pblk = flint_calloc((size_t)SP_MAX_AXES * (size_t)(nd ? nd : 1), sizeof(int64_t));
    int64_t *p = &M->pblk[(size_t)c * (size_t)nd + (size_t)v];
    *p = *p == 0 || *p == blk ? blk : -1;
}

void sp_members_free(sp_check_t *C)
{
    struct sp_members *M = C->members;
    if (M == NULL)
        return;
    for (int k = 0; k < M->nsrc; k++) {
        flint_free(M->src[k].prefix);
        flint_free(M->src[k].exps);
    }
    flint_free(M->src);
    flint_free(M->slots);
    flint_free(M->blk);
    flint_free(M->pblk);
    patterns_free(M);
    flint_free(M->e);
    flint_free(M);
    C->members = NULL;
    sp_members_roles_end(C);
}

/* ---- the test ----------------------------------------------------------------------------- */

/* A set of elements and a count beyond it: monomials whose elements lie in f and at most c
   others */
typedef struct {
    uint64_t f;
    uint32_t c;
} mset_t;

#define NALT 4               /* alternatives kept per node before they are merged */

/* Monomials of one of n such forms */
typedef struct {
    int n;
    mset_t a[NALT];
} alts_t;

/* A node's value is N / D: N's monomials as alts; D is 1 (den 0), a base node's value to the
   power dexp (den = 1 + the base, whose own N is D's), or a product of several (den MIXED,
   its elements in fd and cd others); U every element the cone holds, uc its elements of
   unknown identity. */
typedef struct {
    alts_t num;
    uint64_t u, fd;
    uint32_t uc, cd;
    uint32_t den, dexp;
    int sumc;                /* a sum over an axis in the cone made elements of its terms a count */
    int axs;                 /* ... such a sum not behind an atom: an exp of the node is a
                                product over the sum's terms (the engine splits exp(a + b)) */
    int mono;                /* a constant times a product of powers of symbols (a Laurent
                                monomial: a negative power of it is one too, no divisor) */
} sm_t;

#define MIXED UINT32_MAX

static uint32_t sat(uint64_t x) { return x > BOUND_MAX ? BOUND_MAX : (uint32_t)x; }

/* A symbol of the stage, resolved once: its source (-1: none recorded) and coordinates */
typedef struct {
    int src;                 /* index into M->src, or -1 */
    int nco;
    uint16_t unk_all;        /* no source, or coordinates that do not fit it: elements of
                                unknown identity of every dim */
    int64_t co[SP_MAX_DIMS];
} rsym_t;

static void resolve_sym(const struct sp_members *M, const char *name, rsym_t *r)
{
    memset(r, 0, sizeof *r);
    r->src = -1;
    if (strncmp(name, "__", 2) == 0)
        return; /* the engine's constants (__sqrt_pi) hold nothing */
    size_t n = strlen(name);
    int s = find(M, name);
    char pre[1024];
    if (s < 0 && n > 0 && n < sizeof pre && name[n - 1] == ']') {
        size_t b = n - 1;
        while (b > 0 && name[b] != '[')
            b--;
        memcpy(pre, name, b);
        pre[b] = 0;
        s = find(M, pre);
        if (s >= 0) {
            const char *p = name + b + 1;
            while (*p && *p != ']' && r->nco < SP_MAX_DIMS) {
                r->co[r->nco++] = strtoll(p, (char **)&p, 10);
                if (*p == ',')
                    p++;
            }
        }
    }
    if (s < 0) { /* not a source the run recorded: an element of every dim per coordinate */
        uint16_t nc = 1;
        for (const char *p = strrchr(name, '['); p != NULL && *p; p++)
            nc = (uint16_t)(nc + (*p == ','));
        r->unk_all = nc;
        return;
    }
    if (r->nco != M->src[s].ndim) {
        r->unk_all = (uint16_t)(M->src[s].ndim > 0 ? M->src[s].ndim : 1);
        return;
    }
    r->src = s;
}

/* A resolved symbol's elements of dim v (bits when k <= 64) and its elements of unknown
   identity */
static void sym_members(const struct sp_members *M, const rsym_t *r, int v, int64_t k,
                        uint64_t *bits, uint32_t *unk)
{
    *bits = 0;
    *unk = r->unk_all;
    if (v >= M->nd) { /* the members of cut axis v - nd: a part's own, or one of a whole */
        *unk = r->unk_all ? 1 : 0;
        if (r->src < 0)
            return;
        const src_t *S = &M->src[r->src];
        int c = v - M->nd;
        int64_t m = S->mco[c];
        if (m >= 0 && m < k && k <= 64)
            *bits = (uint64_t)1 << m;
        else if (m >= 0)
            (*unk)++;
        if (S->whole >> c & 1)
            (*unk)++;
        /* the elements of dims partitioned over the axis: their members' own */
        for (int d = 0; M->pblk != NULL && d < S->ndim; d++) {
            int w = S->known[d];
            int64_t b = w >= 0 && !S->unknown[d] ? M->pblk[(size_t)c * (size_t)M->nd + (size_t)w]
                                                 : 0;
            if (b > 0 && r->co[d] >= 0 && (r->co[d] / b) % k < 64)
                *bits |= (uint64_t)1 << ((r->co[d] / b) % k);
            else if (b != 0)
                (*unk)++;
        }
        return;
    }
    if (r->src < 0)
        return;
    const src_t *S = &M->src[r->src];
    for (int d = 0; d < S->ndim; d++) {
        if (S->unknown[d]) {
            (*unk)++;
        } else if (S->known[d] == v) {
            if (k <= 64 && r->co[d] >= 0 && r->co[d] < k)
                *bits |= (uint64_t)1 << r->co[d];
            else
                (*unk)++;
        } else if (S->exps != NULL) {
            int e = S->exps[(size_t)d * (size_t)M->nd + (size_t)v];
            *unk = sat((uint64_t)*unk + (uint64_t)(e < 0 ? -e : e)); /* a merged or a local axis */
        }
    }
}

/* The dims (bit w < 64) and cut axes (bit nd + c) a resolved symbol holds an element of; *own
   gets the cut axes whose members hold it as their own (a part, a partitioned dim's element) */
static uint64_t sym_held(const struct sp_members *M, const rsym_t *r, int ncut, uint8_t *own)
{
    int nd = M->nd;
    uint64_t held = 0;
    if (r->unk_all)
        return ~(uint64_t)0;
    if (r->src < 0)
        return 0;
    const src_t *S = &M->src[r->src];
    for (int d = 0; d < S->ndim; d++) {
        if (S->unknown[d])
            held = ~(uint64_t)0;
        else if (S->exps != NULL)
            for (int w = 0; w < nd && w < 64; w++)
                if (S->exps[(size_t)d * (size_t)nd + (size_t)w] != 0)
                    held |= (uint64_t)1 << w;
    }
    for (int c = 0; c < ncut; c++) {
        int mine = S->mco[c] >= 0;
        for (int d = 0; !mine && M->pblk != NULL && d < S->ndim; d++)
            mine = S->known[d] >= 0 && !S->unknown[d] &&
                   M->pblk[(size_t)c * (size_t)nd + (size_t)S->known[d]] != 0;
        if (mine)
            *own |= (uint8_t)(1u << c);
        if ((mine || (S->whole >> c & 1)) && nd + c < 64)
            held |= (uint64_t)1 << (nd + c);
    }
    return held;
}

static int popc(uint64_t x) { return __builtin_popcountll(x); }

static uint32_t msize(mset_t m) { return (uint32_t)popc(m.f) + m.c; }

static mset_t mjoin(mset_t a, mset_t b) /* the elements of a product */
{
    mset_t r = {a.f | b.f, sat((uint64_t)a.c + b.c)};
    return r;
}

/* One form for all of A's: the elements every form has, and the most any has beyond them */
static mset_t merged(const alts_t *A)
{
    mset_t r = {~(uint64_t)0, 0};
    for (int i = 0; i < A->n; i++)
        r.f &= A->a[i].f;
    if (A->n == 0)
        r.f = 0;
    for (int i = 0; i < A->n; i++) {
        uint32_t w = (uint32_t)popc(A->a[i].f & ~r.f) + A->a[i].c;
        if (w > r.c)
            r.c = w;
    }
    return r;
}

static uint32_t asize(const alts_t *A)
{
    uint32_t b = 0;
    for (int i = 0; i < A->n; i++)
        if (msize(A->a[i]) > b)
            b = msize(A->a[i]);
    return b;
}

/* Add form m to A (a form that another covers is dropped; past NALT all are merged) */
static void aput(alts_t *A, mset_t m)
{
    for (int i = 0; i < A->n; i++) {
        mset_t o = A->a[i];
        if ((uint32_t)popc(m.f & ~o.f) + m.c <= o.c || (m.f == o.f && m.c <= o.c))
            return; /* m's monomials are o's */
    }
    int k = 0;
    for (int i = 0; i < A->n; i++) {
        mset_t o = A->a[i];
        if (!((uint32_t)popc(o.f & ~m.f) + o.c <= m.c || (o.f == m.f && o.c <= m.c)))
            A->a[k++] = o;
    }
    A->n = k;
    if (A->n == NALT) {
        mset_t g = merged(A);
        A->n = 1;
        A->a[0] = g;
        aput(A, m);
        return;
    }
    A->a[A->n++] = m;
}

static void aone(alts_t *A, mset_t m)
{
    A->n = 1;
    A->a[0] = m;
}

/* The forms of a product of A's and B's monomials */
static int azero(const alts_t *A)
{
    return A->n == 1 && A->a[0].f == 0 && A->a[0].c == 0;
}

static void aprod(alts_t *r, const alts_t *A, const alts_t *B)
{
    if (azero(A) || azero(B)) { /* a factor that holds nothing */
        const alts_t *o = azero(A) ? B : A;
        if (r != o)
            *r = *o;
        return;
    }
    alts_t t = {0};
    for (int i = 0; i < A->n; i++)
        for (int j = 0; j < B->n; j++)
            aput(&t, mjoin(A->a[i], B->a[j]));
    *r = t;
}

static void aprod1(alts_t *r, const alts_t *A, mset_t m)
{
    alts_t t = {0};
    for (int i = 0; i < A->n; i++)
        aput(&t, mjoin(A->a[i], m));
    *r = t;
}

/* k-th power's forms: each form's elements, k times its count */
static void apow(alts_t *r, const alts_t *A, uint32_t k)
{
    if (k == 1) {
        if (r != A)
            *r = *A;
        return;
    }
    alts_t t = {0};
    for (int i = 0; i < A->n; i++) {
        mset_t m = {A->a[i].f, sat((uint64_t)A->a[i].c * k)};
        aput(&t, m);
    }
    *r = t;
}

/* D's forms */
static void den_alts(const sm_t *sm, const sm_t *a, alts_t *r)
{
    r->n = 0;
    if (a->den == MIXED) {
        mset_t m = {a->fd, a->cd};
        aone(r, m);
    } else if (a->den != 0) {
        apow(r, &sm[a->den - 1].num, a->dexp ? a->dexp : 1); /* base^dexp */
    } else {
        mset_t z = {0, 0};
        aone(r, z);
    }
}

static int aholds(const alts_t *A)
{
    for (int i = 0; i < A->n; i++)
        if (A->a[i].f != 0 || A->a[i].c != 0)
            return 1;
    return 0;
}

/* Every element of an atom's argument: N's and D's */
static uint32_t arg_bound(const sm_t *sm, const sm_t *a)
{
    alts_t d, t;
    den_alts(sm, a, &d);
    aprod(&t, &a->num, &d);
    return asize(&t);
}

static int is_atom(sp_op_t op)
{
    switch (op) {
    case SP_OP_EXP: case SP_OP_LOG: case SP_OP_SQRT: case SP_OP_RSQRT: case SP_OP_TANH:
    case SP_OP_SIGMOID: case SP_OP_SILU: case SP_OP_GELU: case SP_OP_ERF: case SP_OP_MAX:
    case SP_OP_MIN: case SP_OP_RELU: case SP_OP_ABS: case SP_OP_CLAMP: case SP_OP_CMP:
    case SP_OP_WHERE:
        return 1;
    default:
        return 0;
    }
}

/* a's numerator as one over base^m (base 0: none): times the power of base a lacks */
static void over_base(const sm_t *sm, const sm_t *a, uint32_t base, uint32_t m, alts_t *r)
{
    uint32_t gap = base ? m - (a->den ? a->dexp : 0) : 0;
    if (gap == 0) {
        *r = a->num;
        return;
    }
    alts_t bp;
    apow(&bp, &sm[base - 1].num, gap);
    aprod(r, &a->num, &bp);
}

/* r = the product of the values of the nodes ids[0..n) of sm, each to the power pw[i] */
static void product(const sm_t *sm, sm_t *r, const uint32_t *ids, const int64_t *pw, uint32_t n)
{
    alts_t num, dall;
    mset_t z = {0, 0};
    aone(&num, z);
    aone(&dall, z);
    uint32_t base = 0, exp = 0;
    int mixed = 0;
    for (uint32_t i = 0; i < n; i++) {
        const sm_t *a = &sm[ids[i]];
        if (a->den == 0 && azero(&a->num))
            continue; /* holds no element: a constant factor for the bound */
        int64_t k = pw[i] < 0 ? -pw[i] : pw[i];
        uint32_t kk = k > BOUND_MAX ? BOUND_MAX : (uint32_t)k;
        alts_t an, ad;
        den_alts(sm, a, &ad);
        apow(&an, &a->num, kk);
        apow(&ad, &ad, kk);
        /* a to a positive power: N^k / D^k; to a negative one: D^k / N^k (a monomial's
           inverse is a monomial: its elements are the numerator's) */
        int inv = pw[i] < 0 && !a->mono;
        const alts_t *up = inv ? &ad : &an, *down = inv ? &an : &ad;
        aprod(&num, &num, up);
        if (!aholds(down))
            continue;
        aprod(&dall, &dall, down);
        uint32_t b;
        uint64_t e;
        if (!inv) {
            if (a->den == MIXED) {
                mixed = 1;
                continue;
            }
            b = a->den;
            e = (uint64_t)a->dexp * kk;
        } else {
            if (a->den != 0) { /* (N/D)^-k = D^k / N^k: N is no node */
                mixed = 1;
                continue;
            }
            b = 1 + ids[i];
            e = kk;
        }
        if (base != 0 && base != b)
            mixed = 1;
        base = b;
        exp = sat((uint64_t)exp + e);
    }
    r->num = num;
    if (mixed) {
        mset_t d = merged(&dall);
        r->den = MIXED;
        r->dexp = 0;
        r->fd = d.f;
        r->cd = d.c;
    } else {
        r->den = base;
        r->dexp = base ? exp : 0;
    }
}

/* The most elements an argument of atom at holds */
static int atom_bound(const sm_t *sm, sp_ectx_t E, sp_expr_t at)
{
    uint32_t b = 0;
    for (uint32_t i = 0; i < sp_expr_nargs(E, at); i++) {
        uint32_t ab = arg_bound(sm, &sm[sp_expr_arg(E, at, i)]);
        if (ab > b)
            b = ab;
    }
    return (int)(b > BOUND_MAX ? BOUND_MAX : b);
}

/* The summaries of the nodes [1, len) of E for dim v of k elements (full: all k bits), in
   order (a node's arguments come before it).  Returns -1 when an atom's argument exceeds lim
   (*at that atom), else 1; *opaques counts the nodes taken as holding no element (an atom of
   a sum over the dim, a max over it, a sum over it of fractions over their own divisors) */
static int summarize(const struct sp_members *M, sp_ectx_t E, uint32_t len, int v, int64_t k,
                     uint32_t lim, const uint32_t *symix, const rsym_t *rs, const uint64_t *held,
                     sm_t *sm, sp_expr_t *at, int *opaques, uint32_t *allmin)
{
    uint64_t bit = v < 64 ? (uint64_t)1 << v : 0;
    sm_t zero;
    memset(&zero, 0, sizeof zero);
    zero.num.n = 1;
    zero.mono = 1;
    uint32_t sid[16];
    int64_t spw[16];
    mset_t z = {0, 0};
    if (len > 0) {
        memset(&sm[0], 0, sizeof sm[0]); /* node 0 is unused */
        aone(&sm[0].num, z);
    }
    for (uint32_t x = 1; x < len; x++) {
        if (bit != 0 && !(held[x] & bit)) {
            sm[x] = zero; /* no element of v in its cone: nothing to bound */
            continue;
        }
        const sp_node_t *nd = sp_expr_node(E, x);
        sm_t *r = &sm[x];
        memset(r, 0, sizeof *r);
        sp_op_t op = (sp_op_t)nd->op;
        uint32_t na = nd->nargs;
        if (op == SP_OP_SYM) {
            mset_t m = {0, 0};
            sym_members(M, &rs[symix[x]], v, k, &m.f, &m.c);
            aone(&r->num, m);
            r->u = m.f;
            r->uc = m.c;
            r->mono = 1;
            continue;
        }
        if (op == SP_OP_CONST || op == 0 || na == 0) {
            aone(&r->num, z);
            r->mono = 1;
            continue;
        }
        for (uint32_t i = 0; i < na; i++) {
            const sm_t *a = &sm[sp_expr_arg(E, x, i)];
            r->u |= a->u;
            r->uc = sat((uint64_t)r->uc + a->uc);
            r->sumc |= a->sumc;
            r->axs |= a->axs;
        }
        if (is_atom(op)) {
            /* exp of an axis sum is the product of the exps of its terms, at the reduced size
               over the n elements they hold: a monomial of all n, which a monomial of exactly
               n elements of the other side (e_n of the exps) can match at that size only.  The
               smallest such n bounds the rest strictly (sp_members_test; docs/soundness.md:
               `e3(exp(x))` against `exp(sum(x))`, session 44) */
            if (op == SP_OP_EXP && r->axs) {
                uint32_t n = sat((uint64_t)popc(r->u) + r->uc);
                if (n < *allmin)
                    *allmin = n;
            }
            r->axs = 0;
            /* exp of a sum over the dim's elements is a product over all of them, at every
               size: no bound (and so is any atom of such a sum): taken as holding none, so
               the rest of the stage is bounded still (docs/soundness.md: not covered) */
            int opaque = r->sumc;
            if (!opaque && (op == SP_OP_MAX || op == SP_OP_MIN)) {
                /* a max over an axis (amax, a softmax's shift) has an extent of arguments, each
                   of other elements: no bound.  One argument with elements (relu's max(x, 0)),
                   or all with the same: theirs */
                const sm_t *h = NULL;
                for (uint32_t i = 0; i < na; i++) {
                    const sm_t *a = &sm[sp_expr_arg(E, x, i)];
                    if (a->u == 0 && a->uc == 0)
                        continue;
                    if (h != NULL && (h->u != a->u || h->uc != 0 || a->uc != 0))
                        opaque = 1;
                    h = a;
                }
            }
            for (uint32_t i = 0; i < na && *at == SP_EXPR_NONE; i++)
                if (arg_bound(sm, &sm[sp_expr_arg(E, x, i)]) > lim)
                    *at = x; /* the first; the pass goes on (it counts the opaque nodes) */
            if (opaque) {
                aone(&r->num, z);
                r->sumc = 1;
                (*opaques)++;
                continue;
            }
            mset_t m = {r->u, r->uc};
            aone(&r->num, m);
            continue;
        }
        if (op == SP_OP_MUL || op == SP_OP_POW || op == SP_OP_DIV) {
            uint32_t *ids = sid;
            int64_t *pw = spw;
            if (na > 16) {
                ids = flint_malloc(na * sizeof(uint32_t));
                pw = flint_malloc(na * sizeof(int64_t));
            }
            for (uint32_t i = 0; i < na; i++) {
                ids[i] = sp_expr_arg(E, x, i);
                pw[i] = op == SP_OP_POW ? nd->param : op == SP_OP_DIV && i == 1 ? -1 : 1;
            }
            product(sm, r, ids, pw, na);
            r->mono = 1;
            for (uint32_t i = 0; i < na; i++)
                r->mono &= sm[ids[i]].mono;
            if (na > 16) {
                flint_free(ids);
                flint_free(pw);
            }
            continue;
        }
        /* ADD, SUB, NEG: over one base (or none) the numerators add, a term over a lower
           power of the base multiplied by it; over several, the cross product */
        uint32_t base = 0, mexp = 0;
        int mixed = 0;
        for (uint32_t i = 0; i < na; i++) {
            const sm_t *a = &sm[sp_expr_arg(E, x, i)];
            if (a->den == 0)
                continue;
            if (a->den == MIXED || (base != 0 && a->den != base))
                mixed = 1;
            base = a->den;
            if (a->dexp > mexp)
                mexp = a->dexp;
        }
        alts_t acc = {0};
        if (mixed && (nd->flags & (SP_NODE_AXSUM | SP_NODE_XSUM))) {
            /* a sum over an axis of fractions over the terms' own divisors (an attention
               gradient's rows): their common divisor is a product over the axis, at every
               size; taken as holding none (not covered) */
            aone(&r->num, z);
            r->den = 0;
            r->sumc = r->axs = 1;
            (*opaques)++;
            continue;
        }
        if (mixed) {
            alts_t dall;
            aone(&dall, z);
            for (uint32_t i = 0; i < na; i++) {
                const sm_t *a = &sm[sp_expr_arg(E, x, i)];
                alts_t ad, t;
                den_alts(sm, a, &ad);
                aprod(&t, &a->num, &ad);
                for (int j = 0; j < t.n; j++)
                    aput(&acc, t.a[j]);
                aprod(&dall, &dall, &ad);
            }
            mset_t all = merged(&acc), d = merged(&dall);
            /* a term's numerator times every other divisor: within the elements of all */
            all = mjoin(all, d);
            aone(&r->num, all);
            r->den = MIXED;
            r->fd = d.f;
            r->cd = d.c;
            continue;
        }
        /* a sum an operator formed over an axis (its number of terms an extent) keeps one form:
           the elements all its terms hold, the others a count (the summed index, whichever
           element it is at any size); another sum (a fixed number of terms) keeps its terms'
           forms, up to NALT */
        int axis = (nd->flags & (SP_NODE_AXSUM | SP_NODE_XSUM)) != 0;
        /* an axis sum: the elements every term's forms hold (a first pass), then the most any
           holds beyond them (a second) */
        mset_t g = {~(uint64_t)0, 0};
        for (int pass = axis ? 0 : 1; pass < 2; pass++) {
            for (uint32_t i = 0; i < na; i++) {
                alts_t t;
                over_base(sm, &sm[sp_expr_arg(E, x, i)], base, mexp, &t);
                for (int j = 0; j < t.n; j++) {
                    if (!axis) {
                        aput(&acc, t.a[j]);
                    } else if (pass == 0) {
                        g.f &= t.a[j].f;
                    } else {
                        uint32_t w = (uint32_t)popc(t.a[j].f & ~g.f) + t.a[j].c;
                        if (w > g.c)
                            g.c = w;
                        if (t.a[j].f & ~g.f)
                            r->sumc = r->axs = 1;
                    }
                }
            }
        }
        if (axis) {
            if (na == 0)
                g.f = 0;
            if (g.c > 0)
                r->sumc = r->axs = 1;
            aone(&acc, g);
        }
        r->num = acc;
        r->den = base;
        r->dexp = base ? mexp : 0;
    }
    return *at == SP_EXPR_NONE ? 1 : -1;
}

/* The most elements a monomial of a - b holds, each times the compared element's co: over one
   base (or none) the numerators, a term over a lower power of the base multiplied by it; else
   the cross product */
static uint32_t pair_bound(const sm_t *sm, const sm_t *pa, const sm_t *pb, mset_t co)
{
    alts_t xa, ya;
    if (pa->den != MIXED && pb->den != MIXED && (pa->den == pb->den || !pa->den || !pb->den)) {
        uint32_t base = pa->den ? pa->den : pb->den;
        uint32_t m = pa->dexp > pb->dexp ? pa->dexp : pb->dexp;
        over_base(sm, pa, base, m, &xa);
        over_base(sm, pb, base, m, &ya);
    } else {
        alts_t da, db;
        den_alts(sm, pa, &da);
        den_alts(sm, pb, &db);
        aprod(&xa, &pa->num, &db);
        aprod(&ya, &pb->num, &da);
    }
    aprod1(&xa, &xa, co);
    aprod1(&ya, &ya, co);
    uint32_t bx = asize(&xa), by = asize(&ya);
    return bx > by ? bx : by;
}

/* The stage's model tensor's axes (the dim whose element each coordinate is, else the
   exponents of its extent: known, got, *mexp) and each pair's element in global coordinates
   (*gco, md per pair): once for all dims; the caller frees *mexp and *gco */
static void stage_coords(sp_check_t *C, const sp_stage_t *s, const int64_t *rank,
                         const int64_t *index, int64_t nq, int *known, int *got, int **mexp,
                         int64_t **gco)
{
    int nd = C->ndims, md = s->model.ndim < 0 ? 0 : s->model.ndim;
    *mexp = flint_malloc((size_t)(md ? md : 1) * (size_t)(nd ? nd : 1) * sizeof(int));
    for (int d = 0; d < md; d++)
        got[d] = axis_info(C, &s->model, d, *mexp + (size_t)d * (size_t)nd, &known[d]);
    *gco = flint_malloc((size_t)(nq ? nq : 1) * (size_t)(md ? md : 1) * sizeof(int64_t));
    for (int64_t q = 0; q < nq; q++) {
        int64_t ls[SP_MAX_DIMS], st, en, rem = index[q], *g = *gco + q * md;
        sp_layout_local_shape(&C->mesh, &s->layout, rank[q], ls);
        for (int d = md - 1; d >= 0; d--) {
            sp_layout_range(&C->mesh, &s->layout, d, rank[q], &st, &en);
            g[d] = st + (ls[d] > 0 ? rem % ls[d] : 0);
            rem = ls[d] > 0 ? rem / ls[d] : 0;
        }
    }
}

/* The elements of dim v of unknown identity in every element's coordinates of the stage's
   model tensor (its axes of unknown or merged extent) */
static uint32_t model_unknown(int nd, int md, const int *got, const int *mexp, int v)
{
    uint32_t unk = 0;
    for (int d = 0; d < md; d++) {
        int e = mexp[(size_t)d * (size_t)nd + (size_t)v];
        unk += got[d] == 0 ? 1 : got[d] == 2 ? (uint32_t)(e < 0 ? -e : e) : 0;
    }
    return unk;
}

/* The compared element of pair q (global coordinates g) along dim v: its elements of v */
static mset_t pair_dim(int md, const int *known, const int64_t *g, int v, int64_t k, uint32_t unk)
{
    uint64_t cf = 0;
    uint32_t cu = unk;
    for (int d = 0; d < md; d++) {
        if (known[d] != v)
            continue;
        if (k <= 64 && g[d] >= 0 && g[d] < k)
            cf |= (uint64_t)1 << g[d];
        else
            cu++;
    }
    return (mset_t){cf, cu};
}

/* The compared rank's member along cut axis ax (mesh index, -1: none) at checked size k */
static mset_t pair_member(const sp_check_t *C, int64_t rank, int ax, int64_t k)
{
    int64_t g = ax >= 0 ? sp_mesh_coord(&C->mesh, rank, ax) : -1;
    return (mset_t){g >= 0 && g < 64 && g < k ? (uint64_t)1 << g : 0,
                    g >= 0 && g < 64 && g < k ? 0u : 1u};
}

void sp_members_held_text(const sp_check_t *C, int dim, int bound, int lim, char *buf,
                          size_t len)
{
    if (dim >= C->ndims) { /* a mesh axis the cutoff checks smaller */
        int c = dim - C->ndims;
        const char *ax = c < C->ncutoff ? C->cutoff[c].name : "?";
        int64_t k = c < C->ncutoff ? C->cutoff[c].red : 0;
        if (bound > 0 && lim < k)
            snprintf(buf, len, "may hold the own values of %d members of the mesh axis %s, more "
                     "than the %d of the %lld checked that a positional pattern leaves", bound,
                     ax, lim, (long long)k);
        else if (bound > 0)
            snprintf(buf, len, "may hold the own values of %d members of the mesh axis %s, more "
                     "than the %d checked", bound, ax, lim);
        else if (bound == SP_MEMBERS_UNKNOWN)
            snprintf(buf, len, "may hold values of members of the mesh axis %s that the check "
                     "does not know (a split along an axis that is no dim's)", ax);
        else
            snprintf(buf, len, "holds an atom or a max of a sum over the members of the mesh "
                     "axis %s, which no bound reaches", ax);
    } else if (bound < 0) {
        snprintf(buf, len, "holds an atom or a max of a sum over %s, which no bound reaches",
                 C->dims[dim].name);
    } else {
        snprintf(buf, len, "may hold %d elements of %s, more than the %d these sizes show in "
                 "one block", bound, C->dims[dim].name, lim);
    }
}

int sp_members_test(sp_check_t *C, sp_ectx_t E, uint32_t len, const sp_stage_t *s,
                    const sp_expr_t *a, const sp_expr_t *b, const int64_t *rank,
                    const int64_t *index, int64_t nq, void **scratch, size_t *cap,
                    sp_members_fail_t *fail)
{
    struct sp_members *M = C->members;
    memset(fail, 0, sizeof *fail);
    fail->dim = -1;
    if (M == NULL || M->nd != C->ndims || nq == 0)
        return 0;
    int64_t differ = 0;
    for (int64_t q = 0; q < nq; q++)
        differ += a[q] != b[q];
    if (differ == 0)
        return 0; /* the same expressions on both sides: equal at every size */
    int nd = C->ndims, ret = 0, md = s->model.ndim < 0 ? 0 : s->model.ndim;
    int known[SP_MAX_DIMS], got[SP_MAX_DIMS];
    int *mexp;
    int64_t *gco;
    stage_coords(C, s, rank, index, nq, known, got, &mexp, &gco);
    /* scratch (reused from stage to stage): the summaries, the resolved symbols, held[],
       symix[]; the stage's symbols resolved once, and the dims some symbol holds an element of */
    uint32_t nsym = 0;
    for (uint32_t x = 1; x < len; x++)
        if (sp_expr_op(E, x) == SP_OP_SYM)
            nsym++;
    size_t n1 = len ? len : 1, ns = nsym ? nsym : 1;
    size_t need = n1 * (sizeof(sm_t) + sizeof(uint64_t) + sizeof(uint32_t)) + ns * sizeof(rsym_t);
    if (*cap < need) {
        flint_free(*scratch);
        *scratch = flint_malloc(need);
        *cap = need;
    }
    sm_t *sm = *scratch;
    rsym_t *rs = (rsym_t *)(sm + n1);
    uint64_t *held = (uint64_t *)(rs + ns);
    uint32_t *symix = (uint32_t *)(held + n1);
    uint64_t present = 0; /* the dims (bit w < 64) some symbol of the stage holds */
    uint8_t own = 0;      /* the cut axes (bit c) whose members hold symbols of the stage as
                             their own: parts of pending reductions, elements of split dims */
    int ncut = C->ncutoff < SP_MAX_AXES ? C->ncutoff : SP_MAX_AXES;
    /* held[x]: the dims (bit w < 64) some symbol of x's cone holds an element of */
    nsym = 0;
    held[0] = 0;
    for (uint32_t x = 1; x < len; x++) {
        held[x] = 0;
        if (sp_expr_op(E, x) != SP_OP_SYM) {
            for (uint32_t i = 0; i < sp_expr_nargs(E, x); i++)
                held[x] |= held[sp_expr_arg(E, x, i)];
            continue;
        }
        rsym_t *r = &rs[nsym];
        symix[x] = nsym++;
        resolve_sym(M, sp_expr_sym_name(E, x), r);
        held[x] = sym_held(M, r, ncut, &own);
        present |= held[x];
    }
    for (int v = 0; v < nd && ret == 0; v++) {
        const sp_dimdef_t *D = &C->dims[v];
        if (D->derived || D->red <= 0 || D->red >= D->real)
            continue;
        int64_t k = D->red;
        uint32_t lim = (uint32_t)(M->blk[v] > 0 && M->blk[v] < k ? M->blk[v] : k);
        if (M->blk[v] > 0 && M->blk[v] < k) { /* a block less the literal positions' slack */
            int64_t bs = block_slack(M, v);
            lim = bs == ROOM_NONE ? 0 : (int64_t)lim > bs ? (uint32_t)(lim - bs) : 0;
        }
        /* a positional pattern (a causal mask's offset, top-k's ties, rows named by literals)
           keeps elements apart: n of them on an axis of E positions need E - slack >= n
           (helper-77's, helper-79's and helper-80's reviews, session 43; docs/soundness.md
           "Relations among sums over a reduced dim") */
        int64_t room_e, room_s, rr = room_eff(M, v, &room_e, &room_s);
        if (rr < (int64_t)lim)
            lim = (uint32_t)rr;
        /* keys of v in a causal pattern whose queries are of another dim u: n keys need n +
           slack positions of the queries' axis too (helper-79: queries T = 3, keys S = 5) */
        /* with v's patterns of other kinds on the same axis (top-k's ties among the keys:
           helper-84) */
        int64_t o = M->couple != NULL ? slack_other(M, v, SP_SLACK_DIAG) : 0;
        for (int u = 0; u < nd && M->couple != NULL; u++) {
            const sp_dimdef_t *U = &C->dims[u];
            if (U->derived || U->red <= 0 || U->red >= U->real)
                continue; /* queries of a dim at its real size: the real pattern */
            int64_t r = M->couple[(size_t)v * (size_t)nd + (size_t)u];
            if (M->couple_any < r)
                r = M->couple_any;
            if (r != ROOM_NONE)
                r = o == ROOM_NONE ? 0 : r > o ? r - o : 0;
            if (r < (int64_t)lim)
                lim = (uint32_t)r;
        }
        if (v < 64 && !(present >> v & 1))
            continue; /* no symbol of the stage holds an element of v */
        sp_expr_t at = SP_EXPR_NONE;
        int opaque = 0;
        uint32_t all = UINT32_MAX;
        int r = summarize(M, E, len, v, k, lim, symix, rs, held, sm, &at, &opaque, &all);
        /* a monomial of all n elements an exp of an axis sum holds (above) and one of exactly n
           of the other side are one monomial at this size only: the rest holds fewer */
        if (all != UINT32_MAX) { /* the exp's n may count elements its product does not hold
                                    (masked or cancelled terms: helper-85), so n and the
                                    bound itself are both taken strictly */
            uint32_t m = all < lim ? all : lim;
            lim = m > 0 ? m - 1 : 0;
        }
        /* a failing bound fails also beside nodes taken as holding none (an atom of a sum over
           the dim, a max over it): until session 43 the dim was not tested in such a stage, and
           helper-77 got past the reference executor's second run (docs/soundness.md) */
        if (r < 0) {
            fail->dim = v;
            fail->bound = atom_bound(sm, E, at);
            fail->lim = (int)lim;
            fail->atom = 1;
            ret = 1;
            break;
        }
        uint32_t unk = model_unknown(nd, md, got, mexp, v);
        for (int64_t q = 0; q < nq; q++) {
            if (a[q] == b[q])
                continue;
            const sm_t *pa = &sm[a[q]], *pb = &sm[b[q]];
            mset_t co = pair_dim(md, known, gco + q * md, v, k, unk);
            uint32_t bd = pair_bound(sm, pa, pb, co);
            if (bd > lim) {
                fail->dim = v;
                fail->bound = (int)(bd > BOUND_MAX ? BOUND_MAX : bd);
                fail->lim = (int)lim;
                ret = 1;
                break;
            }
        }
    }
    /* the members of each axis the mesh cutoff checks at k: the parts of pending reductions
       over it; every member is one block (the plan is uniform along the axis), so k is the
       bound; nodes taken as holding none are not trusted here (docs/soundness.md, "Mesh
       cutoff") */
    for (int c = 0; c < ncut && ret == 0; c++) {
        /* members not known somewhere (a split of an axis that is no dim's, a decomposed value
           that is no source's): any stage may hold them unrecognised, so every stage with a
           difference fails (helper-71's review: x : [T@dp] with T = B*R) */
        int unknown = M->unsafe >> c & 1;
        if (!(own >> c & 1) && !unknown)
            continue;
        int v = nd + c, ax = sp_mesh_axis(&C->mesh, C->cutoff[c].name);
        int64_t k = C->cutoff[c].red;
        /* a dim split over the axis whose positions a pattern keeps apart (top-k's ties over
           the first members' rows: helper-84's review) leaves fewer members holding elements:
           k less the members its slack covers whole */
        int64_t kept = k;
        for (int w = 0; w < nd && M->pblk != NULL && M->maxs != NULL; w++) {
            int64_t pb = M->pblk[(size_t)c * (size_t)nd + (size_t)w], sw = slack_other(M, w, -1);
            if (pb == 0 || sw == 0)
                continue;
            int64_t gone = sw == ROOM_NONE || pb < 0 ? kept : sw / pb;
            kept = gone >= kept ? 0 : kept - gone;
        }
        uint32_t lim = (uint32_t)(kept < BOUND_MAX ? kept : BOUND_MAX);
        sp_expr_t at = SP_EXPR_NONE;
        int opaque = 0;
        uint32_t all = UINT32_MAX; /* an exp of a sum over members is opaque here: it fails */
        int r = unknown ? -1
                        : summarize(M, E, len, v, k, lim, symix, rs, held, sm, &at, &opaque, &all);
        uint32_t bd = 0;
        for (int64_t q = 0; q < nq && r >= 0 && opaque == 0 && bd <= lim; q++) {
            if (a[q] == b[q])
                continue;
            bd = pair_bound(sm, &sm[a[q]], &sm[b[q]], pair_member(C, rank[q], ax, k));
        }
        if (r < 0 || opaque > 0 || bd > lim) {
            fail->dim = v;
            fail->lim = (int)lim;
            fail->atom = r < 0 && at != SP_EXPR_NONE;
            fail->bound = unknown      ? SP_MEMBERS_UNKNOWN
                          : fail->atom ? atom_bound(sm, E, at)
                          : opaque > 0 ? SP_MEMBERS_OPAQUE
                                       : (int)(bd > BOUND_MAX ? BOUND_MAX : bd);
            ret = 1;
        }
    }
    flint_free(mexp);
    flint_free(gco);
    return ret;
}

/* ---- roles: what the test reads of a stage, for the memoization keys (src/stage.c) -------- */

/*
 * Two stages whose cones are equal up to a renaming of symbols are one proof (src/stage.c
 * key_build), but the count and relations tests also read which element of which reduced dim,
 * and which member of a cut axis, each symbol and each compared element is: a stage over three
 * rows of a table at its real size and one over three members of dp checked as 3 have equal
 * cones, and the second, memoized onto the first, skipped its relations test (helper-75's
 * review, session 42: EQUIVALENT by default for Newton's identity over a reduced dim). The key
 * therefore carries, per symbol and per compared pair, what the test reads: the elements of
 * each tested dim (reduced dims, cut axes) with their identities renamed in order of first
 * appearance in the key (the test counts elements, so any renaming is the same test), the
 * elements of unknown identity, and the held and own flags.
 */
/*
 * The symbols' roles before renaming, one table per solving phase (src/stage.c
 * sp_members_roles_begin/_end), shared by every key's view: written while one thread keys the
 * stages, read-only (frozen) while the proving threads run, a symbol not in it then being
 * resolved into the view's own buffer.  The tested dims come first (v < nd), the cut axes after
 * (nd + c): a view of the dims only reads the first ndv.
 */
struct sp_members_rtab {
    sp_check_t *C;
    int nv, ndv;
    int *v;          /* the tested dims (v < nd) and cut axes (nd + c) */
    int64_t *k;      /* their checked sizes */
    int *ax;         /* a cut axis's index in the mesh, else -1 */
    /* each symbol's role before renaming, by symbol index (one store: the checker's): at[s] is
       1 + an offset into pool (0: not yet), where the role is, packed (role_of) */
    uint32_t *at;
    size_t nat;
    uint32_t *pool;
    size_t npool, cappool;
    int frozen;
};

/* A key's view: the table's first nv tested dims, and their renaming since the last reset */
struct sp_members_roles {
    struct sp_members_rtab *T;
    sp_check_t *C;
    int nv;
    const int *v, *ax;
    const int64_t *k;
    int16_t *map;    /* nv x 64: an element's renamed identity, -1 unseen */
    uint8_t *next;   /* nv: the next identity */
    uint32_t *miss;  /* a role resolved while the table is frozen */
};

void sp_members_roles_begin(sp_check_t *C)
{
    sp_members_roles_end(C);
    struct sp_members *M = C->members;
    if (M == NULL || M->nd != C->ndims || C->opt.real_sizes)
        return;
    int nd = C->ndims, nv = 0;
    int ncut = C->ncutoff < SP_MAX_AXES ? C->ncutoff : SP_MAX_AXES;
    for (int v = 0; v < nd; v++)
        nv += !C->dims[v].derived && C->dims[v].red > 0 && C->dims[v].red < C->dims[v].real;
    if (nv + ncut == 0)
        return;
    struct sp_members_rtab *T = flint_calloc(1, sizeof *T);
    T->C = C;
    T->v = flint_malloc((size_t)(nv + ncut) * sizeof(int));
    T->k = flint_malloc((size_t)(nv + ncut) * sizeof(int64_t));
    T->ax = flint_malloc((size_t)(nv + ncut) * sizeof(int));
    for (int v = 0; v < nd; v++)
        if (!C->dims[v].derived && C->dims[v].red > 0 && C->dims[v].red < C->dims[v].real) {
            T->v[T->nv] = v;
            T->k[T->nv] = C->dims[v].red;
            T->ax[T->nv++] = -1;
        }
    T->ndv = T->nv;
    for (int c = 0; c < ncut; c++) {
        T->v[T->nv] = nd + c;
        T->k[T->nv] = C->cutoff[c].red;
        T->ax[T->nv++] = sp_mesh_axis(&C->mesh, C->cutoff[c].name);
    }
    C->roles = T;
}

void sp_members_roles_end(sp_check_t *C)
{
    struct sp_members_rtab *T = C->roles;
    if (T == NULL)
        return;
    flint_free(T->at);
    flint_free(T->pool);
    flint_free(T->v);
    flint_free(T->k);
    flint_free(T->ax);
    flint_free(T);
    C->roles = NULL;
}

void sp_members_roles_freeze(sp_check_t *C, int frozen)
{
    if (C->roles != NULL)
        C->roles->frozen = frozen;
}

sp_members_roles_t *sp_members_roles_new(sp_check_t *C, int dims_only)
{
    struct sp_members_rtab *T = C->roles;
    int nv = T == NULL ? 0 : dims_only ? T->ndv : T->nv;
    if (nv == 0)
        return NULL;
    sp_members_roles_t *R = flint_calloc(1, sizeof *R);
    R->T = T;
    R->C = C;
    R->nv = nv;
    R->v = T->v;
    R->k = T->k;
    R->ax = T->ax;
    R->map = flint_malloc((size_t)nv * 64 * sizeof(int16_t));
    R->next = flint_malloc((size_t)nv);
    R->miss = flint_malloc((4 + 4 * (size_t)T->nv) * sizeof(uint32_t));
    sp_members_roles_reset(R);
    return R;
}

void sp_members_roles_free(sp_members_roles_t *R)
{
    if (R == NULL)
        return;
    flint_free(R->map);
    flint_free(R->next);
    flint_free(R->miss);
    flint_free(R);
}

void sp_members_roles_reset(sp_members_roles_t *R)
{
    memset(R->map, 0xff, (size_t)R->nv * 64 * sizeof(int16_t));
    memset(R->next, 0, (size_t)R->nv);
}

size_t sp_members_roles_max(const sp_members_roles_t *R) { return 4 + 5 * (size_t)R->nv; }

/* bits with each element renamed (tested dim i) */
static uint64_t renamed(sp_members_roles_t *R, int i, uint64_t bits)
{
    uint64_t out = 0;
    for (; bits; bits &= bits - 1) {
        int16_t *m = &R->map[(size_t)i * 64 + (size_t)__builtin_ctzll(bits)];
        if (*m < 0)
            *m = (int16_t)R->next[i]++;
        out |= (uint64_t)1 << *m;
    }
    return out;
}

/* (i, renamed bits, unknown) for tested dim i when one of them is not zero */
static size_t put_set(sp_members_roles_t *R, int i, mset_t m, uint32_t *out)
{
    if (m.f == 0 && m.c == 0)
        return 0;
    uint64_t b = renamed(R, i, m.f);
    out[0] = (uint32_t)i;
    out[1] = (uint32_t)b;
    out[2] = (uint32_t)(b >> 32);
    out[3] = m.c;
    return 4;
}

static uint32_t *pool_grow(struct sp_members_rtab *T, size_t more)
{
    if (T->npool + more > T->cappool) {
        T->cappool = 2 * (T->npool + more);
        T->pool = flint_realloc(T->pool, T->cappool * sizeof(uint32_t));
    }
    return T->pool + T->npool;
}

/*
 * Symbol id's role before renaming, of every tested dim of the table, packed at w (Table 3's 8B
 * plan has 4 million symbols; 16 bytes a dim took 430 MB): a word of own (8 bits) and n (the
 * entries), the tested dims held (one word, two past 32 dims), then n entries, each a word of
 * the dim's index i (11 bits), a form (2 bits) and the unknown count c (19 bits), followed by
 * nothing (form 0: no element known), an element's index (1: one), the bits' two words (2), or
 * the bits' two words and c (3: c past 19 bits).  Returns the words; at most 3 + 4 nv.
 */
#define ROLE_CBITS 19
static size_t role_of(const struct sp_members_rtab *T, const sp_ectx_struct *E, sp_expr_t id,
                      uint32_t *w)
{
    const struct sp_members *M = T->C->members;
    int ncut = T->C->ncutoff < SP_MAX_AXES ? T->C->ncutoff : SP_MAX_AXES;
    rsym_t r;
    resolve_sym(M, sp_expr_sym_name((sp_ectx_struct *)E, id), &r);
    /* own and held of every cut axis even in a view of the dims: the flags are not renamed */
    uint8_t own = 0;
    uint64_t held = sym_held(M, &r, ncut, &own);
    uint32_t n = 0;
    uint64_t hv = 0;
    size_t h = T->nv > 32 ? 3 : 2, o = h;
    for (int i = 0; i < T->nv; i++) {
        int v = T->v[i];
        if (i < 64 && (v >= 64 || (held >> v & 1)))
            hv |= (uint64_t)1 << i;
        uint64_t f;
        uint32_t c;
        sym_members(M, &r, v, T->k[i], &f, &c);
        if (f == 0 && c == 0)
            continue;
        n++;
        uint32_t form = c >> ROLE_CBITS ? 3 : f == 0 ? 0 : (f & (f - 1)) == 0 ? 1 : 2;
        w[o++] = (uint32_t)i | form << 11 | (form == 3 ? 0 : c << 13);
        if (form == 1)
            w[o++] = (uint32_t)__builtin_ctzll(f);
        if (form >= 2) {
            w[o++] = (uint32_t)f;
            w[o++] = (uint32_t)(f >> 32);
        }
        if (form == 3)
            w[o++] = c;
    }
    w[0] = own | n << 8;
    w[1] = (uint32_t)hv;
    if (h == 3)
        w[2] = (uint32_t)(hv >> 32);
    return o;
}

/* Symbol id's role before renaming: the table's (cached there unless frozen) */
static const uint32_t *raw_role(sp_members_roles_t *R, const sp_ectx_struct *E, sp_expr_t id)
{
    struct sp_members_rtab *T = R->T;
    size_t si = (size_t)E->nodes[id].param; /* the symbol's index */
    if (si < T->nat && T->at[si] != 0)
        return T->pool + T->at[si] - 1;
    if (T->frozen) {
        role_of(T, E, id, R->miss);
        return R->miss;
    }
    if (si >= T->nat) {
        size_t n = T->nat ? T->nat : 1024;
        while (n <= si)
            n *= 2;
        T->at = flint_realloc(T->at, n * sizeof(uint32_t));
        memset(T->at + T->nat, 0, (n - T->nat) * sizeof(uint32_t));
        T->nat = n;
    }
    uint32_t *w = pool_grow(T, 3 + 4 * (size_t)T->nv);
    T->at[si] = (uint32_t)T->npool + 1;
    T->npool += role_of(T, E, id, w);
    return w;
}

size_t sp_members_roles_sym(sp_members_roles_t *R, const sp_ectx_struct *E, sp_expr_t id,
                            uint32_t *out)
{
    const uint32_t *w = raw_role(R, E, id);
    /* a view of the first nv tested dims: their held bits and entries (role_of's packing) */
    uint64_t mask = R->nv >= 64 ? UINT64_MAX : ((uint64_t)1 << R->nv) - 1;
    size_t h = R->T->nv > 32 ? 3 : 2;
    uint64_t hv = ((uint64_t)w[1] | (h == 3 ? (uint64_t)w[2] << 32 : 0)) & mask;
    size_t n = 0;
    out[n++] = w[0] & 0xff;
    out[n++] = (uint32_t)hv;
    out[n++] = (uint32_t)(hv >> 32);
    const uint32_t *e = w + h;
    for (uint32_t j = 0; j < w[0] >> 8; j++) {
        uint32_t i = e[0] & 0x7ff, form = e[0] >> 11 & 3, c = e[0] >> 13;
        if ((int)i >= R->nv)
            break; /* the entries are in the order of the tested dims */
        uint64_t b = form == 1 ? (uint64_t)1 << e[1]
                     : form >= 2 ? (uint64_t)e[1] | (uint64_t)e[2] << 32
                                 : 0;
        if (form == 3)
            c = e[3];
        e += form == 0 ? 1 : form == 1 ? 2 : form == 2 ? 3 : 4;
        out[n++] = i;
        if (b != 0) {
            b = renamed(R, (int)i, b);
            out[n++] = (uint32_t)b;
            out[n++] = (uint32_t)(b >> 32);
        } else {
            out[n++] = 0;
            out[n++] = 0;
        }
        out[n++] = c;
    }
    out[n++] = UINT32_MAX;
    return n;
}

size_t sp_members_roles_pairs(sp_members_roles_t *R, const sp_stage_t *s, const int64_t *rank,
                              const int64_t *index, int64_t nq, uint32_t **out, size_t *cap)
{
    sp_check_t *C = R->C;
    int nd = C->ndims, md = s->model.ndim < 0 ? 0 : s->model.ndim;
    int known[SP_MAX_DIMS], got[SP_MAX_DIMS];
    int *mexp;
    int64_t *gco;
    stage_coords(C, s, rank, index, nq, known, got, &mexp, &gco);
    size_t need = (size_t)R->nv + (size_t)(nq > 0 ? nq : 0) * (5 * (size_t)R->nv + 1);
    if (*cap < need) {
        *cap = need;
        *out = flint_realloc(*out, need * sizeof(uint32_t));
    }
    uint32_t *o = *out, *unk = flint_malloc((size_t)R->nv * sizeof(uint32_t));
    size_t n = 0;
    for (int i = 0; i < R->nv; i++) /* the model tensor's axes of unknown or merged extent */
        o[n++] = unk[i] = R->v[i] < nd ? model_unknown(nd, md, got, mexp, R->v[i]) : 0;
    for (int64_t q = 0; q < nq; q++) {
        for (int i = 0; i < R->nv; i++) {
            mset_t m = R->v[i] < nd ? pair_dim(md, known, gco + q * md, R->v[i], R->k[i], unk[i])
                                    : pair_member(C, rank[q], R->ax[i], R->k[i]);
            n += put_set(R, i, m, o + n);
        }
        o[n++] = UINT32_MAX;
    }
    flint_free(unk);
    flint_free(mexp);
    flint_free(gco);
    return n;
}

int sp_members_roles_same_pairs(sp_members_roles_t *R, const sp_stage_t *s, const int64_t *rank_a,
                                const int64_t *index_a, const int64_t *rank_b,
                                const int64_t *index_b, int64_t n)
{
    sp_check_t *C = R->C;
    int nd = C->ndims, md = s->model.ndim < 0 ? 0 : s->model.ndim;
    int known[SP_MAX_DIMS], got[SP_MAX_DIMS];
    int *mexp;
    int64_t *gco;
    /* the stage's coordinates once for both runs: the pairs of a, then those of b */
    int64_t *rk = flint_malloc((size_t)(4 * n + 1) * sizeof(int64_t)), *ix = rk + 2 * n;
    memcpy(rk, rank_a, (size_t)n * sizeof(int64_t));
    memcpy(rk + n, rank_b, (size_t)n * sizeof(int64_t));
    memcpy(ix, index_a, (size_t)n * sizeof(int64_t));
    memcpy(ix + n, index_b, (size_t)n * sizeof(int64_t));
    stage_coords(C, s, rk, ix, 2 * n, known, got, &mexp, &gco);
    int same = 1;
    for (int64_t q = 0; q < n && same; q++)
        for (int i = 0; i < R->nv && same; i++) {
            mset_t m[2];
            for (int h = 0; h < 2; h++) {
                int64_t p = q + h * n;
                m[h] = R->v[i] < nd ? pair_dim(md, known, gco + p * md, R->v[i], R->k[i], 0)
                                    : pair_member(C, rk[p], R->ax[i], R->k[i]);
            }
            same = m[0].f == m[1].f && m[0].c == m[1].c;
        }
    flint_free(mexp);
    flint_free(gco);
    flint_free(rk);
    return same;
}
