/* exec_pos.c: shape reduction while executing: offsets read from the text, implicit splits
   checked at the real sizes, and the reports that send a check to the real sizes. */
#include <flint/flint.h>
#include <flint/fmpq.h>
#include <string.h>

#include "exec_int.h"

/*
 * SP_CLAMP_EXACT: a position that is a sum of exact terms (literals, sizes kept at their real
 * size) is exact, unless a size term or a reduced extent sits on a dim of exact extent too:
 * then the sum could equal that size at the reduced sizes only, and the real sizes decide
 * (src/ops_pos.c; docs/soundness.md "Offsets").
 */
void sp_note_clamped(sp_check_t *C, int kind, sp_loc_t loc)
{
    if (kind == SP_CLAMP_EXACT) {
        if (!C->pos_exact_sum) {
            C->pos_exact_sum = 1;
            C->pos_exact_loc = loc;
        }
        if (!C->pos_size_on_exact)
            return;
        kind = SP_CLAMP_OFFSET;
        loc = C->pos_exact_loc;
    }
    if (kind != SP_CLAMP_NONE && C->clamped == SP_CLAMP_NONE &&
        !(kind == SP_CLAMP_SUM_READ && sp_reduce_sum_read(C, loc)) &&
        !(kind == SP_CLAMP_GROUP && C->lit_positions < 2)) {
        C->clamped = kind;
        C->clamp_loc = loc;
    }
}

void sp_note_value_real(sp_check_t *C, const char *what, sp_loc_t loc)
{
    if (!C->value_real[0])
        snprintf(C->value_real, sizeof C->value_real, "%s at %s:%u:%u", what,
                 loc.file ? loc.file : "?", loc.line, loc.col);
}

/*
 * A concatenation of parts whose extents are exact (dims kept real, literals) makes an extent
 * that is the same at the real sizes: a size of the program that the reduction must keep
 * apart from the others (a size reducing onto it, or a product of sizes meeting it, would let
 * an elementwise operator or a reshape fit at the reduced sizes only).  The reduction ran
 * before the run met it, so a new one is recorded and the run is done again with it among the
 * program's sizes, real and reduced alike (src/check.c run_divisible, src/reduce.c); when no
 * room is left to record it, the real sizes are checked (SP_CLAMP_SUM).
 */
void sp_note_exact_extent(sp_check_t *C, int64_t total, sp_loc_t loc)
{
    if (total <= 0 || C->opt.real_sizes)
        return;
    for (int i = 0; i < C->nxext; i++)
        if (C->xext[i].value == total)
            return;
    if (C->nxext < (int)(sizeof C->xext / sizeof C->xext[0])) {
        C->xext[C->nxext].value = total;
        C->xext[C->nxext++].loc = loc;
        C->xext_new = 1;
    } else {
        sp_note_clamped(C, SP_CLAMP_SUM, loc);
    }
}

void sp_note_op(sp_check_t *C, const sp_op_err_t *err, sp_loc_t loc)
{
    sp_note_clamped(C, err->clamped, loc);
    sp_note_exact_extent(C, err->exact_sum, loc);
    if (err->counted)
        sp_note_value_real(C, "a count", loc);
}

void sp_note_composed(sp_check_t *C, int k, sp_loc_t loc)
{
    sp_note_clamped(C, k == 0 ? SP_CLAMP_OFFSET : k == 2 ? SP_CLAMP_EXACT : SP_CLAMP_NONE, loc);
}

/*
 * A size term or a reduced extent made on axis a (NULL: positions anywhere, such as a table's
 * rows): where a's positions may lie in a dim of exact extent, exact sums there are relations
 * the reduction does not keep (sp_note_clamped).  They may unless a's extent is known and not
 * exact: an extent not known is a union's or a join's, which may hold an exact axis whatever
 * else it holds (helper-36: cross_entropy's rows, exact V, beside its classes, a slice of a
 * reduced D); an axis of a known reduced extent was cut from an exact dim only through a call
 * of this function.
 */
void sp_size_on_exact(sp_check_t *C, const sp_pos_t *a, sp_loc_t loc)
{
    if (a != NULL && a->ext > 1)
        return;
    if (!C->pos_size_on_exact)
        C->pos_size_on_exact = 1;
    if (C->pos_exact_sum)
        sp_note_clamped(C, SP_CLAMP_OFFSET, loc);
}

/* Extents a and b (reduced) of monomials ida and idb: a/b at the real sizes into q (each extent
   times its monomial's scale, sp_pos_scale); 0 when a monomial is not known */
static int real_ratio(sp_check_t *C, int32_t ida, int64_t a, int32_t idb, int64_t b, fmpq_t q)
{
    fmpq_t s;
    fmpq_init(s);
    int ok = b != 0 && sp_pos_scale(C, ida, q) && sp_pos_scale(C, idb, s);
    if (ok) {
        fmpq_mul_si(q, q, a);
        fmpq_mul_si(s, s, b);
        fmpq_div(q, q, s);
    }
    fmpq_clear(s);
    return ok;
}

/* Monomials a and b from the reduced sizes to the real ones: 1 scaled alike, 0 scaled
   otherwise, -1 not known (a monomial not known, or fresh) */
static int scale_cmp(sp_check_t *C, int32_t a, int32_t b)
{
    if (a == b)
        return a != 0 ? 1 : -1;
    fmpq_t q;
    fmpq_init(q);
    int r = real_ratio(C, a, 1, b, 1, q) ? fmpq_is_one(q) : -1;
    fmpq_clear(q);
    return r;
}

int sp_pos_same_scale(sp_check_t *C, int32_t a, int32_t b)
{
    return scale_cmp(C, a, b) == 1;
}

/* a/b whole at the real sizes (see real_ratio)?  *count: the quotient, when it fits */
static int real_whole(sp_check_t *C, int32_t ida, int64_t a, int32_t idb, int64_t b,
                      int64_t *count)
{
    fmpq_t q;
    fmpq_init(q);
    int ok = real_ratio(C, ida, a, idb, b, q) && fmpz_is_one(fmpq_denref(q)) &&
             fmpz_fits_si(fmpq_numref(q));
    if (ok && count)
        *count = fmpz_get_si(fmpq_numref(q));
    fmpq_clear(q);
    return ok;
}

/*
 * A block just added on a merge (SP_VIEW_BLOCKED, src/ops_pos.c) must be whole rows of it at
 * both sizes, its extent a multiple of the inner axes' (inner_r, inner_id): else its flat
 * positions are other source positions at either size.  t's extent on d is the block's (a
 * layout's, a chunk's, a block slice's, a collective's piece) unless blk_r gives it (a
 * concatenation's part, a tile).
 */
