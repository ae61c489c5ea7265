/* test_ops.c: the tensor operator library: forward formulas, shape rules, errors, VJP rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diff.h"
#include "engine_fixture.h"
#include "op_attrs.h"
#include "ops.h"
#include "solver.h"

/* ---- fixture and helpers ---------------------------------------------------------------- */

/* A tensor of fresh symbols prefix[i,j,..] of the given shape. */
static void symt(fx_t *f, sp_tensor_t *t, const char *prefix, int ndim, ...)
{
    int64_t shape[SP_MAX_DIMS];
    va_list ap;
    va_start(ap, ndim);
    for (int d = 0; d < ndim; d++)
        shape[d] = va_arg(ap, int);
    va_end(ap);
    sp_tensor_init(t);
    assert_true(sp_tensor_alloc(t, ndim, shape));
    assert_true(sp_tensor_symbols(f->E, t, prefix));
}

/* A tensor of constants (integers) of the given shape. */
static void constt(fx_t *f, sp_tensor_t *t, const long *vals, int ndim, ...)
{
    int64_t shape[SP_MAX_DIMS];
    va_list ap;
    va_start(ap, ndim);
    for (int d = 0; d < ndim; d++)
        shape[d] = va_arg(ap, int);
    va_end(ap);
    sp_tensor_init(t);
    assert_true(sp_tensor_alloc(t, ndim, shape));
    for (int64_t i = 0; i < sp_tensor_numel(t); i++)
        t->v[i] = sp_expr_const_si(f->E, vals[i], 1);
}

static void print_expr(fx_t *f, const char *label, sp_expr_t e)
{
    char *s = sp_expr_print(f->E, e, 600);
    fprintf(stderr, "  %s: %s\n", label, s);
    flint_free(s);
}

static sp_answer_t equiv(fx_t *f, sp_expr_t a, sp_expr_t b, const char *what)
{
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t ans = sp_equiv(f->S, a, b, &r);
    if (ans != SP_EQUAL) {
        fprintf(stderr, "not EQUAL (%s, %s): %s\n",
                ans == SP_DIFFERENT ? "DIFFERENT" : "UNKNOWN", sp_why_name(r.why), what);
        print_expr(f, "got", a);
        print_expr(f, "want", b);
    }
    sp_result_clear(&r);
    return ans;
}

static sp_expr_t P(fx_t *f, const char *text)
{
    char err[128];
    sp_expr_t e = sp_expr_parse(f->E, text, err, sizeof(err));
    if (e == SP_EXPR_NONE)
        fprintf(stderr, "parse error in '%s': %s\n", text, err);
    assert_true(e != SP_EXPR_NONE);
    return e;
}

/* Element i of t equals the parsed text. */
static void expect_elem(fx_t *f, const sp_tensor_t *t, int64_t i, const char *text)
{
    assert_true(i < sp_tensor_numel(t));
    assert_int_equal(equiv(f, t->v[i], P(f, text), text), SP_EQUAL);
}

static void expect_shape(const sp_tensor_t *t, int ndim, ...)
{
    va_list ap;
    va_start(ap, ndim);
    assert_int_equal(t->ndim, ndim);
    for (int d = 0; d < ndim; d++)
        assert_int_equal(t->shape[d], va_arg(ap, int));
    va_end(ap);
}

/* Apply and expect success. */
static void apply(fx_t *f, const char *name, const sp_tensor_t *in, int nin, const char *attrs,
                  sp_tensor_t *out)
{
    attrs_t A;
    sp_op_err_t err;
    attrs_init(&A, attrs);
    sp_tensor_init(out);
    int ok = sp_ops_apply(f->E, name, in, nin, A.a, A.n, 0, out, &err);
    if (!ok)
        fprintf(stderr, "%s failed: %s\n", name, err.msg);
    attrs_clear(&A);
    assert_true(ok);
}

/* Apply and expect the error message exactly; an unknown attribute is also named by its index
   in err.attr (the caller points at its keyword). */
static void apply_err(fx_t *f, const char *name, const sp_tensor_t *in, int nin, const char *attrs,
                      const char *msg)
{
    attrs_t A;
    sp_op_err_t err;
    sp_tensor_t out;
    attrs_init(&A, attrs);
    sp_tensor_init(&out);
    int ok = sp_ops_apply(f->E, name, in, nin, A.a, A.n, 0, &out, &err);
    assert_false(ok);
    assert_null(out.v);
    if (strcmp(err.msg, msg) != 0)
        fprintf(stderr, "message: '%s'\n   want: '%s'\n", err.msg, msg);
    assert_string_equal(err.msg, msg);
    const char *u = strstr(msg, "unknown attribute '");
    if (u != NULL) {
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(u + 19, "'"), u + 19);
        assert_true(err.attr >= 0 && err.attr < A.n);
        assert_string_equal(A.keys[err.attr], key);
    } else {
        assert_int_equal(err.attr, -1);
    }
    attrs_clear(&A);
}

static void clear_all(sp_tensor_t *t, int n)
{
    for (int i = 0; i < n; i++)
        sp_tensor_clear(&t[i]);
}

/* ---- tensors and the operator list --------------------------------------------------------- */

static void test_ops_tensor_basics(void **state)
{
    fx_t *f = *state;
    sp_tensor_t t, u;
    symt(f, &t, "x", 2, 2, 3);
    assert_int_equal(sp_tensor_numel(&t), 6);
    assert_int_equal(t.v[5], sp_expr_sym(f->E, "x[1,2]"));
    char buf[32];
    sp_tensor_shape_str(&t, buf, sizeof(buf));
    assert_string_equal(buf, "[2, 3]");
    sp_tensor_init(&u);
    sp_tensor_copy(&u, &t);
    assert_true(sp_tensor_same_shape(&t, &u));
    assert_memory_equal(t.v, u.v, 6 * sizeof(sp_expr_t));
    int64_t huge[2] = {INT64_C(1) << 40, 4};
    assert_false(sp_tensor_alloc(&u, 2, huge));
    sp_tensor_t s;
    symt(f, &s, "s", 0);
    assert_int_equal(s.v[0], sp_expr_sym(f->E, "s"));
    sp_tensor_shape_str(&s, buf, sizeof(buf));
    assert_string_equal(buf, "[]");
    clear_all(&t, 1);
    clear_all(&u, 1);
    clear_all(&s, 1);
}

static void test_ops_names_known(void **state)
{
    (void)state;
    const char *const *names = sp_ops_names();
    int n = 0;
    for (; names[n] != NULL; n++)
        assert_true(sp_ops_known(names[n]));
    assert_true(n > 80);
    assert_false(sp_ops_known("all_reduce"));
    assert_false(sp_ops_known("relux"));
    assert_false(sp_ops_known(NULL));
}

/* ---- elementwise -------------------------------------------------------------------------- */

static void test_ops_elementwise_broadcast(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[2], out;
    symt(f, &in[0], "x", 2, 2, 3);
    symt(f, &in[1], "y", 1, 3);
    apply(f, "add", in, 2, NULL, &out);
    expect_shape(&out, 2, 2, 3);
    expect_elem(f, &out, 5, "x[1,2] + y[2]");
    sp_tensor_clear(&out);
    sp_tensor_clear(&in[1]);
    symt(f, &in[1], "y", 3, 4, 2, 1);
    apply(f, "div", in, 2, NULL, &out);
    expect_shape(&out, 3, 4, 2, 3);
    expect_elem(f, &out, 3 * 6 + 1 * 3 + 2, "x[1,2] / y[3,1,0]");
    sp_tensor_clear(&out);
    sp_tensor_clear(&in[1]);
    symt(f, &in[1], "z", 1, 4);
    apply_err(f, "sub", in, 2, NULL, "sub: shapes [2, 3] and [4] cannot be broadcast");
    clear_all(in, 2);
}

static void test_ops_elementwise_formulas(void **state)
{
    fx_t *f = *state;
    static const struct {
        const char *op, *attrs, *want;
    } cases[] = {
        {"neg", NULL, "-x[1]"},         {"exp", NULL, "exp(x[1])"},
        {"log", NULL, "log(x[1])"},     {"sqrt", NULL, "sqrt(x[1])"},
        {"rsqrt", NULL, "1/sqrt(x[1])"}, {"tanh", NULL, "tanh(x[1])"},
        {"sigmoid", NULL, "1/(1 + exp(-x[1]))"},
        {"silu", NULL, "x[1]/(1 + exp(-x[1]))"},
        {"gelu", NULL, "gelu(x[1])"},   {"erf", NULL, "erf(x[1])"},
        {"relu", NULL, "max(x[1], 0)"}, {"abs", NULL, "max(x[1], -x[1])"},
        {"scale", "1/3", "x[1]/3"},     {"scale", "c=-2", "-2*x[1]"},
        {"pow", "3", "x[1]*x[1]*x[1]"}, {"pow", "k=-2", "1/(x[1]*x[1])"},
        {"clamp", "lo=-1;hi=1", "min(max(x[1], -1), 1)"},
        {"clamp", "0;6", "clamp(x[1], 0, 6)"},
        {"clamp", "min=0", "relu(x[1])"},
        {"clamp", "hi=1/2", "min(x[1], 1/2)"},
    };
    sp_tensor_t x, out;
    symt(f, &x, "x", 1, 2);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        apply(f, cases[i].op, &x, 1, cases[i].attrs, &out);
        expect_shape(&out, 1, 2);
        expect_elem(f, &out, 1, cases[i].want);
        sp_tensor_clear(&out);
    }
    apply_err(f, "clamp", &x, 1, NULL, "clamp: at least one of 'lo' and 'hi' must be given");
    apply_err(f, "pow", &x, 1, "1/2", "pow: attribute 'k' must be an integer");
    apply_err(f, "scale", &x, 1, NULL, "scale: missing attribute 'c'");
    sp_tensor_clear(&x);
}

