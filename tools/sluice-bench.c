/*
 * sluice-bench.c - measure a Sluice broker against its performance targets.
 *
 * The bench drives a broker through the public client library (sluice.h)
 * and prints one table: what was measured, the result, the target and
 * whether it was met. Every message body is BODY_BYTES long. The rows, in the
 * order they run:
 *
 *   1-3  Confirmed enqueue. sl_send in a loop from 1 and from PRODUCERS
 *        connections (one thread each), then one connection that keeps
 *        WINDOW_MSGS sl_send_async publishes outstanding. A publish counts
 *        once the broker has confirmed it durable. The messages stay queued.
 *   4    Drain. The backlog of rows 1-3, topped up to drain_msgs, consumed by
 *        CONSUMERS threads with credit 1 that ack every delivery. Afterwards
 *        the broker must report the queue empty, or the run fails.
 *   5    Latency. A producer publishes LATENCY_RATE_PER_S messages a second at
 *        absolute times (open loop: a slow confirmation does not slow the
 *        pacing); each body carries its CLOCK_MONOTONIC send time, and the
 *        consumer in this same process records receive time minus send time.
 *        The consumer acks each delivery before it takes the next, as an
 *        application would, so one that arrives during an ack waits for it.
 *        p50 and p99 are nearest-rank percentiles.
 *   6-8  Raw limits of the machine: LMDB durable commits of 1 and of 100 puts
 *        per transaction, and a ZeroMQ DEALER/ROUTER echo over ipc://. They
 *        bound what any broker built on these libraries can do here. They are
 *        the one reason this file includes lmdb.h and zmq.h: everything that
 *        talks to Sluice goes through sluice.h.
 *
 * Lifecycle. All files live in one fresh directory under /tmp: the spawned
 * broker's data, socket and log, the LMDB environments and the ZeroMQ socket
 * of the raw rows. With --spawn the broker starts with --ready-fd and is
 * waited for (READY_TIMEOUT_MS at most); it runs in its own process group,
 * so a Ctrl-C reaches only the bench, which then stops it in order: SIGTERM
 * by PID after the broker rows, SIGKILL after STOP_TIMEOUT_MS. Its log is
 * shown when it fails. The directory is removed on every exit path.
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
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <lmdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "sluice.h"

#define BODY_BYTES          100
#define DEFAULT_SECONDS     3
#define MAX_SECONDS         3600
#define PRODUCERS           4
#define CONSUMERS           4
#define WINDOW_MSGS         100       /* row 3: publishes outstanding */
#define DRAIN_MSGS          100000    /* row 4: backlog at least this deep */
#define DRAIN_MSGS_QUICK    20000
#define TOPUP_TIMEOUT_S     300
#define LATENCY_RATE_PER_S  2000
#define LATENCY_CREDIT      16
#define LATENCY_MAX_PENDING 1000      /* unconfirmed publishes before pacing waits */
#define LATENCY_MAGIC       "SLBLAT01" /* 8 bytes, then the int64_t send time */
#define LMDB_BATCH_PUTS     100
#define LMDB_KEYSPACE       65536     /* keys cycle, so the file stays small */
#define LMDB_MAP_BYTES      ((size_t)256 << 20)
#define READY_TIMEOUT_MS    20000
#define STOP_TIMEOUT_MS     20000
#define KILL_TIMEOUT_MS     5000
#define LOG_TAIL_BYTES      65536     /* of the broker's log, shown when it fails */
#define CLIENT_TIMEOUT_MS   5000      /* for any one reply from the broker */
#define IDLE_TIMEOUT_MS     5000      /* consumers: no progress this long fails */
#define POLL_MS             50        /* how often waiting threads look up */
#define MAX_OPS             UINT64_C(1000000000) /* count bound of timed loops */
#define MAX_ROWS            16
#define NS_PER_S            INT64_C(1000000000)
#define NS_PER_MS           INT64_C(1000000)

#define TARGET_SEND_ONE_PER_S    15000
#define TARGET_SEND_MANY_PER_S   30000
#define TARGET_SEND_WINDOW_PER_S 150000
#define TARGET_DRAIN_PER_S       40000
#define TARGET_P99_MS            1.0

/* ---- the run and its table ---- */

typedef enum goal { GOAL_NONE, GOAL_AT_LEAST, GOAL_AT_MOST } goal;

typedef struct row {
    char scenario[96];
    double value;
    int decimals;
    const char *unit;
    goal goal;
    double target;
} row;

typedef struct bench {
    const char *endpoint;   /* the broker's, or NULL for the default */
    char dir[64];           /* the run's temporary directory */
    char spawn_endpoint[96];
    char broker_log[96];
    pid_t broker_pid;       /* a spawned broker; 0 when none runs */
    int seconds;
    uint64_t drain_msgs;
    row rows[MAX_ROWS];
    size_t nrows;
} bench;

static atomic_int stop_signal; /* set by SIGINT/SIGTERM; every loop looks */

static void on_signal(int sig)
{
    atomic_store(&stop_signal, sig);
}

static bool stopping(void)
{
    return atomic_load(&stop_signal) != 0;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static double per_s(uint64_t count, int64_t elapsed_ns)
{
    return elapsed_ns > 0 ? (double)count * (double)NS_PER_S / (double)elapsed_ns : 0.0;
}

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sluice-bench: %s\n", msg);
    return -1;
}

/* fail_sl reports the failed call what on c, with the broker's explanation. */
static int fail_sl(const char *what, const sl_client *c, int rc)
{
    return fail("%s: %s (%s)", what, c ? sl_last_error(c) : sl_strerror(rc), sl_errname(rc));
}

