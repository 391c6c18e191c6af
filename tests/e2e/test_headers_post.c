/*
 * test_headers_post.c - headers from `sluice send` to the service, through
 * the real sluiced and the real `sluice consume`:
 *
 *   - every --post carries Idempotency-Key (the message's key, else
 *     sluice-ID), X-Sluice-Id, X-Sluice-Attempt, X-Sluice-Level,
 *     X-Sluice-Wait-Ms, X-Sluice-Tag and the message's own headers byte for
 *     byte, as an HTTP server of the test (libmicrohttpd) records them; a
 *     header the operator gave consume --header wins over the message's, a
 *     message's Content-Type replaces the default; bad -H and --traceparent
 *     are refused before anything is sent;
 *   - traceparent end to end: sluice send --traceparent, the broker, consume
 *     --post, a real sluice-sink keyed by that header (its log shows it),
 *     and --exec, which sees SLUICE_HEADER_TRACEPARENT;
 *   - the crash scenario: `sluice consume --post` killed with kill -9 while
 *     it holds deliveries, 20 times, then drained: at a sluice-sink with
 *     --dedup-header Idempotency-Key every message is applied exactly once,
 *     and the repeats the crashes caused are counted and absorbed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"

#define TP "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define TP2 "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int run(const th_broker *b, char *out, size_t out_len, const char *const *args)
{
    const char *argv[32] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return th_run(argv, NULL, out, out_len);
}

/* ---- an HTTP server that records every POST's headers ---- */

typedef struct capture {
    struct MHD_Daemon *d;
    uint16_t port;
    char url[64];
    pthread_mutex_t lock;
    char text[1 << 16]; /* per POST: "POST\n", a "name: value\n" line per header (name lower case), "\n" */
    size_t len;
    int posts;
} capture;

static enum MHD_Result cap_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    capture *c = cls;
    size_t room = sizeof c->text - c->len;
    int n = snprintf(c->text + c->len, room, "%s: %s\n", key, value ? value : "");
    for (int i = 0; i < n && (size_t)i < room && c->text[c->len + (size_t)i] != ':'; i++)
        c->text[c->len + (size_t)i] = (char)tolower((unsigned char)c->text[c->len + (size_t)i]);
    if (n > 0 && (size_t)n < room)
        c->len += (size_t)n;
    return MHD_YES;
}

static enum MHD_Result cap_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                   const char *version, const char *upload, size_t *upload_len, void **req)
{
    (void)url, (void)version, (void)upload;
    capture *c = cls;
    static int marker;
    if (!*req) {
        *req = &marker;
        return MHD_YES;
    }
    if (*upload_len) {
        *upload_len = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") == 0) {
        pthread_mutex_lock(&c->lock);
        c->len += (size_t)snprintf(c->text + c->len, sizeof c->text - c->len, "POST\n");
        MHD_get_connection_values(conn, MHD_HEADER_KIND, cap_header, c);
        c->len += (size_t)snprintf(c->text + c->len, sizeof c->text - c->len, "\n");
        c->posts++;
        pthread_mutex_unlock(&c->lock);
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(3, (void *)"ok\n", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result res = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return res;
}

static capture *capture_start(void)
{
    capture *c = calloc(1, sizeof *c);
    assert_non_null(c);
    pthread_mutex_init(&c->lock, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, cap_request, c, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&a, MHD_OPTION_END);
    assert_non_null(c->d);
    c->port = MHD_get_daemon_info(c->d, MHD_DAEMON_INFO_BIND_PORT)->port;
    snprintf(c->url, sizeof c->url, "http://127.0.0.1:%u/hook", (unsigned)c->port);
    return c;
}

static void capture_stop(capture **c)
{
    MHD_stop_daemon((*c)->d);
    pthread_mutex_destroy(&(*c)->lock);
    free(*c);
    *c = NULL;
}

/* post_text copies the header lines of POST number i (from 0) into out. */
static void post_text(capture *c, int i, char *out, size_t cap)
{
    pthread_mutex_lock(&c->lock);
    const char *p = c->text;
    for (int k = 0; p && k <= i; k++) {
        p = strstr(p, "POST\n");
        if (p && k < i)
            p += 5;
    }
    assert_non_null(p);
    const char *end = strstr(p, "\n\n");
    size_t n = end ? (size_t)(end - p) + 1 : strlen(p);
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    pthread_mutex_unlock(&c->lock);
}

/* count_lines says how many lines of text start with prefix. */
static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, len) == 0;
    return n;
}

