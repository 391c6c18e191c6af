/*
 * test_cli.c - `sluice` and `sluiced` as a user types them, against a real
 * broker: ids printed in input order, bodies printed and acknowledged,
 * --exec mapping exit codes to ack, nack and throttled, stats as a table
 * and as JSON, metering settings (limits of several windows among them),
 * clear errors with the documented exit codes, and the global options (key
 * files too) after the command's name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"

static char out[1 << 16];

static void send_prints_ids_in_input_order(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *argv[] = {th_bin("sluice"), "-b", b->endpoint, "send", "-p", "low", "-t", "batch", NULL};
    char in[4096] = "";
    for (int i = 0; i < 300; i++)
        snprintf(in + strlen(in), sizeof in - strlen(in), "line %d\n", i);
    assert_int_equal(th_run(argv, in, out, sizeof out), 0);
    unsigned long prev = 0, n = 0;
    for (char *save = NULL, *tok = strtok_r(out, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
        unsigned long id = strtoul(tok, NULL, 10);
        assert_true(id > prev); /* input order */
        prev = id;
        n++;
    }
    assert_int_equal(n, 300);
    const char *args[] = {th_bin("sluice"), "-b", b->endpoint, "send", "one", "two", NULL};
    assert_int_equal(th_run(args, NULL, out, sizeof out), 0);
    assert_string_equal(out, "301\n302\n");
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void consume_prints_bodies_and_acks(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *send[] = {th_bin("sluice"), "-b", b->endpoint, "send", "-p", "2", "low one", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    const char *send_hi[] = {th_bin("sluice"), "-b", b->endpoint, "send", "-p", "high", "-t", "vip", "urgent", NULL};
    assert_int_equal(th_run(send_hi, NULL, out, sizeof out), 0);
    const char *consume[] = {th_bin("sluice"), "-b", b->endpoint, "consume", "-n", "2", "--verbose", NULL};
    assert_int_equal(th_run(consume, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "level=high tag=vip attempt=1 urgent\n"));
    assert_true(strstr(out, "urgent") < strstr(out, "low one")); /* priority first */
    const char *stats[] = {th_bin("sluice"), "-b", b->endpoint, "stats", "--json", NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"name\":\"low\",\"depth\":0"));
    assert_non_null(strstr(out, "\"acked\":1"));
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void exec_acks_on_zero_and_nacks_otherwise(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-attempts", "1", NULL};
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(extra, &b), 0);
    const char *send[] = {th_bin("sluice"), "-b", b->endpoint, "send", "good", "bad", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    /* the command fails for "bad": with one attempt allowed it becomes a dead letter */
    const char *consume[] = {th_bin("sluice"), "-b", b->endpoint, "consume", "-n", "2", "--exec",
                             "grep -q good", NULL};
    assert_int_equal(th_run(consume, NULL, out, sizeof out), 0);
    const char *stats[] = {th_bin("sluice"), "-b", b->endpoint, "stats", NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "normal"));
    assert_non_null(strstr(out, "bad input 0  failed sends 0"));
    const char *json[] = {th_bin("sluice"), "-b", b->endpoint, "stats", "--json", NULL};
    assert_int_equal(th_run(json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"name\":\"normal\",\"depth\":0,\"inflight\":0,\"delayed\":0,\"dead\":1"));
    assert_non_null(strstr(out, "\"acked\":1,\"nacked\":1"));
    assert_non_null(strstr(out, "\"rx_bad\":0,\"tx_failed\":0"));
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void metering_settings_and_throttled_exec(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *sink_set[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--rate", "50",
                              "--burst", "5", NULL};
    assert_int_equal(th_run(sink_set, NULL, out, sizeof out), 0);
    assert_string_equal(out, "sink: rate 50/s, burst 5\n");
    const char *sink_show[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "show", "--json", NULL};
    assert_int_equal(th_run(sink_show, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "{\"rate_milli\":50000,"));
    assert_non_null(strstr(out, "\"burst\":5,"));
    assert_non_null(strstr(out, "\"reason\":\"configured\"")); /* why the rate is where it is */
    const char *level_set[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low",
                               "--max-rate", "0.5", NULL};
    assert_int_equal(th_run(level_set, NULL, out, sizeof out), 0);
    assert_string_equal(out, "level low: max rate 0.5/s\n");
    const char *level_list[] = {th_bin("sluice"), "-b", b->endpoint, "level", "list", "--json", NULL};
    assert_int_equal(th_run(level_list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"name\":\"low\""));
    assert_non_null(strstr(out, "\"max_rate_milli\":500,"));
    const char *no_change[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", NULL};
    assert_int_equal(th_run(no_change, NULL, out, sizeof out), 2);

    /* a cost travels to the consumer; exit 75 returns the message as throttled */
    const char *send[] = {th_bin("sluice"), "-b", b->endpoint, "send", "--cost", "3", "x", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    const char *tempfail[] = {th_bin("sluice"), "-b", b->endpoint, "consume", "-n", "1", "--exec",
                              "exit 75", NULL};
    assert_int_equal(th_run(tempfail, NULL, out, sizeof out), 0);
    const char *consume[] = {th_bin("sluice"), "-b", b->endpoint, "consume", "-n", "1",
                             "--verbose", NULL};
    assert_int_equal(th_run(consume, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "attempt=1 cost=3 x\n")); /* throttled: no attempt charged */
    const char *stats[] = {th_bin("sluice"), "-b", b->endpoint, "stats", "--json", NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"throttled\":1,"));
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void several_windows_as_typed(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *sink_set[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--max-rate", "10/s",
                              "--max-rate", "500/min", NULL};
    assert_int_equal(th_run(sink_set, NULL, out, sizeof out), 0);
    assert_string_equal(out, "sink: rate 10/s+500/min:500\n");
    const char *sink_show[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "show", NULL};
    assert_int_equal(th_run(sink_show, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "rate       10/s\n"));
    assert_non_null(strstr(out, "window     500/min:500 (tokens 500)\n"));
    const char *sink_json[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "show", "--json", NULL};
    assert_int_equal(th_run(sink_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"windows\":[{\"count_milli\":10000,\"period_ms\":1000,\"burst\":1,"));
    assert_non_null(strstr(out, "{\"count_milli\":500000,\"period_ms\":60000,\"burst\":500,"));
    /* the old spelling: one per-second rate replaces both windows */
    const char *sink_old[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--rate", "20", NULL};
    assert_int_equal(th_run(sink_old, NULL, out, sizeof out), 0);
    assert_string_equal(out, "sink: rate 20/s\n");
    assert_int_equal(th_run(sink_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"windows\":[{\"count_milli\":20000,\"period_ms\":1000,\"burst\":1,"));
    assert_null(strstr(out, "60000"));

    const char *level_set[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "normal", "--max-rate", "5",
                               "--max-rate", "8/10s", "--burst", "2", NULL};
    assert_int_equal(th_run(level_set, NULL, out, sizeof out), 0);
    assert_string_equal(out, "level normal: max rate 5/s+8/10s:8, burst 2\n");
    const char *level_list[] = {th_bin("sluice"), "-b", b->endpoint, "level", "list", NULL};
    assert_int_equal(th_run(level_list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, " 5/s+8/10s:8 "));
    const char *level_json[] = {th_bin("sluice"), "-b", b->endpoint, "level", "list", "--json", NULL};
    assert_int_equal(th_run(level_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"max_rate_milli\":5000,"));
    assert_non_null(strstr(out, "{\"count_milli\":8000,\"period_ms\":10000,\"burst\":8,"));
    /* one per-second rate alone replaces the windows and keeps the burst */
    const char *level_rate[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "normal", "--max-rate", "6",
                                NULL};
    assert_int_equal(th_run(level_rate, NULL, out, sizeof out), 0);
    assert_string_equal(out, "level normal: max rate 6/s\n");
    assert_int_equal(th_run(level_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"max_rate_milli\":6000,\"min_rate_milli\":0,\"burst\":2,"));
    assert_null(strstr(out, "10000"));
    const char *level_burst[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low", "--max-rate",
                                 "100/h:7", "--max-rate", "0.5/min", NULL};
    assert_int_equal(th_run(level_burst, NULL, out, sizeof out), 0);
    assert_string_equal(out, "level low: max rate 100/h:7+0.5/min:1\n");

    /* usage errors (exit 2) and a broker's refusal (exit 1) */
    static const char *const bad[][2] = {{"--max-rate", "5/x"}, {"--max-rate", "5/0s"}, {"--max-rate", "5:0"},
                                         {"--max-rate", "0/s"}, {"--max-rate", "/s"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", bad[i][0], bad[i][1], NULL};
        assert_int_equal(th_run(argv, NULL, out, sizeof out), 2);
    }
    const char *five[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--max-rate", "1", "--max-rate",
                          "2/min", "--max-rate", "3/h", "--max-rate", "4/d", "--max-rate", "5/2s", NULL};
    assert_int_equal(th_run(five, NULL, out, sizeof out), 2);
    const char *off_beside[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--max-rate", "1",
                                "--max-rate", "off", NULL};
    assert_int_equal(th_run(off_beside, NULL, out, sizeof out), 2);
    const char *burst_alone[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low", "--max-rate",
                                 "500/min", "--burst", "3", NULL};
    assert_int_equal(th_run(burst_alone, NULL, out, sizeof out), 2);
    const char *four_long[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--max-rate", "1/min",
                               "--max-rate", "2/h", "--max-rate", "3/d", "--max-rate", "4/2s", NULL};
    assert_int_equal(th_run(four_long, NULL, out, sizeof out), 1);
    const char *off[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--max-rate", "off", NULL};
    assert_int_equal(th_run(off, NULL, out, sizeof out), 0);
    assert_string_equal(out, "sink: rate off\n");
    assert_int_equal(th_run(sink_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"rate_milli\":0,"));
    assert_non_null(strstr(out, "\"windows\":[]"));
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void errors_have_documented_exit_codes(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *bad_level[] = {th_bin("sluice"), "-b", b->endpoint, "send", "-p", "urgent", "x", NULL};
    assert_int_equal(th_run(bad_level, NULL, out, sizeof out), 2);
    const char *bad_cmd[] = {th_bin("sluice"), "-b", b->endpoint, "frobnicate", NULL};
    assert_int_equal(th_run(bad_cmd, NULL, out, sizeof out), 2);
    const char *help[] = {th_bin("sluice"), "--help", NULL};
    assert_int_equal(th_run(help, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "consume"));
    assert_int_equal(th_broker_destroy(&b), 0);
    /* nobody listening: exit 1, quickly */
    char ep[300];
    snprintf(ep, sizeof ep, "ipc:///tmp/sluice-nobody-%d.sock", (int)getpid());
    const char *unreachable[] = {th_bin("sluice"), "-b", ep, "--timeout", "300", "send", "x", NULL};
    uint64_t t0 = th_now_ms();
    assert_int_equal(th_run(unreachable, NULL, out, sizeof out), 1);
    assert_true(th_now_ms() - t0 < 10000);
    /* nothing listening on a tcp port: refused, said within about 0.5 s
     * (the socket monitor sees it), not after the 10 s timeout */
    uint16_t port = 0;
    int held = th_loopback_socket(false, &port); /* bound, not listening: refuses */
    assert_true(held >= 0);
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", (unsigned)port);
    const char *refused[] = {"/bin/sh", "-c", "\"$0\" -b \"$1\" --timeout 10000 stats 2>&1", th_bin("sluice"), ep, NULL};
    t0 = th_now_ms();
    assert_int_equal(th_run(refused, NULL, out, sizeof out), 1);
    uint64_t took = th_now_ms() - t0;
    print_message("a refused tcp connection reported in %llu ms\n", (unsigned long long)took);
    assert_true(took < 2000);
    assert_non_null(strstr(out, "(connection refused); is sluiced running?"));
    close(held);
}

/* stats fits 100 columns, --wide has every counter, and a level with
 * nothing ready shows its OLDEST as "-" (not "0s"), in level list too. */
static void stats_fits_100_columns(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *send[] = {th_bin("sluice"), "-b", b->endpoint, "send", "-p", "high", "waiting", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    const char *stats[] = {th_bin("sluice"), "-b", b->endpoint, "stats", NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strlen(line) > 100)
            fail_msg("stats: a line of %zu columns: %s", strlen(line), line);
        char lv[16], name[32], oldest[16];
        unsigned long depth, inflight, delayed, dead;
        if (sscanf(line, "%15s %31s %lu %lu %lu %lu %15s", lv, name, &depth, &inflight, &delayed, &dead, oldest) == 7) {
            if (strcmp(name, "low") == 0)
                assert_string_equal(oldest, "-"); /* empty */
            if (strcmp(name, "high") == 0)
                assert_true(oldest[0] >= '0' && oldest[0] <= '9');
        }
    }
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_null(strstr(out, "PRIO"));
    assert_non_null(strstr(out, "THROTTLED"));
    const char *wide[] = {th_bin("sluice"), "-b", b->endpoint, "stats", "--wide", NULL};
    assert_int_equal(th_run(wide, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "PRIO"));
    assert_non_null(strstr(out, "BY-TAG"));
    const char *levels[] = {th_bin("sluice"), "-b", b->endpoint, "level", "list", NULL};
    assert_int_equal(th_run(levels, NULL, out, sizeof out), 0);
    char *low = strstr(out, "\n2 ");
    assert_non_null(low);
    char f[7][32];
    assert_int_equal(sscanf(low, "%31s %31s %31s %31s %31s %31s %31s", f[0], f[1], f[2], f[3], f[4], f[5], f[6]), 7);
    assert_string_equal(f[1], "low");
    assert_string_equal(f[6], "-"); /* OLDEST of an empty level */
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* level set --fair: a level served fair by tag as typed, a bad value a
 * usage error (exit 2), a level holding messages refused by the broker
 * (exit 1) with nothing changed. */
static void level_set_fair_as_typed(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *fair[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low", "--fair", "tag", NULL};
    assert_int_equal(th_run(fair, NULL, out, sizeof out), 0);
    assert_string_equal(out, "level low: served fair by tag\n");
    const char *bogus[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low", "--fair", "round", NULL};
    assert_int_equal(th_run(bogus, NULL, out, sizeof out), 2);
    const char *send[] = {th_bin("sluice"), "-b", b->endpoint, "send", "-p", "normal", "x", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    const char *busy[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "normal", "--fair", "tag",
                          "--max-rate", "5", NULL};
    assert_int_equal(th_run(busy, NULL, out, sizeof out), 1);
    const char *list[] = {th_bin("sluice"), "-b", b->endpoint, "level", "list", "--json", NULL};
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"name\":\"normal\""));
    assert_null(strstr(out, "\"max_rate_milli\":5000")); /* nothing else was applied */
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void global_options_work_after_the_command(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    const char *send[] = {th_bin("sluice"), "send", "--broker", b->endpoint, "--timeout=5000", "one", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    const char *stats[] = {th_bin("sluice"), "stats", "-b", b->endpoint, "--json", NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"enqueued\":1"));
    const char *level[] = {th_bin("sluice"), "level", "list", "--json", "-b", b->endpoint, NULL};
    assert_int_equal(th_run(level, NULL, out, sizeof out), 0);
    const char *bad[] = {th_bin("sluice"), "stats", "--timeout", "soon", NULL};
    assert_int_equal(th_run(bad, NULL, out, sizeof out), 2);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void sluiced_rejects_bad_settings(void **state)
{
    (void)state;
    const char *help[] = {th_bin("sluiced"), "--help", NULL};
    assert_int_equal(th_run(help, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "--lease-ms"));
    const char *levels[] = {th_bin("sluiced"), "--levels", "17", NULL};
    assert_int_equal(th_run(levels, NULL, out, sizeof out), 2);
    const char *names[] = {th_bin("sluiced"), "--levels", "2", "--level-names", "a,b,c", NULL};
    assert_int_equal(th_run(names, NULL, out, sizeof out), 2);
    char dir[] = "/tmp/sluice-cfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/bad.ini", dir);
    FILE *f = fopen(path, "w");
    fputs("[broker]\nlisten = tcp://127.0.0.1:0\nfrobs = 3\n", f);
    fclose(f);
    const char *cfg[] = {th_bin("sluiced"), "--config", path, NULL};
    assert_int_equal(th_run(cfg, NULL, out, sizeof out), 2);
    th_rmrf(dir);
}

/* The real binary says why a setting is out of its bounds, on stderr, and
 * exits 2: from the command line, and from an INI file with its line (the
 * parser's messages themselves: tests/unit/test_conf.c). */
static void sluiced_says_why_a_setting_is_out_of_bounds(void **state)
{
    (void)state;
    char dir[] = "/tmp/sluice-cfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/c.ini", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[broker]\nlisten = tcp://127.0.0.1:0\n\n[leases]\nheartbeat_ms = 70000\n", f);
    fclose(f);

    /* the real binary: exit status 2 and the message on stderr */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "exec %s --overdue-share 0 2>&1", th_bin("sluiced"));
    const char *sh[] = {"/bin/sh", "-c", cmd, NULL};
    assert_int_equal(th_run(sh, NULL, out, sizeof out), 2);
    assert_string_equal(out, "sluiced: --overdue-share: '0' is not a number from 1 to 100\n");
    snprintf(cmd, sizeof cmd, "exec %s -c %s 2>&1", th_bin("sluiced"), path);
    assert_int_equal(th_run(sh, NULL, out, sizeof out), 2);
    assert_non_null(strstr(out, ":5: heartbeat_ms: '70000'"));
    th_rmrf(dir);
}

static void config_file_sets_levels(void **state)
{
    (void)state;
    char dir[] = "/tmp/sluice-cfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/sluiced.ini", dir);
    FILE *f = fopen(path, "w");
    fputs("[levels]\ncount = 4\nnames = now,soon,later,whenever\ndefault = later\n", f);
    fclose(f);
    const char *extra[] = {"--config", path, NULL};
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(extra, &b), 0);
    const char *send[] = {th_bin("sluice"), "-b", b->endpoint, "send", "x", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    const char *json[] = {th_bin("sluice"), "-b", b->endpoint, "stats", "--json", NULL};
    assert_int_equal(th_run(json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"name\":\"whenever\""));
    assert_non_null(strstr(out, "\"name\":\"later\",\"depth\":1"));
    assert_int_equal(th_broker_destroy(&b), 0);
    th_rmrf(dir);
}

/* keygen_json runs `sluice keygen name --json` in dir and copies the public
 * key it prints into pub (41 bytes). */
static void keygen_json(const char *dir, const char *name, char *pub)
{
    char cmd[PATH_MAX + 600], bin[PATH_MAX];
    assert_non_null(realpath(th_bin("sluice"), bin));
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' keygen %s --json", dir, bin, name);
    const char *sh[] = {"/bin/sh", "-c", cmd, NULL};
    assert_int_equal(th_run(sh, NULL, out, sizeof out), 0);
    const char *p = strstr(out, "\"public\":\"");
    assert_non_null(p);
    memcpy(pub, p + 10, 40);
    pub[40] = '\0';
}

/* The key files are global options too: --client-key (alias --key) and
 * --server-key work before the command or after its name, in both forms;
 * after `send`, --key stays the idempotency key. */
static void key_options_work_after_the_command(void **state)
{
    (void)state;
    th_broker b;
    char pub[41], srv[41], text[200], auth[400], bkey[400], bpub[400], ckey[400];
    assert_int_equal(th_broker_init(&b, NULL), 0);
    keygen_json(b.dir, "broker", srv);
    keygen_json(b.dir, "cli", pub);
    snprintf(auth, sizeof auth, "%s/auth", b.dir);
    snprintf(bkey, sizeof bkey, "%s/broker.key", b.dir);
    snprintf(bpub, sizeof bpub, "%s/broker.pub", b.dir);
    snprintf(ckey, sizeof ckey, "%s/cli.key", b.dir);
    FILE *f = fopen(auth, "w");
    assert_non_null(f);
    snprintf(text, sizeof text, "cli admin %s\n", pub);
    fputs(text, f);
    fclose(f);
    const char *extra[] = {"--curve-secret", bkey, "--auth", auth, NULL};
    for (int i = 0; extra[i]; i++)
        b.extra[i] = extra[i];
    assert_int_equal(th_broker_start(&b), 0);

    const char *after[] = {th_bin("sluice"), "-b", b.endpoint, "stats", "--json", "--key", ckey,
                           "--server-key", bpub, NULL};
    assert_int_equal(th_run(after, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"auth_refused\":0"));
    char ck[420], sk[420];
    snprintf(ck, sizeof ck, "--client-key=%s", ckey);
    snprintf(sk, sizeof sk, "--server-key=%s", bpub);
    const char *send[] = {th_bin("sluice"), "-b", b.endpoint, "send", ck, sk, "--key", "order-1", "x", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0);
    assert_int_equal(th_run(send, NULL, out, sizeof out), 0); /* the same idempotency key: stored once */
    const char *before[] = {th_bin("sluice"), "--client-key", ckey, "-b", b.endpoint, "level", "list", "--json",
                            sk, NULL};
    assert_int_equal(th_run(before, NULL, out, sizeof out), 0);
    assert_int_equal(th_run(after, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"enqueued\":1"));
    /* without a key the CURVE broker never answers */
    const char *none[] = {th_bin("sluice"), "-b", b.endpoint, "--timeout", "500", "stats", NULL};
    assert_int_equal(th_run(none, NULL, out, sizeof out), 1);
    /* after send, --key is not a key file: --server-key alone is a usage error */
    const char *half[] = {th_bin("sluice"), "-b", b.endpoint, "send", "--key", ckey, "--server-key", bpub, "y",
                          NULL};
    assert_int_equal(th_run(half, NULL, out, sizeof out), 2);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(send_prints_ids_in_input_order),
        cmocka_unit_test(consume_prints_bodies_and_acks),
        cmocka_unit_test(exec_acks_on_zero_and_nacks_otherwise),
        cmocka_unit_test(metering_settings_and_throttled_exec),
        cmocka_unit_test(several_windows_as_typed),
        cmocka_unit_test(errors_have_documented_exit_codes),
        cmocka_unit_test(level_set_fair_as_typed),
        cmocka_unit_test(stats_fits_100_columns),
        cmocka_unit_test(global_options_work_after_the_command),
        cmocka_unit_test(sluiced_rejects_bad_settings),
        cmocka_unit_test(sluiced_says_why_a_setting_is_out_of_bounds),
        cmocka_unit_test(config_file_sets_levels),
        cmocka_unit_test(key_options_work_after_the_command),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
