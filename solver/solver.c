/* solver.c: the decision procedure: fingerprints, normal forms, case splits and witnesses. */
#include "solver.h"

#include <stdlib.h>
#include <string.h>

#include "defined.h"
#include "eval.h"
#include "lp.h"
#include "nf.h"
#include "sbuf.h"
#include "hash.h"

#include <flint/nmod_vec.h>
#include <flint/ulong_extras.h>

static const char *const why_names[] = {
    "none",          "limit max_terms", "limit max_degree",        "limit max_splits",
    "limit max_ms",  "limit max_nodes", "no certified counterexample found",
    "case split with nonlinear conditions and no witness found", "expression undefined",
    "limit max_coeff_bits", "left side not shown defined wherever the right side is",
    "limit memory", "limit timeout"};

const char *sp_why_name(sp_why_t why)
{
    return (unsigned)why < sizeof(why_names) / sizeof(why_names[0]) ? why_names[why] : "?";
}

/* A reason that is a clock: the query's max_ms or the run's deadline. */
static int timed(sp_why_t why) { return why == SP_WHY_LIMIT_TIME || why == SP_WHY_LIMIT_TIMEOUT; }

sp_why_t sp_why_full(const sp_ectx_struct *E)
{
    return E->vm_full == 3 ? SP_WHY_LIMIT_TIMEOUT
           : E->vm_full    ? SP_WHY_LIMIT_MEMORY
                           : SP_WHY_LIMIT_NODES;
}

void sp_limits_default(sp_limits_t *lim)
{
    memset(lim, 0, sizeof *lim); /* every limit a later field adds is off unless set here */
    lim->max_terms = 200000;
    lim->max_degree = 256;
    lim->max_splits = 4096;
    lim->max_ms = 0;
    lim->max_nodes = 0;
    lim->max_vm = 0;
    lim->max_rss = 0;
    lim->max_coeff_bits = 65536;
    lim->cex_tries = 200;
    lim->probabilistic = 0;
}

void sp_result_init(sp_result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->index = -1;
}

void sp_result_clear(sp_result_t *r)
{
    if (r->cex.vals)
        _fmpq_vec_clear(r->cex.vals, r->cex.n);
    flint_free(r->cex.syms);
    flint_free(r->cex.lhs_value);
    flint_free(r->cex.rhs_value);
    flint_free(r->detail);
    sp_result_init(r);
}

sp_engine_t *sp_engine_new(const sp_limits_t *lim, uint64_t seed)
{
    sp_engine_t *S = flint_calloc(1, sizeof(sp_engine_t));
    sp_ectx_init(S->E);
    sp_ectx_init(S->C);
    if (lim)
        S->lim = *lim;
    else
        sp_limits_default(&S->lim);
    S->E->max_nodes = S->lim.max_nodes > 0 ? (size_t)S->lim.max_nodes : 0;
    S->E->max_vm = S->lim.max_vm;
    S->E->max_rss = S->lim.max_rss;
    S->E->deadline_ns = S->lim.deadline_ns;
    sp_mstore_init(&S->M);
    S->M.max_degree = S->lim.max_degree > 0 ? S->lim.max_degree : (1 << 20);
    if (S->lim.max_terms > 0) { /* the engine's memory (solver.h, SP_NF_TERMS_FACTOR) */
        S->M.max_len = (size_t)S->lim.max_terms * (SP_NF_TERMS_FACTOR / 4);
        S->M.max_flen = (size_t)S->lim.max_terms * SP_NF_TERMS_FACTOR;
    }
    S->seed = seed;
    return S;
}

void sp_engine_free(sp_engine_t *S)
{
    if (S == NULL)
        return;
    for (uint32_t i = 0; i < S->nnf; i++) {
        sp_poly_clear(S->nf[i].num);
        sp_poly_clear(S->nf[i].den);
    }
    flint_free(S->nf);
    flint_free(S->nf_table);
    flint_free(S->var);
    flint_free(S->vargs);
    flint_free(S->var_table);
    flint_free(S->sym_var);
    flint_free(S->cache);
    flint_free(S->stamp);
    flint_free(S->image);
    sp_mstore_clear(&S->M);
    sp_ectx_clear(S->E);
    sp_ectx_clear(S->C);
    flint_free(S->canon);
    flint_free(S->cfree);
    sp_defined_cache_free(S->defined);
    flint_free(S->axs);
    flint_free(S);
}

/* ---- counts ------------------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* 1 if two of the normal forms t[0..n) have numerators that share a monomial, or one has a
   denominator other than 1 (the sum is then its terms over their common denominator, where
   numerators that share nothing may still add up to a multiple of it: (a + b + c)/(a + b) is
   1 + c/(a + b), helper-57's review), -1 if memory ran out; *buf (of *cap entries) is scratch */
static int terms_share(const sp_engine_t *S, const sp_nfid_t *t, uint32_t n, uint32_t **buf,
                       size_t *cap)
{
    size_t tot = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!sp_poly_is_const(S->nf[t[i]].den))
            return 1;
        tot += (size_t)S->nf[t[i]].num->len;
    }
    if (tot > *cap) {
        uint32_t *b = flint_realloc(*buf, tot * sizeof(uint32_t));
        if (b == NULL)
            return -1;
        *buf = b;
        *cap = tot;
    }
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const sp_poly_struct *p = S->nf[t[i]].num;
        for (slong j = 0; j < p->len; j++) /* ascending and distinct within one term */
            (*buf)[k++] = p->m[j];
    }
    if (k < 2)
        return 0; /* no monomial or one: no repeat (and *buf may be NULL: qsort's argument) */
    qsort(*buf, k, sizeof(uint32_t), cmp_u32);
    for (size_t j = 1; j < k; j++)
        if ((*buf)[j] == (*buf)[j - 1])
            return 1;
    return 0;
}

/* The terms of sum e: the normal forms of its arguments (a DOT's products), in t (n entries);
   with S->env set, rebuilt under it.  0 if a limit stopped it. */
static int sum_terms(sp_engine_t *S, sp_expr_t e, sp_nfid_t *t, uint32_t *n)
{
    const sp_node_t *nd = sp_expr_node(S->E, e);
    *n = nd->nargs;
    for (uint32_t i = 0; i < nd->nargs; i++) {
        const sp_env_t *env = S->env;
        S->env = NULL; /* the cached form, then the environment's */
        t[i] = sp_nf_of_expr(S, sp_expr_arg(S->E, e, i));
        S->env = env;
        if (t[i] != SP_NF_FAIL && env != NULL)
            t[i] = sp_nf_rebuild(S, t[i]);
        if (t[i] == SP_NF_FAIL)
            return 0;
    }
    return 1;
}

/* An operator whose normal form keeps its argument inside an atom that is not a polynomial in
   it: exp, tanh, sigmoid of an argument without a log (exp(k log u) = u^k needs one), sqrt,
   rsqrt, erf (no rewrite rule takes a symbol out of those: docs/soundness.md, "Rewrite rules") */
static int opaque(const sp_ectx_t E, const uint8_t *haslog, sp_expr_t e)
{
    switch (sp_expr_op(E, e)) {
    case SP_OP_SQRT: case SP_OP_RSQRT: case SP_OP_ERF:
        return 1;
    case SP_OP_EXP: case SP_OP_TANH: case SP_OP_SIGMOID:
        return !haslog[sp_expr_arg(E, e, 0)];
    default:
        return 0;
    }
}

/*
 * Owners of the nodes of one sum's cone.  A term is a sum of leaves (owners()) and a leaf a
 * product of units: its factors and its divisors (unit()).  full[x]: the
 * unit whose cone holds x, UINT32_MAX if several do, 0 none; poly[x]: the same over the paths
 * that enter no opaque operator (the symbols that may be polynomial variables of a unit's
 * normal form).  Both are valid where seen[x] is the sum's stamp.
 */
typedef struct {
    uint32_t *seen, *full, *poly;
    uint32_t stamp;
    uint8_t *haslog;          /* per node of the store: a log in its cone */
    sp_expr_t *stack;         /* the traversals' */
    size_t scap;
    struct unit { sp_expr_t node; uint32_t term, leaf; int den; } *unit; /* from 1 */
    size_t ucap;
    uint32_t nu, nleaf;
    sp_expr_t *lv;            /* leaves() */
    size_t lcap;
    int64_t deadline;         /* the query's (sp_engine_query_deadline), 0 none */
    /* term[x]: poly over the terms (1 + the term's index): a node that only units of one term
       reach through non-opaque paths is that term's own.  held(): where the stamp is the
       sum's, a node of a term's own cone was visited (vis), is under a divisor of that term
       (dvs), has its answer (hvs: held[x]); dterm, the term (1 + index) whose dvs are made */
    uint32_t *term, *vis, *dvs, *hvs; /* NULL until a marker first needs them (own_terms()) */
    uint8_t *held;
    uint32_t dterm;
    int termed;               /* term[] is made for this sum (own_terms()) */
    size_t len;               /* the nodes the arrays cover */
} owners_t;

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 1;
    size_t c = 2 * need;
    void *q = flint_realloc(*p, c * size);
    if (q == NULL)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

/* The leaves of e into O->lv[0..*n): its summands through sums, differences and negations,
   zeros left out.  0 if memory ran out. */
