/* llama3.c: the llama3 family and the decoder-plan driver every family shares (gen_int.h). */
#include <flint/flint.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/shardproof.h"
#include "gen_int.h"

/*
 * The model: one-hot tokens [B, S, V] through a token embedding, L decoder layers (RMSNorm, RoPE
 * with per-position cos/sin tables, causal grouped-query attention, SwiGLU MLP, residuals), a
 * final RMSNorm, an untied LM head and the cross-entropy loss (mean over the B*S tokens), trained
 * by `train sgd` (or adam).  Model tensors of layer l are named NAME[l]; x[l] is the residual
 * stream entering layer l.
 *
 * The plan (Megatron-LM's algorithms): batch sharded over dp; column-parallel QKV and gate/up
 * projections, row-parallel output/down projections with their all-reduce (or, with sequence
 * parallelism, all-gather before and reduce-scatter after, the residual stream and norms
 * sequence-sharded); a vocab-parallel embedding (all-reduce of the partial lookups) and
 * vocab-parallel cross-entropy (max and sum all-reduces over tp); an explicit backward pass with
 * the conjugate collectives; layers split over pipeline stages with send/recv of activations and
 * gradients (without sequence parallelism, each tp rank sends its sequence chunk and the receiver
 * all-gathers: Megatron's scatter-gather optimization); micro-batches with gradient accumulation;
 * gradient all-reduce over dp (and over tp for norm weights under sequence parallelism); the
 * optimizer step on each rank's shard.  Further: interleaved pipeline chunks (--vpp), context
 * parallelism (sequence chunks over cp, K/V all-gathered, global RoPE positions), ZeRO 1/2/3
 * (reduce-scatter of gradients, dp-sharded Adam state, parameter all-gathers), grad-norm
 * clipping across shards, loss masks, label smoothing, tied and frozen weights, and harmless
 * variants; docs/workloads.md describes each plan.  The deepseek3 family (deepseek3.c) plugs
 * its MoE block into the same driver (gen_family_t hooks).
 *
 * Cut points.  Nearly every tensor is related to its model tensor (`~ NAME : layout`), so every
 * stage is a small query and repeated layers are memoized.  A lineage relates a whole model
 * tensor, so with micro-batches each segment between cut points runs as a loop over the
 * micro-batches that slices its inputs (`x_m = slice(x, 0, mb*(B/dp/NM), ...)`), and the plan
 * concatenates the segment's per-micro-batch outputs before cutting; within a stage the
 * micro-batches therefore advance one segment at a time (the values are those of any schedule;
 * the concatenation keeps every element's expression identical to the model's, which the engine
 * needs for the attention backward, see docs/workloads.md).  Across a pipeline boundary the
 * sender does not cut: the receiver cuts what it received, so a mis-wired transfer fails at the
 * receiving line.
 *
 * Generation.  Plan text is produced by "groups": a segment's statements, written with $key
 * references to the group's batch inputs and earlier statements and $MACRO references to the
 * configuration (see expand(), gen_int.h).  Without micro-batches a group is its statements; with
 * them, a `for mb` loop.  The line of every statement is tracked so that a planted bug can announce
 * the plan line shardproof reports.
 */

/* ---- presets -------------------------------------------------------------------------------- */

static const preset_t presets[] = {
    {"8b", 32, 4096, 32, 8, 128, 14336, 128256, 8192, 0, 0, 0, 0, 0},
    {"70b", 80, 8192, 64, 8, 128, 28672, 128256, 8192, 0, 0, 0, 0, 0},
    {"405b", 126, 16384, 128, 8, 128, 53248, 128256, 8192, 0, 0, 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

#define EPS "1e-5"
#define LR "3e-4"

const sp_gen_bug_t sp_gen_llama3_bugs[] = {
    {"tp_allreduce_identity",
     "the attention block's row-parallel all-reduce (reduce-scatter with --sp) replaced by the "
     "identity "
     "(the local shard of the partial sums)",
     "--tp >= 2"},
    {"tp_allgather_instead",
     "the attention block's row-parallel all-reduce replaced by an all-gather of each rank's "
     "sequence "
     "chunk of its partial sums (reduce-scatter + all-gather without the reduction)",
     "--tp >= 2, no --sp"},
    {"bwd_allreduce_identity",
     "the backward all-reduce (reduce-scatter with --sp) of the attention input gradient grad.h1 "
     "replaced by the identity",
     "--tp >= 2"},
    {"pp_allreduce_instead",
     "at the first pipeline boundary the receiver all-reduces over tp instead of all-gathering "
     "(the sender sends its whole activation instead of its sequence chunk)",
     "--pp >= 2, --tp >= 2, no --sp"},
    {"pp_wrong_peer",
     "the first pipeline boundary's activation send/recv wired to the next tp rank's peer",
     "--pp >= 2, --tp >= 2"},
    {"eps_one_rank", "the MLP RMSNorm's eps is 1/(100000 + rank) on one rank (tp, else dp)",
     "--tp >= 2 or --dp >= 2"},
    {"pow1", "the square in the final RMSNorm is pow(x, 2 - rank): pow 1 on rank 1 (tp, else dp)",
     "--tp >= 2 or --dp >= 2"},
    {"eps_all", "the MLP RMSNorm's eps is 1e-6 instead of 1e-5 on every rank", ""},
    {"attn_scale_one_rank",
     "tp rank 1 (else dp rank 1) multiplies its queries by 2: softmax scale 2/sqrt(HD) there",
     "--tp >= 2 or --dp >= 2"},
    {"attn_scale_all", "attention scale 1/HD instead of 1/sqrt(HD) on every rank", ""},
    {"grad_early",
     "the LM head's weight-gradient reduction is launched before the last micro-batch's "
     "contribution is accumulated",
     "--nm >= 2"},
    {"sp_norm_grad_not_reduced",
     "under sequence parallelism the MLP RMSNorm weight gradient is not all-reduced over tp "
     "(each rank keeps its sequence shard's part)",
     "--sp"},
    {"fanout_extra_copy",
     "the fan-out sum of the attention input gradient grad.h1 (from q, k and v) adds the v "
     "branch twice",
     ""},
    {"loss_mean_per_microbatch",
     "each micro-batch's (rank's) loss and logits gradient are the mean over its own tokens, and "
     "nothing divides by the number of micro-batches and ranks: scaled by dp * nm; with "
     "--loss-mask, the mean over its own unmasked tokens divided by dp * nm (a mean of means, "
     "wrong for uneven masks)",
     "--dp >= 2 or --nm >= 2"},
    {"tp_allreduce_dropped",
     "the attention block's row-parallel all-reduce (reduce-scatter with --sp) dropped entirely: "
     "its result is never defined, a clear error at its first use",
     "--tp >= 2, --nm 1"},
    {"rope_grad_swapped",
     "the fused RoPE backward (q and k heads concatenated) hands k's slice of the result to q and "
     "q's to k",
     ""},
    {"frozen_input_grad_not_reduced",
     "the LM head is frozen and its column-parallel input gradient grad.hf is not all-reduced "
     "(reduce-scattered with --sp) over tp",
     "--tp >= 2, --freeze wout"},
    {"cp_rope_local_positions",
     "under context parallelism each rank applies RoPE at its chunk's local positions 0..S/cp-1 "
     "instead of the global ones",
     "--cp >= 2"},
    {"cp_causal_offset_local",
     "under context parallelism the causal mask of the rank's query chunk against the gathered "
     "keys omits the chunk's offset (with --cp-algo ring: every rank merges every key block the "
     "ring brings, also the later ones)",
     "--cp >= 2"},
    {NULL, NULL, NULL},
};

const sp_gen_bug_t sp_gen_llama3_variants[] = {
    {"single_rank_collective",
     "without tensor parallelism the plan still runs Megatron's tp collectives, over a tp axis of "
     "size 1 (single-rank groups)",
     "--tp 1"},
    {"unbalanced_partition",
     "an unbalanced pipeline layer partition: the first stage gets all but one layer per other "
     "stage",
     "--pp >= 2, --layers > pp"},
    {"zero2_allreduce",
     "under ZeRO-2/3 each gradient is all-reduced over dp and the rank keeps its shard, instead "
     "of the reduce-scatter to the shard's owner",
     "--zero 2|3"},
    {NULL, NULL, NULL},
};

/* ---- the generator state ----------------------------------------------------------------------
 */

int gen_bug_is(const gen_t *g, const char *name)
{
    return g->bug && strcmp(g->bug, name) == 0;
}

static int variant_is(const gen_t *g, const char *name)
{
    return g->variant && strcmp(g->variant, name) == 0;
}

int gen_is_frozen(const gen_t *g, const char *name)
{
    for (int i = 0; i < g->nfrozen; i++)
        if (strcmp(g->frozen[i], name) == 0)
            return 1;
    return 0;
}

/* ---- parameters ------------------------------------------------------------------------------ */

/* every layer's attention block and norms (P_ATTN), then a dense layer's MLP (P_DENSE) */
static const param_t layer_params[] = {
    {"wn1", "gwn1", {"H", NULL, NULL}, 1, -1, 1, P_ATTN, -1},
    {"wq", "gwq", {"H", "QD", NULL}, 2, 1, 0, P_ATTN, -1},
    {"wk", "gwk", {"H", "KD", NULL}, 2, 1, 0, P_ATTN, -1},
    {"wv", "gwv", {"H", "KD", NULL}, 2, 1, 0, P_ATTN, -1},
    {"wo", "gwo", {"QD", "H", NULL}, 2, 0, 0, P_ATTN, -1},
    {"wn2", "gwn2", {"H", NULL, NULL}, 1, -1, 1, P_ATTN, -1},
    {"wg", "gwg", {"H", "F", NULL}, 2, 1, 0, P_DENSE, -1},
    {"wu", "gwu", {"H", "F", NULL}, 2, 1, 0, P_DENSE, -1},
    {"wd", "gwd", {"F", "H", NULL}, 2, 0, 0, P_DENSE, -1},
};
#define NLP ((int)(sizeof layer_params / sizeof layer_params[0]))

static const param_t emb_param = {"emb", "gemb", {"V", "H", NULL}, 2, 0, 0, P_OTHER, -1};
static const param_t wnf_param = {"wnf", "gwnf", {"H", NULL, NULL}, 1, -1, 1, P_OTHER, -1};
static const param_t wout_param = {"wout", "gwout", {"H", "V", NULL}, 2, 1, 0, P_OTHER, -1};
/* tied embeddings: the embedding's gradient with the LM head's contribution */
static const param_t emb_tied_param = {"emb", "gembt", {"V", "H", NULL}, 2, 0, 0, P_OTHER, -1};

static const param_t *param_find(const gen_t *g, const char *name)
{
    for (int i = 0; i < NLP; i++)
        if (strcmp(layer_params[i].name, name) == 0)
            return &layer_params[i];
    for (int i = 0; g->fam->moe_params && g->fam->moe_params[i]; i++)
        if (strcmp(g->fam->moe_params[i]->name, name) == 0)
            return g->fam->moe_params[i];
    const param_t *o[] = {&emb_param, &wnf_param, &wout_param};
    for (int i = 0; i < 3; i++)
        if (strcmp(o[i]->name, name) == 0)
            return o[i];
    return NULL;
}

static int param_is_layer(const param_t *p)
{
    return p->kind != P_OTHER;
}

/* the dim sharded over dp under ZeRO */
static int param_zdim(const param_t *p)
{
    int d = 0;
    while (d + 1 < p->nd && (d == p->tpdim || d == p->epdim))
        d++;
    return d;
}

/* a routed expert's parameter under expert parallelism: sharded over ep, its gradient already
   holds the ep group's tokens */
static int is_expert(const gen_t *g, const param_t *p)
{
    return p->epdim >= 0 && g->ep > 1;
}

/* the layout of a parameter (zsh: its ZeRO shard over dp) */
void gen_param_lay(const gen_t *g, const param_t *p, int zsh, char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "[");
    for (int i = 0; i < p->nd && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%s%s%s", i ? ", " : "", p->dim[i],
                              g->tpx && i == p->tpdim      ? "@tp"
                              : g->ep > 1 && i == p->epdim ? "@ep"
                                                           : "",
                              zsh && i == param_zdim(p) ? "@dp" : "");
    if (k < n)
        snprintf(out + k, n - k, "]");
}

static void gfail(gen_t *g, const char *fmt, ...)
{
    if (g->fail)
        return;
    g->fail = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->fail_msg, sizeof g->fail_msg, fmt, ap);
    va_end(ap);
}

/* ---- lines ---------------------------------------------------------------------------------- */

#define LINE_MAX_LEN 4096
#define LINEAGE_COL 60

void gen_put_line(gen_t *g, const char *text)
{
    if (g->mute)
        return;
    for (int i = 0; i < g->ind && *text; i++)
        sp_sbuf_puts(g->b, "  ");
    sp_sbuf_puts(g->b, text);
    sp_sbuf_putc(g->b, '\n');
    g->line++;
}

void gen_linef(gen_t *g, const char *fmt, ...)
{
    char buf[LINE_MAX_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        gfail(g, "internal error: generated line too long");
    gen_put_line(g, buf);
}

/* A statement `lhs` with an optional lineage `~ cut : lay` aligned at LINEAGE_COL and an optional
   trailing comment.  Records the line when it carries the planted bug. */
void gen_stmt_line(gen_t *g, const char *lhs, const char *cut, const char *lay, const char *note,
                   int is_bug)
{
    char buf[LINE_MAX_LEN];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%s", lhs);
    if (cut && *cut && !g->no_lineage) {
        size_t col = (size_t)(2 * g->ind) + n;
        while (col < LINEAGE_COL && n + 1 < sizeof buf) {
            buf[n++] = ' ';
            col++;
        }
        n += (size_t)snprintf(buf + n, n < sizeof buf ? sizeof buf - n : 0, " ~ %s : %s", cut, lay);
    }
    if (note && *note && n < sizeof buf)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "   # %s", note);
    if (n >= sizeof buf)
        gfail(g, "internal error: generated line too long");
    if (is_bug && !g->bug_line && !g->mute) { /* the first in plan order is the one reported */
        g->bug_line = g->line;
        const char *at = g->bug_needle ? strstr(buf, g->bug_needle) : NULL;
        if (at)
            g->bug_col = 2 * g->ind + (int)(at - buf) + (int)strlen(g->bug_needle);
    }
    gen_put_line(g, buf);
}

