/* hash.h: the 64-bit mixer and string hash the expression store, the solver and the checker share. */
#ifndef SP_HASH_H
#define SP_HASH_H

#include <stdint.h>

/* MurmurHash3's 64-bit finalizer: every input bit affects every output bit. */
static inline uint64_t sp_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

/* FNV-1a of a NUL-terminated string, mixed. */
static inline uint64_t sp_str_hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return sp_mix64(h);
}

#endif
