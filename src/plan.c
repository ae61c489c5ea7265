/* plan.c: the plan on every rank of its mesh: distribution, collectives, closing checks. */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"
#include "sbuf.h"

/*
 * A plan runs through the core (exec.c) with one tensor per rank of its mesh.  What only a plan
 * has lives here: the mesh, a model tensor distributed over the ranks under a layout (shards,
 * and the parts of a pending reduction), collectives and send/recv (messages matched in plan
 * order), and the checks after the last statement: every send received, some output declared,
 * every output covered, every output of the model checked or omitted.
 */

/* ---- the mesh ------------------------------------------------------------------------------- */

/* The plan's mesh (its first statement) into C->mesh, and I set up for the plan's ranks. */
sp_status_t plan_mesh(sp_check_t *C, interp_t *I)
{
    const sp_ast_block_t *body = &C->plan->body;
    if (body->n == 0 || body->stmts[0]->kind != SP_STMT_MESH) {
        sp_diags_error(C->d, SP_DIAG_LAYOUT, C->plan->loc, "a plan begins with 'mesh AXIS = N, ...'");
        return SP_ERR_INPUT;
    }
    const sp_ast_stmt_t *ms = body->stmts[0];
    memset(&C->mesh, 0, sizeof C->mesh);
    C->mesh.nranks = 1;
    if (ms->nbinds > SP_MAX_AXES) {
        sp_diags_error(C->d, SP_DIAG_LIMIT, ms->loc, "at most %d mesh axes", SP_MAX_AXES);
        return SP_ERR_INPUT;
    }
    for (size_t k = 0; k < ms->nbinds; k++) {
        const sp_ast_bind_t *b = &ms->binds[k];
        int64_t n, real;
        I->nranks = 1;
        I->active = NULL;
        if (!eval_int(I, b->value, -1, &n)) {
            return SP_ERR_INPUT;
        }
        if (sp_mesh_axis(&C->mesh, b->name.str) >= 0) {
            sp_diags_error(C->d, SP_DIAG_LAYOUT, b->name.loc, "mesh axis '%s' declared twice", b->name.str);
            return SP_ERR_INPUT;
        }
        /* the mesh cutoff: an axis the plan is uniform along runs at its checked size */
        real = n;
        for (int c = 0; c < C->ncutoff; c++)
            if (strcmp(C->cutoff[c].name, b->name.str) == 0 && C->cutoff[c].real == n)
                n = C->cutoff[c].red;
        if (n < 1 || strlen(b->name.str) >= sizeof C->mesh.name[0]) {
            sp_diags_error(C->d, SP_DIAG_LAYOUT, b->value->loc, "a mesh axis needs a size of at least 1");
            return SP_ERR_INPUT;
        }
        if (C->mesh.nranks > C->opt.max_ranks / n) {
            sp_diags_error(C->d, SP_DIAG_LIMIT, b->value->loc,
                           "the mesh has more than %lld ranks (--max-ranks)", (long long)C->opt.max_ranks);
            return SP_ERR_INPUT;
        }
        snprintf(C->mesh.name[C->mesh.naxes], sizeof C->mesh.name[0], "%s", b->name.str);
        C->mesh.real[C->mesh.naxes] = real;
        C->mesh.size[C->mesh.naxes++] = n;
        C->mesh.nranks *= n;
    }
    I->nranks = C->mesh.nranks;
    I->active = flint_malloc((size_t)I->nranks);
    memset(I->active, 1, (size_t)I->nranks);
    I->vals = &I->pvals;
    I->nvals = &I->npvals;
    I->index = &I->pindex;
    I->avals = &I->apvals;
    return SP_OK;
}

/* ---- model tensors distributed over the ranks ----------------------------------------------- */

/*
 * The plan's value of a tensor whose logical value is `full` under layout L, for every active
 * rank: the shard, and for pending reductions a decomposition into fresh parts (the last member
 * of each group holds the logical value minus the others, so later stages hold for every
 * decomposition).
 */
/* t's axis d split over the group of axes in chunks of chunk (0: unevenly): for each of the
   group's axes that the mesh cutoff checks smaller, the axis's dim is partitioned over it in
   blocks of the chunk times the group's later axes (src/members.c sp_members_partition) */
static void partition_members(sp_check_t *C, const sp_axes_t *axes, const sp_tensor_t *t,
                              int d, int64_t chunk)
{
    for (int i = 0; i < axes->n; i++) {
        int c = sp_cutoff_index(C, C->mesh.name[axes->axis[i]]);
        if (c < 0)
            continue;
        int64_t stride = 1;
        for (int j = i + 1; j < axes->n; j++)
            stride *= C->mesh.size[axes->axis[j]];
        sp_members_partition(C, t, d, c, chunk > 0 ? chunk * stride : 0);
    }
}

