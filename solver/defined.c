/* defined.c: definedness obligations, and whether one expression is defined wherever another is. */
#include <flint/flint.h>
#include "defined.h"

#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "nf.h"
#include "sbuf.h"

/*
 * docs/soundness.md ("Definedness") states the claim and the rules; this file implements them.
 *
 * A partial node is a division (obligation: denominator != 0), a negative power (base != 0), a
 * log or rsqrt (argument > 0) or a sqrt (argument >= 0).  A site is a partial node with one guard
 * under which it is evaluated: a guard is a set of literals "c != 0" / "c == 0", one per where on
 * a path from the root to the node, c the where's condition.  Literals and obligations are keyed
 * by normal forms up to a nonzero constant factor, so two keys are equal only for conditions that
 * are equivalent wherever their expressions are defined.
 *
 * Two facts about normal forms are used.  (1) The engine's claim: expressions with equal normal
 * forms (up to a constant c) are equal (up to c) wherever both are defined.  (2) For u whose cone
 * has no where (every node is evaluated, strictly): at a point where u is defined its normal form
 * num/den evaluates, each atom at its value, to u's value, with den and every variable of a
 * negative exponent nonzero there (normal form operations only cancel factors of denominators
 * that were nonzero).  So for such u, "u != 0" is "num != 0" and the signs of num's and den's
 * terms bound u's sign.  A where breaks (2): where(gt(x, 0), 1/x, 0) is [x > 0] * x^-1, defined
 * at x = 0 where x^-1 is not; obligations over where-cones use (1) only.
 */

enum { OB_NZ = 0, OB_POS, OB_NNEG }; /* the argument must be != 0, > 0, >= 0 */

/* A key is a normal form id, or KEY_TAG | expression id when a limit stopped the normal form
   (equal only for the same expression then). */
#define KEY_TAG (UINT64_C(1) << 32)
#define GUARD_NONE UINT32_MAX
#define GUARD_SETS 8  /* guards kept per node (past it: lhs keeps their meet, rhs drops paths) */
#define GUARD_LITS 16 /* literals per guard (past it: lhs keeps the guard, rhs drops the path) */
#define WITNESS_TRIES 6
#define WITNESS_VARS 4
#define WITNESS_POINTS 48 /* points evaluated per query, over all targets (each evaluation may
                             raise Arb precision up to 4096 bits on a large cone) */

/* Facts about one node, as a partial node and as a where-condition. */
typedef struct {
    sp_expr_t node;
    uint8_t obl_done, lit_done;
    uint8_t kind;        /* OB_* */
    uint8_t structural;  /* the obligation holds wherever the argument is defined */
    int8_t flip;         /* sign of the constant factor between the argument and kwhole */
    int8_t lit_const;    /* as a condition: 1 nonzero, 0 zero wherever defined; -1 neither */
    uint32_t fac, nfac;  /* OB_NZ, OB_POS over a where-free argument: keys of the factors of its
                            numerator whose nonvanishing is not structural (D->keys[fac ..)) */
    uint64_t kwhole;     /* key of the argument (its normal form up to a constant) */
    uint64_t klit;       /* as a condition: key of the condition */
} info_t;

typedef struct {
    size_t off;  /* literals D->lits[off .. off + len), ascending */
    uint32_t len;
    uint64_t hash;
} guard_t;

struct sp_defined_cache {
    uint32_t *free;      /* free[e] != 0: no obligation in e's cone that is not structural */
    uint8_t *where;      /* where[e] != 0: a where node in e's cone */
    uint32_t nfree, afree;
    info_t *info;
    uint32_t ninfo, ainfo;
    uint32_t *imap;      /* node -> info index + 1, open addressing */
    uint32_t isize;
    uint64_t *keys;
    size_t nkeys, akeys;
    uint64_t *lits;
    size_t nlits, alits;
    guard_t *g;          /* guard 0 is the empty guard */
    uint32_t ng, ag;
    uint32_t *gmap;      /* guard hash table: id + 1 */
    uint32_t gsize;
};

void sp_defined_cache_free(struct sp_defined_cache *D)
{
    if (D == NULL)
        return;
    flint_free(D->free);
    flint_free(D->where);
    flint_free(D->info);
    flint_free(D->imap);
    flint_free(D->keys);
    flint_free(D->lits);
    flint_free(D->g);
    flint_free(D->gmap);
    flint_free(D);
}

/* Has the query's deadline passed?  (S->why may hold an older reason.) */
static int timed_out(const sp_engine_t *S)
{
    return S->deadline_ns != 0 && sp_now_ns() > S->deadline_ns;
}

/* A 64-bit mix (eval.h's bijection, with a fixed seed). */
static uint64_t mix(uint64_t h) { return sp_fp_hash(UINT64_C(0x5bd1e9955bd1e995), h); }

/* ---- nodes ---------------------------------------------------------------------------------- */

/* If e is a partial operation: its kind and argument.  A constant argument in the domain is not
   an obligation. */
static int partial_of(const sp_ectx_struct *E, sp_expr_t e, int *kind, sp_expr_t *arg)
{
    const sp_node_t *nd = &E->nodes[e];
    sp_expr_t u;
    int k;
    switch ((sp_op_t)nd->op) {
    case SP_OP_DIV: u = sp_expr_arg(E, e, 1); k = OB_NZ; break;
    case SP_OP_POW:
        if (nd->param >= 0)
            return 0;
        u = sp_expr_arg(E, e, 0);
        k = OB_NZ;
        break;
    case SP_OP_LOG: case SP_OP_RSQRT: u = sp_expr_arg(E, e, 0); k = OB_POS; break;
    case SP_OP_SQRT: u = sp_expr_arg(E, e, 0); k = OB_NNEG; break;
    default: return 0;
    }
    if (E->nodes[u].op == SP_OP_CONST) {
        int s = fmpq_sgn(sp_expr_const(E, u));
        if (k == OB_NZ ? s != 0 : k == OB_POS ? s > 0 : s >= 0)
            return 0;
    }
    *kind = k;
    *arg = u;
    return 1;
}

/* Extend free[] and where[] to every node of the store: free unless a partial node is in the
   cone. */
static void free_grow(struct sp_defined_cache *D, const sp_ectx_struct *E)
{
    if (E->len > D->afree) {
        uint32_t a = E->len + E->len / 2 + 16;
        D->free = flint_realloc(D->free, (size_t)a * sizeof(uint32_t));
        D->where = flint_realloc(D->where, a);
        D->afree = a;
    }
    for (uint32_t e = D->nfree; e < E->len; e++) {
        int k;
        sp_expr_t u;
        uint32_t f = e == 0 || !partial_of(E, e, &k, &u);
        uint8_t w = e != 0 && E->nodes[e].op == SP_OP_WHERE;
        for (uint32_t i = 0; e != 0 && i < E->nodes[e].nargs; i++) {
            f = f && D->free[sp_expr_arg(E, e, i)];
            w = w || D->where[sp_expr_arg(E, e, i)];
        }
        D->free[e] = f;
        D->where[e] = w;
    }
    D->nfree = E->len;
}

