/*
 * explain.c - "where is message N, and why is it not delivered yet?"
 *
 * explain_message looks through the leases (O(leases)), then each level from
 * its head (O(position), capped at FIND_LIMIT records), the delayed set and
 * the dead letters. It answers with a state (leased, ready, delayed, dead,
 * gone, or quarantined: found nowhere, while a level is quarantined and may
 * hold it, store_check.c), the level, the position among the ready messages (in a level
 * served fair by tag: among its tag's, O(that position) seeks), and a
 * sentence naming what holds the message back (in a fair level, its tag's
 * pause, rate limit or in-flight cap too: queue_fair_hold; and what a
 * THROTTLED for its tag alone left: a pause, a cut rate), and then what
 * holds its level or the sink now, in the order dispatch meets them
 * (hold_note): a pause a THROTTLED caused, of its level or of the sink,
 * with where it came from and the command that ends it; its level's
 * ceiling; the circuit breaker; the sink's in-flight cap; the sink's rate,
 * for the message's own cost (a cost above a bucket's burst goes when the
 * bucket is full). With the answer go the message's headers and its wait
 * (wait_ms: from its publish to now, or, leased, to its delivery): the
 * record is read once more for them (one B-tree read). An operator's
 * question, not a hot path: nothing here
 * runs during dispatch, and nothing it asks the meter changes it.
 */
#include "explain.h"

#include <stdio.h>
#include <string.h>

#include "bk.h"
#include "pause.h"
#include "settle_tag.h"
#include "store.h"
#include "tagset.h"
#include "tagthrottle.h"
#include "units.h"

#define FIND_LIMIT 10000000ULL

/* with_record adds what the record rec says of the message to r: its
 * headers (pointing into rec, which must outlive r's encoding) and, when
 * wait_ms is not given, its wait since publish. */
static void with_record(const bk *b, const store_rec *rec, proto_msg *r, int wait_given)
{
    if (rec->headers_len && proto_hdrs_unpack(rec->headers, rec->headers_len, &r->headers) == SL_OK)
        r->present |= PF(headers);
    if (!wait_given && rec->enq_ns)
        proto_set(r, wait_ms, b->wall_ns > rec->enq_ns ? (b->wall_ns - rec->enq_ns) / NS_PER_MS : 0);
}

/* why_waiting writes why a ready message at position pos of level is not out. */
static void why_waiting(const bk *b, unsigned level, uint64_t pos, char *text, size_t text_len)
{
    const char *name = b->cfg.level_names[level];
    int serving = 0, open = 0, credit = 0;
    uint64_t above = 0;
    for (unsigned i = 0; i < b->pools.n; i++) {
        const pool *p = b->pools.v[i];
        if (!((p->levels_mask >> level) & 1) || p->members == 0)
            continue;
        serving = 1;
        open |= pool_open(p);
    }
    for (size_t i = 0; i < b->conns.len; i++) {
        const conn *c = b->conns.all[i];
        credit |= c->credit > 0 && c->pool && ((c->pool->levels_mask & c->levels_mask) >> level & 1) &&
                  pool_open(c->pool);
    }
    for (unsigned l = 0; l < level; l++)
        above += b->policy[l].paused ? 0 : queue_ready(&b->q, l);
    if (b->policy[level].paused)
        snprintf(text, text_len, "level %s is paused", name);
    else if (!serving)
        snprintf(text, text_len, "no consumer pool with members serves level %s", name);
    else if (!open)
        snprintf(text, text_len, "every pool serving level %s is paused or full", name);
    else if (!credit)
        snprintf(text, text_len, "no consumer serving level %s has credit: all are busy", name);
    else if (pos > 0)
        snprintf(text, text_len, "%llu messages are ahead of it in level %s", (unsigned long long)pos, name);
    else if (above > 0)
        snprintf(text, text_len, "higher levels are served first (%llu messages ready above it)",
                 (unsigned long long)above);
    else
        snprintf(text, text_len, "it is next in level %s", name);
}

/* throttle_note appends what THROTTLEDs for tag alone (scope tag) left on
 * it to text: its pause (also in *until_ms) and its bucket's cut. */
static void throttle_note(const bk *b, const char *tag, char *text, size_t text_len, uint64_t *until_ms)
{
    size_t len = strlen(tag), n = strlen(text);
    int rule = b->q.tags && len ? tagset_match(b->q.tags, tag, len) : TAGSET_NONE;
    uint64_t paused_ms, rate_milli;
    if (settle_tag_state(b, tag, len, rule, &paused_ms, &rate_milli)) {
        n += (size_t)snprintf(text + n, text_len - n, "; tag '%s' was throttled by its service (THROTTLED for its tag)",
                              tag);
        if (paused_ms && n < text_len)
            n += (size_t)snprintf(text + n, text_len - n, ": paused for %llu ms more", (unsigned long long)paused_ms);
        if (rate_milli && n < text_len)
            n += (size_t)snprintf(text + n, text_len - n, "%s its rate cut to %.3f/s", paused_ms ? ", and" : ":",
                                  (double)rate_milli / 1000.0);
        if (paused_ms)
            *until_ms = paused_ms;
    }
}

