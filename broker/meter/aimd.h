/*
 * aimd.h - the answer to "too many requests", as pure arithmetic: how far
 * a rate is cut after a 429 and how fast it climbs back (additive
 * increase, multiplicative decrease). One policy, used for the sink
 * (meter.c) and for each tag a consumer reports throttled on its own
 * (tagthrottle.c). Pure: time is a parameter; no clock, no I/O, no logging.
 *
 * The caller keeps the rate in use and its base (the rate it climbs back
 * to); an aimd keeps when the last cut and the last step were, and how hard
 * the last cut was. Rates are units per second x 1000.
 */
#ifndef SLUICE_AIMD_H
#define SLUICE_AIMD_H

#include <stdint.h>

#include "units.h"

#define AIMD_NEVER UINT64_MAX
#define AIMD_CUT_EVERY_NS NS_PER_S             /* at most one multiplicative cut per second */
#define AIMD_RAISE_EVERY_NS (100 * NS_PER_MS) /* additive steps each 100 ms */
#define AIMD_CALM_NS (10 * NS_PER_S)          /* a 429 with no cut this long before it is isolated */
#define AIMD_CUT_ISOLATED_PCT 90              /* an isolated 429 keeps 90 % of the rate */
#define AIMD_CUT_REPEATED_PCT 70              /* a repeated one 70 % (full AIMD) */
#define AIMD_STEP_ISOLATED 50                 /* recovery after an isolated cut: base / 50 a step (20 %/s) */
#define AIMD_STEP_REPEATED 500                /* ... after a repeated one: base / 500 a step (2 %/s) */
#define AIMD_FLOOR_MILLI 1000                 /* a cut never goes below 1/s (nor below the rate it cuts) */
#define AIMD_SEEN_SLOTS 10                    /* the rate seen: units in 100 ms slots, over the last second */
#define AIMD_SEEN_SLOT_NS (100 * NS_PER_MS)
#define AIMD_LEARN_PCT 95                     /* a 429 at a learned rate learns one 5 % below it */
#define AIMD_PROBE_AFTER_NS (30 * NS_PER_S)   /* a learned rate calm this long probes upward ... */
#define AIMD_PROBE_STEP 500                   /* ... by learned / 500 a step (2 %/s) */
#define AIMD_SLOW_START_STEP 50               /* a limit learned from a burst grows by learned / 50 a step (22 %/s) */

typedef struct aimd {
    uint64_t last_cut_ns, last_raise_ns;
    uint64_t cuts;     /* multiplicative cuts so far (0: last_cut_ns means nothing) */
    int repeated;      /* the last cut followed another within AIMD_CALM_NS */
    int slow_start;    /* the learned limit came from the first 429 and grows fast (aimd_learn) */
} aimd;

/* What was released lately, to learn a rate from when a 429 comes to a
 * sink that has no limit set. */
typedef struct aimd_seen {
    uint64_t slot;                     /* the newest slot's number (now / AIMD_SEEN_SLOT_NS) */
    uint64_t units[AIMD_SEEN_SLOTS];   /* units released in each slot, by slot number modulo the count */
} aimd_seen;

/* aimd_seen_add counts units released at now_ns. */
void aimd_seen_add(aimd_seen *s, uint64_t units, uint64_t now_ns);

/* aimd_seen_rate_milli returns the rate released over the second before
 * now_ns (the current slot counted for the part of it that has passed). */
uint64_t aimd_seen_rate_milli(const aimd_seen *s, uint64_t now_ns);

/* aimd_learn answers a 429 to a sink with no limit set, keeping the
 * limit it learns in *learned_milli (0: none yet) and the rate in use in
 * *rate_milli: the first learns the rate seen (seen_milli, at least
 * AIMD_FLOOR_MILLI; what an unpaced burst drew, so it grows fast: slow
 * start); a later one, a rate AIMD_LEARN_PCT of the one in use (which drew
 * it), and ends the slow start. aimd_cut then cuts below the learned limit
 * as below a configured one, and aimd_raise climbs back to it. */
void aimd_learn(aimd *a, uint64_t *learned_milli, uint64_t *rate_milli, uint64_t seen_milli);

/* aimd_probe_due returns when a learned limit that the rate has reached
 * may next grow (in slow start AIMD_CUT_EVERY_NS after the last cut, else
 * AIMD_PROBE_AFTER_NS; and AIMD_RAISE_EVERY_NS after the last step),
 * AIMD_NEVER when the rate is below it; aimd_probe takes the step due at
 * now_ns, if one is: the limit and the rate grow by learned /
 * AIMD_SLOW_START_STEP in slow start, else learned / AIMD_PROBE_STEP (at
 * least 1). A sink that allows more is found again; one that does not
 * answers with a 429, which learns a limit below it. Returns 1 when it
 * moved them. */
uint64_t aimd_probe_due(const aimd *a, uint64_t rate_milli, uint64_t learned_milli);
int aimd_probe(aimd *a, uint64_t *learned_milli, uint64_t *rate_milli, uint64_t now_ns);

/* aimd_may_cut tells whether a 429 at now_ns may cut: no cut came in the
 * AIMD_CUT_EVERY_NS before (the 429s of one burst are one event). */
int aimd_may_cut(const aimd *a, uint64_t now_ns);

/* aimd_cut cuts *rate_milli after a 429 at now_ns, at most once per
 * AIMD_CUT_EVERY_NS and only when base_milli is a limit (not 0): to
 * AIMD_CUT_ISOLATED_PCT when no cut came in the AIMD_CALM_NS before (an
 * isolated 429), else to AIMD_CUT_REPEATED_PCT; never below
 * AIMD_FLOOR_MILLI or the rate itself, whichever is lower. Returns 1 when
 * it cut (the floor may leave the rate as it was), 0 when it did nothing. */
int aimd_cut(aimd *a, uint64_t *rate_milli, uint64_t base_milli, uint64_t now_ns);

/* aimd_raise_due returns when the next additive step is due for a rate of
 * rate_milli climbing back to base_milli: AIMD_CUT_EVERY_NS after the last
 * cut and AIMD_RAISE_EVERY_NS after the last step, whichever is later;
 * AIMD_NEVER when the rate is at its base or there is no limit. */
uint64_t aimd_raise_due(const aimd *a, uint64_t rate_milli, uint64_t base_milli);

/* aimd_raise takes the step due at now_ns, if one is: *rate_milli climbs
 * by base / AIMD_STEP_ISOLATED after an isolated cut (20 %/s) or base /
 * AIMD_STEP_REPEATED after a repeated one (2 %/s), at least 1, up to the
 * base. Returns 1 when it moved the rate. */
int aimd_raise(aimd *a, uint64_t *rate_milli, uint64_t base_milli, uint64_t now_ns);

/* aimd_cut_showing tells whether the last cut still names the state at
 * now_ns: a cut came, and now is within AIMD_CUT_EVERY_NS of it or before
 * busy_until_ns (the pause that went with it), whichever is later. */
int aimd_cut_showing(const aimd *a, uint64_t busy_until_ns, uint64_t now_ns);

/* aimd_calm tells whether no cut came in the AIMD_CALM_NS before now_ns: a
 * 429 now would count as isolated, so there is nothing left to remember. */
int aimd_calm(const aimd *a, uint64_t now_ns);

#endif /* SLUICE_AIMD_H */
