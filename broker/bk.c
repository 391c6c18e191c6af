/*
 * bk.c - the broker object and the work that spans modules.
 *
 * Owns: configuration, the data-directory lock, and the modules (store,
 * queue, conns, leases, net). Lifecycle: bk_open (lock, store, view, bind),
 * then the loop calls bk_tick and bk_dispatch once per pass, then bk_close.
 *
 * Dispatch walks the consumers with credit round-robin, one delivery per
 * consumer per round, asking disp_pick which level to serve. A delivery reads
 * the record, creates a lease and queues the DELIVER; it writes nothing to
 * the store (see queue.h), so its cost is one B-tree read. Ending a lease
 * without an ACK charges the attempt (except for a delivery that never left),
 * and buries the message once max_attempts deliveries have been charged.
 *
 * Deliveries leave before the pass's commit unless the message was published
 * in that very pass (store_key_committed): nobody may consume what was never
 * confirmed.
 *
 * Costs: dispatch O(consumers + deliveries x levels) per pass; tick
 * O(expired leases x log leases + consumers) per heartbeat.
 */
#include "bk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fnmatch.h>

#include "settings.h"
#include "log.h"

#define NS_PER_MS 1000000ULL

static int lock_dir(const char *dir)
{
    char path[4200];
    if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
        log_error("bk", "cannot create data directory %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/sluiced.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        log_error("bk", "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        log_error("bk", "another sluiced is using %s (%s is locked)", dir, path);
        close(fd);
        return -1;
    }
    return fd;
}

int bk_open(const conf *cfg, uint64_t mono_ns, uint64_t wall_ns, bk **out)
{
    store_level_info info[PROTO_MAX_LEVELS];
    uint32_t prefix = 0;
    int rc = SL_ENOMEM;
    bk *b = calloc(1, sizeof *b);
    if (!b)
        return SL_ENOMEM;
    b->cfg = *cfg;
    b->mono_ns = b->started_mono_ns = mono_ns;
    b->wall_ns = wall_ns;
    b->all_mask = (uint32_t)((1ULL << cfg->levels) - 1);
    b->lock_fd = lock_dir(cfg->data_dir);
    if (b->lock_fd < 0) {
        rc = SL_EINVAL;
        goto free_b;
    }
    store_cfg scfg = {.dir = cfg->data_dir, .levels = cfg->levels, .map_bytes = cfg->map_bytes};
    rc = store_open(&scfg, &b->st, info);
    if (rc != SL_OK)
        goto unlock;
    queue_open(&b->q, b->st, cfg->levels, info);
    if (getrandom(&prefix, sizeof prefix, 0) != sizeof prefix)
        prefix = (uint32_t)(wall_ns ^ (uint64_t)getpid());
    rc = SL_ENOMEM;
    if (conn_table_init(&b->conns) != 0)
        goto queue_close;
    if (lease_table_init(&b->leases, prefix) != SL_OK)
        goto conns_fini;
    net_cfg ncfg = {.endpoint = cfg->listen, .max_body = cfg->max_body, .heartbeat_ms = (int)cfg->heartbeat_ms};
    pool_table_init(&b->pools);
    disp_init(&b->disp, cfg->overdue_share_pct);
    rc = settings_load(b);
    if (rc != SL_OK)
        goto pools_fini;
    rc = net_open(&ncfg, &b->net);
    if (rc != SL_OK)
        goto pools_fini;
    b->next_hb_ns = mono_ns + cfg->heartbeat_ms * NS_PER_MS;
    b->meter_wake_ns = TMR_NEVER;
    breaker_init(&b->sink.breaker, cfg->breaker_threshold_pct, cfg->breaker_window,
                 cfg->breaker_cooldown_ms * NS_PER_MS);
    bk_sink_apply(b);
    for (unsigned l = 0; l < cfg->levels; l++)
        bk_level_apply(b, l);

    uint64_t total = 0, delayed = 0;
    for (unsigned l = 0; l < cfg->levels; l++) {
        total += info[l].count;
        delayed += b->q.lv[l].delayed;
    }
    log_info("bk", "data %s: %llu messages ready, %llu delayed, in %u levels; listening on %s",
             cfg->data_dir, (unsigned long long)total, (unsigned long long)delayed, cfg->levels,
             cfg->listen);
    *out = b;
    return SL_OK;

pools_fini:
    pool_table_fini(&b->pools);
    lease_table_fini(&b->leases);
conns_fini:
    conn_table_fini(&b->conns);
queue_close:
    queue_close(&b->q);
    store_close(&b->st);
unlock:
    close(b->lock_fd);
free_b:
    free(b);
    return rc;
}

