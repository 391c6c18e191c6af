/*
 * test_meter.c - metering in the real sluiced, measured where deliveries
 * arrive: the sink bucket's bound in every window, utilisation, a THROTTLED
 * pause with no sends during it and no attempt charged, level ceilings and
 * guaranteed rates under saturation, priority order under metering, live
 * rate changes, costs, the in-flight cap, and settings across a restart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define MAX_ARRIVALS 20000

/* A consumer that acks at once and records when each delivery arrived. */
typedef struct arrivals {
    uint64_t at_ms[MAX_ARRIVALS];
    unsigned level[MAX_ARRIVALS];
    unsigned n;
} arrivals;

static void consume(sl_client *c, arrivals *a, unsigned want, uint64_t limit_ms)
{
    uint64_t end = th_now_ms() + limit_ms;
    while (a->n < want && a->n < MAX_ARRIVALS && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        a->at_ms[a->n] = th_now_ms();
        a->level[a->n] = d->level;
        a->n++;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* what others read next includes these acks */
}

/* most_in_window returns the most arrivals within any window of win_ms. */
static unsigned most_in_window(const arrivals *a, uint64_t win_ms)
{
    unsigned best = 0;
    for (unsigned i = 0, j = 0; i < a->n; i++) {
        while (a->at_ms[i] - a->at_ms[j] >= win_ms)
            j++;
        if (i - j + 1 > best)
            best = i - j + 1;
    }
    return best;
}

static void sink_rate_holds_in_every_window_and_is_used(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 200 * 1000, 1, SL_UNCHANGED), SL_OK);
    assert_int_equal(th_put_many(f->c, 1, 600, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    arrivals *a = calloc(1, sizeof *a);
    consume(c, a, 600, 10000);
    assert_int_equal(a->n, 600);
    /* delivery adds jitter on top of the broker's schedule, so allow a few
     * extra in the shortest window: the bucket's own bound is rate*tau + 1 */
    unsigned w100 = most_in_window(a, 100), w1000 = most_in_window(a, 1000);
    double secs = (double)(a->at_ms[599] - a->at_ms[0]) / 1000.0;
    double rate = 599.0 / secs;
    fprintf(stderr, "# sink 200/s burst 1: max %u in 100 ms, %u in 1 s, %.1f/s overall\n", w100, w1000, rate);
    assert_true(w100 <= 20 + 1 + 3);
    assert_true(w1000 <= 200 + 1 + 3);
    assert_true(rate >= 0.97 * 200 && rate <= 1.03 * 200); /* utilisation while backlogged */
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.rate_milli == 200000 && si.effective_rate_milli == 200000 && si.burst == 1);
    free(a);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void throttled_pauses_and_charges_nothing(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 100 * 1000, 1, SL_UNCHANGED), SL_OK);
    assert_int_equal(th_put_many(f->c, 0, 50, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    uint64_t id = d->id;
    assert_int_equal(sl_throttled(c, d, 1000), SL_OK);
    uint64_t t0 = th_now_ms();
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    uint64_t gap = th_now_ms() - t0;
    fprintf(stderr, "# after THROTTLED retry-after 1 s: next delivery after %llu ms\n", (unsigned long long)gap);
    assert_true(gap >= 950); /* nothing during that second */
    assert_true(d->id == id);  /* back at the head of its level */
    assert_int_equal(d->attempt, 1); /* not charged */
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&d);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].throttled, 1);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.effective_rate_milli < si.rate_milli); /* multiplicative decrease */
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void level_ceiling_and_guarantee_hold_under_saturation(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 300 * 1000, 1, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_level_rate(f->c, 0, 50 * 1000, SL_UNCHANGED, 1), SL_OK); /* level 0 at most 50/s */
    assert_int_equal(sl_level_rate(f->c, 2, SL_UNCHANGED, 60 * 1000, SL_UNCHANGED), SL_OK); /* level 2 at least 60/s */
    assert_int_equal(th_put_many(f->c, 0, 400, 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 1, 1000, 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 2, 400, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    arrivals *a = calloc(1, sizeof *a);
    consume(c, a, 900, 10000); /* 3 s at 300/s */
    unsigned per[3] = {0};
    for (unsigned i = 0; i < a->n; i++)
        per[a->level[i]]++;
    double secs = (double)(a->at_ms[a->n - 1] - a->at_ms[0]) / 1000.0;
    fprintf(stderr, "# 300/s sink over %.2f s: level 0 (max 50/s) %.1f/s, level 1 %.1f/s, level 2 (min 60/s) %.1f/s\n",
            secs, per[0] / secs, per[1] / secs, per[2] / secs);
    assert_true(per[0] / secs <= 50 * 1.1 + 1);  /* the ceiling holds */
    assert_true(per[0] / secs >= 50 * 0.9);      /* and is used: level 0 is the top */
    assert_true(per[2] / secs >= 60 * 0.9);      /* the guarantee holds below level 1 */
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(f->c, lv, &n), SL_OK);
    assert_true(lv[0].max_rate_milli == 50000 && lv[2].min_rate_milli == 60000);
    assert_true(lv[1].eta_ms > 0); /* backlog / effective rate */
    free(a);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void priority_order_survives_metering(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 400 * 1000, 1, SL_UNCHANGED), SL_OK);
    assert_int_equal(th_put_many(f->c, 2, 200, 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 0, 300, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 16), SL_OK);
    arrivals *a = calloc(1, sizeof *a);
    consume(c, a, 500, 10000);
    assert_int_equal(a->n, 500);
    unsigned inversions = 0;
    for (unsigned i = 1; i < a->n; i++)
        inversions += a->level[i] < a->level[i - 1];
    assert_int_equal(inversions, 0);
    free(a);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void live_rate_change_converges_within_a_second(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 100 * 1000, 1, SL_UNCHANGED), SL_OK);
    assert_int_equal(th_put_many(f->c, 1, 1500, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    arrivals *a = calloc(1, sizeof *a);
    consume(c, a, 150, 5000); /* ~1.5 s at 100/s */
    uint64_t changed = th_now_ms();
    assert_int_equal(sl_sink_set(f->c, 400 * 1000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    consume(c, a, 150 + 800, 5000); /* ~2 s at 400/s */
    unsigned in_second = 0;
    for (unsigned i = 0; i < a->n; i++)
        in_second += a->at_ms[i] >= changed + 1000 && a->at_ms[i] < changed + 2000;
    fprintf(stderr, "# rate 100/s -> 400/s: %u deliveries in the second after the first\n", in_second);
    assert_true(in_second >= 0.97 * 400 && in_second <= 400 + 1 + 3);
    free(a);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void cost_is_charged_and_inflight_is_capped(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 1000 * 1000, 10, 3), SL_OK); /* 1000 units/s, 3 in flight */
    assert_int_equal(th_put_many(f->c, 1, 200, 10), SL_OK); /* cost 10: 100 messages/s */
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 10), SL_OK);
    sl_delivery *d[4] = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(sl_recv(c, 5000, &d[i]), SL_OK);
    assert_int_equal(d[0]->cost, 10);
    assert_int_equal(sl_recv(c, 500, &d[3]), SL_ETIMEDOUT); /* capped at 3 in flight, not credit 10 */
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.inflight == 3 && si.max_inflight == 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sl_ack(c, d[i]), SL_OK);
        sl_delivery_free(&d[i]);
    }
    assert_int_equal(sl_sink_set(f->c, SL_UNCHANGED, SL_UNCHANGED, 0), SL_OK);
    arrivals *a = calloc(1, sizeof *a);
    consume(c, a, 150, 5000);
    double secs = (double)(a->at_ms[a->n - 1] - a->at_ms[0]) / 1000.0;
    fprintf(stderr, "# cost 10 at 1000 units/s: %.1f messages/s\n", (a->n - 1) / secs);
    assert_true((a->n - 1) / secs <= 100 * 1.05 + 1);
    assert_true((a->n - 1) / secs >= 100 * 0.9);
    free(a);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void sink_settings_survive_restart(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 250 * 1000, 5, 7), SL_OK);
    assert_int_equal(sl_level_rate(f->c, 1, 40 * 1000, 10 * 1000, 2), SL_OK);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.rate_milli == 250000 && si.burst == 5 && si.max_inflight == 7);
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(f->c, lv, &n), SL_OK);
    assert_true(lv[1].max_rate_milli == 40000 && lv[1].min_rate_milli == 10000 && lv[1].burst == 2);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void breaker_opens_probes_and_closes(void **state)
{
    (void)state;
    static const char *const extra[] = {"--breaker-window", "4", "--breaker-cooldown-ms", "600", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    assert_int_equal(th_put_many(f->c, 1, 20, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    for (int i = 0; i < 2; i++) { /* two failures out of two: over 50 % */
        assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
        assert_int_equal(sl_nack(c, d, 0), SL_OK);
        assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
        sl_delivery_free(&d);
    }
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_string_equal(st.breaker, "open");
    assert_int_equal(st.breaker_trips, 1);
    uint64_t t0 = th_now_ms();
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK); /* the probe, after the cooldown */
    uint64_t waited = th_now_ms() - t0;
    fprintf(stderr, "# breaker open: the probe came after %llu ms (cooldown 600 ms)\n", (unsigned long long)waited);
    assert_true(waited >= 500);
    sl_delivery *next = NULL;
    assert_int_equal(sl_ack(c, d), SL_OK); /* the probe succeeds: closed */
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 1000, &next), SL_OK); /* and traffic flows again */
    assert_int_equal(sl_ack(c, next), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&next);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_string_equal(si.breaker, "closed");
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void reject_makes_a_dead_letter_with_its_reason(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 2, 1, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    uint64_t id = d->id;
    assert_int_equal(sl_reject(c, d, "HTTP 404 from the sink"), SL_OK);
    assert_int_equal(sl_reject(c, d, "again"), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_ESTALE);
    sl_delivery_free(&d);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[2].dead, 1);
    assert_int_equal(st.level[2].nacked, 0); /* no attempts burned */
    sl_explain_info ex;
    assert_int_equal(sl_explain(f->c, id, &ex), SL_OK);
    assert_string_equal(ex.state, "dead");
    assert_non_null(strstr(ex.why, "HTTP 404 from the sink"));
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sink_rate_holds_in_every_window_and_is_used),
        cmocka_unit_test(throttled_pauses_and_charges_nothing),
        cmocka_unit_test(level_ceiling_and_guarantee_hold_under_saturation),
        cmocka_unit_test(priority_order_survives_metering),
        cmocka_unit_test(live_rate_change_converges_within_a_second),
        cmocka_unit_test(cost_is_charged_and_inflight_is_capped),
        cmocka_unit_test(sink_settings_survive_restart),
        cmocka_unit_test(breaker_opens_probes_and_closes),
        cmocka_unit_test(reject_makes_a_dead_letter_with_its_reason),
    };
    th_seed();
    return cmocka_run_group_tests_name("meter", tests, NULL, NULL);
}
