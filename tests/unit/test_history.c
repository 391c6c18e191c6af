/*
 * test_history.c - the campaign classifier on hand-made histories.
 *
 * Each test writes down a small history the way a campaign would record it
 * (attempts, confirmations, refusals, deliveries, acks) and checks the class
 * of every message and the totals: one test per class (ok, lost, duplicated,
 * unexpected, corrupt), the cases that must not be counted against the broker
 * (unconfirmed and never delivered; delivered before its confirmation was
 * recorded), and many threads recording at once. No broker runs here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "history.h"
#include "sluice_errors.h"

#define BODY_CAP 4096

static history *make(uint64_t max_msgs, uint32_t tag)
{
    history_cfg cfg = {.max_msgs = max_msgs, .tag = tag, .body_min = 24, .body_max = 200,
                       .big_every = 7, .big_bytes = 3000};
    history *h = NULL;
    assert_int_equal(history_new(&cfg, &h), 0);
    return h;
}

/* attempt takes the next message and leaves its body in buf. */
static uint64_t attempt(history *h, char *buf, size_t *len)
{
    uint64_t msg;
    assert_int_equal(history_attempt(h, &msg, buf, BODY_CAP, len), 0);
    return msg;
}

/* deliver_own delivers message msg with its own body under id. */
static void deliver_own(history *h, uint64_t msg, uint64_t id, unsigned attempt_no)
{
    char buf[BODY_CAP];
    size_t len = history_body(h, msg, buf, sizeof buf);
    assert_true(len > 0);
    history_deliver(h, id, buf, len, attempt_no);
}

static history_report classify(history *h)
{
    history_report r;
    history_classify(h, &r);
    return r;
}

static void bodies_are_unique_deterministic_and_sized(void **state)
{
    (void)state;
    history *h = make(1000, 0xabc);
    history *other = make(1000, 0xabd);
    char a[BODY_CAP], b[BODY_CAP];
    unsigned big = 0;
    for (uint64_t m = 0; m < 1000; m++) {
        size_t la = history_body(h, m, a, sizeof a);
        assert_true(la == 3000 || (la >= 24 && la <= 200));
        big += la == 3000;
        assert_int_equal(history_body(h, m, b, sizeof b), la);
        assert_memory_equal(a, b, la);
        size_t lb = history_body(h, m + 1, b, sizeof b);
        assert_false(la == lb && memcmp(a, b, la) == 0);
        size_t lo = history_body(other, m, b, sizeof b);
        assert_false(la == lo && memcmp(a, b, la) == 0);
    }
    assert_true(big > 50 && big < 400); /* about one in 7 */
    assert_int_equal(history_body(h, 0, a, 10), 0); /* too small a buffer */
    history_destroy(&h);
    history_destroy(&other);
    assert_null(h);
    history_destroy(&h); /* accepts NULL */
}

static void confirmed_and_delivered_once_is_ok(void **state)
{
    (void)state;
    history *h = make(10, 1);
    char buf[BODY_CAP];
    size_t len;
    uint64_t m = attempt(h, buf, &len);
    history_confirm(h, m, 41);
    history_deliver(h, 41, buf, len, 1);
    history_ack(h, 41);
    assert_int_equal(history_class_of(h, m), HISTORY_OK);
    history_report r = classify(h);
    assert_int_equal(r.attempted, 1);
    assert_int_equal(r.confirmed, 1);
    assert_int_equal(r.ok, 1);
    assert_int_equal(r.acked, 1);
    assert_int_equal(history_bad(&r), 0);
    history_destroy(&h);
}

static void confirmed_never_delivered_is_lost(void **state)
{
    (void)state;
    history *h = make(10, 2);
    char buf[BODY_CAP];
    size_t len;
    uint64_t kept = attempt(h, buf, &len), gone = attempt(h, buf, &len);
    history_confirm(h, kept, 1);
    history_confirm(h, gone, 2);
    deliver_own(h, kept, 1, 1);
    assert_int_equal(history_class_of(h, kept), HISTORY_OK);
    assert_int_equal(history_class_of(h, gone), HISTORY_LOST);
    history_report r = classify(h);
    assert_int_equal(r.lost, 1);
    assert_int_equal(r.lost_ex[0], gone);
    assert_int_equal(history_bad(&r), 1);
    history_destroy(&h);
}