static void test_ops_binary_and_where(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[3], out;
    symt(f, &in[0], "a", 1, 2);
    symt(f, &in[1], "b", 1, 2);
    symt(f, &in[2], "c", 0);
    static const struct {
        const char *op, *want;
    } cases[] = {
        {"sub", "a[1] - b[1]"},          {"mul", "a[1]*b[1]"},
        {"maximum", "max(a[1], b[1])"},  {"minimum", "min(b[1], a[1])"},
        {"max", "max(a[1], b[1])"},      {"min", "min(a[1], b[1])"},
        {"lt", "lt(a[1], b[1])"},        {"le", "le(a[1], b[1])"},
        {"gt", "gt(a[1], b[1])"},        {"ge", "ge(a[1], b[1])"},
        {"eq", "eq(a[1], b[1])"},        {"ne", "ne(a[1], b[1])"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        apply(f, cases[i].op, in, 2, NULL, &out);
        expect_elem(f, &out, 1, cases[i].want);
        sp_tensor_clear(&out);
    }
    /* where(cond, a, scalar) broadcasts the scalar */
    sp_tensor_t w[3];
    w[0] = in[0];
    w[1] = in[1];
    w[2] = in[2];
    apply(f, "where", w, 3, NULL, &out);
    expect_elem(f, &out, 0, "where(a[0], b[0], c)");
    sp_tensor_clear(&out);
    /* comparisons are 0/1 valued: decided on constants */
    sp_tensor_t k[2];
    long kv0[2] = {3, 1}, kv1[2] = {2, 1};
    constt(f, &k[0], kv0, 1, 2);
    constt(f, &k[1], kv1, 1, 2);
    apply(f, "gt", k, 2, NULL, &out);
    expect_elem(f, &out, 0, "1");
    expect_elem(f, &out, 1, "0");
    sp_tensor_clear(&out);
    apply(f, "ge", k, 2, NULL, &out);
    expect_elem(f, &out, 1, "1");
    sp_tensor_clear(&out);
    apply_err(f, "max", in, 2, "dim=0",
              "max: the elementwise form (two tensors) takes no attributes");
    clear_all(in, 3);
    clear_all(k, 2);
}

static void test_ops_dropout(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[2], out;
    symt(f, &in[0], "x", 1, 2);
    symt(f, &in[1], "m", 1, 2);
    apply(f, "dropout", in, 2, "p=1/4", &out);
    expect_elem(f, &out, 1, "x[1]*m[1]/(1 - 1/4)");
    sp_tensor_clear(&out);
    apply_err(f, "dropout", in, 2, "p=1", "dropout: p must be in [0, 1)");
    clear_all(in, 2);
}

/* Numeric literals arrive as 0-d constant tensors: they are read as positional attributes. */
static void test_ops_literal_tensor_attrs(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[3], out, c2;
    long one = 1, zero = 0, two = 2;
    symt(f, &in[0], "x", 2, 2, 3);
    constt(f, &in[1], &zero, 0);
    constt(f, &in[2], &one, 0);
    apply(f, "transpose", in, 3, NULL, &out);
    expect_shape(&out, 2, 3, 2);
    assert_int_equal(out.v[1], in[0].v[3]);
    sp_tensor_clear(&out);
    constt(f, &c2, &two, 0);
    sp_tensor_t sc[2] = {in[0], c2};
    apply(f, "scale", sc, 2, NULL, &out);
    expect_elem(f, &out, 4, "2*x[1,1]");
    sp_tensor_clear(&out);
    sp_tensor_t cat[3] = {in[0], in[0], in[2]};
    apply(f, "concat", cat, 3, NULL, &out); /* concat(x, x, 1) */
    expect_shape(&out, 2, 2, 6);
    assert_int_equal(out.v[6 + 4], in[0].v[3 + 1]);
    sp_tensor_clear(&out);
    /* but add(x, 1) adds the literal */
    sp_tensor_t ad[2] = {in[0], in[2]};
    apply(f, "add", ad, 2, NULL, &out);
    expect_elem(f, &out, 0, "x[0,0] + 1");
    sp_tensor_clear(&out);
    clear_all(in, 3);
    sp_tensor_clear(&c2);
}

/* ---- shape operators ------------------------------------------------------------------------ */

static void test_ops_reshape_flatten_squeeze(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out, y;
    symt(f, &x, "x", 2, 2, 3);
    apply(f, "reshape", &x, 1, "shape=[3,-1]", &out);
    expect_shape(&out, 2, 3, 2);
    assert_memory_equal(out.v, x.v, 6 * sizeof(sp_expr_t));
    sp_tensor_clear(&out);
    apply_err(f, "reshape", &x, 1, "shape=[4,2]",
              "reshape: cannot reshape [2, 3] (6 elements) into [4, 2] (8 elements)");
    apply_err(f, "reshape", &x, 1, "shape=[-1,-1]",
              "reshape: at most one dimension may be -1");
    apply(f, "unsqueeze", &x, 1, "1", &out);
    expect_shape(&out, 3, 2, 1, 3);
    apply(f, "squeeze", &out, 1, NULL, &y);
    expect_shape(&y, 2, 2, 3);
    sp_tensor_clear(&y);
    apply(f, "unsqueeze", &x, 1, "dim=-1", &y);
    expect_shape(&y, 3, 2, 3, 1);
    sp_tensor_clear(&out);
    apply(f, "flatten", &y, 1, "start=1", &out);
    expect_shape(&out, 2, 2, 3);
    sp_tensor_clear(&out);
    apply(f, "flatten", &y, 1, NULL, &out);
    expect_shape(&out, 1, 6);
    assert_memory_equal(out.v, x.v, 6 * sizeof(sp_expr_t));
    sp_tensor_clear(&out);
    apply(f, "squeeze", &y, 1, "dim=0", &out); /* size 2: no-op as in torch */
    expect_shape(&out, 3, 2, 3, 1);
    sp_tensor_clear(&out);
    apply_err(f, "unsqueeze", &x, 1, "dim=3", "unsqueeze: dimension 3 out of range for a 2-d tensor");
    clear_all(&x, 1);
    clear_all(&y, 1);
}

static void test_ops_transpose_permute(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out;
    symt(f, &x, "x", 3, 2, 3, 4);
    apply(f, "permute", &x, 1, "dims=[2,0,1]", &out);
    expect_shape(&out, 3, 4, 2, 3);
    /* out[k, i, j] = x[i, j, k] */
    assert_int_equal(out.v[(3 * 2 + 1) * 3 + 2], sp_expr_sym(f->E, "x[1,2,3]"));
    sp_tensor_clear(&out);
    apply(f, "transpose", &x, 1, "0;-1", &out);
    expect_shape(&out, 3, 4, 3, 2);
    assert_int_equal(out.v[(3 * 3 + 2) * 2 + 1], sp_expr_sym(f->E, "x[1,2,3]"));
    sp_tensor_clear(&out);
    apply(f, "transpose", &x, 1, NULL, &out); /* last two */
    expect_shape(&out, 3, 2, 4, 3);
    sp_tensor_clear(&out);
    apply_err(f, "permute", &x, 1, "dims=[0,0,1]",
              "permute: dims [0, 0, 1] are not a permutation of 3 dimensions");
    apply_err(f, "transpose", &x, 1, "0;3", "transpose: dimension 3 out of range for a 3-d tensor");
    sp_tensor_clear(&x);
}

static void test_ops_slice_python_clamp(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out;
    symt(f, &x, "x", 1, 5);
    apply(f, "slice", &x, 1, "start=-3;end=100", &out);
    expect_shape(&out, 1, 3);
    assert_int_equal(out.v[0], x.v[2]);
    sp_tensor_clear(&out);
    apply(f, "slice", &x, 1, "dim=0;start=1;end=-1;step=2", &out);
    expect_shape(&out, 1, 2);
    assert_int_equal(out.v[1], x.v[3]);
    sp_tensor_clear(&out);
    apply(f, "slice", &x, 1, "start=4;end=2", &out);
    expect_shape(&out, 1, 0);
    sp_tensor_clear(&out);
    apply_err(f, "slice", &x, 1, "step=0", "slice: step must be positive");
    sp_tensor_clear(&x);
}

static void test_ops_chunk_torch_rule(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out;
    symt(f, &x, "x", 2, 2, 5);
    /* 5 into 3 chunks: 2, 2, 1 */
    const int64_t want5[3] = {2, 2, 1}, start5[3] = {0, 2, 4};
    for (int k = 0; k < 3; k++) {
        char a[64];
        snprintf(a, sizeof(a), "chunks=3;dim=1;index=%d", k);
        apply(f, "chunk", &x, 1, a, &out);
        expect_shape(&out, 2, 2, (int)want5[k]);
        assert_int_equal(out.v[0], x.v[start5[k]]);
        sp_tensor_clear(&out);
    }
    sp_tensor_clear(&x);
    /* 4 into 3 chunks: ceil(4/3) = 2, so torch makes [2, 2] and index 2 does not exist */
    symt(f, &x, "x", 1, 4);
    apply(f, "chunk", &x, 1, "3;0;1", &out);
    expect_shape(&out, 1, 2);
    assert_int_equal(out.v[0], x.v[2]);
    sp_tensor_clear(&out);
    apply_err(f, "chunk", &x, 1, "chunks=3;index=2",
              "chunk: chunk index out of range (index 2, 4 elements in chunks of 2 make 2 "
              "chunks)");
    /* the XLA rule keeps an empty trailing chunk */
    apply(f, "chunk", &x, 1, "chunks=3;index=2;allow_empty=1", &out);
    expect_shape(&out, 1, 0);
    sp_tensor_clear(&out);
    apply_err(f, "chunk", &x, 1, "chunks=0;index=0", "chunk: chunks must be positive");
    sp_tensor_clear(&x);
}

static void test_ops_split_pad_concat(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out, y[2];
    symt(f, &x, "x", 2, 2, 5);
    apply(f, "split", &x, 1, "sizes=[2,3];dim=1;index=1", &out);
    expect_shape(&out, 2, 2, 3);
    assert_int_equal(out.v[3], x.v[7]);
    sp_tensor_clear(&out);
    apply(f, "split", &x, 1, "size=2;dim=-1;index=2", &out);
    expect_shape(&out, 2, 2, 1);
    assert_int_equal(out.v[1], x.v[9]);
    sp_tensor_clear(&out);
    apply_err(f, "split", &x, 1, "sizes=[2,2];dim=1;index=0",
              "split: sizes sum to 4 but dimension 1 has size 5");
    apply_err(f, "split", &x, 1, "sizes=[2,3];dim=1;index=2",
              "split: split index 2 out of range (2 parts)");
    apply(f, "pad", &x, 1, "dim=0;before=1;after=0;value=7/2", &out);
    expect_shape(&out, 2, 3, 5);
    expect_elem(f, &out, 4, "7/2");
    assert_int_equal(out.v[5 + 4], x.v[4]);
    sp_tensor_clear(&out);
    symt(f, &y[0], "a", 2, 2, 1);
    symt(f, &y[1], "b", 2, 2, 2);
    apply(f, "concat", y, 2, "dim=-1", &out);
    expect_shape(&out, 2, 2, 3);
    assert_int_equal(out.v[3], y[0].v[1]);
    assert_int_equal(out.v[5], y[1].v[3]);
    sp_tensor_clear(&out);
    apply_err(f, "cat", y, 2, "dim=0",
              "cat: shape [2, 2] of argument 2 does not match [2, 1] outside dimension 0");
    sp_tensor_clear(&x);
    clear_all(y, 2);
}

/* concat copies each part's block per index of the dims before dim (src/ops_shape.c g_concat):
   every element against its part's own index, along the first, a middle and the last dim, with
   a part of extent 0, and an empty output whose dims before dim are large (no work per index) */
static void test_ops_concat_blocks(void **state)
{
    fx_t *f = *state;
    sp_tensor_t y[3], out;
    for (int dim = 0; dim < 3; dim++) {
        int64_t ext[3] = {2, 0, 3}, sh[3][3];
        for (int k = 0; k < 3; k++) {
            int64_t s[3] = {2, 3, 4};
            s[dim] = ext[k];
            memcpy(sh[k], s, sizeof(s));
            sp_tensor_init(&y[k]);
            assert_true(sp_tensor_alloc(&y[k], 3, s));
            char prefix[8];
            snprintf(prefix, sizeof prefix, "p%d", k);
            assert_true(sp_tensor_symbols(f->E, &y[k], prefix));
        }
        char attrs[16];
        snprintf(attrs, sizeof attrs, "dim=%d", dim);
        apply(f, "concat", y, 3, attrs, &out);
        int64_t os[3] = {2, 3, 4};
        os[dim] = 5;
        expect_shape(&out, 3, (int)os[0], (int)os[1], (int)os[2]);
        for (int64_t a = 0; a < os[0]; a++)
            for (int64_t b = 0; b < os[1]; b++)
                for (int64_t c = 0; c < os[2]; c++) {
                    int64_t idx[3] = {a, b, c}, k = 0;
                    while (idx[dim] >= sh[k][dim])
                        idx[dim] -= sh[k++][dim];
                    int64_t src = (idx[0] * sh[k][1] + idx[1]) * sh[k][2] + idx[2];
                    assert_int_equal(out.v[(a * os[1] + b) * os[2] + c], y[k].v[src]);
                }
        sp_tensor_clear(&out);
        clear_all(y, 3);
    }
    int64_t big[3] = {1 << 15, 1 << 15, 0};
    for (int k = 0; k < 2; k++) {
        sp_tensor_init(&y[k]);
        assert_true(sp_tensor_alloc(&y[k], 3, big));
    }
    apply(f, "concat", y, 2, "dim=2", &out);
    expect_shape(&out, 3, 1 << 15, 1 << 15, 0);
    sp_tensor_clear(&out);
    clear_all(y, 2);
}

static void test_ops_expand_repeat(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out;
    symt(f, &x, "x", 2, 1, 3);
    apply(f, "expand", &x, 1, "shape=[2,2,-1]", &out);
    expect_shape(&out, 3, 2, 2, 3);
    assert_int_equal(out.v[11], x.v[2]);
    sp_tensor_clear(&out);
    apply(f, "broadcast_to", &x, 1, "shape=[4,3]", &out);
    expect_shape(&out, 2, 4, 3);
    sp_tensor_clear(&out);
    apply_err(f, "expand", &x, 1, "shape=[2,2]", "expand: cannot expand [1, 3] to [2, 2]");
    apply(f, "repeat", &x, 1, "dim=1;times=2", &out);
    expect_shape(&out, 2, 1, 6);
    assert_int_equal(out.v[4], x.v[1]);
    sp_tensor_clear(&out);
    apply(f, "repeat", &x, 1, "[2,1,2]", &out);
    expect_shape(&out, 3, 2, 1, 6);
    assert_int_equal(out.v[6 + 5], x.v[2]);
    sp_tensor_clear(&out);
    apply(f, "repeat_interleave", &x, 1, "repeats=2;dim=1", &out);
    expect_shape(&out, 2, 1, 6);
    assert_int_equal(out.v[3], x.v[1]);
    sp_tensor_clear(&out);
    sp_tensor_clear(&x);
}

/* ---- reductions, softmax family ----------------------------------------------------------- */

static void test_ops_reductions(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out;
    symt(f, &x, "x", 3, 2, 3, 2);
    apply(f, "sum", &x, 1, "dim=[0,2]", &out);
    expect_shape(&out, 1, 3);
    expect_elem(f, &out, 1, "x[0,1,0] + x[0,1,1] + x[1,1,0] + x[1,1,1]");
    /* one n-ary sum, not a chain */
    assert_int_equal(sp_expr_op(f->E, out.v[1]), SP_OP_ADD);
    assert_int_equal(sp_expr_nargs(f->E, out.v[1]), 4);
    sp_tensor_clear(&out);
    apply(f, "sum", &x, 1, "1;1", &out);
    expect_shape(&out, 3, 2, 1, 2);
    sp_tensor_clear(&out);
    apply(f, "sum", &x, 1, NULL, &out);
    expect_shape(&out, 0);
    assert_int_equal(sp_expr_nargs(f->E, out.v[0]), 12);
    sp_tensor_clear(&out);
    apply(f, "mean", &x, 1, "dim=-1;keepdim=1", &out);
    expect_shape(&out, 3, 2, 3, 1);
    expect_elem(f, &out, 5, "(x[1,2,0] + x[1,2,1])/2");
    sp_tensor_clear(&out);
    apply(f, "max", &x, 1, "dim=1", &out);
    expect_shape(&out, 2, 2, 2);
    expect_elem(f, &out, 3, "max(x[1,0,1], x[1,1,1], x[1,2,1])");
    sp_tensor_clear(&out);
    apply(f, "amin", &x, 1, "dim=0", &out);
    expect_elem(f, &out, 0, "min(x[0,0,0], x[1,0,0])");
    sp_tensor_clear(&out);
    apply(f, "logsumexp", &x, 1, NULL, &out);
    expect_shape(&out, 2, 2, 3);
    expect_elem(f, &out, 0, "log(exp(x[0,0,0]) + exp(x[0,0,1]))");
    sp_tensor_clear(&out);
    apply_err(f, "sum", &x, 1, "dim=[1,1]", "sum: dimension 1 repeated");
    apply_err(f, "sum", &x, 1, "axis=1", "sum: unknown attribute 'axis' (sum takes dim, keepdim)");
    apply_err(f, "sum", &x, 1, "dim=1;keepdims=1",
              "sum: unknown attribute 'keepdims' (did you mean 'keepdim'?)");
    apply_err(f, "relu", &x, 1, "dim=1", "relu: unknown attribute 'dim' (relu takes no attributes)");
    apply_err(f, "mean", &x, 1, "dim=3", "mean: dimension 3 out of range for a 3-d tensor");
    sp_tensor_clear(&x);
}

static void test_ops_softmax_formula(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out, y;
    symt(f, &x, "x", 2, 2, 3);
    apply(f, "softmax", &x, 1, NULL, &out);
    expect_shape(&out, 2, 2, 3);
    expect_elem(f, &out, 4, "exp(x[1,1]) / (exp(x[1,0]) + exp(x[1,1]) + exp(x[1,2]))");
    /* the max-shifted form is the same function */
    expect_elem(f, &out, 4,
                "exp(x[1,1] - max(x[1,0], x[1,1], x[1,2])) / (exp(x[1,0] - max(x[1,0], x[1,1], "
                "x[1,2])) + exp(x[1,1] - max(x[1,0], x[1,1], x[1,2])) + exp(x[1,2] - max(x[1,0], "
                "x[1,1], x[1,2])))");
    sp_tensor_clear(&out);
    apply(f, "softmax", &x, 1, "dim=0", &out);
    expect_elem(f, &out, 4, "exp(x[1,1]) / (exp(x[0,1]) + exp(x[1,1]))");
    sp_tensor_clear(&out);
    apply(f, "log_softmax", &x, 1, NULL, &out);
    apply(f, "logsumexp", &x, 1, "dim=-1;keepdim=1", &y);
    expect_elem(f, &out, 2, "x[0,2] - log(exp(x[0,0]) + exp(x[0,1]) + exp(x[0,2]))");
    sp_tensor_t d[2] = {x, y};
    sp_tensor_t z;
    apply(f, "sub", d, 2, NULL, &z);
    for (int i = 0; i < 6; i++)
        assert_int_equal(equiv(f, out.v[i], z.v[i], "log_softmax = x - logsumexp"), SP_EQUAL);
    clear_all(&z, 1);
    clear_all(&y, 1);
    clear_all(&out, 1);
    apply_err(f, "softmax", &x, 1, "dim=2", "softmax: dimension 2 out of range for a 2-d tensor");
    sp_tensor_clear(&x);
}

static void test_ops_masked_and_causal_softmax(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[2], out, ref;
    symt(f, &in[0], "x", 2, 3, 3);
    symt(f, &in[1], "m", 1, 3);
    apply(f, "softmax", in, 2, NULL, &out);
    expect_elem(f, &out, 1,
                "exp(x[0,1])*m[1] / (exp(x[0,0])*m[0] + exp(x[0,1])*m[1] + exp(x[0,2])*m[2])");
    sp_tensor_clear(&out);
    /* causal: keys k <= q */
    apply(f, "causal_softmax", in, 1, NULL, &out);
    expect_elem(f, &out, 0, "1");
    expect_elem(f, &out, 1, "0");
    expect_elem(f, &out, 3, "exp(x[1,0]) / (exp(x[1,0]) + exp(x[1,1]))");
    expect_elem(f, &out, 5, "0");
    /* the same as a masked softmax with the lower-triangular 0/1 mask */
    sp_tensor_t tri[2];
    long tril[9] = {1, 0, 0, 1, 1, 0, 1, 1, 1};
    tri[0] = in[0];
    constt(f, &tri[1], tril, 2, 3, 3);
    apply(f, "softmax", tri, 2, NULL, &ref);
    for (int i = 0; i < 9; i++)
        assert_int_equal(equiv(f, out.v[i], ref.v[i], "causal = masked"), SP_EQUAL);
    sp_tensor_clear(&out);
    sp_tensor_clear(&ref);
    /* offset 1: one more key per row */
    apply(f, "causal_softmax", in, 1, "offset=1", &out);
    expect_elem(f, &out, 1, "exp(x[0,1]) / (exp(x[0,0]) + exp(x[0,1]))");
    expect_elem(f, &out, 2, "0");
    sp_tensor_clear(&out);
    apply_err(f, "causal_softmax", &in[1], 1, NULL,
              "causal_softmax: needs at least 2 dimensions [.., Sq, Sk], got [3]");
    /* causal_mask: causal_softmax's support as constants (its softmax of zeros would count) */
    apply(f, "causal_mask", in, 1, NULL, &out);
    for (int i = 0; i < 9; i++)
        expect_elem(f, &out, i, tril[i] ? "1" : "0");
    sp_tensor_clear(&out);
    apply(f, "causal_mask", in, 1, "offset=-1", &out);
    expect_elem(f, &out, 0, "0");
    expect_elem(f, &out, 3, "1");
    expect_elem(f, &out, 4, "0");
    sp_tensor_clear(&out);
    apply_err(f, "causal_mask", &in[1], 1, NULL,
              "causal_mask: needs at least 2 dimensions [.., Sq, Sk], got [3]");
    clear_all(in, 2);
    sp_tensor_clear(&tri[1]);
}

/* The mask slack a value may compose (sp_tensor_t.masks, src/ops.c mask_count; helper-88's and
   helper-89's reviews, session 45): one per mask, summed where patterns on different axes meet,
   the largest where they lie on the same axes of an elementwise operator */
static void test_ops_mask_count(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, m1, m2, out, y3[2];
    symt(f, &x, "x", 2, 3, 3);
    apply(f, "causal_mask", &x, 1, NULL, &m1);
    assert_int_equal(m1.masks, 1);
    apply(f, "causal_softmax", &x, 1, NULL, &m2);
    assert_int_equal(m2.masks, 1);
    assert_int_equal(x.masks, 0);
    sp_tensor_t two[2] = {m1, m2};
    apply(f, "matmul", two, 2, NULL, &out); /* a contraction: the patterns chain */
    assert_int_equal(out.masks, 2);
    sp_tensor_clear(&out);
    apply(f, "mul", two, 2, NULL, &out); /* patterns on the same axes: a band, not a chain */
    assert_int_equal(out.masks, 1);
    assert_int_equal(out.mask_axes, 3u);
    sp_tensor_clear(&out);
    sp_tensor_t xm[2] = {x, m1};
    apply(f, "sub", xm, 2, NULL, &out); /* the complement: the same mask, strict */
    assert_int_equal(out.masks, 1);
    sp_tensor_clear(&out);
    apply(f, "exp", &m2, 1, NULL, &out); /* unary */
    assert_int_equal(out.masks, 1);
    sp_tensor_clear(&out);
    apply(f, "sum", &m1, 1, "dim=1", &out); /* a reduction keeps it */
    assert_int_equal(out.masks, 1);
    sp_tensor_clear(&out);
    /* sums over the masked axes of two extents, multiplied on the kept axis, chain (t < s and
       s < u, summed over t and over u: helper-90); over axes of one extent, as ring attention's
       pieces over key blocks, they are one pattern */
    {
        sp_tensor_t a = m1, b = m2, r[2];
        a.pos[1].ext = 7;
        b.pos[1].ext = 8;
        apply(f, "sum", &a, 1, "dim=1", &r[0]);
        apply(f, "sum", &b, 1, "dim=1", &r[1]);
        assert_int_equal(r[0].mask_ext, 7);
        assert_int_equal(r[0].mask_axes, 1u);
        apply(f, "mul", r, 2, NULL, &out);
        assert_int_equal(out.masks, 2);
        assert_int_equal(out.mask_ext, -1);
        sp_tensor_clear(&out);
        sp_tensor_clear(&r[1]);
        b.pos[1].ext = 7;
        apply(f, "sum", &b, 1, "dim=1", &r[1]);
        apply(f, "mul", r, 2, NULL, &out);
        assert_int_equal(out.masks, 1);
        assert_int_equal(out.mask_ext, 7);
        sp_tensor_clear(&out);
        clear_all(r, 2);
    }
    /* a broadcast product f1[t,s,1] * f2[1,s,u] chains t, s and u */
    apply(f, "unsqueeze", &m1, 1, "dim=2", &y3[0]);
    apply(f, "unsqueeze", &m2, 1, "dim=0", &y3[1]);
    apply(f, "mul", y3, 2, NULL, &out);
    assert_int_equal(out.masks, 2);
    sp_tensor_clear(&out);
    /* the same expanded to one shape first: the operands' axes still differ (helper-89) */
    sp_tensor_t e3[2];
    apply(f, "expand", &y3[0], 1, "shape=[3,3,3]", &e3[0]);
    apply(f, "expand", &y3[1], 1, "shape=[3,3,3]", &e3[1]);
    assert_int_equal(e3[0].mask_axes, 3u);
    assert_int_equal(e3[1].mask_axes, 6u);
    apply(f, "mul", e3, 2, NULL, &out);
    assert_int_equal(out.masks, 2);
    sp_tensor_clear(&out);
    clear_all(e3, 2);
    apply(f, "concat", two, 2, "dim=0", &out); /* side by side */
    assert_int_equal(out.masks, 1);
    sp_tensor_clear(&out);
    /* a causal attention composes its mask only with operands that carry masks */
    sp_tensor_t q[3] = {x, x, x};
    apply(f, "attention", q, 3, "causal=1", &out);
    assert_int_equal(out.masks, 0);
    sp_tensor_clear(&out);
    q[2] = m1;
    apply(f, "attention", q, 3, "causal=1", &out);
    assert_int_equal(out.masks, 2);
    sp_tensor_clear(&out);
    /* an adjoint: the forward output's and the gradient's */
    sp_tensor_t din[2];
    sp_tensor_init(&din[0]);
    sp_tensor_init(&din[1]);
    din[0].ndim = din[1].ndim = -1;
    apply(f, "matmul", two, 2, NULL, &out);
    sp_op_err_t err;
    assert_true(sp_ops_vjp(f->E, "matmul", two, 2, NULL, 0, &out, &m1, din, &err));
    assert_int_equal(din[0].masks, 3);
    assert_int_equal(din[1].masks, 3);
    sp_tensor_clear(&din[0]);
    sp_tensor_clear(&din[1]);
    sp_tensor_clear(&out);
    clear_all(y3, 2);
    sp_tensor_clear(&m1);
    sp_tensor_clear(&m2);
    sp_tensor_clear(&x);
}

static void test_ops_norms(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[3], out;
    symt(f, &in[0], "x", 2, 2, 2);
    symt(f, &in[1], "w", 1, 2);
    symt(f, &in[2], "b", 1, 2);
    apply(f, "rmsnorm", in, 2, "eps=1/100", &out);
    expect_elem(f, &out, 1, "x[0,1] * rsqrt((x[0,0]^2 + x[0,1]^2)/2 + 1/100) * w[1]");
    sp_tensor_clear(&out);
    apply(f, "rmsnorm", in, 1, NULL, &out);
    expect_elem(f, &out, 2, "x[1,0] / sqrt((x[1,0]^2 + x[1,1]^2)/2 + 1e-6)");
    sp_tensor_clear(&out);
    apply(f, "layernorm", in, 3, "eps=1/100000", &out);
    expect_elem(f, &out, 0,
                "(x[0,0] - (x[0,0] + x[0,1])/2) / sqrt(((x[0,0] - x[0,1])/2)^2 + 1/100000) * w[0] "
                "+ b[0]");
    sp_tensor_clear(&out);
    sp_tensor_t bad[2] = {in[0], in[0]};
    apply_err(f, "rmsnorm", bad, 2, NULL,
              "rmsnorm: weight shape [2, 2] does not match the normalized dimension 2");
    apply_err(f, "layernorm", in, 3, "dim=0", "layernorm: only the last dimension is supported");
    clear_all(in, 3);
}

static void test_ops_cross_entropy(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[3], out;
    symt(f, &in[0], "x", 2, 2, 3);
    long onehot[6] = {0, 1, 0, 0, 0, 1};
    constt(f, &in[1], onehot, 2, 2, 3);
    const char *lse0 = "log(exp(x[0,0]) + exp(x[0,1]) + exp(x[0,2]))";
    const char *lse1 = "log(exp(x[1,0]) + exp(x[1,1]) + exp(x[1,2]))";
    char want[512];
    apply(f, "cross_entropy", in, 2, NULL, &out);
    expect_shape(&out, 0);
    snprintf(want, sizeof(want), "((%s - x[0,1]) + (%s - x[1,2]))/2", lse0, lse1);
    expect_elem(f, &out, 0, want);
    sp_tensor_clear(&out);
    apply(f, "cross_entropy", in, 2, "reduction=none", &out);
    expect_shape(&out, 1, 2);
    snprintf(want, sizeof(want), "%s - x[1,2]", lse1);
    expect_elem(f, &out, 1, want);
    sp_tensor_clear(&out);
    /* masked mean: sum(mask * loss) / sum(mask) */
    symt(f, &in[2], "m", 1, 2);
    apply(f, "cross_entropy", in, 3, NULL, &out);
    snprintf(want, sizeof(want), "(m[0]*(%s - x[0,1]) + m[1]*(%s - x[1,2]))/(m[0] + m[1])", lse0,
             lse1);
    expect_elem(f, &out, 0, want);
    sp_tensor_clear(&out);
    /* label smoothing: (1-e) nll + e mean_v(-log_softmax_v) */
    apply(f, "cross_entropy", in, 2, "label_smoothing=1/10;reduction=sum", &out);
    snprintf(want, sizeof(want),
             "9/10*((%s - x[0,1]) + (%s - x[1,2])) + 1/10*((3*%s - x[0,0] - x[0,1] - x[0,2])/3 + "
             "(3*%s - x[1,0] - x[1,1] - x[1,2])/3)",
             lse0, lse1, lse0, lse1);
    expect_elem(f, &out, 0, want);
    sp_tensor_clear(&out);
    apply_err(f, "cross_entropy", in, 2, "reduction=avg",
              "cross_entropy: unknown reduction 'avg' (mean, sum or none)");
    apply_err(f, "cross_entropy", in, 1, NULL,
              "cross_entropy: expected 2 to 3 tensor arguments, got 1");
    clear_all(in, 3);
}

/* ---- matmul, embedding, rope, attention, topk ------------------------------------------------ */

static void test_ops_matmul_broadcasting(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[2], out;
    symt(f, &in[0], "a", 4, 2, 1, 2, 3);
    symt(f, &in[1], "b", 3, 3, 3, 2);
    apply(f, "matmul", in, 2, NULL, &out);
    expect_shape(&out, 4, 2, 3, 2, 2);
    /* out[1, 2, 0, 1] = sum_l a[1, 0, 0, l] b[2, l, 1] */
    expect_elem(f, &out, ((1 * 3 + 2) * 2 + 0) * 2 + 1,
                "a[1,0,0,0]*b[2,0,1] + a[1,0,0,1]*b[2,1,1] + a[1,0,0,2]*b[2,2,1]");
    assert_int_equal(sp_expr_nargs(f->E, out.v[0]), 3);
    sp_tensor_clear(&out);
    clear_all(in, 2);
    /* vectors, per torch.matmul */
    symt(f, &in[0], "u", 1, 3);
    symt(f, &in[1], "v", 1, 3);
    apply(f, "matmul", in, 2, NULL, &out);
    expect_shape(&out, 0);
    expect_elem(f, &out, 0, "u[0]*v[0] + u[1]*v[1] + u[2]*v[2]");
    sp_tensor_clear(&out);
    sp_tensor_clear(&in[1]);
    symt(f, &in[1], "m", 3, 2, 3, 2);
    apply(f, "matmul", in, 2, NULL, &out);
    expect_shape(&out, 2, 2, 2);
    expect_elem(f, &out, 3, "u[0]*m[1,0,1] + u[1]*m[1,1,1] + u[2]*m[1,2,1]");
    sp_tensor_clear(&out);
    sp_tensor_t w2;
    symt(f, &w2, "w", 1, 2);
    sp_tensor_t sw[2] = {in[1], w2};
    apply(f, "matmul", sw, 2, NULL, &out);
    expect_shape(&out, 2, 2, 3);
    expect_elem(f, &out, 5, "m[1,2,0]*w[0] + m[1,2,1]*w[1]");
    sp_tensor_clear(&out);
    sp_tensor_clear(&w2);
    clear_all(in, 2);
    symt(f, &in[0], "a", 2, 2, 3);
    symt(f, &in[1], "b", 2, 4, 5);
    apply_err(f, "matmul", in, 2, NULL, "matmul: inner dimensions differ: [2, 3] and [4, 5]");
    sp_tensor_clear(&in[1]);
    symt(f, &in[1], "b", 3, 2, 3, 2);
    sp_tensor_t a3;
    symt(f, &a3, "c", 3, 3, 2, 3);
    sp_tensor_t bb[2] = {a3, in[1]};
    apply_err(f, "matmul", bb, 2, NULL, "matmul: batch dimensions [3] and [2] cannot be broadcast");
    clear_all(in, 2);
    sp_tensor_clear(&a3);
}

static void test_ops_embedding(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[2], out;
    symt(f, &in[0], "t", 3, 2, 2, 3);
    symt(f, &in[1], "E", 2, 3, 2);
    apply(f, "embedding", in, 2, NULL, &out);
    expect_shape(&out, 3, 2, 2, 2);
    expect_elem(f, &out, 7, "t[1,1,0]*E[0,1] + t[1,1,1]*E[1,1] + t[1,1,2]*E[2,1]");
    sp_tensor_clear(&out);
    apply(f, "embedding", &in[1], 1, "ids=[2,0,2,1];shape=[2,2]", &out);
    expect_shape(&out, 3, 2, 2, 2);
    assert_int_equal(out.v[1], in[1].v[5]);
    assert_int_equal(out.v[7], in[1].v[3]);
    sp_tensor_clear(&out);
    apply_err(f, "embedding", &in[1], 1, "ids=[3]", "embedding: id 3 out of range for 3 rows");
    sp_tensor_t bad[2] = {in[1], in[1]};
    apply_err(f, "embedding", bad, 2, NULL,
              "embedding: one-hot shape [3, 2] does not match 3 table rows");
    clear_all(in, 2);
}

static void test_ops_rope(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[3], out;
    symt(f, &in[0], "x", 3, 2, 2, 4);
    symt(f, &in[1], "c", 2, 2, 2);
    symt(f, &in[2], "s", 2, 2, 2);
    apply(f, "rope", in, 3, NULL, &out);
    expect_shape(&out, 3, 2, 2, 4);
    /* x[1, 1, :] at position 1: pairs (0, 2) and (1, 3) */
    expect_elem(f, &out, 12 + 0, "x[1,1,0]*c[1,0] - x[1,1,2]*s[1,0]");
    expect_elem(f, &out, 12 + 3, "x[1,1,3]*c[1,1] + x[1,1,1]*s[1,1]");
    sp_tensor_clear(&out);
    apply(f, "rope", in, 3, "interleaved=1", &out);
    expect_elem(f, &out, 4 + 1, "x[0,1,1]*c[1,0] + x[0,1,0]*s[1,0]");
    sp_tensor_clear(&out);
    /* full [S, D] tables with equal halves give the same result as [S, D/2] */
    sp_tensor_t full[3] = {in[0]}, half_out;
    for (int k = 1; k < 3; k++) {
        sp_tensor_t two[2] = {in[k], in[k]};
        apply(f, "concat", two, 2, "dim=-1", &full[k]);
    }
    apply(f, "rope", full, 3, NULL, &out);
    apply(f, "rope", in, 3, NULL, &half_out);
    assert_memory_equal(out.v, half_out.v, 16 * sizeof(sp_expr_t));
    sp_tensor_clear(&out);
    sp_tensor_clear(&half_out);
    clear_all(full + 1, 2);
    sp_tensor_t c3;
    symt(f, &c3, "c3", 2, 3, 2);
    sp_tensor_t bad[3] = {in[0], c3, c3};
    apply_err(f, "rope", bad, 3, NULL, "rope: cos shape [3, 2] does not broadcast to [2, 2, 2]");
    bad[1] = in[0];
    bad[2] = in[1];
    apply_err(f, "rope", bad, 3, NULL, "rope: cos and sin shapes differ: [2, 2, 4] and [2, 2]");
    sp_tensor_clear(&c3);
    clear_all(in, 3);
}

/* q [.., Hq, S, D], k/v [.., Hkv, S, D]: GQA equals repeating each kv head Hq/Hkv times. */
static void test_ops_attention_gqa(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[3], rep[3], a, b;
    symt(f, &in[0], "q", 3, 4, 2, 2);
    symt(f, &in[1], "k", 3, 2, 2, 2);
    symt(f, &in[2], "v", 3, 2, 2, 2);
    apply(f, "attention", in, 3, "scale=1/2;causal=1", &a);
    expect_shape(&a, 3, 4, 2, 2);
    rep[0] = in[0];
    apply(f, "repeat_interleave", &in[1], 1, "repeats=2;dim=-3", &rep[1]);
    apply(f, "repeat_interleave", &in[2], 1, "repeats=2;dim=-3", &rep[2]);
    apply(f, "attention", rep, 3, "scale=1/2;causal=1", &b);
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_equiv_vec(f->S, a.v, b.v, 16, &r), SP_EQUAL);
    sp_result_clear(&r);
    /* causal: the first query sees only the first key, so its output is v[g, 0, :] */
    expect_elem(f, &a, 0, "v[0,0,0]");
    expect_elem(f, &a, 2 * 4 + 1, "v[1,0,1]"); /* head 2 uses kv head 1 */
    /* the second query: softmax over both keys */
    expect_elem(f, &a, 2,
                "(exp((q[0,1,0]*k[0,0,0] + q[0,1,1]*k[0,0,1])/2)*v[0,0,0] + "
                "exp((q[0,1,0]*k[0,1,0] + q[0,1,1]*k[0,1,1])/2)*v[0,1,0]) / "
                "(exp((q[0,1,0]*k[0,0,0] + q[0,1,1]*k[0,0,1])/2) + "
                "exp((q[0,1,0]*k[0,1,0] + q[0,1,1]*k[0,1,1])/2))");
    sp_tensor_clear(&a);
    sp_tensor_clear(&b);
    clear_all(rep + 1, 2);
    sp_tensor_t bad[3] = {in[1], in[0], in[0]};
    apply_err(f, "attention", bad, 3, NULL,
              "attention: 2 query heads are not a multiple of 4 key/value heads");
    clear_all(in, 3);
}