void bk_close(bk **bp)
{
    bk *b = bp ? *bp : NULL;
    if (!b)
        return;
    net_close(&b->net);
    pool_table_fini(&b->pools);
    lease_table_fini(&b->leases);
    conn_table_fini(&b->conns);
    queue_close(&b->q);
    store_close(&b->st);
    close(b->lock_fd);
    free(b);
    *bp = NULL;
}

void bk_reply(bk *b, const uint8_t *rid, size_t rid_len, const proto_msg *m, net_when when)
{
    if (net_queue(b->net, rid, rid_len, m, 0, when) != SL_OK)
        b->tx_failed++;
}

void bk_reply_error(bk *b, const uint8_t *rid, size_t rid_len, int has_seq, uint64_t seq, int code,
                    const char *msg, net_when when)
{
    proto_msg m;
    proto_init(&m, PROTO_ERROR);
    if (has_seq)
        proto_set(&m, seq, seq);
    proto_set(&m, code, (uint64_t)code);
    proto_set_str(&m, PROTO_F_msg, msg, strnlen(msg, PROTO_MAX_STR));
    if (code == SL_ENOSPC)
        proto_set(&m, retry_ms, 1000);
    bk_reply(b, rid, rid_len, &m, when);
}

/* ---- dispatch ---- */

