/*
 * repl_link.c - the replication stream's socket: the only zmq_* calls of
 * high availability.
 *
 * A primary binds a ROUTER on --repl-listen and answers the peer it last
 * heard from (its standby says HELLO first, and again after each
 * reconnection, so a standby that comes back under a new routing id is
 * found at once). A standby connects a DEALER to the primary's endpoint, as
 * Redis names it. Messages are one header frame and, for a record, the
 * record's bytes as a second frame; what they mean is broker/ha's business
 * (ha_wire.h), so this file only moves bytes.
 *
 * Sending never blocks: a full queue is SL_EFULL and the stream resends
 * from what the standby acknowledged. Nothing lingers at close. The link
 * has its own ZeroMQ context, so the stream's I/O thread is its own.
 *
 * CURVE. Given the node's secret key (--curve-secret: both nodes of a
 * group hold the same key pair, the one clients know as the broker's), the
 * stream is encrypted and only a node of the group may join it: the
 * primary's ROUTER is a CURVE server with a ZAP handler of its own (zap.c,
 * in this link's context) whose key set is the group's public key and the
 * auth file's replica keys; the standby's DEALER is a CURVE client
 * presenting the group's pair (or its --repl-key), the server's key being
 * the group's public key. A standby with another key is refused at the
 * handshake (logged by the handler) and never sees a record.
 *
 * Costs: one ZeroMQ context and I/O thread per node; a copy of each record
 * into ZeroMQ's message; with CURVE, the ZAP handler's thread on the
 * primary and a box per frame each way.
 */
#include "repl_link.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "grow.h"
#include "log.h"
#include "proto.h"
#include "zap.h"

#define RID_MAX 256

struct repl_link {
    void *ctx, *sock;
    zap *zap; /* a primary's with CURVE: the group's key alone */
    int router;
    unsigned char rid[RID_MAX];
    size_t rid_len;
    unsigned char *body;
    size_t body_cap;
};

/* public_of derives the Z85 public key of a Z85 secret into pub. */
static int public_of(const char *secret, char *pub)
{
    if (!zmq_has("curve") || strlen(secret) != ZAP_KEY_LEN || zmq_curve_public(pub, secret) != 0) {
        log_error("ha", "cannot use the key for the replication stream (a 40-character Z85 secret and a libzmq "
                  "with CURVE are needed)");
        return SL_EINVAL;
    }
    return SL_OK;
}

/* curve makes l's socket a CURVE server (router) or client with the
 * group's key pair, secret in Z85. The server's ZAP handler accepts the
 * group's public key and the n replica keys; the client presents mine (a
 * secret of its own, or NULL: the group's). */
static int curve(repl_link *l, const char *secret, const char *const *replicas, size_t n, const char *mine,
                 int router)
{
    char pub[ZAP_KEY_LEN + 1], my_pub[ZAP_KEY_LEN + 1];
    int one = 1;
    if (public_of(secret, pub) != SL_OK || (mine && public_of(mine, my_pub) != SL_OK))
        return SL_EINVAL;
    if (router) {
        const char **keys = malloc((n + 1) * sizeof *keys);
        int rc = keys ? zap_open(l->ctx, &l->zap) : SL_ENOMEM;
        if (rc == SL_OK) {
            keys[0] = pub;
            for (size_t i = 0; i < n; i++)
                keys[i + 1] = replicas[i];
            rc = zap_set_keys(l->zap, keys, n + 1);
        }
        free(keys);
        if (rc != SL_OK)
            return rc;
        if (zmq_setsockopt(l->sock, ZMQ_CURVE_SERVER, &one, sizeof one) ||
            zmq_setsockopt(l->sock, ZMQ_CURVE_SECRETKEY, secret, ZAP_KEY_LEN) ||
            zmq_setsockopt(l->sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) ||
            zmq_setsockopt(l->sock, ZMQ_ZAP_ENFORCE_DOMAIN, &one, sizeof one))
            goto fail;
        return SL_OK;
    }
    if (zmq_setsockopt(l->sock, ZMQ_CURVE_SERVERKEY, pub, ZAP_KEY_LEN) ||
        zmq_setsockopt(l->sock, ZMQ_CURVE_PUBLICKEY, mine ? my_pub : pub, ZAP_KEY_LEN) ||
        zmq_setsockopt(l->sock, ZMQ_CURVE_SECRETKEY, mine ? mine : secret, ZAP_KEY_LEN))
        goto fail;
    return SL_OK;
fail:
    log_error("ha", "cannot make the replication socket a CURVE %s: %s", router ? "server" : "client",
              zmq_strerror(zmq_errno()));
    return SL_EINVAL;
}

