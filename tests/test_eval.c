/* test_eval.c: exact, ball and modular evaluation; certificates; seeded property tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <flint/nmod.h>
#include <flint/ulong_extras.h>

#include "eval.h"
#include "expr.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static sp_expr_t parse(sp_ectx_t E, const char *text)
{
    char err[200];
    sp_expr_t e = sp_expr_parse(E, text, err, sizeof(err));
    if (e == SP_EXPR_NONE)
        fail_msg("cannot parse '%s': %s", text, err);
    return e;
}

static slong sym_index(const sp_ectx_t E, const char *name)
{
    for (uint32_t i = 0; i < E->nsyms; i++)
        if (strcmp(E->names[i], name) == 0)
            return i;
    return -1;
}

/* A point for every symbol of E from "x=5 y=-1/2"; unnamed symbols get 0.  Free with point_free. */
static fmpq *point_new(const sp_ectx_t E, const char *spec)
{
    fmpq *v = _fmpq_vec_init(E->nsyms ? E->nsyms : 1);
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *tok = strtok(buf, " "); tok != NULL; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = 0;
        slong i = sym_index(E, tok);
        if (i < 0)
            continue; /* a symbol the expressions do not use */
        assert_int_equal(fmpq_set_str(v + i, eq + 1, 10), 0);
        fmpq_canonicalise(v + i);
    }
    return v;
}

static void point_free(const sp_ectx_t E, fmpq *v) { _fmpq_vec_clear(v, E->nsyms ? E->nsyms : 1); }

/* Exact evaluation of text at spec must give status want and, when value is not NULL, value. */
static void check_exact(const char *text, const char *spec, sp_eval_status_t want,
                        const char *value)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t e = parse(E, text);
    fmpq *pt = point_new(E, spec);
    fmpq_t out;
    fmpq_init(out);
    sp_eval_status_t s = sp_eval_exact(E, &e, 1, pt, out);
    char *got = fmpq_get_str(NULL, 10, out);
    if (s != want || (value != NULL && strcmp(got, value) != 0))
        fail_msg("%s at %s: status %d value %s, expected status %d value %s", text, spec, s, got,
                 want, value ? value : "-");
    flint_free(got);
    fmpq_clear(out);
    point_free(E, pt);
    sp_ectx_clear(E);
}

/* Ball evaluation at prec bits must give status want; when OK the ball must contain value. */
static void check_ball(const char *text, const char *spec, slong prec, sp_eval_status_t want,
                       const char *value)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t e = parse(E, text);
    fmpq *pt = point_new(E, spec);
    arb_t out;
    arb_init(out);
    sp_eval_status_t s = sp_eval_ball(E, &e, 1, pt, prec, out);
    if (s != want) {
        char *b = arb_get_str(out, 20, 0);
        fail_msg("%s at %s: ball status %d (%s), expected %d", text, spec, s, b, want);
    }
    if (value != NULL) {
        fmpq_t q;
        fmpq_init(q);
        assert_int_equal(fmpq_set_str(q, value, 10), 0);
        fmpq_canonicalise(q);
        if (!arb_contains_fmpq(out, q))
            fail_msg("%s at %s: ball does not contain %s", text, spec, value);
        fmpq_clear(q);
    }
    arb_clear(out);
    point_free(E, pt);
    sp_ectx_clear(E);
}

/*
 * sp_eval_certify_differ on two parsed texts; returns the verdict.  With want_exact >= 0 the
 * certificate's kind is checked, and the printed values must contain sub_a / sub_b (if not NULL).
 */
static int certify(const char *a, const char *b, const char *spec, int want_exact,
                   const char *sub_a, const char *sub_b)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t ea = parse(E, a), eb = parse(E, b);
    fmpq *pt = point_new(E, spec);
    char *va = (char *)"x", *vb = (char *)"x";
    int exact = -1;
    int d = sp_eval_certify_differ(E, ea, eb, pt, &va, &vb, &exact);
    if (d) {
        assert_non_null(va);
        assert_non_null(vb);
        if (want_exact >= 0 && exact != want_exact)
            fail_msg("%s vs %s: certificate exact=%d, expected %d", a, b, exact, want_exact);
        if (sub_a != NULL && strstr(va, sub_a) == NULL)
            fail_msg("%s: printed value '%s' lacks '%s'", a, va, sub_a);
        if (sub_b != NULL && strstr(vb, sub_b) == NULL)
            fail_msg("%s: printed value '%s' lacks '%s'", b, vb, sub_b);
        flint_free(va);
        flint_free(vb);
    } else {
        assert_null(va);
        assert_null(vb);
        assert_int_equal(exact, 0);
    }
    point_free(E, pt);
    sp_ectx_clear(E);
    return d;
}

/* Fingerprints of two texts (in one context) with one seed; returns 1 if both are equal. */
static int fp_equal(const char *a, const char *b, uint64_t seed)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t r[2] = {parse(E, a), parse(E, b)};
    uint64_t out[2];
    if (!sp_fingerprint(E, r, 2, seed, out))
        fail_msg("fingerprint of %s, %s failed", a, b);
    sp_ectx_clear(E);
    return out[0] == out[1];
}

static void assert_fp_equal(const char *a, const char *b)
{
    for (uint64_t seed = 1; seed <= 3; seed++)
        if (!fp_equal(a, b, seed))
            fail_msg("fingerprints differ (seed %llu): %s vs %s", (unsigned long long)seed, a, b);
}

static void assert_fp_differ(const char *a, const char *b)
{
    for (uint64_t seed = 1; seed <= 3; seed++)
        if (fp_equal(a, b, seed))
            fail_msg("fingerprints equal (seed %llu): %s vs %s", (unsigned long long)seed, a, b);
}

/* ---- exact evaluation ----------------------------------------------------------------------- */

static void test_eval_exact_sample_values(void **state)
{
    (void)state;
    check_exact("max(x, y) + relu(x - 3)", "x=5 y=7", SP_EVAL_OK, "9");
    check_exact("max(x, y) + relu(x - 3)", "x=1/2 y=-1", SP_EVAL_OK, "1/2");
    check_exact("max(x, y) + relu(x - 3)", "x=4 y=-1", SP_EVAL_OK, "5");
    check_exact("min(x, y, 3)", "x=5 y=7", SP_EVAL_OK, "3");
    check_exact("min(x, y, 3)", "x=-5/3 y=7", SP_EVAL_OK, "-5/3");
    check_exact("abs(x - y)", "x=2 y=7", SP_EVAL_OK, "5");
    check_exact("clamp(x, 0, 6)", "x=7", SP_EVAL_OK, "6");
    check_exact("clamp(x, 0, 6)", "x=-7", SP_EVAL_OK, "0");
    check_exact("clamp(x, 0, 6)", "x=7/2", SP_EVAL_OK, "7/2");
    check_exact("clamp(x, 6, 0)", "x=3", SP_EVAL_OK, "0"); /* min(max(x, 6), 0) */
    check_exact("where(lt(x, y), x*y, x - y)", "x=2 y=3", SP_EVAL_OK, "6");
    check_exact("where(lt(x, y), x*y, x - y)", "x=3 y=2", SP_EVAL_OK, "1");
    check_exact("where(x, 1, 2)", "x=-1/9", SP_EVAL_OK, "1");
    check_exact("where(x, 1, 2)", "x=0", SP_EVAL_OK, "2");
    check_exact("x^-2 + x^0 + neg(x)^3", "x=2", SP_EVAL_OK, "-27/4");
    check_exact("(x - y)/(x + y)", "x=1 y=3", SP_EVAL_OK, "-1/2");
    check_exact("0^0 + x^0", "x=0", SP_EVAL_OK, "2");
    check_exact("1e-5*x + 0.25", "x=2", SP_EVAL_OK, "12501/50000");
}

