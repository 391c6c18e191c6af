/*
 * test_windows.c - several windows per rate limit in the real sluiced: the
 * sink with 5/s and 8/10s, a level's ceiling with 10/s and 6/2s, each
 * asserted on the broker's release times (released_ns: its monotonic clock
 * when it charged the delivery to its buckets) exactly, with no allowance
 * for jitter; windows across a restart; bad windows refused with a typed
 * error and the broker serving on.
 *
 * Each pair of windows is chosen so that both bind and neither alone would
 * pass the asserts: the short window alone would let the long window's
 * burst through at once, the long window alone would let the short one's
 * rate run on past the long window's bound. The consumer has credit for
 * the whole backlog and holds its deliveries, so only the meter paces the
 * releases. How long a run takes is not asserted, only that it made
 * progress within a generous limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define MAX_RELEASES 64

/* released collects the released_ns of up to want deliveries, holding them
 * (never acked: they go back when the consumer leaves). */
static unsigned released(sl_client *c, uint64_t *t, unsigned want, uint64_t limit_ms)
{
    unsigned n = 0;
    uint64_t end = th_now_ms() + limit_ms;
    while (n < want && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        assert_true(d->released_ns > 0);
        t[n++] = d->released_ns;
        sl_delivery_free(&d);
    }
    return n;
}

static int by_time(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return *a < *b ? -1 : *a > *b;
}

/* most_in returns the most releases of t[0..n) in any closed span of tau_ns. */
static uint64_t most_in(uint64_t *t, unsigned n, uint64_t tau_ns)
{
    qsort(t, n, sizeof *t, by_time);
    uint64_t best = 0;
    for (unsigned i = 0, j = 0; j < n; j++) {
        while (t[j] - t[i] > tau_ns)
            i++;
        best = j - i + 1 > best ? j - i + 1 : best;
    }
    return best;
}

/* bound is what window w passes in a closed span of tau_ns: count/period x
 * tau + burst, rounded down (the test windows divide evenly). */
static uint64_t bound(const sl_window *w, uint64_t tau_ns)
{
    return w->count_milli * (tau_ns / NS_PER_MS) / (w->period_ms * 1000) + w->burst;
}

/* windows_hold asserts every window's bound over each span of taus, prints
 * the figures, and returns the most released in each span into most[]. */
static void windows_hold(uint64_t *t, unsigned n, const sl_window *w, unsigned nw, const uint64_t *taus,
                         unsigned ntaus, uint64_t *most, const char *what)
{
    for (unsigned k = 0; k < ntaus; k++) {
        most[k] = most_in(t, n, taus[k]);
        for (unsigned i = 0; i < nw; i++) {
            fprintf(stderr, "# %s: at most %llu released in %llu ms; window %llu/%llu ms burst %u allows %llu\n",
                    what, (unsigned long long)most[k], (unsigned long long)(taus[k] / NS_PER_MS),
                    (unsigned long long)(w[i].count_milli / 1000), (unsigned long long)w[i].period_ms,
                    w[i].burst, (unsigned long long)bound(&w[i], taus[k]));
            assert_true(most[k] <= bound(&w[i], taus[k]));
        }
    }
}

