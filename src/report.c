/* report.c: reports of a check: text (Alive2 style), JSON, SARIF, JUnit; explain; Graphviz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/shardproof.h"
#include "check.h"
#include "cli.h"

static const char *status_name(sp_stage_status_t s)
{
    static const char *const n[] = {"pending", "proved", "failed", "unknown", "memoized"};
    return n[s];
}

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
    int64_t idx[SP_MAX_DIMS], rem = s->fail_index;
    for (int d = s->fail_ndim - 1; d >= 0; d--) {
        idx[d] = s->fail_shape[d] ? rem % s->fail_shape[d] : 0;
        rem = s->fail_shape[d] ? rem / s->fail_shape[d] : 0;
    }
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

static void layout_str(const sp_check_t *C, const sp_layout_t *L, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < L->ndim && k < len; d++) {
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)L->size[d]);
        const sp_axes_t *a = &L->axes[d];
        if (a->n == 1)
            k += (size_t)snprintf(buf + k, len - k, "@%s", C->mesh.name[a->axis[0]]);
        else if (a->n > 1) {
            k += (size_t)snprintf(buf + k, len - k, "@(");
            for (int i = 0; i < a->n; i++)
                k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "," : "", C->mesh.name[a->axis[i]]);
            k += (size_t)snprintf(buf + k, len - k, ")");
        }
    }
    k += (size_t)snprintf(buf + k, len > k ? len - k : 0, "]");
    for (int p = 0; p < L->npartial && k < len; p++) {
        k += (size_t)snprintf(buf + k, len - k, "%s%s@", p ? ", " : " partial(", sp_red_name(L->pop[p]));
        const sp_axes_t *a = &L->paxes[p];
        for (int i = 0; i < a->n && k < len; i++)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "," : "", C->mesh.name[a->axis[i]]);
        if (p + 1 == L->npartial && k < len)
            k += (size_t)snprintf(buf + k, len - k, ")");
    }
}

static void header(const sp_check_t *C, FILE *out)
{
    fprintf(out, "shardproof %s: plan '%s' of model '%s' (%s)\n", SP_VERSION, C->plan->name.str,
            C->model->name.str, C->path);
    fprintf(out, "mesh: ");
    for (int a = 0; a < C->mesh.naxes; a++)
        fprintf(out, "%s%s=%lld", a ? ", " : "", C->mesh.name[a], (long long)C->mesh.size[a]);
    fprintf(out, " (%lld ranks)\n", (long long)C->mesh.nranks);
    fprintf(out, "reduced dims:");
    for (int i = 0; i < C->ndims; i++)
        fprintf(out, " %s=%lld%s", C->dims[i].name, (long long)C->dims[i].red,
                C->dims[i].red != C->dims[i].real ? "" : "");
    fprintf(out, "  (real:");
    for (int i = 0; i < C->ndims; i++)
        fprintf(out, " %s=%lld", C->dims[i].name, (long long)C->dims[i].real);
    fprintf(out, ")\nseed: %llu\n", (unsigned long long)C->opt.seed);
}

/* The source-map origin ('#@ ORIGIN', docs/language.md) of a location's line, or NULL. */
static const char *origin_of(const sp_check_t *C, sp_loc_t l)
{
    if (C->ast == NULL || l.file == NULL || C->ast->file == NULL || strcmp(l.file, C->ast->file))
        return NULL;
    return sp_ast_origin(C->ast, l.line);
}

/* FILE:LINE:COL, followed by " (ORIGIN)" when the line has a source-map comment. */
static void loc_str(const sp_check_t *C, sp_loc_t l, char *buf, size_t len)
{
    const char *o = origin_of(C, l);
    snprintf(buf, len, "%s:%u:%u%s%s%s", l.file ? l.file : "?", l.line, l.col, o ? " (" : "",
             o ? o : "", o ? ")" : "");
}

