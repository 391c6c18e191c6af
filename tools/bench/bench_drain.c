/*
 * bench_drain.c - row 4 of sluice-bench: the drain. The backlog the enqueue
 * rows left, topped up to drain_msgs by one windowed publisher, consumed by
 * drain_consumers consumers of credit drain_credit that ack every delivery
 * (4 x credit 1, 1 x credit 64, and with --ack-flush-ms 0 on a broker of
 * its own); then `sluice consume -c 64` over another backlog, one process,
 * its output to /dev/null. After each drain the broker must report the
 * queue empty, or the run fails. The stream endpoint's drain is this row
 * run over it (sluice-bench.c, stream_run).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench_args.h"
#include "bench_client.h"
#include "bench_core.h"
#include "bench_disk.h"
#include "bench_run.h"
#include "bench_workers.h"
#include "proc.h"

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

/* drain consumes the backlog with b->drain_consumers consumers of credit
 * b->drain_credit, acking each, and adds the row with target. */
static int drain(bench *b, double target)
{
    char scenario[96];
    uint64_t ready, msgs;
    int64_t elapsed_ns;
    bench_client_totals left;
    snprintf(scenario, sizeof scenario, "drain, %zu consumer%s, credit %u, ack each%s", b->drain_consumers,
             b->drain_consumers > 1 ? "s" : "", b->drain_credit, b->pass);
    if (topup(b, b->drain_msgs, &ready) != 0)
        return -1;
    bench_core_progress("%s (%" PRIu64 " messages)", scenario, ready);

    bench_worker w[BENCH_WORKERS_MAX] = {{0}};
    atomic_uint_fast64_t done_all = 0;
    for (size_t i = 0; i < b->drain_consumers; i++) {
        w[i].target_msgs = ready;
        w[i].done_all = &done_all;
    }
    int rc = bench_workers_run(b->endpoint, b->seconds, w, b->drain_consumers, b->drain_credit,
                               bench_workers_consume, &msgs, &elapsed_ns);
    if (rc != 0 || bench_core_stopping() || bench_client_totals_get(b->endpoint, &left) != 0)
        return -1;
    if (left.ready || left.inflight || left.delayed)
        return bench_core_fail("queue not empty after the drain: %" PRIu64 " ready, %" PRIu64
                               " in flight, %" PRIu64 " delayed",
                               left.ready, left.inflight, left.delayed);
    /* 4 x credit 1 over ZeroMQ is stated without its target when the
     * stream's row, which carries it, follows (stream_run) */
    int four = b->drain_consumers == CONSUMERS && b->drain_credit == 1 && target == TARGET_DRAIN_PER_S;
    int stream_next = four && !b->streaming && !b->slow && !b->curve && b->broker.stream_endpoint[0];
    rate_add(b, scenario, msgs, elapsed_ns, "msgs/s", stream_next ? BENCH_TABLE_NO_GOAL : BENCH_TABLE_AT_LEAST,
             target);
    if (!b->slow && four)
        *(b->curve ? &b->curve_drain_per_s : b->streaming ? &b->drain_stream_per_s : &b->drain_per_s) =
            bench_core_per_s(msgs, elapsed_ns);
    return 0;
}

int row_drain(bench *b)
{
    b->drain_consumers = CONSUMERS;
    b->drain_credit = 1;
    return drain(b, TARGET_DRAIN_PER_S);
}

int row_drain_durable(bench *b)
{
    b->drain_consumers = CONSUMERS;
    b->drain_credit = 1;
    return drain(b, TARGET_DRAIN_DURABLE_PER_S);
}

int row_drain_one(bench *b)
{
    b->drain_consumers = 1;
    b->drain_credit = DRAIN_ONE_CREDIT;
    return drain(b, TARGET_DRAIN_PER_S);
}

/* row_consume_cli: `sluice consume -c 64` over the backlog, one process,
 * stdout to /dev/null; sluice is found beside the spawned sluiced. */
int row_consume_cli(bench *b)
{
    char sluice[PROC_PATH_BYTES], log[96], scenario[96];
    uint64_t ready;
    int64_t elapsed_ns;
    const char *slash = b->sluiced ? strrchr(b->sluiced, '/') : NULL;
    if (!b->sluiced)
        return 0; /* -b: no binary to start */
    snprintf(sluice, sizeof sluice, "%.*ssluice", slash ? (int)(slash - b->sluiced + 1) : 0, b->sluiced);
    snprintf(log, sizeof log, "%s/consume.log", b->dir);
    snprintf(scenario, sizeof scenario, "`sluice consume -c %d > /dev/null`, 1 process%s", DRAIN_ONE_CREDIT,
             b->pass);
    if (topup(b, b->drain_msgs, &ready) != 0)
        return -1;
    bench_core_progress("%s (%" PRIu64 " messages)", scenario, ready);
    if (bench_disk_consume_cli(sluice, b->endpoint, DRAIN_ONE_CREDIT, ready, log, &elapsed_ns) != 0)
        return -1;
    rate_add(b, scenario, ready, elapsed_ns, "msgs/s", BENCH_TABLE_AT_LEAST, TARGET_CONSUME_CLI_PER_S);
    return 0;
}

