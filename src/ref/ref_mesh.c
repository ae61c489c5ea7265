/* ref_mesh.c: the reference executor's mesh: layouts, shards, one thread per rank, messages. */
#include <stdlib.h>
#include <string.h>

#include "ref_int.h"

/* ---- groups and layouts ------------------------------------------------------------------- */

int rm_group_size(const rrun_t *R, uint32_t mask)
{
    int n = 1;
    for (int a = 0; a < R->naxes; a++)
        if (mask >> a & 1)
            n *= R->axsize[a];
    return n;
}

/* The rank of member `member` of rank's group over the axes in mask (members in rank order, so
   the member index is the mixed-radix number of the coordinates on those axes); *index is
   rank's own member index. */
uint32_t rm_group_rank(const rrun_t *R, int rank, uint32_t mask, int member, int *index)
{
    int c[RMAXAX], r = rank, idx = 0, m = member;
    for (int a = R->naxes - 1; a >= 0; a--)
        c[a] = r % R->axsize[a], r /= R->axsize[a];
    for (int a = 0; a < R->naxes; a++)
        if (mask >> a & 1)
            idx = idx * R->axsize[a] + c[a];
    for (int a = R->naxes - 1; a >= 0; a--)
        if (mask >> a & 1)
            c[a] = m % R->axsize[a], m /= R->axsize[a];
    int out = 0;
    for (int a = 0; a < R->naxes; a++)
        out = out * R->axsize[a] + c[a];
    if (index)
        *index = idx;
    return (uint32_t)out;
}

/* rank's member index in its group over the axes ord[0..n), listed major to minor as written
   (`@(tp,dp)`: tp major), the mixed-radix number of its coordinates in that order */
int rm_member_index(const rrun_t *R, int rank, const int *ord, int n)
{
    int c[RMAXAX], r = rank, idx = 0;
    for (int a = R->naxes - 1; a >= 0; a--)
        c[a] = r % R->axsize[a], r /= R->axsize[a];
    for (int i = 0; i < n; i++)
        idx = idx * R->axsize[ord[i]] + c[ord[i]];
    return idx;
}

/* axes (NAME or (A, B)) as a mask; each axis once per layout (used) */
static int axes_mask(rexec_t *X, const sp_ast_name_t *ax, size_t n, uint32_t *used, uint32_t *mask)
{
    *mask = 0;
    for (size_t i = 0; i < n; i++) {
        int a = rx_axis(X->R, ax[i].str);
        if (a < 0)
            return rx_error(X, SP_DIAG_LAYOUT, ax[i].loc, "unknown mesh axis '%s'", ax[i].str);
        if (*used >> a & 1)
            return rx_error(X, SP_DIAG_LAYOUT, ax[i].loc, "mesh axis '%s' is used twice in this layout", ax[i].str);
        *used |= 1u << a;
        *mask |= 1u << a;
    }
    return 1;
}

int rm_layout(rexec_t *X, const sp_ast_layout_t *lay, int nd, const int64_t *shape, rlayout_t *L)
{
    memset(L, 0, sizeof(*L));
    L->nd = nd;
    memcpy(L->gsh, shape, (size_t)nd * sizeof(int64_t));
    memcpy(L->lsh, shape, (size_t)nd * sizeof(int64_t));
    if (lay == NULL)
        return 1;
    if ((int)lay->ndims != nd)
        return rx_error(X, SP_DIAG_LAYOUT, lay->loc, "the layout has %zu dims, the tensor %d", lay->ndims, nd);
    uint32_t used = 0, mask;
    for (int d = 0; d < nd; d++) {
        const sp_ast_ldim_t *ld = &lay->dims[d];
        int64_t size, sizer;
        if (!rx_ct_size(X, ld->size, &size, &sizer, "a layout size"))
            return 0;
        if (size != shape[d])
            return rx_error(X, SP_DIAG_LAYOUT, ld->size->loc, "layout size %lld, the tensor has %lld",
                            (long long)size, (long long)shape[d]);
        if (!axes_mask(X, ld->axes, ld->naxes, &used, &mask))
            return 0;
        if (ld->naxes == 0)
            continue;
        int n = rm_group_size(X->R, mask), ord[RMAXAX];
        for (size_t k = 0; k < ld->naxes && k < RMAXAX; k++)
            ord[k] = rx_axis(X->R, ld->axes[k].str);
        int m = rm_member_index(X->R, X->rank, ord, (int)ld->naxes);
        if (ld->nsplit > 0) { /* explicit sizes, in rank order */
            if ((int)ld->nsplit != n)
                return rx_error(X, SP_DIAG_LAYOUT, ld->split_loc, "%zu shard sizes for %d ranks", ld->nsplit, n);
            int64_t tot = 0, v;
            for (int k = 0; k < n; k++) {
                if (!rx_ct_int(X, ld->split[k], &v, "a shard size"))
                    return 0;
                if (v < 0)
                    return rx_error(X, SP_DIAG_LAYOUT, ld->split[k]->loc, "negative shard size");
                if (k == m)
                    L->off[d] = tot, L->lsh[d] = v;
                tot += v;
            }
            if (tot != size)
                return rx_error(X, SP_DIAG_LAYOUT, ld->split_loc, "explicit shard sizes sum to %lld, the dimension has %lld",
                                (long long)tot, (long long)size);
        } else { /* torch.chunk: chunks of ceil(size/n), trailing ones smaller or empty */
            int64_t cs = (size + n - 1) / n, lo = m * cs < size ? m * cs : size;
            L->off[d] = lo;
            L->lsh[d] = (lo + cs < size ? lo + cs : size) - lo;
            if (X->R->opt->real_values && size % n == 0 && sizer % n == 0) /* an even shard */
                rc_note(&X->R->cmap, size / n, sizer / n);
        }
    }
    for (size_t p = 0; p < lay->npartials; p++) {
        static const char *const ops[] = {"sum", "avg", "max", "min"};
        const sp_ast_partial_t *e = &lay->partials[p];
        int op = -1;
        for (int k = 0; k < 4; k++)
            if (strcmp(e->op.str, ops[k]) == 0)
                op = k;
        if (op < 0)
            return rx_error(X, SP_DIAG_LAYOUT, e->op.loc, "unknown reduction '%s' (sum, avg, max, min)", e->op.str);
        if (L->np == RMAXAX)
            return rx_error(X, SP_DIAG_LAYOUT, e->op.loc, "too many pending reductions");
        if (!axes_mask(X, e->axes, e->naxes, &used, &L->pmask[L->np]))
            return 0;
        L->pop[L->np++] = op;
    }
    return 1;
}

