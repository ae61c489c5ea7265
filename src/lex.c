/* lex.c: the plan language's lexer: bytes to tokens with positions, exact numeric literals. */
#include "lex.h"

#include <string.h>

#include <flint/fmpz.h>

/* Longest token text quoted in a message before it is cut with "...". */
#define SP_LEX_QUOTE_MAX 32

static const struct {
    const char *word;
    sp_tok_kind_t kind;
} keywords[] = {
    {"dim", SP_TOK_DIM},       {"model", SP_TOK_MODEL},   {"plan", SP_TOK_PLAN},
    {"of", SP_TOK_OF},         {"func", SP_TOK_FUNC},     {"input", SP_TOK_INPUT},
    {"param", SP_TOK_PARAM},   {"output", SP_TOK_OUTPUT}, {"train", SP_TOK_TRAIN},
    {"mesh", SP_TOK_MESH},     {"on", SP_TOK_ON},         {"for", SP_TOK_FOR},
    {"in", SP_TOK_IN},         {"if", SP_TOK_IF},         {"else", SP_TOK_ELSE},
    {"return", SP_TOK_RETURN},
};

const char *sp_tok_kind_name(sp_tok_kind_t kind)
{
    switch (kind) {
    case SP_TOK_EOF: return "end of file";
    case SP_TOK_NEWLINE: return "end of line";
    case SP_TOK_ERROR: return "invalid token";
    case SP_TOK_IDENT: return "identifier";
    case SP_TOK_NUM: return "number";
    case SP_TOK_DIM: return "'dim'";
    case SP_TOK_MODEL: return "'model'";
    case SP_TOK_PLAN: return "'plan'";
    case SP_TOK_OF: return "'of'";
    case SP_TOK_FUNC: return "'func'";
    case SP_TOK_INPUT: return "'input'";
    case SP_TOK_PARAM: return "'param'";
    case SP_TOK_OUTPUT: return "'output'";
    case SP_TOK_TRAIN: return "'train'";
    case SP_TOK_MESH: return "'mesh'";
    case SP_TOK_ON: return "'on'";
    case SP_TOK_FOR: return "'for'";
    case SP_TOK_IN: return "'in'";
    case SP_TOK_IF: return "'if'";
    case SP_TOK_ELSE: return "'else'";
    case SP_TOK_RETURN: return "'return'";
    case SP_TOK_LPAREN: return "'('";
    case SP_TOK_RPAREN: return "')'";
    case SP_TOK_LBRACK: return "'['";
    case SP_TOK_RBRACK: return "']'";
    case SP_TOK_LBRACE: return "'{'";
    case SP_TOK_RBRACE: return "'}'";
    case SP_TOK_COMMA: return "','";
    case SP_TOK_SEMI: return "';'";
    case SP_TOK_COLON: return "':'";
    case SP_TOK_ASSIGN: return "'='";
    case SP_TOK_PLUSEQ: return "'+='";
    case SP_TOK_AT: return "'@'";
    case SP_TOK_TILDE: return "'~'";
    case SP_TOK_PLUS: return "'+'";
    case SP_TOK_MINUS: return "'-'";
    case SP_TOK_STAR: return "'*'";
    case SP_TOK_SLASH: return "'/'";
    case SP_TOK_PERCENT: return "'%'";
    case SP_TOK_CARET: return "'^'";
    case SP_TOK_DOTDOT: return "'..'";
    case SP_TOK_LT: return "'<'";
    case SP_TOK_LE: return "'<='";
    case SP_TOK_GT: return "'>'";
    case SP_TOK_GE: return "'>='";
    case SP_TOK_EQ: return "'=='";
    case SP_TOK_NE: return "'!='";
    case SP_TOK__COUNT: break;
    }
    return "token";
}