/* The facts of node e, created empty on first use.  The pointer is valid until the next call. */
static info_t *info_of(struct sp_defined_cache *D, sp_expr_t e)
{
    if (2 * (D->ninfo + 1) > D->isize) {
        uint32_t size = D->isize ? 2 * D->isize : 256;
        uint32_t *t = flint_calloc(size, sizeof(uint32_t));
        for (uint32_t i = 0; i < D->ninfo; i++) {
            uint32_t j = (uint32_t)mix(D->info[i].node) & (size - 1);
            while (t[j])
                j = (j + 1) & (size - 1);
            t[j] = i + 1;
        }
        flint_free(D->imap);
        D->imap = t;
        D->isize = size;
    }
    uint32_t j = (uint32_t)mix(e) & (D->isize - 1);
    while (D->imap[j]) {
        if (D->info[D->imap[j] - 1].node == e)
            return &D->info[D->imap[j] - 1];
        j = (j + 1) & (D->isize - 1);
    }
    if (D->ninfo == D->ainfo) {
        D->ainfo = D->ainfo ? 2 * D->ainfo : 128;
        D->info = flint_realloc(D->info, (size_t)D->ainfo * sizeof(info_t));
    }
    info_t *in = &D->info[D->ninfo];
    memset(in, 0, sizeof(*in));
    in->node = e;
    in->flip = 1;
    in->lit_const = -1;
    D->imap[j] = ++D->ninfo;
    return in;
}

static void key_push(struct sp_defined_cache *D, uint64_t k)
{
    if (D->nkeys == D->akeys) {
        D->akeys = D->akeys ? 2 * D->akeys : 128;
        D->keys = flint_realloc(D->keys, D->akeys * sizeof(uint64_t));
    }
    D->keys[D->nkeys++] = k;
}

/* ---- signs by structure --------------------------------------------------------------------- */

enum { SG_UNKNOWN = 0, SG_ZERO, SG_POS, SG_NNEG, SG_NEG, SG_NPOS };

/*
 * The sign of a monomial (coefficient 1) wherever its normal form evaluates: 2 positive, 1
 * nonnegative, 0 unknown.  exp and Phi atoms are positive; sqrt, [d > 0] and [d = 0] atoms and
 * even powers of anything are nonnegative, and positive with a negative exponent (then nonzero).
 */
static int mono_sign(const sp_engine_t *S, uint32_t m)
{
    int cls = 2;
    const sp_vpow_t *f = sp_mono_factors(&S->M, m);
    for (uint32_t i = 0; i < sp_mono_nfactors(&S->M, m); i++) {
        uint8_t kind = S->var[f[i].var].kind;
        if (kind == SP_VAR_EXP || kind == SP_VAR_PHI)
            continue;
        if (f[i].exp % 2 == 0 || kind == SP_VAR_SQRT || kind == SP_VAR_POS || kind == SP_VAR_ZERO) {
            if (f[i].exp > 0)
                cls = 1;
            continue;
        }
        return 0;
    }
    return cls;
}

/* The sign of a polynomial whose terms all have one sign, or SG_UNKNOWN. */
static int poly_sign(const sp_engine_t *S, const sp_poly_struct *p)
{
    if (p->len == 0)
        return SG_ZERO;
    int pos = 0, neg = 0, strict_pos = 0, strict_neg = 0;
    for (slong i = 0; i < p->len; i++) {
        int c = mono_sign(S, p->m[i]);
        if (c == 0)
            return SG_UNKNOWN;
        if (fmpq_sgn(p->c + i) > 0) {
            pos = 1;
            strict_pos |= c == 2;
        } else {
            neg = 1;
            strict_neg |= c == 2;
        }
    }
    if (pos && neg)
        return SG_UNKNOWN;
    if (pos)
        return strict_pos ? SG_POS : SG_NNEG;
    return strict_neg ? SG_NEG : SG_NPOS;
}

static int sg_nonneg(int s) { return s == SG_POS || s == SG_NNEG; }
static int sg_nonpos(int s) { return s == SG_NEG || s == SG_NPOS; }

/* Does the obligation on u = num/den hold by the signs of num and den?  (den != 0 where u is
   defined, so a nonnegative den is positive.) */
static int holds_by_structure(int kind, int sn, int sd)
{
    switch (kind) {
    case OB_NZ: return sn == SG_POS || sn == SG_NEG;
    case OB_POS: return (sn == SG_POS && sg_nonneg(sd)) || (sn == SG_NEG && sg_nonpos(sd));
    default:
        return sn == SG_ZERO || (sg_nonneg(sn) && sg_nonneg(sd)) || (sg_nonpos(sn) && sg_nonpos(sd));
    }
}

/* ---- keys ----------------------------------------------------------------------------------- */

/* The key of p up to a nonzero constant (normalized: content 1, positive leading coefficient),
   and the sign of that constant in *flip; fallback (an expression tag) on a limit. */
static uint64_t poly_key(sp_engine_t *S, const sp_poly_t p, uint64_t fallback, int *flip)
{
    int f = 1;
    sp_nfid_t a = sp_nf_poly(S, p);
    sp_nfid_t n = a == SP_NF_FAIL ? SP_NF_FAIL : sp_nf_normalize_sign(S, a, &f);
    if (flip != NULL)
        *flip = n == SP_NF_FAIL ? 1 : f;
    return n == SP_NF_FAIL ? fallback : n;
}

/*
 * Push the keys of the factors of num (the numerator of a where-free normal form) whose
 * nonvanishing is not structural: num = g * q with g its monomial content; num != 0 exactly when
 * every variable of g with a positive exponent is nonzero (exp and Phi atoms always are;
 * negative exponents are nonzero by fact (2); sqrt(w) != 0 exactly when w's numerator is, which
 * is factored in turn) and q != 0.  Returns 0 on a limit.
 */
