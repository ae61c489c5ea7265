/* nns_int.h: what the files of the nnScaler importer share (src/import/nnscaler.c has the overview). */
#ifndef SP_NNS_INT_H
#define SP_NNS_INT_H

#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "nnscaler.h"


#define MAXD 8                 /* dims per tensor */
#define MAXTP 64               /* tensor-parallel degree */
#define MAXAX 8
#define LIM_DEV 4096
#define LIM_COUNT 1000000      /* array lengths */
#define LIM_SIZE ((int64_t)1 << 40)

typedef struct ablk {
    struct ablk *next;
    size_t used, cap;
    max_align_t data[];
} ablk_t;

struct plan;

typedef struct ictx {
    jmp_buf jb;
    char *err;
    size_t errlen;
    ablk_t *ar;
    json_t *roots[2];
} ictx_t;

/* string builders in the arena (nothing to free on error paths) */
extern _Thread_local ictx_t *g_X; /* the import under way (string builders) */

typedef struct {
    char *s;
    size_t len, cap;
} abuf_t;

/* growable arrays */
#define VEC(T) struct { T *v; int n, cap; }
#define VPUSH(X, a, x)                                                                             \
    do {                                                                                           \
        if ((a).n == (a).cap) {                                                                    \
            int nc_ = (a).cap ? 2 * (a).cap : 16;                                                  \
            void *nv_ = ar_alloc((X), (size_t)nc_ * sizeof(*(a).v));                               \
            if ((a).n)                                                                             \
                memcpy(nv_, (a).v, (size_t)(a).n * sizeof(*(a).v));                                \
            (a).v = nv_;                                                                           \
            (a).cap = nc_;                                                                         \
        }                                                                                          \
        (a).v[(a).n++] = (x);                                                                      \
    } while (0)

typedef struct {
    int64_t *key;
    int *val;
    int cap, n;
} imap_t;

typedef struct {
    const char **key;
    int *val;
    int cap, n;
} smap_t;

enum { SL_TID, SL_CONST, SL_OBJ };

typedef struct {
    int kind;
    int64_t tid;  /* SL_TID, SL_OBJ */
    int64_t grad; /* per-occurrence gradient link, -1 */
    json_t *cval; /* SL_CONST */
    const char *path;
} slot_t;

enum { P_CHUNK, P_MOVE, P_ALLGATHER, P_ALLREDUCE, P_BROADCAST, P_IDENTITY, P_ARI, P_IAR, P_AGS,
       P_SAG, P_OTHER };

typedef struct {
    const char *cls, *sig, *path;
    int code;
    json_t *kw;
    slot_t *in, *out;
    int nin, nout;
} prim_t;

enum { K_FW, K_BW, K_ADAPTER, K_DATA, K_REDUCER, K_SEGMENT };

typedef struct node {
    int kind;
    int64_t cid;
    const char *name, *sig, *anno, *path;
    json_t *kw;
    int64_t mirror; /* -1 */
    int isfw;
    slot_t *in, *out;
    int nin, nout;
    prim_t *prims;
    int nprims;
    struct node *nodes;
    int nnodes;
    int64_t *devs;
    int ndevs;
    int *inver, *outver; /* forward versions of the slots when the op last ran (plan) */
} node_t;

typedef struct {
    node_t *cells;
    int ncells;
    imap_t cell_of;  /* cid -> index in cells */
    imap_t node_of;  /* cid -> index in allnodes (ops, nested included) */
    VEC(node_t *) allnodes;
    int64_t *sched_cid, *sched_mb;
    int nsched;
    const char *path;
} device_t;

typedef struct {
    int64_t tid;
    const char *name, *dtype, *path;
    int ndim;
    int64_t shape[MAXD];
    int is_attr, is_param, is_grad, is_loss;
    int64_t grad;
    int fwd;      /* index of the tensor whose gradient this is, -1 */
    int copy;     /* produced by multiref or an identity-like op */
    int dense;    /* a MoE routing tensor [tokens, topk]: represented densely as [tokens, experts] */
    int produced; /* produced by some op of the plan */
} full_t;

typedef struct {
    int64_t tid, parent;
    int pidx;
    int ndim;
    int64_t shape[MAXD], lo[MAXD], hi[MAXD];
    int64_t vi, vn;
    const char *path;
} sub_t;

typedef struct plan {
    const char *file;
    int role; /* 0 logical, 1 parallel */
    json_t *root;
    int64_t dp, pp, tp, nm, gbs;
    const char *model_name;
    full_t *full;
    int nfull;
    imap_t fidx;
    sub_t *sub;
    int nsub;
    imap_t sidx;
    device_t *dev;
    int ndev;
    smap_t byname; /* full tensor name -> first index (logical) */
} plan_t;