/* ---- declarations: a rank's shard of a model input ---------------------------------------- */

/* This rank's part of value v (element g of tensor key) under the pending reductions of L:
   level e splits the value of the level above among the group over pmask[e].  sum: random
   parts, the last member gets the rest; avg: the same for n times the value; max (min): one
   random member holds the value, the others the value minus (plus) a random amount >= 0.  The
   randomness depends on the seed, key, element, level and the member path, so every member
   of a group computes the same decomposition. */
static void decompose(rexec_t *X, const char *key, int64_t g, const rlayout_t *L, rv_t *v)
{
    const rrun_t *R = X->R;
    slong prec = X->S.prec;
    uint64_t path = rr_hash(R->opt->seed, key, g, 0x9e37);
    rv_t part, sum;
    rv_init(&part);
    rv_init(&sum);
    fmpq_t q;
    fmpq_init(q);
    for (int e = 0; e < L->np; e++) {
        int n = rm_group_size(R, L->pmask[e]), j;
        rm_group_rank(R, X->rank, L->pmask[e], 0, &j);
        int op = L->pop[e];
        if (op <= 1) {
            rv_set_si(&sum, 0, 1);
            for (int i = 0; i < n - 1; i++) {
                rr_random(q, rr_hash(path, "part", e, i), 0);
                rv_set_fmpq(&part, q);
                rv_add(&sum, &sum, &part, prec);
                if (i == j)
                    rv_set(v, &part);
            }
            if (j == n - 1) {
                rv_set_si(&part, op == 1 ? n : 1, 1);
                rv_mul(&part, &part, v, prec);
                rv_sub(v, &part, &sum, prec);
            }
        } else if ((int)(rr_hash(path, "holder", e, 0) % (uint64_t)n) != j) {
            rr_random(q, rr_hash(path, "gap", e, j), 1);
            fmpz_sub_ui(fmpq_numref(q), fmpq_numref(q), 1); /* 0 too (ties are valid) */
            rv_set_fmpq(&part, q);
            (op == 2 ? rv_sub : rv_add)(v, v, &part, prec);
        }
        path = rr_hash(path, "level", e, j);
    }
    fmpq_clear(q);
    rv_clear(&part);
    rv_clear(&sum);
}

static int is_input(const rrun_t *R, const char *key)
{
    for (int i = 0; i < R->ninp; i++)
        if (strcmp(R->inp[i].key, key) == 0)
            return 1;
    return 0;
}

