/* smt2.h: export an equivalence query as an SMT-LIB2 script, so Z3 and cvc5 see the same question.
 */
#ifndef SP_SMT2_H
#define SP_SMT2_H

#include <flint/flint.h>

#include "expr.h"

/*
 * The SMT-LIB2 script that asks: is there a real point, defined for both sides, where a[i] != b[i]
 * for some i < n?  `unsat` means a[i] = b[i] for all i (equal); `sat` means different -- but see
 * the weakening below.
 *
 * Encoding (logic QF_NRA, or QF_UFNRA when the cone has an uninterpreted function):
 *  - every symbol of the cone is a Real constant, written |name|.  A name that is empty, holds a
 *    character outside printable ASCII or one of | \ # or a space, or starts with "sp_", is
 *    written |#k:name'| with k its symbol index and name' the name with such characters replaced
 *    by '_', so distinct symbols always get distinct SMT names;
 *  - exp log sqrt rsqrt tanh sigmoid silu gelu erf are uninterpreted functions Real -> Real named
 *    sp_exp, sp_log, ...  The script is therefore weaker than or equal to the real question:
 *    `unsat` is a proof for every interpretation of those functions, hence for the real ones;
 *    `sat` may come from an interpretation that is not the real function (exp(a)exp(b) and
 *    exp(a+b) differ for a UF), so it is a real counterexample only when the script declares no
 *    function;
 *  - max min relu abs clamp cmp where become ite; pow(x, k) repeated multiplication (square and
 *    multiply through define-funs when |k| > 8), 1/... for k < 0, 1 for k = 0; division is `/`;
 *  - definedness is strict: an element counts only where every node of both sides' cones is
 *    defined (denominators and negative-power bases nonzero, log and rsqrt arguments positive,
 *    sqrt arguments nonnegative), like the engine's evaluation.  SMT's total `/` would otherwise
 *    let x*y/y differ from x at y = 0.  The guards are Bool define-funs sp_d<id>;
 *  - shared subterms are define-funs sp_t<id> (id = node id); a node used once is written inline
 *    in its user while its text stays shallow, so no solver parser recurses deeply.  Roots are
 *    always named.  The cone is walked in ascending id order; nothing recurses over the DAG;
 *  - the query is (assert (or (and <defined_i> (distinct a_i b_i)) ...)) over the elements with
 *    a[i] != b[i] as nodes (identical nodes are equal and left out; no element left gives
 *    (assert false)), then (check-sat).
 *
 * The text depends only on the expressions (never on hash order or addresses).  Returns a string
 * the caller frees with flint_free, or NULL if n < 0 or some a[i], b[i] is not a node of E.
 * a and b may be NULL when n == 0.
 */
char *sp_smt2_query(const sp_ectx_t E, const sp_expr_t *a, const sp_expr_t *b, slong n);

#endif