void gen_open_block(gen_t *g, const char *fmt, ...)
{
    char buf[LINE_MAX_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t n = strlen(buf);
    snprintf(buf + n, sizeof buf - n, " {");
    gen_put_line(g, buf);
    g->ind++;
}

void gen_close_block(gen_t *g)
{
    g->ind--;
    gen_put_line(g, "}");
}

/* ---- groups --------------------------------------------------------------------------------- */

/* the value of a configuration macro, NULL if name is none */
static const char *macro(const gen_t *g, const char *name, char *tmp, size_t n)
{
    if (strcmp(name, "l") == 0)
        return g->il;
    if (strcmp(name, "l1") == 0)
        return g->il1;
    if (strcmp(name, "m") == 0)
        return g->im;
    if (strcmp(name, "LB") == 0)
        return g->lb;
    if (strcmp(name, "EPS") == 0)
        return EPS;
    if (strcmp(name, "SL") == 0) /* the rank's sequence length */
        return g->cp > 1 ? "S/cp" : "S";
    if (strcmp(name, "COS") == 0 || strcmp(name, "SIN") == 0) /* RoPE tables of its positions */
        return g->cp > 1 ? (name[0] == 'C' ? "cosl" : "sinl") : (name[0] == 'C' ? "cos" : "sin");
    if (strncmp(name, "P_", 2) == 0) {
        /* a parameter; under ZeRO-3 its copy all-gathered for this pass (NAMEf / NAMEb) */
        const param_t *p = param_find(g, name + 2);
        if (!p)
            return NULL;
        const char *sfx = g->zero != 3 || gen_is_frozen(g, p->name) ? ""
                          : g->bwd == 2                             ? "h"
                          : g->bwd                                  ? "b"
                                                                    : "f";
        if (param_is_layer(p))
            snprintf(tmp, n, "%s%s[%s]", p->name, sfx, p->kind == P_MOE ? g->im : g->il);
        else
            snprintf(tmp, n, "%s%s", p->name, sfx);
        return tmp;
    }
    if (strcmp(name, "NHl") == 0 || strcmp(name, "NKVl") == 0 || strcmp(name, "QDl") == 0 ||
        strcmp(name, "KDl") == 0) {
        size_t k = strlen(name) - 1;
        snprintf(tmp, n, "%.*s%s", (int)k, name, g->tpx ? "/tp" : "");
        return tmp;
    }
    return NULL;
}

/* ---- 1F1B: one micro-batch at a time ------------------------------------------------------- */

/* a data input of the model (sliced per micro-batch, not a value computed by the plan) */
static int is_data_input(const char *full)
{
    return strcmp(full, "tok") == 0 || strcmp(full, "tgt") == 0 || strcmp(full, "mask") == 0;
}

/* the plan name of a batch value of micro-batch g->mbi: NAME[i] -> NAME[i, mb], NAME -> NAME[mb] */
static void mb_name(const gen_t *g, const char *full, char *out, size_t n)
{
    size_t k = strlen(full);
    if (k && full[k - 1] == ']')
        snprintf(out, n, "%.*s, %d]", (int)(k - 1), full, g->mbi);
    else
        snprintf(out, n, "%s[%d]", full, g->mbi);
}

/* the global rows of micro-batch g->mbi: "lo..hi" (Megatron's sampler: each micro-batch is a
   contiguous B/NM rows of the global batch, sharded over dp) */
static void mb_rows(const gen_t *g, char *out, size_t n)
{
    if (g->mbi == 0)
        snprintf(out, n, "0..B/%d", g->nm);
    else
        snprintf(out, n, "%d*(B/%d)..%d*(B/%d)", g->mbi, g->nm, g->mbi + 1, g->nm);
}

/* the layout of micro-batch g->mbi's rows of a batch value laid out as lay: the batch dim
   "B@dp" becomes "B/NM@dp" */
static void mb_lay(gen_t *g, const char *lay, char *out, size_t n)
{
    size_t k = strlen(g->BD);
    if (lay[0] != '[' || strncmp(lay + 1, g->BD, k) != 0 ||
        (lay[k + 1] != ',' && lay[k + 1] != ']')) {
        gfail(g, "internal error: 1F1B cut of a layout without the batch dim first: %s", lay);
        snprintf(out, n, "%s", lay);
        return;
    }
    snprintf(out, n, "[B/%d%s%s", g->nm, g->dp > 1 ? "@dp" : "", lay + k + 1);
}

/* the slice of a data input holding the rank's rows of micro-batch g->mbi */
static void mb_slice(const gen_t *g, const char *full, char *out, size_t n)
{
    char base[32] = "";
    if (g->mbi)
        snprintf(base, sizeof base, "%d*(B/%d)", g->mbi, g->nm);
    if (g->dp > 1)
        snprintf(out, n, "slice(%s, 0, %s%srank.dp*(B/dp/%d), %s%s(rank.dp+1)*(B/dp/%d))", full,
                 base, g->mbi ? " + " : "", g->nm, base, g->mbi ? " + " : "", g->nm);
    else
        snprintf(out, n, "slice(%s, 0, %s, %d*(B/%d))", full, g->mbi ? base : "0", g->mbi + 1,
                 g->nm);
}

/*
 * Expand a template: $name is a group input or an earlier statement of the group (first `upto`
 * statements) -- its full name, with local == 1 its per-micro-batch name NAME_m, with local == 2
 * (1F1B) its name for micro-batch g->mbi (mb_name; a data input's slice NAME_m) -- or a
 * configuration macro: $l and $l1 (the layer index and index + 1), $LB (local batch extent), $EPS,
 * $NHl $NKVl $QDl $KDl (NH/tp ...).  G may be NULL (macros only).
 */
static void expand(gen_t *g, const grp_t *G, int upto, int local, const char *t, char *out,
                   size_t n)
{
    size_t k = 0;
    for (const char *p = t; *p;) {
        if (*p != '$') {
            if (k + 1 < n)
                out[k++] = *p;
            p++;
            continue;
        }
        p++;
        char name[32];
        size_t m = 0;
        while ((*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9')) &&
               m + 1 < sizeof name)
            name[m++] = *p++;
        name[m] = 0;
        char rep[NAME_LEN + 8], tmp[64];
        const char *r = NULL;
        for (int i = 0; G && i < G->nin && !r; i++)
            if (strcmp(G->in[i].key, name) == 0) {
                if (local == 2 && !is_data_input(G->in[i].full))
                    mb_name(g, G->in[i].full, rep, sizeof rep);
                else if (local)
                    snprintf(rep, sizeof rep, "%s_m", name);
                else
                    snprintf(rep, sizeof rep, "%s", G->in[i].full);
                r = rep;
            }
        for (int i = 0; G && i < upto && !r; i++)
            if (strcmp(G->st[i].key, name) == 0) {
                if (local == 2)
                    mb_name(g, G->st[i].full, rep, sizeof rep);
                else if (local)
                    snprintf(rep, sizeof rep, "%s_m%s", name,
                             G->st[i].kind == K_VAL && G->st[i].cut[0] ? "[mb]" : "");
                else
                    snprintf(rep, sizeof rep, "%s", G->st[i].full);
                r = rep;
            }
        if (!r)
            r = macro(g, name, tmp, sizeof tmp);
        if (!r) {
            gfail(g, "internal error: unknown template name '$%s'", name);
            r = name;
        }
        for (const char *q = r; *q; q++)
            if (k + 1 < n)
                out[k++] = *q;
    }
    if (k + 1 >= n)
        gfail(g, "internal error: template expansion too long");
    out[k] = 0;
}

void gen_grp_init(grp_t *G)
{
    memset(G, 0, sizeof *G);
}

void gen_grp_in(gen_t *g, grp_t *G, const char *key, const char *full)
{
    if (G->nin == GMAX) {
        gfail(g, "internal error: group too large");
        return;
    }
    gin_t *in = &G->in[G->nin++];
    snprintf(in->key, sizeof in->key, "%s", key);
    expand(g, NULL, 0, 0, full, in->full, sizeof in->full);
}

gst_t *gen_grp_st(gen_t *g, grp_t *G, int kind, const char *key, const char *full, const char *expr,
                  const char *cut, const char *lay)
{
    static gst_t dummy;
    if (kind == K_SUM) {
        /* a frozen parameter has no gradient */
        size_t kl = strcspn(full, "[");
        for (int i = 0; i < g->nfrozen; i++) {
            const param_t *p = param_find(g, g->frozen[i]);
            if (p && strlen(p->grad) == kl && strncmp(full, p->grad, kl) == 0)
                return &dummy;
        }
    }
    if (G->nst == GMAX) {
        gfail(g, "internal error: group too large");
        return &dummy;
    }
    gst_t *s = &G->st[G->nst++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    snprintf(s->key, sizeof s->key, "%s", key);
    expand(g, NULL, 0, 0, full, s->full, sizeof s->full);
    snprintf(s->expr, sizeof s->expr, "%s", expr);
    if (cut)
        expand(g, NULL, 0, 0, cut, s->cut, sizeof s->cut);
    if (lay)
        snprintf(s->lay, sizeof s->lay, "%s", lay);
    return s;
}

/* a statement that opens or closes a block (written as is); 0 for any other */
static int grp_block(gen_t *g, const gst_t *s)
{
    if (s->kind == K_OPEN)
        gen_open_block(g, "%s", s->expr);
    else if (s->kind == K_CLOSE)
        gen_close_block(g);
    return s->kind == K_OPEN || s->kind == K_CLOSE;
}

/* a K_SEND statement: `send(e, dest)` */
static void grp_send(gen_t *g, const gst_t *s, const char *e)
{
    char lhs[EXPR_LEN + 2 * NAME_LEN];
    snprintf(lhs, sizeof lhs, "send(%s, %s)", e, s->dest);
    gen_stmt_line(g, lhs, NULL, NULL, s->note, s->bug);
}

/* `name = e` with the statement's cut, layout, note and bug */
static void grp_assign(gen_t *g, const gst_t *s, const char *name, const char *e)
{
    char lhs[EXPR_LEN + 2 * NAME_LEN];
    snprintf(lhs, sizeof lhs, "%s = %s", name, e);
    gen_stmt_line(g, lhs, s->cut, s->lay, s->note, s->bug);
}

/* a K_SUM statement's micro-batch term: `NAME += e`, or `KEY_acc += e` when it is cut after the
   last micro-batch */
static void grp_sum(gen_t *g, const gst_t *s, const char *e)
{
    char lhs[EXPR_LEN + 2 * NAME_LEN];
    if (s->cut[0])
        snprintf(lhs, sizeof lhs, "%s_acc += %s", s->key, e);
    else
        snprintf(lhs, sizeof lhs, "%s += %s", s->full, e);
    gen_stmt_line(g, lhs, NULL, NULL, s->cut[0] ? NULL : s->note, 0);
}

/* 1F1B: a group for micro-batch g->mbi alone; its cuts relate the micro-batch's rows, sums
   accumulate and are cut after the last micro-batch */
static void grp_emit_mb(gen_t *g, const grp_t *G)
{
    char e[EXPR_LEN], lhs[EXPR_LEN + 2 * NAME_LEN], nm[NAME_LEN + 16], cut[NAME_LEN + 48], lay[160];
    int last = g->mbi == g->nm - 1;
    for (int i = 0; i < G->nin; i++)
        if (is_data_input(G->in[i].full)) {
            mb_slice(g, G->in[i].full, e, sizeof e);
            gen_linef(g, "%s_m = %s", G->in[i].key, e);
        }
    for (int i = 0; i < G->nst; i++) {
        const gst_t *s = &G->st[i];
        if (grp_block(g, s))
            continue;
        expand(g, G, i, 2, s->expr, e, sizeof e);
        switch (s->kind) {
        case K_SEND:
            grp_send(g, s, e);
            break;
        case K_EARLY:
            if (last)
                grp_assign(g, s, s->full, e);
            break;
        case K_SUM:
            grp_sum(g, s, e);
            if (s->cut[0] && last) {
                snprintf(nm, sizeof nm, "%s_acc", s->key);
                grp_assign(g, s, s->full, nm);
            }
            break;
        default:
            mb_name(g, s->full, nm, sizeof nm);
            snprintf(lhs, sizeof lhs, "%s = %s", nm, e);
            if (s->cut[0]) {
                char rows[64];
                mb_rows(g, rows, sizeof rows);
                snprintf(cut, sizeof cut, "%s[%s]", s->cut, rows);
                mb_lay(g, s->lay, lay, sizeof lay);
                gen_stmt_line(g, lhs, cut, lay, s->note, s->bug);
            } else {
                gen_stmt_line(g, lhs, NULL, NULL, s->note, s->bug);
            }
            break;
        }
    }
}

void gen_grp_emit(gen_t *g, const grp_t *G)
{
    char e[EXPR_LEN], lhs[EXPR_LEN + 2 * NAME_LEN];
    if (g->f1b) {
        grp_emit_mb(g, G);
        return;
    }
    if (g->nm == 1) {
        for (int i = 0; i < G->nst; i++) {
            const gst_t *s = &G->st[i];
            if (grp_block(g, s))
                continue;
            expand(g, G, i, 0, s->expr, e, sizeof e);
            if (s->kind == K_SEND)
                grp_send(g, s, e);
            else if (s->kind == K_EARLY)
                gfail(g, "internal error: K_EARLY without micro-batches");
            else
                grp_assign(g, s, s->full, e);
        }
        return;
    }
    gen_open_block(g, "for mb in 0..%d", g->nm);
    for (int i = 0; i < G->nin; i++)
        gen_linef(g, "%s_m = slice(%s, 0, mb*(%s), (mb+1)*(%s))", G->in[i].key, G->in[i].full,
                  g->mbx, g->mbx);
    for (int i = 0; i < G->nst; i++) {
        const gst_t *s = &G->st[i];
        if (grp_block(g, s))
            continue;
        expand(g, G, i, 1, s->expr, e, sizeof e);
        switch (s->kind) {
        case K_SEND:
            grp_send(g, s, e);
            break;
        case K_EARLY:
            gen_open_block(g, "if mb == %d", g->nm - 1);
            grp_assign(g, s, s->full, e);
            gen_close_block(g);
            break;
        case K_SUM:
            grp_sum(g, s, e);
            break;
        default:
            snprintf(lhs, sizeof lhs, "%s_m%s = %s", s->key, s->cut[0] ? "[mb]" : "", e);
            gen_stmt_line(g, lhs, NULL, NULL, s->cut[0] ? NULL : s->note, 0);
            break;
        }
    }
    gen_close_block(g);
    /* reassemble each cut value from its micro-batches, then cut */
    for (int i = 0; i < G->nst; i++) {
        const gst_t *s = &G->st[i];
        if ((s->kind != K_VAL && s->kind != K_SUM) || !s->cut[0])
            continue;
        size_t n = 0;
        if (s->kind == K_SUM) {
            n = (size_t)snprintf(lhs, sizeof lhs, "%s = %s_acc", s->full, s->key);
        } else {
            n = (size_t)snprintf(lhs, sizeof lhs, "%s = concat(", s->full);
            for (int mb = 0; mb < g->nm && n < sizeof lhs; mb++)
                n += (size_t)snprintf(lhs + n, sizeof lhs - n, "%s%s_m[%d]", mb ? ", " : "", s->key,
                                      mb);
            if (n < sizeof lhs)
                n += (size_t)snprintf(lhs + n, sizeof lhs - n, ", dim = 0)");
        }
        if (n >= sizeof lhs)
            gfail(g, "internal error: generated line too long");
        gen_stmt_line(g, lhs, s->cut, s->lay, s->note, s->bug);
    }
}

/* ---- plan pieces ---------------------------------------------------------------------------- */

/* the mesh axes among dp, ep, mb, cp, tp (those of size > 1 that are asked for) as a
   collective's group: "dp" or "[dp, cp]"; "" for none.  dp = 1: dp, ep and mb (the data axes);
   2: ep only; 3: dp and mb (the micro-batches are data-parallel replicas too) */
void gen_axes_text(const gen_t *g, int dp, int cp, int tp, char *out, size_t n)
{
    const char *ax[5];
    int k = 0;
    if ((dp == 1 || dp == 3) && g->dp > 1)
        ax[k++] = "dp";
    if ((dp == 1 || dp == 2) && g->ep > 1)
        ax[k++] = "ep";
    if ((dp == 1 || dp == 3) && g->mba > 1)
        ax[k++] = "mb";
    if (cp && g->cp > 1)
        ax[k++] = "cp";
    if (tp && g->tpx)
        ax[k++] = "tp";
    size_t m = 0;
    out[0] = '\0';
    for (int i = 0; i < k && m < n; i++)
        m += (size_t)snprintf(out + m, n - m, "%s%s%s", k > 1 && i == 0 ? "[" : i ? ", " : "",
                              ax[i], k > 1 && i == k - 1 ? "]" : "");
}

/* ZeRO-3: all-gather the parameters a pass uses before it runs (forward and backward each) */
static void zero3_gather(gen_t *g, const param_t *const *ps, int n, int bwd)
{
    g->bwd = bwd;
    if (g->zero != 3)
        return;
    char name[64], tmp[64], src[64];
    for (int i = 0; i < n; i++) {
        const param_t *p = ps[i];
        if (gen_is_frozen(g, p->name))
            continue;
        snprintf(name, sizeof name, "P_%s", p->name);
        const char *dst = macro(g, name, tmp, sizeof tmp);
        if (param_is_layer(p))
            snprintf(src, sizeof src, "%s[%s]", p->name, p->kind == P_MOE ? g->im : g->il);
        else
            snprintf(src, sizeof src, "%s", p->name);
        gen_linef(g, "%s = all_gather(%s, %d, dp)", dst, src, param_zdim(p));
    }
}

static int layer_param_list(const gen_t *g, int moe, const param_t **out);

static void zero3_gather_layer(gen_t *g, int bwd)
{
    const param_t *ps[48];
    int n = layer_param_list(g, g->moe_layer, ps);
    zero3_gather(g, ps, n, bwd);
}

void gen_reduce_tp(const gen_t *g, const char *x, char *out, size_t n)
{
    if (g->sp)
        snprintf(out, n, "reduce_scatter(%s, 1, sum, tp)", x);
    else
        snprintf(out, n, "all_reduce(%s, sum, tp)", x);
}

/* the rank axis of rank-specific bugs */
static const char *bug_rank(const gen_t *g)
{
    return g->bug_axis_tp ? "rank.tp" : "rank.dp";
}

void gen_set_layer(gen_t *g, const char *il, const char *il1)
{
    snprintf(g->il, sizeof g->il, "%s", il);
    snprintf(g->il1, sizeof g->il1, "%s", il1);
    /* the MoE parameter index: the layer index less the dense layers */
    char *end;
    long v = strtol(il, &end, 10);
    if (!*il || g->nd == 0)
        snprintf(g->im, sizeof g->im, "%s", il);
    else if (!*end)
        snprintf(g->im, sizeof g->im, "%ld", v - g->nd);
    else
        snprintf(g->im, sizeof g->im, "%s-%d", il, g->nd);
}

/* the last forward group of a layer: the residual add, or the send to the next stage */
static void fwd_out_group(gen_t *g, int send_to)
{
    grp_t G;
    gen_grp_init(&G);
    gen_grp_in(g, &G, "r", "r[$l]");
    gen_grp_in(g, &G, "d", "d[$l]");
    if (send_to < 0) {
        gen_grp_st(g, &G, K_VAL, "x", "x[$l1]", "$r + $d", "x[$l1]", g->LX);
    } else {
        gst_t *s;
        int ar = gen_bug_is(g, "pp_allreduce_instead") && send_to == 1;
        if (g->tpx && !g->sp && !ar)
            s = gen_grp_st(g, &G, K_SEND, "x", "x",
                           "slice($r + $d, 1, rank.tp*($SL/tp), (rank.tp+1)*($SL/tp))", NULL, NULL);
        else
            s = gen_grp_st(g, &G, K_SEND, "x", "x", "$r + $d", NULL, NULL);
        if (gen_bug_is(g, "pp_wrong_peer") && send_to == 1)
            snprintf(s->dest, sizeof s->dest, "pp = %d, tp = (rank.tp + 1) %% tp", send_to);
        else
            snprintf(s->dest, sizeof s->dest, "pp = %d", send_to);
        s->note = gen_bug_is(g, "pp_wrong_peer") && send_to == 1 ? "BUG: wrong tp peer"
                  : ar ? "BUG: the whole activation, not the rank's chunk"
                       : "to the next stage";
    }
    gen_grp_emit(g, &G);
}

/*
 * Ring attention's forward (--cp-algo ring), into group G (inputs qr, kr, vh): the rank's own
 * key/value block first (causal within the block), then cp - 1 ring steps, each passing the
 * current block to the next cp rank and receiving the previous rank's; the rank merges the
 * blocks before its own (step t holds block rank.cp - t, all visible) by the online softmax: per
 * block the attention output and the log-sum-exp of its scores, merged as
 *   ln = log(exp(la) + exp(lb)),  oa = exp(la - ln) * oa + exp(lb - ln) * ob.
 * The log-sum-exp is written from the scores (GQA: the kv heads repeated per query group; the
 * diagonal block's causal mask as the support of causal_softmax); logaddexp without the max
 * shift, which changes no value (a max of two log atoms would need a nonlinear case split).
 */
static void ring_attention_fwd(gen_t *g, grp_t *G)
{
    char e[EXPR_LEN];
    gst_t *s;
    int all = gen_bug_is(g, "attn_scale_all");
    const char *SA = all ? ", scale = 1/HD" : ""; /* the attention's scale */
    const char *SC = all ? "(1/HD)" : "rsqrt(HD)";
    const char *Q = "$qr";
    if (gen_bug_is(g, "attn_scale_one_rank")) {
        snprintf(e, sizeof e, "$qr * (1 + %s)", bug_rank(g));
        s = gen_grp_st(g, G, K_VAL, "qs", "qs[$l]", e, NULL, NULL);
        s->note = "BUG: queries doubled on rank 1";
        Q = "$qs";
    }
    snprintf(e, sizeof e, "attention(%s, $kr, $vh, causal = 1%s)", Q, SA);
    s = gen_grp_st(g, G, K_VAL, "oa", "oa[$l]", e, NULL, NULL);
    s->note = "the rank's own block, causal";
    if (all)
        s->note = "BUG: 1/HD instead of 1/sqrt(HD) (in every block)";
    snprintf(e, sizeof e,
             "matmul(%s, transpose(repeat_interleave($kr, repeats = G, dim = 1), 2, 3)) * %s", Q,
             SC);
    gen_grp_st(g, G, K_VAL, "sc", "sc[$l]", e, NULL, NULL);
    s = gen_grp_st(g, G, K_VAL, "la", "la[$l]",
                   "log(sum(exp($sc) * causal_mask($sc), dim = -1))", NULL, NULL);
    s->note = "its log-sum-exp";
    gen_grp_st(g, G, K_VAL, "kc", "kc[$l]", "$kr", NULL, NULL);
    gen_grp_st(g, G, K_VAL, "vc", "vc[$l]", "$vh", NULL, NULL);
    int nocausal = gen_bug_is(g, "cp_causal_offset_local");
    gen_grp_st(g, G, K_OPEN, "", "", "for t in 1..cp", NULL, NULL);
    {
        s = gen_grp_st(g, G, K_SEND, "kc", "kc", "$kc", NULL, NULL);
        snprintf(s->dest, sizeof s->dest, "cp = (rank.cp + 1) %% cp");
        s->note = "ring step: the block to the next cp rank";
        s = gen_grp_st(g, G, K_SEND, "vc", "vc", "$vc", NULL, NULL);
        snprintf(s->dest, sizeof s->dest, "cp = (rank.cp + 1) %% cp");
        gen_grp_st(g, G, K_VAL, "kc", "kc[$l]", "recv(cp = (rank.cp + cp - 1) % cp)", NULL, NULL);
        gen_grp_st(g, G, K_VAL, "vc", "vc[$l]", "recv(cp = (rank.cp + cp - 1) % cp)", NULL, NULL);
        if (!nocausal) /* step t holds block rank.cp - t (mod cp): visible when t <= rank.cp */
            gen_grp_st(g, G, K_OPEN, "", "", "if rank.cp >= t", NULL, NULL);
        snprintf(e, sizeof e, "attention(%s, $kc, $vc%s)", Q, SA);
        gen_grp_st(g, G, K_VAL, "ob", "ob[$l]", e, NULL, NULL);
        snprintf(e, sizeof e,
                 "logsumexp(matmul(%s, transpose(repeat_interleave($kc, repeats = G, dim = 1), 2, "
                 "3)) * %s, dim = -1)",
                 Q, SC);
        gen_grp_st(g, G, K_VAL, "lb", "lb[$l]", e, NULL, NULL);
        gen_grp_st(g, G, K_VAL, "ln", "ln[$l]", "log(exp($la) + exp($lb))", NULL, NULL);
        s = gen_grp_st(g, G, K_VAL, "oa", "oa[$l]",
                       "unsqueeze(exp($la - $ln), -1) * $oa + unsqueeze(exp($lb - $ln), -1) * $ob",
                       NULL, NULL);
        s->note = "online-softmax merge";
        gen_grp_st(g, G, K_VAL, "la", "la[$l]", "$ln", NULL, NULL);
        if (!nocausal)
            gen_grp_st(g, G, K_CLOSE, "", "", "", NULL, NULL);
    }
    gen_grp_st(g, G, K_CLOSE, "", "", "", NULL, NULL);
    s = gen_grp_st(g, G, K_VAL, "o", "o[$l]", "$oa", "o[$l]", g->LHQ);
    /* a planted bug fails at this cut (the changed lines carry a BUG note) */
    s->bug = nocausal || all || gen_bug_is(g, "attn_scale_one_rank");
    if (nocausal)
        s->note = "BUG: every rank merges every block, also the later (masked) ones";
}

/* A row-parallel linear out[$l] = matmul(x[$l], W): with tp the partial sums po[$l] (cut as
   partial over tp), then, with reduce, their all-reduce (reduce-scatter under sp) into out[$l]
   (a caller with reduce = 0 writes that group itself); without tp out[$l] directly. */
static void rowpar_fwd(gen_t *g, const char *x, const char *w, const char *po, const char *out,
                       int reduce)
{
    char e[EXPR_LEN], full[NAME_LEN], pfull[NAME_LEN], cut[NAME_LEN], in[24];
    grp_t G;
    snprintf(full, sizeof full, "%s[$l]", out);
    snprintf(pfull, sizeof pfull, "%s[$l]", po);
    snprintf(cut, sizeof cut, "%s[$l]", out);
    gen_grp_init(&G);
    snprintf(e, sizeof e, "%s[$l]", x);
    gen_grp_in(g, &G, x, e);
    snprintf(e, sizeof e, "matmul($%s, $P_%s)", x, w);
    if (g->tpx)
        gen_grp_st(g, &G, K_VAL, po, pfull, e, cut, g->LFP);
    else
        gen_grp_st(g, &G, K_VAL, out, full, e, cut, g->LX);
    gen_grp_emit(g, &G);
    if (g->tpx && reduce) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, po, pfull);
        snprintf(in, sizeof in, "$%s", po);
        gen_reduce_tp(g, in, e, sizeof e);
        gen_grp_st(g, &G, K_VAL, out, full, e, cut, g->LX);
        gen_grp_emit(g, &G);
    }
}

static void layer_fwd(gen_t *g, int send_to, int last_index)
{
    char e[EXPR_LEN];
    grp_t G;
    gst_t *s;

    zero3_gather_layer(g, 0);
    /* attention block */
    gen_grp_init(&G);
    gen_grp_in(g, &G, "x", "x[$l]");
    gen_grp_st(g, &G, K_VAL, g->sp ? "h1s" : "h1", g->sp ? "h1s[$l]" : "h1[$l]",
               "rmsnorm($x, $P_wn1, eps = $EPS)", "h1[$l]", g->sp ? g->LX : g->LF);
    gen_grp_emit(g, &G);
    if (g->sp) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "h1s", "h1s[$l]");
        gen_grp_st(g, &G, K_VAL, "h1", "h1[$l]", "all_gather($h1s, 1, tp)", "h1[$l]", g->LF);
        gen_grp_emit(g, &G);
    }
    gen_grp_init(&G);
    gen_grp_in(g, &G, "h1", "h1[$l]");
    gen_grp_st(g, &G, K_VAL, "q", "q[$l]", "matmul($h1, $P_wq)", "q[$l]", g->LQ);
    gen_grp_st(g, &G, K_VAL, "k", "k[$l]", "matmul($h1, $P_wk)", "k[$l]", g->LK);
    gen_grp_st(g, &G, K_VAL, "v", "v[$l]", "matmul($h1, $P_wv)", "v[$l]", g->LK);
    gen_grp_emit(g, &G);

    gen_grp_init(&G);
    gen_grp_in(g, &G, "q", "q[$l]");
    gen_grp_in(g, &G, "k", "k[$l]");
    gen_grp_in(g, &G, "v", "v[$l]");
    gen_grp_st(g, &G, K_VAL, "qh", "qh[$l]", "transpose(reshape($q, [$LB, $SL, $NHl, HD]), 1, 2)",
               NULL, NULL);
    gen_grp_st(g, &G, K_VAL, "kh", "kh[$l]", "transpose(reshape($k, [$LB, $SL, $NKVl, HD]), 1, 2)",
               NULL, NULL);
    gen_grp_st(g, &G, K_VAL, "vh", "vh[$l]", "transpose(reshape($v, [$LB, $SL, $NKVl, HD]), 1, 2)",
               "vh[$l]", g->LHK);
    if (gen_bug_is(g, "cp_rope_local_positions")) {
        s = gen_grp_st(g, &G, K_VAL, "qr", "qr[$l]",
                       "rope($qh, slice(cos, 0, 0, S/cp), slice(sin, 0, 0, S/cp))", "qr[$l]",
                       g->LHQ);
        s->bug = 1;
        s->note = "BUG: RoPE at the chunk's local positions";
        gen_grp_st(g, &G, K_VAL, "kr", "kr[$l]",
                   "rope($kh, slice(cos, 0, 0, S/cp), slice(sin, 0, 0, S/cp))", "kr[$l]", g->LHK);
    } else {
        gen_grp_st(g, &G, K_VAL, "qr", "qr[$l]", "rope($qh, $COS, $SIN)", "qr[$l]", g->LHQ);
        gen_grp_st(g, &G, K_VAL, "kr", "kr[$l]", "rope($kh, $COS, $SIN)", "kr[$l]", g->LHK);
    }
    gen_grp_emit(g, &G);

    gen_grp_init(&G);
    gen_grp_in(g, &G, "qr", "qr[$l]");
    gen_grp_in(g, &G, "kr", "kr[$l]");
    gen_grp_in(g, &G, "vh", "vh[$l]");
    if (g->cp_ring) {
        ring_attention_fwd(g, &G);
        gen_grp_emit(g, &G);
        goto attention_done;
    }
    /* with context parallelism the keys and values of the whole sequence are all-gathered over
       cp and the rank's query chunk attends with the causal offset of its first position */
    const char *KV =
        g->cp > 1 ? "$kf, $vf, causal = 1, offset = rank.cp*(S/cp)" : "$kr, $vh, causal = 1";
    if (g->cp > 1) {
        gen_grp_st(g, &G, K_VAL, "kf", "kf[$l]", "all_gather($kr, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "vf", "vf[$l]", "all_gather($vh, 2, cp)", NULL, NULL);
    }
    if (gen_bug_is(g, "cp_causal_offset_local")) {
        s = gen_grp_st(g, &G, K_VAL, "o", "o[$l]", "attention($qr, $kf, $vf, causal = 1)", "o[$l]",
                       g->LHQ);
        s->bug = 1;
        s->note = "BUG: the causal mask without the chunk's offset";
    } else if (gen_bug_is(g, "attn_scale_one_rank")) {
        snprintf(e, sizeof e, "attention($qr * (1 + %s), %s)", bug_rank(g), KV);
        s = gen_grp_st(g, &G, K_VAL, "o", "o[$l]", e, "o[$l]", g->LHQ);
        s->bug = 1;
        s->note = "BUG: queries doubled on rank 1";
    } else if (gen_bug_is(g, "attn_scale_all")) {
        snprintf(e, sizeof e, "attention($qr, %s, scale = 1/HD)", KV);
        s = gen_grp_st(g, &G, K_VAL, "o", "o[$l]", e, "o[$l]", g->LHQ);
        s->bug = 1;
        s->note = "BUG: 1/HD instead of 1/sqrt(HD)";
    } else {
        snprintf(e, sizeof e, "attention($qr, %s)", KV);
        gen_grp_st(g, &G, K_VAL, "o", "o[$l]", e, "o[$l]", g->LHQ);
    }
    gen_grp_emit(g, &G);
attention_done:

    gen_grp_init(&G);
    gen_grp_in(g, &G, "o", "o[$l]");
    gen_grp_st(g, &G, K_VAL, "oc", "oc[$l]", "reshape(transpose($o, 1, 2), [$LB, $SL, $QDl])",
               "oc[$l]", g->LQ);
    gen_grp_emit(g, &G);

    rowpar_fwd(g, "oc", "wo", "ao", "a", 0);
    if (g->tpx) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "ao", "ao[$l]");
        if (gen_bug_is(g, "tp_allreduce_identity")) {
            if (g->sp)
                s = gen_grp_st(g, &G, K_VAL, "a", "a[$l]",
                               "slice($ao, 1, rank.tp*($SL/tp), (rank.tp+1)*($SL/tp))", "a[$l]",
                               g->LX);
            else
                s = gen_grp_st(g, &G, K_VAL, "a", "a[$l]", "$ao", "a[$l]", g->LX);
            s->bug = 1;
            s->note = g->sp ? "BUG: reduce-scatter replaced by the local chunk"
                            : "BUG: all-reduce replaced by the identity";
        } else if (gen_bug_is(g, "tp_allreduce_dropped")) {
            /* no statement: a[l] is never defined; the residual add below reads it */
            G.nst = 0;
        } else if (gen_bug_is(g, "tp_allgather_instead")) {
            s = gen_grp_st(
                g, &G, K_VAL, "a", "a[$l]",
                "all_gather(slice($ao, 1, rank.tp*($SL/tp), (rank.tp+1)*($SL/tp)), 1, tp)", "a[$l]",
                g->LX);
            s->bug = 1;
            s->note = "BUG: all-gather instead of all-reduce";
        } else {
            gen_reduce_tp(g, "$ao", e, sizeof e);
            gen_grp_st(g, &G, K_VAL, "a", "a[$l]", e, "a[$l]", g->LX);
        }
        gen_grp_emit(g, &G);
    }
    gen_grp_init(&G);
    gen_grp_in(g, &G, "x", "x[$l]");
    gen_grp_in(g, &G, "a", "a[$l]");
    s = gen_grp_st(g, &G, K_VAL, "r", "r[$l]", "$x + $a", "r[$l]", g->LX);
    if (gen_bug_is(g, "tp_allreduce_dropped")) {
        s->bug = 1;
        s->note = "BUG: a[l] was never computed (its all-reduce is missing)";
    }
    gen_grp_emit(g, &G);

    /* MLP block */
    gen_grp_init(&G);
    gen_grp_in(g, &G, "r", "r[$l]");
    if (gen_bug_is(g, "eps_one_rank") || gen_bug_is(g, "eps_all")) {
        if (gen_bug_is(g, "eps_all"))
            snprintf(e, sizeof e, "rmsnorm($r, $P_wn2, eps = 1e-6)");
        else
            snprintf(e, sizeof e, "rmsnorm($r, $P_wn2, eps = 1/(100000 + %s))", bug_rank(g));
        s = gen_grp_st(g, &G, K_VAL, g->sp ? "h2s" : "h2", g->sp ? "h2s[$l]" : "h2[$l]", e,
                       "h2[$l]", g->sp ? g->LX : g->LF);
        s->bug = 1;
        s->note = gen_bug_is(g, "eps_all") ? "BUG: eps 1e-6 instead of 1e-5"
                                           : "BUG: eps differs on rank 1";
    } else {
        gen_grp_st(g, &G, K_VAL, g->sp ? "h2s" : "h2", g->sp ? "h2s[$l]" : "h2[$l]",
                   "rmsnorm($r, $P_wn2, eps = $EPS)", "h2[$l]", g->sp ? g->LX : g->LF);
    }
    gen_grp_emit(g, &G);
    if (g->sp) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "h2s", "h2s[$l]");
        gen_grp_st(g, &G, K_VAL, "h2", "h2[$l]", "all_gather($h2s, 1, tp)", "h2[$l]", g->LF);
        gen_grp_emit(g, &G);
    }
    if (g->moe_layer) {
        g->fam->moe_fwd(g); /* d[l] from h2[l] */
    } else {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "h2", "h2[$l]");
        gen_grp_st(g, &G, K_VAL, "g", "g[$l]", "matmul($h2, $P_wg)", "g[$l]", g->LFF);
        gen_grp_st(g, &G, K_VAL, "u", "u[$l]", "matmul($h2, $P_wu)", "u[$l]", g->LFF);
        gen_grp_emit(g, &G);

        gen_grp_init(&G);
        gen_grp_in(g, &G, "g", "g[$l]");
        gen_grp_in(g, &G, "u", "u[$l]");
        gen_grp_st(g, &G, K_VAL, "m", "m[$l]", "silu($g) * $u", "m[$l]", g->LFF);
        gen_grp_emit(g, &G);

        rowpar_fwd(g, "m", "wd", "mo", "d", 1);
    }

    /* the residual add; the last layer of a non-last stage sends it instead */
    if (send_to < 0) {
        fwd_out_group(g, -1);
    } else if (last_index < 0) {
        fwd_out_group(g, send_to);
    } else {
        gen_open_block(g, "if %s < %d", g->il, last_index);
        fwd_out_group(g, -1);
        g->ind--;
        gen_put_line(g, "} else {");
        g->ind++;
        fwd_out_group(g, send_to);
        gen_close_block(g);
    }
}

