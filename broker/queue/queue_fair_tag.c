/*
 * queue_fair_tag.c - what the per-tag settings (tagset.h: weights, rate
 * limits, in-flight caps, pauses) do to a level served fair by tag.
 *
 * Each tenant caches the pattern that matches its tag and whether it is
 * paused, with the tagset generation it matched at; a change of the
 * settings moves the generation, and each tenant matches again at its next
 * pick (one meta read for its name, O(patterns)) and takes its new weight.
 *
 * The fair pick asks queue_fair_tag_gate about the head of the tag whose
 * turn it is. A tag held back is set aside, never in front of the others
 * (no head-of-line blocking): held by its rate it is blocked in the drr
 * until its bucket admits again (drr_next_ns, which deliver.c folds into
 * the broker's next wake); held by its cap or a pause it is blocked until a
 * settlement of its pattern (the `capped` list: a settlement releases the
 * tags of its pattern, or itself alone with --each) or a change of
 * the settings (the `paused` list too). A take charges the tag's bucket(s)
 * and counts it in flight; an unlease ends it.
 *
 * A tag its service throttled on its own (a THROTTLED with scope tag,
 * tagthrottle.h) is set aside first, in the drr until its pause ends; its
 * bucket's cut (settle_tag.c) then holds it like any rate. That question is
 * one hash probe, none while no tag is throttled.
 *
 * In-flight counts are derived from the tenants' leased counts: after a
 * change, queue_fair_tags_changed zeroes them and adds each leased tenant's
 * back (O(tenants)). A tag's depth for tag.list is counted when asked: its
 * run's keys stepped by one cursor (no record read), up to
 * QUEUE_FAIR_COUNT_MAX a tag and the caller's budget in all.
 *
 * The time a level's limited tags need (queue_fair_limits_ms, the ETA's
 * part that tags set): each bucket's backlog over its rate, the tags of a
 * shared pattern together, a tag with --each alone. Their depths are
 * counted key by key (no record is read), at most QUEUE_FAIR_ETA_KEYS keys
 * a call, so that a snapshot a second stays cheap: beyond that the figure
 * is a lower bound. Tags no rate limits are not counted at all.
 *
 * Memory: 8 bytes per tenant (the cache), 4 per set-aside tag; tags no
 * pattern matches cost nothing here.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "queue_fair_int.h"
#include "tagset.h"
#include "tagthrottle.h"

/* list_add appends tag to a list of blocked tags. SL_ENOMEM. */
static int list_add(uint32_t **v, uint32_t *n, size_t *cap, uint32_t tag)
{
    if (*n == *cap) {
        uint32_t *x = grow_array(*v, cap, (size_t)*n + 1, sizeof *x, 16);
        if (!x)
            return SL_ENOMEM;
        *v = x;
    }
    (*v)[(*n)++] = tag;
    return SL_OK;
}

/* list_release unblocks every tag of a list (each looks at its settings
 * again at its next pick) and empties it. */
static void list_release(struct queue_fair *f, uint32_t *v, uint32_t *n)
{
    for (uint32_t i = 0; i < *n; i++) {
        tenant *tn = queue_fair_find(f, v[i]);
        if (tn)
            tn->gated = 0;
        drr_unblock(&f->d, v[i]);
    }
    *n = 0;
}

/* cap_release unblocks the tags of f's capped list that a settlement of
 * tag, matched by rule, may have given room: those of the same rule (its
 * shared cap), or only tag itself (a cap per tag, --each). The others stay
 * set aside: a settlement costs O(capped tags) compares, not a pick each. */
static void cap_release(struct queue_fair *f, int rule, int each, uint32_t tag)
{
    for (uint32_t i = 0; i < f->ncapped;) {
        uint32_t t = f->capped[i];
        tenant *tn = queue_fair_find(f, t);
        if (tn && (each ? t != tag : tn->rule != rule)) {
            i++;
            continue;
        }
        if (tn)
            tn->gated = 0;
        drr_unblock(&f->d, t);
        f->capped[i] = f->capped[--f->ncapped];
    }
}

