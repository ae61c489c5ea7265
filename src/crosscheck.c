/* crosscheck.c: the checker's verdict against the reference executor (src/ref/). */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "../include/shardproof.h"
#include "check.h"
#include "ref/ref.h"

/*
 * Two uses of the independent reference executor (docs/reference-executor.md), after the proof:
 *
 * - EQUIVALENT is re-checked at the real sizes when they are small enough for it (a tensor of at
 *   most XREF_MAX_ELEMENTS elements, at most XREF_MAX_RANKS ranks): a certified difference there
 *   is an internal error (exit 4) that prints both values, since one of the two interpreters is
 *   wrong.
 * - NOT EQUIVALENT needs an end-to-end witness: inputs under which an output of the plan differs
 *   from the model's.  A failing output stage whose counterexample names inputs only is one (at
 *   the checked sizes).  Otherwise (a cut stage, or fresh symbols of a cut in the counterexample)
 *   the reference executor runs the plan at the real sizes, or at the checked reduced sizes when
 *   the real ones are too large, on XREF_SEEDS seeds; a difference is the witness, and without
 *   one the verdict is UNKNOWN: the stage difference holds for values of a cut the plan may
 *   never produce (a wrong lineage annotation, or a counterexample outside the reachable set).
 *
 * The reference runs are deterministic (seeded), so reports stay byte-identical.
 */

#define XREF_MAX_ELEMENTS 65536
#define XREF_MAX_RANKS 256
#define XREF_MAX_MEM_MB 1024
#define XREF_SEEDS 3
#define XREF_SECOND_MAX_WORK 200000 /* the second run's bound (second_run()) */
#define XREF_MIN_RUNS 16 /* reference runs spent on minimizing a witness (a count: determinism) */

/* A dim's size in a run: 0 the real one, 1 the checked one, 2 the second run's (xref_sizes()
   in src/reduce.c) */
static int64_t run_size(const sp_dimdef_t *D, int sizes)
{
    return sizes == 0 ? D->real : sizes == 2 && D->xref > 0 ? D->xref : D->red;
}

/* The counterexample names no cut symbol (`y@3`, a cut's part `y.part0@4`); parts of a partial
   input (`x.part0#4`) are inputs of the plan, but not of `shardproof run --inputs`. */
static int cex_no_cut(const sp_stage_t *s)
{
    return s->cex != NULL && strchr(s->cex, '@') == NULL;
}

/* ... and names inputs of the model (and of the reference executor) only. */
static int cex_inputs_only(const sp_stage_t *s)
{
    return cex_no_cut(s) && strchr(s->cex, '#') == NULL;
}

static const sp_stage_t *first_failed(const sp_check_t *C)
{
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].status == SP_STAGE_FAILED)
            return &C->stages[i];
    return NULL;
}

/* A failed stage whose values count elements at the checked sizes (sp_stage_t.counts): its
   difference may be the count's (`sum(expand(s, [K]))` is 5 s at K = 5 for a model's 25 s), so
   no difference at the checked sizes is a witness of the plan at its real sizes; the real
   sizes decide (helper-59's review, 2026-12-06) */
static int failed_counts(const sp_check_t *C)
{
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].status == SP_STAGE_FAILED && C->stages[i].counts)
            return 1;
    return 0;
}

static sp_status_t ref_at_inputs(sp_check_t *C, int reduced, uint64_t seed,
                                 const sp_ref_inputs_struct *given, sp_ref_result_t *res)
{
    return sp_xref_run(C, reduced, seed, given, 0, res);
}

static sp_status_t ref_at(sp_check_t *C, int reduced, uint64_t seed, sp_ref_result_t *res)
{
    return ref_at_inputs(C, reduced, seed, NULL, res);
}

/* Does a run at these sizes take sizes used as values at their real sizes, as the checker's
   program does (the checked sizes where one differs; docs/soundness.md, "Sizes as values")? */