static void text_report(const sp_check_t *C, FILE *out)
{
    int c[5];
    counts(C, c);
    header(C, out);
    const sp_stage_t *bad = first_bad(C);
    const char *verdict = c[SP_STAGE_FAILED] ? "NOT EQUIVALENT" : c[SP_STAGE_UNKNOWN] ? "UNKNOWN" : "EQUIVALENT";
    int nprob = 0;
    int64_t minbits = 0;
    for (int i = 0; i < C->nstages; i++)
        if (C->stages[i].prob_bits > 0) {
            nprob++;
            if (minbits == 0 || C->stages[i].prob_bits < minbits)
                minbits = C->stages[i].prob_bits;
        }
    fprintf(out, "\n%s\n", verdict);
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
        layout_str(C, &bad->layout, ls, sizeof ls);
        fprintf(out, "\n%s stage %d of %d: plan '%s' ~ model '%s' : %s\n",
                bad->status == SP_STAGE_FAILED ? "first failing" : "first undecided", bad->id + 1,
                C->nstages, bad->plan_name, bad->model_name, ls);
        fprintf(out, "  plan line:   %s\n  model line:  %s\n", pl, ml);
        fprintf(out, "  rank %s%s, element %s of the local %s shard\n", rs,
                bad->layout.npartial ? " (its group's reduction)" : "", ix, sh);
        fprintf(out, "  plan value:  %s\n  model value: %s\n", bad->plan_value ? bad->plan_value : "?",
                bad->model_value ? bad->model_value : "?");
        if (bad->status == SP_STAGE_FAILED) {
            fprintf(out, "  counterexample: %s\n", bad->cex ? bad->cex : "(no symbols)");
            fprintf(out, "  there: %s\n", bad->cex_values ? bad->cex_values : "?");
        } else {
            fprintf(out, "  reason: %s\n", sp_why_name(bad->why));
        }
        int more = c[SP_STAGE_FAILED] - (bad->status == SP_STAGE_FAILED);
        if (more > 0)
            fprintf(out, "  (%d more failing stage%s: --format json lists them)\n", more, more > 1 ? "s" : "");
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

void sp_json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void json_loc(const sp_check_t *C, FILE *out, sp_loc_t l)
{
    const char *o = origin_of(C, l);
    fprintf(out, "{\"file\": ");
    sp_json_str(out, l.file);
    fprintf(out, ", \"line\": %u, \"column\": %u", l.line, l.col);
    if (o) {
        fprintf(out, ", \"origin\": ");
        sp_json_str(out, o);
    }
    fprintf(out, "}");
}

static void json_report(const sp_check_t *C, FILE *out)
{
    int c[5];
    counts(C, c);
    const char *verdict = c[SP_STAGE_FAILED] ? "NOT_EQUIVALENT" : c[SP_STAGE_UNKNOWN] ? "UNKNOWN" : "EQUIVALENT";
    fprintf(out, "{\n  \"tool\": \"shardproof\", \"version\": \"%s\", \"schema\": 1,\n", SP_VERSION);
    fprintf(out, "  \"file\": ");
    sp_json_str(out, C->path);
    fprintf(out, ", \"plan\": ");
    sp_json_str(out, C->plan->name.str);
    fprintf(out, ", \"model\": ");
    sp_json_str(out, C->model->name.str);
    fprintf(out, ",\n  \"verdict\": \"%s\", \"seed\": %llu,\n  \"mesh\": {", verdict,
            (unsigned long long)C->opt.seed);
    for (int a = 0; a < C->mesh.naxes; a++)
        fprintf(out, "%s\"%s\": %lld", a ? ", " : "", C->mesh.name[a], (long long)C->mesh.size[a]);
    fprintf(out, "},\n  \"dims\": [");
    for (int i = 0; i < C->ndims; i++) {
        fprintf(out, "%s{\"name\": ", i ? ", " : "");
        sp_json_str(out, C->dims[i].name);
        fprintf(out, ", \"real\": %lld, \"reduced\": %lld}", (long long)C->dims[i].real,
                (long long)C->dims[i].red);
    }
    fprintf(out, "],\n  \"summary\": {\"stages\": %d, \"proved\": %d, \"memoized\": %d, \"failed\": %d, \"unknown\": %d},\n",
            C->nstages, c[SP_STAGE_PROVED], c[SP_STAGE_MEMO], c[SP_STAGE_FAILED], c[SP_STAGE_UNKNOWN]);
    fprintf(out, "  \"stages\": [\n");
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        char ls[512];
        layout_str(C, &s->layout, ls, sizeof ls);
        fprintf(out, "    {\"id\": %d, \"kind\": \"%s\", \"status\": \"%s\", \"plan_tensor\": ", s->id + 1,
                s->kind == SP_STAGE_OUTPUT ? "output" : "lineage", status_name(s->status));
        sp_json_str(out, s->plan_name);
        fprintf(out, ", \"model_tensor\": ");
        sp_json_str(out, s->model_name);
        fprintf(out, ", \"layout\": ");
        sp_json_str(out, ls);
        fprintf(out, ", \"plan_loc\": ");
        json_loc(C, out, s->plan_loc);
        fprintf(out, ", \"model_loc\": ");
        json_loc(C, out, s->model_loc);
        fprintf(out, ", \"elements\": %lld", (long long)s->elements);
        if (s->prob_bits > 0)
            fprintf(out, ", \"probabilistic_error_bits\": %lld", (long long)s->prob_bits);
        if (s->memo_of >= 0)
            fprintf(out, ", \"memo_of\": %d", s->memo_of + 1);
        if (s->status == SP_STAGE_FAILED || s->status == SP_STAGE_UNKNOWN) {
            char rs[256], ix[128];
            sp_mesh_rank_str(&C->mesh, s->fail_rank, rs, sizeof rs);
            index_str(s, ix, sizeof ix);
            fprintf(out, ", \"rank\": ");
            sp_json_str(out, rs);
            fprintf(out, ", \"element\": ");
            sp_json_str(out, ix);
            fprintf(out, ", \"plan_value\": ");
            sp_json_str(out, s->plan_value);
            fprintf(out, ", \"model_value\": ");
            sp_json_str(out, s->model_value);
            if (s->status == SP_STAGE_FAILED) {
                fprintf(out, ", \"counterexample\": ");
                sp_json_str(out, s->cex);
                fprintf(out, ", \"values\": ");
                sp_json_str(out, s->cex_values);
            } else {
                fprintf(out, ", \"reason\": ");
                sp_json_str(out, sp_why_name(s->why));
            }
        }
        fprintf(out, "}%s\n", i + 1 < C->nstages ? "," : "");
    }
    fprintf(out, "  ]\n}\n");
}

