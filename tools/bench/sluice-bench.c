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
 *   4    Drain. The backlog of rows 1-3, topped up to drain_msgs, consumed by
 *        CONSUMERS threads with credit 1 that ack every delivery. Afterwards
 *        the broker must report the queue empty, or the run fails.
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
 *   8    The pick rule alone (bench_pick.c): disp_pick, linked in from the
 *        broker, over 16 levels holding 1,000,000 messages. No broker.
 *   3c-4c Rows 3 and 4 again against a second spawned broker with CURVE and
 *        auth on (bench_curve.c; with --spawn only): what encryption and the
 *        role check cost.
 *   9-11 Raw limits of the machine (bench_raw.c): LMDB durable commits of 1
 *        and of LMDB_BATCH_PUTS puts per transaction, and a ZeroMQ
 *        DEALER/ROUTER echo over ipc://. They bound what any broker built on
 *        these libraries can do here. bench_raw.c is the one file of the
 *        bench that includes lmdb.h and zmq.h: everything that talks to
 *        Sluice goes through sluice.h (bench_client.c).
 *
 * This file is the driver: it parses the options, owns the run (struct
 * bench), defines each row - what it measures, its label, its target - and
 * runs the rows in order. Rows 1-4 are measured here, on the workers of
 * bench_workers.c (one thread and one client each), the others in the
 * files named above. bench_table.c keeps the results and prints the table,
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
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_curve.h"
#include "bench_latency.h"
#include "bench_pick.h"
#include "bench_raw.h"
#include "bench_sched.h"
#include "bench_spawn.h"
#include "bench_table.h"
#include "bench_workers.h"
#include "scen.h"
#include "sluice.h"

#define DEFAULT_SECONDS     3
#define MAX_SECONDS         3600
#define PRODUCERS           4
#define CONSUMERS           4
#define WINDOW_MSGS         100       /* row 3: publishes outstanding */
#define DRAIN_MSGS          100000    /* row 4: backlog at least this deep */
#define DRAIN_MSGS_QUICK    20000
#define TOPUP_TIMEOUT_S     300
#define DISPATCH_MSGS       80000     /* row 6 */
#define DISPATCH_MSGS_QUICK 20000
#define STARVE_MSGS_QUICK   10000     /* row 7; the full run sizes it by a probe */
#define LMDB_BATCH_PUTS     100

#define TARGET_SEND_ONE_PER_S    15000
#define TARGET_SEND_MANY_PER_S   30000
#define TARGET_SEND_WINDOW_PER_S 150000
#define TARGET_DRAIN_PER_S       40000
#define TARGET_P99_MS            1.0
#define TARGET_PICKS_PER_S       2000000

_Static_assert(PRODUCERS <= BENCH_WORKERS_MAX && CONSUMERS <= BENCH_WORKERS_MAX,
               "BENCH_WORKERS_MAX too small");

/* ---- the run ---- */

typedef struct bench {
    const char *endpoint;   /* the broker's, or NULL for the default */
    char dir[64];           /* the run's temporary directory */
    bench_spawn broker;     /* with --spawn */
    const char *suffix;     /* appended to the rows' labels (", CURVE"), or NULL */
    int seconds;
    uint64_t drain_msgs;
    uint64_t dispatch_msgs, starve_msgs; /* starve_msgs 0: sized by a probe */
    bench_table table;
} bench;

/* rate_add adds a row of count per second over elapsed_ns. */
static void rate_add(bench *b, const char *scenario, uint64_t count, int64_t elapsed_ns,
                     const char *unit, bench_table_goal g, double target)
{
    bench_table_add(&b->table, scenario, bench_core_per_s(count, elapsed_ns), 0, unit, g, target);
}

/* ---- rows 1-3: confirmed enqueue ---- */

