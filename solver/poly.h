/* poly.h: sparse Laurent polynomials over Q with interned monomials (the engine's arithmetic). */
#ifndef SP_POLY_H
#define SP_POLY_H

#include <stddef.h>
#include <stdint.h>

#include <flint/fmpq.h>

/*
 * Why not fmpq_mpoly: FLINT packs exponent vectors densely over all context variables, so a query
 * with thousands of variables but a handful per term pays for all of them in every term
 * (docs/benchmarks.md has the measurement).  Here a monomial is a sorted list of (variable,
 * exponent) pairs, interned in a store so that a monomial is a 32-bit id and equal monomials have
 * equal ids.  Exponents are signed (Laurent monomials); exp atoms use negative exponents for
 * exp(-t), and division by a monomial never needs a denominator.
 */
typedef struct {
    uint32_t var;
    int32_t exp; /* nonzero */
} sp_vpow_t;

/* Monomial store.  Normal form: factors sorted by var, exponents nonzero; id 0 is the unit. */
typedef struct {
    sp_vpow_t *f;      /* all factor lists back to back */
    size_t flen, falloc;
    uint32_t *off;     /* off[i]: first factor of monomial i */
    uint32_t *nf;      /* nf[i]: number of factors */
    int64_t *deg;      /* total degree (sum of exponents) */
    uint64_t *hash;
    uint32_t len, alloc;
    uint32_t *table;   /* open addressing over ids + 1 */
    uint32_t tsize;
    slong max_degree;  /* |exponent sum| limit; exceeded -> sp_mono_* return SP_MONO_FAIL */
    size_t max_len;    /* monomials and factors kept at most (0: no bound); a new monomial */
    size_t max_flen;   /* past either is SP_MONO_FAIL (failed products leave theirs behind) */
    int full;          /* one of those two bounds was reached */
} sp_mstore_t;

#define SP_MONO_FAIL UINT32_MAX

void sp_mstore_init(sp_mstore_t *M);
void sp_mstore_clear(sp_mstore_t *M);
uint32_t sp_mono_intern(sp_mstore_t *M, const sp_vpow_t *f, uint32_t n);
uint32_t sp_mono_var(sp_mstore_t *M, uint32_t var, int32_t exp);
uint32_t sp_mono_mul(sp_mstore_t *M, uint32_t a, uint32_t b);
uint32_t sp_mono_pow(sp_mstore_t *M, uint32_t a, slong k);
static inline const sp_vpow_t *sp_mono_factors(const sp_mstore_t *M, uint32_t m)
{
    return M->f + M->off[m];
}
static inline uint32_t sp_mono_nfactors(const sp_mstore_t *M, uint32_t m) { return M->nf[m]; }
/* The exponent of var in m (0 if absent). */
int32_t sp_mono_exp(const sp_mstore_t *M, uint32_t m, uint32_t var);
/* Canonical order independent of ids: higher total degree first, then lexicographic. */
int sp_mono_cmp(const sp_mstore_t *M, uint32_t a, uint32_t b);

/*
 * Polynomial: terms with strictly ascending monomial ids and nonzero coefficients.  Ids ascend
 * for fast merging; sp_poly_canonical_order gives the id-independent printing order.
 */
typedef struct {
    uint32_t *m;
    fmpq *c;
    slong len, alloc;
} sp_poly_struct;
typedef sp_poly_struct sp_poly_t[1];

void sp_poly_init(sp_poly_t p);
void sp_poly_clear(sp_poly_t p);
void sp_poly_fit(sp_poly_t p, slong len);
void sp_poly_zero(sp_poly_t p);
void sp_poly_set(sp_poly_t r, const sp_poly_t p);
void sp_poly_swap(sp_poly_t p, sp_poly_t q);
void sp_poly_set_fmpq(sp_poly_t r, const fmpq_t c);
void sp_poly_set_si(sp_poly_t r, slong c);
void sp_poly_set_mono(sp_poly_t r, uint32_t m, const fmpq_t c);
int sp_poly_is_valid(const sp_poly_t p);
static inline int sp_poly_is_zero(const sp_poly_t p) { return p->len == 0; }
/* 1 if p is a constant (incl. zero). */
static inline int sp_poly_is_const(const sp_poly_t p) { return p->len == 0 || (p->len == 1 && p->m[0] == 0); }
int sp_poly_is_one(const sp_poly_t p);
int sp_poly_equal(const sp_poly_t p, const sp_poly_t q);
uint64_t sp_poly_hash(const sp_poly_t p);
void sp_poly_neg(sp_poly_t r, const sp_poly_t p);
void sp_poly_scalar_mul(sp_poly_t r, const sp_poly_t p, const fmpq_t c);
void sp_poly_scalar_div(sp_poly_t r, const sp_poly_t p, const fmpq_t c);
/* r = p + s*q, s = +1 or -1.  r may alias p or q. */
void sp_poly_add_sub(sp_poly_t r, const sp_poly_t p, const sp_poly_t q, int s);
/* r = p * mono (coefficient 1). Fails (returns 0) on the degree limit. */
int sp_poly_mul_mono(sp_mstore_t *M, sp_poly_t r, const sp_poly_t p, uint32_t m);
/* r = p*q; returns 0 if max_terms or the degree limit was exceeded (r is then zero). */
int sp_poly_mul(sp_mstore_t *M, sp_poly_t r, const sp_poly_t p, const sp_poly_t q, slong max_terms);
int sp_poly_pow(sp_mstore_t *M, sp_poly_t r, const sp_poly_t p, ulong k, slong max_terms);
/* r = sum of c[i] * m[i] for unsorted, possibly repeated monomials. */
void sp_poly_set_terms(sp_poly_t r, const uint32_t *m, const fmpq *c, slong n);
/* Indices of the terms of p in canonical order (caller frees with flint_free). */
slong *sp_poly_canonical_order(const sp_mstore_t *M, const sp_poly_t p);
/* The coefficient of the canonically leading term (p nonzero). */
const fmpq *sp_poly_lead(const sp_mstore_t *M, const sp_poly_t p);
/* The monomial gcd of p's terms (min exponent per variable over all terms; may be negative). */
uint32_t sp_poly_mono_content(sp_mstore_t *M, const sp_poly_t p);
/* The positive rational content: gcd of numerators over lcm of denominators. */
void sp_poly_content(fmpq_t c, const sp_poly_t p);
/* Total degree bounds: max over terms of the degree in var (ignoring others), or of all vars. */
slong sp_poly_degree_in(const sp_mstore_t *M, const sp_poly_t p, uint32_t var);

#endif
