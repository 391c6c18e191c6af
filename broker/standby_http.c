/*
 * standby_http.c - what a standby serves over HTTP: its /metrics and the
 * console's overview, with the group's figures as this node knows them.
 *
 * A standby runs no broker (standby.c), so the snapshot it publishes holds
 * no level, sink or pool: only its role (standby), the highest epoch it has
 * seen, the stream's position durable in its store, the records it refused,
 * whether a primary streams to it, whether Redis names it in sync, and the
 * promotions this node made (main.c carries the count across the restart
 * in place each role change makes). metrics.c serves a standby's snapshot
 * as the group's series alone. Its lag is the primary's to know (the
 * primary's last record, and how long the oldest one this standby has not
 * acknowledged has waited): the primary says both twice a second, in
 * answer to the standby's keepalive (ha_wire.h, POS), and the standby
 * serves them as last said.
 *
 * The server is the broker's own (broker/http/), opened without a bridge:
 * nothing it serves is asked of a loop, so every write of the API is
 * refused. It is closed before a promotion starts sluiced again in place,
 * which opens it again as the primary's, on the same address.
 *
 * Costs: a snapshot of a few figures a second (one copy under the server's
 * lock); the server's threads, as on a primary.
 */
#include "standby_http.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha_lease.h"
#include "ha_stby.h"
#include "http.h"
#include "loop.h"
#include "units.h"

struct standby_http {
    http *srv;
    uint64_t promotions, started_ns, next_ns;
    char node[PROTO_MAX_NAME + 1]; /* this node's name (--ha-node) */
};

int standby_http_open(const conf *cfg, uint64_t promotions, standby_http **out)
{
    *out = NULL;
    if (!cfg->http[0])
        return SL_OK;
    standby_http *h = calloc(1, sizeof *h);
    if (!h)
        return SL_ENOMEM;
    http_cfg hc = {.addr_port = cfg->http, .cert_file = cfg->http_cert, .key_file = cfg->http_key,
                   .max_conns = cfg->http_max_conns, .max_conns_per_addr = cfg->http_max_conns_per_addr,
                   .header_timeout_ms = cfg->http_header_timeout_ms, .idle_timeout_ms = cfg->http_idle_timeout_ms,
                   .session_idle_ms = cfg->http_session_idle_ms, .auth = cfg->auth_file[0] != '\0',
                   .max_body = cfg->max_body, .bridge = NULL};
    int rc = http_open(&hc, &h->srv);
    if (rc != SL_OK) {
        free(h);
        return rc;
    }
    h->promotions = promotions;
    snprintf(h->node, sizeof h->node, "%s", cfg->ha_node);
    h->started_ns = loop_now_mono();
    *out = h;
    return SL_OK;
}

void standby_http_tick(standby_http *h, uint64_t now_ns, const ha_view *v, const ha_stby_stats *ss)
{
    if (!h || now_ns < h->next_ns)
        return;
    h->next_ns = now_ns + HTTP_PUBLISH_NS;
    snap *s = http_staging(h->srv);
    memset(s, 0, offsetof(snap, lv)); /* no levels, no pools: the tail is cleared below */
    size_t tail = offsetof(snap, sink_rate_milli);
    memset((char *)s + tail, 0, sizeof *s - tail);
    s->ha = 1;
    s->ha_role = SNAP_HA_STANDBY;
    s->ha_epoch = v->epoch > ss->epoch ? v->epoch : ss->epoch;
    s->ha_records = ss->applied;
    s->ha_refused = ss->refused;
    s->ha_streaming = (uint64_t)ss->streaming;
    s->ha_lag_records = ss->behind;
    s->ha_lag_ns = ss->lag_ms * NS_PER_MS;
    s->ha_in_sync = v->sync[0] && v->role == HA_ROLE_STANDBY && !strcmp(v->sync, h->node);
    s->ha_promotions = h->promotions;
    s->uptime_ns = now_ns - h->started_ns;
    s->wall_ms = loop_now_wall() / NS_PER_MS;
    http_publish(h->srv);
}

void standby_http_close(standby_http **hp)
{
    if (!*hp)
        return;
    http_close(&(*hp)->srv);
    free(*hp);
    *hp = NULL;
}
