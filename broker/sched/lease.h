/*
 * lease.h - in-flight deliveries: tokens, deadlines, owners.
 *
 * A lease says "message (level, key) is out with this consumer until
 * deadline". Leases are memory only (see store.h: the message record stays in
 * its queue), so a broker restart ends them all, and every message they held
 * is simply still at the head of its level.
 *
 * Tokens are unique across restarts with overwhelming probability: the top 24
 * bits are random per boot, the low 40 count up. A token from before a
 * restart is therefore stale, never someone else's lease.
 */
#ifndef SLUICE_LEASE_H
#define SLUICE_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include "tmr.h"

struct conn;
struct pool;

typedef struct lease {
    uint64_t token;
    uint64_t key;          /* order key in the level's queue */
    uint64_t id;           /* message id */
    uint64_t deadline_ns;  /* monotonic */
    uint32_t attempt;      /* this delivery's attempt number */
    uint8_t level;
    struct conn *owner;    /* NULL once its consumer is gone */
    struct pool *pool;     /* the pool it counts against, or NULL */
    uint64_t started_ns;   /* monotonic, when it was delivered */
    uint8_t reason;        /* why the dispatcher picked its level (disp_reason) */
    struct lease *hnext;   /* hash chain */
    struct lease *cprev, *cnext; /* owner's list */
} lease;

typedef struct lease_table {
    lease **buckets;
    size_t nbuckets, len;
    uint64_t next_token;
    tmr deadlines;         /* (deadline_ns, token); stale entries skipped */
} lease_table;

/* lease_table_init prepares an empty table whose tokens start with the 24-bit
 * boot_prefix. Returns SL_OK or SL_ENOMEM. */
int lease_table_init(lease_table *t, uint32_t boot_prefix);

/* lease_table_fini frees every lease (their owners' lists are not touched). */
void lease_table_fini(lease_table *t);

/* lease_new creates a lease owned by owner (linked into its list) with a new
 * token. Returns NULL when out of memory. */
lease *lease_new(lease_table *t, struct conn *owner, uint8_t level, uint64_t key, uint64_t id,
                 uint32_t attempt, uint64_t deadline_ns);

/* lease_find returns the lease for token, or NULL. */
lease *lease_find(lease_table *t, uint64_t token);

/* lease_of_id returns the lease of message id, or NULL. O(leases): for
 * explain, not for a delivery's path. */
const lease *lease_of_id(const lease_table *t, uint64_t id);

/* lease_holds tells whether the record at key of level is out with a
 * consumer. O(leases): for expiries, which are rare next to deliveries. */
int lease_holds(const lease_table *t, unsigned level, uint64_t key);

/* lease_count_below counts the leased records of level whose key is below
 * key. O(leases). */
uint64_t lease_count_below(const lease_table *t, unsigned level, uint64_t key);

/* lease_extend moves l's deadline. */
void lease_extend(lease_table *t, lease *l, uint64_t deadline_ns);

/* lease_free unlinks l from its owner and the table and frees it. */
void lease_free(lease_table *t, lease *l);

/* lease_expired returns a lease whose deadline is <= now_ns, or NULL. The
 * caller settles it (lease_free) before asking again. */
lease *lease_expired(lease_table *t, uint64_t now_ns);

/* lease_next_deadline returns the earliest deadline, or TMR_NEVER. Stale heap
 * entries may make it early, never late. */
uint64_t lease_next_deadline(const lease_table *t);

#endif /* SLUICE_LEASE_H */
