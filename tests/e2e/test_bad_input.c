/*
 * test_bad_input.c - what the real sluiced refuses from its clients, and
 * goes on serving: garbage on the wire (raw ZeroMQ: text, lying lengths,
 * deep nesting, unknown and broker-only types, extra frames) gets a typed
 * error each and is counted once; times on the wire that would overflow are
 * refused with SL_EINVAL while the maximum works, the admin commands'
 * durations (level.set deadline_ms and aging_ms, pool.autoscale
 * target_wait_ms, dead.purge older_than_ms) too; str fields that are not
 * UTF-8 are refused by the decoder with SL_EPROTO, bodies stay bytes.
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
#include "sluice_admin.h"

/* put publishes body synchronously and returns its id, which is never 0. */
static uint64_t put(sl_client *c, int level, const char *body)
{
    uint64_t id = 0;
    sl_put m = {.body = body, .body_len = strlen(body), .level = level, .tag = NULL};
    int rc = sl_send(c, &m, &id);
    if (rc != SL_OK)
        fail_msg("sl_send: %s: %s", sl_errname(rc), sl_last_error(c));
    assert_true(id > 0);
    return id;
}

/* Raw ZeroMQ: garbage in, typed errors out, and the broker keeps serving. */
static int raw_roundtrip(void *sock, const void *frames[], const size_t lens[], int nframes, char *reply,
                         size_t reply_len)
{
    for (int i = 0; i < nframes; i++)
        zmq_send(sock, frames[i], lens[i], i + 1 < nframes ? ZMQ_SNDMORE : 0);
    zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
    for (int tries = 0; tries < 10; tries++) {
        if (zmq_poll(&it, 1, 2000) != 1)
            return -1;
        int n = zmq_recv(sock, reply, reply_len, 0);
        if (n < 0)
            return -1;
        /* skip the broker's heartbeat PINGs */
        if (n >= 8 && memmem(reply, (size_t)n, "PING", 4) && !memmem(reply, (size_t)n, "ERROR", 5))
            continue;
        return n;
    }
    return -1;
}

/* error_code extracts the "code" value of an ERROR reply (a positive fixint). */
static int error_code(const char *reply, int n)
{
    const char *p = memmem(reply, (size_t)n, "\xa4" "code", 5);
    if (!memmem(reply, (size_t)n, "ERROR", 5) || !p || p + 5 >= reply + n)
        return -1;
    return (uint8_t)p[5];
}

