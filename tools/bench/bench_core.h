/*
 * bench_core.h - what every part of sluice-bench shares: the stop flag that
 * SIGINT and SIGTERM set, the monotonic clock, messages on stderr, the
 * message body, the bounded timed loop and starting and joining threads.
 */
#ifndef SLUICE_BENCH_CORE_H
#define SLUICE_BENCH_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_CORE_BODY_BYTES        100  /* every message body, every raw payload */
#define BENCH_CORE_CLIENT_TIMEOUT_MS 5000 /* for any one reply from the broker or a peer */
#define BENCH_CORE_IDLE_TIMEOUT_MS   5000 /* consumers: no progress this long fails */
#define BENCH_CORE_POLL_MS           50   /* how often waiting threads look up */
#define BENCH_CORE_MAX_OPS           UINT64_C(1000000000) /* count bound of every loop */
#define BENCH_CORE_NS_PER_S          INT64_C(1000000000)
#define BENCH_CORE_NS_PER_MS         INT64_C(1000000)

/* bench_core_catch_signals makes SIGINT and SIGTERM set the stop flag
 * instead of ending the process, and ignores SIGPIPE. Call it once, from
 * main, before any thread starts. */
void bench_core_catch_signals(void);

/* bench_core_stopping tells whether a signal asked the run to stop. Every
 * loop looks at it; any thread may call it. */
bool bench_core_stopping(void);

/* bench_core_now_ns reads CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_core_now_ns(void);

/* bench_core_per_s is count per second over elapsed_ns; 0 when no time
 * passed. */
double bench_core_per_s(uint64_t count, int64_t elapsed_ns);

/* bench_core_median returns the median of v[0..n) (sorting it), 0 when n
 * is 0: the figure of paired turns, where one slow second of the machine
 * falls on one turn, not on the row. */
double bench_core_median(double *v, int n);

/* bench_core_fail prints "sluice-bench: MESSAGE" on stderr (one line, 512
 * bytes at most) and returns -1, so that an error is reported and returned
 * in one statement. Any thread may call it. */
int bench_core_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* bench_core_progress prints "# running: MESSAGE" on stderr. */
void bench_core_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* bench_core_body_fill writes the bench's message body, BENCH_CORE_BODY_BYTES
 * of lowercase letters, into body. */
void bench_core_body_fill(unsigned char body[BENCH_CORE_BODY_BYTES]);

/* bench_core_sort_i64 sorts v[0..n) ascending. */
void bench_core_sort_i64(int64_t *v, size_t n);

/* bench_core_percentile_ms is the nearest-rank pct-th percentile of
 * sorted[0..n) (nanoseconds, n > 0), in milliseconds. */
double bench_core_percentile_ms(const int64_t *sorted, uint64_t n, unsigned pct);

/* bench_core_timed calls op(ctx) again and again from start_ns until
 * deadline_ns, a signal, or BENCH_CORE_MAX_OPS calls, whichever comes first.
 * op returns 0, or -1 after reporting its error: the loop stops there. *ops
 * counts the calls that returned 0 and *last_ns is when the last of them
 * ended (start_ns when none did). Returns 0, or -1 when op failed. */
int bench_core_timed(int (*op)(void *ctx), void *ctx, int64_t start_ns, int64_t deadline_ns,
                     uint64_t *ops, int64_t *last_ns);

/* One thread to run: fn and arg are the caller's, id and started are set by
 * bench_core_threads_start. */
typedef struct bench_core_thread {
    void *(*fn)(void *arg);
    void *arg;
    pthread_t id;
    bool started;
} bench_core_thread;

/* bench_core_threads_start starts t[0..n) in order and stops at the first
 * that cannot start, which it reports; those already started keep running
 * and must still be joined. Returns 0 when all n started, -1 otherwise. */
int bench_core_threads_start(bench_core_thread *t, size_t n);

/* bench_core_threads_join waits for every started thread of t[0..n) to
 * return. It waits without a timeout: each thread bounds its own loop. */
void bench_core_threads_join(bench_core_thread *t, size_t n);

#endif /* SLUICE_BENCH_CORE_H */
