/*
 * test_stream.c - the stream endpoint (--stream-listen) against the real
 * sluiced: plain Unix sockets, no ZeroMQ between the client and the loop.
 * A client named stream+ipc:// publishes, confirms, consumes and acks as it
 * does over ZeroMQ, and both endpoints serve one queue in FIFO order;
 * what was confirmed survives kill -9; a consumer that goes gets its leases
 * returned to another; a subscribed client reconnects and subscribes anew
 * after a restart; a raw socket that does not greet, announces a message
 * over the limit or sends a malformed one gets a typed ERROR or a closed
 * connection and a log line, never a crash. (The settings that cannot go
 * with it, --auth and a non-loopback address without --insecure, are
 * tests/unit/test_conf.c's.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "proto.h"
#include "proto_stream.h"
#include "sluice.h"

typedef struct sbroker {
    th_broker b;
    char listen[320];   /* ipc://dir/st.sock */
    char endpoint[340]; /* stream+ipc://dir/st.sock */
    const char *extra[4];
} sbroker;

static void sbroker_start(sbroker *s)
{
    assert_int_equal(th_broker_init(&s->b, NULL), 0);
    snprintf(s->listen, sizeof s->listen, "ipc://%s/st.sock", s->b.dir);
    snprintf(s->endpoint, sizeof s->endpoint, "stream+%s", s->listen);
    s->extra[0] = "--stream-listen";
    s->extra[1] = s->listen;
    s->extra[2] = NULL;
    memcpy(s->b.extra, s->extra, sizeof s->extra);
    assert_int_equal(th_broker_start(&s->b), 0);
}

/* sbroker_finish stops s's broker (a clean exit: under ASan, no leaks too)
 * and removes its directory. */
static void sbroker_finish(sbroker *s)
{
    assert_int_equal(th_broker_stop(&s->b), 0);
    th_broker_fini(&s->b);
}

static sl_client *sclient(const sbroker *s, int timeout_ms)
{
    sl_options o = {.timeout_ms = timeout_ms};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(s->endpoint, &o, &c), SL_OK);
    return c;
}

static void put(sl_client *c, const char *body)
{
    sl_put p = {.body = body, .body_len = strlen(body), .level = 1};
    assert_int_equal(sl_send(c, &p, NULL), SL_OK);
}

/* take receives one delivery within timeout_ms and checks its body. */
static void take(sl_client *c, const char *want, int ack)
{
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_non_null(d);
    if (strlen(want) != d->body_len || memcmp(d->body, want, d->body_len) != 0)
        fail_msg("delivered %.*s, expected %s", (int)d->body_len, (const char *)d->body, want);
    if (ack)
        assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
}

static void publish_and_consume_over_the_stream_in_fifo_order(void **state)
{
    (void)state;
    sbroker s;
    sbroker_start(&s);
    sl_client *p = sclient(&s, 5000), *z = th_client(&s.b, 5000);
    char body[32];
    for (int i = 0; i < 50; i++) { /* sequential, then interleaved with ZeroMQ publishes */
        snprintf(body, sizeof body, "m%03d", i);
        put(i % 5 == 4 ? z : p, body);
    }
    for (int i = 50; i < 250; i++) { /* pipelined over the stream */
        snprintf(body, sizeof body, "m%03d", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        assert_int_equal(sl_send_async(p, &m, NULL), SL_OK);
    }
    for (int i = 50; i < 250; i++) {
        sl_confirm cf;
        assert_int_equal(sl_send_wait(p, 5000, &cf), SL_OK);
        assert_int_equal(cf.err, SL_OK);
    }
    sl_client *cons = sclient(&s, 5000);
    assert_int_equal(sl_subscribe(cons, NULL, NULL, 0, 8), SL_OK);
    for (int i = 0; i < 250; i++) {
        snprintf(body, sizeof body, "m%03d", i);
        take(cons, body, 1);
    }
    assert_int_equal(sl_flush(cons, 5000), SL_OK);
    sl_stats st;
    assert_int_equal(sl_stats_get(z, &st), SL_OK); /* nothing left, nothing in flight */
    for (unsigned l = 0; l < st.nlevels; l++) {
        assert_int_equal(st.level[l].depth, 0);
        assert_int_equal(st.level[l].inflight, 0);
    }
    sl_close(&cons);
    sl_close(&p);
    sl_close(&z);
    sbroker_finish(&s);
}

static void what_was_confirmed_survives_kill_9(void **state)
{
    (void)state;
    sbroker s;
    sbroker_start(&s);
    sl_client *p = sclient(&s, 5000);
    char body[32];
    for (int i = 0; i < 200; i++) {
        snprintf(body, sizeof body, "d%03d", i);
        put(p, body);
    }
    sl_close(&p);
    th_broker_kill9(&s.b);
    assert_int_equal(th_broker_start(&s.b), 0);
    sl_client *c = sclient(&s, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 16), SL_OK);
    for (int i = 0; i < 200; i++) {
        snprintf(body, sizeof body, "d%03d", i);
        take(c, body, 1);
    }
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_close(&c);
    sbroker_finish(&s);
}

