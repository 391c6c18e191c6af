/*
 * gather.c - how long a write-ahead log record waits for the rest of its
 * batch.
 *
 * Producers that wait for each confirmation before their next publish
 * (one publish outstanding) come back a round trip after the record that
 * confirmed them. A record started at the first one's return would split
 * them into two groups that take turns, each flushing for part of them. So
 * when a record ends, the next one waits for the publishes that were
 * waiting then plus one per publish it confirmed (want), at most
 * GATHER_MAX_NS. Only publishes count (the loop counts them): a consumer
 * does not wait for its settlement's answer before its next request. A
 * gather ends when it is full, or when its time has run out, and only a
 * record that has something to write is held: until the first publish of
 * the batch has come back there is nothing to wait with.
 *
 * Producers that do not come back that way (one sending at its own pace,
 * several of which only some are back in time, a pipelining one whose
 * window is not full) make a wait run out with part of the batch. That
 * pauses gathering: the next GATHER_PAUSE_MIN records start at once, twice
 * as many after each run-out that follows, up to GATHER_PAUSE_MAX; a
 * gather that fills brings the pause back to its minimum. A producer descheduled now and then costs a
 * short pause; clients that never come back cost one wait in
 * GATHER_PAUSE_MAX + 1 records.
 *
 * A gather that filled is told (gather_full) until its record ends: the
 * loop then writes that record itself rather than handing it to the
 * writer thread, since nothing more is on its way while it flushes.
 *
 * Pure: no clock, no I/O; now comes in. O(1) per call.
 */
#include "gather.h"

void gather_init(gather *g)
{
    *g = (gather){.pause = GATHER_PAUSE_MIN};
}

void gather_record_ended(gather *g, uint64_t now, size_t confirmed, size_t waiting)
{
    g->until_ns = 0;
    g->full = 0;
    if (g->paused) {
        g->paused--;
    } else if (confirmed) {
        g->want = waiting + confirmed;
        g->until_ns = now + GATHER_MAX_NS;
    }
}

int gather_holds(gather *g, uint64_t now, size_t waiting)
{
    if (!g->until_ns)
        return 0;
    if (waiting < g->want && now < g->until_ns)
        return waiting > 0;
    if (waiting >= g->want) {
        g->pause = GATHER_PAUSE_MIN; /* the clients do come back that way */
        g->full = 1;
    } else if (waiting) { /* ran out with part of the batch */
        g->paused = g->pause;
        g->pause = g->pause * 2 > GATHER_PAUSE_MAX ? GATHER_PAUSE_MAX : g->pause * 2;
    }
    g->until_ns = 0;
    return 0;
}

uint64_t gather_deadline(const gather *g)
{
    return g->until_ns;
}

void gather_stop(gather *g)
{
    g->until_ns = 0;
}

int gather_full(const gather *g)
{
    return g->full;
}
