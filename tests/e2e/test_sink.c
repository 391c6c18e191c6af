/*
 * test_sink.c - sluice-sink, the real program over loopback HTTP: it
 * throttles, logs and follows limit changes; the control port and a fixed
 * Retry-After; injected 429s on demand; per-key limits: of two tenants only
 * the fast one gets 429s, each naming its scope and key; `sluice consume
 * --post` from a real broker sends each tag in the header the sink keys on;
 * bad options exit 2 and --help teaches every option. Its limiters and its
 * per-key table are tested without the program in
 * tests/unit/test_sink_limit.c.
 *
 * The end-to-end test starts bin/sluice-sink with th_sink_start (th_bin, so
 * $SLUICE_BIN picks the build) on 127.0.0.1 port 0 with --ready-fd, in a
 * temporary directory of its own, and talks to it with the small HTTP/1.1
 * client below: one connection per request, "Connection: close", every read
 * and write under a deadline. The sink is stopped by its PID with SIGTERM; it
 * also gets PR_SET_PDEATHSIG, so a test killed by its alarm leaves no sink
 * behind. Every test runs under alarm(60 s) (th_timeout_arm).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice_errors.h"

#define IO_TIMEOUT_MS 5000

typedef struct response {
    int status;
    char retry_after[32];  /* "" when absent */
    char allow[32];        /* "" when absent */
    char scope[32];        /* X-Limit-Scope; "" when absent */
    char key[64];          /* X-Limit-Key; "" when absent */
    char body[1024];
} response;

static int write_all(int fd, const char *buf, size_t len, uint64_t end_ms)
{
    size_t off = 0;
    for (int i = 0; i < 10000 && off < len && th_now_ms() < end_ms; i++) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, 100) != 1)
            continue;
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
        off += w > 0 ? (size_t)w : 0;
    }
    return off == len ? 0 : -1;
}

/* http_with sends one request with the extra header lines `headers` (each
 * ending in CRLF; "" for none) on a fresh connection and reads the whole
 * reply (the server closes the connection: we ask it to). */
static response http_with(uint16_t port, const char *method, const char *path, const char *headers,
                          const char *body, size_t body_len)
{
    response r = {.status = -1};
    static char buf[1 << 16];
    uint64_t end_ms = th_now_ms() + IO_TIMEOUT_MS;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    int head = snprintf(buf, sizeof buf,
                        "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%sContent-Length: %zu\r\n\r\n",
                        method, path, headers, body_len);
    assert_true(head > 0 && (size_t)head + body_len < sizeof buf);
    memcpy(buf + head, body, body_len);
    assert_int_equal(write_all(fd, buf, (size_t)head + body_len, end_ms), 0);
    size_t got = 0;
    for (int i = 0; i < 10000 && got < sizeof buf - 1 && th_now_ms() < end_ms; i++) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) != 1)
            continue;
        ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            break;
        got += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    buf[got] = '\0';
    if (sscanf(buf, "HTTP/1.%*d %d", &r.status) != 1)
        return r;
    char *end = strstr(buf, "\r\n\r\n");
    assert_non_null(end);
    *end = '\0';
    const char *ra = strcasestr(buf, "\r\nRetry-After: ");
    if (ra)
        sscanf(ra + strlen("\r\nRetry-After: "), "%31[0-9]", r.retry_after);
    const char *allow = strcasestr(buf, "\r\nAllow: ");
    if (allow)
        sscanf(allow + strlen("\r\nAllow: "), "%31[A-Z, ]", r.allow);
    const char *scope = strcasestr(buf, "\r\nX-Limit-Scope: ");
    if (scope)
        sscanf(scope + strlen("\r\nX-Limit-Scope: "), "%31[a-z]", r.scope);
    const char *key = strcasestr(buf, "\r\nX-Limit-Key: ");
    if (key)
        sscanf(key + strlen("\r\nX-Limit-Key: "), "%63[^\r]", r.key);
    snprintf(r.body, sizeof r.body, "%s", end + 4);
    return r;
}

static response http(uint16_t port, const char *method, const char *path, const char *body, size_t body_len)
{
    return http_with(port, method, path, "", body, body_len);
}

static response post(uint16_t port, const char *body, size_t body_len)
{
    return http(port, "POST", "/orders", body, body_len);
}

static char text[1 << 16];

/* PUT /_limit?inject=N answers the next N service requests 429 whatever
 * the limit, without taking its tokens; a bad N is refused. */
