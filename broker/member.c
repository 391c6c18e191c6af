/*
 * member.c - pool membership.
 *
 * A conn belongs to at most one pool (counted in pool->members). Joining,
 * leaving and resizing announce each member's share with a POOL message, so
 * that a consumer process can size its own concurrency; shares are handed
 * out by position among the pool's members (pool_share). POOL messages
 * promise nothing about the disk and leave at once; one that cannot be
 * queued is dropped (the next change announces again).
 *
 * Costs: O(conns) per announcement; joins are rare next to deliveries.
 */
#include "member.h"

#include <string.h>

#include "conn.h"
#include "net.h"
#include "pool.h"

void member_pool_changed(bk *b, pool *p)
{
    uint32_t index = 0;
    if (!p)
        return;
    for (size_t i = 0; i < b->conns.len; i++) {
        conn *c = b->conns.all[i];
        if (c->pool != p)
            continue;
        proto_msg m;
        proto_init(&m, PROTO_POOL);
        proto_set_str(&m, PROTO_F_pool, p->name, strlen(p->name));
        proto_set(&m, size, p->size);
        proto_set(&m, share, pool_share(p, index++));
        net_queue(b->net, c->rid, c->rid_len, &m, 0, NET_NOW);
    }
}

void member_join(bk *b, conn *c, pool *p)
{
    pool *old = c->pool;
    if (old == p)
        return;
    if (old)
        old->members--;
    c->pool = p;
    if (p)
        p->members++;
    member_pool_changed(b, old);
    member_pool_changed(b, p);
}

conn *member_require(bk *b, const uint8_t *rid, size_t rid_len)
{
    conn *c = conn_require(&b->conns, rid, rid_len, b->all_mask);
    if (c && !c->pool) {
        pool *p = pool_require(&b->pools, "default", 7, b->all_mask);
        if (p)
            member_join(b, c, p);
    }
    return c;
}

size_t member_consumers(const bk *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->conns.len; i++)
        n += b->conns.all[i]->consumer;
    return n;
}