static void merged_blocks(sp_check_t *C, sp_tensor_t *t, sp_loc_t loc)
{
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++) {
        sp_pos_t *p = &t->pos[d];
        if (!(p->view & SP_VIEW_BLOCKED))
            continue;
        int64_t e = p->blk_r > 0 ? p->blk_r : t->shape[d];
        p->view &= ~SP_VIEW_BLOCKED;
        p->blk_r = 0;
        if (!(p->inner_r > 0 && p->inner_id != 0 && e % p->inner_r == 0 &&
              real_whole(C, p->ext, e, p->inner_id, p->inner_r, NULL)))
            sp_note_clamped(C, SP_CLAMP_OFFSET, loc);
    }
}

/*
 * Views of several scales joined on one axis (src/ops_pos.c sp_pos_union: an operator reading
 * a split's part and another axis, such as attention's heads from q's [.., NH, HD] and k's
 * [.., NKV, HD]): a block added on it is one of each, so one scale serves only where they scale
 * alike from the reduced sizes to the real ones (an axis no view: its extent's); else a block
 * there is reported (sp_pos_t.src SP_POS_MIX).
 */
static void resolve_src(sp_check_t *C, sp_pos_t *p)
{
    if (p->src2 == 0)
        return;
    if (p->src <= 0) { /* no view joined, or not known */
        p->src2 = 0;
        return;
    }
    int32_t other = p->src2 > 0 ? p->src2 : p->ext;
    if (!(p->src > 0 && other > 0 && sp_pos_same_scale(C, p->src, other)))
        p->src = SP_POS_MIX;
    p->src2 = 0;
}

/* Was a size term of monomial id made with a coefficient that is not literal? */
static int named(const sp_check_t *C, int32_t id)
{
    if (C->npos_named < 0)
        return 1;
    for (int i = 0; i < C->npos_named; i++)
        if (C->pos_named[i] == id)
            return 1;
    return 0;
}

void sp_pos_note_named(sp_check_t *C, int32_t id, const sp_ast_expr_t *e)
{
    if (id <= 1 || named(C, id) || sp_pos_named(C, e) == 0)
        return; /* a literal, known already, or a literal coefficient (rank.X * (M/X) is
                   not one: a size term unless relate_pos ties it to a block) */
    if (C->npos_named == (int)(sizeof C->pos_named / sizeof *C->pos_named))
        C->npos_named = -1;
    else
        C->pos_named[C->npos_named++] = id;
}

/*
 * Blocks of monomials a and b (no literal): a block keeps its count at both sizes, so on an
 * axis of its own scale it is scaled as that axis, and blocks of one scale keep k*a = j*b.
 * A block on an inner part of a split scaled otherwise (sp_pos_t.host: chunk 1 of 2 of K in
 * [N/K, K, H] is row K/2 of N) is of its own scale on an axis of the host's, where blocks of
 * the host's scale and of other inner parts sit too: those of a scale other than its own are
 * kept apart only where no axis of one may be an axis of the other (every host each may sit
 * on, C->pos_host, of a scale known to differ).  Two blocks neither of which sits on an inner
 * part of another scale: apart (different scales, different axes).
 */
static int blocks_apart(sp_check_t *C, int32_t a, int32_t b)
{
    if (sp_pos_same_scale(C, a, b))
        return 1;
    for (int i = -1; i < C->npos_host; i++) {
        if (i >= 0 && C->pos_host[i].blk != a)
            continue;
        int32_t ha = i < 0 ? a : C->pos_host[i].host;
        for (int j = -1; j < C->npos_host; j++) {
            if ((j >= 0 && C->pos_host[j].blk != b) || (i < 0 && j < 0))
                continue;
            if (scale_cmp(C, ha, j < 0 ? b : C->pos_host[j].host) != 0) /* not known apart */
                return 0;
        }
    }
    return 1;
}

/* Descriptors a and b of two monomials that may meet: a block's coefficient (a rank coordinate,
   a loop variable, the indices of nested cuts) is no factor of the products rule, so only
   monomials scaled alike from the reduced sizes to the real ones keep k*a = j*b; with a
   literal added (`k*a + p`) not even those (helper-36: N/4 + 1 = M/2 + 3 at N = 52, M = 22;
   3*N/8 = A at N = 88, A = 33) */
static int terms_apart(sp_check_t *C, struct sp_pos_seen x, struct sp_pos_seen y)
{
    const int32_t kinds = SP_POS_LIT | SP_POS_BLK;
    int32_t a = x.d, b = y.d;
    int size_a = (a & kinds) == 0, size_b = (b & kinds) == 0;
    if (size_a && size_b && !x.named && !y.named)
        return 1; /* two size terms with literal coefficients: the products rule */
    if (((size_a && (a >> 2) >= SP_POS_FRESH) || (size_b && (b >> 2) >= SP_POS_FRESH)) &&
        !((a | b) & SP_POS_LIT))
        return 1; /* a size term of a fresh monomial: a start that no size expression gives,
                     such as a function's parameter, whose values the reduction reads at the
                     calls (src/reduce.c); a block of an extent not known is compared */
    if ((a & kinds) == SP_POS_BLK && (b & kinds) == SP_POS_BLK)
        return blocks_apart(C, a >> 2, b >> 2); /* two blocks: a block keeps its count at
                     both sizes, so it is scaled as the axis it was cut from; one on a
                     reshape's view has the scale of the axis the view was cut from
                     (sp_pos_t.src: a split's outer part, a merge), one of a window is a size
                     term (sp_pos_t.rescaled), one of an inner part scaled otherwise sits on
                     an axis of its host's scale (sp_pos_t.host); a causal offset is a block
                     only of the queries' and keys' scale (relate_pos): blocks of different
                     scales sit on different axes but there, of one scale they keep
                     k*a = j*b */
    if ((a | b) & SP_POS_LIT)
        return 0;
    return sp_pos_same_scale(C, a >> 2, b >> 2);
}

/* Blocks of monomial blk (a block on an inner part scaled otherwise, noted with the value
   that carries it when it is made) may sit on an axis of host's extent (sp_pos_t.host):
   noted, and the blocks met before compared again with blk's (blocks_apart); past the
   table's room, the real sizes */
static void note_host(sp_check_t *C, int32_t blk, int32_t host, sp_loc_t loc)
{
    const int32_t kinds = SP_POS_LIT | SP_POS_BLK;
    if (blk <= 1 || sp_pos_same_scale(C, blk, host))
        return; /* a literal, or a block of the host's scale */
    for (int i = 0; i < C->npos_host; i++)
        if (C->pos_host[i].blk == blk && C->pos_host[i].host == host)
            return;
    if (C->npos_host == (int)(sizeof C->pos_host / sizeof *C->pos_host)) {
        sp_note_clamped(C, SP_CLAMP_PAIR, loc);
        return;
    }
    C->pos_host[C->npos_host].blk = blk;
    C->pos_host[C->npos_host++].host = host;
    int met = 0;
    for (int j = 0; j < C->npos_terms; j++)
        met |= C->pos_terms[j].d == ((blk << 2) | SP_POS_BLK);
    for (int j = 0; met && j < C->npos_terms; j++) {
        int32_t d = C->pos_terms[j].d;
        if ((d & kinds) == SP_POS_BLK && (d >> 2) != blk && !blocks_apart(C, blk, d >> 2)) {
            sp_note_clamped(C, SP_CLAMP_PAIR, loc);
            return;
        }
    }
}

