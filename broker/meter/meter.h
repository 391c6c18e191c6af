/*
 * meter.h - what may go to the sink, and when: the sink's bucket and its
 * in-flight cap, each level's ceiling and guarantee, the pause after
 * THROTTLED, AIMD, the circuit breaker, and the ETA. Pure: every function
 * takes now_ns (monotonic) and nothing here reads a clock, does I/O or logs;
 * callers log what the return values (and breaker.transitions) tell them.
 *
 * Rates are milli-units per second (rate_milli: 1500 = 1.5 units/s); a
 * message costs `cost` units (1 unless its publisher said otherwise).
 */
#ifndef SLUICE_METER_H
#define SLUICE_METER_H

#include <stdint.h>

#include "aimd.h"
#include "breaker.h"
#include "proto.h"
#include "rl.h"
#include "units.h"

#define METER_NEVER UINT64_MAX
/* The sink's answer to a 429 is aimd.h's policy (shared with the tags). */
#define METER_CUT_EVERY_NS AIMD_CUT_EVERY_NS
#define METER_RAISE_EVERY_NS AIMD_RAISE_EVERY_NS
#define METER_CALM_NS AIMD_CALM_NS
#define METER_CUT_ISOLATED_PCT AIMD_CUT_ISOLATED_PCT
#define METER_CUT_REPEATED_PCT AIMD_CUT_REPEATED_PCT
#define METER_STEP_ISOLATED AIMD_STEP_ISOLATED
#define METER_STEP_REPEATED AIMD_STEP_REPEATED

/* Why the sink's effective rate is where it is (meter_sink_reason). */
typedef enum meter_reason {
    METER_REASON_CONFIGURED = 0, /* at the configured rate */
    METER_REASON_COORDINATED,    /* at reserved + granted of a shared sink */
    METER_REASON_CUT_ISOLATED,   /* cut a little after one 429 in a calm run */
    METER_REASON_CUT_REPEATED,   /* cut after 429s closer than METER_CALM_NS */
    METER_REASON_RECOVERING,     /* climbing back after a cut */
    METER_REASON_LEARNED,        /* no limit set: at the limit learned from 429s */
} meter_reason;

/* A limit is its per-second window (the rate and burst every limit had
 * from the start, which AIMD and the shared sink act on) and up to
 * METER_MORE_WINDOWS further windows in series ("500/min"). */
#define METER_MORE_WINDOWS (RL_MAX_WINDOWS - 1)
_Static_assert(RL_MAX_WINDOWS == PROTO_MAX_WINDOWS, "a limit's windows must fit its rows on the wire");

/* A level's limits: the ceiling (at most max_rate, burst) and the guarantee
 * (a level served below min_rate is picked first). Settings are persisted by
 * settings.c; buckets live in memory. */
typedef struct meter_level {
    uint64_t max_rate_milli;  /* ceiling; 0 = none (persisted) */
    uint64_t min_rate_milli;  /* guarantee; 0 = none (persisted) */
    uint32_t burst;           /* the ceiling's burst (persisted) */
    rl_bucket ceiling;        /* max_rate_milli, burst */
    rl_bucket guarantee;      /* min_rate_milli, burst 2 */
    unsigned nmore;           /* further windows of the ceiling, in series with it (persisted) */
    rl_window more[METER_MORE_WINDOWS];
    rl_bucket more_b[METER_MORE_WINDOWS];
} meter_level;

/* The sink: the throttled service every delivery ends up calling. */
typedef struct meter_sink {
    uint64_t rate_milli;           /* configured; 0 = unlimited (persisted) */
    uint32_t burst;                /* (persisted) */
    uint64_t max_inflight;         /* most deliveries out at once; 0 = no cap (persisted) */
    uint64_t effective_rate_milli; /* the rate in use: cut by THROTTLED, raised back (AIMD) */
    uint64_t inflight;             /* deliveries out now */
    rl_bucket bucket;              /* effective_rate_milli, burst */
    uint64_t paused_until_ns;      /* no delivery before (THROTTLED) */
    uint64_t unpaused_tat_ns;      /* the bucket's TAT when the pause began: the debt it owed then */
    aimd aimd;                     /* when the last cut and step were, how hard the last cut was */
    int coordinated;               /* shared with other brokers: the rate is reserved + granted */
    uint64_t reserved_milli;       /* coordinated: the rate this broker may always use */
    uint64_t granted_milli;        /* coordinated: the rate its leased slices add (coord.c) */
    uint64_t learned_milli;        /* no limit set: the limit learned from 429s (aimd_learn); 0: none */
    aimd_seen seen;                /* what was released lately, to learn from */
    unsigned nmore;                /* further windows, in series with the bucket (persisted) */
    rl_window more[METER_MORE_WINDOWS];
    rl_bucket more_b[METER_MORE_WINDOWS];
} meter_sink;

