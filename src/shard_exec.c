/*
 * shard_exec.c: a sharded check (--shard i/N) executes only what its own stages read.
 *
 * Every value of an execution is built from the symbols of its *source* tensors: the inputs
 * and parameters, optimizer state, and the fresh values that continue after a cut point
 * (src/exec.c fresh_symbols).  A sharded run executes twice:
 *
 *  - a trace (SP_SRC_TRACE): every source tensor is one symbol, named like its prefix, for all
 *    its elements.  Shapes, control flow and every check of the interpreter are those of a
 *    full run, but a tensor's elements mostly become one node, so the trace costs a fraction
 *    of a full run (its dot products are sets of pairs: solver/expr.h dot_sets).  It gives the
 *    stages and, for each, the sources it reads.  The stages are ordered by the first cut point
 *    they read, a gradient's or an update's stage with the tensor's own (group_derived: a
 *    layer's backward with its forward), and shard i owns the i-th of N equal runs of that
 *    order (sp_shard_partition);
 *  - the shard's run (SP_SRC_PART): the sources its stages read get their real symbols, every
 *    other source the hollow symbol (one node, flagged SP_NODE_HOLLOW, the flag inherited by
 *    every node over it).  What does not feed the shard's stages collapses onto few nodes
 *    (src/ops.c: an operand with a hollow element is made hollow whole), and so does the
 *    last operator of a model cut point that only other shards' stages relate
 *    (sp_shard_skips_model; src/exec.c).
 *
 * Soundness does not rest on the trace: a stage of the shard whose values carry the flag read
 * a value that was not computed, and the shard then runs again in full (src/check.c
 * shard_execute).  A value without the flag was built only from real symbols by the same
 * operations as in a full run, so it is the value a full run builds (the store folds nothing
 * that depends on which symbols its operands are: solver/expr.h; only the order of a
 * commutative node's arguments can differ, by the order nodes were made in).  The other
 * shards' stages are neither keyed nor proved; merge executes in full, groups the stages
 * itself and compares each shard's stage fingerprints with its own (src/shard.c).
 */
#include <flint/flint.h>
#include <flint/fmpq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec_int.h"
#include "hash.h"
#include "sbuf.h"

int sp_shard_mine(const sp_check_t *C, int i)
{
    int64_t N = C->opt.shard_count, n = C->nstages;
    if (N <= 1)
        return 1;
    if (C->owned != NULL && C->nowned == n)
        return C->owned[i];
    /* no trace (lineage inference runs in full): equal runs of the stages in their order */
    return (int64_t)i * N / (n ? n : 1) == C->opt.shard_index;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* a[0 .. *n) sorted, each string once (the repeats freed) */
static void sort_unique(char **a, int *n)
{
    if (*n < 2)
        return;
    qsort(a, (size_t)*n, sizeof(char *), cmp_str);
    int m = 1;
    for (int i = 1; i < *n; i++) {
        if (strcmp(a[i], a[m - 1]) == 0)
            flint_free(a[i]);
        else
            a[m++] = a[i];
    }
    *n = m;
}

static int in_sorted(char *const *a, int n, const char *s)
{
    return n > 0 && bsearch(&s, a, (size_t)n, sizeof(char *), cmp_str) != NULL;
}

static int is_needed(const sp_check_t *C, const char *prefix)
{
    return in_sorted(C->needed, C->nneeded, prefix);
}

int sp_shard_skips_model(sp_check_t *C, const char *nm)
{
    return C->src_mode == SP_SRC_PART && !in_sorted(C->mine, C->nmine, nm) && is_cut(C, nm);
}

static void push(char ***a, int *n, int *cap, const char *s)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *a = flint_realloc(*a, (size_t)*cap * sizeof(char *));
    }
    (*a)[(*n)++] = sp_strdup(s);
}

/* The trace's node keys up to the store's end: a symbol's source key, else the least key of
   its arguments (UINT32_MAX: no cut point's value under it) */
