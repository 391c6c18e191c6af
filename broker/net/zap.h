/*
 * zap.h - the broker's ZAP handler (ZeroMQ RFC 27): which CURVE keys may
 * complete a handshake.
 *
 * A thread of its own answers libzmq's authentication requests on
 * inproc://zeromq.zap.01 in one ZeroMQ context: the broker's (the auth
 * file's keys), or the replication stream's (repl_link.c: the group's
 * key). It accepts a CURVE
 * client whose public key is in its key set, in the domain ZAP_DOMAIN, and
 * refuses everything else (an empty set refuses everyone). The accepted
 * connection's User-Id is its public key in Z85, which is what the loop
 * reads from every message (zmq_msg_gets) to find the principal.
 */
#ifndef SLUICE_ZAP_H
#define SLUICE_ZAP_H

#include <stddef.h>
#include <stdint.h>

#define ZAP_DOMAIN "sluice"
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93 /* libzmq 4.3 (draft API): a missing handler refuses, never admits */
#endif
#define ZAP_KEY_LEN 40 /* a CURVE public key in Z85 */

typedef struct zap zap;

/* zap_open binds the handler's socket in the ZeroMQ context ctx and starts
 * its thread, with an empty key set. Returns SL_OK, SL_ESTATE (another
 * handler is bound in ctx), SL_ENOMEM, SL_EIO (logged). */
int zap_open(void *ctx, zap **out);

/* zap_close stops and joins the thread and closes its socket (before the
 * context is terminated); accepts NULL and NULLs *z. */
void zap_close(zap **z);

/* zap_set_keys replaces the key set with n keys of ZAP_KEY_LEN Z85
 * characters each (keys[i], not NUL-terminated; copied). Takes effect for
 * the next handshake. Returns SL_OK or SL_ENOMEM (the old set stays). */
int zap_set_keys(zap *z, const char *const *keys, size_t n);

/* zap_watch counts the handshakes that fail on listener (a bound CURVE
 * socket of ctx) before ZAP is asked: a client without CURVE, or with the
 * wrong server key. Call it from the thread that owns listener, before the
 * socket is closed; zap_close stops the watch. Returns SL_OK, SL_EFULL (two
 * sockets are watched already) or SL_EIO (logged; the broker runs on, those
 * refusals uncounted). */
int zap_watch(zap *z, void *ctx, void *listener);

/* zap_refused returns how many handshakes were refused: by the handler, and
 * inside libzmq on a watched socket. */
uint64_t zap_refused(const zap *z);

#endif /* SLUICE_ZAP_H */