int rm_declare(rexec_t *X, const sp_ast_stmt_t *s)
{
    char pkey[600], mkey[600];
    const rrun_t *R = X->R;
    if (!rx_target_key(X, s->targets[0], pkey, sizeof(pkey)))
        return 0;
    if (s->lineage && s->lineage->rows)
        return rx_error(X, SP_DIAG_LINEAGE, s->lineage->loc, "a row slice on a declaration");
    if (!rx_target_key(X, s->lineage ? s->lineage->target : s->targets[0], mkey, sizeof(mkey)))
        return 0;
    rbind_t *m = is_input(R, mkey) ? renv_find(&R->M->genv, mkey, 0) : NULL;
    if (m == NULL)
        return rx_error(X, SP_DIAG_NAME, s->loc, "'%s' is not an input or parameter of model %s", mkey,
                        R->model->name.str);
    rlayout_t L;
    if (!rm_layout(X, s->layout, m->t.nd, m->t.sh, &L))
        return 0;
    rten_t t;
    rt_init(&t);
    t.nd = L.nd;
    memcpy(t.sh, L.lsh, sizeof(t.sh));
    int64_t n = rt_numel(&t), idx[RMAXD];
    if ((t.id = malloc((size_t)(n ? n : 1) * sizeof(uint32_t))) == NULL)
        return rx_limit(X, s->loc, "out of memory");
    rv_t v;
    rv_init(&v);
    for (int64_t i = 0; i < n; i++) {
        int64_t f = i, g = 0;
        for (int d = L.nd - 1; d >= 0; d--)
            idx[d] = f % L.lsh[d], f /= L.lsh[d];
        for (int d = 0; d < L.nd; d++)
            g = g * L.gsh[d] + L.off[d] + idx[d];
        rv_set(&v, rs_val(&R->M->S, m->t.id[g]));
        if (L.np)
            decompose(X, mkey, g, &L, &v);
        t.id[i] = rs_leaf(&X->S, &v);
    }
    rv_clear(&v);
    if (renv_set_take(X->env, pkey, &t) < 0) {
        rt_clear(&t);
        return rx_limit(X, s->loc, "out of memory");
    }
    return X->S.over ? rx_limit(X, s->loc, "the scalar nodes exceed the memory limit (max-mem)") : 1;
}

/* ---- the scheduler: blocking with deadlock detection ------------------------------------------ */

typedef struct rmsg {
    struct rmsg *next;
    int nd;
    int64_t sh[RMAXD];
    rv_t *v;
    int64_t n;
    sp_loc_t loc;
    int64_t clock; /* opts.observe: the sender's logical clock and its observation of the */
    int64_t obs;   /* message (SP_REF_OBS_ID), or -1 */
} rmsg_t;

/* One member's contribution to a collective. */
typedef struct {
    int kind, op;
    int64_t a, b;
    sp_loc_t loc;
    int nd;
    int64_t sh[RMAXD];
    rv_t *v;
    int64_t n;
    int64_t clock; /* the member's logical clock (opts.observe) */
} rdep_t;

/* An open collective of one group (mask, first member), the seq-th on that group. */
typedef struct rrv {
    struct rrv *next;
    uint32_t mask;
    int first;
    int64_t seq;
    int n, count, consumed;
    rdep_t *dep;
} rrv_t;

static void free_vals(rv_t *v, int64_t n)
{
    for (int64_t i = 0; v && i < n; i++)
        rv_clear(&v[i]);
    free(v);
}

/* a copy of t's values (owned by a message or a deposit) */
static rv_t *copy_vals(rexec_t *X, const rten_t *t, int64_t *n)
{
    *n = rt_numel(t);
    rv_t *v = malloc((size_t)(*n ? *n : 1) * sizeof(rv_t));
    for (int64_t i = 0; v && i < *n; i++) {
        rv_init(&v[i]);
        rv_set(&v[i], rs_val(&X->S, t->id[i]));
    }
    return v;
}

static int ready(const rrun_t *R, const rexec_t *X)
{
    if (X->wait_src >= 0)
        return R->qhead[(size_t)X->wait_src * (size_t)R->nranks + (size_t)X->rank] != NULL;
    const rrv_t *rv = X->wait_rv;
    return rv == NULL || rv->count == rv->n;
}

/* Under R->mu: when every live rank waits and none can go on, the plan is deadlocked. */
static void check_deadlock(rrun_t *R)
{
    if (R->nlive == 0 || R->nblocked < R->nlive)
        return;
    for (int r = 0; r < R->nranks; r++)
        if (R->X[r]->state == RK_BLOCKED && ready(R, R->X[r]))
            return;
    R->deadlock = 1;
    pthread_cond_broadcast(&R->cv);
}

/* Under R->mu: wait until X can go on; 0 on deadlock. */
static int wait_ready(rrun_t *R, rexec_t *X, sp_loc_t loc)
{
    if (ready(R, X))
        return 1;
    X->state = RK_BLOCKED;
    X->wait_loc = loc;
    R->nblocked++;
    check_deadlock(R);
    while (!ready(R, X) && !R->deadlock)
        pthread_cond_wait(&R->cv, &R->mu);
    R->nblocked--;
    X->state = RK_RUN;
    return ready(R, X);
}

/* ---- send, recv ------------------------------------------------------------------------------ */

