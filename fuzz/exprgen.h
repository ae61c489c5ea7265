/* exprgen.h: random expressions, equality-preserving rewrites and perturbations for the fuzzers. */
#ifndef SP_FUZZ_EXPRGEN_H
#define SP_FUZZ_EXPRGEN_H

#include <stdint.h>

#include <flint/fmpq.h>

#include "expr.h"

/*
 * Shared by diff_fuzz (a normal program) and the libFuzzer harnesses.  Everything is iterative
 * over the DAG except xg_gen, whose depth is its argument (bounded by the caller, never by input).
 *
 * A rewrite (xg_rewrite) replaces subterms by expressions that are equal as real functions
 * wherever both are defined (the engine's notion of equality, docs/soundness.md); some rules also
 * shrink or grow the domain (x -> exp(log x)), which that notion allows.  A perturbation
 * (xg_perturb) changes one subterm in a way that usually, but not always, changes the function.
 */

/* Operator families a generator may use (also the families a rule needs). */
#define XG_ARITH 1u   /* add sub neg mul, constants */
#define XG_DIV 2u     /* div, negative powers */
#define XG_POW 4u     /* integer powers */
#define XG_TRANSC 8u  /* exp log tanh sigmoid silu gelu erf */
#define XG_ROOT 16u   /* sqrt rsqrt */
#define XG_PIECE 32u  /* max min relu abs clamp */
#define XG_COND 64u   /* comparisons and where */
#define XG_HARD 128u  /* valid rules the engine is not expected to prove (UNKNOWN is fine) */
#define XG_ALL 127u

#define XG_MAXSYMS 6

/* splitmix64 */
typedef struct {
    uint64_t s;
} xg_rng_t;

static inline uint64_t xg_next(xg_rng_t *r)
{
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline uint32_t xg_below(xg_rng_t *r, uint32_t n) { return n ? (uint32_t)(xg_next(r) % n) : 0; }

/* 1 with probability num/den */
static inline int xg_chance(xg_rng_t *r, uint32_t num, uint32_t den) { return xg_below(r, den) < num; }

/* Rule counters, indexed by the rule ids of exprgen.c. */
#define XG_NRULES 128

typedef struct {
    sp_ectx_struct *E;
    xg_rng_t rng;
    int nvars;                   /* symbols x0 .. x(nvars-1) are used */
    sp_expr_t sym[XG_MAXSYMS];   /* x0 .. x5, created by xg_init */
    unsigned fam;                /* XG_* families allowed in generated and inserted terms */
    uint32_t max_cone;           /* rewrites stop once a side's cone reaches this many nodes */
    uint32_t hits[XG_NRULES];    /* how often each rule was applied */
    int last_rule;               /* id of the last rule applied, -1 if none */
} xg_t;

/* Creates the symbols x0..x5 in E (so in a fresh store their symbol indices are 0..5). */
void xg_init(xg_t *g, sp_ectx_struct *E, uint64_t seed);

/* A random expression of the given depth over the allowed families. */
sp_expr_t xg_gen(xg_t *g, int depth);

/* A small random term (depth <= 1) for rules that insert one. */
sp_expr_t xg_small(xg_t *g);

/* A random rational constant with small numerator and denominator; nonzero if asked. */
sp_expr_t xg_const(xg_t *g, int nonzero);

/* Rebuild a node from its operator, parameter and (new) arguments. */
sp_expr_t xg_rebuild(sp_ectx_struct *E, sp_op_t op, int64_t param, const sp_expr_t *args,
                     uint32_t n);

/*
 * Equal by construction: apply about `count` local rewrites at random positions of e's cone.
 * Returns the rewritten expression (e itself if nothing applied), SP_EXPR_NONE if the store ran
 * out of room.
 */
sp_expr_t xg_rewrite(xg_t *g, sp_expr_t e, int count);

/* Apply one rewrite at the root only (no descent). SP_EXPR_NONE if no rule applied. */
sp_expr_t xg_rewrite_root(xg_t *g, sp_expr_t e);

/* One perturbation at a random position of e's cone (e itself if none applies). */
sp_expr_t xg_perturb(xg_t *g, sp_expr_t e);

/*
 * A two-sided template from the softmax / log-sum-exp / online-softmax / cross-entropy family:
 * *a and *b equal; when broken is set, *b is the classic wrong variant (per-shard shift without
 * rescaling, and similar).  Returns the template id.
 */
int xg_template(xg_t *g, sp_expr_t *a, sp_expr_t *b, int broken);

/* Number of nodes in e's cone. */
uint32_t xg_cone_size(const sp_ectx_struct *E, sp_expr_t e);

/* Name of rule id (for statistics). */
const char *xg_rule_name(int id);

/*
 * A random point for symbols 0..nsyms-1: small integers, halves and thirds, zero, and repeated
 * coordinates (ties are where piecewise rules go wrong).
 */
void xg_point(xg_rng_t *r, fmpq *vals, slong nsyms);

/*
 * Do a and b certainly differ at the point?  Exact evaluation when it is rational, else Arb balls
 * at prec bits.  Returns 1 (both defined, certainly different), 0 (equal, or undecided), -1 (a
 * side is undefined at the point or evaluation gave up).
 */
int xg_differ_at(const sp_ectx_struct *E, sp_expr_t a, sp_expr_t b, const fmpq *vals, slong prec);

#endif