static int deliver_one(bk *b, conn *c, unsigned level, disp_reason why)
{
    uint64_t key;
    store_rec rec;
    int rc = queue_take(&b->q, level, &key, &rec);
    if (rc != SL_OK) {
        if (rc != SL_ENOTFOUND)
            log_error("bk", "cannot read the head of level %u: %s", level, proto_strerror(rc));
        return rc;
    }
    if (rec.expires_ns && rec.expires_ns <= b->wall_ns) { /* outlived its time to live in flight */
        rc = queue_bury(&b->q, level, key, "expired: its time to live ran out", b->wall_ns);
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
    if (rec.tag_len)
        proto_set_str(&m, PROTO_F_tag, rec.tag, rec.tag_len);
    if (rec.cost > 1)
        proto_set(&m, cost, rec.cost);
    proto_set(&m, released_ns, b->mono_ns); /* the time it is charged to the buckets */
    /* a message whose publish is not yet durable waits for the commit */
    net_when when = store_key_committed(b->st, level, key) ? NET_NOW : NET_AFTER_COMMIT;
    rc = net_queue(b->net, c->rid, c->rid_len, &m, l->token, when);
    if (rc != SL_OK) {
        lease_free(&b->leases, l);
        queue_untake(&b->q, level, key);
        return rc;
    }
    l->pool = c->pool;
    l->started_ns = b->mono_ns;
    l->reason = (uint8_t)why;
    b->picks[level][why]++;
    c->pool->inflight++;
    c->pool->delivered++;
    c->credit--;
    b->sink.inflight++;
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

/* level_view fills what the pick rule needs to know of level l. The head
 * costs a read, so it is looked up only for levels whose deadline, aging or
 * rate limits need it. A level its ceiling holds back sets when dispatch
 * should look again. */
static void level_view(bk *b, unsigned l, disp_level *d)
{
    queue_level *lv = &b->q.lv[l];
    uint64_t enq = 0;
    uint32_t cost = 1;
    memset(d, 0, sizeof *d);
    d->ready = queue_ready(&b->q, l);
    d->paused = lv->paused;
    d->deadline_ns = lv->deadline_ms * NS_PER_MS;
    d->aging_ns = lv->aging_ms * NS_PER_MS;
    if (!d->ready || !(d->deadline_ns || d->aging_ns || lv->max_rate_milli || lv->min_rate_milli))
        return;
    if (queue_head(&b->q, l, &enq, &cost))
        d->head_ns = enq;
    if (lv->max_rate_milli && !rl_allows(&lv->ceiling, cost, b->mono_ns)) {
        d->blocked = 1;
        uint64_t at = rl_next_ns(&lv->ceiling, cost, b->mono_ns);
        if (at < b->meter_wake_ns)
            b->meter_wake_ns = at;
    }
    d->below_min = lv->min_rate_milli && rl_allows(&lv->guarantee, cost, b->mono_ns);
}

/* sink_admits tells whether the sink may take a message of cost now; when it
 * may not, it sets when to look again. Holding back here, rather than
 * sending something cheaper from another level, keeps priority order. */
static int sink_admits(bk *b, uint32_t cost)
{
    bk_sink *s = &b->sink;
    if (b->mono_ns < s->paused_until_ns) {
        b->meter_wake_ns = s->paused_until_ns;
        return 0;
    }
    breaker_state was = s->breaker.state;
    int allowed = breaker_allows(&s->breaker, b->mono_ns);
    if (s->breaker.state != was)
        log_info("bk", "circuit breaker %s", breaker_name(s->breaker.state));
    if (!allowed) {
        if (breaker_next_ns(&s->breaker) < b->meter_wake_ns)
            b->meter_wake_ns = breaker_next_ns(&s->breaker);
        return 0; /* an open breaker waits out its cooldown; a half-open one its probe */
    }
    if (s->max_inflight && s->inflight >= s->max_inflight)
        return 0; /* an ack will wake the loop */
    if (!rl_allows(&s->bucket, cost, b->mono_ns)) {
        uint64_t at = rl_next_ns(&s->bucket, cost, b->mono_ns);
        if (at < b->meter_wake_ns)
            b->meter_wake_ns = at;
        return 0;
    }
    return 1;
}

/* charge takes cost from every bucket a delivery from level passes. */
static void charge(bk *b, unsigned level, uint32_t cost)
{
    queue_level *lv = &b->q.lv[level];
    rl_take(&b->sink.bucket, cost, b->mono_ns);
    if (lv->max_rate_milli)
        rl_take(&lv->ceiling, cost, b->mono_ns);
    if (lv->min_rate_milli)
        rl_take(&lv->guarantee, cost, b->mono_ns);
}

unsigned bk_dispatch(bk *b, unsigned max)
{
    disp_level dl[PROTO_MAX_LEVELS];
    uint64_t ready = 0;
    unsigned made = 0;
    b->meter_wake_ns = TMR_NEVER;
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
            if (c->credit == 0 || !c->pool || !pool_open(c->pool) ||
                c->nleases >= b->cfg.consumer_max_inflight)
                continue;
            disp_reason why;
            int level = disp_pick(&b->disp, dl, b->cfg.levels, c->pool->levels_mask & c->levels_mask,
                                  b->wall_ns, &why);
            if (level < 0)
                continue;
            uint32_t cost = b->sink.bucket.interval_ns ? head_cost(b, (unsigned)level) : 1;
            if (!sink_admits(b, cost))
                return made;
            int rc = deliver_one(b, c, (unsigned)level, why);
            if (rc == SL_ESTALE) { /* expired instead: pick again */
                level_view(b, (unsigned)level, &dl[level]);
                progress = 1;
                continue;
            }
            if (rc != SL_OK)
                return made;
            charge(b, (unsigned)level, cost);
            breaker_sent(&b->sink.breaker);
            level_view(b, (unsigned)level, &dl[level]);
            made++;
            progress = 1;
        }
        b->conns.rr = (start + 1) % n;
    }
    return made;
}

/* ---- ending leases ---- */

static const char *end_name(bk_end why)
{
    switch (why) {
    case BK_END_NACK: return "negatively acknowledged";
    case BK_END_EXPIRED: return "lease expired";
    case BK_END_GONE: return "consumer disconnected";
    case BK_END_UNSENT: return "not sent";
    case BK_END_LEFT: return "consumer left";
    case BK_END_THROTTLED: return "throttled";
    case BK_END_REJECTED: return "rejected";
    }
    return "?";
}

