/* smt2.c: SMT-LIB2 export of equivalence queries, transcendentals as uninterpreted functions. */
#include "smt2.h"

#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

/* A single-use node is written inline while its text is at most this deep and this long. */
#define INLINE_DEPTH 3
#define INLINE_LEN 160
/* pow(x, k) with |k| up to this is (* x x ...); above it, square and multiply. */
#define POW_INLINE 8

/* def[i]: DEF_TRUE, DEF_FALSE, or the node id whose Bool define-fun sp_d<id> holds the condition.
 */
#define DEF_TRUE 0u
#define DEF_FALSE UINT32_MAX

typedef struct {
    const sp_ectx_struct *E;
    const uint32_t *cone; /* ascending ids = topological order */
    size_t n;
    uint32_t *uses; /* textual references: by users (weighted by how often the encoding repeats
                       the argument) and by the final assertion */
    uint8_t *root;  /* a root must be named */
    uint8_t *depth; /* parenthesis depth of the inline text, 0 for leaves and named nodes */
    uint8_t *named; /* 1 once written as (define-fun sp_t<id> ...) */
    char **text;    /* the inline text of a single-use node, until its user takes it */
    uint32_t *def;  /* definedness, see DEF_* */
    sp_sbuf_t out;
} smt_t;

static size_t pos(const smt_t *s, sp_expr_t id)
{
    return sp_bsearch_u32(s->cone, s->n, id);
}

static int op_is_uf(sp_op_t op)
{
    return op >= SP_OP_EXP && op <= SP_OP_ERF;
}

/* SMT-LIB core, Ints and Reals identifiers that a declaration would shadow. */
static const char *const builtin_names[] = {"true", "false",   "not",      "and",   "or",
                                            "xor",  "ite",     "distinct", "abs",   "div",
                                            "mod",  "to_real", "to_int",   "is_int"};

