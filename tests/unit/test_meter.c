/*
 * test_meter.c - the meter with a hand clock: the sink bucket and the
 * level ceiling (admit, refuse, the exact retry time), the guarantee, cost
 * charged to every bucket (one above a burst passing a full bucket and
 * leaving it in debt), the in-flight cap, the pause after THROTTLED
 * (exact resume, no burst after it), AIMD (one cut a second, the climb
 * back), the breaker gate, live changes without a burst, the ETA, and
 * limits of several windows (the sink's and a level's); a dispatch that
 * wakes late for the sink's slots keeping its rate.
 * Every figure is exact: nothing here reads a clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "meter.h"

#define MS 1000000ULL
#define S 1000000000ULL

/* a meter with three unlimited levels and no breaker */
static void fresh(meter *m)
{
    meter_init(m, 3, 0, 4, S);
    meter_sink_apply(m, 0);
    for (unsigned l = 0; l < 3; l++)
        meter_level_apply(m, l, 0);
}

static void set_sink(meter *m, uint64_t rate_milli, uint32_t burst, uint64_t now)
{
    m->sink.rate_milli = rate_milli;
    m->sink.burst = burst;
    meter_sink_apply(m, now);
}

static void set_level(meter *m, unsigned l, uint64_t max_milli, uint64_t min_milli, uint32_t burst, uint64_t now)
{
    m->lv[l].max_rate_milli = max_milli;
    m->lv[l].min_rate_milli = min_milli;
    m->lv[l].burst = burst;
    meter_level_apply(m, l, now);
}

static void unlimited_admits_everything(void **state)
{
    (void)state;
    meter m;
    uint64_t retry;
    fresh(&m);
    assert_false(meter_wants_cost(&m, 0));
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(meter_admit(&m, 0, 1000, 0, &retry), METER_GO);
        meter_charge(&m, 0, 1000, 0);
    }
    assert_true(m.sink.inflight == 1000);
}

static void sink_bucket_refuses_until_exact_time(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_sink(&m, 100 * 1000, 1, 0); /* 100/s: one every 10 ms */
    assert_true(meter_wants_cost(&m, 2));
    assert_int_equal(meter_admit(&m, 2, 1, 0, &retry), METER_GO);
    meter_charge(&m, 2, 1, 0);
    assert_int_equal(meter_admit(&m, 2, 1, 9 * MS, &retry), METER_HOLD_SINK);
    assert_true(retry == 10 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, 10 * MS - 1, &retry), METER_HOLD_SINK);
    assert_int_equal(meter_admit(&m, 0, 1, 10 * MS, &retry), METER_GO);
}

static void level_ceiling_holds_only_its_level(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_level(&m, 1, 50 * 1000, 0, 2, 0); /* 50/s, burst 2: one every 20 ms */
    assert_true(meter_level_limited(&m, 1));
    assert_false(meter_level_limited(&m, 0));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(meter_admit(&m, 1, 1, 0, &retry), METER_GO);
        meter_charge(&m, 1, 1, 0);
    }
    assert_int_equal(meter_admit(&m, 1, 1, 0, &retry), METER_HOLD_LEVEL);
    assert_true(retry == 20 * MS);
    assert_false(meter_level_admits(&m, 1, 1, 20 * MS - 1, &retry));
    assert_true(retry == 20 * MS);
    assert_true(meter_level_admits(&m, 1, 1, 20 * MS, &retry));
    assert_int_equal(meter_admit(&m, 0, 1, 0, &retry), METER_GO); /* others go on */
    /* a level hold is reported before a sink hold */
    set_sink(&m, 1000, 1, 0);
    meter_charge(&m, 0, 1, 0);
    assert_int_equal(meter_admit(&m, 1, 1, 0, &retry), METER_HOLD_LEVEL);
    assert_int_equal(meter_admit(&m, 0, 1, 0, &retry), METER_HOLD_SINK);
}

