/*
 * standby.c - sluiced as a standby: its store follows the primary's
 * stream, its clients are sent to the primary.
 *
 * A standby runs no broker object: nothing it holds in memory could stay
 * true while the primary's records change its store underneath. It opens
 * the store (locked as a broker's is), the client endpoint (--listen), and
 * its stream (ha/ha_stby.c), and loops: ask Redis every TTL/3 where the
 * primary is (ha.lua also promotes this node, atomically, when it is the
 * standby named in sync and the primary's lease has expired), follow that
 * primary's stream, and answer every client request with SL_EREDIRECT and
 * the primary's client endpoint in `url`.
 *
 * Promotion: standby_run returns STANDBY_PROMOTED and main starts sluiced
 * again in place (exec), which opens the store as a primary: every
 * in-memory view (queues, counters, leases) is built from the store, as at
 * any start; a restart costs tens of milliseconds, well within the TTL.
 *
 * A copy: a standby the primary cannot resume (too far behind, or its
 * store diverged) receives a copy of the primary's store beside its data
 * directory (ha/ha_recv.c); once it is complete, standby_run closes the
 * store, swaps the copy in (the old store kept aside, its name logged) and
 * returns STANDBY_RELOAD: main starts sluiced again in place, on the copy,
 * which resumes the stream from the position the copy holds. While a copy
 * comes this node is not in sync (the primary records sync = none in
 * Redis before it makes one), so it cannot promote.
 *
 * With --curve-secret the client endpoint is a CURVE server whose ZAP
 * handler admits the keys of the auth file (read at start), and the stream
 * to the primary is encrypted with the group's key (ha_stby_secret).
 *
 * Costs: a Redis command per TTL/3; per pass of records one flush; a
 * redirect per client request.
 */
#include "standby.h"

#include <poll.h>
#include <string.h>

#include "auth.h"
#include "ha_epoch.h"
#include "ha_lease.h"
#include "ha_recv.h"
#include "ha_stby.h"
#include "log.h"
#include "loop.h"
#include "net.h"
#include "standby_http.h"
#include "store.h"
#include "units.h"
#include "zap.h"

#define STANDBY_MAX_WAIT_NS (100 * NS_PER_MS)

/* status answers ha.status as this standby sees the group: the primary
 * Redis names, this node, and any other node the record holds. */
static void status(net *n, const net_in *in, const proto_msg *req, const conf *cfg, const ha_view *v,
                   const ha_stby_stats *ss)
{
    proto_msg m;
    proto_init(&m, PROTO_ADMIN_OK);
    if (req->present & PF(seq))
        proto_set(&m, seq, req->seq);
    m.present |= PF(epoch) | PF(ha_rows);
    m.epoch = v->epoch > ss->epoch ? v->epoch : ss->epoch;
    m.ha_rows.n = 0;
    static char text[HA_NODES_MAX + 2][3][PROTO_MAX_NAME + 1];
    for (unsigned i = 0; i <= v->nnodes && m.ha_rows.n < HA_NODES_MAX; i++) {
        const char *name = i == v->nnodes ? cfg->ha_node : v->nodes[i].name;
        if (i < v->nnodes && !strcmp(name, cfg->ha_node))
            continue; /* this node: last, from what it knows itself */
        int me = i == v->nnodes, leader = !me && !strcmp(name, v->leader);
        const char *role = me ? "standby" : leader ? (v->lease_left_ms ? "primary" : "unreachable")
                                                   : v->nodes[i].silent_ms < cfg->ha_ttl_ms ? "standby" : "unreachable";
        unsigned k = m.ha_rows.n;
        snprintf(text[k][0], sizeof text[k][0], "%s", name);
        snprintf(text[k][1], sizeof text[k][1], "%s", role);
        snprintf(text[k][2], sizeof text[k][2], "%.64s", me ? cfg->advertise : v->nodes[i].ep);
        m.ha_rows.v[k] = (proto_row_ha){.present = PROTO_ROW_ALL(ha),
                                        .node = {text[k][0], (uint32_t)strlen(text[k][0])},
                                        .role = {text[k][1], (uint32_t)strlen(text[k][1])},
                                        .endpoint = {text[k][2], (uint32_t)strlen(text[k][2])},
                                        .in_sync = (uint64_t)(leader || !strcmp(name, v->sync)),
                                        .lag_records = me ? ss->behind : 0};
        m.ha_rows.n = k + 1;
    }
    net_queue_via(n, in->sock, in->rid, in->rid_len, &m, 0, NET_NOW); /* on the endpoint it came in on */
}

