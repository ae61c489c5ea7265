/* infer.c: lineage proposals from one numeric run of the reference executor (--infer-lineage). */
#include <flint/flint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec_int.h"
#include "sbuf.h"
#include "hash.h"

/*
 * A plan written without intermediate lineage (`~ T : L`) would be executed symbolically from
 * its inputs to its outputs, and the expressions grow with the depth.  Inference proposes the
 * cut points instead, without executing anything symbolically:
 *
 * 1. The reference executor (src/ref/, independent of the checker's interpreter) runs the model
 *    and every rank of the plan once, at the checked sizes and on the checked mesh, on seeded
 *    random inputs, and keeps every model tensor and every plan assignment without lineage on
 *    every rank, in execution order with its occurrence number (loops run a statement many
 *    times), as approximate numbers.
 * 2. Every element of every model tensor (not inputs, parameters or optimizer state) is indexed
 *    by its value.  For each plan assignment (statement, occurrence), the value of one element
 *    on its first rank is looked up; each model tensor holding that value (or, for a pending
 *    sum, the sum of that element over a mesh axis) fixes where the element sits, from which a
 *    layout is derived: each dim whole, sharded over one mesh axis, or a row slice of dim 0
 *    (micro-batches), optionally sharded within; at most one pending sum, over one axis or a
 *    group of two (a loss shard of dp x ep ranks).  The
 *    layout is kept when every element on every rank fits.
 * 3. The first fit (a model tensor of the same name first) becomes a proposal: the checker then
 *    relates the assignment exactly as if the plan had written the annotation (src/lineage.c,
 *    relate_inferred), and the model is cut there.
 *
 * The numbers are approximations (doubles from exact rationals or Arb balls): they only choose
 * proposals.  Every proposal is a stage the engine proves exactly; a wrong one fails or stays
 * unknown, and a failure is a verdict only with an end-to-end witness of the reference executor
 * (src/crosscheck.c).  docs/soundness.md, "Lineage inference".
 */

#define INFER_CANDIDATES 48 /* model positions tried per plan assignment */
/* Values match within this relative difference: the observed doubles are exact values (or
   256-bit balls) rounded once, so equal values agree to 1e-16 and a pending sum of a few doubles
   to about 1e-15; a looser bound took a loss that differs by 5e-13 (eps 1e-6 against
   1/(10^6 + 1) on one rank) for the model's, and the localization went past the bug. */
#define INFER_RTOL 1e-14
#define INFER_SEEDS 3 /* observing runs tried while the run is UNDECIDED */
/* Below this magnitude a value is taken for 0: an exact zero computed through exp or log is an
   Arb ball around 0 whose midpoint is a tiny number (1e-80 at the observing run's 256 bits). */
#define INFER_ZERO 1e-60

typedef struct {
    uint64_t key;
    uint32_t tensor;
    int64_t elem;
    int64_t next; /* the next entry of the same bucket, or -1 */
} ientry_t;

typedef struct {
    ientry_t *e;
    int64_t n, cap;
    int64_t *head; /* bucket -> first entry, or -1 */
    uint64_t mask;
} index_t;

/* A value rounded to 36 bits of mantissa, hashed; 0 for no number (never indexed). */
static uint64_t vkey(double v)
{
    if (!isfinite(v) || fabs(v) < INFER_ZERO)
        return 0;
    int e;
    double m = frexp(v, &e);
    int64_t q = (int64_t)llround(m * 68719476736.0); /* 2^36 */
    uint64_t k = sp_mix64((uint64_t)q ^ ((uint64_t)(e + 2048) << 48));
    return k ? k : 1;
}

static int close_to(double a, double b)
{
    if (!isfinite(a) || !isfinite(b))
        return 0;
    double d = fabs(a - b), m = fmax(fabs(a), fabs(b));
    return d <= INFER_RTOL * m || m < INFER_ZERO;
}

static void index_add(index_t *X, uint64_t key, uint32_t tensor, int64_t elem)
{
    if (X->n == X->cap) {
        X->cap = X->cap ? 2 * X->cap : 1024;
        X->e = flint_realloc(X->e, (size_t)X->cap * sizeof(ientry_t));
    }
    X->e[X->n] = (ientry_t){key, tensor, elem, -1};
    X->n++;
}

static void index_build(index_t *X)
{
    uint64_t nb = 1024;
    while (nb < 2 * (uint64_t)X->n)
        nb *= 2;
    X->mask = nb - 1;
    X->head = flint_malloc(nb * sizeof(int64_t));
    for (uint64_t i = 0; i < nb; i++)
        X->head[i] = -1;
    for (int64_t i = X->n - 1; i >= 0; i--) {
        uint64_t b = X->e[i].key & X->mask;
        X->e[i].next = X->head[b];
        X->head[b] = i;
    }
}

static void index_clear(index_t *X)
{
    flint_free(X->e);
    flint_free(X->head);
}

/* Is name a model input, parameter or optimizer state (never a cut point)? */
static int is_leaf(const sp_check_t *C, const char *name)
{
    if (strncmp(name, "next.", 5) == 0 || strncmp(name, "adam.", 5) == 0 ||
        strncmp(name, "momentum.", 9) == 0)
        return 1;
    return sp_model_declares(C, name, 0);
}

/* One execution of a plan assignment: its observation on each rank (NULL where it did not run). */
typedef struct {
    const sp_ast_stmt_t *stmt;
    int occ;
    const sp_ref_obs_t **on; /* [nranks] */
    int64_t order;           /* the least place of an observation in a rank's list */
    int move;                /* the assignment only moves values (moves_only) */
    int64_t id;              /* its place before sorting */
    /* what its values are, for localizing a wrong plan: FIT_* */
    int fit;
    uint32_t fit_pend;       /* FIT_PENDING, FIT_SCALED: the pending axes (a bit each), or 0 */
    double scale;            /* FIT_SCALED: the values are scale x the model's */
    const char *fit_name;    /* the model tensor */
} group_t;

enum { FIT_NONE = 0, FIT_MATCH, FIT_PENDING, FIT_SCALED };

typedef struct {
    sp_check_t *C;
    const sp_mesh_t *m;
    const sp_ref_obs_list_t *model;
    int64_t *order; /* per model tensor: its place in the model's computation */
    int64_t *nslot; /* names of model tensors, hashed (open addressing) */
    uint64_t nmask;
    int diverged;   /* the observing run found the outputs different: a wrong plan */
    int debug;      /* SP_INFER_DEBUG set: every proposal on stderr (read once) */
    index_t X;
    index_t Xs;     /* the optimizer's state (next.w, adam.m.w, ...): never proposed, only
                       recognized where a wrong plan's outputs are localized (rank_matches) */
    int64_t nranks;
} infer_t;

/*
 * Of model tensors with equal values (x[1] = r + d makes grad.x[1] and grad.d equal) the one
 * computed first is the relation to propose: the others are computed from it, so cutting it
 * reaches them, while cutting a later one leaves the earlier's other uses uncut.  The forward
 * tensors come in the order the model binds them; the gradient of the tensor bound at place i
 * of n is computed at place n + (n - i) (backward runs in reverse).
 */
static int64_t *model_order(const sp_ref_obs_list_t *M, int64_t **slotp, uint64_t *maskp)
{
    int64_t n = (int64_t)M->n, *ord = flint_malloc((size_t)(n + 1) * sizeof(int64_t));
    uint64_t hm = 64;
    while (hm < 2 * (uint64_t)n)
        hm *= 2;
    int64_t *slot = flint_malloc(hm * sizeof(int64_t));
    for (uint64_t i = 0; i < hm; i++)
        slot[i] = -1;
    for (int64_t t = 0; t < n; t++) {
        uint64_t h = sp_str_hash(M->o[t].name) & (hm - 1);
        while (slot[h] >= 0)
            h = (h + 1) & (hm - 1);
        slot[h] = t;
    }
    for (int64_t t = 0; t < n; t++) {
        ord[t] = t;
        const char *nm = M->o[t].name;
        if (strncmp(nm, "grad.", 5) != 0)
            continue;
        uint64_t h = sp_str_hash(nm + 5) & (hm - 1);
        while (slot[h] >= 0 && strcmp(M->o[slot[h]].name, nm + 5) != 0)
            h = (h + 1) & (hm - 1);
        if (slot[h] >= 0)
            ord[t] = n + (n - slot[h]);
    }
    *slotp = slot;
    *maskp = hm - 1;
    return ord;
}

