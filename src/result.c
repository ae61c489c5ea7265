/* result.c: the results of a check as data (the C API, and what the reports are written from). */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/shardproof.h"
#include "check.h"
#include "sbuf.h"

/*
 * A snapshot.  Normal form: every string it points to is an owned, valid UTF-8 copy listed in
 * strs (freed together); stages[i].coords/element/shard_shape/assign point into per-stage
 * arrays owned here.  Stages are empty unless the verdict comes from a finished run.
 */
struct shardproof_result {
    shardproof_verdict_t verdict;
    const char *file, *plan, *model;
    const char *reference;
    const char *unproved;         /* why no difference is not EQUIVALENT (--fast-shapes, ...) */
    const char *limit;            /* the resource limit that made the verdict UNKNOWN */
    const char *divergence;       /* a wrong plan without lineage: the first divergence */
    shardproof_loc_t divergence_loc;
    uint64_t seed;
    int naxes, ndims, nstages, ndiags, ncutoff;
    shardproof_coord_t *axes;
    shardproof_dim_t *dims;
    shardproof_dim_t cutoff[SP_MAX_AXES];
    shardproof_stage_t *stages;
    shardproof_diagnostic_t *diags;
    char **strs;
    size_t nstrs, astrs;
    void **blocks; /* per-stage arrays */
    size_t nblocks, ablocks;
};

const char *shardproof_verdict_name(shardproof_verdict_t v)
{
    switch (v) {
    case SHARDPROOF_EQUIVALENT: return "EQUIVALENT";
    case SHARDPROOF_NOT_EQUIVALENT: return "NOT_EQUIVALENT";
    case SHARDPROOF_BAD_INPUT: return "BAD_INPUT";
    case SHARDPROOF_UNKNOWN: return "UNKNOWN";
    default: return "INTERNAL_ERROR";
    }
}

const char *shardproof_stage_status_name(shardproof_stage_status_t s)
{
    static const char *const n[] = {"pending", "proved", "failed", "unknown", "memoized"};
    return (unsigned)s < 5 ? n[s] : "unknown";
}

/* Is s[0..n) valid UTF-8 without NUL (what JSON and XML can carry as text)? */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (c == 0 || k == 0 || i + k > n)
            return i;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return i;
        /* overlong forms, surrogates and code points above U+10FFFF */
        unsigned cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
        for (size_t j = 1; j < k; j++)
            cp = (cp << 6) | (s[i + j] & 0x3f);
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return i;
        i += k;
    }
    return n;
}

char *sp_utf8_clean(const char *s)
{
    if (s == NULL)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    size_t i = 0;
    while (i < n) {
        size_t ok = utf8_valid_prefix(u + i, n - i);
        if (ok > 0) {
            char *piece = sp_strndup(s + i, ok);
            sp_sbuf_puts(&b, piece);
            flint_free(piece);
            i += ok;
        } else {
            sp_sbuf_puts(&b, "\xef\xbf\xbd"); /* U+FFFD for a byte that is not UTF-8 */
            i++;
        }
    }
    return sp_sbuf_take(&b);
}

static const char *keep(shardproof_result_t *r, const char *s)
{
    if (s == NULL)
        return NULL;
    if (r->nstrs == r->astrs) {
        r->astrs = r->astrs ? 2 * r->astrs : 64;
        r->strs = flint_realloc(r->strs, r->astrs * sizeof(char *));
    }
    return r->strs[r->nstrs++] = sp_utf8_clean(s);
}

static void *block(shardproof_result_t *r, size_t n)
{
    if (r->nblocks == r->ablocks) {
        r->ablocks = r->ablocks ? 2 * r->ablocks : 16;
        r->blocks = flint_realloc(r->blocks, r->ablocks * sizeof(void *));
    }
    return r->blocks[r->nblocks++] = flint_calloc(n ? n : 1, 1);
}