pval_t distribute(interp_t *I, const sp_layout_t *L, const sp_tensor_t *full, const char *name,
                  sp_loc_t loc, int input)
{
    sp_check_t *C = I->C;
    /* a pending entry's group is split by its first member: a group of which only some
       members are active here (an `on` block) would give the others the whole value, not a
       part (NULL after an error) */
    for (int k = 0; k < L->npartial; k++)
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!I->active[r])
                continue;
            int64_t n = sp_axes_count(&C->mesh, &L->paxes[k]);
            for (int64_t j = 0; j < n; j++) {
                int64_t q = sp_axes_member(&C->mesh, &L->paxes[k], r, j);
                if (!I->active[q]) {
                    char a[128], b[128];
                    sp_mesh_rank_str(&C->mesh, r, a, sizeof a);
                    sp_mesh_rank_str(&C->mesh, q, b, sizeof b);
                    errat(I, SP_DIAG_LAYOUT, loc,
                          "'%s' is partial(%s) over a group of rank %s, but rank %s of that group "
                          "is not among the ranks here: a pending reduction's group holds its "
                          "parts on every member",
                          name, sp_red_name(L->pop[k]), a, b);
                    return NULL;
                }
            }
        }
    pval_t out = pval_new(I->nranks);
    sp_tensor_t fullx = *full; /* the same elements; an extent not known gets one fresh id for
                                  every rank's block (src/ops_pos.c) */
    sp_pos_fill_ext(&fullx, &C->pos_next);
    /* a shard over a group with an axis the mesh cutoff checks smaller: its extent is the
       dim's over that axis (B/dp), which scales otherwise than B (src/reduce_sums.c) */
    sp_tensor_t fullb = fullx;
    for (int d = 0; d < L->ndim && d < fullb.ndim; d++)
        if (L->axes[d].n > 0)
            fullb.pos[d].ext = sp_pos_per_axes(C, fullb.pos[d].ext, &L->axes[d], -1);
    int64_t ext0[SP_MAX_DIMS]; /* the first rank's shard extents */
    int have0 = 0;
    for (int64_t r = 0; r < I->nranks; r++)
        if (I->active[r]) {
            sp_layout_project(&C->mesh, L, r, full, &out[r]);
            int64_t start[SP_MAX_DIMS], end;
            for (int d = 0; d < L->ndim; d++)
                sp_layout_range(&C->mesh, L, d, r, &start[d], &end);
            int k = sp_pos_block(&out[r], &fullb, start, &C->pos_next);
            sp_note_composed(C, k, loc);
            sp_pos_note(C, &out[r], loc);
            /* a shard whose extent is not the full one's over a whole number of equal parts
               (torch.chunk's partial last shard, an explicit split): its real extent is not
               its checked one times the monomial's scale (src/exec_pos.c real_count) */
            for (int d = 0; d < out[r].ndim && d < fullx.ndim; d++) {
                if (!have0)
                    ext0[d] = out[r].shape[d];
                if (out[r].shape[d] != fullx.shape[d] &&
                    (out[r].shape[d] == 0 || fullx.shape[d] % out[r].shape[d] != 0 ||
                     out[r].shape[d] != ext0[d]))
                    sp_note_uneven(C, fullx.pos[d].ext);
            }
            have0 = 1;
        }
    /* under the mesh cutoff, a dim sharded over a group with a cut axis: its rows are its
       members' own (src/members.c bounds how many members a monomial holds) */
    for (int d = 0; have0 && C->ncutoff > 0 && d < L->ndim && d < fullx.ndim; d++) {
        int even = ext0[d] > 0 && fullx.shape[d] == ext0[d] * sp_axes_count(&C->mesh, &L->axes[d]);
        partition_members(C, &L->axes[d], &fullx, d, even ? ext0[d] : 0);
    }
    for (int k = 0; k < L->npartial; k++) {
        const sp_axes_t *a = &L->paxes[k];
        int64_t n = sp_axes_count(&C->mesh, a);
        if (n <= 1)
            continue;
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!I->active[r] || sp_axes_index(&C->mesh, a, r) != 0)
                continue;
            /* group led by r: r's value w (the group's value so far: after the earlier
               entries' decompositions it is r's part of them) is split into n parts */
            sp_tensor_t sum;
            sp_tensor_init(&sum);
            sp_tensor_copy(&sum, &out[r]);
            int64_t numel = sp_tensor_numel(&sum);
            sp_red_t op = L->pop[k];
            /* over an axis the mesh cutoff checks smaller, the parts are its members' and the
               value holds one of them (src/members.c; docs/soundness.md, "Mesh cutoff") */
            uint8_t cutmask = 0;
            for (int i = 0; i < a->n; i++) {
                int c = sp_cutoff_index(C, C->mesh.name[a->axis[i]]);
                if (c >= 0 && c < SP_MAX_AXES)
                    cutmask |= (uint8_t)(1u << c);
            }
            if (cutmask && (op == SP_RED_SUM || op == SP_RED_AVG))
                sp_members_whole(C, &sum, cutmask);
            if (op == SP_RED_AVG) {
                /* avg of the parts is w: the parts sum to N * w, N the group's real size
                   (what avg divides by: src/mesh.c) */
                int64_t nr = sp_axes_real_count(&C->mesh, a);
                for (int64_t i = 0; i < numel; i++)
                    sum.v[i] = sp_expr_mul(C->E, sp_expr_const_si(C->E, nr, 1), sum.v[i]);
            }
            for (int64_t j = 0; j + 1 < n; j++) {
                int64_t q = sp_axes_member(&C->mesh, a, r, j);
                if (op == SP_RED_MAX || op == SP_RED_MIN)
                    continue; /* every part holds the value itself (see docs/soundness.md) */
                /* an input's parts are inputs of the plan (`x.part0#4`), a cut's are cut
                   symbols (`y.part0@4`: a counterexample naming one is not end-to-end) */
                char nm[512], prefix[600];
                snprintf(nm, sizeof nm, "%s.part%lld", name, (long long)j);
                sp_tensor_t part;
                sp_tensor_init(&part);
                /* the group's block (src/ops_pos.c) */
                fresh_symbols_as(C, nm, input ? '#' : '@', sum.shape, sum.ndim, sum.pos, &part,
                                 prefix, sizeof prefix);
                if (cutmask) {
                    int64_t mco[SP_MAX_AXES];
                    for (int c = 0; c < SP_MAX_AXES; c++)
                        mco[c] = -1;
                    for (int i = 0; i < a->n; i++) {
                        int c = sp_cutoff_index(C, C->mesh.name[a->axis[i]]);
                        if (c >= 0 && c < SP_MAX_AXES)
                            mco[c] = sp_mesh_coord(&C->mesh, q, a->axis[i]);
                    }
                    sp_members_part(C, prefix, mco);
                }
                for (int64_t i = 0; i < numel; i++)
                    sum.v[i] = sp_expr_sub(C->E, sum.v[i], part.v[i]);
                sp_tensor_clear(&out[q]);
                out[q] = part;
            }
            int64_t last = sp_axes_member(&C->mesh, a, r, n - 1);
            if (op == SP_RED_SUM || op == SP_RED_AVG) {
                sp_tensor_clear(&out[last]);
                out[last] = sum;
            } else {
                sp_tensor_clear(&sum);
            }
        }
    }
    return out;
}

/* plan: x : layout  (a model input or param, distributed) */
int sp_model_declares(const sp_check_t *C, const char *name, int params_only)
{
    const sp_ast_block_t *b = &C->model->body;
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *st = b->stmts[i];
        if (st->kind != SP_STMT_PARAM && (params_only || st->kind != SP_STMT_INPUT))
            continue;
        size_t l = strlen(st->name.str);
        if (!strncmp(st->name.str, name, l) && (name[l] == '\0' || name[l] == '['))
            return 1;
    }
    return 0;
}