/* The descriptors of t's axes against those met before in the run (terms_apart); a new one
   past the table's room goes real.  A size term is named when it was made with a coefficient
   that is not literal, or sits on a rescaled window (a block made a size term there: its
   coefficient a rank coordinate or a piece's index) */
static void note_term(sp_check_t *C, struct sp_pos_seen e, sp_loc_t loc)
{
    int j = 0, apart = 1;
    while (j < C->npos_terms && (C->pos_terms[j].d != e.d || C->pos_terms[j].named != e.named))
        j++;
    if (j < C->npos_terms)
        return;
    for (j = 0; j < C->npos_terms && apart; j++)
        apart = (C->pos_terms[j].d >> 2) == (e.d >> 2) || terms_apart(C, C->pos_terms[j], e);
    if (!apart || C->npos_terms == (int)(sizeof C->pos_terms / sizeof *C->pos_terms)) {
        sp_note_clamped(C, SP_CLAMP_PAIR, loc);
        return;
    }
    C->pos_terms[C->npos_terms++] = e;
}

static void note_terms(sp_check_t *C, const sp_tensor_t *t, sp_loc_t loc)
{
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++) {
        const sp_pos_t *p = &t->pos[d];
        if (p->host > 1 && p->hblk != 0)
            note_host(C, p->hblk, p->host, loc);
        for (int i = 0; i < SP_POS_NOFF && p->off[0] != SP_POS_MIX; i++) {
            struct sp_pos_seen e = {p->off[i], 0};
            if ((e.d >> 2) <= 1)
                continue;
            e.named = (e.d & (SP_POS_LIT | SP_POS_BLK)) == 0 &&
                      ((p->rescaled & SP_RESCALED) || named(C, e.d >> 2));
            note_term(C, e, loc);
            /* a block on a grouped read's output axis reads the grouped operand's axis at its
               scale (sp_pos_t.grp): k*NH/c of the heads is key head k*NKV/c, a block of NKV's
               scale there, compared like any (helper-42's find 2) */
            if ((e.d & (SP_POS_LIT | SP_POS_BLK)) == SP_POS_BLK && p->grp != 0) {
                if (p->grp < 0)
                    sp_note_clamped(C, SP_CLAMP_PAIR, loc);
                else if (p->grp > 1 && !sp_pos_same_scale(C, e.d >> 2, p->grp))
                    note_term(C, (struct sp_pos_seen){(p->grp << 2) | SP_POS_BLK, 0}, loc);
            }
        }
    }
}

/*
 * A block position plus a literal (`k*s + p`: a literal slice of a chunk, a literal id of a
 * vocabulary shard) and a size term (a slice at `A`) in one run: the block rule keeps the first
 * apart from the literals and the products rule the second from other monomials, but neither
 * keeps `B/4 + 3` apart from `A` (helper-33: equal at B = 28, A = 10 only), so the real sizes
 * decide; so do descriptors of different monomials that no rule keeps apart (note_terms).
 * Called on every value an operator, a collective, a layout or a lineage makes, which also
 * compares the scales of views joined on an axis (resolve_src) and checks the blocks just
 * added on merges (merged_blocks).
 */
void sp_pos_note(sp_check_t *C, sp_tensor_t *t, sp_loc_t loc)
{
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++)
        resolve_src(C, &t->pos[d]);
    merged_blocks(C, t, loc);
    note_terms(C, t, loc);
    sp_members_block(C, t);
    int f = C->pos_forms | sp_pos_forms(t);
    if (f == C->pos_forms)
        return;
    C->pos_forms = f;
    if (f == (SP_POS_SIZE | SP_POS_BLKLIT))
        sp_note_clamped(C, SP_CLAMP_OFFSET, loc);
}

int32_t sp_pos_fresh(sp_check_t *C)
{
    if (C->pos_next < SP_POS_FRESH)
        C->pos_next = SP_POS_FRESH;
    return C->pos_next++;
}

/* The index among a call's attribute arguments of the one named by keys ('|' aliases) or at
   positional index pos, or -1 */
static int attr_at(const sp_ast_arg_t *const *args, int na, const char *keys, int pos)
{
    int p = 0;
    for (int k = 0; k < na; k++) {
        const char *key = args[k]->key.str;
        if (key == NULL) {
            if (p++ == pos)
                return k;
            continue;
        }
        size_t n = strlen(key);
        for (const char *q = keys; *q;) {
            size_t m = strcspn(q, "|");
            if (m == n && strncmp(q, key, n) == 0)
                return k;
            q += m + (q[m] == '|');
        }
    }
    return -1;
}

static int64_t attr_value(const sp_attr_t *attrs, int k, int64_t dflt)
{
    if (k < 0 || attrs[k].kind != SP_ATTR_NUM || !fmpz_is_one(fmpq_denref(attrs[k].num)) ||
        !fmpz_fits_si(fmpq_numref(attrs[k].num)))
        return dflt;
    return fmpz_get_si(fmpq_numref(attrs[k].num));
}

/*
 * Is slice [s, s + e) of x's dim d (start and extent of monomial id) piece s/e of x's dim cut
 * into equal pieces, as many at the reduced sizes as at the real ones (the monomials' values
 * scaled: sp_pos_scale)?  Then its start is a block term (src/ops_pos.c): a micro-batch's rows
 * `mb*(B/dp/2)` of a rank's block of B.  Whole at both sizes is not enough: a block inside
 * blocks is at (count * k1 + k2) pieces, a multiple the products rule keeps only when the count
 * is the same (helper-33: 6 pieces of M = 5 in B/4 = 30, 5 of M = 50 in 250).
 */
static int block_slice(sp_check_t *C, const sp_tensor_t *x, const sp_tensor_t *y, int64_t d,
                       int64_t s, int32_t id, int32_t ext)
{
    int64_t E = x->shape[d], e = y->shape[d], n;
    if (ext != id || e <= 0 || E % e != 0 || s % e != 0 || x->pos[d].ext < 1)
        return 0;
    return real_whole(C, x->pos[d].ext, E, id, e, &n) && n == E / e; /* the real count */
}

/*
 * A reshape's split parts other than the outermost (src/ops_pos.c pos_reshape leaves their
 * scale not known): a block on part j of x's axis i is at k times j's extent times the extents
 * of the parts inside it, in i (chunk 5 of 8 of K in [N/K, K] is row 5*K/8 of N): of i's scale
 * where those scales multiply to i's, then a block as on i (sp_pos_blk_scale); else, on the
 * innermost part of an axis that is no view, a window of another scale (rescaled: its blocks
 * are size terms of its extent's monomial, compared with every other, helper-37); else not
 * known (SP_POS_MIX: a block there is reported).  Every part of a reduced extent cut from an
 * exact axis makes reduced positions in an exact dim (sp_size_on_exact: helper-37's inner part
 * V/A of an exact V, its chunk at (V/A)/2 = 6 rows at A = 35 only, against 5 + 1).
 */
