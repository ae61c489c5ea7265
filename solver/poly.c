/* poly.c: interned Laurent monomials and sparse polynomials over Q. */
#include "poly.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= UINT64_C(0x7fb5d329728ea185);
    h ^= h >> 27;
    h *= UINT64_C(0x81dadef4bc2dd44d);
    h ^= h >> 33;
    return h;
}

static uint64_t factors_hash(const sp_vpow_t *f, uint32_t n)
{
    uint64_t h = UINT64_C(0x2545f4914f6cdd1d);
    for (uint32_t i = 0; i < n; i++)
        h = mix(h ^ (((uint64_t)f[i].var << 32) | (uint32_t)f[i].exp));
    return h;
}

void sp_mstore_init(sp_mstore_t *M)
{
    memset(M, 0, sizeof(*M));
    M->max_degree = 1 << 20;
    M->falloc = 16; /* never NULL: factor pointers are formed even for empty monomials */
    M->f = flint_malloc(M->falloc * sizeof(sp_vpow_t));
    sp_mono_intern(M, NULL, 0); /* id 0: the unit */
}

void sp_mstore_clear(sp_mstore_t *M)
{
    flint_free(M->f);
    flint_free(M->off);
    flint_free(M->nf);
    flint_free(M->deg);
    flint_free(M->hash);
    flint_free(M->table);
    memset(M, 0, sizeof(*M));
}

static void mstore_rehash(sp_mstore_t *M)
{
    uint32_t size = M->tsize ? 2 * M->tsize : 1024;
    uint32_t *t = flint_calloc(size, sizeof(uint32_t));
    for (uint32_t i = 0; i < M->len; i++) {
        uint32_t j = (uint32_t)M->hash[i] & (size - 1);
        while (t[j])
            j = (j + 1) & (size - 1);
        t[j] = i + 1;
    }
    flint_free(M->table);
    M->table = t;
    M->tsize = size;
}

uint32_t sp_mono_intern(sp_mstore_t *M, const sp_vpow_t *f, uint32_t n)
{
    uint64_t h = factors_hash(f, n);
    if (M->tsize) {
        uint32_t j = (uint32_t)h & (M->tsize - 1);
        while (M->table[j]) {
            uint32_t id = M->table[j] - 1;
            if (M->hash[id] == h && M->nf[id] == n &&
                (n == 0 || memcmp(M->f + M->off[id], f, n * sizeof(sp_vpow_t)) == 0))
                return id;
            j = (j + 1) & (M->tsize - 1);
        }
    }
    int64_t deg = 0;
    for (uint32_t i = 0; i < n; i++)
        deg += f[i].exp;
    if (deg > M->max_degree || -deg > M->max_degree)
        return SP_MONO_FAIL;
    if ((M->max_len && M->len >= M->max_len) || (M->max_flen && M->flen + n > M->max_flen)) {
        M->full = 1;
        return SP_MONO_FAIL;
    }
    if (M->len + 1 >= UINT32_MAX - 1)
        return SP_MONO_FAIL;
    if (M->len == M->alloc) {
        uint32_t a = M->alloc ? 2 * M->alloc : 1024;
        M->off = flint_realloc(M->off, a * sizeof(uint32_t));
        M->nf = flint_realloc(M->nf, a * sizeof(uint32_t));
        M->deg = flint_realloc(M->deg, a * sizeof(int64_t));
        M->hash = flint_realloc(M->hash, a * sizeof(uint64_t));
        M->alloc = a;
    }
    if (M->flen + n > M->falloc) {
        size_t a = M->falloc ? 2 * M->falloc : 4096;
        while (a < M->flen + n)
            a *= 2;
        M->f = flint_realloc(M->f, a * sizeof(sp_vpow_t));
        M->falloc = a;
    }
    uint32_t id = M->len++;
    M->off[id] = (uint32_t)M->flen;
    M->nf[id] = n;
    M->deg[id] = deg;
    M->hash[id] = h;
    if (n)
        memcpy(M->f + M->flen, f, n * sizeof(sp_vpow_t));
    M->flen += n;
    if (2 * (size_t)M->len > M->tsize) {
        mstore_rehash(M);
    } else {
        uint32_t j = (uint32_t)h & (M->tsize - 1);
        while (M->table[j])
            j = (j + 1) & (M->tsize - 1);
        M->table[j] = id + 1;
    }
    return id;
}

