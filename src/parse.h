/* parse.h: the plan language's parser: text to an AST whose every node keeps its file:line:col. */
#ifndef SP_PARSE_H
#define SP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <flint/fmpq.h>

#include "diag.h"
#include "lex.h"

/*
 * The AST is purely syntactic: names are not resolved, shapes and layouts are not checked, calls
 * are not told apart from operators, collectives or user functions.  That is sema's job.
 *
 * Memory: every node, array and string of a tree lives in the tree's arena and is freed by
 * sp_ast_free; nothing in it is owned by the caller and nothing may be freed on its own.  The
 * tree does not refer to the source text (names and literal texts are copied).
 *
 * Bounded shape, so consumers may recurse over it: statements nest at most
 * SP_PARSE_MAX_DEPTH blocks deep, and every expression has height (sp_ast_expr_t.height) at
 * most SP_PARSE_MAX_HEIGHT.  The parser itself never recurses deeper than SP_PARSE_MAX_DEPTH.
 *
 * Arrays are (pointer, count) pairs; a count of 0 may come with a NULL pointer.
 */

typedef struct sp_ast_expr sp_ast_expr_t;
typedef struct sp_ast_stmt sp_ast_stmt_t;

/* A name with its position (dotted names like grad.w1 and rank.tp are one name). */
typedef struct {
    const char *str;
    sp_loc_t loc;
} sp_ast_name_t;

typedef enum {
    SP_AST_NUM = 1, /* exact rational literal: value, text */
    SP_AST_NAME,    /* a name: name */
    SP_AST_NEG,     /* -a */
    SP_AST_BINOP,   /* a op b */
    SP_AST_CALL,    /* name(args): positional and keyword arguments in source order */
    SP_AST_INDEX,   /* a[args]: a is the indexed expression, args are positional */
    SP_AST_RANGE,   /* a..b: only as an index (x[0..4]) or a list element */
    SP_AST_LIST     /* [args]: positional, possibly empty (reshape(x, [B, S*H])) */
} sp_ast_expr_kind_t;

typedef enum {
    SP_BIN_ADD = 0, SP_BIN_SUB, SP_BIN_MUL, SP_BIN_DIV, SP_BIN_MOD, SP_BIN_POW,
    SP_BIN_LT, SP_BIN_LE, SP_BIN_GT, SP_BIN_GE, SP_BIN_EQ, SP_BIN_NE
} sp_ast_binop_t;

/* "+", "-", "*", "/", "%", "^", "<", "<=", ">", ">=", "==", "!=" */
const char *sp_ast_binop_name(sp_ast_binop_t op);

/* A call or index argument; key.str is NULL for a positional argument. */
typedef struct {
    sp_ast_name_t key;
    sp_ast_expr_t *value;
} sp_ast_arg_t;

/*
 * An expression.  loc: NUM, NAME, CALL, LIST: the first character; NEG: the '-'; BINOP, RANGE:
 * the operator; INDEX: the '['.  height: 1 for NUM and NAME, else 1 + the largest height among
 * the children.  Fields not listed for a kind are zero/NULL.
 */
struct sp_ast_expr {
    sp_ast_expr_kind_t kind;
    sp_loc_t loc;
    uint32_t height;
    sp_ast_binop_t op;     /* BINOP */
    const char *name;      /* NAME, CALL */
    const char *text;      /* NUM: the literal as written ("1e-5") */
    fmpq_t value;          /* NUM: its exact value, canonical (1/100000); unused otherwise */
    sp_ast_expr_t *a, *b;  /* NEG: a; BINOP, RANGE: a, b; INDEX: a */
    sp_ast_arg_t *args;    /* CALL, INDEX, LIST */
    size_t nargs;
    sp_ast_expr_t *next_num; /* internal: the tree's list of NUM nodes (their values are cleared) */
};

/*
 * One tensor dimension of a layout: its size and how it is sharded.
 *   B          size B, not sharded
 *   B@dp       sharded over mesh axis dp (torch.chunk rule when B is not divisible)
 *   S@(cp,sp)  sharded over cp then sp, major to minor
 *   B@dp{3,5}  explicit shard sizes, in rank order over the axes (major to minor)
 */
typedef struct {
    sp_ast_expr_t *size;
    sp_ast_name_t *axes;    /* naxes == 0: not sharded (replicated over every axis) */
    size_t naxes;
    sp_ast_expr_t **split;  /* nsplit == 0: no explicit sizes */
    size_t nsplit;
    sp_loc_t split_loc;     /* the '{' */
} sp_ast_ldim_t;