static int real_values_run(const sp_check_t *C, int reduced)
{
    return reduced == 1 && C->value_real[0] != '\0' && !C->xref_plain;
}

sp_status_t sp_xref_run(sp_check_t *C, int reduced, uint64_t seed,
                        const sp_ref_inputs_struct *given, int observe, sp_ref_result_t *res)
{
    sp_ref_opts_t o;
    sp_ref_opts_default(&o);
    o.plan = C->plan->name.str;
    o.seed = seed;
    o.max_elements = XREF_MAX_ELEMENTS;
    o.max_ranks = XREF_MAX_RANKS;
    o.max_mem_mb = XREF_MAX_MEM_MB;
    sp_ref_dim_t *dims = flint_calloc((size_t)(C->ndims ? C->ndims : 1), sizeof(sp_ref_dim_t));
    size_t nd = 0;
    for (int i = 0; i < C->ndims && reduced; i++)
        if (!C->dims[i].derived)
            dims[nd++] = (sp_ref_dim_t){C->dims[i].name, run_size(&C->dims[i], reduced)};
    o.dims = dims;
    o.ndims = nd;
    sp_ref_dim_t cut[SP_MAX_AXES];
    for (int i = 0; i < C->ncutoff && reduced; i++)
        cut[i] = (sp_ref_dim_t){C->cutoff[i].name, C->cutoff[i].red};
    o.mesh = cut;
    o.nmesh = reduced ? (size_t)C->ncutoff : 0;
    o.inputs = given;
    o.observe = observe;
    o.real_values = !observe && real_values_run(C, reduced);
    if (observe) /* approximate values are all lineage proposals need, but balls widen with
                    depth and an undecided comparison taints what follows: 256 bits, no
                    escalation (128 lost the backward of a 32-layer plan) */
        o.max_prec = o.prec;
    sp_diags_t d;
    sp_diags_init(d);
    sp_status_t st = sp_ref_run(C->ast, &o, res, d);
    if (st == SP_OK && res->verdict == SP_REF_ERROR && res->limit == NULL &&
        sp_diags_error_count(d) > 0) {
        /* keep the first message: the report says why the reference run could not happen */
        char *h = sp_diags_format_head(d, 0);
        if (h) {
            res->limit = strdup(h);
            free(h);
        }
    }
    sp_diags_clear(d);
    flint_free(dims);
    return st;
}

/* "B=2 H=3" (the sizes a run used) into b */
static void sizes_str(const sp_check_t *C, int reduced, sp_sbuf_t *b)
{
    for (int i = 0; i < C->ndims; i++)
        if (!C->dims[i].derived)
            sp_sbuf_printf(b, "%s%s=%lld", i ? " " : "", C->dims[i].name,
                           (long long)run_size(&C->dims[i], reduced));
    for (int i = 0; i < C->ncutoff && reduced; i++)
        sp_sbuf_printf(b, " %s=%lld", C->cutoff[i].name, (long long)C->cutoff[i].red);
}

/*
 * Minimize a witness: zero input values in halving chunks (ddmin's complement step) and keep a
 * zeroing whenever the outputs still differ, within XREF_MIN_RUNS reference runs.  keep[i] = 1
 * for the values the difference needs.  Returns the number kept.
 */
