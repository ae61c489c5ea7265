/* exec_int.h: internals of execution shared by exec.c, autodiff.c, lineage.c, plan.c and
   exec_pos.c. */
#ifndef SP_EXEC_INT_H
#define SP_EXEC_INT_H

#include <stdint.h>

#include "check.h"

/*
 * The interpreter runs a body once for all ranks at once: every statement computes one tensor
 * per rank (ranks outside an `on` block keep what they had), so collectives see all their
 * inputs when they run.  A model is the same with a single rank and no mesh.  Integer
 * expressions (dims, loop variables, rank.<axis>) are evaluated per rank at "compile time".
 *
 * The model records a tape of operator applications so `train` can derive the backward pass
 * with the operators' VJP rules.
 */

typedef struct {
    const char *name;
    int64_t value;
} ivar_t;

/* one tensor per rank */
typedef sp_tensor_t *pval_t;

/* model tape: value ids of an operator application */
typedef struct {
    char *op;
    sp_attr_t *attr;
    int nattr;
    int *in;
    int nin;
    int out;
} tape_t;

typedef struct {
    sp_check_t *C;
    int is_plan;
    int64_t nranks;
    uint8_t *active;
    /* bindings: C->mvals for the model, pvals for the plan */
    sp_binding_t **vals;
    int *nvals, *avals;
    sp_nameidx_t *index; /* vals by name: &C->mindex or &pindex */
    sp_binding_t *pvals;
    int npvals, apvals;
    sp_nameidx_t pindex;
    int scope;
    ivar_t *ivars;
    int nivars, aivars;
    /* function returns */
    pval_t *ret;
    int *ret_vid;
    int nret;
    int returned;
    int depth;
    /* send/recv queues: FIFO of (src, dst, tensor) */
    struct msg { int64_t src, dst; sp_tensor_t t; int used; sp_loc_t loc; } *msgs;
    int nmsgs, amsgs;
    /* model tape (values by id, nranks == 1) */
    sp_tensor_t *tv;
    int ntv, atv;
    tape_t *tape;
    int ntape, atape;
    int *vid_of_binding; /* parallel to C->mvals */
    int avid;
    int (*alias)[2];     /* forward cuts: {fresh vid, original vid} */
    int nalias;
    int train_seen;
    int outputs_seen;
    const sp_ast_stmt_t **occ_stmt; /* lineage inference: executions of each statement, */
    int **occ_n;                    /* per rank (as the reference executor counts them) */
    int nocc;
    int walk; /* sp_plan_guess_cuts: control flow only, lineage targets collected */
    int pend_ok; /* the next name evaluated may hold a pending max/min (its use checks it) */
    const sp_ast_expr_t *hollow_at; /* --shard: this call or operator's result is computed
                                       hollow (its operands are not): src/shard_exec.c */
    /* plan: the pending max/min of the value the next bind() binds (set by mark_pending or
       the caller, reset by bind) */
    int bind_pend;
    int64_t iters;      /* loop iterations so far (at most 10^6 in all) */
    uint8_t *fn_active; /* the active ranks where the innermost user function was called */
    sp_red_t bind_pend_op;
    sp_axes_t bind_pend_axes;
    /* plan: the inputs whose model tensor has an update `next.NAME`, with the ranks that read
       them (src/plan.c check_replicas_updated) */
    /* the state inputs declared (a model input or parameter X with an update next.X): per
       declaration its layout, the ranks it was declared on and still holds (a later
       declaration on a rank takes it over), the ranks that read the value, and the earlier
       declaration of the same name (1 + its index; 0 for none) */
    struct state_in {
        char *name;
        sp_layout_t L;
        uint8_t *holds, *read;
        sp_loc_t loc;
        int prev;
    } *states;
    int nstates, astates;
} interp_t;

/*
 * The functions below were file-local when execution was one file and keep their short names;
 * their link names carry the prefix sp_interp_ (SP_EXEC_LINK), so that the static library
 * defines no global `bind`, `eval` or `lookup` to collide with a program that links it.  Errors
 * are diagnostics added to I->C->d (errat); a function that fails returns 0 or SP_ERR_INPUT.
 */
#define SP_EXEC_LINK(name) __asm__("sp_interp_" #name)

/* ---- exec.c: the core ------------------------------------------------------------------ */

