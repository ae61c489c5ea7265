/* test_lp.c: tests for the exact simplex feasibility solver (solver/lp.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <flint/flint.h>
#include <flint/fmpq.h>
#include <flint/fmpz.h>

#include "lp.h"

/* Base seed of every property test; iteration k runs from seed (SP_TEST_SEED, k). */
#define SP_TEST_SEED UWORD(0x5eed2024)

/* Pivot budget for the tests: generous, so only test_lp_pivot_limit ever sees SP_LP_LIMIT. */
#define SP_TEST_PIVOTS WORD(1000000)

/* A system under test: m rows (room for cap) over n variables, row i at a + i * n. */
typedef struct {
    fmpq *a;
    fmpq *b;
    sp_lp_rel_t *rel;
    slong m;
    slong n;
    slong cap;
} sp_test_sys_t;

static slong sp_test_multiplier(void)
{
    const char *s = getenv("SP_TEST_MULTIPLIER");
    long k = s != NULL ? strtol(s, NULL, 10) : 1;

    return k > 0 ? (slong)k : 1;
}

static void sys_init(sp_test_sys_t *s, slong cap, slong n)
{
    s->a = _fmpq_vec_init(cap * n + 1);
    s->b = _fmpq_vec_init(cap + 1);
    s->rel = (sp_lp_rel_t *)flint_malloc((cap + 1) * sizeof(sp_lp_rel_t));
    s->m = 0;
    s->n = n;
    s->cap = cap;
}

static void sys_clear(sp_test_sys_t *s)
{
    _fmpq_vec_clear(s->a, s->cap * s->n + 1);
    _fmpq_vec_clear(s->b, s->cap + 1);
    flint_free(s->rel);
}

/* Append sum_j coef[j] x_j REL num/den. */
static void sys_add_si(sp_test_sys_t *s, const slong *coef, sp_lp_rel_t rel, slong num, ulong den)
{
    slong j;

    assert_true(s->m < s->cap);
    for (j = 0; j < s->n; j++)
        fmpq_set_si(s->a + s->m * s->n + j, coef[j], 1);
    fmpq_set_si(s->b + s->m, num, den);
    s->rel[s->m] = rel;
    s->m++;
}

/* Append the row with rational coefficients coef and right-hand side b. */
static void sys_add(sp_test_sys_t *s, const fmpq *coef, sp_lp_rel_t rel, const fmpq_t b)
{
    slong j;

    assert_true(s->m < s->cap);
    for (j = 0; j < s->n; j++)
        fmpq_set(s->a + s->m * s->n + j, coef + j);
    fmpq_set(s->b + s->m, b);
    s->rel[s->m] = rel;
    s->m++;
}

static void sys_swap_rows(sp_test_sys_t *s, slong i, slong k)
{
    slong j;
    sp_lp_rel_t r;

    if (i == k)
        return;
    for (j = 0; j < s->n; j++)
        fmpq_swap(s->a + i * s->n + j, s->a + k * s->n + j);
    fmpq_swap(s->b + i, s->b + k);
    r = s->rel[i];
    s->rel[i] = s->rel[k];
    s->rel[k] = r;
}

static void sys_shuffle(sp_test_sys_t *s, flint_rand_t state)
{
    slong i;

    for (i = s->m - 1; i > 0; i--)
        sys_swap_rows(s, i, (slong)n_randint(state, (ulong)i + 1));
}

static sp_lp_rel_t rel_flip(sp_lp_rel_t rel)
{
    return (sp_lp_rel_t)(SP_LP_GT - rel);
}

static int rel_holds(const fmpq_t lhs, sp_lp_rel_t rel, const fmpq_t rhs)
{
    int c = fmpq_cmp(lhs, rhs);

    switch (rel) {
    case SP_LP_LT:
        return c < 0;
    case SP_LP_LE:
        return c <= 0;
    case SP_LP_EQ:
        return c == 0;
    case SP_LP_GE:
        return c >= 0;
    case SP_LP_GT:
        return c > 0;
    }
    return 0;
}

/* The first row that x violates under exact evaluation, or -1 when x satisfies every row. */
static slong sys_first_violated(const sp_test_sys_t *s, const fmpq *x)
{
    fmpq_t lhs, t;
    slong i, j, bad = -1;

    fmpq_init(lhs);
    fmpq_init(t);
    for (i = 0; i < s->m && bad < 0; i++) {
        fmpq_zero(lhs);
        for (j = 0; j < s->n; j++) {
            fmpq_mul(t, s->a + i * s->n + j, x + j);
            fmpq_add(lhs, lhs, t);
        }
        if (!rel_holds(lhs, s->rel[i], s->b + i))
            bad = i;
    }
    fmpq_clear(t);
    fmpq_clear(lhs);
    return bad;
}

static sp_lp_status_t sys_solve(const sp_test_sys_t *s, slong max_pivots, fmpq *x)
{
    return sp_lp_feasible(s->a, s->b, s->rel, s->m, s->n, max_pivots, x);
}

static int q_equal_si(const fmpq_t x, slong p, ulong q)
{
    fmpq_t y;
    int eq;

    fmpq_init(y);
    fmpq_set_si(y, p, q);
    eq = fmpq_equal(x, y);
    fmpq_clear(y);
    return eq;
}

