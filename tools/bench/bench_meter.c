/*
 * bench_meter.c - the metering rows of sluice-bench: the figures that the
 * metering tests used to assert as lower bounds and now leave to the bench.
 *
 * The tests (tests/e2e/test_metering.c, tests/e2e/test_sinkflow.c) assert what must
 * always hold: never above rate*tau + burst in any window, on the broker's
 * own release times. How close a backlogged bucket comes to its rate is a
 * figure: on a busy machine a descheduled consumer or broker loses some of
 * it. So it is measured here, on a quiet machine, against the target the
 * tests used to hold it to, and at the consumer: the arrival times of one
 * consumer in this process with credit BENCH_METER_CREDIT that acks every
 * delivery (bench_client_take), on this process's monotonic clock.
 *
 * Each scenario sets the sink bucket (and level limits) with the admin
 * calls of sluice.h, publishes a backlog with publishes outstanding, and
 * consumes part of it while every limited level stays backlogged:
 *
 *   sink       200/s burst 1, 600 messages: delivered rate, % of 200/s
 *   levels     300/s sink; level 0 ceiling 50/s, level 2 guarantee 60/s,
 *              level 1 unlimited; 900 of 1800: levels 0 and 2, per second
 *   cost       1000 units/s burst 10, cost 10, 150 messages: per second
 *   live       100/s for 150 messages, then 400/s: deliveries in the
 *              second that starts one second after the change
 *   beside     (bench_meter_beside_run, on the slowed disk) sink 2,000/s
 *              burst 10 over a backlog of level 1, while this process
 *              publishes 1,000/s to level 2 beside it: every commit then
 *              flushes while deliveries go on; 4,000 deliveries, % of rate
 *
 * Between scenarios, and on every exit path, drain() removes every limit
 * and consumes what is left, so each starts from an empty queue and the
 * broker is left as it was found (apart from its counters). Costs: about
 * 12 s of metered delivery plus the drains; memory for one arrival array.
 */
#include "bench_meter.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_guard.h"
#include "sluice.h"

#define METER_MAX_ARRIVALS 4096
#define METER_WINDOW_MSGS  100 /* publishes outstanding */
#define METER_LEVELS       3   /* the scenarios use levels 0..2 */

/* One scenario's consumer and what it saw. */
typedef struct meter {
    const char *endpoint;
    sl_client *admin, *consumer;
    int64_t at_ns[METER_MAX_ARRIVALS];
    unsigned level[METER_MAX_ARRIVALS];
    size_t n;
} meter;

static void look(void *ctx, const sl_delivery *d, int64_t got_ns)
{
    meter *m = ctx;
    if (m->n < METER_MAX_ARRIVALS) {
        m->at_ns[m->n] = got_ns;
        m->level[m->n] = d->level;
        m->n++;
    }
}

/* begin starts a scenario's record of arrivals afresh. */
static void begin(meter *m, const char *what)
{
    m->n = 0;
    bench_core_progress("metering: %s", what);
}

/* take consumes until m->n reaches want (at most METER_MAX_ARRIVALS), a
 * signal, or give_up_ns, which is an error. */
static int take(meter *m, size_t want, int64_t give_up_ns)
{
    want = want < METER_MAX_ARRIVALS ? want : METER_MAX_ARRIVALS;
    while (m->n < want && !bench_core_stopping()) {
        if (bench_core_now_ns() > give_up_ns)
            return bench_core_fail("metering: %zu of %zu deliveries in %d s", m->n, want, BENCH_METER_TIMEOUT_S);
        if (bench_client_take(m->consumer, look, m) < 0)
            return -1;
    }
    return 0;
}

/* publish sends count messages of cost to level on the admin client, with
 * up to METER_WINDOW_MSGS unconfirmed, and waits for every confirmation. */
static int publish(meter *m, int level, unsigned count, uint32_t cost)
{
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = level, .cost = cost, .tag = bench_guard_tag()};
    uint64_t confirmed = 0;
    for (unsigned i = 0; i < count && !bench_core_stopping(); i++) {
        int rc = sl_send_async(m->admin, &put, NULL);
        if (rc != SL_OK)
            return bench_client_fail("sl_send_async", m->admin, rc);
        if (bench_client_confirms(m->admin, i + 1 == count ? 0 : METER_WINDOW_MSGS - 1, &confirmed) != 0)
            return -1;
    }
    return 0;
}

