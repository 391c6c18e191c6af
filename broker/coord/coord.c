/*
 * coord.c - capacity leases in Redis: the one connection, on the loop's poll.
 *
 * Owns: the connection to Redis (hiredis 0.14, a non-blocking socket driven
 * by hand: redisBufferWrite when it may write, redisBufferRead when it may
 * read; nothing here ever blocks), and this broker's lease: slices held, the
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

#include <errno.h>
#include <hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "proto.h"
#include "units.h"

static const char coord_lua[] =
#include "coord.lua.inc"
    ;

#define KINDS 8
#define BACKOFF_MIN_NS (100 * NS_PER_MS)
#define RELEASE_WAIT_MS 200

enum kind { K_AUTH, K_SELECT, K_RENEW, K_LIMIT };

/* The states coord_show reports (compared by address). */
static const char ST_CONNECTING[] = "connecting", ST_UNREACHABLE[] = "unreachable", ST_AUTH[] = "auth failed",
                  ST_SCRIPT[] = "script error", ST_LEASED[] = "leased", ST_LEARNING[] = "learning";

struct coord {
    char host[256], path[512], key[PROTO_MAX_NAME + 16], broker[600];
    char user[128], password[512];
    int port, db;
    uint64_t reserved_milli, limit_milli;
    uint64_t ttl_ns;
    uint32_t slices;

    redisContext *rc;
    int connecting;                     /* connect() in progress */
    uint64_t conn_since_ns, next_try_ns, backoff_ns;
    unsigned char kinds[KINDS];         /* what the pending replies answer, oldest first */
    unsigned nkinds;
    int renewing;                       /* a renewal is out */
    uint64_t sent_ns, next_renew_ns;
    const char *state;
    int reachable;