static int nz_factors(struct sp_defined_cache *D, sp_engine_t *S, const sp_poly_t num, uint64_t fallback)
{
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    sp_poly_t p;
    sp_poly_init(p);
    slong nw = 1, aw = 4;
    sp_poly_struct *work = flint_malloc(aw * sizeof(sp_poly_struct));
    sp_poly_init(work);
    sp_poly_set(work, num);
    int ok = 1;
    while (nw > 0) {
        sp_poly_t w;
        *w = work[--nw];
        if (ok && w->len == 0) {
            key_push(D, poly_key(S, w, fallback, NULL)); /* never nonzero */
        } else if (ok) {
            uint32_t g = sp_poly_mono_content(&S->M, w);
            ok = g != SP_MONO_FAIL;
            uint32_t nf = ok ? sp_mono_nfactors(&S->M, g) : 0;
            sp_vpow_t *f = flint_malloc((nf ? nf : 1) * sizeof(sp_vpow_t));
            if (nf)
                memcpy(f, sp_mono_factors(&S->M, g), nf * sizeof(sp_vpow_t));
            for (uint32_t i = 0; i < nf && ok; i++) {
                uint8_t kind = S->var[f[i].var].kind;
                if (f[i].exp < 0 || kind == SP_VAR_EXP || kind == SP_VAR_PHI)
                    continue;
                if (kind == SP_VAR_SQRT) {
                    if (nw == aw) {
                        aw *= 2;
                        work = flint_realloc(work, aw * sizeof(sp_poly_struct));
                    }
                    sp_poly_init(work + nw);
                    sp_poly_set(work + nw++, sp_nf_get(S, sp_var_arg(S, f[i].var, 0))->num);
                    continue;
                }
                uint32_t m = sp_mono_var(&S->M, f[i].var, 1);
                ok = m != SP_MONO_FAIL;
                if (ok) {
                    sp_poly_set_mono(p, m, one);
                    key_push(D, poly_key(S, p, fallback, NULL));
                }
            }
            flint_free(f);
            if (ok && w->len > 1) {
                uint32_t inv = sp_mono_pow(&S->M, g, -1);
                ok = inv != SP_MONO_FAIL && sp_poly_mul_mono(&S->M, p, w, inv);
                int sg = ok ? poly_sign(S, p) : SG_UNKNOWN;
                if (ok && sg != SG_POS && sg != SG_NEG)
                    key_push(D, poly_key(S, p, fallback, NULL));
            }
        }
        sp_poly_clear(w);
    }
    flint_free(work);
    sp_poly_clear(p);
    fmpq_clear(one);
    return ok;
}

/* Fill the obligation facts of partial node e.  Returns 0 if the time limit stopped it (then
   nothing is cached). */
static int obl_facts(struct sp_defined_cache *D, sp_engine_t *S, sp_expr_t e)
{
    if (info_of(D, e)->obl_done)
        return 1;
    int kind;
    sp_expr_t u;
    partial_of(S->E, e, &kind, &u);
    sp_nfid_t a = sp_nf_of_expr(S, u);
    if (a == SP_NF_FAIL && timed_out(S))
        return 0;
    uint64_t tag = KEY_TAG | u, kwhole = tag;
    int flip = 1, structural = 0;
    size_t fac = D->nkeys;
    if (a != SP_NF_FAIL) {
        int plain = !D->where[u];
        const sp_nf_struct *x = sp_nf_get(S, a);
        structural = plain && holds_by_structure(kind, poly_sign(S, x->num), poly_sign(S, x->den));
        if (!structural) {
            sp_nfid_t n = sp_nf_normalize_sign(S, a, &flip);
            if (n == SP_NF_FAIL)
                flip = 1;
            else
                kwhole = n;
        }
        if (!structural && plain && kind != OB_NNEG) {
            sp_poly_t num; /* a copy: new normal forms may move S->nf */
            sp_poly_init(num);
            sp_poly_set(num, sp_nf_get(S, a)->num);
            if (!nz_factors(D, S, num, tag)) {
                D->nkeys = fac;
                key_push(D, tag);
            }
            sp_poly_clear(num);
        }
    }
    info_t *in = info_of(D, e);
    in->obl_done = 1;
    in->kind = (uint8_t)kind;
    in->structural = (uint8_t)structural;
    in->flip = (int8_t)flip;
    in->kwhole = kwhole;
    in->fac = (uint32_t)fac;
    in->nfac = (uint32_t)(D->nkeys - fac);
    return 1;
}

/* Fill the literal facts of where-condition c (keyed by its normal form up to a constant: by
   fact (1), "c != 0" then means the same for two conditions with one key).  0 on time-out. */
static int lit_facts(struct sp_defined_cache *D, sp_engine_t *S, sp_expr_t c)
{
    if (info_of(D, c)->lit_done)
        return 1;
    sp_nfid_t a = sp_nf_of_expr(S, c);
    if (a == SP_NF_FAIL && timed_out(S))
        return 0;
    int cst = -1, flip;
    uint64_t k = KEY_TAG | c;
    if (a != SP_NF_FAIL) {
        if (sp_nf_is_const(S, a)) {
            cst = sp_nf_get(S, a)->num->len != 0;
        } else {
            sp_nfid_t n = sp_nf_normalize_sign(S, a, &flip);
            if (n != SP_NF_FAIL)
                k = n;
        }
    }
    info_t *in = info_of(D, c);
    in->lit_done = 1;
    in->lit_const = (int8_t)cst;
    in->klit = k;
    return 1;
}

/* ---- guards --------------------------------------------------------------------------------- */

static uint64_t lits_hash(const uint64_t *l, uint32_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15u + n;
    for (uint32_t i = 0; i < n; i++)
        h = mix(h ^ l[i]);
    return h;
}

/* The id of the guard with literals l[0..n) (ascending, distinct). */
static uint32_t guard_intern(struct sp_defined_cache *D, const uint64_t *l, uint32_t n)
{
    uint64_t h = lits_hash(l, n);
    if (2 * (D->ng + 1) > D->gsize) {
        uint32_t size = D->gsize ? 2 * D->gsize : 64;
        uint32_t *t = flint_calloc(size, sizeof(uint32_t));
        for (uint32_t i = 0; i < D->ng; i++) {
            uint32_t j = (uint32_t)D->g[i].hash & (size - 1);
            while (t[j])
                j = (j + 1) & (size - 1);
            t[j] = i + 1;
        }
        flint_free(D->gmap);
        D->gmap = t;
        D->gsize = size;
    }
    uint32_t j = (uint32_t)h & (D->gsize - 1);
    while (D->gmap[j]) {
        const guard_t *x = &D->g[D->gmap[j] - 1];
        if (x->hash == h && x->len == n && (n == 0 || !memcmp(D->lits + x->off, l, n * sizeof(uint64_t))))
            return D->gmap[j] - 1;
        j = (j + 1) & (D->gsize - 1);
    }
    if (D->ng == D->ag) {
        D->ag = D->ag ? 2 * D->ag : 64;
        D->g = flint_realloc(D->g, (size_t)D->ag * sizeof(guard_t));
    }
    if (D->nlits + n > D->alits) {
        D->alits = 2 * (D->nlits + n) + 64;
        D->lits = flint_realloc(D->lits, D->alits * sizeof(uint64_t));
    }
    if (n > 0)
        memcpy(D->lits + D->nlits, l, n * sizeof(uint64_t));
    D->g[D->ng].off = D->nlits;
    D->g[D->ng].len = n;
    D->g[D->ng].hash = h;
    D->nlits += n;
    D->gmap[j] = ++D->ng;
    return D->ng - 1;
}

