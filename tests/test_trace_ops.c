/*
 * test_trace_ops.c: a --shard trace's uniform operators (src/ops.c trace_uniform) against the
 * element-by-element code.  In a trace every source tensor is one symbol for all its elements,
 * and an operator whose operands are all uniform computes one element, lane or head and copies
 * it (docs/soundness.md, "A shard executes only what its stages read").  Each case here runs an
 * operator and its VJP twice on the same operands, once with those copies and once without
 * (sp_ectx_struct.trace_slow), and compares every output element as printed.  Operands are
 * uniform, or have one element changed (the copies must then not happen).  Random cases from
 * fixed seeds: elementwise operators with broadcasting, matmul with batch broadcasting and 1-d
 * operands, rope in both layouts, grouped causal attention with offsets and masks, the
 * gathers whose VJPs sum (pad, repeat, slice, concat, expand) and reductions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "op_attrs.h"
#include "ops.h"
#include "solver.h"

/* a small deterministic generator (the C library's rand() differs between libcs) */
static uint64_t rng;

static int R(int n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (uint64_t)n);
}

/* "[v0,v1,...]" of v[0..n) into b (of 64 bytes), for attrs_add */
static const char *list_text(char *b, int n, const int64_t *v)
{
    int k = snprintf(b, 64, "[");
    for (int i = 0; i < n; i++)
        k += snprintf(b + k, (size_t)(64 - k), "%s%lld", i ? "," : "", (long long)v[i]);
    snprintf(b + k, (size_t)(64 - k), "]");
    return b;
}

/* An operand: ndim, shape, its symbol and the element changed (-1: none). */
typedef struct {
    int ndim;
    int64_t shape[6];
    const char *sym;
    int64_t odd;
} operand_t;

static void operand(operand_t *o, const char *sym, int changed, int nd, const int64_t *sh)
{
    o->ndim = nd;
    memcpy(o->shape, sh, (size_t)nd * sizeof(int64_t));
    o->sym = sym;
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sh[d];
    o->odd = changed && n > 1 ? R((int)n) : -1;
}

static void make(sp_ectx_t E, sp_tensor_t *t, const operand_t *o)
{
    sp_tensor_init(t);
    assert_true(sp_tensor_alloc(t, o->ndim, o->shape));
    int64_t n = sp_tensor_numel(t);
    sp_expr_t s = sp_expr_sym(E, o->sym);
    for (int64_t i = 0; i < n; i++)
        t->v[i] = s;
    if (o->odd >= 0) {
        char b[32];
        snprintf(b, sizeof b, "%s_odd", o->sym);
        t->v[o->odd] = sp_expr_sym(E, b);
    }
}

/* Append every element of t, printed, to the text at *buf. */
static void put(sp_ectx_t E, char **buf, size_t *len, const sp_tensor_t *t)
{
    int64_t n = t->ndim >= 0 && t->v ? sp_tensor_numel(t) : -1;
    char head[64];
    snprintf(head, sizeof head, "[%d %lld]", t->ndim, (long long)n);
    size_t hl = strlen(head);
    *buf = realloc(*buf, *len + hl + 1);
    memcpy(*buf + *len, head, hl + 1);
    *len += hl;
    for (int64_t i = 0; i < n; i++) {
        char *s = sp_expr_print(E, t->v[i], 400);
        size_t sl = strlen(s);
        *buf = realloc(*buf, *len + sl + 2);
        (*buf)[(*len)++] = ' ';
        memcpy(*buf + *len, s, sl + 1);
        *len += sl;
        flint_free(s);
    }
}

/* The operator and its VJP in a fresh trace store, copies on or off: every output as text. */
static char *run(const char *name, const operand_t *ops, int nin, const attrs_t *A, int slow)
{
    sp_engine_t *S = sp_engine_new(NULL, 12345);
    sp_ectx_struct *E = sp_engine_exprs(S);
    E->dot_ok = 1;
    E->dot_sets = 1;
    E->trace_slow = slow;
    sp_tensor_t in[4], out, dy, din[4];
    for (int k = 0; k < nin; k++)
        make(E, &in[k], &ops[k]);
    sp_tensor_init(&out);
    sp_op_err_t err;
    char *buf = malloc(1);
    size_t len = 0;
    buf[0] = 0;
    if (!sp_ops_apply(E, name, in, nin, A->a, A->n, 0, &out, &err)) {
        put(E, &buf, &len, &out); /* an error: both runs must fail alike */
    } else {
        put(E, &buf, &len, &out);
        operand_t g;
        operand(&g, "g", ops[0].odd >= 0, out.ndim, out.shape);
        make(E, &dy, &g);
        for (int k = 0; k < 4; k++)
            sp_tensor_init(&din[k]);
        if (sp_ops_vjp(E, name, in, nin, A->a, A->n, &out, &dy, din, &err))
            for (int k = 0; k < nin; k++)
                put(E, &buf, &len, &din[k]);
        for (int k = 0; k < 4; k++)
            sp_tensor_clear(&din[k]);
        sp_tensor_clear(&dy);
    }
    sp_tensor_clear(&out);
    for (int k = 0; k < nin; k++)
        sp_tensor_clear(&in[k]);
    sp_engine_free(S);
    return buf;
}

