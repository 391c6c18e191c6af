/*
 * net.c - ROUTER sockets and receiving.
 *
 * With a CURVE secret every socket is a CURVE server with ZAP domain
 * enforcement, and the ZAP handler (zap.c) is started in the context before
 * any socket binds; each received message carries the User-Id that handler
 * gave its connection (net_in.user_id).
 *
 * Receiving keeps the two zmq_msg_t of the last message alive until the next
 * call, so handlers read the body in place (the decoder points into it).
 *
 * Sending, the queues replies wait in, and the runs of confirmations are
 * replies.c's; the object both share is in net_int.h.
 */
#include "net_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "endpoint.h"
#include "log.h"
#include "peers.h"


/* sl_from_zmq maps a zmq_errno() from setting up the socket to the error
 * list: an endpoint that is malformed, names an unknown transport or a
 * missing interface is SL_EINVAL; one in use is SL_ESTATE (the machine's
 * state, not the request, is at fault); exhausted memory, descriptors or
 * sockets are SL_ENOMEM; anything else SL_EIO. */
static int sl_from_zmq(int e)
{
    switch (e) {
    case EINVAL: case EPROTONOSUPPORT: case ENODEV: case EADDRNOTAVAIL: case ENOCOMPATPROTO:
        return SL_EINVAL;
    case EADDRINUSE:
        return SL_ESTATE;
    case ENOMEM: case EMFILE: case ENFILE: case ENOBUFS:
        return SL_ENOMEM;
    default:
        return SL_EIO;
    }
}

/* curve_setup makes sock a CURVE server in ZAP_DOMAIN with domain
 * enforcement (the ZAP handler already runs); anything missing fails
 * closed. */
static int curve_setup(void *sock, const char *secret)
{
    int one = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, secret, strlen(secret)) ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) ||
        zmq_setsockopt(sock, ZMQ_ZAP_ENFORCE_DOMAIN, &one, sizeof one)) {
        log_error("net", "cannot make the socket a CURVE server with ZAP domain enforcement: %s; refusing to start",
                  zmq_strerror(zmq_errno()));
        return SL_EINVAL;
    }
    return SL_OK;
}

/* sock_open makes a ROUTER socket with the broker's options (CURVE when
 * cfg has a secret) and binds it to endpoint; *out is NULL on error. */
static int sock_open(net *n, const net_cfg *cfg, const char *endpoint, void **out)
{
    int one = 1, hwm = 100000, linger = 1000, rc;
    int64_t maxmsg = (int64_t)cfg->max_body_bytes + 64 * 1024;
    int hb = cfg->heartbeat_ms, hb_timeout = 3 * cfg->heartbeat_ms;
    void *sock = *out = zmq_socket(n->ctx, ZMQ_ROUTER);
    if (!sock) {
        int e = zmq_errno();
        log_error("net", "cannot create the socket: %s", zmq_strerror(e));
        return sl_from_zmq(e);
    }
    if (zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one) ||
        zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
        zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout, sizeof hb_timeout) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_TTL, &hb_timeout, sizeof hb_timeout)) {
        int e = zmq_errno();
        log_error("net", "cannot configure the socket: %s", zmq_strerror(e));
        rc = sl_from_zmq(e);
        goto sock_close;
    }
    if (cfg->curve_secret && (rc = curve_setup(sock, cfg->curve_secret)) != SL_OK)
        goto sock_close;
    if ((rc = endpoint_claim(endpoint)) != SL_OK)
        goto sock_close;
    if (zmq_bind(sock, endpoint) != 0) {
        int e = zmq_errno();
        log_error("net", "cannot listen on %s: %s", endpoint, zmq_strerror(e));
        rc = sl_from_zmq(e);
        goto sock_close;
    }
    if (n->zap) /* handshakes refused before ZAP is asked count too (logged if not) */
        zap_watch(n->zap, n->ctx, sock);
    return SL_OK;

sock_close:
    zmq_close(sock);
    *out = NULL;
    return rc;
}

/* bridge_sock_open binds the HTTP server's socket: a ROUTER on inproc, no
 * CURVE (nothing outside this process reaches it), no heartbeats. */
