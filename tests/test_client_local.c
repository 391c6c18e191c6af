/*
 * test_client_local.c - the client library against a scripted peer, no broker.
 *
 * Each test binds a real ZeroMQ ROUTER socket on ipc:// in its own temporary
 * directory and, where it needs answers, serves it from a thread running a
 * small handler: the "fake broker" speaks the wire protocol through proto/,
 * so what is tested is the library's behaviour on the wire (timeouts, seq
 * matching, error mapping, confirmation order, reconnection), not a mock.
 *
 * The fake records what it received (scalars only, since strings point into
 * frames it frees). The test reads the record after fake_stop has joined the
 * thread, or through the atomic counter while it runs. Every test is bounded
 * by the client's timeouts and, as a backstop, by alarm(): a hung test kills
 * the run rather than stalling it. Nothing here is random.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "proto.h"
#include "sluice.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define TEST_ALARM_S 20
#define SEEN_MAX     32

typedef struct seen {
    proto_type type;
    uint64_t present, seq, token, credit, delay_ms, lease_ms;
    char pool[PROTO_MAX_NAME + 1];
    char body[64];
} seen;

typedef struct fake fake;
typedef void (*fake_fn)(fake *f, const proto_msg *m);

struct fake {
    char dir[64];
    char endpoint[128];
    void *ctx, *router;
    pthread_t thread;
    bool running;
    atomic_int stop;
    fake_fn on_msg;
    unsigned char peer[256];
    size_t peer_len;
    uint64_t held_seq; /* for handlers that answer late */
    uint64_t puts;
    atomic_int nseen;
    seen seen[SEEN_MAX];
};

/* ---- the fake broker ---- */

static void router_open(fake *f)
{
    int linger_ms = 0;
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    assert_non_null(f->router);
    assert_int_equal(zmq_setsockopt(f->router, ZMQ_LINGER, &linger_ms, sizeof linger_ms), 0);
    assert_int_equal(zmq_bind(f->router, f->endpoint), 0);
}

static void fake_send(fake *f, const proto_msg *m)
{
    proto_wbuf b = {0};
    assert_int_equal(proto_encode(m, &b), SL_OK);
    zmq_send(f->router, f->peer, f->peer_len, ZMQ_SNDMORE);
    zmq_send(f->router, b.data, b.len, 0);
    proto_wbuf_free(&b);
}

static void record(fake *f, const proto_msg *m)
{
    int n = atomic_load(&f->nseen);
    if (n >= SEEN_MAX)
        return;
    seen *s = &f->seen[n];
    *s = (seen){.type = m->type, .present = m->present, .seq = m->seq, .token = m->token,
                .credit = m->credit, .delay_ms = m->delay_ms, .lease_ms = m->lease_ms};
    if (proto_has(m, PROTO_F_pool))
        memcpy(s->pool, m->pool.ptr, m->pool.len);
    if (proto_has(m, PROTO_F_body) && m->body.len < sizeof s->body && m->body.len)
        memcpy(s->body, m->body.ptr, m->body.len);
    atomic_store(&f->nseen, n + 1);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t item = {.socket = f->router, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, 20) <= 0)
            continue;
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, f->router, 0) >= 0 && zmq_msg_more(&id) &&
            zmq_msg_recv(&body, f->router, 0) >= 0 && zmq_msg_size(&id) <= sizeof f->peer) {
            proto_msg m;
            f->peer_len = zmq_msg_size(&id);
            memcpy(f->peer, zmq_msg_data(&id), f->peer_len);
            if (proto_decode(zmq_msg_data(&body), zmq_msg_size(&body), &m, NULL) == SL_OK) {
                record(f, &m);
                if (f->on_msg)
                    f->on_msg(f, &m);
            }
        }
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
    return NULL;
}

