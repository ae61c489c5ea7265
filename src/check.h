/* check.h: the checker's internal state, shared by reduce, exec, stage and report. */
#ifndef SP_CHECK_H
#define SP_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "diag.h"
#include "mesh.h"
#include "ops.h"
#include "parse.h"
#include "ref/ref.h"
#include "solver.h"

/* A dimension: its real size and the reduced size at which every element is checked. */
typedef struct {
    const char *name;        /* borrowed from the AST */
    sp_loc_t loc;
    const sp_ast_expr_t *def;/* its defining expression */
    int64_t real, red;
    int derived;             /* defined by an expression of other dims */
    int overridden;          /* set by --dims */
    int64_t cut;             /* > 0: not a dim but a mesh axis checked at this smaller size (the
                                mesh cutoff; only while sp_reduce_dims runs) */
    int64_t xref;            /* the size of the reference executor's second run (src/reduce.c
                                xref_sizes(): admissible, small dims at their real sizes), 0
                                before the reduction */
} sp_dimdef_t;

/* A named tensor value: one tensor per rank (a model has one rank).  ndim < 0: absent. */
typedef struct {
    char *name;
    sp_loc_t loc;            /* where it was defined */
    sp_tensor_t *t;          /* nranks tensors, owned */
    sp_loc_t *rloc;          /* plan: where each rank's value was defined (nranks, owned);
                                NULL for the model */
    int scope;
    int pend;                /* plan: the value holds a pending max/min (a partial(max@axes)
                                input or cut): it may only be reduced, renamed or related */
    sp_red_t pend_op;
    sp_axes_t pend_axes;
    int state;               /* plan: 1 + index of the state input (a model input or parameter
                                with a `next.` update) this binding is, as declared; 0 otherwise */
} sp_binding_t;

/*
 * A stage: one proof obligation.  The plan tensor `plan_name` (defined at plan_loc), on every
 * rank, must equal the model tensor `model_name` under `layout` (pending reductions combine the
 * ranks of a group first).  Both sides are over the same symbols: the inputs, and the fresh
 * symbols of earlier stages' cut points.
 */
typedef enum { SP_STAGE_LINEAGE = 0, SP_STAGE_OUTPUT } sp_stage_kind_t;

/* A hash index by name over an array whose elements begin with their name (`char *`): the
   bindings (src/exec.c lookup), the cut points (src/lineage.c is_cut).  Each name's latest
   element; earlier ones of the same name (outer scopes) are chained through prev. */
typedef struct {
    uint32_t *slots;   /* open addressing: 0 empty, 1 deleted, else 2 + an element's index */
    uint32_t nslots, used;
    int *prev;         /* per element: the earlier element of its name, or -1 */
    int aprev;
    int n;             /* elements indexed: the index is current when n is the array's count */
} sp_nameidx_t;

/* src/exec.c: the index of the latest element named name among the n elements of base (each
   stride bytes), or -1; the index is rebuilt when it is not current */
int sp_nameidx_find(sp_nameidx_t *X, const void *base, size_t stride, int n, const char *name);
/* element n-1 was appended / the last element i is about to be removed */
void sp_nameidx_added(sp_nameidx_t *X, const void *base, size_t stride, int n);
void sp_nameidx_removed(sp_nameidx_t *X, const void *base, size_t stride, int i);
/* the array changed otherwise (emptied, reordered): rebuilt at the next find */
static inline void sp_nameidx_stale(sp_nameidx_t *X) { X->n = -1; }
void sp_nameidx_free(sp_nameidx_t *X);

/* How an execution makes the symbols of its source tensors (sp_check_t.src_mode) */
typedef enum { SP_SRC_REAL = 0, SP_SRC_TRACE, SP_SRC_PART } sp_src_mode_t;

typedef enum {
    SP_STAGE_PENDING = 0,
    SP_STAGE_PROVED,
    SP_STAGE_FAILED,
    SP_STAGE_UNKNOWN,
    SP_STAGE_MEMO      /* identical to an earlier stage up to renaming: proved once */
} sp_stage_status_t;

