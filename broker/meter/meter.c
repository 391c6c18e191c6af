/*
 * meter.c - the sink's and the levels' limits, as pure arithmetic.
 *
 * Owns: the sink (configured and effective rate, burst, in-flight count and
 * cap, pause, the AIMD clock), each level's ceiling and guarantee, and the
 * circuit breaker. Every bucket is a GCRA bucket (rl.h): one timestamp, exact
 * at any time resolution, and a rate change never creates tokens.
 *
 * The one question: deliver.c asks meter_admit whether a level may send a
 * message of a given cost now and, if not, when to ask again; when it has
 * sent, meter_charge takes the cost from every bucket the delivery passed.
 * The checks run in a fixed order (level ceiling; then the sink: pause,
 * breaker, in-flight cap, bucket), so a hold reports the first reason. A sink
 * hold stops the whole dispatch pass rather than sending something cheaper
 * from another level: priority order is kept.
 *
 * Feedback: settle.c reports each delivery's end (meter_settle: in-flight
 * count, breaker) and THROTTLED (meter_throttled: pause, multiplicative cut);
 * cron.c calls meter_tick for the additive increase. The cut is
 * proportionate to how often the sink pushes back (aimd.c, the policy the
 * throttled tags share): a 429 after METER_CALM_NS without a cut keeps
 * 90 % and climbs back at 20 %/s (one 429 in a long clean run costs its
 * Retry-After and half a second more), a 429 within that of the last cut
 * is the classic AIMD, 70 % and 2 %/s.
 * meter_sink_reason names the state for stats. Nothing here logs: the
 * caller logs what the return values say (a cut, a breaker transition seen
 * as breaker.transitions changing).
 *
 * A sink shared by several brokers (coordinated) runs at a base of its
 * reserved rate plus the rate of the slices it leases (coord.c sets it
 * through meter_sink_lease); everywhere else the base is the configured
 * rate. AIMD works below the base. A coordinated base of 0 holds everything
 * (0 is otherwise "unlimited"), except when the shared sink has no limit
 * (METER_GRANT_UNLIMITED).
 *
 * Several windows: the sink's bucket and a level's ceiling are the
 * per-second window every limit has had (the one AIMD cuts and the shared
 * sink leases); up to METER_MORE_WINDOWS further windows ("500/min") sit in
 * series beside it, asked and charged with it (rl_series_*), each a GCRA
 * bucket of its own. AIMD and the shared sink leave them alone: they are
 * quotas over longer spans, not the pace.
 *
 * Room to grow: a tag's bucket is one more rl_bucket checked in meter_admit
 * and charged in meter_charge, as the level ceiling is (and its windows the
 * same series); a consuming process's pacing share only changes what
 * meter_sink_apply computes as the effective rate before it is handed to
 * rl_set.
 *
 * Costs: O(windows) per question and charge; O(1) per settlement and tick.
 */
#include "meter.h"

#include <string.h>

/* burst of the guarantee bucket: a guaranteed pick waits for the sink's next
 * slot, and a burst of 1 could never make that wait up; a floor may run ahead */
#define GUARANTEE_BURST 2

void meter_init(meter *m, unsigned nlevels, uint32_t breaker_threshold_pct, uint32_t breaker_window,
                uint64_t breaker_cooldown_ns)
{
    memset(m, 0, sizeof *m);
    m->nlevels = nlevels > PROTO_MAX_LEVELS ? PROTO_MAX_LEVELS : nlevels;
    breaker_init(&m->breaker, breaker_threshold_pct, breaker_window, breaker_cooldown_ns);
}

/* set_base returns the limit set for the sink: the configured rate, or
 * reserved + granted when coordinated (0, unlimited, for a shared sink with
 * no limit). */
static uint64_t set_base(const meter_sink *s)
{
    if (!s->coordinated)
        return s->rate_milli;
    return s->granted_milli == METER_GRANT_UNLIMITED ? 0 : s->reserved_milli + s->granted_milli;
}

/* base returns the rate the sink may use: the limit set, else the one
 * learned from its 429s (0: unlimited). */
