/*
 * bench_core.c - the ground every sluice-bench row stands on.
 *
 * It owns the stop flag, the one piece of global state: SIGINT and SIGTERM
 * set it (bench_core_catch_signals, called once by main) and every loop in
 * the bench looks at it through bench_core_stopping, so a Ctrl-C ends each
 * row at its next step and the bench still stops its broker and removes its
 * directory. The flag is an atomic int: the handler stores, threads load.
 *
 * The timed loop is the shape of every throughput row that does one thing
 * at a time (a confirmed publish, an LMDB commit, a ZeroMQ round trip): call
 * op until a deadline, a signal or BENCH_CORE_MAX_OPS calls, counting the
 * calls and noting when the last one ended. Its cost is one clock read per
 * call, small beside operations that take microseconds or more.
 *
 * The thread helpers start a set of threads in order and join those that
 * started. A thread that cannot start is reported, and the ones already
 * running are left to end by their own bounds (deadline, target or a stop
 * flag their caller sets), which is why joining takes no timeout.
 *
 * Messages: errors go to stderr as "sluice-bench: ..." and progress as
 * "# running: ...", so stdout carries only the table.
 */
#include "bench_core.h"

#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int stop_signal; /* set by SIGINT/SIGTERM; every loop looks */

static void on_signal(int sig)
{
    atomic_store(&stop_signal, sig);
}

void bench_core_catch_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

bool bench_core_stopping(void)
{
    return atomic_load(&stop_signal) != 0;
}

int64_t bench_core_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * BENCH_CORE_NS_PER_S + ts.tv_nsec;
}

double bench_core_per_s(uint64_t count, int64_t elapsed_ns)
{
    return elapsed_ns > 0 ? (double)count * (double)BENCH_CORE_NS_PER_S / (double)elapsed_ns
                          : 0.0;
}

int bench_core_fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sluice-bench: %s\n", msg);
    return -1;
}

void bench_core_progress(const char *fmt, ...)
{
    va_list ap;
    fputs("# running: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void bench_core_body_fill(unsigned char body[BENCH_CORE_BODY_BYTES])
{
    for (size_t i = 0; i < BENCH_CORE_BODY_BYTES; i++)
        body[i] = (unsigned char)('a' + i % 26);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void bench_core_sort_i64(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
}

double bench_core_percentile_ms(const int64_t *sorted, uint64_t n, unsigned pct)
{
    uint64_t rank = (n * pct + 99) / 100;
    return (double)sorted[rank ? rank - 1 : 0] / (double)BENCH_CORE_NS_PER_MS;
}

int bench_core_timed(int (*op)(void *ctx), void *ctx, int64_t start_ns, int64_t deadline_ns,
                     uint64_t *ops, int64_t *last_ns)
{
    int64_t t_ns = start_ns;
    int rc = 0;
    *ops = 0;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && t_ns < deadline_ns && !bench_core_stopping();
         i++) {
        if ((rc = op(ctx)) != 0)
            break;
        ++*ops;
        t_ns = bench_core_now_ns();
    }
    *last_ns = t_ns;
    return rc;
}

int bench_core_threads_start(bench_core_thread *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int err = pthread_create(&t[i].id, NULL, t[i].fn, t[i].arg);
        if (err != 0)
            return bench_core_fail("pthread_create: %s", strerror(err));
        t[i].started = true;
    }
    return 0;
}

void bench_core_threads_join(bench_core_thread *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i].started)
            pthread_join(t[i].id, NULL);
        t[i].started = false;
    }
}

double bench_core_median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
