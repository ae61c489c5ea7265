/* test_solver.c: the engine's identities (EQUAL), their perturbations (DIFFERENT), properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "diff.h"
#include "engine_fixture.h"
#include "eval.h"
#include "nf.h"
#include "smt2.h"
#include "solver.h"

static sp_expr_t P(fx_t *f, const char *s) { return fx_parse(f, s); }

static sp_expr_t V(fx_t *f, const char *fmt, int i, int j)
{
    char name[64];
    snprintf(name, sizeof name, fmt, i, j);
    return sp_expr_sym(f->E, name);
}

/* Re-check a DIFFERENT answer's counterexample independently: exact or Arb evaluation. */
static void check_cex(fx_t *f, sp_expr_t a, sp_expr_t b, const sp_result_t *r)
{
    assert_int_equal(r->answer, SP_DIFFERENT);
    fmpq *vals = _fmpq_vec_init(f->E->nsyms);
    for (slong i = 0; i < r->cex.n; i++)
        fmpq_set(vals + f->E->nodes[r->cex.syms[i]].param, r->cex.vals + i);
    assert_true(sp_eval_certify_differ(f->E, a, b, vals, NULL, NULL, NULL));
    _fmpq_vec_clear(vals, f->E->nsyms);
    assert_non_null(r->cex.lhs_value);
    assert_non_null(r->cex.rhs_value);
}

static void expect_equal(fx_t *f, sp_expr_t a, sp_expr_t b)
{
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t ans = sp_equiv(f->S, a, b, &r);
    if (ans != SP_EQUAL) {
        char *x = sp_engine_print_nf(f->S, a, 400), *y = sp_engine_print_nf(f->S, b, 400);
        print_error("expected EQUAL, got %d (%s)\n  lhs nf: %s\n  rhs nf: %s\n", ans,
                    sp_why_name(r.why), x ? x : "-", y ? y : "-");
        flint_free(x);
        flint_free(y);
    }
    assert_int_equal(ans, SP_EQUAL);
    sp_result_clear(&r);
}

static void expect_different(fx_t *f, sp_expr_t a, sp_expr_t b)
{
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t ans = sp_equiv(f->S, a, b, &r);
    if (ans != SP_DIFFERENT)
        print_error("expected DIFFERENT, got %d (%s)\n", ans, sp_why_name(r.why));
    assert_int_equal(ans, SP_DIFFERENT);
    check_cex(f, a, b, &r);
    sp_result_clear(&r);
}

/* sp_expr_prefetch_mul is only a hint: the store is unchanged and nodes are found as before. */
static void test_solver_prefetch_changes_nothing(void **state)
{
    fx_t *f = *state;
    sp_ectx_t empty;
    sp_ectx_init(empty);
    sp_expr_prefetch_mul(empty, 1, 2); /* no table yet */
    assert_int_equal(empty->len, 0);
    sp_ectx_clear(empty);
    sp_expr_t x = sp_expr_sym(f->E, "pf_x"), y = sp_expr_sym(f->E, "pf_y");
    sp_expr_t m = sp_expr_mul(f->E, x, y), d = sp_expr_sub(f->E, y, x);
    uint32_t len = f->E->len;
    sp_expr_prefetch_mul(f->E, y, x);
    sp_expr_prefetch_mul(f->E, m, d); /* a node not in the store */
    assert_int_equal(f->E->len, len);
    assert_int_equal(sp_expr_mul(f->E, y, x), m);
    assert_int_equal(sp_expr_sub(f->E, y, x), d);
    assert_int_equal(f->E->len, len);
}

/* A store that stops at a memory bound says so: the limit's name is memory, not nodes. */
static void test_solver_memory_bound_named(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    E->max_rss = 1; /* any growth past the first arrays passes it */
    char name[32];
    for (int i = 0; i < 1 << 20 && !E->oom; i++) {
        snprintf(name, sizeof name, "mb_%d", i);
        sp_expr_sym(E, name);
    }
    assert_true(E->oom);
    assert_int_equal(E->vm_full, 2);
    assert_int_equal(sp_why_full(E), SP_WHY_LIMIT_MEMORY);
    assert_string_equal(sp_why_name(SP_WHY_LIMIT_MEMORY), "limit memory");
    sp_ectx_clear(E);
    sp_ectx_init(E);
    E->max_nodes = 8;
    for (int i = 0; i < 64 && !E->oom; i++) {
        snprintf(name, sizeof name, "mn_%d", i);
        sp_expr_sym(E, name);
    }
    assert_true(E->oom);
    assert_int_equal(sp_why_full(E), SP_WHY_LIMIT_NODES);
    sp_ectx_clear(E);
}

/* 1. row-parallel matmul: [x z] @ [y; w] = x@y + z@w, every element */
/* The power of the symbol that e is, for products and powers of one symbol; every exponent a
   node holds has the sign `positive` asks for. */
static slong exponent_of_x(const sp_ectx_struct *E, sp_expr_t e, int positive)
{
    const sp_node_t *nd = &E->nodes[e];
    if (nd->op == SP_OP_SYM)
        return 1;
    if (nd->op == SP_OP_POW) {
        assert_true(nd->param != 0 && (nd->param > 0) == positive);
        return (slong)nd->param * exponent_of_x(E, E->argv[nd->args], 1);
    }
    assert_int_equal(nd->op, SP_OP_MUL);
    slong sum = 0;
    for (uint32_t i = 0; i < nd->nargs; i++)
        sum += exponent_of_x(E, E->argv[nd->args + i], positive);
    return sum;
}

/* A node's exponent has 32 bits: a larger one is a product of powers with the same value, and
   a node is 16 bytes. */
static void test_solver_exponent_past_32_bits(void **state)
{
    (void)state;
    assert_int_equal(sizeof(sp_node_t), 16);
    sp_ectx_t E;
    sp_ectx_init(E);
    sp_expr_t x = sp_expr_sym(E, "x");
    const slong k = ((slong)1 << 40) + 1, m = -(((slong)1 << 33) + 5);
    sp_expr_t p = sp_expr_pow(E, x, k), q = sp_expr_pow(E, x, m);
    assert_int_equal(E->nodes[p].op, SP_OP_MUL);
    assert_int_equal(E->nodes[q].op, SP_OP_MUL);
    /* every node's exponent fits, has the sign of the whole, and the value is x^k */
    sp_expr_t roots[2] = {p, q};
    const slong want[2] = {k, m};
    for (int r = 0; r < 2; r++)
        assert_true(exponent_of_x(E, roots[r], want[r] > 0) == want[r]);
    /* the same value where it is cheap to compute: x = -1 (k odd, m odd) and x = 1 */
    fmpq vals[1];
    fmpq out[2];
    fmpq_init(vals);
    fmpq_init(out);
    fmpq_init(out + 1);
    for (int s = -1; s <= 1; s += 2) {
        fmpq_set_si(vals, s, 1);
        assert_int_equal(sp_eval_exact(E, roots, 2, vals, out), SP_EVAL_OK);
        assert_true(fmpz_equal_si(fmpq_numref(out), s) && fmpz_is_one(fmpq_denref(out)));
        assert_true(fmpz_equal_si(fmpq_numref(out + 1), s) && fmpz_is_one(fmpq_denref(out + 1)));
    }
    fmpq_clear(vals);
    fmpq_clear(out);
    fmpq_clear(out + 1);
    /* exponents that fit are one node, as before */
    assert_int_equal(E->nodes[sp_expr_pow(E, x, INT32_MAX)].op, SP_OP_POW);
    assert_int_equal(E->nodes[sp_expr_pow(E, x, -INT32_MAX)].op, SP_OP_POW);
    sp_ectx_clear(E);
}

/* A dot product in an execution store (dot_ok) is one SP_OP_DOT node whose value is the sum of
   its products: canonical under reordering the terms and the factors, written out by
   sp_expr_import, evaluated, differentiated and exported as that sum.  The engine proves the
   imported form equal to the sum built term by term. */