static void guarantee_marks_a_level_below_min(void **state)
{
    (void)state;
    meter m;
    fresh(&m);
    set_level(&m, 2, 0, 10 * 1000, 0, 0); /* at least 10/s; its bucket's burst is 2 */
    assert_true(meter_below_min(&m, 2, 1, 0));
    assert_false(meter_below_min(&m, 1, 1, 0)); /* no guarantee */
    meter_charge(&m, 2, 1, 0);
    assert_true(meter_below_min(&m, 2, 1, 0));
    meter_charge(&m, 2, 1, 0);
    assert_false(meter_below_min(&m, 2, 1, 0)); /* served at its rate */
    assert_false(meter_below_min(&m, 2, 1, 100 * MS - 1));
    assert_true(meter_below_min(&m, 2, 1, 100 * MS));
}

static void cost_is_charged_to_every_bucket(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_sink(&m, 10 * 1000, 5, 0);
    set_level(&m, 0, 10 * 1000, 10 * 1000, 5, 0);
    assert_int_equal(meter_admit(&m, 0, 3, 0, &retry), METER_GO);
    meter_charge(&m, 0, 3, 0);
    assert_true(rl_tokens_milli(&m.sink.bucket, 0) == 2000);
    assert_true(rl_tokens_milli(&m.lv[0].ceiling, 0) == 2000);
    assert_true(m.lv[0].guarantee.tat_ns == 300 * MS);
    assert_false(meter_below_min(&m, 0, 1, 0));
    /* 3 more units: the ceiling (checked first) frees them at 100 ms */
    assert_int_equal(meter_admit(&m, 0, 3, 0, &retry), METER_HOLD_LEVEL);
    assert_true(retry == 100 * MS);
    /* another level pays only the sink */
    assert_int_equal(meter_admit(&m, 1, 2, 0, &retry), METER_GO);
    assert_int_equal(meter_admit(&m, 1, 3, 0, &retry), METER_HOLD_SINK);
    assert_true(retry == 100 * MS);
}

/* A cost above a bucket's burst goes when the bucket is full and leaves it
 * in debt, at every bucket: the sink's, a level's ceiling (and its further
 * windows). The level below then flows once the debt is paid: nothing is
 * held for good by a message's cost. */
static void cost_above_a_burst_passes_and_leaves_debt(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_sink(&m, 100 * 1000, 1, 0); /* 100/s, burst 1 */
    assert_int_equal(meter_admit(&m, 0, 2, 0, &retry), METER_GO);
    meter_charge(&m, 0, 2, 0);
    assert_int_equal(meter_admit(&m, 2, 1, 0, &retry), METER_HOLD_SINK);
    assert_true(retry == 20 * MS); /* the whole cost owed: 2 x 10 ms */
    assert_int_equal(meter_admit(&m, 2, 1, 20 * MS, &retry), METER_GO);
    meter_charge(&m, 2, 1, 20 * MS);
    /* a level ceiling of burst 2 and a window of 3/s, cost 5 */
    set_sink(&m, 0, 1, 20 * MS);
    set_level(&m, 1, 10 * 1000, 0, 2, 0);
    rl_window w = {3 * 1000, 1000, 1};
    meter_windows_set(&m, 1, &w, 1, 0);
    assert_int_equal(meter_admit(&m, 1, 5, 0, &retry), METER_GO);
    meter_charge(&m, 1, 5, 0);
    assert_int_equal(meter_admit(&m, 1, 1, 0, &retry), METER_HOLD_LEVEL);
    /* the 3/s window owes 5 units (1,667 ms), the ceiling 5 - 2 units' worth */
    assert_true(retry == 1666666665ULL);
    assert_int_equal(meter_admit(&m, 1, 1, retry, &retry), METER_GO);
}

static void inflight_cap_waits_for_a_settlement(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    m.sink.max_inflight = 2;
    meter_charge(&m, 0, 1, 0);
    meter_charge(&m, 0, 1, 0);
    assert_int_equal(meter_admit(&m, 0, 1, 5 * S, &retry), METER_HOLD_SINK);
    assert_true(retry == METER_NEVER);
    meter_settle(&m, METER_NO_OUTCOME, 5 * S);
    assert_true(m.sink.inflight == 1);
    assert_int_equal(meter_admit(&m, 0, 1, 5 * S, &retry), METER_GO);
    meter_settle(&m, METER_SUCCEEDED, 5 * S);
    meter_settle(&m, METER_SUCCEEDED, 5 * S); /* never below zero */
    assert_true(m.sink.inflight == 0);
}

