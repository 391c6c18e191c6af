/*
 * test_rl.c - GCRA buckets with a hand clock: spacing, bursts, the
 * conformance bound over every window, live rate changes without a burst,
 * pauses that resume without one, and costs (one above the burst goes
 * when the bucket is full and leaves it in debt; the bound rate*tau +
 * max(burst, largest cost) in every window); windows of a count per
 * period, and several of them in series; a loop that wakes late for its
 * slots losing none of the rate with rl_take_late, inside the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
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
    rl_take(&b, 10, 0);
    assert_false(rl_allows(&b, 91, 0)); /* 90 tokens left */
    assert_true(rl_allows(&b, 90, 0));
    rl_take(&b, 90, 0);
    assert_false(rl_allows(&b, 10, 0));
    assert_true(rl_next_ns(&b, 10, 0) == 500000); /* 10 units at 50 us each */
    assert_true(rl_allows(&b, 1, UINT64_MAX / 2));
    rl_take(&b, UINT64_MAX, 0); /* saturates, never wraps */
    assert_false(rl_allows(&b, 1, UINT64_MAX / 2));
}

/* A cost above the burst goes when the bucket is full, and the bucket owes
 * the rest: the next unit waits until the whole cost is paid. Without that
 * such a message would never go, and would hold everything behind it. */
static void cost_above_the_burst_goes_into_debt(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 100 * 1000, 1, 0); /* 100/s, burst 1: 10 ms a unit */
    assert_true(rl_allows(&b, 2, 0)); /* full: cost 2 goes at once */
    rl_take(&b, 2, 0);
    assert_true(b.tat_ns == 20 * MS); /* TAT advanced by the whole cost */
    assert_false(rl_allows(&b, 1, 19 * MS));
    assert_true(rl_next_ns(&b, 1, 0) == 20 * MS); /* the debt paid: one unit */
    assert_true(rl_allows(&b, 1, 20 * MS));
    /* in debt (not full), a cost above the burst waits for a full bucket */
    rl_take(&b, 1, 20 * MS);
    assert_false(rl_allows(&b, 5, 25 * MS));
    assert_true(rl_next_ns(&b, 5, 25 * MS) == 30 * MS);
    assert_true(rl_allows(&b, 5, 30 * MS));
    /* a burst lowered under a waiting cost strands nothing: it goes when full */
    rl_bucket c = {0};
    rl_set(&c, 10 * 1000, 50, 0); /* 10/s, burst 50 */
    rl_take(&c, 50, 0);
    rl_set(&c, 10 * 1000, 1, 0); /* burst 1 now; a cost-40 message waits */
    assert_false(rl_allows(&c, 40, 4 * S));
    assert_true(rl_next_ns(&c, 40, 0) == 5 * S); /* the 50 owed, paid at 10/s */
    assert_true(rl_allows(&c, 40, 5 * S));
    /* a burst of 3 with costs of 7: the full bucket lets 7 go, then 0.7 s */
    rl_bucket d = {0};
    rl_set(&d, 10 * 1000, 3, 0);
    rl_take(&d, 7, 0);
    assert_true(rl_next_ns(&d, 7, 0) == 700 * MS);
    assert_true(rl_next_ns(&d, 1, 0) == 500 * MS); /* a unit fits two tokens early */
}

/* A greedy sender of mixed costs, some above the burst: in every window tau
 * at most rate*tau + max(burst, the largest cost), and it keeps the rate. */
static void debt_bound_in_every_window(void **state)
{
    (void)state;
    enum { N = 4000 };
    uint64_t *t = calloc(N, sizeof *t), *c = calloc(N, sizeof *c);
    assert_non_null(t);
    assert_non_null(c);
    rl_bucket b = {0};
    rl_set(&b, 200 * 1000, 3, 0); /* 200 units/s, burst 3 */
    uint64_t now = 0, units = 0, seed = 7;
    for (int i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        c[i] = 1 + (seed >> 33) % 9; /* 1..9: most above the burst */
        now = rl_next_ns(&b, c[i], now);
        rl_take(&b, c[i], now);
        t[i] = now;
        units += c[i];
    }
    const uint64_t windows[] = {10 * MS, 100 * MS, S, 10 * S};
    for (size_t w = 0; w < 4; w++) {
        uint64_t in = 0;
        for (size_t i = 0, j = 0; i < N; i++) {
            in += c[i];
            while (t[i] - t[j] > windows[w])
                in -= c[j++];
            assert_true(in <= 200 * windows[w] / S + 9); /* max(3, 9) */
        }
    }
    /* the rate is kept: the units took no longer than units / rate */
    assert_true(t[N - 1] <= units * 5 * MS);
    free(t);
    free(c);
}

static void fractional_rates(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_set(&b, 500, 1, 0); /* 0.5/s */
    rl_take(&b, 1, 0);
    assert_true(rl_next_ns(&b, 1, 0) == 2 * S);
}

