/* test_smt2.c: SMT-LIB2 export: script text, and the answers of z3 / cvc5 when they are installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "expr.h"
#include "smt2.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static sp_expr_t parse(sp_ectx_t E, const char *text)
{
    char err[200];
    sp_expr_t e = sp_expr_parse(E, text, err, sizeof(err));
    if (e == SP_EXPR_NONE)
        fail_msg("cannot parse '%s': %s", text, err);
    return e;
}

/* The script for the element pairs as[i] == bs[i], parsed in a fresh context. */
static char *script_of(const char *const *as, const char *const *bs, slong n)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t a[16], b[16];
    assert_true(n <= 16);
    for (slong i = 0; i < n; i++) {
        a[i] = parse(E, as[i]);
        b[i] = parse(E, bs[i]);
    }
    char *s = sp_smt2_query(E, a, b, n);
    assert_non_null(s);
    sp_ectx_clear(E);
    return s;
}

static char *script1(const char *a, const char *b)
{
    return script_of(&a, &b, 1);
}

static size_t count(const char *s, const char *sub)
{
    /* not strstr: ASan's strstr measures the whole haystack on every call */
    size_t c = 0, l = strlen(sub);
    for (const char *p = s; *p; p++)
        if (*p == sub[0] && strncmp(p, sub, l) == 0) {
            c++;
            p += l - 1;
        }
    return c;
}

#define assert_has(s, sub)                                                                         \
    do {                                                                                           \
        if (strstr((s), (sub)) == NULL)                                                            \
            fail_msg("script lacks '%s':\n%s", (sub), (s));                                        \
    } while (0)
#define assert_lacks(s, sub)                                                                       \
    do {                                                                                           \
        if (strstr((s), (sub)) != NULL)                                                            \
            fail_msg("script has '%s':\n%s", (sub), (s));                                          \
    } while (0)

/* Parentheses balance outside comments and |quoted| symbols; every line is a whole command. */
static void assert_well_formed(const char *s)
{
    long depth = 0;
    int quoted = 0, comment = 0;
    for (const char *p = s; *p; p++) {
        if (comment) {
            comment = *p != '\n';
            continue;
        }
        if (quoted) {
            quoted = *p != '|';
            continue;
        }
        if (*p == ';')
            comment = 1;
        else if (*p == '|')
            quoted = 1;
        else if (*p == '(')
            depth++;
        else if (*p == ')' && --depth < 0)
            fail_msg("unbalanced ')' at offset %td", p - s);
    }
    assert_int_equal(quoted, 0);
    assert_int_equal(depth, 0);
    assert_has(s, "(check-sat)\n");
}

/* ---- running solvers ---------------------------------------------------------------------- */