/* ms_until returns the ms from b's clock to at_ns, rounded up. */
static uint64_t ms_until(const bk *b, uint64_t at_ns)
{
    return at_ns > b->mono_ns ? (at_ns - b->mono_ns + NS_PER_MS - 1) / NS_PER_MS : 0;
}

/* hold_note appends to text what holds level, for a message of cost, now:
 * the first reason dispatch meets (a pause after THROTTLED, the level's
 * ceiling, then the sink: its pause, the breaker, its in-flight cap, its
 * rate), and sets *until_ms to when it ends, when that is known. Reads the
 * meter, never changes it. */
static void hold_note(const bk *b, unsigned level, uint64_t cost, char *text, size_t text_len, uint64_t *until_ms)
{
    const meter *m = &b->meter;
    const meter_sink *s = &m->sink;
    const char *name = b->cfg.level_names[level];
    size_t n = strlen(text);
    char why[512];
    uint64_t at = 0, left;
    if (n >= text_len)
        return;
    if (pause_level_held(b, level, &at)) {
        left = ms_until(b, at);
        snprintf(text + n, text_len - n, "; held: level %s is paused for %llu ms more %s (sluice level resume %s "
                 "ends it)", name, (unsigned long long)left, pause_describe(b, &b->level_pause[level], why, sizeof why),
                 name);
    } else if (!meter_level_admits(m, level, cost, b->mono_ns, &at)) {
        left = ms_until(b, at);
        snprintf(text + n, text_len - n, "; held: level %s's rate ceiling admits it (cost %llu) in %llu ms%s", name,
                 (unsigned long long)cost, (unsigned long long)left,
                 cost > (m->lv[level].burst ? m->lv[level].burst : 1) ? ", once its bucket is full: a cost above "
                 "the burst goes then and leaves the bucket in debt" : "");
    } else if (s->paused_until_ns > b->mono_ns) {
        left = ms_until(b, at = s->paused_until_ns);
        snprintf(text + n, text_len - n, "; held: the sink is paused for %llu ms more %s (sluice sink resume ends "
                 "it)", (unsigned long long)left, pause_describe(b, &b->sink_pause, why, sizeof why));
    } else if (m->breaker.state != BREAKER_CLOSED) {
        at = breaker_next_ns(&m->breaker);
        snprintf(text + n, text_len - n, "; held: the circuit breaker is %s (too many deliveries failed)",
                 breaker_name(m->breaker.state));
    } else if (s->max_inflight && s->inflight >= s->max_inflight) {
        snprintf(text + n, text_len - n, "; held: the sink's in-flight cap (%llu) is reached: a settlement frees it",
                 (unsigned long long)s->max_inflight);
    } else if (!rl_series_allows(s->more_b, s->nmore, cost, b->mono_ns, &at) ||
               !rl_allows(&s->bucket, cost, b->mono_ns)) {
        uint64_t t = rl_next_ns(&s->bucket, cost, b->mono_ns);
        at = at > t ? at : t;
        left = ms_until(b, at);
        snprintf(text + n, text_len - n, "; held: the sink's rate admits it (cost %llu) in %llu ms%s",
                 (unsigned long long)cost, (unsigned long long)left,
                 cost > (s->burst ? s->burst : 1) ? ", once its bucket is full: a cost above the burst goes then and "
                 "leaves the bucket in debt" : "");
    } else {
        return;
    }
    left = ms_until(b, at);
    if (at != UINT64_MAX && left > *until_ms)
        *until_ms = left;
}

