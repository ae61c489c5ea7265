/* shardproof.h: the public API: check a model and a parallel plan for exact equivalence. */
#ifndef SHARDPROOF_H
#define SHARDPROOF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHARDPROOF_VERSION "0.1.0"

/* The library's version (SHARDPROOF_VERSION of the build, which may differ from the header's). */
const char *shardproof_version(void);

/*
 * A checker reads a plan file (dims, one model, one or more plans), runs the model and the plan
 * symbolically at reduced shapes, and proves every stage (lineage cut point or declared output)
 * with the exact engine.  The verdict values double as the CLI's exit codes.
 */
typedef enum {
    SHARDPROOF_EQUIVALENT = 0,     /* every stage proved */
    SHARDPROOF_NOT_EQUIVALENT = 1, /* a stage differs, with a certified counterexample */
    SHARDPROOF_BAD_INPUT = 2,      /* diagnostics say why */
    SHARDPROOF_UNKNOWN = 3,        /* a limit was hit or a case is undecided */
    SHARDPROOF_INTERNAL = 4
} shardproof_verdict_t;

typedef enum {
    SHARDPROOF_FORMAT_TEXT = 0,
    SHARDPROOF_FORMAT_JSON,
    SHARDPROOF_FORMAT_SARIF,
    SHARDPROOF_FORMAT_JUNIT
} shardproof_format_t;

/* The default budget of one query: a single query cannot stall a check for minutes. */
#define SHARDPROOF_DEFAULT_MAX_MS 60000

/* The default mesh-size limit of a check (options.max_ranks = 0, --max-ranks); `shardproof
   gen` generates no larger mesh. */
#define SHARDPROOF_DEFAULT_MAX_RANKS 65536

typedef struct shardproof_options {
    const char *plan;          /* plan name; NULL: the file's only plan */
    int jobs;                  /* threads; 0: all cores */
    uint64_t seed;             /* random points; printed in reports */
    long max_terms, max_degree, max_splits; /* engine limits per query (0: default) */
    long max_ms;               /* wall-clock budget of one element query in milliseconds (0:
                                  SHARDPROOF_DEFAULT_MAX_MS; negative: none); when it runs out
                                  the stage is UNKNOWN (limit max_ms) */
    long max_coeff_bits;       /* bits of a normal form's rational coefficient (0: default) */
    long max_nodes;            /* expression nodes of the run and of each stage's query (memory;
                                  0: none) */
    size_t max_input_bytes;    /* input limits (0: defaults 16 MiB, 2^21 tokens, identifiers of */
    size_t max_tokens;         /* 256 characters, nesting 200; the depth can only be lowered) */
    size_t max_ident;
    unsigned max_depth;
    int64_t max_elements;      /* elements per tensor after reduction (0: default 262144) */
    int64_t max_ranks;         /* mesh size (0: default SHARDPROOF_DEFAULT_MAX_RANKS) */
    const char *const *dims;   /* "NAME=VALUE" overrides of reduced sizes, ndims of them */
    int ndims;
    int progress;              /* progress on stderr */
    int probabilistic;         /* 0: exact proofs only.  k > 0: a query whose exact proof hits a
                                  limit may be answered EQUAL from k agreeing fingerprints; the
                                  report states the error bound */
    int infer_lineage;         /* lineage inference (docs/soundness.md): 0 for a plan that
                                  writes no lineage on its assignments, 1 also for one that
                                  writes some, -1 never; each proposal is proved exactly */
    int shape_index;           /* which reduction: 0 the smallest admissible sizes, k the k-th
                                  next admissible size of every reduced dim (--shapes N runs
                                  0..N-1) */
    int fast_shapes;           /* 0 (default): shape reduction keeps every pair of sizes the
                                  program uses apart, and apart from mesh sizes, the constants
                                  of tensor expressions and their products, so that a proof at
                                  the reduced sizes holds at the real ones.  1: the smaller
                                  sizes of fewer conditions; EQUIVALENT only where the sizes
                                  chosen meet the default's conditions too, else UNKNOWN
                                  (docs/soundness.md, "Shape reduction") */
    int profile;               /* record each phase's time and memory (shardproof_profile) */
    int verbose;               /* the text report shows every counterexample assignment (by
                                  default the first 8, so that it fits on a screen) */
    int no_cross_check;        /* 1: do not run the reference executor (docs/reference-executor.md)
                                  after the proof: by default it re-checks EQUIVALENT at the real
                                  sizes when they are small, and a NOT EQUIVALENT needs an
                                  end-to-end witness from it (else UNKNOWN) */
    int shard_index, shard_count; /* shard_count > 1: prove only the stage groups of shard
                                  shard_index (0-based) of shard_count, a deterministic subset;
                                  the others stay pending (see shardproof_write_partial) */
    int mesh_cutoff;           /* 0 (default): every mesh axis at its real size.  1: an axis of
                                  4 or more ranks that the plan never tells apart (no rank.AXIS,
                                  on, send/recv, rooted collective or explicit shard sizes on
                                  it) is checked at a smaller size (docs/soundness.md, "Mesh
                                  cutoff"); the report says so, and no difference there is
                                  UNKNOWN, not EQUIVALENT (shardproof_result_unproved) */
    long max_memory_mb;        /* resident memory in MiB past which the expression stores stop
                                  growing: the check ends UNKNOWN (limit memory) instead of being
                                  killed (0: 90% of the machine's memory, or of the cgroup's
                                  memory.max when lower; negative: none) */
    long timeout_ms;           /* wall-clock budget of the whole check in milliseconds (0: none):
                                  once it has passed, the run stops building expressions and
                                  no query or stage starts; what is not decided is UNKNOWN
                                  (limit timeout).  The reference executor's re-check after the
                                  proofs (small plans only) is not interrupted */
    int64_t max_memo_keys;     /* 32-bit words of memoization keys kept (0: default 2^26, 256
                                  MiB): past it a stage is still memoized onto a kept key but
                                  keeps none of its own (memoization is only a saving) */
} shardproof_options_t;

