/*
 * test_durability.c - what the real sluiced keeps across a stop and a
 * kill -9, driven through the client library: a restart keeps every
 * confirmed message and returns what was in flight to the head of its
 * level (ids never repeat); kill -9 in the middle of a pipelined publishing
 * load loses nothing confirmed; publishes in flight when the broker dies
 * each end (confirmed or SL_ECONNECT) once the client reconnects; an
 * acknowledgement is durable once its flush window has passed, or as soon
 * as its OK arrives with --ack-flush-ms 0. The log's records are written
 * through a descriptor opened O_DIRECT | O_DSYNC where the file system
 * takes one (else the broker says why, and flushes with fdatasync), and
 * never with --wal-buffered.
 *
 * Every test starts its own broker in its own temporary directory on an
 * ipc:// endpoint and stops it by PID. Nothing is mocked; the load test
 * prints its seed (SLUICE_SEED replays it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

/* put publishes body synchronously and returns its id, which is never 0. */
static uint64_t put(sl_client *c, int level, const char *body)
{
    uint64_t id = 0;
    sl_put m = {.body = body, .body_len = strlen(body), .level = level, .tag = NULL};
    int rc = sl_send(c, &m, &id);
    if (rc != SL_OK)
        fail_msg("sl_send: %s: %s", sl_errname(rc), sl_last_error(c));
    assert_true(id > 0);
    return id;
}

static sl_delivery *recv_one(sl_client *c, int timeout_ms)
{
    sl_delivery *d = NULL;
    int rc = sl_recv(c, timeout_ms, &d);
    if (rc != SL_OK)
        fail_msg("sl_recv: %s", sl_errname(rc));
    return d;
}

static void restart_keeps_confirmed_and_returns_inflight(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t a = put(f->c, 0, "was in flight");
    uint64_t b = put(f->c, 0, "was waiting");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(c, 5000);
    assert_true(d->id == a);
    sl_delivery_free(&d);
    sl_close(&c);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 2);
    assert_int_equal(st.level[0].inflight, 0);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 1), SL_OK);
    d = recv_one(f->c, 5000);
    assert_true(d->id == a); /* back at the head */
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    d = recv_one(f->c, 5000);
    assert_true(d->id == b);
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    uint64_t c3 = put(f->c, 0, "after restart");
    assert_true(c3 > b); /* ids never repeat */
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* kill -9 in the middle of a pipelined publishing load: every confirmed
 * message must be delivered after the restart. */
static void kill9_loses_nothing_confirmed(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    enum { TOTAL = 20000, KILL_AT = 3000 };
    uint8_t *confirmed = calloc(TOTAL, 1);
    uint64_t *ticket_of = calloc(TOTAL, sizeof *ticket_of);
    size_t nconfirmed = 0, sent = 0;
    char body[32];
    unsigned seed = th_seed();
    int killed = 0;
    uint64_t t_end = th_now_ms() + 60000;
    while (th_now_ms() < t_end && (sent < TOTAL || sl_send_pending(f->c))) {
        while (!killed && sent < TOTAL && sl_send_pending(f->c) < 200) {
            snprintf(body, sizeof body, "m%06zu", sent);
            sl_put m = {.body = body, .body_len = strlen(body), .level = (int)((sent + seed) % 3)};
            assert_int_equal(sl_send_async(f->c, &m, &ticket_of[sent]), SL_OK);
            sent++;
        }
        if (killed && !sl_send_pending(f->c))
            break; /* every publish before the kill was answered before it took effect */
        sl_confirm cf;
        int rc = sl_send_wait(f->c, killed ? 300 : 5000, &cf);
        if (rc == SL_ETIMEDOUT && killed)
            break;
        assert_int_equal(rc, SL_OK);
        if (cf.err == SL_OK) {
            size_t idx = (size_t)(cf.ticket - ticket_of[0]);
            assert_true(idx < sent);
            confirmed[idx] = 1;
            nconfirmed++;
        }
        if (!killed && nconfirmed >= KILL_AT) {
            th_broker_kill9(&f->b);
            killed = 1;
        }
    }
    assert_true(killed);
    sl_close(&f->c);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 64), SL_OK);
    uint8_t *seen = calloc(TOTAL, 1);
    size_t delivered = 0;
    sl_delivery *d;
    while (sl_recv(f->c, 1000, &d) == SL_OK) {
        unsigned idx;
        assert_int_equal(sscanf(d->body, "m%u", &idx), 1);
        assert_true(idx < sent); /* nothing unexpected */
        seen[idx] = 1;
        delivered++;
        assert_int_equal(sl_ack(f->c, d), SL_OK);
        sl_delivery_free(&d);
    }
    size_t lost = 0;
    for (size_t i = 0; i < sent; i++)
        lost += confirmed[i] && !seen[i];
    fprintf(stderr, "# kill -9 after %zu confirmed of %zu sent: %zu delivered after restart, %zu lost\n",
            nconfirmed, sent, delivered, lost);
    assert_int_equal(lost, 0);
    assert_true(delivered >= nconfirmed);
    free(confirmed);
    free(ticket_of);
    free(seen);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Publishes in flight when the broker dies are not left pending forever:
 * after the client reconnects, each is confirmed, stored or SL_ECONNECT. */
