/* lex.h: tokens of the plan language, produced on demand with their source positions. */
#ifndef SP_LEX_H
#define SP_LEX_H

#include <stddef.h>
#include <stdint.h>

#include <flint/fmpq.h>

#include "diag.h"

/*
 * Lexical structure (docs/language.md, "Lexical structure"):
 *  - '#' starts a comment that runs to the end of the line; any bytes may appear in it.
 *  - Whitespace is space, tab, CR, VT, FF.  A UTF-8 byte-order mark at the start is skipped.
 *  - Identifiers: [A-Za-z_][A-Za-z0-9_]* ('.' [A-Za-z_][A-Za-z0-9_]*)*, one token, so
 *    grad.w1 and rank.tp are single identifiers (no spaces around the dots).  A '.' is part of
 *    an identifier only when a letter or '_' follows it, so "a..b" is a, '..', b.
 *  - Numbers: digits ['.' digits] [('e'|'E') ['+'|'-'] digits], read exactly as rationals
 *    (1e-5 = 1/100000, 0.125 = 1/8); |exponent| <= SP_LEX_MAX_EXPONENT.  "0..L" is 0, '..', L.
 *  - Keywords (reserved): dim model plan of func input param output train mesh on for in if
 *    else return.  Everywhere a keyword argument name is expected (f(x, dim = 1)) any word works.
 *  - Newlines end statements.  Runs of newlines, blank lines and comment lines give one
 *    SP_TOK_NEWLINE.  A newline is dropped (the statement continues on the next line) when the
 *    token before it is one that cannot end a statement ( ',' '(' '[' '{' '=' '+=' '+' '-' '*'
 *    '/' '%' '^' '<' '<=' '>' '>=' '==' '!=' '@' '~' ':' '..' ), when the next line starts
 *    with '~' (a lineage annotation on its own line), or when it is inside an open '(' or '['
 *    and the next line starts with ')' or ']'.  ';' also ends a statement.
 *  - Limits: identifiers and numbers at most max_ident bytes, at most max_tokens tokens.
 * Errors are reported to the diagnostics list and give an SP_TOK_ERROR token (so the parser can
 * stay quiet about it); a run of consecutive invalid bytes gives one error.
 */
typedef enum {
    SP_TOK_EOF = 0,
    SP_TOK_NEWLINE, /* end of a statement; its position is just after the previous token */
    SP_TOK_ERROR,   /* invalid input, already reported */
    SP_TOK_IDENT,
    SP_TOK_NUM,
    /* keywords */
    SP_TOK_DIM,
    SP_TOK_MODEL,
    SP_TOK_PLAN,
    SP_TOK_OF,
    SP_TOK_FUNC,
    SP_TOK_INPUT,
    SP_TOK_PARAM,
    SP_TOK_OUTPUT,
    SP_TOK_TRAIN,
    SP_TOK_MESH,
    SP_TOK_ON,
    SP_TOK_FOR,
    SP_TOK_IN,
    SP_TOK_IF,
    SP_TOK_ELSE,
    SP_TOK_RETURN,
    /* punctuation */
    SP_TOK_LPAREN,
    SP_TOK_RPAREN,
    SP_TOK_LBRACK,
    SP_TOK_RBRACK,
    SP_TOK_LBRACE,
    SP_TOK_RBRACE,
    SP_TOK_COMMA,
    SP_TOK_SEMI,
    SP_TOK_COLON,
    SP_TOK_ASSIGN,  /* = */
    SP_TOK_PLUSEQ,  /* += */
    SP_TOK_AT,
    SP_TOK_TILDE,
    SP_TOK_PLUS,
    SP_TOK_MINUS,
    SP_TOK_STAR,
    SP_TOK_SLASH,
    SP_TOK_PERCENT,
    SP_TOK_CARET,
    SP_TOK_DOTDOT,
    SP_TOK_LT,
    SP_TOK_LE,
    SP_TOK_GT,
    SP_TOK_GE,
    SP_TOK_EQ,      /* == */
    SP_TOK_NE,      /* != */
    SP_TOK__COUNT
} sp_tok_kind_t;

/* A token: kind, its bytes in the source (text is borrowed from the lexer's input), position. */
typedef struct {
    sp_tok_kind_t kind;
    const char *text;
    size_t len;
    uint32_t line;
    uint32_t col;
} sp_tok_t;

#define SP_LEX_MAX_EXPONENT 1000

/*
 * A source-map comment: '#@ ORIGIN' (docs/language.md, "Source maps") says that the statement
 * on its line comes from ORIGIN (a generator's source position such as "model.py:42").  text
 * is borrowed from the lexer's input: ORIGIN without surrounding blanks, at most
 * SP_LEX_ORIGIN_MAX bytes, printable ASCII (a longer or other origin is not recorded).
 */
typedef struct {
    uint32_t line;
    const char *text;
    size_t len;
} sp_lex_origin_t;

#define SP_LEX_ORIGIN_MAX 200

/*
 * Lexer state.  The input is borrowed and must outlive the lexer and its tokens.  It may contain
 * NUL bytes (they are errors outside comments).
 */
typedef struct {
    const char *file;       /* borrowed; used in locations */
    const char *text;
    size_t len;
    size_t pos;
    uint32_t line, col;     /* position of text[pos] */
    size_t max_ident;       /* longest identifier or number, in bytes */
    size_t max_tokens;      /* 0 = unlimited */
    size_t ntokens;         /* tokens produced so far */
    sp_tok_kind_t prev;     /* kind of the last token produced (SP_TOK_NEWLINE at the start) */
    uint32_t prev_end_line, prev_end_col; /* position just after the last token produced */
    size_t depth;           /* open '(' and '[' (for newline continuation) */
    int fatal;              /* a limit was hit: only SP_TOK_EOF from now on */
    size_t nerrors;         /* errors reported (recorded or not: the list may be full) */
    sp_diags_struct *diags;
    sp_lex_origin_t *origins; /* source-map comments, in line order (owned: sp_lex_clear) */
    size_t norigins, aorigins;
    int nomem;              /* recording an origin failed for lack of memory */
} sp_lexer_struct;
typedef sp_lexer_struct sp_lexer_t[1];

/* Start lexing text[0..len) of file; errors go to d.  sp_lex_clear frees the origins. */
void sp_lex_init(sp_lexer_t L, const char *file, const char *text, size_t len, size_t max_ident,
                 size_t max_tokens, sp_diags_t d);

/* Free what the lexer allocated (the list of source-map comments). */
void sp_lex_clear(sp_lexer_t L);

/* The next token (SP_TOK_EOF forever at the end). */
void sp_lex_next(sp_lexer_t L, sp_tok_t *tok);

/* Forget the open brackets (the parser calls this when it resynchronises after an error). */
static inline void sp_lex_reset_depth(sp_lexer_t L) { L->depth = 0; }

/* Printable name of a token kind: "identifier", "number", "'model'", "'('", "end of line", ... */
const char *sp_tok_kind_name(sp_tok_kind_t kind);

/* The keyword kind for word[0..len), or SP_TOK_IDENT if it is not a keyword. */
sp_tok_kind_t sp_lex_keyword(const char *word, size_t len);

/*
 * The exact value of a numeric literal already accepted by the lexer (a SP_TOK_NUM token's
 * text): out = digits * 10^(exponent - fraction digits), canonical.  Returns 0, or -1 if text is
 * not a valid literal (out is then 0).
 */
int sp_lex_number_value(fmpq_t out, const char *text, size_t len);

#endif
