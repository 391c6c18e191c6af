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
 * Invariants: the rate never goes above the base by a step, never below
 * the floor (or the rate it cut) by a cut. Costs: O(1) everywhere.
 */
#include "aimd.h"

int aimd_cut(aimd *a, uint64_t *rate_milli, uint64_t base_milli, uint64_t now_ns)
{
    if (!base_milli || (a->cuts && now_ns < a->last_cut_ns + AIMD_CUT_EVERY_NS))
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