/* The first candidate name of a size is written to b; *other says there was more than one. */
static void candidate(sp_sbuf_t *b, int *found, int *other, const char *name)
{
    if ((*found)++ == 0)
        sp_sbuf_printf(b, "%s", name);
    else
        *other = 1;
}

/* A size of the checked program named in the source's terms: a dim whose checked size it is,
   else D/k (k <= 8), else D*E; 1 if that name is not the only one (or none fits: the number). */
static int size_src(const sp_check_t *C, int64_t v, sp_sbuf_t *b)
{
    const sp_dimdef_t *D = C->dims;
    int found = 0, other = 0;
    char nm[600];
    for (int i = 0; i < C->ndims; i++)
        if (D[i].cut == 0 && D[i].red == v)
            candidate(b, &found, &other, D[i].name);
    for (int64_t k = 2; k <= 8 && !found; k++)
        for (int i = 0; i < C->ndims; i++)
            if (D[i].cut == 0 && D[i].red == v * k) {
                snprintf(nm, sizeof nm, "%s/%lld", D[i].name, (long long)k);
                candidate(b, &found, &other, nm);
            }
    for (int i = 0; i < C->ndims && !found; i++)
        for (int j = i; j < C->ndims; j++)
            if (D[i].cut == 0 && D[j].cut == 0 && D[i].red * D[j].red == v) {
                snprintf(nm, sizeof nm, "%s*%s", D[i].name, D[j].name);
                candidate(b, &found, &other, nm);
            }
    if (!found)
        sp_sbuf_printf(b, "%lld", (long long)v);
    return other || !found;
}

/* Mesh axes as the language writes them after '@': `dp`, or `(dp,ep)` for a group. */
static void put_axes(const sp_check_t *C, const sp_axes_t *a, sp_sbuf_t *b)
{
    for (int i = 0; i < a->n; i++)
        sp_sbuf_printf(b, "%s%s", i ? "," : a->n > 1 ? "(" : "", C->mesh.name[a->axis[i]]);
    if (a->n > 1)
        sp_sbuf_putc(b, ')');
}

/* A layout as text, each size as its number or (named) as size_src names it; the number of
   sizes whose name is a guess. */

static int layout_text(const sp_check_t *C, const sp_layout_t *L, int named, char *buf, size_t len)
{
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    int unsure = 0;
    sp_sbuf_putc(&b, '[');
    for (int d = 0; d < L->ndim; d++) {
        if (d)
            sp_sbuf_printf(&b, ", ");
        if (named)
            unsure += size_src(C, L->size[d], &b);
        else
            sp_sbuf_printf(&b, "%lld", (long long)L->size[d]);
        if (L->axes[d].n > 0) {
            sp_sbuf_putc(&b, '@');
            put_axes(C, &L->axes[d], &b);
        }
    }
    sp_sbuf_putc(&b, ']');
    for (int p = 0; p < L->npartial; p++) {
        sp_sbuf_printf(&b, "%s%s@", p ? ", " : " partial(", sp_red_name(L->pop[p]));
        put_axes(C, &L->paxes[p], &b);
        if (p + 1 == L->npartial)
            sp_sbuf_putc(&b, ')');
    }
    char *s = sp_sbuf_take(&b);
    snprintf(buf, len, "%s", s);
    flint_free(s);
    return unsure;
}

void sp_layout_str(const sp_check_t *C, const sp_layout_t *L, char *buf, size_t len)
{
    layout_text(C, L, 0, buf, len);
}

int sp_layout_src(const sp_check_t *C, const sp_layout_t *L, char *buf, size_t len)
{
    return layout_text(C, L, 1, buf, len);
}

void sp_stage_index(const sp_stage_t *s, int64_t *idx)
{
    int64_t rem = s->fail_index;
    for (int d = s->fail_ndim - 1; d >= 0; d--) {
        idx[d] = s->fail_shape[d] ? rem % s->fail_shape[d] : 0;
        rem = s->fail_shape[d] ? rem / s->fail_shape[d] : 0;
    }
}

