/* report.c: reports of a check: text (Alive2 style), JSON, SARIF, JUnit; explain; Graphviz. */
#include <flint/flint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/shardproof.h"
#include "check.h"
#include "cli.h"
#include "sbuf.h"

static void counts(const sp_check_t *C, int *c)
{
    memset(c, 0, 5 * sizeof(int));
    for (int i = 0; i < C->nstages; i++)
        c[C->stages[i].status]++;
}

static const sp_stage_t *first_bad(const sp_check_t *C)
{
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].status == SP_STAGE_FAILED)
            return &C->stages[i];
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].status == SP_STAGE_UNKNOWN)
            return &C->stages[i];
    return NULL;
}

static void index_str(const sp_stage_t *s, char *buf, size_t len)
{
    int64_t idx[SP_MAX_DIMS];
    sp_stage_index(s, idx);
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < s->fail_ndim && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)idx[d]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

static void shape_of(const int64_t *s, int n, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < n && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)s[d]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

static void header(const sp_check_t *C, FILE *out)
{
    fprintf(out, "shardproof %s: plan '%s' of model '%s' (%s)\n", SP_VERSION, C->plan->name.str,
            C->model->name.str, C->path);
    fprintf(out, "mesh: ");
    int64_t real_ranks = 1;
    for (int a = 0; a < C->mesh.naxes; a++) {
        int64_t n = C->mesh.size[a];
        for (int c = 0; c < C->ncutoff; c++)
            if (strcmp(C->cutoff[c].name, C->mesh.name[a]) == 0)
                n = C->cutoff[c].real;
        fprintf(out, "%s%s=%lld", a ? ", " : "", C->mesh.name[a], (long long)n);
        real_ranks *= n;
    }
    fprintf(out, " (%lld ranks)\n", (long long)real_ranks);
    if (C->ncutoff > 0) {
        fprintf(out, "mesh cutoff:");
        for (int c = 0; c < C->ncutoff; c++)
            fprintf(out, "%s %s=%lld checked as %s=%lld", c ? "," : "", C->cutoff[c].name,
                    (long long)C->cutoff[c].real, C->cutoff[c].name, (long long)C->cutoff[c].red);
        fprintf(out, " (%lld ranks; the plan is uniform along %s, and no sum over %s counts "
                     "or relates more members than checked: docs/soundness.md, \"Mesh cutoff\")\n",
                (long long)C->mesh.nranks, C->ncutoff > 1 ? "them" : "it",
                C->ncutoff > 1 ? "them" : "it");
    }
    if ((C->opt.verbose || C->cutoff_fallback) && C->cutoff_note[0]) {
        /* one line per axis kept at its real size ("none; " when no axis was cut) */
        const char *p = C->cutoff_note;
        for (int first = 1; *p; first = 0) {
            size_t n = strcspn(p, "\n");
            fprintf(out, "mesh cutoff: %s%.*s\n", first && C->ncutoff == 0 ? "none; " : "",
                    (int)n, p);
            p += n + (p[n] == '\n');
        }
    }
    fprintf(out, "reduced dims:");
    for (int i = 0; i < C->ndims; i++)
        fprintf(out, " %s=%lld%s", C->dims[i].name, (long long)C->dims[i].red,
                C->dims[i].red != C->dims[i].real ? "" : "");
    fprintf(out, "  (real:");
    for (int i = 0; i < C->ndims; i++)
        fprintf(out, " %s=%lld", C->dims[i].name, (long long)C->dims[i].real);
    fprintf(out, ")\n");
    int reduced = 0; /* a dim checked at a larger reduced size (src/check.c regrow) */
    for (int i = 0; i < C->ndims; i++)
        reduced |= C->dims[i].red != C->dims[i].real;
    if (C->resize_note[0])
        fprintf(out, "reduced dims: %s; %s\n", reduced ? "grown" : "none", C->resize_note);
    if (C->weak_order)
        fprintf(out, "reduced dims: a shard may keep one element (with two, a tensor exceeds "
                     "--max-elements %lld), so a local reduction over such a shard is not checked; "
                     "a larger --max-elements checks it\n", (long long)C->opt.max_elements);
    fprintf(out, "seed: %llu\n", (unsigned long long)C->opt.seed);
    if (C->inferring) {
        int n = 0;
        for (int i = 0; i < C->nstages; i++)
            n += C->stages[i].inferred;
        if (C->infer_note[0])
            fprintf(out, "lineage: %s\n", C->infer_note);
        else
            fprintf(out, "lineage: %d relation%s inferred from the reference executor's values at "
                         "the checked sizes (`shardproof explain` lists them)\n",
                    n, n == 1 ? "" : "s");
    }
    if (C->nomitted > 0) {
        fprintf(out, "unchecked (the plan's omit):");
        for (int i = 0; i < C->nomitted && i < 6; i++)
            fprintf(out, "%s %s", i ? "," : "", C->omitted[i]);
        if (C->nomitted > 6)
            fprintf(out, " and %d more", C->nomitted - 6);
        fprintf(out, "\n");
    }
}

