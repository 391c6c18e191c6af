/*
 * bench_http.c - the HTTP server's rows, on a broker of their own started
 * with --http (with --spawn only; --http alone runs just these):
 *
 *   - publish over HTTP: one client POSTs /api/v1/levels/low/messages one at
 *     a time (the bench's 100-byte body as {"body": ...}, keep-alive), each
 *     answered {"id"} after the durable commit; beside it the ZeroMQ 1 x 1
 *     row on the same broker, the two taking turns (TURNS pairs: the disk's
 *     speed and the machine's load wander; each rate row is the best turn,
 *     the ratio the median of the pairs'); the ratio's target is 0.7;
 *   - open consoles: the 1 x 100 row with no console, then with four
 *     consoles open, each as a browser's tab would be (the session, the
 *     routes, the overview, the history, then the event stream, read as it
 *     comes), again in paired turns; the target is a change of at most 2 %
 *     (the median of the pairs' ratios);
 *   - the snapshot's cost to the loop: what publishing it took, in
 *     microseconds per second of the broker's uptime, as the overview says
 *     (the loop measures its own publishes) after all of the above; the
 *     target is 50 us/s.
 *
 * Consoles are threads of libcurl handles that read the stream until the
 * row ends (their stop flag), bounded by its time; the publishing client is
 * httpc (tools/common), one keep-alive handle.
 */
#include "bench_http.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_workers.h"
#include "httpc.h"
#include "sluice.h"

#define CONSOLES 4
#define TURNS 5 /* paired turns; the ratio rows take the median of the pairs */
#define TARGET_HTTP_VS_ZMQ 0.7
#define TARGET_CONSOLES_KEEP 0.98 /* the 1 x 100 row with 4 consoles / without */
#define TARGET_SNAPSHOT_US_PER_S 50.0

/* port_of waits for the broker's log line "http: serving http://127.0.0.1:PORT/". */
static unsigned port_of(const char *log)
{
    for (int i = 0; i < 200; i++) {
        char text[8192] = "";
        FILE *f = fopen(log, "r");
        size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        const char *p = strstr(text, "http: serving http://127.0.0.1:");
        if (p)
            return (unsigned)atoi(p + strlen("http: serving http://127.0.0.1:"));
        usleep(10 * 1000);
    }
    return 0;
}

/* ---- publish over HTTP ---- */

static int http_publish(const char *base, int seconds, uint64_t *count, int64_t *elapsed_ns)
{
    char url[160], body[BENCH_CORE_BODY_BYTES + 32];
    unsigned char text[BENCH_CORE_BODY_BYTES];
    const char *hs[] = {"Content-Type: application/json"};
    httpc *p = NULL;
    bench_core_body_fill(text);
    int n = snprintf(body, sizeof body, "{\"body\": \"%.*s\"}", BENCH_CORE_BODY_BYTES, (const char *)text);
    snprintf(url, sizeof url, "%s/api/v1/levels/low/messages", base);
    if (httpc_new(url, hs, 1, 10000, &p) != SL_OK)
        return bench_core_fail("cannot make an HTTP client for %s", url);
    int64_t start = bench_core_now_ns(), deadline = start + seconds * BENCH_CORE_NS_PER_S, t = start;
    int rc = 0;
    *count = 0;
    while (t < deadline && !bench_core_stopping() && *count < BENCH_CORE_MAX_OPS) {
        httpc_result r;
        if (httpc_send(p, body, (size_t)n, &r) != SL_OK || r.status != 200) {
            rc = bench_core_fail("publish over HTTP: %s", r.what);
            break;
        }
        ++*count;
        t = bench_core_now_ns();
    }
    *elapsed_ns = t - start;
    httpc_destroy(&p);
    return rc;
}

/* ---- consoles ---- */

typedef struct console {
    pthread_t id;
    int started;
    char base[96];
    atomic_int *stop;
    uint64_t events;
} console;

static size_t drop(char *data, size_t size, size_t n, void *cls)
{
    (void)data, (void)cls;
    return size * n;
}

static size_t events(char *data, size_t size, size_t n, void *cls)
{
    console *c = cls;
    for (size_t i = 0; i + 6 <= size * n; i++)
        if (!memcmp(data + i, "event:", 6))
            c->events++;
    return atomic_load(c->stop) ? 0 : size * n; /* 0 ends the transfer */
}

static int progress(void *cls, curl_off_t a, curl_off_t b, curl_off_t c2, curl_off_t d)
{
    console *c = cls;
    (void)a, (void)b, (void)c2, (void)d;
    return atomic_load(c->stop) != 0; /* non-zero aborts the transfer */
}

static void *console_run(void *arg)
{
    console *c = arg;
    static const char *const reads[] = {"/api/v1/session", "/api/v1/", "/api/v1/overview",
                                        "/api/v1/history?span=15m"};
    CURL *h = curl_easy_init();
    char url[160];
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drop);
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) { /* what a tab loads first */
        snprintf(url, sizeof url, "%s%s", c->base, reads[i]);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_perform(h);
    }
    snprintf(url, sizeof url, "%s/api/v1/events", c->base);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, events);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 600L);
    curl_easy_perform(h); /* until stopped */
    curl_easy_cleanup(h);
    return NULL;
}

