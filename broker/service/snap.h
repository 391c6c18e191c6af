/*
 * snap.h - the broker's figures as plain data: what the HTTP server (its
 * /metrics, its console and JSON API, and any other reader on a thread of
 * its own) may see of the broker.
 *
 * The loop fills one (publish.c at the broker's root, the only code that
 * reads the broker object for it) and hands it over whole; readers never
 * touch the broker. Everything here is a copy: names, counts, histograms,
 * settings. Add a figure here, fill it in publish.c, serve it in
 * broker/http/ (metrics.c, overview.c).
 */
#ifndef SLUICE_SNAP_H
#define SLUICE_SNAP_H

#include <stddef.h>
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
    /* its settings and state, as level.list shows them */
    uint64_t eta_ms, deadline_ms, aging_ms, max_rate_milli, min_rate_milli, burst, tenants;
    int paused, fair;
} snap_level;

typedef struct snap_pool {
    char name[PROTO_MAX_NAME + 1];
    uint64_t size, members, inflight, recommended, delivered, paused;
    uint64_t levels_mask, rate_milli, autoscale;
} snap_pool;

/* A group primary's mode: confirming with its standby, alone (Redis records
 * no standby in sync), or fenced (no valid lease: it confirms and
 * dispatches nothing). */
enum { SNAP_HA_SYNC, SNAP_HA_ALONE, SNAP_HA_FENCED };

/* A group node's role: the primary (a broker), or a standby (no broker: its
 * snapshot holds the group's figures alone, standby_http.c). */
enum { SNAP_HA_PRIMARY, SNAP_HA_STANDBY };

typedef struct snap {
    unsigned nlevels, npools;
    snap_level lv[PROTO_MAX_LEVELS];  /* [0, nlevels) are filled */
    snap_pool pool[PROTO_MAX_POOLS];  /* [0, npools) are filled */
    uint64_t sink_rate_milli, sink_effective_milli, sink_tokens_milli, sink_burst;
    uint64_t sink_inflight, sink_max_inflight, sink_pause_ns;
    char sink_reason[48];           /* why the effective rate is where it is (meter_reason_name) */
    int breaker_state;
    uint64_t breaker_trips;
    int coord;                      /* the sink is shared (--coord): the lease below */
    char coord_state[PROTO_MAX_NAME + 1];
    uint64_t coord_reachable, coord_slices_held, coord_slices, coord_reserved_milli, coord_granted_milli;
    uint64_t coord_lease_left_ms, coord_limit_milli, coord_brokers;
    int ha;                         /* a node of a high-availability group (--ha): the figures below */
    int ha_role;                    /* SNAP_HA_PRIMARY or _STANDBY */
    int ha_mode;                    /* a primary's: SNAP_HA_SYNC, _ALONE or _FENCED */
    uint64_t ha_epoch, ha_records, ha_promotions; /* records: the stream's position made (primary) or applied */
    uint64_t ha_lag_records, ha_lag_ns, ha_diverged; /* a primary's, of its standby */
    uint64_t ha_streaming, ha_in_sync, ha_refused; /* a standby's: a primary streams to it; Redis names it in sync */
    uint64_t commits, commit_stalls;
    uint64_t log_records, log_bytes, lmdb_commits; /* what made batches durable (store_counts) */
    hist commit;
    uint64_t map_used, map_size, map_max;
    uint64_t connections, consumers, rx_bad, tx_failed, uptime_ns;
    uint64_t settle_refused, settle_foreign; /* settlements refused SL_ESTALE; of those, another's lease */
    uint64_t wall_ms;               /* when it was taken (the wall clock) */
    uint64_t publish_ns, publishes; /* the loop's CPU time publishing snapshots so far, and how many */
} snap;

/* snap_copy copies src into dst: its figures and the levels and pools it
 * has, not the unused rest of the arrays (at 3 levels and a few pools,
 * 2 KiB of the struct's 17). */
static inline void snap_copy(snap *dst, const snap *src)
{
    size_t head = offsetof(snap, lv), tail = offsetof(snap, sink_rate_milli);
    __builtin_memcpy(dst, src, head);
    __builtin_memcpy(dst->lv, src->lv, src->nlevels * sizeof src->lv[0]);
    __builtin_memcpy(dst->pool, src->pool, src->npools * sizeof src->pool[0]);
    __builtin_memcpy((char *)dst + tail, (const char *)src + tail, sizeof *src - tail);
}

#endif /* SLUICE_SNAP_H */