typedef struct {
    int id;
    sp_stage_kind_t kind;
    char *plan_name, *model_name;
    sp_loc_t plan_loc, model_loc;
    sp_loc_t *plan_rloc;     /* output stages: the defining statement per rank (nranks, owned),
                                or NULL; a failure at rank r reports plan_rloc[r] as plan_loc */
    sp_layout_t layout;
    sp_tensor_t *plan;       /* nranks tensors (copies) */
    sp_tensor_t model;       /* the model tensor's value (before any cut) */
    int64_t nranks;
    /* results */
    sp_stage_status_t status;
    int64_t elements;        /* element comparisons made */
    int64_t symmetric;       /* element comparisons skipped: a rank identical up to renaming */
    int64_t fail_rank;       /* first failing rank (for partial: the group's first member) */
    int64_t fail_index;      /* flat index into the local tensor */
    int64_t fail_shape[SP_MAX_DIMS];
    int fail_ndim;
    char *plan_value, *model_value; /* printed symbolic values */
    char *cex;               /* the counterexample, "x[0,1] = 2, ..." */
    char *cex_values;        /* "plan = 3, model = 5 (exact)" */
    sp_why_t why;
    char *reason;            /* UNKNOWN: a sentence for why when there is more to say, or NULL */
    int64_t prob_bits;       /* > 0: some element proved by fingerprints only (--probabilistic),
                                the smallest per-query bound 2^-prob_bits */
    uint64_t key;            /* renaming-invariant hash of the queries (memoization) */
    int64_t solve_ns;        /* wall time of its proof (0: memoized or not run); --profile only */
    int memo_of;             /* stage id proved earlier with the same key, or -1 */
    int inferred;            /* a relation lineage inference proposed (src/infer.c) */
    int counted;             /* UNKNOWN: at the reduced sizes a sum over an axis counted elements
                                (sp_engine_counts), so the real sizes decide (src/check.c) */
    int counts;              /* ... whatever the status: a difference there may be the count's,
                                so it is lifted at the real sizes only (src/crosscheck.c lift) */
    int held_dim;            /* with counted: 1 + the reduced dim whose elements a monomial of
                                the stage holds more of than the checked sizes show
                                (src/members.c), 0: a count */
    int held, held_lim;      /* ... how many it may hold, and the most the check shows */
    int test_only;           /* src/stage.c: a renaming of a proved stage whose symbols play other
                                roles for the count and relations tests: only those run */
} sp_stage_t;

/* src/members.c: the elements of each reduced dim a stage's monomials hold
   (docs/soundness.md, "Relations among sums over a reduced dim") */
typedef struct {
    int dim;                 /* the reduced dim exceeded, or -1 */
    int bound, lim;          /* the elements a monomial may hold; the most the sizes show */
    int atom;                /* in an atom's argument (else in a compared pair) */
} sp_members_fail_t;
/* fail.bound for a cut axis whose members are not known, or a node no bound reaches */
#define SP_MEMBERS_UNKNOWN 0
#define SP_MEMBERS_OPAQUE (-1)

typedef struct {
    const char *name;
    int64_t value;
} sp_dim_override_t;

typedef struct {
    const char *plan;        /* NULL: the only plan of the file */
    int jobs;                /* 0: all cores */
    uint64_t seed;
    sp_limits_t lim;
    int max_memory_set;      /* --max-memory given (the limit note says so) */
    sp_dim_override_t *dims;
    int ndims;
    int64_t max_elements;    /* per tensor after reduction */
    int64_t max_ranks;
    int64_t max_memo_keys;   /* 32-bit words of memoization keys kept (src/stage.c) */
    int progress;            /* progress bar on stderr */
    int infer;               /* lineage inference: 1 on, -1 off, 0 when the plan writes no
                                lineage on its assignments (src/infer.c) */
    int shard_index, shard_count; /* shard_count > 1: solve only this shard's stage groups */
    int no_cross_check;      /* skip the reference executor after the proof */
    int profile;             /* record the time and memory of each phase (sp_check_t.phases) */
    int verbose;             /* text report: every counterexample assignment */
    long timeout_ms;         /* --timeout: the check's budget in milliseconds (0: none); sets
                                lim.deadline_ns when a check starts */
    int shape_index;         /* 0: the smallest admissible reduced sizes; k: the k-th next */
    int strict_shapes;       /* reduced sizes also pairwise distinct and apart from mesh sizes,
                                the constants of tensor expressions and their products (the
                                default; 0 with --fast-shapes) (docs/soundness.md) */
    int full_mesh;           /* no mesh cutoff: every axis at its real size */
    int real_sizes;          /* no shape reduction: every dim at its real size (the re-run of a
                                difference the reference executor did not reproduce) */
    sp_parse_limits_t parse; /* input limits */
} sp_check_opts_t;

/* A mesh axis the plan is uniform along, checked at a smaller size (docs/soundness.md, "Mesh
   cutoff"). */
typedef struct {
    const char *name;        /* borrowed from the AST */
    int64_t real, red;
} sp_cutoff_t;

/* A lineage the checker inferred for an assignment (--infer-lineage, src/infer.c): on every
   rank, its occ-th execution there relates to model_name (rows [rlo, rhi) of dim 0 when rhi > 0)
   under layout. */
typedef struct {
    const sp_ast_stmt_t *stmt;
    int occ;
    char *model_name;
    sp_layout_t layout;
    int64_t rlo, rhi;
    int64_t order;           /* src/infer.c: where the reference executor met the assignment */
    int move;                /* src/infer.c: the assignment only moves values (never kept) */
} sp_inferred_t;

/* Why a difference found at the checked sizes is no witness (src/crosscheck.c no_witness) */
typedef enum {
    SP_NOWIT_REAL_AGREE = 0, /* the reference executor finds none at the real sizes */
    SP_NOWIT_LITERAL,        /* a literal that is a product of sizes at the real sizes only */
    SP_NOWIT_VALUE,          /* the checker's own counterexample, with sizes used as values */
    SP_NOWIT_CHECKED_AGREE,  /* none at the checked sizes, the real ones beyond it */
    SP_NOWIT_COUNTS,         /* a failed stage's values count elements */
    SP_NOWIT_CUTOFF_VALUE    /* a size used as a value under the mesh cutoff */
} sp_nowit_t;

