/*
 * test_cli_waits.c - `sluice consume` and `sluice send` wait out a broker
 * that stalls (SIGSTOP for longer than the library's default heartbeat of
 * 3 s) and one that restarts, saying so on standard error, instead of
 * exiting: every message sent is confirmed once, and every one is consumed,
 * in order; at least once, since a delivery whose connection the stall cut
 * before its ACK was taken comes again.
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

/* in_order_at_least_once tells whether the lines of out are want[0..n)
 * in that order, each at least once: a line may come again after it came
 * (a redelivery: a delivery whose connection the stall or the restart cut
 * before its ACK was taken), never before, and nothing else may come. */
static int in_order_at_least_once(const char *out, const char *const *want, size_t n)
{
    size_t next = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        size_t k = 0;
        while (k < n && !(strlen(want[k]) == len && memcmp(want[k], line, len) == 0))
            k++;
        if (k > next || k == n)
            return 0; /* ahead of its turn, or not sent */
        if (k == next)
            next++;
        line += len + (end != NULL);
    }
    return next == n;
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
    const char *consume[] = {th_bin("sluice"), "-b", b.endpoint, "consume", NULL};
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
    assert_true(wait_for(cout, "four\n", 20000));
    assert_int_equal(proc_stop(&c, 10000), 0);
    th_read_file(cout, text, sizeof text);
    print_message("consume printed: %s", text);
    assert_true(in_order_at_least_once(text, (const char *[]){"one", "two", "three", "four"}, 4));
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