/* One pending reduction of a layout: partial(sum@tp) or partial(sum@(dp,tp)). */
typedef struct {
    sp_ast_name_t op;       /* sum, avg, max, min (not checked here) */
    sp_ast_name_t *axes;
    size_t naxes;
} sp_ast_partial_t;

/* A shape or layout: [dims] then any number of partial(...) entries.  loc is the '['. */
typedef struct {
    sp_loc_t loc;
    sp_ast_ldim_t *dims;
    size_t ndims;
    sp_ast_partial_t *partials;
    size_t npartials;
} sp_ast_layout_t;

/* name = value, in dim, mesh and on lists. */
typedef struct {
    sp_ast_name_t name;
    sp_ast_expr_t *value;
} sp_ast_bind_t;

/*
 * ~ target [ '[' lo..hi ']' ] : layout (target is a NAME or an INDEX of a NAME).  loc is the '~'.
 * rows is the RANGE lo..hi of a row slice (dim 0 of the model tensor), NULL for the whole tensor.
 */
typedef struct {
    sp_loc_t loc;
    sp_ast_expr_t *target;
    sp_ast_expr_t *rows;
    sp_ast_layout_t *layout;
} sp_ast_lineage_t;

/* One entry of an output statement: target [= value] [: layout]. */
typedef struct {
    sp_ast_expr_t *target;  /* NAME or INDEX of a NAME */
    sp_ast_expr_t *value;   /* NULL when absent */
    sp_ast_layout_t *layout;/* NULL when absent */
} sp_ast_output_t;

/* A braced block; open and close are the '{' and '}'. */
typedef struct {
    sp_loc_t open, close;
    sp_ast_stmt_t **stmts;
    size_t n;
} sp_ast_block_t;

typedef enum {
    SP_STMT_DIM = 1, /* dim B = 8, F = 4*H                       binds */
    SP_STMT_MODEL,   /* model NAME { }                            name, body */
    SP_STMT_PLAN,    /* plan NAME of MODEL { }                    name, of, body */
    SP_STMT_FUNC,    /* func NAME(a, b) { }                       name, params, body */
    SP_STMT_INPUT,   /* input x[count] : layout [~ lineage]       name, count, layout, lineage */
    SP_STMT_PARAM,   /* param w[count] : layout [~ lineage]       name, count, layout, lineage */
    SP_STMT_LAYOUT,  /* x : layout [~ lineage]                    targets[0], layout, lineage */
    SP_STMT_ASSIGN,  /* a, b = expr [~ lineage]                   targets, value, lineage */
    SP_STMT_ACCUM,   /* a += expr [~ lineage]                     targets[0], value, lineage */
    SP_STMT_EXPR,    /* send(t, pp = k+1)                         value (a CALL) */
    SP_STMT_OUTPUT,  /* output a, grad.w1 = gw1 : layout          outputs */
    SP_STMT_TRAIN,   /* train adam(lr = 1e-3)                     name, args */
    SP_STMT_MESH,    /* mesh dp = 2, tp = 2                       binds */
    SP_STMT_ON,      /* on pp = 0, tp = 1 { }                     binds, body */
    SP_STMT_FOR,     /* for l in lo..hi { }                       name, lo, hi, body */
    SP_STMT_IF,      /* if cond { } else { }              value, body, has_else, else_body */
    SP_STMT_RETURN,  /* return a, b                               values */
    SP_STMT_OMIT     /* omit grad.w2, next.w2                     outputs (targets only) */
} sp_ast_stmt_kind_t;

/*
 * A statement.  loc is its first token (the keyword, or the first target).  Fields not listed for
 * a kind in the table above are zero/NULL.  For IF, "else if" is an else_body holding one IF.
 */
