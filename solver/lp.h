/* lp.h: exact linear feasibility over Q (simplex with Bland's rule), for case-split branches. */
#ifndef SP_LP_H
#define SP_LP_H

#include <flint/fmpq.h>

/*
 * A system of m linear constraints over nvars rational variables (free in sign):
 *     sum_j a[i*nvars + j] * x_j  REL_i  b[i]
 * with REL_i one of <, <=, =, >=, >.  The solver decides feasibility exactly and, when feasible,
 * returns a point satisfying every constraint, strict ones strictly (it adds a common slack
 * 0 <= t <= 1 to the strict rows and maximises t; feasibility needs t > 0, and the search stops as
 * soon as t > 0).  The point is a basic solution of that system, so its height is bounded by
 * subdeterminants of the input; weak rows may hold with equality.
 */
typedef enum { SP_LP_LT = 0, SP_LP_LE, SP_LP_EQ, SP_LP_GE, SP_LP_GT } sp_lp_rel_t;

typedef enum { SP_LP_FEASIBLE = 0, SP_LP_INFEASIBLE, SP_LP_LIMIT } sp_lp_status_t;

/*
 * x receives nvars values when the answer is SP_LP_FEASIBLE and is not written otherwise; a, b
 * and rel are read in full before x is written.  With m = 0 the answer is FEASIBLE with x = 0;
 * a, b, rel may be NULL when m = 0, and a and x when nvars = 0.
 * max_pivots bounds the simplex pivots (Gauss-Jordan steps included) over the whole call; 0 or
 * less means no bound (Bland's rule terminates anyway).  SP_LP_LIMIT means the bound was reached,
 * and is also the answer for arguments the solver will not take: m or nvars negative, a rel
 * outside sp_lp_rel_t, or a tableau of more than 2^23 cells (at most (m + 2) * (nvars + 2m + 3)).
 */
sp_lp_status_t sp_lp_feasible(const fmpq *a, const fmpq *b, const sp_lp_rel_t *rel, slong m,
                              slong nvars, slong max_pivots, fmpq *x);

#endif
