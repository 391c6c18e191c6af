/*
 * test_metrics.c - sluiced --metrics: /metrics scraped while producers and a
 * consumer keep the broker busy. Every scrape must hold every series
 * broker/README.md promises, pass `promtool check metrics`, and no counter may go
 * down from one scrape to the next; after the load the counters must add up
 * to what was published and acknowledged. Real sluiced, real HTTP over
 * loopback, real promtool (Debian's prometheus package; make deps installs it).
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define PER_LEVEL 1500
#define TEXT_MAX (256 * 1024)

/* The series every scrape must hold (name and its first label, if any). */
static const char *const required[] = {
    "sluice_level_depth{level=\"high\"}", "sluice_level_inflight{level=\"normal\"}",
    "sluice_level_delayed{level=\"low\"}", "sluice_level_dead{level=\"high\"}",
    "sluice_level_oldest_age_seconds{level=\"high\"}", "sluice_level_enqueued_total{level=\"high\"}",
    "sluice_level_dispatched_total{level=\"high\"}", "sluice_level_acked_total{level=\"high\"}",
    "sluice_level_nacked_total{level=\"high\"}", "sluice_level_expired_total{level=\"high\"}",
    "sluice_level_dead_lettered_total{level=\"high\"}", "sluice_level_throttled_total{level=\"low\"}",
    "sluice_level_throttled_tag_total{level=\"low\"}",
    "sluice_level_picks_total{level=\"high\",reason=\"priority\"}",
    "sluice_level_picks_total{level=\"low\",reason=\"aged\"}",
    "sluice_level_wait_seconds_bucket{level=\"high\",le=\"+Inf\"}", "sluice_level_wait_seconds_count{level=\"low\"}",
    "sluice_sink_rate_per_second ", "sluice_sink_effective_rate_per_second ", "sluice_sink_tokens ",
    "sluice_sink_throttled_total ", "sluice_sink_paused ", "sluice_sink_breaker_state{state=\"closed\"} 1",
    "sluice_sink_breaker_trips_total ", "sluice_pool_size{pool=\"metrics\"}", "sluice_pool_members{pool=\"metrics\"} 1",
    "sluice_pool_inflight{pool=\"metrics\"}", "sluice_pool_recommended_size{pool=\"metrics\"}",
    "sluice_store_commit_seconds_bucket{le=\"+Inf\"}", "sluice_store_commits_total ", "sluice_store_fsyncs_total ",
    "sluice_store_log_records_total ", "sluice_store_log_bytes_total ", "sluice_store_lmdb_commits_total ",
    "sluice_store_map_used_bytes ", "sluice_store_map_size_bytes ", "sluice_connections ", "sluice_consumers ",
    "sluice_bad_input_total ", "sluice_level_pause_remaining_seconds{level=\"high\"}",
    "sluice_settlements_refused_total{reason=\"not_holder\"}",
};

/* metrics_port reads the port sluiced logged ("metrics: serving http://127.0.0.1:PORT/metrics"). */
static unsigned metrics_port(const th_broker *b)
{
    static char log[16384];
    th_read_file(b->log, log, sizeof log);
    const char *p = strstr(log, "serving http://127.0.0.1:");
    if (!p)
        fail_msg("no metrics line in the broker's log:\n%s", log);
    return (unsigned)atoi(p + strlen("serving http://127.0.0.1:"));
}

/* http_get sends GET path to 127.0.0.1:port and reads the whole reply into
 * buf (NUL-terminated). Returns the status code, or -1. Bounded: 10 s. */