static void test_eval_exact_comparisons(void **state)
{
    (void)state;
    const char *ops[6] = {"lt", "le", "gt", "ge", "eq", "ne"};
    const char *less[6] = {"1", "1", "0", "0", "0", "1"}; /* at x=2, y=3 */
    const char *same[6] = {"0", "1", "0", "1", "1", "0"}; /* at x=y */
    char text[64];
    for (int k = 0; k < 6; k++) {
        snprintf(text, sizeof(text), "%s(x, y)", ops[k]);
        check_exact(text, "x=2 y=3", SP_EVAL_OK, less[k]);
        check_exact(text, "x=5/7 y=5/7", SP_EVAL_OK, same[k]);
        check_exact(text, "x=3 y=2", SP_EVAL_OK, less[(k ^ 2) < 4 ? (k ^ 2) : k]);
    }
}

static void test_eval_exact_undefined(void **state)
{
    (void)state;
    check_exact("1/(x - x)", "x=3", SP_EVAL_UNDEFINED, NULL);
    check_exact("1/(x - y)", "x=3 y=3", SP_EVAL_UNDEFINED, NULL);
    check_exact("1/(x - y)", "x=3 y=4", SP_EVAL_OK, "-1");
    check_exact("x^-1", "x=0", SP_EVAL_UNDEFINED, NULL);
    check_exact("0^-2", "", SP_EVAL_UNDEFINED, NULL);
    check_exact("log(x - 1)", "x=1", SP_EVAL_UNDEFINED, NULL);
    check_exact("log(x)", "x=-2", SP_EVAL_UNDEFINED, NULL);
    check_exact("sqrt(x)", "x=-1/4", SP_EVAL_UNDEFINED, NULL);
    check_exact("rsqrt(x)", "x=0", SP_EVAL_UNDEFINED, NULL);
    /* strict operators propagate, even next to a zero factor */
    check_exact("0 * (1/x)", "x=0", SP_EVAL_UNDEFINED, NULL);
    check_exact("max(1/x, 2)", "x=0", SP_EVAL_UNDEFINED, NULL);
    /* undefined beats inexact: the point is unusable either way */
    check_exact("exp(x) + 1/(x - 1)", "x=1", SP_EVAL_UNDEFINED, NULL);
}

static void test_eval_exact_where_is_lazy(void **state)
{
    (void)state;
    check_exact("where(gt(x, 0), log(x), 0)", "x=-1", SP_EVAL_OK, "0");
    check_exact("where(gt(x, 0), log(x), 0)", "x=1", SP_EVAL_OK, "0");
    check_exact("where(gt(x, 0), log(x), 0)", "x=2", SP_EVAL_INEXACT, NULL);
    check_exact("where(gt(x, 0), 1/x, 7)", "x=0", SP_EVAL_OK, "7");
    check_exact("where(ge(x, 0), 1/x, 7)", "x=0", SP_EVAL_UNDEFINED, NULL);
    check_exact("where(1/x, 1, 2)", "x=0", SP_EVAL_UNDEFINED, NULL);
    check_exact("where(exp(x), 1, 2)", "x=1", SP_EVAL_INEXACT, NULL);
    /* an inexact condition may hide an undefined one: 1/(exp(x) - exp(x)) */
    check_exact("where(exp(x), 2, 2)", "x=1", SP_EVAL_INEXACT, NULL);
}

static void test_eval_exact_transcendental_points(void **state)
{
    (void)state;
    check_exact("exp(x)", "x=0", SP_EVAL_OK, "1");
    check_exact("exp(x)", "x=1", SP_EVAL_INEXACT, NULL);
    check_exact("log(x)", "x=1", SP_EVAL_OK, "0");
    check_exact("log(x)", "x=2", SP_EVAL_INEXACT, NULL);
    check_exact("sqrt(4)", "", SP_EVAL_OK, "2");
    check_exact("sqrt(x)", "x=9/4", SP_EVAL_OK, "3/2");
    check_exact("sqrt(x)", "x=0", SP_EVAL_OK, "0");
    check_exact("sqrt(x)", "x=2", SP_EVAL_INEXACT, NULL);
    check_exact("sqrt(x)", "x=4/3", SP_EVAL_INEXACT, NULL);
    check_exact("rsqrt(x)", "x=4", SP_EVAL_OK, "1/2");
    check_exact("rsqrt(x)", "x=1/9", SP_EVAL_OK, "3");
    check_exact("rsqrt(x)", "x=3", SP_EVAL_INEXACT, NULL);
    check_exact("tanh(x)", "x=0", SP_EVAL_OK, "0");
    check_exact("sigmoid(x)", "x=0", SP_EVAL_OK, "1/2");
    check_exact("silu(x) + gelu(x) + erf(x)", "x=0", SP_EVAL_OK, "0");
    check_exact("tanh(x)", "x=1", SP_EVAL_INEXACT, NULL);
    check_exact("sigmoid(x)", "x=-1", SP_EVAL_INEXACT, NULL);
    check_exact("gelu(x)", "x=1/2", SP_EVAL_INEXACT, NULL);
    check_exact("erf(x)", "x=1", SP_EVAL_INEXACT, NULL);
    check_exact("silu(x)", "x=1", SP_EVAL_INEXACT, NULL);
    check_exact("exp(x - x) + log(exp(y - y))", "x=3 y=5", SP_EVAL_OK, "1");
}

static void test_eval_exact_several_roots(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t r[3] = {parse(E, "x*y + 1"), parse(E, "1/(x - 2)"), parse(E, "x + y")};
    fmpq *pt = point_new(E, "x=2 y=5");
    fmpq *out = _fmpq_vec_init(3);
    fmpq_set_si(out + 1, 99, 1);
    assert_int_equal(sp_eval_exact(E, r, 3, pt, out), SP_EVAL_UNDEFINED);
    assert_true(fmpz_equal_si(fmpq_numref(out + 0), 11));
    assert_true(fmpq_is_zero(out + 1)); /* not-OK roots are set to 0 */
    assert_true(fmpz_equal_si(fmpq_numref(out + 2), 7));
    /* the same evaluation with only defined roots is OK */
    sp_expr_t ok[2] = {r[0], r[2]};
    assert_int_equal(sp_eval_exact(E, ok, 2, pt, out), SP_EVAL_OK);
    assert_int_equal(sp_eval_exact(E, ok, 0, pt, out), SP_EVAL_OK);
    /* a failed constructor's SP_EXPR_NONE is reported, not dereferenced */
    sp_expr_t none[2] = {r[0], SP_EXPR_NONE};
    assert_int_equal(sp_eval_exact(E, none, 2, pt, out), SP_EVAL_NOMEM);
    assert_true(fmpz_equal_si(fmpq_numref(out + 0), 11));
    _fmpq_vec_clear(out, 3);
    point_free(E, pt);
    sp_ectx_clear(E);
}

static void test_eval_exact_only_cone(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    /* undefined and inexact nodes elsewhere in the store must not matter */
    parse(E, "1/(y - y) + exp(z) + log(0 - 1)");
    sp_expr_t e = parse(E, "x*x + 1");
    fmpq *pt = point_new(E, "x=3 y=1 z=1");
    fmpq_t out;
    fmpq_init(out);
    assert_int_equal(sp_eval_exact(E, &e, 1, pt, out), SP_EVAL_OK);
    assert_true(fmpz_equal_si(fmpq_numref(out), 10));
    arb_t b;
    arb_init(b);
    assert_int_equal(sp_eval_ball(E, &e, 1, pt, 64, b), SP_EVAL_OK);
    assert_true(arb_equal_si(b, 10));
    uint64_t fp;
    assert_int_equal(sp_fingerprint(E, &e, 1, 7, &fp), 1);
    arb_clear(b);
    fmpq_clear(out);
    point_free(E, pt);
    sp_ectx_clear(E);
}

