/*
 * test_ha_metrics.c - what the two nodes of a high-availability group say
 * about themselves in /metrics: two real sluiced nodes, each with --http,
 * a real redis-server on a Unix socket in the test's directory, the stream
 * on ipc:// sockets there too.
 *
 * Pinned down: the primary says role primary and sluice_ha_promotions_total
 * 0; the standby serves /metrics too, as a standby (role standby, in sync,
 * streamed to, the epoch it has seen, the stream's position it holds, the
 * same as the primary's once idle, its lag as its primary says it: none)
 * and nothing of a broker it does not run
 * (no level series); both pass `promtool check metrics`; after kill -9 of
 * the primary, the promoted node says role primary, epoch 2 and
 * sluice_ha_promotions_total 1 (the count crosses the restart in place a
 * promotion makes); the old primary, started again, is a standby of epoch 2
 * with no promotion. TTL 1500 ms, standby timeout 3000 ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "th_http.h"
#include "th_ha.h"
#include "th_redis.h"

#define TTL_MS 1500
#define KEY "sluice:ha:{t}"

static char dir[64], repl[2][TH_HA_REPL_BYTES];
static th_redis redis;
static th_resp resp;

static int arm(void **state)
{
    (void)state;
    return th_ha_arm(dir, sizeof dir, "/tmp/sluice-ham-XXXXXX", repl, &redis, 120);
}

static int disarm(void **state)
{
    (void)state;
    th_ha_disarm(dir, &redis);
    return 0;
}

static void pause_ms(unsigned ms)
{
    th_ha_pause_ms(ms);
}

/* node starts node i (1 or 2) of group t, each with --http on a port of its own. */
static th_broker *node(int i)
{
    static const char *names[] = {"n1", "n2"};
    const char *extra[] = {"--ha", redis.url, "--ha-group", "t", "--ha-node", names[i - 1], "--repl-listen",
                           repl[i - 1], "--ha-ttl-ms", "1500", "--repl-standby-timeout-ms", "3000", "--http",
                           "127.0.0.1:0", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    return b;
}

static long wait_sync(const char *want, unsigned timeout_ms)
{
    return th_redis_wait_hget(&redis, KEY, "sync", want, timeout_ms);
}

/* port returns the HTTP port of b's nth server (each start in place opens
 * one, and logs it), waiting up to 15 s for it; 0 when none came. */
static unsigned port(const th_broker *b, int nth)
{
    static char log[1 << 20];
    for (uint64_t until = th_now_ms() + 15000; th_now_ms() < until; pause_ms(50)) {
        th_read_file(b->log, log, sizeof log);
        const char *p = log, *hit = NULL;
        int n = 0;
        while ((p = strstr(p, "http: serving http")) && n < nth) {
            hit = p++;
            n++;
        }
        if (n == nth && (hit = strstr(hit, "://")) && (hit = strchr(hit + 3, ':')))
            return (unsigned)atoi(hit + 1);
    }
    return 0;
}

/* scrape reads /metrics from port into resp; 0, or -1. */
static int scrape(unsigned p)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", p);
    return th_http_get(url, NULL, &resp) == 0 && resp.status == 200 ? 0 : -1;
}

/* metric returns the value of sample (a series name with its labels and a
 * space) in the last scrape, or -1 when absent. */
static double metric(const char *sample)
{
    const char *p = strstr(resp.body, sample);
    while (p && p != resp.body && p[-1] != '\n')
        p = strstr(p + 1, sample);
    return p ? strtod(p + strlen(sample), NULL) : -1;
}

/* wait_metric scrapes port until sample reads want (figures are published
 * once a second), up to 10 s; returns 0, or -1. */
static int wait_metric(unsigned p, const char *sample, double want)
{
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; pause_ms(100))
        if (scrape(p) == 0 && metric(sample) == want)
            return 0;
    return -1;
}

static void promtool_clean(void)
{
    const char *argv[] = {"/usr/bin/promtool", "check", "metrics", NULL};
    char out[4096];
    int rc = th_run(argv, resp.body, out, sizeof out);
    if (rc != 0)
        fail_msg("promtool check metrics exited %d: %s", rc, out);
}