static void compare(const char *name, const operand_t *ops, int nin, const attrs_t *A)
{
    /* the changed element is drawn in operand(); g's (in run) from the same generator state */
    uint64_t keep = rng;
    char *fast = run(name, ops, nin, A, 0);
    rng = keep;
    char *slow = run(name, ops, nin, A, 1);
    if (strcmp(fast, slow) != 0)
        fail_msg("%s: copies %s\nelement by element %s", name, fast, slow);
    free(fast);
    free(slow);
}

static const char *const syms[3] = {"a", "b", "a"};

static void elementwise(void)
{
    static const char *const ops[] = {"add", "sub",  "mul",  "div", "maximum", "minimum",
                                      "where", "clamp", "exp", "silu", "pow"};
    const char *op = ops[R(11)];
    int nd1 = R(4), nd2 = R(4), nin, changed = R(4) == 0;
    int64_t s1[6], s2[6];
    for (int d = 0; d < nd1; d++)
        s1[d] = 1 + R(3);
    for (int d = 0; d < nd2; d++)
        s2[d] = 1;
    for (int d = 0; d < nd2 && d < nd1; d++) /* broadcastable: right-aligned, equal or 1 */
        s2[nd2 - 1 - d] = R(2) ? s1[nd1 - 1 - d] : 1;
    operand_t o[3];
    attrs_t A;
    attrs_init(&A, NULL);
    if (!strcmp(op, "where")) {
        operand(&o[0], "c", changed, nd1, s1);
        operand(&o[1], syms[R(3)], 0, nd2, s2);
        operand(&o[2], "b", 0, nd1, s1);
        nin = 3;
    } else if (!strcmp(op, "clamp")) {
        operand(&o[0], "a", changed, nd1, s1);
        nin = 1;
        if (R(2)) {
            operand(&o[1], "b", 0, nd2, s2);
            nin = 2;
            attrs_add(&A, "hi=3");
        } else {
            attrs_add(&A, "lo=0");
            attrs_add(&A, "hi=2");
        }
    } else if (!strcmp(op, "exp") || !strcmp(op, "silu") || !strcmp(op, "pow")) {
        operand(&o[0], "a", changed, nd1, s1);
        nin = 1;
        if (!strcmp(op, "pow"))
            attrs_add(&A, "k=%d", R(4));
    } else {
        operand(&o[0], syms[R(3)], changed, nd1, s1);
        operand(&o[1], syms[R(3)], 0, nd2, s2);
        nin = 2;
    }
    compare(op, o, nin, &A);
    attrs_clear(&A);
}

static void matmul(void)
{
    int64_t n = 1 + R(3), k = R(3), m = 1 + R(3), s1[6], s2[6];
    int b1 = R(3), b2 = R(3), nd1 = 0, nd2 = 0;
    for (int d = 0; d < b1; d++)
        s1[nd1++] = 1 + R(2);
    if (R(5))
        s1[nd1++] = n;
    s1[nd1++] = k;
    for (int d = 0; d < b2; d++)
        s2[nd2++] = R(2) ? 1 : 2;
    s2[nd2++] = k;
    if (R(5))
        s2[nd2++] = m;
    for (int d = 0; d < b1 && d < b2; d++) { /* batch dims broadcastable */
        int i1 = b1 - 1 - d, i2 = b2 - 1 - d;
        if (R(2))
            s2[i2] = s1[i1];
        else if (R(2))
            s2[i2] = 1;
        else
            s1[i1] = 1;
    }
    operand_t o[2];
    operand(&o[0], syms[R(3)], R(4) == 0, nd1, s1);
    operand(&o[1], syms[R(3)], 0, nd2, s2);
    attrs_t A;
    attrs_init(&A, NULL);
    compare("matmul", o, 2, &A);
    attrs_clear(&A);
}

static void rope(void)
{
    int64_t D = 2 * (1 + R(3)), s1[6], s2[6];
    int nd1 = 1 + R(3);
    for (int d = 0; d < nd1 - 1; d++)
        s1[d] = 1 + R(3);
    s1[nd1 - 1] = D;
    int full = R(2), nd2 = 1 + R(nd1);
    for (int d = 0; d < nd2 - 1; d++)
        s2[d] = R(2) ? 1 : s1[nd1 - nd2 + d];
    s2[nd2 - 1] = full ? D : D / 2;
    operand_t o[3];
    operand(&o[0], "a", R(4) == 0, nd1, s1);
    operand(&o[1], "c", 0, nd2, s2);
    operand(&o[2], "s", 0, nd2, s2);
    attrs_t A;
    attrs_init(&A, NULL);
    if (R(2))
        attrs_add(&A, "interleaved=1");
    compare(R(3) ? "rope" : "rope_grad", o, 3, &A);
    attrs_clear(&A);
}

