/* ref_val.c: the reference executor's scalars (exact rationals, Arb balls, taints) and tape. */
#include <stdlib.h>
#include <string.h>

#include <arb_hypgeom.h>
#include <arf.h>

#include "ref_int.h"

/* ---- values ------------------------------------------------------------------------------ */

void rv_init(rv_t *v)
{
    v->ball = 0;
    v->taint = 0;
    fmpq_init(&v->q);
    arb_init(&v->b);
}

void rv_clear(rv_t *v)
{
    fmpq_clear(&v->q);
    arb_clear(&v->b);
}

void rv_set(rv_t *r, const rv_t *s)
{
    if (r == s)
        return;
    r->ball = s->ball;
    r->taint = s->taint;
    if (s->ball)
        arb_set(&r->b, &s->b);
    else
        fmpq_set(&r->q, &s->q);
}

void rv_set_si(rv_t *r, slong p, ulong q)
{
    r->ball = 0;
    r->taint = 0;
    fmpq_set_si(&r->q, p, q);
}

void rv_set_fmpq(rv_t *r, const fmpq_t q)
{
    r->ball = 0;
    r->taint = 0;
    fmpq_set(&r->q, q);
}

void rv_bad(rv_t *r, int taint)
{
    r->ball = 0;
    r->taint = (uint8_t)taint;
    fmpq_zero(&r->q);
}

int rv_is_zero(const rv_t *v) { return !v->taint && !v->ball && fmpq_is_zero(&v->q); }

static void ball_of(arb_t r, const rv_t *v, slong prec)
{
    if (v->ball)
        arb_set(r, &v->b);
    else
        arb_set_fmpq(r, &v->q, prec);
}

/* v's ball itself, or v's rational converted into tmp */
static const arb_struct *ball_ptr(const rv_t *v, arb_t tmp, slong prec)
{
    if (v->ball)
        return &v->b;
    arb_set_fmpq(tmp, &v->q, prec);
    return tmp;
}

/* r = the ball x (taken), as the rational it is when its radius is 0 (a modest exponent). */
static void from_ball(rv_t *r, arb_t x)
{
    r->taint = 0;
    if (arb_is_exact(x) && arf_is_finite(arb_midref(x)) &&
        (arf_is_zero(arb_midref(x)) || (fmpz_cmp_si(ARF_EXPREF(arb_midref(x)), 4096) < 0 &&
                                         fmpz_cmp_si(ARF_EXPREF(arb_midref(x)), -4096) > 0))) {
        arf_get_fmpq(&r->q, arb_midref(x));
        r->ball = 0;
        return;
    }
    if (!arb_is_finite(x)) { /* an overflow of the exponent range: nothing is known */
        rv_bad(r, RT_UNDEC);
        return;
    }
    arb_swap(&r->b, x);
    r->ball = 1;
}

static int is_q(const rv_t *v, slong p, ulong q)
{
    return !v->ball && fmpz_equal_si(fmpq_numref(&v->q), p) && fmpz_equal_ui(fmpq_denref(&v->q), q);
}

enum { B_ADD, B_SUB, B_MUL, B_DIV };

static void rv_bin(rv_t *r, int op, const rv_t *a, const rv_t *b, slong prec)
{
    int t = a->taint | b->taint;
    if (t) {
        rv_bad(r, t);
        return;
    }
    if (op == B_DIV && !b->ball && fmpq_is_zero(&b->q)) {
        rv_bad(r, RT_UNDEF);
        return;
    }
    if (op == B_MUL && (is_q(a, 0, 1) || is_q(b, 0, 1))) {
        rv_set_si(r, 0, 1);
        return;
    }
    if (!a->ball && !b->ball) {
        if (op == B_ADD)
            fmpq_add(&r->q, &a->q, &b->q);
        else if (op == B_SUB)
            fmpq_sub(&r->q, &a->q, &b->q);
        else if (op == B_MUL)
            fmpq_mul(&r->q, &a->q, &b->q);
        else
            fmpq_div(&r->q, &a->q, &b->q);
        r->ball = 0;
        r->taint = 0;
        return;
    }
    arb_t ta, tb, z;
    arb_init(ta);
    arb_init(tb);
    arb_init(z);
    const arb_struct *x = ball_ptr(a, ta, prec), *y = ball_ptr(b, tb, prec);
    if (op == B_ADD)
        arb_add(z, x, y, prec);
    else if (op == B_SUB)
        arb_sub(z, x, y, prec);
    else if (op == B_MUL)
        arb_mul(z, x, y, prec);
    else if (arb_contains_zero(y)) {
        rv_bad(r, arb_is_zero(y) ? RT_UNDEF : RT_UNDEC);
        goto done;
    } else
        arb_div(z, x, y, prec);
    from_ball(r, z);
done:
    arb_clear(ta);
    arb_clear(tb);
    arb_clear(z);
}