static void delivered_twice_is_duplicated_and_allowed(void **state)
{
    (void)state;
    history *h = make(10, 3);
    char buf[BODY_CAP];
    size_t len;
    uint64_t m = attempt(h, buf, &len);
    history_confirm(h, m, 7);
    deliver_own(h, m, 7, 1);
    deliver_own(h, m, 7, 1); /* a broker crash before the ack was committed */
    deliver_own(h, m, 7, 2);
    assert_int_equal(history_class_of(h, m), HISTORY_DUPLICATED);
    history_report r = classify(h);
    assert_int_equal(r.duplicated, 1);
    assert_int_equal(r.ok, 1);
    assert_int_equal(r.deliveries, 3);
    assert_int_equal(r.delivered, 1);
    assert_int_equal(history_bad(&r), 0);
    history_destroy(&h);
}

static void unconfirmed_publishes_are_never_held_against_the_broker(void **state)
{
    (void)state;
    history *h = make(10, 4);
    char buf[BODY_CAP];
    size_t len;
    uint64_t silent = attempt(h, buf, &len), stored = attempt(h, buf, &len);
    deliver_own(h, stored, 9, 1); /* committed, but its PUT_OK never arrived */
    assert_int_equal(history_class_of(h, silent), HISTORY_UNCONFIRMED);
    assert_int_equal(history_class_of(h, stored), HISTORY_OK);
    history_report r = classify(h);
    assert_int_equal(r.unconfirmed_delivered, 1);
    assert_int_equal(r.ok, 0);
    assert_int_equal(history_bad(&r), 0);
    history_destroy(&h);
}

static void delivery_recorded_before_its_confirmation_is_ok(void **state)
{
    (void)state;
    history *h = make(10, 5);
    char buf[BODY_CAP];
    size_t len;
    uint64_t m = attempt(h, buf, &len);
    deliver_own(h, m, 12, 1); /* the consumer's thread was quicker */
    history_confirm(h, m, 12);
    assert_int_equal(history_class_of(h, m), HISTORY_OK);
    history_report r = classify(h);
    assert_int_equal(r.ok, 1);
    assert_int_equal(history_bad(&r), 0);
    history_destroy(&h);
}

static void deliveries_of_nothing_attempted_are_unexpected(void **state)
{
    (void)state;
    history *h = make(10, 6), *other = make(10, 7);
    char buf[BODY_CAP];
    size_t len;
    uint64_t m = attempt(h, buf, &len);
    history_confirm(h, m, 1);
    deliver_own(h, m, 1, 1);
    /* a number this history never handed out */
    len = history_body(h, 5, buf, sizeof buf);
    history_deliver(h, 100, buf, len, 1);
    /* another run's message */
    len = history_body(other, 0, buf, sizeof buf);
    history_deliver(h, 101, buf, len, 1);
    /* bytes that are nobody's, under an id nobody was confirmed with */
    history_deliver(h, 102, "hello", 5, 1);
    history_report r = classify(h);
    assert_int_equal(r.unexpected, 3);
    assert_int_equal(r.unexpected_id_ex[0], 100);
    assert_int_equal(r.unexpected_id_ex[2], 102);
    assert_int_equal(r.ok, 1);
    assert_int_equal(history_bad(&r), 3);
    history_destroy(&h);
    history_destroy(&other);
}

static void refused_then_delivered_is_unexpected(void **state)
{
    (void)state;
    history *h = make(10, 8);
    char buf[BODY_CAP];
    size_t len;
    uint64_t refused = attempt(h, buf, &len), quiet = attempt(h, buf, &len);
    history_reject(h, refused, SL_EIO);
    history_reject(h, quiet, SL_ENOSPC);
    deliver_own(h, refused, 3, 1);
    assert_int_equal(history_class_of(h, refused), HISTORY_UNEXPECTED);
    assert_int_equal(history_class_of(h, quiet), HISTORY_REJECTED);
    history_report r = classify(h);
    assert_int_equal(r.rejected, 2);
    assert_int_equal(r.unexpected, 1);
    assert_int_equal(history_bad(&r), 1);
    history_destroy(&h);
}

