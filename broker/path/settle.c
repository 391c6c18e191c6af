/*
 * settle.c - how deliveries end.
 *
 * Every ending releases the lease (its pool's accounting, the sink's
 * in-flight count) and tells the meter what happened: an ACK is a success
 * for the breaker, a NACK or an expired lease a failure, anything else no
 * outcome. Then the message goes where the ending sends it, through queue:
 *
 *   ACK        deleted
 *   NACK       back at its place (or delayed), the attempt charged
 *   expired    the same, counted as expired
 *   gone       the same: the consumer vanished with it
 *   unsent     back at its place, uncharged, the credit given back
 *   left (BYE) back at its place, uncharged
 *   replaced   another connection took the consumer's routing id
 *              (member.c): that consumer is gone, and may never have seen
 *              it; back at its place, uncharged
 *   unread     the lease ran out, but its consumer has sent nothing at all
 *              since the delivery (no settlement, no PONG, no CREDIT), though
 *              the broker's heartbeat PING went out after it with a whole
 *              interval to answer (the lease lasted two heartbeats): it
 *              stopped reading its socket, so the delivery may still sit
 *              there unread; back at its place, uncharged, no outcome for
 *              the breaker. A consumer that read it and keeps talking is
 *              charged as expired. A crash is charged as gone.
 *   THROTTLED  back at its place, uncharged; the sink pauses (at most
 *              --max-throttle-pause, pause.c) and its rate is cut, or, for
 *              its tag alone (scope tag), that tag pauses and its bucket is
 *              cut while the sink goes on (settle_tag.c). What it may pause
 *              follows its consumer's principal: one limited to some levels
 *              (levels=) pauses those levels instead of the sink, cuts no
 *              rate, and pauses a tag only in its levels
 *   REJECT     a dead letter now
 *
 * Who may settle: only the connection that holds the lease
 * (settle_holder). A token is 64 random bits (lease.c), so another
 * consumer cannot guess one; one it learned anyway (a token that leaked, a
 * routing id taken over) still gets SL_ESTALE, counted in settle_refused
 * and logged at most once a second, and the delivery stays with its
 * holder. NACK's delay is cut at --max-nack-delay and TOUCH's lease at
 * --max-lease (never below --lease-ms): TOUCH's OK says the lease granted,
 * NACK's OK carries nothing (the protocol has no field for it there).
 *
 * A charged ending that used the last of max_attempts makes a dead letter.
 * Nothing here commits: the store's changes join the pass's transaction.
 * Breaker transitions are logged here, where the outcome is known.
 *
 * Costs: O(1) per ending plus one store write (none for uncharged returns);
 * a dropped connection costs O(its leases).
 */
#include "settle.h"

#include <stdio.h>

#include "conn.h"
#include "lease.h"
#include "log.h"
#include "member.h"
#include "meter.h"
#include "net.h"
#include "pause.h"
#include "pool.h"
#include "queue.h"
#include "settle_tag.h"
#include "units.h"

static log_limit refused_log; /* refused settlements: once a second (one broker per process) */

static const char *end_name(settle_end why)
{
    switch (why) {
    case SETTLE_END_NACK: return "negatively acknowledged";
    case SETTLE_END_EXPIRED: return "lease expired";
    case SETTLE_END_GONE: return "consumer disconnected";
    case SETTLE_END_UNSENT: return "not sent";
    case SETTLE_END_LEFT: return "consumer left";
    case SETTLE_END_UNREAD: return "consumer stopped reading";
    case SETTLE_END_REPLACED: return "its routing id was taken by another connection";
    }
    return "?";
}

/* release ends l's accounting in its pool and the meter, and frees it. */
static void release(bk *b, lease *l, meter_outcome outcome)
{
    pool *p = l->pool;
    uint64_t transitions = b->meter.breaker.transitions;
    meter_settle(&b->meter, outcome, b->mono_ns);
    if (b->meter.breaker.transitions != transitions) {
        const breaker *br = &b->meter.breaker;
        log_warn("settle", "circuit breaker %s (%u of the last %u deliveries failed)", breaker_name(br->state),
                 br->failures, br->n);
    }
    if (p) {
        p->inflight--;
        p->settled++;
        p->held_ns += b->mono_ns - l->started_ns;
    }
    lease_free(&b->leases, l);
}