/* Solve s, expect FEASIBLE and a point satisfying every row; x receives the point. */
static void expect_feasible(const sp_test_sys_t *s, fmpq *x)
{
    assert_int_equal(sys_solve(s, SP_TEST_PIVOTS, x), SP_LP_FEASIBLE);
    assert_int_equal(sys_first_violated(s, x), -1);
}

/* Solve s, expect INFEASIBLE and x left as it was. */
static void expect_infeasible(const sp_test_sys_t *s)
{
    fmpq *x = _fmpq_vec_init(s->n + 1);
    slong j;

    for (j = 0; j < s->n; j++)
        fmpq_set_si(x + j, 7, 3);
    assert_int_equal(sys_solve(s, SP_TEST_PIVOTS, x), SP_LP_INFEASIBLE);
    for (j = 0; j < s->n; j++)
        assert_true(q_equal_si(x + j, 7, 3));
    _fmpq_vec_clear(x, s->n + 1);
}

static void test_lp_no_rows_is_feasible_at_zero(void **state)
{
    fmpq x[3];
    slong j;

    for (j = 0; j < 3; j++) {
        fmpq_init(x + j);
        fmpq_set_si(x + j, 7, 3);
    }
    assert_int_equal(sp_lp_feasible(NULL, NULL, NULL, 0, 3, 0, x), SP_LP_FEASIBLE);
    for (j = 0; j < 3; j++) {
        assert_true(fmpq_is_zero(x + j));
        fmpq_clear(x + j);
    }
    assert_int_equal(sp_lp_feasible(NULL, NULL, NULL, 0, 0, 0, NULL), SP_LP_FEASIBLE);
}

static void test_lp_strict_opposites_are_infeasible(void **state)
{
    sp_test_sys_t s;
    const slong one[1] = {1};

    sys_init(&s, 2, 1);
    sys_add_si(&s, one, SP_LP_GT, 0, 1);
    sys_add_si(&s, one, SP_LP_LT, 0, 1);
    expect_infeasible(&s);
    s.m = 0;
    sys_add_si(&s, one, SP_LP_GT, 0, 1);
    sys_add_si(&s, one, SP_LP_LE, 0, 1);
    expect_infeasible(&s);
    sys_clear(&s);
}

static void test_lp_weak_opposites_meet_at_zero(void **state)
{
    sp_test_sys_t s;
    const slong one[1] = {1};
    fmpq x[1];

    fmpq_init(x);
    sys_init(&s, 2, 1);
    sys_add_si(&s, one, SP_LP_GE, 0, 1);
    sys_add_si(&s, one, SP_LP_LE, 0, 1);
    expect_feasible(&s, x);
    assert_true(fmpq_is_zero(x));
    sys_clear(&s);
    fmpq_clear(x);
}

static void test_lp_open_interval_gives_interior_point(void **state)
{
    sp_test_sys_t s;
    const slong one[1] = {1};
    fmpq x[1];

    fmpq_init(x);
    sys_init(&s, 2, 1);
    sys_add_si(&s, one, SP_LP_GT, 0, 1);
    sys_add_si(&s, one, SP_LP_LT, 1, 1);
    expect_feasible(&s, x);
    assert_true(fmpq_sgn(x) > 0);
    assert_true(fmpq_cmp_si(x, 1) < 0);

    /* A very thin interval: 1/1000 < x < 1/999. */
    s.m = 0;
    sys_add_si(&s, one, SP_LP_GT, 1, 1000);
    sys_add_si(&s, one, SP_LP_LT, 1, 999);
    expect_feasible(&s, x);
    sys_clear(&s);
    fmpq_clear(x);
}

static void test_lp_equalities_solve_exactly(void **state)
{
    sp_test_sys_t s;
    const slong r0[3] = {1, 1, 0}, r1[3] = {1, -1, 0}, r2[3] = {0, 3, 7};
    fmpq x[3];
    slong j;

    for (j = 0; j < 3; j++)
        fmpq_init(x + j);
    sys_init(&s, 3, 3);
    sys_add_si(&s, r0, SP_LP_EQ, 3, 1);
    sys_add_si(&s, r1, SP_LP_EQ, -1, 2);
    sys_add_si(&s, r2, SP_LP_EQ, -2, 1);
    expect_feasible(&s, x);
    assert_true(q_equal_si(x + 0, 5, 4));
    assert_true(q_equal_si(x + 1, 7, 4));
    assert_true(q_equal_si(x + 2, -29, 28));
    sys_clear(&s);
    for (j = 0; j < 3; j++)
        fmpq_clear(x + j);
}

static void test_lp_inconsistent_equalities_are_infeasible(void **state)
{
    sp_test_sys_t s;
    const slong r0[2] = {1, 1}, r1[2] = {2, 2}, r2[2] = {1, -1}, r3[2] = {3, 1};

    sys_init(&s, 3, 2);
    sys_add_si(&s, r0, SP_LP_EQ, 1, 1);
    sys_add_si(&s, r1, SP_LP_EQ, 3, 1);
    expect_infeasible(&s);

    /* Three lines that pairwise meet but share no point. */
    s.m = 0;
    sys_add_si(&s, r0, SP_LP_EQ, 2, 1);
    sys_add_si(&s, r2, SP_LP_EQ, 0, 1);
    sys_add_si(&s, r3, SP_LP_EQ, 5, 1);
    expect_infeasible(&s);
    sys_clear(&s);
}

