/*
 * test_headers.c - a message's headers against the real sluiced, through
 * the C client: they come back byte for byte and in their order on every
 * delivery (at once, after a broker restart, after a delay, after a NACK,
 * and from the dead letters after a TTL ran out and a requeue), with the
 * message's idempotency key and its wait in the queue; explain and
 * dead.peek show them. Every rule of proto_hdrs.h is refused with its typed
 * code, by the client library before sending and by the broker's decoder
 * for a PUT made by hand (raw ZeroMQ), which then goes on serving. A store
 * of the format before headers (made with sfix_as_format3) opens and its
 * messages are delivered with none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "harness.h"
#include "sluice.h"
#include "store_fixture.h"

#define TP "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

/* The headers every round trip carries: mixed case, an empty value, a tab
 * inside a value, UTF-8, and the trace context pair. */
static const sl_header HDRS[] = {
    {"traceparent", TP},
    {"tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"},
    {"X-Empty", ""},
    {"content-type", "application/json; charset=utf-8"},
    {"X-Tab", "a\tb"},
    {"X-Text", "na\xc3\xafve caf\xc3\xa9 \xe2\x9c\x93"},
};
#define NHDRS (sizeof HDRS / sizeof HDRS[0])

/* same_headers asserts that got[0..n) is HDRS, byte for byte, in order. */
static void same_headers(const sl_header *got, size_t n)
{
    assert_int_equal(n, NHDRS);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(got[i].name, HDRS[i].name);
        assert_string_equal(got[i].value, HDRS[i].value);
    }
}

static uint64_t put(sl_client *c, const char *body, const char *key, uint64_t delay_ms, uint64_t ttl_ms)
{
    uint64_t id = 0;
    sl_put p = {.body = body, .body_len = strlen(body), .level = 1, .tag = "t1", .key = key,
                .delay_ms = delay_ms, .ttl_ms = ttl_ms};
    assert_int_equal(sl_send_ex(c, &p, HDRS, NHDRS, &id), SL_OK);
    return id;
}

/* take receives the next delivery (5 s at most) and checks it is id. */
static sl_delivery *take(sl_client *c, uint64_t id)
{
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    same_headers(d->headers, d->nheaders);
    return d;
}

static void ack(sl_client *c, sl_delivery **d)
{
    assert_int_equal(sl_ack(c, *d), SL_OK);
    sl_delivery_free(d);
}

static void headers_round_trip_byte_exact(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), 0);

    /* explain of a waiting message: its headers and its wait so far */
    uint64_t a = put(f->c, "first", "order-7", 0, 0);
    sl_explain_info e;
    sl_msg_more more = {.size = sizeof more};
    usleep(30 * 1000);
    assert_int_equal(sl_explain_ex(f->c, a, &e, &more), SL_OK);
    assert_string_equal(e.state, "ready");
    same_headers(more.headers, more.nheaders);
    assert_true(more.wait_ms >= 20 && more.wait_ms < 60000);

    /* through a restart of the broker */
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = take(f->c, a);
    assert_string_equal(d->key, "order-7");
    assert_int_equal(d->attempt, 1);
    assert_true(d->wait_ms >= 20);
    assert_string_equal(sl_delivery_header(d, "TRACEPARENT"), TP);
    assert_null(sl_delivery_header(d, "missing"));
    /* leased: explain tells its wait before this delivery */
    assert_int_equal(sl_explain_ex(f->c, a, &e, &more), SL_OK);
    assert_string_equal(e.state, "leased");
    same_headers(more.headers, more.nheaders);
    assert_int_equal(more.wait_ms, d->wait_ms);

    /* a NACK: the next delivery carries them again */
    assert_int_equal(sl_nack(f->c, d, 0), SL_OK);
    sl_delivery_free(&d);
    d = take(f->c, a);
    assert_int_equal(d->attempt, 2);
    assert_string_equal(d->key, "order-7");
    ack(f->c, &d);

    /* after a delay */
    uint64_t b = put(f->c, "later", NULL, 300, 0);
    uint64_t t0 = th_now_ms();
    d = take(f->c, b);
    assert_true(th_now_ms() - t0 >= 250);
    assert_true(d->wait_ms >= 250); /* its wait counts from the publish */
    assert_string_equal(d->key, "");
    ack(f->c, &d);
    sl_close(&f->c);

    /* a time to live that runs out: a dead letter, with its headers */
    f->c = th_client(&f->b, 5000);
    uint64_t c = put(f->c, "doomed", "order-9", 0, 200);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(sl_explain_ex(f->c, c, &e, &more), SL_OK);
        if (strcmp(e.state, "dead") == 0)
            break;
        usleep(100 * 1000);
    }
    assert_string_equal(e.state, "dead");
    same_headers(more.headers, more.nheaders);
    sl_dead_message m;
    sl_msg_more dm = {.size = sizeof dm};
    assert_int_equal(sl_dead_peek_ex(f->c, c, &m, &dm), SL_OK);
    assert_int_equal(m.body_len, 6);
    same_headers(dm.headers, dm.nheaders);
    /* a caller's struct of an older, smaller size gets only what fits */
    sl_msg_more small = {.size = sizeof(size_t), .nheaders = 99};
    assert_int_equal(sl_dead_peek_ex(f->c, c, &m, &small), SL_OK);
    assert_int_equal(small.nheaders, 99);
    /* requeued, delivered with them */
    assert_int_equal(sl_dead_requeue_id(f->c, c, SL_SAME_LEVEL), SL_OK);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    d = take(f->c, c);
    assert_string_equal(d->key, "order-9");
    ack(f->c, &d);
    assert_int_equal(sl_flush(f->c, 5000), SL_OK);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* expect_refused sends one message with headers h[0..n) and checks the
 * library refuses it with code, naming the rule. */
