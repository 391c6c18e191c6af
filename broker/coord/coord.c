/*
 * coord.c - capacity leases in Redis: the one connection, on the loop's poll.
 *
 * Owns: the connection to Redis (rlink.c: hiredis 0.14, a non-blocking
 * socket on the loop's poll; nothing here ever blocks), and this broker's lease: slices held, the
 * rate of one slice, when the grant stops being valid, the epoch.
 *
 * The lease: every TTL/3 coord_tick sends one EVAL of coord.lua (embedded at
 * build time), which renews and resizes the grant atomically on the Redis
 * server, by its clock. A grant is valid locally until the time the request
 * was *sent* plus TTL minus a guard (TTL/10): Redis counts the TTL from when
 * it ran the script, which is later, so this broker stops using a slice
 * before Redis hands it to anyone else, whatever the network delay.
 *
 * Shutdown: coord_destroy returns the slices (one EVAL, waiting at most
 * 200 ms, after the loop has ended), so a restart in place frees them at
 * once; a broker that dies returns them when their TTL runs out.
 *
 * Failure: a request unanswered for TTL/2, a refused connection or a closed
 * socket drop the connection; the grant is kept until its local validity
 * ends (the meter then falls to the reserved rate), and reconnection backs
 * off from 100 ms to TTL/3. Each change of state is logged once. A wrong
 * password or a script error is reported as the state and logged once;
 * script errors are retried at the backoff without reconnecting.
 *
 * Invariants: at most one renewal in flight; replies arrive in the order
 * requests were sent (the kinds queue says what each one answers); the grant
 * reported is 0 whenever now is past its validity.
 *
 * Costs: one Redis command per TTL/3 at steady state (one a second at the
 * default 3 s TTL), whatever the message rate;
 * I/O only while a request is out; O(live brokers) work on the server.
 */
#include "coord.h"

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "proto.h"
#include "rlink.h"
#include "units.h"

static const char coord_lua[] =
#include "coord.lua.inc"
    ;

#define BACKOFF_MIN_NS (100 * NS_PER_MS)
#define RELEASE_WAIT_MS 200

enum kind { K_RENEW, K_LIMIT };

/* The states coord_show reports (compared by address). */
static const char ST_CONNECTING[] = "connecting", ST_UNREACHABLE[] = "unreachable", ST_AUTH[] = "auth failed",
                  ST_SCRIPT[] = "script error", ST_LEASED[] = "leased", ST_LEARNING[] = "learning";

struct coord {
    char key[PROTO_MAX_NAME + 16], broker[600];
    uint64_t reserved_milli, limit_milli;
    uint64_t ttl_ns;
    uint32_t slices;

    rlink *link;
    uint64_t backoff_ns;                /* after a script error */
    int renewing;                       /* a renewal is out */
    uint64_t sent_ns, next_renew_ns;
    const char *state;
    int reachable;