/* limits sets the sink bucket and levels 0 and 2 (0: no limit). */
static int limits(meter *m, uint64_t sink_milli, uint64_t burst, uint64_t max0_milli, uint64_t min2_milli)
{
    int rc = sl_sink_set(m->admin, sink_milli, burst, 0);
    if (rc == SL_OK)
        rc = sl_level_rate(m->admin, 0, max0_milli, 0, max0_milli ? 1 : SL_UNCHANGED);
    if (rc == SL_OK)
        rc = sl_level_rate(m->admin, 2, 0, min2_milli, SL_UNCHANGED);
    return rc == SL_OK ? 0 : bench_client_fail("setting the metering limits", m->admin, rc);
}

/* drain removes every limit and consumes until the broker holds nothing. */
static int drain(meter *m)
{
    if (limits(m, 0, 1, 0, 0) != 0)
        return -1;
    int64_t give_up_ns = bench_core_now_ns() + BENCH_METER_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    for (;;) {
        bench_client_totals left;
        int got;
        while ((got = bench_client_take(m->consumer, NULL, NULL)) == 1)
            ;
        if (got < 0 || bench_client_totals_get(m->endpoint, &left) != 0)
            return -1;
        if (left.ready + left.inflight + left.delayed == 0 || bench_core_stopping())
            return 0;
        if (bench_core_now_ns() > give_up_ns)
            return bench_core_fail("metering: the queue did not empty in %d s", BENCH_METER_TIMEOUT_S);
    }
}

/* per_s is the arrivals of level (-1: all) per second over a's whole span. */
static double per_s(const meter *m, int level)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        k += level < 0 || m->level[i] == (unsigned)level;
    if (m->n < 2)
        return 0;
    return bench_core_per_s(level < 0 ? k - 1 : k, m->at_ns[m->n - 1] - m->at_ns[0]);
}

static int scenario_sink(meter *m, int64_t give_up_ns, double *pct)
{
    begin(m, "sink 200/s burst 1, 600 messages");
    if (limits(m, 200 * 1000, 1, 0, 0) != 0 || publish(m, 1, 600, 1) != 0 || take(m, 600, give_up_ns) != 0)
        return -1;
    *pct = per_s(m, -1) / 200 * 100;
    return 0;
}

static int scenario_levels(meter *m, int64_t give_up_ns, double *ceiling_per_s, double *guarantee_per_s)
{
    begin(m, "300/s sink, level 0 ceiling 50/s, level 2 guarantee 60/s");
    if (limits(m, 300 * 1000, 1, 50 * 1000, 60 * 1000) != 0 || publish(m, 0, 400, 1) != 0 ||
        publish(m, 1, 1000, 1) != 0 || publish(m, 2, 400, 1) != 0 || take(m, 900, give_up_ns) != 0)
        return -1;
    *ceiling_per_s = per_s(m, 0);
    *guarantee_per_s = per_s(m, 2);
    return 0;
}

static int scenario_cost(meter *m, int64_t give_up_ns, double *msgs_per_s)
{
    begin(m, "cost 10 at 1000 units/s burst 10, 150 messages");
    if (limits(m, 1000 * 1000, 10, 0, 0) != 0 || publish(m, 1, 200, 10) != 0 || take(m, 150, give_up_ns) != 0)
        return -1;
    *msgs_per_s = per_s(m, -1);
    return 0;
}

static int scenario_live(meter *m, int64_t give_up_ns, double *second)
{
    begin(m, "sink 100/s, then 400/s live");
    if (limits(m, 100 * 1000, 1, 0, 0) != 0 || publish(m, 1, 1500, 1) != 0 || take(m, 150, give_up_ns) != 0)
        return -1;
    int64_t changed_ns = bench_core_now_ns();
    int rc = sl_sink_set(m->admin, 400 * 1000, SL_UNCHANGED, SL_UNCHANGED);
    if (rc != SL_OK)
        return bench_client_fail("sl_sink_set", m->admin, rc);
    if (take(m, 150 + 1000, give_up_ns) != 0)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        k += m->at_ns[i] >= changed_ns + BENCH_CORE_NS_PER_S && m->at_ns[i] < changed_ns + 2 * BENCH_CORE_NS_PER_S;
    *second = (double)k;
    return 0;
}

/* take_beside is take while publishing per_s messages a second to level
 * 2 on the admin client, each confirmed (at most METER_WINDOW_MSGS out). */
