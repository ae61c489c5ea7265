/* ref_cli.c: `shardproof run`, the reference executor's command and its text report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <flint/flint.h>

#include "args.h"
#include "cli.h"
#include "ref.h"

void sp_ref_result_print(FILE *out, const sp_ref_result_t *r)
{
    static const char *const verdicts[] = {"AGREE", "DIFFER", "UNDECIDED", "TOO LARGE", "ERROR"};
    static const char *const kinds[] = {"the values differ", "the plan is undefined where the model is defined",
                                        "no rank holds this element", "two ranks hold different values"};
    if (r->plan)
        fprintf(out, "plan %s of model %s on mesh %s (%d ranks), seed %llu, %ld-bit balls\n", r->plan, r->model,
                r->mesh, r->nranks, (unsigned long long)r->seed, r->prec);
    if (r->verdict == SP_REF_TOO_LARGE)
        fprintf(out, "limit: %s\n", r->limit ? r->limit : "?");
    if (r->verdict <= SP_REF_UNDECIDED) {
        fprintf(out, "compared %lld output elements: %lld equal, %lld overlapping balls (consistent, not certified), "
                     "%lld undecided, %lld undefined in the model, %lld undefined in the plan, %lld different; "
                     "%lld uncovered\n",
                (long long)r->compared, (long long)r->equal, (long long)r->overlap, (long long)r->undecided,
                (long long)r->model_undefined, (long long)r->plan_undefined, (long long)r->differ,
                (long long)r->uncovered);
        if (r->nnot_covered > 0) {
            fprintf(out, "not output by the plan:");
            for (size_t i = 0; i < r->nnot_covered; i++)
                fprintf(out, " %s", r->not_covered[i]);
            fprintf(out, "\n");
        }
    }
    fprintf(out, "%s\n", verdicts[r->verdict]);
    if (r->verdict != SP_REF_DIFFER || r->output == NULL)
        return;
    fprintf(out, "  output:      %s", r->output);
    if (r->loc.file)
        fprintf(out, " (plan line %s:%u:%u)", r->loc.file, (unsigned)r->loc.line, (unsigned)r->loc.col);
    fprintf(out, "\n  why:         %s\n", kinds[r->kind]);
    if (r->rank >= 0)
        fprintf(out, "  rank:        %d %s\n  element:     local %s, global %s\n", r->rank, r->coords,
                r->local_index, r->global_index);
    else
        fprintf(out, "  element:     global %s\n", r->global_index);
    fprintf(out, "  plan value:  %s\n  model value: %s\n", r->plan_value, r->model_value);
    fprintf(out, "  inputs:      seed %llu (--print-inputs lists all %zu input values)\n", (unsigned long long)r->seed,
            r->inputs->n);
}

enum { R_PLAN = 1, R_INPUTS, R_DIMS, R_SEED, R_MAX_ELEMENTS, R_MAX_RANKS, R_MAX_MEM, R_PREC,
       R_MAX_PREC, R_PRINT_INPUTS, R_REAL_VALUES };

const sp_opt_t sp_ref_opts[] = {
    {R_PLAN, "--plan", NULL, SP_ARG_ONE, "NAME", SP_CMD_RUN, 0,
     "the plan to run, when the file has several"},
    {R_DIMS, "--dims", NULL, SP_ARG_ONE, "NAME=SIZE,...", SP_CMD_RUN, 0,
     "run at these sizes instead of the file's real ones"},
    {R_REAL_VALUES, "--real-values", NULL, SP_ARG_NONE, NULL, SP_CMD_RUN, 0,
     "with --dims: sizes used as values (a size in a tensor expression or a value attribute, "
     "an operator's count) keep the file's sizes, as the checker's program at its checked "
     "sizes"},
    {R_SEED, "--seed", NULL, SP_ARG_ONE, "N", SP_CMD_RUN, 0,
     "the seed of the random exact inputs (default 1)"},
    {R_INPUTS, "--inputs", NULL, SP_ARG_ONE, "FILE", SP_CMD_RUN, 0,
     "take these input values (NAME[i,j] = p/q lines, as --print-inputs writes them)"},
    {R_PRINT_INPUTS, "--print-inputs", NULL, SP_ARG_NONE, NULL, SP_CMD_RUN, 0,
     "after DIFFER, print every input value (a file for --inputs)"},
    {R_MAX_ELEMENTS, "--max-elements", NULL, SP_ARG_ONE, "N", SP_CMD_RUN, 0,
     "elements of one tensor (default 2^20); beyond, TOO LARGE"},
    {R_MAX_RANKS, "--max-ranks", NULL, SP_ARG_ONE, "N", SP_CMD_RUN, 0,
     "ranks of the mesh (at most 4096; default 256)"},
    {R_MAX_MEM, "--max-mem", NULL, SP_ARG_ONE, "MIB", SP_CMD_RUN, 0,
     "memory for values, in MiB; beyond, TOO LARGE"},
    {R_PREC, "--prec", NULL, SP_ARG_ONE, "BITS", SP_CMD_RUN, 0,
     "Arb precision of irrational values (default 256)"},
    {R_MAX_PREC, "--max-prec", NULL, SP_ARG_ONE, "BITS", SP_CMD_RUN, 0,
     "precision an undecided comparison is retried at (default 1024)"},
    {0, NULL, NULL, SP_ARG_NONE, NULL, 0, 0, NULL}};

static int number(sp_args_t *A, const char *opt, const char *s, long long lo, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s ? s : "", &end, 10);
    if (s == NULL || *s == 0 || *end || errno || *v < lo) {
        sp_args_error(A, "%s takes an integer >= %lld", opt, lo);
        return 0;
    }
    return 1;
}

int sp_ref_cli(const sp_cmd_t *cmd, int argc, char **argv)
{
    sp_ref_opts_t o;
    sp_ref_opts_default(&o);
    const char *path = NULL, *inpath = NULL;
    int print_inputs = 0, rc = SP_EXIT_USAGE;
    sp_ref_dim_t *dims = NULL;
    char **owned = calloc((size_t)argc + 1, sizeof(char *));
    size_t nd = 0, nown = 0;
    sp_ref_inputs_t given;
    sp_ref_inputs_init(given);
    sp_args_t A;
    memset(&A, 0, sizeof A);
    if (owned == NULL)
        goto done;
    if (sp_args_parse(cmd, argc, argv, &A) == SP_ARGS_HELP) {
        rc = 0;
        goto done;
    }
    for (int i = 0; i < A.n; i++) {
        const char *v = A.a[i].val[0];
        long long n;
        if (A.a[i].opt == NULL) {
            if (path == NULL)
                path = v;
            else
                sp_args_error(&A, "unexpected argument '%s'", v);
            continue;
        }
        int k = A.a[i].opt->id;
        if (k == R_PRINT_INPUTS) {
            print_inputs = 1;
        } else if (k == R_REAL_VALUES) {
            o.real_values = 1;
        } else if (k == R_PLAN) {
            o.plan = v;
        } else if (k == R_INPUTS) {
            inpath = v;
        } else if (k == R_DIMS) {
            char *s = strdup(v);
            owned[nown++] = s;
            for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
                char *eq = strchr(tok, '=');
                if (eq == NULL) {
                    sp_args_error(&A, "--dims takes NAME=SIZE with SIZE >= 1");
                    break;
                }
                *eq = 0;
                if (!number(&A, "--dims", eq + 1, 1, &n))
                    break;
                sp_ref_dim_t *g = realloc(dims, (nd + 1) * sizeof(sp_ref_dim_t));
                if (g == NULL)
                    goto done;
                dims = g;
                dims[nd++] = (sp_ref_dim_t){tok, n};
            }
        } else if (!number(&A, A.a[i].opt->name, v,
                           k == R_PREC || k == R_MAX_PREC ? 16 : k == R_SEED ? 0 : 1, &n)) {
            continue;
        } else if (k == R_SEED) {
            o.seed = (uint64_t)n;
        } else if (k == R_MAX_ELEMENTS) {
            o.max_elements = n;
        } else if (k == R_MAX_RANKS) {
            o.max_ranks = n > 4096 ? 4096 : (int)n;
        } else if (k == R_MAX_MEM) {
            o.max_mem_mb = n;
        } else if (k == R_PREC) {
            o.prec = n > 65536 ? 65536 : (long)n;
        } else {
            o.max_prec = n > 65536 ? 65536 : (long)n;
        }
    }
    if (path == NULL && A.nerr == 0)
        sp_args_error(&A, "a plan FILE is needed");
    if (sp_args_report(cmd, &A, stderr))
        goto done;

    o.dims = dims;
    o.ndims = nd;
    if (inpath) {
        size_t len;
        char err[200], *text = sp_cli_read_file(inpath, (size_t)64 << 20, &len);
        if (text == NULL) {
            fprintf(stderr, "shardproof: error: cannot read %s: %s\n", inpath, strerror(errno));
            goto done;
        }
        int bad = sp_ref_inputs_parse(given, text, err, sizeof(err));
        flint_free(text);
        if (bad) {
            fprintf(stderr, "%s: error: %s\n", inpath, err);
            goto done;
        }
        o.inputs = given;
    }
    sp_diags_t d;
    sp_diags_init(d);
    sp_ast_t *ast = NULL;
    sp_ref_result_t res;
    sp_ref_result_init(&res);
    rc = SP_EXIT_INTERNAL;
    if (sp_parse_path(&ast, path, NULL, d) != SP_OK)
        rc = SP_EXIT_USAGE;
    else if (sp_ref_run(ast, &o, &res, d) == SP_OK) {
        static const int codes[] = {SP_EXIT_EQUIVALENT, SP_EXIT_DIFFERENT, SP_EXIT_UNKNOWN, SP_EXIT_UNKNOWN,
                                    SP_EXIT_USAGE};
        rc = codes[res.verdict];
        if (res.verdict != SP_REF_ERROR)
            sp_ref_result_print(stdout, &res);
        if (print_inputs && res.verdict == SP_REF_DIFFER)
            sp_ref_inputs_print(stdout, res.inputs);
    }
    sp_diags_print(stderr, d);
    sp_ref_result_clear(&res);
    sp_ast_free(ast);
    sp_diags_clear(d);
done:
    sp_args_clear(&A);
    for (size_t i = 0; i < nown; i++)
        free(owned[i]);
    free(owned);
    free(dims);
    sp_ref_inputs_clear(given);
    return rc;
}
