/* exec.c: symbolic execution of the model and of the plan (every rank, in lockstep). */
#include <flint/flint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "check.h"
#include "eval.h"

#include <flint/nmod_vec.h>

/*
 * The interpreter runs a body once for all ranks at once: every statement computes one tensor
 * per rank (ranks outside an `on` block keep what they had), so collectives see all their
 * inputs when they run.  A model is the same with a single rank and no mesh.  Integer
 * expressions (dims, loop variables, rank.<axis>) are evaluated per rank at "compile time".
 *
 * The model records a tape of operator applications so `train` can derive the backward pass
 * with the operators' VJP rules.
 */

#define MAX_CALL_DEPTH 64

typedef struct {
    const char *name;
    int64_t value;
} ivar_t;

/* one tensor per rank */
typedef sp_tensor_t *pval_t;

/* model tape: value ids of an operator application */
typedef struct {
    char *op;
    sp_attr_t *attr;
    int nattr;
    int *in;
    int nin;
    int out;
} tape_t;

typedef struct {
    sp_check_t *C;
    int is_plan;
    int64_t nranks;
    uint8_t *active;
    /* bindings: C->mvals for the model, pvals for the plan */
    sp_binding_t **vals;
    int *nvals, *avals;
    sp_binding_t *pvals;
    int npvals, apvals;
    int scope;
    ivar_t *ivars;
    int nivars, aivars;
    /* function returns */
    pval_t *ret;
    int *ret_vid;
    int nret;
    int returned;
    int depth;
    /* send/recv queues: FIFO of (src, dst, tensor) */
    struct msg { int64_t src, dst; sp_tensor_t t; int used; sp_loc_t loc; } *msgs;
    int nmsgs, amsgs;
    /* model tape (values by id, nranks == 1) */
    sp_tensor_t *tv;
    int ntv, atv;
    tape_t *tape;
    int ntape, atape;
    int *vid_of_binding; /* parallel to C->mvals */
    int avid;
    int (*alias)[2];     /* forward cuts: {fresh vid, original vid} */
    int nalias;
    int train_seen;
    int outputs_seen;
    const sp_ast_stmt_t **occ_stmt; /* lineage inference: occurrences of each statement */
    int *occ_n;
    int nocc;
    int walk; /* sp_plan_guess_cuts: control flow only, lineage targets collected */
    int pend_ok; /* the next name evaluated may hold a pending max/min (its use checks it) */
} interp_t;

static sp_status_t exec_block(interp_t *I, const sp_ast_block_t *b);
static sp_status_t eval(interp_t *I, const sp_ast_expr_t *e, pval_t *out, int *vid);

static void errat(interp_t *I, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sp_diags_vadd(I->C->d, SP_SEV_ERROR, code, loc, fmt, ap);
    va_end(ap);
}

static pval_t pval_new(int64_t n)
{
    pval_t p = flint_malloc((size_t)n * sizeof(sp_tensor_t));
    for (int64_t r = 0; r < n; r++) {
        sp_tensor_init(&p[r]);
        p[r].ndim = -1;
    }
    return p;
}

static void pval_free(pval_t p, int64_t n)
{
    if (p == NULL)
        return;
    for (int64_t r = 0; r < n; r++)
        sp_tensor_clear(&p[r]);
    flint_free(p);
}

static pval_t pval_dup(const sp_tensor_t *p, int64_t n)
{
    pval_t q = pval_new(n);
    for (int64_t r = 0; r < n; r++)
        if (p[r].ndim >= 0)
            sp_tensor_copy(&q[r], &p[r]);
    return q;
}

/* ---- bindings ------------------------------------------------------------------------------ */

static sp_binding_t *lookup(interp_t *I, const char *name)
{
    for (int i = *I->nvals - 1; i >= 0; i--)
        if (strcmp((*I->vals)[i].name, name) == 0)
            return &(*I->vals)[i];
    return NULL;
}

/* The pending max/min entry of a layout: 1 with op and axes, 0 if none. */
static int layout_pending(const sp_layout_t *L, sp_red_t *op, sp_axes_t *ax)
{
    for (int k = 0; k < L->npartial; k++)
        if (L->pop[k] == SP_RED_MAX || L->pop[k] == SP_RED_MIN) {
            *op = L->pop[k];
            *ax = L->paxes[k];
            return 1;
        }
    return 0;
}

static void axes_str(const sp_mesh_t *m, const sp_axes_t *a, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < a->n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "," : "", m->name[a->axis[i]]);
}

/* Does b cover every axis of a? */
static int axes_cover(const sp_axes_t *b, const sp_axes_t *a)
{
    for (int i = 0; i < a->n; i++) {
        int found = 0;
        for (int j = 0; j < b->n; j++)
            found |= b->axis[j] == a->axis[i];
        if (!found)
            return 0;
    }
    return 1;
}

static void pending_error(interp_t *I, sp_loc_t loc, const sp_binding_t *b, const char *what)
{
    char ax[256];
    axes_str(&I->C->mesh, &b->pend_axes, ax, sizeof ax);
    const char *op = sp_red_name(b->pend_op);
    errat(I, SP_DIAG_LINEAGE, loc,
          "'%s' holds a pending %s over %s (partial(%s@%s)) and is %s: the checker gives every "
          "rank the %s itself, which is sound only if such a value is reduced "
          "(all_reduce(%s, %s, %s)) before any other use",
          b->name, op, ax, op, ax, what, op, b->name, op, ax);
}

static int target_name(interp_t *I, const sp_ast_expr_t *t, char *buf, size_t len);
static int is_int_expr(interp_t *I, const sp_ast_expr_t *e);

/* The binding a plain name or an indexed name (w[l]) denotes, or NULL (no diagnostics). */
static sp_binding_t *binding_of(interp_t *I, const sp_ast_expr_t *e)
{
    if (e->kind == SP_AST_NAME)
        return lookup(I, e->name);
    if (e->kind != SP_AST_INDEX || e->a->kind != SP_AST_NAME)
        return NULL;
    for (size_t i = 0; i < e->nargs; i++)
        if (!is_int_expr(I, e->args[i].value))
            return NULL;
    char nm[512];
    sp_diags_mark_t m;
    sp_diags_mark(I->C->d, &m);
    int ok = target_name(I, e, nm, sizeof nm);
    sp_diags_restore(I->C->d, &m);
    return ok ? lookup(I, nm) : NULL;
}

/* Mark the binding of name as holding the pending max/min of layout L (if any). */
static void mark_pending(interp_t *I, const char *name, const sp_layout_t *L)
{
    sp_binding_t *b = lookup(I, name);
    if (b && I->is_plan)
        b->pend = layout_pending(L, &b->pend_op, &b->pend_axes);
}

/* Bind name to val (taken), on the active ranks only: a rank outside the active set (an `on`
   block, a rank-dependent `if`) keeps what it had, even when val holds a value for it (a plain
   alias `y = a` evaluates `a` on every rank).  In the current scope a rebinding replaces the
   active ranks' values and remembers, per rank, the statement that defined each. */
static void bind(interp_t *I, const char *name, sp_loc_t loc, pval_t val, int vid)
{
    for (int64_t r = 0; r < I->nranks; r++)
        if (!I->active[r] && val[r].ndim >= 0) {
            sp_tensor_clear(&val[r]);
            sp_tensor_init(&val[r]);
            val[r].ndim = -1;
        }
    sp_binding_t *b = lookup(I, name);
    if (b && b->scope == I->scope) {
        for (int64_t r = 0; r < I->nranks; r++) {
            if (val[r].ndim < 0)
                continue;
            sp_tensor_clear(&b->t[r]);
            b->t[r] = val[r];
            sp_tensor_init(&val[r]);
            val[r].ndim = -1;
            if (b->rloc)
                b->rloc[r] = loc;
        }
        pval_free(val, I->nranks);
        b->loc = loc;
        b->pend = 0;
        if (!I->is_plan)
            I->vid_of_binding[b - *I->vals] = vid;
        return;
    }
    if (*I->nvals == *I->avals) {
        *I->avals = *I->avals ? 2 * *I->avals : 64;
        *I->vals = flint_realloc(*I->vals, (size_t)*I->avals * sizeof(sp_binding_t));
        if (!I->is_plan) {
            I->vid_of_binding = flint_realloc(I->vid_of_binding, (size_t)*I->avals * sizeof(int));
        }
    }
    sp_binding_t *nb = &(*I->vals)[(*I->nvals)++];
    nb->name = sp_strdup(name);
    nb->loc = loc;
    nb->t = val;
    nb->rloc = NULL;
    nb->pend = 0;
    if (I->is_plan) {
        nb->rloc = flint_calloc((size_t)I->nranks, sizeof(sp_loc_t));
        for (int64_t r = 0; r < I->nranks; r++)
            if (val[r].ndim >= 0)
                nb->rloc[r] = loc;
    }
    nb->scope = I->scope;
    if (!I->is_plan)
        I->vid_of_binding[nb - *I->vals] = vid;
}

static void pop_scope(interp_t *I, int scope)
{
    while (*I->nvals > 0 && (*I->vals)[*I->nvals - 1].scope > scope) {
        sp_binding_t *b = &(*I->vals)[--*I->nvals];
        flint_free(b->name);
        flint_free(b->rloc);
        pval_free(b->t, I->nranks);
    }
}

/* ---- tape (model) ----------------------------------------------------------------------- */

static int tv_add(interp_t *I, const sp_tensor_t *t)
{
    if (I->is_plan)
        return -1;
    if (I->ntv == I->atv) {
        I->atv = I->atv ? 2 * I->atv : 256;
        I->tv = flint_realloc(I->tv, (size_t)I->atv * sizeof(sp_tensor_t));
    }
    sp_tensor_init(&I->tv[I->ntv]);
    sp_tensor_copy(&I->tv[I->ntv], t);
    return I->ntv++;
}

static void attrs_free(sp_attr_t *a, int n)
{
    for (int i = 0; i < n; i++) {
        fmpq_clear(a[i].num);
        flint_free(a[i].list);
    }
    flint_free(a);
}

static void tape_add(interp_t *I, const char *op, const sp_attr_t *attr, int nattr, const int *in,
                     int nin, int out)
{
    if (I->is_plan || out < 0)
        return;
    for (int i = 0; i < nin; i++)
        if (in[i] < 0)
            return; /* a constant-only input chain needs no gradient bookkeeping */
    if (I->ntape == I->atape) {
        I->atape = I->atape ? 2 * I->atape : 256;
        I->tape = flint_realloc(I->tape, (size_t)I->atape * sizeof(tape_t));
    }
    tape_t *t = &I->tape[I->ntape++];
    t->op = sp_strdup(op);
    t->nattr = nattr;
    t->attr = flint_calloc((size_t)(nattr ? nattr : 1), sizeof(sp_attr_t));
    for (int i = 0; i < nattr; i++) {
        t->attr[i] = attr[i];
        fmpq_init(t->attr[i].num);
        fmpq_set(t->attr[i].num, attr[i].num);
        if (attr[i].nlist) {
            t->attr[i].list = flint_malloc((size_t)attr[i].nlist * sizeof(int64_t));
            memcpy(t->attr[i].list, attr[i].list, (size_t)attr[i].nlist * sizeof(int64_t));
        }
    }
    t->nin = nin;
    t->in = flint_malloc((size_t)(nin ? nin : 1) * sizeof(int));
    memcpy(t->in, in, (size_t)nin * sizeof(int));
    t->out = out;
}

/* ---- integers ------------------------------------------------------------------------------ */

static int ivar_find(interp_t *I, const char *name, int64_t *v)
{
    for (int i = I->nivars - 1; i >= 0; i--)
        if (strcmp(I->ivars[i].name, name) == 0) {
            *v = I->ivars[i].value;
            return 1;
        }
    return 0;
}

/* Is e an integer expression (names are dims, loop variables or rank.<axis>)? */
static int is_int_expr(interp_t *I, const sp_ast_expr_t *e)
{
    int64_t v;
    switch (e->kind) {
    case SP_AST_NUM:
        return fmpz_is_one(fmpq_denref(e->value));
    case SP_AST_NAME:
        if (ivar_find(I, e->name, &v) || sp_dim_find(I->C, e->name) >= 0 ||
            (I->is_plan && sp_mesh_axis(&I->C->mesh, e->name) >= 0))
            return !lookup(I, e->name);
        return strncmp(e->name, "rank.", 5) == 0 && I->is_plan;
    case SP_AST_NEG:
        return is_int_expr(I, e->a);
    case SP_AST_BINOP:
        return e->op <= SP_BIN_POW && is_int_expr(I, e->a) && is_int_expr(I, e->b);
    default:
        return 0;
    }
}

static int eval_int(interp_t *I, const sp_ast_expr_t *e, int64_t rank, int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case SP_AST_NUM:
        if (!fmpz_is_one(fmpq_denref(e->value)) || !fmpz_fits_si(fmpq_numref(e->value))) {
            errat(I, SP_DIAG_SHAPE, e->loc, "expected an integer, found '%s'", e->text);
            return 0;
        }
        *out = fmpz_get_si(fmpq_numref(e->value));
        return 1;
    case SP_AST_NAME: {
        if (ivar_find(I, e->name, out))
            return 1;
        int d = sp_dim_find(I->C, e->name);
        if (d >= 0) {
            *out = I->C->dims[d].red;
            return 1;
        }
        if (I->is_plan && sp_mesh_axis(&I->C->mesh, e->name) >= 0) {
            *out = I->C->mesh.size[sp_mesh_axis(&I->C->mesh, e->name)];
            return 1;
        }
        if (strncmp(e->name, "rank.", 5) == 0) {
            int ax = I->is_plan ? sp_mesh_axis(&I->C->mesh, e->name + 5) : -1;
            if (ax < 0) {
                errat(I, SP_DIAG_LAYOUT, e->loc, "unknown mesh axis '%s'", e->name + 5);
                return 0;
            }
            if (rank < 0) {
                /* loop bounds, row ranges, layout sizes, `on` values, name indices: one value
                   for all ranks, which run in lockstep */
                errat(I, SP_DIAG_LAYOUT, e->loc,
                      "'%s' differs from rank to rank; a value that is the same on every rank "
                      "is needed here",
                      e->name);
                return 0;
            }
            *out = sp_mesh_coord(&I->C->mesh, rank, ax);
            return 1;
        }
        errat(I, SP_DIAG_NAME, e->loc, "unknown dimension or integer '%s'", e->name);
        return 0;
    }
    case SP_AST_NEG:
        if (!eval_int(I, e->a, rank, &a))
            return 0;
        *out = -a;
        return 1;
    case SP_AST_BINOP:
        if (!eval_int(I, e->a, rank, &a) || !eval_int(I, e->b, rank, &b))
            return 0;
        switch (e->op) {
        case SP_BIN_ADD: *out = a + b; return 1;
        case SP_BIN_SUB: *out = a - b; return 1;
        case SP_BIN_MUL:
            if (a != 0 && (b > INT64_MAX / (a < 0 ? -a : a) || b < -(INT64_MAX / (a < 0 ? -a : a)))) {
                errat(I, SP_DIAG_LIMIT, e->loc, "integer overflow");
                return 0;
            }
            *out = a * b;
            return 1;
        case SP_BIN_DIV:
        case SP_BIN_MOD:
            if (b == 0) {
                errat(I, SP_DIAG_SHAPE, e->loc, "division by zero");
                return 0;
            }
            *out = e->op == SP_BIN_DIV ? a / b : a % b;
            return 1;
        case SP_BIN_POW:
            if (b < 0 || b > 62) {
                errat(I, SP_DIAG_SHAPE, e->loc, "integer power out of range");
                return 0;
            }
            *out = 1;
            while (b-- > 0)
                *out *= a;
            return 1;
        default:
            errat(I, SP_DIAG_SHAPE, e->loc, "a comparison is not an integer");
            return 0;
        }
    default:
        errat(I, SP_DIAG_SHAPE, e->loc, "expected an integer expression");
        return 0;
    }
}

/* An integer expression in a tensor context: exact rational (1/(B*H) is not integer division). */
static int eval_rat(interp_t *I, const sp_ast_expr_t *e, int64_t rank, fmpq_t out)
{
    if (e->kind == SP_AST_BINOP && e->op <= SP_BIN_DIV) {
        fmpq_t a, b;
        fmpq_init(a);
        fmpq_init(b);
        int ok = eval_rat(I, e->a, rank, a) && eval_rat(I, e->b, rank, b);
        if (ok) {
            switch (e->op) {
            case SP_BIN_ADD: fmpq_add(out, a, b); break;
            case SP_BIN_SUB: fmpq_sub(out, a, b); break;
            case SP_BIN_MUL: fmpq_mul(out, a, b); break;
            default:
                if (fmpq_is_zero(b)) {
                    errat(I, SP_DIAG_SHAPE, e->loc, "division by zero");
                    ok = 0;
                } else {
                    fmpq_div(out, a, b);
                }
            }
        }
        fmpq_clear(a);
        fmpq_clear(b);
        return ok;
    }
    if (e->kind == SP_AST_NEG) {
        if (!eval_rat(I, e->a, rank, out))
            return 0;
        fmpq_neg(out, out);
        return 1;
    }
    if (e->kind == SP_AST_NUM) {
        fmpq_set(out, e->value);
        return 1;
    }
    int64_t v;
    if (!eval_int(I, e, rank, &v))
        return 0;
    fmpq_set_si(out, v, 1);
    return 1;
}

/* ---- layouts ------------------------------------------------------------------------------ */

