/* check.c: the checker's driver: parse, find items, reduce shapes, run model and plan, prove. */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nf.h"
#include "sbuf.h"
#include "../include/shardproof.h"
#include "check.h"

const char *shardproof_version(void) { return SHARDPROOF_VERSION; }

void shardproof_options_default(shardproof_options_t *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->seed = 1;
}

/* The deadline of a budget of ms milliseconds from now (--timeout); 0 for none. */
static int64_t deadline_after(long ms)
{
    return ms > 0 ? sp_now_ns() + (int64_t)ms * 1000000 : 0;
}

void sp_check_limits(sp_limits_t *lim, const shardproof_options_t *o)
{
    sp_limits_default(lim);
    if (o->max_terms > 0)
        lim->max_terms = o->max_terms;
    if (o->max_degree > 0)
        lim->max_degree = o->max_degree;
    if (o->max_splits > 0)
        lim->max_splits = o->max_splits;
    lim->max_ms = o->max_ms > 0 ? o->max_ms : o->max_ms < 0 ? 0 : SHARDPROOF_DEFAULT_MAX_MS;
    if (o->max_coeff_bits > 0)
        lim->max_coeff_bits = o->max_coeff_bits;
    if (o->max_nodes > 0)
        lim->max_nodes = o->max_nodes;
    /* under an address-space limit (ulimit -v, prlimit --as) a store that outgrows it would end
       in an allocation failure (exit 4): it stops growing at 90% of the limit instead, a
       resource limit with its name (UNKNOWN); the rest is for the tensors and the stages */
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lim->max_vm = (size_t)(rl.rlim_cur / 10 * 9);
    /* resident memory: --max-memory, else 90% of what the machine (or the cgroup) has, so that
       a plan too large for it ends in UNKNOWN (limit memory), not in the kernel's OOM killer */
    if (o->max_memory_mb > 0)
        lim->max_rss = (size_t)o->max_memory_mb << 20;
    else if (o->max_memory_mb == 0)
        lim->max_rss = sp_memory_bytes() / 10 * 9;
    lim->probabilistic = o->probabilistic > 0 ? o->probabilistic : 0;
    lim->deadline_ns = deadline_after(o->timeout_ms);
}

size_t sp_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    size_t total = pages > 0 && ps > 0 ? (size_t)pages * (size_t)ps : 0;
    /* cgroup v2 (a container, a systemd slice): "max" or a byte count */
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f != NULL) {
        unsigned long long b;
        if (fscanf(f, "%llu", &b) == 1 && b > 0 && (total == 0 || b < total))
            total = (size_t)b;
        fclose(f);
    }
    return total;
}

shardproof_t *shardproof_new(const shardproof_options_t *o)
{
    sp_check_t *C = flint_calloc(1, sizeof(sp_check_t));
    if (C == NULL)
        return NULL;
    shardproof_options_t def;
    if (o == NULL) {
        shardproof_options_default(&def);
        o = &def;
    }
    sp_diags_init(C->d);
    C->opt.plan = o->plan;
    C->opt.jobs = o->jobs;
    C->opt.seed = o->seed;
    sp_check_limits(&C->opt.lim, o);
    sp_parse_limits_default(&C->opt.parse);
    if (o->max_input_bytes > 0)
        C->opt.parse.max_bytes = o->max_input_bytes;
    if (o->max_tokens > 0)
        C->opt.parse.max_tokens = o->max_tokens;
    if (o->max_ident > 0)
        C->opt.parse.max_ident = o->max_ident;
    if (o->max_depth > 0 && o->max_depth < C->opt.parse.max_depth)
        C->opt.parse.max_depth = o->max_depth;
    C->opt.max_memory_set = o->max_memory_mb > 0;
    C->opt.max_elements = o->max_elements > 0 ? o->max_elements : 262144;
    C->opt.max_ranks = o->max_ranks > 0 ? o->max_ranks : SHARDPROOF_DEFAULT_MAX_RANKS;
    C->opt.max_memo_keys = o->max_memo_keys > 0 ? o->max_memo_keys : (int64_t)1 << 26;
    C->opt.progress = o->progress;
    C->opt.infer = o->infer_lineage;
    C->opt.shape_index = o->shape_index > 0 ? o->shape_index : 0;
    C->opt.strict_shapes = !o->fast_shapes;
    C->opt.full_mesh = !o->mesh_cutoff;
    C->opt.no_cross_check = o->no_cross_check != 0;
    C->opt.profile = o->profile != 0;
    C->opt.verbose = o->verbose != 0;
    C->opt.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
    if (o->shard_count > 1 && o->shard_index >= 0 && o->shard_index < o->shard_count) {
        C->opt.shard_count = o->shard_count;
        C->opt.shard_index = o->shard_index;
    }
    C->opt.ndims = 0;
    C->opt.dims = flint_calloc((size_t)(o->ndims ? o->ndims : 1), sizeof(sp_dim_override_t));
    for (int i = 0; i < o->ndims; i++) {
        const char *eq = strchr(o->dims[i], '=');
        if (eq == NULL)
            continue;
        char *name = sp_strndup(o->dims[i], (size_t)(eq - o->dims[i]));
        C->opt.dims[C->opt.ndims].name = name;
        C->opt.dims[C->opt.ndims].value = strtoll(eq + 1, NULL, 10);
        C->opt.ndims++;
    }
    return C;
}

static void free_bindings(sp_binding_t *b, int n, int64_t nranks)
{
    for (int i = 0; i < n; i++) {
        flint_free(b[i].name);
        for (int64_t r = 0; r < nranks; r++)
            sp_tensor_clear(&b[i].t[r]);
        flint_free(b[i].t);
        flint_free(b[i].rloc);
    }
}

static void reset_model(sp_check_t *C)
{
    free_bindings(C->mvals, C->nmvals, 1);
    C->nmvals = 0;
    sp_nameidx_stale(&C->mindex);
    free_bindings(C->morig, C->nmorig, 1);
    C->nmorig = 0;
    for (int i = 0; i < C->noutputs; i++)
        flint_free(C->outputs[i]);
    C->noutputs = 0;
    for (int i = 0; i < C->nomitted; i++)
        flint_free(C->omitted[i]);
    C->nomitted = 0;
    flint_free(C->xref);
    C->xref = NULL;
    C->unlifted = 0;
    C->resize = 0;
    C->resize_why = SP_NOWIT_REAL_AGREE;
}

/* What one execution of model and plan left but its cut points: values, stages, crossed cuts. */
static void reset_values(sp_check_t *C)
{
    reset_model(C);
    for (int i = 0; i < C->nstages; i++)
        sp_stage_clear(&C->stages[i]);
    C->nstages = 0;
    for (int i = 0; i < C->npassed; i++) {
        flint_free(C->passed[i]);
        flint_free(C->passed_on[i]);
    }
    C->npassed = 0;
    C->fresh_counter = 0;
    C->nsources = 0;
    C->nnode_key = 0;
    if (C->src_ord)
        memset(C->src_ord, 0, (size_t)C->nsrc_ord * sizeof(uint32_t));
}

/* Everything one execution of model and plan left: values, stages, cuts, crossed cuts. */
static void reset_pass(sp_check_t *C)
{
    reset_values(C);
    for (int i = 0; i < C->ncuts; i++)
        flint_free(C->cuts[i]);
    C->ncuts = 0;
    sp_nameidx_stale(&C->cutidx);
}

/* An empty expression store (a new engine) for the next execution. */
static void fresh_store(sp_check_t *C, const sp_limits_t *lim)
{
    if (C->S)
        sp_engine_free(C->S);
    C->S = sp_engine_new(lim, C->opt.seed);
    C->E = sp_engine_exprs(C->S);
    C->E->dot_ok = 1; /* an execution store: dot products as one node (stages import them
                         written out, src/stage.c) */
}

static void reset_run(sp_check_t *C)
{
    reset_pass(C);
    sp_shard_needed_free(C);
    C->shard_exec = 0;
    flint_free(C->owned);
    C->owned = NULL;
    C->nowned = 0;
    for (int i = 0; i < C->ninferred; i++) {
        flint_free(C->inferred[i].model_name);
        sp_layout_clear(&C->inferred[i].layout);
    }
    flint_free(C->inferred);
    C->inferred = NULL;
    C->ninferred = 0;
    flint_free(C->dims);
    C->dims = NULL;
    C->ndims = 0;
    flint_free(C->funcs);
    C->funcs = NULL;
    C->nfuncs = 0;
    C->model = C->plan = NULL;
    if (C->S)
        sp_engine_free(C->S);
    C->S = NULL;
    C->E = NULL;
    if (C->ast)
        sp_ast_free(C->ast);
    C->ast = NULL;
}