/* A trace's store (dot_sets) keeps each distinct pair of a dot once and counts them all in
   param: what a value reads, not its value (src/shard_exec.c) */
static void test_solver_dot_sets(void **state)
{
    (void)state;
    sp_ectx_t X;
    sp_ectx_init(X);
    X->dot_ok = X->dot_sets = 1;
    sp_expr_t a = sp_expr_sym(X, "a"), b = sp_expr_sym(X, "b"), c = sp_expr_sym(X, "c");
    sp_expr_t zero = sp_expr_const_si(X, 0, 1);
    /* a row and a column of one node each: one pair standing for all six */
    sp_expr_t ux[6] = {a, a, a, a, a, a}, uy[6] = {b, b, b, b, b, b};
    sp_expr_t u = sp_expr_dot(X, ux, uy, 6);
    assert_int_equal(sp_expr_op(X, u), SP_OP_DOT);
    assert_int_equal(sp_expr_nargs(X, u), 2);
    assert_int_equal(X->nodes[u].param, 6);
    /* repeated pairs in any order, a literal zero dropped: the distinct pairs, sorted */
    sp_expr_t px[5] = {b, a, zero, b, c}, py[5] = {c, b, a, c, a};
    sp_expr_t p = sp_expr_dot(X, px, py, 5);
    assert_int_equal(sp_expr_op(X, p), SP_OP_DOT);
    assert_int_equal(sp_expr_nargs(X, p), 6); /* (a,b) (a,c) (b,c) */
    assert_int_equal(X->nodes[p].param, 4);
    sp_expr_t qx[4] = {c, a, b, a}, qy[4] = {a, b, c, b};
    assert_int_equal(sp_expr_dot(X, qx, qy, 4), p);
    /* a different count of the same pairs is another node; without dot_sets every pair stays */
    sp_expr_t rx[3] = {a, a, a}, ry[3] = {b, b, b};
    assert_true(sp_expr_dot(X, rx, ry, 3) != u);
    X->dot_sets = 0;
    sp_expr_t w = sp_expr_dot(X, ux, uy, 6);
    assert_int_equal(sp_expr_nargs(X, w), 12);
    assert_int_equal(X->nodes[w].param, 0);
    sp_ectx_clear(X);
}

static void test_solver_dot_node(void **state)
{
    fx_t *f = *state;
    sp_ectx_t X;
    sp_ectx_init(X);
    X->dot_ok = 1;
    enum { N = 5 };
    sp_expr_t a[N], b[N], x[N], y[N], x2[N], y2[N];
    char nm[16];
    for (int i = 0; i < N; i++) {
        snprintf(nm, sizeof nm, "a%d", i);
        a[i] = sp_expr_sym(X, nm);
        snprintf(nm, sizeof nm, "b%d", i);
        b[i] = sp_expr_unary(X, SP_OP_EXP, sp_expr_sym(X, nm)); /* an atom as a factor */
    }
    for (int i = 0; i < N; i++) {
        x[i] = a[i];
        y[i] = b[i];
        /* the terms reversed, each one's factors swapped */
        x2[i] = b[N - 1 - i];
        y2[i] = a[N - 1 - i];
    }
    sp_expr_t d = sp_expr_dot(X, x, y, N), d2 = sp_expr_dot(X, x2, y2, N);
    assert_int_equal(sp_expr_op(X, d), SP_OP_DOT);
    assert_int_equal(sp_expr_nargs(X, d), 2 * N);
    assert_int_equal(d, d2);
    /* literal zeros drop their terms; one term left is its product, none is 0 */
    sp_expr_t zero = sp_expr_const_si(X, 0, 1);
    sp_expr_t px[3] = {a[0], zero, a[2]}, py[3] = {b[0], b[1], zero};
    sp_expr_t one = sp_expr_dot(X, px, py, 3);
    assert_int_equal(one, sp_expr_mul(X, a[0], b[0]));
    sp_expr_t qx[1] = {zero}, qy[1] = {b[0]};
    assert_int_equal(sp_expr_dot(X, qx, qy, 1), zero);
    /* exact and ball values: those of the sum written out in the same store (a_i * a_i exactly;
       a_i * exp(b_i) in balls) */
    sp_expr_t sa[N], sb[N], sq[N], st[N];
    for (int i = 0; i < N; i++) {
        sa[i] = sb[i] = a[i];
        sq[i] = sp_expr_mul(X, a[i], a[i]);
        st[i] = sp_expr_mul(X, a[i], b[i]);
    }
    sp_expr_t dsq = sp_expr_dot(X, sa, sb, N);
    assert_int_equal(sp_expr_op(X, dsq), SP_OP_DOT);
    sp_expr_t r2[2] = {dsq, sp_expr_nary(X, SP_OP_ADD, sq, N)};
    sp_expr_t rb[2] = {d, sp_expr_nary(X, SP_OP_ADD, st, N)};
    fmpq *vals = _fmpq_vec_init(X->nsyms);
    for (slong i = 0; i < X->nsyms; i++)
        fmpq_set_si(vals + i, (slong)(3 * i) - 7, (ulong)(i % 4 + 1));
    fmpq out[2];
    fmpq_init(out);
    fmpq_init(out + 1);
    assert_int_equal(sp_eval_exact(X, r2, 2, vals, out), SP_EVAL_OK);
    assert_true(fmpq_equal(out, out + 1));
    assert_false(fmpq_is_zero(out));
    arb_ptr bo = _arb_vec_init(2);
    assert_int_equal(sp_eval_ball(X, rb, 2, vals, 128, bo), SP_EVAL_OK);
    assert_true(arb_is_finite(bo) && arb_overlaps(bo, bo + 1));
    assert_true(arb_rel_accuracy_bits(bo) > 100);
    _arb_vec_clear(bo, 2);
    fmpq_clear(out);
    fmpq_clear(out + 1);
    _fmpq_vec_clear(vals, X->nsyms);
    /* the SMT-LIB export writes the sum of products */
    char *q = sp_smt2_query(X, &d, &d2, 1);
    assert_non_null(q);
    assert_non_null(strstr(q, "(+ (* "));
    flint_free(q);
    /* the derivative in a_2 is b_2 (after import, the engine decides) */
    sp_expr_t dd = sp_expr_diff(X, d, a[2]);
    assert_true(dd != SP_EXPR_NONE);
    /* imported into the engine's store: the sum of the products, equal to the sum built there */
    sp_expr_t roots[3] = {d, dd, b[2]}, im[3];
    assert_true(sp_expr_import(f->E, X, roots, 3, im));
    assert_true(sp_expr_op(f->E, im[0]) != SP_OP_DOT);
    assert_true(sp_ectx_is_valid(f->E));
    sp_expr_t fx[N], fy[N], terms[N];
    for (int i = 0; i < N; i++) {
        snprintf(nm, sizeof nm, "a%d", i);
        fx[i] = sp_expr_sym(f->E, nm);
        snprintf(nm, sizeof nm, "b%d", i);
        fy[i] = sp_expr_unary(f->E, SP_OP_EXP, sp_expr_sym(f->E, nm));
        terms[i] = sp_expr_mul(f->E, fx[i], fy[i]);
    }
    sp_expr_t sum = sp_expr_nary(f->E, SP_OP_ADD, terms, N);
    assert_int_equal(im[0], sum);
    expect_equal(f, im[1], im[2]);
    /* and one term different is found different */
    terms[3] = sp_expr_mul(f->E, fx[3], fx[3]);
    expect_different(f, im[0], sp_expr_nary(f->E, SP_OP_ADD, terms, N));
    sp_ectx_clear(X);
}