/*
 * The counterexample of a stage, "x[0,1] = 2, w[1] = -3/4" (stage.c: names and values contain
 * no spaces), as assignments.
 */
static void split_cex(shardproof_result_t *r, shardproof_stage_t *t, const char *cex)
{
    int n = 0, cap = 0;
    shardproof_assignment_t *as = NULL;
    const char *p = cex;
    while (p && *p) {
        const char *eq = strstr(p, " = ");
        if (eq == NULL)
            break;
        const char *end = strstr(eq + 3, ", ");
        size_t vl = end ? (size_t)(end - eq - 3) : strlen(eq + 3);
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            as = flint_realloc(as, (size_t)cap * sizeof(*as));
        }
        char *name = sp_strndup(p, (size_t)(eq - p)), *val = sp_strndup(eq + 3, vl);
        as[n].name = keep(r, name);
        as[n].value = keep(r, val);
        flint_free(name);
        flint_free(val);
        n++;
        p = end ? end + 2 : NULL;
    }
    shardproof_assignment_t *kept = block(r, (size_t)n * sizeof(*as));
    if (n)
        memcpy(kept, as, (size_t)n * sizeof(*as));
    flint_free(as);
    t->assign = kept;
    t->nassign = n;
}

/* "plan = 3, model = 5 (exact)" (stage.c) as the two values and exactness. */
static void split_values(shardproof_result_t *r, shardproof_stage_t *t, const char *v)
{
    if (v == NULL || strncmp(v, "plan = ", 7) != 0)
        return;
    const char *m = strstr(v, ", model = "), *paren = strrchr(v, '(');
    if (m == NULL || paren == NULL || paren < m + 10 || paren[-1] != ' ')
        return;
    char *pv = sp_strndup(v + 7, (size_t)(m - v - 7));
    char *mv = sp_strndup(m + 10, (size_t)(paren - 1 - (m + 10)));
    t->plan_at = keep(r, pv);
    t->model_at = keep(r, mv);
    t->exact = strcmp(paren, "(exact)") == 0;
    flint_free(pv);
    flint_free(mv);
}

const char *sp_check_origin(const sp_check_t *C, const char *file, unsigned line)
{
    if (C->ast == NULL || file == NULL || C->ast->file == NULL || strcmp(file, C->ast->file))
        return NULL;
    return sp_ast_origin(C->ast, line);
}

static shardproof_loc_t loc_of(shardproof_result_t *r, const sp_check_t *C, const char *file,
                               unsigned line, unsigned col)
{
    shardproof_loc_t x = {keep(r, file), line, col, keep(r, sp_check_origin(C, file, line))};
    return x;
}

