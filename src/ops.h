/* ops.h: the tensor operator library: forward semantics of every operator on symbolic tensors. */
#ifndef SP_OPS_H
#define SP_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <flint/fmpq.h>

#include "expr.h"

/*
 * A symbolic tensor: a shape (at the reduced sizes, so small) and one engine expression per
 * element, row-major.  Tensors own their element arrays (sp_tensor_clear frees them); the
 * expressions live in the engine's expression store.  A scalar has ndim 0 and one element.
 */
#define SP_MAX_DIMS 8

/*
 * Where an axis's positions sit in the tensors it was cut from (src/ops_pos.c; docs/soundness.md
 * "Offsets"): off[] holds up to three offset descriptors, one per kind of source it reads (0: none),
 * or SP_POS_MIX in off[0] when the offset is not known to be one monomial in the sizes; ext is
 * the id of its extent's monomial (0: not known); inexact is 1 when an axis it was derived from
 * (a slice's operand, a reshape's merged dims, an embedding's table rows) had an extent that is
 * not exact, so its positions may lie in a dim a reduced size reaches even where its own extent
 * is exact; view is nonzero when the axis is a merge of several axes or a part of a split axis
 * (a reshape): a position on it is a combination of positions of several axes (a flat position
 * A of [S, S] is row A div S, column A mod S; row 3 of the inner part of [4, N/4] is a literal
 * after a block), so only blocks may be added to it, and literals to the outer part of a split
 * into a count that keeps its real size (SP_VIEW_OUTER: k of its pieces are a block of the axis
 * split).  A descriptor is
 * (monomial id << 2) | (the size term comes from blocks only << 1) | (a literal term).
 */
#define SP_POS_MIX (-1)
#define SP_POS_LIT 1            /* descriptor bits: a literal term is added */
#define SP_POS_BLK 2            /* ... the size term comes from blocks only */
#define SP_POS_FRESH (1 << 24)  /* monomial ids from here on are fresh (src/exec_pos.c
                                   sp_pos_fresh): equal to no other, their scale not known */
#define SP_POS_NOFF 3
#define SP_VIEW_MERGED 1  /* view bits: a merge of axes */
#define SP_VIEW_OUTER 2   /* the outer part of a split axis */
#define SP_VIEW_INNER 4   /* another part of a split axis */
#define SP_VIEW_BLOCKED 8 /* with a merge: a block was added, not yet checked (src/exec_pos.c) */
#define SP_RESCALED 1       /* rescaled bits (below) */
#define SP_RESCALED_INNER 2
typedef struct {
    int32_t off[SP_POS_NOFF];
    int32_t ext;
    int32_t inexact;
    int32_t view;
    int32_t inner_r, inner_id; /* a merge: the extent of the axes inside its outermost one (0:
                                  not one product of whole axes) and its monomial's id */
    int32_t blk_r;             /* SP_VIEW_BLOCKED: the block's reduced extent where it is not
                                  the axis's (a concatenation's part, a tile), else 0 */
    int32_t rescaled;          /* SP_RESCALED: a window of an axis it was cut from whose extent
                                  is scaled otherwise from the reduced sizes to the real ones (a
                                  slice at 0..M of N): a block cut from it is no block of that
                                  axis, its coefficient times another scale (sp_pos_compose
                                  makes it a size term); SP_RESCALED_INNER: a merge with such a
                                  window inside its outermost axis (a block on the merge is
                                  whole rows of it, src/exec_pos.c merged_blocks, so only a part
                                  a reshape splits from the merge is one) */
    int32_t src;               /* a view: the monomial whose scale its blocks' positions have in
                                  the axis it was cut from (a split's outer part and a merge:
                                  that axis's block scale, A*(N/A) rows of N; another part of
                                  that axis's scale: the same), 0 where it is the axis's own
                                  extent's (no view; an inner part scaled otherwise has a host),
                                  SP_POS_MIX where not known: a block added there is reported */
    int32_t host;              /* an inner part of a split scaled otherwise than the axis it was
                                  cut from, which is no view nor window (src/exec_pos.c
                                  view_scales): that axis's extent's monomial id, whose scale the
                                  axis holding this one's positions has.  A block on it stays a
                                  block of its own scale (positions k*K/c of N), compared with the
                                  blocks of other scales that may sit on an axis of the host's
                                  scale (src/exec_pos.c sp_check_t.pos_host); 0: none */
    int32_t hblk;              /* host: the monomial of the last block composed on it while it
                                  had one (sp_pos_compose), which src/exec_pos.c sp_pos_note
                                  records with the host; blocks there before keep their scale */
    int32_t grp;               /* a grouped read's output axis (attention's query heads, NH,
                                  reading key heads, NKV, in groups; a key head's gradient
                                  summing query heads): the monomial id of the operand axis
                                  read in groups, where a block k*NH/c of this axis reads
                                  k*NKV/c (src/exec_pos.c note_terms compares that block
                                  too; 1, an exact extent: nothing to compare); -1 two
                                  such joined, or an extent not known; 0 none.  A view keeps it (a
                                  block on a merge of the heads is whole heads) */
    int32_t src2;              /* sp_pos_union: a second view's scale joined, or -1: an axis
                                  that is no view joined (its blocks of its extent's scale);
                                  src/exec_pos.c sp_pos_note keeps src where they scale alike,
                                  else makes it SP_POS_MIX, and clears src2 */
} sp_pos_t;