/* The layout being fitted: per dim an axis (-1 whole), dim 0 optionally a row slice. */
typedef struct {
    int nd;
    int axis[SP_MAX_DIMS];  /* the (major) axis, or -1 */
    int axis2[SP_MAX_DIMS]; /* a second (minor) axis of the same dim, or -1 (S@(cp,tp)) */
    int rows;         /* dim 0 is rows [lo, lo + n) of the model's dim 0 */
    int64_t lo, n;
    int inner;        /* dim 0 is rows [lo, lo + local) of each axis-shard of the model's dim 0
                         (a micro-batch of a data-parallel shard): localization only, the
                         language has no relation for it */
    uint32_t pend;    /* a pending sum over these axes (a bit each), or 0 */
    int shapes_only;  /* fit_enum: the local shapes fit, whatever the values */
    int64_t only1;    /* > 0: the fit is checked on rank only1 - 1 alone (localization) */
    double scale;     /* the plan's values are scale x the model's (0: 1) */
} fit_t;

static int64_t coord(const sp_mesh_t *m, int64_t r, int a)
{
    int64_t c = r;
    for (int b = m->naxes - 1; b > a; b--)
        c /= m->size[b];
    return c % m->size[a];
}

/* The rank that differs from r only in coordinate a, which is k. */
static int64_t with_coord(const sp_mesh_t *m, int64_t r, int a, int64_t k)
{
    int64_t stride = 1;
    for (int b = m->naxes - 1; b > a; b--)
        stride *= m->size[b];
    return r + (k - coord(m, r, a)) * stride;
}

/* element e of rank r's value, summed over the pending axes from axis a on (r is the group's
   member 0 along them); NaN if a member is missing */
static double pvalue_from(const infer_t *F, const group_t *g, uint32_t pend, int a, int64_t r,
                          int64_t e)
{
    while (a < F->m->naxes && !(pend >> a & 1u))
        a++;
    if (a == F->m->naxes)
        return g->on[r] ? g->on[r]->v[e] : NAN;
    double s = 0;
    for (int64_t k = 0; k < F->m->size[a]; k++)
        s += pvalue_from(F, g, pend, a + 1, with_coord(F->m, r, a, k), e);
    return s;
}

static double pvalue(const infer_t *F, const group_t *g, const fit_t *f, int64_t r, int64_t e)
{
    return pvalue_from(F, g, f->pend, 0, r, e);
}

/* The pending sums tried, in order: none, each axis, each pair of axes (bit masks); n of them. */
static int pend_sets(const sp_mesh_t *m, uint32_t *out)
{
    int n = 0;
    out[n++] = 0;
    for (int a = 0; a < m->naxes; a++)
        if (m->size[a] > 1)
            out[n++] = 1u << a;
    for (int a = 0; a < m->naxes; a++)
        for (int b = a + 1; b < m->naxes; b++)
            if (m->size[a] > 1 && m->size[b] > 1)
                out[n++] = 1u << a | 1u << b;
    return n;
}

/* the names of the axes of a pending set: "dp" or "(dp, ep)" */
static void pend_str(const sp_mesh_t *m, uint32_t pend, char *buf, size_t len)
{
    int n = 0;
    size_t k = 0;
    for (int a = 0; a < m->naxes; a++)
        n += pend >> a & 1u;
    buf[0] = 0;
    for (int a = 0, i = 0; a < m->naxes && k < len; a++) {
        if (!(pend >> a & 1u))
            continue;
        i++;
        k += (size_t)snprintf(buf + k, len - k, "%s%s%s%s", i == 1 && n > 1 ? "(" : "",
                              i > 1 ? ", " : "", m->name[a], i == n && n > 1 ? ")" : "");
    }
}

/* Did every rank of r0's group along axis a run the assignment? */
static int along(const infer_t *F, const group_t *g, int64_t r0, int a)
{
    for (int64_t k = 0; k < F->m->size[a]; k++)
        if (g->on[with_coord(F->m, r0, a, k)] == NULL)
            return 0;
    return 1;
}

/* May dim d be sharded over axis a: an axis of more than one rank, along which every rank ran
   the assignment (a statement of `on pp = 0` holds no shard of pp), used by no earlier dim nor
   the pending sum? */
static int axis_free(const infer_t *F, const group_t *g, const fit_t *f, int64_t r0, int a, int d)
{
    if ((f->pend >> a & 1u) || F->m->size[a] == 1 || !along(F, g, r0, a))
        return 0;
    for (int e = 0; e < d; e++)
        if (f->axis[e] == a || f->axis2[e] == a)
            return 0;
    return 1;
}

/* Do the local shapes of every rank that ran the assignment fit (values not compared)? */
static int shapes_hold(const infer_t *F, const group_t *g, const fit_t *f, const sp_ref_obs_t *T)
{
    for (int64_t r = 0; r < F->nranks; r++) {
        const sp_ref_obs_t *o = g->on[r];
        if (o == NULL)
            continue;
        for (int d = 0; d < f->nd; d++) {
            int64_t parts = 1;
            if (f->axis[d] >= 0)
                parts *= F->m->size[f->axis[d]];
            if (f->axis2[d] >= 0)
                parts *= F->m->size[f->axis2[d]];
            if (o->sh[d] * parts != T->sh[d])
                return 0;
        }
    }
    return 1;
}

/* Does the fit hold on every rank that ran the assignment (every element)? */
static int fit_holds(const infer_t *F, const group_t *g, const fit_t *f, const sp_ref_obs_t *T)
{
    int nd = f->nd;
    for (int64_t r = 0; r < F->nranks; r++) {
        const sp_ref_obs_t *o = g->on[r];
        if (o == NULL || (f->only1 > 0 && r != f->only1 - 1))
            continue;
        int member0 = 1;
        for (int a = 0; a < F->m->naxes; a++)
            if ((f->pend >> a & 1u) && coord(F->m, r, a) != 0)
                member0 = 0;
        if (!member0)
            continue; /* the group's sum is checked once, on its member 0 */
        int64_t off[SP_MAX_DIMS], n = 1;
        for (int d = 0; d < nd; d++) {
            int64_t full = d == 0 && f->rows ? f->n : T->sh[d];
            int64_t parts = 1, k = 0;
            if (f->axis[d] >= 0) {
                parts = F->m->size[f->axis[d]];
                k = coord(F->m, r, f->axis[d]);
            }
            if (f->axis2[d] >= 0) {
                parts *= F->m->size[f->axis2[d]];
                k = k * F->m->size[f->axis2[d]] + coord(F->m, r, f->axis2[d]);
            }
            int64_t ls = full / parts;
            if (d == 0 && f->inner) {
                if (f->lo < 0 || f->lo + o->sh[0] > ls)
                    return 0; /* the rows must lie within this rank's shard */
                off[d] = k * ls + f->lo;
                ls = o->sh[0];
                n *= ls;
                continue;
            }
            if (o->sh[d] != ls)
                return 0;
            off[d] = k * ls + (d == 0 && f->rows ? f->lo : 0);
            n *= ls;
        }
        for (int64_t e = 0; e < n; e++) {
            int64_t rem = e, pos = 0, stride = 1;
            for (int d = nd - 1; d >= 0; d--) {
                int64_t ix = rem % o->sh[d];
                rem /= o->sh[d];
                pos += (ix + off[d]) * stride;
                stride *= T->sh[d];
            }
            if (!close_to(pvalue(F, g, f, r, e), f->scale != 0 ? f->scale * T->v[pos] : T->v[pos]))
                return 0;
        }
    }
    return 1;
}