static size_t minimize(sp_check_t *C, int reduced, const sp_ref_result_t *r, uint8_t *keep)
{
    size_t n = r->inputs->n, runs = 0;
    for (size_t i = 0; i < n; i++)
        keep[i] = !fmpq_is_zero(&r->inputs->val[i]);
    fmpq_t zero;
    fmpq_init(zero);
    for (size_t chunk = n / 2 ? n / 2 : 1; runs < XREF_MIN_RUNS; chunk = chunk / 2 ? chunk / 2 : 1) {
        for (size_t lo = 0; lo < n && runs < XREF_MIN_RUNS; lo += chunk) {
            size_t hi = lo + chunk < n ? lo + chunk : n, live = 0;
            for (size_t i = lo; i < hi; i++)
                live += keep[i];
            if (live == 0)
                continue;
            sp_ref_inputs_t in;
            sp_ref_inputs_init(in);
            for (size_t i = 0; i < n; i++)
                sp_ref_inputs_add(in, r->inputs->name[i], r->inputs->index[i],
                                  keep[i] && (i < lo || i >= hi) ? &r->inputs->val[i] : zero);
            sp_ref_result_t t;
            sp_ref_result_init(&t);
            runs++;
            if (ref_at_inputs(C, reduced, r->seed, in, &t) == SP_OK && t.verdict == SP_REF_DIFFER)
                for (size_t i = lo; i < hi; i++)
                    keep[i] = 0;
            sp_ref_result_clear(&t);
            sp_ref_inputs_clear(in);
        }
        if (chunk == 1)
            break;
    }
    fmpq_clear(zero);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += keep[i];
    return k;
}

static void witness_str(sp_check_t *C, const sp_ref_result_t *r, int reduced, sp_sbuf_t *b)
{
    static const char *const kinds[] = {"the values differ",
                                        "the plan is undefined where the model is defined",
                                        "no rank holds this element", "two ranks differ"};
    int realv = real_values_run(C, reduced);
    sp_sbuf_printf(b, "%s (reference executor, %s sizes",
                   reduced == 2 ? "difference" : "end-to-end witness",
                   reduced == 2 ? "other admissible" : reduced ? "the checked" : "the real");
    if (reduced) {
        sp_sbuf_puts(b, " ");
        sizes_str(C, reduced, b);
    }
    if (realv)
        sp_sbuf_puts(b, " with sizes used as values at the real sizes");
    sp_sbuf_printf(b, ", seed %llu): output '%s'", (unsigned long long)r->seed,
                   r->output ? r->output : "?");
    if (r->rank >= 0)
        sp_sbuf_printf(b, " on rank %s, element %s", r->coords ? r->coords : "?",
                       r->global_index ? r->global_index : "?");
    sp_sbuf_printf(b, ": %s, plan = %s, model = %s\n", kinds[r->kind],
                   r->plan_value ? r->plan_value : "?", r->model_value ? r->model_value : "?");
    size_t n = r->inputs->n;
    if (n > 0) {
        uint8_t *keep = flint_calloc(n, 1);
        size_t k = minimize(C, reduced, r, keep), shown = 0;
        sp_sbuf_printf(b, "minimized: the outputs still differ with %zu of the %zu input values "
                          "nonzero (the others 0)%s",
                       k, n, k ? ": " : "");
        for (size_t i = 0; i < n && shown < 8; i++)
            if (keep[i]) {
                sp_sbuf_printf(b, "%s%s[%lld] = ", shown++ ? ", " : "", r->inputs->name[i],
                               (long long)r->inputs->index[i]);
                sp_sbuf_put_fmpq(b, &r->inputs->val[i]);
            }
        if (k > shown)
            sp_sbuf_printf(b, " and %zu more", k - shown);
        sp_sbuf_puts(b, "\n");
        flint_free(keep);
    }
    sp_sbuf_printf(b, "the inputs: shardproof run %s --plan %s --seed %llu", C->path,
                   C->plan->name.str, (unsigned long long)r->seed);
    if (reduced) {
        sp_sbuf_puts(b, " --dims ");
        for (int i = 0, k = 0; i < C->ndims; i++)
            if (!C->dims[i].derived)
                sp_sbuf_printf(b, "%s%s=%lld", k++ ? "," : "", C->dims[i].name,
                               (long long)run_size(&C->dims[i], reduced));
    }
    if (realv)
        sp_sbuf_puts(b, " --real-values");
    sp_sbuf_puts(b, " --print-inputs\n");
}