static void changed_bytes_are_corrupt(void **state)
{
    (void)state;
    history *h = make(10, 9);
    char buf[BODY_CAP];
    size_t len;
    uint64_t flipped = attempt(h, buf, &len);
    history_confirm(h, flipped, 1);
    buf[len - 1] ^= 1;
    history_deliver(h, 1, buf, len, 1);
    uint64_t cut = attempt(h, buf, &len);
    history_confirm(h, cut, 2);
    history_deliver(h, 2, buf, len - 1, 1);
    uint64_t fine = attempt(h, buf, &len);
    history_confirm(h, fine, 3);
    deliver_own(h, fine, 3, 1);
    assert_int_equal(history_class_of(h, flipped), HISTORY_CORRUPT);
    assert_int_equal(history_class_of(h, cut), HISTORY_CORRUPT);
    assert_int_equal(history_class_of(h, fine), HISTORY_OK);
    history_report r = classify(h);
    assert_int_equal(r.corrupt, 2);
    assert_int_equal(r.corrupt_ex[0], flipped);
    assert_int_equal(r.corrupt_ex[1], cut);
    assert_int_equal(history_bad(&r), 2);
    history_destroy(&h);
}

static void mixed_up_ids_are_corrupt(void **state)
{
    (void)state;
    history *h = make(10, 10);
    char buf[BODY_CAP];
    size_t len;
    /* confirmed as 1, delivered as 2 */
    uint64_t moved = attempt(h, buf, &len);
    history_confirm(h, moved, 1);
    deliver_own(h, moved, 2, 1);
    /* two messages confirmed with one id */
    uint64_t twin_a = attempt(h, buf, &len), twin_b = attempt(h, buf, &len);
    history_confirm(h, twin_a, 5);
    history_confirm(h, twin_b, 5);
    deliver_own(h, twin_a, 5, 1);
    deliver_own(h, twin_b, 5, 1);
    /* an unreadable body delivered under a confirmed message's id */
    uint64_t garbled = attempt(h, buf, &len);
    history_confirm(h, garbled, 9);
    memset(buf, 'x', len);
    history_deliver(h, 9, buf, len, 1);
    assert_int_equal(history_class_of(h, moved), HISTORY_CORRUPT);
    assert_int_equal(history_class_of(h, twin_a), HISTORY_CORRUPT);
    assert_int_equal(history_class_of(h, twin_b), HISTORY_CORRUPT);
    assert_int_equal(history_class_of(h, garbled), HISTORY_CORRUPT);
    history_report r = classify(h);
    assert_int_equal(r.corrupt, 4);
    assert_int_equal(r.unexpected, 0); /* the garbled delivery is counted once, as corrupt */
    assert_int_equal(r.lost, 0);
    history_destroy(&h);
}

static void two_nodes_confirming_in_one_epoch_is_a_split(void **state)
{
    (void)state;
    history *h = make(10, 9);
    char buf[BODY_CAP];
    size_t len;
    uint64_t m[5];
    for (int i = 0; i < 5; i++)
        m[i] = attempt(h, buf, &len);
    history_confirm_by(h, m[0], 1, 1, "n1");
    history_confirm_by(h, m[1], 2, 1, "n1");
    history_confirm_by(h, m[2], 3, 2, "n2"); /* a failover: the next epoch, another node */
    history_confirm_by(h, m[3], 4, 0, "");   /* no epoch said: not counted */
    for (int i = 0; i < 4; i++)
        deliver_own(h, m[i], (uint64_t)i + 1, 1);
    history_report r = classify(h);
    assert_int_equal(r.nby, 2);
    assert_string_equal(r.by[0].node, "n1");
    assert_int_equal(r.by[0].epoch, 1);
    assert_int_equal(r.by[0].confirmed, 2);
    assert_string_equal(r.by[1].node, "n2");
    assert_int_equal(r.by[1].epoch, 2);
    assert_int_equal(r.split_epochs, 0);
    assert_int_equal(r.confirmed, 4);
    assert_int_equal(history_bad(&r), 0);
    history_confirm_by(h, m[4], 5, 2, "n1"); /* n1 confirming in n2's epoch: two primaries */
    deliver_own(h, m[4], 5, 1);
    r = classify(h);
    assert_int_equal(r.split_epochs, 1);
    assert_int_equal(history_bad(&r), 1);
    char out[1024] = "";
    FILE *f = fmemopen(out, sizeof out, "w");
    assert_non_null(f);
    history_print(&r, "t: ", f);
    fclose(f);
    assert_non_null(strstr(out, "t: confirmed by: n1 in epoch 1 (2), n2 in epoch 2 (1), n1 in epoch 2 (1); split epochs 1"));
    history_destroy(&h);
}