static int leaves(const sp_ectx_struct *E, owners_t *O, sp_expr_t e, size_t *n)
{
    size_t sp = 0;
    *n = 0;
    if (!grow((void **)&O->stack, &O->scap, 1, sizeof(sp_expr_t)))
        return 0;
    O->stack[sp++] = e;
    while (sp > 0) {
        sp_expr_t t = O->stack[--sp];
        const sp_node_t *td = sp_expr_node(E, t);
        if (td->op == SP_OP_ADD || td->op == SP_OP_SUB || td->op == SP_OP_NEG) {
            if (!grow((void **)&O->stack, &O->scap, sp + td->nargs, sizeof(sp_expr_t)))
                return 0;
            for (uint32_t i = td->nargs; i-- > 0;)
                O->stack[sp++] = sp_expr_arg(E, t, i);
        } else if (!(td->op == SP_OP_CONST && fmpq_is_zero(sp_expr_const(E, t)))) {
            if (!grow((void **)&O->lv, &O->lcap, *n + 1, sizeof(sp_expr_t)))
                return 0;
            O->lv[(*n)++] = t;
        }
    }
    return 1;
}

/* A unit of term k's leaf: f a factor of the leaf's numerator, or (den) a divisor.  Every
   divisor is a unit, clean or not: a sum over an axis is its terms over the product of their
   divisors, so a divisor that holds a marker may cancel it (sum_j exp(s_j) / Z over a row is
   Z / Z = 1, a/(a+b) + b/(a+b) is 1: helper-57's review).  0 if memory ran out. */
static int unit(owners_t *O, uint32_t k, sp_expr_t f, int den)
{
    if (!grow((void **)&O->unit, &O->ucap, O->nu + 2, sizeof(struct unit)))
        return 0;
    O->nu++;
    O->unit[O->nu] = (struct unit){f, k, O->nleaf, den};
    return 1;
}

/* The cone of root into owner array o as owner u (O->full: every node, stop 0; O->poly: the
   nodes reached through no opaque operator, stop 1, unless the unit holds a log: log(exp(t)) =
   t takes a symbol out of an exp; O->term: the same over the terms, own_terms()).  A node
   reached by two owners is shared, and so is its cone: a node found shared
   already had its cone made shared, so each node is entered at most twice.  For that, a unit
   that stops at an opaque operator leaves the operator's node as it is (an atom is no symbol
   a marker could be; marking it shared without its cone would let a later unit that enters it
   stop there too: test_solver_counts, "stop").  0 if memory ran out. */
static int mark(const sp_ectx_struct *E, owners_t *O, uint32_t *o, sp_expr_t root, uint32_t u,
                int stop)
{
    size_t sp = 0;
    if (!grow((void **)&O->stack, &O->scap, 1, sizeof(sp_expr_t)))
        return 0;
    O->stack[sp++] = root;
    while (sp > 0) {
        sp_expr_t x = O->stack[--sp];
        if (O->seen[x] != O->stamp) {
            O->seen[x] = O->stamp;
            O->full[x] = O->poly[x] = 0;
            if (O->term != NULL)
                O->term[x] = 0;
        }
        if ((stop && opaque(E, O->haslog, x)) || o[x] == u || o[x] == UINT32_MAX)
            continue;
        o[x] = o[x] == 0 ? u : UINT32_MAX;
        const sp_node_t *nd = sp_expr_node(E, x);
        if (!grow((void **)&O->stack, &O->scap, sp + nd->nargs, sizeof(sp_expr_t)))
            return 0;
        for (uint32_t k = 0; k < nd->nargs; k++)
            O->stack[sp++] = sp_expr_arg(E, x, k);
    }
    return 1;
}

/* The units of leaf t of term k: its factors (through nested products and quotients' dividends)
   and its divisors (a quotient's, a negative power's base).  0 if memory ran out. */
static int leaf_units(const sp_ectx_struct *E, owners_t *O, uint32_t k, sp_expr_t t)
{
    size_t sp = 0;
    int ok = grow((void **)&O->stack, &O->scap, 1, sizeof(sp_expr_t));
    O->nleaf++;
    if (ok)
        O->stack[sp++] = t;
    while (ok && sp > 0) {
        sp_expr_t f = O->stack[--sp];
        const sp_node_t *fd = sp_expr_node(E, f);
        if (fd->op == SP_OP_MUL || fd->op == SP_OP_DIV) {
            uint32_t n = fd->op == SP_OP_MUL ? fd->nargs : 1;
            if (fd->op == SP_OP_DIV)
                ok = unit(O, k, sp_expr_arg(E, f, 1), 1);
            if (ok && (ok = grow((void **)&O->stack, &O->scap, sp + n, sizeof(sp_expr_t))))
                for (uint32_t i = n; i-- > 0;)
                    O->stack[sp++] = sp_expr_arg(E, f, i);
        } else if (fd->op == SP_OP_POW && fd->param < 0) {
            ok = unit(O, k, sp_expr_arg(E, f, 0), 1);
        } else {
            ok = unit(O, k, f, 0);
        }
    }
    return ok;
}

/* The owners of sum e's cone, over the units of its terms' leaves (a term that is a sum or a
   difference is its summands, recursively; a negation its argument; a zero no leaf): 1, -1 if
   memory ran out, -2 if the deadline passed (a unit's cone may be most of the store: a stage
   without cuts). */
static int owners(const sp_ectx_struct *E, owners_t *O, sp_expr_t e)
{
    O->stamp++;
    O->nu = O->nleaf = 0;
    for (uint32_t k = 0; k < sp_expr_nargs(E, e); k++) {
        size_t n;
        if (!leaves(E, O, sp_expr_arg(E, e, k), &n))
            return -1;
        for (size_t i = 0; i < n; i++)
            if (!leaf_units(E, O, k, O->lv[i]))
                return -1;
    }
    for (uint32_t u = 1; u <= O->nu; u++) {
        if (O->deadline != 0 && (u & 63) == 1 && sp_now_ns() > O->deadline)
            return -2;
        sp_expr_t x = O->unit[u].node;
        if (!mark(E, O, O->full, x, u, 0) || !mark(E, O, O->poly, x, u, !O->haslog[x]))
            return -1;
    }
    O->dterm = 0;
    O->termed = 0;
    return 1;
}

/* term[] over the sum's cone (owners_t), made when a marker first needs it (a sum shown by exp
   atoms, as a softmax denominator, never does): one stop rule for all units of a term (none if
   one holds a log), so that a unit that stops at an opaque node does not hide its cone from a
   unit that would not.  The arrays of held() are allocated on the first call (zeroed: the
   nodes this sum's passes saw already hold no term).  0 if memory ran out, or if the store is
   past 2^31 nodes (under_divisors tags a node id with its top bit). */
static int own_terms(const sp_ectx_struct *E, owners_t *O)
{
    if (O->term == NULL) {
        if (O->len > 0x7fffffffu)
            return 0;
        O->vis = flint_calloc(O->len, sizeof(uint32_t));
        O->dvs = flint_calloc(O->len, sizeof(uint32_t));
        O->hvs = flint_calloc(O->len, sizeof(uint32_t));
        O->held = flint_malloc(O->len);
        if (O->vis && O->dvs && O->hvs && O->held) /* term last: it says they are all there */
            O->term = flint_calloc(O->len, sizeof(uint32_t));
        if (O->term == NULL) {
            flint_free(O->vis), flint_free(O->dvs), flint_free(O->hvs), flint_free(O->held);
            O->vis = O->dvs = O->hvs = NULL;
            O->held = NULL;
            return 0;
        }
    }
    for (uint32_t u = 1, v; u <= O->nu; u = v) {
        int log = 0;
        for (v = u; v <= O->nu && O->unit[v].term == O->unit[u].term; v++)
            log |= O->haslog[O->unit[v].node];
        for (uint32_t w = u; w < v; w++)
            if (!mark(E, O, O->term, O->unit[w].node, O->unit[u].term + 1, !log))
                return 0;
    }
    O->termed = 1;
    return 1;
}

/* x is inert: without a log, or shared with another term (held()) */
static int inert(const owners_t *O, sp_expr_t x)
{
    return !O->haslog[x] || O->term[x] == UINT32_MAX;
}

/* The nodes of term t's own cone (term[x] == t: no other term reaches them through non-opaque
   paths) under one of its divisors (a divisor unit, a quotient's divisor, a negative power's
   base) or in a unit that is not inert (inert(): a log of the term's own may take a symbol out
   of an atom into a denominator, v * exp(-log(v)) is 1), marked dvs = stamp, for the units of
   t from u on.  0 if memory ran out. */
static int under_divisors(const sp_ectx_struct *E, owners_t *O, uint32_t u, uint32_t t)
{
    size_t sp = 0;
    for (uint32_t w = u; w <= O->nu && O->unit[w].term + 1 == t; w++) {
        if (!grow((void **)&O->stack, &O->scap, sp + 1, sizeof(sp_expr_t)))
            return 0;
        int d = O->unit[w].den || !inert(O, O->unit[w].node);
        O->stack[sp++] = O->unit[w].node | (d ? 0x80000000u : 0);
    }
    while (sp > 0) { /* a node pushed with its top bit set is a divisor's: its cone is marked */
        sp_expr_t x = O->stack[--sp], d = x >> 31;
        x &= 0x7fffffffu;
        if (O->term[x] != t || (d ? O->dvs[x] : O->vis[x]) == O->stamp)
            continue;
        if (d)
            O->dvs[x] = O->stamp;
        else
            O->vis[x] = O->stamp;
        const sp_node_t *nd = sp_expr_node(E, x);
        if (!grow((void **)&O->stack, &O->scap, sp + nd->nargs, sizeof(sp_expr_t)))
            return 0;
        for (uint32_t k = 0; k < nd->nargs; k++) {
            int den = d || (nd->op == SP_OP_DIV && k == 1) || (nd->op == SP_OP_POW && nd->param < 0);
            O->stack[sp++] = sp_expr_arg(E, x, k) | (den ? 0x80000000u : 0);
        }
    }
    return 1;
}