/* A difference found at the checked sizes that is no witness, so the real sizes are checked
   (C->resize = 1, C->resize_why; src/check.c run_exact), with the reason into b:
   SP_NOWIT_REAL_AGREE, the reference executor finds the outputs equal at the real sizes on n
   seeds; SP_NOWIT_CHECKED_AGREE, unable to run the real sizes, it finds them equal at the
   checked ones on n seeds (the checked program takes sizes used as values at their real
   sizes, it at the checked ones); SP_NOWIT_LITERAL, the program writes a literal that is a
   product of sizes at the real sizes only (src/reduce.c lit_relations: `/ 131072` for B*S),
   which the reduction took apart; SP_NOWIT_VALUE, the checked program's own counterexample
   where it took a size used as a value at its real size (C->value_real; docs/soundness.md
   "Sizes as values"): no input of the plan at any sizes (`shardproof run --dims` takes sizes
   at the sizes it is given); SP_NOWIT_COUNTS, a failed stage's values count elements at the
   checked sizes (failed_counts); SP_NOWIT_CUTOFF_VALUE, under the mesh cutoff, the checked
   program took a size used as a value at its real size (a cut axis's too, since 2026-12-07)
   where the reference executor, running the checked mesh, takes the checked ones: a dim equal
   to a mesh size at the real sizes (`x * K` against `x * dp`, K = dp = 8) is apart from it at
   the checked ones (helper-60's review, 2026-12-06); the real mesh is checked first. */
static shardproof_verdict_t no_witness(sp_check_t *C, sp_nowit_t why, int n, sp_sbuf_t *b)
{
    switch (why) {
    case SP_NOWIT_REAL_AGREE:
    case SP_NOWIT_CHECKED_AGREE:
        sp_sbuf_printf(b, "not lifted: the reference executor %sfinds the outputs equal at the "
                          "%s sizes on %d seeds: the real sizes are checked\n",
                       why == SP_NOWIT_CHECKED_AGREE ? "cannot run the real sizes and " : "",
                       why == SP_NOWIT_CHECKED_AGREE ? "checked" : "real", n);
        break;
    case SP_NOWIT_LITERAL:
        sp_sbuf_printf(b, "not lifted: the program's literal %s at the real sizes, which the "
                          "checked sizes do not keep (a size expression follows them): the real "
                          "sizes are checked\n",
                       C->lit_real);
        break;
    case SP_NOWIT_VALUE:
        sp_sbuf_printf(b, "not lifted: the program uses %s as a value, which the checked "
                          "program takes at its real size (the reference executor did not run "
                          "the checked sizes): the real sizes are checked\n",
                       C->value_real);
        break;
    case SP_NOWIT_COUNTS:
        sp_sbuf_puts(b, "not lifted: the failing stage's values count elements at the checked "
                        "sizes (docs/soundness.md, \"Counts\"), so a difference there is no "
                        "witness: the real sizes are checked\n");
        break;
    case SP_NOWIT_CUTOFF_VALUE:
        sp_sbuf_printf(b, "not lifted: the program uses %s as a value, which the checked "
                          "program takes at its real size and the reference executor, on the "
                          "cut mesh, at its checked one: the real mesh is checked\n",
                       C->value_real);
        break;
    }
    C->unlifted = 1;
    C->resize = 1;
    C->resize_why = why;
    return SHARDPROOF_UNKNOWN;
}

/* The failing output stage's counterexample names inputs only, at the real sizes on the real
   mesh: it is an end-to-end witness as it stands. */
static int direct_witness(const sp_check_t *C)
{
    const sp_stage_t *s = first_failed(C);
    return s && s->kind == SP_STAGE_OUTPUT && cex_inputs_only(s) && C->ncutoff == 0 &&
           !sp_check_reduced(C);
}

