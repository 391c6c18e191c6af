/*
 * test_walkthrough.c - the documents' walkthroughs run as written: the
 * quick start of README.md (each `$ command` against a fresh broker, its
 * printed lines compared with the ones the README shows) and the
 * three-broker walkthrough of broker/README.md (its code block run whole by
 * sh -e in an empty directory, with redis-server, on ports of its own: the
 * README's 6380 and 747N replaced), checking what it prints: the sink's
 * limit set on one broker, `sink show` on another never saying "DOES NOT
 * FIT", and everything it started stopped by its last step. Run from the
 * repository root (README.md), as the other tests that read documents are.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "proc.h"

static char doc[1 << 18], out[1 << 16];

/* replace writes s with every from replaced by to into buf. */
static void replace(const char *s, const char *from, const char *to, char *buf, size_t size)
{
    size_t used = 0, lf = strlen(from);
    buf[0] = '\0';
    for (const char *p = s; *p && used + 1 < size;) {
        if (strncmp(p, from, lf) == 0) {
            used += (size_t)snprintf(buf + used, size - used, "%s", to);
            p += lf;
        } else {
            buf[used++] = *p++;
            buf[used] = '\0';
        }
    }
}

/* block_after copies the first ```sh block after heading in doc into buf. */
static void block_after(const char *heading, char *buf, size_t size)
{
    const char *h = strstr(doc, heading);
    if (!h)
        fail_msg("no '%s' in the document", heading);
    const char *b = strstr(h, "```sh\n"), *e = b ? strstr(b + 6, "```\n") : NULL;
    assert_non_null(e);
    snprintf(buf, size, "%.*s", (int)(e - b - 6), b + 6);
}

static void quick_start_as_written(void **state)
{
    (void)state;
    th_read_file("README.md", doc, sizeof doc);
    static char block[1 << 14], cmd[16384], want[4096];
    block_after("In a second terminal:", block, sizeof block);
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    char dir[PATH_MAX];
    assert_non_null(realpath(th_bin("sluice"), dir));
    *strrchr(dir, '/') = '\0';
    unsigned commands = 0;
    for (char *line = block; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "$ ", 2) != 0)
            fail_msg("not a command: %s", line);
        /* the lines up to the next command are what it prints */
        want[0] = '\0';
        while (next && *next && strncmp(next, "$ ", 2) != 0) {
            char *end = strchr(next, '\n');
            size_t len = end ? (size_t)(end - next) : strlen(next);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%.*s\n", (int)len, next);
            next = end ? end + 1 : NULL;
        }
        char with[4096];
        replace(line + 2, "bin/", "", with, sizeof with); /* the programs: the build under test */
        snprintf(cmd, sizeof cmd, "export PATH='%s':$PATH SLUICE_BROKER='%s'; %s", dir, b->endpoint, with);
        const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
        int status = th_run(argv, NULL, out, sizeof out);
        if (status != 0 || (want[0] && strcmp(out, want) != 0)) {
            th_broker_destroy(&b);
            fail_msg("the quick start's '%s' exited %d and printed:\n%swhere the README shows:\n%s", line + 2, status,
                     out, want);
        }
        commands++;
        line = next;
    }
    assert_true(commands >= 4);
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* free_port returns a loopback port nothing listens on (bound and closed). */
static uint16_t free_port(void)
{
    uint16_t port = 0;
    int fd = th_loopback_socket(false, &port);
    assert_true(fd >= 0);
    close(fd);
    return port;
}

/* ports_free tells whether base+1..base+3 can be bound on loopback now. */
static bool ports_free(unsigned base)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "! ss -Htln 'sport >= :%u and sport <= :%u' | grep -q .", base + 1, base + 3);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    return th_run(argv, NULL, out, sizeof out) == 0;
}