lease *settle_holder(bk *b, conn *c, uint64_t token, const char *what)
{
    lease *l = lease_find(&b->leases, token);
    if (l && c && l->owner == c)
        return l;
    uint64_t held = 0;
    b->settle_refused++;
    if (l)
        b->settle_foreign++;
    if (log_limit_pass(&refused_log, b->mono_ns, NS_PER_S, &held)) {
        const char *who = c && c->principal[0] ? c->principal : "-";
        const char *in_pool = c && c->pool ? c->pool->name : "-";
        if (l)
            log_warn("settle", "%s refused (SL_ESTALE): message %llu is out with another connection (pool %s, "
                     "principal %s), not with this one (pool %s, principal %s); %llu such refusals in all, %llu "
                     "not logged", what, (unsigned long long)l->id, l->pool ? l->pool->name : "-",
                     l->owner && l->owner->principal[0] ? l->owner->principal : "-", in_pool, who,
                     (unsigned long long)b->settle_refused, (unsigned long long)held);
        else
            log_info("settle", "%s refused (SL_ESTALE): no lease has its token (expired, settled, from before a "
                     "restart, or never given) (pool %s, principal %s); %llu such refusals in all, %llu not "
                     "logged", what, in_pool, who, (unsigned long long)b->settle_refused, (unsigned long long)held);
    }
    return NULL;
}

int settle_ack(bk *b, lease *l)
{
    int rc = queue_settle(&b->q, l->level, l->key);
    release(b, l, METER_SUCCEEDED);
    return rc == SL_ENOTFOUND ? SL_OK : rc;
}

void settle_end_lease(bk *b, lease *l, settle_end why, uint64_t delay_ms)
{
    unsigned level = l->level;
    uint64_t key = l->key, id = l->id;
    uint32_t attempt = l->attempt;
    unsigned picked = l->reason;
    conn *owner = l->owner;
    int rc;
    int failed = why == SETTLE_END_EXPIRED || why == SETTLE_END_NACK;
    release(b, l, failed ? METER_FAILED : METER_NO_OUTCOME);
    queue_level *lv = &b->q.lv[level];
    if (why == SETTLE_END_UNSENT || why == SETTLE_END_LEFT || why == SETTLE_END_UNREAD ||
        why == SETTLE_END_REPLACED) {
        b->picks[level][picked]--; /* as dispatched is: it never counted as a delivery */
        if (queue_untake(&b->q, level, key) != SL_OK)
            log_error("settle", "out of memory returning message %llu; it is delivered after restart",
                      (unsigned long long)id);
        if (owner && why == SETTLE_END_UNSENT)
            owner->credit++;
        return;
    }
    if (why == SETTLE_END_EXPIRED)
        lv->counters.expired++;
    else if (why == SETTLE_END_NACK)
        lv->counters.nacked++;
    if (attempt >= b->cfg.max_attempts) {
        char reason[160];
        snprintf(reason, sizeof reason, "%u attempts used; last: %s", attempt, end_name(why));
        rc = queue_bury(&b->q, level, key, attempt, reason, b->wall_ns);
        log_info("settle", "message %llu (level %u) moved to dead letters: %s", (unsigned long long)id,
                 level, reason);
    } else {
        uint64_t due = delay_ms ? units_after_ms(b->wall_ns, delay_ms) : 0;
        rc = queue_return(&b->q, level, key, attempt, due);
    }
    if (rc != SL_OK)
        log_error("settle", "cannot return message %llu to level %u: %s", (unsigned long long)id, level,
                  proto_strerror(rc));
}

uint64_t settle_nack(bk *b, lease *l, uint64_t delay_ms)
{
    if (delay_ms > b->cfg.max_nack_delay_ms)
        delay_ms = b->cfg.max_nack_delay_ms;
    settle_end_lease(b, l, SETTLE_END_NACK, delay_ms);
    return delay_ms;
}