static void throttled_pauses_exactly_and_resumes_without_burst(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_sink(&m, 100 * 1000, 10, 0);
    assert_int_equal(meter_throttled(&m, 500 * MS, S), 1); /* isolated: 100/s -> 90/s */
    assert_true(m.sink.effective_rate_milli == 90 * 1000);
    assert_true(m.sink.paused_until_ns == S + 500 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, S + 500 * MS - 1, &retry), METER_HOLD_SINK);
    assert_true(retry == S + 500 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, S + 500 * MS, &retry), METER_GO);
    meter_charge(&m, 0, 1, S + 500 * MS);
    /* a burst of 10 is not refilled by the pause: the next waits one interval at 90/s */
    assert_int_equal(meter_admit(&m, 0, 1, S + 500 * MS, &retry), METER_HOLD_SINK);
    assert_true(retry == S + 500 * MS + 11111111);
    /* a shorter pause never shortens one already set */
    meter_throttled(&m, 100 * MS, S + 100 * MS);
    assert_true(m.sink.paused_until_ns == S + 500 * MS);
}

static void aimd_cuts_once_a_second_and_climbs_back(void **state)
{
    (void)state;
    meter m;
    fresh(&m);
    set_sink(&m, 100 * 1000, 1, 0);
    assert_true(meter_tick(&m, 0) == METER_NEVER);
    assert_int_equal(meter_throttled(&m, 0, S), 1); /* the first: isolated */
    assert_true(m.sink.effective_rate_milli == 90000);
    assert_int_equal(meter_throttled(&m, 0, S + 999 * MS), 0); /* within the second: no cut */
    assert_true(m.sink.effective_rate_milli == 90000);
    assert_int_equal(meter_throttled(&m, 0, 2 * S), 1); /* within 10 s of the last: full AIMD */
    assert_true(m.sink.effective_rate_milli == 63000);
    assert_true(m.sink.bucket.rate_milli == 63000);
    assert_int_equal(meter_throttled(&m, 0, 3 * S), 1);
    assert_true(m.sink.effective_rate_milli == 44100);
    assert_int_equal(meter_sink_reason(&m, 3 * S + 500 * MS), METER_REASON_CUT_REPEATED);
    /* no increase within a second of the cut */
    assert_true(meter_tick(&m, 3 * S + 500 * MS) == 4 * S);
    assert_true(m.sink.effective_rate_milli == 44100);
    assert_true(meter_next_ns(&m) == 4 * S);
    /* then 2 % of the configured rate per second: 0.2/s each 100 ms */
    assert_true(meter_tick(&m, 4 * S) == 4 * S + 100 * MS);
    assert_true(m.sink.effective_rate_milli == 44300);
    assert_int_equal(meter_sink_reason(&m, 4 * S), METER_REASON_RECOVERING);
    assert_true(meter_tick(&m, 4 * S + 50 * MS) == 4 * S + 100 * MS);
    assert_true(m.sink.effective_rate_milli == 44300);
    uint64_t now = 4 * S + 100 * MS, next;
    while ((next = meter_tick(&m, now)) != METER_NEVER)
        now = next;
    assert_true(m.sink.effective_rate_milli == 100000);
    assert_true(now == 4 * S + 279 * 100 * MS); /* 280 steps of 0.2/s from 44.1/s */
    assert_int_equal(meter_sink_reason(&m, now), METER_REASON_CONFIGURED);
    /* the cut never goes below 1/s */
    set_sink(&m, 1200, 1, 40 * S);
    assert_int_equal(meter_throttled(&m, 0, 40 * S), 1);
    assert_true(m.sink.effective_rate_milli == 1080);
    assert_int_equal(meter_throttled(&m, 0, 41 * S), 1);
    assert_true(m.sink.effective_rate_milli == 1000);
}

/* One 429 after a calm run: a 10 % cut, its Retry-After obeyed exactly,
 * and 20 %/s back from the end of the cut's second; at 500/s the rate is
 * whole again 1.5 s after the 429. Another 429 more than METER_CALM_NS
 * after the last cut is isolated again. */
