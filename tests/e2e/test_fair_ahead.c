/*
 * test_fair_ahead.c - a fair level's read-ahead (broker/queue/queue_fair_ahead.c)
 * and its batched deletes of acknowledged records (broker/store/store_gone.c)
 * keep every promise a seek per take and a delete per ack kept.
 *
 * Each test starts a real sluiced with --checkpoint-ms 60000, so that no
 * checkpoint applies the waiting deletes behind the test's back: whatever
 * the test reads after its acknowledgements, it reads while they wait.
 *
 *   acknowledged_messages_are_gone_for_every_reader
 *       explain says "gone" for each acknowledged id, the level's depth is
 *       0, and the level switched to FIFO delivers only what is published
 *       after (a FIFO take starts from the level's first key).
 *   durable_acks_survive_a_kill
 *       with --ack-flush-ms 0, acks that sl_flush confirmed are durable in
 *       the log alone (no LMDB commit yet): after kill -9 and a restart the
 *       broker delivers exactly the unacknowledged, in each tag's order.
 *   expired_records_read_ahead_are_not_delivered
 *       records a take copied ahead expire while they wait: they become dead
 *       letters, and the tag's next delivery is what was published after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"
#include "sluice_admin.h"

#define LEVEL 1
#define RECV_MS 10000

static const char *const quiet_store[] = {"--checkpoint-ms", "60000", "--ack-flush-ms", "0", NULL};

static uint64_t put(sl_client *c, const char *tag, const char *body, uint64_t ttl_ms)
{
    sl_put m = {.body = body, .body_len = strlen(body), .level = LEVEL, .tag = tag, .ttl_ms = ttl_ms};
    uint64_t id = 0;
    assert_int_equal(sl_send(c, &m, &id), SL_OK);
    return id;
}

/* next receives one delivery within RECV_MS and checks its body. */
static sl_delivery *next(sl_client *c, const char *body)
{
    sl_delivery *d = NULL;
    uint64_t end = th_now_ms() + RECV_MS;
    while (!d && th_now_ms() < end)
        if (sl_recv(c, 100, &d) != SL_OK)
            d = NULL;
    assert_non_null(d);
    char got[32];
    snprintf(got, sizeof got, "%.*s", (int)d->body_len, (const char *)d->body);
    assert_string_equal(got, body);
    return d;
}

/* nothing checks that no delivery comes within ms. */
static void nothing(sl_client *c, int ms)
{
    sl_delivery *d = NULL;
    int rc = sl_recv(c, ms, &d);
    if (rc == SL_OK)
        fail_msg("unexpected delivery: %.*s", (int)d->body_len, (const char *)d->body);
}

static void ack(sl_client *c, sl_delivery **d)
{
    assert_int_equal(sl_ack(c, *d), SL_OK);
    sl_delivery_free(d);
}

/* Messages of two tags, interleaved: message i is "a<i/2>" of tag a for an
 * even i, "b<i/2>" of tag b for an odd one; a fair level gives them back
 * in that order, each tag in its own. */
static void ab_body(int i, char body[16])
{
    snprintf(body, 16, "%c%d", "ab"[i % 2], i / 2);
}

/* put_ab publishes messages 0..n-1 of the interleaving, their ids in ids
 * (NULL: not kept). */
static void put_ab(sl_client *c, int n, uint64_t *ids)
{
    char body[16];
    for (int i = 0; i < n; i++) {
        ab_body(i, body);
        uint64_t id = put(c, i % 2 ? "b" : "a", body, 0);
        if (ids)
            ids[i] = id;
    }
}

/* take_ab receives messages from..to-1 of the interleaving in order,
 * acking each. */
static void take_ab(sl_client *c, int from, int to)
{
    char body[16];
    for (int i = from; i < to; i++) {
        ab_body(i, body);
        sl_delivery *d = next(c, body);
        ack(c, &d);
    }
}

static sl_client *consumer(th_fixture *f, unsigned credit)
{
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = LEVEL;
    assert_non_null(c);
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, credit), SL_OK);
    return c;
}

static void acknowledged_messages_are_gone_for_every_reader(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    uint64_t ids[12];
    assert_int_equal(th_fixture_start(quiet_store, &f), 0);
    assert_int_equal(sl_level_fair(f->c, LEVEL, 1), SL_OK);
    put_ab(f->c, 12, ids); /* runs of 6: long enough to be read ahead */
    sl_client *c = consumer(f, 1);
    take_ab(c, 0, 12);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    for (int i = 0; i < 12; i++) {
        sl_explain_info e;
        assert_int_equal(sl_explain(f->c, ids[i], &e), SL_OK);
        assert_string_equal(e.state, "gone");
    }
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[LEVEL].depth, 0);
    assert_int_equal(st.level[LEVEL].inflight, 0);
    assert_int_equal(sl_level_fair(f->c, LEVEL, 0), SL_OK); /* FIFO again: it takes from the first key */
    put(f->c, NULL, "x", 0);
    sl_delivery *d = next(c, "x");
    ack(c, &d);
    nothing(c, 500);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void durable_acks_survive_a_kill(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(quiet_store, &f), 0);
    assert_int_equal(sl_level_fair(f->c, LEVEL, 1), SL_OK);
    put_ab(f->c, 20, NULL);
    sl_client *c = consumer(f, 1);
    take_ab(c, 0, 12);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* every ack above is durable now */
    sl_close(&c);
    sl_close(&f->c);
    th_broker_kill9(&f->b);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    c = consumer(f, 1);
    take_ab(c, 12, 20); /* a6 b6 a7 b7 ...: not one acknowledged message again */
    nothing(c, 500);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void expired_records_read_ahead_are_not_delivered(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(quiet_store, &f), 0);
    assert_int_equal(sl_level_fair(f->c, LEVEL, 1), SL_OK);
    put(f->c, "a", "a0", 0);
    put(f->c, "a", "a1", 0);
    put(f->c, "a", "a2", 1000);
    put(f->c, "a", "a3", 1000);
    put(f->c, "a", "a4", 1000);
    sl_client *c = consumer(f, 1);
    sl_delivery *d = next(c, "a0"); /* a seek; a's run goes on, so the next take reads ahead */
    ack(c, &d);
    d = next(c, "a1"); /* read with a2..a4 behind it */
    uint64_t until = th_now_ms() + 3000; /* they expire meanwhile (credit 1: nothing else comes) */
    while (th_now_ms() < until)
        nothing(c, 100);
    ack(c, &d);
    put(f->c, "a", "a5", 0);
    d = next(c, "a5");
    ack(c, &d);
    nothing(c, 300);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[LEVEL].dead, 3);
    assert_int_equal(st.level[LEVEL].depth, 0);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acknowledged_messages_are_gone_for_every_reader),
        cmocka_unit_test(durable_acks_survive_a_kill),
        cmocka_unit_test(expired_records_read_ahead_are_not_delivered),
    };
    return cmocka_run_group_tests(tests, th_timeout_arm, th_timeout_disarm);
}
