/* lp.c: exact linear feasibility over Q by a two-phase dense simplex with Bland's rule. */
#include <flint/flint.h>
#include <flint/fmpq.h>
#include <flint/fmpz.h>
#include <flint/fmpz_vec.h>

#include "lp.h"

/* Tableaux with more cells than this are refused with SP_LP_LIMIT rather than allocated. */
#define SP_LP_MAX_CELLS (WORD(1) << 23)

/*
 * A dense simplex tableau over Q, stored as integer rows with one denominator each: row i stands
 * for (cell row i) / den[i], with den[i] > 0 and gcd(den[i], the row's entries) = 1, so every
 * rational entry has exactly one representation.  Rows are stored with stride ncols + 1.
 * Row 0 is the objective, rows 1..nrows the constraints the simplex works on; column ncols is the
 * right-hand side.  Rows past nrows may be allocated (frozen rows, see sp_lp_feasible); pivots
 * neither read nor write them.  Normal form between simplex pivots:
 *   - for every constraint row i, column basis[i] is the unit vector e_i over rows 0..nrows
 *     (its cell in row i is den[i]; in particular the objective is 0 on every basic column);
 *   - every right-hand side of a constraint row is >= 0 (the basic solution is feasible);
 *   - row 0 holds the reduced costs d_j of the objective being maximised, and its right-hand
 *     side is minus the objective's current value.
 * nz is scratch space for the nonzero columns of the pivot row.
 */
typedef struct {
    fmpz *cell;
    fmpz *den;
    slong nrows;
    slong ncols;
    slong *basis;
    slong *nz;
} sp_lp_tab_struct;

typedef sp_lp_tab_struct sp_lp_tab_t[1];

typedef enum { SP_LP_RUN_OPTIMAL = 0, SP_LP_RUN_UNBOUNDED, SP_LP_RUN_LIMIT } sp_lp_run_t;

static inline fmpz *sp_lp_row(const sp_lp_tab_t tab, slong i)
{
    return tab->cell + i * (tab->ncols + 1);
}

static inline fmpz *sp_lp_rhs(const sp_lp_tab_t tab, slong i)
{
    return sp_lp_row(tab, i) + tab->ncols;
}

/* Divide row i and its denominator by their gcd; g is scratch. */
static void sp_lp_row_reduce(sp_lp_tab_t tab, slong i, fmpz_t g)
{
    fmpz *row = sp_lp_row(tab, i);
    slong k;

    fmpz_set(g, tab->den + i);
    for (k = 0; k <= tab->ncols && !fmpz_is_one(g); k++)
        if (!fmpz_is_zero(row + k))
            fmpz_gcd(g, g, row + k);
    if (fmpz_is_one(g))
        return;
    for (k = 0; k <= tab->ncols; k++)
        if (!fmpz_is_zero(row + k))
            fmpz_divexact(row + k, row + k, g);
    fmpz_divexact(tab->den + i, tab->den + i, g);
}

/* Row dst += sign * row src (sign = +1 or -1), as rationals; g is scratch. */
static void sp_lp_row_add(sp_lp_tab_t tab, slong dst, slong src, int sign, fmpz_t g)
{
    fmpz *rd = sp_lp_row(tab, dst);
    const fmpz *rs = sp_lp_row(tab, src);
    const fmpz *ds = tab->den + src;
    fmpz *dd = tab->den + dst;
    slong k;

    for (k = 0; k <= tab->ncols; k++) {
        if (!fmpz_is_zero(rd + k))
            fmpz_mul(rd + k, rd + k, ds);
        if (fmpz_is_zero(rs + k))
            continue;
        if (sign > 0)
            fmpz_addmul(rd + k, dd, rs + k);
        else
            fmpz_submul(rd + k, dd, rs + k);
    }
    fmpz_mul(dd, dd, ds);
    sp_lp_row_reduce(tab, dst, g);
}