/* FILE:LINE:COL, followed by " (ORIGIN)" when the line has a source-map comment. */
static void loc_str(const sp_check_t *C, sp_loc_t l, char *buf, size_t len)
{
    const char *o = sp_check_origin(C, l.file, l.line);
    snprintf(buf, len, "%s:%u:%u%s%s%s", l.file ? l.file : "?", l.line, l.col, o ? " (" : "",
             o ? o : "", o ? ")" : "");
}

/* "x = 1, y = 2, ...": the first 8 assignments unless verbose (a report fits on a screen) */
static void print_cex(FILE *out, const char *cex, int verbose)
{
    if (cex == NULL) {
        fprintf(out, "  counterexample: (no symbols)\n");
        return;
    }
    const char *p = cex;
    int shown = 0;
    while (!verbose && shown < 8 && (p = strstr(p, ", ")) != NULL) {
        p += 2;
        shown++;
    }
    if (verbose || p == NULL) {
        fprintf(out, "  counterexample: %s\n", cex);
        return;
    }
    int rest = 1;
    for (const char *q = p; (q = strstr(q, ", ")) != NULL; q += 2)
        rest++;
    fprintf(out, "  counterexample: %.*s ... (%d more; --verbose shows all)\n",
            (int)(p - 2 - cex), cex, rest);
}

static void text_report(const sp_check_t *C, FILE *out)
{
    int c[5];
    counts(C, c);
    header(C, out);
    const sp_stage_t *bad = first_bad(C);
    int ne = c[SP_STAGE_FAILED] && !C->unlifted;
    const char *verdict = ne ? "NOT EQUIVALENT"
                          : c[SP_STAGE_FAILED] || c[SP_STAGE_UNKNOWN] || C->unproved[0] ||
                                    C->limit_note[0]
                              ? "UNKNOWN"
                              : "EQUIVALENT";
    int nprob = 0;
    int64_t minbits = 0;
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].prob_bits > 0) {
            nprob++;
            if (minbits == 0 || C->stages[i].prob_bits < minbits)
                minbits = C->stages[i].prob_bits;
        }
    fprintf(out, "\n%s\n", verdict);
    if (C->limit_note[0])
        fprintf(out, "reason: %s\n", C->limit_note);
    if (!ne && C->unproved[0])
        fprintf(out, "(%s)\n", C->unproved);
    if (nprob)
        fprintf(out, "(probabilistic: %d stage%s proved by fingerprints only, each query's error "
                     "probability below 2^-%lld; --probabilistic was given)\n",
                nprob, nprob > 1 ? "s" : "", (long long)minbits);
    if (bad) {
        char pl[512], ml[512], rs[256], ix[128], sh[128], ls[512];
        loc_str(C, bad->plan_loc, pl, sizeof pl);
        loc_str(C, bad->model_loc, ml, sizeof ml);
        sp_mesh_rank_str(&C->mesh, bad->fail_rank, rs, sizeof rs);
        index_str(bad, ix, sizeof ix);
        shape_of(bad->fail_shape, bad->fail_ndim, sh, sizeof sh);
        sp_layout_str(C, &bad->layout, ls, sizeof ls);
        fprintf(out, "\n%s stage %d of %d: plan '%s' ~ model '%s' : %s\n",
                bad->status == SP_STAGE_FAILED ? "first failing" : "first undecided", bad->id + 1,
                C->nstages, bad->plan_name, bad->model_name, ls);
        fprintf(out, "  plan line:   %s\n  model line:  %s\n", pl, ml);
        if (bad->fail_rank < 0) {
            fprintf(out, "  no element compared: the stage stopped before its first query\n");
        } else {
            fprintf(out, "  rank %s%s, element %s of the local %s shard\n", rs,
                    bad->layout.npartial ? " (its group's reduction)" : "", ix, sh);
            fprintf(out, "  plan value:  %s\n  model value: %s\n",
                    bad->plan_value ? bad->plan_value : "?",
                    bad->model_value ? bad->model_value : "?");
        }
        if (bad->status == SP_STAGE_FAILED) {
            print_cex(out, bad->cex, C->opt.verbose);
            fprintf(out, "  there: %s\n", bad->cex_values ? bad->cex_values : "?");
        } else {
            fprintf(out, "  reason: %s\n", bad->reason ? bad->reason : sp_why_name(bad->why));
        }
        if (C->has_diverge) {
            char dl[512];
            loc_str(C, C->diverge_loc, dl, sizeof dl);
            fprintf(out, "  first divergence: %s\n    %s\n    (from the reference executor's values at "
                         "the checked sizes, where no lineage is written: a hint, not a proof)\n",
                    dl, C->diverge_note);
        }
        int more = c[SP_STAGE_FAILED] - (bad->status == SP_STAGE_FAILED);
        if (more > 0)
            fprintf(out, "  (%d more failing stage%s: --format json lists them)\n", more, more > 1 ? "s" : "");
    }
    if (C->xref) {
        if (!bad)
            fputc('\n', out);
        for (const char *l = C->xref; *l;) {
            const char *e = strchr(l, '\n');
            size_t n = e ? (size_t)(e - l) : strlen(l);
            fprintf(out, "%s%.*s\n", bad && l != C->xref ? "    " : bad ? "  " : "", (int)n, l);
            l += n + (e != NULL);
        }
    }
    int64_t elems = 0, sym = 0;
    for (int i = 0; i < C->nstages; i++) {
        elems += C->stages[i].elements;
        sym += C->stages[i].symmetric;
    }
    fprintf(out, "\nsummary: %d stages: %d proved, %d memoized, %d failed, %d unknown; %lld element checks",
            C->nstages, c[SP_STAGE_PROVED], c[SP_STAGE_MEMO], c[SP_STAGE_FAILED], c[SP_STAGE_UNKNOWN],
            (long long)elems);
    if (sym)
        fprintf(out, " (%lld more covered by rank symmetry)", (long long)sym);
    fprintf(out, "\n");
}

