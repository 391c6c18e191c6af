/*
 * test_cli_help.c - `sluice` teaches itself: every command of `sluice --help`
 * answers `sluice COMMAND --help`, `sluice COMMAND SUB --help` and `sluice
 * help COMMAND` with its own help of one screen (at most 80 lines of at most
 * 80 columns); a usage error ends with a hint at the command's own help; a
 * mistyped command gets the nearest name; durations take units wherever a
 * duration is taken, plain numbers keeping their option's unit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"

static char out[1 << 16], again[1 << 16];

/* one_screen checks that text has 1..80 lines of at most 80 columns. */
static void one_screen(const char *text, const char *what)
{
    unsigned lines = 0;
    for (const char *p = text; *p; lines++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 80)
            fail_msg("%s: a line of %zu columns: %.*s", what, len, (int)len, p);
        p += len + (nl != NULL);
    }
    if (lines == 0 || lines > 80)
        fail_msg("%s: %u lines (1 to 80 expected)", what, lines);
}

/* run_err runs sluice with args (one shell word list) and captures its
 * standard error into out; returns the exit status. */
static int run_err(const char *args)
{
    char line[512];
    snprintf(line, sizeof line, "%s %s 2>&1 >/dev/null", th_bin("sluice"), args);
    const char *argv[] = {"/bin/sh", "-c", line, NULL};
    return th_run(argv, NULL, out, sizeof out);
}

static void every_command_has_its_own_help(void **state)
{
    (void)state;
    static char overview[1 << 14];
    const char *help[] = {th_bin("sluice"), "--help", NULL};
    assert_int_equal(th_run(help, NULL, overview, sizeof overview), 0);
    one_screen(overview, "sluice --help");
    const char *list = strstr(overview, "\nCommands:\n");
    assert_non_null(list);
    unsigned commands = 0, subs = 0;
    for (const char *p = strchr(list + 1, '\n'); p && strncmp(p, "\n  ", 3) == 0; p = strchr(p + 1, '\n')) {
        char cmd[64], what[192];
        assert_int_equal(sscanf(p + 3, "%63s", cmd), 1);
        commands++;
        const char *via_help[] = {th_bin("sluice"), "help", cmd, NULL};
        assert_int_equal(th_run(via_help, NULL, again, sizeof again), 0);
        snprintf(what, sizeof what, "sluice help %s", cmd);
        one_screen(again, what);
        char synopsis[96];
        snprintf(synopsis, sizeof synopsis, "  sluice %s", cmd);
        if (!strstr(again, synopsis))
            fail_msg("%s does not show %s", what, synopsis);
        if (!strstr(again, "\nExamples:\n"))
            fail_msg("%s has no example", what);
        if (strcmp(cmd, "bench") == 0)
            continue; /* `sluice bench --help` is sluice-bench's own */
        const char *own[] = {th_bin("sluice"), cmd, "--help", NULL};
        assert_int_equal(th_run(own, NULL, out, sizeof out), 0);
        assert_string_equal(out, again);
        /* each subcommand's --help: "  sluice pool resize NAME SIZE" */
        size_t n = strlen(synopsis);
        for (const char *q = strstr(again, synopsis); q; q = strstr(q + 1, synopsis)) {
            char sub[64];
            if (q[n] != ' ' || sscanf(q + n + 1, "%63[a-z]", sub) != 1 ||
                (q[n + 1 + strlen(sub)] != ' ' && q[n + 1 + strlen(sub)] != '\n'))
                continue;
            if (strcmp(cmd, "help") == 0 || strcmp(cmd, "stats") == 0)
                continue; /* "help --all", "stats --watch": not subcommands */
            const char *sub_help[] = {th_bin("sluice"), cmd, sub, "--help", NULL};
            snprintf(what, sizeof what, "sluice %s %s --help", cmd, sub);
            if (th_run(sub_help, NULL, out, sizeof out) != 0)
                fail_msg("%s failed", what);
            one_screen(out, what);
            subs++;
        }
    }
    assert_true(commands >= 12);
    assert_true(subs >= 15);
    /* help --all holds every command's help: the manual page's source */
    const char *all[] = {th_bin("sluice"), "help", "--all", NULL};
    assert_int_equal(th_run(all, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "  sluice dead purge LEVEL"));
    assert_non_null(strstr(out, "  sluice consume [--pool NAME]"));
    assert_non_null(strstr(out, "\nExamples:\n"));
}