void shardproof_free(shardproof_t *C)
{
    if (C == NULL)
        return;
    reset_run(C);
    flint_free(C->mvals);
    sp_nameidx_free(&C->mindex);
    flint_free(C->morig);
    flint_free(C->outputs);
    flint_free(C->omitted);
    flint_free(C->stages);
    flint_free(C->cuts);
    flint_free(C->src_ord);
    flint_free(C->node_key);
    sp_nameidx_free(&C->cutidx);
    flint_free(C->passed);
    flint_free(C->passed_on);
    flint_free(C->passed_rows);
    for (int i = 0; i < C->ninfer_drop; i++)
        flint_free(C->infer_drop[i]);
    flint_free(C->infer_drop);
    sp_reduce_sums_free(C);
    sp_members_free(C);
    for (int i = 0; i < C->opt.ndims; i++)
        flint_free((char *)C->opt.dims[i].name);
    flint_free(C->opt.dims);
    sp_diags_clear(C->d);
    flint_free(C);
}

/* The file's plan names, "'a', 'b'" (flint_free), and up to n of them in names. */
static char *plan_list(const sp_check_t *C, const char **names, size_t *n)
{
    const sp_ast_t *A = C->ast;
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    size_t k = 0;
    for (size_t i = 0; i < A->nitems; i++)
        if (A->items[i]->kind == SP_STMT_PLAN) {
            sp_sbuf_printf(&b, "%s'%s'", k ? ", " : "", A->items[i]->name.str);
            if (names)
                names[k] = A->items[i]->name.str;
            k++;
        }
    if (n)
        *n = k;
    return sp_sbuf_take(&b);
}

/* --plan NAME names no plan: say which plans the file has (and the closest one). */
static void no_such_plan(sp_check_t *C, sp_loc_t at)
{
    const char **names = flint_calloc(C->ast->nitems + 1, sizeof(char *));
    size_t n;
    char *list = plan_list(C, names, &n);
    const char *s = sp_suggest(C->opt.plan, names, n, 3);
    if (n == 0)
        sp_diags_error(C->d, SP_DIAG_NAME, at, "no plan named '%s': the file has no plan",
                       C->opt.plan);
    else if (s)
        sp_diags_error(C->d, SP_DIAG_NAME, at, "no plan named '%s' (did you mean '%s'?); the "
                       "file's plans: %s", C->opt.plan, s, list);
    else
        sp_diags_error(C->d, SP_DIAG_NAME, at, "no plan named '%s'; the file's plans: %s",
                       C->opt.plan, list);
    flint_free(list);
    flint_free(names);
}

static sp_status_t find_items(sp_check_t *C)
{
    const sp_ast_t *A = C->ast;
    int nplans = 0;
    const sp_ast_stmt_t *chosen = NULL, *first_plan = NULL;
    for (size_t i = 0; i < A->nitems; i++) {
        const sp_ast_stmt_t *s = A->items[i];
        switch (s->kind) {
        case SP_STMT_DIM:
            for (size_t k = 0; k < s->nbinds; k++) {
                if (sp_dim_find(C, s->binds[k].name.str) >= 0) {
                    sp_diags_error(C->d, SP_DIAG_NAME, s->binds[k].name.loc,
                                   "dimension '%s' is declared twice", s->binds[k].name.str);
                    return SP_ERR_INPUT;
                }
                /* the shape reduction's search is quadratic and more in the number of dims */
                if (C->ndims == 1024) {
                    sp_diags_error(C->d, SP_DIAG_LIMIT, s->binds[k].name.loc,
                                   "more than 1024 dimensions");
                    return SP_ERR_INPUT;
                }
                C->dims = flint_realloc(C->dims, (size_t)(C->ndims + 1) * sizeof(sp_dimdef_t));
                sp_dimdef_t *D = &C->dims[C->ndims++];
                memset(D, 0, sizeof(*D));
                D->name = s->binds[k].name.str;
                D->loc = s->binds[k].name.loc;
                D->def = s->binds[k].value;
            }
            break;
        case SP_STMT_MODEL:
            if (C->model) {
                sp_diags_error(C->d, SP_DIAG_NAME, s->name.loc,
                               "a file holds one model ('%s' is the second)", s->name.str);
                return SP_ERR_INPUT;
            }
            C->model = s;
            break;
        case SP_STMT_PLAN:
            nplans++;
            if (first_plan == NULL)
                first_plan = s;
            if (C->opt.plan && strcmp(C->opt.plan, s->name.str) == 0)
                chosen = s;
            break;
        case SP_STMT_FUNC:
            for (int k = 0; k < C->nfuncs; k++)
                if (strcmp(C->funcs[k]->name.str, s->name.str) == 0) {
                    sp_diags_error(C->d, SP_DIAG_NAME, s->name.loc, "function '%s' is defined twice",
                                   s->name.str);
                    return SP_ERR_INPUT;
                }
            if (sp_ops_known(s->name.str) || sp_exec_is_collective(s->name.str)) {
                sp_diags_error(C->d, SP_DIAG_NAME, s->name.loc,
                               "function '%s' has the name of an operator; a function cannot "
                               "replace an operator",
                               s->name.str);
                return SP_ERR_INPUT;
            }
            C->funcs = flint_realloc(C->funcs, (size_t)(C->nfuncs + 1) * sizeof(*C->funcs));
            C->funcs[C->nfuncs++] = s;
            break;
        default:
            break;
        }
    }
    sp_loc_t top = {C->ast->file, 1, 1};
    if (C->model == NULL) {
        sp_diags_error(C->d, SP_DIAG_NAME, top, "no model in this file");
        return SP_ERR_INPUT;
    }
    if (C->opt.plan && chosen == NULL) {
        sp_loc_t whole = {C->ast->file, 0, 0};
        no_such_plan(C, whole);
        return SP_ERR_INPUT;
    }
    if (!C->opt.plan && nplans > 1) {
        char *list = plan_list(C, NULL, NULL);
        sp_diags_error(C->d, SP_DIAG_NAME, first_plan->name.loc,
                       "the file has %d plans: choose one with --plan NAME (%s)", nplans, list);
        flint_free(list);
        return SP_ERR_INPUT;
    }
    if (nplans == 0) {
        sp_diags_error(C->d, SP_DIAG_NAME, top, "no plan in this file");
        return SP_ERR_INPUT;
    }
    C->plan = chosen ? chosen : first_plan;
    if (strcmp(C->plan->of.str, C->model->name.str) != 0) {
        sp_diags_error(C->d, SP_DIAG_NAME, C->plan->of.loc, "plan '%s' is of model '%s', but the model is '%s'",
                       C->plan->name.str, C->plan->of.str, C->model->name.str);
        return SP_ERR_INPUT;
    }
    return SP_OK;
}

/*
 * A tensor, loop variable or function parameter named like a dim or a mesh axis of the plan:
 * size expressions (layouts, shapes) read the name as the size and values as the tensor, and
 * the checker and the reference executor need not agree which (a plan tensor N beside dim N
 * checked N@tp as the dim where the reference executor refused it).  docs/soundness.md, "Names".
 */
static const char *size_name(const sp_check_t *C, const char *n, const sp_ast_stmt_t *mesh)
{
    if (sp_dim_find(C, n) >= 0)
        return "a dimension";
    return sp_ast_binds(mesh, n) ? "a mesh axis" : NULL;
}

static int shadows(sp_check_t *C, const char *n, sp_loc_t at, const sp_ast_stmt_t *mesh)
{
    const char *what = n ? size_name(C, n, mesh) : NULL;
    if (what == NULL)
        return 0;
    sp_diags_error(C->d, SP_DIAG_NAME, at,
                   "'%s' is %s; a tensor, loop variable or parameter cannot take its name",
                   n, what);
    return 1;
}

static int block_shadows(sp_check_t *C, const sp_ast_block_t *b, const sp_ast_stmt_t *mesh)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        switch (s->kind) {
        case SP_STMT_INPUT:
        case SP_STMT_PARAM:
        case SP_STMT_FOR:
            if (shadows(C, s->name.str, s->name.loc, mesh))
                return 1;
            break;
        case SP_STMT_ASSIGN:
        case SP_STMT_ACCUM:
        case SP_STMT_LAYOUT:
            for (size_t k = 0; k < s->ntargets; k++)
                if (shadows(C, sp_ast_base_name(s->targets[k]), s->targets[k]->loc, mesh))
                    return 1;
            break;
        default:
            break;
        }
        if (block_shadows(C, &s->body, mesh) || block_shadows(C, &s->else_body, mesh))
            return 1;
    }
    return 0;
}

static sp_status_t check_shadowing(sp_check_t *C)
{
    const sp_ast_stmt_t *mesh = sp_plan_mesh_stmt(C);
    if (block_shadows(C, &C->model->body, NULL) || block_shadows(C, &C->plan->body, mesh))
        return SP_ERR_INPUT;
    for (int f = 0; f < C->nfuncs; f++) {
        const sp_ast_stmt_t *F = C->funcs[f];
        for (size_t k = 0; k < F->nparams; k++)
            if (shadows(C, F->params[k].str, F->params[k].loc, mesh))
                return SP_ERR_INPUT;
        if (block_shadows(C, &F->body, mesh))
            return SP_ERR_INPUT;
    }
    return SP_OK;
}