static void three_brokers_as_written(void **state)
{
    (void)state;
    const char *which[] = {"/bin/sh", "-c", "command -v redis-server && command -v redis-cli", NULL};
    if (th_run(which, NULL, out, sizeof out) != 0) {
        print_message("redis-server or redis-cli missing (Debian redis-server): skipped\n");
        skip();
    }
    th_read_file("broker/README.md", doc, sizeof doc);
    static char block[1 << 14], a[1 << 14], script[1 << 15];
    block_after("### Three brokers and Redis on one machine, step by step", block, sizeof block);
    /* ports of its own: Redis's, and a prefix for the brokers' 747N */
    char redis_port[16], prefix[40];
    snprintf(redis_port, sizeof redis_port, "%u", (unsigned)free_port());
    unsigned base = 0;
    for (unsigned tries = 0; tries < 50 && !base; tries++) {
        unsigned p = 20000 + (th_seed() + tries * 7919) % 4000 * 10;
        if (ports_free(p))
            base = p;
    }
    assert_true(base);
    snprintf(prefix, sizeof prefix, "tcp://127.0.0.1:%u", base / 10);
    replace(block, "6380", redis_port, a, sizeof a);
    replace(a, "tcp://127.0.0.1:747", prefix, block, sizeof block);
    char dir[300], bin[PATH_MAX];
    snprintf(dir, sizeof dir, "/tmp/sluice-walk-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_non_null(realpath(th_bin("sluice"), bin));
    *strrchr(bin, '/') = '\0';
    snprintf(script, sizeof script, "set -e\ncd '%s'\nexport PATH='%s':$PATH\n%s", dir, bin, block);
    char path[400], outp[400], errp[400];
    snprintf(path, sizeof path, "%s/walk.sh", dir);
    snprintf(outp, sizeof outp, "%s/walk.out", dir);
    snprintf(errp, sizeof errp, "%s/walk.err", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(script, f);
    assert_int_equal(fclose(f), 0);

    const char *argv[] = {"/bin/sh", path, NULL};
    proc_spec spec = {.argv = argv, .out_path = outp, .err_path = errp, .truncate = true, .null_stdin = true,
                      .own_group = true, .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "walkthrough", &spec), 0);
    pid_t group = p.pid;
    int status = proc_wait(&p, 40000); /* within th_timeout_s (60 s): then what it started is stopped below */
    /* whatever happened, nothing it started is left: its group (the brokers),
     * and Redis, which left the group to run as a daemon */
    kill(-group, SIGTERM);
    if (status == PROC_RUNNING)
        proc_kill(&p);
    /* Redis's pid from the line its log opens with ("... pid=N, just started"):
     * its pidfile is gone once it has stopped, which step 5 may already have done */
    char logpath[400], pid[32] = "";
    static char log[1 << 16];
    snprintf(logpath, sizeof logpath, "%s/redis.log", dir);
    th_read_file(logpath, log, sizeof log);
    const char *at = strstr(log, "pid=");
    if (at)
        snprintf(pid, sizeof pid, "%.*s", (int)strspn(at + 4, "0123456789"), at + 4);
    static char text[1 << 16];
    th_read_file(outp, out, sizeof out);
    th_read_file(errp, text, sizeof text);
    if (status != 0) {
        if (atoi(pid) > 0)
            kill((pid_t)atoi(pid), SIGTERM);
        fail_msg("the walkthrough exited %d:\n%s\n%s", status, out, text);
    }
    print_message("the walkthrough printed:\n%s", out);
    assert_non_null(strstr(out, "sink: rate 2000/s"));             /* step 4, on the first broker */
    assert_non_null(strstr(out, "shared     yes: "));               /* sink show on the third */
    assert_non_null(strstr(out, "limit      "));
    assert_null(strstr(out, "DOES NOT FIT"));
    /* step 5 stopped Redis: its pid answers no more (bounded wait) */
    assert_true(atoi(pid) > 0);
    uint64_t until = th_now_ms() + 10000;
    while (kill((pid_t)atoi(pid), 0) == 0 && th_now_ms() < until)
        usleep(20000);
    assert_int_not_equal(kill((pid_t)atoi(pid), 0), 0);
    th_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(quick_start_as_written, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(three_brokers_as_written, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("walkthrough", tests, NULL, NULL);
}