/*
 * Fit a layout for group g against model tensor T, given that element e0 of rank r0 (summed over
 * f->pend) sits at position pos of T: choose each dim's axis (and dim 0's rows) to match the
 * offsets, then check everything.  Tries the choices depth-first; 1 with *f filled on a fit.
 */
static int fit_dims(const infer_t *F, const group_t *g, const sp_ref_obs_t *T, int64_t r0,
                    const int64_t *g0, const int64_t *l0, fit_t *f, int d)
{
    const sp_mesh_t *m = F->m;
    const sp_ref_obs_t *o = g->on[r0];
    if (d == f->nd)
        return fit_holds(F, g, f, T);
    int64_t ls = o->sh[d], full = T->sh[d], off = g0[d] - l0[d];
    /* whole */
    f->axis[d] = f->axis2[d] = -1;
    if (d == 0)
        f->rows = f->inner = 0;
    if (ls == full && off == 0 && fit_dims(F, g, T, r0, g0, l0, f, d + 1))
        return 1;
    /* sharded over one axis, not used by another dim or the pending sum, along which every
       rank ran the assignment (a statement of `on pp = 0` holds no shard of pp) */
    for (int a = 0; a < m->naxes; a++) {
        if (!axis_free(F, g, f, r0, a, d))
            continue;
        f->axis[d] = a;
        if (d == 0)
            f->rows = f->inner = 0;
        if (ls * m->size[a] == full && off == coord(m, r0, a) * ls &&
            fit_dims(F, g, T, r0, g0, l0, f, d + 1))
            return 1;
        /* rows [lo, lo + ls*size) of dim 0, sharded over a */
        if (d == 0 && ls * m->size[a] < full) {
            f->rows = 1;
            f->n = ls * m->size[a];
            f->lo = off - coord(m, r0, a) * ls;
            if (f->lo >= 0 && f->lo + f->n <= full && fit_dims(F, g, T, r0, g0, l0, f, d + 1))
                return 1;
            f->rows = 0;
            /* rows [lo, lo + ls) within each shard of a (a micro-batch of a dp shard) */
            int64_t shard = full / m->size[a];
            f->inner = 1;
            f->lo = off - coord(m, r0, a) * shard;
            if (full % m->size[a] == 0 && f->lo >= 0 && f->lo + ls <= shard &&
                fit_dims(F, g, T, r0, g0, l0, f, d + 1))
                return 1;
            f->inner = 0;
        }
    }
    /* sharded over two axes, major to minor (sequence parallelism: S@(cp,tp)) */
    for (int a = 0; a < m->naxes; a++)
        for (int b = 0; b < m->naxes; b++) {
            if (a == b || !axis_free(F, g, f, r0, a, d) || !axis_free(F, g, f, r0, b, d))
                continue;
            f->axis[d] = a;
            f->axis2[d] = b;
            if (d == 0)
                f->rows = f->inner = 0;
            if (ls * m->size[a] * m->size[b] == full &&
                off == (coord(m, r0, a) * m->size[b] + coord(m, r0, b)) * ls &&
                fit_dims(F, g, T, r0, g0, l0, f, d + 1))
                return 1;
        }
    f->axis[d] = f->axis2[d] = -1;
    /* rows [off, off + ls) of dim 0, whole */
    if (d == 0 && ls < full && off >= 0 && off + ls <= full) {
        f->rows = 1;
        f->inner = 0;
        f->n = ls;
        f->lo = off;
        if (fit_dims(F, g, T, r0, g0, l0, f, d + 1))
            return 1;
        f->rows = 0;
    }
    return 0;
}

/*
 * Fit a layout against T without an anchor element (a 0/1 mask has no telling value): each
 * dim whole or sharded over one or two free axes, at the offsets the ranks' coordinates give.
 */
static int fit_enum(const infer_t *F, const group_t *g, const sp_ref_obs_t *T, int64_t r0,
                    fit_t *f, int d)
{
    const sp_mesh_t *m = F->m;
    if (d == f->nd)
        return f->shapes_only ? shapes_hold(F, g, f, T) : fit_holds(F, g, f, T);
    int64_t ls = g->on[r0]->sh[d], full = T->sh[d];
    f->axis[d] = f->axis2[d] = -1;
    if (ls == full && fit_enum(F, g, T, r0, f, d + 1))
        return 1;
    for (int a = 0; a < m->naxes; a++) {
        if (!axis_free(F, g, f, r0, a, d))
            continue;
        f->axis[d] = a;
        f->axis2[d] = -1;
        if (ls * m->size[a] == full && fit_enum(F, g, T, r0, f, d + 1))
            return 1;
        for (int b = 0; b < m->naxes; b++) {
            if (b == a || !axis_free(F, g, f, r0, b, d))
                continue;
            f->axis2[d] = b;
            if (ls * m->size[a] * m->size[b] == full && fit_enum(F, g, T, r0, f, d + 1))
                return 1;
        }
    }
    f->axis[d] = f->axis2[d] = -1;
    return 0;
}

static void record(sp_check_t *C, const group_t *g, const sp_ref_obs_t *T, const fit_t *f)
{
    C->inferred = flint_realloc(C->inferred, (size_t)(C->ninferred + 1) * sizeof(*C->inferred));
    sp_inferred_t *x = &C->inferred[C->ninferred++];
    x->stmt = g->stmt;
    x->occ = g->occ;
    x->model_name = sp_strdup(T->name);
    sp_layout_init(&x->layout);
    x->layout.ndim = f->nd;
    for (int d = 0; d < f->nd; d++) {
        x->layout.size[d] = d == 0 && f->rows ? f->n : T->sh[d];
        if (f->axis[d] >= 0) {
            x->layout.axes[d].n = 1;
            x->layout.axes[d].axis[0] = f->axis[d];
        }
        if (f->axis2[d] >= 0)
            x->layout.axes[d].axis[x->layout.axes[d].n++] = f->axis2[d];
    }
    if (f->pend) {
        x->layout.npartial = 1;
        x->layout.pop[0] = SP_RED_SUM;
        x->layout.paxes[0].n = 0;
        for (int a = 0; a < SP_MAX_AXES; a++)
            if (f->pend >> a & 1u)
                x->layout.paxes[0].axis[x->layout.paxes[0].n++] = a;
    }
    x->rlo = f->rows ? f->lo : 0;
    x->rhi = f->rows ? f->lo + f->n : 0;
    x->order = g->order;
    x->move = g->move;
}

static void drop_at(sp_check_t *C, uint8_t *drop)
{
    int kept = 0;
    for (int i = 0; i < C->ninferred; i++) {
        if (drop[i]) {
            flint_free(C->inferred[i].model_name);
            sp_layout_clear(&C->inferred[i].layout);
        } else {
            C->inferred[kept++] = C->inferred[i];
        }
    }
    C->ninferred = kept;
}

/* proposals of model tensors withdrawn after a failing stage (src/check.c run_inferred) */
static void withdrawn(sp_check_t *C)
{
    uint8_t *drop = flint_calloc((size_t)C->ninferred + 1, 1);
    for (int i = 0; i < C->ninferred; i++)
        for (int j = 0; j < C->ninfer_drop && !drop[i]; j++)
            drop[i] = strcmp(C->inferred[i].model_name, C->infer_drop[j]) == 0;
    drop_at(C, drop);
    flint_free(drop);
}

/*
 * A model tensor is related where the plan first computes it (the least `order`), by that one
 * statement (its occurrences: the micro-batches' rows); later statements that compute it again
 * are not related to it, and if the first is a move, nothing is.  Pending sums and whole values
 * count apart (the all-reduce that completes a partial value is related too: its fresh value
 * replaces the sum of the parts), and so do row slices (a 1F1B schedule computes each
 * micro-batch's rows in a statement of its own).
 */