static void test_lp_redundant_rows_are_harmless(void **state)
{
    sp_test_sys_t s;
    const slong r0[2] = {1, 1}, r1[2] = {2, 2}, r2[2] = {1, -1}, r3[2] = {-3, -3};
    const slong r4[2] = {0, 0}, r5[2] = {3, 1};
    fmpq x[2];

    fmpq_init(x + 0);
    fmpq_init(x + 1);
    sys_init(&s, 10, 2);
    sys_add_si(&s, r0, SP_LP_EQ, 2, 1);
    sys_add_si(&s, r1, SP_LP_EQ, 4, 1);
    sys_add_si(&s, r3, SP_LP_EQ, -6, 1);
    sys_add_si(&s, r2, SP_LP_EQ, 0, 1);
    sys_add_si(&s, r2, SP_LP_EQ, 0, 1);
    sys_add_si(&s, r4, SP_LP_EQ, 0, 1);
    sys_add_si(&s, r5, SP_LP_EQ, 4, 1);
    sys_add_si(&s, r0, SP_LP_LE, 2, 1);
    sys_add_si(&s, r1, SP_LP_GE, 4, 1);
    expect_feasible(&s, x);
    assert_true(fmpq_is_one(x + 0));
    assert_true(fmpq_is_one(x + 1));

    /* The same with one strict row that the equalities already satisfy strictly. */
    sys_add_si(&s, r0, SP_LP_LT, 5, 2);
    expect_feasible(&s, x);
    sys_clear(&s);
    fmpq_clear(x + 0);
    fmpq_clear(x + 1);
}

static void test_lp_constant_rows(void **state)
{
    static const struct {
        sp_lp_rel_t rel;
        slong b;
        int feasible;
    } cases[] = {
        {SP_LP_LE, 0, 1},  {SP_LP_LT, 0, 0},  {SP_LP_GE, 0, 1}, {SP_LP_GT, 0, 0},
        {SP_LP_EQ, 0, 1},  {SP_LP_EQ, 1, 0},  {SP_LP_LT, 1, 1}, {SP_LP_GT, -1, 1},
        {SP_LP_GE, -1, 1}, {SP_LP_LE, -1, 0}, {SP_LP_GT, 1, 0}, {SP_LP_EQ, -2, 0},
    };
    const slong zero[2] = {0, 0};
    sp_test_sys_t s;
    fmpq x[2];
    size_t k;

    fmpq_init(x + 0);
    fmpq_init(x + 1);
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        sp_lp_status_t st;

        /* Over two variables, then with no variables at all. */
        sys_init(&s, 1, 2);
        sys_add_si(&s, zero, cases[k].rel, cases[k].b, 1);
        if (cases[k].feasible)
            expect_feasible(&s, x);
        else
            expect_infeasible(&s);
        sys_clear(&s);

        sys_init(&s, 1, 0);
        sys_add_si(&s, zero, cases[k].rel, cases[k].b, 1);
        st = sp_lp_feasible(NULL, s.b, s.rel, 1, 0, SP_TEST_PIVOTS, NULL);
        assert_int_equal(st, cases[k].feasible ? SP_LP_FEASIBLE : SP_LP_INFEASIBLE);
        sys_clear(&s);
    }
    fmpq_clear(x + 0);
    fmpq_clear(x + 1);
}

static void test_lp_free_variables_take_negative_values(void **state)
{
    sp_test_sys_t s;
    const slong e0[2] = {1, 0}, e1[2] = {0, 1};
    fmpq x[2];

    fmpq_init(x + 0);
    fmpq_init(x + 1);
    sys_init(&s, 4, 2);
    sys_add_si(&s, e0, SP_LP_LE, -5, 1);
    sys_add_si(&s, e0, SP_LP_GE, -7, 1);
    sys_add_si(&s, e1, SP_LP_EQ, -3, 2);
    expect_feasible(&s, x);
    assert_true(fmpq_cmp_si(x + 0, -5) <= 0);
    assert_true(fmpq_cmp_si(x + 0, -7) >= 0);
    assert_true(q_equal_si(x + 1, -3, 2));

    sys_add_si(&s, e0, SP_LP_LT, -6, 1);
    expect_feasible(&s, x);
    assert_true(fmpq_cmp_si(x + 0, -6) < 0);
    sys_clear(&s);
    fmpq_clear(x + 0);
    fmpq_clear(x + 1);
}

static void test_lp_strict_rows_far_from_origin(void **state)
{
    sp_test_sys_t s;
    const slong r0[2] = {1, -1}, r1[2] = {1, 1}, e0[2] = {1, 0};
    fmpq x[2];

    fmpq_init(x + 0);
    fmpq_init(x + 1);
    sys_init(&s, 3, 2);
    sys_add_si(&s, r0, SP_LP_GT, 100, 1);
    sys_add_si(&s, r1, SP_LP_LT, -100, 1);
    sys_add_si(&s, e0, SP_LP_GT, -1000000, 1);
    expect_feasible(&s, x);

    /* Unbounded above: x_0 > 10^6 with nothing else. */
    s.m = 0;
    sys_add_si(&s, e0, SP_LP_GT, 1000000, 1);
    expect_feasible(&s, x);
    sys_clear(&s);
    fmpq_clear(x + 0);
    fmpq_clear(x + 1);
}