static struct sp_defined_cache *cache_of(sp_engine_t *S)
{
    if (S->defined == NULL) {
        S->defined = flint_calloc(1, sizeof(struct sp_defined_cache));
        guard_intern(S->defined, NULL, 0); /* guard 0: no literal */
    }
    return S->defined;
}

/* Is every literal of guard a one of guard b? */
static int guard_subset(const struct sp_defined_cache *D, uint32_t a, uint32_t b)
{
    const guard_t *x = &D->g[a], *y = &D->g[b];
    if (a == b || x->len == 0)
        return 1;
    const uint64_t *p = D->lits + x->off, *q = D->lits + y->off;
    uint32_t j = 0;
    for (uint32_t i = 0; i < x->len; i++) {
        while (j < y->len && q[j] < p[i])
            j++;
        if (j == y->len || q[j] != p[i])
            return 0;
    }
    return 1;
}

/* Guard g with literal lit added.  Past GUARD_LITS: the lhs keeps g (a weaker guard), the rhs
   drops the path (GUARD_NONE). */
static uint32_t guard_with(struct sp_defined_cache *D, uint32_t g, uint64_t lit, int lhs)
{
    uint32_t n = D->g[g].len;
    if (n >= GUARD_LITS)
        return lhs ? g : GUARD_NONE;
    uint64_t l[GUARD_LITS + 1];
    uint32_t k = 0, i = 0;
    const uint64_t *p = D->lits + D->g[g].off;
    while (i < n && p[i] < lit)
        l[k++] = p[i++];
    if (i < n && p[i] == lit)
        return g;
    l[k++] = lit;
    while (i < n)
        l[k++] = p[i++];
    return guard_intern(D, l, k);
}

/* The literals common to guards a and b. */
static uint32_t guard_meet(struct sp_defined_cache *D, uint32_t a, uint32_t b)
{
    uint64_t l[GUARD_LITS];
    uint32_t k = 0, j = 0;
    const guard_t x = D->g[a], y = D->g[b];
    for (uint32_t i = 0; i < x.len; i++) {
        uint64_t v = D->lits[x.off + i];
        while (j < y.len && D->lits[y.off + j] < v)
            j++;
        if (j < y.len && D->lits[y.off + j] == v)
            l[k++] = v;
    }
    return guard_intern(D, l, k);
}

/* The guards of the paths into one node: none implies another. */
typedef struct {
    uint32_t g[GUARD_SETS];
    uint32_t n;
} gset_t;

static void gset_add(struct sp_defined_cache *D, gset_t *s, uint32_t g, int lhs)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (guard_subset(D, s->g[i], g))
            return; /* a weaker guard is there already */
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n; i++)
        if (!guard_subset(D, g, s->g[i]))
            s->g[k++] = s->g[i];
    s->n = k;
    if (s->n < GUARD_SETS) {
        s->g[s->n++] = g;
        return;
    }
    if (!lhs)
        return; /* rhs: fewer known paths only means fewer points known undefined */
    uint32_t m = g;
    for (uint32_t i = 0; i < s->n; i++)
        m = guard_meet(D, m, s->g[i]);
    s->g[0] = m;
    s->n = 1;
}

/* ---- sites ---------------------------------------------------------------------------------- */

typedef struct {
    sp_expr_t node;
    uint32_t guard;
} site_t;

static int cmp_site(const void *x, const void *y)
{
    const site_t *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->guard > b->guard) - (a->guard < b->guard);
}

/*
 * The sites of root whose obligation is not structural, ascending by node: every partial node of
 * the cone with each guard under which it is evaluated (lhs set: a guard may be weakened; else
 * paths may be dropped).  Marks nodes whose cone turned out to hold only structural obligations
 * as free.  Returns SP_WHY_NONE, or the limit that stopped it.
 */
static sp_why_t collect(struct sp_defined_cache *D, sp_engine_t *S, sp_expr_t root, int lhs,
                        site_t **out, size_t *nout)
{
    const sp_ectx_struct *E = S->E;
    *out = NULL;
    *nout = 0;
    if (D->free[root])
        return SP_WHY_NONE;
    uint32_t *cone;
    size_t n = sp_expr_cone_skip(E, &root, 1, D->free, D->nfree, &cone);
    if (cone == NULL)
        return sp_why_full(E);
    /* 1. structure, bottom-up: the cone is ascending, arguments come first */
    for (size_t i = 0; i < n; i++) {
        sp_expr_t e = cone[i];
        if ((i & 255) == 255 && sp_engine_time_up(S)) {
            flint_free(cone);
            return sp_engine_time_why(S);
        }
        int k, bad = 0;
        sp_expr_t u;
        if (partial_of(E, e, &k, &u)) {
            if (!obl_facts(D, S, e)) {
                flint_free(cone);
                return sp_engine_time_why(S);
            }
            bad = !info_of(D, e)->structural;
        }
        for (uint32_t j = 0; j < E->nodes[e].nargs && !bad; j++)
            bad = !D->free[sp_expr_arg(E, e, j)];
        D->free[e] = !bad;
    }
    if (D->free[root]) {
        flint_free(cone);
        return SP_WHY_NONE;
    }
    /* 2. guards, top-down: the root is the last node */
    gset_t *gs = flint_calloc(n, sizeof(gset_t));
    gs[n - 1].n = 1; /* the empty guard */
    site_t *st = NULL;
    size_t ns = 0, as = 0;
    sp_why_t why = SP_WHY_NONE;
    for (size_t i = n; i-- > 0 && why == SP_WHY_NONE;) {
        sp_expr_t e = cone[i];
        if (D->free[e] || gs[i].n == 0)
            continue;
        int k;
        sp_expr_t u;
        if (partial_of(E, e, &k, &u) && !info_of(D, e)->structural)
            for (uint32_t j = 0; j < gs[i].n; j++) {
                if (ns == as) {
                    as = as ? 2 * as : 16;
                    st = flint_realloc(st, as * sizeof(site_t));
                }
                st[ns].node = e;
                st[ns++].guard = gs[i].g[j];
            }
        int is_where = E->nodes[e].op == SP_OP_WHERE;
        int cst = -1;
        uint64_t klit = 0;
        if (is_where) {
            if (!lit_facts(D, S, sp_expr_arg(E, e, 0))) {
                why = sp_engine_time_why(S);
                break;
            }
            const info_t *in = info_of(D, sp_expr_arg(E, e, 0));
            cst = in->lit_const;
            klit = in->klit;
        }
        for (uint32_t a = 0; a < E->nodes[e].nargs; a++) {
            sp_expr_t x = sp_expr_arg(E, e, a);
            if (D->free[x])
                continue;
            gset_t *to = &gs[sp_bsearch_u32(cone, n, x)];
            if (!is_where || a == 0) {
                for (uint32_t j = 0; j < gs[i].n; j++)
                    gset_add(D, to, gs[i].g[j], lhs);
                continue;
            }
            int want_nz = a == 1; /* where(c, a, b): a where c != 0, b where c == 0 */
            if (cst >= 0) {
                if (cst == want_nz)
                    for (uint32_t j = 0; j < gs[i].n; j++)
                        gset_add(D, to, gs[i].g[j], lhs);
                continue; /* otherwise the branch is never taken */
            }
            uint64_t lit = klit << 1 | (uint64_t)!want_nz;
            for (uint32_t j = 0; j < gs[i].n; j++) {
                uint32_t g2 = guard_with(D, gs[i].g[j], lit, lhs);
                if (g2 != GUARD_NONE)
                    gset_add(D, to, g2, lhs);
            }
        }
    }
    flint_free(gs);
    flint_free(cone);
    if (why != SP_WHY_NONE) {
        flint_free(st);
        return why;
    }
    if (ns > 0)
        qsort(st, ns, sizeof(site_t), cmp_site);
    *out = st;
    *nout = ns;
    return SP_WHY_NONE;
}

