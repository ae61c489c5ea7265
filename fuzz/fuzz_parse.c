/* fuzz_parse.c: libFuzzer harness on the plan language's lexer and parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sp_diags_t d;
    sp_diags_init(d);
    sp_ast_t *ast = NULL;
    sp_status_t st = sp_parse_file(&ast, "fuzz.sp", (const char *)data, size, NULL, d);
    if (st == SP_OK) {
        char *dump = sp_ast_dump(ast, 1);
        free(dump);
        sp_ast_free(ast);
    } else if (st == SP_ERR_INPUT && sp_diags_error_count(d) == 0) {
        __builtin_trap(); /* a rejected input must come with a diagnostic */
    }
    sp_diags_clear(d);
    return 0;
}