/* ---- documents: JSON, SARIF and JUnit, written from a result snapshot ------------------------ */

typedef const shardproof_result_t res_t;

static int exit_code(shardproof_verdict_t v) { return (int)v; }

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

static void put(json_t *o, const char *key, json_t *v) { json_object_set_new(o, key, v); }

static json_t *jloc(const shardproof_loc_t *l)
{
    json_t *o = json_pack("{s:o, s:I, s:I}", "file", jstr(l->file), "line", (json_int_t)l->line,
                          "column", (json_int_t)l->column);
    if (l->origin)
        put(o, "origin", json_string(l->origin));
    return o;
}

static json_t *jints(const int64_t *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *jcoords(const shardproof_coord_t *c, int n)
{
    json_t *o = json_object();
    for (int i = 0; i < n; i++)
        put(o, c[i].name, json_integer(c[i].value));
    return o;
}

static json_t *jassign(const shardproof_stage_t *t)
{
    json_t *a = json_array();
    for (int i = 0; i < t->nassign; i++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", t->assign[i].name, "value",
                                           t->assign[i].value));
    return a;
}

/* the where-and-why of a failed or undecided stage, shared by JSON and SARIF */
static void jfailure(json_t *o, const shardproof_stage_t *t)
{
    if (t->rank < 0) { /* stopped before its first element query */
        put(o, "reason", jstr(t->reason));
        return;
    }
    put(o, "rank", jcoords(t->coords, t->ncoords));
    put(o, "rank_index", json_integer(t->rank));
    if (t->group)
        put(o, "group_reduction", json_true());
    put(o, "element", jints(t->element, t->ndim));
    put(o, "shard_shape", jints(t->shard_shape, t->ndim));
    put(o, "plan_value", jstr(t->plan_value));
    put(o, "model_value", jstr(t->model_value));
    if (t->status == SHARDPROOF_STAGE_FAILED) {
        put(o, "counterexample", jassign(t));
        put(o, "values", json_pack("{s:o, s:o, s:b}", "plan", jstr(t->plan_at), "model",
                                   jstr(t->model_at), "exact", t->exact));
    } else {
        put(o, "reason", jstr(t->reason));
    }
}

static json_t *jdiags(res_t *r)
{
    json_t *a = json_array();
    static const char *const sev[] = {"error", "warning", "note"};
    for (int i = 0; i < shardproof_result_diagnostic_count(r); i++) {
        const shardproof_diagnostic_t *g = shardproof_result_diagnostic(r, i);
        json_t *o = json_pack("{s:s, s:s}", "severity", sev[g->severity], "code", g->code);
        put(o, "file", jstr(g->loc.file));
        put(o, "line", json_integer(g->loc.line));
        put(o, "column", json_integer(g->loc.column));
        if (g->loc.origin)
            put(o, "origin", json_string(g->loc.origin));
        put(o, "message", jstr(g->message));
        json_array_append_new(a, o);
    }
    return a;
}

typedef struct {
    int n[5];
    int64_t elements, symmetric, minbits;
    int nprob;
} tally_t;

static void tally(res_t *r, tally_t *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < shardproof_result_stage_count(r); i++) {
        const shardproof_stage_t *s = shardproof_result_stage(r, i);
        t->n[s->status]++;
        t->elements += s->elements;
        t->symmetric += s->symmetric;
        if (s->prob_error_bits > 0) {
            t->nprob++;
            if (t->minbits == 0 || s->prob_error_bits < t->minbits)
                t->minbits = s->prob_error_bits;
        }
    }
}

static json_t *jseed(uint64_t seed)
{
    if (seed <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)seed);
    char b[32];
    snprintf(b, sizeof b, "%llu", (unsigned long long)seed);
    return json_string(b);
}

static void dump(json_t *root, FILE *out)
{
    json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(root);
}