__attribute__((format(printf, 1, 2)))
static void progress(const char *fmt, ...)
{
    va_list ap;
    fputs("# running: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void row_add(bench *b, const char *scenario, double value, int decimals, const char *unit,
                    goal g, double target)
{
    if (b->nrows == MAX_ROWS) {
        fprintf(stderr, "%s:%d: more than %d rows\n", __FILE__, __LINE__, MAX_ROWS);
        abort();
    }
    row *r = &b->rows[b->nrows++];
    *r = (row){.value = value, .decimals = decimals, .unit = unit, .goal = g, .target = target};
    snprintf(r->scenario, sizeof r->scenario, "%s", scenario);
}

static void body_fill(unsigned char body[BODY_BYTES])
{
    for (size_t i = 0; i < BODY_BYTES; i++)
        body[i] = (unsigned char)('a' + i % 26);
}

/* ---- the spawned broker ---- */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void dir_remove(const char *dir)
{
    if (dir[0])
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* log_show copies the end of the spawned broker's log (LOG_TAIL_BYTES at
 * most) to stderr. */
static void log_show(const bench *b)
{
    char buf[4096];
    FILE *f = fopen(b->broker_log, "r");
    if (!f)
        return;
    fprintf(stderr, "---- %s ----\n", b->broker_log);
    if (fseek(f, -LOG_TAIL_BYTES, SEEK_END) != 0)
        rewind(f); /* the log is shorter */
    size_t n;
    for (int i = 0; i < LOG_TAIL_BYTES / (int)sizeof buf && (n = fread(buf, 1, sizeof buf, f)) > 0; i++)
        fwrite(buf, 1, n, stderr);
    fprintf(stderr, "---- end of log ----\n");
    fclose(f);
}

/* child_exec runs in the forked child: it becomes sluiced. */
static void child_exec(const char *path, char *const argv[], int log_fd, int ready_fd)
{
    setpgid(0, 0); /* a Ctrl-C is the bench's to handle */
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0)
        dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    fcntl(ready_fd, F_SETFD, 0); /* the one descriptor sluiced inherits */
    execv(path, argv);
    dprintf(2, "sluice-bench: cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
}

/* ready_wait reads "READY\n" from fd within timeout_ms. */
static int ready_wait(int fd, int timeout_ms)
{
    char buf[16];
    size_t got = 0;
    int64_t deadline_ns = now_ns() + timeout_ms * NS_PER_MS;
    for (int i = 0; i < 1000 && got < 6 && !stopping(); i++) {
        int64_t left_ns = deadline_ns - now_ns();
        if (left_ns <= 0)
            return fail("sluiced did not report READY within %d ms", timeout_ms);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, (int)((left_ns + NS_PER_MS - 1) / NS_PER_MS));
        if (n <= 0)
            continue; /* EINTR or the deadline: both looked at above */
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r == 0)
            return fail("sluiced exited before it was ready");
        if (r < 0 && errno != EINTR)
            return fail("reading sluiced's --ready-fd: %s", strerror(errno));
        got += r > 0 ? (size_t)r : 0;
    }
    if (got < 6 || memcmp(buf, "READY\n", 6) != 0)
        return fail(stopping() ? "interrupted" : "sluiced wrote no READY line");
    return 0;
}

/* reap waits up to timeout_ms for the broker to exit; *status on success. */
static int reap(pid_t pid, int timeout_ms, int *status)
{
    const struct timespec nap = {.tv_nsec = 10 * NS_PER_MS};
    for (int i = 0; i <= timeout_ms / 10; i++) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        nanosleep(&nap, NULL);
    }
    return -1;
}

/* broker_stop ends a spawned broker: SIGTERM, then SIGKILL. Returns 0 when it
 * exited cleanly on SIGTERM. */
static int broker_stop(bench *b)
{
    int status = 0;
    pid_t pid = b->broker_pid;
    if (pid <= 0)
        return 0;
    b->broker_pid = 0;
    kill(pid, SIGTERM);
    if (reap(pid, STOP_TIMEOUT_MS, &status) != 0) {
        kill(pid, SIGKILL);
        reap(pid, KILL_TIMEOUT_MS, &status);
        log_show(b);
        return fail("sluiced (pid %d) did not stop within %d ms of SIGTERM; killed it",
                    (int)pid, STOP_TIMEOUT_MS);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        log_show(b);
        if (WIFSIGNALED(status))
            return fail("sluiced died of signal %d", WTERMSIG(status));
        return fail("sluiced exited with status %d", WEXITSTATUS(status));
    }
    return 0;
}

/* broker_start runs sluiced from path on b->dir and waits until it serves. */
static int broker_start(bench *b, const char *path)
{
    char data[96], fd_arg[16];
    int ready[2];
    snprintf(data, sizeof data, "%s/data", b->dir);
    snprintf(b->spawn_endpoint, sizeof b->spawn_endpoint, "ipc://%s/s.sock", b->dir);
    snprintf(b->broker_log, sizeof b->broker_log, "%s/sluiced.log", b->dir);
    b->endpoint = b->spawn_endpoint;

    int log_fd = open(b->broker_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0)
        return fail("cannot create %s: %s", b->broker_log, strerror(errno));
    if (pipe2(ready, O_CLOEXEC) != 0) {
        close(log_fd);
        return fail("pipe: %s", strerror(errno));
    }
    snprintf(fd_arg, sizeof fd_arg, "%d", ready[1]);
    char *const argv[] = {(char *)path, "--data", data, "--listen", b->spawn_endpoint,
                          "--ready-fd", fd_arg, NULL};
    pid_t pid = fork();
    if (pid == 0)
        child_exec(path, argv, log_fd, ready[1]);
    close(log_fd);
    close(ready[1]);
    if (pid < 0) {
        close(ready[0]);
        return fail("fork: %s", strerror(errno));
    }
    b->broker_pid = pid;
    int rc = ready_wait(ready[0], READY_TIMEOUT_MS);
    close(ready[0]);
    if (rc != 0) {
        kill(pid, SIGKILL);
        reap(pid, KILL_TIMEOUT_MS, &(int){0});
        b->broker_pid = 0;
        log_show(b);
    }
    return rc;
}

