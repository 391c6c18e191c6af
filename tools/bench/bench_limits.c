/*
 * bench_limits.c - the rows of sluice-bench that measure the machine rather
 * than Sluice (rows 9-11): LMDB durable commits of 1 and of LMDB_BATCH_PUTS
 * puts per transaction, a ZeroMQ DEALER/ROUTER round trip over ipc://, one
 * flush of an append, the ideal log's publish -> durable times at the
 * latency row's rate, the ideal drain's round trips; and the two ratio rows that hold the broker's
 * enqueue rows against them (1 x 1 against one flush plus one round trip,
 * 4 x 1 against 1 x 1). The measurements themselves are bench_raw.c's and
 * bench_disk.c's; this file names, times and records them. Each row runs
 * for the run's seconds in the run's directory and leaves nothing behind.
 */
#include <stdio.h>

#include "bench_args.h"
#include "bench_core.h"
#include "bench_disk.h"
#include "bench_ideal.h"
#include "bench_latency.h"
#include "bench_raw.h"
#include "bench_run.h"

/* lmdb_run measures commits of puts puts each in a fresh environment under
 * the run's directory. */
static int lmdb_run(bench *b, unsigned puts, uint64_t *commits, int64_t *elapsed_ns)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s/lmdb-%u", b->dir, puts);
    bench_core_progress("raw: LMDB durable commit, %u put%s per txn (%d s)", puts,
                        puts == 1 ? "" : "s", b->seconds);
    return bench_raw_lmdb_commits(dir, puts, b->seconds, commits, elapsed_ns);
}

int row_lmdb_single(bench *b)
{
    uint64_t commits;
    int64_t elapsed_ns;
    if (lmdb_run(b, 1, &commits, &elapsed_ns) != 0)
        return -1;
    rate_add(b, "raw: LMDB durable commit, 1 put of 100 B per txn", commits, elapsed_ns,
             "commits/s", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

int row_lmdb_batch(bench *b)
{
    char scenario[96];
    uint64_t commits;
    int64_t elapsed_ns;
    if (lmdb_run(b, LMDB_BATCH_PUTS, &commits, &elapsed_ns) != 0)
        return -1;
    snprintf(scenario, sizeof scenario, "raw: LMDB durable commit, %d puts per txn",
             LMDB_BATCH_PUTS);
    rate_add(b, scenario, commits * LMDB_BATCH_PUTS, elapsed_ns, "puts/s", BENCH_TABLE_NO_GOAL, 0);
    rate_add(b, scenario, commits, elapsed_ns, "commits/s", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

int row_zmq(bench *b)
{
    char endpoint[96];
    uint64_t trips;
    int64_t elapsed_ns;
    snprintf(endpoint, sizeof endpoint, "ipc://%s/raw-zmq.sock", b->dir);
    bench_core_progress("raw: ZeroMQ DEALER/ROUTER round trip over ipc:// (%d s)", b->seconds);
    if (bench_raw_zmq_round_trips(endpoint, b->seconds, &trips, &elapsed_ns) != 0)
        return -1;
    rate_add(b, "raw: ZeroMQ DEALER/ROUTER round trip, ipc://", trips, elapsed_ns,
             "round trips/s", BENCH_TABLE_NO_GOAL, 0);
    b->trips_per_s = bench_core_per_s(trips, elapsed_ns);
    return 0;
}

int row_flush(bench *b)
{
    uint64_t flushes;
    int64_t elapsed_ns;
    bench_core_progress("raw: one flush, a %d-byte append and fdatasync (%d s)", BENCH_CORE_BODY_BYTES, b->seconds);
    if (bench_disk_flushes(b->dir, b->seconds, &flushes, &elapsed_ns) != 0)
        return -1;
    char scenario[96];
    snprintf(scenario, sizeof scenario, "raw: one flush, %d-byte append + fdatasync", BENCH_CORE_BODY_BYTES);
    rate_add(b, scenario, flushes, elapsed_ns, "flushes/s", BENCH_TABLE_NO_GOAL, 0);
    b->flushes_per_s = bench_core_per_s(flushes, elapsed_ns);
    return 0;
}

/* row_ideal_log puts the disk's own publish -> durable time next to the
 * latency row: the same arrival rate, a group-committing log and nothing
 * else (bench_disk.c). */
int row_ideal_log(bench *b)
{
    char scenario[96];
    double p50_ms = 0, p99_ms = 0;
    if (bench_disk_ideal_log(b->dir, b->seconds, BENCH_LATENCY_RATE_PER_S, &p50_ms, &p99_ms) != 0)
        return -1;
    snprintf(scenario, sizeof scenario, "raw: ideal log, arrival->durable p50 at %d msgs/s", BENCH_LATENCY_RATE_PER_S);
    bench_table_add(&b->table, scenario, p50_ms, 3, "ms", BENCH_TABLE_NO_GOAL, 0);
    snprintf(scenario, sizeof scenario, "raw: ideal log, arrival->durable p99 at %d msgs/s", BENCH_LATENCY_RATE_PER_S);
    bench_table_add(&b->table, scenario, p99_ms, 3, "ms", BENCH_TABLE_NO_GOAL, 0);
    b->ideal_p99_ms = p99_ms;
    return 0;
}

/* row_ideal_drain puts the round trips of four clients against a server
 * that only answers next to the drain 4 x credit 1, right after its stream
 * row (bench_ideal.c). */
int row_ideal_drain(bench *b)
{
    if (b->slow || b->curve)
        return 0;
    bench_core_progress("raw: ideal drain, 4 clients x 1 round trip over a Unix socket to one epoll thread (%d s)",
                        b->seconds);
    double per_s = 0;
    if (bench_ideal_drain(b->dir, b->seconds, &per_s) != 0)
        return -1;
    bench_table_add(&b->table, "raw: ideal drain, 4 clients x 1 round trip, Unix socket, epoll", per_s, 0,
                    "trips/s", BENCH_TABLE_NO_GOAL, 0);
    b->ideal_drain_per_s = per_s;
    return 0;
}

/* row_ratios states rows 1 and 2 against their targets: 1 x 1 against one
 * flush plus one round trip (raw rows of this run), 4 x 1 against 1 x 1. */
int row_ratios(bench *b)
{
    if (b->one_per_s > 0 && b->flushes_per_s > 0 && b->trips_per_s > 0) {
        double bound_per_s = 1.0 / (1.0 / b->flushes_per_s + 1.0 / b->trips_per_s);
        bench_table_add(&b->table, "1 x 1 enqueue / (1 / (one flush + one round trip))",
                        b->one_per_s / bound_per_s, 2, "x", BENCH_TABLE_AT_LEAST, TARGET_ONE_VS_FLUSH);
    }
    if (b->one_per_s > 0 && b->many_per_s > 0)
        bench_table_add(&b->table, "4 x 1 enqueue / 1 x 1 enqueue", b->many_per_s / b->one_per_s, 2, "x",
                        BENCH_TABLE_AT_LEAST, TARGET_MANY_VS_ONE);
    return 0;
}

