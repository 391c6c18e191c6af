/*
 * overview.c - GET /api/v1/overview: the console's first page as JSON,
 * from a snapshot and the point the history computed from it (its rates).
 *
 * The ticker formats it once a second (live.c) and every reader, poll or
 * event stream, gets the same bytes: four open consoles cost the loop
 * nothing beyond the snapshot it publishes anyway.
 *
 * The shape is proto/HTTP.md's: "levels" (one object per level: "level",
 * "name", "ready", "inflight", "delayed", "dead", "paused", rates and
 * settings, and which rule last picked it), "sink" (limits, rate in use and
 * why, in flight, 429s a second, the pause's countdown, the breaker, the
 * shared sink's lease), "pools", "broker" and "http" (this server's own
 * connection counters), and "snapshot" (what publishing costs the loop).
 * A level's columns are an X-macro list below: one line per column.
 *
 * Costs: O(levels + pools) and a few KiB of text.
 */
#include "overview.h"

#include <string.h>

#include "proto_json.h"
#include "units.h"

/* X(JSON key, snap_level member): the level's plain numbers. */
#define OVERVIEW_LEVEL_NUMBERS(X)            \
    X("ready", depth)                        \
    X("inflight", inflight)                  \
    X("delayed", delayed)                    \
    X("dead", dead)                          \
    X("oldest_ms", oldest_ms)                \
    X("eta_ms", eta_ms)                      \
    X("enqueued", enqueued)                  \
    X("dispatched", dispatched)              \
    X("acked", acked)                        \
    X("nacked", nacked)                      \
    X("expired", expired)                    \
    X("dead_lettered", buried)               \
    X("throttled", throttled)                \
    X("deadline_ms", deadline_ms)            \
    X("aging_ms", aging_ms)                  \
    X("burst", burst)                        \
    X("tenants", tenants)

/* last_pick names the reason that picked level l most since prev (NULL
 * when nothing was picked from it). */
static const char *last_pick(const snap_level *prev, const snap_level *cur)
{
    uint64_t best = 0;
    int why = -1;
    for (int r = DISP_PRIORITY; r < DISP_REASON_COUNT_; r++) {
        uint64_t d = prev && cur->picks[r] > prev->picks[r] ? cur->picks[r] - prev->picks[r] : 0;
        if (d > best)
            best = d, why = r;
    }
    return why < 0 ? NULL : disp_reason_name((disp_reason)why);
}

static int level(proto_wbuf *o, unsigned l, const snap *prev, const snap *cur, const series_point *pt)
{
    const snap_level *c = &cur->lv[l], *p = prev && prev->nlevels == cur->nlevels ? &prev->lv[l] : NULL;
    int rc = proto_json_printf(o, "%s{\"level\": %u, \"name\": ", l ? ", " : "", l);
    if (rc == SL_OK)
        rc = proto_json_str(o, c->name, strlen(c->name));
#define OVERVIEW_NUM_(key, member)                                                                         \
    if (rc == SL_OK)                                                                                       \
        rc = proto_json_printf(o, ", \"" key "\": %llu", (unsigned long long)c->member);
    OVERVIEW_LEVEL_NUMBERS(OVERVIEW_NUM_)
#undef OVERVIEW_NUM_
    if (rc == SL_OK)
        rc = proto_json_printf(o, ", \"paused\": %s, \"fair\": %s, \"max_rate\": %.3f, \"min_rate\": %.3f",
                               c->paused ? "true" : "false", c->fair ? "true" : "false",
                               (double)c->max_rate_milli / 1000.0, (double)c->min_rate_milli / 1000.0);
    if (rc == SL_OK && pt)
        rc = proto_json_printf(o, ", \"in_per_s\": %.2f, \"out_per_s\": %.2f, \"acked_per_s\": %.2f, "
                               "\"throttled_per_s\": %.2f", pt->lv[l].in_per_s, pt->lv[l].out_per_s,
                               pt->lv[l].acked_per_s, pt->lv[l].throttled_per_s);
    if (rc == SL_OK)
        rc = proto_json_raw(o, ", \"picks\": {");
    for (int r = DISP_PRIORITY; r < DISP_REASON_COUNT_ && rc == SL_OK; r++)
        rc = proto_json_printf(o, "%s\"%s\": %llu", r == DISP_PRIORITY ? "" : ", ", disp_reason_name((disp_reason)r),
                               (unsigned long long)c->picks[r]);
    const char *why = last_pick(p, c);
    if (rc == SL_OK)
        rc = proto_json_printf(o, "}, \"last_pick\": %s%s%s}", why ? "\"" : "", why ? why : "null", why ? "\"" : "");
    return rc;
}

