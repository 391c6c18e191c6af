/*
 * scen_shared.c - shared-sink: four brokers share one sink's rate through
 * capacity leases in Redis, each with its own backlog and its own
 * `sluice consume --post` consumer, and the sink's log says whether the
 * sum of them kept to the limit and used it.
 *
 * The rig: a redis-server of its own (no port, a unix socket in a temporary
 * directory, no persistence); BROKERS sluiced, each started with --coord on
 * that socket, one coord name and --reserved-rate RESERVED; one sluice-sink
 * at SINK_RATE/s (gcra). The shared limit is set once, through broker 1
 * (`sink set --rate` writes it to Redis for all); each broker's own sink
 * burst is set on it. Every broker is then given a backlog larger than its
 * fair share can drain in the run (published with no consumer connected),
 * the consumers start, and the run lasts --seconds (default 40).
 *
 * Every second the scenario reads the sink's log and each broker's stats
 * (slices held, depth, Redis commands sent) into a CSV row; the chart shows
 * the sink's requests and 200s against its limit, and each broker's slices.
 *
 * Printed from the sink's log: the 429s; the most arrivals in any 0.1 s, 1 s
 * and 10 s window against rate x window + the brokers' bursts together
 * (scen_log_conformance); utilisation (200s / limit) over the seconds while
 * every broker still had a backlog, counted from the first second the
 * leases held at least 95 % of the slices (a fresh Redis starts in learning
 * mode for one TTL, so the first grant comes one TTL after start); and the
 * Redis commands per broker per second at steady state.
 *
 * Costs: BROKERS brokers, BROKERS consumer processes of WORKERS threads and
 * the sink on this machine: on two cores the consumers, not the leases, may
 * be what limits the rate; the summary says how much of the limit was used.
 */
#include "scen_shared.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scen_log.h"
#include "scen_plot.h"
#include "scen_proc.h"
#include "scen_rig.h"
#include "sluice.h"

#define BROKERS         4
#define SINK_RATE       2000
#define SINK_BURST      80  /* requests: the brokers' bursts together, and the consumers' jitter */
#define BROKER_BURST    10  /* each broker's sink burst, in messages */
#define RESERVED        100 /* each broker's reserved rate, per second */
#define WORKERS         32
#define DEFAULT_S       40
#define BACKLOG_SLACK   1.5 /* a backlog this many times what a fair share drains in the run */
#define SEND_WINDOW     256
#define READY_MS        20000
#define STOP_MS         20000
#define CLIENT_TIMEOUT_MS 5000
#define WARM_SLICES_PCT 95

typedef struct shared {
    const scen_opts *o;
    char tmp[64], redis_sock[128], url[64];
    proc redis, sink, broker[BROKERS], consumer[BROKERS];
    char endpoint[BROKERS][128];
    sl_client *c[BROKERS];
    uint16_t port;
    uint32_t sink_burst, broker_burst;
    int seconds;
    /* per second of the run */
    uint64_t *slices, *depth; /* [second * BROKERS + broker] */
    uint64_t ops_start[BROKERS], ops_end[BROKERS];
    int64_t ops_start_ns, ops_end_ns;
} shared;

static int redis_start(shared *s)
{
    char log[SCEN_PATH_BYTES + 64];
    snprintf(s->redis_sock, sizeof s->redis_sock, "%s/redis.sock", s->tmp);
    snprintf(log, sizeof log, "%s/redis.log", s->o->out);
    char *const argv[] = {"redis-server", "--port", "0", "--unixsocket", s->redis_sock, "--save", "",
                          "--appendonly", "no", NULL};
    if (scen_proc_start(&s->redis, "redis-server", argv, log, false, 0) != 0)
        return scen_fail("cannot start redis-server (Debian: apt-get install redis-server)");
    struct stat st;
    for (int i = 0; i < 400 && !scen_stopping(); i++) { /* 10 s at most */
        if (stat(s->redis_sock, &st) == 0)
            return 0;
        if (!proc_running(&s->redis))
            break;
        scen_sleep_until(scen_now_ns() + 25 * SCEN_NS_PER_MS);
    }
    return scen_fail("redis-server did not open %s (see %s)", s->redis_sock, log);
}