static void fake_start(fake *f, fake_fn on_msg)
{
    f->on_msg = on_msg;
    atomic_store(&f->stop, 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
    f->running = true;
}

static void fake_stop(fake *f)
{
    if (!f->running)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    f->running = false;
}

static void reply_error(fake *f, uint64_t seq, uint64_t code, const char *text)
{
    proto_msg r;
    proto_init(&r, PROTO_ERROR);
    proto_set(&r, seq, seq);
    proto_set(&r, code, code);
    proto_set_str(&r, PROTO_F_msg, text, strlen(text));
    fake_send(f, &r);
}

static void reply_seq(fake *f, proto_type type, uint64_t seq)
{
    proto_msg r;
    proto_init(&r, type);
    proto_set(&r, seq, seq);
    if (type == PROTO_PUT_OK)
        proto_set(&r, id, 100 + f->puts);
    fake_send(f, &r);
}

static void reply_welcome(fake *f, uint64_t seq)
{
    static const char *const names[] = {"high", "normal", "low"};
    proto_msg r;
    proto_init(&r, PROTO_WELCOME);
    proto_set(&r, seq, seq);
    proto_set(&r, v, PROTO_VERSION);
    r.names.n = 3;
    for (unsigned i = 0; i < 3; i++)
        r.names.v[i] = (proto_buf){names[i], (uint32_t)strlen(names[i])};
    r.present |= PF(names);
    proto_set(&r, heartbeat_ms, 1000);
    proto_set(&r, lease_ms, 30000);
    proto_set(&r, max_body, 1024);
    fake_send(f, &r);
}

static void send_deliver(fake *f, uint64_t id, uint64_t token, const char *body, const char *tag)
{
    proto_msg r;
    proto_init(&r, PROTO_DELIVER);
    proto_set(&r, id, id);
    proto_set(&r, token, token);
    proto_set(&r, level, 1);
    proto_set(&r, attempt, 2);
    proto_set(&r, lease_ms, 5000);
    proto_set_str(&r, PROTO_F_body, body, strlen(body));
    if (tag)
        proto_set_str(&r, PROTO_F_tag, tag, strlen(tag));
    fake_send(f, &r);
}

/* ---- fixtures ---- */

static int setup(void **state)
{
    fake *f = calloc(1, sizeof *f);
    assert_non_null(f);
    alarm(TEST_ALARM_S);
    strcpy(f->dir, "/tmp/sluice-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->endpoint, sizeof f->endpoint, "ipc://%s/s.sock", f->dir);
    f->ctx = zmq_ctx_new();
    assert_non_null(f->ctx);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fake *f = *state;
    char path[160];
    fake_stop(f);
    if (f->router)
        zmq_close(f->router);
    zmq_ctx_term(f->ctx);
    snprintf(path, sizeof path, "%s/s.sock", f->dir);
    unlink(path);
    rmdir(f->dir);
    free(f);
    alarm(0);
    return 0;
}

static sl_client *client_open(const fake *f, int timeout_ms)
{
    sl_options o = {.timeout_ms = timeout_ms};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(f->endpoint, &o, &c), SL_OK);
    assert_non_null(c);
    return c;
}

static double elapsed_s(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- handlers ---- */

static void answer_everything(fake *f, const proto_msg *m)
{
    switch (m->type) {
    case PROTO_HELLO:
        reply_welcome(f, m->seq);
        break;
    case PROTO_PUT:
        if (m->body.len == 4 && memcmp(m->body.ptr, "fail", 4) == 0)
            reply_error(f, m->seq, SL_EFULL, "level is full");
        else
            reply_seq(f, PROTO_PUT_OK, m->seq);
        f->puts++;
        break;
    case PROTO_ACK:
    case PROTO_NACK:
    case PROTO_TOUCH:
        reply_seq(f, PROTO_OK, m->seq);
        break;
    default:
        break;
    }
}

static void answer_stale(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_ACK)
        reply_error(f, m->seq, SL_ESTALE, "x");
}

/* The first request goes unanswered; the second gets, in this order, a late
 * error for the first, a reply for a seq never used, then its own reply. */
static void answer_late(fake *f, const proto_msg *m)
{
    if (!f->held_seq) {
        f->held_seq = m->seq;
        return;
    }
    reply_error(f, f->held_seq, SL_ESTALE, "late");
    reply_seq(f, PROTO_OK, m->seq + 1000);
    reply_seq(f, PROTO_OK, m->seq);
}

static void answer_subscriber(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        proto_msg ping;
        reply_welcome(f, m->seq);
        proto_init(&ping, PROTO_PING);
        proto_set(&ping, seq, 5);
        fake_send(f, &ping);
        send_deliver(f, 7, 70, "hello", "t");
        return;
    }
    answer_everything(f, m);
}

