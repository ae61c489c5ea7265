/* ref_exec.c: the reference executor's interpreter of model and plan statements, and train. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ref_int.h"

/* ---- errors ------------------------------------------------------------------------------ */

int rx_error(rexec_t *X, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sp_diags_vadd(X->d, SP_SEV_ERROR, code, loc, fmt, ap);
    va_end(ap);
    X->failed = 1;
    return 0;
}

int rx_limit(rexec_t *X, sp_loc_t loc, const char *fmt, ...)
{
    if (X->failed)
        return 0;
    int k = snprintf(X->limmsg, sizeof(X->limmsg), "%s:%u:%u: ", loc.file ? loc.file : "",
                     (unsigned)loc.line, (unsigned)loc.col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(X->limmsg + k, sizeof(X->limmsg) - (size_t)k, fmt, ap);
    va_end(ap);
    X->failed = X->limit = 1;
    return 0;
}

static int over(rexec_t *X, sp_loc_t loc)
{
    return X->S.over ? rx_limit(X, loc, "the scalar nodes exceed the memory limit (max-mem)") : 1;
}

/* ---- environments --------------------------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

void renv_init(renv_t *e, renv_t *parent)
{
    memset(e, 0, sizeof(*e));
    e->parent = parent;
}

void renv_clear(renv_t *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->b[i].key);
        fmpq_clear(&e->b[i].q);
        fmpq_clear(&e->b[i].qr);
        rt_clear(&e->b[i].t);
    }
    free(e->b);
    free(e->ht);
    memset(e, 0, sizeof(*e));
}

static rbind_t *find1(const renv_t *e, const char *key)
{
    if (e->hcap == 0)
        return NULL;
    for (size_t h = hash_str(key) & (e->hcap - 1);; h = (h + 1) & (e->hcap - 1)) {
        uint32_t v = e->ht[h];
        if (v == 0)
            return NULL;
        if (strcmp(e->b[v - 1].key, key) == 0)
            return &e->b[v - 1];
    }
}

rbind_t *renv_find(const renv_t *e, const char *key, int chain)
{
    for (; e; e = chain ? e->parent : NULL) {
        rbind_t *b = find1(e, key);
        if (b)
            return b->isint < 0 ? NULL : b;
    }
    return NULL;
}

static rbind_t *slot(renv_t *e, const char *key)
{
    rbind_t *b = find1(e, key);
    if (b) {
        rt_clear(&b->t);
        return b;
    }
    if (2 * (e->n + 1) > e->hcap) {
        size_t hc = e->hcap ? 2 * e->hcap : 64;
        uint32_t *ht = calloc(hc, sizeof(uint32_t));
        if (ht == NULL)
            return NULL;
        for (size_t i = 0; i < e->n; i++) {
            size_t h = hash_str(e->b[i].key) & (hc - 1);
            while (ht[h])
                h = (h + 1) & (hc - 1);
            ht[h] = (uint32_t)i + 1;
        }
        free(e->ht);
        e->ht = ht;
        e->hcap = hc;
    }
    if (e->n == e->cap) {
        size_t c = e->cap ? 2 * e->cap : 32;
        rbind_t *nb = realloc(e->b, c * sizeof(rbind_t));
        if (nb == NULL)
            return NULL;
        e->b = nb;
        e->cap = c;
    }
    b = &e->b[e->n];
    memset(b, 0, sizeof(*b));
    if ((b->key = strdup(key)) == NULL)
        return NULL;
    fmpq_init(&b->q);
    fmpq_init(&b->qr);
    size_t h = hash_str(key) & (e->hcap - 1);
    while (e->ht[h])
        h = (h + 1) & (e->hcap - 1);
    e->ht[h] = (uint32_t)++e->n;
    return b;
}

int renv_set_take(renv_t *e, const char *key, rten_t *t)
{
    rbind_t *b = slot(e, key);
    if (b == NULL)
        return -1;
    b->isint = 0;
    b->obs1 = 0;
    b->t = *t;
    rt_init(t);
    return 0;
}

int renv_set_int(renv_t *e, const char *key, const fmpq_t q, const fmpq_t qr)
{
    rbind_t *b = slot(e, key);
    if (b == NULL)
        return -1;
    b->isint = 1;
    fmpq_set(&b->q, q);
    fmpq_set(&b->qr, qr);
    return 0;
}

void renv_unset(renv_t *e, const char *key)
{
    rbind_t *b = find1(e, key);
    if (b) {
        rt_clear(&b->t);
        b->isint = -1;
    }
}

void xv_init(xval_t *v)
{
    v->kind = XV_NONE;
    fmpq_init(&v->q);
    fmpq_init(&v->qr);
    rt_init(&v->t);
    v->name = NULL;
}

void xv_clear(xval_t *v)
{
    fmpq_clear(&v->q);
    fmpq_clear(&v->qr);
    rt_clear(&v->t);
    v->kind = XV_NONE;
}

/* ---- executors ---------------------------------------------------------------------------- */

int rx_init(rexec_t *X, rrun_t *R, int rank)
{
    memset(X, 0, sizeof(*X));
    X->R = R;
    X->rank = rank;
    rs_init(&X->S, R->prec, &R->mem);
    renv_init(&X->genv, NULL);
    X->env = &X->genv;
    sp_diags_init(X->d);
    X->wait_src = -1;
    for (int a = R->naxes - 1, r = rank; a >= 0 && rank >= 0; a--) {
        X->coord[a] = r % R->axsize[a];
        r /= R->axsize[a];
    }
    return X->S.over ? -1 : 0;
}

static void free_ret(rexec_t *X)
{
    for (int i = 0; i < X->nret; i++)
        xv_clear(&X->ret[i]);
    free(X->ret);
    X->ret = NULL;
    X->nret = 0;
}

void rx_clear(rexec_t *X)
{
    rs_clear(&X->S);
    renv_clear(&X->genv);
    sp_diags_clear(X->d);
    free_ret(X);
    for (int i = 0; i < X->nouts; i++)
        free(X->outs[i]);
    free(X->outs);
    for (int i = 0; i < X->npout; i++) {
        for (int64_t k = 0; k < X->pout[i].n; k++)
            rv_clear(&X->pout[i].v[k]);
        free(X->pout[i].v);
        free(X->pout[i].key);
    }
    free(X->pout);
    free(X->seq);
    free(X->seqmask);
    sp_ref_obs_list_clear(&X->obs);
    free(X->occ_s);
    free(X->reads);
    free(X->occ_n);
}

void sp_ref_obs_list_clear(sp_ref_obs_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->o[i].name);
        free(l->o[i].v);
        free(l->o[i].in);
    }
    free(l->o);
    memset(l, 0, sizeof(*l));
}

/* a value as an approximate double (proposals only, src/infer.c); NaN when it is no number */
static double approx(const rv_t *v)
{
    if (v->taint)
        return NAN;
    if (!v->ball)
        return fmpq_get_d(&v->q);
    return arf_get_d(arb_midref(&v->b), ARF_RND_NEAR);
}

int rx_observe(sp_ref_obs_list_t *l, const rstore_t *S, const sp_ast_stmt_t *stmt,
               const char *name, int occ, const rten_t *t)
{
    if (t->nd > 8)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        sp_ref_obs_t *o = realloc(l->o, cap * sizeof(*o));
        if (o == NULL)
            return -1;
        l->o = o;
        l->cap = cap;
    }
    int64_t n = rt_numel(t);
    sp_ref_obs_t *o = &l->o[l->n];
    memset(o, 0, sizeof(*o));
    o->stmt = stmt;
    o->occ = occ;
    o->nd = t->nd;
    memcpy(o->sh, t->sh, (size_t)t->nd * sizeof(int64_t));
    o->name = strdup(name);
    o->v = malloc((size_t)(n ? n : 1) * sizeof(double));
    if (o->name == NULL || o->v == NULL) {
        free(o->name);
        free(o->v);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        o->v[i] = approx(rs_val(S, t->id[i]));
    l->n++;
    return 0;
}

/*
 * opts.observe: record a value of statement s on this rank (an assignment's target, a send's
 * message) with its occurrence number, its logical clock, and its operands: the observations
 * read since the statement began (reads[start..]), each once.  Returns the observation's index
 * + 1, or 0 on an error.
 */
int64_t rx_observe_value(rexec_t *X, const sp_ast_stmt_t *s, const char *name, const rten_t *t,
                         int start, sp_loc_t loc)
{
    int k = 0;
    while (k < X->nocc && X->occ_s[k] != s)
        k++;
    if (k == X->nocc) {
        const sp_ast_stmt_t **ns = realloc(X->occ_s, (size_t)(k + 1) * sizeof(*ns));
        if (ns == NULL)
            return rx_limit(X, loc, "out of memory");
        X->occ_s = ns;
        int *nn = realloc(X->occ_n, (size_t)(k + 1) * sizeof(int));
        if (nn == NULL)
            return rx_limit(X, loc, "out of memory");
        X->occ_n = nn;
        X->occ_s[k] = s;
        X->occ_n[k] = 0;
        X->nocc++;
    }
    int occ = X->occ_n[k]++;
    if (rx_observe(&X->obs, &X->S, s, name, occ, t) < 0)
        return rx_limit(X, loc, "out of memory");
    sp_ref_obs_t *o = &X->obs.o[X->obs.n - 1];
    o->clock = ++X->clock;
    if (X->nreads > start && (o->in = malloc((size_t)(X->nreads - start) * sizeof(int64_t))) == NULL)
        return rx_limit(X, loc, "out of memory");
    for (int i = start; i < X->nreads; i++) {
        int seen = 0;
        for (int j = 0; j < o->nin && !seen; j++)
            seen = o->in[j] == X->reads[i];
        if (!seen)
            o->in[o->nin++] = X->reads[i];
    }
    return (int64_t)X->obs.n;
}

