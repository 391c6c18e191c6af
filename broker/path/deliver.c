/*
 * deliver.c - dispatch: which consumer gets which message, and when.
 *
 * Each pass, deliver_dispatch builds a view of every level (what is ready,
 * how old its head is, whether its ceiling holds it back, whether it is
 * below its guarantee), then walks the consumers with credit round-robin,
 * one delivery per consumer per round. For each it asks disp_pick which
 * level to serve, asks the meter whether that level may send its head now
 * (meter_admit), and delivers. A sink that holds ends the pass: sending
 * something cheaper from another level instead would break priority order.
 * Whenever the meter holds something back, meter_wake_ns says when to look
 * again (cron folds it into the loop's next wake).
 *
 * A delivery reads the record, creates a lease and queues the DELIVER; it
 * writes nothing to the store (see queue.h), so its cost is one B-tree read.
 * A message whose time to live ran out while it waited is buried instead and
 * the pick is made again. Deliveries leave before the pass's commit unless
 * the message was published in that very pass (queue_committed): nobody may
 * consume what was never confirmed.
 *
 * While an LMDB commit is out (a checkpoint), reads see the last committed
 * state, so a level's confirmed messages that are in that commit cannot be
 * read until it ends (a millisecond or so). Such a level waits (the queue
 * says so: queue_level.commit_wait), and so does every level below it for
 * the consumers it serves (`waiting`): delivering a lower level's message
 * meanwhile would break priority order, as a test under load once showed
 * (one level-2 message before the last level-0 ones).
 * A level that has nothing to give for another reason (a fair level whose
 * tags are all held by their limits) is only skipped, as is, outside a
 * commit, one whose head was appended by the pass in progress: that message
 * is not confirmed yet, so nothing was before it.
 *
 * In a level served fair by tag, a tag held by its pause, rate or in-flight
 * cap (or throttled on its own by the sink) is set aside by queue_fair.c and
 * the next tag's head goes instead; the earliest time such a tag may go
 * again joins meter_wake_ns. A level a THROTTLED paused (pause.c: a FIFO
 * level, which cannot skip its head, waiting for its head's tag; or the
 * levels of a consumer whose principal may not pause the sink) is held
 * like a level its ceiling holds, while the other levels and the sink go
 * on.
 *
 * Costs: O(levels) for the view, then O(consumers + deliveries x levels) per
 * pass; the head's cost is read (cached) only for levels with limits.
 */
#include "deliver.h"

#include <string.h>

#include "disp.h"
#include "lease.h"
#include "log.h"
#include "meter.h"
#include "hist.h"
#include "net.h"
#include "pause.h"
#include "queue.h"
#include "units.h"

