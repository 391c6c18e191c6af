/*
 * member.h - which pool each consumer belongs to, and telling the members of
 * a pool their share (POOL) when its size or membership changes.
 */
#ifndef SLUICE_MEMBER_H
#define SLUICE_MEMBER_H

#include <stddef.h>

#include "bk.h"
#include "net.h"

/* member_join moves c into pool p (leaving its old pool; p NULL: no pool)
 * and tells both pools' members their new shares. */
void member_join(bk *b, conn *c, pool *p);

/* member_pool_changed tells every member of p (NULL: none) its share. */
void member_pool_changed(bk *b, pool *p);

/* member_pace_shares hands every consumer its share of the sink's rate and
 * burst (of the base rate, not one cut after THROTTLED: the broker's bucket
 * stays the upper bound) for the pacing it does where its requests leave:
 * its part of the recent deliveries (at least an even part of the active
 * consumers') times 1.5, at most the whole. A consumer whose share changed
 * by more than an eighth (or whose burst changed) gets a POOL message. Looks
 * at most every MEMBER_PACE_EVERY_NS unless forced (a sink change). */
void member_pace_shares(bk *b, int force);

/* member_same tells whether c is the connection in came from: the same
 * endpoint, the same CURVE key, and the same descriptor (when both are
 * known). Changes nothing. */
int member_same(const conn *c, const net_in *in);

/* member_find returns the conn of the connection in came from, or NULL.
 * A conn of in's routing id and endpoint that is another connection (its
 * key or descriptor differs: libzmq hands a routing id to a new connection
 * only once the old one is gone, and a peer may choose its routing id) is
 * a consumer that is gone: it is dropped and its deliveries go back
 * uncharged (settle_drop_conn, SETTLE_END_REPLACED), and NULL is returned.
 * A conn whose descriptor was not known (a parked request made it) takes
 * in's. */
conn *member_find(bk *b, const net_in *in);

/* member_conn is member_find, creating the conn when there is none (with
 * in's endpoint, key and descriptor; no pool, every level asked for and
 * allowed: auth_note_conn narrows them). *created (may be NULL) says
 * whether it is new. NULL when out of memory or the routing id is
 * unusable. */
conn *member_conn(bk *b, const net_in *in, int *created);

/* member_require is member_conn, also putting a conn with no pool in the
 * default pool (created too when missing). */
conn *member_require(bk *b, const net_in *in, int *created);

/* member_gone tells whether c's connection is gone: the descriptor it came
 * in on is no longer its socket (one fstat). 0 when its descriptor is not
 * known. */
int member_gone(const conn *c);

/* member_consumers returns the connections that have granted credit. */
size_t member_consumers(const bk *b);

#endif /* SLUICE_MEMBER_H */
