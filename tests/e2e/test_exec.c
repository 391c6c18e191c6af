/*
 * test_exec.c - `sluice consume --exec` against the real sluiced: a command
 * that fails is given its message back after a backoff as --post's (0.5 s,
 * then 1 s, 2 s: the broker holds it that long, measured by the command
 * itself), not at once; exit 65 (EX_DATAERR) makes it a dead letter at once,
 * whose reason keeps the exit status and the last line the command wrote to
 * standard error, cut to 256 bytes; and `sluice dead list` without a level
 * lists the dead letters of every level.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int run(const th_broker *b, char *out, size_t out_len, const char *const *args)
{
    const char *argv[24] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return th_run(argv, NULL, out, out_len);
}

static uint64_t put(sl_client *c, unsigned level, const char *body)
{
    uint64_t id;
    sl_put p = {.body = body, .body_len = strlen(body), .level = (int)level};
    assert_int_equal(sl_send(c, &p, &id), SL_OK);
    return id;
}

static void a_failed_command_backs_off(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), SL_OK);
    char times[400], cmd[600], out[4096];
    snprintf(times, sizeof times, "%s/times", f->b.dir);
    snprintf(cmd, sizeof cmd, "cat > /dev/null; date +%%s%%N >> %s; exit 1", times);
    put(f->c, 1, "fails");
    const char *args[] = {"consume", "-n", "3", "--exec", cmd, NULL};
    assert_int_equal(run(&f->b, out, sizeof out, args), 0);
    char text[400];
    th_read_file(times, text, sizeof text);
    uint64_t t[3];
    assert_int_equal(sscanf(text, "%" SCNu64 "\n%" SCNu64 "\n%" SCNu64, &t[0], &t[1], &t[2]), 3);
    uint64_t gap1 = (t[1] - t[0]) / 1000000, gap2 = (t[2] - t[1]) / 1000000;
    print_message("attempts 1, 2, 3 ran %" PRIu64 " ms and %" PRIu64 " ms apart\n", gap1, gap2);
    assert_true(gap1 >= 500); /* the broker held it for the NACK's delay */
    assert_true(gap2 >= 1000);
    assert_true(gap1 < 5000 && gap2 < 6000);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].nacked, 3);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void exit_65_rejects_with_the_last_line_of_stderr(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), SL_OK);
    char out[8192];
    uint64_t a = put(f->c, 0, "bad"), b = put(f->c, 2, "worse");
    const char *args[] = {"consume", "-n", "1", "-p", "high", "--exec",
                          "cat > /dev/null; echo first >&2; printf 'bad field 3: no date\\r\\n\\n' >&2; exit 65", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, args), 0);
    sl_dead_message m;
    assert_int_equal(sl_dead_peek(f->c, a, &m), SL_OK); /* dead at once: attempt 1 of 5 */
    assert_int_equal(m.attempts, 1);
    char reason[1100];
    snprintf(reason, sizeof reason, "%.*s", (int)m.reason_len, m.reason);
    print_message("reason: %s\n", reason);
    assert_non_null(strstr(reason, "the command exited with status 65 (EX_DATAERR): bad field 3: no date"));
    assert_null(strstr(reason, "first"));
    assert_null(strchr(reason, '\r'));

    /* a last line longer than the bound is cut to 256 bytes */
    const char *args2[] = {"consume", "-n", "1", "-p", "low", "--exec",
                           "cat > /dev/null; yes y | head -c 10000 | tr -d '\\n' >&2; echo >&2; exit 65", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, args2), 0);
    assert_int_equal(sl_dead_peek(f->c, b, &m), SL_OK);
    snprintf(reason, sizeof reason, "%.*s", (int)m.reason_len, m.reason);
    const char *ys = strstr(reason, "yyyy");
    assert_non_null(ys);
    assert_int_equal(strspn(ys, "y"), 256);
    assert_int_equal(strlen(ys), 256);

    /* dead list without a level: both levels' */
    const char *list[] = {"dead", "list", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, list), 0);
    assert_non_null(strstr(out, "LEVEL"));
    assert_non_null(strstr(out, "high "));
    assert_non_null(strstr(out, "low "));
    assert_non_null(strstr(out, "bad"));
    assert_non_null(strstr(out, "worse"));
    const char *json[] = {"dead", "list", "--json", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, json), 0);
    assert_non_null(strstr(out, "\"level\":\"high\""));
    assert_non_null(strstr(out, "\"level\":\"low\""));
    const char *one[] = {"dead", "list", "low", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, one), 0);
    assert_null(strstr(out, "LEVEL"));
    assert_null(strstr(out, "bad "));
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    th_timeout_s = 60;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_failed_command_backs_off, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(exit_65_rejects_with_the_last_line_of_stderr, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("exec", tests, NULL, NULL);
}
