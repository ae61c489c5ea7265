/* cli_import.h: command-line glue for importers (shardproof import, check --nnscaler). */
#ifndef SP_IMPORT_CLI_IMPORT_H
#define SP_IMPORT_CLI_IMPORT_H

/*
 * shardproof import nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp]
 *   argv: the arguments after "import" (argv[0] == "nnscaler").  Writes the generated file to
 *   OUT (or standard output); exit 0, or 2 with "shardproof: error: FILE: PATH: what" on stderr.
 */
int sp_cli_import(int argc, char **argv);

/* 1 if the arguments of check/explain contain --nnscaler. */
int sp_cli_nnscaler_requested(int argc, char **argv);

/*
 * shardproof check --nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp] [check options]
 *   argv: the arguments after "check" (or "explain", explain = 1).  Imports the pair, writes the
 *   file to OUT (default: a temporary file, removed afterwards unless the verdict is not
 *   EQUIVALENT, when its path is printed so that report lines can be looked up) and runs
 *   sp_cli_check on it with the other options.  Returns the check's exit code (2 if the import
 *   fails).
 */
int sp_cli_check_nnscaler(int argc, char **argv, int explain);

/*
 * shardproof torch FILE.py --world N [-o OUT.sp]
 *   argv: the arguments after "torch".  Captures single() and parallel(rank, world) of the
 *   PyTorch file (docs/torch.md) and writes the generated plan file (default: standard output).
 *   Exit 0, 2 (bad input, torch not importable, code the capture cannot represent: the message
 *   names the Python file:line) or 4.
 */
int sp_cli_torch(int argc, char **argv);

/* 1 if the arguments of check/explain contain --torch. */
int sp_cli_torch_requested(int argc, char **argv);

/*
 * shardproof check --torch FILE.py --world N [-o OUT.sp] [check options]
 *   Captures and checks in one step, like check --nnscaler (the generated file is temporary
 *   unless -o is given, and kept, with its path printed, when the verdict is not EQUIVALENT).
 */
int sp_cli_check_torch(int argc, char **argv, int explain);

#endif