static void has_line(const char *text, const char *line)
{
    char want[2048];
    snprintf(want, sizeof want, "%s\n", line);
    if (!strstr(text, want))
        fail_msg("no line '%s' in:\n%s", line, text);
}

static void post_carries_identity_and_headers(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    capture *cap = capture_start();
    char out[8192], want[256];
    const char *send1[] = {"send", "-p", "normal", "-k", "order-7", "-t", "acme", "-H", "X-Custom: producer",
                           "-H", "Content-Type:application/json", "--traceparent", TP, "-H",
                           "X-Text:   na\xc3\xafve caf\xc3\xa9  ", "one", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, send1), 0);
    uint64_t id1 = strtoull(out, NULL, 10);
    const char *send2[] = {"send", "-p", "low", "--header", "X-B: 2", "two", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, send2), 0);
    uint64_t id2 = strtoull(out, NULL, 10);
    assert_true(id1 > 0 && id2 > id1);
    /* refused before anything is sent */
    const char *bad1[] = {"send", "-H", "Connection: close", "x", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, bad1), 1);
    const char *bad2[] = {"send", "-H", "no colon", "x", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, bad2), 2);
    const char *bad3[] = {"send", "--traceparent", "00-0000", "x", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, bad3), 2);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth + st.level[1].depth + st.level[2].depth, 2);

    /* explain and dead peek show them too */
    snprintf(want, sizeof want, "%" PRIu64, id1);
    const char *explain[] = {"explain", want, NULL};
    assert_int_equal(run(&f->b, out, sizeof out, explain), 0);
    assert_non_null(strstr(out, "  header traceparent: " TP "\n"));
    assert_non_null(strstr(out, "  header X-Text: na\xc3\xafve caf\xc3\xa9\n"));
    assert_non_null(strstr(out, "since its publish"));

    const char *consume[] = {"consume", "--post", cap->url, "-n", "2", "--workers", "1", "--header",
                             "X-Custom: operator", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, consume), 0);
    assert_int_equal(cap->posts, 2);
    char text[8192];
    post_text(cap, 0, text, sizeof text);
    print_message("%s", text);
    has_line(text, "idempotency-key: order-7");
    snprintf(want, sizeof want, "x-sluice-id: %" PRIu64, id1);
    has_line(text, want);
    has_line(text, "x-sluice-attempt: 1");
    has_line(text, "x-sluice-level: 1");
    has_line(text, "x-sluice-tag: acme");
    has_line(text, "traceparent: " TP);
    has_line(text, "x-text: na\xc3\xafve caf\xc3\xa9");
    has_line(text, "x-custom: operator"); /* the operator's header wins */
    assert_int_equal(count_lines(text, "x-custom:"), 1);
    has_line(text, "content-type: application/json"); /* the message's replaces the default */
    assert_int_equal(count_lines(text, "content-type:"), 1);
    assert_int_equal(count_lines(text, "x-sluice-wait-ms: "), 1);
    post_text(cap, 1, text, sizeof text);
    snprintf(want, sizeof want, "idempotency-key: sluice-%" PRIu64, id2);
    has_line(text, want);
    has_line(text, "x-sluice-level: 2");
    has_line(text, "x-b: 2");
    has_line(text, "content-type: application/octet-stream");
    assert_int_equal(count_lines(text, "x-sluice-tag:"), 0);
    capture_stop(&cap);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* ---- the sink's side ---- */

/* sink_stats reads GET /_stats of the sink on port into out. */
static void sink_stats(uint16_t port, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char req[] = "GET /_stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
    size_t n = 0;
    uint64_t end = th_now_ms() + 5000;
    while (n + 1 < cap && th_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) != 1)
            continue;
        ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    out[n] = '\0';
    close(fd);
    char *body = strstr(out, "\r\n\r\n");
    if (body)
        memmove(out, body + 4, strlen(body + 4) + 1);
}