/* Node x of term t holds a marker in every monomial of its form's numerator: a symbol of t's
   own cone under none of its divisors and in none of its units that are not inert
   (under_divisors), so in no denominator of the sum's terms.  A symbol so; a sum (+, -,
   negation, a dot product's pairs) whose every summand does, zeros aside; a product one of
   whose factors does and whose others are inert (they multiply its monomials, each keeping the
   marker, and their divisors hold no marker; a log of t's own could take the marker out of an
   atom into a denominator: v * exp(-log(v)) is 1); a quotient whose dividend does; a positive
   power of one that does.  The form's gcd, which divides its denominator, is marker-free, so
   dividing it out keeps that (as for the sum: sp_engine_counts).  Answers are kept per sum
   (hvs); depth past SP_COUNT_DEPTH answers no. */
#define SP_COUNT_DEPTH 4096

static int held(const sp_ectx_struct *E, owners_t *O, uint32_t t, sp_expr_t x, int depth)
{
    if (O->term[x] != t || depth > SP_COUNT_DEPTH)
        return 0;
    if (O->hvs[x] == O->stamp)
        return O->held[x];
    const sp_node_t *nd = sp_expr_node(E, x);
    int h = 0;
    switch ((sp_op_t)nd->op) {
    case SP_OP_SYM:
        h = O->dvs[x] != O->stamp;
        break;
    case SP_OP_ADD: case SP_OP_SUB: case SP_OP_NEG:
        h = 1;
        for (uint32_t k = 0; k < nd->nargs && h; k++) {
            sp_expr_t a = sp_expr_arg(E, x, k);
            h = (sp_expr_op(E, a) == SP_OP_CONST && fmpq_is_zero(sp_expr_const(E, a))) ||
                held(E, O, t, a, depth + 1);
        }
        break;
    case SP_OP_DOT:
        h = 1;
        for (uint32_t k = 0; k + 1 < nd->nargs && h; k += 2) {
            sp_expr_t a = sp_expr_arg(E, x, k), b = sp_expr_arg(E, x, k + 1);
            h = (inert(O, b) && held(E, O, t, a, depth + 1)) ||
                (inert(O, a) && held(E, O, t, b, depth + 1));
        }
        break;
    case SP_OP_MUL: {
        uint32_t k = 0, live = 0; /* the factors that are not inert: at most the held one */
        for (uint32_t i = 0; i < nd->nargs; i++)
            if (!inert(O, sp_expr_arg(E, x, i)))
                live++, k = i;
        if (live == 1)
            h = held(E, O, t, sp_expr_arg(E, x, k), depth + 1);
        for (uint32_t i = 0; i < nd->nargs && !h && live == 0; i++)
            h = held(E, O, t, sp_expr_arg(E, x, i), depth + 1);
        break;
    }
    case SP_OP_DIV:
        h = held(E, O, t, sp_expr_arg(E, x, 0), depth + 1);
        break;
    case SP_OP_POW:
        h = nd->param > 0 && held(E, O, t, sp_expr_arg(E, x, 0), depth + 1);
        break;
    default:
        break;
    }
    O->hvs[x] = O->stamp;
    O->held[x] = (uint8_t)h;
    return h;
}

/* Unit u's factor f (of its leaf) holds a marker in every monomial of its form: a variable that
   no other term holds and no divisor of its own.  Either f holds markers of its term (held()),
   or f = exp(a), a without log and piecewise operators, and a monomial of a's numerator holds
   a symbol that no other unit's cone holds (the atom exp(m / D) of that monomial m is then in
   f's form, the only monomial of exp(a)'s). */
static int marker(sp_engine_t *S, owners_t *O, uint32_t u)
{
    sp_ectx_struct *E = S->E;
    sp_expr_t f = O->unit[u].node;
    if (O->unit[u].den)
        return 0;
    if (sp_expr_op(E, f) == SP_OP_SYM && O->poly[f] == u)
        return 1; /* no other unit reaches it, divisors included: the common case, at once */
    if (sp_expr_op(E, f) != SP_OP_EXP) {
        uint32_t t = O->unit[u].term + 1;
        if (!O->termed && !own_terms(E, O))
            return 0;
        if (O->dterm != t) { /* the term's divisors first: from its first unit */
            uint32_t w = u;
            while (w > 1 && O->unit[w - 1].term + 1 == t)
                w--;
            if (!under_divisors(E, O, w, t))
                return 0;
            O->dterm = t;
        }
        return held(E, O, t, f, 0);
    }
    sp_expr_t a = sp_expr_arg(E, f, 0);
    if (O->haslog[a] || (sp_expr_node(E, a)->flags & SP_NODE_PIECEWISE))
        return 0;
    sp_nfid_t id = sp_nf_of_expr(S, a);
    if (id == SP_NF_FAIL) {
        S->why = SP_WHY_NONE;
        return 0;
    }
    const sp_poly_struct *p = S->nf[id].num;
    for (slong j = 0; j < p->len; j++) {
        const sp_vpow_t *v = sp_mono_factors(&S->M, p->m[j]);
        for (uint32_t i = 0; i < sp_mono_nfactors(&S->M, p->m[j]); i++) {
            const sp_var_t *var = &S->var[v[i].var];
            if (var->kind == SP_VAR_SYM && O->seen[var->sym] == O->stamp && O->full[var->sym] == u)
                return 1;
        }
    }
    return 0;
}

/*
 * Sum e counts nothing, shown without its terms' normal forms: every leaf of every term but at
 * most one holds markers (marker()).  Then, over the common denominator of the terms (a product
 * of divisors, which hold no marker), the numerator is a polynomial in the markers whose
 * every monomial comes from one term, and dividing out a marker-free gcd keeps that, so no
 * coefficient of the sum adds up terms.  1 if shown, 0 if not, -1 if memory ran out, -2 if the
 * deadline passed.
 */
static int terms_private(sp_engine_t *S, owners_t *O, sp_expr_t e)
{
    int r = owners(S->E, O, e);
    if (r <= 0)
        return r;
    uint32_t unshown = 0, term = UINT32_MAX;
    for (uint32_t u = 1; u <= O->nu;) {
        uint32_t leaf = O->unit[u].leaf, k = O->unit[u].term;
        int shown = 0;
        for (; u <= O->nu && O->unit[u].leaf == leaf; u++)
            shown = shown || marker(S, O, u);
        if (!shown && k != term) { /* term k has a leaf without a marker */
            term = k;
            if (++unshown > 1)
                return 0;
        }
    }
    return 1;
}

int sp_engine_counts(sp_engine_t *S, sp_expr_t *at)
{
    *at = SP_EXPR_NONE;
    /* normal forms within budgets of their own (per form and in all), so that the test costs a
       bounded part of the stage: a form past them counts as sharing */
    slong mt = S->lim.max_terms;
    size_t cap = mt > 0 ? (size_t)mt * SP_NF_TERMS_FACTOR : SIZE_MAX;
    S->nf_total_cap = cap; /* the structural test's forms (exp arguments) within the engine's
                              bound, which the lowered max_terms below would otherwise scale */
    if (mt <= 0 || mt > SP_COUNT_TERMS)
        S->lim.max_terms = SP_COUNT_TERMS;
    sp_expr_t len0 = S->E->len; /* the forms below may add nodes: the arrays cover these */
    owners_t O;
    memset(&O, 0, sizeof O);
    /* the test is part of the stage's query: its deadline (max_ms, --timeout) bounds it, the
       normal forms below included */
    int64_t dl0 = S->deadline_ns;
    O.deadline = S->deadline_ns = sp_engine_query_deadline(S);
    O.haslog = flint_calloc(len0, 1);
    O.seen = flint_calloc(len0, sizeof(uint32_t));
    O.full = flint_malloc(len0 * sizeof(uint32_t));
    O.poly = flint_malloc(len0 * sizeof(uint32_t));
    O.len = len0;
    sp_expr_t *rest = NULL; /* the sums not shown structurally */
    uint32_t nrest = 0, restcap = 0;
    int r = O.haslog && O.seen && O.full && O.poly ? 0 : -1;
    for (sp_expr_t x = 1; r == 0 && x < len0; x++) {
        const sp_node_t *xd = sp_expr_node(S->E, x);
        O.haslog[x] = xd->op == SP_OP_LOG;
        for (uint32_t k = 0; k < xd->nargs && !O.haslog[x]; k++)
            O.haslog[x] = O.haslog[sp_expr_arg(S->E, x, k)];
    }
    S->naxs = 0;
    S->nstruct = 0;
    for (sp_expr_t e = 1; e < len0 && r == 0; e++) {
        const sp_node_t *nd = sp_expr_node(S->E, e);
        if (!(nd->flags & SP_NODE_AXSUM) || nd->op != SP_OP_ADD || nd->nargs < 2)
            continue;
        int s = terms_private(S, &O, e);
        S->why = SP_WHY_NONE;
        if (s < 0) {
            r = s;
        } else if (s == 1) {
            if (S->nstruct++ == 0)
                S->struct0 = e;
        } else if (nrest == restcap) {
            restcap = restcap ? 2 * restcap : 64;
            sp_expr_t *q = flint_realloc(rest, restcap * sizeof(sp_expr_t));
            if (q == NULL)
                r = -1;
            else
                (rest = q)[nrest++] = e;
        } else {
            rest[nrest++] = e;
        }
    }
    /* the others by their terms' normal forms */
    if (S->nf_terms + SP_COUNT_TOTAL < cap)
        S->nf_total_cap = S->nf_terms + SP_COUNT_TOTAL;
    uint32_t *buf = NULL;
    size_t bcap = 0;
    sp_nfid_t *t = NULL;
    uint32_t tcap = 0;
    for (uint32_t i = 0; i < nrest && r == 0; i++) {
        sp_expr_t e = rest[i];
        uint32_t n = sp_expr_nargs(S->E, e);
        if (n > tcap) {
            tcap = n;
            sp_nfid_t *q = flint_realloc(t, tcap * sizeof(sp_nfid_t));
            if (q == NULL) {
                r = -1;
                break;
            }
            t = q;
        }
        if (!sum_terms(S, e, t, &n)) {
            /* past the budget: counted as sharing; past the deadline: undecided */
            r = S->why == SP_WHY_LIMIT_TIME || S->why == SP_WHY_LIMIT_TIMEOUT ? -2 : 1;
        } else if ((r = terms_share(S, t, n, &buf, &bcap)) == 0) {
            sp_expr_t *a = flint_realloc(S->axs, (S->naxs + 1) * sizeof(sp_expr_t));
            if (a == NULL)
                r = -1;
            else
                (S->axs = a)[S->naxs++] = e;
        }
        if (r != 0)
            *at = e;
    }
    S->lim.max_terms = mt;
    S->nf_total_cap = 0;
    S->deadline_ns = dl0;
    S->why = SP_WHY_NONE;
    flint_free(O.haslog);
    flint_free(O.seen);
    flint_free(O.full);
    flint_free(O.poly);
    flint_free(O.term);
    flint_free(O.vis);
    flint_free(O.dvs);
    flint_free(O.hvs);
    flint_free(O.held);
    flint_free(O.stack);
    flint_free(O.unit);
    flint_free(O.lv);
    flint_free(rest);
    flint_free(t);
    flint_free(buf);
    return r;
}

