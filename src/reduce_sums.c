/* reduce_sums.c: sizes the program adds or subtracts keep their real sizes (shape reduction). */
#include <flint/flint.h>
#include <flint/fmpq.h>
#include <flint/fmpq_vec.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/*
 * The reduction keeps the multiplicative relations among sizes (src/reduce.c relations_kept())
 * but not the additive ones: a slice [S, H) has H - S elements, and H - S may equal another
 * size K at the reduced sizes only (a count over it then stands for a count over K).  So every
 * closed size expression of the program (dims, integer and rational literals, mesh sizes, rank
 * coordinates and loop variables combined by + - * /), every slice's and range's extent (end -
 * start) and every loop's trip count is read as a Laurent polynomial in the dims whose
 * coefficients are polynomials in the other names; it must be a single monomial in the dims
 * (`(rank.cp + 1)*(S/cp) - rank.cp*(S/cp)` is S/cp; `HD - HD/2` is HD/2).  Where it is not (a
 * sum of two sizes, a size plus a literal, a division by a sum), every dim it names keeps its
 * real size.  Extents that only the data makes (a concatenation of unequal parts, a padding, a
 * negative slice bound) are caught while executing (src/ops_shape.c: the check goes to the
 * real sizes).  docs/soundness.md, "Sums of sizes".
 */

#define LP_VARS 64   /* dims and other names in one expression; beyond: kept real */
#define LP_TERMS 48  /* terms of one form; beyond: kept real */

typedef struct {
    int n;
    fmpq *c;
    int (*e)[LP_VARS];
} lpoly_t;

/* A definition of a tensor name in one part of the program (the model, the plan, a function):
   an input, a parameter, a layout statement, an assignment (with its lineage layout), an
   output, or any other binding (opaque: its extent is not read). */
typedef struct {
    const char *name;
    int indexed;                   /* the target is an element `x[i]` */
    const sp_ast_layout_t *layout; /* declared (verified by the check at every size) */
    const sp_ast_expr_t *value;    /* without a layout: the assigned value; NULL: opaque */
} def_t;

typedef struct {
    sp_check_t *C;              /* read, and where the readings are recorded */
    const sp_mesh_t *mesh;
    const char *names[LP_VARS]; /* variables nd..: mesh sizes, rank coordinates, loop variables */
    int nnames, nd;
    const char **loops;         /* the loop variables of the program */
    size_t nloops, caploops;
    uint8_t *seen;              /* dims named by the expression being read */
    uint8_t *keep;
    def_t *defs;                /* the definitions of tensor names in the part being read */
    int plan_part;              /* that part is the plan's body (sends and recvs pair there) */
    long steps;                 /* name_extent() calls so far (bounded) */
    size_t ndefs, capdefs;
} sums_t;

static void lp_init(lpoly_t *p)
{
    p->n = 0;
    p->c = _fmpq_vec_init(LP_TERMS);
    p->e = flint_calloc(LP_TERMS, sizeof(*p->e));
}

static void lp_clear(lpoly_t *p)
{
    _fmpq_vec_clear(p->c, LP_TERMS);
    flint_free(p->e);
}

/* p += s * c * x^e; 0 when the form has too many terms */
static int lp_add_term(lpoly_t *p, const fmpq_t c, const int *e, int s)
{
    for (int i = 0; i < p->n; i++)
        if (memcmp(p->e[i], e, sizeof(p->e[i])) == 0) {
            if (s > 0)
                fmpq_add(p->c + i, p->c + i, c);
            else
                fmpq_sub(p->c + i, p->c + i, c);
            if (fmpq_is_zero(p->c + i)) {
                p->n--;
                fmpq_swap(p->c + i, p->c + p->n);
                memcpy(p->e[i], p->e[p->n], sizeof(p->e[i]));
            }
            return 1;
        }
    if (p->n == LP_TERMS)
        return 0;
    if (s > 0)
        fmpq_set(p->c + p->n, c);
    else
        fmpq_neg(p->c + p->n, c);
    memcpy(p->e[p->n], e, sizeof(p->e[0]));
    p->n++;
    return 1;
}

/* r += s*b; 0 when the form has too many terms */
static int lp_add(lpoly_t *r, const lpoly_t *b, int s)
{
    for (int i = 0; i < b->n; i++)
        if (!lp_add_term(r, b->c + i, b->e[i], s))
            return 0;
    return 1;
}

/* r = a * b (r distinct from both) */
static int lp_mul(lpoly_t *r, const lpoly_t *a, const lpoly_t *b)
{
    fmpq_t c;
    int e[LP_VARS];
    fmpq_init(c);
    r->n = 0;
    int ok = 1;
    for (int i = 0; ok && i < a->n; i++)
        for (int j = 0; ok && j < b->n; j++) {
            fmpq_mul(c, a->c + i, b->c + j);
            for (int v = 0; v < LP_VARS; v++)
                e[v] = a->e[i][v] + b->e[j][v];
            ok = lp_add_term(r, c, e, 1);
        }
    fmpq_clear(c);
    return ok;
}

/* Is p one monomial in the dims (every term the same exponents on variables 0..nd-1)? */
static int lp_dim_monomial(const lpoly_t *p, int nd)
{
    for (int i = 1; i < p->n; i++)
        if (memcmp(p->e[i], p->e[0], (size_t)nd * sizeof(int)) != 0)
            return 0;
    return 1;
}

static int name_var(sums_t *S, const char *name)
{
    for (int i = 0; i < S->nnames; i++)
        if (strcmp(S->names[i], name) == 0)
            return S->nd + i;
    if (S->nd + S->nnames == LP_VARS)
        return -1;
    S->names[S->nnames++] = name;
    return S->nd + S->nnames - 1;
}