    uint32_t held;                      /* slices, valid until valid_until_ns */
    uint64_t valid_until_ns, slice_milli, epoch, sum_reserved_milli;
    uint32_t live;
    uint64_t ops;
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* parse_url reads redis://HOST:PORT[/DB] or unix:///PATH[?db=N]. */
static int parse_url(coord *c, const char *url)
{
    if (!strncmp(url, "unix://", 7)) {
        const char *p = url + 7, *q = strstr(p, "?db=");
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (!n || n >= sizeof c->path)
            return -1;
        memcpy(c->path, p, n);
        c->path[n] = '\0';
        c->db = q ? atoi(q + 4) : 0;
        return 0;
    }
    if (strncmp(url, "redis://", 8))
        return -1;
    const char *p = url + 8, *colon = strrchr(p, ':'), *slash = strchr(p, '/');
    if (slash && colon && colon > slash)
        colon = NULL;
    size_t n = colon ? (size_t)(colon - p) : slash ? (size_t)(slash - p) : strlen(p);
    if (!n || n >= sizeof c->host)
        return -1;
    memcpy(c->host, p, n);
    c->host[n] = '\0';
    c->port = colon ? atoi(colon + 1) : 6379;
    c->db = slash ? atoi(slash + 1) : 0;
    return c->port > 0 && c->port < 65536 && c->db >= 0 ? 0 : -1;
}

int coord_new(const coord_cfg *cfg, coord **out, char *err, size_t errlen)
{
    coord *c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    if (parse_url(c, cfg->url) != 0) {
        snprintf(err, errlen, "--coord: '%s' is not redis://HOST:PORT[/DB] or unix:///PATH[?db=N]", cfg->url);
        free(c);
        return SL_EINVAL;
    }
    snprintf(c->key, sizeof c->key, "sluice:{%s}", cfg->sink);
    snprintf(c->broker, sizeof c->broker, "%s", cfg->broker);
    snprintf(c->user, sizeof c->user, "%s", cfg->user ? cfg->user : "");
    snprintf(c->password, sizeof c->password, "%s", cfg->password ? cfg->password : "");
    c->reserved_milli = cfg->reserved_milli;
    c->limit_milli = cfg->limit_milli;
    c->ttl_ns = (uint64_t)cfg->ttl_ms * NS_PER_MS;
    c->slices = cfg->slices ? cfg->slices : 1;
    c->backoff_ns = BACKOFF_MIN_NS;
    c->state = ST_CONNECTING;
    *out = c;
    return SL_OK;
}

static void disconnect(coord *c)
{
    if (c->rc)
        redisFree(c->rc);
    c->rc = NULL;
    c->connecting = c->renewing = 0;
    c->nkinds = 0;
}

/* fail drops the connection and schedules the next try; logs once per state. */
static void fail(coord *c, uint64_t now_ns, const char *state, const char *why)
{
    if (c->state != state)
        log_warn("coord", "Redis %s (%s): running on the reserved rate once the grant expires; retrying", state, why);
    c->state = state;
    c->reachable = 0;
    disconnect(c);
    c->next_try_ns = now_ns + c->backoff_ns;
    c->backoff_ns = min_u64(c->backoff_ns * 2, c->ttl_ns / 3);
}

/* send_argv queues a command whose reply is of kind k. Returns 0, or -1
 * (nothing sent) when KINDS replies are already pending: the caller tries
 * again on a later tick, once replies have drained. */
static int send_argv(coord *c, enum kind k, int argc, const char **argv)
{
    if (c->nkinds >= KINDS)
        return -1;
    redisAppendCommandArgv(c->rc, argc, argv, NULL);
    c->kinds[c->nkinds++] = (unsigned char)k;
    c->ops++;
    return 0;
}

static void start(coord *c, uint64_t now_ns)
{
    c->rc = c->path[0] ? redisConnectUnixNonBlock(c->path) : redisConnectNonBlock(c->host, c->port);
    if (!c->rc || c->rc->err) {
        fail(c, now_ns, ST_UNREACHABLE, c->rc ? c->rc->errstr : "out of memory");
        return;
    }
    c->connecting = 1;
    c->conn_since_ns = now_ns;
    if (c->password[0]) {
        const char *a[] = {"AUTH", c->user, c->password};
        if (c->user[0])
            send_argv(c, K_AUTH, 3, a);
        else
            send_argv(c, K_AUTH, 2, (const char *[]){"AUTH", c->password});
    }
    if (c->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", c->db);
        send_argv(c, K_SELECT, 2, (const char *[]){"SELECT", db});
    }
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
    if (send_argv(c, K_RENEW, 12, argv) != 0)
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
}

/* on_reply handles one reply; returns -1 when the connection must go. */
static int on_reply(coord *c, redisReply *r, uint64_t now_ns)
{
    enum kind k = c->nkinds ? (enum kind)c->kinds[0] : K_RENEW;
    if (c->nkinds)
        memmove(c->kinds, c->kinds + 1, --c->nkinds);
    switch (k) {
    case K_AUTH:
    case K_SELECT:
        if (r->type == REDIS_REPLY_ERROR) {
            fail(c, now_ns, k == K_AUTH ? ST_AUTH : ST_UNREACHABLE, r->str);
            return -1;
        }
        return 0;
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

static int io_ready(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    return poll(&p, 1, 0) > 0 ? p.revents : 0;
}

/* pump writes what is queued and reads what has come; -1: connection lost. */
static int pump(coord *c, uint64_t now_ns)
{
    int done = 0;
    if (c->connecting) {
        int ev = io_ready(c->rc->fd, POLLOUT);
        if (!ev) {
            if (now_ns > c->conn_since_ns + c->ttl_ns / 3)
                fail(c, now_ns, ST_UNREACHABLE, "connection timed out");
            return c->rc ? 0 : -1;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(c->rc->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr) {
            fail(c, now_ns, ST_UNREACHABLE, strerror(soerr ? soerr : errno));
            return -1;
        }
        c->connecting = 0;
    }
    if (redisBufferWrite(c->rc, &done) != REDIS_OK) {
        fail(c, now_ns, ST_UNREACHABLE, c->rc->errstr);
        return -1;
    }
    if (c->nkinds && io_ready(c->rc->fd, POLLIN)) {
        if (redisBufferRead(c->rc) != REDIS_OK) {
            fail(c, now_ns, ST_UNREACHABLE, c->rc->errstr);
            return -1;
        }
        void *reply;
        while (c->rc && c->nkinds) {
            if (redisGetReplyFromReader(c->rc, &reply) != REDIS_OK) {
                fail(c, now_ns, ST_UNREACHABLE, c->rc->errstr);
                return -1;
            }
            if (!reply)
                break;
            int rc = on_reply(c, reply, now_ns);
            freeReplyObject(reply);
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

uint64_t coord_tick(coord *c, uint64_t now_ns, uint32_t want)
{
    if (!c->rc && now_ns >= c->next_try_ns)
        start(c, now_ns);
    if (c->rc && !c->renewing && now_ns >= c->next_renew_ns)
        renew(c, now_ns, want);
    if (c->rc && pump(c, now_ns) == 0 && c->rc && c->renewing && now_ns > c->sent_ns + c->ttl_ns / 2)
        fail(c, now_ns, ST_UNREACHABLE, "no answer within TTL/2");
    if (c->held && now_ns >= c->valid_until_ns) {
        log_info("coord", "the grant of %u slices expired: reserved rate only", c->held);
        c->held = 0;
    }
    uint64_t next = c->rc ? (c->renewing ? c->sent_ns + c->ttl_ns / 2 : c->next_renew_ns) : c->next_try_ns;
    if (c->connecting)
        next = min_u64(next, c->conn_since_ns + c->ttl_ns / 3);
    if (c->held)
        next = min_u64(next, c->valid_until_ns);
    return next;
}

uint64_t coord_granted_milli(const coord *c, uint64_t now_ns)
{
    return now_ns < c->valid_until_ns ? (uint64_t)c->held * c->slice_milli : 0;
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
    if (!c || !c->rc)
        return -1;
    if (c->connecting || (c->rc->obuf && c->rc->obuf[0])) {
        *events = POLLOUT;
        return c->rc->fd;
    }
    *events = POLLIN;
    return c->nkinds ? c->rc->fd : -1;
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
    if (!c->rc || c->connecting || c->nkinds >= KINDS - 1) {
        snprintf(err, errlen, "Redis is unreachable: the sink's shared rate cannot be changed now");
        return SL_ESTATE;
    }
    c->limit_milli = limit_milli; /* only once it is on its way to Redis */
    char r[32], l[32];
    snprintf(r, sizeof r, "%llu", (unsigned long long)c->reserved_milli);
    snprintf(l, sizeof l, "%llu", (unsigned long long)limit_milli);
    const char *argv[] = {"EVAL", coord_lua, "1", c->key, "limit", c->broker, r, l};
    send_argv(c, K_LIMIT, 8, argv);
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
        .ops = c->ops,
    };
}

/* release returns this broker's slices at shutdown, waiting at most
 * RELEASE_WAIT_MS for Redis (the loop has ended: nobody waits on it); if
 * Redis does not answer, the slices come back when their TTL runs out. */
static void release(coord *c)
{
    if (!c->rc || c->connecting || !c->reachable)
        return;
    const char *argv[] = {"EVAL", coord_lua, "1", c->key, "release", c->broker};
    if (send_argv(c, K_LIMIT, 6, argv) != 0) /* its reply is read and dropped like a limit's */
        return; /* no room: the slices come back when their TTL runs out */
    for (int i = 0; i < RELEASE_WAIT_MS / 10 && c->nkinds; i++) {
        struct pollfd p = {.fd = c->rc->fd, .events = POLLIN};
        int done = 0;
        if (redisBufferWrite(c->rc, &done) != REDIS_OK || poll(&p, 1, 10) < 0)
            return;
        if (p.revents && (redisBufferRead(c->rc) != REDIS_OK))
            return;
        void *reply = NULL;
        while (c->nkinds && redisGetReplyFromReader(c->rc, &reply) == REDIS_OK && reply) {
            memmove(c->kinds, c->kinds + 1, --c->nkinds);
            freeReplyObject(reply);
        }
    }
}

void coord_destroy(coord **cp)
{
    coord *c = cp ? *cp : NULL;
    if (!c)
        return;
    release(c);
    disconnect(c);
    memset(c->password, 0, sizeof c->password);
    free(c);
    *cp = NULL;
}
