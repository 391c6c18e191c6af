/*
 * cron.h - everything that runs on a timer, and what the loop does between
 * commits.
 */
#ifndef SLUICE_CRON_H
#define SLUICE_CRON_H

#include <stdint.h>

#include "bk.h"

/* cron_tick runs what is due at b->mono_ns / b->wall_ns (set by the loop):
 * expired leases, delayed messages whose time has come, the TTL and
 * idempotency-key sweep, autoscale sampling, the meter's additive increase,
 * heartbeats. */
void cron_tick(bk *b);

/* cron_between_commits runs what needs no open transaction: recounting the
 * map's use and growing it when it is filling and the disk has room. After a
 * commit refused for want of space (nospace) it recounts at once and grows
 * the map whatever its use (doubling it, up to --map-max-mb), so that a
 * batch larger than the free part of the map fits on a retry. */
void cron_between_commits(bk *b, int nospace);

/* cron_commit_due tells whether the loop must commit this pass: a reply
 * waits for it, or the oldest uncommitted write is ack_flush_ms old. */
int cron_commit_due(bk *b);

/* cron_next_wake returns the monotonic time of the next timer (leases,
 * delayed messages, the meter, heartbeats, the ack flush). */
uint64_t cron_next_wake(bk *b);

#endif /* SLUICE_CRON_H */
