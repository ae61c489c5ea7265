/* nf.h: canonical normal forms (reduced fractions over symbols and atoms) and the atom table. */
#ifndef SP_NF_H
#define SP_NF_H

#include <stdint.h>

#include "expr.h"
#include "poly.h"
#include "solver.h"

/*
 * A normal form is num/den with num a Laurent polynomial and den a polynomial such that
 *   - den has no monomial factor (every variable's least exponent over den's terms is 0),
 *   - den's canonically leading coefficient is 1 (so a constant den is exactly 1),
 *   - gcd(num, den) = 1 (checked with FLINT when den is not constant),
 *   - num = 0 implies den = 1.
 * Normal forms are interned: equal normal forms have equal ids (sp_nfid_t), so comparing two
 * expressions is comparing two integers once their normal forms are built.
 *
 * Variables of the polynomials are symbols and atoms.  An atom is an opaque application keyed by
 * the ids of its arguments' normal forms, so congruent applications are one variable.  Atom kinds
 * and their invariants (docs/soundness.md lists the rules that produce them):
 *   EXP(t)   exp(t), t a single term over a denominator (exp of a sum is split); positive
 *   LOG(u)   log(u), u not splittable further by the positive-factor rule
 *   SQRT(u)  sqrt(u), u not a rational constant square; nonnegative (positive when inverted)
 *   ERF(u)   erf(u), u with positive leading coefficient (erf is odd)
 *   PHI(u)   standard normal CDF, u with positive leading coefficient (PHI(-u) = 1 - PHI(u))
 *   MAX(a..), MIN(a..)  n >= 2 arguments, flattened, deduplicated, sorted by id, at most one
 *            constant, none dominated by another through a constant difference
 *   POS(d)   1 if d > 0 else 0;  ZERO(d)  1 if d == 0 else 0; d normalized: content 1,
 *            positive leading coefficient, not constant
 */
typedef uint32_t sp_nfid_t;
#define SP_NF_FAIL UINT32_MAX

typedef enum {
    SP_VAR_SYM = 0,
    SP_VAR_EXP,
    SP_VAR_LOG,
    SP_VAR_SQRT,
    SP_VAR_ERF,
    SP_VAR_PHI,
    SP_VAR_MAX,
    SP_VAR_MIN,
    SP_VAR_POS,
    SP_VAR_ZERO
} sp_var_kind_t;

#define SP_VF_PIECEWISE 1u /* the variable is, or its arguments contain, a piecewise atom */
#define SP_VF_TRANSC 2u    /* ... a transcendental atom */
#define SP_VF_POSITIVE 4u  /* the atom's value is positive wherever it is defined */

typedef struct {
    uint8_t kind;
    uint8_t flags;
    uint32_t nargs;
    uint32_t args;   /* offset into vargs (nf ids) */
    sp_expr_t sym;   /* SP_VAR_SYM: the symbol node */
    uint64_t hash;
} sp_var_t;

typedef struct {
    sp_poly_t num, den;
    uint64_t hash;
    uint8_t flags;   /* union of the variables' flags */
} sp_nf_struct;

/* A case-split environment: known signs of normalized polynomials, and symbol substitutions. */
typedef struct {
    sp_nfid_t *cond;   /* normalized conditions */
    int8_t *sign;      /* -1, 0, +1 */
    slong ncond;
    uint32_t *sub_var; /* symbol variables replaced ... */
    sp_nfid_t *sub_nf; /* ... by these normal forms */
    slong nsub;
} sp_env_t;

void sp_env_init(sp_env_t *v);
void sp_env_clear(sp_env_t *v);
void sp_env_copy(sp_env_t *dst, const sp_env_t *src);

struct sp_engine {
    sp_ectx_t E;
    sp_mstore_t M;
    sp_limits_t lim;
    uint64_t seed;
    /* interned normal forms */
    sp_nf_struct *nf;
    uint32_t nnf, nf_alloc;
    size_t nf_terms;         /* terms of all of them (numerators and denominators) */
    uint32_t *nf_table;
    uint32_t nf_tsize;
    /* variables: symbols and atoms */
    sp_var_t *var;
    uint32_t nvar, var_alloc;
    sp_nfid_t *vargs;
    size_t nvargs, vargs_alloc;
    uint32_t *var_table;
    uint32_t var_tsize;
    uint32_t *sym_var;       /* symbol index -> var id + 1 */
    uint32_t sym_var_alloc;
    /* expression -> normal form cache (nf id + 1, 0 = not computed) for the empty environment */
    uint32_t *cache;
    uint32_t cache_alloc;
    /* scratch for variable traversals */
    uint32_t *stamp;
    uint32_t stamp_now;
    sp_nfid_t *image;
    /* current environment (NULL outside case splits) and failure reason */
    const sp_env_t *env;
    sp_why_t why;
    int64_t deadline_ns;     /* 0 = none */
    uint64_t queries;
    /* sum-of-products canonical forms (solver.c, canon_equal) in a private store C, so that they
       never take node budget from E: canon[e] = C id of expression e (0 = not computed);
       cfree[c] = 1 if C node c has no symbol in its cone (valid for c < ncfree) */
    sp_ectx_t C;
    uint32_t *canon;
    uint32_t canon_alloc;
    uint8_t *cfree;
    uint32_t ncfree, cfree_alloc;
    /* per-node definedness facts (defined.c), NULL until the first sp_defined_implied */
    struct sp_defined_cache *defined;
    /* counts (sp_engine_counts): the sums over axes found, tested again at every equal leaf of
       a case split; counted: the first whose terms share a monomial (SP_EXPR_NONE: none) */
    sp_expr_t *axs;
    uint32_t naxs;
    uint32_t nstruct;        /* sums shown structurally (without their terms' normal forms), */
    sp_expr_t struct0;       /* the first of them */
    size_t nf_total_cap;     /* nonzero: the bound on all normal forms' terms while the count
                                test runs with a smaller max_terms (the query's own bound) */
    sp_expr_t counted;
};