static void isolated_429_costs_little(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_sink(&m, 500 * 1000, 5, 0);
    uint64_t t = 60 * S; /* a minute of clean run */
    assert_int_equal(meter_sink_reason(&m, t), METER_REASON_CONFIGURED);
    assert_int_equal(meter_throttled(&m, S, t), 1);
    assert_true(m.sink.effective_rate_milli == 450 * 1000);
    assert_int_equal(meter_sink_reason(&m, t + 999 * MS), METER_REASON_CUT_ISOLATED);
    assert_int_equal(meter_admit(&m, 0, 1, t + S - 1, &retry), METER_HOLD_SINK);
    assert_true(retry == t + S); /* Retry-After: exactly */
    assert_true(meter_tick(&m, t + 500 * MS) == t + S);
    assert_true(meter_tick(&m, t + S) == t + S + 100 * MS);
    assert_true(m.sink.effective_rate_milli == 460 * 1000); /* + 500/50 */
    assert_int_equal(meter_sink_reason(&m, t + S), METER_REASON_RECOVERING);
    uint64_t now = t + S + 100 * MS, next;
    while ((next = meter_tick(&m, now)) != METER_NEVER)
        now = next;
    assert_true(now == t + S + 400 * MS); /* 5 steps of 10/s */
    assert_true(m.sink.effective_rate_milli == 500 * 1000);
    /* the next one 10 s after the last cut: isolated again */
    assert_int_equal(meter_throttled(&m, S, t + 10 * S), 1);
    assert_true(m.sink.effective_rate_milli == 450 * 1000);
    /* and one 9.999 s after that: repeated */
    assert_int_equal(meter_throttled(&m, 0, t + 20 * S - 1), 1);
    assert_true(m.sink.effective_rate_milli == 315 * 1000);
    assert_int_equal(meter_sink_reason(&m, t + 20 * S), METER_REASON_CUT_REPEATED);
    assert_string_equal(meter_reason_name(METER_REASON_CUT_ISOLATED), "cut after 429 (isolated)");
    assert_string_equal(meter_reason_name(METER_REASON_CUT_REPEATED), "cut after repeated 429s");
}

static void breaker_gate_opens_then_probes(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    meter_init(&m, 1, 50, 4, S); /* opens above 50 % failures of >= 2 outcomes */
    meter_sink_apply(&m, 0);
    meter_level_apply(&m, 0, 0);
    meter_charge(&m, 0, 1, 0);
    meter_charge(&m, 0, 1, 0);
    uint64_t t0 = m.breaker.transitions;
    meter_settle(&m, METER_FAILED, 10 * MS);
    meter_settle(&m, METER_FAILED, 20 * MS);
    assert_true(m.breaker.transitions == t0 + 1);
    assert_int_equal(m.breaker.state, BREAKER_OPEN);
    assert_int_equal(meter_admit(&m, 0, 1, 20 * MS, &retry), METER_HOLD_SINK);
    assert_true(retry == S + 20 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, S + 20 * MS - 1, &retry), METER_HOLD_SINK);
    /* after the cooldown: one probe */
    assert_int_equal(meter_admit(&m, 0, 1, S + 20 * MS, &retry), METER_GO);
    assert_int_equal(m.breaker.state, BREAKER_HALF_OPEN);
    meter_charge(&m, 0, 1, S + 20 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, S + 30 * MS, &retry), METER_HOLD_SINK);
    assert_true(retry == METER_NEVER); /* the probe's settlement decides */
    meter_settle(&m, METER_SUCCEEDED, S + 40 * MS);
    assert_int_equal(m.breaker.state, BREAKER_CLOSED);
    assert_int_equal(meter_admit(&m, 0, 1, S + 40 * MS, &retry), METER_GO);
    /* THROTTLED, REJECT and the like are no outcome */
    meter_charge(&m, 0, 1, S + 40 * MS);
    meter_charge(&m, 0, 1, S + 40 * MS);
    meter_settle(&m, METER_NO_OUTCOME, S + 50 * MS);
    meter_settle(&m, METER_NO_OUTCOME, S + 50 * MS);
    assert_int_equal(m.breaker.state, BREAKER_CLOSED);
    assert_true(m.breaker.n == 0);
}