uint32_t sp_mono_var(sp_mstore_t *M, uint32_t var, int32_t exp)
{
    if (exp == 0)
        return 0;
    sp_vpow_t f = {var, exp};
    return sp_mono_intern(M, &f, 1);
}

int32_t sp_mono_exp(const sp_mstore_t *M, uint32_t m, uint32_t var)
{
    const sp_vpow_t *f = sp_mono_factors(M, m);
    for (uint32_t i = 0; i < M->nf[m]; i++)
        if (f[i].var == var)
            return f[i].exp;
    return 0;
}

/* Merge two factor lists with exponent multipliers; result into buf (capacity na+nb). */
static uint32_t merge(sp_vpow_t *buf, const sp_vpow_t *a, uint32_t na, const sp_vpow_t *b,
                      uint32_t nb, int *overflow)
{
    uint32_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        if (j == nb || (i < na && a[i].var < b[j].var)) {
            buf[k++] = a[i++];
        } else if (i == na || b[j].var < a[i].var) {
            buf[k++] = b[j++];
        } else {
            int64_t e = (int64_t)a[i].exp + b[j].exp;
            if (e > INT32_MAX || e < INT32_MIN)
                *overflow = 1;
            if (e != 0) {
                buf[k].var = a[i].var;
                buf[k].exp = (int32_t)e;
                k++;
            }
            i++;
            j++;
        }
    }
    return k;
}

uint32_t sp_mono_mul(sp_mstore_t *M, uint32_t a, uint32_t b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    uint32_t na = M->nf[a], nb = M->nf[b];
    sp_vpow_t small[32];
    sp_vpow_t *buf = na + nb <= 32 ? small : flint_malloc((na + nb) * sizeof(sp_vpow_t));
    int overflow = 0;
    /* the store may move during intern, so copy the operands' positions first */
    uint32_t k = merge(buf, M->f + M->off[a], na, M->f + M->off[b], nb, &overflow);
    uint32_t r = overflow ? SP_MONO_FAIL : sp_mono_intern(M, buf, k);
    if (buf != small)
        flint_free(buf);
    return r;
}

uint32_t sp_mono_pow(sp_mstore_t *M, uint32_t a, slong k)
{
    if (k == 0 || a == 0)
        return 0;
    uint32_t n = M->nf[a];
    sp_vpow_t *buf = flint_malloc((n ? n : 1) * sizeof(sp_vpow_t));
    memcpy(buf, M->f + M->off[a], n * sizeof(sp_vpow_t));
    uint32_t r = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t e = (int64_t)buf[i].exp * k;
        if (e > M->max_degree || -e > M->max_degree) {
            r = SP_MONO_FAIL;
            break;
        }
        buf[i].exp = (int32_t)e;
    }
    if (r != SP_MONO_FAIL)
        r = sp_mono_intern(M, buf, n);
    flint_free(buf);
    return r;
}

int sp_mono_cmp(const sp_mstore_t *M, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    if (M->deg[a] != M->deg[b])
        return M->deg[a] > M->deg[b] ? -1 : 1;
    const sp_vpow_t *fa = sp_mono_factors(M, a), *fb = sp_mono_factors(M, b);
    uint32_t na = M->nf[a], nb = M->nf[b];
    for (uint32_t i = 0; i < na && i < nb; i++) {
        if (fa[i].var != fb[i].var)
            return fa[i].var < fb[i].var ? -1 : 1;
        if (fa[i].exp != fb[i].exp)
            return fa[i].exp > fb[i].exp ? -1 : 1;
    }
    return na == nb ? 0 : (na > nb ? -1 : 1);
}

/* ---- polynomials -------------------------------------------------------------------------- */

void sp_poly_init(sp_poly_t p)
{
    p->m = NULL;
    p->c = NULL;
    p->len = p->alloc = 0;
}

void sp_poly_clear(sp_poly_t p)
{
    for (slong i = 0; i < p->alloc; i++)
        fmpq_clear(p->c + i);
    flint_free(p->m);
    flint_free(p->c);
    sp_poly_init(p);
}

