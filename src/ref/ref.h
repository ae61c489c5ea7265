/* ref.h: the reference executor: runs a model and every rank of a plan on concrete exact values. */
#ifndef SP_REF_H
#define SP_REF_H

#include <stdint.h>
#include <stdio.h>

#include <flint/fmpq.h>

#include "args.h"
#include "diag.h"
#include "parse.h"

/*
 * A second, deliberately small interpreter of the plan language, independent of the checker
 * (src/exec.c, autodiff.c, lineage.c, plan.c, ops.c, mesh.c, stage.c, reduce.c): it shares only
 * the parser and diagnostics.
 * It runs the model (with a scalar reverse-mode tape for `train`) and the plan on every rank of
 * the mesh, one thread per rank with real message passing, at the real sizes (or --dims), on
 * seeded random rational inputs, and compares every element of every plan output with the
 * model.  Values are exact rationals while every operation is rational, Arb balls after a
 * transcendental one; undecidable comparisons, undefined operations (x/0, log of x <= 0) and
 * convention-dependent derivatives are taints, never guesses.  docs/reference-executor.md.
 */

/*
 * Input values: entry i sets element index[i] (row-major, flat) of the model input, parameter
 * or optimizer-state tensor name[i] ("x", "wq[0]", "adam.m.w") to val[i].  Normal form: none
 * (entries in the order added; a later entry for the same element wins).  Owned by the struct.
 */
typedef struct {
    char **name;
    int64_t *index;
    fmpq *val;
    size_t n, alloc;
} sp_ref_inputs_struct;
typedef sp_ref_inputs_struct sp_ref_inputs_t[1];

void sp_ref_inputs_init(sp_ref_inputs_t in);
void sp_ref_inputs_clear(sp_ref_inputs_t in);
/* Append one entry (copies name and value).  Returns 0, or -1 if out of memory. */
int sp_ref_inputs_add(sp_ref_inputs_t in, const char *name, int64_t index, const fmpq_t v);
/* Lines "NAME[INDEX] = VALUE" (VALUE an exact rational p/q, '#' comments); the format printed by
   sp_ref_inputs_print.  Returns 0, or -1 with a message "line N: ..." in err. */
int sp_ref_inputs_parse(sp_ref_inputs_t in, const char *text, char *err, size_t errlen);
void sp_ref_inputs_print(FILE *out, const sp_ref_inputs_t in);

/*
 * An observed value (opts.observe): a plan assignment on one rank, or a model tensor at the end
 * of the model's run, as approximate doubles (NaN for a tainted or undecided value).  For the
 * checker's lineage proposals only (src/infer.c), which the checker then proves exactly: no
 * verdict depends on these numbers.
 */
typedef struct {
    const sp_ast_stmt_t *stmt; /* plan: the single-target assignment without lineage; model: NULL */
    char *name;                /* model: the tensor ("x[0]", "grad.h"); plan: the target */
    int occ;                   /* plan: earlier executions of stmt on this rank */
    int nd;
    int64_t sh[8];
    double *v;                 /* row-major */
    int64_t *in;               /* plan: the observations it read (its operands, a message's
                                  sender included), as SP_REF_OBS_ID(rank, index) */
    int nin;
    int used;                  /* plan: read by a statement that is no assignment (a send) */
    unsigned out_line;         /* plan: the line of the first output statement that read it */
    int64_t clock;             /* plan: the rank's logical clock (messages and collectives
                                  carry it), larger than the clock of anything it depends on */
} sp_ref_obs_t;

#define SP_REF_OBS_ID(rank, idx) (((int64_t)(rank) << 32) | (int64_t)(idx))
#define SP_REF_OBS_RANK(id) ((id) >> 32)
#define SP_REF_OBS_IDX(id) ((id) & 0xffffffff)

typedef struct {
    sp_ref_obs_t *o;
    size_t n, cap;
} sp_ref_obs_list_t;

void sp_ref_obs_list_clear(sp_ref_obs_list_t *l);

/* A dim override NAME=VALUE (the form of --dims). */
typedef struct {
    const char *name;
    int64_t value;
} sp_ref_dim_t;

typedef struct {
    const char *plan;          /* NULL: the file's only plan */
    const sp_ref_dim_t *dims;  /* overrides of dim sizes (derived dims follow) */
    size_t ndims;
    const sp_ref_dim_t *mesh;  /* overrides of mesh axis sizes (the checker's mesh cutoff) */
    size_t nmesh;
    uint64_t seed;             /* the random inputs and partial decompositions; default 1 */
    int64_t max_elements;      /* per tensor; default 2^20 */
    int max_ranks;             /* mesh size; default 256 */
    int64_t max_mem_mb;        /* scalar nodes of all stores together; default 4096 MiB */
    long prec;                 /* Arb precision in bits; default 256 */
    long max_prec;             /* escalate up to this when a comparison is undecided; default 1024 */
    const sp_ref_inputs_struct *inputs; /* caller-given values (win over the random ones), or NULL */
    int observe;               /* keep every model tensor and plan assignment (result.obs_*) */
    int real_values;           /* with dims: sizes used as values (a size in a tensor expression
                                  or a value attribute, an operator's count) take the file's
                                  sizes, shapes the overrides (the checker's program at its
                                  checked sizes: docs/reference-executor.md) */
} sp_ref_opts_t;