static void live_changes_never_burst(void **state)
{
    (void)state;
    meter m;
    uint64_t retry = 0;
    fresh(&m);
    set_sink(&m, 10 * 1000, 1, 0); /* one every 100 ms */
    meter_charge(&m, 0, 1, 0);
    /* raised to 1000/s half-way: the half interval still owed is carried at the new pace */
    set_sink(&m, 1000 * 1000, 1, 50 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, 50 * MS, &retry), METER_HOLD_SINK);
    assert_true(retry == 50 * MS + 500 * 1000);
    /* a change resets a cut rate to the configured one */
    meter_throttled(&m, 0, 2 * S);
    assert_true(m.sink.effective_rate_milli == 900 * 1000);
    set_sink(&m, 1000 * 1000, 1, 2 * S);
    assert_true(m.sink.effective_rate_milli == 1000 * 1000);
    /* a level's ceiling lowered while in debt */
    set_level(&m, 1, 100 * 1000, 0, 1, 0); /* one every 10 ms */
    meter_charge(&m, 1, 1, 0);
    set_level(&m, 1, 10 * 1000, 0, 1, 5 * MS); /* 5 ms owed at 10 ms/unit = 50 ms at 100 ms/unit */
    assert_false(meter_level_admits(&m, 1, 1, 5 * MS, &retry));
    assert_true(retry == 55 * MS);
}

static void eta_follows_the_binding_rate(void **state)
{
    (void)state;
    meter m;
    fresh(&m);
    assert_true(meter_eta_ms(&m, 0, 0, 1, 100) == 0);
    assert_true(meter_eta_ms(&m, 0, 100, 2, 20) == 5000); /* no limits: as served, 20/s */
    assert_true(meter_eta_ms(&m, 0, 100, 2, 0) == 0);     /* unknown */
    set_sink(&m, 10 * 1000, 1, 0);
    assert_true(meter_eta_ms(&m, 0, 100, 2, 20) == 20000); /* 10 units/s at cost 2 */
    assert_true(meter_eta_ms(&m, 0, 100, 0, 20) == 10000); /* cost unknown: 1 */
    set_level(&m, 0, 4 * 1000, 0, 1, 0);
    assert_true(meter_eta_ms(&m, 0, 100, 2, 20) == 50000); /* the ceiling binds */
    meter_throttled(&m, 0, S);                              /* sink now 9/s: the ceiling still binds */
    assert_true(meter_eta_ms(&m, 0, 100, 2, 20) == 50000);
    assert_true(meter_eta_ms(&m, 1, 90, 1, 20) == 10000);   /* other levels: the cut sink */
}

/* shared makes m a fresh shared sink of burst 10, with no reserve and no
 * grant. */
static void shared(meter *m)
{
    fresh(m);
    m->sink.coordinated = 1;
    m->sink.burst = 10;
    meter_sink_apply(m, 0);
}

/* A shared sink runs at reserved + granted; a shrink applies at once with no
 * stored burst; with neither, nothing goes (0 is not "unlimited" here). */
static void shared_sink_runs_at_reserved_plus_granted(void **state)
{
    (void)state;
    meter m;
    uint64_t retry;
    shared(&m);
    assert_int_equal(meter_admit(&m, 0, 1, 0, &retry), METER_HOLD_SINK); /* no reserve, no grant */
    m.sink.reserved_milli = 100000;
    meter_sink_apply(&m, 0);
    assert_int_equal(m.sink.effective_rate_milli, 100000);
    assert_true(meter_sink_lease(&m, 900000, 0));
    assert_int_equal(m.sink.effective_rate_milli, 1000000); /* a grow applies at once */
    assert_false(meter_sink_lease(&m, 900000, 0));
    /* idle for a second: the bucket holds its burst of 10 */
    assert_int_equal(rl_tokens_milli(&m.sink.bucket, S), 10000);
    assert_true(meter_sink_lease(&m, 0, S));
    assert_int_equal(m.sink.effective_rate_milli, 100000);
    /* the shrink kept no burst: one now, the next 10 ms later */
    assert_int_equal(meter_admit(&m, 0, 1, S, &retry), METER_GO);
    meter_charge(&m, 0, 1, S);
    assert_int_equal(meter_admit(&m, 0, 1, S, &retry), METER_HOLD_SINK);
    assert_true(retry >= S + 10 * MS - 1 && retry <= S + 20 * MS);
}

