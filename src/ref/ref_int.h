/* ref_int.h: internals of the reference executor: values, the scalar tape, tensors, executors. */
#ifndef SP_REF_INT_H
#define SP_REF_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <arb.h>
#include <flint/fmpq.h>

#include "ref.h"

/* ---- scalar values (ref_val.c) ------------------------------------------------------------ */

/* Taints.  UNDEF: the real operation is undefined (x/0, log x<=0, sqrt x<0).  UNDEC: a
   comparison on balls could not be decided, so the value is unknown.  TIE: a derivative at a
   kink (relu/abs at 0, max with equal arguments, clamp at a bound, top-k tie) that depends on
   a convention. */
enum { RT_UNDEF = 1, RT_UNDEC = 2, RT_TIE = 4 };

/*
 * A scalar: an exact rational q (ball == 0) or an Arb ball b (ball == 1).  Normal form: a ball
 * with radius 0 is stored as the rational it is exactly (Arb's enclosure is then the value); a
 * tainted value holds the rational 0 (its number means nothing).  Both fields are always
 * initialised.
 */
typedef struct {
    uint8_t ball, taint;
    fmpq q;
    arb_struct b;
} rv_t;

void rv_init(rv_t *v);
void rv_clear(rv_t *v);
void rv_set(rv_t *r, const rv_t *s);
void rv_set_si(rv_t *r, slong p, ulong q);
void rv_set_fmpq(rv_t *r, const fmpq_t q);
void rv_bad(rv_t *r, int taint);
int rv_is_zero(const rv_t *v); /* exactly 0 and untainted */
/* Arithmetic; r may alias an argument.  Taints are or-ed; new ones arise as documented. */
void rv_add(rv_t *r, const rv_t *a, const rv_t *b, slong prec);
void rv_sub(rv_t *r, const rv_t *a, const rv_t *b, slong prec);
void rv_mul(rv_t *r, const rv_t *a, const rv_t *b, slong prec);
void rv_div(rv_t *r, const rv_t *a, const rv_t *b, slong prec);
void rv_pow(rv_t *r, const rv_t *x, slong k, slong prec);
void rv_max(rv_t *r, const rv_t *a, const rv_t *b, int is_max, slong prec);
/* -1, 0, 1 (a < b, a == b, a > b), 2 undecided (overlapping balls or a tainted argument). */
int rv_cmp(const rv_t *a, const rv_t *b, slong prec);
/* "3/4", "[0.75 +/- 1e-70]", "undefined", "undecided", "tie"; malloc'd. */
char *rv_str(const rv_t *v);

/* ---- the scalar store and tape (ref_val.c) ------------------------------------------------ */

typedef enum {
    RO_LEAF = 0, RO_COPY, RO_ADD, RO_SUB, RO_MUL, RO_DIV, RO_NEG, RO_DOT, RO_EXP, RO_LOG,
    RO_SQRT, RO_RSQRT, RO_TANH, RO_SIGMOID, RO_SILU, RO_GELU, RO_ERF, RO_RELU, RO_ABS, RO_MAX,
    RO_MIN, RO_POW
} rop_t;

/* One scalar operation: its value and its arguments a[arg .. arg+nargs) (node ids).  DOT's
   arguments are pairs (x0, y0, x1, y1, ...); POW's exponent is k. */
typedef struct {
    rv_t v;
    uint8_t op;
    uint32_t nargs;
    size_t arg;
    slong k;
} rnode_t;

/* A memory budget shared by every store of a run (bytes of nodes, arguments and adjoints). */
typedef struct {
    atomic_llong used;
    long long max;
} rmem_t;

/*
 * A store of scalar nodes, one per executor (the model, each rank); ids ascend in creation
 * order, so a reverse sweep is a backward loop.  Node 0 is the constant 0.  When the memory
 * budget is exhausted, `over` is set and node 0 stands in for new nodes: callers check over
 * after each operator.  Not thread-safe; reading values of a finished store from other
 * threads is.
 */
typedef struct {
    rnode_t *n;
    size_t len, cap;
    uint32_t *a;
    size_t alen, acap;
    slong prec;
    rmem_t *mem;
    long long reserve; /* bytes charged to mem but not used yet */
    int over;
    int topk_tie; /* a top-k selection had a tie at its boundary */
} rstore_t;