typedef struct {
    int kind;      /* 0 base, 1 product, 2 half */
    int nf;
    int f[MAXD];   /* product: factor classes, outer to inner */
    int base;      /* half: the class halved */
    int64_t size;  /* real (logical) size */
    const char *name;
    int used;
    int state;     /* cycle check */
} cls_t;

typedef struct {
    int target, nmem, mem[MAXD];
    const char *path;
} pdef_t;

typedef struct {
    VEC(int) par;
    VEC(int64_t) size;
    VEC(const char *) where;
    VEC(pdef_t) prod;
    VEC(int) half_t;
    VEC(int) half_b;
    int base[2];
    imap_t cls_of;  /* root -> class index */
    VEC(cls_t) cls;
    smap_t names;   /* used dim names */
    VEC(int) order; /* classes in emission order */
} dims_t;

/* an annotation slot: dims, each a list of member tokens (a group when more than one) */
typedef struct {
    int nontensor;
    int nd;
    int nmem[MAXD];
    char mem[MAXD][MAXD][40];
} aslot_t;

typedef struct {
    int c;
    int64_t k;
} dcons_t;

typedef struct {
    ictx_t *X;
    dims_t D;
    VEC(dcons_t) cons;
    imap_t cons_seen;
    int folded; /* local_expr_v wrote a split over mesh axes as a literal */
} dctx_t;

/* A split of a dimension: over mesh axes (named, with their sizes, major to minor) and by a
   literal remainder.  The plan writes a local size with the axes' names (B/dp/mb, (D32/tp)*D128),
   so that it follows the mesh (docs/nnscaler.md); a literal stays for a split over no axis. */
typedef struct {
    int n;
    const char *ax[3];
    int64_t sz[3];
    int64_t lit;
} dvs_t;

typedef struct {
    int kind; /* IT_OP (fw/bw), IT_ADAPTER, IT_DATA */
    node_t *n[MAXTP];
} item_t;

enum { IT_OP, IT_ADAPTER, IT_DATA };

typedef struct {
    int k, dev0;
    VEC(item_t) items;
    int pos;
    imap_t names[MAXTP];   /* tid -> index into I->vars */
    imap_t prodcnt[MAXTP]; /* tid -> productions so far */
    imap_t prodtot[MAXTP]; /* tid -> productions in the whole sequence */
    imap_t fver[MAXTP];    /* forward tensor tid -> versions produced so far */
    imap_t pgrad[MAXTP];   /* forward key -> the gradient tid linked to its producer's slot */
    imap_t gfwd[MAXTP];    /* gradient key -> the forward key it differentiates */
    imap_t tidseen[MAXTP]; /* tids produced so far (TrainVerify's chunk rule) */
    node_t *reducer[MAXTP];
    abuf_t decl;
    smap_t declared;       /* model input name -> index into decl_lay */
    VEC(const char *) decl_lay;
} stage_t;

typedef struct {
    int64_t cid;
    int consumed;
} msg_t;

typedef struct {
    msg_t *v;
    int n, cap;
} msgq_t;

typedef struct {
    ictx_t *X;
    plan_t L, P;
    dctx_t DC;
    /* model */
    const char **mname; /* per logical full tensor */
    int *mcanon;
    smap_t taken;       /* names in use (tensors, dims, funcs, keywords) */
    smap_t canon_by_name; /* logical full name -> canonical index, -2 if ambiguous */
    int tok_full;       /* logical dataloader output */
    int vcls;           /* vocabulary class */
    abuf_t mdecl, mbody;
    abuf_t omit; /* the model outputs TrainVerify's plans do not check: loss, next.W */
    int use_linear, use_linear_gw, use_rotary, use_rotary_grad, use_gmm;
    VEC(const char *) gate_cfg; /* "score|groups|topk_groups|topk|route_scale|E" per config */
    VEC(int) gate_ecls;         /* the experts class per config */
    /* plan */
    stage_t *st;
    VEC(const char *) vars;
    smap_t var_of;      /* var text -> index */
    VEC(msgq_t) queues;
    imap_t queue_of;    /* src*LIM_DEV+dst -> queue index */
    abuf_t body;
    int cur_stage;
    int *pgrad_done;    /* per logical full: a plan output for grad of this param exists */
    smap_t cut_stage;   /* lineage target -> the pipeline stage that relates it */
    int tv_chunk;       /* SP_NNSCALER_TV_CHUNK_RULE */
    int autograd_sum;   /* SP_NNSCALER_AUTOGRAD_SUM */
} imp_t;

