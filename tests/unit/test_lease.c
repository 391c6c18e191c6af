/*
 * test_lease.c - the lease table (broker/sched/lease.c) with a
 * hand-advanced clock: tokens are random (every bit seen both ways, no
 * two alike in 10,000), never 0 and never one already held (a source that
 * repeats itself is drawn from again), and are found by value, leases expire in deadline order, an extension moves one back,
 * freeing one updates its connection's count; 5,000 leases touched over
 * several rounds expire exactly as touched.
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

static void leases_expire_touch_and_free(void **state)
{
    (void)state;
    lease_table t;
    conn_table ct;
    assert_int_equal(lease_table_init(&t), 0);
    assert_int_equal(conn_table_init(&ct), 0);
    conn *c = conn_require(&ct, 0, "rid-1", 5, 0x7);
    assert_non_null(c);
    lease *a = lease_new(&t, c, 0, 100, 1, 1, 1000);
    lease *b = lease_new(&t, c, 1, 200, 2, 1, 2000);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a->token != b->token);
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

/* Tokens are 64 random bits: over 10,000 leases no two alike, every bit
 * both 0 and 1, and no token one more than the one before (the old counter). */
static void tokens_are_random(void **state)
{
    (void)state;
    enum { N = 10000 };
    lease_table t;
    assert_int_equal(lease_table_init(&t), 0);
    uint64_t ones = 0, zeros = 0, prev = 0;
    unsigned successive = 0;
    for (int i = 0; i < N; i++) {
        lease *l = lease_new(&t, NULL, 0, (uint64_t)i, (uint64_t)i, 1, 1000);
        assert_non_null(l);
        assert_true(l->token != 0);
        ones |= l->token;
        zeros |= ~l->token;
        successive += l->token == prev + 1;
        prev = l->token;
    }
    assert_int_equal(t.len, N); /* all distinct: each was found free */
    assert_true(ones == UINT64_MAX && zeros == UINT64_MAX);
    assert_true(successive == 0);
    lease_table_fini(&t);
}

/* A source that gives 0 and tokens already held: those are drawn again. */
static uint64_t scripted[] = {5, 9, 0, 9, 5, 0, 0, 7};
static size_t scripted_at;
static int scripted_fill(uint64_t *buf, size_t n)
{
    for (size_t i = n; i-- > 0;) /* the table takes them from the end */
        buf[i] = scripted[scripted_at++ % (sizeof scripted / sizeof scripted[0])];
    return 0;
}

static void tokens_are_never_zero_nor_repeated(void **state)
{
    (void)state;
    lease_table t;
    assert_int_equal(lease_table_init(&t), 0);
    t.fill = scripted_fill;
    scripted_at = 0;
    uint64_t a = lease_new(&t, NULL, 0, 1, 1, 1, 10)->token;
    uint64_t b = lease_new(&t, NULL, 0, 2, 2, 1, 10)->token;
    uint64_t c = lease_new(&t, NULL, 0, 3, 3, 1, 10)->token;
    assert_true(a == 5 && b == 9 && c == 7); /* 0, 9 and 5 again were skipped */
    lease_table_fini(&t);
}

static void many_leases_and_touches_stay_consistent(void **state)
{
    (void)state;
    lease_table t;
    assert_int_equal(lease_table_init(&t), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leases_expire_touch_and_free),
        cmocka_unit_test(many_leases_and_touches_stay_consistent),
        cmocka_unit_test(tokens_are_random),
        cmocka_unit_test(tokens_are_never_zero_nor_repeated),
    };
    return cmocka_run_group_tests_name("lease", tests, NULL, NULL);
}