/* recover answers ha.recover: only while Redis holds no record this node
 * can follow (it lost its data), the record is written again with the named
 * node leading at the next epoch. */
static void recover(net *n, const net_in *in, const proto_msg *req, const ha_view *v, const ha_stby_stats *ss,
                    ha_lease *hl)
{
    proto_msg m;
    char node[PROTO_MAX_NAME + 1];
    snprintf(node, sizeof node, "%.*s", (int)req->node.len, req->node.ptr);
    if (!(req->present & PF(node)) || !node[0] || v->role != HA_ROLE_LOST) {
        const char *msg = v->role != HA_ROLE_LOST ? "Redis holds the group's record: there is nothing to recover"
                                                  : "ha.recover needs the node to lead (node)";
        proto_init(&m, PROTO_ERROR);
        proto_set(&m, code, (uint64_t)(v->role != HA_ROLE_LOST ? SL_ESTATE : SL_EINVAL));
        proto_set_str(&m, PROTO_F_msg, msg, strlen(msg));
    } else if (ha_lease_recover(hl, node, v->epoch > ss->epoch ? v->epoch : ss->epoch) != 0) {
        static const char msg[] = "Redis cannot be asked now: retry";
        proto_init(&m, PROTO_ERROR);
        proto_set(&m, code, (uint64_t)SL_ESTATE);
        proto_set_str(&m, PROTO_F_msg, msg, sizeof msg - 1);
    } else {
        log_warn("ha", "recovery asked: %s leads the next epoch after %llu", node,
                 (unsigned long long)(v->epoch > ss->epoch ? v->epoch : ss->epoch));
        proto_init(&m, PROTO_ADMIN_OK);
    }
    if (req->present & PF(seq))
        proto_set(&m, seq, req->seq);
    net_queue_via(n, in->sock, in->rid, in->rid_len, &m, 0, NET_NOW); /* on the endpoint it came in on */
}

/* redirect answers one client request: SL_EREDIRECT, the primary in url
 * (ha.status is answered here: status). */
static void redirect(net *n, const net_in *in, const char *primary, const conf *cfg, const ha_view *v,
                     const ha_stby_stats *ss, ha_lease *hl)
{
    proto_msg req, m;
    if (in->frames != 1 || proto_decode(in->body, in->body_len, &req, NULL) != SL_OK)
        return;
    if (req.type == PROTO_PING || req.type == PROTO_PONG)
        return;
    if (req.type == PROTO_ADMIN && (req.present & PF(cmd)) &&
        proto_cmd_of(req.cmd.ptr, req.cmd.len) == PROTO_CMD_ha_status) {
        status(n, in, &req, cfg, v, ss);
        return;
    }
    if (req.type == PROTO_ADMIN && (req.present & PF(cmd)) &&
        proto_cmd_of(req.cmd.ptr, req.cmd.len) == PROTO_CMD_ha_recover) {
        recover(n, in, &req, v, ss, hl);
        return;
    }
    proto_init(&m, PROTO_ERROR);
    if (req.present & PF(seq))
        proto_set(&m, seq, req.seq);
    proto_set(&m, code, (uint64_t)SL_EREDIRECT);
    const char *msg = primary[0] ? "this node is a standby: retry against the primary named in url"
                                 : "this node is a standby and knows no primary yet: retry later";
    proto_set_str(&m, PROTO_F_msg, msg, strlen(msg));
    proto_set_str(&m, PROTO_F_url, primary, strnlen(primary, PROTO_MAX_STR));
    net_queue_via(n, in->sock, in->rid, in->rid_len, &m, 0, NET_NOW); /* on the endpoint it came in on */
}