/* ---- clients ---- */

/* client_open connects to the broker and checks that it answers. */
static int client_open(const bench *b, sl_client **out)
{
    const sl_options opts = {.timeout_ms = CLIENT_TIMEOUT_MS};
    const char *ep = b->endpoint ? b->endpoint : SL_DEFAULT_ENDPOINT;
    int rc = sl_connect(ep, &opts, out);
    if (rc != SL_OK)
        return fail("cannot connect to %s: %s", ep, sl_strerror(rc));
    sl_stats stats;
    rc = sl_stats_get(*out, &stats);
    if (rc == SL_ETIMEDOUT || rc == SL_ECONNECT)
        rc = fail("broker not reachable at %s: no answer within %d ms", ep, CLIENT_TIMEOUT_MS);
    else if (rc != SL_OK)
        rc = fail_sl("asking the broker for its stats", *out, rc);
    if (rc != SL_OK)
        sl_close(out);
    return rc;
}

typedef struct totals {
    uint64_t ready, inflight, delayed;
} totals;

/* queue_totals sums the broker's levels. */
static int queue_totals(const bench *b, totals *t)
{
    sl_client *c = NULL;
    sl_stats stats;
    if (client_open(b, &c) != 0)
        return -1;
    int rc = sl_stats_get(c, &stats);
    if (rc != SL_OK) {
        fail_sl("sl_stats_get", c, rc);
        sl_close(&c);
        return -1;
    }
    *t = (totals){0};
    for (unsigned l = 0; l < stats.nlevels && l < SL_MAX_LEVELS; l++) {
        t->ready += stats.level[l].depth;
        t->inflight += stats.level[l].inflight;
        t->delayed += stats.level[l].delayed;
    }
    sl_close(&c);
    return 0;
}

/* confirms_collect takes every confirmation that has arrived, waiting for
 * more while over max_pending publishes are unconfirmed; each counts into
 * *confirmed. A refused publish is an error. */
static int confirms_collect(sl_client *c, size_t max_pending, uint64_t *confirmed)
{
    for (uint64_t i = 0; i < MAX_OPS; i++) {
        size_t pending = sl_send_pending(c);
        if (pending == 0)
            return 0;
        sl_confirm cf;
        bool must_wait = pending > max_pending;
        int rc = sl_send_wait(c, must_wait ? CLIENT_TIMEOUT_MS : 0, &cf);
        if (rc == SL_ETIMEDOUT && !must_wait)
            return 0;
        if (rc != SL_OK)
            return fail_sl("waiting for publish confirmations", c, rc);
        if (cf.err != SL_OK)
            return fail("publish %" PRIu64 " refused: %s (%s)", cf.ticket, sl_last_error(c),
                        sl_errname(cf.err));
        ++*confirmed;
    }
    return 0;
}

/* publish_window publishes with window publishes outstanding until
 * deadline_ns, a signal, or max_msgs, then waits for the rest. *last_ns is
 * when the last confirmation arrived. */
static int publish_window(sl_client *c, size_t window, int64_t deadline_ns, uint64_t max_msgs,
                          uint64_t *confirmed, int64_t *last_ns)
{
    unsigned char body[BODY_BYTES];
    body_fill(body);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = SL_LEVEL_DEFAULT};
    uint64_t sent = 0;
    *confirmed = 0;
    *last_ns = now_ns();
    for (uint64_t i = 0; i < MAX_OPS; i++) {
        bool open = sent < max_msgs && *last_ns < deadline_ns && !stopping();
        for (size_t n = sl_send_pending(c); open && n < window && sent < max_msgs; n++, sent++) {
            int rc = sl_send_async(c, &put, NULL);
            if (rc != SL_OK)
                return fail_sl("sl_send_async", c, rc);
        }
        if (sl_send_pending(c) == 0)
            return 0;
        if (confirms_collect(c, open ? window - 1 : 0, confirmed) != 0)
            return -1;
        *last_ns = now_ns();
    }
    return 0;
}

/* ---- workers: one thread, one client ---- */

typedef struct worker {
    pthread_t thread;
    sl_client *c;
    int64_t start_ns, deadline_ns;  /* the row's, the same for every worker */
    uint64_t target_msgs;           /* drain: all workers together */
    atomic_uint_fast64_t *done_all; /* drain: messages acked by all workers */
    uint64_t msgs;                  /* done by this worker */
    int64_t last_ns;                /* when its last message was done */
    int rc;
} worker;

/* producer_run sends confirmed publishes one at a time until the deadline. */
static void *producer_run(void *arg)
{
    worker *w = arg;
    unsigned char body[BODY_BYTES];
    body_fill(body);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = SL_LEVEL_DEFAULT};
    int64_t t_ns = w->start_ns;
    for (uint64_t i = 0; i < MAX_OPS && t_ns < w->deadline_ns && !stopping(); i++) {
        int rc = sl_send(w->c, &put, NULL);
        if (rc != SL_OK) {
            w->rc = fail_sl("sl_send", w->c, rc);
            break;
        }
        w->msgs++;
        t_ns = now_ns();
    }
    w->last_ns = t_ns;
    return NULL;
}

/* consumer_run receives and acks until all workers together have acked
 * target_msgs. Progress by any worker keeps it patient. */