static int resolve_axes(interp_t *I, const sp_ast_name_t *names, size_t n, sp_axes_t *out,
                        uint8_t *used)
{
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        int ax = sp_mesh_axis(&I->C->mesh, names[i].str);
        if (ax < 0) {
            errat(I, SP_DIAG_LAYOUT, names[i].loc, "unknown mesh axis '%s'", names[i].str);
            return 0;
        }
        if (used && used[ax]) {
            errat(I, SP_DIAG_LAYOUT, names[i].loc, "mesh axis '%s' used twice in one layout",
                  names[i].str);
            return 0;
        }
        if (used)
            used[ax] = 1;
        out->axis[out->n++] = ax;
    }
    return 1;
}

static int resolve_layout_(interp_t *I, const sp_ast_layout_t *al, sp_layout_t *L);

/* Resolve a layout; for a model (no mesh) any sharding is an error.  L is clear on failure. */
static int resolve_layout(interp_t *I, const sp_ast_layout_t *al, sp_layout_t *L)
{
    if (resolve_layout_(I, al, L))
        return 1;
    sp_layout_clear(L);
    return 0;
}

static int resolve_layout_(interp_t *I, const sp_ast_layout_t *al, sp_layout_t *L)
{
    sp_layout_init(L);
    if (al->ndims > SP_MAX_DIMS) {
        errat(I, SP_DIAG_SHAPE, al->loc, "too many dimensions (at most %d)", SP_MAX_DIMS);
        return 0;
    }
    L->ndim = (int)al->ndims;
    uint8_t used[SP_MAX_AXES] = {0};
    for (size_t d = 0; d < al->ndims; d++) {
        const sp_ast_ldim_t *ld = &al->dims[d];
        if (!eval_int(I, ld->size, -1, &L->size[d]))
            return 0;
        if (L->size[d] < 0) {
            errat(I, SP_DIAG_SHAPE, ld->size->loc, "negative dimension size %lld",
                  (long long)L->size[d]);
            return 0;
        }
        if (ld->naxes && !I->is_plan) {
            errat(I, SP_DIAG_LAYOUT, ld->axes[0].loc, "a model shape cannot be sharded");
            return 0;
        }
        if (!resolve_axes(I, ld->axes, ld->naxes, &L->axes[d], used))
            return 0;
        if (ld->nsplit) {
            int64_t n = sp_axes_count(&I->C->mesh, &L->axes[d]);
            if ((int64_t)ld->nsplit != n) {
                errat(I, SP_DIAG_LAYOUT, ld->split_loc,
                      "%zu explicit shard sizes for a group of %lld ranks", ld->nsplit,
                      (long long)n);
                return 0;
            }
            L->split[d] = flint_malloc((size_t)n * sizeof(int64_t));
            L->nsplit[d] = n;
            int64_t sum = 0;
            for (int64_t k = 0; k < n; k++) {
                if (!eval_int(I, ld->split[k], -1, &L->split[d][k]))
                    return 0;
                if (L->split[d][k] < 0) {
                    errat(I, SP_DIAG_LAYOUT, ld->split[k]->loc, "negative shard size");
                    return 0;
                }
                sum += L->split[d][k];
            }
            if (sum != L->size[d]) {
                errat(I, SP_DIAG_LAYOUT, ld->split_loc,
                      "explicit shard sizes sum to %lld, the dimension has %lld", (long long)sum,
                      (long long)L->size[d]);
                return 0;
            }
        }
    }
    if (al->npartials && !I->is_plan) {
        errat(I, SP_DIAG_LAYOUT, al->loc, "a model shape cannot be partial");
        return 0;
    }
    if (al->npartials > SP_MAX_AXES) {
        errat(I, SP_DIAG_LAYOUT, al->loc, "too many partial reductions");
        return 0;
    }
    for (size_t k = 0; k < al->npartials; k++) {
        const sp_ast_partial_t *p = &al->partials[k];
        if (!sp_red_parse(p->op.str, &L->pop[k])) {
            errat(I, SP_DIAG_LAYOUT, p->op.loc, "unknown reduction '%s' (sum, avg, max, min)",
                  p->op.str);
            return 0;
        }
        if (!resolve_axes(I, p->axes, p->naxes, &L->paxes[k], used))
            return 0;
        L->npartial++;
    }
    return 1;
}

static void shape_str(const int64_t *s, int n, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

/* ---- fresh symbols and projections -------------------------------------------------------- */

static void fresh_tensor(sp_check_t *C, const char *base, const int64_t *shape, int ndim,
                         sp_tensor_t *t)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s@%d", base, ++C->fresh_counter);
    sp_tensor_alloc(t, ndim, shape);
    sp_tensor_symbols(C->E, t, prefix);
}

/*
 * The plan's value of a tensor whose logical value is `full` under layout L, for every active
 * rank: the shard, and for pending reductions a decomposition into fresh parts (the last member
 * of each group holds the logical value minus the others, so later stages hold for every
 * decomposition).
 */
static pval_t distribute(interp_t *I, const sp_layout_t *L, const sp_tensor_t *full, const char *name)
{
    sp_check_t *C = I->C;
    pval_t out = pval_new(I->nranks);
    for (int64_t r = 0; r < I->nranks; r++)
        if (I->active[r])
            sp_layout_project(&C->mesh, L, r, full, &out[r]);
    for (int k = 0; k < L->npartial; k++) {
        const sp_axes_t *a = &L->paxes[k];
        int64_t n = sp_axes_count(&C->mesh, a);
        if (n <= 1)
            continue;
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!I->active[r] || sp_axes_index(&C->mesh, a, r) != 0)
                continue;
            /* group led by r: r's value w (the group's value so far: after the earlier
               entries' decompositions it is r's part of them) is split into n parts */
            sp_tensor_t sum;
            sp_tensor_init(&sum);
            sp_tensor_copy(&sum, &out[r]);
            int64_t numel = sp_tensor_numel(&sum);
            sp_red_t op = L->pop[k];
            if (op == SP_RED_AVG) {
                /* avg of the parts is w: the parts sum to n * w */
                for (int64_t i = 0; i < numel; i++)
                    sum.v[i] = sp_expr_mul(C->E, sp_expr_const_si(C->E, n, 1), sum.v[i]);
            }
            for (int64_t j = 0; j + 1 < n; j++) {
                int64_t q = sp_axes_member(&C->mesh, a, r, j);
                if (op == SP_RED_MAX || op == SP_RED_MIN)
                    continue; /* every part holds the value itself (see docs/soundness.md) */
                char nm[512];
                snprintf(nm, sizeof nm, "%s.part%lld", name, (long long)j);
                sp_tensor_t part;
                sp_tensor_init(&part);
                fresh_tensor(C, nm, sum.shape, sum.ndim, &part);
                for (int64_t i = 0; i < numel; i++)
                    sum.v[i] = sp_expr_sub(C->E, sum.v[i], part.v[i]);
                sp_tensor_clear(&out[q]);
                out[q] = part;
            }
            int64_t last = sp_axes_member(&C->mesh, a, r, n - 1);
            if (op == SP_RED_SUM || op == SP_RED_AVG) {
                sp_tensor_clear(&out[last]);
                out[last] = sum;
            } else {
                sp_tensor_clear(&sum);
            }
        }
    }
    return out;
}

/* ---- stages ------------------------------------------------------------------------------- */

/*
 * The model value a relation of rows [lo, hi) (dim 0; a scalar has one row) on the active ranks
 * compares with: the value before the cut, or, where the plan already crossed this cut point on
 * those rows, the model's fresh value.  *mixed is set to 2 when the rows disagree on some
 * active rank, else to 1 when the active ranks disagree.
 */
static const sp_binding_t *model_orig(interp_t *I, const char *name, int64_t lo, int64_t hi,
                                      int *mixed)
{
    sp_check_t *C = I->C;
    *mixed = 0;
    for (int i = 0; i < C->npassed; i++) {
        if (strcmp(C->passed[i], name) != 0)
            continue;
        int some = 0, all = 1, rows_mixed = 0;
        int64_t nrows = C->passed_rows[i];
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!I->active[r])
                continue;
            int rsome = 0, rall = 1;
            for (int64_t row = lo; row < hi && row < nrows; row++) {
                rsome |= C->passed_on[i][r * nrows + row];
                rall &= C->passed_on[i][r * nrows + row];
            }
            rows_mixed |= rsome && !rall;
            some |= rsome;
            all &= rall;
        }
        if (all && some)
            return sp_model_value(C, name);
        *mixed = rows_mixed ? 2 : some;
        break;
    }
    for (int i = 0; i < C->nmorig; i++)
        if (strcmp(C->morig[i].name, name) == 0)
            return &C->morig[i];
    return sp_model_value(C, name);
}

static void mark_passed(interp_t *I, const char *name, int64_t nrows, int64_t lo, int64_t hi)
{
    sp_check_t *C = I->C;
    int k;
    for (k = 0; k < C->npassed; k++)
        if (strcmp(C->passed[k], name) == 0)
            break;
    if (k == C->npassed) {
        C->passed = flint_realloc(C->passed, (size_t)(C->npassed + 1) * sizeof(char *));
        C->passed_on = flint_realloc(C->passed_on, (size_t)(C->npassed + 1) * sizeof(uint8_t *));
        C->passed_rows = flint_realloc(C->passed_rows, (size_t)(C->npassed + 1) * sizeof(int64_t));
        C->passed[k] = sp_strdup(name);
        C->passed_on[k] = flint_calloc((size_t)(I->nranks * nrows), 1);
        C->passed_rows[k] = nrows;
        C->npassed++;
    }
    for (int64_t r = 0; r < I->nranks; r++)
        if (I->active[r])
            for (int64_t row = lo; row < hi; row++)
                C->passed_on[k][r * nrows + row] = 1;
}

/* rows [lo, hi) of dim 0 of t, into out (initialized) */
static void tensor_rows(sp_tensor_t *out, const sp_tensor_t *t, int64_t lo, int64_t hi)
{
    int64_t shape[SP_MAX_DIMS], inner = 1;
    memcpy(shape, t->shape, sizeof shape);
    for (int d = 1; d < t->ndim; d++)
        inner *= t->shape[d];
    shape[0] = hi - lo;
    sp_tensor_alloc(out, t->ndim, shape);
    for (int64_t i = 0; i < (hi - lo) * inner; i++)
        out->v[i] = t->v[lo * inner + i];
}

static int is_cut(const sp_check_t *C, const char *name)
{
    for (int i = 0; i < C->ncuts; i++)
        if (strcmp(C->cuts[i], name) == 0)
            return 1;
    return 0;
}

static void add_cut(sp_check_t *C, const char *name)
{
    if (is_cut(C, name))
        return;
    if (C->ncuts == C->acuts) {
        C->acuts = C->acuts ? 2 * C->acuts : 16;
        C->cuts = flint_realloc(C->cuts, (size_t)C->acuts * sizeof(char *));
    }
    C->cuts[C->ncuts++] = sp_strdup(name);
}

/* target of a lineage or output: NAME or INDEX of NAME with integer indices -> "w[3]" */
static int target_name(interp_t *I, const sp_ast_expr_t *t, char *buf, size_t len)
{
    if (t->kind == SP_AST_NAME) {
        snprintf(buf, len, "%s", t->name);
        return 1;
    }
    if (t->kind == SP_AST_INDEX && t->a->kind == SP_AST_NAME) {
        size_t k = (size_t)snprintf(buf, len, "%s[", t->a->name);
        for (size_t i = 0; i < t->nargs; i++) {
            int64_t v;
            if (t->args[i].key.str || !eval_int(I, t->args[i].value, -1, &v))
                return 0;
            k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "%s%lld", i ? "," : "",
                                  (long long)v);
        }
        if (k < len)
            snprintf(buf + k, len - k, "]");
        return 1;
    }
    errat(I, SP_DIAG_LINEAGE, t->loc, "expected a model tensor name");
    return 0;
}

/*
 * Relate the plan value `val` (of plan tensor pname) to model tensor mname under layout: make a
 * stage, and for a lineage cut replace the plan value by the distribution of the model's fresh
 * value.  Returns the (possibly replaced) value.
 */
static sp_status_t relate_l(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                            const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al,
                            const sp_layout_t *given, const sp_ast_expr_t *rows, pval_t *val);

static sp_status_t relate(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                          const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al, pval_t *val)
{
    return relate_l(I, kind, pname, ploc, mname, mloc, al, NULL, NULL, val);
}

/*
 * al (a layout in the source) or given (an inferred one); rows (a RANGE lo..hi or NULL) relates
 * only rows [lo, hi) of dim 0 of the model tensor, and al then lays out that slice.
 */
static sp_status_t relate_l(interp_t *I, sp_stage_kind_t kind, const char *pname, sp_loc_t ploc,
                            const char *mname, sp_loc_t mloc, const sp_ast_layout_t *al,
                            const sp_layout_t *given, const sp_ast_expr_t *rows, pval_t *val)
{
    sp_check_t *C = I->C;
    int mixed;
    const sp_binding_t *cur0 = sp_model_value(C, mname);
    if (cur0 == NULL) {
        errat(I, SP_DIAG_LINEAGE, mloc, "lineage to a missing model tensor '%s'", mname);
        return SP_ERR_INPUT;
    }
    int64_t nrows = cur0->t[0].ndim > 0 ? cur0->t[0].shape[0] : 1, lo = 0, hi = nrows;
    char sname[600];
    snprintf(sname, sizeof sname, "%s", mname);
    if (rows != NULL) {
        if (!eval_int(I, rows->a, -1, &lo) || !eval_int(I, rows->b, -1, &hi))
            return SP_ERR_INPUT;
        if (cur0->t[0].ndim == 0 || lo < 0 || hi > nrows || lo >= hi) {
            errat(I, SP_DIAG_LINEAGE, rows->loc,
                  "rows %lld..%lld are not a non-empty slice of dim 0 of '%s' (%lld rows)",
                  (long long)lo, (long long)hi, mname,
                  (long long)(cur0->t[0].ndim > 0 ? nrows : 0));
            return SP_ERR_INPUT;
        }
        snprintf(sname, sizeof sname, "%s[%lld..%lld]", mname, (long long)lo, (long long)hi);
    }
    const sp_binding_t *mb = model_orig(I, mname, lo, hi, &mixed);
    if (mixed) {
        if (mixed == 2)
            errat(I, SP_DIAG_LINEAGE, mloc,
                  "'%s' is a cut point the plan already crossed on some of these rows but not on "
                  "others",
                  sname);
        else
            errat(I, SP_DIAG_LINEAGE, mloc,
                  "'%s' is a cut point the plan already crossed on some of these ranks but not on "
                  "others",
                  mname);
        return SP_ERR_INPUT;
    }
    /* the model value compared with: the tensor, or its rows [lo, hi) */
    sp_tensor_t mslice;
    sp_tensor_init(&mslice);
    if (rows != NULL)
        tensor_rows(&mslice, &mb->t[0], lo, hi);
    const sp_tensor_t *mt = rows != NULL ? &mslice : &mb->t[0];
    sp_status_t st = SP_ERR_INPUT;
    sp_layout_t L;
    sp_layout_init(&L);
    if (given) {
        sp_layout_copy(&L, given);
    } else if (al) {
        if (!resolve_layout(I, al, &L))
            goto cleanup;
    } else {
        L.ndim = mt->ndim;
        memcpy(L.size, mt->shape, sizeof L.size);
    }
    int same = L.ndim == mt->ndim;
    for (int d = 0; d < L.ndim && same; d++)
        same = L.size[d] == mt->shape[d];
    if (!same) {
        char a[128], b[128];
        shape_str(L.size, L.ndim, a, sizeof a);
        shape_str(mt->shape, mt->ndim, b, sizeof b);
        errat(I, SP_DIAG_LINEAGE, al ? al->loc : mloc,
              "layout shape %s does not match model tensor '%s' of shape %s", a, sname, b);
        goto cleanup;
    }
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r])
            continue;
        if ((*val)[r].ndim < 0) {
            char rs[128];
            sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
            errat(I, SP_DIAG_LINEAGE, ploc, "'%s' has no value on rank %s", pname, rs);
            goto cleanup;
        }
        int64_t ls[SP_MAX_DIMS];
        sp_layout_local_shape(&C->mesh, &L, r, ls);
        int ok = (*val)[r].ndim == L.ndim;
        for (int d = 0; d < L.ndim && ok; d++)
            ok = ls[d] == (*val)[r].shape[d];
        if (!ok) {
            char a[128], b[128], rs[128];
            sp_tensor_shape_str(&(*val)[r], a, sizeof a);
            shape_str(ls, L.ndim, b, sizeof b);
            sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
            errat(I, SP_DIAG_LINEAGE, al ? al->loc : ploc,
                  "'%s' has shape %s on rank %s but the layout of '%s' gives %s", pname, a, rs,
                  sname, b);
            goto cleanup;
        }
    }
    if (!C->collect_only) {
        if (C->nstages == C->astages) {
            C->astages = C->astages ? 2 * C->astages : 32;
            C->stages = flint_realloc(C->stages, (size_t)C->astages * sizeof(sp_stage_t));
        }
        sp_stage_t *s = &C->stages[C->nstages];
        memset(s, 0, sizeof(*s));
        s->id = C->nstages++;
        s->kind = kind;
        s->plan_name = sp_strdup(pname);
        s->model_name = sp_strdup(sname);
        s->plan_loc = ploc;
        s->model_loc = mb->loc;
        sp_layout_copy(&s->layout, &L);
        s->plan = pval_new(I->nranks);
        for (int64_t r = 0; r < I->nranks; r++)
            if (I->active[r])
                sp_tensor_copy(&s->plan[r], &(*val)[r]);
        sp_tensor_init(&s->model);
        sp_tensor_copy(&s->model, mt);
        s->nranks = I->nranks;
        s->memo_of = -1;
        s->fail_rank = -1;
    }
    if (kind == SP_STAGE_LINEAGE) {
        if (C->collect_only) {
            add_cut(C, mname);
        } else {
            mark_passed(I, mname, nrows, lo, hi);
            /* continue from the model's (fresh) value, or its rows [lo, hi) */
            sp_tensor_t fresh;
            sp_tensor_init(&fresh);
            if (rows != NULL)
                tensor_rows(&fresh, &cur0->t[0], lo, hi);
            pval_t nv = distribute(I, &L, rows != NULL ? &fresh : &cur0->t[0], mname);
            sp_tensor_clear(&fresh);
            for (int64_t r = 0; r < I->nranks; r++)
                if (!I->active[r] && (*val)[r].ndim >= 0)
                    sp_tensor_copy(&nv[r], &(*val)[r]);
            pval_free(*val, I->nranks);
            *val = nv;
        }
    }
    st = SP_OK;
