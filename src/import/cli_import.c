/* cli_import.c: command-line glue for importers (import, check --nnscaler, torch, check --torch). */
#include "cli_import.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <flint/flint.h>

#include "cli.h"
#include "import/nnscaler.h"
#include "import/torch.h"

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

/*
 * A temporary directory (dir) and the path of a generated file BASE.sp in it, BASE the base name
 * of src without its extension ext.  0 after an error message.
 */
static int temp_plan_path(const char *kind, const char *src, const char *ext, char *dir,
                          size_t dlen, char *path, size_t plen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dlen, "%s/shardproof-%s-XXXXXX", tmp && *tmp && strlen(tmp) < 30 ? tmp : "/tmp",
             kind);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "shardproof: error: cannot create a temporary directory: %s\n",
                strerror(errno));
        dir[0] = 0;
        return 0;
    }
    const char *b = strrchr(src, '/');
    b = b ? b + 1 : src;
    size_t n = strlen(b), e = strlen(ext);
    if (n > e && !strcmp(b + n - e, ext))
        n -= e;
    snprintf(path, plen, "%s/%.*s.sp", dir, (int)(n > 200 ? 200 : n), b);
    return 1;
}

/*
 * check (or explain) a generated file at path with the other options rest[1..nrest); a
 * temporary file (dir non-empty) is removed when the verdict is EQUIVALENT, else kept and named.
 */
static int check_generated(char **rest, int nrest, const char *path, const char *dir, int explain)
{
    rest[0] = (char *)path;
    int rc = sp_cli_check(nrest, rest, explain);
    if (dir[0]) {
        if (rc == 0 || explain) {
            unlink(path);
            rmdir(dir);
        } else {
            fprintf(stderr, "shardproof: the generated plan file is kept at %s\n", path);
        }
    }
    return rc;
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
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else if (!temp_plan_path("nnscaler", files[1], ".json", dir, sizeof dir, path, sizeof path)) {
        flint_free(text);
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    int ok = write_file(path, text);
    flint_free(text);
    if (!ok) {
        if (dir[0])
            rmdir(dir);
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    int rc = check_generated(rest, nrest, path, dir, explain);
    flint_free(rest);
    return rc;
}

/* --world N: 1 and the value, 0 (not --world), -1 after an error message. */
static int world_option(int argc, char **argv, int *i, int *world)
{
    if (strcmp(argv[*i], "--world") != 0)
        return 0;
    char *end;
    long w = *i + 1 < argc ? strtol(argv[*i + 1], &end, 10) : 0;
    if (*i + 1 >= argc || *end != 0 || w < 1 || w > 64) {
        fprintf(stderr, "shardproof: error: --world needs a number of ranks from 1 to 64\n");
        return -1;
    }
    *world = (int)w;
    ++*i;
    return 1;
}

static void torch_usage(void)
{
    fprintf(stderr, "usage: shardproof torch FILE.py --world N [-o OUT.sp]\n"
                    "       shardproof check --torch FILE.py --world N [-o OUT.sp] [check options]\n");
}

/* The capture's exit code as the CLI's, its message printed. */
static int torch_run(const char *file, int world, const char *out)
{
    char err[1024] = "";
    int rc = sp_torch_capture(file, world, out, err, sizeof err);
    if (rc != 0 && err[0])
        fprintf(stderr, "shardproof: %s: %s\n", rc == 2 ? "error" : "internal error", err);
    return rc == 0 ? 0 : rc == 2 ? SP_EXIT_USAGE : SP_EXIT_INTERNAL;
}

int sp_cli_torch(int argc, char **argv)
{
    const char *file = NULL, *out = "-";
    int world = 0, o;
    for (int i = 0; i < argc; i++) {
        if ((o = world_option(argc, argv, &i, &world)) != 0) {
            if (o < 0)
                return SP_EXIT_USAGE;
        } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "shardproof: error: %s needs a file name\n", argv[i]);
                return SP_EXIT_USAGE;
            }
            out = argv[++i];
        } else if (argv[i][0] == '-' || file != NULL) {
            fprintf(stderr, "shardproof: error: unexpected argument '%s'\n", argv[i]);
            torch_usage();
            return SP_EXIT_USAGE;
        } else {
            file = argv[i];
        }
    }
    if (file == NULL || world == 0) {
        fprintf(stderr, "shardproof: error: torch needs FILE.py and --world N\n");
        torch_usage();
        return SP_EXIT_USAGE;
    }
    if (strcmp(out, "-") != 0)
        return torch_run(file, world, out);
    /* standard output: through a temporary file, so that a failed capture writes nothing */
    char dir[64], path[4096];
    if (!temp_plan_path("torch", file, ".py", dir, sizeof dir, path, sizeof path))
        return SP_EXIT_USAGE;
    int rc = torch_run(file, world, path);
    if (rc == 0) {
        size_t len;
        char *text = sp_cli_read_file(path, (size_t)1 << 30, &len);
        if (text == NULL || fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "shardproof: error: cannot copy the generated file to standard "
                            "output\n");
            rc = SP_EXIT_USAGE;
        }
        flint_free(text);
    }
    unlink(path);
    rmdir(dir);
    return rc;
}

int sp_cli_torch_requested(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--torch"))
            return 1;
    return 0;
}

int sp_cli_check_torch(int argc, char **argv, int explain)
{
    const char *file = NULL, *out = NULL;
    char **rest = flint_calloc((size_t)argc + 2, sizeof(char *));
    int nrest = 1, world = 0, o, rc;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--torch")) {
            if (i + 1 >= argc || file != NULL) {
                fprintf(stderr, "shardproof: error: --torch takes FILE.py (once)\n");
                flint_free(rest);
                return SP_EXIT_USAGE;
            }
            file = argv[++i];
        } else if ((o = world_option(argc, argv, &i, &world)) != 0) {
            if (o < 0) {
                flint_free(rest);
                return SP_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "shardproof: error: %s needs a file name\n", argv[i]);
                flint_free(rest);
                return SP_EXIT_USAGE;
            }
            out = argv[++i];
        } else if (argv[i][0] != '-') {
            fprintf(stderr, "shardproof: error: check --torch takes no FILE ('%s')\n", argv[i]);
            flint_free(rest);
            return SP_EXIT_USAGE;
        } else {
            rest[nrest++] = argv[i];
            if (i + 1 < argc && sp_cli_check_option_valued(argv[i], argv[i + 1]))
                rest[nrest++] = argv[++i];
        }
    }
    if (file == NULL || world == 0) {
        fprintf(stderr, "shardproof: error: check --torch needs FILE.py and --world N\n");
        torch_usage();
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    char dir[64] = "", path[4096];
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else if (!temp_plan_path("torch", file, ".py", dir, sizeof dir, path, sizeof path)) {
        flint_free(rest);
        return SP_EXIT_USAGE;
    }
    rc = torch_run(file, world, path);
    if (rc != 0) {
        if (dir[0]) {
            unlink(path);
            rmdir(dir);
        }
        flint_free(rest);
        return rc;
    }
    rc = check_generated(rest, nrest, path, dir, explain);
    flint_free(rest);
    return rc;
}
