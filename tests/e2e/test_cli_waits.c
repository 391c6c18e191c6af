/*
 * test_cli_waits.c - `sluice consume` and `sluice send` wait out a broker
 * that stalls (SIGSTOP for longer than the library's default heartbeat of
 * 3 s) and one that restarts, saying so on standard error, instead of
 * exiting: every message sent is confirmed once, and every one is consumed.
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

static char text[1 << 16];

/* wait_for waits up to ms for what to appear in the file at path. */
static int wait_for(const char *path, const char *what, int ms)
{
    for (uint64_t until = th_now_ms() + (uint64_t)ms; th_now_ms() < until; usleep(20 * 1000)) {
        th_read_file(path, text, sizeof text);
        if (strstr(text, what))
            return 1;
    }
    return 0;
}

static void consume_and_send_wait_out_a_stall_and_a_restart(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    assert_int_equal(th_broker_start(&b), 0);
    char cout[400], cerr[400], sout[400], serr[400];
    snprintf(cout, sizeof cout, "%s/consume.out", b.dir);
    snprintf(cerr, sizeof cerr, "%s/consume.err", b.dir);
    snprintf(sout, sizeof sout, "%s/send.out", b.dir);
    snprintf(serr, sizeof serr, "%s/send.err", b.dir);
    const char *consume[] = {th_bin("sluice"), "-b", b.endpoint, "consume", "-n", "4", NULL};
    proc_spec cs = {.argv = consume, .out_path = cout, .err_path = cerr, .truncate = true, .null_stdin = true,
                    .die_with_parent = true};
    proc c;
    assert_int_equal(proc_start(&c, "consume", &cs), 0);
    /* send: one line now, one during the stall; --timeout 1s, so the stall
     * outlasts it several times over */
    char script[1024];
    snprintf(script, sizeof script, "(echo one; sleep 1.5; echo two) | '%s' -b '%s' --timeout 1000 send",
             th_bin("sluice"), b.endpoint);
    const char *send[] = {"/bin/sh", "-c", script, NULL};
    proc_spec ss = {.argv = send, .out_path = sout, .err_path = serr, .truncate = true, .null_stdin = true,
                    .die_with_parent = true};
    proc s;
    assert_int_equal(proc_start(&s, "send", &ss), 0);
    assert_true(wait_for(cout, "one\n", 10000));
    /* the stall: 5 s, while "two" is published */
    assert_int_equal(kill(b.pid, SIGSTOP), 0);
    usleep(5000 * 1000);
    assert_int_equal(kill(b.pid, SIGCONT), 0);
    assert_int_equal(proc_wait(&s, 20000), 0);
    th_read_file(serr, text, sizeof text);
    print_message("send said: %s", text);
    assert_non_null(strstr(text, "no confirmation from the broker for"));
    th_read_file(sout, text, sizeof text);
    assert_string_equal(text, "1\n2\n");
    assert_true(wait_for(cout, "two\n", 10000));
    if (!proc_running(&c)) { /* the stall ended it: say what it said */
        th_read_file(cerr, text, sizeof text);
        print_message("consume ended during the stall, saying: %s", text);
    }
    assert_true(proc_running(&c)); /* the stall did not end it */

    /* a restart: consume says so, reconnects and goes on */
    assert_int_equal(th_broker_stop(&b), 0);
    assert_true(wait_for(cerr, "does not answer", 10000));
    assert_int_equal(th_broker_start(&b), 0);
    const char *more[] = {th_bin("sluice"), "-b", b.endpoint, "send", "three", "four", NULL};
    char ids[64];
    assert_int_equal(th_run(more, NULL, ids, sizeof ids), 0);
    assert_int_equal(proc_wait(&c, 20000), 0); /* -n 4: all four */
    th_read_file(cout, text, sizeof text);
    assert_string_equal(text, "one\ntwo\nthree\nfour\n");
    th_read_file(cerr, text, sizeof text);
    print_message("consume said: %s", text);
    assert_non_null(strstr(text, "is back after"));
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(consume_and_send_wait_out_a_stall_and_a_restart, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("cli_waits", tests, NULL, NULL);
}
