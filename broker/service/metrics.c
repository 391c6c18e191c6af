/*
 * metrics.c - the Prometheus endpoint: `sluiced --metrics ADDR:PORT` serves
 * GET /metrics in the text exposition format (version 0.0.4).
 *
 * Two threads, one lock. The loop's thread owns the broker; every 250 ms
 * (cron's timer) it copies the figures a scrape needs into a plain struct
 * (metrics_publish: O(levels + pools), one B-tree read per level for the
 * oldest message's age) and swaps it in under the lock: one memcpy of about
 * 10 KiB. libmicrohttpd's own thread answers a scrape by copying that
 * snapshot under the same lock and formatting the copy with the lock
 * released, so the loop never waits for a scrape, and a slow or hostile
 * client only ever holds the lock for a memcpy. A scrape is at most one
 * snapshot period (or one idle wake, 1 s at most) old.
 *
 * What is served, and where it comes from: per level the queue's gauges and
 * counters, picks by reason and the publish-to-deliver wait of first
 * deliveries (a histogram that deliver fills); the sink's meter and breaker;
 * each pool's size, members, in-flight and recommended size; the store's
 * commits, their latency (a histogram that loop fills), fsyncs and map use;
 * connections and bad input. Names follow Prometheus conventions: sluice_
 * prefix, base units (seconds, bytes), _total for counters; a rate of 0
 * means unlimited; the breaker is a state set (one series per state, 1 for
 * the current one). Change a name and the dashboard
 * (tools/dist/grafana-sluice.json) and broker/README.md's table go with it.
 *
 * Signals are blocked in the server's thread, so SIGTERM and SIGHUP reach
 * the loop. The thread never touches the broker.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "log.h"
#include "snap.h"
#include "units.h"

struct metrics {
    struct MHD_Daemon *d;
    unsigned port;
    pthread_mutex_t lock;
    snap shared;   /* under lock */
    snap staging;  /* the loop's */
};

/* ---- the loop's side ---- */

snap *metrics_staging(metrics *m)
{
    return m ? &m->staging : NULL;
}

void metrics_publish(metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->shared = m->staging;
    pthread_mutex_unlock(&m->lock);
}

/* ---- the server's side: formatting a copy ---- */

/* label writes a label value with \, " and newline escaped. */
static void label(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f), fputc(*v, f);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sec(FILE *f, uint64_t ns)
{
    fprintf(f, "%.9g", (double)ns / 1e9);
}

/* hist_series writes the series of one histogram, labelled with lname="lval" when
 * lname is not NULL. */
static void hist_series(FILE *f, const char *name, const char *lname, const char *lval, const hist *h,
                        hist_kind kind)
{
    uint64_t cum = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        cum += h->bucket[i];
        int last = i == HIST_BUCKETS - 1 || !hist_bounds(kind)[i];
        fprintf(f, "%s_bucket{", name);
        if (lname) {
            fprintf(f, "%s=\"", lname);
            label(f, lval);
            fputs("\",", f);
        }
        fputs("le=\"", f);
        if (last) {
            for (unsigned j = i + 1; j < HIST_BUCKETS; j++)
                cum += h->bucket[j];
            fputs("+Inf", f);
        } else {
            sec(f, hist_bounds(kind)[i]);
        }
        fprintf(f, "\"} %llu\n", (unsigned long long)cum);
        if (last)
            break;
    }
    const char *sfx[2] = {"_sum", "_count"};
    for (int k = 0; k < 2; k++) {
        fprintf(f, "%s%s", name, sfx[k]);
        if (lname) {
            fprintf(f, "{%s=\"", lname);
            label(f, lval);
            fputs("\"}", f);
        }
        fputc(' ', f);
        if (k == 0)
            sec(f, h->sum_ns);
        else
            fprintf(f, "%llu", (unsigned long long)h->count);
        fputc('\n', f);
    }
}

/* The per-level series: X(name suffix, type, help, member). */
#define LEVEL_SERIES(X)                                                                                    \
    X(depth, gauge, "Messages ready for delivery.", depth)                                               \
    X(inflight, gauge, "Messages delivered and not yet settled.", inflight)                              \
    X(delayed, gauge, "Messages waiting for their delay to pass.", delayed)                              \
    X(dead, gauge, "Dead letters held.", dead)                                                           \
    X(enqueued_total, counter, "Messages published since start.", enqueued)                              \
    X(dispatched_total, counter, "Deliveries since start.", dispatched)                                  \
    X(acked_total, counter, "Deliveries acknowledged since start.", acked)                               \
    X(nacked_total, counter, "Deliveries given back (NACK) since start.", nacked)                        \
    X(expired_total, counter, "Leases that ran out since start.", expired)                               \
    X(dead_lettered_total, counter, "Messages moved to the dead letters since start.", buried)           \
    X(throttled_total, counter, "Deliveries the sink refused (THROTTLED) since start.", throttled)           \
    X(throttled_tag_total, counter, "Of those, refused for their tag alone (scope tag) since start.", throttled_tag)

