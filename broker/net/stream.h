/*
 * stream.h - the stream endpoint (--stream-listen): protocol messages over
 * plain TCP or Unix-socket connections, read and written by the loop's own
 * thread (framing: proto_stream.h).
 */
#ifndef SLUICE_STREAM_H
#define SLUICE_STREAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct stream stream;

/* stream_open listens on endpoint, tcp://HOST:PORT or ipc:///PATH (an ipc
 * path is claimed first: endpoint.h), taking messages of at most max_body
 * bytes. Returns SL_OK; SL_EINVAL for a malformed endpoint or an unknown
 * host; SL_ESTATE when the address is in use; SL_ENOMEM; SL_EIO (logged). */
int stream_open(const char *endpoint, size_t max_body, stream **out);

/* stream_close closes every connection and the listener (an ipc path is
 * removed); accepts NULL and *s == NULL. */
void stream_close(stream **s);

/* stream_pollfd returns a descriptor that polls readable when a connection
 * or the listener has input (an epoll set), and sets *ready when a whole
 * message is already buffered: the caller must not sleep then. */
int stream_pollfd(const stream *s, int *ready);

/* stream_recv hands out one whole message, taking turns between the
 * connections: 1 with *id (the connection's, never reused), *fd (its
 * descriptor), *body and *len set, valid until the next stream_recv; 0
 * when none is buffered and none can be read without waiting. It accepts
 * connections, reads, and writes what waited for room as it goes. */
int stream_recv(stream *s, uint64_t *id, int *fd, const void **body, size_t *len);

/* stream_send queues body for connection id; stream_push writes what is
 * queued. Returns SL_OK, SL_ECONNECT (the connection is gone), SL_EFULL
 * (more than STREAM_OUT_MAX bytes wait for it: the peer does not read),
 * SL_ENOMEM. */
int stream_send(stream *s, uint64_t id, const void *body, size_t len);
void stream_push(stream *s);

/* stream_conns returns how many connections are open. */
size_t stream_conns(const stream *s);

#endif /* SLUICE_STREAM_H */
