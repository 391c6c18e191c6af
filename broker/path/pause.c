/*
 * pause.c - the pauses a THROTTLED causes, of the sink and of levels.
 *
 * A consumer that says THROTTLED (the sink answered "too many requests")
 * asks for a rest of retry_ms. Whatever it asks, one THROTTLED pauses the
 * sink or a level for at most --max-throttle-pause (5 minutes by default):
 * a sink answering Retry-After of a day, or a consumer lying about it,
 * cannot stop the broker for longer, and the pause that is left shows in
 * `sluice sink show`, `sluice level list`, `sluice stats --json` and
 * /metrics. `sluice sink resume` and `sluice level resume` end one at once
 * (and `sluice sink set`, which applies a new limit at once, ends the
 * sink's). A tag's own pause, which holds only that tag in a fair level,
 * keeps its cap of a day (settle_tag.c): it never holds anyone else.
 *
 * What a THROTTLED may pause follows its consumer's principal (settle.c's
 * rule): one that may consume every level pauses the sink (and cuts its
 * rate); one limited to some levels (auth's levels=) pauses only those
 * levels, never the sink that the other levels share, and cuts nothing.
 * A FIFO level that cannot skip its head waits out the pause of its head's
 * tag (settle_tag.c) through the same level pause. Every pause notes where
 * it came from (the message, its level, its consumer's principal and pool,
 * the retry-after asked and the pause set), logged at most once a second
 * for the sink and once a second for the levels, the rest counted.
 *
 * The sink's pause lives in the meter (meter.sink.paused_until_ns, which
 * meter_admit reads); its origin here, in b->sink_pause. A level's pause
 * is b->level_pause[level], read by deliver.c's view of the level as a
 * level its ceiling holds: skipped, with a wake at its end.
 *
 * Costs: O(1) per THROTTLED (O(levels) for a limited consumer's); nothing
 * while nothing is paused.
 */
#include "pause.h"

#include <stdio.h>
#include <string.h>

#include "lease.h"
#include "log.h"
#include "meter.h"
#include "pool.h"
#include "units.h"

static log_limit sink_log, level_log; /* once a second each (one broker per process) */

uint64_t pause_length_ms(const bk *b, uint64_t retry_ms)
{
    uint64_t ms = retry_ms ? retry_ms : b->cfg.throttle_backoff_ms;
    return ms > b->cfg.max_throttle_pause_ms ? b->cfg.max_throttle_pause_ms : ms;
}

void pause_origin(const lease *l, uint64_t retry_ms, bk_pause *o)
{
    memset(o, 0, sizeof *o);
    o->asked_ms = retry_ms;
    o->id = l->id;
    o->level = l->level;
    if (l->owner)
        snprintf(o->principal, sizeof o->principal, "%s", l->owner->principal);
    snprintf(o->pool, sizeof o->pool, "%s", l->pool ? l->pool->name : "-");
}

const char *pause_describe(const bk *b, const bk_pause *p, char *buf, size_t len)
{
    char asked[64];
    if (p->asked_ms)
        snprintf(asked, sizeof asked, "asked %llu ms", (unsigned long long)p->asked_ms);
    else
        snprintf(asked, sizeof asked, "no retry-after: the backoff");
    snprintf(buf, len, "after THROTTLED of message %llu (level %s, pool %s, principal %s%s%s%s; %s, %s %llu ms)",
             (unsigned long long)p->id, p->level < b->cfg.levels ? b->cfg.level_names[p->level] : "?",
             p->pool[0] ? p->pool : "-", p->principal[0] ? p->principal : "-", p->tag[0] ? ", for its tag '" : "",
             p->tag, p->tag[0] ? "'" : "", asked,
             p->asked_ms && p->asked_ms > p->applied_ms ? "cut at --max-throttle-pause to" : "paused",
             (unsigned long long)p->applied_ms);
    return buf;
}

void pause_sink(bk *b, const bk_pause *o, uint64_t ms)
{
    uint64_t until = units_after_ms(b->mono_ns, ms), held = 0;
    int extends = until > b->meter.sink.paused_until_ns;
    if (meter_throttled(&b->meter, ms * NS_PER_MS, b->mono_ns)) {
        const meter_sink *k = &b->meter.sink;
        if (!meter_sink_set_base(&b->meter))
            log_info("pause", "sink rate cut to %.3f/s after THROTTLED: no limit is set, so the sink's 429s set "
                     "one, learned at %.3f/s (sluice sink set --max-rate sets yours)",
                     (double)k->effective_rate_milli / 1000.0, (double)k->learned_milli / 1000.0);
        else
            log_info("pause", "sink rate cut to %.3f/s after THROTTLED", (double)k->effective_rate_milli / 1000.0);
    }
    if (!extends)
        return;
    b->sink_pause = *o;
    b->sink_pause.until_ns = until;
    b->sink_pause.applied_ms = ms;
    if (log_limit_pass(&sink_log, b->mono_ns, NS_PER_S, &held)) {
        char why[512];
        log_info("pause", "sink paused for %llu ms %s (sluice sink resume ends it; %llu such lines held back)",
                 (unsigned long long)ms, pause_describe(b, &b->sink_pause, why, sizeof why),
                 (unsigned long long)held);
    }
}

void pause_level(bk *b, unsigned level, const bk_pause *o, uint64_t ms)
{
    uint64_t until = units_after_ms(b->mono_ns, ms), held = 0;
    bk_pause *p = &b->level_pause[level];
    if (level >= b->cfg.levels || until <= p->until_ns)
        return;
    *p = *o;
    p->until_ns = until;
    p->applied_ms = ms;
    if (log_limit_pass(&level_log, b->mono_ns, NS_PER_S, &held)) {
        char why[512];
        log_info("pause", "level %s paused for %llu ms %s (sluice level resume %s ends it; %llu such lines held "
                 "back)", b->cfg.level_names[level], (unsigned long long)ms, pause_describe(b, p, why, sizeof why),
                 b->cfg.level_names[level], (unsigned long long)held);
    }
}

int pause_level_held(const bk *b, unsigned level, uint64_t *until_ns)
{
    if (b->level_pause[level].until_ns <= b->mono_ns)
        return 0;
    *until_ns = b->level_pause[level].until_ns;
    return 1;
}

uint64_t pause_left_ms(const bk *b, unsigned level)
{
    uint64_t until = level == PAUSE_SINK ? b->meter.sink.paused_until_ns : b->level_pause[level].until_ns;
    return until > b->mono_ns ? (until - b->mono_ns + NS_PER_MS - 1) / NS_PER_MS : 0;
}

uint64_t pause_resume(bk *b, unsigned level, const char *by)
{
    uint64_t left = pause_left_ms(b, level);
    char why[512];
    if (level == PAUSE_SINK) {
        meter_resume(&b->meter, b->mono_ns);
        if (left)
            log_info("pause", "%s: the sink's pause ended with %llu ms left (it came %s)", by,
                     (unsigned long long)left, pause_describe(b, &b->sink_pause, why, sizeof why));
        memset(&b->sink_pause, 0, sizeof b->sink_pause);
        return left;
    }
    if (left)
        log_info("pause", "%s: level %s's pause ended with %llu ms left (it came %s)", by, b->cfg.level_names[level],
                 (unsigned long long)left, pause_describe(b, &b->level_pause[level], why, sizeof why));
    memset(&b->level_pause[level], 0, sizeof b->level_pause[level]);
    return left;
}
