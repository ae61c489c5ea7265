/* solver.h: the exact engine's API: build expressions, decide equality, get certificates. */
#ifndef SP_SOLVER_H
#define SP_SOLVER_H

#include <stddef.h>
#include <stdint.h>

#include <flint/fmpq.h>

#include "expr.h"

/*
 * The engine decides whether two expressions are equal as real functions of their symbols
 * (wherever both are defined).  Answers:
 *   SP_EQUAL      proved: the normal forms are identical, in every case of every split;
 *   SP_DIFFERENT  certified: a rational point where both sides are defined and differ, checked
 *                 by exact evaluation or by disjoint Arb balls;
 *   SP_UNKNOWN    neither; the result names the reason (a limit or an undecided case).
 */
typedef enum { SP_EQUAL = 0, SP_DIFFERENT = 1, SP_UNKNOWN = 2 } sp_answer_t;

/* Why an answer is UNKNOWN. */
typedef enum {
    SP_WHY_NONE = 0,
    SP_WHY_LIMIT_TERMS,    /* a polynomial exceeded limits.max_terms (or the engine's normal
                              forms SP_NF_TERMS_FACTOR times it) */
    SP_WHY_LIMIT_DEGREE,   /* a monomial exceeded limits.max_degree */
    SP_WHY_LIMIT_SPLITS,   /* more than limits.max_splits case splits */
    SP_WHY_LIMIT_TIME,     /* limits.max_ms passed */
    SP_WHY_LIMIT_NODES,    /* the expression store reached limits.max_nodes or memory ran out */
    SP_WHY_NO_WITNESS,     /* the normal forms differ but no certified counterexample was found */
    SP_WHY_NONLINEAR_CASE, /* a case split's conditions are nonlinear and no witness was found */
    SP_WHY_UNDEFINED,      /* no point was found where both sides are defined */
    SP_WHY_LIMIT_COEFF,    /* a coefficient of a normal form exceeded limits.max_coeff_bits */
    SP_WHY_DEFINEDNESS,    /* sp_defined_implied: an obligation of the left side was neither
                              discharged nor refuted (result.detail names it) */
    SP_WHY_LIMIT_MEMORY,   /* the expression store stopped growing at limits.max_vm or max_rss */
    SP_WHY_LIMIT_TIMEOUT   /* limits.deadline_ns (the whole run's budget) passed */
} sp_why_t;

const char *sp_why_name(sp_why_t why);
/* Why a store that failed to build a node is full: SP_WHY_LIMIT_MEMORY when it stopped at a
   memory bound, else SP_WHY_LIMIT_NODES (max_nodes, or an allocation that failed). */
sp_why_t sp_why_full(const sp_ectx_struct *E);

/* the normal forms one engine holds together: at most this many times max_terms terms */
#define SP_NF_TERMS_FACTOR 64

typedef struct {
    slong max_terms;   /* per polynomial, and SP_NF_TERMS_FACTOR times that in all the normal
                          forms of one engine (a stage's); default 200000 */
    slong max_degree;  /* total degree per monomial; default 256 */
    slong max_splits;  /* case-split branches per query; default 4096 */
    slong max_ms;      /* wall-clock per query in milliseconds; 0 = none; default 0 */
    int64_t deadline_ns; /* a CLOCK_MONOTONIC time (sp_now_ns) that ends every query and the
                            store's growth: the whole run's budget (--timeout); 0 = none */
    slong max_nodes;   /* expression nodes; 0 = none */
    size_t max_vm;     /* bytes of the process's address space past which the store does not
                          grow (it is then full, like max_nodes); 0 = none */
    size_t max_rss;    /* the same for the process's resident memory; 0 = none */
    slong max_coeff_bits; /* bits of the numerator or denominator of any rational coefficient
                             of a normal form (and of the weights log builds); default 65536;
                             0 = none.  Towers of small powers of constants otherwise grow
                             without bound (one GMP power is not interruptible) */
    slong cex_tries;   /* random points tried per witness search; default 200 */
    slong probabilistic; /* 0: exact only (default).  k > 0: when a limit stops the exact proof
                            of a query without piecewise operators, answer EQUAL if fingerprints
                            (which respect the rewrite rules) agree at k random points; the
                            result then carries the error bound */
} sp_limits_t;

void sp_limits_default(sp_limits_t *lim);