/* The peer named by keyword arguments AXIS = k (other coordinates: this rank's). */
static int peer(rexec_t *X, const sp_ast_expr_t *e, size_t first, int *out)
{
    int c[RMAXAX];
    const rrun_t *R = X->R;
    memcpy(c, X->coord, sizeof(c));
    for (size_t i = first; i < e->nargs; i++) {
        const sp_ast_arg_t *a = &e->args[i];
        int ax = a->key.str ? rx_axis(R, a->key.str) : -1;
        int64_t v;
        if (ax < 0)
            return rx_error(X, SP_DIAG_LAYOUT, a->key.str ? a->key.loc : a->value->loc,
                            "%s: expected AXIS = coordinate", e->name);
        if (!rx_ct_int(X, a->value, &v, "a peer coordinate"))
            return 0;
        if (v < 0 || v >= R->axsize[ax])
            return rx_error(X, SP_DIAG_LAYOUT, a->value->loc, "%s: %s = %lld is not a rank of the mesh",
                            e->name, a->key.str, (long long)v);
        c[ax] = (int)v;
    }
    *out = 0;
    for (int a = 0; a < R->naxes; a++)
        *out = *out * R->axsize[a] + c[a];
    return 1;
}

static int do_send(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    rrun_t *R = X->R;
    int to;
    if (e->nargs < 1 || e->args[0].key.str)
        return rx_error(X, SP_DIAG_LAYOUT, e->loc, "send(t, AXIS = k): the tensor first");
    xval_t v;
    xv_init(&v);
    int ok = rx_eval_tensor(X, e->args[0].value, &v) && peer(X, e, 1, &to);
    int64_t obs = -1; /* opts.observe: the message is observed as a value of the statement */
    if (ok && X->R->opt->observe && X->rank >= 0 && X->leaf != NULL &&
        X->leaf->kind == SP_STMT_EXPR) {
        char nm[64];
        snprintf(nm, sizeof nm, "send@%u", e->loc.line);
        int64_t i = rx_observe_value(X, X->leaf, nm, &v.t, X->leaf_start, e->loc);
        ok = i > 0;
        obs = SP_REF_OBS_ID(X->rank, i - 1);
    }
    rmsg_t *m = ok ? calloc(1, sizeof(rmsg_t)) : NULL;
    if (ok && (m == NULL || (m->v = copy_vals(X, &v.t, &m->n)) == NULL)) {
        free(m);
        ok = rx_limit(X, e->loc, "out of memory");
    }
    if (ok) {
        m->nd = v.t.nd;
        memcpy(m->sh, v.t.sh, sizeof(m->sh));
        m->loc = e->loc;
        m->obs = obs;
        m->clock = X->clock;
        size_t q = (size_t)X->rank * (size_t)R->nranks + (size_t)to;
        pthread_mutex_lock(&R->mu);
        if (R->qtail[q])
            R->qtail[q]->next = m;
        else
            R->qhead[q] = m;
        R->qtail[q] = m;
        pthread_cond_broadcast(&R->cv);
        pthread_mutex_unlock(&R->mu);
        out->kind = XV_INT; /* send's value is nothing useful */
    }
    xv_clear(&v);
    return ok;
}

static int deadlocked(rexec_t *X, sp_loc_t loc, const char *what, int other)
{
    char a[200], b[200];
    rx_coords_str(X->R, X->rank, a, sizeof(a));
    if (other >= 0)
        rx_coords_str(X->R, other, b, sizeof(b));
    X->deadlocked = 1;
    return rx_error(X, SP_DIAG_LAYOUT, loc, "%s on rank %s%s%s waits forever: every running rank is waiting (a deadlock)",
                    what, a, other >= 0 ? " from rank " : "", other >= 0 ? b : "");
}

static int do_recv(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    rrun_t *R = X->R;
    int from;
    if (!peer(X, e, 0, &from))
        return 0;
    size_t q = (size_t)from * (size_t)R->nranks + (size_t)X->rank;
    pthread_mutex_lock(&R->mu);
    X->wait_src = from;
    int ok = wait_ready(R, X, e->loc);
    X->wait_src = -1;
    rmsg_t *m = ok ? R->qhead[q] : NULL;
    if (m) {
        R->qhead[q] = m->next;
        if (R->qhead[q] == NULL)
            R->qtail[q] = NULL;
    }
    pthread_mutex_unlock(&R->mu);
    if (!ok)
        return deadlocked(X, e->loc, "recv", from);
    rten_t t;
    rt_init(&t);
    t.nd = m->nd;
    memcpy(t.sh, m->sh, sizeof(t.sh));
    if ((t.id = malloc((size_t)(m->n ? m->n : 1) * sizeof(uint32_t))) == NULL)
        ok = rx_limit(X, e->loc, "out of memory");
    for (int64_t i = 0; ok && i < m->n; i++)
        t.id[i] = rs_leaf(&X->S, &m->v[i]);
    if (m->clock > X->clock)
        X->clock = m->clock;
    if (ok && m->obs >= 0)
        ok = rx_note_read(X, SP_REF_OBS_RANK(m->obs), SP_REF_OBS_IDX(m->obs), e->loc);
    free_vals(m->v, m->n);
    free(m);
    out->kind = XV_TEN;
    out->t = t;
    return ok;
}

/* ---- collectives ----------------------------------------------------------------------------- */