static void expect_refused(sl_client *c, const sl_header *h, size_t n, int code, const char *words)
{
    sl_put p = {.body = "x", .body_len = 1, .level = 1};
    assert_int_equal(sl_send_ex(c, &p, h, n, NULL), code);
    const char *why = sl_last_error(c);
    print_message("refused: %s\n", why);
    assert_non_null(strstr(why, "headers: "));
    assert_non_null(strstr(why, words));
}

/* ---- hand-made msgpack: a PUT whose headers the library would refuse ---- */

typedef struct mp {
    unsigned char b[20000];
    size_t n;
} mp;

static void mp_str(mp *m, const char *s, size_t len)
{
    if (len < 32) {
        m->b[m->n++] = (unsigned char)(0xa0 | len);
    } else if (len < 256) {
        m->b[m->n++] = 0xd9;
        m->b[m->n++] = (unsigned char)len;
    } else {
        m->b[m->n++] = 0xda;
        m->b[m->n++] = (unsigned char)(len >> 8);
        m->b[m->n++] = (unsigned char)len;
    }
    memcpy(m->b + m->n, s, len);
    m->n += len;
}

/* mp_put makes {op: PUT, seq: 1, body: "x", headers: {names[i]: values[i]}}. */
static void mp_put(mp *m, const char *const *names, const char *const *values, size_t n)
{
    m->n = 0;
    m->b[m->n++] = 0x84;
    mp_str(m, "op", 2);
    mp_str(m, "PUT", 3);
    mp_str(m, "seq", 3);
    m->b[m->n++] = 0x01;
    mp_str(m, "body", 4);
    mp_str(m, "x", 1);
    mp_str(m, "headers", 7);
    m->b[m->n++] = 0xde;
    m->b[m->n++] = (unsigned char)(n >> 8);
    m->b[m->n++] = (unsigned char)n;
    for (size_t i = 0; i < n; i++) {
        mp_str(m, names[i], strlen(names[i]));
        mp_str(m, values[i], strlen(values[i]));
    }
}

/* raw_code sends m on sock and returns the code of the broker's ERROR, 0
 * for a PUT_OK, -1 for no answer. */
static int raw_code(void *sock, const mp *m)
{
    char reply[4096];
    zmq_send(sock, m->b, m->n, 0);
    zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
    for (int tries = 0; tries < 10; tries++) {
        if (zmq_poll(&it, 1, 5000) != 1)
            return -1;
        int n = zmq_recv(sock, reply, sizeof reply, 0);
        if (n < 0)
            return -1;
        proto_msg r;
        if (proto_decode(reply, (size_t)(n < (int)sizeof reply ? n : (int)sizeof reply), &r, NULL) != SL_OK)
            continue;
        if (r.type == PROTO_PUT_OK)
            return 0;
        if (r.type == PROTO_ERROR) {
            print_message("broker: %.*s\n", (int)r.msg.len, r.msg.ptr);
            return (int)r.code;
        }
    }
    return -1;
}

