/*
 * http.c - the one HTTP server: `sluiced --http ADDR:PORT` (or its old name
 * --metrics) serves the web console at /, the JSON API under /api/v1/
 * (api.c) and Prometheus metrics at /metrics (metrics.c).
 *
 * libmicrohttpd runs one thread with epoll, answering every connection
 * without blocking: what a request needs is either in memory (the last
 * snapshot the loop published, the history and the overview the ticker
 * keeps, the console's files built into the binary) or asked of the loop
 * over the bridge, with the request suspended meanwhile (http_call): the
 * loop answers, the bridge's thread stores the answer and resumes the
 * request, and this thread writes the response. So a slow disk, a stuck
 * client or a thousand idle sockets never hold another request up.
 *
 * A request's life: its headers arrive (conns.c's deadline runs since the
 * connection went idle); the handler is called, first with no body; a
 * body (POST, PUT, DELETE) is gathered up to its route's limit; then the
 * route answers or calls the loop. Every response carries the same
 * security headers (reply.c) and no CORS header ever.
 *
 * Which address: loopback by default; conf.c refuses one other machines
 * can reach unless the server has a certificate (HTTPS, GnuTLS through
 * libmicrohttpd) or --insecure says so.
 *
 * Signals are blocked in the server's threads, so SIGTERM and SIGHUP reach
 * the loop. Nothing here touches the broker.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "api.h"
#include "assets.h"
#include "live.h"
#include "log.h"
#include "session.h"
#include "units.h"

#define FILE_MAX_BYTES (1u << 20) /* a certificate or key file */

uint64_t http_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* ---- the loop's side ---- */

snap *http_staging(http *h)
{
    return h ? &h->staging : NULL;
}

void http_publish(http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->snap_lock);
    snap_copy(&h->shared, &h->staging);
    h->shared_gen++;
    pthread_mutex_unlock(&h->snap_lock);
    live_kick(h); /* the ticker makes the overview at once, not at its next tick: pages see it sooner */
}

unsigned http_level_names(http *h, char names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1])
{
    pthread_mutex_lock(&h->snap_lock);
    unsigned n = h->shared.nlevels;
    for (unsigned l = 0; l < n; l++)
        memcpy(names[l], h->shared.lv[l].name, sizeof names[l]);
    pthread_mutex_unlock(&h->snap_lock);
    return n;
}

int http_login_mint(http *h, const char *principal, const char *key, proto_role role, uint64_t ttl_ms,
                    uint64_t now_ns, char *token, char *url, size_t url_len)
{
    if (!h)
        return SL_ESTATE;
    snprintf(url, url_len, "%s", h->base_url);
    return session_mint(h, principal, key, role, ttl_ms, now_ns, token);
}

void http_sessions_refresh(http *h, http_role_fn role_of, void *ctx)
{
    if (h)
        session_refresh(h, role_of, ctx);
}

uint64_t http_snap_copy(http *h, snap *out)
{
    pthread_mutex_lock(&h->snap_lock);
    snap_copy(out, &h->shared);
    uint64_t gen = h->shared_gen;
    pthread_mutex_unlock(&h->snap_lock);
    return gen;
}

unsigned http_port(const http *h)
{
    return h ? h->port : 0;
}