sp_expr_t sp_engine_counted(const sp_engine_t *S) { return S->counted; }

/* An equal leaf of a case split under S->env: the sums tested again (sp_engine_counts) */
static void leaf_counts(sp_engine_t *S)
{
    uint32_t *buf = NULL;
    size_t cap = 0;
    for (uint32_t k = 0; k < S->naxs && S->counted == SP_EXPR_NONE; k++) {
        sp_expr_t e = S->axs[k];
        uint32_t n = sp_expr_nargs(S->E, e);
        sp_nfid_t *t = flint_malloc(n * sizeof(sp_nfid_t));
        if (t == NULL || !sum_terms(S, e, t, &n) || terms_share(S, t, n, &buf, &cap) != 0)
            S->counted = e; /* a limit counts as sharing: the test is not passed */
        flint_free(t);
    }
    flint_free(buf);
}

sp_ectx_struct *sp_engine_exprs(sp_engine_t *S) { return S->E; }

uint64_t sp_engine_seed(const sp_engine_t *S) { return S->seed; }

char *sp_engine_print_nf(sp_engine_t *S, sp_expr_t e, size_t maxlen)
{
    sp_why_t save = S->why;
    sp_nfid_t a = sp_nf_of_expr(S, e);
    S->why = save;
    if (a == SP_NF_FAIL)
        return NULL;
    return sp_nf_print(S, a, maxlen);
}

/* ---- witnesses ---------------------------------------------------------------------------- */

typedef struct {
    sp_expr_t a, b;
    uint32_t *syms;  /* symbol nodes in the cone of a and b, ascending */
    slong nsyms;
    fmpq *vals;      /* by symbol index, nvals = E->nsyms long; NULL until a search needs it */
    slong nvals;
    uint64_t rng;
} wit_t;

static void wit_init(wit_t *w, sp_engine_t *S, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t roots[2];
    roots[0] = a;
    roots[1] = b;
    uint32_t *cone = NULL;
    const sp_ectx_struct *E = S->E;
    size_t n = sp_expr_cone(E, roots, 2, &cone);
    w->a = a;
    w->b = b;
    w->syms = flint_malloc((n ? n : 1) * sizeof(uint32_t));
    w->nsyms = 0;
    for (size_t i = 0; i < n; i++)
        if (sp_expr_op(S->E, cone[i]) == SP_OP_SYM)
            w->syms[w->nsyms++] = cone[i];
    flint_free(cone);
    w->vals = NULL; /* most queries never search for a witness: allocated on first use */
    w->nvals = 0;
    w->rng = sp_mix64(S->seed ^ sp_mix64(((uint64_t)a << 32) | b) ^ S->queries);
}

static void wit_clear(wit_t *w, sp_engine_t *S)
{
    flint_free(w->syms);
    if (w->vals)
        _fmpq_vec_clear(w->vals, w->nvals);
}

static uint64_t wit_next(wit_t *w)
{
    w->rng += UINT64_C(0x9e3779b97f4a7c15);
    return sp_mix64(w->rng);
}

/* A small random rational; the range widens with the attempt number t. */
static void wit_random(wit_t *w, fmpq_t x, slong t)
{
    uint64_t r = wit_next(w);
    if (t < 8) {
        fmpq_set_si(x, (slong)(r % 5) - 2, 1);
    } else if (t < 40) {
        fmpq_set_si(x, (slong)(r % 13) - 6, 1);
    } else {
        slong num = (slong)(r % 41) - 20;
        ulong den = 1 + (r >> 32) % 7;
        fmpq_set_si(x, num, den);
    }
}

static int wit_certify(sp_engine_t *S, wit_t *w, sp_result_t *res)
{
    char *va = NULL, *vb = NULL;
    int exact = 0;
    if (!sp_eval_certify_differ_by(S->E, w->a, w->b, w->vals, S->deadline_ns, &va, &vb, &exact))
        return 0;
    if (res) {
        sp_result_clear(res);
        res->answer = SP_DIFFERENT;
        res->cex.n = w->nsyms;
        res->cex.syms = flint_malloc((w->nsyms ? w->nsyms : 1) * sizeof(sp_expr_t));
        res->cex.vals = _fmpq_vec_init(w->nsyms ? w->nsyms : 1);
        for (slong i = 0; i < w->nsyms; i++) {
            res->cex.syms[i] = w->syms[i];
            fmpq_set(res->cex.vals + i, w->vals + S->E->nodes[w->syms[i]].param);
        }
        res->cex.lhs_value = va;
        res->cex.rhs_value = vb;
        res->cex.exact = exact;
    } else {
        flint_free(va);
        flint_free(vb);
    }
    return 1;
}

/*
 * Random search.  With env and start (values by symbol index for the symbols the branch's
 * conditions mention, marked in fixed), tries the start point first, then small perturbations
 * of it; symbols the environment substitutes are recomputed from their right-hand sides.
 */
static int wit_search(sp_engine_t *S, wit_t *w, slong tries, const sp_env_t *env,
                      const fmpq *start, const uint8_t *fixed, sp_result_t *res, slong *count)
{
    fmpq_t eps, r;
    if (w->vals == NULL) {
        w->nvals = S->E->nsyms ? S->E->nsyms : 1;
        w->vals = _fmpq_vec_init(w->nvals);
    }
    fmpq_init(eps);
    fmpq_init(r);
    int found = 0;
    for (slong t = 0; t < tries && !found; t++) {
        /* every try: one evaluation of a deep expression can take longer than max_ms (the
           evaluators watch the deadline too) */
        if (sp_engine_time_up(S))
            break;
        for (slong i = 0; i < w->nsyms; i++) {
            slong s = S->E->nodes[w->syms[i]].param;
            if (start && fixed[s]) {
                fmpq_set(w->vals + s, start + s);
                if (t > 0) {
                    /* perturb by a random multiple of 2^-(t mod 16) / 8 */
                    wit_random(w, r, 40);
                    fmpq_set_si(eps, 1, UWORD(8) << (t % 16));
                    fmpq_mul(r, r, eps);
                    fmpq_add(w->vals + s, w->vals + s, r);
                }
            } else {
                wit_random(w, w->vals + s, start ? t + 8 : t);
            }
        }
        int ok = 1;
        if (env) {
            for (slong k = 0; k < env->nsub && ok; k++) {
                uint32_t v = env->sub_var[k];
                slong s = S->E->nodes[S->var[v].sym].param;
                ok = sp_nf_eval_fmpq(S, env->sub_nf[k], w->vals, w->vals + s);
            }
        }
        if (count)
            (*count)++;
        if (ok)
            found = wit_certify(S, w, res);
    }
    fmpq_clear(eps);
    fmpq_clear(r);
    return found;
}

/* ---- case splits -------------------------------------------------------------------------- */

/* Pick the sign condition to split on: the innermost piecewise atom of diff with an open case. */
static sp_nfid_t choose_split(sp_engine_t *S, sp_nfid_t diff)
{
    uint32_t *vars;
    slong n = sp_nf_reachable_vars(S, diff, &vars);
    sp_nfid_t d = SP_NF_FAIL;
    for (slong i = 0; i < n && d == SP_NF_FAIL; i++) {
        const sp_var_t x = S->var[vars[i]];
        if (x.kind == SP_VAR_POS || x.kind == SP_VAR_ZERO) {
            d = sp_var_arg(S, vars[i], 0);
        } else if (x.kind == SP_VAR_MAX || x.kind == SP_VAR_MIN) {
            for (uint32_t p = 0; p < x.nargs && d == SP_NF_FAIL; p++)
                for (uint32_t q = p + 1; q < x.nargs && d == SP_NF_FAIL; q++) {
                    sp_nfid_t t = sp_nf_sub(S, sp_var_arg(S, vars[i], p), sp_var_arg(S, vars[i], q));
                    if (t != SP_NF_FAIL && sp_nf_env_sign(S, t) == 2)
                        d = t;
                }
        }
    }
    flint_free(vars);
    if (d == SP_NF_FAIL)
        return d;
    int flip;
    return sp_nf_normalize_sign(S, d, &flip);
}

