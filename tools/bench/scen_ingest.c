/*
 * scen_ingest.c - ingest: RECORDS records of cost COST into a sink that
 * allows UNITS_PER_S units a second, metered by the broker, then the same
 * records sent by a naive retry loop, for comparison.
 *
 * The sink simulator counts requests, not units, so it runs at
 * UNITS_PER_S / COST requests a second (gcra, SINK_BURST deep: the slack of
 * a real API's bucket, which absorbs the jitter between the broker's
 * dispatch and the consumer's POST), while the broker's sink bucket is
 * UNITS_PER_S units a second with a burst of one record's cost, so records
 * leave evenly spaced. First every record is published (cost COST,
 * confirmed) with no consumer connected, and the broker's ETA for the
 * backlog is read; then the consumers start, and the run ends when the
 * sink's log holds a 200 for every record (or after the time limit). The
 * actual time is the span from the first request at the sink to the last
 * 200; the time from starting the consumers is printed too.
 *
 * The baseline is a fresh sink with the same limit and BASELINE_THREADS
 * threads that POST the records straight to it as fast as they can,
 * sending a record again at once after a 429, until each got its 200.
 *
 * Checks (each printed, and the exit status): every record reached the
 * sink exactly once (one 200 per record in its log), nothing was throttled
 * (no 429 in the log, no THROTTLED report at the broker), and the drain
 * took about RECORDS / (UNITS_PER_S / COST) seconds (within TOLERANCE of it).
 *
 * The CSV has one row per BIN_NS of both runs, in requests per second:
 * requests, 200s and 429s at the sink, metered and naive side by side.
 */
#include "scen_ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "scen_log.h"
#include "scen_plot.h"
#include "scen_rig.h"

#define RECORDS          10000
#define COST             10
#define UNITS_PER_S      20000
#define SINK_RATE        (UNITS_PER_S / COST)
#define SINK_BURST       50
#define LEVEL            1
#define CONSUMERS        2
#define WORKERS          32
#define BASELINE_THREADS 4
#define DEFAULT_LIMIT_S  60
#define BIN_NS           (200 * SCEN_NS_PER_MS)
#define POLL_NS          (50 * SCEN_NS_PER_MS)
#define TOLERANCE        0.10 /* of the expected time */
#define MAX_TRIES        1000000 /* sends of one record by the retry loop */
#define HTTP_TIMEOUT_MS  5000 /* for each request to the sink */

typedef struct ingest {
    const scen_opts *o;
    int limit_s;
    uint32_t sink_burst;   /* requests */
    uint32_t broker_burst; /* units: records x COST */
} ingest;

typedef struct run {
    scen_log *log;
    int64_t start_ns;   /* consumers (or threads) started */
    bool complete;      /* every record got a 200 */
    int64_t *backlog;   /* metered: the broker's depth at the end of each bin; -1 not sampled */
    size_t nbins;
} run;

typedef struct baseline {
    uint16_t port;
    httpc *http;
    int64_t deadline_ns;
    atomic_uint next;
    atomic_uint_fast64_t requests, errors;
} baseline;

/* run_wait polls the sink's log until every record has its 200, the limit,
 * or a signal; with a rig, it also samples the broker's depth at the end of
 * every bin and watches the consumers. */
static int run_wait(run *r, int64_t limit_ns, scen_rig *rig)
{
    size_t next_bin = 0;
    for (int i = 0; i < 1000000 && !scen_stopping(); i++) {
        if (scen_log_poll(r->log) != 0)
            return -1;
        int64_t now = scen_now_ns();
        sl_stats st;
        if (rig && r->backlog && now >= r->start_ns + (int64_t)(next_bin + 1) * BIN_NS &&
            next_bin < r->nbins) {
            if (scen_rig_stats(rig, &st) != 0)
                return -1;
            r->backlog[next_bin] = (int64_t)st.level[LEVEL].depth;
            next_bin = (size_t)((now - r->start_ns) / BIN_NS);
        }
        const scen_log_totals *t = scen_log_totals_get(r->log);
        if (t->ok >= RECORDS) {
            r->complete = true;
            break;
        }
        if (now > limit_ns)
            return scen_fail("only %" PRIu64 " of %d records reached the sink in time", t->ok,
                                  RECORDS);
        if (rig && !scen_rig_consumers_alive(rig))
            return scen_fail("a consumer exited during the run");
        scen_sleep_until(now + POLL_NS);
    }
    return 0;
}

