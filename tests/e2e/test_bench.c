/*
 * test_bench.c - sluice-bench against a broker it did not start, as a user
 * points it at one: `sluice-bench -b EP`, `SLUICE_BROKER=EP sluice-bench`
 * and `sluice -b EP bench`.
 *
 * What it pins down:
 *   - each of the three reaches EP (not the default endpoint) and there
 *     refuses, before any row, a broker with a message waiting, one
 *     delayed, one in flight, or a consumer connected: exit 1, the reason
 *     and --force named, and the messages untouched (never delivered);
 *   - with --force the bench runs beside a broker's own messages: it takes
 *     none of them (a waiting one never dispatched, a delayed one still
 *     delayed), keeps to a level that held nothing, skips the rows that need
 *     the others and the metering rows (the sink's limit stays as set), and
 *     leaves no pool of its own behind;
 *   - on an idle broker the whole quick run (scheduler rows included)
 *     leaves no pool of its own behind either, and a message someone
 *     publishes while it runs is never acknowledged by it: the bench stops
 *     (exit 1), and the message is there afterwards, uncharged (its first
 *     delivery is attempt 1).
 *
 * Each bench is a process of its own, stopped by its PID, with a deadline;
 * the brokers are the harness's, in temporary directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "harness.h"
#include "proc.h"
#include "sluice.h"

#define BENCH_MS 240000 /* a --quick run on a loaded machine, raw rows included */

/* bench runs cmd under /bin/sh (stdout to dir/out, stderr to dir/err),
 * waits for it and returns its exit status; err gets its stderr. */
static int bench(const th_broker *b, const char *cmd, char *err, size_t err_len)
{
    char out_path[400], err_path[400];
    snprintf(out_path, sizeof out_path, "%s/bench.out", b->dir);
    snprintf(err_path, sizeof err_path, "%s/bench.err", b->dir);
    const char *const argv[] = {"/bin/sh", "-c", cmd, NULL};
    const proc_spec spec = {.argv = argv, .out_path = out_path, .err_path = err_path, .truncate = true,
                            .null_stdin = true, .own_group = true, .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "sluice-bench", &spec), 0);
    int st = proc_wait(&p, BENCH_MS);
    if (st == PROC_RUNNING) {
        proc_kill(&p);
        fail_msg("the bench did not end in %d s", BENCH_MS / 1000);
    }
    th_read_file(err_path, err, err_len);
    fprintf(stderr, "# %s: exit %d\n", cmd, st);
    return st;
}

static uint64_t level_stat(sl_client *c, unsigned level, int what)
{
    sl_stats s;
    assert_int_equal(sl_stats_get(c, &s), SL_OK);
    const sl_level_stats *l = &s.level[level];
    return what == 0 ? l->depth : what == 1 ? l->delayed : what == 2 ? l->dispatched : l->inflight;
}

/* no_bench_pools asserts that c's broker has no pool the bench makes. */
static void no_bench_pools(sl_client *c)
{
    sl_pool_info pools[SL_MAX_POOLS];
    unsigned n = 0;
    assert_int_equal(sl_pool_list(c, pools, &n), SL_OK);
    for (unsigned i = 0; i < n; i++) {
        fprintf(stderr, "# pool %s\n", pools[i].name);
        assert_true(strncmp(pools[i].name, "pool-", 5) != 0 && strcmp(pools[i].name, "starve") != 0);
    }
}

/* refused asserts that all three ways of pointing the bench at f's broker
 * reach it and refuse it, saying why (because) and naming --force. */
static void refused(th_fixture *f, const char *because)
{
    char cmd[1024], err[8192];
    const char *forms[] = {"'%s' -b '%s' --quick", "SLUICE_BROKER='%s' '%s' --quick", "'%s' -b '%s' bench --quick"};
    for (int i = 0; i < 3; i++) {
        const char *prog = th_bin(i == 2 ? "sluice" : "sluice-bench");
        if (i == 1)
            snprintf(cmd, sizeof cmd, forms[i], f->b.endpoint, prog);
        else
            snprintf(cmd, sizeof cmd, forms[i], prog, f->b.endpoint);
        assert_int_equal(bench(&f->b, cmd, err, sizeof err), 1);
        fprintf(stderr, "%s", err);
        assert_non_null(strstr(err, f->b.endpoint)); /* it went to EP, not the default */
        assert_non_null(strstr(err, "is in use"));
        assert_non_null(strstr(err, because));
        assert_non_null(strstr(err, "--force"));
    }
}