static int with_consoles(const char *endpoint, const char *base, int seconds, double *per_s, uint64_t *evs)
{
    console cs[CONSOLES];
    atomic_int stop = 0;
    memset(cs, 0, sizeof cs);
    for (int i = 0; i < CONSOLES; i++) {
        snprintf(cs[i].base, sizeof cs[i].base, "%s", base);
        cs[i].stop = &stop;
        cs[i].started = pthread_create(&cs[i].id, NULL, console_run, &cs[i]) == 0;
    }
    usleep(1500 * 1000); /* the consoles have loaded and hold their streams */
    int rc = bench_client_window_rate(endpoint, seconds, WINDOW_MSGS, per_s);
    atomic_store(&stop, 1);
    *evs = 0;
    for (int i = 0; i < CONSOLES; i++)
        if (cs[i].started) {
            pthread_join(cs[i].id, NULL);
            *evs += cs[i].events;
        }
    return rc;
}

/* snapshot_cost reads the overview's snapshot.loop_us_per_s. */
static int snapshot_cost(const char *base, double *us)
{
    char url[160], body[65536] = "";
    snprintf(url, sizeof url, "%s/api/v1/overview", base);
    FILE *f = fmemopen(body, sizeof body - 1, "w");
    CURL *h = curl_easy_init();
    if (!f || !h) {
        if (f)
            fclose(f);
        curl_easy_cleanup(h);
        return bench_core_fail("out of memory reading the overview");
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    fclose(f);
    const char *p = strstr(body, "\"loop_us_per_s\": ");
    if (cc != CURLE_OK || !p)
        return bench_core_fail("the overview of %s does not say what the snapshot costs", base);
    *us = strtod(p + strlen("\"loop_us_per_s\": "), NULL);
    return 0;
}

int bench_http_rows(bench *b, const char *sluiced)
{
    char dir[96], base[96], row[96];
    snprintf(dir, sizeof dir, "%s/http", b->dir);
    if (mkdir(dir, 0700) != 0)
        return bench_core_fail("cannot create %s", dir);
    curl_global_init(CURL_GLOBAL_DEFAULT); /* counted: httpc's init and cleanup inside leave it up */
    const char *const extra[] = {"--http", "127.0.0.1:0", NULL};
    if (bench_spawn_start_with(&b->broker, sluiced, dir, extra, NULL, 0) != 0)
        return -1;
    unsigned port = port_of(b->broker.p.log);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", port);
    int rc = port ? 0 : bench_core_fail("the broker did not say its HTTP port");
    double zmq = 0, http = 0, bare = 0, cons = 0, r1[TURNS], r2[TURNS];
    uint64_t n, evs = 0;
    int64_t ns;
    int t1 = 0, t2 = 0;
    bench_core_progress("publish over HTTP and the ZeroMQ 1 x 1 row, in turns (%d x %d s each)", TURNS, b->seconds);
    for (int t = 0; t < TURNS && rc == 0 && !bench_core_stopping(); t++) {
        bench_worker w[1] = {{0}};
        double z = 0, h = 0;
        rc = bench_workers_run(b->broker.endpoint, b->seconds, w, 1, 0, bench_workers_produce, &n, &ns);
        if (rc == 0)
            z = bench_core_per_s(n, ns);
        if (rc == 0 && (rc = http_publish(base, b->seconds, &n, &ns)) == 0)
            h = bench_core_per_s(n, ns);
        zmq = z > zmq ? z : zmq;
        http = h > http ? h : http;
        if (rc == 0 && z > 0)
            r1[t1++] = h / z;
    }
    bench_core_progress("1 x 100 without and with %d consoles open, in turns (%d x %d s each)", CONSOLES, TURNS,
                        b->seconds);
    for (int t = 0; t < TURNS && rc == 0 && !bench_core_stopping(); t++) {
        double v = 0, w = 0;
        if ((rc = bench_client_window_rate(b->broker.endpoint, b->seconds, WINDOW_MSGS, &v)) == 0)
            bare = v > bare ? v : bare;
        if (rc == 0 && (rc = with_consoles(b->broker.endpoint, base, b->seconds, &w, &n)) == 0) {
            cons = w > cons ? w : cons;
            evs += n;
            if (v > 0)
                r2[t2++] = w / v;
        }
    }
    if (rc == 0 && !bench_core_stopping() && evs == 0)
        rc = bench_core_fail("the consoles received no event");
    double us = 0;
    if (rc == 0 && !bench_core_stopping())
        rc = snapshot_cost(base, &us);
    if (bench_spawn_stop(&b->broker) != 0)
        rc = -1;
    curl_global_cleanup();
    if (rc != 0 || bench_core_stopping())
        return rc;
    bench_table_add(&b->table, "confirmed enqueue, 1 producer, 1 outstanding, on the --http broker", zmq, 0, "msgs/s",
                    BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "publish over HTTP (POST .../messages), 1 client, 1 at a time", http, 0, "msgs/s",
                    BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "publish over HTTP / the ZeroMQ 1 x 1 row (median of turns)",
                    bench_core_median(r1, t1), 2, "x", BENCH_TABLE_AT_LEAST, TARGET_HTTP_VS_ZMQ);
    snprintf(row, sizeof row, "confirmed enqueue, 1 producer, %d outstanding, no console", WINDOW_MSGS);
    bench_table_add(&b->table, row, bare, 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    snprintf(row, sizeof row, "the same with %d consoles open (event streams)", CONSOLES);
    bench_table_add(&b->table, row, cons, 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "1 x 100 with 4 consoles / without (median of turns)", bench_core_median(r2, t2),
                    3, "x", BENCH_TABLE_AT_LEAST, TARGET_CONSOLES_KEEP);
    bench_table_add(&b->table, "the snapshot's cost to the loop's CPU, once a second", us, 1, "us/s",
                    BENCH_TABLE_AT_MOST, TARGET_SNAPSHOT_US_PER_S);
    return 0;
}
