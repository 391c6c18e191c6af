/*
 * test_sink_limit.c - sluice-sink's three limiters (tools/sink/sink_limit.c)
 * and its per-key table (tools/sink/sink_keys.c) with a hand clock, no
 * program run; the program itself is tested in tests/e2e/test_sink.c.
 *
 * The limiter tests pin exact counts: GCRA spaces requests 1/rate apart with
 * burst 1 and lets an idle limiter pass `burst` back to back; a fixed window
 * admits `rate` per aligned second (and so up to 2 * rate across a window
 * edge); the sliding window is checked against a brute-force count of every
 * trailing second over seeded random arrivals, both ways (no admission over
 * the limit, no refusal under it); a limit changed mid-stream keeps what was
 * admitted. The per-key table limits each key alone and gives back a token
 * the global limit refused. Every test runs under alarm(60 s)
 * (th_timeout_arm); the random test prints its seed (th_seed), and
 * SLUICE_SEED replays it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sink_keys.h"
#include "sink_limit.h"
#include "harness.h"
#include "sluice_errors.h"

#define MS 1000000ull
#define S 1000000000ull

/* admitted_between counts admissions of requests sent every step_ns from
 * from_ns (inclusive) to to_ns (exclusive). */
static unsigned admitted_between(sink_limit *l, uint64_t from_ns, uint64_t to_ns, uint64_t step_ns)
{
    unsigned n = 0;
    for (uint64_t t = from_ns; t < to_ns; t += step_ns)
        n += (unsigned)sink_limit_take(l, t, NULL);
    return n;
}

/* ---- limiters, hand clock ---- */

static void gcra_with_burst_one_spaces_requests_one_interval_apart(void **state)
{
    (void)state;
    sink_limit l;
    uint64_t wait_ns = 0, t0 = 5 * S;
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_GCRA, 10, 1, t0), SL_OK);
    assert_int_equal(sink_limit_take(&l, t0, &wait_ns), 1);
    assert_int_equal(sink_limit_take(&l, t0, &wait_ns), 0);
    assert_true(wait_ns == 100 * MS);
    assert_int_equal(sink_limit_take(&l, t0 + 100 * MS - 1, &wait_ns), 0);
    assert_true(wait_ns == 1);
    assert_int_equal(sink_limit_take(&l, t0 + 100 * MS, &wait_ns), 1);
    /* a request every ms for 10 s: one per 100 ms (at 200, 300 .. 10100 ms) */
    assert_int_equal(admitted_between(&l, t0 + 101 * MS, t0 + 10 * S + 101 * MS, MS), 100);
    sink_limit_fini(&l);
}

static void gcra_burst_passes_back_to_back_then_the_rate(void **state)
{
    (void)state;
    sink_limit l;
    uint64_t wait_ns = 0;
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_GCRA, 5, 7, 0), SL_OK);
    for (int i = 0; i < 7; i++)
        assert_int_equal(sink_limit_take(&l, 0, &wait_ns), 1);
    assert_int_equal(sink_limit_take(&l, 0, &wait_ns), 0);
    assert_true(wait_ns == 200 * MS);
    assert_int_equal(sink_limit_retry_after_s(wait_ns), 1);
    /* then one every 200 ms: at 200, 400, ... 9800 ms */
    assert_int_equal(admitted_between(&l, 1, 10 * S, MS), 49);
    /* a long idle refills the whole burst, not more: 20 at one instant pass 7 */
    unsigned passed = 0;
    for (int i = 0; i < 20; i++)
        passed += (unsigned)sink_limit_take(&l, 20 * S, NULL);
    assert_int_equal(passed, 7);
    sink_limit_fini(&l);
}

static void fixed_window_admits_rate_per_aligned_second(void **state)
{
    (void)state;
    sink_limit l;
    uint64_t wait_ns = 0, t0 = 1234567;
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_FIXED_WINDOW, 3, 1000, t0), SL_OK);
    assert_int_equal(admitted_between(&l, t0, t0 + S, MS), 3); /* burst ignored */
    assert_int_equal(sink_limit_take(&l, t0 + 400 * MS, &wait_ns), 0);
    assert_true(wait_ns == 600 * MS); /* until the window ends */
    assert_int_equal(admitted_between(&l, t0 + S, t0 + 2 * S, MS), 3);
    /* quiet, then 3 at the very end of a window and 3 at the start of the
     * next: fixed windows allow 2 * rate across an edge */
    assert_int_equal(admitted_between(&l, t0 + 3 * S - 3, t0 + 3 * S, 1), 3);
    assert_int_equal(admitted_between(&l, t0 + 3 * S, t0 + 3 * S + 10, 1), 3);
    /* over 10 windows, exactly 3 each */
    for (uint64_t w = 5; w < 15; w++)
        assert_int_equal(admitted_between(&l, t0 + w * S, t0 + (w + 1) * S, 7 * MS), 3);
    sink_limit_fini(&l);
}