static int bridge_sock_open(net *n)
{
    int one = 1, hwm = 100000, linger = 0;
    void *sock = n->sock[NET_HTTP] = zmq_socket(n->ctx, ZMQ_ROUTER);
    if (sock && !zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one) &&
        !zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm) && !zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm) &&
        !zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger) && !zmq_bind(sock, NET_BRIDGE_ENDPOINT))
        return SL_OK;
    int e = zmq_errno();
    log_error("net", "cannot open the HTTP server's bridge (%s): %s", NET_BRIDGE_ENDPOINT, zmq_strerror(e));
    if (sock)
        zmq_close(sock);
    n->sock[NET_HTTP] = NULL;
    return sl_from_zmq(e);
}

int net_open(const net_cfg *cfg, net **out)
{
    int rc = SL_ENOMEM;
    net *n = calloc(1, sizeof *n);
    if (!n)
        return SL_ENOMEM;
    n->ctx = zmq_ctx_new();
    if (!n->ctx) {
        int e = zmq_errno();
        log_error("net", "cannot create a ZeroMQ context: %s", zmq_strerror(e));
        rc = sl_from_zmq(e);
        goto fail;
    }
    if (cfg->curve_secret) { /* the ZAP handler first: no handshake may pass without it */
        if (!zmq_has("curve")) {
            log_error("net", "this libzmq was built without CURVE: refusing to start with --curve-secret");
            rc = SL_EINVAL;
            goto ctx_term;
        }
        if ((rc = zap_open(n->ctx, &n->zap)) != SL_OK)
            goto ctx_term;
    }
    if ((rc = sock_open(n, cfg, cfg->endpoint, &n->sock[NET_MAIN])) != SL_OK)
        goto zap_stop;
    if (cfg->admin_endpoint && (rc = sock_open(n, cfg, cfg->admin_endpoint, &n->sock[NET_ADMIN])) != SL_OK)
        goto main_close;
    if (cfg->http_bridge && (rc = bridge_sock_open(n)) != SL_OK)
        goto admin_close;
    if (cfg->stream_endpoint &&
        (rc = stream_open(cfg->stream_endpoint, cfg->max_body_bytes + 64 * 1024, &n->stream)) != SL_OK)
        goto http_close;
    zmq_msg_init(&n->rid);
    zmq_msg_init(&n->body);
    n->have_msgs = 1;
    for (int i = 0; i < NET_WHENS; i++) /* distinct, and none 0: a run_peer's gen before it holds a run */
        n->q[i].gen = ++n->gen_next;
    *out = n;
    return SL_OK;

http_close:
    if (n->sock[NET_HTTP])
        zmq_close(n->sock[NET_HTTP]);
admin_close:
    if (n->sock[NET_ADMIN])
        zmq_close(n->sock[NET_ADMIN]);
main_close:
    zmq_close(n->sock[NET_MAIN]);
zap_stop:
    zap_close(&n->zap);
ctx_term:
    zmq_ctx_term(n->ctx);
fail:
    free(n);
    return rc;
}

void net_close(net **np)
{
    net *n = np ? *np : NULL;
    if (!n)
        return;
    if (n->have_msgs) {
        zmq_msg_close(&n->rid);
        zmq_msg_close(&n->body);
    }
    for (int i = 0; i < NET_SOCKETS; i++)
        if (n->sock[i])
            zmq_close(n->sock[i]);
    zap_close(&n->zap);
    zmq_ctx_term(n->ctx);
    stream_close(&n->stream);
    net_replies_free(n);
    free(n);
    *np = NULL;
}

void *net_context(net *n)
{
    return n->ctx;
}

struct zap *net_zap(net *n)
{
    return n->zap;
}

void *net_socket(net *n, net_sock which)
{
    return n->sock[which];
}

int net_stream_pollfd(net *n, int *ready)
{
    *ready = 0;
    return n->stream ? stream_pollfd(n->stream, ready) : -1;
}

/* stream_take receives one message of the stream endpoint into in. */
static int stream_take(net *n, net_in *in)
{
    uint64_t id;
    int fd;
    const void *body;
    size_t len;
    if (!n->stream || !stream_recv(n->stream, &id, &fd, &body, &len))
        return 0;
    for (int i = 7; i >= 0; i--, id >>= 8)
        n->stream_rid[i] = (uint8_t)id;
    *in = (net_in){.rid = n->stream_rid, .rid_len = sizeof n->stream_rid, .body = body, .body_len = len,
                   .frames = 1, .sock = NET_STREAM, .fd = fd};
    return 1;
}