/*
 * Beale's example, on which the textbook largest-coefficient rule cycles: the maximum of
 * 3/4 x0 - 20 x1 + 1/2 x2 - 6 x3 over the polytope is 5/4 (dual y = (0, 3/2, 5/4)), reached at a
 * degenerate vertex where many rows are tight.
 */
static void beale_system(sp_test_sys_t *s, sp_lp_rel_t rel, slong num, ulong den)
{
    fmpq c[4];
    fmpq_t b;
    slong j;

    for (j = 0; j < 4; j++)
        fmpq_init(c + j);
    fmpq_init(b);
    s->m = 0;

    fmpq_set_si(c + 0, 1, 4);
    fmpq_set_si(c + 1, -8, 1);
    fmpq_set_si(c + 2, -1, 1);
    fmpq_set_si(c + 3, 9, 1);
    sys_add(s, c, SP_LP_LE, b);
    fmpq_set_si(c + 0, 1, 2);
    fmpq_set_si(c + 1, -12, 1);
    fmpq_set_si(c + 2, -1, 2);
    fmpq_set_si(c + 3, 3, 1);
    sys_add(s, c, SP_LP_LE, b);
    for (j = 0; j < 4; j++) {
        slong e[4] = {0, 0, 0, 0};

        e[j] = 1;
        sys_add_si(s, e, SP_LP_GE, 0, 1);
    }
    {
        const slong e2[4] = {0, 0, 1, 0};

        sys_add_si(s, e2, SP_LP_LE, 1, 1);
    }
    fmpq_set_si(c + 0, 3, 4);
    fmpq_set_si(c + 1, -20, 1);
    fmpq_set_si(c + 2, 1, 2);
    fmpq_set_si(c + 3, -6, 1);
    fmpq_set_si(b, num, den);
    sys_add(s, c, rel, b);

    for (j = 0; j < 4; j++)
        fmpq_clear(c + j);
    fmpq_clear(b);
}

static void test_lp_degenerate_beale_does_not_cycle(void **state)
{
    sp_test_sys_t s;
    fmpq x[4];
    slong j;

    for (j = 0; j < 4; j++)
        fmpq_init(x + j);
    sys_init(&s, 8, 4);

    beale_system(&s, SP_LP_GT, 1, 1);
    expect_feasible(&s, x);
    beale_system(&s, SP_LP_GE, 5, 4);
    expect_feasible(&s, x);
    beale_system(&s, SP_LP_EQ, 5, 4);
    expect_feasible(&s, x);
    beale_system(&s, SP_LP_GT, 5, 4);
    expect_infeasible(&s);
    beale_system(&s, SP_LP_GE, 5001, 4000);
    expect_infeasible(&s);
    beale_system(&s, SP_LP_LT, 0, 1);
    expect_feasible(&s, x);

    sys_clear(&s);
    for (j = 0; j < 4; j++)
        fmpq_clear(x + j);
}

static void test_lp_pivot_limit(void **state)
{
    sp_test_sys_t s;
    const slong e0[3] = {1, 0, 0}, e1[3] = {0, 1, 0}, e2[3] = {0, 0, 1};
    fmpq x[3];
    slong j;

    for (j = 0; j < 3; j++)
        fmpq_init(x + j);
    sys_init(&s, 3, 3);
    /* Three artificials must leave the basis: at least three pivots. */
    sys_add_si(&s, e0, SP_LP_EQ, 1, 1);
    sys_add_si(&s, e1, SP_LP_EQ, 2, 1);
    sys_add_si(&s, e2, SP_LP_EQ, 3, 1);
    for (j = 0; j < 3; j++)
        fmpq_set_si(x + j, 7, 3);
    assert_int_equal(sys_solve(&s, 1, x), SP_LP_LIMIT);
    assert_int_equal(sys_solve(&s, 2, x), SP_LP_LIMIT);
    for (j = 0; j < 3; j++)
        assert_true(q_equal_si(x + j, 7, 3));
    assert_int_equal(sys_solve(&s, 0, x), SP_LP_FEASIBLE);
    assert_int_equal(sys_first_violated(&s, x), -1);
    assert_int_equal(sys_solve(&s, -1, x), SP_LP_FEASIBLE);
    assert_int_equal(sys_solve(&s, 100, x), SP_LP_FEASIBLE);
    assert_int_equal(sys_first_violated(&s, x), -1);
    sys_clear(&s);
    for (j = 0; j < 3; j++)
        fmpq_clear(x + j);
}

