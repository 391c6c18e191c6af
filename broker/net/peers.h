/*
 * peers.h - the descriptor each CURVE key's connections came in on, so that
 * revoking a key can close its open connections.
 */
#ifndef SLUICE_PEERS_H
#define SLUICE_PEERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct peers peers;

/* peers_note records that a message with User-Id user_id (len bytes, at
 * most 40) came in on descriptor fd (ZMQ_SRCFD), creating *p on first use.
 * O(1) when fd is already known with this key; otherwise one fstat, to know
 * the socket again later (its inode). Returns SL_OK, SL_EINVAL (a bad fd or
 * key) or SL_ENOMEM (then nothing is recorded: revocation falls back to
 * refusing each command). */
int peers_note(peers **p, int fd, const char *user_id, size_t len);

/* peers_keep_fn tells whether the key user_id (NUL-terminated) is still
 * allowed. */
typedef int (*peers_keep_fn)(void *ctx, const char *user_id);

/* peers_drop shuts down (shutdown(2), both ways) every recorded connection
 * whose key keep refuses, after checking that the descriptor is still the
 * same socket (its inode), and forgets it. libzmq then tears the connection
 * down; the peer sees a disconnection, and its ZAP handshake on reconnecting
 * is refused. Returns the number shut down. Accepts NULL. */
unsigned peers_drop(peers *p, peers_keep_fn keep, void *ctx);

/* peers_drop_fd shuts down descriptor fd if it is recorded with user_id
 * and is still the same socket; returns 1 when it did. Accepts NULL. */
int peers_drop_fd(peers *p, int fd, const char *user_id, size_t len);

/* peers_inode returns the inode of the socket on descriptor fd, or 0 when
 * fd is not an open socket: compared with one noted before, it tells
 * whether fd is still the same connection (descriptors are reused; socket
 * inodes come from a counter). One fstat(2). */
uint64_t peers_inode(int fd);

/* peers_destroy frees *p and NULLs it; accepts NULL and *p == NULL. */
void peers_destroy(peers **p);

#endif /* SLUICE_PEERS_H */