void sp_poly_fit(sp_poly_t p, slong len)
{
    if (len <= p->alloc)
        return;
    slong a = p->alloc ? 2 * p->alloc : 4;
    while (a < len)
        a *= 2;
    p->m = flint_realloc(p->m, a * sizeof(uint32_t));
    p->c = flint_realloc(p->c, a * sizeof(fmpq));
    for (slong i = p->alloc; i < a; i++)
        fmpq_init(p->c + i);
    p->alloc = a;
}

void sp_poly_zero(sp_poly_t p) { p->len = 0; }

void sp_poly_set(sp_poly_t r, const sp_poly_t p)
{
    if (r == p)
        return;
    sp_poly_fit(r, p->len);
    for (slong i = 0; i < p->len; i++) {
        r->m[i] = p->m[i];
        fmpq_set(r->c + i, p->c + i);
    }
    r->len = p->len;
}

void sp_poly_swap(sp_poly_t p, sp_poly_t q)
{
    sp_poly_struct t = *p;
    *p = *q;
    *q = t;
}

void sp_poly_set_mono(sp_poly_t r, uint32_t m, const fmpq_t c)
{
    if (fmpq_is_zero(c)) {
        r->len = 0;
        return;
    }
    sp_poly_fit(r, 1);
    r->m[0] = m;
    fmpq_set(r->c, c);
    r->len = 1;
}

void sp_poly_set_fmpq(sp_poly_t r, const fmpq_t c) { sp_poly_set_mono(r, 0, c); }

void sp_poly_set_si(sp_poly_t r, slong c)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, c, 1);
    sp_poly_set_fmpq(r, q);
    fmpq_clear(q);
}

int sp_poly_is_valid(const sp_poly_t p)
{
    for (slong i = 0; i < p->len; i++) {
        if (fmpq_is_zero(p->c + i) || !fmpq_is_canonical(p->c + i))
            return 0;
        if (i > 0 && p->m[i - 1] >= p->m[i])
            return 0;
    }
    return 1;
}

int sp_poly_is_one(const sp_poly_t p)
{
    return p->len == 1 && p->m[0] == 0 && fmpq_is_one(p->c);
}

int sp_poly_equal(const sp_poly_t p, const sp_poly_t q)
{
    if (p->len != q->len)
        return 0;
    for (slong i = 0; i < p->len; i++)
        if (p->m[i] != q->m[i] || !fmpq_equal(p->c + i, q->c + i))
            return 0;
    return 1;
}

static uint64_t fmpz_h(const fmpz_t z)
{
    if (!COEFF_IS_MPZ(*z))
        return mix((uint64_t)*z);
    const __mpz_struct *m = COEFF_TO_PTR(*z);
    uint64_t h = (uint64_t)m->_mp_size;
    for (int i = 0; i < abs(m->_mp_size); i++)
        h = mix(h ^ m->_mp_d[i]);
    return h;
}

uint64_t sp_poly_hash(const sp_poly_t p)
{
    uint64_t h = mix((uint64_t)p->len + 17);
    for (slong i = 0; i < p->len; i++)
        h = mix(h ^ p->m[i] ^ (fmpz_h(fmpq_numref(p->c + i)) * 3 + fmpz_h(fmpq_denref(p->c + i))));
    return h;
}

void sp_poly_neg(sp_poly_t r, const sp_poly_t p)
{
    sp_poly_set(r, p);
    for (slong i = 0; i < r->len; i++)
        fmpq_neg(r->c + i, r->c + i);
}

void sp_poly_scalar_mul(sp_poly_t r, const sp_poly_t p, const fmpq_t c0)
{
    if (fmpq_is_zero(c0)) {
        r->len = 0;
        return;
    }
    fmpq_t c; /* c0 may point into p or r */
    fmpq_init(c);
    fmpq_set(c, c0);
    sp_poly_set(r, p);
    for (slong i = 0; i < r->len; i++)
        fmpq_mul(r->c + i, r->c + i, c);
    fmpq_clear(c);
}