/* release ends l's accounting in its pool and frees it. */
static void release(bk *b, lease *l)
{
    pool *p = l->pool;
    if (b->sink.inflight)
        b->sink.inflight--;
    if (p) {
        p->inflight--;
        p->settled++;
        p->held_ns += b->mono_ns - l->started_ns;
    }
    lease_free(&b->leases, l);
}

/* outcome feeds the circuit breaker, logging its transitions. */
static void outcome(bk *b, int failed)
{
    breaker *br = &b->sink.breaker;
    breaker_state was = br->state;
    breaker_record(br, failed, b->mono_ns);
    if (br->state != was)
        log_warn("bk", "circuit breaker %s (%u of the last %u deliveries failed)", breaker_name(br->state),
                 br->failures, br->n);
}

int bk_ack(bk *b, lease *l)
{
    int rc = queue_settle(&b->q, l->level, l->key);
    release(b, l);
    outcome(b, 0);
    return rc == SL_ENOTFOUND ? SL_OK : rc;
}

void bk_end_lease(bk *b, lease *l, bk_end why, uint64_t delay_ms)
{
    unsigned level = l->level;
    uint64_t key = l->key, id = l->id;
    uint32_t attempt = l->attempt;
    unsigned picked = l->reason;
    conn *owner = l->owner;
    int rc;
    release(b, l);
    queue_level *lv = &b->q.lv[level];
    if (why == BK_END_UNSENT || why == BK_END_LEFT) {
        b->picks[level][picked]--; /* as dispatched is: it never counted as a delivery */
        if (queue_untake(&b->q, level, key) != SL_OK)
            log_error("bk", "out of memory returning message %llu; it is delivered after restart",
                      (unsigned long long)id);
        if (owner && why == BK_END_UNSENT)
            owner->credit++;
        return;
    }
    if (why == BK_END_EXPIRED)
        lv->expired++;
    else if (why == BK_END_NACK)
        lv->nacked++;
    if (why == BK_END_EXPIRED || why == BK_END_NACK)
        outcome(b, 1);
    if (attempt >= b->cfg.max_attempts) {
        char reason[160];
        snprintf(reason, sizeof reason, "%u attempts used; last: %s", attempt, end_name(why));
        rc = queue_bury(&b->q, level, key, reason, b->wall_ns);
        log_info("bk", "message %llu (level %u) moved to dead letters: %s", (unsigned long long)id,
                 level, reason);
    } else {
        uint64_t due = delay_ms ? b->wall_ns + delay_ms * NS_PER_MS : 0;
        rc = queue_return(&b->q, level, key, attempt, due);
    }
    if (rc != SL_OK)
        log_error("bk", "cannot return message %llu to level %u: %s", (unsigned long long)id, level,
                  proto_strerror(rc));
}

void bk_throttled(bk *b, lease *l, uint64_t retry_ms)
{
    bk_sink *s = &b->sink;
    unsigned level = l->level;
    uint64_t key = l->key;
    release(b, l);
    b->q.lv[level].throttled++;
    if (queue_requeue(&b->q, level, key) != SL_OK)
        log_error("bk", "out of memory returning a throttled message; it is delivered after restart");
    uint64_t until = b->mono_ns + (retry_ms ? retry_ms : b->cfg.throttle_backoff_ms) * NS_PER_MS;
    if (until > s->paused_until_ns)
        s->paused_until_ns = until;
    /* multiplicative decrease, once per epoch of a second; before the pause is
     * written into the bucket, since a rate change rescales what it owes */
    if (s->rate_milli && b->mono_ns >= s->last_cut_ns + 1000 * NS_PER_MS) {
        uint64_t cut = s->effective_milli * 7 / 10;
        s->effective_milli = cut < 1000 ? 1000 : cut;
        s->last_cut_ns = b->mono_ns;
        rl_set(&s->bucket, s->effective_milli, s->burst, b->mono_ns);
        log_info("bk", "sink throttled: pausing %llu ms, rate now %.3f/s",
                 (unsigned long long)(retry_ms ? retry_ms : b->cfg.throttle_backoff_ms),
                 (double)s->effective_milli / 1000.0);
    }
    rl_pause_until(&s->bucket, s->paused_until_ns); /* and no burst when it resumes */
}