void rv_add(rv_t *r, const rv_t *a, const rv_t *b, slong prec) { rv_bin(r, B_ADD, a, b, prec); }
void rv_sub(rv_t *r, const rv_t *a, const rv_t *b, slong prec) { rv_bin(r, B_SUB, a, b, prec); }
void rv_mul(rv_t *r, const rv_t *a, const rv_t *b, slong prec) { rv_bin(r, B_MUL, a, b, prec); }
void rv_div(rv_t *r, const rv_t *a, const rv_t *b, slong prec) { rv_bin(r, B_DIV, a, b, prec); }

void rv_pow(rv_t *r, const rv_t *x, slong k, slong prec)
{
    if (x->taint) {
        rv_bad(r, x->taint);
        return;
    }
    if (!x->ball) {
        if (k < 0 && fmpq_is_zero(&x->q))
            rv_bad(r, RT_UNDEF);
        else {
            fmpq_pow_si(&r->q, &x->q, k);
            r->ball = 0;
            r->taint = 0;
        }
        return;
    }
    arb_t y;
    arb_init(y);
    if (k < 0 && arb_contains_zero(&x->b))
        rv_bad(r, RT_UNDEC);
    else {
        arb_pow_ui(y, &x->b, (ulong)(k < 0 ? -k : k), prec);
        if (k < 0)
            arb_inv(y, y, prec);
        from_ball(r, y);
    }
    arb_clear(y);
}

int rv_cmp(const rv_t *a, const rv_t *b, slong prec)
{
    if (a->taint || b->taint)
        return 2;
    if (!a->ball && !b->ball) {
        int c = fmpq_cmp(&a->q, &b->q);
        return c < 0 ? -1 : c > 0;
    }
    arb_t x, y;
    arb_init(x);
    arb_init(y);
    ball_of(x, a, prec);
    ball_of(y, b, prec);
    arb_sub(x, x, y, prec);
    int c = arb_is_positive(x) ? 1 : arb_is_negative(x) ? -1 : arb_is_zero(x) ? 0 : 2;
    arb_clear(x);
    arb_clear(y);
    return c;
}

void rv_max(rv_t *r, const rv_t *a, const rv_t *b, int is_max, slong prec)
{
    int c = rv_cmp(a, b, prec);
    if (a->taint || b->taint) {
        rv_bad(r, a->taint | b->taint);
        return;
    }
    if (c != 2) {
        rv_set(r, (c >= 0) == (is_max != 0) ? a : b);
        return;
    }
    arb_t x, y; /* undecided: an enclosure of the extremum (its value is still certain) */
    arb_init(x);
    arb_init(y);
    ball_of(x, a, prec);
    ball_of(y, b, prec);
    if (is_max)
        arb_max(x, x, y, prec);
    else
        arb_min(x, x, y, prec);
    from_ball(r, x);
    arb_clear(x);
    arb_clear(y);
}

/* Unary operators.  Domain: log x > 0, sqrt x >= 0, rsqrt x > 0; outside UNDEF, undecidable
   on a ball UNDEC.  Exact results where the value is rational (exp 0, sigmoid 0, exact balls). */