void rs_init(rstore_t *S, slong prec, rmem_t *mem);
void rs_clear(rstore_t *S);
void rs_truncate(rstore_t *S, size_t len);
static inline const rv_t *rs_val(const rstore_t *S, uint32_t id) { return &S->n[id].v; }
uint32_t rs_leaf(rstore_t *S, const rv_t *v); /* v must not point into S */
uint32_t rs_leaf_of(rstore_t *S, uint32_t src);  /* a leaf holding node src's value */
uint32_t rs_const(rstore_t *S, slong p, ulong q);
uint32_t rs_constq(rstore_t *S, const fmpq_t q);
uint32_t rs_op(rstore_t *S, rop_t op, const uint32_t *args, uint32_t n);
uint32_t rs_op1(rstore_t *S, rop_t op, uint32_t x);
uint32_t rs_op2(rstore_t *S, rop_t op, uint32_t x, uint32_t y);
uint32_t rs_pow(rstore_t *S, uint32_t x, slong k);
/* A comparison as a constant leaf 0/1 (comparisons carry no derivative); cmp: 0 lt, 1 le,
   2 gt, 3 ge, 4 eq, 5 ne. */
uint32_t rs_cmp(rstore_t *S, int cmp, uint32_t a, uint32_t b);
/* cond != 0 ? a : b, returning a or b itself (the gradient follows the taken branch). */
uint32_t rs_where(rstore_t *S, uint32_t c, uint32_t a, uint32_t b);
/*
 * Reverse sweep over nodes [from, len): adj[i - from] holds the adjoint of node i (initialised
 * by the caller, rv_init = 0, seeds set); on return every node's adjoint is accumulated.  Nodes
 * below `from` are treated as constants.  Returns 0, or -1 if the memory budget is exhausted.
 */
int rs_sweep(rstore_t *S, size_t from, rv_t *adj);
int rs_charge(rstore_t *S, long long bytes); /* 0, or -1 (and over = 1) past the budget */

/* ---- tensors and operators (ref_ops.c) ---------------------------------------------------- */

#define RMAXD 8

/* A tensor: shape sh[0..nd) and one node id per element, row-major; owns id. */
typedef struct {
    int nd;
    int64_t sh[RMAXD];
    uint32_t *id;
} rten_t;

void rt_init(rten_t *t);
void rt_clear(rten_t *t);
int64_t rt_numel(const rten_t *t);
int rt_copy(rten_t *d, const rten_t *s); /* 0, or -1 if out of memory */
/* "[2, 3]" into buf */
void rt_shape_str(char *buf, size_t len, int nd, const int64_t *sh);

enum { RA_NUM = 0, RA_NAME, RA_LIST };

/* An operator attribute: keyword (NULL: positional) and a compile-time value. */
typedef struct {
    const char *key;
    int kind;
    fmpq num;
    fmpq numr; /* the value at the file's sizes (opts.real_values; else num): a_num() reads it */
    const char *name;
    int64_t *list;
    int nlist;
} rattr_t;

/* opts.real_values: the extents the program wrote (its sizes), each at the run's sizes and at
   the file's; an extent written with two values at the file's sizes is ambiguous (-1). */
typedef struct {
    pthread_mutex_t mu;
    int64_t *key, *val;
    size_t n, cap;
} rcmap_t;

typedef struct {
    rstore_t *S;
    rcmap_t *cm;     /* opts.real_values: counts at the file's sizes (rc_count); else NULL */
    const char *op;  /* the operator being applied (set by rop_apply) */
    int64_t max_el;
    int no_grad_ops; /* refuse *_grad operators (a model that trains) */
    int limit;       /* on failure: 1 if a size limit, 0 if bad input */
    int count_unknown; /* on failure: an operator's count at the file's sizes is not known */
    char err[512];
    char shs[3][160]; /* shapes for messages */
    int shk;
} ropc_t;

/* Arity facts of operator name (for the trailing-literal rule); 0 if unknown. */
int rop_info(const char *name, int *lo, int *hi, int *npos, int *litattr);
/* Apply operator name; 1 on success (*out set), 0 with c->err ("matmul: ..."). */
int rop_apply(ropc_t *c, const char *name, const rten_t *in, int nin, const rattr_t *at,
              int nat, rten_t *out);
/* Elementwise a op b with broadcasting (op: RO_ADD, RO_SUB, RO_MUL, RO_DIV, RO_MAX, RO_MIN). */
int rop_binary(ropc_t *c, rop_t op, const rten_t *a, const rten_t *b, rten_t *out);
int rop_compare(ropc_t *c, int cmp, const rten_t *a, const rten_t *b, rten_t *out);

/* ---- executors (ref_exec.c, ref_mesh.c, ref.c) -------------------------------------------- */

#define RMAXAX 16

typedef struct rexec rexec_t;
typedef struct rrun rrun_t;

/* A value of the interpreter: a compile-time rational, a tensor or a bare name (sum, tp). */
enum { XV_NONE = 0, XV_INT, XV_TEN, XV_NAME };
typedef struct {
    int kind;
    fmpq q;
    fmpq qr; /* q at the file's sizes (opts.real_values; else q) */
    rten_t t;
    const char *name;
} xval_t;