static void json_report(res_t *r, FILE *out)
{
    shardproof_verdict_t v = shardproof_result_verdict(r);
    tally_t t;
    tally(r, &t);
    json_t *o = json_object();
    put(o, "tool", json_string("shardproof"));
    put(o, "version", json_string(SP_VERSION));
    put(o, "schema", json_integer(2));
    put(o, "file", jstr(shardproof_result_file(r)));
    put(o, "plan", jstr(shardproof_result_plan(r)));
    put(o, "model", jstr(shardproof_result_model(r)));
    put(o, "verdict", json_string(shardproof_verdict_name(v)));
    put(o, "exit_code", json_integer(exit_code(v)));
    put(o, "seed", jseed(shardproof_result_seed(r)));
    if (shardproof_result_reference(r))
        put(o, "reference", jstr(shardproof_result_reference(r)));
    if (shardproof_result_limit(r))
        put(o, "limit", jstr(shardproof_result_limit(r)));
    if (shardproof_result_unproved(r))
        put(o, "unproved", jstr(shardproof_result_unproved(r)));
    shardproof_loc_t dl;
    const char *dv = shardproof_result_divergence(r, &dl);
    if (dv)
        put(o, "first_divergence", json_pack("{s:o, s:s}", "location", jloc(&dl), "note", dv));
    json_t *mesh = json_object();
    for (int i = 0; i < shardproof_result_axis_count(r); i++)
        put(mesh, shardproof_result_axis(r, i)->name,
            json_integer(shardproof_result_axis(r, i)->value));
    put(o, "mesh", mesh);
    if (shardproof_result_cutoff_count(r) > 0) {
        json_t *cut = json_array();
        for (int i = 0; i < shardproof_result_cutoff_count(r); i++) {
            const shardproof_dim_t *d = shardproof_result_cutoff(r, i);
            json_array_append_new(cut, json_pack("{s:s, s:I, s:I}", "axis", d->name, "real",
                                                 (json_int_t)d->real, "checked",
                                                 (json_int_t)d->reduced));
        }
        put(o, "mesh_cutoff", cut);
    }
    json_t *dims = json_array();
    for (int i = 0; i < shardproof_result_dim_count(r); i++) {
        const shardproof_dim_t *d = shardproof_result_dim(r, i);
        json_array_append_new(dims, json_pack("{s:s, s:I, s:I}", "name", d->name, "real",
                                              (json_int_t)d->real, "reduced",
                                              (json_int_t)d->reduced));
    }
    put(o, "dims", dims);
    json_t *sum = json_object();
    put(sum, "stages", json_integer(shardproof_result_stage_count(r)));
    put(sum, "proved", json_integer(t.n[SHARDPROOF_STAGE_PROVED]));
    put(sum, "memoized", json_integer(t.n[SHARDPROOF_STAGE_MEMOIZED]));
    put(sum, "failed", json_integer(t.n[SHARDPROOF_STAGE_FAILED]));
    put(sum, "unknown", json_integer(t.n[SHARDPROOF_STAGE_UNKNOWN]));
    put(sum, "element_checks", json_integer(t.elements));
    put(sum, "symmetric", json_integer(t.symmetric));
    if (t.nprob)
        put(sum, "probabilistic", json_pack("{s:i, s:I}", "stages", t.nprob, "error_bits",
                                            (json_int_t)t.minbits));
    put(o, "summary", sum);
    json_t *stages = json_array();
    for (int i = 0; i < shardproof_result_stage_count(r); i++) {
        const shardproof_stage_t *s = shardproof_result_stage(r, i);
        json_t *j = json_object();
        put(j, "id", json_integer(s->id));
        put(j, "kind", json_string(s->is_output ? "output" : s->is_inferred ? "inferred" : "lineage"));
        put(j, "status", json_string(shardproof_stage_status_name(s->status)));
        put(j, "plan_tensor", jstr(s->plan_tensor));
        put(j, "model_tensor", jstr(s->model_tensor));
        put(j, "layout", jstr(s->layout));
        put(j, "plan_loc", jloc(&s->plan_loc));
        put(j, "model_loc", jloc(&s->model_loc));
        put(j, "elements", json_integer(s->elements));
        put(j, "symmetric", json_integer(s->symmetric));
        if (s->prob_error_bits > 0)
            put(j, "probabilistic_error_bits", json_integer(s->prob_error_bits));
        if (s->memo_of)
            put(j, "memo_of", json_integer(s->memo_of));
        if (s->status == SHARDPROOF_STAGE_FAILED || s->status == SHARDPROOF_STAGE_UNKNOWN)
            jfailure(j, s);
        json_array_append_new(stages, j);
    }
    put(o, "stages", stages);
    put(o, "diagnostics", jdiags(r));
    dump(o, out);
}

/* ---- SARIF 2.1.0 -------------------------------------------------------------------------- */

enum { RULE_NOT_EQUIVALENT = 0, RULE_UNDECIDED, RULE_BAD_INPUT };

static json_t *sarif_rules(void)
{
    static const char *const r[3][5] = {
        {"not-equivalent", "NotEquivalent", "The plan does not compute what the model computes.",
         "A stage's plan tensor differs from its model tensor under the declared layout: the "
         "result names the plan line, the rank and element, and a certified counterexample.",
         "error"},
        {"undecided", "Undecided", "A stage could not be decided.",
         "A limit was hit or a case split could not be decided; the result names the reason. "
         "Raise the limit (--max-ms, --max-terms, ...) or add lineage cut points.",
         "warning"},
        {"bad-input", "BadInput", "The input or the command line is invalid.",
         "shardproof could not check the file: a syntax, name, shape, layout or lineage error, "
         "an input limit, or a usage error.",
         "error"}};
    json_t *a = json_array();
    for (int i = 0; i < 3; i++)
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}}", "id", r[i][0], "name", r[i][1],
                         "shortDescription", "text", r[i][2], "fullDescription", "text", r[i][3],
                         "defaultConfiguration", "level", r[i][4]));
    return a;
}