/* tick_until runs meter_tick at every 10 ms up to until. */
static void tick_until(meter *m, uint64_t from, uint64_t until)
{
    for (uint64_t t = from; t <= until; t += 10 * MS)
        meter_tick(m, t);
}

/* A sink with no limit set learns one from its 429s: the first takes the
 * rate released over the second before it (100/s here) and cuts below it;
 * the limit then grows fast (slow start) until the next 429, which learns a
 * limit 5 % below the rate that drew it; that one grows only after 30 s
 * without a 429, slowly; a limit set by the operator forgets it all. */
static void a_sink_without_a_limit_learns_one_from_its_429s(void **state)
{
    (void)state;
    meter m;
    uint64_t retry;
    fresh(&m);
    meter_sink_apply(&m, 0);
    for (uint64_t t = 10 * MS; t <= S; t += 10 * MS) { /* 100 released evenly in the first second */
        assert_int_equal(meter_admit(&m, 0, 1, t, &retry), METER_GO);
        meter_charge(&m, 0, 1, t);
    }
    assert_int_equal(meter_throttled(&m, 0, S), 1);
    assert_true(m.sink.learned_milli >= 95000 && m.sink.learned_milli <= 105000); /* the slots of a second */
    assert_int_equal(m.sink.effective_rate_milli, m.sink.learned_milli * 90 / 100); /* isolated */
    assert_int_equal(meter_sink_base(&m), m.sink.learned_milli);
    assert_int_equal(meter_sink_set_base(&m), 0);
    assert_string_equal(meter_reason_name(meter_sink_reason(&m, S)), "cut after 429 (isolated)");

    uint64_t first = m.sink.learned_milli;
    tick_until(&m, S, 4 * S); /* back at it 1.5 s after the cut, then growing about 22 %/s */
    assert_true(m.sink.learned_milli > first * 5 / 4);
    assert_int_equal(m.sink.effective_rate_milli, m.sink.learned_milli);
    assert_string_equal(meter_reason_name(meter_sink_reason(&m, 4 * S)), "learned from 429s (no limit set)");

    uint64_t drew = m.sink.effective_rate_milli;
    assert_int_equal(meter_throttled(&m, 0, 4 * S), 1); /* at a paced rate: the slow start ends */
    assert_int_equal(m.sink.learned_milli, drew * 95 / 100);
    assert_int_equal(m.sink.effective_rate_milli, m.sink.learned_milli * 70 / 100); /* repeated */
    uint64_t second = m.sink.learned_milli;
    tick_until(&m, 4 * S, 33 * S); /* climbs back; no growth within 30 s of the cut */
    assert_int_equal(m.sink.learned_milli, second);
    assert_int_equal(m.sink.effective_rate_milli, second);
    tick_until(&m, 33 * S, 36 * S); /* then 2 %/s */
    assert_true(m.sink.learned_milli > second && m.sink.learned_milli < second * 110 / 100);

    meter_sink_apply(&m, 36 * S); /* sink set: the operator's word */
    assert_int_equal(m.sink.learned_milli, 0);
    assert_int_equal(meter_sink_base(&m), 0);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(meter_admit(&m, 0, 1, 36 * S, &retry), METER_GO);
        meter_charge(&m, 0, 1, 36 * S);
    }
}

/* A shared sink with no limit (none set, or removed) is unlimited: 1,000
 * go at one instant; a limit set again applies at once, without a burst
 * beyond the bucket's; a grant that lapses holds everything again. */
