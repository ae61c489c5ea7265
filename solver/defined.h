/* defined.h: definedness: is one expression defined wherever another is? */
#ifndef SP_DEFINED_H
#define SP_DEFINED_H

#include "solver.h"

/*
 * An expression is undefined at a point when an operation it evaluates there is: a division by
 * zero, a negative integer power of zero, log or rsqrt of a value <= 0, sqrt of a value < 0
 * (solver/eval.c is the reference: every operator is strict except where(c, a, b), which
 * evaluates c and then only the branch c selects).  Each such operation is an obligation
 * (argument != 0, > 0 or >= 0) carried with its guard: the where-conditions on the way to it
 * (c != 0 for the obligations of a, c == 0 for those of b).
 *
 * sp_defined_implied(S, lhs, rhs, res): is lhs defined at every point where rhs is?
 *   SP_EQUAL      proved: every obligation of lhs holds wherever rhs is defined (by the rules of
 *                 docs/soundness.md, "Definedness": true by structure, or implied by an
 *                 obligation of rhs with the same normal form under a guard lhs's implies);
 *   SP_DIFFERENT  certified: res->cex is a rational point where rhs evaluates to a defined value
 *                 (cex.rhs_value) and lhs is undefined (cex.lhs_value is "undefined"), both
 *                 re-evaluated from the expressions, exactly or in Arb balls; res->detail says
 *                 which operation of lhs fails there;
 *   SP_UNKNOWN    res->why is SP_WHY_DEFINEDNESS and res->detail names the first obligation of
 *                 lhs neither discharged nor refuted ("denominator `n` nonzero"), or res->why
 *                 names a limit (max_ms, max_nodes).
 * res may be NULL.  Facts about nodes (obligations, their normal forms, which cones hold none
 * that is not true by structure) are cached in the engine, so a stage's queries walk each part
 * of the DAG about once.  Never aborts on input.
 */
sp_answer_t sp_defined_implied(sp_engine_t *S, sp_expr_t lhs, sp_expr_t rhs, sp_result_t *res);

/* The engine's cache of definedness facts (sp_engine_free calls this). */
struct sp_defined_cache;
void sp_defined_cache_free(struct sp_defined_cache *D);

#endif