/* the last backward group of a layer: grad.x[l] (or its send to the previous stage) and the
   first norm's weight gradient */
static void bwd_out_group(gen_t *g, int send_to)
{
    grp_t G;
    gen_grp_init(&G);
    gen_grp_in(g, &G, "x", "x[$l]");
    gen_grp_in(g, &G, "gr", "gr[$l]");
    gen_grp_in(g, &G, "gh1", "gh1[$l]");
    if (send_to < 0) {
        gen_grp_st(g, &G, K_VAL, "gx", "gx[$l]",
                   "$gr + rmsnorm_grad_x($x, $P_wn1, $gh1, eps = $EPS)", "grad.x[$l]", g->LX);
    } else {
        gst_t *s;
        if (g->tpx && !g->sp)
            s = gen_grp_st(g, &G, K_SEND, "gx", "gx",
                           "slice($gr + rmsnorm_grad_x($x, $P_wn1, $gh1, eps = $EPS), 1, "
                           "rank.tp*($SL/tp), (rank.tp+1)*($SL/tp))",
                           NULL, NULL);
        else
            s = gen_grp_st(g, &G, K_SEND, "gx", "gx",
                           "$gr + rmsnorm_grad_x($x, $P_wn1, $gh1, eps = $EPS)", NULL, NULL);
        snprintf(s->dest, sizeof s->dest, "pp = %d", send_to);
        s->note = "to the previous stage";
    }
    gen_grp_st(g, &G, K_SUM, "gwn1", "gwn1[$l]", "rmsnorm_grad_w($x, $P_wn1, $gh1, eps = $EPS)",
               NULL, NULL);
    gen_grp_emit(g, &G);
}

void gen_linear_bwd(gen_t *g, const gen_linbwd_t *L)
{
    char e[EXPR_LEN], full[NAME_LEN], cut[NAME_LEN], gy[24], key[16];
    grp_t G;
    gen_grp_init(&G);
    gen_grp_in(g, &G, L->gy_key, L->gy);
    snprintf(full, sizeof full, "%s[$l]", L->x);
    gen_grp_in(g, &G, L->x, full);
    if (L->re) {
        snprintf(full, sizeof full, "%s[$l]", L->re_key);
        gen_grp_st(g, &G, K_VAL, L->re_key, full, L->re, NULL, NULL);
    }
    snprintf(gy, sizeof gy, "$%s", L->re ? L->re_key : L->gy_key);
    snprintf(e, sizeof e, "matmul(%s, transpose($P_%s, %s))", gy, L->w, L->wt);
    snprintf(full, sizeof full, "%s[$l]", L->gx);
    snprintf(cut, sizeof cut, "grad.%s[$l]", L->x);
    gen_grp_st(g, &G, K_VAL, L->gx, full, e, cut, L->lay);
    snprintf(e, sizeof e, "matmul_grad_b($%s, $P_%s, %s)", L->x, L->w, gy);
    snprintf(key, sizeof key, "%.*s", (int)strcspn(L->gw, "["), L->gw);
    gen_grp_st(g, &G, K_SUM, key, L->gw, e, NULL, NULL);
    gen_grp_emit(g, &G);
}

void gen_swiglu_bwd(gen_t *g, const char *ga, const char *up, const char *gm, const char *lay)
{
    char e[EXPR_LEN], full[NAME_LEN], cut[NAME_LEN], key[16];
    grp_t G;
    gen_grp_init(&G);
    snprintf(full, sizeof full, "%s[$l]", ga);
    gen_grp_in(g, &G, ga, full);
    snprintf(full, sizeof full, "%s[$l]", up);
    gen_grp_in(g, &G, up, full);
    snprintf(full, sizeof full, "%s[$l]", gm);
    gen_grp_in(g, &G, gm, full);
    snprintf(key, sizeof key, "g%s", ga);
    snprintf(full, sizeof full, "g%s[$l]", ga);
    snprintf(cut, sizeof cut, "grad.%s[$l]", ga);
    snprintf(e, sizeof e, "silu_grad($%s, $%s * $%s)", ga, gm, up);
    gen_grp_st(g, &G, K_VAL, key, full, e, cut, lay);
    snprintf(key, sizeof key, "g%s", up);
    snprintf(full, sizeof full, "g%s[$l]", up);
    snprintf(cut, sizeof cut, "grad.%s[$l]", up);
    snprintf(e, sizeof e, "$%s * silu($%s)", gm, ga);
    gen_grp_st(g, &G, K_VAL, key, full, e, cut, lay);
    gen_grp_emit(g, &G);
}

void gen_gateup_grads(gen_t *g, grp_t *G, const char *x, const char *ga, const char *up,
                      const char *idx)
{
    char e[EXPR_LEN], full[NAME_LEN], key[16];
    const char *w[2] = {ga, up};
    for (int i = 0; i < 2; i++) {
        snprintf(key, sizeof key, "gw%s", w[i]);
        snprintf(full, sizeof full, "gw%s[%s]", w[i], idx);
        snprintf(e, sizeof e, "matmul_grad_b($%s, $P_w%s, $g%s)", x, w[i], w[i]);
        gen_grp_st(g, G, K_SUM, key, full, e, NULL, NULL);
    }
}