static void a_shared_sink_without_a_limit_is_unlimited(void **state)
{
    (void)state;
    meter m;
    uint64_t retry;
    shared(&m);
    assert_int_equal(meter_admit(&m, 0, 1, 0, &retry), METER_HOLD_SINK);
    assert_true(meter_sink_lease(&m, METER_GRANT_UNLIMITED, 0));
    assert_int_equal(meter_sink_base(&m), 0);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(meter_admit(&m, 0, 1, S, &retry), METER_GO);
        meter_charge(&m, 0, 1, S);
    }
    assert_true(meter_sink_lease(&m, 400000, S)); /* a limit again: 400/s, burst 10 */
    int went = 0;
    for (int i = 0; i < 100 && meter_admit(&m, 0, 1, S, &retry) == METER_GO; i++, went++)
        meter_charge(&m, 0, 1, S);
    assert_true(went <= 10);
    assert_true(meter_sink_lease(&m, 0, 2 * S)); /* the grant lapsed */
    assert_int_equal(meter_admit(&m, 0, 1, 3 * S, &retry), METER_HOLD_SINK);
}

/* Dispatch wakes for the sink's slot a little late (here 0.2 ms at 2,000/s,
 * a slot of 0.5 ms; up to half a slot is kept): the sink keeps its rate, 1,000 releases in 0.5 s, and
 * a level's ceiling beside it is charged as before (no tolerance: its
 * release loses the lateness). */
static void late_dispatch_keeps_the_sink_rate(void **state)
{
    (void)state;
    meter m;
    uint64_t retry, now = 0, first = 0;
    fresh(&m);
    set_sink(&m, 2000 * 1000, 1, 0);
    for (int i = 0; i < 1000; i++) {
        if (i) {
            assert_int_equal(meter_admit(&m, 1, 1, now, &retry), METER_HOLD_SINK);
            now = retry + 200 * 1000; /* woken 0.2 ms after the slot */
        }
        assert_int_equal(meter_admit(&m, 1, 1, now, &retry), METER_GO);
        meter_charge(&m, 1, 1, now);
        first = i ? first : now;
    }
    assert_true(now - first == 999 * 500 * 1000 + 200 * 1000); /* the slots kept: exactly the rate */
    set_level(&m, 0, 100 * 1000, 0, 1, now); /* a ceiling of 100/s: 10 ms */
    uint64_t t0 = now + 10 * MS;
    assert_true(meter_level_admits(&m, 0, 1, t0, &retry));
    meter_charge(&m, 0, 1, t0);
    assert_false(meter_level_admits(&m, 0, 1, t0 + 10 * MS - 1, &retry));
    meter_charge(&m, 0, 1, t0 + 10 * MS + 4 * MS); /* 4 ms late */
    assert_false(meter_level_admits(&m, 0, 1, t0 + 24 * MS - 1, &retry));
    assert_true(retry == t0 + 24 * MS);
}

/* The sink's per-second rate and a further window in series: held by
 * whichever is tighter, retry at the latest, charged to both. */
static void sink_windows_hold_together(void **state)
{
    (void)state;
    meter m;
    uint64_t retry;
    fresh(&m);
    set_sink(&m, 5 * 1000, 1, 0);                           /* 5/s burst 1 */
    rl_window w = {8 * 1000, 10000, 8};                      /* 8/10s burst 8 */
    meter_windows_set(&m, METER_SINK, &w, 1, 0);
    assert_int_equal(m.sink.nmore, 1);
    assert_true(meter_wants_cost(&m, 0));
    uint64_t now = 0;
    for (int i = 0; i < 9; i++) { /* 5/s paces the first nine */
        assert_int_equal(meter_admit(&m, 0, 1, now, &retry), METER_GO);
        meter_charge(&m, 0, 1, now);
        meter_settle(&m, METER_SUCCEEDED, now);
        assert_int_equal(meter_admit(&m, 0, 1, now, &retry), METER_HOLD_SINK);
        now = retry;
    }
    /* then 8/10s holds: nine units put its TAT at 11.25 s, and one more fits
     * within its 10 s of burst at 11.25 + 1.25 - 10 = 2.5 s */
    assert_true(now == 2500 * MS);
    assert_int_equal(meter_admit(&m, 0, 1, now - 1, &retry), METER_HOLD_SINK);
    assert_true(retry == 2500 * MS);
    /* the window's tokens: none left, a whole one at its time */
    assert_int_equal(rl_tokens_milli(&m.sink.more_b[0], 2500 * MS), 1000);
    /* removing the window leaves the rate alone */
    meter_windows_set(&m, METER_SINK, NULL, 0, now);
    assert_int_equal(m.sink.nmore, 0);
    assert_int_equal(meter_admit(&m, 0, 1, now, &retry), METER_GO);
}

