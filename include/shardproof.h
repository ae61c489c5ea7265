/* shardproof.h: the public API: check a model and a parallel plan for exact equivalence. */
#ifndef SHARDPROOF_H
#define SHARDPROOF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

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

typedef struct shardproof_options {
    const char *plan;          /* plan name; NULL: the file's only plan */
    int jobs;                  /* threads; 0: all cores */
    uint64_t seed;             /* random points; printed in reports */
    long max_terms, max_degree, max_splits, max_ms; /* engine limits per query (0: default) */
    long max_coeff_bits;       /* bits of a normal form's rational coefficient (0: default) */
    long max_nodes;            /* expression nodes of the run and of each stage's query (memory;
                                  0: none) */
    size_t max_input_bytes;    /* input limits (0: defaults 16 MiB, 2^21 tokens, identifiers of */
    size_t max_tokens;         /* 256 characters, nesting 200; the depth can only be lowered) */
    size_t max_ident;
    unsigned max_depth;
    int64_t max_elements;      /* elements per tensor after reduction (0: default 65536) */
    int64_t max_ranks;         /* mesh size (0: default 65536) */
    const char *const *dims;   /* "NAME=VALUE" overrides of reduced sizes, ndims of them */
    int ndims;
    int progress;              /* progress on stderr */
    int probabilistic;         /* 0: exact proofs only.  k > 0: a query whose exact proof hits a
                                  limit may be answered EQUAL from k agreeing fingerprints; the
                                  report states the error bound */
    int infer_lineage;         /* cut plan assignments without lineage where they match a model
                                  tensor (fingerprints), each cut then proved exactly */
    int shape_index;           /* which reduction: 0 the smallest admissible sizes, k the k-th
                                  next admissible size of every reduced dim (--shapes N runs
                                  0..N-1) */
    int shard_index, shard_count; /* shard_count > 1: prove only the stage groups of shard
                                  shard_index (0-based) of shard_count, a deterministic subset;
                                  the others stay pending (see shardproof_write_partial) */
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

#ifdef __cplusplus
}
#endif

#endif
