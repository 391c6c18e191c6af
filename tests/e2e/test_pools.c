/*
 * test_pools.c - consumer pools' lifecycle in the real sluiced: `pool
 * delete` is refused while the pool has a member and, forced, returns the
 * member's delivery uncharged and removes the pool for good (across a
 * restart too; "default" and unknown pools are refused; the CLI's exit
 * codes and JSON); a pool consumers named and nobody configured goes away
 * once idle for --pool-reap-ms while a sized one stays, and --pool-max
 * bounds the table.
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

/* has_pool tells whether the broker lists a pool called name. */
static int has_pool(sl_client *c, const char *name)
{
    static sl_pool_info pools[SL_MAX_POOLS];
    unsigned n = 0;
    assert_int_equal(sl_pool_list(c, pools, &n), SL_OK);
    for (unsigned i = 0; i < n; i++)
        if (strcmp(pools[i].name, name) == 0)
            return 1;
    return 0;
}

/* pool delete: refused while the pool has a member; forced, the member's
 * delivery returns uncharged and the pool is gone, across a restart too;
 * "default" and unknown pools are refused. The CLI's exit codes and JSON. */
static void pool_delete_refuses_members_unless_forced(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_client *worker = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(worker, "work", NULL, 0, 1), SL_OK);
    uint64_t id = 0;
    sl_put m = {.body = "job", .body_len = 3, .level = 1};
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(worker, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    sl_delivery_free(&d);

    assert_int_equal(sl_pool_delete(f->c, "work", 0), SL_ESTATE);
    assert_true(has_pool(f->c, "work"));
    char out[512];
    const char *no_force[] = {th_bin("sluice"), "-b", f->b.endpoint, "pool", "delete", "work", NULL};
    assert_int_equal(th_run(no_force, NULL, out, sizeof out), 1);
    const char *forced[] = {th_bin("sluice"), "-b", f->b.endpoint, "pool", "delete", "work", "--force", "--json",
                            NULL};
    assert_int_equal(th_run(forced, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "{\"pool\":\"work\",\"deleted\":true,\"forced\":true}"));
    assert_false(has_pool(f->c, "work"));
    assert_int_equal(sl_pool_delete(f->c, "work", 0), SL_ENOTFOUND);
    sl_close(&worker);

    /* the held delivery came back uncharged: attempt 1 again */
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    assert_int_equal(sl_recv(f->c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    assert_int_equal(d->attempt, 1);
    assert_int_equal(sl_pool_delete(f->c, "default", 1), SL_EINVAL);
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_flush(f->c, 5000), SL_OK);

    /* gone for good: not back after a restart */
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_false(has_pool(f->c, "work"));
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A pool consumers named and nobody configured goes away once idle for
 * --pool-reap-ms; a sized one stays. --pool-max bounds the table, and
 * reaping frees room in it. */
static void idle_implicit_pools_go_away_and_the_limit_is_a_setting(void **state)
{
    (void)state;
    static const char *const extra[] = {"--pool-reap-ms", "200", "--pool-max", "3", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    assert_int_equal(sl_pool_resize(f->c, "kept", 3), SL_OK);
    sl_client *tmp[3];
    char name[16];
    for (int i = 0; i < 3; i++) {
        tmp[i] = th_client(&f->b, 5000);
        snprintf(name, sizeof name, "tmp%d", i);
        int rc = sl_subscribe(tmp[i], name, NULL, 0, 1);
        sl_stats st; /* a round trip on the same connection: the HELLO's answer is in by then */
        int rc2 = rc == SL_OK ? sl_stats_get(tmp[i], &st) : rc;
        if (i < 2)
            assert_int_equal(rc2, SL_OK);
        else
            assert_int_equal(rc2, SL_EFULL);
    }
    /* "kept", "tmp0" and "tmp1" are three pools, the limit: "tmp2" is refused */
    assert_true(has_pool(f->c, "tmp0") && has_pool(f->c, "tmp1"));
    assert_false(has_pool(f->c, "tmp2"));
    for (int i = 0; i < 3; i++)
        sl_close(&tmp[i]);
    uint64_t deadline = th_now_ms() + 10000;
    while ((has_pool(f->c, "tmp0") || has_pool(f->c, "tmp1")) && th_now_ms() < deadline) {
        sl_delivery *none = NULL; /* wait, without a fixed sleep, on a recv that times out */
        sl_recv(f->c, 50, &none);
    }
    assert_false(has_pool(f->c, "tmp0"));
    assert_false(has_pool(f->c, "tmp1"));
    assert_true(has_pool(f->c, "kept"));
    sl_client *again = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(again, "tmp2", NULL, 0, 1), SL_OK);
    sl_close(&again);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(pool_delete_refuses_members_unless_forced, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(idle_implicit_pools_go_away_and_the_limit_is_a_setting, th_timeout_arm,
                                        th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("pools", tests, NULL, NULL);
}
