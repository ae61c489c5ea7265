/* torch.c: run the PyTorch capture front end (the Python package shardproof_torch). */
#include "torch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <flint/flint.h>

#define DEFAULT_PYTHON "/usr/bin/python3"

static int is_package_dir(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/shardproof_torch/__main__.py", dir) >= (int)sizeof p)
        return 0;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory holding the package shardproof_torch (see torch.h), or 0. */
static int package_dir(char *dir, size_t len)
{
    const char *env = getenv("SHARDPROOF_TORCH_PATH");
    if (env && *env) {
        snprintf(dir, len, "%s", env);
        return is_package_dir(dir);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash == NULL)
        return 0;
    *slash = 0;
    static const char *const rel[] = {"/../lib/shardproof/python", "/../../src/torch"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s%s", exe, rel[i]) >= (int)sizeof p)
            continue;
        if (is_package_dir(p) && realpath(p, dir) != NULL && strlen(dir) < len)
            return 1;
    }
    return 0;
}

int sp_torch_capture(const char *file, int world, const char *out, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    if (!package_dir(dir, sizeof dir)) {
        snprintf(err, errlen, "cannot find the Python package shardproof_torch (set "
                              "SHARDPROOF_TORCH_PATH to the directory that contains it; "
                              "make install puts it in PREFIX/lib/shardproof/python)");
        return 2;
    }
    const char *py = getenv("SHARDPROOF_PYTHON");
    if (py == NULL || *py == 0)
        py = DEFAULT_PYTHON;
    char ws[32];
    snprintf(ws, sizeof ws, "%d", world);
    char *pp = NULL;
    const char *old = getenv("PYTHONPATH");
    size_t pl = strlen(dir) + (old ? strlen(old) : 0) + 2;
    pp = flint_malloc(pl);
    if (pp == NULL) {
        snprintf(err, errlen, "out of memory");
        return 4;
    }
    snprintf(pp, pl, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start %s: %s", py, strerror(errno));
        flint_free(pp);
        return 4;
    }
    if (pid == 0) {
        setenv("PYTHONPATH", pp, 1);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        char *argv[] = {(char *)py, "-m", "shardproof_torch", (char *)file, "--world", ws, "-o",
                        (char *)out, NULL};
        execvp(py, argv);
        fprintf(stderr, "shardproof: error: cannot run %s: %s (install Debian's python3-torch, "
                        "or set SHARDPROOF_PYTHON to a python3 that can import torch)\n",
                py, strerror(errno));
        _exit(2);
    }
    flint_free(pp);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "waiting for %s: %s", py, strerror(errno));
            return 4;
        }
    }
    if (WIFEXITED(status)) {
        int rc = WEXITSTATUS(status);
        if (rc == 0 || rc == 2)
            return rc;
        snprintf(err, errlen, "%s -m shardproof_torch exited with status %d", py, rc);
        return 4;
    }
    snprintf(err, errlen, "%s -m shardproof_torch was killed by signal %d", py,
             WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 4;
}
