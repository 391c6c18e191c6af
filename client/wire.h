/*
 * wire.h - the client's connection to its broker: sockets, pump, requests.
 *
 * Every function here works on the connection part of an sl_client
 * (client.h) and returns an sl_err without recording it: sluice.c keeps the
 * error record. Nothing here is thread-safe; the client is used from one
 * thread at a time.
 */
#ifndef SLUICE_WIRE_H
#define SLUICE_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"

/* An item of c->puts: an outstanding publish's seq and its caller's ticket. */
typedef struct pending_put {
    uint64_t seq, ticket;
    void *frame;       /* its encoded frame, kept to send again after a move (failover.c); or NULL */
    size_t frame_len;
} pending_put;

/* wire_msg_send encodes m and sends it as one frame (flags: ZMQ's); a
 * send that may wait gives up after the client's timeout with SL_ETIMEDOUT,
 * or at once with SL_EPERM when the broker refuses the handshake. */
int wire_msg_send(sl_client *c, const proto_msg *m, int flags);

/* wire_route reads the frame c->frame holds and does what it means
 * (route.c): queues a delivery or a confirmation, matches a settlement's
 * answer, hands over the awaited reply, records a POOL, answers a PING.
 * Returns SL_OK or SL_ENOMEM. */
int wire_route(sl_client *c);

/* wire_open connects c, zeroed until now, to the broker at endpoint: it
 * sets up the queues, a ZeroMQ context, the DEALER socket (sends give up
 * after timeout_ms; heartbeats every heartbeat_ms) and its monitor.
 * Connecting is asynchronous, so an unreachable broker is not an error here.
 * keys (may be NULL) may name CURVE keys (sl_options' server_key,
 * public_key, secret_key: all or none).
 * Whether or not it succeeds, c is later given to wire_close. Returns SL_OK,
 * SL_EINVAL (bad endpoint, option or keys), SL_ENOMEM. */
int wire_open(sl_client *c, const char *endpoint, int timeout_ms, int heartbeat_ms, const sl_options *keys);

/* wire_close releases all that wire_open and the pump made: it says BYE
 * first if c is subscribed and has reached the broker, waits up to one
 * second for unsent frames, and frees queued confirmations and deliveries.
 * c itself is left to the caller to free. */
void wire_close(sl_client *c);

/* wire_request sets m's seq, sends m, and waits up to c's timeout for the
 * reply to it, routing everything else that arrives meanwhile. On SL_OK
 * c->reply holds the reply, which may be an ERROR; its strings are valid
 * until the next receive. Returns SL_OK, SL_ETIMEDOUT, SL_ECONNECT,
 * SL_ENOMEM, SL_EINVAL (m cannot be encoded). */
int wire_request(sl_client *c, proto_msg *m);

/* wire_post sets m's seq and sends m without waiting: for a message, such
 * as CREDIT, that the broker answers only when it fails. The seq makes such
 * an ERROR a stray that the pump drops, rather than one that could pass for
 * the reply to a later request. Returns SL_OK, SL_ETIMEDOUT (the send timed
 * out), SL_ECONNECT, SL_ENOMEM, SL_EINVAL (m cannot be encoded). */
int wire_post(sl_client *c, proto_msg *m);

/* wire_publish sets m's seq and sends m, a PUT, without waiting; its
 * answer will be queued in c->confirms under ticket. Returns SL_OK,
 * SL_ETIMEDOUT (the send timed out), SL_ECONNECT, SL_ENOMEM, SL_EINVAL (m
 * cannot be encoded); on failure nothing was sent or queued. */
int wire_publish(sl_client *c, proto_msg *m, uint64_t ticket);

/* wire_settle sets m's seq and sends m, a settlement (ACK, NACK, TOUCH,
 * THROTTLED, REJECT), without waiting: its seq joins c->settles, and the
 * pump takes it out when the broker's OK or ERROR comes, counting an ERROR
 * in c->refused (its code and text kept for the next call to report).
 * Returns SL_OK, SL_ETIMEDOUT (the send timed out), SL_ECONNECT, SL_ENOMEM,
 * SL_EINVAL (m cannot be encoded); on failure nothing was sent or kept. */
int wire_settle(sl_client *c, proto_msg *m);

/* wire_wait_settled runs the pump until every settlement sent has been
 * answered (c->settles is empty), or for up to timeout_ms. Returns SL_OK,
 * SL_ETIMEDOUT, SL_ECONNECT, SL_ENOMEM. */
int wire_wait_settled(sl_client *c, int timeout_ms);

/* wire_wait_confirm runs the pump until c->confirms holds a confirmation,
 * or for up to timeout_ms (-1 forever, 0 only what already arrived).
 * wire_wait_delivery does the same for c->deliveries. Both return SL_OK,
 * SL_ETIMEDOUT, SL_ECONNECT, SL_ENOMEM. */
int wire_wait_confirm(sl_client *c, int timeout_ms);
int wire_wait_delivery(sl_client *c, int timeout_ms);

/* wire_hello_init fills m with the HELLO of c's subscription, asking for
 * credit (none when 0). The caller sets seq, or leaves it to
 * wire_request. */
void wire_hello_init(const sl_client *c, proto_msg *m, uint64_t credit);

/* wire_code turns an ERROR's code into a return value. Codes are only ever
 * appended, so one newer than this library is passed through unchanged. */
int wire_code(uint64_t code);

/* wire_frame_take receives and routes one frame if one is ready (*got
 * tells): SL_OK, SL_ECONNECT, SL_ENOMEM (wire.c, the pump's step). */
int wire_frame_take(sl_client *c, bool *got);

/* ---- a lost connection, and a new one (wire_lost.c) ---- */

/* wire_deliveries_drop frees the deliveries queued and not handed out. */
void wire_deliveries_drop(sl_client *c);

/* wire_settles_lost forgets the settlements whose answers can no longer
 * come and reports them refused with SL_ECONNECT. */
void wire_settles_lost(sl_client *c);

/* wire_reconnected runs on every ZeroMQ handshake after the first (and on
 * a stream client's new connection): what the old connection held ends,
 * and a subscription is renewed. */
void wire_reconnected(sl_client *c);

/* wire_stream_lost_end ends what waited on a stream connection that closed
 * or broke (c->stream_lost); a no-op otherwise. */
void wire_stream_lost_end(sl_client *c);

/* wire_stream_revive connects a subscribed stream client again (not more
 * often than every 100 ms; now is the monotonic clock) and subscribes
 * anew: SL_OK when connected or nothing to revive, else the error. */
int wire_stream_revive(sl_client *c, int64_t now, int64_t deadline_ns);

/* wire_stream_send sends the frame in c->out over the stream, once more on
 * a new connection when the old one was found gone before any of it left. */
int wire_stream_send(sl_client *c, int64_t now, int64_t deadline_ns);

/* wire_stream_hup_take, before a send over the stream: when the broker has
 * closed the connection, what it sent before is taken and the close seen. */
void wire_stream_hup_take(sl_client *c);

#endif /* SLUICE_WIRE_H */