static void view_scales(sp_check_t *C, const sp_tensor_t *x, sp_tensor_t *y, sp_loc_t loc)
{
    int64_t sx[SP_MAX_DIMS + 1], so[SP_MAX_DIMS + 1];
    if (x->ndim > SP_MAX_DIMS || y->ndim > SP_MAX_DIMS)
        return;
    sx[x->ndim] = so[y->ndim] = 1;
    for (int d = x->ndim - 1; d >= 0; d--)
        sx[d] = sx[d + 1] * x->shape[d];
    for (int d = y->ndim - 1; d >= 0; d--)
        so[d] = so[d + 1] * y->shape[d];
    fmpq_t a, b;
    fmpq_init(a);
    fmpq_init(b);
    for (int j = 0; j < y->ndim; j++) {
        int i = 0;
        while (i < x->ndim && (x->shape[i] == 1 || sx[i + 1] >= so[j] || so[j + 1] >= sx[i]))
            i++;
        if (y->shape[j] == 1 || i == x->ndim || so[j] > sx[i] || so[j + 1] < sx[i + 1] ||
            (so[j] == sx[i] && so[j + 1] == sx[i + 1]))
            continue; /* no part of one axis: the same axis, or a merge */
        sp_pos_t *p = &y->pos[j];
        if (p->ext != 1)
            sp_size_on_exact(C, &x->pos[i], loc);
        if (so[j] == sx[i])
            continue; /* the outer part: of i's scale (pos_reshape) */
        int ok = sp_pos_scale(C, p->ext, a), innermost = so[j + 1] == sx[i + 1];
        for (int j2 = j + 1; ok && j2 < y->ndim && so[j2] > sx[i + 1]; j2++) {
            if (y->shape[j2] == 1)
                continue;
            ok = sp_pos_scale(C, y->pos[j2].ext, b);
            fmpq_mul(a, a, b);
        }
        ok = ok && sp_pos_scale(C, x->pos[i].ext, b);
        int32_t e = sp_pos_blk_scale(&x->pos[i]);
        p->src2 = 0;
        if (ok && fmpq_equal(a, b) && e > 0) {
            p->src = e == 1 ? 0 : e;
        } else if (ok && innermost && x->pos[i].src == 0 && x->pos[i].src2 == 0) {
            p->src = 0;
            if (p->rescaled == 0 && x->pos[i].host == 0 && x->pos[i].ext > 1 && p->ext > 0)
                p->host = x->pos[i].ext; /* blocks of p's scale in an axis of x's extent's */
            else
                p->rescaled = SP_RESCALED;
        } else {
            p->src = SP_POS_MIX;
        }
    }
    fmpq_clear(a);
    fmpq_clear(b);
}

/*
 * A reshape's -1 (dim inferred) found whole at the reduced sizes: is it whole at the real
 * ones?  The operand's real element count over the other entries' real product, each dim's
 * real extent its reduced one times its monomial's scale (sp_pos_scale); not whole, or an
 * extent whose monomial is not known: 0, and the real sizes decide (`reshape(x, [S, NH, -1])`
 * of [S, H] with NH not dividing H at the real sizes fails there, as the real program does).
 */
static int inferred_whole_real(sp_check_t *C, const sp_tensor_t *x, const sp_tensor_t *y, int inf)
{
    fmpq_t a, b, q;
    fmpq_init(a);
    fmpq_init(b);
    fmpq_init(q);
    fmpq_one(a);
    fmpq_one(b);
    int ok = 1;
    for (int d = 0; ok && d < x->ndim; d++) {
        ok = x->shape[d] == 1 || sp_pos_scale(C, x->pos[d].ext, q);
        fmpq_mul_si(q, q, x->shape[d]);
        fmpq_mul(a, a, q);
    }
    for (int j = 0; ok && j < y->ndim; j++) {
        if (j == inf)
            continue;
        ok = y->shape[j] == 1 || sp_pos_scale(C, y->pos[j].ext, q);
        fmpq_mul_si(q, q, y->shape[j]);
        fmpq_mul(b, b, q);
    }
    if (ok && !fmpq_is_zero(b)) {
        fmpq_div(a, a, b);
        ok = fmpz_is_one(fmpq_denref(a));
    }
    fmpq_clear(a);
    fmpq_clear(b);
    fmpq_clear(q);
    return ok;
}

/* Is x's dim d, whole in n equal chunks at the reduced sizes, whole in n at the real ones (its
   real extent through its monomial; not known: 0)? */
static int pieces_whole_real(sp_check_t *C, const sp_tensor_t *x, int64_t d, int64_t n)
{
    return real_whole(C, x->pos[d].ext, x->shape[d], 1, n, NULL);
}

/*
 * Positions an operator relates without an axis carrying them: a causal mask keeps key j for
 * query i when j <= i + offset, in the local coordinates of the queries' and the keys' axes, so
 * the queries' offset, the keys' and the `offset` attribute add up (helper-34: queries at
 * S/4 + 3, a block plus a literal, with `offset = A`, right at S/4 + 3 = A only).  Their sum is
 * composed as one position (a report where it is a sum of sizes) and its kinds noted.
 *
 * Returns the positions the mask keeps apart (src/members.c sp_members_slack): a key j <= i + o
 * with an offset o written as a literal or of sizes (at its checked value) needs |o| + 1 more
 * than the monomial holds (n keys at offset -4 need 4 + n rows; n keys after the query, 1 + n);
 * a block offset (context parallelism) 1; -1 (every position) where a query's or key's axis
 * carries a literal or mixed offset of its own.
 */