static int sink(proto_wbuf *o, const snap *s, const snap *prev)
{
    uint64_t thr = 0, thr_prev = 0;
    for (unsigned l = 0; l < s->nlevels; l++)
        thr += s->lv[l].throttled;
    for (unsigned l = 0; prev && l < prev->nlevels; l++)
        thr_prev += prev->lv[l].throttled;
    uint64_t ns = prev && s->uptime_ns > prev->uptime_ns ? s->uptime_ns - prev->uptime_ns : 0;
    double thr_per_s = prev && ns && thr > thr_prev ? (double)(thr - thr_prev) * 1e9 / (double)ns : 0.0;
    int rc = proto_json_printf(o, ", \"sink\": {\"rate\": %.3f, \"effective_rate\": %.3f, \"reason\": ",
                               (double)s->sink_rate_milli / 1000.0, (double)s->sink_effective_milli / 1000.0);
    if (rc == SL_OK)
        rc = proto_json_str(o, s->sink_reason, strlen(s->sink_reason));
    if (rc == SL_OK && s->sink_tokens_milli == UINT64_MAX)
        rc = proto_json_raw(o, ", \"tokens\": null");
    else if (rc == SL_OK)
        rc = proto_json_printf(o, ", \"tokens\": %.3f", (double)s->sink_tokens_milli / 1000.0);
    if (rc == SL_OK)
        rc = proto_json_printf(o, ", \"burst\": %llu, \"inflight\": %llu, \"max_inflight\": %llu, \"throttled\": %llu, "
                               "\"throttled_per_s\": %.2f, \"paused\": %s, \"pause_remaining_ms\": %llu, "
                               "\"breaker\": \"%s\", \"breaker_trips\": %llu",
                               (unsigned long long)(s->sink_burst ? s->sink_burst : 1),
                               (unsigned long long)s->sink_inflight, (unsigned long long)s->sink_max_inflight,
                               (unsigned long long)thr, thr_per_s, s->sink_pause_ns ? "true" : "false",
                               (unsigned long long)(s->sink_pause_ns / NS_PER_MS),
                               breaker_name((breaker_state)s->breaker_state), (unsigned long long)s->breaker_trips);
    if (rc == SL_OK && !s->coord)
        rc = proto_json_raw(o, ", \"coord\": null}");
    else if (rc == SL_OK) {
        rc = proto_json_raw(o, ", \"coord\": {\"state\": ");
        if (rc == SL_OK)
            rc = proto_json_str(o, s->coord_state, strlen(s->coord_state));
        if (rc == SL_OK)
            rc = proto_json_printf(o, ", \"reachable\": %s, \"slices_held\": %llu, \"slices\": %llu, "
                                   "\"reserved_rate\": %.3f, \"granted_rate\": %.3f, \"lease_left_ms\": %llu, "
                                   "\"limit\": %.3f, \"brokers\": %llu}}",
                                   s->coord_reachable ? "true" : "false", (unsigned long long)s->coord_slices_held,
                                   (unsigned long long)s->coord_slices, (double)s->coord_reserved_milli / 1000.0,
                                   (double)s->coord_granted_milli / 1000.0, (unsigned long long)s->coord_lease_left_ms,
                                   (double)s->coord_limit_milli / 1000.0, (unsigned long long)s->coord_brokers);
    }
    return rc;
}

static int pools(proto_wbuf *o, const snap *s)
{
    int rc = proto_json_raw(o, ", \"pools\": [");
    for (unsigned i = 0; i < s->npools && rc == SL_OK; i++) {
        const snap_pool *p = &s->pool[i];
        rc = proto_json_raw(o, i ? ", {\"name\": " : "{\"name\": ");
        if (rc == SL_OK)
            rc = proto_json_str(o, p->name, strlen(p->name));
        if (rc == SL_OK)
            rc = proto_json_printf(o, ", \"size\": %llu, \"members\": %llu, \"inflight\": %llu, \"recommended\": %llu, "
                                   "\"delivered\": %llu, \"paused\": %s, \"autoscale\": %s, \"rate\": %.3f, \"levels\": [",
                                   (unsigned long long)p->size, (unsigned long long)p->members,
                                   (unsigned long long)p->inflight, (unsigned long long)p->recommended,
                                   (unsigned long long)p->delivered, p->paused ? "true" : "false",
                                   p->autoscale ? "true" : "false", (double)p->rate_milli / 1000.0);
        for (unsigned l = 0, k = 0; l < s->nlevels && rc == SL_OK; l++)
            if (p->levels_mask & (1ull << l))
                rc = proto_json_printf(o, k++ ? ", %u" : "%u", l);
        if (rc == SL_OK)
            rc = proto_json_raw(o, "]}");
    }
    return rc == SL_OK ? proto_json_raw(o, "]") : rc;
}

