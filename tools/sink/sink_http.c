/*
 * sink_http.c - serve the simulated downstream service over HTTP.
 *
 * This module owns the libmicrohttpd daemons, the limiter, the counters and
 * the request log of one sluice-sink. It routes each request; the decision
 * itself is sink_limit_take's.
 *
 * Routes. A request whose path starts with "/_" is a control request:
 * GET /_limit, PUT /_limit?rate=R&burst=B&mode=M&inject=N (each argument
 * optional, at least one given; inject=N answers the next N service
 * requests 429 whatever the limiter says, without taking its tokens: one
 * push-back on demand, for the bench) and GET /_stats; other "/_" paths are 404, other
 * methods on them 405. Every other path is the service: a POST is one
 * limited request, answered 200 when admitted and 429 with Retry-After when
 * not; any other method is 405. With a control port the service daemon
 * answers 404 to control paths and the control daemon 404 to the rest, so a
 * client under test cannot change its own limit.
 *
 * A request is decided once its body has arrived (libmicrohttpd calls the
 * handler at the headers, once per body chunk, then once more with no
 * data). The first SINK_HTTP_LOG_BODY_BYTES of the body are kept in the
 * per-request state for the log; the rest is read and dropped, so memory
 * per request is fixed whatever the client sends. The state is freed by the
 * completion callback, which also runs for requests the client abandons.
 *
 * Locking. The daemons' threads and the main loop share one mutex; it
 * covers the limiter, the counters, the per-second ring and the log FILE.
 * The clock is read under the lock, so the times the limiter sees never go
 * backwards between threads. Work under the lock is one limiter step and
 * one buffered log line (at most ~1.1 KB), plus the flush in tick.
 *
 * Counting. Each limited request is counted in the slot of the second (since
 * open) it was decided in; the ring keeps SECONDS_KEPT seconds and the main
 * loop prints finished ones at every tick (every SINK_HTTP_FLUSH_NS), so a
 * second is lost only if the main loop stalls for longer than the ring.
 * The line for second N (counting from 1) is "t=Ns ok=.. throttled=..
 * total=..", covering (N-1 s, N s] after open.
 *
 * Log format, one line per limited request: "<CLOCK_MONOTONIC ns> <status>
 * <body>", the body cut at SINK_HTTP_LOG_BODY_BYTES bytes, with "\n" for a
 * newline, "\\" for a backslash and "\xNN" (lower-case hex) for any other
 * byte outside 0x20..0x7e. Change this format, update test_sink.c and the
 * --help text. Writes are buffered and flushed at every tick and at close;
 * a failed write is reported once and the sink keeps serving.
 */
#include "sink_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice_errors.h"

#define SECONDS_KEPT 8
#define LOG_BUFFER_BYTES (1 << 16)
#define CONNECTION_LIMIT 1000
#define CONNECTION_TIMEOUT_S 60
#define LINE_BYTES (32 + 4 * SINK_HTTP_LOG_BODY_BYTES)

typedef struct second {
    uint64_t index;     /* which second since open this slot holds */
    uint64_t ok, throttled;
} second;

typedef struct endpoint {
    sink_http *s;
    struct MHD_Daemon *d;
    int serves_limited, serves_control;
    uint16_t port;
} endpoint;

enum req_kind { REQ_LIMITED, REQ_LIMIT_GET, REQ_LIMIT_PUT, REQ_STATS, REQ_NOT_FOUND, REQ_BAD_METHOD };

typedef struct req {
    enum req_kind kind;
    const char *allow;   /* the methods the path takes, for a 405 */
    size_t kept_bytes;
    unsigned char body[SINK_HTTP_LOG_BODY_BYTES];
} req;

struct sink_http {
    pthread_mutex_t lock;
    sink_limit limit;
    int retry_after_s;
    uint32_t inject;                /* service requests still to answer 429 on demand */
    uint64_t start_ns;
    uint64_t ok, throttled;         /* since open */
    second seconds[SECONDS_KEPT];
    uint64_t next_print;            /* first second not printed yet; main loop only */
    FILE *log;
    char *log_buf;
    int log_failed;
    FILE *counts;
    endpoint ends[2];               /* [1] used only with a control port */
};