/* Is name declared by the model's `input` or `param`, or the optimizer state of a parameter
   (`momentum.w`, `adam.m.w`, `adam.v.w`)? */
static int is_state_input(const sp_check_t *C, const char *name)
{
    static const char *const opt[] = {"momentum.", "adam.m.", "adam.v."};
    for (size_t k = 0; k < sizeof opt / sizeof opt[0]; k++)
        if (!strncmp(name, opt[k], strlen(opt[k])))
            return sp_model_declares(C, name + strlen(opt[k]), 1);
    return sp_model_declares(C, name, 0);
}

sp_status_t plan_layout_decl(interp_t *I, const sp_ast_stmt_t *s)
{
    char nm[512];
    if (!target_name(I, s->targets[0], nm, sizeof nm))
        return SP_ERR_INPUT;
    if (s->lineage) {
        /* the declaration hands the plan the model's own tensor: there is nothing to relate,
           and a '~' here was dropped without a word before (helper-66's review, 2026-12-07) */
        errat(I, SP_DIAG_LINEAGE, s->lineage->loc,
              "lineage on a layout declaration: '%s : [...]' is the model's '%s' itself, on the "
              "mesh; write the layout without '~'", nm, nm);
        return SP_ERR_INPUT;
    }
    const sp_binding_t *mb = sp_model_value(I->C, nm);
    if (mb == NULL) {
        errat(I, SP_DIAG_LINEAGE, s->targets[0]->loc,
              "'%s' is not a model input or parameter (lineage to a missing model tensor)", nm);
        return SP_ERR_INPUT;
    }
    /* a declaration hands the plan the model's own value: only what the model takes as given
       may be handed over, never a value it computes (an intermediate, an output, grad.X,
       next.X), else `y : [...]` then `output y = y` would check nothing */
    if (!is_state_input(I->C, nm)) {
        errat(I, SP_DIAG_LINEAGE, s->targets[0]->loc,
              "'%s' is a value the model computes, not one of its inputs or parameters: a plan "
              "declares the layout of inputs and parameters only (relate a computed value with "
              "'~' on the plan statement that computes it)", nm);
        return SP_ERR_INPUT;
    }
    sp_layout_t L;
    if (!resolve_layout(I, s->layout, &L))
        return SP_ERR_INPUT;
    const sp_tensor_t *mt = &mb->t[0];
    if (!layout_matches_model(I, &L, mt, SP_DIAG_SHAPE, s->layout->loc, nm)) {
        sp_layout_clear(&L);
        return SP_ERR_INPUT;
    }
    pval_t v = distribute(I, &L, mt, nm, s->layout->loc, 1);
    if (v == NULL) {
        sp_layout_clear(&L);
        return SP_ERR_INPUT;
    }
    mark_pending(I, &L);
    if (!bind(I, nm, s->targets[0]->loc, v, -1)) {
        sp_layout_clear(&L);
        return SP_ERR_INPUT;
    }
    char next[520];
    snprintf(next, sizeof next, "next.%s", nm);
    sp_binding_t *b = lookup(I, nm);
    if (b && sp_model_value(I->C, next) != NULL) {
        if (I->nstates == I->astates) {
            I->astates = I->astates ? 2 * I->astates : 16;
            I->states = flint_realloc(I->states, (size_t)I->astates * sizeof *I->states);
        }
        /* the latest declaration of the name, whose chain (prev) reaches the others; a rank
           declared again leaves them */
        int prev = 0;
        for (int k = I->nstates; k > 0 && prev == 0; k--)
            if (!strcmp(I->states[k - 1].name, nm))
                prev = k;
        for (int k = prev; k > 0; k = I->states[k - 1].prev)
            for (int64_t r = 0; r < I->nranks; r++)
                I->states[k - 1].holds[r] &= !I->active[r];
        struct state_in *si = &I->states[I->nstates++];
        si->prev = prev;
        si->name = sp_strdup(nm);
        si->L = L;
        si->read = flint_calloc((size_t)I->nranks, 1);
        si->holds = flint_malloc((size_t)I->nranks);
        memcpy(si->holds, I->active, (size_t)I->nranks);
        si->loc = s->targets[0]->loc;
        b->state = I->nstates;
        return SP_OK;
    }
    sp_layout_clear(&L);
    return SP_OK;
}
/*
 * A collective that splits a dim over its group (`all_to_all`'s split dim, `reduce_scatter`'s
 * dim) found it whole at the reduced sizes (src/mesh.c).  Is it whole at the real ones?  The
 * dim's real extent is its reduced one times its monomial's scale (src/ops_pos.c ext,
 * sp_pos_scale); where that is not whole, or the monomial is not known, the real sizes decide
 * (the split fails there as the real program does).  docs/soundness.md, "Collective splits".
 */
static void split_whole_real(sp_check_t *C, const sp_axes_t *axes, const sp_tensor_t *in,
                             int64_t dim, sp_loc_t loc)
{
    int64_t n = sp_axes_real_count(&C->mesh, axes);
    fmpq_t q;
    fmpq_init(q);
    for (int64_t r = 0; r < C->mesh.nranks && n > 1; r++) {
        const sp_tensor_t *t = &in[r];
        int64_t d = dim < 0 ? dim + t->ndim : dim;
        if (t->ndim < 0 || d < 0 || d >= t->ndim)
            continue;
        int32_t ext = t->pos[d].ext;
        int whole = ext == 1; /* exact: whole at both sizes */
        if (!whole && ext > 1 && sp_pos_scale(C, ext, q)) {
            fmpq_mul_si(q, q, t->shape[d]);
            whole = fmpz_is_one(fmpq_denref(q)) && fmpz_divisible_si(fmpq_numref(q), n);
        }
        if (!whole) {
            sp_note_clamped(C, SP_CLAMP_SUM, loc);
            break;
        }
    }
    fmpq_clear(q);
}


