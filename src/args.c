/* args.c: command-line options described by one table: parsing, --help, man page, suggestions. */
#include "args.h"

#include <flint/flint.h>
#include <stdarg.h>
#include <string.h>

#include "diag.h"
#include "sbuf.h"

static int takes(const sp_cmd_t *cmd, const sp_opt_t *o) { return (o->cmds & cmd->bit) != 0; }

static const sp_opt_t *find_any(const sp_opt_t *t, const char *name)
{
    for (; t && t->name; t++)
        if (!strcmp(t->name, name) || (t->alias && !strcmp(t->alias, name)))
            return t;
    return NULL;
}

const sp_opt_t *sp_args_find(const sp_cmd_t *cmd, const char *name)
{
    for (const sp_opt_t *t = cmd->opts; t && t->name; t++)
        if (takes(cmd, t) && (!strcmp(t->name, name) || (t->alias && !strcmp(t->alias, name))))
            return t;
    return NULL;
}

const char *sp_args_suggest(const sp_cmd_t *cmd, const char *word)
{
    const char *names[256];
    size_t n = 0;
    names[n++] = "--help";
    for (const sp_opt_t *t = cmd->opts; t && t->name && n < 256; t++)
        if (takes(cmd, t))
            names[n++] = t->name;
    size_t len = strlen(word);
    return sp_suggest(word, names, n, len <= 5 ? 1 : len <= 10 ? 2 : 3);
}

void sp_cmd_usage(const sp_cmd_t *cmd, FILE *f)
{
    const char *p = cmd->synopsis ? cmd->synopsis : "";
    int first = 1;
    do {
        size_t n = strcspn(p, "\n");
        fprintf(f, "%s shardproof %s%s%.*s\n", first ? "usage:" : "      ", cmd->name, n ? " " : "",
                (int)n, p);
        first = 0;
        p += n;
    } while (*p && *++p);
}

/* The left column of an option: "-j, --jobs N". */
static void opt_left(const sp_opt_t *o, char *buf, size_t len)
{
    const char *mv = o->metavar ? o->metavar : "";
    const char *fmt = o->arg == SP_ARG_NONE ? "%s%s%s%s" : o->arg == SP_ARG_OPT_NUM ? "%s%s%s [%s]"
                                                                                    : "%s%s%s %s";
    snprintf(buf, len, fmt, o->alias ? o->alias : "", o->alias ? ", " : "", o->name, mv);
}

/* text, wrapped at width columns, continuation lines indented by indent */
static void wrap(FILE *f, const char *text, int col, int indent, int width)
{
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (col > indent && col + 1 + (int)w > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

void sp_cmd_help(const sp_cmd_t *cmd, FILE *f)
{
    sp_cmd_usage(cmd, f);
    if (cmd->summary)
        fprintf(f, "\n%s\n", cmd->summary);
    fprintf(f, "\noptions:\n");
    int width = 0;
    char left[128];
    for (const sp_opt_t *t = cmd->opts; t && t->name; t++)
        if (takes(cmd, t)) {
            opt_left(t, left, sizeof left);
            int n = (int)strlen(left);
            if (n > width && n <= 30)
                width = n;
        }
    if (width < 10)
        width = 10;
    for (const sp_opt_t *t = cmd->opts; t && t->name; t++) {
        if (!takes(cmd, t))
            continue;
        opt_left(t, left, sizeof left);
        int n = (int)strlen(left);
        if (n > width)
            fprintf(f, "  %s\n%*s", left, width + 4, "");
        else
            fprintf(f, "  %-*s  ", width, left);
        wrap(f, t->help ? t->help : "", width + 4, width + 4, 100);
    }
    fprintf(f, "  %-*s  %s\n", width, "-h, --help", "this help");
    if (cmd->details)
        fprintf(f, "\n%s", cmd->details);
}

void sp_args_error(sp_args_t *a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    a->err = flint_realloc(a->err, (size_t)(a->nerr + 1) * sizeof(char *));
    a->err[a->nerr++] = sp_strdup(buf);
}

int sp_args_report(const sp_cmd_t *cmd, const sp_args_t *a, FILE *f)
{
    for (int i = 0; i < a->nerr; i++)
        fprintf(f, "shardproof: error: %s\n", a->err[i]);
    if (a->nerr)
        fprintf(f, "(shardproof %s --help lists the options)\n", cmd->name);
    return a->nerr > 0;
}

void sp_cmds_list(const sp_cmd_t *cmds, int ncmds, FILE *f)
{
    fprintf(f, "usage: shardproof COMMAND [ARGS]   (shardproof COMMAND --help: its options)\n\n"
               "commands:\n");
    for (int i = 0; i < ncmds; i++) {
        const char *syn = cmds[i].synopsis ? cmds[i].synopsis : "";
        int n = (int)strcspn(syn, "\n");
        fprintf(f, "  %s%s%.*s\n        ", cmds[i].name, n ? " " : "", n, syn);
        wrap(f, cmds[i].summary ? cmds[i].summary : "", 8, 8, 100);
    }
    fprintf(f, "\nexit codes: 0 equivalent, 1 not equivalent, 2 bad input or usage,\n"
               "            3 unknown or limit hit, 4 internal error\n");
}

static int is_number(const char *s) { return s && s[0] >= '0' && s[0] <= '9'; }

int sp_args_parse(const sp_cmd_t *cmd, int argc, char **argv, sp_args_t *out)
{
    memset(out, 0, sizeof(*out));
    out->a = flint_calloc((size_t)argc + 1, sizeof(sp_arg_t));
    int only_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        sp_arg_t *r = &out->a[out->n];
        if (only_positional || a[0] != '-' || a[1] == 0) {
            r->val[0] = a;
            out->n++;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_positional = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            sp_cmd_help(cmd, stdout);
            sp_args_clear(out);
            return SP_ARGS_HELP;
        }
        /* --name=value; -xVALUE for a one-letter alias */
        char name[128];
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL, *attached = NULL;
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), a);
        if (eq)
            attached = eq + 1;
        const sp_opt_t *o = sp_args_find(cmd, name);
        if (o == NULL && a[1] != '-' && a[2] != 0) {
            char shortname[3] = {'-', a[1], 0};
            o = sp_args_find(cmd, shortname);
            if (o && o->arg != SP_ARG_NONE)
                attached = a + 2;
            else
                o = NULL;
        }
        if (o == NULL) {
            const char *s = sp_args_suggest(cmd, name);
            if (find_any(cmd->opts, name))
                sp_args_error(out, "%s is not an option of %s", name, cmd->name);
            else if (s)
                sp_args_error(out, "unknown option '%s' (did you mean '%s'?)", name, s);
            else
                sp_args_error(out, "unknown option '%s'", name);
            continue;
        }
        r->opt = o;
        switch (o->arg) {
        case SP_ARG_NONE:
            if (attached) {
                sp_args_error(out, "%s takes no value", o->name);
                continue;
            }
            break;
        case SP_ARG_ONE:
            if (attached == NULL && i + 1 < argc)
                attached = argv[++i];
            if (attached == NULL) {
                sp_args_error(out, "%s needs a value (%s)", o->name, o->metavar);
                continue;
            }
            r->val[0] = attached;
            break;
        case SP_ARG_TWO:
            if (attached || i + 2 >= argc) {
                sp_args_error(out, "%s takes two values (%s)", o->name, o->metavar);
                i = argc;
                continue;
            }
            r->val[0] = argv[++i];
            r->val[1] = argv[++i];
            break;
        case SP_ARG_OPT_NUM:
            if (attached == NULL && i + 1 < argc && is_number(argv[i + 1]))
                attached = argv[++i];
            r->val[0] = attached;
            break;
        }
        out->n++;
    }
    return SP_ARGS_OK;
}