static uint64_t base(const meter_sink *s)
{
    uint64_t b = set_base(s);
    return b ? b : s->learned_milli;
}

/* held_for_grant says whether a coordinated sink holds everything: no grant
 * and no reserved rate. */
static int held_for_grant(const meter_sink *s)
{
    return s->coordinated && s->granted_milli != METER_GRANT_UNLIMITED && !set_base(s);
}

uint64_t meter_sink_base(const meter *m)
{
    return base(&m->sink);
}

uint64_t meter_sink_set_base(const meter *m)
{
    return set_base(&m->sink);
}

void meter_sink_apply(meter *m, uint64_t now_ns)
{
    meter_sink *s = &m->sink;
    s->learned_milli = 0; /* set by the operator: what 429s taught is forgotten */
    s->aimd.slow_start = 0;
    s->effective_rate_milli = base(s);
    rl_set(&s->bucket, s->effective_rate_milli, s->burst, now_ns);
}

int meter_sink_lease(meter *m, uint64_t granted_milli, uint64_t now_ns)
{
    meter_sink *s = &m->sink;
    if (!s->coordinated || granted_milli == s->granted_milli)
        return 0;
    uint64_t old = base(s);
    s->granted_milli = granted_milli;
    uint64_t now_base = base(s);
    if (now_base < s->effective_rate_milli || s->effective_rate_milli >= old) {
        s->effective_rate_milli = now_base;
        rl_set(&s->bucket, now_base, s->burst, now_ns);
        if (now_base < old)
            rl_pause_until(&s->bucket, now_ns); /* no stored burst survives a shrink */
    }
    return 1;
}

void meter_level_apply(meter *m, unsigned level, uint64_t now_ns)
{
    meter_level *lv = &m->lv[level];
    rl_set(&lv->ceiling, lv->max_rate_milli, lv->burst, now_ns);
    rl_set(&lv->guarantee, lv->min_rate_milli, GUARANTEE_BURST, now_ns);
}

void meter_windows_set(meter *m, unsigned level, const rl_window *w, unsigned n, uint64_t now_ns)
{
    unsigned *count = level == METER_SINK ? &m->sink.nmore : &m->lv[level].nmore;
    rl_window *more = level == METER_SINK ? m->sink.more : m->lv[level].more;
    rl_bucket *b = level == METER_SINK ? m->sink.more_b : m->lv[level].more_b;
    unsigned k = 0;
    for (unsigned i = 0; i < n && k < METER_MORE_WINDOWS; i++) {
        if (!w[i].count_milli)
            continue;
        if (k >= *count) /* a new window starts full, as a fresh bucket */
            b[k] = (rl_bucket){0};
        more[k] = w[i];
        rl_set_window(&b[k], &more[k], now_ns);
        k++;
    }
    *count = k;
}

int meter_level_limited(const meter *m, unsigned level)
{
    return m->lv[level].max_rate_milli || m->lv[level].min_rate_milli || m->lv[level].nmore;
}

int meter_wants_cost(const meter *m, unsigned level)
{
    return m->sink.bucket.interval_ns || m->sink.nmore || meter_level_limited(m, level);
}

int meter_level_admits(const meter *m, unsigned level, uint64_t cost, uint64_t now_ns, uint64_t *retry_ns)
{
    const meter_level *lv = &m->lv[level];
    uint64_t at = now_ns;
    int ok = rl_series_allows(lv->more_b, lv->nmore, cost, now_ns, &at);
    if (lv->max_rate_milli && !rl_allows(&lv->ceiling, cost, now_ns)) {
        uint64_t t = rl_next_ns(&lv->ceiling, cost, now_ns);
        at = ok || t > at ? t : at;
        ok = 0;
    }
    if (!ok)
        *retry_ns = at;
    return ok;
}

int meter_below_min(const meter *m, unsigned level, uint64_t cost, uint64_t now_ns)
{
    const meter_level *lv = &m->lv[level];
    return lv->min_rate_milli && rl_allows(&lv->guarantee, cost, now_ns);
}