/* ---- matching lhs obligations with rhs obligations ---------------------------------------- */

/* An obligation of rhs under a guard: a factor of the numerator of a where-free u in "u != 0"
   (cls 0), "u > 0" / "u >= 0" for u = +key (cls 1) or -key (cls 2), or "u != 0" (cls 3), with
   u's key (normal form up to a constant). */
enum { CLS_FACTOR = 0, CLS_PLUS, CLS_MINUS, CLS_WHOLE };
typedef struct {
    uint64_t key;
    uint8_t cls, kind;
    uint32_t guard;
} entry_t;

static int cmp_entry(const void *x, const void *y)
{
    const entry_t *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->cls > b->cls) - (a->cls < b->cls);
}

static void entry_push(entry_t **v, size_t *n, size_t *a, uint64_t key, int cls, int kind, uint32_t g)
{
    if (*n == *a) {
        *a = *a ? 2 * *a : 16;
        *v = flint_realloc(*v, *a * sizeof(entry_t));
    }
    entry_t x = {key, (uint8_t)cls, (uint8_t)kind, g};
    (*v)[(*n)++] = x;
}

/* Is there an entry (key, cls) of an acceptable kind whose guard is implied by guard g?
   kinds: bit mask of acceptable OB_* (0: any). */
static int entry_find(const struct sp_defined_cache *D, const entry_t *v, size_t n, uint64_t key,
                      int cls, unsigned kinds, uint32_t g)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].key < key || (v[mid].key == key && v[mid].cls < cls))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < n && v[i].key == key && v[i].cls == cls; i++)
        if ((kinds == 0 || (kinds >> v[i].kind & 1)) && guard_subset(D, v[i].guard, g))
            return 1;
    return 0;
}

/* Sign sets: bit 0 negative, bit 1 zero, bit 2 positive. */
enum { SS_NEG = 1, SS_ZERO = 2, SS_POS = 4 };

static unsigned ss_flip(unsigned m, int flip)
{
    return flip > 0 ? m : (m & SS_ZERO) | (m & SS_NEG ? SS_POS : 0) | (m & SS_POS ? SS_NEG : 0);
}

/* The signs an obligation of this kind allows. */
static unsigned ob_allowed(int kind)
{
    return kind == OB_NZ ? SS_NEG | SS_POS : kind == OB_POS ? SS_POS : SS_POS | SS_ZERO;
}

/*
 * What a literal of a guard says about a key.  When the condition c is (up to a constant: its
 * key) c0 + cp [d > 0] + cz [d = 0] for one normalized d (every comparison is: gt, ge, lt, le,
 * eq, ne), the literal "c != 0" or "c == 0" holds for the signs of d where that value is nonzero
 * or zero.  Any other c is its own d ("c != 0": d is nonzero).  Returns the key of d with the
 * sign set in *mask, or KEY_TAG when the literal's key is a tag.
 */
static uint64_t lit_fact(const sp_engine_t *S, uint64_t lit, unsigned *mask)
{
    uint64_t k = lit >> 1;
    int is_zero = (int)(lit & 1); /* the literal says c == 0 */
    if (k >= KEY_TAG)
        return KEY_TAG;
    const sp_nf_struct *x = sp_nf_get(S, (sp_nfid_t)k);
    *mask = is_zero ? SS_ZERO : SS_NEG | SS_POS;
    if (!sp_poly_is_one(x->den))
        return k;
    sp_nfid_t d = SP_NF_FAIL;
    const fmpq *c[3] = {NULL, NULL, NULL}; /* the constant's, [d > 0]'s and [d = 0]'s coefficient */
    for (slong i = 0; i < x->num->len; i++) {
        uint32_t m = x->num->m[i];
        if (m == 0) {
            c[0] = x->num->c + i;
            continue;
        }
        if (sp_mono_nfactors(&S->M, m) != 1)
            return k;
        uint32_t v = sp_mono_factors(&S->M, m)[0].var;
        int slot = S->var[v].kind == SP_VAR_POS ? 1 : S->var[v].kind == SP_VAR_ZERO ? 2 : 0;
        if (slot == 0 || sp_mono_factors(&S->M, m)[0].exp < 1 || c[slot] != NULL ||
            (d != SP_NF_FAIL && d != sp_var_arg(S, v, 0)))
            return k; /* not of that form (an indicator's positive powers are itself) */
        d = sp_var_arg(S, v, 0);
        c[slot] = x->num->c + i;
    }
    if (d == SP_NF_FAIL)
        return k;
    /* the value of c where d < 0, d = 0, d > 0 */
    fmpq_t val;
    fmpq_init(val);
    unsigned m = 0;
    static const unsigned sign_bit[3] = {SS_NEG, SS_ZERO, SS_POS};
    for (int s = 0; s < 3; s++) {
        fmpq_zero(val);
        if (c[0])
            fmpq_add(val, val, c[0]);
        if (s == 2 && c[1])
            fmpq_add(val, val, c[1]);
        if (s == 1 && c[2])
            fmpq_add(val, val, c[2]);
        if (fmpq_is_zero(val) == is_zero)
            m |= sign_bit[s];
    }
    fmpq_clear(val);
    *mask = m;
    return d;
}