static int64_t cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * The end of a phase (parse, reduce, model, plan, prove, reference): with --profile its wall
 * and CPU time and the peak RSS so far are recorded; with progress on a terminal the next phase
 * is announced on stderr (the line is cleared by the next message).
 */
static void phase_done(sp_check_t *C, const char *name, const char *next)
{
    int64_t w = sp_now_ns(), c = cpu_ns();
    if (C->opt.profile && C->nphases < (int)(sizeof C->phases / sizeof C->phases[0])) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        C->phases[C->nphases].name = name;
        C->phases[C->nphases].wall_ns = w - C->phase_wall0;
        C->phases[C->nphases].cpu_ns = c - C->phase_cpu0;
        C->phases[C->nphases].rss_kb = ru.ru_maxrss;
        /* the store's nodes at the phase's end: a measure of execution work that does not
           depend on the machine's load (docs/benchmarks.md section 33 compares the shards') */
        C->phases[C->nphases].nodes = C->E ? (int64_t)sp_expr_count(C->E) : 0;
        C->nphases++;
    }
    C->phase_wall0 = w;
    C->phase_cpu0 = c;
    if (C->opt.progress)
        fprintf(stderr, "\r\033[K%s%s", next ? "shardproof: " : "", next ? next : "");
}

/* How the next execution makes its sources' symbols (src/shard_exec.c); a trace's store keeps
   dot products as sets of pairs (solver/expr.h dot_sets) */
static void source_mode(sp_check_t *C, sp_src_mode_t mode)
{
    C->src_mode = mode;
    C->E->dot_sets = mode == SP_SRC_TRACE;
}

/* The model, then the plan, their sources' symbols made as mode says */
static sp_status_t exec_as(sp_check_t *C, sp_src_mode_t mode)
{
    source_mode(C, mode);
    sp_status_t st = sp_exec_model(C);
    if (st == SP_OK)
        st = sp_exec_plan(C);
    source_mode(C, SP_SRC_REAL);
    return st;
}

/* Does this run trace first (--shard: execute only the shard's stages' sources)? */
static int traced(const sp_check_t *C)
{
    return C->opt.shard_count > 1 && !C->inferring;
}

/*
 * After a trace (SP_SRC_TRACE) of model and plan with the cut points set: execute again with
 * real symbols for the sources this shard's stages read only (src/shard_exec.c); if a stage of
 * the shard then meets the hollow symbol, once more in full.  The diagnostics are the last
 * execution's (dm: the mark before the trace).
 */
static sp_status_t shard_execute(sp_check_t *C, const sp_limits_t *lim, sp_diags_mark_t *dm)
{
    int n = C->nstages, ok = sp_shard_partition(C) && sp_shard_collect_needed(C);
    sp_status_t st = SP_ERR_INPUT;
    sp_diags_restore(C->d, dm);
    reset_values(C);
    fresh_store(C, lim);
    C->shard_sources[0] = C->shard_sources[1] = 0;
    if (ok) {
        st = exec_as(C, SP_SRC_PART);
        if (st == SP_OK && !C->E->oom && sp_shard_stages_whole(C, n)) {
            C->shard_exec = 1;
            return st;
        }
        sp_diags_restore(C->d, dm);
        reset_values(C);
        fresh_store(C, lim);
    }
    C->shard_exec = 2;
    return exec_as(C, SP_SRC_REAL);
}

static shardproof_verdict_t run(shardproof_t *C, const char *path, const char *text, size_t len,
                                int solve)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    reset_run(C);
    C->path = path;
    C->store_limit = 0;
    C->nphases = 0;
    C->phase_wall0 = sp_now_ns();
    C->phase_cpu0 = cpu_ns();
    sp_status_t st = sp_parse_file(&C->ast, path, text, len, &C->opt.parse, C->d);
    phase_done(C, "parse", st == SP_OK ? "reducing the shapes" : NULL);
    if (st == SP_ERR_NOMEM)
        return SHARDPROOF_INTERNAL;
    if (st != SP_OK)
        return SHARDPROOF_BAD_INPUT;
    st = find_items(C);
    if (st == SP_OK)
        st = check_shadowing(C);
    if (st == SP_OK)
        st = sp_reduce_dims(C);
    phase_done(C, "reduce", st == SP_OK ? "running the model and the plan" : NULL);
    if (st != SP_OK)
        return SHARDPROOF_BAD_INPUT;
    sp_limits_t lim = C->opt.lim;
    fresh_store(C, &lim);
    /* the cut points guessed from the plan's control flow, then pass 2 directly; confirmed when
       pass 2 crossed exactly those cuts, else undone (pass 2's diagnostics too).  With
       --infer-lineage the relations proposed by one numeric run of the reference executor
       (src/infer.c; the walk has set up the mesh) add theirs, and a proposal pass 2 did not
       cross is dropped before the next attempt (pass 1 runs the plan uncut: the last resort). */
    {
        int guessed = sp_plan_guess_cuts(C) == SP_OK;
        /* by default only for a plan that writes no lineage on its assignments (a written
           annotation is the user's choice of cut points: a plan with some is left as written,
           --infer-lineage adds proposals to it) */
        C->inferring = C->opt.infer > 0 || (C->opt.infer == 0 && !sp_plan_has_lineage(C));
        if (C->inferring && C->mesh.nranks > 0)
            sp_infer_propose(C);
        for (int attempt = 0; guessed; attempt++) {
            sp_diags_mark_t dm;
            sp_diags_mark(C->d, &dm);
            st = exec_as(C, traced(C) ? SP_SRC_TRACE : SP_SRC_REAL);
            int confirmed = st == SP_OK && !C->E->oom && sp_cuts_confirmed(C);
            if (confirmed && traced(C)) {
                phase_done(C, "trace (--shard)", "running the shard's part");
                st = shard_execute(C, &lim, &dm);
                goto executed;
            }
            if (confirmed)
                goto solve;
            sp_diags_restore(C->d, &dm);
            /* an error after proposals may be theirs (a cut crossed by rows and whole): the
               next attempt has none */
            int dropped = C->ninferred == 0 ? 0
                          : st == SP_OK && !C->E->oom ? sp_infer_keep_crossed(C, 0)
                          : st == SP_ERR_INPUT        ? sp_infer_keep_crossed(C, 1)
                                                      : 0;
            reset_pass(C);
            fresh_store(C, &lim);
            if (dropped == 0 || attempt == 2)
                break;
            guessed = sp_plan_guess_cuts(C) == SP_OK;
            sp_infer_cuts(C);
        }
    }
    /* pass 1: the model uncut, the plan to learn its cut points; pass 2: both for real */
    sp_diags_mark_t dm;
    sp_diags_mark(C->d, &dm);
    source_mode(C, traced(C) ? SP_SRC_TRACE : SP_SRC_REAL); /* only the cut names are kept */
    st = sp_exec_model(C);
    if (st == SP_OK) {
        C->collect_only = 1;
        st = sp_exec_plan(C);
        C->collect_only = 0;
    }
    source_mode(C, SP_SRC_REAL);
    if (st == SP_OK && traced(C)) {
        /* pass 2 a trace, then the shard's own execution */
        sp_diags_restore(C->d, &dm);
        reset_values(C);
        fresh_store(C, &lim);
        st = exec_as(C, SP_SRC_TRACE);
        phase_done(C, "trace (--shard)", "running the shard's part");
        if (st == SP_OK && !C->E->oom)
            st = shard_execute(C, &lim, &dm);
        goto executed;
    }
    if (st == SP_OK && C->ncuts > 0) {
        /* nothing of pass 1 but the cut names (and inferred layouts) is kept: pass 2 starts
           in an empty store, so the peak is that of the larger pass, not of both */
        reset_model(C);
        C->fresh_counter = 0;
        fresh_store(C, &lim);
        st = sp_exec_model(C);
    }
    if (st == SP_OK && C->ncuts == 0)
        C->fresh_counter = 0;
    if (st == SP_OK)
        st = sp_exec_plan(C);
executed:
    if (st == SP_OK && C->E->oom) {
        sp_loc_t top = {C->ast->file, 0, 0};
        sp_diags_error(C->d, SP_DIAG_LIMIT, top, "expression store exhausted (limit max_nodes)");
        st = SP_ERR_INPUT;
    }
    /* an operator that failed because the store is full (--max-nodes) is a resource limit, not
       bad input: run_exact() makes it UNKNOWN with the limit's name */
    C->store_limit = st == SP_ERR_INPUT && C->E->oom &&
                     (C->E->vm_full || (C->E->max_nodes > 0 && C->E->len >= C->E->max_nodes));
    if (st != SP_OK)
        return st == SP_ERR_NOMEM ? SHARDPROOF_INTERNAL : SHARDPROOF_BAD_INPUT;
