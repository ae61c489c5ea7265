/* expr.c: hash-consed expression DAG: node store, constructors, cone, printer and reader. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* mremap */
#endif
#include <flint/flint.h>
#include "expr.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sbuf.h"
#include "hash.h"

static const char *const op_names[SP_OP__COUNT] = {
    [SP_OP_SYM] = "sym",         [SP_OP_CONST] = "const", [SP_OP_ADD] = "add",
    [SP_OP_MUL] = "mul",         [SP_OP_NEG] = "neg",     [SP_OP_SUB] = "sub",
    [SP_OP_DIV] = "div",         [SP_OP_POW] = "pow",     [SP_OP_EXP] = "exp",
    [SP_OP_LOG] = "log",         [SP_OP_SQRT] = "sqrt",   [SP_OP_RSQRT] = "rsqrt",
    [SP_OP_TANH] = "tanh",       [SP_OP_SIGMOID] = "sigmoid", [SP_OP_SILU] = "silu",
    [SP_OP_GELU] = "gelu",       [SP_OP_ERF] = "erf",     [SP_OP_MAX] = "max",
    [SP_OP_MIN] = "min",         [SP_OP_RELU] = "relu",   [SP_OP_ABS] = "abs",
    [SP_OP_CLAMP] = "clamp",     [SP_OP_CMP] = "cmp",     [SP_OP_WHERE] = "where",
    [SP_OP_DOT] = "dot",
};

static const char *const cmp_names[] = {"lt", "le", "gt", "ge", "eq", "ne"};

const char *sp_op_name(sp_op_t op)
{
    return (op > 0 && op < SP_OP__COUNT) ? op_names[op] : "?";
}

const char *sp_cmp_name(sp_cmp_t c) { return ((unsigned)c < 6) ? cmp_names[c] : "?"; }

int sp_op_is_nary(sp_op_t op)
{
    return op == SP_OP_ADD || op == SP_OP_MUL || op == SP_OP_MAX || op == SP_OP_MIN;
}

int sp_op_arity(sp_op_t op)
{
    switch (op) {
    case SP_OP_SYM: case SP_OP_CONST: return 0;
    case SP_OP_ADD: case SP_OP_MUL: case SP_OP_MAX: case SP_OP_MIN: case SP_OP_DOT: return -1;
    case SP_OP_SUB: case SP_OP_DIV: case SP_OP_CMP: return 2;
    case SP_OP_CLAMP: case SP_OP_WHERE: return 3;
    default: return 1;
    }
}

static unsigned op_flags(sp_op_t op)
{
    switch (op) {
    case SP_OP_CMP:
        return SP_NODE_PIECEWISE | SP_NODE_CMP;
    case SP_OP_MAX: case SP_OP_MIN: case SP_OP_RELU: case SP_OP_ABS: case SP_OP_CLAMP:
    case SP_OP_WHERE:
        return SP_NODE_PIECEWISE;
    case SP_OP_EXP: case SP_OP_LOG: case SP_OP_SQRT: case SP_OP_RSQRT: case SP_OP_TANH:
    case SP_OP_SIGMOID: case SP_OP_SILU: case SP_OP_GELU: case SP_OP_ERF:
        return SP_NODE_TRANSC;
    case SP_OP_DIV:
        return SP_NODE_DIV;
    default:
        return 0;
    }
}

/* ---- hashing ---------------------------------------------------------------------------- */

static uint64_t node_hash(sp_op_t op, int64_t param, const sp_expr_t *args, uint32_t n)
{
    uint64_t h = sp_mix64((uint64_t)op * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)param);
    for (uint32_t i = 0; i < n; i++)
        h = sp_mix64(h ^ ((uint64_t)args[i] + UINT64_C(0x632be59bd9b4e019) * (i + 1)));
    return h;
}

/* ---- context ------------------------------------------------------------------------------ */

void sp_ectx_init(sp_ectx_t E)
{
    memset(E, 0, sizeof(*E));
}

void sp_ectx_clear(sp_ectx_t E)
{
    if (E->client_free)
        E->client_free(E->client);
    for (uint32_t i = 0; i < E->nconsts; i++)
        fmpq_clear(E->consts + i);
    for (uint32_t i = 0; i < E->nchunks; i++)
        flint_free(E->name_chunks[i]);
    flint_free(E->name_chunks);
    sp_big_free(E->nodes, (size_t)E->alloc * sizeof(sp_node_t));
    sp_big_free(E->argv, E->argv_alloc * sizeof(uint32_t));
    sp_big_free(E->table, (size_t)E->table_size * sizeof(uint64_t));
    flint_free(E->consts);
    flint_free(E->names);
    flint_free(E->name_hash);
    flint_free(E->name_table);
    memset(E, 0, sizeof(*E));
}

/* big arrays (expr.h): mappings of their own on huge pages from SP_MEM_HUGE_MIN bytes */
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MREMAP_MAYMOVE)
#define BIG_MAP 1
#else
#define BIG_MAP 0
#endif

#if BIG_MAP
static int big_mapped(size_t bytes) { return bytes >= SP_MEM_HUGE_MIN; }
#endif

void sp_big_free(void *p, size_t bytes)
{
#if BIG_MAP
    if (p != NULL && big_mapped(bytes)) {
        munmap(p, bytes);
        return;
    }
#endif
    flint_free(p);
}

/* Failure testing of the mapped arrays (sp_big_set_fail): the fail_at-th mapping or remapping
   fails as a real one does; every one is counted. */
static long long big_count, big_fail_at;

void sp_big_set_fail(long long n) { big_fail_at = n; }

long long sp_big_count(void) { return __atomic_load_n(&big_count, __ATOMIC_RELAXED); }

/* p (of old bytes, 0 if NULL) resized to n bytes (n > old), the new part zeroed when zero */
void *sp_big_realloc(void *p, size_t old, size_t n, int zero)
{
#if BIG_MAP
    if (big_mapped(n)) {
        void *q;
        long long k = __atomic_add_fetch(&big_count, 1, __ATOMIC_RELAXED);
        if (big_fail_at != 0 && k == big_fail_at)
            return NULL;
        if (p != NULL && big_mapped(old)) {
            q = mremap(p, old, n, MREMAP_MAYMOVE); /* the new pages are zero */
        } else {
            q = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (q != MAP_FAILED) {
                (void)madvise(q, n, MADV_HUGEPAGE); /* advice: its failure changes nothing */
                if (p != NULL)
                    memcpy(q, p, old);
                flint_free(p);
            }
        }
        return q == MAP_FAILED ? NULL : q;
    }
#endif
    unsigned char *q = flint_realloc(p, n);
    if (q != NULL && zero)
        memset(q + old, 0, n - old);
    return q;
}

/* *p (of *alloc elements) grown to at least need elements, doubling; big: a store array */
static int grow_by(void **p, size_t elem, size_t need, size_t *alloc, int big)
{
    if (need <= *alloc)
        return 1;
    size_t n = *alloc ? *alloc : 16;
    while (n < need)
        n *= 2;
    void *q = big ? sp_big_realloc(*p, *alloc * elem, n * elem, 0) : flint_realloc(*p, n * elem);
    if (q == NULL)
        return 0;
    *p = q;
    *alloc = n;
    return 1;
}

static int grow(void **p, size_t elem, size_t need, size_t *alloc)
{
    return grow_by(p, elem, need, alloc, 0);
}

/* A table entry holds the node id and the hash's upper half, which also picks the slot: probes
   that miss rarely load a node, and rehashing reads the old table alone, in order. */
static inline uint64_t tab_entry(uint32_t id, uint64_t h) { return (h >> 32) << 32 | id; }
static inline int tab_tag_match(uint64_t e, uint64_t h) { return (e >> 32) == (h >> 32); }
static inline uint32_t tab_slot(uint64_t h, uint32_t size) { return (uint32_t)(h >> 32) & (size - 1); }

