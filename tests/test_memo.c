/* test_memo.c: operators' results kept with the store (src/memo.c), batched symbol creation
   (sp_expr_syms), and attention's probabilities taken from the memo in its backward pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <flint/flint.h>
#include <flint/fmpq.h>

#include "expr.h"
#include "memo.h"
#include "ops.h"

/* get returns exactly what put kept, under its kind and its whole key; nothing else */
static void test_memo_get_put(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    uint32_t key[5] = {1, 2, 3, 4, 5};
    sp_expr_t val[3] = {7, 8, 9};
    size_t n = 0;
    assert_null(sp_memo_get(E, 1, key, 5, &n)); /* no memo yet */
    sp_memo_put(E, 1, key, 5, val, 3);
    const sp_expr_t *got = sp_memo_get(E, 1, key, 5, &n);
    assert_non_null(got);
    assert_int_equal(n, 3);
    assert_memory_equal(got, val, sizeof val);
    assert_null(sp_memo_get(E, 2, key, 5, &n)); /* another kind */
    assert_null(sp_memo_get(E, 1, key, 4, &n)); /* a prefix of the key */
    key[4] = 6;
    assert_null(sp_memo_get(E, 1, key, 5, &n)); /* one word changed */
    /* many entries: the table grows and keeps them all */
    for (uint32_t i = 0; i < 1000; i++) {
        uint32_t k[2] = {i, i * 7};
        sp_expr_t v = i + 100;
        sp_memo_put(E, 3, k, 2, &v, 1);
    }
    for (uint32_t i = 0; i < 1000; i++) {
        uint32_t k[2] = {i, i * 7};
        got = sp_memo_get(E, 3, k, 2, &n);
        assert_non_null(got);
        assert_int_equal(n, 1);
        assert_int_equal(got[0], i + 100);
    }
    sp_ectx_clear(E); /* frees the memo (the sanitizer build checks for leaks) */
}

/* past SP_MEMO_WORDS the memo starts over: what it kept before is gone, the new entry is kept */
static void test_memo_bound(void **state)
{
    (void)state;
    sp_ectx_t E;
    sp_ectx_init(E);
    size_t big = SP_MEMO_WORDS / 4 - 1, n;
    sp_expr_t *val = flint_calloc(big, sizeof(sp_expr_t));
    uint32_t k = 0;
    for (k = 0; k < 4; k++)
        sp_memo_put(E, 1, &k, 1, val, big);
    k = 0;
    assert_non_null(sp_memo_get(E, 1, &k, 1, &n));
    k = 4;
    sp_memo_put(E, 1, &k, 1, val, big); /* the fifth does not fit: start over */
    assert_non_null(sp_memo_get(E, 1, &k, 1, &n));
    k = 0;
    assert_null(sp_memo_get(E, 1, &k, 1, &n));
    /* a value larger than a quarter of the bound is not kept */
    k = 9;
    sp_memo_put(E, 1, &k, 1, val, big + 2);
    assert_null(sp_memo_get(E, 1, &k, 1, &n));
    flint_free(val);
    sp_ectx_clear(E);
}

/* sp_expr_syms gives the ids sp_expr_sym gives one by one, in a fresh store and in one that
   has some of the names already */
static void test_memo_syms_batch(void **state)
{
    (void)state;
    sp_ectx_t A, B;
    sp_ectx_init(A);
    sp_ectx_init(B);
    char buf[100][16];
    const char *names[100];
    for (int i = 0; i < 100; i++) {
        snprintf(buf[i], sizeof buf[i], "s%d", i % 37 == 5 ? 3 : i); /* some repeated */
        names[i] = buf[i];
    }
    sp_expr_sym(A, "s40");
    sp_expr_sym(B, "s40");
    sp_expr_t one[100], batch[100];
    for (int i = 0; i < 100; i++)
        one[i] = sp_expr_sym(A, names[i]);
    assert_true(sp_expr_syms(B, names, 100, batch));
    assert_memory_equal(one, batch, sizeof one);
    assert_int_equal(A->len, B->len);
    assert_int_equal(A->nsyms, B->nsyms);
    sp_ectx_clear(A);
    sp_ectx_clear(B);
}

/* t[0..n) as symbols named names[i] with shapes[i] (three dims each) */
static void symbolic(sp_ectx_struct *E, sp_tensor_t *t, int n, const int64_t *const *shapes,
                     const char *const *names)
{
    for (int i = 0; i < n; i++) {
        sp_tensor_init(&t[i]);
        sp_tensor_alloc(&t[i], 3, shapes[i]);
        assert_true(sp_tensor_symbols(E, &t[i], names[i]));
    }
}