/*
 * Under the mesh cutoff, a gather over a group with a cut axis (all_gather's dim, all_to_all's
 * concat dim) of parts whose extent does not divide by the axis (a replicated [H] gathered into
 * [dp*H]) makes an axis whose positions are the members: a literal position along it tells the
 * members apart (`split(g, H, 0, 2)` is member 2's), which the members tests cannot see (at k =
 * 3 members 0, 1 and 2 are all of them).  Noted; src/check.c then checks the real mesh.  A
 * gather of shards of a dim (H/dp into H) makes positions of that dim, which the dims' rules
 * keep (docs/soundness.md, "Mesh cutoff").
 */
static void members_positions(sp_check_t *C, const sp_axes_t *axes, const sp_tensor_t *in,
                              int64_t dim, sp_loc_t loc)
{
    for (int64_t r = 0; r < C->mesh.nranks && !C->cut_members; r++) {
        const sp_tensor_t *t = &in[r];
        int64_t d = dim < 0 ? dim + t->ndim : dim;
        if (t->ndim < 0 || d < 0 || d >= t->ndim)
            continue;
        int32_t m = sp_pos_per_axes(C, t->pos[d].ext, axes, 1);
        if (m == 0 || m >= SP_POS_FRESH || sp_pos_over_members(C, m)) {
            C->cut_members = 1;
            C->cut_members_loc = loc;
        }
    }
}

/* A shard of in's dim over a cut group has the dim's extent over the group's cut axes (as
   src/plan.c distribute's shards): in's tensors with that extent, sharing their values */
static sp_tensor_t *per_member(sp_check_t *C, const sp_axes_t *axes, const sp_tensor_t *in,
                               int64_t dim)
{
    sp_tensor_t *b = flint_malloc((size_t)C->mesh.nranks * sizeof(sp_tensor_t));
    for (int64_t r = 0; r < C->mesh.nranks; r++) {
        b[r] = in[r];
        int64_t d = dim < 0 ? dim + in[r].ndim : dim;
        if (in[r].ndim >= 0 && d >= 0 && d < in[r].ndim)
            b[r].pos[d].ext = sp_pos_per_axes(C, in[r].pos[d].ext, axes, -1);
    }
    return b;
}

/* A split of in's axis dim over a cut group hands each member its own chunk (of the same
   values, where they are copies: reduce_scatter's max of a replicated tensor): the axis's dim
   is partitioned over each cut axis of the group (src/members.c; helper-70's review) */
static void split_members(sp_check_t *C, const sp_axes_t *axes, const sp_tensor_t *in,
                          int64_t dim)
{
    int64_t r = 0;
    while (r < C->mesh.nranks && in[r].ndim < 0)
        r++;
    if (r == C->mesh.nranks)
        return;
    int64_t n = sp_axes_count(&C->mesh, axes), d = dim < 0 ? dim + in[r].ndim : dim;
    int even = d >= 0 && d < in[r].ndim && n > 0 && in[r].shape[d] % n == 0;
    partition_members(C, axes, &in[r], (int)d, even ? in[r].shape[d] / n : 0);
}

/* ---- collectives and send/recv -------------------------------------------------------------- */

