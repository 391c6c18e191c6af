/*
 * test_tmr.c - the timer heap (broker/sched/tmr.c) with a hand-advanced
 * clock: 5,000 random deadlines pop in order (ties by id), none before its
 * time, and the next deadline is reported right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tmr.h"

static void heap_pops_in_order_and_respects_limit(void **state)
{
    (void)state;
    tmr t;
    tmr_init(&t);
    srand(7);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(tmr_push(&t, (uint64_t)(rand() % 1000), (uint64_t)i), 0);
    assert_true(tmr_next(&t) <= 1);
    tmr_entry e, prev = {0, 0};
    int n = 0;
    while (tmr_pop(&t, 499, &e)) {
        assert_true(e.at <= 499);
        assert_true(e.at > prev.at || (e.at == prev.at && e.id > prev.id) || n == 0);
        prev = e;
        n++;
    }
    assert_true(tmr_next(&t) >= 500);
    while (tmr_pop(&t, TMR_NEVER, &e))
        n++;
    assert_int_equal(n, 5000);
    assert_true(tmr_next(&t) == TMR_NEVER);
    tmr_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heap_pops_in_order_and_respects_limit),
    };
    return cmocka_run_group_tests_name("tmr", tests, NULL, NULL);
}