static void test_eval_exact_output_aliases_point(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t e = parse(E, "x*x + y");
    fmpq *pt = point_new(E, "x=3 y=1");
    /* out[0] is the value of x itself; it may only be written after all reads */
    assert_int_equal(sp_eval_exact(E, &e, 1, pt, pt), SP_EVAL_OK);
    assert_true(fmpz_equal_si(fmpq_numref(pt + 0), 10));
    point_free(E, pt);
    sp_ectx_clear(E);
}

static void test_eval_exact_huge_power_is_nomem(void **state)
{
    (void)state;
    /* 3^(10^10) has about 1.6e10 bits: refused before it is computed */
    check_exact("(x^100000)^100000", "x=3", SP_EVAL_NOMEM, NULL);
    check_exact("(x^100000)^100000", "x=-1", SP_EVAL_OK, "1");
    check_exact("(x^100000)^-99999", "x=-1", SP_EVAL_OK, "1");
    check_exact("(x^100000)^100000", "x=0", SP_EVAL_OK, "0");
    /* balls cope with such sizes */
    check_ball("(x^100000)^100000", "x=3", 64, SP_EVAL_OK, NULL);
    /* and the certificate falls back to them */
    assert_int_equal(certify("(x^100000)^100000", "2*(x^100000)^100000", "x=3", 0, NULL, NULL),
                     1);
    assert_int_equal(certify("(x^100000)^100000", "(x^100000)^100000 + 1", "x=3", -1, NULL, NULL),
                     0);
}

/* ---- ball evaluation ------------------------------------------------------------------------ */

static void test_eval_ball_values(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t r[6] = {parse(E, "exp(x)"), parse(E, "sigmoid(x)"), parse(E, "gelu(x)"),
                      parse(E, "tanh(x)"), parse(E, "silu(x)"), parse(E, "erf(x)")};
    fmpq *pt = point_new(E, "x=1");
    arb_ptr out = _arb_vec_init(6);
    arb_t t;
    arb_init(t);
    assert_int_equal(sp_eval_ball(E, r, 6, pt, 128, out), SP_EVAL_OK);
    arb_const_e(t, 128);
    assert_true(arb_overlaps(out + 0, t));
    assert_true(arb_rel_accuracy_bits(out + 0) > 100);
    arb_inv(t, t, 128); /* sigmoid(1) = 1/(1 + 1/e) */
    arb_add_ui(t, t, 1, 128);
    arb_inv(t, t, 128);
    assert_true(arb_overlaps(out + 1, t));
    assert_true(arb_overlaps(out + 4, t));
    arb_set_str(t, "[0.8413447460685429485852325 +/- 1e-24]", 128); /* gelu(1) = Phi(1) */
    assert_true(arb_overlaps(out + 2, t));
    arb_set_str(t, "[0.7615941559557648881194583 +/- 1e-24]", 128);
    assert_true(arb_overlaps(out + 3, t));
    arb_set_str(t, "[0.8427007929497148693412206 +/- 1e-24]", 128);
    assert_true(arb_overlaps(out + 5, t));
    arb_clear(t);
    _arb_vec_clear(out, 6);
    point_free(E, pt);
    sp_ectx_clear(E);

    /* sigmoid and gelu far in the tails stay positive, tiny and accurate */
    check_ball("gt(sigmoid(x), 0)", "x=-800", 64, SP_EVAL_OK, "1");
    check_ball("lt(sigmoid(x), 1/10^300)", "x=-800", 64, SP_EVAL_OK, "1");
    check_ball("lt(gelu(x), 0)", "x=-30", 64, SP_EVAL_OK, "1");
    check_ball("gt(gelu(x), 0 - 1/10^100)", "x=-30", 64, SP_EVAL_OK, "1");
    /* rationals that are exact: sqrt(4) = 2 and exp(0) = 1 as exact balls */
    check_ball("sqrt(x) + exp(x - x)", "x=4", 64, SP_EVAL_OK, "3");
    check_ball("max(x, y) + relu(x - 3) + clamp(y, 0, 1) + abs(y)", "x=5 y=-7/3", 64, SP_EVAL_OK,
               "28/3");
    check_ball("x^-3", "x=1/3", 64, SP_EVAL_OK, "27");
}

static void test_eval_ball_domain(void **state)
{
    (void)state;
    check_ball("log(x)", "x=-1", 64, SP_EVAL_UNDEFINED, NULL);
    check_ball("log(x)", "x=0", 64, SP_EVAL_UNDEFINED, NULL);
    check_ball("rsqrt(x)", "x=0", 64, SP_EVAL_UNDEFINED, NULL);
    check_ball("sqrt(x)", "x=-1/3", 64, SP_EVAL_UNDEFINED, NULL);
    check_ball("sqrt(x)", "x=0", 64, SP_EVAL_OK, "0");
    /* exp(x)*exp(y) - exp(x+y) is a ball around 0 that is not exactly 0 */
    const char *z = "(exp(x)*exp(y) - exp(x + y))";
    char text[128];
    snprintf(text, sizeof(text), "log(%s)", z);
    check_ball(text, "x=1 y=2", 256, SP_EVAL_UNDECIDED, NULL);
    snprintf(text, sizeof(text), "sqrt(%s)", z);
    check_ball(text, "x=1 y=2", 256, SP_EVAL_UNDECIDED, NULL);
    snprintf(text, sizeof(text), "1/%s", z);
    check_ball(text, "x=1 y=2", 256, SP_EVAL_UNDECIDED, NULL);
    snprintf(text, sizeof(text), "%s^-2", z);
    check_ball(text, "x=1 y=2", 256, SP_EVAL_UNDECIDED, NULL);
    /* an exactly zero ball is a certain division by zero (dyadic inputs are exact balls) */
    check_ball("1/(x - y)", "x=1/2 y=1/2", 64, SP_EVAL_UNDEFINED, NULL);
    check_ball("(x - y)^-1", "x=1/2 y=1/2", 64, SP_EVAL_UNDEFINED, NULL);
    /* x - x of an inexact ball is a ball around 0, not 0 */
    check_ball("1/(x - y)", "x=1/3 y=1/3", 64, SP_EVAL_UNDECIDED, NULL);
    check_ball("1/(exp(x) - exp(x))", "x=1", 64, SP_EVAL_UNDECIDED, NULL);
    /* undefined wins over undecided */
    snprintf(text, sizeof(text), "1/%s + log(0 - x)", z);
    check_ball(text, "x=1 y=2", 64, SP_EVAL_UNDEFINED, NULL);
}

