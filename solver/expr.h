/* expr.h: hash-consed expression DAG over symbols, exact rationals and operators. */
#ifndef SP_EXPR_H
#define SP_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include <flint/fmpq.h>

/*
 * An expression is a node id (sp_expr_t) in an sp_ectx_t.  Nodes are immutable and hash-consed:
 * two structurally equal nodes built in one context are the same id.  Arguments always have
 * smaller ids than the node that uses them, so iterating ids upwards is a topological order; the
 * engine never recurses over the DAG.  Id 0 is never a valid node (SP_EXPR_NONE).
 *
 * Normal form of the node store (checked by sp_ectx_is_valid):
 *  - arguments of commutative n-ary ops (ADD, MUL, MAX, MIN) are sorted by id;
 *  - nested ADD/MUL/MAX/MIN of the same op are not flattened here (the normal forms do it);
 *  - constants are canonical fmpq values, one node per value;
 *  - symbols are named, one node per name.
 */

typedef uint32_t sp_expr_t;
#define SP_EXPR_NONE ((sp_expr_t)0)

typedef enum {
    SP_OP_SYM = 1,   /* param = symbol index */
    SP_OP_CONST,     /* param = constant index */
    SP_OP_ADD,       /* n-ary */
    SP_OP_MUL,       /* n-ary */
    SP_OP_NEG,
    SP_OP_SUB,
    SP_OP_DIV,
    SP_OP_POW,       /* param = integer exponent (may be negative) */
    SP_OP_EXP,
    SP_OP_LOG,
    SP_OP_SQRT,
    SP_OP_RSQRT,
    SP_OP_TANH,
    SP_OP_SIGMOID,
    SP_OP_SILU,
    SP_OP_GELU,      /* exact gelu: x * Phi(x), Phi the standard normal CDF */
    SP_OP_ERF,
    SP_OP_MAX,       /* n-ary */
    SP_OP_MIN,       /* n-ary */
    SP_OP_RELU,
    SP_OP_ABS,
    SP_OP_CLAMP,     /* clamp(x, lo, hi) = min(max(x, lo), hi) */
    SP_OP_CMP,       /* param = sp_cmp_t; value 1 if the comparison holds, else 0 */
    SP_OP_WHERE,     /* where(c, a, b): a if c != 0 else b */
    SP_OP_DOT,       /* a1*b1 + a2*b2 + ...: args a1, b1, a2, b2, ... (each pair and the pairs
                        sorted); only in a store with dot_ok set (the checker's execution store):
                        sp_expr_import writes it out as a sum of products, so the engine never
                        sees one */
    SP_OP__COUNT
} sp_op_t;

typedef enum { SP_CMP_LT = 0, SP_CMP_LE, SP_CMP_GT, SP_CMP_GE, SP_CMP_EQ, SP_CMP_NE } sp_cmp_t;

typedef struct {
    uint8_t op;       /* sp_op_t */
    uint8_t flags;    /* SP_NODE_* below, the union over the node's cone */
    uint16_t pad;
    uint32_t nargs;
    uint32_t args;    /* offset into the context's argument array */
    int32_t param;    /* symbol / constant index, exponent, comparison (an exponent past 32 bits
                         is a product of powers: sp_expr_pow) */
} sp_node_t;          /* 16 bytes (the node's hash lives in its table entry) */

/* Flags: a property holds for a node if it holds anywhere in its cone. */
#define SP_NODE_PIECEWISE 1u  /* max min relu abs clamp cmp where */
#define SP_NODE_TRANSC 2u     /* exp log sqrt rsqrt tanh sigmoid silu gelu erf */
#define SP_NODE_DIV 4u        /* a division or a negative power */
#define SP_NODE_HOLLOW 8u     /* the hollow symbol (sp_expr_hollow): a value a sharded check's
                                 execution did not compute (src/shard_exec.c) */
