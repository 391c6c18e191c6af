/*
 * hash.h - the one integer hash of the broker's open-addressing tables
 * (the fair levels' tenants, queue_fair.c; the per-tag states, tagset.c).
 */
#ifndef SLUICE_HASH_H
#define SLUICE_HASH_H

#include <stdint.h>

/* hash_u32 mixes x so that its low bits index a power-of-two table evenly
 * (a 32-bit finaliser: two multiply-xorshift rounds). Pure. */
static inline uint32_t hash_u32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

#endif /* SLUICE_HASH_H */