/* Pivot on cell (r, c), which must be nonzero; f and g are scratch. */
static void sp_lp_pivot(sp_lp_tab_t tab, slong r, slong c, fmpz_t f, fmpz_t g)
{
    fmpz *pr = sp_lp_row(tab, r);
    fmpz *dr = tab->den + r;
    int neg = fmpz_sgn(pr + c) < 0;
    slong i, k, nnz = 0;

    /* Row r becomes row r / cell (r, c): the same integers over |cell (r, c)|, made primitive. */
    fmpz_zero(g);
    for (k = 0; k <= tab->ncols; k++) {
        if (fmpz_is_zero(pr + k))
            continue;
        if (!fmpz_is_one(g))
            fmpz_gcd(g, g, pr + k);
        tab->nz[nnz++] = k;
    }
    fmpz_abs(dr, pr + c);
    for (k = 0; k < nnz; k++) {
        fmpz *e = pr + tab->nz[k];

        if (!fmpz_is_one(g))
            fmpz_divexact(e, e, g);
        if (neg)
            fmpz_neg(e, e);
    }
    if (!fmpz_is_one(g))
        fmpz_divexact(dr, dr, g);

    /* Row i -= (cell (i, c) / den[i]) * row r, over the common denominator den[i] * den[r]. */
    for (i = 0; i <= tab->nrows; i++) {
        fmpz *pi = sp_lp_row(tab, i);

        if (i == r || fmpz_is_zero(pi + c))
            continue;
        fmpz_set(f, pi + c);
        if (!fmpz_is_one(dr)) {
            for (k = 0; k <= tab->ncols; k++)
                if (!fmpz_is_zero(pi + k))
                    fmpz_mul(pi + k, pi + k, dr);
            fmpz_mul(tab->den + i, tab->den + i, dr);
        }
        for (k = 0; k < nnz; k++)
            fmpz_submul(pi + tab->nz[k], f, pr + tab->nz[k]);
        sp_lp_row_reduce(tab, i, g);
    }
    tab->basis[r] = c;
}

/* The row in which column c is basic, or -1. */
static slong sp_lp_basic_row(const sp_lp_tab_t tab, slong c)
{
    slong i;

    for (i = 1; i <= tab->nrows; i++)
        if (tab->basis[i] == c)
            return i;
    return -1;
}

/*
 * Primal simplex with Bland's rule on the objective in row 0: the entering column is the
 * lowest-indexed column in [col_begin, col_end) with positive reduced cost, the leaving row the one
 * with the least ratio, ties going to the lowest-indexed basic column.  Bland's rule cannot cycle,
 * so the loop ends.  When stop_col >= 0 the run also ends as soon as column stop_col has a positive
 * value.  Every pivot counts against max_pivots (when it is positive) through *pivots.
 */
static sp_lp_run_t sp_lp_run(sp_lp_tab_t tab, slong col_begin, slong col_end, slong stop_col,
                             slong *pivots, slong max_pivots, fmpz_t f, fmpz_t g)
{
    const fmpz *obj;
    slong i, enter, leave;

    for (;;) {
        if (stop_col >= 0) {
            i = sp_lp_basic_row(tab, stop_col);
            if (i >= 0 && fmpz_sgn(sp_lp_rhs(tab, i)) > 0)
                return SP_LP_RUN_OPTIMAL;
        }

        obj = sp_lp_row(tab, 0);
        for (enter = col_begin; enter < col_end; enter++)
            if (fmpz_sgn(obj + enter) > 0)
                break;
        if (enter == col_end)
            return SP_LP_RUN_OPTIMAL;

        /* Ratio rhs / cell compared by cross-multiplication; the row denominators cancel. */
        leave = -1;
        for (i = 1; i <= tab->nrows; i++) {
            const fmpz *e = sp_lp_row(tab, i) + enter;
            int cmp;

            if (fmpz_sgn(e) <= 0)
                continue;
            if (leave < 0) {
                cmp = -1;
            } else {
                fmpz_mul(f, sp_lp_rhs(tab, i), sp_lp_row(tab, leave) + enter);
                fmpz_mul(g, sp_lp_rhs(tab, leave), e);
                cmp = fmpz_cmp(f, g);
                if (cmp == 0 && tab->basis[i] < tab->basis[leave])
                    cmp = -1;
            }
            if (cmp < 0)
                leave = i;
        }
        if (leave < 0)
            return SP_LP_RUN_UNBOUNDED;

        if (max_pivots > 0 && *pivots >= max_pivots)
            return SP_LP_RUN_LIMIT;
        sp_lp_pivot(tab, leave, enter, f, g);
        (*pivots)++;
    }
}