static uint32_t *node_keys(sp_check_t *C)
{
    const sp_ectx_struct *E = C->E;
    uint32_t len = sp_expr_count(C->E);
    if (len > C->anode_key) {
        C->anode_key = 2 * len;
        C->node_key = flint_realloc(C->node_key, (size_t)C->anode_key * sizeof(uint32_t));
    }
    for (uint32_t id = C->nnode_key > 1 ? C->nnode_key : 1; id < len; id++) {
        const sp_node_t *nd = &E->nodes[id];
        uint32_t k = UINT32_MAX;
        if (nd->op == SP_OP_SYM && (uint32_t)nd->param < C->nsrc_ord && C->src_ord[nd->param])
            k = C->src_ord[nd->param];
        for (uint32_t j = 0; j < nd->nargs; j++) {
            uint32_t a = C->node_key[E->argv[nd->args + j]];
            k = a < k ? a : k;
        }
        C->node_key[id] = k;
    }
    C->nnode_key = len;
    return C->node_key;
}

static uint32_t min_key(const uint32_t *k, const sp_tensor_t *t, uint32_t m)
{
    int64_t n = t->v && t->ndim >= 0 ? sp_tensor_numel(t) : 0;
    for (int64_t e = 0; e < n; e++)
        m = k[t->v[e]] < m ? k[t->v[e]] : m;
    return m;
}

/* A trace made a cut point's fresh value: its key is the order of making */
static void source_made(sp_check_t *C, const sp_tensor_t *t, int fresh)
{
    if (C->src_mode != SP_SRC_TRACE || !fresh || t->v == NULL || sp_tensor_numel(t) == 0)
        return;
    const sp_node_t *nd = &C->E->nodes[t->v[0]];
    if (nd->op != SP_OP_SYM)
        return;
    uint32_t sym = (uint32_t)nd->param;
    if (sym >= C->nsrc_ord) {
        uint32_t n = 2 * sym + 64;
        C->src_ord = flint_realloc(C->src_ord, (size_t)n * sizeof(uint32_t));
        memset(C->src_ord + C->nsrc_ord, 0, (size_t)(n - C->nsrc_ord) * sizeof(uint32_t));
        C->nsrc_ord = n;
    }
    C->src_ord[sym] = ++C->nsources;
}

int sp_source_symbols(sp_check_t *C, sp_tensor_t *t, const char *prefix)
{
    int real = C->src_mode == SP_SRC_REAL || (C->src_mode == SP_SRC_PART && is_needed(C, prefix));
    int fresh = strpbrk(prefix, "@#") != NULL; /* a cut point's (src/exec.c fresh_symbols) */
    if (C->src_mode == SP_SRC_PART) {
        C->shard_sources[0] += real;
        C->shard_sources[1]++;
    }
    sp_members_record(C, prefix, t); /* its axes (src/members.c) */
    if (real)
        return sp_tensor_symbols(C->E, t, prefix);
    if (t->v == NULL || t->ndim < 0)
        return 0;
    sp_expr_t h = C->src_mode == SP_SRC_TRACE ? sp_expr_sym(C->E, prefix) : sp_expr_hollow(C->E);
    if (h == SP_EXPR_NONE)
        return 0;
    int64_t n = sp_tensor_numel(t);
    for (int64_t e = 0; e < n; e++)
        t->v[e] = h;
    source_made(C, t, fresh);
    return 1;
}

static void strs_free(char ***a, int *n)
{
    for (int i = 0; i < *n; i++)
        flint_free((*a)[i]);
    flint_free(*a);
    *a = NULL;
    *n = 0;
}

void sp_shard_needed_free(sp_check_t *C)
{
    strs_free(&C->needed, &C->nneeded);
    strs_free(&C->mine, &C->nmine);
}

static void mark(uint8_t *seen, const sp_tensor_t *t)
{
    int64_t n = t->v ? sp_tensor_numel(t) : 0;
    for (int64_t e = 0; e < n; e++)
        seen[t->v[e]] = 1;
}