static void injected_429s_come_on_demand(void **state)
{
    (void)state;
    th_sink p;
    char dir[] = "/tmp/sluice-sink-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *extra[] = {"--rate", "1000", "--burst", "1", NULL};
    assert_int_equal(th_sink_start(&p, dir, extra), 0);
    assert_int_equal(http(p.port, "PUT", "/_limit?inject=0", "", 0).status, 400);
    assert_int_equal(http(p.port, "PUT", "/_limit?inject=x", "", 0).status, 400);
    response r = http(p.port, "PUT", "/_limit?inject=2", "", 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"rate\":1000,\"burst\":1,\"mode\":\"gcra\"}\n"); /* the limit unchanged */
    for (int i = 0; i < 2; i++) {
        r = post(p.port, "refused", 7);
        assert_int_equal(r.status, 429);
        assert_string_equal(r.retry_after, "1");
    }
    /* the injected ones took no token: the burst of 1 is still there */
    assert_int_equal(post(p.port, "admitted", 8).status, 200);
    r = http(p.port, "GET", "/_stats", "", 0);
    assert_string_equal(r.body, "{\"ok\":1,\"throttled\":2,\"total\":3}\n");
    assert_int_equal(th_sink_stop(&p), 0);
    th_rmrf(dir);
}

static void sink_throttles_logs_and_follows_limit_changes(void **state)
{
    (void)state;
    th_sink p;
    char dir[] = "/tmp/sluice-sink-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *extra[] = {"--rate", "1", "--burst", "3", NULL};
    assert_int_equal(th_sink_start(&p, dir, extra), 0);
    static const char first_body[] = "hello\nworld\x01\\";
    static char big_body[1000];
    memset(big_body, 'b', sizeof big_body);

    /* the burst of 3 passes back to back, the 4th waits for the next token */
    response r = post(p.port, first_body, sizeof first_body - 1);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.retry_after, "");
    assert_int_equal(post(p.port, big_body, sizeof big_body).status, 200);
    assert_int_equal(post(p.port, "", 0).status, 200);
    r = post(p.port, "four", 4);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.retry_after, "1"); /* under 1 s to the next token, rounded up */

    /* the log is flushed while running: the 4 lines appear within a second */
    int lines = 0;
    uint64_t end_ms = th_now_ms() + 1000;
    for (int i = 0; i < 200 && lines < 4 && th_now_ms() < end_ms; i++) {
        th_read_file(p.log, text, sizeof text);
        lines = 0;
        for (const char *c = text; *c; c++)
            lines += *c == '\n';
        if (lines < 4)
            usleep(10000);
    }
    assert_int_equal(lines, 4);

    r = http(p.port, "GET", "/_stats", "", 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"ok\":3,\"throttled\":1,\"total\":4}\n");
    r = http(p.port, "GET", "/_limit", "", 0);
    assert_string_equal(r.body, "{\"rate\":1,\"burst\":3,\"mode\":\"gcra\"}\n");

    /* a higher limit admits at once what the old one refused */
    r = http(p.port, "PUT", "/_limit?rate=1000&burst=100", "", 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"rate\":1000,\"burst\":100,\"mode\":\"gcra\"}\n");
    assert_int_equal(post(p.port, "five", 4).status, 200);

    /* a new mode starts afresh: fixed-window 1/s admits one, then refuses */
    r = http(p.port, "PUT", "/_limit?mode=fixed-window&rate=1", "", 0);
    assert_string_equal(r.body, "{\"rate\":1,\"burst\":100,\"mode\":\"fixed-window\"}\n");
    assert_int_equal(post(p.port, "six", 3).status, 200);
    r = post(p.port, "seven", 5);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.retry_after, "1");

    /* bad control requests and other methods are refused, not counted */
    assert_int_equal(http(p.port, "PUT", "/_limit?rate=0", "", 0).status, 400);
    assert_int_equal(http(p.port, "PUT", "/_limit?mode=leaky", "", 0).status, 400);
    assert_int_equal(http(p.port, "PUT", "/_limit", "", 0).status, 400);
    r = http(p.port, "GET", "/orders", "", 0);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.allow, "POST");
    assert_int_equal(http(p.port, "GET", "/_nothing", "", 0).status, 404);
    r = http(p.port, "GET", "/_stats", "", 0);
    assert_string_equal(r.body, "{\"ok\":5,\"throttled\":2,\"total\":7}\n");

    assert_int_equal(th_sink_stop(&p), 0);

    /* the log: one line per POST, in order, times non-decreasing */
    static const struct {
        int status;
        const char *body;
    } want[] = {{200, "hello\\nworld\\x01\\\\"}, {200, NULL}, {200, ""}, {429, "four"},
                {200, "five"},                   {200, "six"}, {429, "seven"}};
    th_read_file(p.log, text, sizeof text);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    uint64_t prev_ns = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++, line = strtok_r(NULL, "\n", &save)) {
        assert_non_null(line);
        char *rest;
        uint64_t t_ns = strtoull(line, &rest, 10);
        assert_true(t_ns >= prev_ns && *rest == ' ');
        prev_ns = t_ns;
        int status = (int)strtol(rest + 1, &rest, 10);
        assert_int_equal(status, want[i].status);
        assert_true(*rest == ' ');
        if (want[i].body) {
            assert_string_equal(rest + 1, want[i].body);
        } else { /* 1000 bytes of body, cut at 256 */
            assert_int_equal(strlen(rest + 1), 256);
            assert_int_equal(strspn(rest + 1, "b"), 256);
        }
    }
    assert_null(line);

    /* stdout: per-second lines that add up to every POST */
    th_read_file(p.out, text, sizeof text);
    unsigned long sum_ok = 0, sum_throttled = 0, sum_total = 0, seconds = 0;
    save = NULL;
    for (line = strtok_r(text, "\n", &save); line && seconds < 1000; line = strtok_r(NULL, "\n", &save)) {
        unsigned long t, ok, throttled, total;
        assert_int_equal(sscanf(line, "t=%lus ok=%lu throttled=%lu total=%lu", &t, &ok, &throttled, &total), 4);
        assert_int_equal(t, ++seconds);
        assert_int_equal(total, ok + throttled);
        sum_ok += ok, sum_throttled += throttled, sum_total += total;
    }
    assert_true(seconds >= 1);
    assert_int_equal(sum_ok, 5);
    assert_int_equal(sum_throttled, 2);
    assert_int_equal(sum_total, 7);
    th_rmrf(dir);
}