static void pending_publishes_end_after_a_restart(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_levels(f->c, NULL, NULL), SL_OK); /* connected for real */
    kill(f->b.pid, SIGSTOP); /* frozen: what is sent now cannot be confirmed */
    for (int i = 0; i < 300; i++) {
        sl_put m = {.body = "p", .body_len = 1, .level = 1};
        assert_int_equal(sl_send_async(f->c, &m, NULL), SL_OK);
    }
    usleep(100 * 1000);
    th_broker_kill9(&f->b);
    assert_int_equal(th_broker_start(&f->b), 0);
    unsigned ok = 0, lost_link = 0;
    uint64_t end = th_now_ms() + 15000;
    while (sl_send_pending(f->c) && th_now_ms() < end) {
        sl_confirm cf;
        if (sl_send_wait(f->c, 200, &cf) != SL_OK)
            continue;
        ok += cf.err == SL_OK;
        lost_link += cf.err == SL_ECONNECT;
    }
    fprintf(stderr, "# 300 publishes across kill -9: %u confirmed, %u SL_ECONNECT\n", ok, lost_link);
    assert_int_equal(sl_send_pending(f->c), 0);
    assert_int_equal(ok + lost_link, 300);
    assert_true(lost_link > 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* An acknowledgement is durable once its flush window has passed (default),
 * or as soon as its OK arrives (--ack-flush-ms 0): kill -9 then must not
 * bring the message back. */
static void ack_survives_kill9(const char *const *extra, unsigned wait_ms)
{
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    put(f->c, 0, "done once");
    put(f->c, 0, "still to do");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = recv_one(c, 5000);
    assert_string_equal(d->body, "done once");
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* the OK came: with --ack-flush-ms 0, committed */
    sl_delivery_free(&d);
    if (wait_ms)
        usleep(wait_ms * 1000);
    th_broker_kill9(&f->b);
    sl_close(&c);
    sl_close(&f->c);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 4), SL_OK);
    d = recv_one(f->c, 5000);
    assert_string_equal(d->body, "still to do");
    assert_int_equal(sl_ack(f->c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(f->c, 300, &d), SL_ETIMEDOUT);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void ack_is_durable_after_its_flush_window(void **state)
{
    (void)state;
    ack_survives_kill9(NULL, 200);
}

static void ack_flush_zero_makes_ok_wait_for_commit(void **state)
{
    (void)state;
    static const char *const extra[] = {"--ack-flush-ms", "0", NULL};
    ack_survives_kill9(extra, 0);
}

/* direct_fds counts the broker's descriptors of its wal.log opened with
 * O_DIRECT and O_DSYNC (from /proc/PID/fdinfo's octal flags). */
static int direct_fds(const th_broker *b)
{
    int n = 0;
    char link[64], target[512], path[64], info[512];
    for (int fd = 0; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)b->pid, fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (!strstr(target, "/wal.log"))
            continue;
        snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)b->pid, fd);
        th_read_file(path, info, sizeof info);
        const char *f = strstr(info, "flags:");
        unsigned long flags = f ? strtoul(f + 6, NULL, 8) : 0;
        n += (flags & O_DIRECT) && (flags & O_DSYNC);
    }
    return n;
}

static void the_log_is_written_direct_where_the_disk_takes_it(void **state)
{
    (void)state;
    for (int buffered = 0; buffered < 2; buffered++) {
        static const char *const direct[] = {NULL}, *const page_cache[] = {"--wal-buffered", NULL};
        th_fixture *f = NULL;
        assert_int_equal(th_fixture_start(buffered ? page_cache : direct, &f), 0);
        for (int i = 0; i < 20; i++)
            put(f->c, 1, "x");
        char probe[400];
        snprintf(probe, sizeof probe, "%s/probe", f->b.dir);
        int pfd = open(probe, O_RDWR | O_CREAT | O_DIRECT, 0600); /* does this file system take O_DIRECT? */
        int takes_direct = pfd >= 0;
        if (pfd >= 0)
            close(pfd);
        int want = !buffered && takes_direct;
        assert_int_equal(direct_fds(&f->b), want);
        char log[8192];
        th_read_file(f->b.log, log, sizeof log);
        assert_int_equal(strstr(log, "cannot be opened with O_DIRECT") != NULL, !buffered && !takes_direct);
        assert_int_equal(th_fixture_finish(&f), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(restart_keeps_confirmed_and_returns_inflight),
        cmocka_unit_test(kill9_loses_nothing_confirmed),
        cmocka_unit_test(pending_publishes_end_after_a_restart),
        cmocka_unit_test(ack_is_durable_after_its_flush_window),
        cmocka_unit_test(ack_flush_zero_makes_ok_wait_for_commit),
        cmocka_unit_test(the_log_is_written_direct_where_the_disk_takes_it),
    };
    th_seed();
    return cmocka_run_group_tests_name("durability", tests, NULL, NULL);
}