cleanup:
    sp_layout_clear(&L);
    sp_tensor_clear(&mslice);
    return st;
}

/* ---- calls -------------------------------------------------------------------------------- */

/* Is name a model input or parameter (or an element of a parameter array)? */
static int is_param_or_input(const sp_check_t *C, const char *name)
{
    const sp_ast_block_t *b = &C->model->body;
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        if (s->kind != SP_STMT_INPUT && s->kind != SP_STMT_PARAM)
            continue;
        size_t l = strlen(s->name.str);
        if (strcmp(s->name.str, name) == 0 || (strncmp(s->name.str, name, l) == 0 && name[l] == '['))
            return 1;
    }
    return strncmp(name, "adam.", 5) == 0 || strncmp(name, "momentum.", 9) == 0;
}

static const sp_ast_stmt_t *find_func(sp_check_t *C, const char *name)
{
    for (int i = 0; i < C->nfuncs; i++)
        if (strcmp(C->funcs[i]->name.str, name) == 0)
            return C->funcs[i];
    return NULL;
}

static const char *const collectives[] = {"all_reduce", "all_gather", "reduce_scatter",
                                          "all_to_all", "broadcast", "reduce", "send", "recv",
                                          NULL};

int sp_exec_is_collective(const char *name)
{
    for (int i = 0; collectives[i]; i++)
        if (strcmp(collectives[i], name) == 0)
            return 1;
    return 0;
}

/* elementwise operators whose numeric operands are tensors (0-d constants), not attributes */
static int numeric_is_tensor(const char *op)
{
    static const char *const ew[] = {"add", "sub", "mul", "div", "maximum", "minimum", "max", "min",
                                     "where", "lt", "le", "gt", "ge", "eq", "ne", "clamp", NULL};
    for (int i = 0; ew[i]; i++)
        if (strcmp(ew[i], op) == 0)
            return 1;
    return 0;
}

static pval_t const_pval(interp_t *I, const fmpq_t q)
{
    pval_t p = pval_new(I->nranks);
    for (int64_t r = 0; r < I->nranks; r++)
        if (I->active[r]) {
            sp_tensor_alloc(&p[r], 0, NULL);
            p[r].v[0] = sp_expr_const_fmpq(I->C->E, q);
        }
    return p;
}

/* An integer expression as a constant tensor, evaluated on each rank (rank.tp differs). */
static sp_status_t int_pval(interp_t *I, const sp_ast_expr_t *e, pval_t *out)
{
    pval_t p = pval_new(I->nranks);
    fmpq_t q;
    fmpq_init(q);
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r])
            continue;
        if (!eval_rat(I, e, r, q)) {
            fmpq_clear(q);
            pval_free(p, I->nranks);
            return SP_ERR_INPUT;
        }
        sp_tensor_alloc(&p[r], 0, NULL);
        p[r].v[0] = sp_expr_const_fmpq(I->C->E, q);
    }
    fmpq_clear(q);
    *out = p;
    return SP_OK;
}

/* an attribute from an argument expression, for one rank */
static int make_attr(interp_t *I, const sp_ast_arg_t *arg, int64_t rank, sp_attr_t *a)
{
    memset(a, 0, sizeof(*a));
    fmpq_init(a->num);
    a->key = arg->key.str;
    const sp_ast_expr_t *v = arg->value;
    if (v->kind == SP_AST_NUM) {
        a->kind = SP_ATTR_NUM;
        fmpq_set(a->num, v->value);
        return 1;
    }
    if (v->kind == SP_AST_NEG && v->a->kind == SP_AST_NUM) {
        a->kind = SP_ATTR_NUM;
        fmpq_neg(a->num, v->a->value);
        return 1;
    }
    if (v->kind == SP_AST_BINOP && v->op == SP_BIN_DIV && v->a->kind == SP_AST_NUM &&
        v->b->kind == SP_AST_NUM && !fmpq_is_zero(v->b->value)) {
        a->kind = SP_ATTR_NUM;
        fmpq_div(a->num, v->a->value, v->b->value);
        return 1;
    }
    if (v->kind == SP_AST_LIST) {
        a->kind = SP_ATTR_LIST;
        a->nlist = (int)v->nargs;
        a->list = flint_calloc(v->nargs ? v->nargs : 1, sizeof(int64_t));
        for (size_t i = 0; i < v->nargs; i++)
            if (!eval_int(I, v->args[i].value, rank, &a->list[i]))
                return 0;
        return 1;
    }
    if (v->kind == SP_AST_NAME && !is_int_expr(I, v)) {
        a->kind = SP_ATTR_NAME;
        a->name = v->name;
        return 1;
    }
    a->kind = SP_ATTR_NUM;
    /* a constant expression: 1/64, H/2, (2*1e-5), -(1/3), rank.cp*S */
    if (v->kind == SP_AST_BINOP || v->kind == SP_AST_NEG)
        return eval_rat(I, v, rank, a->num);
    int64_t x;
    if (!eval_int(I, v, rank, &x))
        return 0;
    fmpq_set_si(a->num, x, 1);
    return 1;
}

/* Is this argument a tensor (as opposed to an attribute)? */
static int arg_is_tensor(interp_t *I, const char *op, const sp_ast_arg_t *arg, size_t pos)
{
    const sp_ast_expr_t *v = arg->value;
    if (arg->key.str) {
        /* keyword tensors: mask= when it names a tensor */
        return v->kind == SP_AST_NAME && lookup(I, v->name) != NULL;
    }
    if (v->kind == SP_AST_LIST)
        return 0;
    if (v->kind == SP_AST_NAME && !is_int_expr(I, v))
        return 1; /* a tensor, or an unknown name reported as such */
    if (is_int_expr(I, v) || v->kind == SP_AST_NUM ||
        (v->kind == SP_AST_NEG && v->a->kind == SP_AST_NUM))
        return pos == 0 || numeric_is_tensor(op);
    return 1;
}

static sp_status_t call_func(interp_t *I, const sp_ast_expr_t *e, const sp_ast_stmt_t *f,
                             pval_t **rets, int **ret_vids, int *nret)
{
    if (I->depth >= MAX_CALL_DEPTH) {
        errat(I, SP_DIAG_LIMIT, e->loc, "function calls nested more than %d deep", MAX_CALL_DEPTH);
        return SP_ERR_INPUT;
    }
    if (e->nargs != f->nparams) {
        errat(I, SP_DIAG_NAME, e->loc, "'%s' takes %zu arguments, %zu given", f->name.str,
              f->nparams, e->nargs);
        return SP_ERR_INPUT;
    }
    /* evaluate arguments in the caller's scope */
    pval_t *args = flint_calloc(e->nargs ? e->nargs : 1, sizeof(pval_t));
    int *vids = flint_calloc(e->nargs ? e->nargs : 1, sizeof(int));
    int64_t *ints = flint_calloc(e->nargs ? e->nargs : 1, sizeof(int64_t));
    uint8_t *isint = flint_calloc(e->nargs ? e->nargs : 1, 1);
    sp_status_t st = SP_OK;
    for (size_t i = 0; i < e->nargs && st == SP_OK; i++) {
        if (e->args[i].key.str) {
            errat(I, SP_DIAG_NAME, e->args[i].key.loc, "user functions take positional arguments");
            st = SP_ERR_INPUT;
        } else if (is_int_expr(I, e->args[i].value)) {
            isint[i] = 1;
            /* one value for all ranks: it becomes an integer variable of the body */
            if (!eval_int(I, e->args[i].value, -1, &ints[i]))
                st = SP_ERR_INPUT;
        } else {
            st = eval(I, e->args[i].value, &args[i], &vids[i]);
        }
    }
    if (st == SP_OK) {
        int save_scope = I->scope;
        int save_ivars = I->nivars;
        I->scope++;
        I->depth++;
        for (size_t i = 0; i < e->nargs; i++) {
            if (isint[i]) {
                if (I->nivars == I->aivars) {
                    I->aivars = I->aivars ? 2 * I->aivars : 16;
                    I->ivars = flint_realloc(I->ivars, (size_t)I->aivars * sizeof(ivar_t));
                }
                I->ivars[I->nivars].name = f->params[i].str;
                I->ivars[I->nivars++].value = ints[i];
            } else {
                bind(I, f->params[i].str, f->params[i].loc, args[i], vids[i]);
                args[i] = NULL;
            }
        }
        pval_t *save_ret = I->ret;
        int *save_ret_vid = I->ret_vid;
        int save_nret = I->nret;
        I->ret = NULL;
        I->ret_vid = NULL;
        I->nret = 0;
        I->returned = 0;
        st = exec_block(I, &f->body);
        *rets = I->ret;
        *ret_vids = I->ret_vid;
        *nret = I->nret;
        I->ret = save_ret;
        I->ret_vid = save_ret_vid;
        I->nret = save_nret;
        I->returned = 0;
        I->depth--;
        pop_scope(I, save_scope);
        I->scope = save_scope;
        I->nivars = save_ivars;
    }
    for (size_t i = 0; i < e->nargs; i++)
        pval_free(args[i], I->nranks);
    flint_free(args);
    flint_free(vids);
    flint_free(ints);
    flint_free(isint);
    return st;
}

/* collectives: parse arguments, then run across ranks */
static sp_status_t call_collective(interp_t *I, const sp_ast_expr_t *e, pval_t *out)
{
    sp_check_t *C = I->C;
    const char *name = e->name;
    if (!I->is_plan) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "collective '%s' in a model (models run on one device)",
              name);
        return SP_ERR_INPUT;
    }
    pval_t x = NULL;
    int xv;
    sp_axes_t axes = {0, {0}};
    int have_axes = 0, have_op = 0;
    sp_red_t op = SP_RED_SUM;
    int64_t ints[4];
    int nints = 0;
    int64_t dim = 0, split = 0, concat = 0, root = 0;
    int have_dim = 0, have_split = 0, have_concat = 0, have_root = 0;
    /* send/recv: keyword axis = coordinate */
    int peer_axis = -1, npeer = 0;
    int peer_axes[SP_MAX_AXES];
    const sp_ast_expr_t *peer_exprs[SP_MAX_AXES];
    const sp_ast_expr_t *peer_expr = NULL;
    sp_status_t st = SP_OK;
    size_t first = 0;
    const sp_binding_t *pend = NULL;
    if (strcmp(name, "recv") != 0) {
        if (e->nargs == 0 || e->args[0].key.str) {
            errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs a tensor as its first argument", name);
            return SP_ERR_INPUT;
        }
        /* a pending max/min may be all-reduced with its own op over (at least) its axes */
        const sp_binding_t *pb = binding_of(I, e->args[0].value);
        if (pb && pb->pend) {
            pend = pb;
            I->pend_ok = !strcmp(name, "all_reduce");
        }
        st = eval(I, e->args[0].value, &x, &xv);
        I->pend_ok = 0;
        if (st != SP_OK)
            return st;
        first = 1;
    }
    for (size_t i = first; i < e->nargs && st == SP_OK; i++) {
        const sp_ast_arg_t *a = &e->args[i];
        const sp_ast_expr_t *v = a->value;
        const char *key = a->key.str;
        if (key && sp_mesh_axis(&C->mesh, key) >= 0 && (!strcmp(name, "send") || !strcmp(name, "recv"))) {
            peer_axis = sp_mesh_axis(&C->mesh, key);
            peer_expr = v;
            if (npeer < SP_MAX_AXES) {
                peer_axes[npeer] = peer_axis;
                peer_exprs[npeer++] = v;
            }
            continue;
        }
        if ((key && (!strcmp(key, "axis") || !strcmp(key, "group") || !strcmp(key, "axes"))) ||
            (!key && v->kind == SP_AST_NAME && sp_mesh_axis(&C->mesh, v->name) >= 0 &&
             !lookup(I, v->name)) ||
            (!key && v->kind == SP_AST_LIST && v->nargs > 0 && v->args[0].value->kind == SP_AST_NAME &&
             sp_mesh_axis(&C->mesh, v->args[0].value->name) >= 0)) {
            sp_ast_name_t nm[SP_MAX_AXES];
            size_t n = 0;
            if (v->kind == SP_AST_NAME) {
                nm[0].str = v->name;
                nm[0].loc = v->loc;
                n = 1;
            } else if (v->kind == SP_AST_LIST && v->nargs <= SP_MAX_AXES) {
                for (size_t k = 0; k < v->nargs; k++) {
                    if (v->args[k].value->kind != SP_AST_NAME) {
                        errat(I, SP_DIAG_LAYOUT, v->args[k].value->loc, "expected a mesh axis");
                        st = SP_ERR_INPUT;
                        break;
                    }
                    nm[k].str = v->args[k].value->name;
                    nm[k].loc = v->args[k].value->loc;
                }
                n = v->nargs;
            } else {
                errat(I, SP_DIAG_LAYOUT, v->loc, "expected a mesh axis or a list of axes");
                st = SP_ERR_INPUT;
            }
            uint8_t used[SP_MAX_AXES] = {0};
            if (st == SP_OK && !resolve_axes(I, nm, n, &axes, used))
                st = SP_ERR_INPUT;
            have_axes = 1;
            continue;
        }
        if ((key && !strcmp(key, "op")) || (!key && v->kind == SP_AST_NAME && sp_red_parse(v->name, &op))) {
            if (v->kind != SP_AST_NAME || !sp_red_parse(v->name, &op)) {
                errat(I, SP_DIAG_LAYOUT, v->loc, "unknown reduction (sum, avg, max, min)");
                st = SP_ERR_INPUT;
            }
            have_op = 1;
            continue;
        }
        if (!key && v->kind == SP_AST_NAME && !is_int_expr(I, v)) {
            errat(I, SP_DIAG_LAYOUT, v->loc, "'%s' is neither a mesh axis nor a reduction", v->name);
            st = SP_ERR_INPUT;
            continue;
        }
        int64_t val;
        /* a collective's dims and root are the same on every member */
        if (!eval_int(I, v, -1, &val)) {
            st = SP_ERR_INPUT;
            continue;
        }
        if (key) {
            if (!strcmp(key, "dim"))
                dim = val, have_dim = 1;
            else if (!strcmp(key, "split") || !strcmp(key, "split_dim"))
                split = val, have_split = 1;
            else if (!strcmp(key, "concat") || !strcmp(key, "concat_dim"))
                concat = val, have_concat = 1;
            else if (!strcmp(key, "root") || !strcmp(key, "src") || !strcmp(key, "dst"))
                root = val, have_root = 1;
            else {
                errat(I, SP_DIAG_LAYOUT, a->key.loc, "unknown argument '%s' of '%s'", key, name);
                st = SP_ERR_INPUT;
            }
        } else if (nints < 4) {
            ints[nints++] = val;
        }
    }
    if (st == SP_OK && pend && (!have_op || op != pend->pend_op || !have_axes ||
                                !axes_cover(&axes, &pend->pend_axes))) {
        pending_error(I, e->args[0].value->loc, pend, "reduced otherwise here");
        st = SP_ERR_INPUT;
    }
    if (st != SP_OK) {
        pval_free(x, I->nranks);
        return st;
    }
    /* positional integers fill the collective's integer parameters in order */
    int ki = 0;
    if (!strcmp(name, "all_gather") || !strcmp(name, "reduce_scatter")) {
        if (!have_dim && ki < nints)
            dim = ints[ki++], have_dim = 1;
    } else if (!strcmp(name, "all_to_all")) {
        if (!have_split && ki < nints)
            split = ints[ki++], have_split = 1;
        if (!have_concat && ki < nints)
            concat = ints[ki++], have_concat = 1;
    } else if (!strcmp(name, "broadcast") || !strcmp(name, "reduce")) {
        if (!have_root && ki < nints)
            root = ints[ki++], have_root = 1;
    }
    if (ki < nints) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "too many integer arguments for '%s'", name);
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    if (strcmp(name, "send") && strcmp(name, "recv") && !have_axes) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs the mesh axis (or axes) of its group", name);
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    if ((!strcmp(name, "all_gather") || !strcmp(name, "reduce_scatter")) && !have_dim) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs dim=", name);
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    if (!strcmp(name, "all_to_all") && !(have_split && have_concat)) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "'all_to_all' needs split= and concat=");
        pval_free(x, I->nranks);
        return SP_ERR_INPUT;
    }
    (void)have_op;
    sp_op_err_t err;
    err.msg[0] = 0;
    pval_t res = pval_new(I->nranks);
    int ok = 1;
    pval_t in = x;
    if (in) {
        /* inactive ranks do not participate */
        for (int64_t r = 0; r < I->nranks; r++)
            if (!I->active[r] && in[r].ndim >= 0) {
                sp_tensor_clear(&in[r]);
                in[r].ndim = -1;
            }
    }
    if (!strcmp(name, "all_reduce"))
        ok = sp_coll_all_reduce(C->E, &C->mesh, &axes, op, in, res, &err);
    else if (!strcmp(name, "all_gather"))
        ok = sp_coll_all_gather(C->E, &C->mesh, &axes, (int)dim, in, res, &err);
    else if (!strcmp(name, "reduce_scatter"))
        ok = sp_coll_reduce_scatter(C->E, &C->mesh, &axes, (int)dim, op, in, res, &err);
    else if (!strcmp(name, "all_to_all"))
        ok = sp_coll_all_to_all(C->E, &C->mesh, &axes, (int)split, (int)concat, in, res, &err);
    else if (!strcmp(name, "broadcast"))
        ok = sp_coll_broadcast(C->E, &C->mesh, &axes, root, in, res, &err);
    else if (!strcmp(name, "reduce"))
        ok = sp_coll_reduce(C->E, &C->mesh, &axes, op, root, in, res, &err);
    else if (!strcmp(name, "send") || !strcmp(name, "recv")) {
        if (peer_axis < 0) {
            errat(I, SP_DIAG_LAYOUT, e->loc, "'%s' needs the peer as AXIS = COORDINATE", name);
            pval_free(x, I->nranks);
            pval_free(res, I->nranks);
            return SP_ERR_INPUT;
        }
        for (int64_t r = 0; r < I->nranks && ok; r++) {
            if (!I->active[r])
                continue;
            int64_t peer = r;
            for (int q = 0; q < npeer; q++) {
                int64_t c;
                peer_axis = peer_axes[q];
                peer_expr = peer_exprs[q];
                if (!eval_int(I, peer_expr, r, &c)) {
                    pval_free(x, I->nranks);
                    pval_free(res, I->nranks);
                    return SP_ERR_INPUT;
                }
                if (c < 0 || c >= C->mesh.size[peer_axis]) {
                    char rs[128];
                    sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
                    errat(I, SP_DIAG_LAYOUT, peer_expr->loc,
                          "peer %s = %lld is outside the mesh (on rank %s)", C->mesh.name[peer_axis],
                          (long long)c, rs);
                    pval_free(x, I->nranks);
                    pval_free(res, I->nranks);
                    return SP_ERR_INPUT;
                }
                peer = sp_mesh_with_coord(&C->mesh, peer, peer_axis, c);
            }
            if (!strcmp(name, "send")) {
                if (I->nmsgs == I->amsgs) {
                    I->amsgs = I->amsgs ? 2 * I->amsgs : 16;
                    I->msgs = flint_realloc(I->msgs, (size_t)I->amsgs * sizeof(*I->msgs));
                }
                struct msg *m = &I->msgs[I->nmsgs++];
                m->src = r;
                m->dst = peer;
                m->used = 0;
                m->loc = e->loc;
                sp_tensor_init(&m->t);
                sp_tensor_copy(&m->t, &x[r]);
            } else {
                int found = 0;
                for (int k = 0; k < I->nmsgs && !found; k++) {
                    struct msg *m = &I->msgs[k];
                    if (!m->used && m->src == peer && m->dst == r) {
                        m->used = 1;
                        res[r] = m->t;
                        sp_tensor_init(&m->t);
                        found = 1;
                    }
                }
                if (!found) {
                    char rs[128], ps[128];
                    sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
                    sp_mesh_rank_str(&C->mesh, peer, ps, sizeof ps);
                    errat(I, SP_DIAG_LAYOUT, e->loc,
                          "recv on rank %s from rank %s has no matching send before it in plan order (a deadlock)", rs, ps);
                    pval_free(x, I->nranks);
                    pval_free(res, I->nranks);
                    return SP_ERR_INPUT;
                }
            }
        }
    }
    pval_free(x, I->nranks);
    if (!ok) {
        errat(I, SP_DIAG_LAYOUT, e->loc, "%s", err.msg);
        pval_free(res, I->nranks);
        return SP_ERR_INPUT;
    }
    *out = res;
    return SP_OK;
}