void shardproof_options_default(shardproof_options_t *opt);

typedef struct sp_check shardproof_t;

/* A checker for the file at path with its text (the text is copied).  NULL if out of memory. */
shardproof_t *shardproof_new(const shardproof_options_t *opt);
void shardproof_free(shardproof_t *c);

/* Parse, run and prove.  Diagnostics (bad input) are kept in the checker. */
shardproof_verdict_t shardproof_check(shardproof_t *c, const char *path, const char *text,
                                      size_t len);

/* Parse and run without proving: fills the stages for shardproof_explain. */
shardproof_verdict_t shardproof_prepare(shardproof_t *c, const char *path, const char *text,
                                        size_t len);

/* Print the report of the last check (or the stages of the last prepare). */
void shardproof_report(const shardproof_t *c, FILE *out, shardproof_format_t fmt);
void shardproof_explain(const shardproof_t *c, FILE *out);
/* Graphviz picture of the stage graph, the failing stage highlighted. */
void shardproof_dot(const shardproof_t *c, FILE *out);
/* Wall-clock seconds of the last check (not in any report: reports are byte-identical across
   runs). */
double shardproof_seconds(const shardproof_t *c);
/* --profile: wall and CPU time and peak memory of each phase of the last check (parse, reduce,
   execute, prove, reference executor) and its slowest stages; nothing without opt.profile. */
void shardproof_profile(const shardproof_t *c, FILE *out);
/* Print the diagnostics, compiler style, with caret lines. */
void shardproof_print_diagnostics(const shardproof_t *c, FILE *out);
size_t shardproof_error_count(const shardproof_t *c);

/* After shardproof_prepare: write each stage's query as SMT-LIB2 (QF_UFNRA; unsat = equal) into
   DIR/stage-<id>.smt2.  Returns 0 with a message in err on an I/O error. */
int shardproof_export_smt2(shardproof_t *c, const char *dir, char *err, size_t errlen);

/*
 * Partial reports (--shard i/N, shardproof merge).  After a sharded shardproof_check, write the
 * results of every stage as a JSON partial report; `args` (nargs strings) are the check options
 * that merge must reuse, `text` the input (hashed, so that merge detects a changed file).
 */
void shardproof_write_partial(const shardproof_t *c, FILE *out, const char *text, size_t len,
                              const char *const *args, int nargs);

/*
 * After shardproof_prepare on the same input and options: take every stage's result from the
 * partial reports parts[0..nparts) (JSON texts named names[i]), which must be the shards 0..N-1
 * of one sharded run on this input.  Returns the verdict (as shardproof_check would), or
 * SHARDPROOF_BAD_INPUT with a message in err.
 */