int explain_message(bk *b, uint64_t id, proto_msg *r, char *text, size_t text_len)
{
    uint64_t key, rank, due;
    unsigned level;
    store_rec rec;
    r->present |= PF(state) | PF(level) | PF(position) | PF(until_ms) | PF(msg);
    const lease *l = lease_of_id(&b->leases, id);
    if (l) {
        uint64_t left = l->deadline_ns > b->mono_ns ? (l->deadline_ns - b->mono_ns) / NS_PER_MS : 0;
        r->state = (proto_buf){"leased", 6};
        r->level = l->level;
        r->until_ms = left;
        proto_set(r, wait_ms, l->wait_ms); /* publish to this delivery */
        if (store_get(b->st, l->level, l->key, &rec) == SL_OK)
            with_record(b, &rec, r, 1);
        snprintf(text, text_len, "delivered (attempt %u) to a consumer in pool %s; lease ends in %llu ms",
                 l->attempt, l->pool ? l->pool->name : "-", (unsigned long long)left);
        r->msg = (proto_buf){text, (uint32_t)strlen(text)};
        return SL_OK;
    }
    for (level = 0; level < b->cfg.levels; level++) {
        if (queue_quarantined(&b->q, level))
            continue; /* not read: said below when it is found nowhere else */
        int rc = store_find(b->st, level, id, FIND_LIMIT, &key, &rank);
        if (rc == SL_ENOTFOUND)
            continue;
        if (rc != SL_OK)
        {
            snprintf(text, text_len, "cannot read level %s", b->cfg.level_names[level]);
            return rc;
        }
        uint64_t leased_before = lease_count_below(&b->leases, level, key); /* not waiting */
        r->state = (proto_buf){"ready", 5};
        r->level = level;
        r->position = rank - leased_before;
        uint32_t tag_id;
        uint64_t ahead;
        if (queue_fair_place(&b->q, level, key, &tag_id, &ahead, FIND_LIMIT) == SL_OK) {
            /* fair by tag: its place is in its tag's queue, which takes turns with the others */
            char tag[PROTO_MAX_TAG + 1];
            size_t n;
            r->position = ahead;
            if (store_tag_name(b->st, tag_id, tag, sizeof tag) != SL_OK)
                snprintf(tag, sizeof tag, "#%u", tag_id);
            why_waiting(b, level, 0, text, text_len);
            n = strlen(text);
            snprintf(text + n, text_len - n, "; level %s is served fair by tag: %s%s%s, %llu ahead of it in its tag",
                     b->cfg.level_names[level], tag_id ? "tag '" : "untagged", tag, tag_id ? "'" : "",
                     (unsigned long long)ahead);
            int hold = queue_fair_hold(&b->q, level, tag_id); /* its tag's own limit (tag set / tag pause) */
            n = strlen(text);
            if (hold == TAGSET_PAUSED)
                snprintf(text + n, text_len - n, "; held: tag '%s' is paused (sluice tag resume)", tag);
            else if (hold == TAGSET_RATE)
                snprintf(text + n, text_len - n, "; held: tag '%s' is at its rate limit (sluice tag list)", tag);
            else if (hold == TAGSET_INFLIGHT)
                snprintf(text + n, text_len - n, "; held: tag '%s' is at its in-flight cap", tag);
            if (tag_id)
                throttle_note(b, tag, text, text_len, &r->until_ms);
        } else {
            why_waiting(b, level, r->position, text, text_len);
            char tag[PROTO_MAX_TAG + 1] = "";
            if (b->q.throttled && b->q.throttled->n) /* its tag: one read, only when some tag is throttled */
                settle_tag_of(b, level, key, tag);
            throttle_note(b, tag, text, text_len, &r->until_ms);
        }
        uint64_t cost = 1; /* what holds its level or the sink, for its own cost */
        if (store_get(b->st, level, key, &rec) == SL_OK) {
            if (meter_wants_cost(&b->meter, level) && rec.cost)
                cost = rec.cost;
            with_record(b, &rec, r, 0);
        }
        hold_note(b, level, cost, text, text_len, &r->until_ms);
        r->msg = (proto_buf){text, (uint32_t)strlen(text)};
        return SL_OK;
    }
    if (store_delayed_find(b->st, id, &level, &due, &rec) == SL_OK) {
        uint64_t left = due > b->wall_ns ? (due - b->wall_ns) / NS_PER_MS : 0;
        with_record(b, &rec, r, 0);
        r->state = (proto_buf){"delayed", 7};
        r->level = level;
        r->until_ms = left;
        snprintf(text, text_len, "delayed: it returns to the head of its level in %llu ms",
                 (unsigned long long)left);
        r->msg = (proto_buf){text, (uint32_t)strlen(text)};
        return SL_OK;
    }
    for (level = 0; level < b->cfg.levels; level++)
        if (!queue_quarantined(&b->q, level) && store_dead_get(b->st, level, id, &rec) == SL_OK) {
            r->state = (proto_buf){"dead", 4};
            r->level = level;
            with_record(b, &rec, r, 0);
            snprintf(text, text_len, "a dead letter: %.*s", (int)rec.reason_len, rec.reason);
            r->msg = (proto_buf){text, (uint32_t)strlen(text)};
            return SL_OK;
        }
    for (level = 0; level < b->cfg.levels; level++)
        if (queue_quarantined(&b->q, level)) { /* it may be there: nothing says it is not */
            r->state = (proto_buf){"quarantined", 11};
            r->level = level;
            snprintf(text, text_len, "not in the levels the broker reads; level %s is quarantined (its stored "
                     "trees failed the broker's checks at start) and holds %llu messages it does not serve: this "
                     "one may be among them. `sluice salvage` rebuilds the store with every record that passes "
                     "its check", b->cfg.level_names[level], (unsigned long long)queue_quarantined_msgs(&b->q, level));
            r->msg = (proto_buf){text, (uint32_t)strlen(text)};
            return SL_OK;
        }
    r->state = (proto_buf){"gone", 4};
    snprintf(text, text_len, "not in the broker: acknowledged, or never published");
    r->msg = (proto_buf){text, (uint32_t)strlen(text)};
    return SL_OK;
}
