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
 * sink (rate_milli, burst) for the pacing it does where its requests leave.
 * The broker does not split its deliveries evenly (whoever has credit gets
 * the next), so a share is the consumer's own part of the recent deliveries
 * (smoothed over looks, every MEMBER_PACE_EVERY_NS), at least an even part
 * of the consumers sent a delivery in the last MEMBER_ACTIVE_NS, times
 * MEMBER_PACE_HEADROOM_PCT, at most the whole. Without the headroom two
 * consumers held to exactly half each would lose what one of them leaves
 * idle (capacity the other may not use); with it the shares add up to more
 * than the base, and the broker's own bucket, which never stops
 * metering, is the bound on the sum. What the consumer's bucket still does
 * is take out the jitter between dispatch and sending: a consumer that
 * stalled catches up at 1.5 times its part, in bursts no larger than its
 * part of the burst, instead of all at once. An idle consumer's part falls
 * to 0 within MEMBER_ACTIVE_NS, so an unused share flows back to the
 * others within about a second. The share is of the base, not of a rate
 * cut after THROTTLED: the cut is the broker's to apply. POOL also says how
 * many consumers pace the sink (pacers, the active ones): above 1 each
 * holds its requests at least a common time past their release (pace.c),
 * so that several processes keep the broker's spacing between them; it is
 * announced again when it crosses 1.
 *
 * Who a conn is. A conn is a connection: its endpoint, the CURVE key of
 * its principal and the descriptor its messages come in on (with that
 * socket's inode), all noted when it is made. A message whose routing id
 * names a conn of its endpoint but whose key or descriptor is another comes
 * from another connection: libzmq gives a routing id to a new connection
 * only once the old one is gone, so that consumer is gone, and a peer that
 * chose the routing id of one that vanished gets none of its state: the
 * old conn is dropped, its deliveries back uncharged (it may never have
 * seen them), and the new one starts with no credit and no leases. What
 * the broker sends a consumer (deliver.c, cron.c's PING) leaves only
 * while the conn's descriptor is still its socket (net_queue_guarded), so
 * nothing goes to a newcomer that took the routing id before saying a
 * word; the send failing drops the old conn (settle_send_failed).
 *
 * Costs: O(conns) per announcement and per look (4 a second); joins are
 * rare next to deliveries; member_find is O(1) and compares a key (41
 * bytes) per message, with an fstat only when a conn first learns its
 * descriptor.
 */
#include "member.h"

#include <string.h>

#include "conn.h"
#include "log.h"
#include "net.h"
#include "meter.h"
#include "peers.h"
#include "pool.h"
#include "settle.h"
#include "units.h"

#define MEMBER_ACTIVE_NS (1000 * NS_PER_MS)   /* a consumer sent nothing this long is idle */
#define MEMBER_PACE_EVERY_NS (250 * NS_PER_MS) /* how often the shares are looked at */
#define MEMBER_PACE_HEADROOM_PCT 150           /* a share is its part of the deliveries x 1.5 */
#define MEMBER_PACE_HYSTERESIS 8               /* a rate within 1/8 of the one told is not re-told */

/* active counts the consumers sent a delivery within MEMBER_ACTIVE_NS (at
 * least 1). */
static size_t active(const bk *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->conns.len; i++) {
        const conn *c = b->conns.all[i];
        n += c->consumer && c->last_sent_ns && b->mono_ns < c->last_sent_ns + MEMBER_ACTIVE_NS;
    }
    return n ? n : 1;
}

/* pace_share computes c's pacing share now: its part of the recent
 * deliveries (at least an even part of the active consumers'), with
 * MEMBER_PACE_HEADROOM_PCT on top, at most the whole; of the base rate and
 * of the burst (rounded up); a rate of 0 when the sink is unlimited. */
static void pace_share(const bk *b, const conn *c, size_t n_active, uint64_t *rate, uint32_t *burst)
{
    uint64_t part = c->pace_part_milli, even = 1000 / n_active;
    part = part > even ? part : even;
    part = part * MEMBER_PACE_HEADROOM_PCT / 100;
    part = part > 1000 ? 1000 : part;
    uint64_t base = meter_sink_base(&b->meter);
    uint32_t burst_all = b->meter.sink.burst ? b->meter.sink.burst : 1;
    *rate = base * part / 1000;
    *burst = (uint32_t)(((uint64_t)burst_all * part + 999) / 1000);
    *burst = *burst ? *burst : 1;
    if (base && !*rate)
        *rate = 1; /* a limited sink never reads as unpaced */
}

void member_pool_changed(bk *b, pool *p)
{
    uint32_t index = 0;
    if (!p)
        return;
    size_t n_active = active(b);
    for (size_t i = 0; i < b->conns.len; i++) {
        conn *c = b->conns.all[i];
        if (c->pool != p)
            continue;
        if (!c->pace_rate_milli) /* a newcomer: its share before its first delivery */
            pace_share(b, c, n_active, &c->pace_rate_milli, &c->pace_burst);
        proto_msg m;
        proto_init(&m, PROTO_POOL);
        proto_set_str(&m, PROTO_F_pool, p->name, strlen(p->name));
        proto_set(&m, size, p->size);
        proto_set(&m, share, pool_share(p, index++));
        proto_set(&m, rate_milli, c->pace_rate_milli);
        proto_set(&m, burst, c->pace_burst);
        proto_set(&m, pacers, n_active);
        net_queue_via(b->net, (net_sock)c->sock, c->rid, c->rid_len, &m, 0, NET_NOW);
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
    uint64_t total = 0;
    for (size_t i = 0; i < b->conns.len; i++)
        total += b->conns.all[i]->sent_recent;
    for (size_t i = 0; i < b->conns.len; i++) { /* each one's part, smoothed over looks */
        conn *c = b->conns.all[i];
        uint64_t part = total ? (uint64_t)c->sent_recent * 1000 / total : 0;
        int idle = !c->last_sent_ns || b->mono_ns >= c->last_sent_ns + MEMBER_ACTIVE_NS;
        c->pace_part_milli = idle ? 0 : (uint32_t)((c->pace_part_milli + part) / 2);
        c->sent_recent = 0;
    }
    size_t n_active = active(b);
    int shared_changed = (n_active > 1) != (b->pace_pacers > 1); /* the shared hold goes on or off */
    b->pace_pacers = n_active;
    for (unsigned i = 0; i < b->pools.n; i++) {
        pool *p = b->pools.v[i];
        int changed = shared_changed;
        for (size_t j = 0; j < b->conns.len; j++) {
            conn *c = b->conns.all[j];
            uint64_t rate;
            uint32_t burst;
            if (c->pool != p || !c->consumer)
                continue;
            pace_share(b, c, n_active, &rate, &burst);
            uint64_t told = c->pace_rate_milli, diff = rate > told ? rate - told : told - rate;
            if (burst == c->pace_burst && (rate == told || (told && diff <= told / MEMBER_PACE_HYSTERESIS)))
                continue; /* the same, or too close to be worth a message */
            c->pace_rate_milli = rate;
            c->pace_burst = burst;
            changed = 1;
        }
        if (changed)
            member_pool_changed(b, p);
    }
}

/* key_of returns in's CURVE key (User-Id), "" without one, in a buffer
 * the size of a conn's. */
static const char *key_of(const net_in *in, char *key, size_t size)
{
    size_t n = in->user_id && in->user_id_len < size ? in->user_id_len : 0;
    memcpy(key, n ? in->user_id : "", n);
    key[n] = '\0';
    return key;
}

int member_same(const conn *c, const net_in *in)
{
    char key[sizeof c->user_id];
    if (c->sock != (uint8_t)in->sock || strcmp(c->user_id, key_of(in, key, sizeof key)) != 0)
        return 0;
    return c->fd < 0 || in->fd < 0 || c->fd == in->fd;
}

/* note_fd gives c the descriptor in came in on, and its socket's inode. */
static void note_fd(conn *c, const net_in *in)
{
    if (in->fd < 0)
        return;
    c->fd = in->fd;
    c->fd_ino = peers_inode(in->fd);
}

conn *member_find(bk *b, const net_in *in)
{
    conn *c = conn_find(&b->conns, in->sock, in->rid, in->rid_len);
    if (!c)
        return NULL;
    if (!member_same(c, in)) {
        static log_limit replaced_log; /* once a second (one broker per process) */
        uint64_t held = 0;
        if (log_limit_pass(&replaced_log, b->mono_ns, NS_PER_S, &held))
            log_info("member", "a new connection took the routing id of a consumer in pool %s (principal %s): "
                     "that consumer is gone; its %u deliveries go back uncharged (%llu such lines held back)",
                     c->pool ? c->pool->name : "-", c->principal[0] ? c->principal : "-", c->nleases,
                     (unsigned long long)held);
        settle_drop_conn(b, c, SETTLE_END_REPLACED);
        return NULL;
    }
    if (c->fd < 0)
        note_fd(c, in);
    return c;
}

conn *member_conn(bk *b, const net_in *in, int *created)
{
    conn *c = member_find(b, in);
    if (created)
        *created = 0;
    if (c)
        return c;
    c = conn_require(&b->conns, in->sock, in->rid, in->rid_len, b->all_mask);
    if (!c)
        return NULL;
    key_of(in, c->user_id, sizeof c->user_id);
    note_fd(c, in);
    if (created)
        *created = 1;
    return c;
}

int member_gone(const conn *c)
{
    return c->fd >= 0 && c->fd_ino && peers_inode(c->fd) != c->fd_ino;
}

conn *member_require(bk *b, const net_in *in, int *created)
{
    conn *c = member_conn(b, in, created);
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
