/* cli_import.c: command-line glue for importers (import, torch, check --nnscaler/--torch). */
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

static int write_file(const char *path, const char *text, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return 0;
    }
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    if (f != stdout)
        ok = (fclose(f) == 0) && ok;
    else
        ok = (fflush(f) == 0) && ok;
    if (!ok)
        snprintf(err, errlen, "%s: write failed", path);
    return ok;
}

int sp_cli_import(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    const char *pos[3] = {NULL, NULL, NULL}, *out = "-";
    int npos = 0, flags = 0;
    for (int i = 0; i < A.n; i++) {
        const sp_arg_t *a = &A.a[i];
        if (a->opt == NULL) {
            if (npos < 3)
                pos[npos] = a->val[0];
            else
                sp_args_error(&A, "unexpected argument '%s'", a->val[0]);
            npos++;
        } else if (!strcmp(a->opt->name, "--output")) {
            out = a->val[0];
        } else if (!strcmp(a->opt->name, "--autograd-sum")) {
            flags |= SP_NNSCALER_AUTOGRAD_SUM;
        } else if (!strcmp(a->opt->name, "--trainverify-chunk-rule")) {
            flags |= SP_NNSCALER_TV_CHUNK_RULE;
        }
    }
    if (A.nerr == 0 && (npos < 1 || strcmp(pos[0], "nnscaler") != 0))
        sp_args_error(&A, npos ? "unknown import format '%s' (nnscaler)"
                               : "import needs a format (nnscaler)%s", npos ? pos[0] : "");
    else if (A.nerr == 0 && npos != 3)
        sp_args_error(&A, "import nnscaler needs the logical and the parallel plan");
    if (sp_args_report(cmd, &A, stderr)) {
        sp_args_clear(&A);
        return SP_EXIT_USAGE;
    }
    sp_args_clear(&A);
    char err[4096], *text = NULL;
    if (sp_nnscaler_import_ex(pos[1], pos[2], flags, &text, err, sizeof err) != 0) {
        fprintf(stderr, "shardproof: error: %s\n", err);
        return SP_EXIT_USAGE;
    }
    int ok = write_file(out, text, err, sizeof err);
    if (!ok)
        fprintf(stderr, "shardproof: error: %s\n", err);
    flint_free(text);
    return ok ? 0 : SP_EXIT_USAGE;
}

/*
 * Where a generated plan file goes: out, or, when out is NULL, BASE.sp in a new temporary
 * directory (its name in dir, "" otherwise), BASE the base name of src without its extension
 * ext.  Returns 1, or 0 with a message in err.
 */
static int generated_path(const char *kind, const char *src, const char *ext, const char *out,
                          char *path, size_t pathlen, char *dir, size_t dirlen, char *err,
                          size_t errlen)
{
    dir[0] = 0;
    if (out) {
        snprintf(path, pathlen, "%s", out);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dirlen, "%s/shardproof-%s-XXXXXX", tmp && *tmp && strlen(tmp) < 30 ? tmp : "/tmp",
             kind);
    if (mkdtemp(dir) == NULL) {
        snprintf(err, errlen, "cannot create a temporary directory: %s", strerror(errno));
        dir[0] = 0;
        return 0;
    }
    const char *b = strrchr(src, '/');
    b = b ? b + 1 : src;
    size_t n = strlen(b), e = strlen(ext);
    if (n > e && !strcmp(b + n - e, ext))
        n -= e;
    snprintf(path, pathlen, "%s/%.*s.sp", dir, (int)(n > 200 ? 200 : n), b);
    return 1;
}

int sp_cli_nnscaler_to_file(const char *logical, const char *parallel, int flags, const char *out,
                            char *path, size_t pathlen, char *dir, size_t dirlen, char *err,
                            size_t errlen)
{
    char *text = NULL;
    dir[0] = 0;
    if (sp_nnscaler_import_ex(logical, parallel, flags, &text, err, errlen) != 0)
        return 0;
    if (!generated_path("nnscaler", parallel, ".json", out, path, pathlen, dir, dirlen, err,
                        errlen)) {
        flint_free(text);
        return 0;
    }
    int ok = write_file(path, text, err, errlen);
    flint_free(text);
    if (!ok && dir[0]) {
        rmdir(dir);
        dir[0] = 0;
    }
    return ok;
}

int sp_cli_world_arg(sp_args_t *A, const sp_arg_t *a)
{
    char *end;
    long w = strtol(a->val[0], &end, 10);
    if (*end == 0 && end != a->val[0] && w >= 1 && w <= SP_TORCH_MAX_WORLD)
        return (int)w;
    sp_args_error(A, "--world takes a number of ranks from 1 to %d, not '%s'", SP_TORCH_MAX_WORLD,
                  a->val[0]);
    return -1;
}

int sp_cli_torch_to_file(const char *file, int world, const char *out, char *path, size_t pathlen,
                         char *dir, size_t dirlen, char *err, size_t errlen)
{
    err[0] = 0;
    if (!generated_path("torch", file, ".py", out, path, pathlen, dir, dirlen, err, errlen))
        return SP_EXIT_USAGE;
    int rc = sp_torch_capture(file, world, path, err, errlen);
    if (rc != 0 && err[0] == 0)
        snprintf(err, errlen, "the PyTorch capture of %s failed (its messages are above on "
                              "standard error)", file);
    if (rc != 0 && dir[0]) {
        unlink(path);
        rmdir(dir);
        dir[0] = 0;
    }
    return rc == 0 ? 0 : rc == 2 ? SP_EXIT_USAGE : SP_EXIT_INTERNAL;
}

int sp_cli_torch(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_args_t A;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP)
        return 0;
    const char *file = NULL, *out = "-";
    int world = 0;
    for (int i = 0; i < A.n; i++) {
        const sp_arg_t *a = &A.a[i];
        if (a->opt == NULL) {
            if (file == NULL)
                file = a->val[0];
            else
                sp_args_error(&A, "unexpected argument '%s'", a->val[0]);
        } else if (!strcmp(a->opt->name, "--output")) {
            out = a->val[0];
        } else if (!strcmp(a->opt->name, "--world")) {
            world = sp_cli_world_arg(&A, a);
        }
    }
    if (A.nerr == 0 && (file == NULL || world == 0))
        sp_args_error(&A, "torch needs FILE.py and --world N");
    if (sp_args_report(cmd, &A, stderr)) {
        sp_args_clear(&A);
        return SP_EXIT_USAGE;
    }
    sp_args_clear(&A);
    /* standard output through a temporary file, so that a failed capture writes nothing */
    char dir[256], path[4096], err[1024];
    int rc = sp_cli_torch_to_file(file, world, strcmp(out, "-") ? out : NULL, path,
                                  sizeof path, dir, sizeof dir, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "shardproof: %s: %s\n", rc == SP_EXIT_USAGE ? "error" : "internal error",
                err);
        return rc;
    }
    if (dir[0]) {
        size_t len;
        char *text = sp_cli_read_file(path, (size_t)1 << 30, &len);
        if (text == NULL || fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "shardproof: error: cannot copy the generated file to standard "
                            "output\n");
            rc = SP_EXIT_USAGE;
        }
        flint_free(text);
        unlink(path);
        rmdir(dir);
    }
    return rc;
}