static int is_loop_var(const sums_t *S, const char *name)
{
    for (size_t i = 0; i < S->nloops; i++)
        if (strcmp(S->loops[i], name) == 0)
            return 1;
    return 0;
}

/*
 * Read e as a form: 1 (in *p), 0 when e is no closed size expression (a tensor, a call, a
 * comparison), 2 when it is one that is not a monomial where it must be (a division by a sum)
 * or too large to read.
 */
static int lp_read(sums_t *S, const sp_ast_expr_t *e, lpoly_t *p, int depth)
{
    const sp_check_t *C = S->C;
    int ev[LP_VARS] = {0};
    fmpq_t one;
    p->n = 0;
    if (e == NULL || depth > 64)
        return 0;
    switch (e->kind) {
    case SP_AST_NUM:
        if (!fmpq_is_zero(e->value))
            lp_add_term(p, e->value, ev, 1);
        return 1;
    case SP_AST_NAME: {
        int d = sp_dim_find(C, e->name), v;
        if (d >= 0 && C->dims[d].derived)
            return lp_read(S, C->dims[d].def, p, depth + 1);
        if (d >= 0) {
            S->seen[d] = 1;
            v = d;
        } else if (strncmp(e->name, "rank.", 5) == 0 || is_loop_var(S, e->name) ||
                   (S->mesh && sp_mesh_axis(S->mesh, e->name) >= 0)) {
            if ((v = name_var(S, e->name)) < 0)
                return 2;
        } else {
            return 0;
        }
        ev[v] = 1;
        fmpq_init(one);
        fmpq_one(one);
        lp_add_term(p, one, ev, 1);
        fmpq_clear(one);
        return 1;
    }
    case SP_AST_NEG: {
        int r = lp_read(S, e->a, p, depth + 1);
        for (int i = 0; r == 1 && i < p->n; i++)
            fmpq_neg(p->c + i, p->c + i);
        return r;
    }
    case SP_AST_BINOP:
        break;
    default:
        return 0;
    }
    if (e->op != SP_BIN_ADD && e->op != SP_BIN_SUB && e->op != SP_BIN_MUL && e->op != SP_BIN_DIV)
        return 0;
    lpoly_t a, b;
    lp_init(&a);
    lp_init(&b);
    int ra = lp_read(S, e->a, &a, depth + 1), rb = ra ? lp_read(S, e->b, &b, depth + 1) : 0;
    int r = ra == 0 || rb == 0 ? 0 : ra == 2 || rb == 2 ? 2 : 1;
    if (r == 1) {
        switch (e->op) {
        case SP_BIN_ADD:
        case SP_BIN_SUB:
            p->n = 0;
            if (!lp_add(p, &a, 1) || !lp_add(p, &b, e->op == SP_BIN_ADD ? 1 : -1))
                r = 2;
            break;
        case SP_BIN_MUL:
            if (!lp_mul(p, &a, &b))
                r = 2;
            break;
        default:
            /* a division by one monomial multiplies by its inverse; by a sum (or zero), it is
               no monomial */
            if (b.n != 1) {
                r = 2;
                break;
            }
            fmpq_inv(b.c, b.c);
            for (int v = 0; v < LP_VARS; v++)
                b.e[0][v] = -b.e[0][v];
            if (!lp_mul(p, &a, &b))
                r = 2;
            break;
        }
    }
    lp_clear(&a);
    lp_clear(&b);
    return r;
}

static void keep_seen(sums_t *S)
{
    for (int d = 0; d < S->nd; d++)
        if (S->seen[d])
            S->keep[d] = 1;
}

/* Read hi - lo (lo NULL: 0); a closed form that is not a monomial in the dims keeps its dims
   real.  Returns 1 if it was a closed form. */
static int check_extent(sums_t *S, const sp_ast_expr_t *lo, const sp_ast_expr_t *hi)
{
    lpoly_t a, b;
    lp_init(&a);
    lp_init(&b);
    memset(S->seen, 0, (size_t)S->nd);
    int ra = lo ? lp_read(S, lo, &a, 0) : 1, rb = lp_read(S, hi, &b, 0);
    int closed = ra != 0 && rb != 0;
    if (closed && (ra == 2 || rb == 2 || !lp_add(&b, &a, -1) || !lp_dim_monomial(&b, S->nd)))
        keep_seen(S);
    lp_clear(&a);
    lp_clear(&b);
    return closed;
}

static const sp_ast_expr_t *slice_arg(const sp_ast_expr_t *e, const char *key, size_t pos)
{
    for (size_t i = 0; i < e->nargs; i++)
        if (e->args[i].key.str ? strcmp(e->args[i].key.str, key) == 0 : i == pos)
            return e->args[i].value;
    return NULL;
}

static int is_recv(const sp_ast_expr_t *v)
{
    return v && v->kind == SP_AST_CALL && strcmp(v->name, "recv") == 0;
}

/* An extent read for a received tensor at loc: along dim d, the form f of its target's other
   definitions, over the dims and names[] (variables nd..). */
struct sp_recv_read {
    sp_loc_t loc;
    int64_t d;
    lpoly_t f;
    const char *names[LP_VARS];
    int nd;
};

static int same_loc(sp_loc_t a, sp_loc_t b)
{
    return a.line == b.line && a.col == b.col && a.file == b.file;
}

