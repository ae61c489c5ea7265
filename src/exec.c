/* exec.c: the interpreter's core, shared by model and plan: bindings, expressions, statements. */
#include <flint/flint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"
#include "hash.h"
#include "sbuf.h"

/*
 * Execution is split by concern; src/exec_int.h holds the interpreter's state and the functions
 * the files share:
 *   exec.c      the core that models and plans share: values per rank and their bindings,
 *               fresh symbols, integer and rational evaluation, layouts, calls (functions,
 *               operators, the "did you mean" of unknown names), expressions and statements;
 *   autodiff.c  the model: the tape of operator applications, `train` (graph-level autodiff
 *               with the operators' VJP rules, then the optimizer) and sp_exec_model;
 *   lineage.c   cut points and stages: relating a plan value to a model tensor (`~ T : L`,
 *               outputs), the cut points crossed, lineage inference, the guess of the cuts;
 *   plan.c      the plan: its mesh, model tensors distributed over the ranks, collectives and
 *               send/recv, the checks that close a plan, and sp_exec_plan;
 *   exec_pos.c  shape reduction while executing: the offsets the program's text gives (slice
 *               starts, chunks, reshapes' extents: src/ops_pos.c carries the rest), the splits
 *               no layout writes checked at the real sizes, and the reports that send a check
 *               to the real sizes (sp_note_clamped, sp_pos_note).
 */

#define MAX_CALL_DEPTH 64

void errat(interp_t *I, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sp_diags_vadd(I->C->d, SP_SEV_ERROR, code, loc, fmt, ap);
    va_end(ap);
}

pval_t pval_new(int64_t n)
{
    pval_t p = flint_malloc((size_t)n * sizeof(sp_tensor_t));
    for (int64_t r = 0; r < n; r++) {
        sp_tensor_init(&p[r]);
        p[r].ndim = -1;
    }
    return p;
}

void pval_free(pval_t p, int64_t n)
{
    if (p == NULL)
        return;
    for (int64_t r = 0; r < n; r++)
        sp_tensor_clear(&p[r]);
    flint_free(p);
}

pval_t pval_dup(const sp_tensor_t *p, int64_t n)
{
    pval_t q = pval_new(n);
    for (int64_t r = 0; r < n; r++)
        if (p[r].ndim >= 0)
            sp_tensor_copy(&q[r], &p[r]);
    return q;
}

void fresh_symbols_as(sp_check_t *C, const char *base, char sep, const int64_t *shape, int ndim,
                      const sp_pos_t *pos, sp_tensor_t *t, char *prefix, size_t len)
{
    snprintf(prefix, len, "%s%c%d", base, sep, ++C->fresh_counter);
    sp_tensor_alloc(t, ndim, shape);
    if (pos != NULL && ndim > 0) /* before the symbols: src/members.c records the axes */
        memcpy(t->pos, pos, (size_t)ndim * sizeof(sp_pos_t));
    sp_source_symbols(C, t, prefix);
}

void fresh_symbols(sp_check_t *C, const char *base, char sep, const int64_t *shape, int ndim,
                   const sp_pos_t *pos, sp_tensor_t *t)
{
    char prefix[512];
    fresh_symbols_as(C, base, sep, shape, ndim, pos, t, prefix, sizeof prefix);
}

void fresh_tensor(sp_check_t *C, const char *base, const int64_t *shape, int ndim,
                  sp_tensor_t *t)
{
    fresh_symbols(C, base, '@', shape, ndim, NULL, t);
}

/* A cut point's fresh value: a new source (no offset) with t's extents (src/ops_pos.c) */
void fresh_like(sp_check_t *C, const char *base, const sp_tensor_t *t, sp_tensor_t *f)
{
    sp_pos_t pos[SP_MAX_DIMS];
    memset(pos, 0, sizeof pos);
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++)
        pos[d].ext = t->pos[d].ext;
    fresh_symbols(C, base, '@', t->shape, t->ndim, pos, f);
}

/* ---- bindings ------------------------------------------------------------------------------- */

static const char *name_at(const void *base, size_t stride, int i)
{
    return *(char *const *)((const char *)base + (size_t)i * stride);
}

/* The slot of name in X (*found: it holds an element of that name), else the slot to insert at */
static uint32_t nx_slot(const sp_nameidx_t *X, const void *base, size_t stride, const char *name,
                        int *found)
{
    uint32_t m = X->nslots - 1, j = (uint32_t)sp_str_hash(name) & m, ins = UINT32_MAX;
    for (; X->slots[j] != 0; j = (j + 1) & m) {
        if (X->slots[j] == 1) {
            ins = ins == UINT32_MAX ? j : ins;
            continue;
        }
        if (strcmp(name_at(base, stride, (int)X->slots[j] - 2), name) == 0) {
            *found = 1;
            return j;
        }
    }
    *found = 0;
    return ins == UINT32_MAX ? j : ins;
}