static void test_eval_ball_comparisons(void **state)
{
    (void)state;
    check_ball("lt(exp(x), exp(y))", "x=1 y=2", 64, SP_EVAL_OK, "1");
    check_ball("gt(exp(x), exp(y))", "x=1 y=2", 64, SP_EVAL_OK, "0");
    check_ball("ne(exp(x), exp(y))", "x=1 y=2", 64, SP_EVAL_OK, "1");
    check_ball("eq(exp(x), exp(y))", "x=1 y=2", 64, SP_EVAL_OK, "0");
    check_ball("lt(exp(x)*exp(y), exp(x + y))", "x=1 y=2", 4096, SP_EVAL_UNDECIDED, NULL);
    check_ball("eq(exp(x)*exp(y), exp(x + y))", "x=1 y=2", 4096, SP_EVAL_UNDECIDED, NULL);
    check_ball("ge(exp(x)*exp(y), exp(x + y))", "x=1 y=2", 64, SP_EVAL_UNDECIDED, NULL);
    /* exact balls that are equal are decided */
    check_ball("eq(x, y) + le(x, y) + ge(x, y) + lt(x, y)", "x=1/2 y=1/2", 64, SP_EVAL_OK, "3");
    check_ball("where(gt(exp(x), 2), 1, 2)", "x=1", 64, SP_EVAL_OK, "1");
    check_ball("where(gt(x, 0), log(x), 0)", "x=-1", 64, SP_EVAL_OK, "0");
    check_ball("where(eq(exp(x)*exp(y), exp(x + y)), 1, 2)", "x=1 y=2", 256, SP_EVAL_UNDECIDED,
               NULL);
    /* a defined condition of unknown sign does not matter when both branches are equal */
    check_ball("where(exp(x)*exp(y) - exp(x + y), 5, 5)", "x=1 y=2", 256, SP_EVAL_OK, "5");
    check_ball("where(exp(x)*exp(y) - exp(x + y), 5, 6)", "x=1 y=2", 256, SP_EVAL_UNDECIDED,
               NULL);
    /* an undecided comparison might be undefined underneath, so it stays undecided */
    check_ball("where(eq(exp(x)*exp(y), exp(x + y)), 5, 5)", "x=1 y=2", 256, SP_EVAL_UNDECIDED,
               NULL);
    check_ball("where(1/(x - y), 5, 5)", "x=1/3 y=1/3", 256, SP_EVAL_UNDECIDED, NULL);
    check_ball("where(x - x, 1, 2)", "x=1/2", 64, SP_EVAL_OK, "2");
    check_ball("where(x - x, 1, 2)", "x=1/3", 64, SP_EVAL_UNDECIDED, NULL);
    /* max, min, relu, abs, clamp enclose overlapping balls without deciding */
    check_ball("max(exp(x)*exp(y), exp(x + y)) - exp(3)", "x=1 y=2", 128, SP_EVAL_OK, "0");
    check_ball("relu(exp(x)*exp(y) - exp(x + y))", "x=1 y=2", 128, SP_EVAL_OK, "0");
    check_ball("abs(exp(x)*exp(y) - exp(x + y))", "x=1 y=2", 128, SP_EVAL_OK, "0");
    check_ball("clamp(exp(x)*exp(y) - exp(x + y), 0, 1)", "x=1 y=2", 128, SP_EVAL_OK, "0");
}

/* ---- certificates --------------------------------------------------------------------------- */

static void test_eval_certify_exact_rationals(void **state)
{
    (void)state;
    assert_int_equal(certify("x*y", "y*x + 1", "x=2 y=3", 1, "6", "7"), 1);
    assert_int_equal(certify("x + y", "y + x", "x=2 y=3", -1, NULL, NULL), 0);
    assert_int_equal(certify("(x + y)^2", "x^2 + 2*x*y + y^2", "x=2/3 y=-5", -1, NULL, NULL), 0);
    assert_int_equal(certify("x/3", "x/4", "x=1", 1, "1/3", "1/4"), 1);
    assert_int_equal(certify("max(x, y)", "x", "x=1 y=2", 1, "2", "1"), 1);
    assert_int_equal(certify("sqrt(4)", "2", "", -1, NULL, NULL), 0);
    assert_int_equal(certify("sqrt(x)", "x", "x=4", 1, "2", "4"), 1);
    assert_int_equal(certify("exp(x - x)", "1", "x=5", -1, NULL, NULL), 0);
}

static void test_eval_certify_exp_product_does_not_differ(void **state)
{
    (void)state;
    assert_int_equal(certify("exp(x)*exp(y)", "exp(x + y)", "x=1 y=2", -1, NULL, NULL), 0);
    assert_int_equal(certify("exp(x)", "exp(y)", "x=1 y=2", 0, "2.71828", "7.38905"), 1);
    assert_int_equal(certify("exp(x)*exp(y)", "exp(x + y) + 1/10^200", "x=1 y=2", 0, NULL, NULL),
                     1);
    /* a difference below 2^-4096 is not certified */
    assert_int_equal(
        certify("exp(x)*exp(y)", "exp(x + y) + 1/10^1300", "x=1 y=2", -1, NULL, NULL), 0);
}

static void test_eval_certify_identities_not_differ(void **state)
{
    (void)state;
    const char *spec[3] = {"x=1/3", "x=1", "x=-7/2"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(
            certify("tanh(x)", "(exp(2*x) - 1)/(exp(2*x) + 1)", spec[k], -1, NULL, NULL), 0);
        assert_int_equal(certify("sigmoid(x)", "1/(1 + exp(0 - x))", spec[k], -1, NULL, NULL), 0);
        assert_int_equal(certify("silu(x)", "x*sigmoid(x)", spec[k], -1, NULL, NULL), 0);
        assert_int_equal(certify("gelu(x)", "x*(1 + erf(x*rsqrt(2)))/2", spec[k], -1, NULL, NULL),
                         0);
        assert_int_equal(certify("log(exp(x))", "x", spec[k], -1, NULL, NULL), 0);
        assert_int_equal(certify("sqrt(x*x)", "abs(x)", spec[k], -1, NULL, NULL), 0);
    }
    /* but close relatives are told apart */
    assert_int_equal(certify("gelu(x)", "x*sigmoid(1.702*x)", "x=1", 0, "0.841", "0.845"), 1);
    assert_int_equal(certify("tanh(x)", "(exp(2*x) - 1)/(exp(2*x) + 2)", "x=1", 0, NULL, NULL), 1);
}

static void test_eval_certify_undefined_gives_zero(void **state)
{
    (void)state;
    assert_int_equal(certify("1/(x - x)", "0", "x=1", -1, NULL, NULL), 0);
    assert_int_equal(certify("log(x)", "5", "x=-1", -1, NULL, NULL), 0);
    assert_int_equal(certify("exp(x) + 1/(x - 1)", "exp(x)", "x=1", -1, NULL, NULL), 0);
    assert_int_equal(certify("log(exp(x) - exp(x))", "5", "x=1", -1, NULL, NULL), 0);
    /* a branch that is never taken does not make the point unusable */
    assert_int_equal(certify("where(gt(x, 0), log(x), 0)", "1", "x=-1", 1, "0", "1"), 1);
    /* NULL outputs are allowed */
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t a = parse(E, "x"), b = parse(E, "x + 1");
    fmpq *pt = point_new(E, "x=1");
    assert_int_equal(sp_eval_certify_differ(E, a, b, pt, NULL, NULL, NULL), 1);
    point_free(E, pt);
    sp_ectx_clear(E);
}

/* ---- fingerprints --------------------------------------------------------------------------- */

static void test_eval_fingerprint_homomorphism(void **state)
{
    (void)state;
    assert_fp_equal("(x + y)^2", "x^2 + 2*x*y + y^2");
    assert_fp_differ("x*y", "y*x + 1");
    assert_fp_equal("(x^2 - 1)/(x - 1)", "x + 1");
    assert_fp_equal("x^-3 * x^5", "x*x");
    assert_fp_equal("x - y", "x + neg(y)");
    assert_fp_equal("x/3 + y/6", "(2*x + y)/6");
    assert_fp_equal("(x + 1/2)*(x - 1/2)", "x^2 - 0.25");
    assert_fp_differ("x", "y");
    assert_fp_differ("x^2", "x^3");
}