/* The value of form p with variable v at val[v] (0: unknown, and p is not evaluated). */
static int lp_eval(const lpoly_t *p, const int64_t *val, fmpq_t out)
{
    fmpq_t t, x;
    fmpq_init(t);
    fmpq_init(x);
    fmpq_zero(out);
    int ok = 1;
    for (int i = 0; ok && i < p->n; i++) {
        fmpq_set(t, p->c + i);
        for (int v = 0; ok && v < LP_VARS; v++) {
            int e = p->e[i][v];
            if (e == 0)
                continue;
            if (val[v] == 0) {
                ok = 0;
                break;
            }
            fmpq_set_si(x, val[v], 1);
            if (e < 0)
                fmpq_inv(x, x);
            for (int k = 0; k < (e < 0 ? -e : e); k++)
                fmpq_mul(t, t, x);
        }
        fmpq_add(out, out, t);
    }
    fmpq_clear(t);
    fmpq_clear(x);
    return ok;
}

/* The variables' values: the dims at their real (real = 1) or reduced sizes, names[] that are
   mesh axes at the size of mesh (at the real sizes not a cut axis); anything else unknown. */
static void var_values(const sp_check_t *C, const sp_mesh_t *mesh, int nd,
                       const char *const *names, int real, int64_t *val)
{
    memset(val, 0, LP_VARS * sizeof(int64_t));
    for (int v = 0; v < nd; v++)
        val[v] = real ? C->dims[v].real : C->dims[v].red;
    for (int v = nd; v < LP_VARS && names[v - nd]; v++) {
        int ax = mesh ? sp_mesh_axis(mesh, names[v - nd]) : -1;
        for (int c = 0; real && ax >= 0 && c < C->ncutoff; c++)
            if (strcmp(C->cutoff[c].name, names[v - nd]) == 0)
                ax = -1;
        if (ax >= 0)
            val[v] = mesh->size[ax];
    }
}

int sp_reduce_recv_holds(const sp_check_t *C, sp_loc_t loc, const sp_tensor_t *t)
{
    fmpq_t v;
    fmpq_init(v);
    int64_t val[LP_VARS];
    int ok = 1;
    for (int i = 0; ok && i < C->nrecv_read; i++) {
        const struct sp_recv_read *r = &C->recv_read[i];
        if (!same_loc(r->loc, loc))
            continue;
        int64_t d = r->d < 0 ? r->d + t->ndim : r->d;
        var_values(C, &C->mesh, r->nd, r->names, 0, val);
        ok = d >= 0 && d < t->ndim && lp_eval(&r->f, val, v) && fmpz_is_one(fmpq_denref(v)) &&
             fmpz_cmp_si(fmpq_numref(v), t->shape[d]) == 0;
    }
    fmpq_clear(v);
    return ok;
}

/* ---- monomials of offsets and extents while executing (src/ops_pos.c, src/exec.c) --------- */

static void loops_of(sums_t *S, const sp_ast_block_t *b);

struct sp_pos_rt {
    sums_t S;                /* variables: mesh axes, rank coordinates, loop variables */
    int (*mono)[LP_VARS];    /* interned exponent vectors over the dims; id = index + 2 */
    int nmono, capmono;
    struct pos_memo {
        const void *lo, *hi;
        int32_t id;
        int named; /* hi - lo has a coefficient of rank coordinates or loop variables */
    } *memo;                 /* open addressing, a power of two */
    size_t nmemo, capmemo;
    int ncutoff;             /* C->ncutoff the monomials were read with (pos_read) */
};

static void pos_rt_free(sp_check_t *C)
{
    struct sp_pos_rt *R = C->pos_rt;
    if (R == NULL)
        return;
    flint_free(R->S.loops);
    flint_free(R->S.seen);
    flint_free(R->mono);
    flint_free(R->memo);
    flint_free(R);
    C->pos_rt = NULL;
}

static struct sp_pos_rt *pos_rt_get(sp_check_t *C)
{
    if (C->pos_rt && C->pos_rt->ncutoff != C->ncutoff)
        pos_rt_free(C); /* a run with another mesh cutoff: its monomials are other ones */
    if (C->pos_rt)
        return C->pos_rt;
    struct sp_pos_rt *R = flint_calloc(1, sizeof(*R));
    R->S.C = C;
    R->S.mesh = &C->mesh;
    R->S.nd = C->ndims;
    R->S.seen = flint_calloc((size_t)(C->ndims ? C->ndims : 1), 1);
    const sp_ast_block_t *blocks[2] = {C->plan ? &C->plan->body : NULL,
                                       C->model ? &C->model->body : NULL};
    for (int k = 0; k < 2; k++)
        if (blocks[k])
            loops_of(&R->S, blocks[k]);
    for (int i = 0; i < C->nfuncs; i++)
        loops_of(&R->S, &C->funcs[i]->body);
    R->capmemo = 256;
    R->memo = flint_calloc(R->capmemo, sizeof(*R->memo));
    R->ncutoff = C->ncutoff;
    C->pos_rt = R;
    return R;
}

/* The id of the monomial key (its first nk exponents compared), interned */
static int32_t mono_intern(struct sp_pos_rt *R, const int *key, int nk)
{
    int i = 0;
    while (i < R->nmono && memcmp(R->mono[i], key, (size_t)nk * sizeof(int)) != 0)
        i++;
    if (i == R->nmono) {
        if (R->nmono == R->capmono) {
            R->capmono = R->capmono ? 2 * R->capmono : 16;
            R->mono = flint_realloc(R->mono, (size_t)R->capmono * sizeof(*R->mono));
        }
        memcpy(R->mono[R->nmono++], key, sizeof(*R->mono));
    }
    return i + 2;
}