static void *consumer_run(void *arg)
{
    worker *w = arg;
    uint64_t seen = 0;
    int64_t seen_ns = now_ns();
    w->last_ns = w->start_ns;
    for (uint64_t i = 0; i < MAX_OPS && !stopping(); i++) {
        sl_delivery *d = NULL;
        int rc = sl_recv(w->c, POLL_MS, &d);
        if (rc == SL_ETIMEDOUT) {
            uint64_t done = atomic_load(w->done_all);
            if (done >= w->target_msgs)
                break;
            if (done != seen) {
                seen = done;
                seen_ns = now_ns();
            } else if (now_ns() - seen_ns > IDLE_TIMEOUT_MS * NS_PER_MS) {
                w->rc = fail("drain stalled: no delivery for %d ms with %" PRIu64 " of %" PRIu64
                             " messages acked", IDLE_TIMEOUT_MS, done, w->target_msgs);
                break;
            }
            continue;
        }
        if (rc != SL_OK) {
            w->rc = fail_sl("sl_recv", w->c, rc);
            break;
        }
        rc = sl_ack(w->c, d);
        sl_delivery_free(&d);
        if (rc != SL_OK) {
            w->rc = fail_sl("sl_ack", w->c, rc);
            break;
        }
        w->msgs++;
        atomic_fetch_add(w->done_all, 1);
        w->last_ns = now_ns();
    }
    return NULL;
}

/* workers_run runs fn on n workers and joins them. Returns 0 when all ran
 * and none failed. */
static int workers_run(worker *w, size_t n, void *(*fn)(void *))
{
    size_t started = 0;
    int rc = 0;
    for (; started < n; started++) {
        int err = pthread_create(&w[started].thread, NULL, fn, &w[started]);
        if (err != 0) {
            rc = fail("pthread_create: %s", strerror(err));
            break; /* the started ones still end at their deadline or target */
        }
    }
    for (size_t i = 0; i < started; i++) {
        pthread_join(w[i].thread, NULL);
        rc |= w[i].rc;
    }
    return rc;
}

/* workers_result sums the workers' messages and measures from the common
 * start to the last message done. */
static void workers_result(const worker *w, size_t n, uint64_t *msgs, int64_t *elapsed_ns)
{
    int64_t last_ns = w[0].start_ns;
    *msgs = 0;
    for (size_t i = 0; i < n; i++) {
        *msgs += w[i].msgs;
        if (w[i].last_ns > last_ns)
            last_ns = w[i].last_ns;
    }
    *elapsed_ns = last_ns - w[0].start_ns;
}

static void workers_close(worker *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sl_close(&w[i].c);
}

/* ---- rows 1-3: confirmed enqueue ---- */

static int enqueue_sync(bench *b, size_t producers, const char *scenario, double target)
{
    worker w[PRODUCERS] = {0};
    uint64_t msgs;
    int64_t elapsed_ns;
    progress("%s (%d s)", scenario, b->seconds);
    int rc = 0;
    for (size_t i = 0; i < producers && rc == 0; i++)
        rc = client_open(b, &w[i].c);
    if (rc == 0) {
        int64_t start_ns = now_ns();
        for (size_t i = 0; i < producers; i++) {
            w[i].start_ns = start_ns;
            w[i].deadline_ns = start_ns + b->seconds * NS_PER_S;
        }
        rc = workers_run(w, producers, producer_run);
    }
    workers_close(w, producers);
    if (rc != 0)
        return -1;
    workers_result(w, producers, &msgs, &elapsed_ns);
    row_add(b, scenario, per_s(msgs, elapsed_ns), 0, producers > 1 ? "msgs/s total" : "msgs/s",
            GOAL_AT_LEAST, target);
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
    snprintf(scenario, sizeof scenario, "confirmed enqueue, %d producers x 1 outstanding", PRODUCERS);
    return enqueue_sync(b, PRODUCERS, scenario, TARGET_SEND_MANY_PER_S);
}

static int row_send_window(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "confirmed enqueue, 1 producer, %d outstanding", WINDOW_MSGS);
    progress("%s (%d s)", scenario, b->seconds);
    sl_client *c = NULL;
    uint64_t confirmed;
    int64_t last_ns;
    if (client_open(b, &c) != 0)
        return -1;
    int64_t start_ns = now_ns();
    int rc = publish_window(c, WINDOW_MSGS, start_ns + b->seconds * NS_PER_S, MAX_OPS, &confirmed,
                            &last_ns);
    sl_close(&c);
    if (rc != 0)
        return -1;
    row_add(b, scenario, per_s(confirmed, last_ns - start_ns), 0, "msgs/s", GOAL_AT_LEAST,
            TARGET_SEND_WINDOW_PER_S);
    return 0;
}

/* ---- row 4: drain ---- */

/* topup publishes until at least want messages are ready; *ready is then
 * how many are. */
static int topup(bench *b, uint64_t want, uint64_t *ready)
{
    totals t;
    if (queue_totals(b, &t) != 0)
        return -1;
    *ready = t.ready;
    if (t.ready >= want)
        return 0;
    sl_client *c = NULL;
    uint64_t missing = want - t.ready, confirmed;
    int64_t last_ns;
    progress("top-up: %" PRIu64 " queued, publishing %" PRIu64 " more", t.ready, missing);
    if (client_open(b, &c) != 0)
        return -1;
    int rc = publish_window(c, WINDOW_MSGS, now_ns() + TOPUP_TIMEOUT_S * NS_PER_S, missing,
                            &confirmed, &last_ns);
    sl_close(&c);
    if (rc == 0 && confirmed < missing && !stopping())
        rc = fail("top-up: only %" PRIu64 " of %" PRIu64 " publishes in %d s", confirmed, missing,
                  TOPUP_TIMEOUT_S);
    *ready += confirmed;
    return rc;
}

