/* gen.h: generators of model + plan text for built-in workload families (shardproof gen). */
#ifndef SP_GEN_H
#define SP_GEN_H

#include <stddef.h>

#include "args.h"
#include "sbuf.h"

/*
 * What to generate.  Every count is at least 1; sp needs tp > 1; nm > 1 means micro-batches
 * (with pp > 1: a pipeline; with pp = 1: gradient accumulation).  layers = 0 and batch = 0 take
 * the preset's layer count and the default global batch (2 * dp * nm sequences).  bug = NULL
 * gives the correct plan; otherwise one of sp_gen_llama3_bugs.
 */
typedef struct {
    const char *preset; /* a family preset ("8b"; NULL: the first) */
    int dp, tp, sp, pp, nm;
    int cp;            /* context parallel (0 or 1: none) */
    int ep;            /* expert parallel, MoE families (0 or 1: none) */
    const char *score; /* MoE router scores: "softmax" (NULL) or "sigmoid" */
    int layers;
    int batch;
    const char *optim;           /* "sgd" or "adam" */
    int vpp;                     /* virtual pipeline stages (interleaved chunks) per stage, >= 1 */
    int grad_accum;              /* gradient-accumulation steps: sets nm (0: not given) */
    int mb_axis;                 /* micro-batches as a mesh axis mb (virtual ranks whose
                                    gradients are summed) instead of a loop over row chunks */
    const char *partition;       /* layers per chunk, "1,3" (NULL: as even as possible) */
    const char *schedule;        /* "gpipe" (NULL: gpipe) or "1f1b" */
    const char *cp_algo;         /* context parallel: "allgather" (NULL) or "ring" */
    int loss_mask;               /* a loss mask input (mean over the unmasked tokens) */
    const char *label_smoothing; /* a number literal in [0, 1), NULL for none */
    int tied;                    /* tied embeddings: the LM head is emb transposed */
    const char *freeze;          /* frozen parameters, "wout,wq" (NULL: none) */
    int zero;                    /* ZeRO stage 0..3 over dp (needs dp > 1 and adam when > 0) */
    const char *clip; /* grad-norm clipping threshold as a number literal, NULL for none */
    const char *bug;
    const char *file;    /* the output's name in an expected diagnostic (NULL: "<stdin>") */
    const char *variant; /* a harmless variant (sp_gen_llama3_variants), NULL for none */
    int no_lineage;      /* --lineage none: only inputs' layouts and outputs are annotated, no
                            intermediate cut (for lineage inference, issue 15) */
} sp_gen_opts_t;

void sp_gen_opts_init(sp_gen_opts_t *o);

/* A bug the generator can plant: its name, what it changes, and what it needs. */
typedef struct {
    const char *name;
    const char *what;
    const char *needs;
} sp_gen_bug_t;

/* The llama3 family's bugs, terminated by an entry with name NULL. */
extern const sp_gen_bug_t sp_gen_llama3_bugs[];

/* The deepseek3 family's bugs. */
extern const sp_gen_bug_t sp_gen_deepseek3_bugs[];

/* The deepseek3 family (MoE): as sp_gen_llama3. */
int sp_gen_deepseek3(sp_sbuf_t *out, const sp_gen_opts_t *o, char *err, size_t errlen);

/* The llama3 family's harmless (performance-only) variants: they must verify EQUIVALENT. */
extern const sp_gen_bug_t sp_gen_llama3_variants[];

/*
 * Append the complete .sp text of the llama3 family (dims, the model with its optimizer, one
 * plan) for the options to out.  With a bug, the text starts with two comment lines, the second
 * "# expect: NOT EQUIVALENT at line N" (N the plan line shardproof reports).  Returns 0, or -1
 * with a one-line message in err for options that make no plan (nothing is appended then).
 */
int sp_gen_llama3(sp_sbuf_t *out, const sp_gen_opts_t *o, char *err, size_t errlen);

/*
 * `shardproof gen FAMILY [options]`: argv[0] is the family (argv as main's argv + 2).  Writes
 * the text to standard output or to -o FILE.  Returns the process exit code (0, or 2 for bad
 * usage).
 */
int sp_gen_main(const sp_cmd_t *cmd, int argc, char **argv);

/* gen's option table (cmds bit SP_CMD_GEN). */
extern const sp_opt_t sp_gen_opts[];

#endif
