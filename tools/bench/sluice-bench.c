/*
 * sluice-bench.c - measure a Sluice broker against its performance targets.
 *
 * The bench drives a broker through the public client library (sluice.h)
 * and prints one table: what was measured, the result, the target and
 * whether it was met. Every message body is BENCH_CORE_BODY_BYTES long. The
 * rows, in the order they run:
 *
 *   1-3  Confirmed enqueue. sl_send in a loop from 1 and from PRODUCERS
 *        connections (one thread each), then one connection that keeps
 *        WINDOW_MSGS sl_send_async publishes outstanding. A publish counts
 *        once the broker has confirmed it durable. The messages stay queued.
 *   4    Drain (bench_drain.c). The backlog of rows 1-3, topped up to drain_msgs, consumed by
 *        CONSUMERS threads with credit 1 that ack every delivery. Afterwards
 *        the broker must report the queue empty, or the run fails.
 *        Again by one consumer with credit 64, and by `sluice consume -c 64`
 *        (bench_disk.c), one process, its output to /dev/null.
 *   5    Latency (bench_latency.c). A producer publishes at a steady rate,
 *        open loop, and a consumer in this same process records receive
 *        time minus send time: p50 and p99.
 *   6    Dispatch (bench_sched.c). dispatch_msgs spread over the levels,
 *        acked by BENCH_SCHED_POOLS consumers with credit BENCH_SCHED_CREDIT,
 *        each in a pool of its own (three serve one level each), until the
 *        broker reports the queue empty.
 *   7    Starvation (bench_sched.c), two rows. One consumer acks a level-0
 *        backlog of about BENCH_SCHED_BUSY_MS of its work; how long one
 *        message published after it to the lowest level waits, with no
 *        deadline and with BENCH_SCHED_DEADLINE_MS on its level.
 *   7b   Metering (bench_meter.c), five rows: delivered rates of backlogged buckets.
 *   8    The pick rule alone (bench_pick.c): disp_pick, linked in from the
 *        broker, over 16 levels holding 1,000,000 messages. No broker.
 *   1p-5p The peer (bench_peer.c; with --spawn, when beanstalkd is
 *        installed): beanstalkd -f 0 measured right after each of rows 1-5,
 *        the ratio rows at the end.
 *   3c-4c Rows 3 and 4 again against a second spawned broker with CURVE and
 *        auth on (bench_curve.c; with --spawn only), right after the first
 *        broker's rows: what encryption and the role check cost.
 *   8b   Tenants (scen_tenants.c; with --spawn only), on brokers of their
 *        own: a quiet tenant's p99 wait beside a 100,000 backlog, FIFO and
 *        fair by tag; dispatch with 1,000 tags waiting; RSS per waiting tag.
 *   8c   The sink used at its limit (bench_sinkuse.c; with --spawn only), on
 *        brokers, sinks and Redis of their own: the share of a burst-1 sink's
 *        rate a backlog gets at 100 to 5,000/s, three ways.
 *   8d   HTTP (bench_http.c; with --spawn only), on a broker with --http:
 *        publish over HTTP against the ZeroMQ 1 x 1 row, the 1 x 100 row
 *        with four consoles open, the snapshot's cost to the loop.
 *   9-11 Raw limits of the machine (rows in bench_limits.c, measured by
 *        bench_raw.c): LMDB durable commits of 1 and of LMDB_BATCH_PUTS
 *        puts per transaction, and a ZeroMQ DEALER/ROUTER echo over ipc://. They bound what any broker built on
 *        these libraries can do here. bench_raw.c is the one file of the
 *        bench that includes lmdb.h and zmq.h: everything that talks to
 *        Sluice goes through sluice.h (bench_client.c).
 *
 * Passes. With --spawn, rows 1-7 run on a broker with the defaults (and
 * the peer beside it); then the CURVE broker's; then a broker with
 * --ack-flush-ms 0 runs the drain with every ack durable
 * before its OK; then, with --slowdisk, a third broker whose every flush is
 * SLOW_FLUSH_US longer (the LD_PRELOAD shim of tools/slowdisk/) runs rows
 * 1-5 again, each label ending ", flushes +1 ms". Right after row 5 over
 * the stream, the ideal log at the latency row's rate (bench_disk.c: what
 * publish -> durable can be on this disk, beside row 5's p99, in the same
 * minute, since the disk's tail drifts within minutes). After the raw
 * rows, one raw flush, and two ratio rows state rows 1 and 2 against their
 * targets: 1 x 1 against one flush plus one round trip, 4 x 1 against
 * 1 x 1, all measured in this run.
 *
 * This file is the driver: it owns the run (struct bench), defines each
 * row - what it measures, its label, its target - and runs the rows in
 * order; bench_args.c holds its --help and options. Rows 1-3 and 5 are
 * measured here, row 4 in bench_drain.c, both on the workers of
 * bench_workers.c (one thread and one client each), the others in the files
 * named above; stream_run runs a row again over the spawned broker's stream
 * endpoint. bench_table.c keeps the results and prints the table,
 * bench_spawn.c owns the spawned broker, and bench_core.c the ground they
 * all share: the stop flag, the clock, messages, the timed loop, threads.
 *
 * Lifecycle. All files live in one fresh directory under /tmp: the spawned
 * broker's data, socket and log, the LMDB environments and the ZeroMQ socket
 * of the raw rows. With --spawn the broker starts with --ready-fd and is
 * waited for; it runs in its own process group, so a Ctrl-C reaches only
 * the bench, which then stops it in order: SIGTERM by PID after the broker
 * rows, SIGKILL if it does not exit in time. Its log is shown when it
 * fails. The directory is removed on every exit path.
 *
 * Errors. A missed target is a result, not a failure: it shows as MISS and
 * the exit status stays 0. An actual error - the broker unreachable, a
 * publish refused, a delivery that never comes, a queue left non-empty -
 * ends the run with a message on stderr and status 1, after printing the
 * rows already measured.
 *
 * Bounds. Every loop stops at a deadline or a signal and at a count, and
 * every wait for the broker has a timeout, so a broken broker makes the
 * bench fail, never hang.
 *
 * Threads. An sl_client belongs to one thread at a time. The main thread
 * connects every client (and subscribes consumers), hands them to workers
 * with pthread_create, takes them back with pthread_join and closes them.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_args.h"
#include "bench_client.h"
#include "bench_core.h"
#include "bench_disk.h"
#include "bench_guard.h"
#include "bench_ha.h"
#include "bench_http.h"
#include "bench_curve.h"
#include "bench_latency.h"
#include "bench_meter.h"
#include "bench_pairs.h"
#include "bench_peer.h"
#include "bench_pick.h"
#include "bench_raw.h"
#include "bench_run.h"
#include "bench_sched.h"
#include "bench_sinkuse.h"
#include "bench_spawn.h"
#include "bench_table.h"
#include "bench_workers.h"
#include "scen.h"
#include "scen_tenants.h"
#include "sluice.h"



#define TARGET_SEND_WINDOW_PER_S 150000
#define TARGET_P99_SLOW_MS       5.0
#define TARGET_KEEP_UP           0.97   /* deliveries / publishes in the latency row */
#define SLOW_FLUSH_US            1000   /* the slow pass: each flush 1 ms longer */