static int http_get(unsigned port, const char *path, char *buf, size_t len, const char **body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {10, 0};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    ssize_t r;
    while (got < len - 1 && (r = read(fd, buf + got, len - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    int status = -1;
    sscanf(buf, "HTTP/1.%*d %d", &status);
    char *sep = strstr(buf, "\r\n\r\n");
    *body = sep ? sep + 4 : "";
    return status;
}

/* value returns the sample of the series whose line starts with key, or -1. */
static double value(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, kl) && (key[kl - 1] == ' ' || p[kl] == ' '))
            return strtod(p + kl, NULL);
    return -1;
}

/* check_monotonic compares every counter-like line (_total, _count, _bucket,
 * _sum) of now against the same series in before. */
static void check_monotonic(const char *before, const char *now)
{
    for (const char *p = now; *p; p = strchr(p, '\n') + 1) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            break;
        if (*p == '#')
            continue;
        const char *sp = memchr(p, ' ', (size_t)(eol - p));
        char key[256];
        size_t kl = (size_t)(sp - p) + 1;
        if (!sp || kl >= sizeof key)
            continue;
        memcpy(key, p, kl);
        key[kl] = '\0';
        if (!strstr(key, "_total") && !strstr(key, "_count") && !strstr(key, "_bucket") && !strstr(key, "_sum"))
            continue;
        double a = value(before, key), b = strtod(sp + 1, NULL);
        if (a > b)
            fail_msg("counter %s went down: %g then %g", key, a, b);
    }
}

static void promtool_clean(const char *text)
{
    const char *argv[] = {"/usr/bin/promtool", "check", "metrics", NULL};
    char out[4096];
    int rc = th_run(argv, text, out, sizeof out);
    if (rc != 0)
        fail_msg("promtool check metrics exited %d (is Debian's prometheus installed? make deps): %s", rc, out);
}

typedef struct producer {
    const th_broker *b;
    int rc;
} producer;

static void *produce(void *arg)
{
    producer *p = arg;
    sl_client *c = th_client(p->b, 10000);
    p->rc = SL_OK;
    for (int round = 0; round < 3 && p->rc == SL_OK; round++)
        for (int l = 0; l < 3 && p->rc == SL_OK; l++)
            p->rc = th_put_many(c, l, PER_LEVEL / 3, 1);
    sl_close(&c);
    return NULL;
}

static void scrape(unsigned port, char *raw, const char **body)
{
    int status = http_get(port, "/metrics", raw, TEXT_MAX, body);
    assert_int_equal(status, 200);
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!strstr(*body, required[i]))
            fail_msg("series missing from /metrics: %s", required[i]);
}

