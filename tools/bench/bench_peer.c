/*
 * bench_peer.c - the peer rows: beanstalkd -f 0 (bench_peer_bs.c) measured
 * in the same run as Sluice, each peer row right after the Sluice row it
 * answers, so that both see the disk in the same phase (its flush rate
 * drifts several times over within hours); and the ratio rows.
 *
 * The shapes match the Sluice rows: 100-byte bodies; 1 connection putting
 * one job at a time and waiting for INSERTED (after its fsync); PRODUCERS
 * connections doing the same; one connection keeping WINDOW_MSGS puts
 * pipelined; CONSUMERS connections each reserving one job, then deleting it
 * (one outstanding, as credit 1 and an ack); and a steady
 * BENCH_LATENCY_RATE_PER_S of puts, open loop, timed from the put's write to
 * the reserve's reply in another connection. Sluice's rows go through
 * ipc://, the peer's through loopback TCP, the only transport beanstalkd
 * has besides a unix socket in later versions.
 *
 * Each row runs for the run's seconds; the drain takes what the enqueue
 * rows left (topped up when less than a second's worth is there) for at
 * most that long, since at the peer's flush-bound rate a drain of Sluice's
 * 100,000 would take most of a minute. Every thread bounds its loop by the
 * deadline, a count and the stop flag; each read by the client's timeout.
 */
#include "bench_peer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_args.h"
#include "bench_core.h"
#include "bench_curve.h"
#include "bench_latency.h"
#include "bench_pairs.h"
#include "bench_peer_bs.h"
#include "bench_spawn.h"

#define PEER_MAGIC        "BSPEER01"    /* 8 bytes, then the int64_t send time */
#define PEER_DRAIN_MIN    1000          /* top up below this many ready jobs */
#define PEER_TOPUP_MSGS   20000
#define PEER_WORKERS_MAX  4

_Static_assert(PRODUCERS <= PEER_WORKERS_MAX && CONSUMERS <= PEER_WORKERS_MAX, "PEER_WORKERS_MAX too small");

typedef struct peer_worker {
    int port;
    int64_t start_ns, deadline_ns;
    atomic_uint_fast64_t *left;  /* drain: jobs not yet taken by any worker */
    uint64_t msgs;
    int64_t last_ns;
    int rc;
} peer_worker;

int bench_peer_spawn(bench *b, const char *name, bench_peer_bs *s)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s/%s", b->dir, name);
    if (mkdir(dir, 0700) != 0)
        return bench_core_fail("cannot create %s: %s", dir, strerror(errno));
    char binlog[128];
    snprintf(binlog, sizeof binlog, "%s/binlog", dir);
    if (mkdir(binlog, 0700) != 0)
        return bench_core_fail("cannot create %s: %s", binlog, strerror(errno));
    return bench_peer_bs_start(s, dir);
}

int bench_peer_start(bench *b)
{
    if (!bench_peer_bs_available()) {
        fprintf(stderr, "sluice-bench: beanstalkd is not installed (`make deps`): the peer rows are left out\n");
        return 0;
    }
    return bench_peer_spawn(b, "peer", &b->peer);
}

int bench_peer_stop(bench *b)
{
    return bench_peer_bs_stop(&b->peer);
}

/* ---- the enqueue rows ---- */

static void *peer_produce(void *arg)
{
    peer_worker *w = arg;
    bench_peer_conn c;
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    if ((w->rc = bench_peer_conn_open(&c, w->port, PEER_TUBE)) != 0)
        return NULL;
    w->last_ns = w->start_ns;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        if (bench_core_now_ns() >= w->deadline_ns)
            break;
        if ((w->rc = bench_peer_put(&c, body, sizeof body)) != 0)
            break;
        w->msgs++;
        w->last_ns = bench_core_now_ns();
    }
    bench_peer_conn_close(&c);
    return NULL;
}

/* run_workers runs fn on n workers against the peer on port, from one
 * start, for the run's seconds, and sums their counts. */
