/* main.c: the shardproof command line: the table of commands and the dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "gen/gen.h"
#include "import/cli_import.h"
#include "ref/ref.h"

static int version_cmd(const sp_cmd_t *cmd, int argc, char **argv);
static int help_cmd(const sp_cmd_t *cmd, int argc, char **argv);

static const sp_opt_t help_opts[] = {
    {1, "--man", NULL, SP_ARG_NONE, NULL, SP_CMD_HELP, 0,
     "the manual page (troff) of every command, generated from the option tables"},
    {0, NULL, NULL, SP_ARG_NONE, NULL, 0, 0, NULL}};

/*
 * The commands, in the order of the usage text.  A new command is one entry here (and its
 * options in a table with its bit, cli.h); its --help, the usage text and the man page follow.
 */
static const sp_cmd_t commands[] = {
    {"check", SP_CMD_CHECK,
     "FILE [options]\n--nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp] [options]\n"
     "--torch FILE.py --world N [-o OUT.sp] [options]",
     "prove that the plan computes what the model computes (exit 0), or show where it does not "
     "(exit 1)",
     "FILE '-' reads standard input.  With --shard I/N, check writes a partial report (JSON) for\n"
     "merge.  docs/tutorial.md walks through a first plan; docs/guide.md describes the reports.\n",
     sp_cli_opts, sp_cli_check},
    {"explain", SP_CMD_EXPLAIN, "FILE [options]",
     "print the reduced shapes, cut points and stages without proving", NULL, sp_cli_opts,
     sp_cli_check},
    {"smt2", SP_CMD_SMT2, "FILE DIR [options]",
     "write every stage's query as SMT-LIB2 (QF_UFNRA; unsat means equal) into DIR, created "
     "when missing, for Z3 or cvc5",
     NULL, sp_cli_opts, sp_cli_check},
    {"merge", SP_CMD_MERGE, "PART.json... [options]",
     "combine the partial reports of check --shard I/N into the report of the whole check",
     "The input file and the result-changing options come from the partial reports.\n",
     sp_cli_opts, sp_cli_merge},
    {"equiv", SP_CMD_EQUIV, "FILE [options]",
     "decide each query 'LHS == RHS' (or '[a, b] == [c, d]') of FILE exactly",
     "A query per line, '#' starts a comment.  A line with a syntax error is reported (one\n"
     "file:line:col each) and the next query is decided; the exit code is then 2.\n",
     sp_cli_opts, sp_cli_equiv},
    {"import", SP_CMD_IMPORT, "nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp] [options]",
     "convert a pair of nnScaler plans (TrainVerify's tvplan JSON) into a model and a plan "
     "(docs/nnscaler.md)",
     NULL, sp_cli_opts, sp_cli_import},
    {"torch", SP_CMD_TORCH, "FILE.py --world N [-o OUT.sp]",
     "capture a PyTorch file's single-device step single() and distributed step "
     "parallel(rank, world) and write the plan file (docs/torch.md)",
     "The capture runs Debian's /usr/bin/python3 (or $SHARDPROOF_PYTHON), which must import\n"
     "torch (make deps-torch).  Generated lines carry '#@ FILE.py:LINE' comments, which\n"
     "reports print next to plan and model lines.  'check --torch FILE.py --world N' captures\n"
     "and checks.\n",
     sp_cli_opts, sp_cli_torch},
    {"gen", SP_CMD_GEN, "llama3|deepseek3 [options]",
     "write a model and a parallel plan of a built-in family (docs/workloads.md)",
     "'... | shardproof check -' verifies the generated file.\n", sp_gen_opts, sp_gen_main},
    {"run", SP_CMD_RUN, "FILE [options]",
     "run the model and every rank of the plan on seeded exact inputs with the independent "
     "reference executor and compare every output element (docs/reference-executor.md)",
     "Exit codes: 0 AGREE, 1 DIFFER (with rank, element, values and inputs), 2 bad input, 3\n"
     "UNDECIDED (overlapping balls only) or TOO LARGE.\n",
     sp_ref_opts, sp_ref_cli},
    {"ops", SP_CMD_OPS, "[--markdown]",
     "list the operators: tensors, attributes, semantics, gradient (docs/operators.md)", NULL,
     sp_ops_opts, sp_cli_ops},
    {"version", 0, "", "print the version", NULL, NULL, version_cmd},
    {"help", SP_CMD_HELP, "[COMMAND]", "the help of a command, or this list", NULL, help_opts,
     help_cmd},
};

#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const sp_cmd_t *find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static void usage(FILE *f) { sp_cmds_list(commands, NCOMMANDS, f); }

static int version_cmd(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    if (A.nerr == 0 && A.n > 0)
        sp_args_error(&A, "unexpected argument '%s'", A.a[0].val[0]);
    int bad = sp_args_report(cmd, &A, stderr);
    sp_args_clear(&A);
    if (bad)
        return SP_EXIT_USAGE;
    printf("shardproof %s\n", SP_VERSION);
    return 0;
}

static int help_cmd(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    int man = 0, npos = 0;
    const sp_cmd_t *about = NULL;
    for (int i = 0; i < A.n; i++) {
        const char *v = A.a[i].val[0];
        if (A.a[i].opt)
            man = 1;
        else if (npos++ > 0)
            sp_args_error(&A, "unexpected argument '%s'", v);
        else if ((about = find_command(v)) == NULL)
            sp_args_error(&A, "unknown command '%s'", v);
    }
    int bad = sp_args_report(cmd, &A, stderr);
    sp_args_clear(&A);
    if (bad)
        return SP_EXIT_USAGE;
    if (man)
        sp_cmds_man(commands, NCOMMANDS, SP_VERSION, stdout);
    else if (about)
        sp_cmd_help(about, stdout);
    else
        usage(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    sp_cli_install_abort_hook();
    sp_cli_install_allocator();
    if (argc < 2) {
        usage(stderr);
        return SP_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        name = "help";
    else if (!strcmp(name, "--version"))
        name = "version";
    const sp_cmd_t *cmd = find_command(name);
    if (cmd != NULL)
        return cmd->run(cmd, argc - 2, argv + 2);
    const char *names[NCOMMANDS];
    for (int i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i].name;
    const char *s = sp_suggest(name, names, NCOMMANDS, 2);
    if (s)
        fprintf(stderr, "shardproof: error: unknown command '%s' (did you mean '%s'?)\n", name, s);
    else
        fprintf(stderr, "shardproof: error: unknown command '%s'\n", name);
    usage(stderr);
    return SP_EXIT_USAGE;
}