static int deliver_one(bk *b, conn *c, unsigned level, disp_reason why)
{
    uint64_t key;
    store_rec rec;
    int rc = queue_take(&b->q, level, &key, &rec);
    if (rc != SL_OK) {
        if (rc != SL_ENOTFOUND)
            log_error("deliver", "cannot read the head of level %u: %s", level, proto_strerror(rc));
        return rc;
    }
    if (rec.expires_ns && rec.expires_ns <= b->wall_ns) { /* outlived its time to live in flight */
        rc = queue_bury(&b->q, level, key, rec.attempt, "expired: its time to live ran out", b->wall_ns);
        return rc == SL_OK ? SL_ESTALE : rc;
    }
    uint32_t attempt = rec.attempt + 1;
    lease *l = lease_new(&b->leases, c, (uint8_t)level, key, rec.id, attempt,
                         b->mono_ns + b->cfg.lease_ms * NS_PER_MS);
    if (!l) {
        queue_untake(&b->q, level, key);
        return SL_ENOMEM;
    }
    proto_msg m;
    proto_init(&m, PROTO_DELIVER);
    proto_set(&m, id, rec.id);
    proto_set(&m, token, l->token);
    proto_set(&m, level, level);
    proto_set(&m, attempt, attempt);
    proto_set(&m, lease_ms, b->cfg.lease_ms);
    proto_set_str(&m, PROTO_F_body, rec.body, rec.body_len);
    if (rec.tag_len) /* stored before tags were checked, a tag is cut to its UTF-8 start */
        proto_set_str(&m, PROTO_F_tag, rec.tag, proto_utf8_prefix(rec.tag, rec.tag_len));
    proto_set(&m, released_ns, b->mono_ns); /* the time it is charged to the buckets */
    proto_set(&m, wait_ms, b->wall_ns > rec.enq_ns ? (b->wall_ns - rec.enq_ns) / NS_PER_MS : 0); /* since publish */
    if (rec.key_len) /* stored as published, checked then (a key is a str) */
        proto_set_str(&m, PROTO_F_key, rec.key, proto_utf8_prefix(rec.key, rec.key_len));
    if (rec.headers_len) {
        if (proto_hdrs_unpack(rec.headers, rec.headers_len, &m.headers) == SL_OK)
            m.present |= PF(headers);
        else /* not reached: the record passed its checksum, and its block was packed by admit */
            log_error("deliver", "message %llu: its stored headers do not parse; delivered without them",
                      (unsigned long long)rec.id);
    }
    if (rec.cost > 1)
        proto_set(&m, cost, rec.cost);
    /* a message whose publish is not yet durable waits for the commit */
    net_when when = queue_committed(&b->q, level, key) ? NET_NOW : NET_AFTER_COMMIT;
    rc = net_queue_guarded(b->net, (net_sock)c->sock, c->rid, c->rid_len, &m, l->token, when, c->fd,
                           c->fd_ino); /* its connection only */
    if (rc != SL_OK) {
        lease_free(&b->leases, l);
        queue_untake(&b->q, level, key);
        return rc;
    }
    l->pool = c->pool;
    l->started_ns = b->mono_ns;
    l->reason = (uint8_t)why;
    l->wait_ms = m.wait_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)m.wait_ms;
    b->picks[level][why]++;
    if (attempt == 1) /* publish to first delivery */
        hist_add(&b->wait_hist[level], HIST_WAIT, b->wall_ns > rec.enq_ns ? b->wall_ns - rec.enq_ns : 0);
    c->pool->inflight++;
    c->pool->delivered++;
    c->credit--;
    c->last_sent_ns = b->mono_ns;
    c->sent_recent++;
    return SL_OK;
}

/* head_cost returns the cost of the next message of level (a cached read). */
static uint32_t head_cost(bk *b, unsigned l)
{
    uint64_t enq;
    uint32_t cost = 1;
    queue_head(&b->q, l, &enq, &cost);
    return cost;
}

static void wake_at(bk *b, uint64_t at_ns)
{
    if (at_ns < b->meter_wake_ns)
        b->meter_wake_ns = at_ns;
}

/* level_view fills what the pick rule needs to know of level l. The head
 * costs a read, so it is looked up only for levels whose deadline, aging or
 * rate limits need it. A level its ceiling holds back sets when dispatch
 * should look again. */
static void level_view(bk *b, unsigned l, disp_level *d)
{
    uint64_t enq = 0, retry_ns;
    uint32_t cost = 1;
    memset(d, 0, sizeof *d);
    d->ready = queue_ready(&b->q, l);
    const disp_policy *pol = &b->policy[l];
    d->paused = pol->paused;
    d->deadline_ns = pol->deadline_ms * NS_PER_MS;
    d->aging_ns = pol->aging_ms * NS_PER_MS;
    uint64_t paused_until;
    if (d->ready && pause_level_held(b, l, &paused_until)) { /* a THROTTLED paused it (pause.c) */
        d->blocked = 1;
        wake_at(b, paused_until);
        return;
    }
    if (!d->ready || !(d->deadline_ns || d->aging_ns || meter_level_limited(&b->meter, l)))
        return;
    if (queue_head(&b->q, l, &enq, &cost))
        d->head_ns = enq;
    if (!meter_level_admits(&b->meter, l, cost, b->mono_ns, &retry_ns)) {
        d->blocked = 1;
        wake_at(b, retry_ns);
    }
    d->below_min = meter_below_min(&b->meter, l, cost, b->mono_ns);
}