typedef struct sp_check {
    sp_check_opts_t opt;
    sp_diags_t d;
    sp_ast_t *ast;
    const char *path;
    sp_engine_t *S;
    sp_ectx_struct *E;
    /* items */
    sp_dimdef_t *dims;
    int ndims;
    const sp_ast_stmt_t *model, *plan;
    const sp_ast_stmt_t **funcs;
    int nfuncs;
    /* model state: values, and cut points (model tensors named by plan lineage) */
    sp_binding_t *mvals;
    int nmvals, amvals;
    sp_nameidx_t mindex;     /* mvals by name */
    char **cuts;
    int ncuts, acuts;
    sp_nameidx_t cutidx;     /* cuts by name */
    char **passed;           /* plan pass 2: cut points the plan has already crossed ... */
    uint8_t **passed_on;     /* ... on these ranks and rows: [rank * passed_rows + row] */
    int64_t *passed_rows;    /* rows (dim 0, 1 for a scalar) of each cut point */
    int npassed;
    sp_binding_t *morig;     /* the model's value of each cut tensor before it was cut */
    int nmorig, amorig;
    char **outputs;          /* the model's declared outputs */
    int noutputs;
    char **omitted;          /* model outputs the plan leaves unchecked (`omit`) */
    int nomitted;
    char *xref;              /* the reference executor's part of the report (owned), or NULL */
    /* phases of the last run: name, wall and CPU nanoseconds, peak RSS in KiB at its end */
    struct { const char *name; int64_t wall_ns, cpu_ns, nodes; long rss_kb; } phases[12];
    int nphases;
    int64_t phase_wall0, phase_cpu0;
    int unlifted;            /* a failing stage the reference run did not reproduce end to end:
                                the verdict is UNKNOWN, the stage is evidence only */
    int resize;              /* with unlifted: an output difference over inputs only at reduced
                                sizes that the reference run at the real sizes does not show
                                (1), or no difference where the reference run at other
                                admissible sizes (2) or at the real sizes (3) shows one: the real
                                sizes are checked next */
    char lit_real[200];      /* a literal factor of the program that is a product of sizes at
                                the real sizes and not at the checked ones ("131072 = B*S"), or
                                "": a difference at the checked sizes alone is then no witness
                                (src/reduce.c lit_relations, src/crosscheck.c lift) */
    int resize_why;          /* with resize 1, why the difference was no witness: an
                                sp_nowit_t (src/crosscheck.c no_witness) */
    int32_t uneven[16];      /* extent monomials that a layout splits unevenly (torch.chunk's
                                partial last shard, an explicit split): a shard's real extent
                                is not its checked one times the monomial's scale, so an
                                operator's count over such an axis is not known (src/plan.c,
                                src/exec_pos.c real_count); nuneven past the array: every one */
    int nuneven;
    char value_real[200];    /* the first size used as a value whose value at the real sizes
                                (which the checked program takes) is not its value at the
                                checked ones: "H/2 at f.sp:3:9", or "" (src/exec_pos.c
                                sp_note_value_real); the reference executor then runs the
                                checked sizes with real_values (src/crosscheck.c) */
    int xref_plain;          /* under --fast-shapes, a real_values run that could not take a
                                count: the checked sizes with their own values instead */
    uint32_t exec_nodes;     /* expression nodes after executing the model and the plan (the
                                size of the reference executor's second run: src/crosscheck.c) */
    int clamped;             /* what the first operator that did what the reduction does not
                                keep did: an sp_clamp_t (src/ops.h) */
    sp_loc_t clamp_loc;      /* that operator */
    int cut_members;         /* under the mesh cutoff: a gather made an axis whose positions are
                                the members of a cut axis (src/plan.c members_positions) */
    sp_loc_t cut_members_loc;
    sp_loc_t *sum_read;      /* concatenations whose extent the reduction read (src/reduce_sums.c) */
    int nsum_read;
    struct sp_recv_read *recv_read; /* extents read for received tensors (src/reduce_sums.c) */
    struct sp_pos_rt *pos_rt;  /* monomials of offsets read while executing (src/reduce_sums.c) */
    struct sp_members *members; /* source tensors' axes and the dims' smallest blocks
                                   (src/members.c) */
    struct sp_members_rtab *roles; /* the symbols' roles while stages are keyed and proved
                                      (src/members.c sp_members_roles_begin) */
    int32_t pos_next;          /* the next fresh monomial id (an extent or offset not read) */
    int pos_exact_sum;         /* a position was a sum of exact terms (src/exec_pos.c sp_note_clamped) */
    int pos_size_on_exact;     /* a size term or reduced extent met a dim of exact extent */
    int pos_forms;             /* the kinds of offsets met (sp_pos_forms), sp_pos_note */
    struct sp_pos_seen {
        int32_t d;             /* a descriptor of sizes (src/ops_pos.c) */
        int named;             /* a size term of a coefficient not literal (note_terms) */
    } pos_terms[256];          /* the distinct ones met (sp_pos_note) */
    int npos_terms;
    struct sp_pos_host {
        int32_t blk;           /* a block's monomial id */
        int32_t host;          /* the extent id of an axis it may sit on scaled otherwise */
    } pos_host[16];            /* blocks on inner parts of splits scaled otherwise (sp_pos_t.host;
                                  src/exec_pos.c note_terms); past the room: the real sizes */
    int npos_host;
    int32_t pos_named[16];     /* size terms of a coefficient not literal (sp_pos_named) */
    int npos_named;            /* ... past the room: every one (-1) */
    sp_loc_t pos_exact_loc;
    int nrecv_read;
    char resize_note[400];   /* the report's note when the real sizes were checked, or "" */
    int regrown;             /* run_exact's checks again at a larger size of one dim (held) */
    int pos_side;            /* the side an operator runs on (1: the plan), for src/members.c */
    int regrowing;           /* inside a candidate run of regrow: the real sizes are deferred */
    int order_q, order_k;    /* SP_CLAMP_ORDER's dims (queries', keys'; -1: none) and their real
                                difference, which src/check.c keep_order checks the sizes at */
    int64_t order_diff;
    int order_fixing;        /* inside keep_order's run */
    int real_deferred;       /* that run left the real sizes to regrow's caller: 1, 2 for a clamp */
    char limit_note[512];    /* a resource limit (--max-elements, --max-nodes, the address
                                space) ended the run in UNKNOWN: which, and where */
    int store_limit;         /* the last run filled the expression store (--max-nodes, or the
                                address-space limit: solver/expr.c room()) */
    char fast_gap[256];      /* --fast-shapes: the first condition of the default reduction the
                                sizes chosen miss ("" if none): EQUIVALENT is then UNKNOWN */
    char unproved[512];      /* why a run without a difference is UNKNOWN, not EQUIVALENT
                                (--fast-shapes' gap, --mesh-cutoff), or "" */
    int weak_order;          /* shards may keep one element: with two a tensor exceeded
                                --max-elements (src/check.c run_exact, docs/soundness.md) */
    /* plan */
    sp_mesh_t mesh;          /* the checked mesh (cut axes at their checked size) */
    sp_cutoff_t cutoff[SP_MAX_AXES];
    int ncutoff;
    char cutoff_note[768];   /* why each large axis was not cut, one line per axis (report,
                                --verbose), or "" */
    int cutoff_fallback;     /* the cut mesh's run ended in an error or an unreproduced
                                difference: the verdict is the real mesh's (report says so) */
    sp_stage_t *stages;
    int nstages, astages;
    int fresh_counter;
    /* --shard i/N: how this execution makes the symbols of inputs, parameters, optimizer
       state and cut points (src/shard_exec.c): each element its own (SP_SRC_REAL), one symbol
       per tensor (SP_SRC_TRACE: which tensors a stage reads), or its own only for the tensors
       in `needed` and the hollow symbol for the others (SP_SRC_PART) */
    sp_src_mode_t src_mode;
    char **needed;           /* sorted tensor prefixes the shard's stages read (SP_SRC_PART) */
    int nneeded;
    char **mine;             /* sorted model tensors the shard's stages relate */
    int nmine;
    uint8_t *owned;          /* --shard: owned[i] if stage i is this shard's (sp_shard_partition) */
    int nowned;
    uint32_t *src_ord;       /* a trace's symbol index -> 1 + the order its cut point's fresh
                                value was made in (0: no cut point's) */
    uint32_t nsrc_ord, nsources;
    uint32_t *node_key;      /* a trace's node -> the least source key under it (UINT32_MAX:
                                none), for nodes [0, nnode_key) */
    uint32_t nnode_key, anode_key;
    int merged_whole;        /* merge checked the whole input (src/shard.c whole_run_decides) */
    int shard_exec;          /* the last sharded run: 0 executed in full, 1 its stages only,
                                2 in full after its stages-only run met the hollow symbol */
    int64_t shard_sources[2]; /* that SP_SRC_PART execution's source tensors: real, all */
    /* results */
    int verdict;             /* a shardproof_verdict_t: of the last check, prepare or merge */
    double seconds;
    int collect_only;        /* first plan pass: collect cut names, make no stages */
    sp_inferred_t *inferred;
    int ninferred;
    char infer_note[256];    /* lineage inference: why no relation was proposed, or "" */
    int inferring;           /* this run proposes lineage (opt.infer, or the plan has none) */
    int infer_diverged;      /* and the observing run found the plan's outputs wrong: stages
                                are solved in order up to the first failure (src/stage.c) */
    int has_diverge;         /* a wrong plan: the observing run's localization (src/infer.c) */
    sp_loc_t diverge_loc;    /* the statement where the plan's values first leave the model's */
    char diverge_note[512];  /* what was found there (report: "first divergence") */
    char **infer_drop;       /* model tensors no proposal may name (src/check.c run_inferred) */
    int ninfer_drop;
    int64_t lit_positions;    /* the largest literal position of the program (src/reduce.c
                                 blocks_kept; SP_DIM_MAX-like when not followed) */
    int64_t div_size, div_by; /* the last run's collective failed: a dim of this reduced size
                                 not divisible by this group size (src/check.c run_exact) */
    int64_t div_min;          /* ... and it may grow to div_by times div_min or more */
    struct {
        char name[64];        /* a base dim (a copy: each run parses the file again) */
        int64_t mult;         /* its reduced size is a multiple of this */
    } divfix[16];
    int ndivfix;
    struct {
        int64_t value;        /* an exact extent a concatenation made in an earlier run: a size
                                 of the program for the reduction (src/exec_pos.c
                                 sp_note_exact_extent, src/reduce.c) */
        sp_loc_t loc;         /* the first concatenation that made it */
    } xext[16];
    int nxext;
    int xext_new;             /* this run met one not in xext: the run is done again */
} sp_check_t;

