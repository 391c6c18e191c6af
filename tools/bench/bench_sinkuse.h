/*
 * bench_sinkuse.h - the rows of the sink used at its limit: how much of a
 * sink's rate a backlog gets with the defaults (burst 1), at 100, 1,000,
 * 2,000 and 5,000 a second, through one `sluice consume -c 64`, through
 * `sluice consume --post --workers 8` into a sink simulator as strict as the
 * limit (beside the bare paced poster, bench_bare.c, into a sink of its
 * own), and through three brokers sharing the rate in Redis.
 */
#ifndef SLUICE_BENCH_SINKUSE_H
#define SLUICE_BENCH_SINKUSE_H

#include "bench_run.h"

#define BENCH_SINKUSE_CLI_PCT    97 /* one `consume -c 64`: delivered / rate */
#define BENCH_SINKUSE_POST_PCT   95 /* --post into the sink simulator, with 0 x 429, where the bare poster met none */
#define BENCH_SINKUSE_SHARED_PCT 95 /* three brokers sharing the rate through Redis */

/* bench_sinkuse_rows runs the rows on brokers, sinks and a redis-server of
 * their own, started from b->sluiced's directory (sluice, sluice-sink
 * beside it; redis-server from PATH) in subdirectories of b->dir, each
 * rate's window b->seconds long, and adds eight rows per rate to b->table.
 * Everything it starts it stops, by PID. Returns 0 (also when a signal cut
 * it short: the rows measured so far stay), or -1, reported. */
int bench_sinkuse_rows(bench *b);

#endif /* SLUICE_BENCH_SINKUSE_H */