static int32_t pos_read(struct sp_pos_rt *R, const sp_ast_expr_t *lo, const sp_ast_expr_t *hi,
                        int *named)
{
    sums_t *S = &R->S;
    if (S->nd >= LP_VARS)
        return 0;
    lpoly_t a, b;
    lp_init(&a);
    lp_init(&b);
    S->nnames = 0; /* the names are the same in every reading: mesh axes, ranks, loops */
    int ra = lo ? lp_read(S, lo, &a, 0) : 1, rb = lp_read(S, hi, &b, 0);
    int32_t id = 0;
    if (ra == 1 && rb == 1 && lp_add(&b, &a, -1) && b.n > 0 && lp_dim_monomial(&b, S->nd)) {
        int zero = 1;
        for (int v = 0; v < S->nd; v++)
            zero &= b.e[0][v] == 0;
        /* a coefficient made of rank coordinates or loop variables (a mesh size is one of the
           products rule's factors): 1, or 2 for rank.X * (M / X), block rank.X of an equal cut
           of M into the size of X (the reduction keeps M / X whole) */
        for (int i = 0; i < b.n; i++)
            for (int v = S->nd; v < S->nd + S->nnames; v++)
                *named |= b.e[i][v] != 0 &&
                          !(S->mesh && sp_mesh_axis(S->mesh, S->names[v - S->nd]) >= 0);
        if (*named && b.n == 1 && fmpq_is_one(&b.c[0]) && S->mesh) {
            int rank = -1, axis = -1, other = 0;
            for (int v = S->nd; v < S->nd + S->nnames; v++) {
                const char *nm = S->names[v - S->nd];
                if (b.e[0][v] == 1 && strncmp(nm, "rank.", 5) == 0 && rank < 0)
                    rank = v;
                else if (b.e[0][v] == -1 && sp_mesh_axis(S->mesh, nm) >= 0 && axis < 0)
                    axis = v;
                else
                    other |= b.e[0][v] != 0;
            }
            if (rank >= 0 && axis >= 0 && !other &&
                strcmp(S->names[rank - S->nd] + 5, S->names[axis - S->nd]) == 0)
                *named = 2;
        }
        /* under the mesh cutoff a cut axis's size is one more reduced size: its exponent is
           part of the monomial (slots nd + c, c its index in C->cutoff), so that B/dp and B
           scale apart (sp_pos_scale); the other names are not (a mesh size is real) */
        int key[LP_VARS];
        int nk = S->nd;
        memcpy(key, b.e[0], sizeof key);
        const sp_check_t *C = S->C;
        if (C->ncutoff > 0) {
            if (S->nd + C->ncutoff + 1 >= LP_VARS) {
                lp_clear(&a);
                lp_clear(&b);
                return 0;
            }
            int other = 0;
            for (int v = S->nd; v < LP_VARS; v++)
                key[v] = 0;
            for (int v = S->nd; v < S->nd + S->nnames; v++) {
                int c = sp_cutoff_index(C, S->names[v - S->nd]);
                if (c >= 0)
                    key[S->nd + c] += b.e[0][v];
                else
                    other |= b.e[0][v] != 0;
            }
            for (int c = 0; c < C->ncutoff; c++)
                zero &= key[S->nd + c] == 0;
            nk = S->nd + C->ncutoff;
            key[LP_VARS - 1] = other; /* for sp_pos_exps: other names in the extent */
        }
        id = zero ? 1 : mono_intern(R, key, nk);
    }
    lp_clear(&a);
    lp_clear(&b);
    return id;
}

static int32_t pos_lookup(sp_check_t *C, const sp_ast_expr_t *lo, const sp_ast_expr_t *hi,
                          int *named);

/* A monomial whose dims all keep their real sizes is exact: the literal one (id 1) */
int32_t sp_pos_monomial(sp_check_t *C, const sp_ast_expr_t *lo, const sp_ast_expr_t *hi)
{
    int named;
    int32_t id = pos_lookup(C, lo, hi, &named);
    const struct sp_pos_rt *R = C->pos_rt;
    if (id < 2 || R == NULL || id - 2 >= R->nmono)
        return id;
    for (int v = 0; v < R->S.nd; v++)
        if (R->mono[id - 2][v] != 0 && C->dims[v].red != C->dims[v].real)
            return id;
    for (int c = 0; c < C->ncutoff && R->S.nd + c < LP_VARS - 1; c++)
        if (R->mono[id - 2][R->S.nd + c] != 0 && C->cutoff[c].red != C->cutoff[c].real)
            return id;
    return 1;
}

static int32_t pos_lookup(sp_check_t *C, const sp_ast_expr_t *lo, const sp_ast_expr_t *hi,
                          int *named)
{
    *named = 0;
    if (hi == NULL)
        return 0;
    struct sp_pos_rt *R = pos_rt_get(C);
    size_t h = ((uintptr_t)lo * 0x9E3779B97F4A7C15u ^ (uintptr_t)hi * 0xC2B2AE3D27D4EB4Fu) >> 7;
    for (size_t i = h & (R->capmemo - 1);; i = (i + 1) & (R->capmemo - 1)) {
        struct pos_memo *m = &R->memo[i];
        if (m->hi == NULL) {
            int32_t id = pos_read(R, lo, hi, named);
            if (2 * (R->nmemo + 1) > R->capmemo) { /* grow, then insert */
                struct pos_memo *old = R->memo;
                size_t cap = R->capmemo;
                R->capmemo *= 2;
                R->memo = flint_calloc(R->capmemo, sizeof(*R->memo));
                R->nmemo = 0;
                for (size_t k = 0; k < cap; k++)
                    if (old[k].hi) {
                        size_t g = ((uintptr_t)old[k].lo * 0x9E3779B97F4A7C15u ^
                                    (uintptr_t)old[k].hi * 0xC2B2AE3D27D4EB4Fu) >> 7;
                        size_t j = g & (R->capmemo - 1);
                        while (R->memo[j].hi)
                            j = (j + 1) & (R->capmemo - 1);
                        R->memo[j] = old[k];
                        R->nmemo++;
                    }
                flint_free(old);
                for (i = h & (R->capmemo - 1); R->memo[i].hi; i = (i + 1) & (R->capmemo - 1))
                    ;
                m = &R->memo[i];
            }
            *m = (struct pos_memo){lo, hi, id, *named};
            R->nmemo++;
            return id;
        }
        if (m->lo == lo && m->hi == hi) {
            *named = m->named;
            return m->id;
        }
    }
}