/* attention = softmax(scale q k^T) v, composed from the library's own operators. */
static void test_ops_attention_composed(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[4], kt, s, ss, p, o, a, pv[2];
    symt(f, &in[0], "q", 3, 1, 3, 2);
    symt(f, &in[1], "k", 3, 1, 3, 2);
    symt(f, &in[2], "v", 3, 1, 3, 2);
    apply(f, "transpose", &in[1], 1, "-2;-1", &kt);
    sp_tensor_t qk[2] = {in[0], kt};
    apply(f, "matmul", qk, 2, NULL, &s);
    apply(f, "scale", &s, 1, "1/3", &ss);
    apply(f, "causal_softmax", &ss, 1, NULL, &p);
    pv[0] = p;
    pv[1] = in[2];
    apply(f, "matmul", pv, 2, NULL, &o);
    apply(f, "attention", in, 3, "scale=1/3;causal=1", &a);
    /* built from the same constructors: the very same nodes */
    assert_memory_equal(a.v, o.v, 6 * sizeof(sp_expr_t));
    clear_all(&a, 1);
    clear_all(&o, 1);
    clear_all(&p, 1);
    /* a 0/1 mask tensor instead of causality, and the default scale rsqrt(D) */
    long tril[9] = {1, 0, 0, 1, 1, 0, 1, 1, 1};
    constt(f, &in[3], tril, 2, 3, 3);
    apply(f, "attention", in, 4, NULL, &a);
    sp_tensor_clear(&ss);
    sp_tensor_t c2, sc[2];
    long two = 2;
    constt(f, &c2, &two, 0);
    apply(f, "rsqrt", &c2, 1, NULL, &sc[1]);
    sc[0] = s;
    apply(f, "mul", sc, 2, NULL, &ss);
    sp_tensor_t sm[2] = {ss, in[3]};
    apply(f, "softmax", sm, 2, NULL, &p);
    pv[0] = p;
    apply(f, "matmul", pv, 2, NULL, &o);
    sp_result_t r;
    sp_result_init(&r);
    assert_int_equal(sp_equiv_vec(f->S, a.v, o.v, 6, &r), SP_EQUAL);
    sp_result_clear(&r);
    clear_all(&a, 1);
    clear_all(&o, 1);
    clear_all(&p, 1);
    clear_all(&ss, 1);
    clear_all(&sc[1], 1);
    clear_all(&c2, 1);
    clear_all(&s, 1);
    clear_all(&kt, 1);
    clear_all(in, 4);
}

