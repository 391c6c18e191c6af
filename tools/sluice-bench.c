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
 *   6-8  Raw limits of the machine (bench_raw.c): LMDB durable commits of 1
 *        and of LMDB_BATCH_PUTS puts per transaction, and a ZeroMQ
 *        DEALER/ROUTER echo over ipc://. They bound what any broker built on
 *        these libraries can do here. bench_raw.c is the one file of the
 *        bench that includes lmdb.h and zmq.h: everything that talks to
 *        Sluice goes through sluice.h (bench_client.c).
 *
 * This file is the driver: it parses the options, owns the run (struct
 * bench), defines each row - what it measures, its label, its target - and
 * runs the rows in order. Rows 1-4 are here, on workers of one thread and
 * one client each. bench_table.c keeps the results and prints the table,
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
#include "bench_latency.h"
#include "bench_raw.h"
#include "bench_spawn.h"
#include "bench_table.h"
#include "sluice.h"

#define DEFAULT_SECONDS     3
#define MAX_SECONDS         3600
#define PRODUCERS           4
#define CONSUMERS           4
#define MAX_WORKERS         4         /* the larger of PRODUCERS and CONSUMERS */
#define WINDOW_MSGS         100       /* row 3: publishes outstanding */
#define DRAIN_MSGS          100000    /* row 4: backlog at least this deep */
#define DRAIN_MSGS_QUICK    20000
#define TOPUP_TIMEOUT_S     300
#define LMDB_BATCH_PUTS     100

#define TARGET_SEND_ONE_PER_S    15000
#define TARGET_SEND_MANY_PER_S   30000
#define TARGET_SEND_WINDOW_PER_S 150000
#define TARGET_DRAIN_PER_S       40000
#define TARGET_P99_MS            1.0

_Static_assert(PRODUCERS <= MAX_WORKERS && CONSUMERS <= MAX_WORKERS, "MAX_WORKERS too small");

/* ---- the run ---- */

typedef struct bench {
    const char *endpoint;   /* the broker's, or NULL for the default */
    char dir[64];           /* the run's temporary directory */
    bench_spawn broker;     /* with --spawn */
    int seconds;
    uint64_t drain_msgs;
    bench_table table;
} bench;

/* rate_add adds a row of count per second over elapsed_ns. */
static void rate_add(bench *b, const char *scenario, uint64_t count, int64_t elapsed_ns,
                     const char *unit, bench_table_goal g, double target)
{
    bench_table_add(&b->table, scenario, bench_core_per_s(count, elapsed_ns), 0, unit, g, target);
}

/* ---- workers: one thread, one client ---- */

typedef struct worker {
    sl_client *c;
    int64_t start_ns, deadline_ns;  /* the row's; the deadline binds producers */
    uint64_t target_msgs;           /* drain: all workers together */
    atomic_uint_fast64_t *done_all; /* drain: messages acked by all workers */
    uint64_t msgs;                  /* done by this worker */
    int64_t last_ns;                /* when its last message was done */
    int rc;
} worker;

typedef struct send_one {
    sl_client *c;
    sl_put put;
} send_one;

/* send_one_step is one timed step of a producer: a confirmed publish. */
static int send_one_step(void *arg)
{
    send_one *s = arg;
    int rc = sl_send(s->c, &s->put, NULL);
    return rc == SL_OK ? 0 : bench_client_fail("sl_send", s->c, rc);
}

/* producer_run sends confirmed publishes one at a time until the deadline. */
static void *producer_run(void *arg)
{
    worker *w = arg;
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    send_one s = {.c = w->c,
                  .put = {.body = body, .body_len = sizeof body, .level = SL_LEVEL_DEFAULT}};
    w->rc = bench_core_timed(send_one_step, &s, w->start_ns, w->deadline_ns, &w->msgs,
                             &w->last_ns);
    return NULL;
}

/* consumer_run receives and acks until all workers together have acked
 * target_msgs. Progress by any worker keeps it patient. */
static void *consumer_run(void *arg)
{
    worker *w = arg;
    uint64_t seen = 0;
    int64_t seen_ns = bench_core_now_ns();
    w->last_ns = w->start_ns;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        int took = bench_client_take(w->c, NULL, NULL);
        if (took < 0) {
            w->rc = -1;
            break;
        }
        if (took == 0) {
            uint64_t done = atomic_load(w->done_all);
            if (done >= w->target_msgs)
                break;
            if (done != seen) {
                seen = done;
                seen_ns = bench_core_now_ns();
            } else if (bench_core_now_ns() - seen_ns >
                       BENCH_CORE_IDLE_TIMEOUT_MS * BENCH_CORE_NS_PER_MS) {
                w->rc = bench_core_fail("drain stalled: no delivery for %d ms with %" PRIu64
                                        " of %" PRIu64 " messages acked",
                                        BENCH_CORE_IDLE_TIMEOUT_MS, done, w->target_msgs);
                break;
            }
            continue;
        }
        w->msgs++;
        atomic_fetch_add(w->done_all, 1);
        w->last_ns = bench_core_now_ns();
    }
    return NULL;
}