static void test_lp_bad_arguments_give_limit(void **state)
{
    sp_test_sys_t s;
    const slong one[1] = {1};
    fmpq x[1];

    fmpq_init(x);
    sys_init(&s, 1, 1);
    sys_add_si(&s, one, SP_LP_LE, 1, 1);
    assert_int_equal(sp_lp_feasible(s.a, s.b, s.rel, -1, 1, 0, x), SP_LP_LIMIT);
    assert_int_equal(sp_lp_feasible(s.a, s.b, s.rel, 1, -1, 0, x), SP_LP_LIMIT);
    s.rel[0] = (sp_lp_rel_t)7;
    assert_int_equal(sys_solve(&s, 0, x), SP_LP_LIMIT);
    s.rel[0] = (sp_lp_rel_t)-1;
    assert_int_equal(sys_solve(&s, 0, x), SP_LP_LIMIT);
    assert_int_equal(sp_lp_feasible(NULL, NULL, NULL, WORD(1) << 40, 1, 0, x), SP_LP_LIMIT);
    sys_clear(&s);
    fmpq_clear(x);
}

/* ------------------------------------------------------------------ property tests */

static slong rand_small(flint_rand_t state, slong r)
{
    return (slong)n_randint(state, (ulong)(2 * r + 1)) - r;
}

/* A random coefficient row: sparse small integers, now and then a rational. */
static void rand_coefs(fmpq *c, slong n, flint_rand_t state)
{
    slong j;

    for (j = 0; j < n; j++) {
        if (n_randint(state, 3) == 0)
            fmpq_zero(c + j);
        else if (n_randint(state, 6) == 0)
            fmpq_randtest(c + j, state, 5);
        else
            fmpq_set_si(c + j, rand_small(state, 4), 1);
    }
}

static void dot(fmpq_t r, const fmpq *c, const fmpq *x, slong n)
{
    fmpq_t t;
    slong j;

    fmpq_init(t);
    fmpq_zero(r);
    for (j = 0; j < n; j++) {
        fmpq_mul(t, c + j, x + j);
        fmpq_add(r, r, t);
    }
    fmpq_clear(t);
}

/* A random positive rational of small height. */
static void rand_positive(fmpq_t d, flint_rand_t state)
{
    fmpq_randtest_not_zero(d, state, 4);
    fmpq_abs(d, d);
}

/*
 * Append m random rows satisfied by p (strict rows strictly): fresh rows, zero rows and scaled
 * copies of earlier rows.  About half the weak rows are tight at p, all of them when tight is set,
 * so the vertices are degenerate.
 */
static void sys_add_random_through(sp_test_sys_t *s, const fmpq *p, slong m, int tight,
                                   flint_rand_t state)
{
    fmpq *c = _fmpq_vec_init(s->n + 1);
    fmpq_t v, d;
    slong i, j;

    fmpq_init(v);
    fmpq_init(d);
    for (i = 0; i < m; i++) {
        sp_lp_rel_t rel = (sp_lp_rel_t)n_randint(state, 5);
        ulong kind = n_randint(state, 8);
        int weak;

        if (kind == 0) {
            for (j = 0; j < s->n; j++)
                fmpq_zero(c + j);
        } else if (kind == 1 && s->m > 0) {
            slong k = (slong)n_randint(state, (ulong)s->m);

            fmpq_randtest_not_zero(d, state, 3);
            for (j = 0; j < s->n; j++)
                fmpq_mul(c + j, s->a + k * s->n + j, d);
        } else {
            rand_coefs(c, s->n, state);
        }
        dot(v, c, p, s->n);
        weak = (rel == SP_LP_LE || rel == SP_LP_GE);
        if (rel == SP_LP_EQ || (weak && (tight || n_randint(state, 2))))
            fmpq_zero(d);
        else
            rand_positive(d, state);
        if (rel == SP_LP_LT || rel == SP_LP_LE)
            fmpq_add(v, v, d);
        else
            fmpq_sub(v, v, d);
        sys_add(s, c, rel, v);
    }
    fmpq_clear(d);
    fmpq_clear(v);
    _fmpq_vec_clear(c, s->n + 1);
}

/* Append c x REL d scaled by a random nonzero rational (a negative scale flips REL). */
static void sys_add_scaled(sp_test_sys_t *s, const fmpq *c, sp_lp_rel_t rel, const fmpq_t d,
                           flint_rand_t state)
{
    fmpq *sc = _fmpq_vec_init(s->n + 1);
    fmpq_t k, sd;
    slong j;

    fmpq_init(k);
    fmpq_init(sd);
    fmpq_randtest_not_zero(k, state, 3);
    for (j = 0; j < s->n; j++)
        fmpq_mul(sc + j, c + j, k);
    fmpq_mul(sd, d, k);
    sys_add(s, sc, fmpq_sgn(k) < 0 ? rel_flip(rel) : rel, sd);
    fmpq_clear(sd);
    fmpq_clear(k);
    _fmpq_vec_clear(sc, s->n + 1);
}

