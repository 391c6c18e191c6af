/*
 * hash.h - the broker's one hash table: an index from keys to positions in
 * a dense array that its owner keeps (the fair levels' tenants and their
 * read-ahead buffers, the drr's records, the per-tag states of tagset.c,
 * the throttled tags of tagthrottle.c).
 *
 * Why an index and not a table of entries: every user already keeps its
 * entries in a dense array (walked in order, swapped with the last on
 * removal, sized by grow_array), and wants the table to cost 4 bytes per
 * slot, not a copy of the entry. The index holds position + 1 per slot, 0
 * for empty; linear probing at a load of at most 1/2; removal by backward
 * shift, so there are no tombstones and a lookup of a missing key stops at
 * the first empty slot.
 *
 * The index never sees a key's type: the owner hashes the key it looks for
 * (hash_u64 for integer keys) and answers two questions through hash_ops,
 * what the hash of the entry at a position is and whether it has the key.
 * The functions are static inline so that a call with a constant hash_ops
 * compiles to the loop it replaces. Pure: no clock, no I/O.
 *
 * Costs: a lookup is O(1) expected, one probe run; hash_fit rehashes in
 * O(entries) when the load passes 1/2 (doubling) or falls below 1/8
 * (halving), so n insertions cost O(n) in all.
 */
#ifndef SLUICE_HASH_H
#define SLUICE_HASH_H

#include <stdint.h>
#include <stdlib.h>

#include "sluice_errors.h"

#define HASH_MIN_SLOTS 32u

typedef struct hash_index {
    uint32_t *slot;   /* position + 1; 0: empty */
    uint32_t nslots;  /* 0, or a power of two >= HASH_MIN_SLOTS */
} hash_index;

/* What the index asks of its owner about the entry at position pos. */
typedef struct hash_ops {
    uint32_t (*hash_at)(const void *owner, uint32_t pos);            /* its key's hash */
    int (*is)(const void *owner, uint32_t pos, const void *key);      /* it has key */
} hash_ops;

/* hash_u32 mixes x so that its low bits index a power-of-two table evenly
 * (a 32-bit finaliser: two multiply-xorshift rounds). */
static inline uint32_t hash_u32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* hash_u64 does the same for a 64-bit key (the 64-bit finaliser of
 * MurmurHash3), keeping the low 32 bits. */
static inline uint32_t hash_u64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return (uint32_t)k;
}

/* hash_slot returns the slot of key (whose hash is h), or the empty slot
 * where it would go; NULL when the index has no slots yet. */
static inline uint32_t *hash_slot(const hash_index *x, uint32_t h, const void *key, const hash_ops *ops,
                                  const void *owner)
{
    if (!x->nslots)
        return NULL;
    uint32_t mask = x->nslots - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask)
        if (!x->slot[i] || ops->is(owner, x->slot[i] - 1, key))
            return &x->slot[i];
}

/* hash_find sets *pos to key's position and returns 1, or returns 0. */
static inline int hash_find(const hash_index *x, uint32_t h, const void *key, const hash_ops *ops,
                            const void *owner, uint32_t *pos)
{
    const uint32_t *s = hash_slot(x, h, key, ops, owner);
    if (!s || !*s)
        return 0;
    *pos = *s - 1;
    return 1;
}

/* hash_fill indexes the entries at positions 0..n-1 into x's empty slots
 * (the index's own; hash_rehash and hash_build call it). */
static inline void hash_fill(hash_index *x, uint32_t n, const hash_ops *ops, const void *owner)
{
    uint32_t mask = x->nslots - 1;
    for (uint32_t p = 0; p < n; p++) {
        uint32_t i = ops->hash_at(owner, p) & mask;
        while (x->slot[i])
            i = (i + 1) & mask;
        x->slot[i] = p + 1;
    }
}

/* hash_rehash rebuilds x with nslots slots (a power of two) over the
 * entries at positions 0..n-1. SL_ENOMEM leaves x as it was. */