static int take_beside(meter *m, size_t want, unsigned per_s, int64_t give_up_ns)
{
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = 2, .tag = bench_guard_tag()};
    uint64_t sent = 0, confirmed = 0;
    int64_t t0 = bench_core_now_ns();
    while (m->n < want && !bench_core_stopping()) {
        if (bench_core_now_ns() > give_up_ns)
            return bench_core_fail("metering: %zu of %zu deliveries in %d s", m->n, want, BENCH_METER_TIMEOUT_S);
        uint64_t due = (uint64_t)(bench_core_now_ns() - t0) * per_s / BENCH_CORE_NS_PER_S;
        for (; sent < due; sent++) {
            int rc = sl_send_async(m->admin, &put, NULL);
            if (rc != SL_OK)
                return bench_client_fail("sl_send_async", m->admin, rc);
        }
        if (bench_client_confirms(m->admin, METER_WINDOW_MSGS, &confirmed) != 0 ||
            bench_client_take(m->consumer, look, m) < 0)
            return -1;
    }
    return bench_client_confirms(m->admin, 0, &confirmed);
}

/* open_meter opens the two clients and drains the broker. 0 or -1. */
static int open_meter(meter *m, const char *endpoint)
{
    m->endpoint = endpoint;
    int rc = bench_client_open(endpoint, &m->admin);
    if (rc == 0 && (rc = bench_client_open(endpoint, &m->consumer)) == 0) {
        int sub = sl_subscribe(m->consumer, NULL, NULL, 0, BENCH_METER_CREDIT);
        rc = sub == SL_OK ? drain(m) : bench_client_fail("sl_subscribe", m->consumer, sub);
    }
    return rc;
}

/* close_meter drains (unless rc is already an error), closes and frees m. */
static int close_meter(meter *m, int rc)
{
    if (m->admin && m->consumer && drain(m) != 0)
        rc = -1;
    sl_close(&m->consumer);
    sl_close(&m->admin);
    free(m);
    return rc;
}

int bench_meter_beside_run(const char *endpoint, bench_table *t, const char *pass)
{
    meter *m = calloc(1, sizeof *m);
    if (!m)
        return bench_core_fail("metering: out of memory");
    double pct = 0;
    int rc = open_meter(m, endpoint);
    if (rc == 0) {
        begin(m, "sink 2000/s burst 10, backlogged, publishers at 1000/s beside");
        rc = limits(m, 2000 * 1000, 10, 0, 0) != 0 || publish(m, 1, 6000, 1) != 0 ||
                     take_beside(m, 4000, 1000, bench_core_now_ns() + BENCH_METER_TIMEOUT_S * BENCH_CORE_NS_PER_S)
                 ? -1 : 0;
        pct = per_s(m, -1) / 2000 * 100;
    }
    if ((rc = close_meter(m, rc)) != 0)
        return -1;
    char scenario[128];
    snprintf(scenario, sizeof scenario, "metering: sink 2000/s, backlogged, 1000/s published beside%s", pass);
    bench_table_add(t, scenario, pct, 1, "% of rate", BENCH_TABLE_AT_LEAST, 97);
    return 0;
}

int bench_meter_run(const char *endpoint, bench_table *t)
{
    meter *m = calloc(1, sizeof *m);
    if (!m)
        return bench_core_fail("metering: out of memory");
    double pct = 0, ceiling = 0, guarantee = 0, cost = 0, second = 0;
    int rc = open_meter(m, endpoint);
    int64_t timeout_ns = BENCH_METER_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    if (rc == 0)
        rc = scenario_sink(m, bench_core_now_ns() + timeout_ns, &pct) || drain(m) ? -1 : 0;
    if (rc == 0)
        rc = scenario_levels(m, bench_core_now_ns() + timeout_ns, &ceiling, &guarantee) || drain(m) ? -1 : 0;
    if (rc == 0)
        rc = scenario_cost(m, bench_core_now_ns() + timeout_ns, &cost) || drain(m) ? -1 : 0;
    if (rc == 0)
        rc = scenario_live(m, bench_core_now_ns() + timeout_ns, &second);
    if (close_meter(m, rc) != 0)
        return -1;
    bench_table_add(t, "metering: sink 200/s burst 1, backlogged", pct, 1, "% of rate", BENCH_TABLE_AT_LEAST, 97);
    bench_table_add(t, "metering: level 0 at its 50/s ceiling, 300/s sink", ceiling, 1, "msgs/s",
                    BENCH_TABLE_AT_LEAST, 45);
    bench_table_add(t, "metering: level 2 at its 60/s guarantee, 300/s sink", guarantee, 1, "msgs/s",
                    BENCH_TABLE_AT_LEAST, 54);
    bench_table_add(t, "metering: cost 10 at 1000 units/s", cost, 1, "msgs/s", BENCH_TABLE_AT_LEAST, 90);
    bench_table_add(t, "metering: 100 -> 400/s live, 2nd second after", second, 0, "msgs", BENCH_TABLE_AT_LEAST,
                    388);
    return 0;
}