static void take_stage(shardproof_result_t *r, const sp_check_t *C, const sp_stage_t *s,
                       shardproof_stage_t *t)
{
    char ls[1024];
    t->id = s->id + 1;
    t->is_output = s->kind == SP_STAGE_OUTPUT;
    t->is_inferred = s->inferred;
    t->status = (shardproof_stage_status_t)s->status;
    t->plan_tensor = keep(r, s->plan_name);
    t->model_tensor = keep(r, s->model_name);
    sp_layout_str(C, &s->layout, ls, sizeof ls);
    t->layout = keep(r, ls);
    t->plan_loc = loc_of(r, C, s->plan_loc.file, s->plan_loc.line, s->plan_loc.col);
    t->model_loc = loc_of(r, C, s->model_loc.file, s->model_loc.line, s->model_loc.col);
    t->elements = s->elements;
    t->symmetric = s->symmetric;
    t->memo_of = s->memo_of >= 0 ? s->memo_of + 1 : 0;
    t->prob_error_bits = s->prob_bits;
    if (s->status != SP_STAGE_FAILED && s->status != SP_STAGE_UNKNOWN)
        return;
    if (s->fail_rank < 0) {
        /* undecided before its first element query (a limit): no rank, element or values */
        t->rank = -1;
        t->reason = keep(r, s->reason ? s->reason : sp_why_name(s->why));
        return;
    }
    t->rank = s->fail_rank;
    t->ncoords = C->mesh.naxes;
    shardproof_coord_t *co = block(r, (size_t)C->mesh.naxes * sizeof(*co));
    for (int a = 0; a < C->mesh.naxes; a++) {
        co[a].name = keep(r, C->mesh.name[a]);
        co[a].value = sp_mesh_coord(&C->mesh, s->fail_rank, a);
    }
    t->coords = co;
    t->group = s->layout.npartial > 0;
    t->ndim = s->fail_ndim;
    int64_t *el = block(r, (size_t)s->fail_ndim * sizeof(int64_t));
    int64_t *sh = block(r, (size_t)s->fail_ndim * sizeof(int64_t));
    sp_stage_index(s, el);
    if (s->fail_ndim)
        memcpy(sh, s->fail_shape, (size_t)s->fail_ndim * sizeof(int64_t));
    t->element = el;
    t->shard_shape = sh;
    t->plan_value = keep(r, s->plan_value);
    t->model_value = keep(r, s->model_value);
    if (s->status == SP_STAGE_UNKNOWN) {
        t->reason = keep(r, s->reason ? s->reason : sp_why_name(s->why));
    } else {
        split_cex(r, t, s->cex);
        split_values(r, t, s->cex_values);
    }
}

shardproof_result_t *shardproof_result_new(const shardproof_t *C)
{
    shardproof_result_t *r = flint_calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->verdict = (shardproof_verdict_t)C->verdict;
    r->file = keep(r, C->path);
    r->seed = C->opt.seed;
    if (C->xref)
        r->reference = keep(r, C->xref);
    if (C->unproved[0] && C->verdict == SHARDPROOF_UNKNOWN)
        r->unproved = keep(r, C->unproved);
    if (C->limit_note[0])
        r->limit = keep(r, C->limit_note);
    if (C->has_diverge && C->verdict == SHARDPROOF_NOT_EQUIVALENT) {
        r->divergence = keep(r, C->diverge_note);
        r->divergence_loc = loc_of(r, C, C->diverge_loc.file, C->diverge_loc.line,
                                   C->diverge_loc.col);
    }
    if (C->plan)
        r->plan = keep(r, C->plan->name.str);
    else if (C->opt.plan)
        r->plan = keep(r, C->opt.plan);
    if (C->model)
        r->model = keep(r, C->model->name.str);
    int finished = r->verdict != SHARDPROOF_BAD_INPUT && r->verdict != SHARDPROOF_INTERNAL &&
                   C->plan != NULL;
    if (finished) {
        r->naxes = C->mesh.naxes;
        r->axes = flint_calloc((size_t)(r->naxes ? r->naxes : 1), sizeof(*r->axes));
        for (int a = 0; a < r->naxes; a++) {
            r->axes[a].name = keep(r, C->mesh.name[a]);
            r->axes[a].value = C->mesh.size[a];
            for (int c = 0; c < C->ncutoff; c++)
                if (strcmp(C->cutoff[c].name, C->mesh.name[a]) == 0)
                    r->axes[a].value = C->cutoff[c].real;
        }
        r->ncutoff = C->ncutoff;
        for (int c = 0; c < C->ncutoff; c++) {
            r->cutoff[c].name = keep(r, C->cutoff[c].name);
            r->cutoff[c].real = C->cutoff[c].real;
            r->cutoff[c].reduced = C->cutoff[c].red;
        }
        r->ndims = C->ndims;
        r->dims = flint_calloc((size_t)(r->ndims ? r->ndims : 1), sizeof(*r->dims));
        for (int i = 0; i < r->ndims; i++) {
            r->dims[i].name = keep(r, C->dims[i].name);
            r->dims[i].real = C->dims[i].real;
            r->dims[i].reduced = C->dims[i].red;
        }
        r->nstages = C->nstages;
        r->stages = flint_calloc((size_t)(r->nstages ? r->nstages : 1), sizeof(*r->stages));
        for (int i = 0; i < r->nstages; i++)
            take_stage(r, C, &C->stages[i], &r->stages[i]);
    }
    r->ndiags = (int)sp_diags_count(C->d);
    r->diags = flint_calloc((size_t)(r->ndiags ? r->ndiags : 1), sizeof(*r->diags));
    for (int i = 0; i < r->ndiags; i++) {
        const sp_diag_t *g = sp_diags_get(C->d, (size_t)i);
        r->diags[i].severity = (shardproof_severity_t)g->severity;
        r->diags[i].code = keep(r, sp_diag_code_name(g->code));
        r->diags[i].loc = loc_of(r, C, g->file, g->line, g->col);
        r->diags[i].message = keep(r, g->msg);
    }
    return r;
}

