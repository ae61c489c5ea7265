/* lineage.c: cut points and stages: plan values related to model tensors; inference. */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "exec_int.h"
#include "sbuf.h"

/*
 * A lineage annotation `x = ... ~ T : L` (or an output) relates the plan value x to the model
 * tensor T under layout L: it makes a stage, and at a cut the plan continues from the
 * distribution of T's fresh value, as the model (run again cutting there) continues from fresh
 * symbols.  The cut points come from a first plan pass (C->collect_only), from lineage
 * inference, or from a walk of the plan's control flow (sp_plan_guess_cuts).
 */

/* ---- cut points ----------------------------------------------------------------------------- */

int is_cut(sp_check_t *C, const char *name)
{
    return sp_nameidx_find(&C->cutidx, C->cuts, sizeof(char *), C->ncuts, name) >= 0;
}

void add_cut(sp_check_t *C, const char *name)
{
    if (is_cut(C, name))
        return;
    if (C->ncuts == C->acuts) {
        C->acuts = C->acuts ? 2 * C->acuts : 16;
        C->cuts = flint_realloc(C->cuts, (size_t)C->acuts * sizeof(char *));
    }
    C->cuts[C->ncuts++] = sp_strdup(name);
    sp_nameidx_added(&C->cutidx, C->cuts, sizeof(char *), C->ncuts);
}

/* ---- stages --------------------------------------------------------------------------------- */

/*
 * The model value a relation of rows [lo, hi) (dim 0; a scalar has one row) on the active ranks
 * compares with: the value before the cut, or, where the plan already crossed this cut point on
 * those rows, the model's fresh value.  *mixed is set to 2 when the rows disagree on some
 * active rank, else to 1 when the active ranks disagree.
 */
static const sp_binding_t *model_orig(interp_t *I, const char *name, int64_t lo, int64_t hi,
                                      int *mixed)
{
    sp_check_t *C = I->C;
    *mixed = 0;
    for (int i = 0; i < C->npassed; i++) {
        if (strcmp(C->passed[i], name) != 0)
            continue;
        int some = 0, all = 1, rows_mixed = 0;
        int64_t nrows = C->passed_rows[i];
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!I->active[r])
                continue;
            int rsome = 0, rall = 1;
            for (int64_t row = lo; row < hi && row < nrows; row++) {
                rsome |= C->passed_on[i][r * nrows + row];
                rall &= C->passed_on[i][r * nrows + row];
            }
            rows_mixed |= rsome && !rall;
            some |= rsome;
            all &= rall;
        }
        if (all && some)
            return sp_model_value(C, name);
        *mixed = rows_mixed ? 2 : some;
        break;
    }
    for (int i = 0; i < C->nmorig; i++)
        if (strcmp(C->morig[i].name, name) == 0)
            return &C->morig[i];
    return sp_model_value(C, name);
}

static void mark_passed(interp_t *I, const char *name, int64_t nrows, int64_t lo, int64_t hi)
{
    sp_check_t *C = I->C;
    int k;
    for (k = 0; k < C->npassed; k++)
        if (strcmp(C->passed[k], name) == 0)
            break;
    if (k == C->npassed) {
        C->passed = flint_realloc(C->passed, (size_t)(C->npassed + 1) * sizeof(char *));
        C->passed_on = flint_realloc(C->passed_on, (size_t)(C->npassed + 1) * sizeof(uint8_t *));
        C->passed_rows = flint_realloc(C->passed_rows, (size_t)(C->npassed + 1) * sizeof(int64_t));
        C->passed[k] = sp_strdup(name);
        C->passed_on[k] = flint_calloc((size_t)(I->nranks * nrows), 1);
        C->passed_rows[k] = nrows;
        C->npassed++;
    }
    for (int64_t r = 0; r < I->nranks; r++)
        if (I->active[r])
            for (int64_t row = lo; row < hi; row++)
                C->passed_on[k][r * nrows + row] = 1;
}