static int seen_find(const fake *f, proto_type type, int from)
{
    for (int i = from; i < atomic_load(&f->nseen); i++)
        if (f->seen[i].type == type)
            return i;
    return -1;
}

/* ---- tests ---- */

static void test_send_times_out_against_silent_router(void **state)
{
    fake *f = *state;
    router_open(f); /* bound, never read */
    sl_client *c = client_open(f, 200);
    sl_put p = {.body = "b", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    uint64_t id = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(sl_send(c, &p, &id), SL_ETIMEDOUT);
    double s = elapsed_s(&t0);
    assert_true(s >= 0.19);
    assert_true(s < 2.0);
    assert_string_equal(sl_last_error(c), sl_strerror(SL_ETIMEDOUT));
    sl_close(&c);
    assert_null(c);
}

static void test_error_reply_maps_code_and_text(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_stale);
    sl_client *c = client_open(f, 2000);
    sl_delivery d = {.token = 42, .tag = "", .body = ""};
    assert_int_equal(sl_ack(c, &d), SL_ESTALE);
    assert_string_equal(sl_last_error(c), "x");
    assert_string_equal(sl_errname(SL_ESTALE), "SL_ESTALE");
    sl_close(&c);
    fake_stop(f);
    int i = seen_find(f, PROTO_ACK, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 42);
    /* a client that is not subscribed must not grant itself credit */
    assert_false(f->seen[i].present & PF(credit));
}

static void test_stray_reply_with_old_seq_is_ignored(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_late);
    sl_client *c = client_open(f, 300);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_ETIMEDOUT);
    sl_delivery d = {.token = 1, .tag = "", .body = ""};
    assert_int_equal(sl_ack(c, &d), SL_OK);
    sl_close(&c);
}

static void test_async_confirmations_keep_tickets_in_order(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_everything);
    sl_client *c = client_open(f, 2000);
    const char *bodies[] = {"a", "fail", "b"};
    for (uint64_t i = 0; i < 3; i++) {
        sl_put p = {.body = bodies[i], .body_len = strlen(bodies[i]), .level = 2, .tag = "t"};
        uint64_t ticket = 0;
        assert_int_equal(sl_send_async(c, &p, &ticket), SL_OK);
        assert_int_equal(ticket, i + 1);
    }
    assert_int_equal(sl_send_pending(c), 3);

    /* a synchronous publish meanwhile keeps the confirmations it sees */
    sl_put p = {.body = "c", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    uint64_t id = 0;
    assert_int_equal(sl_send(c, &p, &id), SL_OK);
    assert_int_equal(id, 103);
    assert_int_equal(sl_send_pending(c), 3);

    sl_confirm k;
    assert_int_equal(sl_send_wait(c, 1000, &k), SL_OK);
    assert_int_equal(k.ticket, 1);
    assert_int_equal(k.err, SL_OK);
    assert_int_equal(k.id, 100);
    assert_int_equal(sl_send_wait(c, 1000, &k), SL_OK);
    assert_int_equal(k.ticket, 2);
    assert_int_equal(k.err, SL_EFULL);
    assert_string_equal(sl_last_error(c), "level is full");
    assert_int_equal(sl_send_wait(c, 0, &k), SL_OK);
    assert_int_equal(k.ticket, 3);
    assert_int_equal(k.id, 102);
    assert_int_equal(sl_send_pending(c), 0);
    assert_int_equal(sl_send_wait(c, 0, &k), SL_ESTATE);

    /* tickets keep counting after a synchronous publish */
    uint64_t ticket = 0;
    assert_int_equal(sl_send_async(c, &p, &ticket), SL_OK);
    assert_int_equal(ticket, 4);
    assert_int_equal(sl_send_wait(c, 1000, &k), SL_OK);
    assert_int_equal(k.ticket, 4);
    sl_close(&c);

    fake_stop(f);
    int i = seen_find(f, PROTO_PUT, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].present & (PF(level) | PF(tag)), PF(level) | PF(tag));
    i = seen_find(f, PROTO_PUT, i + 1);
    i = seen_find(f, PROTO_PUT, i + 1);
    i = seen_find(f, PROTO_PUT, i + 1);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].body, "c");
    assert_false(f->seen[i].present & (PF(level) | PF(tag))); /* default level, no tag */
}

