/* cli_gen.c: the `shardproof gen` subcommand. */
#include <errno.h>
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "cli.h"

enum {
    G_PRESET = 1, G_LAYERS, G_BATCH, G_OPTIM, G_CLIP, G_LOSS_MASK, G_LABEL_SMOOTHING, G_TIED,
    G_FREEZE, G_LINEAGE, G_SCORE, G_DP, G_TP, G_SP, G_CP, G_CP_ALGO, G_PP, G_VPP, G_PARTITION, G_NM,
    G_MB_AXIS, G_GRAD_ACCUM, G_SCHEDULE, G_ZERO, G_EP, G_BUG, G_VARIANT, G_OUTPUT
};

#define G SP_CMD_GEN

const sp_opt_t sp_gen_opts[] = {
    {G_PRESET, "--preset", NULL, SP_ARG_ONE, "NAME", G, 0,
     "the model's sizes: llama3 8b, 70b, 405b; deepseek3 16b, 236b, 671b (default: the first)"},
    {G_LAYERS, "--layers", NULL, SP_ARG_ONE, "N", G, 0, "layers (default: the preset's)"},
    {G_BATCH, "--batch", NULL, SP_ARG_ONE, "N", G, 0,
     "global batch in sequences (default 2 * dp * nm)"},
    {G_OPTIM, "--optim", NULL, SP_ARG_ONE, "sgd|adam", G, 0, "the optimizer (default sgd)"},
    {G_CLIP, "--clip", NULL, SP_ARG_ONE, "C", G, 0, "gradient-norm clipping at C (a number)"},
    {G_LOSS_MASK, "--loss-mask", NULL, SP_ARG_NONE, NULL, G, 0,
     "a loss-mask input: the mean over the unmasked tokens"},
    {G_LABEL_SMOOTHING, "--label-smoothing", NULL, SP_ARG_ONE, "E", G, 0,
     "cross-entropy label smoothing E in [0, 1)"},
    {G_TIED, "--tied", NULL, SP_ARG_NONE, NULL, G, 0,
     "tied embeddings: the LM head is the embedding transposed"},
    {G_FREEZE, "--freeze", NULL, SP_ARG_ONE, "NAME,...", G, 0, "frozen parameters"},
    {G_LINEAGE, "--lineage", NULL, SP_ARG_ONE, "all|none", G, 0,
     "all (default): a lineage cut on nearly every plan tensor; none: only the inputs' layouts "
     "and the outputs (the plan a user without lineage expertise writes)"},
    {G_SCORE, "--score", NULL, SP_ARG_ONE, "softmax|sigmoid", G, 0,
     "deepseek3: the router's scores (default softmax)"},
    {G_DP, "--dp", NULL, SP_ARG_ONE, "N", G, 0, "data parallel ranks"},
    {G_TP, "--tp", NULL, SP_ARG_ONE, "N", G, 0, "tensor parallel ranks"},
    {G_SP, "--sp", NULL, SP_ARG_NONE, NULL, G, 0, "sequence parallel (needs --tp > 1)"},
    {G_CP, "--cp", NULL, SP_ARG_ONE, "N", G, 0, "context parallel ranks"},
    {G_CP_ALGO, "--cp-algo", NULL, SP_ARG_ONE, "allgather|ring", G, 0,
     "context-parallel attention (default allgather)"},
    {G_PP, "--pp", NULL, SP_ARG_ONE, "N", G, 0, "pipeline stages"},
    {G_VPP, "--vpp", NULL, SP_ARG_ONE, "N", G, 0,
     "virtual pipeline chunks per stage (interleaved)"},
    {G_PARTITION, "--partition", NULL, SP_ARG_ONE, "N,N,...", G, 0,
     "layers per pipeline chunk (default: as even as possible)"},
    {G_NM, "--nm", NULL, SP_ARG_ONE, "N", G, 0,
     "micro-batches (with --pp 1: gradient accumulation)"},
    {G_MB_AXIS, "--mb-axis", NULL, SP_ARG_NONE, NULL, G, 0,
     "micro-batches as a mesh axis mb (virtual ranks, as TrainVerify's plans) instead of a "
     "loop over row chunks"},
    {G_GRAD_ACCUM, "--grad-accum", NULL, SP_ARG_ONE, "N", G, 0,
     "gradient-accumulation steps (sets --nm)"},
    {G_SCHEDULE, "--schedule", NULL, SP_ARG_ONE, "gpipe|1f1b", G, 0,
     "pipeline schedule (default gpipe)"},
    {G_ZERO, "--zero", NULL, SP_ARG_ONE, "0|1|2|3", G, 0,
     "ZeRO stage over dp (needs --dp > 1 and --optim adam when > 0)"},
    {G_EP, "--ep", NULL, SP_ARG_ONE, "N", G, 0, "deepseek3: expert parallel ranks"},
    {G_BUG, "--bug", NULL, SP_ARG_ONE, "NAME|list", G, 0,
     "plant a bug (the file starts with its expected verdict and line); list: the bugs"},
    {G_VARIANT, "--variant", NULL, SP_ARG_ONE, "NAME|list", G, 0,
     "a performance-only change that must verify EQUIVALENT; list: the variants"},
    {G_OUTPUT, "--output", "-o", SP_ARG_ONE, "OUT", G, 0,
     "write the file to OUT (default standard output)"},
    {0, NULL, NULL, SP_ARG_NONE, NULL, 0, 0, NULL}};

