/* nf.c: normal forms: interning, rational-function arithmetic, atoms and their rewrite rules. */
#include "nf.h"

#include <stdlib.h>
#include <string.h>

#include <flint/fmpq_mpoly.h>

#include "sbuf.h"



int sp_engine_time_up(sp_engine_t *S)
{
    if (S->deadline_ns && sp_now_ns() > S->deadline_ns) {
        if (S->why == SP_WHY_NONE)
            S->why = sp_engine_time_why(S);
        return 1;
    }
    return 0;
}

int64_t sp_engine_query_deadline(const sp_engine_t *S)
{
    int64_t d = S->lim.max_ms > 0 ? sp_now_ns() + S->lim.max_ms * 1000000 : 0;
    if (S->lim.deadline_ns != 0 && (d == 0 || S->lim.deadline_ns < d))
        d = S->lim.deadline_ns;
    return d;
}

sp_why_t sp_engine_time_why(const sp_engine_t *S)
{
    return S->lim.deadline_ns != 0 && sp_now_ns() > S->lim.deadline_ns ? SP_WHY_LIMIT_TIMEOUT
                                                                         : SP_WHY_LIMIT_TIME;
}

static uint64_t mixh(uint64_t h)
{
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h;
}

static sp_nfid_t fail(sp_engine_t *S, sp_why_t why)
{
    if (S->why == SP_WHY_NONE)
        S->why = S->M.full ? SP_WHY_LIMIT_TERMS : why; /* the engine's memory bound: max_terms */
    return SP_NF_FAIL;
}

/* ---- environments ------------------------------------------------------------------------- */

void sp_env_init(sp_env_t *v) { memset(v, 0, sizeof(*v)); }

void sp_env_clear(sp_env_t *v)
{
    flint_free(v->cond);
    flint_free(v->sign);
    flint_free(v->sub_var);
    flint_free(v->sub_nf);
    memset(v, 0, sizeof(*v));
}

void sp_env_copy(sp_env_t *dst, const sp_env_t *src)
{
    sp_env_init(dst);
    dst->ncond = src->ncond;
    dst->nsub = src->nsub;
    dst->cond = flint_malloc((src->ncond + 1) * sizeof(sp_nfid_t));
    dst->sign = flint_malloc((src->ncond + 1) * sizeof(int8_t));
    dst->sub_var = flint_malloc((src->nsub + 1) * sizeof(uint32_t));
    dst->sub_nf = flint_malloc((src->nsub + 1) * sizeof(sp_nfid_t));
    if (src->ncond) {
        memcpy(dst->cond, src->cond, src->ncond * sizeof(sp_nfid_t));
        memcpy(dst->sign, src->sign, src->ncond * sizeof(int8_t));
    }
    if (src->nsub) {
        memcpy(dst->sub_var, src->sub_var, src->nsub * sizeof(uint32_t));
        memcpy(dst->sub_nf, src->sub_nf, src->nsub * sizeof(sp_nfid_t));
    }
}

/* ---- interning ---------------------------------------------------------------------------- */

static uint8_t poly_flags(const sp_engine_t *S, const sp_poly_t p)
{
    uint8_t f = 0;
    for (slong i = 0; i < p->len; i++) {
        const sp_vpow_t *fa = sp_mono_factors(&S->M, p->m[i]);
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, p->m[i]); k++)
            f |= S->var[fa[k].var].flags & (SP_VF_PIECEWISE | SP_VF_TRANSC);
    }
    return f;
}

static void nf_table_grow(sp_engine_t *S)
{
    uint32_t size = S->nf_tsize ? 2 * S->nf_tsize : 4096;
    uint32_t *t = flint_calloc(size, sizeof(uint32_t));
    for (uint32_t i = 0; i < S->nnf; i++) {
        uint32_t j = (uint32_t)S->nf[i].hash & (size - 1);
        while (t[j])
            j = (j + 1) & (size - 1);
        t[j] = i + 1;
    }
    flint_free(S->nf_table);
    S->nf_table = t;
    S->nf_tsize = size;
}

/* The largest bit size of a numerator or denominator among p's coefficients. */
static flint_bitcnt_t poly_coeff_bits(const sp_poly_t p)
{
    flint_bitcnt_t b = 0;
    for (slong i = 0; i < p->len; i++) {
        b = FLINT_MAX(b, fmpz_bits(fmpq_numref(p->c + i)));
        b = FLINT_MAX(b, fmpz_bits(fmpq_denref(p->c + i)));
    }
    return b;
}

/* Is a coefficient of b bits within limits.max_coeff_bits? */
static int coeff_bits_ok(const sp_engine_t *S, flint_bitcnt_t b)
{
    return S->lim.max_coeff_bits <= 0 || b <= (flint_bitcnt_t)S->lim.max_coeff_bits;
}

/* Intern num/den, which must already be normalized; takes ownership of their contents.  Every
   normal form passes here, so the term and coefficient limits hold for all of them. */
static sp_nfid_t intern_take(sp_engine_t *S, sp_poly_t num, sp_poly_t den)
{
    /* each polynomial within max_terms, and all the engine's normal forms together within
       NF_TERMS_FACTOR times that: the bound on an engine's memory (a stage that is the whole
       network, 24 GB and the kernel's OOM killer before the bound; the largest total of the
       plan corpus, the gen matrix and the nnScaler pairs is 1.45M terms, 2026-12-01) */
    if (S->lim.max_terms > 0 &&
        (num->len > S->lim.max_terms || den->len > S->lim.max_terms ||
         S->nf_terms + (size_t)(num->len + den->len) >
             (S->nf_total_cap ? S->nf_total_cap : (size_t)S->lim.max_terms * SP_NF_TERMS_FACTOR))) {
        sp_poly_clear(num);
        sp_poly_clear(den);
        return fail(S, SP_WHY_LIMIT_TERMS);
    }
    if (!coeff_bits_ok(S, poly_coeff_bits(num)) || !coeff_bits_ok(S, poly_coeff_bits(den))) {
        sp_poly_clear(num);
        sp_poly_clear(den);
        return fail(S, SP_WHY_LIMIT_COEFF);
    }
    uint64_t h = mixh(sp_poly_hash(num) * 7 + sp_poly_hash(den));
    if (S->nf_tsize) {
        uint32_t j = (uint32_t)h & (S->nf_tsize - 1);
        while (S->nf_table[j]) {
            uint32_t id = S->nf_table[j] - 1;
            if (S->nf[id].hash == h && sp_poly_equal(S->nf[id].num, num) &&
                sp_poly_equal(S->nf[id].den, den)) {
                sp_poly_clear(num);
                sp_poly_clear(den);
                return id;
            }
            j = (j + 1) & (S->nf_tsize - 1);
        }
    }
    if (S->nnf >= UINT32_MAX - 2) {
        sp_poly_clear(num);
        sp_poly_clear(den);
        return fail(S, SP_WHY_LIMIT_NODES);
    }
    if (S->nnf == S->nf_alloc) {
        uint32_t a = S->nf_alloc ? 2 * S->nf_alloc : 1024;
        S->nf = flint_realloc(S->nf, a * sizeof(sp_nf_struct));
        S->nf_alloc = a;
    }
    uint32_t id = S->nnf++;
    sp_nf_struct *n = &S->nf[id];
    S->nf_terms += (size_t)(num->len + den->len);
    *n->num = *num;
    *n->den = *den;
    n->hash = h;
    n->flags = poly_flags(S, n->num) | poly_flags(S, n->den);
    sp_poly_init(num);
    sp_poly_init(den);
    if (2 * (uint64_t)S->nnf > S->nf_tsize) {
        nf_table_grow(S);
    } else {
        uint32_t j = (uint32_t)h & (S->nf_tsize - 1);
        while (S->nf_table[j])
            j = (j + 1) & (S->nf_tsize - 1);
        S->nf_table[j] = id + 1;
    }
    return id;
}

/* ---- gcd through FLINT on the variables present -------------------------------------------- */

static int cmp_u32v(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static slong collect_vars(const sp_engine_t *S, const sp_poly_t p, const sp_poly_t q, uint32_t **out)
{
    size_t cap = 16, n = 0;
    uint32_t *v = flint_malloc(cap * sizeof(uint32_t));
    const sp_poly_struct *ps[2] = {p, q};
    for (int w = 0; w < 2; w++)
        for (slong i = 0; i < ps[w]->len; i++) {
            const sp_vpow_t *f = sp_mono_factors(&S->M, ps[w]->m[i]);
            for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, ps[w]->m[i]); k++) {
                if (n == cap) {
                    cap *= 2;
                    v = flint_realloc(v, cap * sizeof(uint32_t));
                }
                v[n++] = f[k].var;
            }
        }
    qsort(v, n, sizeof(uint32_t), cmp_u32v);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    *out = v;
    return (slong)k;
}

/* Append c times monomial m to A, over the nv sorted vars (factors of other variables are left
   out); e is scratch of nv entries.  Callers pass monomials with exponents >= 0. */
static void push_mono(fmpq_mpoly_t A, const sp_engine_t *S, uint32_t m, const fmpq_t c,
                      const uint32_t *vars, slong nv, ulong *e, const fmpq_mpoly_ctx_t ctx)
{
    memset(e, 0, (size_t)(nv ? nv : 1) * sizeof(ulong));
    const sp_vpow_t *f = sp_mono_factors(&S->M, m);
    for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, m); k++) {
        uint32_t *pos = bsearch(&f[k].var, vars, (size_t)nv, sizeof(uint32_t), cmp_u32v);
        if (pos)
            e[pos - vars] = (ulong)f[k].exp;
    }
    fmpq_mpoly_push_term_fmpq_ui(A, c, e, ctx);
}

