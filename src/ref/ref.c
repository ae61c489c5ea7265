/* ref.c: the reference executor's driver: inputs, dims, mesh, the model, the ranks, comparison. */
#include <stdlib.h>
#include <string.h>

#include "ref_int.h"

/* ---- deterministic randomness --------------------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t rr_hash(uint64_t seed, const char *key, int64_t a, int64_t b)
{
    uint64_t h = mix(seed);
    for (; *key; key++)
        h = mix(h ^ (uint8_t)*key);
    return mix(mix(h ^ (uint64_t)a) ^ (uint64_t)b);
}

/* n/d with 1 <= |n| <= 12 (n > 0 when nonneg), 6 <= d <= 12: magnitudes up to 2, so that
   exp and softmax do not saturate (a saturated softmax hides a wrong scale) */
void rr_random(fmpq_t q, uint64_t h, int nonneg)
{
    slong n = (slong)(h % 12) + 1;
    if (!nonneg && (h >> 8 & 1))
        n = -n;
    fmpq_set_si(q, n, (ulong)((h >> 16) % 7 + 6));
}

/* ---- caller-given inputs --------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int64_t index;
    size_t pos;
} given_t;

static int given_cmp(const void *a, const void *b)
{
    const given_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Per-run state that ref_int.h keeps opaque to the executors. */
typedef struct {
    given_t *g;
    size_t n;
} given_index_t;

static given_index_t *given_of(const rrun_t *R) { return (given_index_t *)R->given; }

static int given_build(rrun_t *R)
{
    const sp_ref_inputs_struct *in = R->opt->inputs;
    given_index_t *G = calloc(1, sizeof(given_index_t));
    if (G == NULL)
        return -1;
    R->given = G;
    if (in == NULL || in->n == 0)
        return 0;
    if ((G->g = malloc(in->n * sizeof(given_t))) == NULL)
        return -1;
    for (size_t i = 0; i < in->n; i++)
        G->g[i] = (given_t){in->name[i], in->index[i], i};
    G->n = in->n;
    qsort(G->g, G->n, sizeof(given_t), given_cmp);
    return 0;
}

static int in_list(char **l, int n, const char *base, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(l[i]) == len && strncmp(l[i], base, len) == 0)
            return 1;
    return 0;
}

int rr_input_value(rrun_t *R, const char *key, int param, int nd, const int64_t *sh, int64_t index, fmpq_t q)
{
    given_index_t *G = given_of(R);
    size_t lo = 0, hi = G ? G->n : 0; /* the last given entry for (key, index) */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(G->g[mid].name, key);
        if (c < 0 || (c == 0 && G->g[mid].index <= index))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && strcmp(G->g[lo - 1].name, key) == 0 && G->g[lo - 1].index == index) {
        fmpq_set(q, &R->opt->inputs->val[G->g[lo - 1].pos]);
        return 1;
    }
    size_t blen = strcspn(key, "[");
    uint64_t h = rr_hash(R->opt->seed, key, index, 1);
    if (in_list(R->onehot, R->nonehot, key, blen) && nd > 0 && sh[nd - 1] > 0) {
        int64_t V = sh[nd - 1], row = index / V;
        fmpq_set_si(q, (int64_t)(rr_hash(R->opt->seed, key, row, 2) % (uint64_t)V) == index % V, 1);
    } else if (in_list(R->mask, R->nmask, key, blen))
        fmpq_set_si(q, h % 4 != 0, 1);
    else {
        rr_random(q, h, strncmp(key, "adam.v.", 7) == 0);
        if (nd >= 2 && sh[0] > 1 && param) { /* a weight: scaled by its fan-in, like an init */
            fmpz_t f;
            fmpz_init_set_si(f, sh[0]);
            fmpq_div_fmpz(q, q, f);
            fmpz_clear(f);
        }
    }
    return 0;
}

/* ---- which model inputs are one-hot ids or 0/1 masks (by their use) -------------------------- */

static int add_name(char ***l, int *n, const sp_ast_expr_t *e)
{
    while (e->kind == SP_AST_INDEX)
        e = e->a;
    if (e->kind != SP_AST_NAME || in_list(*l, *n, e->name, strlen(e->name)))
        return 0;
    char **p = realloc(*l, (size_t)(*n + 1) * sizeof(char *));
    if (p == NULL)
        return -1;
    *l = p;
    return (p[*n] = strdup(e->name)) == NULL ? -1 : ((*n)++, 0);
}