static void test_solver_row_parallel_matmul(void **state)
{
    fx_t *f = *state;
    enum { M = 3, K1 = 2, K2 = 3, N = 2 };
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            sp_expr_t lhs[K1 + K2], p1[K1], p2[K2];
            for (int k = 0; k < K1 + K2; k++) {
                sp_expr_t c = k < K1 ? V(f, "x[%d,%d]", i, k) : V(f, "z[%d,%d]", i, k - K1);
                sp_expr_t d = k < K1 ? V(f, "y[%d,%d]", k, j) : V(f, "w[%d,%d]", k - K1, j);
                lhs[k] = sp_expr_mul(f->E, c, d);
                if (k < K1)
                    p1[k] = lhs[k];
                else
                    p2[k - K1] = lhs[k];
            }
            sp_expr_t a = sp_expr_nary(f->E, SP_OP_ADD, lhs, K1 + K2);
            sp_expr_t b = sp_expr_add(f->E, sp_expr_nary(f->E, SP_OP_ADD, p1, K1),
                                      sp_expr_nary(f->E, SP_OP_ADD, p2, K2));
            expect_equal(f, a, b);
            /* perturbed: the second shard's partial product dropped */
            expect_different(f, a, sp_expr_nary(f->E, SP_OP_ADD, p1, K1));
        }
}

/* 2. softmax max-shift */
static void test_solver_softmax_max_shift(void **state)
{
    fx_t *f = *state;
    const char *m = "max(x0, x1, x2)";
    char lhs[512], rhs[256];
    snprintf(lhs, sizeof lhs, "exp(x1 - %s) / (exp(x0 - %s) + exp(x1 - %s) + exp(x2 - %s))", m, m,
             m, m);
    snprintf(rhs, sizeof rhs, "exp(x1) / (exp(x0) + exp(x1) + exp(x2))");
    expect_equal(f, P(f, lhs), P(f, rhs));
    /* perturbed: the shift missing in one term of the denominator */
    snprintf(lhs, sizeof lhs, "exp(x1 - %s) / (exp(x0) + exp(x1 - %s) + exp(x2 - %s))", m, m, m);
    expect_different(f, P(f, lhs), P(f, rhs));
}

/* 3. two-block online softmax (flash / ring attention merge) */
static void test_solver_online_softmax_merge(void **state)
{
    fx_t *f = *state;
    sp_expr_t m1 = P(f, "max(x0, x1)"), m2 = P(f, "max(x2, x3)");
    sp_expr_t l1 = P(f, "exp(x0 - max(x0, x1)) + exp(x1 - max(x0, x1))");
    sp_expr_t o1 = P(f, "exp(x0 - max(x0, x1))*v0 + exp(x1 - max(x0, x1))*v1");
    sp_expr_t l2 = P(f, "exp(x2 - max(x2, x3)) + exp(x3 - max(x2, x3))");
    sp_expr_t o2 = P(f, "exp(x2 - max(x2, x3))*v2 + exp(x3 - max(x2, x3))*v3");
    sp_expr_t m = sp_expr_max2(f->E, m1, m2);
    sp_expr_t c1 = sp_expr_unary(f->E, SP_OP_EXP, sp_expr_sub(f->E, m1, m));
    sp_expr_t c2 = sp_expr_unary(f->E, SP_OP_EXP, sp_expr_sub(f->E, m2, m));
    sp_expr_t l = sp_expr_add(f->E, sp_expr_mul(f->E, l1, c1), sp_expr_mul(f->E, l2, c2));
    sp_expr_t o = sp_expr_add(f->E, sp_expr_mul(f->E, o1, c1), sp_expr_mul(f->E, o2, c2));
    sp_expr_t merged = sp_expr_div(f->E, o, l);
    sp_expr_t plain = P(f, "(exp(x0)*v0 + exp(x1)*v1 + exp(x2)*v2 + exp(x3)*v3) / "
                           "(exp(x0) + exp(x1) + exp(x2) + exp(x3))");
    expect_equal(f, merged, plain);
    /* perturbed: the second block not rescaled */
    sp_expr_t l_bad = sp_expr_add(f->E, sp_expr_mul(f->E, l1, c1), l2);
    sp_expr_t o_bad = sp_expr_add(f->E, sp_expr_mul(f->E, o1, c1), o2);
    expect_different(f, sp_expr_div(f->E, o_bad, l_bad), plain);
}

/* 4. vocab-parallel cross-entropy */
static void test_solver_vocab_parallel_cross_entropy(void **state)
{
    fx_t *f = *state;
    /* shards {x0, x1} and {x2, x3}; label 2 lives on shard 1 */
    sp_expr_t m = P(f, "max(max(x0, x1), max(x2, x3))");
    sp_expr_t s1 = P(f, "exp(x0 - max(max(x0, x1), max(x2, x3))) + exp(x1 - max(max(x0, x1), max(x2, x3)))");
    sp_expr_t s2 = P(f, "exp(x2 - max(max(x0, x1), max(x2, x3))) + exp(x3 - max(max(x0, x1), max(x2, x3)))");
    sp_expr_t target = P(f, "0 + x2"); /* the label logit, gathered from its shard */
    sp_expr_t loss = sp_expr_sub(f->E, sp_expr_add(f->E, sp_expr_unary(f->E, SP_OP_LOG,
                                                                         sp_expr_add(f->E, s1, s2)),
                                                    m),
                                 target);
    sp_expr_t logical = P(f, "log(exp(x0) + exp(x1) + exp(x2) + exp(x3)) - x2");
    expect_equal(f, loss, logical);
    /* perturbed: shard 1's sum not included (the all-reduce of sums missing) */
    sp_expr_t bad = sp_expr_sub(f->E, sp_expr_add(f->E, sp_expr_unary(f->E, SP_OP_LOG, s1), m),
                                target);
    expect_different(f, bad, logical);
}

/* 5. max/min/relu/abs identities */
static void test_solver_piecewise_identities(void **state)
{
    fx_t *f = *state;
    expect_equal(f, P(f, "max(max(a, b), max(c, d))"), P(f, "max(a, b, c, d)"));
    expect_equal(f, P(f, "max(a, b) + min(a, b)"), P(f, "a + b"));
    expect_equal(f, P(f, "relu(x) - relu(-x)"), P(f, "x"));
    expect_equal(f, P(f, "relu(x) + relu(-x)"), P(f, "abs(x)"));
    expect_different(f, P(f, "max(a, b) + min(a, b)"), P(f, "a + b + relu(a - b)"));
    expect_different(f, P(f, "relu(x) - relu(-x)"), P(f, "abs(x)"));
    expect_equal(f, P(f, "clamp(x, 0, 1)"), P(f, "min(max(x, 0), 1)"));
    expect_equal(f, P(f, "where(gt(x, y), x, y)"), P(f, "max(x, y)"));
    expect_different(f, P(f, "where(ge(x, y), y, x)"), P(f, "min(x, y) + 1/2"));
}

/* conditions on indicators are affine in the indicator: no case split (relu backward written as
   where(gt(h, 0), g, 0) against the model's g * [h > 0], twelve units: 3^12 splits otherwise) */
static void test_solver_indicator_conditions(void **state)
{
    fx_t *f = *state;
    char lhs[2048], rhs[2048];
    size_t kl = 0, kr = 0;
    for (int i = 0; i < 12; i++) {
        kl += (size_t)snprintf(lhs + kl, sizeof lhs - kl, "%swhere(gt(h%d*w%d + b, 0), g%d, 0)",
                               i ? " + " : "", i, i, i);
        kr += (size_t)snprintf(rhs + kr, sizeof rhs - kr, "%sg%d*gt(h%d*w%d + b, 0)", i ? " + " : "",
                               i, i, i);
    }
    expect_equal(f, P(f, lhs), P(f, rhs));
    expect_equal(f, P(f, "gt(gt(x, 0), 0)"), P(f, "gt(x, 0)"));
    expect_equal(f, P(f, "eq(gt(x, 0), 0)"), P(f, "1 - gt(x, 0)"));
    expect_equal(f, P(f, "eq(2*eq(x, 0) - 2, 0)"), P(f, "eq(x, 0)"));
    expect_equal(f, P(f, "gt(3 - 2*gt(x, y), 2)"), P(f, "le(x, y)"));
    expect_equal(f, P(f, "gt(gt(x, 0) + 5, 0)"), P(f, "1"));
    /* at h = 0 the two differ */
    expect_different(f, P(f, "where(gt(h, 0), g, 0)"), P(f, "g*ge(h, 0)"));
    expect_different(f, P(f, "eq(gt(x, 0), 1)"), P(f, "ge(x, 0)"));
}