static void test_lp_random_interior_point_is_feasible(void **unused)
{
    slong iter, iters = 400 * sp_test_multiplier();
    flint_rand_t state;

    flint_randinit(state);
    for (iter = 0; iter < iters; iter++) {
        slong n, m, bad;
        sp_test_sys_t s;
        sp_lp_status_t st;
        fmpq *p, *x;

        flint_randseed(state, SP_TEST_SEED, (ulong)iter);
        n = (slong)n_randint(state, iter % 10 == 9 ? 25 : 8) + 1;
        m = (slong)n_randint(state, iter % 10 == 9 ? 40 : 14);
        p = _fmpq_vec_init(n);
        x = _fmpq_vec_init(n);
        for (bad = 0; bad < n; bad++)
            fmpq_randtest(p + bad, state, 6);
        sys_init(&s, m, n);
        sys_add_random_through(&s, p, m, iter % 4 == 3, state);
        if (sys_first_violated(&s, p) != -1)
            fail_msg("seed (%lu, %ld): generator broke its own point", SP_TEST_SEED, iter);

        st = sys_solve(&s, SP_TEST_PIVOTS, x);
        if (st != SP_LP_FEASIBLE)
            fail_msg("seed (%lu, %ld): m=%ld n=%ld status %d, expected FEASIBLE", SP_TEST_SEED,
                     iter, m, n, (int)st);
        bad = sys_first_violated(&s, x);
        if (bad != -1)
            fail_msg("seed (%lu, %ld): returned point violates row %ld", SP_TEST_SEED, iter, bad);

        sys_clear(&s);
        _fmpq_vec_clear(x, n);
        _fmpq_vec_clear(p, n);
    }
    flint_randclear(state);
}

static void test_lp_random_contradiction_is_infeasible(void **unused)
{
    static const sp_lp_rel_t pairs[][2] = {
        {SP_LP_LE, SP_LP_GT}, {SP_LP_LT, SP_LP_GE}, {SP_LP_GE, SP_LP_LT},
        {SP_LP_GT, SP_LP_LE}, {SP_LP_EQ, SP_LP_LT}, {SP_LP_EQ, SP_LP_GT},
    };
    slong iter, iters = 400 * sp_test_multiplier();
    flint_rand_t state;

    flint_randinit(state);
    for (iter = 0; iter < iters; iter++) {
        slong n, m, j;
        sp_test_sys_t s;
        sp_lp_status_t st;
        fmpq *p, *x, *c;
        fmpq_t d;
        ulong k;

        flint_randseed(state, SP_TEST_SEED, (ulong)iter + 1000000);
        n = (slong)n_randint(state, iter % 10 == 9 ? 25 : 8) + 1;
        m = (slong)n_randint(state, iter % 10 == 9 ? 40 : 14);
        p = _fmpq_vec_init(n);
        x = _fmpq_vec_init(n);
        c = _fmpq_vec_init(n);
        fmpq_init(d);
        for (j = 0; j < n; j++)
            fmpq_randtest(p + j, state, 6);
        sys_init(&s, m + 2, n);
        sys_add_random_through(&s, p, m, 0, state);

        /* c x REL d and its negation; d near c p so the pair cuts through the feasible region. */
        rand_coefs(c, n, state);
        dot(d, c, p, n);
        if (n_randint(state, 2)) {
            fmpq_t e;

            fmpq_init(e);
            fmpq_randtest(e, state, 4);
            fmpq_add(d, d, e);
            fmpq_clear(e);
        }
        k = n_randint(state, sizeof(pairs) / sizeof(pairs[0]));
        sys_add_scaled(&s, c, pairs[k][0], d, state);
        sys_add_scaled(&s, c, pairs[k][1], d, state);
        sys_shuffle(&s, state);

        st = sys_solve(&s, SP_TEST_PIVOTS, x);
        if (st != SP_LP_INFEASIBLE)
            fail_msg("seed (%lu, %ld): m=%ld n=%ld status %d, expected INFEASIBLE",
                     SP_TEST_SEED, iter + 1000000, s.m, n, (int)st);

        fmpq_clear(d);
        sys_clear(&s);
        _fmpq_vec_clear(c, n);
        _fmpq_vec_clear(x, n);
        _fmpq_vec_clear(p, n);
    }
    flint_randclear(state);
}

/*
 * c1 x <= d1, c2 x <= d2 (one of them possibly strict) and (c1 + c2) x > d1 + d2 (or >= when
 * one of the first two is strict): infeasible, though no two rows contradict each other.
 */
static void test_lp_random_sum_contradiction_is_infeasible(void **unused)
{
    slong iter, iters = 300 * sp_test_multiplier();
    flint_rand_t state;

    flint_randinit(state);
    for (iter = 0; iter < iters; iter++) {
        slong n, m, j;
        sp_test_sys_t s;
        sp_lp_status_t st;
        fmpq *p, *x, *c1, *c2, *c3;
        fmpq_t d1, d2, d3;
        int strict1;

        flint_randseed(state, SP_TEST_SEED, (ulong)iter + 2000000);
        n = (slong)n_randint(state, 8) + 1;
        m = (slong)n_randint(state, 12);
        p = _fmpq_vec_init(n);
        x = _fmpq_vec_init(n);
        c1 = _fmpq_vec_init(n);
        c2 = _fmpq_vec_init(n);
        c3 = _fmpq_vec_init(n);
        fmpq_init(d1);
        fmpq_init(d2);
        fmpq_init(d3);
        for (j = 0; j < n; j++)
            fmpq_randtest(p + j, state, 6);
        sys_init(&s, m + 3, n);
        sys_add_random_through(&s, p, m, 0, state);

        rand_coefs(c1, n, state);
        rand_coefs(c2, n, state);
        fmpq_randtest(d1, state, 5);
        fmpq_randtest(d2, state, 5);
        for (j = 0; j < n; j++)
            fmpq_add(c3 + j, c1 + j, c2 + j);
        fmpq_add(d3, d1, d2);
        strict1 = (int)n_randint(state, 2);
        sys_add_scaled(&s, c1, strict1 ? SP_LP_LT : SP_LP_LE, d1, state);
        sys_add_scaled(&s, c2, SP_LP_LE, d2, state);
        sys_add_scaled(&s, c3, strict1 ? SP_LP_GE : SP_LP_GT, d3, state);
        sys_shuffle(&s, state);

        st = sys_solve(&s, SP_TEST_PIVOTS, x);
        if (st != SP_LP_INFEASIBLE)
            fail_msg("seed (%lu, %ld): m=%ld n=%ld status %d, expected INFEASIBLE",
                     SP_TEST_SEED, iter + 2000000, s.m, n, (int)st);

        fmpq_clear(d3);
        fmpq_clear(d2);
        fmpq_clear(d1);
        sys_clear(&s);
        _fmpq_vec_clear(c3, n);
        _fmpq_vec_clear(c2, n);
        _fmpq_vec_clear(c1, n);
        _fmpq_vec_clear(x, n);
        _fmpq_vec_clear(p, n);
    }
    flint_randclear(state);
}

