/*
 * test_startup.c - what sluiced checks as it starts, against the real
 * binary: a second broker on the data directory of a running one is
 * refused (exit 2), even with sluiced.lock deleted, and so is one on another data directory with the same
 * live ipc:// endpoint (the first keeps its endpoint and its messages); a
 * socket file nobody answers on (a broker killed with -9 leaves one) is
 * removed and the broker starts on it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"

/* count_lines counts the lines of the broker's log that hold what. */
static unsigned count_lines(const th_broker *b, const char *what)
{
    static char text[1 << 20];
    th_read_file(b->log, text, sizeof text);
    unsigned n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void second_broker_on_same_data_is_refused(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    th_broker other;
    assert_int_equal(th_broker_init(&other, NULL), 0);
    strcpy(other.data, f->b.data);
    const char *argv[] = {th_bin("sluiced"), "--data", other.data, "--listen", other.endpoint, NULL};
    assert_int_equal(th_run(argv, NULL, NULL, 0), 2);
    th_broker_fini(&other);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Deleting sluiced.lock (or anything but the store's own files) lets no
 * second broker in: the store holds an flock on data.mdb and on wal.log,
 * so a second sluiced on the same directory is refused (exit 2), and the
 * first broker's 200 confirmed messages are all there, while it runs and
 * after a restart. Before, the second broker opened the store too (LMDB
 * runs without its own lock file) and both confirmed the same ids. */
static void a_deleted_lock_file_lets_no_second_broker_in(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char path[400];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 0, 200, 1), SL_OK);
    snprintf(path, sizeof path, "%s/sluiced.lock", f->b.data);
    assert_int_equal(unlink(path), 0);
    th_broker other;
    assert_int_equal(th_broker_init(&other, NULL), 0);
    const char *argv[] = {th_bin("sluiced"), "--data", f->b.data, "--listen", other.endpoint, NULL};
    assert_int_equal(th_run(argv, NULL, NULL, 0), 2);
    th_broker_fini(&other);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 200);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 200);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A second broker on another data directory with the same ipc:// path is
 * refused (exit 2) and the first keeps its endpoint; before, the second
 * started and took the endpoint from the first. */
static void a_live_ipc_endpoint_is_not_taken_over(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t id = 0;
    sl_put m = {.body = "first", .body_len = 5, .level = 0};
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    th_broker other;
    assert_int_equal(th_broker_init(&other, NULL), 0);
    const char *argv[] = {th_bin("sluiced"), "--data", other.data, "--listen", f->b.endpoint, NULL};
    assert_int_equal(th_run(argv, NULL, NULL, 0), 2);
    th_broker_fini(&other);
    /* a new client still reaches the first broker, which holds the message */
    sl_client *c = th_client(&f->b, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 1);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A socket file nobody answers on (a broker killed with -9 leaves one) is
 * removed and the broker starts on it. */
static void a_stale_ipc_socket_file_is_replaced(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    const char *path = b.endpoint + strlen("ipc://");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof sa.sun_path);
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(close(fd), 0); /* the file stays; nothing listens */
    assert_int_equal(th_broker_start(&b), 0);
    assert_true(count_lines(&b, "removed the stale socket") == 1);
    sl_client *c = th_client(&b, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_broker_on_same_data_is_refused),
        cmocka_unit_test_setup_teardown(a_deleted_lock_file_lets_no_second_broker_in, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_live_ipc_endpoint_is_not_taken_over, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_stale_ipc_socket_file_is_replaced, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("startup", tests, NULL, NULL);
}