static int run_workers(bench *b, int port, void *(*fn)(void *), size_t n, atomic_uint_fast64_t *left,
                       uint64_t *msgs, int64_t *elapsed_ns)
{
    peer_worker w[PEER_WORKERS_MAX] = {{0}};
    bench_core_thread t[PEER_WORKERS_MAX] = {{0}};
    int64_t start_ns = bench_core_now_ns(), last_ns = start_ns;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        w[i] = (peer_worker){.port = port, .start_ns = start_ns,
                             .deadline_ns = start_ns + b->seconds * BENCH_CORE_NS_PER_S, .left = left};
        t[i] = (bench_core_thread){.fn = fn, .arg = &w[i]};
    }
    if (bench_core_threads_start(t, n) != 0)
        rc = -1;
    bench_core_threads_join(t, n);
    *msgs = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= w[i].rc;
        *msgs += w[i].msgs;
        if (w[i].last_ns > last_ns)
            last_ns = w[i].last_ns;
    }
    *elapsed_ns = last_ns - start_ns;
    return rc;
}

static int peer_rate_row(bench *b, const char *scenario, void *(*fn)(void *), size_t n, double *per_s)
{
    uint64_t msgs;
    int64_t elapsed_ns;
    if (!b->peer.port || b->slow)
        return 0;
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    if (run_workers(b, b->peer.port, fn, n, NULL, &msgs, &elapsed_ns) != 0)
        return -1;
    *per_s = bench_core_per_s(msgs, elapsed_ns);
    rate_add(b, scenario, msgs, elapsed_ns, n > 1 ? "msgs/s total" : "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

int row_peer_one(bench *b)
{
    return peer_rate_row(b, "beanstalkd -f 0: 1 producer, 1 outstanding", peer_produce, 1, &b->peer_one_per_s);
}

int bench_peer_turn(bench *b, int port, size_t producers, double *per_s)
{
    uint64_t msgs = 0;
    int64_t ns = 0;
    int rc = run_workers(b, port, peer_produce, producers, NULL, &msgs, &ns);
    *per_s = rc == 0 ? bench_core_per_s(msgs, ns) : 0;
    return rc;
}

int row_peer_many(bench *b)
{
    char scenario[96];
    snprintf(scenario, sizeof scenario, "beanstalkd -f 0: %d producers x 1 outstanding", PRODUCERS);
    return peer_rate_row(b, scenario, peer_produce, PRODUCERS, &b->peer_many_per_s);
}

/* publish_window keeps window puts in flight on c until deadline_ns (or
 * max_msgs confirmed), then collects the rest. */
static int publish_window(bench_peer_conn *c, unsigned window, int64_t deadline_ns, uint64_t max_msgs,
                          uint64_t *confirmed, int64_t *last_ns)
{
    unsigned char body[BENCH_CORE_BODY_BYTES];
    uint64_t sent = 0;
    bench_core_body_fill(body);
    *confirmed = 0;
    for (; sent < window && sent < max_msgs; sent++)
        if (bench_peer_put_send(c, body, sizeof body) != 0)
            return -1;
    while (*confirmed < sent && !bench_core_stopping()) {
        if (bench_peer_put_recv(c) != 0)
            return -1;
        ++*confirmed;
        *last_ns = bench_core_now_ns();
        if (*last_ns < deadline_ns && sent < max_msgs) {
            if (bench_peer_put_send(c, body, sizeof body) != 0)
                return -1;
            sent++;
        }
    }
    return 0;
}

int row_peer_window(bench *b)
{
    char scenario[96];
    bench_peer_conn c;
    uint64_t confirmed;
    int64_t start_ns, last_ns;
    if (!b->peer.port || b->slow)
        return 0;
    snprintf(scenario, sizeof scenario, "beanstalkd -f 0: 1 producer, %d pipelined puts", WINDOW_MSGS);
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    if (bench_peer_conn_open(&c, b->peer.port, PEER_TUBE) != 0)
        return -1;
    last_ns = start_ns = bench_core_now_ns();
    int rc = publish_window(&c, WINDOW_MSGS, start_ns + b->seconds * BENCH_CORE_NS_PER_S, BENCH_CORE_MAX_OPS,
                            &confirmed, &last_ns);
    bench_peer_conn_close(&c);
    if (rc != 0)
        return -1;
    rate_add(b, scenario, confirmed, last_ns - start_ns, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    b->peer_window_per_s = bench_core_per_s(confirmed, last_ns - start_ns);
    return 0;
}

/* ---- the drain ---- */

static void *peer_consume(void *arg)
{
    peer_worker *w = arg;
    bench_peer_conn c;
    uint64_t id;
    if ((w->rc = bench_peer_conn_open(&c, w->port, PEER_TUBE)) != 0)
        return NULL;
    w->last_ns = w->start_ns;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        if (bench_core_now_ns() >= w->deadline_ns || atomic_load(w->left) == 0)
            break;
        int got = bench_peer_reserve(&c, 1, &id, NULL, 0, NULL);
        if (got < 0) {
            w->rc = -1;
            break;
        }
        if (got == 0) /* a second with nothing ready: the backlog is gone */
            break;
        atomic_fetch_sub(w->left, 1);
        if ((w->rc = bench_peer_delete(&c, id)) != 0)
            break;
        w->msgs++;
        w->last_ns = bench_core_now_ns();
    }
    bench_peer_conn_close(&c);
    return NULL;
}

int row_peer_drain(bench *b)
{
    char scenario[96];
    bench_peer_conn c;
    uint64_t ready = 0, confirmed, msgs;
    int64_t last_ns, elapsed_ns;
    if (!b->peer.port || b->slow)
        return 0;
    snprintf(scenario, sizeof scenario, "beanstalkd -f 0: drain, %d consumers, reserve + delete each",
             CONSUMERS);
    if (bench_peer_conn_open(&c, b->peer.port, PEER_TUBE) != 0)
        return -1;
    int rc = bench_peer_ready(&c, PEER_TUBE, &ready);
    if (rc == 0 && ready < PEER_DRAIN_MIN) {
        bench_core_progress("beanstalkd: top-up: %" PRIu64 " ready, putting %d more", ready, PEER_TOPUP_MSGS);
        rc = publish_window(&c, WINDOW_MSGS, bench_core_now_ns() + TOPUP_TIMEOUT_S * BENCH_CORE_NS_PER_S,
                            PEER_TOPUP_MSGS, &confirmed, &last_ns);
        ready += confirmed;
    }
    bench_peer_conn_close(&c);
    if (rc != 0)
        return -1;
    bench_core_progress("%s (%" PRIu64 " ready, at most %d s)", scenario, ready, b->seconds);
    atomic_uint_fast64_t left = ready;
    if (run_workers(b, b->peer.port, peer_consume, CONSUMERS, &left, &msgs, &elapsed_ns) != 0)
        return -1;
    rate_add(b, scenario, msgs, elapsed_ns, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    b->peer_drain_per_s = bench_core_per_s(msgs, elapsed_ns);
    return 0;
}

/* ---- put -> reserve latency ---- */

typedef struct peer_latency {
    bench_peer_conn prod, cons;
    int64_t start_ns;
    uint64_t planned;
    atomic_uint_fast64_t sent;
    atomic_int producer_done;
    int64_t *lat_ns;
    uint64_t received;
    int producer_rc, replies_rc, consumer_rc;
} peer_latency;

/* latency_put puts message i at start + i periods, stamped with the time
 * it actually leaves; its replies are read by latency_replies. */
static void *latency_put(void *arg)
{
    peer_latency *r = arg;
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    memcpy(body, PEER_MAGIC, 8);
    const int64_t period_ns = BENCH_CORE_NS_PER_S / BENCH_LATENCY_RATE_PER_S;
    for (uint64_t i = 0; i < r->planned && !bench_core_stopping() && !r->replies_rc; i++) {
        int64_t due_ns = r->start_ns + (int64_t)i * period_ns;
        const struct timespec due = {.tv_sec = due_ns / BENCH_CORE_NS_PER_S, .tv_nsec = due_ns % BENCH_CORE_NS_PER_S};
        for (int k = 0; k < 16 && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) != 0; k++)
            ;
        int64_t sent_ns = bench_core_now_ns();
        memcpy(body + 8, &sent_ns, sizeof sent_ns);
        if ((r->producer_rc = bench_peer_put_send(&r->prod, body, sizeof body)) != 0)
            break;
        atomic_fetch_add(&r->sent, 1);
    }
    atomic_store(&r->producer_done, 1);
    return NULL;
}

/* latency_replies reads one INSERTED for every put sent. */
static void *latency_replies(void *arg)
{
    peer_latency *r = arg;
    uint64_t got = 0;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        if (got == atomic_load(&r->sent)) {
            if (atomic_load(&r->producer_done) && got == atomic_load(&r->sent))
                break;
            nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
            continue;
        }
        if ((r->replies_rc = bench_peer_put_recv(&r->prod)) != 0)
            break;
        got++;
    }
    return NULL;
}

static void *latency_take(void *arg)
{
    peer_latency *r = arg;
    unsigned char body[BENCH_CORE_BODY_BYTES];
    uint64_t id;
    size_t len;
    int idle = 0;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        if (atomic_load(&r->producer_done) && r->received >= atomic_load(&r->sent))
            break;
        int got = bench_peer_reserve(&r->cons, 1, &id, body, sizeof body, &len);
        int64_t got_ns = bench_core_now_ns();
        if (got < 0) {
            r->consumer_rc = -1;
            break;
        }
        if (got == 0) {
            if (++idle * 1000 > BENCH_CORE_IDLE_TIMEOUT_MS) {
                r->consumer_rc = bench_core_fail("beanstalkd latency: nothing reserved for %d ms",
                                                 BENCH_CORE_IDLE_TIMEOUT_MS);
                break;
            }
            continue;
        }
        idle = 0;
        if (len == sizeof body && memcmp(body, PEER_MAGIC, 8) == 0 && r->received < r->planned) {
            int64_t sent_ns;
            memcpy(&sent_ns, body + 8, sizeof sent_ns);
            r->lat_ns[r->received++] = got_ns > sent_ns ? got_ns - sent_ns : 0;
        }
        if ((r->consumer_rc = bench_peer_delete(&r->cons, id)) != 0)
            break;
    }
    return NULL;
}

