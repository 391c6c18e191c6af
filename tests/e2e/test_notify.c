/*
 * test_notify.c - sluiced and the service manager's notification protocol
 * (Type=notify): against a datagram socket this test creates and names in
 * $NOTIFY_SOCKET, the broker must send READY=1 (with its MAINPID) once it
 * serves, WATCHDOG=1 pings while $WATCHDOG_USEC is set, and STOPPING=1 on
 * SIGTERM; in the abstract namespace too; and a socket nobody listens on
 * must not stop it from serving.
 */
#include <errno.h>
#include <poll.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

/* manager binds a datagram socket at name (a path, or @name) and returns it. */
static int manager(const char *name)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    assert_true(len < sizeof a.sun_path);
    memcpy(a.sun_path, name, len);
    if (name[0] == '@')
        a.sun_path[0] = '\0';
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (name[0] != '@'));
    if (bind(fd, (struct sockaddr *)&a, alen) != 0)
        fail_msg("bind %s: %s", name, strerror(errno));
    return fd;
}

/* watched_start starts b (initialised) with a manager socket in its
 * directory as $NOTIFY_SOCKET and WATCHDOG_USEC=200000 (a ping every
 * 100 ms; a stall past 100 ms stops them), and returns the socket. */
static int watched_start(th_broker *b)
{
    char path[400];
    snprintf(path, sizeof path, "%s/notify.sock", b->dir);
    int fd = manager(path);
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "200000", 1);
    int started = th_broker_start(b);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    assert_int_equal(started, 0);
    return fd;
}

/* collect appends the datagrams that arrive within ms to log, one per
 * "[...]" entry, and returns how many came. */
static unsigned collect(int fd, char *log, size_t cap, int ms)
{
    unsigned n = 0;
    for (uint64_t until = th_now_ms() + (uint64_t)ms; th_now_ms() < until;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(until - th_now_ms()) + 1) <= 0)
            continue;
        char d[1024];
        ssize_t got = recv(fd, d, sizeof d - 1, 0);
        if (got <= 0)
            continue;
        d[got] = '\0';
        size_t used = strlen(log);
        snprintf(log + used, cap - used, "[%s]", d);
        n++;
    }
    return n;
}

static unsigned occurrences(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void ready_watchdog_and_stopping_reach_the_manager(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    int fd = watched_start(&b);

    static char log[65536];
    log[0] = '\0';
    collect(fd, log, sizeof log, 1000);
    char mainpid[64];
    snprintf(mainpid, sizeof mainpid, "MAINPID=%d", (int)b.pid);
    if (!strstr(log, "READY=1") || !strstr(log, mainpid) || !strstr(log, "STATUS=serving 3 levels"))
        fail_msg("no READY=1 with %s and a STATUS line: %s", mainpid, log);
    unsigned pings = occurrences(log, "[WATCHDOG=1]");
    if (pings < 3) /* ten are due in a second; three is a floor a busy machine keeps */
        fail_msg("only %u watchdog pings in a second: %s", pings, log);
    assert_null(strstr(log, "STOPPING=1"));

    assert_int_equal(th_broker_stop(&b), 0);
    collect(fd, log, sizeof log, 200);
    if (!strstr(log, "STOPPING=1"))
        fail_msg("no STOPPING=1 after SIGTERM: %s", log);
    /* READY came first, STOPPING last */
    assert_true(strstr(log, "READY=1") < strstr(log, "STOPPING=1"));
    printf("# %u watchdog pings in the first second\n", pings);
    close(fd);
    th_broker_fini(&b);
}

/* A commit stuck in its flush (the slow-disk shim makes each flush take a
 * second; an LMDB commit has two) confirms nothing, so the watchdog must
 * not be fed while it is out: the pings stop once it has been out for half
 * the period, and come back when it ends. Without the log (--wal-mb 0), so
 * that no checkpoint follows the commit and the second after it is free. */
static void no_pings_while_a_commit_is_stuck(void **state)
{
    (void)state;
    static const char *const extra[] = {"--wal-mb", "0", NULL};
    th_broker b;
    assert_int_equal(th_broker_init(&b, extra), 0);
    const char *env[] = {"SLUICE_SLOW_FLUSH_US=1000000", NULL};
    th_broker_preload(&b, "slowdisk.so", env);
    int fd = watched_start(&b);
    static char log[65536];
    log[0] = '\0';
    collect(fd, log, sizeof log, 500); /* READY and the first pings */
    sl_client *c = th_client(&b, 15000);
    uint64_t ticket;
    sl_put m = {.body = "x", .body_len = 1, .level = 0};
    assert_int_equal(sl_send_async(c, &m, &ticket), SL_OK); /* its commit: about 2 s of flushes */
    log[0] = '\0';
    collect(fd, log, sizeof log, 1500);
    unsigned stuck = occurrences(log, "[WATCHDOG=1]");
    sl_confirm cf;
    assert_int_equal(sl_send_wait(c, 15000, &cf), SL_OK);
    assert_int_equal(cf.err, SL_OK);
    log[0] = '\0';
    collect(fd, log, sizeof log, 1000);
    unsigned after = occurrences(log, "[WATCHDOG=1]");
    printf("# %u watchdog pings in 1.5 s of a stuck commit, %u in the second after it\n", stuck, after);
    if (stuck > 3) /* 15 are due in 1.5 s; only those before the stall (100 ms) may go */
        fail_msg("%u watchdog pings while a commit was stuck", stuck);
    if (after < 3)
        fail_msg("only %u watchdog pings in the second after the commit ended", after);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    close(fd);
    th_broker_fini(&b);
}

static void abstract_socket_and_no_watchdog(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    char name[64];
    snprintf(name, sizeof name, "@sluice-test-notify-%d", (int)getpid());
    int fd = manager(name);
    setenv("NOTIFY_SOCKET", name, 1);
    int started = th_broker_start(&b);
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(started, 0);
    static char log[8192];
    log[0] = '\0';
    collect(fd, log, sizeof log, 400);
    assert_non_null(strstr(log, "READY=1"));
    assert_null(strstr(log, "WATCHDOG=1")); /* no WATCHDOG_USEC, no pings */
    assert_int_equal(th_broker_stop(&b), 0);
    collect(fd, log, sizeof log, 200);
    assert_non_null(strstr(log, "STOPPING=1"));
    close(fd);
    th_broker_fini(&b);
}

static void a_manager_that_is_gone_does_not_stop_the_broker(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    setenv("NOTIFY_SOCKET", "/nonexistent/notify.sock", 1);
    setenv("WATCHDOG_USEC", "100000", 1);
    int started = th_fixture_start(NULL, &f);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    assert_int_equal(started, 0);
    uint64_t id = 0;
    sl_put m = {.body = "x", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    assert_true(id > 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ready_watchdog_and_stopping_reach_the_manager, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(abstract_socket_and_no_watchdog, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(no_pings_while_a_commit_is_stuck, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_manager_that_is_gone_does_not_stop_the_broker, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
