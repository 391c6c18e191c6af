/*
 * sink_count.h - the counts of sluice-sink: POSTs admitted and throttled
 * since start and in each of the last SINK_COUNT_SECONDS_KEPT seconds, and
 * the per-second lines printed from them.
 */
#ifndef SLUICE_SINK_COUNT_H
#define SLUICE_SINK_COUNT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define SINK_COUNT_SECONDS_KEPT 8

typedef struct sink_count_second {
    uint64_t index; /* which second since start this slot holds */
    uint64_t ok, throttled;
} sink_count_second;

typedef struct sink_count {
    uint64_t start_ns;
    uint64_t ok, throttled; /* since start */
    sink_count_second seconds[SINK_COUNT_SECONDS_KEPT];
    uint64_t next_print;    /* first second not printed yet; the printer's alone */
} sink_count;

/* sink_count_init zeroes c and starts its seconds at start_ns. */
void sink_count_init(sink_count *c, uint64_t start_ns);

/* sink_count_add counts one decision at now_ns (>= start). The caller holds
 * the lock it passes to sink_count_print. */
void sink_count_add(sink_count *c, uint64_t now_ns, int admitted);

/* sink_count_second_of returns the second (since start, from 0) now_ns is in. */
uint64_t sink_count_second_of(const sink_count *c, uint64_t now_ns);

/* sink_count_print writes "t=Ns ok=.. throttled=.. total=.." for each
 * second from the first not printed up to (not including) until, and
 * flushes out. Seconds older than the ring are skipped. It takes lock
 * only to read a slot. With last_if_busy, the second `until` itself is
 * printed too when it counted anything (at exit). */
void sink_count_print(sink_count *c, uint64_t until, int last_if_busy, FILE *out, pthread_mutex_t *lock);

#endif /* SLUICE_SINK_COUNT_H */
