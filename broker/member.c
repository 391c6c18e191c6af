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
 * Pacing shares. The same POOL message carries the consumer's share of the
 * sink (rate_milli, burst): the base rate over the consumers that were sent
 * a delivery in the last MEMBER_ACTIVE_NS, so a share left unused flows back
 * to the others within about a second (MEMBER_ACTIVE_NS plus one look,
 * every MEMBER_PACE_EVERY_NS). An idle consumer is told the same share as a
 * busy one: when it wakes, the sum of the shares exceeds the base until the
 * next look, and the broker's own bucket, which never stops metering, is
 * the bound meanwhile. The share is of the base, not of a rate cut after
 * THROTTLED: the cut is the broker's to apply; the consumer's pacing only
 * takes out the jitter between the broker's dispatch and the moment its
 * request leaves.
 *
 * Costs: O(conns) per announcement and per look (4 a second); joins are
 * rare next to deliveries.
 */
#include "member.h"

#include <string.h>

#include "conn.h"
#include "net.h"
#include "meter.h"
#include "pool.h"
#include "units.h"

#define MEMBER_ACTIVE_NS (1000 * NS_PER_MS)   /* a consumer sent nothing this long is idle */
#define MEMBER_PACE_EVERY_NS (250 * NS_PER_MS) /* how often the shares are looked at */

/* pace_share computes a consumer's pacing share now: the base rate and the
 * burst over the consumers sent a delivery within MEMBER_ACTIVE_NS (at
 * least one), the burst rounded up; 0 when the sink is unlimited. */
static void pace_share(const bk *b, uint64_t *rate, uint32_t *burst)
{
    size_t active = 0;
    for (size_t i = 0; i < b->conns.len; i++) {
        const conn *c = b->conns.all[i];
        active += c->consumer && c->last_sent_ns && b->mono_ns < c->last_sent_ns + MEMBER_ACTIVE_NS;
    }
    active = active ? active : 1;
    uint64_t base = meter_sink_base(&b->meter);
    uint32_t burst_all = b->meter.sink.burst ? b->meter.sink.burst : 1;
    *rate = base / active;
    *burst = (uint32_t)((burst_all + active - 1) / active);
    if (base && !*rate)
        *rate = 1; /* a limited sink never reads as unpaced */
}

void member_pool_changed(bk *b, pool *p)
{
    uint32_t index = 0;
    uint64_t rate = 0;
    uint32_t burst = 0;
    if (!p)
        return;
    pace_share(b, &rate, &burst);
    for (size_t i = 0; i < b->conns.len; i++) {
        conn *c = b->conns.all[i];
        if (c->pool != p)
            continue;
        if (!c->pace_rate_milli) { /* a newcomer: its share before its first delivery */
            c->pace_rate_milli = rate;
            c->pace_burst = burst;
        }
        proto_msg m;
        proto_init(&m, PROTO_POOL);
        proto_set_str(&m, PROTO_F_pool, p->name, strlen(p->name));
        proto_set(&m, size, p->size);
        proto_set(&m, share, pool_share(p, index++));
        proto_set(&m, rate_milli, c->pace_rate_milli);
        proto_set(&m, burst, c->pace_burst);
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
    b->next_pace_ns = 0; /* the shares are looked at again at the next tick */
}

void member_pace_shares(bk *b, int force)
{
    if (!force && b->mono_ns < b->next_pace_ns)
        return;
    b->next_pace_ns = b->mono_ns + MEMBER_PACE_EVERY_NS;
    uint64_t rate = 0;
    uint32_t burst = 0;
    pace_share(b, &rate, &burst);
    for (unsigned i = 0; i < b->pools.n; i++) {
        pool *p = b->pools.v[i];
        int changed = 0;
        for (size_t j = 0; j < b->conns.len; j++) {
            conn *c = b->conns.all[j];
            if (c->pool != p || !c->consumer || (c->pace_rate_milli == rate && c->pace_burst == burst))
                continue;
            c->pace_rate_milli = rate;
            c->pace_burst = burst;
            changed = 1;
        }
        if (changed)
            member_pool_changed(b, p);
    }
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