static void to_mpoly(fmpq_mpoly_t A, const sp_engine_t *S, const sp_poly_t p, const uint32_t *vars,
                     slong nv, const fmpq_mpoly_ctx_t ctx)
{
    ulong *e = flint_calloc(nv ? nv : 1, sizeof(ulong));
    fmpq_mpoly_zero(A, ctx);
    for (slong i = 0; i < p->len; i++)
        push_mono(A, S, p->m[i], p->c + i, vars, nv, e, ctx);
    fmpq_mpoly_sort_terms(A, ctx);
    fmpq_mpoly_combine_like_terms(A, ctx);
    flint_free(e);
}

static int from_mpoly(sp_engine_t *S, sp_poly_t r, const fmpq_mpoly_t A, const uint32_t *vars,
                      slong nv, const fmpq_mpoly_ctx_t ctx)
{
    slong n = fmpq_mpoly_length(A, ctx);
    uint32_t *m = flint_malloc((n ? n : 1) * sizeof(uint32_t));
    fmpq *c = _fmpq_vec_init(n ? n : 1);
    ulong *e = flint_calloc(nv ? nv : 1, sizeof(ulong));
    sp_vpow_t *f = flint_malloc((nv ? nv : 1) * sizeof(sp_vpow_t));
    int ok = 1;
    for (slong i = 0; i < n && ok; i++) {
        fmpq_mpoly_get_term_coeff_fmpq(c + i, A, i, ctx);
        fmpq_mpoly_get_term_exp_ui(e, A, i, ctx);
        uint32_t k = 0;
        for (slong j = 0; j < nv; j++)
            if (e[j]) {
                if (e[j] > (ulong)INT32_MAX) {
                    ok = 0;
                    break;
                }
                f[k].var = vars[j];
                f[k].exp = (int32_t)e[j];
                k++;
            }
        m[i] = ok ? sp_mono_intern(&S->M, f, k) : SP_MONO_FAIL;
        if (m[i] == SP_MONO_FAIL)
            ok = 0;
    }
    if (ok)
        sp_poly_set_terms(r, m, c, n);
    flint_free(m);
    _fmpq_vec_clear(c, n ? n : 1);
    flint_free(e);
    flint_free(f);
    return ok;
}

typedef struct {
    uint32_t x; /* the monomial's factors outside the denominator's variables (interned) */
    slong i;    /* the term */
} xterm_t;

static int cmp_xterm(const void *pa, const void *pb)
{
    const xterm_t *a = pa, *b = pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/*
 * Does num share a nonconstant factor with den?  Only the variables of den can occur in a common
 * factor, so with num = sum_j c_j * x^j (c_j over den's variables, x^j the rest of each monomial)
 * the gcd is gcd(den, c_1, c_2, ...), computed over den's variables alone and stopped as soon as
 * it is a constant (the usual answer).  A numerator of thousands of terms over hundreds of
 * variables (a stage after an rmsnorm) then costs gcds in a handful of variables, not one in
 * hundreds (seconds each in FLINT).  Returns 0 if there is none, 1 if there may be one (the
 * full gcd decides), -1 on a limit.
 */
static int may_share_factor(sp_engine_t *S, const sp_poly_t num, const sp_poly_t den)
{
    uint32_t *dv;
    slong nd = collect_vars(S, den, den, &dv);
    if (nd == 0) {
        flint_free(dv);
        return 0; /* a constant denominator */
    }
    xterm_t *t = flint_malloc((size_t)(num->len ? num->len : 1) * sizeof(xterm_t));
    sp_vpow_t *xf = NULL;
    uint32_t xcap = 0;
    int shared = 1;
    for (slong i = 0; i < num->len && shared >= 0; i++) {
        const sp_vpow_t *f = sp_mono_factors(&S->M, num->m[i]);
        uint32_t n = sp_mono_nfactors(&S->M, num->m[i]), k = 0;
        if (n > xcap) {
            xcap = n;
            xf = flint_realloc(xf, (size_t)xcap * sizeof(sp_vpow_t));
        }
        for (uint32_t a = 0; a < n; a++)
            if (bsearch(&f[a].var, dv, (size_t)nd, sizeof(uint32_t), cmp_u32v) == NULL)
                xf[k++] = f[a];
        t[i].x = sp_mono_intern(&S->M, xf, k);
        t[i].i = i;
        if (t[i].x == SP_MONO_FAIL)
            shared = -1;
    }
    flint_free(xf);
    fmpq_mpoly_ctx_t ctx;
    fmpq_mpoly_ctx_init(ctx, nd, ORD_LEX);
    fmpq_mpoly_t G, C;
    fmpq_mpoly_init(G, ctx);
    fmpq_mpoly_init(C, ctx);
    to_mpoly(G, S, den, dv, nd, ctx);
    qsort(t, (size_t)num->len, sizeof(xterm_t), cmp_xterm);
    ulong *e = flint_calloc((size_t)nd, sizeof(ulong));
    for (slong lo = 0, hi; lo < num->len && shared > 0; lo = hi) {
        fmpq_mpoly_zero(C, ctx);
        for (hi = lo; hi < num->len && t[hi].x == t[lo].x; hi++)
            push_mono(C, S, num->m[t[hi].i], num->c + t[hi].i, dv, nd, e, ctx); /* c_j's terms */
        fmpq_mpoly_sort_terms(C, ctx);
        fmpq_mpoly_combine_like_terms(C, ctx);
        if (!fmpq_mpoly_gcd(G, G, C, ctx))
            break; /* FLINT gave up: the full gcd decides */
        if (fmpq_mpoly_is_fmpq(G, ctx))
            shared = 0;
    }
    flint_free(e);
    flint_free(t);
    fmpq_mpoly_clear(G, ctx);
    fmpq_mpoly_clear(C, ctx);
    fmpq_mpoly_ctx_clear(ctx);
    flint_free(dv);
    return shared;
}

/* num, den polynomials (num Laurent is allowed: it is shifted); divide both by their gcd. */
static int cancel_gcd(sp_engine_t *S, sp_poly_t num, sp_poly_t den)
{
    uint32_t shift = sp_poly_mono_content(&S->M, num);
    if (shift == SP_MONO_FAIL)
        return 0;
    uint32_t inv = sp_mono_pow(&S->M, shift, -1);
    if (inv == SP_MONO_FAIL || !sp_poly_mul_mono(&S->M, num, num, inv))
        return 0;
    int may = may_share_factor(S, num, den);
    if (may <= 0)
        return may == 0 && sp_poly_mul_mono(&S->M, num, num, shift);
    uint32_t *vars;
    slong nv = collect_vars(S, num, den, &vars);
    int ok = 1;
    if (nv > 0) {
        fmpq_mpoly_ctx_t ctx;
        fmpq_mpoly_ctx_init(ctx, nv, ORD_LEX);
        fmpq_mpoly_t A, B, G, Q;
        fmpq_mpoly_init(A, ctx);
        fmpq_mpoly_init(B, ctx);
        fmpq_mpoly_init(G, ctx);
        fmpq_mpoly_init(Q, ctx);
        to_mpoly(A, S, num, vars, nv, ctx);
        to_mpoly(B, S, den, vars, nv, ctx);
        if (fmpq_mpoly_gcd(G, A, B, ctx) && !fmpq_mpoly_is_fmpq(G, ctx)) {
            ok = fmpq_mpoly_divides(Q, A, G, ctx) && from_mpoly(S, num, Q, vars, nv, ctx);
            ok = ok && fmpq_mpoly_divides(Q, B, G, ctx) && from_mpoly(S, den, Q, vars, nv, ctx);
        }
        fmpq_mpoly_clear(A, ctx);
        fmpq_mpoly_clear(B, ctx);
        fmpq_mpoly_clear(G, ctx);
        fmpq_mpoly_clear(Q, ctx);
        fmpq_mpoly_ctx_clear(ctx);
    }
    flint_free(vars);
    return ok && sp_poly_mul_mono(&S->M, num, num, shift);
}

/* Normalize num/den (consumed) and intern. */
static sp_nfid_t make_take(sp_engine_t *S, sp_poly_t num, sp_poly_t den)
{
    if (sp_poly_is_zero(den)) {
        sp_poly_clear(num);
        sp_poly_clear(den);
        return fail(S, SP_WHY_UNDEFINED);
    }
    if (sp_poly_is_zero(num)) {
        sp_poly_set_si(den, 1);
        return intern_take(S, num, den);
    }
    int ok = 1;
    if (den->len == 1) {
        /* a monomial denominator moves into the Laurent numerator */
        fmpq_t c;
        fmpq_init(c);
        fmpq_set(c, den->c);
        uint32_t inv = sp_mono_pow(&S->M, den->m[0], -1);
        ok = inv != SP_MONO_FAIL && sp_poly_mul_mono(&S->M, num, num, inv);
        sp_poly_scalar_div(num, num, c);
        fmpq_clear(c);
        sp_poly_set_si(den, 1);
    } else {
        uint32_t g = sp_poly_mono_content(&S->M, den);
        uint32_t inv = g == SP_MONO_FAIL ? SP_MONO_FAIL : sp_mono_pow(&S->M, g, -1);
        ok = inv != SP_MONO_FAIL && sp_poly_mul_mono(&S->M, den, den, inv) &&
             sp_poly_mul_mono(&S->M, num, num, inv) && cancel_gcd(S, num, den);
        if (ok && den->len == 1)
            return make_take(S, num, den);
        if (ok) {
            fmpq_t lc;
            fmpq_init(lc);
            fmpq_set(lc, sp_poly_lead(&S->M, den));
            sp_poly_scalar_div(den, den, lc);
            sp_poly_scalar_div(num, num, lc);
            fmpq_clear(lc);
        }
    }
    if (!ok) {
        sp_poly_clear(num);
        sp_poly_clear(den);
        return fail(S, SP_WHY_LIMIT_DEGREE);
    }
    return intern_take(S, num, den);
}

static sp_nfid_t make_poly_take(sp_engine_t *S, sp_poly_t num)
{
    sp_poly_t one;
    sp_poly_init(one);
    sp_poly_set_si(one, 1);
    return intern_take(S, num, one);
}

/* num/den (consumed) already coprime, den without monomial content and not a monomial: only
   the leading coefficient needs normalizing. */
static sp_nfid_t make_take_reduced(sp_engine_t *S, sp_poly_t num, sp_poly_t den)
{
    fmpq_t lc;
    fmpq_init(lc);
    fmpq_set(lc, sp_poly_lead(&S->M, den));
    if (!fmpq_is_one(lc)) {
        sp_poly_scalar_div(den, den, lc);
        sp_poly_scalar_div(num, num, lc);
    }
    fmpq_clear(lc);
    return intern_take(S, num, den);
}

/* Do p and q have no variable in common?  (No use of S->stamp: rebuilds may be running.) */
static int disjoint_vars(sp_engine_t *S, const sp_poly_t p, const sp_poly_t q)
{
    sp_poly_t none;
    sp_poly_init(none);
    uint32_t *vp;
    slong np = collect_vars(S, p, none, &vp);
    int disjoint = 1;
    for (slong i = 0; i < q->len && disjoint; i++)
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, q->m[i]) && disjoint; k++) {
            uint32_t v = sp_mono_factors(&S->M, q->m[i])[k].var;
            if (bsearch(&v, vp, (size_t)np, sizeof(uint32_t), cmp_u32v))
                disjoint = 0;
        }
    flint_free(vp);
    return disjoint;
}

