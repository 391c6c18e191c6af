/*
 * test_client_local.c - the client library's core calls against a scripted
 * peer, no broker: publishing (timeouts, seq matching, error mapping,
 * confirmation order), argument checks, levels, subscribing, acknowledging,
 * reconnection and credit windows.
 *
 * Each test binds a real ZeroMQ ROUTER socket on ipc:// in its own temporary
 * directory and, where it needs answers, serves it from a thread running a
 * small handler: the fake broker (th_fake, in tests/lib/th_fake.c) speaks the wire
 * protocol through proto/, so what is tested is the library's behaviour on
 * the wire, not a mock. The administration and metering calls are tested
 * the same way in test_client_admin.c.
 *
 * The fake records what it received (scalars only, since strings point into
 * frames it frees). The test reads the record after th_fake_stop has joined
 * the thread, or through the atomic counter while it runs. Every test is
 * bounded by the client's timeouts and, as a backstop, by alarm(): a hung
 * test kills the run rather than stalling it. Nothing here is random.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"
#include "proto.h"
#include "sluice.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TEST_ALARM_S 20

/* ---- helpers ---- */

static double elapsed_s(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- handlers ---- */

static void answer_everything(th_fake *f, const proto_msg *m)
{
    switch (m->type) {
    case PROTO_HELLO:
        th_fake_welcome(f, m->seq, 3);
        break;
    case PROTO_PUT:
        if (m->body.len == 4 && memcmp(m->body.ptr, "fail", 4) == 0)
            th_fake_error(f, m->seq, SL_EFULL, "level is full");
        else
            th_fake_reply(f, PROTO_PUT_OK, m->seq);
        f->puts++;
        break;
    case PROTO_ACK:
    case PROTO_NACK:
    case PROTO_TOUCH:
        th_fake_reply(f, PROTO_OK, m->seq);
        break;
    default:
        break;
    }
}

static void answer_stale(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_ACK)
        th_fake_error(f, m->seq, SL_ESTALE, "x");
}

/* The first request goes unanswered; the second gets, in this order, a late
 * error for the first, a reply for a seq never used, then its own reply. */
static void answer_late(th_fake *f, const proto_msg *m)
{
    if (!f->held_seq) {
        f->held_seq = m->seq;
        return;
    }
    th_fake_error(f, f->held_seq, SL_ESTALE, "late");
    th_fake_reply(f, PROTO_OK, m->seq + 1000);
    th_fake_reply(f, PROTO_OK, m->seq);
}

static void answer_subscriber(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        proto_msg ping;
        th_fake_welcome(f, m->seq, 3);
        proto_init(&ping, PROTO_PING);
        proto_set(&ping, seq, 5);
        th_fake_send(f, &ping);
        th_fake_deliver(f, 7, 70, "hello", "t", 0);
        return;
    }
    answer_everything(f, m);
}

/* answer_window delivers four messages when a consumer says HELLO, and
 * answers ACKs and ADMIN requests (a way to wait until everything sent
 * before has arrived). */
static void answer_window(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        th_fake_welcome(f, m->seq, 3);
        for (uint64_t i = 1; i <= 4; i++)
            th_fake_deliver(f, i, 10 + i, "w", NULL, 0);
    } else if (m->type == PROTO_ACK || m->type == PROTO_ADMIN) {
        th_fake_reply(f, m->type == PROTO_ACK ? PROTO_OK : PROTO_ADMIN_OK, m->seq);
    }
}

/* answer_credit plays a broker that delivers exactly as many messages as it
 * is granted credit, in HELLO and in ACKs, and answers every ACK. */
static void answer_credit(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO)
        th_fake_welcome(f, m->seq, 3);
    else if (m->type == PROTO_ACK)
        th_fake_reply(f, PROTO_OK, m->seq);
    else
        return;
    for (uint64_t i = 0; i < m->credit; i++, f->delivered++)
        th_fake_deliver(f, 100 + f->delivered, 1000 + f->delivered, "c", NULL, 0);
}

/* ---- tests ---- */

static void test_send_times_out_against_silent_router(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0); /* bound, never read */
    sl_client *c = th_fake_client(f, 200);
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
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_stale), 0);
    sl_client *c = th_fake_client(f, 2000);
    sl_delivery d = {.token = 42, .tag = "", .body = ""};
    assert_int_equal(sl_ack(c, &d), SL_OK); /* sent; the answer comes later */
    assert_int_equal(sl_flush(c, 2000), SL_ESTALE);
    assert_string_equal(sl_last_error(c), "an earlier settlement was refused: x");
    assert_int_equal(sl_refused(c), 1);
    assert_string_equal(sl_errname(SL_ESTALE), "SL_ESTALE");
    sl_close(&c);
    th_fake_stop(f);
    int i = th_fake_find(f, PROTO_ACK, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 42);
    /* a client that is not subscribed must not grant itself credit */
    assert_false(f->seen[i].present & PF(credit));
}

