/*
 * member.h - which pool each consumer belongs to, and telling the members of
 * a pool their share (POOL) when its size or membership changes.
 */
#ifndef SLUICE_MEMBER_H
#define SLUICE_MEMBER_H

#include <stddef.h>

#include "bk.h"

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

/* member_require returns the conn for the peer rid, creating it in the
 * default pool (created too when missing). NULL when out of memory or the
 * routing id is unusable. */
conn *member_require(bk *b, const uint8_t *rid, size_t rid_len);

/* member_consumers returns the connections that have granted credit. */
size_t member_consumers(const bk *b);

#endif /* SLUICE_MEMBER_H */