static void sliding_window_never_exceeds_rate_in_any_trailing_second(void **state)
{
    (void)state;
    enum { RATE = 7, N = 4000 };
    sink_limit l;
    uint64_t wait_ns;
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_SLIDING_WINDOW, RATE, 1, 0), SL_OK);
    /* the edge first: the oldest admission exactly 1 s old frees its slot */
    assert_int_equal(admitted_between(&l, 0, RATE, 1), RATE);
    assert_int_equal(sink_limit_take(&l, S - 1, &wait_ns), 0);
    assert_true(wait_ns == 1);
    assert_int_equal(sink_limit_take(&l, S, &wait_ns), 1);
    assert_int_equal(sink_limit_take(&l, S, &wait_ns), 0);
    sink_limit_fini(&l);

    unsigned seed = th_seed();
    srand(seed);
    static uint64_t admitted[N];
    unsigned n_admitted = 0, refused = 0;
    uint64_t t = 0;
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_SLIDING_WINDOW, RATE, 1, 0), SL_OK);
    for (int i = 0; i < N; i++) {
        t += (uint64_t)(rand() % 200) * MS + (uint64_t)(rand() % 1000);
        unsigned in_window = 0; /* admissions in (t - 1 s, t], brute force */
        for (unsigned j = n_admitted; j > 0 && admitted[j - 1] + S > t; j--)
            in_window++;
        int ok = sink_limit_take(&l, t, &wait_ns);
        assert_int_equal(ok, in_window < RATE);
        if (ok) {
            admitted[n_admitted++] = t;
        } else {
            assert_true(wait_ns == admitted[n_admitted - RATE] + S - t && wait_ns > 0);
            refused++;
        }
    }
    assert_true(n_admitted > 100 && refused > 100); /* both sides were exercised */
    sink_limit_fini(&l);
}

static void rate_change_mid_stream_keeps_what_was_admitted(void **state)
{
    (void)state;
    sink_limit l;
    uint64_t wait_ns;
    /* gcra: half an interval of debt at 10/s is half an interval at 1/s */
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_GCRA, 10, 1, 0), SL_OK);
    assert_int_equal(sink_limit_take(&l, 0, NULL), 1);
    assert_int_equal(sink_limit_set(&l, 1, 1, 50 * MS), SL_OK);
    assert_int_equal(sink_limit_take(&l, 549 * MS, &wait_ns), 0);
    assert_true(wait_ns == 1 * MS);
    assert_int_equal(sink_limit_take(&l, 550 * MS, NULL), 1);
    assert_int_equal(admitted_between(&l, 551 * MS, 10 * S + 550 * MS + 1, MS), 10);
    /* raised again: the new spacing applies at once */
    assert_int_equal(sink_limit_set(&l, 1000, 1, 20 * S), SL_OK);
    assert_int_equal(admitted_between(&l, 20 * S, 21 * S, 100000), 1000);
    assert_int_equal(sink_limit_set(&l, 0, 1, 21 * S), SL_EINVAL);
    assert_int_equal(l.rate_per_s, 1000);
    sink_limit_fini(&l);

    /* fixed window: the count of the current window stays */
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_FIXED_WINDOW, 10, 1, 0), SL_OK);
    assert_int_equal(admitted_between(&l, 0, 6, 1), 6);
    assert_int_equal(sink_limit_set(&l, 4, 1, 10), SL_OK);
    assert_int_equal(admitted_between(&l, 10, 500 * MS, MS), 0);
    assert_int_equal(sink_limit_set(&l, 8, 1, 500 * MS), SL_OK);
    assert_int_equal(admitted_between(&l, 500 * MS, S, MS), 2);
    assert_int_equal(admitted_between(&l, S, 2 * S, MS), 8);
    sink_limit_fini(&l);

    /* sliding window: shrinking keeps the newest, growing keeps them all */
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_SLIDING_WINDOW, 5, 1, 0), SL_OK);
    assert_int_equal(admitted_between(&l, 0, 500 * MS, 100 * MS), 5); /* 0..400 ms */
    assert_int_equal(sink_limit_set(&l, 2, 1, 500 * MS), SL_OK);
    assert_int_equal(sink_limit_take(&l, 1250 * MS, &wait_ns), 0); /* 300, 400 ms held */
    assert_true(wait_ns == 50 * MS);
    assert_int_equal(sink_limit_take(&l, 1300 * MS, NULL), 1); /* now 400, 1300 ms */
    assert_int_equal(sink_limit_set(&l, 6, 1, 1300 * MS), SL_OK);
    assert_int_equal(admitted_between(&l, 1300 * MS, 1300 * MS + 10, 1), 4); /* 2 held + 4 = 6 */
    sink_limit_fini(&l);
}