static int observe_assign(rexec_t *X, const sp_ast_stmt_t *s, const char *key, int start,
                          sp_loc_t loc)
{
    rbind_t *b = renv_find(X->env, key, 1);
    if (b == NULL || b->isint)
        return 1;
    int64_t i = rx_observe_value(X, s, key, &b->t, start, loc);
    b->obs1 = (int32_t)i;
    return i > 0;
}

int rx_note_read(rexec_t *X, int64_t rank, int64_t idx, sp_loc_t loc)
{
    if (X->nreads == X->areads) {
        int n = X->areads ? 2 * X->areads : 64;
        int64_t *r = realloc(X->reads, (size_t)n * sizeof(int64_t));
        if (r == NULL)
            return rx_limit(X, loc, "out of memory");
        X->reads = r;
        X->areads = n;
    }
    X->reads[X->nreads++] = SP_REF_OBS_ID(rank, idx);
    return 1;
}

/* opts.observe: a read of binding b by the statement being executed */
static int note_read(rexec_t *X, const rbind_t *b, sp_loc_t loc)
{
    if (b->obs1 == 0 || X->rank < 0 || !X->R->opt->observe)
        return 1;
    return rx_note_read(X, X->rank, b->obs1 - 1, loc);
}

int rx_axis(const rrun_t *R, const char *name)
{
    for (int a = 0; a < R->naxes; a++)
        if (strcmp(R->axname[a], name) == 0)
            return a;
    return -1;
}

void rx_coords_str(const rrun_t *R, int rank, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "(");
    int c[RMAXAX];
    for (int a = R->naxes - 1, r = rank; a >= 0; a--) {
        c[a] = r % R->axsize[a];
        r /= R->axsize[a];
    }
    for (int a = 0; a < R->naxes && k < len; a++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s=%d", a ? ", " : "", R->axname[a], c[a]);
    if (k < len)
        snprintf(buf + k, len - k, ")");
}

/* ---- compile-time values ------------------------------------------------------------------ */

static int dim_value(const rrun_t *R, const char *name, fmpq_t q, fmpq_t qr)
{
    for (int i = R->ndims - 1; i >= 0; i--)
        if (strcmp(R->dimname[i], name) == 0) {
            fmpq_set(q, &R->dimval[i]);
            if (qr != NULL)
                fmpq_set(qr, R->dimreal ? &R->dimreal[i] : &R->dimval[i]);
            return 1;
        }
    return 0;
}

/* rank.AXIS, a mesh axis (its size) or a dim: 1, or 0 if the name is none of these; qr (unless
   NULL) the value at the file's sizes, a dim's its own (a mesh axis's is the run's: under the
   checker's mesh cutoff mesh sizes used as values take their checked size) */
static int builtin_value(rexec_t *X, const char *name, fmpq_t q, fmpq_t qr, int *err, sp_loc_t loc)
{
    const rrun_t *R = X->R;
    *err = 0;
    if (strncmp(name, "rank.", 5) == 0) {
        int a = X->rank >= 0 ? rx_axis(R, name + 5) : -1;
        if (a < 0) {
            *err = 1;
            return X->rank < 0 ? rx_error(X, SP_DIAG_NAME, loc, "'%s' outside a plan", name)
                               : rx_error(X, SP_DIAG_NAME, loc, "unknown mesh axis in '%s'", name);
        }
        fmpq_set_si(q, X->coord[a], 1);
        if (qr != NULL)
            fmpq_set(qr, q);
        return 1;
    }
    int a = X->rank >= 0 ? rx_axis(R, name) : -1;
    if (a >= 0) {
        fmpq_set_si(q, R->axsize[a], 1);
        if (qr != NULL)
            fmpq_set(qr, q);
        return 1;
    }
    return dim_value(R, name, q, qr);
}

static int ct_binop(rexec_t *X, sp_loc_t loc, sp_ast_binop_t op, const fmpq_t a, const fmpq_t b,
                    fmpq_t r)
{
    int c = fmpq_cmp(a, b);
    switch (op) {
    case SP_BIN_ADD: fmpq_add(r, a, b); return 1;
    case SP_BIN_SUB: fmpq_sub(r, a, b); return 1;
    case SP_BIN_MUL: fmpq_mul(r, a, b); return 1;
    case SP_BIN_DIV:
        if (fmpq_is_zero(b))
            return rx_error(X, SP_DIAG_SHAPE, loc, "division by zero") - 1;
        fmpq_div(r, a, b);
        return 1;
    case SP_BIN_MOD:
        if (!fmpz_is_one(fmpq_denref(a)) || !fmpz_is_one(fmpq_denref(b)) || fmpq_is_zero(b))
            return rx_error(X, SP_DIAG_SHAPE, loc, "'%%' needs integers and a nonzero divisor") - 1;
        fmpz_fdiv_r(fmpq_numref(r), fmpq_numref(a), fmpq_numref(b));
        fmpz_one(fmpq_denref(r));
        return 1;
    case SP_BIN_POW:
        if (!fmpz_is_one(fmpq_denref(b)) || fmpz_bits(fmpq_numref(b)) > 12 ||
            (fmpq_is_zero(a) && fmpq_sgn(b) < 0) ||
            (slong)(fmpz_bits(fmpq_numref(a)) + fmpz_bits(fmpq_denref(a))) * FLINT_ABS(fmpz_get_si(fmpq_numref(b))) > 1000000)
            return rx_error(X, SP_DIAG_SHAPE, loc, "exponent out of range") - 1;
        fmpq_pow_si(r, a, fmpz_get_si(fmpq_numref(b)));
        return 1;
    case SP_BIN_LT: fmpq_set_si(r, c < 0, 1); return 1;
    case SP_BIN_LE: fmpq_set_si(r, c <= 0, 1); return 1;
    case SP_BIN_GT: fmpq_set_si(r, c > 0, 1); return 1;
    case SP_BIN_GE: fmpq_set_si(r, c >= 0, 1); return 1;
    case SP_BIN_EQ: fmpq_set_si(r, c == 0, 1); return 1;
    case SP_BIN_NE: fmpq_set_si(r, c != 0, 1); return 1;
    }
    return 0;
}

int rx_ct(rexec_t *X, const sp_ast_expr_t *e, fmpq_t q, fmpq_t qr)
{
    switch (e->kind) {
    case SP_AST_NUM:
        fmpq_set(q, e->value);
        if (qr != NULL)
            fmpq_set(qr, e->value);
        return 1;
    case SP_AST_NAME: {
        rbind_t *b = renv_find(X->env, e->name, 1);
        if (b && b->isint) {
            fmpq_set(q, &b->q);
            if (qr != NULL)
                fmpq_set(qr, &b->qr);
        }
        if (b)
            return b->isint ? 1 : 0;
        int err;
        if (builtin_value(X, e->name, q, qr, &err, e->loc))
            return 1;
        if (err)
            return -1;
        return rx_error(X, SP_DIAG_NAME, e->loc, "unknown name '%s'", e->name) - 1;
    }
    case SP_AST_NEG: {
        int r = rx_ct(X, e->a, q, qr);
        if (r == 1)
            fmpq_neg(q, q);
        if (r == 1 && qr != NULL)
            fmpq_neg(qr, qr);
        return r;
    }
    case SP_AST_BINOP: {
        fmpq_t a, b, ar, br;
        fmpq_init(a);
        fmpq_init(b);
        fmpq_init(ar);
        fmpq_init(br);
        int r = rx_ct(X, e->a, a, ar);
        if (r == 1)
            r = rx_ct(X, e->b, b, br);
        if (r == 1)
            r = ct_binop(X, e->loc, e->op, a, b, q);
        if (r == 1 && qr != NULL)
            r = ct_binop(X, e->loc, e->op, ar, br, qr);
        fmpq_clear(a);
        fmpq_clear(b);
        fmpq_clear(ar);
        fmpq_clear(br);
        return r;
    }
    default: return 0;
    }
}

