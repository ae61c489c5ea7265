/* dot.c: the Graphviz picture of a check: the dataflow between stages, the failing path marked. */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/shardproof.h"
#include "check.h"
#include "sbuf.h"

/*
 * The picture.  A node per stage, or per family of stages that differ only in array indices
 * (h1[0] ~ h1[0], h1[1] ~ h1[1], ...: the layers) when every member is proved: repeated layers
 * collapse into one node, so hundreds of stages stay a readable picture that dot lays out in
 * seconds.  An edge u -> v when stage v's values (model side, and the plan side of the first and
 * last rank) read the fresh symbols of a cut that stage u relates (the latest lineage stage
 * before v relating that model tensor), or an input.  Clusters: the forward pass, the backward
 * pass (grad.*), the optimizer (next.*).  The first failing (else undecided) stage is filled red,
 * every stage upstream of it (its path) is outlined red.
 */

typedef struct {
    char *key;     /* normalized "plan ~ model" */
    int first;     /* its first stage */
    int n, memo;   /* members, memoized members */
    int collapsed; /* one node for all members */
} family_t;

typedef struct {
    const char *name; /* a lineage stage's model tensor */
    int stage;
} producer_t;

/* name with every bracketed index of digits and commas replaced by [*] (flint_free) */
static char *normalize(const char *name)
{
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    for (const char *p = name; *p;) {
        size_t k = *p == '[' ? strspn(p + 1, "0123456789,") : 0;
        if (k > 0 && p[1 + k] == ']') {
            sp_sbuf_puts(&b, "[*]");
            p += k + 2;
        } else {
            sp_sbuf_putc(&b, *p++);
        }
    }
    return sp_sbuf_take(&b);
}

/* The tensor a symbol belongs to, and whether it is a cut's fresh symbol: "h[0]@3[1,2]" is cut
   h[0], "y.part0@3[0,0]" cut y, "x.part0#3[0,0]" (a partial input's part) input x,
   "wq[0][1,2]" input wq[0], "lr" input lr (flint_free). */
static char *symbol_source(const char *sym, int *is_cut)
{
    const char *at = strchr(sym, '@');
    size_t n;
    *is_cut = at != NULL;
    if (at == NULL)
        at = strchr(sym, '#');
    if (at) {
        n = (size_t)(at - sym);
        const char *part = NULL;
        for (const char *p = sym; p + 5 <= at; p++)
            if (!strncmp(p, ".part", 5) && p + 5 < at && strspn(p + 5, "0123456789") == (size_t)(at - p - 5))
                part = p;
        if (part)
            n = (size_t)(part - sym);
    } else {
        n = strlen(sym);
        const char *lb = strrchr(sym, '[');
        if (n > 0 && sym[n - 1] == ']' && lb && strspn(lb + 1, "0123456789,") == n - 2 - (size_t)(lb - sym))
            n = (size_t)(lb - sym);
    }
    return sp_strndup(sym, n);
}

static int cmp_producer(const void *a, const void *b)
{
    const producer_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->stage > y->stage) - (x->stage < y->stage);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The latest lineage stage before stage `before` that relates model tensor name, or -1. */
static int producer_of(const producer_t *P, int n, const char *name, int before)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(P[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int best = -1;
    for (int k = lo; k < n && !strcmp(P[k].name, name) && P[k].stage < before; k++)
        best = P[k].stage;
    return best;
}

/* The distinct symbol sources of stage s, sorted: cuts as "@name", inputs as "name". */
static char **stage_sources(const sp_check_t *C, const sp_stage_t *s, int *count)
{
    const sp_ectx_struct *E = C->E;
    sp_expr_t *roots = NULL;
    size_t nroots = 0, cap = 0;
    const sp_tensor_t *sides[3] = {&s->model, NULL, NULL};
    if (s->plan && s->nranks > 0) {
        sides[1] = &s->plan[0];
        sides[2] = &s->plan[s->nranks - 1];
    }
    for (int k = 0; k < 3; k++) {
        const sp_tensor_t *t = sides[k];
        if (t == NULL || t->ndim < 0 || t->v == NULL)
            continue;
        int64_t m = sp_tensor_numel(t);
        for (int64_t e = 0; e < m; e++) {
            if (t->v[e] == SP_EXPR_NONE || t->v[e] >= E->len)
                continue;
            if (nroots == cap) {
                cap = cap ? 2 * cap : 64;
                roots = flint_realloc(roots, cap * sizeof(sp_expr_t));
            }
            roots[nroots++] = t->v[e];
        }
    }
    uint32_t *cone = NULL;
    size_t nc = nroots ? sp_expr_cone(E, roots, nroots, &cone) : 0;
    flint_free(roots);
    char **src = NULL;
    int n = 0, acap = 0;
    for (size_t i = 0; i < nc; i++) {
        if (sp_expr_op(E, cone[i]) != SP_OP_SYM)
            continue;
        int cut;
        char *name = symbol_source(sp_expr_sym_name(E, cone[i]), &cut);
        if (n == acap) {
            acap = acap ? 2 * acap : 16;
            src = flint_realloc(src, (size_t)acap * sizeof(char *));
        }
        sp_sbuf_t b;
        sp_sbuf_init(&b);
        sp_sbuf_printf(&b, "%s%s", cut ? "@" : "", name);
        src[n++] = sp_sbuf_take(&b);
        flint_free(name);
    }
    flint_free(cone);
    if (n > 1)
        qsort(src, (size_t)n, sizeof(char *), cmp_str);
    int u = 0;
    for (int i = 0; i < n; i++) {
        if (u > 0 && !strcmp(src[u - 1], src[i]))
            flint_free(src[i]);
        else
            src[u++] = src[i];
    }
    *count = u;
    return src;
}

static void dot_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", out);
            continue;
        }
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
    }
    fputc('"', out);
}