/* collectives: parse arguments, then run across ranks */
sp_status_t call_collective(interp_t *I, const sp_ast_expr_t *e, pval_t *out)
{
    sp_check_t *C = I->C;
    const char *name = e->name;
    if (!I->is_plan) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "collective '%s' in a model (models run on one device)",
              name);
        return SP_ERR_INPUT;
    }
    pval_t x = NULL;
    int xv;
    sp_axes_t axes = {0, {0}};
    int have_axes = 0, have_op = 0;
    sp_red_t op = SP_RED_SUM;
    int64_t ints[4];
    int nints = 0;
    int64_t dim = 0, split = 0, concat = 0, root = 0;
    int have_dim = 0, have_split = 0, have_concat = 0, have_root = 0;
    /* send/recv: keyword axis = coordinate */
    int peer_axis = -1, npeer = 0;
    int peer_axes[SP_MAX_AXES];
    const sp_ast_expr_t *peer_exprs[SP_MAX_AXES];
    const sp_ast_expr_t *peer_expr = NULL;
    sp_status_t st = SP_OK;
    size_t first = 0;
    const sp_binding_t *pend = NULL;
    if (strcmp(name, "recv") != 0) {
        if (e->nargs == 0 || e->args[0].key.str) {
            errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs a tensor as its first argument", name);
            return SP_ERR_INPUT;
        }
        /* a pending max/min may be all-reduced with its own op over (at least) its axes */
        const sp_binding_t *pb = binding_of(I, e->args[0].value);
        if (pb && pb->pend) {
            pend = pb;
            I->pend_ok = !strcmp(name, "all_reduce");
        }
        st = eval(I, e->args[0].value, &x, &xv);
        I->pend_ok = 0;
        if (st != SP_OK)
            return st;
        first = 1;
    }
    for (size_t i = first; i < e->nargs && st == SP_OK; i++) {
        const sp_ast_arg_t *a = &e->args[i];
        const sp_ast_expr_t *v = a->value;
        const char *key = a->key.str;
        if (key && sp_mesh_axis(&C->mesh, key) >= 0 && (!strcmp(name, "send") || !strcmp(name, "recv"))) {
            peer_axis = sp_mesh_axis(&C->mesh, key);
            peer_expr = v;
            if (npeer < SP_MAX_AXES) {
                peer_axes[npeer] = peer_axis;
                peer_exprs[npeer++] = v;
            }
            continue;
        }
        if ((key && (!strcmp(key, "axis") || !strcmp(key, "group") || !strcmp(key, "axes"))) ||
            (!key && v->kind == SP_AST_NAME && sp_mesh_axis(&C->mesh, v->name) >= 0 &&
             !lookup(I, v->name)) ||
            (!key && v->kind == SP_AST_LIST && v->nargs > 0 && v->args[0].value->kind == SP_AST_NAME &&
             sp_mesh_axis(&C->mesh, v->args[0].value->name) >= 0)) {
            if (have_axes) {
                /* one argument names the group: all_reduce(x, sum, dp, tp) is not dp and tp */
                errat(I, SP_DIAG_LAYOUT, v->loc,
                      "%s: the group's axes are one argument; write them as a list, [dp, tp]", name);
                st = SP_ERR_INPUT;
                continue;
            }
            sp_ast_name_t nm[SP_MAX_AXES];
            size_t n = 0;
            if (v->kind == SP_AST_NAME) {
                nm[0].str = v->name;
                nm[0].loc = v->loc;
                n = 1;
            } else if (v->kind == SP_AST_LIST && v->nargs <= SP_MAX_AXES) {
                for (size_t k = 0; k < v->nargs; k++) {
                    if (v->args[k].value->kind != SP_AST_NAME) {
                        errat(I, SP_DIAG_LAYOUT, v->args[k].value->loc, "expected a mesh axis");
                        st = SP_ERR_INPUT;
                        break;
                    }
                    nm[k].str = v->args[k].value->name;
                    nm[k].loc = v->args[k].value->loc;
                }
                n = v->nargs;
            } else {
                errat(I, SP_DIAG_LAYOUT, v->loc, "expected a mesh axis or a list of axes");
                st = SP_ERR_INPUT;
            }
            uint8_t used[SP_MAX_AXES] = {0};
            if (st == SP_OK && !resolve_axes(I, nm, n, &axes, used))
                st = SP_ERR_INPUT;
            have_axes = 1;
            continue;
        }
        if ((key && !strcmp(key, "op")) || (!key && v->kind == SP_AST_NAME && sp_red_parse(v->name, &op))) {
            if (v->kind != SP_AST_NAME || !sp_red_parse(v->name, &op)) {
                errat(I, SP_DIAG_LAYOUT, v->loc, "unknown reduction (sum, avg, max, min)");
                st = SP_ERR_INPUT;
            }
            have_op = 1;
            continue;
        }
        if (!key && v->kind == SP_AST_NAME && !is_int_expr(I, v)) {
            errat(I, SP_DIAG_LAYOUT, v->loc, "'%s' is neither a mesh axis nor a reduction", v->name);
            st = SP_ERR_INPUT;
            continue;
        }
        int64_t val;
        /* a collective's dims and root are the same on every member */
        if (!eval_int(I, v, -1, &val)) {
            st = SP_ERR_INPUT;
            continue;
        }
        if (key) {
            if (!strcmp(key, "dim"))
                dim = val, have_dim = 1;
            else if (!strcmp(key, "split") || !strcmp(key, "split_dim"))
                split = val, have_split = 1;
            else if (!strcmp(key, "concat") || !strcmp(key, "concat_dim"))
                concat = val, have_concat = 1;
            else if (!strcmp(key, "root") || !strcmp(key, "src") || !strcmp(key, "dst"))
                root = val, have_root = 1;
            else {
                errat(I, SP_DIAG_LAYOUT, a->key.loc, "unknown argument '%s' of '%s'", key, name);
                st = SP_ERR_INPUT;
            }
        } else if (nints < 4) {
            ints[nints++] = val;
        }
    }
    if (st == SP_OK && pend && (!have_op || op != pend->pend_op || !have_axes ||
                                !axes_cover(&axes, &pend->pend_axes))) {
        pending_error(I, e->args[0].value->loc, pend, "reduced otherwise here");
        st = SP_ERR_INPUT;
    }
    if (st != SP_OK) {
        pval_free(x, I->nranks);
        return st;
    }
    /* positional integers fill the collective's integer parameters in order */
    int ki = 0;
    if (!strcmp(name, "all_gather") || !strcmp(name, "reduce_scatter")) {
        if (!have_dim && ki < nints)
            dim = ints[ki++], have_dim = 1;
    } else if (!strcmp(name, "all_to_all")) {
        if (!have_split && ki < nints)
            split = ints[ki++], have_split = 1;
        if (!have_concat && ki < nints)
            concat = ints[ki++], have_concat = 1;
    } else if (!strcmp(name, "broadcast") || !strcmp(name, "reduce")) {
        if (!have_root && ki < nints)
            root = ints[ki++], have_root = 1;
    }
    if (ki < nints) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "too many integer arguments for '%s'", name);
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    if (strcmp(name, "send") && strcmp(name, "recv") && !have_axes) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs the mesh axis (or axes) of its group", name);
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    if ((!strcmp(name, "all_gather") || !strcmp(name, "reduce_scatter")) && !have_dim) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs dim=", name);
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    if (!strcmp(name, "all_to_all") && !(have_split && have_concat)) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "'all_to_all' needs split= and concat=");
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    (void)have_op;
    sp_op_err_t err;
    err.msg[0] = 0;
    err.div_size = err.div_by = 0; /* set only by a split that is not whole (src/mesh.c) */
    err.div_min = 1;
    err.clamped = SP_CLAMP_NONE;    /* set by members of unequal extents (src/mesh.c) */
    pval_t res = pval_new(I->nranks);
    int ok = 1;
    pval_t in = x;
    if (in) {
        /* inactive ranks do not participate */
        for (int64_t r = 0; r < I->nranks; r++)
            if (!I->active[r] && in[r].ndim >= 0) {
                sp_tensor_clear(&in[r]);
                in[r].ndim = -1;
            }
    }
    /* under the mesh cutoff: a split over a cut group has the extent over it */
    int cut = in && sp_axes_cut(&C->mesh, &axes);
    sp_tensor_t *inb = NULL;
    if (cut && (!strcmp(name, "reduce_scatter") || !strcmp(name, "all_to_all"))) {
        int64_t sd = !strcmp(name, "all_to_all") ? split : dim;
        inb = per_member(C, &axes, in, sd);
        split_members(C, &axes, in, sd);
    }
    if (cut && (!strcmp(name, "all_gather") || !strcmp(name, "all_to_all")))
        members_positions(C, &axes, in, !strcmp(name, "all_to_all") ? concat : dim, e->loc);
    if (!strcmp(name, "all_reduce"))
        ok = sp_coll_all_reduce(C->E, &C->mesh, &axes, op, in, res, &err);
    else if (!strcmp(name, "all_gather"))
        ok = sp_coll_all_gather(C->E, &C->mesh, &axes, (int)dim, in, res, &err);
    else if (!strcmp(name, "reduce_scatter"))
        ok = sp_coll_reduce_scatter(C->E, &C->mesh, &axes, (int)dim, op, inb ? inb : in, res, &err);
    else if (!strcmp(name, "all_to_all"))
        ok = sp_coll_all_to_all(C->E, &C->mesh, &axes, (int)split, (int)concat, inb ? inb : in,
                                res, &err);
    else if (!strcmp(name, "broadcast"))
        ok = sp_coll_broadcast(C->E, &C->mesh, &axes, root, in, res, &err);
    else if (!strcmp(name, "reduce"))
        ok = sp_coll_reduce(C->E, &C->mesh, &axes, op, root, in, res, &err);
    else if (!strcmp(name, "send") || !strcmp(name, "recv")) {
        if (peer_axis < 0) {
            errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs the peer as AXIS = COORDINATE", name);
            pval_free(x, I->nranks);
            pval_free(res, I->nranks);
            return SP_ERR_INPUT;
        }
        for (int64_t r = 0; r < I->nranks && ok; r++) {
            if (!I->active[r])
                continue;
            int64_t peer = r;
            for (int q = 0; q < npeer; q++) {
                int64_t c;
                peer_axis = peer_axes[q];
                peer_expr = peer_exprs[q];
                if (!eval_int(I, peer_expr, r, &c)) {
                    pval_free(x, I->nranks);
                    pval_free(res, I->nranks);
                    return SP_ERR_INPUT;
                }
                if (c < 0 || c >= C->mesh.size[peer_axis]) {
                    char rs[128];
                    sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
                    errat(I, SP_DIAG_LAYOUT, peer_expr->loc,
                          "peer %s = %lld is outside the mesh (on rank %s)", C->mesh.name[peer_axis],
                          (long long)c, rs);
                    pval_free(x, I->nranks);
                    pval_free(res, I->nranks);
                    return SP_ERR_INPUT;
                }
                peer = sp_mesh_with_coord(&C->mesh, peer, peer_axis, c);
            }
            if (!strcmp(name, "send")) {
                if (I->nmsgs == I->amsgs) {
                    I->amsgs = I->amsgs ? 2 * I->amsgs : 16;
                    I->msgs = flint_realloc(I->msgs, (size_t)I->amsgs * sizeof(*I->msgs));
                }
                struct msg *m = &I->msgs[I->nmsgs++];
                m->src = r;
                m->dst = peer;
                m->used = 0;
                m->loc = e->loc;
                sp_tensor_init(&m->t);
                sp_tensor_copy(&m->t, &x[r]);
            } else {
                int found = 0;
                for (int k = 0; k < I->nmsgs && !found; k++) {
                    struct msg *m = &I->msgs[k];
                    if (!m->used && m->src == peer && m->dst == r) {
                        m->used = 1;
                        /* src/reduce_sums.c may have read this recv's extents as those of
                           its target's other definitions: they must be the received ones */
                        if (!sp_reduce_recv_holds(C, e->loc, &m->t))
                            sp_note_clamped(C, SP_CLAMP_SUM, e->loc);
                        res[r] = m->t;
                        sp_tensor_init(&m->t);
                        found = 1;
                    }
                }
                if (!found) {
                    char rs[128], ps[128];
                    sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
                    sp_mesh_rank_str(&C->mesh, peer, ps, sizeof ps);
                    errat(I, SP_DIAG_LAYOUT, e->loc,
                          "recv on rank %s from rank %s has no matching send before it in plan order (a deadlock)", rs, ps);
                    pval_free(x, I->nranks);
                    pval_free(res, I->nranks);
                    return SP_ERR_INPUT;
                }
            }
        }
    }
    if (ok && in && (!strcmp(name, "all_to_all") || !strcmp(name, "reduce_scatter")))
        split_whole_real(C, &axes, in, !strcmp(name, "all_to_all") ? split : dim, e->loc);
    flint_free(inb);
    pval_free(x, I->nranks);
    sp_note_clamped(C, err.clamped, e->loc);
    for (int64_t r = 0; ok && r < I->nranks; r++)
        if (I->active[r])
            sp_pos_note(C, &res[r], e->loc);
    if (!ok) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "%s", err.msg);
        sp_note_divisible(I->C, &err); /* src/check.c may grow the sizes and run again */
        pval_free(res, I->nranks);
        return SP_ERR_INPUT;
    }
    *out = res;
    return SP_OK;
}