/* ha writes the high-availability group's figures as this node sees them
 * (the snapshot's, filled by ha_node_figures or standby_http.c), or null
 * without --ha. A standby has no mode, lag nor divergence of its own: null. */
static int ha(proto_wbuf *o, const snap *s)
{
    static const char *const modes[] = {[SNAP_HA_SYNC] = "sync", [SNAP_HA_ALONE] = "alone",
                                        [SNAP_HA_FENCED] = "fenced"};
    if (!s->ha)
        return proto_json_raw(o, ", \"ha\": null");
    if (s->ha_role == SNAP_HA_STANDBY)
        return proto_json_printf(o, ", \"ha\": {\"mode\": null, \"epoch\": %llu, \"lag_records\": null, "
                                 "\"lag_ms\": null, \"records\": %llu, \"diverged\": null, \"role\": \"standby\", "
                                 "\"promotions\": %llu, \"streaming\": %s, \"in_sync\": %s}",
                                 (unsigned long long)s->ha_epoch, (unsigned long long)s->ha_records,
                                 (unsigned long long)s->ha_promotions, s->ha_streaming ? "true" : "false",
                                 s->ha_in_sync ? "true" : "false");
    const char *mode = s->ha_mode >= SNAP_HA_SYNC && s->ha_mode <= SNAP_HA_FENCED ? modes[s->ha_mode] : "?";
    return proto_json_printf(o, ", \"ha\": {\"mode\": \"%s\", \"epoch\": %llu, \"lag_records\": %llu, "
                             "\"lag_ms\": %llu, \"records\": %llu, \"diverged\": %llu, \"role\": \"primary\", "
                             "\"promotions\": %llu}",
                             mode, (unsigned long long)s->ha_epoch, (unsigned long long)s->ha_lag_records,
                             (unsigned long long)(s->ha_lag_ns / NS_PER_MS), (unsigned long long)s->ha_records,
                             (unsigned long long)s->ha_diverged, (unsigned long long)s->ha_promotions);
}

int overview_json(const overview_in *in, proto_wbuf *o)
{
    const snap *s = in->cur;
    int rc = proto_json_printf(o, "{\"version\": \"%s\", \"time_ms\": %llu, \"uptime_ms\": %llu, \"auth\": %s, "
                               "\"levels\": [",
                               SLUICE_VERSION, (unsigned long long)s->wall_ms,
                               (unsigned long long)(s->uptime_ns / NS_PER_MS), in->auth ? "true" : "false");
    for (unsigned l = 0; l < s->nlevels && rc == SL_OK; l++)
        rc = level(o, l, in->prev, s, in->point);
    if (rc == SL_OK)
        rc = proto_json_raw(o, "]");
    if (rc == SL_OK)
        rc = sink(o, s, in->prev);
    if (rc == SL_OK)
        rc = pools(o, s);
    if (rc == SL_OK)
        rc = proto_json_printf(o, ", \"broker\": {\"connections\": %llu, \"consumers\": %llu, \"commits\": %llu, "
                               "\"rx_bad\": %llu, \"tx_failed\": %llu, \"map_used\": %llu, \"map_size\": %llu, "
                               "\"map_max\": %llu}",
                               (unsigned long long)s->connections, (unsigned long long)s->consumers,
                               (unsigned long long)s->commits, (unsigned long long)s->rx_bad,
                               (unsigned long long)s->tx_failed, (unsigned long long)s->map_used,
                               (unsigned long long)s->map_size, (unsigned long long)s->map_max);
    if (rc == SL_OK)
        rc = ha(o, s);
    if (rc == SL_OK)
        rc = proto_json_printf(o, ", \"http\": {\"connections\": %llu, \"evicted\": %llu, \"refused\": %llu, "
                               "\"timed_out\": %llu, \"streams\": %u}",
                               (unsigned long long)in->conns.live, (unsigned long long)in->conns.evicted,
                               (unsigned long long)in->conns.refused, (unsigned long long)in->conns.timed_out,
                               in->streams);
    double per_s = s->uptime_ns ? (double)s->publish_ns / 1e3 / ((double)s->uptime_ns / 1e9) : 0.0;
    if (rc == SL_OK)
        rc = proto_json_printf(o, ", \"snapshot\": {\"publishes\": %llu, \"publish_ns\": %llu, \"loop_us_per_s\": %.2f}}",
                               (unsigned long long)s->publishes, (unsigned long long)s->publish_ns, per_s);
    return rc;
}