static void layer_bwd(gen_t *g, int send_to, int first_index_cond)
{
    char e[EXPR_LEN];
    grp_t G;
    gst_t *s;
    const char *sp_gather = g->sp ? "all_gather($gy, 1, tp)" : NULL;

    zero3_gather_layer(g, 1);

    if (g->moe_layer) {
        g->fam->moe_bwd(g); /* grad.h2[l] from grad.x[l+1] */
    } else {
        /* MLP block: x[l+1] = r + d, d = matmul(m, wd), m = silu(g) * u */
        gen_linbwd_t wd = {"gy", "gx[$l1]", "gdf", sp_gather, "m",
                           "wd", "0, 1",    "gm",  "gwd[$l]", g->LFF};
        gen_linear_bwd(g, &wd);
        gen_swiglu_bwd(g, "g", "u", "gm", g->LFF);

        gen_grp_init(&G);
        gen_grp_in(g, &G, "h2", "h2[$l]");
        gen_grp_in(g, &G, "gg", "gg[$l]");
        gen_grp_in(g, &G, "gu", "gu[$l]");
        gen_gateup_grads(g, &G, "h2", "g", "u", "$l");
        gen_grp_st(g, &G, K_VAL, g->tpx ? "gh2p" : "gh2", g->tpx ? "gh2p[$l]" : "gh2[$l]",
                   "matmul($gg, transpose($P_wg, 0, 1)) + matmul($gu, transpose($P_wu, 0, 1))",
                   "grad.h2[$l]", g->tpx ? g->LFP : g->LX);
        gen_grp_emit(g, &G);
        if (g->tpx) {
            gen_grp_init(&G);
            gen_grp_in(g, &G, "gh2p", "gh2p[$l]");
            gen_reduce_tp(g, "$gh2p", e, sizeof e);
            gen_grp_st(g, &G, K_VAL, "gh2", "gh2[$l]", e, "grad.h2[$l]", g->LX);
            gen_grp_emit(g, &G);
        }
    }

    gen_grp_init(&G);
    gen_grp_in(g, &G, "gy", "gx[$l1]");
    gen_grp_in(g, &G, "r", "r[$l]");
    gen_grp_in(g, &G, "gh2", "gh2[$l]");
    gen_grp_st(g, &G, K_VAL, "gr", "gr[$l]", "$gy + rmsnorm_grad_x($r, $P_wn2, $gh2, eps = $EPS)",
               "grad.r[$l]", g->LX);
    gen_grp_st(g, &G, K_SUM, "gwn2", "gwn2[$l]", "rmsnorm_grad_w($r, $P_wn2, $gh2, eps = $EPS)",
               NULL, NULL);
    gen_grp_emit(g, &G);

    /* attention block: r = x + a, a = matmul(oc, wo) */
    gen_linbwd_t wo = {"gr",      "gr[$l]", "gaf",  g->sp ? "all_gather($gr, 1, tp)" : NULL,
                       "oc",      "wo",     "0, 1", "goc",
                       "gwo[$l]", g->LQ};
    gen_linear_bwd(g, &wo);

    gen_grp_init(&G);
    gen_grp_in(g, &G, "goc", "goc[$l]");
    gen_grp_st(g, &G, K_VAL, "go", "go[$l]", "transpose(reshape($goc, [$LB, $SL, $NHl, HD]), 1, 2)",
               "grad.o[$l]", g->LHQ);
    gen_grp_emit(g, &G);

    gen_grp_init(&G);
    gen_grp_in(g, &G, "qr", "qr[$l]");
    gen_grp_in(g, &G, "kr", "kr[$l]");
    gen_grp_in(g, &G, "vh", "vh[$l]");
    gen_grp_in(g, &G, "go", "go[$l]");
    if (g->cp > 1 && g->cp_ring) {
        /* ring attention's backward: K and V gathered again; the rank's queries give the query
           gradient of its chunk and partial key/value gradients of every key (each with its own
           softmax), which are reduce-scattered over cp: each rank receives the sum for its own
           keys and values (what the ring's gradient passes accumulate) */
        gen_grp_st(g, &G, K_VAL, "kfb", "kfb[$l]", "all_gather($kr, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "vfb", "vfb[$l]", "all_gather($vh, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "gqr", "gqr[$l]",
                   "attention_grad_q($qr, $kfb, $vfb, $go, causal = 1, offset = rank.cp*(S/cp))",
                   "grad.qr[$l]", g->LHQ);
        gen_grp_st(g, &G, K_VAL, "gkr", "gkr[$l]",
                   "reduce_scatter(attention_grad_k($qr, $kfb, $vfb, $go, causal = 1, "
                   "offset = rank.cp*(S/cp)), 2, sum, cp)",
                   "grad.kr[$l]", g->LHK);
        gen_grp_st(g, &G, K_VAL, "gvh", "gvh[$l]",
                   "reduce_scatter(attention_grad_v($qr, $kfb, $vfb, $go, causal = 1, "
                   "offset = rank.cp*(S/cp)), 2, sum, cp)",
                   "grad.vh[$l]", g->LHK);
    } else if (g->cp > 1) {
        /* context parallel (all-gather form): gather K and V again for the query gradient of
           the rank's chunk; the gradients of the rank's keys and values need every query: the
           queries and output gradients are all-gathered too and each rank keeps its chunk
           (--cp-algo ring reduce-scatters per-rank partial key/value gradients instead) */
        gen_grp_st(g, &G, K_VAL, "kfb", "kfb[$l]", "all_gather($kr, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "vfb", "vfb[$l]", "all_gather($vh, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "gqr", "gqr[$l]",
                   "attention_grad_q($qr, $kfb, $vfb, $go, causal = 1, offset = rank.cp*(S/cp))",
                   "grad.qr[$l]", g->LHQ);
        gen_grp_st(g, &G, K_VAL, "qfb", "qfb[$l]", "all_gather($qr, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "gof", "gof[$l]", "all_gather($go, 2, cp)", NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "gkr", "gkr[$l]",
                   "slice(attention_grad_k($qfb, $kfb, $vfb, $gof, causal = 1), 2, rank.cp*(S/cp), "
                   "(rank.cp+1)*(S/cp))",
                   "grad.kr[$l]", g->LHK);
        gen_grp_st(g, &G, K_VAL, "gvh", "gvh[$l]",
                   "slice(attention_grad_v($qfb, $kfb, $vfb, $gof, causal = 1), 2, rank.cp*(S/cp), "
                   "(rank.cp+1)*(S/cp))",
                   "grad.vh[$l]", g->LHK);
    } else {
        gen_grp_st(g, &G, K_VAL, "gqr", "gqr[$l]",
                   "attention_grad_q($qr, $kr, $vh, $go, causal = 1)", "grad.qr[$l]", g->LHQ);
        gen_grp_st(g, &G, K_VAL, "gkr", "gkr[$l]",
                   "attention_grad_k($qr, $kr, $vh, $go, causal = 1)", "grad.kr[$l]", g->LHK);
        gen_grp_st(g, &G, K_VAL, "gvh", "gvh[$l]",
                   "attention_grad_v($qr, $kr, $vh, $go, causal = 1)", "grad.vh[$l]", g->LHK);
    }
    gen_grp_emit(g, &G);

    gen_grp_init(&G);
    gen_grp_in(g, &G, "gqr", "gqr[$l]");
    gen_grp_in(g, &G, "gkr", "gkr[$l]");
    gen_grp_in(g, &G, "gvh", "gvh[$l]");
    if (gen_bug_is(g, "rope_grad_swapped")) {
        /* a fused RoPE backward over [q heads, k heads] whose result is split the wrong way round:
           q gets the slice starting where k's heads would be if k came first, and k q's first heads
         */
        gen_grp_st(g, &G, K_VAL, "gqk", "gqk[$l]",
                   "rope_grad(concat($gqr, $gkr, dim = 1), $COS, $SIN)", NULL, NULL);
        s = gen_grp_st(
            g, &G, K_VAL, "gq", "gq[$l]",
            "reshape(transpose(slice($gqk, 1, $NKVl, $NKVl + $NHl), 1, 2), [$LB, $SL, $QDl])",
            "grad.q[$l]", g->LQ);
        s->bug = 1;
        s->note = "BUG: q and k slices of the fused RoPE backward swapped";
        gen_grp_st(g, &G, K_VAL, "gk", "gk[$l]",
                   "reshape(transpose(slice($gqk, 1, 0, $NKVl), 1, 2), [$LB, $SL, $KDl])",
                   "grad.k[$l]", g->LK);
    } else {
        gen_grp_st(g, &G, K_VAL, "gq", "gq[$l]",
                   "reshape(transpose(rope_grad($gqr, $COS, $SIN), 1, 2), [$LB, $SL, $QDl])",
                   "grad.q[$l]", g->LQ);
        gen_grp_st(g, &G, K_VAL, "gk", "gk[$l]",
                   "reshape(transpose(rope_grad($gkr, $COS, $SIN), 1, 2), [$LB, $SL, $KDl])",
                   "grad.k[$l]", g->LK);
    }
    gen_grp_st(g, &G, K_VAL, "gv", "gv[$l]", "reshape(transpose($gvh, 1, 2), [$LB, $SL, $KDl])",
               "grad.v[$l]", g->LK);
    gen_grp_emit(g, &G);

    gen_grp_init(&G);
    gen_grp_in(g, &G, "h1", "h1[$l]");
    gen_grp_in(g, &G, "gq", "gq[$l]");
    gen_grp_in(g, &G, "gk", "gk[$l]");
    gen_grp_in(g, &G, "gv", "gv[$l]");
    gen_grp_st(g, &G, K_SUM, "gwq", "gwq[$l]", "matmul_grad_b($h1, $P_wq, $gq)", NULL, NULL);
    gen_grp_st(g, &G, K_SUM, "gwk", "gwk[$l]", "matmul_grad_b($h1, $P_wk, $gk)", NULL, NULL);
    gen_grp_st(g, &G, K_SUM, "gwv", "gwv[$l]", "matmul_grad_b($h1, $P_wv, $gv)", NULL, NULL);
    s = gen_grp_st(
        g, &G, K_VAL, g->tpx ? "gh1p" : "gh1", g->tpx ? "gh1p[$l]" : "gh1[$l]",
        gen_bug_is(g, "fanout_extra_copy")
            ? "matmul($gq, transpose($P_wq, 0, 1)) + matmul($gk, transpose($P_wk, 0, 1)) + "
              "matmul($gv, transpose($P_wv, 0, 1)) + matmul($gv, transpose($P_wv, 0, 1))"
            : "matmul($gq, transpose($P_wq, 0, 1)) + matmul($gk, transpose($P_wk, 0, 1)) + "
              "matmul($gv, transpose($P_wv, 0, 1))",
        "grad.h1[$l]", g->tpx ? g->LFP : g->LX);
    if (gen_bug_is(g, "fanout_extra_copy")) {
        s->bug = 1;
        s->note = "BUG: the v branch added twice";
    }
    gen_grp_emit(g, &G);
    if (g->tpx) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "gh1p", "gh1p[$l]");
        if (gen_bug_is(g, "bwd_allreduce_identity")) {
            if (g->sp)
                s = gen_grp_st(g, &G, K_VAL, "gh1", "gh1[$l]",
                               "slice($gh1p, 1, rank.tp*($SL/tp), (rank.tp+1)*($SL/tp))",
                               "grad.h1[$l]", g->LX);
            else
                s = gen_grp_st(g, &G, K_VAL, "gh1", "gh1[$l]", "$gh1p", "grad.h1[$l]", g->LX);
            s->bug = 1;
            s->note = g->sp ? "BUG: reduce-scatter replaced by the local chunk"
                            : "BUG: all-reduce replaced by the identity";
        } else {
            gen_reduce_tp(g, "$gh1p", e, sizeof e);
            gen_grp_st(g, &G, K_VAL, "gh1", "gh1[$l]", e, "grad.h1[$l]", g->LX);
        }
        gen_grp_emit(g, &G);
    }

    if (send_to < 0) {
        bwd_out_group(g, -1);
    } else if (first_index_cond < 0) {
        bwd_out_group(g, send_to);
    } else {
        gen_open_block(g, "if i < %d", first_index_cond);
        bwd_out_group(g, -1);
        g->ind--;
        gen_put_line(g, "} else {");
        g->ind++;
        bwd_out_group(g, send_to);
        gen_close_block(g);
    }
}

/* forward from the last layer's output x[L]: final norm, LM head, vocab-parallel cross-entropy
   and its backward down to grad.x[L] */
static void head(gen_t *g)
{
    char e[EXPR_LEN];
    grp_t G;
    gst_t *s;
    int tp = g->tpx;

    gen_set_layer(g, "", "");
    const param_t *hp[] = {&wnf_param, g->tied ? &emb_param : &wout_param};
    zero3_gather(g, hp, 2, 2);
    /* the LM head's weight [H, V]: wout, or the transposed embedding */
    const char *W = g->tied ? "transpose($P_emb, 0, 1)" : "$P_wout";
    gen_grp_init(&G);
    snprintf(e, sizeof e, "x[%d]", g->L);
    gen_grp_in(g, &G, "x", e);
    /* the final RMSNorm written out, as in the reference implementation */
    if (gen_bug_is(g, "pow1")) {
        snprintf(e, sizeof e,
                 "$x * rsqrt(mean(pow($x, 2 - %s), dim = -1, keepdim = 1) + $EPS) * $P_wnf",
                 bug_rank(g));
        s = gen_grp_st(g, &G, K_VAL, g->sp ? "hfs" : "hf", g->sp ? "hfs" : "hf", e, "hf",
                       g->sp ? g->LX : g->LF);
        s->bug = 1;
        s->note = "BUG: pow 1 on rank 1";
    } else {
        gen_grp_st(g, &G, K_VAL, g->sp ? "hfs" : "hf", g->sp ? "hfs" : "hf",
                   "$x * rsqrt(mean(pow($x, 2), dim = -1, keepdim = 1) + $EPS) * $P_wnf", "hf",
                   g->sp ? g->LX : g->LF);
    }
    gen_grp_emit(g, &G);
    if (g->sp) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "hfs", "hfs");
        gen_grp_st(g, &G, K_VAL, "hf", "hf", "all_gather($hfs, 1, tp)", "hf", g->LF);
        gen_grp_emit(g, &G);
    }
    gen_grp_init(&G);
    gen_grp_in(g, &G, "hf", "hf");
    snprintf(e, sizeof e, "matmul($hf, %s)", W);
    gen_grp_st(g, &G, K_VAL, "lg", "lg", e, "logits", g->LV);
    gen_grp_emit(g, &G);

    /* vocab-parallel cross-entropy: the max, the sum of exponentials, the target logit and the
       target mass (1 for one-hot targets) are all-reduced over tp; with label smoothing also the
       sum of the logits.  Per token, with lse = log(se) + mx:
         nll = lse * ts - tl,  smoothed (1 - e) * nll + e * lse - e/V * sx;
       the loss is the sum over tokens (times the mask) over the global token count B*S or the
       global number of unmasked tokens ntok. */
    if (g->mask && !gen_bug_is(g, "loss_mean_per_microbatch") && (!g->f1b || g->mbi == 0)) {
        /* (1F1B with dp: every rank holds the whole mask, see BDI) */
        char axes[32];
        gen_axes_text(g, g->f1b && g->dp > 1 ? 0 : 1, 1, 0, axes, sizeof axes);
        if (axes[0])
            gen_linef(g,
                      "ntok = all_reduce(sum(mask), sum, %s)      # unmasked tokens of the global "
                      "batch",
                      axes);
        else
            gen_linef(g, "ntok = sum(mask)      # unmasked tokens of the global batch");
    }
    gen_grp_init(&G);
    gen_grp_in(g, &G, "lg", "lg");
    gen_grp_in(g, &G, "tgt", "tgt");
    if (g->mask)
        gen_grp_in(g, &G, "mask", "mask");
    gen_grp_st(g, &G, K_VAL, "mx", "mx",
               tp ? "all_reduce(amax($lg, dim = -1), max, tp)" : "amax($lg, dim = -1)", NULL, NULL);
    gen_grp_st(g, &G, K_VAL, "ex", "ex", "exp($lg - unsqueeze($mx, -1))", NULL, NULL);
    gen_grp_st(g, &G, K_VAL, "se", "se",
               tp ? "all_reduce(sum($ex, dim = -1), sum, tp)" : "sum($ex, dim = -1)", NULL, NULL);
    gen_grp_st(g, &G, K_VAL, "ts", "ts",
               tp ? "all_reduce(sum($tgt, dim = -1), sum, tp)" : "sum($tgt, dim = -1)", NULL, NULL);
    gen_grp_st(g, &G, K_VAL, "tl", "tl",
               tp ? "all_reduce(sum($lg * $tgt, dim = -1), sum, tp)" : "sum($lg * $tgt, dim = -1)",
               NULL, NULL);
    if (g->ls)
        gen_grp_st(g, &G, K_VAL, "sx", "sx",
                   tp ? "all_reduce(sum($lg, dim = -1), sum, tp)" : "sum($lg, dim = -1)", NULL,
                   NULL);
    char nll[256], W2[128], w1[128];
    if (g->ls) {
        snprintf(nll, sizeof nll,
                 "((1 - %s) * ((log($se) + $mx) * $ts - $tl) + %s * (log($se) + $mx) - %s/V * $sx)",
                 g->ls, g->ls, g->ls);
        snprintf(W2, sizeof W2, "unsqueeze((1 - %s) * $ts + %s, -1)", g->ls, g->ls);
        snprintf(w1, sizeof w1, "((1 - %s) * $tgt + %s/V)", g->ls, g->ls);
    } else {
        snprintf(nll, sizeof nll, "((log($se) + $mx) * $ts - $tl)");
        snprintf(W2, sizeof W2, "unsqueeze($ts, -1)");
        snprintf(w1, sizeof w1, "$tgt");
    }
    int per_mb = gen_bug_is(g, "loss_mean_per_microbatch");
    int moe = g->nd < g->L; /* the loss is lce + the load-balancing losses (below) */
    if (moe && !g->mask && !g->ls) {
        /* MoE: the token mean, plus the load-balancing losses below */
        snprintf(e, sizeof e, "sum(%s) / (B*S)", nll);
        gen_grp_st(g, &G, K_SUM, "lce", "lce", e, NULL, NULL);
        gen_grp_st(g, &G, K_VAL, "glg", "glg",
                   "($ex / unsqueeze($se, -1) * unsqueeze($ts, -1) - $tgt) / (B*S)", "grad.logits",
                   g->LV);
    } else if (!g->mask && !g->ls) {
        /* the plain form (kept as the corpus files have it) */
        if (per_mb) {
            snprintf(e, sizeof e, "sum((log($se) + $mx) * $ts - $tl) / ((%s)*S)", g->lb);
            s = gen_grp_st(g, &G, K_SUM, "lp", "lp", e, "loss", g->LLOSS);
            s->bug = 1;
            s->note = "BUG: mean over the micro-batch's tokens";
            snprintf(e, sizeof e,
                     "($ex / unsqueeze($se, -1) * unsqueeze($ts, -1) - $tgt) / ((%s)*S)", g->lb);
            s = gen_grp_st(g, &G, K_VAL, "glg", "glg", e, "grad.logits", g->LV);
            s->bug = g->f1b; /* 1F1B: cut per micro-batch, before the loss's cut */
        } else {
            s = gen_grp_st(g, &G, K_SUM, "lp", "lp", "sum((log($se) + $mx) * $ts - $tl) / (B*S)",
                           "loss", g->LLOSS);
            s->note = "mean over all B*S tokens";
            gen_grp_st(g, &G, K_VAL, "glg", "glg",
                       "($ex / unsqueeze($se, -1) * unsqueeze($ts, -1) - $tgt) / (B*S)",
                       "grad.logits", g->LV);
        }
    } else {
        char num[320], cnt[64], cp[128];
        snprintf(num, sizeof num, g->mask ? "sum($mask * %s)" : "sum(%s)", nll);
        if (per_mb) {
            /* each micro-batch's (rank's) mean over its own unmasked tokens, averaged */
            int k = g->dp * g->nm * g->mba;
            if (g->mask) {
                snprintf(cnt, sizeof cnt, "sum($mask) * %d", k);
                snprintf(cp, sizeof cp, "unsqueeze($mask, -1) / (sum($mask) * %d)", k);
            } else {
                snprintf(cnt, sizeof cnt, "(%s)*S", g->lb);
                snprintf(cp, sizeof cp, "1 / ((%s)*S)", g->lb);
            }
        } else if (g->mask) {
            snprintf(cnt, sizeof cnt, "ntok");
            snprintf(cp, sizeof cp, "unsqueeze($mask, -1) / ntok");
        } else {
            snprintf(cnt, sizeof cnt, "(B*S)");
            snprintf(cp, sizeof cp, "1 / (B*S)");
        }
        snprintf(e, sizeof e, "%s / (%s)", num, cnt);
        s = gen_grp_st(g, &G, K_SUM, moe ? "lce" : "lp", moe ? "lce" : "lp", e, moe ? NULL : "loss",
                       moe ? NULL : g->LLOSS);
        if (per_mb) {
            s->bug = 1;
            s->note = "BUG: mean over the micro-batch's own tokens";
        } else if (!moe) {
            s->note = g->mask ? "mean over the global unmasked tokens" : "mean over all B*S tokens";
        }
        snprintf(e, sizeof e, "($ex / unsqueeze($se, -1) * %s - %s) * %s", W2, w1, cp);
        s = gen_grp_st(g, &G, K_VAL, "glg", "glg", e, "grad.logits", g->LV);
        s->bug = per_mb && g->f1b; /* 1F1B: cut per micro-batch, before the loss's cut */
    }
    gen_grp_emit(g, &G);
    if (g->nd < g->L) {
        /* the load-balancing losses are the same on every rank: each adds its 1/(dp*ep*cp) */
        /* written with the mesh sizes, so that the plan is parametric in them (a literal
           16 for dp*ep keeps the checker's mesh cutoff off: docs/soundness.md) */
        char lhs[64], grp[32] = "";
        size_t k = 0;
        if (g->dp > 1)
            k += (size_t)snprintf(grp + k, sizeof grp - k, "%sdp", k ? "*" : "");
        if (g->ep > 1)
            k += (size_t)snprintf(grp + k, sizeof grp - k, "%sep", k ? "*" : "");
        if (g->mba > 1)
            k += (size_t)snprintf(grp + k, sizeof grp - k, "%smb", k ? "*" : "");
        if (g->cp > 1)
            k += (size_t)snprintf(grp + k, sizeof grp - k, "%scp", k ? "*" : "");
        if (k > 0)
            snprintf(lhs, sizeof lhs, strchr(grp, '*') ? "lp = lce + auxt / (%s)" : "lp = lce + auxt / %s", grp);
        else
            snprintf(lhs, sizeof lhs, "lp = lce + auxt");
        gen_stmt_line(g, lhs, "loss", g->LLOSS, NULL, 0);
    }

    gen_grp_init(&G);
    gen_grp_in(g, &G, "hf", "hf");
    gen_grp_in(g, &G, "glg", "glg");
    if (gen_bug_is(g, "grad_early")) {
        s = gen_grp_st(g, &G, K_EARLY, "rwout", "rwout",
                       g->dp > 1 ? "all_reduce(gwout, sum, dp)" : "gwout * 1", "grad.wout", NULL);
        snprintf(s->lay, sizeof s->lay, "[H, %s]", tp ? "V@tp" : "V");
        s->bug = 1;
        s->note = "BUG: reduced before the last micro-batch's contribution";
    }
    if (g->tied)
        gen_grp_st(g, &G, K_SUM, "gembh", "gembh",
                   "transpose(matmul_grad_b($hf, transpose($P_emb, 0, 1), $glg), 0, 1)", NULL,
                   NULL);
    else
        gen_grp_st(g, &G, K_SUM, "gwout", "gwout", "matmul_grad_b($hf, $P_wout, $glg)", NULL, NULL);
    gen_grp_st(g, &G, K_VAL, tp ? "ghfp" : "ghf", tp ? "ghfp" : "ghf",
               g->tied ? "matmul($glg, $P_emb)" : "matmul($glg, transpose($P_wout, 0, 1))",
               "grad.hf", tp ? g->LFP : g->LX);
    gen_grp_emit(g, &G);
    if (tp) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "ghfp", "ghfp");
        if (gen_bug_is(g, "frozen_input_grad_not_reduced")) {
            if (g->sp)
                s = gen_grp_st(g, &G, K_VAL, "ghf", "ghf",
                               "slice($ghfp, 1, rank.tp*($SL/tp), (rank.tp+1)*($SL/tp))", "grad.hf",
                               g->LX);
            else
                s = gen_grp_st(g, &G, K_VAL, "ghf", "ghf", "$ghfp", "grad.hf", g->LX);
            s->bug = 1;
            s->note = "BUG: the frozen head's input gradient is not reduced over tp";
        } else {
            gen_reduce_tp(g, "$ghfp", e, sizeof e);
            gen_grp_st(g, &G, K_VAL, "ghf", "ghf", e, "grad.hf", g->LX);
        }
        gen_grp_emit(g, &G);
    }

    gen_grp_init(&G);
    snprintf(e, sizeof e, "x[%d]", g->L);
    gen_grp_in(g, &G, "x", e);
    gen_grp_in(g, &G, "ghf", "ghf");
    char full[32], cut[40];
    snprintf(full, sizeof full, "gx[%d]", g->L);
    snprintf(cut, sizeof cut, "grad.x[%d]", g->L);
    gen_grp_st(g, &G, K_VAL, "gx", full, "rmsnorm_grad_x($x, $P_wnf, $ghf, eps = $EPS)", cut,
               g->LX);
    gen_grp_st(g, &G, K_SUM, "gwnf", "gwnf", "rmsnorm_grad_w($x, $P_wnf, $ghf, eps = $EPS)", NULL,
               NULL);
    gen_grp_emit(g, &G);
}