static void keep_first_statement(sp_check_t *C)
{
    uint8_t *drop = flint_calloc((size_t)C->ninferred + 1, 1);
    for (int i = 0; i < C->ninferred; i++) {
        const sp_inferred_t *x = &C->inferred[i], *first = x;
        for (int j = 0; j < C->ninferred; j++)
            if (C->inferred[j].order < first->order &&
                (C->inferred[j].layout.npartial > 0) == (x->layout.npartial > 0) &&
                C->inferred[j].rlo == x->rlo && C->inferred[j].rhi == x->rhi &&
                strcmp(C->inferred[j].model_name, x->model_name) == 0)
                first = &C->inferred[j];
        drop[i] = first->move || first->stmt != x->stmt;
    }
    drop_at(C, drop);
    flint_free(drop);
}

/*
 * A plan assignment that only moves values of one named tensor (a view, a slice, a gather or a
 * receive, possibly nested) gets no proposal: it relates nothing its operand does not, and cutting the
 * model tensor it matches separates it from the cut it was moved from (a backward pass that
 * recomputes `unsqueeze(h2)` from the cut h2 would meet a fresh xe = unsqueeze(h2) of its own).
 * A concatenation assembles values (the micro-batches of a step) and is proposed as any value.
 */
static int moves_only(const sp_ast_expr_t *e)
{
    static const char *const view[] = {"reshape", "view", "flatten", "squeeze", "unsqueeze",
                                       "transpose", "permute", "expand", "broadcast_to", "slice",
                                       "chunk", "split", "repeat", "contiguous", "all_gather",
                                       "all_to_all", "broadcast", "recv"};
    if (e->kind == SP_AST_NAME || e->kind == SP_AST_INDEX)
        return 1;
    if (e->kind != SP_AST_CALL)
        return 0;
    int is_view = 0;
    for (size_t i = 0; i < sizeof view / sizeof view[0] && !is_view; i++)
        is_view = strcmp(e->name, view[i]) == 0;
    if (!is_view)
        return 0;
    for (size_t i = 0; i < e->nargs; i++)
        if (e->args[i].value->kind == SP_AST_CALL && !moves_only(e->args[i].value))
            return 0;
    return 1;
}

static int all_equal(const double *v, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return n > 1;
}

/* the model tensor of this name, or NULL */
static const sp_ref_obs_t *named(const infer_t *F, const char *name)
{
    uint64_t h = sp_str_hash(name) & F->nmask;
    while (F->nslot[h] >= 0 && strcmp(F->model->o[F->nslot[h]].name, name) != 0)
        h = (h + 1) & F->nmask;
    return F->nslot[h] >= 0 ? &F->model->o[F->nslot[h]] : NULL;
}

/*
 * A wrong plan (the observing run found its outputs different) stops matching the model where
 * it goes wrong, and everything after would run uncut.  There a plan value of the same name as
 * a model tensor (the names of gen's plans and of most hand-written ones) is related to it by
 * its shape alone: the stage fails at the first such value that is wrong, which is where the
 * report points, and a relation wrongly proposed is withdrawn like any other (src/check.c).
 */
static int propose_named(infer_t *F, const group_t *g, int64_t r0)
{
    const sp_ref_obs_t *o = g->on[r0], *T = named(F, o->name);
    if (T == NULL || T->nd != o->nd || is_leaf(F->C, T->name))
        return 0;
    fit_t f;
    memset(&f, 0, sizeof f);
    f.nd = o->nd;
    f.pend = 0;
    f.shapes_only = 1;
    if (!fit_enum(F, g, T, r0, &f, 0))
        return 0;
    if (F->debug)
        fprintf(stderr, "infer: line %u occ %d by name -> %s\n", g->stmt->loc.line, g->occ, T->name);
    record(F->C, g, T, &f);
    return 1;
}

static int64_t obs_len(const sp_ref_obs_t *o)
{
    int64_t n = 1;
    for (int d = 0; d < o->nd; d++)
        n *= o->sh[d];
    return n;
}

/* The coordinates of row-major element e of o in l[] */
static void unravel(const sp_ref_obs_t *o, int64_t e, int64_t *l)
{
    for (int d = o->nd - 1; d >= 0; d--) {
        l[d] = e % o->sh[d];
        e /= o->sh[d];
    }
}

/*
 * Look the value of element e0 of rank r0 (summed over the axes of pend, divided by
 * scale) up in the index and fit a layout against each model tensor holding it; keep the best
 * fit in *best, *bestf, *bests (a model tensor of the plan value's own name first, then a whole
 * tensor over a row slice, then no pending sum, then the first computed: model_order).
 */
static void search(const infer_t *F, const group_t *g, int64_t r0, int64_t e0, const int64_t *l0,
                   uint32_t pend, double scale, int rename, int64_t only1, const index_t *X,
                   const sp_ref_obs_t **best, fit_t *bestf, int64_t *bests)
{
    const sp_mesh_t *m = F->m;
    const sp_ref_obs_t *o = g->on[r0];
    for (int a = 0; a < m->naxes; a++)
        if ((pend >> a & 1u) && (m->size[a] == 1 || coord(m, r0, a) != 0 || !along(F, g, r0, a)))
            return;
    fit_t f;
    memset(&f, 0, sizeof f);
    f.nd = o->nd;
    f.pend = pend;
    f.scale = scale;
    f.only1 = only1;
    uint64_t key = vkey(pvalue(F, g, &f, r0, e0) / scale);
    if (key == 0)
        return;
    int tried = 0;
    if (X->head == NULL)
        return;
    for (int64_t i = X->head[key & X->mask]; i >= 0 && tried < INFER_CANDIDATES; i = X->e[i].next) {
        if (X->e[i].key != key)
            continue;
        tried++;
        const sp_ref_obs_t *T = &F->model->o[X->e[i].tensor];
        if (T->nd != o->nd || *bests < ((int64_t)1 << 40))
            continue;
        int64_t g0[SP_MAX_DIMS];
        unravel(T, X->e[i].elem, g0);
        if (!fit_dims(F, g, T, r0, g0, l0, &f, 0))
            continue;
        int64_t score = (((int64_t)(rename || strcmp(T->name, o->name) != 0) * 8 + f.inner * 4 +
                          f.rows * 2 + (f.pend != 0)) << 40) + F->order[X->e[i].tensor];
        if (score < *bests) {
            *best = T;
            *bestf = f;
            *bests = score;
        }
    }
}

/*
 * A wrong plan's value that matches no model tensor may be one times a constant (a mean over
 * the wrong count, a missing 1/ep): the scales p/q for p, q <= 8 and their negatives are
 * tried.  Such a value is never proposed as a relation; it only localizes the difference.
 */
static void find_scaled(const infer_t *F, group_t *g, int64_t r0, int64_t e0, const int64_t *l0)
{
    uint32_t sets[1 + SP_MAX_AXES * SP_MAX_AXES];
    int nsets = pend_sets(F->m, sets);
    for (int q = 1; q <= 8; q++)
        for (int p = 1; p <= 8; p++)
            for (int sign = 1; sign >= -1; sign -= 2) {
                if (n_gcd((ulong)p, (ulong)q) != 1 || (p == q && sign > 0))
                    continue;
                double scale = sign * (double)p / q;
                for (int ps = 0; ps < nsets; ps++) {
                    const sp_ref_obs_t *best = NULL;
                    fit_t bestf;
                    int64_t bests = INT64_MAX;
                    search(F, g, r0, e0, l0, sets[ps], scale, 0, 0, &F->X, &best, &bestf, &bests);
                    if (best != NULL) {
                        g->fit = FIT_SCALED;
                        g->fit_pend = bestf.pend;
                        g->scale = scale;
                        g->fit_name = best->name;
                        return;
                    }
                }
            }
}