/* rows [lo, hi) of dim 0 of t, into out (initialized); rows (NULL: inferred) gives their
   offset's and extent's monomials (src/ops_pos.c); as sp_pos_compose: 0 when the offset
   became a sum of sizes, 2 an exact sum */
static int tensor_rows(sp_check_t *C, sp_tensor_t *out, const sp_tensor_t *t, int64_t lo,
                       int64_t hi, const sp_ast_expr_t *rows, sp_loc_t loc)
{
    int64_t shape[SP_MAX_DIMS], inner = 1;
    memcpy(shape, t->shape, sizeof shape);
    for (int d = 1; d < t->ndim; d++)
        inner *= t->shape[d];
    shape[0] = hi - lo;
    sp_tensor_alloc(out, t->ndim, shape);
    for (int64_t i = 0; i < (hi - lo) * inner; i++)
        out->v[i] = t->v[lo * inner + i];
    memcpy(out->pos, t->pos, sizeof out->pos);
    out->masks = t->masks;
    out->mask_axes = t->mask_axes;
    out->mask_ext = t->mask_ext;
    out->pos[0].inexact |= t->pos[0].ext != 1;
    int32_t id = rows && lo != 0 ? sp_pos_monomial(C, NULL, rows->a) : 0;
    int32_t term = lo == 0 ? 0 : sp_pos_term(id ? id : sp_pos_fresh(C), 0);
    if (rows)
        sp_pos_note_named(C, term >> 2, rows->a);
    int k = sp_pos_compose(&out->pos[0], term);
    int size = lo != 0 && id != 1;
    if (hi - lo != t->shape[0]) {
        id = rows ? sp_pos_monomial(C, rows->a, rows->b) : 0;
        out->pos[0].ext = id ? id : sp_pos_fresh(C);
        size |= id != 1;
        if (!sp_pos_same_scale(C, out->pos[0].ext, t->pos[0].ext))
            out->pos[0].rescaled = SP_RESCALED;
    }
    if (size)
        sp_size_on_exact(C, &t->pos[0], loc);
    return k;
}

/*
 * Relate the plan value `val` (of plan tensor pname) to model tensor mname under layout: make a
 * stage, and for a lineage cut replace the plan value by the distribution of the model's fresh
 * value.  Returns the (possibly replaced) value.
 */
sp_status_t relate(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                   const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al, pval_t *val)
{
    return relate_l(I, kind, pname, ploc, mname, mloc, al, NULL, NULL, NULL, val);
}

/*
 * al (a layout in the source) or given (an inferred one); rows (a RANGE lo..hi or NULL) relates
 * only rows [lo, hi) of dim 0 of the model tensor, and al then lays out that slice.
 */