/* A file name as a URI reference: relative to SRCROOT, or file:// for an absolute path; NULL
   for standard input (no location). */
static json_t *sarif_artifact(const char *file)
{
    if (file == NULL || !strcmp(file, "<stdin>"))
        return NULL;
    static const char hex[] = "0123456789ABCDEF";
    char *u = flint_malloc(3 * strlen(file) + 8);
    size_t k = 0;
    int abs = file[0] == '/';
    if (abs) {
        memcpy(u, "file://", 7);
        k = 7;
    }
    for (const unsigned char *p = (const unsigned char *)file; *p; p++) {
        unsigned c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            strchr("-._~/", (int)c) != NULL) {
            u[k++] = (char)c;
        } else {
            u[k++] = '%';
            u[k++] = hex[c >> 4];
            u[k++] = hex[c & 15];
        }
    }
    u[k] = 0;
    json_t *o = json_pack("{s:s}", "uri", u);
    if (!abs)
        put(o, "uriBaseId", json_string("SRCROOT"));
    flint_free(u);
    return o;
}

static json_t *sarif_location(const shardproof_loc_t *l, const char *msg, int id)
{
    json_t *art = sarif_artifact(l->file);
    if (art == NULL)
        return NULL;
    json_t *phys = json_object();
    put(phys, "artifactLocation", art);
    if (l->line > 0)
        put(phys, "region", json_pack("{s:I, s:I}", "startLine", (json_int_t)l->line,
                                      "startColumn", (json_int_t)(l->column ? l->column : 1)));
    json_t *loc = json_object();
    if (id >= 0)
        put(loc, "id", json_integer(id));
    put(loc, "physicalLocation", phys);
    /* a generated line's source position ('#@ ORIGIN'): in the message a viewer shows, and as
       data in the location's property bag */
    char text[1400];
    if (l->origin)
        snprintf(text, sizeof text, "%s%sgenerated from %s", msg ? msg : "", msg ? ", " : "",
                 l->origin);
    if (msg || l->origin)
        put(loc, "message", json_pack("{s:s}", "text", l->origin ? text : msg));
    if (l->origin)
        put(loc, "properties", json_pack("{s:s}", "origin", l->origin));
    return loc;
}

static json_t *sarif_result(int rule, const char *level, const char *msg)
{
    static const char *const ids[] = {"not-equivalent", "undecided", "bad-input"};
    return json_pack("{s:s, s:i, s:s, s:{s:s}}", "ruleId", ids[rule], "ruleIndex", rule, "level",
                     level, "message", "text", msg);
}

/* "[0, 1]", "(dp=0, tp=1)" */
static void put_ints(sp_sbuf_t *b, const int64_t *v, int n)
{
    sp_sbuf_putc(b, '[');
    for (int i = 0; i < n; i++)
        sp_sbuf_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
    sp_sbuf_putc(b, ']');
}

static void put_rank(sp_sbuf_t *b, const shardproof_stage_t *t)
{
    sp_sbuf_putc(b, '(');
    for (int i = 0; i < t->ncoords; i++)
        sp_sbuf_printf(b, "%s%s=%lld", i ? ", " : "", t->coords[i].name,
                       (long long)t->coords[i].value);
    sp_sbuf_putc(b, ')');
}

/* One line saying what failed where, shared by SARIF messages and JUnit failures. */
static char *stage_message(const shardproof_stage_t *t, int nstages)
{
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    sp_sbuf_printf(&b, "stage %d of %d: plan tensor '%s' %s model tensor '%s' under %s", t->id,
                   nstages, t->plan_tensor,
                   t->status == SHARDPROOF_STAGE_FAILED ? "differs from" : "is undecided against",
                   t->model_tensor, t->layout);
    if (t->status == SHARDPROOF_STAGE_UNKNOWN)
        sp_sbuf_printf(&b, " (%s)", t->reason ? t->reason : "?");
    if (t->rank < 0) {
        sp_sbuf_puts(&b, ": no element compared");
        return sp_sbuf_take(&b);
    }
    sp_sbuf_puts(&b, ": rank ");
    put_rank(&b, t);
    sp_sbuf_puts(&b, t->group ? " (its group's reduction), element " : ", element ");
    put_ints(&b, t->element, t->ndim);
    if (t->status == SHARDPROOF_STAGE_FAILED) {
        sp_sbuf_printf(&b, "; plan = %s, model = %s (%s) at ", t->plan_at ? t->plan_at : "?",
                       t->model_at ? t->model_at : "?", t->exact ? "exact" : "Arb balls");
        int shown = t->nassign < 8 ? t->nassign : 8;
        for (int i = 0; i < shown; i++)
            sp_sbuf_printf(&b, "%s%s = %s", i ? ", " : "", t->assign[i].name, t->assign[i].value);
        if (t->nassign > shown)
            sp_sbuf_printf(&b, ", ... (%d inputs in all)", t->nassign);
        if (t->nassign == 0)
            sp_sbuf_puts(&b, "any input");
    }
    return sp_sbuf_take(&b);
}

