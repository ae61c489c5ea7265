/* parse.c: recursive-descent parser (depth-bounded) from tokens to an arena-allocated AST. */
#include <flint/flint.h>
#include "parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Longest token text quoted in a "found ..." message before it is cut with "...". */
#define SP_PARSE_QUOTE_MAX 32

/* ---------------------------------------------------------------- arena */

/* A chunk of arena memory; data is aligned for any object. */
struct sp_parse_chunk {
    struct sp_parse_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

/* Bump allocator; everything is freed at once by arena_free. */
struct sp_parse_arena {
    struct sp_parse_chunk *head;
};

#define SP_ARENA_CHUNK 65536

static void *arena_alloc(struct sp_parse_arena *A, size_t n)
{
    const size_t align = sizeof(max_align_t);
    n = (n + align - 1) / align * align;
    if (n == 0)
        n = align;
    struct sp_parse_chunk *c = A->head;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > SP_ARENA_CHUNK ? n : SP_ARENA_CHUNK;
        c = flint_malloc(sizeof(*c) + cap);
        if (c == NULL)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = A->head;
        A->head = c;
    }
    void *r = (char *)c->data + c->used;
    c->used += n;
    memset(r, 0, n);
    return r;
}

static void arena_free(struct sp_parse_arena *A)
{
    struct sp_parse_chunk *c = A->head;
    while (c != NULL) {
        struct sp_parse_chunk *n = c->next;
        flint_free(c);
        c = n;
    }
    A->head = NULL;
}

/* ---------------------------------------------------------------- parser state */

typedef struct {
    sp_lexer_t L;
    sp_tok_t tok[2];       /* lookahead: tok[0] is the current token */
    int ntok;
    sp_ast_t *ast;
    sp_diags_struct *d;
    const char *file;      /* the AST's copy of the path */
    unsigned depth, max_depth, max_height;
    int panic;             /* an error was reported in this statement: stay quiet until sync */
    int nomem;
    size_t nerrors;        /* errors reported by the parser */
    int in_func;           /* inside a func body */
    uint32_t last_line, last_col; /* where the last error was reported (one per position) */
    unsigned char *scr;    /* scratch stack for lists under construction */
    size_t scr_len, scr_cap;
} parser_t;

static sp_tok_t *cur(parser_t *p)
{
    if (p->ntok == 0) {
        sp_lex_next(p->L, &p->tok[0]);
        p->ntok = 1;
    }
    return &p->tok[0];
}

static sp_tok_t *peek1(parser_t *p)
{
    cur(p);
    if (p->ntok == 1) {
        sp_lex_next(p->L, &p->tok[1]);
        p->ntok = 2;
    }
    return &p->tok[1];
}

static void next(parser_t *p)
{
    cur(p);
    if (p->ntok == 2)
        p->tok[0] = p->tok[1];
    p->ntok--;
}

static sp_tok_kind_t kind(parser_t *p) { return cur(p)->kind; }

static int accept(parser_t *p, sp_tok_kind_t k)
{
    if (kind(p) != k)
        return 0;
    next(p);
    return 1;
}

static sp_loc_t tok_loc(const parser_t *p, const sp_tok_t *t)
{
    sp_loc_t l = {p->file, t->line, t->col};
    return l;
}

static sp_loc_t cur_loc(parser_t *p) { return tok_loc(p, cur(p)); }

static int is_word(sp_tok_kind_t k)
{
    return k == SP_TOK_IDENT || (k >= SP_TOK_DIM && k <= SP_TOK_RETURN);
}

static int tok_is(parser_t *p, const char *word)
{
    sp_tok_t *t = cur(p);
    return t->kind == SP_TOK_IDENT && t->len == strlen(word) && memcmp(t->text, word, t->len) == 0;
}

/* ---------------------------------------------------------------- errors */