static void test_ops_topk_mask(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, out, s;
    long v[8] = {3, 1, 3, 2, 1, 1, 1, 5};
    constt(f, &x, v, 2, 2, 4);
    apply(f, "topk_mask", &x, 1, "k=2", &out);
    const char *want[8] = {"1", "0", "1", "0", "1", "0", "0", "1"}; /* ties: lower index */
    for (int i = 0; i < 8; i++)
        expect_elem(f, &out, i, want[i]);
    sp_tensor_clear(&out);
    sp_tensor_clear(&x);
    /* on symbols: exactly k ones in every case (ties included) */
    symt(f, &x, "x", 1, 3);
    apply(f, "topk_mask", &x, 1, "1;0", &out);
    apply(f, "sum", &out, 1, NULL, &s);
    expect_elem(f, &s, 0, "1");
    expect_elem(f, &out, 0, "lt(gt(x[1], x[0]) + gt(x[2], x[0]), 1)");
    expect_elem(f, &out, 2, "lt(ge(x[0], x[2]) + ge(x[1], x[2]), 1)");
    sp_tensor_clear(&out);
    sp_tensor_clear(&s);
    apply(f, "topk_mask", &x, 1, "k=3", &out);
    expect_elem(f, &out, 2, "1");
    sp_tensor_clear(&out);
    apply_err(f, "topk_mask", &x, 1, NULL, "topk_mask: missing attribute 'k'");
    sp_tensor_clear(&x);
}