/* 6. sharded RMSNorm */
static void test_solver_sharded_rmsnorm(void **state)
{
    fx_t *f = *state;
    sp_expr_t sharded =
        P(f, "x1 * g1 * rsqrt(((x0^2 + x1^2) + (x2^2 + x3^2)) / 4 + 1/100000)");
    sp_expr_t logical = P(f, "x1 * g1 / sqrt((x0*x0 + x1*x1 + x2*x2 + x3*x3) * (1/4) + 1e-5)");
    expect_equal(f, sharded, logical);
    /* perturbed: only the local shard's sum of squares */
    expect_different(f, P(f, "x1 * g1 * rsqrt((x0^2 + x1^2) / 4 + 1/100000)"), logical);
    /* perturbed: eps changed */
    expect_different(f, P(f, "x1 * g1 * rsqrt(((x0^2 + x1^2) + (x2^2 + x3^2)) / 4 + 1/1000000)"),
                     logical);
}

/* 7. exp and sigmoid identities */
static void test_solver_exp_sigmoid_identities(void **state)
{
    fx_t *f = *state;
    expect_equal(f, P(f, "exp(x) * exp(-x)"), P(f, "1"));
    expect_equal(f, P(f, "x * sigmoid(x)"), P(f, "silu(x)"));
    expect_equal(f, P(f, "exp(a + b)"), P(f, "exp(a) * exp(b)"));
    expect_equal(f, P(f, "log(exp(a))"), P(f, "a"));
    expect_equal(f, P(f, "tanh(x)"), P(f, "2*sigmoid(2*x) - 1"));
    expect_equal(f, P(f, "erf(-x)"), P(f, "-erf(x)"));
    expect_different(f, P(f, "exp(x) * exp(x)"), P(f, "exp(x)"));
    expect_different(f, P(f, "sigmoid(x)"), P(f, "silu(x)"));
}

/* DIFFERENT with certified counterexamples */
static void test_solver_relu_not_additive(void **state)
{
    fx_t *f = *state;
    expect_different(f, P(f, "relu(x + y)"), P(f, "relu(x) + relu(y)"));
}

/* TrainVerify's Theorem C.12 counterexample: equal at index 0 only, every element is checked */
static void test_solver_single_index_reduction_is_unsound(void **state)
{
    fx_t *f = *state;
    sp_expr_t a[2] = {P(f, "x0 + x1"), P(f, "x0 + x1")};
    sp_expr_t b[2] = {P(f, "x0 + x1"), P(f, "2*x0")};
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_equiv_vec(f->S, a, b, 2, &r), SP_DIFFERENT);
    assert_int_equal(r.index, 1);
    check_cex(f, a[1], b[1], &r);
    sp_result_clear(&r);
}

static void test_solver_double_scaling(void **state)
{
    fx_t *f = *state;
    expect_different(f, P(f, "(g0 + g1) / 2 / 2"), P(f, "(g0 + g1) / 2"));
    expect_equal(f, P(f, "g0 / 2 + g1 / 2"), P(f, "(g0 + g1) / 2"));
}

/* Softmax with any common shift c is plain softmax; a per-shard shift is not. */
static void test_solver_softmax_shift_understanding(void **state)
{
    fx_t *f = *state;
    const char *c = "(y*z + exp(w) - max(y, w)/3)";
    char lhs[1024];
    snprintf(lhs, sizeof lhs, "exp(x0 - %s) / (exp(x0 - %s) + exp(x1 - %s) + exp(x2 - %s) + exp(x3 - %s))",
             c, c, c, c, c);
    sp_expr_t plain = P(f, "exp(x0) / (exp(x0) + exp(x1) + exp(x2) + exp(x3))");
    expect_equal(f, P(f, lhs), plain);
    /* each shard shifted by its own maximum, then summed across shards */
    sp_expr_t bad = P(f, "exp(x0 - max(x0, x1)) / (exp(x0 - max(x0, x1)) + exp(x1 - max(x0, x1)) "
                         "+ exp(x2 - max(x2, x3)) + exp(x3 - max(x2, x3)))");
    expect_different(f, bad, plain);
}

static void test_solver_rational_functions(void **state)
{
    fx_t *f = *state;
    expect_equal(f, P(f, "x/(x+y) + y/(x+y)"), P(f, "1"));
    expect_equal(f, P(f, "(x^2 - y^2)/(x - y)"), P(f, "x + y"));
    expect_equal(f, P(f, "1/(1/x)"), P(f, "x"));
    expect_different(f, P(f, "(x^2 - y^2)/(x + y)"), P(f, "x + y"));
    /* a common factor found coefficient by coefficient over the denominator's variables (the
       numerator's other variables z, w only index the coefficients): (x - y) divides
       z*(x^2 - y^2) + w*(x - y), and the normal form is canonical after cancelling it */
    expect_equal(f, P(f, "(z*x^2 - z*y^2 + w*x - w*y)/(x - y)"), P(f, "z*x + z*y + w"));
    char *a = sp_engine_print_nf(f->S, P(f, "(z*x^2 - z*y^2 + w*x - w*y)/(x - y)"), 0);
    char *b = sp_engine_print_nf(f->S, P(f, "z*(x + y) + w"), 0);
    assert_string_equal(a, b);
    flint_free(a);
    flint_free(b);
    /* one coefficient without the factor keeps the fraction (z*x + w*y is not divisible) */
    expect_different(f, P(f, "(z*x^2 - z*y^2 + w*x)/(x - y)"), P(f, "z*x + z*y + w"));
    a = sp_engine_print_nf(f->S, P(f, "(z*x + w*y)/(x - y) + 1"), 0);
    b = sp_engine_print_nf(f->S, P(f, "(z*x + w*y + x - y)/(x - y)"), 0);
    assert_string_equal(a, b);
    flint_free(a);
    flint_free(b);
}

static void test_solver_deep_chain(void **state)
{
    fx_t *f = *state;
    /* a 10^6-deep chain must not overflow the C stack */
    sp_expr_t x = sp_expr_sym(f->E, "x"), one = sp_expr_const_si(f->E, 1, 1);
    sp_expr_t e = x;
    for (int i = 0; i < 1000000; i++)
        e = sp_expr_add(f->E, e, one);
    sp_expr_t b = sp_expr_add(f->E, x, sp_expr_const_si(f->E, 1000000, 1));
    expect_equal(f, e, b);
    char *s = sp_expr_print(f->E, e, 60);
    assert_true(strlen(s) <= 64);
    flint_free(s);
}

static void test_solver_normal_form_is_canonical(void **state)
{
    fx_t *f = *state;
    char *a = sp_engine_print_nf(f->S, P(f, "(b + a)*(a - b)"), 0);
    char *b = sp_engine_print_nf(f->S, P(f, "a^2 - b*b"), 0);
    assert_string_equal(a, b);
    flint_free(a);
    flint_free(b);
}

/* Regression: a constant accumulator in sp_poly_pow aliased the scalar it multiplied by, so
   (x+y)^2 came out as 4x^2+4xy+4y^2 once x*y had been interned first (found by two helpers). */