/* the table doubles at a load of 3/4: an entry holds the hash's upper half as a tag, so the
   longer probe sequences of linear probing cost compares within a cache line, not node loads */
static inline int table_full(const sp_ectx_t E)
{
    return 4 * ((size_t)E->len + 1) > 3 * (size_t)E->table_size;
}

static int table_grow(sp_ectx_t E)
{
    uint32_t size = E->table_size ? 2 * E->table_size : 1024;
    uint64_t *t = sp_big_realloc(NULL, 0, (size_t)size * sizeof(uint64_t), 1);
    if (t == NULL)
        return 0;
    for (uint32_t i = 0; i < E->table_size; i++) {
        uint64_t e = E->table[i];
        if (e == 0)
            continue;
        uint32_t j = tab_slot(e, size);
        while (t[j] != 0)
            j = (j + 1) & (size - 1);
        t[j] = e;
    }
    sp_big_free(E->table, (size_t)E->table_size * sizeof(uint64_t));
    E->table = t;
    E->table_size = size;
    return 1;
}

static int node_equal(const sp_ectx_t E, uint32_t id, sp_op_t op, int64_t param,
                      const sp_expr_t *args, uint32_t n)
{
    const sp_node_t *nd = &E->nodes[id];
    if (nd->op != op || nd->param != param || nd->nargs != n)
        return 0;
    return n == 0 || memcmp(E->argv + nd->args, args, n * sizeof(sp_expr_t)) == 0;
}

/* The process's address-space size and resident memory in bytes (Linux /proc/self/statm), or
   0 where unknown. */
static void mem_bytes(size_t *vm, size_t *rss)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0, resident = 0;
    if (f != NULL) {
        if (fscanf(f, "%lu %lu", &pages, &resident) != 2)
            pages = resident = 0;
        fclose(f);
    }
    long ps = sysconf(_SC_PAGESIZE);
    *vm = (size_t)pages * (size_t)(ps > 0 ? ps : 4096);
    *rss = (size_t)resident * (size_t)(ps > 0 ? ps : 4096);
}

/*
 * May the store's arrays grow by about `more` bytes?  Under max_vm (an address-space limit) or
 * max_rss (resident memory: --max-memory, by default 90% of the machine's or the cgroup's) a
 * growth that would pass it makes the store full instead of failing an allocation or being
 * killed: the run ends in a resource limit with its name.
 */
static int room(sp_ectx_t E, size_t more)
{
    if ((E->max_vm == 0 && E->max_rss == 0) || more == 0)
        return 1;
    size_t vm, rss;
    mem_bytes(&vm, &rss);
    if (E->max_vm > 0 && vm > 0 && vm + more > E->max_vm) {
        E->vm_full = 1;
        return 0;
    }
    if (E->max_rss > 0 && rss > 0 && rss + more > E->max_rss) {
        E->vm_full = 2;
        return 0;
    }
    return 1;
}

int64_t sp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int sp_ectx_deadline_passed(sp_ectx_t E)
{
    if (E->deadline_ns == 0 || sp_now_ns() <= E->deadline_ns)
        return 0;
    E->vm_full = 3;
    E->oom = 1;
    return 1;
}

/* Has the run's deadline passed?  Looked at every 65536 new nodes; then the store is full. */
static int past_deadline(sp_ectx_t E)
{
    return (E->len & 0xffff) == 0 && sp_ectx_deadline_passed(E);
}

/* Append a new node with hash h (no lookup).  args must be in canonical order. */
static sp_expr_t insert(sp_ectx_t E, sp_op_t op, int64_t param, const sp_expr_t *args, uint32_t n,
                        uint64_t h)
{
    if ((E->max_nodes && E->len >= E->max_nodes) || E->len >= UINT32_MAX - 1) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    if (E->len == 0)
        E->len = 1; /* id 0 is SP_EXPR_NONE */
    /* the doublings ahead: the new arrays (a moved array briefly beside the old one) */
    size_t more = ((size_t)E->len + 1 > E->alloc ? 2 * (size_t)E->alloc * sizeof(sp_node_t) : 0) +
                  (E->argv_len + n > E->argv_alloc ? 2 * E->argv_alloc * sizeof(uint32_t) : 0) +
                  (table_full(E) ? 2 * (size_t)E->table_size * sizeof(uint64_t) : 0);
    if (!room(E, more) || past_deadline(E)) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    size_t alloc = E->alloc, aalloc = E->argv_alloc;
    int ok = grow_by((void **)&E->nodes, sizeof(sp_node_t), (size_t)E->len + 1, &alloc, 1);
    E->alloc = (uint32_t)alloc;
    ok = ok && grow_by((void **)&E->argv, sizeof(uint32_t), E->argv_len + n, &aalloc, 1);
    E->argv_alloc = aalloc;
    if (!ok || (table_full(E) && !table_grow(E))) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    sp_expr_t id = E->len;
    sp_node_t *nd = &E->nodes[id];
    nd->op = (uint8_t)op;
    nd->flags = (uint8_t)op_flags(op);
    nd->pad = 0;
    nd->nargs = n;
    nd->args = (uint32_t)E->argv_len;
    nd->param = param;
    if (op == SP_OP_POW && param < 0)
        nd->flags |= SP_NODE_DIV;
    for (uint32_t i = 0; i < n; i++) {
        E->argv[E->argv_len + i] = args[i];
        nd->flags |= E->nodes[args[i]].flags & ~(SP_NODE_AXSUM | SP_NODE_XSUM);
    }
    E->argv_len += n;
    E->len++;
    uint32_t j = tab_slot(h, E->table_size);
    while (E->table[j] != 0)
        j = (j + 1) & (E->table_size - 1);
    E->table[j] = tab_entry(id, h);
    return id;
}

/* Find or insert the node (op, param, args).  args must already be in canonical order. */
static sp_expr_t intern(sp_ectx_t E, sp_op_t op, int64_t param, const sp_expr_t *args, uint32_t n)
{
    if (E->oom)
        return SP_EXPR_NONE;
    for (uint32_t i = 0; i < n; i++)
        if (args[i] == SP_EXPR_NONE)
            return SP_EXPR_NONE;
    uint64_t h = node_hash(op, param, args, n);
    if (E->table_size != 0) {
        uint32_t j = tab_slot(h, E->table_size);
        while (E->table[j] != 0) {
            uint64_t e = E->table[j];
            uint32_t id = (uint32_t)e;
            if (tab_tag_match(e, h) && node_equal(E, id, op, param, args, n))
                return id;
            j = (j + 1) & (E->table_size - 1);
        }
    }
    return insert(E, op, param, args, n, h);
}

/*
 * Prefetch the table slot where the product a * b would be found or inserted: interning probes a
 * hash table far larger than the cache, so the dot products of matmul and attention call this
 * for a batch of products before building them, and the batch's cache misses overlap.  Only a
 * hint: nothing in the context changes, and a product its constructor rewrites (a neutral
 * constant dropped) merely misses.
 */
void sp_expr_prefetch_mul(const sp_ectx_t E, sp_expr_t a, sp_expr_t b)
{
    if (E->table_size == 0)
        return;
    sp_expr_t v[2] = {a < b ? a : b, a < b ? b : a}; /* sp_expr_nary's order */
    uint64_t h = node_hash(SP_OP_MUL, 0, v, 2);
    __builtin_prefetch(E->table + tab_slot(h, E->table_size));
}