/* ---- errors and limits ---------------------------------------------------------------------- */

static void test_ops_errors(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[2], out;
    symt(f, &in[0], "x", 2, 2, 3);
    symt(f, &in[1], "y", 1, 3);
    apply_err(f, "relux", in, 1, NULL, "unknown operator 'relux'");
    apply_err(f, "relu", in, 2, NULL, "relu: expected 1 tensor argument, got 2");
    apply_err(f, "add", in, 1, NULL, "add: expected 2 tensor arguments, got 1");
    apply_err(f, "concat", in, 0, NULL, "concat: expected at least 1 tensor argument, got 0");
    apply_err(f, "relu", in, 1, "1", "relu: takes no positional non-tensor arguments");
    apply_err(f, "sum", in, 1, "0;1;2", "sum: too many positional arguments (3, at most 2)");
    apply_err(f, "sum", in, 1, "0;dim=1", "sum: attribute 'dim' given twice");
    apply_err(f, "sum", in, 1, "dim=x", "sum: attribute 'dim' must be a list of integers");
    /* max_numel bounds the output */
    attrs_t A;
    sp_op_err_t err;
    attrs_init(&A, "shape=[4,2,3]");
    sp_tensor_init(&out);
    assert_false(sp_ops_apply(f->E, "expand", in, 1, A.a, A.n, 10, &out, &err));
    assert_string_equal(err.msg, "expand: output [4, 2, 3] has 24 elements, more than the limit 10");
    assert_true(sp_ops_apply(f->E, "expand", in, 1, A.a, A.n, 24, &out, &err));
    attrs_clear(&A);
    sp_tensor_clear(&out);
    /* an invalid tensor is an error, not a crash */
    sp_tensor_t bad;
    sp_tensor_init(&bad);
    bad.ndim = 9;
    apply_err(f, "relu", &bad, 1, NULL, "relu: argument 1 is not a valid tensor");
    clear_all(in, 2);
}

/* The output may alias an input (FLINT convention). */
static void test_ops_output_aliases_input(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x;
    sp_op_err_t err;
    symt(f, &x, "x", 1, 3);
    sp_expr_t x1 = x.v[1];
    assert_true(sp_ops_apply(f->E, "exp", &x, 1, NULL, 0, 0, &x, &err));
    assert_int_equal(x.v[1], sp_expr_unary(f->E, SP_OP_EXP, x1));
    sp_tensor_clear(&x);
}

/* ---- VJP rules against exact symbolic differentiation -------------------------------------- */

typedef struct {
    const char *name;
    const char *shapes; /* per input "d0,d1,.." separated by ';', "." for 0-d */
    const char *attrs;
    unsigned grads;     /* bit k: input k gets a gradient */
    unsigned zero;      /* bit k: no gradient, and the true derivative is 0 */
} vcase_t;

static int parse_shapes(fx_t *f, const char *spec, sp_tensor_t *in)
{
    static const char *const prefix[] = {"a", "b", "c", "d", "e"};
    int n = 0;
    const char *p = spec;
    while (*p) {
        int64_t shape[SP_MAX_DIMS];
        int nd = 0;
        if (*p == '.') {
            p++;
        } else {
            for (;;) {
                char *q;
                shape[nd++] = strtoll(p, &q, 10);
                p = q;
                if (*p != ',')
                    break;
                p++;
            }
        }
        sp_tensor_init(&in[n]);
        assert_true(sp_tensor_alloc(&in[n], nd, shape));
        assert_true(sp_tensor_symbols(f->E, &in[n], prefix[n]));
        n++;
        if (*p == ';')
            p++;
    }
    return n;
}

/* Checks din[k][j] == d L / d in[k][j] for L = sum(g * out), g fresh symbols (env: the
   caller's, sp_op_env_t, or NULL). */