static void rv_unary(rv_t *r, rop_t op, const rv_t *x, slong prec)
{
    if (x->taint) {
        rv_bad(r, x->taint);
        return;
    }
    int zero = is_q(x, 0, 1);
    if (op == RO_NEG || op == RO_ABS || op == RO_RELU) {
        if (!x->ball) {
            if (op == RO_NEG)
                fmpq_neg(&r->q, &x->q);
            else if (op == RO_ABS)
                fmpq_abs(&r->q, &x->q);
            else if (fmpq_sgn(&x->q) < 0)
                fmpq_zero(&r->q);
            else
                fmpq_set(&r->q, &x->q);
            r->ball = 0;
            r->taint = 0;
            return;
        }
    }
    if (zero && op != RO_EXP && op != RO_LOG && op != RO_RSQRT && op != RO_SIGMOID) {
        rv_set_si(r, 0, 1); /* sqrt tanh silu gelu erf (and neg abs relu) of 0 */
        return;
    }
    if (zero && op == RO_EXP) {
        rv_set_si(r, 1, 1);
        return;
    }
    if (zero && op == RO_SIGMOID) {
        rv_set_si(r, 1, 2);
        return;
    }
    if (op == RO_LOG && is_q(x, 1, 1)) {
        rv_set_si(r, 0, 1);
        return;
    }
    if ((op == RO_SQRT || op == RO_RSQRT) && !x->ball && fmpq_sgn(&x->q) > 0 &&
        fmpz_is_square(fmpq_numref(&x->q)) && fmpz_is_square(fmpq_denref(&x->q))) {
        fmpq_t t; /* a square: exact */
        fmpq_init(t);
        fmpz_sqrt(fmpq_numref(t), fmpq_numref(&x->q));
        fmpz_sqrt(fmpq_denref(t), fmpq_denref(&x->q));
        if (op == RO_RSQRT)
            fmpq_inv(t, t);
        rv_set_fmpq(r, t);
        fmpq_clear(t);
        return;
    }
    arb_t y, t;
    arb_init(y);
    arb_init(t);
    ball_of(y, x, prec);
    int bad = 0;
    if (op == RO_LOG || op == RO_RSQRT)
        bad = arb_is_positive(y) ? 0 : arb_is_nonpositive(y) ? RT_UNDEF : RT_UNDEC;
    else if (op == RO_SQRT)
        bad = arb_is_nonnegative(y) ? 0 : arb_is_negative(y) ? RT_UNDEF : RT_UNDEC;
    if (bad) {
        rv_bad(r, bad);
        goto done;
    }
    switch (op) {
    case RO_NEG: arb_neg(y, y); break;
    case RO_ABS: arb_abs(y, y); break;
    case RO_RELU:
        arb_zero(t);
        arb_max(y, y, t, prec);
        break;
    case RO_EXP: arb_exp(y, y, prec); break;
    case RO_LOG: arb_log(y, y, prec); break;
    case RO_SQRT: arb_sqrt(y, y, prec); break;
    case RO_RSQRT: arb_rsqrt(y, y, prec); break;
    case RO_TANH: arb_tanh(y, y, prec); break;
    case RO_SIGMOID: /* 1 / (1 + exp(-x)) */
        arb_neg(y, y);
        arb_exp(y, y, prec);
        arb_add_ui(y, y, 1, prec);
        arb_inv(y, y, prec);
        break;
    case RO_SILU: /* x / (1 + exp(-x)) */
        arb_neg(t, y);
        arb_exp(t, t, prec);
        arb_add_ui(t, t, 1, prec);
        arb_div(y, y, t, prec);
        break;
    case RO_GELU: /* x/2 (1 + erf(x / sqrt 2)), the exact (erf) form */
        arb_sqrt_ui(t, 2, prec);
        arb_div(t, y, t, prec);
        arb_hypgeom_erf(t, t, prec);
        arb_add_ui(t, t, 1, prec);
        arb_mul(y, y, t, prec);
        arb_mul_2exp_si(y, y, -1);
        break;
    case RO_ERF: arb_hypgeom_erf(y, y, prec); break;
    default: break;
    }
    from_ball(r, y);
done:
    arb_clear(y);
    arb_clear(t);
}