/* *v from e (an integer), and *vr at the file's sizes unless NULL (0 where that is no integer) */
int rx_ct_int2(rexec_t *X, const sp_ast_expr_t *e, int64_t *v, int64_t *vr, const char *what)
{
    fmpq_t q, qr;
    fmpq_init(q);
    fmpq_init(qr);
    int r = rx_ct(X, e, q, vr ? qr : NULL);
    if (r == 0)
        r = rx_error(X, SP_DIAG_SHAPE, e->loc, "%s must be a compile-time integer", what) - 1;
    else if (r == 1 && (!fmpz_is_one(fmpq_denref(q)) || !fmpz_fits_si(fmpq_numref(q))))
        r = rx_error(X, SP_DIAG_SHAPE, e->loc, "%s must be an integer", what) - 1;
    if (r == 1)
        *v = fmpz_get_si(fmpq_numref(q));
    if (r == 1 && vr != NULL)
        *vr = fmpz_is_one(fmpq_denref(qr)) && fmpz_fits_si(fmpq_numref(qr)) ? fmpz_get_si(fmpq_numref(qr)) : 0;
    fmpq_clear(q);
    fmpq_clear(qr);
    return r == 1;
}

int rx_ct_int(rexec_t *X, const sp_ast_expr_t *e, int64_t *v, const char *what)
{
    return rx_ct_int2(X, e, v, NULL, what);
}

int rx_ct_size(rexec_t *X, const sp_ast_expr_t *e, int64_t *v, int64_t *vr, const char *what)
{
    int64_t r = 0;
    if (!X->R->opt->real_values) {
        int ok = rx_ct_int2(X, e, v, NULL, what);
        if (ok && vr != NULL)
            *vr = *v;
        return ok;
    }
    if (!rx_ct_int2(X, e, v, &r, what))
        return 0;
    rc_note(&X->R->cmap, *v, r);
    if (vr != NULL)
        *vr = r;
    return 1;
}

/* "name" or "name[i,j]" (nested: "name[i][j]") into buf */
int rx_target_key(rexec_t *X, const sp_ast_expr_t *e, char *buf, size_t len)
{
    if (e->kind == SP_AST_NAME) {
        if (strlen(e->name) >= len)
            return rx_error(X, SP_DIAG_LIMIT, e->loc, "name too long");
        strcpy(buf, e->name);
        return 1;
    }
    if (e->kind != SP_AST_INDEX || !rx_target_key(X, e->a, buf, len))
        return e->kind == SP_AST_INDEX ? 0 : rx_error(X, SP_DIAG_NAME, e->loc, "expected a name");
    size_t k = strlen(buf);
    for (size_t i = 0; i < e->nargs; i++) {
        int64_t v;
        if (e->args[i].key.str != NULL || !rx_ct_int(X, e->args[i].value, &v, "an index"))
            return e->args[i].key.str ? rx_error(X, SP_DIAG_NAME, e->loc, "unexpected keyword") : 0;
        k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "%s%lld", i ? "," : "[", (long long)v);
    }
    k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "]");
    return k < len ? 1 : rx_error(X, SP_DIAG_LIMIT, e->loc, "name too long");
}

/* ---- expressions ---------------------------------------------------------------------------- */

static int eval(rexec_t *X, const sp_ast_expr_t *e, xval_t *out);

static ropc_t opc(rexec_t *X)
{
    ropc_t c;
    memset(&c, 0, sizeof(c));
    c.S = &X->S;
    /* without overrides the run's sizes are the file's: every count is its extent */
    c.cm = X->R->opt->real_values && X->R->opt->ndims > 0 ? &X->R->cmap : NULL;
    c.max_el = X->R->opt->max_elements;
    c.no_grad_ops = X->rank < 0 && X->train != NULL;
    return c;
}

static int op_failed(rexec_t *X, ropc_t *c, sp_loc_t loc)
{
    X->count_unknown |= c->count_unknown;
    return c->limit ? rx_limit(X, loc, "%s", c->err) : rx_error(X, SP_DIAG_SHAPE, loc, "%s", c->err);
}

/* v as a tensor (a compile-time value becomes a 0-d constant) */
static int as_tensor(rexec_t *X, xval_t *v, sp_loc_t loc)
{
    if (v->kind == XV_TEN)
        return 1;
    if (v->kind != XV_INT)
        return rx_error(X, SP_DIAG_NAME, loc, "'%s' is not a tensor", v->name ? v->name : "?");
    rt_init(&v->t);
    v->t.id = malloc(sizeof(uint32_t));
    if (v->t.id == NULL)
        return rx_limit(X, loc, "out of memory");
    v->t.id[0] = rs_constq(&X->S, &v->qr); /* a size used as a value: at the file's sizes */
    v->kind = XV_TEN;
    return over(X, loc);
}

static int set_tensor(xval_t *out, rten_t *t)
{
    out->kind = XV_TEN;
    out->t = *t;
    rt_init(t);
    return 1;
}

static int eval_name(rexec_t *X, const sp_ast_expr_t *e, const char *key, xval_t *out)
{
    rbind_t *b = renv_find(X->env, key, 1);
    if (b && b->isint) {
        out->kind = XV_INT;
        fmpq_set(&out->q, &b->q);
        fmpq_set(&out->qr, &b->qr);
        return 1;
    }
    if (b) {
        out->kind = XV_TEN;
        if (!note_read(X, b, e->loc))
            return 0;
        return rt_copy(&out->t, &b->t) < 0 ? rx_limit(X, e->loc, "out of memory") : 1;
    }
    int err;
    if (builtin_value(X, key, &out->q, &out->qr, &err, e->loc)) {
        out->kind = XV_INT;
        return 1;
    }
    return err ? 0 : rx_error(X, SP_DIAG_NAME, e->loc, "unknown name '%s'", key);
}

/* x[i, lo..hi]: an array element by name, else indexing of a tensor */
static int eval_index(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    char key[600];
    int named = 1;
    for (const sp_ast_expr_t *a = e; named && a->kind == SP_AST_INDEX; a = a->a) {
        named &= a->a->kind == SP_AST_NAME || a->a->kind == SP_AST_INDEX;
        for (size_t i = 0; named && i < a->nargs; i++)
            named &= a->args[i].value->kind != SP_AST_RANGE;
    }
    if (named && !rx_target_key(X, e, key, sizeof(key)))
        return 0;
    if (named && renv_find(X->env, key, 1))
        return eval_name(X, e, key, out);
    if (named && e->a->kind == SP_AST_NAME && !renv_find(X->env, e->a->name, 1))
        return rx_error(X, SP_DIAG_NAME, e->loc, "unknown name '%s'", key);
    xval_t b;
    xv_init(&b);
    int ok = eval(X, e->a, &b) && as_tensor(X, &b, e->loc);
    rten_t *t = &b.t;
    if (ok && (int)e->nargs > t->nd)
        ok = rx_error(X, SP_DIAG_SHAPE, e->loc, "%zu indices for a %d-d tensor", e->nargs, t->nd);
    int64_t lo[RMAXD], hi[RMAXD], sh[RMAXD], idx[RMAXD], ix[RMAXD];
    int keep[RMAXD], nd = 0;
    for (int d = 0; ok && d < t->nd; d++) {
        lo[d] = 0, hi[d] = t->sh[d], keep[d] = 1;
        if (d >= (int)e->nargs)
            continue;
        const sp_ast_expr_t *a = e->args[d].value;
        if (a->kind == SP_AST_RANGE)
            ok = rx_ct_int(X, a->a, &lo[d], "a range bound") && rx_ct_int(X, a->b, &hi[d], "a range bound");
        else if ((ok = rx_ct_int(X, a, &lo[d], "an index"))) {
            lo[d] += lo[d] < 0 ? t->sh[d] : 0;
            hi[d] = lo[d] + 1, keep[d] = 0;
        }
        if (ok && (lo[d] < 0 || hi[d] > t->sh[d] || lo[d] > hi[d]))
            ok = rx_error(X, SP_DIAG_SHAPE, a->loc, "index out of range for dim %d of size %lld", d,
                          (long long)t->sh[d]);
    }
    rten_t r;
    rt_init(&r);
    for (int d = 0; ok && d < t->nd; d++)
        if (keep[d])
            sh[nd++] = hi[d] - lo[d];
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sh[d];
    if (ok && (r.id = malloc((size_t)(n ? n : 1) * sizeof(uint32_t))) == NULL)
        ok = rx_limit(X, e->loc, "out of memory");
    r.nd = nd;
    memcpy(r.sh, sh, sizeof(sh));
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t f = i;
        for (int d = nd - 1; d >= 0; d--)
            idx[d] = f % sh[d], f /= sh[d];
        int64_t o = 0;
        for (int d = 0, k = 0; d < t->nd; d++) {
            ix[d] = lo[d] + (keep[d] ? idx[k++] : 0);
            o = o * t->sh[d] + ix[d];
        }
        r.id[i] = t->id[o];
    }
    if (ok)
        set_tensor(out, &r);
    rt_clear(&r);
    xv_clear(&b);
    return ok;
}

static int call(rexec_t *X, const sp_ast_expr_t *e, xval_t *out);