static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- replies ---- */

/* reply queues a response; `extra` is the value of Retry-After (for a 429)
 * or of Allow (for a 405), else NULL. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                             const char *extra)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (ok == MHD_YES && extra && status == MHD_HTTP_TOO_MANY_REQUESTS)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, extra);
    if (ok == MHD_YES && extra && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, extra);
    if (ok == MHD_YES)
        ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, const char *json)
{
    return reply(c, status, "application/json", json, NULL);
}

/* limit_json writes the current limit; call under the lock. */
static void limit_json(const sink_http *s, char *out, size_t out_len)
{
    snprintf(out, out_len, "{\"rate\":%" PRIu32 ",\"burst\":%" PRIu32 ",\"mode\":\"%s\"}\n",
             s->limit.rate_per_s, s->limit.burst, sink_limit_mode_name(s->limit.mode));
}

/* ---- the request log ---- */

static size_t escape(const unsigned char *in, size_t in_len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (size_t i = 0; i < in_len; i++) {
        unsigned char ch = in[i];
        if (ch == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else if (ch == '\\') {
            out[n++] = '\\';
            out[n++] = '\\';
        } else if (ch >= 0x20 && ch <= 0x7e) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    return n;
}

/* log_request writes one line; call under the lock. */
static void log_request(sink_http *s, uint64_t now_ns, unsigned status, const req *q)
{
    char line[LINE_BYTES];
    if (!s->log || s->log_failed)
        return;
    int head = snprintf(line, sizeof line, "%" PRIu64 " %u ", now_ns, status);
    size_t n = (size_t)head + escape(q->body, q->kept_bytes, line + head);
    line[n++] = '\n';
    if (fwrite(line, 1, n, s->log) != n) {
        fprintf(stderr, "sluice-sink: cannot write the log: %s; logging stops\n", strerror(errno));
        s->log_failed = 1;
    }
}

/* ---- routes ---- */

static enum MHD_Result serve_limited(sink_http *s, struct MHD_Connection *c, const req *q)
{
    uint64_t wait_ns = 0;
    pthread_mutex_lock(&s->lock);
    uint64_t now_ns = clock_ns();
    int admitted;
    if (s->inject) { /* an injected 429: the limiter is not asked */
        s->inject--;
        admitted = 0;
        wait_ns = 1;
    } else {
        admitted = sink_limit_take(&s->limit, now_ns, &wait_ns);
    }
    uint64_t index = (now_ns - s->start_ns) / SINK_LIMIT_WINDOW_NS;
    second *sec = &s->seconds[index % SECONDS_KEPT];
    if (sec->index != index)
        *sec = (second){.index = index};
    if (admitted) {
        s->ok++;
        sec->ok++;
    } else {
        s->throttled++;
        sec->throttled++;
    }
    log_request(s, now_ns, admitted ? MHD_HTTP_OK : MHD_HTTP_TOO_MANY_REQUESTS, q);
    pthread_mutex_unlock(&s->lock);
    if (admitted)
        return reply(c, MHD_HTTP_OK, "text/plain", "ok\n", NULL);
    char retry[24];
    uint64_t retry_s = s->retry_after_s >= 0 ? (uint64_t)s->retry_after_s : sink_limit_retry_after_s(wait_ns);
    snprintf(retry, sizeof retry, "%" PRIu64, retry_s);
    return reply(c, MHD_HTTP_TOO_MANY_REQUESTS, "text/plain", "throttled\n", retry);
}

/* arg_u32 reads query argument name into *out when present. Returns 1 when
 * present and valid, 0 when absent, -1 when malformed or out of lo..hi. */
static int arg_u32(struct MHD_Connection *c, const char *name, uint32_t lo, uint32_t hi, uint32_t *out)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    if (!v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || n < lo || n > hi)
        return -1;
    *out = (uint32_t)n;
    return 1;
}

static enum MHD_Result serve_limit_put(sink_http *s, struct MHD_Connection *c)
{
    char json[160];
    uint32_t rate_per_s = 0, burst = 0;
    sink_limit_mode mode = SINK_LIMIT_GCRA;
    int has_rate = arg_u32(c, "rate", 1, SINK_LIMIT_MAX_RATE_PER_S, &rate_per_s);
    int has_burst = arg_u32(c, "burst", 1, SINK_LIMIT_MAX_BURST, &burst);
    uint32_t inject = 0;
    int has_inject = arg_u32(c, "inject", 1, 1000000, &inject);
    const char *mode_arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode");
    if (has_rate < 0 || has_burst < 0 || has_inject < 0)
        return reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"rate, burst and inject must be whole numbers from 1 to 1000000\"}\n");
    if (mode_arg && sink_limit_mode_parse(mode_arg, &mode) != SL_OK)
        return reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"mode must be gcra, fixed-window or sliding-window\"}\n");
    if (!has_rate && !has_burst && !mode_arg && !has_inject)
        return reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"give rate, burst, mode or inject, e.g. PUT /_limit?rate=100&burst=10\"}\n");

    pthread_mutex_lock(&s->lock);
    uint64_t now_ns = clock_ns();
    if (has_inject)
        s->inject += inject;
    rate_per_s = has_rate ? rate_per_s : s->limit.rate_per_s; /* what is not given stays */
    burst = has_burst ? burst : s->limit.burst;
    mode = mode_arg ? mode : s->limit.mode;
    int rc;
    if (mode != s->limit.mode) { /* a new mode starts afresh */
        sink_limit fresh;
        rc = sink_limit_init(&fresh, mode, rate_per_s, burst, now_ns);
        if (rc == SL_OK) {
            sink_limit_fini(&s->limit);
            s->limit = fresh;
        }
    } else {
        rc = sink_limit_set(&s->limit, rate_per_s, burst, now_ns);
    }
    limit_json(s, json, sizeof json);
    pthread_mutex_unlock(&s->lock);
    if (rc != SL_OK)
        return reply_json(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "{\"error\":\"out of memory\"}\n");
    fprintf(stderr, "sluice-sink: limit is now %s", json);
    return reply_json(c, MHD_HTTP_OK, json);
}