static int row_drain(bench *b)
{
    char scenario[96];
    uint64_t ready, msgs;
    int64_t elapsed_ns;
    totals left;
    snprintf(scenario, sizeof scenario, "drain, %d consumers, credit 1, ack each", CONSUMERS);
    if (topup(b, b->drain_msgs, &ready) != 0)
        return -1;
    progress("%s (%" PRIu64 " messages)", scenario, ready);

    worker w[CONSUMERS] = {0};
    atomic_uint_fast64_t done_all = 0;
    int rc = 0;
    for (size_t i = 0; i < CONSUMERS && rc == 0; i++) {
        rc = client_open(b, &w[i].c);
        if (rc == 0 && (rc = sl_subscribe(w[i].c, NULL, NULL, 0, 1)) != SL_OK)
            rc = fail_sl("sl_subscribe", w[i].c, rc);
    }
    if (rc == 0) {
        int64_t start_ns = now_ns();
        for (size_t i = 0; i < CONSUMERS; i++) {
            w[i].start_ns = start_ns;
            w[i].target_msgs = ready;
            w[i].done_all = &done_all;
        }
        rc = workers_run(w, CONSUMERS, consumer_run);
    }
    workers_close(w, CONSUMERS);
    if (rc != 0 || stopping() || queue_totals(b, &left) != 0)
        return -1;
    if (left.ready || left.inflight || left.delayed)
        return fail("queue not empty after the drain: %" PRIu64 " ready, %" PRIu64
                    " in flight, %" PRIu64 " delayed", left.ready, left.inflight, left.delayed);
    workers_result(w, CONSUMERS, &msgs, &elapsed_ns);
    row_add(b, scenario, per_s(msgs, elapsed_ns), 0, "msgs/s", GOAL_AT_LEAST, TARGET_DRAIN_PER_S);
    return 0;
}

/* ---- row 5: publish -> deliver latency ---- */

typedef struct latency_run {
    sl_client *producer, *consumer;
    int64_t start_ns;
    uint64_t planned_msgs;
    atomic_uint_fast64_t sent_msgs;
    atomic_int producer_done;
    int64_t *latency_ns;   /* planned_msgs slots */
    uint64_t received_msgs;
    int producer_rc, consumer_rc;
} latency_run;

/* latency_produce sends message i at start + i periods, stamped with the
 * time it actually leaves. */
static void *latency_produce(void *arg)
{
    latency_run *r = arg;
    unsigned char body[BODY_BYTES];
    body_fill(body);
    memcpy(body, LATENCY_MAGIC, 8);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = SL_LEVEL_DEFAULT};
    const int64_t period_ns = NS_PER_S / LATENCY_RATE_PER_S;
    uint64_t confirmed = 0;
    for (uint64_t i = 0; i < r->planned_msgs && !stopping() && r->producer_rc == 0; i++) {
        int64_t due_ns = r->start_ns + (int64_t)i * period_ns;
        const struct timespec due = {.tv_sec = due_ns / NS_PER_S, .tv_nsec = due_ns % NS_PER_S};
        for (int k = 0; k < 16 && !stopping(); k++)
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) != EINTR)
                break;
        int64_t sent_ns = now_ns();
        memcpy(body + 8, &sent_ns, sizeof sent_ns);
        int rc = sl_send_async(r->producer, &put, NULL);
        if (rc != SL_OK) {
            r->producer_rc = fail_sl("sl_send_async", r->producer, rc);
            break;
        }
        atomic_fetch_add(&r->sent_msgs, 1);
        r->producer_rc = confirms_collect(r->producer, LATENCY_MAX_PENDING, &confirmed);
    }
    if (r->producer_rc == 0)
        r->producer_rc = confirms_collect(r->producer, 0, &confirmed);
    atomic_store(&r->producer_done, 1);
    return NULL;
}

/* latency_consume records receive time - send time of each stamped
 * delivery and acks everything, until it has all the producer sent. */