static int eval(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    xv_clear(out);
    switch (e->kind) {
    case SP_AST_NUM:
        out->kind = XV_INT;
        fmpq_set(&out->q, e->value);
        fmpq_set(&out->qr, e->value);
        return 1;
    case SP_AST_NAME: return eval_name(X, e, e->name, out);
    case SP_AST_INDEX: return eval_index(X, e, out);
    case SP_AST_CALL: return call(X, e, out);
    case SP_AST_LIST: return rx_error(X, SP_DIAG_SHAPE, e->loc, "a list is not a tensor");
    case SP_AST_RANGE: return rx_error(X, SP_DIAG_SHAPE, e->loc, "a range is only allowed as an index");
    case SP_AST_NEG:
    case SP_AST_BINOP: break;
    }
    xval_t a, b;
    xv_init(&a);
    xv_init(&b);
    int ok = eval(X, e->a, &a) && (e->kind == SP_AST_NEG || eval(X, e->b, &b));
    ropc_t c = opc(X);
    rten_t r;
    rt_init(&r);
    if (!ok)
        ;
    else if (e->kind == SP_AST_NEG && a.kind == XV_INT) {
        out->kind = XV_INT;
        fmpq_neg(&out->q, &a.q);
        fmpq_neg(&out->qr, &a.qr);
    } else if (e->kind == SP_AST_NEG) {
        if ((ok = as_tensor(X, &a, e->loc) && rop_apply(&c, "neg", &a.t, 1, NULL, 0, &r)))
            set_tensor(out, &r);
        else if (!X->failed)
            op_failed(X, &c, e->loc);
    } else if (a.kind == XV_INT && b.kind == XV_INT) {
        out->kind = XV_INT;
        ok = ct_binop(X, e->loc, e->op, &a.q, &b.q, &out->q) == 1 &&
             ct_binop(X, e->loc, e->op, &a.qr, &b.qr, &out->qr) == 1;
    } else if (e->op == SP_BIN_POW) {
        int64_t k = 0;
        /* the exponent is a value: at the file's sizes (qr) */
        if (b.kind != XV_INT || !fmpz_is_one(fmpq_denref(&b.qr)) || !fmpz_fits_si(fmpq_numref(&b.qr)))
            ok = rx_error(X, SP_DIAG_SHAPE, e->loc, "the exponent of '^' must be a compile-time integer");
        else
            k = fmpz_get_si(fmpq_numref(&b.qr));
        rattr_t at;
        memset(&at, 0, sizeof(at));
        at.kind = RA_NUM;
        fmpq_init(&at.num);
        fmpq_init(&at.numr);
        fmpq_set_si(&at.num, k, 1);
        fmpq_set_si(&at.numr, k, 1);
        if (ok && as_tensor(X, &a, e->loc) && (ok = rop_apply(&c, "pow", &a.t, 1, &at, 1, &r)))
            set_tensor(out, &r);
        else if (ok)
            ok = X->failed ? 0 : op_failed(X, &c, e->loc);
        fmpq_clear(&at.num);
        fmpq_clear(&at.numr);
    } else if (e->op == SP_BIN_MOD) {
        ok = rx_error(X, SP_DIAG_SHAPE, e->loc, "'%%' is defined on compile-time integers only");
    } else if ((ok = as_tensor(X, &a, e->loc) && as_tensor(X, &b, e->loc))) {
        static const rop_t ar[] = {RO_ADD, RO_SUB, RO_MUL, RO_DIV};
        if (e->op <= SP_BIN_DIV)
            ok = rop_binary(&c, ar[e->op], &a.t, &b.t, &r);
        else
            ok = rop_compare(&c, (int)e->op - SP_BIN_LT, &a.t, &b.t, &r);
        if (ok)
            set_tensor(out, &r);
        else
            op_failed(X, &c, e->loc);
    }
    xv_clear(&a);
    xv_clear(&b);
    return ok && over(X, e->loc);
}

int rx_eval_tensor(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    return eval(X, e, out) && as_tensor(X, out, e->loc);
}

/* ---- calls ---------------------------------------------------------------------------------- */

static const sp_ast_stmt_t *find_func(const rrun_t *R, const char *name)
{
    for (size_t i = 0; i < R->ast->nitems; i++)
        if (R->ast->items[i]->kind == SP_STMT_FUNC && strcmp(R->ast->items[i]->name.str, name) == 0)
            return R->ast->items[i];
    return NULL;
}

/* A name that is no value (a bare identifier: a reduction, an axis, an attribute value)? */
int rx_bare_name(rexec_t *X, const sp_ast_expr_t *e)
{
    fmpq_t q;
    int err = 0;
    if (e->kind != SP_AST_NAME || renv_find(X->env, e->name, 1))
        return 0;
    fmpq_init(q);
    int b = !builtin_value(X, e->name, q, NULL, &err, e->loc) && !err;
    fmpq_clear(q);
    return b;
}

/* An attribute value: a list of integers, a bare name, or a compile-time number; a list of
   `shape` (a shape of reshape, view, expand, broadcast_to) is one of extents the program writes
   (rx_ct_size), any other (dims, a permutation, multipliers) is not (helper-62's review: the
   indices of permute(z, [0, 3, 2, 1]) noted 3 as an extent, which a chunk piece of 3 elements
   then took for its count) */
static int attr_value(rexec_t *X, const sp_ast_expr_t *e, const char *key, rattr_t *a, int shape)
{
    a->key = key;
    if (e->kind == SP_AST_LIST) {
        a->kind = RA_LIST;
        a->nlist = (int)e->nargs;
        a->list = calloc(e->nargs + 1, sizeof(int64_t));
        if (a->list == NULL)
            return rx_limit(X, e->loc, "out of memory");
        for (size_t i = 0; i < e->nargs; i++)
            if (!(shape ? rx_ct_size(X, e->args[i].value, &a->list[i], NULL, "a list element")
                        : rx_ct_int(X, e->args[i].value, &a->list[i], "a list element")))
                return 0;
        return 1;
    }
    if (rx_bare_name(X, e)) {
        a->kind = RA_NAME;
        a->name = e->name;
        return 1;
    }
    a->kind = RA_NUM;
    int r = rx_ct(X, e, &a->num, &a->numr);
    if (r == 0)
        return key ? rx_error(X, SP_DIAG_SHAPE, e->loc, "attribute %s must be a compile-time value", key)
                   : rx_error(X, SP_DIAG_SHAPE, e->loc, "a positional attribute must be a compile-time value");
    return r == 1;
}

static int op_call(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    int lo, hi, npos, lit, nt = 0, na = 0, ok = 1;
    rop_info(e->name, &lo, &hi, &npos, &lit);
    size_t n = e->nargs;
    xval_t *tv = calloc(n + 1, sizeof(xval_t));
    rattr_t *at = calloc(n + 1, sizeof(rattr_t));
    rten_t *in = calloc(n + 1, sizeof(rten_t));
    if (tv == NULL || at == NULL || in == NULL) {
        free(tv), free(at), free(in);
        return rx_limit(X, e->loc, "out of memory");
    }
    for (size_t i = 0; i <= n; i++) {
        xv_init(&tv[i]);
        fmpq_init(&at[i].num);
        fmpq_init(&at[i].numr);
    }
    size_t i = 0; /* positional values, then non-value positional attributes, then keywords */
    for (; ok && i < n && e->args[i].key.str == NULL; i++) { /* no operator takes a bare name positionally */
        const sp_ast_expr_t *v = e->args[i].value;
        if (v->kind == SP_AST_LIST)
            break;
        ok = eval(X, v, &tv[nt++]);
    }
    /* trailing literals beyond the tensor arity are positional attributes (docs: ops table) */
    int conv = 0;
    while (ok && conv < npos && nt > lo && tv[nt - 1].kind == XV_INT && ((hi >= 0 && nt > hi) || lit))
        nt--, conv++;
    for (int k = 0; ok && k < conv; k++) {
        at[na].kind = RA_NUM;
        fmpq_set(&at[na].numr, &tv[nt + k].qr);
        fmpq_set(&at[na++].num, &tv[nt + k].q);
    }
    for (; ok && i < n; i++) {
        if (e->args[i].key.str == NULL && e->args[i].value->kind != SP_AST_LIST)
            ok = rx_error(X, SP_DIAG_SHAPE, e->args[i].value->loc, "%s: a tensor argument after a non-tensor argument", e->name);
        else
            ok = attr_value(X, e->args[i].value, e->args[i].key.str, &at[na++],
                            !strcmp(e->name, "reshape") || !strcmp(e->name, "view") ||
                                !strcmp(e->name, "expand") || !strcmp(e->name, "broadcast_to"));
    }
    for (int k = 0; ok && k < nt; k++)
        if ((ok = as_tensor(X, &tv[k], e->loc)))
            in[k] = tv[k].t;
    ropc_t c = opc(X);
    rten_t r;
    rt_init(&r);
    if (ok && (ok = rop_apply(&c, e->name, in, nt, at, na, &r)))
        set_tensor(out, &r);
    else if (!X->failed)
        op_failed(X, &c, e->loc);
    for (size_t k = 0; k <= n; k++) {
        xv_clear(&tv[k]);
        fmpq_clear(&at[k].num);
        fmpq_clear(&at[k].numr);
        free(at[k].list);
    }
    free(tv), free(at), free(in);
    return ok && over(X, e->loc);
}