sp_status_t relate_l(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                     const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al,
                     const sp_layout_t *given, const sp_ast_expr_t *rows,
                     const int64_t *given_rows, pval_t *val)
{
    sp_check_t *C = I->C;
    int mixed;
    const sp_binding_t *cur0 = sp_model_value(C, mname);
    if (cur0 == NULL) {
        errat(I, SP_DIAG_LINEAGE, mloc, "lineage to a missing model tensor '%s'", mname);
        return SP_ERR_INPUT;
    }
    int64_t nrows = cur0->t[0].ndim > 0 ? cur0->t[0].shape[0] : 1, lo = 0, hi = nrows;
    char sname[600];
    snprintf(sname, sizeof sname, "%s", mname);
    int sliced = rows != NULL || given_rows != NULL;
    if (sliced) {
        if (given_rows) {
            lo = given_rows[0];
            hi = given_rows[1];
        } else if (!eval_int(I, rows->a, -1, &lo) || !eval_int(I, rows->b, -1, &hi))
            return SP_ERR_INPUT;
        if (cur0->t[0].ndim == 0 || lo < 0 || hi > nrows || lo >= hi) {
            errat(I, SP_DIAG_LINEAGE, rows ? rows->loc : mloc,
                  "rows %lld..%lld are not a non-empty slice of dim 0 of '%s' (%lld rows)",
                  (long long)lo, (long long)hi, mname,
                  (long long)(cur0->t[0].ndim > 0 ? nrows : 0));
            return SP_ERR_INPUT;
        }
        snprintf(sname, sizeof sname, "%s[%lld..%lld]", mname, (long long)lo, (long long)hi);
    }
    const sp_binding_t *mb = model_orig(I, mname, lo, hi, &mixed);
    if (mixed) {
        if (mixed == 2)
            errat(I, SP_DIAG_LINEAGE, mloc,
                  "'%s' is a cut point the plan already crossed on some of these rows but not on "
                  "others",
                  sname);
        else
            errat(I, SP_DIAG_LINEAGE, mloc,
                  "'%s' is a cut point the plan already crossed on some of these ranks but not on "
                  "others",
                  mname);
        return SP_ERR_INPUT;
    }
    /* the model value compared with: the tensor, or its rows [lo, hi) */
    sp_tensor_t mslice;
    sp_tensor_init(&mslice);
    if (sliced) {
        int k = tensor_rows(C, &mslice, &mb->t[0], lo, hi, rows, rows ? rows->loc : mloc);
        sp_note_composed(C, k, rows ? rows->loc : mloc);
        sp_pos_note(C, &mslice, rows ? rows->loc : mloc);
    }
    const sp_tensor_t *mt = sliced ? &mslice : &mb->t[0];
    sp_status_t st = SP_ERR_INPUT;
    sp_layout_t L;
    sp_layout_init(&L);
    if (given) {
        sp_layout_copy(&L, given);
    } else if (al) {
        if (!resolve_layout(I, al, &L))
            goto cleanup;
    } else {
        L.ndim = mt->ndim;
        memcpy(L.size, mt->shape, sizeof L.size);
    }
    if (!layout_matches_model(I, &L, mt, SP_DIAG_LINEAGE, al ? al->loc : mloc, sname))
        goto cleanup;
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r])
            continue;
        if ((*val)[r].ndim < 0) {
            char rs[128];
            sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
            errat(I, SP_DIAG_LINEAGE, ploc, "'%s' has no value on rank %s", pname, rs);
            goto cleanup;
        }
        int64_t ls[SP_MAX_DIMS];
        sp_layout_local_shape(&C->mesh, &L, r, ls);
        int ok = (*val)[r].ndim == L.ndim;
        for (int d = 0; d < L.ndim && ok; d++)
            ok = ls[d] == (*val)[r].shape[d];
        if (!ok) {
            char a[128], b[128], rs[128];
            sp_tensor_shape_str(&(*val)[r], a, sizeof a);
            shape_str(ls, L.ndim, b, sizeof b);
            sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
            errat(I, SP_DIAG_LINEAGE, al ? al->loc : ploc,
                  "'%s' has shape %s on rank %s but the layout of '%s' gives %s", pname, a, rs,
                  sname, b);
            goto cleanup;
        }
    }
    /* the model's elements each rank's value is compared with: its block of the model tensor,
       whose offset adds a block term to the tensor's (src/ops_pos.c) */
    sp_tensor_t mtx = *mt;
    sp_pos_fill_ext(&mtx, &C->pos_next);
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r])
            continue;
        sp_tensor_t blk;
        memset(&blk, 0, sizeof blk);
        blk.ndim = L.ndim;
        int64_t start[SP_MAX_DIMS], end;
        for (int d = 0; d < L.ndim; d++) {
            sp_layout_range(&C->mesh, &L, d, r, &start[d], &end);
            blk.shape[d] = end - start[d];
        }
        int k = sp_pos_block(&blk, &mtx, start, &C->pos_next);
        sp_note_composed(C, k, al ? al->loc : ploc);
        sp_pos_note(C, &blk, al ? al->loc : ploc);
        if (k == 0)
            break;
    }
    if (!C->collect_only) {
        if (C->nstages == C->astages) {
            C->astages = C->astages ? 2 * C->astages : 32;
            C->stages = flint_realloc(C->stages, (size_t)C->astages * sizeof(sp_stage_t));
        }
        sp_stage_t *s = &C->stages[C->nstages];
        memset(s, 0, sizeof(*s));
        s->id = C->nstages++;
        s->kind = kind;
        s->plan_name = sp_strdup(pname);
        s->model_name = sp_strdup(sname);
        s->plan_loc = ploc;
        s->model_loc = mb->loc;
        sp_layout_copy(&s->layout, &L);
        s->plan = pval_new(I->nranks);
        for (int64_t r = 0; r < I->nranks; r++)
            if (I->active[r])
                sp_tensor_copy(&s->plan[r], &(*val)[r]);
        sp_tensor_init(&s->model);
        sp_tensor_copy(&s->model, mt);
        s->nranks = I->nranks;
        s->memo_of = -1;
        s->fail_rank = -1;
    }
    if (kind == SP_STAGE_LINEAGE) {
        if (C->collect_only) {
            add_cut(C, mname);
        } else {
            mark_passed(I, mname, nrows, lo, hi);
            /* continue from the model's (fresh) value, or its rows [lo, hi) */
            sp_tensor_t fresh;
            sp_tensor_init(&fresh);
            if (sliced) {
                int k = tensor_rows(C, &fresh, &cur0->t[0], lo, hi, rows, rows ? rows->loc : mloc);
                sp_note_composed(C, k, rows ? rows->loc : mloc);
            }
            pval_t nv = distribute(I, &L, sliced ? &fresh : &cur0->t[0], mname,
                                   al ? al->loc : ploc, 0);
            sp_tensor_clear(&fresh);
            if (nv == NULL) {
                st = SP_ERR_INPUT;
                goto cleanup;
            }
            for (int64_t r = 0; r < I->nranks; r++)
                if (!I->active[r] && (*val)[r].ndim >= 0)
                    sp_tensor_copy(&nv[r], &(*val)[r]);
            pval_free(*val, I->nranks);
            *val = nv;
        }
    }
    st = SP_OK;