/* A symbol variable occurring in d (den 1) only as c*v: d = c*v + rest.  UINT32_MAX if none. */
static uint32_t solvable_var(sp_engine_t *S, sp_nfid_t d)
{
    const sp_nf_struct *x = sp_nf_get(S, d);
    if (!sp_poly_is_one(x->den))
        return UINT32_MAX;
    uint32_t best = UINT32_MAX;
    for (slong i = 0; i < x->num->len; i++) {
        uint32_t m = x->num->m[i];
        if (sp_mono_nfactors(&S->M, m) != 1)
            continue;
        sp_vpow_t f = sp_mono_factors(&S->M, m)[0];
        if (f.exp != 1 || S->var[f.var].kind != SP_VAR_SYM || f.var >= best)
            continue;
        int alone = 1;
        for (slong j = 0; j < x->num->len && alone; j++)
            if (j != i && sp_mono_exp(&S->M, x->num->m[j], f.var) != 0)
                alone = 0;
        if (alone)
            best = f.var;
    }
    return best;
}

static void env_push_cond(sp_env_t *v, sp_nfid_t d, int sign)
{
    v->cond = flint_realloc(v->cond, (v->ncond + 1) * sizeof(sp_nfid_t));
    v->sign = flint_realloc(v->sign, (v->ncond + 1) * sizeof(int8_t));
    v->cond[v->ncond] = d;
    v->sign[v->ncond] = (int8_t)sign;
    v->ncond++;
}

/*
 * Child of env with sign(d) = s.  Returns 0 if the child is infeasible by constant folding,
 * -1 on a limit, 1 otherwise.
 */
static int make_child(sp_engine_t *S, const sp_env_t *env, sp_nfid_t d, int s, sp_env_t *child)
{
    sp_env_copy(child, env);
    uint32_t v = s == 0 ? solvable_var(S, d) : UINT32_MAX;
    if (v == UINT32_MAX) {
        env_push_cond(child, d, s);
        return 1;
    }
    /* d = c*v + rest = 0  =>  v = -rest/c */
    const sp_nf_struct *x = sp_nf_get(S, d);
    fmpq_t c;
    fmpq_init(c);
    sp_poly_t rest;
    sp_poly_init(rest);
    for (slong i = 0; i < x->num->len; i++) {
        uint32_t m = x->num->m[i];
        if (sp_mono_nfactors(&S->M, m) == 1 && sp_mono_factors(&S->M, m)[0].var == v)
            fmpq_set(c, x->num->c + i);
    }
    sp_poly_set(rest, x->num);
    fmpq_neg(c, c);
    sp_nfid_t vnf = SP_NF_FAIL;
    {
        /* rhs = (d - c_v * v) / (-c_v), built with normal-form arithmetic */
        const sp_env_t *save = S->env;
        S->env = NULL;
        sp_nfid_t vv = sp_nf_sym(S, S->var[v].sym);
        fmpq_t cv;
        fmpq_init(cv);
        fmpq_neg(cv, c);
        sp_nfid_t t = sp_nf_sub(S, d, sp_nf_scalar(S, vv, cv));
        fmpq_inv(c, c);
        vnf = sp_nf_scalar(S, t, c);
        fmpq_clear(cv);
        S->env = save;
    }
    sp_poly_clear(rest);
    fmpq_clear(c);
    if (vnf == SP_NF_FAIL)
        return -1;
    child->sub_var = flint_realloc(child->sub_var, (child->nsub + 1) * sizeof(uint32_t));
    child->sub_nf = flint_realloc(child->sub_nf, (child->nsub + 1) * sizeof(sp_nfid_t));
    child->sub_var[child->nsub] = v;
    child->sub_nf[child->nsub] = vnf;
    child->nsub++;
    /* rewrite the older conditions and substitutions under the new substitution alone */
    sp_env_t only;
    sp_env_init(&only);
    only.sub_var = flint_malloc(sizeof(uint32_t));
    only.sub_nf = flint_malloc(sizeof(sp_nfid_t));
    only.sub_var[0] = v;
    only.sub_nf[0] = vnf;
    only.nsub = 1;
    const sp_env_t *save = S->env;
    S->env = &only;
    int ok = 1;
    for (slong k = 0; k + 1 < child->nsub && ok >= 0; k++) {
        child->sub_nf[k] = sp_nf_rebuild(S, child->sub_nf[k]);
        if (child->sub_nf[k] == SP_NF_FAIL)
            ok = -1;
    }
    slong kept = 0;
    for (slong k = 0; k < child->ncond && ok > 0; k++) {
        sp_nfid_t r = sp_nf_rebuild(S, child->cond[k]);
        int flip;
        sp_nfid_t n = r == SP_NF_FAIL ? SP_NF_FAIL : sp_nf_normalize_sign(S, r, &flip);
        if (n == SP_NF_FAIL) {
            ok = -1;
            break;
        }
        if (sp_nf_is_const(S, n)) {
            if (flip != child->sign[k])
                ok = 0; /* the branch contradicts itself */
            continue;
        }
        child->cond[kept] = n;
        child->sign[kept] = (int8_t)(child->sign[k] * flip);
        kept++;
    }
    child->ncond = kept;
    S->env = save;
    sp_env_clear(&only);
    return ok;
}

/*
 * A branch where the sides still differ and nothing is left to split: the branch is vacuous if
 * its conditions are infeasible; otherwise look for a witness inside it.  Returns 1 (DIFFERENT,
 * res filled), 0 (vacuous) or 2 (undecided; *why set).
 */
static int decide_leaf(sp_engine_t *S, const sp_env_t *env, wit_t *w, sp_result_t *res,
                       sp_why_t *why)
{
    /* linear conditions over symbols -> exact LP */
    int linear = 1;
    uint32_t *cols = NULL;
    slong ncols = 0;
    for (slong k = 0; k < env->ncond && linear; k++) {
        const sp_nf_struct *x = sp_nf_get(S, env->cond[k]);
        if (!sp_poly_is_one(x->den)) {
            linear = 0;
            break;
        }
        for (slong i = 0; i < x->num->len && linear; i++) {
            uint32_t m = x->num->m[i];
            if (m == 0)
                continue;
            if (sp_mono_nfactors(&S->M, m) != 1 || sp_mono_factors(&S->M, m)[0].exp != 1 ||
                S->var[sp_mono_factors(&S->M, m)[0].var].kind != SP_VAR_SYM) {
                linear = 0;
                break;
            }
            uint32_t v = sp_mono_factors(&S->M, m)[0].var;
            slong j;
            for (j = 0; j < ncols; j++)
                if (cols[j] == v)
                    break;
            if (j == ncols) {
                cols = flint_realloc(cols, (ncols + 1) * sizeof(uint32_t));
                cols[ncols++] = v;
            }
        }
    }
    int result = 2;
    fmpq *start = NULL;
    uint8_t *fixed = NULL;
    if (linear && env->ncond > 0) {
        slong m = env->ncond;
        fmpq *A = _fmpq_vec_init(m * (ncols ? ncols : 1));
        fmpq *B = _fmpq_vec_init(m);
        fmpq *X = _fmpq_vec_init(ncols ? ncols : 1);
        sp_lp_rel_t *rel = flint_malloc(m * sizeof(sp_lp_rel_t));
        for (slong k = 0; k < m; k++) {
            const sp_nf_struct *x = sp_nf_get(S, env->cond[k]);
            for (slong i = 0; i < x->num->len; i++) {
                uint32_t mm = x->num->m[i];
                if (mm == 0) {
                    fmpq_neg(B + k, x->num->c + i);
                    continue;
                }
                uint32_t v = sp_mono_factors(&S->M, mm)[0].var;
                for (slong j = 0; j < ncols; j++)
                    if (cols[j] == v)
                        fmpq_set(A + k * ncols + j, x->num->c + i);
            }
            rel[k] = env->sign[k] > 0 ? SP_LP_GT : env->sign[k] < 0 ? SP_LP_LT : SP_LP_EQ;
        }
        sp_lp_status_t st = sp_lp_feasible(A, B, rel, m, ncols, 10000, X);
        if (st == SP_LP_INFEASIBLE) {
            result = 0;
        } else if (st == SP_LP_FEASIBLE) {
            start = _fmpq_vec_init(S->E->nsyms ? S->E->nsyms : 1);
            fixed = flint_calloc(S->E->nsyms ? S->E->nsyms : 1, 1);
            for (slong j = 0; j < ncols; j++) {
                slong s = S->E->nodes[S->var[cols[j]].sym].param;
                fmpq_set(start + s, X + j);
                fixed[s] = 1;
            }
        }
        _fmpq_vec_clear(A, m * (ncols ? ncols : 1));
        _fmpq_vec_clear(B, m);
        _fmpq_vec_clear(X, ncols ? ncols : 1);
        flint_free(rel);
    }
    if (result == 2) {
        if (wit_search(S, w, S->lim.cex_tries, env, start, fixed, res, res ? &res->witness_tries : NULL))
            result = 1;
        else
            *why = linear ? SP_WHY_NO_WITNESS : SP_WHY_NONLINEAR_CASE;
    }
    if (start)
        _fmpq_vec_clear(start, S->E->nsyms ? S->E->nsyms : 1);
    flint_free(fixed);
    flint_free(cols);
    return result;
}

