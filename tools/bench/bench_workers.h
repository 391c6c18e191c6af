/*
 * bench_workers.h - the workers of the enqueue and drain rows: one thread
 * and one client each, producers that send confirmed publishes until a
 * deadline and consumers that ack until all of them together reach a
 * target.
 */
#ifndef SLUICE_BENCH_WORKERS_H
#define SLUICE_BENCH_WORKERS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

#define BENCH_WORKERS_MAX 4 /* workers in one bench_workers_run */

/* One worker. The caller zeroes it and, for consumers, sets target_msgs
 * and done_all; bench_workers_run sets the rest. */
typedef struct bench_worker {
    sl_client *c;
    int64_t start_ns, deadline_ns;  /* the row's; the deadline binds producers */
    uint64_t target_msgs;           /* drain: all workers together */
    atomic_uint_fast64_t *done_all; /* drain: messages acked by all workers */
    uint64_t msgs;                  /* done by this worker */
    int64_t last_ns;                /* when its last message was done */
    int rc;
} bench_worker;

/* bench_workers_produce, run on a bench_worker, sends confirmed publishes
 * one at a time until the deadline. */
void *bench_workers_produce(void *arg);

/* bench_workers_consume, run on a bench_worker, receives and acks until all
 * workers together have acked target_msgs. Progress by any worker keeps it
 * patient; none for BENCH_CORE_IDLE_TIMEOUT_MS is an error (reported, rc
 * -1). */
void *bench_workers_consume(void *arg);

/* bench_workers_run connects n workers to endpoint (NULL:
 * SL_DEFAULT_ENDPOINT), subscribing each with credit unless it is 0, runs
 * fn on each from a common start (producers until seconds later, consumers
 * until their target), then closes their clients. n is at most
 * BENCH_WORKERS_MAX. Returns 0 when all ran and none failed; *msgs sums the
 * workers' messages and *elapsed_ns runs from the start to the last message
 * done. */
int bench_workers_run(const char *endpoint, int seconds, bench_worker *w, size_t n,
                      unsigned credit, void *(*fn)(void *), uint64_t *msgs, int64_t *elapsed_ns);

#endif /* SLUICE_BENCH_WORKERS_H */