/* seen[id] for every node in the cone of a value of this shard's stages (len nodes) */
static void mark_cones(const sp_check_t *C, uint8_t *seen, uint32_t len)
{
    const sp_ectx_struct *E = C->E;
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        if (!sp_shard_mine(C, i))
            continue;
        for (int64_t r = 0; s->plan && r < s->nranks; r++)
            mark(seen, &s->plan[r]);
        mark(seen, &s->model);
    }
    /* arguments have smaller ids than their nodes: one sweep downwards visits every cone */
    for (uint32_t id = len; id-- > 1;)
        if (seen[id])
            for (uint32_t k = 0; k < E->nodes[id].nargs; k++)
                seen[E->argv[E->nodes[id].args + k]] = 1;
}

int sp_shard_collect_needed(sp_check_t *C)
{
    sp_shard_needed_free(C);
    const sp_ectx_struct *E = C->E;
    uint32_t len = sp_expr_count(C->E);
    uint8_t *seen = calloc(len ? len : 1, 1);
    if (seen == NULL)
        return 0;
    int cap = 0;
    for (int i = 0; i < C->nstages; i++)
        if (sp_shard_mine(C, i))
            push(&C->mine, &C->nmine, &cap, C->stages[i].model_name);
    sort_unique(C->mine, &C->nmine);
    mark_cones(C, seen, len);
    cap = 0;
    for (uint32_t id = 1; id < len; id++)
        if (seen[id] && E->nodes[id].op == SP_OP_SYM)
            push(&C->needed, &C->nneeded, &cap, E->names[E->nodes[id].param]);
    free(seen);
    sort_unique(C->needed, &C->nneeded);
    return 1;
}

typedef struct {
    uint32_t key;
    int id;
    int64_t weight;
} order_t;

static int cmp_order(const void *a, const void *b)
{
    const order_t *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? -1 : 1) : (x->id > y->id) - (x->id < y->id);
}

/* The arguments in the cone of node id down to sources (at most cap), marking with stamp */
static int64_t cone_size(const sp_ectx_struct *E, sp_expr_t id, uint32_t *mark, uint32_t stamp,
                         sp_expr_t **stack, size_t *astack, int64_t cap)
{
    size_t n = 0;
    int64_t size = 0;
    if (id == SP_EXPR_NONE || mark[id] == stamp)
        return 0;
    mark[id] = stamp;
    (*stack)[n++] = id;
    while (n > 0 && size < cap) {
        const sp_node_t *nd = &E->nodes[(*stack)[--n]];
        /* a trace's dot keeps each pair once; param counts them all (solver/expr.h dot_sets) */
        size += 1 + (nd->op == SP_OP_DOT ? 2 * (int64_t)nd->param : (int64_t)nd->nargs);
        for (uint32_t j = 0; j < nd->nargs; j++) {
            sp_expr_t a = E->argv[nd->args + j];
            if (mark[a] == stamp)
                continue;
            mark[a] = stamp;
            if (n == *astack) {
                *astack *= 2;
                *stack = flint_realloc(*stack, *astack * sizeof(sp_expr_t));
            }
            (*stack)[n++] = a;
        }
    }
    return size;
}

/* A stage's weight, to balance the shards: per tensor (the model's, each rank's) its element
   count times the trace's cone of its first element (what one element costs to compute) */
static int64_t tensor_weight(const sp_ectx_struct *E, const sp_tensor_t *t, uint32_t *mark,
                             uint32_t *stamp, sp_expr_t **stack, size_t *astack)
{
    int64_t n = t->v && t->ndim >= 0 ? sp_tensor_numel(t) : 0;
    if (n == 0)
        return 0;
    return n * cone_size(E, t->v[0], mark, ++*stamp, stack, astack, 1 << 20);
}

typedef struct {
    const char *base;
    int id;
} based_t;