static int check_vjp_env(fx_t *f, const vcase_t *vc, const sp_op_env_t *env)
{
    sp_tensor_t in[5], out, g, din[5];
    attrs_t A;
    sp_op_err_t err;
    int nin = parse_shapes(f, vc->shapes, in);
    attrs_init(&A, vc->attrs);
    sp_tensor_init(&out);
    int ok = sp_ops_apply_env(f->E, env, vc->name, in, nin, A.a, A.n, 0, &out, &err);
    if (!ok) {
        fprintf(stderr, "%s [%s]: forward failed: %s\n", vc->name, vc->shapes, err.msg);
        goto done;
    }
    sp_tensor_init(&g);
    assert_true(sp_tensor_alloc(&g, out.ndim, out.shape));
    assert_true(sp_tensor_symbols(f->E, &g, "g"));
    int64_t n = sp_tensor_numel(&out);
    sp_expr_t *terms = malloc((size_t)(n ? n : 1) * sizeof(sp_expr_t));
    for (int64_t i = 0; i < n; i++)
        terms[i] = sp_expr_mul(f->E, g.v[i], out.v[i]);
    sp_expr_t L = sp_expr_nary(f->E, SP_OP_ADD, terms, (uint32_t)n);
    free(terms);
    for (int k = 0; k < nin; k++)
        sp_tensor_init(&din[k]);
    ok = sp_ops_vjp_env(f->E, env, vc->name, in, nin, A.a, A.n, &out, &g, din, &err);
    if (!ok)
        fprintf(stderr, "%s [%s]: vjp failed: %s\n", vc->name, vc->shapes, err.msg);
    for (int k = 0; ok && k < nin; k++) {
        int has = din[k].ndim >= 0;
        if (has != (int)((vc->grads >> k) & 1)) {
            fprintf(stderr, "%s [%s]: input %d %s a gradient\n", vc->name, vc->shapes, k,
                    has ? "unexpectedly has" : "lacks");
            ok = 0;
            break;
        }
        if (!has && !((vc->zero >> k) & 1))
            continue;
        if (has && !sp_tensor_same_shape(&din[k], &in[k])) {
            fprintf(stderr, "%s: gradient %d has the wrong shape\n", vc->name, k);
            ok = 0;
            break;
        }
        for (int64_t j = 0; ok && j < sp_tensor_numel(&in[k]); j++) {
            sp_expr_t want = sp_expr_diff(f->E, L, in[k].v[j]);
            sp_expr_t got = has ? din[k].v[j] : sp_expr_const_si(f->E, 0, 1);
            char what[160];
            snprintf(what, sizeof(what), "%s [%s] %s: d/d input %d element %lld", vc->name,
                     vc->shapes, vc->attrs ? vc->attrs : "", k, (long long)j);
            if (equiv(f, got, want, what) != SP_EQUAL)
                ok = 0;
        }
    }
    clear_all(din, nin);
    sp_tensor_clear(&g);
done:
    sp_tensor_clear(&out);
    clear_all(in, nin);
    attrs_clear(&A);
    return ok;
}

static const vcase_t vjp_cases[] = {
    {"add", "2,3;3", NULL, 3, 0},
    {"sub", "2,1;1,3", NULL, 3, 0},
    {"mul", "2,3;2,1", NULL, 3, 0},
    {"div", "2;.", NULL, 3, 0},
    {"neg", "3", NULL, 1, 0},
    {"exp", "3", NULL, 1, 0},
    {"log", "3", NULL, 1, 0},
    {"sqrt", "3", NULL, 1, 0},
    {"rsqrt", "3", NULL, 1, 0},
    {"tanh", "3", NULL, 1, 0},
    {"sigmoid", "3", NULL, 1, 0},
    {"silu", "3", NULL, 1, 0},
    {"gelu", "3", NULL, 1, 0},
    {"erf", "3", NULL, 1, 0},
    {"relu", "3", NULL, 1, 0},
    {"abs", "3", NULL, 1, 0},
    {"scale", "2,2", "1/3", 1, 0},
    {"pow", "3", "k=3", 1, 0},
    {"pow", "2", "-2", 1, 0},
    {"pow", "2", "0", 1, 0},
    {"maximum", "3;3", NULL, 3, 0},
    {"minimum", "2,3;3", NULL, 3, 0},
    {"max", "2;2", NULL, 3, 0},
    {"min", "2;.", NULL, 3, 0},
    {"clamp", "3", "lo=-1;hi=2", 1, 0},
    {"clamp", "3;3;3", NULL, 7, 0},
    {"clamp", "3;.", NULL, 3, 0},
    {"clamp", "3", "hi=1", 1, 0},
    {"where", "3;3;.", NULL, 6, 1},
    {"lt", "2;2", NULL, 0, 3},
    {"ge", "2;.", NULL, 0, 3},
    {"eq", "2;2", NULL, 0, 3},
    {"le", "2;2", NULL, 0, 3},
    {"gt", "2;2", NULL, 0, 3},
    {"ne", "2;.", NULL, 0, 3},
    {"dropout", "2,2;2", "p=1/4", 1, 0},
    {"reshape", "2,3", "shape=[3,2]", 1, 0},
    {"view", "2,3", "shape=[-1]", 1, 0},
    {"flatten", "2,2,2", "start=1", 1, 0},
    {"squeeze", "2,1", NULL, 1, 0},
    {"unsqueeze", "2", "1", 1, 0},
    {"transpose", "2,3,2", "0;2", 1, 0},
    {"permute", "2,3,2", "dims=[2,0,1]", 1, 0},
    {"expand", "1,3", "shape=[2,2,3]", 1, 0},
    {"broadcast_to", "3", "shape=[2,3]", 1, 0},
    {"slice", "5", "start=1;end=-1;step=2", 1, 0},
    {"chunk", "2,5", "chunks=3;dim=1;index=2", 1, 0},
    {"split", "5", "sizes=[2,3];index=1", 1, 0},
    {"pad", "2,2", "before=1;after=2;value=7", 1, 0},
    {"repeat", "2,2", "dim=1;times=2", 1, 0},
    {"repeat", "2", "[2,3]", 1, 0},
    {"repeat_interleave", "2,2", "repeats=2;dim=0", 1, 0},
    {"concat", "2,1;2,3;2,2", "dim=1", 7, 0},
    {"cat", "1,2;2,2", NULL, 3, 0},
    {"sum", "2,3", "dim=1", 1, 0},
    {"sum", "2,3", NULL, 1, 0},
    {"mean", "2,3", "dim=[0,1];keepdim=1", 1, 0},
    {"max", "2,3", "dim=1", 1, 0},
    {"min", "3", NULL, 1, 0},
    {"amax", "2,2", "dim=0;keepdim=1", 1, 0},
    {"amin", "2,2,2", "dim=[0,2]", 1, 0},
    {"logsumexp", "2,3", NULL, 1, 0},
    {"softmax", "2,3", NULL, 1, 0},
    {"softmax", "3,2", "dim=0", 1, 0},
    {"softmax", "2,3;3", NULL, 1, 0},
    {"log_softmax", "2,3", NULL, 1, 0},
    {"causal_softmax", "3,3", NULL, 1, 0},
    {"causal_softmax", "2,3", "offset=1", 1, 0},
    {"layernorm", "2,3;3;3", NULL, 7, 0},
    {"layernorm", "3", "eps=0", 1, 0},
    {"layernorm", "2,2;2", "eps=1/8", 3, 0},
    {"rmsnorm", "2,3;3", "eps=1/100", 3, 0},
    {"rmsnorm", "3", NULL, 1, 0},
    {"cross_entropy", "2,3;2,3", NULL, 1, 0},
    {"cross_entropy", "2,3;2,3;2", NULL, 1, 0},
    {"cross_entropy", "2,3;2,3", "label_smoothing=1/10", 1, 0},
    {"cross_entropy", "2,2;2,2;2", "reduction=sum", 1, 0},
    {"cross_entropy", "2,2;2,2", "reduction=none", 1, 0},
    {"matmul", "2,3;3,2", NULL, 3, 0},
    {"matmul", "3;3,2", NULL, 3, 0},
    {"matmul", "2,3;3", NULL, 3, 0},
    {"matmul", "3;3", NULL, 3, 0},
    {"matmul", "2,1,2,2;3,2,2", NULL, 3, 0},
    {"embedding", "2,3;3,2", NULL, 2, 0},
    {"embedding", "3,2", "ids=[2,0,2]", 1, 0},
    {"rope", "2,4;2,2;2,2", NULL, 1, 0},
    {"rope", "2,2,4;2,2;2,2", "interleaved=1", 1, 0},
    {"rope", "2,4;2,4;2,4", NULL, 1, 0},
    {"attention", "2,2,2;2,2,2;2,2,2", "scale=1/2", 7, 0},
    {"attention", "2,2,2;1,2,2;1,2,2", "scale=1/2;causal=1", 7, 0},
    {"attention", "1,2,2;1,2,2;1,2,1;2,2", "scale=1", 7, 0},
    {"topk_mask", "3", "k=1", 0, 1},
};

static int check_vjp(fx_t *f, const vcase_t *vc)
{
    return check_vjp_env(f, vc, NULL);
}

static void test_ops_vjp_matches_diff(void **state)
{
    fx_t *f = *state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(vjp_cases) / sizeof(vjp_cases[0]); i++)
        if (!check_vjp(f, &vjp_cases[i])) {
            fprintf(stderr, "FAILED vjp case %zu: %s [%s] %s\n", i, vjp_cases[i].name,
                    vjp_cases[i].shapes, vjp_cases[i].attrs ? vjp_cases[i].attrs : "");
            failures++;
        }
    assert_int_equal(failures, 0);
}

/* Seeded random broadcast shapes for the binary operators' unbroadcasting. */
static void test_ops_vjp_random_broadcast(void **state)
{
    fx_t *f = *state;
    uint64_t seed = 0x5eed1234u;
    static const char *const ops[] = {"add", "sub", "mul", "div", "maximum"};
    for (int it = 0; it < 12; it++) {
        char shapes[64], sa[32] = "", sb[32] = "";
        int nd = 1 + (int)(seed % 3);
        for (int d = 0; d < nd; d++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            int full = 1 + (int)((seed >> 33) % 2) + 1, which = (int)((seed >> 40) % 3);
            int da = which == 1 ? 1 : full, db = which == 2 ? 1 : full;
            snprintf(sa + strlen(sa), sizeof(sa) - strlen(sa), "%s%d", d ? "," : "", da);
            if (d > 0 || (seed >> 50) % 2)
                snprintf(sb + strlen(sb), sizeof(sb) - strlen(sb), "%s%d", sb[0] ? "," : "", db);
        }
        snprintf(shapes, sizeof(shapes), "%s;%s", sa, sb[0] ? sb : ".");
        vcase_t vc = {ops[it % 5], shapes, NULL, 3, 0};
        if (!check_vjp(f, &vc))
            fprintf(stderr, "seed 0x5eed1234, iteration %d: %s [%s]\n", it, vc.name, shapes);
        assert_true(check_vjp(f, &vc));
    }
}