/* Rule (a'): does a literal of guard g give key the signs that kind needs (key = flip * d)? */
static int guard_implies(const struct sp_defined_cache *D, const sp_engine_t *S, uint32_t g,
                         uint64_t key, int flip, int kind)
{
    const guard_t *x = &D->g[g];
    for (uint32_t i = 0; i < x->len; i++) {
        unsigned mask;
        if (lit_fact(S, D->lits[x->off + i], &mask) == key &&
            (ss_flip(mask, flip) & ~ob_allowed(kind)) == 0)
            return 1;
    }
    return 0;
}

/* Rules (a') and (b): this site's obligation holds under its guard, or rhs is undefined wherever
   it fails. */
static int site_implied(const struct sp_defined_cache *D, const sp_engine_t *S, const info_t *in,
                        uint32_t guard, const entry_t *v, size_t n)
{
    if (guard_implies(D, S, guard, in->kwhole, in->flip, in->kind))
        return 1;
    if (in->kind == OB_NZ) {
        if (entry_find(D, v, n, in->kwhole, CLS_WHOLE, 0, guard))
            return 1;
        if (in->nfac == 0)
            return 0; /* a where in the argument: no factors */
        for (uint32_t f = 0; f < in->nfac; f++)
            if (!guard_implies(D, S, guard, D->keys[in->fac + f], 1, OB_NZ) &&
                !entry_find(D, v, n, D->keys[in->fac + f], CLS_FACTOR, 0, guard))
                return 0;
        return 1;
    }
    unsigned kinds = in->kind == OB_POS ? 1u << OB_POS : (1u << OB_POS | 1u << OB_NNEG);
    return entry_find(D, v, n, in->kwhole, in->flip > 0 ? CLS_PLUS : CLS_MINUS, kinds, guard);
}

/* ---- witnesses ------------------------------------------------------------------------------ */

/* A small random rational; the range widens with the attempt t. */
static void rand_value(uint64_t *rng, fmpq_t x, slong t)
{
    *rng += UINT64_C(0x9e3779b97f4a7c15);
    uint64_t r = mix(*rng);
    if (t < 2)
        fmpq_set_si(x, (slong)(r % 5) - 2, 1);
    else if (t < 4)
        fmpq_set_si(x, (slong)(r % 13) - 6, 1);
    else
        fmpq_set_si(x, (slong)(r % 41) - 20, 1 + (r >> 32) % 7);
}

/* The value of term i of p at the point, without variable skip (exponent 1 there).  Returns 0
   if a symbol with a negative exponent is zero. */
static int term_value(const sp_engine_t *S, const sp_poly_struct *p, slong i, uint32_t skip,
                      const fmpq *vals, fmpq_t out)
{
    fmpq_set(out, p->c + i);
    const sp_vpow_t *f = sp_mono_factors(&S->M, p->m[i]);
    fmpq_t t;
    fmpq_init(t);
    int ok = 1;
    for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, p->m[i]) && ok; k++) {
        if (f[k].var == skip)
            continue;
        const fmpq *x = vals + S->E->nodes[S->var[f[k].var].sym].param;
        ok = f[k].exp > 0 || !fmpq_is_zero(x);
        if (ok) {
            fmpq_pow_si(t, x, f[k].exp);
            fmpq_mul(out, out, t);
        }
    }
    fmpq_clear(t);
    return ok;
}

static const char *const ob_need[] = {"nonzero", "positive", "nonnegative"};

/* "denominator `n` nonzero": the obligation of partial node e. */
static char *describe_obligation(const sp_ectx_struct *E, sp_expr_t e)
{
    int kind;
    sp_expr_t u;
    partial_of(E, e, &kind, &u);
    char *t = sp_expr_print(E, u, 120);
    const char *what;
    switch ((sp_op_t)E->nodes[e].op) {
    case SP_OP_DIV: what = "denominator"; break;
    case SP_OP_POW: what = "base of a negative power"; break;
    case SP_OP_LOG: what = "log argument"; break;
    case SP_OP_SQRT: what = "sqrt argument"; break;
    default: what = "rsqrt argument"; break;
    }
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    sp_sbuf_printf(&b, "%s `%s` %s", what, t, ob_need[kind]);
    flint_free(t);
    return sp_sbuf_take(&b);
}

/* "division by zero at `n` = 0": how partial node e fails at the point (where the witness search
   made its argument's normal form 0 or -1: by the lemma its value when it is defined). */
static char *describe_failure(sp_engine_t *S, sp_expr_t e, const fmpq *vals)
{
    int kind;
    sp_expr_t u;
    partial_of(S->E, e, &kind, &u);
    char *val = NULL;
    sp_eval_status_t s = sp_eval_definedness_by(S->E, u, vals, S->deadline_ns, &val, NULL);
    char *t = sp_expr_print(S->E, u, 120);
    const char *what;
    switch ((sp_op_t)S->E->nodes[e].op) {
    case SP_OP_DIV: what = "division by zero"; break;
    case SP_OP_POW: what = "negative power of zero"; break;
    case SP_OP_LOG: what = "log of a value <= 0"; break;
    case SP_OP_SQRT: what = "sqrt of a negative value"; break;
    default: what = "rsqrt of a value <= 0"; break;
    }
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    if (s == SP_EVAL_OK)
        sp_sbuf_printf(&b, "%s at `%s` = %s", what, t, val);
    else
        sp_sbuf_printf(&b, "%s at `%s`, itself undefined there", what, t);
    flint_free(t);
    flint_free(val);
    return sp_sbuf_take(&b);
}

/* The points of one witness search: the symbols of both sides, values by symbol index. */
typedef struct {
    sp_expr_t lhs, rhs, e;
    uint32_t *cone;  /* cone of lhs and rhs, ascending */
    size_t m;
    fmpq *vals;
    slong nvals;
    uint64_t rng;
    slong points;    /* points left to evaluate (WITNESS_POINTS per query) */
} wsearch_t;

enum { HOW_ORIGIN, HOW_ZERO, HOW_SOLVE, HOW_SCAN };

/*
 * Try to make the polynomial P0 zero.  Candidates: the origin (every symbol P0 depends on zero,
 * through atom arguments too: sums of squares, masks and counts of comparisons vanish there; for
 * an atom-free P0 only when it has no constant term and no negative exponent), and for an
 * atom-free P0 also one symbol of its monomial content zero, one symbol of degree 1 in every
 * term solved for, or small rationals tried for a symbol of higher degree.  A point is kept if lhs is undefined there and rhs defined.  t is the normal
 * form P0 comes from (for the symbols under its atoms).  Returns 1 with res filled (res may be
 * NULL).
 */
