/*
 * bench_latency.c - the latency row: how long a message takes from
 * sl_send_async in one client to sl_recv in another.
 *
 * Two threads, each with its own client. The producer publishes message i
 * at start + i / BENCH_LATENCY_RATE_PER_S (open loop: a slow confirmation
 * does not slow the pacing) and stamps the body, after the 8-byte
 * LATENCY_MAGIC, with the CLOCK_MONOTONIC time it actually leaves. It
 * collects confirmations as they come and waits for them only while more
 * than LATENCY_MAX_PENDING are outstanding. The consumer, with credit
 * BENCH_LATENCY_CREDIT, records receive time minus send time of every
 * stamped delivery and acks each before it takes the next, as an
 * application would, so one that arrives during an ack waits for it. Both
 * clocks are the same clock in the same process, so no skew enters.
 *
 * Memory: one int64_t per planned message, allocated up front (seconds *
 * rate, 16 KB a second at the default rate). p50 and p99 are nearest-rank
 * percentiles over the sorted samples: O(n log n) once, at the end.
 *
 * Bounds: the producer stops after its planned count or at a signal; the
 * consumer stops once it has everything the producer sent, at a signal, or
 * after BENCH_CORE_IDLE_TIMEOUT_MS without a delivery, which is an error.
 * If the producer thread cannot start, the consumer is told the producer is
 * done, so it takes what came and stops.
 */
#include "bench_latency.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_guard.h"

#define LATENCY_MAX_PENDING 1000       /* unconfirmed publishes before pacing waits */
#define LATENCY_MAGIC       "SLBLAT01" /* 8 bytes, then the int64_t send time */

typedef struct latency_run {
    sl_client *producer, *consumer;
    int64_t start_ns;
    uint64_t planned_msgs;
    atomic_uint_fast64_t sent_msgs;
    atomic_int producer_done;
    int64_t *latency_ns;   /* planned_msgs slots */
    uint64_t received_msgs;
    int64_t last_got_ns;   /* when the last stamped delivery came */
    int producer_rc, consumer_rc;
} latency_run;

/* latency_produce sends message i at start + i periods, stamped with the
 * time it actually leaves. */
static void *latency_produce(void *arg)
{
    latency_run *r = arg;
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    memcpy(body, LATENCY_MAGIC, 8);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = bench_guard_home(),
                        .tag = bench_guard_tag()};
    const int64_t period_ns = BENCH_CORE_NS_PER_S / BENCH_LATENCY_RATE_PER_S;
    uint64_t confirmed = 0;
    for (uint64_t i = 0; i < r->planned_msgs && !bench_core_stopping() && r->producer_rc == 0;
         i++) {
        int64_t due_ns = r->start_ns + (int64_t)i * period_ns;
        const struct timespec due = {.tv_sec = due_ns / BENCH_CORE_NS_PER_S,
                                     .tv_nsec = due_ns % BENCH_CORE_NS_PER_S};
        for (int k = 0; k < 16 && !bench_core_stopping(); k++)
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) != EINTR)
                break;
        int64_t sent_ns = bench_core_now_ns();
        memcpy(body + 8, &sent_ns, sizeof sent_ns);
        int rc = sl_send_async(r->producer, &put, NULL);
        if (rc != SL_OK) {
            r->producer_rc = bench_client_fail("sl_send_async", r->producer, rc);
            break;
        }
        atomic_fetch_add(&r->sent_msgs, 1);
        r->producer_rc = bench_client_confirms(r->producer, LATENCY_MAX_PENDING, &confirmed);
    }
    if (r->producer_rc == 0)
        r->producer_rc = bench_client_confirms(r->producer, 0, &confirmed);
    atomic_store(&r->producer_done, 1);
    return NULL;
}

