/* reduce.c: shape reduction: the smallest dimension sizes that keep every sharding meaningful. */
#include <flint/flint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/*
 * Every dimension D declared `dim D = N` gets a reduced size d <= N, the smallest d >= 2 (or 1
 * when N is 1) such that, for every mesh group size n that shards D in a layout of the plan
 * (`D@axes`, n the product of the axis sizes):
 *   - if n divides N, n divides d (even shards stay even, each at least one element);
 *   - if not, torch.chunk gives the same number of chunks for d as for N and the last chunk is
 *     partial for both (uneven remainders are preserved);
 * and d is a multiple of every divisor k with N/k written in a dim or shape expression when k
 * divides N.  Dimensions defined by an expression of others (F = 4*H) follow from the reduced
 * sizes.  --dims NAME=V sets a reduced size directly.  With --shapes N, reduction k (0..N-1)
 * takes the k-th next admissible size instead of the smallest (the real size when there are
 * fewer), so the same plan is checked at N different shapes.
 */

/* Sizes are bounded so that no sum, product or chunk computation on them overflows 64 bits. */
#define SP_DIM_MAX_BITS 40
#define SP_DIM_MAX (INT64_C(1) << SP_DIM_MAX_BITS)

int sp_dim_find(const sp_check_t *C, const char *name)
{
    for (int i = 0; i < C->ndims; i++)
        if (strcmp(C->dims[i].name, name) == 0)
            return i;
    return -1;
}

/* evaluate a dim expression at real (which = 0) or reduced (which = 1) sizes */
static int dim_eval(sp_check_t *C, const sp_ast_expr_t *e, int which, int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case SP_AST_NUM:
        if (!fmpz_is_one(fmpq_denref(e->value)) || !fmpz_fits_si(fmpq_numref(e->value))) {
            sp_diags_error(C->d, SP_DIAG_SHAPE, e->loc, "a dimension must be an integer, found '%s'",
                           e->text);
            return 0;
        }
        *out = fmpz_get_si(fmpq_numref(e->value));
        if (*out > SP_DIM_MAX)
            goto overflow;
        return 1;
    case SP_AST_NAME: {
        int d = sp_dim_find(C, e->name);
        if (d < 0) {
            sp_diags_error(C->d, SP_DIAG_NAME, e->loc, "unknown dimension '%s'", e->name);
            return 0;
        }
        *out = which ? C->dims[d].red : C->dims[d].real;
        return 1;
    }
    case SP_AST_NEG:
        if (!dim_eval(C, e->a, which, &a))
            return 0;
        if (a < -SP_DIM_MAX || a > SP_DIM_MAX)
            goto overflow;
        *out = -a;
        return 1;
    case SP_AST_BINOP:
        if (!dim_eval(C, e->a, which, &a) || !dim_eval(C, e->b, which, &b))
            return 0;
        switch (e->op) {
        case SP_BIN_ADD:
            if (__builtin_add_overflow(a, b, out))
                goto overflow;
            break;
        case SP_BIN_SUB:
            if (__builtin_sub_overflow(a, b, out))
                goto overflow;
            break;
        case SP_BIN_MUL:
            if (__builtin_mul_overflow(a, b, out))
                goto overflow;
            break;
        case SP_BIN_DIV:
            if (b == 0 || a % b != 0) {
                sp_diags_error(C->d, SP_DIAG_SHAPE, e->loc,
                               "%s %lld is not divisible by %lld", which ? "reduced size" : "size",
                               (long long)a, (long long)b);
                return 0;
            }
            *out = a / b;
            break;
        default:
            sp_diags_error(C->d, SP_DIAG_SHAPE, e->loc, "operator not allowed in a dimension");
            return 0;
        }
        if (*out < -SP_DIM_MAX || *out > SP_DIM_MAX)
            goto overflow;
        return 1;
    default:
        sp_diags_error(C->d, SP_DIAG_SHAPE, e->loc, "not a dimension expression");
        return 0;
    }