static void sarif_report(const sp_check_t *C, FILE *out)
{
    fprintf(out, "{\"version\": \"2.1.0\", \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\", "
                 "\"runs\": [{\"tool\": {\"driver\": {\"name\": \"shardproof\", \"version\": \"%s\"}}, "
                 "\"results\": [",
            SP_VERSION);
    int first = 1;
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        if (s->status != SP_STAGE_FAILED && s->status != SP_STAGE_UNKNOWN)
            continue;
        char msg[2048];
        snprintf(msg, sizeof msg, "stage %d: plan '%s' differs from model '%s'%s%s", s->id + 1,
                 s->plan_name, s->model_name, s->cex ? "; counterexample: " : "", s->cex ? s->cex : "");
        fprintf(out, "%s{\"ruleId\": \"%s\", \"level\": \"%s\", \"message\": {\"text\": ", first ? "" : ", ",
                s->status == SP_STAGE_FAILED ? "not-equivalent" : "unknown",
                s->status == SP_STAGE_FAILED ? "error" : "warning");
        sp_json_str(out, msg);
        fprintf(out, "}, \"locations\": [{\"physicalLocation\": {\"artifactLocation\": {\"uri\": ");
        sp_json_str(out, s->plan_loc.file);
        fprintf(out, "}, \"region\": {\"startLine\": %u, \"startColumn\": %u}}}]}", s->plan_loc.line,
                s->plan_loc.col);
        first = 0;
    }
    fprintf(out, "]}]}\n");
}

static void junit_report(const sp_check_t *C, FILE *out)
{
    int c[5];
    counts(C, c);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<testsuite name=\"shardproof %s\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n",
            C->plan->name.str, C->nstages, c[SP_STAGE_FAILED], c[SP_STAGE_UNKNOWN]);
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        fprintf(out, "  <testcase classname=\"%s\" name=\"stage %d: %s ~ %s (line %u)\"", C->plan->name.str,
                s->id + 1, s->plan_name, s->model_name, s->plan_loc.line);
        if (s->status == SP_STAGE_FAILED)
            fprintf(out, "><failure message=\"not equivalent\">%s</failure></testcase>\n",
                    s->cex ? s->cex : "");
        else if (s->status == SP_STAGE_UNKNOWN)
            fprintf(out, "><error message=\"%s\"/></testcase>\n", sp_why_name(s->why));
        else
            fprintf(out, "/>\n");
    }
    fprintf(out, "</testsuite>\n");
}

void shardproof_report(const shardproof_t *C, FILE *out, shardproof_format_t fmt)
{
    if (C->plan == NULL)
        return;
    switch (fmt) {
    case SHARDPROOF_FORMAT_JSON: json_report(C, out); break;
    case SHARDPROOF_FORMAT_SARIF: sarif_report(C, out); break;
    case SHARDPROOF_FORMAT_JUNIT: junit_report(C, out); break;
    default: text_report(C, out); break;
    }
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
        layout_str(C, &s->layout, ls, sizeof ls);
        fprintf(out, "  %3d  %-7s %s: plan '%s' ~ model '%s' : %s\n", s->id + 1,
                s->kind == SP_STAGE_OUTPUT ? "output" : "lineage", pl, s->plan_name, s->model_name, ls);
    }
}

void shardproof_dot(const shardproof_t *C, FILE *out)
{
    if (C->plan == NULL)
        return;
    fprintf(out, "digraph shardproof {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n");
    fprintf(out, "  subgraph cluster_model { label=\"model %s\"; color=gray;\n", C->model->name.str);
    for (int i = 0; i < C->nstages; i++)
        fprintf(out, "    m%d [label=\"%s\\nline %u\"];\n", i, C->stages[i].model_name,
                C->stages[i].model_loc.line);
    fprintf(out, "  }\n  subgraph cluster_plan { label=\"plan %s\"; color=gray;\n", C->plan->name.str);
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        const char *color = s->status == SP_STAGE_FAILED ? "red" : s->status == SP_STAGE_UNKNOWN ? "orange"
                          : s->status == SP_STAGE_PENDING ? "black" : "darkgreen";
        fprintf(out, "    p%d [label=\"%d: %s\\nline %u\\n%s\", color=%s%s];\n", i, s->id + 1, s->plan_name,
                s->plan_loc.line, status_name(s->status), color,
                s->status == SP_STAGE_FAILED ? ", penwidth=3, style=filled, fillcolor=mistyrose" : "");
    }
    fprintf(out, "  }\n");
    for (int i = 0; i < C->nstages; i++) {
        fprintf(out, "  p%d -> m%d [style=dashed, arrowhead=none, label=\"~\"];\n", i, i);
        if (i > 0)
            fprintf(out, "  p%d -> p%d [color=gray];\n", i - 1, i);
    }
    fprintf(out, "}\n");
}
