/*
 * test_disp.c - the pick rule, exactly, with a hand-set clock.
 *
 * Each test builds level snapshots by hand and checks which level wins and
 * why: strict priority, subscriptions, pause, aging (including the tie rule),
 * deadlines served earliest first, and the cap on overdue picks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "disp.h"

#define S 1000000000ULL /* one second in ns */
#define ALL 0xFFFFu

static void strict_priority_within_subscription(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 50);
    disp_level lv[4] = {{.ready = 0}, {.ready = 5}, {.ready = 3}, {.ready = 9}};
    disp_reason why;
    assert_int_equal(disp_pick(&st, lv, 4, ALL, 0, &why), 1);
    assert_int_equal(why, DISP_PRIORITY);
    assert_int_equal(disp_pick(&st, lv, 4, 0x1 | 0x4 | 0x8, 0, NULL), 2);
    assert_int_equal(disp_pick(&st, lv, 4, 0x1, 0, &why), -1);
    assert_int_equal(why, DISP_NONE);
    lv[0].ready = 1;
    assert_int_equal(disp_pick(&st, lv, 4, ALL, 0, NULL), 0);
    assert_int_equal(disp_pick(&st, lv, 3, 0x8, 0, NULL), -1); /* level 3 is not configured */
}

static void paused_levels_are_skipped(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 50);
    disp_level lv[3] = {{.ready = 4, .paused = 1}, {.ready = 0}, {.ready = 2}};
    disp_reason why;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 0, &why), 2);
    assert_int_equal(why, DISP_PRIORITY); /* highest *eligible* level */
    lv[2].paused = 1;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 0, NULL), -1);
}

static void no_aging_no_deadline_means_no_inversion(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 50);
    /* level 2's head has waited an hour; without aging or a deadline, level 0 wins every time */
    disp_level lv[3] = {{.ready = 1000, .head_ns = 3600 * S}, {.ready = 0}, {.ready = 1, .head_ns = 1}};
    for (int i = 0; i < 1000; i++)
        assert_int_equal(disp_pick(&st, lv, 3, ALL, 3600 * S, NULL), 0);
}

static void aging_lifts_a_waiting_level(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 50);
    /* aging step 1 s on level 2: after 1.5 s its effective level is 0.5,
     * still behind a fresh level 0 (effective 0); after 2.5 s it is -0.5 */
    disp_level lv[3] = {{.ready = 10, .head_ns = 100 * S}, {.ready = 0},
                        {.ready = 1, .head_ns = 100 * S, .aging_ns = S}};
    disp_reason why;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 100 * S + 3 * S / 2, &why), 0);
    assert_int_equal(why, DISP_PRIORITY);
    lv[0].head_ns = 102 * S; /* level 0's head is fresh */
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 100 * S + 5 * S / 2, &why), 2);
    assert_int_equal(why, DISP_AGED);
}

static void aging_tie_goes_to_the_older_head(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 50);
    /* level 1 aged exactly one step ties with level 0 (effective 0 each):
     * the older head wins */
    disp_level lv[2] = {{.ready = 1, .head_ns = 10 * S}, {.ready = 1, .head_ns = 9 * S, .aging_ns = S}};
    disp_reason why;
    assert_int_equal(disp_pick(&st, lv, 2, ALL, 10 * S, &why), 1);
    assert_int_equal(why, DISP_AGED);
    lv[1].head_ns = 10 * S - S; /* still 1 s waited at now = 10 s ... */
    lv[0].head_ns = 8 * S;      /* ... but level 0's head is older now */
    assert_int_equal(disp_pick(&st, lv, 2, ALL, 10 * S, NULL), 0);
}

static void overdue_is_served_earliest_deadline_first(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 100);
    disp_level lv[3] = {{.ready = 100, .head_ns = 50 * S},
                        {.ready = 1, .head_ns = 40 * S, .deadline_ns = 5 * S},  /* due at 45 */
                        {.ready = 1, .head_ns = 30 * S, .deadline_ns = 12 * S}}; /* due at 42 */
    disp_reason why;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 44 * S, &why), 2); /* only level 2 is overdue */
    assert_int_equal(why, DISP_OVERDUE);
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 46 * S, &why), 2); /* both overdue: 42 < 45 */
    lv[2].ready = 0;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 46 * S, &why), 1);
    assert_int_equal(why, DISP_OVERDUE);
    lv[1].ready = 0;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 46 * S, &why), 0);
    assert_int_equal(why, DISP_PRIORITY);
}

static void overdue_picks_are_capped_to_their_share(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 25);
    disp_level lv[2] = {{.ready = 1000000, .head_ns = 100 * S},
                        {.ready = 1000000, .head_ns = 1 * S, .deadline_ns = S}};
    int overdue = 0, run = 0, longest_run = 0;
    for (int i = 0; i < 1000; i++) {
        disp_reason why;
        int l = disp_pick(&st, lv, 2, ALL, 100 * S, &why);
        if (why == DISP_OVERDUE) {
            assert_int_equal(l, 1);
            overdue++;
            run++;
            longest_run = run > longest_run ? run : longest_run;
        } else {
            assert_int_equal(l, 0); /* the top level keeps the rest */
            run = 0;
        }
    }
    assert_in_range(overdue, 250, 251); /* 25 % of 1000, plus the initial budget */
    assert_int_equal(longest_run, 1);    /* never a burst */
}

static void blocked_levels_wait_and_guarantees_come_second(void **state)
{
    (void)state;
    disp_state st;
    disp_init(&st, 50);
    disp_level lv[3] = {{.ready = 5, .blocked = 1}, {.ready = 5}, {.ready = 5, .below_min = 1}};
    disp_reason why;
    /* level 0 is held by its ceiling: not eligible, so it is no inversion */
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 0, &why), 2);
    assert_int_equal(why, DISP_GUARANTEED); /* below its guaranteed rate: before level 1 */
    lv[2].below_min = 0;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 0, &why), 1);
    assert_int_equal(why, DISP_PRIORITY);
    /* an overdue head still comes before a guarantee */
    lv[1].deadline_ns = S;
    lv[1].head_ns = 1;
    lv[2].below_min = 1;
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 5 * S, &why), 1);
    assert_int_equal(why, DISP_OVERDUE);
    lv[1].blocked = 1; /* a blocked level is not served even when overdue */
    assert_int_equal(disp_pick(&st, lv, 3, ALL, 5 * S, &why), 2);
}

static void reason_names(void **state)
{
    (void)state;
    assert_string_equal(disp_reason_name(DISP_PRIORITY), "priority");
    assert_string_equal(disp_reason_name(DISP_AGED), "aged");
    assert_string_equal(disp_reason_name(DISP_OVERDUE), "overdue");
    assert_string_equal(disp_reason_name(DISP_GUARANTEED), "guaranteed");
    assert_string_equal(disp_reason_name(DISP_NONE), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strict_priority_within_subscription),
        cmocka_unit_test(paused_levels_are_skipped),
        cmocka_unit_test(no_aging_no_deadline_means_no_inversion),
        cmocka_unit_test(aging_lifts_a_waiting_level),
        cmocka_unit_test(aging_tie_goes_to_the_older_head),
        cmocka_unit_test(overdue_is_served_earliest_deadline_first),
        cmocka_unit_test(overdue_picks_are_capped_to_their_share),
        cmocka_unit_test(blocked_levels_wait_and_guarantees_come_second),
        cmocka_unit_test(reason_names),
    };
    return cmocka_run_group_tests_name("disp", tests, NULL, NULL);
}
