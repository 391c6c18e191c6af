/*
 * test_http_warmup.c - `sluice consume --post` opens every worker's HTTP
 * connection (a HEAD) before that worker takes a delivery: the first
 * workers before the consumer subscribes, and the workers a pool resize
 * adds before the credit window grows. Against a real sluiced and a small
 * HTTP service in a child process that writes, per connection, the method
 * of each request it reads ("3 HEAD", "3 POST"): after the pool grows from
 * 1 to 3 there are 3 HEADs, and no connection's first request is a POST.
 * Every wait is bounded in time and count.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define MAX_CONNS 16
#define WAIT_MS   10000

/* serve answers HEAD 405 and POST 200 on every connection to fd, with
 * keep-alive, writing "CONN METHOD" lines to events; exits after 60 s. */
static void serve(int fd, const char *events)
{
    alarm(60);
    FILE *ev = fopen(events, "w");
    if (!ev)
        _exit(1);
    struct pollfd p[MAX_CONNS + 1] = {{.fd = fd, .events = POLLIN}};
    static char buf[MAX_CONNS + 1][8192];
    size_t got[MAX_CONNS + 1] = {0};
    int id[MAX_CONNS + 1] = {0}, conns = 0;
    for (int n = 1;;) {
        if (poll(p, (nfds_t)n, -1) < 0)
            _exit(1);
        if ((p[0].revents & POLLIN) && n <= MAX_CONNS) {
            int c = accept(fd, NULL, NULL);
            if (c >= 0) {
                p[n] = (struct pollfd){.fd = c, .events = POLLIN};
                got[n] = 0;
                id[n++] = ++conns;
            }
        }
        for (int i = 1; i < n; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            ssize_t r = read(p[i].fd, buf[i] + got[i], sizeof buf[i] - 1 - got[i]);
            if (r <= 0) { /* closed: forget it */
                close(p[i].fd);
                p[i] = p[n - 1], got[i] = got[n - 1], id[i] = id[n - 1];
                memcpy(buf[i], buf[n - 1], sizeof buf[i]);
                n--, i--;
                continue;
            }
            buf[i][got[i] += (size_t)r] = '\0';
            for (;;) { /* every whole request read so far */
                char *end = strstr(buf[i], "\r\n\r\n"), *len = strcasestr(buf[i], "\r\nContent-Length:");
                if (!end)
                    break;
                size_t body = len && len < end ? strtoul(len + 17, NULL, 10) : 0;
                size_t whole = (size_t)(end + 4 - buf[i]) + body;
                if (got[i] < whole)
                    break;
                bool head = strncmp(buf[i], "HEAD ", 5) == 0;
                fprintf(ev, "%d %s\n", id[i], head ? "HEAD" : "POST");
                fflush(ev);
                static const char allow[] = "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n";
                static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
                const char *reply = head ? allow : ok;
                if (write(p[i].fd, reply, strlen(reply)) != (ssize_t)strlen(reply))
                    _exit(1);
                memmove(buf[i], buf[i] + whole, got[i] - whole + 1);
                got[i] -= whole;
            }
        }
    }
}

/* count reads the events file: HEADs, POSTs, and connections whose first
 * request was a POST. */
static void count(const char *events, int *heads, int *posts, int *cold)
{
    static char text[65536];
    bool seen[1024] = {false};
    *heads = *posts = *cold = 0;
    th_read_file(events, text, sizeof text);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int conn = 0;
        char method[8] = "";
        if (sscanf(line, "%d %7s", &conn, method) != 2 || conn <= 0 || conn >= 1024)
            continue;
        bool head = strcmp(method, "HEAD") == 0;
        *heads += head, *posts += !head;
        *cold += !head && !seen[conn];
        seen[conn] = true;
    }
}

/* wait_heads waits (bounded) until the service has seen n HEADs. */
static bool wait_heads(const char *events, int n)
{
    uint64_t until = th_now_ms() + WAIT_MS;
    for (int i = 0; i < 1000 && th_now_ms() < until; i++) {
        int heads, posts, cold;
        count(events, &heads, &posts, &cold);
        if (heads >= n)
            return true;
        usleep(20 * 1000);
    }
    return false;
}

static int admin(const th_broker *b, const char *const *args)
{
    static char out[4096];
    const char *argv[16] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return th_run(argv, NULL, out, sizeof out);
}

static void added_workers_warm_before_taking_credit(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    char events[512], url[64], logf[512];
    snprintf(events, sizeof events, "%s/events", b->dir);
    snprintf(logf, sizeof logf, "%s/consume.log", b->dir);
    uint16_t port = 0;
    int fd = th_loopback_socket(true, &port);
    assert_true(fd >= 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/orders", (unsigned)port);
    pid_t server = fork();
    assert_true(server >= 0);
    if (server == 0)
        serve(fd, events);
    close(fd);
    const char *resize1[] = {"pool", "resize", "warm", "1", NULL};
    assert_int_equal(admin(b, resize1), 0);

    pid_t consumer = fork();
    assert_true(consumer >= 0);
    if (consumer == 0) {
        int out = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        alarm(60);
        execl(th_bin("sluice"), "sluice", "-b", b->endpoint, "consume", "--post", url, "--pool", "warm",
              "-n", "6", (char *)NULL);
        _exit(127);
    }
    assert_true(wait_heads(events, 1)); /* the first worker, before subscribing */
    const char *resize3[] = {"pool", "resize", "warm", "3", NULL};
    assert_int_equal(admin(b, resize3), 0);
    assert_true(wait_heads(events, 3)); /* the two added ones, before any delivery */

    sl_client *p = NULL;
    assert_int_equal(sl_connect(b->endpoint, NULL, &p), SL_OK);
    assert_int_equal(th_put_many(p, SL_LEVEL_DEFAULT, 6, 1), 0);
    sl_close(&p);
    int status = -1;
    uint64_t until = th_now_ms() + 20000;
    pid_t done = 0;
    for (int i = 0; i < 2000 && !done && th_now_ms() < until; i++) {
        done = waitpid(consumer, &status, WNOHANG);
        if (!done)
            usleep(10 * 1000);
    }
    if (!done) {
        kill(consumer, SIGKILL);
        waitpid(consumer, &status, 0);
    }
    kill(server, SIGKILL);
    waitpid(server, NULL, 0);
    static char text[8192];
    th_read_file(logf, text, sizeof text);
    print_message("# consume: %s\n", text);
    assert_true(done == consumer && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int heads, posts, cold;
    count(events, &heads, &posts, &cold);
    print_message("# %d HEADs, %d POSTs, %d connections whose first request was a POST\n", heads, posts, cold);
    assert_int_equal(heads, 3);
    assert_int_equal(posts, 6);
    assert_int_equal(cold, 0);
    assert_int_equal(th_broker_destroy(&b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(added_workers_warm_before_taking_credit, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
