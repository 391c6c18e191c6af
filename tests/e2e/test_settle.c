/*
 * test_settle.c - settlements without a round trip, end to end: a consumer
 * acks without waiting for the broker's answers and loses none of them
 * (after sl_flush the broker counts every ack, and none was refused), and
 * `sluice consume` exits at once on SIGTERM when its broker has gone away
 * (it used to wait a second for frames nobody would read, and could wait
 * for answers that would never come).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "proc.h"
#include "sluice.h"

enum { MSGS = 2000 };

static void acks_without_waiting_all_count(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 1, MSGS, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    unsigned got = 0;
    for (unsigned i = 0; i < 10 * MSGS && got < MSGS; i++) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 1000, &d) != SL_OK)
            continue;
        got++;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(got, MSGS);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    assert_int_equal(sl_refused(c), 0);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].acked, MSGS);
    assert_int_equal(st.level[1].depth, 0);
    assert_int_equal(st.level[1].inflight, 0);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void consume_exits_at_once_when_its_broker_is_gone(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char out_path[400], text[64];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 1, 1, 1), SL_OK);
    snprintf(out_path, sizeof out_path, "%s/consume.out", f->b.dir);
    const char *const argv[] = {th_bin("sluice"), "-b", f->b.endpoint, "consume", NULL};
    const proc_spec spec = {.argv = argv, .out_path = out_path, .truncate = true, .null_stdin = true,
                            .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "sluice consume", &spec), 0);
    /* it is connected and consuming once the message is printed */
    uint64_t until = th_now_ms() + 10000;
    while (th_now_ms() < until && th_read_file(out_path, text, sizeof text) < 2)
        usleep(10 * 1000);
    assert_true(th_read_file(out_path, text, sizeof text) >= 2);
    th_broker_kill9(&f->b);
    uint64_t t0 = th_now_ms();
    int st = proc_stop(&p, 5000);
    uint64_t took = th_now_ms() - t0;
    fprintf(stderr, "# sluice consume exited %llu ms after SIGTERM, status %d\n", (unsigned long long)took, st);
    assert_true(st >= 0);
    assert_true(took < 1000);
    sl_close(&f->c);
    th_broker_fini(&f->b);
    free(f);
}

/* A settlement whose connection is lost before the broker answered it may
 * never have been applied: sl_flush must not report it accepted. */
static void flush_does_not_vouch_for_a_lost_connection(void **state)
{
    (void)state;
    const char *const extra[] = {"--heartbeat-ms", "300", "--ack-flush-ms", "0", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    assert_int_equal(th_put_many(f->c, 1, 1, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(kill(f->b.pid, SIGSTOP), 0); /* the broker hears nothing more */
    assert_int_equal(sl_ack(c, d), SL_OK);        /* sent; its answer cannot come */
    sl_delivery_free(&d);
    int rc = sl_flush(c, 10000);
    fprintf(stderr, "# flush after the broker stopped answering: %s, %llu refused\n", sl_errname(rc),
            (unsigned long long)sl_refused(c));
    assert_int_equal(kill(f->b.pid, SIGCONT), 0);
    assert_int_not_equal(rc, SL_OK);
    if (rc == SL_ECONNECT)
        assert_true(sl_refused(c) >= 1);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acks_without_waiting_all_count),
        cmocka_unit_test(consume_exits_at_once_when_its_broker_is_gone),
        cmocka_unit_test(flush_does_not_vouch_for_a_lost_connection),
    };
    th_seed();
    return cmocka_run_group_tests_name("settle", tests, NULL, NULL);
}