static int64_t relate_pos(sp_check_t *C, const sp_ast_expr_t *oe, int64_t ov, const sp_pos_t *q,
                          const sp_pos_t *k, sp_loc_t loc)
{
    int64_t slack = 1;
    sp_pos_t p = {.ext = q->ext == 1 && k->ext == 1,
                  .inexact = q->inexact | k->inexact,
                  .view = (q->view | k->view) & SP_VIEW_MERGED ? SP_VIEW_INNER /* blocks only */
                                                                : q->view | k->view};
    int r = 1;
    if (oe != NULL && !(oe->kind == SP_AST_NUM && ov == 0)) {
        int32_t id = sp_pos_monomial(C, NULL, oe);
        /* rank.cp * (S/cp): block rank.cp of S where the queries' and the keys' blocks are of
           S's scale (a block of another scale on their axes, rank.cp*(M/cp) with queries of S,
           is at positions scaled as M: a size term, helper-37), else a size term */
        int blk = id > 1 && sp_pos_named(C, oe) == 2 &&
                  sp_pos_same_scale(C, id, sp_pos_blk_scale(q)) &&
                  sp_pos_same_scale(C, id, sp_pos_blk_scale(k)) && !(q->rescaled & SP_RESCALED) &&
                  !(k->rescaled & SP_RESCALED) && q->host == 0 && k->host == 0;
        int32_t term = sp_pos_term(id ? id : sp_pos_fresh(C), blk);
        if (!blk)
            slack = (ov < 0 ? -ov : ov) + 1;
        sp_pos_note_named(C, term >> 2, oe);
        r = sp_pos_compose(&p, term);
        if (id != 1) { /* a size term on the queries' and the keys' axes (helper-36) */
            sp_size_on_exact(C, q, loc);
            sp_size_on_exact(C, k, loc);
        }
    }
    const sp_pos_t *two[2] = {q, k};
    for (int s = 0; s < 2; s++) /* an axis with a literal or mixed offset of its own */
        for (int i = 0; i < SP_POS_NOFF && two[s]->off[i] != 0; i++)
            if (two[s]->off[0] == SP_POS_MIX || (two[s]->off[i] & SP_POS_LIT))
                slack = -1;
    for (int s = 0; s < 2 && r != 0; s++) {
        if (two[s]->off[0] == SP_POS_MIX) {
            r = 0;
            break;
        }
        for (int i = 0; i < SP_POS_NOFF && two[s]->off[i] != 0 && r != 0; i++) {
            /* a block on an inner part scaled otherwise (sp_pos_t.host) sits in an axis of
               another scale than the other axis's blocks: a size term here, as a window's */
            int32_t d = two[s]->host != 0 ? two[s]->off[i] & ~SP_POS_BLK : two[s]->off[i];
            int k2 = sp_pos_compose(&p, d);
            r = k2 == 0 ? 0 : k2 == 2 ? 2 : r;
        }
    }
    sp_note_composed(C, r, loc);
    sp_tensor_t t;
    memset(&t, 0, sizeof t);
    t.ndim = 1;
    t.pos[0] = p;
    sp_pos_note(C, &t, loc);
    return slack;
}

/* Does e's text name a dim or a mesh axis (a size)? */
static int mentions_size(sp_check_t *C, const sp_ast_expr_t *e)
{
    if (e == NULL)
        return 0;
    if (e->kind == SP_AST_NAME)
        return sp_dim_find(C, e->name) >= 0 || sp_mesh_axis(&C->mesh, e->name) >= 0;
    if (mentions_size(C, e->a) || mentions_size(C, e->b))
        return 1;
    for (size_t i = 0; i < e->nargs; i++)
        if (mentions_size(C, e->args[i].value))
            return 1;
    return 0;
}

/* Is the size expression e's value the same at the real sizes (a monomial of scale 1: a dim
   or mesh size kept real, a literal)?  An expression that is no monomial (`T - 1`) is read
   through its names: the same when each is */
static int same_at_real(sp_check_t *C, const sp_ast_expr_t *e)
{
    if (e == NULL)
        return 1;
    int32_t id = sp_pos_monomial(C, NULL, e);
    if (id == 1)
        return 1;
    if (id > 1) {
        fmpq_t q;
        fmpq_init(q);
        int same = sp_pos_scale(C, id, q) && fmpq_is_one(q);
        fmpq_clear(q);
        return same;
    }
    if (e->kind == SP_AST_NAME)
        return 0; /* a name that is no monomial: not known */
    if (!same_at_real(C, e->a) || !same_at_real(C, e->b))
        return 0;
    for (size_t i = 0; i < e->nargs; i++)
        if (!same_at_real(C, e->args[i].value))
            return 0;
    return e->a != NULL || e->b != NULL || e->nargs > 0;
}

/* One past the largest id of an evaluated list of ids (whatever their text: `0 + 1`, a loop
   variable; helper-81's review), -1 for a negative one (from the end), 0 for none */
static int64_t ids_end(const sp_attr_t *a)
{
    int64_t end = 0;
    if (a->kind == SP_ATTR_LIST) {
        for (int i = 0; i < a->nlist; i++) {
            if (a->list[i] < 0)
                return -1;
            if (a->list[i] + 1 > end)
                end = a->list[i] + 1;
        }
    } else if (a->kind == SP_ATTR_NUM && fmpz_is_one(fmpq_denref(a->num)) &&
               fmpz_fits_si(fmpq_numref(a->num))) {
        int64_t v = fmpz_get_si(fmpq_numref(a->num));
        end = v < 0 ? -1 : v + 1;
    }
    return end;
}

/* Ids written with sizes (`ids = [C]`): a size term at each ids axis of an embedding, at the
   rows of an embedding's gradient (src/ops_pos.c composed the literal ones) */
static void size_ids(sp_check_t *C, const sp_ast_expr_t *l, sp_tensor_t *y, int grad, sp_loc_t loc)
{
    int n = l->kind == SP_AST_LIST ? (int)l->nargs : 1;
    for (int i = 0; i < n; i++) {
        const sp_ast_expr_t *v = l->kind == SP_AST_LIST ? l->args[i].value : l;
        if (v->kind == SP_AST_NUM || (v->kind == SP_AST_NEG && v->a->kind == SP_AST_NUM))
            continue;
        int32_t id = sp_pos_monomial(C, NULL, v);
        if (id == 1)
            continue; /* exact: a literal, composed as one */
        int32_t term = sp_pos_term(id ? id : sp_pos_fresh(C), 0);
        sp_pos_note_named(C, term >> 2, v);
        sp_size_on_exact(C, NULL, loc); /* on the table's rows */
        for (int d = 0; d < (grad ? 1 : y->ndim - 1); d++) {
            int k = sp_pos_compose(&y->pos[d], term);
            sp_note_composed(C, k, loc);
        }
    }
}

/*
 * A slice's bounds at the real sizes (helper-39, session 29).  The reduction keeps a bound's
 * order against the whole dim only where it clamps at the reduced sizes (src/ops_shape.c), so:
 * - a bound that is a size and lies past its dim at the real sizes only (the real bound is the
 *   reduced one times its monomial's scale, the dim's extent likewise, sp_pos_scale) sends the
 *   check to the real sizes (SP_CLAMP_BOUND_REAL), as one past it at the reduced sizes does: a
 *   rank's slice(w_local, 0, 0, K) of a shard of A clamps at K = 96 > A = 64 and reads all of
 *   K = 3 < A = 5, and a sum after it gives both outputs one shape;
 * - a bound that is a size (not a literal: the literal rules keep blocks above every literal)
 *   on an axis made of blocks (a concatenation, a gather: a block term in its offsets) selects
 *   the same blocks at both sizes only when it scales as the blocks do; else the real sizes
 *   decide (SP_CLAMP_PAIR): the first K rows of an all_gather of blocks of A are one rank's at
 *   K = 3 <= A = 64 and two ranks' at K = 96.
 */