int row_peer_latency(bench *b)
{
    char scenario[96];
    if (!b->peer.port || b->slow)
        return 0;
    peer_latency r = {.planned = (uint64_t)b->seconds * BENCH_LATENCY_RATE_PER_S, .prod.fd = -1, .cons.fd = -1};
    bench_core_thread t[] = {{.fn = latency_take, .arg = &r}, {.fn = latency_replies, .arg = &r},
                             {.fn = latency_put, .arg = &r}};
    int rc = 0;
    bench_core_progress("beanstalkd -f 0: put->reserve latency at %d msgs/s (%d s)", BENCH_LATENCY_RATE_PER_S,
                        b->seconds);
    r.lat_ns = calloc(r.planned, sizeof *r.lat_ns);
    if (!r.lat_ns)
        return bench_core_fail("out of memory");
    if (bench_peer_conn_open(&r.prod, b->peer.port, PEER_LATENCY_TUBE) != 0 ||
        bench_peer_conn_open(&r.cons, b->peer.port, PEER_LATENCY_TUBE) != 0) {
        rc = -1;
        goto done;
    }
    r.start_ns = bench_core_now_ns();
    if (bench_core_threads_start(t, 3) != 0) {
        rc = -1;
        atomic_store(&r.producer_done, 1);
    }
    bench_core_threads_join(t, 3);
    rc |= r.producer_rc | r.replies_rc | r.consumer_rc;
    if (rc == 0 && !bench_core_stopping() && r.received == 0)
        rc = bench_core_fail("beanstalkd latency: nothing reserved");
    if (rc == 0 && !bench_core_stopping()) {
        bench_core_sort_i64(r.lat_ns, r.received);
        snprintf(scenario, sizeof scenario, "beanstalkd -f 0: put->reserve latency p50 at %d msgs/s",
                 BENCH_LATENCY_RATE_PER_S);
        bench_table_add(&b->table, scenario, bench_core_percentile_ms(r.lat_ns, r.received, 50), 3, "ms",
                        BENCH_TABLE_NO_GOAL, 0);
        snprintf(scenario, sizeof scenario, "beanstalkd -f 0: put->reserve latency p99 at %d msgs/s",
                 BENCH_LATENCY_RATE_PER_S);
        b->peer_p99_ms = bench_core_percentile_ms(r.lat_ns, r.received, 99);
        bench_table_add(&b->table, scenario, b->peer_p99_ms, 3, "ms", BENCH_TABLE_NO_GOAL, 0);
    }
done:
    bench_peer_conn_close(&r.prod);
    bench_peer_conn_close(&r.cons);
    free(r.lat_ns);
    return rc;
}