static long long serving(const th_broker *b, unsigned timeout_ms)
{
    return th_ha_serving(b, NULL, timeout_ms, NULL);
}

static void each_node_says_its_role_and_a_failover_counts_one_promotion(void **state)
{
    (void)state;
    th_broker *n1 = node(1), *n2 = node(2);
    assert_true(wait_sync("n2", 10000) >= 0);
    sl_client *c = th_client(n1, 5000);
    assert_int_equal(th_put_many(c, 1, 50, 1), SL_OK);
    sl_close(&c);
    unsigned p1 = port(n1, 1), p2 = port(n2, 1);
    assert_true(p1 > 0 && p2 > 0);

    /* the primary */
    assert_int_equal(wait_metric(p1, "sluice_ha_role{role=\"primary\"} ", 1), 0);
    assert_true(metric("sluice_ha_role{role=\"standby\"} ") == 0);
    assert_true(metric("sluice_ha_promotions_total ") == 0);
    assert_true(metric("sluice_ha_epoch ") == 1);
    promtool_clean();
    assert_int_equal(wait_metric(p1, "sluice_ha_lag_records ", 0), 0);
    double made = 0;
    pause_ms(1500); /* a snapshot taken after the last confirmation */
    for (uint64_t until = th_now_ms() + 10000; made < 1 && th_now_ms() < until; pause_ms(100))
        if (scrape(p1) == 0 && metric("sluice_ha_lag_records ") == 0)
            made = metric("sluice_ha_records_total ");
    assert_true(made >= 1); /* the 50 publishes' batches, each a record */

    /* the standby: its own figures, as a standby */
    assert_int_equal(wait_metric(p2, "sluice_ha_records_total ", made), 0);
    assert_true(metric("sluice_ha_role{role=\"standby\"} ") == 1);
    assert_true(metric("sluice_ha_role{role=\"primary\"} ") == 0);
    assert_true(metric("sluice_ha_epoch ") == 1);
    assert_true(metric("sluice_ha_promotions_total ") == 0);
    assert_true(metric("sluice_ha_streaming ") == 1);
    assert_true(metric("sluice_ha_in_sync ") == 1);
    assert_true(metric("sluice_ha_refused_total ") == 0);
    /* its lag, as the primary says it in answer to each keepalive: caught up */
    assert_int_equal(wait_metric(p2, "sluice_ha_lag_records ", 0), 0);
    assert_true(metric("sluice_ha_lag_seconds ") >= 0 && metric("sluice_ha_lag_seconds ") < 1);
    assert_true(metric("sluice_ha_mode{mode=\"sync\"} ") == -1);      /* a primary's */
    assert_null(strstr(resp.body, "sluice_level_depth"));            /* no broker runs there */
    promtool_clean();
    print_message("# the standby holds the stream up to record %.0f, as its primary made it\n", made);

    /* kill -9 of the primary: the standby promotes, and says so */
    th_broker_kill9(n1);
    assert_int_equal(serving(n2, TTL_MS + 10000), 50);
    unsigned p2b = port(n2, 2); /* the process started in place serves again */
    assert_true(p2b > 0);
    assert_int_equal(wait_metric(p2b, "sluice_ha_role{role=\"primary\"} ", 1), 0);
    assert_true(metric("sluice_ha_promotions_total ") == 1);
    assert_true(metric("sluice_ha_epoch ") == 2);
    assert_true(metric("sluice_level_depth{level=\"normal\"} ") == 50);
    promtool_clean();

    /* the old primary, started again, follows as a standby of epoch 2 */
    assert_int_equal(th_broker_start(n1), 0);
    assert_true(wait_sync("n1", 10000) >= 0);
    unsigned p1b = port(n1, 2);
    assert_true(p1b > 0);
    assert_int_equal(wait_metric(p1b, "sluice_ha_in_sync ", 1), 0);
    assert_true(metric("sluice_ha_role{role=\"standby\"} ") == 1);
    assert_true(metric("sluice_ha_epoch ") == 2);
    assert_true(metric("sluice_ha_promotions_total ") == 0);
    assert_int_equal(th_broker_destroy(&n1), 0);
    assert_int_equal(th_broker_destroy(&n2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(each_node_says_its_role_and_a_failover_counts_one_promotion, arm, disarm),
    };
    th_seed();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