solve:
    C->exec_nodes = C->E->len; /* the execution's size, before proving adds to the store */
    phase_done(C, "execute (model and plan)", solve ? "proving the stages" : NULL);
    if (solve) {
        sp_stages_solve(C);
        phase_done(C, "prove", NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    C->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (!solve)
        return SHARDPROOF_EQUIVALENT;
    int failed = 0, unknown = 0, late = 0;
    for (int i = 0; i < C->nstages; i++) {
        failed += C->stages[i].status == SP_STAGE_FAILED;
        unknown += C->stages[i].status == SP_STAGE_UNKNOWN;
        late += C->stages[i].status == SP_STAGE_UNKNOWN &&
                C->stages[i].why == SP_WHY_LIMIT_TIMEOUT;
    }
    if (late > 0 && !failed)
        snprintf(C->limit_note, sizeof C->limit_note,
                 "limit timeout: the run passed --timeout %ld.%03ld s while proving; %d of %d "
                 "stages undecided for it", C->opt.timeout_ms / 1000, C->opt.timeout_ms % 1000,
                 late, C->nstages);
    shardproof_verdict_t v =
        failed ? SHARDPROOF_NOT_EQUIVALENT : unknown ? SHARDPROOF_UNKNOWN : SHARDPROOF_EQUIVALENT;
    if (C->opt.shard_count > 1)
        return v; /* a partial run: merge runs the reference executor on the whole verdict */
    if (C->opt.progress && !C->opt.no_cross_check)
        fprintf(stderr, "\r\033[Kshardproof: the reference executor");
    v = (shardproof_verdict_t)sp_crosscheck(C, v);
    phase_done(C, "reference executor", NULL);
    return v;
}

/*
 * A collective that splits a dim over its group (reduce_scatter, all_to_all) needs the dim's
 * size divisible by the group size; shape reduction sees the sizes a layout writes, not the
 * sizes a collective meets (a plan without intermediate lineage writes few layouts).  When
 * such a split fails at the reduced sizes, every base dim whose reduced size is that size, and
 * whose real size the group divides, is reduced again to a multiple of the group size, and the
 * check runs again (at most 8 times).  The reduction only grows: every condition of
 * admissible() still holds (docs/soundness.md, "Shape reduction").
 */
static shardproof_verdict_t run_divisible(shardproof_t *C, const char *path, const char *text,
                                          size_t len, int solve, const sp_diags_mark_t *dm)
{
    shardproof_verdict_t v = SHARDPROOF_BAD_INPUT;
    for (int round = 0; round < 8; round++) {
        C->div_by = 0;
        C->div_min = 1;
        C->xext_new = 0;
        v = run(C, path, text, len, solve);
        if (C->xext_new && !C->opt.real_sizes) {
            /* a concatenation made an exact extent the reduction did not know: reduce again
               with it among the program's sizes (src/exec_pos.c sp_note_exact_extent); past
               the rounds, the real sizes */
            if (round == 7) {
                sp_note_clamped(C, SP_CLAMP_SUM, C->xext[C->nxext - 1].loc);
                return v;
            }
            sp_diags_restore(C->d, dm);
            continue;
        }
        if (v != SHARDPROOF_BAD_INPUT || C->div_by < 2 || C->div_size < 1 || C->opt.real_sizes)
            return v; /* (an empty dim, size 0, is no size a reduction can grow to) */
        /* the failing size is a dim's reduced size, or its shard over some mesh axes: q */
        int64_t prods[1 << 6];
        int np = 0, na = C->mesh.naxes < 6 ? C->mesh.naxes : 6;
        for (int sub = 0; sub < (1 << na); sub++) {
            int64_t p = 1;
            for (int a = 0; a < na; a++)
                if (sub >> a & 1)
                    p *= C->mesh.size[a];
            prods[np++] = p;
        }
        int grew = 0;
        for (int i = 0; i < C->ndims; i++) {
            sp_dimdef_t *D = &C->dims[i];
            if (D->derived || D->cut || D->red == D->real || D->red % C->div_size != 0)
                continue;
            int64_t q = D->red / C->div_size, need = 0;
            /* the least multiple q * div_by * t (t >= div_min: two query heads per kv head)
               that divides the real size (an odd real ratio such as 7 takes t = 7) */
            for (int k = 0; k < np && !need; k++)
                for (int64_t t = C->div_min; prods[k] == q && !need &&
                                             q * C->div_by * t <= D->real; t++)
                    if (D->real % (q * C->div_by * t) == 0)
                        need = q * C->div_by * t;
            if (!need)
                continue;
            int k = 0;
            while (k < C->ndivfix && strcmp(C->divfix[k].name, D->name) != 0)
                k++;
            if (k == C->ndivfix) {
                if (k == (int)(sizeof C->divfix / sizeof C->divfix[0]))
                    continue;
                if (strlen(D->name) >= sizeof C->divfix[k].name)
                    continue;
                memcpy(C->divfix[k].name, D->name, strlen(D->name) + 1);
                C->divfix[k].mult = 1;
                C->ndivfix++;
            }
            int64_t m = C->divfix[k].mult, g = m, b = need;
            while (b) { /* gcd */
                int64_t t = g % b;
                g = b;
                b = t;
            }
            if (m / g * need != m) {
                C->divfix[k].mult = m / g * need;
                grew = 1;
            }
        }
        if (!grew)
            return v;
        sp_diags_restore(C->d, dm);
    }
    return v;
}

/*
 * Proposed lineage (src/infer.c) makes stages start from fresh symbols of cut points; a failing
 * stage whose counterexample needs values of such symbols is no witness (it may be values the
 * plan never produces), and when the reference executor finds no end-to-end difference either
 * the verdict is UNKNOWN.  Then the proposals whose fresh symbols the counterexample names are
 * withdrawn and the check runs again, so that the stage reaches back to the inputs (or to
 * written lineage) and its counterexample becomes a witness, as without inference (a row of a
 * mask that is all zero: random inputs never draw it).  At most 8 rounds.
 */
/* Withdraw the proposals of model tensor name[0..k) (if inference proposed it): 1 if new. */
static int drop_inferred(shardproof_t *C, const char *name, size_t k)
{
    for (int i = 0; i < C->ninferred; i++) {
        const char *mn = C->inferred[i].model_name;
        if (strlen(mn) != k || strncmp(mn, name, k) != 0)
            continue;
        for (int j = 0; j < C->ninfer_drop; j++)
            if (strcmp(C->infer_drop[j], mn) == 0)
                return 0;
        C->infer_drop = flint_realloc(C->infer_drop, (size_t)(C->ninfer_drop + 1) * sizeof(char *));
        C->infer_drop[C->ninfer_drop++] = sp_strdup(mn);
        return 1;
    }
    return 0;
}

static int withdraw_from_cex(shardproof_t *C)
{
    const sp_stage_t *s = NULL;
    for (int i = 0; i < C->nstages && s == NULL; i++)
        if (C->stages[i].status == SP_STAGE_FAILED)
            s = &C->stages[i];
    if (s == NULL || s->cex == NULL)
        return 0;
    int added = 0;
    /* a failing relation that inference proposed (not lineage the plan wrote) goes too: its
       difference then reaches a later stage, and the outputs' stage at last */
    if (s->kind == SP_STAGE_LINEAGE) {
        char mn[600];
        snprintf(mn, sizeof mn, "%s", s->model_name);
        char *rows = strrchr(mn, '[');
        if (rows && strstr(rows, ".."))
            *rows = '\0';
        added += drop_inferred(C, mn, strlen(mn));
    }
    for (const char *p = s->cex; *p;) {
        const char *e = strstr(p, ", ");
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *at = memchr(p, '@', n);
        if (at)
            added += drop_inferred(C, p, (size_t)(at - p));
        p += n + (e ? 2 : 0);
    }
    return added;
}

static shardproof_verdict_t run_inferred(shardproof_t *C, const char *path, const char *text,
                                         size_t len, int solve, const sp_diags_mark_t *dm)
{
    shardproof_verdict_t v = SHARDPROOF_BAD_INPUT;
    for (int round = 0; round < 8; round++) {
        v = run_divisible(C, path, text, len, solve, dm);
        /* a difference not lifted because its stage counts elements is left to the real sizes
           (run_exact): withdrawn cuts only make the stages larger, and their sums count more */
        if (v != SHARDPROOF_UNKNOWN || !C->unlifted || C->ninferred == 0 ||
            (C->resize == 1 && C->resize_why == SP_NOWIT_COUNTS) || !withdraw_from_cex(C))
            return v;
        sp_diags_restore(C->d, dm);
    }
    return v;
}

/* Did the run since dm end in a tensor over --max-elements? */
static int element_limit(const shardproof_t *C, const sp_diags_mark_t *dm)
{
    for (size_t i = dm->n; i < sp_diags_count(C->d); i++) {
        const sp_diag_t *g = sp_diags_get(C->d, i);
        if (g->severity == SP_SEV_ERROR && g->code == SP_DIAG_ELEMENTS)
            return 1;
    }
    return 0;
}

const sp_ast_stmt_t *sp_plan_mesh_stmt(const sp_check_t *C)
{
    if (C->plan == NULL || C->plan->body.n == 0 || C->plan->body.stmts[0]->kind != SP_STMT_MESH)
        return NULL;
    return C->plan->body.stmts[0];
}

int sp_cutoff_index(const sp_check_t *C, const char *axis)
{
    for (int c = 0; c < C->ncutoff; c++)
        if (strcmp(C->cutoff[c].name, axis) == 0)
            return c;
    return -1;
}

int sp_check_reduced(const sp_check_t *C)
{
    for (int i = 0; i < C->ndims; i++) /* a derived dim differs only where a base dim does */
        if (!C->dims[i].derived && C->dims[i].red != C->dims[i].real)
            return 1;
    return 0;
}

/* The check again with every dim and mesh axis at its real size; note is the report's
   `reduced dims: none; NOTE` line. */
static shardproof_verdict_t run_real_sizes(shardproof_t *C, const char *path, const char *text,
                                           size_t len, int solve, sp_diags_mark_t *dm,
                                           const char *note, int clamp)
{
    if (C->regrowing) {
        /* a candidate size of regrow: the real sizes are its caller's to check, once (each
           level of regrow checked them again, and a candidate whose own size clamped went
           there before the next candidate) */
        sp_diags_restore(C->d, dm);
        C->real_deferred = clamp ? 2 : 1;
        return SHARDPROOF_UNKNOWN;
    }
    int full = C->opt.full_mesh;
    sp_diags_restore(C->d, dm);
    C->opt.real_sizes = 1;
    C->opt.full_mesh = 1;
    shardproof_verdict_t v = run_inferred(C, path, text, len, solve, dm);
    C->opt.real_sizes = 0;
    C->opt.full_mesh = full;
    snprintf(C->resize_note, sizeof C->resize_note, "%s", note);
    return v;
}

/* The reduced base dims as "B=4 H=6" */
static void reduced_dims(const sp_check_t *C, char *dims, size_t n)
{
    dims[0] = '\0';
    for (int i = 0; i < C->ndims; i++)
        if (!C->dims[i].derived && C->dims[i].red != C->dims[i].real)
            snprintf(dims + strlen(dims), n - strlen(dims), "%s%s=%lld", dims[0] ? " " : "",
                     C->dims[i].name, (long long)C->dims[i].red);
}

/* "a monomial of NAME (FILE:L:C) may hold N elements of D, more than the M these sizes show in
   one block" for stage s, whose monomials src/members.c bounded over D's smallest block */
static void held_text(const sp_check_t *C, const sp_stage_t *s, char *buf, size_t len)
{
    char what[200];
    sp_members_held_text(C, s->held_dim - 1, s->held, s->held_lim, what, sizeof what);
    snprintf(buf, len, "a monomial of %s (%s:%u:%u) %s", s->plan_name,
             s->plan_loc.file ? s->plan_loc.file : "?", s->plan_loc.line, s->plan_loc.col, what);
}

/* The cut axes at their checked sizes, "dp=3, tp=5" */
static void cut_axes_text(const sp_check_t *C, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int c = 0; c < C->ncutoff; c++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s=%lld", c ? ", " : "",
                 C->cutoff[c].name, (long long)C->cutoff[c].red);
}