/* The closest operator or collective name within distance 2, for "did you mean". */
static const char *suggest(const char *name)
{
    const char *best = NULL;
    size_t bestd = 3;
    const char *const *lists[2] = {sp_ops_names(), collectives};
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l][i]; i++) {
            size_t d = sp_edit_distance(name, lists[l][i]);
            if (d < bestd) {
                bestd = d;
                best = lists[l][i];
            }
        }
    return best;
}

/* ---- replicas: ranks that apply an operator to the same arguments ------------------------ */

/* Do ranks a and b hold the same tensors (same shapes, same expression nodes) in in[0..n)? */
static int same_tensors(pval_t *in, int n, int64_t a, int64_t b)
{
    for (int k = 0; k < n; k++) {
        const sp_tensor_t *x = &in[k][a], *y = &in[k][b];
        if (x->ndim != y->ndim || x->ndim < 0 ||
            memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)) != 0)
            return 0;
        int64_t ne = sp_tensor_numel(x);
        if (ne > 0 && memcmp(x->v, y->v, (size_t)ne * sizeof(sp_expr_t)) != 0)
            return 0;
    }
    return 1;
}

static int same_attr(const sp_attr_t *a, const sp_attr_t *b)
{
    if (a->kind != b->kind || a->key != b->key || !fmpq_equal(a->num, b->num) ||
        a->nlist != b->nlist || (a->name == NULL) != (b->name == NULL) ||
        (a->name && strcmp(a->name, b->name) != 0))
        return 0;
    return a->nlist == 0 || memcmp(a->list, b->list, (size_t)a->nlist * sizeof(int64_t)) == 0;
}

static void attr_set(sp_attr_t *dst, const sp_attr_t *src)
{
    dst->key = src->key;
    dst->kind = src->kind;
    fmpq_set(dst->num, src->num);
    dst->name = src->name;
    flint_free(dst->list);
    dst->list = NULL;
    dst->nlist = src->nlist;
    if (src->nlist > 0) {
        dst->list = flint_malloc((size_t)src->nlist * sizeof(int64_t));
        memcpy(dst->list, src->list, (size_t)src->nlist * sizeof(int64_t));
    }
}

static sp_status_t call_op(interp_t *I, const sp_ast_expr_t *e, pval_t *out, int *vid)
{
    sp_check_t *C = I->C;
    const char *name = e->name;
    if (!sp_ops_known(name)) {
        const char *s = suggest(name);
        if (s)
            errat(I, SP_DIAG_NAME, e->loc, "unknown operator '%s' (did you mean '%s'?)", name, s);
        else
            errat(I, SP_DIAG_NAME, e->loc, "unknown operator '%s'", name);
        return SP_ERR_INPUT;
    }
    size_t n = e->nargs;
    pval_t *tin = flint_calloc(n ? n : 1, sizeof(pval_t));
    int *tvid = flint_calloc(n ? n : 1, sizeof(int));
    const sp_ast_arg_t **attr_args = flint_calloc(n ? n : 1, sizeof(*attr_args));
    int nt = 0, na = 0;
    sp_status_t st = SP_OK;
    for (size_t i = 0; i < n && st == SP_OK; i++) {
        if (arg_is_tensor(I, name, &e->args[i], i)) {
            const sp_ast_expr_t *v = e->args[i].value;
            if (v->kind == SP_AST_NUM || (v->kind == SP_AST_NEG && v->a->kind == SP_AST_NUM) ||
                is_int_expr(I, v)) {
                st = int_pval(I, v, &tin[nt]);
                tvid[nt] = I->is_plan || st != SP_OK ? -1 : tv_add(I, &tin[nt][0]);
            } else {
                st = eval(I, v, &tin[nt], &tvid[nt]);
                if (st == SP_OK && !I->is_plan && tvid[nt] < 0)
                    tvid[nt] = tv_add(I, &tin[nt][0]);
            }
            nt++;
        } else {
            attr_args[na++] = &e->args[i];
        }
    }
    pval_t res = NULL;
    if (st == SP_OK) {
        res = pval_new(I->nranks);
        sp_tensor_t *ins = flint_malloc((size_t)(nt ? nt : 1) * sizeof(sp_tensor_t));
        sp_attr_t *attrs = flint_calloc((size_t)(na ? na : 1), sizeof(sp_attr_t));
        /* the previous active rank's attributes: a rank whose arguments equal its predecessor's
           (tensor-parallel replicas of replicated computation) copies the result, since an
           operator is a function of its arguments in the hash-consed store */
        sp_attr_t *pattrs = flint_calloc((size_t)(na ? na : 1), sizeof(sp_attr_t));
        for (int k = 0; k < na; k++) {
            fmpq_init(pattrs[k].num);
            fmpq_init(attrs[k].num);
        }
        int64_t prev = -1;
        for (int64_t r = 0; r < I->nranks && st == SP_OK; r++) {
            if (!I->active[r])
                continue;
            int ok = 1;
            for (int k = 0; k < nt; k++) {
                ins[k] = tin[k][r];
                if (ins[k].ndim < 0) {
                    char rs[128];
                    sp_mesh_rank_str(&C->mesh, r, rs, sizeof rs);
                    errat(I, SP_DIAG_NAME, e->args[0].value->loc,
                          "an argument of '%s' has no value on rank %s", name, rs);
                    st = SP_ERR_INPUT;
                    ok = 0;
                    break;
                }
            }
            int built = 0;
            for (int k = 0; k < na && ok; k++) {
                if (!make_attr(I, attr_args[k], r, &attrs[k])) {
                    st = SP_ERR_INPUT;
                    ok = 0;
                }
                built = k + 1;
            }
            int reuse = ok && prev >= 0 && same_tensors(tin, nt, prev, r);
            for (int k = 0; k < na && reuse; k++)
                reuse = same_attr(&attrs[k], &pattrs[k]);
            if (reuse) {
                sp_tensor_copy(&res[r], &res[prev]);
            } else if (ok) {
                sp_op_err_t err;
                err.msg[0] = 0;
                if (!sp_ops_apply(C->E, name, ins, nt, attrs, na, C->opt.max_elements, &res[r],
                                  &err)) {
                    /* an unknown attribute: at its keyword */
                    sp_loc_t at = err.attr >= 0 && err.attr < na && attr_args[err.attr]->key.str
                                      ? attr_args[err.attr]->key.loc
                                      : e->loc;
                    errat(I, SP_DIAG_SHAPE, at, "%s", err.msg[0] ? err.msg : "bad operator use");
                    st = SP_ERR_INPUT;
                } else if (!I->is_plan && r == 0) {
                    *vid = tv_add(I, &res[r]);
                    tape_add(I, name, attrs, na, tvid, nt, *vid);
                }
            }
            if (ok && st == SP_OK) {
                prev = r;
                for (int k = 0; k < na; k++)
                    attr_set(&pattrs[k], &attrs[k]);
            }
            for (int k = 0; k < built; k++) {
                fmpq_clear(attrs[k].num);
                flint_free(attrs[k].list);
                memset(&attrs[k], 0, sizeof attrs[k]);
                fmpq_init(attrs[k].num);
            }
        }
        for (int k = 0; k < na; k++) {
            fmpq_clear(attrs[k].num);
            fmpq_clear(pattrs[k].num);
            flint_free(pattrs[k].list);
        }
        flint_free(ins);
        flint_free(attrs);
        flint_free(pattrs);
    }
    for (int k = 0; k < nt; k++)
        pval_free(tin[k], I->nranks);
    flint_free(tin);
    flint_free(tvid);
    flint_free(attr_args);
    if (st != SP_OK) {
        pval_free(res, I->nranks);
        return st;
    }
    *out = res;
    return SP_OK;
}

/* ---- expressions -------------------------------------------------------------------------- */

static const char *binop_op(sp_ast_binop_t op)
{
    static const char *const n[] = {"add", "sub", "mul", "div", NULL, "pow", "lt", "le", "gt",
                                    "ge", "eq", "ne"};
    return n[op];
}

/* apply an operator to evaluated tensors (used for infix arithmetic) */
static sp_status_t apply_simple(interp_t *I, sp_loc_t loc, const char *op, pval_t *ins, int *vids,
                                int nin, const sp_attr_t *attrs, int nattr, pval_t *out, int *vid)
{
    pval_t res = pval_new(I->nranks);
    sp_tensor_t tmp[3];
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r])
            continue;
        for (int k = 0; k < nin; k++) {
            tmp[k] = ins[k][r];
            if (tmp[k].ndim < 0) {
                errat(I, SP_DIAG_NAME, loc, "an operand of '%s' has no value on this rank", op);
                pval_free(res, I->nranks);
                return SP_ERR_INPUT;
            }
        }
        sp_op_err_t err;
        err.msg[0] = 0;
        if (!sp_ops_apply(I->C->E, op, tmp, nin, attrs, nattr, I->C->opt.max_elements, &res[r], &err)) {
            errat(I, SP_DIAG_SHAPE, loc, "%s", err.msg);
            pval_free(res, I->nranks);
            return SP_ERR_INPUT;
        }
        if (!I->is_plan && r == 0) {
            int v2[3];
            for (int k = 0; k < nin; k++)
                v2[k] = vids[k] >= 0 ? vids[k] : tv_add(I, &ins[k][0]);
            *vid = tv_add(I, &res[r]);
            tape_add(I, op, attrs, nattr, v2, nin, *vid);
        }
    }
    *out = res;
    return SP_OK;
}

static sp_status_t eval(interp_t *I, const sp_ast_expr_t *e, pval_t *out, int *vid)
{
    *vid = -1;
    *out = NULL;
    switch (e->kind) {
    case SP_AST_NUM:
        *out = const_pval(I, e->value);
        return SP_OK;
    case SP_AST_NAME: {
        sp_binding_t *b = lookup(I, e->name);
        if (b == NULL) {
            if (is_int_expr(I, e))
                return int_pval(I, e, out);
            errat(I, SP_DIAG_NAME, e->loc, "unknown name '%s'", e->name);
            return SP_ERR_INPUT;
        }
        if (b->pend && !I->pend_ok) {
            pending_error(I, e->loc, b, "used here");
            return SP_ERR_INPUT;
        }
        I->pend_ok = 0;
        *out = pval_dup(b->t, I->nranks);
        if (!I->is_plan)
            *vid = I->vid_of_binding[b - *I->vals];
        return SP_OK;
    }
    case SP_AST_INDEX: {
        char nm[512];
        if (!target_name(I, e, nm, sizeof nm))
            return SP_ERR_INPUT;
        sp_binding_t *b = lookup(I, nm);
        if (b == NULL) {
            errat(I, SP_DIAG_NAME, e->loc, "unknown name '%s'", nm);
            return SP_ERR_INPUT;
        }
        if (b->pend && !I->pend_ok) {
            pending_error(I, e->loc, b, "used here");
            return SP_ERR_INPUT;
        }
        I->pend_ok = 0;
        *out = pval_dup(b->t, I->nranks);
        if (!I->is_plan)
            *vid = I->vid_of_binding[b - *I->vals];
        return SP_OK;
    }
    case SP_AST_NEG: {
        pval_t a;
        int av;
        sp_status_t st = eval(I, e->a, &a, &av);
        if (st != SP_OK)
            return st;
        st = apply_simple(I, e->loc, "neg", &a, &av, 1, NULL, 0, out, vid);
        pval_free(a, I->nranks);
        return st;
    }
    case SP_AST_BINOP: {
        if (e->op == SP_BIN_MOD) {
            errat(I, SP_DIAG_SHAPE, e->loc, "'%%' applies to integers only");
            return SP_ERR_INPUT;
        }
        if (is_int_expr(I, e) && e->op <= SP_BIN_POW)
            return int_pval(I, e, out);
        pval_t a, b = NULL;
        int av, bv = -1;
        sp_status_t st = eval(I, e->a, &a, &av);
        if (st != SP_OK)
            return st;
        if (e->op == SP_BIN_POW) {
            if (!is_int_expr(I, e->b)) {
                errat(I, SP_DIAG_SHAPE, e->b->loc, "exponent must be an integer");
                pval_free(a, I->nranks);
                return SP_ERR_INPUT;
            }
            /* the exponent may differ between ranks (rank.tp): apply it rank by rank */
            uint8_t *save = flint_malloc((size_t)I->nranks);
            memcpy(save, I->active, (size_t)I->nranks);
            pval_t res = pval_new(I->nranks);
            st = SP_OK;
            for (int64_t r = 0; r < I->nranks && st == SP_OK; r++) {
                if (!save[r])
                    continue;
                int64_t k;
                if (!eval_int(I, e->b, r, &k)) {
                    st = SP_ERR_INPUT;
                    break;
                }
                sp_attr_t at;
                memset(&at, 0, sizeof at);
                fmpq_init(at.num);
                fmpq_set_si(at.num, k, 1);
                at.kind = SP_ATTR_NUM;
                memset(I->active, 0, (size_t)I->nranks);
                I->active[r] = 1;
                pval_t one = NULL;
                int ov = -1;
                st = apply_simple(I, e->loc, "pow", &a, &av, 1, &at, 1, &one, &ov);
                fmpq_clear(at.num);
                if (st == SP_OK) {
                    res[r] = one[r];
                    sp_tensor_init(&one[r]);
                    one[r].ndim = -1;
                    if (r == 0)
                        *vid = ov;
                }
                pval_free(one, I->nranks);
            }
            memcpy(I->active, save, (size_t)I->nranks);
            flint_free(save);
            pval_free(a, I->nranks);
            if (st != SP_OK) {
                pval_free(res, I->nranks);
                return st;
            }
            *out = res;
            return SP_OK;
        }
        st = eval(I, e->b, &b, &bv);
        if (st == SP_OK) {
            pval_t ins[2] = {a, b};
            int vids[2] = {av, bv};
            st = apply_simple(I, e->loc, binop_op(e->op), ins, vids, 2, NULL, 0, out, vid);
        }
        pval_free(a, I->nranks);
        pval_free(b, I->nranks);
        return st;
    }
    case SP_AST_CALL: {
        const sp_ast_stmt_t *f = find_func(I->C, e->name);
        if (f) {
            pval_t *rets = NULL;
            int *rvids = NULL;
            int nret = 0;
            sp_status_t st = call_func(I, e, f, &rets, &rvids, &nret);
            if (st != SP_OK) {
                for (int k = 0; k < nret; k++)
                    pval_free(rets[k], I->nranks);
                flint_free(rets);
                flint_free(rvids);
                return st;
            }
            if (nret != 1) {
                errat(I, SP_DIAG_NAME, e->loc, "'%s' returns %d values where one is needed",
                      e->name, nret);
                for (int k = 0; k < nret; k++)
                    pval_free(rets[k], I->nranks);
                flint_free(rets);
                flint_free(rvids);
                return SP_ERR_INPUT;
            }
            *out = rets[0];
            *vid = rvids[0];
            flint_free(rets);
            flint_free(rvids);
            return SP_OK;
        }
        if (sp_exec_is_collective(e->name))
            return call_collective(I, e, out);
        return call_op(I, e, out, vid);
    }
    default:
        errat(I, SP_DIAG_SHAPE, e->loc, "a %s is not a tensor expression",
              sp_ast_expr_kind_name(e->kind));
        return SP_ERR_INPUT;
    }
}

