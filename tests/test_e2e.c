/*
 * test_e2e.c - the real sluiced, driven through the client library.
 *
 * Every test starts its own broker in its own temporary directory on an
 * ipc:// endpoint and stops it by PID. Nothing is mocked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>

#include "harness.h"
#include "sluice.h"

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

static sl_delivery *recv_one(sl_client *c, int timeout_ms)
{
    sl_delivery *d = NULL;
    int rc = sl_recv(c, timeout_ms, &d);
    if (rc != SL_OK)
        fail_msg("sl_recv: %s", sl_errname(rc));
    return d;
}

static void priority_order_across_levels_fifo_within(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    char body[32];
    /* interleave levels 2, 1, 0 so that arrival order differs from priority */
    for (int i = 0; i < 30; i++) {
        snprintf(body, sizeof body, "L%d-%02d", 2 - i % 3, i);
        put(f->c, 2 - i % 3, body);
    }
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    int last_level = 0, last_seq = -1, n = 0;
    for (; n < 30; n++) {
        sl_delivery *d = recv_one(f->c, 5000);
        int level, seq;
        assert_int_equal(sscanf(d->body, "L%d-%d", &level, &seq), 2);
        assert_int_equal((unsigned)level, d->level);
        assert_true(level >= last_level);          /* never a lower level first */
        if (level == last_level)
            assert_true(seq > last_seq);            /* FIFO within a level */
        last_level = level;
        last_seq = seq;
        assert_int_equal(d->attempt, 1);
        assert_int_equal(sl_ack(f->c, d), SL_OK);
        sl_delivery_free(&d);
    }
    sl_delivery *none = NULL;
    assert_int_equal(sl_recv(f->c, 200, &none), SL_ETIMEDOUT);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void subscription_limits_levels(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    put(f->c, 0, "high");
    put(f->c, 2, "low");
    sl_client *low = th_client(&f->b, 5000);
    unsigned lv = 2;
    assert_int_equal(sl_subscribe(low, "lowpool", &lv, 1, 4), SL_OK);
    sl_delivery *d = recv_one(low, 5000);
    assert_string_equal(d->body, "low");
    assert_int_equal(sl_ack(low, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(low, 300, &d), SL_ETIMEDOUT); /* "high" is not for it */
    sl_close(&low);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void levels_by_name_and_errors(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    unsigned count, level;
    const char *const *names;
    assert_int_equal(sl_levels(f->c, &count, &names), SL_OK);
    assert_int_equal(count, 3);
    assert_string_equal(names[0], "high");
    assert_string_equal(names[2], "low");
    assert_int_equal(sl_level_parse(f->c, "normal", &level), SL_OK);
    assert_int_equal(level, 1);
    assert_int_equal(sl_level_parse(f->c, "2", &level), SL_OK);
    assert_int_equal(level, 2);
    assert_int_equal(sl_level_parse(f->c, "urgent", &level), SL_ENOLEVEL);
    assert_int_equal(sl_level_parse(f->c, "3", &level), SL_ENOLEVEL);
    sl_put m = {.body = "x", .body_len = 1, .level = 9};
    assert_int_equal(sl_send(f->c, &m, NULL), SL_ENOLEVEL);
    /* a publish with no level lands in the default level, normal */
    put(f->c, SL_LEVEL_DEFAULT, "default");
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, 1);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void lease_expiry_redelivers_and_old_token_is_stale(void **state)
{
    (void)state;
    static const char *const extra[] = {"--lease-ms", "300", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    uint64_t id = put(f->c, 1, "slow");
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 2), SL_OK);
    sl_delivery *first = recv_one(f->c, 5000);
    assert_true(first->id == id);
    assert_int_equal(first->attempt, 1);
    assert_int_equal(first->lease_ms, 300);
    /* not acknowledged: after the lease, the same message comes again */
    sl_delivery *second = recv_one(f->c, 5000);
    assert_true(second->id == id);
    assert_int_equal(second->attempt, 2);
    assert_true(second->token != first->token);
    /* settlements do not wait: a refused one is reported by a later call */
    assert_int_equal(sl_ack(f->c, first), SL_OK);
    assert_int_equal(sl_ack(f->c, second), SL_OK);
    assert_int_equal(sl_flush(f->c, 5000), SL_ESTALE); /* first's lease had expired */
    assert_non_null(strstr(sl_last_error(f->c), "an earlier settlement was refused"));
    assert_int_equal(sl_flush(f->c, 5000), SL_OK);      /* reported once */
    assert_int_equal(sl_ack(f->c, second), SL_OK);
    assert_int_equal(sl_flush(f->c, 5000), SL_ESTALE); /* settled already */
    assert_int_equal(sl_refused(f->c), 2);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_true(st.level[1].expired == 1 && st.level[1].acked == 1 && st.level[1].depth == 0);
    sl_delivery_free(&first);
    sl_delivery_free(&second);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void touch_keeps_the_lease(void **state)
{
    (void)state;
    static const char *const extra[] = {"--lease-ms", "1000", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    put(f->c, 0, "long job");
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(f->c, 5000);
    for (int i = 0; i < 5; i++) { /* 5 x 400 ms = twice the lease */
        usleep(400 * 1000);
        assert_int_equal(sl_touch(f->c, d, 0), SL_OK);
    }
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_true(st.level[0].expired == 0);
    sl_delivery fake = *d;
    fake.token ^= 0x5555;
    assert_int_equal(sl_touch(f->c, &fake, 0), SL_OK);
    assert_int_equal(sl_flush(f->c, 5000), SL_ESTALE);
    sl_delivery_free(&d);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void nack_requeues_at_head_then_dead_letters(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-attempts", "2", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    uint64_t poison = put(f->c, 1, "poison");
    put(f->c, 1, "fine");
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(f->c, 5000);
    assert_true(d->id == poison);
    assert_int_equal(sl_nack(f->c, d, 0), SL_OK);
    sl_delivery_free(&d);
    d = recv_one(f->c, 5000); /* back at the head, before "fine" */
    assert_true(d->id == poison);
    assert_int_equal(d->attempt, 2);
    assert_int_equal(sl_nack(f->c, d, 0), SL_OK);
    sl_delivery_free(&d);
    d = recv_one(f->c, 5000);
    assert_string_equal(d->body, "fine");
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].dead, 1);
    assert_int_equal(st.level[1].nacked, 2);
    assert_int_equal(st.level[1].depth, 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void nack_with_delay_waits(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    put(f->c, 2, "later");
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(f->c, 5000);
    uint64_t t0 = th_now_ms();
    assert_int_equal(sl_nack(f->c, d, 600), SL_OK);
    sl_delivery_free(&d);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[2].delayed, 1);
    d = recv_one(f->c, 5000);
    assert_true((double)d->released_ns / 1e6 - (double)t0 >= 550); /* the broker's release time: never early */
    assert_string_equal(d->body, "later");
    assert_int_equal(d->attempt, 2);
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void credit_bounds_unacknowledged_deliveries(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    for (int i = 0; i < 10; i++)
        put(f->c, 1, "m");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 3), SL_OK);
    sl_delivery *d[4] = {0};
    for (int i = 0; i < 3; i++)
        d[i] = recv_one(c, 5000);
    assert_int_equal(sl_recv(c, 400, &d[3]), SL_ETIMEDOUT); /* window of 3 is full */
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].inflight, 3);
    assert_int_equal(st.level[1].depth, 7);
    assert_int_equal(sl_ack(c, d[0]), SL_OK); /* returns one credit */
    d[3] = recv_one(c, 5000);
    for (int i = 0; i < 4; i++)
        sl_delivery_free(&d[i]);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A consumer process that dies holding a delivery (no BYE): heartbeats
 * notice, and the message comes back, charged. */
static void dead_consumer_returns_its_messages(void **state)
{
    (void)state;
    static const char *const extra[] = {"--heartbeat-ms", "200", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    uint64_t id = put(f->c, 0, "orphan");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sl_client *a = NULL;
        sl_delivery *d = NULL;
        if (sl_connect(f->b.endpoint, NULL, &a) == SL_OK && sl_subscribe(a, NULL, NULL, 0, 1) == SL_OK &&
            sl_recv(a, 5000, &d) == SL_OK)
            _exit(d->id == id ? 0 : 3);
        _exit(4); /* dies without closing: the broker is not told */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sl_client *b = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(b, NULL, NULL, 0, 1), SL_OK);
    uint64_t t0 = th_now_ms();
    sl_delivery *d = recv_one(b, 5000); /* well before the 30 s lease */
    assert_true(th_now_ms() - t0 < 5000);
    assert_true(d->id == id);
    assert_int_equal(d->attempt, 2);
    assert_int_equal(sl_ack(b, d), SL_OK);
    sl_delivery_free(&d);
    sl_close(&b);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void bye_returns_deliveries_uncharged_and_limit_caps_credit(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    for (int i = 0; i < 5; i++)
        put(f->c, 1, "job");
    sl_client *a = th_client(&f->b, 5000);
    assert_int_equal(sl_set_limit(a, 2), SL_OK);
    assert_int_equal(sl_subscribe(a, NULL, NULL, 0, 4), SL_OK); /* window 4, capped at 2 */
    sl_delivery *d1 = recv_one(a, 5000), *d2 = recv_one(a, 5000), *d3 = NULL;
    assert_int_equal(sl_recv(a, 300, &d3), SL_ETIMEDOUT);
    assert_int_equal(sl_ack(a, d1), SL_OK); /* returns no credit: the limit is reached */
    assert_int_equal(sl_flush(a, 5000), SL_OK); /* settlements do not wait */
    assert_int_equal(sl_recv(a, 300, &d3), SL_ETIMEDOUT);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.consumers, 1); /* producers that only asked for levels do not count */
    assert_int_equal(st.level[1].inflight, 1);
    sl_close(&a); /* BYE with d2 unsettled */
    sl_client *b = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(b, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *again = recv_one(b, 5000);
    assert_true(again->id == d2->id);
    assert_int_equal(again->attempt, 1); /* returned by BYE: not charged */
    assert_int_equal(sl_ack(b, again), SL_OK);
    sl_delivery_free(&again);
    sl_delivery_free(&d1);
    sl_delivery_free(&d2);
    sl_close(&b);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void restart_keeps_confirmed_and_returns_inflight(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t a = put(f->c, 0, "was in flight");
    uint64_t b = put(f->c, 0, "was waiting");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(c, 5000);
    assert_true(d->id == a);
    sl_delivery_free(&d);
    sl_close(&c);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 2);
    assert_int_equal(st.level[0].inflight, 0);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    d = recv_one(f->c, 5000);
    assert_true(d->id == a); /* back at the head */
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    d = recv_one(f->c, 5000);
    assert_true(d->id == b);
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    uint64_t c3 = put(f->c, 0, "after restart");
    assert_true(c3 > b); /* ids never repeat */
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* kill -9 in the middle of a pipelined publishing load: every confirmed
 * message must be delivered after the restart. */
static void kill9_loses_nothing_confirmed(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    enum { TOTAL = 20000, KILL_AT = 3000 };
    uint8_t *confirmed = calloc(TOTAL, 1);
    uint64_t *ticket_of = calloc(TOTAL, sizeof *ticket_of);
    size_t nconfirmed = 0, sent = 0;
    char body[32];
    unsigned seed = th_seed();
    int killed = 0;
    uint64_t t_end = th_now_ms() + 60000;
    while (th_now_ms() < t_end && (sent < TOTAL || sl_send_pending(f->c))) {
        while (!killed && sent < TOTAL && sl_send_pending(f->c) < 200) {
            snprintf(body, sizeof body, "m%06zu", sent);
            sl_put m = {.body = body, .body_len = strlen(body), .level = (int)((sent + seed) % 3)};
            assert_int_equal(sl_send_async(f->c, &m, &ticket_of[sent]), SL_OK);
            sent++;
        }
        if (killed && !sl_send_pending(f->c))
            break; /* every publish before the kill was answered before it took effect */
        sl_confirm cf;
        int rc = sl_send_wait(f->c, killed ? 300 : 5000, &cf);
        if (rc == SL_ETIMEDOUT && killed)
            break;
        assert_int_equal(rc, SL_OK);
        if (cf.err == SL_OK) {
            size_t idx = (size_t)(cf.ticket - ticket_of[0]);
            assert_true(idx < sent);
            confirmed[idx] = 1;
            nconfirmed++;
        }
        if (!killed && nconfirmed >= KILL_AT) {
            th_broker_kill9(&f->b);
            killed = 1;
        }
    }
    assert_true(killed);
    sl_close(&f->c);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 64), SL_OK);
    uint8_t *seen = calloc(TOTAL, 1);
    size_t delivered = 0;
    sl_delivery *d;
    while (sl_recv(f->c, 1000, &d) == SL_OK) {
        unsigned idx;
        assert_int_equal(sscanf(d->body, "m%u", &idx), 1);
        assert_true(idx < sent); /* nothing unexpected */
        seen[idx] = 1;
        delivered++;
        assert_int_equal(sl_ack(f->c, d), SL_OK);
        sl_delivery_free(&d);
    }
    size_t lost = 0;
    for (size_t i = 0; i < sent; i++)
        lost += confirmed[i] && !seen[i];
    fprintf(stderr, "# kill -9 after %zu confirmed of %zu sent: %zu delivered after restart, %zu lost\n",
            nconfirmed, sent, delivered, lost);
    assert_int_equal(lost, 0);
    assert_true(delivered >= nconfirmed);
    free(confirmed);
    free(ticket_of);
    free(seen);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Publishes in flight when the broker dies are not left pending forever:
 * after the client reconnects, each is confirmed, stored or SL_ECONNECT. */
static void pending_publishes_end_after_a_restart(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_levels(f->c, NULL, NULL), SL_OK); /* connected for real */
    kill(f->b.pid, SIGSTOP); /* frozen: what is sent now cannot be confirmed */
    for (int i = 0; i < 300; i++) {
        sl_put m = {.body = "p", .body_len = 1, .level = 1};
        assert_int_equal(sl_send_async(f->c, &m, NULL), SL_OK);
    }
    usleep(100 * 1000);
    th_broker_kill9(&f->b);
    assert_int_equal(th_broker_start(&f->b), 0);
    unsigned ok = 0, lost_link = 0;
    uint64_t end = th_now_ms() + 15000;
    while (sl_send_pending(f->c) && th_now_ms() < end) {
        sl_confirm cf;
        if (sl_send_wait(f->c, 200, &cf) != SL_OK)
            continue;
        ok += cf.err == SL_OK;
        lost_link += cf.err == SL_ECONNECT;
    }
    fprintf(stderr, "# 300 publishes across kill -9: %u confirmed, %u SL_ECONNECT\n", ok, lost_link);
    assert_int_equal(sl_send_pending(f->c), 0);
    assert_int_equal(ok + lost_link, 300);
    assert_true(lost_link > 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* An acknowledgement is durable once its flush window has passed (default),
 * or as soon as its OK arrives (--ack-flush-ms 0): kill -9 then must not
 * bring the message back. */
static void ack_survives_kill9(const char *const *extra, unsigned wait_ms)
{
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    put(f->c, 0, "done once");
    put(f->c, 0, "still to do");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(c, 5000);
    assert_string_equal(d->body, "done once");
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* the OK came: with --ack-flush-ms 0, committed */
    sl_delivery_free(&d);
    if (wait_ms)
        usleep(wait_ms * 1000);
    th_broker_kill9(&f->b);
    sl_close(&c);
    sl_close(&f->c);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 4), SL_OK);
    d = recv_one(f->c, 5000);
    assert_string_equal(d->body, "still to do");
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(f->c, 300, &d), SL_ETIMEDOUT);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void ack_is_durable_after_its_flush_window(void **state)
{
    (void)state;
    ack_survives_kill9(NULL, 200);
}

static void ack_flush_zero_makes_ok_wait_for_commit(void **state)
{
    (void)state;
    static const char *const extra[] = {"--ack-flush-ms", "0", NULL};
    ack_survives_kill9(extra, 0);
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

static void second_broker_on_same_data_is_refused(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    th_broker other;
    assert_int_equal(th_broker_init(&other, NULL), 0);
    strcpy(other.data, f->b.data);
    const char *argv[] = {th_bin("sluiced"), "--data", other.data, "--listen", other.endpoint, NULL};
    assert_int_equal(th_run(argv, NULL, NULL, 0), 2);
    th_broker_fini(&other);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(priority_order_across_levels_fifo_within),
        cmocka_unit_test(subscription_limits_levels),
        cmocka_unit_test(levels_by_name_and_errors),
        cmocka_unit_test(lease_expiry_redelivers_and_old_token_is_stale),
        cmocka_unit_test(touch_keeps_the_lease),
        cmocka_unit_test(nack_requeues_at_head_then_dead_letters),
        cmocka_unit_test(nack_with_delay_waits),
        cmocka_unit_test(credit_bounds_unacknowledged_deliveries),
        cmocka_unit_test(dead_consumer_returns_its_messages),
        cmocka_unit_test(bye_returns_deliveries_uncharged_and_limit_caps_credit),
        cmocka_unit_test(restart_keeps_confirmed_and_returns_inflight),
        cmocka_unit_test(kill9_loses_nothing_confirmed),
        cmocka_unit_test(pending_publishes_end_after_a_restart),
        cmocka_unit_test(ack_is_durable_after_its_flush_window),
        cmocka_unit_test(ack_flush_zero_makes_ok_wait_for_commit),
        cmocka_unit_test(garbage_gets_typed_errors_and_broker_keeps_serving),
        cmocka_unit_test(second_broker_on_same_data_is_refused),
    };
    th_seed();
    return cmocka_run_group_tests_name("e2e", tests, NULL, NULL);
}