/* ---- the checks that close a plan ----------------------------------------------------------- */

/*
 * Coverage of an output: every element of the model tensor is held by some rank that declares
 * the output, and a pending reduction has every member of its group (a group that misses a
 * rank would compare a partial sum).  Ranks that do not declare it are not compared: an
 * element no declaring rank holds would pass unseen.  The ranks may declare the output in
 * several statements (`on dp = 0 { output y = ... }` and `on dp = 1 { ... }`): the elements are
 * those of all of them together; a pending group lies within one statement's stage.
 */
static sp_status_t check_groups_declared(sp_check_t *C, const sp_stage_t *s)
{
    const sp_layout_t *L = &s->layout;
    for (int64_t r = 0; r < s->nranks; r++) {
        if (s->plan[r].ndim < 0)
            continue;
        for (int k = 0; k < L->npartial; k++) {
            int64_t n = sp_axes_count(&C->mesh, &L->paxes[k]);
            for (int64_t j = 0; j < n; j++) {
                int64_t q = sp_axes_member(&C->mesh, &L->paxes[k], r, j);
                if (s->plan[q].ndim < 0) {
                    char a[128], b[128];
                    sp_mesh_rank_str(&C->mesh, r, a, sizeof a);
                    sp_mesh_rank_str(&C->mesh, q, b, sizeof b);
                    sp_diags_error(C->d, SP_DIAG_LINEAGE, s->plan_loc,
                                   "output '%s' has a pending %s over a group of rank %s, but rank "
                                   "%s of that group does not declare it",
                                   s->model_name, sp_red_name(L->pop[k]), a, b);
                    return SP_ERR_INPUT;
                }
            }
        }
    }
    return SP_OK;
}