static void limits_are_refused_typed(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    static char big[1100], name65[70], names[40][16], values[10][1001];
    memset(big, 'v', 1025);
    memset(name65, 'n', 65);
    sl_header h[40];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "h%d", i);
        h[i] = (sl_header){names[i], "v"};
    }
    /* the library, before sending */
    expect_refused(f->c, h, 33, SL_ETOOBIG, "more than 32");
    expect_refused(f->c, (sl_header[]){{"", "v"}}, 1, SL_EINVAL, "empty");
    expect_refused(f->c, (sl_header[]){{name65, "v"}}, 1, SL_ETOOBIG, "longer than 64");
    expect_refused(f->c, (sl_header[]){{"bad name", "v"}}, 1, SL_EINVAL, "token");
    expect_refused(f->c, (sl_header[]){{"a", big}}, 1, SL_ETOOBIG, "longer than 1024");
    expect_refused(f->c, (sl_header[]){{"a", "line\r\nX-Evil: 1"}}, 1, SL_EINVAL, "control character");
    expect_refused(f->c, (sl_header[]){{"a", " padded"}}, 1, SL_EINVAL, "space or tab");
    expect_refused(f->c, (sl_header[]){{"a", "\xc3("}}, 1, SL_EINVAL, "UTF-8");
    expect_refused(f->c, (sl_header[]){{"X-A", "1"}, {"x-a", "2"}}, 2, SL_EINVAL, "twice");
    expect_refused(f->c, (sl_header[]){{"Connection", "close"}}, 1, SL_EINVAL, "hop-by-hop");
    expect_refused(f->c, (sl_header[]){{"proxy-authorization", "x"}}, 1, SL_EINVAL, "hop-by-hop");
    expect_refused(f->c, (sl_header[]){{"Idempotency-Key", "x"}}, 1, SL_EINVAL, "reserved");
    expect_refused(f->c, (sl_header[]){{"x-sluice-id", "7"}}, 1, SL_EINVAL, "reserved");
    sl_header many[10];
    for (int i = 0; i < 9; i++) {
        memset(values[i], 'a' + i, 1000);
        many[i] = (sl_header){names[i], values[i]};
    }
    expect_refused(f->c, many, 9, SL_ETOOBIG, "8192");
    /* at the limits: accepted */
    static char name64[65], v1024[1025];
    memset(name64, 'n', 64);
    memset(v1024, 'w', 1024);
    sl_put p = {.body = "x", .body_len = 1, .level = 1};
    assert_int_equal(sl_send_ex(f->c, &p, h, 32, NULL), SL_OK);
    assert_int_equal(sl_send_ex(f->c, &p, (sl_header[]){{name64, v1024}}, 1, NULL), SL_OK);
    assert_int_equal(sl_send_ex(f->c, &p, many, 8, NULL), SL_OK);

    /* the broker, for a PUT the library would not send */
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_connect(s, f->b.endpoint), 0);
    mp m;
    const char *nm[40], *vl[40];
    for (int i = 0; i < 40; i++)
        nm[i] = names[i], vl[i] = "v";
    mp_put(&m, nm, vl, 33);
    assert_int_equal(raw_code(s, &m), SL_ETOOBIG);
    mp_put(&m, (const char *[]){"Connection"}, (const char *[]){"close"}, 1);
    assert_int_equal(raw_code(s, &m), SL_EINVAL);
    mp_put(&m, (const char *[]){"X-Sluice-Attempt"}, (const char *[]){"1"}, 1);
    assert_int_equal(raw_code(s, &m), SL_EINVAL);
    mp_put(&m, (const char *[]){"a", "A"}, (const char *[]){"1", "2"}, 2);
    assert_int_equal(raw_code(s, &m), SL_EINVAL);
    mp_put(&m, (const char *[]){"a"}, (const char *[]){"x\ny"}, 1);
    assert_int_equal(raw_code(s, &m), SL_EINVAL);
    mp_put(&m, (const char *[]){name65}, (const char *[]){"v"}, 1);
    assert_int_equal(raw_code(s, &m), SL_ETOOBIG);
    mp_put(&m, (const char *[]){"a"}, (const char *[]){big}, 1);
    assert_int_equal(raw_code(s, &m), SL_ETOOBIG);
    const char *mv[9];
    for (int i = 0; i < 9; i++)
        mv[i] = values[i];
    mp_put(&m, nm, mv, 9);
    assert_int_equal(raw_code(s, &m), SL_ETOOBIG);
    mp_put(&m, (const char *[]){"traceparent"}, (const char *[]){TP}, 1); /* and it goes on serving */
    assert_int_equal(raw_code(s, &m), 0);
    zmq_close(s);
    zmq_ctx_term(ctx);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, 4);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A data directory a broker of the format before headers wrote opens; its
 * messages are delivered with no headers and no key, beside new ones with. */
static void an_older_store_delivers_without_headers(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t ids[3];
    for (int i = 0; i < 3; i++) {
        sl_put p = {.body = "old", .body_len = 3, .level = 1};
        assert_int_equal(sl_send(f->c, &p, &ids[i]), SL_OK);
    }
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(sfix_as_format3(f->b.data), 3);
    assert_int_equal(th_broker_start(&f->b), 0);
    char log[8192];
    th_read_file(f->b.log, log, sizeof log);
    assert_non_null(strstr(log, "store format 3 becomes 4"));
    f->c = th_client(&f->b, 5000);
    uint64_t fresh = put(f->c, "new", "k-new", 0, 0);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    for (int i = 0; i < 3; i++) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(f->c, 5000, &d), SL_OK);
        assert_int_equal(d->id, ids[i]);
        assert_int_equal(d->nheaders, 0);
        assert_null(d->headers);
        assert_string_equal(d->key, "");
        assert_int_equal(d->body_len, 3);
        ack(f->c, &d);
    }
    sl_delivery *d = take(f->c, fresh);
    assert_string_equal(d->key, "k-new");
    ack(f->c, &d);
    assert_int_equal(sl_flush(f->c, 5000), SL_OK);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    th_timeout_s = 90;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(headers_round_trip_byte_exact, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(limits_are_refused_typed, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(an_older_store_delivers_without_headers, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("headers", tests, NULL, NULL);
}