/* The first element of o (n elements) with a value that is no small constant, or n. */
static int64_t telling(const sp_ref_obs_t *o, int64_t n)
{
    int64_t e0 = 0;
    while (e0 < n && (!isfinite(o->v[e0]) || fabs(o->v[e0]) < INFER_ZERO || fabs(o->v[e0]) == 1))
        e0++;
    return e0;
}

/*
 * Does rank r's value of g, which fits no model tensor on every rank, fit one on rank r alone?
 * A wrong plan is often wrong on some ranks only (a rank-dependent bug, or the last ranks of a
 * ring that merge blocks they should skip): its value on the other ranks is still the model's,
 * and what is computed from it there is not where the plan goes wrong.  Localization only.
 */
static int rank_matches(const infer_t *F, const group_t *g, int64_t r)
{
    const sp_ref_obs_t *o = g->on[r];
    int64_t n = obs_len(o), e0 = telling(o, n), l0[SP_MAX_DIMS];
    if (e0 == n || all_equal(o->v, n))
        return 0;
    unravel(o, e0, l0);
    const sp_ref_obs_t *best = NULL;
    fit_t bestf;
    int64_t bests = INT64_MAX;
    search(F, g, r, e0, l0, 0, 1, 0, r + 1, &F->X, &best, &bestf, &bests);
    if (best == NULL) /* an optimizer step the plan outputs (nw = w - gw / 64) */
        search(F, g, r, e0, l0, 0, 1, 0, r + 1, &F->Xs, &best, &bestf, &bests);
    return best != NULL;
}

/* Find a relation for one execution of a plan assignment; 1 if one was recorded. */
static int propose(infer_t *F, group_t *g)
{
    const sp_mesh_t *m = F->m;
    int64_t r0 = 0;
    g->fit = FIT_NONE;
    g->fit_pend = 0;
    while (r0 < F->nranks && g->on[r0] == NULL)
        r0++;
    if (r0 == F->nranks)
        return 0;
    const sp_ref_obs_t *o = g->on[r0];
    /* a message sent (src/ref observes it to follow values across ranks) is fitted, for
       localizing a wrong plan, but never proposed: only an assignment can be related */
    int payload = g->stmt->kind == SP_STMT_EXPR;
    int64_t n = obs_len(o), e0 = telling(o, n);
    /* a plan value without such an element (zeros, ones: a mask), or with one value everywhere
       (a constant gradient), fits many positions by chance: only a model tensor of the same
       name is tried, without a pending sum */
    if (e0 == n || all_equal(o->v, n)) {
        const sp_ref_obs_t *T = named(F, o->name);
        fit_t f;
        memset(&f, 0, sizeof f);
        f.nd = o->nd;
        f.pend = 0;
        if (T == NULL || T->nd != o->nd || all_equal(o->v, n) || !fit_enum(F, g, T, r0, &f, 0))
            return 0;
        g->fit = FIT_MATCH;
        g->fit_name = T->name;
        if (payload)
            return 0;
        record(F->C, g, T, &f);
        return 1;
    }
    int64_t l0[SP_MAX_DIMS];
    unravel(o, e0, l0);
    /* a plain rename (`auxt = aux[1]`) goes with the model tensor computed first, whatever
       its name: the model's own rename of it (auxt) is then no second cut of the same value */
    const sp_ast_expr_t *val = g->stmt->value;
    int rename = val && (val->kind == SP_AST_NAME || val->kind == SP_AST_INDEX);
    const sp_ref_obs_t *best = NULL;
    fit_t bestf;
    int64_t bests = INT64_MAX;
    uint32_t sets[1 + SP_MAX_AXES * SP_MAX_AXES];
    int nsets = pend_sets(m, sets);
    for (int ps = 0; ps < nsets && best == NULL; ps++)
        search(F, g, r0, e0, l0, sets[ps], 1, rename, 0, &F->X, &best, &bestf, &bests);
    if (best != NULL) {
        g->fit = bestf.pend ? FIT_PENDING : FIT_MATCH;
        g->fit_pend = bestf.pend;
        g->fit_name = best->name;
    } else if (F->diverged) {
        find_scaled(F, g, r0, e0, l0);
    }
    if (F->debug && best == NULL)
        fprintf(stderr, "infer: line %u occ %d value %.17g (element %lld) matches no model tensor%s%s\n",
                g->stmt->loc.line, g->occ, o->v[e0], (long long)e0,
                g->fit == FIT_SCALED ? ", scaled: " : "", g->fit == FIT_SCALED ? g->fit_name : "");
    /* a wrong plan: a value that fits only a pending sum or rows of the model tensor of its own
       name, where the name says the whole (a missing all-reduce), goes by its name */
    if (payload || (best != NULL && bestf.inner))
        return 0;
    if (F->diverged && (best == NULL || (strcmp(best->name, o->name) == 0 &&
                                         (bestf.pend || bestf.rows)))) {
        if (propose_named(F, g, r0))
            return 1;
        if (best == NULL)
            return 0;
    }
    if (best == NULL)
        return 0;
    if (F->debug)
        fprintf(stderr, "infer: line %u occ %d value %.17g -> %s\n", g->stmt->loc.line, g->occ, o->v[e0], best->name);
    record(F->C, g, best, &bestf);
    return 1;
}

static int group_cmp(const void *a, const void *b)
{
    const group_t *x = a, *y = b;
    if (x->stmt != y->stmt)
        return x->stmt->loc.line != y->stmt->loc.line ? (x->stmt->loc.line < y->stmt->loc.line ? -1 : 1)
                                                      : (x->stmt->loc.col < y->stmt->loc.col ? -1 : 1);
    return x->occ < y->occ ? -1 : x->occ > y->occ;
}


static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Row-slice proposals of a model tensor stand only as a set that covers its rows (the
 * micro-batches of a step): one slice alone is more often a coincidence of values (a row of a
 * gradient whose rows are all equal) than a relation, and a tensor related whole and by rows
 * cannot be crossed consistently.  Otherwise they are dropped.
 */
/*
 * Executions of one statement related whole to the same model tensor: an accumulation whose
 * first terms already equal the total (a micro-batch whose activations relu zeroes at the small
 * checked sizes) matches at every occurrence.  Only the last is the relation.
 */
static void drop_repeated(sp_check_t *C)
{
    uint8_t *drop = flint_calloc((size_t)C->ninferred + 1, 1);
    for (int i = 0; i < C->ninferred; i++)
        for (int j = 0; j < C->ninferred && !drop[i]; j++) {
            const sp_inferred_t *x = &C->inferred[i], *y = &C->inferred[j];
            drop[i] = j != i && x->stmt == y->stmt && x->rhi == 0 && y->rhi == 0 &&
                      y->occ > x->occ && strcmp(x->model_name, y->model_name) == 0;
        }
    drop_at(C, drop);
    flint_free(drop);
}

static int64_t rows_of(const sp_ref_obs_list_t *M, const char *name)
{
    for (size_t t = 0; t < M->n; t++)
        if (strcmp(M->o[t].name, name) == 0)
            return M->o[t].nd > 0 ? M->o[t].sh[0] : 0;
    return 0;
}

static void drop_partial_rows(sp_check_t *C, const sp_ref_obs_list_t *M)
{
    uint8_t *drop = flint_calloc((size_t)C->ninferred + 1, 1);
    int64_t *iv = flint_malloc((size_t)(2 * C->ninferred + 2) * sizeof(int64_t));
    for (int i = 0; i < C->ninferred; i++) {
        const sp_inferred_t *x = &C->inferred[i];
        if (x->rhi == 0 || drop[i])
            continue;
        int whole = 0, n = 0;
        for (int j = 0; j < C->ninferred; j++) {
            const sp_inferred_t *y = &C->inferred[j];
            if (strcmp(y->model_name, x->model_name) != 0)
                continue;
            if (y->rhi == 0)
                whole = 1;
            else {
                iv[2 * n] = y->rlo;
                iv[2 * n + 1] = y->rhi;
                n++;
            }
        }
        /* the union of [lo, hi) from 0 without a gap up to the largest hi */
        qsort(iv, (size_t)n, 2 * sizeof(int64_t), cmp_i64);
        int64_t reach = 0;
        int ok = !whole;
        for (int k = 0; k < n && ok; k++) {
            ok = iv[2 * k] <= reach;
            if (iv[2 * k + 1] > reach)
                reach = iv[2 * k + 1];
        }
        int64_t nrows = rows_of(M, x->model_name);
        ok = ok && nrows > 0 && reach == nrows;
        for (int j = 0; j < C->ninferred && !ok; j++)
            if (C->inferred[j].rhi > 0 && strcmp(C->inferred[j].model_name, x->model_name) == 0)
                drop[j] = 1;
    }
    drop_at(C, drop);
    flint_free(drop);
    flint_free(iv);
}