/* d op(x)/dx at x with y = op(x), for the smooth unary operators. */
static void rv_deriv(rv_t *r, rop_t op, const rv_t *x, const rv_t *y, slong prec)
{
    rv_t t, u;
    rv_init(&t);
    rv_init(&u);
    switch (op) {
    case RO_EXP: rv_set(r, y); break;
    case RO_LOG:
        rv_set_si(&t, 1, 1);
        rv_div(r, &t, x, prec);
        break;
    case RO_SQRT: /* 1 / (2 y): undefined at 0 */
        rv_set_si(&t, 2, 1);
        rv_mul(&t, &t, y, prec);
        rv_set_si(&u, 1, 1);
        rv_div(r, &u, &t, prec);
        break;
    case RO_RSQRT: /* -y / (2 x) */
        rv_set_si(&t, -2, 1);
        rv_mul(&t, &t, x, prec);
        rv_div(r, y, &t, prec);
        break;
    case RO_TANH: /* 1 - y^2 */
        rv_mul(&t, y, y, prec);
        rv_set_si(&u, 1, 1);
        rv_sub(r, &u, &t, prec);
        break;
    case RO_SIGMOID: /* y (1 - y) */
        rv_set_si(&u, 1, 1);
        rv_sub(&t, &u, y, prec);
        rv_mul(r, y, &t, prec);
        break;
    case RO_SILU: /* s (1 + x (1 - s)) with s = sigmoid(x) */
        rv_unary(&t, RO_SIGMOID, x, prec);
        rv_set_si(&u, 1, 1);
        rv_sub(&u, &u, &t, prec);
        rv_mul(&u, &u, x, prec);
        rv_set_si(r, 1, 1);
        rv_add(&u, &u, r, prec);
        rv_mul(r, &t, &u, prec);
        break;
    case RO_GELU:
    case RO_ERF: {
        if (x->taint) {
            rv_bad(r, x->taint);
            break;
        }
        /* erf' = 2/sqrt(pi) exp(-x^2); gelu' = Phi(x) + x exp(-x^2/2) / sqrt(2 pi) */
        arb_t a, b, c;
        arb_init(a);
        arb_init(b);
        arb_init(c);
        ball_of(a, x, prec);
        arb_mul(b, a, a, prec);
        arb_neg(b, b);
        if (op == RO_GELU)
            arb_mul_2exp_si(b, b, -1);
        arb_exp(b, b, prec);
        arb_const_pi(c, prec);
        if (op == RO_ERF) {
            arb_sqrt(c, c, prec);
            arb_div(b, b, c, prec);
            arb_mul_2exp_si(b, b, 1);
        } else {
            arb_mul_2exp_si(c, c, 1);
            arb_sqrt(c, c, prec);
            arb_div(b, b, c, prec);
            arb_mul(b, b, a, prec); /* x phi(x) */
            arb_sqrt_ui(c, 2, prec);
            arb_div(c, a, c, prec);
            arb_hypgeom_erf(c, c, prec);
            arb_add_ui(c, c, 1, prec);
            arb_mul_2exp_si(c, c, -1); /* Phi(x) */
            arb_add(b, b, c, prec);
        }
        from_ball(r, b);
        arb_clear(a);
        arb_clear(b);
        arb_clear(c);
        break;
    }
    default: rv_set_si(r, 0, 1); break;
    }
    rv_clear(&t);
    rv_clear(&u);
}

char *rv_str(const rv_t *v)
{
    const char *t = (v->taint & RT_UNDEF) ? "undefined" : (v->taint & RT_UNDEC) ? "undecided"
                  : v->taint ? "tie (convention-dependent derivative)" : NULL;
    char *f = t ? NULL : v->ball ? arb_get_str(&v->b, 30, 0) : fmpq_get_str(NULL, 10, &v->q);
    char *s = strdup(t ? t : f);
    flint_free(f);
    return s;
}

/* ---- the store ----------------------------------------------------------------------------- */

int rs_charge(rstore_t *S, long long bytes)
{
    if (S->mem == NULL)
        return 0;
    if (bytes <= 0 || S->reserve >= bytes) { /* a local reserve saves most atomic operations */
        S->reserve -= bytes;
        if (S->reserve > (4LL << 20)) {
            atomic_fetch_sub(&S->mem->used, S->reserve - (1LL << 20));
            S->reserve = 1LL << 20;
        }
        return 0;
    }
    long long chunk = bytes > (1LL << 20) ? bytes : 1LL << 20;
    long long u = atomic_fetch_add(&S->mem->used, chunk) + chunk;
    S->reserve += chunk - bytes;
    if (u > S->mem->max) {
        S->over = 1;
        return -1;
    }
    return 0;
}

static uint32_t rs_new(rstore_t *S, rop_t op, uint32_t nargs);

void rs_init(rstore_t *S, slong prec, rmem_t *mem)
{
    memset(S, 0, sizeof(*S));
    S->prec = prec;
    S->mem = mem;
    rs_new(S, RO_LEAF, 0); /* node 0: the constant 0 */
}

void rs_truncate(rstore_t *S, size_t len)
{
    if (len < 1 || len >= S->len)
        return;
    for (size_t i = len; i < S->len; i++)
        rv_clear(&S->n[i].v);
    size_t alen = S->n[len].arg;
    rs_charge(S, -(long long)((S->len - len) * sizeof(rnode_t) + (S->alen - alen) * 4));
    S->len = len;
    S->alen = alen;
}

