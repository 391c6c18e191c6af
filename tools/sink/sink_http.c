/*
 * sink_http.c - serve the simulated downstream service over HTTP.
 *
 * This module owns the libmicrohttpd daemons, the limiter, the counters and
 * the request log of one sluice-sink. It routes each request; the decision
 * itself is sink_limit_take's.
 *
 * Routes. A request whose path starts with "/_" is a control request:
 * GET /_limit, PUT /_limit?rate=R&burst=B&mode=M&inject=N&key_rate=R&key_burst=B
 * (each argument optional, at least one given; the key ones only on a keyed
 * sink; inject=N answers the next N service
 * requests 429 whatever the limiter says, without taking its tokens: one
 * push-back on demand, for the bench) and GET /_stats (with --dedup-header,
 * the keys applied and the repeats absorbed: sink_dedup.c); other "/_" paths are 404, other
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
 * covers the limiters (global and per key), the counters, the per-second
 * ring and the log. The clock is read under the lock, so the times the
 * limiters see never go backwards between threads. Work under the lock is
 * two limiter steps (a hash lookup for the key) and one buffered log line
 * (at most ~1.6 KB), plus the flush in tick (and, when the key table is
 * full, one O(keys) sweep of idle keys).
 *
 * Counting (sink_count.c): each limited request in the second it was
 * decided in; the main loop prints finished seconds at every tick.
 *
 * Per-key limits. With a key source (a header, or the last segment of the
 * path) every limited request's key is found when its headers arrive, and
 * the request must pass its key's limiter (sink_keys.c) and then the global
 * one; a refusal by the global one gives the key its token back. Each 429
 * names its scope in X-Limit-Scope: "key" (with X-Limit-Key, the key
 * escaped as in the log), "global" or "injected"; a request without a key
 * passes the global limit alone; a key over SINK_KEYS_KEY_BYTES is a 400,
 * and a new key when SINK_KEYS_MAX busy keys are held a 503.
 *
 * The request log (one line per limited request, its format in sink_log.c)
 * is written under the lock and flushed at every tick and at close.
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

#include "sink_count.h"
#include "sink_reply.h"
#include "sink_dedup.h"
#include "sluice_errors.h"

#define CONNECTION_LIMIT 1000
#define CONNECTION_TIMEOUT_S 60

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
    int has_key;         /* keyed sink: the request named a key */
    size_t key_len;      /* > SINK_KEYS_KEY_BYTES: too long (a 400) */
    char key[SINK_KEYS_KEY_BYTES];
    int has_dedup;       /* --dedup-header: the request carries it */
    size_t dedup_len;
    char dedup[SINK_DEDUP_KEY_BYTES];
    size_t kept_bytes;
    unsigned char body[SINK_HTTP_LOG_BODY_BYTES];
} req;

struct sink_http {
    pthread_mutex_t lock;
    sink_limit limit;
    int retry_after_s;
    uint32_t inject;                /* service requests still to answer 429 on demand */
    sink_keys_source key_source;
    char key_header[128];
    sink_keys keys;                 /* when key_source is not SINK_KEYS_NONE */
    uint64_t key_refused, bad_keys; /* 429s of scope key; 400s and 503s of keys */
    sink_count count;
    sink_dedup dedup;               /* --dedup-header: the keys applied */
    sink_log log;
    FILE *counts;
    endpoint ends[2];               /* [1] used only with a control port */
};

static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* limit_json writes the current limit (with the per-key one when keyed);
 * call under the lock. */
static void limit_json(const sink_http *s, char *out, size_t out_len)
{
    int n = snprintf(out, out_len, "{\"rate\":%" PRIu32 ",\"burst\":%" PRIu32 ",\"mode\":\"%s\"",
                     s->limit.rate_per_s, s->limit.burst, sink_limit_mode_name(s->limit.mode));
    if (s->key_source != SINK_KEYS_NONE && n > 0 && (size_t)n < out_len)
        n += snprintf(out + n, out_len - (size_t)n, ",\"key_rate\":%" PRIu32 ",\"key_burst\":%" PRIu32
                      ",\"key_from\":\"%s\"", s->keys.rate_per_s, s->keys.burst,
                      sink_keys_source_name(s->key_source));
    if (n > 0 && (size_t)n < out_len)
        snprintf(out + n, out_len - (size_t)n, "}\n");
}