int32_t sp_pos_per_axes(sp_check_t *C, int32_t id, const sp_axes_t *a, int sign)
{
    if (C->ncutoff == 0 || id == 0 || id >= SP_POS_FRESH)
        return id;
    struct sp_pos_rt *R = pos_rt_get(C);
    int nd = R->S.nd, key[LP_VARS], moved = 0;
    if (nd + C->ncutoff + 1 >= LP_VARS || (id >= 2 && id - 2 >= R->nmono))
        return 0;
    if (id == 1)
        memset(key, 0, sizeof key);
    else
        memcpy(key, R->mono[id - 2], sizeof key);
    for (int i = 0; i < a->n; i++) {
        int c = sp_cutoff_index(C, C->mesh.name[a->axis[i]]);
        if (c >= 0) {
            key[nd + c] += sign;
            moved = 1;
        }
    }
    if (!moved)
        return id;
    int zero = 1;
    for (int v = 0; v < nd + C->ncutoff; v++)
        zero &= key[v] == 0;
    return zero ? 1 : mono_intern(R, key, nd + C->ncutoff);
}

int sp_pos_over_members(sp_check_t *C, int32_t id)
{
    struct sp_pos_rt *R = C->pos_rt;
    if (id == 1)
        return 0;
    if (R == NULL || id < 2 || id - 2 >= R->nmono)
        return 1;
    for (int c = 0; c < C->ncutoff && R->S.nd + c < LP_VARS - 1; c++)
        if (R->mono[id - 2][R->S.nd + c] > 0)
            return 1;
    return 0;
}

/* out *= (real / red)^e (q scratch) */
static void scale_by(fmpq_t out, fmpq_t q, int64_t real, int64_t red, int e)
{
    fmpq_set_si(q, real, (ulong)red);
    for (int k = 0; k < (e < 0 ? -e : e); k++) {
        if (e > 0)
            fmpq_mul(out, out, q);
        else
            fmpq_div(out, out, q);
    }
}

int sp_pos_scale(sp_check_t *C, int32_t id, fmpq_t out)
{
    struct sp_pos_rt *R = C->pos_rt;
    fmpq_one(out);
    if (id == 1)
        return 1;
    if (R == NULL || id < 2 || id - 2 >= R->nmono)
        return 0;
    fmpq_t q;
    fmpq_init(q);
    for (int v = 0; v < R->S.nd; v++) {
        int e = R->mono[id - 2][v];
        if (e == 0)
            continue;
        if (C->dims[v].red <= 0 || C->dims[v].real <= 0) {
            fmpq_clear(q);
            return 0;
        }
        scale_by(out, q, C->dims[v].real, C->dims[v].red, e);
    }
    /* the axes the mesh cutoff checks smaller (pos_read's slots nd + c) */
    for (int c = 0; c < C->ncutoff && R->S.nd + c < LP_VARS - 1; c++) {
        int e = R->mono[id - 2][R->S.nd + c];
        if (e != 0 && C->cutoff[c].red > 0)
            scale_by(out, q, C->cutoff[c].real, C->cutoff[c].red, e);
    }
    fmpq_clear(q);
    return 1;
}

int sp_pos_exps(sp_check_t *C, int32_t id, int *e)
{
    struct sp_pos_rt *R = C->pos_rt;
    for (int v = 0; v < C->ndims; v++)
        e[v] = 0;
    if (id == 1)
        return 1;
    if (R == NULL || id < 2 || id - 2 >= R->nmono)
        return 0;
    for (int v = 0; v < R->S.nd && v < C->ndims; v++)
        e[v] = R->mono[id - 2][v];
    for (int v = R->S.nd; v < LP_VARS; v++)
        if (R->mono[id - 2][v] != 0)
            return 2;
    return 1;
}

int sp_pos_named(sp_check_t *C, const sp_ast_expr_t *e)
{
    int named;
    int32_t id = pos_lookup(C, NULL, e, &named);
    return id == 0 ? 1 : named;
}

void sp_reduce_sums_free(sp_check_t *C)
{
    pos_rt_free(C);
    for (int i = 0; i < C->nrecv_read; i++)
        lp_clear(&C->recv_read[i].f);
    flint_free(C->recv_read);
    C->recv_read = NULL;
    C->nrecv_read = 0;
    flint_free(C->sum_read);
    C->sum_read = NULL;
    C->nsum_read = 0;
}

/* A dim written as an integer literal (`2`, `-1`): 1 with *v; with nonneg, negative ones are
   refused. */
static int dim_literal(const sp_ast_expr_t *x, int nonneg, int64_t *v)
{
    const sp_ast_expr_t *y = x && x->kind == SP_AST_NEG ? x->a : x;
    if (y == NULL || y->kind != SP_AST_NUM || !fmpz_is_one(fmpq_denref(y->value)) ||
        !fmpz_fits_si(fmpq_numref(y->value)) || fmpz_sgn(fmpq_numref(y->value)) < 0 ||
        (nonneg && y != x))
        return 0;
    *v = fmpz_get_si(fmpq_numref(y->value));
    if (y != x)
        *v = -*v;
    return 1;
}

/* The value of form p at the real sizes (dims and uncut mesh sizes): 0 if it names anything
   else (a rank coordinate, a loop variable, a cut mesh axis). */