static int open_link(const char *endpoint, const char *secret, const char *const *replicas, size_t n,
                     const char *mine, int router, repl_link **out)
{
    repl_link *l = calloc(1, sizeof *l);
    if (!l)
        return SL_ENOMEM;
    l->router = router;
    l->ctx = zmq_ctx_new();
    l->sock = l->ctx ? zmq_socket(l->ctx, router ? ZMQ_ROUTER : ZMQ_DEALER) : NULL;
    if (!l->sock) {
        log_error("ha", "cannot make the replication socket: %s", zmq_strerror(zmq_errno()));
        repl_link_close(&l);
        return SL_EIO;
    }
    int zero = 0, one = 1, ivl = 100, hwm = 100000, hb = 1000, hbttl = 3000;
    zmq_setsockopt(l->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(l->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(l->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(l->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(l->sock, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
    zmq_setsockopt(l->sock, ZMQ_HEARTBEAT_TIMEOUT, &hbttl, sizeof hbttl);
    if (router)
        zmq_setsockopt(l->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    int rc = secret ? curve(l, secret, replicas, n, mine, router) : SL_OK;
    if (rc != SL_OK) {
        repl_link_close(&l);
        return rc;
    }
    rc = router ? zmq_bind(l->sock, endpoint) : zmq_connect(l->sock, endpoint);
    if (rc != 0) {
        log_error("ha", "cannot %s the replication endpoint %s: %s", router ? "bind" : "connect to", endpoint,
                  zmq_strerror(zmq_errno()));
        repl_link_close(&l);
        return SL_EINVAL;
    }
    *out = l;
    return SL_OK;
}

int repl_link_bind(const char *endpoint, const char *secret, const char *const *replicas, size_t n,
                   repl_link **out)
{
    return open_link(endpoint, secret, replicas, n, NULL, 1, out);
}

int repl_link_connect(const char *endpoint, const char *secret, const char *mine, repl_link **out)
{
    return open_link(endpoint, secret, NULL, 0, mine, 0, out);
}

void repl_link_close(repl_link **lp)
{
    repl_link *l = lp ? *lp : NULL;
    if (!l)
        return;
    if (l->sock)
        zmq_close(l->sock);
    zap_close(&l->zap); /* before the context ends: its socket is the context's */
    if (l->ctx)
        zmq_ctx_term(l->ctx);
    free(l->body);
    free(l);
    *lp = NULL;
}

int repl_link_send(repl_link *l, const void *hdr, size_t hlen, const void *body, size_t blen)
{
    if (l->router) {
        if (!l->rid_len)
            return SL_ECONNECT;
        if (zmq_send(l->sock, l->rid, l->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
            return zmq_errno() == EAGAIN ? SL_EFULL : SL_ECONNECT;
    }
    if (zmq_send(l->sock, hdr, hlen, (blen ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0)
        return zmq_errno() == EAGAIN ? SL_EFULL : SL_ECONNECT;
    if (blen && zmq_send(l->sock, body, blen, ZMQ_DONTWAIT) < 0)
        return SL_ECONNECT; /* (a multipart message goes whole once its first frame went) */
    return SL_OK;
}

/* more tells whether the message being read has another frame. */
static int more(void *sock)
{
    int m = 0;
    size_t len = sizeof m;
    zmq_getsockopt(sock, ZMQ_RCVMORE, &m, &len);
    return m;
}

/* drain drops the rest of a message. */
static void drain(void *sock)
{
    while (more(sock)) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        zmq_msg_recv(&m, sock, ZMQ_DONTWAIT);
        zmq_msg_close(&m);
    }
}

int repl_link_recv(repl_link *l, unsigned char *hdr, size_t cap, size_t *hlen, const unsigned char **body,
                   size_t *blen)
{
    zmq_msg_t m;
    *blen = 0;
    *body = NULL;
    for (int part = 0;; part++) {
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, l->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            if (part == 0 && (zmq_errno() == EAGAIN || zmq_errno() == EINTR))
                return 0;
            log_error("ha", "cannot read the replication socket: %s", zmq_strerror(zmq_errno()));
            return -1;
        }
        size_t n = zmq_msg_size(&m);
        const void *p = zmq_msg_data(&m);
        int more_after = more(l->sock);
        if (l->router && part == 0) {
            if (n <= RID_MAX) {
                memcpy(l->rid, p, n);
                l->rid_len = n;
            }
            zmq_msg_close(&m);
            if (!more_after)
                return 0;
            continue;
        }
        int idx = part - (l->router ? 1 : 0);
        if (idx == 0) {
            *hlen = n < cap ? n : cap;
            memcpy(hdr, p, *hlen);
        } else {
            unsigned char *b = grow_array(l->body, &l->body_cap, n ? n : 1, 1, 16384);
            if (!b) {
                zmq_msg_close(&m);
                drain(l->sock);
                log_error("ha", "out of memory reading a %zu-byte record", n);
                return -1;
            }
            l->body = b;
            memcpy(b, p, n);
            *body = b;
            *blen = n;
        }
        zmq_msg_close(&m);
        if (!more_after || idx >= 1) {
            if (more_after)
                drain(l->sock);
            return 1;
        }
    }
}

int repl_link_fd(repl_link *l, int *ready)
{
    int fd = -1, events = 0;
    size_t fl = sizeof fd, el = sizeof events;
    if (zmq_getsockopt(l->sock, ZMQ_FD, &fd, &fl) != 0 || zmq_getsockopt(l->sock, ZMQ_EVENTS, &events, &el) != 0)
        return -1;
    *ready = (events & ZMQ_POLLIN) != 0;
    return fd;
}