static void test_eval_fingerprint_deterministic(void **state)
{
    (void)state;
    /* two stores that number the same nodes differently */
    sp_ectx_t A;
    sp_ectx_init(A);
    sp_expr_t a = parse(A, "max(x*y, exp(z)) + where(lt(x, y), tanh(x), y/3) + relu(z - 1)");
    for (uint64_t seed = 0; seed < 5; seed++) {
        uint64_t fa, fa2;
        assert_int_equal(sp_fingerprint(A, &a, 1, seed, &fa), 1);
        assert_int_equal(sp_fingerprint(A, &a, 1, seed, &fa2), 1);
        assert_int_equal(fa, fa2);
        assert_true(fa < SP_FP_PRIME);
    }
    /* node ids do not matter, symbol indices do: another store numbering x, y, z alike */
    sp_ectx_t C;
    sp_ectx_init(C);
    parse(C, "x + y + z");
    parse(C, "1/(x - y) + sin_x + 17");
    sp_expr_t c = parse(C, "max(x*y, exp(z)) + where(lt(x, y), tanh(x), y/3) + relu(z - 1)");
    uint64_t f1, f2, f3;
    assert_int_equal(sp_fingerprint(A, &a, 1, 42, &f1), 1);
    assert_int_equal(sp_fingerprint(C, &c, 1, 42, &f2), 1);
    assert_int_equal(f1, f2);
    assert_int_equal(sp_fingerprint(C, &c, 1, 43, &f3), 1);
    assert_int_not_equal(f2, f3);
    assert_int_not_equal(a, c);
    /* the documented symbol values */
    sp_expr_t x = parse(C, "x"), z = parse(C, "z");
    assert_int_equal(sp_fingerprint(C, &x, 1, 42, &f1), 1);
    assert_int_equal(f1, sp_fp_hash(42, 0) % SP_FP_PRIME);
    assert_int_equal(sp_fingerprint(C, &z, 1, 42, &f1), 1);
    assert_int_equal(f1, sp_fp_hash(42, 2) % SP_FP_PRIME);
    assert_int_equal(sp_fp_hash(42, 2), sp_fp_hash(42, 2));
    assert_int_not_equal(sp_fp_hash(42, 2), sp_fp_hash(43, 2));
    assert_true(n_is_prime(SP_FP_PRIME));
    assert_true(SP_FP_PRIME < (UWORD(1) << 62));
    sp_ectx_clear(A);
    sp_ectx_clear(C);
}

static void test_eval_fingerprint_division_by_zero(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    uint64_t out[2] = {5, 5};
    sp_expr_t r[2] = {parse(E, "x + 1"), parse(E, "1/(x - x)")};
    assert_int_equal(sp_fingerprint(E, r, 2, 1, out), 0);
    assert_int_equal(out[0], 0);
    r[1] = parse(E, "(y - y)^-2");
    assert_int_equal(sp_fingerprint(E, r, 2, 1, out), 0);
    r[1] = parse(E, "rsqrt(y - y)");
    assert_int_equal(sp_fingerprint(E, r, 2, 1, out), 0);
    /* a constant whose denominator is a multiple of p */
    fmpq_t c;
    fmpq_init(c);
    fmpz_set_ui(fmpq_numref(c), 1);
    fmpz_set_ui(fmpq_denref(c), SP_FP_PRIME);
    fmpz_mul_ui(fmpq_denref(c), fmpq_denref(c), 3);
    r[1] = sp_expr_add(E, parse(E, "x"), sp_expr_const_fmpq(E, c));
    assert_int_equal(sp_fingerprint(E, r, 2, 1, out), 0);
    fmpq_clear(c);
    r[1] = SP_EXPR_NONE;
    assert_int_equal(sp_fingerprint(E, r, 2, 1, out), 0);
    r[1] = parse(E, "x/2 + 1/(x + 1)");
    assert_int_equal(sp_fingerprint(E, r, 2, 1, out), 1);
    assert_int_not_equal(out[0], 0);
    sp_ectx_clear(E);
}

static void test_eval_fingerprint_piecewise_identities(void **state)
{
    (void)state;
    /* max/min are functions of the flattened argument set */
    assert_fp_equal("max(max(a, b), max(c, d))", "max(a, b, c, d)");
    assert_fp_equal("max(max(a, b), max(c, d))", "max(d, max(c, max(b, a)))");
    assert_fp_equal("max(a, a)", "a");
    assert_fp_equal("max(max(a, b), max(a, b))", "max(b, a)");
    assert_fp_equal("relu(x)", "max(x, 0)");
    assert_fp_equal("relu(max(x, y))", "max(0, y, x)");
    assert_fp_equal("abs(x)", "max(x, neg(x))");
    assert_fp_equal("clamp(x, l, h)", "min(max(x, l), h)");
    assert_fp_equal("min(clamp(x, l, h), y)", "min(y, h, max(l, x))");
    assert_fp_equal("relu(x - x)", "0");
    assert_fp_equal("max(2, 3, 1)", "3");
    assert_fp_equal("max(x, 2 + 1)", "max(3, x)");
    assert_fp_differ("max(a, b)", "max(a, c)");
    assert_fp_differ("max(a, b)", "a");
    assert_fp_differ("max(a, b)", "min(a, b)");
    assert_fp_differ("relu(x)", "relu(y)");
    assert_fp_differ("relu(x)", "x");
    assert_fp_differ("max(a, b, c)", "max(a, b)");
    /* comparisons depend on the difference, with the real complement laws */
    assert_fp_equal("gt(x, y)", "lt(y, x)");
    assert_fp_equal("ge(x, y)", "1 - lt(x, y)");
    assert_fp_equal("le(x, y)", "ge(y, x)");
    assert_fp_equal("ne(x, y)", "1 - eq(y, x)");
    assert_fp_equal("lt(x + 1, y + 1)", "lt(x - y, 0)");
    assert_fp_equal("lt(x, x) + le(x, x) + eq(x, x)", "2");
    assert_fp_equal("lt(2, 3)", "1");
    assert_fp_differ("lt(x, y)", "lt(y, x)");
    assert_fp_differ("lt(x, y)", "le(x, y)");
    assert_fp_differ("eq(x, y)", "lt(x, y)");
    /* where blends like a mask */
    assert_fp_equal("where(lt(x, y), a, b)", "where(ge(x, y), b, a)");
    assert_fp_equal("where(lt(x, y), a, b)", "lt(x, y)*a + (1 - lt(x, y))*b");
    assert_fp_equal("where(lt(x, y), a, a)", "a");
    assert_fp_equal("where(5, a, b)", "a");
    assert_fp_equal("where(0, a, b)", "b");
    assert_fp_differ("where(lt(x, y), a, b)", "where(lt(x, y), b, a)");
    assert_fp_differ("where(lt(x, y), a, b)", "where(lt(x, z), a, b)");
}

static void test_eval_fingerprint_transcendental_identities(void **state)
{
    (void)state;
    assert_fp_equal("tanh(neg(x))", "neg(tanh(x))");
    assert_fp_equal("erf(neg(x))", "neg(erf(x))");
    assert_fp_equal("sigmoid(neg(x))", "1 - sigmoid(x)");
    assert_fp_equal("tanh(x)", "2*sigmoid(2*x) - 1");
    assert_fp_equal("silu(x)", "x*sigmoid(x)");
    assert_fp_equal("gelu(neg(x))", "neg(x) + gelu(x)"); /* x Phi(x): Phi(-x) = 1 - Phi(x) */
    assert_fp_equal("rsqrt(x)", "1/sqrt(x)");
    assert_fp_equal("exp(x - x) + log(y/y) + sqrt(z - z)", "1");
    assert_fp_equal("sqrt(4096/64)", "8");
    assert_fp_equal("rsqrt(2*2)", "1/2");
    assert_fp_equal("exp(x + y)", "exp(y + x)");
    assert_fp_differ("exp(x)", "exp(y)");
    assert_fp_differ("exp(x)", "log(x)");
    assert_fp_differ("exp(x)*exp(y)", "exp(x + y)"); /* opaque: a hint, not a proof */
    assert_fp_differ("tanh(x)", "erf(x)");
    assert_fp_differ("sigmoid(x)", "gelu(x)/x");
    assert_fp_differ("exp(1)", "exp(2)");
}

/* ---- deep chains ---------------------------------------------------------------------------- */