/* Settlements return without waiting: against a broker that never answers,
 * a hundred ACKs return at once, sl_flush times out, and a refusal that
 * comes later is reported by the next settling call, not lost. */
static void test_settlements_do_not_wait_for_answers(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, NULL), 0); /* answers nothing */
    sl_client *c = th_fake_client(f, 2000);
    sl_delivery d = {.token = 42, .tag = "", .body = ""};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(sl_ack(c, &d), SL_OK);
    assert_true(elapsed_s(&t0) < 1.0); /* one round trip each would wait 2 s for the first */
    assert_int_equal(sl_flush(c, 200), SL_ETIMEDOUT);
    assert_int_equal(sl_refused(c), 0);
    sl_close(&c);
    th_fake_stop(f);
    assert_int_equal(th_fake_restart(f, answer_stale), 0);
    c = th_fake_client(f, 2000);
    assert_int_equal(sl_ack(c, &d), SL_OK);
    assert_int_equal(sl_flush(c, 2000), SL_ESTALE);
    /* a settling call reads the answers already there: a later one reports */
    int rc = SL_OK, calls = 0;
    for (; calls < 200 && rc == SL_OK; calls++) {
        rc = sl_ack(c, &d);
        if (rc == SL_OK)
            usleep(10 * 1000);
    }
    assert_int_equal(rc, SL_ESTALE);
    assert_true(calls >= 2); /* never the call whose own answer it is */
    assert_int_equal(sl_flush(c, 2000), SL_ESTALE); /* the others, reported once */
    assert_int_equal(sl_refused(c), 1 + (uint64_t)calls);
    sl_close(&c);
    th_fake_stop(f);
}

static void test_stray_reply_with_old_seq_is_ignored(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_late), 0);
    sl_client *c = th_fake_client(f, 300);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_ETIMEDOUT);
    sl_delivery d = {.token = 1, .tag = "", .body = ""};
    assert_int_equal(sl_ack(c, &d), SL_OK);
    sl_close(&c);
}

static void test_async_confirmations_keep_tickets_in_order(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_everything), 0);
    sl_client *c = th_fake_client(f, 2000);
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

    th_fake_stop(f);
    int i = th_fake_find(f, PROTO_PUT, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].present & (PF(level) | PF(tag)), PF(level) | PF(tag));
    i = th_fake_find(f, PROTO_PUT, i + 1);
    i = th_fake_find(f, PROTO_PUT, i + 1);
    i = th_fake_find(f, PROTO_PUT, i + 1);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].body, "c");
    assert_false(f->seen[i].present & (PF(level) | PF(tag))); /* default level, no tag */
}

static void test_argument_validation(void **state)
{
    th_fake *f = *state; /* nothing listens: every check here is local */
    sl_client *c = NULL;
    assert_int_equal(sl_connect(f->endpoint, NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_connect("nonsense", NULL, &c), SL_EINVAL);
    assert_null(c);
    sl_options bad = {.timeout_ms = -5};
    assert_int_equal(sl_connect(f->endpoint, &bad, &c), SL_EINVAL);
    c = th_fake_client(f, 200);

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
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_everything), 0);
    sl_client *c = th_fake_client(f, 2000);
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

    th_fake_stop(f);
    /* asked once, then cached */
    int i = th_fake_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_int_equal(th_fake_find(f, PROTO_HELLO, i + 1), -1);
    assert_false(f->seen[i].present & (PF(pool) | PF(levels) | PF(credit)));
}

static void test_subscribe_receive_ack(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_subscriber), 0);
    sl_client *c = th_fake_client(f, 2000);
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
    assert_int_equal(sl_flush(c, 2000), SL_OK); /* settlements do not wait: the fake has them all */
    sl_delivery_free(&d);
    assert_null(d);
    assert_int_equal(sl_recv(c, 0, &d), SL_ETIMEDOUT);
    sl_close(&c);

    th_fake_stop(f);
    int i = th_fake_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].pool, "workers");
    assert_int_equal(f->seen[i].credit, 4);
    int pong = th_fake_find(f, PROTO_PONG, 0);
    assert_true(pong >= 0);
    assert_int_equal(f->seen[pong].seq, 5);
    i = th_fake_find(f, PROTO_ACK, 0);
    assert_true(i > pong);
    assert_int_equal(f->seen[i].token, 70);
    assert_int_equal(f->seen[i].credit, 1);
    i = th_fake_find(f, PROTO_TOUCH, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].lease_ms, 9000);
    assert_false(f->seen[i].present & PF(credit));
    i = th_fake_find(f, PROTO_NACK, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].delay_ms, 250);
    assert_int_equal(f->seen[i].credit, 1);
}