/* ---- arithmetic --------------------------------------------------------------------------- */

sp_nfid_t sp_nf_const(sp_engine_t *S, const fmpq_t c)
{
    sp_poly_t p;
    sp_poly_init(p);
    sp_poly_set_fmpq(p, c);
    return make_poly_take(S, p);
}

sp_nfid_t sp_nf_si(sp_engine_t *S, slong c)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, c, 1);
    sp_nfid_t r = sp_nf_const(S, q);
    fmpq_clear(q);
    return r;
}

sp_nfid_t sp_nf_poly(sp_engine_t *S, const sp_poly_t p)
{
    sp_poly_t q;
    sp_poly_init(q);
    sp_poly_set(q, p);
    return make_poly_take(S, q);
}

static sp_nfid_t nf_var_pow(sp_engine_t *S, uint32_t v, int32_t e)
{
    uint32_t m = sp_mono_var(&S->M, v, e);
    if (m == SP_MONO_FAIL)
        return fail(S, SP_WHY_LIMIT_DEGREE);
    sp_poly_t p;
    sp_poly_init(p);
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    sp_poly_set_mono(p, m, one);
    fmpq_clear(one);
    return make_poly_take(S, p);
}

static int is_poly(const sp_engine_t *S, sp_nfid_t a) { return sp_poly_is_one(S->nf[a].den); }

sp_nfid_t sp_nf_add(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b)
{
    if (a == SP_NF_FAIL || b == SP_NF_FAIL)
        return SP_NF_FAIL;
    const sp_nf_struct *x = &S->nf[a], *y = &S->nf[b];
    sp_poly_t n, d, t;
    sp_poly_init(n);
    sp_poly_init(d);
    sp_poly_init(t);
    int ok = 1;
    if (sp_poly_equal(x->den, y->den)) {
        sp_poly_add_sub(n, x->num, y->num, 1);
        sp_poly_set(d, x->den);
        if (is_poly(S, a)) {
            sp_poly_clear(t);
            sp_poly_clear(d);
            return make_poly_take(S, n);
        }
    } else {
        ok = sp_poly_mul(&S->M, n, x->num, y->den, S->lim.max_terms) &&
             sp_poly_mul(&S->M, t, y->num, S->nf[a].den, S->lim.max_terms);
        x = &S->nf[a];
        y = &S->nf[b];
        if (ok) {
            sp_poly_add_sub(n, n, t, 1);
            ok = sp_poly_mul(&S->M, d, x->den, y->den, S->lim.max_terms);
        }
    }
    sp_poly_clear(t);
    if (!ok) {
        sp_poly_clear(n);
        sp_poly_clear(d);
        return fail(S, SP_WHY_LIMIT_TERMS);
    }
    /* p/q + r/s with gcd(p,q) = gcd(r,s) = 1: a common factor of ps + rq and qs divides both q
       and s.  If one denominator is 1, or the two share no variable, there is none, and the
       expensive gcd is skipped (sums of softmax-like fractions hit this case). */
    x = &S->nf[a];
    y = &S->nf[b];
    if (!sp_poly_is_zero(n) && d->len > 1 &&
        (sp_poly_is_one(x->den) || sp_poly_is_one(y->den) || disjoint_vars(S, x->den, y->den)))
        return make_take_reduced(S, n, d);
    return make_take(S, n, d);
}

sp_nfid_t sp_nf_scalar(sp_engine_t *S, sp_nfid_t a, const fmpq_t c)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    sp_poly_t n, d;
    sp_poly_init(n);
    sp_poly_init(d);
    sp_poly_scalar_mul(n, S->nf[a].num, c);
    sp_poly_set(d, S->nf[a].den);
    if (sp_poly_is_zero(n))
        sp_poly_set_si(d, 1);
    return intern_take(S, n, d); /* scaling keeps the normal form */
}

sp_nfid_t sp_nf_neg(sp_engine_t *S, sp_nfid_t a)
{
    fmpq_t c;
    fmpq_init(c);
    fmpq_set_si(c, -1, 1);
    sp_nfid_t r = sp_nf_scalar(S, a, c);
    fmpq_clear(c);
    return r;
}

sp_nfid_t sp_nf_sub(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b)
{
    return sp_nf_add(S, a, sp_nf_neg(S, b));
}

sp_nfid_t sp_nf_mul(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b)
{
    if (a == SP_NF_FAIL || b == SP_NF_FAIL)
        return SP_NF_FAIL;
    sp_poly_t n, d;
    sp_poly_init(n);
    sp_poly_init(d);
    int ok = sp_poly_mul(&S->M, n, S->nf[a].num, S->nf[b].num, S->lim.max_terms);
    if (ok && is_poly(S, a) && is_poly(S, b)) {
        sp_poly_clear(d);
        return make_poly_take(S, n);
    }
    ok = ok && sp_poly_mul(&S->M, d, S->nf[a].den, S->nf[b].den, S->lim.max_terms);
    if (!ok) {
        sp_poly_clear(n);
        sp_poly_clear(d);
        return fail(S, SP_WHY_LIMIT_TERMS);
    }
    return make_take(S, n, d);
}

sp_nfid_t sp_nf_div(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b)
{
    if (a == SP_NF_FAIL || b == SP_NF_FAIL)
        return SP_NF_FAIL;
    if (sp_poly_is_zero(S->nf[b].num))
        return fail(S, SP_WHY_UNDEFINED);
    sp_poly_t n, d;
    sp_poly_init(n);
    sp_poly_init(d);
    int ok = sp_poly_mul(&S->M, n, S->nf[a].num, S->nf[b].den, S->lim.max_terms) &&
             sp_poly_mul(&S->M, d, S->nf[a].den, S->nf[b].num, S->lim.max_terms);
    if (!ok) {
        sp_poly_clear(n);
        sp_poly_clear(d);
        return fail(S, SP_WHY_LIMIT_TERMS);
    }
    return make_take(S, n, d);
}

sp_nfid_t sp_nf_pow(sp_engine_t *S, sp_nfid_t a, slong k)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    if (k < 0) {
        sp_nfid_t p = sp_nf_pow(S, a, -k);
        return sp_nf_div(S, sp_nf_si(S, 1), p);
    }
    if (k > S->lim.max_degree)
        return fail(S, SP_WHY_LIMIT_DEGREE);
    /* a coefficient of b > 1 bits to the k-th has at least k (b - 1) + 1 bits (for a single
       term exactly what the power holds): refuse before GMP spends the time, since a tower
       ((c^4)^3)^3... triples the size per level and one GMP power cannot be interrupted */
    flint_bitcnt_t b = FLINT_MAX(poly_coeff_bits(S->nf[a].num), poly_coeff_bits(S->nf[a].den));
    if (b > 1 && !coeff_bits_ok(S, (flint_bitcnt_t)k * (b - 1) + 1))
        return fail(S, SP_WHY_LIMIT_COEFF);
    sp_poly_t n, d;
    sp_poly_init(n);
    sp_poly_init(d);
    int ok = sp_poly_pow(&S->M, n, S->nf[a].num, (ulong)k, S->lim.max_terms) &&
             sp_poly_pow(&S->M, d, S->nf[a].den, (ulong)k, S->lim.max_terms);
    if (!ok) {
        sp_poly_clear(n);
        sp_poly_clear(d);
        return fail(S, SP_WHY_LIMIT_TERMS);
    }
    /* powers of a reduced fraction are reduced; only the scaling needs care */
    return make_take(S, n, d);
}

/* ---- variables and atoms ------------------------------------------------------------------ */

static void var_table_grow(sp_engine_t *S)
{
    uint32_t size = S->var_tsize ? 2 * S->var_tsize : 1024;
    uint32_t *t = flint_calloc(size, sizeof(uint32_t));
    for (uint32_t i = 0; i < S->nvar; i++) {
        if (S->var[i].kind == SP_VAR_SYM)
            continue;
        uint32_t j = (uint32_t)S->var[i].hash & (size - 1);
        while (t[j])
            j = (j + 1) & (size - 1);
        t[j] = i + 1;
    }
    flint_free(S->var_table);
    S->var_table = t;
    S->var_tsize = size;
}