int sp_ectx_is_valid(const sp_ectx_t E)
{
    for (uint32_t id = 1; id < E->len; id++) {
        const sp_node_t *nd = &E->nodes[id];
        if (nd->op == 0 || nd->op >= SP_OP__COUNT)
            return 0;
        for (uint32_t i = 0; i < nd->nargs; i++) {
            sp_expr_t a = E->argv[nd->args + i];
            if (a == 0 || a >= id)
                return 0;
            if (i > 0 && sp_op_is_nary((sp_op_t)nd->op) && E->argv[nd->args + i - 1] > a)
                return 0;
        }
        int ar = sp_op_arity((sp_op_t)nd->op);
        if (ar >= 0 && (uint32_t)ar != nd->nargs)
            return 0;
        if (nd->op == SP_OP_CONST && !fmpq_is_canonical(E->consts + nd->param))
            return 0;
    }
    return 1;
}

/* ---- constructors ------------------------------------------------------------------------- */

/* name's text kept in the store's chunks (a symbol's name lives as long as the store) */
static char *name_copy(sp_ectx_t E, const char *name)
{
    size_t len = strlen(name) + 1;
    if (E->nchunks == 0 || E->chunk_size - E->chunk_used < len) {
        size_t alloc = E->chunks_alloc;
        if (!grow((void **)&E->name_chunks, sizeof(char *), (size_t)E->nchunks + 1, &alloc))
            return NULL;
        E->chunks_alloc = (uint32_t)alloc;
        size_t size = len > 65536 ? len : 65536;
        char *c = flint_malloc(size);
        if (c == NULL)
            return NULL;
        E->name_chunks[E->nchunks++] = c;
        E->chunk_size = size;
        E->chunk_used = 0;
    }
    char *copy = E->name_chunks[E->nchunks - 1] + E->chunk_used;
    memcpy(copy, name, len);
    E->chunk_used += len;
    return copy;
}

/* The index of the symbol called name, whose sp_str_hash is h, created if new; -1 when out of
   memory (then E->oom). */
static int64_t sym_index(sp_ectx_t E, const char *name, uint64_t h)
{
    if (E->name_table_size != 0) {
        uint32_t j = (uint32_t)h & (E->name_table_size - 1);
        while (E->name_table[j] != 0) {
            uint32_t s = E->name_table[j] - 1;
            if (E->name_hash[s] == h && strcmp(E->names[s], name) == 0)
                return s;
            j = (j + 1) & (E->name_table_size - 1);
        }
    }
    size_t alloc = E->syms_alloc;
    if (E->nsyms >= INT32_MAX || /* a node's index has 32 bits */
        !grow((void **)&E->names, sizeof(char *), (size_t)E->nsyms + 1, &alloc)) {
        E->oom = 1;
        return -1;
    }
    if (alloc != E->syms_alloc) {
        uint64_t *hs = flint_realloc(E->name_hash, alloc * sizeof(uint64_t));
        if (hs == NULL) {
            E->oom = 1;
            return -1;
        }
        E->name_hash = hs;
    }
    E->syms_alloc = (uint32_t)alloc;
    char *copy = name_copy(E, name);
    if (copy == NULL) {
        E->oom = 1;
        return -1;
    }
    uint32_t s = E->nsyms++;
    E->names[s] = copy;
    E->name_hash[s] = h;
    if (2 * (size_t)E->nsyms > E->name_table_size) {
        uint32_t size = E->name_table_size ? 2 * E->name_table_size : 256;
        uint32_t *t = flint_calloc(size, sizeof(uint32_t));
        if (t == NULL) {
            E->oom = 1;
            return -1;
        }
        for (uint32_t k = 0; k < E->nsyms; k++) {
            uint32_t j = (uint32_t)E->name_hash[k] & (size - 1);
            while (t[j] != 0)
                j = (j + 1) & (size - 1);
            t[j] = k + 1;
        }
        flint_free(E->name_table);
        E->name_table = t;
        E->name_table_size = size;
    } else {
        uint32_t j = (uint32_t)h & (E->name_table_size - 1);
        while (E->name_table[j] != 0)
            j = (j + 1) & (E->name_table_size - 1);
        E->name_table[j] = s + 1;
    }
    return s;
}

/* The symbol called name, whose sp_str_hash is h. */
static sp_expr_t sym_hashed(sp_ectx_t E, const char *name, uint64_t h)
{
    if (E->oom)
        return SP_EXPR_NONE;
    int64_t s = sym_index(E, name, h);
    return s < 0 ? SP_EXPR_NONE : intern(E, SP_OP_SYM, s, NULL, 0);
}

sp_expr_t sp_expr_sym(sp_ectx_t E, const char *name)
{
    return sym_hashed(E, name, sp_str_hash(name));
}

sp_expr_t sp_expr_hollow(sp_ectx_t E)
{
    sp_expr_t h = sp_expr_sym(E, "__hollow");
    if (h != SP_EXPR_NONE) {
        E->nodes[h].flags |= SP_NODE_HOLLOW; /* no node uses it yet if it is new */
        E->hollow = h;
    }
    return h;
}

int sp_expr_syms(sp_ectx_t E, const char *const *names, size_t n, sp_expr_t *out)
{
    enum { BATCH = 16 };
    uint64_t h[BATCH];
    int64_t s[BATCH];
    for (size_t b = 0; b < n; b += BATCH) {
        size_t m = n - b < BATCH ? n - b : BATCH;
        /* the name table's slots, then the symbols, then the node table's slots of their
           nodes: each phase's cache misses overlap, and ids come out as one by one */
        for (size_t i = 0; i < m; i++) {
            h[i] = sp_str_hash(names[b + i]);
            if (E->name_table_size != 0)
                __builtin_prefetch(E->name_table + (h[i] & (E->name_table_size - 1)));
        }
        for (size_t i = 0; i < m; i++)
            if (E->oom || (s[i] = sym_index(E, names[b + i], h[i])) < 0)
                return 0;
        if (E->table_size != 0)
            for (size_t i = 0; i < m; i++)
                __builtin_prefetch(E->table + tab_slot(node_hash(SP_OP_SYM, s[i], NULL, 0),
                                                       E->table_size));
        for (size_t i = 0; i < m; i++)
            if ((out[b + i] = intern(E, SP_OP_SYM, s[i], NULL, 0)) == SP_EXPR_NONE)
                return 0;
    }
    return 1;
}

sp_expr_t sp_expr_sym_copy(sp_ectx_t dst, const sp_ectx_t src, uint32_t s)
{
    return sym_hashed(dst, src->names[s], src->name_hash[s]);
}

static uint64_t fmpz_hash(const fmpz_t z)
{
    uint64_t h = (uint64_t)fmpz_sgn(z) + 3;
    if (!COEFF_IS_MPZ(*z))
        return sp_mix64(h ^ (uint64_t)*z);
    const __mpz_struct *m = COEFF_TO_PTR(*z);
    for (int i = 0; i < abs(m->_mp_size); i++)
        h = sp_mix64(h ^ (uint64_t)m->_mp_d[i]);
    return h;
}