/* workers_run connects n workers to the broker, subscribing each with
 * credit unless it is 0, runs fn on each from a common start (producers
 * until b->seconds later, consumers until their target), then closes their
 * clients. n is at most MAX_WORKERS. Returns 0 when all ran and none failed;
 * *msgs sums the workers' messages and *elapsed_ns runs from the start to
 * the last message done. */
static int workers_run(const bench *b, worker *w, size_t n, unsigned credit, void *(*fn)(void *),
                       uint64_t *msgs, int64_t *elapsed_ns)
{
    bench_core_thread t[MAX_WORKERS] = {{0}};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = bench_client_open(b->endpoint, &w[i].c);
        if (rc == 0 && credit && (rc = sl_subscribe(w[i].c, NULL, NULL, 0, credit)) != SL_OK)
            rc = bench_client_fail("sl_subscribe", w[i].c, rc);
    }
    int64_t start_ns = bench_core_now_ns(), last_ns = start_ns;
    for (size_t i = 0; i < n; i++) {
        w[i].start_ns = start_ns;
        w[i].deadline_ns = start_ns + b->seconds * BENCH_CORE_NS_PER_S;
        t[i] = (bench_core_thread){.fn = fn, .arg = &w[i]};
    }
    if (rc == 0)
        rc = bench_core_threads_start(t, n); /* those started still end on their own */
    bench_core_threads_join(t, n);
    *msgs = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= w[i].rc;
        *msgs += w[i].msgs;
        if (w[i].last_ns > last_ns)
            last_ns = w[i].last_ns;
        sl_close(&w[i].c);
    }
    *elapsed_ns = last_ns - start_ns;
    return rc;
}

/* ---- rows 1-3: confirmed enqueue ---- */

static int enqueue_sync(bench *b, size_t producers, const char *scenario, double target)
{
    worker w[MAX_WORKERS] = {{0}};
    uint64_t msgs;
    int64_t elapsed_ns;
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    if (workers_run(b, w, producers, 0, producer_run, &msgs, &elapsed_ns) != 0)
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
    snprintf(scenario, sizeof scenario, "confirmed enqueue, 1 producer, %d outstanding",
             WINDOW_MSGS);
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
    snprintf(scenario, sizeof scenario, "drain, %d consumers, credit 1, ack each", CONSUMERS);
    if (topup(b, b->drain_msgs, &ready) != 0)
        return -1;
    bench_core_progress("%s (%" PRIu64 " messages)", scenario, ready);

    worker w[MAX_WORKERS] = {{0}};
    atomic_uint_fast64_t done_all = 0;
    for (size_t i = 0; i < CONSUMERS; i++) {
        w[i].target_msgs = ready;
        w[i].done_all = &done_all;
    }
    int rc = workers_run(b, w, CONSUMERS, 1, consumer_run, &msgs, &elapsed_ns);
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

/* ---- rows 6-8: raw limits ---- */

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
"                      every message queued at it.\n"
"  -s, --seconds S     length of each timed row, 1..%d (default %d)\n"
"  -q, --quick         smoke run: 1 s per row and a %d-message drain\n"
"  -h, --help          show this help\n"
"\n"
"Exit status: 0 when every row ran, whether or not it met its target; 1 on an\n"
"error (broker unreachable, a publish refused, a message lost); 2 on a usage\n"
"error; 130 when interrupted.\n"
"\n"
"Examples:\n"
"  sluice-bench --spawn bin/sluiced\n"
"  sluice-bench --spawn bin/sluiced --quick\n"
"  sluice-bench -b tcp://127.0.0.1:7470 --seconds 10\n",
            BENCH_CORE_BODY_BYTES, PRODUCERS, WINDOW_MSGS, CONSUMERS, DRAIN_MSGS,
            BENCH_LATENCY_RATE_PER_S, LMDB_BATCH_PUTS, SL_DEFAULT_ENDPOINT, MAX_SECONDS,
            DEFAULT_SECONDS, DRAIN_MSGS_QUICK);
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
}

typedef int (*row_fn)(bench *);

/* Rows 1-5 need the broker, in this order: 1-3 build the backlog that 4
 * drains, and 5 needs the queue empty. */
static const row_fn broker_rows[] = {row_send_one, row_send_many, row_send_window, row_drain,
                                     row_latency};
static const row_fn raw_rows[] = {row_lmdb_single, row_lmdb_batch, row_zmq};

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

int main(int argc, char **argv)
{
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
    if (rc == 0)
        rc = rows_run(&b, raw_rows, sizeof raw_rows / sizeof raw_rows[0]);
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
