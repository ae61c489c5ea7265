/* gen_int.h: the decoder-plan generator shared by the workload families (internal to src/gen). */
#ifndef SP_GEN_INT_H
#define SP_GEN_INT_H

#include <stddef.h>

#include "gen.h"

#define MAX_CHUNKS 256 /* pipeline chunks pp * vpp */
#define MAX_MB 64      /* micro-batches (a reassembling concat lists them all on one line) */

/*
 * A family's preset: the real sizes.  experts = 0 for a dense model; otherwise MoE layers from
 * layer first_dense on, with `experts` routed experts of FFN width ffn_moe, `active` of them per
 * token, and `shared` shared experts (one SwiGLU of width shared * ffn_moe).
 */
typedef struct {
    const char *name;
    int layers;
    long hidden, heads, kv_heads, head_dim, ffn, vocab, seq;
    int experts, active, shared, first_dense;
    long ffn_moe;
} preset_t;

/* A family: its name, presets (terminated by name NULL), bugs and model text. */
typedef struct gen_family gen_family_t;

/*
 * A trained parameter: its name, the plan's accumulated gradient, its dims, the dim sharded over
 * tp (-1: replicated over tp), the dim sharded over ep (experts; -1: none), whether it is a norm
 * weight (its gradient is partial over the sequence shards under sp) and its kind.  Under ZeRO
 * the first dim not sharded over tp is sharded over dp.  Layer parameters of kind P_MOE are
 * indexed from the first MoE layer (wr[l-ND]).
 */
enum { P_ATTN, P_DENSE, P_MOE, P_OTHER };

typedef struct {
    const char *name, *grad;
    const char *dim[3];
    int nd, tpdim, norm;
    int kind, epdim;
} param_t;

/* The generator state.  Lines are numbered as they are written so that a planted bug can
   announce the plan line shardproof reports. */
typedef struct {
    sp_sbuf_t *b;
    int line; /* number of the next line written */
    int ind;  /* indentation level (two spaces each) */
    int bug_line;
    const char *bug_desc;
    int fail;
    char fail_msg[160];
    const gen_family_t *fam;
    /* configuration */
    int dp, tp, sp, pp, nm, L, batch, adam;
    int mba;       /* micro-batches on the mesh axis mb (--mb-axis; then nm = 1), else 1 */
    int cp;        /* context parallel: the sequence sharded over cp */
    int ep;        /* expert parallel (MoE): experts sharded over ep, tokens over (dp, ep) */
    int nd;        /* dense layers before the MoE layers (L for a dense model) */
    int moe_layer; /* emitting an MoE layer */
    int sigmoid;   /* MoE router scores: sigmoid (normalized over the top-k), else softmax */
    int tpx;       /* the tp axis and its collectives exist (tp > 1, or a size-1 tp variant) */
    int vpp, nch;  /* virtual pipeline stages per stage; chunks pp * vpp */
    int f1b;       /* the 1F1B schedule: each stage runs whole micro-batches, cut by row slices */
    int mbi;       /* 1F1B: the micro-batch being written */
    int cp_ring;   /* context parallel: key/value gradients reduce-scattered (ring attention) */
    int chunk_lo[MAX_CHUNKS + 1]; /* first layer of each chunk; chunk_lo[nch] = L */
    int zero;                     /* ZeRO stage 0..3 (over dp) */
    int mask;           /* a loss mask input: the loss is the mean over the unmasked tokens */
    const char *ls;     /* label smoothing (text), NULL for none */
    int tied;           /* the LM head is the transposed token embedding */
    char frozen[16][8]; /* frozen parameters (model inputs, not trained) */
    int nfrozen;
    const char *bug_needle; /* an error bug: the diagnostic points at this text's last char */
    int bug_col;
    const char *clip; /* grad-norm clipping threshold (text), NULL for none */
    char sfx[8];      /* with --clip and --pp: "_k", the stage's suffix of sst, ssr, sc */
    char tied_lay[64];/* the tied embedding's update layout (--tied with --pp) */
    int bwd;          /* emitting a backward pass (names of ZeRO-3 gathered parameters) */
    int mute;         /* > 0: lines are not written (names are still computed) */
    int no_lineage;   /* --lineage none: statements are written without their cuts */
    const preset_t *P;
    const char *bug;
    const char *variant; /* a harmless (performance-only) variant, NULL for none */
    int bug_axis_tp;     /* rank-specific bugs: 1 on tp, 0 on dp */
    /* the current layer index as text (forward "l", backward "3-i", or a literal), and the MoE
       parameter index ("l-1") */
    char il[32], il1[32], im[40];
    /* text pieces of the configuration */
    char BD[24];  /* the batch dim of a layout: "B@dp" or "B" */
    char LX[64];  /* the residual stream: [B@dp, S@tp, H] under sp */
    char LF[64];  /* full-sequence activations: [B@dp, S, H] */
    char LFP[96]; /* their partial sums over tp */
    char LQ[64], LK[64], LHQ[64], LHK[64], LFF[64], LV[64];
    char LLOSS[48]; /* the loss: [] partial(sum@dp) */
    char lb[32];    /* the local batch extent in reshapes (the micro-batch with nm > 1) */
    char mbx[32];   /* the micro-batch extent for slices: "B/dp/2" */
    char lbr[32];   /* the rank's batch extent (all its micro-batches): "B/dp" */
    char BDI[24];   /* the batch dim of the data inputs (1F1B with dp: "B", each rank slices) */
} gen_t;