overflow:
    sp_diags_error(C->d, SP_DIAG_LIMIT, e->loc, "dimension out of range (at most 2^%d)",
                   SP_DIM_MAX_BITS);
    return 0;
}

typedef struct {
    uint8_t *keep;   /* per dim: explicit shard sizes name it, keep the real size */
    int64_t *mult;   /* per dim: required multiple */
    int64_t **uneven;/* per dim: group sizes that do not divide N */
    int *nuneven;
} cons_t;

static void add_uneven(cons_t *K, int d, int64_t n)
{
    for (int i = 0; i < K->nuneven[d]; i++)
        if (K->uneven[d][i] == n)
            return;
    K->uneven[d] = flint_realloc(K->uneven[d], (size_t)(K->nuneven[d] + 1) * sizeof(int64_t));
    K->uneven[d][K->nuneven[d]++] = n;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void add_mult(cons_t *K, int d, int64_t n)
{
    if (n <= 1)
        return;
    int64_t g = gcd64(K->mult[d], n);
    if (K->mult[d] / g <= (INT64_C(1) << 40) / n)
        K->mult[d] = K->mult[d] / g * n;
}

/* The base dim of a division chain ((D / k1) / k2) and the product of its divisors (mesh axes
   by size, dims by real size, literal integers); 0 if the chain is anything else. */
static int div_chain(sp_check_t *C, const sp_ast_expr_t *e, const sp_mesh_t *mesh, int64_t *prod)
{
    if (e->kind == SP_AST_NAME) {
        *prod = 1;
        return sp_dim_find(C, e->name) >= 0;
    }
    if (e->kind != SP_AST_BINOP || e->op != SP_BIN_DIV || !div_chain(C, e->a, mesh, prod))
        return 0;
    const sp_ast_expr_t *b = e->b;
    int64_t k = 0;
    if (b->kind == SP_AST_NUM && fmpz_is_one(fmpq_denref(b->value)) && fmpz_fits_si(fmpq_numref(b->value)))
        k = fmpz_get_si(fmpq_numref(b->value));
    else if (b->kind == SP_AST_NAME && mesh && sp_mesh_axis(mesh, b->name) >= 0)
        k = mesh->size[sp_mesh_axis(mesh, b->name)];
    else if (b->kind == SP_AST_NAME && sp_dim_find(C, b->name) >= 0)
        k = C->dims[sp_dim_find(C, b->name)].real;
    if (k <= 0 || *prod > (INT64_C(1) << 40) / k)
        return 0;
    *prod *= k;
    return 1;
}

static const sp_ast_expr_t *chain_base(const sp_ast_expr_t *e)
{
    while (e->kind == SP_AST_BINOP)
        e = e->a;
    return e;
}

/* Divisions D / k1 / k2 ... anywhere in an expression: keep d a multiple of the divisors. */
static void walk_divisions_m(sp_check_t *C, const sp_ast_expr_t *e, const sp_mesh_t *mesh, cons_t *K)
{
    if (e == NULL)
        return;
    int64_t prod;
    if (e->kind == SP_AST_BINOP && e->op == SP_BIN_DIV && div_chain(C, e, mesh, &prod)) {
        int d = sp_dim_find(C, chain_base(e)->name);
        if (d >= 0 && !C->dims[d].derived && prod > 1 && C->dims[d].real % prod == 0)
            add_mult(K, d, prod);
    }
    walk_divisions_m(C, e->a, mesh, K);
    walk_divisions_m(C, e->b, mesh, K);
    for (size_t i = 0; i < e->nargs; i++)
        walk_divisions_m(C, e->args[i].value, mesh, K);
}

static void walk_divisions(sp_check_t *C, const sp_ast_expr_t *e, cons_t *K)
{
    walk_divisions_m(C, e, NULL, K);
}

static void walk_layout(sp_check_t *C, const sp_ast_layout_t *l, const sp_mesh_t *mesh, cons_t *K)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->ndims; i++) {
        const sp_ast_ldim_t *ld = &l->dims[i];
        walk_divisions(C, ld->size, K);
        if (ld->nsplit && ld->size->kind == SP_AST_NAME && sp_dim_find(C, ld->size->name) >= 0)
            K->keep[sp_dim_find(C, ld->size->name)] = 1;
        if (ld->naxes == 0 || ld->size->kind != SP_AST_NAME || ld->nsplit)
            continue;
        int d = sp_dim_find(C, ld->size->name);
        if (d < 0 || C->dims[d].derived)
            continue;
        int64_t n = 1;
        int known = 1;
        for (size_t a = 0; a < ld->naxes; a++) {
            int ax = sp_mesh_axis(mesh, ld->axes[a].str);
            if (ax < 0)
                known = 0;
            else
                n *= mesh->size[ax];
        }
        if (!known)
            continue;
        if (C->dims[d].real % n == 0)
            add_mult(K, d, n);
        else
            add_uneven(K, d, n);
    }
}

