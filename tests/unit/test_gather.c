/*
 * test_gather.c - how long a log record waits for the rest of its batch
 * (broker/store/gather.c), with a hand-advanced clock: a record waits for the
 * clients the last one confirmed, and holds nothing until the first of
 * them is back (the gather stays armed meanwhile: a broker that dropped it
 * then split four producers into groups, 2.8 records' worth of messages
 * per 4); it ends when full or at GATHER_MAX_NS; a run-out with part of
 * the batch pauses gathering for 2, 4, ... 64 records, and a gather that
 * fills brings the pause back to 2; a gather that filled says so
 * (gather_full, which lets the loop write the record itself) until its
 * record ends, and one that ran out, was stopped or never started does not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gather.h"

enum { T0 = 1000000 };

static void waits_for_the_clients_it_confirmed(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    assert_false(gather_holds(&g, T0, 1)); /* nothing ended yet: nothing to wait for */
    gather_record_ended(&g, T0, 4, 0);     /* four producers confirmed */
    assert_int_equal(gather_deadline(&g), T0 + GATHER_MAX_NS);
    /* none back yet: nothing is held, and the gather stays */
    assert_false(gather_holds(&g, T0 + 10000, 0));
    assert_int_equal(gather_deadline(&g), T0 + GATHER_MAX_NS);
    assert_true(gather_holds(&g, T0 + 20000, 1));
    assert_true(gather_holds(&g, T0 + 30000, 3));
    assert_false(gather_holds(&g, T0 + 40000, 4)); /* full: the record goes */
    assert_int_equal(gather_deadline(&g), 0);
    assert_false(gather_holds(&g, T0 + 40001, 1)); /* and it is over */
}

static void counts_what_already_waits(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    gather_record_ended(&g, T0, 2, 3); /* 3 arrived during the flush, 2 confirmed */
    assert_true(gather_holds(&g, T0 + 1, 3));
    assert_true(gather_holds(&g, T0 + 2, 4));
    assert_false(gather_holds(&g, T0 + 3, 5));
}

static void a_record_that_confirmed_nothing_gathers_nothing(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    gather_record_ended(&g, T0, 0, 2); /* acks alone, say */
    assert_int_equal(gather_deadline(&g), 0);
    assert_false(gather_holds(&g, T0 + 1, 2));
}

static void a_run_out_pauses_doubling_until_one_fills(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    uint64_t now = T0;
    unsigned want_pause = GATHER_PAUSE_MIN;
    for (int round = 0; round < 8; round++) {
        gather_record_ended(&g, now, 2, 0);
        assert_true(gather_holds(&g, now + GATHER_MAX_NS - 1, 1));
        assert_false(gather_holds(&g, now + GATHER_MAX_NS, 1)); /* ran out with 1 of 2 */
        now += GATHER_MAX_NS;
        /* the next want_pause records start at once */
        for (unsigned r = 0; r < want_pause; r++) {
            gather_record_ended(&g, now, 2, 0);
            assert_int_equal(gather_deadline(&g), 0);
            assert_false(gather_holds(&g, now + 1, 1));
            now += 100000;
        }
        want_pause = want_pause * 2 > GATHER_PAUSE_MAX ? GATHER_PAUSE_MAX : want_pause * 2;
    }
    assert_int_equal(want_pause, GATHER_PAUSE_MAX);
    /* one that fills: the pause is back to its minimum */
    gather_record_ended(&g, now, 2, 0);
    assert_false(gather_holds(&g, now + 1, 2));
    gather_record_ended(&g, now, 2, 0);
    assert_false(gather_holds(&g, now + GATHER_MAX_NS, 1));
    for (unsigned r = 0; r < GATHER_PAUSE_MIN; r++) {
        gather_record_ended(&g, now, 2, 0);
        assert_int_equal(gather_deadline(&g), 0);
    }
    gather_record_ended(&g, now, 2, 0);
    assert_int_not_equal(gather_deadline(&g), 0);
}

static void a_gather_nobody_came_back_to_ends_without_a_pause(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    gather_record_ended(&g, T0, 3, 0);
    assert_false(gather_holds(&g, T0 + GATHER_MAX_NS, 0)); /* the producers stopped */
    assert_int_equal(gather_deadline(&g), 0);
    gather_record_ended(&g, T0 + GATHER_MAX_NS, 1, 0);
    assert_int_not_equal(gather_deadline(&g), 0); /* not paused */
}

static void a_stopped_gather_holds_nothing(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    gather_record_ended(&g, T0, 4, 0);
    gather_stop(&g); /* a forced record: what is there goes */
    assert_false(gather_holds(&g, T0 + 1, 1));
    gather_record_ended(&g, T0 + 2, 4, 0);
    assert_true(gather_holds(&g, T0 + 3, 1)); /* and no pause came of it */
}

static void a_full_gather_says_so_until_its_record_ends(void **state)
{
    (void)state;
    gather g;
    gather_init(&g);
    assert_false(gather_full(&g)); /* none yet */
    gather_record_ended(&g, T0, 4, 0);
    assert_true(gather_holds(&g, T0 + 1, 3));
    assert_false(gather_full(&g)); /* still waiting */
    assert_false(gather_holds(&g, T0 + 2, 4));
    assert_true(gather_full(&g)); /* every producer is back: nothing more will come */
    assert_false(gather_holds(&g, T0 + 3, 4));
    gather_stop(&g); /* the record starts */
    assert_true(gather_full(&g));
    gather_record_ended(&g, T0 + 4, 4, 0);
    assert_false(gather_full(&g)); /* the next gather has to fill again */
    assert_false(gather_holds(&g, T0 + 4 + GATHER_MAX_NS, 2)); /* ran out with half of it */
    assert_false(gather_full(&g));
    gather_record_ended(&g, T0 + 5 + GATHER_MAX_NS, 2, 0); /* paused: nothing gathers, nothing fills */
    assert_false(gather_holds(&g, T0 + 6 + GATHER_MAX_NS, 2));
    assert_false(gather_full(&g));
    gather_record_ended(&g, T0 + 7 + GATHER_MAX_NS, 2, 0);
    gather_stop(&g); /* a forced record before the gather filled */
    assert_false(gather_full(&g));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waits_for_the_clients_it_confirmed),
        cmocka_unit_test(counts_what_already_waits),
        cmocka_unit_test(a_record_that_confirmed_nothing_gathers_nothing),
        cmocka_unit_test(a_run_out_pauses_doubling_until_one_fills),
        cmocka_unit_test(a_gather_nobody_came_back_to_ends_without_a_pause),
        cmocka_unit_test(a_stopped_gather_holds_nothing),
        cmocka_unit_test(a_full_gather_says_so_until_its_record_ends),
    };
    return cmocka_run_group_tests_name("gather", tests, NULL, NULL);
}