/* ---- the ratio rows ---- */

static void ratio(bench *b, const char *scenario, double num, double den, bench_table_goal g, double target)
{
    if (num > 0 && den > 0)
        bench_table_add(&b->table, scenario, num / den, 2, "x", g, target);
}

/* by_transport adds "what, stream / over" and "what, ZeroMQ / over", each
 * num / den (minus, for a difference: num - den). The target goes to the
 * stream's row when this run measured it (unless another row holds it:
 * held), else to the ZeroMQ row: the stream endpoint is the transport a
 * producer that waits for each publish, or a worker acking one at a time,
 * is pointed to, and a broker the bench did not start has none. */
static void by_transport(bench *b, const char *what, const char *over, double stream, double zmq, double den,
                         int minus, bench_table_goal g, double target, int held)
{
    const double v[2] = {stream, zmq};
    for (int i = 0; i < 2; i++) {
        char label[128];
        snprintf(label, sizeof label, "%s, %s %s %s", what, i ? "ZeroMQ" : "stream", minus ? "-" : "/", over);
        bench_table_goal goal = (i ? stream > 0 : held) ? BENCH_TABLE_NO_GOAL : g;
        if (!minus)
            ratio(b, label, v[i], den, goal, target);
        else if (v[i] > 0 && den > 0)
            bench_table_add(&b->table, label, v[i] - den, 3, "ms", goal, target);
    }
}

