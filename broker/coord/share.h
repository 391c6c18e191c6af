/*
 * share.h - the fair split of a sink's shared slices among brokers, pure.
 * The same arithmetic runs inside Redis as broker/coord/coord.lua; tests/unit/test_share.c
 * runs one table of cases against both, so a change here is a change there.
 */
#ifndef SLUICE_SHARE_H
#define SLUICE_SHARE_H

#include <stdint.h>

#define SHARE_MAX_BROKERS 256

/* share_split cuts total slices among n brokers (n <= SHARE_MAX_BROKERS) by
 * max-min fairness (water filling): a broker asking for less than an equal
 * share gets what it asks, the rest is split evenly among the others, and
 * what does not divide goes one slice each to the lowest indices (callers
 * order brokers by name). Writes fair[0..n); returns the slices handed out
 * (<= total, < total only when every demand is met). */
uint32_t share_split(uint32_t total, unsigned n, const uint32_t *demand, uint32_t *fair);

/* share_grant returns what one broker may hold after a renewal: its fair
 * share (or, while learning after a new epoch, exactly what it says it
 * already holds: its lease may still be alive), never more than the slices
 * the others do not hold (others_held).
 * A grant above what it held only grows into free slices; one below takes
 * effect at once. */
uint32_t share_grant(uint32_t total, uint32_t fair, uint32_t claimed, uint32_t others_held, int learning);

#endif /* SLUICE_SHARE_H */