/* Is the statement's value a collective's result (a reduction of pending sums)? */
static int is_collective(const sp_ast_stmt_t *s)
{
    static const char *const coll[] = {"all_reduce", "reduce_scatter", "reduce"};
    const sp_ast_expr_t *e = s->value;
    for (size_t i = 0; e && e->kind == SP_AST_CALL && i < sizeof coll / sizeof coll[0]; i++)
        if (strcmp(e->name, coll[i]) == 0)
            return 1;
    return 0;
}

/*
 * Are the values of o all values of model tensors (somewhere, whatever the layout), a few of
 * them telling (not 0 or +-1)?  Such a value assembles model values in a shape the model does
 * not have (the query and key gradients of a fused RoPE backward, concatenated): what goes
 * wrong is what is made of it.
 */
static int known_values(const infer_t *F, const sp_ref_obs_t *o)
{
    int64_t n = obs_len(o), told = 0;
    for (int64_t e = 0; e < n && e < 4096; e++) {
        double v = o->v[e];
        if (!isfinite(v))
            return 0;
        uint64_t key = vkey(v);
        if (key == 0 || fabs(v) == 1)
            continue;
        int found = 0;
        for (int64_t i = F->X.head[key & F->X.mask]; i >= 0 && !found; i = F->X.e[i].next)
            found = F->X.e[i].key == key && close_to(v, F->model->o[F->X.e[i].tensor].v[F->X.e[i].elem]);
        if (!found)
            return 0;
        told++;
    }
    return told > 0;
}

static int is_concat(const group_t *g)
{
    const sp_ast_expr_t *e = g->stmt->value;
    return e && e->kind == SP_AST_CALL && (strcmp(e->name, "concat") == 0 || strcmp(e->name, "cat") == 0 ||
                                           strcmp(e->name, "stack") == 0);
}

/* Does the statement only rename, rearrange or concatenate values? */
static int assembles(const group_t *g)
{
    const sp_ast_expr_t *e = g->stmt->value;
    return g->move || (e && e->kind != SP_AST_CALL && moves_only(e)) || is_concat(g);
}

static const char *obs_name(const group_t *g)
{
    for (int64_t r = 0;; r++)
        if (g->on[r])
            return g->on[r]->name;
}

/* "'x[1]'", or "the message sent" for a send's value */
static void describe(const group_t *g, char *buf, size_t len)
{
    if (g->stmt->kind == SP_STMT_EXPR)
        snprintf(buf, len, "the message sent");
    else
        snprintf(buf, len, "'%s'", obs_name(g));
}

/*
 * A wrong plan (the observing run found its outputs different): where do its values leave the
 * model's?  On each rank, a value *reaches* the model if it matches a model tensor, or a value
 * computed from it (or a message sent from it) does.  The first value in execution order that
 * matches none and reaches none is where the plan goes wrong: every operand of it matches or
 * feeds a match (it is the first), and nothing computed from it ever agrees with the model
 * again.  Refinements: a value equal to a constant times a model tensor is named first (a
 * scale is the usual bug); a value computed from an operand that is still a pending sum, by
 * anything but a reduction, names the operand's statement (a missing all-reduce).  The numbers
 * are the observing run's: this is a hint in the report, never part of a verdict.
 */
typedef struct {
    int64_t clock, id;
} ck_t;