typedef struct meter {
    meter_sink sink;
    breaker breaker;               /* stops deliveries when too many fail */
    unsigned nlevels;
    meter_level lv[PROTO_MAX_LEVELS];
} meter;

/* What meter_admit decided. */
typedef enum meter_verdict {
    METER_GO = 0,      /* send it now (then meter_charge) */
    METER_HOLD_LEVEL,  /* this level's ceiling holds it; other levels may go */
    METER_HOLD_SINK,   /* the sink takes nothing now: paused, breaker, in-flight cap or bucket */
} meter_verdict;

/* How a delivery ended, for the breaker. */
typedef enum meter_outcome {
    METER_SUCCEEDED,   /* ACK */
    METER_FAILED,      /* NACK, expired lease */
    METER_NO_OUTCOME,  /* THROTTLED, REJECT, never sent, consumer left or gone */
} meter_outcome;

/* meter_init sets up nlevels unlimited levels, an unlimited sink and the
 * breaker's policy (threshold 0: it never opens). */
void meter_init(meter *m, unsigned nlevels, uint32_t breaker_threshold_pct, uint32_t breaker_window,
                uint64_t breaker_cooldown_ns);

/* meter_sink_apply makes the sink bucket follow m->sink's settings at now_ns
 * (after a change): the effective rate goes back to the configured one, and
 * debt already owed carries over, so a change never lets a burst through. */
void meter_sink_apply(meter *m, uint64_t now_ns);

/* A grant of a shared sink that has no limit: the sink is then unlimited. */
#define METER_GRANT_UNLIMITED UINT64_MAX

/* meter_sink_lease sets a coordinated sink's granted rate at now_ns: the
 * sink then runs at reserved + granted (0 there holds every delivery;
 * METER_GRANT_UNLIMITED: no limit at all). A
 * shrink applies at once and keeps no stored burst; a grow applies at once
 * unless the rate is still cut after THROTTLED (then the additive increase
 * climbs to it). Returns 1 when the rate changed. */
int meter_sink_lease(meter *m, uint64_t granted_milli, uint64_t now_ns);

/* meter_sink_base returns the rate AIMD climbs back to: the configured
 * rate, or reserved + granted when coordinated, or, with neither, the
 * limit learned from the sink's 429s (0: unlimited, or, when coordinated,
 * nothing granted). */
uint64_t meter_sink_base(const meter *m);

/* meter_sink_set_base returns the limit set for the sink, not learned: the
 * configured rate, or reserved + granted when coordinated (0: none). */
uint64_t meter_sink_set_base(const meter *m);

/* meter_level_apply makes level's buckets follow its settings at now_ns,
 * without a burst. */
void meter_level_apply(meter *m, unsigned level, uint64_t now_ns);

/* meter_windows_set sets the further windows of a limit (the sink's when
 * level is METER_SINK, else level's ceiling's) to w[0..n) at now_ns (n at
 * most METER_MORE_WINDOWS; windows with count 0 are dropped); as with every
 * change, debt already owed carries over and no burst is let through. */
#define METER_SINK UINT32_MAX
void meter_windows_set(meter *m, unsigned level, const rl_window *w, unsigned n, uint64_t now_ns);

/* meter_level_limited tells whether level has a ceiling or a guarantee (and
 * so needs the cost of its head). */
int meter_level_limited(const meter *m, unsigned level);

/* meter_wants_cost tells whether a delivery from level needs its real cost
 * (some bucket it passes is limited); otherwise any cost will do. */
