/*
 * test_tagthrottle.c - the state a THROTTLED for one tag leaves, pure and
 * with a hand clock, exact: aimd.c's cut and climb (the policy the sink and
 * the tags share), the table of throttled tags (broker/meter/tagthrottle.c: a
 * pause found by tag id, level by level, a bucket's cut and its steps back, entries
 * dropped once they hold nothing, the bound and what it evicts), and a cut
 * written into a tag's bucket (tagset_cut) holding that tag to the cut
 * rate after its pause, with no burst.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "aimd.h"
#include "sluice_errors.h"
#include "tagset.h"
#include "tagthrottle.h"
#include "units.h"

#define MS NS_PER_MS
#define T0 (1000 * NS_PER_S) /* the hand clock starts here, far from 0 */
#define ALL 0xFFFFu /* every level */

static void cut_and_climb_exact(void **state)
{
    (void)state;
    aimd a = {0};
    uint64_t rate = 10000; /* 10/s */
    assert_int_equal(aimd_cut(&a, &rate, 10000, T0), 1);
    assert_int_equal(rate, 9000); /* isolated: 90 % */
    assert_int_equal(aimd_cut(&a, &rate, 10000, T0 + 999 * MS), 0); /* one cut a second */
    assert_int_equal(aimd_raise_due(&a, rate, 10000), T0 + 1000 * MS);
    assert_int_equal(aimd_raise(&a, &rate, 10000, T0 + 999 * MS), 0);
    assert_int_equal(aimd_raise(&a, &rate, 10000, T0 + 1000 * MS), 1);
    assert_int_equal(rate, 9200); /* + base / 50 a step */
    assert_int_equal(aimd_raise_due(&a, rate, 10000), T0 + 1100 * MS);
    for (int i = 0; i < 4; i++)
        aimd_raise(&a, &rate, 10000, T0 + (1100 + 100 * (uint64_t)i) * MS);
    assert_int_equal(rate, 10000);
    assert_int_equal(aimd_raise_due(&a, rate, 10000), AIMD_NEVER);
    assert_true(aimd_cut_showing(&a, 0, T0 + 999 * MS));
    assert_false(aimd_cut_showing(&a, 0, T0 + 1000 * MS));
    assert_true(aimd_cut_showing(&a, T0 + 5000 * MS, T0 + 4999 * MS)); /* its pause still runs */
    /* another 429 within 10 s of the last cut: repeated, the full AIMD */
    assert_false(aimd_calm(&a, T0 + 9999 * MS));
    assert_int_equal(aimd_cut(&a, &rate, 10000, T0 + 2000 * MS), 1);
    assert_int_equal(rate, 7000);
    assert_int_equal(a.repeated, 1);
    assert_int_equal(aimd_raise(&a, &rate, 10000, T0 + 3000 * MS), 1);
    assert_int_equal(rate, 7020); /* + base / 500 a step */
    /* 10 s after the last cut it is calm: the next one is isolated again */
    assert_true(aimd_calm(&a, T0 + 12000 * MS));
    assert_int_equal(aimd_cut(&a, &rate, 10000, T0 + 12000 * MS), 1);
    assert_int_equal(rate, 7020 * 90 / 100);
    /* the floor: never below 1/s, nor above the rate it cuts; no base, no cut */
    aimd f = {0};
    uint64_t slow = 1080, crawl = 500, free_rate = 0;
    assert_int_equal(aimd_cut(&f, &slow, 1080, T0), 1);
    assert_int_equal(slow, 1000);
    aimd g = {0};
    assert_int_equal(aimd_cut(&g, &crawl, 500, T0), 1);
    assert_int_equal(crawl, 500);
    aimd h = {0};
    assert_int_equal(aimd_cut(&h, &free_rate, 0, T0), 0);
    assert_int_equal(h.cuts, 0);
}