/* A user function: arguments bound in a fresh scope (compile-time values stay compile-time). */
static int func_call(rexec_t *X, const sp_ast_expr_t *e, const sp_ast_stmt_t *f)
{
    if (e->nargs != f->nparams)
        return rx_error(X, SP_DIAG_NAME, e->loc, "function '%s' takes %zu arguments, got %zu", f->name.str,
                        f->nparams, e->nargs);
    if (X->depth >= 64)
        return rx_error(X, SP_DIAG_LIMIT, e->loc, "function calls nest more than 64 deep (recursion?)");
    renv_t local;
    renv_init(&local, &X->genv);
    int ok = 1;
    xval_t v;
    xv_init(&v);
    for (size_t i = 0; ok && i < e->nargs; i++) {
        if (e->args[i].key.str != NULL)
            ok = rx_error(X, SP_DIAG_NAME, e->args[i].key.loc, "keyword arguments are not allowed in a function call");
        else if ((ok = eval(X, e->args[i].value, &v)))
            ok = (v.kind == XV_INT ? renv_set_int(&local, f->params[i].str, &v.q, &v.qr)
                                   : renv_set_take(&local, f->params[i].str, &v.t)) == 0 ||
                 rx_limit(X, e->loc, "out of memory");
    }
    xv_clear(&v);
    renv_t *saved = X->env;
    free_ret(X);
    X->env = &local;
    X->depth++;
    ok = ok && rx_block(X, &f->body);
    X->depth--;
    X->env = saved;
    X->returned = 0;
    renv_clear(&local);
    return ok;
}

static int call(rexec_t *X, const sp_ast_expr_t *e, xval_t *out)
{
    const sp_ast_stmt_t *f = find_func(X->R, e->name);
    if (f != NULL) {
        if (!func_call(X, e, f))
            return 0;
        if (X->nret != 1)
            return rx_error(X, SP_DIAG_SHAPE, e->loc, "function '%s' returns %d values here, 1 is needed",
                            e->name, X->nret);
        *out = X->ret[0];
        xv_init(&X->ret[0]);
        free_ret(X);
        return 1;
    }
    if (rm_is_collective(e->name)) {
        if (X->rank < 0)
            return rx_error(X, SP_DIAG_LAYOUT, e->loc, "collective '%s' in a model", e->name);
        return rm_collective(X, e, out) && over(X, e->loc);
    }
    int lo, hi, np, lit;
    if (!rop_info(e->name, &lo, &hi, &np, &lit))
        return rx_error(X, SP_DIAG_NAME, e->loc, "unknown operator '%s'", e->name);
    return op_call(X, e, out);
}

/* ---- statements ------------------------------------------------------------------------------ */

static int reserved(const char *key)
{
    static const char *const pre[] = {"grad.", "next.", "momentum.", "adam."};
    for (int i = 0; i < 4; i++)
        if (strncmp(key, pre[i], strlen(pre[i])) == 0)
            return 1;
    return 0;
}

/* Bind a value; in a trained model's top scope every element gets its own COPY node, so that
   grad.NAME is the gradient with respect to this tensor (not to a node it shares). */
static int bind(rexec_t *X, const char *key, xval_t *v, sp_loc_t loc)
{
    if (v->kind == XV_INT)
        return renv_set_int(X->env, key, &v->q, &v->qr) == 0 || rx_limit(X, loc, "out of memory");
    if (v->kind != XV_TEN)
        return rx_error(X, SP_DIAG_NAME, loc, "'%s' is not a value", v->name ? v->name : "?");
    if (X->rank < 0 && X->train && X->env == &X->genv) {
        if (reserved(key))
            return rx_error(X, SP_DIAG_NAME, loc, "'%s' is derived by train; a model tensor cannot be named so", key);
        for (int64_t i = 0, n = rt_numel(&v->t); i < n; i++)
            v->t.id[i] = rs_op1(&X->S, RO_COPY, v->t.id[i]);
        if (!over(X, loc))
            return 0;
    }
    return renv_set_take(X->env, key, &v->t) == 0 || rx_limit(X, loc, "out of memory");
}

static int declare_input(rexec_t *X, const sp_ast_stmt_t *s);

static int st_assign(rexec_t *X, const sp_ast_stmt_t *s)
{
    int start = X->nreads;
    char key[600];
    xval_t v;
    xv_init(&v);
    int ok = 1;
    if (s->ntargets > 1) {
        const sp_ast_stmt_t *f = s->value->kind == SP_AST_CALL ? find_func(X->R, s->value->name) : NULL;
        if (f == NULL)
            return rx_error(X, SP_DIAG_SHAPE, s->loc, "several targets need a function call that returns as many values");
        if (!func_call(X, s->value, f))
            return 0;
        if (X->nret != (int)s->ntargets)
            ok = rx_error(X, SP_DIAG_SHAPE, s->loc, "%zu targets, the function returns %d values", s->ntargets, X->nret);
        xval_t *ret = X->ret;
        int nret = X->nret;
        X->ret = NULL, X->nret = 0;
        for (size_t i = 0; ok && i < s->ntargets; i++)
            ok = rx_target_key(X, s->targets[i], key, sizeof(key)) && bind(X, key, &ret[i], s->loc);
        for (int i = 0; i < nret; i++)
            xv_clear(&ret[i]);
        free(ret);
        return ok;
    }
    ok = rx_target_key(X, s->targets[0], key, sizeof(key)) && eval(X, s->value, &v);
    if (ok && s->kind == SP_STMT_ACCUM) {
        rbind_t *b = renv_find(X->env, key, 0);
        xval_t old;
        xv_init(&old);
        if (b != NULL && (ok = eval_name(X, s->targets[0], key, &old))) {
            if (old.kind == XV_INT && v.kind == XV_INT) {
                fmpq_add(&v.q, &v.q, &old.q);
                fmpq_add(&v.qr, &v.qr, &old.qr);
            } else if ((ok = as_tensor(X, &old, s->loc) && as_tensor(X, &v, s->loc))) {
                ropc_t c = opc(X);
                rten_t r;
                if ((ok = rop_binary(&c, RO_ADD, &old.t, &v.t, &r))) {
                    xv_clear(&v);
                    set_tensor(&v, &r);
                } else
                    op_failed(X, &c, s->loc);
            }
        }
        xv_clear(&old);
    }
    ok = ok && bind(X, key, &v, s->loc);
    xv_clear(&v);
    if (ok && X->rank >= 0 && X->R->opt->observe && !s->lineage)
        ok = observe_assign(X, s, key, start, s->loc);
    return ok;
}

static int st_output(rexec_t *X, const sp_ast_stmt_t *s)
{
    char key[600];
    for (size_t i = 0; i < s->noutputs; i++) {
        const sp_ast_output_t *o = &s->outputs[i];
        if (!rx_target_key(X, o->target, key, sizeof(key)))
            return 0;
        if (X->rank < 0) {
            if (o->value != NULL || o->layout != NULL)
                return rx_error(X, SP_DIAG_NAME, o->target->loc, "a model output is a tensor name");
            if (!renv_find(X->env, key, 1))
                return rx_error(X, SP_DIAG_NAME, o->target->loc, "unknown tensor '%s'", key);
            char **no = realloc(X->outs, (size_t)(X->nouts + 1) * sizeof(char *));
            if (no == NULL || (no[X->nouts] = strdup(key)) == NULL)
                return rx_limit(X, s->loc, "out of memory");
            X->outs = no;
            X->nouts++;
            continue;
        }
        rbind_t *m = renv_find(&X->R->M->genv, key, 0);
        if (m == NULL || m->isint)
            return rx_error(X, SP_DIAG_NAME, o->target->loc, "'%s' is not a tensor of model %s", key,
                            X->R->model->name.str);
        xval_t v;
        xv_init(&v);
        int ok = o->value ? eval(X, o->value, &v) : eval_name(X, o->target, key, &v);
        ok = ok && as_tensor(X, &v, o->target->loc);
        rlayout_t L;
        ok = ok && rm_layout(X, o->layout, m->t.nd, m->t.sh, &L);
        char a[160], b[160];
        if (ok && (v.t.nd != L.nd || memcmp(v.t.sh, L.lsh, (size_t)L.nd * sizeof(int64_t)))) {
            rt_shape_str(a, sizeof(a), v.t.nd, v.t.sh);
            rt_shape_str(b, sizeof(b), L.nd, L.lsh);
            ok = rx_error(X, SP_DIAG_LAYOUT, o->target->loc, "output %s has shape %s on this rank, its layout gives %s",
                          key, a, b);
        }
        if (ok && X->npout == X->apout) {
            int na = X->apout ? 2 * X->apout : 8;
            rout_t *np = realloc(X->pout, (size_t)na * sizeof(rout_t));
            ok = np != NULL || rx_limit(X, s->loc, "out of memory");
            if (np)
                X->pout = np, X->apout = na;
        }
        if (ok) {
            rout_t *r = &X->pout[X->npout];
            int64_t n = rt_numel(&v.t);
            memset(r, 0, sizeof(*r));
            r->key = strdup(key);
            r->loc = o->target->loc;
            r->L = L;
            r->v = malloc((size_t)(n ? n : 1) * sizeof(rv_t));
            for (int k = 0; k < X->npout; k++)
                r->occ += strcmp(X->pout[k].key, key) == 0;
            if (r->key == NULL || r->v == NULL) {
                free(r->key), free(r->v);
                ok = rx_limit(X, s->loc, "out of memory");
            } else {
                for (int64_t k = 0; k < n; k++) {
                    rv_init(&r->v[k]);
                    rv_set(&r->v[k], rs_val(&X->S, v.t.id[k]));
                }
                r->n = n;
                X->npout++;
            }
        }
        xv_clear(&v);
        if (!ok)
            return 0;
    }
    return 1;
}

