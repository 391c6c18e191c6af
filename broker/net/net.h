/*
 * net.h - the broker's transport: the only zmq_send/zmq_recv.
 *
 * One ROUTER socket per endpoint: the main one, and the admin one when
 * --admin-listen names it (net_recv takes turns between them). Incoming messages are [routing id, body];
 * anything else is reported as a framing error. Outgoing messages are encoded
 * straight into one of three queues: NET_NOW (sent before the pass's commit),
 * NET_AFTER_COMMIT (sent only after it succeeded): that is how "confirm
 * only after the commit" is enforced for every confirmation at once; and
 * NET_AFTER_NEXT_COMMIT, for a reply to a request taken while a commit was
 * out whose write joins the commit after it (net_promote moves them up once
 * the commit that was out has ended). ZMQ_ROUTER_MANDATORY is on, so a message for a peer that is
 * gone, or whose queue is full, is reported to the caller instead of being
 * dropped silently.
 */
#ifndef SLUICE_NET_H
#define SLUICE_NET_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

typedef struct net net;

typedef enum net_when { NET_NOW = 0, NET_AFTER_COMMIT = 1, NET_AFTER_NEXT_COMMIT = 2, NET_WHENS = 3 } net_when;

/* The endpoints: the main one, the optional admin one (--admin-listen),
 * the HTTP server's bridge (an inproc:// socket only this process can
 * reach; bridge.h), and the optional stream endpoint (--stream-listen:
 * plain sockets, no ZeroMQ; stream.h). */
typedef enum net_sock { NET_MAIN = 0, NET_ADMIN = 1, NET_HTTP = 2, NET_STREAM = 3, NET_SOCKETS = 4 } net_sock;

/* Where the bridge's socket listens: inproc, in net's own ZeroMQ context. */
#define NET_BRIDGE_ENDPOINT "inproc://sluice-http"

typedef struct net_cfg {
    const char *endpoint;
    size_t max_body_bytes; /* ZMQ_MAXMSGSIZE = max_body_bytes + 64 KiB */
    int heartbeat_ms;      /* ZMTP heartbeats */
    const char *curve_secret; /* the broker's CURVE secret key (Z85), or NULL: plaintext */
    const char *admin_endpoint; /* a second endpoint, for admin commands, or NULL */
    int http_bridge;       /* bind NET_BRIDGE_ENDPOINT for the HTTP server's requests */
    const char *stream_endpoint; /* --stream-listen, or NULL */
} net_cfg;

/* One received message; pointers valid until the next net_recv. A message
 * of the bridge (NET_HTTP) is [routing id][User-Id][body] on the wire: the
 * User-Id frame is the session's principal's key (empty: none), trusted as
 * the ZAP handler's is, since only this process can reach the socket. */
typedef struct net_in {
    const uint8_t *rid;
    size_t rid_len;
    const void *body;
    size_t body_len;
    unsigned frames;       /* frames after the routing id; 1 when well formed */
    net_sock sock;         /* the endpoint it came in on */
    const char *user_id;   /* the connection's User-Id (set by the ZAP handler), or NULL */
    size_t user_id_len;
    int fd;                /* the descriptor it was read from (ZMQ_SRCFD), or -1 */
} net_in;

/* Called by net_flush for each message to a peer of the main or the
 * stream endpoint (sock) that could not be sent: err is SL_ECONNECT (the
 * peer is gone), SL_EFULL (its queue is full) or SL_ESTALE
 * (net_queue_guarded: the connection it was for is gone, whoever holds its
 * routing id now). token is what net_queue was given (0 for plain replies). */
typedef void (*net_fail_fn)(void *ctx, unsigned sock, const uint8_t *rid, size_t rid_len, uint64_t token, int err);

/* net_open creates the context and socket and binds (failures logged).
 * Returns SL_OK; SL_EINVAL for a malformed endpoint, an unknown transport or
 * a missing interface; SL_ESTATE when the endpoint is in use; SL_ENOMEM when
 * memory, descriptors or sockets run out; SL_EIO otherwise. */
int net_open(const net_cfg *cfg, net **out);

/* With cfg->curve_secret, net_open makes the socket a CURVE server and
 * starts the ZAP handler (zap.h) in its context before binding, with ZAP
 * domain enforcement on, so that no handshake completes without the
 * handler's yes; SL_EINVAL (logged) when libzmq lacks CURVE or domain
 * enforcement: the broker fails closed rather than serve in plaintext. */