static enum MHD_Result serve(endpoint *e, struct MHD_Connection *c, const req *q)
{
    sink_http *s = e->s;
    char json[160];
    switch (q->kind) {
    case REQ_LIMITED:
        return serve_limited(s, c, q);
    case REQ_LIMIT_GET:
        pthread_mutex_lock(&s->lock);
        limit_json(s, json, sizeof json);
        pthread_mutex_unlock(&s->lock);
        return reply_json(c, MHD_HTTP_OK, json);
    case REQ_LIMIT_PUT:
        return serve_limit_put(s, c);
    case REQ_STATS:
        pthread_mutex_lock(&s->lock);
        snprintf(json, sizeof json, "{\"ok\":%" PRIu64 ",\"throttled\":%" PRIu64 ",\"total\":%" PRIu64 "}\n",
                 s->ok, s->throttled, s->ok + s->throttled);
        pthread_mutex_unlock(&s->lock);
        return reply_json(c, MHD_HTTP_OK, json);
    case REQ_NOT_FOUND:
        return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", NULL);
    case REQ_BAD_METHOD:
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "method not allowed\n", q->allow);
    }
    return MHD_NO;
}

/* route sets q->kind (and q->allow) from the path and the method. */
static void route(const endpoint *e, const char *url, const char *method, req *q)
{
    int is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0, is_put = strcmp(method, MHD_HTTP_METHOD_PUT) == 0;
    q->allow = NULL;
    if (strncmp(url, "/_", 2) != 0 ? !e->serves_limited : !e->serves_control) {
        q->kind = REQ_NOT_FOUND;
    } else if (strncmp(url, "/_", 2) != 0) {
        q->kind = strcmp(method, MHD_HTTP_METHOD_POST) == 0 ? REQ_LIMITED : REQ_BAD_METHOD;
        q->allow = "POST";
    } else if (strcmp(url, "/_limit") == 0) {
        q->kind = is_get ? REQ_LIMIT_GET : is_put ? REQ_LIMIT_PUT : REQ_BAD_METHOD;
        q->allow = "GET, PUT";
    } else if (strcmp(url, "/_stats") == 0) {
        q->kind = is_get ? REQ_STATS : REQ_BAD_METHOD;
        q->allow = "GET";
    } else {
        q->kind = REQ_NOT_FOUND;
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    (void)version;
    endpoint *e = cls;
    req *q = *req_cls;
    if (!q) { /* headers are in: route now, decide when the body is */
        q = malloc(sizeof *q);
        if (!q)
            return MHD_NO;
        route(e, url, method, q);
        q->kept_bytes = 0;
        *req_cls = q;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (q->kind == REQ_LIMITED && q->kept_bytes < sizeof q->body) {
            size_t take = sizeof q->body - q->kept_bytes;
            if (take > *upload_data_size)
                take = *upload_data_size;
            memcpy(q->body + q->kept_bytes, upload_data, take);
            q->kept_bytes += take;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    return serve(e, c, q);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    free(*req_cls);
    *req_cls = NULL;
}

/* ---- lifecycle ---- */

static int start_endpoint(endpoint *e, sink_http *s, struct sockaddr_in addr)
{
    e->s = s;
    e->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, ntohs(addr.sin_port), NULL, NULL,
                            on_request, e,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)NULL,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
                            MHD_OPTION_END);
    if (!e->d) {
        char host[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &addr.sin_addr, host, sizeof host);
        fprintf(stderr, "sluice-sink: cannot listen on %s:%u (in use, or not a local address?)\n", host,
                (unsigned)ntohs(addr.sin_port));
        return SL_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(e->d, MHD_DAEMON_INFO_BIND_PORT);
    e->port = info ? info->port : ntohs(addr.sin_port);
    return SL_OK;
}

int sink_http_open(const sink_http_cfg *cfg, uint64_t now_ns, sink_http **out)
{
    int rc;
    *out = NULL;
    sink_http *s = calloc(1, sizeof *s);
    if (!s)
        return SL_ENOMEM;
    s->retry_after_s = cfg->retry_after_s;
    s->start_ns = now_ns;
    s->counts = cfg->counts;
    rc = sink_limit_init(&s->limit, cfg->mode, cfg->rate_per_s, cfg->burst, now_ns);
    if (rc != SL_OK) {
        if (rc == SL_EINVAL)
            fprintf(stderr, "sluice-sink: rate and burst must be from 1 to %u\n", SINK_LIMIT_MAX_RATE_PER_S);
        goto free_s;
    }
    if (cfg->log_path) {
        s->log = fopen(cfg->log_path, "w");
        s->log_buf = malloc(LOG_BUFFER_BYTES);
        if (!s->log || !s->log_buf) {
            fprintf(stderr, "sluice-sink: cannot open the log %s: %s\n", cfg->log_path, strerror(errno));
            rc = SL_EIO;
            goto close_log;
        }
        setvbuf(s->log, s->log_buf, _IOFBF, LOG_BUFFER_BYTES);
    }
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        rc = SL_ENOMEM;
        goto close_log;
    }
    s->ends[0].serves_limited = 1;
    s->ends[0].serves_control = cfg->control_port == 0;
    rc = start_endpoint(&s->ends[0], s, cfg->listen);
    if (rc != SL_OK)
        goto destroy_lock;
    if (cfg->control_port) {
        struct sockaddr_in control = cfg->listen;
        control.sin_port = htons(cfg->control_port);
        s->ends[1].serves_control = 1;
        rc = start_endpoint(&s->ends[1], s, control);
        if (rc != SL_OK)
            goto stop_service;
    }
    *out = s;
    return SL_OK;

stop_service:
    MHD_stop_daemon(s->ends[0].d);
destroy_lock:
    pthread_mutex_destroy(&s->lock);
close_log:
    if (s->log)
        fclose(s->log);
    free(s->log_buf);
    sink_limit_fini(&s->limit);
free_s:
    free(s);
    return rc;
}

uint16_t sink_http_port(const sink_http *s, int control)
{
    return control && s->ends[1].d ? s->ends[1].port : s->ends[0].port;
}

/* print_until prints the seconds from next_print up to (not including)
 * `until`; the main loop's, so it takes the lock only to read the ring. */
static void print_until(sink_http *s, uint64_t until)
{
    if (until > s->next_print + SECONDS_KEPT)
        s->next_print = until - SECONDS_KEPT; /* the main loop stalled: those are gone */
    for (int i = 0; i < SECONDS_KEPT && s->next_print < until; i++, s->next_print++) {
        pthread_mutex_lock(&s->lock);
        second sec = s->seconds[s->next_print % SECONDS_KEPT];
        pthread_mutex_unlock(&s->lock);
        if (sec.index != s->next_print)
            sec = (second){.index = s->next_print};
        fprintf(s->counts, "t=%" PRIu64 "s ok=%" PRIu64 " throttled=%" PRIu64 " total=%" PRIu64 "\n",
                sec.index + 1, sec.ok, sec.throttled, sec.ok + sec.throttled);
    }
    fflush(s->counts);
}

static void flush_log(sink_http *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->log && !s->log_failed && fflush(s->log) != 0) {
        fprintf(stderr, "sluice-sink: cannot write the log: %s; logging stops\n", strerror(errno));
        s->log_failed = 1;
    }
    pthread_mutex_unlock(&s->lock);
}