/* Why counted stage cs is no proof at the checked sizes: a count, or a monomial past a block */
static void counted_text(const sp_check_t *C, const sp_stage_t *cs, char *buf, size_t len)
{
    if (cs->held_dim > 0) /* src/members.c */
        held_text(C, cs, buf, len);
    else
        snprintf(buf, len,
                 "a sum over an axis in the values of %s (%s:%u:%u) counts elements (its terms "
                 "share a monomial)",
                 cs->plan_name, cs->plan_loc.file ? cs->plan_loc.file : "?", cs->plan_loc.line,
                 cs->plan_loc.col);
}

/* The first stage whose values counted elements at the reduced sizes, or NULL */
static const sp_stage_t *counted_stage(const sp_check_t *C)
{
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].counted)
            return &C->stages[i];
    return NULL;
}

static shardproof_verdict_t run_exact(shardproof_t *C, const char *path, const char *text,
                                      size_t len, int solve);

/*
 * A stage whose monomials may hold more elements of a reduced dim D than the checked sizes
 * show (src/stage.c stage_held) is no proof at those sizes, but at sizes where D's block holds
 * that many it is (docs/soundness.md, "Relations among sums over a reduced dim"): D is checked
 * again at the smallest such size (with one element to spare) the reduction admits (up to
 * REGROW_TRIES candidates, at most REGROW_ROUNDS times in a run, below D's real size), the
 * other dims reduced around it.  Returns -1 when there is no such size or that check does not
 * decide (the caller goes on to the real sizes).
 */
#define REGROW_ROUNDS 3
#define REGROW_TRIES 8

/* The slot of dim `name` among the n overrides of fix (a size by hand), else a new one */
static int override_slot(sp_dim_override_t *fix, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(fix[i].name, name) == 0)
            return i;
    fix[*n].name = name;
    return (*n)++;
}

/* One candidate size of regrow or keep_order: a whole check with the n overrides of fix, the
   real sizes left to the caller.  0: it decided (*v); 1: the next candidate (not admissible with
   the other sizes, or an operator's bound or extent asked for the real sizes); -1: undecided
   there (a difference not lifted, a limit): the real sizes */
static int run_candidate(shardproof_t *C, sp_dim_override_t *fix, int n, const char *path,
                         const char *text, size_t len, int solve, sp_diags_mark_t *dm,
                         shardproof_verdict_t *v)
{
    sp_dim_override_t *fix0 = C->opt.dims;
    int n0 = C->opt.ndims;
    C->opt.dims = fix;
    C->opt.ndims = n;
    sp_diags_restore(C->d, dm);
    C->real_deferred = 0;
    C->regrowing++;
    *v = run_exact(C, path, text, len, solve);
    C->regrowing--;
    C->opt.dims = fix0;
    C->opt.ndims = n0;
    if (*v == SHARDPROOF_BAD_INPUT || (*v == SHARDPROOF_UNKNOWN && C->real_deferred == 2))
        return 1;
    return *v == SHARDPROOF_EQUIVALENT || *v == SHARDPROOF_NOT_EQUIVALENT ? 0 : -1;
}

static int regrow(shardproof_t *C, const sp_stage_t *cs, const char *path, const char *text,
                  size_t len, int solve, sp_diags_mark_t *dm, shardproof_verdict_t *out)
{
    int d = cs->held_dim - 1;
    if (cs->held <= 0 || d < 0 || d >= C->ndims || C->regrown >= REGROW_ROUNDS ||
        C->opt.real_sizes || C->dims[d].derived)
        return -1;
    int64_t blk, bs, pe, ps;
    int on;
    sp_members_dim(C, d, &blk, &bs, &pe, &ps, &on);
    if (ps < 0 || (ps > 0 && pe <= 0) || bs < 0)
        return -1; /* a pattern that leaves no room at any size */
    if (on != d) { /* the room is on the axis of another dim (a causal pattern's queries or
                      keys): that dim grows */
        if (C->dims[on].derived)
            return -1;
        d = on;
        blk = bs = 0;
    }
    int64_t k = C->dims[d].red, real = C->dims[d].real;
    if (k <= 0)
        return -1;
    int64_t lim0 = blk > 0 && blk < k ? blk : k, held = cs->held;
    /* the block grows with the dim (k / lim0 blocks): k' * lim0 / k >= held, with one element
       to spare, as a bound may grow with the size too (ring attention's: 5 of S at S = 6, 6 at
       S = 10; S = 12 holds it); a pattern's axis of pe positions as a block (pe * k' / k - ps
       >= held; an axis of a literal extent does not grow: the candidates fail, the real
       sizes decide) */
    int64_t want = ((held + 1 + (lim0 < k ? bs : 0)) * k + lim0 - 1) / lim0;
    if (ps > 0 && ((held + ps) * k + pe - 1) / pe > want)
        want = ((held + ps) * k + pe - 1) / pe;
    if (want <= k)
        want = k + 1;
    char dims[160], why[300], note[400], name[128];
    reduced_dims(C, dims, sizeof dims);
    held_text(C, cs, why, sizeof why);
    snprintf(name, sizeof name, "%s", C->dims[d].name); /* the runs below remake C->dims */
    /* the dims a causal pattern relates to d grow with it, by as much: the rows past the last
       key and the keys past the last query are counts of their difference, which the check
       keeps as it is (src/exec_pos.c causal_edges; helper-91's review) */
    enum { NCO = 8 };
    char coname[NCO][128];
    int64_t cok[NCO], coreal[NCO];
    int nco = 0, coat[NCO];
    for (int u = 0; u < C->ndims && nco < NCO; u++) {
        const sp_dimdef_t *U = &C->dims[u];
        if (u == d || U->derived || U->red <= 0 || U->red >= U->real ||
            !sp_members_coupled(C, d, u))
            continue;
        snprintf(coname[nco], sizeof coname[nco], "%s", U->name);
        cok[nco] = U->red;
        coreal[nco++] = U->real;
    }
    int n = C->opt.ndims;
    sp_dim_override_t *fix = flint_malloc((size_t)(n + 1 + nco) * sizeof(sp_dim_override_t));
    memcpy(fix, C->opt.dims, (size_t)n * sizeof(sp_dim_override_t));
    int at = override_slot(fix, &n, name);
    for (int j = 0; j < nco; j++)
        coat[j] = override_slot(fix, &n, coname[j]);
    int r = -1;
    C->regrown++;
    for (int64_t t = want; t < want + REGROW_TRIES && t < real && r < 0; t++) {
        fix[at].value = t;
        for (int j = 0; j < nco; j++)
            fix[coat[j]].value = cok[j] + (t - k) < coreal[j] ? cok[j] + (t - k) : coreal[j];
        shardproof_verdict_t v;
        int c = run_candidate(C, fix, n, path, text, len, solve, dm, &v);
        if (c > 0)
            continue;
        if (c < 0)
            break;
        snprintf(note, sizeof note, "with %s %s, so %s is checked at %lld%s%s", dims, why,
                 name, (long long)t, C->resize_note[0] ? "; then " : "",
                 C->resize_note);
        snprintf(C->resize_note, sizeof C->resize_note, "%s", note);
        *out = v;
        r = 0;
    }
    if (r < 0)
        sp_diags_restore(C->d, dm);
    flint_free(fix);
    return r;
}

