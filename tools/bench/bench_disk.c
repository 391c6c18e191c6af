/*
 * bench_disk.c - the rows that measure the disk and the command-line
 * consumer, beside the broker's own rows.
 *
 *   raw flush   a 100-byte append and an fdatasync, in a loop, in the
 *               run's directory: what one device flush costs on this disk
 *               now. A durable LMDB commit needs two (its data fdatasync and
 *               its meta page through an O_DSYNC handle), so the 1 x 1
 *               enqueue target is stated against this row and the raw
 *               ZeroMQ round trip, both measured in the same run.
 *   ideal log   what a broker's publish -> durable time can be on this
 *               disk: arrivals at a steady rate (the latency row's), one
 *               flusher thread that takes every arrival waiting, writes one
 *               4 KiB record into a file written beforehand and
 *               fdatasyncs it (the write-ahead log's path with nothing
 *               else: no sockets, no encoding, no dispatch). Each
 *               arrival's time is its record's end minus its arrival; the
 *               p50 and p99 put the latency row's next to the disk's own.
 *   consume     `sluice consume -c 64 -n N > /dev/null`, one process,
 *               timed from its start to its exit, over a backlog the
 *               caller queued first.
 *
 * Bounds: the flush loop is bench_core_timed (a deadline and a count); the
 * ideal log makes rate x seconds arrivals and its flusher ends after the
 * last; the consume process is waited for at most CONSUME_TIMEOUT_MS, then
 * killed. The file is the caller's to remove (it lives in the run's
 * directory).
 */
#include "bench_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_core.h"
#include "proc.h"

#define CONSUME_TIMEOUT_MS 300000
#define LOG_RECORD_BYTES   4096
#define LOG_FILE_BYTES     (16 << 20) /* written beforehand, then wrapped */

typedef struct flush_run {
    int fd;
    unsigned char body[BENCH_CORE_BODY_BYTES];
} flush_run;

/* flush_step is one timed step: an append and its flush. */
static int flush_step(void *arg)
{
    flush_run *f = arg;
    if (write(f->fd, f->body, sizeof f->body) != (ssize_t)sizeof f->body || fdatasync(f->fd) != 0)
        return bench_core_fail("raw flush: %s", strerror(errno));
    return 0;
}

int bench_disk_flushes(const char *dir, int seconds, uint64_t *flushes, int64_t *elapsed_ns)
{
    char path[160];
    int64_t last_ns;
    flush_run f;
    bench_core_body_fill(f.body);
    snprintf(path, sizeof path, "%s/raw-flush.dat", dir);
    f.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (f.fd < 0)
        return bench_core_fail("cannot create %s: %s", path, strerror(errno));
    int64_t start_ns = bench_core_now_ns();
    int rc = bench_core_timed(flush_step, &f, start_ns, start_ns + seconds * BENCH_CORE_NS_PER_S, flushes,
                              &last_ns);
    close(f.fd);
    *elapsed_ns = last_ns - start_ns;
    return rc;
}

/* Two flushes at once: a group's nodes on one machine flush one disk. */
typedef struct flush_pair {
    flush_run f[2];
    pthread_barrier_t start, end;
    int64_t until_ns;
    uint64_t rounds;
    int stop, err[2];
} flush_pair;

typedef struct pair_arg {
    flush_pair *p;
    int side;
} pair_arg;

/* pair_side flushes its file once a round, both sides starting together;
 * side 0 counts the rounds and decides, between rounds, when to stop. */
static void *pair_side(void *arg)
{
    pair_arg *a = arg;
    flush_pair *p = a->p;
    for (;;) {
        pthread_barrier_wait(&p->start);
        if (p->stop)
            return NULL;
        flush_run *f = &p->f[a->side];
        if (write(f->fd, f->body, sizeof f->body) != (ssize_t)sizeof f->body || fdatasync(f->fd) != 0)
            p->err[a->side] = errno ? errno : EIO;
        pthread_barrier_wait(&p->end);
        if (a->side == 0) {
            p->rounds++;
            p->stop = p->err[0] || p->err[1] || bench_core_stopping() || bench_core_now_ns() >= p->until_ns;
        }
    }
}