static void a_consumer_that_goes_has_its_leases_returned(void **state)
{
    (void)state;
    sbroker s;
    sbroker_start(&s);
    sl_client *p = sclient(&s, 5000);
    put(p, "held-1");
    put(p, "held-2");
    sl_client *gone = sclient(&s, 5000);
    assert_int_equal(sl_subscribe(gone, NULL, NULL, 0, 2), SL_OK);
    take(gone, "held-1", 0);
    take(gone, "held-2", 0);
    sl_close(&gone); /* its connection closes with two leases held */
    sl_client *next = sclient(&s, 5000);
    assert_int_equal(sl_subscribe(next, NULL, NULL, 0, 2), SL_OK);
    take(next, "held-1", 1); /* back at the head, well before the 30 s lease */
    take(next, "held-2", 1);
    assert_int_equal(sl_flush(next, 5000), SL_OK);
    sl_close(&next);
    sl_close(&p);
    sbroker_finish(&s);
}

static void a_subscribed_client_comes_back_after_a_restart(void **state)
{
    (void)state;
    sbroker s;
    sbroker_start(&s);
    sl_client *c = sclient(&s, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    sl_client *p = sclient(&s, 5000);
    put(p, "before");
    take(c, "before", 1);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    assert_int_equal(th_broker_stop(&s.b), 0);
    sl_delivery *d = NULL;
    assert_int_not_equal(sl_recv(c, 300, &d), SL_OK); /* nothing while it is down */
    assert_int_equal(th_broker_start(&s.b), 0);
    put(p, "after"); /* the producer connects anew at its send */
    take(c, "after", 1); /* the consumer at its next attempt, and subscribes again */
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_close(&c);
    sl_close(&p);
    sbroker_finish(&s);
}

/* raw_connect opens a plain Unix socket to s's stream endpoint. */
static int raw_connect(const sbroker *s)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", s->listen + strlen("ipc://"));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* raw_read reads one message into m (its strings point into buf): 1, or 0
 * when the broker closed the connection, within timeout_ms. */
static int raw_read(int fd, unsigned char *buf, size_t cap, proto_msg *m, int timeout_ms)
{
    size_t have = 0, len = 0;
    uint64_t end = th_now_ms() + (uint64_t)timeout_ms;
    while (th_now_ms() < end) {
        int r = proto_stream_frame(buf, have, cap - PROTO_STREAM_HDR, &len);
        if (r == 1) {
            const char *why = NULL;
            assert_int_equal(proto_decode(buf + PROTO_STREAM_HDR, len, m, &why), SL_OK);
            return 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(fd, buf + have, cap - have);
        if (n <= 0)
            return 0;
        have += (size_t)n;
    }
    fail_msg("no answer within %d ms", timeout_ms);
    return 0;
}

static void raw_send(int fd, const void *body, size_t len)
{
    unsigned char hdr[PROTO_STREAM_HDR];
    proto_stream_put_len(hdr, (uint32_t)len);
    assert_int_equal(write(fd, hdr, sizeof hdr), (ssize_t)sizeof hdr);
    if (len)
        assert_int_equal(write(fd, body, len), (ssize_t)len);
}

static void bad_input_gets_a_typed_answer_or_a_closed_connection(void **state)
{
    (void)state;
    sbroker s;
    sbroker_start(&s);
    unsigned char buf[4096];
    proto_msg m;

    /* no greeting: a ZeroMQ greeting, say, is closed at once */
    int fd = raw_connect(&s);
    static const unsigned char zmtp[] = {0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f};
    assert_int_equal(write(fd, zmtp, sizeof zmtp), (ssize_t)sizeof zmtp);
    assert_int_equal(raw_read(fd, buf, sizeof buf, &m, 5000), 0);
    close(fd);

    /* a malformed message: ERROR SL_EPROTO, and the connection goes on (PING answered) */
    fd = raw_connect(&s);
    assert_int_equal(write(fd, PROTO_STREAM_MAGIC, PROTO_STREAM_MAGIC_LEN), PROTO_STREAM_MAGIC_LEN);
    raw_send(fd, "\xc1junk", 5);
    assert_int_equal(raw_read(fd, buf, sizeof buf, &m, 5000), 1);
    assert_int_equal(m.type, PROTO_ERROR);
    assert_int_equal(m.code, SL_EPROTO);
    static const uint8_t ping[] = {0x82, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0xa3, 's', 'e', 'q', 7};
    raw_send(fd, ping, sizeof ping);
    assert_int_equal(raw_read(fd, buf, sizeof buf, &m, 5000), 1);
    assert_int_equal(m.type, PROTO_PONG);
    assert_int_equal(m.seq, 7);

    /* a message announced over the limit: ERROR SL_ETOOBIG, then the connection ends */
    unsigned char big[PROTO_STREAM_HDR];
    proto_stream_put_len(big, 0x7fffffffu);
    assert_int_equal(write(fd, big, sizeof big), (ssize_t)sizeof big);
    assert_int_equal(raw_read(fd, buf, sizeof buf, &m, 5000), 1);
    assert_int_equal(m.type, PROTO_ERROR);
    assert_int_equal(m.code, SL_ETOOBIG);
    assert_int_equal(raw_read(fd, buf, sizeof buf, &m, 5000), 0);
    close(fd);

    sl_client *c = sclient(&s, 5000); /* and the broker serves on */
    put(c, "still here");
    sl_close(&c);
    assert_int_equal(th_broker_stop(&s.b), 0);
    char log[16384];
    th_read_file(s.b.log, log, sizeof log);
    assert_non_null(strstr(log, "did not open with the stream greeting"));
    assert_non_null(strstr(log, "over this broker's limit"));
    th_broker_fini(&s.b);
}

static void the_client_says_what_is_wrong(void **state)
{
    (void)state;
    sl_client *c = NULL;
    assert_int_equal(sl_connect("stream+udp://127.0.0.1:1", NULL, &c), SL_EINVAL);
    assert_int_equal(sl_connect("stream+tcp://127.0.0.1", NULL, &c), SL_EINVAL); /* no port */
    assert_int_equal(sl_connect("stream+ipc://a|stream+ipc://b", NULL, &c), SL_EINVAL);
    char pub[SL_KEY_BYTES], sec[SL_KEY_BYTES];
    assert_int_equal(sl_keygen(pub, sec), SL_OK);
    sl_options keys = {.server_key = pub, .public_key = pub, .secret_key = sec};
    assert_int_equal(sl_connect("stream+ipc:///tmp/x.sock", &keys, &c), SL_EINVAL); /* no CURVE here */

    uint16_t port;
    int closed = th_loopback_socket(false, &port); /* bound, not listening: refuses */
    char ep[64];
    snprintf(ep, sizeof ep, "stream+tcp://127.0.0.1:%u", port);
    assert_int_equal(sl_connect(ep, NULL, &c), SL_OK); /* connecting waits for the first send */
    sl_put p = {.body = "x", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send(c, &p, NULL), SL_ECONNECT);
    assert_non_null(strstr(sl_last_error(c), "connection refused"));
    sl_close(&c);
    close(closed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(publish_and_consume_over_the_stream_in_fifo_order, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(what_was_confirmed_survives_kill_9, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_consumer_that_goes_has_its_leases_returned, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_subscribed_client_comes_back_after_a_restart, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(bad_input_gets_a_typed_answer_or_a_closed_connection, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_client_says_what_is_wrong, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