sp_expr_t sp_expr_const_fmpq(sp_ectx_t E, const fmpq_t c)
{
    if (E->oom)
        return SP_EXPR_NONE;
    /* Constants are hash-consed by value, so the hash is of the value, not of the pool index. */
    uint64_t h = sp_mix64(fmpz_hash(fmpq_numref(c)) * 31 + fmpz_hash(fmpq_denref(c)) + SP_OP_CONST);
    if (E->table_size != 0) {
        uint32_t j = tab_slot(h, E->table_size);
        while (E->table[j] != 0) {
            uint64_t e = E->table[j];
            uint32_t id = (uint32_t)e;
            if (tab_tag_match(e, h) && E->nodes[id].op == SP_OP_CONST &&
                fmpq_equal(E->consts + E->nodes[id].param, c))
                return id;
            j = (j + 1) & (E->table_size - 1);
        }
    }
    size_t alloc = E->consts_alloc;
    if (!grow((void **)&E->consts, sizeof(fmpq), (size_t)E->nconsts + 1, &alloc)) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    E->consts_alloc = (uint32_t)alloc;
    uint32_t k = E->nconsts;
    if (k >= INT32_MAX) { /* a node's index has 32 bits */
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    fmpq_init(E->consts + k);
    fmpq_set(E->consts + k, c);
    E->nconsts++;
    return insert(E, SP_OP_CONST, k, NULL, 0, h);
}

sp_expr_t sp_expr_const_si(sp_ectx_t E, slong num, ulong den)
{
    fmpq_t c;
    fmpq_init(c);
    fmpq_set_si(c, num, den ? den : 1);
    sp_expr_t e = sp_expr_const_fmpq(E, c);
    fmpq_clear(c);
    return e;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

sp_expr_t sp_expr_nary(sp_ectx_t E, sp_op_t op, const sp_expr_t *args, uint32_t n)
{
    if (n == 0) {
        if (op == SP_OP_ADD)
            return sp_expr_const_si(E, 0, 1);
        if (op == SP_OP_MUL)
            return sp_expr_const_si(E, 1, 1);
        return SP_EXPR_NONE; /* max/min of nothing */
    }
    if (n == 1 && sp_op_is_nary(op))
        return args[0];
    if (!sp_op_is_nary(op)) {
        int ar = sp_op_arity(op);
        if (ar < 0 || (uint32_t)ar != n || op == SP_OP_POW || op == SP_OP_CMP)
            return SP_EXPR_NONE;
        return intern(E, op, 0, args, n);
    }
    /* x + 0 = x and x * 1 = x: drop the neutral constants (always valid, no domain changes) */
    if (op == SP_OP_ADD || op == SP_OP_MUL) {
        uint32_t keep = 0;
        int neutral_seen = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (args[i] != SP_EXPR_NONE && args[i] < E->len && E->nodes[args[i]].op == SP_OP_CONST) {
                const fmpq *c = E->consts + E->nodes[args[i]].param;
                if (op == SP_OP_ADD ? fmpq_is_zero(c) : fmpq_is_one(c)) {
                    neutral_seen = 1;
                    continue;
                }
            }
            keep++;
        }
        if (neutral_seen && keep < n) {
            if (keep == 0)
                return sp_expr_const_si(E, op == SP_OP_ADD ? 0 : 1, 1);
            sp_expr_t *w = flint_malloc(keep * sizeof(sp_expr_t));
            uint32_t k = 0;
            for (uint32_t i = 0; i < n; i++) {
                if (args[i] != SP_EXPR_NONE && args[i] < E->len && E->nodes[args[i]].op == SP_OP_CONST) {
                    const fmpq *c = E->consts + E->nodes[args[i]].param;
                    if (op == SP_OP_ADD ? fmpq_is_zero(c) : fmpq_is_one(c))
                        continue;
                }
                w[k++] = args[i];
            }
            sp_expr_t r = sp_expr_nary(E, op, w, keep);
            flint_free(w);
            return r;
        }
    }
    sp_expr_t small[8];
    sp_expr_t *v = n <= 8 ? small : flint_malloc(n * sizeof(sp_expr_t));
    if (v == NULL) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    memcpy(v, args, n * sizeof(sp_expr_t));
    uint32_t unsorted = 0;
    for (uint32_t i = 1; i < n && !unsorted; i++)
        unsorted = v[i - 1] > v[i];
    if (unsorted && n <= 16) {
        for (uint32_t i = 1; i < n; i++) {
            sp_expr_t t = v[i];
            uint32_t j = i;
            for (; j > 0 && v[j - 1] > t; j--)
                v[j] = v[j - 1];
            v[j] = t;
        }
    } else if (unsorted) {
        qsort(v, n, sizeof(sp_expr_t), cmp_u32);
    }
    sp_expr_t r = intern(E, op, 0, v, n);
    if (v != small)
        flint_free(v);
    return r;
}

sp_expr_t sp_expr_unary(sp_ectx_t E, sp_op_t op, sp_expr_t a)
{
    if (sp_op_arity(op) != 1 || op == SP_OP_POW)
        return SP_EXPR_NONE;
    return intern(E, op, 0, &a, 1);
}

sp_expr_t sp_expr_binary(sp_ectx_t E, sp_op_t op, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[2] = {a, b};
    if (sp_op_is_nary(op))
        return sp_expr_nary(E, op, v, 2);
    if (op != SP_OP_SUB && op != SP_OP_DIV)
        return SP_EXPR_NONE;
    return intern(E, op, 0, v, 2);
}

sp_expr_t sp_expr_pow(sp_ectx_t E, sp_expr_t a, slong k)
{
    if (k == 1)
        return a;
    /* a node's exponent has 32 bits: a^k = (a^B)^hi * a^lo with k = hi * B + lo, B = 2^30, hi
       and lo of k's sign (C division), so every factor is defined exactly where a^k is; hi
       recurses at most twice for 64-bit k */
    if (k > INT32_MAX || k < -INT32_MAX) {
        const slong B = (slong)1 << 30;
        slong hi = k / B, lo = k % B;
        sp_expr_t h = sp_expr_pow(E, sp_expr_pow(E, a, B), hi);
        return lo == 0 ? h : sp_expr_mul(E, h, sp_expr_pow(E, a, lo));
    }
    return intern(E, SP_OP_POW, k, &a, 1);
}

sp_expr_t sp_expr_cmp(sp_ectx_t E, sp_cmp_t c, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[2] = {a, b};
    if ((unsigned)c > SP_CMP_NE)
        return SP_EXPR_NONE;
    return intern(E, SP_OP_CMP, c, v, 2);
}

sp_expr_t sp_expr_where(sp_ectx_t E, sp_expr_t c, sp_expr_t a, sp_expr_t b)
{
    sp_expr_t v[3] = {c, a, b};
    return intern(E, SP_OP_WHERE, 0, v, 3);
}

sp_expr_t sp_expr_clamp(sp_ectx_t E, sp_expr_t x, sp_expr_t lo, sp_expr_t hi)
{
    sp_expr_t v[3] = {x, lo, hi};
    return intern(E, SP_OP_CLAMP, 0, v, 3);
}

static int is_zero_const(const sp_ectx_t E, sp_expr_t e)
{
    return E->nodes[e].op == SP_OP_CONST && fmpq_is_zero(E->consts + E->nodes[e].param);
}

/* pairs (a, b) with a <= b, ordered by a then b */
static int pair_cmp(const void *p, const void *q)
{
    const sp_expr_t *a = p, *b = q;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] != b[1] ? (a[1] < b[1] ? -1 : 1) : 0;
}