/* Mark the elements of the model tensor that the declaring ranks of s hold. */
static void mark_held(sp_check_t *C, const sp_stage_t *s, uint8_t *held)
{
    const sp_layout_t *L = &s->layout;
    for (int64_t r = 0; r < s->nranks; r++) {
        if (s->plan[r].ndim < 0)
            continue;
        int64_t lo[SP_MAX_DIMS], hi[SP_MAX_DIMS], idx[SP_MAX_DIMS];
        int empty = 0;
        for (int d = 0; d < L->ndim; d++) {
            sp_layout_range(&C->mesh, L, d, r, &lo[d], &hi[d]);
            idx[d] = lo[d];
            empty |= lo[d] >= hi[d];
        }
        while (!empty) {
            int64_t f = 0;
            for (int d = 0; d < L->ndim; d++)
                f = f * L->size[d] + idx[d];
            held[f] = 1;
            int d = L->ndim - 1;
            while (d >= 0 && ++idx[d] == hi[d]) {
                idx[d] = lo[d];
                d--;
            }
            if (d < 0)
                break;
        }
    }
}

/* Do two output stages declare the same model tensor (of the same shape)? */
static int same_output(const sp_stage_t *a, const sp_stage_t *b)
{
    if (b->kind != SP_STAGE_OUTPUT || strcmp(a->model_name, b->model_name) ||
        a->layout.ndim != b->layout.ndim)
        return 0;
    for (int d = 0; d < a->layout.ndim; d++)
        if (a->layout.size[d] != b->layout.size[d])
            return 0;
    return 1;
}

/* The coverage of the output of stage i, with every later stage of the same model tensor;
   an earlier one has checked them all. */
static sp_status_t check_coverage(sp_check_t *C, int i)
{
    const sp_stage_t *s = &C->stages[i];
    for (int j = 0; j < i; j++)
        if (same_output(&C->stages[j], s))
            return SP_OK;
    const sp_layout_t *L = &s->layout;
    int64_t numel = 1;
    for (int d = 0; d < L->ndim; d++)
        numel *= L->size[d];
    sp_status_t st = SP_OK;
    for (int j = i; j < C->nstages && st == SP_OK; j++)
        if (j == i || same_output(s, &C->stages[j]))
            st = check_groups_declared(C, &C->stages[j]);
    if (st != SP_OK || numel == 0)
        return st;
    uint8_t *held = flint_calloc((size_t)numel, 1);
    for (int j = i; j < C->nstages; j++)
        if (j == i || same_output(s, &C->stages[j]))
            mark_held(C, &C->stages[j], held);
    for (int64_t f = 0; f < numel && st == SP_OK; f++)
        if (!held[f]) {
            char es[256];
            size_t k = 0;
            int64_t rest = f, ix[SP_MAX_DIMS];
            for (int d = L->ndim - 1; d >= 0; d--) {
                ix[d] = rest % L->size[d];
                rest /= L->size[d];
            }
            for (int d = 0; d < L->ndim && k < sizeof es; d++)
                k += (size_t)snprintf(es + k, sizeof es - k, "%s%lld", d ? ", " : "", (long long)ix[d]);
            sp_diags_error(C->d, SP_DIAG_LINEAGE, s->plan_loc,
                           "output '%s': element [%s] is held by no rank that declares the output "
                           "(declare it on every rank that holds a part of it)",
                           s->model_name, es);
            st = SP_ERR_INPUT;
        }
    flint_free(held);
    return st;
}

/* Does the box held on rank r under layout A lie inside the one held under B? */
/* Does rank r hold no element under A (an empty range in some dim)? */
static int box_empty(const sp_mesh_t *m, const sp_layout_t *A, int64_t r)
{
    for (int d = 0; d < A->ndim; d++) {
        int64_t lo, hi;
        sp_layout_range(m, A, d, r, &lo, &hi);
        if (lo >= hi)
            return 1;
    }
    return 0;
}

static int box_inside(const sp_mesh_t *m, const sp_layout_t *A, const sp_layout_t *B, int64_t r)
{
    if (box_empty(m, A, r))
        return 1; /* holds nothing (an empty range in any dim, not only the first) */
    if (A->ndim != B->ndim)
        return 0;
    for (int d = 0; d < A->ndim; d++) {
        int64_t alo, ahi, blo, bhi;
        sp_layout_range(m, A, d, r, &alo, &ahi);
        sp_layout_range(m, B, d, r, &blo, &bhi);
        if (alo < blo || ahi > bhi)
            return 0;
    }
    return 1;
}

/* Do A and B have the same pending reductions (op and axes, in the same order)? */
static int same_pending(const sp_layout_t *A, const sp_layout_t *B)
{
    if (A->npartial != B->npartial)
        return 0;
    for (int k = 0; k < A->npartial; k++) {
        if (A->pop[k] != B->pop[k] || A->paxes[k].n != B->paxes[k].n)
            return 0;
        for (int j = 0; j < A->paxes[k].n; j++)
            if (A->paxes[k].axis[j] != B->paxes[k].axis[j])
                return 0;
    }
    return 1;
}

/*
 * Every replica of a state is updated: a rank that reads a model input or parameter X whose
 * model has an update next.X (a trained parameter, an optimizer state) holds a copy of X, so it
 * must declare next.X for the elements it holds (or the plan omits next.X).  A replica that only
 * some ranks update is stale on the others from the next step on, and nothing would compare it:
 * `on dp = 0 { output next.w = ... }` with w read on every dp rank.  A rank that never reads X
 * (a pipeline stage and another stage's layers) holds no replica that matters.
 */
