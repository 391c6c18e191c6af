/*
 * bench_guard.h - what sluice-bench may do to a broker it did not start:
 * look before it runs, take only what it published, and leave no pools
 * behind.
 *
 * Against a broker it spawned the guard is off: every answer is "go on".
 * Against one it did not (-b, $SLUICE_BROKER, the default endpoint), every
 * message the bench publishes carries its own tag, and the bench's
 * consumers give back, unacknowledged, any delivery without it.
 */
#ifndef SLUICE_BENCH_GUARD_H
#define SLUICE_BENCH_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

/* bench_guard_check looks at the broker at endpoint before any row runs.
 * It refuses (returns -1, reported: what it holds, and --force) a broker
 * with messages waiting, delayed or in flight, or with consumers
 * connected, unless force. With force it goes on, and the levels that held
 * anything are the broker's own: the rows that publish to the default level
 * publish to the lowest level that held nothing instead (the home level),
 * and a row that needs a level that held something is skipped. It also
 * notes the broker's pools, so that bench_guard_pools_delete deletes only
 * those the bench made. Returns 0, or -1 (reported). */
int bench_guard_check(const char *endpoint, bool force);

/* bench_guard_on tells whether the broker is not the bench's own (after
 * bench_guard_check; before it, and with --spawn, false). */
bool bench_guard_on(void);

/* bench_guard_tag returns the tag the bench's messages carry
 * ("sluice-bench-PID"), or NULL when the broker is the bench's own. */
const char *bench_guard_tag(void);

/* bench_guard_own tells whether delivery d is one the bench published: on
 * a broker not its own, one carrying its tag. */
bool bench_guard_own(const sl_delivery *d);

/* bench_guard_home returns the level the bench's single-level rows publish
 * to: SL_LEVEL_DEFAULT unless some level held messages at the check, else
 * the lowest that held none (-2 when none did). */
int bench_guard_home(void);

/* bench_guard_levels sets *levels and *n for a consumer of the bench's
 * single-level rows: NULL and 0 (every level) unless some level held
 * messages at the check, else the home level alone. */
void bench_guard_levels(const unsigned **levels, size_t *n);

/* bench_guard_free tells whether every level in mask (bit L: level L) held
 * nothing at the check: a row that uses those levels may run. */
bool bench_guard_free(uint32_t mask);

/* bench_guard_skip says on stderr that row is skipped and why, and returns
 * 0 (for a row function to return). */
int bench_guard_skip(const char *row, const char *why);

/* bench_guard_pools_delete deletes, on the broker at endpoint, the pools
 * the bench's rows make (pool-0 .. pool-7, starve) that were not there at
 * the check. Returns 0, or -1 (reported) when one could not be deleted. */
int bench_guard_pools_delete(const char *endpoint);

#endif /* SLUICE_BENCH_GUARD_H */