/* every element of t[0..n) printed, a line each (stores differ in ids, not in expressions) */
static char *text_of(sp_ectx_struct *E, const sp_tensor_t *t, int n)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    for (int i = 0; i < n; i++)
        for (int64_t j = 0; j < sp_tensor_numel(&t[i]); j++) {
            char *p = sp_expr_print(E, t[i].v[j], 0);
            fprintf(f, "%s\n", p);
            flint_free(p);
        }
    fclose(f);
    return s;
}

static const int64_t qs[3] = {2, 3, 2}, ks[3] = {1, 3, 2};

/* attention's backward pass takes the forward pass's probabilities from the memo: the same
   gradients as in a store where the forward pass never ran */
static void test_memo_attention_backward(void **state)
{
    (void)state;
    sp_ectx_t A, B;
    sp_ectx_init(A);
    sp_ectx_init(B);
    const int64_t *shapes[4] = {qs, ks, ks, qs};
    const char *nm[4] = {"q", "k", "v", "dy"};
    char *results[2];
    for (int run = 0; run < 2; run++) {
        sp_ectx_struct *E = run ? B : A;
        sp_tensor_t in[4], out, din[3];
        sp_tensor_init(&out);
        symbolic(E, in, 4, shapes, nm);
        for (int i = 0; i < 3; i++)
            sp_tensor_init(&din[i]);
        sp_op_err_t err;
        sp_attr_t at[1];
        memset(at, 0, sizeof at);
        at[0].key = "causal";
        at[0].kind = SP_ATTR_NUM;
        fmpq_init(at[0].num);
        fmpq_set_si(at[0].num, 1, 1);
        if (run == 0) /* A: forward first, so its probabilities are in the memo */
            assert_true(sp_ops_apply(E, "attention", in, 3, at, 1, 0, &out, &err));
        assert_true(sp_ops_vjp(E, "attention", in, 3, at, 1, run == 0 ? &out : NULL, &in[3], din,
                               &err));
        fmpq_clear(at[0].num);
        results[run] = text_of(E, din, 3);
        for (int i = 0; i < 4; i++)
            sp_tensor_clear(&in[i]);
        for (int i = 0; i < 3; i++)
            sp_tensor_clear(&din[i]);
        sp_tensor_clear(&out);
    }
    /* two values each, the probabilities and the scores' gradient; A's backward pass found
       the forward pass's probabilities, B's found nothing */
    size_t hits;
    assert_int_equal(sp_memo_count(A, &hits), 2);
    assert_int_equal(hits, 1);
    assert_int_equal(sp_memo_count(B, &hits), 2);
    assert_int_equal(hits, 0);
    assert_string_equal(results[0], results[1]);
    free(results[0]);
    free(results[1]);
    sp_ectx_clear(A);
    sp_ectx_clear(B);
}

/* a plan's gradient operators, one input each: attention_grad_k after attention_grad_q finds
   the probabilities and the scores' gradient in the memo (two values kept, both found once),
   and both equal the model's VJP in a fresh store */
static void test_memo_attention_grad_ops(void **state)
{
    (void)state;
    sp_ectx_t A, B;
    sp_ectx_init(A);
    sp_ectx_init(B);
    const int64_t *shapes[4] = {qs, ks, ks, qs};
    const char *nm[4] = {"q", "k", "v", "dy"};
    char *text[2];
    for (int run = 0; run < 2; run++) {
        sp_ectx_struct *E = run ? B : A;
        sp_tensor_t in[4], g[3];
        symbolic(E, in, 4, shapes, nm);
        for (int i = 0; i < 3; i++)
            sp_tensor_init(&g[i]);
        sp_op_err_t err;
        if (run == 0) {
            size_t hits;
            assert_true(sp_ops_apply(E, "attention_grad_q", in, 4, NULL, 0, 0, &g[0], &err));
            assert_int_equal(sp_memo_count(E, &hits), 2);
            assert_int_equal(hits, 0);
            assert_true(sp_ops_apply(E, "attention_grad_k", in, 4, NULL, 0, 0, &g[1], &err));
            assert_int_equal(sp_memo_count(E, &hits), 2); /* both found */
            assert_int_equal(hits, 2);
        } else {
            assert_true(sp_ops_vjp(E, "attention", in, 3, NULL, 0, NULL, &in[3], g, &err));
        }
        text[run] = text_of(E, g, 2);
        for (int i = 0; i < 4; i++)
            sp_tensor_clear(&in[i]);
        for (int i = 0; i < 3; i++)
            sp_tensor_clear(&g[i]);
    }
    assert_string_equal(text[0], text[1]);
    free(text[0]);
    free(text[1]);
    sp_ectx_clear(A);
    sp_ectx_clear(B);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo_get_put),
        cmocka_unit_test(test_memo_bound),
        cmocka_unit_test(test_memo_syms_batch),
        cmocka_unit_test(test_memo_attention_backward),
        cmocka_unit_test(test_memo_attention_grad_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