/* An error diagnostic at loc (printf-style message). */
void errat(interp_t *I, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
    SP_EXEC_LINK(errat);
/* n absent tensors (ndim -1), owned by the caller; pval_free(NULL, n) does nothing. */
pval_t pval_new(int64_t n) SP_EXEC_LINK(pval_new);
void pval_free(pval_t p, int64_t n) SP_EXEC_LINK(pval_free);
/* A deep copy of n per-rank tensors (absent ones stay absent). */
pval_t pval_dup(const sp_tensor_t *p, int64_t n) SP_EXEC_LINK(pval_dup);
/* t (initialized) := fresh symbols named base@N[...] of the given shape (a cut point continues
   from them; so do the parts of a pending reduction). */
void fresh_tensor(sp_check_t *C, const char *base, const int64_t *shape, int ndim,
                  sp_tensor_t *t) SP_EXEC_LINK(fresh_tensor);
/* f (initialized) := fresh symbols base@N[...] in t's shape, with t's extents and no offset (a
   new source: src/ops_pos.c). */
void fresh_like(sp_check_t *C, const char *base, const sp_tensor_t *t, sp_tensor_t *f)
    SP_EXEC_LINK(fresh_like);
/* The same named base SEP N (fresh_tensor's SEP is '@', a cut's; '#' names inputs of the plan,
   the parts of a partial input, which a counterexample may name: src/crosscheck.c); pos (NULL:
   none) its axes' positions, set before the symbols are made. */
void fresh_symbols(sp_check_t *C, const char *base, char sep, const int64_t *shape, int ndim,
                   const sp_pos_t *pos, sp_tensor_t *t) SP_EXEC_LINK(fresh_symbols);
/* The same, the symbols' prefix into prefix[0 .. len) */
void fresh_symbols_as(sp_check_t *C, const char *base, char sep, const int64_t *shape, int ndim,
                      const sp_pos_t *pos, sp_tensor_t *t, char *prefix, size_t len)
    SP_EXEC_LINK(fresh_symbols_as);

/* The most recent binding of name, or NULL. */
sp_binding_t *lookup(interp_t *I, const char *name) SP_EXEC_LINK(lookup);
/* Bind name to val (taken) on the active ranks; vid is the model's value id (-1 in a plan). */
int bind(interp_t *I, const char *name, sp_loc_t loc, pval_t val, int vid) SP_EXEC_LINK(bind);
/* The binding a plain name or an indexed name (w[l]) denotes, or NULL (no diagnostics). */
sp_binding_t *binding_of(interp_t *I, const sp_ast_expr_t *e) SP_EXEC_LINK(binding_of);
/* Pending max/min (partial(max|min@axes)): mark a binding, test axes, report a misuse. */
void mark_pending(interp_t *I, const sp_layout_t *L) SP_EXEC_LINK(mark_pending);
int axes_cover(const sp_axes_t *b, const sp_axes_t *a) SP_EXEC_LINK(axes_cover);
void pending_error(interp_t *I, sp_loc_t loc, const sp_binding_t *b, const char *what)
    SP_EXEC_LINK(pending_error);

/* Integer expressions: is e one, and its value on rank (rank -1: the same on every rank). */
int is_int_expr(interp_t *I, const sp_ast_expr_t *e) SP_EXEC_LINK(is_int_expr);
int eval_int(interp_t *I, const sp_ast_expr_t *e, int64_t rank, int64_t *out)
    SP_EXEC_LINK(eval_int);

/* Layouts from the source: mesh axes (used: axes taken so far, or NULL), and a whole layout
   (for a model, any sharding is an error; L is clear on failure). */
int resolve_axes(interp_t *I, const sp_ast_name_t *names, size_t n, sp_axes_t *out,
                 uint8_t *used) SP_EXEC_LINK(resolve_axes);
int resolve_layout(interp_t *I, const sp_ast_layout_t *al, sp_layout_t *L)
    SP_EXEC_LINK(resolve_layout);
/* "[2, 4]" */
void shape_str(const int64_t *s, int n, char *buf, size_t len) SP_EXEC_LINK(shape_str);
/* A model value at a cut point: its value is kept in C->morig and the binding continues from
   fresh symbols of the same shape (the fresh tensor is returned in *fresh when not NULL). */
void cut_model_value(sp_check_t *C, sp_binding_t *b, const char *name, sp_tensor_t *fresh)
    SP_EXEC_LINK(cut_model_value);
/* 1 if layout L has model tensor mt's shape, else an error (code) at loc naming the tensor */
int layout_matches_model(interp_t *I, const sp_layout_t *L, const sp_tensor_t *mt,
                         sp_diag_code_t code, sp_loc_t loc, const char *name)
    SP_EXEC_LINK(layout_matches_model);
/* The target of a lineage or output: NAME, or NAME[i, ...] with integer indices -> "w[3]". */
int target_name(interp_t *I, const sp_ast_expr_t *t, char *buf, size_t len)
    SP_EXEC_LINK(target_name);
/* An attribute from an argument expression, for one rank: *a is initialized here, and its num
   and list are the caller's to clear, also on failure. */
int make_attr(interp_t *I, const sp_ast_arg_t *arg, int64_t rank, int value, sp_attr_t *a)
    SP_EXEC_LINK(make_attr);

/* A tensor expression on every active rank: *out owned by the caller, *vid its model value id. */
sp_status_t eval(interp_t *I, const sp_ast_expr_t *e, pval_t *out, int *vid) SP_EXEC_LINK(eval);
sp_status_t exec_stmt(interp_t *I, const sp_ast_stmt_t *s) SP_EXEC_LINK(exec_stmt);
sp_status_t exec_block(interp_t *I, const sp_ast_block_t *b) SP_EXEC_LINK(exec_block);
/* Free what the interpreter owns (not C's bindings of a model). */
void interp_clear(interp_t *I) SP_EXEC_LINK(interp_clear);

/* ---- autodiff.c: the model's tape ----------------------------------------------------- */

/* A copy of t as a new value id (-1 in a plan). */
int tv_add(interp_t *I, const sp_tensor_t *t) SP_EXEC_LINK(tv_add);
/* Record out = op(in[0..nin)) with copies of the attributes (nothing in a plan, or when a value
   id is -1). */
void tape_add(interp_t *I, const char *op, const sp_attr_t *attr, int nattr, const int *in,
              int nin, int out) SP_EXEC_LINK(tape_add);
void attrs_free(sp_attr_t *a, int n) SP_EXEC_LINK(attrs_free);
/* The length of the prefix 'train' derives a name with (grad., next., momentum., adam.m., ...),
   0 if none; the tensor a derived name is made for, every such prefix stripped (next.adam.m.w:
   w). */
size_t train_prefix(const char *name) SP_EXEC_LINK(train_prefix);
const char *train_base(const char *name) SP_EXEC_LINK(train_base);

/* ---- lineage.c: cut points and stages -------------------------------------------------- */

int is_cut(sp_check_t *C, const char *name) SP_EXEC_LINK(is_cut);
void add_cut(sp_check_t *C, const char *name) SP_EXEC_LINK(add_cut);
/* Relate the plan value *val of pname to model tensor mname (a stage; at a lineage cut *val is
   replaced).  relate_l: the layout given (inferred) instead of al, and rows of dim 0 (rows in
   the source, or given_rows[0..2) when given_rows is not NULL). */
sp_status_t relate(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                   const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al, pval_t *val)
    SP_EXEC_LINK(relate);
sp_status_t relate_l(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                     const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al,
                     const sp_layout_t *given, const sp_ast_expr_t *rows,
                     const int64_t *given_rows, pval_t *val) SP_EXEC_LINK(relate_l);
/* --infer-lineage: relate an assignment without lineage as src/infer.c proposed (a stage and a
   cut), when the active ranks are all at the same occurrence of s and one was proposed for it;
   a proposal that does not fit the checker's values is dropped (no diagnostic). */
sp_status_t relate_inferred(interp_t *I, const sp_ast_stmt_t *s, const char *pname, pval_t *val)
    SP_EXEC_LINK(relate_inferred);

/* ---- plan.c: the plan ------------------------------------------------------------------ */

/* The plan's mesh (its first statement) into C->mesh, and I set up for the plan's ranks. */
sp_status_t plan_mesh(sp_check_t *C, interp_t *I) SP_EXEC_LINK(plan_mesh);
/* The plan's value, on every active rank, of a tensor whose logical value is full under L;
   input: full is a plan input (a partial layout's parts are inputs too), else a cut.  NULL
   after an error at loc (a pending entry's group not wholly among the active ranks). */
pval_t distribute(interp_t *I, const sp_layout_t *L, const sp_tensor_t *full, const char *name,
                  sp_loc_t loc,
                  int input)
    SP_EXEC_LINK(distribute);
/* plan: x : layout  (a model input or param, distributed) */
sp_status_t plan_layout_decl(interp_t *I, const sp_ast_stmt_t *s) SP_EXEC_LINK(plan_layout_decl);
/* A collective or send/recv call across the active ranks. */
sp_status_t call_collective(interp_t *I, const sp_ast_expr_t *e, pval_t *out)
    SP_EXEC_LINK(call_collective);

/* ---- exec_pos.c: shape reduction while executing ------------------------------------------ */

/* y = name(in..) at e: the offsets and extents its text gives (a slice's start and extent, a
   chunk's piece, a reshape's new extents: src/ops_pos.c carried the rest), and the splits no
   layout writes (attention's groups, a reshape's -1, a chunk's count) checked at the real
   sizes; what is not of the claim's form is reported (sp_note_clamped). */
void sp_refine_pos(sp_check_t *C, const sp_ast_expr_t *e, const char *name,
                   const sp_ast_arg_t *const *args, const sp_attr_t *attrs, int na,
                   const sp_tensor_t *in, int nin, sp_tensor_t *y);

#endif