_Static_assert(PRODUCERS <= BENCH_WORKERS_MAX && CONSUMERS <= BENCH_WORKERS_MAX,
               "BENCH_WORKERS_MAX too small");

void rate_add(bench *b, const char *scenario, uint64_t count, int64_t elapsed_ns, const char *unit,
              bench_table_goal g, double target)
{
    bench_table_add(&b->table, scenario, bench_core_per_s(count, elapsed_ns), 0, unit, g, target);
}

/* ---- rows 1-3: confirmed enqueue ---- */

/* enqueue_sync runs a row of confirmed publishes; its rate goes to
 * *per_s too. The targets of rows 1 and 2 are ratios (the ratio rows). */
static int enqueue_sync(bench *b, size_t producers, const char *scenario, double *per_s)
{
    bench_worker w[BENCH_WORKERS_MAX] = {{0}};
    uint64_t msgs;
    int64_t elapsed_ns;
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    if (bench_workers_run(b->endpoint, b->seconds, w, producers, 0, bench_workers_produce, &msgs,
                          &elapsed_ns) != 0)
        return -1;
    rate_add(b, scenario, msgs, elapsed_ns, producers > 1 ? "msgs/s total" : "msgs/s",
             BENCH_TABLE_NO_GOAL, 0);
    double got = bench_core_per_s(msgs, elapsed_ns);
    if (!b->slow)
        *per_s = got;
    return 0;
}