void shardproof_result_free(shardproof_result_t *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->nstrs; i++)
        flint_free(r->strs[i]);
    for (size_t i = 0; i < r->nblocks; i++)
        flint_free(r->blocks[i]);
    flint_free(r->strs);
    flint_free(r->blocks);
    flint_free(r->axes);
    flint_free(r->dims);
    flint_free(r->stages);
    flint_free(r->diags);
    flint_free(r);
}

shardproof_verdict_t shardproof_result_verdict(const shardproof_result_t *r) { return r->verdict; }
const char *shardproof_result_file(const shardproof_result_t *r) { return r->file; }
const char *shardproof_result_plan(const shardproof_result_t *r) { return r->plan; }
const char *shardproof_result_model(const shardproof_result_t *r) { return r->model; }
uint64_t shardproof_result_seed(const shardproof_result_t *r) { return r->seed; }
const char *shardproof_result_reference(const shardproof_result_t *r) { return r->reference; }
const char *shardproof_result_unproved(const shardproof_result_t *r) { return r->unproved; }
const char *shardproof_result_limit(const shardproof_result_t *r) { return r->limit; }

const char *shardproof_result_divergence(const shardproof_result_t *r, shardproof_loc_t *loc)
{
    if (loc != NULL && r->divergence != NULL)
        *loc = r->divergence_loc;
    return r->divergence;
}
int shardproof_result_axis_count(const shardproof_result_t *r) { return r->naxes; }
int shardproof_result_dim_count(const shardproof_result_t *r) { return r->ndims; }
int shardproof_result_cutoff_count(const shardproof_result_t *r) { return r->ncutoff; }

const shardproof_dim_t *shardproof_result_cutoff(const shardproof_result_t *r, int i)
{
    return i >= 0 && i < r->ncutoff ? &r->cutoff[i] : NULL;
}
int shardproof_result_stage_count(const shardproof_result_t *r) { return r->nstages; }
int shardproof_result_diagnostic_count(const shardproof_result_t *r) { return r->ndiags; }

const shardproof_coord_t *shardproof_result_axis(const shardproof_result_t *r, int i)
{
    return i >= 0 && i < r->naxes ? &r->axes[i] : NULL;
}

const shardproof_dim_t *shardproof_result_dim(const shardproof_result_t *r, int i)
{
    return i >= 0 && i < r->ndims ? &r->dims[i] : NULL;
}

const shardproof_stage_t *shardproof_result_stage(const shardproof_result_t *r, int i)
{
    return i >= 0 && i < r->nstages ? &r->stages[i] : NULL;
}

const shardproof_diagnostic_t *shardproof_result_diagnostic(const shardproof_result_t *r, int i)
{
    return i >= 0 && i < r->ndiags ? &r->diags[i] : NULL;
}

int shardproof_result_failing_stage(const shardproof_result_t *r)
{
    for (int want = SHARDPROOF_STAGE_FAILED; want <= SHARDPROOF_STAGE_UNKNOWN; want++)
        for (int i = 0; i < r->nstages; i++)
            if ((int)r->stages[i].status == want)
                return i;
    return -1;
}
