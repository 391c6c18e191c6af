/*
 * test_breaker.c - the circuit breaker with a hand clock: it trips on a
 * failure share over its window, lets one probe through after the cooldown,
 * closes on the probe's success and reopens on its failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "breaker.h"

#define S 1000000000ULL

static void trips_on_failure_share(void **state)
{
    (void)state;
    breaker b;
    breaker_init(&b, 50, 10, 5 * S);
    for (int i = 0; i < 4; i++) /* 4 failures: fewer than half a window known */
        breaker_record(&b, 1, 0);
    assert_int_equal(b.state, BREAKER_CLOSED);
    breaker_record(&b, 0, 0); /* 4 of 5 failed: over 50 % */
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(b.trips, 1);
    assert_false(breaker_allows(&b, 4 * S));
    assert_true(breaker_next_ns(&b) == 5 * S);
}

static void healthy_traffic_stays_closed(void **state)
{
    (void)state;
    breaker b;
    breaker_init(&b, 50, 10, S);
    for (int i = 0; i < 1000; i++) /* one failure in three, forever */
        breaker_record(&b, i % 3 == 0, (uint64_t)i);
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_true(breaker_allows(&b, 0));
}

static void one_probe_then_close_or_reopen(void **state)
{
    (void)state;
    breaker b;
    breaker_init(&b, 50, 4, S);
    for (int i = 0; i < 4; i++)
        breaker_record(&b, 1, 0);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_true(breaker_allows(&b, S)); /* cooldown over: half-open */
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    breaker_sent(&b);
    assert_false(breaker_allows(&b, S)); /* only one probe */
    breaker_record(&b, 1, 2 * S);      /* the probe failed */
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_false(breaker_allows(&b, 2 * S + S / 2));
    assert_true(breaker_allows(&b, 3 * S));
    breaker_sent(&b);
    breaker_record(&b, 0, 3 * S); /* the probe succeeded */
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_int_equal(b.n, 0); /* a clean slate */
    assert_int_equal(b.trips, 1);
    assert_true(b.transitions >= 5);
    assert_string_equal(breaker_name(b.state), "closed");
}

static void threshold_zero_never_opens(void **state)
{
    (void)state;
    breaker b;
    breaker_init(&b, 0, 10, S);
    for (int i = 0; i < 100; i++)
        breaker_record(&b, 1, 0);
    assert_int_equal(b.state, BREAKER_CLOSED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trips_on_failure_share),
        cmocka_unit_test(healthy_traffic_stays_closed),
        cmocka_unit_test(one_probe_then_close_or_reopen),
        cmocka_unit_test(threshold_zero_never_opens),
    };
    return cmocka_run_group_tests_name("breaker", tests, NULL, NULL);
}