void sp_ref_opts_default(sp_ref_opts_t *o);

typedef enum {
    SP_REF_AGREE = 0,   /* every compared element equal, exactly */
    SP_REF_DIFFER,      /* a certified difference (value, plan undefined, uncovered, replicas) */
    SP_REF_UNDECIDED,   /* no difference, but some elements are balls that overlap or taints */
    SP_REF_TOO_LARGE,   /* a limit (result.limit says which) */
    SP_REF_ERROR        /* bad input: diagnostics */
} sp_ref_verdict_t;

typedef enum {
    SP_REF_DIFF_VALUE = 0, /* plan and model values differ (exactly, or disjoint balls) */
    SP_REF_DIFF_UNDEFINED, /* the plan is undefined where the model is defined */
    SP_REF_DIFF_UNCOVERED, /* no rank holds this element of an output the plan declares */
    SP_REF_DIFF_REPLICA    /* two ranks hold this element with different values */
} sp_ref_diff_kind_t;

/*
 * The outcome of one run.  Strings are malloc'd and owned by the struct (NULL when absent).
 * The first difference is the first in rank order, then the rank's output order, then element
 * order (row-major), so it does not depend on thread scheduling.
 */
typedef struct {
    sp_ref_verdict_t verdict;
    uint64_t seed;
    long prec;              /* the precision of the last run */
    char *model, *plan;
    char *mesh;             /* "dp=2 tp=2" */
    int nranks;
    char *limit;            /* TOO_LARGE: which limit, and what exceeded it */
    int count_unknown;      /* ERROR: an operator's count at the file's sizes is not known
                               (opts.real_values: no extent the program writes has it) */
    /* DIFFER: the first difference */
    sp_ref_diff_kind_t kind;
    char *output;           /* the model tensor */
    sp_loc_t loc;           /* the plan's output statement (loc.file is `file`) */
    char *file;
    int rank;               /* -1 for an uncovered element */
    char *coords;           /* "(dp=1, tp=0)" */
    char *local_index, *global_index; /* "[0, 1]" */
    char *plan_value, *model_value;   /* "3/4", "[0.5 +/- 1e-70]", "undefined" */
    sp_ref_inputs_t inputs; /* DIFFER: every input value of the run (re-run with opts.inputs) */
    /* counts over (rank, output element) pairs */
    int64_t compared, equal, overlap, undecided, model_undefined, plan_undefined, differ;
    int64_t undecided_prec; /* of the undecided: an undecidable comparison of balls (more bits may decide) */
    int64_t uncovered;      /* elements of declared outputs that no rank holds */
    char **not_covered;     /* model outputs the plan never outputs (the lead decides) */
    size_t nnot_covered;
    /* with opts.observe, when the model and every rank ran to the end */
    sp_ref_obs_list_t obs_model;  /* every model tensor (inputs, parameters, grad., next.) */
    sp_ref_obs_list_t *obs_rank;  /* per rank: its plan assignments in execution order */
    int nobs_rank;
} sp_ref_result_t;

void sp_ref_result_init(sp_ref_result_t *r);
void sp_ref_result_clear(sp_ref_result_t *r);

/*
 * Run the model and the plan and compare.  Returns SP_OK with res filled (every verdict,
 * including ERROR, whose diagnostics are in d), or SP_ERR_NOMEM / SP_ERR_INTERNAL.  Bad input
 * is never a crash: res->verdict is SP_REF_ERROR and d holds file:line:col diagnostics.
 * Deterministic: the same ast and opts give the same res, whatever the thread scheduling.
 */
sp_status_t sp_ref_run(const sp_ast_t *ast, const sp_ref_opts_t *opt, sp_ref_result_t *res,
                       sp_diags_t d);

/* The short text report of `shardproof run`. */
void sp_ref_result_print(FILE *out, const sp_ref_result_t *r);

/*
 * Run only model `model` (NULL: the file's only model) and return the value of its tensor
 * `tensor` ("y", "grad.w", "next.w") as one string per element, row-major ("1/3", a ball
 * "[2.718 +/- 1e-75]", "undefined", "undecided", "tie"), in *vals (malloc'd array of malloc'd
 * strings, *n of them), and its shape in shape[0..*nd).  For tests and for lifting
 * counterexamples.  SP_ERR_INPUT with diagnostics on bad input or an unknown tensor.
 */
sp_status_t sp_ref_model_values(const sp_ast_t *ast, const sp_ref_opts_t *opt, const char *model,
                                const char *tensor, char ***vals, int64_t *n, int *nd,
                                int64_t shape[8], sp_diags_t d);

/* shardproof run FILE [options]: exit 0 agree, 1 differ, 2 bad input, 3 undecided/too large.
   Options from sp_ref_opts (the command table's entry in main.c). */
int sp_ref_cli(const sp_cmd_t *cmd, int argc, char **argv);
extern const sp_opt_t sp_ref_opts[];

#endif