/* The reference executor at the real (reduced 0) or checked (1) sizes on up to XREF_SEEDS
   seeds, up to the first run that differs or cannot be made: SP_REF_DIFFER with that run in
   *diff (the caller's to clear), SP_REF_TOO_LARGE or SP_REF_ERROR with its message in limit
   ("" when none; *count_unknown set when it is an operator's count not known at the file's
   sizes), else SP_REF_AGREE; *agreed the runs before that showed no difference (overlapping
   balls included). */
static sp_ref_verdict_t ref_seeds1(sp_check_t *C, int reduced, sp_ref_result_t *diff,
                                   int *agreed, char *limit, size_t nlimit, int *count_unknown);

/* ... at the checked sizes with sizes used as values at their real sizes (sp_xref_run); under
   --fast-shapes, whose sizes need not keep the relations that make a count known there (two
   extents equal at the checked sizes only), a run refused for a count is made with the checked
   sizes' own values (C->xref_plain until the lifting ends): the plan at those sizes, as the
   report's sizes say, which --fast-shapes never claimed to be a proof of */
static sp_ref_verdict_t ref_seeds(sp_check_t *C, int reduced, sp_ref_result_t *diff, int *agreed,
                                  char *limit, size_t nlimit)
{
    int count_unknown = 0;
    sp_ref_verdict_t v = ref_seeds1(C, reduced, diff, agreed, limit, nlimit, &count_unknown);
    if (v == SP_REF_ERROR && real_values_run(C, reduced) && !C->opt.strict_shapes &&
        count_unknown) {
        C->xref_plain = 1;
        v = ref_seeds1(C, reduced, diff, agreed, limit, nlimit, &count_unknown);
    }
    return v;
}

static sp_ref_verdict_t ref_seeds1(sp_check_t *C, int reduced, sp_ref_result_t *diff,
                                   int *agreed, char *limit, size_t nlimit, int *count_unknown)
{
    *agreed = 0;
    *count_unknown = 0;
    limit[0] = '\0';
    for (int k = 0; k < XREF_SEEDS; k++) {
        sp_ref_result_init(diff);
        sp_status_t st = ref_at(C, reduced, C->opt.seed + (uint64_t)k, diff);
        sp_ref_verdict_t v = st == SP_OK ? diff->verdict : SP_REF_ERROR;
        if (v == SP_REF_DIFFER)
            return v;
        if (v == SP_REF_TOO_LARGE || v == SP_REF_ERROR) {
            snprintf(limit, nlimit, "%s", diff->limit ? diff->limit : "");
            *count_unknown = diff->count_unknown;
        }
        sp_ref_result_clear(diff);
        if (v == SP_REF_TOO_LARGE || v == SP_REF_ERROR)
            return v;
        (*agreed)++;
    }
    return SP_REF_AGREE;
}

static shardproof_verdict_t lift1(sp_check_t *C, sp_sbuf_t *b);

static shardproof_verdict_t lift(sp_check_t *C, sp_sbuf_t *b)
{
    C->xref_plain = 0;
    shardproof_verdict_t v = lift1(C, b);
    C->xref_plain = 0;
    return v;
}