/*
 * A causal pattern between queries and keys of two dims whose difference the checked sizes do
 * not keep (src/exec_pos.c causal_edges, SP_CLAMP_ORDER): the rows past the last key and the
 * keys past the last query are counts of that difference, the same at every size of the real
 * difference.  The keys' dim is checked at the queries' size less the real difference (or the
 * queries' at the keys' plus it, where the keys' is real), from the checked size up (up to
 * REGROW_TRIES candidates); a candidate that clamps again or does not decide is not taken.
 * Returns -1 when none decides (the caller goes on to the real sizes), -2 when no candidate
 * ran (no size of the real difference below the real sizes: the caller's run stands as it is).
 */
static int keep_order(shardproof_t *C, const char *path, const char *text, size_t len,
                      int solve, sp_diags_mark_t *dm, shardproof_verdict_t *out)
{
    int a = C->order_q, b = C->order_k;
    int64_t diff = C->order_diff;
    if (a < 0 || b < 0 || a >= C->ndims || b >= C->ndims || C->dims[a].derived ||
        C->dims[b].derived)
        return -2;
    /* grow the one that is reduced; the other follows at the real difference */
    int g = C->dims[a].red < C->dims[a].real ? a : b, f = g == a ? b : a;
    int64_t sign = g == a ? -1 : 1; /* f = g - diff (g the queries') or g + diff */
    if (C->dims[g].red >= C->dims[g].real)
        return -2;
    /* names copied: the runs below remake C->dims */
    char gname[128], fname[128], dims[160], note[400];
    snprintf(gname, sizeof gname, "%s", C->dims[g].name);
    snprintf(fname, sizeof fname, "%s", C->dims[f].name);
    const char *qname = g == a ? gname : fname, *kname = g == a ? fname : gname;
    int64_t g0 = C->dims[g].red, greal = C->dims[g].real, freal = C->dims[f].real;
    reduced_dims(C, dims, sizeof dims);
    int n = C->opt.ndims;
    sp_dim_override_t *fix = flint_malloc((size_t)(n + 2) * sizeof(sp_dim_override_t));
    memcpy(fix, C->opt.dims, (size_t)n * sizeof(sp_dim_override_t));
    int ag = override_slot(fix, &n, gname), af = override_slot(fix, &n, fname);
    int r = -1, ran = 0;
    for (int64_t t = g0; t < g0 + REGROW_TRIES && t < greal && r < 0; t++) {
        int64_t u = t + sign * diff;
        if (u < 1 || u > freal)
            continue;
        ran = 1;
        fix[ag].value = t;
        fix[af].value = u;
        shardproof_verdict_t v;
        C->order_fixing++;
        int c = run_candidate(C, fix, n, path, text, len, solve, dm, &v);
        C->order_fixing--;
        if (c > 0)
            continue;
        if (c < 0)
            break;
        snprintf(note, sizeof note,
                 "with %s a causal pattern relates %s and %s, whose difference (%lld at the real "
                 "sizes) those sizes do not keep, so they are checked at %s=%lld %s=%lld%s%s",
                 dims, qname, kname, (long long)diff, gname, (long long)t, fname, (long long)u,
                 C->resize_note[0] ? "; then " : "", C->resize_note);
        snprintf(C->resize_note, sizeof C->resize_note, "%s", note);
        *out = v;
        r = 0;
    }
    if (r < 0 && ran)
        sp_diags_restore(C->d, dm);
    flint_free(fix);
    return r < 0 && !ran ? -2 : r;
}

/*
 * Four fallbacks, each to the exact setting the faster one approximates (docs/soundness.md):
 * - A stage whose values at the reduced sizes contain a sum over an axis that counts elements
 *   (src/stage.c stage_counted; docs/soundness.md "Counts") is decided at the real sizes.
 * - A run under the mesh cutoff that ends in an error or in a difference the reference executor
 *   does not reproduce is run again on the real mesh: the checked mesh may hide what the real
 *   one shows (a shape that only fits one of them, a plan that is parametric in the mesh size
 *   only at the real size), and the verdict is the real mesh's.
 * - A difference over inputs only at reduced sizes that the reference executor does not show at
 *   the real sizes (sizes equal at the real sizes reduced apart, so `x * (H/2)` for `x * K` with
 *   H = 8, K = 4 differs only at the checked sizes) is checked again at the real sizes, where a
 *   counterexample is one of the plan as written; so is one that the reference executor, unable
 *   to run the real sizes, does not show at the checked sizes either (src/crosscheck.c lift: the
 *   checked program takes sizes used as values at their real sizes, the reference executor at
 *   the checked ones).
 * - A run at reduced sizes in which an operator's bound was past its dim (a clamped slice, a
 *   top-k k above its lane) or an operator made an extent that is a sum of sizes (src/ops.h
 *   sp_clamp_t) is checked again at the real sizes: the reduction keeps neither the order of
 *   two sizes nor their additive relations.
 */