/* crosscheck.c: run the reference executor at the real sizes (reduced = 0), at the checked
   sizes (1: dims and cut mesh axes) or at the second run's (2: sp_dimdef_t.xref), on the given inputs (NULL: the seed's random ones); observe
   keeps intermediate values (src/infer.c).  A refusal's first message is res->limit. */
sp_status_t sp_xref_run(sp_check_t *C, int reduced, uint64_t seed,
                        const sp_ref_inputs_struct *given, int observe, sp_ref_result_t *res);

/* infer.c: lineage proposals (--infer-lineage) from one run of the reference executor at the
   checked sizes: C->inferred and their cut points.  Never an error: without a run, none. */
void sp_infer_propose(sp_check_t *C);
/* infer.c: drop the proposals whose cut point the last pass did not cross (C->passed), or all
   of them; the number dropped.  sp_infer_cuts: the proposals' cut points into C->cuts. */
int sp_infer_keep_crossed(sp_check_t *C, int all);
void sp_infer_cuts(sp_check_t *C);

/* check.c: the engine limits of the options (the engine's defaults where they say 0) */
struct shardproof_options;
void sp_check_limits(sp_limits_t *lim, const struct shardproof_options *o);
/* The machine's memory in bytes, or the cgroup's memory.max when lower (0 if unknown). */
size_t sp_memory_bytes(void);