/* metered runs the broker's half. *eta_ms gets the broker's ETA at the start
 * and *throttled its THROTTLED count at the end. */
static int metered(const ingest *g, run *r, uint64_t *eta_ms, uint64_t *throttled, char *consumers,
                   size_t size)
{
    const scen_opts *o = g->o;
    int limit_s = g->limit_s;
    const scen_rig_cfg cfg = {.sink_rate_per_s = SINK_RATE, .sink_burst = g->sink_burst,
                                   .rate_milli = UNITS_PER_S * 1000ull, .burst = g->broker_burst,
                                   .consumers = CONSUMERS, .workers = WORKERS};
    scen_rig rig;
    char path[SCEN_PATH_BYTES + 64];
    sl_stats st = {.nlevels = 0};
    int failed = 0;
    scen_note("ingest: starting sluiced and sluice-sink; output in %s", o->out);
    if (scen_rig_open(&rig, o, &cfg) != 0)
        return -1;
    uint64_t confirmed = scen_rig_publish(&rig, RECORDS, LEVEL, COST);
    if (confirmed != RECORDS) {
        failed = scen_fail("only %" PRIu64 " of %d records were confirmed", confirmed, RECORDS);
        goto close;
    }
    if (scen_rig_stats(&rig, &st) != 0) {
        failed = -1;
        goto close;
    }
    *eta_ms = st.level[LEVEL].eta_ms;
    scen_note("%d records published; the broker's ETA for them: %.3f s", RECORDS, *eta_ms / 1000.0);
    r->nbins = (size_t)limit_s * 5 + 10;
    r->backlog = malloc(r->nbins * sizeof *r->backlog);
    for (size_t i = 0; r->backlog && i < r->nbins; i++)
        r->backlog[i] = -1;
    r->start_ns = scen_now_ns();
    snprintf(path, sizeof path, "%s/sink.log", o->out);
    if (scen_log_new(path, r->start_ns, BIN_NS, r->nbins, RECORDS, &r->log) != 0 ||
        scen_rig_consumers_start(&rig) != 0 ||
        run_wait(r, r->start_ns + limit_s * SCEN_NS_PER_S, &rig) != 0) {
        failed = -1;
        goto close;
    }
    if (rig.post)
        snprintf(consumers, size, "%d x `sluice consume --post` x %d workers", CONSUMERS, WORKERS);
    else
        snprintf(consumers, size, "%u in-process threads", rig.inproc);
    if (scen_rig_stats(&rig, &st) != 0)
        failed = -1;
    for (unsigned l = 0; !failed && l < st.nlevels; l++)
        *throttled += st.level[l].throttled;
close:
    if (scen_rig_close(&rig) != 0)
        failed = -1;
    if (r->log && scen_log_poll(r->log) != 0)
        failed = -1;
    return failed;
}

static void *baseline_run(void *arg)
{
    baseline *b = arg;
    httpc_result a;
    char body[SCEN_LOG_BODY_BYTES];
    for (int i = 0; i < RECORDS && !scen_stopping(); i++) {
        unsigned seq = atomic_fetch_add(&b->next, 1);
        if (seq >= RECORDS)
            break;
        size_t len = scen_log_body(body, seq, scen_now_ns(), LEVEL);
        for (int attempt = 0; attempt < MAX_TRIES && scen_now_ns() < b->deadline_ns; attempt++) {
            int rc = httpc_send(b->http, body, len, &a);
            atomic_fetch_add(&b->requests, 1);
            if (rc != SL_OK || a.status == 0)
                atomic_fetch_add(&b->errors, 1);
            else if (a.status == 200)
                break;
        }
    }
    return NULL;
}

