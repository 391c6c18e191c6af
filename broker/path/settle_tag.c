/*
 * settle_tag.c - what a THROTTLED for one tag alone does (scope tag): the
 * service said "this tenant is over its limit", not "I am over mine", so
 * only that tag waits, and the sink, the other tags of the level and the
 * other levels flow on.
 *
 * Owns the glue between the table of throttled tags (q.throttled,
 * tagthrottle.h, pure) and the per-tag settings (q.tags, tagset.h):
 *
 *   pause   the tag's entry holds its pause (the retry-after, else the
 *           broker's throttle backoff; at most a day), in the levels the
 *           consumer's principal may consume. A fair level's pick sets the
 *           tag aside until then (queue_fair_tag_gate, a timed drr block:
 *           no head-of-line blocking); a FIFO level cannot skip its head,
 *           so it waits out the pause, a level pause (pause.c: at most
 *           --max-throttle-pause, like every pause that holds a whole
 *           level; seen by deliver.c as a held level): one redelivery per
 *           pause, never a tight loop against the sink.
 *   cut     in a fair level, when the tag's pattern has a rate limit, the
 *           bucket it passes is cut by aimd.h's policy (an isolated 429 a
 *           little, repeated ones the full AIMD) and climbs back on cron's
 *           tick: the tag's own with --each (paused as well, so no burst
 *           follows the pause), else the pattern's shared one (not paused:
 *           the pattern's other tags go on, only slower). A tag with no
 *           rate limit is paused only, and so is a tag throttled by a
 *           consumer limited to some levels: the bucket is every level's.
 *           Tag limits do not apply in FIFO levels, so nothing is cut there.
 *
 * An untagged message, or one whose tag cannot be read or noted (the
 * table full of tags still held, no memory), is throttled as the sink's:
 * the caller (settle.c) pauses and cuts the sink as before.
 *
 * The settings may change under a cut (tag set, tag set --off): at the
 * next tick every entry looks its pattern up again, takes its new base
 * and has its cut written into the bucket again (a change writes the
 * buckets afresh).
 *
 * Costs: a THROTTLED reads its record (one B-tree read), matches its tag
 * against the patterns (O(patterns)) and touches one entry; a tick runs
 * only when a step or a drop is due (O(entries) then), or after a change of
 * the settings. Nothing is spent while no tag is throttled.
 */
#include "settle_tag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "queue.h"
#include "store.h"
#include "tagset.h"
#include "tagthrottle.h"
#include "units.h"

static log_limit full_log; /* "cannot note tag ...": once a second (one broker per process) */
static log_limit cut_log;  /* cuts: at most once a second in all, the rest counted */

size_t settle_tag_of(bk *b, unsigned level, uint64_t key, char *tag)
{
    store_rec rec;
    tag[0] = '\0';
    int rc = store_get(b->st, level, key, &rec);
    if (rc != SL_OK) {
        log_warn("settle", "cannot read the tag of a throttled message (level %u): %s; the sink is paused instead",
                 level, proto_strerror(rc));
        return 0;
    }
    size_t len = rec.tag_len > PROTO_MAX_TAG ? PROTO_MAX_TAG : rec.tag_len;
    len = proto_utf8_prefix(rec.tag, (uint32_t)len);
    memcpy(tag, rec.tag, len);
    tag[len] = '\0';
    return len;
}

/* resolve looks e's pattern up in ts again and gives e the base its
 * bucket has now: a tag entry's own bucket (--each), a pattern entry's
 * shared one; 0 when it has no such bucket any more. */
static void resolve(tagthrottle *t, const tagset *ts, tagthrottle_entry *e)
{
    size_t len = strlen(e->name);
    int rule = e->pattern ? tagset_find(ts, e->name, len) : tagset_match(ts, e->name, len);
    uint64_t base = 0;
    if (rule != TAGSET_NONE && ts->rules[rule].nwin && ts->rules[rule].each == !e->pattern)
        base = tagset_rate_milli(ts, rule);
    e->rule = rule;
    e->gen = ts->gen;
    tagthrottle_rebase(t, e, base);
}

/* apply writes e's rate into the bucket it cuts (the window as set once
 * the rate is back at its base). */
static void apply(void *ctx, tagthrottle_entry *e)
{
    bk *b = ctx;
    tagset *ts = b->q.tags;
    if (!ts || e->rule == TAGSET_NONE || !e->base_milli || (!e->pattern && !e->id))
        return;
    if (tagset_cut(ts, e->rule, e->id, tagthrottle_cut_of(e), 0, b->mono_ns) == SL_ENOMEM)
        log_error("settle", "out of memory for the bucket of tag '%s': it goes unmetered", e->name);
}

/* cut cuts the bucket tag (id, in a fair level) passes, when its pattern
 * has a rate limit; with --each it also pauses it until until_ns. */
