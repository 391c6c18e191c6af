/*
 * rl.h - rate limiting: GCRA buckets, pure arithmetic.
 *
 * A bucket is the Generic Cell Rate Algorithm: one timestamp, the
 * theoretical arrival time (TAT), plus an emission interval T (1 / rate) and
 * a burst B. A request of cost c is allowed at time t when
 * max(TAT, t) + c*T - t <= B*T; allowing it sets TAT to max(TAT, t) + c*T.
 * This is a token bucket of depth B refilled at `rate`, kept as one number,
 * so it is exact at any time resolution and never overshoots: over any
 * window tau, what it allows is at most rate*tau + B.
 *
 * Time is integer nanoseconds on the caller's clock (monotonic in the
 * broker); nothing here reads a clock. Rates are in thousandths of a unit
 * per second so that 0.5/s is expressible without floating point.
 */
#ifndef SLUICE_RL_H
#define SLUICE_RL_H

#include <stdint.h>

typedef struct rl_bucket {
    uint64_t tat_ns;      /* theoretical arrival time */
    uint64_t interval_ns; /* T: ns per unit; 0 = unlimited */
    uint64_t rate_milli;  /* units per second x 1000; 0 = unlimited */
    uint32_t burst;       /* B: units allowed back to back (>= 1) */
} rl_bucket;

/* rl_set sets the rate (0 = unlimited) and burst (0 is taken as 1) at time
 * now_ns. A change never creates tokens: debt already owed (TAT ahead of now)
 * is carried over in time at the new rate's pace, so neither lowering nor
 * raising the rate lets a burst through. */
void rl_set(rl_bucket *b, uint64_t rate_milli, uint32_t burst, uint64_t now_ns);

/* rl_allows tells whether cost units may go at now_ns. */
int rl_allows(const rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_take charges cost units at now_ns (whether or not rl_allows said yes:
 * an overdraft delays what follows). */
void rl_take(rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_next_ns returns the earliest time >= now_ns at which cost units are
 * allowed. */
uint64_t rl_next_ns(const rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_tokens_milli returns the units that could go now, x 1000 (burst x 1000
 * when idle; 0 while in debt). Unlimited buckets report UINT64_MAX. */
uint64_t rl_tokens_milli(const rl_bucket *b, uint64_t now_ns);

/* rl_pause_until lets nothing through before until_ns, and then only one
 * unit at a time: no burst on resume. */
void rl_pause_until(rl_bucket *b, uint64_t until_ns);

#endif /* SLUICE_RL_H */