cleanup:
    sp_layout_clear(&L);
    sp_tensor_clear(&mslice);
    return st;
}

/* ---- lineage inference (--infer-lineage) ---------------------------------------------------- */

/*
 * The proposals come from src/infer.c (one numeric run of the reference executor, before any
 * symbolic execution); here an assignment without lineage is related as proposed, exactly as if
 * the plan had written `~ T[rows] : L`.  The stage proves it; a proposal that does not fit the
 * checker's own values (a shape, a cut already crossed on other ranks) is dropped silently, and
 * the cut point it named is then never crossed, which sends the checker to its first pass
 * (src/check.c) with the cuts actually crossed.
 */
sp_status_t relate_inferred(interp_t *I, const sp_ast_stmt_t *s, const char *pname, pval_t *val)
{
    sp_check_t *C = I->C;
    int k = 0;
    while (k < I->nocc && I->occ_stmt[k] != s)
        k++;
    if (k == I->nocc) {
        I->occ_stmt = flint_realloc(I->occ_stmt, (size_t)(k + 1) * sizeof(*I->occ_stmt));
        I->occ_n = flint_realloc(I->occ_n, (size_t)(k + 1) * sizeof(*I->occ_n));
        I->occ_stmt[k] = s;
        I->occ_n[k] = flint_calloc((size_t)I->nranks, sizeof(int));
        I->nocc++;
    }
    /* this execution's occurrence number on each active rank; all the same, or no proposal */
    int occ = -1, same = 1;
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r] || (*val)[r].ndim < 0)
            continue;
        int o = I->occ_n[k][r]++;
        same = same && (occ < 0 || o == occ);
        occ = o;
    }
    if (!same || occ < 0)
        return SP_OK;
    const sp_inferred_t *inf = NULL;
    for (int i = 0; i < C->ninferred && inf == NULL; i++)
        if (C->inferred[i].stmt == s && C->inferred[i].occ == occ)
            inf = &C->inferred[i];
    if (inf == NULL)
        return SP_OK;
    sp_diags_mark_t dm;
    sp_diags_mark(C->d, &dm);
    int64_t rows[2] = {inf->rlo, inf->rhi};
    int before = C->nstages;
    sp_status_t st = relate_l(I, SP_STAGE_LINEAGE, pname, s->targets[0]->loc, inf->model_name,
                              s->targets[0]->loc, NULL, &inf->layout, NULL,
                              inf->rhi > 0 ? rows : NULL, val);
    if (st == SP_ERR_INPUT) {
        if (getenv("SP_INFER_DEBUG")) {
            char *h = sp_diags_format_head(C->d, 0);
            fprintf(stderr, "infer: dropped at line %u occ %d: %s\n", s->loc.line, occ, h ? h : "");
            free(h);
        }
        sp_diags_restore(C->d, &dm);
        st = SP_OK;
    }
    if (st == SP_OK && C->nstages == before + 1)
        C->stages[before].inferred = 1;
    return st;
}

