/*
 * test_conn.c - the connection table (broker/sched/conn.c): 300 routing ids
 * found and required again without a copy, one removed and no longer found,
 * the slots kept dense, an empty routing id refused, the same routing id on
 * another endpoint another conn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"

static void conn_table_finds_and_removes(void **state)
{
    (void)state;
    conn_table t;
    assert_int_equal(conn_table_init(&t), 0);
    char rid[8];
    for (int i = 0; i < 300; i++) {
        memcpy(rid, &i, sizeof i);
        assert_non_null(conn_require(&t, 0, rid, sizeof i, 1));
    }
    assert_int_equal(t.len, 300);
    int k = 150;
    memcpy(rid, &k, sizeof k);
    conn *c = conn_find(&t, 0, rid, sizeof k);
    assert_non_null(c);
    assert_ptr_equal(conn_require(&t, 0, rid, sizeof k, 1), c);
    conn_remove(&t, c);
    assert_null(conn_find(&t, 0, rid, sizeof k));
    assert_int_equal(t.len, 299);
    for (size_t i = 0; i < t.len; i++)
        assert_int_equal(t.all[i]->slot, i);
    assert_null(conn_require(&t, 0, rid, 0, 1));
    /* the same routing id on another endpoint is another conn */
    k = 7;
    memcpy(rid, &k, sizeof k);
    conn *main_c = conn_find(&t, 0, rid, sizeof k);
    conn *admin_c = conn_require(&t, 1, rid, sizeof k, 1);
    assert_non_null(main_c);
    assert_non_null(admin_c);
    assert_true(main_c != admin_c && admin_c->sock == 1 && admin_c->fd == -1);
    assert_ptr_equal(conn_find(&t, 1, rid, sizeof k), admin_c);
    assert_ptr_equal(conn_find(&t, 0, rid, sizeof k), main_c);
    conn_table_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conn_table_finds_and_removes),
    };
    return cmocka_run_group_tests_name("conn", tests, NULL, NULL);
}
