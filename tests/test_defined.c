/* test_defined.c: is the plan defined wherever the model is (sp_defined_implied): rules, properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "defined.h"
#include "engine_fixture.h"
#include "eval.h"

static sp_expr_t P(fx_t *f, const char *s) { return fx_parse(f, s); }

/* A DIFFERENT answer's point, re-checked by evaluation: lhs undefined there, rhs defined. */
static void check_witness(fx_t *f, sp_expr_t lhs, sp_expr_t rhs, const sp_result_t *r)
{
    assert_int_equal(r->answer, SP_DIFFERENT);
    fmpq *vals = _fmpq_vec_init(f->E->nsyms ? f->E->nsyms : 1);
    for (slong i = 0; i < r->cex.n; i++)
        fmpq_set(vals + f->E->nodes[r->cex.syms[i]].param, r->cex.vals + i);
    assert_int_equal(sp_eval_definedness_by(f->E, lhs, vals, 0, NULL, NULL), SP_EVAL_UNDEFINED);
    assert_int_equal(sp_eval_definedness_by(f->E, rhs, vals, 0, NULL, NULL), SP_EVAL_OK);
    _fmpq_vec_clear(vals, f->E->nsyms ? f->E->nsyms : 1);
    assert_string_equal(r->cex.lhs_value, "undefined");
    assert_non_null(r->cex.rhs_value);
    assert_non_null(r->detail);
}

static void expect_implied(fx_t *f, const char *lhs, const char *rhs)
{
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t a = sp_defined_implied(f->S, P(f, lhs), P(f, rhs), &r);
    if (a != SP_EQUAL)
        print_error("'%s' defined wherever '%s' is: got %d (%s)\n", lhs, rhs, a,
                    r.detail ? r.detail : sp_why_name(r.why));
    assert_int_equal(a, SP_EQUAL);
    sp_result_clear(&r);
}

/* DIFFERENT with a checked point, and the failing operation described as `what`. */
static void expect_refuted(fx_t *f, const char *lhs, const char *rhs, const char *what)
{
    sp_result_t r;
    sp_result_init(&r);
    sp_expr_t a = P(f, lhs), b = P(f, rhs);
    sp_answer_t ans = sp_defined_implied(f->S, a, b, &r);
    if (ans != SP_DIFFERENT)
        print_error("'%s' vs '%s': expected a point where only the model is defined, got %d (%s)\n",
                    lhs, rhs, ans, r.detail ? r.detail : sp_why_name(r.why));
    check_witness(f, a, b, &r);
    if (strstr(r.detail, what) == NULL)
        fail_msg("'%s' vs '%s': detail '%s' does not say '%s'", lhs, rhs, r.detail, what);
    sp_result_clear(&r);
}

/* UNKNOWN, naming the obligation (detail contains `what`). */
static void expect_unknown(fx_t *f, const char *lhs, const char *rhs, const char *what)
{
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t ans = sp_defined_implied(f->S, P(f, lhs), P(f, rhs), &r);
    if (ans != SP_UNKNOWN)
        print_error("'%s' vs '%s': expected UNKNOWN, got %d\n", lhs, rhs, ans);
    assert_int_equal(ans, SP_UNKNOWN);
    assert_int_equal(r.why, SP_WHY_DEFINEDNESS);
    assert_non_null(r.detail);
    if (strstr(r.detail, what) == NULL)
        fail_msg("'%s' vs '%s': detail '%s' does not name '%s'", lhs, rhs, r.detail, what);
    sp_result_clear(&r);
}

/* The example: a mask that multiplies a quotient is not a guard. */
static void test_defined_mask_times_quotient(void **state)
{
    fx_t *f = *state;
    expect_refuted(f, "gt(n, 0) * (s / n)", "where(gt(n, 0), s / n, 0)", "division by zero at `n` = 0");
    /* the other way round the model (now lhs) only divides where n > 0 */
    expect_implied(f, "where(gt(n, 0), s / n, 0)", "gt(n, 0) * (s / n)");
    /* and the engine calls the pair equal: definedness is what separates them */
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_equiv(f->S, P(f, "gt(n, 0) * (s / n)"), P(f, "where(gt(n, 0), s / n, 0)"), &r),
                     SP_EQUAL);
    sp_result_clear(&r);
}