/* ---- routes ---- */

/* decide asks the limiters about one request; call under the lock.
 * Returns 1 when admitted, else 0 with *scope naming who refused and
 * *wait_ns until a request would pass; -1 for a 503 (key table full). */
static int decide(sink_http *s, const req *q, uint64_t now_ns, const char **scope, uint64_t *wait_ns)
{
    *scope = "global";
    if (s->inject) { /* an injected 429: the limiters are not asked */
        s->inject--;
        *scope = "injected";
        *wait_ns = 1;
        return 0;
    }
    if (q->has_key) {
        sink_keys_verdict v = sink_keys_take(&s->keys, q->key, q->key_len, now_ns, wait_ns);
        if (v == SINK_KEYS_FULL)
            return -1;
        if (v == SINK_KEYS_REFUSED) {
            *scope = "key";
            s->key_refused++;
            return 0;
        }
    }
    if (sink_limit_take(&s->limit, now_ns, wait_ns))
        return 1;
    if (q->has_key)
        sink_keys_give_back(&s->keys, q->key, q->key_len);
    return 0;
}

/* serve_bad_key answers a key too long (400) or one the table cannot hold
 * (503), logs it, and says so on stderr the first time. */
static enum MHD_Result serve_bad_key(sink_http *s, struct MHD_Connection *c, const req *q, int full)
{
    unsigned status = full ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_BAD_REQUEST;
    pthread_mutex_lock(&s->lock);
    if (s->bad_keys++ == 0)
        fprintf(stderr, "sluice-sink: %s (answered %u; said once)\n",
                full ? "a new key while every key slot is busy" : "a key longer than the longest allowed", status);
    sink_log_write(&s->log, clock_ns(), status, 1, q->key, full ? q->key_len : 0, q->body, q->kept_bytes);
    pthread_mutex_unlock(&s->lock);
    return sink_reply(c, status, "text/plain", full ? "too many keys\n" : "key too long\n", NULL);
}