static shardproof_verdict_t run_exact(shardproof_t *C, const char *path, const char *text,
                                      size_t len, int solve)
{
    sp_diags_mark_t dm;
    sp_diags_mark(C->d, &dm);
    C->cutoff_fallback = 0;
    C->resize_note[0] = '\0';
    C->ndivfix = 0;
    C->nxext = 0;
    for (int i = 0; i < C->ninfer_drop; i++)
        flint_free(C->infer_drop[i]);
    C->ninfer_drop = 0;
    C->weak_order = 0;
    C->fast_gap[0] = '\0';
    C->unproved[0] = '\0';
    C->limit_note[0] = '\0';
    C->clamped = SP_CLAMP_NONE;
    C->order_q = C->order_k = -1;
    C->cut_members = 0;
    C->value_real[0] = '\0';
    C->nuneven = 0;
    C->pos_exact_sum = C->pos_size_on_exact = C->pos_forms = C->npos_terms = C->npos_named =
        C->npos_host = 0;
    shardproof_verdict_t v = run_inferred(C, path, text, len, solve, &dm);
    if (v == SHARDPROOF_BAD_INPUT && !C->opt.strict_shapes && element_limit(C, &dm)) {
        /* at least two elements per shard made a tensor too large: the reduction that lets a
           shard keep one element, which the report states */
        sp_diags_restore(C->d, &dm);
        C->weak_order = 1;
        v = run_inferred(C, path, text, len, solve, &dm);
        if (v == SHARDPROOF_BAD_INPUT && element_limit(C, &dm))
            C->weak_order = 0;
    }
    if (C->clamped == SP_CLAMP_ORDER && C->order_q >= 0 && !C->order_fixing &&
        !C->opt.real_sizes && sp_check_reduced(C)) {
        /* a causal pattern whose edges the checked sizes do not keep: sizes of the real
           difference first; where none decides, this run again (keep_order's runs replaced
           its stages, notes and clamp), whose clamp then sends it to the real sizes below */
        int k = keep_order(C, path, text, len, solve, &dm, &v);
        if (k == 0)
            return v;
        if (k == -1) {
            sp_diags_restore(C->d, &dm);
            C->order_fixing++;
            v = run_inferred(C, path, text, len, solve, &dm);
            C->order_fixing--;
        }
    }
    for (int i = 0; i < C->nstages && !C->opt.strict_shapes && !C->fast_gap[0]; i++)
        if (C->stages[i].held_dim > 0 && !C->stages[i].counted) /* src/stage.c stage_held */
            held_text(C, &C->stages[i], C->fast_gap, sizeof C->fast_gap);
    const sp_stage_t *cs = counted_stage(C);
    if (cs != NULL && v != SHARDPROOF_NOT_EQUIVALENT && C->ncutoff > 0 && !C->opt.full_mesh &&
        !C->opt.real_sizes) {
        /* under the mesh cutoff: the real mesh first, at the sizes its own reduction picks
           (a count over a cut axis is one there no more) */
        char axes[96], why[300];
        cut_axes_text(C, axes, sizeof axes);
        counted_text(C, cs, why, sizeof why);
        sp_diags_restore(C->d, &dm);
        C->opt.full_mesh = 1;
        v = run_exact(C, path, text, len, solve);
        C->opt.full_mesh = 0;
        snprintf(C->cutoff_note, sizeof C->cutoff_note, "with %s %s, so the real mesh is checked",
                 axes, why);
        C->cutoff_fallback = 1;
        return v;
    }
    if (cs != NULL && v != SHARDPROOF_NOT_EQUIVALENT && !C->opt.real_sizes &&
        sp_check_reduced(C)) {
        /* a stage's sum over an axis counted elements (src/stage.c stage_counted): the values
           at the reduced sizes are no instance of the program's at the real ones; a stage
           whose monomials hold more elements than the sizes show: first a larger size (the
           note is made before: regrow's runs replace the stages and sizes) */
        char dims[160], note[460], why[300];
        reduced_dims(C, dims, sizeof dims);
        counted_text(C, cs, why, sizeof why);
        snprintf(note, sizeof note, "with %s %s, so the real sizes are checked", dims, why);
        if (cs->held_dim > 0 && regrow(C, cs, path, text, len, solve, &dm, &v) == 0)
            return v;
        v = run_real_sizes(C, path, text, len, solve, &dm, note, 0);
    }
    if (C->ncutoff > 0 && !C->opt.full_mesh &&
        (v == SHARDPROOF_BAD_INPUT || (v == SHARDPROOF_UNKNOWN && C->unlifted) ||
         (C->cut_members && v != SHARDPROOF_NOT_EQUIVALENT))) {
        char axes[96], why[400] = "the program was ill-formed";
        cut_axes_text(C, axes, sizeof axes);
        for (size_t i = dm.n; v == SHARDPROOF_BAD_INPUT && i < sp_diags_count(C->d); i++) {
            const sp_diag_t *g = sp_diags_get(C->d, i);
            if (g->severity == SP_SEV_ERROR) { /* the first error, as the cut mesh met it */
                snprintf(why, sizeof why, "the program was ill-formed (%s:%u:%u: %s)",
                         g->file ? g->file : "?", g->line, g->col, g->msg);
                break;
            }
        }
        if (C->cut_members && v != SHARDPROOF_BAD_INPUT)
            snprintf(why, sizeof why,
                     "a gather at %s:%u:%u makes an axis whose positions are the members, which "
                     "a position may tell apart",
                     C->cut_members_loc.file ? C->cut_members_loc.file : "?",
                     C->cut_members_loc.line, C->cut_members_loc.col);
        const char *what =
            v == SHARDPROOF_BAD_INPUT || C->cut_members ? why
            : C->resize >= 2 ? "no difference was found, but the reference executor found one at "
                               "the real sizes"
            : C->resize_why == SP_NOWIT_CUTOFF_VALUE
                ? "the difference found may rest on a size used as a value, taken at its real "
                  "size beside the cut mesh sizes"
                : "the difference found was not reproduced by the reference executor";
        sp_diags_restore(C->d, &dm);
        C->opt.full_mesh = 1;
        v = run_inferred(C, path, text, len, solve, &dm);
        C->opt.full_mesh = 0;
        snprintf(C->cutoff_note, sizeof C->cutoff_note, "with %s %s, so the real mesh is checked",
                 axes, what);
        C->cutoff_fallback = 1;
    }
    /* the reference executor's difference after no difference at the reduced sizes (resize 2,
       3) where an operator did what the reduction does not model: the operator's note below
       says why, so it takes that path */
    int clamp_first = C->resize >= 2 && C->clamped && sp_check_reduced(C);
    if (v == SHARDPROOF_UNKNOWN && C->resize && !C->opt.real_sizes && !clamp_first) {
        char dims[160];
        reduced_dims(C, dims, sizeof dims);
        char note[192];
        if (C->resize >= 2)
            snprintf(note, sizeof note, "with %s no difference was found, but the reference "
                                        "executor found one at %s, so the real sizes are checked",
                     dims, C->resize == 2 ? "other admissible sizes" : "the real sizes");
        else if (C->resize_why == SP_NOWIT_LITERAL)
            snprintf(note, sizeof note, "with %s the difference found rests on the literal %s "
                                        "at the real sizes only, so the real sizes are checked",
                     dims, C->lit_real);
        else if (C->resize_why == SP_NOWIT_COUNTS)
            snprintf(note, sizeof note, "with %s the difference found is in values that count "
                                        "elements (docs/soundness.md, \"Counts\"), so the real "
                                        "sizes are checked",
                     dims);
        else if (C->resize_why == SP_NOWIT_VALUE)
            snprintf(note, sizeof note, "with %s the difference found was not lifted (the "
                                        "program uses %s as a value), so the real sizes are "
                                        "checked",
                     dims, C->value_real);
        else
            snprintf(note, sizeof note, "with %s the difference found was not reproduced at the "
                                        "%s sizes, so the real sizes are checked",
                     dims, C->resize_why == SP_NOWIT_CHECKED_AGREE ? "checked" : "real");
        v = run_real_sizes(C, path, text, len, solve, &dm, note, 0);
    }
    if (C->clamped && !C->opt.real_sizes && (v != SHARDPROOF_UNKNOWN || clamp_first || C->unlifted) &&
        sp_check_reduced(C)) {
        /* an operator clamped a bound (a slice past its dim) or refused one (a top-k k above
           its lane) at the reduced sizes: the reduction keeps sizes' order against 0, 1, the
           literals and the mesh, not against each other, so the bound may be inside the dim
           at the real sizes; or it made an extent that is a sum of sizes (unequal concatenated
           parts, a padding), whose additive relations the reduction does not keep
           (docs/soundness.md, "Shape reduction"): the real sizes decide, also after a
           difference there that could not be lifted (it may be one of those sizes only) */
        char note[256];
        snprintf(note, sizeof note, "%s at %s:%u:%u %s, so the real sizes are checked",
                 C->clamped == SP_CLAMP_BOUND ? "an operator's bound" : "an operator",
                 C->clamp_loc.file ? C->clamp_loc.file : "?", C->clamp_loc.line, C->clamp_loc.col,
                 C->clamped == SP_CLAMP_BOUND   ? "was beyond its dim at the reduced sizes"
                 : C->clamped == SP_CLAMP_GROUP  ? "cut a size into groups the program does not "
                                                   "write, which literal positions may index"
                 : C->clamped == SP_CLAMP_OFFSET ? "made a position that is a sum of sizes (an "
                                                   "offset added to an offset of another size)"
                 : C->clamped == SP_CLAMP_PAIR   ? "made a position that another one, of sizes "
                                                   "scaled otherwise, may equal at the reduced "
                                                   "sizes only"
                 : C->clamped == SP_CLAMP_BOUND_REAL ? "has a bound beyond its dim at the real "
                                                       "sizes only"
                 : C->clamped == SP_CLAMP_COUNT ? "divides by a count of elements not known at "
                                                  "the real sizes (an extent read otherwise, or "
                                                  "a shard of an uneven split)"
                 : C->clamped == SP_CLAMP_RESHAPE ? "could not reshape at the reduced sizes (the "
                                                    "element counts may agree at the real ones)"
                 : C->clamped == SP_CLAMP_ORDER ? "masks queries and keys of two sizes whose "
                                                  "difference (the rows past the last key, the "
                                                  "keys past the last query) is not the real one"
                                                  : "made an extent that is a sum of sizes");
        /* a reshape refused at the reduced sizes (N into [B, S], N = B*S at the real sizes
           only: helper-61's review): the real sizes decide; where they stop at a limit first,
           the error stands, with a note */
        int reshape = C->clamped == SP_CLAMP_RESHAPE && v == SHARDPROOF_BAD_INPUT;
        sp_diag_t first = {0};
        for (size_t i = dm.n; reshape && i < sp_diags_count(C->d) && first.msg == NULL; i++) {
            const sp_diag_t *g = sp_diags_get(C->d, i);
            if (g->severity == SP_SEV_ERROR) {
                first = *g;
                first.msg = strdup(g->msg);
            }
        }
        v = run_real_sizes(C, path, text, len, solve, &dm, note, 1);
        if (reshape && first.msg && (v == SHARDPROOF_UNKNOWN || v == SHARDPROOF_BAD_INPUT) &&
            element_limit(C, &dm)) {
            sp_diags_restore(C->d, &dm);
            sp_loc_t at = {first.file, first.line, first.col};
            sp_diags_error(C->d, first.code, at, "%s", first.msg);
            sp_diags_note(C->d, at, "these are the reduced sizes; at the real sizes the check "
                                    "stops at the limit max-elements before this operator, and "
                                    "the element counts may agree there (a product of sizes the "
                                    "shape reduction does not keep: writing the shape with -1, "
                                    "or the product as a derived dim, keeps it)");
            C->resize_note[0] = '\0';
            v = SHARDPROOF_BAD_INPUT;
        }
        free(first.msg);
    }
    if (v == SHARDPROOF_BAD_INPUT && C->store_limit) {
        /* the expression store reached --max-nodes, 90% of the address-space limit, the
           resident memory bound (--max-memory) or the run's --timeout while executing: UNKNOWN
           with the limit's name and the first statement it stopped */
        char at[300] = "";
        for (size_t i = dm.n; i < sp_diags_count(C->d) && at[0] == 0; i++) {
            const sp_diag_t *g = sp_diags_get(C->d, i);
            if (g->severity == SP_SEV_ERROR && g->line > 0)
                snprintf(at, sizeof at, " at %s:%u:%u", g->file ? g->file : "?", g->line, g->col);
        }
        if (C->E->vm_full == 3)
            snprintf(C->limit_note, sizeof C->limit_note,
                     "limit timeout: the run passed --timeout %ld.%03ld s while executing (%lu "
                     "expression nodes)%s", C->opt.timeout_ms / 1000, C->opt.timeout_ms % 1000, (unsigned long)C->E->len, at);
        else if (C->E->vm_full == 1)
            snprintf(C->limit_note, sizeof C->limit_note,
                     "limit memory: the expression store (%lu nodes) stopped growing at %zu MB, 90%% "
                     "of the address-space limit (ulimit -v)%s", (unsigned long)C->E->len,
                     C->E->max_vm >> 20, at);
        else if (C->E->vm_full == 2)
            snprintf(C->limit_note, sizeof C->limit_note,
                     "limit memory: the expression store (%lu nodes) stopped growing at %zu MB of "
                     "resident memory%s (%s)", (unsigned long)C->E->len, C->E->max_rss >> 20, at,
                     C->opt.max_memory_set ? "--max-memory raises it"
                                              : "90% of the machine's memory; --max-memory sets it");
        else
            snprintf(C->limit_note, sizeof C->limit_note,
                     "limit max-nodes: the expression store is full (%lu nodes)%s (--max-nodes "
                     "raises it)", (unsigned long)C->E->len, at);
        sp_diags_restore(C->d, &dm);
        return SHARDPROOF_UNKNOWN;
    }
    if (v == SHARDPROOF_BAD_INPUT && element_limit(C, &dm)) {
        /* a tensor larger than --max-elements is a resource limit, not bad input: UNKNOWN with
           the limit's name and where it was hit */
        for (size_t i = dm.n; i < sp_diags_count(C->d); i++) {
            const sp_diag_t *g = sp_diags_get(C->d, i);
            if (g->severity != SP_SEV_ERROR || g->code != SP_DIAG_ELEMENTS)
                continue;
            snprintf(C->limit_note, sizeof C->limit_note,
                     "limit max-elements: %s:%u:%u: %s (--max-elements raises it%s)",
                     g->file ? g->file : "?", g->line, g->col, g->msg,
                     C->opt.strict_shapes ? "; --fast-shapes checks smaller sizes, with no proof"
                                          : "");
            break;
        }
        sp_diags_restore(C->d, &dm);
        v = SHARDPROOF_UNKNOWN;
    }
    return v;
}