static int row_send_one(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "confirmed enqueue, 1 producer, 1 outstanding%s", b->pass);
    return enqueue_sync(b, 1, scenario, b->streaming ? &b->one_stream_per_s : &b->one_per_s);
}

static int row_send_many(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "confirmed enqueue, %d producers x 1 outstanding%s",
             PRODUCERS, b->pass);
    return enqueue_sync(b, PRODUCERS, scenario, b->streaming ? &b->many_stream_per_s : &b->many_per_s);
}

/* stream_run runs row over the spawned broker's stream endpoint
 * (--stream-listen: no ZeroMQ between the client and the loop), each label
 * ending ", stream". Only on the first broker's pass. */
static int stream_run(bench *b, int (*row)(bench *))
{
    if (!b->broker.stream_endpoint[0] || b->slow || b->curve)
        return 0;
    const char *zmq_endpoint = b->endpoint;
    b->endpoint = b->broker.stream_endpoint;
    b->pass = ", stream";
    b->streaming = 1;
    int rc = row(b);
    b->endpoint = zmq_endpoint;
    b->pass = "";
    b->streaming = 0;
    return rc;
}

static int row_send_one(bench *b);
static int row_send_many(bench *b);
static int row_latency(bench *b);

static int row_send_one_stream(bench *b)
{
    return stream_run(b, row_send_one);
}

static int row_send_many_stream(bench *b)
{
    return stream_run(b, row_send_many);
}

static int row_drain_stream(bench *b)
{
    return stream_run(b, row_drain);
}

static int row_latency_stream(bench *b)
{
    return stream_run(b, row_latency);
}

static int row_send_window(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "confirmed enqueue, 1 producer, %d outstanding%s",
             WINDOW_MSGS, b->pass);
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    sl_client *c = NULL;
    uint64_t confirmed;
    int64_t last_ns;
    if (bench_client_open(b->endpoint, &c) != 0)
        return -1;
    int64_t start_ns = bench_core_now_ns();
    int64_t deadline_ns = start_ns + b->seconds * BENCH_CORE_NS_PER_S;
    /* a smoke run publishes at most drain_msgs here: a second of this row
     * is some 300,000 messages, which the drain would take tens of seconds
     * to take back (minutes under a sanitizer) */
    int rc = bench_client_publish_window(c, WINDOW_MSGS, deadline_ns, b->quick ? b->drain_msgs : BENCH_CORE_MAX_OPS,
                                         &confirmed, &last_ns);
    sl_close(&c);
    if (rc != 0)
        return -1;
    rate_add(b, scenario, confirmed, last_ns - start_ns, "msgs/s", BENCH_TABLE_AT_LEAST,
             TARGET_SEND_WINDOW_PER_S);
    if (!b->slow)
        *(b->curve ? &b->curve_window_per_s : &b->window_per_s) = bench_core_per_s(confirmed, last_ns - start_ns);
    return 0;
}

/* ---- row 5: publish -> deliver latency ---- */