static int witness_poly(sp_engine_t *S, wsearch_t *W, const sp_poly_t P0, sp_nfid_t t,
                        sp_result_t *res)
{
    int atom_free = 1;
    for (slong i = 0; i < P0->len && atom_free; i++)
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, P0->m[i]) && atom_free; k++)
            atom_free = S->var[sp_mono_factors(&S->M, P0->m[i])[k].var].kind == SP_VAR_SYM;
    /* the origin's symbols */
    uint32_t *zv = NULL;
    slong nz = sp_nf_reachable_vars(S, t, &zv), k0 = 0;
    for (slong i = 0; i < nz; i++)
        if (S->var[zv[i]].kind == SP_VAR_SYM)
            zv[k0++] = zv[i];
    nz = k0;
    int origin = nz > 0;
    for (slong i = 0; i < P0->len && origin && atom_free; i++) {
        origin = P0->m[i] != 0;
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, P0->m[i]) && origin; k++)
            origin = sp_mono_factors(&S->M, P0->m[i])[k].exp > 0;
    }
    sp_poly_t P;
    sp_poly_init(P);
    uint32_t g = atom_free && P0->len ? sp_poly_mono_content(&S->M, P0) : SP_MONO_FAIL;
    uint32_t inv = g == SP_MONO_FAIL ? SP_MONO_FAIL : sp_mono_pow(&S->M, g, -1);
    int ok = inv != SP_MONO_FAIL && sp_poly_mul_mono(&S->M, P, P0, inv);
    /* the candidates: how[c] says what to do with symbol cand[c] */
    uint32_t cand[2 * WITNESS_VARS + 1];
    int how[2 * WITNESS_VARS + 1], nc = 0, nsolve = 0, nscan = 0;
    if (origin) {
        cand[nc] = UINT32_MAX;
        how[nc++] = HOW_ORIGIN;
    }
    for (uint32_t k = 0; ok && k < sp_mono_nfactors(&S->M, g) && nc < WITNESS_VARS; k++)
        if (sp_mono_factors(&S->M, g)[k].exp > 0) {
            cand[nc] = sp_mono_factors(&S->M, g)[k].var;
            how[nc++] = HOW_ZERO;
        }
    for (slong i = 0; ok && P->len > 1 && i < P->len; i++)
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, P->m[i]); k++) {
            uint32_t v = sp_mono_factors(&S->M, P->m[i])[k].var;
            int lin = 1, seen = 0;
            for (slong j = 0; j < P->len && lin; j++) {
                int32_t d = sp_mono_exp(&S->M, P->m[j], v);
                lin = d == 0 || d == 1;
            }
            for (int c = 0; c < nc && !seen; c++)
                seen = cand[c] == v && how[c] != HOW_ZERO;
            if (!seen && (lin ? nsolve < WITNESS_VARS : nscan < WITNESS_VARS)) {
                cand[nc] = v;
                how[nc++] = lin ? HOW_SOLVE : HOW_SCAN;
                nsolve += lin;
                nscan += !lin;
            }
        }
    ok = 1;
    fmpq_t A, B, tv;
    fmpq_init(A);
    fmpq_init(B);
    fmpq_init(tv);
    int found = 0;
    for (slong tr = 0; ok && tr < WITNESS_TRIES && tr < S->lim.cex_tries && !found; tr++) {
        for (int c = 0; c < nc && !found; c++) {
            if (W->points <= 0 || sp_engine_time_up(S)) {
                ok = 0;
                break;
            }
            for (size_t i = 0; i < W->m; i++)
                if (S->E->nodes[W->cone[i]].op == SP_OP_SYM)
                    rand_value(&W->rng, W->vals + S->E->nodes[W->cone[i]].param, tr);
            if (how[c] == HOW_ORIGIN) {
                for (slong i = 0; i < nz; i++)
                    fmpq_zero(W->vals + S->E->nodes[S->var[zv[i]].sym].param);
            } else if (how[c] == HOW_ZERO) {
                fmpq_zero(W->vals + S->E->nodes[S->var[cand[c]].sym].param);
            } else if (how[c] == HOW_SCAN) {
                /* small rational values of the symbol until P vanishes */
                static const slong scan[][2] = {{0, 1}, {1, 1}, {-1, 1}, {2, 1}, {-2, 1},
                                                {1, 2}, {-1, 2}, {3, 1}, {-3, 1}};
                fmpq *x = W->vals + S->E->nodes[S->var[cand[c]].sym].param;
                int hit = 0;
                for (size_t j = 0; j < sizeof scan / sizeof scan[0] && !hit; j++) {
                    fmpq_set_si(x, scan[j][0], (ulong)scan[j][1]);
                    fmpq_zero(A);
                    int good = 1;
                    for (slong i = 0; i < P->len && good; i++) {
                        good = term_value(S, P, i, UINT32_MAX, W->vals, tv);
                        fmpq_add(A, A, tv);
                    }
                    hit = good && fmpq_is_zero(A);
                }
                if (!hit)
                    continue;
            } else {
                slong vs = S->E->nodes[S->var[cand[c]].sym].param;
                /* P = A*v + B */
                fmpq_zero(A);
                fmpq_zero(B);
                int good = 1;
                for (slong i = 0; i < P->len && good; i++) {
                    good = term_value(S, P, i, cand[c], W->vals, tv);
                    if (sp_mono_exp(&S->M, P->m[i], cand[c]) == 1)
                        fmpq_add(A, A, tv);
                    else
                        fmpq_add(B, B, tv);
                }
                if (!good || fmpq_is_zero(A))
                    continue;
                fmpq_div(W->vals + vs, B, A);
                fmpq_neg(W->vals + vs, W->vals + vs);
            }
            W->points--;
            if (sp_eval_definedness_by(S->E, W->lhs, W->vals, S->deadline_ns, NULL, NULL) !=
                SP_EVAL_UNDEFINED)
                continue;
            char *rv = NULL;
            int exact = 0;
            if (sp_eval_definedness_by(S->E, W->rhs, W->vals, S->deadline_ns, &rv, &exact) != SP_EVAL_OK) {
                flint_free(rv);
                continue;
            }
            found = 1;
            if (res == NULL) {
                flint_free(rv);
                break;
            }
            slong ns = 0;
            for (size_t i = 0; i < W->m; i++)
                ns += S->E->nodes[W->cone[i]].op == SP_OP_SYM;
            res->cex.n = ns;
            res->cex.syms = flint_malloc((ns ? ns : 1) * sizeof(sp_expr_t));
            res->cex.vals = _fmpq_vec_init(ns ? ns : 1);
            ns = 0;
            for (size_t i = 0; i < W->m; i++)
                if (S->E->nodes[W->cone[i]].op == SP_OP_SYM) {
                    res->cex.syms[ns] = W->cone[i];
                    fmpq_set(res->cex.vals + ns++, W->vals + S->E->nodes[W->cone[i]].param);
                }
            res->cex.lhs_value = sp_strdup("undefined");
            res->cex.rhs_value = rv;
            res->cex.exact = exact;
            res->detail = describe_failure(S, W->e, W->vals);
        }
    }
    fmpq_clear(A);
    fmpq_clear(B);
    fmpq_clear(tv);
    flint_free(zv);
    sp_poly_clear(P);
    return found;
}

