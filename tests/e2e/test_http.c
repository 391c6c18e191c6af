/*
 * test_http.c - `sluice consume --post`: messages delivered over HTTP to a
 * real sluice-sink, with the answer deciding each message's fate.
 *
 * Every test starts a real sluiced (th_broker) and, when it needs one, a
 * real sluice-sink on 127.0.0.1 port 0 (its port read from its stderr once
 * it has written READY on --ready-fd), both in the test's own temporary
 * directory. Messages are published with the client library; the consumer
 * is the real `sluice` binary run through th_run; what the service saw is
 * read from the sink's --log (one line per POST: "<ns> <status> <body>"),
 * after the sink is stopped by its PID so that the log is complete. What
 * the broker did is read with sl_stats_get and sl_explain.
 *
 * Pinned down: a generous service gets every body once, with 200; a service
 * slower than the broker's sink rate answers 429, the broker counts the
 * refusals as throttled and honours Retry-After, and still every body is
 * answered 200 exactly once and nothing becomes a dead letter; no answer
 * (a closed port, a listener that never answers) nacks with a backoff that
 * doubles per attempt, and the message stays queued; a 503 whose
 * Retry-After is an HTTP date pauses the broker until then (a one-request
 * server in a child process answers it); a 4xx is a permanent
 * failure, said on stderr and held back for an hour. Every test runs under
 * alarm(TEST_TIMEOUT_S) (th_timeout_arm), and every wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define TEST_TIMEOUT_S 120
#define MAX_BODIES 64

static char text[1 << 20];
static char out[1 << 16];

/* ---- the broker ---- */

/* publish sends n bodies "<prefix>-<seed>-<i>" to the default level and
 * keeps their ids. */
static void publish(const th_broker *b, const char *prefix, int n, char bodies[][64], uint64_t *ids)
{
    sl_client *c = NULL;
    assert_int_equal(sl_connect(b->endpoint, NULL, &c), SL_OK);
    for (int i = 0; i < n; i++) {
        snprintf(bodies[i], 64, "%s-%u-%d", prefix, th_seed(), i);
        sl_put m = {.body = bodies[i], .body_len = strlen(bodies[i]), .level = SL_LEVEL_DEFAULT};
        assert_int_equal(sl_send(c, &m, &ids[i]), SL_OK);
    }
    sl_close(&c);
}

/* level_stats reads the default level's figures ("normal", level 1). */
static sl_level_stats level_stats(const th_broker *b)
{
    sl_client *c = NULL;
    sl_stats st;
    assert_int_equal(sl_connect(b->endpoint, NULL, &c), SL_OK);
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    sl_close(&c);
    assert_true(st.nlevels > 1);
    assert_string_equal(st.level[1].name, "normal");
    return st.level[1];
}

static sl_explain_info explain(const th_broker *b, uint64_t id)
{
    sl_client *c = NULL;
    sl_explain_info e;
    assert_int_equal(sl_connect(b->endpoint, NULL, &c), SL_OK);
    assert_int_equal(sl_explain(c, id, &e), SL_OK);
    sl_close(&c);
    return e;
}

/* sink_paused_ms reads how long the broker still holds dispatch to the sink. */
static uint64_t sink_paused_ms(const th_broker *b)
{
    sl_client *c = NULL;
    sl_sink_info info;
    assert_int_equal(sl_connect(b->endpoint, NULL, &c), SL_OK);
    assert_int_equal(sl_sink_show(c, &info), SL_OK);
    sl_close(&c);
    return info.paused_ms;
}

/* consume runs `sluice -b ENDPOINT consume --post URL ARGS...` with its
 * stderr joined to its stdout (into out); returns the exit status. */
static int consume(const th_broker *b, const char *url, const char *const *args)
{
    const char *argv[40] = {th_bin("sluice"), "-b", b->endpoint, "consume", "--post", url};
    int n = 6;
    for (int i = 0; args && args[i] && n < 38; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    /* run through a shell that joins stderr to stdout, then execs it */
    const char *sh[44] = {"/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"};
    for (int i = 0; argv[i]; i++)
        sh[4 + i] = argv[i];
    return th_run(sh, NULL, out, sizeof out);
}

/* ---- the sink (th_sink) ---- */

/* What the sink's log says about each body. */
typedef struct seen {
    int ok, throttled, other, unknown; /* unknown: lines for no published body */
    int ok_by_body[MAX_BODIES];
} seen;

static seen sink_seen(const th_sink *p, char bodies[][64], int n)
{
    seen s = {0};
    th_read_file(p->log, text, sizeof text);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char body[256];
        int status;
        assert_int_equal(sscanf(line, "%*s %d %255s", &status, body), 2);
        int which = -1;
        for (int i = 0; i < n && which < 0; i++)
            if (strcmp(body, bodies[i]) == 0)
                which = i;
        if (which < 0)
            s.unknown++;
        else if (status == 200)
            s.ok++, s.ok_by_body[which]++;
        else if (status == 429)
            s.throttled++;
        else
            s.other++;
    }
    return s;
}