static shardproof_verdict_t lift1(sp_check_t *C, sp_sbuf_t *b)
{
    const sp_stage_t *s = first_failed(C);
    sp_ref_result_t r;
    char limit[300];
    int agreed;
    /* under the mesh cutoff the stage's counterexample is on the checked mesh: the reference
       executor must find the difference (on the real mesh when it can run it) */
    if (s && s->kind == SP_STAGE_OUTPUT && cex_no_cut(s) && C->ncutoff == 0 &&
        (cex_inputs_only(s) || sp_check_reduced(C))) {
        if (!sp_check_reduced(C)) { /* inputs only (the condition above): direct_witness() */
            sp_sbuf_puts(b, "end-to-end witness: the counterexample above (inputs only, at the "
                            "real sizes)\n");
            return SHARDPROOF_NOT_EQUIVALENT;
        }
        /* at reduced sizes the counterexample is one of the size-generic program, which can
           differ from the plan at its sizes (two sizes equal at the real sizes reduced apart):
           the reference executor looks for the difference at the real sizes, and if it runs
           them and finds none, the real sizes are checked (src/check.c, run_exact) */
        sp_ref_verdict_t v = ref_seeds(C, 0, &r, &agreed, limit, sizeof limit);
        if (v == SP_REF_DIFFER) {
            witness_str(C, &r, 0, b);
            sp_ref_result_clear(&r);
            return SHARDPROOF_NOT_EQUIVALENT;
        }
        if (v == SP_REF_ERROR && limit[0])
            sp_sbuf_printf(b, "note: at the real sizes the reference executor refuses the "
                              "program: %s\n", limit);
        if (v == SP_REF_AGREE)
            return no_witness(C, SP_NOWIT_REAL_AGREE, agreed, b);
        if (C->lit_real[0])
            return no_witness(C, SP_NOWIT_LITERAL, 0, b);
        if (failed_counts(C))
            return no_witness(C, SP_NOWIT_COUNTS, 0, b);
        /* the checked program takes sizes used as values at their real sizes (src/exec.c
           int_pval, docs/soundness.md "Sizes as values"); the reference executor at the
           checked sizes takes them at those: a difference it shows too is one of the plan at
           those sizes, and one it does not show is left to the real sizes */
        if (ref_seeds(C, 1, &r, &agreed, limit, sizeof limit) == SP_REF_DIFFER) {
            witness_str(C, &r, 1, b);
            sp_ref_result_clear(&r);
            return SHARDPROOF_NOT_EQUIVALENT;
        }
        if (agreed > 0)
            return no_witness(C, SP_NOWIT_CHECKED_AGREE, agreed, b);
        if (C->value_real[0])
            return no_witness(C, SP_NOWIT_VALUE, 0, b);
        sp_sbuf_puts(b, "end-to-end witness: the counterexample above (inputs only, at the "
                        "checked sizes)\n");
        return SHARDPROOF_NOT_EQUIVALENT;
    }
    const char *why = NULL;
    sp_ref_verdict_t v = SP_REF_AGREE;
    for (int reduced = 0; reduced < 2; reduced++) {
        v = ref_seeds(C, reduced, &r, &agreed, limit, sizeof limit);
        if (v == SP_REF_DIFFER && reduced &&
            (C->lit_real[0] || failed_counts(C) || (C->ncutoff > 0 && C->value_real[0]))) {
            sp_ref_result_clear(&r);
            return no_witness(C, C->lit_real[0]    ? SP_NOWIT_LITERAL
                                 : failed_counts(C) ? SP_NOWIT_COUNTS
                                                    : SP_NOWIT_CUTOFF_VALUE,
                              0, b);
        }
        if (v == SP_REF_DIFFER) {
            witness_str(C, &r, reduced, b);
            sp_ref_result_clear(&r);
            return SHARDPROOF_NOT_EQUIVALENT;
        }
        if (agreed) {
            why = reduced ? "at the checked sizes" : "at the real sizes";
            break;
        }
        if (reduced && v == SP_REF_ERROR && C->value_real[0])
            /* with sizes used as values at their real sizes it could not take a count (an
               extent the program does not write): the real sizes decide */
            return no_witness(C, SP_NOWIT_VALUE, 0, b);
    }
    if (agreed)
        sp_sbuf_printf(b,
                       "not lifted: the reference executor finds the outputs equal %s on %d "
                       "seeds, so the stage difference above holds only for cut values the "
                       "plan may never produce (a wrong lineage annotation?): verdict UNKNOWN\n",
                       why, agreed);
    else
        sp_sbuf_printf(b, "not lifted: the reference executor could not run the plan (%s%s): "
                          "verdict UNKNOWN\n",
                       v == SP_REF_ERROR ? "it refused the plan: " : "",
                       limit[0] ? limit : "no message");
    C->unlifted = 1;
    return SHARDPROOF_UNKNOWN;
}