/* Index element i (elements 0 .. i-1 are) */
static void nx_push(sp_nameidx_t *X, const void *base, size_t stride, int i)
{
    if (i >= X->aprev) {
        X->aprev = 2 * i + 64;
        X->prev = flint_realloc(X->prev, (size_t)X->aprev * sizeof(int));
    }
    int found;
    uint32_t j = nx_slot(X, base, stride, name_at(base, stride, i), &found);
    X->prev[i] = found ? (int)X->slots[j] - 2 : -1;
    X->used += X->slots[j] == 0;
    X->slots[j] = (uint32_t)i + 2;
    X->n = i + 1;
}

int sp_nameidx_find(sp_nameidx_t *X, const void *base, size_t stride, int n, const char *name)
{
    if (X->n != n || X->slots == NULL) { /* rebuilt, at most half full */
        uint32_t size = 64;
        while (size < 4 * (uint32_t)n)
            size *= 2;
        flint_free(X->slots);
        X->slots = flint_calloc(size, sizeof(uint32_t));
        X->nslots = size;
        X->used = 0;
        for (int i = 0; i < n; i++)
            nx_push(X, base, stride, i);
        X->n = n;
    }
    int found;
    uint32_t j = nx_slot(X, base, stride, name, &found);
    return found ? (int)X->slots[j] - 2 : -1;
}

void sp_nameidx_added(sp_nameidx_t *X, const void *base, size_t stride, int n)
{
    if (X->slots != NULL && X->n == n - 1 && 2 * (X->used + 1) <= X->nslots)
        nx_push(X, base, stride, n - 1);
    else
        sp_nameidx_stale(X);
}

void sp_nameidx_removed(sp_nameidx_t *X, const void *base, size_t stride, int i)
{
    int found = 0;
    uint32_t j = 0;
    if (X->slots != NULL && X->n == i + 1)
        j = nx_slot(X, base, stride, name_at(base, stride, i), &found);
    if (found) /* its name's earlier element, if any */
        X->slots[j] = X->prev[i] >= 0 ? (uint32_t)X->prev[i] + 2 : 1;
    X->n = found ? i : -1;
}

void sp_nameidx_free(sp_nameidx_t *X)
{
    flint_free(X->slots);
    flint_free(X->prev);
    memset(X, 0, sizeof *X);
}

sp_binding_t *lookup(interp_t *I, const char *name)
{
    int i = sp_nameidx_find(I->index, *I->vals, sizeof(sp_binding_t), *I->nvals, name);
    return i >= 0 ? &(*I->vals)[i] : NULL;
}