enum { C_ALL_REDUCE, C_ALL_GATHER, C_REDUCE_SCATTER, C_ALL_TO_ALL, C_BROADCAST, C_REDUCE, C_SEND, C_RECV };
static const char *const cnames[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                     "broadcast", "reduce", "send", "recv"};
static const char *const rednames[] = {"sum", "avg", "max", "min"};

int rm_is_collective(const char *name)
{
    for (int k = 0; k < 8; k++)
        if (strcmp(cnames[k], name) == 0)
            return 1;
    return 0;
}

/* the axes in the order written (members are numbered major to minor in that order) */
typedef struct {
    int ord[RMAXAX];
    int n;
} axorder_t;

/* the reduction a name stands for (`mean` is `avg`), or -1 */
static int red_of(const char *name)
{
    for (int k = 0; k < 4; k++)
        if (strcmp(name, rednames[k]) == 0)
            return k;
    return strcmp(name, "mean") == 0 ? 1 : -1;
}

/* A name argument of a collective: a reduction where one is expected (before an axis or a
   value of the same name, as the language reference says: the name is the op), else an axis. */
static int add_axis(rexec_t *X, const char *name, sp_loc_t loc, uint32_t *mask, int *op,
                    axorder_t *o)
{
    if (op && red_of(name) >= 0) {
        *op = red_of(name);
        return 1;
    }
    int a = rx_axis(X->R, name);
    if (a >= 0) {
        if (o && !(*mask >> a & 1) && o->n < RMAXAX)
            o->ord[o->n++] = a;
        *mask |= 1u << a;
        return 1;
    }
    return rx_error(X, SP_DIAG_LAYOUT, loc, "'%s' is neither a mesh axis nor a reduction", name);
}

/* r = the reduction op of vals[0..n) (member order) */
static void reduce_vals(rv_t *r, int op, rdep_t *dep, int n, int64_t i, slong prec)
{
    rv_set(r, &dep[0].v[i]);
    for (int k = 1; k < n; k++) {
        if (op <= 1)
            rv_add(r, r, &dep[k].v[i], prec);
        else
            rv_max(r, r, &dep[k].v[i], op == 2, prec);
    }
    if (op == 1) {
        rv_t t;
        rv_init(&t);
        rv_set_si(&t, n, 1);
        rv_div(r, r, &t, prec);
        rv_clear(&t);
    }
}

static int same_shape(const rdep_t *a, const rdep_t *b, int except)
{
    if (a->nd != b->nd)
        return 0;
    for (int d = 0; d < a->nd; d++)
        if (d != except && a->sh[d] != b->sh[d])
            return 0;
    return 1;
}

static int64_t off_of(const int64_t *sh, int nd, const int64_t *idx)
{
    int64_t f = 0;
    for (int d = 0; d < nd; d++)
        f = f * sh[d] + idx[d];
    return f;
}