void rs_clear(rstore_t *S)
{
    for (size_t i = 0; i < S->len; i++)
        rv_clear(&S->n[i].v);
    rs_charge(S, -(long long)(S->len * sizeof(rnode_t) + S->alen * 4));
    if (S->mem)
        atomic_fetch_sub(&S->mem->used, S->reserve);
    free(S->n);
    free(S->a);
    memset(S, 0, sizeof(*S));
}

/* *p (cap elements of size sz) made room for need elements, doubling; 0 or -1 */
static int grow(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * sz);
    if (q == NULL)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* A new node with room for nargs arguments (set by the caller); 0 when over budget. */
static uint32_t rs_new(rstore_t *S, rop_t op, uint32_t nargs)
{
    if (S->over && S->len > 0)
        return 0;
    if (S->len >= UINT32_MAX - 1 || rs_charge(S, (long long)(sizeof(rnode_t) + 4 * (size_t)nargs)) < 0) {
        S->over = 1;
        return 0;
    }
    if (grow((void **)&S->n, &S->cap, S->len + 1, sizeof(rnode_t)) < 0 ||
        grow((void **)&S->a, &S->acap, S->alen + nargs, sizeof(uint32_t)) < 0) {
        S->over = 1;
        return 0;
    }
    rnode_t *n = &S->n[S->len];
    rv_init(&n->v);
    n->op = (uint8_t)op;
    n->nargs = nargs;
    n->arg = S->alen;
    n->k = 0;
    S->alen += nargs;
    return (uint32_t)S->len++;
}

uint32_t rs_leaf(rstore_t *S, const rv_t *v)
{
    uint32_t id = rs_new(S, RO_LEAF, 0);
    if (id)
        rv_set(&S->n[id].v, v);
    return id;
}

uint32_t rs_leaf_of(rstore_t *S, uint32_t src)
{
    rv_t t; /* a copy first: creating the node may move the store */
    rv_init(&t);
    rv_set(&t, rs_val(S, src));
    uint32_t id = rs_leaf(S, &t);
    rv_clear(&t);
    return id;
}

uint32_t rs_constq(rstore_t *S, const fmpq_t q)
{
    uint32_t id = rs_new(S, RO_LEAF, 0);
    if (id)
        rv_set_fmpq(&S->n[id].v, q);
    return id;
}

uint32_t rs_const(rstore_t *S, slong p, ulong q)
{
    uint32_t id = rs_new(S, RO_LEAF, 0);
    if (id)
        rv_set_si(&S->n[id].v, p, q);
    return id;
}

/* The value of node id from its arguments. */
static void rs_eval(rstore_t *S, uint32_t id)
{
    rnode_t *n = &S->n[id];
    const uint32_t *a = S->a + n->arg;
    rv_t *r = &n->v;
    slong prec = S->prec;
    switch ((rop_t)n->op) {
    case RO_LEAF: break;
    case RO_COPY: rv_set(r, rs_val(S, a[0])); break;
    case RO_ADD:
        rv_set_si(r, 0, 1);
        for (uint32_t i = 0; i < n->nargs; i++)
            rv_add(r, r, rs_val(S, a[i]), prec);
        break;
    case RO_SUB: rv_sub(r, rs_val(S, a[0]), rs_val(S, a[1]), prec); break;
    case RO_MUL: rv_mul(r, rs_val(S, a[0]), rs_val(S, a[1]), prec); break;
    case RO_DIV: rv_div(r, rs_val(S, a[0]), rs_val(S, a[1]), prec); break;
    case RO_DOT: {
        int t = 0, ball = 0;
        for (uint32_t i = 0; i < n->nargs; i++) {
            t |= rs_val(S, a[i])->taint;
            ball |= rs_val(S, a[i])->ball;
        }
        if (t) {
            rv_bad(r, t);
            break;
        }
        if (!ball) {
            fmpq_t acc;
            fmpq_init(acc);
            for (uint32_t i = 0; i < n->nargs; i += 2) {
                const rv_t *u = rs_val(S, a[i]), *v = rs_val(S, a[i + 1]);
                fmpq_addmul(acc, &u->q, &v->q);
            }
            fmpq_swap(acc, &r->q);
            fmpq_clear(acc);
            break;
        }
        arb_t s, x, y;
        arb_init(s);
        arb_init(x);
        arb_init(y);
        for (uint32_t i = 0; i < n->nargs; i += 2) {
            const rv_t *u = rs_val(S, a[i]), *v = rs_val(S, a[i + 1]);
            if (is_q(u, 0, 1) || is_q(v, 0, 1))
                continue;
            arb_addmul(s, ball_ptr(u, x, prec), ball_ptr(v, y, prec), prec);
        }
        from_ball(r, s);
        arb_clear(s);
        arb_clear(x);
        arb_clear(y);
        break;
    }
    case RO_MAX:
    case RO_MIN:
        rv_set(r, rs_val(S, a[0]));
        for (uint32_t i = 1; i < n->nargs; i++)
            rv_max(r, r, rs_val(S, a[i]), n->op == RO_MAX, prec);
        break;
    case RO_POW: rv_pow(r, rs_val(S, a[0]), n->k, prec); break;
    default: rv_unary(r, (rop_t)n->op, rs_val(S, a[0]), prec); break;
    }
}

