/* cli_import.c: command-line glue for importers (shardproof import, check --nnscaler). */
#include "cli_import.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <flint/flint.h>

#include "cli.h"
#include "import/nnscaler.h"

static int write_file(const char *path, const char *text)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "shardproof: error: %s: cannot write: %s\n", path, strerror(errno));
        return 0;
    }
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    if (f != stdout)
        ok = (fclose(f) == 0) && ok;
    else
        ok = (fflush(f) == 0) && ok;
    if (!ok)
        fprintf(stderr, "shardproof: error: %s: write failed\n", path);
    return ok;
}

static void import_usage(void)
{
    fprintf(stderr, "usage: shardproof import nnscaler LOGICAL.json PARALLEL.json [-o OUT.sp]\n"
                    "                                   [--autograd-sum | --trainverify-chunk-rule]\n");
}

/* The importer's own options, shared by import and check --nnscaler: 1 if argv[*i] was one
   (consumed, with its value), 0 if not, -1 after an error message. */
static int import_option(int argc, char **argv, int *i, int *flags, const char **out)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--trainverify-chunk-rule")) {
        *flags |= SP_NNSCALER_TV_CHUNK_RULE;
    } else if (!strcmp(a, "--autograd-sum")) {
        *flags |= SP_NNSCALER_AUTOGRAD_SUM;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "shardproof: error: %s needs a file name\n", a);
            return -1;
        }
        *out = argv[++*i];
    } else {
        return 0;
    }
    return 1;
}

int sp_cli_import(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "nnscaler") != 0) {
        if (argc >= 1)
            fprintf(stderr, "shardproof: error: unknown import format '%s' (nnscaler)\n", argv[0]);
        import_usage();
        return SP_EXIT_USAGE;
    }
    const char *files[2] = {NULL, NULL}, *out = "-";
    int nf = 0, flags = 0;
    for (int i = 1; i < argc; i++) {
        int o = import_option(argc, argv, &i, &flags, &out);
        if (o < 0)
            return SP_EXIT_USAGE;
        if (o > 0)
            continue;
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "shardproof: error: unknown option '%s'\n", argv[i]);
            import_usage();
            return SP_EXIT_USAGE;
        } else if (nf < 2) {
            files[nf++] = argv[i];
        } else {
            fprintf(stderr, "shardproof: error: unexpected argument '%s'\n", argv[i]);
            import_usage();
            return SP_EXIT_USAGE;
        }
    }
    if (nf != 2) {
        fprintf(stderr, "shardproof: error: import nnscaler needs the logical and the parallel "
                        "plan\n");
        import_usage();
        return SP_EXIT_USAGE;
    }
    char err[4096], *text = NULL;
    if (sp_nnscaler_import_ex(files[0], files[1], flags, &text, err, sizeof err) != 0) {
        fprintf(stderr, "shardproof: error: %s\n", err);
        return SP_EXIT_USAGE;
    }
    int ok = write_file(out, text);
    flint_free(text);
    return ok ? 0 : SP_EXIT_USAGE;
}

int sp_cli_nnscaler_requested(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--nnscaler"))
            return 1;
    return 0;
}

int sp_cli_check_nnscaler(int argc, char **argv, int explain)
{
    const char *files[2] = {NULL, NULL}, *out = NULL;
    char **rest = flint_calloc((size_t)argc + 2, sizeof(char *));
    int nrest = 1, have = 0, flags = 0, o;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--nnscaler")) {
            if (i + 2 >= argc || have) {
                fprintf(stderr, "shardproof: error: --nnscaler takes LOGICAL.json PARALLEL.json "
                                "(once)\n");
                flint_free(rest);
                return SP_EXIT_USAGE;
            }
            files[0] = argv[++i];
            files[1] = argv[++i];
            have = 1;
        } else if ((o = import_option(argc, argv, &i, &flags, &out)) != 0) {
            if (o < 0) {
                flint_free(rest);
                return SP_EXIT_USAGE;
            }
        } else if (argv[i][0] != '-') {
            fprintf(stderr, "shardproof: error: check --nnscaler takes no FILE ('%s')\n", argv[i]);
            flint_free(rest);
            return SP_EXIT_USAGE;
        } else {
            rest[nrest++] = argv[i];
            if (i + 1 < argc && sp_cli_check_option_valued(argv[i], argv[i + 1]))
                rest[nrest++] = argv[++i];
        }
    }
    if (!have) {
        fprintf(stderr, "shardproof: error: --nnscaler LOGICAL.json PARALLEL.json is missing\n");
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    char err[4096], *text = NULL;
    if (sp_nnscaler_import_ex(files[0], files[1], flags, &text, err, sizeof err) != 0) {
        fprintf(stderr, "shardproof: error: %s\n", err);
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    char dir[64] = "", path[4096];
    if (out) {
        snprintf(path, sizeof path, "%s", out);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/shardproof-nnscaler-XXXXXX",
                 tmp && *tmp && strlen(tmp) < 30 ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL) {
            fprintf(stderr, "shardproof: error: cannot create a temporary directory: %s\n",
                    strerror(errno));
            flint_free(text);
            flint_free(rest);
            return SP_EXIT_USAGE;
        }
        /* the parallel file's base name, .json replaced by .sp */
        const char *b = strrchr(files[1], '/');
        b = b ? b + 1 : files[1];
        size_t n = strlen(b);
        if (n > 5 && !strcmp(b + n - 5, ".json"))
            n -= 5;
        snprintf(path, sizeof path, "%s/%.*s.sp", dir, (int)(n > 200 ? 200 : n), b);
    }
    int ok = write_file(path, text);
    flint_free(text);
    if (!ok) {
        if (dir[0])
            rmdir(dir);
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    rest[0] = path;
    int rc = sp_cli_check(nrest, rest, explain);
    if (!out) {
        if (rc == 0 || explain) {
            unlink(path);
            rmdir(dir);
        } else {
            fprintf(stderr, "shardproof: the generated plan file is kept at %s\n", path);
        }
    }
    flint_free(rest);
    return rc;
}
