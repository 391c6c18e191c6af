/*
 * test_declare.c - levels, the sink, pools and tags declared in sluice.conf,
 * against the real sluiced: `sluice settings export` of a broker set up
 * with the CLI, loaded into a fresh broker with --config, exports the same
 * text again; the file wins at start and on every SIGHUP for what it
 * declares, what it does not declare keeps what the CLI set, a file that no
 * longer reads changes nothing, and a declaration the broker refuses is
 * logged while the others apply; a bad declaration stops the start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static void sluice(const th_broker *b, char *out, size_t out_len, int want_status, ...)
{
    const char *argv[24] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    va_list ap;
    va_start(ap, want_status);
    for (const char *a; n < 23 && (a = va_arg(ap, const char *));)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    int st = th_run(argv, NULL, out, out_len);
    if (st != want_status)
        print_error("%s %s %s: exit %d, wanted %d; output: %s\n", argv[3], argv[4] ? argv[4] : "",
                    argv[5] ? argv[5] : "", st, want_status, out);
    assert_int_equal(st, want_status);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void export_of(sl_client *c, char *buf, size_t size)
{
    const char *text;
    size_t len;
    assert_int_equal(sl_settings_export(c, &text, &len), SL_OK);
    assert_true(len < size);
    memcpy(buf, text, len);
    buf[len] = '\0';
}

static void export_loaded_into_a_fresh_broker_exports_the_same(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), SL_OK);
    char out[8192];
    const th_broker *b = &f->b;
    sluice(b, out, sizeof out, 0, "sink", "set", "--max-rate", "100", "--max-rate", "500/min:50", "--burst", "20",
           "--inflight", "8", NULL);
    sluice(b, out, sizeof out, 0, "level", "set", "high", "--deadline", "30", "--aging-step", "1.5", "--max-rate",
           "50", "--max-rate", "8/10s", "--min-rate", "2.5", "--burst", "4", NULL);
    sluice(b, out, sizeof out, 0, "level", "set", "normal", "--fair", "tag", NULL);
    sluice(b, out, sizeof out, 0, "level", "pause", "low", NULL);
    sluice(b, out, sizeof out, 0, "pool", "resize", "render", "8", NULL);
    sluice(b, out, sizeof out, 0, "pool", "pause", "render", NULL);
    sluice(b, out, sizeof out, 0, "pool", "resize", "auto", "2", NULL);
    sluice(b, out, sizeof out, 0, "pool", "autoscale", "auto", "--min", "2", "--max", "9", "--target-wait", "2.5", NULL);
    sluice(b, out, sizeof out, 0, "tag", "set", "gold-*", "--weight", "4", "--max-rate", "5", "--burst", "3",
           "--inflight", "2", "--each", NULL);
    sluice(b, out, sizeof out, 0, "tag", "set", "free \"x\" ; #", "--max-rate", "10/min", NULL);
    sluice(b, out, sizeof out, 0, "tag", "pause", "free-42", NULL);
    sluice(b, out, sizeof out, 0, "tag", "pause", "gold-*", NULL);
    static char first[16384], second[16384];
    sluice(b, first, sizeof first, 0, "settings", "export", NULL);
    assert_non_null(strstr(first, "[sink]\nmax-rate = 100\nmax-rate = 500/min:50\nburst = 20\ninflight = 8\n"));
    assert_non_null(strstr(first, "[level high]\ndeadline = 30s\naging-step = 1500ms\nmax-rate = 50\n"
                                  "max-rate = 8/10s:8\nmin-rate = 2.5\nburst = 4\nfair = fifo\npaused = no\n"));
    assert_non_null(strstr(first, "[level normal]\n"));
    assert_non_null(strstr(first, "fair = tag\n"));
    assert_non_null(strstr(first, "[pool auto]\nautoscale = on\nmin = 2\nmax = 9\ntarget-wait = 2500ms\n"
                                  "paused = no\n\n[pool render]\nsize = 8\nautoscale = off\npaused = yes\n"));
    assert_non_null(strstr(first, "[tag \"gold-*\"]\nweight = 4\nmax-rate = 5\nburst = 3\ninflight = 2\neach = yes\n"
                                  "paused = yes\n"));
    assert_non_null(strstr(first, "[tag \"free \\\"x\\\" ; #\"]\n"));
    assert_non_null(strstr(first, "[tag \"free-42\"]\npaused = yes\n"));

    char conf[400];
    snprintf(conf, sizeof conf, "%s/exported.conf", f->b.dir);
    write_file(conf, first);
    const char *const extra[] = {"--config", conf, NULL};
    th_fixture *g;
    assert_int_equal(th_fixture_start(extra, &g), SL_OK);
    export_of(g->c, second, sizeof second);
    if (strcmp(first, second))
        print_error("first export:\n%s\nsecond:\n%s\n", first, second);
    assert_string_equal(first, second);
    /* and the settings act: the level paused, the tag paused, the pool sized */
    sl_level_info lv[16];
    unsigned n;
    assert_int_equal(sl_level_list(g->c, lv, &n), SL_OK);
    assert_int_equal(lv[0].deadline_ms, 30000);
    assert_int_equal(lv[1].fair, 1);
    assert_int_equal(lv[2].paused, 1);
    /* a restart of the loaded broker applies nothing: nothing differs */
    assert_int_equal(th_broker_stop(&g->b), 0);
    assert_int_equal(th_broker_start(&g->b), 0);
    char log[65536];
    th_read_file(g->b.log, log, sizeof log);
    assert_non_null(strstr(log, "9 declared objects, 0 changed, 0 commands refused"));
    sl_close(&g->c);
    g->c = th_client(&g->b, 5000);
    export_of(g->c, second, sizeof second);
    assert_string_equal(first, second);
    assert_int_equal(th_fixture_finish(&g), 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* deadline_of reads level 0's deadline. */
static uint64_t deadline_of(sl_client *c, uint64_t *aging)
{
    sl_level_info lv[16];
    unsigned n;
    assert_int_equal(sl_level_list(c, lv, &n), SL_OK);
    if (aging)
        *aging = lv[0].aging_ms;
    return lv[0].deadline_ms;
}

/* wait_deadline waits (up to 10 s) for level 0's deadline to be want. */
static uint64_t wait_deadline(sl_client *c, uint64_t want)
{
    uint64_t d = 0, until = th_now_ms() + 10000;
    while ((d = deadline_of(c, NULL)) != want && th_now_ms() < until)
        usleep(20000);
    return d;
}

static void the_file_wins_for_what_it_declares(void **state)
{
    (void)state;
    th_broker b;
    char conf[400], out[4096], log[65536];
    assert_int_equal(th_broker_init(&b, NULL), SL_OK);
    snprintf(conf, sizeof conf, "%s/sluice.conf", b.dir);
    write_file(conf, "[broker]\nlog_level = info\n[level high]\ndeadline = 30s\n[tag \"t*\"]\nweight = 2\n");
    const char *extra[] = {"--config", conf, NULL};
    for (int i = 0; extra[i]; i++)
        b.extra[i] = extra[i];
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(deadline_of(c, NULL), 30000);

    /* the CLI changes a declared setting and one the file leaves alone */
    sluice(&b, out, sizeof out, 0, "level", "set", "high", "--deadline", "10", "--aging-step", "5", NULL);
    assert_int_equal(deadline_of(c, NULL), 10000);
    /* a SIGHUP: the declared one back, the other as the CLI left it */
    assert_int_equal(kill(b.pid, SIGHUP), 0);
    assert_int_equal(wait_deadline(c, 30000), 30000);
    uint64_t aging;
    deadline_of(c, &aging);
    assert_int_equal(aging, 5000);

    /* the file changes: a new value, a new pool, a refused declaration beside them */
    sl_put p = {.body = "m", .body_len = 1, .level = 2};
    uint64_t id;
    assert_int_equal(sl_send(c, &p, &id), SL_OK);
    write_file(conf, "[broker]\nlog_level = info\n[level high]\ndeadline = 20s\n[pool \"new\"]\nsize = 3\n"
                     "[level low]\nfair = tag\nmin-rate = 7\n");
    assert_int_equal(kill(b.pid, SIGHUP), 0);
    assert_int_equal(wait_deadline(c, 20000), 20000);
    sl_pool_info pools[64];
    unsigned n;
    assert_int_equal(sl_pool_list(c, pools, &n), SL_OK);
    int found = 0;
    for (unsigned i = 0; i < n; i++)
        found |= !strcmp(pools[i].name, "new") && pools[i].size == 3;
    assert_true(found);
    sl_level_info lv[16];
    assert_int_equal(sl_level_list(c, lv, &n), SL_OK);
    assert_int_equal(lv[2].fair, 0);                /* refused: the level holds a message */
    assert_int_equal(lv[2].min_rate_milli, 7000);   /* the rest of it applied */
    th_read_file(b.log, log, sizeof log);
    assert_non_null(strstr(log, "sluice.conf:8: level.set refused"));
    /* the pattern no longer declared stays */
    sluice(&b, out, sizeof out, 0, "settings", "export", NULL);
    assert_non_null(strstr(out, "[tag \"t*\"]\nweight = 2\n"));

    /* a file that no longer reads changes nothing */
    write_file(conf, "[broker]\nlog_level = info\n[level high]\ndeadline = soon\n");
    assert_int_equal(kill(b.pid, SIGHUP), 0);
    uint64_t until = th_now_ms() + 10000;
    do {
        usleep(20000);
        th_read_file(b.log, log, sizeof log);
    } while (!strstr(log, "the declared settings stay as they are") && th_now_ms() < until);
    assert_non_null(strstr(log, "sluice.conf:4: deadline = soon: a duration is"));
    assert_int_equal(deadline_of(c, NULL), 20000);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);

    /* ... and stops a start */
    assert_int_equal(th_broker_start(&b), -1);
    th_read_file(b.log, log, sizeof log);
    assert_non_null(strstr(log, "sluice.conf:4: deadline = soon"));
    th_broker_fini(&b);
}

int main(void)
{
    th_timeout_s = 120;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(export_loaded_into_a_fresh_broker_exports_the_same, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_file_wins_for_what_it_declares, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("declare", tests, NULL, NULL);
}