static void embed_fwd(gen_t *g)
{
    char e[EXPR_LEN];
    grp_t G;
    gen_set_layer(g, "", "");
    const param_t *ep[] = {&emb_param};
    zero3_gather(g, ep, 1, 0);
    gen_grp_init(&G);
    gen_grp_in(g, &G, "tok", "tok");
    if (g->tpx)
        gen_grp_st(g, &G, K_VAL, "xe", "xe", "embedding($tok, $P_emb)", "x[0]", g->LFP);
    else
        gen_grp_st(g, &G, K_VAL, "x", "x[0]", "embedding($tok, $P_emb)", "x[0]", g->LX);
    gen_grp_emit(g, &G);
    if (g->tpx) {
        gen_grp_init(&G);
        gen_grp_in(g, &G, "xe", "xe");
        gen_reduce_tp(g, "$xe", e, sizeof e);
        gst_t *s = gen_grp_st(g, &G, K_VAL, "x", "x[0]", e, "x[0]", g->LX);
        if (variant_is(g, "single_rank_collective")) {
            s->bug = 1;
            s->note = "VARIANT: a collective over a single-rank group (and every tp one after)";
        }
        gen_grp_emit(g, &G);
    }
}

static void embed_bwd(gen_t *g)
{
    grp_t G;
    gen_set_layer(g, "", "");
    const param_t *ep[] = {&emb_param};
    zero3_gather(g, ep, 1, 1);
    gen_grp_init(&G);
    gen_grp_in(g, &G, "tok", "tok");
    gen_grp_in(g, &G, "gx", "gx[0]");
    gen_grp_st(g, &G, K_SUM, "gemb", "gemb",
               g->sp ? "embedding_grad($tok, $P_emb, all_gather($gx, 1, tp))"
                     : "embedding_grad($tok, $P_emb, $gx)",
               NULL, NULL);
    gen_grp_emit(g, &G);
    if (g->tied && (!g->f1b || g->mbi == g->nm - 1)) {
        if (g->pp > 1)
            gen_linef(g,
                      "gembt = gemb + recv(pp = %d)   # plus the LM head's part (tied embedding)",
                      g->pp - 1);
        else
            gen_linef(g, "gembt = gemb + gembh   # plus the LM head's part (tied embedding)");
    }
}

/* receive the activation x[lo] (forward) or the gradient grad.x[hi] (backward) */
static void recv_group(gen_t *g, int fwd, int idx, int from)
{
    char full[32], cut[40], e[256], src[96];
    grp_t G;
    gen_set_layer(g, "", "");
    gen_grp_init(&G);
    snprintf(full, sizeof full, "%s[%d]", fwd ? "x" : "gx", idx);
    snprintf(cut, sizeof cut, "%sx[%d]", fwd ? "" : "grad.", idx);
    int wrong = fwd && gen_bug_is(g, "pp_wrong_peer") && from == 0;
    if (wrong)
        snprintf(src, sizeof src, "recv(pp = %d, tp = (rank.tp + tp - 1) %% tp)", from);
    else
        snprintf(src, sizeof src, "recv(pp = %d)", from);
    int ar = fwd && gen_bug_is(g, "pp_allreduce_instead") && from == 0;
    if (ar)
        snprintf(e, sizeof e, "all_reduce(%s, sum, tp)", src);
    else if (g->tpx && !g->sp)
        snprintf(e, sizeof e, "all_gather(%s, 1, tp)", src);
    else
        snprintf(e, sizeof e, "%s", src);
    gst_t *s = gen_grp_st(g, &G, K_VAL, fwd ? "x" : "gx", full, e, cut, g->LX);
    if (ar) {
        s->bug = 1;
        s->note = "BUG: all-reduce instead of all-gather";
    } else if (fwd && variant_is(g, "unbalanced_partition")) {
        s->bug = 1;
        s->note = "VARIANT: an unbalanced layer partition";
    } else if (wrong) {
        s->bug = 1;
        s->note = "BUG: from the wrong tp peer";
    } else {
        s->note = fwd ? "from the previous stage" : "from the next stage";
    }
    gen_grp_emit(g, &G);
}

/* ---- parameters: layouts, reductions, outputs ----------------------------------------------- */

/* Reduce one parameter's gradient (over dp, and tp for norm weights under sp) and write the
   gradient output.  idx is "" or "[l]".  Writes to src the name of the gradient the optimizer
   uses (the rank's dp shard under ZeRO) and, with --clip, accumulates its sum of squares into
   sst (tp-sharded parameters) or ssr (parameters replicated over tp). */
static void param_reduce(gen_t *g, const param_t *p, const char *idx, char *src, size_t srclen)
{
    char axes[32];
    char lay[64], lays[64], grad[64], red[64], sh[64], lhs[512], cut[64], sl[160];
    gen_param_lay(g, p, 0, lay, sizeof lay);
    gen_param_lay(g, p, 1, lays, sizeof lays);
    snprintf(grad, sizeof grad, "%s%s", p->grad, idx);
    snprintf(red, sizeof red, "r%s%s", p->grad + 1, idx);
    snprintf(sh, sizeof sh, "s%s%s", p->grad + 1, idx);
    snprintf(cut, sizeof cut, "grad.%s%s", p->name, idx);
    int zd = param_zdim(p);
    const char *D = p->dim[zd];
    int over_tp = p->norm && g->sp;
    const char *clipsrc = grad;
    snprintf(src, srclen, "%s", grad);
    if (g->zero == 0) {
        int early = gen_bug_is(g, "grad_early") && p == &wout_param;
        int bug_sp = gen_bug_is(g, "sp_norm_grad_not_reduced") && strcmp(p->name, "wn2") == 0;
        gen_axes_text(g, 1, 1, over_tp, axes, sizeof axes);
        if (early) {
            snprintf(src, srclen, "%s", red); /* reduced (too early) inside the micro-batch loop */
        } else if (bug_sp) {
            gen_axes_text(g, 1, 1, 0, axes, sizeof axes);
            if (axes[0])
                snprintf(lhs, sizeof lhs, "%s = all_reduce(%s, sum, %s)", red, grad, axes);
            else
                snprintf(lhs, sizeof lhs, "%s = %s * 1", red, grad);
            gen_stmt_line(g, lhs, cut, lay, "BUG: not reduced over tp", 1);
            snprintf(src, srclen, "%s", red);
        } else if (p->epdim >= 0 && g->ep > 1) {
            /* a routed expert's gradient: the tokens of its whole ep group reached it by
               all-to-all, so it is summed over the expert's dp replicas only (with tp, the
               expert shards differ per tp rank) */
            int bug16 = gen_bug_is(g, "expert_grad_not_scaled");
            char eax[32];
            gen_axes_text(g, 3, 1, 0, eax, sizeof eax); /* dp (and cp) */
            if (g->dp > 1 && bug16)
                snprintf(lhs, sizeof lhs, "%s = all_reduce(%s, sum, %s) * %d", red, grad, eax,
                         g->dp);
            else if (eax[0])
                snprintf(lhs, sizeof lhs, "%s = all_reduce(%s, sum, %s)", red, grad, eax);
            else
                snprintf(lhs, sizeof lhs, "%s = %s", red, grad);
            gen_stmt_line(g, lhs, cut, lay, bug16 ? "BUG: not scaled by 1/dp" : NULL, bug16);
            snprintf(src, srclen, "%s", red);
        } else if (axes[0]) {
            /* data-parallel replicas and context-parallel sequence chunks: partial sums */
            snprintf(lhs, sizeof lhs, "%s = all_reduce(%s, sum, %s)", red, grad, axes);
            gen_stmt_line(g, lhs, cut, lay, NULL, 0);
            snprintf(src, srclen, "%s", red);
        } else if (g->clip) {
            /* a cut, so that the norm is taken over the gradients' fresh symbols */
            snprintf(lhs, sizeof lhs, "%s = %s", red, grad);
            gen_stmt_line(g, lhs, cut, lay, NULL, 0);
            snprintf(src, srclen, "%s", red);
        }
        clipsrc = src;
        gen_linef(g, "output grad.%s%s = %s : %s", p->name, idx, src, lay);
    } else if (g->zero == 1) {
        /* ZeRO-1: the full gradient on every dp rank; the optimizer updates the rank's shard */
        gen_axes_text(g, is_expert(g, p) ? 3 : 1, 1, over_tp, axes, sizeof axes);
        snprintf(lhs, sizeof lhs, "%s = all_reduce(%s, sum, %s)", red, grad, axes);
        gen_stmt_line(g, lhs, cut, lay, NULL, 0);
        gen_linef(g, "output grad.%s%s = %s : %s", p->name, idx, red, lay);
        gen_linef(g, "%s = slice(%s, %d, rank.dp*(%s/dp), (rank.dp+1)*(%s/dp))", sh, red, zd, D, D);
        clipsrc = red;
        snprintf(src, srclen, "%s", sh);
    } else {
        /* ZeRO-2/3: each dp rank receives only its shard of the reduced gradient */
        const char *in = grad;
        char tg[64];
        gen_axes_text(g, is_expert(g, p) ? 0 : 2, 1, over_tp, axes, sizeof axes);
        if (axes[0]) {
            snprintf(tg, sizeof tg, "t%s%s", p->grad + 1, idx);
            gen_linef(g, "%s = all_reduce(%s, sum, %s)", tg, grad, axes);
            in = tg;
        }
        if (variant_is(g, "zero2_allreduce")) {
            snprintf(
                lhs, sizeof lhs,
                "%s = slice(all_reduce(%s, sum, dp), %d, rank.dp*(%s/dp), (rank.dp+1)*(%s/dp))", sh,
                in, zd, D, D);
            snprintf(sl, sizeof sl, "VARIANT: all-reduce, then keep the own shard");
            gen_stmt_line(g, lhs, cut, lays, sl, 1);
        } else {
            snprintf(lhs, sizeof lhs, "%s = reduce_scatter(%s, %d, sum, dp)", sh, in, zd);
            gen_stmt_line(g, lhs, cut, lays, NULL, 0);
        }
        gen_linef(g, "output grad.%s%s = %s : %s", p->name, idx, sh, lays);
        clipsrc = sh;
        snprintf(src, srclen, "%s", sh);
    }
    if (g->clip)
        gen_linef(g, "%s%s += sum(pow(%s, 2))",
                  is_expert(g, p)           ? "sse"
                  : g->tpx && p->tpdim >= 0 ? "sst"
                                            : "ssr",
                  g->sfx, clipsrc);
}

static int tied_copy(const gen_t *g);

/* output next.n = val : lay; the tied embedding's update also goes to the last stage's copy */
static void next_out(gen_t *g, const param_t *p, const char *n, const char *val, const char *lay)
{
    if (p != &emb_tied_param || !tied_copy(g)) {
        gen_linef(g, "output next.%s = %s : %s", n, val, lay);
        return;
    }
    gen_linef(g, "nemb = %s", val);
    gen_linef(g, "output next.emb = nemb : %s", lay);
    gen_linef(g, "send(nemb, pp = %d)   # the updated tied embedding to the last stage's copy",
              g->pp - 1);
    snprintf(g->tied_lay, sizeof g->tied_lay, "%s", lay);
}

/* The optimizer step of one parameter from its reduced gradient src (the rank's shard under
   ZeRO), scaled by the clipping factor sc with --clip. */
static void param_update(gen_t *g, const param_t *p, const char *idx, const char *src)
{
    char lay[64], lays[64], gv[96], w[160], n[64];
    gen_param_lay(g, p, 0, lay, sizeof lay);
    gen_param_lay(g, p, 1, lays, sizeof lays);
    int zd = param_zdim(p);
    const char *D = p->dim[zd];
    if (g->clip)
        snprintf(gv, sizeof gv, "(%s * sc%s)", src, g->sfx);
    else
        snprintf(gv, sizeof gv, "%s", src);
    snprintf(n, sizeof n, "%s%s", p->name, idx);
    if (g->zero == 1 || g->zero == 2)
        snprintf(w, sizeof w, "slice(%s, %d, rank.dp*(%s/dp), (rank.dp+1)*(%s/dp))", n, zd, D, D);
    else
        snprintf(w, sizeof w, "%s", n);
    const char *ol = g->zero ? lays : lay; /* optimizer state and updated shard */
    char val[512];
    if (!g->adam) {
        snprintf(val, sizeof val, "%s - " LR " * %s", w, gv);
        next_out(g, p, n, val, lay);
        return;
    }
    /* Adam at step 1: bias corrections 1 - 0.9 and 1 - 0.95; beta1 0.9, beta2 0.95, eps 1e-8 */
    gen_linef(g, "mt_%s = 0.9 * adam.m.%s + 0.1 * %s", n, n, gv);
    gen_linef(g, "vt_%s = 0.95 * adam.v.%s + 0.05 * %s * %s", n, n, gv, gv);
    gen_linef(g, "output next.adam.m.%s = mt_%s : %s, next.adam.v.%s = vt_%s : %s", n, n, ol, n, n,
              ol);
    if (g->zero == 1 || g->zero == 2) {
        gen_linef(g, "nw_%s = %s - " LR " * (mt_%s / 0.1) / (sqrt(vt_%s / 0.05) + 1e-8)", n, w, n,
                  n);
        snprintf(val, sizeof val, "all_gather(nw_%s, %d, dp)", n, zd);
        next_out(g, p, n, val, lay);
    } else {
        snprintf(val, sizeof val, "%s - " LR " * (mt_%s / 0.1) / (sqrt(vt_%s / 0.05) + 1e-8)", w,
                 n, n);
        next_out(g, p, n, val, ol);
    }
}

/* The last pipeline stage's copy of a tied embedding: it reads emb for the LM head, so it
   takes the updated value from the first stage (plan_body's last block), as Megatron keeps the
   two copies equal; a copy that no stage updates would be stale from the next step on. */
static int tied_copy(const gen_t *g) { return g->tied && g->pp > 1 && !gen_is_frozen(g, "emb"); }

static void tied_copy_out(gen_t *g)
{
    if (!tied_copy(g))
        return;
    gen_put_line(g, "");
    gen_open_block(g, "on pp = %d", g->pp - 1);
    gen_linef(g, "output next.emb = recv(pp = 0) : %s   # the tied embedding's copy", g->tied_lay);
    gen_close_block(g);
}

/* reduce and update the parameters of layers lo..hi-1 and, given, the others (NULL-terminated);
   with --clip, all reductions first, then the global gradient norm, then the updates */
/* the layer parameters of a dense (moe = 0) or MoE layer, NULL-terminated */
static int layer_param_list(const gen_t *g, int moe, const param_t **out)
{
    int n = 0;
    for (int i = 0; i < NLP; i++)
        if (layer_params[i].kind == P_ATTN || (!moe && layer_params[i].kind == P_DENSE))
            out[n++] = &layer_params[i];
    for (int i = 0; moe && g->fam->moe_params && g->fam->moe_params[i]; i++)
        out[n++] = g->fam->moe_params[i];
    out[n] = NULL;
    return n;
}

/* reduce and update the parameters of layers lo..hi-1 and, given, the others (NULL-terminated);
   with --clip, all reductions first, then the global gradient norm, then the updates */
/* the sum of squares of a stage's (all, without pp) reduced gradients: squares of tp shards
   summed over tp, of ZeRO-2/3 shards over dp; the replicated (norm) weights counted once */
static void norm_piece(const gen_t *g, int experts, char *out, size_t n)
{
    char tot[160];
    size_t k;
    if (g->tpx)
        k = (size_t)snprintf(tot, sizeof tot, "all_reduce(sst%s, sum, tp) + ssr%s", g->sfx, g->sfx);
    else
        k = (size_t)snprintf(tot, sizeof tot, "ssr%s", g->sfx);
    if (experts && g->ep > 1 && k < sizeof tot) /* expert shards differ over ep (and tp) */
        snprintf(tot + k, sizeof tot - k, " + all_reduce(sse%s, sum, %s)", g->sfx,
                 g->tpx ? "[ep, tp]" : "ep");
    if (g->zero >= 2)
        snprintf(out, n, "all_reduce(%s, sum, dp)", tot);
    else
        snprintf(out, n, "%s", tot);
}

/* phases: 0 reduce (and sum the squares, with --clip), 1 the norm and clipping factor, 2 the
   optimizer step (with --clip, only the names of the reduced gradients are recomputed) */