static void sarif_report(res_t *r, FILE *out)
{
    shardproof_verdict_t v = shardproof_result_verdict(r);
    int n = shardproof_result_stage_count(r);
    json_t *results = json_array();
    for (int i = 0; i < n; i++) {
        const shardproof_stage_t *t = shardproof_result_stage(r, i);
        if (t->status != SHARDPROOF_STAGE_FAILED && t->status != SHARDPROOF_STAGE_UNKNOWN)
            continue;
        int failed = t->status == SHARDPROOF_STAGE_FAILED;
        char *msg = stage_message(t, n);
        json_t *res = sarif_result(failed ? RULE_NOT_EQUIVALENT : RULE_UNDECIDED,
                                   failed ? "error" : "warning", msg);
        flint_free(msg);
        json_t *loc = sarif_location(&t->plan_loc, NULL, -1);
        if (loc)
            put(res, "locations", json_pack("[o]", loc));
        char rel[1024];
        snprintf(rel, sizeof rel, "model tensor '%s'", t->model_tensor);
        json_t *mloc = sarif_location(&t->model_loc, rel, 1);
        if (mloc)
            put(res, "relatedLocations", json_pack("[o]", mloc));
        json_t *props = json_object();
        put(props, "stage", json_integer(t->id));
        put(props, "plan_tensor", jstr(t->plan_tensor));
        put(props, "model_tensor", jstr(t->model_tensor));
        put(props, "layout", jstr(t->layout));
        jfailure(props, t);
        put(res, "properties", props);
        json_array_append_new(results, res);
    }
    static const char *const level[] = {"error", "warning", "note"};
    for (int i = 0; i < shardproof_result_diagnostic_count(r); i++) {
        const shardproof_diagnostic_t *g = shardproof_result_diagnostic(r, i);
        json_t *res = sarif_result(RULE_BAD_INPUT, level[g->severity], g->message);
        json_t *loc = sarif_location(&g->loc, NULL, -1);
        if (loc)
            put(res, "locations", json_pack("[o]", loc));
        put(res, "properties", json_pack("{s:s}", "code", g->code));
        json_array_append_new(results, res);
    }
    tally_t t;
    tally(r, &t);
    json_t *driver = json_pack("{s:s, s:s, s:s, s:o}", "name", "shardproof", "version", SP_VERSION,
                               "semanticVersion", SP_VERSION, "rules", sarif_rules());
    json_t *run = json_object();
    put(run, "tool", json_pack("{s:o}", "driver", driver));
    put(run, "originalUriBaseIds",
        json_pack("{s:{s:{s:s}}}", "SRCROOT", "description", "text",
                  "the directory shardproof ran in: relative file names are relative to it"));
    put(run, "invocations",
        json_pack("[{s:b, s:i}]", "executionSuccessful", v != SHARDPROOF_INTERNAL, "exitCode",
                  exit_code(v)));
    put(run, "results", results);
    json_t *props = json_object();
    put(props, "verdict", json_string(shardproof_verdict_name(v)));
    put(props, "plan", jstr(shardproof_result_plan(r)));
    put(props, "model", jstr(shardproof_result_model(r)));
    put(props, "seed", jseed(shardproof_result_seed(r)));
    put(props, "stages", json_integer(n));
    put(props, "proved", json_integer(t.n[SHARDPROOF_STAGE_PROVED]));
    put(props, "memoized", json_integer(t.n[SHARDPROOF_STAGE_MEMOIZED]));
    put(props, "failed", json_integer(t.n[SHARDPROOF_STAGE_FAILED]));
    put(props, "unknown", json_integer(t.n[SHARDPROOF_STAGE_UNKNOWN]));
    put(run, "properties", props);
    json_t *root = json_object();
    put(root, "$schema", json_string("https://json.schemastore.org/sarif-2.1.0.json"));
    put(root, "version", json_string("2.1.0"));
    put(root, "runs", json_pack("[o]", run));
    dump(root, out);
}

/* ---- JUnit XML ------------------------------------------------------------------------------ */

/* s as XML character data or attribute value: markup escaped, and the characters XML 1.0
   cannot carry at all (control characters but tab, newline, return) as U+FFFD */
static void xml(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        case '\n': fputs("&#10;", out); break;
        case '\t': fputs("&#9;", out); break;
        case '\r': fputs("&#13;", out); break;
        default:
            if (c < 0x20)
                fputs("\xef\xbf\xbd", out);
            else
                fputc(c, out);
        }
    }
}

