/*
 * repl_link.h - the replication stream's socket (repl_link.c): a primary
 * binds it, its standby connects to it.
 */
#ifndef SLUICE_REPL_LINK_H
#define SLUICE_REPL_LINK_H

#include <stddef.h>
#include <stdint.h>

typedef struct repl_link repl_link;

/* repl_link_bind binds endpoint (a primary: a ROUTER that answers the one
 * standby last heard from). With secret (the group's CURVE secret key in
 * Z85; NULL: plaintext) the stream is encrypted and only a standby holding
 * the same key pair, or one of the n replica public keys (Z85, from the
 * auth file), completes the handshake. SL_OK, SL_EINVAL (the endpoint, the
 * key), SL_EIO, SL_ENOMEM; logged. */
int repl_link_bind(const char *endpoint, const char *secret, const char *const *replicas, size_t n,
                   repl_link **out);

/* repl_link_connect connects to a primary's endpoint (a standby: a
 * DEALER, reconnecting by itself every 100 ms), with secret as for
 * repl_link_bind (the primary's key is the same pair's public key),
 * presenting mine (a secret key of its own, a replica's; NULL: the
 * group's). Same errors. */
int repl_link_connect(const char *endpoint, const char *secret, const char *mine, repl_link **out);

/* repl_link_close closes at once (nothing lingers); accepts NULL, NULLs *l. */
void repl_link_close(repl_link **l);

/* repl_link_send sends one message of two frames, hdr and body (blen may be
 * 0: one frame), to the peer, without blocking. SL_OK; SL_EFULL (its queue is
 * full: try again later); SL_ECONNECT (no peer yet, or it is gone). */
int repl_link_send(repl_link *l, const void *hdr, size_t hlen, const void *body, size_t blen);

/* repl_link_recv receives one message without blocking: 1 with its first
 * frame copied into hdr (at most cap bytes, *hlen its length) and its
 * second in *body (valid until the next call; *blen 0 when none), 0 when
 * nothing waits, -1 on a socket error (logged). On a ROUTER the sender
 * becomes the peer that repl_link_send answers. */
int repl_link_recv(repl_link *l, unsigned char *hdr, size_t cap, size_t *hlen, const unsigned char **body,
                   size_t *blen);

/* repl_link_fd returns the descriptor to poll for input, and sets *ready
 * when a message already waits (then do not sleep). -1 on error. */
int repl_link_fd(repl_link *l, int *ready);

#endif /* SLUICE_REPL_LINK_H */