/* raise_sink is the additive increase: 2 % of the configured rate per
 * second, once a second has passed since the last cut. */
static void raise_sink(bk *b)
{
    bk_sink *s = &b->sink;
    if (!s->rate_milli || s->effective_milli >= s->rate_milli || b->mono_ns < s->last_cut_ns + 1000 * NS_PER_MS ||
        b->mono_ns < s->last_raise_ns + 100 * NS_PER_MS)
        return;
    uint64_t step = s->rate_milli / 500 ? s->rate_milli / 500 : 1;
    s->effective_milli = s->effective_milli + step > s->rate_milli ? s->rate_milli : s->effective_milli + step;
    s->last_raise_ns = b->mono_ns;
    rl_set(&s->bucket, s->effective_milli, s->burst, b->mono_ns);
}

void bk_sink_apply(bk *b)
{
    bk_sink *s = &b->sink;
    s->effective_milli = s->rate_milli;
    rl_set(&s->bucket, s->rate_milli, s->burst, b->mono_ns);
}

void bk_level_apply(bk *b, unsigned level)
{
    queue_level *lv = &b->q.lv[level];
    rl_set(&lv->ceiling, lv->max_rate_milli, lv->burst, b->mono_ns);
    /* burst 2: a guaranteed pick waits for the sink's next slot, and a
     * burst of 1 could never make that wait up; a floor may run ahead */
    rl_set(&lv->guarantee, lv->min_rate_milli, 2, b->mono_ns);
}

uint64_t bk_eta_ms(const bk *b, unsigned level)
{
    const queue_level *lv = &b->q.lv[level];
    uint64_t ready = queue_ready(&b->q, level);
    if (!ready)
        return 0;
    /* units per second the level can get: its ceiling and the sink bound it;
     * with neither, what it has been getting */
    double units = 0;
    if (lv->max_rate_milli)
        units = (double)lv->max_rate_milli / 1000.0;
    if (b->sink.effective_milli && (!units || (double)b->sink.effective_milli / 1000.0 < units))
        units = (double)b->sink.effective_milli / 1000.0;
    double cost = lv->cost_avg > 0 ? lv->cost_avg : 1;
    double msgs_per_s = units ? units / cost : b->dispatch_per_s[level];
    return msgs_per_s > 0 ? (uint64_t)((double)ready / msgs_per_s * 1000.0) : 0;
}

void bk_reject(bk *b, lease *l, const char *reason, size_t reason_len)
{
    char text[PROTO_MAX_STR + 64];
    unsigned level = l->level;
    uint64_t key = l->key, id = l->id;
    snprintf(text, sizeof text, "rejected by the consumer (attempt %u): %.*s", l->attempt, (int)reason_len,
             reason_len ? reason : "no reason given");
    release(b, l);
    if (queue_bury(&b->q, level, key, text, b->wall_ns) != SL_OK)
        log_error("bk", "cannot move message %llu to dead letters", (unsigned long long)id);
    else
        log_info("bk", "message %llu (level %u) moved to dead letters: %s", (unsigned long long)id, level, text);
}

void bk_drop_conn(bk *b, conn *c, bk_end why)
{
    if (c->nleases)
        log_info("bk", "consumer in pool %s %s with %u deliveries outstanding; returning them",
                 c->pool ? c->pool->name : "-", why == BK_END_LEFT ? "left" : "gone", c->nleases);
    while (c->leases)
        bk_end_lease(b, c->leases, why, 0);
    bk_join_pool(b, c, NULL);
    conn_remove(&b->conns, c);
}

void bk_pool_changed(bk *b, pool *p)
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

void bk_join_pool(bk *b, conn *c, pool *p)
{
    pool *old = c->pool;
    if (old == p)
        return;
    if (old)
        old->members--;
    c->pool = p;
    if (p)
        p->members++;
    bk_pool_changed(b, old);
    bk_pool_changed(b, p);
}