static int classify_expr(rrun_t *R, const sp_ast_expr_t *e)
{
    if (e == NULL)
        return 0;
    int r = classify_expr(R, e->a) | classify_expr(R, e->b);
    for (size_t i = 0; i < e->nargs; i++)
        r |= classify_expr(R, e->args[i].value);
    if (e->kind != SP_AST_CALL)
        return r;
    size_t np = 0;
    while (np < e->nargs && e->args[np].key.str == NULL)
        np++;
    const char *f = e->name;
    const sp_ast_expr_t *a[6] = {0};
    for (size_t i = 0; i < np && i < 6; i++)
        a[i] = e->args[i].value;
    int ce = !strcmp(f, "cross_entropy") || !strcmp(f, "cross_entropy_grad");
    if (ce && np >= 2)
        r |= add_name(&R->onehot, &R->nonehot, a[1]);
    if (ce && np >= 3)
        r |= add_name(&R->mask, &R->nmask, a[2]);
    if ((!strcmp(f, "embedding") && np == 2) || (!strcmp(f, "embedding_grad") && np == 3))
        r |= add_name(&R->onehot, &R->nonehot, a[0]);
    if ((!strcmp(f, "softmax") || !strcmp(f, "dropout")) && np == 2)
        r |= add_name(&R->mask, &R->nmask, a[1]);
    if ((!strcmp(f, "attention") && np == 4) || (!strncmp(f, "attention_grad_", 15) && np == 5))
        r |= add_name(&R->mask, &R->nmask, a[3]);
    if (!strcmp(f, "where") && np == 3)
        r |= add_name(&R->mask, &R->nmask, a[0]);
    return r;
}

static int classify_block(rrun_t *R, const sp_ast_block_t *b)
{
    int r = 0;
    for (size_t i = 0; i < b->n; i++) {
        const sp_ast_stmt_t *s = b->stmts[i];
        r |= classify_expr(R, s->value);
        for (size_t k = 0; k < s->nvalues; k++)
            r |= classify_expr(R, s->values[k]);
        r |= classify_block(R, &s->body) | classify_block(R, &s->else_body);
    }
    return r;
}

/* ---- setup -------------------------------------------------------------------------------- */

static const sp_ast_stmt_t *find_item(const sp_ast_t *ast, sp_ast_stmt_kind_t kind, const char *name, int *count)
{
    const sp_ast_stmt_t *found = NULL;
    *count = 0;
    for (size_t i = 0; i < ast->nitems; i++)
        if (ast->items[i]->kind == kind && (name == NULL || strcmp(ast->items[i]->name.str, name) == 0)) {
            (*count)++;
            if (found == NULL)
                found = ast->items[i];
        }
    return found;
}

/* the top-level dims, in file order, into R (evaluated in the model's executor) */
static int setup_dims(rrun_t *R, rexec_t *X)
{
    const sp_ref_opts_t *o = R->opt;
    for (size_t k = 0; k < o->ndims; k++) { /* every override names a dim of the file */
        int found = 0;
        for (size_t i = 0; i < R->ast->nitems && !found; i++) {
            const sp_ast_stmt_t *s = R->ast->items[i];
            const sp_ast_block_t *bodies[2] = {NULL, NULL};
            if (s->kind == SP_STMT_MODEL || s->kind == SP_STMT_PLAN)
                bodies[0] = &s->body;
            for (size_t j = 0; s->kind == SP_STMT_DIM && j < s->nbinds; j++)
                found |= !strcmp(s->binds[j].name.str, o->dims[k].name);
            for (size_t j = 0; bodies[0] && j < bodies[0]->n; j++)
                for (size_t t = 0; bodies[0]->stmts[j]->kind == SP_STMT_DIM && t < bodies[0]->stmts[j]->nbinds; t++)
                    found |= !strcmp(bodies[0]->stmts[j]->binds[t].name.str, o->dims[k].name);
        }
        if (!found) {
            sp_loc_t l = {R->ast->file, 0, 0};
            return rx_error(X, SP_DIAG_NAME, l, "--dims: the file has no dim named '%s'", o->dims[k].name);
        }
    }
    for (size_t i = 0; i < R->ast->nitems; i++) {
        const sp_ast_stmt_t *s = R->ast->items[i];
        for (size_t j = 0; s->kind == SP_STMT_DIM && j < s->nbinds; j++) {
            const char *nm = s->binds[j].name.str;
            int64_t v = -1, w, vr;
            for (size_t k = 0; k < o->ndims; k++)
                if (!strcmp(o->dims[k].name, nm))
                    v = o->dims[k].value;
            /* the file's size beside the run's (its expression at the file's sizes); the run's
               extent is the override where there is one, and only it is noted (helper-62's
               review: the file's 11 noted beside an override of C to 7 mapped a chunk piece of
               11 elements to 11 at the real sizes, where it has 64) */
            if (!rx_ct_int2(X, s->binds[j].value, &w, &vr, "a dim"))
                return 0;
            if (v < 0)
                v = w;
            if (o->real_values)
                rc_note(&R->cmap, v, vr);
            if (v < 1)
                return rx_error(X, SP_DIAG_SHAPE, s->binds[j].name.loc, "dim %s = %lld is not positive", nm, (long long)v);
            for (int k = 0; k < R->ndims; k++)
                if (!strcmp(R->dimname[k], nm))
                    return rx_error(X, SP_DIAG_NAME, s->binds[j].name.loc, "dimension '%s' is declared twice", nm);
            char **dn = realloc(R->dimname, (size_t)(R->ndims + 1) * sizeof(char *));
            fmpq *dv = dn ? realloc(R->dimval, (size_t)(R->ndims + 1) * sizeof(fmpq)) : NULL;
            fmpq *dr = dv ? realloc(R->dimreal, (size_t)(R->ndims + 1) * sizeof(fmpq)) : NULL;
            if (dn)
                R->dimname = dn;
            if (dv)
                R->dimval = dv;
            if (dr)
                R->dimreal = dr;
            if (dn == NULL || dv == NULL || dr == NULL)
                return rx_limit(X, s->loc, "out of memory");
            dn[R->ndims] = (char *)nm;
            fmpq_init(&dv[R->ndims]);
            fmpq_init(&dr[R->ndims]);
            fmpq_set_si(&dv[R->ndims], v, 1);
            fmpq_set_si(&dr[R->ndims++], o->real_values ? vr : v, 1);
        }
    }
    return 1;
}