static int crosscheck(sp_check_t *C, int v);

/*
 * EQUIVALENT at the checked sizes, the real ones too large for the reference executor: it runs
 * the plan at other admissible sizes, the small dims at their real sizes (src/reduce.c
 * xref_sizes()), when they differ from the checked ones.  A difference there shows a plan that
 * the reduction does not decide (an additive relation of counts or values of sizes that holds at
 * the checked sizes only: docs/soundness.md, "The second reference run"), so the real sizes are
 * checked (src/check.c run_exact, C->resize = 2).  No difference proves nothing more.
 */
static int second_run(sp_check_t *C, sp_sbuf_t *b)
{
    /* the work it may take: the checked run's expression nodes times the factor the moved dims
       grow by (deterministic, unlike a time) */
    double work = (double)C->exec_nodes;
    int other = 0;
    for (int i = 0; i < C->ndims; i++)
        if (!C->dims[i].derived && C->dims[i].xref > 0 && C->dims[i].red > 0 &&
            C->dims[i].xref != C->dims[i].red) {
            other = 1;
            work *= (double)C->dims[i].xref / (double)C->dims[i].red;
        }
    if (!other)
        return SHARDPROOF_EQUIVALENT;
    if (work > XREF_SECOND_MAX_WORK) {
        sp_sbuf_printf(b, "reference run: skipped at the second sizes too (more than %d "
                          "expression nodes)\n",
                       XREF_SECOND_MAX_WORK);
        return SHARDPROOF_EQUIVALENT;
    }
    sp_ref_result_t r;
    sp_ref_result_init(&r);
    sp_status_t st = ref_at(C, 2, C->opt.seed, &r);
    sp_ref_verdict_t rv = st == SP_OK ? r.verdict : SP_REF_ERROR;
    int v = SHARDPROOF_EQUIVALENT;
    if (rv == SP_REF_DIFFER) {
        witness_str(C, &r, 2, b);
        sp_sbuf_puts(b, "not decided by the reduction: the outputs differ at these sizes and not "
                        "at the checked ones: the real sizes are checked\n");
        C->unlifted = 1;
        C->resize = 2;
        v = SHARDPROOF_UNKNOWN;
    } else {
        sp_sbuf_puts(b, "reference run: ");
        if (rv == SP_REF_AGREE || rv == SP_REF_UNDECIDED)
            sp_sbuf_printf(b, "%s", rv == SP_REF_AGREE ? "AGREE" : "no difference (some balls overlap)");
        else
            sp_sbuf_printf(b, "skipped (%s)", r.limit ? r.limit : "no message");
        sp_sbuf_puts(b, " at the sizes ");
        sizes_str(C, 2, b);
        if (rv == SP_REF_AGREE || rv == SP_REF_UNDECIDED)
            sp_sbuf_printf(b, " (seed %llu, %lld output elements, %lld equal exactly)",
                           (unsigned long long)r.seed, (long long)r.compared, (long long)r.equal);
        sp_sbuf_puts(b, "\n");
    }
    sp_ref_result_clear(&r);
    return v;
}

int sp_crosscheck(sp_check_t *C, int v)
{
    v = crosscheck(C, v);
    if (v != SHARDPROOF_EQUIVALENT)
        return v;
    /* --fast-shapes: no difference at sizes that miss a condition of the default reduction is
       no proof at the real sizes */
    if (C->fast_gap[0])
        snprintf(C->unproved, sizeof C->unproved,
                 "--fast-shapes: the reduced sizes are no proof at the real sizes: %s; without "
                 "--fast-shapes the reduction keeps such sizes apart",
                 C->fast_gap);
    return C->unproved[0] ? SHARDPROOF_UNKNOWN : v;
}