static void params_out(gen_t *g, int lo, int hi, const param_t *const *others, int ph_lo, int ph_hi)
{
    char idx[32], idm[40], src[64];
    int split = g->nd < lo ? lo : g->nd > hi ? hi : g->nd;
    if (!g->clip && ph_lo < 2)
        ph_lo = 2;
    for (int phase = ph_lo; phase <= ph_hi; phase++) {
        if (phase == 1) {
            /* the global gradient norm: squares of tp shards summed over tp, of ZeRO-2/3 shards
               over dp; the replicated (norm) weights counted once */
            char tot[200];
            norm_piece(g, g->nd < g->L, tot, sizeof tot);
            gen_linef(g, "gn2 = %s", tot);
            gen_linef(g, "sc = minimum(1, %s / (sqrt(gn2) + 1e-6))      # the clipping factor",
                      g->clip);
            continue;
        }
        /* with --clip the update phase only recomputes the names of the reduced gradients */
        int mute = g->clip && phase == 2;
        for (int moe = 0; moe < 2; moe++) {
            int a = moe ? split : lo, b = moe ? hi : split;
            if (b <= a)
                continue;
            int loop = b - a > 1;
            if (loop) {
                snprintf(idx, sizeof idx, "[l]");
                snprintf(idm, sizeof idm, "[l-%d]", g->nd);
                gen_open_block(g, "for l in %d..%d", a, b);
            } else {
                snprintf(idx, sizeof idx, "[%d]", a);
                snprintf(idm, sizeof idm, "[%d]", a - g->nd);
            }
            const param_t *ps[48];
            layer_param_list(g, moe, ps);
            for (int i = 0; ps[i]; i++) {
                if (gen_is_frozen(g, ps[i]->name))
                    continue;
                const char *ix = ps[i]->kind == P_MOE ? idm : idx;
                g->mute += mute;
                param_reduce(g, ps[i], ix, src, sizeof src);
                g->mute -= mute;
                if (phase == 2)
                    param_update(g, ps[i], ix, src);
            }
            if (loop)
                gen_close_block(g);
        }
        for (int i = 0; others[i]; i++) {
            if (gen_is_frozen(g, others[i]->name))
                continue;
            g->mute += mute;
            param_reduce(g, others[i], "", src, sizeof src);
            g->mute -= mute;
            if (phase == 2)
                param_update(g, others[i], "", src);
        }
    }
}

/* ---- the stages ------------------------------------------------------------------------------ */

/* Chunks: the layers are cut into pp * vpp contiguous chunks (as --partition says, else as evenly
   as possible); chunk c runs on pipeline stage c % pp (Megatron's interleaved schedule when
   vpp > 1: stage k holds chunks k, k + pp, ...). */
static int chunk_lo(const gen_t *g, int c)
{
    return g->chunk_lo[c];
}

static int chunk_stage(const gen_t *g, int c)
{
    return c % g->pp;
}

/* layers lo..hi-1 of one kind (dense or MoE); with send_to >= 0 the last one sends */
static void fwd_range(gen_t *g, int lo, int hi, int send_to, int moe)
{
    char a[16], b[16];
    g->moe_layer = moe;
    if (hi - lo == 1) {
        snprintf(a, sizeof a, "%d", lo);
        snprintf(b, sizeof b, "%d", lo + 1);
        gen_set_layer(g, a, b);
        gen_linef(g, "# ---- layer %d: forward%s", lo, moe ? " (MoE)" : "");
        layer_fwd(g, send_to, -1);
        return;
    }
    gen_linef(g, "# ---- layers %d..%d: forward%s", lo, hi - 1, moe ? " (MoE)" : "");
    gen_open_block(g, "for l in %d..%d", lo, hi);
    gen_set_layer(g, "l", "l+1");
    layer_fwd(g, send_to, send_to >= 0 ? hi - 1 : -1);
    gen_close_block(g);
}

static void stage_fwd_layers(gen_t *g, int c)
{
    int lo = chunk_lo(g, c), hi = chunk_lo(g, c + 1);
    int send_to = c + 1 < g->nch ? chunk_stage(g, c + 1) : -1;
    int split = g->nd < lo ? lo : g->nd > hi ? hi : g->nd; /* the first MoE layer */
    if (split > lo)
        fwd_range(g, lo, split, split == hi ? send_to : -1, 0);
    if (hi > split)
        fwd_range(g, split, hi, send_to, 1);
}

/* layers hi-1 down to lo of one kind; with send_to >= 0 the last one (layer lo) sends */
static void bwd_range(gen_t *g, int lo, int hi, int send_to, int moe)
{
    char a[16], b[16];
    g->moe_layer = moe;
    if (hi - lo == 1) {
        snprintf(a, sizeof a, "%d", lo);
        snprintf(b, sizeof b, "%d", lo + 1);
        gen_set_layer(g, a, b);
        gen_linef(g, "# ---- layer %d: backward%s", lo, moe ? " (MoE)" : "");
        layer_bwd(g, send_to, -1);
        return;
    }
    gen_linef(g, "# ---- layers %d..%d: backward%s, last layer first (layer %d-i)", lo, hi - 1,
              moe ? " (MoE)" : "", hi - 1);
    gen_open_block(g, "for i in 0..%d", hi - lo);
    snprintf(a, sizeof a, "%d-i", hi - 1);
    snprintf(b, sizeof b, "%d-i", hi);
    gen_set_layer(g, a, b);
    layer_bwd(g, send_to, send_to >= 0 ? hi - lo - 1 : -1);
    gen_close_block(g);
}

static void stage_bwd_layers(gen_t *g, int c)
{
    int lo = chunk_lo(g, c), hi = chunk_lo(g, c + 1);
    int send_to = c > 0 ? chunk_stage(g, c - 1) : -1;
    int split = g->nd < lo ? lo : g->nd > hi ? hi : g->nd;
    if (hi > split)
        bwd_range(g, split, hi, split == lo ? send_to : -1, 1);
    if (split > lo)
        bwd_range(g, lo, split, send_to, 0);
}

/* the gradient reduction and optimizer step of stage k: the layers of all its chunks, the final
   norm and LM head on the last stage, the embedding on the first */
static void stage_params(gen_t *g, int k, int ph_lo, int ph_hi)
{
    if (g->pp > 1 && g->clip)
        snprintf(g->sfx, sizeof g->sfx, "_%d", k);
    gen_linef(g, ph_hi < 2 ? "# ---- gradient reduction"
                           : "# ---- gradient reduction and the optimizer step");
    const param_t *none[] = {NULL};
    for (int c = k; c < g->nch; c += g->pp) {
        const param_t *others[4] = {NULL, NULL, NULL, NULL};
        int n = 0;
        if (c + g->pp >= g->nch) { /* the stage's last chunk */
            if (k == g->pp - 1) {
                others[n++] = &wnf_param;
                if (!g->tied)
                    others[n++] = &wout_param;
            }
            if (k == 0)
                others[n++] = g->tied ? &emb_tied_param : &emb_param;
        }
        params_out(g, chunk_lo(g, c), chunk_lo(g, c + 1), n ? others : none, ph_lo, ph_hi);
    }
    /* the stage's last block: after every activation gradient it sends to stage 0 */
    if (g->tied && g->pp > 1 && k == g->pp - 1 && ph_lo == 0)
        gen_linef(g,
                  "send(gembh, pp = 0)   # the tied embedding's head gradient to the first stage");
}

static void loss_out(gen_t *g)
{
    char axes[32];
    gen_axes_text(g, 1, 1, 0, axes, sizeof axes);
    if (axes[0])
        gen_linef(g, "output loss = all_reduce(lp, sum, %s) : []", axes);
    else
        gen_linef(g, "output loss = lp : []");
}

/* One action of the 1F1B schedule on stage k (vpp = 1: chunk k): the forward (fwd = 1) or the
   backward of micro-batch mb, every value cut by its rows (grp_emit_mb).  The last stage's
   forward also runs the head, the loss and the head's backward; each stage reduces and updates
   its parameters after its last backward. */
static void f1b_action(gen_t *g, int k, int fwd, int mb, const char *phase, int clip_pp)
{
    int P = g->pp;
    g->mbi = mb;
    gen_put_line(g, "");
    if (P > 1)
        gen_open_block(g, "on pp = %d", k);
    gen_linef(g, "# ==== micro-batch %d: %s (%s)", mb, fwd ? "forward" : "backward", phase);
    if (fwd) {
        if (k == 0) {
            gen_linef(g, "# ---- embedding (vocab-parallel)");
            embed_fwd(g);
        } else {
            recv_group(g, 1, chunk_lo(g, k), k - 1);
        }
        stage_fwd_layers(g, k);
        if (k == P - 1) {
            gen_linef(g, "# ---- final norm, LM head, cross-entropy and their backward");
            head(g);
            if (mb == g->nm - 1)
                loss_out(g);
        }
    } else {
        if (k < P - 1)
            recv_group(g, 0, chunk_lo(g, k + 1), k + 1);
        stage_bwd_layers(g, k);
        if (k == 0 && !gen_is_frozen(g, "emb")) {
            gen_linef(g, "# ---- embedding backward");
            embed_bwd(g);
        }
        if (mb == g->nm - 1)
            stage_params(g, k, 0, clip_pp ? 0 : 2);
    }
    if (P > 1)
        gen_close_block(g);
}

/*
 * The 1F1B schedule (Megatron's non-interleaved one): stage k runs min(pp - k - 1, NM) warm-up
 * forwards, then alternates one forward and one backward, then the cool-down backwards.  The
 * stages' actions are written in an order where every send precedes its recv: round by round,
 * each stage writes its next action once its input has been sent (the previous stage's forward
 * of the micro-batch, or the next stage's backward).
 */
static void schedule_1f1b(gen_t *g, int clip_pp)
{
    int P = g->pp, NM = g->nm;
    char done_f[MAX_CHUNKS][MAX_MB], done_b[MAX_CHUNKS][MAX_MB];
    int pos[MAX_CHUNKS];
    memset(done_f, 0, sizeof done_f);
    memset(done_b, 0, sizeof done_b);
    memset(pos, 0, sizeof pos);
    for (int left = P * 2 * NM; left > 0;) {
        int progress = 0;
        for (int k = 0; k < P; k++) {
            if (pos[k] == 2 * NM)
                continue;
            int w = P - k - 1 < NM ? P - k - 1 : NM, i = pos[k], fwd, mb;
            const char *phase;
            if (i < w) {
                fwd = 1, mb = i, phase = "warm-up";
            } else if (i < w + 2 * (NM - w)) {
                fwd = (i - w) % 2 == 0;
                mb = fwd ? w + (i - w) / 2 : (i - w) / 2;
                phase = "steady 1F1B";
            } else {
                fwd = 0, mb = NM - w + (i - w - 2 * (NM - w)), phase = "cool-down";
            }
            int ready = fwd ? k == 0 || done_f[k - 1][mb]
                            : (k == P - 1 ? done_f[k][mb] : done_b[k + 1][mb]);
            if (!ready)
                continue;
            f1b_action(g, k, fwd, mb, phase, clip_pp);
            (fwd ? done_f : done_b)[k][mb] = 1;
            pos[k]++;
            left--;
            progress = 1;
        }
        if (!progress) {
            gfail(g, "internal error: the 1F1B schedule deadlocks");
            return;
        }
    }
}

static void clip_stages(gen_t *g);

static void plan_body(gen_t *g)
{
    /* mesh and layouts */
    char mesh[128] = "";
    size_t n = 0;
    if (g->pp > 1)
        n += (size_t)snprintf(mesh + n, sizeof mesh - n, "%spp = %d", n ? ", " : "", g->pp);
    if (g->dp > 1)
        n += (size_t)snprintf(mesh + n, sizeof mesh - n, "%sdp = %d", n ? ", " : "", g->dp);
    if (g->ep > 1)
        n += (size_t)snprintf(mesh + n, sizeof mesh - n, "%sep = %d", n ? ", " : "", g->ep);
    if (g->mba > 1)
        n += (size_t)snprintf(mesh + n, sizeof mesh - n, "%smb = %d", n ? ", " : "", g->mba);
    if (g->cp > 1)
        n += (size_t)snprintf(mesh + n, sizeof mesh - n, "%scp = %d", n ? ", " : "", g->cp);
    if (g->tpx)
        n += (size_t)snprintf(mesh + n, sizeof mesh - n, "%stp = %d", n ? ", " : "", g->tp);
    if (n == 0)
        snprintf(mesh, sizeof mesh, "dp = 1");
    gen_linef(g, "mesh %s", mesh);
    const char *V = g->tpx ? "V@tp" : "V";
    const char *SQ = g->cp > 1 ? "S@cp" : "S";
    gen_linef(g, "tok : [%s, %s, %s]", g->BDI, SQ, V);
    gen_linef(g, "tgt : [%s, %s, %s]", g->BDI, SQ, V);
    gen_linef(g, "cos : [S, HD/2]");
    gen_linef(g, "sin : [S, HD/2]");
    if (g->mask)
        gen_linef(g, "mask : [%s, %s]", g->BDI, SQ);
    if (g->cp > 1) {
        /* RoPE at the global positions of the rank's sequence chunk */
        gen_linef(g, "cosl = slice(cos, 0, rank.cp*(S/cp), (rank.cp+1)*(S/cp))");
        gen_linef(g, "sinl = slice(sin, 0, rank.cp*(S/cp), (rank.cp+1)*(S/cp))");
    }
    /* parameters (ZeRO-3: sharded over dp; frozen ones never) */
#define ZSH(p, z) ((z) && !gen_is_frozen(g, (p)->name))
    char lay[64];
    gen_param_lay(g, &emb_param, ZSH(&emb_param, g->zero == 3), lay, sizeof lay);
    gen_linef(g, "emb : %s", lay);
    for (int kind = P_ATTN; kind <= P_MOE; kind++) {
        int nl = kind == P_ATTN                    ? g->L
                 : kind == P_DENSE && g->nd < g->L ? g->nd
                 : kind == P_DENSE                 ? 0
                                                   : g->L - g->nd;
        if (nl == 0)
            continue;
        gen_open_block(g, "for l in 0..%d", nl);
        const param_t *lps[48];
        layer_param_list(g, kind == P_MOE, lps);
        for (int i = 0; lps[i]; i++) {
            if (lps[i]->kind != kind && !(kind == P_ATTN && g->nd == g->L))
                continue;
            gen_param_lay(g, lps[i], ZSH(lps[i], g->zero == 3), lay, sizeof lay);
            gen_linef(g, "%s[l] : %s", lps[i]->name, lay);
        }
        gen_close_block(g);
    }
    gen_param_lay(g, &wnf_param, ZSH(&wnf_param, g->zero == 3), lay, sizeof lay);
    gen_linef(g, "wnf : %s", lay);
    if (!g->tied) {
        gen_param_lay(g, &wout_param, ZSH(&wout_param, g->zero == 3), lay, sizeof lay);
        gen_linef(g, "wout : %s", lay);
    }
#undef ZSH
    if (g->adam) {
        /* optimizer state: sharded over dp under ZeRO */
        const param_t *ps[] = {&emb_param, &wnf_param, &wout_param};
        for (int i = 0; i < 3; i++) {
            if (gen_is_frozen(g, ps[i]->name) || (g->tied && ps[i] == &wout_param))
                continue;
            gen_param_lay(g, ps[i], g->zero >= 1, lay, sizeof lay);
            gen_linef(g, "adam.m.%s : %s; adam.v.%s : %s", ps[i]->name, lay, ps[i]->name, lay);
        }
        for (int kind = P_ATTN; kind <= P_MOE; kind++) {
            int nl = kind == P_ATTN                    ? g->L
                     : kind == P_DENSE && g->nd < g->L ? g->nd
                     : kind == P_DENSE                 ? 0
                                                       : g->L - g->nd;
            if (nl == 0)
                continue;
            gen_open_block(g, "for l in 0..%d", nl);
            const param_t *lps[48];
            layer_param_list(g, kind == P_MOE, lps);
            for (int i = 0; lps[i]; i++) {
                if ((lps[i]->kind != kind && !(kind == P_ATTN && g->nd == g->L)) ||
                    gen_is_frozen(g, lps[i]->name))
                    continue;
                gen_param_lay(g, lps[i], g->zero >= 1, lay, sizeof lay);
                gen_linef(g, "adam.m.%s[l] : %s; adam.v.%s[l] : %s", lps[i]->name, lay,
                          lps[i]->name, lay);
            }
            gen_close_block(g);
        }
    }

    int P = g->pp, NC = g->nch;
    int clip_pp = g->clip && P > 1; /* clipping: the updates wait for the norm over all stages */
    if (g->f1b) {
        schedule_1f1b(g, clip_pp);
        if (clip_pp)
            clip_stages(g);
        return;
    }
    /* forward, chunk by chunk; the last chunk runs the head and its own backward */
    for (int c = 0; c < NC; c++) {
        int k = chunk_stage(g, c);
        gen_put_line(g, "");
        if (P > 1)
            gen_open_block(g, "on pp = %d", k);
        if (g->vpp > 1)
            gen_linef(g, "# ==== chunk %d (stage %d, virtual stage %d): forward", c, k, c / P);
        if (c == 0) {
            gen_linef(g, "# ---- embedding (vocab-parallel)");
            embed_fwd(g);
        } else {
            recv_group(g, 1, chunk_lo(g, c), chunk_stage(g, c - 1));
        }
        stage_fwd_layers(g, c);
        if (g->nd < g->L) {
            /* the MoE layers' load-balancing losses (the same on every rank of a stage): a
               running sum passed along the chunks to the last one, which adds it to the loss */
            int lo = chunk_lo(g, c), hi = chunk_lo(g, c + 1);
            int prev = lo > g->nd, own = hi > g->nd;
            char aux[LINE_MAX_LEN / 2];
            size_t an = 0;
            aux[0] = 0;
            if (prev)
                an += (size_t)snprintf(aux, sizeof aux, "recv(pp = %d)", chunk_stage(g, c - 1));
            for (int l = lo > g->nd ? lo : g->nd; l < hi && an + 32 < sizeof aux; l++)
                an += (size_t)snprintf(aux + an, sizeof aux - an, "%saux[%d]", an ? " + " : "", l);
            if (prev || own) {
                if (c == NC - 1) {
                    gen_linef(g, "auxt = %s", aux);
                } else {
                    gen_linef(g, "auxc%d = %s", c, aux);
                    gen_linef(g, "send(auxc%d, pp = %d)   # the load-balancing losses so far", c,
                              chunk_stage(g, c + 1));
                }
            }
        }
        if (c == NC - 1) {
            gen_linef(g, "# ---- final norm, LM head, cross-entropy and their backward");
            head(g);
            loss_out(g);
            stage_bwd_layers(g, c);
            if (c == 0 && !gen_is_frozen(g, "emb")) {
                gen_linef(g, "# ---- embedding backward");
                embed_bwd(g);
            }
            if (c < P)
                stage_params(g, k, 0, clip_pp ? 0 : 2);
        }
        if (P > 1)
            gen_close_block(g);
    }
    /* backward of the other chunks, last to first */
    for (int c = NC - 2; c >= 0; c--) {
        int k = chunk_stage(g, c);
        gen_put_line(g, "");
        gen_open_block(g, "on pp = %d", k);
        if (g->vpp > 1)
            gen_linef(g, "# ==== chunk %d (stage %d, virtual stage %d): backward", c, k, c / P);
        recv_group(g, 0, chunk_lo(g, c + 1), chunk_stage(g, c + 1));
        stage_bwd_layers(g, c);
        if (c == 0 && !gen_is_frozen(g, "emb")) {
            gen_linef(g, "# ---- embedding backward");
            embed_bwd(g);
        }
        if (c < P)
            stage_params(g, k, 0, clip_pp ? 0 : 2);
        gen_close_block(g);
    }
    if (clip_pp)
        clip_stages(g);
}

/* grad-norm clipping across the stages: the stages' sums of squares travel up to the last
   stage, which computes the clipping factor and sends it back down; then every stage updates
   its parameters */