/* check.c: a usage or I/O error of the caller (the CLI) about file: a diagnostic without a
   position, and the verdict BAD_INPUT.  file is borrowed: it must outlive the reports. */
void sp_check_fail(sp_check_t *C, const char *file, sp_diag_code_t code, const char *msg);
/* The run stopped at a resource limit before a report: UNKNOWN with note as the reason. */
void sp_check_limit(sp_check_t *C, const char *file, const char *note);

/* check.c: was some base dim checked at a size other than its real one? */
int sp_check_reduced(const sp_check_t *C);
/* The index in C->cutoff of the mesh axis named axis, or -1 when the cutoff does not check it
   smaller */
int sp_cutoff_index(const sp_check_t *C, const char *axis);
/* check.c: the plan's mesh statement (its first, as src/plan.c plan_mesh requires), or NULL */
const sp_ast_stmt_t *sp_plan_mesh_stmt(const sp_check_t *C);

/* crosscheck.c: the verdict v against the reference executor; returns the final verdict */
int sp_crosscheck(sp_check_t *C, int v);

/* shard_exec.c: the symbols of a source tensor (an input, a parameter, optimizer state, a cut
   point's fresh value) named prefix, as C->src_mode says; 0 if the store is full */
int sp_source_symbols(sp_check_t *C, sp_tensor_t *t, const char *prefix);
/* shard_exec.c: is stage i this shard's (every stage without --shard)? */
int sp_shard_mine(const sp_check_t *C, int i);
/* shard_exec.c: after a trace, which stages are this shard's (C->owned): the stages in the
   order of the first cut point they read, cut into --shard's N equal runs; 0 if out of memory */
int sp_shard_partition(sp_check_t *C);
/* shard_exec.c: after an SP_SRC_TRACE execution, the sources the shard's stages read, into
   C->needed; 0 if out of memory */
int sp_shard_collect_needed(sp_check_t *C);
/* shard_exec.c: after an SP_SRC_PART execution, is every value of the shard's stages free of
   the hollow symbol (and are there nstages stages)? */
int sp_shard_stages_whole(const sp_check_t *C, int nstages);
void sp_shard_needed_free(sp_check_t *C);
/* shard_exec.c: fp[i] the fingerprint of each stage i of this shard (merge compares them with
   a shard's: the same values, whatever the order their nodes were made in); 0 if out of memory */
int sp_shard_fingerprints(const sp_check_t *C, uint64_t *fp);
/* shard_exec.c: may an SP_SRC_PART execution leave the model's value of nm hollow (a cut point
   that no stage of the shard relates: only another shard's stage reads its value)? */
int sp_shard_skips_model(sp_check_t *C, const char *nm);