static int row_latency(bench *b)
{
    char scenario[96];
    double p50_ms, p99_ms, delivered_per_s;
    bench_core_progress("publish->deliver latency at %d msgs/s, consumer credit %d (%d s)",
                        BENCH_LATENCY_RATE_PER_S, BENCH_LATENCY_CREDIT, b->seconds);
    if (bench_latency_measure(b->endpoint, b->seconds, &p50_ms, &p99_ms, &delivered_per_s) != 0)
        return -1;
    if (bench_core_stopping())
        return 0;
    snprintf(scenario, sizeof scenario, "publish->deliver latency p50 at %d msgs/s%s",
             BENCH_LATENCY_RATE_PER_S, b->pass);
    bench_table_add(&b->table, scenario, p50_ms, 3, "ms", BENCH_TABLE_NO_GOAL, 0);
    snprintf(scenario, sizeof scenario, "publish->deliver latency p99 at %d msgs/s%s",
             BENCH_LATENCY_RATE_PER_S, b->pass);
    /* On the real disk the target is relative (row_peer_ratios): the ideal
     * log's p99 + TARGET_P99_OVER_IDEAL_MS, and the peer's p99, both of this
     * run, since the disk's own tail is not the broker's. */
    bench_table_add(&b->table, scenario, p99_ms, 3, "ms", b->slow ? BENCH_TABLE_AT_MOST : BENCH_TABLE_NO_GOAL,
                    TARGET_P99_SLOW_MS);
    if (!b->slow)
        *(b->streaming ? &b->p99_stream_ms : &b->p99_ms) = p99_ms;
    snprintf(scenario, sizeof scenario, "deliveries in that row, credit %d acking each%s",
             BENCH_LATENCY_CREDIT, b->pass);
    bench_table_add(&b->table, scenario, delivered_per_s, 0, "msgs/s", BENCH_TABLE_AT_LEAST,
                    TARGET_KEEP_UP * BENCH_LATENCY_RATE_PER_S);
    return 0;
}

/* ---- main ---- */

typedef int (*row_fn)(bench *);

/* Rows 1-7 need the broker, in this order: 1-3 build the backlog that 4
 * drains, and 5-7 start from an empty queue. Rows 8-11 run once the broker
 * has stopped. */
static const row_fn broker_rows[] = {row_send_one,       row_send_one_stream, row_peer_one,       row_peer_one_pairs,
                                     row_send_many,      row_send_many_stream, row_peer_many,    row_send_window,
                                     row_peer_window,    row_send_headers,    row_drain,          row_drain_stream,
                                     row_ideal_drain,    row_peer_drain,      row_drain_one,      row_consume_cli,
                                     row_latency,        row_latency_stream,  row_ideal_log,      row_peer_latency,
                                     row_dispatch,       row_starvation,      row_meter};
/* --peer: each row beside the peer's, alternating, and the disk's flush. */
static const row_fn peer_rows[] = {row_flush,          row_send_one,         row_send_one_stream, row_peer_one,
                                   row_peer_one_pairs, row_send_many,        row_send_many_stream, row_peer_many,
                                   row_send_window,    row_peer_window,      row_drain,           row_drain_stream,
                                   row_ideal_drain,    row_peer_drain,       row_latency,         row_latency_stream,
                                   row_ideal_log,      row_peer_latency};
static const row_fn peer_local_rows[] = {row_zmq, row_ratios, row_peer_ratios};
/* A second broker, with --ack-flush-ms=0: the drain with every ack durable. */
static const row_fn durable_rows[] = {row_drain_durable};
/* A third, on the slowed disk (--slowdisk): every flush SLOW_FLUSH_US longer. */
static const row_fn slow_rows[] = {row_send_one, row_send_many, row_send_window, row_drain,
                                   row_latency, row_meter_beside};
static const row_fn local_rows[] = {row_pick, row_pick_fair, row_lmdb_single, row_lmdb_batch, row_zmq, row_flush,
                                    row_ratios, row_peer_ratios};