shardproof_verdict_t shardproof_merge_partials(shardproof_t *c, const char *text, size_t len,
                                               const char *const *parts, const char *const *names,
                                               int nparts, char *err, size_t errlen);

/*
 * Results as data.  shardproof_result_new takes a snapshot of the last check, prepare or merge
 * (or of its bad input): the verdict, the mesh, the reduced dims, every stage and the
 * diagnostics.  The snapshot owns everything it points to; it stays valid after the checker is
 * freed and until shardproof_result_free.  Every string is NUL-terminated UTF-8; pointers are
 * NULL when a field does not apply.  The JSON, SARIF and JUnit reports are written from it.
 */
typedef struct shardproof_result shardproof_result_t;

typedef enum {
    SHARDPROOF_STAGE_PENDING = 0, /* not proved in this shard (--shard I/N) */
    SHARDPROOF_STAGE_PROVED,
    SHARDPROOF_STAGE_FAILED,      /* a certified counterexample */
    SHARDPROOF_STAGE_UNKNOWN,     /* a limit or an undecided case: reason says which */
    SHARDPROOF_STAGE_MEMOIZED     /* identical up to renaming to stage memo_of, proved there */
} shardproof_stage_status_t;

/*
 * A source position: line and column 1-based; line 0: the whole file (no position).  origin:
 * the source-map comment '#@ ORIGIN' of that line (a generator's source position such as
 * "model.py:42", docs/language.md "Source maps"), or NULL (also for a syntax error: the file
 * was not parsed).
 */
typedef struct {
    const char *file;
    unsigned line, column;
    const char *origin;
} shardproof_loc_t;

typedef struct {
    const char *name; /* a mesh axis or a dimension */
    int64_t value;    /* its size, or a rank's coordinate on it */
} shardproof_coord_t;

typedef struct {
    const char *name;
    int64_t real, reduced; /* the size written in the file, the size checked */
} shardproof_dim_t;

/* One input of a counterexample: a symbol such as "x[0,1]" and its exact rational value. */
typedef struct {
    const char *name;
    const char *value; /* "2", "-3/4" */
} shardproof_assignment_t;

/*
 * One stage: the plan tensor (defined at plan_loc), on every rank, must equal the model tensor
 * (defined at model_loc) under the layout.  For a FAILED or UNKNOWN stage the rank, element and
 * values say where; a FAILED stage also carries its counterexample.
 */
typedef struct {
    int id;                         /* 1-based, in plan order */
    int is_output;                  /* 1: a declared output; 0: a lineage cut point */
    shardproof_stage_status_t status;
    const char *plan_tensor, *model_tensor;
    const char *layout;             /* at the reduced sizes: "[2, 4@tp] partial(sum@dp)" */
    shardproof_loc_t plan_loc, model_loc;
    int64_t elements;               /* element comparisons made */
    int64_t symmetric;              /* element comparisons covered by rank symmetry */
    int memo_of;                    /* MEMOIZED: the id of the stage proved; else 0 */
    int64_t prob_error_bits;        /* > 0: proved by fingerprints only (--probabilistic), each
                                       query's error probability below 2^-prob_error_bits */
    /* FAILED or UNKNOWN (else 0 / NULL) */
    int64_t rank;                   /* the first failing rank, row-major over the mesh axes; -1
                                       for an UNKNOWN stage that a limit stopped before its
                                       first element query (then only reason is set) */
    int ncoords;                    /* its coordinates, one per mesh axis */
    const shardproof_coord_t *coords;
    int group;                      /* 1: the layout has pending reductions and rank stands for
                                       its group's reduced value */
    int ndim;                       /* the element's index in the rank's local shard */
    const int64_t *element, *shard_shape;
    const char *plan_value, *model_value; /* both sides there, symbolic (canonical forms) */
    const char *reason;             /* UNKNOWN: "limit max_ms", "no witness", ... */
    /* FAILED: an input at which the two sides differ, and both values there */
    int nassign;
    const shardproof_assignment_t *assign;
    const char *plan_at, *model_at;
    int exact;                      /* 1: exact rationals; 0: disjoint Arb balls */
    int is_inferred;                /* a lineage cut point that inference proposed (not written) */
} shardproof_stage_t;