/* recv_from receives a routing id from socket which: 1, 0 when nothing
 * waits, -1 on a transport error (logged). */
static int recv_from(net *n, net_sock which)
{
    if (zmq_msg_recv(&n->rid, n->sock[which], ZMQ_DONTWAIT) >= 0)
        return 1;
    int e = zmq_errno();
    if (e == EAGAIN || e == EINTR)
        return 0;
    log_error("net", "receive failed: %s", zmq_strerror(e));
    return -1;
}

/* bridge_uid reads the User-Id frame that leads a bridge message into
 * n->bridge_uid. Returns 1 when a body frame follows, 0 when not, -1 on a
 * transport error. */
static int bridge_uid(net *n, void *sock)
{
    zmq_msg_t uid;
    zmq_msg_init(&uid);
    if (zmq_msg_recv(&uid, sock, ZMQ_DONTWAIT) < 0) {
        log_error("net", "receive of a bridge message's User-Id failed: %s", zmq_strerror(zmq_errno()));
        zmq_msg_close(&uid);
        return -1;
    }
    size_t len = zmq_msg_size(&uid);
    if (len >= sizeof n->bridge_uid)
        len = 0; /* no key is this long: none */
    memcpy(n->bridge_uid, zmq_msg_data(&uid), len);
    n->bridge_uid[len] = '\0';
    int more = zmq_msg_more(&uid);
    zmq_msg_close(&uid);
    return more;
}

int net_recv(net *n, net_in *in)
{
    net_sock which = NET_MAIN;
    int got = 0;
    /* take turns, so that no endpoint keeps the others waiting */
    for (int k = 0; k < NET_SOCKETS && got == 0; k++) {
        which = (net_sock)((n->next_sock + k) % NET_SOCKETS);
        if (which == NET_STREAM && stream_take(n, in)) {
            n->next_sock = (n->next_sock + 1) % NET_SOCKETS;
            return 1;
        }
        if (n->sock[which])
            got = recv_from(n, which);
    }
    n->next_sock = (n->next_sock + 1) % NET_SOCKETS;
    if (got <= 0)
        return got;
    memset(in, 0, sizeof *in);
    in->sock = which;
    in->rid = zmq_msg_data(&n->rid);
    in->rid_len = zmq_msg_size(&n->rid);
    int more = zmq_msg_more(&n->rid);
    n->bridge_uid[0] = '\0';
    if (which == NET_HTTP && more && (more = bridge_uid(n, n->sock[which])) < 0)
        return -1;
    /* Read every remaining frame; keep the first as the body. A ROUTER hands
     * over whole messages, so these never block. */
    while (more) {
        zmq_msg_t *dst = in->frames == 0 ? &n->body : NULL;
        zmq_msg_t extra;
        if (!dst) {
            zmq_msg_init(&extra);
            dst = &extra;
        }
        if (zmq_msg_recv(dst, n->sock[which], ZMQ_DONTWAIT) < 0) {
            log_error("net", "receive of a message part failed: %s", zmq_strerror(zmq_errno()));
            if (dst == &extra)
                zmq_msg_close(&extra);
            return -1;
        }
        in->frames++;
        more = zmq_msg_more(dst);
        if (dst == &extra)
            zmq_msg_close(&extra);
    }
    if (in->frames >= 1) {
        in->body = zmq_msg_data(&n->body);
        in->body_len = zmq_msg_size(&n->body);
        /* Only the ZAP handler's User-Id: libzmq lets it win over a peer's
         * metadata. Read from the body: a ROUTER's routing-id frame lacks
         * the metadata when ZMQ_EVENTS prefetched the message (libzmq 4.3). */
        in->user_id = zmq_msg_gets(&n->body, "User-Id");
        in->user_id_len = in->user_id ? strlen(in->user_id) : 0;
        in->fd = zmq_msg_get(&n->body, ZMQ_SRCFD); /* deprecated, present in 4.3: for revocation (peers.c) */
        if (which == NET_HTTP) { /* the session's principal, as the server sent it; no descriptor of its own */
            in->user_id = n->bridge_uid[0] ? n->bridge_uid : NULL;
            in->user_id_len = strlen(n->bridge_uid);
            in->fd = -1;
        }
    } else {
        in->fd = -1;
    }
    return 1;
}