static void level_gauge(FILE *f, const char *name, const char *type, const char *help, const snap *s,
                        size_t off)
{
    head(f, name, type, help);
    for (unsigned l = 0; l < s->nlevels; l++) {
        uint64_t v;
        memcpy(&v, (const char *)&s->lv[l] + off, sizeof v);
        fprintf(f, "%s{level=\"", name);
        label(f, s->lv[l].name);
        fprintf(f, "\"} %llu\n", (unsigned long long)v);
    }
}

#define POOL_SERIES(X)                                                                                     \
    X(size, "Most deliveries the pool's members may hold at once; 0 = no limit.", size)                 \
    X(members, "Consumers in the pool.", members)                                                        \
    X(inflight, "Deliveries the pool's members hold.", inflight)                                         \
    X(recommended_size, "The size autoscaling would choose (Little's law).", recommended)                \
    X(paused, "1 when the pool is paused.", paused)

static void render(FILE *f, const snap *s)
{
#define LEVEL_EMIT_(sfx, type, help, member)                                                               \
    level_gauge(f, "sluice_level_" #sfx, #type, help, s, offsetof(snap_level, member));
    LEVEL_SERIES(LEVEL_EMIT_)
#undef LEVEL_EMIT_
    head(f, "sluice_level_oldest_age_seconds", "gauge", "Age of the oldest ready message.");
    for (unsigned l = 0; l < s->nlevels; l++) {
        fputs("sluice_level_oldest_age_seconds{level=\"", f);
        label(f, s->lv[l].name);
        fprintf(f, "\"} %.3f\n", (double)s->lv[l].oldest_ms / 1e3);
    }
    head(f, "sluice_level_picks_total", "counter", "Deliveries by the reason the pick rule chose the level.");
    for (unsigned l = 0; l < s->nlevels; l++)
        for (int r = DISP_PRIORITY; r < DISP_REASON_COUNT_; r++) {
            fputs("sluice_level_picks_total{level=\"", f);
            label(f, s->lv[l].name);
            fprintf(f, "\",reason=\"%s\"} %llu\n", disp_reason_name((disp_reason)r),
                    (unsigned long long)s->lv[l].picks[r]);
        }
    head(f, "sluice_level_pause_remaining_seconds", "gauge",
         "How long the level's pause after THROTTLED still lasts (a consumer limited to it, or a FIFO level "
         "waiting for its head's tag); 0: none.");
    for (unsigned l = 0; l < s->nlevels; l++) {
        fputs("sluice_level_pause_remaining_seconds{level=\"", f);
        label(f, s->lv[l].name);
        fputs("\"} ", f);
        sec(f, s->lv[l].pause_ns);
        fputc('\n', f);
    }
    head(f, "sluice_level_wait_seconds", "histogram", "Time from publish to first delivery.");
    for (unsigned l = 0; l < s->nlevels; l++)
        hist_series(f, "sluice_level_wait_seconds", "level", s->lv[l].name, &s->lv[l].wait, HIST_WAIT);

    head(f, "sluice_sink_rate_per_second", "gauge", "The sink's configured rate; 0 = unlimited.");
    fprintf(f, "sluice_sink_rate_per_second %.3f\n", (double)s->sink_rate_milli / 1e3);
    head(f, "sluice_sink_effective_rate_per_second", "gauge",
         "The rate in use after THROTTLED cuts (AIMD); 0 = unlimited.");
    fprintf(f, "sluice_sink_effective_rate_per_second %.3f\n", (double)s->sink_effective_milli / 1e3);
    head(f, "sluice_sink_tokens", "gauge", "Units the sink's bucket lets go now; +Inf when unlimited.");
    if (s->sink_tokens_milli == UINT64_MAX)
        fputs("sluice_sink_tokens +Inf\n", f);
    else
        fprintf(f, "sluice_sink_tokens %.3f\n", (double)s->sink_tokens_milli / 1e3);
    head(f, "sluice_sink_burst", "gauge", "The sink bucket's burst.");
    fprintf(f, "sluice_sink_burst %llu\n", (unsigned long long)s->sink_burst);
    head(f, "sluice_sink_inflight", "gauge", "Deliveries out to consumers of the sink.");
    fprintf(f, "sluice_sink_inflight %llu\n", (unsigned long long)s->sink_inflight);
    head(f, "sluice_sink_inflight_max", "gauge", "The sink's in-flight cap; 0 = none.");
    fprintf(f, "sluice_sink_inflight_max %llu\n", (unsigned long long)s->sink_max_inflight);
    uint64_t throttled = 0;
    for (unsigned l = 0; l < s->nlevels; l++)
        throttled += s->lv[l].throttled;
    head(f, "sluice_sink_throttled_total", "counter", "Deliveries the sink refused (THROTTLED), all levels.");
    fprintf(f, "sluice_sink_throttled_total %llu\n", (unsigned long long)throttled);
    head(f, "sluice_sink_paused", "gauge", "1 while dispatch to the sink is paused after THROTTLED.");
    fprintf(f, "sluice_sink_paused %d\n", s->sink_pause_ns > 0);
    head(f, "sluice_sink_pause_remaining_seconds", "gauge", "How long the pause still lasts.");
    fputs("sluice_sink_pause_remaining_seconds ", f);
    sec(f, s->sink_pause_ns);
    fputc('\n', f);
    head(f, "sluice_sink_breaker_state", "gauge", "The circuit breaker's state: 1 for the current one.");
    for (int st = BREAKER_CLOSED; st <= BREAKER_HALF_OPEN; st++)
        fprintf(f, "sluice_sink_breaker_state{state=\"%s\"} %d\n", breaker_name((breaker_state)st),
                st == s->breaker_state);
    head(f, "sluice_sink_breaker_trips_total", "counter", "Times the circuit breaker opened.");
    fprintf(f, "sluice_sink_breaker_trips_total %llu\n", (unsigned long long)s->breaker_trips);

#define POOL_EMIT_(sfx, help, member)                                                                      \
    head(f, "sluice_pool_" #sfx, "gauge", help);                                                         \
    for (unsigned i = 0; i < s->npools; i++) {                                                             \
        fputs("sluice_pool_" #sfx "{pool=\"", f);                                                          \
        label(f, s->pool[i].name);                                                                         \
        fprintf(f, "\"} %llu\n", (unsigned long long)s->pool[i].member);                                  \
    }
    POOL_SERIES(POOL_EMIT_)
#undef POOL_EMIT_
    head(f, "sluice_pool_delivered_total", "counter", "Deliveries to the pool's members since start.");
    for (unsigned i = 0; i < s->npools; i++) {
        fputs("sluice_pool_delivered_total{pool=\"", f);
        label(f, s->pool[i].name);
        fprintf(f, "\"} %llu\n", (unsigned long long)s->pool[i].delivered);
    }

    head(f, "sluice_store_commit_seconds", "histogram",
         "Latency of the store's durable commits (a log record's flush, or an LMDB commit).");
    hist_series(f, "sluice_store_commit_seconds", NULL, NULL, &s->commit, HIST_COMMIT);
    head(f, "sluice_store_commits_total", "counter", "Batches made durable (group commits): log records or LMDB commits.");
    fprintf(f, "sluice_store_commits_total %llu\n", (unsigned long long)s->commits);
    head(f, "sluice_store_commit_stalls_total", "counter",
         "Commits out longer than half the watchdog period (watchdog pings withheld meanwhile).");
    fprintf(f, "sluice_store_commit_stalls_total %llu\n", (unsigned long long)s->commit_stalls);
    head(f, "sluice_store_fsyncs_total", "counter",
         "Syncs to disk: one per log record; two per LMDB commit (the data, then the meta page).");
    fprintf(f, "sluice_store_fsyncs_total %llu\n",
            (unsigned long long)(s->log_records + 2 * s->lmdb_commits));
    head(f, "sluice_store_log_records_total", "counter", "Write-ahead log records written and flushed (one a batch).");
    fprintf(f, "sluice_store_log_records_total %llu\n", (unsigned long long)s->log_records);
    head(f, "sluice_store_log_bytes_total", "counter", "Bytes written to the write-ahead log (records padded to 4 KiB).");
    fprintf(f, "sluice_store_log_bytes_total %llu\n", (unsigned long long)s->log_bytes);
    head(f, "sluice_store_lmdb_commits_total", "counter",
         "LMDB commits (with the write-ahead log: its checkpoints, which free the log's space).");
    fprintf(f, "sluice_store_lmdb_commits_total %llu\n", (unsigned long long)s->lmdb_commits);
    head(f, "sluice_store_map_used_bytes", "gauge", "Bytes of the LMDB map in use.");
    fprintf(f, "sluice_store_map_used_bytes %llu\n", (unsigned long long)s->map_used);
    head(f, "sluice_store_map_size_bytes", "gauge", "The LMDB map's current size.");
    fprintf(f, "sluice_store_map_size_bytes %llu\n", (unsigned long long)s->map_size);
    head(f, "sluice_store_map_max_bytes", "gauge", "The most the map may grow to.");
    fprintf(f, "sluice_store_map_max_bytes %llu\n", (unsigned long long)s->map_max);

    head(f, "sluice_connections", "gauge", "Connected peers (producers, consumers, admins).");
    fprintf(f, "sluice_connections %llu\n", (unsigned long long)s->connections);
    head(f, "sluice_consumers", "gauge", "Connected consumers in a pool.");
    fprintf(f, "sluice_consumers %llu\n", (unsigned long long)s->consumers);
    head(f, "sluice_bad_input_total", "counter", "Messages refused as malformed or unexpected.");
    fprintf(f, "sluice_bad_input_total %llu\n", (unsigned long long)s->rx_bad);
    head(f, "sluice_settlements_refused_total", "counter",
         "Settlements refused with SL_ESTALE: a token no lease has (expired, settled, from before a restart, "
         "never given), or a lease another connection holds.");
    fprintf(f, "sluice_settlements_refused_total{reason=\"unknown\"} %llu\n",
            (unsigned long long)(s->settle_refused - s->settle_foreign));
    fprintf(f, "sluice_settlements_refused_total{reason=\"not_holder\"} %llu\n", (unsigned long long)s->settle_foreign);
    head(f, "sluice_send_failed_total", "counter", "Replies and deliveries that could not be sent.");
    fprintf(f, "sluice_send_failed_total %llu\n", (unsigned long long)s->tx_failed);
    head(f, "sluice_uptime_seconds", "gauge", "Seconds since the broker started.");
    fputs("sluice_uptime_seconds ", f);
    sec(f, s->uptime_ns);
    fputc('\n', f);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    metrics *m = cls;
    (void)version, (void)upload_data, (void)req_cls;
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    const char *reply = NULL;
    unsigned status = MHD_HTTP_OK;
    char *text = NULL;
    size_t len = 0;
    if (!get) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED, reply = "only GET /metrics\n";
    } else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
        status = MHD_HTTP_NOT_FOUND, reply = "not found: try /metrics\n";
    } else {
        snap *s = malloc(sizeof *s);
        FILE *f = s ? open_memstream(&text, &len) : NULL;
        if (!f) {
            free(s);
            status = MHD_HTTP_INTERNAL_SERVER_ERROR, reply = "out of memory\n";
        } else {
            pthread_mutex_lock(&m->lock);
            *s = m->shared;
            pthread_mutex_unlock(&m->lock);
            render(f, s);
            fclose(f);
            free(s);
        }
    }
    struct MHD_Response *r =
        text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(strlen(reply), (void *)reply, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type",
                            text ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

int metrics_open(const char *addr_port, metrics **out)
{
    *out = NULL;
    if (!addr_port || !*addr_port)
        return SL_OK;
    char host[64];
    const char *colon = strrchr(addr_port, ':');
    char *end;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (!colon || (size_t)(colon - addr_port) >= sizeof host || !colon[1] || *end || port > 65535) {
        log_error("metrics", "--metrics %s: expected ADDR:PORT, e.g. 127.0.0.1:9470", addr_port);
        return SL_EINVAL;
    }
    memcpy(host, addr_port, (size_t)(colon - addr_port));
    host[colon - addr_port] = '\0';
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        log_error("metrics", "--metrics %s: '%s' is not an IPv4 address", addr_port, host);
        return SL_EINVAL;
    }
    sa.sin_port = htons((uint16_t)port);
    metrics *m = calloc(1, sizeof *m);
    if (!m)
        return SL_ENOMEM;
    pthread_mutex_init(&m->lock, NULL);
    /* the server's thread inherits this mask: signals go to the loop's thread */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, (uint16_t)port,
                            NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!m->d) {
        log_error("metrics", "cannot listen on %s (in use, or not a local address?)", addr_port);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return SL_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
    m->port = info ? info->port : (unsigned)port;
    log_info("metrics", "serving http://%s:%u/metrics", host, m->port);
    *out = m;
    return SL_OK;
}

unsigned metrics_port(const metrics *m)
{
    return m ? m->port : 0;
}

void metrics_close(metrics **mp)
{
    metrics *m = mp ? *mp : NULL;
    if (!m)
        return;
    MHD_stop_daemon(m->d);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *mp = NULL;
}