static int lp_real(const sums_t *S, const lpoly_t *p, fmpq_t out)
{
    int64_t val[LP_VARS];
    var_values(S->C, S->mesh, S->nd, S->names, 1, val);
    return lp_eval(p, val, out);
}

static int def_extent(sums_t *S, const def_t *D, int64_t d, lpoly_t *p, int depth);

static void record_recv(sums_t *S, sp_loc_t loc, int64_t d, const lpoly_t *p)
{
    sp_check_t *C = S->C;
    for (int i = 0; i < C->nrecv_read; i++)
        if (same_loc(C->recv_read[i].loc, loc) && C->recv_read[i].d == d)
            return;
    C->recv_read = flint_realloc(C->recv_read, (size_t)(C->nrecv_read + 1) * sizeof(*C->recv_read));
    struct sp_recv_read *r = &C->recv_read[C->nrecv_read++];
    r->loc = loc;
    r->d = d;
    lp_init(&r->f);
    lp_add(&r->f, p, 1);
    r->nd = S->nd;
    memset(r->names, 0, sizeof(r->names));
    memcpy(r->names, S->names, (size_t)S->nnames * sizeof(*S->names));
}

/* The local extent of tensor `name` along dim d of the part being read: every definition of
   the name there must give one and they must agree (a name defined by an operator other than
   a slice along another dim, by a multi-target assignment, by `+=` or as a function's
   parameter has none).  1 in *p, 0 if unknown. */
static int name_extent(sums_t *S, const char *name, int indexed, int64_t d, lpoly_t *p, int depth)
{
    /* a pipeline hands a tensor through a chain of chunks, sends and gathers (an nnScaler
       plan's mask through 16 stages); a budget bounds the readings of one program */
    if (depth > 1024 || ++S->steps > 2000000)
        return 0;
    int found = 0;
    lpoly_t q;
    lp_init(&q);
    for (size_t i = 0; i < S->ndefs && found >= 0; i++) {
        const def_t *D = &S->defs[i];
        if (strcmp(D->name, name) != 0 || D->indexed != indexed)
            continue;
        if (!D->layout && is_recv(D->value) && S->plan_part)
            continue; /* `x = recv(...)`: read as x's other definitions, checked below */
        lpoly_t *dst = found ? &q : p;
        if (!def_extent(S, D, d, dst, depth)) {
            found = -1;
            break;
        }
        if (found) { /* another definition: the same extent */
            lp_add(&q, p, -1);
            if (q.n != 0)
                found = -1;
        }
        if (found >= 0)
            found = 1;
    }
    lp_clear(&q);
    if (found == 1) /* every recv into the name must receive that extent (src/plan.c) */
        for (size_t i = 0; i < S->ndefs; i++) {
            const def_t *D = &S->defs[i];
            if (strcmp(D->name, name) == 0 && D->indexed == indexed && !D->layout &&
                is_recv(D->value) && S->plan_part)
                record_recv(S, D->value->loc, d, p);
        }
    return found == 1;
}

/* One definition's extent along dim d: its layout's (the size over the product of its axes: an
   even split; an uneven one is caught while executing), or that of the tensor it copies or
   slices along another dim (`xm = slice(x[l], 0, a, b)` keeps x's extent along dim 1). */
static int def_extent(sums_t *S, const def_t *D, int64_t d, lpoly_t *p, int depth)
{
    if (D->layout) {
        const sp_ast_layout_t *l = D->layout;
        int64_t k = d < 0 ? d + (int64_t)l->ndims : d;
        if (k < 0 || k >= (int64_t)l->ndims || l->dims[k].nsplit ||
            lp_read(S, l->dims[k].size, p, 0) != 1)
            return 0;
        for (size_t a = 0; a < l->dims[k].naxes; a++) {
            int v = name_var(S, l->dims[k].axes[a].str);
            if (v < 0 || p->n == 0)
                return 0;
            for (int t = 0; t < p->n; t++)
                p->e[t][v]--;
        }
        return 1;
    }
    const sp_ast_expr_t *v = D->value, *from = v;
    int64_t sd;
    int gather = 0;
    if (v == NULL || d < 0)
        return 0;
    int chunked = 0;
    if (v->kind == SP_AST_CALL && strcmp(v->name, "chunk") == 0) {
        /* chunk(x, chunks = k, dim = d', index = i): x's extent off d', x's over k along it */
        from = v->nargs > 0 && !v->args[0].key.str ? v->args[0].value : NULL;
        const sp_ast_expr_t *dx = slice_arg(v, "dim", 2);
        sd = 0;
        if (dx && !dim_literal(dx, 1, &sd))
            return 0;
        chunked = sd == d;
    } else if (v->kind == SP_AST_CALL &&
               (strcmp(v->name, "slice") == 0 || strcmp(v->name, "all_gather") == 0)) {
        from = v->nargs > 0 && !v->args[0].key.str ? v->args[0].value : NULL;
        const sp_ast_expr_t *dx = slice_arg(v, "dim", 1);
        gather = v->name[0] == 'a';
        if (dx == NULL || !dim_literal(dx, 1, &sd) || (!gather && sd == d))
            return 0;
        gather = gather && sd == d;
    }
    const char *src = sp_ast_base_name(from);
    if (src == NULL || strcmp(src, D->name) == 0 ||
        !name_extent(S, src, from->kind == SP_AST_INDEX, d, p, depth + 1))
        return 0;
    if (v->kind == SP_AST_CALL && strcmp(v->name, "chunk") == 0 && chunked) {
        /* chunk(x, chunks = k, dim = d): x's extent over k, when k divides it at the real
           sizes (whole at the reduced ones is checked while executing: src/ops_shape.c) */
        lpoly_t k;
        lp_init(&k);
        fmpq_t a, b;
        fmpq_init(a);
        fmpq_init(b);
        int ok = lp_read(S, slice_arg(v, "chunks", 1), &k, 0) == 1 && k.n == 1 &&
                 lp_real(S, p, a) && lp_real(S, &k, b) && fmpz_is_one(fmpq_denref(a)) &&
                 fmpz_is_one(fmpq_denref(b)) && fmpz_sgn(fmpq_numref(b)) > 0 &&
                 fmpz_divisible(fmpq_numref(a), fmpq_numref(b));
        if (ok) {
            fmpq_inv(k.c, k.c);
            for (int t = 0; t < LP_VARS; t++)
                k.e[0][t] = -k.e[0][t];
            lpoly_t q;
            lp_init(&q);
            ok = lp_mul(&q, p, &k);
            p->n = 0;
            ok = ok && lp_add(p, &q, 1);
            lp_clear(&q);
        }
        fmpq_clear(a);
        fmpq_clear(b);
        lp_clear(&k);
        return ok;
    }
    if (gather) {
        /* all_gather(x, dim = d, axis = A): the group's parts of x's extent side by side
           (members of unequal extents are caught while executing: src/mesh.c) */
        const sp_ast_expr_t *ax = slice_arg(v, "axis", 2);
        if (ax == NULL)
            ax = slice_arg(v, "axes", 2);
        size_t n = ax == NULL ? 0 : ax->kind == SP_AST_LIST ? ax->nargs : 1;
        if (n == 0)
            return 0;
        for (size_t a = 0; a < n; a++) {
            const sp_ast_expr_t *y = ax->kind == SP_AST_LIST ? ax->args[a].value : ax;
            int var = y->kind == SP_AST_NAME && S->mesh && sp_mesh_axis(S->mesh, y->name) >= 0
                          ? name_var(S, y->name)
                          : -1;
            if (var < 0 || p->n == 0)
                return 0;
            for (int t = 0; t < p->n; t++)
                p->e[t][var]++;
        }
    }
    return 1;
}