static void limits_out_of_range_are_refused_and_names_round_trip(void **state)
{
    (void)state;
    sink_limit l;
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_GCRA, 0, 1, 0), SL_EINVAL);
    sink_limit_fini(&l);
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_GCRA, 1, 0, 0), SL_EINVAL);
    assert_int_equal(sink_limit_init(&l, SINK_LIMIT_SLIDING_WINDOW, SINK_LIMIT_MAX_RATE_PER_S + 1, 1, 0),
                     SL_EINVAL);
    for (int m = SINK_LIMIT_GCRA; m <= SINK_LIMIT_SLIDING_WINDOW; m++) {
        sink_limit_mode back;
        assert_int_equal(sink_limit_mode_parse(sink_limit_mode_name((sink_limit_mode)m), &back), SL_OK);
        assert_int_equal(back, m);
    }
    sink_limit_mode dummy;
    assert_int_equal(sink_limit_mode_parse("token-bucket", &dummy), SL_EINVAL);
    assert_int_equal(sink_limit_retry_after_s(0), 1);
    assert_int_equal(sink_limit_retry_after_s(1), 1);
    assert_int_equal(sink_limit_retry_after_s(S), 1);
    assert_int_equal(sink_limit_retry_after_s(S + 1), 2);
}

/* ---- the per-key table, hand clock ---- */

/* Two keys on one table: the one sent too fast is refused, the other is
 * not; a token given back is there again; the path rule and the escape. */
static void keys_limit_each_key_alone(void **state)
{
    (void)state;
    sink_keys t;
    assert_int_equal(sink_keys_init(&t, 0, 1), SL_EINVAL);
    sink_keys_fini(&t);
    assert_int_equal(sink_keys_init(&t, 10, 2), SL_OK); /* 10/s per key, burst 2 */
    uint64_t wait_ns = 0;
    unsigned a_ok = 0, b_ok = 0;
    for (uint64_t t_ns = 0; t_ns < S; t_ns += 10 * MS) /* a: 100/s for 1 s */
        a_ok += sink_keys_take(&t, "a", 1, t_ns, &wait_ns) == SINK_KEYS_ADMITTED;
    for (uint64_t t_ns = 0; t_ns < S; t_ns += 200 * MS) /* b: 5/s */
        assert_int_equal(sink_keys_take(&t, "b", 1, t_ns, NULL), SINK_KEYS_ADMITTED), b_ok++;
    assert_int_equal(a_ok, 2 + 9);  /* the burst, then one per 100 ms */
    assert_int_equal(b_ok, 5);
    assert_int_equal(t.count, 2);
    assert_int_equal(sink_keys_take(&t, "a", 1, S, &wait_ns), SINK_KEYS_ADMITTED);
    assert_int_equal(sink_keys_take(&t, "a", 1, S, &wait_ns), SINK_KEYS_REFUSED);
    assert_true(wait_ns > 0 && wait_ns <= 100 * MS);
    sink_keys_give_back(&t, "a", 1);                   /* the global limit refused it */
    assert_int_equal(sink_keys_take(&t, "a", 1, S, NULL), SINK_KEYS_ADMITTED);
    /* a raised limit applies to every key at once */
    assert_int_equal(sink_keys_set(&t, 1000, 5, S), SL_OK);
    assert_int_equal(sink_keys_take(&t, "a", 1, S + 20 * MS, NULL), SINK_KEYS_ADMITTED);
    sink_keys_fini(&t);

    const char *key;
    size_t n = sink_keys_from_path("/orders/acme/", &key);
    assert_int_equal(n, 4);
    assert_memory_equal(key, "acme", 4);
    assert_int_equal(sink_keys_from_path("/", &key), 0);
    char text[SINK_KEYS_TEXT_BYTES];
    sink_keys_escape("a b\\", 4, text);
    assert_string_equal(text, "a\\x20b\\\\");
    sink_keys_escape("", 0, text);
    assert_string_equal(text, "-");
    sink_keys_escape("-", 1, text);
    assert_string_equal(text, "\\x2d");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(gcra_with_burst_one_spaces_requests_one_interval_apart, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(gcra_burst_passes_back_to_back_then_the_rate, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(fixed_window_admits_rate_per_aligned_second, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(sliding_window_never_exceeds_rate_in_any_trailing_second, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(rate_change_mid_stream_keeps_what_was_admitted, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(limits_out_of_range_are_refused_and_names_round_trip, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(keys_limit_each_key_alone, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("sink_limit", tests, NULL, NULL);
}