static void clip_stages(gen_t *g)
{
    int P = g->pp, NC = g->nch;
    for (int k = 0; k < P; k++) {
        char piece[200];
        gen_put_line(g, "");
        gen_open_block(g, "on pp = %d", k);
        snprintf(g->sfx, sizeof g->sfx, "_%d", k);
        int experts = 0; /* the stage holds MoE layers */
        for (int c = k; c < NC; c += P)
            experts |= chunk_lo(g, c + 1) > g->nd;
        norm_piece(g, experts, piece, sizeof piece);
        if (k == 0)
            gen_linef(g, "gn2_0 = %s", piece);
        else
            gen_linef(g, "gn2_%d = recv(pp = %d) + %s", k, k - 1, piece);
        if (k < P - 1)
            gen_linef(g, "send(gn2_%d, pp = %d)   # the sum of squares so far", k, k + 1);
        else
            gen_linef(g,
                      "sc_%d = minimum(1, %s / (sqrt(gn2_%d) + 1e-6))      # the clipping factor",
                      k, g->clip, k);
        gen_close_block(g);
    }
    for (int k = P - 1; k >= 0; k--) {
        gen_put_line(g, "");
        gen_open_block(g, "on pp = %d", k);
        if (k < P - 1)
            gen_linef(g, "sc_%d = recv(pp = %d)", k, k + 1);
        if (k > 0)
            gen_linef(g, "send(sc_%d, pp = %d)", k, k - 1);
        stage_params(g, k, 2, 2);
        gen_close_block(g);
    }
}

/* ---- the model ------------------------------------------------------------------------------ */

/* the attention block of layer l in the model: x[l] to r[l] and h2[l] */
void gen_model_attention(gen_t *g)
{
    gen_linef(g, "h1[l] = rmsnorm(x[l], wn1[l], eps = " EPS ")");
    gen_linef(g, "q[l] = matmul(h1[l], wq[l])");
    gen_linef(g, "k[l] = matmul(h1[l], wk[l])");
    gen_linef(g, "v[l] = matmul(h1[l], wv[l])");
    gen_linef(g, "qh[l] = transpose(reshape(q[l], [B, S, NH, HD]), 1, 2)     # [B, NH, S, HD]");
    gen_linef(g, "kh[l] = transpose(reshape(k[l], [B, S, NKV, HD]), 1, 2)    # [B, NKV, S, HD]");
    gen_linef(g, "vh[l] = transpose(reshape(v[l], [B, S, NKV, HD]), 1, 2)");
    gen_linef(g, "qr[l] = rope(qh[l], cos, sin)");
    gen_linef(g, "kr[l] = rope(kh[l], cos, sin)");
    gen_linef(g, "o[l] = attention(qr[l], kr[l], vh[l], causal = 1)   # GQA, scale 1/sqrt(HD)");
    gen_linef(g, "oc[l] = reshape(transpose(o[l], 1, 2), [B, S, QD])");
    gen_linef(g, "a[l] = matmul(oc[l], wo[l])");
    gen_linef(g, "r[l] = x[l] + a[l]");
    gen_linef(g, "h2[l] = rmsnorm(r[l], wn2[l], eps = " EPS ")");
}

static void model_text(gen_t *g)
{
    int L = g->L, ND = g->nd;
    gen_linef(g, "model %s {", g->fam->name);
    g->ind++;
    gen_linef(g, "input tok : [B, S, V]                   # one-hot token ids");
    gen_linef(g, "input tgt : [B, S, V]                   # one-hot next-token targets");
    gen_linef(g, "input cos : [S, HD/2]                   # RoPE tables: one symbol per position, "
                 "frequency");
    gen_linef(g, "input sin : [S, HD/2]");
    if (g->mask)
        gen_linef(g,
                  "input mask : [B, S]                     # loss mask: 1 counts the token, 0 not");
        /* frozen parameters are inputs: not trained */
#define KIND(nm) (gen_is_frozen(g, nm) ? "input" : "param")
    gen_linef(g, "%s emb : [V, H]                      # token embedding%s", KIND("emb"),
              g->tied ? ", also the LM head (tied)" : "");
    gen_linef(g, "%s wn1[%d] : [H]", KIND("wn1"), L);
    gen_linef(g, "%s wq[%d] : [H, QD]", KIND("wq"), L);
    gen_linef(g, "%s wk[%d] : [H, KD]", KIND("wk"), L);
    gen_linef(g, "%s wv[%d] : [H, KD]", KIND("wv"), L);
    gen_linef(g, "%s wo[%d] : [QD, H]", KIND("wo"), L);
    gen_linef(g, "%s wn2[%d] : [H]", KIND("wn2"), L);
    if (ND > 0) {
        gen_linef(g, "%s wg[%d] : [H, F]", KIND("wg"), ND);
        gen_linef(g, "%s wu[%d] : [H, F]", KIND("wu"), ND);
        gen_linef(g, "%s wd[%d] : [F, H]", KIND("wd"), ND);
    }
    if (ND < L)
        g->fam->moe_decls(g);
    gen_linef(g, "%s wnf : [H]", KIND("wnf"));
    if (!g->tied)
        gen_linef(g, "%s wout : [H, V]                     # LM head (untied)%s", KIND("wout"),
                  gen_is_frozen(g, "wout") ? ", frozen" : "");
#undef KIND
    gen_put_line(g, "");
    gen_linef(g, "x[0] = embedding(tok, emb)");
    if (ND > 0) {
        gen_open_block(g, "for l in 0..%d", ND);
        gen_model_attention(g);
        gen_linef(g, "g[l] = matmul(h2[l], wg[l])");
        gen_linef(g, "u[l] = matmul(h2[l], wu[l])");
        gen_linef(g, "m[l] = silu(g[l]) * u[l]                # SwiGLU");
        gen_linef(g, "d[l] = matmul(m[l], wd[l])");
        gen_linef(g, "x[l+1] = r[l] + d[l]");
        gen_close_block(g);
    }
    if (ND < L) {
        gen_open_block(g, "for l in %d..%d", ND, L);
        gen_model_attention(g);
        g->fam->moe_model(g);
        gen_linef(g, "x[l+1] = r[l] + d[l]");
        gen_close_block(g);
    }
    gen_linef(g, "hf = rmsnorm(x[%d], wnf, eps = " EPS ")", L);
    gen_linef(g, "logits = matmul(hf, %s)", g->tied ? "transpose(emb, 0, 1)" : "wout");
    char ls[64] = "";
    if (g->ls)
        snprintf(ls, sizeof ls, ", label_smoothing = %s", g->ls);
    if (ND < L) {
        /* the auxiliary load-balancing losses of the MoE layers */
        char aux[LINE_MAX_LEN / 2];
        size_t n = 0;
        aux[0] = 0;
        for (int l = ND; l < L && n + 32 < sizeof aux; l++)
            n += (size_t)snprintf(aux + n, sizeof aux - n, "%saux[%d]", l > ND ? " + " : "", l);
        gen_linef(g, "auxt = %s", aux);
        gen_linef(g, "loss = cross_entropy(logits, tgt%s%s) + auxt   # token mean + load balancing",
                  g->mask ? ", mask" : "", ls);
    } else if (g->mask) {
        gen_linef(g, "loss = cross_entropy(logits, tgt, mask%s)   # mean over the unmasked tokens",
                  ls);
    } else {
        gen_linef(g, "loss = cross_entropy(logits, tgt%s)       # mean over the B*S tokens", ls);
    }
    gen_linef(g, "output loss");
    char clip[64] = "";
    if (g->clip)
        snprintf(clip, sizeof clip, ", clip = %s", g->clip);
    if (g->adam)
        gen_linef(g, "train adam(lr = " LR ", beta1 = 0.9, beta2 = 0.95, eps = 1e-8%s)", clip);
    else
        gen_linef(g, "train sgd(lr = " LR "%s)", clip);
    g->ind--;
    gen_put_line(g, "}");
}

/* ---- entry ---------------------------------------------------------------------------------- */

void sp_gen_opts_init(sp_gen_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->preset = NULL;
    o->dp = o->tp = o->pp = o->nm = o->vpp = 1;
    o->optim = "sgd";
}

/* A mesh of at most what a check accepts by default (--max-ranks); else 0 with the message */
static int ranks_fit(int64_t ranks, const char *more_axes, char *err, size_t errlen)
{
    if (ranks <= SHARDPROOF_DEFAULT_MAX_RANKS)
        return 1;
    snprintf(err, errlen,
             "the mesh dp * ep * cp * tp * pp%s = %lld ranks exceeds %d (the checker's default "
             "--max-ranks)",
             more_axes, (long long)ranks, SHARDPROOF_DEFAULT_MAX_RANKS);
    return 0;
}

static int check_opts(gen_t *g, const sp_gen_opts_t *o, char *err, size_t errlen)
{
    g->P = NULL;
    const preset_t *ps = g->fam->presets;
    const char *preset = o->preset ? o->preset : ps[0].name;
    char names[128];
    size_t nn = 0;
    names[0] = 0;
    for (int i = 0; ps[i].name; i++) {
        if (strcmp(ps[i].name, preset) == 0)
            g->P = &ps[i];
        nn += (size_t)snprintf(names + nn, nn < sizeof names ? sizeof names - nn : 0, "%s%s",
                               i ? ", " : "", ps[i].name);
    }
    if (!g->P) {
        snprintf(err, errlen, "unknown preset '%s' (%s)", preset, names);
        return -1;
    }
    int moe = g->P->experts > 0;
    g->ep = o->ep ? o->ep : 1;
    g->sigmoid = o->score && strcmp(o->score, "sigmoid") == 0;
    if (o->score && strcmp(o->score, "sigmoid") != 0 && strcmp(o->score, "softmax") != 0) {
        snprintf(err, errlen, "unknown router score '%s' (softmax, sigmoid)", o->score);
        return -1;
    }
    if (!moe && (g->ep > 1 || o->score)) {
        snprintf(err, errlen, "--ep and --score need an MoE family (deepseek3)");
        return -1;
    }
    if (g->ep < 1 || g->ep > 4 || 4 % g->ep) {
        snprintf(err, errlen,
                 "--ep must be 1, 2 or 4 (the experts are declared as 4*EQ so that "
                 "their reduced count stays divisible)");
        return -1;
    }
    if (moe && o->variant) {
        snprintf(err, errlen, "the variants are llama3's (deepseek3 has none yet)");
        return -1;
    }
    if (moe && g->ep > 1 && o->nm > 1) {
        snprintf(err, errlen,
                 "--ep with --nm is not generated: the tokens an expert receives by "
                 "all-to-all are not a contiguous slice of a micro-batch");
        return -1;
    }
    g->cp = o->cp ? o->cp : 1;
    if (o->dp < 1 || o->tp < 1 || o->pp < 1 || g->cp < 1) {
        snprintf(err, errlen, "--dp, --tp, --pp and --cp must be at least 1");
        return -1;
    }
    if (o->nm < 1 || o->nm > MAX_MB) {
        snprintf(err, errlen, "--nm must be between 1 and %d", MAX_MB);
        return -1;
    }
    /* the mesh: at most what a check accepts by default (--max-ranks) */
    int64_t ranks = (int64_t)o->dp * g->ep * g->cp * o->tp * o->pp;
    if (!ranks_fit(ranks, "", err, errlen))
        return -1;
    g->dp = o->dp;
    g->tp = o->tp;
    g->sp = o->sp;
    g->pp = o->pp;
    g->nm = o->nm;
    if (o->grad_accum) {
        if (o->nm > 1 && o->nm != o->grad_accum) {
            snprintf(err, errlen,
                     "--grad-accum %d and --nm %d disagree (both set the number of "
                     "micro-batches)",
                     o->grad_accum, o->nm);
            return -1;
        }
        if (o->grad_accum > MAX_MB) {
            snprintf(err, errlen, "--grad-accum must be between 1 and %d", MAX_MB);
            return -1;
        }
        g->nm = o->grad_accum;
    }
    g->mba = 1;
    if (o->mb_axis) {
        /* every micro-batch on a virtual rank of its own (mesh axis mb), its gradients summed
           over (dp, mb) like data-parallel replicas' */
        if (g->nm < 2) {
            snprintf(err, errlen, "--mb-axis needs --nm (or --grad-accum) >= 2");
            return -1;
        }
        if (o->schedule && strcmp(o->schedule, "1f1b") == 0) {
            snprintf(err, errlen, "--mb-axis with --schedule 1f1b is not generated: each "
                                  "micro-batch runs on a rank of its own, in no order");
            return -1;
        }
        if (o->zero) {
            snprintf(err, errlen, "--mb-axis with --zero is not generated: the gradient shards "
                                  "over dp would need the micro-batches' sum first");
            return -1;
        }
        if (!ranks_fit(ranks * g->nm, " * mb", err, errlen))
            return -1;
        g->mba = g->nm;
        g->nm = 1;
    }
    if (o->schedule && strcmp(o->schedule, "gpipe") != 0 && strcmp(o->schedule, "1f1b") != 0) {
        snprintf(err, errlen, "unknown schedule '%s' (gpipe, 1f1b)", o->schedule);
        return -1;
    }
    /* with one micro-batch both schedules are the same plan */
    g->f1b = o->schedule && strcmp(o->schedule, "1f1b") == 0 && g->nm > 1;
    if (o->cp_algo &&
        (strcmp(o->cp_algo, "zigzag") == 0 || strcmp(o->cp_algo, "load-balanced") == 0)) {
        snprintf(err, errlen,
                 "--cp-algo %s is not generated: no layout or lineage relates a rank's sequence "
                 "chunks i and 2cp-1-i to the model's tensors (docs/workloads.md, Limits)",
                 o->cp_algo);
        return -1;
    }
    if (o->cp_algo && strcmp(o->cp_algo, "allgather") != 0 && strcmp(o->cp_algo, "ring") != 0) {
        snprintf(err, errlen, "unknown context-parallel algorithm '%s' (allgather, ring)",
                 o->cp_algo);
        return -1;
    }
    g->cp_ring = o->cp_algo && strcmp(o->cp_algo, "ring") == 0;
    if (g->cp_ring && g->cp < 2) {
        snprintf(err, errlen, "--cp-algo ring needs --cp >= 2");
        return -1;
    }
    g->vpp = o->vpp ? o->vpp : 1;
    if (g->f1b && g->vpp > 1) {
        snprintf(err, errlen,
                 "--schedule 1f1b with --vpp (the interleaved 1F1B schedule) is not generated");
        return -1;
    }
    if (g->f1b && moe) {
        snprintf(err, errlen,
                 "--schedule 1f1b is not generated for %s: the load-balancing loss is a product "
                 "of means over the whole batch, which no micro-batch holds",
                 g->fam->name);
        return -1;
    }
    if (g->vpp < 1 || g->vpp > 64 || (g->vpp > 1 && g->pp < 2)) {
        snprintf(err, errlen, "--vpp must be between 1 and 64, and needs --pp >= 2 when > 1");
        return -1;
    }
    g->nch = g->pp * g->vpp;
    if (g->nch > MAX_CHUNKS) {
        snprintf(err, errlen, "--pp * --vpp must be at most %d", MAX_CHUNKS);
        return -1;
    }
    g->L = o->layers ? o->layers : g->P->layers;
    g->nd = moe ? (g->P->first_dense < g->L ? g->P->first_dense : g->L) : g->L;
    int unbalanced = o->variant && !strcmp(o->variant, "unbalanced_partition");
    if (o->partition && unbalanced) {
        snprintf(err, errlen, "--partition and --variant unbalanced_partition cannot be combined");
        return -1;
    }
    if (o->partition) {
        int c = 0, sum = 0;
        const char *q = o->partition;
        g->chunk_lo[0] = 0;
        while (*q) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q || v < 1 || v > 1000 || c == g->nch || (*end && *end != ',')) {
                snprintf(err, errlen,
                         "--partition expects %d positive layer counts, one per "
                         "chunk (pp * vpp), like 1,3",
                         g->nch);
                return -1;
            }
            sum += (int)v;
            g->chunk_lo[++c] = sum;
            q = *end ? end + 1 : end;
        }
        if (c != g->nch) {
            snprintf(err, errlen, "--partition gives %d chunks, --pp * --vpp is %d", c, g->nch);
            return -1;
        }
        if (o->layers && sum != g->L) {
            snprintf(err, errlen, "--partition sums to %d layers, --layers is %d", sum, g->L);
            return -1;
        }
        g->L = sum;
    }
    if (g->L < 1 || g->L > 1000) {
        snprintf(err, errlen, "--layers must be between 1 and 1000");
        return -1;
    }
    if (g->sp && g->tp < 2) {
        snprintf(err, errlen, "--sp (sequence parallelism) needs --tp >= 2");
        return -1;
    }
    if (g->nch > g->L) {
        snprintf(err, errlen,
                 "%d pipeline chunks (--pp * --vpp) need at least %d layers (--layers)", g->nch,
                 g->nch);
        return -1;
    }
    if (unbalanced && (g->pp < 2 || g->vpp > 1 || g->L <= g->pp)) {
        snprintf(err, errlen,
                 "variant 'unbalanced_partition' needs --pp >= 2 (no --vpp) and "
                 "--layers > pp");
        return -1;
    }
    if (!o->partition) {
        for (int c = 0; c <= g->nch; c++)
            g->chunk_lo[c] = c * g->L / g->nch;
        if (unbalanced) /* the first stage gets all but one layer per other stage */
            for (int c = 1; c < g->nch; c++)
                g->chunk_lo[c] = g->L - (g->nch - c);
    }
    g->tpx = g->tp > 1 || (o->variant && !strcmp(o->variant, "single_rank_collective"));
    if (o->variant && !strcmp(o->variant, "single_rank_collective") && g->tp > 1) {
        snprintf(err, errlen, "variant 'single_rank_collective' needs --tp 1");
        return -1;
    }
    const preset_t *P = g->P;
    if (g->P->seq % (g->cp * g->tp)) {
        snprintf(err, errlen, "--cp * --tp must divide the sequence length %ld", g->P->seq);
        return -1;
    }
    if (P->kv_heads % g->tp || P->heads % g->tp || P->ffn % g->tp || P->vocab % g->tp ||
        g->P->seq % g->tp) {
        snprintf(err, errlen,
                 "--tp %d does not divide the kv heads (%ld), heads, FFN or vocabulary", g->tp,
                 P->kv_heads);
        return -1;
    }
    g->batch = o->batch ? o->batch : 2 * g->dp * g->ep * g->nm * g->mba;
    if (g->batch % (g->dp * g->ep * g->nm * g->mba)) {
        snprintf(err, errlen, "--batch %d is not a multiple of dp * ep * nm = %d", g->batch,
                 g->dp * g->ep * g->nm * g->mba);
        return -1;
    }
    if (o->optim && strcmp(o->optim, "sgd") != 0 && strcmp(o->optim, "adam") != 0) {
        snprintf(err, errlen, "unknown optimizer '%s' (sgd, adam)", o->optim);
        return -1;
    }
    g->adam = o->optim && strcmp(o->optim, "adam") == 0;
    g->zero = o->zero;
    if (g->zero < 0 || g->zero > 3) {
        snprintf(err, errlen, "--zero must be 0, 1, 2 or 3");
        return -1;
    }
    if (g->zero && (g->dp < 2 || !g->adam)) {
        snprintf(err, errlen,
                 "--zero %d shards the Adam state over dp: it needs --dp >= 2 and "
                 "--optim adam",
                 g->zero);
        return -1;
    }
    g->clip = o->clip;
    if (g->clip) {
        const char *c = g->clip;
        int ok = *c >= '0' && *c <= '9' && strlen(c) < 32;
        for (; *c && ok; c++)
            ok = (*c >= '0' && *c <= '9') || *c == '.';
        if (!ok) {
            snprintf(err, errlen, "--clip expects a positive decimal number, got '%s'", g->clip);
            return -1;
        }
    }
    g->mask = o->loss_mask;
    g->tied = o->tied;
    g->no_lineage = o->no_lineage;
    g->ls = o->label_smoothing;
    if (g->ls) {
        const char *c = g->ls;
        int ok = strlen(c) < 32 && c[0] == '0' && (c[1] == 0 || c[1] == '.');
        for (c++; *c && ok; c++)
            ok = (*c >= '0' && *c <= '9') || *c == '.';
        if (!ok) {
            snprintf(err, errlen,
                     "--label-smoothing expects a decimal number in [0, 1) like 0.1, "
                     "got '%s'",
                     g->ls);
            return -1;
        }
    }
    g->nfrozen = 0;
    if (o->freeze) {
        const char *q = o->freeze;
        while (*q) {
            size_t k = strcspn(q, ",");
            char nm[16];
            snprintf(nm, sizeof nm, "%.*s", (int)(k < 15 ? k : 15), q);
            const param_t *p = k < 15 ? param_find(g, nm) : NULL;
            if (!p || g->nfrozen == 16 || (g->tied && !strcmp(nm, "wout"))) {
                snprintf(err, errlen,
                         "--freeze expects parameter names (emb wn1 wq wk wv wo wn2 "
                         "wg wu wd wnf wout; deepseek3 also wr wge wue wde wgs wus wds; no "
                         "wout with --tied), got '%s'",
                         o->freeze);
                return -1;
            }
            if (g->tied && !strcmp(nm, "emb")) {
                snprintf(err, errlen, "--freeze emb with --tied is not generated");
                return -1;
            }
            snprintf(g->frozen[g->nfrozen++], sizeof g->frozen[0], "%s", nm);
            q += k;
            if (*q)
                q++;
        }
    }
    g->variant = o->variant;
    if (o->variant && o->bug) {
        snprintf(err, errlen, "--bug and --variant cannot be combined");
        return -1;
    }
    if (o->variant) {
        int known = 0;
        for (int i = 0; sp_gen_llama3_variants[i].name; i++)
            known |= strcmp(sp_gen_llama3_variants[i].name, o->variant) == 0;
        if (!known) {
            snprintf(err, errlen, "unknown variant '%s' (shardproof gen llama3 --variant list)",
                     o->variant);
            return -1;
        }
        if (!strcmp(o->variant, "zero2_allreduce") && g->zero < 2) {
            snprintf(err, errlen, "variant '%s' needs --zero 2 or 3", o->variant);
            return -1;
        }
    }
    g->bug = o->bug;
    g->bug_desc = NULL;
    if (o->bug) {
        for (int i = 0; g->fam->bugs[i].name; i++)
            if (strcmp(g->fam->bugs[i].name, o->bug) == 0)
                g->bug_desc = g->fam->bugs[i].what;
        if (!g->bug_desc) {
            snprintf(err, errlen, "unknown bug '%s' (shardproof gen %s --bug list)", o->bug,
                     g->fam->name);
            return -1;
        }
        const char *b = o->bug;
        const char *need = NULL;
        g->bug_axis_tp = g->tp > 1;
        if ((!strcmp(b, "tp_allreduce_identity") || !strcmp(b, "bwd_allreduce_identity")) &&
            g->tp < 2)
            need = "--tp >= 2";
        else if (!strcmp(b, "tp_allgather_instead") && (g->tp < 2 || g->sp))
            need = "--tp >= 2 without --sp";
        else if (!strcmp(b, "pp_allreduce_instead") && (g->pp < 2 || g->tp < 2 || g->sp))
            need = "--pp >= 2 and --tp >= 2, no --sp";
        else if (!strcmp(b, "pp_wrong_peer") && (g->pp < 2 || g->tp < 2))
            need = "--pp >= 2 and --tp >= 2";
        else if ((!strcmp(b, "eps_one_rank") || !strcmp(b, "pow1") ||
                  !strcmp(b, "attn_scale_one_rank")) &&
                 g->tp < 2 && g->dp < 2)
            need = "--tp >= 2 or --dp >= 2";
        else if (!strcmp(b, "grad_early") &&
                 (g->nm < 2 || g->zero || g->tied || gen_is_frozen(g, "wout") || g->cp > 1))
            need = "--nm >= 2 (a loop over micro-batches: without --mb-axis, --zero, --cp, "
                   "--tied or a frozen wout)";
        else if ((!strcmp(b, "cp_rope_local_positions") || !strcmp(b, "cp_causal_offset_local")) &&
                 g->cp < 2)
            need = "--cp >= 2";
        else if (!strcmp(b, "expert_grad_not_scaled") && (g->dp < 2 || g->ep < 2))
            need = "--dp >= 2 and --ep >= 2"; /* replicated experts are averaged like the rest */
        else if (!strcmp(b, "tp_allreduce_dropped") && (g->tp < 2 || g->nm > 1))
            need = "--tp >= 2 and --nm 1";
        else if (!strcmp(b, "frozen_input_grad_not_reduced") &&
                 (g->tp < 2 || !gen_is_frozen(g, "wout")))
            need = "--tp >= 2 and --freeze wout";
        else if (!strcmp(b, "sp_norm_grad_not_reduced") && (!g->sp || g->zero))
            need = "--sp (without --zero)";
        else if (!strcmp(b, "loss_mean_per_microbatch") && g->dp < 2 && g->nm < 2 && g->mba < 2)
            need = "--dp >= 2 or --nm >= 2";
        if (need) {
            snprintf(err, errlen, "bug '%s' needs %s", b, need);
            return -1;
        }
        if (!strcmp(b, "tp_allreduce_dropped"))
            g->bug_needle = "a[";
    }
    return 0;
}