static int enqueue_sync(bench *b, size_t producers, const char *scenario, double target)
{
    bench_worker w[BENCH_WORKERS_MAX] = {{0}};
    uint64_t msgs;
    int64_t elapsed_ns;
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    if (bench_workers_run(b->endpoint, b->seconds, w, producers, 0, bench_workers_produce, &msgs,
                          &elapsed_ns) != 0)
        return -1;
    rate_add(b, scenario, msgs, elapsed_ns, producers > 1 ? "msgs/s total" : "msgs/s",
             BENCH_TABLE_AT_LEAST, target);
    return 0;
}

static int row_send_one(bench *b)
{
    return enqueue_sync(b, 1, "confirmed enqueue, 1 producer, 1 outstanding",
                        TARGET_SEND_ONE_PER_S);
}

static int row_send_many(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "confirmed enqueue, %d producers x 1 outstanding",
             PRODUCERS);
    return enqueue_sync(b, PRODUCERS, scenario, TARGET_SEND_MANY_PER_S);
}

static int row_send_window(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "confirmed enqueue, 1 producer, %d outstanding%s",
             WINDOW_MSGS, b->suffix ? b->suffix : "");
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    sl_client *c = NULL;
    uint64_t confirmed;
    int64_t last_ns;
    if (bench_client_open(b->endpoint, &c) != 0)
        return -1;
    int64_t start_ns = bench_core_now_ns();
    int64_t deadline_ns = start_ns + b->seconds * BENCH_CORE_NS_PER_S;
    int rc = bench_client_publish_window(c, WINDOW_MSGS, deadline_ns, BENCH_CORE_MAX_OPS,
                                         &confirmed, &last_ns);
    sl_close(&c);
    if (rc != 0)
        return -1;
    rate_add(b, scenario, confirmed, last_ns - start_ns, "msgs/s", BENCH_TABLE_AT_LEAST,
             TARGET_SEND_WINDOW_PER_S);
    return 0;
}

/* ---- row 4: drain ---- */

/* topup publishes until at least want messages are ready; *ready is then
 * how many are. */
static int topup(bench *b, uint64_t want, uint64_t *ready)
{
    bench_client_totals t;
    if (bench_client_totals_get(b->endpoint, &t) != 0)
        return -1;
    *ready = t.ready;
    if (t.ready >= want)
        return 0;
    sl_client *c = NULL;
    uint64_t missing = want - t.ready, confirmed;
    int64_t last_ns;
    bench_core_progress("top-up: %" PRIu64 " queued, publishing %" PRIu64 " more", t.ready,
                        missing);
    if (bench_client_open(b->endpoint, &c) != 0)
        return -1;
    int64_t deadline_ns = bench_core_now_ns() + TOPUP_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    int rc = bench_client_publish_window(c, WINDOW_MSGS, deadline_ns, missing, &confirmed,
                                         &last_ns);
    sl_close(&c);
    if (rc == 0 && confirmed < missing && !bench_core_stopping())
        rc = bench_core_fail("top-up: only %" PRIu64 " of %" PRIu64 " publishes in %d s",
                             confirmed, missing, TOPUP_TIMEOUT_S);
    *ready += confirmed;
    return rc;
}

static int row_drain(bench *b)
{
    char scenario[96];
    uint64_t ready, msgs;
    int64_t elapsed_ns;
    bench_client_totals left;
    snprintf(scenario, sizeof scenario, "drain, %d consumers, credit 1, ack each%s", CONSUMERS,
             b->suffix ? b->suffix : "");
    if (topup(b, b->drain_msgs, &ready) != 0)
        return -1;
    bench_core_progress("%s (%" PRIu64 " messages)", scenario, ready);

    bench_worker w[BENCH_WORKERS_MAX] = {{0}};
    atomic_uint_fast64_t done_all = 0;
    for (size_t i = 0; i < CONSUMERS; i++) {
        w[i].target_msgs = ready;
        w[i].done_all = &done_all;
    }
    int rc = bench_workers_run(b->endpoint, b->seconds, w, CONSUMERS, 1, bench_workers_consume,
                               &msgs, &elapsed_ns);
    if (rc != 0 || bench_core_stopping() || bench_client_totals_get(b->endpoint, &left) != 0)
        return -1;
    if (left.ready || left.inflight || left.delayed)
        return bench_core_fail("queue not empty after the drain: %" PRIu64 " ready, %" PRIu64
                               " in flight, %" PRIu64 " delayed",
                               left.ready, left.inflight, left.delayed);
    rate_add(b, scenario, msgs, elapsed_ns, "msgs/s", BENCH_TABLE_AT_LEAST, TARGET_DRAIN_PER_S);
    return 0;
}