/* Normal-form cancellation: (x*y)/y has the normal form x but is undefined at y = 0. */
static void test_defined_cancellation(void **state)
{
    fx_t *f = *state;
    expect_refuted(f, "(x * y) / y", "x", "division by zero at `y` = 0");
    expect_refuted(f, "x * y^-2 * y^2", "x", "negative power of zero");
    expect_refuted(f, "sqrt(x)^2", "x", "sqrt of a negative value");
    expect_refuted(f, "exp(log(x))", "x", "log of a value <= 0");
    expect_refuted(f, "rsqrt(x) * x", "x", "rsqrt of a value <= 0 at `x` = 0");
    /* a sum of squares is zero where every square is: the all-zero row */
    expect_refuted(f, "x / sqrt(x*x + y*y) * sqrt(x*x + y*y)", "x", "division by zero");
    /* the same expression, or a canonical regrouping of it, is defined at the same points */
    expect_implied(f, "(x * y) / y", "(x * y) / y");
    expect_implied(f, "(a + b) + c / d", "a + (b + c / d)");
}

/* Rule (a): obligations true by the signs of a where-free normal form. */
static void test_defined_structure(void **state)
{
    fx_t *f = *state;
    static const char *const ok[] = {
        "x / (y^2 + 1)",
        "x / (y^4 + 2*y^2*z^2 + 1/3)",
        "x / ((y^2 + 1) * (z^2 + 2))",
        "x / (-y^2 - 1)",                         /* negative, so nonzero */
        "x * rsqrt((a^2 + b^2) / 2 + 1/100000)",  /* rmsnorm */
        "exp(a) / (exp(a) + exp(b))",             /* softmax */
        "exp(a - max(a, b)) / (exp(a - max(a, b)) + exp(b - max(a, b)))",
        "log(exp(a) + exp(b) + exp(c))",          /* logsumexp */
        "1 / (1 + exp(-a))",                      /* sigmoid */
        "sqrt(a^2 + b^2)",                        /* nonnegative suffices for sqrt */
        "m / (sqrt(v^2) + 1/100000000)",          /* an Adam-like denominator */
        "1 / (1 + erf(a)^2)",
        "log(2 * exp(a))",
        "x / (gt(a, b) + 1)",                     /* indicators are nonnegative */
        "rsqrt(exp(a)) + 1 / sigmoid(a)",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        expect_implied(f, ok[i], "x");
    /* not by structure: an indicator can be 0, an odd power negative, a sum of squares 0 */
    expect_refuted(f, "x / gt(a, b)", "x", "division by zero");
    expect_refuted(f, "x / (gt(a, 0) + gt(b, 0) + gt(c, 0))", "x", "division by zero"); /* a count */
    expect_refuted(f, "x / (y^2 + z^2)", "x", "division by zero");
    expect_refuted(f, "log(a^2)", "x", "log of a value <= 0");
    expect_refuted(f, "x / (y^3 + 1)", "x", "division by zero at `1 + y^3` = 0");
    expect_refuted(f, "x / (4*y^2 - 1)", "x", "division by zero");
}

/* Rule (b): the model has the same obligation (normal form up to a constant; factors). */
static void test_defined_model_obligations(void **state)
{
    fx_t *f = *state;
    expect_implied(f, "x / (2 * n)", "(x / n) / 2");
    expect_implied(f, "x / (n - m)", "3 * x / (2*m - 2*n)");
    expect_implied(f, "x / (n * m)", "(x / n) / m");          /* factors of the numerator */
    expect_implied(f, "x / n^2", "x * n^-1");
    expect_implied(f, "sqrt(v)", "log(v)");                   /* v > 0 implies v >= 0 */
    expect_implied(f, "sqrt(10 * v)", "sqrt(v)");
    expect_implied(f, "rsqrt(v)", "log(2 * v) + 1");
    expect_implied(f, "x / sqrt(v)", "x * rsqrt(v)");         /* sqrt(v) != 0 iff v != 0 */
    expect_implied(f, "1 / v", "log(v)");                     /* v > 0 implies v != 0 */
    expect_implied(f, "m / (sqrt(v * 10) + 1/100000000)", "sqrt(v)");
    expect_refuted(f, "x / (n * m)", "x / n", "division by zero at `n*m` = 0");
    expect_refuted(f, "log(v)", "sqrt(v)", "log of a value <= 0 at `v` = 0");
    expect_refuted(f, "log(-v)", "log(v)", "log of a value <= 0");
    expect_refuted(f, "sqrt(-v)", "sqrt(v)", "sqrt of a negative value");
    expect_refuted(f, "rsqrt(v)", "sqrt(v)", "rsqrt of a value <= 0 at `v` = 0");
    expect_refuted(f, "1 / (n + m)", "1 / n + 1 / m", "division by zero at `n + m` = 0");
}

/* Guards: where(c, a, b) evaluates a only where c != 0 and b only where c == 0. */
static void test_defined_guards(void **state)
{
    fx_t *f = *state;
    /* (b) under guards: the model's guard must be implied by the plan's */
    expect_implied(f, "where(gt(n, 0), s / n, 0)", "where(gt(n, 0), 2 * s / n, 1)");
    expect_implied(f, "where(gt(a, 0), where(gt(b, 0), x / c, 0), 0)",
                   "where(gt(b, 0), where(gt(a, 0), x / c, 0), 0)");
    expect_implied(f, "where(gt(a, 0), where(gt(b, 0), x / c, 0), 0)", "where(gt(a, 0), x / c, 0)");
    expect_implied(f, "where(gt(n, 0), 0, s / n)", "where(gt(n, 0), 0, s / n)");
    {
        /* the plan's guard is weaker: not implied (a point needs a > 0 and b <= 0) */
        sp_result_t r;
        sp_result_init(&r);
        sp_expr_t lhs = P(f, "where(gt(a, 0), x / c, 0)");
        sp_expr_t rhs = P(f, "where(gt(a, 0), where(gt(b, 0), x / c, 0), 0)");
        sp_answer_t ans = sp_defined_implied(f->S, lhs, rhs, &r);
        assert_int_not_equal(ans, SP_EQUAL);
        if (ans == SP_DIFFERENT)
            check_witness(f, lhs, rhs, &r);
        sp_result_clear(&r);
    }
    /* (a'): the plan's own guard gives the sign the obligation needs */
    expect_implied(f, "where(gt(n, 0), s / n, 0)", "0");
    expect_implied(f, "where(lt(n, 0), s / n, 0)", "0");
    expect_implied(f, "where(ne(n, 0), s / n, 0)", "0");
    expect_implied(f, "where(eq(n, 0), 0, s / n)", "0");
    expect_implied(f, "where(n, s / n, 0)", "0");
    expect_implied(f, "where(gt(x, y), log(x - y), 0)", "0");
    expect_implied(f, "where(lt(x, y), 1 / (x - y), 0)", "0");
    expect_implied(f, "where(ge(x, 0), 0, log(-x))", "0");
    expect_implied(f, "where(le(x, 0), 0, rsqrt(x))", "0");
    expect_implied(f, "where(ge(x, 0), sqrt(x), 0)", "0");
    expect_implied(f, "where(gt(n, 0), s / n, 0)", "where(ge(n, 1), s / n, 0)");
    expect_refuted(f, "where(ge(n, 0), s / n, 0)", "0", "division by zero at `n` = 0");
    expect_refuted(f, "where(ge(x, 0), log(x), 0)", "0", "log of a value <= 0 at `x` = 0");
    expect_refuted(f, "where(le(x, 0), rsqrt(-x), 0)", "0", "rsqrt of a value <= 0");
    expect_refuted(f, "where(lt(x, y), log(x - y), 0)", "0", "log of a value <= 0");
    /* a condition is evaluated wherever its where is; constant conditions pick one branch */
    expect_refuted(f, "where(1 / n, a, b)", "0", "division by zero at `n` = 0");
    expect_refuted(f, "where(1, s / n, 0)", "0", "division by zero");
    expect_implied(f, "where(0, s / n, 0)", "0");
    /* a mask multiplying a quotient guards nothing, on either side: this model is undefined
       at n = 0 too */
    expect_implied(f, "where(gt(n, 0), s / n, 0) * 0 + s / n", "gt(n, 0) * (s / n) * 0 + 1");
}

/* Over a where-cone, normal forms need not evaluate where the expression does: only whole
   normal forms are compared, signs are not read off them. */
static void test_defined_where_arguments(void **state)
{
    fx_t *f = *state;
    expect_implied(f, "1 / where(gt(x, 0), x, 1)", "2 / where(gt(x, 0), x, 1)");
    expect_implied(f, "1 / where(gt(x, 0), x, 1)", "log(where(gt(x, 0), 3 * x, 3))");
    expect_unknown(f, "1 / (1 + where(gt(x, 0), 1 / x, 0)^2)", "1", "denominator");
}

/* Rule (d): neither discharged nor refuted by a rational point. */
static void test_defined_unknown_names_obligation(void **state)
{
    fx_t *f = *state;
    expect_unknown(f, "x * (h*h - 2) / (h*h - 2)", "x", "denominator `h*h - 2` nonzero");
    expect_unknown(f, "log((h*h - 2)^2)", "x", "log argument `(h*h - 2)^2` positive");
    expect_unknown(f, "x / (exp(h) - 2)", "x", "denominator `exp(h) - 2` nonzero");
    expect_refuted(f, "sqrt(exp(h) - 2)", "x", "sqrt of a negative value at `exp(h) - 2` = -1");
    /* limits are UNKNOWN with their name */
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_defined_implied(f->S, SP_EXPR_NONE, P(f, "x"), &r), SP_UNKNOWN);
    assert_int_equal(r.why, SP_WHY_LIMIT_NODES);
    sp_result_clear(&r);
}