/* ---- the tests ---- */

static void generous_service_gets_every_body_once_with_200(void **state)
{
    (void)state;
    enum { N = 40 };
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    th_sink p;
    const char *sink_opts[] = {"--rate", "100000", "--burst", "100000", NULL};
    assert_int_equal(th_sink_start(&p, b->dir, sink_opts), 0);
    static char bodies[N][64];
    uint64_t ids[N];
    publish(b, "order", N, bodies, ids);

    const char *args[] = {"-n", "40", "--workers", "4", "--idle-exit", "10000", "--header",
                          "X-Sluice-Test: yes", "--http-timeout", "10000", NULL};
    int rc = consume(b, p.url, args);
    if (rc != 0)
        fprintf(stderr, "consume said:\n%s\n", out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, ""); /* nothing printed: the bodies went over HTTP */
    assert_int_equal(th_sink_stop(&p), 0);

    seen s = sink_seen(&p, bodies, N);
    assert_int_equal(s.ok, N);
    assert_int_equal(s.throttled + s.other + s.unknown, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(s.ok_by_body[i], 1);
    sl_level_stats st = level_stats(b);
    assert_int_equal(st.acked, N);
    assert_int_equal(st.nacked + st.throttled + st.dead, 0);
    assert_int_equal(st.depth + st.inflight + st.delayed, 0);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void slow_service_throttles_yet_every_body_is_acked_once(void **state)
{
    (void)state;
    enum { N = 30 };
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    th_sink p;
    /* the service admits 20/s; the broker is told the sink takes 200/s */
    const char *sink_opts[] = {"--rate", "20", "--burst", "1", NULL};
    assert_int_equal(th_sink_start(&p, b->dir, sink_opts), 0);
    const char *sink_set[] = {th_bin("sluice"), "-b", b->endpoint, "sink", "set", "--rate", "200",
                              "--burst", "20", NULL};
    assert_int_equal(th_run(sink_set, NULL, out, sizeof out), 0);
    static char bodies[N][64];
    uint64_t ids[N];
    publish(b, "slow", N, bodies, ids);

    /* -n counts throttled returns too, so run until idle; a run that ends
     * early (a long pause) is followed by another, at most 5 */
    const char *args[] = {"--workers", "4", "--idle-exit", "4000", NULL};
    sl_level_stats st = {0};
    for (int run = 0; run < 5 && st.acked < N; run++) {
        int rc = consume(b, p.url, args);
        if (rc != 0)
            fprintf(stderr, "consume said:\n%s\n", out);
        assert_int_equal(rc, 0);
        st = level_stats(b);
    }
    assert_int_equal(th_sink_stop(&p), 0);

    seen s = sink_seen(&p, bodies, N);
    assert_true(s.throttled > 0);
    assert_int_equal(s.ok, N);
    assert_int_equal(s.other + s.unknown, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(s.ok_by_body[i], 1);
    assert_int_equal(st.acked, N);
    assert_true(st.throttled > 0);
    assert_int_equal(st.throttled, (uint64_t)s.throttled);
    assert_int_equal(st.dead + st.nacked, 0);
    assert_int_equal(st.depth + st.inflight + st.delayed, 0);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void retry_after_from_the_service_pauses_the_broker(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    th_sink p;
    /* one request a second, and a refusal asks for 7 s */
    const char *sink_opts[] = {"--rate", "1", "--burst", "1", "--retry-after", "7", NULL};
    assert_int_equal(th_sink_start(&p, b->dir, sink_opts), 0);
    static char bodies[2][64];
    uint64_t ids[2];
    publish(b, "pause", 2, bodies, ids);

    /* both are delivered at once: one passes, the other is refused */
    const char *args[] = {"-n", "2", "--workers", "2", "--idle-exit", "10000", "--verbose", NULL};
    assert_int_equal(consume(b, p.url, args), 0);
    assert_non_null(strstr(out, "HTTP 429 from http://127.0.0.1:"));
    assert_non_null(
        strstr(out, "returned as throttled, scope sink (attempt 1), the broker pauses the sink for 7000 ms"));
    /* the default backoff is 1 s: a pause this long is the service's 7 s.
     * What is left of it is read after the consumer exits, so it is never
     * more than 7 s and only less by however late that read comes */
    uint64_t paused_ms = sink_paused_ms(b);
    assert_true(paused_ms > 2000 && paused_ms <= 7000);
    assert_int_equal(th_sink_stop(&p), 0);

    seen s = sink_seen(&p, bodies, 2);
    assert_int_equal(s.ok, 1);
    assert_int_equal(s.throttled, 1);
    sl_level_stats st = level_stats(b);
    assert_int_equal(st.acked, 1);
    assert_int_equal(st.throttled, 1);
    assert_int_equal(st.depth, 1); /* back at the head, uncharged */
    assert_int_equal(st.nacked, 0);
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* loopback_socket opens th_loopback_socket, listening when listening, and
 * writes the URL of /orders on its port. Bound and not listening, the port
 * refuses connections while fd is open. */
static int loopback_socket(bool listening, char *url, size_t url_len)
{
    uint16_t port = 0;
    int fd = th_loopback_socket(listening, &port);
    assert_true(fd >= 0);
    snprintf(url, url_len, "http://127.0.0.1:%u/orders", (unsigned)port);
    return fd;
}

static void unreachable_service_nacks_with_doubling_backoff(void **state)
{
    (void)state;
    enum { N = 3 };
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    static char bodies[N][64];
    uint64_t ids[N];
    publish(b, "nobody", N, bodies, ids);
    char url[64];
    int fd = loopback_socket(false, url, sizeof url);

    /* three attempts each: refused at once, nacked for 500, 1000, 2000 ms */
    uint64_t start_ms = th_now_ms();
    const char *args[] = {"-n", "9", "--idle-exit", "10000", "--verbose", NULL};
    assert_int_equal(consume(b, url, args), 0);
    uint64_t took_ms = th_now_ms() - start_ms;
    close(fd);
    assert_non_null(strstr(out, "no answer from http://127.0.0.1:"));
    assert_non_null(strstr(out, "nacked (attempt 1), delivered again in 500 ms"));
    assert_non_null(strstr(out, "nacked (attempt 2), delivered again in 1000 ms"));
    assert_non_null(strstr(out, "nacked (attempt 3), delivered again in 2000 ms"));
    assert_true(took_ms >= 1500); /* it waited out both backoffs */

    sl_level_stats st = level_stats(b);
    assert_int_equal(st.nacked, 3 * N);
    assert_int_equal(st.acked + st.dead + st.throttled, 0);
    assert_int_equal(st.depth + st.inflight + st.delayed, N); /* all still queued */
    for (int i = 0; i < N; i++) {
        sl_explain_info e = explain(b, ids[i]);
        if (strcmp(e.state, "delayed") == 0)
            assert_true(e.until_ms <= 2000);
        else
            assert_string_equal(e.state, "ready");
    }
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void silent_service_times_out_and_nacks(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    static char bodies[1][64];
    uint64_t ids[1];
    publish(b, "silent", 1, bodies, ids);
    /* a listener that never accepts: the kernel completes the handshake,
     * nobody answers */
    char url[64];
    int fd = loopback_socket(true, url, sizeof url);

    uint64_t start_ms = th_now_ms();
    const char *args[] = {"-n", "1", "--http-timeout", "300", "--verbose", NULL};
    assert_int_equal(consume(b, url, args), 0);
    uint64_t took_ms = th_now_ms() - start_ms;
    close(fd);
    assert_true(took_ms >= 300 && took_ms < 20000);
    assert_non_null(strstr(out, "imed out")); /* libcurl: "Operation timed out ..." */
    assert_non_null(strstr(out, "nacked (attempt 1), delivered again in 500 ms"));
    sl_level_stats st = level_stats(b);
    assert_int_equal(st.nacked, 1);
    assert_int_equal(st.acked + st.dead, 0);
    assert_int_equal(st.depth + st.delayed, 1);
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* answer_once serves one request on the listening fd from a child
 * process: reads the head and Content-Length bytes of body, sends reply and
 * exits (within 20 s in any case). The consumer's warm-up HEAD, before it,
 * is answered 405 on the same connection, which the POST must then reuse
 * (one accept). Returns the child's PID. */
static pid_t answer_once(int fd, const char *reply)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid > 0)
        return pid;
    alarm(20);
    int c = accept(fd, NULL, NULL);
    char buf[4096];
    size_t got = 0;
    if (c < 0)
        _exit(1);
    for (;;) {
        ssize_t n = got < sizeof buf - 1 ? read(c, buf + got, sizeof buf - 1 - got) : 0;
        if (n <= 0)
            _exit(1);
        buf[got += (size_t)n] = '\0';
        const char *end = strstr(buf, "\r\n\r\n"), *len = strcasestr(buf, "\r\nContent-Length:");
        if (end && strncmp(buf, "HEAD ", 5) == 0) { /* the warm-up */
            static const char allow[] = "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n";
            if (write(c, allow, sizeof allow - 1) != (ssize_t)(sizeof allow - 1))
                _exit(1);
            got = strlen(end + 4);
            memmove(buf, end + 4, got + 1);
            continue;
        }
        if (end && len && got >= (size_t)(end + 4 - buf) + strtoul(len + 17, NULL, 10))
            break;
    }
    _exit(write(c, reply, strlen(reply)) == (ssize_t)strlen(reply) ? 0 : 1);
}

static void unavailable_with_an_http_date_pauses_until_that_date(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    static char bodies[1][64];
    uint64_t ids[1];
    publish(b, "later", 1, bodies, ids);
    char url[64], date[64], reply[256];
    int fd = loopback_socket(true, url, sizeof url);
    time_t at = time(NULL) + 8;
    struct tm tm;
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&at, &tm));
    snprintf(reply, sizeof reply,
             "HTTP/1.1 503 Service Unavailable\r\nRetry-After: %s\r\nContent-Length: 0\r\n"
             "Connection: close\r\n\r\n",
             date);
    pid_t server = answer_once(fd, reply);

    const char *args[] = {"-n", "1", "--verbose", NULL};
    assert_int_equal(consume(b, url, args), 0);
    int status = -1;
    assert_int_equal(waitpid(server, &status, 0), server);
    close(fd);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_non_null(strstr(out, "HTTP 503 from http://127.0.0.1:"));
    assert_non_null(strstr(out, "returned as throttled, scope sink (attempt 1)"));
    uint64_t paused_ms = sink_paused_ms(b);
    assert_true(paused_ms > 2000 && paused_ms <= 8000); /* not the 1 s default; read late, never early */
    sl_level_stats st = level_stats(b);
    assert_int_equal(st.throttled, 1);
    assert_int_equal(st.depth, 1);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void client_error_is_permanent_and_a_dead_letter(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    th_sink p;
    const char *sink_opts[] = {"--rate", "1000", NULL};
    assert_int_equal(th_sink_start(&p, b->dir, sink_opts), 0);
    static char bodies[1][64];
    uint64_t ids[1];
    publish(b, "wrong", 1, bodies, ids);
    /* the sink answers 404 to a POST under /_ that is not a control path */
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/_no_such_service", (unsigned)p.port);

    const char *args[] = {"-n", "1", "--idle-exit", "10000", NULL};
    assert_int_equal(consume(b, url, args), 0);
    char want[200];
    snprintf(want, sizeof want,
             "sluice: consume: message %" PRIu64 ": HTTP 404 from %s; permanent failure (attempt 1): rejected",
             ids[0], url);
    assert_non_null(strstr(out, want)); /* said without --verbose */
    assert_int_equal(th_sink_stop(&p), 0);

    sl_level_stats st = level_stats(b);
    assert_int_equal(st.nacked, 0); /* no attempts burned on a request that can never succeed */
    assert_int_equal(st.acked + st.throttled, 0);
    assert_int_equal(st.dead, 1);
    sl_explain_info e = explain(b, ids[0]);
    assert_string_equal(e.state, "dead");
    assert_non_null(strstr(e.why, "HTTP 404"));
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void post_options_are_checked(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    static const char *const bad[][6] = {
        {"--exec", "cat", NULL},                         /* with --post: one or the other */
        {"--http-timeout", "0", NULL},                   /* out of range */
        {"--header", "no colon here", NULL},             /* not "Name: value" */
        {"--header", "Bad Name: x", NULL},               /* a space in the name */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(consume(b, "http://127.0.0.1:1/", bad[i]), 2);
        assert_non_null(strstr(out, "sluice: consume: "));
    }
    assert_int_equal(consume(b, "ftp://127.0.0.1/", NULL), 2);
    assert_non_null(strstr(out, "bad --post URL"));
    assert_int_equal(consume(b, "not a url", NULL), 2);
    const char *header_alone[] = {th_bin("sluice"), "-b", b->endpoint, "consume", "--header",
                                  "A: b", NULL};
    assert_int_equal(th_run(header_alone, NULL, out, sizeof out), 2);
    assert_int_equal(th_broker_destroy(&b), 0);
}

int main(void)
{
    th_timeout_s = TEST_TIMEOUT_S;
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(generous_service_gets_every_body_once_with_200, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(slow_service_throttles_yet_every_body_is_acked_once, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(retry_after_from_the_service_pauses_the_broker, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(unreachable_service_nacks_with_doubling_backoff, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(silent_service_times_out_and_nacks, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(unavailable_with_an_http_date_pauses_until_that_date, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(client_error_is_permanent_and_a_dead_letter, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(post_options_are_checked, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