static int have_tool(const char *tool)
{
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

/* First line the command prints for the script ("sat", "unsat", "unknown", an error...). */
static void run_tool(const char *cmd_prefix, const char *script, char *line, size_t len)
{
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/sp_smt2_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t sl = strlen(script);
    assert_int_equal(write(fd, script, sl), (ssize_t)sl);
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s '%s' 2>&1", cmd_prefix, path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    line[0] = 0;
    if (fgets(line, (int)len, f) == NULL)
        line[0] = 0;
    char rest[256];
    while (fgets(rest, sizeof(rest), f) != NULL)
        ;
    pclose(f);
    unlink(path);
    line[strcspn(line, "\r\n")] = 0;
}

/*
 * Run z3 and cvc5 (those installed) on the script.  z3 must answer `want`.  cvc5 must answer
 * `want` or give up (it times out on some small nonlinear divisions, e.g. x1/x0 vs x1*x0^-1), but
 * never answer the opposite or reject the script.  With neither installed the check is skipped.
 */
/* Takes script (freed here, also when the check is skipped: skip() does not return). */
static void expect_answer(char *script, const char *want)
{
    int ran = 0;
    char line[256];
    if (have_tool("z3")) {
        run_tool("z3 -T:30", script, line, sizeof(line));
        if (strcmp(line, want) != 0)
            fail_msg("z3 answered '%s', expected '%s' on:\n%s", line, want, script);
        ran++;
    } else {
        print_message("z3 not installed: z3 check skipped\n");
    }
    if (have_tool("cvc5")) {
        run_tool("cvc5 --lang smt2 --tlimit=2000", script, line, sizeof(line));
        if (strcmp(line, want) == 0)
            ran++;
        else if (strcmp(line, "unknown") == 0 || strstr(line, "timeout") != NULL)
            print_message("cvc5 gave up ('%s'), expected '%s'\n", line, want);
        else
            fail_msg("cvc5 answered '%s', expected '%s' on:\n%s", line, want, script);
    }
    flint_free(script);
    if (ran == 0) {
        print_message("no installed solver answered: solver check skipped\n");
        skip();
    }
}

static void expect1(const char *a, const char *b, const char *want)
{
    char *s = script1(a, b);
    assert_well_formed(s);
    expect_answer(s, want);
}

/* ---- script text -------------------------------------------------------------------------- */

static void test_smt2_declares_each_symbol_once(void **state)
{
    char *s = script1("x*(y+z)", "x*y + x*z");
    assert_well_formed(s);
    assert_has(s, "(set-logic QF_NRA)\n");
    assert_int_equal(count(s, "(declare-const |x| Real)"), 1);
    assert_int_equal(count(s, "(declare-const |y| Real)"), 1);
    assert_int_equal(count(s, "(declare-const |z| Real)"), 1);
    assert_int_equal(count(s, "declare-const"), 3);
    assert_int_equal(count(s, "(distinct "), 1);
    assert_lacks(s, "declare-fun");
    assert_lacks(s, "sp_d"); /* nothing partial, no guard */
    flint_free(s);
}

static void test_smt2_quotes_names_injectively(void **state)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    const char *names[] = {"a|b", "a_b", "sp_exp", "", "x y", "true", "x[0,1]", "#0:a_b", "a\\b"};
    size_t nn = sizeof(names) / sizeof(names[0]);
    sp_expr_t v[16];
    for (size_t k = 0; k < nn; k++)
        v[k] = sp_expr_sym(E, names[k]);
    sp_expr_t sum = sp_expr_nary(E, SP_OP_ADD, v, (uint32_t)nn);
    sp_expr_t zero = sp_expr_const_si(E, 0, 1);
    char *s = sp_smt2_query(E, &sum, &zero, 1);
    assert_non_null(s);
    assert_well_formed(s);
    assert_has(s, "(declare-const |#0:a_b| Real)");
    assert_has(s, "(declare-const |a_b| Real)");
    assert_has(s, "(declare-const |#2:sp_exp| Real)");
    assert_has(s, "(declare-const |#3:| Real)");
    assert_has(s, "(declare-const |#4:x_y| Real)");
    assert_has(s, "(declare-const |#5:true| Real)");
    assert_has(s, "(declare-const |x[0,1]| Real)");
    assert_has(s, "(declare-const |#7:_0:a_b| Real)");
    assert_has(s, "(declare-const |#8:a_b| Real)");
    assert_int_equal(count(s, "declare-const"), nn);
    /* distinct declarations */
    for (const char *p = strstr(s, "(declare-const "); p; p = strstr(p + 1, "(declare-const ")) {
        const char *q = strstr(p, " Real)");
        char decl[64];
        size_t l = (size_t)(q - p) + 6;
        assert_true(l < sizeof(decl));
        memcpy(decl, p, l);
        decl[l] = 0;
        assert_int_equal(count(s, decl), 1);
    }
    flint_free(s);
    sp_ectx_clear(E);
}