/* the count test's budgets (sp_engine_counts): terms per normal form, and of all the forms it
   builds */
#define SP_COUNT_TERMS 2000
#define SP_COUNT_TOTAL 200000

/* Constructors of normal forms.  All return SP_NF_FAIL (and set S->why) on a limit. */
sp_nfid_t sp_nf_const(sp_engine_t *S, const fmpq_t c);
sp_nfid_t sp_nf_si(sp_engine_t *S, slong c);
sp_nfid_t sp_nf_sym(sp_engine_t *S, sp_expr_t sym);
sp_nfid_t sp_nf_add(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b);
sp_nfid_t sp_nf_sub(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b);
sp_nfid_t sp_nf_neg(sp_engine_t *S, sp_nfid_t a);
sp_nfid_t sp_nf_mul(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b);
sp_nfid_t sp_nf_div(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b);
sp_nfid_t sp_nf_pow(sp_engine_t *S, sp_nfid_t a, slong k);
sp_nfid_t sp_nf_scalar(sp_engine_t *S, sp_nfid_t a, const fmpq_t c);
sp_nfid_t sp_nf_exp(sp_engine_t *S, sp_nfid_t a);
sp_nfid_t sp_nf_log(sp_engine_t *S, sp_nfid_t a);
sp_nfid_t sp_nf_sqrt(sp_engine_t *S, sp_nfid_t a);
sp_nfid_t sp_nf_erf(sp_engine_t *S, sp_nfid_t a);
sp_nfid_t sp_nf_phi(sp_engine_t *S, sp_nfid_t a);
sp_nfid_t sp_nf_maxmin(sp_engine_t *S, int is_max, const sp_nfid_t *args, slong n);
sp_nfid_t sp_nf_pos(sp_engine_t *S, sp_nfid_t d);
sp_nfid_t sp_nf_zero(sp_engine_t *S, sp_nfid_t d);

/* The normal form p / 1 of a copy of the Laurent polynomial p (over the engine's variables). */
sp_nfid_t sp_nf_poly(sp_engine_t *S, const sp_poly_t p);

/* Normal form of an expression (cached when no environment is active).  Iterative. */
sp_nfid_t sp_nf_of_expr(sp_engine_t *S, sp_expr_t e);

/* The normal form a under the environment S->env (substitutions applied, decided atoms folded). */
sp_nfid_t sp_nf_rebuild(sp_engine_t *S, sp_nfid_t a);

/*
 * Normalize d for use as a sign condition: d = c * d' with c a nonzero rational (sign in *flip:
 * +1 or -1) and d' with content 1 and positive leading coefficient.  Returns d' (or SP_NF_FAIL).
 * For a constant d, returns the id of the constant 1 or 0 and *flip gives the sign (0 for zero).
 */
sp_nfid_t sp_nf_normalize_sign(sp_engine_t *S, sp_nfid_t d, int *flip);

/* Sign of d known from S->env: -1, 0, +1, or 2 if unknown. */
int sp_nf_env_sign(sp_engine_t *S, sp_nfid_t d);

static inline const sp_nf_struct *sp_nf_get(const sp_engine_t *S, sp_nfid_t a) { return &S->nf[a]; }
static inline int sp_nf_is_const(const sp_engine_t *S, sp_nfid_t a)
{
    return sp_poly_is_const(S->nf[a].num) && sp_poly_is_one(S->nf[a].den);
}
static inline sp_nfid_t sp_var_arg(const sp_engine_t *S, uint32_t v, uint32_t i)
{
    return S->vargs[S->var[v].args + i];
}

/* The variables reachable from a (through atom arguments too), ascending; count returned.
   *out is owned by the caller (flint_free). */
slong sp_nf_reachable_vars(sp_engine_t *S, sp_nfid_t a, uint32_t **out);

/* If a is exactly one variable to the first power (num = v, den = 1), return v, else UINT32_MAX. */
uint32_t sp_nf_as_var(const sp_engine_t *S, sp_nfid_t a);

/* Print a normal form (canonical term order).  Caller frees with flint_free. */
char *sp_nf_print(const sp_engine_t *S, sp_nfid_t a, size_t maxlen);

/* Exact evaluation of an atom-free normal form at a symbol point (by symbol index);
   returns 0 if an atom occurs or the denominator vanishes. */
int sp_nf_eval_fmpq(const sp_engine_t *S, sp_nfid_t a, const fmpq *symvals, fmpq_t out);

/*
 * 1 if a and b have the same sum-of-products canonical form (solver.c): then they are equal
 * wherever both are defined, and defined at the same points (the rewrites keep every
 * subexpression).  Memoized in S->C.
 */
int sp_canon_equal(sp_engine_t *S, sp_expr_t a, sp_expr_t b);

int sp_engine_time_up(sp_engine_t *S);
/* A query's deadline: max_ms from now, or the run's deadline (limits.deadline_ns) if earlier;
   0 = none. */
int64_t sp_engine_query_deadline(const sp_engine_t *S);
/* The reason of a deadline that passed: SP_WHY_LIMIT_TIMEOUT once the run's has, else
   SP_WHY_LIMIT_TIME. */
sp_why_t sp_engine_time_why(const sp_engine_t *S);

#endif