static int phase_of(const char *model)
{
    return !strncmp(model, "next.", 5) ? 2 : !strncmp(model, "grad.", 5) ? 1 : 0;
}

void shardproof_dot(const shardproof_t *C, FILE *out)
{
    if (C->plan == NULL)
        return;
    int n = C->nstages;
    int *fam_of = flint_calloc((size_t)(n ? n : 1), sizeof(int));
    family_t *F = flint_calloc((size_t)(n ? n : 1), sizeof(family_t));
    int nf = 0, bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (C->stages[i].status == SP_STAGE_FAILED)
            bad = i;
    for (int i = 0; i < n && bad < 0; i++)
        if (C->stages[i].status == SP_STAGE_UNKNOWN)
            bad = i;
    /* families of stages equal up to array indices */
    for (int i = 0; i < n; i++) {
        const sp_stage_t *s = &C->stages[i];
        char *a = normalize(s->plan_name), *b = normalize(s->model_name);
        sp_sbuf_t k;
        sp_sbuf_init(&k);
        sp_sbuf_printf(&k, "%s ~ %s", a, b);
        char *key = sp_sbuf_take(&k);
        flint_free(a);
        flint_free(b);
        int f = 0;
        while (f < nf && strcmp(F[f].key, key) != 0)
            f++;
        if (f == nf) {
            F[nf].key = key;
            F[nf].first = i;
            F[nf].collapsed = 1;
            nf++;
        } else {
            flint_free(key);
        }
        fam_of[i] = f;
        F[f].n++;
        F[f].memo += s->status == SP_STAGE_MEMO;
        if (s->status == SP_STAGE_FAILED || s->status == SP_STAGE_UNKNOWN)
            F[f].collapsed = 0;
    }
    for (int f = 0; f < nf; f++)
        F[f].collapsed = F[f].collapsed && F[f].n > 1;
    /* a node id per stage: its family's when collapsed */
    int *node = flint_calloc((size_t)(n ? n : 1), sizeof(int));
    for (int i = 0; i < n; i++)
        node[i] = F[fam_of[i]].collapsed ? F[fam_of[i]].first : i;
    /* producers of cut tensors, and the edges */
    producer_t *P = flint_calloc((size_t)(n ? n : 1), sizeof(producer_t));
    int np = 0;
    for (int i = 0; i < n; i++)
        if (C->stages[i].kind == SP_STAGE_LINEAGE) {
            P[np].name = C->stages[i].model_name;
            P[np++].stage = i;
        }
    qsort(P, (size_t)np, sizeof(producer_t), cmp_producer);
    uint64_t *edges = NULL; /* from << 32 | to, stage node ids; inputs from n + input index */
    size_t ne = 0, ecap = 0;
    char **inputs = NULL;   /* normalized input names, in order of first use */
    int ni = 0, icap = 0;
    for (int i = 0; i < n; i++) {
        int ns;
        char **src = stage_sources(C, &C->stages[i], &ns);
        for (int k = 0; k < ns; k++) {
            int from = -1;
            if (src[k][0] == '@')
                from = producer_of(P, np, src[k] + 1, i);
            if (from >= 0) {
                from = node[from];
            } else {
                char *nm = normalize(src[k][0] == '@' ? src[k] + 1 : src[k]);
                int j = 0;
                while (j < ni && strcmp(inputs[j], nm) != 0)
                    j++;
                if (j == ni) {
                    if (ni == icap) {
                        icap = icap ? 2 * icap : 16;
                        inputs = flint_realloc(inputs, (size_t)icap * sizeof(char *));
                    }
                    inputs[ni++] = nm;
                } else {
                    flint_free(nm);
                }
                from = n + j;
            }
            if (from != node[i]) {
                if (ne == ecap) {
                    ecap = ecap ? 2 * ecap : 256;
                    edges = flint_realloc(edges, ecap * sizeof(uint64_t));
                }
                edges[ne++] = (uint64_t)from << 32 | (uint64_t)(uint32_t)node[i];
            }
            flint_free(src[k]);
        }
        flint_free(src);
    }
    if (ne > 1)
        qsort(edges, ne, sizeof(uint64_t), cmp_u64);
    size_t ue = 0;
    for (size_t e = 0; e < ne; e++)
        if (ue == 0 || edges[ue - 1] != edges[e])
            edges[ue++] = edges[e];
    ne = ue;
    /* the failing stage's path: every node upstream of it */
    uint8_t *path = flint_calloc((size_t)(n + ni + 1), 1);
    if (bad >= 0) {
        path[node[bad]] = 1;
        for (int changed = 1; changed;) {
            changed = 0;
            for (size_t e = ne; e-- > 0;) {
                int from = (int)(edges[e] >> 32), to = (int)(edges[e] & 0xffffffffu);
                if (path[to] && !path[from])
                    path[from] = changed = 1;
            }
        }
    }
    fprintf(out, "digraph shardproof {\n  rankdir=LR;\n  newrank=true;\n"
                 "  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
                 "  edge [color=gray40];\n  label=");
    sp_sbuf_t t;
    sp_sbuf_init(&t);
    sp_sbuf_printf(&t, "plan %s of model %s (%s): %d stages", C->plan->name.str,
                   C->model->name.str, C->path, n);
    if (bad >= 0)
        sp_sbuf_printf(&t, "; stage %d %s", bad + 1,
                       C->stages[bad].status == SP_STAGE_FAILED ? "fails" : "is undecided");
    dot_str(out, t.s);
    sp_sbuf_clear(&t);
    fprintf(out, ";\n  labelloc=t;\n");
    static const char *const phase[] = {"forward", "backward (grad.*)", "optimizer (next.*)"};
    for (int ph = 0; ph < 3; ph++) {
        int any = 0;
        for (int i = 0; i < n; i++) {
            const sp_stage_t *s = &C->stages[i];
            if (node[i] != i || phase_of(s->model_name) != ph)
                continue;
            if (!any)
                fprintf(out, "  subgraph cluster_%d {\n    label=\"%s\"; color=gray70;\n", ph,
                        phase[ph]);
            any = 1;
            const family_t *f = &F[fam_of[i]];
            sp_sbuf_t lb;
            sp_sbuf_init(&lb);
            if (f->collapsed)
                sp_sbuf_printf(&lb, "%s\n%d stages (%d memoized), first line %u", f->key, f->n,
                               f->memo, s->plan_loc.line);
            else
                sp_sbuf_printf(&lb, "%d: %s ~ %s\nline %u, %s", s->id + 1, s->plan_name,
                               s->model_name, s->plan_loc.line,
                               shardproof_stage_status_name((shardproof_stage_status_t)s->status));
            fprintf(out, "    n%d [label=", i);
            dot_str(out, lb.s);
            sp_sbuf_clear(&lb);
            const char *color = s->status == SP_STAGE_FAILED    ? "red"
                                : s->status == SP_STAGE_UNKNOWN ? "orange"
                                : s->status == SP_STAGE_PENDING ? "black"
                                                                : "darkgreen";
            if (i == bad)
                fprintf(out, ", color=%s, penwidth=3, style=filled, fillcolor=mistyrose", color);
            else if (path[i])
                fprintf(out, ", color=red, penwidth=2");
            else
                fprintf(out, ", color=%s", color);
            if (f->collapsed)
                fprintf(out, ", peripheries=2");
            fprintf(out, "];\n");
        }
        if (any)
            fprintf(out, "  }\n");
    }
    for (int j = 0; j < ni; j++) {
        fprintf(out, "  n%d [shape=plaintext, fontcolor=gray30, label=", n + j);
        dot_str(out, inputs[j]);
        fprintf(out, "%s];\n", path[n + j] ? ", fontcolor=red" : "");
    }
    for (size_t e = 0; e < ne; e++) {
        int from = (int)(edges[e] >> 32), to = (int)(edges[e] & 0xffffffffu);
        fprintf(out, "  n%d -> n%d%s;\n", from, to,
                path[from] && path[to] ? " [color=red, penwidth=2]" : "");
    }
    fprintf(out, "}\n");
    for (int j = 0; j < ni; j++)
        flint_free(inputs[j]);
    flint_free(inputs);
    for (int f = 0; f < nf; f++)
        flint_free(F[f].key);
    flint_free(F);
    flint_free(fam_of);
    flint_free(node);
    flint_free(P);
    flint_free(edges);
    flint_free(path);
}