/* ---- row 5: publish -> deliver latency ---- */

static int row_latency(bench *b)
{
    char scenario[96];
    double p50_ms, p99_ms;
    bench_core_progress("publish->deliver latency at %d msgs/s, consumer credit %d (%d s)",
                        BENCH_LATENCY_RATE_PER_S, BENCH_LATENCY_CREDIT, b->seconds);
    if (bench_latency_measure(b->endpoint, b->seconds, &p50_ms, &p99_ms) != 0)
        return -1;
    if (bench_core_stopping())
        return 0;
    snprintf(scenario, sizeof scenario, "publish->deliver latency p50 at %d msgs/s",
             BENCH_LATENCY_RATE_PER_S);
    bench_table_add(&b->table, scenario, p50_ms, 3, "ms", BENCH_TABLE_NO_GOAL, 0);
    snprintf(scenario, sizeof scenario, "publish->deliver latency p99 at %d msgs/s",
             BENCH_LATENCY_RATE_PER_S);
    bench_table_add(&b->table, scenario, p99_ms, 3, "ms", BENCH_TABLE_AT_MOST, TARGET_P99_MS);
    return 0;
}

/* ---- rows 6-8: the scheduler ---- */

static int row_dispatch(bench *b)
{
    char scenario[96];
    uint64_t acked;
    int64_t elapsed_ns;
    snprintf(scenario, sizeof scenario, "end-to-end dispatch, %d pools", BENCH_SCHED_POOLS);
    bench_core_progress("%s, credit %d, ack each (%" PRIu64 " messages)", scenario,
                        BENCH_SCHED_CREDIT, b->dispatch_msgs);
    if (bench_sched_dispatch(b->endpoint, b->dispatch_msgs, &acked, &elapsed_ns) != 0)
        return -1;
    rate_add(b, scenario, acked, elapsed_ns, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

static int row_starvation(bench *b)
{
    char scenario[96];
    double plain_ms, deadline_ms;
    if (bench_sched_starvation(b->endpoint, b->starve_msgs, &plain_ms, &deadline_ms) != 0)
        return -1;
    bench_table_add(&b->table, "starvation: lowest level's max wait, no deadline", plain_ms, 1,
                    "ms", BENCH_TABLE_NO_GOAL, 0);
    snprintf(scenario, sizeof scenario, "starvation: lowest level's max wait, with a %g s deadline",
             BENCH_SCHED_DEADLINE_MS / 1000.0);
    bench_table_add(&b->table, scenario, deadline_ms, 1, "ms", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

static int row_pick(bench *b)
{
    char scenario[96];
    uint64_t picks;
    int64_t elapsed_ns;
    snprintf(scenario, sizeof scenario, "pick rule, %d levels, 1,000,000 waiting",
             BENCH_PICK_LEVELS);
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    bench_pick_measure(b->seconds, &picks, &elapsed_ns);
    rate_add(b, scenario, picks, elapsed_ns, "picks/s", BENCH_TABLE_AT_LEAST, TARGET_PICKS_PER_S);
    return 0;
}

/* ---- rows 9-11: raw limits ---- */

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

static int row_lmdb_single(bench *b)
{
    uint64_t commits;
    int64_t elapsed_ns;
    if (lmdb_run(b, 1, &commits, &elapsed_ns) != 0)
        return -1;
    rate_add(b, "raw: LMDB durable commit, 1 put of 100 B per txn", commits, elapsed_ns,
             "commits/s", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

static int row_lmdb_batch(bench *b)
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

static int row_zmq(bench *b)
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
    return 0;
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fprintf(f,
"usage: sluice-bench [--spawn PATH_TO_SLUICED | -b ENDPOINT] [--seconds S] [--quick]\n"
"\n"
"sluice-bench measures a Sluice broker against its performance targets, next to\n"
"the raw limits of this machine, and prints one table on stdout (progress goes\n"
"to stderr). Every message body is %d bytes. The rows:\n"
"\n"
"  confirmed enqueue   sl_send in a loop from 1 and from %d connections, then\n"
"                      sl_send_async keeping %d publishes outstanding. A publish\n"
"                      counts once the broker confirms it is durably stored.\n"
"  drain               %d consumers with credit 1 ack every delivery until the\n"
"                      queue is empty; it is first topped up to %d messages.\n"
"  latency             publish -> deliver at a steady %d msgs/s: p50 and p99.\n"
"  dispatch            %d consumers, each in its own pool (pool-0..2 serve one\n"
"                      level each, the rest every level), credit %d, ack every\n"
"                      delivery of %d messages spread over the levels.\n"
"  starvation          one consumer (pool starve) acks about %d ms of level-0\n"
"                      messages; how long one message on the lowest level waits\n"
"                      behind them, with no deadline and with a %d ms deadline.\n"
"  pick rule           the broker's pick rule alone, over %d levels holding\n"
"                      1,000,000 messages, with deadlines and aging; no broker.\n"
"  ..., CURVE         with --spawn: the windowed enqueue and the drain again,\n"
"                      against a second broker with --curve-secret and --auth.\n"
"  raw: LMDB           durable commits with 1 and with %d puts per transaction.\n"
"  raw: ZeroMQ         DEALER/ROUTER round trips over ipc://.\n"
"\n"
"The raw rows measure the machine, not Sluice: they bound what any broker built\n"
"on LMDB and ZeroMQ can do here. A row with a target shows yes or MISS.\n"
"\n"
"Options:\n"
"      --spawn PATH    start PATH (a sluiced binary) on an ipc:// endpoint in a\n"
"                      fresh directory under /tmp, and stop and remove it at the end\n"
"  -b, --broker EP     use the running broker at EP (default %s).\n"
"                      It should be idle: the drain row consumes and acknowledges\n"
"                      every message queued at it. The scheduler rows add the\n"
"                      pools pool-0..7 and starve, and change the lowest level's\n"
"                      deadline while they run (it is put back).\n"
"  -s, --seconds S     length of each timed row, 1..%d (default %d)\n"
"  -q, --quick         smoke run: 1 s per row, a %d-message drain, %d messages\n"
"                      to dispatch and a %d-message starvation backlog\n"
"  -h, --help          show this help\n"
"\n"
"Exit status: 0 when every row ran, whether or not it met its target; 1 on an\n"
"error (broker unreachable, a publish refused, a message lost); 2 on a usage\n"
"error; 130 when interrupted.\n"
"\n"
"Examples:\n"
"  sluice-bench --spawn bin/sluiced\n"
"  sluice-bench --spawn bin/sluiced --quick\n"
"  sluice-bench -b tcp://127.0.0.1:7470 --seconds 10\n"
"\n"
"Load scenarios (a broker, a throttled sink and consumers, end to end, with a\n"
"CSV, a chart and a summary): sluice-bench --scenario\n"
"throttle-quiz|priorities|ingest [options]; see sluice-bench --scenario x --help.\n",
            BENCH_CORE_BODY_BYTES, PRODUCERS, WINDOW_MSGS, CONSUMERS, DRAIN_MSGS,
            BENCH_LATENCY_RATE_PER_S, BENCH_SCHED_POOLS, BENCH_SCHED_CREDIT, DISPATCH_MSGS,
            BENCH_SCHED_BUSY_MS, BENCH_SCHED_DEADLINE_MS, BENCH_PICK_LEVELS, LMDB_BATCH_PUTS,
            SL_DEFAULT_ENDPOINT, MAX_SECONDS, DEFAULT_SECONDS, DRAIN_MSGS_QUICK,
            DISPATCH_MSGS_QUICK, STARVE_MSGS_QUICK);
}

enum { OPT_SPAWN = 256 };

static const struct option options[] = {
    {"spawn", required_argument, NULL, OPT_SPAWN},
    {"broker", required_argument, NULL, 'b'},
    {"seconds", required_argument, NULL, 's'},
    {"quick", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* parse_args fills b and *spawn; exits on --help and on a usage error. */
static void parse_args(int argc, char **argv, bench *b, const char **spawn)
{
    int opt, seconds = 0;
    bool quick = false;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "b:s:qh", options, NULL)) != -1) {
        char *end;
        long v;
        switch (opt) {
        case OPT_SPAWN:
            *spawn = optarg;
            break;
        case 'b':
            b->endpoint = optarg;
            break;
        case 's':
            errno = 0;
            v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > MAX_SECONDS) {
                fprintf(stderr, "sluice-bench: --seconds: '%s' is not a number from 1 to %d\n",
                        optarg, MAX_SECONDS);
                exit(2);
            }
            seconds = (int)v;
            break;
        case 'q':
            quick = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            fprintf(stderr, "sluice-bench: unknown or incomplete option '%s'; try --help\n",
                    argv[optind - 1]);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-bench: unexpected argument '%s'; try --help\n", argv[optind]);
        exit(2);
    }
    if (*spawn && b->endpoint) {
        fprintf(stderr, "sluice-bench: --spawn and -b exclude each other\n");
        exit(2);
    }
    b->seconds = seconds ? seconds : quick ? 1 : DEFAULT_SECONDS;
    b->drain_msgs = quick ? DRAIN_MSGS_QUICK : DRAIN_MSGS;
    b->dispatch_msgs = quick ? DISPATCH_MSGS_QUICK : DISPATCH_MSGS;
    b->starve_msgs = quick ? STARVE_MSGS_QUICK : 0;
}

typedef int (*row_fn)(bench *);

/* Rows 1-7 need the broker, in this order: 1-3 build the backlog that 4
 * drains, and 5-7 start from an empty queue. Rows 8-11 run once the broker
 * has stopped. */
static const row_fn broker_rows[] = {row_send_one, row_send_many, row_send_window, row_drain,
                                     row_latency,  row_dispatch,  row_starvation};
static const row_fn local_rows[] = {row_pick, row_lmdb_single, row_lmdb_batch, row_zmq};
/* Rows 3c-4c, against the CURVE broker. */
static const row_fn curve_rows[] = {row_send_window, row_drain};

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
    bench b = {.endpoint = NULL};
    const char *spawn = NULL;
    parse_args(argc, argv, &b, &spawn);
    bench_core_catch_signals();

    time_t started = time(NULL);
    snprintf(b.dir, sizeof b.dir, "/tmp/sluice-bench-XXXXXX");
    if (!mkdtemp(b.dir)) {
        bench_core_fail("cannot create a directory under /tmp: %s", strerror(errno));
        return 1;
    }
    int rc = 0;
    if (spawn && (rc = bench_spawn_start(&b.broker, spawn, b.dir)) == 0)
        b.endpoint = b.broker.endpoint;
    if (rc == 0)
        rc = rows_run(&b, broker_rows, sizeof broker_rows / sizeof broker_rows[0]);
    if (bench_spawn_stop(&b.broker) != 0)
        rc = -1;
    if (rc == 0 && spawn) { /* the same enqueue and drain, encrypted */
        char dir[96];
        snprintf(dir, sizeof dir, "%s/curve", b.dir);
        b.suffix = ", CURVE";
        if (mkdir(dir, 0700) != 0 || bench_curve_start(&b.broker, spawn, dir) != 0)
            rc = -1;
        else
            b.endpoint = b.broker.endpoint;
        if (rc == 0)
            rc = rows_run(&b, curve_rows, sizeof curve_rows / sizeof curve_rows[0]);
        if (bench_curve_stop(&b.broker) != 0)
            rc = -1;
    }
    if (rc == 0)
        rc = rows_run(&b, local_rows, sizeof local_rows / sizeof local_rows[0]);
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