static uint32_t new_var(sp_engine_t *S, sp_var_kind_t kind, const sp_nfid_t *args, uint32_t n,
                        uint64_t h)
{
    if (S->nvar == S->var_alloc) {
        uint32_t a = S->var_alloc ? 2 * S->var_alloc : 1024;
        S->var = flint_realloc(S->var, a * sizeof(sp_var_t));
        S->stamp = flint_realloc(S->stamp, a * sizeof(uint32_t));
        S->image = flint_realloc(S->image, a * sizeof(sp_nfid_t));
        for (uint32_t i = S->var_alloc; i < a; i++)
            S->stamp[i] = 0;
        S->var_alloc = a;
    }
    if (S->nvargs + n > S->vargs_alloc) {
        size_t a = S->vargs_alloc ? 2 * S->vargs_alloc : 1024;
        while (a < S->nvargs + n)
            a *= 2;
        S->vargs = flint_realloc(S->vargs, a * sizeof(sp_nfid_t));
        S->vargs_alloc = a;
    }
    uint32_t v = S->nvar++;
    sp_var_t *x = &S->var[v];
    x->kind = (uint8_t)kind;
    x->nargs = n;
    x->args = (uint32_t)S->nvargs;
    x->sym = 0;
    x->hash = h;
    x->flags = 0;
    for (uint32_t i = 0; i < n; i++) {
        S->vargs[S->nvargs + i] = args[i];
        x->flags |= S->nf[args[i]].flags;
    }
    S->nvargs += n;
    switch (kind) {
    case SP_VAR_EXP:
        x->flags |= SP_VF_TRANSC | SP_VF_POSITIVE;
        break;
    case SP_VAR_SQRT:
        x->flags |= SP_VF_TRANSC | SP_VF_POSITIVE;
        break;
    case SP_VAR_LOG: case SP_VAR_ERF: case SP_VAR_PHI:
        x->flags |= SP_VF_TRANSC;
        break;
    case SP_VAR_MAX: case SP_VAR_MIN: case SP_VAR_POS: case SP_VAR_ZERO:
        x->flags |= SP_VF_PIECEWISE;
        break;
    default:
        break;
    }
    return v;
}

/* The atom variable of kind(args), created on first use. */
static uint32_t atom_var(sp_engine_t *S, sp_var_kind_t kind, const sp_nfid_t *args, uint32_t n)
{
    uint64_t h = mixh((uint64_t)kind + 0x51ed27);
    for (uint32_t i = 0; i < n; i++)
        h = mixh(h ^ ((uint64_t)args[i] * 0x9e3779b97f4a7c15u + i));
    if (S->var_tsize) {
        uint32_t j = (uint32_t)h & (S->var_tsize - 1);
        while (S->var_table[j]) {
            uint32_t v = S->var_table[j] - 1;
            const sp_var_t *x = &S->var[v];
            if (x->hash == h && x->kind == kind && x->nargs == n &&
                memcmp(S->vargs + x->args, args, n * sizeof(sp_nfid_t)) == 0)
                return v;
            j = (j + 1) & (S->var_tsize - 1);
        }
    }
    uint32_t v = new_var(S, kind, args, n, h);
    if (2 * (uint64_t)S->nvar > S->var_tsize) {
        var_table_grow(S);
    } else {
        uint32_t j = (uint32_t)h & (S->var_tsize - 1);
        while (S->var_table[j])
            j = (j + 1) & (S->var_tsize - 1);
        S->var_table[j] = v + 1;
    }
    return v;
}

static sp_nfid_t atom(sp_engine_t *S, sp_var_kind_t kind, const sp_nfid_t *args, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (args[i] == SP_NF_FAIL)
            return SP_NF_FAIL;
    return nf_var_pow(S, atom_var(S, kind, args, n), 1);
}

sp_nfid_t sp_nf_sym(sp_engine_t *S, sp_expr_t sym)
{
    uint32_t s = (uint32_t)S->E->nodes[sym].param;
    if (s >= S->sym_var_alloc) {
        uint32_t a = S->sym_var_alloc ? S->sym_var_alloc : 256;
        while (a <= s)
            a *= 2;
        S->sym_var = flint_realloc(S->sym_var, a * sizeof(uint32_t));
        for (uint32_t i = S->sym_var_alloc; i < a; i++)
            S->sym_var[i] = 0;
        S->sym_var_alloc = a;
    }
    if (S->sym_var[s] == 0) {
        uint32_t v = new_var(S, SP_VAR_SYM, NULL, 0, mixh(s + 1));
        S->var[v].sym = sym;
        S->sym_var[s] = v + 1;
        if (2 * (uint64_t)S->nvar > S->var_tsize)
            var_table_grow(S);
    }
    uint32_t v = S->sym_var[s] - 1;
    if (S->env)
        for (slong i = 0; i < S->env->nsub; i++)
            if (S->env->sub_var[i] == v)
                return S->env->sub_nf[i];
    return nf_var_pow(S, v, 1);
}

uint32_t sp_nf_as_var(const sp_engine_t *S, sp_nfid_t a)
{
    const sp_nf_struct *x = &S->nf[a];
    if (x->num->len != 1 || !sp_poly_is_one(x->den) || !fmpq_is_one(x->num->c))
        return UINT32_MAX;
    uint32_t m = x->num->m[0];
    if (sp_mono_nfactors(&S->M, m) != 1 || sp_mono_factors(&S->M, m)[0].exp != 1)
        return UINT32_MAX;
    return sp_mono_factors(&S->M, m)[0].var;
}

/* Normal form of one term c*m over den (borrowed), reduced. */
static sp_nfid_t term_over(sp_engine_t *S, uint32_t m, const fmpq_t c, const sp_poly_t den)
{
    sp_poly_t n;
    sp_poly_init(n);
    sp_poly_set_mono(n, m, c);
    sp_poly_t d;
    sp_poly_init(d);
    sp_poly_set(d, den);
    return make_take(S, n, d);
}

/* exp(c * u) for a normal form u that is one term over a denominator, and rational c. */
static sp_nfid_t exp_of_term(sp_engine_t *S, sp_nfid_t t)
{
    /* t = (a/b) * m / D: the atom is exp(m / (b D)) and the exponent is a, when a is small */
    const sp_nf_struct *x = &S->nf[t];
    fmpq_t c;
    fmpq_init(c);
    fmpq_set(c, x->num->c);
    uint32_t m = x->num->m[0];
    /* rule exp(k*log(u)) = u^k: the term is k times one LOG atom, den 1, k an integer */
    if (sp_poly_is_one(x->den) && sp_mono_nfactors(&S->M, m) == 1 &&
        sp_mono_factors(&S->M, m)[0].exp == 1 &&
        S->var[sp_mono_factors(&S->M, m)[0].var].kind == SP_VAR_LOG &&
        fmpz_is_one(fmpq_denref(c)) && fmpz_bits(fmpq_numref(c)) <= 16) {
        uint32_t v = sp_mono_factors(&S->M, m)[0].var;
        slong k = fmpz_get_si(fmpq_numref(c));
        fmpq_clear(c);
        return sp_nf_pow(S, sp_var_arg(S, v, 0), k);
    }
    sp_nfid_t r;
    if (fmpz_bits(fmpq_numref(c)) <= 20) {
        slong a = fmpz_get_si(fmpq_numref(c));
        fmpq_t inv;
        fmpq_init(inv);
        fmpz_one(fmpq_numref(inv));
        fmpz_set(fmpq_denref(inv), fmpq_denref(c));
        sp_nfid_t arg = term_over(S, m, inv, x->den);
        fmpq_clear(inv);
        if (arg == SP_NF_FAIL) {
            fmpq_clear(c);
            return SP_NF_FAIL;
        }
        uint32_t v = atom_var(S, SP_VAR_EXP, &arg, 1);
        r = nf_var_pow(S, v, (int32_t)a);
    } else {
        r = atom(S, SP_VAR_EXP, &t, 1);
    }
    fmpq_clear(c);
    return r;
}

sp_nfid_t sp_nf_exp(sp_engine_t *S, sp_nfid_t a)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    /* rule: exp(sum of terms) = product of exp(term) */
    sp_nfid_t r = sp_nf_si(S, 1);
    slong n = S->nf[a].num->len;
    for (slong i = 0; i < n && r != SP_NF_FAIL; i++) {
        const sp_nf_struct *x = &S->nf[a];
        sp_nfid_t t = term_over(S, x->num->m[i], x->num->c + i, S->nf[a].den);
        if (t == SP_NF_FAIL)
            return SP_NF_FAIL;
        r = sp_nf_mul(S, r, exp_of_term(S, t));
    }
    return r;
}

/* Split off the part of the monomial m made of positive atoms: returns it, leaves the rest. */
static uint32_t positive_part(sp_engine_t *S, uint32_t m, uint32_t *rest)
{
    uint32_t n = sp_mono_nfactors(&S->M, m);
    sp_vpow_t *pos = flint_malloc((n ? n : 1) * sizeof(sp_vpow_t));
    sp_vpow_t *oth = flint_malloc((n ? n : 1) * sizeof(sp_vpow_t));
    uint32_t np = 0, no = 0;
    const sp_vpow_t *f = sp_mono_factors(&S->M, m);
    for (uint32_t i = 0; i < n; i++) {
        if (S->var[f[i].var].flags & SP_VF_POSITIVE)
            pos[np++] = f[i];
        else
            oth[no++] = f[i];
    }
    uint32_t p = sp_mono_intern(&S->M, pos, np);
    *rest = sp_mono_intern(&S->M, oth, no);
    flint_free(pos);
    flint_free(oth);
    return p;
}

/* A pending log(a) with its weight, for sp_nf_log's work list. */
typedef struct {
    sp_nfid_t a;
    fmpq_t w;
} log_item_t;

typedef struct {
    log_item_t *it;
    slong n, alloc;
} log_work_t;

static void log_work_push(log_work_t *L, sp_nfid_t a, const fmpq_t w)
{
    if (L->n == L->alloc) {
        L->alloc = L->alloc ? 2 * L->alloc : 8;
        L->it = flint_realloc(L->it, L->alloc * sizeof(log_item_t));
    }
    L->it[L->n].a = a;
    fmpq_init(L->it[L->n].w);
    fmpq_set(L->it[L->n].w, w);
    L->n++;
}