struct gen_family {
    const char *name;
    const preset_t *presets;
    const sp_gen_bug_t *bugs;
    /* MoE layers (NULL for a dense family): the model's parameter declarations and the lines of
       an MoE layer from h2[l] to d[l] (index l, parameters [l-ND]); the plan's MoE block
       (forward from h2[l] to d[l]; backward from grad.x[l+1] down to grad.h2[l]) and its
       parameters (NULL-terminated) */
    void (*moe_decls)(gen_t *g);
    void (*moe_model)(gen_t *g);
    void (*moe_fwd)(gen_t *g);
    void (*moe_bwd)(gen_t *g);
    const param_t *const *moe_params;
};

/* ---- groups: a segment of statements, run once or as a `for mb` loop over micro-batches ---- */

enum {
    K_VAL,   /* a batch value: concatenated over micro-batches */
    K_SUM,   /* summed over micro-batches (weight gradients, the loss) */
    K_SEND,  /* send(value, dest) */
    K_EARLY, /* (bug) with micro-batches: before the last one, inside `if mb == NM-1` */
    K_OPEN,  /* opens a block: expr is its header ("if rank.cp >= 1") */
    K_CLOSE, /* closes the block */
};

#define GMAX 20
#define NAME_LEN 64
#define EXPR_LEN 1024

typedef struct {
    char key[16], full[NAME_LEN];
} gin_t;

typedef struct {
    int kind;
    char key[16], full[NAME_LEN];
    char expr[EXPR_LEN]; /* template */
    char cut[NAME_LEN];  /* model tensor, "" for none */
    char lay[128];
    char dest[64]; /* K_SEND: "pp = 1" */
    const char *note;
    int bug;
} gst_t;

typedef struct {
    int nin, nst;
    gin_t in[GMAX];
    gst_t st[GMAX];
} grp_t;

/*
 * Templates (gen_grp_st's expr): $name is a group input or an earlier statement of the group;
 * $l, $l1 the layer index and index + 1, $m the MoE parameter index, $LB the local batch extent,
 * $SL the local sequence length, $EPS, $COS/$SIN (RoPE tables of the rank's positions), $NHl
 * $NKVl $QDl $KDl (NH/tp ...), $P_name a parameter (under ZeRO-3 its gathered copy).
 */
void gen_grp_init(grp_t *G);
void gen_grp_in(gen_t *g, grp_t *G, const char *key, const char *full);
gst_t *gen_grp_st(gen_t *g, grp_t *G, int kind, const char *key, const char *full, const char *expr,
                  const char *cut, const char *lay);
void gen_grp_emit(gen_t *g, const grp_t *G);

void gen_put_line(gen_t *g, const char *text);
void gen_linef(gen_t *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void gen_stmt_line(gen_t *g, const char *lhs, const char *cut, const char *lay, const char *note,
                   int is_bug);
void gen_open_block(gen_t *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void gen_close_block(gen_t *g);

int gen_bug_is(const gen_t *g, const char *name);
int gen_is_frozen(const gen_t *g, const char *name);
void gen_param_lay(const gen_t *g, const param_t *p, int zsh, char *out, size_t n);
void gen_axes_text(const gen_t *g, int dp, int cp, int tp, char *out, size_t n);
void gen_reduce_tp(const gen_t *g, const char *x, char *out, size_t n);
void gen_set_layer(gen_t *g, const char *il, const char *il1);

/*
 * The backward of a linear out = matmul(x, W) whose output gradient needs no reduction (a
 * row-parallel linear: its forward output was reduced over tp): one group that takes the output
 * gradient (group input gy_key = gy), redistributes it first when re is given (statement re_key
 * = re: under sp the all-gather over the sequence, for routed experts the dispatch all-to-all),
 * computes the input gradient gx[$l] = gy W^T (cut to grad.x[$l] with layout lay; x[$l] is a
 * group input) and accumulates W's gradient gw.  w names the parameter ($P_w), wt its two
 * transposed dims ("0, 1"; "1, 2" for experts).  Stems are plain names: x "m", gx "gm".
 */
typedef struct {
    const char *gy_key, *gy;
    const char *re_key, *re;
    const char *x, *w, *wt, *gx, *gw, *lay;
} gen_linbwd_t;
void gen_linear_bwd(gen_t *g, const gen_linbwd_t *L);

/* A SwiGLU's gate and up gradients from the gradient gm of silu(ga) * up (stems: ga "g", up "u",
   gm "gm"): g<ga>[$l] and g<up>[$l], cut to grad.<ga>[$l], grad.<up>[$l] with layout lay. */
void gen_swiglu_bwd(gen_t *g, const char *ga, const char *up, const char *gm, const char *lay);

/* Add to G the accumulated gradients gw<ga>[idx], gw<up>[idx] of the gate and up projections
   w<ga>, w<up> of input x (all group inputs or earlier statements; idx "$l" or "$m"). */
void gen_gateup_grads(gen_t *g, grp_t *G, const char *x, const char *ga, const char *up,
                      const char *idx);

/* The model text's attention block of layer l (h1[l] .. r[l]). */
void gen_model_attention(gen_t *g);

/* Generate a family's file (gen.h's sp_gen_llama3 contract). */
int gen_decoder(sp_sbuf_t *out, const gen_family_t *fam, const sp_gen_opts_t *o, char *err,
                size_t errlen);

extern const gen_family_t gen_llama3_family, gen_deepseek3_family;

#endif