int bk_level_rule(const bk *b, const char *tag)
{
    for (unsigned i = 0; i < b->cfg.ntag_rules; i++)
        if (fnmatch(b->cfg.tag_rules[i].pattern, tag, 0) == 0)
            return (int)b->cfg.tag_rules[i].level;
    return -1;
}

void bk_send_failed(void *ctx, const uint8_t *rid, size_t rid_len, uint64_t token, int err)
{
    bk *b = ctx;
    b->tx_failed++;
    if (token) {
        lease *l = lease_find(&b->leases, token);
        if (l) {
            /* a consumer with a full queue keeps its credit spent, so that the
             * broker does not spin re-offering to a peer that is not reading */
            conn *owner = l->owner;
            bk_end_lease(b, l, BK_END_UNSENT, 0);
            if (err == SL_EFULL && owner && owner->credit)
                owner->credit--;
        }
    }
    if (err == SL_ECONNECT) {
        conn *c = conn_find(&b->conns, rid, rid_len);
        if (c)
            bk_drop_conn(b, c, BK_END_GONE);
    }
}

/* ---- timers ---- */

/* is_leased tells whether the record at key of level is out with a
 * consumer. O(leases): expiries are rare next to deliveries. */
static int is_leased(const bk *b, unsigned level, uint64_t key)
{
    for (size_t i = 0; i < b->leases.nbuckets; i++)
        for (const lease *l = b->leases.buckets[i]; l; l = l->hnext)
            if (l->level == level && l->key == key)
                return 1;
    return 0;
}

/* expire_due moves messages whose time to live ran out to the dead letters,
 * wherever they wait: queued (even mid-queue) or delayed. One out with a
 * consumer is left to its delivery, and checked again if it comes back. */
static void expire_due(bk *b)
{
    static const char reason[] = "expired: its time to live ran out";
    store_ttl_item it;
    for (unsigned n = 0; n < 1000 && store_ttl_next(b->st, b->wall_ns, &it) == SL_OK; n++) {
        if (it.where == STORE_TTL_DELAYED) {
            unsigned level;
            if (store_bury_delayed(b->st, it.loc, it.id, reason, b->wall_ns, &level) == SL_OK) {
                b->q.lv[level].delayed--;
                b->q.lv[level].dead++;
            }
            continue;
        }
        store_rec rec;
        if (it.where >= b->cfg.levels || is_leased(b, it.where, it.loc) ||
            store_get(b->st, it.where, it.loc, &rec) != SL_OK || rec.id != it.id)
            continue; /* gone already, or moved: a stale index entry */
        if (queue_expire(&b->q, it.where, it.loc, reason, b->wall_ns) == SL_OK)
            log_debug("bk", "message %llu expired", (unsigned long long)it.id);
    }
}

/* sample refreshes arrival rates per level and each pool's measurements and
 * recommended size, every 250 ms; an autoscaled pool that changes size tells
 * its members and is persisted. */
static void sample(bk *b)
{
    if (b->sample_ns && b->mono_ns < b->sample_ns + 250 * NS_PER_MS)
        return;
    double dt = b->sample_ns ? (double)(b->mono_ns - b->sample_ns) / 1e9 : 0;
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        uint64_t enq = b->q.lv[l].enqueued, disp = b->q.lv[l].dispatched;
        if (dt > 0) {
            b->arrival_per_s[l] = 0.3 * (double)(enq - b->sample_enqueued[l]) / dt + 0.7 * b->arrival_per_s[l];
            b->dispatch_per_s[l] = 0.3 * (double)(disp - b->sample_dispatched[l]) / dt + 0.7 * b->dispatch_per_s[l];
        }
        b->sample_enqueued[l] = enq;
        b->sample_dispatched[l] = disp;
    }
    b->sample_ns = b->mono_ns;
    for (unsigned i = 0; i < b->pools.n; i++) {
        pool *p = b->pools.v[i];
        double arrival = 0;
        uint64_t backlog = 0;
        for (unsigned l = 0; l < b->cfg.levels; l++)
            if ((p->levels_mask >> l) & 1) {
                arrival += b->arrival_per_s[l];
                backlog += queue_ready(&b->q, l);
            }
        if (pool_sample(p, b->mono_ns, arrival, backlog)) {
            log_info("bk", "autoscale: pool %s size now %u", p->name, p->size);
            settings_save_pool(b, p);
            bk_pool_changed(b, p);
        }
    }
}