/* ---- statements --------------------------------------------------------------------------- */

static sp_status_t decl_input(interp_t *I, const sp_ast_stmt_t *s)
{
    /* model: input/param NAME[count] : shape -> fresh symbols named NAME[i,j] */
    sp_layout_t L;
    if (!resolve_layout(I, s->layout, &L))
        return SP_ERR_INPUT;
    int64_t n = 1;
    int64_t cnt[4] = {1, 1, 1, 1};
    if (s->ncount > 4) {
        errat(I, SP_DIAG_SHAPE, s->loc, "at most 4 array extents");
        sp_layout_clear(&L);
        return SP_ERR_INPUT;
    }
    for (size_t k = 0; k < s->ncount; k++) {
        if (!eval_int(I, s->count[k], -1, &cnt[k]) || cnt[k] < 1 || cnt[k] > 100000) {
            errat(I, SP_DIAG_SHAPE, s->count[k]->loc, "array extent must be between 1 and 100000");
            sp_layout_clear(&L);
            return SP_ERR_INPUT;
        }
        n *= cnt[k];
    }
    int64_t numel = 1;
    for (int d = 0; d < L.ndim; d++)
        numel *= L.size[d];
    if (I->C->opt.max_elements && numel > I->C->opt.max_elements) {
        errat(I, SP_DIAG_LIMIT, s->layout->loc,
              "tensor of %lld elements after shape reduction exceeds the limit %lld (--max-elements)",
              (long long)numel, (long long)I->C->opt.max_elements);
        sp_layout_clear(&L);
        return SP_ERR_INPUT;
    }
    for (int64_t i = 0; i < n; i++) {
        char nm[512];
        if (s->ncount == 0) {
            snprintf(nm, sizeof nm, "%s", s->name.str);
        } else {
            size_t k = (size_t)snprintf(nm, sizeof nm, "%s[", s->name.str);
            int64_t rem = i;
            int64_t idx[4];
            for (int d = (int)s->ncount - 1; d >= 0; d--) {
                idx[d] = rem % cnt[d];
                rem /= cnt[d];
            }
            for (size_t d = 0; d < s->ncount; d++)
                k += (size_t)snprintf(nm + k, sizeof nm - k, "%s%lld", d ? "," : "", (long long)idx[d]);
            snprintf(nm + k, sizeof nm - k, "]");
        }
        if (lookup(I, nm)) {
            errat(I, SP_DIAG_NAME, s->name.loc, "'%s' is already defined", nm);
            sp_layout_clear(&L);
            return SP_ERR_INPUT;
        }
        pval_t v = pval_new(1);
        sp_tensor_alloc(&v[0], L.ndim, L.size);
        sp_tensor_symbols(I->C->E, &v[0], nm);
        int vid = tv_add(I, &v[0]);
        bind(I, nm, s->name.loc, v, vid);
    }
    sp_layout_clear(&L);
    return SP_OK;
}

/* plan: x : layout  (a model input or param, distributed) */
static sp_status_t plan_layout_decl(interp_t *I, const sp_ast_stmt_t *s)
{
    char nm[512];
    if (!target_name(I, s->targets[0], nm, sizeof nm))
        return SP_ERR_INPUT;
    const sp_binding_t *mb = sp_model_value(I->C, nm);
    if (mb == NULL) {
        errat(I, SP_DIAG_LINEAGE, s->targets[0]->loc,
              "'%s' is not a model input or parameter (lineage to a missing model tensor)", nm);
        return SP_ERR_INPUT;
    }
    sp_layout_t L;
    if (!resolve_layout(I, s->layout, &L))
        return SP_ERR_INPUT;
    const sp_tensor_t *mt = &mb->t[0];
    int same = L.ndim == mt->ndim;
    for (int d = 0; d < L.ndim && same; d++)
        same = L.size[d] == mt->shape[d];
    if (!same) {
        char a[128], b[128];
        shape_str(L.size, L.ndim, a, sizeof a);
        shape_str(mt->shape, mt->ndim, b, sizeof b);
        errat(I, SP_DIAG_SHAPE, s->layout->loc,
              "layout shape %s does not match model tensor '%s' of shape %s", a, nm, b);
        sp_layout_clear(&L);
        return SP_ERR_INPUT;
    }
    pval_t v = distribute(I, &L, mt, nm);
    bind(I, nm, s->targets[0]->loc, v, -1);
    mark_pending(I, nm, &L);
    sp_layout_clear(&L);
    return SP_OK;
}

/* ---- lineage inference (--infer-lineage) --------------------------------------------------- */

/*
 * In the first plan pass, an assignment without lineage is matched against the model: its value
 * on every active rank is fingerprinted (rule-respecting fingerprints modulo a prime, so equal
 * normal forms agree), and compared with every model tensor under every layout that shards each
 * dim over at most one mesh axis, with or without one pending sum.  A unique match becomes a cut
 * point for the second pass, exactly as if the plan had written `~ T : L`; the stage then
 * proves it exactly, so a wrong guess costs a failed or unknown stage, never a wrong verdict.
 */
static int fp_tensor(sp_check_t *C, const sp_tensor_t *t, uint64_t *out)
{
    int64_t n = sp_tensor_numel(t);
    return n == 0 || sp_fingerprint_nf(C->S, t->v, n, C->opt.seed ^ UINT64_C(0xf1f1), out);
}

static int const_tensor(const sp_check_t *C, const sp_tensor_t *t)
{
    for (int64_t i = 0; i < sp_tensor_numel(t); i++)
        if (C->E->nodes[t->v[i]].op != SP_OP_CONST)
            return 0;
    return 1;
}

static void record_inferred(sp_check_t *C, const sp_ast_stmt_t *s, int occ, const char *name,
                            const sp_layout_t *L)
{
    C->inferred = flint_realloc(C->inferred, (size_t)(C->ninferred + 1) * sizeof(*C->inferred));
    sp_inferred_t *x = &C->inferred[C->ninferred++];
    x->stmt = s;
    x->occ = occ;
    x->model_name = sp_strdup(name);
    sp_layout_init(&x->layout);
    sp_layout_copy(&x->layout, L);
}

static void infer_lineage(interp_t *I, const sp_ast_stmt_t *s, int occ, const char *pname,
                          const sp_tensor_t *val)
{
    sp_check_t *C = I->C;
    const sp_mesh_t *m = &C->mesh;
    int64_t nr = I->nranks;
    uint64_t **pfp = flint_calloc((size_t)nr, sizeof(uint64_t *));
    int ok = 1, nd = -1;
    for (int64_t r = 0; r < nr && ok; r++) {
        if (!I->active[r] || val[r].ndim < 0)
            continue;
        if (const_tensor(C, &val[r]))
            ok = 0;
        nd = val[r].ndim;
        pfp[r] = flint_malloc((size_t)(sp_tensor_numel(&val[r]) + 1) * sizeof(uint64_t));
        ok = ok && fp_tensor(C, &val[r], pfp[r]);
    }
    const char *best = NULL;
    sp_layout_t bestL;
    sp_layout_init(&bestL);
    int nmatch = 0;
    for (int t = 0; t < C->nmvals && ok && nd >= 0; t++) {
        const sp_binding_t *mb = &C->mvals[t];
        const sp_tensor_t *mt = &mb->t[0];
        if (mt->ndim != nd || is_param_or_input(C, mb->name) || strncmp(mb->name, "next.", 5) == 0)
            continue;
        int64_t mn = sp_tensor_numel(mt);
        uint64_t *mfp = flint_malloc((size_t)(mn + 1) * sizeof(uint64_t));
        if (!fp_tensor(C, mt, mfp)) {
            flint_free(mfp);
            continue;
        }
        /* layouts: each dim on one axis or none (mixed radix over naxes+1), then partial */
        int64_t combos = 1;
        for (int d = 0; d < nd; d++)
            combos *= m->naxes + 1;
        for (int64_t cmb = 0; cmb < combos && nmatch < 2; cmb++) {
            for (int pa = -1; pa < m->naxes && nmatch < 2; pa++) {
                sp_layout_t L;
                sp_layout_init(&L);
                L.ndim = nd;
                int64_t c = cmb;
                uint8_t used[SP_MAX_AXES] = {0};
                int bad = 0;
                for (int d = 0; d < nd; d++) {
                    L.size[d] = mt->shape[d];
                    int ax = (int)(c % (m->naxes + 1)) - 1;
                    c /= m->naxes + 1;
                    if (ax >= 0) {
                        if (used[ax] || m->size[ax] == 1)
                            bad = 1;
                        used[ax] = 1;
                        L.axes[d].n = 1;
                        L.axes[d].axis[0] = ax;
                    }
                }
                if (pa >= 0) {
                    if (used[pa] || m->size[pa] == 1)
                        bad = 1;
                    L.npartial = 1;
                    L.pop[0] = SP_RED_SUM;
                    L.paxes[0].n = 1;
                    L.paxes[0].axis[0] = pa;
                }
                for (int64_t r = 0; r < nr && !bad; r++) {
                    if (!pfp[r])
                        continue;
                    int64_t ls[SP_MAX_DIMS];
                    sp_layout_local_shape(m, &L, r, ls);
                    for (int d = 0; d < nd && !bad; d++)
                        bad = ls[d] != val[r].shape[d];
                }
                /* compare element fingerprints (a partial sum: the group's sum) */
                nmod_t mod;
                nmod_init(&mod, SP_FP_PRIME);
                for (int64_t r = 0; r < nr && !bad; r++) {
                    if (!pfp[r])
                        continue;
                    if (pa >= 0 && sp_axes_index(m, &L.paxes[0], r) != 0)
                        continue;
                    int64_t ls[SP_MAX_DIMS], off[SP_MAX_DIMS];
                    for (int d = 0; d < nd; d++) {
                        int64_t st, en;
                        sp_layout_range(m, &L, d, r, &st, &en);
                        off[d] = st;
                        ls[d] = en - st;
                    }
                    int64_t n = sp_tensor_numel(&val[r]);
                    for (int64_t i = 0; i < n && !bad; i++) {
                        int64_t rem = i, pos = 0, stride = 1;
                        for (int d = nd - 1; d >= 0; d--) {
                            int64_t ix = rem % ls[d];
                            rem /= ls[d];
                            pos += (ix + off[d]) * stride;
                            stride *= mt->shape[d];
                        }
                        uint64_t v = pfp[r][i];
                        if (pa >= 0) {
                            v = 0;
                            for (int64_t k = 0; k < m->size[pa]; k++) {
                                int64_t q = sp_axes_member(m, &L.paxes[0], r, k);
                                if (!pfp[q]) {
                                    bad = 1;
                                    break;
                                }
                                v = nmod_add(v, pfp[q][i], mod);
                            }
                        }
                        bad = bad || v != mfp[pos];
                    }
                }
                if (!bad) {
                    if (best == NULL || (strcmp(mb->name, pname) == 0 && strcmp(best, pname) != 0)) {
                        best = mb->name;
                        sp_layout_clear(&bestL);
                        sp_layout_copy(&bestL, &L);
                    }
                    nmatch++;
                    sp_layout_clear(&L);
                    break; /* the first layout that fits this tensor */
                }
                sp_layout_clear(&L);
            }
        }
        flint_free(mfp);
    }
    if (ok && best) {
        record_inferred(C, s, occ, best, &bestL);
        add_cut(C, best);
    }
    sp_layout_clear(&bestL);
    for (int64_t r = 0; r < nr; r++)
        flint_free(pfp[r]);
    flint_free(pfp);
}

static const sp_inferred_t *find_inferred(const sp_check_t *C, const sp_ast_stmt_t *s, int occ)
{
    for (int i = 0; i < C->ninferred; i++)
        if (C->inferred[i].stmt == s && C->inferred[i].occ == occ)
            return &C->inferred[i];
    return NULL;
}

static sp_status_t exec_assign(interp_t *I, const sp_ast_stmt_t *s)
{
    sp_status_t st;
    if (s->ntargets > 1 || (s->value->kind == SP_AST_CALL && find_func(I->C, s->value->name) &&
                            s->ntargets != 1)) {
        const sp_ast_stmt_t *f = s->value->kind == SP_AST_CALL ? find_func(I->C, s->value->name) : NULL;
        if (f == NULL) {
            errat(I, SP_DIAG_NAME, s->loc, "several targets need a function call on the right");
            return SP_ERR_INPUT;
        }
        pval_t *rets = NULL;
        int *rvids = NULL;
        int nret = 0;
        st = call_func(I, s->value, f, &rets, &rvids, &nret);
        if (st == SP_OK && (size_t)nret != s->ntargets) {
            errat(I, SP_DIAG_NAME, s->loc, "'%s' returns %d values, %zu targets", f->name.str, nret,
                  s->ntargets);
            st = SP_ERR_INPUT;
        }
        for (int k = 0; k < nret; k++) {
            char nm[512];
            if (st == SP_OK && target_name(I, s->targets[k], nm, sizeof nm)) {
                bind(I, nm, s->targets[k]->loc, rets[k], rvids[k]);
            } else {
                pval_free(rets[k], I->nranks);
            }
        }
        flint_free(rets);
        flint_free(rvids);
        return st;
    }
    char nm[512];
    if (!target_name(I, s->targets[0], nm, sizeof nm))
        return SP_ERR_INPUT;
    pval_t v;
    int vid;
    /* a plain alias may rename a pending max/min (the new name holds it too) */
    const sp_binding_t *src = s->kind == SP_STMT_ASSIGN ? binding_of(I, s->value) : NULL;
    int src_pend = src && src->pend;
    sp_red_t src_op = src_pend ? src->pend_op : SP_RED_SUM;
    sp_axes_t src_axes = src_pend ? src->pend_axes : (sp_axes_t){0, {0}};
    I->pend_ok = src_pend;
    st = eval(I, s->value, &v, &vid);
    I->pend_ok = 0;
    if (st != SP_OK)
        return st;
    if (s->kind == SP_STMT_ACCUM) {
        sp_binding_t *b = lookup(I, nm);
        if (b) {
            pval_t ins[2] = {pval_dup(b->t, I->nranks), v};
            int vids[2] = {I->is_plan ? -1 : I->vid_of_binding[b - *I->vals], vid};
            pval_t sum;
            int sv;
            /* ranks where the accumulator is still empty just take the value */
            pval_t res = pval_new(I->nranks);
            int64_t nr = I->nranks;
            uint8_t *save = flint_malloc((size_t)nr);
            memcpy(save, I->active, (size_t)nr);
            for (int64_t r = 0; r < nr; r++)
                if (I->active[r] && ins[0][r].ndim < 0) {
                    I->active[r] = 0;
                    sp_tensor_copy(&res[r], &v[r]);
                }
            st = apply_simple(I, s->loc, "add", ins, vids, 2, NULL, 0, &sum, &sv);
            memcpy(I->active, save, (size_t)nr);
            flint_free(save);
            if (st == SP_OK) {
                for (int64_t r = 0; r < nr; r++)
                    if (sum[r].ndim >= 0) {
                        sp_tensor_clear(&res[r]);
                        res[r] = sum[r];
                        sp_tensor_init(&sum[r]);
                        sum[r].ndim = -1;
                    }
                pval_free(sum, nr);
            }
            pval_free(ins[0], nr);
            pval_free(v, nr);
            if (st != SP_OK) {
                pval_free(res, nr);
                return st;
            }
            v = res;
            vid = sv;
        }
    } else if (!I->is_plan) {
        sp_binding_t *b = lookup(I, nm);
        if (b && b->scope == I->scope) {
            errat(I, SP_DIAG_NAME, s->targets[0]->loc,
                  "'%s' is assigned twice (a model is single assignment)", nm);
            pval_free(v, I->nranks);
            return SP_ERR_INPUT;
        }
    }
    int occ = 0;
    if (I->is_plan && !s->lineage && I->C->opt.infer) {
        /* occurrence number of this statement (loops run it several times) */
        for (int k = 0; k < I->nocc; k++)
            if (I->occ_stmt[k] == s)
                occ = ++I->occ_n[k];
        if (occ == 0) {
            I->occ_stmt = flint_realloc(I->occ_stmt, (size_t)(I->nocc + 1) * sizeof(*I->occ_stmt));
            I->occ_n = flint_realloc(I->occ_n, (size_t)(I->nocc + 1) * sizeof(int));
            I->occ_stmt[I->nocc] = s;
            I->occ_n[I->nocc++] = 0;
        }
        if (I->C->collect_only) {
            infer_lineage(I, s, occ, nm, v);
        } else {
            const sp_inferred_t *inf = find_inferred(I->C, s, occ);
            if (inf) {
                st = relate_l(I, SP_STAGE_LINEAGE, nm, s->targets[0]->loc, inf->model_name,
                              s->targets[0]->loc, NULL, &inf->layout, NULL, &v);
                if (st != SP_OK) {
                    pval_free(v, I->nranks);
                    return st;
                }
            }
        }
    }
    if (s->lineage && I->is_plan) {
        char mn[512];
        if (!target_name(I, s->lineage->target, mn, sizeof mn)) {
            pval_free(v, I->nranks);
            return SP_ERR_INPUT;
        }
        st = relate_l(I, SP_STAGE_LINEAGE, nm, s->targets[0]->loc, mn, s->lineage->target->loc,
                      s->lineage->layout, NULL, s->lineage->rows, &v);
        if (st != SP_OK) {
            pval_free(v, I->nranks);
            return st;
        }
    } else if (s->lineage) {
        errat(I, SP_DIAG_LINEAGE, s->lineage->loc, "lineage annotations belong in plans");
        pval_free(v, I->nranks);
        return SP_ERR_INPUT;
    }
    if (!I->is_plan && vid < 0)
        vid = tv_add(I, &v[0]);
    bind(I, nm, s->targets[0]->loc, v, vid);
    if (I->is_plan) {
        sp_binding_t *nb = lookup(I, nm);
        sp_layout_t L;
        if (s->lineage && resolve_layout(I, s->lineage->layout, &L)) {
            /* a cut continues from the decomposition its layout states */
            nb->pend = layout_pending(&L, &nb->pend_op, &nb->pend_axes);
            sp_layout_clear(&L);
        } else if (src_pend) {
            nb->pend = 1;
            nb->pend_op = src_op;
            nb->pend_axes = src_axes;
        }
    }
    /* model: a cut point continues from fresh symbols */
    if (!I->is_plan && is_cut(I->C, nm)) {
        sp_check_t *C = I->C;
        sp_binding_t *b = lookup(I, nm);
        if (C->nmorig == C->amorig) {
            C->amorig = C->amorig ? 2 * C->amorig : 16;
            C->morig = flint_realloc(C->morig, (size_t)C->amorig * sizeof(sp_binding_t));
        }
        sp_binding_t *o = &C->morig[C->nmorig++];
        o->name = sp_strdup(nm);
        o->loc = b->loc;
        o->scope = 0;
        o->rloc = NULL;
        o->t = pval_dup(b->t, 1);
        sp_tensor_t f;
        sp_tensor_init(&f);
        fresh_tensor(C, nm, b->t[0].shape, b->t[0].ndim, &f);
        sp_tensor_clear(&b->t[0]);
        b->t[0] = f;
        int fv = tv_add(I, &f);
        /* the tape keeps the original producer; later uses see the fresh value, and the
           backward pass hands the fresh value's adjoint to the original */
        int ov = I->vid_of_binding[b - *I->vals];
        I->vid_of_binding[b - *I->vals] = fv;
        I->alias = flint_realloc(I->alias, (size_t)(I->nalias + 1) * sizeof(*I->alias));
        I->alias[I->nalias][0] = fv;
        I->alias[I->nalias][1] = ov;
        I->nalias++;
    }
    return SP_OK;
}

