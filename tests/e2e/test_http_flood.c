/*
 * test_http_flood.c - the HTTP server holds (issue 26, item 8): /metrics
 * still answers within a second while a thousand idle and fifty slow
 * (slowloris) connections are open, from the scraper's own address and
 * from others; a request that trickles its headers is cut at the header
 * deadline; one address holds at most its share of connections, and all
 * of them at most the total. Real sluiced, real sockets on 127.0.0.x.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "th_http.h"

#define IDLE 1000
#define SLOW 50

static const char slow_head[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";

/* open_many opens n connections from address from to port into fds. */
static void open_many(int *fds, int n, const char *from, unsigned port)
{
    for (int i = 0; i < n; i++) {
        fds[i] = th_tcp_connect(from, port);
        if (fds[i] < 0)
            fail_msg("connection %d of %d from %s failed", i, n, from ? from : "any");
    }
}

static void close_many(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* trickle sends each slow connection one more header line. */
static void trickle(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0 && send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            close(fds[i]); /* cut by the server: that is its right */
            fds[i] = -1;
        }
}

/* scrape GETs /metrics and checks it came whole and within a second. */
static void scrape(unsigned port, const char *what)
{
    char url[128];
    th_resp *r = malloc(sizeof *r);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
    th_req q = {.method = "GET", .url = url, .timeout_ms = 5000};
    th_http(&q, r);
    if (r->status != 200 || !strstr(r->body, "sluice_level_depth{level=\"high\"}") || r->seconds >= 1.0)
        fail_msg("%s: the scrape answered %ld in %.3f s (wanted 200 within 1 s)", what, r->status, r->seconds);
    free(r);
}

static void scrapes_answer_beside_idle_and_slow_connections(void **state)
{
    (void)state;
    if (th_files_at_least(4096) < 2 * (IDLE + SLOW) + 64)
        skip(); /* the machine allows too few descriptors for the flood */
    const char *extra[] = {"--http", "127.0.0.1:0", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    unsigned port = th_http_port(b);
    assert_true(port > 0);
    static int idle[IDLE], slow[SLOW];
    const char *from[] = {NULL, "127.0.0.2"}; /* the scraper's own address, then another */
    for (int round = 0; round < 2; round++) {
        open_many(idle, IDLE, from[round], port);
        open_many(slow, SLOW, from[round], port);
        for (int i = 0; i < SLOW; i++)
            assert_int_equal(send(slow[i], slow_head, sizeof slow_head - 1, MSG_NOSIGNAL), (ssize_t)sizeof slow_head - 1);
        for (int k = 0; k < 5; k++) {
            scrape(port, round ? "flood from 127.0.0.2" : "flood from the scraper's address");
            trickle(slow, SLOW);
            usleep(200 * 1000);
        }
        close_many(idle, IDLE);
        close_many(slow, SLOW);
    }
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void a_trickled_request_is_cut_at_the_header_deadline(void **state)
{
    (void)state;
    const char *extra[] = {"--http", "127.0.0.1:0", "--http-header-timeout-ms", "1000", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    unsigned port = th_http_port(b);
    assert_true(port > 0);
    int slow = th_tcp_connect(NULL, port), idle = th_tcp_connect(NULL, port);
    assert_true(slow >= 0 && idle >= 0);
    uint64_t t0 = th_now_ms(), slow_cut = 0, idle_cut = 0;
    assert_int_equal(send(slow, slow_head, sizeof slow_head - 1, MSG_NOSIGNAL), (ssize_t)sizeof slow_head - 1);
    while (th_now_ms() < t0 + 5000 && (!slow_cut || !idle_cut)) {
        if (!slow_cut && send(slow, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
            slow_cut = th_now_ms();
        if (!slow_cut && th_tcp_closed(slow, 0))
            slow_cut = th_now_ms();
        if (!idle_cut && th_tcp_closed(idle, 0))
            idle_cut = th_now_ms();
        usleep(100 * 1000);
    }
    /* sending a header line every 100 ms never resets the deadline */
    if (!slow_cut || slow_cut - t0 > 3000 || slow_cut - t0 < 700)
        fail_msg("the trickled request was cut after %llu ms (wanted 1 s, within the sweep)",
                 (unsigned long long)(slow_cut ? slow_cut - t0 : 0));
    if (!idle_cut || idle_cut - t0 > 3000)
        fail_msg("the silent connection was not cut at the deadline (%llu ms)",
                 (unsigned long long)(idle_cut ? idle_cut - t0 : 0));
    close(slow);
    close(idle);
    scrape(port, "after the cuts");
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void an_address_holds_its_share_and_all_hold_the_total(void **state)
{
    (void)state;
    const char *extra[] = {"--http", "127.0.0.1:0", "--http-max-conns", "32", "--http-max-conns-per-addr", "8", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    unsigned port = th_http_port(b);
    assert_true(port > 0);
    int one[20], many[5][8];
    open_many(one, 20, "127.0.0.2", port);
    usleep(300 * 1000);
    int open = 0;
    for (int i = 0; i < 20; i++)
        open += !th_tcp_closed(one[i], 0);
    if (open > 8)
        fail_msg("one address holds %d connections (at most 8)", open);
    assert_true(open >= 1); /* the newest stay: each pushed out one idle longer */
    assert_true(!th_tcp_closed(one[19], 0));
    char from[24];
    for (int a = 0; a < 5; a++) {
        snprintf(from, sizeof from, "127.0.0.%d", a + 3);
        open_many(many[a], 8, from, port);
    }
    usleep(300 * 1000);
    open = 0;
    for (int i = 0; i < 20; i++)
        open += !th_tcp_closed(one[i], 0);
    for (int a = 0; a < 5; a++)
        for (int i = 0; i < 8; i++)
            open += !th_tcp_closed(many[a][i], 0);
    if (open > 32)
        fail_msg("%d connections are open (at most 32)", open);
    scrape(port, "at the total limit");
    close_many(one, 20);
    for (int a = 0; a < 5; a++)
        close_many(many[a], 8);
    assert_int_equal(th_broker_destroy(&b), 0);
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(scrapes_answer_beside_idle_and_slow_connections, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_trickled_request_is_cut_at_the_header_deadline, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(an_address_holds_its_share_and_all_hold_the_total, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
