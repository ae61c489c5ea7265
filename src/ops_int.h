/* ops_int.h: what the files of the tensor operator library share (src/ops.c has the overview). */
#ifndef SP_OPS_INT_H
#define SP_OPS_INT_H

#include <stdint.h>

#include "ops.h"

#define NUMEL_LIMIT ((int64_t)1 << 30)
#define ATTR_INT_LIMIT ((int64_t)1 << 40)

/* A shape as text, by value so that it can be used inline in a message. */
typedef struct {
    char s[160];
} shstr_t;

typedef struct op_def op_def_t;

typedef struct {
    sp_ectx_struct *E;
    const op_def_t *def;
    const char *name; /* as called, for messages */
    const sp_tensor_t *in;
    int nin;
    const sp_attr_t *attr;
    int nattr;
    int64_t max_numel;
    sp_op_err_t *err;
    int nconv; /* attr[0..nconv) were made from trailing literal tensors (prepare) */
    unsigned want; /* VJP: the inputs whose gradients are asked for (bit k: in[k]); 0 = all */
    unsigned red_mask; /* a reduction's dims (bit d), set by its forward with red_set */
    int red_keep, red_set;
    const sp_op_env_t *env; /* the caller's (NULL: none) */
} opc_t;

enum { DM_AFFINE = 0, DM_MOD, DM_DIV, DM_PAD };

/* Output dim d reads input dim `dim` (or none if dim < 0) at index a*o+b, o%a, o/a or o-b. */
typedef struct {
    int dim;
    int kind;
    int64_t a, b;
} dmap_t;

/* A gather: output element i is element src[i] of the inputs' element arrays laid end to end,
   or fill when src[i] < 0; src NULL means src[i] = i (a reshape).  dm[0..ndm): the dim maps of
   a gather made by dims (src/ops_pos.c reads them); cat: 1 + the dim of a concatenation. */
typedef struct {
    int ndim;
    int64_t shape[SP_MAX_DIMS];
    int64_t *src;
    sp_expr_t fill;
    dmap_t dm[SP_MAX_DIMS];
    int ndm, cat;
} gather_t;

