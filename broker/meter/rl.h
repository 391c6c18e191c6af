/*
 * rl.h - rate limiting: GCRA buckets, pure arithmetic.
 *
 * A bucket is the Generic Cell Rate Algorithm: one timestamp, the
 * theoretical arrival time (TAT), plus an emission interval T (1 / rate) and
 * a burst B. A request of cost c is allowed at time t when
 * max(TAT, t) + min(c, B)*T - t <= B*T; allowing it sets TAT to
 * max(TAT, t) + c*T. This is a token bucket of depth B refilled at `rate`,
 * kept as one number, so it is exact at any time resolution.
 *
 * A cost above the burst goes when the bucket is full (TAT <= t) and puts
 * it into debt for the rest: the bucket never refuses a message for good,
 * whatever its cost and however low the burst is set later. The bound is
 * then exact in this form: over any window tau, what a bucket allows is at
 * most rate*tau + max(B, c_last), where c_last is the cost of the last
 * request allowed in the window; so at most rate*tau + max(B, the largest
 * cost), and rate*tau + B while no cost exceeds B. (Sum the costs sent in
 * [s, s + tau]: before the last one, c_k at t_k, TAT has moved at least
 * (sum - c_k)*T from s, and it may be at most (B - min(c_k, B))*T ahead of
 * t_k <= s + tau.)
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

/* rl_allows tells whether cost units may go at now_ns: the bucket holds
 * cost tokens, or, for a cost above the burst, it is full. */
int rl_allows(const rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_take charges cost units at now_ns (whether or not rl_allows said yes:
 * an overdraft delays what follows). */
void rl_take(rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_take_late is rl_take for a caller that releases on the bucket's slots
 * but wakes late for them (a loop's timer): a take up to half an interval
 * after its slot (TAT) is charged from the slot, so the lateness is not lost
 * to the rate; later than that, from now_ns less half an interval. Over any
 * window tau what it lets through is then at most rate*(tau + T/2) + burst:
 * for windows of a whole number of intervals still rate*tau + burst (less
 * than one unit more cannot be counted), for shorter ones one unit more at
 * most; and no two single units leave closer than T/2 apart at burst 1. */
void rl_take_late(rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_next_ns returns the earliest time >= now_ns at which cost units are
 * allowed (for a cost above the burst: when the bucket is full again). */
uint64_t rl_next_ns(const rl_bucket *b, uint64_t cost, uint64_t now_ns);

/* rl_tokens_milli returns the units that could go now, x 1000 (burst x 1000
 * when idle; 0 while in debt). Unlimited buckets report UINT64_MAX. */
uint64_t rl_tokens_milli(const rl_bucket *b, uint64_t now_ns);

/* rl_pause_until lets nothing through before until_ns, and then only one
 * unit at a time: no burst on resume. */
void rl_pause_until(rl_bucket *b, uint64_t until_ns);

/* ---- several windows per limit ----
 *
 * A window is "count units per period, burst at once": a GCRA bucket of
 * rate count/period and burst B, so over any span tau it lets through at
 * most (count/period) x tau + B. A limit with several windows ("10/s and
 * 500/min") is their buckets in series: a message goes when every window
 * admits it, its cost is charged to every window, and the time to retry is
 * the latest of the windows' times. */
#define RL_MAX_WINDOWS 4
#define RL_MAX_PERIOD_MS (UINT64_C(86400) * 1000) /* a day */

typedef struct rl_window {
    uint64_t count_milli; /* units per period x 1000; 0 = no window */
    uint64_t period_ms;   /* 1..RL_MAX_PERIOD_MS */
    uint32_t burst;       /* 0 is taken as 1 */
} rl_window;

/* rl_set_window makes b follow window w at now_ns, as rl_set does (a
 * change never creates tokens). rl_set(b, r, B, now) is the window
 * {r, 1000, B}. */
void rl_set_window(rl_bucket *b, const rl_window *w, uint64_t now_ns);

/* rl_window_rate_milli returns w's long-run rate in units per second x 1000
 * (rounded down). */
uint64_t rl_window_rate_milli(const rl_window *w);

/* rl_series_allows tells whether every one of the n buckets lets cost go at
 * now_ns; when not, *retry_ns is the latest of their rl_next_ns. */
int rl_series_allows(const rl_bucket *b, unsigned n, uint64_t cost, uint64_t now_ns, uint64_t *retry_ns);

/* rl_series_take charges cost to each of the n buckets. */
void rl_series_take(rl_bucket *b, unsigned n, uint64_t cost, uint64_t now_ns);

#endif /* SLUICE_RL_H */