static int brokers_start(shared *s)
{
    char exe[SCEN_PATH_BYTES + 16], data[128], log[SCEN_PATH_BYTES + 64], coord[160], reserved[16];
    snprintf(exe, sizeof exe, "%s/sluiced", s->o->bin);
    snprintf(coord, sizeof coord, "unix://%s", s->redis_sock);
    snprintf(reserved, sizeof reserved, "%d", RESERVED);
    for (int i = 0; i < BROKERS; i++) {
        snprintf(data, sizeof data, "%s/data%d", s->tmp, i + 1);
        snprintf(s->endpoint[i], sizeof s->endpoint[i], "ipc://%s/b%d.sock", s->tmp, i + 1);
        snprintf(log, sizeof log, "%s/sluiced-%d.log", s->o->out, i + 1);
        char *const argv[] = {exe, "--data", data, "--listen", s->endpoint[i], "--coord", coord,
                              "--coord-name", "bench", "--reserved-rate", reserved, NULL};
        if (scen_proc_start(&s->broker[i], "sluiced", argv, log, true, READY_MS) != 0)
            return -1;
        sl_options opts = {.timeout_ms = CLIENT_TIMEOUT_MS};
        int rc = sl_connect(s->endpoint[i], &opts, &s->c[i]);
        if (rc == SL_OK) /* the limit once, for all, through broker 1; each its own burst */
            rc = sl_sink_set(s->c[i], i == 0 ? (uint64_t)SINK_RATE * 1000 : SL_UNCHANGED, s->broker_burst,
                             SL_UNCHANGED);
        if (rc != SL_OK)
            return scen_fail("setting broker %d's sink: %s (%s)", i + 1, sl_strerror(rc),
                             s->c[i] ? sl_last_error(s->c[i]) : "");
    }
    return 0;
}

/* backlog_publish gives broker i n messages, SEND_WINDOW in flight; their
 * bodies carry sequence numbers from seq0. Returns 0 or -1, reported. */
static int backlog_publish(shared *s, int i, uint64_t seq0, uint64_t n)
{
    char body[SCEN_LOG_BODY_BYTES];
    uint64_t sent = 0, settled = 0;
    sl_confirm k;
    for (uint64_t step = 0; step < 4 * n && settled < n && !scen_stopping(); step++) {
        if (sent < n && sent - settled < SEND_WINDOW) {
            sl_put m = {.body = body, .level = 1};
            m.body_len = scen_log_body(body, seq0 + sent, scen_now_ns(), 1);
            if (sl_send_async(s->c[i], &m, NULL) != SL_OK)
                break;
            sent++;
            continue;
        }
        if (sl_send_wait(s->c[i], 5000, &k) != SL_OK || k.err != SL_OK)
            return scen_fail("publishing broker %d's backlog: %s", i + 1, sl_last_error(s->c[i]));
        settled++;
    }
    return settled == n ? 0 : scen_fail("broker %d's backlog: %" PRIu64 " of %" PRIu64, i + 1, settled, n);
}

static int consumers_start(shared *s)
{
    char exe[SCEN_PATH_BYTES + 16], workers[16], log[SCEN_PATH_BYTES + 64];
    snprintf(exe, sizeof exe, "%s/sluice", s->o->bin);
    snprintf(workers, sizeof workers, "%d", WORKERS);
    for (int i = 0; i < BROKERS; i++) {
        snprintf(log, sizeof log, "%s/consumer-%d.log", s->o->out, i + 1);
        char *const argv[] = {exe, "-b", s->endpoint[i], "consume", "--post", s->url, "--workers", workers, NULL};
        if (scen_proc_start(&s->consumer[i], "sluice consume", argv, log, false, 0) != 0)
            return -1;
    }
    return 0;
}