static void *latency_consume(void *arg)
{
    latency_run *r = arg;
    int64_t idle_since_ns = now_ns();
    for (uint64_t i = 0; i < MAX_OPS && !stopping(); i++) {
        if (atomic_load(&r->producer_done) && r->received_msgs >= atomic_load(&r->sent_msgs))
            break;
        sl_delivery *d = NULL;
        int rc = sl_recv(r->consumer, POLL_MS, &d);
        int64_t got_ns = now_ns();
        if (rc == SL_ETIMEDOUT) {
            if (got_ns - idle_since_ns > IDLE_TIMEOUT_MS * NS_PER_MS) {
                r->consumer_rc = fail("latency: no delivery for %d ms; %" PRIu64 " of %" PRIu64
                                      " received", IDLE_TIMEOUT_MS, r->received_msgs,
                                      (uint64_t)atomic_load(&r->sent_msgs));
                break;
            }
            continue;
        }
        if (rc != SL_OK) {
            r->consumer_rc = fail_sl("sl_recv", r->consumer, rc);
            break;
        }
        if (d->body_len == BODY_BYTES && memcmp(d->body, LATENCY_MAGIC, 8) == 0 &&
            r->received_msgs < r->planned_msgs) {
            int64_t sent_ns;
            memcpy(&sent_ns, (const unsigned char *)d->body + 8, sizeof sent_ns);
            r->latency_ns[r->received_msgs++] = got_ns > sent_ns ? got_ns - sent_ns : 0;
        }
        rc = sl_ack(r->consumer, d);
        sl_delivery_free(&d);
        if (rc != SL_OK) {
            r->consumer_rc = fail_sl("sl_ack", r->consumer, rc);
            break;
        }
        idle_since_ns = now_ns();
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* percentile_ms is the nearest-rank percentile of sorted[0..n), n > 0. */
static double percentile_ms(const int64_t *sorted, uint64_t n, unsigned pct)
{
    uint64_t rank = (n * pct + 99) / 100;
    return (double)sorted[rank ? rank - 1 : 0] / (double)NS_PER_MS;
}

static int row_latency(bench *b)
{
    char scenario[96];
    latency_run r = {.planned_msgs = (uint64_t)b->seconds * LATENCY_RATE_PER_S};
    pthread_t producer, consumer;
    int rc = 0, err;
    progress("publish->deliver latency at %d msgs/s, consumer credit %d (%d s)",
             LATENCY_RATE_PER_S, LATENCY_CREDIT, b->seconds);
    r.latency_ns = calloc(r.planned_msgs, sizeof *r.latency_ns);
    if (!r.latency_ns)
        return fail("out of memory");
    if (client_open(b, &r.producer) != 0 || client_open(b, &r.consumer) != 0) {
        rc = -1;
        goto close;
    }
    if ((err = sl_subscribe(r.consumer, NULL, NULL, 0, LATENCY_CREDIT)) != SL_OK) {
        rc = fail_sl("sl_subscribe", r.consumer, err);
        goto close;
    }
    r.start_ns = now_ns();
    if ((err = pthread_create(&consumer, NULL, latency_consume, &r)) != 0) {
        rc = fail("pthread_create: %s", strerror(err));
        goto close;
    }
    if ((err = pthread_create(&producer, NULL, latency_produce, &r)) != 0) {
        rc = fail("pthread_create: %s", strerror(err));
        atomic_store(&r.producer_done, 1); /* the consumer takes what came, then stops */
    } else {
        pthread_join(producer, NULL);
    }
    pthread_join(consumer, NULL);
    rc |= r.producer_rc | r.consumer_rc;
    if (rc == 0 && !stopping() && r.received_msgs == 0)
        rc = fail("latency: nothing was delivered");
    if (rc == 0 && !stopping()) {
        qsort(r.latency_ns, r.received_msgs, sizeof *r.latency_ns, cmp_i64);
        snprintf(scenario, sizeof scenario, "publish->deliver latency p50 at %d msgs/s",
                 LATENCY_RATE_PER_S);
        row_add(b, scenario, percentile_ms(r.latency_ns, r.received_msgs, 50), 3, "ms",
                GOAL_NONE, 0);
        snprintf(scenario, sizeof scenario, "publish->deliver latency p99 at %d msgs/s",
                 LATENCY_RATE_PER_S);
        row_add(b, scenario, percentile_ms(r.latency_ns, r.received_msgs, 99), 3, "ms",
                GOAL_AT_MOST, TARGET_P99_MS);
    }
close:
    sl_close(&r.consumer);
    sl_close(&r.producer);
    free(r.latency_ns);
    return rc;
}

/* ---- rows 6-7: raw LMDB commits ---- */

static int lmdb_fail(const char *what, int rc)
{
    return fail("lmdb: %s: %s", what, mdb_strerror(rc));
}

/* lmdb_commits commits transactions of puts_per_txn puts of BODY_BYTES into
 * a fresh environment at dir for seconds. Keys cycle through LMDB_KEYSPACE,
 * so later puts overwrite: each commit still writes its dirty pages and
 * syncs twice (data, then meta page), which is the cost measured. */
static int lmdb_commits(const char *dir, unsigned puts_per_txn, int seconds, uint64_t *commits,
                        int64_t *elapsed_ns)
{
    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    MDB_dbi dbi;
    unsigned char value[BODY_BYTES];
    uint64_t key_n = 0;
    body_fill(value);
    *commits = 0;
    *elapsed_ns = 0;
    if (mkdir(dir, 0700) != 0)
        return fail("cannot create %s: %s", dir, strerror(errno));
    int rc = mdb_env_create(&env);
    if (rc != MDB_SUCCESS)
        return lmdb_fail("mdb_env_create", rc);
    if ((rc = mdb_env_set_mapsize(env, LMDB_MAP_BYTES)) != MDB_SUCCESS ||
        (rc = mdb_env_open(env, dir, 0, 0600)) != MDB_SUCCESS) {
        lmdb_fail("opening the environment", rc);
        goto env_close;
    }
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != MDB_SUCCESS ||
        (rc = mdb_dbi_open(txn, NULL, 0, &dbi)) != MDB_SUCCESS) {
        lmdb_fail("opening the database", rc);
        goto txn_abort;
    }
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc != MDB_SUCCESS) {
        lmdb_fail("mdb_txn_commit", rc);
        goto env_close;
    }

    int64_t start_ns = now_ns(), t_ns = start_ns, deadline_ns = start_ns + seconds * NS_PER_S;
    for (uint64_t i = 0; i < MAX_OPS && t_ns < deadline_ns && !stopping(); i++) {
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != MDB_SUCCESS) {
            lmdb_fail("mdb_txn_begin", rc);
            goto env_close;
        }
        for (unsigned p = 0; p < puts_per_txn; p++) {
            uint64_t key_be = htobe64(key_n++ % LMDB_KEYSPACE);
            MDB_val k = {.mv_size = sizeof key_be, .mv_data = &key_be};
            MDB_val v = {.mv_size = sizeof value, .mv_data = value};
            if ((rc = mdb_put(txn, dbi, &k, &v, 0)) != MDB_SUCCESS) {
                lmdb_fail("mdb_put", rc);
                goto txn_abort;
            }
        }
        rc = mdb_txn_commit(txn);
        txn = NULL;
        if (rc != MDB_SUCCESS) {
            lmdb_fail("mdb_txn_commit", rc);
            goto env_close;
        }
        ++*commits;
        t_ns = now_ns();
    }
    *elapsed_ns = t_ns - start_ns;

