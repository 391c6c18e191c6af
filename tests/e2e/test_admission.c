/*
 * test_admission.c - what the broker admits, against the real sluiced:
 * idempotent publishes (across kill -9, and after their window), delayed
 * publishes, full levels, the soft limit on the map and admission resuming
 * as consumers drain, the map growing when it may, and the cap on what one
 * consumer holds.
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

#include "harness.h"
#include "sluice.h"

/* publish sends one message and returns its confirmation. */
static sl_confirm publish(sl_client *c, const sl_put *m)
{
    sl_confirm cf = {0};
    assert_int_equal(sl_send_async(c, m, NULL), SL_OK);
    assert_int_equal(sl_send_wait(c, 5000, &cf), SL_OK);
    return cf;
}

static void idempotent_publish_survives_kill9(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put m = {.body = "charge card", .body_len = 11, .level = 0, .key = "order-17"};
    sl_confirm first = publish(f->c, &m);
    assert_int_equal(first.err, SL_OK);
    assert_false(first.duplicate);
    th_broker_kill9(&f->b); /* the key was committed with the message */
    sl_close(&f->c);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    m.body = "charge card again";
    m.body_len = strlen(m.body);
    sl_confirm again = publish(f->c, &m);
    assert_int_equal(again.err, SL_OK);
    assert_true(again.duplicate);
    assert_true(again.id == first.id);
    uint64_t id = 0;
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK); /* the synchronous call agrees */
    assert_true(id == first.id);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 1); /* stored once */
    m.key = "order-18";
    assert_false(publish(f->c, &m).duplicate);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void idempotency_window_ends(void **state)
{
    (void)state;
    static const char *const extra[] = {"--idem-window-ms", "300", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    sl_put m = {.body = "x", .body_len = 1, .level = 1, .key = "k"};
    sl_confirm a = publish(f->c, &m);
    usleep(600 * 1000);
    sl_confirm b = publish(f->c, &m);
    assert_false(b.duplicate);
    assert_true(b.id != a.id);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void delayed_publish_waits(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put m = {.body = "later", .body_len = 5, .level = 2, .delay_ms = 800};
    uint64_t t0 = th_now_ms();
    assert_int_equal(publish(f->c, &m).err, SL_OK);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_true(st.level[2].delayed == 1 && st.level[2].depth == 0);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    /* on the broker's release time: it is never early (the 50 ms cover the
     * wall clock that delays are kept in, against the monotonic t0) */
    fprintf(stderr, "# delay 800 ms: released %.1f ms after the publish began\n",
            (double)d->released_ns / 1e6 - (double)t0);
    assert_true((double)d->released_ns / 1e6 - (double)t0 >= 750);
    assert_string_equal(d->body, "later");
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void expired_messages_become_dead_letters_wherever_they_wait(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put a = {.body = "a", .body_len = 1, .level = 1};
    sl_put b = {.body = "b", .body_len = 1, .level = 1, .ttl_ms = 300};
    sl_put late = {.body = "late", .body_len = 4, .level = 1, .ttl_ms = 300, .delay_ms = 60000};
    assert_int_equal(publish(f->c, &a).err, SL_OK);
    uint64_t mid = publish(f->c, &b).id; /* in the middle of the queue */
    assert_int_equal(publish(f->c, &a).err, SL_OK);
    assert_int_equal(publish(f->c, &late).err, SL_OK);
    uint64_t end = th_now_ms() + 5000;
    sl_stats st;
    do {
        usleep(100 * 1000);
        assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    } while (st.level[1].dead < 2 && th_now_ms() < end);
    assert_int_equal(st.level[1].dead, 2);
    assert_int_equal(st.level[1].depth, 2);   /* the two without a ttl */
    assert_int_equal(st.level[1].delayed, 0); /* the delayed one expired too */
    sl_explain_info ex;
    assert_int_equal(sl_explain(f->c, mid, &ex), SL_OK);
    assert_string_equal(ex.state, "dead");
    assert_non_null(strstr(ex.why, "time to live"));
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    for (int i = 0; i < 2; i++) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
        assert_string_equal(d->body, "a");
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void full_level_refuses_and_keeps_what_it_has(void **state)
{
    (void)state;
    static const char *const extra[] = {"--level-max-messages", "5", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    sl_put m = {.body = "m", .body_len = 1, .level = 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(sl_send(f->c, &m, NULL), SL_OK);
    assert_int_equal(sl_send(f->c, &m, NULL), SL_EFULL);
    assert_non_null(strstr(sl_last_error(f->c), "full"));
    m.level = 0;
    assert_int_equal(sl_send(f->c, &m, NULL), SL_OK); /* other levels are not full */
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    m.level = 1;
    uint64_t end = th_now_ms() + 3000;
    int rc = SL_EFULL;
    while (rc == SL_EFULL && th_now_ms() < end)
        rc = sl_send(f->c, &m, NULL); /* room again once the ack commits */
    assert_int_equal(rc, SL_OK);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth + st.level[1].inflight, 5); /* nothing was dropped */
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void soft_limit_refuses_then_admission_resumes(void **state)
{
    (void)state;
    static const char *const extra[] = {"--map-size-mb", "2", "--map-max-mb", "2", "--max-body", "8192", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    char *body = calloc(1, 4000);
    memset(body, 'x', 3999);
    sl_put m = {.body = body, .body_len = 3999, .level = 1};
    int rc = SL_OK, sent = 0;
    for (int i = 0; i < 2000 && rc == SL_OK; i++) {
        rc = sl_send(f->c, &m, NULL);
        sent += rc == SL_OK;
    }
    fprintf(stderr, "# 2 MiB map: %d messages of 4 KB admitted before SL_ENOSPC\n", sent);
    assert_int_equal(rc, SL_ENOSPC);
    assert_true(sent > 100);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 32), SL_OK);
    sl_delivery *d = NULL;
    int drained = 0;
    while (drained < sent && sl_recv(c, 2000, &d) == SL_OK) {
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        drained++;
    }
    assert_int_equal(drained, sent); /* acks could commit although the map was at its limit */
    uint64_t end = th_now_ms() + 5000;
    rc = SL_ENOSPC;
    while (rc == SL_ENOSPC && th_now_ms() < end) {
        usleep(50 * 1000);
        rc = sl_send(f->c, &m, NULL);
    }
    assert_int_equal(rc, SL_OK); /* admission resumed by itself */
    free(body);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void map_grows_when_it_may(void **state)
{
    (void)state;
    static const char *const extra[] = {"--map-size-mb", "2", "--map-max-mb", "16", "--max-body", "8192", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    char *body = calloc(1, 4000);
    memset(body, 'y', 3999);
    sl_put m = {.body = body, .body_len = 3999, .level = 1};
    for (int i = 0; i < 1500; i++) { /* about 6 MB: three times the first map */
        int rc = sl_send(f->c, &m, NULL);
        if (rc != SL_OK)
            fail_msg("publish %d: %s: %s", i, sl_errname(rc), sl_last_error(f->c));
    }
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, 1500);
    free(body);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void one_consumer_holds_at_most_its_cap(void **state)
{
    (void)state;
    static const char *const extra[] = {"--consumer-max-inflight", "2", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    sl_put m = {.body = "m", .body_len = 1, .level = 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(sl_send(f->c, &m, NULL), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 10), SL_OK);
    sl_delivery *d[3] = {0};
    assert_int_equal(sl_recv(c, 5000, &d[0]), SL_OK);
    assert_int_equal(sl_recv(c, 5000, &d[1]), SL_OK);
    assert_int_equal(sl_recv(c, 400, &d[2]), SL_ETIMEDOUT); /* credit 10, cap 2 */
    assert_int_equal(sl_ack(c, d[0]), SL_OK);
    assert_int_equal(sl_recv(c, 5000, &d[2]), SL_OK);
    for (int i = 0; i < 3; i++)
        sl_delivery_free(&d[i]);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idempotent_publish_survives_kill9),
        cmocka_unit_test(idempotency_window_ends),
        cmocka_unit_test(delayed_publish_waits),
        cmocka_unit_test(expired_messages_become_dead_letters_wherever_they_wait),
        cmocka_unit_test(full_level_refuses_and_keeps_what_it_has),
        cmocka_unit_test(soft_limit_refuses_then_admission_resumes),
        cmocka_unit_test(map_grows_when_it_may),
        cmocka_unit_test(one_consumer_holds_at_most_its_cap),
    };
    th_seed();
    return cmocka_run_group_tests_name("admission", tests, NULL, NULL);
}