/*
 * Fourier-Motzkin elimination as an independent oracle for small systems.  A set holds len rows
 * c x < d (strict) or c x <= d over n variables; eliminating the last variable combines every row
 * where it is positive with every row where it is negative, strict if either one is.
 */
typedef struct {
    fmpq *c;
    fmpq *d;
    int *strict;
    slong len;
    slong n;
} sp_test_fm_t;

static void fm_init(sp_test_fm_t *f, slong len, slong n)
{
    f->c = _fmpq_vec_init(len * n + 1);
    f->d = _fmpq_vec_init(len + 1);
    f->strict = (int *)flint_calloc(len + 1, sizeof(int));
    f->len = len;
    f->n = n;
}

static void fm_clear(sp_test_fm_t *f)
{
    _fmpq_vec_clear(f->c, f->len * f->n + 1);
    _fmpq_vec_clear(f->d, f->len + 1);
    flint_free(f->strict);
}

/* Row k of f becomes sign * (row i of s) with the relation given. */
static void fm_set_row(sp_test_fm_t *f, slong k, const sp_test_sys_t *s, slong i, int sign,
                       int strict)
{
    slong j;

    for (j = 0; j < s->n; j++) {
        fmpq_set(f->c + k * f->n + j, s->a + i * s->n + j);
        if (sign < 0)
            fmpq_neg(f->c + k * f->n + j, f->c + k * f->n + j);
    }
    fmpq_set(f->d + k, s->b + i);
    if (sign < 0)
        fmpq_neg(f->d + k, f->d + k);
    f->strict[k] = strict;
}

/* Whether s is feasible, by Fourier-Motzkin elimination of every variable. */
static int fm_feasible(const sp_test_sys_t *s)
{
    sp_test_fm_t cur, next;
    slong i, j, k, v, len = 0;
    fmpq_t t;
    int ok = 1;

    for (i = 0; i < s->m; i++)
        len += s->rel[i] == SP_LP_EQ ? 2 : 1;
    fm_init(&cur, len, s->n);
    for (i = 0, k = 0; i < s->m; i++) {
        sp_lp_rel_t r = s->rel[i];

        if (r == SP_LP_LT || r == SP_LP_LE || r == SP_LP_EQ)
            fm_set_row(&cur, k++, s, i, 1, r == SP_LP_LT);
        if (r == SP_LP_GT || r == SP_LP_GE || r == SP_LP_EQ)
            fm_set_row(&cur, k++, s, i, -1, r == SP_LP_GT);
    }

    fmpq_init(t);
    for (v = s->n - 1; v >= 0; v--) {
        slong npos = 0, nneg = 0, nzero = 0, p, q;

        for (i = 0; i < cur.len; i++) {
            int sg = fmpq_sgn(cur.c + i * cur.n + v);

            npos += sg > 0;
            nneg += sg < 0;
            nzero += sg == 0;
        }
        fm_init(&next, nzero + npos * nneg, s->n);
        k = 0;
        for (p = 0; p < cur.len; p++) {
            const fmpq *cp = cur.c + p * cur.n;

            if (fmpq_is_zero(cp + v)) {
                for (j = 0; j < cur.n; j++)
                    fmpq_set(next.c + k * next.n + j, cp + j);
                fmpq_set(next.d + k, cur.d + p);
                next.strict[k++] = cur.strict[p];
                continue;
            }
            if (fmpq_sgn(cp + v) < 0)
                continue;
            for (q = 0; q < cur.len; q++) {
                const fmpq *cq = cur.c + q * cur.n;

                if (fmpq_sgn(cq + v) >= 0)
                    continue;
                /* (-cq_v) * row p + cp_v * row q: column v cancels. */
                for (j = 0; j < cur.n; j++) {
                    fmpq *e = next.c + k * next.n + j;

                    fmpq_mul(e, cp + j, cq + v);
                    fmpq_neg(e, e);
                    fmpq_mul(t, cq + j, cp + v);
                    fmpq_add(e, e, t);
                }
                fmpq_mul(next.d + k, cur.d + p, cq + v);
                fmpq_neg(next.d + k, next.d + k);
                fmpq_mul(t, cur.d + q, cp + v);
                fmpq_add(next.d + k, next.d + k, t);
                next.strict[k++] = cur.strict[p] || cur.strict[q];
            }
        }
        fm_clear(&cur);
        cur = next;
    }
    for (i = 0; i < cur.len; i++) {
        int sg = fmpq_sgn(cur.d + i);

        if (sg < 0 || (sg == 0 && cur.strict[i]))
            ok = 0;
    }
    fmpq_clear(t);
    fm_clear(&cur);
    return ok;
}