txn_abort:
    if (txn)
        mdb_txn_abort(txn);
env_close:
    mdb_env_close(env);
    return rc == MDB_SUCCESS ? 0 : -1;
}

static int row_lmdb_single(bench *b)
{
    char dir[96];
    uint64_t commits;
    int64_t elapsed_ns;
    snprintf(dir, sizeof dir, "%s/lmdb-1", b->dir);
    progress("raw: LMDB durable commit, 1 put per txn (%d s)", b->seconds);
    if (lmdb_commits(dir, 1, b->seconds, &commits, &elapsed_ns) != 0)
        return -1;
    row_add(b, "raw: LMDB durable commit, 1 put of 100 B per txn", per_s(commits, elapsed_ns), 0,
            "commits/s", GOAL_NONE, 0);
    return 0;
}

static int row_lmdb_batch(bench *b)
{
    char dir[96], scenario[96];
    uint64_t commits;
    int64_t elapsed_ns;
    snprintf(dir, sizeof dir, "%s/lmdb-%d", b->dir, LMDB_BATCH_PUTS);
    progress("raw: LMDB durable commit, %d puts per txn (%d s)", LMDB_BATCH_PUTS, b->seconds);
    if (lmdb_commits(dir, LMDB_BATCH_PUTS, b->seconds, &commits, &elapsed_ns) != 0)
        return -1;
    snprintf(scenario, sizeof scenario, "raw: LMDB durable commit, %d puts per txn",
             LMDB_BATCH_PUTS);
    row_add(b, scenario, per_s(commits * LMDB_BATCH_PUTS, elapsed_ns), 0, "puts/s", GOAL_NONE, 0);
    row_add(b, scenario, per_s(commits, elapsed_ns), 0, "commits/s", GOAL_NONE, 0);
    return 0;
}

/* ---- row 8: raw ZeroMQ round trip ---- */

typedef struct echo {
    void *router;
    atomic_int stop;
    int rc;
} echo;