/* most_in returns the most of t[0..n) (sorted) in any closed window of tau. */
static uint64_t most_in(const uint64_t *t, size_t n, uint64_t tau)
{
    uint64_t best = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        while (t[i] - t[j] > tau)
            j++;
        best = i - j + 1 > best ? i - j + 1 : best;
    }
    return best;
}

static void a_window_is_count_per_period(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_window w = {500 * 1000, 60000, 1}; /* 500/min: exactly 120 ms a unit */
    rl_set_window(&b, &w, 0);
    assert_true(b.interval_ns == 120 * MS);
    assert_true(rl_window_rate_milli(&w) == 8333);
    rl_window ten = {8 * 1000, 10000, 8}; /* 8/10s, burst 8 */
    rl_set_window(&b, &ten, 0);
    assert_true(b.interval_ns == 1250 * MS);
    rl_window second = {7 * 1000, 1000, 3};
    rl_bucket a = {0}, c = {0};
    rl_set_window(&a, &second, 0);
    rl_set(&c, 7 * 1000, 3, 0);
    assert_true(a.interval_ns == c.interval_ns && a.burst == c.burst); /* per second: as rl_set */
}

/* A change of a long window carries its debt exactly (its intervals are
 * hours: their products overflow 64 bits). */
static void long_window_change_carries_debt(void **state)
{
    (void)state;
    rl_bucket b = {0};
    rl_window two = {2 * 1000, 86400000, 1}, four = {4 * 1000, 86400000, 1}; /* 2/d, then 4/d */
    rl_set_window(&b, &two, 0);
    rl_take(&b, 1, 0); /* 12 h of debt */
    rl_set_window(&b, &four, S);
    /* 43,199 s owed at 12 h a unit become 21,599.5 s at 6 h a unit */
    assert_true(rl_next_ns(&b, 1, S) == 21600 * S + 500 * MS);
    assert_true(rl_tokens_milli(&b, 21600 * S + 500 * MS) == 1000);
}

/* Two windows in series, 5/s burst 1 and 8/10s burst 8, a greedy sender:
 * the exact release times, every window's bound, and neither window alone. */
static void windows_in_series_obey_both(void **state)
{
    (void)state;
    enum { N = 40 };
    rl_window w[2] = {{5 * 1000, 1000, 1}, {8 * 1000, 10000, 8}};
    rl_bucket b[2] = {{0}, {0}};
    rl_set_window(&b[0], &w[0], 0);
    rl_set_window(&b[1], &w[1], 0);
    uint64_t t[N], now = 0;
    for (int i = 0; i < N; i++) {
        uint64_t retry = 0;
        if (!rl_series_allows(b, 2, 1, now, &retry)) {
            assert_true(retry > now);
            /* the retry is the latest window's: all admit then, none before */
            assert_true(rl_series_allows(b, 2, 1, retry, &retry));
            assert_false(rl_allows(&b[0], 1, retry - 1) && rl_allows(&b[1], 1, retry - 1));
            now = retry;
        }
        rl_series_take(b, 2, 1, now);
        t[i] = now;
    }
    /* the 5/s window paces the first nine (the 8/10s burst lets them
     * through), then 8/10s holds: 1.25 s apart */
    static const uint64_t first_ms[] = {0, 200, 400, 600, 800, 1000, 1200, 1400, 1600, 2500, 3750, 5000};
    for (size_t i = 0; i < sizeof first_ms / sizeof first_ms[0]; i++)
        assert_true(t[i] == first_ms[i] * MS);
    const uint64_t taus[] = {100 * MS, S, 3 * S, 10 * S, 30 * S};
    for (size_t k = 0; k < 5; k++) {
        uint64_t most = most_in(t, N, taus[k]);
        uint64_t bound5 = 5 * taus[k] / S + 1, bound8 = 8 * taus[k] / (10 * S) + 8;
        assert_true(most <= bound5 && most <= bound8);
    }
    /* neither alone: 8/10s alone would pass 8 in 100 ms, 5/s alone 16 in 3 s */
    assert_true(most_in(t, N, 100 * MS) < 8 && most_in(t, N, 3 * S) < 16);
    assert_true(most_in(t, N, 3 * S) == 10); /* and 8/10s's bound, 10.4, is met */
}

/* late_loop releases n units from a burst-1 bucket at rate_milli the way
 * dispatch does: it wakes for the bucket's next slot (rl_next_ns) late by
 * a random 0..max_late_ns, and takes with rl_take_late (late != 0) or
 * rl_take. t[] gets the release times. */
static void late_loop(uint64_t *t, size_t n, uint64_t rate_milli, uint64_t max_late_ns, int late)
{
    rl_bucket b = {0};
    rl_set(&b, rate_milli, 1, 0);
    uint64_t now = 0;
    for (size_t i = 0; i < n; i++) {
        now = rl_next_ns(&b, 1, now) + (max_late_ns ? (uint64_t)rand() % (max_late_ns + 1) : 0);
        late ? rl_take_late(&b, 1, now) : rl_take(&b, 1, now);
        t[i] = now;
    }
}