static void test_ops_vjp_errors(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, g, din[1];
    sp_op_err_t err;
    symt(f, &x, "x", 1, 3);
    symt(f, &g, "g", 1, 2);
    sp_tensor_init(&din[0]);
    assert_false(sp_ops_vjp(f->E, "relu", &x, 1, NULL, 0, NULL, &g, din, &err));
    assert_string_equal(err.msg, "relu: gradient shape [2] does not match output shape [3]");
    assert_int_equal(din[0].ndim, -1);
    assert_null(din[0].v);
    sp_tensor_t two[2] = {x, x};
    sp_tensor_t d2[2];
    sp_tensor_init(&d2[0]);
    sp_tensor_init(&d2[1]);
    sp_tensor_clear(&g);
    symt(f, &g, "g", 1, 3);
    assert_false(sp_ops_vjp(f->E, "relu_grad", two, 2, NULL, 0, NULL, &g, d2, &err));
    assert_string_equal(err.msg, "relu_grad: no VJP rule");
    assert_false(sp_ops_vjp(f->E, "nope", &x, 1, NULL, 0, NULL, &g, din, &err));
    assert_string_equal(err.msg, "unknown operator 'nope'");
    /* rules that rebuild no forward check dy's shape themselves, with the same message */
    sp_tensor_t a, b, dy, r;
    symt(f, &a, "va", 2, 2, 3);
    symt(f, &b, "vb", 2, 3, 4);
    symt(f, &dy, "vdy", 2, 2, 5);
    sp_tensor_t mm[3] = {a, b, dy};
    apply_err(f, "matmul_grad_a", mm, 3, NULL,
              "matmul_grad_a: gradient shape [2, 5] does not match output shape [2, 4]");
    sp_tensor_t ab[2] = {a, b}, d2b[2];
    sp_tensor_init(&d2b[0]);
    sp_tensor_init(&d2b[1]);
    assert_false(sp_ops_vjp(f->E, "matmul", ab, 2, NULL, 0, NULL, &dy, d2b, &err));
    assert_string_equal(err.msg, "matmul: gradient shape [2, 5] does not match output shape [2, 4]");
    assert_int_equal(d2b[0].ndim, -1);
    assert_int_equal(d2b[1].ndim, -1);
    sp_tensor_clear(&dy);
    symt(f, &dy, "vdy", 2, 2, 4);
    sp_tensor_t mm2[3] = {a, b, dy};
    apply(f, "matmul_grad_b", mm2, 3, NULL, &r);
    assert_true(sp_tensor_same_shape(&r, &b));
    sp_tensor_clear(&r);
    sp_tensor_clear(&a);
    sp_tensor_clear(&b);
    sp_tensor_clear(&dy);
    sp_tensor_clear(&x);
    sp_tensor_clear(&g);
}

/* Gradient operators for explicit backward passes: equal to the VJP rules and to diff. */
typedef struct {
    const char *grad;    /* gradient operator */
    const char *fwd;     /* forward operator */
    const char *shapes;  /* forward inputs */
    const char *attrs;
    int wrt;             /* which forward input */
} gcase_t;

static void check_grad_op(fx_t *f, const gcase_t *gc)
{
    sp_tensor_t in[6], out, g, r;
    attrs_t A;
    sp_op_err_t err;
    int nin = parse_shapes(f, gc->shapes, in);
    attrs_init(&A, gc->attrs);
    sp_tensor_init(&out);
    assert_true(sp_ops_apply(f->E, gc->fwd, in, nin, A.a, A.n, 0, &out, &err));
    sp_tensor_init(&g);
    assert_true(sp_tensor_alloc(&g, out.ndim, out.shape));
    assert_true(sp_tensor_symbols(f->E, &g, "g"));
    int64_t n = sp_tensor_numel(&out);
    sp_expr_t *terms = malloc((size_t)n * sizeof(sp_expr_t));
    for (int64_t i = 0; i < n; i++)
        terms[i] = sp_expr_mul(f->E, g.v[i], out.v[i]);
    sp_expr_t L = sp_expr_nary(f->E, SP_OP_ADD, terms, (uint32_t)n);
    free(terms);
    /* arguments: (y, dy) for softmax_grad, (dy, cos, sin) for rope_grad, (inputs.., dy) else */
    sp_tensor_t args[6];
    int na = 0;
    if (strstr(gc->grad, "softmax_grad")) {
        args[na++] = out;
        args[na++] = g;
    } else if (strcmp(gc->grad, "rope_grad") == 0) {
        args[na++] = g;
        args[na++] = in[1];
        args[na++] = in[2];
    } else {
        for (int k = 0; k < nin; k++)
            args[na++] = in[k];
        args[na++] = g;
    }
    sp_tensor_init(&r);
    int ok = sp_ops_apply(f->E, gc->grad, args, na, A.a, A.n, 0, &r, &err);
    if (!ok)
        fprintf(stderr, "%s: %s\n", gc->grad, err.msg);
    assert_true(ok);
    assert_true(sp_tensor_same_shape(&r, &in[gc->wrt]));
    for (int64_t j = 0; j < sp_tensor_numel(&r); j++) {
        sp_expr_t want = sp_expr_diff(f->E, L, in[gc->wrt].v[j]);
        assert_int_equal(equiv(f, r.v[j], want, gc->grad), SP_EQUAL);
    }
    sp_tensor_clear(&r);
    sp_tensor_clear(&g);
    sp_tensor_clear(&out);
    clear_all(in, nin);
    attrs_clear(&A);
}