/* The result for member j from the deposits of all n members, into out (leaves of X). */
static int combine(rexec_t *X, const sp_ast_expr_t *e, rdep_t *dep, int n, int j, rten_t *out)
{
    const rdep_t *me = &dep[j];
    int kind = me->kind, nd = me->nd, dim = -1;
    char s1[160], s2[160];
    for (int k = 0; k < n; k++)
        if (dep[k].kind != kind || dep[k].op != me->op || dep[k].a != me->a || dep[k].b != me->b)
            return rx_error(X, SP_DIAG_LAYOUT, e->loc, "%s: the members of the group disagree: member %d calls "
                            "%s here, member %d calls %s at line %u with other arguments", cnames[kind], j,
                            cnames[kind], k, cnames[dep[k].kind], (unsigned)dep[k].loc.line);
    if (kind == C_ALL_GATHER || kind == C_REDUCE_SCATTER || kind == C_ALL_TO_ALL) {
        int64_t dd = me->a;
        if (dd < -nd || dd >= nd)
            return rx_error(X, SP_DIAG_SHAPE, e->loc, "%s: dimension %lld out of range for a %d-d tensor",
                            cnames[kind], (long long)dd, nd);
        dim = (int)(dd < 0 ? dd + nd : dd);
    }
    for (int k = 0; k < n; k++)
        if (!same_shape(&dep[k], me, kind == C_ALL_GATHER ? dim : -1) && kind != C_BROADCAST && kind != C_REDUCE) {
            rt_shape_str(s1, sizeof(s1), me->nd, me->sh);
            rt_shape_str(s2, sizeof(s2), dep[k].nd, dep[k].sh);
            return rx_error(X, SP_DIAG_SHAPE, e->loc, "%s: shapes differ across the group: %s and %s", cnames[kind], s1, s2);
        }
    int64_t sh[RMAXD], idx[RMAXD];
    memcpy(sh, me->sh, sizeof(sh));
    int src = j, cdim = -1;
    switch (kind) {
    case C_ALL_GATHER:
        sh[dim] = 0;
        for (int k = 0; k < n; k++)
            sh[dim] += dep[k].sh[dim];
        break;
    case C_REDUCE_SCATTER:
    case C_ALL_TO_ALL:
        if (sh[dim] % n)
            return rx_error(X, SP_DIAG_SHAPE, e->loc, "%s: dim %d of size %lld is not divisible by %d ranks",
                            cnames[kind], dim, (long long)sh[dim], n);
        sh[dim] /= n;
        if (kind == C_ALL_TO_ALL) {
            if (me->b < -nd || me->b >= nd)
                return rx_error(X, SP_DIAG_SHAPE, e->loc, "all_to_all: dimension %lld out of range", (long long)me->b);
            cdim = (int)(me->b < 0 ? me->b + nd : me->b);
            sh[cdim] *= n;
        }
        break;
    case C_BROADCAST:
    case C_REDUCE:
        if (me->b < 0 || me->b >= n)
            return rx_error(X, SP_DIAG_LAYOUT, e->loc, "%s: root %lld is not a member of the group of %d",
                            cnames[kind], (long long)me->b, n);
        if (kind == C_BROADCAST)
            src = (int)me->b;
        if (kind == C_REDUCE && me->b != j)
            kind = C_BROADCAST; /* a non-root keeps its input */
        else if (kind == C_REDUCE) {
            for (int k = 0; k < n; k++)
                if (!same_shape(&dep[k], me, -1)) {
                    rt_shape_str(s1, sizeof(s1), me->nd, me->sh);
                    rt_shape_str(s2, sizeof(s2), dep[k].nd, dep[k].sh);
                    return rx_error(X, SP_DIAG_SHAPE, e->loc, "reduce: shapes differ across the group: %s and %s", s1, s2);
                }
            kind = C_ALL_REDUCE;
        }
        memcpy(sh, dep[src].sh, sizeof(sh));
        break;
    }
    rt_init(out);
    out->nd = nd;
    memcpy(out->sh, sh, sizeof(sh));
    int64_t m = rt_numel(out);
    if (m > X->R->opt->max_elements)
        return rx_limit(X, e->loc, "%s: output of more than %lld elements (the limit max-elements)", cnames[kind],
                        (long long)X->R->opt->max_elements);
    if ((out->id = malloc((size_t)(m ? m : 1) * sizeof(uint32_t))) == NULL)
        return rx_limit(X, e->loc, "out of memory");
    rv_t r;
    rv_init(&r);
    slong prec = X->S.prec;
    for (int64_t i = 0; i < m; i++) {
        int64_t f = i;
        for (int d = nd - 1; d >= 0; d--)
            idx[d] = f % sh[d], f /= sh[d];
        if (kind == C_ALL_REDUCE)
            reduce_vals(&r, me->op, dep, n, i, prec);
        else if (kind == C_BROADCAST)
            rv_set(&r, &dep[src].v[i]);
        else if (kind == C_ALL_GATHER) {
            int k = 0;
            while (idx[dim] >= dep[k].sh[dim])
                idx[dim] -= dep[k++].sh[dim];
            rv_set(&r, &dep[k].v[off_of(dep[k].sh, nd, idx)]);
        } else if (kind == C_REDUCE_SCATTER) {
            idx[dim] += j * sh[dim];
            reduce_vals(&r, me->op, dep, n, off_of(me->sh, nd, idx), prec);
        } else { /* all_to_all: the concat dim's block k comes from member k's chunk j */
            int k = (int)(idx[cdim] / (sh[cdim] / n));
            idx[cdim] -= k * (sh[cdim] / n);
            idx[dim] += j * (me->sh[dim] / n); /* chunk j of the split dim (also when it is the
                                                  concat dim: sh[dim] is then the whole) */
            rv_set(&r, &dep[k].v[off_of(dep[k].sh, nd, idx)]);
        }
        out->id[i] = rs_leaf(&X->S, &r);
    }
    rv_clear(&r);
    return 1;
}