typedef int (*fwd_fn)(opc_t *c, sp_tensor_t *out);
/* y is the forward output (recomputed), dy its gradient; din has c->nin tensors with ndim -1. */
typedef int (*vjp_fn)(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
typedef int (*gather_fn)(opc_t *c, gather_t *g);

#define OPF_NOGRAD 1u  /* derivative zero almost everywhere: no input gets a gradient */
#define OPF_LITATTR 2u /* trailing 0-d constant tensors are positional attributes */
#define OPF_VJP_OWN 4u /* the VJP rule checks dy's shape itself and never reads y: without the
                          forward output at hand, the forward is not rebuilt for it */

struct op_def {
    const char *name;
    fwd_fn fwd;
    vjp_fn vjp;
    gather_fn gather; /* shape operators */
    int min_in, max_in; /* tensor arguments; max_in < 0: unbounded */
    const char *keys;   /* attribute keys in positional order, ',' separated, '|' aliases */
    int npos;           /* how many leading keys may be positional */
    int code, sub;      /* operator-specific */
    unsigned flags;
    const char *base;   /* gradient operators: the forward operator */
};

/* Compressed groups: the members of group g are idx[start[g] .. start[g+1]), ascending. */
typedef struct {
    int64_t ng;
    int64_t *start;
    int64_t *idx;
} groups_t;

/* op_def.code of the elementwise operators, the reductions and the softmax family */
enum {
    EW_UNARY = 0, EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_SCALE, EW_POW, EW_MAXIMUM, EW_MINIMUM,
    EW_CLAMP, EW_WHERE, EW_CMP, EW_DROPOUT
};

enum { RED_SUM = 0, RED_MEAN, RED_MAX, RED_MIN, RED_LSE };

enum { SM_SOFTMAX = 0, SM_LOG, SM_CAUSAL };

/* ops.c */
int64_t shape_numel(int ndim, const int64_t *shape);
void unravel(int64_t i, int ndim, const int64_t *shape, int64_t *idx);
/* In a --shard trace (src/shard_exec.c: every source tensor one symbol, dot products as sets),
   whether every element of t (of v[0..n)) is one node: an operator whose operands are all
   uniform computes one element, lane or head and copies it with trace_repeat.  Never in a full
   run (its nodes are made in the same order as ever), nor under E->trace_slow (the tests). */
int trace_uniform(const opc_t *c, const sp_tensor_t *t);
int trace_same(const opc_t *c, const sp_expr_t *v, int64_t n);
/* v's first block of blk words copied onto its blocks 1 .. nblk - 1 */
void trace_repeat(sp_expr_t *v, int64_t blk, int64_t nblk);
shstr_t SH(int ndim, const int64_t *shape);
shstr_t TS(const sp_tensor_t *t);
int wanted(const opc_t *c, int k);
int fail(opc_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the error being set is a resource limit's (sp_op_err_t.elements), not bad use */
void mark_elements(opc_t *c);
int fail_elements(opc_t *c, const char *shape, int64_t n);
int fail_too_large(opc_t *c, const char *shape);
const sp_attr_t *get_attr(const opc_t *c, const char *key);
int num_to_int(const sp_attr_t *a, int64_t *out);
int attr_int(opc_t *c, const char *key, int64_t dflt, int64_t *out, int *present);
int attr_need_int(opc_t *c, const char *key, int64_t *out);
int attr_flag(opc_t *c, const char *key, int *out);
int attr_num(opc_t *c, const char *key, slong num, ulong den, fmpq_t out, int *present);
int attr_list(opc_t *c, const char *key, int64_t *one, const int64_t **list, int *n,
              int *present);
int norm_dim(opc_t *c, int64_t d, int ndim, int *out);
int out_alloc(opc_t *c, sp_tensor_t *out, int ndim, const int64_t *shape);
int valid_tensor(const sp_tensor_t *t);

/* ops_base.c */
sp_expr_t K(sp_ectx_t E, slong num, ulong den);
/* The number of x's elements over the dims in mask (bit d), m at the shapes seen: the real
   count where the caller knows it (c->env), else m; into out, or as a constant (its inverse
   when inverse is 1).  What a mean divides by (docs/soundness.md "Sizes as values"). */
void count_real(opc_t *c, const sp_tensor_t *x, unsigned mask, int64_t m, fmpq_t out);
sp_expr_t count_const(opc_t *c, const sp_tensor_t *x, unsigned mask, int64_t m, int inverse);
sp_expr_t mul2(sp_ectx_t E, sp_expr_t a, sp_expr_t b);
void pairs(sp_expr_t *px, sp_expr_t *py, const sp_expr_t *x, int64_t sx, const sp_expr_t *y,
           int64_t sy, int64_t n);
sp_expr_t mul3(sp_ectx_t E, sp_expr_t a, sp_expr_t b, sp_expr_t c);
sp_expr_t add2(sp_ectx_t E, sp_expr_t a, sp_expr_t b);
sp_expr_t sub2(sp_ectx_t E, sp_expr_t a, sp_expr_t b);
/* The sum of v[0..n) (zeros dropped; v is reordered).  addv marks it a sum over an axis, whose
   terms the stage tests for a count (solver.c sp_engine_counts); addv_terms does not, for a sum
   whose count is the operator's meaning (top-k's rank) */
sp_expr_t addv(sp_ectx_t E, sp_expr_t *v, int64_t n);
sp_expr_t addv_terms(sp_ectx_t E, sp_expr_t *v, int64_t n);
sp_expr_t *scratch(opc_t *c, int64_t n);
int extremal_grads(sp_ectx_t E, sp_expr_t e, const sp_expr_t *m, uint32_t n, int is_max,
                   sp_expr_t *ind);
void strides_of(int ndim, const int64_t *shape, int64_t *st);
int bcast_shape(int an, const int64_t *as, int bn, const int64_t *bs, int *on,
                int64_t *os);
int can_expand(int in_nd, const int64_t *in_shape, int out_nd, const int64_t *out_shape);
int64_t *bcast_map(int in_nd, const int64_t *in_shape, int out_nd,
                   const int64_t *out_shape);
void groups_clear(groups_t *g);
int groups_build(groups_t *g, const int64_t *map, int64_t n, int64_t ng);
int scatter_sum(opc_t *c, const sp_expr_t *vals, const int64_t *map, int64_t n, int64_t ng,
                sp_expr_t *res);
int reduce_map(opc_t *c, const sp_tensor_t *x, const int *mask, int keepdim, int *ondim,
               int64_t *oshape, int64_t **map, int64_t *nout);
int lanes_build(opc_t *c, const sp_tensor_t *x, int dim, groups_t *g);
int lane_dim(opc_t *c, const sp_tensor_t *x, int *dim);

/* ops_elem.c */
int ew_forward(opc_t *c, int code, int sub, sp_tensor_t *out);
int fwd_ew(opc_t *c, sp_tensor_t *out);
int ew_vjp(opc_t *c, int code, int sub, const sp_tensor_t *y, const sp_tensor_t *dy,
           sp_tensor_t *din);
int vjp_ew(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);

/* ops_shape.c */
int check_numel(opc_t *c, int ndim, const int64_t *shape);
int g_reshape(opc_t *c, gather_t *g);
int g_flatten(opc_t *c, gather_t *g);
int g_squeeze(opc_t *c, gather_t *g);
int g_unsqueeze(opc_t *c, gather_t *g);
int g_transpose(opc_t *c, gather_t *g);
int g_permute(opc_t *c, gather_t *g);
int g_expand(opc_t *c, gather_t *g);
int g_slice(opc_t *c, gather_t *g);
int g_chunk(opc_t *c, gather_t *g);
int g_split(opc_t *c, gather_t *g);
int g_pad(opc_t *c, gather_t *g);
int g_repeat(opc_t *c, gather_t *g);
int g_repeat_interleave(opc_t *c, gather_t *g);
int g_concat(opc_t *c, gather_t *g);
int fwd_gather(opc_t *c, sp_tensor_t *out);
/* src/ops_pos.c: the offsets of a gather's output, and of any other operator's */
void pos_gather(opc_t *c, const gather_t *g, sp_tensor_t *out);
void pos_op(opc_t *c, sp_tensor_t *out);
int vjp_gather(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);

/* ops_reduce.c */
int fwd_reduce(opc_t *c, sp_tensor_t *out);
int vjp_reduce(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_softmax(opc_t *c, sp_tensor_t *out);
int fwd_causal_mask(opc_t *c, sp_tensor_t *out);
int vjp_softmax(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_softmax_grad(opc_t *c, sp_tensor_t *out);
int fwd_norm(opc_t *c, sp_tensor_t *out);
int vjp_norm(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_ce(opc_t *c, sp_tensor_t *out);
int vjp_ce(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_ce_grad(opc_t *c, sp_tensor_t *out);
int dy_fits(opc_t *c, const sp_tensor_t *dy, int ndim, const int64_t *shape);

/* ops_nn.c */
int fwd_matmul(opc_t *c, sp_tensor_t *out);
int vjp_matmul(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int g_embedding_ids(opc_t *c, gather_t *g);
int fwd_embedding(opc_t *c, sp_tensor_t *out);
int vjp_embedding(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_rope(opc_t *c, sp_tensor_t *out);
int vjp_rope(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_rope_grad(opc_t *c, sp_tensor_t *out);
int fwd_attention(opc_t *c, sp_tensor_t *out);
int vjp_attention(opc_t *c, const sp_tensor_t *y, const sp_tensor_t *dy, sp_tensor_t *din);
int fwd_topk_mask(opc_t *c, sp_tensor_t *out);

#endif