static sp_status_t exec_output(interp_t *I, const sp_ast_stmt_t *s)
{
    sp_check_t *C = I->C;
    for (size_t k = 0; k < s->noutputs; k++) {
        const sp_ast_output_t *o = &s->outputs[k];
        char mn[512];
        if (!target_name(I, o->target, mn, sizeof mn))
            return SP_ERR_INPUT;
        if (!I->is_plan) {
            if (o->value || o->layout) {
                errat(I, SP_DIAG_LAYOUT, o->target->loc, "a model output is just a name");
                return SP_ERR_INPUT;
            }
            if (!lookup(I, mn)) {
                errat(I, SP_DIAG_NAME, o->target->loc, "unknown name '%s'", mn);
                return SP_ERR_INPUT;
            }
            C->outputs = flint_realloc(C->outputs, (size_t)(C->noutputs + 1) * sizeof(char *));
            C->outputs[C->noutputs++] = sp_strdup(mn);
            continue;
        }
        pval_t v;
        int vid;
        char pn[512];
        I->outputs_seen++;
        snprintf(pn, sizeof pn, "%s", mn);
        sp_status_t st;
        /* a pending max/min may be related under a layout with the same pending entry */
        const sp_binding_t *vb = o->value ? binding_of(I, o->value) : lookup(I, mn);
        I->pend_ok = vb && vb->pend;
        if (o->value) {
            st = eval(I, o->value, &v, &vid);
            if (o->value->kind == SP_AST_NAME)
                snprintf(pn, sizeof pn, "%s", o->value->name);
        } else {
            sp_ast_expr_t tmp = *o->target;
            st = eval(I, &tmp, &v, &vid);
        }
        I->pend_ok = 0;
        if (st != SP_OK)
            return st;
        if (vb && vb->pend) {
            sp_layout_t OL;
            sp_red_t oop;
            sp_axes_t oax;
            int same = 0;
            if (o->layout && resolve_layout(I, o->layout, &OL)) {
                same = layout_pending(&OL, &oop, &oax) && oop == vb->pend_op &&
                       axes_cover(&oax, &vb->pend_axes) && axes_cover(&vb->pend_axes, &oax);
                sp_layout_clear(&OL);
            }
            if (!same) {
                pending_error(I, o->value ? o->value->loc : o->target->loc, vb,
                              "output without that pending entry");
                pval_free(v, I->nranks);
                return SP_ERR_INPUT;
            }
        }
        /* point at the statement that defined the plan tensor, when it is a name */
        sp_loc_t ploc = o->value ? o->value->loc : o->target->loc;
        const sp_binding_t *pb = lookup(I, pn);
        if (pb && (o->value == NULL || o->value->kind == SP_AST_NAME))
            ploc = pb->loc;
        int before = C->nstages;
        st = relate(I, SP_STAGE_OUTPUT, pn, ploc, mn, o->target->loc, o->layout, &v);
        pval_free(v, I->nranks);
        if (st == SP_OK && C->nstages > before && pb && pb->rloc &&
            (o->value == NULL || o->value->kind == SP_AST_NAME)) {
            /* a name defined differently per rank: a failure names the failing rank's line */
            sp_stage_t *sg = &C->stages[C->nstages - 1];
            sg->plan_rloc = flint_malloc((size_t)I->nranks * sizeof(sp_loc_t));
            memcpy(sg->plan_rloc, pb->rloc, (size_t)I->nranks * sizeof(sp_loc_t));
        }
        if (st != SP_OK)
            return st;
    }
    return SP_OK;
}

static sp_status_t exec_stmt(interp_t *I, const sp_ast_stmt_t *s)
{
    sp_check_t *C = I->C;
    switch (s->kind) {
    case SP_STMT_INPUT:
    case SP_STMT_PARAM:
        if (I->is_plan) {
            errat(I, SP_DIAG_LAYOUT, s->loc,
                  "plans take the model's inputs: declare their layout with 'NAME : [...]'");
            return SP_ERR_INPUT;
        }
        return decl_input(I, s);
    case SP_STMT_LAYOUT:
        if (!I->is_plan) {
            errat(I, SP_DIAG_LAYOUT, s->loc, "layout declarations belong in plans");
            return SP_ERR_INPUT;
        }
        return I->walk ? SP_OK : plan_layout_decl(I, s);
    case SP_STMT_ASSIGN:
    case SP_STMT_ACCUM:
        if (I->walk) {
            char mn[512];
            if (!s->lineage)
                return SP_OK;
            if (!target_name(I, s->lineage->target, mn, sizeof mn))
                return SP_ERR_INPUT;
            add_cut(C, mn);
            return SP_OK;
        }
        return exec_assign(I, s);
    case SP_STMT_EXPR: {
        if (I->walk)
            return SP_OK;
        if (s->value->kind != SP_AST_CALL || strcmp(s->value->name, "send") != 0) {
            errat(I, SP_DIAG_NAME, s->loc, "only 'send' can stand alone as a statement");
            return SP_ERR_INPUT;
        }
        pval_t v;
        int vid;
        sp_status_t st = eval(I, s->value, &v, &vid);
        pval_free(v, I->nranks);
        return st;
    }
    case SP_STMT_OUTPUT:
        return I->walk ? SP_OK : exec_output(I, s);
    case SP_STMT_OMIT:
        if (!I->is_plan) {
            errat(I, SP_DIAG_NAME, s->loc, "'omit' belongs in plans (it names model outputs a "
                                           "plan leaves unchecked)");
            return SP_ERR_INPUT;
        }
        for (size_t k = 0; k < s->noutputs && !I->walk; k++) {
            char mn[512];
            if (!target_name(I, s->outputs[k].target, mn, sizeof mn))
                return SP_ERR_INPUT;
            if (!sp_model_value(C, mn)) {
                errat(I, SP_DIAG_NAME, s->outputs[k].target->loc,
                      "omit: '%s' is not a tensor of the model", mn);
                return SP_ERR_INPUT;
            }
            int seen = 0;
            for (int i = 0; i < C->nomitted; i++)
                seen |= !strcmp(C->omitted[i], mn);
            if (!seen && !C->collect_only) {
                C->omitted = flint_realloc(C->omitted, (size_t)(C->nomitted + 1) * sizeof(char *));
                C->omitted[C->nomitted++] = sp_strdup(mn);
            }
        }
        return SP_OK;
    case SP_STMT_TRAIN:
        if (I->is_plan) {
            errat(I, SP_DIAG_NAME, s->loc, "'train' belongs in a model");
            return SP_ERR_INPUT;
        }
        if (I->train_seen++) {
            errat(I, SP_DIAG_NAME, s->loc, "a model trains once");
            return SP_ERR_INPUT;
        }
        return SP_OK; /* run after the body: see sp_exec_model */
    case SP_STMT_MESH:
        errat(I, SP_DIAG_LAYOUT, s->loc, "'mesh' must be the first statement of a plan");
        return SP_ERR_INPUT;
    case SP_STMT_ON: {
        if (!I->is_plan) {
            errat(I, SP_DIAG_LAYOUT, s->loc, "'on' blocks belong in plans");
            return SP_ERR_INPUT;
        }
        uint8_t *save = flint_malloc((size_t)I->nranks);
        memcpy(save, I->active, (size_t)I->nranks);
        for (size_t k = 0; k < s->nbinds; k++) {
            int ax = sp_mesh_axis(&C->mesh, s->binds[k].name.str);
            if (ax < 0) {
                errat(I, SP_DIAG_LAYOUT, s->binds[k].name.loc, "unknown mesh axis '%s'",
                      s->binds[k].name.str);
                flint_free(save);
                return SP_ERR_INPUT;
            }
            int64_t c;
            if (!eval_int(I, s->binds[k].value, -1, &c)) {
                flint_free(save);
                return SP_ERR_INPUT;
            }
            for (int64_t r = 0; r < I->nranks; r++)
                if (sp_mesh_coord(&C->mesh, r, ax) != c)
                    I->active[r] = 0;
        }
        int sc = I->scope;
        sp_status_t st = exec_block(I, &s->body);
        (void)sc;
        memcpy(I->active, save, (size_t)I->nranks);
        flint_free(save);
        return st;
    }
    case SP_STMT_FOR: {
        int64_t lo, hi;
        if (!eval_int(I, s->lo, -1, &lo) || !eval_int(I, s->hi, -1, &hi))
            return SP_ERR_INPUT;
        if (hi - lo > 1000000) {
            errat(I, SP_DIAG_LIMIT, s->loc, "loop of more than 10^6 iterations");
            return SP_ERR_INPUT;
        }
        for (int64_t v = lo; v < hi; v++) {
            if (I->nivars == I->aivars) {
                I->aivars = I->aivars ? 2 * I->aivars : 16;
                I->ivars = flint_realloc(I->ivars, (size_t)I->aivars * sizeof(ivar_t));
            }
            I->ivars[I->nivars].name = s->name.str;
            I->ivars[I->nivars++].value = v;
            sp_status_t st = exec_block(I, &s->body);
            I->nivars--;
            if (st != SP_OK || I->returned)
                return st;
        }
        return SP_OK;
    }
    case SP_STMT_IF: {
        /* a compile-time condition, per rank (it may use rank.<axis>): each branch runs on the
           ranks where it holds */
        const sp_ast_expr_t *c = s->value;
        uint8_t *save = flint_malloc((size_t)I->nranks);
        memcpy(save, I->active, (size_t)I->nranks);
        uint8_t *truth = flint_calloc((size_t)I->nranks, 1);
        int64_t first = -1;
        for (int64_t r = 0; r < I->nranks; r++) {
            if (!save[r] && I->is_plan)
                continue;
            int64_t a, b;
            int t;
            if (c->kind == SP_AST_BINOP && c->op >= SP_BIN_LT) {
                if (!eval_int(I, c->a, r, &a) || !eval_int(I, c->b, r, &b)) {
                    flint_free(save);
                    flint_free(truth);
                    return SP_ERR_INPUT;
                }
                switch (c->op) {
                case SP_BIN_LT: t = a < b; break;
                case SP_BIN_LE: t = a <= b; break;
                case SP_BIN_GT: t = a > b; break;
                case SP_BIN_GE: t = a >= b; break;
                case SP_BIN_EQ: t = a == b; break;
                default: t = a != b; break;
                }
            } else {
                if (!eval_int(I, c, r, &a)) {
                    flint_free(save);
                    flint_free(truth);
                    return SP_ERR_INPUT;
                }
                t = a != 0;
            }
            truth[r] = (uint8_t)t;
            if (first < 0)
                first = r;
        }
        sp_status_t st = SP_OK;
        for (int64_t r = 0; r < I->nranks; r++)
            I->active[r] = save[r] && truth[r];
        if (!I->is_plan)
            I->active[0] = truth[0];
        int any = 0;
        for (int64_t r = 0; r < I->nranks; r++)
            any |= I->active[r];
        if (any)
            st = exec_block(I, &s->body);
        if (st == SP_OK && s->has_else) {
            any = 0;
            for (int64_t r = 0; r < I->nranks; r++) {
                I->active[r] = save[r] && !truth[r];
                any |= I->active[r];
            }
            if (!I->is_plan) {
                I->active[0] = !truth[0];
                any = I->active[0];
            }
            if (any)
                st = exec_block(I, &s->else_body);
        }
        memcpy(I->active, save, (size_t)I->nranks);
        if (!I->is_plan)
            I->active[0] = 1;
        flint_free(save);
        flint_free(truth);
        (void)first;
        return st;
    }
    case SP_STMT_RETURN: {
        I->ret = flint_calloc(s->nvalues ? s->nvalues : 1, sizeof(pval_t));
        I->ret_vid = flint_calloc(s->nvalues ? s->nvalues : 1, sizeof(int));
        I->nret = 0;
        for (size_t k = 0; k < s->nvalues; k++) {
            int vid;
            sp_status_t st = eval(I, s->values[k], &I->ret[k], &vid);
            if (st != SP_OK)
                return st;
            I->ret_vid[k] = vid;
            I->nret++;
        }
        I->returned = 1;
        return SP_OK;
    }
    default:
        errat(I, SP_DIAG_SYNTAX, s->loc, "'%s' is not allowed here", sp_ast_stmt_kind_name(s->kind));
        return SP_ERR_INPUT;
    }
}

static sp_status_t exec_block(interp_t *I, const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        sp_status_t st = exec_stmt(I, b->stmts[i]);
        if (st != SP_OK)
            return st;
        if (I->returned)
            return SP_OK;
    }
    return SP_OK;
}

/* ---- training: graph-level autodiff and the optimizer ------------------------------------- */

static const sp_ast_stmt_t *find_train(const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->stmts[i]->kind == SP_STMT_TRAIN)
            return b->stmts[i];
    return NULL;
}

/* Every argument of `train OPT(...)` is a keyword the optimizer reads: an argument it would
   ignore is an error (the check would silently use a default instead).  Unknown optimizers are
   reported by the caller. */
static int train_args_known(interp_t *I, const sp_ast_stmt_t *t)
{
    static const char *const sgd[] = {"lr", "weight_decay", "clip", NULL};
    static const char *const momentum[] = {"lr", "momentum", "weight_decay", "clip", NULL};
    static const char *const adam[] = {"lr",           "beta1", "beta2", "eps",
                                       "weight_decay", "clip",  "step",  NULL};
    const char *opt = t->name.str;
    const char *const *keys = !strcmp(opt, "sgd")        ? sgd
                              : !strcmp(opt, "momentum") ? momentum
                              : !strcmp(opt, "adam") || !strcmp(opt, "adamw") ? adam
                                                                              : NULL;
    for (size_t i = 0; keys && i < t->nargs; i++) {
        const char *key = t->args[i].key.str;
        if (key == NULL) {
            const sp_ast_expr_t *v = t->args[i].value;
            while (v->kind == SP_AST_BINOP) /* its first character */
                v = v->a;
            errat(I, SP_DIAG_NAME, v->loc,
                  "the arguments of %s are keywords (%s(lr = ...))", opt, opt);
            return 0;
        }
        size_t k = 0;
        while (keys[k] && strcmp(keys[k], key) != 0)
            k++;
        if (keys[k])
            continue;
        const char *s = sp_suggest(key, keys, SP_SUGGEST_NULL_TERMINATED, 2);
        char list[128] = "";
        for (k = 0; keys[k]; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                     keys[k]);
        if (s)
            errat(I, SP_DIAG_NAME, t->args[i].key.loc,
                  "unknown argument '%s' of %s (did you mean '%s'?)", key, opt, s);
        else
            errat(I, SP_DIAG_NAME, t->args[i].key.loc, "unknown argument '%s' of %s (it takes %s)",
                  key, opt, list);
        return 0;
    }
    return 1;
}