static void slice_bounds_real(sp_check_t *C, const sp_tensor_t *x, int64_t d, int64_t s,
                              const sp_ast_expr_t *sa, const sp_ast_expr_t *ea, int64_t end,
                              sp_loc_t loc)
{
    const sp_ast_expr_t *b[2] = {s != 0 ? sa : NULL, ea};
    int64_t v[2] = {s, end};
    fmpq_t q;
    fmpq_init(q);
    for (int i = 0; i < 2; i++) {
        if (b[i] == NULL || v[i] < 0 || v[i] > x->shape[d])
            continue; /* none, from the end (reported), or clamped here (reported) */
        int32_t id = sp_pos_monomial(C, NULL, b[i]);
        if (id <= 1)
            continue; /* a literal, or no monomial (a sum of sizes keeps its dims real) */
        /* the bound over the dim's extent at the real sizes (real_ratio); an extent whose
           monomial is not known (a reshape's inferred -1, a join) may be smaller than the bound
           there, and a sum over the slice hides the shapes' difference (helper-42's finds 1
           and 3): the real sizes decide */
        if (!real_ratio(C, id, v[i], x->pos[d].ext, x->shape[d], q) || fmpq_cmp_si(q, 1) > 0)
            sp_note_clamped(C, SP_CLAMP_BOUND_REAL, loc);
        const sp_pos_t *p = &x->pos[d];
        /* offsets not known (a gather of parts of extents not known): the blocks' boundaries
           cannot be compared with the bound */
        if (p->off[0] == SP_POS_MIX)
            sp_note_clamped(C, SP_CLAMP_PAIR, loc);
        for (int k = 0; k < SP_POS_NOFF && p->off[0] != SP_POS_MIX && p->off[k] != 0; k++)
            if (((p->off[k] & SP_POS_BLK) && (p->off[k] >> 2) > 1 &&
                 !sp_pos_same_scale(C, id, p->off[k] >> 2)) ||
                ((p->off[k] & SP_POS_LIT) && !sp_pos_same_scale(C, id, 1)))
                sp_note_clamped(C, SP_CLAMP_PAIR, loc);
    }
    fmpq_clear(q);
}

/* An axis's extent at the real sizes: its checked extent times its monomial's scale (-1: not
   known) */
static int64_t real_extent(sp_check_t *C, const sp_pos_t *p, int64_t n)
{
    if (p->ext == 1)
        return n; /* an exact extent */
    fmpq_t q;
    fmpq_init(q);
    int64_t r = -1;
    if (p->ext > 1 && sp_pos_scale(C, p->ext, q)) {
        fmpq_mul_si(q, q, n);
        if (fmpz_is_one(fmpq_denref(q)) && fmpz_fits_si(fmpq_numref(q)))
            r = fmpz_get_si(fmpq_numref(q));
    }
    fmpq_clear(q);
    return r;
}

/* The dim an extent's monomial is, alone and to the first power (-1: none) */
static int one_dim(sp_check_t *C, int32_t id)
{
    int nd = C->ndims, *e = flint_malloc((size_t)(nd ? nd : 1) * sizeof(int)), v = -1, n = 0;
    if (id > 1 && sp_pos_exps(C, id, e) == 1)
        for (int w = 0; w < nd; w++)
            if (e[w] != 0) {
                n++;
                v = e[w] == 1 ? w : -1;
            }
    flint_free(e);
    return n == 1 ? v : -1;
}

/*
 * A causal pattern keeps key k for query t where k <= t + o.  On queries of nq and keys of nk
 * positions, the rows t >= nk - 1 - o keep every key and the keys k >= nq + o are kept by no
 * row: counts of the difference of the two extents, which the reduction does not keep when
 * the extents are two sizes (T = 100002 checked as 3 beside K = 100000 checked as 25000 has
 * three such rows at the real sizes and none at the checked ones: helper-91's review, session
 * 46).  Both counts must be the same at the checked and the real sizes (a model counting those
 * rows with a literal offset on [T, T] agrees wherever they are: helper-92's review, which also
 * found that a room for fewer rows does not help, as a monomial of one such row holds one
 * element); where they differ, or a size offset or an extent not known leaves them unknown,
 * the real sizes decide (SP_CLAMP_ORDER), after src/check.c keep_order has tried sizes of the
 * real difference.  Queries and keys of one extent (a sequence, ring attention's blocks of
 * S/cp) meet nothing here.
 */
static void causal_edges(sp_check_t *C, const sp_tensor_t *qt, int qd, const sp_tensor_t *kt,
                         int kd, int sized, int64_t o, sp_loc_t loc)
{
    const sp_pos_t *q = &qt->pos[qd], *k = &kt->pos[kd];
    int64_t nq = qt->shape[qd], nk = kt->shape[kd];
    if (q->ext == k->ext && q->ext != 0)
        return;
    int64_t rq = real_extent(C, q, nq), rk = real_extent(C, k, nk);
    if (sized || rq < 0 || rk < 0) {
        sp_note_clamped(C, SP_CLAMP_ORDER, loc);
        return;
    }
    int64_t fr[2], nv[2]; /* [0] checked, [1] real */
    for (int i = 0; i < 2; i++) {
        int64_t a = i ? rq : nq, b = i ? rk : nk;
        int64_t from = b - 1 - o > 0 ? b - 1 - o : 0, past = a + o > 0 ? a + o : 0;
        fr[i] = a > from ? a - from : 0;
        nv[i] = b > past ? b - past : 0;
    }
    if (fr[0] == fr[1] && nv[0] == nv[1])
        return;
    /* queries and keys each of one dim: src/check.c keep_order checks sizes of the real
       difference */
    int dq = one_dim(C, q->ext), dk = one_dim(C, k->ext);
    if (C->order_q < 0 && dq >= 0 && dk >= 0 && dq != dk) {
        C->order_q = dq;
        C->order_k = dk;
        C->order_diff = rq - rk;
    }
    sp_note_clamped(C, SP_CLAMP_ORDER, loc);
}

