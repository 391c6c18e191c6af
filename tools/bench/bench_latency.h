/*
 * bench_latency.h - publish -> deliver latency through a Sluice broker, at
 * a steady rate, measured by one producer and one consumer in this process.
 */
#ifndef SLUICE_BENCH_LATENCY_H
#define SLUICE_BENCH_LATENCY_H

#define BENCH_LATENCY_RATE_PER_S 2000 /* publishes a second, open loop */
#define BENCH_LATENCY_CREDIT     16   /* the consumer's credit */

/* bench_latency_measure connects a producer and a consumer to endpoint
 * (NULL: SL_DEFAULT_ENDPOINT), publishes BENCH_LATENCY_RATE_PER_S messages a
 * second for seconds, and consumes and acks them all. The queue should be
 * empty when it starts: the consumer acks whatever it is given, and only the
 * bench's own stamped messages are timed. Returns 0 with the nearest-rank
 * p50 and p99 in milliseconds, and the deliveries per second from the
 * first publish to the last delivery (about BENCH_LATENCY_RATE_PER_S when
 * deliveries keep up with publishes, less when they fall behind); 0 with all left 0 when a signal cut the run
 * short; -1 (reported) on an error, including nothing delivered at all. */
int bench_latency_measure(const char *endpoint, int seconds, double *p50_ms, double *p99_ms,
                          double *delivered_per_s);

#endif /* SLUICE_BENCH_LATENCY_H */