int bench_disk_flush_pairs(const char *dir, int seconds, uint64_t *pairs, int64_t *elapsed_ns)
{
    flush_pair p;
    memset(&p, 0, sizeof p);
    pair_arg args[2] = {{&p, 0}, {&p, 1}};
    char path[2][160];
    for (int i = 0; i < 2; i++) {
        bench_core_body_fill(p.f[i].body);
        snprintf(path[i], sizeof path[i], "%s/raw-flush-pair-%d.dat", dir, i);
        p.f[i].fd = open(path[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (p.f[i].fd < 0) {
            int e = errno;
            if (i)
                close(p.f[0].fd);
            return bench_core_fail("cannot create %s: %s", path[i], strerror(e));
        }
    }
    pthread_barrier_init(&p.start, NULL, 2);
    pthread_barrier_init(&p.end, NULL, 2);
    int64_t start_ns = bench_core_now_ns();
    p.until_ns = start_ns + seconds * BENCH_CORE_NS_PER_S;
    pthread_t t;
    int rc = 0;
    if (pthread_create(&t, NULL, pair_side, &args[1]) != 0) {
        rc = bench_core_fail("raw flush pairs: cannot start a thread");
    } else {
        pair_side(&args[0]);
        pthread_join(t, NULL);
    }
    *pairs = p.rounds;
    *elapsed_ns = bench_core_now_ns() - start_ns;
    for (int i = 0; i < 2; i++) {
        close(p.f[i].fd);
        unlink(path[i]);
        if (rc == 0 && p.err[i])
            rc = bench_core_fail("raw flush pairs: %s", strerror(p.err[i]));
    }
    pthread_barrier_destroy(&p.start);
    pthread_barrier_destroy(&p.end);
    return rc;
}

typedef struct ideal_log {
    int fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *arrived_ns, *took_ns;
    uint64_t n, arrived, flushed; /* [flushed, arrived) wait for a record */
    int done, err;
} ideal_log;

/* ideal_flusher writes a record for what waits, again and again, until the
 * last arrival is durable or a call fails. */
static void *ideal_flusher(void *arg)
{
    ideal_log *g = arg;
    unsigned char rec[LOG_RECORD_BYTES];
    memset(rec, 'r', sizeof rec);
    off_t off = 0;
    pthread_mutex_lock(&g->mu);
    while (!g->err && g->flushed < g->n && !(g->done && g->flushed == g->arrived)) {
        if (g->flushed == g->arrived) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        uint64_t upto = g->arrived;
        pthread_mutex_unlock(&g->mu);
        int err = pwrite(g->fd, rec, sizeof rec, off) != (ssize_t)sizeof rec || fdatasync(g->fd) != 0 ? errno : 0;
        int64_t end_ns = bench_core_now_ns();
        off = (off + LOG_RECORD_BYTES) % LOG_FILE_BYTES;
        pthread_mutex_lock(&g->mu);
        for (uint64_t i = g->flushed; i < upto; i++)
            g->took_ns[i] = end_ns - g->arrived_ns[i];
        g->flushed = upto;
        g->err = err;
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ideal_file makes the log file, written through and flushed. */
static int ideal_file(const char *path)
{
    static const unsigned char zero[1 << 16];
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    for (off_t at = 0; fd >= 0 && at < LOG_FILE_BYTES; at += (off_t)sizeof zero)
        if (pwrite(fd, zero, sizeof zero, at) != (ssize_t)sizeof zero) {
            close(fd);
            return -1;
        }
    if (fd >= 0 && fsync(fd) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int bench_disk_ideal_log(const char *dir, int seconds, unsigned rate_per_s, double *p50_ms, double *p99_ms)
{
    char path[160];
    snprintf(path, sizeof path, "%s/ideal-log.dat", dir);
    bench_core_progress("raw: the ideal log, %u arrivals a second, a record and fdatasync for what waits (%d s)",
                        rate_per_s, seconds);
    ideal_log g = {.n = (uint64_t)seconds * rate_per_s};
    g.arrived_ns = calloc(g.n ? g.n : 1, sizeof *g.arrived_ns);
    g.took_ns = calloc(g.n ? g.n : 1, sizeof *g.took_ns);
    if (!g.arrived_ns || !g.took_ns || (g.fd = ideal_file(path)) < 0) {
        free(g.arrived_ns);
        free(g.took_ns);
        return bench_core_fail("ideal log: cannot make %s: %s", path, strerror(errno ? errno : ENOMEM));
    }
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    bench_core_thread t = {.fn = ideal_flusher, .arg = &g};
    int rc = bench_core_threads_start(&t, 1);
    int64_t start_ns = bench_core_now_ns() + BENCH_CORE_NS_PER_MS, gap_ns = BENCH_CORE_NS_PER_S / rate_per_s;
    for (uint64_t i = 0; rc == 0 && i < g.n && !bench_core_stopping(); i++) {
        int64_t due = start_ns + (int64_t)i * gap_ns;
        struct timespec ts = {.tv_sec = due / BENCH_CORE_NS_PER_S, .tv_nsec = due % BENCH_CORE_NS_PER_S};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !bench_core_stopping())
            ;
        pthread_mutex_lock(&g.mu);
        g.arrived_ns[i] = bench_core_now_ns();
        g.arrived = i + 1;
        pthread_cond_signal(&g.cv);
        pthread_mutex_unlock(&g.mu);
    }
    pthread_mutex_lock(&g.mu);
    g.done = 1;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    bench_core_threads_join(&t, 1);
    if (rc == 0 && g.err)
        rc = bench_core_fail("ideal log: %s", strerror(g.err));
    if (rc == 0 && g.flushed == 0 && !bench_core_stopping())
        rc = bench_core_fail("ideal log: nothing was flushed");
    if (rc == 0 && g.flushed) {
        bench_core_sort_i64(g.took_ns, g.flushed);
        *p50_ms = bench_core_percentile_ms(g.took_ns, g.flushed, 50);
        *p99_ms = bench_core_percentile_ms(g.took_ns, g.flushed, 99);
    }
    close(g.fd);
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.cv);
    free(g.arrived_ns);
    free(g.took_ns);
    return rc;
}

int bench_disk_consume_cli(const char *sluice, const char *endpoint, unsigned credit, uint64_t msgs,
                           const char *log_path, int64_t *elapsed_ns)
{
    char cred[16], count[24];
    proc p;
    snprintf(cred, sizeof cred, "%u", credit);
    snprintf(count, sizeof count, "%" PRIu64, msgs);
    const char *const argv[] = {sluice, "-b", endpoint, "consume", "-c", cred, "-n", count, NULL};
    const proc_spec spec = {.argv = argv,
                            .out_path = "/dev/null",
                            .err_path = log_path,
                            .truncate = true,
                            .null_stdin = true,
                            .own_group = true,
                            .die_with_parent = true};
    int64_t start_ns = bench_core_now_ns();
    if (proc_start(&p, "sluice consume", &spec) != 0)
        return -1;
    int st = proc_wait(&p, CONSUME_TIMEOUT_MS);
    *elapsed_ns = bench_core_now_ns() - start_ns;
    if (st == PROC_RUNNING) {
        proc_kill(&p);
        return bench_core_fail("sluice consume did not finish %" PRIu64 " messages in %d s", msgs,
                               CONSUME_TIMEOUT_MS / 1000);
    }
    if (st != 0) {
        proc_tail(&p, PROC_TAIL_BYTES);
        return bench_core_fail("sluice consume exited with status %d", st);
    }
    return 0;
}