void sp_poly_scalar_div(sp_poly_t r, const sp_poly_t p, const fmpq_t c0)
{
    fmpq_t c;
    fmpq_init(c);
    fmpq_set(c, c0);
    sp_poly_set(r, p);
    for (slong i = 0; i < r->len; i++)
        fmpq_div(r->c + i, r->c + i, c);
    fmpq_clear(c);
}

void sp_poly_add_sub(sp_poly_t r, const sp_poly_t p, const sp_poly_t q, int s)
{
    sp_poly_t t;
    sp_poly_init(t);
    sp_poly_fit(t, p->len + q->len);
    slong i = 0, j = 0, k = 0;
    while (i < p->len || j < q->len) {
        if (j == q->len || (i < p->len && p->m[i] < q->m[j])) {
            t->m[k] = p->m[i];
            fmpq_set(t->c + k, p->c + i);
            i++;
            k++;
        } else if (i == p->len || q->m[j] < p->m[i]) {
            t->m[k] = q->m[j];
            if (s > 0)
                fmpq_set(t->c + k, q->c + j);
            else
                fmpq_neg(t->c + k, q->c + j);
            j++;
            k++;
        } else {
            if (s > 0)
                fmpq_add(t->c + k, p->c + i, q->c + j);
            else
                fmpq_sub(t->c + k, p->c + i, q->c + j);
            if (!fmpq_is_zero(t->c + k)) {
                t->m[k] = p->m[i];
                k++;
            }
            i++;
            j++;
        }
    }
    t->len = k;
    sp_poly_swap(r, t);
    sp_poly_clear(t);
}

/* Accumulator: unsorted (monomial, coefficient) pairs summed by monomial. */
typedef struct {
    uint32_t *slot;  /* hash table over indices + 1 */
    uint32_t size;
    uint32_t *m;
    fmpq *c;
    slong len, alloc;
} acc_t;

static void acc_init(acc_t *A, slong expect)
{
    uint32_t size = 64;
    while (size < 2 * (uint64_t)expect + 2 && size < (UINT32_C(1) << 30))
        size *= 2;
    A->slot = flint_calloc(size, sizeof(uint32_t));
    A->size = size;
    A->m = NULL;
    A->c = NULL;
    A->len = A->alloc = 0;
}

static void acc_clear(acc_t *A)
{
    for (slong i = 0; i < A->alloc; i++)
        fmpq_clear(A->c + i);
    flint_free(A->slot);
    flint_free(A->m);
    flint_free(A->c);
}

static void acc_grow_table(acc_t *A)
{
    uint32_t size = 2 * A->size;
    uint32_t *t = flint_calloc(size, sizeof(uint32_t));
    for (slong i = 0; i < A->len; i++) {
        uint32_t j = (uint32_t)mix(A->m[i]) & (size - 1);
        while (t[j])
            j = (j + 1) & (size - 1);
        t[j] = (uint32_t)i + 1;
    }
    flint_free(A->slot);
    A->slot = t;
    A->size = size;
}