/* A sink keyed on X-Tenant: the tenant sending too fast gets 429s naming
 * the key scope and the key, the other none; the log records each key; a
 * global refusal says so; keys come from the path with --key-path. */
static void per_key_limits_refuse_only_the_busy_key(void **state)
{
    (void)state;
    th_sink p;
    char dir[] = "/tmp/sluice-sink-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *extra[] = {"--rate", "1000", "--burst", "1000", "--key-header", "X-Tenant", "--key-rate", "1",
                           "--key-burst", "3", NULL};
    assert_int_equal(th_sink_start(&p, dir, extra), 0);
    int a_refused = 0, b_refused = 0;
    for (int i = 0; i < 10; i++) {
        response r = http_with(p.port, "POST", "/orders", "X-Tenant: noisy\r\n", "a", 1);
        if (r.status == 429) {
            a_refused++;
            assert_string_equal(r.scope, "key");
            assert_string_equal(r.key, "noisy");
            assert_string_equal(r.retry_after, "1");
        } else {
            assert_int_equal(r.status, 200);
        }
        if (i % 4 == 0) /* quiet: 3 requests, within its burst of 3 */
            b_refused += http_with(p.port, "POST", "/orders", "X-Tenant: quiet\r\n", "b", 1).status != 200;
    }
    /* 10 at once against a burst of 3 at 1/s: 3 pass (4 or 5 on a machine
     * so loaded that the loop took over a second) */
    assert_true(a_refused >= 5 && a_refused <= 7);
    assert_int_equal(b_refused, 0);
    assert_int_equal(post(p.port, "none", 4).status, 200); /* no key: the global limit alone */
    response r = http(p.port, "GET", "/_limit", "", 0);
    assert_string_equal(r.body, "{\"rate\":1000,\"burst\":1000,\"mode\":\"gcra\",\"key_rate\":1,\"key_burst\":3,"
                                "\"key_from\":\"header\"}\n");
    r = http(p.port, "GET", "/_stats", "", 0);
    char want[160];
    snprintf(want, sizeof want, "{\"ok\":%d,\"throttled\":%d,\"total\":14,\"key_throttled\":%d,\"keys\":2,"
             "\"bad_keys\":0}\n", 14 - a_refused, a_refused, a_refused);
    assert_string_equal(r.body, want);
    /* the global limit refuses: scope global, and the key keeps its token */
    assert_int_equal(http(p.port, "PUT", "/_limit?rate=1&burst=1", "", 0).status, 200);
    post(p.port, "x", 1); /* takes the one global token, if the old debt left it */
    assert_int_equal(http(p.port, "PUT", "/_limit?key_rate=1&key_burst=1", "", 0).status, 200);
    r = http_with(p.port, "POST", "/orders", "X-Tenant: fresh\r\n", "c", 1);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.scope, "global");
    assert_string_equal(r.key, "");
    assert_int_equal(http(p.port, "PUT", "/_limit?rate=1000&burst=1000", "", 0).status, 200);
    assert_int_equal(http_with(p.port, "POST", "/orders", "X-Tenant: fresh\r\n", "d", 1).status, 200);
    r = http_with(p.port, "POST", "/orders", "X-Tenant: fresh\r\n", "e", 1);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.scope, "key");
    assert_string_equal(r.key, "fresh");
    assert_int_equal(th_sink_stop(&p), 0);

    /* the log names each request's key, "-" for none */
    th_read_file(p.log, text, sizeof text);
    unsigned noisy = 0, quiet = 0, none = 0, lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && lines < 100; line = strtok_r(NULL, "\n", &save)) {
        char key[32], body[32];
        unsigned status;
        lines++;
        assert_int_equal(sscanf(line, "%*u %u %31s %31s", &status, key, body), 3);
        noisy += strcmp(key, "noisy") == 0 && strcmp(body, "a") == 0;
        quiet += strcmp(key, "quiet") == 0 && status == 200;
        none += strcmp(key, "-") == 0 && strcmp(body, "none") == 0;
    }
    assert_int_equal(lines, 18);
    assert_int_equal(noisy, 10);
    assert_int_equal(quiet, 3);
    assert_int_equal(none, 1);

    /* --key-path: the last path segment is the key; a key too long is a 400 */
    const char *by_path[] = {"--rate", "1000", "--burst", "1000", "--key-path", "--key-rate", "1", NULL};
    assert_int_equal(th_sink_start(&p, dir, by_path), 0);
    assert_int_equal(http(p.port, "POST", "/orders/acme", "x", 1).status, 200);
    r = http(p.port, "POST", "/orders/acme/", "x", 1);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.key, "acme");
    assert_int_equal(http(p.port, "POST", "/orders/globex", "x", 1).status, 200);
    static char long_path[300];
    snprintf(long_path, sizeof long_path, "/orders/%0200d", 7);
    assert_int_equal(http(p.port, "POST", long_path, "x", 1).status, 400);
    assert_int_equal(th_sink_stop(&p), 0);
    th_rmrf(dir);
}