static int crosscheck(sp_check_t *C, int v)
{
    if (C->ast == NULL || C->plan == NULL)
        return v;
    if (C->opt.no_cross_check) {
        /* without the reference executor a stage difference is lifted only when it is already
           an input of the whole plan at its real sizes (docs/soundness.md, "The other
           direction") */
        if (v != SHARDPROOF_NOT_EQUIVALENT || direct_witness(C))
            return v;
        flint_free(C->xref);
        C->xref = sp_strdup("not lifted: the counterexample is not an input of the whole plan at "
                            "its real sizes, and --no-cross-check skips the reference executor "
                            "that would look for one: verdict UNKNOWN\n");
        C->unlifted = 1;
        return SHARDPROOF_UNKNOWN;
    }
    if (v != SHARDPROOF_EQUIVALENT && v != SHARDPROOF_NOT_EQUIVALENT)
        return v;
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    if (v == SHARDPROOF_NOT_EQUIVALENT) {
        v = lift(C, &b);
    } else {
        sp_ref_result_t r;
        sp_ref_result_init(&r);
        sp_status_t st = ref_at(C, 0, C->opt.seed, &r);
        sp_ref_verdict_t rv = st == SP_OK ? r.verdict : SP_REF_ERROR;
        if (rv == SP_REF_DIFFER && (sp_check_reduced(C) || C->ncutoff > 0) && !C->opt.real_sizes) {
            /* no difference at the checked sizes (or mesh), one at the real ones: a plan the
               reduction does not decide (an additive relation of counts or values of sizes that
               holds at the checked sizes only: docs/soundness.md, "The second reference run");
               the real sizes (and mesh: src/check.c run_exact) are checked, where the two
               executors must agree */
            witness_str(C, &r, 0, &b);
            sp_sbuf_puts(&b, "not decided by the reduction: the outputs differ at the real sizes "
                             "and not at the checked ones: the real sizes are checked\n");
            C->unlifted = 1;
            C->resize = 3;
            v = SHARDPROOF_UNKNOWN;
        } else if (rv == SP_REF_DIFFER) {
            sp_sbuf_t w;
            sp_sbuf_init(&w);
            witness_str(C, &r, 0, &w);
            sp_loc_t top = {C->ast->file, 0, 0};
            char *ws = sp_sbuf_take(&w);
            sp_diags_error(C->d, SP_DIAG_LIMIT, top,
                           "internal error: the proof says EQUIVALENT but the reference executor "
                           "finds a difference; one of the two is wrong (please report this):\n%s",
                           ws ? ws : "");
            flint_free(ws);
            sp_sbuf_clear(&w);
            v = SHARDPROOF_INTERNAL;
        } else if (rv == SP_REF_AGREE || rv == SP_REF_UNDECIDED) {
            sp_sbuf_printf(&b,
                           "reference run: %s at the real sizes (seed %llu, %lld output elements, "
                           "%lld equal exactly)\n",
                           rv == SP_REF_AGREE ? "AGREE" : "no difference (some balls overlap)",
                           (unsigned long long)r.seed, (long long)r.compared, (long long)r.equal);
        } else if (rv == SP_REF_ERROR) {
            /* the program is ill-formed at its real sizes (an error the checked sizes do not
               show, or a construct only the checker accepts): no EQUIVALENT for it */
            sp_sbuf_printf(&b, "reference run: it refused the plan at the real sizes: %s; "
                               "verdict UNKNOWN\n",
                           r.limit ? r.limit : "no message");
            C->unlifted = 1;
            v = SHARDPROOF_UNKNOWN;
        } else {
            sp_sbuf_printf(&b, "reference run: skipped (%s)\n", r.limit ? r.limit : "no message");
            v = second_run(C, &b);
        }
        sp_ref_result_clear(&r);
    }
    flint_free(C->xref);
    C->xref = b.len ? sp_sbuf_take(&b) : NULL;
    sp_sbuf_clear(&b);
    return v;
}