static void test_argument_validation(void **state)
{
    fake *f = *state; /* nothing listens: every check here is local */
    sl_client *c = NULL;
    assert_int_equal(sl_connect(f->endpoint, NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_connect("nonsense", NULL, &c), SL_EINVAL);
    assert_null(c);
    sl_options bad = {.timeout_ms = -5};
    assert_int_equal(sl_connect(f->endpoint, &bad, &c), SL_EINVAL);
    c = client_open(f, 200);

    sl_put p = {.body = NULL, .body_len = 3, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send(c, &p, NULL), SL_EINVAL);
    assert_string_equal(sl_last_error(c), sl_strerror(SL_EINVAL));
    assert_int_equal(sl_send_async(c, &p, NULL), SL_EINVAL);
    assert_int_equal(sl_send(c, NULL, NULL), SL_EINVAL);

    char tag[257];
    memset(tag, 'x', 256);
    tag[256] = '\0';
    p = (sl_put){.body = "b", .body_len = 1, .level = SL_LEVEL_DEFAULT, .tag = tag};
    assert_int_equal(sl_send(c, &p, NULL), SL_ETOOBIG);
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ETOOBIG);
    p.tag = NULL;
    p.body_len = PROTO_MAX_BODY + 1;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ETOOBIG);
    p.body_len = 1;
    p.level = SL_MAX_LEVELS;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ENOLEVEL);
    p.level = -2;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ENOLEVEL);
    assert_int_equal(sl_send_pending(c), 0);

    sl_confirm k;
    sl_delivery *d = NULL;
    assert_int_equal(sl_send_wait(c, 0, &k), SL_ESTATE);
    assert_int_equal(sl_recv(c, 0, &d), SL_ESTATE);
    assert_null(d);
    assert_int_equal(sl_ack(c, NULL), SL_EINVAL);
    char pool[PROTO_MAX_NAME + 2];
    memset(pool, 'p', sizeof pool - 1);
    pool[sizeof pool - 1] = '\0';
    assert_int_equal(sl_subscribe(c, pool, NULL, 0, 1), SL_EINVAL);
    assert_int_equal(sl_subscribe(c, "", NULL, 0, 1), SL_EINVAL);
    unsigned levels[SL_MAX_LEVELS + 1] = {0};
    assert_int_equal(sl_subscribe(c, NULL, levels, SL_MAX_LEVELS + 1, 1), SL_EINVAL);

    assert_int_equal(sl_send(NULL, &p, NULL), SL_EINVAL);
    assert_int_equal(sl_send_pending(NULL), 0);
    sl_close(&c);
    sl_close(&c);
    sl_close(NULL);
    sl_delivery_free(NULL);
    sl_delivery_free(&d);
}

