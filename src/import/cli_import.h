/* cli_import.h: command-line glue for importers (shardproof import, check --nnscaler). */
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

#endif
