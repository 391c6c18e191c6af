/*
 * hist.c - the bucket bounds of each histogram shape, and counting into
 * them. Bounds cover what an operator asks about: a wait of 1 ms to an hour
 * (a backlog drained at the sink's pace waits long), a commit of 0.25 ms to
 * 1 s (one fsync on a fast disk, up to a stalled one). Change a bound and
 * the dashboard's quantiles move with it; nothing else depends on them.
 *
 * Costs: hist_add walks at most HIST_BUCKETS bounds.
 */
#include "hist.h"

#include "units.h"

static const uint64_t bounds[HIST_KIND_COUNT_][HIST_BUCKETS] = {
    [HIST_WAIT] = {NS_PER_MS, 5 * NS_PER_MS, 10 * NS_PER_MS, 50 * NS_PER_MS, 100 * NS_PER_MS, 500 * NS_PER_MS,
                   NS_PER_S, 5 * NS_PER_S, 10 * NS_PER_S, 30 * NS_PER_S, 60 * NS_PER_S, 300 * NS_PER_S,
                   3600 * NS_PER_S, 0},
    [HIST_COMMIT] = {NS_PER_MS / 4, NS_PER_MS / 2, NS_PER_MS, 2 * NS_PER_MS, 5 * NS_PER_MS, 10 * NS_PER_MS,
                     25 * NS_PER_MS, 50 * NS_PER_MS, 100 * NS_PER_MS, 250 * NS_PER_MS, 500 * NS_PER_MS, NS_PER_S,
                     0},
};

void hist_add(hist *h, hist_kind kind, uint64_t ns)
{
    unsigned i = 0;
    while (i < HIST_BUCKETS - 1 && bounds[kind][i] && ns > bounds[kind][i])
        i++;
    h->bucket[i]++; /* i is the first bound >= ns, or +Inf (the 0 after the last) */
    h->count++;
    h->sum_ns += ns;
}

const uint64_t *hist_bounds(hist_kind kind)
{
    return bounds[kind];
}