/* Swap rows i and k of the tableau with their denominators, basis entries and own slacks. */
static void sp_lp_row_swap(sp_lp_tab_t tab, slong *own, slong i, slong k)
{
    fmpz *ri = sp_lp_row(tab, i), *rk = sp_lp_row(tab, k);
    slong c, tmp;

    if (i == k)
        return;
    for (c = 0; c <= tab->ncols; c++)
        fmpz_swap(ri + c, rk + c);
    fmpz_swap(tab->den + i, tab->den + k);
    tmp = tab->basis[i];
    tab->basis[i] = tab->basis[k];
    tab->basis[k] = tmp;
    tmp = own[i];
    own[i] = own[k];
    own[k] = tmp;
}

/* Set row 0 to the integer vector that is 0 except for value 1 at column c (none if c < 0). */
static void sp_lp_obj_unit(sp_lp_tab_t tab, slong c)
{
    _fmpz_vec_zero(sp_lp_row(tab, 0), tab->ncols + 1);
    fmpz_one(tab->den);
    if (c >= 0)
        fmpz_one(sp_lp_row(tab, 0) + c);
}

/*
 * Columns: x_j (0..n-1, free), the strictness slack t (n, only when some row is strict), one
 * slack per inequality row and one for t <= 1, then room for one artificial per row:
 *     a x + t + s = b  for <,   a x + s = b  for <=,   a x = b  for =,
 *     a x - s = b  for >=,      a x - t - s = b  for >,   t + s = 1,
 * with t, slacks and artificials >= 0.
 *
 * 1. Gauss-Jordan elimination puts every free variable it can into the basis.  Its rows (free
 *    rows) are then frozen at the end of the tableau: a free basic variable never leaves, needs no
 *    ratio test, and is recovered at the end from its row.  The remaining rows (simplex rows) are
 *    zero on every x column, so the simplex only sees t, slacks and artificials.  Each simplex row
 *    still has its own slack as a unit column, so it starts with that slack basic when the signs
 *    allow, and with an artificial otherwise.
 * 2. Phase 1 minimises the sum of the artificials; a positive minimum means infeasible.  The
 *    artificials left basic (at 0) are then pivoted out where possible, and may not enter again.
 * 3. Phase 2 (only with strict rows) maximises t, which t <= 1 keeps bounded, and stops as soon
 *    as t > 0; the strict rows are satisfiable iff it gets there.
 */