static void attention(void)
{
    int64_t nb = 1 + R(2), hkv = 1 + R(2), grp = 1 + R(2), sq = 1 + R(3), sk = 1 + R(3);
    int64_t d = 1 + R(2), dv = 1 + R(2), q[6], k[6], v[6], ms[6];
    int nd = 0, nin = 3;
    if (R(2)) {
        q[nd] = k[nd] = v[nd] = nb;
        nd++;
    }
    q[nd] = hkv * grp;
    k[nd] = v[nd] = hkv;
    nd++;
    q[nd] = sq;
    k[nd] = v[nd] = sk;
    nd++;
    q[nd] = k[nd] = d;
    v[nd] = dv;
    nd++;
    operand_t o[4];
    operand(&o[0], syms[R(3)], R(4) == 0, nd, q);
    operand(&o[1], syms[R(3)], 0, nd, k);
    operand(&o[2], syms[R(3)], 0, nd, v);
    if (R(3) == 0) {
        memcpy(ms, q, sizeof ms);
        ms[nd - 1] = sk;
        if (R(2))
            ms[nd - 2] = 1;
        if (nd >= 3 && R(2))
            ms[nd - 3] = 1;
        operand(&o[3], "m", R(4) == 0, nd, ms);
        nin = 4;
    }
    attrs_t A;
    attrs_init(&A, NULL);
    if (R(2)) {
        attrs_add(&A, "causal=1");
        if (R(2))
            attrs_add(&A, "offset=%d", R(5) - 2);
    }
    if (R(2))
        attrs_add(&A, "scale=1");
    compare("attention", o, nin, &A);
    attrs_clear(&A);
}

static void gathers_and_sums(void)
{
    int nd = 1 + R(3), changed = R(4) == 0;
    int64_t s[6], t[6];
    for (int d = 0; d < nd; d++)
        s[d] = R(4);
    operand_t o[3];
    attrs_t A;
    attrs_init(&A, NULL);
    char lt[64];
    int g = R(7), nin = 1;
    operand(&o[0], "a", changed, nd, s);
    if (g == 0) {
        attrs_add(&A, "dim=%d", R(nd));
        attrs_add(&A, "before=%d", R(3));
        attrs_add(&A, "after=%d", R(3));
        compare("pad", o, 1, &A);
    } else if (g == 1) {
        int64_t rp[6];
        for (int d = 0; d < nd; d++)
            rp[d] = R(3);
        attrs_add(&A, "sizes=%s", list_text(lt, nd, rp));
        compare("repeat", o, 1, &A);
    } else if (g == 2) {
        attrs_add(&A, "dim=%d", R(nd));
        attrs_add(&A, "start=%d", R(4) - 1);
        attrs_add(&A, "end=%d", R(5));
        compare("slice", o, 1, &A);
    } else if (g == 3) {
        int dim = R(nd);
        nin = 1 + R(3);
        for (int k = 0; k < nin; k++) {
            memcpy(t, s, sizeof t);
            t[dim] = R(3);
            operand(&o[k], syms[R(3)], k == 0 && changed, nd, t);
        }
        attrs_add(&A, "dim=%d", dim);
        compare("concat", o, nin, &A);
    } else if (g == 4) {
        for (int d = 0; d < nd; d++)
            s[d] = R(2) ? 1 : 1 + R(3);
        operand(&o[0], "a", changed, nd, s);
        for (int d = 0; d < nd; d++)
            t[d] = s[d] == 1 ? 1 + R(3) : s[d];
        attrs_add(&A, "size=%s", list_text(lt, nd, t));
        compare("expand", o, 1, &A);
    } else {
        for (int d = 0; d < nd; d++)
            s[d] = 1 + R(3);
        operand(&o[0], "a", changed, nd, s);
        if (g == 5)
            attrs_add(&A, "dim=%d", R(nd));
        compare(g == 5 ? (R(2) ? "sum" : "mean") : "softmax", o, 1, &A);
    }
    attrs_clear(&A);
}

/* 300 cases of each family, from seed 1 */
static void test_trace_copies_equal_elementwise_code(void **state)
{
    (void)state;
    void (*const family[])(void) = {elementwise, matmul, rope, attention, gathers_and_sums};
    rng = 1;
    for (int i = 0; i < 300; i++)
        for (size_t f = 0; f < sizeof family / sizeof family[0]; f++)
            family[f]();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_copies_equal_elementwise_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