/* echo_run sends every [id, body] the ROUTER receives back to its sender. */
static void *echo_run(void *arg)
{
    echo *e = arg;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    for (uint64_t i = 0; i < MAX_OPS && !atomic_load(&e->stop); i++) {
        if (zmq_msg_recv(&id, e->router, 0) < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue; /* ZMQ_RCVTIMEO: look at stop again */
            e->rc = fail("zmq echo: recv: %s", zmq_strerror(errno));
            break;
        }
        if (!zmq_msg_more(&id) || zmq_msg_recv(&body, e->router, 0) < 0 || zmq_msg_more(&body) ||
            zmq_msg_send(&id, e->router, ZMQ_SNDMORE) < 0 || zmq_msg_send(&body, e->router, 0) < 0) {
            e->rc = fail("zmq echo: unexpected message or send failure: %s", zmq_strerror(errno));
            break;
        }
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return NULL;
}

/* zmq_round_trips bounces BODY_BYTES between a DEALER and an echoing ROUTER
 * for seconds. */
static int zmq_round_trips(const char *endpoint, int seconds, uint64_t *trips, int64_t *elapsed_ns)
{
    echo e = {.rc = 0};
    void *ctx = zmq_ctx_new(), *dealer = NULL;
    pthread_t thread;
    bool echoing = false;
    const int linger_ms = 0, poll_ms = POLL_MS, timeout_ms = CLIENT_TIMEOUT_MS;
    unsigned char body[BODY_BYTES], back[BODY_BYTES + 1];
    int rc = -1, err;
    body_fill(body);
    *trips = 0;
    *elapsed_ns = 0;
    if (!ctx)
        return fail("zmq_ctx_new: %s", zmq_strerror(errno));
    if (!(e.router = zmq_socket(ctx, ZMQ_ROUTER)) || !(dealer = zmq_socket(ctx, ZMQ_DEALER)) ||
        zmq_setsockopt(e.router, ZMQ_LINGER, &linger_ms, sizeof linger_ms) ||
        zmq_setsockopt(e.router, ZMQ_RCVTIMEO, &poll_ms, sizeof poll_ms) ||
        zmq_setsockopt(e.router, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_setsockopt(dealer, ZMQ_LINGER, &linger_ms, sizeof linger_ms) ||
        zmq_setsockopt(dealer, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_setsockopt(dealer, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_bind(e.router, endpoint) || zmq_connect(dealer, endpoint)) {
        fail("zmq: setting up %s: %s", endpoint, zmq_strerror(errno));
        goto sockets_close;
    }
    if ((err = pthread_create(&thread, NULL, echo_run, &e)) != 0) {
        fail("pthread_create: %s", strerror(err));
        goto sockets_close;
    }
    echoing = true;

    /* The first trip waits for the connection: it is not counted. */
    int64_t start_ns = 0, t_ns = 0, deadline_ns = 0;
    for (uint64_t i = 0; i < MAX_OPS && (i == 0 || t_ns < deadline_ns) && !stopping(); i++) {
        if (zmq_send(dealer, body, sizeof body, 0) != (int)sizeof body ||
            zmq_recv(dealer, back, sizeof back, 0) != (int)sizeof body) {
            fail("zmq: round trip %" PRIu64 ": %s", i, zmq_strerror(errno));
            goto thread_join;
        }
        t_ns = now_ns();
        if (i == 0) {
            start_ns = t_ns;
            deadline_ns = start_ns + seconds * NS_PER_S;
        } else {
            ++*trips;
        }
    }
    *elapsed_ns = t_ns - start_ns;
    rc = 0;

thread_join:
    if (echoing) {
        atomic_store(&e.stop, 1);
        pthread_join(thread, NULL);
        rc |= e.rc;
    }
sockets_close:
    if (dealer)
        zmq_close(dealer);
    if (e.router)
        zmq_close(e.router);
    for (int i = 0; i < 100 && zmq_ctx_term(ctx) < 0 && errno == EINTR; i++)
        ; /* linger is 0: only a signal can interrupt it */
    return rc;
}

static int row_zmq(bench *b)
{
    char endpoint[96];
    uint64_t trips;
    int64_t elapsed_ns;
    snprintf(endpoint, sizeof endpoint, "ipc://%s/raw-zmq.sock", b->dir);
    progress("raw: ZeroMQ DEALER/ROUTER round trip over ipc:// (%d s)", b->seconds);
    if (zmq_round_trips(endpoint, b->seconds, &trips, &elapsed_ns) != 0)
        return -1;
    row_add(b, "raw: ZeroMQ DEALER/ROUTER round trip, ipc://", per_s(trips, elapsed_ns), 0,
            "round trips/s", GOAL_NONE, 0);
    return 0;
}

/* ---- the table ---- */

static int cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

enum { COLS = 5, COL_RESULT = 1 };

/* table_line prints one line of cells: the result right-aligned, the last
 * column unpadded. */
static void table_line(FILE *out, const char *const cells[COLS], const size_t width[COLS])
{
    for (int k = 0; k < COLS - 1; k++)
        fprintf(out, k == COL_RESULT ? "%*s | " : "%-*s | ", (int)width[k], cells[k]);
    fprintf(out, "%s\n", cells[COLS - 1]);
}

static void table_print(const bench *b, time_t started, FILE *out)
{
    static const char *const head[COLS] = {"scenario", "result", "unit", "target", "ok?"};
    char text[MAX_ROWS][COLS][96];
    size_t width[COLS];
    for (int k = 0; k < COLS; k++)
        width[k] = strlen(head[k]);
    for (size_t i = 0; i < b->nrows; i++) {
        const row *r = &b->rows[i];
        bool met = r->goal == GOAL_AT_LEAST ? r->value >= r->target : r->value <= r->target;
        snprintf(text[i][0], sizeof text[i][0], "%s", r->scenario);
        snprintf(text[i][1], sizeof text[i][1], "%.*f", r->decimals, r->value);
        snprintf(text[i][2], sizeof text[i][2], "%s", r->unit);
        if (r->goal == GOAL_NONE)
            snprintf(text[i][3], sizeof text[i][3], "-");
        else
            snprintf(text[i][3], sizeof text[i][3], "%s %g",
                     r->goal == GOAL_AT_LEAST ? ">=" : "<=", r->target);
        snprintf(text[i][4], sizeof text[i][4], "%s",
                 r->goal == GOAL_NONE ? "-" : met ? "yes" : "MISS");
        for (int k = 0; k < COLS; k++)
            if (strlen(text[i][k]) > width[k])
                width[k] = strlen(text[i][k]);
    }

    struct utsname u;
    struct tm tm;
    char date[64] = "?";
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    if (localtime_r(&started, &tm))
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", &tm);
    fprintf(out, "# sluice-bench, %s, nproc %d, %s %s %s, %d-byte bodies, %d s per timed row\n",
            date, cpu_count(), u.sysname, u.release, u.machine, BODY_BYTES, b->seconds);
    table_line(out, head, width);
    for (int k = 0; k < COLS; k++) {
        for (size_t n = 0; n < width[k]; n++)
            fputc('-', out);
        fputs(k + 1 < COLS ? "-+-" : "\n", out);
    }
    for (size_t i = 0; i < b->nrows; i++) {
        const char *const cells[COLS] = {text[i][0], text[i][1], text[i][2], text[i][3], text[i][4]};
        table_line(out, cells, width);
    }
    fflush(out);
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
            BODY_BYTES, PRODUCERS, WINDOW_MSGS, CONSUMERS, DRAIN_MSGS, LATENCY_RATE_PER_S,
            LMDB_BATCH_PUTS, SL_DEFAULT_ENDPOINT, MAX_SECONDS, DEFAULT_SECONDS, DRAIN_MSGS_QUICK);
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
    for (size_t i = 0; i < n && !stopping(); i++) {
        size_t rows_before = b->nrows;
        int rc = fns[i](b);
        if (stopping())
            b->nrows = rows_before;
        if (rc != 0)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench b = {.broker_pid = 0};
    const char *spawn = NULL;
    parse_args(argc, argv, &b, &spawn);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    time_t started = time(NULL);
    snprintf(b.dir, sizeof b.dir, "/tmp/sluice-bench-XXXXXX");
    if (!mkdtemp(b.dir)) {
        fail("cannot create a directory under /tmp: %s", strerror(errno));
        return 1;
    }
    int rc = spawn ? broker_start(&b, spawn) : 0;
    if (rc == 0)
        rc = rows_run(&b, broker_rows, sizeof broker_rows / sizeof broker_rows[0]);
    if (broker_stop(&b) != 0)
        rc = -1;
    if (rc == 0)
        rc = rows_run(&b, raw_rows, sizeof raw_rows / sizeof raw_rows[0]);
    dir_remove(b.dir);

    if (b.nrows)
        table_print(&b, started, stdout);
    if (stopping()) {
        fprintf(stderr, "sluice-bench: interrupted\n");
        return 130;
    }
    if (rc != 0) {
        fprintf(stderr, "sluice-bench: stopped by the error above%s\n",
                b.nrows ? "; the table shows the rows measured before it" : "");
        return 1;
    }
    return 0;
}