static void garbage_gets_typed_errors_and_broker_keeps_serving(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_connect(s, f->b.endpoint), 0);
    char reply[512];
    struct {
        const char *what;
        const char *bytes;
        size_t len;
        int code;
    } cases[] = {
        {"plain text", "hello broker", 12, SL_EPROTO},
        {"map32 claiming 4G pairs", "\xdf\xff\xff\xff\xff", 5, SL_EPROTO},
        {"bin32 claiming 2 GiB", "\x81\xa2op\xc6\x7f\xff\xff\xff", 9, SL_ETOOBIG},
        {"unknown op", "\x82\xa2op\xa4ZAP!\xa3seq\x07", 14, SL_EUNKNOWN},
        {"deep nesting", "\x81\xa2op\x91\x91\x91\x01", 8, SL_EPROTO},
        {"broker-only type", "\x83\xa2op\xa6PUT_OK\xa3seq\x01\xa2id\x01", 20, SL_EPROTO},
        {"empty frame", "", 0, SL_EPROTO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const void *fr[1] = {cases[i].bytes};
        size_t ln[1] = {cases[i].len};
        int n = raw_roundtrip(s, fr, ln, 1, reply, sizeof reply);
        if (n <= 0)
            fail_msg("%s: no reply", cases[i].what);
        if (error_code(reply, n) != cases[i].code)
            fail_msg("%s: expected code %d, got %d", cases[i].what, cases[i].code, error_code(reply, n));
    }
    /* two frames where one belongs */
    const void *fr2[2] = {"\x81\xa2op\xa4PING", "extra"};
    size_t ln2[2] = {9, 5};
    int n = raw_roundtrip(s, fr2, ln2, 2, reply, sizeof reply);
    assert_true(n > 0);
    assert_int_equal(error_code(reply, n), SL_EPROTO);
    /* a PING still gets its PONG */
    const void *fr3[1] = {"\x82\xa2op\xa4PING\xa3seq\x09"};
    size_t ln3[1] = {14};
    n = raw_roundtrip(s, fr3, ln3, 1, reply, sizeof reply);
    assert_true(n > 0 && memmem(reply, (size_t)n, "PONG", 4));
    zmq_close(s);
    zmq_ctx_term(ctx);
    /* and real work goes on */
    put(f->c, 0, "still serving");
    sl_put big = {.body = calloc(1, (1u << 20) + 1), .body_len = (1u << 20) + 1, .level = 0};
    assert_int_equal(sl_send(f->c, &big, NULL), SL_ETOOBIG);
    free((void *)big.body);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 1);
    /* each bad input counted once, the PING not; every reply was sent */
    assert_int_equal(st.rx_bad, sizeof cases / sizeof cases[0] + 1);
    assert_int_equal(st.tx_failed, 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A ttl_ms or delay_ms past the protocol's maximum is refused with
 * SL_EINVAL; nothing is stored. Before the bound, a ttl of 2^64-1 wrapped
 * and the message was confirmed and dead at once. The maximum itself is
 * accepted and the message is delivered as usual. */
static void huge_times_are_refused_and_the_maximum_works(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put m = {.body = "x", .body_len = 1, .level = 1, .ttl_ms = UINT64_MAX};
    assert_int_equal(sl_send(f->c, &m, NULL), SL_EINVAL);
    m.ttl_ms = PROTO_MAX_TIME_MS + 1;
    assert_int_equal(sl_send(f->c, &m, NULL), SL_EINVAL);
    m.ttl_ms = 0;
    m.delay_ms = UINT64_MAX;
    assert_int_equal(sl_send(f->c, &m, NULL), SL_EINVAL);
    m.delay_ms = UINT64_C(1) << 50;
    assert_int_equal(sl_send(f->c, &m, NULL), SL_EINVAL);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth + st.level[1].delayed + st.level[1].dead, 0);

    m.delay_ms = 0;
    m.ttl_ms = PROTO_MAX_TIME_MS;
    uint64_t id = 0;
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(f->c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].dead, 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* The admin commands' durations are bounded as a message's are: a deadline,
 * an aging step, an autoscale target wait or a purge's age past ten years is
 * refused with SL_EINVAL and changes nothing. Before, level.set deadline_ms
 * = 2^64-2 wrapped in nanoseconds and every message of the level was overdue
 * at once. The maximum itself is taken. */
static void huge_admin_times_are_refused(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_set(f->c, 2, 60000, 30000), SL_OK);
    assert_int_equal(sl_level_set(f->c, 2, UINT64_MAX - 1, SL_UNCHANGED), SL_EINVAL);
    assert_non_null(strstr(sl_last_error(f->c), "deadline_ms must be at most"));
    assert_int_equal(sl_level_set(f->c, 2, PROTO_MAX_TIME_MS + 1, SL_UNCHANGED), SL_EINVAL);
    assert_int_equal(sl_level_set(f->c, 2, SL_UNCHANGED, UINT64_C(1) << 60), SL_EINVAL);
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(f->c, lv, &n), SL_OK);
    assert_int_equal(lv[2].deadline_ms, 60000); /* nothing changed */
    assert_int_equal(lv[2].aging_ms, 30000);
    assert_int_equal(sl_level_set(f->c, 2, PROTO_MAX_TIME_MS, PROTO_MAX_TIME_MS), SL_OK);
    assert_int_equal(sl_pool_resize(f->c, "p", 4), SL_OK);
    assert_int_equal(sl_pool_autoscale(f->c, "p", 1, 4, UINT64_MAX - 1, 1), SL_EINVAL);
    uint64_t after = 0, purged = 0;
    assert_int_equal(sl_dead_purge(f->c, 1, UINT64_MAX - 1, 10, &after, &purged), SL_EINVAL);
    assert_int_equal(sl_dead_purge(f->c, 1, PROTO_MAX_TIME_MS, 10, &after, &purged), SL_OK);
    /* a message of that level is not overdue: it still waits behind a higher one */
    put(f->c, 2, "low");
    put(f->c, 0, "high");
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(f->c, 5000, &d), SL_OK);
    assert_int_equal(d->level, 0);
    sl_delivery_free(&d);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A str field that is not well-formed UTF-8 is refused by the decoder with
 * SL_EPROTO: before, a tag of arbitrary bytes was stored and sent on to
 * consumers as a msgpack str. A body stays bytes; UTF-8 tags pass through. */
static void str_fields_must_be_utf8(void **state)
{
    (void)state;
    static const char *const bad[] = {"a\x80" "b", "ab\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                      "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        proto_msg m, out;
        proto_wbuf buf = {0};
        proto_init(&m, PROTO_PUT);
        proto_set(&m, seq, 1);
        proto_set(&m, body, ((proto_buf){"\xff\xfe", 2})); /* a body is bytes */
        proto_set(&m, tag, ((proto_buf){bad[i], (uint32_t)strlen(bad[i])}));
        assert_int_equal(proto_encode(&m, &buf), SL_OK);
        const char *why = NULL;
        if (proto_decode(buf.data, buf.len, &out, &why) != SL_EPROTO)
            fail_msg("tag %zu decoded", i);
        assert_non_null(why);
        proto_wbuf_free(&buf);
    }

    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put m = {.body = "\xff", .body_len = 1, .level = 0, .tag = "a\x80" "b"};
    assert_int_equal(sl_send(f->c, &m, NULL), SL_EPROTO);
    m.tag = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6";
    uint64_t id = 0;
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(f->c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    assert_string_equal(d->tag, m.tag);
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(garbage_gets_typed_errors_and_broker_keeps_serving),
        cmocka_unit_test_setup_teardown(huge_times_are_refused_and_the_maximum_works, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(str_fields_must_be_utf8, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(huge_admin_times_are_refused, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("bad_input", tests, NULL, NULL);
}