static sp_status_t check_replicas_updated(sp_check_t *C, const interp_t *I)
{
    for (int i = 0; i < I->nstates; i++) {
        const struct state_in *si = &I->states[i];
        char next[520];
        snprintf(next, sizeof next, "next.%s", si->name);
        int omitted = 0;
        for (int k = 0; k < C->nomitted && !omitted; k++)
            omitted = !strcmp(C->omitted[k], next);
        if (omitted)
            continue;
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!si->read[r] || box_empty(&C->mesh, &si->L, r))
                continue; /* never read there, or nothing held */
            int ok = 0, declared = 0, kind = 0;
            for (int k = 0; k < C->nstages && !ok; k++) {
                const sp_stage_t *s = &C->stages[k];
                if (s->kind != SP_STAGE_OUTPUT || strcmp(s->model_name, next) != 0 ||
                    s->plan[r].ndim < 0)
                    continue;
                declared = 1;
                /* the rank's next copy is what it declares: the same kind of value as the copy
                   it holds (the whole value where it holds the value, a part with the same
                   pending reductions where it holds a part), on a box containing the held one */
                int same = same_pending(&si->L, &s->layout);
                kind |= same;
                ok = same && box_inside(&C->mesh, &si->L, &s->layout, r);
            }
            if (ok)
                continue;
            char a[128];
            sp_mesh_rank_str(&C->mesh, r, a, sizeof a);
            if (declared && !kind) {
                char hl[256];
                sp_layout_str(C, &si->L, hl, sizeof hl);
                sp_diags_error(C->d, SP_DIAG_LINEAGE, si->loc,
                               "rank %s holds '%s' as %s but its output '%s' has other pending "
                               "reductions: its next copy would be another kind of value (a "
                               "part for a whole copy, or the other way; declare '%s' with the "
                               "held layout's pending reductions, or 'omit %s')",
                               a, si->name, hl, next, next, next);
                return SP_ERR_INPUT;
            }
            sp_diags_error(C->d, SP_DIAG_LINEAGE, si->loc,
                           declared ? "rank %s reads '%s' but its output '%s' leaves part of that "
                                      "rank's copy out: those elements would keep the old value "
                                      "(declare '%s' on the elements each rank holds, or 'omit %s')"
                                    : "rank %s reads '%s' but does not declare '%s': its copy would "
                                      "keep the old value (declare '%s' on every rank that holds "
                                      "it, or 'omit %s')",
                           a, si->name, next, next, next);
            return SP_ERR_INPUT;
        }
    }
    return SP_OK;
}

/*
 * Every output of the model is checked by some output of the plan, or named by `omit`: the
 * model's `output` list and, when it trains, every parameter's gradient and update and the
 * optimizer's next state.  A plan that never mentions a gradient would otherwise pass with
 * that gradient unchecked.
 */
static sp_status_t check_outputs_declared(sp_check_t *C)
{
    /* a name left unchecked by `omit` and checked by an output: the report would say both */
    for (int k = 0; k < C->nomitted; k++)
        for (int i = 0; i < C->nstages; i++)
            if (C->stages[i].kind == SP_STAGE_OUTPUT &&
                !strcmp(C->stages[i].model_name, C->omitted[k])) {
                sp_diags_error(C->d, SP_DIAG_LINEAGE, C->stages[i].plan_loc,
                               "'%s' is output here and named in 'omit': a plan either checks "
                               "a model output or leaves it out",
                               C->omitted[k]);
                return SP_ERR_INPUT;
            }
    const char **miss = NULL;
    int nmiss = 0;
    for (int i = 0; i < C->nmvals; i++) {
        const char *n = C->mvals[i].name;
        int required = 0;
        for (int k = 0; k < C->noutputs && !required; k++)
            required = !strcmp(C->outputs[k], n);
        required |= !strncmp(n, "next.", 5) ||
                    (!strncmp(n, "grad.", 5) && sp_model_declares(C, n + 5, 1));
        if (!required)
            continue;
        int done = 0;
        for (int k = 0; k < C->nstages && !done; k++)
            done = C->stages[k].kind == SP_STAGE_OUTPUT && !strcmp(C->stages[k].model_name, n);
        for (int k = 0; k < C->nomitted && !done; k++)
            done = !strcmp(C->omitted[k], n);
        if (done)
            continue;
        for (int k = 0; k < nmiss && !done; k++)
            done = !strcmp(miss[k], n);
        if (done)
            continue;
        miss = flint_realloc(miss, (size_t)(nmiss + 1) * sizeof(char *));
        miss[nmiss++] = n;
    }
    if (nmiss == 0)
        return SP_OK;
    char list[1024];
    size_t k = 0;
    for (int i = 0; i < nmiss && i < 8 && k < sizeof list; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", miss[i]);
    if (nmiss > 8 && k < sizeof list)
        snprintf(list + k, sizeof list - k, " and %d more", nmiss - 8);
    sp_diags_error(C->d, SP_DIAG_LINEAGE, C->plan->name.loc,
                   "plan '%s' checks no output for %s of the model: output %s, or name %s in "
                   "'omit ...' to leave %s unchecked",
                   C->plan->name.str, list, nmiss > 1 ? "them" : "it",
                   nmiss > 1 ? "them" : "it", nmiss > 1 ? "them" : "it");
    flint_free(miss);
    return SP_ERR_INPUT;
}

/* ---- entry point ---------------------------------------------------------------------------- */

sp_status_t sp_exec_plan(sp_check_t *C)
{
    interp_t I;
    memset(&I, 0, sizeof I);
    I.C = C;
    I.is_plan = 1;
    sp_status_t st = plan_mesh(C, &I);
    if (st != SP_OK) {
        interp_clear(&I);
        return st;
    }
    const sp_ast_block_t *body = &C->plan->body;
    for (size_t i = 1; i < body->n && st == SP_OK; i++)
        st = exec_stmt(&I, body->stmts[i]);
    for (int k = 0; k < I.nmsgs && st == SP_OK; k++) {
        if (I.msgs[k].used)
            continue;
        char a[128], b[128];
        sp_mesh_rank_str(&C->mesh, I.msgs[k].src, a, sizeof a);
        sp_mesh_rank_str(&C->mesh, I.msgs[k].dst, b, sizeof b);
        sp_diags_error(C->d, SP_DIAG_LAYOUT, I.msgs[k].loc,
                       "send from rank %s to rank %s is never received", a, b);
        st = SP_ERR_INPUT;
    }
    if (st == SP_OK && I.outputs_seen == 0) {
        sp_diags_error(C->d, SP_DIAG_LINEAGE, C->plan->loc,
                       "plan '%s' declares no output: nothing would be proven", C->plan->name.str);
        st = SP_ERR_INPUT;
    }
    for (int i = 0; i < C->nstages && st == SP_OK && !C->collect_only; i++)
        if (C->stages[i].kind == SP_STAGE_OUTPUT)
            st = check_coverage(C, i);
    if (st == SP_OK && !C->collect_only)
        st = check_outputs_declared(C);
    if (st == SP_OK && !C->collect_only)
        st = check_replicas_updated(C, &I);
    interp_clear(&I);
    return st;
}