/* --timeout counts from the start of each check or prepare */
static void start_clock(shardproof_t *C)
{
    C->opt.lim.deadline_ns = deadline_after(C->opt.timeout_ms);
}

/*
 * A shape or layout error met while running at reduced sizes names those sizes, which the user
 * never wrote: a note after it lists them against the real ones (the review of 2026-12-04:
 * "6 query heads are not a multiple of 8 key/value heads" for NH = 64, NKV = 8).
 */
static void note_reduced_sizes(shardproof_t *C, shardproof_verdict_t v)
{
    sp_diags_struct *d = C->d;
    if (v != SHARDPROOF_BAD_INPUT || d->n == 0 || d->full)
        return;
    const sp_diag_t *last = &d->items[d->n - 1];
    if (last->severity != SP_SEV_ERROR ||
        (last->code != SP_DIAG_SHAPE && last->code != SP_DIAG_LAYOUT))
        return;
    char buf[512];
    size_t at = 0;
    int n = 0;
    for (int i = 0; i < C->ndims; i++)
        if (!C->dims[i].derived && C->dims[i].red < 1)
            return; /* refused before any reduction was chosen: no sizes to name */
    for (int i = 0; i < C->ndims && at + 64 < sizeof buf; i++) {
        const sp_dimdef_t *D = &C->dims[i];
        if (D->derived || D->red == D->real)
            continue;
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s=%lld (real %lld)", n ? ", " : "",
                               D->name, (long long)D->red, (long long)D->real);
        n++;
    }
    if (n == 0)
        return;
    sp_loc_t loc = {last->file, 0, 0};
    sp_diags_note(d, loc, "the check runs at reduced sizes, which its messages name: %s%s (the "
                  "other dims at their real sizes; docs/soundness.md, \"Shape reduction\")", buf,
                  at + 64 >= sizeof buf ? ", ..." : "");
}

shardproof_verdict_t shardproof_check(shardproof_t *C, const char *path, const char *text, size_t len)
{
    start_clock(C);
    C->regrown = 0;
    C->verdict = run_exact(C, path, text, len, 1);
    note_reduced_sizes(C, C->verdict);
    return C->verdict;
}

shardproof_verdict_t shardproof_prepare(shardproof_t *C, const char *path, const char *text,
                                        size_t len)
{
    start_clock(C);
    C->regrown = 0;
    C->verdict = run_exact(C, path, text, len, 0);
    note_reduced_sizes(C, C->verdict);
    return C->verdict;
}

void sp_check_fail(sp_check_t *C, const char *file, sp_diag_code_t code, const char *msg)
{
    if (C->path == NULL)
        C->path = file;
    sp_loc_t at = {file, 0, 0};
    sp_diags_error(C->d, code, at, "%s", msg);
    C->verdict = SHARDPROOF_BAD_INPUT;
}

void sp_check_limit(sp_check_t *C, const char *file, const char *note)
{
    if (C->path == NULL)
        C->path = file;
    snprintf(C->limit_note, sizeof C->limit_note, "%s", note);
    C->verdict = SHARDPROOF_UNKNOWN;
}

void shardproof_print_diagnostics(const shardproof_t *C, FILE *out) { sp_diags_print(out, C->d); }

size_t shardproof_error_count(const shardproof_t *C) { return sp_diags_error_count(C->d); }

double shardproof_seconds(const shardproof_t *C) { return C->seconds; }

int shardproof_export_smt2(shardproof_t *C, const char *dir, char *err, size_t errlen)
{
    return sp_stages_export_smt2(C, dir, err, errlen);
}

void shardproof_profile(const shardproof_t *C, FILE *out)
{
    if (C->nphases == 0)
        return;
    fprintf(out,
            "profile (--profile; wall and CPU seconds, peak RSS so far, the store's nodes):\n");
    for (int i = 0; i < C->nphases; i++) {
        fprintf(out, "  %-26s %9.3f s wall %9.3f s CPU %9.1f MB", C->phases[i].name,
                1e-9 * (double)C->phases[i].wall_ns, 1e-9 * (double)C->phases[i].cpu_ns,
                (double)C->phases[i].rss_kb / 1024.0);
        if (C->phases[i].nodes > 0)
            fprintf(out, " %12lld nodes", (long long)C->phases[i].nodes);
        fputc('\n', out);
    }
    if (C->opt.shard_count > 1) {
        int mine = 0;
        for (int i = 0; i < C->nstages; i++)
            mine += sp_shard_mine(C, i);
        fprintf(out, "  --shard %d/%d: %d of the %d stages; ", C->opt.shard_index,
                C->opt.shard_count, mine, C->nstages);
        if (C->shard_exec == 1)
            fprintf(out, "executed what they read (%lld of %lld source tensors)\n",
                    (long long)C->shard_sources[0], (long long)C->shard_sources[1]);
        else
            fprintf(out, "executed in full%s\n", C->shard_exec == 2 ? " (a stage met a value its "
                    "own execution had not computed)" : "");
    }
    /* the stages that took longest, grouped by model tensor (memoized copies cost nothing) */
    int top[5], ntop = 0;
    for (int k = 0; k < 5; k++) {
        int best = -1;
        for (int i = 0; i < C->nstages; i++) {
            int taken = 0;
            for (int j = 0; j < ntop; j++)
                taken |= top[j] == i;
            if (!taken && C->stages[i].solve_ns > 0 &&
                (best < 0 || C->stages[i].solve_ns > C->stages[best].solve_ns))
                best = i;
        }
        if (best < 0)
            break;
        top[ntop++] = best;
    }
    if (ntop)
        fprintf(out, "  slowest stages:\n");
    for (int j = 0; j < ntop; j++) {
        const sp_stage_t *s = &C->stages[top[j]];
        fprintf(out, "    %8.3f s  stage %d: plan '%s' ~ model '%s' (%lld element checks)\n",
                1e-9 * (double)s->solve_ns, s->id + 1, s->plan_name, s->model_name,
                (long long)s->elements);
    }
}
