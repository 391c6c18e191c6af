/*
 * test_rl.c - GCRA buckets with a hand clock: spacing, bursts, the
 * conformance bound over every window, live rate changes without a burst,
 * pauses that resume without one, and costs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rl.h"

#define MS 1000000ULL
#define S 1000000000ULL

static void burst_one_spaces_evenly(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 100 * 1000, 1, 0); /* 100/s: one every 10 ms */
    assert_true(rl_allows(&b, 1, 0));
    rl_take(&b, 1, 0);
    assert_false(rl_allows(&b, 1, 9 * MS));
    assert_true(rl_next_ns(&b, 1, 0) == 10 * MS);
    assert_true(rl_allows(&b, 1, 10 * MS));
}

static void burst_allows_b_back_to_back(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 20 * 1000, 5, 0);
    int n = 0;
    while (rl_allows(&b, 1, S)) {
        rl_take(&b, 1, S);
        n++;
    }
    assert_int_equal(n, 5);
    assert_true(rl_tokens_milli(&b, S) == 0);
    assert_true(rl_tokens_milli(&b, S + 50 * MS) == 1000); /* one refilled in 50 ms */
}

/* Greedy sender: in every window tau, sent <= rate*tau + burst. */
static void conformance_in_every_window(void **state)
{
    (void)state;
    enum { N = 3000 };
    uint64_t *t = calloc(N, sizeof *t);
    rl_bucket b = {0};
    rl_set(&b, 500 * 1000, 7, 0);
    uint64_t now = 0;
    for (int i = 0; i < N; i++) {
        now = rl_next_ns(&b, 1, now);
        rl_take(&b, 1, now);
        t[i] = now;
    }
    const uint64_t windows[] = {100 * MS, S, 10 * S};
    for (size_t w = 0; w < 3; w++) {
        size_t j = 0;
        for (size_t i = 0; i < N; i++) {
            while (t[i] - t[j] >= windows[w])
                j++;
            uint64_t in_window = i - j + 1;
            uint64_t bound = 500 * windows[w] / S + 7;
            assert_true(in_window <= bound);
        }
    }
    /* and it uses the rate fully: 3000 sends take (3000 - 7) / 500 s */
    assert_true(t[N - 1] >= (N - 7) * 2 * MS && t[N - 1] <= (N - 6) * 2 * MS);
    free(t);
}

static void rate_change_never_bursts(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 10 * 1000, 1, 0); /* 10/s */
    uint64_t now = 0;
    for (int i = 0; i < 5; i++) {
        now = rl_next_ns(&b, 1, now);
        rl_take(&b, 1, now); /* greedy: TAT runs 100 ms ahead */
    }
    rl_set(&b, 1000 * 1000, 1, now); /* raise to 1000/s */
    /* the debt of 100 ms at 10/s becomes 1 ms at 1000/s: no pile of tokens */
    assert_false(rl_allows(&b, 1, now));
    assert_true(rl_next_ns(&b, 1, now) == now + 1 * MS);
    rl_set(&b, 1 * 1000, 1, now); /* lower to 1/s: the 1 ms debt becomes 1 s */
    assert_true(rl_next_ns(&b, 1, now) == now + S);
    rl_set(&b, 0, 1, now); /* unlimited */
    assert_true(rl_allows(&b, 1000000, now));
}

static void pause_resumes_without_burst(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 100 * 1000, 10, 0);
    rl_pause_until(&b, 5 * S);
    assert_false(rl_allows(&b, 1, 5 * S - 1));
    assert_true(rl_allows(&b, 1, 5 * S));
    rl_take(&b, 1, 5 * S);
    assert_false(rl_allows(&b, 1, 5 * S)); /* one at a time after a pause */
    assert_true(rl_next_ns(&b, 1, 5 * S) == 5 * S + 10 * MS);
}

static void cost_is_charged_in_units(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 20000 * 1000ULL, 100, 0); /* 20,000 units/s, burst 100 */
    assert_true(rl_allows(&b, 100, 0));
    assert_false(rl_allows(&b, 101, 0));
    rl_take(&b, 10, 0);
    rl_take(&b, 90, 0);
    assert_false(rl_allows(&b, 10, 0));
    assert_true(rl_next_ns(&b, 10, 0) == 500000); /* 10 units at 50 us each */
    assert_true(rl_allows(&b, 1, UINT64_MAX / 2));
    rl_take(&b, UINT64_MAX, 0); /* saturates, never wraps */
    assert_false(rl_allows(&b, 1, UINT64_MAX / 2));
}

static void fractional_rates(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 500, 1, 0); /* 0.5/s */
    rl_take(&b, 1, 0);
    assert_true(rl_next_ns(&b, 1, 0) == 2 * S);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(burst_one_spaces_evenly),
        cmocka_unit_test(burst_allows_b_back_to_back),
        cmocka_unit_test(conformance_in_every_window),
        cmocka_unit_test(rate_change_never_bursts),
        cmocka_unit_test(pause_resumes_without_burst),
        cmocka_unit_test(cost_is_charged_in_units),
        cmocka_unit_test(fractional_rates),
    };
    return cmocka_run_group_tests_name("rl", tests, NULL, NULL);
}