static int setup_mesh(rrun_t *R, rexec_t *X)
{
    const sp_ast_stmt_t *mesh = NULL;
    const sp_ast_block_t *b = &R->plan->body;
    for (size_t i = 0; i < b->n; i++)
        if (b->stmts[i]->kind == SP_STMT_MESH) {
            if (mesh)
                return rx_error(X, SP_DIAG_LAYOUT, b->stmts[i]->loc, "a second 'mesh'");
            mesh = b->stmts[i];
        }
    sp_loc_t pl = R->plan->loc;
    if (mesh == NULL)
        return rx_error(X, SP_DIAG_LAYOUT, pl, "plan %s has no 'mesh'", R->plan->name.str);
    if (mesh->nbinds > RMAXAX)
        return rx_error(X, SP_DIAG_LAYOUT, mesh->loc, "more than %d mesh axes", RMAXAX);
    int64_t n = 1;
    for (size_t i = 0; i < mesh->nbinds; i++) {
        int64_t v;
        if (!rx_ct_int(X, mesh->binds[i].value, &v, "a mesh size"))
            return 0;
        for (size_t k = 0; k < R->opt->nmesh; k++)
            if (!strcmp(R->opt->mesh[k].name, mesh->binds[i].name.str))
                v = R->opt->mesh[k].value;
        if (v < 1)
            return rx_error(X, SP_DIAG_LAYOUT, mesh->binds[i].value->loc, "mesh size %lld is not positive", (long long)v);
        if (rx_axis(R, mesh->binds[i].name.str) >= 0)
            return rx_error(X, SP_DIAG_LAYOUT, mesh->binds[i].name.loc, "mesh axis '%s' twice", mesh->binds[i].name.str);
        if (v > R->opt->max_ranks || n * v > R->opt->max_ranks)
            return rx_limit(X, mesh->loc, "the mesh has more than %d ranks (the limit max-ranks)", R->opt->max_ranks);
        n *= v;
        R->axname[R->naxes] = mesh->binds[i].name.str;
        R->axsize[R->naxes++] = (int)v;
    }
    R->nranks = (int)n;
    return 1;
}

/* the diagnostics of executor X into d (skipping those already there) */
static void merge_diags(sp_diags_t d, const rexec_t *X)
{
    for (size_t i = 0; i < sp_diags_count(X->d); i++) {
        const sp_diag_t *g = sp_diags_get(X->d, i);
        int dup = 0;
        for (size_t k = 0; k < sp_diags_count(d) && !dup; k++) {
            const sp_diag_t *h = sp_diags_get(d, k);
            dup = h->line == g->line && h->col == g->col && !strcmp(h->msg, g->msg);
        }
        sp_loc_t l = {g->file, g->line, g->col};
        if (!dup)
            sp_diags_add(d, g->severity, g->code, l, "%s", g->msg);
    }
}

static void rr_free(rrun_t *R)
{
    rm_free(R);
    if (R->M) {
        rx_clear(R->M);
        free(R->M);
    }
    for (int i = 0; i < R->ndims; i++) {
        fmpq_clear(&R->dimval[i]);
        fmpq_clear(&R->dimreal[i]);
    }
    free(R->dimname);
    free(R->dimval);
    free(R->dimreal);
    free(R->cmap.key);
    free(R->cmap.val);
    pthread_mutex_destroy(&R->cmap.mu);
    for (int i = 0; i < R->ninp; i++)
        free(R->inp[i].key);
    free(R->inp);
    for (int i = 0; i < R->nonehot; i++)
        free(R->onehot[i]);
    for (int i = 0; i < R->nmask; i++)
        free(R->mask[i]);
    free(R->onehot);
    free(R->mask);
    given_index_t *G = given_of(R);
    if (G)
        free(G->g);
    free(G);
    memset(R, 0, sizeof(*R));
}

/* ---- the count map (opts.real_values) ---------------------------------------------------- */