uint32_t rs_op(rstore_t *S, rop_t op, const uint32_t *args, uint32_t n)
{
    uint32_t id = rs_new(S, op, n);
    if (id == 0)
        return 0;
    if (n > 0) /* a sum over no element has no arguments (args may be NULL) */
        memcpy(S->a + S->n[id].arg, args, n * sizeof(uint32_t));
    rs_eval(S, id);
    return id;
}

uint32_t rs_op1(rstore_t *S, rop_t op, uint32_t x) { return rs_op(S, op, &x, 1); }

uint32_t rs_op2(rstore_t *S, rop_t op, uint32_t x, uint32_t y)
{
    uint32_t a[2] = {x, y};
    return rs_op(S, op, a, 2);
}

uint32_t rs_pow(rstore_t *S, uint32_t x, slong k)
{
    uint32_t id = rs_new(S, RO_POW, 1);
    if (id == 0)
        return 0;
    S->a[S->n[id].arg] = x;
    S->n[id].k = k;
    rs_eval(S, id);
    return id;
}

uint32_t rs_cmp(rstore_t *S, int cmp, uint32_t a, uint32_t b)
{
    const rv_t *x = rs_val(S, a), *y = rs_val(S, b);
    int t = x->taint | y->taint;
    int c = a == b ? 0 : rv_cmp(x, y, S->prec);
    rv_t r;
    rv_init(&r);
    if (t)
        rv_bad(&r, t);
    else if (c == 2)
        rv_bad(&r, RT_UNDEC);
    else {
        static const int8_t truth[6][3] = {{1, 0, 0}, {1, 1, 0}, {0, 0, 1},
                                           {0, 1, 1}, {0, 1, 0}, {1, 0, 1}};
        rv_set_si(&r, truth[cmp][c + 1], 1);
    }
    uint32_t id = rs_leaf(S, &r);
    rv_clear(&r);
    return id;
}

uint32_t rs_where(rstore_t *S, uint32_t c, uint32_t a, uint32_t b)
{
    const rv_t *v = rs_val(S, c);
    int t = v->taint;
    if (!t && !v->ball)
        return fmpq_is_zero(&v->q) ? b : a;
    if (!t)
        t = arb_is_nonzero(&v->b) ? 0 : RT_UNDEC; /* an exact zero is never a ball */
    if (!t)
        return a;
    uint32_t id = rs_op1(S, RO_COPY, a);
    if (id)
        rv_bad(&S->n[id].v, t);
    return id;
}

/* ---- the reverse sweep ---------------------------------------------------------------------- */

/* adj[j] += g * p (p NULL: 1; neg: subtract). */
static void acc(rv_t *adj, size_t from, uint32_t j, const rv_t *g, const rv_t *p, int neg,
                rv_t *tmp, slong prec)
{
    if (j < from)
        return;
    if (p != NULL) {
        rv_mul(tmp, g, p, prec);
        g = tmp;
    }
    if (neg)
        rv_sub(&adj[j - from], &adj[j - from], g, prec);
    else
        rv_add(&adj[j - from], &adj[j - from], g, prec);
}

/* A derivative 1 with taint t (or exactly 1 / 0 when t == 0). */
static void piece(rv_t *p, int one, int t)
{
    if (t)
        rv_bad(p, t);
    else
        rv_set_si(p, one, 1);
}

