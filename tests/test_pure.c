/*
 * test_pure.c - the pure broker modules with a hand-advanced clock: the
 * timer heap, the lease table, the connection table and the pool arithmetic.
 * The pick rule has its own file, test_disp.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"
#include "lease.h"
#include "pool.h"
#include "tmr.h"

static void heap_pops_in_order_and_respects_limit(void **state)
{
    (void)state;
    tmr t;
    tmr_init(&t);
    srand(7);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(tmr_push(&t, (uint64_t)(rand() % 1000), (uint64_t)i), 0);
    assert_true(tmr_next(&t) <= 1);
    tmr_entry e, prev = {0, 0};
    int n = 0;
    while (tmr_pop(&t, 499, &e)) {
        assert_true(e.at <= 499);
        assert_true(e.at > prev.at || (e.at == prev.at && e.id > prev.id) || n == 0);
        prev = e;
        n++;
    }
    assert_true(tmr_next(&t) >= 500);
    while (tmr_pop(&t, TMR_NEVER, &e))
        n++;
    assert_int_equal(n, 5000);
    assert_true(tmr_next(&t) == TMR_NEVER);
    tmr_fini(&t);
}

static void leases_expire_touch_and_free(void **state)
{
    (void)state;
    lease_table t;
    conn_table ct;
    assert_int_equal(lease_table_init(&t, 0xABCDEF), 0);
    assert_int_equal(conn_table_init(&ct), 0);
    conn *c = conn_require(&ct, "rid-1", 5, 0x7);
    assert_non_null(c);
    lease *a = lease_new(&t, c, 0, 100, 1, 1, 1000);
    lease *b = lease_new(&t, c, 1, 200, 2, 1, 2000);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a->token != b->token);
    assert_true((a->token >> 40) == 0xABCDEF);
    assert_int_equal(c->nleases, 2);
    assert_ptr_equal(lease_find(&t, b->token), b);
    assert_null(lease_find(&t, b->token + 12345));
    /* nothing due before 1000 */
    assert_null(lease_expired(&t, 999));
    /* extend a past b: a is no longer due at 1000, b expires first */
    lease_extend(&t, a, 3000);
    assert_null(lease_expired(&t, 1500));
    assert_ptr_equal(lease_expired(&t, 2000), b);
    lease_free(&t, b);
    assert_int_equal(c->nleases, 1);
    assert_null(lease_expired(&t, 2999));
    assert_ptr_equal(lease_expired(&t, 3000), a);
    lease_free(&t, a);
    assert_int_equal(c->nleases, 0);
    assert_null(c->leases);
    conn_remove(&ct, c);
    assert_int_equal(ct.len, 0);
    conn_table_fini(&ct);
    lease_table_fini(&t);
}

static void many_leases_and_touches_stay_consistent(void **state)
{
    (void)state;
    lease_table t;
    assert_int_equal(lease_table_init(&t, 1), 0);
    enum { N = 5000 };
    uint64_t tokens[N];
    for (int i = 0; i < N; i++)
        tokens[i] = lease_new(&t, NULL, 0, (uint64_t)i, (uint64_t)i, 1, 100 + (uint64_t)i)->token;
    for (int round = 0; round < 5; round++)
        for (int i = 0; i < N; i += 2)
            lease_extend(&t, lease_find(&t, tokens[i]), 1000000 + (uint64_t)round);
    int expired = 0;
    lease *l;
    while ((l = lease_expired(&t, 999999))) {
        assert_true(l->id % 2 == 1);
        lease_free(&t, l);
        expired++;
    }
    assert_int_equal(expired, N / 2);
    assert_int_equal(t.len, N / 2);
    lease_table_fini(&t);
}

static void conn_table_finds_and_removes(void **state)
{
    (void)state;
    conn_table t;
    assert_int_equal(conn_table_init(&t), 0);
    char rid[8];
    for (int i = 0; i < 300; i++) {
        memcpy(rid, &i, sizeof i);
        assert_non_null(conn_require(&t, rid, sizeof i, 1));
    }
    assert_int_equal(t.len, 300);
    int k = 150;
    memcpy(rid, &k, sizeof k);
    conn *c = conn_find(&t, rid, sizeof k);
    assert_non_null(c);
    assert_ptr_equal(conn_require(&t, rid, sizeof k, 1), c);
    conn_remove(&t, c);
    assert_null(conn_find(&t, rid, sizeof k));
    assert_int_equal(t.len, 299);
    for (size_t i = 0; i < t.len; i++)
        assert_int_equal(t.all[i]->slot, i);
    assert_null(conn_require(&t, rid, 0, 1));
    conn_table_fini(&t);
}

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
        cmocka_unit_test(heap_pops_in_order_and_respects_limit),
        cmocka_unit_test(leases_expire_touch_and_free),
        cmocka_unit_test(many_leases_and_touches_stay_consistent),
        cmocka_unit_test(conn_table_finds_and_removes),
        cmocka_unit_test(pool_shares_and_recommendation),
    };
    return cmocka_run_group_tests_name("pure", tests, NULL, NULL);
}
