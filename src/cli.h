/* cli.h: the command-line subcommands (everything main.c dispatches to). */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <stddef.h>

#define SP_VERSION "0.1.0"

enum {
    SP_EXIT_EQUIVALENT = 0,
    SP_EXIT_DIFFERENT = 1,
    SP_EXIT_USAGE = 2,
    SP_EXIT_UNKNOWN = 3,
    SP_EXIT_INTERNAL = 4
};

/* FLINT aborts (a FLINT precondition we failed to check) become exit 4 with a message. */
void sp_cli_install_abort_hook(void);

/* SP_FAIL_ALLOC=N / SP_COUNT_ALLOC=1: fail the N-th allocation / count them (tests). */
void sp_cli_install_test_allocator(void);

/* shardproof equiv FILE: decide the queries of an engine query file. */
int sp_cli_equiv(int argc, char **argv);

/* shardproof check FILE [options] / shardproof explain FILE [options]. */
int sp_cli_check(int argc, char **argv, int explain);

/* Does check's option a take a value (next: the argument after it, for optional values)? */
int sp_cli_check_option_valued(const char *a, const char *next);

/* shardproof merge PART.json...: combine the partial reports of check --shard I/N. */
int sp_cli_merge(int argc, char **argv);

/* Read a whole file (or stdin for "-"), NUL-terminated; NULL with errno on failure. */
char *sp_cli_read_file(const char *path, size_t max_bytes, size_t *len);

#endif