void settle_throttled(bk *b, lease *l, uint64_t retry_ms, int tag_scope)
{
    unsigned level = l->level;
    uint64_t key = l->key;
    bk_pause origin;
    pause_origin(l, retry_ms, &origin);
    /* what it may pause: the levels its principal may consume (pause.c) */
    uint32_t allowed = l->owner ? l->owner->allowed_mask & b->all_mask : b->all_mask;
    char tag[PROTO_MAX_TAG + 1];
    size_t tag_len = tag_scope ? settle_tag_of(b, level, key, tag) : 0; /* untagged: the sink's */
    release(b, l, METER_NO_OUTCOME);
    b->q.lv[level].counters.throttled++;
    if (queue_requeue(&b->q, level, key) != SL_OK)
        log_error("settle", "out of memory returning a throttled message; it is delivered after restart");
    if (tag_len && settle_tag_throttled(b, level, key, tag, tag_len, retry_ms, &origin, allowed) == SL_OK)
        return; /* that tag alone waits: the sink is not paused, not cut */
    uint64_t ms = pause_length_ms(b, retry_ms);
    if (allowed == b->all_mask) {
        pause_sink(b, &origin, ms);
        return;
    }
    for (unsigned l2 = 0; l2 < b->cfg.levels; l2++) /* its levels only: the others share the sink, not its 429 */
        if (allowed >> l2 & 1)
            pause_level(b, l2, &origin, ms);
}

void settle_reject(bk *b, lease *l, const char *reason, size_t reason_len)
{
    char text[PROTO_MAX_STR + 64];
    unsigned level = l->level;
    uint64_t key = l->key, id = l->id;
    uint32_t attempt = l->attempt;
    snprintf(text, sizeof text, "rejected by the consumer (attempt %u): %.*s", attempt, (int)reason_len,
             reason_len ? reason : "no reason given");
    release(b, l, METER_NO_OUTCOME);
    if (queue_bury(&b->q, level, key, attempt, text, b->wall_ns) != SL_OK)
        log_error("settle", "cannot move message %llu to dead letters", (unsigned long long)id);
    else
        log_info("settle", "message %llu (level %u) moved to dead letters: %s", (unsigned long long)id, level, text);
}

uint64_t settle_touch(bk *b, lease *l, uint64_t lease_ms)
{
    uint64_t ms = lease_ms ? lease_ms : b->cfg.lease_ms;
    uint64_t most = b->cfg.max_lease_ms > b->cfg.lease_ms ? b->cfg.max_lease_ms : b->cfg.lease_ms;
    if (ms > most)
        ms = most;
    lease_extend(&b->leases, l, b->mono_ns + ms * NS_PER_MS);
    return ms;
}

void settle_expire_leases(bk *b, unsigned max)
{
    lease *l;
    for (unsigned n = 0; n < max && (l = lease_expired(&b->leases, b->mono_ns)); n++) {
        /* silent since it was delivered (a message of the same pass came
         * before the delivery), though a heartbeat PING went out after it
         * with a whole interval to answer: it is not reading its socket */
        int unread = l->owner && l->owner->last_rx_ns <= l->started_ns &&
                     b->mono_ns >= l->started_ns + 2 * b->cfg.heartbeat_ms * NS_PER_MS;
        log_debug("settle", "lease of message %llu expired%s", (unsigned long long)l->id,
                  unread ? " unread: its consumer has sent nothing since" : "");
        settle_end_lease(b, l, unread ? SETTLE_END_UNREAD : SETTLE_END_EXPIRED, 0);
    }
}

void settle_drop_conn(bk *b, conn *c, settle_end why)
{
    if (c->nleases)
        log_info("settle", "consumer in pool %s %s with %u deliveries outstanding; returning them%s",
                 c->pool ? c->pool->name : "-", why == SETTLE_END_LEFT ? "left" : "gone", c->nleases,
                 why == SETTLE_END_GONE ? "" : " uncharged");
    while (c->leases)
        settle_end_lease(b, c->leases, why, 0);
    member_join(b, c, NULL);
    conn_remove(&b->conns, c);
}

void settle_send_failed(void *ctx, unsigned sock, const uint8_t *rid, size_t rid_len, uint64_t token, int err)
{
    bk *b = ctx;
    b->tx_failed++;
    if (token) {
        lease *l = lease_find(&b->leases, token);
        if (l) {
            /* a consumer with a full queue keeps its credit spent, so that the
             * broker does not spin re-offering to a peer that is not reading */
            conn *owner = l->owner;
            settle_end_lease(b, l, SETTLE_END_UNSENT, 0);
            if (err == SL_EFULL && owner && owner->credit)
                owner->credit--;
        }
    }
    if (err == SL_ECONNECT || err == SL_ESTALE) {
        /* ESTALE: the connection the message was for is gone, and another may
         * hold its routing id now: drop the conn only if its own socket is gone */
        conn *c = conn_find(&b->conns, sock, rid, rid_len);
        if (c && (err == SL_ECONNECT || member_gone(c)))
            settle_drop_conn(b, c, SETTLE_END_GONE);
    }
}
