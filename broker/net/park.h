/*
 * park.h - requests received while a commit is out that must wait for its
 * end (they write the store, or their reply depends on a write).
 */
#ifndef SLUICE_PARK_H
#define SLUICE_PARK_H

#include <stddef.h>

#include "net.h"

#define PARK_MAX_MSGS  4096              /* at most this many parked requests */
#define PARK_MAX_BYTES (64u << 20)       /* and at most this many bytes of them */

typedef struct park park;

/* park_new returns an empty park, or NULL when memory runs out. */
park *park_new(void);

/* park_destroy frees p and what it holds; accepts NULL. */
void park_destroy(park **p);

/* park_full tells whether p takes no more requests (the loop then leaves
 * the rest in ZeroMQ's queue until the commit ends). */
int park_full(const park *p);

/* park_count returns how many requests p holds. */
size_t park_count(const park *p);

/* park_holds_peer tells whether p holds a request from peer rid of endpoint
 * sock: its later requests are parked behind it, to keep their order. */
int park_holds_peer(const park *p, net_sock sock, const uint8_t *rid, size_t rid_len);

/* park_add copies in (its routing id, body, User-Id) into p. SL_OK,
 * SL_EFULL (park_full), SL_ENOMEM. */
int park_add(park *p, const net_in *in);

/* park_drain hands each parked request, oldest first, to fn (the net_in
 * valid during the call only) and empties p. */
void park_drain(park *p, void (*fn)(void *ctx, const net_in *in), void *ctx);

#endif /* SLUICE_PARK_H */
