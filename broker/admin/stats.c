/*
 * stats.c - the STATS reply: one row per level (counters and gauges, columns
 * from proto's PROTO_COLS_level_stat), and for the whole broker the sink's
 * breaker, uptime, consumers and the bad-input counters (rx_bad: messages
 * refused as malformed or unexpected; tx_failed: replies and deliveries
 * that could not be sent), when auth is on, the refusals (auth_refused:
 * commands refused SL_EPERM; handshakes_refused: by the ZAP handler), the
 * settlements refused SL_ESTALE (settle_refused; of those, settle_foreign:
 * a lease another connection holds; sent once there is one), each level's
 * pause after THROTTLED (throttled_ms, sent while there is one), and with
 * a shared sink, one coord row (its lease).
 *
 * stats_fill reads the broker's in-memory view only (two B-tree reads per
 * level for the oldest message's age); it changes nothing. O(levels).
 */
#include "stats.h"

#include <string.h>

#include "bk.h"
#include "coord.h"
#include "deliver.h"
#include "member.h"
#include "net.h"
#include "pause.h"
#include "units.h"
#include "zap.h"


void stats_fill(bk *b, proto_msg *r)
{
    proto_rows_level_stat *rows = &r->level_stats;
    unsigned n = b->cfg.levels;
    uint64_t quarantined = 0;
    r->present |= PF(level_stats);
    rows->n = n;
    for (unsigned l = 0; l < n; l++) {
        const queue_level *lv = &b->q.lv[l];
        uint64_t oldest = queue_oldest_ns(&b->q, l);
        rows->v[l] = (proto_row_level_stat){
            .present = PROTO_ROW_ALL(level_stat),
            .name = {b->cfg.level_names[l], (uint32_t)strlen(b->cfg.level_names[l])},
            .depth = queue_ready(&b->q, l),
            .inflight = lv->leased,
            .delayed = lv->delayed,
            .dead = lv->dead,
            .oldest_ms = oldest && b->wall_ns > oldest ? (b->wall_ns - oldest) / NS_PER_MS : 0,
            .enqueued = lv->counters.enqueued,
            .dispatched = lv->counters.dispatched,
            .acked = lv->counters.acked,
            .nacked = lv->counters.nacked,
            .expired = lv->counters.expired,
            .picks_priority = b->picks[l][DISP_PRIORITY],
            .picks_aged = b->picks[l][DISP_AGED],
            .picks_overdue = b->picks[l][DISP_OVERDUE],
            .picks_guaranteed = b->picks[l][DISP_GUARANTEED],
            .throttled = lv->counters.throttled,
            .eta_ms = deliver_eta_ms(b, l),
            .dead_requeued = lv->counters.dead_requeued,
            .dead_purged = lv->counters.dead_purged,
            .dead_dropped = lv->counters.dead_dropped,
            .corrupt = lv->counters.corrupt,
            .throttled_tag = lv->counters.throttled_tag,
            .throttled_ms = pause_left_ms(b, l),
        };
        if (!rows->v[l].throttled_ms) /* sent only while a pause after THROTTLED holds the level */
            rows->v[l].present &= ~(1u << PROTO_COL_level_stat_throttled_ms);
        if (queue_quarantined(&b->q, l)) { /* its trees failed the store's checks at start */
            rows->v[l].state = (proto_buf){"quarantined", 11};
            rows->v[l].quarantined = queue_quarantined_msgs(&b->q, l);
            quarantined += rows->v[l].quarantined;
        } else {
            rows->v[l].present &= ~(1u << PROTO_COL_level_stat_state | 1u << PROTO_COL_level_stat_quarantined);
        }
    }
    if (quarantined) /* sent only when there is one: an older client refuses a field it does not know */
        proto_set(r, quarantined, quarantined);
    const char *state = breaker_name(b->meter.breaker.state);
    proto_set_str(r, PROTO_F_breaker, state, strlen(state));
    proto_set(r, breaker_trips, b->meter.breaker.trips);
    proto_set(r, uptime_ms, (b->mono_ns - b->started_mono_ns) / NS_PER_MS);
    proto_set(r, consumers, member_consumers(b));
    proto_set(r, rx_bad, b->rx_bad);
    proto_set(r, tx_failed, b->tx_failed);
    if (b->auth) { /* commands refused by their role, handshakes by their key */
        proto_set(r, auth_refused, b->auth_refused);
        proto_set(r, handshakes_refused, net_zap(b->net) ? zap_refused(net_zap(b->net)) : 0);
    }
    if (b->settle_refused) { /* settlements refused SL_ESTALE; of those, another connection's lease */
        proto_set(r, settle_refused, b->settle_refused);
        proto_set(r, settle_foreign, b->settle_foreign);
    }
    if (b->coord) { /* a shared sink: its lease */
        r->present |= PF(coord_rows);
        r->coord_rows.n = 1;
        coord_row(b->coord, b->mono_ns, &r->coord_rows.v[0]);
    }
}
