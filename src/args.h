/* args.h: command-line options described by one table: parsing, --help, man page, suggestions. */
#ifndef SP_ARGS_H
#define SP_ARGS_H

#include <stdio.h>

/* What follows an option on the command line. */
typedef enum {
    SP_ARG_NONE = 0, /* a flag */
    SP_ARG_ONE,      /* one value: --opt V, --opt=V, and -xV for a one-letter alias -x */
    SP_ARG_TWO,      /* two values: --opt A B */
    SP_ARG_OPT_NUM   /* an optional number: --opt [N], taken when the next argument is one */
} sp_arg_kind_t;

#define SP_OPT_RESULT 1u /* changes results: a partial report records it for merge */

/*
 * One option.  A command takes the options whose `cmds` mask has its bit; the same entry drives
 * parsing, the command's --help, the man page and "did you mean" suggestions.  A table ends with
 * an entry whose name is NULL.
 */
typedef struct {
    int id;              /* the command's own key (nonzero) */
    const char *name;    /* "--plan" */
    const char *alias;   /* a short form such as "-j", or NULL */
    sp_arg_kind_t arg;
    const char *metavar; /* "NAME"; for SP_ARG_TWO both, "A B" */
    unsigned cmds;       /* bit mask of the commands that take it */
    unsigned flags;      /* SP_OPT_RESULT */
    const char *help;    /* one sentence, for --help and the man page */
} sp_opt_t;

/*
 * A command: main.c's table of commands holds one per subcommand; run gets the arguments after
 * the command's name and returns the exit code.
 */
typedef struct sp_cmd sp_cmd_t;
struct sp_cmd {
    const char *name;      /* "check" */
    unsigned bit;          /* its bit in sp_opt_t.cmds */
    const char *synopsis;  /* what follows "shardproof NAME"; several forms separated by '\n' */
    const char *summary;   /* one line, for the command list */
    const char *details;   /* paragraphs printed after the options by --help (or NULL) */
    const sp_opt_t *opts;  /* the option table (or NULL: no options but --help) */
    int (*run)(const sp_cmd_t *cmd, int argc, char **argv);
};

/* One parsed argument: an option with its values, or a positional argument (opt NULL, val[0]). */
typedef struct {
    const sp_opt_t *opt;
    const char *val[2];
} sp_arg_t;

typedef struct {
    sp_arg_t *a; /* n entries in command-line order */
    int n;
    char **err;  /* nerr usage errors, "unknown option '--seeed' (did you mean '--seed'?)" */
    int nerr;
} sp_args_t;

enum { SP_ARGS_OK = 0, SP_ARGS_HELP = 1 };

/*
 * Parse argv[0..argc) by cmd's table into out (cleared with sp_args_clear after SP_ARGS_OK).
 * "-" is a positional argument (standard input), "--" ends the options.  --help / -h prints the
 * command's help on stdout and gives SP_ARGS_HELP (exit 0; out is already cleared).  An unknown option (with a
 * suggestion when one is close), one the command does not take, or a missing value is recorded
 * in out->err and parsing goes on, so that a command can still find its FILE and --format and
 * put the errors into the report it was asked for.
 */
int sp_args_parse(const sp_cmd_t *cmd, int argc, char **argv, sp_args_t *out);
void sp_args_clear(sp_args_t *a);
/* Record a usage error (printf-style) in a. */
void sp_args_error(sp_args_t *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Print a's errors as "shardproof: error: ..." and a pointer to --help; returns 1 if any. */
int sp_args_report(const sp_cmd_t *cmd, const sp_args_t *a, FILE *f);

/* The option of cmd called name (a long name or an alias, without "=value"), or NULL. */
const sp_opt_t *sp_args_find(const sp_cmd_t *cmd, const char *name);

/* "shardproof check --seeed" -> "--seed": the closest option cmd takes, or NULL. */
const char *sp_args_suggest(const sp_cmd_t *cmd, const char *word);

/* The command's help: synopsis, summary, options, details. */
void sp_cmd_help(const sp_cmd_t *cmd, FILE *f);
/* "usage: shardproof NAME SYNOPSIS" lines only. */
void sp_cmd_usage(const sp_cmd_t *cmd, FILE *f);

/* The list of commands with their synopses and summaries, and the exit codes. */
void sp_cmds_list(const sp_cmd_t *cmds, int ncmds, FILE *f);

/* The whole CLI as a man page section 1 (troff), from the commands' tables. */
void sp_cmds_man(const sp_cmd_t *cmds, int ncmds, const char *version, FILE *f);

#endif
