/* fuzz_engine.c: libFuzzer harness on the engine API: random DAGs from a byte program, sp_equiv. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arb.h>

#include "eval.h"
#include "exprgen.h"
#include "smt2.h"
#include "solver.h"

/*
 * The input is a program for a stack machine that builds expressions over x0..x5 with every
 * operator of expr.h, shares subterms (dup, pick), and can push rewrites (equal by construction)
 * and perturbations of the top (exprgen.c), so that equal pairs and near misses are common.
 * Byte 0 holds flags, bytes 1..4 a seed; then one instruction per byte, operands in the next
 * bytes (a missing byte reads as 0).  The two top entries are compared under tight limits.
 *
 * Properties (abort on violation, so libFuzzer keeps the input):
 *  - sp_equiv never crashes, leaks or overruns its time limit by far;
 *  - DIFFERENT: the counterexample re-certifies with sp_eval_certify_differ;
 *  - EQUAL: at a few rational points, both sides defined and certainly different never happens
 *    (exact evaluation, or 128-bit Arb balls when a value is transcendental).
 */

#define STACK_CAP 48
#define MAX_STEPS 400

typedef struct {
    const uint8_t *p;
    size_t n, i;
} rd_t;

static uint8_t next(rd_t *r) { return r->i < r->n ? r->p[r->i++] : 0; }

static const sp_op_t unary_ops[] = {SP_OP_NEG,  SP_OP_EXP,     SP_OP_LOG,  SP_OP_SQRT,
                                    SP_OP_RSQRT, SP_OP_TANH,   SP_OP_SIGMOID, SP_OP_SILU,
                                    SP_OP_GELU, SP_OP_ERF,     SP_OP_RELU, SP_OP_ABS};
static const sp_op_t nary_ops[] = {SP_OP_ADD, SP_OP_MUL, SP_OP_MAX, SP_OP_MIN};

static void die(const char *what, const sp_ectx_struct *E, sp_expr_t a, sp_expr_t b,
                const fmpq *vals)
{
    char *sa = sp_expr_print(E, a, 4000), *sb = sp_expr_print(E, b, 4000);
    fprintf(stderr, "fuzz_engine: %s\n  lhs: %s\n  rhs: %s\n", what, sa, sb);
    if (vals != NULL)
        for (uint32_t s = 0; s < E->nsyms; s++) {
            char *v = fmpq_get_str(NULL, 10, vals + s);
            fprintf(stderr, "  %s = %s\n", E->names[s], v);
            flint_free(v);
        }
    flint_free(sa);
    flint_free(sb);
    abort();
}

static void check_different(sp_engine_t *S, sp_expr_t a, sp_expr_t b, const sp_result_t *res)
{
    sp_ectx_struct *E = sp_engine_exprs(S);
    slong ns = E->nsyms ? E->nsyms : 1;
    fmpq *vals = _fmpq_vec_init(ns);
    for (slong i = 0; i < res->cex.n; i++)
        fmpq_set(vals + E->nodes[res->cex.syms[i]].param, res->cex.vals + i);
    if (!sp_eval_certify_differ(E, a, b, vals, NULL, NULL, NULL))
        die("DIFFERENT, but the counterexample does not re-certify", E, a, b, vals);
    if (res->cex.lhs_value == NULL || res->cex.rhs_value == NULL)
        die("DIFFERENT without printed values", E, a, b, vals);
    _fmpq_vec_clear(vals, ns);
}