static void record_read(sums_t *S, sp_loc_t loc)
{
    sp_check_t *C = S->C;
    C->sum_read = flint_realloc(C->sum_read, (size_t)(C->nsum_read + 1) * sizeof(sp_loc_t));
    C->sum_read[C->nsum_read++] = loc;
}

/* concat(t1, .., tn, dim = d) of tensors whose layouts are declared: the extent along d is the
   sum of theirs; when it is read here, the check while executing (src/ops_shape.c g_concat)
   is not needed and the call is recorded (sp_reduce_sum_read()). */
static void sums_concat(sums_t *S, const sp_ast_expr_t *e)
{
    int64_t d = 0;
    size_t n = e->nargs;
    for (size_t i = 0; i < e->nargs; i++)
        if (e->args[i].key.str && strcmp(e->args[i].key.str, "dim") == 0)
            n = i;
    const sp_ast_expr_t *dx = n < e->nargs ? e->args[n].value : NULL;
    if (dx == NULL && n >= 2 && e->args[n - 1].value->kind != SP_AST_NAME &&
        e->args[n - 1].value->kind != SP_AST_INDEX && e->args[n - 1].value->kind != SP_AST_CALL)
        dx = e->args[--n].value; /* a trailing constant is the dim */
    if (dx && !dim_literal(dx, 0, &d))
        return;
    lpoly_t sum, part;
    lp_init(&sum);
    lp_init(&part);
    memset(S->seen, 0, (size_t)S->nd);
    int ok = n > 0;
    for (size_t i = 0; ok && i < n; i++) {
        const char *name = e->args[i].key.str ? NULL : sp_ast_base_name(e->args[i].value);
        ok = name && name_extent(S, name, e->args[i].value->kind == SP_AST_INDEX, d, &part, 0) &&
             lp_add(&sum, &part, 1);
    }
    if (ok) {
        if (!lp_dim_monomial(&sum, S->nd))
            keep_seen(S);
        record_read(S, e->loc);
    }
    lp_clear(&sum);
    lp_clear(&part);
}

int sp_reduce_sum_read(const sp_check_t *C, sp_loc_t loc)
{
    for (int i = 0; i < C->nsum_read; i++)
        if (same_loc(C->sum_read[i], loc))
            return 1;
    return 0;
}

static void sums_expr(sums_t *S, const sp_ast_expr_t *e, int depth)
{
    if (e == NULL || depth > 64)
        return;
    int arith = e->kind == SP_AST_NUM || e->kind == SP_AST_NAME || e->kind == SP_AST_NEG ||
                e->kind == SP_AST_BINOP;
    if (arith && check_extent(S, NULL, e))
        return; /* a closed size expression, read whole */
    if (e->kind == SP_AST_RANGE)
        check_extent(S, e->a, e->b);
    if (e->kind == SP_AST_CALL && strcmp(e->name, "slice") == 0) {
        const sp_ast_expr_t *lo = slice_arg(e, "start", 2), *hi = slice_arg(e, "end", 3);
        if (hi) /* without an end, the extent is the dim less the start: src/ops_shape.c */
            check_extent(S, lo, hi);
    }
    if (e->kind == SP_AST_CALL && (strcmp(e->name, "concat") == 0 || strcmp(e->name, "cat") == 0))
        sums_concat(S, e);

    sums_expr(S, e->a, depth + 1);
    sums_expr(S, e->b, depth + 1);
    for (size_t i = 0; i < e->nargs; i++)
        sums_expr(S, e->args[i].value, depth + 1);
}