static void test_ops_grad_operators(void **state)
{
    fx_t *f = *state;
    static const gcase_t cases[] = {
        {"relu_grad", "relu", "3", NULL, 0},
        {"silu_grad", "silu", "3", NULL, 0},
        {"gelu_grad", "gelu", "2", NULL, 0},
        {"tanh_grad", "tanh", "2", NULL, 0},
        {"rsqrt_grad", "rsqrt", "2", NULL, 0},
        {"softmax_grad", "softmax", "2,3", NULL, 0},
        {"softmax_grad", "softmax", "3,2", "dim=0", 0},
        {"log_softmax_grad", "log_softmax", "2,3", NULL, 0},
        {"softmax_grad", "causal_softmax", "3,3", NULL, 0},
        {"rmsnorm_grad_x", "rmsnorm", "2,3;3", "eps=1/64", 0},
        {"rmsnorm_grad_w", "rmsnorm", "2,3;3", "eps=1/64", 1},
        {"layernorm_grad_x", "layernorm", "2,3;3;3", NULL, 0},
        {"layernorm_grad_w", "layernorm", "2,3;3;3", NULL, 1},
        {"layernorm_grad_b", "layernorm", "2,3;3;3", NULL, 2},
        {"matmul_grad_a", "matmul", "2,3;3,2", NULL, 0},
        {"matmul_grad_b", "matmul", "2,2,3;3,2", NULL, 1},
        {"rope_grad", "rope", "2,2,4;2,2;2,2", NULL, 0},
        {"attention_grad_q", "attention", "2,2,2;1,2,2;1,2,2", "causal=1", 0},
        {"attention_grad_k", "attention", "2,2,2;1,2,2;1,2,2", "scale=1/2", 1},
        {"attention_grad_v", "attention", "2,2,2;1,2,2;1,2,2", "scale=1/2;causal=1", 2},
        {"embedding_grad", "embedding", "2,3;3,2", NULL, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_grad_op(f, &cases[i]);
}

/* cross_entropy_grad(logits, target, [mask, [dloss]]): the gradient of the loss. */
static void test_ops_cross_entropy_grad(void **state)
{
    fx_t *f = *state;
    sp_tensor_t in[4], loss, r;
    sp_op_err_t err;
    symt(f, &in[0], "x", 2, 2, 3);
    symt(f, &in[1], "t", 2, 2, 3);
    symt(f, &in[2], "m", 1, 2);
    symt(f, &in[3], "dl", 0);
    for (int variant = 0; variant < 3; variant++) {
        const char *attrs = variant == 2 ? "label_smoothing=1/5" : NULL;
        int nin = variant == 0 ? 2 : 3;
        attrs_t A;
        attrs_init(&A, attrs);
        sp_tensor_init(&loss);
        sp_tensor_init(&r);
        assert_true(sp_ops_apply(f->E, "cross_entropy", in, nin, A.a, A.n, 0, &loss, &err));
        sp_expr_t L = sp_expr_mul(f->E, in[3].v[0], loss.v[0]);
        int ok = sp_ops_apply(f->E, "cross_entropy_grad", in, variant == 2 ? 4 : nin, A.a, A.n,
                              0, &r, &err);
        if (!ok)
            fprintf(stderr, "%s\n", err.msg);
        assert_true(ok);
        expect_shape(&r, 2, 2, 3);
        for (int j = 0; j < 6; j++) {
            sp_expr_t want = sp_expr_diff(f->E, variant == 2 ? L : loss.v[0], in[0].v[j]);
            assert_int_equal(equiv(f, r.v[j], want, "cross_entropy_grad"), SP_EQUAL);
        }
        sp_tensor_clear(&loss);
        sp_tensor_clear(&r);
        attrs_clear(&A);
    }
    clear_all(in, 4);
}

/* A caller that knows real counts other than the ones seen (the checker at reduced shapes):
   every dim counts 2 more elements than it has */
static int counts_plus_two(void *ctx, const sp_tensor_t *x, unsigned mask, fmpq_t out)
{
    (void)ctx;
    fmpq_one(out);
    for (int d = 0; d < x->ndim; d++)
        if (mask >> d & 1u)
            fmpz_mul_si(fmpq_numref(out), fmpq_numref(out), (slong)(x->shape[d] + 2));
    return 1;
}

/* Which attributes are values (a size written there is taken at its real size: src/exec.c
   make_attr), by keyword, alias and position; positions, extents, counts and flags are not. */
static void test_ops_attr_values(void **state)
{
    (void)state;
    assert_int_equal(sp_ops_attr_is_value("scale", "c", -1), 1);
    assert_int_equal(sp_ops_attr_is_value("scale", "factor", -1), 1); /* an alias */
    assert_int_equal(sp_ops_attr_is_value("scale", NULL, 0), 1);
    assert_int_equal(sp_ops_attr_is_value("pow", "k", -1), 1);
    assert_int_equal(sp_ops_attr_is_value("pow", NULL, 0), 1);
    assert_int_equal(sp_ops_attr_is_value("topk_mask", "k", -1), 0); /* a count */
    assert_int_equal(sp_ops_attr_is_value("topk_mask", NULL, 0), 0);
    assert_int_equal(sp_ops_attr_is_value("layernorm", "eps", -1), 1);
    assert_int_equal(sp_ops_attr_is_value("layernorm", "dim", -1), 0);
    assert_int_equal(sp_ops_attr_is_value("pad", "value", -1), 1);
    assert_int_equal(sp_ops_attr_is_value("pad", "before", -1), 0);
    assert_int_equal(sp_ops_attr_is_value("pad", NULL, 3), 1);
    assert_int_equal(sp_ops_attr_is_value("pad", NULL, 1), 0);
    assert_int_equal(sp_ops_attr_is_value("scale", NULL, 5), 0); /* past npos */
    assert_int_equal(sp_ops_attr_is_value("clamp", "max", -1), 1);
    assert_int_equal(sp_ops_attr_is_value("attention", "scale", -1), 1);
    assert_int_equal(sp_ops_attr_is_value("attention", "offset", -1), 0);
    assert_int_equal(sp_ops_attr_is_value("concat", NULL, 0), 0);
    assert_int_equal(sp_ops_attr_is_value("no_such_op", "c", -1), 0);
    assert_int_equal(sp_ops_attr_is_value("scale", "no_such_key", -1), 0);
}

/* A mean, a norm and a mean cross entropy divide by the caller's real count (docs/soundness.md
   "Sizes as values"), and their VJPs are still the derivatives of what they compute. */
static void test_ops_real_counts(void **state)
{
    fx_t *f = *state;
    sp_op_env_t env = {counts_plus_two, NULL};
    static const vcase_t cases[] = {
        {"mean", "2,3", "dim=1", 1, 0},
        {"mean", "2,3", "dim=[0,1];keepdim=1", 1, 0},
        {"layernorm", "2,3;3;3", NULL, 7, 0},
        {"rmsnorm", "2,3;3", "eps=1/100", 3, 0},
        {"cross_entropy", "2,3;2,3", NULL, 1, 0},
        {"cross_entropy", "2,3;2,3", "label_smoothing=1/10", 1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_true(check_vjp_env(f, &cases[i], &env));
    /* mean over [2, 3] along dim 1: the row's sum over 3 + 2 = 5 */
    sp_tensor_t x, y;
    sp_op_err_t err;
    attrs_t A;
    symt(f, &x, "x", 2, 2, 3);
    attrs_init(&A, "dim=1");
    sp_tensor_init(&y);
    assert_true(sp_ops_apply_env(f->E, &env, "mean", &x, 1, A.a, A.n, 0, &y, &err));
    sp_expr_t s = sp_expr_add(f->E, sp_expr_add(f->E, x.v[0], x.v[1]), x.v[2]);
    assert_int_equal(equiv(f, y.v[0], sp_expr_div(f->E, s, sp_expr_const_si(f->E, 5, 1)), "mean"),
                     SP_EQUAL);
    sp_tensor_clear(&y);
    sp_tensor_clear(&x);
    attrs_clear(&A);
}

/* Random shapes (with empty dims), attributes and arities for every operator, forward and VJP:
   an error message or a complete result, never a crash (seeded; run under ASan/UBSan). */
static void test_ops_random_inputs_never_crash(void **state)
{
    fx_t *f = *state;
    static const char *const pool[] = {
        "dim=-1", "dim=0", "dim=2", "dim=[0,1]", "keepdim=1", "shape=[2,-1]", "shape=[3]",
        "dims=[1,0]", "start=1", "end=-1", "step=2", "chunks=2", "index=1", "sizes=[1,1]",
        "size=1", "before=1", "after=1", "value=1/2", "times=2", "repeats=2", "k=1", "p=1/2",
        "c=2", "lo=0", "hi=1", "eps=1/10", "scale=1/2", "causal=1", "offset=-1",
        "label_smoothing=1/2", "reduction=sum", "reduction=none", "interleaved=1", "ids=[0,1]",
        "0", "1", "-1", "[0]", "foo", "allow_empty=1", "dim0=1", "end=0", "ids=[5]", "k=-1",
        "dim=[]", "shape=[]", "sizes=[2,-1]", "repeats=-1", "step=-1", "p=2", "eps=-1"};
    const char *const *names = sp_ops_names();
    int nnames = 0;
    while (names[nnames] != NULL)
        nnames++;
    uint64_t seed = 0x0b5e55edu;
    char succeeded[256] = {0};
    assert_true(nnames <= 256);
    long ok_count = 0, err_count = 0;
    for (int it = 0; it < 4 * 80 * nnames; it++) {
#define RND() (seed = seed * 6364136223846793005u + 1442695040888963407u, (unsigned)(seed >> 33))
        const char *name = names[(it / 4) % nnames];
        int nin = it % 4 + 1; /* every operator with 1..4 tensors, 4 * 80 times */
        sp_tensor_t in[4], out, dy, din[4];
        int64_t sh0[SP_MAX_DIMS];
        int nd0 = 0;
        for (int k = 0; k < nin; k++) {
            int nd = (int)(RND() % 4);
            int64_t sh[SP_MAX_DIMS];
            for (int d = 0; d < nd; d++)
                sh[d] = RND() % 9 == 0 ? 0 : 1 + RND() % 3;
            if (k == 0) {
                nd0 = nd;
                memcpy(sh0, sh, sizeof(sh));
            } else if (RND() % 2) {
                nd = nd0 - (int)(RND() % 2) * (nd0 > 0); /* same shape, or its suffix */
                memcpy(sh, sh0 + (nd0 - nd), (size_t)nd * sizeof(int64_t));
            }
            sp_tensor_init(&in[k]);
            assert_true(sp_tensor_alloc(&in[k], nd, sh));
            char pre[16];
            snprintf(pre, sizeof(pre), "r%d", k);
            assert_true(sp_tensor_symbols(f->E, &in[k], pre));
            if (nd == 0 && RND() % 2)
                in[k].v[0] = sp_expr_const_si(f->E, (slong)(RND() % 3) - 1, 1);
        }
        char spec[256] = "";
        int na = RND() % 2 ? 0 : (int)(RND() % 4);
        for (int a = 0; a < na; a++) {
            size_t len = strlen(spec);
            snprintf(spec + len, sizeof(spec) - len, "%s%s", a ? ";" : "",
                     pool[RND() % (sizeof(pool) / sizeof(pool[0]))]);
        }
        attrs_t A;
        sp_op_err_t err;
        attrs_init(&A, spec);
        sp_tensor_init(&out);
        int ok = sp_ops_apply(f->E, name, in, nin, A.a, A.n, 4096, &out, &err);
        if (!ok) {
            err_count++;
            assert_true(err.msg[0] != 0);
            assert_null(out.v);
        } else {
            ok_count++;
            succeeded[(it / 4) % nnames] = 1;
            for (int64_t i = 0; i < sp_tensor_numel(&out); i++)
                assert_true(out.v[i] != SP_EXPR_NONE);
            sp_tensor_init(&dy);
            assert_true(sp_tensor_alloc(&dy, out.ndim, out.shape));
            assert_true(sp_tensor_symbols(f->E, &dy, "rg"));
            for (int k = 0; k < nin; k++)
                sp_tensor_init(&din[k]);
            if (sp_ops_vjp(f->E, name, in, nin, A.a, A.n, &out, &dy, din, &err)) {
                for (int k = 0; k < nin; k++) {
                    if (din[k].ndim < 0)
                        continue;
                    assert_true(sp_tensor_same_shape(&din[k], &in[k]));
                    for (int64_t i = 0; i < sp_tensor_numel(&din[k]); i++)
                        assert_true(din[k].v[i] != SP_EXPR_NONE);
                }
            } else {
                assert_true(err.msg[0] != 0);
                for (int k = 0; k < nin; k++)
                    assert_int_equal(din[k].ndim, -1);
            }
            clear_all(din, nin);
            sp_tensor_clear(&dy);
        }
        sp_tensor_clear(&out);
        attrs_clear(&A);
        clear_all(in, nin);
#undef RND
    }
    int covered = 0;
    for (int i = 0; i < nnames; i++)
        covered += succeeded[i];
    /* most operators got valid calls (chunk, split, ... need several attributes at once) */
    assert_true(covered * 10 >= nnames * 9);
    assert_true(ok_count > 2000 && err_count > 5000);
}

/* Every operator of the table has its reference entry (docs/operators.md is generated from it). */
static void test_ops_every_operator_documented(void **state)
{
    (void)state;
    sp_op_info_t o;
    int n = 0;
    for (int i = 0; sp_ops_info(i, &o); i++, n++) {
        if (o.doc == NULL || o.kind == NULL)
            fprintf(stderr, "operator '%s' has no entry in op_docs\n", o.name);
        assert_non_null(o.doc);
        assert_true(!strcmp(o.kind, "rational") || !strcmp(o.kind, "atoms") ||
                    !strcmp(o.kind, "piecewise"));
        assert_true(sp_ops_known(o.name));
    }
    assert_int_equal(n, sp_ops_count());
    assert_false(sp_ops_info(n, &o));
    for (const char *const *p = sp_ops_names(); *p; p++)
        assert_true(sp_ops_known(*p));
}


/* ---- hollow operands (--shard, src/shard_exec.c) ------------------------------------------ */

static int is_hollow(fx_t *f, sp_expr_t e)
{
    return (sp_expr_node(f->E, e)->flags & SP_NODE_HOLLOW) != 0;
}

/* The hollow flag reaches every node over the hollow symbol and no other; an operator with a
   hollow element in an operand makes that whole operand hollow (constants kept), leaves a
   real operand real, and keeps the shapes and errors of the real operands. */
static void test_ops_hollow_operands(void **state)
{
    fx_t *f = *state;
    sp_expr_t h = sp_expr_hollow(f->E), x = sp_expr_sym(f->E, "x");
    assert_true(is_hollow(f, h));
    assert_true(is_hollow(f, sp_expr_add(f->E, x, sp_expr_mul(f->E, h, x))));
    assert_false(is_hollow(f, sp_expr_add(f->E, x, sp_expr_const_si(f->E, 2, 1))));
    assert_int_equal(sp_expr_hollow(f->E), h);

    sp_tensor_t in[2], out, ref;
    symt(f, &in[0], "a", 2, 2, 3);
    symt(f, &in[1], "b", 2, 3, 2);
    apply(f, "matmul", in, 2, NULL, &ref);
    in[0].v[4] = h; /* one hollow element: the whole of a is hollow for the operator */
    apply(f, "matmul", in, 2, NULL, &out);
    assert_int_equal(out.ndim, 2);
    for (int e = 0; e < 4; e++) {
        assert_true(is_hollow(f, out.v[e]));
        assert_int_not_equal(out.v[e], ref.v[e]);
    }
    /* shapes are still checked */
    sp_tensor_t bad[2];
    symt(f, &bad[0], "a", 2, 2, 3);
    symt(f, &bad[1], "b", 2, 2, 2);
    bad[0].v[0] = h;
    apply_err(f, "matmul", bad, 2, NULL, "matmul: inner dimensions differ: [2, 3] and [2, 2]");
    clear_all(bad, 2);
    clear_all(&out, 1);

    /* a VJP: the gradient that reads only real operands stays real and equal to a full run's
       (the hollow a reaches the gradient of b only) */
    sp_tensor_t dy, din[2], want[2];
    symt(f, &dy, "dy", 2, 2, 2);
    sp_op_err_t err;
    clear_all(&in[0], 1);
    symt(f, &in[0], "a", 2, 2, 3);
    for (int k = 0; k < 2; k++) {
        sp_tensor_init(&want[k]);
        sp_tensor_init(&din[k]);
    }
    assert_true(sp_ops_vjp(f->E, "matmul", in, 2, NULL, 0, &ref, &dy, want, &err));
    sp_tensor_t hin[2];
    sp_tensor_init(&hin[0]);
    sp_tensor_copy(&hin[0], &in[0]);
    hin[0].v[0] = h;
    hin[1] = in[1];
    assert_true(sp_ops_vjp(f->E, "matmul", hin, 2, NULL, 0, NULL, &dy, din, &err));
    assert_memory_equal(din[0].v, want[0].v, 6 * sizeof(sp_expr_t));
    for (int e = 0; e < 6; e++)
        assert_true(is_hollow(f, din[1].v[e]));
    /* a hollow forward output (a tape's) with a real dout: the gradient of a full run */
    sp_tensor_t hy;
    sp_tensor_init(&hy);
    sp_tensor_copy(&hy, &ref);
    hy.v[1] = h;
    clear_all(din, 2);
    for (int k = 0; k < 2; k++)
        sp_tensor_init(&din[k]);
    assert_true(sp_ops_vjp(f->E, "matmul", in, 2, NULL, 0, &hy, &dy, din, &err));
    assert_memory_equal(din[0].v, want[0].v, 6 * sizeof(sp_expr_t));
    assert_memory_equal(din[1].v, want[1].v, 6 * sizeof(sp_expr_t));
    clear_all(din, 2);
    clear_all(want, 2);
    clear_all(&hin[0], 1);
    clear_all(&hy, 1);
    clear_all(&dy, 1);
    clear_all(&ref, 1);
    clear_all(in, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ops_tensor_basics, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_names_known, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_elementwise_broadcast, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_elementwise_formulas, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_binary_and_where, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_dropout, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_literal_tensor_attrs, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_reshape_flatten_squeeze, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_transpose_permute, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_slice_python_clamp, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_chunk_torch_rule, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_split_pad_concat, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_concat_blocks, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_expand_repeat, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_reductions, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_softmax_formula, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_masked_and_causal_softmax, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_mask_count, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_norms, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_cross_entropy, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_matmul_broadcasting, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_embedding, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_rope, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_attention_gqa, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_attention_composed, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_topk_mask, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_errors, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_output_aliases_input, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_real_counts, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_vjp_matches_diff, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_vjp_random_broadcast, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_vjp_errors, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_grad_operators, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_cross_entropy_grad, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_random_inputs_never_crash, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_ops_hollow_operands, fx_setup, fx_teardown),
        cmocka_unit_test(test_ops_every_operator_documented),
        cmocka_unit_test(test_ops_attr_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