static int train_num(interp_t *I, const sp_ast_stmt_t *t, const char *key, const char *dflt,
                     fmpq_t out)
{
    fmpq_zero(out);
    for (size_t i = 0; i < t->nargs; i++) {
        if (t->args[i].key.str && strcmp(t->args[i].key.str, key) == 0) {
            sp_attr_t a;
            int ok = make_attr(I, &t->args[i], 0, &a) && a.kind == SP_ATTR_NUM;
            if (ok)
                fmpq_set(out, a.num);
            else
                errat(I, SP_DIAG_SHAPE, t->args[i].value->loc, "'%s' must be a number", key);
            fmpq_clear(a.num);
            flint_free(a.list);
            return ok ? 1 : -1;
        }
    }
    if (dflt == NULL)
        return 0;
    fmpq_set_str(out, dflt, 10);
    return 1;
}

static sp_expr_t K(sp_ectx_struct *E, const fmpq_t q) { return sp_expr_const_fmpq(E, q); }

static void bind_model(interp_t *I, const char *name, sp_loc_t loc, sp_tensor_t *t)
{
    pval_t v = pval_new(1);
    v[0] = *t;
    sp_tensor_init(t);
    int vid = tv_add(I, &v[0]);
    bind(I, name, loc, v, vid);
}

/* Is the model value of a binding a parameter (declared with `param`)? */
static int is_param_decl(const sp_ast_block_t *body, const char *name)
{
    for (size_t i = 0; i < body->n; i++) {
        const sp_ast_stmt_t *s = body->stmts[i];
        if (s->kind != SP_STMT_PARAM)
            continue;
        size_t l = strlen(s->name.str);
        if (strcmp(s->name.str, name) == 0 ||
            (s->ncount && strncmp(s->name.str, name, l) == 0 && name[l] == '['))
            return 1;
    }
    return 0;
}

/* A backward cut point: grad.NAME is complete; keep its value for the stage, continue fresh. */
static void cut_grad(interp_t *I, const char *name, sp_tensor_t *g, char ***done, int *ndone)
{
    sp_check_t *C = I->C;
    char nm[600];
    snprintf(nm, sizeof nm, "grad.%s", name);
    if (!is_cut(C, nm) || g->ndim < 0)
        return;
    for (int i = 0; i < *ndone; i++)
        if (strcmp((*done)[i], nm) == 0)
            return;
    *done = flint_realloc(*done, (size_t)(*ndone + 1) * sizeof(char *));
    (*done)[(*ndone)++] = sp_strdup(nm);
    if (C->nmorig == C->amorig) {
        C->amorig = C->amorig ? 2 * C->amorig : 16;
        C->morig = flint_realloc(C->morig, (size_t)C->amorig * sizeof(sp_binding_t));
    }
    const sp_binding_t *fb = lookup(I, name);
    sp_binding_t *o = &C->morig[C->nmorig++];
    o->name = sp_strdup(nm);
    o->loc = fb ? fb->loc : C->model->loc; /* the forward definition of NAME */
    o->scope = 0;
    o->rloc = NULL;
    o->t = pval_dup(g, 1);
    sp_tensor_t f;
    sp_tensor_init(&f);
    fresh_tensor(C, nm, g->shape, g->ndim, &f);
    sp_tensor_clear(g);
    *g = f;
}

static sp_status_t run_train(interp_t *I, const sp_ast_stmt_t *t)
{
    sp_check_t *C = I->C;
    sp_ectx_struct *E = C->E;
    /* the loss: the first output, a scalar */
    if (C->noutputs == 0) {
        errat(I, SP_DIAG_NAME, t->loc, "'train' needs the loss as the model's first output");
        return SP_ERR_INPUT;
    }
    sp_binding_t *lb = lookup(I, C->outputs[0]);
    int lv = I->vid_of_binding[lb - *I->vals];
    if (sp_tensor_numel(&lb->t[0]) != 1) {
        errat(I, SP_DIAG_SHAPE, t->loc, "the loss '%s' must be a scalar", C->outputs[0]);
        return SP_ERR_INPUT;
    }
    /* the names train derives must not be taken by the model's own tensors (they would be
       silently replaced) */
    static const char *const derived[] = {"grad.", "next.", "momentum.", "adam."};
    for (int i = 0; i < *I->nvals; i++)
        for (size_t k = 0; k < sizeof derived / sizeof derived[0]; k++)
            if (strncmp((*I->vals)[i].name, derived[k], strlen(derived[k])) == 0) {
                errat(I, SP_DIAG_NAME, (*I->vals)[i].loc,
                      "'%s' is a name that 'train' derives (line %u); name the model's tensor "
                      "otherwise",
                      (*I->vals)[i].name, t->loc.line);
                return SP_ERR_INPUT;
            }
    /* adjoints by value id, accumulated in reverse tape order */
    int ng = I->ntv;
    sp_tensor_t *g = flint_calloc((size_t)ng, sizeof(sp_tensor_t));
    for (int i = 0; i < ng; i++) {
        sp_tensor_init(&g[i]);
        g[i].ndim = -1;
    }
    sp_tensor_alloc(&g[lv], lb->t[0].ndim, lb->t[0].shape);
    g[lv].v[0] = sp_expr_const_si(E, 1, 1);
    /* which binding each value is, to find cut points grad.NAME during the sweep */
    const char **name_of = flint_calloc((size_t)ng, sizeof(char *));
    for (int i = 0; i < *I->nvals; i++)
        if (I->vid_of_binding[i] >= 0 && I->vid_of_binding[i] < ng)
            name_of[I->vid_of_binding[i]] = (*I->vals)[i].name;
    uint8_t *alias_done = flint_calloc((size_t)(I->nalias ? I->nalias : 1), 1);
    char **cut_done = NULL;
    int ncut_done = 0;
    sp_status_t st = SP_OK;
    for (int k = I->ntape - 1; k >= -1 && st == SP_OK; k--) {
        int o = k >= 0 ? I->tape[k].out : -1;
        /* the adjoint of o is complete here: hand over aliases, then cut grad.NAME */
        for (int a = 0; a < I->nalias; a++) {
            if (alias_done[a] || (k >= 0 && I->alias[a][1] != o))
                continue;
            alias_done[a] = 1;
            int fv = I->alias[a][0], ov = I->alias[a][1];
            if (name_of[fv])
                cut_grad(I, name_of[fv], &g[fv], &cut_done, &ncut_done);
            if (g[fv].ndim < 0 || ov < 0)
                continue;
            if (g[ov].ndim < 0) {
                sp_tensor_copy(&g[ov], &g[fv]);
            } else {
                for (int64_t i = 0; i < sp_tensor_numel(&g[ov]); i++)
                    g[ov].v[i] = sp_expr_add(E, g[ov].v[i], g[fv].v[i]);
            }
        }
        if (k < 0)
            break;
        if (name_of[o])
            cut_grad(I, name_of[o], &g[o], &cut_done, &ncut_done);
        tape_t *tp = &I->tape[k];
        if (g[tp->out].ndim < 0)
            continue;
        sp_tensor_t *ins = flint_malloc((size_t)tp->nin * sizeof(sp_tensor_t));
        sp_tensor_t *din = flint_malloc((size_t)tp->nin * sizeof(sp_tensor_t));
        for (int j = 0; j < tp->nin; j++) {
            ins[j] = I->tv[tp->in[j]];
            sp_tensor_init(&din[j]);
            din[j].ndim = -1;
        }
        sp_op_err_t err;
        err.msg[0] = 0;
        if (!sp_ops_vjp(E, tp->op, ins, tp->nin, tp->attr, tp->nattr, &I->tv[tp->out], &g[tp->out],
                        din, &err)) {
            errat(I, SP_DIAG_SHAPE, t->loc, "cannot differentiate '%s': %s", tp->op, err.msg);
            st = SP_ERR_INPUT;
        }
        for (int j = 0; j < tp->nin && st == SP_OK; j++) {
            if (din[j].ndim < 0 || din[j].v == NULL)
                continue;
            int v = tp->in[j];
            if (g[v].ndim < 0) {
                g[v] = din[j];
                sp_tensor_init(&din[j]);
                din[j].ndim = -1;
            } else {
                int64_t n = sp_tensor_numel(&g[v]);
                for (int64_t i = 0; i < n; i++)
                    g[v].v[i] = sp_expr_add(E, g[v].v[i], din[j].v[i]);
            }
        }
        for (int j = 0; j < tp->nin; j++)
            sp_tensor_clear(&din[j]);
        flint_free(ins);
        flint_free(din);
    }
    flint_free(alias_done);
    /* grad.NAME for every named tensor (leaves are cut here), then the optimizer */
    int nb = *I->nvals;
    for (int i = 0; i < nb && st == SP_OK; i++) {
        sp_binding_t *b = &(*I->vals)[i];
        if (strncmp(b->name, "grad.", 5) == 0)
            continue;
        int v = I->vid_of_binding[i];
        sp_tensor_t gt;
        sp_tensor_init(&gt);
        if (v >= 0 && v < ng && g[v].ndim >= 0) {
            cut_grad(I, b->name, &g[v], &cut_done, &ncut_done);
            sp_tensor_copy(&gt, &g[v]);
        } else {
            sp_tensor_alloc(&gt, b->t[0].ndim, b->t[0].shape);
            for (int64_t e = 0; e < sp_tensor_numel(&gt); e++)
                gt.v[e] = sp_expr_const_si(E, 0, 1);
        }
        char nm[600];
        snprintf(nm, sizeof nm, "grad.%s", b->name);
        sp_loc_t loc = b->loc;
        bind_model(I, nm, loc, &gt);
    }
    for (int i = 0; i < ncut_done; i++)
        flint_free(cut_done[i]);
    flint_free(cut_done);
    flint_free(name_of);
    for (int i = 0; i < ng; i++)
        sp_tensor_clear(&g[i]);
    flint_free(g);
    if (st != SP_OK)
        return st;
    /* optimizer */
    const char *opt = t->name.str;
    fmpq_t lr, mu, b1, b2, eps, wd, clip, step;
    fmpq_init(lr); fmpq_init(mu); fmpq_init(b1); fmpq_init(b2);
    fmpq_init(eps); fmpq_init(wd); fmpq_init(clip); fmpq_init(step);
    int have_clip = 0;
    if (!train_args_known(I, t) ||
        train_num(I, t, "lr", "1/1000", lr) < 0 || train_num(I, t, "momentum", "9/10", mu) < 0 ||
        train_num(I, t, "beta1", "9/10", b1) < 0 || train_num(I, t, "beta2", "999/1000", b2) < 0 ||
        train_num(I, t, "eps", "1/100000000", eps) < 0 ||
        train_num(I, t, "weight_decay", strcmp(opt, "adamw") == 0 ? "1/100" : "0", wd) < 0 ||
        (have_clip = train_num(I, t, "clip", NULL, clip)) < 0 ||
        train_num(I, t, "step", "1", step) < 0)
        st = SP_ERR_INPUT;
    if (st == SP_OK && (!fmpz_is_one(fmpq_denref(step)) || fmpz_sgn(fmpq_numref(step)) <= 0 ||
                        !fmpz_fits_si(fmpq_numref(step)))) {
        errat(I, SP_DIAG_SHAPE, t->name.loc, "'step' of %s must be a positive integer", opt);
        st = SP_ERR_INPUT;
    }
    if (st == SP_OK && strcmp(opt, "sgd") && strcmp(opt, "momentum") && strcmp(opt, "adam") &&
        strcmp(opt, "adamw")) {
        errat(I, SP_DIAG_NAME, t->name.loc, "unknown optimizer '%s' (sgd, momentum, adam, adamw)", opt);
        st = SP_ERR_INPUT;
    }
    /* gradient-norm clipping: scale = min(1, clip / (norm + 1e-6)) over all parameters */
    sp_expr_t scale = sp_expr_const_si(E, 1, 1);
    nb = *I->nvals;
    if (st == SP_OK && have_clip == 1) {
        sp_expr_t *sq = NULL;
        int64_t nsq = 0;
        for (int i = 0; i < nb; i++) {
            sp_binding_t *b = &(*I->vals)[i];
            if (strncmp(b->name, "grad.", 5) != 0 || !is_param_decl(&C->model->body, b->name + 5))
                continue;
            int64_t n = sp_tensor_numel(&b->t[0]);
            sq = flint_realloc(sq, (size_t)(nsq + n) * sizeof(sp_expr_t));
            for (int64_t e = 0; e < n; e++)
                sq[nsq++] = sp_expr_pow(E, b->t[0].v[e], 2);
        }
        sp_expr_t norm = sp_expr_unary(E, SP_OP_SQRT, sp_expr_nary(E, SP_OP_ADD, sq, (uint32_t)nsq));
        flint_free(sq);
        sp_expr_t coef = sp_expr_div(E, K(E, clip), sp_expr_add(E, norm, sp_expr_const_si(E, 1, 1000000)));
        scale = sp_expr_min2(E, sp_expr_const_si(E, 1, 1), coef);
        pval_t sv = pval_new(1);
        sp_tensor_alloc(&sv[0], 0, NULL);
        sv[0].v[0] = scale;
        bind(I, "clip.scale", t->loc, sv, tv_add(I, &sv[0]));
    }
    for (int i = 0; i < nb && st == SP_OK; i++) {
        sp_binding_t *b = &(*I->vals)[i];
        if (strncmp(b->name, "grad.", 5) || !is_param_decl(&C->model->body, b->name + 5))
            continue;
        const char *p = b->name + 5;
        sp_binding_t *wb = lookup(I, p);
        int64_t n = sp_tensor_numel(&wb->t[0]);
        sp_tensor_t w, gg;
        sp_tensor_init(&w);
        sp_tensor_init(&gg);
        sp_tensor_copy(&w, &wb->t[0]);
        sp_tensor_copy(&gg, &b->t[0]);
        for (int64_t e = 0; e < n; e++)
            gg.v[e] = sp_expr_mul(E, gg.v[e], scale);
        char nm[600];
        sp_tensor_t nw;
        sp_tensor_init(&nw);
        sp_tensor_copy(&nw, &w);
        if (!strcmp(opt, "sgd")) {
            for (int64_t e = 0; e < n; e++) {
                sp_expr_t gv = gg.v[e];
                if (!fmpq_is_zero(wd))
                    gv = sp_expr_add(E, gv, sp_expr_mul(E, K(E, wd), w.v[e]));
                nw.v[e] = sp_expr_sub(E, w.v[e], sp_expr_mul(E, K(E, lr), gv));
            }
        } else if (!strcmp(opt, "momentum")) {
            /* g' = g + wd * w; buf' = mu * buf + g'; w' = w - lr * buf'  (torch.optim.SGD with
               momentum and weight_decay) */
            sp_tensor_t buf, nbuf;
            sp_tensor_init(&buf);
            sp_tensor_init(&nbuf);
            snprintf(nm, sizeof nm, "momentum.%s", p);
            sp_tensor_alloc(&buf, w.ndim, w.shape);
            sp_tensor_symbols(E, &buf, nm);
            sp_tensor_copy(&nbuf, &buf);
            for (int64_t e = 0; e < n; e++) {
                sp_expr_t gv = gg.v[e];
                if (!fmpq_is_zero(wd))
                    gv = sp_expr_add(E, gv, sp_expr_mul(E, K(E, wd), w.v[e]));
                nbuf.v[e] = sp_expr_add(E, sp_expr_mul(E, K(E, mu), buf.v[e]), gv);
                nw.v[e] = sp_expr_sub(E, w.v[e], sp_expr_mul(E, K(E, lr), nbuf.v[e]));
            }
            bind_model(I, nm, wb->loc, &buf);
            snprintf(nm, sizeof nm, "next.momentum.%s", p);
            bind_model(I, nm, t->loc, &nbuf);
        } else {
            /* Adam / AdamW with bias correction at step t */
            sp_tensor_t m, v, nm_, nv_;
            sp_tensor_init(&m);
            sp_tensor_init(&v);
            sp_tensor_init(&nm_);
            sp_tensor_init(&nv_);
            sp_tensor_alloc(&m, w.ndim, w.shape);
            sp_tensor_alloc(&v, w.ndim, w.shape);
            snprintf(nm, sizeof nm, "adam.m.%s", p);
            sp_tensor_symbols(E, &m, nm);
            snprintf(nm, sizeof nm, "adam.v.%s", p);
            sp_tensor_symbols(E, &v, nm);
            sp_tensor_copy(&nm_, &m);
            sp_tensor_copy(&nv_, &v);
            fmpq_t one, c1, c2, t1;
            fmpq_init(one); fmpq_init(c1); fmpq_init(c2); fmpq_init(t1);
            fmpq_one(one);
            slong sn = fmpz_get_si(fmpq_numref(step));
            fmpq_pow_si(c1, b1, sn);
            fmpq_sub(c1, one, c1); /* 1 - b1^t */
            fmpq_pow_si(c2, b2, sn);
            fmpq_sub(c2, one, c2); /* 1 - b2^t */
            for (int64_t e = 0; e < n; e++) {
                sp_expr_t gv = gg.v[e];
                if (!strcmp(opt, "adam") && !fmpq_is_zero(wd))
                    gv = sp_expr_add(E, gv, sp_expr_mul(E, K(E, wd), w.v[e]));
                fmpq_sub(t1, one, b1);
                nm_.v[e] = sp_expr_add(E, sp_expr_mul(E, K(E, b1), m.v[e]), sp_expr_mul(E, K(E, t1), gv));
                fmpq_sub(t1, one, b2);
                nv_.v[e] = sp_expr_add(E, sp_expr_mul(E, K(E, b2), v.v[e]),
                                       sp_expr_mul(E, K(E, t1), sp_expr_pow(E, gv, 2)));
                sp_expr_t mhat = sp_expr_div(E, nm_.v[e], K(E, c1));
                sp_expr_t vhat = sp_expr_div(E, nv_.v[e], K(E, c2));
                sp_expr_t upd = sp_expr_div(E, mhat, sp_expr_add(E, sp_expr_unary(E, SP_OP_SQRT, vhat), K(E, eps)));
                sp_expr_t wv = w.v[e];
                if (!strcmp(opt, "adamw") && !fmpq_is_zero(wd)) {
                    fmpq_mul(t1, lr, wd);
                    wv = sp_expr_sub(E, wv, sp_expr_mul(E, K(E, t1), w.v[e]));
                }
                nw.v[e] = sp_expr_sub(E, wv, sp_expr_mul(E, K(E, lr), upd));
            }
            fmpq_clear(one); fmpq_clear(c1); fmpq_clear(c2); fmpq_clear(t1);
            snprintf(nm, sizeof nm, "adam.m.%s", p);
            bind_model(I, nm, wb->loc, &m);
            snprintf(nm, sizeof nm, "adam.v.%s", p);
            bind_model(I, nm, wb->loc, &v);
            snprintf(nm, sizeof nm, "next.adam.m.%s", p);
            bind_model(I, nm, t->loc, &nm_);
            snprintf(nm, sizeof nm, "next.adam.v.%s", p);
            bind_model(I, nm, t->loc, &nv_);
        }
        snprintf(nm, sizeof nm, "next.%s", p);
        bind_model(I, nm, t->loc, &nw);
        sp_tensor_clear(&w);
        sp_tensor_clear(&gg);
        nb = *I->nvals;
    }
    fmpq_clear(lr); fmpq_clear(mu); fmpq_clear(b1); fmpq_clear(b2);
    fmpq_clear(eps); fmpq_clear(wd); fmpq_clear(clip); fmpq_clear(step);
    return st;
}

