/*
 * memo.c: results of operators kept with the execution store (memo.h).  An open-addressing
 * table of entries, each one allocation holding its key words and then its value's ids.
 */
#include <flint/flint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "memo.h"

typedef struct {
    uint64_t h;
    uint32_t kind;
    size_t nkey, nval;
    uint32_t *words; /* key, then value */
} entry_t;

typedef struct {
    entry_t *e;     /* table of size slots; words == NULL is empty */
    size_t size, n; /* slots, entries */
    size_t words;   /* key and value words held */
    size_t hits;    /* values sp_memo_copy gave (sp_memo_count) */
} memo_t;

static void memo_empty(memo_t *M)
{
    for (size_t i = 0; i < M->size; i++)
        free(M->e[i].words);
    free(M->e);
    M->e = NULL;
    M->size = M->n = M->words = 0;
}

static void memo_free(void *p)
{
    memo_t *M = p;
    memo_empty(M);
    free(M);
}

static uint64_t key_hash(uint32_t kind, const uint32_t *key, size_t nkey)
{
    /* four independent lanes, so the multiplications of a long key overlap */
    uint64_t l[4] = {kind + UINT64_C(0x9e3779b97f4a7c15), nkey, UINT64_C(0x632be59bd9b4e019),
                     UINT64_C(0x85ebca6b)};
    for (size_t i = 0; i < nkey; i++)
        l[i & 3] = (l[i & 3] ^ key[i]) * UINT64_C(0x100000001b3);
    return sp_mix64(l[0] ^ sp_mix64(l[1] ^ sp_mix64(l[2] ^ sp_mix64(l[3]))));
}

static entry_t *find(memo_t *M, uint64_t h, uint32_t kind, const uint32_t *key, size_t nkey)
{
    if (M->size == 0)
        return NULL;
    for (size_t j = h & (M->size - 1);; j = (j + 1) & (M->size - 1)) {
        entry_t *e = &M->e[j];
        if (e->words == NULL)
            return e;
        if (e->h == h && e->kind == kind && e->nkey == nkey &&
            memcmp(e->words, key, nkey * sizeof(uint32_t)) == 0)
            return e;
    }
}

const sp_expr_t *sp_memo_get(sp_ectx_t E, uint32_t kind, const uint32_t *key, size_t nkey,
                             size_t *n)
{
    memo_t *M = E->client_free == memo_free ? E->client : NULL;
    if (M == NULL)
        return NULL;
    entry_t *e = find(M, key_hash(kind, key, nkey), kind, key, nkey);
    if (e == NULL || e->words == NULL)
        return NULL;
    *n = e->nval;
    return e->words + e->nkey;
}

int sp_memo_copy(sp_ectx_t E, uint32_t kind, const uint32_t *key, size_t nkey, sp_expr_t *out,
                 size_t n)
{
    size_t m = 0;
    const sp_expr_t *v = key ? sp_memo_get(E, kind, key, nkey, &m) : NULL;
    if (v == NULL || m != n)
        return 0;
    memcpy(out, v, n * sizeof(sp_expr_t));
    ((memo_t *)E->client)->hits++;
    return 1;
}

static int grow(memo_t *M)
{
    size_t size = M->size ? 2 * M->size : 64;
    entry_t *t = calloc(size, sizeof(entry_t));
    if (t == NULL)
        return 0;
    for (size_t i = 0; i < M->size; i++) {
        if (M->e[i].words == NULL)
            continue;
        size_t j = M->e[i].h & (size - 1);
        while (t[j].words != NULL)
            j = (j + 1) & (size - 1);
        t[j] = M->e[i];
    }
    free(M->e);
    M->e = t;
    M->size = size;
    return 1;
}

void sp_memo_put(sp_ectx_t E, uint32_t kind, const uint32_t *key, size_t nkey,
                 const sp_expr_t *val, size_t n)
{
    if (E->oom || nkey + n > SP_MEMO_WORDS / 4)
        return;
    if (E->client == NULL && E->client_free == NULL) {
        memo_t *M = calloc(1, sizeof(memo_t));
        if (M == NULL)
            return;
        E->client = M;
        E->client_free = memo_free;
    }
    if (E->client_free != memo_free)
        return; /* the store's client is somebody else's */
    memo_t *M = E->client;
    if (M->words + nkey + n > SP_MEMO_WORDS)
        memo_empty(M); /* start over: a memo is only a saving */
    if (2 * (M->n + 1) > M->size && !grow(M))
        return;
    uint64_t h = key_hash(kind, key, nkey);
    entry_t *e = find(M, h, kind, key, nkey);
    if (e->words != NULL)
        return; /* kept already */
    uint32_t *w = malloc((nkey + n) * sizeof(uint32_t));
    if (w == NULL)
        return;
    memcpy(w, key, nkey * sizeof(uint32_t));
    memcpy(w + nkey, val, n * sizeof(sp_expr_t));
    *e = (entry_t){h, kind, nkey, n, w};
    M->n++;
    M->words += nkey + n;
}

size_t sp_memo_count(const sp_ectx_t E, size_t *hits)
{
    const memo_t *M = E->client_free == memo_free ? E->client : NULL;
    if (hits)
        *hits = M ? M->hits : 0;
    return M ? M->n : 0;
}
