/* fuzz_plan.c: libFuzzer harness on the whole pipeline: parse, run model and plan, prove. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../include/shardproof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    shardproof_options_t o;
    shardproof_options_default(&o);
    o.jobs = 1;
    o.max_elements = 256;
    o.max_ranks = 16;
    o.max_ms = 200;
    o.max_terms = 2000;
    o.max_splits = 64;
    shardproof_t *c = shardproof_new(&o);
    shardproof_verdict_t v = shardproof_check(c, "fuzz.sp", (const char *)data, size);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        shardproof_print_diagnostics(c, devnull);
        if (v != SHARDPROOF_BAD_INPUT)
            shardproof_report(c, devnull, SHARDPROOF_FORMAT_JSON);
        fclose(devnull);
    }
    /* a run that reports bad input must have said why */
    if (v == SHARDPROOF_BAD_INPUT && shardproof_error_count(c) == 0)
        __builtin_trap();
    shardproof_free(c);
    return 0;
}
