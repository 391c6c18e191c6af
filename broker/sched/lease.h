/*
 * lease.h - in-flight deliveries: tokens, deadlines, owners.
 *
 * A lease says "message (level, key) is out with this consumer until
 * deadline". Leases are memory only (see store.h: the message record stays in
 * its queue), so a broker restart ends them all, and every message they held
 * is simply still at the head of its level.
 *
 * Tokens are 64 random bits (getrandom), never 0 and unique in the table:
 * another consumer cannot guess a token it was not given, and a token from
 * before a restart is stale, never someone else's lease (the chance that a
 * random token repeats a live one is the number of leases in 2^64). A
 * token is still only half the check: settle.c also asks that the
 * settlement come from the connection that holds the lease.
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
    uint32_t wait_ms;      /* its wait from publish to this delivery (DELIVER's wait_ms), capped */
    struct lease *hnext;   /* hash chain */
    struct lease *cprev, *cnext; /* owner's list */
} lease;

/* lease_fill_fn fills buf[0..n) with random tokens; returns 0, or -1 when
 * no randomness can be had. */
typedef int (*lease_fill_fn)(uint64_t *buf, size_t n);

#define LEASE_RANDOM_BATCH 64 /* tokens drawn from the kernel at a time */

typedef struct lease_table {
    lease **buckets;
    size_t nbuckets, len;
    tmr deadlines;         /* (deadline_ns, token); stale entries skipped */
    lease_fill_fn fill;    /* where tokens come from: getrandom (tests may replace it) */
    uint64_t random[LEASE_RANDOM_BATCH]; /* tokens drawn, used from the end */
    size_t nrandom;
} lease_table;

/* lease_table_init prepares an empty table whose tokens come from
 * getrandom(2). Returns SL_OK or SL_ENOMEM. */
int lease_table_init(lease_table *t);

/* lease_table_fini frees every lease (their owners' lists are not touched). */
void lease_table_fini(lease_table *t);

/* lease_new creates a lease owned by owner (linked into its list) with a new
 * random token, not 0 and not held by another lease. Returns NULL when out
 * of memory. Aborts (log_die) when the kernel gives no randomness: a
 * guessable token would let one consumer settle another's deliveries. */
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