meter_verdict meter_admit(meter *m, unsigned level, uint64_t cost, uint64_t now_ns, uint64_t *retry_ns)
{
    meter_sink *s = &m->sink;
    *retry_ns = METER_NEVER;
    if (!meter_level_admits(m, level, cost, now_ns, retry_ns))
        return METER_HOLD_LEVEL;
    if (now_ns < s->paused_until_ns) {
        *retry_ns = s->paused_until_ns;
        return METER_HOLD_SINK;
    }
    if (!breaker_allows(&m->breaker, now_ns)) {
        *retry_ns = breaker_next_ns(&m->breaker); /* open: its cooldown; half-open: its probe */
        return METER_HOLD_SINK;
    }
    if (s->max_inflight && s->inflight >= s->max_inflight)
        return METER_HOLD_SINK; /* a settlement will change it */
    if (held_for_grant(s))
        return METER_HOLD_SINK; /* a grant will change it */
    uint64_t at = now_ns;
    int ok = rl_series_allows(s->more_b, s->nmore, cost, now_ns, &at);
    if (!rl_allows(&s->bucket, cost, now_ns)) {
        uint64_t t = rl_next_ns(&s->bucket, cost, now_ns);
        at = ok || t > at ? t : at;
        ok = 0;
    }
    if (!ok) {
        *retry_ns = at;
        return METER_HOLD_SINK;
    }
    return METER_GO;
}

void meter_charge(meter *m, unsigned level, uint64_t cost, uint64_t now_ns)
{
    meter_level *lv = &m->lv[level];
    /* The release tolerance: dispatch wakes for the sink's slot a little
     * late, and a release charged from the slot it was due at loses nothing
     * of the rate (rl_take_late: up to T/2 late). Only the sink's pace has
     * it: the sink is what a backlog waits on; the further windows, the
     * ceilings and the guarantee are charged as they always were. */
    rl_take_late(&m->sink.bucket, cost, now_ns);
    aimd_seen_add(&m->sink.seen, cost, now_ns);
    rl_series_take(m->sink.more_b, m->sink.nmore, cost, now_ns);
    if (lv->max_rate_milli)
        rl_take(&lv->ceiling, cost, now_ns);
    rl_series_take(lv->more_b, lv->nmore, cost, now_ns);
    if (lv->min_rate_milli)
        rl_take(&lv->guarantee, cost, now_ns);
    m->sink.inflight++;
    breaker_sent(&m->breaker);
}

void meter_settle(meter *m, meter_outcome outcome, uint64_t now_ns)
{
    if (m->sink.inflight)
        m->sink.inflight--;
    if (outcome != METER_NO_OUTCOME)
        breaker_record(&m->breaker, outcome == METER_FAILED, now_ns);
}

int meter_throttled(meter *m, uint64_t pause_ns, uint64_t now_ns)
{
    meter_sink *s = &m->sink;
    uint64_t until = now_ns + pause_ns;
    if (s->paused_until_ns <= now_ns) /* a new pause: what the bucket owes before it */
        s->unpaused_tat_ns = s->bucket.tat_ns;
    if (until > s->paused_until_ns)
        s->paused_until_ns = until;
    /* no limit set: learn one (at most once per cut) */
    if (!set_base(s) && aimd_may_cut(&s->aimd, now_ns))
        aimd_learn(&s->aimd, &s->learned_milli, &s->effective_rate_milli, aimd_seen_rate_milli(&s->seen, now_ns));
    /* multiplicative decrease, once per epoch; before the pause is written
     * into the bucket, since a rate change rescales what it owes */
    int cut = aimd_cut(&s->aimd, &s->effective_rate_milli, base(s), now_ns);
    if (cut)
        rl_set(&s->bucket, s->effective_rate_milli, s->burst, now_ns);
    rl_pause_until(&s->bucket, s->paused_until_ns); /* and no burst when it resumes */
    return cut;
}