typedef struct {
    imp_t *I;
    plan_t *p;
    int model;
    node_t **n;        /* per device (model: one) */
    int ntp, j;        /* render for device j */
    const char **iv;   /* input vars of n[j] (NULL for non-tensors) */
    /* backward */
    node_t *fw;        /* the mirror forward op of n[j] */
    node_t **fwn;      /* the mirror forward ops, per device */
    const char **fiv, **fov;
    const char **gin;  /* per forward output: its gradient var (NULL if not an input) */
    /* composite ops (MoE) also define intermediates, each a cut point: */
    const char *base;  /* variable name prefix of the intermediates */
    const char *mbase; /* plan: the model name prefix of their lineage targets */
    const char *tok;   /* plan: layout text of the token dimension (NULL: no lineage) */
    int stage;         /* plan: pipeline stage */
    abuf_t *pre;       /* statements emitted before the outputs */
} ectx_t;

/* nnscaler.c */
const char *sanitize(imp_t *I, const char *s);
const char *unique_name(imp_t *I, const char *base, int64_t tid);
const char *const_text(imp_t *I, plan_t *p, json_t *v, const char *path, int *is_int);
const char *dim_expr(imp_t *I, plan_t *p, int64_t tid, int d, const char *where);
const char *shape_text(imp_t *I, plan_t *p, int64_t tid, const char *where);
const char *reduce_to(imp_t *I, plan_t *p, const char *e, int64_t from, int64_t to,
                      const char *where);
int is_identity_op(const char *name);

/* nns_read.c */
void *ar_alloc(ictx_t *X, size_t n);
void ar_free(ictx_t *X);
char *ar_vprintf(ictx_t *X, const char *fmt, va_list ap);
char *ar_printf(ictx_t *X, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
char *ar_strdup(ictx_t *X, const char *s);
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 2, 3)))
#endif
void die(ictx_t *X, const char *fmt, ...);
void ab_init(abuf_t *b);
void ab_puts(abuf_t *b, const char *t);
void ab_putc(abuf_t *b, char c);
void ab_printf(abuf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void ab_clear(abuf_t *b);
int *imap_slot(ictx_t *X, imap_t *m, int64_t k, int create);
int imap_get(const imap_t *m, int64_t k, int dflt);
void imap_set(ictx_t *X, imap_t *m, int64_t k, int v);
int smap_get(const smap_t *m, const char *k, int dflt);
void smap_set(ictx_t *X, smap_t *m, const char *k, int v);
const char *jtype(json_t *v);
json_t *jget(ictx_t *X, plan_t *p, json_t *o, const char *path, const char *key);
const char *kpath(ictx_t *X, const char *path, const char *key);
const char *ipath(ictx_t *X, const char *path, size_t i);
int64_t jint_v(ictx_t *X, plan_t *p, json_t *v, const char *path, int64_t lo, int64_t hi);
int64_t kw_int(ictx_t *X, plan_t *p, json_t *kw, const char *path, const char *key);
int full_index(plan_t *p, int64_t tid);
sub_t *sub_of(plan_t *p, int64_t tid);
int chunk_index(const sub_t *part, const sub_t *whole, int d, int n);
full_t *full_of_sub(plan_t *p, int64_t tid);
int is_fused(int code);
void load_plan(ictx_t *X, plan_t *p, int role, const char *fname, const char *text,
               size_t len);

/* nns_dims.c */
int dcls(ictx_t *X, dims_t *D, plan_t *p, int f, int d);
void dims_build(ictx_t *X, dims_t *D, plan_t *L, plan_t *P);
const char *cname(ictx_t *X, dims_t *D, int c);
void cname_set(ictx_t *X, dims_t *D, int c, const char *name);
dvs_t dvs_lit(int64_t k);
void dvs_axis(dvs_t *v, const char *name, int64_t size);
const char *local_expr_v(dctx_t *DC, int c, const dvs_t *v);
const char *local_expr_(dctx_t *DC, int c, int64_t k);
int64_t cons_part(const dvs_t *v);
void add_cons(dctx_t *DC, int c, int64_t k);
const char *local_expr(dctx_t *DC, int c, const dvs_t *v, const char *where);

/* nns_model.c */
void fw_expr(ectx_t *E, const char **out, int *alias);
void bw_expr(ectx_t *E, const char **out, int *alias);
int is_complex(const full_t *f);
void build_model(imp_t *I);
int lmap(imp_t *I, int pf);

/* nns_plan.c */
void build_plan(imp_t *I);

#endif
