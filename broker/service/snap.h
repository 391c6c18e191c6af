/*
 * snap.h - the broker's figures as plain data: what a scrape (and any
 * other reader on a thread of its own) may see of the broker.
 *
 * The loop fills one (publish.c at the broker's root, the only code that
 * reads the broker object for it) and hands it over whole; readers never
 * touch the broker. Everything here is a copy: names, counts, histograms.
 * Add a figure here, fill it in publish.c, serve it in metrics.c.
 */
#ifndef SLUICE_SNAP_H
#define SLUICE_SNAP_H

#include <stdint.h>

#include "breaker.h"
#include "disp.h"
#include "hist.h"
#include "proto.h"

typedef struct snap_level {
    char name[PROTO_MAX_NAME + 1];
    uint64_t depth, inflight, delayed, dead, oldest_ms;
    uint64_t enqueued, dispatched, acked, nacked, expired, buried, throttled, throttled_tag;
    uint64_t picks[DISP_REASON_COUNT_];
    uint64_t pause_ns;   /* what its pause after THROTTLED has left; 0: none */
    hist wait;
} snap_level;

typedef struct snap_pool {
    char name[PROTO_MAX_NAME + 1];
    uint64_t size, members, inflight, recommended, delivered, paused;
} snap_pool;

typedef struct snap {
    unsigned nlevels, npools;
    snap_level lv[PROTO_MAX_LEVELS];
    snap_pool pool[PROTO_MAX_POOLS];
    uint64_t sink_rate_milli, sink_effective_milli, sink_tokens_milli, sink_burst;
    uint64_t sink_inflight, sink_max_inflight, sink_pause_ns;
    int breaker_state;
    uint64_t breaker_trips;
    uint64_t commits, commit_stalls;
    uint64_t log_records, log_bytes, lmdb_commits; /* what made batches durable (store_counts) */
    hist commit;
    uint64_t map_used, map_size, map_max;
    uint64_t connections, consumers, rx_bad, tx_failed, uptime_ns;
    uint64_t settle_refused, settle_foreign; /* settlements refused SL_ESTALE; of those, another's lease */
} snap;


#endif /* SLUICE_SNAP_H */