/* reduce.c */
sp_status_t sp_reduce_dims(sp_check_t *C);
int sp_dim_find(const sp_check_t *C, const char *name);
/* src/reduce_sums.c: mark in keep[] every dim that a sum of sizes names (a slice's extent,
   a loop's trip count or a closed size expression that is no monomial in the dims) */
void sp_reduce_keep_sums(sp_check_t *C, const sp_mesh_t *mesh, uint8_t *keep);
/* did sp_reduce_keep_sums() read the extent of the concatenation at loc (from declared layouts)? */
int sp_reduce_sum_read(const sp_check_t *C, sp_loc_t loc);
/* does tensor t received at loc have the extents src/reduce_sums.c read for it (if any)? */
int sp_reduce_recv_holds(const sp_check_t *C, sp_loc_t loc, const sp_tensor_t *t);
void sp_reduce_sums_free(sp_check_t *C);
/* The monomial of hi - lo (lo NULL: 0) as an offset id (src/ops_pos.c): 1 if it names no dim,
   an interned id >= 2 if it is one monomial in the dims, 0 if not (or not a size expression). */
int32_t sp_pos_monomial(sp_check_t *C, const sp_ast_expr_t *lo, const sp_ast_expr_t *hi);
/* The monomial id's value at the real sizes over its value at the reduced ones, in out; 0 if
   the id is not an interned monomial. */
int sp_pos_scale(sp_check_t *C, int32_t id, fmpq_t out);
/* Monomial id times (sign 1) or over (sign -1) the sizes of a's axes that the mesh cutoff
   checks smaller: a shard's or a gather's extent (0: not known; id when no axis is cut) */
int32_t sp_pos_per_axes(sp_check_t *C, int32_t id, const sp_axes_t *a, int sign);
/* Does monomial id hold a cut axis's size as a factor (1 also when id is not known)? */
int sp_pos_over_members(sp_check_t *C, int32_t id);
/* members.c: prefix's symbols (source tensors) have like's axes; t's axes are blocks of their
   dims; a new run at new sizes; the test of a stage's pairs a[q] ~ b[q] (q < nq, imported into
   E, whose first len nodes are the import) at rank[q], local index index[q]: 1 when a monomial
   holds more elements of a reduced dim than the checked sizes show (*fail says where);
   *scratch (*cap bytes, flint_malloc'd) is reused from call to call */
void sp_members_record(sp_check_t *C, const char *prefix, const sp_tensor_t *like);
void sp_members_block(sp_check_t *C, const sp_tensor_t *t);
void sp_members_new_run(sp_check_t *C);
/* prefix's symbols are parts of a pending reduction: mco[c] the member's coordinate along the
   mesh cutoff's axis c (-1: not over it); t's values are decomposed into parts over the cut
   axes of mask (bits c), so each holds one member of them (src/plan.c distribute) */
void sp_members_part(sp_check_t *C, const char *prefix, const int64_t *mco);
void sp_members_whole(sp_check_t *C, const sp_tensor_t *t, uint8_t mask);
/* t's axis d is split over a group with cut axis c in blocks of blk (the shard times the
   group's later axes; 0: unevenly): it must be one dim's whole extent, whose element p is then
   member (p / blk) % k's for every symbol; else the axis's members are not known */
void sp_members_partition(sp_check_t *C, const sp_tensor_t *t, int d, int c, int64_t blk);
/* t's axis d (its dims) is in a positional pattern that keeps s of its positions apart (a
   causal mask's offset, top-k's ties, rows named by literals): a monomial of n of its elements
   occurs only if n + s <= the axis's extent (-1: never) */
void sp_members_slack(sp_check_t *C, const sp_tensor_t *t, int d, int64_t s, int kind,
                      const void *site);
/* kinds of positional patterns: on one axis each kind keeps its largest slack apart, and the
   kinds' slacks add up (a causal mask's diagonal; a prefix of literal positions: literal slice
   ends, literal ids; top-k's ties, whose call sites (site) add up too, as a top-k of another's
   mask breaks ties among what that one left) */
enum { SP_SLACK_DIAG, SP_SLACK_PREFIX, SP_SLACK_TOPK, SP_SLACK_KINDS };
/* a causal pattern between queries (q's axis qd) and keys (k's axis kd): for keys of a dim
   other than the queries', n keys need the queries' axis of n + s positions, and n queries
   the keys' axis of n + s */
void sp_members_couple(sp_check_t *C, const sp_tensor_t *q, int qd, const sp_tensor_t *k,
                       int kd, int64_t s);
/* t's axis d is made of pieces of n positions that an operator treats apart (rope's halves,
   or its even and odd positions: strided; repeat_interleave's runs): a block of n of the axis's
   one dim (sp_members_block); on an axis of a merge or of no known dim, a block of every dim */
void sp_members_pieces(sp_check_t *C, const sp_tensor_t *t, int d, int64_t n, int strided);
/* y, computed from in[0 .. nin), composes y->masks of causal masks' slack (src/ops.c mask_count): when
   more than one, each axis of y and of its operands on a dim that a causal pattern reaches keeps
   that many positions apart (a diagonal slack), and each two such axes of one tensor are coupled
   with it (helper-88's review, session 45) */