static void test_solver_regress_pow_scalar_alias(void **state)
{
    (void)state;
    sp_engine_t *S = sp_engine_new(NULL, 7);
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_expr_t a = sp_expr_parse(E, "exp(a)*exp(b) + (exp(a)+exp(b))^2", NULL, 0);
    sp_expr_t b = sp_expr_parse(E, "4*exp(a)^2 + 5*exp(a)*exp(b) + 4*exp(b)^2", NULL, 0);
    sp_expr_t c = sp_expr_parse(E, "exp(a)^2 + 3*exp(a)*exp(b) + exp(b)^2", NULL, 0);
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_equiv(S, a, b, &r), SP_DIFFERENT);
    assert_int_equal(sp_equiv(S, a, c, &r), SP_EQUAL);
    sp_expr_t x = sp_expr_parse(E, "x*y + (x+y)^2", NULL, 0);
    sp_expr_t y = sp_expr_parse(E, "x^2 + 3*x*y + y^2", NULL, 0);
    assert_int_equal(sp_equiv(S, x, y, &r), SP_EQUAL);
    sp_result_clear(&r);
    sp_engine_free(S);
}

/* --probabilistic: a limit stops the exact proof; agreeing rule-respecting fingerprints answer
   EQUAL with a stated bound, and a real difference is still refuted with a certificate. */
static void test_solver_probabilistic_mode(void **state)
{
    (void)state;
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_terms = 20;
    /* five softmax-like fractions: their common denominator has 32 terms, over the limit */
    const char *lhs = "exp(a)/(exp(a)+exp(b)) + exp(c)/(exp(c)+exp(d)) + exp(e)/(exp(e)+exp(f))"
                      " + exp(g)/(exp(g)+exp(h)) + exp(i)/(exp(i)+exp(j))";
    const char *rhs = "exp(a-b)/(exp(a-b)+1) + exp(c-d)/(exp(c-d)+1) + exp(e-f)/(exp(e-f)+1)"
                      " + exp(g-h)/(exp(g-h)+1) + exp(i-j)/(exp(i-j)+1)";
    const char *bad = "exp(a-b)/(exp(a-b)+1) + exp(c-d)/(exp(c-d)+1) + exp(e-f)/(exp(e-f)+1)"
                      " + exp(g-h)/(exp(g-h)+1) + exp(i-j)/(exp(i-j)+2)";
    for (int prob = 0; prob <= 1; prob++) {
        lim.probabilistic = prob ? 3 : 0;
        sp_engine_t *S = sp_engine_new(&lim, 5);
        sp_ectx_struct *E = sp_engine_exprs(S);
        sp_expr_t a = sp_expr_parse(E, lhs, NULL, 0), b = sp_expr_parse(E, rhs, NULL, 0);
        sp_expr_t c = sp_expr_parse(E, bad, NULL, 0);
        sp_result_t r;
        sp_result_init(&r);
        sp_answer_t ans = sp_equiv(S, a, b, &r);
        if (prob) {
            assert_int_equal(ans, SP_EQUAL);
            assert_true(r.probabilistic_bits > 100);
        } else {
            assert_int_equal(ans, SP_UNKNOWN);
            assert_int_equal(r.why, SP_WHY_LIMIT_TERMS);
        }
        assert_int_equal(sp_equiv(S, a, c, &r), SP_DIFFERENT);
        assert_int_equal(r.probabilistic_bits, 0);
        sp_result_clear(&r);
        sp_engine_free(S);
    }
}

/* sp_engine_counts on one sum over an axis of the given terms: 1 when two terms may share a
   monomial (a count), 0 when shown not to (docs/soundness.md, "Counts") */
static int counts_of(const char *const *terms, int n)
{
    sp_engine_t *S = sp_engine_new(NULL, 3);
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_expr_t t[8], at;
    for (int i = 0; i < n; i++)
        assert_int_not_equal(t[i] = sp_expr_parse(E, terms[i], NULL, 0), SP_EXPR_NONE);
    sp_expr_t e = sp_expr_nary(E, SP_OP_ADD, t, (uint32_t)n);
    sp_expr_mark_axsum(E, e);
    int r = sp_engine_counts(S, &at);
    assert_true(r == 0 ? at == SP_EXPR_NONE : at == e);
    sp_engine_free(S);
    return r;
}

