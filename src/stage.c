/* stage.c: prove every stage: element queries, memoization up to renaming, a thread pool. */
#include <flint/flint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "defined.h"
#include "nf.h"
#include "smt2.h"
#include "sbuf.h"

void sp_stage_clear(sp_stage_t *s)
{
    flint_free(s->plan_name);
    flint_free(s->model_name);
    sp_layout_clear(&s->layout);
    if (s->plan) {
        for (int64_t r = 0; r < s->nranks; r++)
            sp_tensor_clear(&s->plan[r]);
        flint_free(s->plan);
    }
    sp_tensor_clear(&s->model);
    flint_free(s->plan_rloc);
    flint_free(s->plan_value);
    flint_free(s->model_value);
    flint_free(s->cex);
    flint_free(s->cex_values);
    flint_free(s->reason);
    memset(s, 0, sizeof(*s));
}

void sp_stage_fail_at(sp_stage_t *s, int64_t r)
{
    s->fail_rank = r;
    if (s->plan_rloc && r >= 0 && r < s->nranks && s->plan_rloc[r].file)
        s->plan_loc = s->plan_rloc[r];
}

/* The element pairs of a stage: plan[r][i] against the model's shard, after pending reductions. */
typedef struct {
    sp_expr_t *plan, *model;
    int64_t *rank, *index;
    int64_t n;
} pairs_t;

static void pairs_free(pairs_t *P)
{
    flint_free(P->plan);
    flint_free(P->model);
    flint_free(P->rank);
    flint_free(P->index);
}

static int build_pairs(sp_check_t *C, const sp_stage_t *s, pairs_t *P)
{
    const sp_mesh_t *m = &C->mesh;
    int64_t nr = s->nranks;
    memset(P, 0, sizeof(*P));
    /* combine pending reductions: every rank ends with its group's reduction */
    sp_tensor_t *cur = flint_malloc((size_t)nr * sizeof(sp_tensor_t));
    for (int64_t r = 0; r < nr; r++) {
        sp_tensor_init(&cur[r]);
        cur[r].ndim = -1;
        if (s->plan[r].ndim >= 0)
            sp_tensor_copy(&cur[r], &s->plan[r]);
    }
    uint8_t *lead = flint_malloc(nr > 0 ? (size_t)nr : 1);
    for (int64_t r = 0; r < nr; r++)
        lead[r] = 1;
    int ok = 1;
    for (int k = 0; k < s->layout.npartial && ok; k++) {
        sp_tensor_t *nxt = flint_malloc((size_t)nr * sizeof(sp_tensor_t));
        for (int64_t r = 0; r < nr; r++) {
            sp_tensor_init(&nxt[r]);
            nxt[r].ndim = -1;
        }
        sp_op_err_t err;
        ok = sp_coll_all_reduce(C->E, m, &s->layout.paxes[k], s->layout.pop[k], cur, nxt, &err);
        for (int64_t r = 0; r < nr; r++) {
            sp_tensor_clear(&cur[r]);
            if (sp_axes_index(m, &s->layout.paxes[k], r) != 0)
                lead[r] = 0;
        }
        flint_free(cur);
        cur = nxt;
    }
    int64_t cap = 0;
    for (int64_t r = 0; r < nr && ok; r++) {
        if (cur[r].ndim < 0 || !lead[r])
            continue;
        sp_tensor_t loc;
        sp_tensor_init(&loc);
        sp_layout_project(m, &s->layout, r, &s->model, &loc);
        int64_t n = sp_tensor_numel(&loc);
        if (P->n + n > cap) {
            cap = 2 * (P->n + n);
            P->plan = flint_realloc(P->plan, (size_t)cap * sizeof(sp_expr_t));
            P->model = flint_realloc(P->model, (size_t)cap * sizeof(sp_expr_t));
            P->rank = flint_realloc(P->rank, (size_t)cap * sizeof(int64_t));
            P->index = flint_realloc(P->index, (size_t)cap * sizeof(int64_t));
        }
        for (int64_t i = 0; i < n; i++) {
            P->plan[P->n] = cur[r].v[i];
            P->model[P->n] = loc.v[i];
            P->rank[P->n] = r;
            P->index[P->n] = i;
            P->n++;
        }
        sp_tensor_clear(&loc);
    }
    for (int64_t r = 0; r < nr; r++)
        sp_tensor_clear(&cur[r]);
    flint_free(cur);
    flint_free(lead);
    return ok;
}

/* ---- renaming-invariant keys ------------------------------------------------------------- */

/*
 * The canonical serialization of a stage's pairs: the cones of the pairs, each node as (op,
 * param, argument positions), symbols numbered by first occurrence.  Constants are hash-consed
 * by value, so their pool index (the param) stands for the value; keys are only compared
 * within one store.  Two stages with equal serializations ask the same question up to a
 * renaming of symbols.
 */
typedef struct {
    uint32_t *tok;
    size_t n;
    uint64_t hash;
    uint32_t *rtok;          /* the roles (src/members.c), NULL when none */
    size_t rn;
} stage_key_t;

static void key_free(stage_key_t *k)
{
    flint_free(k->tok);
    flint_free(k->rtok);
}

