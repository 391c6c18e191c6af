/*
 * units.h - the broker's time units, defined once.
 *
 * Clocks are integer nanoseconds (monotonic for timers and buckets, wall for
 * what is stored); settings and wire fields are milliseconds. Rates are
 * milli-units per second (rate_milli: 1500 = 1.5 per second).
 */
#ifndef SLUICE_UNITS_H
#define SLUICE_UNITS_H

#define NS_PER_MS 1000000ULL
#define NS_PER_S  1000000000ULL

#include <stdint.h>

/* units_after_ms returns now_ns + ms milliseconds, saturating at UINT64_MAX
 * (never wrapping to a time in the past, whatever ms a client sent). */
static inline uint64_t units_after_ms(uint64_t now_ns, uint64_t ms)
{
    if (ms > (UINT64_MAX - now_ns) / NS_PER_MS)
        return UINT64_MAX;
    return now_ns + ms * NS_PER_MS;
}

#endif /* SLUICE_UNITS_H */