static sp_expr_t dot_of(sp_ectx_t E, sp_expr_t *x, sp_expr_t *y, uint32_t n)
{
    if (E->oom)
        return SP_EXPR_NONE;
    uint32_t m = 0;
    if (E->dot_sets && E->dot_ok && n > 1 && x[0] != SP_EXPR_NONE && y[0] != SP_EXPR_NONE &&
        !is_zero_const(E, x[0]) && !is_zero_const(E, y[0])) {
        /* a trace's row and column are often one node each: one pair */
        uint32_t i = 1;
        while (i < n && x[i] == x[0] && y[i] == y[0])
            i++;
        if (i == n) {
            sp_expr_t v[2] = {x[0] < y[0] ? x[0] : y[0], x[0] < y[0] ? y[0] : x[0]};
            return intern(E, SP_OP_DOT, (int64_t)n, v, 2);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (x[i] == SP_EXPR_NONE || y[i] == SP_EXPR_NONE)
            return SP_EXPR_NONE;
        if (is_zero_const(E, x[i]) || is_zero_const(E, y[i]))
            continue;
        x[m] = x[i];
        y[m++] = y[i];
    }
    if (m == 0)
        return sp_expr_const_si(E, 0, 1);
    if (m == 1 || !E->dot_ok) {
        /* the sum of the products, as sp_expr_nary builds it from any order; the products'
           table slots are prefetched 16 at a time, so their cache misses overlap */
        for (uint32_t b = 0; b < m; b += 16) {
            uint32_t e = b + 16 < m ? b + 16 : m;
            for (uint32_t i = b; i < e; i++)
                sp_expr_prefetch_mul(E, x[i], y[i]);
            for (uint32_t i = b; i < e; i++)
                x[i] = sp_expr_mul(E, x[i], y[i]);
        }
        for (uint32_t i = 0; i < m; i++)
            if (x[i] == SP_EXPR_NONE)
                return SP_EXPR_NONE;
        return sp_expr_nary(E, SP_OP_ADD, x, m);
    }
    sp_expr_t small[64], *v = 2 * (size_t)m <= 64 ? small : flint_malloc(2 * (size_t)m * sizeof(sp_expr_t));
    if (v == NULL) {
        E->oom = 1;
        return SP_EXPR_NONE;
    }
    for (uint32_t i = 0; i < m; i++) {
        v[2 * i] = x[i] < y[i] ? x[i] : y[i];
        v[2 * i + 1] = x[i] < y[i] ? y[i] : x[i];
    }
    /* often in order already (the factors of a row and a column were built in order) */
    uint32_t unsorted = 0;
    for (uint32_t i = 1; i < m && !unsorted; i++)
        unsorted = pair_cmp(v + 2 * (i - 1), v + 2 * i) > 0;
    if (unsorted && m <= 16) {
        for (uint32_t i = 1; i < m; i++) {
            sp_expr_t a = v[2 * i], b = v[2 * i + 1];
            uint32_t j = i;
            for (; j > 0 && (v[2 * j - 2] > a || (v[2 * j - 2] == a && v[2 * j - 1] > b)); j--) {
                v[2 * j] = v[2 * j - 2];
                v[2 * j + 1] = v[2 * j - 1];
            }
            v[2 * j] = a;
            v[2 * j + 1] = b;
        }
    } else if (unsorted) {
        qsort(v, m, 2 * sizeof(sp_expr_t), pair_cmp);
    }
    uint32_t kept = m;
    if (E->dot_sets) {
        kept = 1;
        for (uint32_t i = 1; i < m; i++)
            if (v[2 * i] != v[2 * kept - 2] || v[2 * i + 1] != v[2 * kept - 1]) {
                v[2 * kept] = v[2 * i];
                v[2 * kept++ + 1] = v[2 * i + 1];
            }
    }
    sp_expr_t r = intern(E, SP_OP_DOT, E->dot_sets ? (int64_t)m : 0, v, 2 * kept);
    if (v != small)
        flint_free(v);
    return r;
}

/* A dot product sums over the contracted axis: marked (sp_expr_mark_axsum) */
sp_expr_t sp_expr_dot(sp_ectx_t E, sp_expr_t *x, sp_expr_t *y, uint32_t n)
{
    sp_expr_t r = dot_of(E, x, y, n);
    sp_expr_mark_axsum(E, r);
    return r;
}

/* ---- cone --------------------------------------------------------------------------------- */

/* Open-addressing set of node ids, for cones much smaller than the store. */
typedef struct {
    uint32_t *slot;
    size_t size, n;
} idset_t;

static int idset_add(idset_t *S, uint32_t id)
{
    if (2 * (S->n + 1) > S->size) {
        size_t size = S->size ? 2 * S->size : 256;
        uint32_t *t = flint_calloc(size, sizeof(uint32_t));
        for (size_t i = 0; i < S->size; i++)
            if (S->slot[i]) {
                size_t j = (size_t)sp_mix64(S->slot[i]) & (size - 1);
                while (t[j])
                    j = (j + 1) & (size - 1);
                t[j] = S->slot[i];
            }
        flint_free(S->slot);
        S->slot = t;
        S->size = size;
    }
    size_t j = (size_t)sp_mix64(id) & (S->size - 1);
    while (S->slot[j]) {
        if (S->slot[j] == id)
            return 0;
        j = (j + 1) & (S->size - 1);
    }
    S->slot[j] = id;
    S->n++;
    return 1;
}

size_t sp_expr_cone(const sp_ectx_t E, const sp_expr_t *roots, size_t nroots, uint32_t **out)
{
    return sp_expr_cone_skip(E, roots, nroots, NULL, 0, out);
}

size_t sp_expr_cone_skip(const sp_ectx_t E, const sp_expr_t *roots, size_t nroots,
                         const uint32_t *skip, size_t nskip, uint32_t **out)
{
    *out = NULL;
    idset_t seen = {NULL, 0, 0};
    size_t cap = 64, sp = 0;
    uint32_t *stack = flint_malloc(cap * sizeof(uint32_t));
    uint32_t *res = flint_malloc(64 * sizeof(uint32_t));
    size_t rcap = 64, cnt = 0;
    for (size_t i = 0; i < nroots; i++) {
        if (roots[i] == 0 || roots[i] >= E->len || !idset_add(&seen, roots[i]))
            continue;
        stack[sp++] = roots[i];
        while (sp > 0) {
            uint32_t id = stack[--sp];
            if (cnt == rcap) {
                rcap *= 2;
                res = flint_realloc(res, rcap * sizeof(uint32_t));
            }
            res[cnt++] = id;
            const sp_node_t *nd = &E->nodes[id];
            for (uint32_t k = 0; k < nd->nargs; k++) {
                uint32_t a = E->argv[nd->args + k];
                if ((a < nskip && skip[a] != 0) || !idset_add(&seen, a))
                    continue;
                if (sp == cap) {
                    cap *= 2;
                    stack = flint_realloc(stack, cap * sizeof(uint32_t));
                }
                stack[sp++] = a;
            }
        }
    }
    flint_free(stack);
    flint_free(seen.slot);
    qsort(res, cnt, sizeof(uint32_t), cmp_u32);
    *out = res;
    return cnt;
}

/* ---- printing ----------------------------------------------------------------------------- */

static int is_leaf(const sp_ectx_t E, sp_expr_t e)
{
    if (E->nodes[e].op == SP_OP_SYM)
        return 1;
    if (E->nodes[e].op == SP_OP_CONST) {
        const fmpq *c = sp_expr_const(E, e);
        return fmpz_sgn(fmpq_numref(c)) >= 0 && fmpz_is_one(fmpq_denref(c));
    }
    return 0;
}

/*
 * The printed text must read back as the same node (the reader is sp_expr_parse below) and must
 * not nest deeper than the text it came from (the reader limits nesting), so:
 *  - ADD and MUL of two arguments and SUB, DIV, POW, NEG print infix; ADD and MUL of more
 *    arguments print as calls, add(a, b, c) (infix would read back nested);
 *  - a DIV of two constants prints as div(a, b): the reader takes the literal a/b as one constant;
 *  - a negative or fractional constant prints as its literal (-3, 1/2, -1/2), which the reader
 *    folds into one constant; NEG of a constant prints -(c) so that it stays a NEG;
 *  - parentheses only where precedence and left associativity need them, so that a left-nested
 *    chain a + b + c prints without one level per link; the arguments of commutative ADD and MUL
 *    are printed with the same-precedence one first for the same reason (their order does not
 *    matter once read back: the constructor sorts them).
 */
static int is_call_form(const sp_ectx_t E, sp_expr_t e)
{
    const sp_node_t *nd = &E->nodes[e];
    switch ((sp_op_t)nd->op) {
    case SP_OP_ADD: case SP_OP_MUL:
        return nd->nargs != 2;
    case SP_OP_SUB: case SP_OP_POW: case SP_OP_NEG: case SP_OP_SYM: case SP_OP_CONST:
        return 0;
    case SP_OP_DIV:
        return E->nodes[E->argv[nd->args]].op == SP_OP_CONST &&
               E->nodes[E->argv[nd->args + 1]].op == SP_OP_CONST;
    default:
        return 1;
    }
}

/* Precedence level of an infix node: 1 for + -, 2 for * /, 0 for anything else. */
static int infix_level(const sp_ectx_t E, sp_expr_t e)
{
    if (is_call_form(E, e))
        return 0;
    switch ((sp_op_t)E->nodes[e].op) {
    case SP_OP_ADD: case SP_OP_SUB: return 1;
    case SP_OP_MUL: case SP_OP_DIV: return 2;
    default: return 0;
    }
}

/* Does child e need parentheses as the printed argument number pos of parent (0 = top)? */
static int needs_paren(const sp_ectx_t E, sp_expr_t e, sp_expr_t parent, uint32_t pos)
{
    if (parent == SP_EXPR_NONE || is_call_form(E, parent) || is_call_form(E, e) || is_leaf(E, e))
        return 0;
    sp_op_t pop = (sp_op_t)E->nodes[parent].op, op = (sp_op_t)E->nodes[e].op;
    if (op == SP_OP_CONST)
        return 1; /* a negative or fractional literal inside an operator */
    if (op == SP_OP_NEG || op == SP_OP_POW)
        return pop == SP_OP_POW; /* -x^2 is -(x^2); x^2^3 does not read */
    if (pop == SP_OP_POW || pop == SP_OP_NEG)
        return 1;
    int lp = infix_level(E, parent), lc = infix_level(E, e);
    if (lc > lp)
        return 0;
    return lc < lp || pos != 0; /* same level: only the left operand goes bare */
}

/* The argument of e printed at position pos (ADD and MUL print a same-level argument first). */
static sp_expr_t print_arg(const sp_ectx_t E, sp_expr_t e, uint32_t pos)
{
    const sp_node_t *nd = &E->nodes[e];
    if ((nd->op == SP_OP_ADD || nd->op == SP_OP_MUL) && nd->nargs == 2) {
        sp_expr_t a = E->argv[nd->args], b = E->argv[nd->args + 1];
        int l = infix_level(E, e);
        if (infix_level(E, b) == l && infix_level(E, a) != l)
            return pos == 0 ? b : a;
    }
    return E->argv[nd->args + pos];
}

/* Text of e before its first argument; paren: e is wrapped in parentheses. */
static void print_open(sp_sbuf_t *b, const sp_ectx_t E, sp_expr_t e, int paren)
{
    const sp_node_t *nd = &E->nodes[e];
    if (paren)
        sp_sbuf_putc(b, '(');
    switch ((sp_op_t)nd->op) {
    case SP_OP_SYM:
        sp_sbuf_puts(b, E->names[nd->param]);
        break;
    case SP_OP_CONST:
        sp_sbuf_put_fmpq(b, E->consts + nd->param);
        break;
    case SP_OP_NEG: {
        sp_expr_t a = E->argv[nd->args];
        /* -(3) stays a NEG of 3; -3 would read back as the constant -3 */
        sp_sbuf_puts(b, E->nodes[a].op == SP_OP_CONST && is_leaf(E, a) ? "-(" : "-");
        break;
    }
    case SP_OP_CMP:
        sp_sbuf_printf(b, "%s(", sp_cmp_name((sp_cmp_t)nd->param));
        break;
    default:
        if (is_call_form(E, e))
            sp_sbuf_printf(b, "%s(", sp_op_name((sp_op_t)nd->op));
        break;
    }
}

static const char *print_sep(const sp_ectx_t E, sp_expr_t e)
{
    if (is_call_form(E, e))
        return ", ";
    switch ((sp_op_t)E->nodes[e].op) {
    case SP_OP_ADD: return " + ";
    case SP_OP_MUL: return "*";
    case SP_OP_SUB: return " - ";
    case SP_OP_DIV: return "/";
    default: return ", ";
    }
}

/* Text of e after its last argument. */
static void print_close(sp_sbuf_t *b, const sp_ectx_t E, sp_expr_t e, int paren)
{
    const sp_node_t *nd = &E->nodes[e];
    if (nd->op == SP_OP_POW)
        sp_sbuf_printf(b, "^%lld", (long long)nd->param);
    if (nd->op == SP_OP_NEG && E->nodes[E->argv[nd->args]].op == SP_OP_CONST &&
        is_leaf(E, E->argv[nd->args]))
        sp_sbuf_putc(b, ')');
    if (nd->op != SP_OP_SYM && nd->op != SP_OP_CONST && is_call_form(E, e))
        sp_sbuf_putc(b, ')');
    if (paren)
        sp_sbuf_putc(b, ')');
}

typedef struct {
    sp_expr_t id;
    uint32_t next;  /* index of the next argument to print */
    int paren;      /* the node is wrapped in parentheses */
} print_frame_t;

/*
 * An explicit-stack walk of the tree that e unfolds to, writing into one buffer and stopping at
 * the length cap, so a deep chain costs time and memory linear in the printed length.
 */
char *sp_expr_print(const sp_ectx_t E, sp_expr_t e, size_t maxlen)
{
    sp_sbuf_t out;
    sp_sbuf_init(&out);
    if (e == SP_EXPR_NONE || e >= E->len) {
        sp_sbuf_puts(&out, "<none>");
        return sp_sbuf_take(&out);
    }
    out.cap = maxlen ? maxlen : ((size_t)1 << 22);
    size_t cap = 64, sp = 0;
    print_frame_t *stack = flint_malloc(cap * sizeof(print_frame_t));
    if (stack == NULL) {
        sp_sbuf_puts(&out, "<out of memory>");
        return sp_sbuf_take(&out);
    }
    print_open(&out, E, e, 0);
    stack[sp].id = e;
    stack[sp].paren = 0;
    stack[sp++].next = 0;
    while (sp > 0 && !out.truncated && !out.failed) {
        print_frame_t *f = &stack[sp - 1];
        const sp_node_t *nd = &E->nodes[f->id];
        if (f->next == nd->nargs) {
            print_close(&out, E, f->id, f->paren);
            sp--;
            continue;
        }
        if (f->next > 0)
            sp_sbuf_puts(&out, print_sep(E, f->id));
        uint32_t pos = f->next++;
        sp_expr_t a = print_arg(E, f->id, pos);
        int paren = needs_paren(E, a, f->id, pos);
        if (sp == cap) {
            print_frame_t *s2 = flint_realloc(stack, 2 * cap * sizeof(print_frame_t));
            if (s2 == NULL) {
                flint_free(stack);
                sp_sbuf_clear(&out);
                sp_sbuf_puts(&out, "<out of memory>");
                return sp_sbuf_take(&out);
            }
            stack = s2;
            cap *= 2;
        }
        print_open(&out, E, a, paren);
        stack[sp].id = a;
        stack[sp].paren = paren;
        stack[sp++].next = 0;
    }
    flint_free(stack);
    return sp_sbuf_take(&out);
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct {
    sp_ectx_struct *E;
    const char *s;
    size_t pos;
    int depth;
    char *err;
    size_t errlen;
    int failed;
    sp_expr_t *args; /* arguments of the calls being read, innermost last */
    size_t nargs, args_alloc;
    int lit;         /* the last rd_unary read a bare number literal (-3 and 1/2 fold) */
} rd_t;

static void rd_error(rd_t *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    if (r->err && r->errlen) {
        int k = snprintf(r->err, r->errlen, "column %zu: ", r->pos);
        if (k >= 0 && (size_t)k < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
}

static void rd_ws(rd_t *r)
{
    while (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' || r->s[r->pos] == '\n')
        r->pos++;
}

static sp_expr_t rd_expr(rd_t *r);

/* Longest digit run a number may have: as long as the longest text sp_expr_print writes. */
#define RD_MAX_DIGITS ((size_t)1 << 22)

/* Exact decimal: digits [. digits] [e[+-]digits].  The digits are converted in one go (GMP's
   conversion is subquadratic), so every constant the printer writes reads back. */
static sp_expr_t rd_number(rd_t *r)
{
    size_t st = r->pos, ni = 0, nf = 0;
    while (isdigit((unsigned char)r->s[r->pos + ni]))
        ni++;
    r->pos += ni;
    size_t fst = r->pos + 1;
    if (r->s[r->pos] == '.') {
        r->pos++;
        while (isdigit((unsigned char)r->s[r->pos + nf]))
            nf++;
        r->pos += nf;
    }
    if (ni + nf > RD_MAX_DIGITS) {
        rd_error(r, "number too long");
        return SP_EXPR_NONE;
    }
    char *digits = flint_malloc(ni + nf + 1); /* ni >= 1: the caller saw a digit */
    memcpy(digits, r->s + st, ni);
    memcpy(digits + ni, r->s + fst, nf);
    digits[ni + nf] = 0;
    fmpz_t num, den;
    fmpz_init(num);
    fmpz_init(den);
    fmpz_set_str(num, digits, 10);
    flint_free(digits);
    fmpz_set_ui(den, 10);
    fmpz_pow_ui(den, den, nf);
    if (r->s[r->pos] == 'e' || r->s[r->pos] == 'E') {
        size_t save = r->pos;
        r->pos++;
        int neg = 0;
        if (r->s[r->pos] == '+' || r->s[r->pos] == '-')
            neg = r->s[r->pos++] == '-';
        if (!isdigit((unsigned char)r->s[r->pos])) {
            r->pos = save;
        } else {
            ulong ex = 0;
            while (isdigit((unsigned char)r->s[r->pos])) {
                ex = ex * 10 + (ulong)(r->s[r->pos] - '0');
                r->pos++;
                if (ex > 4000) {
                    rd_error(r, "exponent too large");
                    fmpz_clear(num);
                    fmpz_clear(den);
                    return SP_EXPR_NONE;
                }
            }
            fmpz_t p;
            fmpz_init(p);
            fmpz_set_ui(p, 10);
            fmpz_pow_ui(p, p, ex);
            if (neg)
                fmpz_mul(den, den, p);
            else
                fmpz_mul(num, num, p);
            fmpz_clear(p);
        }
    }
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_fmpz_frac(q, num, den);
    sp_expr_t e = sp_expr_const_fmpq(r->E, q);
    fmpq_clear(q);
    fmpz_clear(num);
    fmpz_clear(den);
    return e;
}

static int is_ident_char(int c)
{
    return isalnum(c) || c == '_' || c == '.';
}

/* The symbol named by len characters at name. */
static sp_expr_t rd_symbol(rd_t *r, const char *name, size_t len)
{
    char *s = flint_malloc(len + 1);
    if (s == NULL) {
        rd_error(r, "out of memory");
        return SP_EXPR_NONE;
    }
    memcpy(s, name, len);
    s[len] = 0;
    sp_expr_t e = sp_expr_sym(r->E, s);
    flint_free(s);
    return e;
}

static int rd_name_is(const char *name, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(name, word, len) == 0;
}

/* The call name(args[0..n)) once its arguments are read. */
static sp_expr_t rd_call(rd_t *r, const char *name, size_t len, const sp_expr_t *args, uint32_t n)
{
    for (int k = 0; k < 6; k++)
        if (rd_name_is(name, len, cmp_names[k])) {
            if (n != 2) {
                rd_error(r, "'%.*s' takes 2 arguments", (int)len, name);
                return SP_EXPR_NONE;
            }
            return sp_expr_cmp(r->E, (sp_cmp_t)k, args[0], args[1]);
        }
    for (int op = SP_OP_ADD; op < SP_OP__COUNT; op++) {
        if (!rd_name_is(name, len, op_names[op]) || op == SP_OP_CMP || op == SP_OP_POW ||
            op == SP_OP_DOT)
            continue;
        int ar = sp_op_arity((sp_op_t)op);
        if (ar < 0 && n == 0) {
            rd_error(r, "'%.*s' takes at least 1 argument", (int)len, name);
            return SP_EXPR_NONE;
        }
        if (ar >= 0 && (uint32_t)ar != n) {
            rd_error(r, "'%.*s' takes %d argument%s", (int)len, name, ar, ar == 1 ? "" : "s");
            return SP_EXPR_NONE;
        }
        if (op == SP_OP_WHERE)
            return sp_expr_where(r->E, args[0], args[1], args[2]);
        if (op == SP_OP_CLAMP)
            return sp_expr_clamp(r->E, args[0], args[1], args[2]);
        if (ar < 0)
            return sp_expr_nary(r->E, (sp_op_t)op, args, n);
        if (ar == 1)
            return sp_expr_unary(r->E, (sp_op_t)op, args[0]);
        return sp_expr_binary(r->E, (sp_op_t)op, args[0], args[1]);
    }
    rd_error(r, "unknown function '%.*s'", (int)len, name);
    return SP_EXPR_NONE;
}

/*
 * rd_primary is on the recursion path of every nesting level, so its frame holds no buffers:
 * call arguments go to the reader's shared stack r->args (nesting depth is limited to 2000,
 * which must fit an 8 MB stack in ASan builds).
 */
static sp_expr_t rd_primary(rd_t *r)
{
    rd_ws(r);
    char c = r->s[r->pos];
    if (c == '(') {
        r->pos++;
        sp_expr_t e = rd_expr(r);
        rd_ws(r);
        if (r->s[r->pos] != ')') {
            rd_error(r, "expected ')'");
            return SP_EXPR_NONE;
        }
        r->pos++;
        return e;
    }
    if (isdigit((unsigned char)c))
        return rd_number(r);
    if (!(isalpha((unsigned char)c) || c == '_')) {
        rd_error(r, c ? "unexpected character '%c'" : "unexpected end of input", c);
        return SP_EXPR_NONE;
    }
    size_t st = r->pos;
    while (is_ident_char((unsigned char)r->s[r->pos]))
        r->pos++;
    /* bracket groups belong to the name: x[0,1] */
    while (r->s[r->pos] == '[') {
        size_t k = r->pos + 1;
        while (r->s[k] && r->s[k] != ']' && (isalnum((unsigned char)r->s[k]) || r->s[k] == ',' ||
                                             r->s[k] == '_' || r->s[k] == '.'))
            k++;
        if (r->s[k] != ']')
            break;
        r->pos = k + 1;
        while (is_ident_char((unsigned char)r->s[r->pos]))
            r->pos++;
    }
    const char *name = r->s + st;
    size_t len = r->pos - st;
    if (len >= 256) {
        rd_error(r, "name too long");
        return SP_EXPR_NONE;
    }
    rd_ws(r);
    if (r->s[r->pos] != '(')
        return rd_symbol(r, name, len);
    r->pos++;
    size_t base = r->nargs;
    uint32_t n = 0;
    rd_ws(r);
    if (r->s[r->pos] != ')') {
        for (;;) {
            if (n == 64) {
                rd_error(r, "too many arguments");
                return SP_EXPR_NONE;
            }
            sp_expr_t a = rd_expr(r);
            if (r->failed)
                return SP_EXPR_NONE;
            if (r->nargs == r->args_alloc) {
                size_t na = r->args_alloc ? 2 * r->args_alloc : 64;
                sp_expr_t *q = flint_realloc(r->args, na * sizeof(sp_expr_t));
                if (q == NULL) {
                    rd_error(r, "out of memory");
                    return SP_EXPR_NONE;
                }
                r->args = q;
                r->args_alloc = na;
            }
            r->args[r->nargs++] = a;
            n++;
            rd_ws(r);
            if (r->s[r->pos] == ',') {
                r->pos++;
                continue;
            }
            break;
        }
    }
    if (r->s[r->pos] != ')') {
        rd_error(r, "expected ')' or ','");
        return SP_EXPR_NONE;
    }
    r->pos++;
    sp_expr_t e = rd_call(r, name, len, r->args ? r->args + base : NULL, n);
    r->nargs = base;
    return e;
}

static sp_expr_t rd_unary(rd_t *r)
{
    rd_ws(r);
    if (++r->depth > 2000) {
        rd_error(r, "nesting too deep");
        return SP_EXPR_NONE;
    }
    sp_expr_t e;
    if (r->s[r->pos] == '-') {
        r->pos++;
        e = rd_unary(r);
        if (r->failed) {
            e = SP_EXPR_NONE;
        } else if (r->lit && e != SP_EXPR_NONE) {
            /* -literal is the negative constant (how the printer writes one); -3^2 is not a
               literal (rd_unary clears lit after ^), so it stays -(3^2) */
            fmpq_t c;
            fmpq_init(c);
            fmpq_neg(c, sp_expr_const(r->E, e));
            e = sp_expr_const_fmpq(r->E, c);
            fmpq_clear(c);
        } else {
            e = sp_expr_unary(r->E, SP_OP_NEG, e);
            r->lit = 0;
        }
    } else {
        rd_ws(r);
        int lit = isdigit((unsigned char)r->s[r->pos]) != 0;
        e = rd_primary(r);
        r->lit = lit && e != SP_EXPR_NONE && sp_expr_op(r->E, e) == SP_OP_CONST;
        rd_ws(r);
        if (!r->failed && r->s[r->pos] == '^') {
            r->pos++;
            rd_ws(r);
            int neg = 0;
            if (r->s[r->pos] == '-') {
                neg = 1;
                r->pos++;
            }
            if (!isdigit((unsigned char)r->s[r->pos])) {
                rd_error(r, "expected an integer exponent");
                r->depth--;
                return SP_EXPR_NONE;
            }
            slong k = 0;
            while (isdigit((unsigned char)r->s[r->pos])) {
                k = k * 10 + (r->s[r->pos++] - '0');
                if (k > 100000) {
                    rd_error(r, "exponent too large");
                    r->depth--;
                    return SP_EXPR_NONE;
                }
            }
            e = sp_expr_pow(r->E, e, neg ? -k : k);
            r->lit = 0;
        }
    }
    r->depth--;
    return e;
}

static sp_expr_t rd_term(rd_t *r)
{
    sp_expr_t e = rd_unary(r);
    int elit = r->lit; /* e is a bare literal, nothing applied to it yet */
    for (;;) {
        rd_ws(r);
        char c = r->s[r->pos];
        if (r->failed || (c != '*' && c != '/'))
            return e;
        r->pos++;
        sp_expr_t f = rd_unary(r);
        if (c == '/' && elit && r->lit && !r->failed && e != SP_EXPR_NONE && f != SP_EXPR_NONE &&
            !fmpq_is_zero(sp_expr_const(r->E, f))) {
            /* literal/literal is one rational constant (how the printer writes 1/2); a/0 and
               anything else stay divisions */
            fmpq_t q;
            fmpq_init(q);
            fmpq_div(q, sp_expr_const(r->E, e), sp_expr_const(r->E, f));
            e = sp_expr_const_fmpq(r->E, q);
            fmpq_clear(q);
        } else {
            e = c == '*' ? sp_expr_mul(r->E, e, f) : sp_expr_div(r->E, e, f);
        }
        elit = 0;
    }
}

static sp_expr_t rd_expr(rd_t *r)
{
    sp_expr_t e = rd_term(r);
    for (;;) {
        rd_ws(r);
        char c = r->s[r->pos];
        if (r->failed || (c != '+' && c != '-'))
            return e;
        r->pos++;
        sp_expr_t f = rd_term(r);
        e = c == '+' ? sp_expr_add(r->E, e, f) : sp_expr_sub(r->E, e, f);
    }
}

sp_expr_t sp_expr_parse(sp_ectx_t E, const char *text, char *err, size_t errlen)
{
    rd_t r = {E, text, 0, 0, err, errlen, 0, NULL, 0, 0, 0};
    if (err && errlen)
        err[0] = 0;
    sp_expr_t e = rd_expr(&r);
    rd_ws(&r);
    if (!r.failed && text[r.pos] != 0)
        rd_error(&r, "unexpected '%c'", text[r.pos]);
    if (!r.failed && e == SP_EXPR_NONE)
        rd_error(&r, "out of memory or node limit");
    flint_free(r.args);
    return r.failed ? SP_EXPR_NONE : e;
}

/* ---- import ------------------------------------------------------------------------------- */

int sp_expr_import(sp_ectx_t dst, const sp_ectx_t src, const sp_expr_t *roots, size_t n,
                   sp_expr_t *out)
{
    uint32_t *cone;
    size_t m = sp_expr_cone(src, roots, n, &cone);
    if (cone == NULL)
        return 0;
    sp_expr_t *map = flint_malloc((m ? m : 1) * sizeof(sp_expr_t));
    sp_expr_t small[16], *xy = NULL; /* xy: a dot node's factors, x then y */
    size_t xycap = 0;
    int ok = map != NULL;
    for (size_t i = 0; i < m && ok; i++) {
        sp_expr_t e = cone[i];
        const sp_node_t *nd = &src->nodes[e];
        sp_expr_t r = SP_EXPR_NONE;
        if (nd->op == SP_OP_SYM) {
            r = sp_expr_sym_copy(dst, src, (uint32_t)nd->param);
        } else if (nd->op == SP_OP_CONST) {
            r = sp_expr_const_fmpq(dst, src->consts + nd->param);
        } else {
            sp_expr_t *a = nd->nargs <= 16 ? small : flint_malloc(nd->nargs * sizeof(sp_expr_t));
            if (a == NULL) {
                ok = 0;
                break;
            }
            for (uint32_t k = 0; k < nd->nargs; k++)
                a[k] = map[sp_bsearch_u32(cone, m, src->argv[nd->args + k])];
            switch ((sp_op_t)nd->op) {
            case SP_OP_POW: r = sp_expr_pow(dst, a[0], nd->param); break;
            case SP_OP_CMP: r = sp_expr_cmp(dst, (sp_cmp_t)nd->param, a[0], a[1]); break;
            case SP_OP_WHERE: r = sp_expr_where(dst, a[0], a[1], a[2]); break;
            case SP_OP_CLAMP: r = sp_expr_clamp(dst, a[0], a[1], a[2]); break;
            case SP_OP_DOT: { /* written out as the sum of the products, unless dst keeps dots */
                uint32_t h = nd->nargs / 2;
                if (!grow((void **)&xy, sizeof(sp_expr_t), nd->nargs, &xycap))
                    break; /* r stays NONE: the import fails */
                for (uint32_t k = 0; k < h; k++) {
                    xy[k] = a[2 * k];
                    xy[h + k] = a[2 * k + 1];
                }
                r = sp_expr_dot(dst, xy, xy + h, h);
                break;
            }
            default:
                r = sp_op_is_nary((sp_op_t)nd->op) ? sp_expr_nary(dst, (sp_op_t)nd->op, a, nd->nargs)
                    : nd->nargs == 1 ? sp_expr_unary(dst, (sp_op_t)nd->op, a[0])
                                     : sp_expr_binary(dst, (sp_op_t)nd->op, a[0], a[1]);
            }
            if (a != small)
                flint_free(a);
            if (nd->flags & SP_NODE_AXSUM) /* a DOT's sum is marked by sp_expr_dot */
                sp_expr_mark_axsum(dst, r);
            if (nd->flags & SP_NODE_XSUM)
                sp_expr_mark_xsum(dst, r);
        }
        if (r == SP_EXPR_NONE)
            ok = 0;
        map[i] = r;
    }
    for (size_t i = 0; i < n && ok; i++)
        out[i] = roots[i] == SP_EXPR_NONE ? SP_EXPR_NONE : map[sp_bsearch_u32(cone, m, roots[i])];
    flint_free(xy);
    flint_free(map);
    flint_free(cone);
    return ok;
}