uint64_t meter_resume(meter *m, uint64_t now_ns)
{
    meter_sink *s = &m->sink;
    uint64_t left = s->paused_until_ns > now_ns ? s->paused_until_ns - now_ns : 0;
    if (!left)
        return 0;
    s->paused_until_ns = 0;
    rl_bucket *k = &s->bucket;
    if (k->interval_ns) { /* one unit may go now, as when a pause runs out; no debt owed before it is forgiven */
        uint64_t one = now_ns + (uint64_t)(k->burst - 1) * k->interval_ns;
        uint64_t floor = s->unpaused_tat_ns > one ? s->unpaused_tat_ns : one;
        if (k->tat_ns > floor)
            k->tat_ns = floor;
    }
    return left;
}

uint64_t meter_tick(meter *m, uint64_t now_ns)
{
    meter_sink *s = &m->sink;
    if (aimd_raise(&s->aimd, &s->effective_rate_milli, base(s), now_ns))
        rl_set(&s->bucket, s->effective_rate_milli, s->burst, now_ns);
    if (!set_base(s) && aimd_probe(&s->aimd, &s->learned_milli, &s->effective_rate_milli, now_ns))
        rl_set(&s->bucket, s->effective_rate_milli, s->burst, now_ns);
    return meter_next_ns(m);
}

meter_reason meter_sink_reason(const meter *m, uint64_t now_ns)
{
    const meter_sink *s = &m->sink;
    if (!base(s) || s->effective_rate_milli >= base(s))
        return !set_base(s) && s->learned_milli ? METER_REASON_LEARNED
               : s->coordinated                 ? METER_REASON_COORDINATED
                                                : METER_REASON_CONFIGURED;
    if (aimd_cut_showing(&s->aimd, s->paused_until_ns, now_ns))
        return s->aimd.repeated ? METER_REASON_CUT_REPEATED : METER_REASON_CUT_ISOLATED;
    return METER_REASON_RECOVERING;
}

const char *meter_reason_name(meter_reason r)
{
    switch (r) {
    case METER_REASON_CONFIGURED: return "configured";
    case METER_REASON_COORDINATED: return "coordinated share";
    case METER_REASON_CUT_ISOLATED: return "cut after 429 (isolated)";
    case METER_REASON_CUT_REPEATED: return "cut after repeated 429s";
    case METER_REASON_RECOVERING: return "recovering";
    case METER_REASON_LEARNED: return "learned from 429s (no limit set)";
    }
    return "?";
}

uint64_t meter_next_ns(const meter *m)
{
    const meter_sink *s = &m->sink;
    uint64_t raise = aimd_raise_due(&s->aimd, s->effective_rate_milli, base(s));
    uint64_t probe = set_base(s) ? AIMD_NEVER : aimd_probe_due(&s->aimd, s->effective_rate_milli, s->learned_milli);
    return raise < probe ? raise : probe;
}

uint64_t meter_eta_ms(const meter *m, unsigned level, uint64_t ready, double cost_avg, double seen_per_s)
{
    const meter_level *lv = &m->lv[level];
    if (!ready)
        return 0;
    /* units per second the level can get: its ceiling and the sink bound it;
     * with neither, what it has been getting */
    double units = 0;
    if (lv->max_rate_milli)
        units = (double)lv->max_rate_milli / 1000.0;
    for (unsigned i = 0; i < lv->nmore; i++) { /* in the long run the slowest window bounds it */
        double w = (double)rl_window_rate_milli(&lv->more[i]) / 1000.0;
        if (w > 0 && (!units || w < units))
            units = w;
    }
    for (unsigned i = 0; i < m->sink.nmore; i++) {
        double w = (double)rl_window_rate_milli(&m->sink.more[i]) / 1000.0;
        if (w > 0 && (!units || w < units))
            units = w;
    }
    if (m->sink.effective_rate_milli && (!units || (double)m->sink.effective_rate_milli / 1000.0 < units))
        units = (double)m->sink.effective_rate_milli / 1000.0;
    double cost = cost_avg > 0 ? cost_avg : 1;
    double msgs_per_s = units ? units / cost : seen_per_s;
    return msgs_per_s > 0 ? (uint64_t)((double)ready / msgs_per_s * 1000.0) : 0;
}
