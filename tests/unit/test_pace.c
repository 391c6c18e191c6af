/*
 * test_pace.c - the consumer's pacing bucket (client/pace.c) on a hand
 * clock: exact next times, tokens taken at the moment of sending, the burst,
 * debt carried over a rate change, and the window bound (never more than
 * rate * tau + burst in any window, however the askers bunch).
 * The hold that keeps the broker's spacing (pace_lag): exact due times on
 * two unrelated clocks, the cap, a stall forgotten after two epochs; and
 * two processes sharing a sink, whose sends keep the broker's bound where
 * sending at once does not.
 * Also sl_pacer's thread-safe wrapper on the real clock, with generous
 * bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "pace.h"
#include "sluice.h"

#define MS 1000000ull
#define S  1000000000ull

/* go asks at now_ns and takes the token when it is due then; returns the
 * time pace_next answered. */
static uint64_t go(pace *p, uint32_t cost, uint64_t now_ns)
{
    uint64_t due = pace_next(p, cost, now_ns);
    if (due == now_ns)
        pace_take(p, cost, now_ns);
    return due;
}

static void unpaced_goes_at_once(void **state)
{
    (void)state;
    pace p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < 100; i++)
        assert_true(go(&p, 1, 5 * S) == 5 * S);
    pace_set(&p, 0, 3, 6 * S);
    assert_true(go(&p, 7, 6 * S) == 6 * S);
}

static void burst_then_one_interval_each(void **state)
{
    (void)state;
    pace p;
    memset(&p, 0, sizeof p);
    pace_set(&p, 200 * 1000, 5, S); /* one every 5 ms, 5 back to back */
    for (int i = 0; i < 5; i++)
        assert_true(go(&p, 1, S) == S);
    assert_true(go(&p, 1, S) == S + 5 * MS); /* not taken: asked too early */
    assert_true(go(&p, 1, S + 4 * MS) == S + 5 * MS);
    assert_true(go(&p, 1, S + 5 * MS) == S + 5 * MS);
    assert_true(go(&p, 1, S + 5 * MS) == S + 10 * MS);
    /* late: the token is taken late, and the burst is refilled only by idle time */
    assert_true(go(&p, 1, S + 100 * MS) == S + 100 * MS);
    assert_true(p.tat_ns == S + 105 * MS);
    /* a cost of 3 above a burst of 1 goes when the bucket is full, and what
     * follows waits its three intervals (and, the first after a lull, one
     * more: PACE_COLD_NS) */
    pace_set(&p, 100 * 1000, 1, 2 * S); /* one every 10 ms */
    assert_true(go(&p, 3, 2 * S) == 2 * S);
    assert_true(go(&p, 1, 2 * S) == 2 * S + 40 * MS);
    assert_true(go(&p, 1, 2 * S + 40 * MS) == 2 * S + 40 * MS);
    assert_true(go(&p, 3, 2 * S + 45 * MS) == 2 * S + 50 * MS); /* above the burst: a full bucket */
    /* the first after a lull of PACE_COLD_NS, at burst 1: the next two intervals on */
    uint64_t t = 2 * S + 50 * MS + 10 * MS + PACE_COLD_NS; /* idle since its TAT, 2 s + 60 ms */
    assert_true(go(&p, 1, t) == t);
    assert_true(go(&p, 1, t) == t + 20 * MS);
    assert_true(go(&p, 1, t + 20 * MS) == t + 20 * MS); /* warm again: one interval */
    assert_true(go(&p, 1, t + 20 * MS) == t + 30 * MS);
    pace_set(&p, 100 * 1000, 2, t); /* a burst of 2 keeps a unit, not time */
    uint64_t u = t + 40 * MS + PACE_COLD_NS;
    assert_true(go(&p, 1, u) == u && go(&p, 1, u) == u && go(&p, 1, u) == u + 10 * MS);
}

static void rate_change_carries_debt(void **state)
{
    (void)state;
    pace p;
    memset(&p, 0, sizeof p);
    pace_set(&p, 10 * 1000, 1, 0); /* one every 100 ms */
    pace_take(&p, 1, 0);
    pace_take(&p, 1, 0); /* an overdraft: TAT now 200 ms */
    assert_true(pace_next(&p, 1, 0) == 200 * MS);
    /* at 50 ms: 150 ms owed at 100 ms a unit is 1.5 units: 15 ms at 10 ms a unit */
    pace_set(&p, 100 * 1000, 1, 50 * MS);
    assert_true(p.tat_ns == 65 * MS);
    assert_true(go(&p, 1, 50 * MS) == 65 * MS);
    /* unpaced, then paced again: no stored burst from the unpaced time */
    pace_set(&p, 0, 1, S);
    pace_set(&p, 100 * 1000, 2, S);
    assert_true(go(&p, 1, S) == S);
    assert_true(go(&p, 1, S) == S);
    assert_true(go(&p, 1, S) == S + 10 * MS);
}