/* A counterexample: a value for every symbol the two sides depend on, and both sides' values. */
typedef struct {
    slong n;
    sp_expr_t *syms;   /* the symbol nodes, ascending id */
    fmpq *vals;        /* their values */
    char *lhs_value;   /* printed value of the left side: exact rational or an Arb ball */
    char *rhs_value;
    int exact;         /* 1 if both values are exact rationals, 0 if Arb balls */
} sp_cex_t;

typedef struct {
    sp_answer_t answer;
    sp_why_t why;
    slong index;       /* for vector queries: the first element that is not EQUAL, else -1 */
    sp_cex_t cex;      /* filled when answer == SP_DIFFERENT */
    slong splits;      /* case-split branches explored */
    slong probabilistic_bits; /* > 0: EQUAL from fingerprints only, with error probability
                                 below 2^-probabilistic_bits (Schwartz-Zippel); 0: a proof */
    slong witness_tries;
    char *detail;      /* sp_defined_implied: for DIFFERENT the operation of the left side that
                          fails at cex ("division by zero at `n` = 0"), for UNKNOWN the obligation
                          not discharged ("denominator `n` nonzero"); else NULL.  Owned */
} sp_result_t;

void sp_result_init(sp_result_t *r);
void sp_result_clear(sp_result_t *r);

/* The engine: an expression store plus normal-form caches, atoms and options. */
typedef struct sp_engine sp_engine_t;

sp_engine_t *sp_engine_new(const sp_limits_t *lim, uint64_t seed);
void sp_engine_free(sp_engine_t *S);
sp_ectx_struct *sp_engine_exprs(sp_engine_t *S);
uint64_t sp_engine_seed(const sp_engine_t *S);

/* Decide a == b.  res may be NULL.  Never aborts on input; limits give SP_UNKNOWN. */
sp_answer_t sp_equiv(sp_engine_t *S, sp_expr_t a, sp_expr_t b, sp_result_t *res);

/* Decide a[i] == b[i] for all i < n; stops at the first element that is not EQUAL. */
sp_answer_t sp_equiv_vec(sp_engine_t *S, const sp_expr_t *a, const sp_expr_t *b, size_t n,
                         sp_result_t *res);

/*
 * A fingerprint of roots[0..n) modulo a 62-bit prime at the point derived from seed that agrees
 * for expressions with equal normal forms (atoms are random values keyed by their canonical
 * arguments; only atom arguments get normal forms).  Returns 0 if it could not be computed (a
 * limit, or a division by zero modulo the prime).
 */
int sp_fingerprint_nf(sp_engine_t *S, const sp_expr_t *roots, slong n, uint64_t seed, uint64_t *out);

/*
 * Counts (docs/soundness.md, "Counts"): every sum of the store that an operator formed over an
 * axis (SP_NODE_AXSUM) must have terms whose normal forms' numerators share no monomial, since a
 * monomial that k terms share gets the coefficient k, a number of elements.  Each sum is shown
 * structurally where it can be (every term but one holds a marker: a variable in every monomial
 * of its numerator and in no other term's, namely a symbol factor or the exp atom of a symbol
 * that no other factor or term holds), else by its terms' normal forms within budgets
 * (SP_COUNT_TERMS per form, SP_COUNT_TOTAL in all), which it keeps: each case split's equal
 * leaves test those again under the leaf's environment (a max atom may equal a shared argument
 * there), and a leaf that substitutes a symbol counts when a sum was shown structurally.
 * Returns 0 when none shares, 1 when one does or may (a form past the budgets), -1 when
 * memory ran out and -2 when the query's deadline (max_ms, the run's) passed first
 * (sp_engine_time_why says which); *at is the sum that shares.  sp_engine_counted: the first
 * sum found sharing in a case split since (SP_EXPR_NONE: none).
 */
int sp_engine_counts(sp_engine_t *S, sp_expr_t *at);
sp_expr_t sp_engine_counted(const sp_engine_t *S);

/*
 * The canonical normal form of e, printed (numerator/denominator of polynomials over symbols and
 * atoms, terms in canonical order).  The same expression always prints the same.  Returns NULL if
 * a limit was hit.  Caller frees with flint_free.
 */
char *sp_engine_print_nf(sp_engine_t *S, sp_expr_t e, size_t maxlen);

#endif
