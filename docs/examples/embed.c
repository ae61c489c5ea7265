/* embed.c: embedding shardproof: check a plan file and read the results as data.
 *
 *   cc embed.c $(pkg-config --cflags --libs shardproof) -o embed
 *   ./embed docs/examples/mlp.sp
 *
 * The exit code is the verdict (0 equivalent, 1 not, 2 bad input, 3 unknown), as for the CLI.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <shardproof.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (b == NULL)
                free(buf);
            buf = b;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PLAN.sp\n", argv[0]);
        return 2;
    }
    size_t len;
    char *text = slurp(argv[1], &len);
    if (text == NULL) {
        perror(argv[1]);
        return 2;
    }
    shardproof_options_t opt;
    shardproof_options_default(&opt);
    opt.jobs = 2;
    shardproof_t *c = shardproof_new(&opt);
    shardproof_check(c, argv[1], text, len);
    shardproof_result_t *r = shardproof_result_new(c);
    shardproof_free(c); /* the result stays valid */
    free(text);
    if (r == NULL)
        return 4;

    shardproof_verdict_t v = shardproof_result_verdict(r);
    printf("shardproof %s: %s\n", shardproof_version(), shardproof_verdict_name(v));
    for (int i = 0; i < shardproof_result_diagnostic_count(r); i++) {
        const shardproof_diagnostic_t *d = shardproof_result_diagnostic(r, i);
        printf("diagnostic: %s:%u:%u: %s [%s]\n", d->loc.file, d->loc.line, d->loc.column,
               d->message, d->code);
    }
    if (shardproof_result_plan(r))
        printf("plan %s of model %s, seed %" PRIu64 "\n", shardproof_result_plan(r),
               shardproof_result_model(r) ? shardproof_result_model(r) : "?",
               shardproof_result_seed(r));
    int proved = 0;
    for (int i = 0; i < shardproof_result_stage_count(r); i++) {
        const shardproof_stage_t *s = shardproof_result_stage(r, i);
        proved += s->status == SHARDPROOF_STAGE_PROVED || s->status == SHARDPROOF_STAGE_MEMOIZED;
    }
    printf("stages: %d, proved or memoized: %d\n", shardproof_result_stage_count(r), proved);

    int f = shardproof_result_failing_stage(r);
    if (f >= 0) {
        const shardproof_stage_t *s = shardproof_result_stage(r, f);
        printf("%s stage %d: plan '%s' (line %u) ~ model '%s' (line %u) : %s\n",
               shardproof_stage_status_name(s->status), s->id, s->plan_tensor, s->plan_loc.line,
               s->model_tensor, s->model_loc.line, s->layout);
        printf("rank %" PRId64 ":", s->rank);
        for (int k = 0; k < s->ncoords; k++)
            printf(" %s=%" PRId64, s->coords[k].name, s->coords[k].value);
        printf("\nelement:");
        for (int k = 0; k < s->ndim; k++)
            printf(" %" PRId64, s->element[k]);
        printf("\nplan value: %s\nmodel value: %s\n", s->plan_value, s->model_value);
        if (s->status == SHARDPROOF_STAGE_FAILED) {
            for (int k = 0; k < s->nassign; k++)
                printf("input %s = %s\n", s->assign[k].name, s->assign[k].value);
            printf("there: plan = %s, model = %s (%s)\n", s->plan_at, s->model_at,
                   s->exact ? "exact" : "Arb balls");
        } else {
            printf("reason: %s\n", s->reason);
        }
    }
    shardproof_result_free(r);
    return (int)v;
}