    uint32_t held;                      /* slices, valid until valid_until_ns */
    uint64_t valid_until_ns, slice_milli, epoch, sum_reserved_milli;
    uint32_t live;
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static int on_reply(void *ctx, int kind, const redisReply *r, uint64_t now_ns);

/* on_fail hears that the connection was dropped; logs once per state. */
static void on_fail(void *ctx, uint64_t now_ns, rlink_fail what, const char *why)
{
    (void)now_ns;
    coord *c = ctx;
    const char *state = what == RLINK_AUTH ? ST_AUTH : ST_UNREACHABLE;
    if (c->state != state)
        log_warn("coord", "Redis %s (%s): running on the reserved rate once the grant expires; retrying", state, why);
    c->state = state;
    c->reachable = 0;
    c->renewing = 0;
}

int coord_new(const coord_cfg *cfg, coord **out, char *err, size_t errlen)
{
    coord *c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    c->ttl_ns = (uint64_t)cfg->ttl_ms * NS_PER_MS;
    rlink_cfg lc = {.url = cfg->url, .user = cfg->user, .password = cfg->password,
                    .connect_timeout_ns = c->ttl_ns / 3, .on_reply = on_reply, .on_fail = on_fail, .ctx = c};
    int rc = rlink_new(&lc, &c->link);
    if (rc != SL_OK) {
        if (rc == SL_EINVAL)
            snprintf(err, errlen, "--coord: '%s' is not redis://HOST:PORT[/DB] or unix:///PATH[?db=N]", cfg->url);
        free(c);
        return rc;
    }
    snprintf(c->key, sizeof c->key, "sluice:{%s}", cfg->sink);
    snprintf(c->broker, sizeof c->broker, "%s", cfg->broker);
    c->reserved_milli = cfg->reserved_milli;
    c->limit_milli = cfg->limit_milli;
    c->slices = cfg->slices ? cfg->slices : 1;
    c->backoff_ns = BACKOFF_MIN_NS;
    c->state = ST_CONNECTING;
    *out = c;
    return SL_OK;
}

static void renew(coord *c, uint64_t now_ns, uint32_t want)
{
    char a[6][32];
    uint32_t held = now_ns < c->valid_until_ns ? c->held : 0;
    snprintf(a[0], 32, "%llu", (unsigned long long)c->reserved_milli);
    snprintf(a[1], 32, "%u", want > c->slices ? c->slices : want);
    snprintf(a[2], 32, "%u", held);
    snprintf(a[3], 32, "%llu", (unsigned long long)(c->ttl_ns / NS_PER_MS));
    snprintf(a[4], 32, "%u", c->slices);
    snprintf(a[5], 32, "%llu", (unsigned long long)c->limit_milli);
    const char *argv[] = {"EVAL", coord_lua, "1", c->key, "renew", c->broker, a[0], a[1], a[2], a[3], a[4], a[5]};
    if (rlink_send(c->link, K_RENEW, 12, argv) != 0)
        return; /* replies still pending: renew on a later tick */
    c->renewing = 1;
    c->sent_ns = now_ns;
}

static void on_renew(coord *c, const redisReply *r, uint64_t now_ns)
{
    if (r->type == REDIS_REPLY_ERROR || r->type != REDIS_REPLY_ARRAY || r->elements < 8) {
        if (c->state != ST_SCRIPT)
            log_warn("coord", "the lease script failed: %s; keeping the grant until it expires, then the reserved rate",
                     r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        c->state = ST_SCRIPT;
        c->next_renew_ns = now_ns + c->backoff_ns;
        c->backoff_ns = min_u64(c->backoff_ns * 2, c->ttl_ns / 3);
        return;
    }
    long long v[8];
    for (int i = 0; i < 8; i++)
        v[i] = r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : 0;
    if (c->epoch && (uint64_t)v[0] != c->epoch)
        log_warn("coord", "Redis lost the leases (new epoch %lld): granting only what is already held for one TTL", v[0]);
    const char *state = v[3] ? ST_LEARNING : ST_LEASED;
    if (!c->reachable || c->state != state)
        log_info("coord", "%s sink %s: %lld of %u slices at %lld.%03lld/s each, %lld brokers", state, c->key, v[1],
                 c->slices, v[2] / 1000, v[2] % 1000, v[6]);
    c->epoch = (uint64_t)v[0];
    c->held = (uint32_t)v[1];
    c->slice_milli = (uint64_t)v[2];
    c->limit_milli = (uint64_t)v[4];
    c->sum_reserved_milli = (uint64_t)v[5];
    c->live = (uint32_t)v[6];
    c->valid_until_ns = c->sent_ns + c->ttl_ns - c->ttl_ns / 10;
    c->next_renew_ns = c->sent_ns + c->ttl_ns / 3;
    c->state = state;
    c->reachable = 1;
    c->backoff_ns = BACKOFF_MIN_NS;
    rlink_connected_ok(c->link);
}

/* on_reply handles one reply (rlink.c). */
static int on_reply(void *ctx, int kind, const redisReply *r, uint64_t now_ns)
{
    coord *c = ctx;
    switch ((enum kind)kind) {
    case K_LIMIT:
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->integer == 0)
            log_warn("coord", "Redis refused the sink's limit: below the brokers' reserved rates (%lld.%03lld/s)",
                     r->element[1]->integer / 1000, r->element[1]->integer % 1000);
        else if (r->type == REDIS_REPLY_ERROR)
            log_warn("coord", "setting the sink's limit failed: %s", r->str);
        return 0;
    case K_RENEW:
        c->renewing = 0;
        on_renew(c, r, now_ns);
        return 0;
    }
    return 0;
}

uint64_t coord_tick(coord *c, uint64_t now_ns, uint32_t want)
{
    rlink_tick(c->link, now_ns); /* connects when due; reads replies */
    if (rlink_up(c->link) && !c->renewing && now_ns >= c->next_renew_ns)
        renew(c, now_ns, want);
    rlink_tick(c->link, now_ns); /* and writes it */
    if (rlink_up(c->link) && c->renewing && now_ns > c->sent_ns + c->ttl_ns / 2)
        rlink_drop(c->link, now_ns, "no answer within TTL/2");
    if (c->held && now_ns >= c->valid_until_ns) {
        log_info("coord", "the grant of %u slices expired: reserved rate only", c->held);
        c->held = 0;
    }
    uint64_t next = rlink_up(c->link) ? (c->renewing ? c->sent_ns + c->ttl_ns / 2 : c->next_renew_ns)
                                       : rlink_next_wake(c->link);
    next = min_u64(next, rlink_next_wake(c->link));
    if (c->held)
        next = min_u64(next, c->valid_until_ns);
    return next;
}

uint64_t coord_granted_milli(const coord *c, uint64_t now_ns)
{
    return now_ns < c->valid_until_ns ? (uint64_t)c->held * c->slice_milli : 0;
}

int coord_unlimited(const coord *c, uint64_t now_ns)
{
    return now_ns < c->valid_until_ns && c->state == ST_LEASED && !c->limit_milli;
}

uint64_t coord_slice_milli(const coord *c)
{
    return c->slice_milli;
}

uint32_t coord_slices(const coord *c)
{
    return c->slices;
}

int coord_pollfd(const coord *c, short *events)
{
    return c ? rlink_pollfd(c->link, events) : -1;
}

int coord_set_limit(coord *c, uint64_t limit_milli, char *err, size_t errlen)
{
    if (c->reachable && limit_milli < c->sum_reserved_milli) {
        snprintf(err, errlen,
                 "the sink's rate %llu.%03llu/s is below the brokers' reserved rates (%llu.%03llu/s in all): "
                 "raise the rate or lower --reserved-rate",
                 (unsigned long long)(limit_milli / 1000), (unsigned long long)(limit_milli % 1000),
                 (unsigned long long)(c->sum_reserved_milli / 1000),
                 (unsigned long long)(c->sum_reserved_milli % 1000));
        return SL_EINVAL;
    }
    if (!rlink_ready(c->link) || rlink_pending(c->link) >= 7) {
        snprintf(err, errlen, "Redis is unreachable: the sink's shared rate cannot be changed now");
        return SL_ESTATE;
    }
    c->limit_milli = limit_milli; /* only once it is on its way to Redis */
    char r[32], l[32];
    snprintf(r, sizeof r, "%llu", (unsigned long long)c->reserved_milli);
    snprintf(l, sizeof l, "%llu", (unsigned long long)limit_milli);
    const char *argv[] = {"EVAL", coord_lua, "1", c->key, "limit", c->broker, r, l};
    if (rlink_send(c->link, K_LIMIT, 8, argv) != 0) {
        snprintf(err, errlen, "Redis is busy: the sink's shared rate cannot be changed now; retry");
        return SL_ESTATE;
    }
    c->next_renew_ns = 0; /* and hear the new slice rate at once */
    return SL_OK;
}

void coord_row(const coord *c, uint64_t now_ns, proto_row_coord *row)
{
    int valid = now_ns < c->valid_until_ns;
    *row = (proto_row_coord){
        .present = PROTO_ROW_ALL(coord),
        .state = {c->state, (uint32_t)strlen(c->state)},
        .reachable = (uint64_t)c->reachable,
        .slices_held = valid ? c->held : 0,
        .slices = c->slices,
        .reserved_milli = c->reserved_milli,
        .granted_milli = coord_granted_milli(c, now_ns),
        .lease_left_ms = valid && c->held ? (c->valid_until_ns - now_ns) / NS_PER_MS : 0,
        .epoch = c->epoch,
        .limit_milli = c->limit_milli,
        .sum_reserved_milli = c->sum_reserved_milli,
        .brokers = c->live,
        .ops = rlink_ops(c->link),
    };
}

/* release returns this broker's slices at shutdown, waiting at most
 * RELEASE_WAIT_MS for Redis (the loop has ended: nobody waits on it); if
 * Redis does not answer, the slices come back when their TTL runs out. */
static void release(coord *c)
{
    if (!rlink_up(c->link) || !c->reachable)
        return;
    const char *argv[] = {"EVAL", coord_lua, "1", c->key, "release", c->broker};
    if (rlink_send(c->link, K_LIMIT, 6, argv) != 0) /* its reply is read and dropped like a limit's */
        return; /* no room: the slices come back when their TTL runs out */
    rlink_flush_wait(c->link, RELEASE_WAIT_MS, 0);
}

void coord_destroy(coord **cp)
{
    coord *c = cp ? *cp : NULL;
    if (!c)
        return;
    release(c);
    rlink_destroy(&c->link);
    free(c);
    *cp = NULL;
}