void sp_members_masks(sp_check_t *C, const sp_tensor_t *y, const sp_tensor_t *in, int nin);
/* dim v's smallest block this run (0: none) with the slack of literal positions it loses
   (*blk_s, -1: all), and the pattern that leaves it the least room
   (above): the axis's extent and the slack (0 and 0: none; extent 0: no room at any size),
   and the dim whose axis that is (*on: v, or the other dim of a causal pattern) */
void sp_members_dim(const sp_check_t *C, int v, int64_t *blk, int64_t *blk_s, int64_t *room_e,
                    int64_t *room_s, int *on);
/* Does a causal pattern (or a composition of masks) this run relate positions of dims v != u?
   (src/check.c regrow grows u with v, keeping their difference: src/exec_pos.c causal_edges) */
int sp_members_coupled(const sp_check_t *C, int v, int u);
void sp_members_free(sp_check_t *C);
/* What the count and relations tests read of a stage, as tokens for src/stage.c's memoization
   keys: per symbol (at most sp_members_roles_max tokens) and for the compared pairs, with
   element identities renamed in order of first appearance since the last reset; NULL from
   _new when no test runs (no reduced dim, no cut axis, real sizes) */
typedef struct sp_members_roles sp_members_roles_t;
/* The symbols' roles of one solving phase: a table made by _begin (none when no test runs),
   shared by the views _new makes, written by one thread, frozen (read-only) while several
   run, freed by _end */
void sp_members_roles_begin(sp_check_t *C);
void sp_members_roles_end(sp_check_t *C);
void sp_members_roles_freeze(sp_check_t *C, int frozen);
sp_members_roles_t *sp_members_roles_new(sp_check_t *C, int dims_only);
void sp_members_roles_free(sp_members_roles_t *R);
void sp_members_roles_reset(sp_members_roles_t *R);
size_t sp_members_roles_max(const sp_members_roles_t *R);
size_t sp_members_roles_sym(sp_members_roles_t *R, const sp_ectx_struct *E, sp_expr_t id,
                            uint32_t *out);
size_t sp_members_roles_pairs(sp_members_roles_t *R, const sp_stage_t *s, const int64_t *rank,
                              const int64_t *index, int64_t nq, uint32_t **out, size_t *cap);
/* Do the n compared pairs a and b of stage s (rank, local index) give the tests the same
   elements, pair by pair? */
int sp_members_roles_same_pairs(sp_members_roles_t *R, const sp_stage_t *s, const int64_t *rank_a,
                                const int64_t *index_a, const int64_t *rank_b,
                                const int64_t *index_b, int64_t n);
/* What a failed bound (fail.dim, .bound, .lim: a reduced dim, or C->ndims + a cut axis) says
   of a monomial, the clause after "a monomial of X " ("may hold 4 elements of S, more than the
   3 these sizes show in one block"), for the report and the stage's reason */
void sp_members_held_text(const sp_check_t *C, int dim, int bound, int lim, char *buf,
                          size_t len);
int sp_members_test(sp_check_t *C, sp_ectx_t E, uint32_t len, const sp_stage_t *s,
                    const sp_expr_t *a, const sp_expr_t *b, const int64_t *rank,
                    const int64_t *index, int64_t nq, void **scratch, size_t *cap,
                    sp_members_fail_t *fail);
/* The exponents over the dims (C->dims, derived dims expanded into base ones) of monomial id
   in e[0 .. C->ndims); 0 if the id is not an interned monomial (e all zero for id 1), 2 if it
   also names a mesh size, a rank coordinate or a loop variable (a shard's extent), else 1. */
int sp_pos_exps(sp_check_t *C, int32_t id, int *e);
/* A fresh id for an extent or offset whose monomial is not known (equal to no other). */
int32_t sp_pos_fresh(sp_check_t *C);
/* src/exec.c: an operator or a collective at loc did what the shape reduction does not keep
   (kind, an sp_clamp_t): the first one, for src/check.c's re-check at the real sizes */
void sp_note_clamped(sp_check_t *C, int kind, sp_loc_t loc);
/* src/exec_pos.c: a concatenation at loc of parts of exact extents made the extent total: a
   size of the program, the same at the real sizes, that the reduction keeps apart from the
   others (recorded; the run is done again when it is new) */
void sp_note_exact_extent(sp_check_t *C, int64_t total, sp_loc_t loc);
/* k from a composition of offsets (sp_pos_compose and its callers): 0 a sum of sizes
   (SP_CLAMP_OFFSET), 2 an exact sum (SP_CLAMP_EXACT), else nothing */
void sp_note_composed(sp_check_t *C, int k, sp_loc_t loc);
/* src/reduce_sums.c: 1 when size expression e (an offset) is a monomial times a coefficient of
   rank coordinates or loop variables, or no monomial; 2 for rank.X * (M / X), a block; else 0 */