static void errors_point_at_the_commands_help(void **state)
{
    (void)state;
    assert_int_equal(run_err("pool resize"), 2);
    assert_non_null(strstr(out, "Try 'sluice pool resize --help' for more information.\n"));
    assert_int_equal(run_err("send --bogus x"), 2);
    assert_non_null(strstr(out, "unknown option '--bogus'\nTry 'sluice send --help'"));
    assert_int_equal(run_err("sned x"), 2);
    assert_non_null(strstr(out, "unknown command 'sned': did you mean 'send'?\nTry 'sluice --help'"));
    assert_int_equal(run_err("pool lsit"), 2);
    assert_non_null(strstr(out, "did you mean 'list'?\nTry 'sluice pool --help'"));
    assert_int_equal(run_err("consme"), 2);
    assert_non_null(strstr(out, "did you mean 'consume'?"));
    assert_int_equal(run_err("xyzzy"), 2); /* nothing near: the list of commands */
    assert_null(strstr(out, "did you mean"));
    assert_non_null(strstr(out, "unknown command 'xyzzy' (keygen, send"));
    assert_int_equal(run_err("help sned"), 2);
    assert_non_null(strstr(out, "did you mean 'send'?"));
}

static void durations_take_units(void **state)
{
    (void)state;
    /* refused before any broker is asked */
    assert_int_equal(run_err("send --delay 5x x"), 2);
    assert_int_equal(run_err("send --delay 1.5ms x"), 2); /* finer than a millisecond */
    assert_int_equal(run_err("send --ttl 0s x"), 2);
    assert_int_equal(run_err("--timeout 1fortnight stats"), 2);
    assert_int_equal(run_err("stats --watch 50ms"), 2); /* below 100 ms */
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    /* --delay 5m is 300 s; --delay 600000 is still milliseconds */
    const char *later[] = {th_bin("sluice"), "-b", b->endpoint, "--timeout", "5s", "send", "--delay", "5m", "x", NULL};
    assert_int_equal(th_run(later, NULL, out, sizeof out), 0);
    uint64_t id = strtoull(out, NULL, 10);
    char idt[32];
    snprintf(idt, sizeof idt, "%llu", (unsigned long long)id);
    const char *explain[] = {th_bin("sluice"), "-b", b->endpoint, "explain", idt, NULL};
    assert_int_equal(th_run(explain, NULL, out, sizeof out), 0);
    if (!strstr(out, "due in 4m5") && !strstr(out, "due in 5m0s"))
        fail_msg("send --delay 5m: %s", out);
    const char *soon[] = {th_bin("sluice"), "-b", b->endpoint, "send", "--delay", "600000", "y", NULL};
    assert_int_equal(th_run(soon, NULL, out, sizeof out), 0);
    snprintf(idt, sizeof idt, "%llu", strtoull(out, NULL, 10));
    const char *explain2[] = {th_bin("sluice"), "-b", b->endpoint, "explain", idt, NULL};
    assert_int_equal(th_run(explain2, NULL, out, sizeof out), 0);
    if (!strstr(out, "due in 9m") && !strstr(out, "due in 10m0s")) /* milliseconds: 10 minutes */
        fail_msg("send --delay 600000: %s", out);
    /* a level's deadline: 5m, 1.5s and a plain 30 (seconds) */
    const char *set[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low", "--deadline", "5m",
                         "--aging-step", "1500ms", NULL};
    assert_int_equal(th_run(set, NULL, out, sizeof out), 0);
    const char *list[] = {th_bin("sluice"), "-b", b->endpoint, "level", "list", "--json", NULL};
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"deadline_ms\":300000"));
    assert_non_null(strstr(out, "\"aging_ms\":1500"));
    const char *plain[] = {th_bin("sluice"), "-b", b->endpoint, "level", "set", "low", "--deadline", "30", NULL};
    assert_int_equal(th_run(plain, NULL, out, sizeof out), 0);
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"deadline_ms\":30000"));
    assert_int_equal(th_broker_destroy(&b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_command_has_its_own_help),
        cmocka_unit_test(errors_point_at_the_commands_help),
        cmocka_unit_test(durations_take_units),
    };
    return cmocka_run_group_tests_name("cli_help", tests, NULL, NULL);
}