/* `sluice consume --post` sends each message's tag as X-Sluice-Tag (a space
 * percent-encoded), so a sink keyed on that header sees the tenants. */
static void consume_post_sends_the_tag_the_sink_keys_on(void **state)
{
    (void)state;
    th_broker b;
    th_sink p;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    assert_int_equal(th_broker_start(&b), 0);
    const char *extra[] = {"--rate", "1000", "--burst", "100", "--key-header", "X-Sluice-Tag", "--key-rate",
                           "1000", "--key-burst", "100", NULL};
    assert_int_equal(th_sink_start(&p, b.dir, extra), 0);
    static const struct {
        const char *body, *tag, *key;
    } msgs[] = {{"acme-1", "acme", "acme"}, {"acme-2", "acme", "acme"}, {"tenant-1", "ten ant", "ten%20ant"},
                {"none-1", NULL, "-"}};
    enum { N = sizeof msgs / sizeof msgs[0] };
    sl_client *c = NULL;
    assert_int_equal(sl_connect(b.endpoint, NULL, &c), SL_OK);
    for (int i = 0; i < N; i++) {
        const sl_put put = {.body = msgs[i].body, .body_len = strlen(msgs[i].body), .level = SL_LEVEL_DEFAULT,
                            .tag = msgs[i].tag};
        assert_int_equal(sl_send(c, &put, NULL), SL_OK);
    }
    sl_close(&c);
    char n[8];
    snprintf(n, sizeof n, "%d", (int)N);
    const char *argv[] = {th_bin("sluice"), "-b", b.endpoint, "consume", "--post", p.url, "-n", n, NULL};
    static char out[1 << 14];
    assert_int_equal(th_run(argv, NULL, out, sizeof out), 0);
    assert_int_equal(th_sink_stop(&p), 0);

    th_read_file(p.log, text, sizeof text);
    int matched = 0, lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && lines < 100; line = strtok_r(NULL, "\n", &save)) {
        char key[32], body[32];
        unsigned status;
        lines++;
        assert_int_equal(sscanf(line, "%*u %u %31s %31s", &status, key, body), 3);
        assert_int_equal(status, 200);
        for (int i = 0; i < N; i++)
            if (strcmp(body, msgs[i].body) == 0) {
                assert_string_equal(key, msgs[i].key);
                matched++;
            }
    }
    assert_int_equal(lines, N);
    assert_int_equal(matched, N);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void control_port_and_fixed_retry_after(void **state)
{
    (void)state;
    th_sink p;
    char dir[] = "/tmp/sluice-sink-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    /* a control port the kernel hands out: bind 0, read it, release it */
    uint16_t control_port = 0;
    int fd = th_loopback_socket(false, &control_port);
    assert_true(fd >= 0);
    close(fd);
    char control[16];
    snprintf(control, sizeof control, "%u", (unsigned)control_port);
    const char *extra[] = {"--rate", "2", "--mode", "sliding-window", "--retry-after", "7",
                           "--control-port", control, NULL};
    assert_int_equal(th_sink_start(&p, dir, extra), 0);

    assert_int_equal(post(p.port, "a", 1).status, 200);
    assert_int_equal(post(p.port, "b", 1).status, 200);
    response r = post(p.port, "c", 1);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.retry_after, "7");
    /* the control paths live only on the control port */
    assert_int_equal(http(p.port, "GET", "/_stats", "", 0).status, 404);
    assert_int_equal(http(control_port, "POST", "/orders", "x", 1).status, 404);
    r = http(control_port, "GET", "/_stats", "", 0);
    assert_string_equal(r.body, "{\"ok\":2,\"throttled\":1,\"total\":3}\n");
    r = http(control_port, "GET", "/_limit", "", 0);
    assert_string_equal(r.body, "{\"rate\":2,\"burst\":1,\"mode\":\"sliding-window\"}\n");
    /* raising the sliding limit keeps the two held and admits one more */
    r = http(control_port, "PUT", "/_limit?rate=3", "", 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(post(p.port, "d", 1).status, 200);
    assert_int_equal(post(p.port, "e", 1).status, 429);
    assert_int_equal(th_sink_stop(&p), 0);
    th_rmrf(dir);
}

