/*
 * bench_bare.h - the sink used at its limit with no broker, so that the
 * rows through Sluice are judged against what this host lets anything get
 * in the same run: the bare paced poster (bench_bare.c: the same pacer,
 * workers and answer to a 429 as `consume --post`) and the bare paced
 * dispatcher (bench_bare_zmq.c: a burst-1 bucket releasing over ZeroMQ to
 * a consumer with credit 64, as the broker's loop does).
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

/* bench_bare_dispatch releases 100-byte messages at rate a second, burst
 * 1, over an ipc socket in dir to a consumer thread with credit 64, for
 * warm_ms and then window_ms: *pct is what was acknowledged over the
 * window, in % of rate. Returns 0, or -1, reported. */
int bench_bare_dispatch(const char *dir, unsigned rate, int64_t warm_ms, int64_t window_ms, double *pct);

#endif /* SLUICE_BENCH_BARE_H */