int rm_collective(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    int kind = 0;
    while (strcmp(cnames[kind], e->name))
        kind++;
    if (kind == C_SEND)
        return do_send(X, e, out);
    if (kind == C_RECV)
        return do_recv(X, e, out);
    rrun_t *R = X->R;
    rdep_t d;
    memset(&d, 0, sizeof(d));
    d.kind = kind;
    d.loc = e->loc;
    d.op = kind == C_ALL_GATHER || kind == C_ALL_TO_ALL || kind == C_BROADCAST ? -1 : 0;
    uint32_t mask = 0;
    axorder_t order = {{0}, 0};
    int naxes_args = 0;
    int nint = 0, haveop = 0, ok = 1, rootlike = kind == C_BROADCAST || kind == C_REDUCE;
    int64_t ints[2] = {0, 0};
    if (e->nargs < 1 || e->args[0].key.str)
        return rx_error(X, SP_DIAG_LAYOUT, e->loc, "%s: the tensor first", e->name);
    xval_t v;
    xv_init(&v);
    ok = rx_eval_tensor(X, e->args[0].value, &v);
    for (size_t i = 1; ok && i < e->nargs; i++) {
        const char *k = e->args[i].key.str;
        const sp_ast_expr_t *x = e->args[i].value;
        int64_t val;
        int axes_arg = (x->kind == SP_AST_LIST && (k == NULL || !strcmp(k, "axis") || !strcmp(k, "group"))) ||
                       (x->kind == SP_AST_NAME && (k == NULL || !strcmp(k, "axis") || !strcmp(k, "group")) &&
                        rx_axis(R, x->name) >= 0 && !renv_find(X->env, x->name, 1));
        if (axes_arg && naxes_args++ > 0) {
            ok = rx_error(X, SP_DIAG_LAYOUT, x->loc, "%s: the group's axes are one argument; write them as a list, [dp, tp]", e->name);
            break;
        }
        if (x->kind == SP_AST_LIST && (k == NULL || !strcmp(k, "axis") || !strcmp(k, "group"))) {
            for (size_t t = 0; ok && t < x->nargs; t++)
                ok = x->args[t].value->kind == SP_AST_NAME
                         ? add_axis(X, x->args[t].value->name, x->args[t].value->loc, &mask, NULL, &order)
                         : rx_error(X, SP_DIAG_LAYOUT, x->args[t].value->loc, "expected a mesh axis");
        } else if (x->kind == SP_AST_NAME && (k == NULL || !strcmp(k, "axis") || !strcmp(k, "group") || !strcmp(k, "op")) &&
                   (rx_bare_name(X, x) || red_of(x->name) >= 0 ||
                    (rx_axis(R, x->name) >= 0 && !renv_find(X->env, x->name, 1)))) {
            int op = -1;
            ok = add_axis(X, x->name, x->loc, &mask, &op, &order);
            if (ok && op >= 0)
                d.op = op, haveop = 1;
        } else if (k && strcmp(k, "dim") && strcmp(k, "split") && strcmp(k, "concat") && strcmp(k, "root"))
            ok = rx_error(X, SP_DIAG_LAYOUT, e->args[i].key.loc, "%s: unknown argument '%s'", e->name, k);
        else if ((ok = rx_ct_int(X, x, &val, "a collective's integer argument"))) {
            if (k)
                ints[!strcmp(k, "concat") || !strcmp(k, "root")] = val;
            else if (nint < (rootlike ? 1 : 2))
                ints[rootlike ? 1 : nint++] = val, nint += rootlike;
            else
                ok = rx_error(X, SP_DIAG_LAYOUT, x->loc, "%s: too many integer arguments", e->name);
        }
    }
    if (ok && mask == 0)
        ok = rx_error(X, SP_DIAG_LAYOUT, e->loc, "%s: name the mesh axes of the group", e->name);
    if (ok && haveop && d.op >= 0 && (kind == C_ALL_GATHER || kind == C_ALL_TO_ALL || kind == C_BROADCAST))
        ok = rx_error(X, SP_DIAG_LAYOUT, e->loc, "%s takes no reduction", e->name);
    if (!ok) {
        xv_clear(&v);
        return 0;
    }
    d.a = ints[0];
    d.b = ints[1];
    d.clock = X->clock;
    d.nd = v.t.nd;
    memcpy(d.sh, v.t.sh, sizeof(d.sh));
    if ((d.v = copy_vals(X, &v.t, &d.n)) == NULL) {
        xv_clear(&v);
        return rx_limit(X, e->loc, "out of memory");
    }
    xv_clear(&v);
    /* this rank's sequence number on the group */
    int s = 0;
    while (s < X->nseq && X->seqmask[s] != mask)
        s++;
    if (s == X->nseq) {
        uint32_t *sm = realloc(X->seqmask, (size_t)(s + 1) * sizeof(uint32_t));
        int64_t *sq = realloc(X->seq, (size_t)(s + 1) * sizeof(int64_t));
        if (sm)
            X->seqmask = sm;
        if (sq)
            X->seq = sq;
        if (sm == NULL || sq == NULL) {
            free_vals(d.v, d.n);
            return rx_limit(X, e->loc, "out of memory");
        }
        X->seqmask[s] = mask;
        X->seq[s] = 0;
        X->nseq++;
    }
    int64_t seq = X->seq[s]++;
    int n = rm_group_size(R, mask), j;
    int first = (int)rm_group_rank(R, X->rank, mask, 0, &j);
    j = rm_member_index(R, X->rank, order.ord, order.n); /* as written: members major to minor */
    pthread_mutex_lock(&R->mu);
    rrv_t *rv = R->rvs;
    while (rv && !(rv->mask == mask && rv->first == first && rv->seq == seq))
        rv = rv->next;
    if (rv == NULL && (rv = calloc(1, sizeof(rrv_t))) != NULL && (rv->dep = calloc((size_t)n, sizeof(rdep_t))) == NULL) {
        free(rv);
        rv = NULL;
    }
    if (rv == NULL) {
        pthread_mutex_unlock(&R->mu);
        free_vals(d.v, d.n);
        return rx_limit(X, e->loc, "out of memory");
    }
    if (rv->n == 0) {
        rv->mask = mask, rv->first = first, rv->seq = seq, rv->n = n;
        rv->next = R->rvs;
        R->rvs = rv;
    }
    rv->dep[j] = d;
    rv->count++;
    pthread_cond_broadcast(&R->cv);
    X->wait_rv = rv;
    ok = wait_ready(R, X, e->loc);
    X->wait_rv = NULL;
    pthread_mutex_unlock(&R->mu);
    if (!ok)
        return deadlocked(X, e->loc, e->name, -1);
    for (int k = 0; k < n; k++)
        if (rv->dep[k].clock > X->clock)
            X->clock = rv->dep[k].clock;
    rten_t t;
    ok = combine(X, e, rv->dep, n, j, &t);
    if (ok) {
        out->kind = XV_TEN;
        out->t = t;
    }
    pthread_mutex_lock(&R->mu);
    if (++rv->consumed == n) {
        rrv_t **p = &R->rvs;
        while (*p != rv)
            p = &(*p)->next;
        *p = rv->next;
        for (int k = 0; k < n; k++)
            free_vals(rv->dep[k].v, rv->dep[k].n);
        free(rv->dep);
        free(rv);
    }
    pthread_mutex_unlock(&R->mu);
    return ok;
}