/* Random small systems (rows over 1 to 3 variables) against Fourier-Motzkin elimination. */
static void test_lp_random_small_systems_match_fourier_motzkin(void **unused)
{
    slong iter, iters = 2000 * sp_test_multiplier();
    flint_rand_t state;
    long count[2] = {0, 0};

    flint_randinit(state);
    for (iter = 0; iter < iters; iter++) {
        slong n, m, i, j;
        sp_test_sys_t s;
        sp_lp_status_t st;
        int expect;
        fmpq *x;

        flint_randseed(state, SP_TEST_SEED, (ulong)iter + 3000000);
        n = (slong)n_randint(state, 3) + 1;
        m = (slong)n_randint(state, 6) + 1;
        x = _fmpq_vec_init(n);
        sys_init(&s, m, n);
        for (i = 0; i < m; i++) {
            for (j = 0; j < n; j++)
                fmpq_set_si(s.a + i * n + j, rand_small(state, 3), 1);
            fmpq_randtest(s.b + i, state, 2);
            s.rel[i] = (sp_lp_rel_t)n_randint(state, 5);
        }
        s.m = m;
        expect = fm_feasible(&s);
        count[expect]++;

        st = sys_solve(&s, SP_TEST_PIVOTS, x);
        if (st != (expect ? SP_LP_FEASIBLE : SP_LP_INFEASIBLE))
            fail_msg("seed (%lu, %ld): status %d, Fourier-Motzkin says %s", SP_TEST_SEED,
                     iter + 3000000, (int)st, expect ? "feasible" : "infeasible");
        if (st == SP_LP_FEASIBLE && sys_first_violated(&s, x) != -1)
            fail_msg("seed (%lu, %ld): returned point violates a row", SP_TEST_SEED,
                     iter + 3000000);
        sys_clear(&s);
        _fmpq_vec_clear(x, n);
    }
    /* The generator must exercise both answers. */
    assert_true(count[0] > iters / 10 && count[1] > iters / 10);
    flint_randclear(state);
}

/* The advertised size: 100 rows over 100 variables, with and without a contradiction. */
static void test_lp_hundred_by_hundred(void **unused)
{
    const slong n = 100, m = 100;
    flint_rand_t state;
    sp_test_sys_t s;
    fmpq *p, *x;
    fmpq_t d;
    slong j;

    flint_randinit(state);
    flint_randseed(state, SP_TEST_SEED, 4000000);
    p = _fmpq_vec_init(n);
    x = _fmpq_vec_init(n);
    fmpq_init(d);
    for (j = 0; j < n; j++)
        fmpq_randtest(p + j, state, 6);
    sys_init(&s, m + 2, n);
    sys_add_random_through(&s, p, m, 0, state);
    expect_feasible(&s, x);

    dot(d, s.a + 5 * n, p, n);
    sys_add(&s, s.a + 5 * n, SP_LP_LE, d);
    sys_add(&s, s.a + 5 * n, SP_LP_GT, d);
    sys_shuffle(&s, state);
    expect_infeasible(&s);

    fmpq_clear(d);
    sys_clear(&s);
    _fmpq_vec_clear(x, n);
    _fmpq_vec_clear(p, n);
    flint_randclear(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lp_no_rows_is_feasible_at_zero),
        cmocka_unit_test(test_lp_strict_opposites_are_infeasible),
        cmocka_unit_test(test_lp_weak_opposites_meet_at_zero),
        cmocka_unit_test(test_lp_open_interval_gives_interior_point),
        cmocka_unit_test(test_lp_equalities_solve_exactly),
        cmocka_unit_test(test_lp_inconsistent_equalities_are_infeasible),
        cmocka_unit_test(test_lp_redundant_rows_are_harmless),
        cmocka_unit_test(test_lp_constant_rows),
        cmocka_unit_test(test_lp_free_variables_take_negative_values),
        cmocka_unit_test(test_lp_strict_rows_far_from_origin),
        cmocka_unit_test(test_lp_degenerate_beale_does_not_cycle),
        cmocka_unit_test(test_lp_pivot_limit),
        cmocka_unit_test(test_lp_bad_arguments_give_limit),
        cmocka_unit_test(test_lp_random_interior_point_is_feasible),
        cmocka_unit_test(test_lp_random_contradiction_is_infeasible),
        cmocka_unit_test(test_lp_random_sum_contradiction_is_infeasible),
        cmocka_unit_test(test_lp_random_small_systems_match_fourier_motzkin),
        cmocka_unit_test(test_lp_hundred_by_hundred),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
