/*
 * bench_bare.h - the bare paced poster (bench_bare.c): the sink used at its
 * limit by the same pacer, workers and answer to a 429 as `consume --post`,
 * with no broker, so that the --post row is judged against what this host
 * lets any sender get from a burst-1 sink in the same hour.
 */
#ifndef SLUICE_BENCH_BARE_H
#define SLUICE_BENCH_BARE_H

#include <stdint.h>

/* bench_bare_run posts to url, a sink limited to rate a second at burst 1,
 * for warm_ms and then window_ms: *pct is what it delivered over the window,
 * in % of rate, and *refused the 429s of the whole run. Returns 0, or -1,
 * reported. Its threads are joined before it returns. */
int bench_bare_run(const char *url, unsigned rate, int64_t warm_ms, int64_t window_ms, double *pct,
                   uint64_t *refused);

#endif /* SLUICE_BENCH_BARE_H */