typedef struct {
    int ndim;
    int64_t shape[SP_MAX_DIMS];
    sp_expr_t *v;
    sp_pos_t pos[SP_MAX_DIMS];
    int32_t masks;      /* the slack of the causal masks these values may compose (0: none;
                           src/ops.c mask_count): a composition of masks keeps their slacks'
                           sum apart (docs/soundness.md, "Positional patterns", helper-88's
                           and helper-89's reviews) */
    uint32_t mask_axes; /* the axes those masks' patterns lie on (bit d), SP_MASK_AXES_ANY when
                           not known */
    int32_t mask_ext;   /* a pattern summed over an axis relates the kept axes to that axis's
                           elements, now in the values: its extent's monomial id (0: none; -1:
                           several or not known; src/ops.c mask_count) */
} sp_tensor_t;

#define SP_MASK_AXES_ANY 0x80000000u
/* src's masks joined into dst's for values combined at one position (a sum over ranks, an
   accumulated gradient): the larger where both lie on the same known axes and were summed over
   axes of one extent (mask_ext), else the sum */
void sp_masks_join(sp_tensor_t *dst, const sp_tensor_t *src);
/* a + b mask slack, saturating at 2^20 */
int32_t sp_masks_add(int64_t a, int64_t b);

/* src/ops_pos.c: offset descriptors.  A term is a descriptor: sp_pos_term(id, blk) for a size
   term of monomial id (id 1: the constant monomial, a literal term), 0 for no term. */
int32_t sp_pos_term(int32_t id, int blk);
/* Add term to every descriptor of p; 0 (and p mixed) when a sum of sizes results, 2 when a
   sum of exact terms (literals) does, else 1.  So sp_pos_block, _concat and _piece. */
int sp_pos_compose(sp_pos_t *p, int32_t term);
/* dst's offsets become the union of dst's and src's. */
void sp_pos_union(sp_pos_t *dst, const sp_pos_t *src);
/* The scale a block added on p has (p->src, else its extent's monomial id; 0 not known) */
int32_t sp_pos_blk_scale(const sp_pos_t *p);
/* The local part of full that starts at start[] (a layout's or a collective's block): 0 when an
   offset became a sum of sizes.  *next gives fresh monomial ids for extents not known. */
int sp_pos_block(sp_tensor_t *local, const sp_tensor_t *full, const int64_t *start, int32_t *next);
/* Give every dim of t whose extent's monomial is not known a fresh id (*next). */
void sp_pos_fill_ext(sp_tensor_t *t, int32_t *next);
/* out, the concatenation of parts[0..n) along dim (n < 0: too many to read), or piece k of n
   equal pieces of t along d: 0 when an offset became a sum of sizes (or is not known not to). */
int sp_pos_concat(sp_tensor_t *out, const sp_tensor_t *const *parts, int n, int dim);
int sp_pos_piece(sp_tensor_t *out, const sp_tensor_t *t, int d, int64_t k);
/* The kinds of offsets t's axes carry: SP_POS_SIZE (a size term: a monomial that is not
   exact, not a block) and SP_POS_BLKLIT (blocks plus a literal) */
#define SP_POS_SIZE 1
#define SP_POS_BLKLIT 2
int sp_pos_forms(const sp_tensor_t *t);

void sp_tensor_init(sp_tensor_t *t);
void sp_tensor_clear(sp_tensor_t *t);
/* Allocate t with the given shape (elements SP_EXPR_NONE).  Returns 0 if too large. */
int sp_tensor_alloc(sp_tensor_t *t, int ndim, const int64_t *shape);
int64_t sp_tensor_numel(const sp_tensor_t *t);
void sp_tensor_copy(sp_tensor_t *dst, const sp_tensor_t *src);
/* Fill with fresh symbols named prefix[i,j,...] (e.g. "x[0,1]"). */
int sp_tensor_symbols(sp_ectx_t E, sp_tensor_t *t, const char *prefix);
int sp_tensor_same_shape(const sp_tensor_t *a, const sp_tensor_t *b);
/* "[2, 3]" into buf. */
void sp_tensor_shape_str(const sp_tensor_t *t, char *buf, size_t len);