void queue_fair_tag_resolve(queue *q, struct queue_fair *f, tenant *tn)
{
    const tagset *ts = q->tags;
    if (!ts || tn->gen == ts->gen)
        return;
    tn->rule = TAGSET_NONE;
    tn->paused = 0;
    char name[PROTO_MAX_TAG + 1];
    if (tn->tag && (ts->n || ts->npaused)) {
        if (store_tag_name(q->st, tn->tag, name, sizeof name) != SL_OK)
            return; /* not cached: looked up again at the next chance (a poisoned pass, a snapshot) */
        size_t len = strlen(name);
        if (len) {
            tn->rule = (int16_t)tagset_match(ts, name, len);
            tn->paused = (uint8_t)tagset_is_paused(ts, name, len);
        }
    }
    tn->gen = ts->gen;
    if (drr_find(&f->d, tn->tag))
        drr_set_weight(&f->d, tn->tag, tagset_weight(ts, tn->rule));
}

int queue_fair_tag_gate(queue *q, struct queue_fair *f, unsigned level, tenant *tn, uint64_t cost)
{
    uint64_t until = q->throttled ? tagthrottle_paused_until(q->throttled, tn->tag, level, q->now_ns) : 0;
    if (until) /* its service throttled this tag alone: aside until the pause ends, no list to keep */
        return drr_block(&f->d, tn->tag, until) == SL_OK ? 1 : -1;
    if (!q->tags || (tn->rule == TAGSET_NONE && !tn->paused))
        return 0;
    uint64_t retry = DRR_NEVER;
    tagset_hold h = tagset_admit(q->tags, tn->rule, tn->paused, tn->tag, cost, q->now_ns, &retry);
    if (h == TAGSET_GO)
        return 0;
    int rc = h == TAGSET_RATE    ? SL_OK
             : h == TAGSET_PAUSED ? list_add(&f->paused, &f->npaused, &f->pausedcap, tn->tag)
                                  : list_add(&f->capped, &f->ncapped, &f->cappedcap, tn->tag);
    if (rc != SL_OK || drr_block(&f->d, tn->tag, h == TAGSET_RATE ? retry : DRR_NEVER) != SL_OK)
        return -1;
    if (h != TAGSET_RATE)
        tn->gated = h == TAGSET_PAUSED ? GATED_PAUSE : GATED_CAP;
    return 1;
}

void queue_fair_tag_unleased(queue *q, struct queue_fair *f, tenant *tn)
{
    if (!q->tags || tn->rule == TAGSET_NONE)
        return;
    queue_fair_tag_resolve(q, f, tn);
    tagset_release(q->tags, tn->rule, tn->tag);
    /* its cap may have room again, in any fair level the tag's pattern spans */
    int each = tn->rule >= 0 && (unsigned)tn->rule < q->tags->n && q->tags->rules[tn->rule].each;
    for (unsigned l = 0; l < q->nlevels; l++)
        if (q->lv[l].fair && q->lv[l].fair->ncapped)
            cap_release(q->lv[l].fair, tn->rule, each, tn->tag);
}

void queue_fair_tags_changed(queue *q)
{
    if (!q->tags)
        return;
    tagset_inflight_reset(q->tags);
    for (unsigned l = 0; l < q->nlevels; l++) {
        struct queue_fair *f = q->lv[l].fair;
        if (!f)
            continue;
        list_release(f, f->paused, &f->npaused);
        list_release(f, f->capped, &f->ncapped);
        for (uint32_t i = 0; i < f->n; i++) {
            tenant *tn = &f->t[i];
            if (!tn->leased)
                continue; /* the others match again at their next pick */
            queue_fair_tag_resolve(q, f, tn);
            tagset_inflight_add(q->tags, tn->rule, tn->tag, tn->leased);
        }
    }
}

uint64_t queue_fair_next_ns(const queue *q, unsigned level)
{
    const struct queue_fair *f = q->lv[level].fair;
    return f ? drr_next_ns(&f->d) : DRR_NEVER;
}