#undef G

/* a positive integer option value */
static int int_arg(sp_args_t *A, const sp_arg_t *a, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(a->val[0], &end, 10);
    if (errno || *end || end == a->val[0] || v < 1 || v > 100000) {
        sp_args_error(A, "%s expects a positive integer, got '%s'", a->opt->name, a->val[0]);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int sp_gen_main(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    sp_gen_opts_t o;
    sp_gen_opts_init(&o);
    const char *outpath = NULL, *family = NULL;
    int npos = 0;
    for (int i = 0; i < A.n; i++) {
        const sp_arg_t *a = &A.a[i];
        const char *v = a->val[0];
        if (a->opt == NULL) {
            if (npos++ == 0)
                family = v;
            else if (A.nerr == 0)
                sp_args_error(&A, "unexpected argument '%s'", v);
            continue;
        }
        switch (a->opt->id) {
        case G_PRESET: o.preset = v; break;
        case G_LAYERS: int_arg(&A, a, &o.layers); break;
        case G_BATCH: int_arg(&A, a, &o.batch); break;
        case G_OPTIM: o.optim = v; break;
        case G_CLIP: o.clip = v; break;
        case G_LOSS_MASK: o.loss_mask = 1; break;
        case G_LABEL_SMOOTHING: o.label_smoothing = v; break;
        case G_TIED: o.tied = 1; break;
        case G_FREEZE: o.freeze = v; break;
        case G_LINEAGE:
            if (!strcmp(v, "none"))
                o.no_lineage = 1;
            else if (strcmp(v, "all"))
                sp_args_error(&A, "--lineage expects all or none, got '%s'", v);
            break;
        case G_SCORE: o.score = v; break;
        case G_DP: int_arg(&A, a, &o.dp); break;
        case G_TP: int_arg(&A, a, &o.tp); break;
        case G_SP: o.sp = 1; break;
        case G_CP: int_arg(&A, a, &o.cp); break;
        case G_CP_ALGO: o.cp_algo = v; break;
        case G_PP: int_arg(&A, a, &o.pp); break;
        case G_VPP: int_arg(&A, a, &o.vpp); break;
        case G_PARTITION: o.partition = v; break;
        case G_NM: int_arg(&A, a, &o.nm); break;
        case G_GRAD_ACCUM: int_arg(&A, a, &o.grad_accum); break;
        case G_MB_AXIS: o.mb_axis = 1; break;
        case G_SCHEDULE: o.schedule = v; break;
        case G_ZERO:
            if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
                sp_args_error(&A, "--zero expects 0, 1, 2 or 3, got '%s'", v);
            else
                o.zero = v[0] - '0';
            break;
        case G_EP: int_arg(&A, a, &o.ep); break;
        case G_BUG: o.bug = v; break;
        case G_VARIANT: o.variant = v; break;
        case G_OUTPUT: outpath = v; break;
        default: break;
        }
    }
    int ds = family && strcmp(family, "deepseek3") == 0;
    if (A.nerr == 0 && family == NULL)
        sp_args_error(&A, "gen needs a model family (llama3, deepseek3)");
    else if (A.nerr == 0 && strcmp(family, "llama3") != 0 && !ds)
        sp_args_error(&A, "unknown model family '%s' (llama3, deepseek3)", family);
    int bad = sp_args_report(cmd, &A, stderr);
    sp_args_clear(&A);
    if (bad)
        return 2;
    if ((o.bug && strcmp(o.bug, "list") == 0) || (o.variant && strcmp(o.variant, "list") == 0)) {
        const sp_gen_bug_t *l =
            o.bug ? (ds ? sp_gen_deepseek3_bugs : sp_gen_llama3_bugs) : sp_gen_llama3_variants;
        if (ds && !o.bug)
            return 0; /* deepseek3 has no variants yet */
        for (int i = 0; l[i].name; i++)
            printf("%-26s %s%s%s%s\n", l[i].name, l[i].what, l[i].needs[0] ? " (needs " : "",
                   l[i].needs, l[i].needs[0] ? ")" : "");
        return 0;
    }
    if (outpath && strcmp(outpath, "-") != 0) {
        const char *base = strrchr(outpath, '/');
        o.file = base ? base + 1 : outpath;
    }
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    char err[256];
    if ((ds ? sp_gen_deepseek3 : sp_gen_llama3)(&b, &o, err, sizeof err) < 0) {
        fprintf(stderr, "shardproof: error: %s\n", err);
        sp_sbuf_clear(&b);
        return 2;
    }
    FILE *f = stdout;
    if (outpath && strcmp(outpath, "-") != 0) {
        f = fopen(outpath, "w");
        if (!f) {
            fprintf(stderr, "shardproof: error: cannot write '%s': %s\n", outpath, strerror(errno));
            sp_sbuf_clear(&b);
            return 2;
        }
    }
    int rc = 0;
    if (fwrite(b.s, 1, b.len, f) != b.len)
        rc = 2;
    if (f != stdout) {
        if (fclose(f) != 0)
            rc = 2;
    } else if (fflush(f) != 0) {
        rc = 2;
    }
    if (rc)
        fprintf(stderr, "shardproof: error: writing the output failed\n");
    sp_sbuf_clear(&b);
    return rc;
}