static uint64_t mixk(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

/*
 * Scratch of a key computation, reused from key to key (one per thread): mark[id] is 1 + the
 * node's position in the serialization (0: not seen), the tokens are built in tok.
 */
typedef struct {
    uint32_t *mark;
    size_t nmark;
    uint32_t *order, *stack, *next;
    size_t cap;
    uint32_t *tok;
    size_t ntok, tokcap;
    void *members;           /* src/members.c's per-node summaries, reused */
    size_t memberscap;
    sp_members_roles_t *roles, *roles_dims; /* what the count and relations tests read, of
                                every tested dim and cut axis, or of the dims only (made once:
                                roles_tried, dims_tried) */
    int roles_tried, dims_tried;
    uint32_t *rtok;          /* the key's roles */
    size_t nrtok, rtokcap;
    uint32_t *ptok;          /* the compared pairs' role tokens */
    size_t ptokcap;
} key_scratch_t;

/* sp_stages_group's build_pairs adds nodes to the store (pending reductions) between keys: the
   marks follow its growth.  Workers only look nodes up (solve_stage checks it in debug builds).
   0 when the mark array cannot grow (out of memory): then no key is built. */
static int scratch_fit(key_scratch_t *W, const sp_ectx_struct *E)
{
    size_t need = (size_t)E->len + 1;
    if (need <= W->nmark)
        return 1;
    size_t n = need > 2 * W->nmark ? need : 2 * W->nmark;
    uint32_t *m = sp_big_realloc(W->mark, W->nmark * sizeof(uint32_t), n * sizeof(uint32_t), 1);
    if (m == NULL)
        return 0;
    W->mark = m;
    W->nmark = n;
    return 1;
}

static void scratch_clear(key_scratch_t *W)
{
    sp_big_free(W->mark, W->nmark * sizeof(uint32_t));
    flint_free(W->order);
    flint_free(W->stack);
    flint_free(W->next);
    flint_free(W->tok);
    flint_free(W->members);
    sp_members_roles_free(W->roles);
    sp_members_roles_free(W->roles_dims);
    flint_free(W->rtok);
    flint_free(W->ptok);
    memset(W, 0, sizeof(*W));
}

static void scratch_reserve(key_scratch_t *W, size_t n)
{
    if (n <= W->cap)
        return;
    W->cap = n > 2 * W->cap ? n : 2 * W->cap;
    W->order = flint_realloc(W->order, W->cap * sizeof(uint32_t));
    W->stack = flint_realloc(W->stack, W->cap * sizeof(uint32_t));
    W->next = flint_realloc(W->next, W->cap * sizeof(uint32_t));
}

static uint32_t *tok_reserve(key_scratch_t *W, size_t more)
{
    if (W->ntok + more > W->tokcap) {
        W->tokcap = 2 * (W->ntok + more);
        W->tok = flint_realloc(W->tok, W->tokcap * sizeof(uint32_t));
    }
    return W->tok + W->ntok;
}

/* Do the count and relations tests run (a reduced dim or a cut mesh axis, not the real sizes)?
   Then the keys carry the count flags (also where the roles of the dims are none: a cut mesh
   alone; helper-76's review) */
static int tests_run(const sp_check_t *C)
{
    return !C->opt.real_sizes && (sp_check_reduced(C) || C->ncutoff > 0);
}

/* The roles of stage keys (src/members.c), made once per scratch; NULL when no test runs */
static sp_members_roles_t *key_roles(sp_check_t *C, key_scratch_t *W)
{
    if (!W->roles_tried) {
        W->roles = sp_members_roles_new(C, 0);
        W->roles_tried = 1;
    }
    return W->roles;
}

/* ... of the reduced dims only (rank symmetry: below) */
static sp_members_roles_t *key_roles_dims(sp_check_t *C, key_scratch_t *W)
{
    if (!W->dims_tried) {
        W->roles_dims = sp_members_roles_new(C, 1);
        W->dims_tried = 1;
    }
    return W->roles_dims;
}

static uint32_t *rtok_reserve(key_scratch_t *W, size_t more)
{
    if (W->nrtok + more > W->rtokcap) {
        W->rtokcap = 2 * (W->nrtok + more);
        W->rtok = flint_realloc(W->rtok, W->rtokcap * sizeof(uint32_t));
    }
    return W->rtok + W->nrtok;
}

/*
 * Serialize the pairs into W->tok and set *hash.  The cone is written in depth-first
 * post-order from the roots, arguments in their stored order: a structural order, the same for
 * two cones that are equal up to a renaming of symbols (ordering by node id would not be: ids
 * depend on what other ranks built first).  Where the count and relations tests run (flags), a
 * node's count flags are written too, and with roles R each symbol's role and the compared
 * pairs' elements go to W->rtok (src/members.c sp_members_roles_*):
 * two stages equal in both pass or fail those tests alike (helper-75's review, session 42).
 * Returns 0, with no key, when the mark array cannot grow: the caller then memoizes nothing
 * (memoization is only a saving).
 */
static int key_build(const sp_ectx_struct *E, const pairs_t *P, key_scratch_t *W, uint64_t *hash,
                     sp_members_roles_t *R, const sp_stage_t *s, int flags)
{
    *hash = 0;
    W->ntok = 0;
    W->nrtok = 0;
    if (!scratch_fit(W, E))
        return 0;
    size_t rmax = R != NULL ? sp_members_roles_max(R) : 0;
    const uint32_t countflags = SP_NODE_AXSUM | SP_NODE_XSUM;
    if (R != NULL)
        sp_members_roles_reset(R);
    uint32_t *mark = W->mark;
    const uint32_t busy = UINT32_MAX;
    uint32_t nsym = 0, m = 0;
    W->ntok = 0;
    /* the number of pairs first (two tokens): it separates the node records from the roots at
       the end.  Tokens are 32-bit: a record is op, param (two tokens, low half first), nargs and
       the arguments' positions, so the serialization stays exact at half the size */
    uint32_t *t0 = tok_reserve(W, 2);
    t0[0] = (uint32_t)P->n;
    t0[1] = (uint32_t)((uint64_t)P->n >> 32);
    W->ntok = 2;
    for (int64_t i = 0; i < 2 * P->n; i++) {
        sp_expr_t root = (i & 1) ? P->model[i / 2] : P->plan[i / 2];
        if (root == SP_EXPR_NONE || mark[root] != 0)
            continue;
        size_t sp = 0;
        scratch_reserve(W, 1);
        W->stack[sp] = root;
        W->next[sp++] = 0;
        mark[root] = busy;
        while (sp > 0) {
            uint32_t id = W->stack[sp - 1];
            const sp_node_t *nd = &E->nodes[id];
            if (W->next[sp - 1] < nd->nargs) {
                uint32_t a = E->argv[nd->args + W->next[sp - 1]++];
                if (mark[a] == 0) {
                    scratch_reserve(W, sp + 1);
                    mark[a] = busy;
                    W->stack[sp] = a;
                    W->next[sp++] = 0;
                }
                continue;
            }
            sp--;
            int sym = nd->op == SP_OP_SYM;
            uint32_t *t = tok_reserve(W, 4 + nd->nargs);
            uint64_t param = sym ? nsym++ : (uint64_t)nd->param;
            *t++ = nd->op | (flags ? (nd->flags & countflags) << 8 : 0u);
            *t++ = (uint32_t)param;
            *t++ = (uint32_t)(param >> 32);
            *t++ = nd->nargs;
            for (uint32_t k = 0; k < nd->nargs; k++)
                *t++ = mark[E->argv[nd->args + k]] - 1;
            W->ntok += 4 + nd->nargs;
            if (sym && R != NULL) {
                uint32_t *rt = rtok_reserve(W, rmax);
                W->nrtok += sp_members_roles_sym(R, E, id, rt);
            }
            scratch_reserve(W, (size_t)m + 1);
            W->order[m++] = id;
            mark[id] = m;
        }
    }
    uint32_t *t = tok_reserve(W, 2 * (size_t)P->n);
    for (int64_t i = 0; i < 2 * P->n; i++) {
        sp_expr_t root = (i & 1) ? P->model[i / 2] : P->plan[i / 2];
        *t++ = root == SP_EXPR_NONE ? UINT32_MAX : mark[root] - 1;
    }
    W->ntok += 2 * (size_t)P->n;
    if (R != NULL && s != NULL) {
        size_t n = sp_members_roles_pairs(R, s, P->rank, P->index, P->n, &W->ptok, &W->ptokcap);
        memcpy(rtok_reserve(W, n), W->ptok, n * sizeof(uint32_t));
        W->nrtok += n;
    }
    for (uint32_t i = 0; i < m; i++)
        mark[W->order[i]] = 0;
    /* four independent lanes of two tokens each, so the multiplications overlap */
    uint64_t h[4] = {1469598103934665603u, 0x9e3779b97f4a7c15u, 0xc2b2ae3d27d4eb4fu,
                     0x165667b19e3779f9u};
    size_t i = 0;
    for (; i + 8 <= W->ntok; i += 8)
        for (int l = 0; l < 4; l++)
            h[l] = mixk(h[l] ^ ((uint64_t)W->tok[i + 2 * l] | (uint64_t)W->tok[i + 2 * l + 1] << 32));
    for (; i < W->ntok; i++)
        h[0] = mixk(h[0] ^ W->tok[i]);
    *hash = mixk(h[0] ^ mixk(h[1] ^ mixk(h[2] ^ mixk(h[3] ^ W->ntok))));
    return 1;
}

/* Is the key just built in W equal to K up to the roles (the same question)? */
static int key_is_struct(const key_scratch_t *W, uint64_t h, const stage_key_t *K)
{
    return K->hash == h && K->n == W->ntok && !memcmp(K->tok, W->tok, W->ntok * sizeof(uint32_t));
}

/* ... and in them (the same question, and the same answer of the count and relations tests)? */
static int key_is(const key_scratch_t *W, uint64_t h, const stage_key_t *K)
{
    return key_is_struct(W, h, K) && K->rn == W->nrtok &&
           (W->nrtok == 0 || !memcmp(K->rtok, W->rtok, W->nrtok * sizeof(uint32_t)));
}

/* Keep the key just built in W as K. */
static void key_keep(const key_scratch_t *W, uint64_t h, stage_key_t *K)
{
    K->n = W->ntok;
    K->hash = h;
    K->tok = flint_malloc((W->ntok ? W->ntok : 1) * sizeof(uint32_t));
    memcpy(K->tok, W->tok, W->ntok * sizeof(uint32_t));
    K->rn = W->nrtok;
    K->rtok = NULL;
    if (W->nrtok) {
        K->rtok = flint_malloc(W->nrtok * sizeof(uint32_t));
        memcpy(K->rtok, W->rtok, W->nrtok * sizeof(uint32_t));
    }
}

/* ---- solving one stage ---------------------------------------------------------------------- */

static char *fmt_cex(const sp_ectx_struct *E, const sp_result_t *r)
{
    /* symbols sorted by name for a readable, deterministic line */
    slong n = r->cex.n;
    slong *ord = flint_malloc((size_t)(n ? n : 1) * sizeof(slong));
    for (slong i = 0; i < n; i++)
        ord[i] = i;
    for (slong i = 1; i < n; i++) {
        slong t = ord[i], j = i - 1;
        while (j >= 0 && strcmp(sp_expr_sym_name(E, r->cex.syms[ord[j]]),
                                sp_expr_sym_name(E, r->cex.syms[t])) > 0) {
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = t;
    }
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    for (slong i = 0; i < n; i++) {
        char *v = fmpq_get_str(NULL, 10, r->cex.vals + ord[i]);
        sp_sbuf_printf(&b, "%s%s = %s", i ? ", " : "", sp_expr_sym_name(E, r->cex.syms[ord[i]]), v);
        flint_free(v);
    }
    flint_free(ord);
    return sp_sbuf_take(&b);
}

static char *strdup_flint(const char *s)
{
    size_t n = strlen(s);
    char *d = flint_malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

/*
 * Rank symmetry: a rank whose queries equal an earlier rank's up to a renaming of symbols asks
 * the same questions; its pairs get skip = 2.  A rank holding the very element ids of an earlier
 * rank (tp replicas after an all-reduce) is found by a hash table of id sequences, without a
 * key; the others are compared by key.  P holds each rank's pairs contiguously.
 */
/* Do the pairs f.. and a.. (len each) give the tests the same compared elements (of the dims
   only, or with full, of the cut axes' members too)?  Always where no test runs. */
static int same_pair_roles(sp_check_t *C, const sp_stage_t *s, key_scratch_t *W,
                           const pairs_t *P, int64_t f, int64_t a, int64_t len, int full)
{
    sp_members_roles_t *R = full ? key_roles(C, W) : key_roles_dims(C, W);
    return R == NULL || sp_members_roles_same_pairs(R, s, P->rank + f, P->index + f, P->rank + a,
                                                    P->index + a, len);
}

/* A pair's skip: 0 asked, 1 a replica's (an earlier pair of this rank), 2 a symmetric rank's,
   3 a symmetric rank's whose members' roles differ, 4 a replica's whose members' roles differ;
   the count and relations tests read the pairs asked and those of 3 and 4 */
static int skip_read(uint8_t k) { return k == 0 || k == 3 || k == 4; }

/* Is there a cut axis whose members the dims-only roles leave out? */
static int members_split(sp_check_t *C, key_scratch_t *W)
{
    return C->ncutoff > 0 && tests_run(C) && key_roles(C, W) != NULL;
}

/* How the pairs a.. (len) repeat the earlier pairs f..: 2 (the same question and the same
   tests: skipped), 3 (the same question, the members' roles differ: imported for the count and
   relations tests, not asked), 0 (not the same) */
static uint8_t repeat_kind(sp_check_t *C, const sp_stage_t *s, key_scratch_t *W,
                           const pairs_t *P, int64_t f, int64_t a, int64_t len, uint8_t same)
{
    if (!same_pair_roles(C, s, W, P, f, a, len, 0))
        return 0;
    if (members_split(C, W) && !same_pair_roles(C, s, W, P, f, a, len, 1))
        return 3;
    return same;
}

/*
 * Rank symmetry: a rank whose queries equal an earlier rank's up to a renaming of symbols asks
 * the same questions; its pairs get skip = 2.  A rank holding the very element ids of an earlier
 * rank (tp replicas after an all-reduce) is found by a hash table of id sequences, without a
 * key; the others are compared by key.  P holds each rank's pairs contiguously.  The keys
 * compare the reduced dims' roles: a cut axis's members, renamed in the cone's order, tell
 * every rank's own member apart even in a uniform plan.  So under the mesh cutoff a rank equal
 * in the dims' roles only is compared again with the members' roles (of the earlier ranks of
 * its class): equal to one, skipped; else skip = 3, the count and relations tests read its
 * pairs (the question is asked once; helper-76's review, session 42: a plan telling ranks of
 * another axis apart could otherwise hide a member's failing test behind a symmetric rank).
 */
static void skip_symmetric_ranks(sp_check_t *C, const sp_stage_t *s, const pairs_t *P,
                                 key_scratch_t *W, uint8_t *skip)
{
    const sp_ectx_struct *E = C->E;
    if (P->n == 0)
        return;
    int split = members_split(C, W);
    /* the ranks' runs [lo[g], lo[g + 1]) */
    int64_t ng = 1;
    for (int64_t i = 1; i < P->n; i++)
        ng += P->rank[i] != P->rank[i - 1];
    int64_t *lo = flint_malloc((size_t)(ng + 1) * sizeof(int64_t));
    ng = 0;
    for (int64_t i = 0; i < P->n; i++)
        if (i == 0 || P->rank[i] != P->rank[i - 1])
            lo[ng++] = i;
    lo[ng] = P->n;
    size_t tsize = 64;
    while (tsize < 2 * (size_t)ng)
        tsize *= 2;
    int64_t *first = flint_malloc(tsize * sizeof(int64_t)); /* a run index, -1: empty */
    for (size_t j = 0; j < tsize; j++)
        first[j] = -1;
    stage_key_t *rk = NULL, *fk = NULL; /* the classes' keys; with split, the members' keys */
    int *fcls = NULL;                   /* fk[j]'s class */
    int nrk = 0, ark = 0, nfk = 0, afk = 0;
    for (int64_t g = 0; g < ng; g++) {
        int64_t a = lo[g], len = lo[g + 1] - a;
        uint64_t hid = (uint64_t)len;
        for (int64_t i = a; i < a + len; i++)
            hid = mixk(hid ^ ((uint64_t)P->plan[i] << 32 | P->model[i]));
        size_t j = (size_t)hid & (tsize - 1);
        uint8_t same = 0;
        for (; first[j] >= 0 && !same; j = (j + 1) & (tsize - 1)) {
            int64_t f = lo[first[j]];
            if (lo[first[j] + 1] - f == len &&
                !memcmp(P->plan + f, P->plan + a, (size_t)len * sizeof(sp_expr_t)) &&
                !memcmp(P->model + f, P->model + a, (size_t)len * sizeof(sp_expr_t)))
                same = repeat_kind(C, s, W, P, f, a, len, 2);
        }
        if (!same) {
            first[j] = g;
            pairs_t sub = {P->plan + a, P->model + a, P->rank + a, P->index + a, len};
            uint64_t h;
            int keyed = key_build(E, &sub, W, &h, key_roles_dims(C, W), s, tests_run(C));
            int cls = -1;
            for (int k = nrk - 1; k >= 0 && keyed && cls < 0; k--)
                if (key_is(W, h, &rk[k]))
                    cls = k;
            if (keyed && cls < 0) {
                if (nrk == ark) {
                    ark = ark ? 2 * ark : 16;
                    rk = flint_realloc(rk, (size_t)ark * sizeof(stage_key_t));
                }
                key_keep(W, h, &rk[nrk++]);
            }
            if (keyed && split) {
                /* the members' roles of this run, against those of its class */
                int c = cls >= 0 ? cls : nrk - 1;
                int fkeyed = key_build(E, &sub, W, &h, key_roles(C, W), s, 1);
                same = cls >= 0 ? 3 : 0;
                for (int k = 0; k < nfk && same == 3 && fkeyed; k++)
                    if (fcls[k] == c && key_is(W, h, &fk[k]))
                        same = 2;
                if (same != 2 && fkeyed) {
                    if (nfk == afk) {
                        afk = afk ? 2 * afk : 16;
                        fk = flint_realloc(fk, (size_t)afk * sizeof(stage_key_t));
                        fcls = flint_realloc(fcls, (size_t)afk * sizeof(int));
                    }
                    fcls[nfk] = c;
                    key_keep(W, h, &fk[nfk++]);
                }
            } else if (cls >= 0) {
                same = 2;
            }
        }
        if (same)
            memset(skip + a, same, (size_t)len);
    }
    for (int k = 0; k < nrk; k++)
        key_free(&rk[k]);
    for (int k = 0; k < nfk; k++)
        key_free(&fk[k]);
    flint_free(rk);
    flint_free(fk);
    flint_free(fcls);
    flint_free(first);
    flint_free(lo);
}

/* The stage's values at the reduced sizes count elements (sp_engine_counts): UNKNOWN there, and
   the check is run again at the real sizes (src/check.c run_exact) */
static void stage_counted(sp_stage_t *s)
{
    s->status = SP_STAGE_UNKNOWN;
    s->why = SP_WHY_NONE;
    s->counted = 1;
    flint_free(s->reason);
    s->reason = strdup_flint("a sum over an axis adds terms that share a monomial, whose coefficient "
                             "is then a number of elements, which the reduced sizes change "
                             "(docs/soundness.md, \"Counts\")");
}

/* A proof at the reduced sizes holds at the real ones only for monomials the reduced sizes can
   hold (src/members.c): a stage whose monomials may hold more elements of a reduced dim than
   its smallest block is UNKNOWN there, and the real sizes are checked as for a count */
static void stage_held(sp_check_t *C, sp_stage_t *s, sp_ectx_t E, uint32_t len, const pairs_t *P,
                       const uint8_t *skip, const sp_expr_t *a, const sp_expr_t *b, int64_t nq,
                       key_scratch_t *W)
{
    int64_t *rk = flint_malloc((size_t)nq * sizeof(int64_t));
    int64_t *ix = flint_malloc((size_t)nq * sizeof(int64_t));
    for (int64_t i = 0, k = 0; i < P->n && k < nq; i++)
        if (skip_read(skip[i])) {
            rk[k] = P->rank[i];
            ix[k++] = P->index[i];
        }
    sp_members_fail_t f;
    int held = sp_members_test(C, E, len, s, a, b, rk, ix, nq, &W->members, &W->memberscap, &f);
    if (held) {
        s->held_dim = f.dim + 1;
        s->held = f.bound;
        s->held_lim = f.lim;
    }
    /* under --fast-shapes the stage stays proved: no proof at these sizes, said once by
       src/check.c (fast_gap) */
    if (held && C->opt.strict_shapes) {
        stage_counted(s);
        flint_free(s->reason);
        char what[200];
        sp_members_held_text(C, f.dim, f.bound, f.lim, what, sizeof what);
        sp_sbuf_t t;
        sp_sbuf_init(&t);
        sp_sbuf_printf(&t, "a monomial of %s %s, so a relation of its sums at the reduced sizes "
                           "may be none at the real sizes (docs/soundness.md, \"Relations among "
                           "sums over a reduced dim\")",
                       f.atom ? "an atom's argument" : "its values", what);
        s->reason = sp_sbuf_take(&t);
    }
    flint_free(rk);
    flint_free(ix);
}

static void solve_stage(sp_check_t *C, sp_stage_t *s, key_scratch_t *W)
{
    if (C->opt.lim.deadline_ns != 0 && sp_now_ns() > C->opt.lim.deadline_ns) {
        s->status = SP_STAGE_UNKNOWN; /* --timeout has passed: not started */
        s->why = SP_WHY_LIMIT_TIMEOUT;
        return;
    }
    pairs_t P;
#ifdef SP_DEBUG
    uint32_t len0 = C->E->len;
#endif
    int built = build_pairs(C, s, &P);
#ifdef SP_DEBUG
    /* the threads share the store: sp_stages_group built every node these pairs need */
    if (C->E->len != len0)
        abort();
#endif
    if (!built) {
        s->status = SP_STAGE_UNKNOWN;
        s->why = sp_why_full(C->E);
        pairs_free(&P);
        return;
    }
    /* symmetric ranks are skipped (their pairs were all proved, or we stopped); decided in the
       checker's store before anything is imported, so only distinct ranks reach the engine */
    uint8_t *skip = flint_calloc((size_t)(P.n ? P.n : 1), 1);
    skip_symmetric_ranks(C, s, &P, W, skip);
    /* replicas ask the same question: pairs seen shortly before in this stage (3: the members'
       roles differ, so the tests read the pair) */
    for (int64_t i = 0; i < P.n; i++)
        for (int64_t j = i - 1; j >= 0 && j >= i - 64 && skip_read(skip[i]); j--)
            if (P.plan[j] == P.plan[i] && P.model[j] == P.model[i]) {
                uint8_t k = repeat_kind(C, s, W, &P, j, i, 1, 1);
                if (k == 1 || (k == 3 && skip[i] == 0))
                    skip[i] = k == 1 ? 1 : 4;
            }
    /* imported: the pairs asked (0) and those only the tests read (3, 4) */
    int64_t nq = 0;
    for (int64_t i = 0; i < P.n; i++)
        nq += skip_read(skip[i]);
    /* the plan's values, then the model's: one import, so what they share is imported once */
    sp_expr_t *roots = flint_malloc((size_t)(2 * nq + 1) * sizeof(sp_expr_t));
    for (int64_t i = 0, k = 0; i < P.n; i++)
        if (skip_read(skip[i])) {
            roots[k] = P.plan[i];
            roots[nq + k++] = P.model[i];
        }
    sp_engine_t *S = sp_engine_new(&C->opt.lim, C->opt.seed ^ (uint64_t)(s->id + 1) * 0x9e3779b97f4a7c15u);
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_expr_t *ab = flint_malloc((size_t)(2 * nq + 1) * sizeof(sp_expr_t)), *a = ab, *b = ab + nq;
    int ok = nq == 0 || sp_expr_import(E, C->E, roots, (size_t)(2 * nq), ab);
    uint32_t imported = sp_expr_count(E);
    flint_free(roots);
    s->status = SP_STAGE_PROVED;
    if (!ok) {
        s->status = SP_STAGE_UNKNOWN;
        s->why = sp_why_full(E);
    }
    /* at reduced sizes a sum over an axis whose terms share a monomial counts elements: a proof
       there says nothing about the real sizes (docs/soundness.md, "Counts"); a difference is
       still one, lifted to the model's inputs like any other */
    sp_expr_t at = SP_EXPR_NONE;
    /* a reduced dim or a cut mesh axis (its members: docs/soundness.md, "Mesh cutoff") */
    int reduced = sp_check_reduced(C) || C->ncutoff > 0;
    int counts = ok && nq > 0 && !C->opt.real_sizes && reduced ? sp_engine_counts(S, &at) : 0;
    if (counts == -2) { /* the test ran out of time: the stage is undecided, not counted */
        ok = counts = 0;
        s->status = SP_STAGE_UNKNOWN;
        s->why = sp_engine_time_why(S);
    }
    sp_result_t r;
    sp_result_init(&r);
    for (int64_t i = 0, q = 0; i < P.n && ok && !s->test_only; i++) {
        if (skip[i] == 2) {
            s->symmetric++;
            continue;
        }
        if (skip[i] == 1)
            continue;
        int64_t k = q++;
        s->symmetric += skip[i] == 3;
        if (skip[i] != 0) /* read by the tests only */
            continue;
        s->elements++;
        sp_answer_t ans = sp_equiv(S, a[k], b[k], &r);
        if (ans == SP_EQUAL) {
            /* equal wherever both are defined; EQUIVALENT also needs the plan defined wherever
               the model is (docs/soundness.md, "Definedness") */
            slong bits = r.probabilistic_bits;
            ans = sp_defined_implied(S, a[k], b[k], &r);
            if (ans == SP_EQUAL) {
                if (bits > 0 && (s->prob_bits == 0 || bits < s->prob_bits))
                    s->prob_bits = bits;
                continue;
            }
        } else if (ans == SP_UNKNOWN) {
            /* equality undecided (often a branch where the plan is undefined): a point where
               the model is defined and the plan is not still refutes it */
            sp_result_t d;
            sp_result_init(&d);
            if (sp_defined_implied(S, a[k], b[k], &d) == SP_DIFFERENT) {
                sp_result_clear(&r);
                r = d;
                ans = SP_DIFFERENT;
            } else {
                sp_result_clear(&d);
            }
        }
        s->status = ans == SP_DIFFERENT ? SP_STAGE_FAILED : SP_STAGE_UNKNOWN;
        s->why = r.why;
        sp_stage_fail_at(s, P.rank[i]);
        s->fail_index = P.index[i];
        int64_t ls[SP_MAX_DIMS];
        sp_layout_local_shape(&C->mesh, &s->layout, P.rank[i], ls);
        s->fail_ndim = s->layout.ndim;
        memcpy(s->fail_shape, ls, sizeof ls);
        char *pv = sp_engine_print_nf(S, a[k], 400);
        char *mv = sp_engine_print_nf(S, b[k], 400);
        if (pv == NULL)
            pv = sp_expr_print(E, a[k], 400);
        if (mv == NULL)
            mv = sp_expr_print(E, b[k], 400);
        s->plan_value = strdup_flint(pv);
        s->model_value = strdup_flint(mv);
        flint_free(pv);
        flint_free(mv);
        if (ans == SP_DIFFERENT) {
            char *cx = fmt_cex(E, &r);
            s->cex = strdup_flint(cx);
            flint_free(cx);
            sp_sbuf_t t;
            sp_sbuf_init(&t);
            if (r.detail != NULL) /* sp_defined_implied: the plan undefined there */
                sp_sbuf_printf(&t, "plan undefined (%s) where the model = %s (%s)", r.detail,
                               r.cex.rhs_value, r.cex.exact ? "exact" : "Arb ball");
            else
                sp_sbuf_printf(&t, "plan = %s, model = %s (%s)", r.cex.lhs_value, r.cex.rhs_value,
                               r.cex.exact ? "exact" : "Arb balls, disjoint");
            s->cex_values = sp_sbuf_take(&t);
        } else if (r.why == SP_WHY_DEFINEDNESS) {
            sp_sbuf_t t;
            sp_sbuf_init(&t);
            sp_sbuf_printf(&t, "cannot show the plan's %s wherever the model is defined", r.detail);
            s->reason = sp_sbuf_take(&t);
        }
        break;
    }
    s->counts = counts || sp_engine_counted(S) != SP_EXPR_NONE;
    if (s->status == SP_STAGE_PROVED && s->counts)
        stage_counted(s); /* the test, or a case split's leaf, counted */
    if (s->status == SP_STAGE_PROVED && nq > 0 && !C->opt.real_sizes && reduced)
        stage_held(C, s, E, imported, &P, skip, a, b, nq, W);
    sp_result_clear(&r);
    flint_free(skip);
    flint_free(ab);
    sp_engine_free(S);
    pairs_free(&P);
}

/* ---- the pool ----------------------------------------------------------------------------- */

typedef struct {
    sp_check_t *C;
    int *todo;
    int ntodo;
    int next;
    int done;
    pthread_mutex_t mu;
    int64_t start_ns;
    int shown;
} pool_t;

static void *worker(void *arg)
{
    pool_t *p = arg;
    key_scratch_t W;
    memset(&W, 0, sizeof W);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int k = p->next < p->ntodo ? p->todo[p->next++] : -1;
        pthread_mutex_unlock(&p->mu);
        if (k < 0)
            break;
        int64_t t0 = sp_now_ns();
        solve_stage(p->C, &p->C->stages[k], &W);
        p->C->stages[k].solve_ns = sp_now_ns() - t0;
        pthread_mutex_lock(&p->mu);
        p->done++;
        /* a progress line on a terminal, once the run has taken a second */
        if (p->C->opt.progress && sp_now_ns() - p->start_ns > 1000000000) {
            fprintf(stderr, "\rshardproof: %d/%d stages proved or refuted", p->done, p->ntodo);
            fflush(stderr);
            p->shown = 1;
        }
        pthread_mutex_unlock(&p->mu);
    }
    scratch_clear(&W);
    flint_cleanup();
    return NULL;
}

static void run_pool(sp_check_t *C, int *todo, int n)
{
    if (n == 0)
        return;
    int jobs = C->opt.jobs > 0 ? C->opt.jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    if (jobs > n)
        jobs = n;
    pool_t p = {C, todo, n, 0, 0, PTHREAD_MUTEX_INITIALIZER, sp_now_ns(), 0};
    if (jobs == 1) {
        worker(&p);
    } else {
        sp_members_roles_freeze(C, 1); /* the threads share the roles' table: read-only */
        pthread_t *th = flint_malloc((size_t)jobs * sizeof(pthread_t));
        int started = 0;
        for (int i = 0; i < jobs; i++)
            if (pthread_create(&th[i], NULL, worker, &p) == 0)
                started++;
            else
                break;
        if (started == 0)
            worker(&p);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        flint_free(th);
        sp_members_roles_freeze(C, 0);
    }
    if (p.shown)
        fprintf(stderr, "\r\033[K");
}

/*
 * Memoization by key, one stage at a time in stage order: G->rep[i] is the first earlier
 * stage whose key equals stage i's (i itself if none).  The kept keys are bounded in total
 * (--max-memo-keys, by default 2^26 32-bit tokens, 256 MB, as many bytes as the 2^25 64-bit
 * tokens of before session 14): a stage past the bound is still keyed and can be memoized onto
 * a kept one, but its own key is not kept, so later stages do not memoize onto it (they are
 * proved themselves; memoization is only a saving; merge proves again what a shard memoized
 * where a whole run would not: src/shard.c).  Without the bound a plan whose stages are not
 * cut (every stage's cone the whole run) kept a copy of the run per stage: 24 GB and the
 * kernel's OOM killer for the 2-layer deepseek3 dp2 ep2 tp2 plan without lineage.
 */
typedef struct {
    stage_key_t *keys;
    int *rep;    /* the first stage with the same key, roles included (itself: none) */
    int *srep;   /* the first such representative with the same key up to the roles */
    size_t kept; /* tokens of the kept keys */
    key_scratch_t W;
} grouping_t;

static void grouping_init(grouping_t *G, int n)
{
    memset(G, 0, sizeof *G);
    G->keys = flint_calloc((size_t)(n ? n : 1), sizeof(stage_key_t));
    G->rep = flint_malloc((size_t)(n ? n : 1) * sizeof(int));
    G->srep = flint_malloc((size_t)(n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        G->rep[i] = G->srep[i] = i;
}

/* G->keys are freed; G->rep is returned to the caller, who frees it. */
static int *grouping_done(grouping_t *G, int n)
{
    scratch_clear(&G->W);
    for (int i = 0; i < n; i++)
        key_free(&G->keys[i]);
    flint_free(G->keys);
    return G->rep;
}

/*
 * A pending reduction over a cut mesh axis marks its sum as a count (src/mesh.c group_sum,
 * SP_NODE_AXSUM) when a stage's pairs are built, and the keys write the marks: a node shared
 * with an earlier stage would get its mark after that stage's key was made (helper-76's review,
 * session 42).  So every stage's pairs are built once before the first key (the marks are then
 * all set, and the threads' build_pairs write none).  Only a cut mesh axis marks.
 */
static void mark_pending_sums(sp_check_t *C, const uint8_t *mine)
{
    if (C->ncutoff == 0)
        return;
    for (int i = 0; i < C->nstages; i++) {
        pairs_t P;
        if (C->stages[i].layout.npartial == 0 || (mine != NULL && !mine[i]))
            continue;
        build_pairs(C, &C->stages[i], &P);
        pairs_free(&P);
    }
}

/* Before the first key of a solving phase: the pending sums' marks (above), and the roles'
   table (src/members.c), which the caller frees with sp_members_roles_end once the phase's
   threads are done */
static void keying_begin(sp_check_t *C, const uint8_t *mine)
{
    mark_pending_sums(C, mine);
    sp_members_roles_begin(C);
}

static void group_one(sp_check_t *C, grouping_t *G, int i)
{
    pairs_t P;
    sp_stage_t *s = &C->stages[i];
    s->memo_of = -1;
    G->rep[i] = G->srep[i] = i;
    if (!build_pairs(C, s, &P)) {
        pairs_free(&P);
        return;
    }
    uint64_t h;
    int keyed = key_build(C->E, &P, &G->W, &h, key_roles(C, &G->W), s, tests_run(C));
    pairs_free(&P);
    s->key = h;
    if (!keyed)
        return; /* its own representative, and nobody's */
    for (int j = 0; j < i; j++)
        if (G->rep[j] == j && G->keys[j].tok && key_is_struct(&G->W, h, &G->keys[j])) {
            if (G->srep[i] == i)
                G->srep[i] = j;
            if (key_is(&G->W, h, &G->keys[j])) {
                G->rep[i] = j;
                return;
            }
        }
    if (G->kept + G->W.ntok + G->W.nrtok <= (size_t)C->opt.max_memo_keys) {
        key_keep(&G->W, h, &G->keys[i]);
        G->kept += G->W.ntok + G->W.nrtok;
    }
}

void sp_stages_prove(sp_check_t *C, int *ids, int n)
{
    run_pool(C, ids, n);
}

int *sp_stages_group(sp_check_t *C, int **srep)
{
    grouping_t G;
    grouping_init(&G, C->nstages);
    keying_begin(C, NULL);
    for (int i = 0; i < C->nstages; i++)
        group_one(C, &G, i);
    *srep = G.srep;
    int *rep = grouping_done(&G, C->nstages);
    sp_members_roles_end(C);
    return rep;
}

/*
 * A plan the reference executor already found wrong, whose lineage was inferred (src/infer.c):
 * the stages in plan order, each keyed and proved in turn, up to the first that fails (it
 * locates the fault; the stages after it, where the plan has gone astray and the values are
 * largest, are neither keyed nor attempted).
 */
static void solve_up_to_failure(sp_check_t *C)
{
    int n = C->nstages;
    grouping_t G;
    grouping_init(&G, n);
    keying_begin(C, NULL);
    int stop = 0;
    for (int i = 0; i < n; i++) {
        sp_stage_t *s = &C->stages[i];
        if (stop) {
            s->memo_of = -1;
            s->status = SP_STAGE_UNKNOWN;
            s->reason = sp_strdup("not attempted: an earlier stage failed, and the reference "
                                  "executor found the plan's outputs wrong");
            continue;
        }
        group_one(C, &G, i);
        int r = G.rep[i];
        if (r != i && C->stages[r].status == SP_STAGE_PROVED) {
            s->status = SP_STAGE_MEMO;
            s->memo_of = r;
            continue;
        }
        int one = i; /* a new key, or one whose representative was not proved */
        run_pool(C, &one, 1);
        stop = s->status == SP_STAGE_FAILED;
    }
    flint_free(G.srep);
    flint_free(grouping_done(&G, n));
    sp_members_roles_end(C);
}

sp_status_t sp_stages_solve(sp_check_t *C)
{
    if (C->infer_diverged && C->opt.shard_count <= 1) {
        solve_up_to_failure(C);
        return SP_OK;
    }
    int n = C->nstages;
    /* with --shard i/N, the stages of shard i, keyed among themselves (the others' values may
       be hollow: src/shard_exec.c) */
    grouping_t G;
    grouping_init(&G, n);
    uint8_t *mine = flint_malloc((size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        mine[i] = (uint8_t)sp_shard_mine(C, i);
    keying_begin(C, mine);
    for (int i = 0; i < n; i++) {
        G.rep[i] = i;
        C->stages[i].memo_of = -1;
        if (mine[i])
            group_one(C, &G, i);
    }
    int *srep = G.srep;
    int *rep = grouping_done(&G, n);
    /* representatives first: those of a new question, then those asking a proved one's with
       symbols of other roles, whose count and relations tests alone run (the question is
       answered: docs/soundness.md, "Memoization"), then members of groups whose
       representative was not proved */
    int *todo = flint_malloc((size_t)(n ? n : 1) * sizeof(int));
    int nt = 0;
    for (int i = 0; i < n; i++)
        if (rep[i] == i && srep[i] == i && mine[i])
            todo[nt++] = i;
    run_pool(C, todo, nt);
    nt = 0;
    for (int i = 0; i < n; i++)
        if (rep[i] == i && srep[i] != i && mine[i]) {
            C->stages[i].test_only = C->stages[srep[i]].status == SP_STAGE_PROVED;
            todo[nt++] = i;
        }
    run_pool(C, todo, nt);
    for (int k = 0; k < nt; k++) {
        sp_stage_t *s = &C->stages[todo[k]];
        if (s->test_only && s->status == SP_STAGE_PROVED) {
            s->status = SP_STAGE_MEMO;
            s->memo_of = srep[todo[k]];
        }
        s->test_only = 0;
    }
    nt = 0;
    for (int i = 0; i < n; i++) {
        if (rep[i] == i || !mine[i])
            continue;
        if (C->stages[rep[i]].status == SP_STAGE_PROVED ||
            C->stages[rep[i]].status == SP_STAGE_MEMO) {
            C->stages[i].status = SP_STAGE_MEMO;
            C->stages[i].memo_of = C->stages[rep[i]].status == SP_STAGE_MEMO
                                       ? C->stages[rep[i]].memo_of
                                       : rep[i];
        } else if (C->stages[rep[i]].counted) {
            stage_counted(&C->stages[i]); /* a renaming of a sum that counts counts */
            C->stages[i].held_dim = C->stages[rep[i]].held_dim;
            C->stages[i].held = C->stages[rep[i]].held;
            C->stages[i].held_lim = C->stages[rep[i]].held_lim;
            if (C->stages[rep[i]].reason != NULL) {
                flint_free(C->stages[i].reason);
                C->stages[i].reason = strdup_flint(C->stages[rep[i]].reason);
            }
        } else {
            todo[nt++] = i;
        }
    }
    run_pool(C, todo, nt);
    sp_members_roles_end(C);
    flint_free(mine);
    flint_free(rep);
    flint_free(srep);
    flint_free(todo);
    return SP_OK;
}

/* Write each stage's query (all its element pairs) as an SMT-LIB2 script DIR/stage-<id>.smt2. */
int sp_stages_export_smt2(sp_check_t *C, const char *dir, char *err, size_t errlen)
{
    for (int i = 0; i < C->nstages; i++) {
        pairs_t P;
        if (!build_pairs(C, &C->stages[i], &P)) {
            pairs_free(&P);
            snprintf(err, errlen, "stage %d: could not build its queries", i + 1);
            return 0;
        }
        char *text = sp_smt2_query(C->E, P.plan, P.model, P.n);
        pairs_free(&P);
        char path[4096];
        snprintf(path, sizeof path, "%s/stage-%d.smt2", dir, i + 1);
        FILE *f = fopen(path, "w");
        if (f == NULL) {
            flint_free(text);
            snprintf(err, errlen, "cannot write %s", path);
            return 0;
        }
        fprintf(f, "; shardproof stage %d: plan '%s' ~ model '%s' (%s:%u)\n", i + 1,
                C->stages[i].plan_name, C->stages[i].model_name,
                C->stages[i].plan_loc.file ? C->stages[i].plan_loc.file : "?", C->stages[i].plan_loc.line);
        fputs(text, f);
        fclose(f);
        flint_free(text);
    }
    return 1;
}
