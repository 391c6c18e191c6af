/*
 * publish.c - handing the broker's figures to the threads that serve them:
 * a snapshot (snap.h) copied from the broker object, then swapped in whole
 * for the HTTP server (broker/http/), which never touches the broker.
 *
 * Called by the loop's thread only: at open, and by cron every
 * HTTP_PUBLISH_NS. Costs O(levels + pools), one B-tree read per level for
 * the oldest message's age, and one memcpy under the server's lock; the
 * loop's CPU time for it is measured here (two reads of the thread's CPU
 * clock) and published with it (publish_ns), so the cost to the loop is a
 * figure the console and the benchmark read, whatever else the machine
 * runs.
 */
#include "publish.h"

#include <stdio.h>
#include <string.h>

#include "coord.h"
#include "ha_node.h"
#include "deliver.h"
#include "http.h"
#include "loop.h"
#include "member.h"
#include "store.h"
#include "units.h"

/* take_levels copies each level's figures and settings into s. */
static void take_levels(snap *s, bk *b)
{
    s->nlevels = b->cfg.levels;
    for (unsigned l = 0; l < s->nlevels; l++) {
        const queue_level *lv = &b->q.lv[l];
        const meter_level *ml = &b->meter.lv[l];
        snap_level *o = &s->lv[l];
        uint64_t oldest = queue_oldest_ns(&b->q, l);
        memset(o, 0, offsetof(snap_level, wait)); /* the rest is set below, every member */
        snprintf(o->name, sizeof o->name, "%s", b->cfg.level_names[l]);
        o->depth = queue_ready(&b->q, l);
        o->inflight = lv->leased;
        o->delayed = lv->delayed;
        o->dead = lv->dead;
        o->oldest_ms = oldest && b->wall_ns > oldest ? (b->wall_ns - oldest) / NS_PER_MS : 0;
        o->enqueued = lv->counters.enqueued;
        o->dispatched = lv->counters.dispatched;
        o->acked = lv->counters.acked;
        o->nacked = lv->counters.nacked;
        o->expired = lv->counters.expired;
        o->buried = lv->counters.buried;
        o->throttled = lv->counters.throttled;
        o->throttled_tag = lv->counters.throttled_tag;
        memcpy(o->picks, b->picks[l], sizeof o->picks);
        o->pause_ns = b->level_pause[l].until_ns > b->mono_ns ? b->level_pause[l].until_ns - b->mono_ns : 0;
        o->wait = b->wait_hist[l];
        o->eta_ms = deliver_eta_ms(b, l);
        o->deadline_ms = b->policy[l].deadline_ms;
        o->aging_ms = b->policy[l].aging_ms;
        o->paused = b->policy[l].paused != 0;
        o->max_rate_milli = ml->max_rate_milli;
        o->min_rate_milli = ml->min_rate_milli;
        o->burst = ml->burst ? ml->burst : 1;
        o->fair = lv->fair != 0;
        o->tenants = 0;
        if (lv->fair) {
            uint32_t tenants;
            queue_fair_bytes(&b->q, l, &tenants);
            o->tenants = tenants;
        }
    }
}

/* take copies b's figures into s. Only what is used is written (the
 * levels and pools there are, the figures after them): touching the whole
 * 17 KiB struct, cold in the cache, was most of a publish's cost. */
static void take(snap *s, bk *b)
{
    memset((char *)s + offsetof(snap, sink_rate_milli), 0, sizeof *s - offsetof(snap, sink_rate_milli));
    take_levels(s, b);
    s->npools = b->pools.n;
    for (unsigned i = 0; i < s->npools; i++) {
        const pool *p = b->pools.v[i];
        snap_pool *o = &s->pool[i];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", p->name);
        o->size = p->size;
        o->members = p->members;
        o->inflight = p->inflight;
        o->recommended = p->recommended;
        o->delivered = p->delivered;
        o->paused = p->paused != 0;
        o->levels_mask = p->levels_mask;
        o->rate_milli = (uint64_t)(p->rate_per_s * 1000.0 + 0.5);
        o->autoscale = p->autoscale != 0;
    }
    const meter_sink *k = &b->meter.sink;
    s->sink_rate_milli = k->rate_milli;
    s->sink_effective_milli = k->rate_milli || k->learned_milli ? k->effective_rate_milli : 0;
    s->sink_tokens_milli = rl_tokens_milli(&k->bucket, b->mono_ns);
    s->sink_burst = k->burst;
    s->sink_inflight = k->inflight;
    s->sink_max_inflight = k->max_inflight;
    s->sink_pause_ns = k->paused_until_ns > b->mono_ns ? k->paused_until_ns - b->mono_ns : 0;
    snprintf(s->sink_reason, sizeof s->sink_reason, "%s", meter_reason_name(meter_sink_reason(&b->meter, b->mono_ns)));
    s->breaker_state = (int)b->meter.breaker.state;
    s->breaker_trips = b->meter.breaker.trips;
    ha_node_figures(b, s); /* (nothing without --ha) */
    if (b->coord) {
        proto_row_coord row;
        coord_row(b->coord, b->mono_ns, &row);
        s->coord = 1;
        snprintf(s->coord_state, sizeof s->coord_state, "%.*s", (int)row.state.len, row.state.ptr);
        s->coord_reachable = row.reachable;
        s->coord_slices_held = row.slices_held;
        s->coord_slices = row.slices;
        s->coord_reserved_milli = row.reserved_milli;
        s->coord_granted_milli = row.granted_milli;
        s->coord_lease_left_ms = row.lease_left_ms;
        s->coord_limit_milli = row.limit_milli;
        s->coord_brokers = row.brokers;
    }
    s->commits = b->commits;
    s->commit_stalls = b->commit_stalls;
    store_counts durable;
    store_durability_counts(b->st, &durable);
    s->log_records = durable.log_records;
    s->log_bytes = durable.log_bytes;
    s->lmdb_commits = durable.lmdb_commits;
    s->commit = b->commit_hist;
    s->map_used = store_used_bytes(b->st);
    s->map_size = store_map_bytes(b->st);
    s->map_max = b->cfg.map_max_bytes;
    s->connections = b->conns.len;
    s->consumers = member_consumers(b);
    s->rx_bad = b->rx_bad;
    s->tx_failed = b->tx_failed;
    s->settle_refused = b->settle_refused;
    s->settle_foreign = b->settle_foreign;
    s->uptime_ns = b->mono_ns - b->started_mono_ns;
    s->wall_ms = b->wall_ns / NS_PER_MS;
}

void publish_figures(bk *b)
{
    snap *s = http_staging(b->http);
    if (!s)
        return;
    uint64_t t0 = loop_cpu_ns();
    take(s, b);
    s->publish_ns = b->publish_ns;
    s->publishes = b->publishes;
    http_publish(b->http);
    b->publish_ns += loop_cpu_ns() - t0; /* the loop's CPU time; shown with the next one */
    b->publishes++;
}