static int st_for(rexec_t *X, const sp_ast_stmt_t *s)
{
    int64_t lo, hi;
    if (!rx_ct_int(X, s->lo, &lo, "a loop bound") || !rx_ct_int(X, s->hi, &hi, "a loop bound"))
        return 0;
    /* the checker's limits (src/exec.c): 10^6 iterations in one loop and in all */
    if (hi - lo > 1000000)
        return rx_error(X, SP_DIAG_LIMIT, s->loc, "loop of more than 10^6 iterations");
    const char *v = s->name.str;
    rbind_t *old = renv_find(X->env, v, 0);
    int had = old && old->isint;
    fmpq_t q, saved, savedr;
    fmpq_init(q);
    fmpq_init(saved);
    fmpq_init(savedr);
    if (had) {
        fmpq_set(saved, &old->q);
        fmpq_set(savedr, &old->qr);
    }
    int ok = 1;
    for (int64_t i = lo; ok && i < hi && !X->returned; i++) {
        if (++X->iters > 1000000) {
            ok = rx_error(X, SP_DIAG_LIMIT, s->loc, "loops of more than 10^6 iterations in all");
            break;
        }
        fmpq_set_si(q, i, 1);
        ok = (renv_set_int(X->env, v, q, q) == 0 || rx_limit(X, s->loc, "out of memory")) && rx_block(X, &s->body);
    }
    if (had)
        renv_set_int(X->env, v, saved, savedr);
    else
        renv_unset(X->env, v);
    fmpq_clear(q);
    fmpq_clear(saved);
    fmpq_clear(savedr);
    return ok;
}

static int st_on(rexec_t *X, const sp_ast_stmt_t *s)
{
    if (X->rank < 0)
        return rx_error(X, SP_DIAG_LAYOUT, s->loc, "'on' in a model");
    int match = 1;
    for (size_t i = 0; i < s->nbinds; i++) {
        int a = rx_axis(X->R, s->binds[i].name.str);
        int64_t v;
        if (a < 0)
            return rx_error(X, SP_DIAG_LAYOUT, s->binds[i].name.loc, "unknown mesh axis '%s'", s->binds[i].name.str);
        if (!rx_ct_int(X, s->binds[i].value, &v, "an 'on' value"))
            return 0;
        match &= v == X->coord[a];
    }
    return match ? rx_block(X, &s->body) : 1;
}

static int st_dim(rexec_t *X, const sp_ast_stmt_t *s)
{
    fmpq_t q, qr;
    fmpq_init(q);
    fmpq_init(qr);
    int ok = 1;
    for (size_t i = 0; ok && i < s->nbinds; i++) {
        const char *nm = s->binds[i].name.str;
        int64_t v = -1, vr = 0, w;
        for (size_t k = 0; k < X->R->opt->ndims; k++)
            if (strcmp(X->R->opt->dims[k].name, nm) == 0)
                v = X->R->opt->dims[k].value;
        /* the file's size (its expression at the file's sizes) beside the run's */
        if (!rx_ct_int2(X, s->binds[i].value, &w, &vr, "a dim"))
            ok = 0;
        else if (v < 0)
            v = w;
        if (ok && v < 1)
            ok = rx_error(X, SP_DIAG_SHAPE, s->binds[i].value->loc, "dim %s = %lld is not positive", nm, (long long)v);
        if (ok && X->R->opt->real_values)
            rc_note(&X->R->cmap, v, vr);
        fmpq_set_si(q, v, 1);
        fmpq_set_si(qr, X->R->opt->real_values ? vr : v, 1);
        ok = ok && (renv_set_int(X->env, nm, q, qr) == 0 || rx_limit(X, s->loc, "out of memory"));
    }
    fmpq_clear(q);
    fmpq_clear(qr);
    return ok;
}

static int stmt1(rexec_t *X, const sp_ast_stmt_t *s)
{
    int model = X->rank < 0;
    switch (s->kind) {
    case SP_STMT_DIM: return st_dim(X, s);
    case SP_STMT_MESH:
        if (model || X->depth > 0)
            return rx_error(X, SP_DIAG_LAYOUT, s->loc, "'mesh' belongs at the top of a plan");
        return 1;
    case SP_STMT_INPUT:
    case SP_STMT_PARAM:
        if (!model)
            return rx_error(X, SP_DIAG_LAYOUT, s->loc, "input/param in a plan: declare a layout 'NAME : [...]' (the reference executor)");
        return declare_input(X, s);
    case SP_STMT_LAYOUT:
        if (model)
            return rx_error(X, SP_DIAG_LAYOUT, s->loc, "a layout declaration in a model");
        return rm_declare(X, s);
    case SP_STMT_ASSIGN:
    case SP_STMT_ACCUM: return st_assign(X, s);
    case SP_STMT_EXPR: {
        xval_t v;
        xv_init(&v);
        int ok = eval(X, s->value, &v);
        xv_clear(&v);
        return ok;
    }
    case SP_STMT_OUTPUT: return st_output(X, s);
    case SP_STMT_OMIT:
        /* model outputs the plan leaves unchecked: they stay in the "not output" list */
        if (model)
            return rx_error(X, SP_DIAG_NAME, s->loc, "'omit' in a model");
        return 1;
    case SP_STMT_TRAIN:
        if (!model)
            return rx_error(X, SP_DIAG_NAME, s->loc, "'train' in a plan");
        return 1; /* run after the body (rx_model) */
    case SP_STMT_ON: return st_on(X, s);
    case SP_STMT_FOR: return st_for(X, s);
    case SP_STMT_IF: {
        fmpq_t q;
        fmpq_init(q);
        int r = rx_ct(X, s->value, q, NULL), ok = 1;
        if (r == 0)
            ok = rx_error(X, SP_DIAG_SHAPE, s->value->loc, "an 'if' condition must be a compile-time value");
        else if (r < 0)
            ok = 0;
        else if (!fmpq_is_zero(q))
            ok = rx_block(X, &s->body);
        else if (s->has_else)
            ok = rx_block(X, &s->else_body);
        fmpq_clear(q);
        return ok;
    }
    case SP_STMT_RETURN: {
        if (X->depth == 0)
            return rx_error(X, SP_DIAG_NAME, s->loc, "'return' outside a function");
        xval_t *ret = calloc(s->nvalues + 1, sizeof(xval_t));
        if (ret == NULL)
            return rx_limit(X, s->loc, "out of memory");
        int ok = 1;
        for (size_t i = 0; i <= s->nvalues; i++)
            xv_init(&ret[i]);
        for (size_t i = 0; ok && i < s->nvalues; i++)
            ok = eval(X, s->values[i], &ret[i]); /* may call functions: X->ret is theirs */
        free_ret(X);
        X->ret = ret;
        X->nret = (int)s->nvalues;
        X->returned = ok;
        return ok;
    }
    default: return rx_error(X, SP_DIAG_NAME, s->loc, "unexpected %s here", sp_ast_stmt_kind_name(s->kind));
    }
}

/* A statement; with opts.observe the reads of a leaf statement (an assignment, an expression,
   an output) are its operands, and those of an expression statement (a send) escape the rank. */
static int stmt(rexec_t *X, const sp_ast_stmt_t *s)
{
    if (s->kind != SP_STMT_ASSIGN && s->kind != SP_STMT_ACCUM && s->kind != SP_STMT_EXPR &&
        s->kind != SP_STMT_OUTPUT)
        return stmt1(X, s);
    int start = X->nreads, outer = X->leaf_start;
    const sp_ast_stmt_t *os = X->leaf;
    X->adepth++;
    X->leaf_start = start;
    X->leaf = s;
    int64_t nobs = (int64_t)X->obs.n;
    int ok = stmt1(X, s);
    X->adepth--;
    X->leaf_start = outer;
    X->leaf = os;
    /* an expression statement that made no observation (no send) passes its reads on unseen */
    if (s->kind == SP_STMT_EXPR && (int64_t)X->obs.n == nobs)
        for (int i = start; i < X->nreads; i++)
            X->obs.o[SP_REF_OBS_IDX(X->reads[i])].used = 1;
    int direct = s->kind == SP_STMT_OUTPUT; /* every output a name, not an expression */
    for (size_t i = 0; direct && i < s->noutputs; i++) {
        const sp_ast_expr_t *v = s->outputs[i].value;
        direct = v == NULL || v->kind == SP_AST_NAME || v->kind == SP_AST_INDEX;
    }
    for (int i = start; direct && i < X->nreads; i++)
        if (X->obs.o[SP_REF_OBS_IDX(X->reads[i])].out_line == 0)
            X->obs.o[SP_REF_OBS_IDX(X->reads[i])].out_line = s->loc.line;
    if (X->adepth == 0)
        X->nreads = start;
    return ok;
}