int meter_wants_cost(const meter *m, unsigned level);

/* meter_level_admits tells whether level's ceiling lets a message of cost go
 * at now_ns; when not, *retry_ns is when it will. */
int meter_level_admits(const meter *m, unsigned level, uint64_t cost, uint64_t now_ns, uint64_t *retry_ns);

/* meter_below_min tells whether level is served below its guarantee: a
 * message of cost would still fit its guarantee bucket at now_ns. */
int meter_below_min(const meter *m, unsigned level, uint64_t cost, uint64_t now_ns);

/* meter_admit answers "may level send a message of cost now; if not, when":
 * METER_GO, or a hold with *retry_ns the earliest time the answer may change
 * (METER_NEVER when only a settlement can change it: the in-flight cap, or a
 * half-open breaker's probe). It may move an open breaker whose cooldown is
 * over to half-open (breaker.transitions counts it). */
meter_verdict meter_admit(meter *m, unsigned level, uint64_t cost, uint64_t now_ns, uint64_t *retry_ns);

/* meter_charge takes cost from every bucket a delivery from level passes
 * (sink, ceiling, guarantee), counts it in flight and tells the breaker a
 * delivery (a probe, when half-open) went out. */
void meter_charge(meter *m, unsigned level, uint64_t cost, uint64_t now_ns);

/* meter_settle ends one delivery in flight and feeds the breaker its
 * outcome. The breaker's state may change (breaker.transitions). */
void meter_settle(meter *m, meter_outcome outcome, uint64_t now_ns);

/* meter_throttled pauses the sink until now_ns + pause_ns (the later of that
 * and any pause already set) and cuts the effective rate, at most once per
 * METER_CUT_EVERY_NS, never below 1/s (aimd_cut): to METER_CUT_ISOLATED_PCT when no cut
 * came in the METER_CALM_NS before (an isolated 429), else to
 * METER_CUT_REPEATED_PCT (full AIMD). When the pause ends, the bucket lets
 * one unit at a time through: no burst. Returns 1 when it cut the rate. */
int meter_throttled(meter *m, uint64_t pause_ns, uint64_t now_ns);

/* meter_resume ends the sink's pause at now_ns (an operator's sink
 * resume): dispatch may go at once, one unit at a time as after a pause
 * that ran out, and the debt the bucket owed before the pause is kept.
 * Returns the ns the pause had left (0: none). The rate stays as it is
 * (cut or not); meter_sink_apply restores it. */
uint64_t meter_resume(meter *m, uint64_t now_ns);

/* meter_tick is the additive increase: once METER_CUT_EVERY_NS has passed
 * since the last cut, the effective rate climbs each METER_RAISE_EVERY_NS by
 * base / METER_STEP_ISOLATED after an isolated cut (20 %/s), or by base /
 * METER_STEP_REPEATED after a repeated one (2 %/s), up to the base (the
 * configured rate, or reserved + granted, or the learned limit); a learned
 * limit the rate has reached then grows (aimd_probe). Returns when it next
 * has work (METER_NEVER: none). */
uint64_t meter_tick(meter *m, uint64_t now_ns);

/* meter_sink_reason says why the effective rate is where it is at now_ns:
 * cut (isolated or repeated) from the cut until METER_CUT_EVERY_NS after it
 * or the end of the pause, whichever is later; recovering while below the
 * base after that; else configured (or coordinated, or learned). */
meter_reason meter_sink_reason(const meter *m, uint64_t now_ns);

/* meter_reason_name returns the words stats show for r ("configured",
 * "cut after 429 (isolated)", ...): a static string. */
const char *meter_reason_name(meter_reason r);

/* meter_next_ns returns when meter_tick next has work (METER_NEVER: none). */
uint64_t meter_next_ns(const meter *m);

/* meter_eta_ms returns the time to drain ready messages of level, whose
 * average cost is cost_avg: at the rate its ceiling and the sink allow, or,
 * with neither, at seen_per_s messages a second (0 when unknown). */
uint64_t meter_eta_ms(const meter *m, unsigned level, uint64_t ready, double cost_avg, double seen_per_s);

#endif /* SLUICE_METER_H */