/* Workers asking in bunches and after stalls (as a descheduled process
 * would) never take more than rate * tau + burst tokens in any window tau,
 * and a stalled worker that asks late takes a late token. */
static void takes_keep_the_window_bound(void **state)
{
    (void)state;
    pace p;
    memset(&p, 0, sizeof p);
    pace_set(&p, 190 * 1000, 5, 0);
    enum { N = 20000 };
    static uint64_t took[N];
    size_t n = 0;
    uint64_t now = 0, seed = 12345;
    for (int i = 0; i < N && n < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        if ((seed >> 60) < 4)
            now += (seed >> 33) % (40 * MS); /* a stall, then a bunch asking at once */
        else if ((seed >> 60) < 10)
            now += (seed >> 33) % (2 * MS);
        uint64_t due = pace_next(&p, 1, now);
        assert_true(due >= now);
        if (due == now) {
            pace_take(&p, 1, now);
            took[n++] = now;
        }
    }
    assert_true(n > 1000);
    for (size_t i = 0, j = 0; i < n; i++) {
        while (took[i] - took[j] >= 100 * MS)
            j++;
        assert_true(i - j + 1 <= 19 + 5);
    }
    for (size_t i = 0, j = 0; i < n; i++) {
        while (took[i] - took[j] >= S)
            j++;
        assert_true(i - j + 1 <= 190 + 5);
    }
}

/* pace_lag_due_ asks pace_lag_due for the spread itself: with the hold in
 * use forgotten first (how it shrinks is lag_hold_shrinks_slowly's). */
static uint64_t pace_lag_due_(pace_lag *l, uint64_t released_ns)
{
    l->hold_ns = 0;
    return pace_lag_due(l, released_ns, 0, 0, 0);
}

/* The hold: release plus the longest lag over the last one or two epochs,
 * measured across clocks that are far apart. */
static void lag_holds_to_the_longest_recent_lag(void **state)
{
    (void)state;
    pace_lag l;
    memset(&l, 0, sizeof l);
    const uint64_t apart = 1000 * S; /* the broker's clock runs 1000 s ahead of ours */
    assert_true(pace_lag_due_(&l, apart + S) == 0); /* nothing noted: no hold */
    pace_lag_note(&l, 0, S);                        /* an unknown release: ignored */
    assert_true(pace_lag_due_(&l, apart + S) == 0);
    pace_lag_note(&l, apart + S, S + MS / 10);       /* lag 0.1 ms (minus the clocks' gap) */
    pace_lag_note(&l, apart + S + 2 * MS, S + 10 * MS + MS / 10); /* 8 ms later than that */
    /* released at broker time B: ours is B - apart; held until then + 0.1 ms + 8 ms */
    assert_true(pace_lag_due_(&l, apart + S + 4 * MS) == S + 4 * MS + MS / 10 + 8 * MS);
    assert_true(pace_lag_due_(&l, 0) == 0);
    /* a 60 ms lag is held to at most 25 ms above the least */
    pace_lag_note(&l, apart + S + 20 * MS, S + 80 * MS + MS / 10);
    assert_true(pace_lag_due_(&l, apart + S + 30 * MS) == S + 30 * MS + MS / 10 + PACE_LAG_MAX_NS);
    /* the next epoch still remembers it; the one after forgets it */
    pace_lag_note(&l, apart + 2 * S + 100 * MS, 2 * S + 100 * MS + MS / 10);
    assert_true(pace_lag_due_(&l, apart + 2 * S + 200 * MS) == 2 * S + 200 * MS + MS / 10 + PACE_LAG_MAX_NS);
    pace_lag_note(&l, apart + 3 * S + 200 * MS, 3 * S + 200 * MS + MS / 5);
    assert_true(pace_lag_due_(&l, apart + 3 * S + 300 * MS) == 3 * S + 300 * MS + MS / 5);
    /* after a long silence the old epochs are forgotten at once */
    pace_lag_note(&l, apart + 9 * S, 9 * S + MS);
    assert_true(pace_lag_due_(&l, apart + 9 * S) == 9 * S + MS);
}

/* The hold in use grows at once and shrinks by 1 ms a second of asking,
 * not at once; a request that finds the pacer idle is not held. */