static void test_smt2_transcendentals_are_uninterpreted(void **state)
{
    char *s = script1("exp(x)*exp(y) + sigmoid(x)", "exp(x + y) + 1/(1 + exp(-x))");
    assert_well_formed(s);
    assert_has(s, "(set-logic QF_UFNRA)\n");
    assert_int_equal(count(s, "(declare-fun sp_exp (Real) Real)"), 1);
    assert_int_equal(count(s, "(declare-fun sp_sigmoid (Real) Real)"), 1);
    assert_int_equal(count(s, "declare-fun"), 2);
    assert_has(s, "; sat: the pairs differ for SOME interpretation");
    flint_free(s);
    s = script1("gelu(x) + erf(x) + tanh(x) + silu(x)", "log(x) + sqrt(x) + rsqrt(x)");
    assert_well_formed(s);
    const char *fns[] = {"gelu", "erf", "tanh", "silu", "log", "sqrt", "rsqrt"};
    for (size_t k = 0; k < 7; k++) {
        char decl[64];
        snprintf(decl, sizeof(decl), "(declare-fun sp_%s (Real) Real)", fns[k]);
        assert_int_equal(count(s, decl), 1);
    }
    flint_free(s);
}

static void test_smt2_piecewise_is_ite(void **state)
{
    char *s = script1("max(a, b, c) + min(a, b) + relu(x) + abs(x)",
                      "clamp(x, a, b) + where(lt(a, b), x, y) + ge(x, y)");
    assert_well_formed(s);
    assert_lacks(s, "(max");
    assert_lacks(s, "(min");
    assert_lacks(s, "(relu");
    assert_lacks(s, "(abs");
    assert_lacks(s, "(clamp");
    assert_lacks(s, "(where");
    assert_has(s, "(ite (> |x| 0.0) |x| 0.0)");
    assert_has(s, "(ite (>= |x| 0.0) |x| (- |x|))");
    assert_has(s, "(ite (>= |x| |y|) 1.0 0.0)");
    assert_has(s, "(ite (< |a| |b|) 1.0 0.0)");
    assert_lacks(s, "declare-fun");
    flint_free(s);
}

static void test_smt2_constants_are_exact(void **state)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t v[4];
    fmpq_t big;
    fmpq_init(big);
    fmpz_set_str(fmpq_numref(big), "1000000000000000000000000000000", 10);
    v[0] = sp_expr_const_si(E, 3, 4);
    v[1] = sp_expr_const_si(E, -5, 1);
    v[2] = sp_expr_const_fmpq(E, big);
    v[3] = sp_expr_const_si(E, -1, 3);
    sp_expr_t x = sp_expr_sym(E, "x");
    for (int k = 0; k < 4; k++)
        v[k] = sp_expr_mul(E, v[k], x);
    sp_expr_t sum = sp_expr_nary(E, SP_OP_ADD, v, 4);
    char *s = sp_smt2_query(E, &sum, &x, 1);
    assert_non_null(s);
    assert_well_formed(s);
    assert_has(s, "(/ 3.0 4.0)");
    assert_has(s, "(- 5.0)");
    assert_has(s, " 1000000000000000000000000000000.0");
    assert_has(s, "(- (/ 1.0 3.0))");
    flint_free(s);
    fmpq_clear(big);
    sp_ectx_clear(E);
}

static void test_smt2_pow_is_multiplication(void **state)
{
    char *s = script1("x^3", "y^-2");
    assert_well_formed(s);
    assert_has(s, "(* |x| |x| |x|)");
    assert_has(s, "(/ 1.0 (* |y| |y|))");
    assert_has(s, "(not (= |y| 0.0))");
    assert_lacks(s, "(not (= |x| 0.0))");
    flint_free(s);
    /* x^100 = x^64 x^32 x^4 through x^(2^j) define-funs */
    s = script1("x^100", "x");
    assert_well_formed(s);
    assert_has(s, "_s6 () Real (* ");
    assert_lacks(s, "_s7");
    assert_lacks(s, "(* |x| |x| |x|");
    flint_free(s);
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t x = sp_expr_sym(E, "x"), p0 = sp_expr_pow(E, x, 0), one = sp_expr_const_si(E, 1, 1);
    s = sp_smt2_query(E, &p0, &one, 1);
    assert_well_formed(s);
    assert_has(s, "Real 1.0)");
    flint_free(s);
    sp_ectx_clear(E);
}