static void walk_block(sp_check_t *C, const sp_ast_block_t *b, const sp_mesh_t *mesh, cons_t *K)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        walk_divisions_m(C, s->value, mesh, K);
        walk_divisions_m(C, s->lo, mesh, K);
        walk_divisions_m(C, s->hi, mesh, K);
        for (size_t k = 0; k < s->ntargets; k++)
            walk_divisions_m(C, s->targets[k], mesh, K);
        for (size_t k = 0; k < s->nvalues; k++)
            walk_divisions_m(C, s->values[k], mesh, K);
        for (size_t k = 0; k < s->noutputs; k++)
            walk_divisions_m(C, s->outputs[k].value, mesh, K);
        walk_layout(C, s->layout, mesh, K);
        if (s->lineage)
            walk_layout(C, s->lineage->layout, mesh, K);
        for (size_t k = 0; k < s->noutputs; k++)
            walk_layout(C, s->outputs[k].layout, mesh, K);
        if (s->kind == SP_STMT_ON || s->kind == SP_STMT_FOR || s->kind == SP_STMT_IF ||
            s->kind == SP_STMT_FUNC) {
            walk_block(C, &s->body, mesh, K);
            if (s->has_else)
                walk_block(C, &s->else_body, mesh, K);
        }
    }
}

static int chunks(int64_t size, int64_t n, int64_t *last)
{
    int64_t c = (size + n - 1) / n;
    int64_t k = c ? (size + c - 1) / c : 0;
    *last = c ? size - (k - 1) * c : 0;
    return (int)k;
}

static int uneven_ok(int64_t m, int64_t N, int64_t n)
{
    int64_t lm, lN;
    int km = chunks(m, n, &lm), kN = chunks(N, n, &lN);
    int64_t cm = (m + n - 1) / n, cN = (N + n - 1) / n;
    return km == kN && ((lm < cm) == (lN < cN));
}