typedef enum { SHARDPROOF_ERROR = 0, SHARDPROOF_WARNING, SHARDPROOF_NOTE } shardproof_severity_t;

typedef struct {
    shardproof_severity_t severity;
    const char *code; /* "syntax", "name", "shape", "layout", "lineage", "limit", "io", "usage"
                         (a tensor over max_elements ends the check in UNKNOWN instead:
                         shardproof_result_limit) */
    shardproof_loc_t loc;
    const char *message;
} shardproof_diagnostic_t;

/* A snapshot of c's results; NULL if out of memory. */
shardproof_result_t *shardproof_result_new(const shardproof_t *c);
void shardproof_result_free(shardproof_result_t *r);

shardproof_verdict_t shardproof_result_verdict(const shardproof_result_t *r);
/* The input file as named to the checker; the plan and model names (NULL before they are known,
   for instance after a syntax error). */
const char *shardproof_result_file(const shardproof_result_t *r);
const char *shardproof_result_plan(const shardproof_result_t *r);
const char *shardproof_result_model(const shardproof_result_t *r);
uint64_t shardproof_result_seed(const shardproof_result_t *r);
/* What the reference executor said after the proof (docs/reference-executor.md): the cross-check
   of EQUIVALENT, or the end-to-end witness of NOT EQUIVALENT (or why there is none, when the
   verdict became UNKNOWN); lines of text, or NULL when it did not run. */
const char *shardproof_result_reference(const shardproof_result_t *r);
/* Why a check that found no difference is UNKNOWN rather than EQUIVALENT: with opt.fast_shapes
   the first condition of the default shape reduction that the sizes checked miss, with
   opt.mesh_cutoff the axes checked at a smaller size; NULL when the verdict is not UNKNOWN for
   that reason (the sizes and mesh checked are a proof, or a stage differs or is undecided). */
const char *shardproof_result_unproved(const shardproof_result_t *r);
/* The resource limit that stopped the run before any verdict (a tensor larger than
   opt.max_elements), with where it was hit: the verdict is then UNKNOWN; NULL otherwise. */
const char *shardproof_result_limit(const shardproof_result_t *r);
/* A NOT EQUIVALENT plan whose lineage was inferred (docs/guide.md "Lineage inference"): the plan
   statement where its values first leave the model's, found from the reference executor's
   values (a hint, not part of the proof), and what was found there; NULL (loc untouched) when
   there is none. */
const char *shardproof_result_divergence(const shardproof_result_t *r, shardproof_loc_t *loc);

/* The mesh axes with their (real) sizes, and the dims with real and reduced sizes (i out of
   range: NULL).  Both are empty when the input was bad. */
int shardproof_result_axis_count(const shardproof_result_t *r);
const shardproof_coord_t *shardproof_result_axis(const shardproof_result_t *r, int i);
int shardproof_result_dim_count(const shardproof_result_t *r);
const shardproof_dim_t *shardproof_result_dim(const shardproof_result_t *r, int i);
/* The mesh axes checked at a smaller size (the mesh cutoff, docs/soundness.md): name, real
   size, and the checked size as `reduced`.  A failing stage's rank coordinates are on the
   checked mesh. */
int shardproof_result_cutoff_count(const shardproof_result_t *r);
const shardproof_dim_t *shardproof_result_cutoff(const shardproof_result_t *r, int i);

/* The stages in plan order (none when the input was bad). */
int shardproof_result_stage_count(const shardproof_result_t *r);
const shardproof_stage_t *shardproof_result_stage(const shardproof_result_t *r, int i);
/* The index of the first FAILED stage, else of the first UNKNOWN one, else -1. */
int shardproof_result_failing_stage(const shardproof_result_t *r);

/* The diagnostics (errors with their positions when the input was bad). */
int shardproof_result_diagnostic_count(const shardproof_result_t *r);
const shardproof_diagnostic_t *shardproof_result_diagnostic(const shardproof_result_t *r, int i);

/* "EQUIVALENT", "NOT_EQUIVALENT", "BAD_INPUT", "UNKNOWN", "INTERNAL_ERROR" */
const char *shardproof_verdict_name(shardproof_verdict_t v);
/* "pending", "proved", "failed", "unknown", "memoized" */
const char *shardproof_stage_status_name(shardproof_stage_status_t s);

#ifdef __cplusplus
}
#endif

#endif
