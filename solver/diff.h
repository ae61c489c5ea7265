/* diff.h: exact symbolic differentiation of expressions (forward mode over the DAG). */
#ifndef SP_DIFF_H
#define SP_DIFF_H

#include "expr.h"

/*
 * d e / d sym as a new expression in the same store.  Iterative over the cone.  Piecewise
 * operators use the almost-everywhere derivative with the engine's tie convention: relu'(x) =
 * [x > 0]; max(a1..an)' = the derivative of the first argument attaining the maximum (sorted
 * argument order, as the engine stores them); abs'(x) = [x > 0] - [x < 0]; cmp' = 0; where
 * differentiates its branches.  Returns SP_EXPR_NONE when the store is out of memory.
 */
sp_expr_t sp_expr_diff(sp_ectx_t E, sp_expr_t e, sp_expr_t sym);

#endif