static void lag_hold_shrinks_slowly(void **state)
{
    (void)state;
    pace_lag l;
    memset(&l, 0, sizeof l);
    pace_lag_note(&l, S, S);                       /* lag 0 */
    pace_lag_note(&l, S + MS, S + MS + 20 * MS);   /* lag 20 ms */
    assert_true(pace_lag_due(&l, S + 2 * MS, S + 21 * MS, 0, 0) == S + 22 * MS);
    /* two epochs on, only lags of 0 are seen: the spread is 0, the hold 20 ms
     * less 3 ms for the 3 s since it was last looked at */
    pace_lag_note(&l, 2 * S + 500 * MS, 2 * S + 500 * MS);
    pace_lag_note(&l, 4 * S + 21 * MS, 4 * S + 21 * MS);
    assert_true(pace_lag_due(&l, 4 * S + 21 * MS, 4 * S + 21 * MS, 0, 0) == 4 * S + 21 * MS + 17 * MS);
    /* idle: no hold at all; then it grows back to the spread at once */
    assert_true(pace_lag_due(&l, 4 * S + 22 * MS, 4 * S + 22 * MS, 1, 0) == 4 * S + 22 * MS);
    pace_lag_note(&l, 4 * S + 30 * MS, 4 * S + 35 * MS); /* lag 5 ms */
    assert_true(pace_lag_due(&l, 4 * S + 30 * MS, 4 * S + 35 * MS, 0, 0) == 4 * S + 35 * MS);
}

/* max_in_window returns the most of the sorted times t[0..n) in any window
 * of length w (half open). */
static size_t max_in_window(const uint64_t *t, size_t n, uint64_t w)
{
    size_t most = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        while (t[i] - t[j] >= w)
            j++;
        most = i - j + 1 > most ? i - j + 1 : most;
    }
    return most;
}

