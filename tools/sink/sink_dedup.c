/*
 * sink_dedup.c - the idempotency keys a sluice-sink has applied
 * (--dedup-header NAME), and how often each came back.
 *
 * A set of keys in an open-addressing table (FNV-1a, linear probing) that
 * doubles at half full; keys are never forgotten while the sink runs, which
 * is what a test of exactly-once effects needs (a real service keeps its
 * keys for a window: Stripe keeps them 24 hours). The caller holds the
 * sink's lock around every call.
 *
 * Costs: O(1) expected per request, a malloc per new key; memory about 48
 * bytes plus the key per key held.
 */
#include "sink_dedup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_CAP 1024

static uint64_t hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static size_t key_len(const char *slot)
{
    size_t n;
    memcpy(&n, slot, sizeof n);
    return n;
}

int sink_dedup_init(sink_dedup *d, const char *header)
{
    memset(d, 0, sizeof *d);
    if (!header)
        return 0;
    snprintf(d->header, sizeof d->header, "%s", header);
    d->slots = calloc(FIRST_CAP, sizeof *d->slots);
    if (!d->slots)
        return -1;
    d->cap = FIRST_CAP;
    return 0;
}

/* place puts slot into table t of cap slots (a free place is there). */
static void place(char **t, size_t cap, char *slot)
{
    size_t i = hash(slot + sizeof(size_t), key_len(slot)) & (cap - 1);
    while (t[i])
        i = (i + 1) & (cap - 1);
    t[i] = slot;
}

static int grow(sink_dedup *d)
{
    size_t cap = d->cap * 2;
    char **t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < d->cap; i++)
        if (d->slots[i])
            place(t, cap, d->slots[i]);
    free(d->slots);
    d->slots = t;
    d->cap = cap;
    return 0;
}

int sink_dedup_note(sink_dedup *d, const char *key, size_t len)
{
    if (!key) {
        d->applied++;
        d->unkeyed++;
        return 1;
    }
    if (len > SINK_DEDUP_KEY_BYTES)
        len = SINK_DEDUP_KEY_BYTES;
    size_t i = hash(key, len) & (d->cap - 1);
    for (; d->slots[i]; i = (i + 1) & (d->cap - 1))
        if (key_len(d->slots[i]) == len && memcmp(d->slots[i] + sizeof(size_t), key, len) == 0) {
            d->repeats++;
            return 0;
        }
    d->applied++;
    char *slot = malloc(sizeof(size_t) + len);
    if (!slot)
        return -1;
    memcpy(slot, &len, sizeof len);
    memcpy(slot + sizeof len, key, len);
    d->slots[i] = slot;
    d->count++;
    if (d->count * 2 > d->cap && grow(d) != 0)
        return -1; /* kept, in a table fuller than planned: still correct */
    return 1;
}

void sink_dedup_fini(sink_dedup *d)
{
    for (size_t i = 0; i < d->cap; i++)
        free(d->slots[i]);
    free(d->slots);
    memset(d, 0, sizeof *d);
}