static void sink_windows_bound_the_releases(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    const sl_window w[2] = {{5 * 1000, 1000, 1, 0}, {8 * 1000, 10000, 8, 0}}; /* 5/s and 8/10s */
    assert_int_equal(sl_sink_windows(f->c, w, 2), SL_OK);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_int_equal(si.nwindows, 2);
    assert_true(si.rate_milli == 5000 && si.burst == 1);
    assert_true(si.windows[1].count_milli == 8000 && si.windows[1].period_ms == 10000 && si.windows[1].burst == 8);
    assert_int_equal(th_put_many(f->c, 1, 40, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 40), SL_OK);
    uint64_t t[MAX_RELEASES];
    /* 9 in 1.6 s, then one each 1.25 s: 11 by 3.75 s; 30 s is generous */
    unsigned n = released(c, t, 11, 30000);
    assert_int_equal(n, 11);
    const uint64_t taus[] = {100 * NS_PER_MS, NS_PER_S, 3 * NS_PER_S};
    uint64_t most[3];
    windows_hold(t, n, w, 2, taus, 3, most, "sink 5/s + 8/10s");
    /* neither alone: 8/10s alone passes 8 at once (here at most 1 in
     * 100 ms), 5/s alone 16 in 3 s (here at most 10) */
    assert_true(most[0] < 8 && most[2] < 16);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void level_windows_bound_only_their_level(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    const sl_window w[2] = {{10 * 1000, 1000, 1, 0}, {6 * 1000, 2000, 6, 0}}; /* 10/s and 6/2s */
    assert_int_equal(sl_level_windows(f->c, 1, w, 2), SL_OK);
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned nl = 0;
    assert_int_equal(sl_level_list(f->c, lv, &nl), SL_OK);
    assert_int_equal(lv[1].nwindows, 2);
    assert_int_equal(lv[0].nwindows, 0);
    assert_true(lv[1].max_rate_milli == 10000 && lv[1].windows[1].period_ms == 2000);
    assert_int_equal(th_put_many(f->c, 1, 40, 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 2, 20, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 40), SL_OK);
    uint64_t t[MAX_RELEASES];
    unsigned n = released(c, t, 12, 30000); /* 6 in 0.5 s, then 3/s */
    assert_int_equal(n, 12);
    const uint64_t taus[] = {100 * NS_PER_MS, NS_PER_S, 2 * NS_PER_S};
    uint64_t most[3];
    windows_hold(t, n, w, 2, taus, 3, most, "level 10/s + 6/2s");
    /* neither alone: 6/2s alone passes 6 at once, 10/s alone 21 in 2 s */
    assert_true(most[0] < 6 && most[2] < 21);
    /* level 2 has no ceiling: all 20 of it go to a consumer of its own pool
     * (the default pool serves level 1 only, as its first member asked) */
    sl_client *c2 = th_client(&f->b, 5000);
    unsigned two = 2;
    assert_int_equal(sl_subscribe(c2, "low", &two, 1, 20), SL_OK);
    n = released(c2, t, 20, 30000);
    assert_int_equal(n, 20);
    /* released faster than level 1's windows would have let 20 go (6 at
     * once, then 3/s: 4.67 s): its windows hold only their level */
    qsort(t, n, sizeof *t, by_time);
    fprintf(stderr, "# level 2, no ceiling: 20 released in %.1f ms\n", (double)(t[n - 1] - t[0]) / 1e6);
    assert_true(t[n - 1] - t[0] < 4 * NS_PER_S);
    sl_close(&c2);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void windows_survive_a_restart(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    const sl_window sink[3] = {{7 * 1000, 1000, 2, 0}, {500 * 1000, 60000, 500, 0}, {1500, 3600000, 4, 0}};
    const sl_window level[2] = {{100 * 1000, 60000, 10, 0}, {2 * 1000, 86400000, 2, 0}}; /* none per second */
    assert_int_equal(sl_sink_windows(f->c, sink, 3), SL_OK);
    assert_int_equal(sl_level_windows(f->c, 2, level, 2), SL_OK);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_int_equal(si.nwindows, 3);
    for (unsigned i = 0; i < 3; i++)
        assert_true(si.windows[i].count_milli == sink[i].count_milli &&
                    si.windows[i].period_ms == sink[i].period_ms && si.windows[i].burst == sink[i].burst);
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(f->c, lv, &n), SL_OK);
    assert_int_equal(lv[2].nwindows, 2);
    assert_true(lv[2].max_rate_milli == 0);
    for (unsigned i = 0; i < 2; i++)
        assert_true(lv[2].windows[i].count_milli == level[i].count_milli &&
                    lv[2].windows[i].period_ms == level[i].period_ms && lv[2].windows[i].burst == level[i].burst);
    /* the old call still sets the per-second rate alone, beside the windows */
    assert_int_equal(sl_sink_set(f->c, 9 * 1000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.nwindows == 3 && si.windows[0].count_milli == 9000);
    /* no windows at all: back to unlimited */
    assert_int_equal(sl_sink_windows(f->c, NULL, 0), SL_OK);
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.nwindows == 0 && si.rate_milli == 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void bad_windows_are_refused(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    const sl_window zero_period[1] = {{1000, 0, 1, 0}};
    const sl_window too_long[1] = {{1000, 86400001, 1, 0}};
    const sl_window big_burst[1] = {{1000, 1000, 1000001, 0}};
    const sl_window zero_beside[2] = {{1000, 1000, 1, 0}, {0, 60000, 1, 0}};
    const sl_window four_long[4] = {{1000, 2000, 1, 0}, {1000, 3000, 1, 0}, {1000, 4000, 1, 0}, {1000, 5000, 1, 0}};
    const sl_window huge[1] = {{UINT64_C(100000000001), 1000, 1, 0}};
    assert_int_equal(sl_sink_windows(f->c, zero_period, 1), SL_EINVAL);
    assert_non_null(strstr(sl_last_error(f->c), "period"));
    assert_int_equal(sl_sink_windows(f->c, too_long, 1), SL_EINVAL);
    assert_int_equal(sl_level_windows(f->c, 0, big_burst, 1), SL_EINVAL);
    assert_int_equal(sl_level_windows(f->c, 0, zero_beside, 2), SL_EINVAL);
    assert_int_equal(sl_sink_windows(f->c, four_long, 4), SL_EINVAL);
    assert_non_null(strstr(sl_last_error(f->c), "besides its per-second"));
    assert_int_equal(sl_sink_windows(f->c, huge, 1), SL_EINVAL);
    assert_int_equal(sl_level_windows(f->c, 9, huge, 1), SL_ENOLEVEL);
    sl_window five[5] = {{1000, 1000, 1, 0}};
    assert_int_equal(sl_sink_windows(f->c, five, 5), SL_EINVAL); /* refused before it leaves */
    /* nothing changed, and the broker serves on */
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.nwindows == 0 && si.rate_milli == 0);
    assert_int_equal(th_put_many(f->c, 1, 1, 1), SL_OK);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sink_windows_bound_the_releases),
        cmocka_unit_test(level_windows_bound_only_their_level),
        cmocka_unit_test(windows_survive_a_restart),
        cmocka_unit_test(bad_windows_are_refused),
    };
    return cmocka_run_group_tests_name("windows", tests, NULL, NULL);
}