/* sample reads every broker's stats into second sec's row. */
static int sample(shared *s, int sec, bool ops_start, bool ops_end)
{
    for (int i = 0; i < BROKERS; i++) {
        sl_stats st;
        int rc = sl_stats_get(s->c[i], &st);
        if (rc != SL_OK)
            return scen_fail("reading broker %d's stats: %s", i + 1, sl_strerror(rc));
        uint64_t depth = 0;
        for (unsigned l = 0; l < st.nlevels; l++)
            depth += st.level[l].depth;
        s->slices[sec * BROKERS + i] = st.coord.slices_held;
        s->depth[sec * BROKERS + i] = depth;
        if (ops_start)
            s->ops_start[i] = st.coord.ops;
        if (ops_end)
            s->ops_end[i] = st.coord.ops;
    }
    if (ops_start)
        s->ops_start_ns = scen_now_ns();
    if (ops_end)
        s->ops_end_ns = scen_now_ns();
    return 0;
}

static int csv_and_chart(shared *s, const scen_log *l)
{
    char path[SCEN_PATH_BYTES + 64], data[SCEN_PATH_BYTES + 64], title[200];
    snprintf(path, sizeof path, "%s/shared-sink.csv", s->o->out);
    FILE *f = fopen(path, "w");
    if (!f)
        return scen_fail("cannot write %s: %s", path, strerror(errno));
    fprintf(f, "Second,Requests,Success,Throttled");
    for (int i = 0; i < BROKERS; i++)
        fprintf(f, ",Slices%d", i + 1);
    for (int i = 0; i < BROKERS; i++)
        fprintf(f, ",Depth%d", i + 1);
    fputc('\n', f);
    for (int sec = 0; sec < s->seconds; sec++) {
        const scen_log_bin *b = scen_log_bin_at(l, (size_t)sec);
        fprintf(f, "%d,%u,%u,%u", sec + 1, b->arrived, b->ok, b->throttled);
        for (int i = 0; i < BROKERS; i++)
            fprintf(f, ",%" PRIu64, s->slices[sec * BROKERS + i]);
        for (int i = 0; i < BROKERS; i++)
            fprintf(f, ",%" PRIu64, s->depth[sec * BROKERS + i]);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        return scen_fail("writing %s: %s", path, strerror(errno));
    scen_plot_data(s->o, "shared-sink.csv", data, sizeof data);
    snprintf(title, sizeof title, "shared-sink: %d brokers, leases in Redis, one sink at %d/s", BROKERS, SINK_RATE);
    FILE *g = scen_plot_open(s->o, "shared-sink", title);
    if (!g)
        return -1;
    fprintf(g,
            "set xlabel 'seconds from the start of the consumers'\nset ylabel 'requests per second at the sink'\n"
            "set yrange [0:%d]\nset y2label 'slices held (of 100)'\nset y2range [0:105]\nset y2tics\n"
            "set ytics nomirror\nset key below horizontal maxcols 4\n"
            "plot '%s' using 1:2 with lines lw 2.5 lc rgb '#1f77b4' title 'requests/s', \\\n"
            "     '' using 1:3 with lines lw 1.5 lc rgb '#2ca02c' title '200/s', \\\n"
            "     '' using 1:($4 > 0 ? $4 : 1/0) with points pt 7 lc rgb '#d62728' title '429/s', \\\n"
            "     %d with lines dt 3 lc rgb '#000000' title 'sink limit', \\\n"
            "     '' using 1:5 axes x1y2 with lines dt 2 title 'broker 1 slices', \\\n"
            "     '' using 1:6 axes x1y2 with lines dt 2 title 'broker 2 slices', \\\n"
            "     '' using 1:7 axes x1y2 with lines dt 2 title 'broker 3 slices', \\\n"
            "     '' using 1:8 axes x1y2 with lines dt 2 title 'broker 4 slices'\n",
            SINK_RATE * 3 / 2, data, SINK_RATE);
    return scen_plot_close(s->o, g, "shared-sink");
}

/* summary prints the figures and returns whether the checks passed. */
static bool summary(shared *s, const scen_log *l)
{
    const scen_log_totals *t = scen_log_totals_get(l);
    int warm = -1, last = -1;
    for (int sec = 0; sec < s->seconds; sec++) {
        uint64_t held = 0;
        bool all_backlogged = true;
        for (int i = 0; i < BROKERS; i++) {
            held += s->slices[sec * BROKERS + i];
            all_backlogged = all_backlogged && s->depth[sec * BROKERS + i] > 0;
        }
        if (warm < 0 && held >= WARM_SLICES_PCT)
            warm = sec + 1; /* the first whole second after the leases were in place */
        if (all_backlogged)
            last = sec;
    }
    uint64_t ok = 0;
    int n = 0;
    for (int sec = warm; warm >= 0 && sec <= last; sec++, n++)
        ok += scen_log_bin_at(l, (size_t)sec)->ok;
    double util = n > 0 ? 100.0 * (double)ok / ((double)n * SINK_RATE) : 0;
    double ops = 0;
    for (int i = 0; i < BROKERS; i++)
        ops += (double)(s->ops_end[i] - s->ops_start[i]);
    double span_s = (double)(s->ops_end_ns - s->ops_start_ns) / SCEN_NS_PER_S;
    ops = span_s > 0 ? ops / BROKERS / span_s : 0;
    printf("shared-sink: %d brokers (reserved %d/s each, sink burst %" PRIu32 " each), one sink at %d/s "
           "(gcra, burst %" PRIu32 "), %d consumers x %d workers, %d s\n",
           BROKERS, RESERVED, s->broker_burst, SINK_RATE, s->sink_burst, BROKERS, WORKERS, s->seconds);
    printf("  sink: %" PRIu64 " requests, %" PRIu64 " x 200, %" PRIu64 " x 429, %" PRIu64 " other\n", t->arrived,
           t->ok, t->throttled, t->other);
    int over = scen_log_conformance(l, stdout, SINK_RATE, (double)BROKERS * s->broker_burst, SINK_RATE,
                                    s->sink_burst);
    if (warm >= 0 && n > 0)
        printf("  utilisation while every broker was backlogged: %.1f %% (seconds %d-%d, from the first with "
               ">= %d %% of the slices held)\n",
               util, warm + 1, last + 1, WARM_SLICES_PCT);
    else
        printf("  utilisation: not measured (the leases never held %d %% of the slices while backlogged)\n",
               WARM_SLICES_PCT);
    printf("  Redis commands per broker per second at steady state: %.2f\n", ops);
    bool pass = true;
    printf("  check: %-58s %s\n", "0 x 429 at the sink", t->throttled == 0 ? "PASS" : "FAIL");
    pass = pass && t->throttled == 0;
    printf("  check: %-58s %s\n", "no window above rate x window + the brokers' bursts", over == 0 ? "PASS" : "FAIL");
    pass = pass && over == 0;
    printf("  check: %-58s %s\n", "utilisation >= 95 % while backlogged", util >= 95.0 ? "PASS" : "FAIL");
    pass = pass && util >= 95.0;
    printf("  check: %-58s %s\n", "<= 2 Redis commands per broker per second", ops <= 2.0 ? "PASS" : "FAIL");
    pass = pass && ops <= 2.0;
    printf("  files: %s/shared-sink.csv, %s/shared-sink.png\n", s->o->out, s->o->out);
    return pass;
}

static int stop_all(shared *s)
{
    int rc = 0;
    for (int i = 0; i < BROKERS; i++)
        if (s->consumer[i].pid > 0 && proc_stop(&s->consumer[i], STOP_MS) != 0)
            rc = -1;
    if (s->sink.pid > 0 && proc_stop(&s->sink, STOP_MS) != 0)
        rc = -1;
    for (int i = 0; i < BROKERS; i++) {
        sl_close(&s->c[i]);
        if (s->broker[i].pid > 0 && proc_stop(&s->broker[i], STOP_MS) != 0)
            rc = -1;
    }
    if (s->redis.pid > 0 && proc_stop(&s->redis, STOP_MS) != 0)
        rc = -1;
    return rc;
}

int scen_shared_run(const scen_opts *o)
{
    shared s = {.o = o, .seconds = o->seconds ? o->seconds : DEFAULT_S};
    s.sink_burst = o->sink_burst ? o->sink_burst : SINK_BURST;
    s.broker_burst = o->broker_burst ? o->broker_burst : BROKER_BURST;
    scen_log *l = NULL;
    int rc = -1;
    s.slices = calloc((size_t)s.seconds * BROKERS, sizeof *s.slices);
    s.depth = calloc((size_t)s.seconds * BROKERS, sizeof *s.depth);
    snprintf(s.tmp, sizeof s.tmp, "/tmp/sluice-bench-XXXXXX");
    if (!s.slices || !s.depth || !mkdtemp(s.tmp)) {
        s.tmp[0] = '\0';
        scen_fail("out of memory, or cannot create a directory in /tmp");
        goto out;
    }
    if (redis_start(&s) != 0 || brokers_start(&s) != 0)
        goto out;
    if (scen_rig_sink_start(o, SINK_RATE, s.sink_burst, "sink.log", "sink.out", &s.sink, &s.port) != 0)
        goto out;
    snprintf(s.url, sizeof s.url, "http://127.0.0.1:%u/", (unsigned)s.port);
    uint64_t per = (uint64_t)((double)s.seconds * SINK_RATE / BROKERS * BACKLOG_SLACK);
    scen_note("publishing a backlog of %" PRIu64 " to each of %d brokers", per, BROKERS);
    for (int i = 0; i < BROKERS; i++)
        if (backlog_publish(&s, i, (uint64_t)i * per, per) != 0)
            goto out;
    char log_path[SCEN_PATH_BYTES + 64];
    snprintf(log_path, sizeof log_path, "%s/sink.log", o->out);
    if (consumers_start(&s) != 0)
        goto out;
    int64_t start_ns = scen_now_ns();
    if (scen_log_new(log_path, start_ns, SCEN_NS_PER_S, (size_t)s.seconds, per * BROKERS, &l) != 0)
        goto out;
    scen_note("running %d s", s.seconds);
    for (int sec = 0; sec < s.seconds && !scen_stopping(); sec++) {
        scen_sleep_until(start_ns + (int64_t)(sec + 1) * SCEN_NS_PER_S);
        if (scen_log_poll(l) != 0 || sample(&s, sec, sec == s.seconds / 4, sec == s.seconds - 1) != 0)
            goto out;
        for (int i = 0; i < BROKERS; i++)
            if (!proc_running(&s.consumer[i])) {
                scen_fail("consumer %d exited during the run (see %s/consumer-%d.log)", i + 1, o->out, i + 1);
                goto out;
            }
    }
    for (int i = 0; i < BROKERS; i++)
        if (s.consumer[i].pid > 0 && proc_stop(&s.consumer[i], STOP_MS) != 0)
            scen_note("consumer %d did not stop cleanly", i + 1);
    if (proc_stop(&s.sink, STOP_MS) != 0 || scen_log_poll(l) != 0)
        goto out;
    int plotted = csv_and_chart(&s, l);
    rc = summary(&s, l) && plotted == 0 ? 0 : -1;
out:
    if (stop_all(&s) != 0)
        rc = -1;
    scen_log_destroy(&l);
    if (s.tmp[0])
        scen_proc_rmtree(s.tmp);
    free(s.slices);
    free(s.depth);
    return rc;
}