/* <tag a1="v1" ...>: attrs NULL-terminated name/value pairs (NULL values skipped) */
static void xml_open(FILE *out, int indent, const char *tag, const char *const *attrs, int empty)
{
    fprintf(out, "%*s<%s", indent, "", tag);
    for (int i = 0; attrs && attrs[i]; i += 2) {
        if (attrs[i + 1] == NULL)
            continue;
        fprintf(out, " %s=\"", attrs[i]);
        xml(out, attrs[i + 1]);
        fputc('"', out);
    }
    fputs(empty ? "/>\n" : ">\n", out);
}

/* FILE:LINE:COL, and " (ORIGIN)" as the text report writes it */
static void xml_loc(FILE *out, const shardproof_loc_t *l)
{
    xml(out, l->file);
    fprintf(out, ":%u:%u", l->line, l->column);
    if (l->origin) {
        fputs(" (", out);
        xml(out, l->origin);
        fputs(")", out);
    }
}

/* A stable test name: "plan ~ model", and " #k" for the k-th stage of the same pair. */
static void test_name(res_t *r, int i, char *buf, size_t len)
{
    const shardproof_stage_t *t = shardproof_result_stage(r, i);
    int k = 1;
    for (int j = 0; j < i; j++) {
        const shardproof_stage_t *u = shardproof_result_stage(r, j);
        k += !strcmp(u->plan_tensor, t->plan_tensor) && !strcmp(u->model_tensor, t->model_tensor);
    }
    if (k > 1)
        snprintf(buf, len, "%s ~ %s #%d", t->plan_tensor, t->model_tensor, k);
    else
        snprintf(buf, len, "%s ~ %s", t->plan_tensor, t->model_tensor);
}

static void junit_report(res_t *r, FILE *out)
{
    shardproof_verdict_t v = shardproof_result_verdict(r);
    tally_t t;
    tally(r, &t);
    int n = shardproof_result_stage_count(r), input_bad = n == 0 && v != SHARDPROOF_EQUIVALENT;
    char tests[32], fails[32], errs[32], skipped[32], seed[32], line[32];
    snprintf(tests, sizeof tests, "%d", input_bad ? 1 : n);
    snprintf(fails, sizeof fails, "%d", t.n[SHARDPROOF_STAGE_FAILED]);
    snprintf(errs, sizeof errs, "%d", input_bad ? 1 : t.n[SHARDPROOF_STAGE_UNKNOWN]);
    snprintf(skipped, sizeof skipped, "%d", t.n[SHARDPROOF_STAGE_PENDING]);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)shardproof_result_seed(r));
    const char *plan = shardproof_result_plan(r), *file = shardproof_result_file(r);
    char suite[512], cls[512];
    snprintf(suite, sizeof suite, "shardproof %s", plan ? plan : file ? file : "");
    snprintf(cls, sizeof cls, "shardproof.%s", plan ? plan : "input");
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    const char *ts[] = {"name", "shardproof", "tests", tests, "failures", fails, "errors", errs,
                        NULL};
    xml_open(out, 0, "testsuites", ts, 0);
    const char *sa[] = {"name", suite, "tests", tests, "failures", fails, "errors", errs,
                        "skipped", skipped, "file", file, NULL};
    xml_open(out, 2, "testsuite", sa, 0);
    xml_open(out, 4, "properties", NULL, 0);
    const char *props[][2] = {{"verdict", shardproof_verdict_name(v)}, {"file", file},
                              {"plan", plan}, {"model", shardproof_result_model(r)},
                              {"seed", seed}};
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        const char *pa[] = {"name", props[i][0], "value", props[i][1], NULL};
        if (props[i][1])
            xml_open(out, 6, "property", pa, 1);
    }
    fputs("    </properties>\n", out);
    if (input_bad) {
        /* no stages: the diagnostics are the one test's error */
        const shardproof_diagnostic_t *g0 = shardproof_result_diagnostic(r, 0);
        const char *ca[] = {"classname", cls, "name", "input", "file", file, NULL};
        xml_open(out, 4, "testcase", ca, 0);
        const char *ea[] = {"message", g0 ? g0->message : shardproof_verdict_name(v), "type",
                            shardproof_verdict_name(v), NULL};
        xml_open(out, 6, "error", ea, 0);
        for (int i = 0; i < shardproof_result_diagnostic_count(r); i++) {
            const shardproof_diagnostic_t *g = shardproof_result_diagnostic(r, i);
            char pos[64] = "";
            if (g->loc.line)
                snprintf(pos, sizeof pos, ":%u:%u", g->loc.line, g->loc.column);
            xml(out, g->loc.file ? g->loc.file : "shardproof");
            xml(out, pos);
            fprintf(out, ": %s: ", g->severity == SHARDPROOF_ERROR     ? "error"
                                   : g->severity == SHARDPROOF_WARNING ? "warning"
                                                                       : "note");
            xml(out, g->message);
            fputc('\n', out);
        }
        fputs("      </error>\n    </testcase>\n", out);
    }
    for (int i = 0; i < n; i++) {
        const shardproof_stage_t *s = shardproof_result_stage(r, i);
        char name[1024];
        test_name(r, i, name, sizeof name);
        snprintf(line, sizeof line, "%u", s->plan_loc.line);
        const char *ca[] = {"classname", cls, "name", name, "file", s->plan_loc.file, "line", line,
                            NULL};
        int bad = s->status == SHARDPROOF_STAGE_FAILED || s->status == SHARDPROOF_STAGE_UNKNOWN;
        int pending = s->status == SHARDPROOF_STAGE_PENDING;
        xml_open(out, 4, "testcase", ca, !bad && !pending);
        if (pending) {
            fputs("      <skipped message=\"not proved in this shard\"/>\n    </testcase>\n", out);
            continue;
        }
        if (!bad)
            continue;
        char *msg = stage_message(s, n);
        const char *fa[] = {"message", msg, "type",
                            s->status == SHARDPROOF_STAGE_FAILED ? "NotEquivalent" : "Undecided",
                            NULL};
        const char *tag = s->status == SHARDPROOF_STAGE_FAILED ? "failure" : "error";
        xml_open(out, 6, tag, fa, 0);
        flint_free(msg);
        fprintf(out, "plan line: ");
        xml_loc(out, &s->plan_loc);
        fprintf(out, "\nmodel line: ");
        xml_loc(out, &s->model_loc);
        if (s->rank >= 0) {
            fprintf(out, "\nplan value: ");
            xml(out, s->plan_value);
            fputs("\nmodel value: ", out);
            xml(out, s->model_value);
        }
        fputs("\n", out);
        if (s->status == SHARDPROOF_STAGE_FAILED) {
            fputs("counterexample:", out);
            for (int k = 0; k < s->nassign; k++) {
                fputs(k ? ", " : " ", out);
                xml(out, s->assign[k].name);
                fputs(" = ", out);
                xml(out, s->assign[k].value);
            }
            fputs("\n", out);
        }
        fprintf(out, "      </%s>\n    </testcase>\n", tag);
    }
    fputs("  </testsuite>\n</testsuites>\n", out);
}