int rx_block(rexec_t *X, const sp_ast_block_t *b)
{
    for (size_t i = 0; i < b->n && !X->returned; i++)
        if (!stmt(X, b->stmts[i]) || X->failed)
            return 0;
    return 1;
}

/* ---- the model: inputs and train --------------------------------------------------------- */

static int register_input(rrun_t *R, const char *key, int kind)
{
    if (R->ninp == R->ainp) {
        int n = R->ainp ? 2 * R->ainp : 16;
        rinput_t *p = realloc(R->inp, (size_t)n * sizeof(rinput_t));
        if (p == NULL)
            return -1;
        R->inp = p, R->ainp = n;
    }
    if ((R->inp[R->ninp].key = strdup(key)) == NULL)
        return -1;
    R->inp[R->ninp++].kind = kind;
    return 0;
}

/* A leaf tensor of seeded (or caller-given) input values, bound to key. */
static int make_input(rexec_t *X, const char *key, int kind, int nd, const int64_t *sh, sp_loc_t loc)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) {
        if (sh[d] > 0 && n > X->R->opt->max_elements / sh[d])
            return rx_limit(X, loc, "%s has more than %lld elements (the limit max-elements)", key,
                            (long long)X->R->opt->max_elements);
        n *= sh[d];
    }
    if (renv_find(&X->genv, key, 0))
        return rx_error(X, SP_DIAG_NAME, loc, "'%s' is declared twice", key);
    rten_t t;
    rt_init(&t);
    t.nd = nd;
    memcpy(t.sh, sh, (size_t)nd * sizeof(int64_t));
    if ((t.id = malloc((size_t)(n ? n : 1) * sizeof(uint32_t))) == NULL)
        return rx_limit(X, loc, "out of memory");
    fmpq_t q;
    fmpq_init(q);
    for (int64_t i = 0; i < n; i++) {
        rr_input_value(X->R, key, kind == 1, nd, sh, i, q);
        t.id[i] = rs_constq(&X->S, q);
    }
    fmpq_clear(q);
    if (register_input(X->R, key, kind) < 0 || renv_set_take(&X->genv, key, &t) < 0) {
        rt_clear(&t);
        return rx_limit(X, loc, "out of memory");
    }
    return over(X, loc);
}

static int declare_input(rexec_t *X, const sp_ast_stmt_t *s)
{
    const sp_ast_layout_t *l = s->layout;
    int64_t sh[RMAXD], ext[RMAXD], idx[RMAXD], total = 1;
    if (l->ndims > RMAXD || s->ncount > RMAXD)
        return rx_error(X, SP_DIAG_SHAPE, s->loc, "more than %d dimensions", RMAXD);
    if (l->npartials > 0)
        return rx_error(X, SP_DIAG_LAYOUT, l->loc, "a model tensor has no pending reduction");
    for (size_t d = 0; d < l->ndims; d++) {
        if (l->dims[d].naxes > 0)
            return rx_error(X, SP_DIAG_LAYOUT, l->dims[d].axes[0].loc, "a model tensor is not sharded");
        if (!rx_ct_size(X, l->dims[d].size, &sh[d], NULL, "a size"))
            return 0;
        if (sh[d] < 0)
            return rx_error(X, SP_DIAG_SHAPE, l->dims[d].size->loc, "negative size");
    }
    for (size_t k = 0; k < s->ncount; k++) {
        if (!rx_ct_int(X, s->count[k], &ext[k], "an array extent"))
            return 0;
        if (ext[k] < 0 || ext[k] > 1000000)
            return rx_error(X, SP_DIAG_SHAPE, s->count[k]->loc, "array extent out of range");
        total *= ext[k];
    }
    char key[600];
    for (int64_t i = 0; i < total; i++) {
        int64_t f = i;
        for (size_t k = s->ncount; k-- > 0;)
            idx[k] = f % ext[k], f /= ext[k];
        size_t p = (size_t)snprintf(key, sizeof(key), "%s", s->name.str);
        for (size_t k = 0; k < s->ncount; k++)
            p += (size_t)snprintf(key + p, sizeof(key) - p, "%s%lld", k ? "," : "[", (long long)idx[k]);
        if (s->ncount)
            snprintf(key + p, sizeof(key) - p, "]");
        if (reserved(key))
            return rx_error(X, SP_DIAG_NAME, s->loc, "'%s' is a name train derives", key);
        if (!make_input(X, key, s->kind == SP_STMT_PARAM, (int)l->ndims, sh, s->loc))
            return 0;
    }
    return 1;
}

/* train's argument key (an exact rational), or dflt; -1 on error */
static int train_arg(rexec_t *X, const char *key, slong p, ulong q, fmpq_t v)
{
    const sp_ast_stmt_t *t = X->train;
    fmpq_set_si(v, p, q);
    for (size_t i = 0; i < t->nargs; i++)
        if (t->args[i].key.str && strcmp(t->args[i].key.str, key) == 0) {
            fmpq_t run; /* a value: v at the file's sizes */
            fmpq_init(run);
            int r = rx_ct(X, t->args[i].value, run, v);
            fmpq_clear(run);
            return r == 1 ? 1 : r == 0 ? rx_error(X, SP_DIAG_SHAPE, t->args[i].value->loc, "%s must be a number", key) - 1 : -1;
        }
    return 0;
}

/* elementwise helpers on node ids */
#define K(q) rs_constq(S, q)
static uint32_t axpy(rstore_t *S, uint32_t a, uint32_t x, uint32_t b, uint32_t y)
{
    return rs_op2(S, RO_ADD, rs_op2(S, RO_MUL, a, x), rs_op2(S, RO_MUL, b, y));
}

static int bind_new(rexec_t *X, const char *pre, const char *p, const rten_t *shape, const uint32_t *ids)
{
    char key[700];
    snprintf(key, sizeof(key), "%s%s", pre, p);
    rten_t t = *shape;
    int64_t n = rt_numel(shape);
    if ((t.id = malloc((size_t)(n ? n : 1) * sizeof(uint32_t))) == NULL)
        return -1;
    memcpy(t.id, ids, (size_t)n * sizeof(uint32_t));
    return renv_set_take(&X->genv, key, &t);
}