uint32_t queue_fair_tags(queue *q, unsigned level, queue_fair_tag *out, uint32_t max, uint64_t *budget)
{
    struct queue_fair *f = q->lv[level].fair;
    if (!f)
        return 0;
    for (uint32_t i = 0; i < f->n && i < max; i++) {
        tenant *tn = &f->t[i];
        queue_fair_tag *o = &out[i];
        uint64_t k, first = 0, run = 0;
        store_rec rec;
        queue_fair_tag_resolve(q, f, tn);
        *o = (queue_fair_tag){.tag = tn->tag, .rule = tn->rule, .paused = tn->paused, .leased = tn->leased,
                              .depth = tn->returned.len};
        if (tn->returned.len && store_get(q->st, level, tn->returned.v[0].id, &rec) == SL_OK)
            first = rec.enq_ns;
        /* the head of its run: one seek for its age; the run's length: its
         * keys counted by one cursor, no record read, within the budget */
        if (store_seek(q->st, level, tn->cursor, &k, &rec) == SL_OK && (k >> STORE_TAG_SHIFT) == tn->tag &&
            (!first || rec.enq_ns < first))
            first = rec.enq_ns;
        uint64_t most = *budget < QUEUE_FAIR_COUNT_MAX ? *budget : QUEUE_FAIR_COUNT_MAX;
        if (most && store_tag_count(q->st, level, tn->cursor, ((uint64_t)tn->tag + 1) << STORE_TAG_SHIFT, most,
                                    &run) == SL_OK) {
            o->depth += run;
            *budget -= run;
        }
        o->oldest_ns = first;
    }
    return f->n;
}

int queue_fair_hold(queue *q, unsigned level, uint32_t tag)
{
    struct queue_fair *f = q->lv[level].fair;
    tenant *tn = f ? queue_fair_find(f, tag) : NULL;
    if (!tn || !q->tags)
        return TAGSET_GO;
    queue_fair_tag_resolve(q, f, tn);
    uint64_t retry;
    return (int)tagset_admit(q->tags, tn->rule, tn->paused, tag, 1, q->now_ns, &retry);
}

void queue_fair_tags_free(queue *q)
{
    if (q->tags) {
        tagset_fini(q->tags);
        free(q->tags);
        q->tags = NULL;
    }
    if (q->throttled) {
        tagthrottle_fini(q->throttled);
        free(q->throttled);
        q->throttled = NULL;
    }
}

/* slowest_milli returns the long-run rate of rule's slowest window (units a
 * second x 1000; 0: no limit). */
static uint64_t slowest_milli(const tagset *ts, int rule)
{
    const tagset_rule *r = &ts->rules[rule];
    uint64_t slowest = 0;
    for (unsigned w = 0; w < r->nwin; w++) {
        uint64_t m = rl_window_rate_milli(&r->win[w]);
        if (m && (!slowest || m < slowest))
            slowest = m;
    }
    return slowest;
}

uint64_t queue_fair_limits_ms(queue *q, unsigned level, double cost_avg)
{
    struct queue_fair *f = q->lv[level].fair;
    if (!f || !q->tags || !q->tags->n)
        return 0;
    tagset *ts = q->tags;
    uint64_t *shared = calloc(ts->n, sizeof *shared); /* a shared pattern's backlog, in records */
    if (!shared)
        return 0;
    double cost = cost_avg > 0 ? cost_avg : 1, longest = 0;
    uint64_t budget = QUEUE_FAIR_ETA_KEYS;
    for (uint32_t i = 0; i < f->n && budget; i++) {
        tenant *tn = &f->t[i];
        queue_fair_tag_resolve(q, f, tn);
        uint64_t rate = tn->rule == TAGSET_NONE ? 0 : slowest_milli(ts, tn->rule), run = 0;
        if (!rate)
            continue;
        uint64_t end = ((uint64_t)tn->tag + 1) << STORE_TAG_SHIFT; /* the run's keys past its cursor: all ready */
        if (tn->run != RUN_EMPTY && store_tag_count(q->st, level, tn->cursor, end, budget, &run) != SL_OK)
            run = 0;
        budget -= run < budget ? run : budget;
        uint64_t depth = tn->returned.len + run;
        if (ts->rules[tn->rule].each) {
            double ms = (double)depth * cost * 1e6 / (double)rate;
            longest = ms > longest ? ms : longest;
        } else {
            shared[tn->rule] += depth;
        }
    }
    for (unsigned r = 0; r < ts->n; r++) {
        uint64_t rate = shared[r] ? slowest_milli(ts, (int)r) : 0;
        double ms = rate ? (double)shared[r] * cost * 1e6 / (double)rate : 0;
        longest = ms > longest ? ms : longest;
    }
    free(shared);
    return (uint64_t)longest;
}
