/*
 * bench_run.h - one run of sluice-bench as its rows see it: the options it
 * was given, the pass it is in, the figures later rows compare against,
 * and the table every row adds to. The rows live in sluice-bench.c and,
 * for the machine's raw limits and the ratios built on them, in
 * bench_limits.c.
 */
#ifndef SLUICE_BENCH_RUN_H
#define SLUICE_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "bench_peer_bs.h"
#include "bench_spawn.h"
#include "bench_table.h"

#define TARGET_ONE_VS_FLUSH 0.8 /* 1 x 1 enqueue x (one flush + one round trip) */
#define TARGET_MANY_VS_ONE  3.0 /* 4 x 1 enqueue / 1 x 1 */

typedef struct bench {
    const char *endpoint;   /* the broker's, or NULL for the default */
    char dir[64];           /* the run's temporary directory */
    bench_spawn broker;     /* with --spawn */
    const char *suffix;     /* appended to the rows' labels (", CURVE"), or NULL */
    int seconds;
    int quick;              /* --quick: a smoke run, whose rows publish little (the drain drains it all) */
    uint64_t drain_msgs;
    uint64_t dispatch_msgs, starve_msgs; /* starve_msgs 0: sized by a probe */
    const char *sluiced;    /* with --spawn */
    const char *slowdisk;   /* the slow-disk shim, for the slow pass */
    const char *pass;       /* appended to each row's label: "", ", flush +1 ms", ... */
    int slow;               /* this pass runs on the slowed disk */
    size_t drain_consumers;
    unsigned drain_credit;
    int curve;              /* this pass runs against the CURVE broker */
    bench_peer_bs peer;     /* beanstalkd -f 0 (bench_peer.c); port 0 when none runs */
    /* for the ratio rows, from this run: Sluice's first pass, the machine, CURVE, the peer */
    double one_per_s, many_per_s, trips_per_s, flushes_per_s;
    double one_stream_per_s, many_stream_per_s; /* the same over the stream endpoint (0: not measured) */
    double drain_stream_per_s, p99_stream_ms;
    double one_pairs_ratio; /* 1 x 1 stream / peer, the median of alternating pairs (bench_peer.c) */
    double many_pairs_ratio; /* 4 x 1 stream / the peer's 4 x 1, in the same pairs */
    double one_buffered_pairs_ratio; /* the same on a broker with --wal-buffered */
    double peer_twin_pairs_ratio;    /* the control: a second peer / the peer, in the same turns */
    double one_flush_pairs_ratio;    /* 1 x 1 stream / the raw append + fdatasync, in the same turns */
    int streaming;          /* this row runs over the spawned broker's stream endpoint (stream_run) */
    double window_per_s, drain_per_s, p99_ms, ideal_p99_ms;
    double ideal_drain_per_s; /* the ideal drain, right after the stream's drain (bench_ideal.c) */
    double curve_window_per_s, curve_drain_per_s;
    double curve_window_pairs_ratio; /* 1 x 100 CURVE / plain, the median of paired turns (bench_curve.c) */
    double peer_one_per_s, peer_many_per_s, peer_window_per_s, peer_drain_per_s, peer_p99_ms;
    bench_table table;
} bench;

/* The drain's targets (bench_drain.c). */
#define TARGET_DRAIN_PER_S       40000  /* 1 consumer, credit 64, and (as before) 4 x credit 1 */
#define TARGET_DRAIN_DURABLE_PER_S 10000 /* 4 x credit 1, every ack durable before its OK */
#define TARGET_CONSUME_CLI_PER_S 25000
#define DRAIN_ONE_CREDIT         64

/* Row 4 (bench_drain.c): 4 consumers x credit 1, the same on a broker with
 * --ack-flush-ms 0, 1 consumer x credit DRAIN_ONE_CREDIT, and `sluice
 * consume`, each over a backlog topped up to drain_msgs. Each returns 0 or
 * -1. */
int row_drain(bench *b);
int row_drain_durable(bench *b);
int row_drain_one(bench *b);
int row_consume_cli(bench *b);

/* rate_add adds a row of count per second over elapsed_ns. */
void rate_add(bench *b, const char *scenario, uint64_t count, int64_t elapsed_ns, const char *unit,
              bench_table_goal g, double target);

/* The raw rows (bench_limits.c): LMDB durable commits of 1 and of
 * LMDB_BATCH_PUTS puts per transaction, a ZeroMQ round trip, one flush,
 * the ideal log's p50 and p99, the ideal drain; then the two ratio rows
 * against them. Each
 * returns 0 or -1. */
int row_lmdb_single(bench *b);
int row_lmdb_batch(bench *b);
int row_zmq(bench *b);
int row_flush(bench *b);
int row_ideal_log(bench *b);
int row_ideal_drain(bench *b);
int row_ratios(bench *b);

/* Rows 6-8 and the metering rows (bench_rows_sched.c). Each returns 0 or -1. */
int row_dispatch(bench *b);
int row_starvation(bench *b);
int row_pick(bench *b);
int row_pick_fair(bench *b);
int row_meter(bench *b);
int row_meter_beside(bench *b);

/* row_send_headers (bench_headers.c): the 1 x 100 enqueue with 4 headers
 * of 64 B and without, in paired turns, and their median ratio. Returns 0
 * or -1. */
int row_send_headers(bench *b);

#endif