static void test_eval_deep_chain(void **state)
{
    (void)state;
    const slong depth = 1000000;
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t x = sp_expr_sym(E, "x");
    sp_expr_t one = sp_expr_const_si(E, 1, 1), two = sp_expr_const_si(E, 2, 1);
    sp_expr_t e = x;
    for (slong k = 0; k < depth; k++)
        e = sp_expr_add(E, e, (k & 1) ? two : one); /* x + 1 + 2 + 1 + 2 ... */
    assert_int_not_equal(e, SP_EXPR_NONE);
    assert_true(sp_expr_count(E) > (uint32_t)depth);
    fmpq *pt = point_new(E, "x=1/3");

    fmpq_t q, want;
    fmpq_init(q);
    fmpq_init(want);
    fmpq_set_si(want, 3 * (depth / 2) * 3 + 1, 3); /* 1/3 + 3 * depth / 2 */
    assert_int_equal(sp_eval_exact(E, &e, 1, pt, q), SP_EVAL_OK);
    assert_true(fmpq_equal(q, want));

    arb_t b;
    arb_init(b);
    assert_int_equal(sp_eval_ball(E, &e, 1, pt, 64, b), SP_EVAL_OK);
    assert_true(arb_contains_fmpq(b, want));

    uint64_t fp;
    nmod_t mod;
    nmod_init(&mod, SP_FP_PRIME);
    assert_int_equal(sp_fingerprint(E, &e, 1, 9, &fp), 1);
    ulong fx = sp_fp_hash(9, 0) % SP_FP_PRIME;
    assert_int_equal(fp, nmod_add(fx, 3 * (depth / 2), mod));

    /* and a chain that ends in something opaque still certifies */
    sp_expr_t top = sp_expr_unary(E, SP_OP_EXP, e);
    sp_expr_t sum = sp_expr_const_si(E, 3 * (depth / 2), 1);
    sp_expr_t other = sp_expr_unary(E, SP_OP_EXP, sp_expr_add(E, x, sum));
    fmpq *pt2 = point_new(E, "x=-1500000");
    assert_int_equal(sp_eval_certify_differ(E, top, other, pt2, NULL, NULL, NULL), 0);
    sp_expr_t sum1 = sp_expr_const_si(E, 3 * (depth / 2) + 1, 1);
    sp_expr_t other2 = sp_expr_unary(E, SP_OP_EXP, sp_expr_add(E, x, sum1));
    assert_int_equal(sp_eval_certify_differ(E, top, other2, pt2, NULL, NULL, NULL), 1);

    /* a deep chain of max (a running maximum) has the fingerprint of the flat max */
    const slong mdepth = 100000;
    sp_expr_t *leaves = malloc((size_t)(mdepth + 1) * sizeof(sp_expr_t));
    assert_non_null(leaves);
    sp_expr_t m = x;
    leaves[mdepth] = x;
    for (slong k = 0; k < mdepth; k++) {
        leaves[k] = sp_expr_const_si(E, k, 1);
        m = sp_expr_max2(E, m, leaves[k]);
    }
    sp_expr_t flat = sp_expr_nary(E, SP_OP_MAX, leaves, (uint32_t)mdepth + 1);
    free(leaves);
    sp_expr_t r[2] = {m, flat};
    uint64_t fr[2];
    assert_int_equal(sp_fingerprint(E, r, 2, 3, fr), 1);
    assert_int_equal(fr[0], fr[1]);
    fmpq *mq = _fmpq_vec_init(2);
    assert_int_equal(sp_eval_exact(E, r, 2, pt, mq), SP_EVAL_OK);
    assert_true(fmpz_equal_si(fmpq_numref(mq + 0), mdepth - 1));
    assert_true(fmpq_equal(mq + 0, mq + 1));
    _fmpq_vec_clear(mq, 2);

    point_free(E, pt2);
    arb_clear(b);
    fmpq_clear(q);
    fmpq_clear(want);
    point_free(E, pt);
    sp_ectx_clear(E);
}

