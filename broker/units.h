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

#endif /* SLUICE_UNITS_H */