/* Operator attributes: keyword arguments, and positional non-tensor arguments. */
typedef enum { SP_ATTR_NUM = 0, SP_ATTR_NAME, SP_ATTR_LIST } sp_attr_kind_t;

typedef struct {
    const char *key;        /* keyword, or NULL for a positional non-tensor argument */
    sp_attr_kind_t kind;
    fmpq_t num;             /* SP_ATTR_NUM: an exact rational (an integer when den = 1) */
    const char *name;       /* SP_ATTR_NAME: an identifier such as sum, max, tp */
    int64_t *list;          /* SP_ATTR_LIST: integers */
    int nlist;
} sp_attr_t;

/* Error text of a failed operator (shape mismatch, bad attribute, ...), without location. */
typedef struct {
    char msg[512];
    int attr; /* sp_ops_apply: the index in attr[] of the attribute at fault, or -1 */
    int64_t div_size, div_by; /* a collective: a dim of size div_size not divisible by div_by */
    int64_t div_min;          /* ... and a multiple of div_by at least this many times it */
    int elements;             /* 1: the output exceeds max_numel (a resource limit, not bad use) */
    int clamped;              /* an sp_clamp_t, set on success too (src/check.c re-checks a
                                 run at reduced sizes at the real ones) */
    int64_t exact_sum;        /* > 0: a concatenation of exact extents made this extent, a
                                 size of the program (src/exec_pos.c sp_note_exact_extent) */
    int counted;              /* a count (a mean's, a norm's) taken at
                                 a real count other than the one seen: a size used as a value
                                 (src/exec_pos.c sp_note_value_real) */
} sp_op_err_t;

/* A composition's result k (src/ops_pos.c sp_pos_compose, _concat, _piece) into err: 0 a sum of
   sizes (SP_CLAMP_OFFSET), 2 an exact sum (SP_CLAMP_EXACT, unless a sum was reported), else
   nothing */
void sp_pos_report(sp_op_err_t *err, int k);

/* What an operator or a collective did that the shape reduction does not keep. */
typedef enum {
    SP_CLAMP_NONE = 0,
    SP_CLAMP_BOUND,    /* a bound beyond its dim: a slice clamped, a top-k k above its lane, a
                          causal offset past the keys */
    SP_CLAMP_SUM_READ, /* an extent that is a sum of sizes unless src/reduce_sums.c read it at
                          this call: unequal concatenated parts */
    SP_CLAMP_SUM,      /* an extent that is a sum of sizes: a padding, a slice counted from the
                          end or with a step, a partial chunk or split part, unequal split
                          sizes, unequal members of a collective, a recv read otherwise */
    SP_CLAMP_GROUP,    /* blocks of a size the program does not write (attention's query heads
                          per key/value head): only in a program with literal positions */
    SP_CLAMP_OFFSET,   /* a position that is a sum of sizes: offsets of different monomials
                          composed along one axis (src/ops_pos.c) */
    SP_CLAMP_EXACT,    /* a position that is a sum of exact terms (literals, sizes at their real
                          sizes): real sizes only with a size term on an exact dim (src/exec.c) */
    SP_CLAMP_PAIR,     /* positions of two monomials no rule keeps apart (src/exec_pos.c
                          note_terms, slice_bounds_real) */
    SP_CLAMP_BOUND_REAL, /* a slice's bound past its dim at the real sizes only (src/exec_pos.c
                           slice_bounds_real) */
    SP_CLAMP_COUNT,    /* a count an operator divides by (a mean, a norm, a mean cross entropy,
                          attention's default scale) not known at the real sizes: an extent's
                          monomial not known, or a shard of an uneven split (src/ops_base.c
                          count_real; docs/soundness.md "Sizes as values") */
    SP_CLAMP_RESHAPE,  /* a reshape to a written shape whose element count is not the
                          operand's at the reduced sizes: they may agree at the real sizes
                          only (N = B*S, a product the reduction does not keep) */
    SP_CLAMP_ORDER     /* a causal pattern between queries and keys of two sizes: the rows
                          past the last key and the keys past the last query are counts of
                          their difference, which the reduction does not keep (src/exec_pos.c
                          causal_edges) */
} sp_clamp_t;