sp_lp_status_t sp_lp_feasible(const fmpq *a, const fmpq *b, const sp_lp_rel_t *rel, slong m,
                              slong nvars, slong max_pivots, fmpq *x)
{
    sp_lp_tab_t tab;
    sp_lp_status_t status = SP_LP_LIMIT;
    slong i, j, k, n = nvars, nstrict = 0, nslack = 0, ntot, nlp, nart;
    slong tcol, slack0, art0, pivots = 0;
    slong *own;
    fmpz_t f, g;
    fmpq_t q, v;

    if (m < 0 || n < 0 || m > SP_LP_MAX_CELLS || n > SP_LP_MAX_CELLS)
        return SP_LP_LIMIT;
    for (i = 0; i < m; i++) {
        if ((int)rel[i] < (int)SP_LP_LT || (int)rel[i] > (int)SP_LP_GT)
            return SP_LP_LIMIT;
        nstrict += (rel[i] == SP_LP_LT || rel[i] == SP_LP_GT);
        nslack += (rel[i] != SP_LP_EQ);
    }

    if (m == 0) {
        for (j = 0; j < n; j++)
            fmpq_zero(x + j);
        return SP_LP_FEASIBLE;
    }

    ntot = m + (nstrict > 0);
    tcol = nstrict > 0 ? n : -1;
    slack0 = n + (nstrict > 0);
    art0 = slack0 + nslack + (nstrict > 0);
    tab->ncols = art0 + m;
    tab->nrows = ntot;
    if (tab->ncols + 1 > SP_LP_MAX_CELLS / (ntot + 1))
        return SP_LP_LIMIT;

    tab->cell = _fmpz_vec_init((ntot + 1) * (tab->ncols + 1));
    tab->den = _fmpz_vec_init(ntot + 1);
    tab->basis = (slong *)flint_malloc((ntot + 1) * sizeof(slong));
    tab->nz = (slong *)flint_malloc((tab->ncols + 1) * sizeof(slong));
    own = (slong *)flint_malloc((ntot + 1) * sizeof(slong));
    fmpz_init(f);
    fmpz_init(g);
    fmpq_init(q);
    fmpq_init(v);

    /* Row i (1..m) is input row i - 1 times the lcm of its denominators, over that lcm. */
    k = slack0;
    tab->basis[0] = own[0] = -1;
    fmpz_one(tab->den);
    for (i = 1; i <= m; i++) {
        fmpz *row = sp_lp_row(tab, i);
        fmpz *d = tab->den + i;
        const fmpq *ai = n > 0 ? a + (i - 1) * n : NULL;
        sp_lp_rel_t ri = rel[i - 1];

        fmpz_set(d, fmpq_denref(b + i - 1));
        for (j = 0; j < n; j++)
            if (!fmpz_is_one(fmpq_denref(ai + j)))
                fmpz_lcm(d, d, fmpq_denref(ai + j));
        for (j = 0; j <= n; j++) {
            const fmpq *e = j < n ? ai + j : b + i - 1;
            fmpz *out = j < n ? row + j : row + tab->ncols;

            if (fmpq_is_zero(e))
                continue;
            fmpz_divexact(out, d, fmpq_denref(e));
            fmpz_mul(out, out, fmpq_numref(e));
        }
        if (ri == SP_LP_LT)
            fmpz_set(row + tcol, d);
        else if (ri == SP_LP_GT)
            fmpz_neg(row + tcol, d);
        own[i] = -1;
        if (ri != SP_LP_EQ) {
            if (ri == SP_LP_LT || ri == SP_LP_LE)
                fmpz_set(row + k, d);
            else
                fmpz_neg(row + k, d);
            own[i] = k++;
        }
        tab->basis[i] = -1;
        sp_lp_row_reduce(tab, i, g);
    }
    if (nstrict > 0) {
        fmpz *row = sp_lp_row(tab, ntot);

        fmpz_one(row + tcol);
        fmpz_one(row + k);
        fmpz_one(row + tab->ncols);
        fmpz_one(tab->den + ntot);
        own[ntot] = k++;
        tab->basis[ntot] = -1;
    }

    for (j = 0; j < n; j++) {
        for (i = 1; i <= m; i++)
            if (tab->basis[i] < 0 && !fmpz_is_zero(sp_lp_row(tab, i) + j))
                break;
        if (i > m)
            continue;
        if (max_pivots > 0 && pivots >= max_pivots)
            goto cleanup;
        sp_lp_pivot(tab, i, j, f, g);
        pivots++;
    }

    nlp = 0;
    for (i = 1; i <= ntot; i++)
        if (tab->basis[i] < 0)
            sp_lp_row_swap(tab, own, i, ++nlp);
    tab->nrows = nlp;

    /*
     * Simplex rows get rhs >= 0 and start with their own slack basic if it reads +1, else with an
     * artificial.
     */
    nart = 0;
    for (i = 1; i <= nlp; i++) {
        fmpz *row = sp_lp_row(tab, i);
        int sb = fmpz_sgn(row + tab->ncols);
        int ss = own[i] >= 0 ? fmpz_sgn(row + own[i]) : 0;

        if (sb < 0 || (sb == 0 && ss < 0)) {
            _fmpz_vec_neg(row, row, tab->ncols + 1);
            ss = -ss;
        }
        if (ss > 0) {
            tab->basis[i] = own[i];
        } else {
            fmpz_set(row + art0 + nart, tab->den + i);
            tab->basis[i] = art0 + nart++;
        }
    }

    if (nart > 0) {
        /* Phase 1: maximise minus the sum of the artificials, all basic at the start. */
        sp_lp_obj_unit(tab, -1);
        for (i = 1; i <= nlp; i++)
            if (tab->basis[i] >= art0)
                sp_lp_row_add(tab, 0, i, 1, g);
        _fmpz_vec_zero(sp_lp_row(tab, 0) + art0, nart);
        sp_lp_row_reduce(tab, 0, g);

        switch (sp_lp_run(tab, n, art0 + nart, -1, &pivots, max_pivots, f, g)) {
        case SP_LP_RUN_OPTIMAL:
            break;
        case SP_LP_RUN_UNBOUNDED: /* impossible: the objective is at most 0 */
        case SP_LP_RUN_LIMIT:
            goto cleanup;
        }
        if (!fmpz_is_zero(sp_lp_rhs(tab, 0))) {
            status = SP_LP_INFEASIBLE;
            goto cleanup;
        }

        /*
         * Drive the artificials left in the basis (all at value 0) out by degenerate pivots.  A row
         * that is zero on every other column is redundant; its artificial stays basic at 0 and,
         * since no artificial may enter again, no later pivot touches that row.
         */
        for (i = 1; i <= nlp; i++) {
            const fmpz *row = sp_lp_row(tab, i);

            if (tab->basis[i] < art0)
                continue;
            for (k = n; k < art0; k++)
                if (!fmpz_is_zero(row + k))
                    break;
            if (k == art0)
                continue;
            if (max_pivots > 0 && pivots >= max_pivots)
                goto cleanup;
            sp_lp_pivot(tab, i, k, f, g);
            pivots++;
        }
    }

    if (nstrict > 0) {
        /* Phase 2: maximise t over the non-artificial columns. */
        sp_lp_obj_unit(tab, tcol);
        i = sp_lp_basic_row(tab, tcol);
        if (i >= 0)
            sp_lp_row_add(tab, 0, i, -1, g);

        switch (sp_lp_run(tab, n, art0, tcol, &pivots, max_pivots, f, g)) {
        case SP_LP_RUN_OPTIMAL:
            break;
        case SP_LP_RUN_UNBOUNDED: /* impossible: t <= 1 is a row */
        case SP_LP_RUN_LIMIT:
            goto cleanup;
        }
        i = sp_lp_basic_row(tab, tcol);
        if (i < 0 || fmpz_sgn(sp_lp_rhs(tab, i)) <= 0) {
            status = SP_LP_INFEASIBLE;
            goto cleanup;
        }
    }

    /*
     * A free row r reads x_{basis[r]} + sum_k T[r][k] v_k = rhs_r over the nonbasic free columns
     * (at 0) and the columns k >= n, whose values v_k the simplex rows give (artificials are 0).
     */
    for (j = 0; j < n; j++)
        fmpq_zero(x + j);
    for (i = nlp + 1; i <= ntot; i++)
        fmpq_set_fmpz_frac(x + tab->basis[i], sp_lp_rhs(tab, i), tab->den + i);
    for (i = 1; i <= nlp; i++) {
        k = tab->basis[i];
        if (k >= art0 || fmpz_is_zero(sp_lp_rhs(tab, i)))
            continue;
        fmpq_set_fmpz_frac(v, sp_lp_rhs(tab, i), tab->den + i);
        for (j = nlp + 1; j <= ntot; j++) {
            const fmpz *e = sp_lp_row(tab, j) + k;

            if (fmpz_is_zero(e))
                continue;
            fmpq_set_fmpz_frac(q, e, tab->den + j);
            fmpq_submul(x + tab->basis[j], q, v);
        }
    }
    status = SP_LP_FEASIBLE;

cleanup:
    fmpq_clear(v);
    fmpq_clear(q);
    fmpz_clear(g);
    fmpz_clear(f);
    flint_free(own);
    flint_free(tab->nz);
    flint_free(tab->basis);
    _fmpz_vec_clear(tab->den, ntot + 1);
    _fmpz_vec_clear(tab->cell, (ntot + 1) * (tab->ncols + 1));
    return status;
}