static void test_smt2_guards_partial_operators(void **state)
{
    char *s = script1("x*y/y", "x");
    assert_well_formed(s);
    assert_has(s, "(define-fun sp_d");
    assert_has(s, "(not (= |y| 0.0))");
    assert_has(s, "(and sp_d");
    flint_free(s);
    s = script1("log(x) + sqrt(y) + rsqrt(z)", "x");
    assert_has(s, "(> |x| 0.0)");
    assert_has(s, "(>= |y| 0.0)");
    assert_has(s, "(> |z| 0.0)");
    flint_free(s);
    /* a nonzero constant denominator needs no guard; a zero one is never defined */
    s = script1("x/2", "x");
    assert_lacks(s, "sp_d");
    flint_free(s);
    s = script1("x/0", "x");
    assert_has(s, "(assert (and false (distinct");
    flint_free(s);
}

static void test_smt2_trivial_queries(void **state)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    char *s = sp_smt2_query(E, NULL, NULL, 0);
    assert_non_null(s);
    assert_has(s, "(assert false)");
    assert_well_formed(s);
    flint_free(s);
    sp_expr_t x = sp_expr_sym(E, "x"), none = SP_EXPR_NONE;
    s = sp_smt2_query(E, &x, &x, 1);
    assert_has(s, "(assert false)");
    flint_free(s);
    assert_null(sp_smt2_query(E, &x, &none, 1));
    sp_expr_t big = (sp_expr_t)1000;
    assert_null(sp_smt2_query(E, &big, &x, 1));
    assert_null(sp_smt2_query(E, &x, &x, -1));
    sp_ectx_clear(E);
}

static void test_smt2_shares_subterms(void **state)
{
    /* s = (x+y)*(x-y) appears in both sides and in three places: one define-fun */
    char *s = script1("((x+y)*(x-y))^2 + exp((x+y)*(x-y))", "((x+y)*(x-y))*((x+y)*(x-y)) + 1");
    assert_well_formed(s);
    assert_int_equal(count(s, "(* (+ |x| |y|) (- |x| |y|))"), 1);
    flint_free(s);
}

static void test_smt2_deep_chain_is_iterative(void **state)
{
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t x = sp_expr_sym(E, "x"), e = x, one = sp_expr_const_si(E, 1, 1);
    for (int k = 0; k < 200000; k++)
        e = (k & 1) ? sp_expr_mul(E, e, x) : sp_expr_add(E, e, one);
    assert_int_not_equal(e, SP_EXPR_NONE);
    char *s = sp_smt2_query(E, &e, &x, 1);
    assert_non_null(s);
    assert_well_formed(s);
    assert_true(count(s, "define-fun") >= 40000);
    /* the same query prints the same */
    char *s2 = sp_smt2_query(E, &e, &x, 1);
    assert_string_equal(s, s2);
    flint_free(s);
    flint_free(s2);
    sp_ectx_clear(E);
}

static void test_smt2_vector_query(void **state)
{
    const char *as[] = {"x0 + x1", "x0 + x1", "x0"};
    const char *bs[] = {"x0 + x1", "2*x0", "x0"};
    char *s = script_of(as, bs, 3);
    assert_well_formed(s);
    /* identical elements are left out: one live element, no (or ...) */
    assert_int_equal(count(s, "(distinct "), 1);
    assert_lacks(s, "(or");
    flint_free(s);
    const char *cs[] = {"x0*x1", "x0/x1"};
    const char *ds[] = {"x1*x0 + 1", "x1"};
    s = script_of(cs, ds, 2);
    assert_well_formed(s);
    assert_has(s, "(assert (or\n  (distinct ");
    assert_int_equal(count(s, "(distinct "), 2);
    flint_free(s);
}