static void a_full_history_refuses_attempts_and_says_so(void **state)
{
    (void)state;
    history *h = make(2, 11);
    char buf[BODY_CAP];
    size_t len;
    uint64_t m;
    attempt(h, buf, &len);
    attempt(h, buf, &len);
    assert_int_equal(history_attempt(h, &m, buf, sizeof buf, &len), -1);
    history_report r = classify(h);
    assert_true(r.full);
    assert_int_equal(r.attempted, 2);
    history_destroy(&h);
}

/* ---- many threads ---- */

enum { THREADS = 4, PER_THREAD = 20000 };

typedef struct worker {
    history *h;
    unsigned seed;
    uint64_t msgs[PER_THREAD];
} worker;

static void *produce(void *arg)
{
    worker *w = arg;
    char buf[BODY_CAP];
    size_t len;
    for (int i = 0; i < PER_THREAD; i++) {
        if (history_attempt(w->h, &w->msgs[i], buf, sizeof buf, &len) != 0)
            return NULL;
        /* the id is a function of the number, as a broker's would be unique */
        if (rand_r(&w->seed) % 10)
            history_confirm(w->h, w->msgs[i], w->msgs[i] + 1);
    }
    return NULL;
}

static void *consume(void *arg)
{
    worker *w = arg;
    char buf[BODY_CAP];
    for (int i = 0; i < PER_THREAD; i++) {
        size_t len = history_body(w->h, w->msgs[i], buf, sizeof buf);
        history_deliver(w->h, w->msgs[i] + 1, buf, len, 1);
        if (rand_r(&w->seed) % 50 == 0)
            history_deliver(w->h, w->msgs[i] + 1, buf, len, 2);
        history_ack(w->h, w->msgs[i] + 1);
    }
    return NULL;
}

static void many_threads_record_one_consistent_history(void **state)
{
    (void)state;
    history *h = make(THREADS * PER_THREAD, 12);
    static worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].h = h;
        w[i].seed = th_seed() + (unsigned)i;
        assert_int_equal(pthread_create(&t[i], NULL, produce, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(history_backlog(h), THREADS * PER_THREAD);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, consume, &w[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    history_report r = classify(h);
    assert_int_equal(r.attempted, THREADS * PER_THREAD);
    assert_int_equal(r.delivered, THREADS * PER_THREAD);
    assert_int_equal(r.ok + r.unconfirmed_delivered, THREADS * PER_THREAD);
    assert_int_equal(r.ok, r.confirmed);
    assert_true(r.duplicated > 0);
    assert_int_equal(r.acked, THREADS * PER_THREAD);
    assert_int_equal(history_backlog(h), 0);
    assert_int_equal(history_bad(&r), 0);
    history_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(bodies_are_unique_deterministic_and_sized, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(confirmed_and_delivered_once_is_ok, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(confirmed_never_delivered_is_lost, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(delivered_twice_is_duplicated_and_allowed, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(unconfirmed_publishes_are_never_held_against_the_broker, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(delivery_recorded_before_its_confirmation_is_ok, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(deliveries_of_nothing_attempted_are_unexpected, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(refused_then_delivered_is_unexpected, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(changed_bytes_are_corrupt, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(mixed_up_ids_are_corrupt, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(two_nodes_confirming_in_one_epoch_is_a_split, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_full_history_refuses_attempts_and_says_so, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(many_threads_record_one_consistent_history, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("history", tests, NULL, NULL);
}