void sp_refine_pos(sp_check_t *C, const sp_ast_expr_t *e, const char *name,
                   const sp_ast_arg_t *const *args, const sp_attr_t *attrs, int na,
                   const sp_tensor_t *in, int nin, sp_tensor_t *y)
{
    const sp_tensor_t *x = &in[0];
    int cs = strcmp(name, "causal_softmax") == 0 || strcmp(name, "causal_mask") == 0;
    if ((cs && x->ndim >= 2) ||
        (strncmp(name, "attention", 9) == 0 && nin >= 3 && in[0].ndim >= 2 && in[1].ndim >= 2 &&
         attr_value(attrs, attr_at(args, na, "causal", -1), 0) != 0)) {
        int ko = attr_at(args, na, "offset", cs ? 0 : -1);
        const sp_tensor_t *kt = cs ? x : &in[1];
        int kd = cs ? x->ndim - 1 : in[1].ndim - 2;
        int64_t slack = relate_pos(C, ko >= 0 ? args[ko]->value : NULL, attr_value(attrs, ko, 0),
                                   &x->pos[x->ndim - 2], &kt->pos[kd], e->loc);
        sp_members_slack(C, x, x->ndim - 2, slack, SP_SLACK_DIAG, e);
        sp_members_slack(C, kt, kd, slack, SP_SLACK_DIAG, e);
        sp_members_couple(C, x, x->ndim - 2, kt, kd, slack);
        causal_edges(C, x, x->ndim - 2, kt, kd,
                     ko >= 0 && args[ko]->value->kind != SP_AST_NUM &&
                         sp_pos_monomial(C, NULL, args[ko]->value) != 1,
                     attr_value(attrs, ko, 0), e->loc);
        /* masks compose through the values (a product of two over a shared axis, a matmul of
           one with itself keeps j <= i - 2|o|: helper-87's review, session 45): the output
           counts this mask's slack, not one (src/ops.c mask_count counted one), and
           src/members.c sp_members_masks records a composition's sum */
        if (slack > 1 && y->masks > 0)
            y->masks = sp_masks_add(y->masks, slack - 1);
    }
    if (strcmp(name, "topk_mask") == 0 && x->ndim >= 1) {
        /* ties go to the lower index: over equal values (x * 0) the mask is the literal slice
           [0, k) of the axis, and n elements outside it need k + n (helper-77's review) */
        int64_t kk = attr_value(attrs, attr_at(args, na, "k", 0), -1);
        int64_t d = attr_value(attrs, attr_at(args, na, "dim", 1), -1);
        if (d < 0)
            d += x->ndim;
        sp_members_slack(C, x, d >= 0 && d < x->ndim ? (int)d : x->ndim - 1, kk > 0 ? kk : -1,
                         SP_SLACK_TOPK, e);
    }
    if ((strcmp(name, "rope") == 0 || strcmp(name, "rope_grad") == 0) && x->ndim >= 1) {
        /* the halves of the last axis (its even and odd positions when interleaved) rotate
           into each other: two pieces, whatever the tables (full-width ones make no tensor of
           the half's extent; helper-82's review, session 44) */
        int64_t il = attr_value(attrs, attr_at(args, na, "interleaved", 0), 0);
        sp_members_pieces(C, x, x->ndim - 1, x->shape[x->ndim - 1] / 2, il != 0);
    }
    if (strcmp(name, "repeat_interleave") == 0 && y->ndim >= 1) {
        /* runs of `repeats` copies: of a literal operand by a size count, the runs grow with
           the size and no other tensor has their extent (helper-82: [0, 1] repeated D/2); a
           count that is the same at the real sizes (GQA's heads per group) makes the same runs
           at every size */
        int kr = attr_at(args, na, "repeats", 0);
        int64_t r = attr_value(attrs, kr, 0);
        int64_t d = attr_value(attrs, attr_at(args, na, "dim", 1), 0);
        if (d < 0)
            d += y->ndim;
        if (r > 1 && d >= 0 && d < y->ndim && kr >= 0 && sp_pos_monomial(C, NULL, args[kr]->value) != 1)
            sp_members_pieces(C, y, (int)d, r, 0);
    }
    if ((strcmp(name, "embedding") == 0 && nin == 1) ||
        (strcmp(name, "embedding_grad") == 0 && nin == 2)) {
        int ki = attr_at(args, na, "ids", -1);
        if (ki >= 0 && y->ndim >= 1) {
            size_ids(C, args[ki]->value, y, name[9] == '_', e->loc);
            /* rows named by literal ids: the table's other rows are fewer by as many (and the
               literal rule keeps the dim above them only): the dim's slack (helper-79) */
            sp_members_slack(C, name[9] == '_' ? y : x, 0, ids_end(&attrs[ki]), SP_SLACK_PREFIX,
                             e);
        }
    }
    if (strncmp(name, "attention", 9) == 0 && nin >= 2 && in[0].ndim >= 3 && in[1].ndim >= 3) {
        /* query heads per key/value head: a split no layout writes, whole at the real sizes
           too (the heads' real extents through their monomials), else the real sizes */
        const sp_tensor_t *q = &in[0], *k = &in[1];
        int hq = q->ndim - 3, hk = k->ndim - 3;
        fmpq_t g;
        fmpq_init(g);
        int whole = real_ratio(C, q->pos[hq].ext, q->shape[hq], k->pos[hk].ext, k->shape[hk], g)
                        ? fmpz_is_one(fmpq_denref(g))
                        : q->shape[hq] == k->shape[hk]; /* one head each: equal real counts */
        fmpq_clear(g);
        if (!whole)
            sp_note_clamped(C, SP_CLAMP_SUM, e->loc);
        return;
    }
    if (strcmp(name, "reshape") == 0 || strcmp(name, "view") == 0 ||
        strcmp(name, "expand") == 0 || strcmp(name, "broadcast_to") == 0) {
        /* a new dim's extent: the monomial of its entry in the shape list */
        int k = attr_at(args, na, "shape|size", 0);
        const sp_ast_expr_t *l = k >= 0 ? args[k]->value : NULL;
        if (l && l->kind == SP_AST_LIST && l->nargs == (size_t)y->ndim)
        {
            int inferred = -1;
            for (int j = 0; j < y->ndim; j++) {
                const sp_ast_expr_t *v = l->args[j].value;
                int keep = v->kind == SP_AST_NEG ||
                           (v->kind == SP_AST_NUM && fmpq_sgn(v->value) <= 0); /* -1: inferred */
                if (keep)
                    inferred = j;
                if (y->pos[j].ext == 0 && !keep)
                    y->pos[j].ext = sp_pos_monomial(C, NULL, v);
            }
            if (inferred >= 0 && name[0] != 'e' && !inferred_whole_real(C, x, y, inferred))
                sp_note_clamped(C, SP_CLAMP_SUM, e->loc);
            /* an inferred extent is tracked by no monomial, so neither its rows nor the
               blocks it splits the operand's dims into are known to the relations test
               (helper-80's review: 24 e4 of the sums of [-1, 2] pairs checked at S = 6, three
               rows): no room on the operand's dims (the real sizes decide) */
            int same = x->ndim == y->ndim;
            for (int j = 0; j < y->ndim && same; j++)
                same = x->shape[j] == y->shape[j];
            for (int j = 0; inferred >= 0 && name[0] != 'e' && !same && j < x->ndim; j++)
                sp_members_slack(C, x, j, -1, SP_SLACK_PREFIX, e);
        }
        if (name[0] == 'r' || name[0] == 'v')
            view_scales(C, x, y, e->loc);
        return;
    }
    /* a slice's, chunk's or split's output axis: its offset is the operand's plus the start,
       whose monomial the program's text gives (src/reduce_sums.c sp_pos_monomial: a slice's
       start is a size term, a piece's a block of the operand's extent); a sum of sizes is
       reported and the check runs at the real sizes (src/ops_pos.c, docs/soundness.md
       "Offsets") */
    int slice = strcmp(name, "slice") == 0, chunk = strcmp(name, "chunk") == 0;
    if ((!slice && !chunk && strcmp(name, "split") != 0) || x->ndim <= 0 || y->ndim != x->ndim)
        return;
    int64_t d = attr_value(attrs, attr_at(args, na, "dim", slice ? 0 : 1), 0);
    if (d < 0)
        d += x->ndim;
    if (d < 0 || d >= x->ndim)
        return;
    sp_pos_t p = x->pos[d]; /* composed with the operand's extent (exact or not), then the
                               output's */
    p.inexact |= p.ext != 1;
    int32_t term = 0, ext = p.ext;
    if (slice) {
        int ks = attr_at(args, na, "start", 1), ke = attr_at(args, na, "end", 2);
        if (attr_value(attrs, attr_at(args, na, "step", 3), 1) != 1)
            return; /* a step: the operator's report (SP_CLAMP_SUM) and a mixed offset */
        int64_t s = attr_value(attrs, ks, 0);
        const sp_ast_expr_t *sa = ks >= 0 ? args[ks]->value : NULL;
        const sp_ast_expr_t *ea = ke >= 0 ? args[ke]->value : NULL;
        ext = ea ? sp_pos_monomial(C, s != 0 ? sa : NULL, ea)
                 : s == 0 && y->shape[d] == x->shape[d] ? p.ext : 0;
        int block = 0;
        if (s != 0) {
            int32_t id = sp_pos_monomial(C, NULL, sa);
            block = id > 1 && block_slice(C, x, y, d, s, id, ext);
            term = sp_pos_term(id ? id : sp_pos_fresh(C), block);
            if (!block)
                sp_pos_note_named(C, term >> 2, sa);
        }
        if (!block && !sp_pos_same_scale(C, ext, p.ext))
            p.rescaled = SP_RESCALED;
        slice_bounds_real(C, x, d, s, sa, ea, attr_value(attrs, ke, x->shape[d]), e->loc);
        /* rows named by an end written without a size or mesh size, by its evaluated value
           (`2`, `1 + 1`, a loop variable, a function's parameter: helper-79's and helper-81's
           reviews): the other rows are fewer by as many; a bound from the end names rows of
           every size.  An end with sizes is the blocks' only where the kept rows are a block
           of the axis at both sizes (a micro-batch's `(mb+1)*(B/dp/2)`); another dim's size, a
           mesh size or an expression of them (`T`, `T - 1`, `tp`: helper-87's review, session
           45) names rows as a literal does, by its value where that is the same at the real
           sizes, and else (a reduced other dim) leaves no room.  An axis whose extent names no dim
           (B/dp with B kept real) gets nothing from such an end, as before: its positions are
           the same at both sizes, or a window whose literal bounds gave their slack */
        if (ea != NULL) {
            int64_t en = attr_value(attrs, ke, -1);
            if (!mentions_size(C, ea))
                sp_members_slack(C, x, (int)d, en < 0 || s < 0 ? -1 : en, SP_SLACK_PREFIX, e);
            else if (x->pos[d].ext != 1 && !(ext > 1 && block_slice(C, x, y, d, s, ext, ext)))
                sp_members_slack(C, x, (int)d,
                                 en < 0 || s < 0 || !same_at_real(C, ea) ? -1 : en,
                                 SP_SLACK_PREFIX, e);
        }
    } else {
        int64_t k = attr_value(attrs, attr_at(args, na, "index", 2), 0);
        if (x->shape[d] % (y->shape[d] ? y->shape[d] : 1) != 0)
            return; /* unequal pieces: reported (SP_CLAMP_SUM), the offset mixed */
        if (chunk && y->shape[d] > 0 && !pieces_whole_real(C, x, d, x->shape[d] / y->shape[d]))
            sp_note_clamped(C, SP_CLAMP_SUM, e->loc);
        if (k != 0 && y->shape[d] != 0) {
            if (p.ext == 0)
                ext = p.ext = sp_pos_fresh(C); /* the pieces' extent is of the same monomial */
            term = sp_pos_term(p.ext, 1);
        }
    }
    if ((term >> 2) > 1 || ext != 1)
        sp_size_on_exact(C, &x->pos[d], e->loc);
    int k = sp_pos_compose(&p, term);
    sp_note_composed(C, k, e->loc);
    p.ext = ext;
    y->pos[d] = p;
}