/* A fourth, with CURVE and auth on (bench_curve.c): what encryption and the
 * role check cost. */
static const row_fn curve_rows[] = {row_send_window, row_drain, row_curve_window_pairs};

/* rows_run runs fns in order, stopping at the first error. A row that a
 * signal cut short is dropped: its figures cover an unknown part of it. */
static int rows_run(bench *b, const row_fn *fns, size_t n)
{
    for (size_t i = 0; i < n && !bench_core_stopping(); i++) {
        size_t rows_before = b->table.nrows;
        int rc = fns[i](b);
        if (bench_core_stopping())
            b->table.nrows = rows_before;
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* pass_run starts another broker in its own subdirectory (name), with
 * extra_arg and on a disk slowed by slowdisk when given, runs fns with
 * label appended to each row's label, and stops it. */
static int pass_run(bench *b, const char *name, const char *extra_arg, const char *label,
                    const char *slowdisk, const row_fn *fns, size_t n)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s/%s", b->dir, name);
    if (mkdir(dir, 0700) != 0)
        return bench_core_fail("cannot create %s: %s", dir, strerror(errno));
    const char *const extra[] = {extra_arg, NULL};
    int rc = bench_spawn_start_with(&b->broker, b->sluiced, dir, extra, slowdisk, SLOW_FLUSH_US);
    if (rc != 0)
        return -1;
    b->endpoint = b->broker.endpoint;
    b->pass = label;
    b->slow = slowdisk != NULL;
    uint64_t drain_msgs = b->drain_msgs;
    if (b->drain_msgs > DRAIN_MSGS_QUICK)
        b->drain_msgs = DRAIN_MSGS_QUICK; /* the same shape, in less time on a slow disk */
    rc = rows_run(b, fns, n);
    b->drain_msgs = drain_msgs;
    b->pass = "";
    b->slow = 0;
    if (bench_spawn_stop(&b->broker) != 0)
        rc = -1;
    return rc;
}

/* rm_one removes one entry of the run's directory, deepest first. */
static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* wants_scenario tells whether the command line asks for a load scenario. */
static bool wants_scenario(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--scenario") == 0 || strncmp(argv[i], "--scenario=", 11) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    if (wants_scenario(argc, argv))
        return scen_main(argc, argv);
    bench_args a = {.endpoint = NULL};
    bench_args_parse(argc, argv, &a);
    bench b = {.endpoint = a.endpoint, .slowdisk = a.slowdisk, .seconds = a.seconds, .quick = a.quick,
               .drain_msgs = a.drain_msgs,
               .dispatch_msgs = a.dispatch_msgs, .starve_msgs = a.starve_msgs};
    const char *spawn = a.spawn;
    bench_core_catch_signals();

    time_t started = time(NULL);
    snprintf(b.dir, sizeof b.dir, "/tmp/sluice-bench-XXXXXX");
    if (!mkdtemp(b.dir)) {
        bench_core_fail("cannot create a directory under /tmp: %s", strerror(errno));
        return 1;
    }
    int rc = 0;
    b.sluiced = spawn;
    b.pass = "";
    if (a.ha_only) {
        rc = row_zmq(&b) != 0 || row_flush(&b) != 0 ? -1 : bench_ha_rows(&b);
        nftw(b.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (b.table.nrows)
            bench_table_print(&b.table, started, b.seconds, stdout);
        return bench_core_stopping() ? 130 : rc != 0;
    }
    if (a.tenants_only || a.sink_only || a.http_only) {
        rc = a.tenants_only ? scen_tenants_rows(&b) : a.sink_only ? bench_sinkuse_rows(&b) : bench_http_rows(&b, spawn);
        nftw(b.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (b.table.nrows)
            bench_table_print(&b.table, started, b.seconds, stdout);
        return bench_core_stopping() ? 130 : rc != 0;
    }
    if (spawn && (rc = bench_spawn_start(&b.broker, spawn, b.dir)) == 0)
        b.endpoint = b.broker.endpoint;
    if (spawn && rc == 0) /* the peer, beside the first broker (bench_peer.c) */
        rc = bench_peer_start(&b);
    if (a.peer_only) {
        if (rc == 0)
            rc = rows_run(&b, peer_rows, sizeof peer_rows / sizeof peer_rows[0]);
        if (bench_peer_stop(&b) != 0)
            rc = -1;
        if (bench_spawn_stop(&b.broker) != 0)
            rc = -1;
        if (rc == 0)
            rc = rows_run(&b, peer_local_rows, sizeof peer_local_rows / sizeof peer_local_rows[0]);
        nftw(b.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (b.table.nrows)
            bench_table_print(&b.table, started, b.seconds, stdout);
        return bench_core_stopping() ? 130 : rc != 0;
    }
    if (!spawn) /* a broker the bench did not start: look first (bench_guard.h) */
        rc = bench_guard_check(b.endpoint, a.force);
    if (rc == 0)
        rc = rows_run(&b, broker_rows, sizeof broker_rows / sizeof broker_rows[0]);
    if (bench_guard_on() && bench_guard_pools_delete(b.endpoint) != 0)
        rc = -1;
    if (bench_peer_stop(&b) != 0)
        rc = -1;
    if (bench_spawn_stop(&b.broker) != 0)
        rc = -1;
    if (rc == 0 && spawn) { /* the same enqueue and drain, encrypted, soon after the plain ones (their ratio rows) */
        char dir[96];
        snprintf(dir, sizeof dir, "%s/curve", b.dir);
        b.pass = ", CURVE";
        b.curve = 1;
        if (mkdir(dir, 0700) != 0 || bench_curve_start(&b.broker, spawn, dir) != 0)
            rc = -1;
        else
            b.endpoint = b.broker.endpoint;
        if (rc == 0)
            rc = rows_run(&b, curve_rows, sizeof curve_rows / sizeof curve_rows[0]);
        if (bench_curve_stop(&b.broker) != 0)
            rc = -1;
        b.pass = "";
        b.curve = 0;
    }
    if (rc == 0 && spawn)
        rc = pass_run(&b, "durable", "--ack-flush-ms=0", ", --ack-flush-ms 0", NULL, durable_rows,
                      sizeof durable_rows / sizeof durable_rows[0]);
    if (rc == 0 && spawn && b.slowdisk)
        rc = pass_run(&b, "slow", NULL, ", flushes +1 ms", b.slowdisk, slow_rows,
                      sizeof slow_rows / sizeof slow_rows[0]);
    if (rc == 0 && spawn && !bench_core_stopping()) /* brokers of their own */
        rc = scen_tenants_rows(&b);
    if (rc == 0 && spawn && !bench_core_stopping()) /* brokers, sinks and Redis of their own */
        rc = bench_sinkuse_rows(&b);
    if (rc == 0 && spawn && !bench_core_stopping()) /* the HTTP server's rows, on a broker with --http */
        rc = bench_http_rows(&b, spawn);
    if (rc == 0)
        rc = rows_run(&b, local_rows, sizeof local_rows / sizeof local_rows[0]);
    if (rc == 0 && spawn && !bench_core_stopping()) /* a group of two and Redis (after the raw rows: their flush) */
        rc = bench_ha_rows(&b);
    nftw(b.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);

    if (b.table.nrows)
        bench_table_print(&b.table, started, b.seconds, stdout);
    if (bench_core_stopping()) {
        fprintf(stderr, "sluice-bench: interrupted\n");
        return 130;
    }
    if (rc != 0) {
        fprintf(stderr, "sluice-bench: stopped by the error above%s\n",
                b.table.nrows ? "; the table shows the rows measured before it" : "");
        return 1;
    }
    return 0;
}