static inline int hash_rehash(hash_index *x, uint32_t nslots, uint32_t n, const hash_ops *ops, const void *owner)
{
    uint32_t *s = calloc(nslots, sizeof *s);
    if (!s)
        return SL_ENOMEM;
    free(x->slot);
    x->slot = s;
    x->nslots = nslots;
    hash_fill(x, n, ops, owner);
    return SL_OK;
}

/* hash_build indexes the entries at positions 0..n-1 afresh: in place
 * when x has room for n at a load of at most 1/2 (so a rebuild with as many
 * entries as before, or fewer, cannot fail), else in a new table of the
 * size that has. SL_ENOMEM leaves x as it was. For owners that rebuild
 * whenever an entry comes or goes, rather than put and remove. */
static inline int hash_build(hash_index *x, uint32_t n, const hash_ops *ops, const void *owner)
{
    uint32_t want = x->nslots ? x->nslots : HASH_MIN_SLOTS;
    while ((uint64_t)n * 2 > want)
        want *= 2;
    if (want != x->nslots)
        return hash_rehash(x, want, n, ops, owner);
    for (uint32_t i = 0; i < x->nslots; i++)
        x->slot[i] = 0;
    hash_fill(x, n, ops, owner);
    return SL_OK;
}

/* hash_fit sizes x for n entries, the owner's count after the change it is
 * about to make: doubles when more than half would be used (SL_ENOMEM
 * leaves x as it was), halves when under an eighth is (a failure to halve
 * is harmless). Call it before hash_put with the count including the new
 * entry, after hash_remove with the count without it. */
static inline int hash_fit(hash_index *x, uint32_t n, const hash_ops *ops, const void *owner)
{
    if ((uint64_t)n * 2 > x->nslots) {
        uint32_t want = x->nslots ? x->nslots : HASH_MIN_SLOTS;
        while ((uint64_t)n * 2 > want)
            want *= 2;
        return hash_rehash(x, want, n - 1, ops, owner); /* the new entry is not in the array yet */
    }
    if (x->nslots > HASH_MIN_SLOTS && (uint64_t)n * 8 < x->nslots)
        (void)hash_rehash(x, x->nslots / 2, n, ops, owner);
    return SL_OK;
}

/* hash_put indexes the entry at pos under key (absent; hash_fit made room). */
static inline void hash_put(hash_index *x, uint32_t h, const void *key, const hash_ops *ops, const void *owner,
                            uint32_t pos)
{
    *hash_slot(x, h, key, ops, owner) = pos + 1;
}

/* hash_moved points key's slot at its entry's new position to (after the
 * owner moved it in its array). */
static inline void hash_moved(hash_index *x, uint32_t h, const void *key, const hash_ops *ops, const void *owner,
                              uint32_t to)
{
    uint32_t *s = hash_slot(x, h, key, ops, owner);
    if (s && *s)
        *s = to + 1;
}

/* hash_remove takes key out of the index: empties its slot, then moves back
 * each entry of the probe run after it whose home slot allows (backward
 * shift: unless its home lies cyclically in (hole, j]). The owner removes
 * the entry from its array afterwards (and calls hash_moved for the entry
 * that takes its place). */
static inline void hash_remove(hash_index *x, uint32_t h, const void *key, const hash_ops *ops, const void *owner)
{
    uint32_t *s = hash_slot(x, h, key, ops, owner);
    if (!s || !*s)
        return;
    uint32_t mask = x->nslots - 1, i = (uint32_t)(s - x->slot);
    x->slot[i] = 0;
    for (uint32_t j = (i + 1) & mask; x->slot[j]; j = (j + 1) & mask) {
        uint32_t home = ops->hash_at(owner, x->slot[j] - 1) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            x->slot[i] = x->slot[j];
            x->slot[j] = 0;
            i = j;
        }
    }
}

/* hash_fini frees the slots; x may be used again (empty). */
static inline void hash_fini(hash_index *x)
{
    free(x->slot);
    x->slot = NULL;
    x->nslots = 0;
}

/* hash_bytes returns what x's slots take. */
static inline size_t hash_bytes(const hash_index *x)
{
    return (size_t)x->nslots * sizeof *x->slot;
}

#endif /* SLUICE_HASH_H */