/* ---- answers of real solvers -------------------------------------------------------------- */

static void test_smt2_solver_distributivity_unsat(void **state)
{
    expect1("x*(y+z)", "x*y + x*z", "unsat");
}

static void test_smt2_solver_relu_not_additive_sat(void **state)
{
    expect1("relu(x+y)", "relu(x) + relu(y)", "sat");
}

static void test_smt2_solver_guarded_division_unsat(void **state)
{
    /* unsat only because y = 0 is excluded: SMT's x*0/0 is an arbitrary value */
    expect1("x*y/y", "x", "unsat");
    expect1("x^10 * x^-3", "x^7", "unsat");
}

static void test_smt2_solver_piecewise_identities(void **state)
{
    expect1("max(a, b) + min(a, b)", "a + b", "unsat");
    expect1("max(max(a, b), max(c, d))", "max(a, b, c, d)", "unsat");
    expect1("relu(x) - relu(-x)", "x", "unsat");
    expect1("relu(x) + relu(-x)", "abs(x)", "unsat");
    expect1("clamp(x, 0, 1)", "min(max(x, 0), 1)", "unsat");
    expect1("where(gt(x, 0), x, 0)", "relu(x)", "unsat");
    expect1("clamp(x, 0, 1)", "max(min(x, 1), 0)", "unsat");
    expect1("clamp(x, a, b)", "max(min(x, b), a)", "sat"); /* differ when a > b */
}

static void test_smt2_solver_vector_sat(void **state)
{
    const char *as[] = {"x0 + x1", "x0 + x1"};
    const char *bs[] = {"x0 + x1", "2*x0"};
    char *s = script_of(as, bs, 2);
    expect_answer(s, "sat");
    const char *cs[] = {"x0*x1 + x2", "(x0 + x1)^2", "x1/x0"};
    const char *ds[] = {"x2 + x1*x0", "x0^2 + 2*x0*x1 + x1^2", "x1*x0^-1"};
    s = script_of(cs, ds, 3);
    expect_answer(s, "unsat");
}

static void test_smt2_solver_uf_is_weaker(void **state)
{
    /* true for the real exp, but not for an uninterpreted one: sat is not a counterexample */
    expect1("exp(x)*exp(y)", "exp(x + y)", "sat");
    /* congruence still proves what holds for every function */
    expect1("exp(x*(y+z)) + log(x)", "exp(x*y + x*z) + log(x)", "unsat");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smt2_declares_each_symbol_once),
        cmocka_unit_test(test_smt2_quotes_names_injectively),
        cmocka_unit_test(test_smt2_transcendentals_are_uninterpreted),
        cmocka_unit_test(test_smt2_piecewise_is_ite),
        cmocka_unit_test(test_smt2_constants_are_exact),
        cmocka_unit_test(test_smt2_pow_is_multiplication),
        cmocka_unit_test(test_smt2_guards_partial_operators),
        cmocka_unit_test(test_smt2_trivial_queries),
        cmocka_unit_test(test_smt2_shares_subterms),
        cmocka_unit_test(test_smt2_deep_chain_is_iterative),
        cmocka_unit_test(test_smt2_vector_query),
        cmocka_unit_test(test_smt2_solver_distributivity_unsat),
        cmocka_unit_test(test_smt2_solver_relu_not_additive_sat),
        cmocka_unit_test(test_smt2_solver_guarded_division_unsat),
        cmocka_unit_test(test_smt2_solver_piecewise_identities),
        cmocka_unit_test(test_smt2_solver_vector_sat),
        cmocka_unit_test(test_smt2_solver_uf_is_weaker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