/* ---- entry points ------------------------------------------------------------------------- */

static void interp_clear(interp_t *I)
{
    flint_free(I->active);
    flint_free(I->ivars);
    for (int k = 0; k < I->nmsgs; k++)
        sp_tensor_clear(&I->msgs[k].t);
    flint_free(I->msgs);
    for (int k = 0; k < I->ntv; k++)
        sp_tensor_clear(&I->tv[k]);
    flint_free(I->tv);
    for (int k = 0; k < I->ntape; k++) {
        flint_free(I->tape[k].op);
        attrs_free(I->tape[k].attr, I->tape[k].nattr);
        flint_free(I->tape[k].in);
    }
    flint_free(I->tape);
    flint_free(I->vid_of_binding);
    flint_free(I->alias);
    flint_free(I->occ_stmt);
    flint_free(I->occ_n);
    if (I->is_plan) {
        for (int k = 0; k < I->npvals; k++) {
            flint_free(I->pvals[k].name);
            flint_free(I->pvals[k].rloc);
            pval_free(I->pvals[k].t, I->nranks);
        }
        flint_free(I->pvals);
    }
}

const sp_binding_t *sp_model_value(const sp_check_t *C, const char *name)
{
    for (int i = C->nmvals - 1; i >= 0; i--)
        if (strcmp(C->mvals[i].name, name) == 0)
            return &C->mvals[i];
    return NULL;
}

sp_status_t sp_exec_model(sp_check_t *C)
{
    interp_t I;
    memset(&I, 0, sizeof I);
    I.C = C;
    I.nranks = 1;
    I.active = flint_calloc(1, 1);
    I.active[0] = 1;
    I.vals = &C->mvals;
    I.nvals = &C->nmvals;
    I.avals = &C->amvals;
    /* C->mvals may hold values from an earlier pass: rebuild the vid table alongside */
    I.vid_of_binding = flint_calloc((size_t)(C->amvals ? C->amvals : 1), sizeof(int));
    for (int i = 0; i < C->amvals; i++)
        I.vid_of_binding[i] = -1;
    sp_status_t st = exec_block(&I, &C->model->body);
    const sp_ast_stmt_t *t = find_train(&C->model->body);
    if (st == SP_OK && t)
        st = run_train(&I, t);
    /* cuts of derived tensors (grad.*, next.*) */
    if (st == SP_OK) {
        for (int i = 0; i < C->nmvals; i++) {
            sp_binding_t *b = &C->mvals[i];
            if ((strncmp(b->name, "grad.", 5) && strncmp(b->name, "next.", 5)) || !is_cut(C, b->name))
                continue;
            int seen = 0;
            for (int k = 0; k < C->nmorig; k++)
                seen |= strcmp(C->morig[k].name, b->name) == 0;
            if (seen)
                continue;
            if (C->nmorig == C->amorig) {
                C->amorig = C->amorig ? 2 * C->amorig : 16;
                C->morig = flint_realloc(C->morig, (size_t)C->amorig * sizeof(sp_binding_t));
            }
            sp_binding_t *o = &C->morig[C->nmorig++];
            o->name = sp_strdup(b->name);
            o->loc = b->loc;
            o->scope = 0;
        o->rloc = NULL;
            o->t = pval_dup(b->t, 1);
            sp_tensor_t f;
            sp_tensor_init(&f);
            fresh_tensor(C, b->name, b->t[0].shape, b->t[0].ndim, &f);
            sp_tensor_clear(&b->t[0]);
            b->t[0] = f;
        }
    }
    interp_clear(&I);
    return st;
}

/* The plan's mesh (its first statement) into C->mesh, and I set up for the plan's ranks. */
static sp_status_t plan_mesh(sp_check_t *C, interp_t *I)
{
    const sp_ast_block_t *body = &C->plan->body;
    if (body->n == 0 || body->stmts[0]->kind != SP_STMT_MESH) {
        sp_diags_error(C->d, SP_DIAG_LAYOUT, C->plan->loc, "a plan begins with 'mesh AXIS = N, ...'");
        return SP_ERR_INPUT;
    }
    const sp_ast_stmt_t *ms = body->stmts[0];
    memset(&C->mesh, 0, sizeof C->mesh);
    C->mesh.nranks = 1;
    if (ms->nbinds > SP_MAX_AXES) {
        sp_diags_error(C->d, SP_DIAG_LIMIT, ms->loc, "at most %d mesh axes", SP_MAX_AXES);
        return SP_ERR_INPUT;
    }
    for (size_t k = 0; k < ms->nbinds; k++) {
        const sp_ast_bind_t *b = &ms->binds[k];
        int64_t n;
        I->nranks = 1;
        I->active = NULL;
        if (!eval_int(I, b->value, -1, &n)) {
            return SP_ERR_INPUT;
        }
        if (sp_mesh_axis(&C->mesh, b->name.str) >= 0) {
            sp_diags_error(C->d, SP_DIAG_LAYOUT, b->name.loc, "mesh axis '%s' declared twice", b->name.str);
            return SP_ERR_INPUT;
        }
        /* the mesh cutoff: an axis the plan is uniform along runs at its checked size */
        for (int c = 0; c < C->ncutoff; c++)
            if (strcmp(C->cutoff[c].name, b->name.str) == 0 && C->cutoff[c].real == n)
                n = C->cutoff[c].red;
        if (n < 1 || strlen(b->name.str) >= sizeof C->mesh.name[0]) {
            sp_diags_error(C->d, SP_DIAG_LAYOUT, b->value->loc, "a mesh axis needs a size of at least 1");
            return SP_ERR_INPUT;
        }
        if (C->mesh.nranks > C->opt.max_ranks / n) {
            sp_diags_error(C->d, SP_DIAG_LIMIT, b->value->loc,
                           "the mesh has more than %lld ranks (--max-ranks)", (long long)C->opt.max_ranks);
            return SP_ERR_INPUT;
        }
        snprintf(C->mesh.name[C->mesh.naxes], sizeof C->mesh.name[0], "%s", b->name.str);
        C->mesh.size[C->mesh.naxes++] = n;
        C->mesh.nranks *= n;
    }
    I->nranks = C->mesh.nranks;
    I->active = flint_malloc((size_t)I->nranks);
    memset(I->active, 1, (size_t)I->nranks);
    I->vals = &I->pvals;
    I->nvals = &I->npvals;
    I->avals = &I->apvals;
    return SP_OK;
}

/*
 * A guess of the cut points without executing anything: the plan's control flow (loops,
 * compile-time conditions, on blocks) walked as pass 1 would walk it, collecting the targets
 * of lineage annotations into C->cuts.  The checker confirms the guess after pass 2
 * (sp_cuts_confirmed): the plan's control flow does not depend on tensor values, so the cuts
 * pass 2 crossed are the cuts pass 1 would have collected.  Not used with --infer-lineage;
 * SP_ERR_INPUT when the walk stops (the caller then runs pass 1).
 */
static int block_has_lineage(const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        if (s->lineage || block_has_lineage(&s->body) || block_has_lineage(&s->else_body))
            return 1;
    }
    return 0;
}

sp_status_t sp_plan_guess_cuts(sp_check_t *C)
{
    /* lineage inside functions is reached through expressions, which the walk does not enter */
    for (int i = 0; i < C->nfuncs; i++)
        if (block_has_lineage(&C->funcs[i]->body))
            return SP_ERR_INPUT;
    sp_diags_mark_t dm;
    sp_diags_mark(C->d, &dm);
    interp_t I;
    memset(&I, 0, sizeof I);
    I.C = C;
    I.is_plan = 1;
    I.walk = 1;
    sp_status_t st = plan_mesh(C, &I);
    const sp_ast_block_t *body = &C->plan->body;
    for (size_t i = 1; i < body->n && st == SP_OK; i++)
        st = exec_stmt(&I, body->stmts[i]);
    interp_clear(&I);
    sp_diags_restore(C->d, &dm);
    return st;
}

/* Did pass 2 cross exactly the guessed cuts?  If so, C->cuts takes pass 2's order (pass 1's). */
int sp_cuts_confirmed(sp_check_t *C)
{
    if (C->npassed != C->ncuts)
        return 0;
    for (int i = 0; i < C->npassed; i++)
        if (!is_cut(C, C->passed[i]))
            return 0;
    for (int i = 0; i < C->npassed; i++) {
        flint_free(C->cuts[i]);
        C->cuts[i] = sp_strdup(C->passed[i]);
    }
    return 1;
}

/*
 * Coverage of an output: every element of the model tensor is held by some rank that declares
 * the output, and a pending reduction has every member of its group (a group that misses a
 * rank would compare a partial sum).  Ranks that do not declare it are not compared: an
 * element no declaring rank holds would pass unseen.
 */
static sp_status_t check_coverage(sp_check_t *C, const sp_stage_t *s)
{
    const sp_layout_t *L = &s->layout;
    int64_t numel = 1;
    for (int d = 0; d < L->ndim; d++)
        numel *= L->size[d];
    uint8_t *held = flint_calloc((size_t)(numel ? numel : 1), 1);
    sp_status_t st = SP_OK;
    for (int64_t r = 0; r < s->nranks && st == SP_OK; r++) {
        if (s->plan[r].ndim < 0)
            continue;
        for (int k = 0; k < L->npartial && st == SP_OK; k++) {
            int64_t n = sp_axes_count(&C->mesh, &L->paxes[k]);
            for (int64_t j = 0; j < n; j++) {
                int64_t q = sp_axes_member(&C->mesh, &L->paxes[k], r, j);
                if (s->plan[q].ndim < 0) {
                    char a[128], b[128];
                    sp_mesh_rank_str(&C->mesh, r, a, sizeof a);
                    sp_mesh_rank_str(&C->mesh, q, b, sizeof b);
                    sp_diags_error(C->d, SP_DIAG_LINEAGE, s->plan_loc,
                                   "output '%s' has a pending %s over a group of rank %s, but rank "
                                   "%s of that group does not declare it",
                                   s->model_name, sp_red_name(L->pop[k]), a, b);
                    st = SP_ERR_INPUT;
                    break;
                }
            }
        }
        int64_t lo[SP_MAX_DIMS], hi[SP_MAX_DIMS], idx[SP_MAX_DIMS];
        int empty = 0;
        for (int d = 0; d < L->ndim; d++) {
            sp_layout_range(&C->mesh, L, d, r, &lo[d], &hi[d]);
            idx[d] = lo[d];
            empty |= lo[d] >= hi[d];
        }
        while (!empty && numel > 0) {
            int64_t f = 0;
            for (int d = 0; d < L->ndim; d++)
                f = f * L->size[d] + idx[d];
            held[f] = 1;
            int d = L->ndim - 1;
            while (d >= 0 && ++idx[d] == hi[d]) {
                idx[d] = lo[d];
                d--;
            }
            if (d < 0)
                break;
        }
    }
    for (int64_t f = 0; f < numel && st == SP_OK; f++)
        if (!held[f]) {
            char es[256];
            size_t k = 0;
            int64_t rest = f, ix[SP_MAX_DIMS];
            for (int d = L->ndim - 1; d >= 0; d--) {
                ix[d] = rest % L->size[d];
                rest /= L->size[d];
            }
            for (int d = 0; d < L->ndim && k < sizeof es; d++)
                k += (size_t)snprintf(es + k, sizeof es - k, "%s%lld", d ? ", " : "", (long long)ix[d]);
            sp_diags_error(C->d, SP_DIAG_LINEAGE, s->plan_loc,
                           "output '%s': element [%s] is held by no rank that declares the output "
                           "(declare it on every rank that holds a part of it)",
                           s->model_name, es);
            st = SP_ERR_INPUT;
        }
    flint_free(held);
    return st;
}

/* Is name a parameter of the model, or an element of a parameter array? */
static int is_param_name(const sp_check_t *C, const char *name)
{
    const sp_ast_block_t *b = &C->model->body;
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        size_t l = strlen(s->name.str ? s->name.str : "");
        if (s->kind == SP_STMT_PARAM &&
            (!strcmp(s->name.str, name) || (!strncmp(s->name.str, name, l) && name[l] == '[')))
            return 1;
    }
    return 0;
}

/*
 * Every output of the model is checked by some output of the plan, or named by `omit`: the
 * model's `output` list and, when it trains, every parameter's gradient and update and the
 * optimizer's next state.  A plan that never mentions a gradient would otherwise pass with
 * that gradient unchecked.
 */
static sp_status_t check_outputs_declared(sp_check_t *C)
{
    const char **miss = NULL;
    int nmiss = 0;
    for (int i = 0; i < C->nmvals; i++) {
        const char *n = C->mvals[i].name;
        int required = 0;
        for (int k = 0; k < C->noutputs && !required; k++)
            required = !strcmp(C->outputs[k], n);
        required |= !strncmp(n, "next.", 5) ||
                    (!strncmp(n, "grad.", 5) && is_param_name(C, n + 5));
        if (!required)
            continue;
        int done = 0;
        for (int k = 0; k < C->nstages && !done; k++)
            done = C->stages[k].kind == SP_STAGE_OUTPUT && !strcmp(C->stages[k].model_name, n);
        for (int k = 0; k < C->nomitted && !done; k++)
            done = !strcmp(C->omitted[k], n);
        if (done)
            continue;
        for (int k = 0; k < nmiss && !done; k++)
            done = !strcmp(miss[k], n);
        if (done)
            continue;
        miss = flint_realloc(miss, (size_t)(nmiss + 1) * sizeof(char *));
        miss[nmiss++] = n;
    }
    if (nmiss == 0)
        return SP_OK;
    char list[1024];
    size_t k = 0;
    for (int i = 0; i < nmiss && i < 8 && k < sizeof list; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", miss[i]);
    if (nmiss > 8 && k < sizeof list)
        snprintf(list + k, sizeof list - k, " and %d more", nmiss - 8);
    sp_diags_error(C->d, SP_DIAG_LINEAGE, C->plan->name.loc,
                   "plan '%s' checks no output for %s of the model: output %s, or name %s in "
                   "'omit ...' to leave %s unchecked",
                   C->plan->name.str, list, nmiss > 1 ? "them" : "it",
                   nmiss > 1 ? "them" : "it", nmiss > 1 ? "them" : "it");
    flint_free(miss);
    return SP_ERR_INPUT;
}

sp_status_t sp_exec_plan(sp_check_t *C)
{
    interp_t I;
    memset(&I, 0, sizeof I);
    I.C = C;
    I.is_plan = 1;
    sp_status_t st = plan_mesh(C, &I);
    if (st != SP_OK) {
        interp_clear(&I);
        return st;
    }
    const sp_ast_block_t *body = &C->plan->body;
    for (size_t i = 1; i < body->n && st == SP_OK; i++)
        st = exec_stmt(&I, body->stmts[i]);
    for (int k = 0; k < I.nmsgs && st == SP_OK; k++) {
        if (I.msgs[k].used)
            continue;
        char a[128], b[128];
        sp_mesh_rank_str(&C->mesh, I.msgs[k].src, a, sizeof a);
        sp_mesh_rank_str(&C->mesh, I.msgs[k].dst, b, sizeof b);
        sp_diags_error(C->d, SP_DIAG_LAYOUT, I.msgs[k].loc,
                       "send from rank %s to rank %s is never received", a, b);
        st = SP_ERR_INPUT;
    }
    if (st == SP_OK && I.outputs_seen == 0) {
        sp_diags_error(C->d, SP_DIAG_LINEAGE, C->plan->loc,
                       "plan '%s' declares no output: nothing would be proven", C->plan->name.str);
        st = SP_ERR_INPUT;
    }
    for (int i = 0; i < C->nstages && st == SP_OK && !C->collect_only; i++)
        if (C->stages[i].kind == SP_STAGE_OUTPUT)
            st = check_coverage(C, &C->stages[i]);
    if (st == SP_OK && !C->collect_only)
        st = check_outputs_declared(C);
    interp_clear(&I);
    return st;
}
