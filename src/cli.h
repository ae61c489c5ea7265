/* cli.h: the command-line subcommands (everything main.c dispatches to). */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <stddef.h>

#include "../include/shardproof.h"
#include "args.h"

#define SP_VERSION SHARDPROOF_VERSION

enum {
    SP_EXIT_EQUIVALENT = 0,
    SP_EXIT_DIFFERENT = 1,
    SP_EXIT_USAGE = 2,
    SP_EXIT_UNKNOWN = 3,
    SP_EXIT_INTERNAL = 4
};

/* The commands' bits in the option tables (sp_opt_t.cmds). */
enum {
    SP_CMD_CHECK = 1u << 0,
    SP_CMD_EXPLAIN = 1u << 1,
    SP_CMD_SMT2 = 1u << 2,
    SP_CMD_MERGE = 1u << 3,
    SP_CMD_EQUIV = 1u << 4,
    SP_CMD_IMPORT = 1u << 5,
    SP_CMD_GEN = 1u << 6,
    SP_CMD_OPS = 1u << 7,
    SP_CMD_HELP = 1u << 8,
    SP_CMD_TORCH = 1u << 9,
    SP_CMD_RUN = 1u << 10
};

/* The option table of check, explain, smt2, merge, equiv, import and torch. */
extern const sp_opt_t sp_cli_opts[];

/* FLINT aborts become UNKNOWN `limit memory` (exit 3) after a failed allocation, else exit 4
   (a FLINT precondition we failed to check), with a message. */
void sp_cli_install_abort_hook(void);

/* FLINT's and GMP's allocators, which note a failed allocation (a resource limit: exit 3);
   SP_FAIL_ALLOC=N / SP_COUNT_ALLOC=1: fail the N-th allocation / count them (tests). */
void sp_cli_install_allocator(void);
/* The report to write on standard output if an allocation fails during a check: format, file
   and options (a document for every outcome: UNKNOWN `limit memory`). */
void sp_cli_oom_document(const shardproof_options_t *opt, shardproof_format_t fmt,
                         const char *file);

/* shardproof equiv FILE: decide the queries of an engine query file. */
int sp_cli_equiv(const sp_cmd_t *cmd, int argc, char **argv);

/* shardproof check FILE [options] (also check --nnscaler L P, check --torch F.py --world N),
   explain, smt2 FILE DIR. */
int sp_cli_check(const sp_cmd_t *cmd, int argc, char **argv);

/* shardproof merge PART.json...: combine the partial reports of check --shard I/N. */
int sp_cli_merge(const sp_cmd_t *cmd, int argc, char **argv);

/* shardproof ops [--markdown]: the operator reference (docs/operators.md); cli_ops.c. */
int sp_cli_ops(const sp_cmd_t *cmd, int argc, char **argv);
extern const sp_opt_t sp_ops_opts[];

/* Read a whole file (or stdin for "-"), NUL-terminated; NULL with errno on failure. */
char *sp_cli_read_file(const char *path, size_t max_bytes, size_t *len);

#endif