static void test_solver_counts(void **state)
{
    (void)state;
    /* the fuzzer's count: ones summed over an axis (each term's form is 1) */
    const char *ones[] = {"c*0 + 1", "d*0 + 1", "e*0 + 1"};
    assert_int_equal(counts_of(ones, 3), 1);
    /* a product with a symbol that no other term holds */
    const char *dot[] = {"k1*v", "k2*v", "k3*w"};
    assert_int_equal(counts_of(dot, 3), 0);
    /* softmax denominators: exp atoms of private symbols */
    const char *den[] = {"exp((q1*k1 + q2*k2)/3)", "exp((q1*j1 + q2*j2)/3)", "exp(q1*i1 + 2)"};
    assert_int_equal(counts_of(den, 3), 0);
    /* softmax probabilities: their numerators share nothing, but over their common divisor they
       add up to it, 1 a row (K over K rows: helper-57's review), so a divisor holding the
       markers voids them, and forms with a divisor other than 1 count */
    const char *prob[] = {"exp(q*k1)/(exp(q*k1) + exp(q*k2))", "exp(q*k2)/(exp(q*k1) + exp(q*k2))"};
    assert_int_equal(counts_of(prob, 2), 1);
    const char *one[] = {"(a1 + b1 + c1)/(a1 + b1)", "(a2 + b2 + c2)/(a2 + b2)"};
    assert_int_equal(counts_of(one, 2), 1);
    /* attention's sum_j P_ij dP_ij: a divisor shared by the terms, each term's sum of products
       with a row of its own (v1*, v2*) */
    const char *att[] = {"exp(q*k1)/(exp(q*k1) + exp(q*k2))*(v11*o1 + v12*o2)",
                         "exp(q*k2)/(exp(q*k1) + exp(q*k2))*(v21*o1 + v22*o2)"};
    assert_int_equal(counts_of(att, 2), 0);
    /* the same with dO an expression that the terms share (the gradient of a stage without a
       cut there: helper-65's pipeline plan, 2026-12-07) */
    const char *attx[] = {"exp(q*k1)/(exp(q*k1) + exp(q*k2))*(v11*(a*o1 + b) + v12*(c*o2 - b))",
                          "exp(q*k2)/(exp(q*k1) + exp(q*k2))*(v21*(a*o1 + b) + v22*(c*o2 - b))"};
    assert_int_equal(counts_of(attx, 2), 0);
    /* dV_j = sum_i P_ij dO_i with dO_i an expression of row i's own symbols (a stage without a
       cut on the gradient): the marker g_i lies below products, a quotient and its divisor
       (which holds x_i, so x_i is none); w is shared */
    const char *dv[] = {"exp(q*k1)/(exp(q*k1) + exp(q*k2))*(w*(g1*c - x1*(g1*x1)/(1 + x1^2)))",
                        "exp(q*k2)/(exp(q*k1) + exp(q*k2))*(w*(g2*c - x2*(g2*x2)/(1 + x2^2)))"};
    assert_int_equal(counts_of(dv, 2), 0);
    /* a marker that two units of its own term hold (g_i in both factors), over a shared
       divisor: the term's own, so a marker still */
    const char *two[] = {"(a*g1 + b*g1)*(c*g1 + d)/(s + t)", "(a*g2 + b*g2)*(c*g2 + d)/(s + t)"};
    assert_int_equal(counts_of(two, 2), 0);
    /* ... but not one that a divisor of its term holds */
    const char *tdv[] = {"g1*y/(g1 + 1)", "g2*y/(g2 + 1)"};
    assert_int_equal(counts_of(tdv, 2), 1);
    const char *tdv2[] = {"(a*g1 + b)*g1/(g1*s + t)", "(a*g2 + b)*g2/(g2*s + t)"};
    assert_int_equal(counts_of(tdv2, 2), 1);
    /* a summand without a marker (the constant 1 times the shared y) */
    const char *unm[] = {"(g1 + 1)*y/(1 + x1^2)", "(g2 + 1)*y/(1 + x2^2)"};
    assert_int_equal(counts_of(unm, 2), 1);
    /* a marker also under a divisor of its own term: g/(g + 1) is 1 - 1/(g + 1) */
    const char *dvd[] = {"g1/(g1 + 1)", "g2/(g2 + 1)"};
    assert_int_equal(counts_of(dvd, 2), 1);
    /* a log takes the symbol out of the exp into a denominator: every term's form is 1 */
    const char *lgd[] = {"v1*exp(-log(v1))", "v2*exp(-log(v2))"};
    assert_int_equal(counts_of(lgd, 2), 1);
    const char *lgs[] = {"y*(v1*exp(-log(v1)) + z1)", "y*(v2*exp(-log(v2)) + z2)"};
    assert_int_equal(counts_of(lgs, 2), 1);
    /* a factor that the term alone reaches may cancel its marker: every term's form is w */
    const char *inv[] = {"v1*(w/v1)", "v2*(w/v2)"};
    assert_int_equal(counts_of(inv, 2), 1);
    const char *invs[] = {"x*(v1*(w/v1) + y)", "x*(v2*(w/v2) + y)"};
    assert_int_equal(counts_of(invs, 2), 1);
    /* the same atoms cancelled by the divisor: every term is 1 */
    const char *ratio[] = {"exp(k1)/exp(k1)", "exp(k2)/exp(k2)", "exp(k3)/exp(k3)"};
    assert_int_equal(counts_of(ratio, 3), 1);
    /* cancelled by another factor of the term: every term's form is v */
    const char *cancel[] = {"exp(k1)*exp(-k1)*v", "exp(k2)*exp(-k2)*v"};
    assert_int_equal(counts_of(cancel, 2), 1);
    /* a symbol that cancels in the exp argument holds no atom */
    const char *gone[] = {"exp(k1 - k1 + q)", "exp(k2 - k2 + q)"};
    assert_int_equal(counts_of(gone, 2), 1);
    /* a symbol inside an exp is taken out by a log above it: log(exp(k1)) is k1 */
    const char *lg[] = {"k1*v", "log(exp(k1))*v"};
    assert_int_equal(counts_of(lg, 2), 1);
    /* a term of several leaves over a divisor that holds their markers: each term is 1 */
    const char *frac[] = {"a1/(a1 + b1) + b1/(a1 + b1)", "a2/(a2 + b2) + b2/(a2 + b2)"};
    assert_int_equal(counts_of(frac, 2), 1);
    /* a divisor multiplied into another term's numerator: x + y(a + b) holds a */
    const char *mul[] = {"a*v", "x/(a + b) + y"};
    assert_int_equal(counts_of(mul, 2), 0); /* x and y are markers, a is not */
    /* a router's normalized weights times a gradient of their own (gen deepseek3 --score
       sigmoid): a nested product's symbol factor is a marker beside the shared divisor */
    const char *route[] = {"p1*(g1*m1)/(p1*m1 + p2*m2)", "p2*(g2*m2)/(p1*m1 + p2*m2)"};
    assert_int_equal(counts_of(route, 2), 0);
    /* the same exp node reached first by two units that stop there, then by one that holds a
       log (log(exp(s)) is s): s is held by the last too */
    const char *stop[] = {"s*y", "exp(s)*z1", "exp(s)*z2", "log(exp(s))*y"};
    assert_int_equal(counts_of(stop, 4), 1);
    /* terms that are sums: their summands' markers */
    const char *nested[] = {"a*k1 + b*k2", "a*j1 + b*j2"};
    assert_int_equal(counts_of(nested, 2), 0);
    /* one term without a marker shares with none of the others */
    const char *unmarked[] = {"x + y", "k1*v", "k2*v"};
    assert_int_equal(counts_of(unmarked, 3), 0);
    /* a symbol inside a max, which a case split may resolve either way, is no marker */
    const char *mx[] = {"max(k1, u)*v", "max(k2, u)*v"};
    assert_int_equal(counts_of(mx, 2), 0); /* forms: two distinct max atoms */
}

/* sp_equiv of two expression texts in S's store; *why is the reason of an UNKNOWN */
static sp_answer_t equiv_texts(sp_engine_t *S, const char *lhs, const char *rhs, sp_why_t *why)
{
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t ans = sp_equiv(S, sp_expr_parse(E, lhs, NULL, 0), sp_expr_parse(E, rhs, NULL, 0), &r);
    *why = r.why;
    sp_result_clear(&r);
    return ans;
}

static void test_solver_limits_give_unknown(void **state)
{
    (void)state;
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_terms = 50;
    sp_engine_t *S = sp_engine_new(&lim, 1);
    sp_why_t why;
    assert_int_equal(equiv_texts(S, "(a+b+c+d+e+f+g+h)^4", "(a+b+c+d+e+f+g+h)^2*(a+b+c+d+e+f+g+h)^2", &why),
                     SP_UNKNOWN);
    assert_int_equal(why, SP_WHY_LIMIT_TERMS);
    sp_engine_free(S);
}

/* The engine's memory bound: every polynomial within max_terms, but the normal forms of one
   engine (a stage's, over all its queries) together within SP_NF_TERMS_FACTOR x max_terms;
   past it a query is UNKNOWN (limit max_terms), and a fresh engine answers the same query. */
static void test_solver_engine_memory_bound(void **state)
{
    (void)state;
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_terms = 10;
    sp_engine_t *S = sp_engine_new(&lim, 1);
    int k;
    char lhs[128], rhs[128];
    sp_why_t why = SP_WHY_NONE;
    for (k = 0; k < 10 * SP_NF_TERMS_FACTOR; k++) {
        snprintf(lhs, sizeof lhs, "(a%d + b%d)^2 * c%d", k, k, k);
        snprintf(rhs, sizeof rhs, "a%d^2*c%d + 2*a%d*b%d*c%d + b%d^2*c%d", k, k, k, k, k, k, k);
        if (equiv_texts(S, lhs, rhs, &why) != SP_EQUAL)
            break;
    }
    assert_true(k > 0);
    assert_true(k < 10 * SP_NF_TERMS_FACTOR);
    assert_int_equal(why, SP_WHY_LIMIT_TERMS);
    sp_engine_free(S);
    S = sp_engine_new(&lim, 1);
    assert_int_equal(equiv_texts(S, lhs, rhs, &why), SP_EQUAL);
    sp_engine_free(S);
}

/* Context-parallel attention: the key gradient of key 0 as a sum over ranks of per-rank partial
   sums, each with its own softmax scale, against the model's one sum with the scale outside.
   The rational normal forms exceed max_terms; the sum-of-products canonical forms agree. */
static sp_expr_t attn_dk_term(fx_t *f, int i, const char *scale)
{
    /* dS_i0 * q[i,0] for query i (causal: keys 0..i), head dim 2 */
    char z[2048] = "", t[4096] = "", buf[8192];
    for (int j = 0; j <= i; j++) {
        char e[256], dp[128];
        snprintf(e, sizeof e, "exp(%s*(q[%d,0]*k[%d,0] + q[%d,1]*k[%d,1]))", scale, i, j, i, j);
        snprintf(dp, sizeof dp, "(v[%d,0]*o[%d,0] + v[%d,1]*o[%d,1])", j, i, j, i);
        snprintf(buf, sizeof buf, "%s%s%s", z, j ? " + " : "", e);
        snprintf(z, sizeof z, "%s", buf);
        snprintf(buf, sizeof buf, "%s%s%s*%s", t, j ? " + " : "", e, dp);
        snprintf(t, sizeof t, "%s", buf);
    }
    snprintf(buf, sizeof buf,
             "exp(%s*(q[%d,0]*k[0,0] + q[%d,1]*k[0,1]))/(%s)*((v[0,0]*o[%d,0] + v[0,1]*o[%d,1]) "
             "- (%s)/(%s))*q[%d,0]",
             scale, i, i, z, i, i, t, z, i);
    return P(f, buf);
}

