/*
 * test_reload.c - SIGHUP on a real sluiced started with --config and
 * --log-file: a live setting changed in the file applies to what comes next
 * (the lease of the next delivery), a setting that needs a restart is named
 * and kept, a file that no longer parses changes nothing, the command line
 * still wins over the file, a rotated log file is reopened, and a storm of
 * SIGHUPs is coalesced into a reload or two.
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
#include "sluice.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static unsigned occurrences(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* hup sends SIGHUP and waits (up to 10 s) for the n-th "reload: done" or
 * "configuration no longer reads" line in the log at path; the log is left
 * in buf. */
static void hup(const th_broker *b, const char *path, unsigned n, char *buf, size_t len)
{
    assert_int_equal(kill(b->pid, SIGHUP), 0);
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; usleep(10 * 1000)) {
        th_read_file(path, buf, len);
        if (occurrences(buf, "reload: done") + occurrences(buf, "no longer reads") >= n)
            return;
    }
    fail_msg("no reload in the log after SIGHUP #%u:\n%s", n, buf);
}

static uint32_t lease_of_next_delivery(sl_client *producer, sl_client *consumer)
{
    uint64_t id;
    sl_put m = {.body = "x", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send(producer, &m, &id), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(consumer, 5000, &d), SL_OK);
    uint32_t lease = d->lease_ms;
    assert_int_equal(sl_ack(consumer, d), SL_OK);
    sl_delivery_free(&d);
    return lease;
}

static void sighup_rereads_live_settings_and_reopens_the_log(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    char ini[400], logp[400], rotated[400];
    snprintf(ini, sizeof ini, "%s/sluice.conf", b.dir);
    snprintf(logp, sizeof logp, "%s/broker.log", b.dir);
    snprintf(rotated, sizeof rotated, "%s/broker.log.1", b.dir);
    write_file(ini, "[leases]\nlease_ms = 30000\n");
    const char *extra[] = {"--config", ini, "--log-file", logp, "--max-attempts", "7", NULL};
    for (int i = 0; extra[i]; i++)
        b.extra[i] = extra[i];
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *c = th_client(&b, 5000);
    sl_client *w = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(w, NULL, NULL, 0, 1), SL_OK);
    assert_int_equal(lease_of_next_delivery(c, w), 30000);

    static char log[1 << 16];
    /* a live setting, one that needs a restart, and one the command line holds */
    write_file(ini, "[levels]\nlevels = 5\n[leases]\nlease_ms = 12000\nmax_attempts = 2\n");
    hup(&b, logp, 1, log, sizeof log);
    assert_non_null(strstr(log, "lease_ms: 30000 -> 12000"));
    assert_non_null(strstr(log, "kept until a restart: levels"));
    assert_null(strstr(log, "max_attempts:")); /* --max-attempts 7 still wins */
    assert_int_equal(lease_of_next_delivery(c, w), 12000);

    /* a file that no longer parses changes nothing */
    write_file(ini, "[leases]\nlease_ms = banana\n");
    hup(&b, logp, 2, log, sizeof log);
    assert_non_null(strstr(log, "no longer reads"));
    assert_int_equal(lease_of_next_delivery(c, w), 12000);

    /* rotation: the old file is renamed, SIGHUP starts a new one */
    assert_int_equal(rename(logp, rotated), 0);
    write_file(ini, "[leases]\nlease_ms = 9000\n");
    hup(&b, logp, 1, log, sizeof log); /* the first reload line of the new file */
    assert_non_null(strstr(log, "lease_ms: 12000 -> 9000"));
    assert_null(strstr(log, "30000 -> 12000")); /* that went to the rotated file */
    static char old[1 << 16];
    th_read_file(rotated, old, sizeof old);
    assert_non_null(strstr(old, "30000 -> 12000"));
    assert_int_equal(lease_of_next_delivery(c, w), 9000);

    sl_close(&w);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* 2,000 SIGHUPs in a burst are a reload or two and a handful of log lines
 * (coalesced, at most one reload a second), and the last one is answered:
 * a change written before it applies. Before, each SIGHUP was a reload of
 * its own and three log lines. */
static void a_sighup_storm_is_coalesced(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    char ini[400], logp[400];
    snprintf(ini, sizeof ini, "%s/sluice.conf", b.dir);
    snprintf(logp, sizeof logp, "%s/broker.log", b.dir);
    write_file(ini, "[leases]\nlease_ms = 30000\n");
    const char *extra[] = {"--config", ini, "--log-file", logp, NULL};
    for (int i = 0; extra[i]; i++)
        b.extra[i] = extra[i];
    assert_int_equal(th_broker_start(&b), 0);
    static char log[1 << 20];
    th_read_file(logp, log, sizeof log);
    unsigned lines0 = occurrences(log, "\n");
    for (int i = 0; i < 1999; i++) {
        assert_int_equal(kill(b.pid, SIGHUP), 0);
        if (i % 50 == 0)
            usleep(1000); /* let the broker run between bursts: signals are not all merged by the kernel */
    }
    write_file(ini, "[leases]\nlease_ms = 7000\n");
    assert_int_equal(kill(b.pid, SIGHUP), 0); /* the 2,000th, after the change */
    /* its reload: the change applied (within the second it may be deferred) */
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; usleep(20 * 1000)) {
        th_read_file(logp, log, sizeof log);
        if (strstr(log, "lease_ms: 30000 -> 7000"))
            break;
    }
    assert_non_null(strstr(log, "lease_ms: 30000 -> 7000"));
    usleep(1500 * 1000); /* a second reload, had one been left, would be logged by now */
    th_read_file(logp, log, sizeof log);
    unsigned lines = occurrences(log, "\n") - lines0, reloads = occurrences(log, "reload: done");
    if (lines > 30 || reloads > 10)
        fail_msg("2,000 SIGHUPs gave %u log lines and %u reloads:\n%s", lines, reloads, log);
    assert_non_null(strstr(log, "SIGHUPs answered by this reload"));
    sl_client *c = th_client(&b, 5000);
    sl_client *w = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(w, NULL, NULL, 0, 1), SL_OK);
    assert_int_equal(lease_of_next_delivery(c, w), 7000);
    sl_close(&w);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sighup_rereads_live_settings_and_reopens_the_log, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_sighup_storm_is_coalesced, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
