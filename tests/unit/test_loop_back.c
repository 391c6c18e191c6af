/*
 * test_loop_back.c - which publishers of a log record are back
 * (broker/loop_back.c), the count a record written on the loop tells its
 * gather: a publish from one of the record's publishers, received in the
 * pass after it, is theirs coming back and not one waiting (counting it as
 * both made a sequential producer's next record wait out the gather's
 * deadline); each publisher counts once, others and the endpoint a routing
 * id came in on are told apart, and past the limits nothing is told apart
 * (every publish waits, as before).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "loop_back.h"

static const uint8_t A[5] = {0, 1, 2, 3, 4}, B[5] = {0, 1, 2, 3, 5}, S[8] = {0, 0, 0, 0, 0, 0, 0, 7};

static loop_back *fresh(void)
{
    loop_back *lb = calloc(1, sizeof *lb);
    assert_non_null(lb);
    return lb;
}

static void a_sequential_producer_back_is_not_waiting(void **state)
{
    (void)state;
    loop_back *lb = fresh();
    loop_back_put(lb, 0, A, sizeof A);
    loop_back_seal(lb);  /* its record */
    loop_back_ended(lb); /* written on the loop, ended */
    loop_back_put(lb, 0, A, sizeof A); /* back already, in the same pass */
    assert_int_equal(loop_back_waiting(lb, 1), 0);
    free(lb);
}

static void others_wait_and_each_publisher_counts_once(void **state)
{
    (void)state;
    loop_back *lb = fresh();
    loop_back_put(lb, 0, A, sizeof A);
    loop_back_put(lb, 3, S, sizeof S); /* a stream connection */
    loop_back_seal(lb);
    loop_back_ended(lb);
    loop_back_put(lb, 0, B, sizeof B); /* arrived during the flush: waiting */
    loop_back_put(lb, 0, A, sizeof A); /* back */
    loop_back_put(lb, 0, A, sizeof A); /* A again: its second publish waits */
    loop_back_put(lb, 0, S, sizeof S); /* the same bytes on another endpoint: not the stream peer */
    assert_int_equal(loop_back_waiting(lb, 4), 3);
    free(lb);
}

static void nothing_counts_before_the_record_ends_or_after_it_is_told(void **state)
{
    (void)state;
    loop_back *lb = fresh();
    loop_back_put(lb, 0, A, sizeof A);
    loop_back_seal(lb);
    loop_back_put(lb, 0, A, sizeof A); /* while the record is out (a writer-thread record): the next batch's */
    loop_back_ended(lb);
    assert_int_equal(loop_back_waiting(lb, 1), 1);
    loop_back_put(lb, 0, A, sizeof A); /* told already: not counted again */
    assert_int_equal(loop_back_waiting(lb, 2), 2);
    free(lb);
}

static void past_the_limits_every_publish_waits(void **state)
{
    (void)state;
    loop_back *lb = fresh();
    uint8_t rid[5] = {0};
    for (unsigned i = 0; i <= LOOP_BACK_PEERS; i++) { /* one more than fit */
        rid[4] = (uint8_t)i;
        loop_back_put(lb, 0, rid, sizeof rid);
    }
    loop_back_seal(lb);
    loop_back_ended(lb);
    rid[4] = 0;
    loop_back_put(lb, 0, rid, sizeof rid);
    assert_int_equal(loop_back_waiting(lb, 1), 1);

    uint8_t longrid[LOOP_BACK_RID_MAX + 1];
    memset(longrid, 9, sizeof longrid);
    loop_back_put(lb, 0, longrid, sizeof longrid); /* a routing id too long to keep */
    loop_back_seal(lb);
    loop_back_ended(lb);
    loop_back_put(lb, 0, longrid, sizeof longrid);
    assert_int_equal(loop_back_waiting(lb, 1), 1);
    free(lb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_sequential_producer_back_is_not_waiting),
        cmocka_unit_test(others_wait_and_each_publisher_counts_once),
        cmocka_unit_test(nothing_counts_before_the_record_ends_or_after_it_is_told),
        cmocka_unit_test(past_the_limits_every_publish_waits),
    };
    return cmocka_run_group_tests_name("loop_back", tests, NULL, NULL);
}