#define SP_UNEVEN_MAX ((int)(sizeof(((sp_check_t *)0)->uneven) / sizeof(int32_t)))

void sp_note_uneven(sp_check_t *C, int32_t ext)
{
    if (ext == 1)
        return; /* an exact extent: scale 1 */
    for (int k = 0; k < C->nuneven && k < SP_UNEVEN_MAX; k++)
        if (C->uneven[k] == ext)
            return;
    if (C->nuneven < SP_UNEVEN_MAX)
        C->uneven[C->nuneven] = ext;
    if (C->nuneven <= SP_UNEVEN_MAX)
        C->nuneven++; /* past the array: every monomial counts as split unevenly */
}

/* Does a layout split the axis of monomial ext unevenly (sp_note_uneven)? */
static int uneven(const sp_check_t *C, int32_t ext)
{
    if (C->nuneven > SP_UNEVEN_MAX)
        return 1;
    for (int k = 0; k < C->nuneven; k++)
        if (C->uneven[k] == ext)
            return 1;
    return 0;
}

/*
 * The real count of x's elements over the dims in mask (sp_op_env_t's real_count): each dim's
 * extent times its monomial's scale (sp_pos_scale); 0 when a dim's monomial is not known (a
 * fresh one, or none), or is scaled and one a layout splits unevenly (C->uneven: the axis may
 * be a shard, whose real extent is not its checked one times the scale; at scale 1 the extent
 * seen is the real one), or the count is not whole: the operator divides by the count it sees
 * and reports SP_CLAMP_COUNT, and the real sizes decide.
 */
static int real_count(void *ctx, const sp_tensor_t *x, unsigned mask, fmpq_t out)
{
    sp_check_t *C = ctx;
    fmpq_t q;
    fmpq_init(q);
    fmpq_one(out);
    int ok = 1;
    for (int d = 0; ok && d < x->ndim; d++) {
        if (!(mask >> d & 1u))
            continue;
        ok = sp_pos_scale(C, x->pos[d].ext, q) && (fmpq_is_one(q) || !uneven(C, x->pos[d].ext));
        fmpz_mul_si(fmpq_numref(q), fmpq_numref(q), (slong)x->shape[d]);
        fmpq_canonicalise(q);
        fmpq_mul(out, out, q);
    }
    fmpq_clear(q);
    return ok && fmpz_is_one(fmpq_denref(out));
}

sp_op_env_t sp_pos_env(sp_check_t *C)
{
    return (sp_op_env_t){real_count, C};
}