/* ---- ranks ------------------------------------------------------------------------------------ */

static void *rank_main(void *arg)
{
    rexec_t *X = arg;
    rrun_t *R = X->R;
    pthread_mutex_lock(&R->mu);
    while (!R->go)
        pthread_cond_wait(&R->cv, &R->mu);
    int abort = R->abort;
    pthread_mutex_unlock(&R->mu);
    if (!abort)
        rx_block(X, &R->plan->body);
    pthread_mutex_lock(&R->mu);
    X->state = X->failed ? RK_FAILED : RK_DONE;
    R->nlive--;
    check_deadlock(R);
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
    flint_cleanup();
    return NULL;
}

int rm_run_ranks(rrun_t *R, sp_diags_t d)
{
    int n = R->nranks, started = 0, ok = 1;
    size_t nq = (size_t)n * (size_t)n;
    R->X = calloc((size_t)n, sizeof(rexec_t *));
    R->qhead = calloc(nq, sizeof(rmsg_t *));
    R->qtail = calloc(nq, sizeof(rmsg_t *));
    pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
    if (R->X == NULL || R->qhead == NULL || R->qtail == NULL || th == NULL)
        ok = 0;
    for (int r = 0; ok && r < n; r++)
        if ((R->X[r] = malloc(sizeof(rexec_t))) == NULL || rx_init(R->X[r], R, r) < 0)
            ok = 0;
    pthread_mutex_init(&R->mu, NULL);
    pthread_cond_init(&R->cv, NULL);
    R->nlive = n;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)16 << 20);
    for (int r = 0; ok && r < n; r++, started++)
        if (pthread_create(&th[r], &attr, rank_main, R->X[r]) != 0)
            ok = 0;
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&R->mu);
    R->abort = !ok;
    R->go = 1;
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
    for (int r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    free(th);
    pthread_mutex_destroy(&R->mu);
    pthread_cond_destroy(&R->cv);
    if (!ok)
        return 0;
    /* messages never received (only when every rank finished cleanly) */
    int clean = 1;
    for (int r = 0; r < n; r++)
        clean &= !R->X[r]->failed;
    for (size_t q = 0; clean && q < nq; q++)
        if (R->qhead[q] != NULL) {
            char a[200], b[200];
            rx_coords_str(R, (int)(q / (size_t)n), a, sizeof(a));
            rx_coords_str(R, (int)(q % (size_t)n), b, sizeof(b));
            sp_diags_error(d, SP_DIAG_LAYOUT, R->qhead[q]->loc, "send from rank %s to rank %s is never received", a, b);
        }
    return 1;
}

void rm_free(rrun_t *R)
{
    size_t nq = (size_t)R->nranks * (size_t)R->nranks;
    for (size_t q = 0; R->qhead && q < nq; q++)
        while (R->qhead[q]) {
            rmsg_t *m = R->qhead[q];
            R->qhead[q] = m->next;
            free_vals(m->v, m->n);
            free(m);
        }
    while (R->rvs) {
        rrv_t *rv = R->rvs;
        R->rvs = rv->next;
        for (int k = 0; k < rv->n; k++)
            free_vals(rv->dep[k].v, rv->dep[k].n);
        free(rv->dep);
        free(rv);
    }
    free(R->qhead);
    free(R->qtail);
    for (int r = 0; R->X && r < R->nranks; r++)
        if (R->X[r]) {
            rx_clear(R->X[r]);
            free(R->X[r]);
        }
    free(R->X);
    R->X = NULL;
}
