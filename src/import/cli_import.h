/* cli_import.h: command-line glue for importers (import, torch, check --nnscaler/--torch). */
#ifndef SP_IMPORT_CLI_IMPORT_H
#define SP_IMPORT_CLI_IMPORT_H

#include <stddef.h>

#include "args.h"

/*
 * shardproof import nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp] [--autograd-sum |
 * --trainverify-chunk-rule]: argv holds the arguments after "import".  Writes the generated file
 * to OUT (or standard output); exit 0, or 2 with "shardproof: error: FILE: PATH: what" on stderr.
 */
int sp_cli_import(const sp_cmd_t *cmd, int argc, char **argv);

/*
 * check --nnscaler: import the pair (flags SP_NNSCALER_*) and write the plan file to out, or, when
 * out is NULL, to a new temporary directory (its name in dir, dirlen bytes, "" otherwise).  The
 * written file's path goes to path.  Returns 1, or 0 with a message in err.
 */
int sp_cli_nnscaler_to_file(const char *logical, const char *parallel, int flags, const char *out,
                            char *path, size_t pathlen, char *dir, size_t dirlen, char *err,
                            size_t errlen);

/*
 * shardproof torch FILE.py --world N [-o OUT.sp]: argv holds the arguments after "torch".
 * Captures single() and parallel(rank, world) of the PyTorch file (docs/torch.md) and writes the
 * generated plan file (default: standard output, written only after a successful capture).
 * Exit 0, 2 (bad input, torch not importable, code the capture cannot represent: the message
 * names the Python file:line) or 4.
 */
int sp_cli_torch(const sp_cmd_t *cmd, int argc, char **argv);

/*
 * check --torch: capture FILE.py with a world of N ranks and write the plan file to out, or,
 * when out is NULL, to a new temporary directory, as sp_cli_nnscaler_to_file.  Returns 0, or the
 * exit code (2 bad input, 4 internal) with a message in err (the capture's own messages are on
 * stderr already).
 */
int sp_cli_torch_to_file(const char *file, int world, const char *out, char *path, size_t pathlen,
                         char *dir, size_t dirlen, char *err, size_t errlen);

/* --world N of torch and check --torch: N (1 to SP_TORCH_MAX_WORLD), or -1 after a usage error. */
int sp_cli_world_arg(sp_args_t *A, const sp_arg_t *a);

#endif