/* net_context returns n's ZeroMQ context, for the bridge (bridge.c) to
 * connect its socket in. */
void *net_context(net *n);

/* net_zap returns the ZAP handler, or NULL when CURVE is off. */
struct zap *net_zap(net *n);

/* net_close closes with a short linger so that queued replies leave. */
void net_close(net **n);

/* net_socket returns endpoint which's socket, for polling (loop.c only), or
 * NULL when that endpoint is not open or is not a ZeroMQ socket. */
void *net_socket(net *n, net_sock which);

/* net_stream_pollfd returns the stream endpoint's descriptor to poll for
 * input, or -1 when there is none; *ready is set when a message is already
 * buffered (the caller must not sleep). */
int net_stream_pollfd(net *n, int *ready);

/* net_recv receives one message without blocking. Returns 1 with *in set, 0
 * when nothing is waiting, or -1 on a transport error (logged). */
int net_recv(net *n, net_in *in);

/* net_queue encodes m for peer rid and queues it in queue `when` until
 * net_flush. token marks a delivery (0 otherwise). Returns SL_OK, SL_EINVAL
 * (m is not valid: a bug, logged), SL_ENOMEM. */
int net_queue(net *n, const uint8_t *rid, size_t rid_len, const proto_msg *m, uint64_t token, net_when when);

/* net_queue_guarded is net_queue_via for a message to one connection: the
 * one that came in on endpoint sock's descriptor fd, a socket of inode ino. A routing id names
 * whichever connection holds it when the message leaves, and once a
 * connection is gone another may take its routing id (a peer may choose
 * its own); so at net_flush the message leaves only while fd is still that
 * socket, and is otherwise reported to fail as SL_ESTALE, unsent. fd < 0 or
 * ino 0: no check. Costs an fstat(2) per message (one per run of messages
 * to the same descriptor). */
int net_queue_guarded(net *n, net_sock sock, const uint8_t *rid, size_t rid_len, const proto_msg *m,
                      uint64_t token, net_when when, int fd, uint64_t ino);

/* net_queue_via is net_queue to a peer of endpoint sock (net_queue: the
 * main one). A failed send of a reply on the admin endpoint or the HTTP
 * bridge is not reported to net_flush's fail: nothing there holds
 * deliveries. */
int net_queue_via(net *n, net_sock sock, const uint8_t *rid, size_t rid_len, const proto_msg *m, uint64_t token,
                  net_when when);

/* net_runs_ask records that in's connection asked, with HELLO's runs, to
 * have its publishes confirmed in runs (replies.c): a PUT_OK {seq, id,
 * confirms} confirming its requests seq .. seq + confirms - 1, stored as
 * ids id .. id + confirms - 1.
 * A peer of the HTTP bridge, or with a routing id over 32 bytes, is
 * confirmed one by one. */
void net_runs_ask(net *n, const net_in *in);

/* net_queue_confirm is net_queue_via for m, the reply to a PUT that came in
 * as in: when m is a PUT_OK to a connection that asked for runs, it carries
 * confirms, and when it continues the run that connection has open in the
 * queue, that run grows by one instead (m is used and left as it was). */
int net_queue_confirm(net *n, const net_in *in, proto_msg *m, net_when when);

/* net_queued returns how many messages wait in queue `when`. */
size_t net_queued(const net *n, net_when when);

/* net_flush sends queue `when`, reporting failures to fail(ctx, ...). */
void net_flush(net *n, net_when when, net_fail_fn fail, void *ctx);

/* net_promote makes the replies waiting for the next commit wait for the
 * commit about to be made (NET_AFTER_NEXT_COMMIT joins NET_AFTER_COMMIT):
 * called once a commit has ended and its own replies have left. */
void net_promote(net *n);

/* net_seal (sealed 1) closes NET_AFTER_COMMIT when a commit starts: replies
 * queued for it from then on go to NET_AFTER_NEXT_COMMIT, since their writes
 * are not in the commit that is out (with the log, the loop goes on writing
 * the next batch while a record flushes). net_seal(n, 0) when it ended,
 * before its replies are sent, failed or promoted. */
void net_seal(net *n, int sealed);

/* net_fail_queued turns every reply waiting for the commit that carries a
 * seq into ERROR {seq, code, msg, retry_after_ms when retry_ms > 0} and
 * drops the deliveries waiting with them: used when a commit failed. */
void net_fail_queued(net *n, int code, const char *msg, uint64_t retry_ms);

#endif /* SLUICE_NET_H */
