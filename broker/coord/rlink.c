/*
 * rlink.c - one connection to Redis, driven by hand on the loop's poll.
 *
 * Owns: the hiredis 0.14 context, a non-blocking socket (redisBufferWrite
 * when it may write, redisBufferRead when it may read: nothing here ever
 * blocks but rlink_flush_wait, at shutdown), the AUTH and SELECT sent first
 * on each connection, the queue of what each pending reply answers (replies
 * come in the order commands went), and the retry with backoff from 100 ms
 * up to the owner's connect timeout. The owner (coord.c, ha_lease.c) says
 * what each reply means and what a failure does to its state.
 *
 * Costs: nothing between commands; I/O only while a reply is pending.
 */
#include "rlink.h"

#include <errno.h>
#include <hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"
#include "units.h"

#define KINDS 8
#define BACKOFF_MIN_NS (100 * NS_PER_MS)
#define K_AUTH (-1)
#define K_SELECT (-2)

struct rlink {
    char host[256], path[512], user[128], password[512];
    int port, db;
    uint64_t timeout_ns;
    rlink_reply_fn on_reply;
    rlink_fail_fn on_fail;
    void *ctx;
    redisContext *rc;
    int connecting;
    uint64_t conn_since_ns, next_try_ns, backoff_ns;
    int kinds[KINDS];
    unsigned nkinds;
    uint64_t ops;
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* parse_url reads redis://HOST:PORT[/DB] or unix:///PATH[?db=N]. */
static int parse_url(rlink *c, const char *url)
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

int rlink_new(const rlink_cfg *cfg, rlink **out)
{
    rlink *l = calloc(1, sizeof *l);
    if (!l)
        return SL_ENOMEM;
    if (parse_url(l, cfg->url) != 0) {
        free(l);
        return SL_EINVAL;
    }
    snprintf(l->user, sizeof l->user, "%s", cfg->user ? cfg->user : "");
    snprintf(l->password, sizeof l->password, "%s", cfg->password ? cfg->password : "");
    l->timeout_ns = cfg->connect_timeout_ns;
    l->on_reply = cfg->on_reply;
    l->on_fail = cfg->on_fail;
    l->ctx = cfg->ctx;
    l->backoff_ns = BACKOFF_MIN_NS;
    *out = l;
    return SL_OK;
}

static void disconnect(rlink *l)
{
    if (l->rc)
        redisFree(l->rc);
    l->rc = NULL;
    l->connecting = 0;
    l->nkinds = 0;
}

static void fail(rlink *l, uint64_t now_ns, rlink_fail what, const char *why)
{
    if (l->on_fail)
        l->on_fail(l->ctx, now_ns, what, why);
    disconnect(l);
    l->next_try_ns = now_ns + l->backoff_ns;
    l->backoff_ns = min_u64(l->backoff_ns * 2, l->timeout_ns);
}

void rlink_drop(rlink *l, uint64_t now_ns, const char *why)
{
    fail(l, now_ns, RLINK_UNREACHABLE, why);
}

void rlink_connected_ok(rlink *l)
{
    l->backoff_ns = BACKOFF_MIN_NS;
}

static int send_kind(rlink *l, int kind, int argc, const char **argv)
{
    if (!l->rc || l->nkinds >= KINDS)
        return -1;
    redisAppendCommandArgv(l->rc, argc, argv, NULL);
    l->kinds[l->nkinds++] = kind;
    l->ops++;
    return 0;
}

int rlink_send(rlink *l, int kind, int argc, const char **argv)
{
    return send_kind(l, kind, argc, argv);
}

static void start(rlink *l, uint64_t now_ns)
{
    l->rc = l->path[0] ? redisConnectUnixNonBlock(l->path) : redisConnectNonBlock(l->host, l->port);
    if (!l->rc || l->rc->err) {
        fail(l, now_ns, RLINK_UNREACHABLE, l->rc ? l->rc->errstr : "out of memory");
        return;
    }
    l->connecting = 1;
    l->conn_since_ns = now_ns;
    if (l->password[0]) {
        if (l->user[0])
            send_kind(l, K_AUTH, 3, (const char *[]){"AUTH", l->user, l->password});
        else
            send_kind(l, K_AUTH, 2, (const char *[]){"AUTH", l->password});
    }
    if (l->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", l->db);
        send_kind(l, K_SELECT, 2, (const char *[]){"SELECT", db});
    }
}

/* on_reply handles one reply; -1: the connection must go (already dropped). */
static int on_reply(rlink *l, redisReply *r, uint64_t now_ns)
{
    int k = l->nkinds ? l->kinds[0] : 0;
    if (l->nkinds)
        memmove(l->kinds, l->kinds + 1, --l->nkinds * sizeof l->kinds[0]);
    if (k == K_AUTH || k == K_SELECT) {
        if (r->type == REDIS_REPLY_ERROR) {
            fail(l, now_ns, k == K_AUTH ? RLINK_AUTH : RLINK_UNREACHABLE, r->str);
            return -1;
        }
        return 0;
    }
    return l->on_reply(l->ctx, k, r, now_ns);
}

static int io_ready(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    return poll(&p, 1, 0) > 0 ? p.revents : 0;
}

/* pump writes what is queued and reads what has come; -1: connection lost. */
static int pump(rlink *l, uint64_t now_ns)
{
    int done = 0;
    if (l->connecting) {
        if (!io_ready(l->rc->fd, POLLOUT)) {
            if (now_ns > l->conn_since_ns + l->timeout_ns)
                fail(l, now_ns, RLINK_UNREACHABLE, "connection timed out");
            return l->rc ? 0 : -1;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(l->rc->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr) {
            fail(l, now_ns, RLINK_UNREACHABLE, strerror(soerr ? soerr : errno));
            return -1;
        }
        l->connecting = 0;
    }
    if (redisBufferWrite(l->rc, &done) != REDIS_OK) {
        fail(l, now_ns, RLINK_UNREACHABLE, l->rc->errstr);
        return -1;
    }
    if (l->nkinds && io_ready(l->rc->fd, POLLIN)) {
        if (redisBufferRead(l->rc) != REDIS_OK) {
            fail(l, now_ns, RLINK_UNREACHABLE, l->rc->errstr);
            return -1;
        }
        void *reply;
        while (l->rc && l->nkinds) {
            if (redisGetReplyFromReader(l->rc, &reply) != REDIS_OK) {
                fail(l, now_ns, RLINK_UNREACHABLE, l->rc->errstr);
                return -1;
            }
            if (!reply)
                break;
            int rc = on_reply(l, reply, now_ns);
            freeReplyObject(reply);
            if (rc != 0) {
                if (l->rc)
                    fail(l, now_ns, RLINK_UNREACHABLE, "dropped by its owner");
                return -1;
            }
        }
    }
    return 0;
}

void rlink_tick(rlink *l, uint64_t now_ns)
{
    if (!l->rc && now_ns >= l->next_try_ns)
        start(l, now_ns);
    if (l->rc)
        pump(l, now_ns);
}

int rlink_up(const rlink *l)
{
    return l->rc != NULL;
}

int rlink_ready(const rlink *l)
{
    return l->rc && !l->connecting;
}

unsigned rlink_pending(const rlink *l)
{
    return l->nkinds;
}

uint64_t rlink_next_wake(const rlink *l)
{
    if (!l->rc)
        return l->next_try_ns;
    return l->connecting ? l->conn_since_ns + l->timeout_ns : UINT64_MAX;
}

int rlink_pollfd(const rlink *l, short *events)
{
    if (!l || !l->rc)
        return -1;
    if (l->connecting || (l->rc->obuf && l->rc->obuf[0])) {
        *events = POLLOUT;
        return l->rc->fd;
    }
    *events = POLLIN;
    return l->nkinds ? l->rc->fd : -1;
}

void rlink_flush_wait(rlink *l, int wait_ms, uint64_t now_ns)
{
    if (!l->rc || l->connecting)
        return;
    for (int i = 0; i < wait_ms / 10 && l->rc && l->nkinds; i++) {
        struct pollfd p = {.fd = l->rc->fd, .events = POLLIN};
        int done = 0;
        if (redisBufferWrite(l->rc, &done) != REDIS_OK || poll(&p, 1, 10) < 0)
            return;
        if (p.revents && (redisBufferRead(l->rc) != REDIS_OK))
            return;
        void *reply = NULL;
        while (l->rc && l->nkinds && redisGetReplyFromReader(l->rc, &reply) == REDIS_OK && reply) {
            on_reply(l, reply, now_ns);
            freeReplyObject(reply);
            reply = NULL;
        }
    }
}

uint64_t rlink_ops(const rlink *l)
{
    return l->ops;
}

void rlink_destroy(rlink **lp)
{
    rlink *l = lp ? *lp : NULL;
    if (!l)
        return;
    disconnect(l);
    memset(l->password, 0, sizeof l->password);
    free(l);
    *lp = NULL;
}
