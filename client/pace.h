/*
 * pace.h - pacing where a request leaves: a GCRA bucket that hands out send
 * times. Pure: every function takes now_ns; nothing here reads a clock,
 * sleeps, locks or logs (pacer.c does, around it).
 */
#ifndef SLUICE_PACE_H
#define SLUICE_PACE_H

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

/* pace_reserve books cost units asked for at now_ns and returns when they
 * may leave (>= now_ns): at once while the burst lasts, then one interval
 * per unit after the last booking. A booking is never given back: a caller
 * that gives up still spends its slot. Over any window tau, the due times
 * handed out hold at most rate * tau + burst units. */
uint64_t pace_reserve(pace *p, uint32_t cost, uint64_t now_ns);

#endif /* SLUICE_PACE_H */