sp_tok_kind_t sp_lex_keyword(const char *word, size_t len)
{
    for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
        if (strlen(keywords[i].word) == len && memcmp(keywords[i].word, word, len) == 0)
            return keywords[i].kind;
    return SP_TOK_IDENT;
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* A byte that cannot start a token and is not whitespace, a newline or a comment. */
static int is_bad_byte(int c)
{
    if (c == 0)
        return 1;
    return !(is_alnum(c) || is_space(c) || c == '\n' || strchr("()[]{},;:=+@~-*/%^<>!.#", c));
}

/* Tokens after which a newline does not end the statement. */
static int is_continuation(sp_tok_kind_t k)
{
    switch (k) {
    case SP_TOK_COMMA: case SP_TOK_LPAREN: case SP_TOK_LBRACK: case SP_TOK_LBRACE:
    case SP_TOK_ASSIGN: case SP_TOK_PLUSEQ: case SP_TOK_PLUS: case SP_TOK_MINUS:
    case SP_TOK_STAR: case SP_TOK_SLASH: case SP_TOK_PERCENT: case SP_TOK_CARET:
    case SP_TOK_LT: case SP_TOK_LE: case SP_TOK_GT: case SP_TOK_GE: case SP_TOK_EQ:
    case SP_TOK_NE: case SP_TOK_AT: case SP_TOK_TILDE: case SP_TOK_COLON: case SP_TOK_DOTDOT:
        return 1;
    default:
        return 0;
    }
}

void sp_lex_init(sp_lexer_t L, const char *file, const char *text, size_t len, size_t max_ident,
                 size_t max_tokens, sp_diags_t d)
{
    memset(L, 0, sizeof(*L));
    L->file = file;
    L->text = text;
    L->len = len;
    L->line = 1;
    L->col = 1;
    L->max_ident = max_ident;
    L->max_tokens = max_tokens;
    L->prev = SP_TOK_NEWLINE;
    L->prev_end_line = 1;
    L->prev_end_col = 1;
    L->diags = d;
    /* A UTF-8 byte-order mark is not part of the text. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        L->pos = 3;
}

void sp_lex_clear(sp_lexer_t L)
{
    flint_free(L->origins);
    L->origins = NULL;
    L->norigins = L->aorigins = 0;
}

/* A comment starts at text[pos]: record it if it is a source-map comment '#@ ORIGIN'. */
static void note_origin(sp_lexer_t L, size_t pos, size_t stop)
{
    if (pos + 1 >= stop || L->text[pos + 1] != '@')
        return;
    size_t a = pos + 2, b = stop;
    while (a < b && (L->text[a] == ' ' || L->text[a] == '\t'))
        a++;
    while (b > a && (L->text[b - 1] == ' ' || L->text[b - 1] == '\t' || L->text[b - 1] == '\r'))
        b--;
    if (a == b || b - a > SP_LEX_ORIGIN_MAX)
        return;
    for (size_t i = a; i < b; i++)
        if ((unsigned char)L->text[i] < 0x20 || (unsigned char)L->text[i] > 0x7e)
            return;
    if (L->norigins == L->aorigins) {
        size_t cap = L->aorigins ? 2 * L->aorigins : 64;
        sp_lex_origin_t *o = flint_realloc(L->origins, cap * sizeof(*o));
        if (o == NULL) {
            L->nomem = 1;
            return;
        }
        L->origins = o;
        L->aorigins = cap;
    }
    sp_lex_origin_t *o = &L->origins[L->norigins++];
    o->line = L->line;
    o->text = L->text + a;
    o->len = b - a;
}

static int peekc(const sp_lexer_t L, size_t k)
{
    return L->pos + k < L->len ? (unsigned char)L->text[L->pos + k] : -1;
}

static void adv(sp_lexer_t L)
{
    if (L->text[L->pos] == '\n') {
        L->line++;
        L->col = 1;
    } else {
        L->col++;
    }
    L->pos++;
}

static sp_loc_t here(const sp_lexer_t L, uint32_t line, uint32_t col)
{
    sp_loc_t loc = {L->file, line, col};
    return loc;
}

static void lex_error(sp_lexer_t L, sp_diag_code_t code, uint32_t line, uint32_t col,
                      const char *fmt, ...) SP_PRINTF(5, 6);

static void lex_error(sp_lexer_t L, sp_diag_code_t code, uint32_t line, uint32_t col,
                      const char *fmt, ...)
{
    va_list ap;
    L->nerrors++;
    va_start(ap, fmt);
    sp_diags_vadd(L->diags, SP_SEV_ERROR, code, here(L, line, col), fmt, ap);
    va_end(ap);
}

static void scan_digits(sp_lexer_t L)
{
    while (is_digit(peekc(L, 0)))
        adv(L);
}

/* Scan a number starting at a digit; returns 0 if well formed, 1 if malformed, 2 if the exponent
 * is out of range. */
static int scan_number(sp_lexer_t L)
{
    int bad = 0;
    scan_digits(L);
    if (peekc(L, 0) == '.') {
        if (is_digit(peekc(L, 1))) {
            adv(L);
            scan_digits(L);
        } else if (peekc(L, 1) != '.') {
            adv(L);
            bad = 1;
        }
    }
    if (!bad && (peekc(L, 0) == 'e' || peekc(L, 0) == 'E')) {
        size_t k = 1;
        int sign = peekc(L, 1);
        if (sign == '+' || sign == '-')
            k = 2;
        if (is_digit(peekc(L, k))) {
            while (k-- > 0)
                adv(L);
            unsigned long e = 0;
            while (is_digit(peekc(L, 0))) {
                if (e <= SP_LEX_MAX_EXPONENT)
                    e = 10 * e + (unsigned long)(peekc(L, 0) - '0');
                adv(L);
            }
            if (e > SP_LEX_MAX_EXPONENT)
                bad = 2;
        } else {
            while (k-- > 0 && peekc(L, 0) != -1 && !is_space(peekc(L, 0)) && peekc(L, 0) != '\n')
                adv(L);
            bad = 1;
        }
    }
    /* Letters or digits glued to the number (12abc, 1.5.2, 3e5x) make it malformed. */
    while (is_alnum(peekc(L, 0)) || (peekc(L, 0) == '.' && is_alnum(peekc(L, 1)))) {
        adv(L);
        bad = 1;
    }
    return bad;
}

static void make(sp_lexer_t L, sp_tok_t *t, sp_tok_kind_t kind, size_t start, uint32_t line,
                 uint32_t col)
{
    t->kind = kind;
    t->text = L->text + start;
    t->len = L->pos - start;
    t->line = line;
    t->col = col;
    L->prev = kind;
    L->prev_end_line = L->line;
    L->prev_end_col = L->col;
}

static sp_tok_kind_t punct(sp_lexer_t L, int c)
{
    int c1 = peekc(L, 1);
    sp_tok_kind_t k;
    int two = 0;
    switch (c) {
    case '(': k = SP_TOK_LPAREN; break;
    case ')': k = SP_TOK_RPAREN; break;
    case '[': k = SP_TOK_LBRACK; break;
    case ']': k = SP_TOK_RBRACK; break;
    case '{': k = SP_TOK_LBRACE; break;
    case '}': k = SP_TOK_RBRACE; break;
    case ',': k = SP_TOK_COMMA; break;
    case ';': k = SP_TOK_SEMI; break;
    case ':': k = SP_TOK_COLON; break;
    case '@': k = SP_TOK_AT; break;
    case '~': k = SP_TOK_TILDE; break;
    case '-': k = SP_TOK_MINUS; break;
    case '*': k = SP_TOK_STAR; break;
    case '/': k = SP_TOK_SLASH; break;
    case '%': k = SP_TOK_PERCENT; break;
    case '^': k = SP_TOK_CARET; break;
    case '=': two = c1 == '='; k = two ? SP_TOK_EQ : SP_TOK_ASSIGN; break;
    case '+': two = c1 == '='; k = two ? SP_TOK_PLUSEQ : SP_TOK_PLUS; break;
    case '<': two = c1 == '='; k = two ? SP_TOK_LE : SP_TOK_LT; break;
    case '>': two = c1 == '='; k = two ? SP_TOK_GE : SP_TOK_GT; break;
    case '!':
        if (c1 != '=')
            return SP_TOK_ERROR;
        two = 1;
        k = SP_TOK_NE;
        break;
    case '.':
        if (c1 != '.')
            return SP_TOK_ERROR;
        two = 1;
        k = SP_TOK_DOTDOT;
        break;
    default:
        return SP_TOK_ERROR;
    }
    adv(L);
    if (two)
        adv(L);
    return k;
}

static void quote_error(sp_lexer_t L, uint32_t line, uint32_t col, const char *what,
                        const char *s, size_t n, const char *tail)
{
    int cut = n > SP_LEX_QUOTE_MAX;
    lex_error(L, SP_DIAG_SYNTAX, line, col, "%s '%.*s%s'%s", what,
              (int)(cut ? SP_LEX_QUOTE_MAX : n), s, cut ? "..." : "", tail);
}

void sp_lex_next(sp_lexer_t L, sp_tok_t *t)
{
    int saw_nl = 0;
    uint32_t nl_line = 0, nl_col = 0;
    if (L->fatal) {
        t->kind = SP_TOK_EOF;
        t->text = L->text + L->len;
        t->len = 0;
        t->line = L->line;
        t->col = L->col;
        return;
    }
    for (;;) {
        int c = peekc(L, 0);
        if (c == -1)
            break;
        if (is_space(c)) {
            adv(L);
        } else if (c == '#') {
            const char *nl = memchr(L->text + L->pos, '\n', L->len - L->pos);
            size_t stop = nl ? (size_t)(nl - L->text) : L->len;
            note_origin(L, L->pos, stop);
            L->col += (uint32_t)(stop - L->pos);
            L->pos = stop;
        } else if (c == '\n') {
            if (!saw_nl) {
                saw_nl = 1;
                nl_line = L->line;
                nl_col = L->col;
            }
            adv(L);
        } else {
            break;
        }
    }
    int c = peekc(L, 0);
    /* A newline ends the statement unless the statement visibly goes on (see lex.h). */
    if (saw_nl && c != -1 && L->prev != SP_TOK_NEWLINE && L->prev != SP_TOK_SEMI &&
        !is_continuation(L->prev) && c != '~' && !(L->depth > 0 && (c == ')' || c == ']'))) {
        t->kind = SP_TOK_NEWLINE;
        t->text = "";
        t->len = 0;
        if (L->prev_end_line == nl_line) {
            t->line = L->prev_end_line;
            t->col = L->prev_end_col;
        } else {
            t->line = nl_line;
            t->col = nl_col;
        }
        L->prev = SP_TOK_NEWLINE;
        L->ntokens++;
        return;
    }
    size_t start = L->pos;
    uint32_t line = L->line, col = L->col;
    if (c == -1) {
        /* The end of input is reported just after the last token, on a line that exists. */
        t->kind = SP_TOK_EOF;
        t->text = L->text + L->len;
        t->len = 0;
        t->line = L->prev_end_line;
        t->col = L->prev_end_col;
        L->prev = SP_TOK_EOF;
        return;
    }
    if (L->max_tokens != 0 && ++L->ntokens > L->max_tokens) {
        lex_error(L, SP_DIAG_LIMIT, line, col, "too many tokens (more than %zu)", L->max_tokens);
        L->fatal = 1;
        L->pos = L->len;
        make(L, t, SP_TOK_EOF, L->pos, line, col);
        return;
    }
    if (is_alpha(c)) {
        while (is_alnum(peekc(L, 0)) || (peekc(L, 0) == '.' && is_alpha(peekc(L, 1))))
            adv(L);
        size_t n = L->pos - start;
        if (n > L->max_ident) {
            lex_error(L, SP_DIAG_LIMIT, line, col, "identifier too long (more than %zu characters)",
                      L->max_ident);
            make(L, t, SP_TOK_ERROR, start, line, col);
            return;
        }
        /* names beginning with '__' (or a dotted part that does) are the engine's own symbols
           (__sqrt_pi): a user name must not reach them */
        for (size_t k = 0; k + 1 < n; k++)
            if ((k == 0 || L->text[start + k - 1] == '.') && L->text[start + k] == '_' &&
                L->text[start + k + 1] == '_') {
                lex_error(L, SP_DIAG_NAME, line, col,
                          "names beginning with '__' are reserved for the engine's symbols");
                make(L, t, SP_TOK_ERROR, start, line, col);
                return;
            }
        make(L, t, memchr(L->text + start, '.', n) ? SP_TOK_IDENT : sp_lex_keyword(L->text + start, n),
             start, line, col);
        return;
    }
    if (is_digit(c)) {
        int bad = scan_number(L);
        size_t n = L->pos - start;
        if (n > L->max_ident) {
            lex_error(L, SP_DIAG_LIMIT, line, col, "number too long (more than %zu characters)",
                      L->max_ident);
            bad = 3;
        } else if (bad == 1) {
            quote_error(L, line, col, "malformed number", L->text + start, n, "");
        } else if (bad == 2) {
            char tail[64];
            snprintf(tail, sizeof tail, " (limit %d)", SP_LEX_MAX_EXPONENT);
            quote_error(L, line, col, "exponent out of range in", L->text + start, n, tail);
        }
        make(L, t, bad ? SP_TOK_ERROR : SP_TOK_NUM, start, line, col);
        return;
    }
    sp_tok_kind_t k = punct(L, c);
    if (k != SP_TOK_ERROR) {
        if (k == SP_TOK_LPAREN || k == SP_TOK_LBRACK)
            L->depth++;
        else if ((k == SP_TOK_RPAREN || k == SP_TOK_RBRACK) && L->depth > 0)
            L->depth--;
        make(L, t, k, start, line, col);
        return;
    }
    /* Invalid input: one error for the whole run of bytes that cannot start a token. */
    if (c == 0)
        lex_error(L, SP_DIAG_SYNTAX, line, col, "unexpected NUL byte");
    else if (c >= 0x80)
        lex_error(L, SP_DIAG_SYNTAX, line, col,
                  "unexpected byte 0x%02x (non-ASCII characters are only allowed in comments)", c);
    else if (c < 0x20 || c == 0x7f)
        lex_error(L, SP_DIAG_SYNTAX, line, col, "unexpected control byte 0x%02x", c);
    else
        lex_error(L, SP_DIAG_SYNTAX, line, col, "unexpected character '%c'", c);
    adv(L);
    while (peekc(L, 0) != -1 && is_bad_byte(peekc(L, 0)))
        adv(L);
    make(L, t, SP_TOK_ERROR, start, line, col);
}

int sp_lex_number_value(fmpq_t out, const char *text, size_t len)
{
    fmpq_zero(out);
    if (len == 0 || !is_digit((unsigned char)text[0]))
        return -1;
    char *digits = flint_malloc(len + 1);
    size_t nd = 0, i = 0, nfrac = 0;
    while (i < len && is_digit((unsigned char)text[i]))
        digits[nd++] = text[i++];
    if (i < len && text[i] == '.') {
        i++;
        if (i == len || !is_digit((unsigned char)text[i])) {
            flint_free(digits);
            return -1;
        }
        while (i < len && is_digit((unsigned char)text[i])) {
            digits[nd++] = text[i++];
            nfrac++;
        }
    }
    long e = 0;
    if (i < len && (text[i] == 'e' || text[i] == 'E')) {
        int neg = 0;
        i++;
        if (i < len && (text[i] == '+' || text[i] == '-'))
            neg = text[i++] == '-';
        if (i == len || !is_digit((unsigned char)text[i])) {
            flint_free(digits);
            return -1;
        }
        while (i < len && is_digit((unsigned char)text[i])) {
            if (e <= SP_LEX_MAX_EXPONENT)
                e = 10 * e + (text[i] - '0');
            i++;
        }
        if (e > SP_LEX_MAX_EXPONENT) {
            flint_free(digits);
            return -1;
        }
        if (neg)
            e = -e;
    }
    if (i != len) {
        flint_free(digits);
        return -1;
    }
    digits[nd] = '\0';
    fmpz_t m, p;
    fmpz_init(m);
    fmpz_init(p);
    fmpz_set_str(m, digits, 10);
    flint_free(digits);
    long e10 = e - (long)nfrac;
    fmpz_set_ui(p, 10);
    if (e10 >= 0) {
        fmpz_pow_ui(p, p, (ulong)e10);
        fmpz_mul(m, m, p);
        fmpq_set_fmpz(out, m);
    } else {
        fmpz_pow_ui(p, p, (ulong)(-e10));
        fmpq_set_fmpz_frac(out, m, p);
    }
    fmpz_clear(m);
    fmpz_clear(p);
    return 0;
}
