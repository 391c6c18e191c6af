/*
 * aimd.c - the cut after a 429 and the climb back (see aimd.h), written
 * once for the sink (meter.c) and the throttled tags (tagthrottle.c).
 *
 * The cut is proportionate to how often the service pushes back: a 429
 * after AIMD_CALM_NS without a cut keeps 90 % and climbs back at 20 % of
 * the base a second (one 429 in a long clean run costs its pause and half a
 * second more); a 429 within that of the last cut is the classic AIMD, 70 %
 * and 2 % a second. At most one cut a second: the 429s of one burst are one
 * event. The climb starts a second after the cut, in steps every 100 ms.
 *
 * A sink with no limit set learns one from its 429s (aimd_learn): the
 * first takes the rate released over the second before it, which the sink
 * refused, as the limit and cuts below it; each later one learns a limit
 * 5 % below the rate that drew it. The climb back stops at the learned
 * limit, so the rate settles under the sink's; after AIMD_PROBE_AFTER_NS
 * without a 429 the limit grows slowly (2 %/s) to find a sink that now
 * allows more, and the 429 that answers the probe learns it again.
 *
 * Invariants: the rate never goes above the base by a step, never below
 * the floor (or the rate it cut) by a cut. Costs: O(1) everywhere
 * (aimd_seen: O(AIMD_SEEN_SLOTS)).
 */
#include "aimd.h"

#include <string.h>

void aimd_seen_add(aimd_seen *s, uint64_t units, uint64_t now_ns)
{
    uint64_t slot = now_ns / AIMD_SEEN_SLOT_NS;
    if (slot < s->slot)
        slot = s->slot; /* time does not go back; count it in the newest */
    for (uint64_t k = s->slot + 1, n = 0; k <= slot && n < AIMD_SEEN_SLOTS; k++, n++)
        s->units[k % AIMD_SEEN_SLOTS] = 0;
    if (slot > s->slot + AIMD_SEEN_SLOTS)
        memset(s->units, 0, sizeof s->units);
    s->slot = slot;
    s->units[slot % AIMD_SEEN_SLOTS] += units;
}

uint64_t aimd_seen_rate_milli(const aimd_seen *s, uint64_t now_ns)
{
    uint64_t slot = now_ns / AIMD_SEEN_SLOT_NS, units = 0, oldest = 0;
    for (uint64_t n = 0; n < AIMD_SEEN_SLOTS; n++) { /* the slots of the last second that hold what they counted */
        uint64_t k = slot - n;
        if (slot >= n && k <= s->slot && s->slot - k < AIMD_SEEN_SLOTS && s->units[k % AIMD_SEEN_SLOTS]) {
            units += s->units[k % AIMD_SEEN_SLOTS];
            oldest = n;
        }
    }
    /* over the time since the oldest slot that saw a release began, and at
     * least a slot: releases that began a moment ago are a burst, not a
     * second's rate */
    uint64_t span_ns = oldest * AIMD_SEEN_SLOT_NS + now_ns % AIMD_SEEN_SLOT_NS;
    if (span_ns < AIMD_SEEN_SLOT_NS)
        span_ns = AIMD_SEEN_SLOT_NS;
    return units * 1000 * NS_PER_S / span_ns;
}

void aimd_learn(aimd *a, uint64_t *learned_milli, uint64_t *rate_milli, uint64_t seen_milli)
{
    a->slow_start = !*learned_milli;
    uint64_t l = *learned_milli ? *rate_milli * AIMD_LEARN_PCT / 100 : seen_milli;
    *learned_milli = l < AIMD_FLOOR_MILLI ? AIMD_FLOOR_MILLI : l;
    if (!*rate_milli || *rate_milli > *learned_milli)
        *rate_milli = *learned_milli;
}

uint64_t aimd_probe_due(const aimd *a, uint64_t rate_milli, uint64_t learned_milli)
{
    if (!learned_milli || rate_milli < learned_milli)
        return AIMD_NEVER;
    uint64_t after_cut = a->last_cut_ns + (a->slow_start ? AIMD_CUT_EVERY_NS : AIMD_PROBE_AFTER_NS);
    uint64_t after_step = a->last_raise_ns + AIMD_RAISE_EVERY_NS;
    return after_cut > after_step ? after_cut : after_step;
}

int aimd_probe(aimd *a, uint64_t *learned_milli, uint64_t *rate_milli, uint64_t now_ns)
{
    if (aimd_probe_due(a, *rate_milli, *learned_milli) > now_ns)
        return 0;
    uint64_t step = *learned_milli / (a->slow_start ? AIMD_SLOW_START_STEP : AIMD_PROBE_STEP);
    *learned_milli += step ? step : 1;
    *rate_milli = *learned_milli;
    a->last_raise_ns = now_ns;
    return 1;
}

int aimd_may_cut(const aimd *a, uint64_t now_ns)
{
    return !a->cuts || now_ns >= a->last_cut_ns + AIMD_CUT_EVERY_NS;
}

int aimd_cut(aimd *a, uint64_t *rate_milli, uint64_t base_milli, uint64_t now_ns)
{
    if (!base_milli || !aimd_may_cut(a, now_ns))
        return 0;
    a->repeated = a->cuts && now_ns < a->last_cut_ns + AIMD_CALM_NS;
    uint64_t pct = a->repeated ? AIMD_CUT_REPEATED_PCT : AIMD_CUT_ISOLATED_PCT;
    uint64_t lower = *rate_milli * pct / 100;
    uint64_t floor = *rate_milli < AIMD_FLOOR_MILLI ? *rate_milli : AIMD_FLOOR_MILLI;
    *rate_milli = lower < floor ? floor : lower;
    a->last_cut_ns = now_ns;
    a->cuts++;
    return 1;
}

uint64_t aimd_raise_due(const aimd *a, uint64_t rate_milli, uint64_t base_milli)
{
    if (!base_milli || rate_milli >= base_milli)
        return AIMD_NEVER;
    uint64_t after_cut = a->last_cut_ns + AIMD_CUT_EVERY_NS, after_step = a->last_raise_ns + AIMD_RAISE_EVERY_NS;
    return after_cut > after_step ? after_cut : after_step;
}

int aimd_raise(aimd *a, uint64_t *rate_milli, uint64_t base_milli, uint64_t now_ns)
{
    if (aimd_raise_due(a, *rate_milli, base_milli) > now_ns)
        return 0;
    uint64_t step = base_milli / (a->repeated ? AIMD_STEP_REPEATED : AIMD_STEP_ISOLATED);
    step = step ? step : 1;
    *rate_milli = *rate_milli + step > base_milli ? base_milli : *rate_milli + step;
    a->last_raise_ns = now_ns;
    return 1;
}

int aimd_cut_showing(const aimd *a, uint64_t busy_until_ns, uint64_t now_ns)
{
    return a->cuts && (now_ns < a->last_cut_ns + AIMD_CUT_EVERY_NS || now_ns < busy_until_ns);
}

int aimd_calm(const aimd *a, uint64_t now_ns)
{
    return !a->cuts || now_ns >= a->last_cut_ns + AIMD_CALM_NS;
}
