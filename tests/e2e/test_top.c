/*
 * test_top.c - the live views against a real sluiced: `sluice top` driven in
 * a pseudo-terminal of 80x24 (its screen holds the levels and the pools,
 * no line is wider than the terminal, q quits and the terminal is given
 * back; on 10 rows the title stays; a restart of the broker is said and
 * survived; a wrong endpoint is said at once), and `sluice stats --watch`
 * as plain repeated output.
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
 * carriage returns are taken out (a cursor move home starts a line). */
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
            if (*p == 'H')
                w = 0;
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

/* top_start runs sluice top -b endpoint in a pseudo-terminal of rows x 80. */
static pid_t top_start(const char *endpoint, unsigned short rows, int *master)
{
    struct winsize ws = {.ws_row = rows, .ws_col = 80};
    const char *sluice = th_bin("sluice");
    pid_t pid = forkpty(master, NULL, NULL, &ws);
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(sluice, sluice, "-b", endpoint, "--timeout", "1000", "top", "--interval", "0.2", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* screen_wait reads the pty until what appears after from (bounded). */
static const char *screen_wait(int master, char *screen, size_t *len, size_t from, const char *what, int ms)
{
    for (uint64_t until = th_now_ms() + (uint64_t)ms; th_now_ms() < until;) {
        const char *at = strstr(screen + from, what);
        if (at)
            return at;
        read_for(master, screen, len, 50);
    }
    return strstr(screen + from, what);
}

static void top_quit(pid_t pid, int master)
{
    assert_int_equal(write(master, "q", 1), 1);
    int status = -1;
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until && waitpid(pid, &status, WNOHANG) != pid;)
        usleep(20000);
    if (!WIFEXITED(status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("sluice top did not quit on q");
    }
    assert_int_equal(WEXITSTATUS(status), 0);
    close(master);
}

/* On a terminal of 10 rows the frame never scrolls (no newline after its
 * last row: the title stays on top); when the broker restarts top says
 * "disconnected, retrying" and its view comes back; on an endpoint where
 * nothing listens it says so at once instead of a blank screen. */
static void top_survives_a_restart_and_keeps_its_title(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_subscribe(f->c, "render", NULL, 0, 1), SL_OK);
    int master;
    pid_t pid = top_start(f->b.endpoint, 10, &master);
    char *screen = calloc(1, SCREEN_MAX);
    size_t len = 0;
    const char *frame = screen_wait(master, screen, &len, 0, "LEVEL", 15000);
    assert_non_null(frame);
    assert_non_null(screen_wait(master, screen, &len, (size_t)(frame - screen), "\033[J", 5000));
    /* each frame: from the cursor home to the clear below, at most 9 newlines on 10 rows */
    for (const char *h = strstr(screen, "\033[H"); h; h = strstr(h + 1, "\033[H")) {
        const char *end = strstr(h, "\033[J");
        if (!end)
            break;
        unsigned nl = 0;
        for (const char *p = h; p < end; p++)
            nl += *p == '\n';
        if (nl > 9)
            fail_msg("a frame of %u newlines on a terminal of 10 rows: the title scrolls off", nl);
    }
    /* the broker stops: said; it starts again: the view is back */
    assert_int_equal(th_broker_stop(&f->b), 0);
    size_t mark = len;
    if (!screen_wait(master, screen, &len, mark, "disconnected, retrying", 15000))
        fail_msg("no 'disconnected, retrying' after the broker stopped:\n%s", screen + mark);
    assert_int_equal(th_broker_start(&f->b), 0);
    mark = len;
    if (!screen_wait(master, screen, &len, mark, "LEVEL", 15000))
        fail_msg("the view did not come back after the restart:\n%s", screen + mark);
    top_quit(pid, master);

    /* nothing listens there: said at once */
    uint16_t port = 0;
    int held = th_loopback_socket(false, &port);
    assert_true(held >= 0);
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", (unsigned)port);
    memset(screen, 0, SCREEN_MAX);
    len = 0;
    uint64_t t0 = th_now_ms();
    pid = top_start(ep, 24, &master);
    if (!screen_wait(master, screen, &len, 0, "disconnected, retrying (connection refused", 5000))
        fail_msg("a wrong endpoint does not say so:\n%s", screen);
    print_message("a wrong endpoint said in %llu ms\n", (unsigned long long)(th_now_ms() - t0));
    top_quit(pid, master);
    close(held);
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
        cmocka_unit_test_setup_teardown(top_survives_a_restart_and_keeps_its_title, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