static void pause_is_found_by_id_until_it_ends(void **state)
{
    (void)state;
    tagthrottle t;
    tagthrottle_init(&t);
    assert_int_equal(tagthrottle_paused_until(&t, 7, 0, T0), 0); /* empty: nothing */
    int err = SL_OK;
    tagthrottle_entry *e = tagthrottle_pause(&t, "acme", 4, 7, ALL, T0 + 500 * MS, T0, &err);
    assert_non_null(e);
    assert_int_equal(e->throttles, 1);
    assert_int_equal(tagthrottle_paused_until(&t, 7, 0, T0), T0 + 500 * MS);
    assert_int_equal(tagthrottle_paused_until(&t, 7, 0, T0 + 499 * MS), T0 + 500 * MS);
    assert_int_equal(tagthrottle_paused_until(&t, 7, 0, T0 + 500 * MS), 0);
    assert_int_equal(tagthrottle_paused_until(&t, 8, 0, T0), 0); /* another tag: free */
    /* a shorter pause never shortens it; a later one extends it */
    assert_ptr_equal(tagthrottle_pause(&t, "acme", 4, 7, ALL, T0 + 100 * MS, T0 + 10 * MS, &err), e);
    assert_int_equal(tagthrottle_paused_until(&t, 7, 0, T0 + 200 * MS), T0 + 500 * MS);
    tagthrottle_pause(&t, "acme", 4, 0, ALL, T0 + 800 * MS, T0 + 20 * MS, &err); /* id 0: keep the one known */
    assert_int_equal(tagthrottle_paused_until(&t, 7, 0, T0 + 600 * MS), T0 + 800 * MS);
    assert_int_equal(e->throttles, 3);
    /* a tag seen in a FIFO level only (no id) is found by name, never by id 0 */
    assert_non_null(tagthrottle_pause(&t, "fifo-only", 9, 0, ALL, T0 + 300 * MS, T0, &err));
    assert_int_equal(tagthrottle_paused_until(&t, 0, 0, T0), 0);
    assert_non_null(tagthrottle_find(&t, 0, "fifo-only", 9));
    assert_null(tagthrottle_find(&t, 1, "fifo-only", 9)); /* a pattern of that name: another entry */
    /* bad names are refused */
    assert_null(tagthrottle_pause(&t, "", 0, 3, ALL, T0 + MS, T0, &err));
    assert_int_equal(err, SL_EINVAL);
    assert_null(tagthrottle_pause(&t, "a\0b", 3, 3, ALL, T0 + MS, T0, &err));
    assert_int_equal(err, SL_EINVAL);
    /* pause-only entries go when their pause is over (no cut to remember) */
    assert_int_equal(tagthrottle_next_ns(&t), T0 + 300 * MS);
    assert_int_equal(tagthrottle_tick(&t, T0 + 300 * MS, NULL, NULL), T0 + 800 * MS);
    assert_int_equal(t.n, 1);
    assert_null(tagthrottle_find(&t, 0, "fifo-only", 9));
    assert_int_equal(tagthrottle_tick(&t, T0 + 800 * MS, NULL, NULL), TAGTHROTTLE_NEVER);
    assert_int_equal(t.n, 0);
    assert_null(t.v); /* an empty table holds no memory */
    tagthrottle_fini(&t);
    /* a pause in some levels only (a consumer limited to them): elsewhere the tag goes */
    tagthrottle_init(&t);
    assert_non_null(tagthrottle_pause(&t, "low-only", 8, 11, 1u << 2, T0 + 400 * MS, T0, &err));
    assert_int_equal(tagthrottle_paused_until(&t, 11, 2, T0), T0 + 400 * MS);
    assert_int_equal(tagthrottle_paused_until(&t, 11, 0, T0), 0);
    assert_int_equal(tagthrottle_paused_until(&t, 11, 1, T0), 0);
    tagthrottle_pause(&t, "low-only", 8, 11, 1u << 0, T0 + 200 * MS, T0, &err); /* another, in level 0 */
    assert_int_equal(tagthrottle_paused_until(&t, 11, 0, T0), T0 + 200 * MS);
    assert_int_equal(tagthrottle_paused_until(&t, 11, 2, T0 + 300 * MS), T0 + 400 * MS);
    assert_int_equal(tagthrottle_paused_until(&t, 11, 0, T0 + 300 * MS), 0);
    assert_int_equal(tagthrottle_next_ns(&t), T0 + 400 * MS); /* it goes once its last level's pause is over */
    tagthrottle_fini(&t);
}

typedef struct applied {
    int n;
    uint64_t last_rate;
} applied;

static void on_apply(void *ctx, tagthrottle_entry *e)
{
    applied *a = ctx;
    a->n++;
    a->last_rate = tagthrottle_cut_of(e);
}