/* ---- seeded property tests ------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static slong rng_int(uint64_t *s, slong lo, slong hi) /* inclusive */
{
    return lo + (slong)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

static uint64_t test_seed(void)
{
    const char *s = getenv("SP_TEST_SEED");
    return s ? strtoull(s, NULL, 0) : UINT64_C(20240601);
}

static slong test_iters(slong base)
{
    const char *s = getenv("SP_TEST_MULT");
    slong m = s ? atol(s) : 1;
    return base * (m > 0 ? m : 1);
}

#define NSYM 3
#define MAXSTEPS 14

/* A straight-line program: step k computes a value from earlier items (symbols and steps). */
typedef enum {
    P_ADD, P_SUB, P_MUL, P_NEG, P_POW, P_DIVC, P_CONST,      /* polynomial */
    P_DIV, P_MAX, P_MIN, P_RELU, P_ABS, P_CLAMP, P_CMP, P_WHERE, /* partial / piecewise */
    P__COUNT
} pop_t;

typedef struct {
    pop_t op;
    int a, b, c;   /* item indices: 0..NSYM-1 symbols, NSYM + k step k */
    slong k;       /* power, comparison */
    slong num, den;
} pstep_t;

typedef struct {
    int n;
    pstep_t s[MAXSTEPS];
} prog_t;

static void prog_random(prog_t *P, uint64_t *rng, int piecewise)
{
    P->n = (int)rng_int(rng, 1, MAXSTEPS);
    for (int k = 0; k < P->n; k++) {
        pstep_t *t = &P->s[k];
        int items = NSYM + k;
        t->op = (pop_t)rng_int(rng, 0, piecewise ? P__COUNT - 1 : P_CONST);
        /* prefer recent steps so programs get deep */
        t->a = (int)(rng_int(rng, 0, 1) ? items - 1 : rng_int(rng, 0, items - 1));
        t->b = (int)rng_int(rng, 0, items - 1);
        t->c = (int)rng_int(rng, 0, items - 1);
        t->k = t->op == P_POW ? rng_int(rng, piecewise ? -2 : 0, 3) : rng_int(rng, 0, 5);
        t->num = rng_int(rng, -9, 9);
        t->den = rng_int(rng, 1, 4);
        if (t->op == P_DIVC && t->num == 0)
            t->num = 1;
    }
}

/* The program as an expression, straight from its steps. */
static sp_expr_t prog_expr(sp_ectx_t E, const prog_t *P, sp_expr_t *item)
{
    static const char *names[NSYM] = {"x", "y", "z"};
    for (int i = 0; i < NSYM; i++)
        item[i] = sp_expr_sym(E, names[i]);
    for (int k = 0; k < P->n; k++) {
        const pstep_t *t = &P->s[k];
        sp_expr_t a = item[t->a], b = item[t->b], c = item[t->c], r;
        switch (t->op) {
        case P_ADD: r = sp_expr_add(E, a, b); break;
        case P_SUB: r = sp_expr_sub(E, a, b); break;
        case P_MUL: r = sp_expr_mul(E, a, b); break;
        case P_NEG: r = sp_expr_unary(E, SP_OP_NEG, a); break;
        case P_POW: r = sp_expr_pow(E, a, t->k); break;
        case P_DIVC: r = sp_expr_div(E, a, sp_expr_const_si(E, t->num, (ulong)t->den)); break;
        case P_CONST: r = sp_expr_const_si(E, t->num, (ulong)t->den); break;
        case P_DIV: r = sp_expr_div(E, a, b); break;
        case P_MAX: r = sp_expr_max2(E, a, b); break;
        case P_MIN: r = sp_expr_min2(E, a, b); break;
        case P_RELU: r = sp_expr_unary(E, SP_OP_RELU, a); break;
        case P_ABS: r = sp_expr_unary(E, SP_OP_ABS, a); break;
        case P_CLAMP: r = sp_expr_clamp(E, a, b, c); break;
        case P_CMP: r = sp_expr_cmp(E, (sp_cmp_t)t->k, a, b); break;
        default: r = sp_expr_where(E, a, b, c); break;
        }
        item[NSYM + k] = r;
    }
    return item[NSYM + P->n - 1];
}

/*
 * An equivalent expression built by rewriting each polynomial step: subtraction and negation
 * become additions of (-1)*, products distribute over sums, powers become repeated products,
 * division by a constant becomes multiplication by its inverse, argument orders are reversed.
 */
static sp_expr_t prog_rewrite(sp_ectx_t E, const prog_t *P, sp_expr_t *item)
{
    static const char *names[NSYM] = {"x", "y", "z"};
    sp_expr_t minus1 = sp_expr_const_si(E, -1, 1);
    for (int i = 0; i < NSYM; i++)
        item[i] = sp_expr_sym(E, names[i]);
    for (int k = 0; k < P->n; k++) {
        const pstep_t *t = &P->s[k];
        sp_expr_t a = item[t->a], b = item[t->b], r;
        switch (t->op) {
        case P_ADD: r = sp_expr_add(E, b, a); break;
        case P_SUB: r = sp_expr_add(E, a, sp_expr_mul(E, minus1, b)); break;
        case P_NEG: r = sp_expr_mul(E, a, minus1); break;
        case P_MUL: {
            /* distribute over the sum with more terms (one level) */
            sp_expr_t s = b, o = a;
            if (sp_expr_op(E, a) == SP_OP_ADD &&
                (sp_expr_op(E, b) != SP_OP_ADD || sp_expr_nargs(E, a) > sp_expr_nargs(E, b))) {
                s = a;
                o = b;
            }
            if (sp_expr_op(E, s) != SP_OP_ADD) {
                r = sp_expr_mul(E, b, a);
                break;
            }
            uint32_t n = sp_expr_nargs(E, s);
            sp_expr_t *terms = malloc(n * sizeof(sp_expr_t));
            assert_non_null(terms);
            for (uint32_t j = 0; j < n; j++)
                terms[j] = sp_expr_mul(E, sp_expr_arg(E, s, j), o);
            r = sp_expr_nary(E, SP_OP_ADD, terms, n);
            free(terms);
            break;
        }
        case P_POW: {
            sp_expr_t f[3] = {a, a, a};
            r = t->k == 0 ? sp_expr_const_si(E, 1, 1)
                          : sp_expr_nary(E, SP_OP_MUL, f, (uint32_t)t->k);
            break;
        }
        case P_DIVC:
            r = sp_expr_mul(E, sp_expr_const_si(E, t->num < 0 ? -t->den : t->den,
                                               (ulong)(t->num < 0 ? -t->num : t->num)), a);
            break;
        case P_CONST: r = sp_expr_const_si(E, t->num, (ulong)t->den); break;
        default: fail_msg("prog_rewrite: polynomial programs only"); return SP_EXPR_NONE;
        }
        item[NSYM + k] = r;
    }
    return item[NSYM + P->n - 1];
}

/* Reference semantics, step by step over Q; returns 0 if the program is undefined there. */
static int prog_eval_q(const prog_t *P, const fmpq *x, fmpq_t out)
{
    fmpq *v = _fmpq_vec_init(NSYM + MAXSTEPS);
    int *def = calloc(NSYM + MAXSTEPS, sizeof(int));
    assert_non_null(def);
    for (int i = 0; i < NSYM; i++) {
        fmpq_set(v + i, x + i);
        def[i] = 1;
    }
    for (int k = 0; k < P->n; k++) {
        const pstep_t *t = &P->s[k];
        fmpq *r = v + NSYM + k, *a = v + t->a, *b = v + t->b, *c = v + t->c;
        int binary = t->op == P_ADD || t->op == P_SUB || t->op == P_MUL || t->op == P_DIV ||
                     t->op == P_MAX || t->op == P_MIN || t->op == P_CLAMP || t->op == P_CMP;
        int d = def[t->a] && (!binary || def[t->b]) && (t->op != P_CLAMP || def[t->c]);
        switch (t->op) {
        case P_ADD: fmpq_add(r, a, b); break;
        case P_SUB: fmpq_sub(r, a, b); break;
        case P_MUL: fmpq_mul(r, a, b); break;
        case P_NEG: fmpq_neg(r, a); break;
        case P_POW:
            if (t->k < 0 && fmpq_is_zero(a))
                d = 0;
            else
                fmpq_pow_si(r, a, t->k);
            break;
        case P_DIVC: fmpq_set_si(r, t->num, (ulong)t->den); fmpq_div(r, a, r); break;
        case P_CONST: fmpq_set_si(r, t->num, (ulong)t->den); d = 1; break;
        case P_DIV:
            if (fmpq_is_zero(b))
                d = 0;
            else
                fmpq_div(r, a, b);
            break;
        case P_MAX: fmpq_set(r, fmpq_cmp(a, b) >= 0 ? a : b); break;
        case P_MIN: fmpq_set(r, fmpq_cmp(a, b) <= 0 ? a : b); break;
        case P_RELU: fmpq_set(r, a); if (fmpq_sgn(r) < 0) fmpq_zero(r); break;
        case P_ABS: fmpq_abs(r, a); break;
        case P_CLAMP:
            fmpq_set(r, fmpq_cmp(a, b) >= 0 ? a : b);
            if (fmpq_cmp(r, c) > 0)
                fmpq_set(r, c);
            break;
        case P_CMP: {
            int s = fmpq_cmp(a, b), h;
            switch (t->k) {
            case SP_CMP_LT: h = s < 0; break;
            case SP_CMP_LE: h = s <= 0; break;
            case SP_CMP_GT: h = s > 0; break;
            case SP_CMP_GE: h = s >= 0; break;
            case SP_CMP_EQ: h = s == 0; break;
            default: h = s != 0; break;
            }
            fmpq_set_si(r, h, 1);
            break;
        }
        default: { /* where: lazy in the branch not taken */
            if (!def[t->a]) {
                d = 0;
                break;
            }
            int sel = fmpq_is_zero(a) ? t->c : t->b;
            d = def[sel];
            fmpq_set(r, v + sel);
            break;
        }
        }
        def[NSYM + k] = d;
    }
    int ok = def[NSYM + P->n - 1];
    fmpq_set(out, v + NSYM + P->n - 1);
    _fmpq_vec_clear(v, NSYM + MAXSTEPS);
    free(def);
    return ok;
}

/* Reference semantics of a polynomial program modulo p at the fingerprint point of seed. */
static ulong prog_eval_mod(const prog_t *P, uint64_t seed)
{
    nmod_t mod;
    nmod_init(&mod, SP_FP_PRIME);
    ulong v[NSYM + MAXSTEPS];
    for (int i = 0; i < NSYM; i++)
        v[i] = sp_fp_hash(seed, (uint64_t)i) % SP_FP_PRIME;
    for (int k = 0; k < P->n; k++) {
        const pstep_t *t = &P->s[k];
        ulong a = v[t->a], b = v[t->b], r;
        switch (t->op) {
        case P_ADD: r = nmod_add(a, b, mod); break;
        case P_SUB: r = nmod_sub(a, b, mod); break;
        case P_MUL: r = nmod_mul(a, b, mod); break;
        case P_NEG: r = nmod_neg(a, mod); break;
        case P_POW: r = nmod_pow_ui(a, (ulong)t->k, mod); break;
        case P_DIVC:
            r = nmod_mul(nmod_set_si(t->num, mod), nmod_inv((ulong)t->den, mod), mod);
            r = nmod_mul(a, nmod_inv(r, mod), mod);
            break;
        default: r = nmod_mul(nmod_set_si(t->num, mod), nmod_inv((ulong)t->den, mod), mod); break;
        }
        v[NSYM + k] = r;
    }
    return v[NSYM + P->n - 1];
}

static void random_point(fmpq *x, uint64_t *rng, slong range)
{
    for (int i = 0; i < NSYM; i++)
        fmpq_set_si(x + i, rng_int(rng, -range, range), (ulong)rng_int(rng, 1, 3));
}

#define PROP_CHECK(cond, ...)                                                                    \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            print_error("seed %llu iteration %ld: ", (unsigned long long)seed, (long)it);        \
            print_error(__VA_ARGS__);                                                            \
            print_error("\n");                                                                   \
            fail_msg("property failed: %s (rerun with SP_TEST_SEED=%llu)", #cond,                \
                     (unsigned long long)seed);                                                  \
        }                                                                                        \
    } while (0)

