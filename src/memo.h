/*
 * memo.h: results of operators kept with the execution store, keyed by the exact ids of what
 * they were computed from.
 *
 * Interning makes a recomputation return the same ids, but each of its nodes costs a probe of a
 * hash table far larger than the cache (and, for a node that exists, a load of the node and its
 * arguments to compare).  An operator whose backward pass recomputes a large part of its forward
 * pass (attention's probabilities) keeps that part here instead.  A key is a sequence of 32-bit
 * words that determines the value exactly (shapes, attributes and the input ids), so a hit
 * returns exactly what the recomputation would have built; the store is the same, so its ids
 * are valid.  Bounded (SP_MEMO_WORDS words of keys and values; past it the memo starts over):
 * only a saving, never a dependence.
 */
#ifndef SP_MEMO_H
#define SP_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "expr.h"

#define SP_MEMO_WORDS ((size_t)1 << 24) /* 64 MB of keys and values */

/* The value kept under (kind, key) in E's memo, or NULL; *n its length. */
const sp_expr_t *sp_memo_get(sp_ectx_t E, uint32_t kind, const uint32_t *key, size_t nkey,
                             size_t *n);

/* Copy the value kept under (kind, key) into out if it has exactly n ids: 1, else 0 (key NULL:
   0). */
int sp_memo_copy(sp_ectx_t E, uint32_t kind, const uint32_t *key, size_t nkey, sp_expr_t *out,
                 size_t n);

/* Keep val[0..n) under (kind, key) (a copy); nothing if it is too large, memory fails or the
   store is out of memory (then a value may hold SP_EXPR_NONE). */
void sp_memo_put(sp_ectx_t E, uint32_t kind, const uint32_t *key, size_t nkey,
                 const sp_expr_t *val, size_t n);

/* How many values E's memo keeps; *hits (if not NULL): how many times sp_memo_copy gave one. */
size_t sp_memo_count(const sp_ectx_t E, size_t *hits);

#endif