static void setup_text(gen_t *g)
{
    /* the batch over the data axes dp, ep, mb: "B@(dp,mb)", and a rank's rows "B/dp/mb" */
    char dax[24] = "", lb[24] = "B";
    size_t nd = 0, nl = 1;
    const char *dn[3] = {"dp", "ep", "mb"};
    int ds[3] = {g->dp, g->ep, g->mba};
    for (int i = 0; i < 3; i++)
        if (ds[i] > 1) {
            nd += (size_t)snprintf(dax + nd, sizeof dax - nd, "%s%s", nd ? "," : "", dn[i]);
            nl += (size_t)snprintf(lb + nl, sizeof lb - nl, "/%s", dn[i]);
        }
    if (strchr(dax, ','))
        snprintf(g->BD, sizeof g->BD, "B@(%s)", dax);
    else
        snprintf(g->BD, sizeof g->BD, "%s%s%s", "B", nd ? "@" : "", dax);
    const char *T = g->tpx ? "@tp" : "";
    const char *SQ = g->cp > 1 ? "S@cp" : "S"; /* the sequence dim of a cp-sharded activation */
    snprintf(g->LX, sizeof g->LX, "[%s, %s, H]", g->BD,
             g->sp ? (g->cp > 1 ? "S@(cp,tp)" : "S@tp") : SQ);
    snprintf(g->LF, sizeof g->LF, "[%s, %s, H]", g->BD, SQ);
    snprintf(g->LFP, sizeof g->LFP, "[%s, %s, H] partial(sum@tp)", g->BD, SQ);
    snprintf(g->LQ, sizeof g->LQ, "[%s, %s, QD%s]", g->BD, SQ, T);
    snprintf(g->LK, sizeof g->LK, "[%s, %s, KD%s]", g->BD, SQ, T);
    snprintf(g->LHQ, sizeof g->LHQ, "[%s, NH%s, %s, HD]", g->BD, T, SQ);
    snprintf(g->LHK, sizeof g->LHK, "[%s, NKV%s, %s, HD]", g->BD, T, SQ);
    snprintf(g->LFF, sizeof g->LFF, "[%s, %s, F%s]", g->BD, SQ, T);
    snprintf(g->LV, sizeof g->LV, "[%s, %s, V%s]", g->BD, SQ, T);
    char ax[32];
    gen_axes_text(g, 1, 1, 0, ax, sizeof ax);
    if (ax[0] == '[') { /* "[dp, cp]" -> "(dp,cp)" */
        size_t j = 0;
        for (size_t i = 0; ax[i]; i++)
            if (ax[i] != ' ')
                ax[j++] = ax[i] == '[' ? '(' : ax[i] == ']' ? ')' : ax[i];
        ax[j] = '\0';
    }
    if (ax[0])
        snprintf(g->LLOSS, sizeof g->LLOSS, "[] partial(sum@%s)", ax);
    else
        snprintf(g->LLOSS, sizeof g->LLOSS, "[]");
    snprintf(g->lbr, sizeof g->lbr, "%s", lb);
    /* 1F1B with dp: micro-batch mb is rows [mb*(B/NM), (mb+1)*(B/NM)) of the global batch,
       sharded over dp (Megatron's sampler), so every rank reads its rows of the data inputs */
    snprintf(g->BDI, sizeof g->BDI, "%s", g->f1b && g->dp > 1 ? "B" : g->BD);
    if (g->nm > 1) {
        snprintf(g->mbx, sizeof g->mbx, "%s/%d", lb, g->nm);
        snprintf(g->lb, sizeof g->lb, "%s/%d", lb, g->nm);
    } else {
        snprintf(g->mbx, sizeof g->mbx, "%s", lb);
        snprintf(g->lb, sizeof g->lb, "%s", lb);
    }
}

static void header_text(gen_t *g, const sp_gen_opts_t *o, int with_expect)
{
    if (o->bug) {
        gen_linef(g, "# %s --bug %s: %s", g->fam->name, o->bug, g->bug_desc);
        if (with_expect && g->bug_needle)
            gen_linef(g, "# expect: %s:@@BUGLINE@@:@@BUGCOL@@: error: unknown name 'a[%d]'",
                      o->file ? o->file : "<stdin>", chunk_lo(g, 0));
        else if (with_expect)
            gen_linef(g, "# expect: NOT EQUIVALENT at line @@BUGLINE@@");
    } else if (o->variant) {
        for (int i = 0; sp_gen_llama3_variants[i].name; i++)
            if (!strcmp(sp_gen_llama3_variants[i].name, o->variant))
                gen_linef(g, "# llama3 --variant %s (performance-only, must not be flagged): %s",
                          o->variant, sp_gen_llama3_variants[i].what);
        if (with_expect)
            gen_linef(g, "# expect: EQUIVALENT");
    }
    char cmd[256];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "shardproof gen %s --preset %s", g->fam->name,
                                g->P->name);
    if (g->dp > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --dp %d", g->dp);
    if (g->ep > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --ep %d", g->ep);
    if (g->P->experts && g->sigmoid)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --score sigmoid");
    if (g->cp > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --cp %d", g->cp);
    if (g->tp > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --tp %d", g->tp);
    if (g->sp)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --sp");
    if (g->pp > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --pp %d", g->pp);
    if (g->vpp > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --vpp %d", g->vpp);
    if (o->grad_accum)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --grad-accum %d", g->nm * g->mba);
    else if (g->nm > 1 || g->mba > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --nm %d", g->nm * g->mba);
    if (g->mba > 1)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --mb-axis");
    if (g->f1b)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --schedule 1f1b");
    if (g->cp_ring)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --cp-algo ring");
    if (o->partition)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --partition %s", o->partition);
    if (o->layers)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --layers %d", g->L);
    if (o->batch)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --batch %d", g->batch);
    if (g->adam)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --optim adam");
    if (g->mask)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --loss-mask");
    if (g->ls)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --label-smoothing %s", g->ls);
    if (g->tied)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --tied");
    if (o->freeze)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --freeze %s", o->freeze);
    if (g->zero)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --zero %d", g->zero);
    if (g->clip)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --clip %s", g->clip);
    if (o->variant)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --variant %s", o->variant);
    if (o->bug)
        snprintf(cmd + n, sizeof cmd - n, " --bug %s", o->bug);
    gen_linef(g, "# Generated by: %s", cmd);
    if (g->P->experts)
        gen_linef(g,
                  "# DeepSeek-V3-style %s (%d of %d layers, %d dense first): hidden %ld, %ld heads "
                  "(standard attention instead of MLA),",
                  g->P->name, g->L, g->P->layers, g->nd, g->P->hidden, g->P->heads);
    if (g->P->experts)
        gen_linef(g,
                  "# %d routed experts (top-%d, %s scores) of FFN %ld, %d shared, dense FFN %ld, "
                  "vocabulary %ld,",
                  g->P->experts, g->P->active, g->sigmoid ? "sigmoid" : "softmax", g->P->ffn_moe,
                  g->P->shared, g->P->ffn, g->P->vocab);
    else
        gen_linef(g,
                  "# Llama-3 %s (%d of %d layers): hidden %ld, %ld query heads, %ld kv heads, "
                  "FFN %ld, vocabulary %ld,",
                  g->P->name, g->L, g->P->layers, g->P->hidden, g->P->heads, g->P->kv_heads,
                  g->P->ffn, g->P->vocab);
    int bmin = g->dp * g->ep * g->nm * g->mba; /* one sequence per data-parallel rank and micro-batch */
    gen_linef(g, "# sequence %ld, global batch %d sequences%s; trained with %s.", g->P->seq,
              g->batch,
              g->batch == bmin && bmin > 1
                  ? " (dp * ep * nm: one per data-parallel rank and micro-batch, the smallest "
                    "the mesh allows)"
                  : "",
              g->adam ? "Adam" : "SGD");
    char par[256];
    n = (size_t)snprintf(par, sizeof par, "# Plan:");
    if (g->dp > 1)
        n += (size_t)snprintf(par + n, sizeof par - n, " data parallel %d%s,", g->dp,
                              g->zero == 1   ? " with ZeRO-1"
                              : g->zero == 2 ? " with ZeRO-2"
                              : g->zero == 3 ? " with ZeRO-3"
                                             : "");
    if (g->ep > 1)
        n += (size_t)snprintf(par + n, sizeof par - n, " expert parallel %d,", g->ep);
    if (g->cp > 1)
        n += (size_t)snprintf(par + n, sizeof par - n, " context parallel %d%s,", g->cp,
                              g->cp_ring ? " (ring attention)" : "");
    if (g->tp > 1)
        n += (size_t)snprintf(par + n, sizeof par - n, " tensor parallel %d%s,", g->tp,
                              g->sp ? " with sequence parallelism" : "");
    if (g->pp > 1 && g->vpp > 1)
        n += (size_t)snprintf(par + n, sizeof par - n,
                              " %d pipeline stages of %d interleaved chunks,", g->pp, g->vpp);
    else if (g->pp > 1)
        n += (size_t)snprintf(par + n, sizeof par - n, " %d pipeline stages,", g->pp);
    if (g->nm > 1)
        n += (size_t)snprintf(par + n, sizeof par - n, " %d micro-batches%s,", g->nm,
                              g->f1b ? " (1F1B schedule)" : "");
    if (g->mba > 1)
        n += (size_t)snprintf(par + n, sizeof par - n,
                              " %d micro-batches on mesh axis mb (virtual ranks),", g->mba);
    if (n == 7)
        n += (size_t)snprintf(par + n, sizeof par - n, " a single device,");
    snprintf(par + n, sizeof par - n, " forward, backward,%s optimizer step.",
             g->clip ? " grad-norm clipping," : "");
    gen_put_line(g, par);
    gen_linef(g, "# Run: shardproof check FILE (see docs/workloads.md)");
    gen_put_line(g, "");
    /* dims: the order steers shape reduction to small, distinct sizes */
    const preset_t *P = g->P;
    if (P->experts) {
        /* E = 4*EQ keeps the reduced expert count a multiple of 4 (for --ep 2 and 4) */
        gen_linef(g,
                  "dim NKV = %ld, HD = %ld, NH = %ld, B = %d, S = %ld, H = %ld, F = %ld, K = %d, "
                  "EQ = %d, FE = %ld, V = %ld",
                  P->kv_heads, P->head_dim, P->heads, g->batch, g->P->seq, P->hidden, P->ffn,
                  P->active, P->experts / 4, P->ffn_moe, P->vocab);
        gen_linef(g,
                  "dim QD = NH*HD, KD = NKV*HD, G = NH/NKV, E = 4*EQ, FS = %d*FE   "
                  "# E experts, K per token; FS: the shared experts' FFN",
                  P->shared);
    } else {
        gen_linef(g,
                  "dim NKV = %ld, HD = %ld, NH = %ld, B = %d, S = %ld, H = %ld, F = %ld, V = %ld",
                  P->kv_heads, P->hidden / P->heads, P->heads, g->batch, g->P->seq, P->hidden,
                  P->ffn, P->vocab);
        gen_linef(g, "dim QD = NH*HD, KD = NKV*HD, G = NH/NKV      # G: query heads per kv head");
    }
    gen_put_line(g, "");
}

int gen_decoder(sp_sbuf_t *out, const gen_family_t *fam, const sp_gen_opts_t *o, char *err,
                size_t errlen)
{
    gen_t g;
    memset(&g, 0, sizeof g);
    g.fam = fam;
    if (check_opts(&g, o, err, errlen) < 0)
        return -1;
    setup_text(&g);
    /* the header first, to learn its length, then the rest numbered after it */
    sp_sbuf_t hb, bb;
    sp_sbuf_init(&hb);
    sp_sbuf_init(&bb);
    g.b = &hb;
    g.line = 1;
    header_text(&g, o, 1);
    g.b = &bb;
    model_text(&g);
    gen_put_line(&g, "");
    char pname[96];
    size_t pn0 = (size_t)snprintf(pname, sizeof pname, "%s", fam->name), pn = pn0;
    if (g.dp > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_dp%d", g.dp);
    if (g.ep > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_ep%d", g.ep);
    if (g.cp > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_cp%d", g.cp);
    if (g.tp > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_tp%d%s", g.tp, g.sp ? "_sp" : "");
    if (g.pp > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_pp%d", g.pp);
    if (g.vpp > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_vpp%d", g.vpp);
    if (g.nm > 1)
        pn +=
            (size_t)snprintf(pname + pn, sizeof pname - pn, "_nm%d%s", g.nm, g.f1b ? "_1f1b" : "");
    if (g.mba > 1)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_mb%d", g.mba);
    if (g.cp_ring)
        pn += (size_t)snprintf(pname + pn, sizeof pname - pn, "_ring");
    if (pn == pn0)
        snprintf(pname + pn, sizeof pname - pn, "_single");
    gen_linef(&g, "plan %s of %s {", pname, fam->name);
    g.ind = 1;
    plan_body(&g);
    tied_copy_out(&g);
    g.ind = 0;
    gen_put_line(&g, "}");
    int rc = 0;
    if (g.fail) {
        snprintf(err, errlen, "%s", g.fail_msg);
        rc = -1;
    } else if ((o->bug || o->variant) && !g.bug_line) {
        snprintf(err, errlen, "%s '%s' does not apply to this configuration",
                 o->bug ? "bug" : "variant", o->bug ? o->bug : o->variant);
        rc = -1;
    } else if (hb.failed || bb.failed) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (rc == 0) {
        const char *h = hb.s ? hb.s : "";
        const char *ph = strstr(h, "@@BUGLINE@@");
        const char *pc = strstr(h, "@@BUGCOL@@");
        if (ph && pc) {
            sp_sbuf_printf(out, "%.*s%d%.*s%d%s", (int)(ph - h), h, g.bug_line,
                           (int)(pc - ph - strlen("@@BUGLINE@@")), ph + strlen("@@BUGLINE@@"),
                           g.bug_col, pc + strlen("@@BUGCOL@@"));
        } else if (ph) {
            sp_sbuf_printf(out, "%.*s%d%s", (int)(ph - h), h, g.bug_line,
                           ph + strlen("@@BUGLINE@@"));
        } else {
            sp_sbuf_puts(out, h);
        }
        sp_sbuf_puts(out, bb.s ? bb.s : "");
    }
    sp_sbuf_clear(&hb);
    sp_sbuf_clear(&bb);
    return rc;
}

int sp_gen_llama3(sp_sbuf_t *out, const sp_gen_opts_t *o, char *err, size_t errlen)
{
    return gen_decoder(out, &gen_llama3_family, o, err, errlen);
}

const gen_family_t gen_llama3_family = {"llama3", presets, sp_gen_llama3_bugs, NULL, NULL, NULL,
                                        NULL,     NULL};