/* Returns the coefficient slot of monomial m, created as zero if absent. */
static fmpq *acc_slot(acc_t *A, uint32_t m)
{
    uint32_t j = (uint32_t)mix(m) & (A->size - 1);
    while (A->slot[j]) {
        uint32_t i = A->slot[j] - 1;
        if (A->m[i] == m)
            return A->c + i;
        j = (j + 1) & (A->size - 1);
    }
    if (A->len == A->alloc) {
        slong a = A->alloc ? 2 * A->alloc : 16;
        A->m = flint_realloc(A->m, a * sizeof(uint32_t));
        A->c = flint_realloc(A->c, a * sizeof(fmpq));
        for (slong i = A->alloc; i < a; i++)
            fmpq_init(A->c + i);
        A->alloc = a;
    }
    slong i = A->len++;
    A->m[i] = m;
    fmpq_zero(A->c + i);
    A->slot[j] = (uint32_t)i + 1;
    if (2 * (uint64_t)A->len > A->size)
        acc_grow_table(A);
    return A->c + i;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Move the accumulated nonzero terms into r, sorted by monomial id. */
static void acc_finish(acc_t *A, sp_poly_t r)
{
    uint64_t *key = flint_malloc((A->len ? A->len : 1) * sizeof(uint64_t));
    slong n = 0;
    for (slong i = 0; i < A->len; i++)
        if (!fmpq_is_zero(A->c + i))
            key[n++] = ((uint64_t)A->m[i] << 32) | (uint64_t)i;
    qsort(key, (size_t)n, sizeof(uint64_t), cmp_u64);
    sp_poly_fit(r, n);
    for (slong k = 0; k < n; k++) {
        slong i = (slong)(key[k] & 0xffffffffu);
        r->m[k] = A->m[i];
        fmpq_swap(r->c + k, A->c + i);
    }
    r->len = n;
    flint_free(key);
}

int sp_poly_mul_mono(sp_mstore_t *M, sp_poly_t r, const sp_poly_t p, uint32_t m)
{
    if (m == 0) {
        sp_poly_set(r, p);
        return 1;
    }
    acc_t A;
    acc_init(&A, p->len);
    for (slong i = 0; i < p->len; i++) {
        uint32_t mm = sp_mono_mul(M, p->m[i], m);
        if (mm == SP_MONO_FAIL) {
            acc_clear(&A);
            r->len = 0;
            return 0;
        }
        fmpq_set(acc_slot(&A, mm), p->c + i);
    }
    acc_finish(&A, r);
    acc_clear(&A);
    return 1;
}

int sp_poly_mul(sp_mstore_t *M, sp_poly_t r, const sp_poly_t p, const sp_poly_t q, slong max_terms)
{
    if (p->len == 0 || q->len == 0) {
        r->len = 0;
        return 1;
    }
    if ((p->len == 1 && p->m[0] == 0) || (q->len == 1 && q->m[0] == 0)) {
        /* a constant factor: copy it first, r may alias either operand */
        int pc = p->len == 1 && p->m[0] == 0;
        fmpq_t c;
        fmpq_init(c);
        fmpq_set(c, pc ? p->c : q->c);
        sp_poly_scalar_mul(r, pc ? q : p, c);
        fmpq_clear(c);
        return 1;
    }
    acc_t A;
    acc_init(&A, FLINT_MAX(p->len, q->len));
    fmpq_t t;
    fmpq_init(t);
    int ok = 1;
    for (slong i = 0; i < p->len && ok; i++) {
        for (slong j = 0; j < q->len; j++) {
            uint32_t mm = sp_mono_mul(M, p->m[i], q->m[j]);
            if (mm == SP_MONO_FAIL || (max_terms > 0 && A.len > max_terms)) {
                ok = 0;
                break;
            }
            fmpq_mul(t, p->c + i, q->c + j);
            fmpq *s = acc_slot(&A, mm);
            fmpq_add(s, s, t);
        }
    }
    fmpq_clear(t);
    if (ok)
        acc_finish(&A, r);
    else
        r->len = 0;
    acc_clear(&A);
    return ok;
}

int sp_poly_pow(sp_mstore_t *M, sp_poly_t r, const sp_poly_t p, ulong k, slong max_terms)
{
    if (p->len == 1) {
        uint32_t mm = sp_mono_pow(M, p->m[0], (slong)k);
        if (mm == SP_MONO_FAIL) {
            r->len = 0;
            return 0;
        }
        fmpq_t c;
        fmpq_init(c);
        fmpq_pow_si(c, p->c, (slong)k);
        sp_poly_set_mono(r, mm, c);
        fmpq_clear(c);
        return 1;
    }
    sp_poly_t acc, base;
    sp_poly_init(acc);
    sp_poly_init(base);
    sp_poly_set_si(acc, 1);
    sp_poly_set(base, p);
    int ok = 1;
    while (k && ok) {
        if (k & 1)
            ok = sp_poly_mul(M, acc, acc, base, max_terms);
        k >>= 1;
        if (k && ok)
            ok = sp_poly_mul(M, base, base, base, max_terms);
    }
    if (ok)
        sp_poly_swap(r, acc);
    else
        r->len = 0;
    sp_poly_clear(acc);
    sp_poly_clear(base);
    return ok;
}

/* Stable merge sort of term indices by canonical monomial order (no global state). */
slong *sp_poly_canonical_order(const sp_mstore_t *M, const sp_poly_t p)
{
    slong n = p->len;
    slong *a = flint_malloc((n ? n : 1) * sizeof(slong));
    slong *b = flint_malloc((n ? n : 1) * sizeof(slong));
    for (slong i = 0; i < n; i++)
        a[i] = i;
    for (slong w = 1; w < n; w *= 2) {
        for (slong lo = 0; lo < n; lo += 2 * w) {
            slong mid = FLINT_MIN(lo + w, n), hi = FLINT_MIN(lo + 2 * w, n);
            slong i = lo, j = mid, k = lo;
            while (i < mid || j < hi) {
                if (j == hi || (i < mid && sp_mono_cmp(M, p->m[a[i]], p->m[a[j]]) <= 0))
                    b[k++] = a[i++];
                else
                    b[k++] = a[j++];
            }
        }
        slong *t = a;
        a = b;
        b = t;
    }
    flint_free(b);
    return a;
}

const fmpq *sp_poly_lead(const sp_mstore_t *M, const sp_poly_t p)
{
    slong best = 0;
    for (slong i = 1; i < p->len; i++)
        if (sp_mono_cmp(M, p->m[i], p->m[best]) < 0)
            best = i;
    return p->c + best;
}

static int cmp_vpow(const void *a, const void *b)
{
    const sp_vpow_t *x = a, *y = b;
    if (x->var != y->var)
        return x->var < y->var ? -1 : 1;
    return (x->exp > y->exp) - (x->exp < y->exp);
}

uint32_t sp_poly_mono_content(sp_mstore_t *M, const sp_poly_t p)
{
    if (p->len == 0)
        return 0;
    size_t total = 0;
    for (slong i = 0; i < p->len; i++)
        total += M->nf[p->m[i]];
    if (total == 0)
        return 0;
    sp_vpow_t *v = flint_malloc(total * sizeof(sp_vpow_t));
    size_t k = 0;
    for (slong i = 0; i < p->len; i++) {
        memcpy(v + k, sp_mono_factors(M, p->m[i]), M->nf[p->m[i]] * sizeof(sp_vpow_t));
        k += M->nf[p->m[i]];
    }
    qsort(v, total, sizeof(sp_vpow_t), cmp_vpow);
    /* per variable: the smallest exponent comes first; terms lacking the variable count as 0 */
    size_t out = 0;
    for (size_t a = 0; a < total;) {
        size_t b = a;
        while (b < total && v[b].var == v[a].var)
            b++;
        int32_t mn = v[a].exp;
        if ((slong)(b - a) < p->len && mn > 0)
            mn = 0;
        if (mn != 0) {
            v[out].var = v[a].var;
            v[out].exp = mn;
            out++;
        }
        a = b;
    }
    uint32_t r = sp_mono_intern(M, v, (uint32_t)out);
    flint_free(v);
    return r;
}

void sp_poly_content(fmpq_t c, const sp_poly_t p)
{
    fmpz_t g, l;
    fmpz_init(g);
    fmpz_init_set_ui(l, 1);
    for (slong i = 0; i < p->len; i++) {
        fmpz_gcd(g, g, fmpq_numref(p->c + i));
        fmpz_lcm(l, l, fmpq_denref(p->c + i));
    }
    if (fmpz_is_zero(g))
        fmpz_one(g);
    fmpq_set_fmpz_frac(c, g, l);
    fmpz_clear(g);
    fmpz_clear(l);
}

slong sp_poly_degree_in(const sp_mstore_t *M, const sp_poly_t p, uint32_t var)
{
    slong d = 0;
    for (slong i = 0; i < p->len; i++)
        d = FLINT_MAX(d, sp_mono_exp(M, p->m[i], var));
    return d;
}

void sp_poly_set_terms(sp_poly_t r, const uint32_t *m, const fmpq *c, slong n)
{
    acc_t A;
    acc_init(&A, n);
    for (slong i = 0; i < n; i++) {
        fmpq *s = acc_slot(&A, m[i]);
        fmpq_add(s, s, c + i);
    }
    acc_finish(&A, r);
    acc_clear(&A);
}