int row_peer_ratios(bench *b)
{
    bench_pairs_ratio_rows(b);
    by_transport(b, "1 x 1 enqueue", "beanstalkd -f 0 1 x 1", b->one_stream_per_s, b->one_per_s, b->peer_one_per_s,
                 0, BENCH_TABLE_AT_LEAST, TARGET_ONE_VS_PEER, b->one_pairs_ratio > 0);
    by_transport(b, "1 x 1 enqueue", "raw append + fdatasync rate", b->one_stream_per_s, b->one_per_s,
                 b->flushes_per_s, 0, BENCH_TABLE_AT_LEAST, TARGET_ONE_VS_DISK, b->one_flush_pairs_ratio > 0);
    by_transport(b, "4 x 1 enqueue", "beanstalkd -f 0 4 x 1", b->many_stream_per_s, b->many_per_s,
                 b->peer_many_per_s, 0, BENCH_TABLE_AT_LEAST, TARGET_MANY_VS_PEER, b->many_pairs_ratio > 0);
    ratio(b, "1 x 100 enqueue / beanstalkd -f 0 100 pipelined", b->window_per_s, b->peer_window_per_s,
          BENCH_TABLE_NO_GOAL, 0);
    by_transport(b, "drain 4 x credit 1", "beanstalkd -f 0 drain 4 x 1", b->drain_stream_per_s, b->drain_per_s,
                 b->peer_drain_per_s, 0, BENCH_TABLE_AT_LEAST, TARGET_DRAIN_VS_PEER, 0);
    by_transport(b, "drain 4 x credit 1", "ideal drain", b->drain_stream_per_s, b->drain_per_s,
                 b->ideal_drain_per_s, 0, BENCH_TABLE_AT_LEAST, TARGET_DRAIN_VS_IDEAL, 0);
    by_transport(b, "publish->deliver p99", "ideal log p99", b->p99_stream_ms, b->p99_ms, b->ideal_p99_ms, 1,
                 BENCH_TABLE_AT_MOST, TARGET_P99_OVER_IDEAL_MS, 0);
    by_transport(b, "publish->deliver p99", "beanstalkd -f 0 p99", b->p99_stream_ms, b->p99_ms, b->peer_p99_ms, 0,
                 BENCH_TABLE_AT_MOST, TARGET_P99_VS_PEER, 0);
    if (b->curve_window_pairs_ratio > 0) {
        char label[96];
        snprintf(label, sizeof label, "1 x 100 enqueue, CURVE / without CURVE, median of %d pairs", CURVE_PAIRS);
        bench_table_add(&b->table, label, b->curve_window_pairs_ratio, 2, "x", BENCH_TABLE_AT_LEAST,
                        TARGET_CURVE_VS_PLAIN);
    }
    ratio(b, "1 x 100 enqueue, CURVE / without CURVE", b->curve_window_per_s, b->window_per_s,
          b->curve_window_pairs_ratio > 0 ? BENCH_TABLE_NO_GOAL : BENCH_TABLE_AT_LEAST, TARGET_CURVE_VS_PLAIN);
    ratio(b, "drain 4 x credit 1, CURVE / without CURVE", b->curve_drain_per_s, b->drain_per_s,
          BENCH_TABLE_AT_LEAST, TARGET_CURVE_VS_PLAIN);
    return 0;
}