static int perr(parser_t *p, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
    SP_PRINTF(4, 5);

/* Report an error unless one was already reported in this statement; returns 1 if reported. */
static int perr(parser_t *p, sp_diag_code_t code, sp_loc_t loc, const char *fmt, ...)
{
    if (p->panic || p->L->fatal) {
        p->panic = 1;
        return 0;
    }
    p->panic = 1;
    p->nerrors++;
    p->last_line = loc.line;
    p->last_col = loc.col;
    va_list ap;
    va_start(ap, fmt);
    int r = sp_diags_vadd(p->d, SP_SEV_ERROR, code, loc, fmt, ap);
    va_end(ap);
    return r;
}

static void describe(const sp_tok_t *t, char *buf, size_t n)
{
    if (t->kind == SP_TOK_EOF || t->kind == SP_TOK_NEWLINE || t->kind == SP_TOK_ERROR ||
        t->len == 0) {
        snprintf(buf, n, "%s", sp_tok_kind_name(t->kind));
        return;
    }
    int cut = t->len > SP_PARSE_QUOTE_MAX;
    snprintf(buf, n, "'%.*s%s'", (int)(cut ? SP_PARSE_QUOTE_MAX : t->len), t->text,
             cut ? "..." : "");
}

/* "expected WHAT, found TOKEN" at the current token; quiet after a lexer error there. */
static int expected(parser_t *p, const char *what)
{
    sp_tok_t *t = cur(p);
    if (t->kind == SP_TOK_ERROR) {
        p->panic = 1;
        return 0;
    }
    char found[SP_PARSE_QUOTE_MAX + 16];
    describe(t, found, sizeof found);
    return perr(p, SP_DIAG_SYNTAX, tok_loc(p, t), "expected %s, found %s", what, found);
}

/* Consume the closing bracket k or report it missing, with a note at the opening one. */
static int expect_close(parser_t *p, sp_tok_kind_t k, sp_loc_t open)
{
    if (accept(p, k))
        return 1;
    const char *name = sp_tok_kind_name(k);
    if (expected(p, name)) {
        const char *o = k == SP_TOK_RPAREN ? "'('" : k == SP_TOK_RBRACK ? "'['" : "'{'";
        sp_diags_note(p->d, open, "to match this %s", o);
    }
    return 0;
}

static int enter(parser_t *p)
{
    if (p->depth >= p->max_depth) {
        perr(p, SP_DIAG_LIMIT, cur_loc(p), "nesting too deep (more than %u levels)", p->max_depth);
        return 0;
    }
    p->depth++;
    return 1;
}

static void leave(parser_t *p) { p->depth--; }

/* ---------------------------------------------------------------- allocation */

static void *alloc(parser_t *p, size_t n)
{
    void *r = arena_alloc(p->ast->arena, n);
    if (r == NULL) {
        p->nomem = 1;
        p->panic = 1;
    }
    return r;
}

static const char *copy_str(parser_t *p, const char *s, size_t n)
{
    char *r = alloc(p, n + 1);
    if (r != NULL) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* A name from the current token (which the caller checked is a word); consumes it. */
static int take_name(parser_t *p, sp_ast_name_t *out)
{
    sp_tok_t *t = cur(p);
    out->loc = tok_loc(p, t);
    out->str = copy_str(p, t->text, t->len);
    next(p);
    return out->str != NULL;
}

static int scr_push(parser_t *p, const void *elem, size_t size)
{
    if (p->scr_cap - p->scr_len < size) {
        size_t na = p->scr_cap ? 2 * p->scr_cap : 4096;
        while (na - p->scr_len < size)
            na *= 2;
        unsigned char *n = flint_realloc(p->scr, na);
        if (n == NULL) {
            p->nomem = 1;
            p->panic = 1;
            return 0;
        }
        p->scr = n;
        p->scr_cap = na;
    }
    memcpy(p->scr + p->scr_len, elem, size);
    p->scr_len += size;
    return 1;
}

/* Move the elements pushed since mark into the arena; *count receives their number. */
static void *scr_take(parser_t *p, size_t mark, size_t size, size_t *count)
{
    size_t bytes = p->scr_len - mark;
    *count = bytes / size;
    if (bytes == 0)
        return NULL;
    void *r = alloc(p, bytes);
    if (r != NULL)
        memcpy(r, p->scr + mark, bytes);
    p->scr_len = mark;
    return r;
}

/* ---------------------------------------------------------------- expressions */

static sp_ast_expr_t *new_expr(parser_t *p, sp_ast_expr_kind_t k, sp_loc_t loc)
{
    sp_ast_expr_t *e = alloc(p, sizeof(*e));
    if (e != NULL) {
        e->kind = k;
        e->loc = loc;
        e->height = 1;
    }
    return e;
}

/* Set e's height from its children; NULL (and an error) if it exceeds the limit. */
static sp_ast_expr_t *finish(parser_t *p, sp_ast_expr_t *e)
{
    uint32_t h = 0;
    if (e->a != NULL && e->a->height > h)
        h = e->a->height;
    if (e->b != NULL && e->b->height > h)
        h = e->b->height;
    for (size_t i = 0; i < e->nargs; i++)
        if (e->args[i].value->height > h)
            h = e->args[i].value->height;
    e->height = h + 1;
    if (e->height > p->max_height) {
        perr(p, SP_DIAG_LIMIT, e->loc, "expression too deep (more than %u levels)",
             p->max_height);
        return NULL;
    }
    return e;
}

static sp_ast_expr_t *parse_expr(parser_t *p);

static int is_lvalue(const sp_ast_expr_t *e)
{
    return e->kind == SP_AST_NAME || (e->kind == SP_AST_INDEX && e->a->kind == SP_AST_NAME);
}

static int cmp_key(const void *x, const void *y)
{
    const sp_ast_arg_t *const *a = x, *const *b = y;
    int c = strcmp((*a)->key.str, (*b)->key.str);
    if (c != 0)
        return c;
    return *a < *b ? -1 : *a > *b;
}

/* Report the first (in source order) repeated keyword among args; returns 0 if there is one. */
static int check_keys(parser_t *p, sp_ast_arg_t *args, size_t n)
{
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
        nk += args[i].key.str != NULL;
    if (nk < 2)
        return 1;
    sp_ast_arg_t **v = flint_malloc(nk * sizeof(*v));
    if (v == NULL) {
        p->nomem = 1;
        p->panic = 1;
        return 0;
    }
    nk = 0;
    for (size_t i = 0; i < n; i++)
        if (args[i].key.str != NULL)
            v[nk++] = &args[i];
    qsort(v, nk, sizeof(*v), cmp_key);
    sp_ast_arg_t *dup = NULL;
    for (size_t i = 1; i < nk; i++)
        if (strcmp(v[i]->key.str, v[i - 1]->key.str) == 0 && (dup == NULL || v[i] < dup))
            dup = v[i];
    flint_free(v);
    if (dup == NULL)
        return 1;
    perr(p, SP_DIAG_SYNTAX, dup->key.loc, "duplicate keyword argument '%s'", dup->key.str);
    return 0;
}

/*
 * Arguments between the current opening bracket and close (each argument goes through
 * parse_expr, which counts one nesting level, so nested calls and lists are bounded): positional expressions and, when
 * keywords is set, word = expr; when ranges is set, lo..hi.  A trailing comma is allowed.
 */
static int parse_args(parser_t *p, sp_tok_kind_t close, int keywords, int ranges,
                      sp_ast_arg_t **out, size_t *n)
{
    sp_loc_t open = cur_loc(p);
    size_t mark = p->scr_len;
    int saw_key = 0;
    next(p);
    while (kind(p) != close) {
        sp_ast_arg_t arg;
        memset(&arg, 0, sizeof arg);
        if (keywords && is_word(kind(p)) && peek1(p)->kind == SP_TOK_ASSIGN) {
            if (!take_name(p, &arg.key))
                goto fail;
            next(p);
            saw_key = 1;
        }
        sp_loc_t at = cur_loc(p);
        arg.value = parse_expr(p);
        if (arg.value == NULL)
            goto fail;
        if (arg.key.str == NULL && saw_key) {
            perr(p, SP_DIAG_SYNTAX, at, "positional argument after keyword argument");
            goto fail;
        }
        if (ranges && kind(p) == SP_TOK_DOTDOT) {
            sp_ast_expr_t *r = new_expr(p, SP_AST_RANGE, cur_loc(p));
            if (r == NULL)
                goto fail;
            next(p);
            r->a = arg.value;
            r->b = parse_expr(p);
            if (r->b == NULL || finish(p, r) == NULL)
                goto fail;
            arg.value = r;
        }
        if (!scr_push(p, &arg, sizeof arg))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    if (!expect_close(p, close, open))
        goto fail;
    *out = scr_take(p, mark, sizeof(sp_ast_arg_t), n);
    if (*n > 0 && *out == NULL)
        return 0;
    return check_keys(p, *out, *n);
fail:
    p->scr_len = mark;
    return 0;
}

static sp_ast_expr_t *parse_primary(parser_t *p)
{
    sp_tok_t *t = cur(p);
    sp_loc_t loc = tok_loc(p, t);
    switch (t->kind) {
    case SP_TOK_NUM: {
        sp_ast_expr_t *e = new_expr(p, SP_AST_NUM, loc);
        if (e == NULL)
            return NULL;
        e->text = copy_str(p, t->text, t->len);
        if (e->text == NULL)
            return NULL;
        fmpq_init(e->value);
        e->next_num = p->ast->nums;
        p->ast->nums = e;
        sp_lex_number_value(e->value, t->text, t->len);
        next(p);
        return e;
    }
    case SP_TOK_IDENT: {
        sp_ast_expr_t *e = new_expr(p, SP_AST_NAME, loc);
        if (e == NULL)
            return NULL;
        e->name = copy_str(p, t->text, t->len);
        next(p);
        return e->name != NULL ? e : NULL;
    }
    case SP_TOK_LPAREN: {
        next(p);
        sp_ast_expr_t *e = parse_expr(p);
        if (e == NULL || !expect_close(p, SP_TOK_RPAREN, loc))
            return NULL;
        return e;
    }
    case SP_TOK_LBRACK: {
        sp_ast_expr_t *e = new_expr(p, SP_AST_LIST, loc);
        if (e == NULL || !parse_args(p, SP_TOK_RBRACK, 0, 0, &e->args, &e->nargs))
            return NULL;
        return finish(p, e);
    }
    default:
        expected(p, "an expression");
        return NULL;
    }
}

static sp_ast_expr_t *parse_postfix(parser_t *p)
{
    sp_ast_expr_t *e = parse_primary(p);
    while (e != NULL) {
        if (kind(p) == SP_TOK_LPAREN) {
            if (e->kind != SP_AST_NAME) {
                perr(p, SP_DIAG_SYNTAX, cur_loc(p), "only a name can be called");
                return NULL;
            }
            sp_ast_expr_t *c = new_expr(p, SP_AST_CALL, e->loc);
            if (c == NULL)
                return NULL;
            c->name = e->name;
            e = parse_args(p, SP_TOK_RPAREN, 1, 0, &c->args, &c->nargs) ? finish(p, c) : NULL;
        } else if (kind(p) == SP_TOK_LBRACK) {
            sp_ast_expr_t *x = new_expr(p, SP_AST_INDEX, cur_loc(p));
            if (x == NULL)
                return NULL;
            x->a = e;
            e = parse_args(p, SP_TOK_RBRACK, 0, 1, &x->args, &x->nargs) ? finish(p, x) : NULL;
        } else {
            break;
        }
    }
    return e;
}

static sp_ast_expr_t *parse_unary(parser_t *p);

static sp_ast_expr_t *binop(parser_t *p, sp_ast_binop_t op, sp_loc_t loc, sp_ast_expr_t *a,
                            sp_ast_expr_t *b)
{
    if (a == NULL || b == NULL)
        return NULL;
    sp_ast_expr_t *e = new_expr(p, SP_AST_BINOP, loc);
    if (e == NULL)
        return NULL;
    e->op = op;
    e->a = a;
    e->b = b;
    return finish(p, e);
}

/* postfix ['^' unary]: right associative, binds tighter than a unary minus on its left. */
static sp_ast_expr_t *parse_pow(parser_t *p)
{
    sp_ast_expr_t *a = parse_postfix(p);
    if (a == NULL || kind(p) != SP_TOK_CARET)
        return a;
    sp_loc_t loc = cur_loc(p);
    next(p);
    if (!enter(p))
        return NULL;
    sp_ast_expr_t *b = parse_unary(p);
    leave(p);
    return binop(p, SP_BIN_POW, loc, a, b);
}

static sp_ast_expr_t *parse_unary(parser_t *p)
{
    if (kind(p) != SP_TOK_MINUS)
        return parse_pow(p);
    sp_loc_t loc = cur_loc(p);
    next(p);
    if (!enter(p))
        return NULL;
    sp_ast_expr_t *a = parse_unary(p);
    leave(p);
    if (a == NULL)
        return NULL;
    sp_ast_expr_t *e = new_expr(p, SP_AST_NEG, loc);
    if (e == NULL)
        return NULL;
    e->a = a;
    return finish(p, e);
}

static sp_ast_expr_t *parse_mul(parser_t *p)
{
    sp_ast_expr_t *e = parse_unary(p);
    for (;;) {
        sp_ast_binop_t op;
        switch (kind(p)) {
        case SP_TOK_STAR: op = SP_BIN_MUL; break;
        case SP_TOK_SLASH: op = SP_BIN_DIV; break;
        case SP_TOK_PERCENT: op = SP_BIN_MOD; break;
        default: return e;
        }
        if (e == NULL)
            return NULL;
        sp_loc_t loc = cur_loc(p);
        next(p);
        e = binop(p, op, loc, e, parse_unary(p));
    }
}

static sp_ast_expr_t *parse_add(parser_t *p)
{
    sp_ast_expr_t *e = parse_mul(p);
    for (;;) {
        sp_ast_binop_t op;
        switch (kind(p)) {
        case SP_TOK_PLUS: op = SP_BIN_ADD; break;
        case SP_TOK_MINUS: op = SP_BIN_SUB; break;
        default: return e;
        }
        if (e == NULL)
            return NULL;
        sp_loc_t loc = cur_loc(p);
        next(p);
        e = binop(p, op, loc, e, parse_mul(p));
    }
}

static int cmp_op(sp_tok_kind_t k, sp_ast_binop_t *op)
{
    switch (k) {
    case SP_TOK_LT: *op = SP_BIN_LT; return 1;
    case SP_TOK_LE: *op = SP_BIN_LE; return 1;
    case SP_TOK_GT: *op = SP_BIN_GT; return 1;
    case SP_TOK_GE: *op = SP_BIN_GE; return 1;
    case SP_TOK_EQ: *op = SP_BIN_EQ; return 1;
    case SP_TOK_NE: *op = SP_BIN_NE; return 1;
    default: return 0;
    }
}

/* add [cmp add]: comparisons do not chain. */
static sp_ast_expr_t *parse_expr(parser_t *p)
{
    if (!enter(p))
        return NULL;
    sp_ast_expr_t *e = parse_add(p);
    sp_ast_binop_t op;
    if (e != NULL && cmp_op(kind(p), &op)) {
        sp_loc_t loc = cur_loc(p);
        next(p);
        e = binop(p, op, loc, e, parse_add(p));
        if (e != NULL && cmp_op(kind(p), &op)) {
            perr(p, SP_DIAG_SYNTAX, cur_loc(p), "comparison operators cannot be chained");
            e = NULL;
        }
    }
    leave(p);
    return e;
}

/* ---------------------------------------------------------------- layouts */

/* '@' already consumed: an axis name or a parenthesised list of them. */
static int parse_axes(parser_t *p, sp_ast_name_t **axes, size_t *n)
{
    size_t mark = p->scr_len;
    sp_ast_name_t nm;
    if (kind(p) == SP_TOK_IDENT) {
        if (!take_name(p, &nm) || !scr_push(p, &nm, sizeof nm))
            goto fail;
    } else if (kind(p) == SP_TOK_LPAREN) {
        sp_loc_t open = cur_loc(p);
        next(p);
        for (;;) {
            if (kind(p) != SP_TOK_IDENT) {
                expected(p, "a mesh axis name");
                goto fail;
            }
            if (!take_name(p, &nm) || !scr_push(p, &nm, sizeof nm))
                goto fail;
            if (!accept(p, SP_TOK_COMMA))
                break;
        }
        if (!expect_close(p, SP_TOK_RPAREN, open))
            goto fail;
    } else {
        expected(p, "a mesh axis name after '@'");
        goto fail;
    }
    *axes = scr_take(p, mark, sizeof(sp_ast_name_t), n);
    return *axes != NULL;
fail:
    p->scr_len = mark;
    return 0;
}

static int parse_ldim(parser_t *p, sp_ast_ldim_t *dim)
{
    memset(dim, 0, sizeof(*dim));
    dim->size = parse_expr(p);
    if (dim->size == NULL)
        return 0;
    if (!accept(p, SP_TOK_AT))
        return 1;
    if (!parse_axes(p, &dim->axes, &dim->naxes))
        return 0;
    if (kind(p) != SP_TOK_LBRACE)
        return 1;
    dim->split_loc = cur_loc(p);
    next(p);
    size_t mark = p->scr_len;
    for (;;) {
        sp_ast_expr_t *e = parse_expr(p);
        if (e == NULL || !scr_push(p, &e, sizeof e))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    if (!expect_close(p, SP_TOK_RBRACE, dim->split_loc))
        goto fail;
    dim->split = scr_take(p, mark, sizeof(sp_ast_expr_t *), &dim->nsplit);
    return dim->split != NULL;
fail:
    p->scr_len = mark;
    return 0;
}

/* 'partial' '(' op '@' axes {',' op '@' axes} ')' ; appends entries to the scratch stack. */
static int parse_partial(parser_t *p)
{
    next(p);
    sp_loc_t open = cur_loc(p);
    if (!accept(p, SP_TOK_LPAREN)) {
        expected(p, "'(' after 'partial'");
        return 0;
    }
    for (;;) {
        sp_ast_partial_t pa;
        memset(&pa, 0, sizeof pa);
        if (kind(p) != SP_TOK_IDENT) {
            expected(p, "a reduction (sum, avg, max, min) in partial(...)");
            return 0;
        }
        if (!take_name(p, &pa.op))
            return 0;
        if (!accept(p, SP_TOK_AT)) {
            char what[SP_PARSE_QUOTE_MAX + 32];
            snprintf(what, sizeof what, "'@' after '%.*s'", SP_PARSE_QUOTE_MAX, pa.op.str);
            expected(p, what);
            return 0;
        }
        if (!parse_axes(p, &pa.axes, &pa.naxes) || !scr_push(p, &pa, sizeof pa))
            return 0;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    return expect_close(p, SP_TOK_RPAREN, open);
}

/* '[' dims ']' {partial(...)} */
static sp_ast_layout_t *parse_layout(parser_t *p)
{
    if (kind(p) != SP_TOK_LBRACK) {
        expected(p, "'[' to begin a shape");
        return NULL;
    }
    sp_ast_layout_t *lay = alloc(p, sizeof(*lay));
    if (lay == NULL)
        return NULL;
    lay->loc = cur_loc(p);
    if (!enter(p))
        return NULL;
    next(p);
    size_t mark = p->scr_len;
    while (kind(p) != SP_TOK_RBRACK) {
        sp_ast_ldim_t dim;
        if (!parse_ldim(p, &dim) || !scr_push(p, &dim, sizeof dim))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    if (!expect_close(p, SP_TOK_RBRACK, lay->loc))
        goto fail;
    lay->dims = scr_take(p, mark, sizeof(sp_ast_ldim_t), &lay->ndims);
    if (lay->ndims > 0 && lay->dims == NULL)
        goto fail;
    while (tok_is(p, "partial"))
        if (!parse_partial(p))
            goto fail;
    lay->partials = scr_take(p, mark, sizeof(sp_ast_partial_t), &lay->npartials);
    if (lay->npartials > 0 && lay->partials == NULL)
        goto fail;
    leave(p);
    return lay;
fail:
    p->scr_len = mark;
    leave(p);
    return NULL;
}

static sp_ast_lineage_t *parse_lineage(parser_t *p)
{
    sp_ast_lineage_t *lin = alloc(p, sizeof(*lin));
    if (lin == NULL)
        return NULL;
    lin->loc = cur_loc(p);
    lin->rows = NULL;
    next(p);
    lin->target = parse_expr(p);
    if (lin->target == NULL)
        return NULL;
    /* a last index holding one range lo..hi is a row slice: T[lo..hi], T[i][lo..hi] */
    const sp_ast_expr_t *t = lin->target;
    if (t->kind == SP_AST_INDEX && t->nargs == 1 && t->args[0].key.str == NULL &&
        t->args[0].value->kind == SP_AST_RANGE) {
        lin->rows = t->args[0].value;
        lin->target = t->a;
    }
    if (!is_lvalue(lin->target)) {
        perr(p, SP_DIAG_SYNTAX, lin->target->loc,
             "a lineage target must be a model tensor name, optionally indexed");
        return NULL;
    }
    for (size_t i = 0; lin->target->kind == SP_AST_INDEX && i < lin->target->nargs; i++)
        if (lin->target->args[i].value->kind == SP_AST_RANGE) {
            perr(p, SP_DIAG_SYNTAX, lin->target->args[i].value->loc,
                 "a row slice must be the only index in the last brackets: T[lo..hi] or "
                 "T[i][lo..hi]");
            return NULL;
        }
    if (!accept(p, SP_TOK_COLON)) {
        expected(p, "':' after the lineage target");
        return NULL;
    }
    lin->layout = parse_layout(p);
    return lin->layout != NULL ? lin : NULL;
}

/* ---------------------------------------------------------------- statements */

static sp_ast_stmt_t *parse_stmt(parser_t *p);

static sp_ast_stmt_t *new_stmt(parser_t *p, sp_ast_stmt_kind_t k)
{
    sp_ast_stmt_t *s = alloc(p, sizeof(*s));
    if (s != NULL) {
        s->kind = k;
        s->loc = cur_loc(p);
    }
    return s;
}

static int at_end_of_stmt(parser_t *p)
{
    sp_tok_kind_t k = kind(p);
    return k == SP_TOK_NEWLINE || k == SP_TOK_SEMI || k == SP_TOK_RBRACE || k == SP_TOK_EOF;
}

/* After a statement: a newline or ';' (consumed), or a '}' or the end (left). */
static void end_stmt(parser_t *p)
{
    if (kind(p) == SP_TOK_NEWLINE || kind(p) == SP_TOK_SEMI) {
        next(p);
        return;
    }
    if (at_end_of_stmt(p))
        return;
    if (kind(p) == SP_TOK_TILDE)
        perr(p, SP_DIAG_SYNTAX, cur_loc(p),
             "a lineage annotation '~' is not allowed on this statement");
    else
        expected(p, "end of statement");
}

static int is_item_keyword(sp_tok_kind_t k)
{
    return k == SP_TOK_MODEL || k == SP_TOK_PLAN || k == SP_TOK_FUNC;
}

/*
 * Skip to the start of the next statement after an error: past the next newline or ';' that is
 * not inside a skipped '{...}', or up to a '}' closing the current block (in_block), a top-level
 * keyword or the end.
 */
static void sync(parser_t *p, int in_block)
{
    size_t braces = 0;
    for (;;) {
        sp_tok_kind_t k = kind(p);
        if (k == SP_TOK_EOF)
            break;
        if (braces == 0) {
            if (k == SP_TOK_NEWLINE || k == SP_TOK_SEMI) {
                next(p);
                break;
            }
            if ((k == SP_TOK_RBRACE && in_block) || is_item_keyword(k))
                break;
        }
        if (k == SP_TOK_LBRACE)
            braces++;
        else if (k == SP_TOK_RBRACE && braces > 0)
            braces--;
        next(p);
    }
    p->panic = 0;
    sp_lex_reset_depth(p->L);
}

static void skip_separators(parser_t *p)
{
    while (kind(p) == SP_TOK_NEWLINE || kind(p) == SP_TOK_SEMI)
        next(p);
}

/* '{' statements '}' */
static int parse_block(parser_t *p, sp_ast_block_t *blk)
{
    if (kind(p) == SP_TOK_NEWLINE && peek1(p)->kind == SP_TOK_LBRACE)
        next(p);
    if (kind(p) != SP_TOK_LBRACE) {
        expected(p, "'{'");
        return 0;
    }
    blk->open = cur_loc(p);
    if (!enter(p))
        return 0;
    next(p);
    size_t mark = p->scr_len;
    for (;;) {
        skip_separators(p);
        sp_tok_t *t = cur(p);
        if (t->kind == SP_TOK_RBRACE) {
            blk->close = tok_loc(p, t);
            next(p);
            break;
        }
        if (t->kind == SP_TOK_EOF || is_item_keyword(t->kind)) {
            /* Report a missing '}' only if nothing was reported at this position yet: once,
             * for the innermost open block, and not after "expected X, found end of file". */
            if (t->line != p->last_line || t->col != p->last_col) {
                if (expected(p, "'}'"))
                    sp_diags_note(p->d, blk->open, "to match this '{'");
            }
            p->panic = 1;
            blk->close = tok_loc(p, t);
            break;
        }
        if (sp_diags_full(p->d) || p->nomem || p->L->fatal)
            break;
        size_t top = p->scr_len;
        sp_ast_stmt_t *s = parse_stmt(p);
        p->scr_len = top;
        if (s != NULL && scr_push(p, &s, sizeof s))
            end_stmt(p);
        if (p->panic)
            sync(p, 1);
    }
    blk->stmts = scr_take(p, mark, sizeof(sp_ast_stmt_t *), &blk->n);
    leave(p);
    return !(blk->n > 0 && blk->stmts == NULL);
}

/* A name after a keyword, or an "expected" error. */
static int expect_name(parser_t *p, sp_ast_name_t *out, const char *what)
{
    if (kind(p) != SP_TOK_IDENT) {
        expected(p, what);
        return 0;
    }
    return take_name(p, out);
}

/* name '=' expr {',' name '=' expr}: the lists of dim, mesh and on. */
static int parse_binds(parser_t *p, sp_ast_stmt_t *s, const char *what)
{
    size_t mark = p->scr_len;
    for (;;) {
        sp_ast_bind_t b;
        if (!expect_name(p, &b.name, what))
            goto fail;
        if (!accept(p, SP_TOK_ASSIGN)) {
            char w[SP_PARSE_QUOTE_MAX + 32];
            snprintf(w, sizeof w, "'=' after '%.*s'", SP_PARSE_QUOTE_MAX, b.name.str);
            expected(p, w);
            goto fail;
        }
        b.value = parse_expr(p);
        if (b.value == NULL || !scr_push(p, &b, sizeof b))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    s->binds = scr_take(p, mark, sizeof(sp_ast_bind_t), &s->nbinds);
    return s->binds != NULL;
fail:
    p->scr_len = mark;
    return 0;
}

static sp_ast_stmt_t *parse_binds_stmt(parser_t *p, sp_ast_stmt_kind_t k, const char *what)
{
    sp_ast_stmt_t *s = new_stmt(p, k);
    if (s == NULL)
        return NULL;
    next(p);
    return parse_binds(p, s, what) ? s : NULL;
}

static sp_ast_stmt_t *parse_model(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_MODEL);
    if (s == NULL)
        return NULL;
    next(p);
    if (!expect_name(p, &s->name, "a name after 'model'") || !parse_block(p, &s->body))
        return NULL;
    return s;
}

static sp_ast_stmt_t *parse_plan(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_PLAN);
    if (s == NULL)
        return NULL;
    next(p);
    if (!expect_name(p, &s->name, "a name after 'plan'"))
        return NULL;
    if (!accept(p, SP_TOK_OF)) {
        expected(p, "'of' after the plan name");
        return NULL;
    }
    if (!expect_name(p, &s->of, "a model name after 'of'") || !parse_block(p, &s->body))
        return NULL;
    return s;
}

static sp_ast_stmt_t *parse_func(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_FUNC);
    if (s == NULL)
        return NULL;
    next(p);
    if (!expect_name(p, &s->name, "a name after 'func'"))
        return NULL;
    sp_loc_t open = cur_loc(p);
    if (!accept(p, SP_TOK_LPAREN)) {
        expected(p, "'(' after the function name");
        return NULL;
    }
    size_t mark = p->scr_len;
    while (kind(p) != SP_TOK_RPAREN) {
        sp_ast_name_t nm;
        if (!expect_name(p, &nm, "a parameter name") || !scr_push(p, &nm, sizeof nm))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    if (!expect_close(p, SP_TOK_RPAREN, open))
        goto fail;
    s->params = scr_take(p, mark, sizeof(sp_ast_name_t), &s->nparams);
    if (s->nparams > 0 && s->params == NULL)
        return NULL;
    for (size_t i = 1; i < s->nparams; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->params[i].str, s->params[j].str) == 0) {
                perr(p, SP_DIAG_NAME, s->params[i].loc, "parameter '%s' is named twice",
                     s->params[i].str);
                return NULL;
            }
    p->in_func++;
    int ok = parse_block(p, &s->body);
    p->in_func--;
    return ok ? s : NULL;
fail:
    p->scr_len = mark;
    return NULL;
}

/* input|param NAME ['[' extents ']'] ':' layout [lineage] */
static sp_ast_stmt_t *parse_decl(parser_t *p, sp_ast_stmt_kind_t k)
{
    sp_ast_stmt_t *s = new_stmt(p, k);
    if (s == NULL)
        return NULL;
    next(p);
    if (!expect_name(p, &s->name, k == SP_STMT_INPUT ? "a tensor name after 'input'"
                                                     : "a tensor name after 'param'"))
        return NULL;
    if (kind(p) == SP_TOK_LBRACK) {
        sp_ast_arg_t *args;
        size_t n;
        if (!parse_args(p, SP_TOK_RBRACK, 0, 0, &args, &n))
            return NULL;
        if (n == 0) {
            perr(p, SP_DIAG_SYNTAX, s->name.loc, "an array of tensors needs at least one extent");
            return NULL;
        }
        s->count = alloc(p, n * sizeof(*s->count));
        if (s->count == NULL)
            return NULL;
        for (size_t i = 0; i < n; i++)
            s->count[i] = args[i].value;
        s->ncount = n;
    }
    if (!accept(p, SP_TOK_COLON)) {
        expected(p, "':'");
        return NULL;
    }
    s->layout = parse_layout(p);
    if (s->layout == NULL)
        return NULL;
    if (kind(p) == SP_TOK_TILDE && (s->lineage = parse_lineage(p)) == NULL)
        return NULL;
    return s;
}

/* output target ['=' expr] [':' layout] {',' ...}; for omit (kind SP_STMT_OMIT) targets only */
static sp_ast_stmt_t *parse_output_list(parser_t *p, sp_ast_stmt_kind_t kind)
{
    sp_ast_stmt_t *s = new_stmt(p, kind);
    if (s == NULL)
        return NULL;
    next(p);
    size_t mark = p->scr_len;
    for (;;) {
        sp_ast_output_t o;
        memset(&o, 0, sizeof o);
        o.target = parse_expr(p);
        if (o.target == NULL)
            goto fail;
        if (!is_lvalue(o.target)) {
            perr(p, SP_DIAG_SYNTAX, o.target->loc,
                 kind == SP_STMT_OMIT
                     ? "'omit' takes model tensor names"
                     : "an output must be named: use 'output NAME' or 'output NAME = EXPR'");
            goto fail;
        }
        if (kind == SP_STMT_OUTPUT && accept(p, SP_TOK_ASSIGN) && (o.value = parse_expr(p)) == NULL)
            goto fail;
        if (kind == SP_STMT_OUTPUT && accept(p, SP_TOK_COLON) && (o.layout = parse_layout(p)) == NULL)
            goto fail;
        if (!scr_push(p, &o, sizeof o))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    s->outputs = scr_take(p, mark, sizeof(sp_ast_output_t), &s->noutputs);
    return s->outputs != NULL ? s : NULL;
fail:
    p->scr_len = mark;
    return NULL;
}

/* omit target {',' target}: model outputs the plan leaves unchecked ('omit' is a keyword only
   at the start of a statement followed by a name, so tensors may still be called omit); the
   targets are kept as outputs without values or layouts */
static sp_ast_stmt_t *parse_omit(parser_t *p) { return parse_output_list(p, SP_STMT_OMIT); }

/* train OPTIMIZER ['(' keyword args ')'] */
static sp_ast_stmt_t *parse_train(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_TRAIN);
    if (s == NULL)
        return NULL;
    next(p);
    if (!expect_name(p, &s->name, "an optimizer name after 'train'"))
        return NULL;
    if (kind(p) == SP_TOK_LPAREN && !parse_args(p, SP_TOK_RPAREN, 1, 0, &s->args, &s->nargs))
        return NULL;
    return s;
}

static sp_ast_stmt_t *parse_on(parser_t *p)
{
    sp_ast_stmt_t *s = parse_binds_stmt(p, SP_STMT_ON, "a mesh axis name");
    if (s == NULL || !parse_block(p, &s->body))
        return NULL;
    return s;
}

/* for VAR in lo..hi { } */
static sp_ast_stmt_t *parse_for(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_FOR);
    if (s == NULL)
        return NULL;
    next(p);
    if (!expect_name(p, &s->name, "a loop variable after 'for'"))
        return NULL;
    if (!accept(p, SP_TOK_IN)) {
        expected(p, "'in' after the loop variable");
        return NULL;
    }
    if ((s->lo = parse_expr(p)) == NULL)
        return NULL;
    if (!accept(p, SP_TOK_DOTDOT)) {
        expected(p, "'..' in the loop range");
        return NULL;
    }
    if ((s->hi = parse_expr(p)) == NULL || !parse_block(p, &s->body))
        return NULL;
    return s;
}

/* if cond { } [else (if ... | { })] */
static sp_ast_stmt_t *parse_if(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_IF);
    if (s == NULL)
        return NULL;
    next(p);
    if ((s->value = parse_expr(p)) == NULL || !parse_block(p, &s->body))
        return NULL;
    if (kind(p) == SP_TOK_NEWLINE && peek1(p)->kind == SP_TOK_ELSE)
        next(p);
    if (kind(p) != SP_TOK_ELSE)
        return s;
    sp_loc_t else_loc = cur_loc(p);
    next(p);
    s->has_else = 1;
    if (kind(p) != SP_TOK_IF)
        return parse_block(p, &s->else_body) ? s : NULL;
    if (!enter(p))
        return NULL;
    sp_ast_stmt_t *inner = parse_if(p);
    leave(p);
    if (inner == NULL)
        return NULL;
    s->else_body.open = else_loc;
    s->else_body.close = inner->body.close;
    s->else_body.stmts = alloc(p, sizeof(sp_ast_stmt_t *));
    if (s->else_body.stmts == NULL)
        return NULL;
    s->else_body.stmts[0] = inner;
    s->else_body.n = 1;
    return s;
}

static sp_ast_stmt_t *parse_return(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_RETURN);
    if (s == NULL)
        return NULL;
    if (!p->in_func) {
        perr(p, SP_DIAG_SYNTAX, s->loc, "'return' is only allowed in a function body");
        return NULL;
    }
    next(p);
    size_t mark = p->scr_len;
    while (!at_end_of_stmt(p)) {
        sp_ast_expr_t *e = parse_expr(p);
        if (e == NULL || !scr_push(p, &e, sizeof e)) {
            p->scr_len = mark;
            return NULL;
        }
        if (!accept(p, SP_TOK_COMMA))
            break;
    }
    s->values = scr_take(p, mark, sizeof(sp_ast_expr_t *), &s->nvalues);
    if (s->nvalues > 0 && s->values == NULL)
        return NULL;
    return s;
}

static int check_target(parser_t *p, const sp_ast_expr_t *e)
{
    if (is_lvalue(e))
        return 1;
    perr(p, SP_DIAG_SYNTAX, e->loc, "invalid assignment target");
    return 0;
}

/* target {',' target} '=' after the first target; fills s->targets. */
static int parse_targets(parser_t *p, sp_ast_stmt_t *s, sp_ast_expr_t *first)
{
    size_t mark = p->scr_len;
    sp_ast_expr_t *t = first;
    for (;;) {
        if (!check_target(p, t) || !scr_push(p, &t, sizeof t))
            goto fail;
        if (!accept(p, SP_TOK_COMMA))
            break;
        if ((t = parse_expr(p)) == NULL)
            goto fail;
    }
    if (!accept(p, SP_TOK_ASSIGN)) {
        expected(p, "'='");
        goto fail;
    }
    s->targets = scr_take(p, mark, sizeof(sp_ast_expr_t *), &s->ntargets);
    return s->targets != NULL;
fail:
    p->scr_len = mark;
    return 0;
}

/* Statements that start with an expression: assignments, accumulations, layouts, calls. */
static sp_ast_stmt_t *parse_simple(parser_t *p)
{
    sp_ast_stmt_t *s = new_stmt(p, SP_STMT_ASSIGN);
    if (s == NULL)
        return NULL;
    sp_ast_expr_t *e = parse_expr(p);
    if (e == NULL)
        return NULL;
    sp_tok_kind_t k = kind(p);
    if (k == SP_TOK_COMMA || k == SP_TOK_ASSIGN) {
        if (!parse_targets(p, s, e) || (s->value = parse_expr(p)) == NULL)
            return NULL;
    } else if (k == SP_TOK_PLUSEQ || k == SP_TOK_COLON) {
        if (!check_target(p, e))
            return NULL;
        next(p);
        s->targets = alloc(p, sizeof(sp_ast_expr_t *));
        if (s->targets == NULL)
            return NULL;
        s->targets[0] = e;
        s->ntargets = 1;
        if (k == SP_TOK_PLUSEQ) {
            s->kind = SP_STMT_ACCUM;
            if ((s->value = parse_expr(p)) == NULL)
                return NULL;
        } else {
            s->kind = SP_STMT_LAYOUT;
            if ((s->layout = parse_layout(p)) == NULL)
                return NULL;
        }
    } else if (e->kind == SP_AST_CALL) {
        s->kind = SP_STMT_EXPR;
        s->value = e;
        return s;
    } else if (is_lvalue(e)) {
        expected(p, "'=', '+=' or ':'");
        return NULL;
    } else {
        perr(p, SP_DIAG_SYNTAX, e->loc, "an expression statement must be a call");
        return NULL;
    }
    if (kind(p) == SP_TOK_TILDE && (s->lineage = parse_lineage(p)) == NULL)
        return NULL;
    return s;
}

static sp_ast_stmt_t *parse_stmt(parser_t *p)
{
    switch (kind(p)) {
    case SP_TOK_DIM: return parse_binds_stmt(p, SP_STMT_DIM, "a dimension name");
    case SP_TOK_MESH: return parse_binds_stmt(p, SP_STMT_MESH, "a mesh axis name");
    case SP_TOK_INPUT: return parse_decl(p, SP_STMT_INPUT);
    case SP_TOK_PARAM: return parse_decl(p, SP_STMT_PARAM);
    case SP_TOK_OUTPUT: return parse_output_list(p, SP_STMT_OUTPUT);
    case SP_TOK_TRAIN: return parse_train(p);
    case SP_TOK_ON: return parse_on(p);
    case SP_TOK_FOR: return parse_for(p);
    case SP_TOK_IF: return parse_if(p);
    case SP_TOK_RETURN: return parse_return(p);
    case SP_TOK_ELSE:
        perr(p, SP_DIAG_SYNTAX, cur_loc(p), "'else' without 'if'");
        return NULL;
    case SP_TOK_OF:
    case SP_TOK_IN:
        expected(p, "a statement");
        return NULL;
    default:
        if (kind(p) == SP_TOK_IDENT && cur(p)->len == 4 && !strncmp(cur(p)->text, "omit", 4) &&
            peek1(p)->kind == SP_TOK_IDENT)
            return parse_omit(p);
        return parse_simple(p);
    }
}

static void parse_program(parser_t *p)
{
    size_t mark = p->scr_len;
    for (;;) {
        skip_separators(p);
        if (kind(p) == SP_TOK_EOF || sp_diags_full(p->d) || p->nomem || p->L->fatal)
            break;
        sp_ast_stmt_t *s = NULL;
        size_t top = p->scr_len;
        switch (kind(p)) {
        case SP_TOK_DIM: s = parse_binds_stmt(p, SP_STMT_DIM, "a dimension name"); break;
        case SP_TOK_MODEL: s = parse_model(p); break;
        case SP_TOK_PLAN: s = parse_plan(p); break;
        case SP_TOK_FUNC: s = parse_func(p); break;
        default: expected(p, "'dim', 'model', 'plan' or 'func' at top level"); break;
        }
        p->scr_len = top;
        if (s != NULL && scr_push(p, &s, sizeof s))
            end_stmt(p);
        if (p->panic)
            sync(p, 0);
    }
    p->ast->items = scr_take(p, mark, sizeof(sp_ast_stmt_t *), &p->ast->nitems);
}

/* ---------------------------------------------------------------- entry points */

void sp_parse_limits_default(sp_parse_limits_t *lim)
{
    lim->max_bytes = (size_t)16 << 20;
    lim->max_tokens = (size_t)1 << 21;
    lim->max_ident = 256;
    lim->max_depth = SP_PARSE_MAX_DEPTH;
    lim->max_height = SP_PARSE_MAX_HEIGHT;
}

const char *sp_ast_origin(const sp_ast_t *ast, uint32_t line)
{
    if (ast == NULL)
        return NULL;
    size_t lo = 0, hi = ast->norigins;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ast->origins[mid].line < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ast->norigins && ast->origins[lo].line == line ? ast->origins[lo].text : NULL;
}

void sp_ast_free(sp_ast_t *ast)
{
    if (ast == NULL)
        return;
    for (sp_ast_expr_t *e = ast->nums; e != NULL; e = e->next_num)
        fmpq_clear(e->value);
    if (ast->arena != NULL)
        arena_free(ast->arena);
    flint_free(ast->arena);
    flint_free(ast);
}

sp_status_t sp_parse_file(sp_ast_t **out, const char *path, const char *text, size_t len,
                          const sp_parse_limits_t *lim, sp_diags_t d)
{
    sp_parse_limits_t def;
    *out = NULL;
    if (lim == NULL) {
        sp_parse_limits_default(&def);
        lim = &def;
    }
    sp_ast_t *ast = flint_calloc(1, sizeof(*ast));
    if (ast == NULL)
        return SP_ERR_NOMEM;
    ast->arena = flint_calloc(1, sizeof(*ast->arena));
    char *file = ast->arena ? arena_alloc(ast->arena, strlen(path) + 1) : NULL;
    if (file == NULL) {
        sp_ast_free(ast);
        return SP_ERR_NOMEM;
    }
    strcpy(file, path);
    ast->file = file;
    if (lim->max_bytes != 0 && len > lim->max_bytes) {
        sp_loc_t whole = {file, 0, 0};
        sp_diags_error(d, SP_DIAG_LIMIT, whole, "input too large (more than %zu bytes)",
                       lim->max_bytes);
        sp_ast_free(ast);
        return SP_ERR_INPUT;
    }
    sp_diags_add_source(d, path, text, len);
    parser_t p;
    memset(&p, 0, sizeof p);
    p.ast = ast;
    p.d = d;
    p.file = file;
    p.max_depth = lim->max_depth < SP_PARSE_MAX_DEPTH ? lim->max_depth : SP_PARSE_MAX_DEPTH;
    p.max_height = lim->max_height < SP_PARSE_MAX_HEIGHT ? lim->max_height : SP_PARSE_MAX_HEIGHT;
    if (p.max_depth == 0)
        p.max_depth = 1;
    if (p.max_height == 0)
        p.max_height = 1;
    sp_lex_init(p.L, file, text, len, lim->max_ident, lim->max_tokens, d);
    parse_program(&p);
    flint_free(p.scr);
    if (p.L->nomem)
        p.nomem = 1;
    if (!p.nomem && p.L->norigins > 0) {
        ast->origins = alloc(&p, p.L->norigins * sizeof(sp_ast_origin_t));
        for (size_t i = 0; ast->origins != NULL && i < p.L->norigins; i++) {
            const sp_lex_origin_t *o = &p.L->origins[i];
            const char *t = copy_str(&p, o->text, o->len);
            if (t == NULL)
                break;
            ast->origins[i].line = o->line;
            ast->origins[i].text = t;
            ast->norigins = i + 1;
        }
    }
    sp_lex_clear(p.L);
    if (p.nomem) {
        sp_loc_t whole = {file, 0, 0};
        sp_diags_error(d, SP_DIAG_NOMEM, whole, "out of memory while parsing");
        sp_ast_free(ast);
        return SP_ERR_NOMEM;
    }
    if (p.nerrors > 0 || p.L->nerrors > 0) {
        sp_ast_free(ast);
        return SP_ERR_INPUT;
    }
    *out = ast;
    return SP_OK;
}

sp_status_t sp_parse_path(sp_ast_t **out, const char *path, const sp_parse_limits_t *lim,
                          sp_diags_t d)
{
    sp_parse_limits_t def;
    sp_loc_t whole = {path, 0, 0};
    *out = NULL;
    if (lim == NULL) {
        sp_parse_limits_default(&def);
        lim = &def;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        char why[256];
        if (strerror_r(errno, why, sizeof why) != 0)
            snprintf(why, sizeof why, "error %d", errno);
        sp_diags_error(d, SP_DIAG_IO, whole, "cannot open file: %s", why);
        return SP_ERR_INPUT;
    }
    size_t cap = 65536, len = 0;
    char *buf = flint_malloc(cap);
    sp_status_t st = SP_OK;
    /* Read at most max_bytes + 1 bytes: enough to tell that the file is too large. */
    while (buf != NULL && !(lim->max_bytes != 0 && len > lim->max_bytes)) {
        if (len == cap) {
            char *nb = flint_realloc(buf, 2 * cap);
            if (nb == NULL) {
                flint_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (buf == NULL) {
        st = SP_ERR_NOMEM;
    } else if (ferror(f)) {
        sp_diags_error(d, SP_DIAG_IO, whole, "cannot read file");
        st = SP_ERR_INPUT;
    }
    fclose(f);
    if (st == SP_OK)
        st = sp_parse_file(out, path, buf, len, lim, d);
    flint_free(buf);
    return st;
}

/* ---------------------------------------------------------------- names and dump */

const char *sp_ast_binop_name(sp_ast_binop_t op)
{
    static const char *names[] = {"+", "-", "*", "/", "%", "^", "<", "<=", ">", ">=", "==", "!="};
    return (unsigned)op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

const char *sp_ast_base_name(const sp_ast_expr_t *e)
{
    if (e && e->kind == SP_AST_INDEX)
        e = e->a;
    return e && e->kind == SP_AST_NAME ? e->name : NULL;
}

int sp_ast_binds(const sp_ast_stmt_t *s, const char *name)
{
    for (size_t k = 0; s && k < s->nbinds; k++)
        if (strcmp(s->binds[k].name.str, name) == 0)
            return 1;
    return 0;
}

const char *sp_ast_stmt_kind_name(sp_ast_stmt_kind_t k)
{
    switch (k) {
    case SP_STMT_DIM: return "dim";
    case SP_STMT_MODEL: return "model";
    case SP_STMT_PLAN: return "plan";
    case SP_STMT_FUNC: return "func";
    case SP_STMT_INPUT: return "input";
    case SP_STMT_PARAM: return "param";
    case SP_STMT_LAYOUT: return "layout";
    case SP_STMT_ASSIGN: return "assign";
    case SP_STMT_ACCUM: return "accum";
    case SP_STMT_EXPR: return "expr";
    case SP_STMT_OUTPUT: return "output";
    case SP_STMT_TRAIN: return "train";
    case SP_STMT_MESH: return "mesh";
    case SP_STMT_ON: return "on";
    case SP_STMT_FOR: return "for";
    case SP_STMT_IF: return "if";
    case SP_STMT_RETURN: return "return";
    case SP_STMT_OMIT: return "omit";
    }
    return "?";
}

const char *sp_ast_expr_kind_name(sp_ast_expr_kind_t k)
{
    switch (k) {
    case SP_AST_NUM: return "num";
    case SP_AST_NAME: return "name";
    case SP_AST_NEG: return "neg";
    case SP_AST_BINOP: return "binop";
    case SP_AST_CALL: return "call";
    case SP_AST_INDEX: return "index";
    case SP_AST_RANGE: return "range";
    case SP_AST_LIST: return "list";
    }
    return "?";
}

/* The dump recurses over expressions and blocks: depth <= SP_PARSE_MAX_HEIGHT + MAX_DEPTH. */
static void dump_loc(FILE *f, sp_loc_t l, int locs)
{
    if (locs)
        fprintf(f, "@%u:%u", (unsigned)l.line, (unsigned)l.col);
}

static void dump_expr(FILE *f, const sp_ast_expr_t *e, int locs);

static void dump_args(FILE *f, const sp_ast_arg_t *args, size_t n, int locs)
{
    for (size_t i = 0; i < n; i++) {
        fputc(' ', f);
        if (args[i].key.str != NULL)
            fprintf(f, "%s=", args[i].key.str);
        dump_expr(f, args[i].value, locs);
    }
}

static void dump_expr(FILE *f, const sp_ast_expr_t *e, int locs)
{
    switch (e->kind) {
    case SP_AST_NUM: {
        char *s = fmpq_get_str(NULL, 10, e->value);
        fputs(s, f);
        flint_free(s);
        dump_loc(f, e->loc, locs);
        return;
    }
    case SP_AST_NAME:
        fputs(e->name, f);
        dump_loc(f, e->loc, locs);
        return;
    case SP_AST_NEG:
        fputs("(neg", f);
        dump_loc(f, e->loc, locs);
        fputc(' ', f);
        dump_expr(f, e->a, locs);
        break;
    case SP_AST_BINOP:
    case SP_AST_RANGE:
        fprintf(f, "(%s", e->kind == SP_AST_RANGE ? ".." : sp_ast_binop_name(e->op));
        dump_loc(f, e->loc, locs);
        fputc(' ', f);
        dump_expr(f, e->a, locs);
        fputc(' ', f);
        dump_expr(f, e->b, locs);
        break;
    case SP_AST_CALL:
        fprintf(f, "(%s", e->name);
        dump_loc(f, e->loc, locs);
        dump_args(f, e->args, e->nargs, locs);
        break;
    case SP_AST_INDEX:
        fputs("([]", f);
        dump_loc(f, e->loc, locs);
        fputc(' ', f);
        dump_expr(f, e->a, locs);
        dump_args(f, e->args, e->nargs, locs);
        break;
    case SP_AST_LIST:
        fputs("(list", f);
        dump_loc(f, e->loc, locs);
        dump_args(f, e->args, e->nargs, locs);
        break;
    }
    fputc(')', f);
}

static void dump_axes(FILE *f, const sp_ast_name_t *axes, size_t n)
{
    if (n == 1) {
        fputs(axes[0].str, f);
        return;
    }
    fputc('(', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", axes[i].str);
    fputc(')', f);
}

static void dump_layout(FILE *f, const sp_ast_layout_t *lay, int locs)
{
    fputc('[', f);
    for (size_t i = 0; i < lay->ndims; i++) {
        const sp_ast_ldim_t *dm = &lay->dims[i];
        if (i)
            fputc(' ', f);
        dump_expr(f, dm->size, locs);
        if (dm->naxes > 0) {
            fputc('@', f);
            dump_axes(f, dm->axes, dm->naxes);
        }
        if (dm->nsplit > 0) {
            fputc('{', f);
            for (size_t j = 0; j < dm->nsplit; j++) {
                if (j)
                    fputc(' ', f);
                dump_expr(f, dm->split[j], locs);
            }
            fputc('}', f);
        }
    }
    fputc(']', f);
    for (size_t i = 0; i < lay->npartials; i++) {
        fprintf(f, " partial(%s@", lay->partials[i].op.str);
        dump_axes(f, lay->partials[i].axes, lay->partials[i].naxes);
        fputc(')', f);
    }
}

static void dump_lineage(FILE *f, const sp_ast_lineage_t *lin, int locs)
{
    if (lin == NULL)
        return;
    fputs(" ~ ", f);
    dump_expr(f, lin->target, locs);
    if (lin->rows != NULL) {
        fputs(" rows ", f);
        dump_expr(f, lin->rows, locs);
    }
    fputs(" : ", f);
    dump_layout(f, lin->layout, locs);
}

static void dump_binds(FILE *f, const sp_ast_stmt_t *s, int locs)
{
    for (size_t i = 0; i < s->nbinds; i++) {
        fprintf(f, " %s=", s->binds[i].name.str);
        dump_expr(f, s->binds[i].value, locs);
    }
}

static void dump_block(FILE *f, const sp_ast_block_t *b, int indent, int locs);

static void dump_stmt(FILE *f, const sp_ast_stmt_t *s, int indent, int locs)
{
    fprintf(f, "%*s", 2 * indent, "");
    if (locs)
        fprintf(f, "@%u:%u ", (unsigned)s->loc.line, (unsigned)s->loc.col);
    fputs(sp_ast_stmt_kind_name(s->kind), f);
    switch (s->kind) {
    case SP_STMT_DIM:
    case SP_STMT_MESH:
        dump_binds(f, s, locs);
        break;
    case SP_STMT_MODEL:
        fprintf(f, " %s", s->name.str);
        dump_block(f, &s->body, indent, locs);
        break;
    case SP_STMT_PLAN:
        fprintf(f, " %s of %s", s->name.str, s->of.str);
        dump_block(f, &s->body, indent, locs);
        break;
    case SP_STMT_FUNC:
        fprintf(f, " %s(", s->name.str);
        for (size_t i = 0; i < s->nparams; i++)
            fprintf(f, "%s%s", i ? ", " : "", s->params[i].str);
        fputc(')', f);
        dump_block(f, &s->body, indent, locs);
        break;
    case SP_STMT_INPUT:
    case SP_STMT_PARAM:
        fprintf(f, " %s", s->name.str);
        if (s->ncount > 0) {
            fputc('[', f);
            for (size_t i = 0; i < s->ncount; i++) {
                if (i)
                    fputc(' ', f);
                dump_expr(f, s->count[i], locs);
            }
            fputc(']', f);
        }
        fputs(" : ", f);
        dump_layout(f, s->layout, locs);
        dump_lineage(f, s->lineage, locs);
        break;
    case SP_STMT_LAYOUT:
        fputc(' ', f);
        dump_expr(f, s->targets[0], locs);
        fputs(" : ", f);
        dump_layout(f, s->layout, locs);
        dump_lineage(f, s->lineage, locs);
        break;
    case SP_STMT_ASSIGN:
    case SP_STMT_ACCUM:
        for (size_t i = 0; i < s->ntargets; i++) {
            fputs(i ? ", " : " ", f);
            dump_expr(f, s->targets[i], locs);
        }
        fputs(s->kind == SP_STMT_ASSIGN ? " = " : " += ", f);
        dump_expr(f, s->value, locs);
        dump_lineage(f, s->lineage, locs);
        break;
    case SP_STMT_EXPR:
        fputc(' ', f);
        dump_expr(f, s->value, locs);
        break;
    case SP_STMT_OMIT:
        for (size_t i = 0; i < s->noutputs; i++) {
            fputs(i ? ", " : " ", f);
            dump_expr(f, s->outputs[i].target, locs);
        }
        break;
    case SP_STMT_OUTPUT:
        for (size_t i = 0; i < s->noutputs; i++) {
            const sp_ast_output_t *o = &s->outputs[i];
            fputs(i ? ", " : " ", f);
            dump_expr(f, o->target, locs);
            if (o->value != NULL) {
                fputs(" = ", f);
                dump_expr(f, o->value, locs);
            }
            if (o->layout != NULL) {
                fputs(" : ", f);
                dump_layout(f, o->layout, locs);
            }
        }
        break;
    case SP_STMT_TRAIN:
        fprintf(f, " %s", s->name.str);
        dump_args(f, s->args, s->nargs, locs);
        break;
    case SP_STMT_ON:
        dump_binds(f, s, locs);
        dump_block(f, &s->body, indent, locs);
        break;
    case SP_STMT_FOR:
        fprintf(f, " %s in ", s->name.str);
        dump_expr(f, s->lo, locs);
        fputs(" .. ", f);
        dump_expr(f, s->hi, locs);
        dump_block(f, &s->body, indent, locs);
        break;
    case SP_STMT_IF:
        fputc(' ', f);
        dump_expr(f, s->value, locs);
        dump_block(f, &s->body, indent, locs);
        if (s->has_else) {
            fprintf(f, "%*selse", 2 * indent, "");
            dump_block(f, &s->else_body, indent, locs);
        }
        break;
    case SP_STMT_RETURN:
        for (size_t i = 0; i < s->nvalues; i++) {
            fputc(' ', f);
            dump_expr(f, s->values[i], locs);
        }
        break;
    }
    if (s->kind != SP_STMT_MODEL && s->kind != SP_STMT_PLAN && s->kind != SP_STMT_FUNC &&
        s->kind != SP_STMT_ON && s->kind != SP_STMT_FOR && s->kind != SP_STMT_IF)
        fputc('\n', f);
}

/* " {\n" statements "}\n" */
static void dump_block(FILE *f, const sp_ast_block_t *b, int indent, int locs)
{
    fputs(" {\n", f);
    for (size_t i = 0; i < b->n; i++)
        dump_stmt(f, b->stmts[i], indent + 1, locs);
    fprintf(f, "%*s}\n", 2 * indent, "");
}

void sp_ast_dump_file(FILE *out, const sp_ast_t *ast, int locs)
{
    for (size_t i = 0; i < ast->nitems; i++)
        dump_stmt(out, ast->items[i], 0, locs);
}

char *sp_ast_dump(const sp_ast_t *ast, int locs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    sp_ast_dump_file(f, ast, locs);
    if (fclose(f) != 0) {
        flint_free(buf);
        return NULL;
    }
    return buf;
}