static void test_eval_property_polynomial_rewrites(void **state)
{
    (void)state;
    uint64_t seed = test_seed(), rng = seed;
    slong iters = test_iters(300);
    fmpq *x = _fmpq_vec_init(NSYM);
    fmpq_t ref;
    fmpq_init(ref);
    fmpq *out = _fmpq_vec_init(2);
    for (slong it = 0; it < iters; it++) {
        prog_t P;
        prog_random(&P, &rng, 0);
        sp_ectx_t E;
        sp_ectx_init(E);
        sp_expr_t item[NSYM + MAXSTEPS];
        sp_expr_t r[2];
        r[0] = prog_expr(E, &P, item);
        r[1] = prog_rewrite(E, &P, item);
        char *text = sp_expr_print(E, r[0], 300), *text2 = sp_expr_print(E, r[1], 300);
        for (int pt = 0; pt < 3; pt++) {
            random_point(x, &rng, 5);
            PROP_CHECK(prog_eval_q(&P, x, ref), "polynomial program undefined: %s", text);
            sp_eval_status_t s = sp_eval_exact(E, r, 2, x, out);
            PROP_CHECK(s == SP_EVAL_OK, "status %d for %s", s, text);
            PROP_CHECK(fmpq_equal(out + 0, ref), "exact value differs from reference: %s", text);
            PROP_CHECK(fmpq_equal(out + 1, ref), "rewrite %s of %s differs", text2, text);
            PROP_CHECK(sp_eval_certify_differ(E, r[0], r[1], x, NULL, NULL, NULL) == 0,
                       "certified a difference between %s and %s", text, text2);
            /* a changed constant term is certified, exactly */
            sp_expr_t shifted = sp_expr_add(E, r[1], sp_expr_const_si(E, 1, 7));
            int exact = 0;
            PROP_CHECK(sp_eval_certify_differ(E, r[0], shifted, x, NULL, NULL, &exact) == 1 &&
                           exact == 1, "no certificate for %s + 1/7", text);
            /* balls contain the exact value */
            arb_ptr b = _arb_vec_init(2);
            PROP_CHECK(sp_eval_ball(E, r, 2, x, 64, b) == SP_EVAL_OK, "ball status %s", text);
            PROP_CHECK(arb_contains_fmpq(b + 0, ref) && arb_contains_fmpq(b + 1, ref),
                       "ball misses the value of %s", text);
            _arb_vec_clear(b, 2);
        }
        for (uint64_t fs = seed; fs < seed + 2; fs++) {
            uint64_t fp[2];
            PROP_CHECK(sp_fingerprint(E, r, 2, fs, fp) == 1, "fingerprint failed: %s", text);
            PROP_CHECK(fp[0] == fp[1], "fingerprints of %s and %s differ", text, text2);
            PROP_CHECK(fp[0] == prog_eval_mod(&P, fs), "fingerprint of %s is not its value mod p",
                       text);
        }
        flint_free(text);
        flint_free(text2);
        sp_ectx_clear(E);
    }
    _fmpq_vec_clear(out, 2);
    fmpq_clear(ref);
    _fmpq_vec_clear(x, NSYM);
}

static void test_eval_property_piecewise_reference(void **state)
{
    (void)state;
    uint64_t seed = test_seed() + 1, rng = seed;
    slong iters = test_iters(500);
    fmpq *x = _fmpq_vec_init(NSYM);
    fmpq_t ref, got;
    fmpq_init(ref);
    fmpq_init(got);
    slong undefined = 0, defined = 0;
    for (slong it = 0; it < iters; it++) {
        prog_t P;
        prog_random(&P, &rng, 1);
        sp_ectx_t E;
        sp_ectx_init(E);
        sp_expr_t item[NSYM + MAXSTEPS];
        sp_expr_t e = prog_expr(E, &P, item);
        char *text = sp_expr_print(E, e, 300);
        for (int pt = 0; pt < 3; pt++) {
            random_point(x, &rng, 2); /* small values so divisions by zero and ties happen */
            if (pt == 0)
                fmpq_set(x + 1, x + 0);
            int def = prog_eval_q(&P, x, ref);
            sp_eval_status_t s = sp_eval_exact(E, &e, 1, x, got);
            if (def) {
                defined++;
                PROP_CHECK(s == SP_EVAL_OK || s == SP_EVAL_NOMEM, "status %d for %s", s, text);
                if (s == SP_EVAL_OK)
                    PROP_CHECK(fmpq_equal(got, ref), "value differs from reference: %s", text);
            } else {
                undefined++;
                PROP_CHECK(s == SP_EVAL_UNDEFINED, "expected undefined, got %d: %s", s, text);
            }
            arb_t b;
            arb_init(b);
            sp_eval_status_t sb = sp_eval_ball(E, &e, 1, x, 128, b);
            if (def && s == SP_EVAL_OK) {
                PROP_CHECK(sb == SP_EVAL_OK || sb == SP_EVAL_UNDECIDED, "ball %d: %s", sb, text);
                if (sb == SP_EVAL_OK)
                    PROP_CHECK(arb_contains_fmpq(b, ref), "ball misses the value of %s", text);
            } else if (!def) {
                PROP_CHECK(sb == SP_EVAL_UNDEFINED || sb == SP_EVAL_UNDECIDED,
                           "ball of undefined %s has status %d", text, sb);
            }
            arb_clear(b);
        }
        uint64_t f1, f2;
        int ok1 = sp_fingerprint(E, &e, 1, seed, &f1), ok2 = sp_fingerprint(E, &e, 1, seed, &f2);
        PROP_CHECK(ok1 == ok2 && f1 == f2, "fingerprint not deterministic: %s", text);
        flint_free(text);
        sp_ectx_clear(E);
    }
    /* the generator must exercise both outcomes */
    assert_true(undefined > 0);
    assert_true(defined > undefined);
    fmpq_clear(ref);
    fmpq_clear(got);
    _fmpq_vec_clear(x, NSYM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_exact_sample_values),
        cmocka_unit_test(test_eval_exact_comparisons),
        cmocka_unit_test(test_eval_exact_undefined),
        cmocka_unit_test(test_eval_exact_where_is_lazy),
        cmocka_unit_test(test_eval_exact_transcendental_points),
        cmocka_unit_test(test_eval_exact_several_roots),
        cmocka_unit_test(test_eval_exact_only_cone),
        cmocka_unit_test(test_eval_exact_output_aliases_point),
        cmocka_unit_test(test_eval_exact_huge_power_is_nomem),
        cmocka_unit_test(test_eval_ball_values),
        cmocka_unit_test(test_eval_ball_domain),
        cmocka_unit_test(test_eval_ball_comparisons),
        cmocka_unit_test(test_eval_certify_exact_rationals),
        cmocka_unit_test(test_eval_certify_exp_product_does_not_differ),
        cmocka_unit_test(test_eval_certify_identities_not_differ),
        cmocka_unit_test(test_eval_certify_undefined_gives_zero),
        cmocka_unit_test(test_eval_fingerprint_homomorphism),
        cmocka_unit_test(test_eval_fingerprint_deterministic),
        cmocka_unit_test(test_eval_fingerprint_division_by_zero),
        cmocka_unit_test(test_eval_fingerprint_piecewise_identities),
        cmocka_unit_test(test_eval_fingerprint_transcendental_identities),
        cmocka_unit_test(test_eval_deep_chain),
        cmocka_unit_test(test_eval_property_polynomial_rewrites),
        cmocka_unit_test(test_eval_property_piecewise_reference),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    flint_cleanup_master(); /* release FLINT's and Arb's caches so leak checkers see none */
    return failed;
}
