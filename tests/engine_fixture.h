/* engine_fixture.h: the cmocka fixture of the engine tests: one engine and its expression store. */
#ifndef SP_ENGINE_FIXTURE_H
#define SP_ENGINE_FIXTURE_H

#include "solver.h"

typedef struct {
    sp_engine_t *S;
    sp_ectx_struct *E;
} fx_t;

/* cmocka setup/teardown: *state becomes an fx_t with a fresh engine (default limits, seed 12345). */
int fx_setup(void **state);
int fx_teardown(void **state);

/* Parse an expression into f's store; a syntax error fails the test. */
sp_expr_t fx_parse(fx_t *f, const char *text);

#endif
