/*
 * ha_lease.c - which node of a high-availability group is primary, decided
 * by one Lua script in Redis (ha.lua), on the connection of rlink.c.
 *
 * Owns: this node's view of its group: its role, the epoch, the leader and
 * its endpoints, the standby named in sync, and, on a primary, until when
 * its lease is valid here.
 *
 * Every TTL/3 (or at once when poked) tick runs one EVAL of ha.lua: a
 * primary renews its lease and says who is in sync; a standby learns where
 * the primary is, and promotes itself (in the script, atomically) when it
 * is the one named in sync and the lease has expired. A primary's lease is
 * valid here until the time its renewal was *sent* plus TTL minus a guard
 * (TTL/10): Redis counts from when the script ran, later, so a primary
 * stops confirming and dispatching (fencing, checked by the loop against
 * this time) before Redis can let the standby promote, whatever the delay.
 *
 * Failure: a request unanswered within TTL/3 drops the connection (the
 * lease runs out locally, and the primary fences itself); reconnection
 * backs off from 100 ms to TTL/3.
 *
 * Costs: one Redis command per TTL/3 per node.
 */
#include "ha_lease.h"

#include <hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rlink.h"
#include "units.h"

static const char ha_lua[] =
#include "ha.lua.inc"
    ;

enum kind { K_TICK, K_RELEASE, K_HANDOVER, K_RECOVER };

struct ha_lease {
    char key[PROTO_MAX_NAME + 16], node[PROTO_MAX_NAME + 1];
    char client_ep[HA_NAME_MAX], repl_ep[HA_NAME_MAX];
    uint64_t ttl_ns;
    rlink *link;
    int asking, reachable, poked;
    uint64_t sent_ns, next_ns;
    ha_view view;
};

static void copy_str(char *dst, size_t cap, const redisReply *r)
{
    size_t n = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ? r->len : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, r->str, n);
    dst[n] = '\0';
}

static long long int_of(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return atoll(r->str);
    return 0;
}

static void on_tick(ha_lease *l, const redisReply *r, uint64_t now_ns)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 7) {
        log_warn("ha", "the leadership script failed: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        l->next_ns = now_ns + l->ttl_ns / 10;
        return;
    }
    char role[16];
    ha_view *v = &l->view;
    copy_str(role, sizeof role, r->element[0]);
    ha_role was = v->role;
    uint64_t was_epoch = v->epoch;
    v->role = !strcmp(role, "primary") ? HA_ROLE_PRIMARY : !strcmp(role, "standby") ? HA_ROLE_STANDBY : HA_ROLE_LOST;
    v->epoch = (uint64_t)int_of(r->element[1]);
    copy_str(v->leader, sizeof v->leader, r->element[2]);
    copy_str(v->leader_ep, sizeof v->leader_ep, r->element[3]);
    copy_str(v->leader_repl, sizeof v->leader_repl, r->element[4]);
    copy_str(v->sync, sizeof v->sync, r->element[5]);
    v->lease_left_ms = (uint64_t)int_of(r->element[6]);
    v->valid_until_ns = v->role == HA_ROLE_PRIMARY ? l->sent_ns + l->ttl_ns - l->ttl_ns / 10 : 0;
    v->nnodes = 0;
    for (size_t i = 7; i + 2 < r->elements && v->nnodes < HA_NODES_MAX; i += 3) {
        ha_node_seen *n = &v->nodes[v->nnodes++];
        copy_str(n->name, sizeof n->name, r->element[i]);
        copy_str(n->ep, sizeof n->ep, r->element[i + 1]);
        long long ago = int_of(r->element[i + 2]);
        n->silent_ms = ago > 0 ? (uint64_t)ago : 0;
    }
    v->heard_ns = now_ns;
    v->answers++;
    if (was != v->role || was_epoch != v->epoch)
        log_info("ha", "%s in epoch %llu (primary %s%s%s)", role, (unsigned long long)v->epoch,
                 v->leader[0] ? v->leader : "none", v->sync[0] ? ", in sync: " : "", v->sync);
    l->reachable = 1;
    rlink_connected_ok(l->link);
}