int sp_pos_named(sp_check_t *C, const sp_ast_expr_t *e);
/* src/exec_pos.c: size term id was made by e (sp_pos_named: kept for note_terms) */
void sp_pos_note_named(sp_check_t *C, int32_t id, const sp_ast_expr_t *e);
/* src/exec_pos.c: monomials a and b known and scaled alike from the reduced sizes to the real
   ones (sp_pos_scale) */
int sp_pos_same_scale(sp_check_t *C, int32_t a, int32_t b);
/* src/exec_pos.c: a size term or a reduced extent made on axis a (NULL: an axis not known) */
void sp_size_on_exact(sp_check_t *C, const sp_pos_t *a, sp_loc_t loc);
void sp_pos_note(sp_check_t *C, sp_tensor_t *t, sp_loc_t loc);
/* src/exec_pos.c: the checked program took a size used as a value (what, at loc) at its real
   size, other than its checked one (C->value_real) */
void sp_note_value_real(sp_check_t *C, const char *what, sp_loc_t loc);
/* src/exec_pos.c: what an operator applied at loc reported beyond its result (err): a clamp
   (sp_note_clamped), an exact extent (sp_note_exact_extent), a count taken at its real size
   (sp_note_value_real) */
void sp_note_op(sp_check_t *C, const sp_op_err_t *err, sp_loc_t loc);
/* src/exec_pos.c: a layout splits the axis of extent monomial ext unevenly (C->uneven) */
void sp_note_uneven(sp_check_t *C, int32_t ext);
/* src/exec_pos.c: what the operators ask of the checker (sp_op_env_t): the real count of the
   elements a mean divides by, from the extents' monomials */
sp_op_env_t sp_pos_env(sp_check_t *C);
void sp_note_divisible(sp_check_t *C, const sp_op_err_t *err);

/* execution (exec.c, the interpreter's core; autodiff.c, the model; lineage.c, cut points and
   stages; plan.c, the plan on every rank): sp_exec_model (autodiff.c), sp_exec_plan (plan.c) */
sp_status_t sp_exec_model(sp_check_t *C);
sp_status_t sp_exec_plan(sp_check_t *C);
/* lineage.c: the cut points guessed from the plan's control flow alone (no execution), into
   C->cuts; sp_cuts_confirmed after pass 2 says whether pass 2 crossed exactly those. */
sp_status_t sp_plan_guess_cuts(sp_check_t *C);
/* Does the plan (or a function) write lineage on an assignment (`~ T`)? */
int sp_plan_has_lineage(const sp_check_t *C);
int sp_cuts_confirmed(sp_check_t *C);
/* exec.c: the model's current binding of name, or NULL */
const sp_binding_t *sp_model_value(const sp_check_t *C, const char *name);
/* Is name declared by the model's `input` or `param` statement (`param` only with
   params_only), or an element of an array among them (`w[1]`)? (src/plan.c) */
int sp_model_declares(const sp_check_t *C, const char *name, int params_only);
/* exec.c: 1 if name is a collective (all_reduce, send, ...). */
int sp_exec_is_collective(const char *name);
/* Are an elementwise operator's numeric (integer) arguments operands, not attributes? */
int sp_exec_numeric_is_tensor(const char *op);

/* stage.c */
void sp_stage_clear(sp_stage_t *s);
/* Record that stage s fails at rank r: fail_rank, and plan_loc from the per-rank definitions. */
void sp_stage_fail_at(sp_stage_t *s, int64_t r);
sp_status_t sp_stages_solve(sp_check_t *C);
/* Group the stages by renaming-invariant key: sets every stage's key, and rep[i] (the first
   stage of i's group); rep is allocated (nstages entries), NULL if out of memory. */
int *sp_stages_group(sp_check_t *C, int **srep);
/* Prove the stages ids[0 .. n) (each by itself, no memoization), on the thread pool */
void sp_stages_prove(sp_check_t *C, int *ids, int n);
int sp_stages_export_smt2(sp_check_t *C, const char *dir, char *err, size_t errlen);

/* result.c: a layout as text at the reduced sizes, "[2, 4@tp] partial(sum@dp)" */
void sp_layout_str(const sp_check_t *C, const sp_layout_t *L, char *buf, size_t len);
/* The layout in the language's syntax, sizes named by the dims whose checked size they are;
   the number of sizes whose name is a guess (two dims of that checked size, or none). */
int sp_layout_src(const sp_check_t *C, const sp_layout_t *L, char *buf, size_t len);
/* explain --lineage: the inferred relations as annotations to paste after their statements. */
void sp_explain_lineage(const sp_check_t *C, FILE *out);

/* The source-map origin ('#@ ORIGIN', docs/language.md) of line of file, when file is the checked
   input, or NULL (result.c). */
const char *sp_check_origin(const sp_check_t *C, const char *file, unsigned line);
/* result.c: the failing element's index in its local shard (s->fail_ndim entries) */
void sp_stage_index(const sp_stage_t *s, int64_t *idx);
/* result.c: a copy of s (flint_free) in which every byte that is not part of valid UTF-8 (and
   no NUL) is replaced by U+FFFD: what JSON and XML documents can carry */
char *sp_utf8_clean(const char *s);

#endif
