/*
 * stats.c - sl_stats_get, sl_stats_get_ex and sl_stats_get_more: one STATS request, its
 * STATS_OK read into the caller's structs.
 *
 * The decoder checked every level_stat row against its column table, so a
 * row here has every required column; an optional column a broker did not
 * send reads as 0. Figures added after sl_stats's layout was fixed go into
 * sl_stats_ex, a struct of their own, so that a program built against an
 * older sluice.h (whose sl_stats is the same size) keeps working with
 * libsluice.so.1; those added after it, into sl_stats_more, which carries
 * its own size and is filled only as far as it goes. No state; one round
 * trip per call.
 */
#include "sluice.h"

#include <string.h>

#include "client.h"
#include "proto.h"

int sl_stats_get_ex(sl_client *c, sl_stats *out, sl_stats_ex *ex)
{
    return sl_stats_get_more(c, out, ex, NULL);
}

int sl_stats_get_more(sl_client *c, sl_stats *out, sl_stats_ex *ex, sl_stats_more *more)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out || (more && more->size < sizeof more->size))
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    proto_init(&m, PROTO_STATS);
    int rc = client_request(c, &m, PROTO_STATS_OK);
    if (rc)
        return rc;

    /* the decoder checked every row against the level_stat column table */
    const proto_msg *r = &c->reply;
    const proto_rows_level_stat *rows = &r->level_stats;
    if (rows->n > SL_MAX_LEVELS)
        return client_fail(c, SL_EPROTO);
    memset(out, 0, sizeof *out);
    if (ex)
        memset(ex, 0, sizeof *ex);
    sl_stats_more all = {.size = sizeof all, .settle_refused = r->settle_refused, .settle_foreign = r->settle_foreign};
    out->nlevels = rows->n;
    client_str_copy(out->breaker, sizeof out->breaker, r->breaker);
    out->breaker_trips = r->breaker_trips;
    out->uptime_ms = r->uptime_ms;
    out->consumers = r->consumers;
    out->rx_bad = r->rx_bad;
    out->tx_failed = r->tx_failed;
    out->auth_refused = r->auth_refused;
    out->handshakes_refused = r->handshakes_refused;
    client_coord_copy(&out->coord, r);
    for (unsigned i = 0; i < out->nlevels; i++) {
        const proto_row_level_stat *row = &rows->v[i];
        sl_level_stats *s = &out->level[i];
        client_str_copy(s->name, sizeof s->name, row->name);
        s->depth = row->depth;
        s->inflight = row->inflight;
        s->delayed = row->delayed;
        s->dead = row->dead;
        s->oldest_ms = row->oldest_ms;
        s->enqueued = row->enqueued;
        s->dispatched = row->dispatched;
        s->acked = row->acked;
        s->nacked = row->nacked;
        s->expired = row->expired;
        s->picks_priority = row->picks_priority;
        s->picks_aged = row->picks_aged;
        s->picks_overdue = row->picks_overdue;
        s->picks_guaranteed = row->picks_guaranteed;
        s->throttled = row->throttled;
        s->eta_ms = row->eta_ms;
        s->dead_requeued = row->dead_requeued;
        s->dead_purged = row->dead_purged;
        s->dead_dropped = row->dead_dropped;
        s->corrupt = row->corrupt;
        if (ex)
            ex->throttled_tag[i] = row->throttled_tag;
        all.throttled_ms[i] = row->throttled_ms;
        all.quarantined_level[i] = row->state.len == 11 && memcmp(row->state.ptr, "quarantined", 11) == 0;
        all.quarantined[i] = row->quarantined;
    }
    all.quarantined_total = r->quarantined;
    if (more) { /* only what fits the caller's struct: it may be an older, shorter one */
        size_t size = more->size < sizeof all ? more->size : sizeof all;
        memcpy((char *)more + sizeof more->size, (const char *)&all + sizeof all.size, size - sizeof all.size);
    }
    return SL_OK;
}

int sl_stats_get(sl_client *c, sl_stats *out)
{
    return sl_stats_get_ex(c, out, NULL);
}