static enum MHD_Result serve_limited(sink_http *s, struct MHD_Connection *c, const req *q)
{
    uint64_t wait_ns = 0;
    const char *scope;
    if (q->has_key && q->key_len > SINK_KEYS_KEY_BYTES)
        return serve_bad_key(s, c, q, 0);
    pthread_mutex_lock(&s->lock);
    uint64_t now_ns = clock_ns();
    int admitted = decide(s, q, now_ns, &scope, &wait_ns);
    if (admitted < 0) {
        pthread_mutex_unlock(&s->lock);
        return serve_bad_key(s, c, q, 1);
    }
    sink_count_add(&s->count, now_ns, admitted);
    if (admitted && sink_dedup_on(&s->dedup)) /* applied once per key; a repeat absorbed */
        sink_dedup_note(&s->dedup, q->has_dedup ? q->dedup : NULL, q->dedup_len);
    int keyed = s->key_source != SINK_KEYS_NONE;
    sink_log_write(&s->log, now_ns, admitted ? MHD_HTTP_OK : MHD_HTTP_TOO_MANY_REQUESTS, keyed, q->key,
                   q->has_key ? q->key_len : 0, q->body, q->kept_bytes);
    pthread_mutex_unlock(&s->lock);
    if (admitted)
        return sink_reply(c, MHD_HTTP_OK, "text/plain", "ok\n", NULL);
    char retry[24], key_text[SINK_KEYS_TEXT_BYTES];
    uint64_t retry_s = s->retry_after_s >= 0 ? (uint64_t)s->retry_after_s : sink_limit_retry_after_s(wait_ns);
    snprintf(retry, sizeof retry, "%" PRIu64, retry_s);
    int key_scope = strcmp(scope, "key") == 0;
    if (key_scope)
        sink_keys_escape(q->key, q->key_len, key_text);
    return sink_reply_429(c, retry, keyed ? scope : NULL, key_scope ? key_text : NULL);
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
    char json[256];
    uint32_t rate_per_s = 0, burst = 0;
    sink_limit_mode mode = SINK_LIMIT_GCRA;
    int has_rate = arg_u32(c, "rate", 1, SINK_LIMIT_MAX_RATE_PER_S, &rate_per_s);
    int has_burst = arg_u32(c, "burst", 1, SINK_LIMIT_MAX_BURST, &burst);
    uint32_t inject = 0, key_rate_per_s = 0, key_burst = 0;
    int has_inject = arg_u32(c, "inject", 1, 1000000, &inject);
    int has_key_rate = arg_u32(c, "key_rate", 1, SINK_LIMIT_MAX_RATE_PER_S, &key_rate_per_s);
    int has_key_burst = arg_u32(c, "key_burst", 1, SINK_LIMIT_MAX_BURST, &key_burst);
    const char *mode_arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode");
    if (has_rate < 0 || has_burst < 0 || has_inject < 0 || has_key_rate < 0 || has_key_burst < 0)
        return sink_reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"rate, burst, inject, key_rate and key_burst must be whole numbers from 1 to 1000000\"}\n");
    if ((has_key_rate || has_key_burst) && s->key_source == SINK_KEYS_NONE)
        return sink_reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"key_rate and key_burst need a sink started with --key-header or --key-path\"}\n");
    if (mode_arg && sink_limit_mode_parse(mode_arg, &mode) != SL_OK)
        return sink_reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"mode must be gcra, fixed-window or sliding-window\"}\n");
    if (!has_rate && !has_burst && !mode_arg && !has_inject && !has_key_rate && !has_key_burst)
        return sink_reply_json(c, MHD_HTTP_BAD_REQUEST, "{\"error\":\"give rate, burst, mode or inject, e.g. PUT /_limit?rate=100&burst=10\"}\n");

    pthread_mutex_lock(&s->lock);
    uint64_t now_ns = clock_ns();
    if (has_inject)
        s->inject += inject;
    if (has_key_rate || has_key_burst) /* in range: cannot fail */
        sink_keys_set(&s->keys, has_key_rate ? key_rate_per_s : s->keys.rate_per_s,
                      has_key_burst ? key_burst : s->keys.burst, now_ns);
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
        return sink_reply_json(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "{\"error\":\"out of memory\"}\n");
    fprintf(stderr, "sluice-sink: limit is now %s", json);
    return sink_reply_json(c, MHD_HTTP_OK, json);
}

