/* fuzz_expr_parse.c: libFuzzer harness on sp_expr_parse: arbitrary text, then print/re-parse. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "expr.h"

/*
 * Properties (abort on violation):
 *  - sp_expr_parse never crashes or leaks; a rejected text comes with a message;
 *  - the store stays valid (sp_ectx_is_valid);
 *  - the printed form of an accepted expression parses again (it nests no deeper than the
 *    input, and every constant reads back), and the re-parse of that text is a fixed point
 *    (parse(print(e2)) == e2);
 *  - the re-parsed expression is the same node as the original (fuzz/regress/expr_parse/ has
 *    the shapes that once differed: n-ary add, 0.5, negative constants, long minus chains);
 *  - original and re-parse have the same exact value and status at two rational points;
 *  - a printed text cut at maxlen is at most maxlen + 3 characters long.
 */

static void die(const char *what, const char *text, const char *printed)
{
    fprintf(stderr, "fuzz_expr_parse: %s\n  input:   %s\n  printed: %s\n", what, text,
            printed ? printed : "-");
    abort();
}

static void same_values(const sp_ectx_struct *E, sp_expr_t a, sp_expr_t b, const char *text,
                        const char *printed)
{
    slong ns = E->nsyms ? E->nsyms : 1;
    fmpq *vals = _fmpq_vec_init(ns);
    fmpq out[2];
    fmpq_init(out + 0);
    fmpq_init(out + 1);
    for (int p = 0; p < 2; p++) {
        for (slong s = 0; s < (slong)E->nsyms; s++)
            fmpq_set_si(vals + s, p == 0 ? (slong)(s % 5) - 2 : 3 - (slong)(s % 4), p == 0 ? 1 : 2);
        sp_eval_status_t sa = sp_eval_exact(E, &a, 1, vals, out + 0);
        sp_eval_status_t sb = sp_eval_exact(E, &b, 1, vals, out + 1);
        if (sa == SP_EVAL_NOMEM || sb == SP_EVAL_NOMEM)
            continue;
        if (sa != sb || (sa == SP_EVAL_OK && !fmpq_equal(out + 0, out + 1)))
            die("re-parsed expression evaluates differently", text, printed);
    }
    fmpq_clear(out + 0);
    fmpq_clear(out + 1);
    _fmpq_vec_clear(vals, ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    sp_ectx_t E;
    sp_ectx_init(E);
    E->max_nodes = 100000;
    char err[256];
    sp_expr_t e = sp_expr_parse(E, text, err, sizeof err);
    if (!sp_ectx_is_valid(E))
        die("store invalid after parse", text, NULL);
    if (e == SP_EXPR_NONE) {
        if (err[0] == 0)
            die("rejected without a message", text, NULL);
        goto done;
    }
    char *s1 = sp_expr_print(E, e, 0);
    sp_expr_t e2 = sp_expr_parse(E, s1, err, sizeof err);
    if (e2 == SP_EXPR_NONE) {
        if (!E->oom)
            die("printed form does not parse", text, s1);
        flint_free(s1);
        goto done;
    }
    if (e2 != e)
        die("re-parse of the printed form is a different node", text, s1);
    char *s2 = sp_expr_print(E, e2, 0);
    sp_expr_t e3 = sp_expr_parse(E, s2, err, sizeof err);
    if (e3 != e2 && !E->oom)
        die("print/parse is not a fixed point on its own output", text, s2);
    same_values(E, e, e2, text, s1);
    size_t cut = 1 + size % 60;
    char *s3 = sp_expr_print(E, e, cut);
    if (strlen(s3) > cut + 3)
        die("sp_expr_print ignores maxlen", text, s3);
    if (!sp_ectx_is_valid(E))
        die("store invalid after re-parse", text, s1);
    flint_free(s1);
    flint_free(s2);
    flint_free(s3);
done:
    sp_ectx_clear(E);
    free(text);
    return 0;
}