/*
 * log(a) except for the logs of the sqrt atoms a has as positive factors: those are pushed to L
 * with weight w * e/2 (log(sqrt(u)^e) = (e/2) log(u)), so that nested sqrt atoms are unfolded
 * by a loop, not by recursion.
 */
static sp_nfid_t log_step(sp_engine_t *S, sp_nfid_t a, const fmpq_t w, log_work_t *L)
{
    const sp_nf_struct *x = &S->nf[a];
    if (sp_poly_is_zero(x->num))
        return fail(S, SP_WHY_UNDEFINED);
    /* rule: log(u*v) = log(u) + log(v) for u known positive.  Positive factors: the rational
       content |c| and the monomial content made of exp and sqrt atoms. */
    sp_nfid_t r = sp_nf_si(S, 0);
    fmpq_t c;
    fmpq_init(c);
    sp_poly_content(c, x->num);
    /* the numerator's content over positive atoms */
    uint32_t g = sp_poly_mono_content(&S->M, x->num);
    uint32_t rest;
    uint32_t pg = g == SP_MONO_FAIL ? 0 : positive_part(S, g, &rest);
    if (pg == SP_MONO_FAIL)
        pg = 0;
    /* log(c) for the positive rational c */
    if (!fmpq_is_one(c)) {
        sp_nfid_t cn = sp_nf_const(S, c);
        r = sp_nf_add(S, r, atom(S, SP_VAR_LOG, &cn, 1));
    }
    /* log of each positive atom power */
    uint32_t nf = sp_mono_nfactors(&S->M, pg);
    sp_vpow_t *copy = flint_malloc((nf ? nf : 1) * sizeof(sp_vpow_t));
    if (nf)
        memcpy(copy, sp_mono_factors(&S->M, pg), nf * sizeof(sp_vpow_t));
    fmpq_t e;
    fmpq_init(e);
    for (uint32_t i = 0; i < nf && r != SP_NF_FAIL; i++) {
        const sp_var_t *v = &S->var[copy[i].var];
        sp_nfid_t arg = sp_var_arg(S, copy[i].var, 0);
        /* log(exp(t)^e) = e*t ; log(sqrt(u)^e) = (e/2) log(u), later */
        if (v->kind == SP_VAR_EXP) {
            fmpq_set_si(e, copy[i].exp, 1);
            r = sp_nf_add(S, r, sp_nf_scalar(S, arg, e));
        } else {
            fmpq_set_si(e, copy[i].exp, 2);
            fmpq_mul(e, e, w);
            if (!coeff_bits_ok(S, FLINT_MAX(fmpz_bits(fmpq_numref(e)), fmpz_bits(fmpq_denref(e)))))
                r = fail(S, SP_WHY_LIMIT_COEFF);
            else
                log_work_push(L, arg, e);
        }
    }
    fmpq_clear(e);
    flint_free(copy);
    if (r == SP_NF_FAIL) {
        fmpq_clear(c);
        return SP_NF_FAIL;
    }
    /* the rest: num / (c * pg) over den */
    sp_poly_t n, d;
    sp_poly_init(n);
    sp_poly_init(d);
    uint32_t inv = sp_mono_pow(&S->M, pg, -1);
    x = &S->nf[a];
    int ok = inv != SP_MONO_FAIL && sp_poly_mul_mono(&S->M, n, x->num, inv);
    sp_poly_scalar_div(n, n, c);
    sp_poly_set(d, x->den);
    fmpq_clear(c);
    if (!ok) {
        sp_poly_clear(n);
        sp_poly_clear(d);
        return fail(S, SP_WHY_LIMIT_DEGREE);
    }
    sp_nfid_t u;
    if (sp_poly_is_one(n) && sp_poly_is_one(d)) {
        sp_poly_clear(n);
        sp_poly_clear(d);
        return r;
    }
    if (sp_poly_is_one(n) && !sp_poly_is_const(d)) {
        /* log(1/D) = -log(D) */
        u = make_poly_take(S, d);
        sp_poly_clear(n);
        return sp_nf_sub(S, r, atom(S, SP_VAR_LOG, &u, 1));
    }
    u = make_take(S, n, d);
    return sp_nf_add(S, r, atom(S, SP_VAR_LOG, &u, 1));
}

sp_nfid_t sp_nf_log(sp_engine_t *S, sp_nfid_t a)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    /* log(a) = sum of w_i * log_step(a_i) over the work list; its length is the sqrt nesting
       depth, which the input controls, so no recursion */
    log_work_t L = {NULL, 0, 0};
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    log_work_push(&L, a, one);
    fmpq_clear(one);
    sp_nfid_t r = sp_nf_si(S, 0);
    for (slong steps = 0; L.n > 0; steps++) {
        log_item_t it = L.it[--L.n]; /* moved out: the push below may reallocate */
        if (r != SP_NF_FAIL && (steps & 1023) == 1023 && sp_engine_time_up(S))
            r = SP_NF_FAIL;
        if (r != SP_NF_FAIL) {
            sp_nfid_t t = log_step(S, it.a, it.w, &L);
            r = sp_nf_add(S, r, sp_nf_scalar(S, t, it.w));
        }
        fmpq_clear(it.w);
    }
    flint_free(L.it);
    return r;
}

sp_nfid_t sp_nf_sqrt(sp_engine_t *S, sp_nfid_t a)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    if (sp_nf_is_const(S, a)) {
        const sp_poly_struct *n = S->nf[a].num;
        if (n->len == 0)
            return a;
        const fmpq *c = n->c;
        if (fmpz_sgn(fmpq_numref(c)) > 0 && fmpz_is_square(fmpq_numref(c)) &&
            fmpz_is_square(fmpq_denref(c))) {
            fmpq_t r;
            fmpq_init(r);
            fmpz_sqrt(fmpq_numref(r), fmpq_numref(c));
            fmpz_sqrt(fmpq_denref(r), fmpq_denref(c));
            sp_nfid_t id = sp_nf_const(S, r);
            fmpq_clear(r);
            return id;
        }
        if (fmpz_sgn(fmpq_numref(c)) < 0)
            return fail(S, SP_WHY_UNDEFINED);
    }
    return atom(S, SP_VAR_SQRT, &a, 1);
}

static int lead_negative(sp_engine_t *S, sp_nfid_t a)
{
    const sp_nf_struct *x = &S->nf[a];
    return x->num->len > 0 && fmpq_sgn(sp_poly_lead(&S->M, x->num)) < 0;
}

sp_nfid_t sp_nf_erf(sp_engine_t *S, sp_nfid_t a)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    if (sp_poly_is_zero(S->nf[a].num))
        return a;
    if (lead_negative(S, a)) /* erf is odd */
        return sp_nf_neg(S, sp_nf_erf(S, sp_nf_neg(S, a)));
    return atom(S, SP_VAR_ERF, &a, 1);
}

sp_nfid_t sp_nf_phi(sp_engine_t *S, sp_nfid_t a)
{
    if (a == SP_NF_FAIL)
        return SP_NF_FAIL;
    if (sp_poly_is_zero(S->nf[a].num)) {
        fmpq_t h;
        fmpq_init(h);
        fmpq_set_si(h, 1, 2);
        sp_nfid_t r = sp_nf_const(S, h);
        fmpq_clear(h);
        return r;
    }
    if (lead_negative(S, a)) /* Phi(-u) = 1 - Phi(u) */
        return sp_nf_sub(S, sp_nf_si(S, 1), sp_nf_phi(S, sp_nf_neg(S, a)));
    return atom(S, SP_VAR_PHI, &a, 1);
}

/* ---- signs, conditions and piecewise atoms -------------------------------------------------- */

sp_nfid_t sp_nf_normalize_sign(sp_engine_t *S, sp_nfid_t d, int *flip)
{
    if (d == SP_NF_FAIL)
        return SP_NF_FAIL;
    const sp_nf_struct *x = &S->nf[d];
    if (sp_nf_is_const(S, d)) {
        *flip = x->num->len == 0 ? 0 : fmpq_sgn(x->num->c);
        return sp_nf_si(S, *flip == 0 ? 0 : 1);
    }
    fmpq_t c;
    fmpq_init(c);
    sp_poly_content(c, x->num);
    if (fmpq_sgn(sp_poly_lead(&S->M, x->num)) < 0)
        fmpq_neg(c, c);
    *flip = fmpq_sgn(c);
    fmpq_inv(c, c);
    sp_nfid_t r = sp_nf_scalar(S, d, c);
    fmpq_clear(c);
    return r;
}

int sp_nf_env_sign(sp_engine_t *S, sp_nfid_t d)
{
    int flip;
    sp_nfid_t n = sp_nf_normalize_sign(S, d, &flip);
    if (n == SP_NF_FAIL)
        return 2;
    if (sp_nf_is_const(S, n))
        return flip;
    if (S->env == NULL)
        return 2;
    for (slong i = 0; i < S->env->ncond; i++)
        if (S->env->cond[i] == n)
            return S->env->sign[i] * flip;
    return 2;
}

/*
 * d = k*a + c with a an indicator atom (pos or iszero: its value is 0 or 1) and k, c
 * constants: the indicator's variable and k, c.  Then d is c where a = 0 and k + c where a = 1,
 * so pos(d) and iszero(d) are exact affine functions of a, with no case split: a plan that
 * writes where(gt(h, 0), g, 0) meets the model's relu' = pos(h) as iszero(pos(h)) = 1 - pos(h).
 */
