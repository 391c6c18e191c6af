/*
 * bench_peer.h - the peer rows: beanstalkd -f 0 measured in the same run,
 * each row right after the Sluice row it answers, and the ratio rows that
 * state Sluice against it (and against the disk's own flush rate and tail).
 */
#ifndef SLUICE_BENCH_PEER_H
#define SLUICE_BENCH_PEER_H

#include "bench_run.h"

#define PEER_TUBE          "sluice-bench"  /* the enqueue and drain rows' tube */
#define PEER_LATENCY_TUBE  "sluice-bench-latency"

/* Targets of the ratio rows (issue: the sequential producer ahead of the peer). */
#define TARGET_ONE_VS_PEER    1.0 /* 1 x 1 / beanstalkd 1 x 1, single rows (the pairs: bench_pairs.h) */
#define TARGET_ONE_VS_DISK    0.9 /* 1 x 1 / one raw append + fdatasync */
#define TARGET_MANY_VS_PEER   2.0 /* 4 x 1 / beanstalkd 4 x 1 */
#define TARGET_DRAIN_VS_PEER  4.0 /* drain 4 x credit 1 / beanstalkd 4 x reserve+delete */
#define TARGET_DRAIN_VS_IDEAL 0.5 /* drain 4 x credit 1, stream / the ideal drain (bench_ideal.c) */
#define TARGET_P99_OVER_IDEAL_MS 0.5 /* p99 publish->deliver - the ideal log's p99 */
#define TARGET_P99_VS_PEER    1.0 /* p99 / beanstalkd's p99 */
#define TARGET_CURVE_VS_PLAIN 0.8 /* the CURVE rows / the same rows without */

/* bench_peer_start starts beanstalkd in the run's directory when it is
 * installed (b->peer.port stays 0 and a note is printed when it is not).
 * Returns 0, or -1 (reported) when it is installed but does not start. */
int bench_peer_start(bench *b);
int bench_peer_stop(bench *b);

/* bench_peer_spawn starts another beanstalkd -f 0 in the run's directory
 * under name (which must not exist yet), into *s, for bench_peer_bs_stop
 * to stop. Returns 0, or -1 (reported; nothing left running). */
int bench_peer_spawn(bench *b, const char *name, bench_peer_bs *s);

/* bench_peer_turn runs the peer's producers x 1 (each connection one put
 * at a time) against the beanstalkd on port for the run's seconds: *per_s
 * in all, 0 when it failed. Returns 0, or -1 (reported). */
int bench_peer_turn(bench *b, int port, size_t producers, double *per_s);

/* The peer's rows, each a no-op without a peer: 1 x 1 and PRODUCERS x 1
 * confirmed puts, WINDOW_MSGS pipelined puts, a drain by CONSUMERS
 * connections reserving and deleting one job at a time, and put -> reserve
 * latency at BENCH_LATENCY_RATE_PER_S. */
int row_peer_one(bench *b);
int row_peer_many(bench *b);
int row_peer_window(bench *b);
int row_peer_drain(bench *b);
int row_peer_latency(bench *b);

/* row_peer_ratios adds the ratio rows whose figures this run measured:
 * against the peer, the raw flush, the ideal log, and CURVE against plain. */
int row_peer_ratios(bench *b);

#endif /* SLUICE_BENCH_PEER_H */