static sp_answer_t split_decide(sp_engine_t *S, sp_nfid_t na, sp_nfid_t nb, wit_t *w,
                                sp_result_t *res)
{
    slong cap = 16, top = 0;
    sp_env_t *stack = flint_malloc(cap * sizeof(sp_env_t));
    sp_env_init(&stack[top++]);
    sp_why_t undecided = SP_WHY_NONE;
    sp_answer_t ans = SP_EQUAL;
    slong splits = 0;
    while (top > 0) {
        sp_env_t env = stack[--top];
        if (splits > S->lim.max_splits) {
            undecided = SP_WHY_LIMIT_SPLITS;
            sp_env_clear(&env);
            break;
        }
        if (sp_engine_time_up(S)) {
            undecided = sp_engine_time_why(S);
            sp_env_clear(&env);
            break;
        }
        S->env = &env;
        sp_nfid_t ra = sp_nf_rebuild(S, na);
        sp_nfid_t rb = sp_nf_rebuild(S, nb);
        sp_nfid_t diff = (ra == SP_NF_FAIL || rb == SP_NF_FAIL) ? SP_NF_FAIL : sp_nf_sub(S, ra, rb);
        if (diff == SP_NF_FAIL) {
            S->env = NULL;
            undecided = S->why != SP_WHY_NONE ? S->why : SP_WHY_LIMIT_TERMS;
            sp_env_clear(&env);
            break;
        }
        if (ra == rb) {
            if (S->nstruct > 0 && env.nsub > 0)
                S->counted = S->struct0; /* a substitution may replace a marker of a sum shown
                                            structurally (terms_private) */
            if (S->naxs > 0)
                leaf_counts(S);
            S->env = NULL;
            sp_env_clear(&env);
            continue;
        }
        sp_nfid_t d = choose_split(S, diff);
        if (d == SP_NF_FAIL) {
            sp_why_t why = SP_WHY_NONE;
            int r = decide_leaf(S, &env, w, res, &why);
            S->env = NULL;
            sp_env_clear(&env);
            if (r == 1) {
                ans = SP_DIFFERENT;
                break;
            }
            if (r == 2 && undecided == SP_WHY_NONE)
                undecided = why;
            continue;
        }
        /* children pushed so that the positive case is explored first */
        static const int signs[3] = {0, -1, 1};
        for (int k = 0; k < 3; k++) {
            if (top == cap) {
                cap *= 2;
                stack = flint_realloc(stack, cap * sizeof(sp_env_t));
            }
            int ok = make_child(S, &env, d, signs[k], &stack[top]);
            splits++;
            if (ok > 0)
                top++;
            else
                sp_env_clear(&stack[top]);
            if (ok < 0 && undecided == SP_WHY_NONE)
                undecided = S->why != SP_WHY_NONE ? S->why : SP_WHY_LIMIT_TERMS;
        }
        S->env = NULL;
        sp_env_clear(&env);
    }
    S->env = NULL;
    while (top > 0)
        sp_env_clear(&stack[--top]);
    flint_free(stack);
    if (res)
        res->splits += splits;
    if (ans == SP_DIFFERENT)
        return ans;
    if (undecided != SP_WHY_NONE) {
        if (res)
            res->why = undecided;
        return SP_UNKNOWN;
    }
    return SP_EQUAL;
}

/* ---- fingerprints that respect the rewrite rules ---------------------------------------- */

/*
 * Evaluation modulo SP_FP_PRIME where every arithmetic node is computed from its arguments and
 * every other node (exp, log, max, cmp, ...) is the value of its normal form, with each symbol
 * and each atom variable a pseudo-random residue.  By induction every node's value is its normal
 * form's value, so equal normal forms give equal fingerprints; only atom arguments need normal
 * forms, not the (possibly huge) arithmetic around them.  Returns 0 when a limit stopped a
 * normal form or a division by zero mod p occurred.
 */
static int nf_mod_value(sp_engine_t *S, sp_nfid_t a, uint64_t seed, nmod_t mod, uint64_t *out)
{
    const sp_nf_struct *x = sp_nf_get(S, a);
    uint64_t v[2];
    const sp_poly_struct *ps[2] = {x->num, x->den};
    for (int w = 0; w < 2; w++) {
        uint64_t acc = 0;
        for (slong i = 0; i < ps[w]->len; i++) {
            const fmpq *c = ps[w]->c + i;
            uint64_t cn = fmpz_fdiv_ui(fmpq_numref(c), mod.n), cd = fmpz_fdiv_ui(fmpq_denref(c), mod.n);
            if (cd == 0)
                return 0;
            uint64_t t = nmod_mul(cn, n_invmod(cd, mod.n), mod);
            uint32_t m = ps[w]->m[i];
            for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, m); k++) {
                sp_vpow_t f = sp_mono_factors(&S->M, m)[k];
                const sp_var_t *var = &S->var[f.var];
                uint64_t base = var->kind == SP_VAR_SYM
                                    ? sp_fp_hash(seed, (uint64_t)S->E->nodes[var->sym].param) % mod.n
                                    : sp_fp_hash(seed ^ UINT64_C(0x5bd1e9955bd1e995), var->hash) % mod.n;
                if (f.exp < 0) {
                    if (base == 0)
                        return 0;
                    base = n_invmod(base, mod.n);
                }
                t = nmod_mul(t, nmod_pow_ui(base, (ulong)(f.exp < 0 ? -(int64_t)f.exp : f.exp), mod), mod);
            }
            acc = nmod_add(acc, t, mod);
        }
        v[w] = acc;
    }
    if (v[1] == 0)
        return 0;
    *out = nmod_mul(v[0], n_invmod(v[1], mod.n), mod);
    return 1;
}

int sp_fingerprint_nf(sp_engine_t *S, const sp_expr_t *roots, slong n, uint64_t seed, uint64_t *out)
{
    uint32_t *cone;
    size_t m = sp_expr_cone(S->E, roots, (size_t)n, &cone);
    if (cone == NULL)
        return 0;
    nmod_t mod;
    nmod_init(&mod, SP_FP_PRIME);
    uint64_t *val = flint_malloc((m ? m : 1) * sizeof(uint64_t));
    int ok = 1;
    sp_why_t save = S->why;
    for (size_t i = 0; i < m && ok; i++) {
        sp_expr_t e = cone[i];
        const sp_node_t *nd = sp_expr_node(S->E, e);
#define ARG(k) val[sp_bsearch_u32(cone, m, sp_expr_arg(S->E, e, (k)))]
        switch ((sp_op_t)nd->op) {
        case SP_OP_SYM:
            val[i] = sp_fp_hash(seed, (uint64_t)nd->param) % mod.n;
            break;
        case SP_OP_CONST: {
            const fmpq *c = sp_expr_const(S->E, e);
            uint64_t d = fmpz_fdiv_ui(fmpq_denref(c), mod.n);
            ok = d != 0;
            if (ok)
                val[i] = nmod_mul(fmpz_fdiv_ui(fmpq_numref(c), mod.n), n_invmod(d, mod.n), mod);
            break;
        }
        case SP_OP_ADD: {
            uint64_t a = 0;
            for (uint32_t k = 0; k < nd->nargs; k++)
                a = nmod_add(a, ARG(k), mod);
            val[i] = a;
            break;
        }
        case SP_OP_MUL: {
            uint64_t a = 1;
            for (uint32_t k = 0; k < nd->nargs; k++)
                a = nmod_mul(a, ARG(k), mod);
            val[i] = a;
            break;
        }
        case SP_OP_DOT: {
            uint64_t a = 0;
            for (uint32_t k = 0; k + 1 < nd->nargs; k += 2)
                a = nmod_add(a, nmod_mul(ARG(k), ARG(k + 1), mod), mod);
            val[i] = a;
            break;
        }
        case SP_OP_NEG:
            val[i] = nmod_neg(ARG(0), mod);
            break;
        case SP_OP_SUB:
            val[i] = nmod_sub(ARG(0), ARG(1), mod);
            break;
        case SP_OP_DIV:
            ok = ARG(1) != 0;
            if (ok)
                val[i] = nmod_mul(ARG(0), n_invmod(ARG(1), mod.n), mod);
            break;
        case SP_OP_POW: {
            uint64_t b = ARG(0);
            if (nd->param < 0) {
                ok = b != 0;
                if (ok)
                    b = n_invmod(b, mod.n);
            }
            if (ok)
                val[i] = nmod_pow_ui(b, (ulong)(nd->param < 0 ? -nd->param : nd->param), mod);
            break;
        }
        default: {
            sp_nfid_t a = sp_nf_of_expr(S, e);
            ok = a != SP_NF_FAIL && nf_mod_value(S, a, seed, mod, &val[i]);
            break;
        }
        }
#undef ARG
    }
    for (slong k = 0; k < n && ok; k++)
        out[k] = val[sp_bsearch_u32(cone, m, roots[k])];
    S->why = save;
    flint_free(val);
    flint_free(cone);
    return ok;
}

/* An upper bound on numerator degree + denominator degree of e as a rational function of its
   symbols and atoms (capped at 2^40), for the Schwartz-Zippel bound of probabilistic answers. */