void shardproof_report(const shardproof_t *C, FILE *out, shardproof_format_t fmt)
{
    int bad = C->verdict == SHARDPROOF_BAD_INPUT || C->verdict == SHARDPROOF_INTERNAL;
    if (fmt == SHARDPROOF_FORMAT_TEXT) {
        /* bad input: the diagnostics (shardproof_print_diagnostics) are the whole report */
        if (!bad && C->plan != NULL)
            text_report(C, out);
        return;
    }
    shardproof_result_t *r = shardproof_result_new(C);
    if (r == NULL)
        return;
    switch (fmt) {
    case SHARDPROOF_FORMAT_JSON: json_report(r, out); break;
    case SHARDPROOF_FORMAT_SARIF: sarif_report(r, out); break;
    default: junit_report(r, out); break;
    }
    shardproof_result_free(r);
}

void shardproof_explain(const shardproof_t *C, FILE *out)
{
    if (C->plan == NULL)
        return;
    header(C, out);
    fprintf(out, "\ncut points (model tensors continued from fresh symbols):");
    for (int i = 0; i < C->ncuts; i++)
        fprintf(out, " %s", C->cuts[i]);
    fprintf(out, "%s\n\nstages:\n", C->ncuts ? "" : " none");
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        char pl[512], ls[512];
        loc_str(C, s->plan_loc, pl, sizeof pl);
        sp_layout_str(C, &s->layout, ls, sizeof ls);
        fprintf(out, "  %3d  %-7s %s: plan '%s' ~ model '%s' : %s\n", s->id + 1,
                s->kind == SP_STAGE_OUTPUT ? "output" : s->inferred ? "inferred" : "lineage", pl,
                s->plan_name, s->model_name, ls);
    }
}

void sp_explain_lineage(const sp_check_t *C, FILE *out)
{
    if (C->plan == NULL)
        return;
    int n = 0, unsure = 0;
    for (int i = 0; i < C->nstages; i++)
        n += C->stages[i].kind == SP_STAGE_LINEAGE && C->stages[i].inferred;
    fprintf(out, "\ninferred lineage: %d relation%s, each an annotation to write after the "
            "statement at its line, before a comment (sizes named by the dims of their checked "
            "size):\n",
            n, n == 1 ? "" : "s");
    unsigned last = 0;
    int repeats = 0;
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        if (s->kind != SP_STAGE_LINEAGE || !s->inferred)
            continue;
        char ls[512];
        int u = sp_layout_src(C, &s->layout, ls, sizeof ls);
        unsure += u > 0;
        repeats += s->plan_loc.line == last;
        last = s->plan_loc.line;
        fprintf(out, "  %s:%u:  ~ %s : %s%s\n", s->plan_loc.file ? s->plan_loc.file : "?",
                s->plan_loc.line, s->model_name, ls,
                u ? "   # a guess: two dims share a checked size, or none has it" : "");
    }
    if (repeats)
        fprintf(out, "(a line listed more than once runs in a loop: write the model tensor's "
                "index with the loop variable)\n");
    if (unsure && !C->opt.strict_shapes)
        fprintf(out, "(`explain --lineage` without --fast-shapes keeps every size apart, so that "
                "each names one dim)\n");
}