/* The optimizer step (formulas of docs/reference-executor.md; PyTorch where the docs are silent). */
static int optimizer(rexec_t *X)
{
    const sp_ast_stmt_t *t = X->train;
    rstore_t *S = &X->S;
    const char *opt = t->name.str;
    static const char *const keys[] = {"lr", "momentum", "beta1", "beta2", "eps", "weight_decay", "clip", "step"};
    fmpq_t v[8], one, c1, c2, tmp;
    int adamw = !strcmp(opt, "adamw"), adam = adamw || !strcmp(opt, "adam"), mom = !strcmp(opt, "momentum");
    if (!adam && !mom && strcmp(opt, "sgd"))
        return rx_error(X, SP_DIAG_NAME, t->name.loc, "unknown optimizer '%s' (sgd, momentum, adam, adamw)", opt);
    for (size_t i = 0; i < t->nargs; i++) {
        int known = 0;
        for (int k = 0; k < 8; k++)
            known |= t->args[i].key.str && !strcmp(t->args[i].key.str, keys[k]);
        if (!known)
            return rx_error(X, SP_DIAG_NAME, t->args[i].value->loc, "unknown argument of train %s (lr, momentum, beta1, beta2, eps, weight_decay, clip, step)", opt);
    }
    for (int k = 0; k < 8; k++)
        fmpq_init(v[k]);
    fmpq_init(one), fmpq_init(c1), fmpq_init(c2), fmpq_init(tmp);
    int r[8];
    r[0] = train_arg(X, "lr", 1, 1000, v[0]);
    r[1] = train_arg(X, "momentum", 9, 10, v[1]);
    r[2] = train_arg(X, "beta1", 9, 10, v[2]);
    r[3] = train_arg(X, "beta2", 999, 1000, v[3]);
    r[4] = train_arg(X, "eps", 1, 100000000, v[4]);
    r[5] = train_arg(X, "weight_decay", adamw ? 1 : 0, 100, v[5]);
    r[6] = train_arg(X, "clip", 0, 1, v[6]);
    r[7] = train_arg(X, "step", 1, 1, v[7]);
    int ok = 1;
    for (int k = 0; k < 8; k++)
        ok &= r[k] >= 0;
    if (ok && (!fmpz_is_one(fmpq_denref(v[7])) || fmpq_sgn(v[7]) <= 0 || fmpz_cmp_ui(fmpq_numref(v[7]), 1000000) > 0))
        ok = rx_error(X, SP_DIAG_SHAPE, t->loc, "step must be a positive integer");
    fmpq_one(one);
    slong step = ok ? fmpz_get_si(fmpq_numref(v[7])) : 1;
    fmpq_pow_si(c1, v[2], step);
    fmpq_sub(c1, one, c1); /* 1 - beta1^t */
    fmpq_pow_si(c2, v[3], step);
    fmpq_sub(c2, one, c2); /* 1 - beta2^t */
    /* clipping: scale = min(1, clip / (||g|| + 1e-6)) over every parameter gradient */
    uint32_t scale = rs_const(S, 1, 1);
    const rrun_t *R = X->R;
    if (ok && r[6] == 1) {
        size_t np = 0;
        for (int i = 0; i < R->ninp; i++)
            if (R->inp[i].kind == 1) {
                char key[700];
                snprintf(key, sizeof(key), "grad.%s", R->inp[i].key);
                np += (size_t)rt_numel(&renv_find(&X->genv, key, 0)->t);
            }
        uint32_t *pr = malloc(2 * (np + 1) * sizeof(uint32_t));
        if (pr == NULL)
            ok = rx_limit(X, t->loc, "out of memory");
        for (int i = 0, k = 0; ok && i < R->ninp; i++)
            if (R->inp[i].kind == 1) {
                char key[700];
                snprintf(key, sizeof(key), "grad.%s", R->inp[i].key);
                const rten_t *g = &renv_find(&X->genv, key, 0)->t;
                for (int64_t e = 0; e < rt_numel(g); e++, k++)
                    pr[2 * k] = pr[2 * k + 1] = g->id[e];
            }
        if (ok) {
            uint32_t norm = rs_op1(S, RO_SQRT, rs_op(S, RO_DOT, pr, (uint32_t)(2 * np)));
            uint32_t coef = rs_op2(S, RO_DIV, K(v[6]), rs_op2(S, RO_ADD, norm, rs_const(S, 1, 1000000)));
            scale = rs_op2(S, RO_MIN, rs_const(S, 1, 1), coef);
        }
        free(pr);
    }
    int ninp = R->ninp;
    for (int i = 0; ok && i < ninp; i++) {
        if (R->inp[i].kind != 1)
            continue;
        char key[700], p[600];
        snprintf(p, sizeof(p), "%s", R->inp[i].key);
        snprintf(key, sizeof(key), "grad.%s", p);
        rten_t w = renv_find(&X->genv, p, 0)->t, g = renv_find(&X->genv, key, 0)->t;
        int64_t n = rt_numel(&w);
        uint32_t *nw = malloc((size_t)(3 * n + 1) * sizeof(uint32_t)), *s1 = nw + n, *s2 = s1 + n;
        rten_t st1, st2;
        rt_init(&st1), rt_init(&st2);
        if (nw == NULL) {
            ok = rx_limit(X, t->loc, "out of memory");
            break;
        }
        /* optimizer state inputs */
        if (mom || adam) {
            const char *a = mom ? "momentum." : "adam.m.";
            snprintf(key, sizeof(key), "%s%s", a, p);
            ok = make_input(X, key, 2, w.nd, w.sh, t->loc);
            if (ok && adam) {
                snprintf(key, sizeof(key), "adam.v.%s", p);
                ok = make_input(X, key, 2, w.nd, w.sh, t->loc);
            }
            if (ok) {
                snprintf(key, sizeof(key), "%s%s", a, p);
                st1 = renv_find(&X->genv, key, 0)->t;
                snprintf(key, sizeof(key), "adam.v.%s", p);
                if (adam)
                    st2 = renv_find(&X->genv, key, 0)->t;
            }
            w = renv_find(&X->genv, p, 0)->t; /* the bindings may have moved */
            g = renv_find(&X->genv, (snprintf(key, sizeof(key), "grad.%s", p), key), 0)->t;
        }
        uint32_t klr = K(v[0]), kwd = K(v[5]), keps = K(v[4]), kc1 = K(c1), kc2 = K(c2), kdec;
        fmpq_mul(tmp, v[0], v[5]);
        kdec = K(tmp);
        uint32_t kmu = K(v[1]), kone = rs_const(S, 1, 1), kb1 = K(v[2]), kb2 = K(v[3]), k1b1, k1b2;
        fmpq_sub(tmp, one, v[2]);
        k1b1 = K(tmp);
        fmpq_sub(tmp, one, v[3]);
        k1b2 = K(tmp);
        for (int64_t e = 0; ok && e < n; e++) {
            uint32_t gv = rs_op2(S, RO_MUL, g.id[e], scale), wv = w.id[e];
            if (!fmpq_is_zero(v[5]) && !adamw) /* L2 weight decay (torch SGD, momentum, Adam) */
                gv = rs_op2(S, RO_ADD, gv, rs_op2(S, RO_MUL, kwd, wv));
            if (mom) { /* buf' = mu buf + g; w' = w - lr buf' */
                s1[e] = axpy(S, kmu, st1.id[e], kone, gv);
                nw[e] = rs_op2(S, RO_SUB, wv, rs_op2(S, RO_MUL, klr, s1[e]));
            } else if (adam) {
                s1[e] = axpy(S, kb1, st1.id[e], k1b1, gv);
                s2[e] = axpy(S, kb2, st2.id[e], k1b2, rs_pow(S, gv, 2));
                uint32_t mh = rs_op2(S, RO_DIV, s1[e], kc1), vh = rs_op2(S, RO_DIV, s2[e], kc2);
                uint32_t upd = rs_op2(S, RO_DIV, mh, rs_op2(S, RO_ADD, rs_op1(S, RO_SQRT, vh), keps));
                if (adamw && !fmpq_is_zero(v[5])) /* decoupled: w (1 - lr wd) */
                    wv = rs_op2(S, RO_SUB, wv, rs_op2(S, RO_MUL, kdec, wv));
                nw[e] = rs_op2(S, RO_SUB, wv, rs_op2(S, RO_MUL, klr, upd));
            } else
                nw[e] = rs_op2(S, RO_SUB, wv, rs_op2(S, RO_MUL, klr, gv));
        }
        if (ok && (bind_new(X, "next.", p, &w, nw) < 0 ||
                   (mom && bind_new(X, "next.momentum.", p, &w, s1) < 0) ||
                   (adam && (bind_new(X, "next.adam.m.", p, &w, s1) < 0 || bind_new(X, "next.adam.v.", p, &w, s2) < 0))))
            ok = rx_limit(X, t->loc, "out of memory");
        free(nw);
        ok = ok && over(X, t->loc);
    }
    for (int k = 0; k < 8; k++)
        fmpq_clear(v[k]);
    fmpq_clear(one), fmpq_clear(c1), fmpq_clear(c2), fmpq_clear(tmp);
    return ok;
}

/* Reverse sweep from the loss: grad.NAME for every tensor of the model's top scope. */
static int backward(rexec_t *X)
{
    rstore_t *S = &X->S;
    if (X->nouts == 0)
        return rx_error(X, SP_DIAG_SHAPE, X->train->loc, "train needs the loss as the model's first output");
    const rten_t *loss = &renv_find(&X->genv, X->outs[0], 0)->t;
    if (rt_numel(loss) != 1)
        return rx_error(X, SP_DIAG_SHAPE, X->train->loc, "the loss '%s' is not a scalar", X->outs[0]);
    size_t n = S->len;
    rv_t *adj = malloc(n * sizeof(rv_t));
    if (adj == NULL || rs_charge(S, (long long)(n * sizeof(rv_t))) < 0) {
        free(adj);
        return rx_limit(X, X->train->loc, "the adjoints exceed the memory limit (max-mem)");
    }
    for (size_t i = 0; i < n; i++)
        rv_init(&adj[i]);
    uint32_t l = loss->id[0];
    rv_set_si(&adj[l], 1, 1);
    int taint = rs_val(S, l)->taint | (S->topk_tie ? RT_TIE : 0), ok = 1;
    rs_sweep(S, 0, adj);
    size_t nb = X->genv.n;
    for (size_t i = 0; ok && i < nb; i++) {
        rbind_t *b = &X->genv.b[i];
        if (b->isint)
            continue;
        int64_t m = rt_numel(&b->t);
        char key[700];
        snprintf(key, sizeof(key), "grad.%s", b->key);
        rten_t g = b->t;
        if ((g.id = malloc((size_t)(m ? m : 1) * sizeof(uint32_t))) == NULL) {
            ok = rx_limit(X, X->train->loc, "out of memory");
            break;
        }
        for (int64_t e = 0; e < m; e++) {
            rv_t *a = &adj[X->genv.b[i].t.id[e]];
            if (taint && !a->taint)
                rv_bad(a, taint);
            g.id[e] = rs_leaf(S, a);
        }
        ok = (renv_set_take(&X->genv, key, &g) == 0 || rx_limit(X, X->train->loc, "out of memory")) &&
             over(X, X->train->loc);
    }
    for (size_t i = 0; i < n; i++)
        rv_clear(&adj[i]);
    free(adj);
    rs_charge(S, -(long long)(n * sizeof(rv_t)));
    return ok;
}

int rx_model(rexec_t *X)
{
    const sp_ast_block_t *b = &X->R->model->body;
    for (size_t i = 0; i < b->n; i++)
        if (b->stmts[i]->kind == SP_STMT_TRAIN) {
            if (X->train)
                return rx_error(X, SP_DIAG_NAME, b->stmts[i]->loc, "a second 'train'");
            X->train = b->stmts[i];
        }
    if (!rx_block(X, b))
        return 0;
    return X->train == NULL || (backward(X) && optimizer(X));
}
