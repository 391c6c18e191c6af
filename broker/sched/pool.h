/*
 * pool.h - consumer pools: a name, the levels it serves, and a size.
 *
 * A pool's size is the most deliveries its members may hold at once, shared
 * among its member connections; 0 means no limit beyond each member's own
 * credit. Pools persist (admin.c stores their settings); members come and go.
 * Pure data and arithmetic: no I/O, time comes in as an argument.
 */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

typedef struct pool {
    char name[PROTO_MAX_NAME + 1];
    uint32_t levels_mask;     /* bit L: serves level L */
    uint32_t size;            /* 0: no limit */
    int paused;
    int autoscale;
    uint32_t min_size, max_size;
    uint64_t target_wait_ms;
    /* live state */
    uint32_t members;
    uint32_t inflight;
    uint64_t delivered;       /* deliveries since start */
    uint64_t settled;         /* deliveries that ended (ack, nack, expiry) */
    uint64_t held_ns;         /* total time those deliveries were held */
    /* measurements, refreshed by pool_sample */
    uint64_t sample_ns, sample_delivered, sample_settled, sample_held_ns;
    double rate_per_s;        /* deliveries per second, smoothed */
    double service_s;         /* seconds a delivery is held, smoothed */
    uint32_t recommended;
    uint64_t empty_since_ns;  /* poolend: when it last became idle and unconfigured; 0: not so */
} pool;

typedef struct pool_table {
    pool *v[PROTO_MAX_POOLS];
    unsigned n;
    unsigned max;             /* the most pools (--pool-max); 0: PROTO_MAX_POOLS */
} pool_table;

void pool_table_init(pool_table *t);
void pool_table_fini(pool_table *t);

/* pool_find returns the pool called name[0..len), or NULL. */
pool *pool_find(pool_table *t, const char *name, size_t len);

/* pool_require finds or creates the pool (serving levels_mask, no size).
 * Returns NULL when the table is full (PROTO_MAX_POOLS) or out of memory. */
pool *pool_require(pool_table *t, const char *name, size_t len, uint32_t levels_mask);

/* pool_remove takes p out of the table (keeping the others' order) and
 * frees it. The caller makes sure nothing points at it (no members, no
 * leases). */
void pool_remove(pool_table *t, pool *p);

/* pool_open tells whether the pool may take another delivery now. */
int pool_open(const pool *p);

/* pool_share returns the share of the pool's size for its index-th member
 * (0-based) of p->members: size/members, the first size%members getting one
 * more. 0 when the pool has no size. */
uint32_t pool_share(const pool *p, uint32_t index);

/* pool_recommend is Little's law: enough concurrency to serve arrivals
 * (arrival_per_s x service_s) and to drain backlog within target_wait_ms,
 * clamped to [lo, hi]. */
uint32_t pool_recommend(double arrival_per_s, double service_s, uint64_t backlog, uint64_t target_wait_ms,
                        uint32_t lo, uint32_t hi);

/* pool_sample refreshes p's smoothed rate and service time from its counters
 * (at most once per 250 ms of now_ns) and its recommended size from the
 * arrival rate and backlog of its levels. With autoscale on, it also sets
 * size to the recommendation; it returns 1 when size changed. */
int pool_sample(pool *p, uint64_t now_ns, double arrival_per_s, uint64_t backlog);

#endif /* SLUICE_POOL_H */
