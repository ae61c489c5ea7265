/* cli_gen.c: the `shardproof gen` subcommand. */
#include <errno.h>
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

static void gen_usage(FILE *f)
{
    fprintf(
        f,
        "usage: shardproof gen llama3|deepseek3 [options] [-o OUT]\n"
        "       shardproof gen llama3|deepseek3 --bug list\n"
        "       shardproof gen llama3 --variant list\n"
        "\n"
        "Writes a .sp file (dims, the model trained with SGD or Adam, one plan) for the given\n"
        "parallelism; see docs/workloads.md.\n"
        "\n"
        "model:     --preset NAME (llama3: 8b 70b 405b; deepseek3: 16b 236b 671b)  --layers N\n"
        "           --batch N  --optim sgd|adam  --clip C  --loss-mask  --label-smoothing E\n"
        "           --tied  --freeze NAME,...  --score softmax|sigmoid (deepseek3 router)\n"
        "parallel:  --dp N  --tp N  --sp  --cp N  --cp-algo allgather|ring  --pp N  --vpp N\n"
        "           --partition N,N,...  --nm N | --grad-accum N  --schedule gpipe|1f1b\n"
        "           --zero 0|1|2|3  --ep N (deepseek3)\n"
        "checks:    --bug NAME (plants a bug; the file starts with its expected verdict and line)\n"
        "           --variant NAME (a performance-only change that must verify EQUIVALENT)\n");
}

/* a positive integer option value */
static int int_arg(const char *opt, const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v > 100000) {
        fprintf(stderr, "shardproof: error: %s expects a positive integer, got '%s'\n", opt, s);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int sp_gen_main(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        gen_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    int ds = strcmp(argv[0], "deepseek3") == 0;
    if (strcmp(argv[0], "llama3") != 0 && !ds) {
        fprintf(stderr, "shardproof: error: unknown model family '%s' (llama3, deepseek3)\n",
                argv[0]);
        return 2;
    }
    sp_gen_opts_t o;
    sp_gen_opts_init(&o);
    const char *outpath = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (strcmp(a, "--sp") == 0) {
            o.sp = 1;
            continue;
        }
        if (strcmp(a, "--loss-mask") == 0) {
            o.loss_mask = 1;
            continue;
        }
        if (strcmp(a, "--tied") == 0) {
            o.tied = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            gen_usage(stdout);
            return 0;
        }
        const char *known[] = {"--preset",     "--dp",        "--tp",       "--pp",
                               "--nm",         "--layers",    "--batch",    "--optim",
                               "--bug",        "--variant",   "--zero",     "--clip",
                               "--cp",         "--ep",        "--score",    "--vpp",
                               "--grad-accum", "--partition", "--schedule", "--label-smoothing",
                               "--freeze",     "--cp-algo",   "-o",         NULL};
        int k;
        for (k = 0; known[k] && strcmp(known[k], a) != 0; k++)
            ;
        if (!known[k]) {
            fprintf(stderr, "shardproof: error: unknown option '%s'\n", a);
            gen_usage(stderr);
            return 2;
        }
        if (!has_val) {
            fprintf(stderr, "shardproof: error: %s needs a value\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int ok = 1;
        if (strcmp(a, "--preset") == 0)
            o.preset = v;
        else if (strcmp(a, "--dp") == 0)
            ok = int_arg(a, v, &o.dp);
        else if (strcmp(a, "--tp") == 0)
            ok = int_arg(a, v, &o.tp);
        else if (strcmp(a, "--pp") == 0)
            ok = int_arg(a, v, &o.pp);
        else if (strcmp(a, "--nm") == 0)
            ok = int_arg(a, v, &o.nm);
        else if (strcmp(a, "--layers") == 0)
            ok = int_arg(a, v, &o.layers);
        else if (strcmp(a, "--batch") == 0)
            ok = int_arg(a, v, &o.batch);
        else if (strcmp(a, "--optim") == 0)
            o.optim = v;
        else if (strcmp(a, "--bug") == 0)
            o.bug = v;
        else if (strcmp(a, "--variant") == 0)
            o.variant = v;
        else if (strcmp(a, "--ep") == 0)
            ok = int_arg(a, v, &o.ep);
        else if (strcmp(a, "--score") == 0)
            o.score = v;
        else if (strcmp(a, "--cp") == 0)
            ok = int_arg(a, v, &o.cp);
        else if (strcmp(a, "--vpp") == 0)
            ok = int_arg(a, v, &o.vpp);
        else if (strcmp(a, "--grad-accum") == 0)
            ok = int_arg(a, v, &o.grad_accum);
        else if (strcmp(a, "--partition") == 0)
            o.partition = v;
        else if (strcmp(a, "--schedule") == 0)
            o.schedule = v;
        else if (strcmp(a, "--cp-algo") == 0)
            o.cp_algo = v;
        else if (strcmp(a, "--label-smoothing") == 0)
            o.label_smoothing = v;
        else if (strcmp(a, "--freeze") == 0)
            o.freeze = v;
        else if (strcmp(a, "--clip") == 0)
            o.clip = v;
        else if (strcmp(a, "--zero") == 0) {
            if (strlen(v) != 1 || v[0] < '0' || v[0] > '3') {
                fprintf(stderr, "shardproof: error: --zero expects 0, 1, 2 or 3, got '%s'\n", v);
                return 2;
            }
            o.zero = v[0] - '0';
        } else
            outpath = v;
        if (!ok)
            return 2;
    }
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