sp_status_t sp_reduce_dims(sp_check_t *C)
{
    /* real sizes in declaration order */
    for (int i = 0; i < C->ndims; i++) {
        sp_dimdef_t *D = &C->dims[i];
        D->derived = D->def->kind != SP_AST_NUM;
        if (!dim_eval(C, D->def, 0, &D->real))
            return SP_ERR_INPUT;
        if (D->real < 1) {
            sp_diags_error(C->d, SP_DIAG_SHAPE, D->loc, "dimension '%s' must be at least 1", D->name);
            return SP_ERR_INPUT;
        }
    }
    /* the plan's mesh, read directly (the plan has not run yet) */
    sp_mesh_t mesh;
    memset(&mesh, 0, sizeof mesh);
    if (C->plan && C->plan->body.n && C->plan->body.stmts[0]->kind == SP_STMT_MESH) {
        const sp_ast_stmt_t *ms = C->plan->body.stmts[0];
        for (size_t k = 0; k < ms->nbinds && mesh.naxes < SP_MAX_AXES; k++) {
            /* only literal sizes and dims here; the plan run reports anything else */
            const sp_ast_expr_t *v = ms->binds[k].value;
            int64_t n = 0;
            if (v->kind == SP_AST_NUM && fmpz_is_one(fmpq_denref(v->value)) &&
                fmpz_fits_si(fmpq_numref(v->value)))
                n = fmpz_get_si(fmpq_numref(v->value));
            else if (v->kind == SP_AST_NAME && sp_dim_find(C, v->name) >= 0)
                n = C->dims[sp_dim_find(C, v->name)].real;
            if (n < 1)
                continue;
            snprintf(mesh.name[mesh.naxes], sizeof mesh.name[0], "%s", ms->binds[k].name.str);
            mesh.size[mesh.naxes++] = n;
        }
    }
    cons_t K;
    K.mult = flint_malloc((size_t)(C->ndims ? C->ndims : 1) * sizeof(int64_t));
    K.uneven = flint_calloc((size_t)(C->ndims ? C->ndims : 1), sizeof(int64_t *));
    K.nuneven = flint_calloc((size_t)(C->ndims ? C->ndims : 1), sizeof(int));
    K.keep = flint_calloc((size_t)(C->ndims ? C->ndims : 1), 1);
    for (int i = 0; i < C->ndims; i++)
        K.mult[i] = 1;
    for (int i = 0; i < C->ndims; i++)
        walk_divisions(C, C->dims[i].def, &K);
    if (C->plan)
        walk_block(C, &C->plan->body, &mesh, &K);
    if (C->model)
        walk_block(C, &C->model->body, &mesh, &K);
    for (int i = 0; i < C->nfuncs; i++)
        walk_block(C, &C->funcs[i]->body, &mesh, &K);
    sp_status_t st = SP_OK;
    for (int i = 0; i < C->ndims && st == SP_OK; i++) {
        sp_dimdef_t *D = &C->dims[i];
        if (D->derived) {
            if (!dim_eval(C, D->def, 1, &D->red))
                st = SP_ERR_INPUT;
            continue;
        }
        int over = 0;
        for (int k = 0; k < C->opt.ndims; k++)
            if (strcmp(C->opt.dims[k].name, D->name) == 0) {
                D->red = C->opt.dims[k].value;
                D->overridden = over = 1;
            }
        if (over)
            continue;
        if (K.keep[i]) {
            D->red = D->real;
            continue;
        }
        int64_t lo = D->real == 1 ? 1 : 2;
        for (int k = 0; k < K.nuneven[i]; k++)
            if (K.uneven[i][k] > lo)
                lo = K.uneven[i][k];
        if (K.mult[i] > lo)
            lo = K.mult[i];
        int64_t found = D->real;
        int skip = C->opt.shape_index; /* --shapes: the skip-th next admissible size */
        for (int64_t m = lo; m < D->real && m <= lo + 4096; m++) {
            if (m % K.mult[i] != 0)
                continue;
            /* dims of different real sizes get different reduced sizes, so a plan that mixes
               them up (a transposed weight, a wrong layout) cannot pass by coincidence */
            int clash = 0;
            for (int j = 0; j < i && !clash; j++)
                clash = !C->dims[j].derived && C->dims[j].real != D->real && C->dims[j].red == m;
            if (clash)
                continue;
            int ok = 1;
            for (int k = 0; k < K.nuneven[i] && ok; k++)
                ok = uneven_ok(m, D->real, K.uneven[i][k]);
            if (ok && skip-- == 0) {
                found = m;
                break;
            }
        }
        D->red = found;
    }
    for (int i = 0; i < C->ndims; i++)
        flint_free(K.uneven[i]);
    flint_free(K.uneven);
    flint_free(K.nuneven);
    flint_free(K.keep);
    flint_free(K.mult);
    return st;
}
