/*
 * hash.h - the one integer hash of the broker's open-addressing tables
 * (the fair levels' tenants, queue_fair.c, and their read-ahead buffers,
 * queue_fair_ahead.c; the per-tag states, tagset.c), and the rule of their
 * backward-shift deletion.
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

/* hash_moves_back says whether, in a linear-probing table of mask + 1
 * slots, the entry at slot j whose home slot is home may move back into
 * the hole at slot i (backward-shift deletion: unless its home lies
 * cyclically in (i, j]). Pure. */
static inline int hash_moves_back(uint32_t home, uint32_t i, uint32_t j, uint32_t mask)
{
    return ((j - home) & mask) >= ((j - i) & mask);
}

#endif /* SLUICE_HASH_H */
