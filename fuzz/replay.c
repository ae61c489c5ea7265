/* replay.c: run a libFuzzer harness on every file of given directories (for gcc builds and CI). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <flint/flint.h>

/*
 * Linked with one fuzz_<target>.c.  Arguments are files or directories (not recursive); files
 * are run in name order, so the output is the same on every machine.  A harness reports a
 * failure by aborting, as under libFuzzer; the replayer prints each file name first (with -v)
 * or the name of the file being run when it dies (the last "replay: <file>" line on stderr).
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const char *path, int verbose)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (verbose)
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    /* an exact-size copy, so ASan sees reads past the end of the input */
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    return 0;
}

int main(int argc, char **argv)
{
    int verbose = 0, rc = 0;
    long files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
            rc = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc |= run_file(argv[i], verbose);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            fprintf(stderr, "replay: cannot open directory %s\n", argv[i]);
            rc = 1;
            continue;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            if (n == cap)
                names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(char *));
            size_t len = strlen(argv[i]) + strlen(de->d_name) + 2;
            names[n] = malloc(len);
            snprintf(names[n], len, "%s/%s", argv[i], de->d_name);
            n++;
        }
        closedir(d);
        qsort(names, n, sizeof(char *), cmp_str);
        for (size_t k = 0; k < n; k++) {
            if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
                rc |= run_file(names[k], verbose);
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replay: %ld files, %s\n", files, rc ? "errors" : "ok");
    flint_cleanup_master();
    return rc;
}