static void test_level_parse_names_and_numbers(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_everything);
    sl_client *c = client_open(f, 2000);
    unsigned n = 0, level = 99;
    const char *const *names = NULL;
    assert_int_equal(sl_levels(c, &n, &names), SL_OK);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "high");
    assert_string_equal(names[2], "low");

    assert_int_equal(sl_level_parse(c, "high", &level), SL_OK);
    assert_int_equal(level, 0);
    assert_int_equal(sl_level_parse(c, "low", &level), SL_OK);
    assert_int_equal(level, 2);
    assert_int_equal(sl_level_parse(c, "1", &level), SL_OK);
    assert_int_equal(level, 1);
    const char *bad[] = {"3", "High", "", "-1", " 1", "1x", "+1", "99999999999999999999", "norma"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        level = 99;
        assert_int_equal(sl_level_parse(c, bad[i], &level), SL_ENOLEVEL);
        assert_int_equal(level, 99);
    }
    assert_int_equal(sl_level_parse(c, NULL, &level), SL_EINVAL);

    /* the WELCOME's max_body (1024) now bounds bodies, checked locally */
    static char big[1025];
    sl_put p = {.body = big, .body_len = sizeof big, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ETOOBIG);
    p.level = 3;
    p.body_len = 1;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ENOLEVEL);
    sl_close(&c);

    fake_stop(f);
    /* asked once, then cached */
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_int_equal(seen_find(f, PROTO_HELLO, i + 1), -1);
    assert_false(f->seen[i].present & (PF(pool) | PF(levels) | PF(credit)));
}

static void test_subscribe_receive_ack(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_subscriber);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_subscribe(c, "workers", NULL, 0, 4), SL_OK);
    assert_int_equal(sl_subscribe(c, "workers", NULL, 0, 4), SL_ESTATE);

    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    assert_non_null(d);
    assert_int_equal(d->id, 7);
    assert_int_equal(d->token, 70);
    assert_int_equal(d->level, 1);
    assert_int_equal(d->attempt, 2);
    assert_int_equal(d->lease_ms, 5000);
    assert_int_equal(d->body_len, 5);
    assert_string_equal((const char *)d->body, "hello"); /* NUL-terminated */
    assert_string_equal(d->tag, "t");
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_touch(c, d, 9000), SL_OK);
    assert_int_equal(sl_nack(c, d, 250), SL_OK);
    sl_delivery_free(&d);
    assert_null(d);
    assert_int_equal(sl_recv(c, 0, &d), SL_ETIMEDOUT);
    sl_close(&c);

    fake_stop(f);
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].pool, "workers");
    assert_int_equal(f->seen[i].credit, 4);
    int pong = seen_find(f, PROTO_PONG, 0);
    assert_true(pong >= 0);
    assert_int_equal(f->seen[pong].seq, 5);
    i = seen_find(f, PROTO_ACK, 0);
    assert_true(i > pong);
    assert_int_equal(f->seen[i].token, 70);
    assert_int_equal(f->seen[i].credit, 1);
    i = seen_find(f, PROTO_TOUCH, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].lease_ms, 9000);
    assert_false(f->seen[i].present & PF(credit));
    i = seen_find(f, PROTO_NACK, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].delay_ms, 250);
    assert_int_equal(f->seen[i].credit, 1);
}

static void test_resubscribes_after_reconnect(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_subscriber);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_subscribe(c, "p", NULL, 0, 3), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK); /* held: its ack owes a credit */

    /* the broker goes away and comes back on the same endpoint */
    fake_stop(f);
    zmq_close(f->router);
    f->router = NULL;
    atomic_store(&f->nseen, 0);
    router_open(f);
    fake_start(f, NULL);

    sl_delivery *none = NULL;
    for (int i = 0; i < 50 && seen_find(f, PROTO_HELLO, 0) < 0; i++)
        assert_int_equal(sl_recv(c, 100, &none), SL_ETIMEDOUT);
    fake_stop(f);
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].pool, "p");
    assert_int_equal(f->seen[i].credit, 2);
    sl_delivery_free(&d);
    sl_close(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_send_times_out_against_silent_router, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_reply_maps_code_and_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stray_reply_with_old_seq_is_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_confirmations_keep_tickets_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_argument_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_parse_names_and_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribe_receive_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resubscribes_after_reconnect, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