static void check_equal(sp_engine_t *S, sp_expr_t a, sp_expr_t b, xg_rng_t *rng)
{
    sp_ectx_struct *E = sp_engine_exprs(S);
    if (a == b)
        return;
    slong ns = E->nsyms ? E->nsyms : 1;
    fmpq *vals = _fmpq_vec_init(ns);
    for (int p = 0; p < 4; p++) {
        xg_point(rng, vals, E->nsyms);
        if (xg_differ_at(E, a, b, vals, 128) == 1)
            die("EQUAL, but the sides differ at a point", E, a, b, vals);
    }
    _fmpq_vec_clear(vals, ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5 || size > 4096)
        return 0;
    rd_t r = {data, size, 0};
    uint8_t flags = next(&r);
    uint64_t seed = 0;
    for (int k = 0; k < 4; k++)
        seed = (seed << 8) | next(&r);

    sp_limits_t lim;
    sp_limits_default(&lim);
    lim.max_terms = 200;
    lim.max_degree = 32;
    lim.max_splits = 32;
    lim.max_ms = 200;
    lim.max_nodes = 6000;
    lim.cex_tries = 24;
    sp_engine_t *S = sp_engine_new(&lim, seed);
    sp_ectx_struct *E = sp_engine_exprs(S);
    xg_t g;
    xg_init(&g, E, seed ^ UINT64_C(0x5deece66d));
    g.fam = XG_ALL | ((flags & 4) ? XG_HARD : 0);
    g.nvars = 1 + (flags >> 5) % 6;
    g.max_cone = 300;

    sp_expr_t st[STACK_CAP];
    int sp = 0;
#define POP() (sp > 0 ? st[--sp] : g.sym[next(&r) % XG_MAXSYMS])
#define PUSH(x)                                                                                    \
    do {                                                                                           \
        sp_expr_t v_ = (x);                                                                        \
        if (v_ != SP_EXPR_NONE) {                                                                  \
            if (sp == STACK_CAP) {                                                                 \
                memmove(st, st + 1, (STACK_CAP - 1) * sizeof(sp_expr_t));                          \
                sp--;                                                                              \
            }                                                                                      \
            st[sp++] = v_;                                                                         \
        }                                                                                          \
    } while (0)

    for (int steps = 0; r.i < r.n && steps < MAX_STEPS && !E->oom; steps++) {
        uint8_t ins = next(&r);
        switch (ins % 16) {
        case 0: PUSH(g.sym[next(&r) % XG_MAXSYMS]); break;
        case 1: {
            uint8_t v = next(&r);
            slong num = (slong)(v % 17) - 8;
            ulong den = 1 + (v >> 4) % 4;
            if (v == 0xff)
                num = 1000003; /* a large constant now and then */
            PUSH(sp_expr_const_si(E, num, den));
            break;
        }
        case 2: {
            sp_op_t op = unary_ops[next(&r) % (sizeof unary_ops / sizeof unary_ops[0])];
            sp_expr_t a = POP();
            PUSH(sp_expr_unary(E, op, a));
            break;
        }
        case 3: {
            uint8_t v = next(&r);
            slong k = (slong)(v % 9) - 4;
            if (v >= 0xf8)
                k = (v & 1) ? 63 : -33;
            sp_expr_t a = POP();
            PUSH(sp_expr_pow(E, a, k));
            break;
        }
        case 4: {
            sp_expr_t b = POP(), a = POP();
            PUSH(sp_expr_binary(E, (next(&r) & 1) ? SP_OP_DIV : SP_OP_SUB, a, b));
            break;
        }
        case 5: {
            uint8_t v = next(&r);
            sp_op_t op = nary_ops[v % 4];
            uint32_t n = 2 + (v >> 2) % 3;
            sp_expr_t args[4];
            for (uint32_t k = 0; k < n; k++)
                args[k] = POP();
            PUSH(sp_expr_nary(E, op, args, n));
            break;
        }
        case 6: {
            sp_expr_t b = POP(), a = POP();
            PUSH(sp_expr_cmp(E, (sp_cmp_t)(next(&r) % 6), a, b));
            break;
        }
        case 7: {
            sp_expr_t c = POP(), b = POP(), a = POP();
            PUSH(sp_expr_where(E, a, b, c));
            break;
        }
        case 8: {
            sp_expr_t c = POP(), b = POP(), a = POP();
            PUSH(sp_expr_clamp(E, a, b, c));
            break;
        }
        case 9:
            if (sp > 0)
                PUSH(st[sp - 1]);
            break;
        case 10:
            if (sp > 0)
                PUSH(st[next(&r) % sp]);
            break;
        case 11:
            if (sp > 1) {
                sp_expr_t t = st[sp - 1];
                st[sp - 1] = st[sp - 2];
                st[sp - 2] = t;
            }
            break;
        case 12: /* rewrite the top in place (equal by construction) */
        case 13: /* push a rewritten copy of the top */
            if (sp > 0) {
                g.rng.s ^= (uint64_t)next(&r) << 17;
                sp_expr_t e = xg_rewrite(&g, st[sp - 1], 1 + next(&r) % 3);
                if (e != SP_EXPR_NONE) {
                    if (ins % 16 == 12)
                        st[sp - 1] = e;
                    else
                        PUSH(e);
                }
            }
            break;
        case 14: /* push a perturbed copy of the top */
            if (sp > 0) {
                g.rng.s ^= (uint64_t)next(&r) << 23;
                PUSH(xg_perturb(&g, st[sp - 1]));
            }
            break;
        default: { /* a softmax-family template: pushes both sides */
            g.rng.s ^= (uint64_t)next(&r) << 29;
            sp_expr_t a, b;
            xg_template(&g, &a, &b, next(&r) & 1);
            PUSH(a);
            PUSH(b);
            break;
        }
        }
    }
    while (sp < 2)
        PUSH(g.sym[sp]);

    xg_rng_t prng = {seed * 31 + size};
    sp_result_t res;
    sp_result_init(&res);
    if ((flags & 3) == 3 && sp >= 4) {
        /* a vector query over the stack: (st[0], st[1]), (st[2], st[3]), ... */
        size_t n = (size_t)sp / 2;
        sp_expr_t a[STACK_CAP / 2], b[STACK_CAP / 2];
        for (size_t k = 0; k < n; k++) {
            a[k] = st[2 * k];
            b[k] = st[2 * k + 1];
        }
        sp_answer_t ans = sp_equiv_vec(S, a, b, n, &res);
        size_t upto = ans == SP_EQUAL ? n : (size_t)(res.index >= 0 ? res.index : 0);
        if (ans != SP_EQUAL && (res.index < 0 || (size_t)res.index >= n))
            die("sp_equiv_vec: not EQUAL but no valid index", E, a[0], b[0], NULL);
        for (size_t k = 0; k < upto; k++)
            check_equal(S, a[k], b[k], &prng);
        if (ans == SP_DIFFERENT)
            check_different(S, a[res.index], b[res.index], &res);
    } else {
        sp_expr_t a = st[sp - 2], b = st[sp - 1];
        sp_answer_t ans = sp_equiv(S, a, b, &res);
        if (getenv("SP_FUZZ_VERBOSE") != NULL) {
            char *sa = sp_expr_print(E, a, 400), *sb = sp_expr_print(E, b, 400);
            fprintf(stderr, "fuzz_engine: %s (%s)\n  lhs: %s\n  rhs: %s\n",
                    ans == SP_EQUAL ? "EQUAL" : ans == SP_DIFFERENT ? "DIFFERENT" : "UNKNOWN",
                    sp_why_name(res.why), sa, sb);
            flint_free(sa);
            flint_free(sb);
        }
        if (ans == SP_DIFFERENT)
            check_different(S, a, b, &res);
        else if (ans == SP_EQUAL)
            check_equal(S, a, b, &prng);
        if (flags & 8) {
            /* the same query again (normal forms cached now): EQUAL must stay EQUAL */
            sp_result_t r2;
            sp_result_init(&r2);
            sp_answer_t again = sp_equiv(S, b, a, &r2);
            if (again == SP_DIFFERENT)
                check_different(S, b, a, &r2);
            if ((again == SP_DIFFERENT && ans == SP_EQUAL) || (again == SP_EQUAL && ans == SP_DIFFERENT))
                die("sp_equiv(a,b) and sp_equiv(b,a) contradict each other", E, a, b, NULL);
            sp_result_clear(&r2);
        }
        if (flags & 16) {
            char *t = sp_engine_print_nf(S, a, 300);
            flint_free(t);
            t = sp_expr_print(E, b, 120);
            flint_free(t);
            t = sp_smt2_query(E, &a, &b, 1);
            flint_free(t);
        }
    }
    sp_result_clear(&res);
    sp_engine_free(S);
    return 0;
}
