/*
 * pace.h - pacing where a request leaves: a GCRA bucket that hands out send
 * times. Pure: every function takes now_ns; nothing here reads a clock,
 * sleeps, locks or logs (pacer.c does, around it).
 */
#ifndef SLUICE_CLIENT_PACE_H
#define SLUICE_CLIENT_PACE_H

#include <stdint.h>

typedef struct pace {
    uint64_t tat_ns;      /* theoretical arrival time of the next unit */
    uint64_t interval_ns; /* ns per unit; 0 = unpaced */
    uint64_t rate_milli;  /* units per second x 1000; 0 = unpaced */
    uint32_t burst;       /* units that may leave back to back (>= 1) */
} pace;

/* pace_set sets the rate (0: unpaced) and burst (0 is taken as 1) at now_ns.
 * Debt already owed (TAT ahead of now) is carried over at the new pace, so a
 * change never lets a burst through. A zeroed pace is unpaced. */
void pace_set(pace *p, uint64_t rate_milli, uint32_t burst, uint64_t now_ns);

/* pace_rate_at returns the rate a pacer at a share of rate_milli and burst
 * paces at: the share's, or at a burst of 1 a margin of 1/SL_PACER_MARGIN
 * of an interval slower. A burst of 1 has no unit to keep as slack for the
 * transit to the sink, and a sink of burst 1 refuses any request that
 * reaches it less than 1/rate after the one before: paced exactly at the
 * rate, one that reached the sink a few microseconds faster than the one
 * before it was a 429, which pauses the sink for its Retry-After (a second
 * at least). So the spacing keeps a margin in time: 200 us at 100/s, 10 us
 * at 2,000/s, 2 % of the rate. */
uint64_t pace_rate_at(uint64_t rate_milli, uint32_t burst);

/* pace_next returns the earliest time >= now_ns at which cost units may
 * leave: now_ns while the burst lasts, else when enough has refilled. A
 * cost above the burst may leave once the bucket is full (and what follows
 * waits for it). Charges nothing. */
uint64_t pace_next(const pace *p, uint32_t cost, uint64_t now_ns);

/* pace_take charges cost units that leave at now_ns (call it when
 * pace_next(p, cost, now_ns) == now_ns). The times of the takes then hold
 * at most rate * tau + burst units in any window tau. At a burst of 1, a
 * take after PACE_COLD_NS or more with nothing taken charges one interval
 * more: the first request after a lull finds the path to the sink cold (a
 * connection, a thread, a core asleep) and reached it up to half a
 * millisecond late, so the next one, on time, arrived too close to it for a
 * sink of burst 1; after a THROTTLED pause, every time. */
#define PACE_COLD_NS (50ull * 1000 * 1000)
void pace_take(pace *p, uint32_t cost, uint64_t now_ns);

/* The lag between the broker releasing a delivery (its released_ns, on the
 * broker's clock) and a worker being ready to send it (on this process's
 * clock), as seen over the last one to two PACE_LAG_EPOCH_NS: its least
 * (the clocks' offset plus the quickest way through) and its most. */
#define PACE_LAG_EPOCH_NS (1000ull * 1000 * 1000)
#define PACE_LAG_MAX_NS   (25ull * 1000 * 1000) /* the longest a request is held back */
#define PACE_LAG_DECAY    1000 /* the hold shrinks by at most 1/DECAY of the time passed */

typedef struct pace_lag {
    uint64_t epoch_ns;  /* when the current epoch began */
    int64_t lo[2], hi[2]; /* [0] the current epoch, [1] the one before */
    uint32_t seen[2];   /* notes in each */
    uint64_t hold_ns;   /* the hold in use: grows at once, shrinks slowly */
    uint64_t hold_at_ns; /* when it was last looked at */
} pace_lag;

/* pace_lag_note records that a delivery released at released_ns (the
 * broker's clock; 0: unknown, ignored) is ready to leave at now_ns. */
void pace_lag_note(pace_lag *l, uint64_t released_ns, uint64_t now_ns);

/* pace_lag_due returns the time (this process's clock) at which a delivery
 * released at released_ns keeps the broker's spacing: its release plus the
 * least recent lag plus the hold. The hold is the spread up to the longest
 * recent lag (at most PACE_LAG_MAX_NS); it grows at once, and shrinks by at
 * most 1/PACE_LAG_DECAY of the time since the last call (a hold that drops
 * at once sends the requests held longer together with those held less).
 * When idle (nothing else of this process waits to leave, so there is
 * nothing to bunch with) the hold is 0. With shared_ns (other processes pace
 * the same sink) the hold is at least shared_ns, idle or not. Returns 0 (no
 * hold) when released_ns is 0 or nothing was noted. */
uint64_t pace_lag_due(pace_lag *l, uint64_t released_ns, uint64_t now_ns, int idle, uint64_t shared_ns);

#endif /* SLUICE_CLIENT_PACE_H */