/*
 * With opts.real_values the run takes shapes at the given sizes and sizes used as values at the
 * file's, as the checker's program at its checked sizes does (docs/soundness.md, "Sizes as
 * values").  An operator's count (a mean's elements, a norm's row, cross entropy's classes and
 * positions, attention's default scale's head dim) is an extent at the run's sizes; its value at
 * the file's is the one the program wrote that extent with: every extent it writes (a dim, a
 * declared size, a shape list's element, an even shard of a layout) is noted at both sizes.  A
 * size the shape reduction accepts keeps every multiplicative relation of the file's sizes
 * (docs/soundness.md, "Shape reduction"), so one extent at the run's sizes is one at the file's;
 * where two were noted, or none, the count is not known and the operator refuses to run (no
 * guess: a witness from a wrong count would be one of another program).
 */
void rc_note(rcmap_t *m, int64_t e, int64_t r)
{
    pthread_mutex_lock(&m->mu);
    size_t i = 0;
    while (i < m->n && m->key[i] != e)
        i++;
    if (i < m->n) {
        if (m->val[i] != r)
            m->val[i] = -1; /* two values at the file's sizes */
    } else {
        if (m->n == m->cap) {
            size_t c = m->cap ? 2 * m->cap : 32;
            int64_t *k = realloc(m->key, c * sizeof(int64_t));
            int64_t *v = k ? realloc(m->val, c * sizeof(int64_t)) : NULL;
            if (k)
                m->key = k;
            if (v)
                m->val = v;
            if (k && v)
                m->cap = c;
        }
        if (m->n < m->cap) {
            m->key[m->n] = e;
            m->val[m->n++] = r > 0 ? r : -1;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

int rc_count(ropc_t *c, int64_t e, int64_t *r)
{
    *r = e;
    if (c->cm == NULL)
        return 1;
    rcmap_t *m = c->cm;
    int64_t v = 0;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n && v == 0; i++)
        if (m->key[i] == e)
            v = m->val[i];
    pthread_mutex_unlock(&m->mu);
    if (e == 1)
        v = 1; /* an extent of 1 (a kept or unsqueezed dim) is 1 at the file's sizes too: the
                  shape reduction never takes a size above 1 to 1 (a dim given at 1 by hand
                  notes 1 -> its file size, which no axis of one element has: helper-63) */
    if (v <= 0)
        return 0;
    *r = v;
    return 1;
}

/* Set up R and run the model: 1, or 0 with res->verdict (ERROR, TOO_LARGE) and d filled. */
static int start(rrun_t *R, const sp_ast_t *ast, const sp_ref_opts_t *opt, long prec, const char *model,
                 int want_plan, sp_ref_result_t *res, sp_diags_t d)
{
    memset(R, 0, sizeof(*R));
    pthread_mutex_init(&R->cmap.mu, NULL);
    R->ast = ast;
    R->opt = opt;
    R->prec = prec;
    R->mem.max = opt->max_mem_mb * (1LL << 20);
    atomic_init(&R->mem.used, 0);
    R->M = malloc(sizeof(rexec_t));
    if (R->M == NULL || given_build(R) < 0 || rx_init(R->M, R, -1) < 0)
        return (res->verdict = SP_REF_TOO_LARGE, res->limit = strdup("out of memory"), 0);
    rexec_t *X = R->M;
    sp_loc_t fl = {ast->file, 0, 0};
    int n, ok = 1;
    if (want_plan) {
        R->plan = find_item(ast, SP_STMT_PLAN, opt->plan, &n);
        if (R->plan == NULL)
            ok = opt->plan ? rx_error(X, SP_DIAG_NAME, fl, "no plan named '%s'", opt->plan)
                           : rx_error(X, SP_DIAG_NAME, fl, "the file has no plan");
        else if (opt->plan == NULL && n > 1)
            ok = rx_error(X, SP_DIAG_NAME, fl, "the file has %d plans: choose one with --plan", n);
        else
            model = R->plan->of.str;
    }
    if (ok) {
        R->model = find_item(ast, SP_STMT_MODEL, model, &n);
        if (R->model == NULL)
            ok = rx_error(X, SP_DIAG_NAME, want_plan ? R->plan->of.loc : fl, model ? "no model named '%s'" : "the file has no model%s",
                          model ? model : "");
        else if (model == NULL && n > 1)
            ok = rx_error(X, SP_DIAG_NAME, fl, "the file has %d models", n);
    }
    ok = ok && classify_block(R, &R->model->body) == 0 && setup_dims(R, X) && (!want_plan || setup_mesh(R, X)) &&
         rx_model(X);
    merge_diags(d, X);
    if (ok)
        return 1;
    res->verdict = X->limit ? SP_REF_TOO_LARGE : SP_REF_ERROR;
    res->count_unknown = X->count_unknown;
    if (X->limit)
        res->limit = strdup(X->limmsg);
    return 0;
}

/* ---- comparison --------------------------------------------------------------------------- */

/* One model tensor the plan outputs: which elements some rank holds, and the first value. */
typedef struct {
    const char *key;
    const rten_t *m;
    uint8_t *held;
    rv_t *first;
    int64_t n;
} rcov_t;

static const rout_t *match_out(const rexec_t *X, const rout_t *o)
{
    for (int i = 0; i < X->npout; i++)
        if (!strcmp(X->pout[i].key, o->key) && X->pout[i].occ == o->occ)
            return &X->pout[i];
    return NULL;
}

/* The value of element i of output o of rank r after the pending reductions from level e on. */
static int reduced(rrun_t *R, int r, const rout_t *o, int e, int64_t i, rv_t *v, sp_diags_t d)
{
    const rout_t *mine = match_out(R->X[r], o);
    char a[200], b[200];
    if (mine == NULL || mine->n != o->n || memcmp(&mine->L, &o->L, sizeof(rlayout_t)) != 0) {
        rx_coords_str(R, r, a, sizeof(a));
        sp_diags_error(d, SP_DIAG_LAYOUT, o->loc, "output %s is partial over a group whose member %s does not output it%s",
                       o->key, a, mine ? " with the same layout" : "");
        return 0;
    }
    if (e == o->L.np) {
        rv_set(v, &mine->v[i]);
        return 1;
    }
    int n = rm_group_size(R, o->L.pmask[e]), ok = 1;
    rv_t x;
    rv_init(&x);
    for (int k = 0; ok && k < n; k++) {
        int m = (int)rm_group_rank(R, r, o->L.pmask[e], k, NULL);
        ok = reduced(R, m, o, e + 1, i, k ? &x : v, d);
        if (ok && k) {
            if (o->L.pop[e] <= 1)
                rv_add(v, v, &x, R->prec);
            else
                rv_max(v, v, &x, o->L.pop[e] == 2, R->prec);
        }
    }
    if (ok && o->L.pop[e] == 1) {
        rv_set_si(&x, n, 1);
        rv_div(v, v, &x, R->prec);
    }
    rv_clear(&x);
    (void)b;
    return ok;
}

static char *index_str(int nd, const int64_t *sh, int64_t f)
{
    int64_t idx[RMAXD];
    char buf[300];
    for (int d = nd - 1; d >= 0; d--)
        idx[d] = f % sh[d], f /= sh[d];
    rt_shape_str(buf, sizeof(buf), nd, idx);
    return strdup(buf);
}

/* plan value p against model value m: 0 equal, 1 overlap, 2 undecided, 3 model undefined,
   4 plan undefined (a difference), 5 differ */
static int classify(const rv_t *p, const rv_t *m, slong prec)
{
    if (m->taint)
        return (m->taint & (RT_UNDEC | RT_TIE)) ? 2 : 3;
    if (p->taint)
        return (p->taint & (RT_UNDEC | RT_TIE)) ? 2 : 4;
    int c = rv_cmp(p, m, prec);
    if (!p->ball && !m->ball)
        return c == 0 ? 0 : 5;
    return c == 2 || c == 0 ? 1 : 5;
}

static void note_diff(rrun_t *R, sp_ref_result_t *res, sp_ref_diff_kind_t kind, int r, const rout_t *o, int64_t li,
                      const rcov_t *cv, int64_t g, const rv_t *p, const rv_t *m)
{
    if (res->output != NULL)
        return;
    char buf[200];
    res->kind = kind;
    res->output = strdup(cv->key);
    res->rank = r;
    if (o && (res->file = strdup(o->loc.file ? o->loc.file : "")) != NULL) {
        res->loc = o->loc;
        res->loc.file = res->file;
    }
    if (r >= 0) {
        rx_coords_str(R, r, buf, sizeof(buf));
        res->coords = strdup(buf);
        res->local_index = index_str(o->L.nd, o->L.lsh, li);
    }
    res->global_index = index_str(cv->m->nd, cv->m->sh, g);
    res->plan_value = p ? rv_str(p) : strdup("(no rank holds it)");
    res->model_value = rv_str(m);
}

static int compare(rrun_t *R, sp_ref_result_t *res, sp_diags_t d)
{
    rcov_t *cov = NULL;
    int ncov = 0, ok = 1, any = 0;
    rv_t p;
    rv_init(&p);
    const rexec_t *M = R->M;
    for (int r = 0; ok && r < R->nranks; r++) {
        const rexec_t *X = R->X[r];
        for (int k = 0; ok && k < X->npout; k++) {
            const rout_t *o = &X->pout[k];
            int c = 0;
            any = 1;
            while (c < ncov && strcmp(cov[c].key, o->key))
                c++;
            if (c == ncov) {
                rcov_t *nc = realloc(cov, (size_t)(ncov + 1) * sizeof(rcov_t));
                if (nc == NULL) {
                    ok = 0;
                    break;
                }
                cov = nc;
                rcov_t *cv = &cov[ncov++];
                cv->key = o->key;
                cv->m = &renv_find(&M->genv, o->key, 0)->t;
                cv->n = rt_numel(cv->m);
                cv->held = calloc((size_t)cv->n + 1, 1);
                cv->first = malloc(((size_t)cv->n + 1) * sizeof(rv_t));
                if (cv->held == NULL || cv->first == NULL) {
                    ok = 0;
                    break;
                }
            }
            rcov_t *cv = &cov[c];
            int64_t idx[RMAXD];
            for (int64_t i = 0; ok && i < o->n; i++) {
                int64_t f = i, g = 0;
                for (int dd = o->L.nd - 1; dd >= 0; dd--)
                    idx[dd] = f % o->L.lsh[dd], f /= o->L.lsh[dd];
                for (int dd = 0; dd < o->L.nd; dd++)
                    g = g * o->L.gsh[dd] + o->L.off[dd] + idx[dd];
                if (!(ok = reduced(R, r, o, 0, i, &p, d)))
                    break;
                const rv_t *m = rs_val(&M->S, cv->m->id[g]);
                int cl = classify(&p, m, R->prec);
                res->compared++;
                res->undecided_prec += cl == 2 && ((p.taint | m->taint) & RT_UNDEC) && !((p.taint | m->taint) & RT_TIE);
                int64_t *cnt[] = {&res->equal, &res->overlap, &res->undecided, &res->model_undefined,
                                  &res->plan_undefined, &res->differ};
                (*cnt[cl])++;
                if (cl >= 4)
                    note_diff(R, res, cl == 4 ? SP_REF_DIFF_UNDEFINED : SP_REF_DIFF_VALUE, r, o, i, cv, g, &p, m);
                if (!cv->held[g]) {
                    cv->held[g] = 1;
                    rv_init(&cv->first[g]);
                    rv_set(&cv->first[g], &p);
                } else if (cl < 4 && classify(&p, &cv->first[g], R->prec) >= 4 && !cv->first[g].taint) {
                    res->differ++;
                    note_diff(R, res, SP_REF_DIFF_REPLICA, r, o, i, cv, g, &p, &cv->first[g]);
                }
            }
        }
    }
    if (ok && !any) {
        sp_diags_error(d, SP_DIAG_LINEAGE, R->plan->loc, "plan %s outputs nothing", R->plan->name.str);
        ok = 0;
    }
    for (int c = 0; ok && c < ncov; c++)
        for (int64_t g = 0; g < cov[c].n; g++)
            if (!cov[c].held[g]) {
                res->uncovered++;
                note_diff(R, res, SP_REF_DIFF_UNCOVERED, -1, NULL, 0, &cov[c], g, NULL, rs_val(&M->S, cov[c].m->id[g]));
            }
    /* model outputs the plan never outputs */
    for (int i = -1; ok && i < R->ninp; i++) {
        static const char *const pre[] = {"grad.", "next.", "next.momentum.", "next.adam.m.", "next.adam.v."};
        for (int k = 0; k < (i < 0 ? M->nouts : 5); k++) {
            char key[700];
            if (i < 0)
                snprintf(key, sizeof(key), "%s", M->outs[k]);
            else if (R->inp[i].kind == 1 && M->train)
                snprintf(key, sizeof(key), "%s%s", pre[k], R->inp[i].key);
            else
                continue;
            int seen = !renv_find(&M->genv, key, 0);
            for (int c = 0; c < ncov && !seen; c++)
                seen = !strcmp(cov[c].key, key);
            for (size_t c = 0; c < res->nnot_covered && !seen; c++)
                seen = !strcmp(res->not_covered[c], key);
            char **nc = seen ? NULL : realloc(res->not_covered, (res->nnot_covered + 1) * sizeof(char *));
            if (nc) {
                res->not_covered = nc;
                nc[res->nnot_covered++] = strdup(key);
            }
        }
    }
    for (int c = 0; c < ncov; c++) {
        for (int64_t g = 0; g < cov[c].n; g++)
            if (cov[c].held[g])
                rv_clear(&cov[c].first[g]);
        free(cov[c].held);
        free(cov[c].first);
    }
    free(cov);
    rv_clear(&p);
    return ok;
}

/* ---- the run ------------------------------------------------------------------------------------ */

void sp_ref_opts_default(sp_ref_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->seed = 1;
    o->max_elements = (int64_t)1 << 20;
    o->max_ranks = 256;
    o->max_mem_mb = 4096;
    o->prec = 256;
    o->max_prec = 1024;
}

void sp_ref_result_init(sp_ref_result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->rank = -1;
    sp_ref_inputs_init(r->inputs);
}

void sp_ref_result_clear(sp_ref_result_t *r)
{
    free(r->model), free(r->plan), free(r->mesh), free(r->limit), free(r->output), free(r->coords), free(r->file);
    free(r->local_index), free(r->global_index), free(r->plan_value), free(r->model_value);
    for (size_t i = 0; i < r->nnot_covered; i++)
        free(r->not_covered[i]);
    free(r->not_covered);
    sp_ref_inputs_clear(r->inputs);
    sp_ref_obs_list_clear(&r->obs_model);
    for (int i = 0; i < r->nobs_rank; i++)
        sp_ref_obs_list_clear(&r->obs_rank[i]);
    free(r->obs_rank);
    sp_ref_result_init(r);
}

/* opts.observe: move every rank's observations and every model tensor into res */
static void keep_observations(rrun_t *R, sp_ref_result_t *res)
{
    res->obs_rank = calloc((size_t)R->nranks, sizeof(sp_ref_obs_list_t));
    if (res->obs_rank == NULL)
        return;
    res->nobs_rank = R->nranks;
    for (int r = 0; r < R->nranks; r++) {
        res->obs_rank[r] = R->X[r]->obs;
        memset(&R->X[r]->obs, 0, sizeof(R->X[r]->obs));
    }
    const renv_t *g = &R->M->genv;
    for (size_t i = 0; i < g->n; i++)
        if (!g->b[i].isint && rx_observe(&res->obs_model, &R->M->S, NULL, g->b[i].key, 0,
                                         &g->b[i].t) < 0)
            break;
}

static sp_status_t run_once(const sp_ast_t *ast, const sp_ref_opts_t *opt, long prec, sp_ref_result_t *res, sp_diags_t d)
{
    rrun_t R;
    res->seed = opt->seed;
    res->prec = prec;
    if (!start(&R, ast, opt, prec, NULL, 1, res, d)) {
        rr_free(&R);
        return SP_OK;
    }
    res->model = strdup(R.model->name.str);
    res->plan = strdup(R.plan->name.str);
    res->nranks = R.nranks;
    char buf[600];
    size_t k = 0;
    for (int a = 0; a < R.naxes && k < sizeof(buf); a++)
        k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%s=%d", a ? " " : "", R.axname[a], R.axsize[a]);
    buf[k < sizeof(buf) ? k : sizeof(buf) - 1] = 0;
    res->mesh = strdup(buf);
    if (!rm_run_ranks(&R, d)) {
        res->verdict = SP_REF_TOO_LARGE;
        res->limit = strdup("cannot start one thread per rank (the limit threads)");
        rr_free(&R);
        return SP_OK;
    }
    int failed = 0, real = 0;
    for (int r = 0; r < R.nranks; r++) {
        failed |= R.X[r]->failed;
        res->count_unknown |= R.X[r]->count_unknown;
        real |= R.X[r]->failed && !R.X[r]->deadlocked;
    }
    for (int r = 0; r < R.nranks && res->limit == NULL; r++)
        if (R.X[r]->limit)
            res->limit = strdup(R.X[r]->limmsg);
    for (int r = 0; r < R.nranks && res->limit == NULL; r++)
        if (!real || !R.X[r]->deadlocked)
            merge_diags(d, R.X[r]);
    if (res->limit)
        res->verdict = SP_REF_TOO_LARGE;
    else if (failed || sp_diags_error_count(d) > 0 || !compare(&R, res, d))
        res->verdict = SP_REF_ERROR;
    else if (res->differ + res->plan_undefined + res->uncovered > 0)
        res->verdict = SP_REF_DIFFER;
    else
        res->verdict = res->overlap + res->undecided > 0 ? SP_REF_UNDECIDED : SP_REF_AGREE;
    if (opt->observe && (res->verdict == SP_REF_AGREE || res->verdict == SP_REF_UNDECIDED ||
                         res->verdict == SP_REF_DIFFER))
        keep_observations(&R, res);
    if (res->verdict == SP_REF_DIFFER) /* every input value, to re-run */
        for (int i = 0; i < R.ninp; i++) {
            const rten_t *t = &renv_find(&R.M->genv, R.inp[i].key, 0)->t;
            for (int64_t e = 0, n = rt_numel(t); e < n; e++)
                if (sp_ref_inputs_add(res->inputs, R.inp[i].key, e, &rs_val(&R.M->S, t->id[e])->q) < 0)
                    break;
        }
    rr_free(&R);
    return SP_OK;
}

sp_status_t sp_ref_run(const sp_ast_t *ast, const sp_ref_opts_t *opt, sp_ref_result_t *res, sp_diags_t d)
{
    sp_ref_opts_t o;
    if (opt == NULL) {
        sp_ref_opts_default(&o);
        opt = &o;
    }
    long prec = opt->prec > 16 ? opt->prec : 16;
    for (;;) {
        sp_diags_mark_t mk;
        sp_diags_mark(d, &mk);
        sp_ref_result_clear(res);
        sp_status_t st = run_once(ast, opt, prec, res, d);
        /* undecided comparisons may be decided with more bits */
        if (st != SP_OK || res->verdict != SP_REF_UNDECIDED || res->undecided_prec == 0 || prec * 4 > opt->max_prec)
            return st;
        sp_diags_restore(d, &mk);
        prec *= 4;
    }
}

sp_status_t sp_ref_model_values(const sp_ast_t *ast, const sp_ref_opts_t *opt, const char *model, const char *tensor,
                                char ***vals, int64_t *n, int *nd, int64_t shape[8], sp_diags_t d)
{
    sp_ref_opts_t o;
    if (opt == NULL) {
        sp_ref_opts_default(&o);
        opt = &o;
    }
    rrun_t R;
    sp_ref_result_t res;
    sp_ref_result_init(&res);
    *vals = NULL;
    *n = 0;
    sp_status_t st = SP_ERR_INPUT;
    if (start(&R, ast, opt, opt->prec, model, 0, &res, d)) {
        rbind_t *b = renv_find(&R.M->genv, tensor, 0);
        if (b == NULL || b->isint) {
            sp_loc_t l = {ast->file, 0, 0};
            sp_diags_error(d, SP_DIAG_NAME, l, "model %s has no tensor '%s'", R.model->name.str, tensor);
        } else {
            *n = rt_numel(&b->t);
            *nd = b->t.nd;
            memcpy(shape, b->t.sh, sizeof(int64_t) * RMAXD);
            *vals = malloc((size_t)(*n + 1) * sizeof(char *));
            for (int64_t i = 0; *vals && i < *n; i++)
                (*vals)[i] = rv_str(rs_val(&R.M->S, b->t.id[i]));
            st = *vals ? SP_OK : SP_ERR_NOMEM;
        }
    }
    sp_ref_result_clear(&res);
    rr_free(&R);
    return st;
}

/* ---- input assignments ------------------------------------------------------------------------ */

void sp_ref_inputs_init(sp_ref_inputs_t in) { memset(in, 0, sizeof(*in)); }

void sp_ref_inputs_clear(sp_ref_inputs_t in)
{
    for (size_t i = 0; i < in->n; i++) {
        free(in->name[i]);
        fmpq_clear(&in->val[i]);
    }
    free(in->name), free(in->index), free(in->val);
    memset(in, 0, sizeof(*in));
}

int sp_ref_inputs_add(sp_ref_inputs_t in, const char *name, int64_t index, const fmpq_t v)
{
    if (in->n == in->alloc) {
        size_t a = in->alloc ? 2 * in->alloc : 16;
        char **nm = realloc(in->name, a * sizeof(char *));
        int64_t *ix = nm ? realloc(in->index, a * sizeof(int64_t)) : NULL;
        fmpq *vv = ix ? realloc(in->val, a * sizeof(fmpq)) : NULL;
        if (nm)
            in->name = nm;
        if (ix)
            in->index = ix;
        if (vv)
            in->val = vv;
        if (vv == NULL)
            return -1;
        in->alloc = a;
    }
    if ((in->name[in->n] = strdup(name)) == NULL)
        return -1;
    in->index[in->n] = index;
    fmpq_init(&in->val[in->n]);
    fmpq_set(&in->val[in->n++], v);
    return 0;
}

void sp_ref_inputs_print(FILE *out, const sp_ref_inputs_t in)
{
    for (size_t i = 0; i < in->n; i++) {
        fprintf(out, "%s[%lld] = ", in->name[i], (long long)in->index[i]);
        fmpq_fprint(out, &in->val[i]);
        fputc('\n', out);
    }
}

int sp_ref_inputs_parse(sp_ref_inputs_t in, const char *text, char *err, size_t errlen)
{
    int line = 0, ok = 1;
    fmpq_t q;
    fmpq_init(q);
    for (const char *p = text; *p && ok;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char buf[1200], *lb, *rb, *eq, *end;
        line++;
        snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), p);
        p += len + (e != NULL);
        if ((lb = strchr(buf, '#')) != NULL)
            *lb = 0;
        if (strspn(buf, " \t\r") == strlen(buf))
            continue;
        /* NAME[INDEX] = P/Q, where NAME may itself be indexed (wq[1]) */
        eq = strchr(buf, '=');
        ok = len < sizeof(buf) - 1 && eq != NULL;
        if (ok) {
            *eq = 0;
            rb = strrchr(buf, ']');
            lb = strrchr(buf, '[');
            ok = rb && lb && lb < rb && lb > buf && strspn(rb + 1, " \t") == strlen(rb + 1);
        }
        long long idx = -1;
        if (ok) {
            *lb = *rb = 0;
            idx = strtoll(lb + 1, &end, 10);
            ok = end != lb + 1 && *end == 0 && idx >= 0;
        }
        char *name = buf, *val = eq + 1;
        while (ok && (*name == ' ' || *name == '\t'))
            name++;
        while (ok && (*val == ' ' || *val == '\t'))
            val++;
        if (ok)
            val[strcspn(val, " \t\r")] = 0;
        ok = ok && *name && fmpq_set_str(q, val, 10) == 0 && !fmpz_is_zero(fmpq_denref(q));
        if (!ok)
            snprintf(err, errlen, "line %d: expected NAME[INDEX] = P/Q", line);
        else {
            fmpq_canonicalise(q);
            if (sp_ref_inputs_add(in, name, idx, q) < 0) {
                snprintf(err, errlen, "out of memory");
                ok = 0;
            }
        }
    }
    fmpq_clear(q);
    return ok ? 0 : -1;
}