/* The engine's cache is only a cache: answers do not depend on the order of queries. */
static void test_defined_cache_order(void **state)
{
    (void)state;
    static const char *const q[][2] = {
        {"gt(n, 0) * (s / n)", "where(gt(n, 0), s / n, 0)"},
        {"where(gt(n, 0), s / n, 0)", "gt(n, 0) * (s / n)"},
        {"x / (n * m)", "(x / n) / m"},
        {"x / (n * m)", "x / n"},
        {"exp(a) / (exp(a) + exp(b)) + x / n", "x / n"},
        {"where(gt(a, 0), x / c, 0)", "where(gt(a, 0), where(gt(b, 0), x / c, 0), 0)"},
        {"log(v) + x / (y^2 + 1)", "sqrt(v)"},
        {"sqrt(v) + x / (y^2 + 1)", "log(v)"},
    };
    enum { N = sizeof q / sizeof q[0] };
    sp_answer_t first[N];
    for (int pass = 0; pass < 2; pass++) {
        sp_engine_t *S = sp_engine_new(NULL, 7);
        sp_ectx_struct *E = sp_engine_exprs(S);
        for (int k = 0; k < N; k++) {
            int i = pass == 0 ? k : N - 1 - k;
            sp_expr_t a = sp_expr_parse(E, q[i][0], NULL, 0), b = sp_expr_parse(E, q[i][1], NULL, 0);
            sp_result_t r;
            sp_result_init(&r);
            sp_answer_t ans = sp_defined_implied(S, a, b, &r);
            if (pass == 0)
                first[i] = ans;
            else if (ans != first[i])
                fail_msg("'%s' vs '%s': %d in order, %d in reverse", q[i][0], q[i][1], first[i], ans);
            sp_result_clear(&r);
        }
        sp_engine_free(S);
    }
    assert_int_equal(first[0], SP_DIFFERENT);
    assert_int_equal(first[2], SP_EQUAL);
}