void bk_tick(bk *b)
{
    lease *l;
    for (unsigned n = 0; n < 10000 && (l = lease_expired(&b->leases, b->mono_ns)); n++) {
        log_debug("bk", "lease of message %llu expired", (unsigned long long)l->id);
        bk_end_lease(b, l, BK_END_EXPIRED, 0);
    }
    queue_release_due(&b->q, b->wall_ns, 10000);
    if (b->mono_ns >= b->next_sweep_ns) {
        store_idem_expire(b->st, b->wall_ns, 1000);
        expire_due(b);
        b->next_sweep_ns = b->mono_ns + 1000 * NS_PER_MS;
    }
    sample(b);
    raise_sink(b);
    if (b->mono_ns >= b->next_hb_ns) {
        proto_msg m;
        proto_init(&m, PROTO_PING);
        for (size_t i = 0; i < b->conns.len; i++)
            net_queue(b->net, b->conns.all[i]->rid, b->conns.all[i]->rid_len, &m, 0, NET_NOW);
        b->next_hb_ns = b->mono_ns + b->cfg.heartbeat_ms * NS_PER_MS;
    }
}

void bk_between_commits(bk *b)
{
    if (b->mono_ns >= b->next_measure_ns) { /* exact now and then, estimated in between */
        b->next_measure_ns = b->mono_ns + 100 * NS_PER_MS;
        store_measure(b->st);
    }
    uint64_t map = store_map_bytes(b->st), used = store_used_bytes(b->st);
    if (used < map / 4 * 3)
        return; /* under 75 % */
    if (map >= b->cfg.map_max_bytes)
        return;
    uint64_t grown = map * 2 > b->cfg.map_max_bytes ? b->cfg.map_max_bytes : map * 2;
    struct statvfs fs;
    if (statvfs(b->cfg.data_dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < grown - used) {
        log_warn("bk", "the map is %llu%% used but the disk has no room to grow it; publishes stop at %u%%",
                 (unsigned long long)(used * 100 / map), b->cfg.soft_limit_pct);
        return;
    }
    store_grow(b->st, grown);
}

size_t bk_consumers(const bk *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->conns.len; i++)
        n += b->conns.all[i]->consumer;
    return n;
}

int bk_commit_due(bk *b)
{
    if (!store_dirty(b->st))
        return net_queued(b->net, NET_AFTER_COMMIT) > 0;
    if (!b->dirty_since_ns)
        b->dirty_since_ns = b->mono_ns;
    return net_queued(b->net, NET_AFTER_COMMIT) > 0 ||
           b->mono_ns >= b->dirty_since_ns + b->cfg.ack_flush_ms * NS_PER_MS;
}

uint64_t bk_next_wake(bk *b)
{
    uint64_t wake = b->next_hb_ns;
    if (b->meter_wake_ns < wake)
        wake = b->meter_wake_ns;
    if (b->sink.effective_milli < b->sink.rate_milli && b->mono_ns + 100 * NS_PER_MS < wake)
        wake = b->mono_ns + 100 * NS_PER_MS; /* additive increase */
    if (b->dirty_since_ns && b->dirty_since_ns + b->cfg.ack_flush_ms * NS_PER_MS < wake)
        wake = b->dirty_since_ns + b->cfg.ack_flush_ms * NS_PER_MS;
    uint64_t lease_ns = lease_next_deadline(&b->leases);
    if (lease_ns < wake)
        wake = lease_ns;
    if (b->q.next_due_ns != TMR_NEVER) {
        uint64_t due = b->q.next_due_ns <= b->wall_ns ? b->mono_ns
                                                      : b->mono_ns + (b->q.next_due_ns - b->wall_ns);
        if (due < wake)
            wake = due;
    }
    return wake;
}