static int ck_cmp(const void *a, const void *b)
{
    const ck_t *x = a, *y = b;
    if (x->clock != y->clock)
        return x->clock < y->clock ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void localize(infer_t *F, const group_t *G, int64_t ng, const sp_ref_result_t *res,
                     int64_t *const *gof)
{
    sp_check_t *C = F->C;
    int64_t *pos = flint_malloc((size_t)(ng + 1) * sizeof(int64_t));
    for (int64_t j = 0; j < ng; j++)
        pos[G[j].id] = j;
    /* every observation of every rank in the order of the logical clocks: a value comes after
       everything it depends on, across messages */
    int64_t total = 0;
    for (int64_t r = 0; r < F->nranks; r++)
        total += (int64_t)res->obs_rank[r].n;
    ck_t *ord = flint_malloc((size_t)(total + 1) * sizeof(ck_t));
    uint8_t **reach = flint_malloc((size_t)F->nranks * sizeof(uint8_t *));
    int64_t k = 0;
    for (int64_t r = 0; r < F->nranks; r++) {
        const sp_ref_obs_list_t *L = &res->obs_rank[r];
        reach[r] = flint_calloc(L->n + 1, 1);
        for (size_t i = 0; i < L->n; i++)
            ord[k++] = (ck_t){L->o[i].clock, SP_REF_OBS_ID(r, i)};
    }
    qsort(ord, (size_t)total, sizeof(ck_t), ck_cmp);
#define OBS(id) (&res->obs_rank[SP_REF_OBS_RANK(id)].o[SP_REF_OBS_IDX(id)])
#define GRP(id) (&G[pos[gof[SP_REF_OBS_RANK(id)][SP_REF_OBS_IDX(id)]]])
#define REACH(id) (reach[SP_REF_OBS_RANK(id)][SP_REF_OBS_IDX(id)])
    for (int64_t j = total - 1; j >= 0; j--) {
        int64_t id = ord[j].id;
        const sp_ref_obs_t *o = OBS(id);
        int f = GRP(id)->fit;
        if (f == FIT_MATCH || f == FIT_PENDING || o->used ||
            (f == FIT_NONE && !GRP(id)->move && rank_matches(F, GRP(id), SP_REF_OBS_RANK(id))))
            REACH(id) = 1;
        if (REACH(id))
            for (int q = 0; q < o->nin; q++)
                REACH(o->in[q]) = 1;
    }
    /* the first value that reaches no match; a scaled copy first; a move (a slice, a view) of
       inputs only (the model's inputs are not indexed) is passed over, and so is a value made
       of model values in a shape the model does not have (known_values) */
    int64_t at = -1, jat = total;
    for (int64_t j = 0; j < total; j++) {
        int64_t id = ord[j].id;
        if (REACH(id))
            continue;
        int innocent = GRP(id)->move && OBS(id)->nin == 0; /* of inputs only: never indexed */
        if (innocent || (!GRP(id)->move && known_values(F, OBS(id))))
            continue;
        if (at < 0) {
            at = id;
            jat = j;
        }
        if (GRP(id)->fit == FIT_SCALED) {
            at = id;
            jat = j;
            /* a value n times a pending sum over a group of n ranks may be a pending average
               (each rank's mean of its own rows): then the reduction that reads it is where a
               second, different scale comes in (`all_reduce(lp, sum, dp) / 4`); with the same
               scale (`all_reduce(l, sum, dp)` of a doubled l) the value itself is wrong */
            double sc = GRP(id)->scale;
            int64_t n = 1;
            for (int a = 0; a < F->m->naxes; a++)
                if (GRP(id)->fit_pend >> a & 1u)
                    n *= F->m->size[a];
            for (int64_t u = j + 1; GRP(id)->fit_pend && sc == (double)n && u < total; u++) {
                const sp_ref_obs_t *o = OBS(ord[u].id);
                int reads = 0;
                for (int q = 0; q < o->nin; q++)
                    reads |= o->in[q] == id;
                if (!reads || GRP(ord[u].id)->fit != FIT_SCALED)
                    continue;
                if (GRP(ord[u].id)->scale != sc)
                    at = ord[u].id;
                break;
            }
            break;
        }
    }
    /* before it, a value moved from elsewhere (a receive, a gather) that holds the model's values
       of its own name in the right shape, but not this rank's part: a wrong peer or order (its
       users may still reach a match through values that do not depend on it, as `y * 0`) */
    int misplaced = 0;
    const char *misname = NULL;
    for (int64_t j = 0; j < jat; j++) {
        int64_t id = ord[j].id;
        const group_t *g = GRP(id);
        const sp_ref_obs_t *o = OBS(id), *T;
        if (g->fit != FIT_NONE || !g->move || o->nin == 0 || (T = named(F, o->name)) == NULL ||
            T->nd != o->nd || is_leaf(C, T->name) || !known_values(F, o))
            continue;
        fit_t f;
        memset(&f, 0, sizeof f);
        f.nd = o->nd;
        f.shapes_only = 1;
        if (!fit_enum(F, g, T, SP_REF_OBS_RANK(id), &f, 0))
            continue;
        at = id;
        misplaced = 1;
        misname = T->name;
        break;
    }
    /* nothing goes wrong before the outputs: a pending sum output as a whole value */
    unsigned out_line = 0;
    for (int64_t j = 0; at < 0 && j < total; j++)
        if (GRP(ord[j].id)->fit == FIT_PENDING && OBS(ord[j].id)->out_line > 0) {
            at = ord[j].id;
            out_line = OBS(at)->out_line;
        }
    const group_t *best = at >= 0 ? GRP(at) : NULL, *user = NULL, *moved = NULL;
    int64_t best_r = at >= 0 ? SP_REF_OBS_RANK(at) : 0;
    /* an operand still pending a sum (or a move of one), used by anything but a reduction */
    for (int q = 0; best && !misplaced && out_line == 0 && best->fit != FIT_SCALED && q < OBS(at)->nin &&
                    !is_collective(best->stmt); q++) {
        int64_t src = OBS(at)->in[q];
        for (int depth = 0; depth < 8 && GRP(src)->fit != FIT_PENDING && GRP(src)->move &&
                            OBS(src)->nin == 1; depth++)
            src = OBS(src)->in[0];
        if (GRP(src)->fit != FIT_PENDING)
            continue;
        /* the reduction is missing where the pending value was last assembled whole from its
           micro-batches (a concatenation), else last renamed (`g = gp`), walking back along
           pending operands: a plan writes its all-reduce there */
        int64_t renamed = -1, joined = -1;
        for (int64_t p = src, depth = 0; depth < 12 && p >= 0 && joined < 0; depth++) {
            if (is_concat(GRP(p)))
                joined = p;
            else if (assembles(GRP(p)) && renamed < 0)
                renamed = p;
            int64_t next = -1;
            for (int t = 0; t < OBS(p)->nin && next < 0; t++)
                if (GRP(OBS(p)->in[t])->fit == FIT_PENDING)
                    next = OBS(p)->in[t];
            p = next;
        }
        src = joined >= 0 ? joined : renamed >= 0 ? renamed : src;
        if (assembles(best)) {
            /* the value itself only takes part of the pending sum: the reduction (a
               reduce-scatter) belonged here */
            moved = GRP(src);
            break;
        }
        user = best;
        best = GRP(src);
        break;
    }
    /* the micro-batch pieces of a value are assembled later: say where */
    const group_t *into = NULL;
    for (int64_t j = 0; at >= 0 && user == NULL && j < total && into == NULL; j++) {
        const sp_ref_obs_t *o = OBS(ord[j].id);
        const sp_ast_expr_t *e = GRP(ord[j].id)->stmt->value;
        if (e == NULL || e->kind != SP_AST_CALL || strcmp(e->name, "concat") != 0)
            continue;
        for (int q = 0; q < o->nin && into == NULL; q++)
            if (o->in[q] == at)
                into = GRP(ord[j].id);
    }
#undef OBS
#undef GRP
#undef REACH
    for (int64_t r = 0; r < F->nranks; r++)
        flint_free(reach[r]);
    flint_free(reach);
    flint_free(ord);
    flint_free(pos);
    if (best == NULL)
        return;
    char rs[128], bp[96], mp[96];
    sp_mesh_rank_str(F->m, best_r, rs, sizeof rs);
    pend_str(F->m, best->fit_pend, bp, sizeof bp);
    pend_str(F->m, moved ? moved->fit_pend : 0, mp, sizeof mp);
    C->has_diverge = 1;
    C->diverge_loc = best->stmt->loc;
    char asm_[200] = "";
    if (into != NULL)
        snprintf(asm_, sizeof asm_, " (assembled into '%s' at line %u)", obs_name(into),
                 into->stmt->loc.line);
    if (best->fit == FIT_SCALED) {
        char sc[32];
        double a = fabs(best->scale);
        int p = 1, q = 1;
        for (q = 1; q <= 8; q++)
            if (fabs(a * q - round(a * q)) < 1e-9) {
                p = (int)round(a * q);
                break;
            }
        if (q > 1)
            snprintf(sc, sizeof sc, "%s%d/%d", best->scale < 0 ? "-" : "", p, q);
        else
            snprintf(sc, sizeof sc, "%s%d", best->scale < 0 ? "-" : "", p);
        snprintf(C->diverge_note, sizeof C->diverge_note,
                 "'%s'%s is %s times the model's '%s'%s%s%s on rank %s: a scale factor (every value "
                 "it is computed from matches the model or feeds a value that does)",
                 obs_name(best), asm_, sc, best->fit_name, best->fit_pend ? " (a pending sum over " : "",
                 bp, best->fit_pend ? ")" : "",
                 rs);
    } else if (misplaced) {
        snprintf(C->diverge_note, sizeof C->diverge_note,
                 "'%s' holds values of the model's '%s' in its shape, but not its own part of it "
                 "on rank %s: moved from the wrong rank or in the wrong order?", obs_name(best),
                 misname, rs);
    } else if (out_line > 0) {
        snprintf(C->diverge_note, sizeof C->diverge_note,
                 "'%s' holds a pending sum over %s of the model's '%s' (not reduced), and the output "
                 "at line %u declares it whole, on rank %s: a missing reduction?", obs_name(best),
                 bp, best->fit_name, out_line, rs);
    } else if (user != NULL) {
        char un[160];
        describe(user, un, sizeof un);
        snprintf(C->diverge_note, sizeof C->diverge_note,
                 "'%s' holds a pending sum over %s of the model's '%s' (not reduced), and %s "
                 "(line %u), computed from it, matches no model tensor on rank %s: a missing "
                 "reduction?", obs_name(best), bp, best->fit_name, un,
                 user->stmt->loc.line, rs);
    } else {
        char bn[160];
        describe(best, bn, sizeof bn);
        if (moved != NULL)
            snprintf(C->diverge_note, sizeof C->diverge_note,
                     "%s%s takes part of '%s' (line %u), a pending sum over %s of the model's '%s', "
                     "without reducing it, and matches no model tensor on rank %s: a missing "
                     "reduction?", bn, asm_, obs_name(moved), moved->stmt->loc.line,
                     mp, moved->fit_name, rs);
        else
            snprintf(C->diverge_note, sizeof C->diverge_note,
                     "%s%s matches no model tensor on rank %s, nor does any value computed from "
                     "it, while every value it is computed from matches the model or feeds a "
                     "value that does", bn, asm_, rs);
    }
    if (F->debug)
        fprintf(stderr, "infer: first divergence line %u: %s\n", best->stmt->loc.line, C->diverge_note);
}

void sp_infer_propose(sp_check_t *C)
{
    C->infer_note[0] = '\0';
    C->infer_diverged = 0;
    C->has_diverge = 0;
    if (C->plan == NULL || C->model == NULL)
        return;
    /* a run with undecided elements (a top-k or comparison over values that tie exactly for
       these inputs, and the taint reaches the outputs: at H = 2 router logits of two experts
       tie on some token for small random rationals) is run again on the next seeds, as the
       cross-check does (seed + k): a run that decides tells a wrong plan from a right one (the
       wrong-plan mode below); its proposals are proved like any other, so the choice of run
       is only a hint */
    sp_ref_result_t res;
    sp_ref_result_init(&res);
    sp_status_t st = SP_OK;
    for (int k = 0; k < INFER_SEEDS; k++) {
        if (k > 0) {
            sp_ref_result_clear(&res);
            sp_ref_result_init(&res);
        }
        st = sp_xref_run(C, 1, C->opt.seed + (uint64_t)k, NULL, 1, &res);
        /* overlapping balls alone (any plan with exp or sqrt) are decided enough; only
           undecided elements (taints) try the next seed; all undecided: the last run */
        if (st != SP_OK || res.nobs_rank != C->mesh.nranks || res.verdict != SP_REF_UNDECIDED ||
            res.undecided == 0)
            break;
    }
    if (st != SP_OK || res.nobs_rank != C->mesh.nranks) {
        snprintf(C->infer_note, sizeof C->infer_note,
                 "no relation inferred: the reference executor did not run the plan at the checked "
                 "sizes (%s)", st != SP_OK ? "out of memory" : res.limit ? res.limit : "no message");
        sp_ref_result_clear(&res);
        return;
    }
    infer_t F;
    memset(&F, 0, sizeof F);
    F.C = C;
    F.m = &C->mesh;
    F.model = &res.obs_model;
    F.nranks = C->mesh.nranks;
    F.order = model_order(&res.obs_model, &F.nslot, &F.nmask);
    F.diverged = C->infer_diverged = res.verdict == SP_REF_DIFFER;
    F.debug = getenv("SP_INFER_DEBUG") != NULL; /* read once per inference */
    if (F.debug)
        fprintf(stderr, "infer: observing run verdict %d\n", (int)res.verdict);
    for (size_t t = 0; t < res.obs_model.n; t++) {
        const sp_ref_obs_t *T = &res.obs_model.o[t];
        index_t *X = &F.X;
        if (is_leaf(C, T->name)) {
            if (!F.diverged || (strncmp(T->name, "next.", 5) != 0 &&
                                strncmp(T->name, "adam.", 5) != 0 &&
                                strncmp(T->name, "momentum.", 9) != 0))
                continue;
            X = &F.Xs;
        }
        int64_t n = obs_len(T);
        for (int64_t e = 0; e < n; e++) {
            uint64_t k = vkey(T->v[e]);
            if (k)
                index_add(X, k, (uint32_t)t, e);
        }
    }
    index_build(&F.X);
    index_build(&F.Xs);
    /* the plan's executions: (statement, occurrence) in the order of the source */
    group_t *G = NULL;
    int64_t ng = 0, ag = 0, total = 0;
    for (int64_t r = 0; r < F.nranks; r++)
        total += (int64_t)res.obs_rank[r].n;
    uint64_t hm = 1024;
    while (hm < 2 * (uint64_t)total)
        hm *= 2;
    int64_t *slot = flint_malloc(hm * sizeof(int64_t)); /* (stmt, occ) -> group, or -1 */
    for (uint64_t i = 0; i < hm; i++)
        slot[i] = -1;
    int64_t **gof = flint_malloc((size_t)F.nranks * sizeof(int64_t *)); /* observation -> group */
    for (int64_t r = 0; r < F.nranks; r++) {
        const sp_ref_obs_list_t *L = &res.obs_rank[r];
        gof[r] = flint_malloc((L->n + 1) * sizeof(int64_t));
        for (size_t i = 0; i < L->n; i++) {
            const sp_ref_obs_t *o = &L->o[i];
            uint64_t h = sp_mix64((uint64_t)(uintptr_t)o->stmt ^ ((uint64_t)o->occ << 40)) & (hm - 1);
            while (slot[h] >= 0 && (G[slot[h]].stmt != o->stmt || G[slot[h]].occ != o->occ))
                h = (h + 1) & (hm - 1);
            int64_t j = slot[h] >= 0 ? slot[h] : ng;
            if (j == ng) {
                slot[h] = ng;
                if (ng == ag) {
                    ag = ag ? 2 * ag : 64;
                    G = flint_realloc(G, (size_t)ag * sizeof(group_t));
                }
                G[ng].stmt = o->stmt;
                G[ng].occ = o->occ;
                G[ng].id = ng;
                G[ng].order = (int64_t)i;
                G[ng].move = o->stmt->value && o->stmt->value->kind == SP_AST_CALL &&
                             moves_only(o->stmt->value);
                G[ng].on = flint_calloc((size_t)F.nranks, sizeof(*G[ng].on));
                ng++;
            }
            G[j].on[r] = o;
            gof[r][i] = j;
            if ((int64_t)i < G[j].order)
                G[j].order = (int64_t)i;
        }
    }
    flint_free(slot);
    if (ng > 1)
        qsort(G, (size_t)ng, sizeof(group_t), group_cmp);
    int found = 0;
    for (int64_t j = 0; j < ng; j++)
        found += propose(&F, &G[j]);
    if (F.diverged)
        localize(&F, G, ng, &res, gof);
    for (int64_t r = 0; r < F.nranks; r++)
        flint_free(gof[r]);
    flint_free(gof);
    withdrawn(C);
    keep_first_statement(C);
    drop_partial_rows(C, &res.obs_model);
    drop_repeated(C);
    sp_infer_cuts(C);
    if (F.debug)
        for (int i = 0; i < C->ninferred; i++) {
            const sp_inferred_t *x = &C->inferred[i];
            fprintf(stderr, "infer: line %u occ %d ~ %s", x->stmt->loc.line, x->occ, x->model_name);
            if (x->rhi > 0)
                fprintf(stderr, "[%lld..%lld]", (long long)x->rlo, (long long)x->rhi);
            fprintf(stderr, " : [");
            for (int d = 0; d < x->layout.ndim; d++)
                fprintf(stderr, "%s%lld%s%s", d ? ", " : "", (long long)x->layout.size[d],
                        x->layout.axes[d].n ? "@" : "",
                        x->layout.axes[d].n ? C->mesh.name[x->layout.axes[d].axis[0]] : "");
            uint32_t pm = 0;
            for (int k = 0; x->layout.npartial && k < x->layout.paxes[0].n; k++)
                pm |= 1u << x->layout.paxes[0].axis[k];
            char ps[96];
            pend_str(&C->mesh, pm, ps, sizeof ps);
            fprintf(stderr, "]%s%s%s\n", pm ? " partial(sum@" : "", ps, pm ? ")" : "");
        }
    if (found == 0)
        snprintf(C->infer_note, sizeof C->infer_note,
                 "no relation inferred: no plan value matched a model tensor");
    for (int64_t j = 0; j < ng; j++)
        flint_free(G[j].on);
    flint_free(G);
    index_clear(&F.X);
    index_clear(&F.Xs);
    flint_free(F.order);
    flint_free(F.nslot);
    sp_ref_result_clear(&res);
}

void sp_infer_cuts(sp_check_t *C)
{
    for (int i = 0; i < C->ninferred; i++)
        add_cut(C, C->inferred[i].model_name);
}

int sp_infer_keep_crossed(sp_check_t *C, int all)
{
    uint8_t *drop = flint_calloc((size_t)C->ninferred + 1, 1);
    int dropped = 0;
    for (int i = 0; i < C->ninferred; i++) {
        int crossed = 0;
        for (int k = 0; k < C->npassed && !crossed && !all; k++)
            crossed = strcmp(C->passed[k], C->inferred[i].model_name) == 0;
        drop[i] = !crossed;
        dropped += !crossed;
    }
    drop_at(C, drop);
    flint_free(drop);
    return dropped;
}