static int indicator_affine(sp_engine_t *S, sp_nfid_t d, uint32_t *var, fmpq_t k, fmpq_t c)
{
    const sp_nf_struct *x = &S->nf[d];
    if (!sp_poly_is_one(x->den))
        return 0;
    const sp_poly_struct *p = x->num;
    int found = 0;
    fmpq_zero(c);
    for (slong i = 0; i < p->len; i++) {
        uint32_t m = p->m[i];
        if (m == 0) {
            fmpq_set(c, p->c + i);
            continue;
        }
        if (found || sp_mono_nfactors(&S->M, m) != 1)
            return 0;
        const sp_vpow_t *f = sp_mono_factors(&S->M, m);
        uint8_t kind = S->var[f->var].kind;
        if (f->exp < 1 || (kind != SP_VAR_POS && kind != SP_VAR_ZERO))
            return 0; /* a^e = a for e >= 1; a^-1 is undefined where a = 0 */
        *var = f->var;
        fmpq_set(k, p->c + i);
        found = 1;
    }
    return found;
}

/* [v0 holds] * (1 - a) + [v1 holds] * a, where `holds` is sign test `want` (1: > 0, 0: == 0) */
static sp_nfid_t indicator_test(sp_engine_t *S, uint32_t var, const fmpq_t k, const fmpq_t c,
                                int want)
{
    fmpq_t v1;
    fmpq_init(v1);
    fmpq_add(v1, k, c);
    int t0 = want ? fmpq_sgn(c) > 0 : fmpq_is_zero(c);
    int t1 = want ? fmpq_sgn(v1) > 0 : fmpq_is_zero(v1);
    fmpq_clear(v1);
    sp_nfid_t a = nf_var_pow(S, var, 1);
    if (t0 && t1)
        return sp_nf_si(S, 1);
    if (t1)
        return a;
    if (t0)
        return sp_nf_sub(S, sp_nf_si(S, 1), a);
    return sp_nf_si(S, 0);
}

/* pos(d) or iszero(d) by indicator_test when d is affine in one indicator, else SP_NF_FAIL */
static sp_nfid_t indicator_rule(sp_engine_t *S, sp_nfid_t d, int want)
{
    uint32_t var;
    fmpq_t k, c;
    fmpq_init(k);
    fmpq_init(c);
    sp_nfid_t r = indicator_affine(S, d, &var, k, c) ? indicator_test(S, var, k, c, want) : SP_NF_FAIL;
    fmpq_clear(k);
    fmpq_clear(c);
    return r;
}

sp_nfid_t sp_nf_pos(sp_engine_t *S, sp_nfid_t d)
{
    if (d == SP_NF_FAIL)
        return SP_NF_FAIL;
    int s = sp_nf_env_sign(S, d);
    if (s != 2)
        return sp_nf_si(S, s > 0);
    sp_nfid_t ind = indicator_rule(S, d, 1);
    if (ind != SP_NF_FAIL)
        return ind;
    int flip;
    sp_nfid_t n = sp_nf_normalize_sign(S, d, &flip);
    if (n == SP_NF_FAIL)
        return SP_NF_FAIL;
    if (flip > 0)
        return atom(S, SP_VAR_POS, &n, 1);
    /* pos(-n) = 1 - pos(n) - zero(n) */
    sp_nfid_t r = sp_nf_sub(S, sp_nf_si(S, 1), atom(S, SP_VAR_POS, &n, 1));
    return sp_nf_sub(S, r, atom(S, SP_VAR_ZERO, &n, 1));
}

sp_nfid_t sp_nf_zero(sp_engine_t *S, sp_nfid_t d)
{
    if (d == SP_NF_FAIL)
        return SP_NF_FAIL;
    int s = sp_nf_env_sign(S, d);
    if (s != 2)
        return sp_nf_si(S, s == 0);
    sp_nfid_t ind = indicator_rule(S, d, 0);
    if (ind != SP_NF_FAIL)
        return ind;
    int flip;
    sp_nfid_t n = sp_nf_normalize_sign(S, d, &flip);
    if (n == SP_NF_FAIL)
        return SP_NF_FAIL;
    return atom(S, SP_VAR_ZERO, &n, 1);
}

static int cmp_nfid(const void *a, const void *b)
{
    sp_nfid_t x = *(const sp_nfid_t *)a, y = *(const sp_nfid_t *)b;
    return (x > y) - (x < y);
}

/* Sign of a - b when it is a constant (polynomials equal up to the constant term), else 2. */
static int const_difference_sign(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b)
{
    const sp_nf_struct *x = &S->nf[a], *y = &S->nf[b];
    if (!sp_poly_equal(x->den, y->den))
        return 2;
    const sp_poly_struct *p = x->num, *q = y->num;
    slong i = 0, j = 0;
    fmpq_t cp, cq;
    fmpq_init(cp);
    fmpq_init(cq);
    int ok = 1;
    while ((i < p->len || j < q->len) && ok) {
        if (i < p->len && p->m[i] == 0) {
            fmpq_set(cp, p->c + i);
            i++;
        } else if (j < q->len && q->m[j] == 0) {
            fmpq_set(cq, q->c + j);
            j++;
        } else if (i < p->len && j < q->len && p->m[i] == q->m[j] && fmpq_equal(p->c + i, q->c + j)) {
            i++;
            j++;
        } else {
            ok = 0;
        }
    }
    int s = 2;
    if (ok) {
        /* the sign of a - b = (cp - cq)/den needs den's sign unless den is 1 */
        if (sp_poly_is_one(x->den))
            s = fmpq_cmp(cp, cq) > 0 ? 1 : (fmpq_equal(cp, cq) ? 0 : -1);
        else if (fmpq_equal(cp, cq))
            s = 0;
    }
    fmpq_clear(cp);
    fmpq_clear(cq);
    return s;
}

/* Sign of args a - b: constant difference, else the environment's knowledge, else 2. */
static int pair_sign(sp_engine_t *S, sp_nfid_t a, sp_nfid_t b)
{
    int s = const_difference_sign(S, a, b);
    if (s != 2 || S->env == NULL || S->env->ncond == 0)
        return s;
    sp_nfid_t d = sp_nf_sub(S, a, b);
    return d == SP_NF_FAIL ? 2 : sp_nf_env_sign(S, d);
}