void xv_init(xval_t *v);
void xv_clear(xval_t *v);

/* A binding: a compile-time value (isint) or a tensor. */
typedef struct {
    char *key;
    int isint;
    fmpq q, qr; /* qr: q at the file's sizes (xval_t.qr) */
    rten_t t;
    int32_t obs1; /* opts.observe: 1 + the observation that bound it on this rank, 0 if none */
} rbind_t;

/* Names of one scope, hashed; parent is read when a name is not found here. */
typedef struct renv {
    rbind_t *b;
    size_t n, cap;
    uint32_t *ht;
    size_t hcap;
    struct renv *parent;
} renv_t;

void renv_init(renv_t *e, renv_t *parent);
void renv_clear(renv_t *e);
rbind_t *renv_find(const renv_t *e, const char *key, int chain);
/* Bind key to a tensor (taking t's ids; t is left empty) or to a rational.  0 or -1 (OOM). */
int renv_set_take(renv_t *e, const char *key, rten_t *t);
int renv_set_int(renv_t *e, const char *key, const fmpq_t q, const fmpq_t qr);
void renv_unset(renv_t *e, const char *key);

/* The resolved layout of an output or input on one rank. */
typedef struct {
    int nd;
    int64_t gsh[RMAXD], off[RMAXD], lsh[RMAXD]; /* global size, this rank's offset and size */
    int np;
    int pop[RMAXAX];      /* partial entries: 0 sum, 1 avg, 2 max, 3 min */
    uint32_t pmask[RMAXAX];
} rlayout_t;

/* An output of the plan on one rank: a model tensor, the rank's values, its layout. */
typedef struct {
    char *key;
    sp_loc_t loc;
    rlayout_t L;
    rv_t *v;
    int64_t n;
    int occ; /* how many earlier outputs of the same key this rank made */
} rout_t;

enum { RK_RUN = 0, RK_BLOCKED, RK_DONE, RK_FAILED };

struct rexec {
    rrun_t *R;
    rstore_t S;
    int rank;             /* -1: the model */
    int coord[RMAXAX];
    renv_t genv, *env;
    sp_diags_t d;
    int failed, limit;    /* an error was recorded; it is a size limit (TOO_LARGE) */
    int count_unknown;    /* the error is a count not known at the file's sizes (real_count) */
    int deadlocked;       /* the error is this rank's part of a deadlock */
    char limmsg[256];
    int depth;            /* user-function calls */
    int64_t iters;        /* loop iterations so far (at most 10^6 in all, as the checker) */
    xval_t *ret;          /* values of the function's return */
    int nret, returned;
    /* the model */
    const sp_ast_stmt_t *train;
    char **outs;
    int nouts;
    /* the plan */
    rout_t *pout;
    int npout, apout;
    /* the scheduler (guarded by R->mu) */
    int state;
    int wait_src;         /* blocked on a message from this rank, or -1 */
    void *wait_rv;        /* blocked on this rendezvous, or NULL */
    sp_loc_t wait_loc;
    uint32_t *seqmask;    /* collective sequence numbers per group mask */
    int64_t *seq;
    int nseq;
    /* opts.observe: this rank's plan assignments, and per statement its executions so far */
    sp_ref_obs_list_t obs;
    const sp_ast_stmt_t **occ_s;
    int *occ_n;
    int nocc;
    /* opts.observe: the observations the statement being executed has read so far (its
       operands, function bodies included); `adepth` counts enclosing leaf statements */
    int64_t *reads;       /* SP_REF_OBS_ID(rank, index) */
    int nreads, areads, adepth;
    int leaf_start;       /* reads[leaf_start..] belong to the leaf statement `leaf` */
    const sp_ast_stmt_t *leaf;
    int64_t clock;        /* a logical clock: + 1 per observation, the max at every message and
                             collective, so that a value's clock exceeds every value it depends on */
};

/* Append an observation of tensor t (name copied) to l; 0, or -1 if out of memory. */
int rx_observe(sp_ref_obs_list_t *l, const rstore_t *S, const sp_ast_stmt_t *stmt,
               const char *name, int occ, const rten_t *t);

/* opts.observe: record t as a value of statement s (see ref_exec.c); the observation's index
   + 1, or 0 on an error.  A read of observation idx of rank by the current statement. */
int64_t rx_observe_value(rexec_t *X, const sp_ast_stmt_t *s, const char *name, const rten_t *t,
                         int start, sp_loc_t loc);
int rx_note_read(rexec_t *X, int64_t rank, int64_t idx, sp_loc_t loc);

/* A model input, parameter or optimizer-state tensor, in declaration order. */
typedef struct {
    char *key;
    int kind; /* 0 input, 1 param, 2 state */
} rinput_t;

