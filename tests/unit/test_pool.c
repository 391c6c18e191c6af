/*
 * test_pool.c - the pool arithmetic (broker/sched/pool.c) with a
 * hand-advanced clock: pools found by name, each member's share of the
 * size, a pool open only while it has room and is not paused, the size
 * Little's law recommends (bounded), and autoscale following what it
 * measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pool.h"

static void pool_shares_and_recommendation(void **state)
{
    (void)state;
    pool_table t;
    pool_table_init(&t);
    pool *p = pool_require(&t, "workers", 7, 0x3);
    assert_non_null(p);
    assert_ptr_equal(pool_find(&t, "workers", 7), p);
    assert_null(pool_find(&t, "worker", 6));
    p->size = 10;
    p->members = 3;
    assert_int_equal(pool_share(p, 0) + pool_share(p, 1) + pool_share(p, 2), 10);
    assert_int_equal(pool_share(p, 0), 4);
    assert_int_equal(pool_share(p, 2), 3);
    p->inflight = 10;
    assert_false(pool_open(p)); /* full */
    p->size = 12;
    assert_true(pool_open(p));
    p->paused = 1;
    assert_false(pool_open(p));
    /* Little's law: 100/s held 0.05 s each keeps 5 busy; a backlog of 200
     * cleared within 2 s adds 100/s more: (100 + 100) x 0.05 = 10 */
    assert_int_equal(pool_recommend(100, 0.05, 0, 1000, 1, 64), 5);
    assert_int_equal(pool_recommend(100, 0.05, 200, 2000, 1, 64), 10);
    assert_int_equal(pool_recommend(100, 0.05, 200, 2000, 1, 8), 8);
    assert_int_equal(pool_recommend(0, 0.05, 0, 1000, 2, 8), 2);
    /* autoscale follows measurements: 4 deliveries/250 ms held 0.5 s each */
    p->autoscale = 1;
    p->min_size = 1;
    p->max_size = 100;
    p->target_wait_ms = 1000;
    assert_int_equal(pool_sample(p, 1000000000ULL, 16, 0), 0); /* first sample only records */
    p->delivered += 4;
    p->settled += 4;
    p->held_ns += 4 * 500000000ULL;
    assert_int_equal(pool_sample(p, 1250000000ULL, 16, 0), 1);
    assert_int_equal(p->size, 8); /* 16/s x 0.5 s */
    pool_table_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_shares_and_recommendation),
    };
    return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