static int name_is_plain(const char *s)
{
    if (!(((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z') || s[0] == '_') || strncmp(s, "sp_", 3) == 0)
        return 0;
    for (size_t k = 0; k < sizeof(builtin_names) / sizeof(builtin_names[0]); k++)
        if (strcmp(s, builtin_names[k]) == 0)
            return 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c >= 0x7f || c == '|' || c == '\\' || c == '#')
            return 0;
    }
    return 1;
}

static void put_sym(sp_sbuf_t *b, const sp_ectx_struct *E, sp_expr_t e)
{
    const char *s = sp_expr_sym_name(E, e);
    if (name_is_plain(s)) {
        sp_sbuf_printf(b, "|%s|", s);
        return;
    }
    /* '#' never occurs in a plain name, so this form cannot meet one. */
    sp_sbuf_printf(b, "|#%lld:", (long long)E->nodes[e].param);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int bad = c <= 0x20 || c >= 0x7f || c == '|' || c == '\\' || c == '#';
        sp_sbuf_putc(b, bad ? '_' : (char)c);
    }
    sp_sbuf_putc(b, '|');
}

/* A rational as an SMT-LIB Real term: 3.0, (- 3.0), (/ 3.0 4.0), (- (/ 3.0 4.0)). */
static void put_const(sp_sbuf_t *b, const fmpq *c)
{
    int neg = fmpz_sgn(fmpq_numref(c)) < 0;
    fmpz_t num;
    fmpz_init(num);
    fmpz_abs(num, fmpq_numref(c));
    char *ns = fmpz_get_str(NULL, 10, num);
    if (neg)
        sp_sbuf_puts(b, "(- ");
    if (fmpz_is_one(fmpq_denref(c))) {
        sp_sbuf_printf(b, "%s.0", ns);
    } else {
        char *ds = fmpz_get_str(NULL, 10, fmpq_denref(c));
        sp_sbuf_printf(b, "(/ %s.0 %s.0)", ns, ds);
        flint_free(ds);
    }
    if (neg)
        sp_sbuf_putc(b, ')');
    flint_free(ns);
    fmpz_clear(num);
}

/* Append the text of node e (in the cone): a leaf, its name, or its inline text (taken). */
static void put_arg(smt_t *s, sp_sbuf_t *b, sp_expr_t e)
{
    const sp_ectx_struct *E = s->E;
    switch (sp_expr_op(E, e)) {
    case SP_OP_SYM:
        put_sym(b, E, e);
        return;
    case SP_OP_CONST:
        put_const(b, sp_expr_const(E, e));
        return;
    default:
        break;
    }
    size_t i = pos(s, e);
    if (s->named[i] || s->text[i] == NULL) {
        sp_sbuf_printf(b, "sp_t%u", (unsigned)e);
        return;
    }
    sp_sbuf_puts(b, s->text[i]);
    flint_free(s->text[i]);
    s->text[i] = NULL;
}

/* How many times the encoding of node e writes its k-th argument (guards included). */
static uint32_t arg_weight(const sp_ectx_struct *E, sp_expr_t e)
{
    const sp_node_t *nd = sp_expr_node(E, e);
    switch ((sp_op_t)nd->op) {
    case SP_OP_POW:
        return nd->param == 0 ? 0 : (nd->param == 1 ? 1 : 2);
    case SP_OP_MAX:
    case SP_OP_MIN:
    case SP_OP_RELU:
    case SP_OP_ABS:
    case SP_OP_CLAMP:
        return 2;
    case SP_OP_LOG:
    case SP_OP_SQRT:
    case SP_OP_RSQRT:
        return 2; /* guard + use */
    default:
        return 1;
    }
}

/* ---- definedness ------------------------------------------------------------------------- */

/* The guard a node adds on argument x, or "" if none is needed; DEF_FALSE if x never qualifies. */
typedef enum { GUARD_NONE, GUARD_NONZERO, GUARD_POS, GUARD_NONNEG, GUARD_NEVER } guard_t;

static guard_t node_guard(const sp_ectx_struct *E, sp_expr_t e, sp_expr_t *x)
{
    sp_op_t op = sp_expr_op(E, e);
    guard_t g;
    if (op == SP_OP_DIV) {
        *x = sp_expr_arg(E, e, 1);
        g = GUARD_NONZERO;
    } else if (op == SP_OP_POW && sp_expr_node(E, e)->param < 0) {
        *x = sp_expr_arg(E, e, 0);
        g = GUARD_NONZERO;
    } else if (op == SP_OP_LOG || op == SP_OP_RSQRT) {
        *x = sp_expr_arg(E, e, 0);
        g = GUARD_POS;
    } else if (op == SP_OP_SQRT) {
        *x = sp_expr_arg(E, e, 0);
        g = GUARD_NONNEG;
    } else {
        return GUARD_NONE;
    }
    if (sp_expr_op(E, *x) == SP_OP_CONST) {
        int sg = fmpq_sgn(sp_expr_const(E, *x));
        int ok = g == GUARD_NONZERO ? sg != 0 : (g == GUARD_POS ? sg > 0 : sg >= 0);
        return ok ? GUARD_NONE : GUARD_NEVER;
    }
    return g;
}

static int cmp_u32(const void *p, const void *q)
{
    uint32_t x = *(const uint32_t *)p, y = *(const uint32_t *)q;
    return (x > y) - (x < y);
}

/* Set s->def[i] for cone index i whose arguments are done; may write a Bool define-fun. */
static int define_def(smt_t *s, size_t i, uint32_t **scratch, size_t *scratch_alloc)
{
    const sp_ectx_struct *E = s->E;
    sp_expr_t e = s->cone[i];
    uint32_t na = sp_expr_nargs(E, e);
    sp_expr_t x = SP_EXPR_NONE;
    guard_t g = node_guard(E, e, &x);
    if (g == GUARD_NEVER) {
        s->def[i] = DEF_FALSE;
        return 1;
    }
    if (*scratch_alloc < (size_t)na + 1) {
        uint32_t *t = flint_realloc(*scratch, ((size_t)na + 1) * sizeof(uint32_t));
        *scratch = t;
        *scratch_alloc = (size_t)na + 1;
    }
    uint32_t *d = *scratch;
    size_t nd = 0;
    for (uint32_t k = 0; k < na; k++) {
        uint32_t dk = s->def[pos(s, sp_expr_arg(E, e, k))];
        if (dk == DEF_FALSE) {
            s->def[i] = DEF_FALSE;
            return 1;
        }
        if (dk != DEF_TRUE)
            d[nd++] = dk;
    }
    qsort(d, nd, sizeof(uint32_t), cmp_u32);
    size_t m = 0;
    for (size_t k = 0; k < nd; k++)
        if (m == 0 || d[m - 1] != d[k])
            d[m++] = d[k];
    nd = m;
    if (g == GUARD_NONE && nd == 0) {
        s->def[i] = DEF_TRUE;
        return 1;
    }
    if (g == GUARD_NONE && nd == 1) {
        s->def[i] = d[0];
        return 1;
    }
    sp_sbuf_printf(&s->out, "(define-fun sp_d%u () Bool ", (unsigned)e);
    size_t parts = nd + (g != GUARD_NONE);
    if (parts > 1)
        sp_sbuf_puts(&s->out, "(and");
    for (size_t k = 0; k < nd; k++)
        sp_sbuf_printf(&s->out, "%ssp_d%u", (parts > 1 ? " " : ""), (unsigned)d[k]);
    if (g != GUARD_NONE) {
        sp_sbuf_puts(&s->out, parts > 1 ? " " : "");
        sp_sbuf_puts(&s->out, g == GUARD_NONZERO ? "(not (= " : (g == GUARD_POS ? "(> " : "(>= "));
        put_arg(s, &s->out, x);
        sp_sbuf_puts(&s->out, g == GUARD_NONZERO ? " 0.0))" : " 0.0)");
    }
    if (parts > 1)
        sp_sbuf_putc(&s->out, ')');
    sp_sbuf_puts(&s->out, ")\n");
    s->def[i] = e;
    return 1;
}

/* ---- terms -------------------------------------------------------------------------------- */

static void put_aux_name(sp_sbuf_t *b, sp_expr_t e, const char *tag, uint32_t j)
{
    sp_sbuf_printf(b, "sp_t%u_%s%u", (unsigned)e, tag, (unsigned)j);
}

/* (define-fun sp_t<e>_<tag><j> () Real (ite (OP x y) x y)) for max/min steps. */
static void define_pick(smt_t *s, sp_expr_t e, const char *tag, uint32_t j, const char *rel,
                        const char *x, const char *y)
{
    sp_sbuf_puts(&s->out, "(define-fun ");
    put_aux_name(&s->out, e, tag, j);
    sp_sbuf_printf(&s->out, " () Real (ite (%s %s %s) %s %s))\n", rel, x, y, x, y);
}

/* Text of arg k of e into a fresh string (args written twice are named or leaves, so this does
   not take an inline text twice). */
static char *arg_str(smt_t *s, sp_expr_t e, uint32_t k)
{
    sp_sbuf_t b;
    sp_sbuf_init(&b);
    put_arg(s, &b, sp_expr_arg(s->E, e, k));
    return sp_sbuf_take(&b);
}

/* x^k for k >= 1 into b; x is a leaf or a name. */
static void put_pow_pos(smt_t *s, sp_sbuf_t *b, sp_expr_t e, const char *x, uint64_t k)
{
    if (k == 1) {
        sp_sbuf_puts(b, x);
        return;
    }
    if (k <= POW_INLINE) {
        sp_sbuf_puts(b, "(*");
        for (uint64_t j = 0; j < k; j++)
            sp_sbuf_printf(b, " %s", x);
        sp_sbuf_putc(b, ')');
        return;
    }
    /* sp_t<e>_s<j> = x^(2^j) */
    uint32_t top = 0;
    while ((k >> (top + 1)) != 0)
        top++;
    for (uint32_t j = 1; j <= top; j++) {
        sp_sbuf_puts(&s->out, "(define-fun ");
        put_aux_name(&s->out, e, "s", j);
        sp_sbuf_puts(&s->out, " () Real (* ");
        for (int r = 0; r < 2; r++) {
            if (j == 1)
                sp_sbuf_puts(&s->out, x);
            else
                put_aux_name(&s->out, e, "s", j - 1);
            sp_sbuf_putc(&s->out, r ? ')' : ' ');
        }
        sp_sbuf_puts(&s->out, ")\n");
    }
    sp_sbuf_puts(b, "(*");
    for (uint32_t j = 0; j <= top; j++) {
        if (!((k >> j) & 1))
            continue;
        sp_sbuf_putc(b, ' ');
        if (j == 0)
            sp_sbuf_puts(b, x);
        else
            put_aux_name(b, e, "s", j);
    }
    sp_sbuf_putc(b, ')');
}

static const char *cmp_rel(sp_cmp_t c)
{
    static const char *const rel[] = {"<", "<=", ">", ">=", "=", "distinct"};
    return (unsigned)c < 6 ? rel[c] : "=";
}

/* The term of node e (cone index i) into b; may write auxiliary define-funs first. */
static void put_term(smt_t *s, sp_sbuf_t *b, sp_expr_t e)
{
    const sp_ectx_struct *E = s->E;
    const sp_node_t *nd = sp_expr_node(E, e);
    sp_op_t op = (sp_op_t)nd->op;
    uint32_t na = nd->nargs;
    switch (op) {
    case SP_OP_ADD:
    case SP_OP_MUL:
        if (na == 0) {
            sp_sbuf_puts(b, op == SP_OP_ADD ? "0.0" : "1.0");
            return;
        }
        if (na == 1) {
            put_arg(s, b, sp_expr_arg(E, e, 0));
            return;
        }
        sp_sbuf_puts(b, op == SP_OP_ADD ? "(+" : "(*");
        for (uint32_t k = 0; k < na; k++) {
            sp_sbuf_putc(b, ' ');
            put_arg(s, b, sp_expr_arg(E, e, k));
        }
        sp_sbuf_putc(b, ')');
        return;
    case SP_OP_DOT: /* a1*b1 + a2*b2 + ... (at least two pairs) */
        sp_sbuf_puts(b, "(+");
        for (uint32_t k = 0; k + 1 < na; k += 2) {
            sp_sbuf_puts(b, " (* ");
            put_arg(s, b, sp_expr_arg(E, e, k));
            sp_sbuf_putc(b, ' ');
            put_arg(s, b, sp_expr_arg(E, e, k + 1));
            sp_sbuf_putc(b, ')');
        }
        sp_sbuf_putc(b, ')');
        return;
    case SP_OP_NEG:
    case SP_OP_SUB:
    case SP_OP_DIV:
        sp_sbuf_puts(b, op == SP_OP_DIV ? "(/" : "(-");
        for (uint32_t k = 0; k < na; k++) {
            sp_sbuf_putc(b, ' ');
            put_arg(s, b, sp_expr_arg(E, e, k));
        }
        sp_sbuf_putc(b, ')');
        return;
    case SP_OP_POW: {
        int64_t k = nd->param;
        if (k == 0) {
            sp_sbuf_puts(b, "1.0");
            return;
        }
        char *x = arg_str(s, e, 0);
        uint64_t mag = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
        if (k < 0)
            sp_sbuf_puts(b, "(/ 1.0 ");
        put_pow_pos(s, b, e, x, mag);
        if (k < 0)
            sp_sbuf_putc(b, ')');
        flint_free(x);
        return;
    }
    case SP_OP_EXP:
    case SP_OP_LOG:
    case SP_OP_SQRT:
    case SP_OP_RSQRT:
    case SP_OP_TANH:
    case SP_OP_SIGMOID:
    case SP_OP_SILU:
    case SP_OP_GELU:
    case SP_OP_ERF:
        sp_sbuf_printf(b, "(sp_%s ", sp_op_name(op));
        put_arg(s, b, sp_expr_arg(E, e, 0));
        sp_sbuf_putc(b, ')');
        return;
    case SP_OP_MAX:
    case SP_OP_MIN: {
        const char *rel = op == SP_OP_MAX ? ">=" : "<=";
        if (na == 1) {
            put_arg(s, b, sp_expr_arg(E, e, 0));
            return;
        }
        /* m_1 = pick(a0, a1), m_j = pick(m_{j-1}, a_j); all but the last are define-funs */
        char *acc = arg_str(s, e, 0);
        for (uint32_t j = 1; j < na; j++) {
            char *y = arg_str(s, e, j);
            if (j + 1 < na) {
                define_pick(s, e, "m", j, rel, acc, y);
                sp_sbuf_t nb;
                sp_sbuf_init(&nb);
                put_aux_name(&nb, e, "m", j);
                flint_free(acc);
                acc = sp_sbuf_take(&nb);
            } else {
                sp_sbuf_printf(b, "(ite (%s %s %s) %s %s)", rel, acc, y, acc, y);
            }
            flint_free(y);
        }
        flint_free(acc);
        return;
    }
    case SP_OP_RELU: {
        char *x = arg_str(s, e, 0);
        sp_sbuf_printf(b, "(ite (> %s 0.0) %s 0.0)", x, x);
        flint_free(x);
        return;
    }
    case SP_OP_ABS: {
        char *x = arg_str(s, e, 0);
        sp_sbuf_printf(b, "(ite (>= %s 0.0) %s (- %s))", x, x, x);
        flint_free(x);
        return;
    }
    case SP_OP_CLAMP: {
        /* min(max(x, lo), hi) */
        char *x = arg_str(s, e, 0), *lo = arg_str(s, e, 1), *hi = arg_str(s, e, 2);
        define_pick(s, e, "m", 1, ">=", x, lo);
        sp_sbuf_t nb;
        sp_sbuf_init(&nb);
        put_aux_name(&nb, e, "m", 1);
        char *m = sp_sbuf_take(&nb);
        sp_sbuf_printf(b, "(ite (<= %s %s) %s %s)", m, hi, m, hi);
        flint_free(m);
        flint_free(x);
        flint_free(lo);
        flint_free(hi);
        return;
    }
    case SP_OP_CMP:
        sp_sbuf_printf(b, "(ite (%s ", cmp_rel((sp_cmp_t)nd->param));
        put_arg(s, b, sp_expr_arg(E, e, 0));
        sp_sbuf_putc(b, ' ');
        put_arg(s, b, sp_expr_arg(E, e, 1));
        sp_sbuf_puts(b, ") 1.0 0.0)");
        return;
    case SP_OP_WHERE:
        /* where(c, a, b) = a if c != 0; written (ite (= c 0) b a), each argument once */
        sp_sbuf_puts(b, "(ite (= ");
        put_arg(s, b, sp_expr_arg(E, e, 0));
        sp_sbuf_puts(b, " 0.0) ");
        put_arg(s, b, sp_expr_arg(E, e, 2));
        sp_sbuf_putc(b, ' ');
        put_arg(s, b, sp_expr_arg(E, e, 1));
        sp_sbuf_putc(b, ')');
        return;
    default: /* SYM and CONST are leaves, never terms */
        sp_sbuf_puts(b, "0.0");
        return;
    }
}

/* ---- the script --------------------------------------------------------------------------- */

static void put_def(sp_sbuf_t *b, uint32_t d)
{
    if (d == DEF_FALSE)
        sp_sbuf_puts(b, "false");
    else
        sp_sbuf_printf(b, "sp_d%u", (unsigned)d);
}

char *sp_smt2_query(const sp_ectx_t E, const sp_expr_t *a, const sp_expr_t *b, slong n)
{
    if (n < 0)
        return NULL;
    for (slong i = 0; i < n; i++)
        if (a[i] == SP_EXPR_NONE || a[i] >= E->len || b[i] == SP_EXPR_NONE || b[i] >= E->len)
            return NULL;

    sp_expr_t *roots = flint_malloc(((size_t)2 * (size_t)n + 1) * sizeof(sp_expr_t));
    for (slong i = 0; i < n; i++) {
        roots[2 * i] = a[i];
        roots[2 * i + 1] = b[i];
    }
    uint32_t *cone = NULL;
    size_t nc = n > 0 ? sp_expr_cone(E, roots, (size_t)2 * (size_t)n, &cone) : 0;
    flint_free(roots);
    if (n > 0 && cone == NULL)
        return NULL;

    smt_t s;
    memset(&s, 0, sizeof(s));
    s.E = E;
    s.cone = cone;
    s.n = nc;
    size_t alloc_n = nc ? nc : 1;
    s.uses = flint_calloc(alloc_n, sizeof(uint32_t));
    s.root = flint_calloc(alloc_n, 1);
    s.depth = flint_calloc(alloc_n, 1);
    s.named = flint_calloc(alloc_n, 1);
    s.text = flint_calloc(alloc_n, sizeof(char *));
    s.def = flint_calloc(alloc_n, sizeof(uint32_t));
    sp_sbuf_init(&s.out);

    /* pass 1: uses, roots, symbols and functions */
    unsigned uf_used[SP_OP__COUNT] = {0};
    size_t nsyms = 0;
    for (size_t i = 0; i < nc; i++) {
        sp_expr_t e = cone[i];
        sp_op_t op = sp_expr_op(E, e);
        if (op == SP_OP_SYM)
            nsyms++;
        if (op_is_uf(op))
            uf_used[op] = 1;
        uint32_t w = arg_weight(E, e);
        for (uint32_t k = 0; k < sp_expr_nargs(E, e); k++)
            s.uses[pos(&s, sp_expr_arg(E, e, k))] += w;
        sp_expr_t x;
        if (node_guard(E, e, &x) != GUARD_NONE)
            s.uses[pos(&s, x)] += 1;
    }
    for (slong i = 0; i < n; i++) {
        s.root[pos(&s, a[i])] = 1;
        s.root[pos(&s, b[i])] = 1;
    }
    int any_uf = 0;
    for (int op = 0; op < SP_OP__COUNT; op++)
        any_uf |= (int)uf_used[op];

    sp_sbuf_t *o = &s.out;
    sp_sbuf_printf(o,
                   "; shardproof equivalence query: %lld element pair(s), %zu symbol(s).\n"
                   "; unsat: every pair is equal wherever both sides are defined (a proof).\n",
                   (long long)n, nsyms);
    if (any_uf)
        sp_sbuf_puts(o, "; sat: the pairs differ for SOME interpretation of the uninterpreted\n"
                        ";      sp_* functions; not necessarily for the real exp/log/...\n");
    else
        sp_sbuf_puts(o, "; sat: the model is a real point where some pair differs.\n");
    sp_sbuf_printf(o, "(set-logic %s)\n", any_uf ? "QF_UFNRA" : "QF_NRA");
    for (size_t i = 0; i < nc; i++)
        if (sp_expr_op(E, cone[i]) == SP_OP_SYM) {
            sp_sbuf_puts(o, "(declare-const ");
            put_sym(o, E, cone[i]);
            sp_sbuf_puts(o, " Real)\n");
        }
    for (int op = 0; op < SP_OP__COUNT; op++)
        if (uf_used[op])
            sp_sbuf_printf(o, "(declare-fun sp_%s (Real) Real)\n", sp_op_name((sp_op_t)op));

    /* pass 2: terms and definedness, bottom-up */
    uint32_t *scratch = NULL;
    size_t scratch_alloc = 0;
    for (size_t i = 0; i < nc; i++) {
        sp_expr_t e = cone[i];
        sp_op_t op = sp_expr_op(E, e);
        if (op == SP_OP_SYM || op == SP_OP_CONST)
            continue;
        uint8_t dep = 0;
        for (uint32_t k = 0; k < sp_expr_nargs(E, e); k++) {
            uint8_t dk = s.depth[pos(&s, sp_expr_arg(E, e, k))];
            dep = dk > dep ? dk : dep;
        }
        /* definedness first: its guard reads the argument before the term may take its text */
        define_def(&s, i, &scratch, &scratch_alloc);
        sp_sbuf_t t;
        sp_sbuf_init(&t);
        put_term(&s, &t, e);
        if (s.uses[i] == 1 && !s.root[i] && dep + 1 <= INLINE_DEPTH && t.len <= INLINE_LEN) {
            s.depth[i] = (uint8_t)(dep + 1);
            s.text[i] = sp_sbuf_take(&t);
        } else {
            sp_sbuf_printf(o, "(define-fun sp_t%u () Real ", (unsigned)e);
            sp_sbuf_puts(o, t.s ? t.s : "0.0");
            sp_sbuf_puts(o, ")\n");
            sp_sbuf_clear(&t);
            s.named[i] = 1;
            s.depth[i] = 0;
        }
    }
    flint_free(scratch);

    /* the question */
    slong live = 0;
    for (slong i = 0; i < n; i++)
        live += a[i] != b[i];
    sp_sbuf_puts(o, "(assert ");
    if (live == 0)
        sp_sbuf_puts(o, "false");
    if (live > 1)
        sp_sbuf_puts(o, "(or");
    for (slong i = 0; i < n; i++) {
        if (a[i] == b[i])
            continue;
        uint32_t da = s.def[pos(&s, a[i])], db = s.def[pos(&s, b[i])];
        int guarded = da != DEF_TRUE || db != DEF_TRUE;
        sp_sbuf_puts(o, live > 1 ? "\n  " : "");
        if (guarded)
            sp_sbuf_puts(o, "(and ");
        if (da != DEF_TRUE) {
            put_def(o, da);
            sp_sbuf_putc(o, ' ');
        }
        if (db != DEF_TRUE && db != da) {
            put_def(o, db);
            sp_sbuf_putc(o, ' ');
        }
        sp_sbuf_puts(o, "(distinct ");
        put_arg(&s, o, a[i]);
        sp_sbuf_putc(o, ' ');
        put_arg(&s, o, b[i]);
        sp_sbuf_putc(o, ')');
        if (guarded)
            sp_sbuf_putc(o, ')');
    }
    if (live > 1)
        sp_sbuf_putc(o, ')');
    sp_sbuf_puts(o, ")\n(check-sat)\n(exit)\n");

    for (size_t i = 0; i < nc; i++)
        flint_free(s.text[i]);
    flint_free(s.text);
    flint_free(s.uses);
    flint_free(s.root);
    flint_free(s.depth);
    flint_free(s.named);
    flint_free(s.def);
    flint_free(cone);
    return sp_sbuf_take(o);
}
