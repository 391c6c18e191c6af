/*
 * wire_open.c - wire_open: an sl_client's sockets, set up and connected.
 *
 * The DEALER that talks to the broker and the PAIR that receives the
 * DEALER's monitor events, in the process's one ZeroMQ context (zctx.c).
 * The monitor is connected before the DEALER, so that it sees the first
 * handshake; connecting is asynchronous, so an unreachable broker is not an
 * error here but the pump's business (wire.c). Socket options: frames up to
 * PROTO_MAX_FRAME, high-water marks far above any window a client keeps,
 * ZeroMQ's heartbeats every heartbeat_ms with three missed ones ending the
 * connection, a linger that lets a final ACK leave on sl_close, and CURVE
 * when the caller gives keys. A stream+ endpoint gets none of these: its
 * plain socket is cstream.c's, connected at the first send. Costs: once
 * per client.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cstream.h"
#include "failover.h"
#include "wire.h"
#include "zctx.h"

#define LINGER_MS            1000     /* lets a final ACK leave on sl_close */
#define HWM_MSGS             100000
#define MAX_HEARTBEAT_TTL_MS 6553599  /* ZMQ_HEARTBEAT_TTL's ceiling */
#define MONITOR_PREFIX       "inproc://sluice-monitor-"

static int socket_setup(void *sock, int timeout_ms, int heartbeat_ms)
{
    int linger_ms = LINGER_MS, hwm = HWM_MSGS;
    int64_t ttl = 3 * (int64_t)heartbeat_ms;
    int hb_timeout_ms = ttl > INT_MAX ? INT_MAX : (int)ttl;
    int hb_ttl_ms = ttl > MAX_HEARTBEAT_TTL_MS ? MAX_HEARTBEAT_TTL_MS : (int)ttl;
    int64_t max_frame_bytes = PROTO_MAX_FRAME;
    if (zmq_setsockopt(sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms) ||
        zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max_frame_bytes, sizeof max_frame_bytes) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_IVL, &heartbeat_ms, sizeof heartbeat_ms) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout_ms, sizeof hb_timeout_ms) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_TTL, &hb_ttl_ms, sizeof hb_ttl_ms))
        return SL_EINVAL;
    return SL_OK;
}

/* curve_setup makes sock a CURVE client when o names keys: all three or
 * none, each 40 Z85 characters. */
static int curve_setup(void *sock, const sl_options *o)
{
    if (!o || (!o->server_key && !o->public_key && !o->secret_key))
        return SL_OK;
    if (!o->server_key || !o->public_key || !o->secret_key || strlen(o->server_key) != 40 ||
        strlen(o->public_key) != 40 || strlen(o->secret_key) != 40 || !zmq_has("curve"))
        return SL_EINVAL;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, o->server_key, 40) ||
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, o->public_key, 40) ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, o->secret_key, 40))
        return SL_EINVAL;
    return SL_OK;
}

int wire_open(sl_client *c, const char *endpoint, int timeout_ms, int heartbeat_ms, const sl_options *keys)
{
    c->timeout_ms = timeout_ms;
    c->next_seq = 1;
    fifo_init(&c->puts, sizeof(pending_put));
    fifo_init(&c->confirms, sizeof(client_confirm));
    fifo_init(&c->deliveries, sizeof(sl_delivery *));
    fifo_init(&c->settles, sizeof(uint64_t));
    zmq_msg_init(&c->frame);
    if (cstream_is(endpoint)) { /* a plain socket (cstream.c): no alternatives, no CURVE */
        if (strchr(endpoint, '|') || (keys && (keys->server_key || keys->public_key || keys->secret_key)))
            return SL_EINVAL;
        return cstream_open(c, endpoint);
    }

    int mon_linger_ms = 0;
    uint64_t monitor = 0;
    char mon_endpoint[64];
    if (!(c->ctx = zctx_take(&monitor)) || !(c->sock = zmq_socket(c->ctx, ZMQ_DEALER)))
        return SL_ENOMEM;
    snprintf(mon_endpoint, sizeof mon_endpoint, MONITOR_PREFIX "%" PRIu64, monitor);
    const char *first = endpoint; /* "a|b": one broker at alternative addresses (failover.c) */
    int rc = failover_open(c, endpoint, &first);
    if (rc)
        return rc;
    endpoint = first;
    rc = socket_setup(c->sock, timeout_ms, heartbeat_ms);
    if (!rc)
        rc = curve_setup(c->sock, keys);
    if (rc)
        return rc;
    /* the monitor is in place before connecting, so it sees the first handshake */
    if (zmq_socket_monitor(c->sock, mon_endpoint,
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_CONNECT_RETRIED |
                               ZMQ_EVENT_CONNECTED) ||
        !(c->mon = zmq_socket(c->ctx, ZMQ_PAIR)) ||
        zmq_setsockopt(c->mon, ZMQ_LINGER, &mon_linger_ms, sizeof mon_linger_ms) ||
        zmq_connect(c->mon, mon_endpoint))
        return SL_ENOMEM;
    if (zmq_connect(c->sock, endpoint))
        return errno == ENOMEM || errno == EMTHREAD ? SL_ENOMEM : SL_EINVAL;
    return SL_OK;
}