/* latency_record keeps receive time - send time of a stamped delivery. */
static void latency_record(void *arg, const sl_delivery *d, int64_t got_ns)
{
    latency_run *r = arg;
    if (d->body_len == BENCH_CORE_BODY_BYTES && memcmp(d->body, LATENCY_MAGIC, 8) == 0 &&
        r->received_msgs < r->planned_msgs) {
        int64_t sent_ns;
        memcpy(&sent_ns, (const unsigned char *)d->body + 8, sizeof sent_ns);
        r->latency_ns[r->received_msgs++] = got_ns > sent_ns ? got_ns - sent_ns : 0;
        r->last_got_ns = got_ns;
    }
}

/* latency_consume records and acks every delivery until it has all the
 * producer sent. */
static void *latency_consume(void *arg)
{
    latency_run *r = arg;
    int64_t idle_since_ns = bench_core_now_ns();
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        if (atomic_load(&r->producer_done) && r->received_msgs >= atomic_load(&r->sent_msgs))
            break;
        int took = bench_client_take(r->consumer, latency_record, r);
        if (took < 0) {
            r->consumer_rc = -1;
            break;
        }
        if (took == 0) {
            if (bench_core_now_ns() - idle_since_ns >
                BENCH_CORE_IDLE_TIMEOUT_MS * BENCH_CORE_NS_PER_MS) {
                r->consumer_rc = bench_core_fail(
                    "latency: no delivery for %d ms; %" PRIu64 " of %" PRIu64 " received",
                    BENCH_CORE_IDLE_TIMEOUT_MS, r->received_msgs,
                    (uint64_t)atomic_load(&r->sent_msgs));
                break;
            }
            continue;
        }
        idle_since_ns = bench_core_now_ns();
    }
    return NULL;
}

int bench_latency_measure(const char *endpoint, int seconds, double *p50_ms, double *p99_ms,
                          double *delivered_per_s)
{
    latency_run r = {.planned_msgs = (uint64_t)seconds * BENCH_LATENCY_RATE_PER_S};
    bench_core_thread threads[] = {{.fn = latency_consume, .arg = &r},
                                   {.fn = latency_produce, .arg = &r}};
    int rc = 0, err;
    *p50_ms = *p99_ms = *delivered_per_s = 0;
    r.latency_ns = calloc(r.planned_msgs, sizeof *r.latency_ns);
    if (!r.latency_ns)
        return bench_core_fail("out of memory");
    if (bench_client_open(endpoint, &r.producer) != 0 ||
        bench_client_open(endpoint, &r.consumer) != 0) {
        rc = -1;
        goto clients_close;
    }
    const unsigned *levels;
    size_t nlevels;
    bench_guard_levels(&levels, &nlevels);
    if ((err = sl_subscribe(r.consumer, NULL, levels, nlevels, BENCH_LATENCY_CREDIT)) != SL_OK) {
        rc = bench_client_fail("sl_subscribe", r.consumer, err);
        goto clients_close;
    }
    r.start_ns = bench_core_now_ns();
    if (bench_core_threads_start(threads, 2) != 0) {
        rc = -1;
        atomic_store(&r.producer_done, 1); /* the consumer takes what came, then stops */
    }
    bench_core_threads_join(threads, 2);
    rc |= r.producer_rc | r.consumer_rc;
    if (rc == 0 && !bench_core_stopping() && r.received_msgs == 0)
        rc = bench_core_fail("latency: nothing was delivered");
    if (rc == 0 && !bench_core_stopping()) {
        bench_core_sort_i64(r.latency_ns, r.received_msgs);
        *p50_ms = bench_core_percentile_ms(r.latency_ns, r.received_msgs, 50);
        *p99_ms = bench_core_percentile_ms(r.latency_ns, r.received_msgs, 99);
        if (r.last_got_ns > r.start_ns)
            *delivered_per_s = (double)r.received_msgs * BENCH_CORE_NS_PER_S / (double)(r.last_got_ns - r.start_ns);
    }
clients_close:
    if (r.consumer)
        sl_flush(r.consumer, BENCH_CORE_CLIENT_TIMEOUT_MS); /* the last acks reach the broker */
    sl_close(&r.consumer);
    sl_close(&r.producer);
    free(r.latency_ns);
    return rc;
}