/* A loop that wakes up to T/2 late for every slot (here 1,900/s, as a
 * loaded machine's dispatch does: the slot is 526 us, the wake 0..263 us
 * late) loses none of the rate with rl_take_late, where rl_take loses the
 * mean lateness on every release; the bound holds in every closed window
 * of a whole number of intervals (rate*tau + burst), in any window it is
 * at most rate*(tau + T/2) + burst, and no two releases are closer than
 * T/2. Lateness beyond T/2 costs only its excess. */
static void late_wakes_lose_no_slot(void **state)
{
    (void)state;
    srand(th_seed()); /* printed; SLUICE_SEED replays it */
    enum { N = 19000 }; /* 10 s at 1,900/s */
    const uint64_t rate = 1900, T = (S + rate / 2) / rate;
    uint64_t *t = calloc(N, sizeof *t);
    assert_non_null(t);
    late_loop(t, N, rate * 1000, T / 2, 0);
    double strict = (double)(N - 1) * S / (double)(t[N - 1] - t[0]);
    late_loop(t, N, rate * 1000, T / 2, 1);
    double kept = (double)(N - 1) * S / (double)(t[N - 1] - t[0]);
    print_message("1,900/s, woken 0..T/2 late: %.1f/s charged from now, %.1f/s from the slot\n", strict, kept);
    assert_true(strict < 0.85 * rate);           /* a quarter slot a release, lost */
    assert_true(kept >= 0.999 * rate && kept <= 1.0001 * rate);
    const uint64_t taus[] = {100 * MS, S, 10 * S}; /* whole intervals: 190, 1,900, 19,000 of them */
    for (size_t k = 0; k < 3; k++)
        assert_true(most_in(t, N, taus[k]) <= rate * taus[k] / S + 1);
    for (uint64_t tau = T / 4; tau < 40 * T; tau += T / 4) /* any window: at most rate*(tau + T/2) + 1 */
        assert_true((double)most_in(t, N, tau) <= (double)rate * (double)(tau + T / 2) / S + 1);
    for (size_t i = 1; i < N; i++)
        assert_true(t[i] - t[i - 1] >= T / 2);
    /* woken up to 1.5 T late: up to T late, only what passes T/2 is lost;
     * later, the bucket counts as idle and the whole lateness is lost (a
     * mean of T/2 a release: two thirds of the rate) */
    late_loop(t, N, rate * 1000, 3 * T / 2, 1);
    double over = (double)(N - 1) * S / (double)(t[N - 1] - t[0]);
    assert_true(over >= 0.64 * rate && over <= 0.69 * rate);
    for (size_t k = 0; k < 3; k++)
        assert_true(most_in(t, N, taus[k]) <= rate * taus[k] / S + 1);
    free(t);
}

/* On time, and after an idle spell (more than an interval past its slot),
 * rl_take_late charges as rl_take does: from the slot, and from now. */
static void late_take_on_time_is_a_take(void **state)
{
    (void)state;
    rl_bucket a = {0}, b = {0};
    rl_set(&a, 100 * 1000, 1, 0);
    rl_set(&b, 100 * 1000, 1, 0);
    for (uint64_t now = 0; now < S; now = rl_next_ns(&a, 1, now)) {
        rl_take(&a, 1, now);
        rl_take_late(&b, 1, now);
        assert_true(a.tat_ns == b.tat_ns);
    }
    rl_take_late(&b, 1, 5 * S); /* idle for seconds: from 5 s, as rl_take */
    assert_true(b.tat_ns == 5 * S + 10 * MS);
    assert_true(rl_next_ns(&b, 1, 5 * S) == 5 * S + 10 * MS);
    rl_take_late(&b, 1, 5 * S + 14 * MS); /* 4 ms late for its slot: from 5 s + 10 ms */
    assert_true(b.tat_ns == 5 * S + 20 * MS);
    rl_take_late(&b, 1, 5 * S + 28 * MS); /* 8 ms late: from now less T/2 */
    assert_true(b.tat_ns == 5 * S + 33 * MS);
    rl_bucket u = {0};
    rl_take_late(&u, 1, S); /* unlimited: nothing */
    assert_true(u.tat_ns == 0);
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
        cmocka_unit_test(cost_above_the_burst_goes_into_debt),
        cmocka_unit_test(debt_bound_in_every_window),
        cmocka_unit_test(fractional_rates),
        cmocka_unit_test(a_window_is_count_per_period),
        cmocka_unit_test(windows_in_series_obey_both),
        cmocka_unit_test(long_window_change_carries_debt),
        cmocka_unit_test(late_wakes_lose_no_slot),
        cmocka_unit_test(late_take_on_time_is_a_take),
    };
    return cmocka_run_group_tests_name("rl", tests, NULL, NULL);
}
