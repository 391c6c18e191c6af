/*
 * bridge.h - the HTTP server's door to the loop: protocol messages sent
 * over net's inproc socket (NET_BRIDGE_ENDPOINT) as a client would send
 * them, each with the principal it is sent for, and the loop's answers
 * handed back.
 *
 * A thread of its own owns the one DEALER socket (ZeroMQ sockets are not
 * thread-safe); any thread may call bridge_call, which encodes the message,
 * queues it and wakes that thread. Answers are matched to calls by their
 * seq. Every call ends exactly once: with the loop's answer, or with
 * SL_ETIMEDOUT after its deadline, or SL_ESHUTDOWN at bridge_shutdown.
 */
#ifndef SLUICE_BRIDGE_H
#define SLUICE_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "proto.h"

typedef struct bridge bridge;

/* bridge_done_fn receives a call's end, on the bridge's thread: rc SL_OK
 * with the loop's answer in reply[0..len) (valid during the call only: an
 * encoded message, PUT_OK, ADMIN_OK, ERROR, ...), or rc SL_ETIMEDOUT,
 * SL_ESHUTDOWN or SL_ENOMEM with reply NULL. It must not call the bridge. */
typedef void (*bridge_done_fn)(void *ctx, int rc, const void *reply, size_t len);

/* bridge_open connects a socket to n's NET_BRIDGE_ENDPOINT (net_open with
 * http_bridge) and starts the bridge's thread; calls time out after
 * timeout_ms. Returns SL_OK, SL_ENOMEM, or SL_EIO (logged). */
int bridge_open(net *n, uint32_t timeout_ms, bridge **out);

/* bridge_call sends m to the loop for the principal whose key is user_id
 * ("" or NULL: none, as without auth): m's seq is set here. done(ctx, ...)
 * is called once, later, on the bridge's thread. Returns SL_OK (done will
 * be called), or SL_ESHUTDOWN after bridge_shutdown, SL_EINVAL when m does
 * not encode, SL_ENOMEM (done will not be called). */
int bridge_call(bridge *br, const char *user_id, proto_msg *m, bridge_done_fn done, void *ctx);

/* bridge_shutdown ends every call still out with SL_ESHUTDOWN and refuses
 * new ones; the thread stays until bridge_close. Accepts NULL. */
void bridge_shutdown(bridge *br);

/* bridge_close stops the thread and closes the socket (before net_close);
 * frees *br and NULLs it. Accepts NULL. */
void bridge_close(bridge **br);

#endif /* SLUICE_BRIDGE_H */
