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

/* pace_next returns the earliest time >= now_ns at which cost units may
 * leave: now_ns while the burst lasts, else when enough has refilled. A
 * cost above the burst may leave once the bucket is full (and what follows
 * waits for it). Charges nothing. */
uint64_t pace_next(const pace *p, uint32_t cost, uint64_t now_ns);

/* pace_take charges cost units that leave at now_ns (call it when
 * pace_next(p, cost, now_ns) == now_ns). The times of the takes then hold
 * at most rate * tau + burst units in any window tau. */
void pace_take(pace *p, uint32_t cost, uint64_t now_ns);

#endif /* SLUICE_PACE_H */