static void scraped_during_load_every_series_monotonic_promtool_clean(void **state)
{
    (void)state;
    const char *extra[] = {"--metrics", "127.0.0.1:0", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    unsigned port = metrics_port(&f->b);
    static char buf_a[TEXT_MAX], buf_b[TEXT_MAX];
    char *prev_raw = buf_a, *raw = buf_b;
    const char *prev = NULL, *now = NULL;
    assert_int_equal(sl_subscribe(f->c, "metrics", NULL, 0, 64), SL_OK);
    /* the pool shows from the next snapshot on (once a second) */
    const char *first;
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until; usleep(20 * 1000)) {
        assert_int_equal(http_get(port, "/metrics", raw, TEXT_MAX, &first), 200);
        if (strstr(first, "sluice_pool_members{pool=\"metrics\"} 1"))
            break;
    }

    producer p = {.b = &f->b};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, produce, &p), 0);
    unsigned acked = 0, scrapes = 0, acked_at_scrape = 0;
    uint64_t last_scrape = 0, deadline = th_now_ms() + 40000;
    while (acked < 3 * PER_LEVEL && th_now_ms() < deadline) {
        sl_delivery *d = NULL;
        if (sl_recv(f->c, 100, &d) == SL_OK) {
            assert_int_equal(sl_ack(f->c, d), SL_OK);
            sl_delivery_free(&d);
            acked++;
        }
        /* scrape while the load runs: every 150 ms, and every 1,000 acks, so a
         * fast machine that drains it all in 100 ms still scrapes it mid-way */
        if (th_now_ms() >= last_scrape + 150 || acked >= acked_at_scrape + 1000) {
            last_scrape = th_now_ms();
            acked_at_scrape = acked;
            scrape(port, raw, &now);
            if (prev)
                check_monotonic(prev, now);
            if (scrapes++ < 3)
                promtool_clean(now);
            char *swap = prev_raw;
            prev_raw = raw, raw = swap, prev = now;
        }
    }
    pthread_join(t, NULL);
    assert_int_equal(p.rc, SL_OK);
    assert_int_equal(acked, 3 * PER_LEVEL);
    assert_true(scrapes >= 2);

    /* after the load, within a few snapshots, the counters add up */
    double enq = 0, ack = 0, waits = 0;
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until;) {
        scrape(port, raw, &now);
        enq = ack = waits = 0;
        const char *names[] = {"high", "normal", "low"};
        char key[128];
        for (int l = 0; l < 3; l++) {
            snprintf(key, sizeof key, "sluice_level_enqueued_total{level=\"%s\"}", names[l]);
            enq += value(now, key);
            snprintf(key, sizeof key, "sluice_level_acked_total{level=\"%s\"}", names[l]);
            ack += value(now, key);
            snprintf(key, sizeof key, "sluice_level_wait_seconds_count{level=\"%s\"}", names[l]);
            waits += value(now, key);
        }
        if (enq == 3 * PER_LEVEL && ack == 3 * PER_LEVEL)
            break;
        usleep(50 * 1000); /* the next snapshot: the loop publishes once a second */
    }
    assert_true(enq == 3 * PER_LEVEL);
    assert_true(ack == 3 * PER_LEVEL);
    assert_true(waits == 3 * PER_LEVEL); /* each message's first delivery, once */
    assert_true(value(now, "sluice_store_commits_total ") > 0);
    /* with the log (the default) the batches went through it, and checkpoints followed */
    assert_true(value(now, "sluice_store_log_records_total ") > 0);
    assert_true(value(now, "sluice_store_lmdb_commits_total ") > 0);
    assert_true(value(now, "sluice_store_fsyncs_total ") ==
                value(now, "sluice_store_log_records_total ") + 2 * value(now, "sluice_store_lmdb_commits_total "));
    assert_true(value(now, "sluice_store_commit_seconds_count ") == value(now, "sluice_store_commits_total "));
    assert_true(value(now, "sluice_level_depth{level=\"high\"}") == 0);
    promtool_clean(now);
    printf("# %u scrapes during the load; %g commits\n", scrapes, value(now, "sluice_store_commits_total "));

    /* every series the Grafana dashboard queries is served */
    static char dash[65536];
    assert_true(th_read_file("tools/dist/grafana-sluice.json", dash, sizeof dash) > 0);
    unsigned named = 0;
    for (const char *q = strstr(dash, "sluice_"); q; q = strstr(q + 1, "sluice_")) {
        char name[96];
        size_t n = strspn(q, "abcdefghijklmnopqrstuvwxyz_");
        if (n >= sizeof name - 1 || (q > dash && q[-1] == '-'))
            continue; /* the dashboard's uid, "sluice-broker" */
        memcpy(name, q, n);
        name[n] = '\0';
        char typed[128];
        snprintf(typed, sizeof typed, "# TYPE %s ", name);
        if (!strstr(now, typed) && !strstr(now, name))
            fail_msg("the dashboard queries %s, which /metrics does not serve", name);
        named++;
    }
    assert_true(named >= 15);

    /* anything but /metrics is a 404, and the broker keeps serving */
    const char *body;
    assert_int_equal(http_get(port, "/nothing", raw, TEXT_MAX, &body), 404);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void a_bad_metrics_address_is_a_start_error(void **state)
{
    (void)state;
    const char *bad[][3] = {{"--metrics", "localhost", NULL}, {"--metrics", "999.1.1.1:80", NULL}};
    for (int i = 0; i < 2; i++) {
        th_broker b;
        assert_int_equal(th_broker_init(&b, bad[i]), 0);
        const char *argv[] = {th_bin("sluiced"), "-d", b.data, "-l", b.endpoint, bad[i][0], bad[i][1], NULL};
        char out[256];
        assert_int_equal(th_run(argv, NULL, out, sizeof out), 2);
        th_broker_fini(&b);
    }
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(scraped_during_load_every_series_monotonic_promtool_clean, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_bad_metrics_address_is_a_start_error, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