static int on_reply(void *ctx, int kind, const redisReply *r, uint64_t now_ns)
{
    ha_lease *l = ctx;
    if (kind == K_TICK) {
        l->asking = 0;
        on_tick(l, r, now_ns);
    } else if (kind == K_RECOVER) {
        if (r->type == REDIS_REPLY_INTEGER)
            log_warn("ha", "recovered: Redis records a new leader in epoch %lld", r->integer);
        else
            log_warn("ha", "recovery failed: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        l->poked = 1;
    } else if (kind == K_HANDOVER) {
        int ok = r->type == REDIS_REPLY_ARRAY && r->elements >= 3 && int_of(r->element[0]) == 1;
        l->view.handover = ok ? 1 : -1;
        log_info("ha", "switchover %s", ok ? "recorded in Redis: the standby in sync leads the next epoch"
                                            : "refused by Redis: this node does not lead, or no standby is in sync");
        l->poked = 1; /* hear the new record at once */
    }
    return 0;
}

static void on_fail(void *ctx, uint64_t now_ns, rlink_fail what, const char *why)
{
    (void)now_ns;
    ha_lease *l = ctx;
    if (l->reachable)
        log_warn("ha", "Redis %s (%s): retrying; a primary fences itself when its lease runs out here",
                 what == RLINK_AUTH ? "refused the password" : "unreachable", why);
    l->reachable = 0;
    l->asking = 0;
}

int ha_lease_new(const ha_lease_cfg *cfg, ha_lease **out, char *err, size_t errlen)
{
    ha_lease *l = calloc(1, sizeof *l);
    if (!l)
        return SL_ENOMEM;
    l->ttl_ns = (uint64_t)cfg->ttl_ms * NS_PER_MS;
    rlink_cfg lc = {.url = cfg->url, .user = cfg->user, .password = cfg->password,
                    .connect_timeout_ns = l->ttl_ns / 3, .on_reply = on_reply, .on_fail = on_fail, .ctx = l};
    int rc = rlink_new(&lc, &l->link);
    if (rc != SL_OK) {
        if (rc == SL_EINVAL)
            snprintf(err, errlen, "--ha: '%s' is not redis://HOST:PORT[/DB] or unix:///PATH[?db=N]", cfg->url);
        free(l);
        return rc;
    }
    snprintf(l->key, sizeof l->key, "sluice:ha:{%s}", cfg->group);
    snprintf(l->node, sizeof l->node, "%s", cfg->node);
    snprintf(l->client_ep, sizeof l->client_ep, "%s", cfg->client_ep);
    snprintf(l->repl_ep, sizeof l->repl_ep, "%s", cfg->repl_ep);
    *out = l;
    return SL_OK;
}

void ha_lease_destroy(ha_lease **lp)
{
    ha_lease *l = lp ? *lp : NULL;
    if (!l)
        return;
    rlink_destroy(&l->link);
    free(l);
    *lp = NULL;
}

static void ask(ha_lease *l, uint64_t now_ns, uint64_t known_epoch, const char *want_sync, uint64_t lag)
{
    char ttl[32], known[32], lags[32];
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)(l->ttl_ns / NS_PER_MS));
    snprintf(known, sizeof known, "%llu", (unsigned long long)known_epoch);
    snprintf(lags, sizeof lags, "%llu", (unsigned long long)lag);
    const char *want = !want_sync ? "=" : !want_sync[0] ? "-" : want_sync;
    const char *argv[] = {"EVAL", ha_lua, "1", l->key, "tick", l->node, ttl, known, l->client_ep, l->repl_ep, want,
                          lags};
    if (rlink_send(l->link, K_TICK, 12, argv) != 0)
        return;
    l->asking = 1;
    l->poked = 0;
    l->sent_ns = now_ns;
    l->next_ns = now_ns + l->ttl_ns / 3;
}

uint64_t ha_lease_tick(ha_lease *l, uint64_t now_ns, uint64_t known_epoch, const char *want_sync, uint64_t lag)
{
    rlink_tick(l->link, now_ns);
    if (rlink_up(l->link) && !l->asking && (l->poked || now_ns >= l->next_ns))
        ask(l, now_ns, known_epoch, want_sync, lag);
    rlink_tick(l->link, now_ns);
    if (rlink_up(l->link) && l->asking && now_ns > l->sent_ns + l->ttl_ns / 3)
        rlink_drop(l->link, now_ns, "no answer within TTL/3");
    uint64_t next = rlink_up(l->link) ? (l->asking ? l->sent_ns + l->ttl_ns / 3 : l->poked ? now_ns : l->next_ns)
                                      : rlink_next_wake(l->link);
    uint64_t w = rlink_next_wake(l->link);
    return next < w ? next : w;
}

void ha_lease_ask_at(ha_lease *l, uint64_t at_ns)
{
    if (!l->asking && at_ns < l->next_ns)
        l->next_ns = at_ns;
}

void ha_lease_poke(ha_lease *l)
{
    l->poked = 1;
}

const ha_view *ha_lease_view(const ha_lease *l)
{
    return &l->view;
}

int ha_lease_pollfd(const ha_lease *l, short *events)
{
    return l ? rlink_pollfd(l->link, events) : -1;
}

int ha_lease_reachable(const ha_lease *l)
{
    return l->reachable;
}

int ha_lease_handover(ha_lease *l)
{
    char ttl[32];
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)(l->ttl_ns / NS_PER_MS));
    const char *argv[] = {"EVAL", ha_lua, "1", l->key, "handover", l->node, ttl};
    l->view.handover = 0;
    return rlink_send(l->link, K_HANDOVER, 7, argv);
}

int ha_lease_recover(ha_lease *l, const char *node, uint64_t known_epoch)
{
    char ttl[32], known[32];
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)(l->ttl_ns / NS_PER_MS));
    snprintf(known, sizeof known, "%llu", (unsigned long long)known_epoch);
    const char *argv[] = {"EVAL", ha_lua, "1", l->key, "recover", node, known, ttl};
    return rlink_send(l->link, K_RECOVER, 8, argv);
}

void ha_lease_handover_clear(ha_lease *l)
{
    l->view.handover = 0;
}

void ha_lease_release(ha_lease *l, int wait_ms)
{
    if (!rlink_ready(l->link))
        return;
    const char *argv[] = {"EVAL", ha_lua, "1", l->key, "release", l->node};
    if (rlink_send(l->link, K_RELEASE, 6, argv) == 0)
        rlink_flush_wait(l->link, wait_ms, 0);
}
