/*
 * test_delivery.c - the delivery contract of the real sluiced, driven
 * through the client library: strict priority across levels and FIFO within
 * one, subscriptions limited to some levels, levels by name (and the
 * default level), a lease that runs out redelivers and makes the old token
 * stale, touch keeps a lease, a NACK puts a message back at the head and in
 * the end among the dead letters, a NACK with a delay waits, credit bounds
 * what a consumer holds unacknowledged, a consumer that dies gets its
 * messages returned (charged), and BYE returns them uncharged.
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
    /* long enough that the second delivery's ack lands inside its lease on
     * a loaded machine; the first's runs out while the test waits for it */
    static const char *const extra[] = {"--lease-ms", "1500", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    uint64_t id = put(f->c, 1, "slow");
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 2), SL_OK);
    sl_delivery *first = recv_one(f->c, 5000);
    assert_true(first->id == id);
    assert_int_equal(first->attempt, 1);
    assert_int_equal(first->lease_ms, 1500);
    /* not acknowledged: after the lease, the same message comes again */
    sl_delivery *second = recv_one(f->c, 10000);
    assert_true(second->id == id);
    assert_int_equal(second->attempt, 2);
    assert_true(second->token != first->token);
    /* settlements do not wait: a refused one is reported once, by the next
     * settling call or sl_flush, whichever reads its answer first; that
     * call's own settlement is sent all the same */
    assert_int_equal(sl_ack(f->c, first), SL_OK);
    int rc = sl_ack(f->c, second);
    assert_true(rc == SL_OK || rc == SL_ESTALE);
    if (rc == SL_OK)
        rc = sl_flush(f->c, 5000);
    assert_int_equal(rc, SL_ESTALE); /* first's lease had expired */
    assert_non_null(strstr(sl_last_error(f->c), "an earlier settlement was refused"));
    assert_int_equal(sl_flush(f->c, 5000), SL_OK);      /* reported once */
    assert_int_equal(sl_refused(f->c), 1);
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
    };
    th_seed();
    return cmocka_run_group_tests_name("delivery", tests, NULL, NULL);
}