void sp_args_clear(sp_args_t *a)
{
    for (int i = 0; i < a->nerr; i++)
        flint_free(a->err[i]);
    flint_free(a->err);
    flint_free(a->a);
    memset(a, 0, sizeof(*a));
}

/* ---- the man page ---------------------------------------------------------------------- */

/* text as troff: backslashes and a leading dot or quote escaped, '-' as \- in option names */
static void roff(FILE *f, const char *s, int dashes)
{
    int bol = 1;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", f);
        bol = *s == '\n';
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-' && dashes)
            fputs("\\-", f);
        else
            fputc(*s, f);
    }
}

void sp_cmds_man(const sp_cmd_t *cmds, int ncmds, const char *version, FILE *f)
{
    fprintf(f, ".\\\" shardproof.1: generated by 'shardproof help --man' from the option tables;\n"
               ".\\\" make check fails when it differs from the binary's.\n");
    fprintf(f, ".TH SHARDPROOF 1 \"\" \"shardproof %s\" \"User Commands\"\n", version);
    fprintf(f, ".SH NAME\nshardproof \\- prove a parallel deep-learning execution plan equivalent "
               "to its single-device model\n");
    fprintf(f, ".SH SYNOPSIS\n");
    for (int c = 0; c < ncmds; c++) {
        const char *p = cmds[c].synopsis ? cmds[c].synopsis : "";
        do {
            size_t n = strcspn(p, "\n");
            fprintf(f, ".B shardproof %s\n", cmds[c].name);
            if (n) {
                char line[512];
                snprintf(line, sizeof line, "%.*s", (int)n, p);
                roff(f, line, 1);
                fputc('\n', f);
            }
            fprintf(f, ".br\n");
            p += n;
        } while (*p && *++p);
    }
    fprintf(f, ".SH DESCRIPTION\n"
               "shardproof reads a file holding a single-device model and one or more parallel plans "
               "of it (data, tensor, sequence, context, pipeline and expert parallelism, "
               "micro-batching, ZeRO) and proves, exactly over the rationals, that the plan computes "
               "what the model computes, element by element on every rank; or it reports the first "
               "diverging stage with its plan line, rank, element and a certified counterexample.\n"
               ".PP\nThe plan language is described in docs/language.md, the commands in "
               "docs/guide.md and docs/tutorial.md.\n");
    fprintf(f, ".SH COMMANDS\n");
    for (int c = 0; c < ncmds; c++) {
        const sp_cmd_t *cmd = &cmds[c];
        fprintf(f, ".SS %s\n", cmd->name);
        if (cmd->summary) {
            roff(f, cmd->summary, 0);
            fputc('\n', f);
        }
        if (cmd->details) {
            fprintf(f, ".PP\n");
            roff(f, cmd->details, 0);
        }
        for (const sp_opt_t *t = cmd->opts; t && t->name; t++) {
            if (!takes(cmd, t))
                continue;
            char left[128];
            opt_left(t, left, sizeof left);
            fprintf(f, ".TP\n.B ");
            roff(f, left, 1);
            fputc('\n', f);
            roff(f, t->help ? t->help : "", 0);
            fputc('\n', f);
        }
    }
    fprintf(f, ".SH EXIT STATUS\n.TP\n0\nequivalent (or success)\n.TP\n1\nnot equivalent\n"
               ".TP\n2\nbad input or usage\n.TP\n3\nunknown, or a limit was hit\n.TP\n4\n"
               "internal error\n");
    fprintf(f, ".SH SEE ALSO\ndocs/tutorial.md, docs/guide.md, docs/language.md, "
               "docs/operators.md, docs/soundness.md in the shardproof sources.\n");
}