static enum MHD_Result serve(endpoint *e, struct MHD_Connection *c, const req *q)
{
    sink_http *s = e->s;
    char json[512];
    int n;
    switch (q->kind) {
    case REQ_LIMITED:
        return serve_limited(s, c, q);
    case REQ_LIMIT_GET:
        pthread_mutex_lock(&s->lock);
        limit_json(s, json, sizeof json);
        pthread_mutex_unlock(&s->lock);
        return sink_reply_json(c, MHD_HTTP_OK, json);
    case REQ_LIMIT_PUT:
        return serve_limit_put(s, c);
    case REQ_STATS:
        pthread_mutex_lock(&s->lock);
        n = snprintf(json, sizeof json, "{\"ok\":%" PRIu64 ",\"throttled\":%" PRIu64 ",\"total\":%" PRIu64,
                     s->count.ok, s->count.throttled, s->count.ok + s->count.throttled);
        if (s->key_source != SINK_KEYS_NONE)
            n += snprintf(json + n, sizeof json - (size_t)n, ",\"key_throttled\":%" PRIu64 ",\"keys\":%zu,"
                          "\"bad_keys\":%" PRIu64, s->key_refused, s->keys.count, s->bad_keys);
        if (sink_dedup_on(&s->dedup))
            n += snprintf(json + n, sizeof json - (size_t)n, ",\"applied\":%" PRIu64 ",\"repeats\":%" PRIu64
                          ",\"unkeyed\":%" PRIu64, s->dedup.applied, s->dedup.repeats, s->dedup.unkeyed);
        snprintf(json + n, sizeof json - (size_t)n, "}\n");
        pthread_mutex_unlock(&s->lock);
        return sink_reply_json(c, MHD_HTTP_OK, json);
    case REQ_NOT_FOUND:
        return sink_reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", NULL);
    case REQ_BAD_METHOD:
        return sink_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "method not allowed\n", q->allow);
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

/* find_key sets q's key from its header or path when the sink is keyed;
 * keys too long are kept as a length only (served a 400). */
static void find_key(const sink_http *s, struct MHD_Connection *c, const char *url, req *q)
{
    const char *key = NULL;
    size_t len = 0;
    q->has_key = 0;
    q->key_len = 0;
    q->has_dedup = 0;
    q->dedup_len = 0;
    if (q->kind == REQ_LIMITED && sink_dedup_on(&s->dedup) &&
        (key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, s->dedup.header)) != NULL) {
        q->has_dedup = 1;
        q->dedup_len = strlen(key) < sizeof q->dedup ? strlen(key) : sizeof q->dedup;
        memcpy(q->dedup, key, q->dedup_len);
        key = NULL;
    }
    if (q->kind != REQ_LIMITED || s->key_source == SINK_KEYS_NONE)
        return;
    if (s->key_source == SINK_KEYS_HEADER) {
        key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, s->key_header);
        len = key ? strlen(key) : 0;
    } else {
        len = sink_keys_from_path(url, &key);
    }
    if (!key || len == 0)
        return;
    q->has_key = 1;
    q->key_len = len;
    memcpy(q->key, key, len < sizeof q->key ? len : sizeof q->key);
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
        find_key(e->s, c, url, q);
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
    s->key_source = cfg->key_source;
    if (cfg->key_header)
        snprintf(s->key_header, sizeof s->key_header, "%s", cfg->key_header);
    if (sink_dedup_init(&s->dedup, cfg->dedup_header) != 0) {
        free(s);
        return SL_ENOMEM;
    }
    sink_count_init(&s->count, now_ns);
    s->counts = cfg->counts;
    rc = sink_limit_init(&s->limit, cfg->mode, cfg->rate_per_s, cfg->burst, now_ns);
    if (rc != SL_OK) {
        if (rc == SL_EINVAL)
            fprintf(stderr, "sluice-sink: rate and burst must be from 1 to %u\n", SINK_LIMIT_MAX_RATE_PER_S);
        goto free_s;
    }
    if (cfg->key_source != SINK_KEYS_NONE &&
        (rc = sink_keys_init(&s->keys, cfg->key_rate_per_s, cfg->key_burst)) != SL_OK) {
        if (rc == SL_EINVAL)
            fprintf(stderr, "sluice-sink: key rate and burst must be from 1 to %u\n", SINK_LIMIT_MAX_RATE_PER_S);
        goto close_log;
    }
    if ((rc = sink_log_open(&s->log, cfg->log_path)) != SL_OK)
        goto close_log;
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
    sink_log_close(&s->log);
    sink_keys_fini(&s->keys);
    sink_limit_fini(&s->limit);
free_s:
    sink_dedup_fini(&s->dedup);
    free(s);
    return rc;
}

uint16_t sink_http_port(const sink_http *s, int control)
{
    return control && s->ends[1].d ? s->ends[1].port : s->ends[0].port;
}

static void flush_log(sink_http *s)
{
    pthread_mutex_lock(&s->lock);
    sink_log_flush(&s->log);
    pthread_mutex_unlock(&s->lock);
}

uint64_t sink_http_tick(sink_http *s, uint64_t now_ns)
{
    uint64_t current = sink_count_second_of(&s->count, now_ns);
    sink_count_print(&s->count, current, 0, s->counts, &s->lock);
    flush_log(s);
    uint64_t boundary_ns = s->count.start_ns + (current + 1) * SINK_LIMIT_WINDOW_NS;
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
    sink_count_print(&s->count, sink_count_second_of(&s->count, now_ns), 1, s->counts, &s->lock);
    fprintf(stderr, "sluice-sink: stopped: ok=%" PRIu64 " throttled=%" PRIu64 " total=%" PRIu64 "\n",
            s->count.ok, s->count.throttled, s->count.ok + s->count.throttled);
    int rc = sink_log_close(&s->log);
    pthread_mutex_destroy(&s->lock);
    sink_keys_fini(&s->keys);
    sink_dedup_fini(&s->dedup);
    sink_limit_fini(&s->limit);
    free(s);
    return rc;
}
