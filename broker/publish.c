/*
 * publish.c - handing the broker's figures to the threads that serve them:
 * a snapshot (snap.h) copied from the broker object, then swapped in whole
 * for the /metrics thread (metrics.c), which never touches the broker.
 *
 * Called by the loop's thread only: at open, and by cron every
 * METRICS_PUBLISH_NS. Costs O(levels + pools), one B-tree read per level for
 * the oldest message's age, and one memcpy under the server's lock.
 */
#include "publish.h"

#include <stdio.h>
#include <string.h>

#include "member.h"
#include "metrics.h"
#include "store.h"
#include "units.h"

/* take copies b's figures into s. */
static void take(snap *s, bk *b)
{
    memset(s, 0, sizeof *s);
    s->nlevels = b->cfg.levels;
    for (unsigned l = 0; l < s->nlevels; l++) {
        const queue_level *lv = &b->q.lv[l];
        snap_level *o = &s->lv[l];
        uint64_t oldest = queue_oldest_ns(&b->q, l);
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
    }
    s->npools = b->pools.n;
    for (unsigned i = 0; i < s->npools; i++) {
        const pool *p = b->pools.v[i];
        snap_pool *o = &s->pool[i];
        snprintf(o->name, sizeof o->name, "%s", p->name);
        o->size = p->size;
        o->members = p->members;
        o->inflight = p->inflight;
        o->recommended = p->recommended;
        o->delivered = p->delivered;
        o->paused = p->paused != 0;
    }
    const meter_sink *k = &b->meter.sink;
    s->sink_rate_milli = k->rate_milli;
    s->sink_effective_milli = k->rate_milli ? k->effective_rate_milli : 0;
    s->sink_tokens_milli = rl_tokens_milli(&k->bucket, b->mono_ns);
    s->sink_burst = k->burst;
    s->sink_inflight = k->inflight;
    s->sink_max_inflight = k->max_inflight;
    s->sink_pause_ns = k->paused_until_ns > b->mono_ns ? k->paused_until_ns - b->mono_ns : 0;
    s->breaker_state = (int)b->meter.breaker.state;
    s->breaker_trips = b->meter.breaker.trips;
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
}

void publish_figures(bk *b)
{
    snap *s = metrics_staging(b->metrics);
    if (!s)
        return;
    take(s, b);
    metrics_publish(b->metrics);
}