const char *http_header(hreq *r, const char *name)
{
    return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

/* ---- routing ---- */

static enum MHD_Result serve_metrics(hreq *r)
{
    char *text = NULL;
    size_t len = 0;
    snap *s = malloc(sizeof *s);
    FILE *f = s ? open_memstream(&text, &len) : NULL;
    if (!f) {
        free(s);
        return reply_static(r, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", "out of memory\n", 14);
    }
    http_snap_copy(r->h, s);
    metrics_render(f, s);
    fclose(f);
    free(s);
    return reply_free(r, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

static enum MHD_Result route(hreq *r)
{
    if (r->path_too_long)
        return reply_error(r, SL_ETOOBIG, "the URL's path is longer than %zu bytes", sizeof r->path - 1);
    if (!strncmp(r->path, "/api/", 5))
        return api_route(r);
    if (r->method != HM_GET && r->method != HM_HEAD)
        return reply_error(r, SL_EINVAL, "only GET here; the API is under /api/v1/");
    if (!strcmp(r->path, "/metrics"))
        return serve_metrics(r);
    const assets_file *a = assets_find(r->path);
    if (a)
        return reply_static(r, MHD_HTTP_OK, a->ctype, a->data, a->len);
    return reply_error(r, SL_ENOTFOUND, "no page %s here: the console is at /, the API under /api/v1/, "
                      "metrics at /metrics", r->path);
}

/* body_limit is the most body bytes a request to path may carry: a
 * publish's body as base64 or escaped text, and some room for the rest;
 * anything else a few KiB of arguments. */
static size_t body_limit(const http *h, const char *path)
{
    size_t n = strlen(path);
    if (n > 9 && !strcmp(path + n - 9, "/messages"))
        return (size_t)h->cfg.max_body * 2 + 64 * 1024;
    return 64 * 1024;
}

static hmethod method_of(const char *m)
{
    static const struct { const char *name; hmethod m; } v[] = {
        {"GET", HM_GET}, {"HEAD", HM_HEAD}, {"POST", HM_POST}, {"PUT", HM_PUT}, {"DELETE", HM_DELETE}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!strcmp(m, v[i].name))
            return v[i].m;
    return HM_OTHER;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    http *h = cls;
    hreq *r = *req_cls;
    (void)version;
    if (!r) { /* the headers are in */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->h = h;
        r->c = c;
        r->conn = ci ? ci->socket_context : NULL;
        r->method = method_of(method);
        size_t n = strlen(url);
        r->path_too_long = n >= sizeof r->path;
        memcpy(r->path, url, r->path_too_long ? 0 : n + 1);
        r->body_max = body_limit(h, r->path);
        *req_cls = r;
        conns_phase(&h->conns, r->conn, CONN_RECEIVING, http_now_ns());
        enum MHD_Result res;
        if (!r->path_too_long && !strncmp(r->path, "/api/", 5) && api_early(r, &res)) {
            conns_phase(&h->conns, r->conn, CONN_BUSY, http_now_ns());
            return res; /* refused on its headers: its body is never read */
        }
        return MHD_YES;
    }
    if (*upload_data_size) { /* a piece of the body */
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->body_too_big || r->handled)
            return MHD_YES;
        if (r->body_len + n > r->body_max) {
            r->body_too_big = 1;
            return MHD_YES;
        }
        if (r->body_len + n + 1 > r->body_cap) {
            size_t cap = r->body_cap ? r->body_cap : 4096;
            while (cap < r->body_len + n + 1)
                cap *= 2;
            if (atomic_fetch_add(&h->body_bytes, cap - r->body_cap) + cap - r->body_cap > HTTP_BODIES_MAX) {
                atomic_fetch_sub(&h->body_bytes, cap - r->body_cap);
                r->body_too_big = 2; /* every upload together: the server's limit, not this request's */
                return MHD_YES;
            }
            char *p = realloc(r->body, cap);
            if (!p) {
                atomic_fetch_sub(&h->body_bytes, cap - r->body_cap);
                r->body_too_big = 2;
                return MHD_YES;
            }
            r->body = p;
            r->body_cap = cap;
        }
        memcpy(r->body + r->body_len, upload_data, n);
        r->body_len += n;
        r->body[r->body_len] = '\0';
        return MHD_YES;
    }
    if (r->handled) /* resumed, or called again before the answer: the call's answer or nothing */
        return call_resumed(r);
    conns_phase(&h->conns, r->conn, CONN_BUSY, http_now_ns());
    if (r->body_too_big == 2) {
        r->retry_after = 1;
        return reply_fail(r, MHD_HTTP_SERVICE_UNAVAILABLE, SL_ENOMEM,
                          "the server holds %u MiB of request bodies already; retry", HTTP_BODIES_MAX >> 20);
    }
    if (r->body_too_big)
        return reply_error(r, SL_ETOOBIG, "the request body is larger than %zu bytes", r->body_max);
    return route(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode why)
{
    http *h = cls;
    hreq *r = *req_cls;
    (void)why;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conns_phase(&h->conns, ci ? ci->socket_context : NULL, CONN_WAITING, http_now_ns());
    if (!r)
        return;
    call_ended(r);
    atomic_fetch_sub(&h->body_bytes, r->body_cap);
    free(r->body);
    free(r->reply);
    free(r);
    *req_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *sa = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = fd ? conns_open(&h->conns, fd->connect_fd, sa ? sa->client_addr : NULL, http_now_ns())
                             : NULL;
    } else {
        conns_close(&h->conns, *socket_context);
        *socket_context = NULL;
    }
}

/* keep_raw leaves the URL as it came: api.c splits the path into segments
 * before it unescapes each, so that an escaped '/' in a tag stays in it. */
static size_t keep_raw(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls, (void)c;
    return strlen(s);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    char text[512];
    (void)cls;
    if (!log_enabled(LOG_DEBUG))
        return;
    vsnprintf(text, sizeof text, fmt, ap);
    text[strcspn(text, "\n")] = '\0';
    log_debug("http", "libmicrohttpd: %s", text);
}

/* ---- open and close ---- */

/* read_pem reads a PEM file whole (libmicrohttpd takes it in memory). */
static char *read_pem(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    char *buf = f ? malloc(FILE_MAX_BYTES + 1) : NULL;
    size_t n = buf ? fread(buf, 1, FILE_MAX_BYTES + 1, f) : 0;
    if (f)
        fclose(f);
    if (!buf || n == 0 || n > FILE_MAX_BYTES || !strstr(buf, "-----BEGIN")) {
        log_error("http", "%s %s: cannot read a PEM file there%s%s", what, path, f ? "" : ": ",
                  f ? "" : strerror(errno));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* enough_files raises the soft limit on open descriptors to what the
 * connection limits need (a systemd service starts at 1,024). */
static void enough_files(unsigned need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need)
        log_warn("http", "only %llu open files allowed (ulimit -n); --http-max-conns needs about %u",
                 (unsigned long long)rl.rlim_cur, need);
}

/* parse_addr reads ADDR:PORT into sa and h's names. */
static int parse_addr(http *h, const char *addr_port, struct sockaddr_in *sa)
{
    const char *colon = strrchr(addr_port, ':');
    char *end;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    *sa = (struct sockaddr_in){.sin_family = AF_INET};
    if (!colon || (size_t)(colon - addr_port) >= sizeof h->host || !colon[1] || *end || port > 65535) {
        log_error("http", "--http (or --metrics) %s: expected ADDR:PORT, e.g. 127.0.0.1:9470", addr_port);
        return SL_EINVAL;
    }
    memcpy(h->host, addr_port, (size_t)(colon - addr_port));
    h->host[colon - addr_port] = '\0';
    if (!strcmp(h->host, "localhost"))
        strcpy(h->host, "127.0.0.1");
    if (inet_pton(AF_INET, h->host, &sa->sin_addr) != 1) {
        log_error("http", "--http (or --metrics) %s: '%s' is not an IPv4 address", addr_port, h->host);
        return SL_EINVAL;
    }
    sa->sin_port = htons((uint16_t)port);
    return SL_OK;
}

static int start_daemon(http *h, const struct sockaddr_in *sa)
{
    unsigned cap = conns_capacity(h->cfg.max_conns, h->cfg.max_conns_per_addr);
    unsigned idle_s = (h->cfg.idle_timeout_ms + 999) / 1000;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (h->tls)
        flags |= MHD_USE_TLS;
    /* the server's threads inherit this mask: signals go to the loop's thread */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert_pem}, {MHD_OPTION_HTTPS_MEM_KEY, 0, h->key_pem},
        {MHD_OPTION_END, 0, NULL}};
    h->d = MHD_start_daemon(flags, ntohs(sa->sin_port), NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)sa,
                            MHD_OPTION_CONNECTION_LIMIT, cap,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_UNESCAPE_CALLBACK, keep_raw, NULL,
                            MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
                            MHD_OPTION_ARRAY, h->tls ? tls_opts : tls_opts + 2,
                            MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!h->d) {
        log_error("http", "cannot serve %s (in use, not a local address, or a certificate and key that do not "
                  "match?)", h->addr);
        return SL_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : ntohs(sa->sin_port);
    return SL_OK;
}

int http_open(const http_cfg *cfg, http **out)
{
    struct sockaddr_in sa;
    int rc;
    *out = NULL;
    if (!cfg->addr_port || !*cfg->addr_port)
        return SL_OK;
    http *h = calloc(1, sizeof *h);
    if (!h)
        return SL_ENOMEM;
    h->cfg = *cfg;
    snprintf(h->addr, sizeof h->addr, "%s", cfg->addr_port);
    h->cfg.addr_port = h->addr;
    if ((rc = parse_addr(h, cfg->addr_port, &sa)) != SL_OK)
        goto free_h;
    if (cfg->cert_file && *cfg->cert_file) {
        if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
            log_error("http", "--http-cert: this libmicrohttpd was built without HTTPS");
            rc = SL_EINVAL;
            goto free_h;
        }
        h->tls = 1;
        h->cert_pem = read_pem(cfg->cert_file, "--http-cert");
        h->key_pem = h->cert_pem ? read_pem(cfg->key_file, "--http-key") : NULL;
        if (!h->key_pem) {
            rc = SL_EINVAL;
            goto free_pem;
        }
    }
    pthread_mutex_init(&h->snap_lock, NULL);
    pthread_mutex_init(&h->call_lock, NULL);
    rc = conns_init(&h->conns, cfg->max_conns, cfg->max_conns_per_addr,
                    (uint64_t)cfg->header_timeout_ms * NS_PER_MS);
    if (rc == SL_OK && (rc = session_open(h)) == SL_OK && (rc = live_open(h)) != SL_OK)
        session_close(h);
    if (rc != SL_OK)
        goto locks;
    enough_files(conns_capacity(cfg->max_conns, cfg->max_conns_per_addr) + 512);
    if ((rc = start_daemon(h, &sa)) != SL_OK)
        goto live;
    snprintf(h->base_url, sizeof h->base_url, "%s://%s:%u", h->tls ? "https" : "http", h->host, h->port);
    if ((rc = live_start(h)) != SL_OK) {
        MHD_stop_daemon(h->d);
        goto live;
    }
    log_info("http", "serving %s/ (the console; the API under /api/v1/%s)", h->base_url,
             cfg->auth ? ", with sessions from `sluice web login`" : ", open to anyone who can reach it: no --auth");
    log_info("metrics", "serving %s/metrics", h->base_url);
    if (!h->tls && strncmp(h->host, "127.", 4))
        log_warn("http", "%s is plain HTTP beyond loopback (--insecure): anyone on the path can read it", h->addr);
    *out = h;
    return SL_OK;

live:
    live_close(h);
    session_close(h);
locks:
    conns_fini(&h->conns);
    pthread_mutex_destroy(&h->call_lock);
    pthread_mutex_destroy(&h->snap_lock);
free_pem:
    free(h->cert_pem);
    free(h->key_pem);
free_h:
    free(h);
    return rc;
}

void http_close(http **hp)
{
    http *h = hp ? *hp : NULL;
    if (!h)
        return;
    live_stop(h);  /* the ticker stops; every stream and waiting call is resumed to end */
    MHD_stop_daemon(h->d);
    live_close(h);
    session_close(h);
    conns_fini(&h->conns);
    pthread_mutex_destroy(&h->call_lock);
    pthread_mutex_destroy(&h->snap_lock);
    free(h->cert_pem);
    free(h->key_pem);
    free(h);
    *hp = NULL;
}
