/*
 * lease.c - the lease table.
 *
 * A chained hash by token plus a deadline heap. Tokens are random (64 bits
 * from getrandom, drawn LEASE_RANDOM_BATCH at a time so that a delivery
 * costs a system call only once in 64), drawn again on the rare 0 or a
 * token already held: they are unguessable, and unique in the table. A
 * MAC over the lease (its id, level and key under a secret) was the other
 * way: as unguessable, but it needs a key and a hash function for no gain,
 * since the table is looked up anyway and is the authority on what is out. Extending a lease
 * pushes a new heap entry and leaves the old one, which lease_expired skips
 * because its time no longer matches the lease. The heap therefore holds at
 * most one entry per lease per TOUCH; it is rebuilt from the live leases when
 * stale entries outnumber live ones three to one.
 *
 * Costs: new, find, free O(1) (new: a system call per LEASE_RANDOM_BATCH
 * tokens); expiry O(log n) per popped entry.
 */
#include "lease.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "conn.h"
#include "log.h"
#include "sluice_errors.h"

static size_t bucket_of(const lease_table *t, uint64_t token)
{
    return (size_t)((token * 0x9E3779B97F4A7C15ULL) >> 20) % t->nbuckets;
}

/* kernel_fill reads n tokens from getrandom(2) (the urandom pool; blocks
 * only before the kernel's pool is first seeded, at boot). */
static int kernel_fill(uint64_t *buf, size_t n)
{
    size_t want = n * sizeof *buf, got = 0;
    while (got < want) {
        ssize_t r = getrandom((char *)buf + got, want - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

int lease_table_init(lease_table *t)
{
    memset(t, 0, sizeof *t);
    t->nbuckets = 1024;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    t->fill = kernel_fill;
    tmr_init(&t->deadlines);
    return t->buckets ? SL_OK : SL_ENOMEM;
}

/* draw returns a random token that is not 0 and no lease holds. */
static uint64_t draw(lease_table *t)
{
    for (;;) {
        if (!t->nrandom) {
            if (t->fill(t->random, LEASE_RANDOM_BATCH) != 0)
                log_die(__FILE__, __LINE__, "no randomness for lease tokens (getrandom failed)");
            t->nrandom = LEASE_RANDOM_BATCH;
        }
        uint64_t token = t->random[--t->nrandom];
        t->random[t->nrandom] = 0; /* a token handed out is not kept */
        if (token && !lease_find(t, token))
            return token;
    }
}

void lease_table_fini(lease_table *t)
{
    for (size_t i = 0; t->buckets && i < t->nbuckets; i++) {
        lease *l = t->buckets[i];
        while (l) {
            lease *next = l->hnext;
            free(l);
            l = next;
        }
    }
    free(t->buckets);
    tmr_fini(&t->deadlines);
    memset(t, 0, sizeof *t);
}

static void grow(lease_table *t)
{
    size_t n = t->nbuckets * 2;
    lease **b = calloc(n, sizeof *b);
    if (!b)
        return;
    lease **old = t->buckets;
    size_t oldn = t->nbuckets;
    t->buckets = b;
    t->nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        lease *l = old[i];
        while (l) {
            lease *next = l->hnext;
            size_t h = bucket_of(t, l->token);
            l->hnext = b[h];
            b[h] = l;
            l = next;
        }
    }
    free(old);
}

/* Rebuild the deadline heap from live leases when it is mostly stale. */
static void compact(lease_table *t)
{
    if (t->deadlines.len < 1024 || t->deadlines.len < 4 * t->len)
        return;
    tmr_clear(&t->deadlines);
    for (size_t i = 0; i < t->nbuckets; i++)
        for (lease *l = t->buckets[i]; l; l = l->hnext)
            if (tmr_push(&t->deadlines, l->deadline_ns, l->token) != SL_OK)
                log_die(__FILE__, __LINE__, "heap shrank while rebuilding");
}

lease *lease_new(lease_table *t, struct conn *owner, uint8_t level, uint64_t key, uint64_t id,
                 uint32_t attempt, uint64_t deadline_ns)
{
    lease *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    uint64_t token = draw(t);
    if (tmr_push(&t->deadlines, deadline_ns, token) != SL_OK) {
        free(l);
        return NULL;
    }
    l->token = token;
    l->key = key;
    l->id = id;
    l->level = level;
    l->attempt = attempt;
    l->deadline_ns = deadline_ns;
    size_t h = bucket_of(t, l->token);
    l->hnext = t->buckets[h];
    t->buckets[h] = l;
    if (owner) {
        l->owner = owner;
        l->cnext = owner->leases;
        if (owner->leases)
            owner->leases->cprev = l;
        owner->leases = l;
        owner->nleases++;
    }
    if (++t->len > t->nbuckets)
        grow(t);
    return l;
}

lease *lease_find(lease_table *t, uint64_t token)
{
    for (lease *l = t->buckets[bucket_of(t, token)]; l; l = l->hnext)
        if (l->token == token)
            return l;
    return NULL;
}

const lease *lease_of_id(const lease_table *t, uint64_t id)
{
    for (size_t i = 0; i < t->nbuckets; i++)
        for (const lease *l = t->buckets[i]; l; l = l->hnext)
            if (l->id == id)
                return l;
    return NULL;
}

int lease_holds(const lease_table *t, unsigned level, uint64_t key)
{
    for (size_t i = 0; i < t->nbuckets; i++)
        for (const lease *l = t->buckets[i]; l; l = l->hnext)
            if (l->level == level && l->key == key)
                return 1;
    return 0;
}

uint64_t lease_count_below(const lease_table *t, unsigned level, uint64_t key)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (const lease *l = t->buckets[i]; l; l = l->hnext)
            n += l->level == level && l->key < key;
    return n;
}

void lease_extend(lease_table *t, lease *l, uint64_t deadline_ns)
{
    l->deadline_ns = deadline_ns;
    if (tmr_push(&t->deadlines, deadline_ns, l->token) != SL_OK)
        log_warn("lease", "out of memory extending lease %llu; it may expire early",
                 (unsigned long long)l->token);
    compact(t);
}

void lease_free(lease_table *t, lease *l)
{
    lease **pp = &t->buckets[bucket_of(t, l->token)];
    while (*pp != l)
        pp = &(*pp)->hnext;
    *pp = l->hnext;
    if (l->owner) {
        if (l->cprev)
            l->cprev->cnext = l->cnext;
        else
            l->owner->leases = l->cnext;
        if (l->cnext)
            l->cnext->cprev = l->cprev;
        l->owner->nleases--;
    }
    t->len--;
    free(l);
}

lease *lease_expired(lease_table *t, uint64_t now_ns)
{
    tmr_entry e;
    while (tmr_pop(&t->deadlines, now_ns, &e)) {
        lease *l = lease_find(t, e.id);
        if (l && l->deadline_ns == e.at)
            return l;
    }
    return NULL;
}

uint64_t lease_next_deadline(const lease_table *t)
{
    return tmr_next(&t->deadlines);
}
