/*
 * test_top.c - the live views against a real sluiced: `sluice top` driven in
 * a pseudo-terminal of 80x24 (its screen holds the levels and the pools,
 * no line is wider than the terminal, q quits and the terminal is given
 * back), and `sluice stats --watch` as plain repeated output.
 */
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define SCREEN_MAX (256 * 1024)

/* read_for appends what the pty gives within ms (or until it closes) to buf. */
static void read_for(int fd, char *buf, size_t *len, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, ms) <= 0)
        return;
    ssize_t n = read(fd, buf + *len, SCREEN_MAX - 1 - *len);
    if (n > 0)
        *len += (size_t)n;
    buf[*len] = '\0';
}

/* widest_line returns the widest line of text once escape sequences and
 * carriage returns are taken out. */
static size_t widest_line(const char *text)
{
    size_t widest = 0, w = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\033') {
            p++;
            if (*p == '[')
                while (p[1] && !((p[1] >= 'A' && p[1] <= 'Z') || (p[1] >= 'a' && p[1] <= 'z')))
                    p++;
            if (*p)
                p++;
            if (!*p)
                break;
            continue;
        }
        if (*p == '\n') {
            w = 0;
            continue;
        }
        if (*p != '\r' && ++w > widest)
            widest = w;
    }
    return widest;
}

static void top_in_a_pseudo_terminal_shows_levels_and_q_quits(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 0, 5, 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 2, 7, 1), SL_OK);
    assert_int_equal(sl_subscribe(f->c, "render", NULL, 0, 1), SL_OK); /* a pool to show */

    int master;
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    const char *sluice = th_bin("sluice");
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(sluice, sluice, "-b", f->b.endpoint, "top", "--interval", "0.2", (char *)NULL);
        _exit(127);
    }
    char *screen = calloc(1, SCREEN_MAX);
    size_t len = 0;
    uint64_t deadline = th_now_ms() + 15000;
    while (th_now_ms() < deadline &&
           !(strstr(screen, "LEVEL") && strstr(screen, "high") && strstr(screen, "normal") &&
             strstr(screen, "low") && strstr(screen, "render") && strstr(screen, "\033[J")))
        read_for(master, screen, &len, 100);
    if (!strstr(screen, "render") || !strstr(screen, "low"))
        fail_msg("the screen lacks the levels or the pool:\n%s", screen);
    assert_non_null(strstr(screen, "\033[?1049h")); /* the alternate screen */
    /* one whole frame is on screen: its first line is the title */
    const char *frame = strstr(screen, "sluice top");
    assert_non_null(frame);
    size_t widest = widest_line(frame);
    if (widest >= 80)
        fail_msg("a line of %zu columns in an 80-column terminal", widest);

    assert_int_equal(write(master, "q", 1), 1);
    int status = -1;
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until;) {
        read_for(master, screen, &len, 50);
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
    }
    if (!WIFEXITED(status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("sluice top did not quit on q");
    }
    assert_int_equal(WEXITSTATUS(status), 0);
    read_for(master, screen, &len, 100);
    assert_non_null(strstr(screen, "\033[?1049l")); /* the terminal given back */
    close(master);
    free(screen);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static unsigned count(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void stats_watch_repeats_plain_tables_and_json_lines(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 1, 3, 1), SL_OK);
    static char out[65536];
    const char *table[] = {th_bin("sluice"), "-b", f->b.endpoint, "stats", "--watch", "0.2", "--count", "3", NULL};
    assert_int_equal(th_run(table, NULL, out, sizeof out), 0);
    assert_int_equal(count(out, ", every 0.2 s --"), 3);
    assert_int_equal(count(out, "LEVEL"), 3);
    assert_null(strchr(out, '\033')); /* plain: no escape sequence */

    const char *json[] = {th_bin("sluice"), "-b", f->b.endpoint, "stats", "--json", "--watch", "--count", "2", NULL};
    assert_int_equal(th_run(json, NULL, out, sizeof out), 0);
    assert_int_equal(count(out, "{\"uptime_ms\":"), 2);
    assert_int_equal(count(out, "\n"), 2);

    const char *no_watch[] = {th_bin("sluice"), "-b", f->b.endpoint, "stats", "--count", "2", NULL};
    assert_int_equal(th_run(no_watch, NULL, out, sizeof out), 2);
    const char *bad[] = {th_bin("sluice"), "-b", f->b.endpoint, "stats", "--watch=0", NULL};
    assert_int_equal(th_run(bad, NULL, out, sizeof out), 2);
    const char *not_tty[] = {th_bin("sluice"), "-b", f->b.endpoint, "top", NULL};
    assert_int_equal(th_run(not_tty, NULL, out, sizeof out), 2); /* stdout is a pipe here */
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(top_in_a_pseudo_terminal_shows_levels_and_q_quits, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(stats_watch_repeats_plain_tables_and_json_lines, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