struct sp_ast_stmt {
    sp_ast_stmt_kind_t kind;
    sp_loc_t loc;
    sp_ast_name_t name;
    sp_ast_name_t of;
    sp_ast_name_t *params;
    size_t nparams;
    sp_ast_expr_t **count;    /* array extents of param wq[L] (or w[L, E]); ncount == 0: none */
    size_t ncount;
    sp_ast_layout_t *layout;
    sp_ast_expr_t **targets;  /* NAME or INDEX of a NAME */
    size_t ntargets;
    sp_ast_expr_t *value;
    sp_ast_expr_t *lo, *hi;
    sp_ast_bind_t *binds;
    size_t nbinds;
    sp_ast_arg_t *args;
    size_t nargs;
    sp_ast_output_t *outputs;
    size_t noutputs;
    sp_ast_expr_t **values;
    size_t nvalues;
    sp_ast_block_t body;
    sp_ast_block_t else_body;
    int has_else;
    sp_ast_lineage_t *lineage; /* NULL when absent */
};

/* A source-map comment '#@ ORIGIN' of a line (see lex.h). */
typedef struct {
    uint32_t line;
    const char *text;        /* NUL-terminated, owned by the AST */
} sp_ast_origin_t;

/* A parsed file: its top-level statements (DIM, MODEL, PLAN, FUNC) in source order. */
typedef struct sp_ast {
    const char *file;        /* the path as given, copied */
    sp_ast_stmt_t **items;
    size_t nitems;
    sp_ast_origin_t *origins; /* source-map comments, in line order */
    size_t norigins;
    struct sp_parse_arena *arena;  /* internal */
    sp_ast_expr_t *nums;     /* internal */
} sp_ast_t;

/*
 * Limits on the input (each violation is a clean error, never a crash).  max_depth and
 * max_height may be lowered but not raised above the compile-time maxima below (they bound the
 * stack the parser and AST consumers use).  0 for max_bytes or max_tokens means unlimited.
 */
#define SP_PARSE_MAX_DEPTH 200    /* nested blocks, brackets, unary minus, right-nested '^' */
#define SP_PARSE_MAX_HEIGHT 1000  /* height of an expression tree */
typedef struct {
    size_t max_bytes;   /* input size; default 16 MiB */
    size_t max_tokens;  /* default 2^21 */
    size_t max_ident;   /* longest identifier or number; default 256 */
    unsigned max_depth; /* default SP_PARSE_MAX_DEPTH */
    unsigned max_height;/* default SP_PARSE_MAX_HEIGHT */
} sp_parse_limits_t;

void sp_parse_limits_default(sp_parse_limits_t *lim);

/*
 * Parse text[0..len) (it may contain NUL bytes) of the file named path (used in locations and
 * messages exactly as given).  The text is registered with d for caret lines.  On success returns
 * SP_OK and sets *out to a tree the caller frees with sp_ast_free.  On failure returns
 * SP_ERR_INPUT (syntax errors, limits; all in d, several per run) or SP_ERR_NOMEM, and sets *out
 * to NULL.  An empty file is a valid, empty program.  lim NULL means the defaults.
 */
sp_status_t sp_parse_file(sp_ast_t **out, const char *path, const char *text, size_t len,
                          const sp_parse_limits_t *lim, sp_diags_t d);

/* Read the file at path (I/O errors become diagnostics) and parse it as sp_parse_file does. */
sp_status_t sp_parse_path(sp_ast_t **out, const char *path, const sp_parse_limits_t *lim,
                          sp_diags_t d);

void sp_ast_free(sp_ast_t *ast);

/* The origin '#@ ORIGIN' written on the given line of the file (a generator's source position,
   such as "model.py:42"), or NULL.  Reports print it next to the line. */
const char *sp_ast_origin(const sp_ast_t *ast, uint32_t line);

/*
 * A textual dump of the tree, one statement per line, indented by block, expressions as
 * s-expressions ("(= h (matmul x w1))"), numbers by exact value ("1/100000").  With locs != 0,
 * every statement and expression is followed by @line:col.  Returns a string the caller frees
 * with free(), NULL if out of memory.
 */
char *sp_ast_dump(const sp_ast_t *ast, int locs);
void sp_ast_dump_file(FILE *out, const sp_ast_t *ast, int locs);

/* "dim", "model", ... for a statement kind; "num", "name", ... for an expression kind. */
const char *sp_ast_stmt_kind_name(sp_ast_stmt_kind_t kind);
/* The name a target or an array element names: x for x and for x[i], else NULL. */
const char *sp_ast_base_name(const sp_ast_expr_t *e);
/* Whether statement s (a mesh, a dim list) binds name. */
int sp_ast_binds(const sp_ast_stmt_t *s, const char *name);
const char *sp_ast_expr_kind_name(sp_ast_expr_kind_t kind);

#endif
