/*
 * test_transport.c - the transport against the real sluiced, with raw
 * ZeroMQ sockets where a client library would be too polite: a consumer
 * that stops reading neither blocks the loop nor loses what it held (nor is
 * charged attempts for what it could not read), and a second peer claiming
 * a connected peer's routing id neither black-holes nor hijacks it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>

#include "harness.h"
#include "sluice.h"

static void *raw_dealer(void *ctx, const char *endpoint, const char *rid, int rcvhwm)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (rid)
        zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, strlen(rid));
    if (rcvhwm)
        zmq_setsockopt(s, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
    assert_int_equal(zmq_connect(s, endpoint), 0);
    return s;
}

/* pong sends PING {seq} and waits for the matching PONG; 1 when it came. */
static int pong(void *s, uint8_t seq, int timeout_ms)
{
    uint8_t ping[] = {0x82, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0xa3, 's', 'e', 'q', seq};
    zmq_send(s, ping, sizeof ping, 0);
    uint64_t end = th_now_ms() + (uint64_t)timeout_ms;
    zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
    char buf[256];
    while (th_now_ms() < end) {
        if (zmq_poll(&it, 1, 50) != 1)
            continue;
        int n = zmq_recv(s, buf, sizeof buf, 0);
        if (n >= 14 && memmem(buf, (size_t)n, "PONG", 4) && (uint8_t)buf[n - 1] == seq)
            return 1; /* our PONG; PINGs from the broker are skipped */
    }
    return 0;
}

/* The tests here start their broker by hand, not as a th_fixture: the raw
 * sockets come first, and the clients (th_client) only where they are due. */
