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

int sp_cli_nnscaler_to_file(const char *logical, const char *parallel, int flags, const char *out,
                            char *path, size_t pathlen, char *dir, size_t dirlen, char *err,
                            size_t errlen)
{
    char *text = NULL;
    dir[0] = 0;
    if (sp_nnscaler_import_ex(logical, parallel, flags, &text, err, errlen) != 0)
        return 0;
    if (out) {
        snprintf(path, pathlen, "%s", out);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, dirlen, "%s/shardproof-nnscaler-XXXXXX",
                 tmp && *tmp && strlen(tmp) < 30 ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL) {
            snprintf(err, errlen, "cannot create a temporary directory: %s", strerror(errno));
            dir[0] = 0;
            flint_free(text);
            return 0;
        }
        /* the parallel file's base name, .json replaced by .sp */
        const char *b = strrchr(parallel, '/');
        b = b ? b + 1 : parallel;
        size_t n = strlen(b);
        if (n > 5 && !strcmp(b + n - 5, ".json"))
            n -= 5;
        snprintf(path, pathlen, "%s/%.*s.sp", dir, (int)(n > 200 ? 200 : n), b);
    }
    int ok = write_file(path, text, err, errlen);
    flint_free(text);
    if (!ok && dir[0]) {
        rmdir(dir);
        dir[0] = 0;
    }
    return ok;
}