static void test_solver_cp_attention_key_grad(void **state)
{
    fx_t *f = *state;
    enum { SQ = 6 };
    sp_expr_t all[SQ], r0[SQ / 2], r1[SQ / 2], s = P(f, "rsqrt(2)");
    for (int i = 0; i < SQ; i++)
        all[i] = attn_dk_term(f, i, "rsqrt(2)");
    memcpy(r0, all, sizeof r0);
    memcpy(r1, all + SQ / 2, sizeof r1);
    sp_expr_t model = sp_expr_mul(f->E, s, sp_expr_nary(f->E, SP_OP_ADD, all, SQ));
    sp_expr_t p0 = sp_expr_mul(f->E, s, sp_expr_nary(f->E, SP_OP_ADD, r0, SQ / 2));
    sp_expr_t p1 = sp_expr_mul(f->E, s, sp_expr_nary(f->E, SP_OP_ADD, r1, SQ / 2));
    expect_equal(f, model, sp_expr_add(f->E, p0, p1));
    expect_equal(f, sp_expr_add(f->E, p1, p0), model);
    /* the value-gradient shape: no scale, nested sums only */
    expect_equal(f, sp_expr_nary(f->E, SP_OP_ADD, all, SQ),
                 sp_expr_add(f->E, sp_expr_nary(f->E, SP_OP_ADD, r0, SQ / 2),
                             sp_expr_nary(f->E, SP_OP_ADD, r1, SQ / 2)));
    /* perturbed: one rank's partial scaled twice, or a query missing: never EQUAL */
    sp_result_t r;
    sp_result_init(&r);
    assert_int_not_equal(sp_equiv(f->S, model, sp_expr_add(f->E, sp_expr_mul(f->E, s, p0), p1), &r),
                         SP_EQUAL);
    assert_int_not_equal(sp_equiv(f->S, model, p0, &r), SP_EQUAL);
    /* a symbolic factor is not distributed, but the normal forms still prove small cases */
    expect_equal(f, P(f, "x*(a + b) + x*c"), P(f, "x*(a + (b + c))"));
    expect_equal(f, P(f, "2*(a + b) + 2*c"), P(f, "2*((a + b) + c)"));
    sp_result_clear(&r);
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ((c^4)^-3)^-3... with `levels` powers of -3: the coefficient's size triples per level. */
static sp_expr_t constant_tower(sp_ectx_struct *E, int levels)
{
    sp_expr_t t = sp_expr_pow(E, sp_expr_const_si(E, -1, 4), 4);
    for (int i = 0; i < levels; i++)
        t = sp_expr_pow(E, t, -3);
    return t;
}

/* Fuzz find fuzz/regress/pairs/nf-constant-power-tower.txt: coefficients had no size limit. */
static void test_solver_regress_constant_tower_limit(void **state)
{
    (void)state;
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_ms = 200;
    sp_engine_t *S = sp_engine_new(&lim, 7);
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_expr_t x = sp_expr_sym(E, "x0"), t = constant_tower(E, 16);
    sp_expr_t a = sp_expr_mul(E, x, t);
    sp_expr_t b = sp_expr_sub(E, sp_expr_add(E, sp_expr_mul(E, t, x), x), x);
    sp_result_t r;
    sp_result_init(&r);
    double t0 = wall_ms();
    assert_int_equal(sp_equiv(S, a, b, &r), SP_UNKNOWN);
    assert_int_equal(r.why, SP_WHY_LIMIT_COEFF);
    assert_string_equal(sp_why_name(r.why), "limit max_coeff_bits");
    assert_true(wall_ms() - t0 < 10000); /* was ~2 s and 600 MB; 19 levels ~15 GB */
    assert_null(sp_engine_print_nf(S, t, 300));
    /* a few levels stay within the default and are proved */
    sp_expr_t s = constant_tower(E, 3);
    assert_int_equal(sp_equiv(S, sp_expr_mul(E, x, s),
                              sp_expr_sub(E, sp_expr_add(E, sp_expr_mul(E, s, x), x), x), &r),
                     SP_EQUAL);
    sp_result_clear(&r);
    sp_engine_free(S);
    /* the limit is an option: a smaller one stops earlier, with the same answer */
    lim.max_coeff_bits = 64;
    S = sp_engine_new(&lim, 7);
    E = sp_engine_exprs(S);
    x = sp_expr_sym(E, "x0");
    s = constant_tower(E, 3);
    assert_int_equal(sp_equiv(S, sp_expr_mul(E, x, s),
                              sp_expr_sub(E, sp_expr_add(E, sp_expr_mul(E, s, x), x), x), &r),
                     SP_UNKNOWN);
    assert_int_equal(r.why, SP_WHY_LIMIT_COEFF);
    sp_result_clear(&r);
    sp_engine_free(S);
}

/* Fuzz find fuzz/regress/deep.txt line 1: log over nested sqrt recursed once per level. */
static void test_solver_regress_log_of_deep_sqrt(void **state)
{
    fx_t *f = *state;
    expect_equal(f, P(f, "log(sqrt(sqrt(x)))"), P(f, "log(x)/4"));
    expect_equal(f, P(f, "log(sqrt(exp(y)*sqrt(x)^3))"), P(f, "y/2 + 3*log(x)/4"));
    expect_different(f, P(f, "log(sqrt(sqrt(x)))"), P(f, "log(x)/2"));
    /* 200000 levels (the recursion overflowed an 8 MB stack): the normal form stops cleanly
       when the weight 2^-k passes max_coeff_bits; with the limit off it is built in full */
    sp_expr_t x = sp_expr_sym(f->E, "x"), e = x;
    for (int i = 0; i < 200000; i++)
        e = sp_expr_unary(f->E, SP_OP_SQRT, e);
    assert_null(sp_engine_print_nf(f->S, sp_expr_unary(f->E, SP_OP_LOG, e), 100));
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_coeff_bits = 0;
    sp_engine_t *S = sp_engine_new(&lim, 5);
    sp_ectx_struct *E = sp_engine_exprs(S);
    x = sp_expr_sym(E, "x");
    e = x;
    for (int i = 0; i < 100000; i++)
        e = sp_expr_unary(E, SP_OP_SQRT, e);
    char *s = sp_engine_print_nf(S, sp_expr_unary(E, SP_OP_LOG, e), 0); /* 2^-100000 log(x) */
    assert_non_null(s);
    assert_true(strstr(s, "log(x)") != NULL);
    flint_free(s);
    sp_engine_free(S);
}

/* Fuzz find fuzz/regress/deep.txt line 2: max_ms was checked every 16 witness tries only, and
   one exact evaluation of a deep product chain takes seconds. */
static void test_solver_regress_deadline_inside_evaluation(void **state)
{
    (void)state;
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_ms = 300;
    sp_engine_t *S = sp_engine_new(&lim, 3);
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_expr_t x = sp_expr_sym(E, "x0"), c = x;
    for (int i = 0; i < 300000; i++)
        c = sp_expr_mul(E, c, x);
    sp_result_t r;
    sp_result_init(&r);
    double t0 = wall_ms();
    assert_int_equal(sp_equiv(S, c, sp_expr_sub(E, sp_expr_add(E, c, x), x), &r), SP_UNKNOWN);
    double dt = wall_ms() - t0;
    if (dt > 5000)
        print_error("query took %.0f ms with max_ms 300\n", dt);
    assert_true(dt < 5000); /* was 17.8 s (49 s on a loaded machine) */
    sp_result_clear(&r);
    sp_engine_free(S);
}

/* The run's deadline (limits.deadline_ns, --timeout): a query that meets it is UNKNOWN with
   "limit timeout", not max_ms's reason; a store past it takes no new node (every 65536 nodes it
   looks) and says why it is full.  The deadline is in the past, so nothing depends on speed. */
static void test_solver_run_deadline(void **state)
{
    (void)state;
    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_ms = 0;
    lim.deadline_ns = sp_now_ns() + 1;
    sp_engine_t *S = sp_engine_new(&lim, 3);
    sp_ectx_struct *E = sp_engine_exprs(S);
    sp_expr_t x = sp_expr_sym(E, "x0"), y = sp_expr_sym(E, "x1"), c = x;
    for (int i = 0; i < 20000; i++)
        c = sp_expr_add(E, sp_expr_mul(E, c, x), y);
    assert_int_not_equal(c, SP_EXPR_NONE);
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_equiv(S, c, sp_expr_sub(E, sp_expr_add(E, c, x), x), &r), SP_UNKNOWN);
    assert_int_equal(r.why, SP_WHY_LIMIT_TIMEOUT);
    assert_string_equal(sp_why_name(r.why), "limit timeout");
    sp_result_clear(&r);
    /* the store: full at its next look, with the reason */
    for (int i = 0; i < 70000 && c != SP_EXPR_NONE; i++)
        c = sp_expr_mul(E, c, y);
    assert_int_equal(c, SP_EXPR_NONE);
    assert_int_equal(sp_why_full(E), SP_WHY_LIMIT_TIMEOUT);
    sp_engine_free(S);
}