/* A level's further windows hold only that level, with the retry at the
 * latest window; a changed window carries its debt (no burst). */
static void level_windows_hold_only_their_level(void **state)
{
    (void)state;
    meter m;
    uint64_t retry;
    fresh(&m);
    rl_window w[2] = {{2 * 1000, 1000, 2}, {3 * 1000, 60000, 3}}; /* 2/s burst 2, 3/min burst 3 */
    meter_windows_set(&m, 1, w, 2, 0);
    assert_true(meter_level_limited(&m, 1));
    assert_false(meter_level_limited(&m, 0));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(meter_admit(&m, 1, 1, 0, &retry), METER_GO);
        meter_charge(&m, 1, 1, 0);
    }
    assert_int_equal(meter_admit(&m, 1, 1, 0, &retry), METER_HOLD_LEVEL);
    assert_true(retry == 500 * MS); /* 2/s: one more at 0.5 s; 3/min still has one */
    assert_int_equal(meter_admit(&m, 0, 1, 0, &retry), METER_GO); /* level 0 is not held */
    meter_charge(&m, 1, 1, 500 * MS);
    assert_int_equal(meter_admit(&m, 1, 1, 500 * MS, &retry), METER_HOLD_LEVEL);
    /* 3/min spent: its TAT is 60 s, so the next fits its 60 s of burst at
     * 60 + 20 - 60 = 20 s */
    assert_true(retry == 20000 * MS);
    /* the window changed to 6/min: the 59.5 s of debt become 29.75 s (TAT
     * 30.25 s), so the next fits at 30.25 + 10 - 30 = 10.25 s: no burst */
    rl_window six[2] = {{2 * 1000, 1000, 2}, {6 * 1000, 60000, 3}};
    meter_windows_set(&m, 1, six, 2, 500 * MS);
    assert_int_equal(meter_admit(&m, 1, 1, 500 * MS, &retry), METER_HOLD_LEVEL);
    assert_true(retry == 10250 * MS);
    /* the ETA follows the slowest window in the long run: 6/min, 60 ready */
    assert_true(meter_eta_ms(&m, 1, 60, 1.0, 0) == 600000);
    /* a zero window is dropped; a fourth window is not kept */
    rl_window many[5] = {{1000, 1000, 1}, {0, 1000, 1}, {1000, 2000, 1}, {1000, 3000, 1}, {1000, 4000, 1}};
    meter_windows_set(&m, 2, many, 5, 0);
    assert_int_equal(m.lv[2].nmore, METER_MORE_WINDOWS);
    assert_true(m.lv[2].more[1].period_ms == 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unlimited_admits_everything),
        cmocka_unit_test(sink_bucket_refuses_until_exact_time),
        cmocka_unit_test(level_ceiling_holds_only_its_level),
        cmocka_unit_test(guarantee_marks_a_level_below_min),
        cmocka_unit_test(cost_is_charged_to_every_bucket),
        cmocka_unit_test(cost_above_a_burst_passes_and_leaves_debt),
        cmocka_unit_test(inflight_cap_waits_for_a_settlement),
        cmocka_unit_test(throttled_pauses_exactly_and_resumes_without_burst),
        cmocka_unit_test(isolated_429_costs_little),
        cmocka_unit_test(aimd_cuts_once_a_second_and_climbs_back),
        cmocka_unit_test(breaker_gate_opens_then_probes),
        cmocka_unit_test(live_changes_never_burst),
        cmocka_unit_test(eta_follows_the_binding_rate),
        cmocka_unit_test(shared_sink_runs_at_reserved_plus_granted),
        cmocka_unit_test(a_shared_sink_without_a_limit_is_unlimited),
        cmocka_unit_test(a_sink_without_a_limit_learns_one_from_its_429s),
        cmocka_unit_test(late_dispatch_keeps_the_sink_rate),
        cmocka_unit_test(sink_windows_hold_together),
        cmocka_unit_test(level_windows_hold_only_their_level),
    };
    return cmocka_run_group_tests_name("meter", tests, NULL, NULL);
}