static int64_t degree_bound(sp_engine_t *S, sp_expr_t root)
{
    uint32_t *cone;
    size_t m = sp_expr_cone(S->E, &root, 1, &cone);
    if (cone == NULL)
        return INT64_C(1) << 40;
    int64_t *d = flint_malloc((m ? m : 1) * sizeof(int64_t));
    const int64_t cap = INT64_C(1) << 40;
    for (size_t i = 0; i < m; i++) {
        sp_expr_t e = cone[i];
        const sp_node_t *nd = sp_expr_node(S->E, e);
        int64_t r = 0;
        switch ((sp_op_t)nd->op) {
        case SP_OP_SYM: r = 1; break;
        case SP_OP_CONST: r = 0; break;
        case SP_OP_NEG: r = d[sp_bsearch_u32(cone, m, sp_expr_arg(S->E, e, 0))]; break;
        case SP_OP_POW: {
            int64_t k = nd->param < 0 ? -nd->param : nd->param;
            int64_t a = d[sp_bsearch_u32(cone, m, sp_expr_arg(S->E, e, 0))];
            r = a > 0 && k > cap / a ? cap : a * k;
            break;
        }
        case SP_OP_ADD: case SP_OP_MUL: case SP_OP_SUB: case SP_OP_DIV: case SP_OP_DOT:
            for (uint32_t k = 0; k < nd->nargs; k++)
                r += d[sp_bsearch_u32(cone, m, sp_expr_arg(S->E, e, k))];
            break;
        default: {
            /* an atom-level node: the degree of its normal form in symbols and atoms */
            sp_nfid_t a = sp_nf_of_expr(S, e);
            if (a == SP_NF_FAIL) {
                r = cap;
                break;
            }
            const sp_nf_struct *x = sp_nf_get(S, a);
            const sp_poly_struct *ps[2] = {x->num, x->den};
            for (int w = 0; w < 2; w++) {
                int64_t mx = 0;
                for (slong t = 0; t < ps[w]->len; t++) {
                    int64_t dd = 0;
                    for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, ps[w]->m[t]); k++) {
                        int32_t ex = sp_mono_factors(&S->M, ps[w]->m[t])[k].exp;
                        dd += ex < 0 ? -ex : ex;
                    }
                    mx = FLINT_MAX(mx, dd);
                }
                r += mx;
            }
        }
        }
        d[i] = r > cap ? cap : r;
    }
    int64_t out = d[sp_bsearch_u32(cone, m, root)];
    flint_free(d);
    flint_free(cone);
    return out;
}

/* ---- the decision ------------------------------------------------------------------------- */

static sp_answer_t finish(sp_result_t *res, sp_answer_t a, sp_why_t why)
{
    if (res) {
        res->answer = a;
        res->why = a == SP_UNKNOWN ? why : SP_WHY_NONE;
    }
    return a;
}

/* ---- sum-of-products canonical forms --------------------------------------------------------
 *
 * A structural rewrite of the DAG, tried before the normal forms: nested sums and products are
 * flattened (associativity), and a product of one sum with symbol-free factors is distributed
 * over the sum (c * (t1 + ... + tn) = c*t1 + ... + c*tn).  Both are identities wherever either
 * side is defined (the same subexpressions occur on both sides), so two expressions with the
 * same canonical node are equal; different canonical nodes say nothing.  This proves sums that
 * are the same multiset of terms grouped differently, e.g. an attention key gradient
 * scale * (sum over all queries) against the sum over ranks of scale * (sum over the rank's
 * queries), whose rational normal forms are too large to build.  The forms live in S->C. */

static void canon_reset(sp_engine_t *S)
{
    sp_ectx_clear(S->C);
    sp_ectx_init(S->C);
    if (S->canon)
        memset(S->canon, 0, S->canon_alloc * sizeof(uint32_t));
    S->ncfree = 0;
}

/* 1 if C node c has no symbol in its cone (fills cfree up to c; C ids are topological). */
static int canon_symfree(sp_engine_t *S, sp_expr_t c)
{
    sp_ectx_struct *C = S->C;
    if (c >= S->ncfree) {
        if (C->len > S->cfree_alloc) {
            uint32_t na = C->len + C->len / 2 + 16;
            uint8_t *p = flint_realloc(S->cfree, na);
            if (p == NULL)
                return 0;
            S->cfree = p;
            S->cfree_alloc = na;
        }
        for (uint32_t i = S->ncfree; i < C->len; i++) {
            uint8_t f = i != 0 && C->nodes[i].op != SP_OP_SYM;
            for (uint32_t k = 0; f && k < C->nodes[i].nargs; k++)
                f = S->cfree[C->argv[C->nodes[i].args + k]];
            S->cfree[i] = f;
        }
        S->ncfree = C->len;
    }
    return c < S->ncfree && S->cfree[c];
}

typedef struct {
    sp_expr_t *v;
    uint32_t n, alloc;
} cbuf_t;

static int cbuf_push(cbuf_t *b, sp_expr_t x)
{
    if (b->n == b->alloc) {
        uint32_t na = b->alloc ? 2 * b->alloc : 16;
        sp_expr_t *p = flint_realloc(b->v, na * sizeof(sp_expr_t));
        if (p == NULL)
            return 0;
        b->v = p;
        b->alloc = na;
    }
    b->v[b->n++] = x;
    return 1;
}

/* Push x, or x's arguments when x is a C node of operator op (one level: they are canonical). */
static int cbuf_splice(cbuf_t *b, const sp_ectx_struct *C, sp_op_t op, sp_expr_t x)
{
    if (C->nodes[x].op != op)
        return cbuf_push(b, x);
    for (uint32_t k = 0; k < C->nodes[x].nargs; k++)
        if (!cbuf_push(b, C->argv[C->nodes[x].args + k]))
            return 0;
    return 1;
}

/* The canonical form of the product of f[0..n): flattened, distributed over a single sum when
   every other factor is symbol-free.  w is scratch. */
static sp_expr_t canon_mul(sp_engine_t *S, const sp_expr_t *f, uint32_t n, cbuf_t *w, cbuf_t *t)
{
    sp_ectx_struct *C = S->C;
    w->n = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!cbuf_splice(w, C, SP_OP_MUL, f[i]))
            return SP_EXPR_NONE;
    uint32_t sum = UINT32_MAX, nsum = 0, others_free = 1;
    for (uint32_t i = 0; i < w->n; i++) {
        if (C->nodes[w->v[i]].op == SP_OP_ADD) {
            sum = i;
            nsum++;
        } else if (!canon_symfree(S, w->v[i])) {
            others_free = 0;
        }
    }
    if (nsum != 1 || !others_free || w->n < 2)
        return sp_expr_nary(C, SP_OP_MUL, w->v, w->n);
    /* c * (t1 + ... + tk) = c*t1 + ... + c*tk; no term of a canonical sum is a sum */
    sp_expr_t s = w->v[sum];
    uint32_t nt = C->nodes[s].nargs, nf = w->n;
    w->v[sum] = w->v[nf - 1];
    cbuf_t prod = {NULL, 0, 0};
    t->n = 0;
    int ok = 1;
    for (uint32_t k = 0; k < nt && ok; k++) {
        prod.n = 0;
        for (uint32_t i = 0; i + 1 < nf && ok; i++)
            ok = cbuf_push(&prod, w->v[i]);
        ok = ok && cbuf_splice(&prod, C, SP_OP_MUL, C->argv[C->nodes[s].args + k]);
        sp_expr_t term = ok ? sp_expr_nary(C, SP_OP_MUL, prod.v, prod.n) : SP_EXPR_NONE;
        ok = term != SP_EXPR_NONE && cbuf_push(t, term);
    }
    flint_free(prod.v);
    if (!ok)
        return SP_EXPR_NONE;
    w->n = 0;
    for (uint32_t k = 0; k < t->n; k++)
        if (!cbuf_splice(w, C, SP_OP_ADD, t->v[k]))
            return SP_EXPR_NONE;
    return sp_expr_nary(C, SP_OP_ADD, w->v, w->n);
}