/* Fuzz find fuzz/regress/deep.txt line 3: fingerprints rebuilt a cone per atom node. */
static void test_solver_regress_fingerprint_linear(void **state)
{
    fx_t *f = *state;
    sp_expr_t x = sp_expr_sym(f->E, "x"), e = x;
    for (int i = 0; i < 16000; i++)
        e = sp_expr_unary(f->E, SP_OP_SQRT, e);
    double t0 = wall_ms();
    expect_equal(f, e, sp_expr_sub(f->E, sp_expr_add(f->E, e, x), x));
    assert_true(wall_ms() - t0 < 5000); /* was 14.6 s, quadratic */
}

/* Fuzz finds fuzz/regress/expr_parse/roundtrip-*: the printed text reads back as the same node. */
static void test_solver_print_parse_round_trip(void **state)
{
    fx_t *f = *state;
    static const char *const texts[] = {
        "0.5*x", "add(a, b, c)", "mul(a, b, c)/d", "-3", "-(3)", "-1/2", "1/2", "div(1, 2)",
        "1/0", "2/-3", "-3^2", "(-3)^2", "--x", "-x^2", "(-x)^2", "x - -3", "a*(b/c)",
        "a/(b*c)", "a - (b + c)", "x + y + x + x", "exp(x + exp(y))", "max(a, -b, 3/4)",
        "where(gt(x, 0), -x, 1/3)", "123456789012345678901234567890e40"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        sp_expr_t e = P(f, texts[i]);
        char *s = sp_expr_print(f->E, e, 0);
        sp_expr_t e2 = P(f, s);
        if (e2 != e)
            print_error("'%s' printed as '%s' reads back as another node\n", texts[i], s);
        assert_true(e2 == e);
        flint_free(s);
    }
    /* 1500 minus signs and a 3000-link left chain fit the reader's nesting limit of 2000, and
       so does their printed form */
    char *t = malloc(8000);
    memset(t, '-', 1500);
    strcpy(t + 1500, "x");
    sp_expr_t e = P(f, t);
    char *s = sp_expr_print(f->E, e, 0);
    assert_true(P(f, s) == e);
    flint_free(s);
    strcpy(t, "x+y");
    for (int i = 0; i < 3000; i++)
        strcat(t + 3 + 2 * i, "+x");
    e = P(f, t);
    s = sp_expr_print(f->E, e, 0);
    assert_true(P(f, s) == e);
    flint_free(s);
    free(t);
}

/* Property: random polynomial identities built by expansion are EQUAL; perturbed ones are not. */
static void test_solver_random_polynomial_identities(void **state)
{
    (void)state;
    uint64_t seed = 20261129;
    const char *env = getenv("SP_TEST_SEED");
    if (env)
        seed = strtoull(env, NULL, 10);
    flint_rand_t st;
    flint_randinit(st);
    flint_randseed(st, seed, seed ^ 0x5555);
    for (int it = 0; it < 60; it++) {
        sp_engine_t *S = sp_engine_new(NULL, seed + it);
        sp_ectx_struct *E = sp_engine_exprs(S);
        /* (sum of a_i x_i) * (sum of b_j y_j) vs the expanded double sum */
        int n = 1 + (int)n_randint(st, 4), m = 1 + (int)n_randint(st, 4);
        sp_expr_t xs[4], ys[4], prod[16];
        char name[16];
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof name, "x%d", i);
            xs[i] = sp_expr_mul(E, sp_expr_const_si(E, (slong)n_randint(st, 7) - 3, 1 + n_randint(st, 3)),
                                sp_expr_sym(E, name));
        }
        for (int j = 0; j < m; j++) {
            snprintf(name, sizeof name, "y%d", j);
            ys[j] = sp_expr_sym(E, name);
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < m; j++)
                prod[i * m + j] = sp_expr_mul(E, xs[i], ys[j]);
        sp_expr_t a = sp_expr_mul(E, sp_expr_nary(E, SP_OP_ADD, xs, n), sp_expr_nary(E, SP_OP_ADD, ys, m));
        sp_expr_t b = sp_expr_nary(E, SP_OP_ADD, prod, n * m);
        sp_result_t r;
        sp_result_init(&r);
        if (sp_equiv(S, a, b, &r) != SP_EQUAL)
            fail_msg("seed %llu iteration %d: expansion not EQUAL", (unsigned long long)seed, it);
        sp_expr_t c = sp_expr_add(E, b, sp_expr_mul(E, sp_expr_sym(E, "x0"), sp_expr_sym(E, "y0")));
        sp_answer_t ans = sp_equiv(S, a, c, &r);
        if (ans != SP_DIFFERENT)
            fail_msg("seed %llu iteration %d: perturbation not DIFFERENT", (unsigned long long)seed, it);
        sp_result_clear(&r);
        sp_engine_free(S);
    }
    flint_randclear(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_solver_indicator_conditions, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_dot_node, fx_setup, fx_teardown),
        cmocka_unit_test(test_solver_dot_sets),
        cmocka_unit_test_setup_teardown(test_solver_row_parallel_matmul, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_softmax_max_shift, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_online_softmax_merge, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_vocab_parallel_cross_entropy, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_piecewise_identities, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_sharded_rmsnorm, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_exp_sigmoid_identities, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_relu_not_additive, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_single_index_reduction_is_unsound, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_double_scaling, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_softmax_shift_understanding, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_rational_functions, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_deep_chain, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_normal_form_is_canonical, fx_setup, fx_teardown),
        cmocka_unit_test(test_solver_regress_pow_scalar_alias),
        cmocka_unit_test(test_solver_probabilistic_mode),
        cmocka_unit_test(test_solver_limits_give_unknown),
        cmocka_unit_test(test_solver_engine_memory_bound),
        cmocka_unit_test(test_solver_random_polynomial_identities),
        cmocka_unit_test(test_solver_regress_constant_tower_limit),
        cmocka_unit_test_setup_teardown(test_solver_regress_log_of_deep_sqrt, fx_setup, fx_teardown),
        cmocka_unit_test(test_solver_regress_deadline_inside_evaluation),
        cmocka_unit_test(test_solver_run_deadline),
        cmocka_unit_test_setup_teardown(test_solver_regress_fingerprint_linear, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_print_parse_round_trip, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_cp_attention_key_grad, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_solver_prefetch_changes_nothing, fx_setup, fx_teardown),
        cmocka_unit_test(test_solver_memory_bound_named),
        cmocka_unit_test(test_solver_exponent_past_32_bits),
        cmocka_unit_test(test_solver_counts),
    };
    return cmocka_run_group_tests_name("solver", tests, NULL, NULL);
}