static void test_resubscribes_after_reconnect(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_subscriber), 0);
    sl_client *c = th_fake_client(f, 2000);
    assert_int_equal(sl_subscribe(c, "p", NULL, 0, 3), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK); /* held: its ack owes a credit */

    /* the broker goes away and comes back on the same endpoint */
    assert_int_equal(th_fake_restart(f, NULL), 0);

    sl_delivery *none = NULL;
    for (int i = 0; i < 50 && th_fake_find(f, PROTO_HELLO, 0) < 0; i++)
        assert_int_equal(sl_recv(c, 100, &none), SL_ETIMEDOUT);
    th_fake_stop(f);
    int i = th_fake_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].pool, "p");
    assert_int_equal(f->seen[i].credit, 2);
    sl_delivery_free(&d);
    sl_close(&c);
}

static void test_set_window_grows_by_credit_and_shrinks_by_withholding(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_window), 0);
    sl_client *c = th_fake_client(f, 2000);
    assert_int_equal(sl_set_window(c, 2), SL_ESTATE); /* not a consumer yet */
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    assert_int_equal(sl_set_window(c, 0), SL_EINVAL);
    assert_int_equal(sl_set_window(c, 100001), SL_EINVAL);

    sl_delivery *d[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(sl_recv(c, 2000, &d[i]), SL_OK);
    /* four outstanding, window two: the first two acks return nothing */
    assert_int_equal(sl_set_window(c, 2), SL_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sl_ack(c, d[i]), SL_OK);
        sl_delivery_free(&d[i]);
    }
    /* two outstanding again; growing to five grants three at once */
    assert_int_equal(sl_set_window(c, 5), SL_OK);
    assert_int_equal(sl_level_pause(c, 0, 1), SL_OK); /* everything before it has arrived */
    sl_close(&c);
    th_fake_stop(f);

    int i = th_fake_find(f, PROTO_HELLO, 0);
    assert_int_equal(f->seen[i].credit, 4);
    static const bool credit_back[] = {false, false, true, true};
    for (int k = 0; k < 4; k++) {
        i = th_fake_find(f, PROTO_ACK, i + 1);
        assert_true(i >= 0);
        assert_int_equal(f->seen[i].token, 11 + k);
        assert_int_equal((f->seen[i].present & PF(credit)) != 0, credit_back[k]);
        if (credit_back[k])
            assert_int_equal(f->seen[i].credit, 1);
    }
    i = th_fake_find(f, PROTO_CREDIT, i + 1);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].n, 3);
    assert_int_equal(th_fake_find(f, PROTO_CREDIT, i + 1), -1);
}

static void test_set_window_stops_at_the_limit(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_window), 0);
    sl_client *c = th_fake_client(f, 2000);
    assert_int_equal(sl_set_limit(c, 6), SL_OK);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    assert_int_equal(sl_set_window(c, 10), SL_OK); /* only two more are allowed */
    assert_int_equal(sl_set_window(c, 20), SL_OK); /* none */
    sl_delivery *d = NULL;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    sl_close(&c);
    th_fake_stop(f);

    int i = th_fake_find(f, PROTO_HELLO, 0);
    assert_int_equal(f->seen[i].credit, 4);
    i = th_fake_find(f, PROTO_CREDIT, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].n, 2);
    assert_int_equal(th_fake_find(f, PROTO_CREDIT, i + 1), -1);
    for (i = th_fake_find(f, PROTO_ACK, 0); i >= 0; i = th_fake_find(f, PROTO_ACK, i + 1))
        assert_false(f->seen[i].present & PF(credit));
}

static void test_limit_holds_across_reconnect(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_credit), 0);
    sl_client *c = th_fake_client(f, 2000);
    assert_int_equal(sl_set_limit(c, 3), SL_OK);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK); /* held across the restart */

    /* the broker restarts; the renewed subscription asks for nothing, since
     * the held delivery fills the window */
    assert_int_equal(th_fake_restart(f, answer_credit), 0);
    sl_delivery *none = NULL;
    for (int i = 0; i < 50 && th_fake_find(f, PROTO_HELLO, 0) < 0; i++)
        assert_int_equal(sl_recv(c, 100, &none), SL_ETIMEDOUT);
    assert_true(th_fake_find(f, PROTO_HELLO, 0) >= 0);

    /* one delivery so far: the limit still allows exactly two more */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    }
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 200, &d), SL_ETIMEDOUT);
    sl_close(&c);
    th_fake_stop(f);
    int i = th_fake_find(f, PROTO_HELLO, 0);
    assert_false(f->seen[i].present & PF(credit));
}

#define T(name) cmocka_unit_test_setup_teardown(name, th_fake_setup, th_fake_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_send_times_out_against_silent_router),
        T(test_error_reply_maps_code_and_text),
        T(test_settlements_do_not_wait_for_answers),
        T(test_stray_reply_with_old_seq_is_ignored),
        T(test_async_confirmations_keep_tickets_in_order),
        T(test_argument_validation),
        T(test_level_parse_names_and_numbers),
        T(test_subscribe_receive_ack),
        T(test_resubscribes_after_reconnect),
        T(test_set_window_grows_by_credit_and_shrinks_by_withholding),
        T(test_set_window_stops_at_the_limit),
        T(test_limit_holds_across_reconnect),
    };
    th_timeout_s = TEST_ALARM_S;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