/* ---- the cut guess -------------------------------------------------------------------------- */

/*
 * A guess of the cut points without executing anything: the plan's control flow (loops,
 * compile-time conditions, on blocks) walked as pass 1 would walk it, collecting the targets
 * of lineage annotations into C->cuts.  The checker confirms the guess after pass 2
 * (sp_cuts_confirmed): the plan's control flow does not depend on tensor values, so the cuts
 * pass 2 crossed are the cuts pass 1 would have collected.  Not used with --infer-lineage;
 * SP_ERR_INPUT when the walk stops (the caller then runs pass 1).
 */
static int block_has_lineage(const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        if (s->lineage || block_has_lineage(&s->body) || block_has_lineage(&s->else_body))
            return 1;
    }
    return 0;
}

int sp_plan_has_lineage(const sp_check_t *C)
{
    if (C->plan && block_has_lineage(&C->plan->body))
        return 1;
    for (int i = 0; i < C->nfuncs; i++)
        if (block_has_lineage(&C->funcs[i]->body))
            return 1;
    return 0;
}

sp_status_t sp_plan_guess_cuts(sp_check_t *C)
{
    /* lineage inside functions is reached through expressions, which the walk does not enter */
    for (int i = 0; i < C->nfuncs; i++)
        if (block_has_lineage(&C->funcs[i]->body))
            return SP_ERR_INPUT;
    sp_diags_mark_t dm;
    sp_diags_mark(C->d, &dm);
    interp_t I;
    memset(&I, 0, sizeof I);
    I.C = C;
    I.is_plan = 1;
    I.walk = 1;
    sp_status_t st = plan_mesh(C, &I);
    const sp_ast_block_t *body = &C->plan->body;
    for (size_t i = 1; i < body->n && st == SP_OK; i++)
        st = exec_stmt(&I, body->stmts[i]);
    interp_clear(&I);
    sp_diags_restore(C->d, &dm);
    return st;
}

/* Did pass 2 cross exactly the guessed cuts?  If so, C->cuts takes pass 2's order (pass 1's). */
int sp_cuts_confirmed(sp_check_t *C)
{
    if (C->npassed != C->ncuts)
        return 0;
    for (int i = 0; i < C->npassed; i++)
        if (!is_cut(C, C->passed[i]))
            return 0;
    for (int i = 0; i < C->npassed; i++) {
        flint_free(C->cuts[i]);
        C->cuts[i] = sp_strdup(C->passed[i]);
        sp_nameidx_stale(&C->cutidx); /* another order */
    }
    return 1;
}