static void cut(bk *b, const char *tag, size_t len, uint32_t id, uint64_t until_ns)
{
    tagset *ts = b->q.tags;
    int rule = ts ? tagset_match(ts, tag, len) : TAGSET_NONE;
    if (rule == TAGSET_NONE || !ts->rules[rule].nwin)
        return; /* no rate limit: paused only */
    const tagset_rule *r = &ts->rules[rule];
    const char *name = r->each ? tag : r->pattern;
    int did = 0, err = SL_OK;
    tagthrottle_entry *e = tagthrottle_cut(b->q.throttled, !r->each, name, r->each ? len : strlen(name),
                                           tagset_rate_milli(ts, rule), b->mono_ns, &did, &err);
    uint64_t held = 0;
    if (!e) {
        if (log_limit_pass(&full_log, b->mono_ns, NS_PER_S, &held))
            log_warn("settle", "cannot note the cut of tag '%s' (%s): it is paused only (%llu such held back)", tag,
                     proto_strerror(err), (unsigned long long)held);
        return;
    }
    e->rule = rule;
    e->gen = ts->gen;
    if (tagset_cut(ts, rule, id, tagthrottle_cut_of(e), r->each ? until_ns : 0, b->mono_ns) == SL_ENOMEM)
        log_error("settle", "out of memory for the bucket of tag '%s': it goes unmetered", tag);
    if (did && log_limit_pass(&cut_log, b->mono_ns, NS_PER_S, &held))
        log_info("settle", "tag '%s' throttled by its service: %s rate cut to %.3f/s (%s 429; %llu more cuts "
                 "held back)", tag, r->each ? "its" : "its pattern's shared", (double)e->rate_milli / 1000.0,
                 e->aimd.repeated ? "repeated" : "isolated", (unsigned long long)held);
}

int settle_tag_throttled(bk *b, unsigned level, uint64_t key, const char *tag, size_t len, uint64_t retry_ms,
                         const bk_pause *origin, uint32_t allowed)
{
    queue *q = &b->q;
    queue_level *lv = &q->lv[level];
    if (!q->throttled) {
        if (!(q->throttled = malloc(sizeof *q->throttled)))
            return SL_ENOMEM;
        tagthrottle_init(q->throttled);
    }
    /* a fair level holds the tag alone (a day at most); a FIFO level waits whole (pause.c's cap) */
    uint64_t pause_ms = lv->fair ? (retry_ms ? retry_ms : b->cfg.throttle_backoff_ms) : pause_length_ms(b, retry_ms);
    if (pause_ms > SETTLE_TAG_PAUSE_MAX_MS)
        pause_ms = SETTLE_TAG_PAUSE_MAX_MS;
    uint64_t until = units_after_ms(b->mono_ns, pause_ms);
    uint32_t id = lv->fair ? (uint32_t)(key >> STORE_TAG_SHIFT) : 0;
    int err = SL_OK;
    if (!tagthrottle_pause(q->throttled, tag, len, id, allowed, until, b->mono_ns, &err)) {
        uint64_t held = 0;
        if (log_limit_pass(&full_log, b->mono_ns, NS_PER_S, &held))
            log_warn("settle", "cannot note tag '%s' as throttled (%s: %u tags held at most); the sink is paused "
                     "instead (%llu such held back)", tag, proto_strerror(err), TAGTHROTTLE_MAX,
                     (unsigned long long)held);
        return err;
    }
    lv->counters.throttled_tag++;
    if (lv->fair) {
        if (allowed == b->all_mask) /* the bucket is every level's: only one who may consume them all cuts it */
            cut(b, tag, len, id, until);
    } else { /* a FIFO level cannot skip its head: it waits */
        bk_pause o = *origin;
        snprintf(o.tag, sizeof o.tag, "%.*s", (int)proto_utf8_head(tag, (uint32_t)len, sizeof o.tag - 1), tag);
        pause_level(b, level, &o, pause_ms);
    }
    log_debug("settle", "tag '%s' (level %u) throttled by its service: paused %llu ms", tag, level,
              (unsigned long long)pause_ms);
    return SL_OK;
}

void settle_tag_tick(bk *b)
{
    tagthrottle *t = b->q.throttled;
    if (!t || !t->n)
        return;
    const tagset *ts = b->q.tags;
    if (ts && t->gen != ts->gen) { /* the settings changed: bases again, cuts written again */
        t->gen = ts->gen;
        for (uint32_t i = 0; i < t->n; i++) {
            resolve(t, ts, &t->v[i]);
            if (tagthrottle_cut_of(&t->v[i]))
                apply(b, &t->v[i]);
        }
    }
    if (b->mono_ns >= tagthrottle_next_ns(t))
        tagthrottle_tick(t, b->mono_ns, apply, b);
}

uint64_t settle_tag_next_ns(const bk *b)
{
    const tagthrottle *t = b->q.throttled;
    if (!t || !t->n)
        return UINT64_MAX;
    return b->q.tags && t->gen != b->q.tags->gen ? b->mono_ns : tagthrottle_next_ns(t);
}

int settle_tag_state(const bk *b, const char *tag, size_t len, int rule, uint64_t *paused_ms, uint64_t *rate_milli)
{
    const tagthrottle *t = b->q.throttled;
    *paused_ms = *rate_milli = 0;
    if (!t || !t->n || !len)
        return 0;
    const tagthrottle_entry *e = tagthrottle_find(t, 0, tag, len);
    if (e && e->paused_until_ns > b->mono_ns)
        *paused_ms = (e->paused_until_ns - b->mono_ns + NS_PER_MS - 1) / NS_PER_MS;
    const tagset *ts = b->q.tags;
    if (ts && rule != TAGSET_NONE && (unsigned)rule < ts->n) {
        if (ts->rules[rule].each)
            *rate_milli = e ? tagthrottle_cut_of(e) : 0;
        else
            *rate_milli = settle_tag_pattern_cut(b, ts->rules[rule].pattern);
    }
    return *paused_ms || *rate_milli;
}

uint64_t settle_tag_pattern_cut(const bk *b, const char *pattern)
{
    const tagthrottle *t = b->q.throttled;
    const tagthrottle_entry *e = t && t->n ? tagthrottle_find(t, 1, pattern, strlen(pattern)) : NULL;
    return e ? tagthrottle_cut_of(e) : 0;
}