static void sums_layout(sums_t *S, const sp_ast_layout_t *l)
{
    for (size_t i = 0; l && i < l->ndims; i++) {
        sums_expr(S, l->dims[i].size, 0);
        for (size_t k = 0; k < l->dims[i].nsplit; k++)
            sums_expr(S, l->dims[i].split[k], 0);
    }
}

static void add_def(sums_t *S, const sp_ast_expr_t *target, const char *name,
                    const sp_ast_layout_t *l, const sp_ast_expr_t *value)
{
    if (target)
        name = sp_ast_base_name(target);
    if (name == NULL)
        return;
    if (S->ndefs == S->capdefs) {
        S->capdefs = S->capdefs ? 2 * S->capdefs : 32;
        S->defs = flint_realloc(S->defs, S->capdefs * sizeof(*S->defs));
    }
    S->defs[S->ndefs++] = (def_t){name, target && target->kind == SP_AST_INDEX, l, value};
}

static void add_loop(sums_t *S, const char *name)
{
    if (S->nloops == S->caploops) {
        S->caploops = S->caploops ? 2 * S->caploops : 8;
        S->loops = flint_realloc(S->loops, S->caploops * sizeof(*S->loops));
    }
    S->loops[S->nloops++] = name;
}

/* the loop variables of a block */
static void loops_of(sums_t *S, const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        if (s->kind == SP_STMT_FOR && s->name.str)
            add_loop(S, s->name.str);
        loops_of(S, &s->body);
        if (s->has_else)
            loops_of(S, &s->else_body);
    }
}

/* the definitions of tensor names of a block */
static void defs_of(sums_t *S, const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        if (s->kind == SP_STMT_INPUT || s->kind == SP_STMT_PARAM)
            add_def(S, NULL, s->name.str, s->layout, NULL);
        for (size_t k = 0; k < s->ntargets; k++) {
            const sp_ast_layout_t *l = s->lineage ? s->lineage->layout : s->layout;
            int one = s->ntargets == 1 && s->kind == SP_STMT_ASSIGN;
            add_def(S, s->targets[k], NULL, l, one ? s->value : NULL);
        }
        for (size_t k = 0; k < s->noutputs; k++)
            if (s->kind == SP_STMT_OUTPUT)
                add_def(S, s->outputs[k].target, NULL, s->outputs[k].layout, s->outputs[k].value);
        defs_of(S, &s->body);
        if (s->has_else)
            defs_of(S, &s->else_body);
    }
}

static void sums_block(sums_t *S, const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        /* an `if` on sizes takes the same branch at both sizes (src/reduce.c admissible()) */
        if (s->kind == SP_STMT_FOR) {
            sums_expr(S, s->lo, 0);
            sums_expr(S, s->hi, 0);
            check_extent(S, s->lo, s->hi); /* the trip count */
        } else if (s->kind != SP_STMT_IF && s->kind != SP_STMT_MESH && s->kind != SP_STMT_ON) {
            sums_expr(S, s->value, 0);
        }
        for (size_t k = 0; k < s->ncount; k++)
            sums_expr(S, s->count[k], 0);
        for (size_t k = 0; k < s->ntargets; k++)
            sums_expr(S, s->targets[k], 0);
        for (size_t k = 0; k < s->nvalues; k++)
            sums_expr(S, s->values[k], 0);
        for (size_t k = 0; k < s->nargs; k++)
            sums_expr(S, s->args[k].value, 0);
        for (size_t k = 0; k < s->noutputs; k++) {
            sums_expr(S, s->outputs[k].value, 0);
            sums_layout(S, s->outputs[k].layout);
        }
        sums_layout(S, s->layout);
        if (s->lineage) {
            sums_expr(S, s->lineage->rows, 0);
            sums_layout(S, s->lineage->layout);
        }
        if (s->kind != SP_STMT_MESH)
            for (size_t k = 0; k < s->nbinds; k++)
                sums_expr(S, s->binds[k].value, 0);
        sums_block(S, &s->body);
        if (s->has_else)
            sums_block(S, &s->else_body);
    }
}

void sp_reduce_keep_sums(sp_check_t *C, const sp_mesh_t *mesh, uint8_t *keep)
{
    sums_t S;
    memset(&S, 0, sizeof(S));
    S.C = C;
    sp_reduce_sums_free(C);
    sp_members_new_run(C);
    S.mesh = mesh;
    S.nd = C->ndims;
    S.keep = keep;
    S.seen = flint_calloc((size_t)(C->ndims ? C->ndims : 1), 1);
    if (S.nd >= LP_VARS) { /* too many dims to read: every dim keeps its real size */
        memset(keep, 1, (size_t)C->ndims);
        flint_free(S.seen);
        return;
    }
    const sp_ast_block_t *blocks[2] = {C->plan ? &C->plan->body : NULL,
                                       C->model ? &C->model->body : NULL};
    for (int k = 0; k < 2; k++)
        if (blocks[k])
            loops_of(&S, blocks[k]);
    for (int i = 0; i < C->nfuncs; i++)
        loops_of(&S, &C->funcs[i]->body);
    for (int i = 0; i < C->ndims; i++)
        if (C->dims[i].derived)
            sums_expr(&S, C->dims[i].def, 0);
    /* each part with its own definitions: a function's parameters and a plan's names are not
       the model's (the review of 2026-12-04: `join(x, a)` read its parameter `a` as the
       model's input a) */
    for (int k = 0; k < 2 + C->nfuncs; k++) {
        const sp_ast_block_t *b = k < 2 ? blocks[k] : &C->funcs[k - 2]->body;
        if (b == NULL)
            continue;
        S.ndefs = 0;
        S.plan_part = k == 0;
        defs_of(&S, b);
        sums_block(&S, b);
    }
    flint_free(S.loops);
    flint_free(S.defs);
    flint_free(S.seen);
}