/* admit_principals hands the keys of the auth file (--auth) to the ZAP
 * handler of a CURVE client endpoint, so that every principal's client
 * completes its handshake here and is sent to the primary. What the
 * principal may do is the primary's to check. */
static int admit_principals(const conf *cfg, net *n)
{
    zap *z = net_zap(n);
    if (!z || !cfg->auth_file[0])
        return SL_OK;
    auth_table t = {0};
    char err[600];
    int rc = auth_table_load(cfg->auth_file, cfg, &t, err, sizeof err);
    if (rc != SL_OK) {
        log_error("ha", "--auth: %s", err);
        return rc;
    }
    rc = auth_table_admit(&t, z);
    auth_table_fini(&t);
    return rc;
}

int standby_run(const conf *cfg, ha_lease *hl, uint64_t known_epoch, volatile sig_atomic_t *stop,
                void (*ready)(const conf *cfg), standby_http *web)
{
    store *st = NULL;
    net *n = NULL;
    ha_stby *sb = NULL;
    store_cfg scfg = {.dir = cfg->data_dir, .levels = cfg->levels, .map_bytes = cfg->map_bytes,
                      .wal_bytes = cfg->wal_bytes, .wal_buffered = cfg->wal_buffered,
                      .checkpoint_ns = (uint64_t)cfg->checkpoint_ms * NS_PER_MS};
    int rc = store_open(&scfg, &st, NULL);
    if (rc != SL_OK)
        return rc;
    char secret[AUTH_KEY_LEN + 1], err[600];
    if (cfg->curve_secret_file[0] && (rc = auth_secret_load(cfg->curve_secret_file, secret, err, sizeof err))) {
        log_error("ha", "--curve-secret: %s", err);
        goto store_close;
    }
    net_cfg ncfg = {.endpoint = cfg->listen, .max_body_bytes = cfg->max_body, .heartbeat_ms = (int)cfg->heartbeat_ms,
                    .curve_secret = cfg->curve_secret_file[0] ? secret : NULL,
                    .stream_endpoint = cfg->stream_listen[0] ? cfg->stream_listen : NULL}; /* (redirects there too) */
    if ((rc = net_open(&ncfg, &n)) != SL_OK)
        goto store_close;
    if ((rc = admit_principals(cfg, n)) != SL_OK)
        goto net_close;
    if ((rc = ha_stby_new(st, cfg->data_dir, cfg->ha_node, known_epoch, &sb)) != SL_OK)
        goto net_close;
    char mine[AUTH_KEY_LEN + 1];
    if (cfg->repl_key_file[0] && (rc = auth_secret_load(cfg->repl_key_file, mine, err, sizeof err)) != SL_OK) {
        log_error("ha", "--repl-key: %s", err);
        ha_stby_destroy(&sb);
        goto net_close;
    }
    ha_stby_secret(sb, cfg->curve_secret_file[0] ? secret : NULL, cfg->repl_key_file[0] ? mine : NULL);
    ha_stby_stats ss;
    ha_stby_stats_get(sb, &ss);
    log_info("ha", "standby of group %s: store %s holds the stream up to record %llu (epoch %llu); redirecting "
             "clients on %s", cfg->ha_group, cfg->data_dir, (unsigned long long)ss.applied,
             (unsigned long long)ss.applied_epoch, cfg->listen);
    ready(cfg);
    int lost_logged = 0;
    while (!*stop) {
        uint64_t now = loop_now_mono();
        uint64_t next = ha_lease_tick(hl, now, ha_stby_epoch(sb), NULL, 0);
        const ha_view *v = ha_lease_view(hl);
        if (v->answers && v->role == HA_ROLE_PRIMARY) {
            if ((rc = ha_epoch_save(cfg->data_dir, v->epoch)) != SL_OK)
                break;
            log_info("ha", "promoted: primary of group %s in epoch %llu, with the stream up to record %llu",
                     cfg->ha_group, (unsigned long long)v->epoch,
                     (unsigned long long)(ha_stby_stats_get(sb, &ss), ss.applied));
            rc = STANDBY_PROMOTED;
            break;
        }
        if (v->answers && v->role == HA_ROLE_LOST && !lost_logged++)
            log_error("ha", "Redis holds epoch %llu, below the %llu this node has seen: it lost its data; nothing "
                      "promotes until an operator runs `sluice ha recover`", (unsigned long long)v->epoch,
                      (unsigned long long)ha_stby_epoch(sb));
        if (v->answers && v->role == HA_ROLE_STANDBY && !strcmp(v->sync, cfg->ha_node) && v->heard_ns &&
            v->lease_left_ms < cfg->ha_ttl_ms / 3) /* in sync: ask again right when the primary's lease ends */
            ha_lease_ask_at(hl, v->heard_ns + (v->lease_left_ms + 5) * NS_PER_MS);
        if (v->answers && v->role == HA_ROLE_STANDBY && strcmp(v->leader, cfg->ha_node) != 0 &&
            (rc = ha_stby_follow(sb, v->leader_repl, v->epoch, now)) != SL_OK)
            break;
        if ((rc = ha_stby_poll(sb, now)) != SL_OK)
            break;
        if (ha_stby_loaded(sb)) { /* a copy of the primary's store is complete: swapped in below */
            rc = STANDBY_RELOAD;
            break;
        }
        if (ha_stby_switch_asked(sb))
            ha_lease_poke(hl); /* a switchover: Redis names this node now */
        net_in in;
        ha_stby_stats_get(sb, &ss);
        standby_http_tick(web, now, v, &ss);
        for (int i = 0; i < 4096 && net_recv(n, &in) == 1; i++)
            redirect(n, &in, v->role == HA_ROLE_STANDBY ? v->leader_ep : "", cfg, v, &ss, hl);
        net_flush(n, NET_NOW, NULL, NULL);
        uint64_t w = ha_stby_next_wake(sb);
        if (w < next)
            next = w;
        now = loop_now_mono();
        uint64_t timeout = next > now ? next - now : 0;
        if (timeout > STANDBY_MAX_WAIT_NS)
            timeout = STANDBY_MAX_WAIT_NS;
        struct pollfd pfd[2];
        unsigned np = 0;
        int rdy = 0;
        short ev = 0;
        int fd = ha_stby_fd(sb, &rdy);
        if (fd >= 0)
            pfd[np++] = (struct pollfd){.fd = fd, .events = POLLIN};
        if ((fd = ha_lease_pollfd(hl, &ev)) >= 0)
            pfd[np++] = (struct pollfd){.fd = fd, .events = ev};
        if (loop_wait_net(n, pfd, np, rdy ? 0 : timeout) != 0) {
            rc = SL_EIO;
            break;
        }
    }
    if (rc == SL_OK) { /* a clean stop: what was applied is committed (it was, before each ack) */
        int r2 = store_commit(st);
        if (r2 != SL_OK)
            rc = r2;
    }
    ha_stby_stats_get(sb, &ss);
    ha_stby_destroy(&sb);
net_close:
    net_close(&n);
store_close:
    store_close(&st);
    if (rc == STANDBY_RELOAD) {
        char aside[4200];
        int r2 = ha_recv_swap(cfg->data_dir, ss.applied_epoch, ss.applied, aside, sizeof aside);
        if (r2 != SL_OK)
            return r2;
        log_warn("ha", "the copy of the primary's store is now %s; the store it replaces (the stream up to record "
                 "%llu of epoch %llu) is kept at %s (remove it when no longer wanted)", cfg->data_dir,
                 (unsigned long long)ss.applied, (unsigned long long)ss.applied_epoch, aside);
    }
    return rc;
}