static void cut_climbs_back_and_is_forgotten_when_calm(void **state)
{
    (void)state;
    tagthrottle t;
    tagthrottle_init(&t);
    int cut = 0, err = SL_OK;
    applied ap = {0};
    /* a pattern's shared bucket of 10/s, cut by a 429 of one of its tags */
    tagthrottle_entry *e = tagthrottle_cut(&t, 1, "free-*", 6, 10000, T0, &cut, &err);
    assert_non_null(e);
    assert_int_equal(cut, 1);
    assert_int_equal(tagthrottle_cut_of(e), 9000);
    assert_int_equal(e->throttles, 1);
    assert_ptr_equal(tagthrottle_cut(&t, 1, "free-*", 6, 10000, T0 + 500 * MS, &cut, &err), e);
    assert_int_equal(cut, 0); /* within the second: the same event */
    assert_int_equal(tagthrottle_next_ns(&t), T0 + 1000 * MS);
    assert_int_equal(tagthrottle_tick(&t, T0 + 999 * MS, on_apply, &ap), T0 + 1000 * MS);
    assert_int_equal(ap.n, 0);
    assert_int_equal(tagthrottle_tick(&t, T0 + 1000 * MS, on_apply, &ap), T0 + 1100 * MS);
    assert_int_equal(ap.n, 1);
    assert_int_equal(ap.last_rate, 9200);
    for (uint64_t ms = 1100; ms <= 1400; ms += 100)
        tagthrottle_tick(&t, T0 + ms * MS, on_apply, &ap);
    assert_int_equal(ap.n, 5);
    assert_int_equal(ap.last_rate, 0); /* back at its base: the bucket's own window again */
    /* kept until 10 s after its cut, so that a 429 meanwhile is a repeated one */
    assert_int_equal(tagthrottle_next_ns(&t), T0 + 10000 * MS);
    assert_non_null(tagthrottle_find(&t, 1, "free-*", 6));
    e = tagthrottle_cut(&t, 1, "free-*", 6, 10000, T0 + 5000 * MS, &cut, &err);
    assert_int_equal(cut, 1);
    assert_int_equal(tagthrottle_cut_of(e), 7000);
    /* the limit changed under it: the rate stays within the new base */
    tagthrottle_rebase(&t, e, 5000);
    assert_int_equal(tagthrottle_cut_of(e), 0);
    assert_int_equal(e->rate_milli, 5000);
    tagthrottle_rebase(&t, e, 0); /* no limit any more: nothing to climb to */
    assert_int_equal(tagthrottle_tick(&t, T0 + 15000 * MS - 1, on_apply, &ap), T0 + 15000 * MS);
    assert_int_equal(t.n, 1);
    assert_int_equal(tagthrottle_tick(&t, T0 + 15000 * MS, on_apply, &ap), TAGTHROTTLE_NEVER);
    assert_int_equal(t.n, 0);
    tagthrottle_fini(&t);
}

static void bound_evicts_only_what_holds_nothing(void **state)
{
    (void)state;
    tagthrottle t;
    tagthrottle_init(&t);
    char name[32];
    int err = SL_OK, cut = 0;
    for (uint32_t i = 0; i < TAGTHROTTLE_MAX; i++) { /* every one paused for i ms more than a second */
        snprintf(name, sizeof name, "t%u", i);
        assert_non_null(tagthrottle_pause(&t, name, strlen(name), i + 1, ALL, T0 + (1000 + i) * MS, T0, &err));
    }
    assert_int_equal(t.n, TAGTHROTTLE_MAX);
    for (uint32_t i = 0; i < TAGTHROTTLE_MAX; i += 511) { /* each found by its id */
        snprintf(name, sizeof name, "t%u", i);
        assert_int_equal(tagthrottle_paused_until(&t, i + 1, 0, T0), T0 + (1000 + i) * MS);
    }
    /* full of tags still paused: refused, nothing lost */
    assert_null(tagthrottle_pause(&t, "one-more", 8, 99999, ALL, T0 + 9000 * MS, T0, &err));
    assert_int_equal(err, SL_EFULL);
    assert_null(tagthrottle_cut(&t, 1, "p*", 2, 1000, T0, &cut, &err));
    assert_int_equal(err, SL_EFULL);
    assert_int_equal(t.n, TAGTHROTTLE_MAX);
    /* once t0's pause is over it holds nothing: it makes room, the others stay */
    assert_non_null(tagthrottle_pause(&t, "one-more", 8, 99999, ALL, T0 + 9000 * MS, T0 + 1000 * MS, &err));
    assert_int_equal(t.n, TAGTHROTTLE_MAX);
    assert_null(tagthrottle_find(&t, 0, "t0", 2));
    assert_int_equal(tagthrottle_paused_until(&t, 1, 0, T0 + 1000 * MS), 0);
    assert_int_equal(tagthrottle_paused_until(&t, 2, 0, T0 + 1000 * MS), T0 + 1001 * MS);
    assert_int_equal(tagthrottle_paused_until(&t, 99999, 0, T0 + 1000 * MS), T0 + 9000 * MS);
    /* all pauses over: one tick forgets them all but the last */
    tagthrottle_tick(&t, T0 + (1000 + TAGTHROTTLE_MAX) * MS, NULL, NULL);
    assert_int_equal(t.n, 1);
    assert_int_equal(tagthrottle_paused_until(&t, 99999, 0, T0 + 8999 * MS), T0 + 9000 * MS);
    tagthrottle_fini(&t);
}