sp_nfid_t sp_nf_maxmin(sp_engine_t *S, int is_max, const sp_nfid_t *args, slong n)
{
    sp_var_kind_t kind = is_max ? SP_VAR_MAX : SP_VAR_MIN;
    /* flatten nested atoms of the same kind */
    slong cap = n + 8, m = 0;
    sp_nfid_t *v = flint_malloc(cap * sizeof(sp_nfid_t));
    for (slong i = 0; i < n; i++) {
        if (args[i] == SP_NF_FAIL) {
            flint_free(v);
            return SP_NF_FAIL;
        }
        uint32_t x = sp_nf_as_var(S, args[i]);
        if (x != UINT32_MAX && S->var[x].kind == kind) {
            uint32_t k = S->var[x].nargs;
            if (m + (slong)k > cap) {
                cap = 2 * (m + k);
                v = flint_realloc(v, cap * sizeof(sp_nfid_t));
            }
            for (uint32_t j = 0; j < k; j++)
                v[m++] = sp_var_arg(S, x, j);
        } else {
            if (m == cap) {
                cap *= 2;
                v = flint_realloc(v, cap * sizeof(sp_nfid_t));
            }
            v[m++] = args[i];
        }
    }
    qsort(v, (size_t)m, sizeof(sp_nfid_t), cmp_nfid);
    slong k = 0;
    for (slong i = 0; i < m; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    m = k;
    /* drop dominated arguments: b is dropped if some kept a has a >= b (max) / a <= b (min);
       ties keep the first in id order */
    if (m <= 64) {
        uint8_t *drop = flint_calloc(m, 1);
        for (slong i = 0; i < m; i++) {
            if (drop[i])
                continue;
            for (slong j = 0; j < m; j++) {
                if (i == j || drop[j])
                    continue;
                int s = pair_sign(S, v[i], v[j]);
                if (s == 2)
                    continue;
                if (!is_max)
                    s = -s;
                if (s > 0 || (s == 0 && i < j))
                    drop[j] = 1;
            }
        }
        k = 0;
        for (slong i = 0; i < m; i++)
            if (!drop[i])
                v[k++] = v[i];
        m = k;
        flint_free(drop);
    }
    sp_nfid_t r = m == 1 ? v[0] : atom(S, kind, v, (uint32_t)m);
    flint_free(v);
    return r;
}

/* ---- normal forms of expressions ---------------------------------------------------------- */

static sp_nfid_t nf_node(sp_engine_t *S, sp_expr_t e, const sp_nfid_t *a)
{
    const sp_node_t *nd = sp_expr_node(S->E, e);
    switch ((sp_op_t)nd->op) {
    case SP_OP_SYM:
        return sp_nf_sym(S, e);
    case SP_OP_CONST:
        return sp_nf_const(S, sp_expr_const(S->E, e));
    case SP_OP_ADD: {
        /* n-ary sum: accumulate polynomial parts in one pass when all are polynomials */
        int all_poly = 1;
        for (uint32_t i = 0; i < nd->nargs; i++)
            if (!sp_poly_is_one(S->nf[a[i]].den))
                all_poly = 0;
        if (all_poly) {
            slong tot = 0;
            for (uint32_t i = 0; i < nd->nargs; i++)
                tot += S->nf[a[i]].num->len;
            uint32_t *m = flint_malloc((tot ? tot : 1) * sizeof(uint32_t));
            fmpq *c = flint_malloc((tot ? tot : 1) * sizeof(fmpq));
            slong k = 0;
            for (uint32_t i = 0; i < nd->nargs; i++) {
                const sp_poly_struct *p = S->nf[a[i]].num;
                for (slong j = 0; j < p->len; j++) {
                    m[k] = p->m[j];
                    c[k] = p->c[j]; /* shallow: read only */
                    k++;
                }
            }
            sp_poly_t r;
            sp_poly_init(r);
            sp_poly_set_terms(r, m, c, tot);
            flint_free(m);
            flint_free(c);
            return make_poly_take(S, r);
        }
        sp_nfid_t r = a[0];
        for (uint32_t i = 1; i < nd->nargs; i++)
            r = sp_nf_add(S, r, a[i]);
        return r;
    }
    case SP_OP_MUL: {
        sp_nfid_t r = a[0];
        for (uint32_t i = 1; i < nd->nargs; i++)
            r = sp_nf_mul(S, r, a[i]);
        return r;
    }
    case SP_OP_NEG:
        return sp_nf_neg(S, a[0]);
    case SP_OP_SUB:
        return sp_nf_sub(S, a[0], a[1]);
    case SP_OP_DIV:
        return sp_nf_div(S, a[0], a[1]);
    case SP_OP_POW:
        return sp_nf_pow(S, a[0], nd->param);
    case SP_OP_EXP:
        return sp_nf_exp(S, a[0]);
    case SP_OP_LOG:
        return sp_nf_log(S, a[0]);
    case SP_OP_SQRT:
        return sp_nf_sqrt(S, a[0]);
    case SP_OP_RSQRT:
        return sp_nf_div(S, sp_nf_si(S, 1), sp_nf_sqrt(S, a[0]));
    case SP_OP_TANH: {
        /* tanh(x) = (exp(2x) - 1) / (exp(2x) + 1) */
        sp_nfid_t e2 = sp_nf_exp(S, sp_nf_add(S, a[0], a[0]));
        return sp_nf_div(S, sp_nf_sub(S, e2, sp_nf_si(S, 1)), sp_nf_add(S, e2, sp_nf_si(S, 1)));
    }
    case SP_OP_SIGMOID:
    case SP_OP_SILU: {
        /* sigmoid(x) = 1 / (1 + exp(-x)); silu(x) = x * sigmoid(x) */
        sp_nfid_t s = sp_nf_div(S, sp_nf_si(S, 1),
                                sp_nf_add(S, sp_nf_si(S, 1), sp_nf_exp(S, sp_nf_neg(S, a[0]))));
        return nd->op == SP_OP_SIGMOID ? s : sp_nf_mul(S, a[0], s);
    }
    case SP_OP_GELU:
        return sp_nf_mul(S, a[0], sp_nf_phi(S, a[0]));
    case SP_OP_ERF:
        return sp_nf_erf(S, a[0]);
    case SP_OP_MAX:
    case SP_OP_MIN:
        return sp_nf_maxmin(S, nd->op == SP_OP_MAX, a, nd->nargs);
    case SP_OP_RELU: {
        sp_nfid_t v[2] = {a[0], sp_nf_si(S, 0)};
        return sp_nf_maxmin(S, 1, v, 2);
    }
    case SP_OP_ABS: {
        sp_nfid_t v[2] = {a[0], sp_nf_neg(S, a[0])};
        return sp_nf_maxmin(S, 1, v, 2);
    }
    case SP_OP_CLAMP: {
        sp_nfid_t v[2] = {a[0], a[1]};
        sp_nfid_t lo = sp_nf_maxmin(S, 1, v, 2);
        sp_nfid_t w[2] = {lo, a[2]};
        return sp_nf_maxmin(S, 0, w, 2);
    }
    case SP_OP_CMP: {
        sp_nfid_t d = sp_nf_sub(S, a[0], a[1]); /* compare d with 0 */
        sp_nfid_t nd2 = sp_nf_neg(S, d);
        switch ((sp_cmp_t)nd->param) {
        case SP_CMP_GT: return sp_nf_pos(S, d);
        case SP_CMP_LT: return sp_nf_pos(S, nd2);
        case SP_CMP_GE: return sp_nf_sub(S, sp_nf_si(S, 1), sp_nf_pos(S, nd2));
        case SP_CMP_LE: return sp_nf_sub(S, sp_nf_si(S, 1), sp_nf_pos(S, d));
        case SP_CMP_EQ: return sp_nf_zero(S, d);
        case SP_CMP_NE: return sp_nf_sub(S, sp_nf_si(S, 1), sp_nf_zero(S, d));
        }
        return fail(S, SP_WHY_UNDEFINED);
    }
    case SP_OP_WHERE: {
        /* where(c, x, y) = y + (1 - zero(c)) * (x - y) */
        sp_nfid_t nz = sp_nf_sub(S, sp_nf_si(S, 1), sp_nf_zero(S, a[0]));
        return sp_nf_add(S, a[2], sp_nf_mul(S, nz, sp_nf_sub(S, a[1], a[2])));
    }
    default:
        return fail(S, SP_WHY_UNDEFINED);
    }
}

sp_nfid_t sp_nf_of_expr(sp_engine_t *S, sp_expr_t root)
{
    if (root == SP_EXPR_NONE)
        return fail(S, sp_why_full(S->E));
    int use_cache = S->env == NULL;
    if (use_cache && root < S->cache_alloc && S->cache[root])
        return S->cache[root] - 1;
    if (S->cache_alloc < S->E->len) {
        uint32_t a = S->cache_alloc ? S->cache_alloc : 1024;
        while (a < S->E->len)
            a *= 2;
        S->cache = flint_realloc(S->cache, a * sizeof(uint32_t));
        memset(S->cache + S->cache_alloc, 0, (a - S->cache_alloc) * sizeof(uint32_t));
        S->cache_alloc = a;
    }
    /* with the cache, only the part of the cone not computed yet (callers such as
       sp_fingerprint_nf ask for every atom node of a chain in turn) */
    uint32_t *cone;
    size_t n = use_cache ? sp_expr_cone_skip(S->E, &root, 1, S->cache, S->cache_alloc, &cone)
                         : sp_expr_cone(S->E, &root, 1, &cone);
    if (cone == NULL)
        return fail(S, sp_why_full(S->E));
    sp_nfid_t *val = use_cache ? NULL : flint_malloc(n * sizeof(sp_nfid_t));
    sp_nfid_t argbuf[8];
    sp_nfid_t result = SP_NF_FAIL;
    for (size_t i = 0; i < n; i++) {
        sp_expr_t e = cone[i];
        if (use_cache && S->cache[e])
            continue;
        if ((i & 1023) == 0 && sp_engine_time_up(S))
            break;
        const sp_node_t *nd = sp_expr_node(S->E, e);
        sp_nfid_t *a = nd->nargs <= 8 ? argbuf : flint_malloc(nd->nargs * sizeof(sp_nfid_t));
        int bad = 0;
        for (uint32_t k = 0; k < nd->nargs; k++) {
            sp_expr_t x = sp_expr_arg(S->E, e, k);
            a[k] = use_cache ? S->cache[x] - 1 : val[sp_bsearch_u32(cone, n, x)];
            if (a[k] == SP_NF_FAIL)
                bad = 1;
        }
        sp_nfid_t r = bad ? SP_NF_FAIL : nf_node(S, e, a);
        if (a != argbuf)
            flint_free(a);
        if (r == SP_NF_FAIL)
            break;
        if (use_cache)
            S->cache[e] = r + 1;
        else
            val[i] = r;
        if (e == root)
            result = r;
    }
    if (use_cache && S->cache[root])
        result = S->cache[root] - 1;
    flint_free(val);
    flint_free(cone);
    return result;
}

/* ---- traversal, rebuild under an environment ---------------------------------------------- */

slong sp_nf_reachable_vars(sp_engine_t *S, sp_nfid_t a, uint32_t **out)
{
    uint32_t stamp = ++S->stamp_now;
    slong cap = 32, n = 0, sp = 0, scap = 32;
    uint32_t *res = flint_malloc(cap * sizeof(uint32_t));
    sp_nfid_t *stack = flint_malloc(scap * sizeof(sp_nfid_t));
    stack[sp++] = a;
    while (sp > 0) {
        sp_nfid_t x = stack[--sp];
        const sp_poly_struct *ps[2] = {S->nf[x].num, S->nf[x].den};
        for (int w = 0; w < 2; w++)
            for (slong i = 0; i < ps[w]->len; i++) {
                const sp_vpow_t *f = sp_mono_factors(&S->M, ps[w]->m[i]);
                for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, ps[w]->m[i]); k++) {
                    uint32_t v = f[k].var;
                    if (S->stamp[v] == stamp)
                        continue;
                    S->stamp[v] = stamp;
                    if (n == cap) {
                        cap *= 2;
                        res = flint_realloc(res, cap * sizeof(uint32_t));
                    }
                    res[n++] = v;
                    for (uint32_t j = 0; j < S->var[v].nargs; j++) {
                        if (sp == scap) {
                            scap *= 2;
                            stack = flint_realloc(stack, scap * sizeof(sp_nfid_t));
                        }
                        stack[sp++] = sp_var_arg(S, v, j);
                    }
                }
            }
    }
    flint_free(stack);
    qsort(res, (size_t)n, sizeof(uint32_t), cmp_u32v);
    *out = res;
    return n;
}

#define IMG_SAME (UINT32_MAX - 1)

static int nf_changed(const sp_engine_t *S, sp_nfid_t a, uint32_t stamp)
{
    const sp_poly_struct *ps[2] = {S->nf[a].num, S->nf[a].den};
    for (int w = 0; w < 2; w++)
        for (slong i = 0; i < ps[w]->len; i++) {
            const sp_vpow_t *f = sp_mono_factors(&S->M, ps[w]->m[i]);
            for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, ps[w]->m[i]); k++)
                if (S->stamp[f[k].var] == stamp && S->image[f[k].var] != IMG_SAME)
                    return 1;
        }
    return 0;
}