static unsigned dispatch(bk *b, unsigned max)
{
    disp_level dl[PROTO_MAX_LEVELS];
    uint64_t ready = 0;
    unsigned made = 0;
    uint32_t waiting = 0; /* levels whose ready messages are in the commit that is out */
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        level_view(b, l, &dl[l]);
        ready += dl[l].ready;
    }
    if (ready == 0 || b->conns.len == 0)
        return 0;
    int progress = 1;
    while (progress && made < max) {
        progress = 0;
        size_t n = b->conns.len, start = b->conns.rr % n;
        for (size_t k = 0; k < n && made < max; k++) {
            conn *c = b->conns.all[(start + k) % n];
            b->conns.rr = (start + k) % n; /* a pass a bucket ends starts the next at this consumer */
            if (c->credit == 0 || !c->pool || !pool_open(c->pool) ||
                c->nleases >= b->cfg.consumer_max_inflight)
                continue;
            disp_reason why;
            uint32_t mask = c->pool->levels_mask & c->levels_mask, w = mask & waiting;
            if (w)
                mask &= (w & (~w + 1)) - 1; /* only the levels above the first that waits */
            int level = disp_pick(&b->disp, dl, b->cfg.levels, mask, b->wall_ns, &why);
            if (level < 0)
                continue;
            uint32_t cost = meter_wants_cost(&b->meter, (unsigned)level) ? head_cost(b, (unsigned)level) : 1;
            uint64_t retry_ns, transitions = b->meter.breaker.transitions;
            meter_verdict v = meter_admit(&b->meter, (unsigned)level, cost, b->mono_ns, &retry_ns);
            if (b->meter.breaker.transitions != transitions)
                log_info("deliver", "circuit breaker %s", breaker_name(b->meter.breaker.state));
            if (v != METER_GO) {
                wake_at(b, retry_ns);
                if (v == METER_HOLD_SINK)
                    return made;
                dl[level].blocked = 1; /* not reached: the view holds such a level back */
                progress = 1;
                continue;
            }
            int rc = deliver_one(b, c, (unsigned)level, why);
            if (rc == SL_ESTALE) { /* expired instead: pick again */
                level_view(b, (unsigned)level, &dl[level]);
                progress = 1;
                continue;
            }
            if (rc == SL_ENOTFOUND) { /* its ready ones wait for a commit */
                dl[level].blocked = 1;
                if (store_committing(b->st) && b->q.lv[level].commit_wait)
                    waiting |= UINT32_C(1) << level; /* and the levels below it, for this pass */
                progress = 1;
                continue;
            }
            if (rc != SL_OK)
                return made;
            meter_charge(&b->meter, (unsigned)level, cost, b->mono_ns);
            level_view(b, (unsigned)level, &dl[level]);
            made++;
            progress = 1;
            b->conns.rr = (start + k + 1) % n; /* ... or after the one that got the last delivery */
        }
        if (!progress)
            b->conns.rr = (start + 1) % n;
    }
    return made;
}

unsigned deliver_dispatch(bk *b, unsigned max)
{
    b->meter_wake_ns = TMR_NEVER;
    b->q.now_ns = b->mono_ns; /* the clock of the tags' buckets (queue_fair.c) */
    unsigned made = dispatch(b, max);
    for (unsigned l = 0; l < b->cfg.levels; l++) /* a tag its rate holds back: when it may go */
        if (b->q.lv[l].fair && queue_ready(&b->q, l))
            wake_at(b, queue_fair_next_ns(&b->q, l));
    return made;
}

uint64_t deliver_eta_ms(bk *b, unsigned level)
{
    uint64_t ms = meter_eta_ms(&b->meter, level, queue_ready(&b->q, level), b->q.lv[level].cost_avg,
                               b->dispatch_per_s[level]);
    if (b->q.lv[level].fair) { /* and no sooner than its limited tags' backlogs drain at their rates */
        uint64_t tags = queue_fair_limits_ms(&b->q, level, b->q.lv[level].cost_avg);
        ms = tags > ms ? tags : ms;
    }
    return ms;
}