static void stuck_consumer_blocks_nothing_and_loses_nothing(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, (const char *const[]){"--consumer-max-inflight", "2000", NULL}), 0);
    assert_int_equal(th_broker_start(&b), 0);
    void *ctx = zmq_ctx_new();
    /* HELLO with a large credit, then never read */
    void *stuck = raw_dealer(ctx, b.endpoint, NULL, 10);
    uint8_t hello[] = {0x84, 0xa2, 'o', 'p', 0xa5, 'H', 'E', 'L', 'L', 'O', 0xa3, 's', 'e', 'q', 0x01,
                       0xa1, 'v', PROTO_VERSION, 0xa6, 'c', 'r', 'e', 'd', 'i', 't', 0xcd, 0x27, 0x10};
    zmq_send(stuck, hello, sizeof hello, 0);
    sl_client *p = th_client(&b, 5000);
    char body[16];
    uint64_t worst_ms = 0;
    for (int i = 0; i < 3000; i++) {
        snprintf(body, sizeof body, "s%04d", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        uint64_t t0 = th_now_ms();
        assert_int_equal(sl_send(p, &m, NULL), SL_OK);
        uint64_t took = th_now_ms() - t0;
        worst_ms = took > worst_ms ? took : worst_ms;
    }
    fprintf(stderr, "# 3000 publishes beside a consumer that reads nothing: slowest confirm %llu ms\n",
            (unsigned long long)worst_ms);
    /* the loop never waited on the stuck peer: a publish behind a blocked
     * loop would time out (5 s); the slowest durable confirm is a figure,
     * with room here for a busy disk */
    assert_true(worst_ms < 4000);
    sl_stats st;
    assert_int_equal(sl_stats_get(p, &st), SL_OK);
    assert_true(st.level[1].inflight <= 2000); /* the per-consumer cap */
    zmq_close(stuck); /* it goes away holding deliveries */
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    uint8_t seen[3000] = {0};
    int got = 0;
    sl_delivery *d = NULL;
    while (got < 3000 && sl_recv(c, 5000, &d) == SL_OK) {
        int idx;
        assert_int_equal(sscanf(d->body, "s%d", &idx), 1);
        got += !seen[idx];
        seen[idx] = 1;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(got, 3000); /* nothing it held was lost */
    sl_close(&c);
    sl_close(&p);
    zmq_ctx_term(ctx);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void duplicate_routing_id_neither_hijacks_nor_blackholes(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    assert_int_equal(th_broker_start(&b), 0);
    void *ctx = zmq_ctx_new();
    void *first = raw_dealer(ctx, b.endpoint, "client-7", 0);
    assert_true(pong(first, 1, 3000));
    void *second = raw_dealer(ctx, b.endpoint, "client-7", 0);
    usleep(200 * 1000);
    assert_false(pong(second, 2, 500)); /* refused: it cannot take over the name */
    assert_true(pong(first, 3, 3000));  /* and the first still gets its own replies */
    zmq_close(second);
    zmq_close(first);
    zmq_ctx_term(ctx);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* wait_level waits (up to timeout_ms) until level 1 has inflight
 * deliveries out and depth ready; 1 when it did. */
static int wait_level(sl_client *c, uint64_t inflight, uint64_t depth, int timeout_ms)
{
    uint64_t end = th_now_ms() + (uint64_t)timeout_ms;
    sl_stats st;
    while (th_now_ms() < end) {
        if (sl_stats_get(c, &st) == SL_OK && st.level[1].inflight == inflight && st.level[1].depth == depth)
            return 1;
        usleep(20 * 1000);
    }
    return 0;
}

/* A consumer that stops reading its socket (it subscribed with a window of
 * 5 and never calls sl_recv, so it sends nothing at all) is not charged for
 * the deliveries it could not read: when their leases run out they go back
 * with their attempt unchanged. A consumer that read its delivery and kept
 * talking (its library answers the broker's PINGs while it waits in sl_recv)
 * is charged when it lets the lease run out. */
static void a_consumer_that_stops_reading_is_not_charged(void **state)
{
    (void)state;
    th_broker b;
    const char *extra[] = {"--lease-ms", "1500", "--heartbeat-ms", "200", NULL};
    assert_int_equal(th_broker_init(&b, extra), 0);
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *p = th_client(&b, 5000);
    assert_int_equal(th_put_many(p, 1, 5, 1), SL_OK);
    sl_client *stopped = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(stopped, NULL, NULL, 0, 5), SL_OK);
    assert_true(wait_level(p, 5, 0, 5000)); /* all five sent to it */
    assert_true(wait_level(p, 0, 5, 10000)); /* and back when their leases ran out */
    sl_stats st;
    assert_int_equal(sl_stats_get(p, &st), SL_OK);
    assert_int_equal(st.level[1].expired, 0); /* none counted as an expiry */

    /* the read one: taken, never settled, the lease let run out while the
     * consumer goes on waiting in sl_recv */
    sl_client *slow = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(slow, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *held = NULL;
    assert_int_equal(sl_recv(slow, 5000, &held), SL_OK);
    assert_int_equal(held->attempt, 1); /* the stopped consumer's five came back uncharged */
    uint64_t held_id = held->id;
    uint64_t end = th_now_ms() + 3000;
    while (th_now_ms() < end) { /* reading: a window of 1 gets nothing more */
        sl_delivery *d = NULL;
        if (sl_recv(slow, 100, &d) == SL_OK) {
            assert_true(d->id == held_id); /* its own delivery again, after the expiry */
            assert_int_equal(d->attempt, 2);
            sl_delivery_free(&d);
        }
    }
    assert_int_equal(sl_stats_get(p, &st), SL_OK);
    assert_int_equal(st.level[1].expired, 1); /* charged */
    sl_delivery_free(&held);
    sl_close(&slow);
    sl_close(&stopped);

    /* everything drains; only the held one used a second attempt */
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 10), SL_OK);
    unsigned got = 0;
    sl_delivery *d = NULL;
    while (got < 5 && sl_recv(c, 5000, &d) == SL_OK) {
        assert_int_equal(d->attempt, d->id == held_id ? 2u : 1u);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        got++;
    }
    assert_int_equal(got, 5);
    sl_close(&c);
    sl_close(&p);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stuck_consumer_blocks_nothing_and_loses_nothing),
        cmocka_unit_test(duplicate_routing_id_neither_hijacks_nor_blackholes),
        cmocka_unit_test(a_consumer_that_stops_reading_is_not_charged),
    };
    th_seed();
    return cmocka_run_group_tests_name("transport", tests, NULL, NULL);
}
