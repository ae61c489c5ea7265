/* eval.h: evaluate expressions at a point: exactly over Q, with Arb balls, and modulo a prime. */
#ifndef SP_EVAL_H
#define SP_EVAL_H

#include <flint/fmpq.h>
#include <arb.h>

#include "expr.h"

/*
 * A point assigns a value to symbols by symbol index (sp_node_t.param of a SYM node):
 * vals[i] is the value of symbol i, for i < E->nsyms.
 */
typedef enum {
    SP_EVAL_OK = 0,
    SP_EVAL_UNDEFINED,  /* division by zero, log/sqrt/rsqrt outside their domain */
    SP_EVAL_INEXACT,    /* exact evaluation met exp/log/sqrt/... whose value is not rational */
    SP_EVAL_UNDECIDED,  /* a comparison on balls that overlap even at the highest precision */
    SP_EVAL_NOMEM,
    SP_EVAL_TIMEOUT     /* the deadline passed (only the functions that take one) */
} sp_eval_status_t;

/*
 * Exact evaluation over Q of roots[0..n) at the point; out[i] receives the value of roots[i].
 * Piecewise operators (max min relu abs clamp cmp where) are evaluated exactly.  sqrt/rsqrt of a
 * rational perfect square are exact; other transcendental values give SP_EVAL_INEXACT.
 * Iterative over the cone (no recursion).
 */
sp_eval_status_t sp_eval_exact(const sp_ectx_t E, const sp_expr_t *roots, slong n,
                               const fmpq *vals, fmpq *out);

/*
 * Ball evaluation of roots at the point with working precision prec bits.  Comparisons of
 * overlapping balls give SP_EVAL_UNDECIDED.  gelu(x) = x * (1 + erf(x / sqrt 2)) / 2.
 */
sp_eval_status_t sp_eval_ball(const sp_ectx_t E, const sp_expr_t *roots, slong n,
                              const fmpq *vals, slong prec, arb_ptr out);

/*
 * Decide whether a and b differ at the point, with a certificate: exact rationals that differ,
 * or Arb balls that are disjoint (precision raised from 64 up to 4096 bits).  Returns 1 if they
 * certainly differ (and, when the value strings are not NULL, sets *va and *vb to printed values
 * the caller frees with flint_free, and *exact to 1 for exact rationals), 0 if they are equal or
 * it cannot be decided.  Undefined sides give 0.
 */
int sp_eval_certify_differ(const sp_ectx_t E, sp_expr_t a, sp_expr_t b, const fmpq *vals,
                           char **va, char **vb, int *exact);

/*
 * The same with a deadline: deadline_ns is a CLOCK_MONOTONIC time in nanoseconds (sp_now_ns),
 * 0 for none.  The evaluators look at the clock every few nodes and give up (0, not certified)
 * once it has passed, so one evaluation of a deep expression cannot overrun a query's max_ms
 * by more than a few node operations.
 */
int sp_eval_certify_differ_by(const sp_ectx_t E, sp_expr_t a, sp_expr_t b, const fmpq *vals,
                              int64_t deadline_ns, char **va, char **vb, int *exact);

/*
 * Decide whether e is defined at the point, with a certificate.  Returns SP_EVAL_OK when exact
 * evaluation succeeds or Arb balls (64 up to 4096 bits) decide every domain condition and
 * comparison on the way (then, when value is not NULL, *value is the printed value, freed by the
 * caller with flint_free, and *exact is 1 for an exact rational); SP_EVAL_UNDEFINED when e is
 * certainly undefined there (a division by an exact zero, log of a ball <= 0, ...: undefinedness
 * is only reported from exact values or from balls that lie entirely outside the domain); else
 * the status that stopped it (UNDECIDED, NOMEM, TIMEOUT).  deadline_ns as below.
 */
sp_eval_status_t sp_eval_definedness_by(const sp_ectx_t E, sp_expr_t e, const fmpq *vals,
                                        int64_t deadline_ns, char **value, int *exact);

/*
 * Fingerprint: evaluation modulo the prime SP_FP_PRIME at a pseudo-random point derived from
 * seed: symbol i gets sp_fp_hash(seed, i).  Exact rational operations are homomorphic.  Every
 * other operator (exp, log, max, relu, cmp, where, ...) evaluates as a pseudo-random function of
 * (seed, operator, parameter, argument values), so equal fingerprints are a hint and different
 * fingerprints point at a difference only for atom-free cones.  Returns 0 when a division by
 * zero mod p occurred (the fingerprint is then meaningless), 1 on success.
 */
#define SP_FP_PRIME UWORD(4611686018427387847) /* 2^62 - 57, prime */
uint64_t sp_fp_hash(uint64_t seed, uint64_t x);
int sp_fingerprint(const sp_ectx_t E, const sp_expr_t *roots, slong n, uint64_t seed,
                   uint64_t *out);

#endif