static int by_time(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Two processes share a sink: the broker releases 500/s evenly (burst 1)
 * to one or the other, and a delivery reaches a worker 0.1 ms after its
 * release, or 8.1 ms after when that worker was descheduled (one in ten).
 * Sent at once, the sink sees more than rate * 0.1 s + 1 in some 0.1 s
 * window; held to the longest recent lag, every window after the first two
 * seconds holds the broker's bound exactly. */
static void two_processes_keep_the_broker_spacing(void **state)
{
    (void)state;
    enum { N = 10000 };
    static uint64_t held[N], sent[N];
    pace_lag lag[2];
    memset(lag, 0, sizeof lag);
    uint64_t seed = 777;
    size_t n = 0;
    for (uint64_t i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t released = S + i * 2 * MS;
        int who = (int)((seed >> 40) & 1);
        uint64_t ready = released + ((seed >> 50) % 10 == 0 ? 8 * MS : 0) + MS / 10;
        pace_lag_note(&lag[who], released, ready);
        uint64_t due = pace_lag_due(&lag[who], released, ready, 0, 0);
        if (released < 3 * S)
            continue; /* both have seen a stall by then */
        held[n] = due > ready ? due : ready;
        sent[n++] = ready;
    }
    qsort(held, n, sizeof held[0], by_time);
    qsort(sent, n, sizeof sent[0], by_time);
    assert_true(max_in_window(sent, n, 100 * MS) > 51);
    assert_true(max_in_window(held, n, 100 * MS) <= 51);
    assert_true(max_in_window(held, n, S) <= 501);
}

/* The same two processes, but one's workers are slower than the other's:
 * its deliveries reach a worker 0.1-3.1 ms after their release, the
 * other's 0.1-1.1 ms. Each holding its own spread, they send shifted by 2 ms
 * against each other, in pairs, over the bound; with a hold they share
 * (SL_PACER_SHARED_HOLD_MS, longer than either spread) the broker's spacing
 * holds, and a request with nothing else waiting (idle) is held too. */
static void processes_with_different_lags_share_one_hold(void **state)
{
    (void)state;
    enum { N = 10000 };
    static uint64_t own[N], shared[N];
    const uint64_t hold = (uint64_t)SL_PACER_SHARED_HOLD_MS * MS;
    pace_lag lag[2][2];
    memset(lag, 0, sizeof lag);
    uint64_t seed = 4242;
    size_t n = 0;
    for (uint64_t i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t released = S + i * 2 * MS;
        int who = (int)(i & 1);
        uint64_t ready = released + MS / 10 + (seed >> 20) % ((who ? 3 : 1) * MS + 1);
        uint64_t due[2];
        for (int k = 0; k < 2; k++) {
            pace_lag_note(&lag[k][who], released, ready);
            due[k] = pace_lag_due(&lag[k][who], released, ready, 0, k ? hold : 0);
        }
        if (released < 3 * S)
            continue;
        own[n] = due[0] > ready ? due[0] : ready;
        shared[n++] = due[1] > ready ? due[1] : ready;
    }
    qsort(own, n, sizeof own[0], by_time);
    qsort(shared, n, sizeof shared[0], by_time);
    assert_true(max_in_window(own, n, 100 * MS) > 51);
    assert_true(max_in_window(shared, n, 100 * MS) <= 51);
    pace_lag idle = {0};
    pace_lag_note(&idle, S, S + MS / 10);
    assert_true(pace_lag_due(&idle, S, S + MS / 10, 1, 0) == S + MS / 10);         /* alone: not held */
    assert_true(pace_lag_due(&idle, S, S + MS / 10, 1, hold) == S + MS / 10 + hold); /* shared: held */
}

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

/* The real-clock wrapper: 25 sends at 100/s burst 5 take at least the 20
 * intervals after the burst (200 ms), and not absurdly long. */
static void pacer_waits_on_the_real_clock(void **state)
{
    (void)state;
    sl_pacer *p = NULL;
    assert_int_equal(sl_pacer_new(&p), SL_OK);
    assert_true(sl_pacer_wait(p, 1) == 0); /* unpaced */
    sl_pacer_set(p, 100 * 1000, 5);
    uint64_t t0 = mono();
    for (int i = 0; i < 25; i++)
        sl_pacer_wait(p, 1);
    uint64_t took = mono() - t0;
    assert_true(took >= 195 * MS);
    assert_true(took < 5 * S);
    sl_pacer_free(&p);
    assert_null(p);
    sl_pacer_free(&p);
}

/* At a burst of 1 the pacer keeps its margin in time: every request leaves
 * at least an interval plus 1/SL_PACER_MARGIN after the one before, on the
 * real clock, however late the one before left; alone (no peers) a request
 * released by the broker is not held. */
static void burst_one_keeps_a_margin(void **state)
{
    (void)state;
    sl_pacer *pr = NULL;
    assert_int_equal(sl_pacer_new(&pr), SL_OK);
    sl_pacer_set(pr, 1000 * 1000, 1); /* 1 ms: each leaves 1.02 ms after the last */
    uint64_t last = 0, least = UINT64_MAX;
    for (int i = 0; i < 40; i++) {
        sl_pacer_wait_released(pr, 1, mono()); /* released now: alone, no hold */
        uint64_t now = mono();
        if (last && now - last < least)
            least = now - last;
        last = now;
        if (i == 20) { /* a sender late by 3 ms: the next still waits a whole interval */
            struct timespec ts = {0, 3 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(least >= MS + MS / SL_PACER_MARGIN);
    sl_pacer_free(&pr);
    /* exactly: at burst 1, 50/51 of the rate (an interval 2 % longer); above, the rate */
    assert_true(pace_rate_at(1000 * 1000, 1) == 1000 * 1000 * SL_PACER_MARGIN / (SL_PACER_MARGIN + 1));
    assert_true(pace_rate_at(2000 * 1000, 1) == 1960784);
    assert_true(pace_rate_at(1000 * 1000, 2) == 1000 * 1000);
    assert_true(pace_rate_at(40, 1) == 40); /* 0.04/s: too slow to take anything from */
    pace p = {0};
    pace_set(&p, pace_rate_at(100 * 1000, 1), 1, 0);
    pace_take(&p, 1, 0);
    uint64_t next = pace_next(&p, 1, 0); /* 10.2 ms, up to the rounding of a rate in thousandths */
    assert_true(next >= 10 * MS + 10 * MS / SL_PACER_MARGIN && next < 10 * MS + 10 * MS / SL_PACER_MARGIN + 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unpaced_goes_at_once),
        cmocka_unit_test(burst_then_one_interval_each),
        cmocka_unit_test(rate_change_carries_debt),
        cmocka_unit_test(takes_keep_the_window_bound),
        cmocka_unit_test(lag_holds_to_the_longest_recent_lag),
        cmocka_unit_test(lag_hold_shrinks_slowly),
        cmocka_unit_test(two_processes_keep_the_broker_spacing),
        cmocka_unit_test(processes_with_different_lags_share_one_hold),
        cmocka_unit_test(pacer_waits_on_the_real_clock),
        cmocka_unit_test(burst_one_keeps_a_margin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