/* admit asks ts whether tag 5 under rule 0 may send one unit at now. */
static tagset_hold admit(tagset *ts, uint64_t now_ns, uint64_t *retry_ns)
{
    *retry_ns = 0;
    return tagset_admit(ts, 0, 0, 5, 1, now_ns, retry_ns);
}

static void cut_holds_the_tags_bucket_exact(void **state)
{
    (void)state;
    tagset ts;
    tagset_init(&ts);
    tagset_rule r = {.pattern = "free-*", .weight = 1, .each = 1, .nwin = 1,
                     .win = {{.count_milli = 10000, .period_ms = 1000, .burst = 2}}};
    assert_int_equal(tagset_put(&ts, &r, T0), SL_OK);
    uint64_t retry;
    assert_int_equal(tagset_charge(&ts, 0, 5, 1, T0), SL_OK); /* its own bucket: one of two used */
    /* a 429: cut to 5/s and paused for 300 ms */
    assert_int_equal(tagset_cut(&ts, 0, 5, 5000, T0 + 300 * MS, T0), SL_OK);
    assert_int_equal(admit(&ts, T0 + 299 * MS, &retry), TAGSET_RATE);
    assert_int_equal(retry, T0 + 300 * MS);
    assert_int_equal(admit(&ts, T0 + 300 * MS, &retry), TAGSET_GO); /* one at a time after the pause */
    assert_int_equal(tagset_charge(&ts, 0, 5, 1, T0 + 300 * MS), SL_OK);
    assert_int_equal(admit(&ts, T0 + 300 * MS, &retry), TAGSET_RATE);
    assert_int_equal(retry, T0 + 500 * MS); /* 5/s: 200 ms a unit, no burst after the pause */
    /* another tag of the pattern has its own bucket: untouched */
    assert_int_equal(tagset_admit(&ts, 0, 0, 6, 1, T0, &retry), TAGSET_GO);
    /* back at the base: the window as set (10/s) */
    assert_int_equal(tagset_charge(&ts, 0, 5, 1, T0 + 500 * MS), SL_OK);
    assert_int_equal(tagset_cut(&ts, 0, 5, 0, 0, T0 + 500 * MS), SL_OK);
    assert_int_equal(admit(&ts, T0 + 500 * MS, &retry), TAGSET_RATE);
    assert_int_equal(retry, T0 + 600 * MS);
    /* a pattern without a rate limit has no bucket to cut */
    tagset_rule w = {.pattern = "gold-*", .weight = 4};
    assert_int_equal(tagset_put(&ts, &w, T0), SL_OK);
    assert_int_equal(tagset_cut(&ts, 1, 5, 5000, 0, T0), SL_ENOTFOUND);
    tagset_fini(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cut_and_climb_exact),
        cmocka_unit_test(pause_is_found_by_id_until_it_ends),
        cmocka_unit_test(cut_climbs_back_and_is_forgotten_when_calm),
        cmocka_unit_test(bound_evicts_only_what_holds_nothing),
        cmocka_unit_test(cut_holds_the_tags_bucket_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
