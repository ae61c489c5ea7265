/* engine_fixture.c: the cmocka fixture of the engine tests (linked into every test binary). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "engine_fixture.h"

int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof(fx_t));
    f->S = sp_engine_new(NULL, 12345);
    f->E = sp_engine_exprs(f->S);
    *state = f;
    return 0;
}

int fx_teardown(void **state)
{
    fx_t *f = *state;
    sp_engine_free(f->S);
    free(f);
    return 0;
}

sp_expr_t fx_parse(fx_t *f, const char *text)
{
    char err[200];
    sp_expr_t e = sp_expr_parse(f->E, text, err, sizeof err);
    if (e == SP_EXPR_NONE)
        fail_msg("parse '%s': %s", text, err);
    return e;
}