/* naive runs the baseline against a fresh sink with the same limit. */
static int naive(const ingest *g, run *r, uint64_t *requests)
{
    const scen_opts *o = g->o;
    int limit_s = g->limit_s;
    proc sink;
    baseline b = {.port = 0};
    pthread_t t[BASELINE_THREADS];
    char path[SCEN_PATH_BYTES + 64];
    unsigned started = 0;
    int failed = 0;
    scen_note("baseline: %d threads POST straight to a fresh sink, retrying at once on 429",
                   BASELINE_THREADS);
    if (scen_rig_sink_start(o, SINK_RATE, g->sink_burst, "baseline-sink.log", "baseline-sink.out",
                                 &sink, &b.port) != 0)
        return -1;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", (unsigned)b.port);
    int rc = httpc_new(url, NULL, 0, HTTP_TIMEOUT_MS, &b.http);
    if (rc != SL_OK) {
        proc_stop(&sink, 20000);
        return scen_fail("cannot make an HTTP client for %s: %s", url, sl_strerror(rc));
    }
    r->start_ns = scen_now_ns();
    b.deadline_ns = r->start_ns + limit_s * SCEN_NS_PER_S;
    snprintf(path, sizeof path, "%s/baseline-sink.log", o->out);
    if (scen_log_new(path, r->start_ns, BIN_NS, (size_t)limit_s * 5 + 10, RECORDS, &r->log) != 0)
        failed = -1;
    for (unsigned i = 0; !failed && i < BASELINE_THREADS; i++) {
        int err = pthread_create(&t[i], NULL, baseline_run, &b);
        if (err)
            failed = scen_fail("cannot start a baseline thread: %s", strerror(err));
        else
            started++;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    httpc_destroy(&b.http); /* the threads have ended: their handles are freed */
    if (proc_stop(&sink, 20000) != 0)
        failed = -1;
    if (r->log && (scen_log_poll(r->log) != 0 || run_wait(r, 0, NULL) != 0))
        failed = -1;
    *requests = atomic_load(&b.requests);
    if (atomic_load(&b.errors))
        scen_note("baseline: %" PRIu64 " requests got no answer", (uint64_t)atomic_load(&b.errors));
    return failed;
}

static int csv_write(const scen_opts *o, const run *m, const run *n, double *max_per_s)
{
    char path[SCEN_PATH_BYTES + 64];
    snprintf(path, sizeof path, "%s/ingest.csv", o->out);
    FILE *f = fopen(path, "w");
    if (!f)
        return scen_fail("cannot create %s: %s", path, strerror(errno));
    const run *runs[2] = {m, n};
    size_t bins = 0;
    for (int i = 0; i < 2; i++) {
        const scen_log_totals *t = runs[i]->log ? scen_log_totals_get(runs[i]->log) : NULL;
        if (t && t->last_ns > runs[i]->start_ns) {
            size_t b = (size_t)((t->last_ns - runs[i]->start_ns) / BIN_NS) + 2;
            bins = b > bins ? b : bins;
        }
    }
    double per_s = (double)SCEN_NS_PER_S / (double)BIN_NS;
    fprintf(f, "Second,MeteredRequests,MeteredExecuted,Metered429,RetryRequests,RetryExecuted,Retry429,"
               "MeteredBacklog\n");
    for (size_t i = 0; i < bins; i++) {
        fprintf(f, "%.1f", (double)(i + 1) * (double)BIN_NS / (double)SCEN_NS_PER_S);
        for (int k = 0; k < 2; k++) {
            scen_log_bin z = {0};
            const scen_log_bin *b = runs[k]->log ? scen_log_bin_at(runs[k]->log, i) : &z;
            fprintf(f, ",%.0f,%.0f,%.0f", b->arrived * per_s, b->ok * per_s, b->throttled * per_s);
            if (b->arrived * per_s > *max_per_s)
                *max_per_s = b->arrived * per_s;
        }
        fputc(',', f);
        if (m->backlog && i < m->nbins && m->backlog[i] >= 0)
            fprintf(f, "%" PRId64, m->backlog[i]);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        return scen_fail("writing %s: %s", path, strerror(errno));
    return 0;
}

static int chart(const scen_opts *o, uint64_t metered_429, double max_per_s, uint64_t eta_ms)
{
    char data[SCEN_PATH_BYTES + 64], title[200];
    scen_plot_data(o, "ingest.csv", data, sizeof data);
    snprintf(title, sizeof title,
             "ingest: %d records of cost %d into a sink allowing %d units/s (%d requests/s)", RECORDS,
             COST, UNITS_PER_S, SINK_RATE);
    FILE *f = scen_plot_open(o, "ingest", title);
    if (!f)
        return -1;
    /* a log scale shows both runs; a rate of 0 has no place on it, so the
     * metered run's 429s are also counted in the key */
    fprintf(f,
            "set xlabel 'seconds from the start of each run'\n"
            "set ylabel 'per second (log scale)'\nset logscale y\nset yrange [10:%.0f]\n"
            "set key below horizontal maxcols 3\n"
            "set y2label 'metered backlog (records)'\nset y2range [0:%d]\nset y2tics\nset ytics nomirror\n"
            "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dt 4 lc rgb '#7f7f7f'\n"
            "set label \"broker's ETA at the start: %.3f s\" at %.3f, graph 0.4 right offset -0.5,0 tc rgb '#7f7f7f'\n"
            "plot '%s' using ($1-0.1):($2 > 0 ? $2 : 1/0) with lines lw 2.5 lc rgb '#2ca02c' title 'metered by sluice: requests/s', \\\n"
            "     '' using ($1-0.1):($4 > 0 ? $4 : 1/0) with points pt 7 lc rgb '#2ca02c' title 'metered by sluice: 429/s (%" PRIu64 " in all)', \\\n"
            "     '' using ($1-0.1):($5 > 0 ? $5 : 1/0) with lines lw 1.5 lc rgb '#1f77b4' title 'naive retry loop: requests/s', \\\n"
            "     '' using ($1-0.1):($7 > 0 ? $7 : 1/0) with lines lw 1.5 lc rgb '#d62728' title 'naive retry loop: 429/s', \\\n"
            "     %d with lines dt 3 lc rgb '#000000' title 'sink limit (requests/s)', \\\n"
            "     '' using 1:8 axes x1y2 with lines lw 2 dt 2 lc rgb '#7f7f7f' title 'metered: backlog (right axis)'\n",
            max_per_s > SINK_RATE ? max_per_s * 3 : SINK_RATE * 3.0, RECORDS * 6 / 5, eta_ms / 1000.0,
            eta_ms / 1000.0, eta_ms / 1000.0, eta_ms / 1000.0, data, metered_429, SINK_RATE);
    return scen_plot_close(o, f, "ingest");
}

/* check prints one check and returns whether it passed. */
static bool check(bool ok, const char *what)
{
    printf("  check: %-58s %s\n", what, ok ? "PASS" : "FAIL");
    return ok;
}

static int summary(const ingest *g, const run *m, const run *n, uint64_t eta_ms, uint64_t throttled,
                   uint64_t naive_requests, const char *consumers)
{
    const scen_log_totals *t = scen_log_totals_get(m->log);
    uint64_t once = 0, dup = 0, missing = 0;
    for (uint64_t i = 0; i < RECORDS; i++) {
        unsigned k = scen_log_seq_ok(m->log, i);
        once += k == 1, dup += k > 1, missing += k == 0;
    }
    double expect_s = (double)RECORDS / SINK_RATE;
    double drain_s = t->last_ok_ns > t->first_ns ? (double)(t->last_ok_ns - t->first_ns) / 1e9 : 0;
    double from_start_s = t->last_ok_ns > m->start_ns ? (double)(t->last_ok_ns - m->start_ns) / 1e9 : 0;
    printf("\n== ingest: %d records of cost %d, sink %d units/s ==\n", RECORDS, COST, UNITS_PER_S);
    printf("  sink: sluice-sink gcra %d requests/s burst %u; broker sink %d units/s burst %u (%u record%s); "
           "consumers: %s\n",
           SINK_RATE, g->sink_burst, UNITS_PER_S, g->broker_burst, g->broker_burst / COST,
           g->broker_burst == COST ? "" : "s", consumers);
    printf("  ETA at the start (broker): %.3f s; actual: %.3f s from the first request at the sink to "
           "the last 200 (%.3f s from starting the consumers)\n",
           eta_ms / 1000.0, drain_s, from_start_s);
    printf("  metered: %" PRIu64 " requests, %" PRIu64 " 200s, %" PRIu64 " 429s, broker THROTTLED %" PRIu64
           "; records once %" PRIu64 ", more than once %" PRIu64 ", missing %" PRIu64 "\n",
           t->arrived, t->ok, t->throttled, throttled, once, dup, missing);
    scen_log_conformance(m->log, stdout, SINK_RATE, g->broker_burst / COST, SINK_RATE, g->sink_burst);
    bool ok = check(once == RECORDS && !dup && m->complete, "every record reached the sink exactly once");
    ok &= check(t->throttled == 0 && throttled == 0, "nothing throttled (0 429s, 0 THROTTLED)");
    ok &= check(fabs(drain_s - expect_s) <= TOLERANCE * expect_s, "finished in about 5 s (within 10%)");
    if (n->log) {
        const scen_log_totals *b = scen_log_totals_get(n->log);
        double naive_s = b->last_ok_ns > b->first_ns ? (double)(b->last_ok_ns - b->first_ns) / 1e9 : 0;
        uint64_t once_b = 0;
        for (uint64_t i = 0; i < RECORDS; i++)
            once_b += scen_log_seq_ok(n->log, i) == 1;
        printf("  naive retry loop (%d threads, immediate retry on 429): %" PRIu64 " requests (%" PRIu64
               " sent) for %" PRIu64 " records = %.2fx the metered run's %" PRIu64 "; %" PRIu64
               " 429s; %.3f s; records once %" PRIu64 "%s\n",
               BASELINE_THREADS, b->arrived, naive_requests, b->ok,
               t->arrived ? (double)b->arrived / (double)t->arrived : 0.0, t->arrived, b->throttled,
               naive_s, once_b, n->complete ? "" : " (incomplete)");
    }
    return ok ? 0 : -1;
}

int scen_ingest_run(const scen_opts *o)
{
    const ingest g = {.o = o,
                      .limit_s = o->seconds ? o->seconds : DEFAULT_LIMIT_S,
                      .sink_burst = o->sink_burst ? o->sink_burst : SINK_BURST,
                      .broker_burst = (o->broker_burst ? o->broker_burst : 1) * COST};
    run m = {.log = NULL}, n = {.log = NULL};
    uint64_t eta_ms = 0, throttled = 0, naive_requests = 0;
    char consumers[64] = "none";
    int failed = metered(&g, &m, &eta_ms, &throttled, consumers, sizeof consumers);
    if (!scen_stopping() && naive(&g, &n, &naive_requests) != 0)
        failed = -1;
    int drawn = -1;
    double max_per_s = 0;
    if (m.log) {
        if (csv_write(o, &m, &n, &max_per_s) != 0)
            failed = -1;
        else if ((drawn = chart(o, scen_log_totals_get(m.log)->throttled, max_per_s, eta_ms)) != 0)
            failed = -1;
        if (summary(&g, &m, &n, eta_ms, throttled, naive_requests, consumers) != 0)
            failed = -1;
        printf("  files: %s/ingest.csv, %s/ingest.png%s\n", o->out, o->out,
               drawn ? " (no chart: see above)" : "");
    }
    scen_log_destroy(&m.log);
    scen_log_destroy(&n.log);
    free(m.backlog);
    return failed;
}