/* The canonical form of e (memoized in S->canon), or SP_EXPR_NONE if the store ran out. */
static sp_expr_t canon_of(sp_engine_t *S, sp_expr_t e, size_t argv_cap)
{
    sp_ectx_struct *E = S->E, *C = S->C;
    if (E->len > S->canon_alloc) {
        uint32_t na = E->len + E->len / 2 + 16;
        uint32_t *p = flint_realloc(S->canon, na * sizeof(uint32_t));
        if (p == NULL)
            return SP_EXPR_NONE;
        memset(p + S->canon_alloc, 0, (na - S->canon_alloc) * sizeof(uint32_t));
        S->canon = p;
        S->canon_alloc = na;
    }
    if (S->canon[e] != 0)
        return S->canon[e];
    uint32_t *cone;
    size_t m = sp_expr_cone_skip(E, &e, 1, S->canon, S->canon_alloc, &cone);
    if (cone == NULL)
        return SP_EXPR_NONE;
    cbuf_t a = {NULL, 0, 0}, w = {NULL, 0, 0}, t = {NULL, 0, 0};
    sp_expr_t r = SP_EXPR_NONE;
    for (size_t i = 0; i < m; i++) {
        sp_expr_t x = cone[i];
        if (S->canon[x] != 0)
            continue;
        /* flattening a chain of n nested sums stores O(n^2) arguments: give up past the cap */
        if (C->argv_len > argv_cap ||
            ((i & 1023) == 0 && S->deadline_ns != 0 && sp_now_ns() > S->deadline_ns)) {
            C->oom = 1;
            break;
        }
        const sp_node_t *nd = &E->nodes[x];
        a.n = 0;
        int ok = 1;
        for (uint32_t k = 0; k < nd->nargs && ok; k++)
            ok = cbuf_push(&a, S->canon[E->argv[nd->args + k]]);
        if (!ok)
            break;
        switch ((sp_op_t)nd->op) {
        case SP_OP_SYM: r = sp_expr_sym_copy(C, E, (uint32_t)nd->param); break;
        case SP_OP_CONST: r = sp_expr_const_fmpq(C, E->consts + nd->param); break;
        case SP_OP_ADD:
            w.n = 0;
            for (uint32_t k = 0; k < a.n && ok; k++)
                ok = cbuf_splice(&w, C, SP_OP_ADD, a.v[k]);
            r = ok ? sp_expr_nary(C, SP_OP_ADD, w.v, w.n) : SP_EXPR_NONE;
            break;
        case SP_OP_MUL: r = canon_mul(S, a.v, a.n, &w, &t); break;
        case SP_OP_DOT: { /* never in an engine's store (sp_expr_import writes it out); here the
                             sum of the products, which is its value */
            uint32_t h = a.n / 2;
            w.n = 0;
            t.n = 0;
            for (uint32_t k = 0; k < h && ok; k++)
                ok = cbuf_push(&w, a.v[2 * k]) && cbuf_push(&t, a.v[2 * k + 1]);
            r = ok ? sp_expr_dot(C, w.v, t.v, h) : SP_EXPR_NONE;
            break;
        }
        case SP_OP_POW: r = sp_expr_pow(C, a.v[0], nd->param); break;
        case SP_OP_CMP: r = sp_expr_cmp(C, (sp_cmp_t)nd->param, a.v[0], a.v[1]); break;
        case SP_OP_WHERE: r = sp_expr_where(C, a.v[0], a.v[1], a.v[2]); break;
        case SP_OP_CLAMP: r = sp_expr_clamp(C, a.v[0], a.v[1], a.v[2]); break;
        default:
            r = sp_op_is_nary((sp_op_t)nd->op) ? sp_expr_nary(C, (sp_op_t)nd->op, a.v, a.n)
                : nd->nargs == 1 ? sp_expr_unary(C, (sp_op_t)nd->op, a.v[0])
                                 : sp_expr_binary(C, (sp_op_t)nd->op, a.v[0], a.v[1]);
        }
        if (r == SP_EXPR_NONE)
            break;
        S->canon[x] = r;
    }
    flint_free(a.v);
    flint_free(w.v);
    flint_free(t.v);
    flint_free(cone);
    return S->canon[e];
}

int sp_canon_equal(sp_engine_t *S, sp_expr_t a, sp_expr_t b)
{
    /* the private store may hold about twice the expressions; past that it starts over */
    size_t cap = 2 * (size_t)S->E->len + ((size_t)1 << 16);
    size_t argv_cap = 2 * S->E->argv_len + ((size_t)1 << 18);
    if (S->C->oom || S->C->len > cap || S->C->argv_len > argv_cap)
        canon_reset(S);
    S->C->max_nodes = cap;
    sp_expr_t ca = canon_of(S, a, argv_cap);
    sp_expr_t cb = ca == SP_EXPR_NONE ? SP_EXPR_NONE : canon_of(S, b, argv_cap);
    return ca != SP_EXPR_NONE && ca == cb;
}

sp_answer_t sp_equiv(sp_engine_t *S, sp_expr_t a, sp_expr_t b, sp_result_t *res)
{
    if (res) {
        sp_result_clear(res);
    }
    S->queries++;
    S->why = SP_WHY_NONE;
    S->deadline_ns = sp_engine_query_deadline(S);
    if (a == SP_EXPR_NONE || b == SP_EXPR_NONE || S->E->oom)
        return finish(res, SP_UNKNOWN, sp_why_full(S->E));
    if (a == b || sp_canon_equal(S, a, b))
        return finish(res, SP_EQUAL, SP_WHY_NONE);
    unsigned fl = S->E->nodes[a].flags | S->E->nodes[b].flags;
    int atom_free = !(fl & (SP_NODE_PIECEWISE | SP_NODE_TRANSC));
    wit_t w;
    wit_init(&w, S, a, b);
    sp_answer_t ans;
    /* 1. fingerprints.  For an atom-free cone, different fingerprints prove a difference (the
       rational functions differ), so look for the witness at once.  With atoms, fingerprints
       treat them as independent random functions and differ for every rewrite rule, so they
       say nothing: the normal forms decide first. */
    int piecewise = (fl & SP_NODE_PIECEWISE) != 0;
    int fp_points_agree = 0; /* points at which the rule-respecting fingerprints agreed */
    if (!atom_free && !piecewise) {
        /* atoms without case splits: equal normal forms give equal fingerprints, so a
           difference is a strong hint and agreement at k points is Schwartz-Zippel evidence */
        sp_expr_t roots[2];
        roots[0] = a;
        roots[1] = b;
        slong npts = S->lim.probabilistic > 0 ? S->lim.probabilistic : 1;
        for (slong k = 0; k < npts; k++) {
            uint64_t fp[2];
            if (!sp_fingerprint_nf(S, roots, 2, S->seed ^ S->queries ^ (uint64_t)(k * 7919), fp))
                break;
            if (fp[0] != fp[1]) {
                if (wit_search(S, &w, S->lim.cex_tries, NULL, NULL, NULL, res,
                               res ? &res->witness_tries : NULL)) {
                    ans = finish(res, SP_DIFFERENT, SP_WHY_NONE);
                    goto done;
                }
                fp_points_agree = -1;
                break;
            }
            fp_points_agree++;
        }
    }
    if (atom_free) {
        uint64_t fp[2];
        sp_expr_t roots[2];
        roots[0] = a;
        roots[1] = b;
        if (sp_fingerprint(S->E, roots, 2, S->seed ^ S->queries, fp) && fp[0] != fp[1]) {
            if (wit_search(S, &w, S->lim.cex_tries, NULL, NULL, NULL, res,
                           res ? &res->witness_tries : NULL))
                ans = finish(res, SP_DIFFERENT, SP_WHY_NONE);
            else
                ans = finish(res, SP_UNKNOWN, timed(S->why) ? S->why : SP_WHY_NO_WITNESS);
            goto done;
        }
    }
    /* 2. normal forms */
    sp_nfid_t na = sp_nf_of_expr(S, a);
    sp_nfid_t nb = na == SP_NF_FAIL ? SP_NF_FAIL : sp_nf_of_expr(S, b);
    if (na == SP_NF_FAIL || nb == SP_NF_FAIL) {
        /* a limit stopped the proof; a certified witness still decides a difference */
        sp_why_t why = S->why != SP_WHY_NONE ? S->why : SP_WHY_LIMIT_TERMS;
        if (S->lim.probabilistic > 0 && !piecewise && why != SP_WHY_UNDEFINED) {
            /* --probabilistic: the exact proof ran out; fingerprints that respect the rules
               agreed at every point (atom-free cones: plain fingerprints, which are exact
               evaluations of the rational functions) */
            slong pts = fp_points_agree;
            if (atom_free) {
                sp_expr_t roots[2];
                roots[0] = a;
                roots[1] = b;
                pts = 0;
                for (slong k = 0; k < S->lim.probabilistic; k++) {
                    uint64_t fp[2];
                    if (!sp_fingerprint(S->E, roots, 2, S->seed ^ S->queries ^ (uint64_t)(k * 7919), fp) ||
                        fp[0] != fp[1])
                        break;
                    pts++;
                }
            }
            if (pts == S->lim.probabilistic) {
                int64_t deg = FLINT_MAX(degree_bound(S, a), degree_bound(S, b));
                slong bits = 0;
                while (bits < 62 && (INT64_C(1) << bits) < deg + 1)
                    bits++;
                ans = finish(res, SP_EQUAL, SP_WHY_NONE);
                if (res)
                    res->probabilistic_bits = pts * (62 - bits) > 0 ? pts * (62 - bits) : 0;
                goto done;
            }
        }
        if (!timed(why) &&
            wit_search(S, &w, S->lim.cex_tries, NULL, NULL, NULL, res,
                       res ? &res->witness_tries : NULL))
            ans = finish(res, SP_DIFFERENT, SP_WHY_NONE);
        else
            ans = finish(res, SP_UNKNOWN, why);
        goto done;
    }
    if (na == nb) {
        ans = finish(res, SP_EQUAL, SP_WHY_NONE);
        goto done;
    }
    /* 3. different normal forms without piecewise atoms: a witness decides */
    if (!((sp_nf_get(S, na)->flags | sp_nf_get(S, nb)->flags) & SP_VF_PIECEWISE)) {
        if (wit_search(S, &w, S->lim.cex_tries, NULL, NULL, NULL, res,
                       res ? &res->witness_tries : NULL))
            ans = finish(res, SP_DIFFERENT, SP_WHY_NONE);
        else
            ans = finish(res, SP_UNKNOWN,
                         timed(S->why) ? S->why : SP_WHY_NO_WITNESS);
        goto done;
    }
    /* 4. case splits on the piecewise atoms the difference depends on */
    ans = split_decide(S, na, nb, &w, res);
    if (res) {
        sp_why_t why = res->why;
        finish(res, ans, why);
    }
done:
    wit_clear(&w, S);
    S->deadline_ns = 0;
    return ans;
}

sp_answer_t sp_equiv_vec(sp_engine_t *S, const sp_expr_t *a, const sp_expr_t *b, size_t n,
                         sp_result_t *res)
{
    sp_answer_t ans = SP_EQUAL;
    for (size_t i = 0; i < n; i++) {
        ans = sp_equiv(S, a[i], b[i], res);
        if (ans != SP_EQUAL) {
            if (res)
                res->index = (slong)i;
            return ans;
        }
    }
    if (res)
        res->index = -1;
    return ans;
}