struct rrun {
    const sp_ast_t *ast;
    const sp_ref_opts_t *opt;
    slong prec;
    const sp_ast_stmt_t *model, *plan;
    char **dimname;
    fmpq *dimval, *dimreal; /* at the run's sizes and at the file's (dimreal: real_values only) */
    int ndims;
    rcmap_t cmap;           /* opts.real_values */
    int naxes;
    const char *axname[RMAXAX];
    int axsize[RMAXAX];
    int nranks;
    rmem_t mem;
    rexec_t *M;            /* the model's executor; its genv holds every model tensor */
    rinput_t *inp;
    int ninp, ainp;
    char **onehot, **mask; /* model inputs used as one-hot ids / 0-1 masks */
    int nonehot, nmask;
    void *given;           /* the caller-given input values, indexed (ref.c) */
    /* ranks */
    rexec_t **X;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nlive, nblocked, deadlock, go, abort;
    struct rmsg **qhead, **qtail; /* per (src, dst): FIFO of messages */
    struct rrv *rvs;               /* open rendezvous of collectives */
};

/* ref_exec.c */
int rx_error(rexec_t *X, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...) SP_PRINTF(4, 5);
int rx_limit(rexec_t *X, sp_loc_t loc, const char *fmt, ...) SP_PRINTF(3, 4);
int rx_init(rexec_t *X, rrun_t *R, int rank);
void rx_clear(rexec_t *X);
int rx_block(rexec_t *X, const sp_ast_block_t *b);
int rx_model(rexec_t *X);
/* Compile-time value of e: 1 (in q, and in qr at the file's sizes unless NULL), 0 if e is not
   compile-time, -1 error (reported). */
int rx_ct(rexec_t *X, const sp_ast_expr_t *e, fmpq_t q, fmpq_t qr);
int rx_ct_int(rexec_t *X, const sp_ast_expr_t *e, int64_t *v, const char *what);
/* rx_ct_int, and *vr (unless NULL) at the file's sizes (0 where that is no integer) */
int rx_ct_int2(rexec_t *X, const sp_ast_expr_t *e, int64_t *v, int64_t *vr, const char *what);
/* rx_ct_int of an extent the program writes (a declared size, a shape list's element):
   with opts.real_values it records the extent at both sizes (rc_note); *vr (unless NULL) the
   extent at the file's sizes (0: not an integer there; *v without opts.real_values) */
int rx_ct_size(rexec_t *X, const sp_ast_expr_t *e, int64_t *v, int64_t *vr, const char *what);
/* the count map (ref.c): note extent e at the run's sizes as r at the file's; the count of
   an extent e at the file's sizes: 1, or 0 where it is not known (never written, or
   written with two values) */
void rc_note(rcmap_t *m, int64_t e, int64_t r);
int rc_count(ropc_t *c, int64_t e, int64_t *r);
int rx_axis(const rrun_t *R, const char *name);
int rx_eval_tensor(rexec_t *X, const sp_ast_expr_t *e, xval_t *out);
int rx_target_key(rexec_t *X, const sp_ast_expr_t *e, char *buf, size_t len);
int rx_bare_name(rexec_t *X, const sp_ast_expr_t *e); /* a name that is no value (sum, tp) */
void rx_coords_str(const rrun_t *R, int rank, char *buf, size_t len);

/* ref_mesh.c */
/* The layout lay (NULL: replicated) of a tensor of shape (nd, shape) on X's rank. */
int rm_layout(rexec_t *X, const sp_ast_layout_t *lay, int nd, const int64_t *shape, rlayout_t *L);
int rm_declare(rexec_t *X, const sp_ast_stmt_t *s);
int rm_collective(rexec_t *X, const sp_ast_expr_t *call, xval_t *out);
int rm_is_collective(const char *name);
int rm_run_ranks(rrun_t *R, sp_diags_t d);
void rm_free(rrun_t *R);
uint32_t rm_group_rank(const rrun_t *R, int rank, uint32_t mask, int member, int *index);
int rm_group_size(const rrun_t *R, uint32_t mask);
int rm_member_index(const rrun_t *R, int rank, const int *ord, int n);

/* ref.c */
uint64_t rr_hash(uint64_t seed, const char *key, int64_t a, int64_t b);
void rr_random(fmpq_t q, uint64_t h, int nonneg);
/* The value of element index of model input key (shape nd, sh): caller-given, else seeded
   (one-hot rows, 0/1 masks, nonnegative adam.v, parameters of 2+ dims divided by their first
   dim); 1 if caller-given. */
int rr_input_value(rrun_t *R, const char *key, int param, int nd, const int64_t *sh, int64_t index,
                   fmpq_t q);

#endif