static void bad_options_exit_2_and_help_teaches_every_option(void **state)
{
    (void)state;
    static char out[1 << 16];
    const char *help[] = {th_bin("sluice-sink"), "--help", NULL};
    assert_int_equal(th_run(help, NULL, out, sizeof out), 0);
    static const char *const opts[] = {"--listen", "--rate", "--burst", "--mode", "--log", "--retry-after",
                                       "--control-port", "--ready-fd", "--key-header", "--key-path",
                                       "--key-rate", "--key-burst", "X-Limit-Scope", "gcra", "fixed-window",
                                       "sliding-window", "/_limit", "/_stats", "SIGTERM", "SIGHUP"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        assert_non_null(strstr(out, opts[i]));
    const char *no_rate[] = {th_bin("sluice-sink"), "--listen", "127.0.0.1:0", NULL};
    assert_int_equal(th_run(no_rate, NULL, out, sizeof out), 2);
    const char *remote[] = {th_bin("sluice-sink"), "--listen", "10.1.2.3:0", "--rate", "1", NULL};
    assert_int_equal(th_run(remote, NULL, out, sizeof out), 2);
    const char *bad_mode[] = {th_bin("sluice-sink"), "-l", "127.0.0.1:0", "-r", "1", "-m", "leaky", NULL};
    assert_int_equal(th_run(bad_mode, NULL, out, sizeof out), 2);
    const char *key_no_rate[] = {th_bin("sluice-sink"), "-l", "127.0.0.1:0", "-r", "1", "--key-path", NULL};
    assert_int_equal(th_run(key_no_rate, NULL, out, sizeof out), 2);
    const char *rate_no_key[] = {th_bin("sluice-sink"), "-l", "127.0.0.1:0", "-r", "1", "--key-rate", "5", NULL};
    assert_int_equal(th_run(rate_no_key, NULL, out, sizeof out), 2);
    const char *bad_header[] = {th_bin("sluice-sink"), "-l", "127.0.0.1:0", "-r", "1", "--key-header", "X:Y",
                                "--key-rate", "5", NULL};
    assert_int_equal(th_run(bad_header, NULL, out, sizeof out), 2);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sink_throttles_logs_and_follows_limit_changes, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(control_port_and_fixed_retry_after, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(per_key_limits_refuse_only_the_busy_key, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(consume_post_sends_the_tag_the_sink_keys_on, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(injected_429s_come_on_demand, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(bad_options_exit_2_and_help_teaches_every_option, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("sink", tests, NULL, NULL);
}