const sp_binding_t *sp_model_value(const sp_check_t *C, const char *name)
{
    /* the index is a cache of the bindings, kept current by any lookup */
    sp_check_t *M = (sp_check_t *)C;
    int i = sp_nameidx_find(&M->mindex, M->mvals, sizeof(sp_binding_t), M->nmvals, name);
    return i >= 0 ? &M->mvals[i] : NULL;
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
int axes_cover(const sp_axes_t *b, const sp_axes_t *a)
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

void pending_error(interp_t *I, sp_loc_t loc, const sp_binding_t *b, const char *what)
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

/* The binding a plain name or an indexed name (w[l]) denotes, or NULL (no diagnostics). */
sp_binding_t *binding_of(interp_t *I, const sp_ast_expr_t *e)
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

/* The value the next bind() binds holds the pending max/min of layout L (if any). */
void mark_pending(interp_t *I, const sp_layout_t *L)
{
    I->bind_pend = I->is_plan && layout_pending(L, &I->bind_pend_op, &I->bind_pend_axes);
}

static int same_axes(const sp_axes_t *a, const sp_axes_t *b)
{
    return a->n == b->n && axes_cover(a, b) && axes_cover(b, a);
}

/* Bind name to val (taken), on the active ranks only: a rank outside the active set (an `on`
   block, a rank-dependent `if`) keeps what it had, even when val holds a value for it (a plain
   alias `y = a` evaluates `a` on every rank).  In the current scope a rebinding replaces the
   active ranks' values and remembers, per rank, the statement that defined each.  The value
   holds the pending max/min that mark_pending() (or the caller, in I->bind_pend) set; a binding
   whose ranks would disagree on it (some keep a pending max, others get another value) is an
   error: its flag is one per binding, and a use that it allows on the pending ranks (a max
   all-reduce) would read a value the checker models as the maximum itself on the others.
   Returns 0 after an error (val freed). */
int bind(interp_t *I, const char *name, sp_loc_t loc, pval_t val, int vid)
{
    int np = I->bind_pend;
    sp_red_t nop = I->bind_pend_op;
    sp_axes_t nax = I->bind_pend_axes;
    I->bind_pend = 0;
    for (int64_t r = 0; r < I->nranks; r++)
        if (!I->active[r] && val[r].ndim >= 0) {
            sp_tensor_clear(&val[r]);
            sp_tensor_init(&val[r]);
            val[r].ndim = -1;
        }
    sp_binding_t *b = lookup(I, name);
    if (b && b->scope == I->scope) {
        /* a rank that holds the old value and gets no new one (an `on` block, a rank-dependent
           `if`) keeps it, and with it the old value's nature: a state input whose reads are
           recorded, a pending max/min that may only be reduced (docs/soundness.md, "Coverage") */
        int kept = 0, given = 0;
        for (int64_t r = 0; r < I->nranks; r++) {
            kept |= val[r].ndim < 0 && b->t[r].ndim >= 0;
            given |= val[r].ndim >= 0;
        }
        if (kept && given && I->is_plan && (b->pend || np) &&
            !(b->pend && np && b->pend_op == nop && same_axes(&b->pend_axes, &nax))) {
            const sp_red_t op = b->pend ? b->pend_op : nop;
            errat(I, SP_DIAG_LINEAGE, loc,
                  "'%s' would hold a pending %s (partial(%s@...)) on some ranks and another value "
                  "on the others, which keep their value here: give it one nature on every rank "
                  "(reduce the pending value first, or use another name)",
                  name, sp_red_name(op), sp_red_name(op));
            pval_free(val, I->nranks);
            return 0;
        }
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
        if (!kept)
            b->state = 0;
        if (given) {
            b->pend = np;
            b->pend_op = nop;
            b->pend_axes = nax;
        }
        if (!I->is_plan)
            I->vid_of_binding[b - *I->vals] = vid;
        return 1;
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
    sp_nameidx_added(I->index, *I->vals, sizeof(sp_binding_t), *I->nvals);
    nb->loc = loc;
    nb->t = val;
    nb->rloc = NULL;
    nb->pend = np;
    nb->pend_op = nop;
    nb->pend_axes = nax;
    nb->state = 0;
    if (I->is_plan) {
        nb->rloc = flint_calloc((size_t)I->nranks, sizeof(sp_loc_t));
        for (int64_t r = 0; r < I->nranks; r++)
            if (val[r].ndim >= 0)
                nb->rloc[r] = loc;
    }
    nb->scope = I->scope;
    if (!I->is_plan)
        I->vid_of_binding[nb - *I->vals] = vid;
    return 1;
}

static void pop_scope(interp_t *I, int scope)
{
    while (*I->nvals > 0 && (*I->vals)[*I->nvals - 1].scope > scope) {
        int i = --*I->nvals;
        sp_binding_t *b = &(*I->vals)[i];
        sp_nameidx_removed(I->index, *I->vals, sizeof(sp_binding_t), i);
        flint_free(b->name);
        flint_free(b->rloc);
        pval_free(b->t, I->nranks);
    }
}

/* ---- integers ------------------------------------------------------------------------------- */

static int ivar_find(interp_t *I, const char *name, int64_t *v)
{
    for (int i = I->nivars - 1; i >= 0; i--)
        if (strcmp(I->ivars[i].name, name) == 0) {
            *v = I->ivars[i].value;
            return 1;
        }
    return 0;
}

/* A loop variable or an integer parameter name = value; 0 (an error) where a tensor of that
   name is visible: the checker read the tensor and the reference executor the variable, so
   `for x in 1..2 { t = u * x }` with an input x, or `f(x, 2)` for `func f(a, k)` beside an
   input k, was EQUIVALENT to the model's `u * x` at sizes beyond the cross-check (helper-64's
   review, session 38; tests/plans/bad/name_loop_var_shadows_tensor.sp) */
static int push_ivar(interp_t *I, const char *name, sp_loc_t loc, int64_t value)
{
    if (lookup(I, name) != NULL) {
        errat(I, SP_DIAG_NAME, loc,
              "the loop variable or integer parameter '%s' has the name of a tensor in scope: "
              "rename one of them",
              name);
        return 0;
    }
    if (I->nivars == I->aivars) {
        I->aivars = I->aivars ? 2 * I->aivars : 16;
        I->ivars = flint_realloc(I->ivars, (size_t)I->aivars * sizeof(ivar_t));
    }
    I->ivars[I->nivars].name = name;
    I->ivars[I->nivars++].value = value;
    return 1;
}

/* Is e an integer expression (names are dims, loop variables or rank.<axis>)? */
int is_int_expr(interp_t *I, const sp_ast_expr_t *e)
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

int eval_int(interp_t *I, const sp_ast_expr_t *e, int64_t rank, int64_t *out)
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
            if (e->op == SP_BIN_DIV && a % b != 0) {
                /* an integer position takes an integer: 5/2 is not 2 (the reference executor
                   refuses it too) */
                errat(I, SP_DIAG_SHAPE, e->loc, "%lld/%lld is not an integer (an integer is "
                      "needed here)", (long long)a, (long long)b);
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

/* An integer expression in a tensor context: exact rational (1/(B*H) is not integer division).
   real: dims at their real sizes (a size used as a value, docs/soundness.md "Sizes as values"). */
static int eval_rat_as(interp_t *I, const sp_ast_expr_t *e, int64_t rank, int real, fmpq_t out)
{
    if (e->kind == SP_AST_BINOP && e->op <= SP_BIN_DIV) {
        fmpq_t a, b;
        fmpq_init(a);
        fmpq_init(b);
        int ok = eval_rat_as(I, e->a, rank, real, a) && eval_rat_as(I, e->b, rank, real, b);
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
        if (!eval_rat_as(I, e->a, rank, real, out))
            return 0;
        fmpq_neg(out, out);
        return 1;
    }
    if (e->kind == SP_AST_NUM) {
        fmpq_set(out, e->value);
        return 1;
    }
    int64_t v;
    if (real && e->kind == SP_AST_BINOP && e->op == SP_BIN_POW) {
        /* the exponent is a value too (`2^K`): at the real sizes */
        if (!eval_rat_as(I, e->b, rank, real, out))
            return 0;
        if (!fmpz_is_one(fmpq_denref(out)) || fmpz_sgn(fmpq_numref(out)) < 0 ||
            fmpz_cmp_si(fmpq_numref(out), 62) > 0) {
            errat(I, SP_DIAG_SHAPE, e->loc, "integer power out of range");
            return 0;
        }
        v = fmpz_get_si(fmpq_numref(out));
        if (!eval_rat_as(I, e->a, rank, real, out))
            return 0;
        fmpq_pow_si(out, out, (slong)v);
        return 1;
    }
    int d = real && e->kind == SP_AST_NAME && !ivar_find(I, e->name, &v) ? sp_dim_find(I->C, e->name)
                                                                           : -1;
    if (d >= 0) {
        fmpq_set_si(out, I->C->dims[d].real, 1);
        return 1;
    }
    /* a mesh axis the cutoff checks smaller: its real size (docs/soundness.md, "Mesh cutoff") */
    int ax = real && I->is_plan && e->kind == SP_AST_NAME && !ivar_find(I, e->name, &v)
                 ? sp_mesh_axis(&I->C->mesh, e->name)
                 : -1;
    if (ax >= 0 && I->C->mesh.real[ax] > 0) {
        fmpq_set_si(out, I->C->mesh.real[ax], 1);
        return 1;
    }
    if (!eval_int(I, e, rank, &v))
        return 0;
    fmpq_set_si(out, v, 1);
    return 1;
}

static int eval_rat(interp_t *I, const sp_ast_expr_t *e, int64_t rank, fmpq_t out)
{
    return eval_rat_as(I, e, rank, 0, out);
}

/* A size expression used as a value into out: at the checked sizes first, where the program's
   decisions are made (a division that is not whole there stops the run), then its dims at
   their real sizes, which the reduction keeps from every decision of the program but the
   shapes (docs/soundness.md "Sizes as values"); a value that differs is noted
   (C->value_real). */
static int value_rat(interp_t *I, const sp_ast_expr_t *e, int64_t rank, fmpq_t out)
{
    fmpq_t c;
    fmpq_init(c);
    int ok = eval_rat(I, e, rank, c) && eval_rat_as(I, e, rank, 1, out);
    if (ok && !fmpq_equal(out, c))
        sp_note_value_real(I->C, "a size", e->loc);
    fmpq_clear(c);
    return ok;
}

/* ---- layouts -------------------------------------------------------------------------------- */

int resolve_axes(interp_t *I, const sp_ast_name_t *names, size_t n, sp_axes_t *out,
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
int resolve_layout(interp_t *I, const sp_ast_layout_t *al, sp_layout_t *L)
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
    /* a pending max/min is modelled by one decomposition (every rank holds the value itself),
       sound for values that are only reduced (docs/soundness.md, "Stages"); beside another
       entry that model is not one the real parts satisfy (max then sum is no sum then max),
       so such a layout stays its own single entry */
    for (int k = 0; k < L->npartial && L->npartial > 1; k++)
        if (L->pop[k] == SP_RED_MAX || L->pop[k] == SP_RED_MIN) {
            errat(I, SP_DIAG_LAYOUT, al->partials[k].op.loc,
                  "a pending %s must be the layout's only partial entry (the checker models it by "
                  "one decomposition, which does not combine with other entries)",
                  sp_red_name(L->pop[k]));
            return 0;
        }
    return 1;
}

void shape_str(const int64_t *s, int n, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

void cut_model_value(sp_check_t *C, sp_binding_t *b, const char *name, sp_tensor_t *fresh)
{
    if (C->nmorig == C->amorig) {
        C->amorig = C->amorig ? 2 * C->amorig : 16;
        C->morig = flint_realloc(C->morig, (size_t)C->amorig * sizeof(sp_binding_t));
    }
    sp_binding_t *o = &C->morig[C->nmorig++];
    o->name = sp_strdup(name);
    o->loc = b->loc;
    o->scope = 0;
    o->rloc = NULL;
    o->pend = 0;
    o->state = 0;
    o->t = pval_dup(b->t, 1);
    sp_tensor_t f;
    sp_tensor_init(&f);
    fresh_like(C, name, &b->t[0], &f);
    sp_tensor_clear(&b->t[0]);
    b->t[0] = f;
    if (fresh)
        *fresh = f;
}

int layout_matches_model(interp_t *I, const sp_layout_t *L, const sp_tensor_t *mt,
                         sp_diag_code_t code, sp_loc_t loc, const char *name)
{
    int same = L->ndim == mt->ndim;
    for (int d = 0; d < L->ndim && same; d++)
        same = L->size[d] == mt->shape[d];
    if (!same) {
        char a[128], b[128];
        shape_str(L->size, L->ndim, a, sizeof a);
        shape_str(mt->shape, mt->ndim, b, sizeof b);
        errat(I, code, loc, "layout shape %s does not match model tensor '%s' of shape %s", a,
              name, b);
    }
    return same;
}

/* ---- names ---------------------------------------------------------------------------------- */

/* target of a lineage or output: NAME or INDEX of NAME with integer indices -> "w[3]" */
int target_name(interp_t *I, const sp_ast_expr_t *t, char *buf, size_t len)
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

/* ---- calls ---------------------------------------------------------------------------------- */

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

/* elementwise operators whose numeric operands are tensors (0-d constants), not attributes
   (src/reduce.c reads an operator's size arguments the same way) */
int sp_exec_numeric_is_tensor(const char *op)
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

/* An integer expression as a constant tensor, evaluated on each rank (rank.tp differs): a
   size used as a value (value_rat). */
static sp_status_t int_pval(interp_t *I, const sp_ast_expr_t *e, pval_t *out)
{
    pval_t p = pval_new(I->nranks);
    fmpq_t q;
    fmpq_init(q);
    for (int64_t r = 0; r < I->nranks; r++) {
        if (!I->active[r])
            continue;
        if (!value_rat(I, e, r, q)) {
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
int make_attr(interp_t *I, const sp_ast_arg_t *arg, int64_t rank, int value, sp_attr_t *a)
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
    /* a value the operator computes with (`scale(x, c = K)`, `pow(x, K)`, an optimizer's lr):
       a size used as a value (value_rat) */
    if (value)
        return value_rat(I, v, rank, a->num);
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
        return pos == 0 || sp_exec_numeric_is_tensor(op);
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
                if (st == SP_OK && !push_ivar(I, f->params[i].str, f->params[i].loc, ints[i]))
                    st = SP_ERR_INPUT;
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
        uint8_t *save_fn_active = I->fn_active;
        I->fn_active = flint_malloc((size_t)I->nranks);
        memcpy(I->fn_active, I->active, (size_t)I->nranks);
        if (st == SP_OK)
            st = exec_block(I, &f->body);
        flint_free(I->fn_active);
        I->fn_active = save_fn_active;
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

/* ---- replicas: ranks that apply an operator to the same arguments --------------------------- */

/* Do ranks a and b hold the same tensors (same shapes, same expression nodes) in in[0..n)? */
static int same_tensors(pval_t *in, int n, int64_t a, int64_t b)
{
    for (int k = 0; k < n; k++) {
        const sp_tensor_t *x = &in[k][a], *y = &in[k][b];
        if (x->ndim != y->ndim || x->ndim < 0 ||
            memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)) != 0 ||
            memcmp(x->pos, y->pos, (size_t)x->ndim * sizeof(sp_pos_t)) != 0)
            return 0; /* offsets too (src/ops_pos.c): hollow elements agree where they do not */
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

/* An operator or a collective failed on a size not divisible by another: src/check.c
   run_divisible() may grow the reduced sizes and run again. */
void sp_note_divisible(sp_check_t *C, const sp_op_err_t *err)
{
    if (err->div_by > 1) {
        C->div_size = err->div_size;
        C->div_by = err->div_by;
        C->div_min = err->div_min > 1 ? err->div_min : 1;
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
    int nt = 0, na = 0, attr_seen = 0;
    sp_status_t st = SP_OK;
    for (size_t i = 0; i < n && st == SP_OK; i++) {
        int is_t = arg_is_tensor(I, name, &e->args[i], i);
        if (is_t && attr_seen && !e->args[i].key.str) {
            /* reshape([2*N], x): operands first, then attributes (as the reference executor) */
            errat(I, SP_DIAG_SHAPE, e->args[i].value->loc,
                  "%s: a tensor argument after a non-tensor argument", name);
            st = SP_ERR_INPUT;
            break;
        }
        if (!is_t && !e->args[i].key.str)
            attr_seen = 1;
        if (is_t) {
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
        /* the attributes that are values (a size there is used as a value: make_attr), by
           keyword or by position among the positional ones */
        int *is_value = flint_calloc((size_t)(na ? na : 1), sizeof(int));
        for (int k = 0, pos = 0; k < na; k++) {
            fmpq_init(pattrs[k].num);
            fmpq_init(attrs[k].num);
            const char *key = attr_args[k]->key.str;
            is_value[k] = sp_ops_attr_is_value(name, key, key ? -1 : pos);
            pos += key == NULL;
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
                if (!make_attr(I, attr_args[k], r, is_value[k], &attrs[k])) {
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
                C->E->force_hollow = e == I->hollow_at;
                sp_op_env_t env = sp_pos_env(C);
                int applied = sp_ops_apply_env(C->E, &env, name, ins, nt, attrs, na,
                                               C->opt.max_elements, &res[r], &err);
                C->E->force_hollow = 0;
                sp_note_op(C, &err, e->loc);
                C->pos_side = I->is_plan;
                if (applied && nt > 0)
                    sp_refine_pos(C, e, name, attr_args, attrs, na, ins, nt, &res[r]);
                if (applied) {
                    sp_pos_note(C, &res[r], e->loc);
                    sp_members_masks(C, &res[r], ins, nt);
                }
                if (!applied) {
                    /* an unknown attribute: at its keyword */
                    sp_loc_t at = err.attr >= 0 && err.attr < na && attr_args[err.attr]->key.str
                                      ? attr_args[err.attr]->key.loc
                                      : e->loc;
                    errat(I, err.elements ? SP_DIAG_ELEMENTS : SP_DIAG_SHAPE, at, "%s",
                          err.msg[0] ? err.msg : "bad operator use");
                    sp_note_divisible(C, &err);
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
        flint_free(is_value);
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

/* ---- expressions ---------------------------------------------------------------------------- */

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
        sp_op_env_t env = sp_pos_env(I->C);
        int applied = sp_ops_apply_env(I->C->E, &env, op, tmp, nin, attrs, nattr,
                                       I->C->opt.max_elements, &res[r], &err);
        sp_note_op(I->C, &err, loc);
        if (applied) {
            sp_pos_note(I->C, &res[r], loc);
            sp_members_masks(I->C, &res[r], tmp, nin);
        }
        if (!applied) {
            errat(I, err.elements ? SP_DIAG_ELEMENTS : SP_DIAG_SHAPE, loc, "%s", err.msg);
            sp_note_divisible(I->C, &err);
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

/* A state input read here is read on every active rank: that rank holds a replica to update. */
static void note_read(interp_t *I, const sp_binding_t *b)
{
    if (!I->is_plan || b->state <= 0)
        return;
    /* every declaration of the name (declarations on different ranks share a binding): a rank
       reads the one it holds */
    for (int k = b->state; k > 0; k = I->states[k - 1].prev) {
        struct state_in *si = &I->states[k - 1];
        for (int64_t r = 0; r < I->nranks; r++)
            si->read[r] |= I->active[r] & si->holds[r];
    }
}

sp_status_t eval(interp_t *I, const sp_ast_expr_t *e, pval_t *out, int *vid)
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
        note_read(I, b);
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
        note_read(I, b);
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
            I->C->E->force_hollow = e == I->hollow_at;
            st = apply_simple(I, e->loc, binop_op(e->op), ins, vids, 2, NULL, 0, out, vid);
            I->C->E->force_hollow = 0;
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

/* ---- statements ----------------------------------------------------------------------------- */

static sp_status_t decl_input(interp_t *I, const sp_ast_stmt_t *s)
{
    /* model: input/param NAME[count] : shape -> fresh symbols named NAME[i,j] */
    if (s->lineage) { /* it would relate the model to itself: silently dropped before */
        errat(I, SP_DIAG_LINEAGE, s->lineage->loc, "lineage annotations belong in plans");
        return SP_ERR_INPUT;
    }
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
        errat(I, SP_DIAG_ELEMENTS, s->layout->loc,
              "tensor of %lld elements after shape reduction exceeds the limit %lld",
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
        for (int d = 0; d < v[0].ndim; d++) { /* extents as written (src/ops_pos.c) */
            int32_t id = (size_t)d < s->layout->ndims
                             ? sp_pos_monomial(I->C, NULL, s->layout->dims[d].size)
                             : 0;
            v[0].pos[d].ext = id ? id : sp_pos_fresh(I->C);
        }
        sp_source_symbols(I->C, &v[0], nm);
        int vid = tv_add(I, &v[0]);
        bind(I, nm, s->name.loc, v, vid);
    }
    sp_layout_clear(&L);
    return SP_OK;
}

/*
 * Model: after nm is bound, a cut point (a model tensor the plan relates) continues from fresh
 * symbols; the original value is kept for the stage.  Only the model's own tensors are cut, not
 * a function's locals (depth > 0), and a cut name must be assigned once: a relation compares
 * with the value kept and the plan continues from the fresh one, which must be the same
 * tensor's (a model that rebinds h, `h, s = g(h)`, would compare one h and continue another).
 */
static sp_status_t model_cut(interp_t *I, const char *nm, sp_loc_t loc)
{
    sp_check_t *C = I->C;
    if (I->depth > 0 || !is_cut(C, nm))
        return SP_OK;
    for (int k = 0; k < C->nmorig; k++)
        if (strcmp(C->morig[k].name, nm) == 0) {
            errat(I, SP_DIAG_LINEAGE, loc,
                  "model tensor '%s' is assigned again here (first at line %u), and the plan "
                  "relates it: relate a tensor the model assigns once (an array element such as "
                  "%s[l] in a loop)",
                  nm, (unsigned)C->morig[k].loc.line, nm);
            return SP_ERR_INPUT;
        }
    sp_binding_t *b = lookup(I, nm);
    sp_tensor_t f;
    cut_model_value(C, b, nm, &f);
    int fv = tv_add(I, &f);
    /* the tape keeps the original producer; later uses see the fresh value, and the
       backward pass hands the fresh value's adjoint to the original */
    int ov = I->vid_of_binding[b - *I->vals];
    I->vid_of_binding[b - *I->vals] = fv;
    I->alias = flint_realloc(I->alias, (size_t)(I->nalias + 1) * sizeof(*I->alias));
    I->alias[I->nalias][0] = fv;
    I->alias[I->nalias][1] = ov;
    I->nalias++;
    return SP_OK;
}

/*
 * Model: an assignment at the model's top level (loops included, functions' locals not) to a
 * name the model declares as an `input` or `param`.  A plan's declaration of that name, and
 * `train`'s gradient and update, take the name's value: after `x += e` or `x, s = f(x)` that
 * would be a value the model computes, handed to the plan as given (a review's find,
 * 2026-12-04).  1 (after an error) if so.
 */
static int model_rebinds_input(interp_t *I, const char *nm, sp_loc_t loc)
{
    int64_t v;
    if (ivar_find(I, nm, &v)) { /* one name, two readings (helper-64's review) */
        errat(I, SP_DIAG_NAME, loc,
              "'%s' is a loop variable or an integer parameter here and is assigned a tensor: "
              "rename one of them",
              nm);
        return 1;
    }
    if (I->is_plan || I->depth > 0 || !sp_model_declares(I->C, nm, 0))
        return 0;
    errat(I, SP_DIAG_NAME, loc,
          "'%s' is an input or parameter of the model and is assigned here: a model does not "
          "change what it is given (name the new value otherwise: h1 = f(h))",
          nm);
    return 1;
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
            if (st == SP_OK && (!target_name(I, s->targets[k], nm, sizeof nm) ||
                                model_rebinds_input(I, nm, s->targets[k]->loc)))
                st = SP_ERR_INPUT;
            if (st == SP_OK) {
                if (!bind(I, nm, s->targets[k]->loc, rets[k], rvids[k]))
                    st = SP_ERR_INPUT;
                else if (!I->is_plan)
                    st = model_cut(I, nm, s->targets[k]->loc);
            } else {
                pval_free(rets[k], I->nranks);
            }
        }
        flint_free(rets);
        flint_free(rvids);
        return st;
    }
    char nm[512];
    if (!target_name(I, s->targets[0], nm, sizeof nm) ||
        model_rebinds_input(I, nm, s->targets[0]->loc))
        return SP_ERR_INPUT;
    pval_t v;
    int vid;
    /* a plain alias may rename a pending max/min (the new name holds it too) */
    const sp_binding_t *src = s->kind == SP_STMT_ASSIGN ? binding_of(I, s->value) : NULL;
    int src_pend = src && src->pend;
    sp_red_t src_op = src_pend ? src->pend_op : SP_RED_SUM;
    sp_axes_t src_axes = src_pend ? src->pend_axes : (sp_axes_t){0, {0}};
    I->pend_ok = src_pend;
    /* --shard: the last operator of a model cut point that only other shards' stages relate
       is computed hollow (the tape keeps its operands for the backward pass, real; the hollow
       output is rebuilt where a VJP needs it: src/ops.c) */
    int hollow = !I->is_plan && I->depth == 0 && s->kind == SP_STMT_ASSIGN &&
                 sp_shard_skips_model(I->C, nm) && sp_expr_hollow(I->C->E) != SP_EXPR_NONE;
    I->hollow_at = hollow ? s->value : NULL;
    st = eval(I, s->value, &v, &vid);
    I->hollow_at = NULL;
    I->pend_ok = 0;
    if (st != SP_OK)
        return st;
    if (s->kind == SP_STMT_ACCUM) {
        sp_binding_t *b = lookup(I, nm);
        if (b && b->pend) { /* `+=` uses the old value */
            pending_error(I, s->targets[0]->loc, b, "used here");
            pval_free(v, I->nranks);
            return SP_ERR_INPUT;
        }
        if (b) {
            note_read(I, b); /* the old value is read: a state input's copy is used */
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
    /* (an inferred relation of a pending max/min is not proposed: see the check below) */
    if (I->is_plan && !s->lineage && !src_pend && I->C->ninferred > 0 && s->ntargets == 1) {
        st = relate_inferred(I, s, nm, &v);
        if (st != SP_OK) {
            pval_free(v, I->nranks);
            return st;
        }
    }
    if (s->lineage && I->is_plan) {
        char mn[512];
        if (!target_name(I, s->lineage->target, mn, sizeof mn)) {
            pval_free(v, I->nranks);
            return SP_ERR_INPUT;
        }
        st = relate_l(I, SP_STAGE_LINEAGE, nm, s->targets[0]->loc, mn, s->lineage->target->loc,
                      s->lineage->layout, NULL, s->lineage->rows, NULL, &v);
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
    if (I->is_plan) {
        sp_layout_t L;
        if (s->lineage && resolve_layout(I, s->lineage->layout, &L)) {
            /* a cut continues from the decomposition its layout states; a pending max/min
               renamed into a relation is compared on each rank as the value itself (the
               checker's one decomposition), so the layout must reduce it the same way */
            mark_pending(I, &L);
            sp_layout_clear(&L);
            if (src_pend && !(I->bind_pend && I->bind_pend_op == src_op &&
                              same_axes(&I->bind_pend_axes, &src_axes))) {
                I->bind_pend = 0;
                pending_error(I, s->lineage->loc, src, "related under a layout without that entry");
                pval_free(v, I->nranks);
                return SP_ERR_INPUT;
            }
        } else if (src_pend) {
            I->bind_pend = 1;
            I->bind_pend_op = src_op;
            I->bind_pend_axes = src_axes;
        }
    }
    if (!bind(I, nm, s->targets[0]->loc, v, vid))
        return SP_ERR_INPUT;
    /* model: a cut point continues from fresh symbols */
    if (!I->is_plan)
        return model_cut(I, nm, s->targets[0]->loc);
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

sp_status_t exec_stmt(interp_t *I, const sp_ast_stmt_t *s)
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
            for (size_t j = 0; j < k; j++)
                if (strcmp(s->binds[j].name.str, s->binds[k].name.str) == 0) {
                    errat(I, SP_DIAG_LAYOUT, s->binds[k].name.loc,
                          "mesh axis '%s' is given twice in this 'on'", s->binds[k].name.str);
                    flint_free(save);
                    return SP_ERR_INPUT;
                }
            int64_t c;
            if (!eval_int(I, s->binds[k].value, -1, &c)) {
                flint_free(save);
                return SP_ERR_INPUT;
            }
            /* a coordinate off the mesh selects no rank: the block would silently never run */
            if (c < 0 || c >= C->mesh.size[ax]) {
                errat(I, SP_DIAG_LAYOUT, s->binds[k].value->loc,
                      "'on %s = %lld': the mesh axis '%s' has coordinates 0 to %lld",
                      s->binds[k].name.str, (long long)c, s->binds[k].name.str,
                      (long long)C->mesh.size[ax] - 1);
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
            /* nested loops are bounded in all, and a loop that builds no node still meets the
               run's --timeout (the store reads the clock only as it grows) */
            if (++I->iters > 1000000) {
                errat(I, SP_DIAG_LIMIT, s->loc, "loops of more than 10^6 iterations in all");
                return SP_ERR_INPUT;
            }
            if ((I->iters & 0xfff) == 0 && sp_ectx_deadline_passed(I->C->E)) {
                errat(I, SP_DIAG_LIMIT, s->loc, "the run's --timeout passed in this loop");
                return SP_ERR_INPUT;
            }
            if (!push_ivar(I, s->name.str, s->name.loc, v))
                return SP_ERR_INPUT;
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
        /* one return ends the call on every rank: inside a rank-dependent `if` or an `on`
           block the other ranks would return the same values (or another return would
           overwrite them all) */
        if (I->fn_active && memcmp(I->fn_active, I->active, (size_t)I->nranks) != 0) {
            errat(I, SP_DIAG_SYNTAX, s->loc,
                  "'return' where only some of the function's ranks are active (a rank-dependent "
                  "'if' or an 'on' block): a function returns on all its ranks at once; assign "
                  "the value in the branches and return it after them");
            return SP_ERR_INPUT;
        }
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

sp_status_t exec_block(interp_t *I, const sp_ast_block_t *b)
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

/* ---- the interpreter's state ---------------------------------------------------------------- */

void interp_clear(interp_t *I)
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
    for (int k = 0; k < I->nocc; k++)
        flint_free(I->occ_n[k]);
    flint_free(I->occ_stmt);
    flint_free(I->occ_n);
    if (I->is_plan) {
        for (int k = 0; k < I->npvals; k++) {
            flint_free(I->pvals[k].name);
            flint_free(I->pvals[k].rloc);
            pval_free(I->pvals[k].t, I->nranks);
        }
        flint_free(I->pvals);
        sp_nameidx_free(&I->pindex);
        for (int k = 0; k < I->nstates; k++) {
            flint_free(I->states[k].name);
            sp_layout_clear(&I->states[k].L);
            flint_free(I->states[k].read);
            flint_free(I->states[k].holds);
        }
        flint_free(I->states);
    }
}
