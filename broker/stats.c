/*
 * stats.c - the STATS reply: per-level counters and gauges, the sink's
 * breaker, uptime and consumers.
 *
 * stats_fill reads the broker's in-memory view only (two B-tree reads per
 * level for the oldest message's age); it changes nothing. O(levels).
 */
#include "stats.h"

#include <string.h>

#include "bk.h"
#include "deliver.h"
#include "member.h"
#include "units.h"


void stats_fill(bk *b, proto_msg *r)
{
    unsigned n = b->cfg.levels;
    r->present |= PF(names) | PROTO_STATS_COLUMNS | PROTO_STATS_COLUMNS_OPT;
    r->names.n = n;
    r->depth.n = r->inflight.n = r->delayed.n = r->dead.n = r->oldest_ms.n = n;
    r->enqueued.n = r->dispatched.n = r->acked.n = r->nacked.n = r->expired.n = n;
    r->picks_priority.n = r->picks_aged.n = r->picks_overdue.n = r->picks_guaranteed.n = n;
    r->throttled.n = r->eta_ms.n = n;
    for (unsigned l = 0; l < n; l++) {
        const queue_level *lv = &b->q.lv[l];
        uint64_t oldest = queue_oldest_ns(&b->q, l);
        r->names.v[l] = (proto_buf){b->cfg.level_names[l], (uint32_t)strlen(b->cfg.level_names[l])};
        r->depth.v[l] = queue_ready(&b->q, l);
        r->inflight.v[l] = lv->leased;
        r->delayed.v[l] = lv->delayed;
        r->dead.v[l] = lv->dead;
        r->oldest_ms.v[l] = oldest && b->wall_ns > oldest ? (b->wall_ns - oldest) / NS_PER_MS : 0;
        r->enqueued.v[l] = lv->enqueued;
        r->dispatched.v[l] = lv->dispatched;
        r->acked.v[l] = lv->acked;
        r->nacked.v[l] = lv->nacked;
        r->expired.v[l] = lv->expired;
        r->picks_priority.v[l] = b->picks[l][DISP_PRIORITY];
        r->picks_aged.v[l] = b->picks[l][DISP_AGED];
        r->picks_overdue.v[l] = b->picks[l][DISP_OVERDUE];
        r->picks_guaranteed.v[l] = b->picks[l][DISP_GUARANTEED];
        r->throttled.v[l] = lv->throttled;
        r->eta_ms.v[l] = deliver_eta_ms(b, l);
    }
    const char *state = breaker_name(b->meter.breaker.state);
    proto_set_str(r, PROTO_F_breaker, state, strlen(state));
    proto_set(r, breaker_trips, b->meter.breaker.trips);
    proto_set(r, uptime_ms, (b->mono_ns - b->started_mono_ns) / NS_PER_MS);
    proto_set(r, consumers, member_consumers(b));
}