/* ---- the property: never "implied" where evaluation finds lhs undefined and rhs defined ---- */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rnext(rng_t *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static int rint_(rng_t *r, int n) { return (int)(rnext(r) % (uint64_t)n); }

/* A random expression over a, b, c with partial operators and wheres. */
static sp_expr_t rand_expr(sp_ectx_struct *E, rng_t *r, int depth)
{
    static const char *const syms[] = {"a", "b", "c"};
    if (depth == 0 || rint_(r, 5) == 0) {
        if (rint_(r, 3) == 0)
            return sp_expr_const_si(E, rint_(r, 5) - 2, 1);
        return sp_expr_sym(E, syms[rint_(r, 3)]);
    }
    sp_expr_t x = rand_expr(E, r, depth - 1);
    switch (rint_(r, 15)) {
    case 13: return sp_expr_cmp(E, (sp_cmp_t)rint_(r, 6), x, rand_expr(E, r, 1)); /* a mask */
    case 14: return sp_expr_add(E, sp_expr_cmp(E, (sp_cmp_t)rint_(r, 6), x, rand_expr(E, r, 1)),
                                rand_expr(E, r, 1));
    case 0: return sp_expr_unary(E, SP_OP_LOG, x);
    case 1: return sp_expr_unary(E, SP_OP_SQRT, x);
    case 2: return sp_expr_unary(E, SP_OP_RSQRT, x);
    case 3: return sp_expr_pow(E, x, rint_(r, 2) ? -1 : -2);
    case 4: return sp_expr_pow(E, x, 2);
    case 5: return sp_expr_unary(E, SP_OP_EXP, x);
    case 6: return sp_expr_add(E, x, rand_expr(E, r, depth - 1));
    case 7: return sp_expr_sub(E, x, rand_expr(E, r, depth - 1));
    case 8: return sp_expr_mul(E, x, rand_expr(E, r, depth - 1));
    case 9: case 10: return sp_expr_div(E, x, rand_expr(E, r, depth - 1));
    default: {
        sp_expr_t c = sp_expr_cmp(E, (sp_cmp_t)rint_(r, 6), rand_expr(E, r, 1), rand_expr(E, r, 1));
        return rint_(r, 2) ? sp_expr_where(E, c, x, rand_expr(E, r, depth - 1))
                           : sp_expr_where(E, c, rand_expr(E, r, depth - 1), x);
    }
    }
}

/* rhs related to lhs, so that rhs's obligations matter: a random relative of it. */
static sp_expr_t rand_relative(sp_ectx_struct *E, rng_t *r, sp_expr_t lhs)
{
    sp_expr_t o = rand_expr(E, r, 2);
    switch (rint_(r, 6)) {
    case 0: return rand_expr(E, r, 3);
    case 1: return sp_expr_where(E, sp_expr_cmp(E, (sp_cmp_t)rint_(r, 6), rand_expr(E, r, 1), o), lhs, o);
    case 2: return sp_expr_where(E, sp_expr_cmp(E, (sp_cmp_t)rint_(r, 6), rand_expr(E, r, 1), o), o, lhs);
    case 3: return sp_expr_add(E, lhs, o);
    case 4: return sp_expr_mul(E, sp_expr_const_si(E, 1 + rint_(r, 3), 1), lhs);
    default: return sp_expr_mul(E, o, lhs);
    }
}

static void test_defined_property_random(void **state)
{
    (void)state;
    uint64_t seed = 20261201;
    const char *env = getenv("SP_TEST_SEED");
    if (env)
        seed = strtoull(env, NULL, 10);
    rng_t rg = {seed * 2 + 1};
    int implied = 0, refuted = 0, unknown = 0;
    /* the points: a, b, c in {-2, ..., 2} and a few fractions */
    enum { NPTS = 125 + 8 };
    fmpq *pts = _fmpq_vec_init(3 * NPTS);
    for (int i = 0; i < 125; i++) {
        fmpq_set_si(pts + 3 * i + 0, i % 5 - 2, 1);
        fmpq_set_si(pts + 3 * i + 1, i / 5 % 5 - 2, 1);
        fmpq_set_si(pts + 3 * i + 2, i / 25 - 2, 1);
    }
    for (int i = 125; i < NPTS; i++)
        for (int k = 0; k < 3; k++)
            fmpq_set_si(pts + 3 * i + k, rint_(&rg, 9) - 4, 1 + rint_(&rg, 3));
    for (int it = 0; it < 1500; it++) {
        sp_engine_t *S = sp_engine_new(NULL, seed + it);
        sp_ectx_struct *E = sp_engine_exprs(S);
        /* symbols a, b, c get indices 0, 1, 2 */
        sp_expr_sym(E, "a");
        sp_expr_sym(E, "b");
        sp_expr_sym(E, "c");
        sp_expr_t lhs = rand_expr(E, &rg, 4);
        sp_expr_t rhs = rand_relative(E, &rg, rint_(&rg, 3) ? lhs : rand_expr(E, &rg, 3));
        sp_result_t r;
        sp_result_init(&r);
        sp_answer_t ans = sp_defined_implied(S, lhs, rhs, &r);
        if (ans == SP_EQUAL) {
            implied++;
            for (int p = 0; p < NPTS; p++) {
                const fmpq *v = pts + 3 * p;
                sp_eval_status_t sl = sp_eval_definedness_by(E, lhs, v, 0, NULL, NULL);
                if (sl != SP_EVAL_UNDEFINED)
                    continue;
                if (sp_eval_definedness_by(E, rhs, v, 0, NULL, NULL) == SP_EVAL_OK) {
                    char *x = sp_expr_print(E, lhs, 400), *y = sp_expr_print(E, rhs, 400);
                    char *pa = fmpq_get_str(NULL, 10, v), *pb = fmpq_get_str(NULL, 10, v + 1),
                         *pc = fmpq_get_str(NULL, 10, v + 2);
                    fail_msg("seed %llu iteration %d: '%s' said defined wherever '%s' is, but at "
                             "a = %s, b = %s, c = %s only the latter is",
                             (unsigned long long)seed, it, x, y, pa, pb, pc);
                }
            }
        } else if (ans == SP_DIFFERENT) {
            refuted++;
            fmpq *vals = _fmpq_vec_init(E->nsyms);
            for (slong i = 0; i < r.cex.n; i++)
                fmpq_set(vals + E->nodes[r.cex.syms[i]].param, r.cex.vals + i);
            if (sp_eval_definedness_by(E, lhs, vals, 0, NULL, NULL) != SP_EVAL_UNDEFINED ||
                sp_eval_definedness_by(E, rhs, vals, 0, NULL, NULL) != SP_EVAL_OK)
                fail_msg("seed %llu iteration %d: the witness does not check", (unsigned long long)seed, it);
            _fmpq_vec_clear(vals, E->nsyms);
        } else {
            unknown++;
        }
        sp_result_clear(&r);
        sp_engine_free(S);
    }
    _fmpq_vec_clear(pts, 3 * NPTS);
    /* the test means something only if every answer occurs often */
    print_message("definedness property: %d implied, %d refuted, %d unknown\n", implied, refuted, unknown);
    assert_true(implied >= 150);
    assert_true(refuted >= 150);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defined_mask_times_quotient, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_defined_cancellation, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_defined_structure, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_defined_model_obligations, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_defined_guards, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_defined_where_arguments, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_defined_unknown_names_obligation, fx_setup, fx_teardown),
        cmocka_unit_test(test_defined_cache_order),
        cmocka_unit_test(test_defined_property_random),
    };
    return cmocka_run_group_tests_name("defined", tests, NULL, NULL);
}