static int cmp_based(const void *a, const void *b)
{
    const based_t *x = a, *y = b;
    int c = strcmp(x->base, y->base);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* A tensor's gradient, its optimizer update and its forward value come together: every stage
   takes the least key of the stages whose model tensors are made for the same tensor (a layer's
   backward stages read its forward cut points and the next layer's gradients, and would else
   be ordered by the latter, far from the forward: two shards would each execute half of every
   layer's backward).  o[] indexed by stage. */
static void group_derived(const sp_check_t *C, order_t *o, int n)
{
    based_t *b = flint_malloc((size_t)(n ? n : 1) * sizeof(based_t));
    for (int i = 0; i < n; i++) {
        b[i].base = train_base(C->stages[i].model_name ? C->stages[i].model_name : "");
        b[i].id = i;
    }
    qsort(b, (size_t)n, sizeof(based_t), cmp_based);
    for (int i = 0, j; i < n; i = j) {
        uint32_t m = UINT32_MAX;
        for (j = i; j < n && !strcmp(b[j].base, b[i].base); j++)
            m = o[b[j].id].key < m ? o[b[j].id].key : m;
        for (int l = i; l < j; l++)
            o[b[l].id].key = m;
    }
    flint_free(b);
}

int sp_shard_partition(sp_check_t *C)
{
    int n = C->nstages;
    flint_free(C->owned);
    C->owned = flint_calloc((size_t)(n ? n : 1), 1);
    C->nowned = n;
    const sp_ectx_struct *E = C->E;
    uint32_t *k = node_keys(C), len = sp_expr_count(C->E), stamp = 0;
    uint32_t *mark = calloc(len ? len : 1, sizeof(uint32_t));
    size_t astack = 1024;
    sp_expr_t *stack = flint_malloc(astack * sizeof(sp_expr_t));
    order_t *o = flint_malloc((size_t)(n ? n : 1) * sizeof(order_t));
    if (mark == NULL) {
        flint_free(stack);
        flint_free(o);
        return 0;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const sp_stage_t *s = &C->stages[i];
        uint32_t m = min_key(k, &s->model, UINT32_MAX);
        int64_t w = tensor_weight(E, &s->model, mark, &stamp, &stack, &astack);
        for (int64_t r = 0; s->plan && r < s->nranks; r++) {
            m = min_key(k, &s->plan[r], m);
            w += tensor_weight(E, &s->plan[r], mark, &stamp, &stack, &astack);
        }
        o[i].key = m;
        o[i].id = i;
        o[i].weight = w > 0 ? w : 1;
        total += o[i].weight;
    }
    free(mark);
    flint_free(stack);
    group_derived(C, o, n);
    qsort(o, (size_t)n, sizeof(order_t), cmp_order);
    /* shard si: the stages whose weight's midpoint in that order falls in its N-th part */
    int64_t N = C->opt.shard_count, si = C->opt.shard_index, acc = 0;
    for (int j = 0; j < n; j++) {
        int64_t mid = acc + o[j].weight / 2;
        acc += o[j].weight;
        if ((__int128)mid * N / total == si)
            C->owned[o[j].id] = 1;
    }
    flint_free(o);
    return 1;
}

static int hollow(const sp_ectx_struct *E, const sp_tensor_t *t)
{
    int64_t n = t->v ? sp_tensor_numel(t) : 0;
    for (int64_t e = 0; e < n; e++)
        if (E->nodes[t->v[e]].flags & SP_NODE_HOLLOW)
            return 1;
    return 0;
}

int sp_shard_stages_whole(const sp_check_t *C, int nstages)
{
    if (C->nstages != nstages)
        return 0;
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        if (!sp_shard_mine(C, i))
            continue;
        for (int64_t r = 0; s->plan && r < s->nranks; r++)
            if (hollow(C->E, &s->plan[r]))
                return 0;
        if (hollow(C->E, &s->model))
            return 0;
    }
    return 1;
}

/*
 * Stage fingerprints for merge: a shard's stage values are the full run's values, but the
 * store orders a commutative node's arguments by id, and ids follow the order in which nodes
 * were made, which differs between a shard's run and a full one (a product's factors can come
 * out in another order).  So merge does not compare the keys of memoization; it compares each
 * stage's fingerprint: a 64-bit hash of every value's structure in which a symbol is its name,
 * a constant its value, and the arguments of ADD, MUL, MAX, MIN and the pairs of DOT (and a
 * pair's two factors) are combined by a sum of their hashes, which does not depend on their
 * order.  Two different stages share it with probability about 2^-64 per element.  It is a
 * consistency check that shard and merge saw the same stage, not part of any proof (the
 * proofs are the shards', over values a full run would have made).
 */
static uint64_t fp_mix(uint64_t a, uint64_t b)
{
    return sp_mix64(a * UINT64_C(0x9e3779b97f4a7c15) ^ sp_mix64(b + UINT64_C(0x632be59bd9b4e019)));
}

static uint64_t fp_node(const sp_ectx_struct *E, const uint64_t *v, uint32_t id)
{
    const sp_node_t *nd = &E->nodes[id];
    const uint32_t *a = E->argv + nd->args;
    /* (a symbol's and a constant's param is an index in order of making: not hashed) */
    int indexed = nd->op == SP_OP_SYM || nd->op == SP_OP_CONST;
    uint64_t r = fp_mix(nd->op, indexed ? 0 : (uint64_t)(uint32_t)nd->param);
    switch (nd->op) {
    case SP_OP_SYM:
        return fp_mix(r, sp_str_hash(E->names[nd->param]));
    case SP_OP_CONST: {
        const fmpq *q = E->consts + nd->param;
        r = fp_mix(r, fmpz_fdiv_ui(fmpq_numref(q), UINT64_C(0xffffffffffffffc5)));
        r = fp_mix(r, (uint64_t)fmpz_sgn(fmpq_numref(q)));
        return fp_mix(r, fmpz_fdiv_ui(fmpq_denref(q), UINT64_C(0xffffffffffffffc5)));
    }
    case SP_OP_ADD:
    case SP_OP_MUL:
    case SP_OP_MAX:
    case SP_OP_MIN: {
        uint64_t sum = 0;
        for (uint32_t k = 0; k < nd->nargs; k++)
            sum += sp_mix64(v[a[k]]);
        return fp_mix(r, sum);
    }
    case SP_OP_DOT: {
        uint64_t sum = 0;
        for (uint32_t k = 0; k + 1 < nd->nargs; k += 2)
            sum += sp_mix64(sp_mix64(v[a[k]]) + sp_mix64(v[a[k + 1]]));
        return fp_mix(r, sum);
    }
    default: /* the other operators: their arguments in order */
        for (uint32_t k = 0; k < nd->nargs; k++)
            r = fp_mix(r, v[a[k]]);
        return r;
    }
}

static uint64_t fp_tensor(uint64_t h, const uint64_t *v, const sp_tensor_t *t)
{
    int64_t n = t->v && t->ndim >= 0 ? sp_tensor_numel(t) : 0;
    h = fp_mix(h, (uint64_t)(t->ndim + 1));
    for (int64_t e = 0; e < n; e++)
        h = fp_mix(h, v[t->v[e]]);
    return h;
}

int sp_shard_fingerprints(const sp_check_t *C, uint64_t *fp)
{
    const sp_ectx_struct *E = C->E;
    uint32_t len = sp_expr_count(C->E);
    uint8_t *seen = calloc(len ? len : 1, 1);
    uint64_t *v = malloc((size_t)(len ? len : 1) * sizeof(uint64_t));
    if (seen == NULL || v == NULL) {
        free(seen);
        free(v);
        return 0;
    }
    mark_cones(C, seen, len);
    for (uint32_t id = 1; id < len; id++)
        if (seen[id])
            v[id] = fp_node(E, v, id);
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        if (!sp_shard_mine(C, i))
            continue;
        uint64_t h = fp_mix((uint64_t)s->nranks, 0);
        for (int64_t r = 0; s->plan && r < s->nranks; r++)
            h = fp_tensor(h, v, &s->plan[r]);
        fp[i] = fp_tensor(h, v, &s->model);
    }
    free(seen);
    free(v);
    return 1;
}