uint64_t sink_http_tick(sink_http *s, uint64_t now_ns)
{
    uint64_t since_ns = now_ns > s->start_ns ? now_ns - s->start_ns : 0;
    uint64_t current = since_ns / SINK_LIMIT_WINDOW_NS;
    print_until(s, current);
    flush_log(s);
    uint64_t boundary_ns = s->start_ns + (current + 1) * SINK_LIMIT_WINDOW_NS;
    uint64_t flush_ns = now_ns + SINK_HTTP_FLUSH_NS;
    return boundary_ns < flush_ns ? boundary_ns : flush_ns;
}

int sink_http_close(sink_http **sp, uint64_t now_ns)
{
    sink_http *s = sp ? *sp : NULL;
    if (!s)
        return SL_OK;
    *sp = NULL;
    for (int i = 1; i >= 0; i--)
        if (s->ends[i].d)
            MHD_stop_daemon(s->ends[i].d);
    uint64_t since_ns = now_ns > s->start_ns ? now_ns - s->start_ns : 0;
    uint64_t current = since_ns / SINK_LIMIT_WINDOW_NS;
    print_until(s, current);
    const second *last = &s->seconds[current % SECONDS_KEPT];
    if (last->index == current && last->ok + last->throttled > 0)
        print_until(s, current + 1);
    fprintf(stderr, "sluice-sink: stopped: ok=%" PRIu64 " throttled=%" PRIu64 " total=%" PRIu64 "\n", s->ok,
            s->throttled, s->ok + s->throttled);
    flush_log(s);
    int rc = s->log_failed ? SL_EIO : SL_OK;
    if (s->log && fclose(s->log) != 0 && rc == SL_OK) {
        fprintf(stderr, "sluice-sink: cannot close the log: %s\n", strerror(errno));
        rc = SL_EIO;
    }
    free(s->log_buf);
    pthread_mutex_destroy(&s->lock);
    sink_limit_fini(&s->limit);
    free(s);
    return rc;
}