/* Polynomial p with the images substituted, as a normal form. */
static sp_nfid_t apply_poly(sp_engine_t *S, const sp_poly_struct *p0, uint32_t stamp)
{
    /* copy p0: the store of normal forms may move while we build */
    sp_poly_t p, same;
    sp_poly_init(p);
    sp_poly_init(same);
    sp_poly_set(p, p0);
    sp_poly_fit(same, p->len);
    sp_nfid_t acc = sp_nf_si(S, 0);
    for (slong i = 0; i < p->len && acc != SP_NF_FAIL; i++) {
        uint32_t m = p->m[i];
        int changed = 0;
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, m); k++) {
            uint32_t v = sp_mono_factors(&S->M, m)[k].var;
            if (S->stamp[v] == stamp && S->image[v] != IMG_SAME)
                changed = 1;
        }
        if (!changed) {
            same->m[same->len] = m;
            fmpq_set(same->c + same->len, p->c + i);
            same->len++;
            continue;
        }
        sp_nfid_t t = sp_nf_const(S, p->c + i);
        uint32_t nfac = sp_mono_nfactors(&S->M, m);
        for (uint32_t k = 0; k < nfac && t != SP_NF_FAIL; k++) {
            sp_vpow_t f = sp_mono_factors(&S->M, m)[k];
            sp_nfid_t base = (S->stamp[f.var] == stamp && S->image[f.var] != IMG_SAME)
                                 ? S->image[f.var]
                                 : nf_var_pow(S, f.var, 1);
            t = sp_nf_mul(S, t, sp_nf_pow(S, base, f.exp));
        }
        acc = sp_nf_add(S, acc, t);
    }
    sp_poly_clear(p);
    if (acc == SP_NF_FAIL) {
        sp_poly_clear(same);
        return SP_NF_FAIL;
    }
    sp_nfid_t r = sp_nf_add(S, acc, make_poly_take(S, same));
    return r;
}

static sp_nfid_t apply(sp_engine_t *S, sp_nfid_t a, uint32_t stamp)
{
    if (a == SP_NF_FAIL || !nf_changed(S, a, stamp))
        return a;
    sp_nfid_t n = apply_poly(S, S->nf[a].num, stamp);
    if (sp_poly_is_one(S->nf[a].den))
        return n;
    sp_nfid_t d = apply_poly(S, S->nf[a].den, stamp);
    return sp_nf_div(S, n, d);
}

sp_nfid_t sp_nf_rebuild(sp_engine_t *S, sp_nfid_t a)
{
    if (a == SP_NF_FAIL || S->env == NULL || (S->env->ncond == 0 && S->env->nsub == 0))
        return a;
    uint32_t *vars;
    slong n = sp_nf_reachable_vars(S, a, &vars);
    uint32_t stamp = S->stamp_now; /* the traversal's stamp marks exactly the reachable vars */
    for (slong i = 0; i < n; i++)
        S->image[vars[i]] = IMG_SAME;
    for (slong i = 0; i < n; i++) {
        uint32_t v = vars[i];
        const sp_var_t x = S->var[v];
        sp_nfid_t img = IMG_SAME;
        if (x.kind == SP_VAR_SYM) {
            for (slong k = 0; k < S->env->nsub; k++)
                if (S->env->sub_var[k] == v)
                    img = S->env->sub_nf[k];
        } else if ((x.flags & SP_VF_PIECEWISE) || S->env->nsub > 0) {
            sp_nfid_t small[8];
            sp_nfid_t *arg = x.nargs <= 8 ? small : flint_malloc(x.nargs * sizeof(sp_nfid_t));
            int changed = 0, bad = 0;
            for (uint32_t k = 0; k < x.nargs; k++) {
                sp_nfid_t old = sp_var_arg(S, v, k);
                arg[k] = apply(S, old, stamp);
                changed |= arg[k] != old;
                bad |= arg[k] == SP_NF_FAIL;
            }
            if (!bad && (changed || x.kind == SP_VAR_MAX || x.kind == SP_VAR_MIN ||
                         x.kind == SP_VAR_POS || x.kind == SP_VAR_ZERO)) {
                switch ((sp_var_kind_t)x.kind) {
                case SP_VAR_EXP: img = sp_nf_exp(S, arg[0]); break;
                case SP_VAR_LOG: img = sp_nf_log(S, arg[0]); break;
                case SP_VAR_SQRT: img = sp_nf_sqrt(S, arg[0]); break;
                case SP_VAR_ERF: img = sp_nf_erf(S, arg[0]); break;
                case SP_VAR_PHI: img = sp_nf_phi(S, arg[0]); break;
                case SP_VAR_MAX: img = sp_nf_maxmin(S, 1, arg, x.nargs); break;
                case SP_VAR_MIN: img = sp_nf_maxmin(S, 0, arg, x.nargs); break;
                case SP_VAR_POS: img = sp_nf_pos(S, arg[0]); break;
                case SP_VAR_ZERO: img = sp_nf_zero(S, arg[0]); break;
                default: break;
                }
                if (img != SP_NF_FAIL && img == nf_var_pow(S, v, 1))
                    img = IMG_SAME;
            } else if (bad) {
                img = SP_NF_FAIL;
            }
            if (arg != small)
                flint_free(arg);
        }
        if (img == SP_NF_FAIL) {
            flint_free(vars);
            return SP_NF_FAIL;
        }
        /* constructors may have run traversals of their own: restore our stamp */
        S->image[v] = img;
    }
    sp_nfid_t r = apply(S, a, stamp);
    flint_free(vars);
    return r;
}

/* ---- printing and evaluation ---------------------------------------------------------------- */

static const char *const var_kind_name[] = {"", "exp", "log", "sqrt", "erf", "Phi", "max", "min",
                                           "pos", "iszero"};

static void print_nf(const sp_engine_t *S, sp_nfid_t a, sp_sbuf_t *b, int depth);

static void print_var(const sp_engine_t *S, uint32_t v, sp_sbuf_t *b, int depth)
{
    const sp_var_t *x = &S->var[v];
    if (x->kind == SP_VAR_SYM) {
        sp_sbuf_puts(b, sp_expr_sym_name(S->E, x->sym));
        return;
    }
    sp_sbuf_printf(b, "%s(", var_kind_name[x->kind]);
    if (depth > 48) {
        sp_sbuf_puts(b, "...");
    } else {
        for (uint32_t k = 0; k < x->nargs; k++) {
            if (k)
                sp_sbuf_puts(b, ", ");
            print_nf(S, sp_var_arg(S, v, k), b, depth + 1);
        }
    }
    sp_sbuf_putc(b, ')');
}

static void print_poly(const sp_engine_t *S, const sp_poly_struct *p, sp_sbuf_t *b, int depth)
{
    if (p->len == 0) {
        sp_sbuf_putc(b, '0');
        return;
    }
    slong *ord = sp_poly_canonical_order(&S->M, p);
    for (slong t = 0; t < p->len && !b->truncated; t++) {
        slong i = ord[t];
        const fmpq *c = p->c + i;
        uint32_t m = p->m[i];
        int neg = fmpq_sgn(c) < 0;
        if (t > 0)
            sp_sbuf_puts(b, neg ? " - " : " + ");
        else if (neg)
            sp_sbuf_putc(b, '-');
        fmpq_t ac;
        fmpq_init(ac);
        fmpq_abs(ac, c);
        int first = 1;
        if (!fmpq_is_one(ac) || m == 0) {
            sp_sbuf_put_fmpq(b, ac);
            first = 0;
        }
        fmpq_clear(ac);
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, m); k++) {
            sp_vpow_t f = sp_mono_factors(&S->M, m)[k];
            if (!first)
                sp_sbuf_putc(b, '*');
            first = 0;
            print_var(S, f.var, b, depth);
            if (f.exp != 1)
                sp_sbuf_printf(b, f.exp < 0 ? "^(%d)" : "^%d", (int)f.exp);
        }
    }
    flint_free(ord);
}

static void print_nf(const sp_engine_t *S, sp_nfid_t a, sp_sbuf_t *b, int depth)
{
    const sp_nf_struct *x = &S->nf[a];
    int frac = !sp_poly_is_one(x->den);
    if (frac && x->num->len > 1)
        sp_sbuf_putc(b, '(');
    print_poly(S, x->num, b, depth);
    if (frac) {
        if (x->num->len > 1)
            sp_sbuf_putc(b, ')');
        sp_sbuf_puts(b, "/(");
        print_poly(S, x->den, b, depth);
        sp_sbuf_putc(b, ')');
    }
}

char *sp_nf_print(const sp_engine_t *S, sp_nfid_t a, size_t maxlen)
{
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    b.cap = maxlen;
    if (a == SP_NF_FAIL)
        sp_sbuf_puts(&b, "<limit>");
    else
        print_nf(S, a, &b, 0);
    return sp_sbuf_take(&b);
}

static int eval_poly(const sp_engine_t *S, const sp_poly_struct *p, const fmpq *symvals, fmpq_t out)
{
    fmpq_t t, x;
    fmpq_init(t);
    fmpq_init(x);
    fmpq_zero(out);
    int ok = 1;
    for (slong i = 0; i < p->len && ok; i++) {
        fmpq_set(t, p->c + i);
        for (uint32_t k = 0; k < sp_mono_nfactors(&S->M, p->m[i]) && ok; k++) {
            sp_vpow_t f = sp_mono_factors(&S->M, p->m[i])[k];
            const sp_var_t *v = &S->var[f.var];
            if (v->kind != SP_VAR_SYM) {
                ok = 0;
                break;
            }
            const fmpq *val = symvals + S->E->nodes[v->sym].param;
            if (f.exp < 0 && fmpq_is_zero(val)) {
                ok = 0;
                break;
            }
            fmpq_pow_si(x, val, f.exp);
            fmpq_mul(t, t, x);
        }
        fmpq_add(out, out, t);
    }
    fmpq_clear(t);
    fmpq_clear(x);
    return ok;
}

int sp_nf_eval_fmpq(const sp_engine_t *S, sp_nfid_t a, const fmpq *symvals, fmpq_t out)
{
    fmpq_t d;
    fmpq_init(d);
    int ok = eval_poly(S, S->nf[a].num, symvals, out) && eval_poly(S, S->nf[a].den, symvals, d) &&
             !fmpq_is_zero(d);
    if (ok)
        fmpq_div(out, out, d);
    fmpq_clear(d);
    return ok;
}