/*
 * What an operator asks of its caller beyond its operands (NULL: nothing).  real_count: the
 * number of elements of x over the dims in mask (bit d) at the real sizes, into out; 0 when not
 * known.  A mean, a norm and a mean cross entropy divide by it, so that a count at reduced
 * shapes is the real one, as a size written as a value is (src/exec_pos.c sp_pos_real_count;
 * docs/soundness.md "Sizes as values"); without it they divide by the count they see.
 */
typedef struct {
    int (*real_count)(void *ctx, const sp_tensor_t *x, unsigned mask, fmpq_t out);
    void *ctx;
} sp_op_env_t;

/*
 * Apply the operator `name` to tensors in[0..nin) with attributes attr[0..nattr).
 * On success returns 1 and sets *out (initialised by the caller with sp_tensor_init).
 * On bad input (unknown operator, wrong arity, shape mismatch, bad attribute) returns 0 with a
 * message in err such as "matmul: inner dimensions differ: [2, 3] and [4, 5]".
 * Never aborts on input.  max_numel bounds the output's element count (0 = no bound).
 */
int sp_ops_apply(sp_ectx_t E, const char *name, const sp_tensor_t *in, int nin,
                 const sp_attr_t *attr, int nattr, int64_t max_numel, sp_tensor_t *out,
                 sp_op_err_t *err);
/* ... with env */
int sp_ops_apply_env(sp_ectx_t E, const sp_op_env_t *env, const char *name, const sp_tensor_t *in,
                     int nin, const sp_attr_t *attr, int nattr, int64_t max_numel,
                     sp_tensor_t *out, sp_op_err_t *err);

/*
 * The vector-Jacobian product of operator `name` at inputs in[0..nin) (same arguments as
 * sp_ops_apply): given dout, the gradient of some scalar with respect to the operator's output,
 * fills din[k] with the gradient with respect to in[k] (unbroadcast to in[k]'s shape).  din has
 * nin tensors initialised by the caller; inputs that get no gradient (masks, conditions, one-hot
 * ids, comparison operands, ...) are left with ndim -1 and v NULL.  out, if not NULL and
 * valid, must be the forward output at these inputs (a model's tape keeps it): it is used as
 * such and the forward is not rebuilt (rebuilding it costs a lookup per node, as much as the
 * forward itself); else the forward is rebuilt where the rule needs it.  Piecewise rules follow
 * sp_expr_diff's tie conventions.  Returns 1, or 0 with a message
 * in err (din then all ndim -1).  src/ops.c lists the operators and their attributes.
 */
int sp_ops_vjp(sp_ectx_t E, const char *name, const sp_tensor_t *in, int nin,
               const sp_attr_t *attr, int nattr, const sp_tensor_t *out, const sp_tensor_t *dout,
               sp_tensor_t *din, sp_op_err_t *err);
/* ... with env */
int sp_ops_vjp_env(sp_ectx_t E, const sp_op_env_t *env, const char *name, const sp_tensor_t *in,
                   int nin, const sp_attr_t *attr, int nattr, const sp_tensor_t *out,
                   const sp_tensor_t *dout, sp_tensor_t *din, sp_op_err_t *err);

/* 1 if name is a known (non-collective) operator. */
int sp_ops_known(const char *name);

/* 1 if the attribute of operator name given by keyword key (or, key NULL, at positional index
   pos) is a value the operator computes with (`scale`'s c, pow's exponent, an eps, a bound, a
   probability, attention's scale), not a position, an extent, a count or a flag: a size
   written there is a size used as a value (src/exec.c make_attr; docs/soundness.md "Sizes as
   values"). */
int sp_ops_attr_is_value(const char *name, const char *key, int pos);

/*
 * The operator table as data, for the reference docs/operators.md (`shardproof ops --markdown`).
 * Every string is static.
 */
typedef struct {
    const char *name;
    int min_in, max_in; /* tensor arguments (max_in < 0: any number) */
    const char *attrs;  /* attribute keys in positional order, ',' separated, '|' aliases */
    int npos;           /* how many leading attributes may be given positionally */
    int vjp;            /* 1: a VJP rule (train differentiates it); 0: no input gets a gradient
                           (derivative 0 almost everywhere); -1: none (gradient operators) */
    const char *grad_of;/* gradient operators: the forward operator, else NULL */
    const char *kind;   /* "rational", "atoms" or "piecewise"; NULL if undocumented (a bug) */
    const char *doc;    /* semantics, markdown; NULL if undocumented (a bug) */
} sp_op_info_t;

int sp_ops_count(void);
/* The i-th operator of the table; 0 if i is out of range. */
int sp_ops_info(int i, sp_op_info_t *out);

/* The list of known operator names, NULL-terminated (for "did you mean" suggestions). */
const char *const *sp_ops_names(void);

#endif