static void refuses_a_broker_in_use(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put m = {.body = "real", .body_len = 4, .level = 1};
    assert_int_equal(sl_send(f->c, &m, NULL), SL_OK);
    refused(f, "messages 1 waiting");
    assert_true(level_stat(f->c, 1, 0) == 1 && level_stat(f->c, 1, 2) == 0); /* never delivered */
    /* delayed */
    sl_client *c = th_client(&f->b, 5000);
    sl_delivery *d = NULL;
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 1), SL_OK);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    sl_close(&c);
    sl_put later = {.body = "later", .body_len = 5, .level = 2, .delay_ms = 600000};
    assert_int_equal(sl_send(f->c, &later, NULL), SL_OK);
    refused(f, "1 delayed");
    /* in flight, its consumer still connected */
    assert_int_equal(sl_send(f->c, &m, NULL), SL_OK);
    c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 1), SL_OK);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    refused(f, "1 in flight; consumers connected: 1");
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    refused(f, "consumers connected: 1"); /* a consumer alone */
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void force_takes_only_its_own(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char cmd[1024], err[16384];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_put now = {.body = "real", .body_len = 4, .level = 1};
    sl_put later = {.body = "later", .body_len = 5, .level = 2, .delay_ms = 600000};
    assert_int_equal(sl_send(f->c, &now, NULL), SL_OK);
    assert_int_equal(sl_send(f->c, &later, NULL), SL_OK);
    assert_int_equal(sl_sink_set(f->c, 900000 * 1000ull, 3, SL_UNCHANGED), SL_OK); /* a limit, the bench's pace unhurt */
    snprintf(cmd, sizeof cmd, "'%s' -b '%s' --quick --force", th_bin("sluice-bench"), f->b.endpoint);
    if (bench(&f->b, cmd, err, sizeof err) != 0) /* what it said last */
        fail_msg("the bench failed, saying:\n%s", strlen(err) > 900 ? err + strlen(err) - 900 : err);
    assert_non_null(strstr(err, "skipped: end-to-end dispatch"));
    assert_non_null(strstr(err, "skipped: metering"));
    assert_true(level_stat(f->c, 1, 0) == 1 && level_stat(f->c, 1, 2) == 0); /* the broker's own: untouched */
    assert_true(level_stat(f->c, 2, 1) == 1 && level_stat(f->c, 2, 2) == 0);
    assert_true(level_stat(f->c, 0, 2) > 0 && level_stat(f->c, 0, 0) == 0); /* the bench's, on level 0, all taken */
    sl_sink_info s;
    assert_int_equal(sl_sink_show(f->c, &s), SL_OK);
    assert_true(s.rate_milli == 900000 * 1000ull && s.burst == 3); /* the metering rows never ran */
    no_bench_pools(f->c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void idle_broker_left_as_found(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char cmd[1024], err[16384];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    snprintf(cmd, sizeof cmd, "'%s' -b '%s' bench --quick", th_bin("sluice"), f->b.endpoint);
    assert_int_equal(bench(&f->b, cmd, err, sizeof err), 0);
    assert_null(strstr(err, "skipped: end-to-end dispatch")); /* the scheduler rows ran: they make pools */
    for (unsigned l = 0; l < 3; l++)
        assert_true(level_stat(f->c, l, 0) == 0 && level_stat(f->c, l, 3) == 0);
    no_bench_pools(f->c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A message published while the bench runs is never acknowledged by it. */
static void a_message_published_meanwhile_is_left_alone(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char cmd[1024], err[16384], out_path[400], err_path[400];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    snprintf(cmd, sizeof cmd, "'%s' -b '%s' --quick", th_bin("sluice-bench"), f->b.endpoint);
    snprintf(out_path, sizeof out_path, "%s/bench.out", f->b.dir);
    snprintf(err_path, sizeof err_path, "%s/bench.err", f->b.dir);
    const char *const argv[] = {"/bin/sh", "-c", cmd, NULL};
    const proc_spec spec = {.argv = argv, .out_path = out_path, .err_path = err_path, .truncate = true,
                            .null_stdin = true, .own_group = true, .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "sluice-bench", &spec), 0);
    /* once the bench publishes (its first rows), a message of someone else's on the same level */
    uint64_t end = th_now_ms() + 30000;
    while (level_stat(f->c, 1, 0) == 0 && th_now_ms() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    sl_put m = {.body = "someone's", .body_len = 9, .level = 1};
    uint64_t id = 0;
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    int st = proc_wait(&p, BENCH_MS);
    if (st == PROC_RUNNING)
        proc_kill(&p);
    th_read_file(err_path, err, sizeof err);
    fprintf(stderr, "%s# exit %d\n", err, st);
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "which the bench did not publish"));
    /* it is there, never acknowledged, and its next delivery is its first attempt */
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 1000), SL_OK);
    int found = 0;
    for (int i = 0; i < 200000 && !found; i++) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 2000, &d) != SL_OK)
            break;
        if (d->id == id) {
            found = 1;
            assert_int_equal(d->attempt, 1);
            assert_true(d->body_len == 9 && memcmp(d->body, "someone's", 9) == 0);
        } else {
            assert_true(strncmp(d->tag, "sluice-bench-", 13) == 0); /* the rest is the bench's own */
        }
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_true(found);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refuses_a_broker_in_use),
        cmocka_unit_test(force_takes_only_its_own),
        cmocka_unit_test(idle_broker_left_as_found),
        cmocka_unit_test(a_message_published_meanwhile_is_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