#define SP_NODE_AXSUM 16u     /* the node itself (not its cone: never passed to users) is a sum
                                 an operator formed over an axis of a tensor (a reduction, a
                                 contraction, a gradient's accumulation over a broadcast): its
                                 number of terms is an extent, so the engine tests its terms for
                                 a count (sp_engine_counts, docs/soundness.md "Counts") */
#define SP_NODE_XSUM 32u      /* the node itself is a sum over an axis that the count test does
                                 not test (top-k's rank, a count by definition): src/members.c
                                 takes it for a sum over an axis all the same */
#define SP_NODE_CMP 64u       /* a comparison in the cone (a mask: top-k's, a causal mask's):
                                 src/members.c tells a top-k of another's mask by it */

typedef struct {
    sp_node_t *nodes;   /* nodes[0] unused */
    uint32_t len, alloc;
    uint32_t *argv;     /* all argument lists, back to back */
    size_t argv_len, argv_alloc;
    uint64_t *table;    /* open addressing: node id | (hash >> 32) << 32, 0 = empty; the upper
                           half also picks the slot (the tag spares a load of the node for most
                           probes that miss, and rehashing reads no node) */
    uint32_t table_size;
    fmpq *consts;       /* constant pool */
    uint32_t nconsts, consts_alloc;
    char **names;       /* symbol names, in the chunks below */
    char **name_chunks; /* the names' text, back to back in chunks (one allocation per chunk) */
    uint32_t nchunks, chunks_alloc;
    size_t chunk_used, chunk_size; /* of the last chunk */
    uint64_t *name_hash; /* sp_str_hash of each name (probes and rehashing skip the strings) */
    uint32_t nsyms, syms_alloc;
    uint32_t *name_table; /* hash table of symbol indices + 1 */
    uint32_t name_table_size;
    size_t max_nodes;   /* 0 = unlimited; constructors return SP_EXPR_NONE past it */
    size_t max_vm;      /* 0 = none: the store does not grow the process's address space past
                           this many bytes (checked when an array doubles); then vm_full = 1 */
    size_t max_rss;     /* 0 = none: nor its resident memory past this many bytes; then
                           vm_full = 2 */
    int64_t deadline_ns; /* 0 = none: a CLOCK_MONOTONIC time (sp_now_ns) past which the store
                            takes no new node (the run's --timeout, looked at every 65536
                            nodes); then vm_full = 3 */
    int vm_full;
    int dot_ok;         /* sp_expr_dot may build SP_OP_DOT nodes (else a sum of products) */
    int dot_sets;       /* with dot_ok: an SP_OP_DOT node keeps each distinct pair once and its
                           param is the number of pairs it stands for (a trace, which asks what a
                           value reads, not what it is: src/shard_exec.c) */
    int trace_slow;     /* with dot_sets: the operators compute uniform operands element by
                           element too (src/ops.c trace_uniform; tests/test_trace_ops.c compares) */
    sp_expr_t hollow;   /* the hollow symbol once made (sp_expr_hollow), else SP_EXPR_NONE */
    int force_hollow;   /* src/ops.c: every operator takes its operands as hollow (a statement
                           whose value a sharded run does not need: src/shard_exec.c) */
    int oom;            /* set once a constructor failed for lack of memory or the node limit */
    void *client;       /* what a user of the store keeps with it, valid as long as its ids
                           (src/memo.c: operators' results); client_free(client) in
                           sp_ectx_clear */
    void (*client_free)(void *);
} sp_ectx_struct;
typedef sp_ectx_struct sp_ectx_t[1];

void sp_ectx_init(sp_ectx_t E);
void sp_ectx_clear(sp_ectx_t E);
int sp_ectx_is_valid(const sp_ectx_t E);

/* Accessors. */
static inline const sp_node_t *sp_expr_node(const sp_ectx_t E, sp_expr_t e) { return &E->nodes[e]; }
static inline sp_op_t sp_expr_op(const sp_ectx_t E, sp_expr_t e) { return (sp_op_t)E->nodes[e].op; }
static inline uint32_t sp_expr_nargs(const sp_ectx_t E, sp_expr_t e) { return E->nodes[e].nargs; }
static inline sp_expr_t sp_expr_arg(const sp_ectx_t E, sp_expr_t e, uint32_t i)
{
    return E->argv[E->nodes[e].args + i];
}
static inline const fmpq *sp_expr_const(const sp_ectx_t E, sp_expr_t e)
{
    return E->consts + E->nodes[e].param;
}
static inline const char *sp_expr_sym_name(const sp_ectx_t E, sp_expr_t e)
{
    return E->names[E->nodes[e].param];
}
static inline uint32_t sp_expr_count(const sp_ectx_t E) { return E->len; }

/*
 * Constructors.  All return SP_EXPR_NONE if an argument is SP_EXPR_NONE, or if memory or the
 * node limit ran out (then E->oom is set); callers check once at the end.  They fold nothing but
 * the trivial (constant arithmetic on two constants, x+0, x*1, single-argument ADD/MUL/MAX/MIN);
 * all algebra happens in the normal forms.
 */
sp_expr_t sp_expr_sym(sp_ectx_t E, const char *name);
/* The hollow symbol "__hollow", flagged SP_NODE_HOLLOW (so is every node over it): it stands
   for values that were not computed.  A name beginning with "__" is no user's (src/lex.c). */
sp_expr_t sp_expr_hollow(sp_ectx_t E);
/* The symbols called names[0..n) into out, the same ids as sp_expr_sym on each in turn, with
   the cache misses of 16 at a time overlapped.  0 if one failed (out of memory). */
int sp_expr_syms(sp_ectx_t E, const char *const *names, size_t n, sp_expr_t *out);

/* CLOCK_MONOTONIC in nanoseconds: the clock of every deadline (max_ms, --timeout). */
int64_t sp_now_ns(void);
/* Has the run's deadline (E->deadline_ns) passed?  Then the store is full (vm_full = 3, oom) and
   takes no new node: for a caller that runs long without building nodes (a plan's loop). */
int sp_ectx_deadline_passed(sp_ectx_t E);
sp_expr_t sp_expr_const_fmpq(sp_ectx_t E, const fmpq_t c);
sp_expr_t sp_expr_const_si(sp_ectx_t E, slong num, ulong den);
/* the symbol with src's symbol index s (a name of src), in dst */
sp_expr_t sp_expr_sym_copy(sp_ectx_t dst, const sp_ectx_t src, uint32_t s);
sp_expr_t sp_expr_nary(sp_ectx_t E, sp_op_t op, const sp_expr_t *args, uint32_t n);
sp_expr_t sp_expr_unary(sp_ectx_t E, sp_op_t op, sp_expr_t a);
sp_expr_t sp_expr_binary(sp_ectx_t E, sp_op_t op, sp_expr_t a, sp_expr_t b);
sp_expr_t sp_expr_pow(sp_ectx_t E, sp_expr_t a, slong k);
sp_expr_t sp_expr_cmp(sp_ectx_t E, sp_cmp_t c, sp_expr_t a, sp_expr_t b);
sp_expr_t sp_expr_where(sp_ectx_t E, sp_expr_t c, sp_expr_t a, sp_expr_t b);
sp_expr_t sp_expr_clamp(sp_ectx_t E, sp_expr_t x, sp_expr_t lo, sp_expr_t hi);
void sp_expr_prefetch_mul(const sp_ectx_t E, sp_expr_t a, sp_expr_t b);
/*
 * x[0]*y[0] + ... + x[n-1]*y[n-1] (x and y are scratch: reordered).  Pairs with a literal zero
 * are dropped; none left is 0, one left is its product.  In a store with dot_ok set the sum is
 * one SP_OP_DOT node: a dot product of length n costs one hash-table probe instead of n + 1,
 * and n + 1 nodes fewer (docs/benchmarks.md section 15); elsewhere it is the n-ary sum of the
 * products, as the engine reads it.  Either way the value is the same polynomial.
 */
sp_expr_t sp_expr_dot(sp_ectx_t E, sp_expr_t *x, sp_expr_t *y, uint32_t n);

/*
 * Big arrays: the store's three large arrays (nodes, argument ids, hash table) and the like
 * (a key's mark array, one entry per node) are mappings of their own once they pass
 * SP_MEM_HUGE_MIN bytes: mapped with transparent huge pages asked for (madvise(MADV_HUGEPAGE),
 * Linux), grown with mremap (no copy, the new pages zero), unmapped when freed.  They are
 * written once, in order; on 4 KB pages every first write is a page fault, which was a third
 * of a large check's time on a VM (docs/benchmarks.md section 15).  Smaller arrays, and systems
 * without mremap, use FLINT's allocator.  sp_big_realloc resizes p (of `old` bytes, 0 when
 * NULL) to n > old bytes, the new part zero when `zero` (NULL when out of memory, p then
 * unchanged); sp_big_free takes the block's size as last allocated.
 */
#define SP_MEM_HUGE_MIN ((size_t)4 << 20)
void *sp_big_realloc(void *p, size_t old, size_t n, int zero);
void sp_big_free(void *p, size_t bytes);
/* Testing: the n-th mapping of sp_big_realloc fails (0: none); sp_big_count, how many were
   asked for so far (the CLI's SP_FAIL_BIG and SP_COUNT_ALLOC). */
void sp_big_set_fail(long long n);
long long sp_big_count(void);

/* Marks e, a sum the caller formed over an axis (SP_NODE_AXSUM); a node of any other form, or of
   one term, is left as it is.  Hash-consing shares the mark with every use of the node. */
static inline void sp_expr_mark_axsum(sp_ectx_t E, sp_expr_t e)
{
    if (e != SP_EXPR_NONE && ((E->nodes[e].op == SP_OP_ADD && E->nodes[e].nargs >= 2) ||
                              (E->nodes[e].op == SP_OP_DOT && (E->nodes[e].nargs >= 4 || E->nodes[e].param > 1))) &&
        !(E->nodes[e].flags & SP_NODE_AXSUM)) /* no write once marked: the stages' threads */
        E->nodes[e].flags |= SP_NODE_AXSUM;
}

/* Marks e, a sum over an axis that is no value the count test tests (SP_NODE_XSUM) */
static inline void sp_expr_mark_xsum(sp_ectx_t E, sp_expr_t e)
{
    if (e != SP_EXPR_NONE && E->nodes[e].op == SP_OP_ADD && E->nodes[e].nargs >= 2)
        E->nodes[e].flags |= SP_NODE_XSUM;
}

static inline sp_expr_t sp_expr_add(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[2] = {a, b};
    return sp_expr_nary(E, SP_OP_ADD, v, 2);
}
static inline sp_expr_t sp_expr_mul(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[2] = {a, b};
    return sp_expr_nary(E, SP_OP_MUL, v, 2);
}
static inline sp_expr_t sp_expr_sub(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    return sp_expr_binary(E, SP_OP_SUB, a, b);
}
static inline sp_expr_t sp_expr_div(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    return sp_expr_binary(E, SP_OP_DIV, a, b);
}
static inline sp_expr_t sp_expr_max2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[2] = {a, b};
    return sp_expr_nary(E, SP_OP_MAX, v, 2);
}
static inline sp_expr_t sp_expr_min2(sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[2] = {a, b};
    return sp_expr_nary(E, SP_OP_MIN, v, 2);
}

/* Name of an operator as printed and as accepted by sp_expr_parse ("add", "exp", ...). */
const char *sp_op_name(sp_op_t op);
const char *sp_cmp_name(sp_cmp_t c);
int sp_op_is_nary(sp_op_t op);
int sp_op_arity(sp_op_t op); /* -1 for n-ary */

/*
 * Collect the cone of the given roots (every node they reach), sorted by id ascending, into a
 * newly allocated array (*out, caller frees with flint_free).  Iterative.  Returns the count.
 */
size_t sp_expr_cone(const sp_ectx_t E, const sp_expr_t *roots, size_t nroots, uint32_t **out);

/*
 * The same, but the walk neither enters nor collects a node e below the roots with e < nskip and
 * skip[e] != 0 (the roots are always collected).  With skip a cache of finished nodes, the cost
 * is that of the unfinished part of the cone, so repeated queries over a growing DAG stay linear.
 */
size_t sp_expr_cone_skip(const sp_ectx_t E, const sp_expr_t *roots, size_t nroots,
                         const uint32_t *skip, size_t nskip, uint32_t **out);

/*
 * Print e in infix syntax that sp_expr_parse reads back as the same node (unless the text was
 * cut).  At most maxlen characters are written (then "..." ends the text); maxlen 0 means the
 * default cap of 4 MiB.  Returns a string the caller frees with flint_free.  Iterative.
 */
char *sp_expr_print(const sp_ectx_t E, sp_expr_t e, size_t maxlen);

/*
 * Parse an expression in the print syntax: numbers (integers, decimals and 1e-5 read exactly),
 * identifiers (symbols, may contain . [ ] digits _), + - * / ^integer, parentheses, and calls
 * op(args) with the names of sp_op_name, plus lt le gt ge eq ne for comparisons.  A minus sign
 * before a bare number literal and a quotient of two bare literals are read as one constant (-3,
 * 1/2, -1/2; not -(3), 1/0 or -3^2), which is how sp_expr_print writes constants, so that
 * parse(print(e)) is e.  + - and * / associate to the left.  Returns SP_EXPR_NONE on a syntax
 * error and writes a message with the 0-based column to err (errlen bytes) when err is not NULL.
 * Nesting depth is limited to 2000 (the reader recurses; 2000 levels fit the C stack under every
 * sanitizer); the printer never nests deeper than the text that was read.
 */
sp_expr_t sp_expr_parse(sp_ectx_t E, const char *text, char *err, size_t errlen);

/*
 * Copy the cones of roots[0..n) from src into dst (symbols by name, constants by value, the
 * same structure) and store the images in out[0..n).  Iterative.  Returns 0 when dst runs out
 * of memory or nodes.
 */
int sp_expr_import(sp_ectx_t dst, const sp_ectx_t src, const sp_expr_t *roots, size_t n,
                   sp_expr_t *out);

#endif