int rs_sweep(rstore_t *S, size_t from, rv_t *adj)
{
    slong prec = S->prec;
    rv_t p, tmp;
    rv_init(&p);
    rv_init(&tmp);
    for (size_t i = S->len; i-- > from;) {
        const rv_t *g = &adj[i - from];
        if (rv_is_zero(g))
            continue;
        const rnode_t *n = &S->n[i];
        const uint32_t *a = S->a + n->arg;
        switch ((rop_t)n->op) {
        case RO_LEAF: break;
        case RO_COPY:
        case RO_ADD:
            for (uint32_t k = 0; k < n->nargs; k++)
                acc(adj, from, a[k], g, NULL, 0, &tmp, prec);
            break;
        case RO_SUB:
            acc(adj, from, a[0], g, NULL, 0, &tmp, prec);
            acc(adj, from, a[1], g, NULL, 1, &tmp, prec);
            break;
        case RO_NEG: acc(adj, from, a[0], g, NULL, 1, &tmp, prec); break;
        case RO_MUL:
            acc(adj, from, a[0], g, rs_val(S, a[1]), 0, &tmp, prec);
            acc(adj, from, a[1], g, rs_val(S, a[0]), 0, &tmp, prec);
            break;
        case RO_DOT:
            for (uint32_t k = 0; k < n->nargs; k += 2) {
                acc(adj, from, a[k], g, rs_val(S, a[k + 1]), 0, &tmp, prec);
                acc(adj, from, a[k + 1], g, rs_val(S, a[k]), 0, &tmp, prec);
            }
            break;
        case RO_DIV: /* d/da = 1/b, d/db = -y/b */
            rv_set_si(&p, 1, 1);
            rv_div(&p, &p, rs_val(S, a[1]), prec);
            acc(adj, from, a[0], g, &p, 0, &tmp, prec);
            rv_div(&p, &n->v, rs_val(S, a[1]), prec);
            acc(adj, from, a[1], g, &p, 1, &tmp, prec);
            break;
        case RO_POW: /* k x^(k-1) */
            rv_pow(&p, rs_val(S, a[0]), n->k - 1, prec);
            rv_set_si(&tmp, n->k, 1);
            rv_mul(&p, &p, &tmp, prec);
            if (n->k == 0)
                rv_set_si(&p, 0, 1);
            acc(adj, from, a[0], g, &p, 0, &tmp, prec);
            break;
        case RO_RELU:
        case RO_ABS: { /* at 0 the derivative is a convention: TIE */
            rv_t z;
            rv_init(&z);
            int c = rv_cmp(rs_val(S, a[0]), &z, prec);
            rv_clear(&z);
            int t = rs_val(S, a[0])->taint | (c == 0 ? RT_TIE : c == 2 ? RT_UNDEC : 0);
            piece(&p, n->op == RO_RELU ? c > 0 : c, t);
            acc(adj, from, a[0], g, &p, 0, &tmp, prec);
            break;
        }
        case RO_MAX:
        case RO_MIN: {
            /* the gradient goes to the unique extremal argument; equal extremal arguments are
               a TIE, an undecidable order UNDEC (each candidate gets the tainted gradient) */
            int is_max = n->op == RO_MAX;
            for (uint32_t k = 0; k < n->nargs; k++) {
                int cand = 1, t = rs_val(S, a[k])->taint;
                for (uint32_t m = 0; m < k && cand; m++)
                    cand = a[m] != a[k]; /* a node given twice takes its gradient once */
                for (uint32_t m = 0; m < n->nargs && cand; m++) {
                    if (a[m] == a[k])
                        continue;
                    int c = rv_cmp(rs_val(S, a[k]), rs_val(S, a[m]), prec);
                    if (c == (is_max ? -1 : 1))
                        cand = 0;
                    else if (c == 0)
                        t |= RT_TIE;
                    else if (c == 2)
                        t |= RT_UNDEC;
                }
                if (!cand)
                    continue;
                piece(&p, 1, t);
                acc(adj, from, a[k], g, &p, 0, &tmp, prec);
            }
            break;
        }
        default:
            rv_deriv(&p, (rop_t)n->op, rs_val(S, a[0]), &n->v, prec);
            acc(adj, from, a[0], g, &p, 0, &tmp, prec);
            break;
        }
    }
    rv_clear(&p);
    rv_clear(&tmp);
    return S->over ? -1 : 0;
}
