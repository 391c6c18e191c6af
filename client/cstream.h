/*
 * cstream.h - the client's stream transport: a plain TCP or Unix-socket
 * connection to a broker's --stream-listen, for endpoints written
 * stream+tcp://HOST:PORT or stream+ipc:///PATH (framing: proto_stream.h).
 *
 * The pump (wire.c) calls these in place of zmq_send and zmq_msg_recv;
 * what a lost connection means for the requests in flight is wire.c's.
 */
#ifndef SLUICE_CSTREAM_H
#define SLUICE_CSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

#define CSTREAM_SCHEME "stream+" /* stream+tcp://, stream+ipc:// */

/* cstream_is tells whether endpoint names the stream transport. */
bool cstream_is(const char *endpoint);

/* cstream_open readies c to connect to endpoint (its address resolved
 * now); the connection is made at the first send. SL_OK, SL_EINVAL (not
 * stream+tcp://HOST:PORT or stream+ipc:///PATH, or an unknown host). */
int cstream_open(sl_client *c, const char *endpoint);

/* cstream_connect connects c (not connected) and writes the greeting,
 * waiting until deadline_ns at most. SL_OK, SL_ETIMEDOUT, SL_ENOMEM,
 * SL_ECONNECT (refused: recorded with a sentence). */
int cstream_connect(sl_client *c, int64_t deadline_ns);

/* cstream_send writes [length][body] to the broker, connecting first if
 * c is not connected, and waits for room until deadline_ns. SL_OK;
 * SL_ETIMEDOUT; SL_ECONNECT (refused: recorded with a sentence; or the
 * connection broke: c->stream_lost is set, and c->stream_unsent when none
 * of the message left, so that it may be sent again on a new one). */
int cstream_send(sl_client *c, const void *body, size_t len, int64_t deadline_ns);

/* cstream_hup tells whether the broker closed c's connection (its
 * replies may still wait to be read): one poll(2), no waiting. */
bool cstream_hup(const sl_client *c);

/* cstream_take puts the next whole message received into c->frame (*got),
 * reading what the socket holds without waiting. A connection that closes
 * or breaks sets c->stream_lost. SL_OK or SL_ENOMEM. */
int cstream_take(sl_client *c, bool *got);

/* cstream_drop closes the connection (the next send opens another) and
 * forgets what was read of it. */
void cstream_drop(sl_client *c);

/* cstream_close releases all of it. */
void cstream_close(sl_client *c);

#endif /* SLUICE_CSTREAM_H */