/*
 * Rule (c): look for a rational point where the obligation of partial node e fails (a factor of
 * its argument's numerator zero, or the argument zero or negative), rhs is
 * defined and lhs is not; both checked by evaluating the expressions (eval.c), never from normal
 * forms.  At most *points points are evaluated (the count left is written back).  Returns 1 with
 * res filled (res may be NULL).
 */
static int witness(struct sp_defined_cache *D, sp_engine_t *S, sp_expr_t lhs, sp_expr_t rhs,
                   sp_expr_t e, slong *points, sp_result_t *res)
{
    const info_t in = *info_of(D, e);
    /* the polynomials to make zero: nf ids (keys without the tag) */
    uint64_t target[WITNESS_VARS];
    int nt = 0;
    for (uint32_t f = 0; in.kind == OB_NZ && f < in.nfac && nt < WITNESS_VARS; f++)
        if (D->keys[in.fac + f] < KEY_TAG)
            target[nt++] = D->keys[in.fac + f];
    if (nt == 0 && in.kwhole < KEY_TAG)
        target[nt++] = in.kwhole;
    if (nt == 0)
        return 0;
    wsearch_t W;
    sp_expr_t roots[2] = {lhs, rhs};
    W.lhs = lhs;
    W.rhs = rhs;
    W.e = e;
    W.m = sp_expr_cone(S->E, roots, 2, &W.cone);
    W.nvals = S->E->nsyms ? S->E->nsyms : 1;
    W.vals = _fmpq_vec_init(W.nvals);
    W.rng = mix(S->seed ^ ((uint64_t)lhs << 32 | rhs) ^ mix(e));
    W.points = *points;
    int found = 0;
    sp_poly_t P;
    sp_poly_init(P);
    /* make the target 0 (not for sqrt), then the argument negative (not for a denominator) */
    for (int neg = in.kind == OB_NNEG; neg <= (in.kind != OB_NZ) && !found && W.cone; neg++)
        for (int i = 0; i < nt && !found; i++) {
            const sp_nf_struct *x = sp_nf_get(S, (sp_nfid_t)target[i]);
            if (neg) /* target = -flip: the argument flip * |c| * target is negative */
                sp_poly_add_sub(P, x->num, x->den, in.flip > 0 ? 1 : -1);
            else
                sp_poly_set(P, x->num);
            found = witness_poly(S, &W, P, (sp_nfid_t)target[i], res);
        }
    sp_poly_clear(P);
    _fmpq_vec_clear(W.vals, W.nvals);
    flint_free(W.cone);
    *points = W.points;
    return found;
}

/* ---- the query ------------------------------------------------------------------------------ */

static sp_answer_t answer(sp_engine_t *S, sp_result_t *res, sp_answer_t a, sp_why_t why)
{
    if (res) {
        res->answer = a;
        res->why = a == SP_UNKNOWN ? why : SP_WHY_NONE;
    }
    S->deadline_ns = 0;
    return a;
}

sp_answer_t sp_defined_implied(sp_engine_t *S, sp_expr_t lhs, sp_expr_t rhs, sp_result_t *res)
{
    if (res)
        sp_result_clear(res);
    S->why = SP_WHY_NONE;
    S->deadline_ns = sp_engine_query_deadline(S);
    if (lhs == SP_EXPR_NONE || rhs == SP_EXPR_NONE || S->E->oom)
        return answer(S, res, SP_UNKNOWN, sp_why_full(S->E));
    /* the same expression, or the same canonical form: defined at the same points */
    if (lhs == rhs)
        return answer(S, res, SP_EQUAL, SP_WHY_NONE);
    struct sp_defined_cache *D = cache_of(S);
    free_grow(D, S->E);
    if (D->free[lhs] || sp_canon_equal(S, lhs, rhs))
        return answer(S, res, SP_EQUAL, SP_WHY_NONE);

    site_t *ls = NULL, *rs = NULL;
    size_t nl = 0, nr = 0;
    sp_why_t why = collect(D, S, lhs, 1, &ls, &nl);
    if (why != SP_WHY_NONE || nl == 0) {
        flint_free(ls);
        return answer(S, res, why == SP_WHY_NONE ? SP_EQUAL : SP_UNKNOWN, why);
    }
    why = collect(D, S, rhs, 0, &rs, &nr);
    if (why != SP_WHY_NONE) {
        flint_free(ls);
        flint_free(rs);
        return answer(S, res, SP_UNKNOWN, why);
    }
    /* rule (b): rhs's obligations, as entries */
    entry_t *v = NULL;
    size_t nv = 0, av = 0;
    for (size_t i = 0; i < nr; i++) {
        const info_t *in = info_of(D, rs[i].node);
        if (in->kind != OB_NZ)
            entry_push(&v, &nv, &av, in->kwhole, in->flip > 0 ? CLS_PLUS : CLS_MINUS, in->kind, rs[i].guard);
        if (in->kind != OB_NNEG) {
            entry_push(&v, &nv, &av, in->kwhole, CLS_WHOLE, in->kind, rs[i].guard);
            for (uint32_t f = 0; f < in->nfac; f++)
                entry_push(&v, &nv, &av, D->keys[in->fac + f], CLS_FACTOR, in->kind, rs[i].guard);
        }
    }
    if (nv > 0)
        qsort(v, nv, sizeof(entry_t), cmp_entry);
    size_t nu = 0; /* sites not implied, compacted to the front of ls */
    for (size_t i = 0; i < nl; i++)
        if (!site_implied(D, S, info_of(D, ls[i].node), ls[i].guard, v, nv))
            ls[nu++] = ls[i];
    flint_free(v);
    flint_free(rs);
    sp_answer_t ans = SP_EQUAL;
    if (nu > 0) {
        /* rule (c), then (d); one search per partial node */
        ans = SP_UNKNOWN;
        slong points = WITNESS_POINTS;
        for (size_t i = 0; i < nu && ans == SP_UNKNOWN && points > 0; i++)
            if ((i == 0 || ls[i].node != ls[i - 1].node) &&
                witness(D, S, lhs, rhs, ls[i].node, &points, res))
                ans = SP_DIFFERENT;
        if (ans == SP_UNKNOWN) {
            why = timed_out(S) ? sp_engine_time_why(S) : SP_WHY_DEFINEDNESS;
            if (res)
                res->detail = describe_obligation(S->E, ls[0].node);
        }
    }
    flint_free(ls);
    return answer(S, res, ans, why);
}
