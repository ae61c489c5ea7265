/* op_attrs.h: an operator's attributes written as text, for the operator tests (test_ops.c,
   test_trace_ops.c). */
#ifndef SP_OP_ATTRS_H
#define SP_OP_ATTRS_H

#include <stdint.h>

#include "ops.h"

typedef struct {
    sp_attr_t a[8];
    int n;
    int64_t lists[8][8];
    char keys[8][64];
    char names[8][64];
} attrs_t;

/* Attributes from a spec "key=value;value;..." (values: integers, rationals a/b, [lists],
   names); spec NULL: none.  A malformed spec fails the test. */
void attrs_init(attrs_t *A, const char *spec);
/* One more attribute, "key=value" formatted as printf does. */
void attrs_add(attrs_t *A, const char *fmt, ...);
void attrs_clear(attrs_t *A);

#endif