/* stat_of reads "name":N from a /_stats body; -1 when absent. */
static long long stat_of(const char *json, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(json, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void traceparent_end_to_end(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    th_sink s;
    const char *extra[] = {"--rate", "1000", "--burst", "100", "--key-header", "traceparent", "--key-rate", "100000",
                           "--key-burst", "100",
                           "--dedup-header", "Idempotency-Key", NULL};
    assert_int_equal(th_sink_start(&s, f->b.dir, extra), 0);
    char out[8192], log[8192], stats[1024];
    const char *send1[] = {"send", "-k", "K", "--traceparent", TP, "a1", "a2", "a3", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, send1), 0);
    const char *consume[] = {"consume", "--post", s.url, "-n", "3", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, consume), 0);
    sink_stats(s.port, stats, sizeof stats);
    print_message("sink: %s", stats);
    assert_int_equal(stat_of(stats, "applied"), 3);
    assert_int_equal(stat_of(stats, "repeats"), 0);
    assert_int_equal(stat_of(stats, "unkeyed"), 0);
    /* the same key again is a repeat: answered 200, not applied */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(s.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char req[] = "POST /orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: K:2\r\n"
                       "Content-Length: 2\r\n\r\na2";
    assert_int_equal(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
    char reply[512];
    ssize_t got = 0;
    for (int i = 0; i < 50 && got <= 0; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) == 1)
            got = recv(fd, reply, sizeof reply - 1, 0);
    }
    close(fd);
    assert_true(got > 12);
    assert_memory_equal(reply, "HTTP/1.1 200", 12);
    sink_stats(s.port, stats, sizeof stats);
    assert_int_equal(stat_of(stats, "applied"), 3);
    assert_int_equal(stat_of(stats, "repeats"), 1);
    assert_int_equal(th_sink_stop(&s), 0);
    th_read_file(s.log, log, sizeof log);
    print_message("%s", log);
    for (int i = 1; i <= 3; i++) { /* "<ns> 200 <key> <body>": the key is the traceparent */
        char line[200];
        snprintf(line, sizeof line, " 200 %s a%d\n", TP, i);
        assert_non_null(strstr(log, line));
    }

    /* --exec sees it as SLUICE_HEADER_TRACEPARENT, with the message's identity */
    const char *send2[] = {"send", "--traceparent", TP2, "-H", "x-foo.bar: baz", "e1", NULL};
    assert_int_equal(run(&f->b, out, sizeof out, send2), 0);
    uint64_t id = strtoull(out, NULL, 10);
    char file[400], cmd[800], seen[400], want[400];
    snprintf(file, sizeof file, "%s/env", f->b.dir);
    snprintf(cmd, sizeof cmd, "cat > /dev/null; printf '%%s|%%s|%%s|%%s' \"$SLUICE_HEADER_TRACEPARENT\" "
             "\"$SLUICE_HEADER_X_FOO_BAR\" \"$SLUICE_IDEMPOTENCY_KEY\" \"$SLUICE_ATTEMPT\" > %s", file);
    const char *consume2[] = {"consume", "-n", "1", "--exec", cmd, NULL};
    assert_int_equal(run(&f->b, out, sizeof out, consume2), 0);
    th_read_file(file, seen, sizeof seen);
    snprintf(want, sizeof want, "%s|baz|sluice-%" PRIu64 "|1", TP2, id);
    assert_string_equal(seen, want);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* ---- the crash scenario ---- */

/* spawn starts argv with its output to dir/consume.out, dying with us. */
static pid_t spawn(const char *const *argv, const char *dir)
{
    char path[400];
    snprintf(path, sizeof path, "%s/consume.out", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0640);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

#define CRASH_MESSAGES 300
#define CRASH_KILLS 20

static void crashes_apply_each_message_once(void **state)
{
    (void)state;
    static const char *const broker_extra[] = {"--max-attempts", "1000", "--lease-ms", "2000", NULL};
    th_fixture *f;
    assert_int_equal(th_fixture_start(broker_extra, &f), 0);
    th_sink s;
    const char *extra[] = {"--rate", "400", "--burst", "4", "--dedup-header", "Idempotency-Key", NULL};
    assert_int_equal(th_sink_start(&s, f->b.dir, extra), 0);
    unsigned seed = th_seed();
    char stats[1024], body[32], key[32];
    for (int i = 0; i < CRASH_MESSAGES; i++) { /* half with a key of their own, half without */
        snprintf(body, sizeof body, "m-%d", i);
        snprintf(key, sizeof key, "k-%d", i);
        sl_put p = {.body = body, .body_len = strlen(body), .level = 1, .key = i % 2 ? NULL : key};
        sl_header h = {"traceparent", TP};
        assert_int_equal(sl_send_async_ex(f->c, &p, &h, 1, NULL), SL_OK);
        while (sl_send_pending(f->c) > (i + 1 == CRASH_MESSAGES ? 0u : 200u)) {
            sl_confirm cf;
            assert_int_equal(sl_send_wait(f->c, 10000, &cf), SL_OK);
            assert_int_equal(cf.err, SL_OK);
        }
    }
    const char *argv[] = {th_bin("sluice"), "-b", f->b.endpoint, "consume", "--post", s.url, "--workers", "4",
                          "--credit", "8", NULL};
    int with_work = 0;
    sl_stats st;
    for (int k = 0; k < CRASH_KILLS; k++) {
        sink_stats(s.port, stats, sizeof stats);
        long long before = stat_of(stats, "total"), want = 2 + (long long)(rand_r(&seed) % 12);
        pid_t pid = spawn(argv, f->b.dir);
        uint64_t end = th_now_ms() + 15000;
        long long now = before;
        int inflight = 0;
        while (th_now_ms() < end) { /* until it has posted some and holds deliveries */
            sink_stats(s.port, stats, sizeof stats);
            now = stat_of(stats, "total");
            assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
            inflight = st.level[1].inflight > 0;
            if ((now - before >= want && inflight) || (st.level[1].depth == 0 && now - before >= 1))
                break;
            usleep(5 * 1000);
        }
        kill(pid, SIGKILL);
        uint64_t killed = th_now_ms();
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        with_work += inflight;
        /* the broker takes back what the dead consumer held */
        for (int i = 0; i < 300; i++) {
            assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
            if (st.level[1].inflight == 0)
                break;
            usleep(50 * 1000);
        }
        assert_int_equal(st.level[1].inflight, 0);
        print_message("kill %d: %lld posted, %s, %" PRIu64 " left; its leases back in %" PRIu64 " ms\n", k + 1,
                      now - before, inflight ? "with work in hand" : "idle", st.level[1].depth, th_now_ms() - killed);
    }
    const char *drain[] = {"consume", "--post", s.url, "--workers", "4", "--idle-exit", "2s", NULL};
    char out[1 << 14];
    assert_int_equal(run(&f->b, out, sizeof out, drain), 0);
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, 0);
    assert_int_equal(st.level[1].inflight, 0);
    assert_int_equal(st.level[1].dead, 0);
    sink_stats(s.port, stats, sizeof stats);
    print_message("sink: %s", stats);
    print_message("%d of %d kills with deliveries in hand; %lld repeats absorbed\n", with_work, CRASH_KILLS,
                  stat_of(stats, "repeats"));
    assert_int_equal(stat_of(stats, "applied"), CRASH_MESSAGES); /* each once: a new key per message */
    assert_int_equal(stat_of(stats, "unkeyed"), 0);
    assert_int_equal(stat_of(stats, "ok"), stat_of(stats, "applied") + stat_of(stats, "repeats"));
    assert_true(with_work >= CRASH_KILLS / 2);
    assert_int_equal(th_sink_stop(&s), 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    th_timeout_s = 240;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(post_carries_identity_and_headers, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(traceparent_end_to_end, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(crashes_apply_each_message_once, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("headers_post", tests, NULL, NULL);
}
