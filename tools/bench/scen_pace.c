/*
 * scen_pace.c - what the sink sees, measured at sluice-sink's own arrival
 * log, when one `sluice consume --post` process with WORKERS HTTP workers
 * carries a backlog to it.
 *
 *   pace         broker 190/s burst 5, sink 200/s burst 5, 1,500 messages:
 *                0 x 429, utilisation of the sink >= 95 %
 *   pace-stress  the same beside `stress-ng --cpu 2` (two busy cores):
 *                0 x 429, utilisation >= 90 %
 *   pace-exact   the broker exactly at the sink's limit (200/s burst 5),
 *                10,000 messages: at most 1 x 429 per 10,000
 *   pace-429     broker 500/s burst 5, sink 500/s burst 10, 6,000
 *                messages; 5 s into the run the sink answers one request
 *                429 (PUT /_limit?inject=1): the rate over 0.5 s is back to
 *                >= 95 % of 500/s within 3 s of it
 *
 * Every message is published (confirmed) before the consumer starts, so
 * the run is one backlog draining. Utilisation is the 200s over the span
 * from the first request at the sink to the last 200, against the sink's
 * rate. Every scenario also checks that each message got exactly one 200,
 * and prints the busiest 0.1 s and 1 s windows against the sink's bound
 * (rate x window + burst). The CSV has one row per BIN_NS: requests, 200s
 * and 429s per second.
 */
#include "scen_pace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scen_log.h"
#include "scen_plot.h"
#include "scen_proc.h"
#include "scen_rig.h"

#define WORKERS      8
#define LEVEL        1
#define BIN_NS       (100 * SCEN_NS_PER_MS)
#define POLL_NS      (50 * SCEN_NS_PER_MS)
#define RECOVER_WINDOW_NS (500 * SCEN_NS_PER_MS)

typedef struct pace_case {
    const char *name, *what;
    uint32_t broker_rate, broker_burst, sink_rate, sink_burst;
    unsigned messages;
    bool stress;          /* stress-ng --cpu 2 beside it */
    int inject_after_s;   /* 0: none */
    double min_util;      /* 0: not a target */
    double max_429_per_10k;
    int limit_s;
} pace_case;

static const pace_case cases[] = {
    {"pace", "broker 190/s burst 5, sink 200/s burst 5, 8 HTTP workers, 1,500 messages",
     190, 5, 200, 5, 1500, false, 0, 0.95, 0, 60},
    {"pace-stress", "the same beside stress-ng --cpu 2", 190, 5, 200, 5, 1500, true, 0, 0.90, 0, 60},
    {"pace-exact", "broker exactly at the sink's limit, 200/s burst 5, 10,000 messages",
     200, 5, 200, 5, 10000, false, 0, 0, 1, 120},
    {"pace-429", "one 429 injected by the sink into a clean run at 500/s", 500, 5, 500, 10, 6000, false, 5, 0, 0,
     60},
};

/* inject asks the sink on 127.0.0.1:port to answer its next request 429.
 * Returns 0, or -1, reported. */
static int inject(uint16_t port)
{
    static const char req[] = "PUT /_limit?inject=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
                              "Connection: close\r\n\r\n";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char reply[256] = "";
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1) || read(fd, reply, sizeof reply - 1) <= 0) {
        if (fd >= 0)
            close(fd);
        return scen_fail("cannot ask the sink for a 429: %s", strerror(errno));
    }
    close(fd);
    return strstr(reply, " 200 ") ? 0 : scen_fail("the sink refused PUT /_limit?inject=1: %.60s", reply);
}

typedef struct pace_run {
    scen_log *log;
    int64_t start_ns, inject_ns;
    size_t nbins;
    bool complete;
} pace_run;

static int drain(const scen_opts *o, const pace_case *pc, pace_run *r, uint64_t *broker_throttled)
{
    const scen_rig_cfg cfg = {.sink_rate_per_s = pc->sink_rate, .sink_burst = pc->sink_burst,
                              .rate_milli = pc->broker_rate * 1000ull, .burst = pc->broker_burst,
                              .consumers = 1, .workers = WORKERS};
    scen_rig rig;
    proc stress = {.pid = 0};
    char path[SCEN_PATH_BYTES + 64];
    int failed = 0;
    scen_note("%s: starting sluiced and sluice-sink; output in %s", pc->name, o->out);
    if (scen_rig_open(&rig, o, &cfg) != 0)
        return -1;
    uint64_t confirmed = scen_rig_publish(&rig, pc->messages, LEVEL, 0);
    if (confirmed != pc->messages) {
        failed = scen_fail("only %" PRIu64 " of %u messages were confirmed", confirmed, pc->messages);
        goto close;
    }
    if (pc->stress) {
        char secs[16], log[SCEN_PATH_BYTES + 32];
        snprintf(secs, sizeof secs, "%ds", pc->limit_s + 30);
        snprintf(log, sizeof log, "%s/stress-ng.out", o->out);
        char *argv[] = {"/usr/bin/stress-ng", "--cpu", "2", "--timeout", secs, NULL};
        if (access(argv[0], X_OK) != 0 || scen_proc_start(&stress, "stress-ng", argv, log, false, 0) != 0) {
            failed = scen_fail("stress-ng is needed (apt-get install stress-ng)");
            goto close;
        }
        scen_sleep_until(scen_now_ns() + SCEN_NS_PER_S); /* let it take the cores */
    }
    r->start_ns = scen_now_ns();
    r->nbins = (size_t)pc->limit_s * 10 + 20;
    snprintf(path, sizeof path, "%s/sink.log", o->out);
    if (scen_log_new(path, r->start_ns, BIN_NS, r->nbins, pc->messages, &r->log) != 0 ||
        scen_rig_consumers_start(&rig) != 0) {
        failed = -1;
        goto close;
    }
    int64_t limit_ns = r->start_ns + pc->limit_s * SCEN_NS_PER_S;
    for (int i = 0; i < 1000000 && !scen_stopping(); i++) {
        if (scen_log_poll(r->log) != 0) {
            failed = -1;
            break;
        }
        const scen_log_totals *t = scen_log_totals_get(r->log);
        int64_t now = scen_now_ns();
        if (pc->inject_after_s && !r->inject_ns && t->first_ns &&
            now >= t->first_ns + pc->inject_after_s * SCEN_NS_PER_S) {
            if (inject(rig.port) != 0) {
                failed = -1;
                break;
            }
            r->inject_ns = scen_now_ns();
        }
        if (t->ok >= pc->messages) {
            r->complete = true;
            break;
        }
        if (now > limit_ns) {
            failed = scen_fail("only %" PRIu64 " of %u messages reached the sink in time", t->ok, pc->messages);
            break;
        }
        if (!scen_rig_consumers_alive(&rig)) {
            failed = scen_fail("the consumer exited during the run");
            break;
        }
        scen_sleep_until(now + POLL_NS);
    }
    sl_stats st = {.nlevels = 0};
    if (scen_rig_stats(&rig, &st) == 0)
        for (unsigned l = 0; l < st.nlevels; l++)
            *broker_throttled += st.level[l].throttled;
close:
    if (stress.pid && proc_stop(&stress, 5000) != 0)
        proc_kill(&stress);
    if (scen_rig_close(&rig) != 0)
        failed = -1;
    if (r->log && scen_log_poll(r->log) != 0)
        failed = -1;
    return failed;
}

/* recovery_s returns the time from the injected 429 until the 200s in a
 * trailing RECOVER_WINDOW_NS, wholly after it, first reach 95 % of rate
 * (from the log's 100 ms bins); -1 when they never do. */
static double recovery_s(const pace_run *r, double rate)
{
    size_t per = (size_t)(RECOVER_WINDOW_NS / BIN_NS), first = (size_t)((r->inject_ns - r->start_ns) / BIN_NS) + 1;
    for (size_t end = first + per; end < r->nbins; end++) {
        uint64_t ok = 0;
        for (size_t i = end - per; i < end; i++)
            ok += scen_log_bin_at(r->log, i)->ok;
        if ((double)ok >= 0.95 * rate * (double)RECOVER_WINDOW_NS / 1e9)
            return (double)((int64_t)end * BIN_NS + r->start_ns - r->inject_ns) / 1e9;
    }
    return -1;
}

static int csv_chart(const scen_opts *o, const pace_case *pc, const pace_run *r)
{
    char path[SCEN_PATH_BYTES + 64], file[64], data[SCEN_PATH_BYTES + 64], title[200];
    snprintf(file, sizeof file, "%s.csv", pc->name);
    snprintf(path, sizeof path, "%s/%s", o->out, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return scen_fail("cannot create %s: %s", path, strerror(errno));
    const scen_log_totals *t = scen_log_totals_get(r->log);
    size_t bins = t->last_ns > r->start_ns ? (size_t)((t->last_ns - r->start_ns) / BIN_NS) + 2 : 0;
    bins = bins > r->nbins ? r->nbins : bins;
    double per_s = (double)SCEN_NS_PER_S / (double)BIN_NS;
    fprintf(f, "Second,Requests,Executed,Sink429\n");
    for (size_t i = 0; i < bins; i++) {
        const scen_log_bin *b = scen_log_bin_at(r->log, i);
        fprintf(f, "%.1f,%.0f,%.0f,%.0f\n", (double)(i + 1) * (double)BIN_NS / 1e9, b->arrived * per_s,
                b->ok * per_s, b->throttled * per_s);
    }
    if (fclose(f) != 0)
        return scen_fail("writing %s: %s", path, strerror(errno));
    scen_plot_data(o, file, data, sizeof data);
    snprintf(title, sizeof title, "%s: %s", pc->name, pc->what);
    FILE *g = scen_plot_open(o, pc->name, title);
    if (!g)
        return -1;
    fprintf(g,
            "set xlabel 'seconds from starting the consumer'\nset ylabel 'per second (0.1 s bins)'\n"
            "set key below horizontal\nset yrange [0:%u]\n",
            pc->sink_rate * 2);
    if (r->inject_ns)
        fprintf(g, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dt 4 lc rgb '#7f7f7f'\n",
                (double)(r->inject_ns - r->start_ns) / 1e9, (double)(r->inject_ns - r->start_ns) / 1e9);
    fprintf(g,
            "plot '%s' using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'requests/s at the sink', \\\n"
            "     '' using 1:($4 > 0 ? $4 : 1/0) with points pt 7 lc rgb '#d62728' title '429/s', \\\n"
            "     %u with lines dt 3 lc rgb '#000000' title 'sink limit'\n",
            data, pc->sink_rate);
    return scen_plot_close(o, g, pc->name);
}

static bool row(bool ok, const char *what, const char *value, const char *target)
{
    printf("  %-52s %14s   target %-12s %s\n", what, value, target, ok ? "PASS" : "FAIL");
    return ok;
}

static int summary(const pace_case *pc, const pace_run *r, uint64_t broker_throttled)
{
    const scen_log_totals *t = scen_log_totals_get(r->log);
    uint64_t once = 0, dup = 0, missing = 0;
    for (uint64_t i = 0; i < pc->messages; i++) {
        unsigned k = scen_log_seq_ok(r->log, i);
        once += k == 1, dup += k > 1, missing += k == 0;
    }
    double span_s = t->last_ok_ns > t->first_ns ? (double)(t->last_ok_ns - t->first_ns) / 1e9 : 0;
    double util = span_s > 0 ? (double)t->ok / span_s / pc->sink_rate : 0;
    uint64_t w01 = scen_log_window_max(r->log, 100 * SCEN_NS_PER_MS), w1 = scen_log_window_max(r->log, SCEN_NS_PER_S);
    char v[64], target[32];
    printf("\n== %s: %s ==\n", pc->name, pc->what);
    printf("  %" PRIu64 " requests at the sink, %" PRIu64 " 200s, %" PRIu64 " 429s (broker THROTTLED %" PRIu64
           "); once %" PRIu64 ", more than once %" PRIu64 ", missing %" PRIu64 "; %.3f s first request to last 200\n",
           t->arrived, t->ok, t->throttled, broker_throttled, once, dup, missing, span_s);
    bool ok = row(once == pc->messages && !dup && r->complete, "every message reached the sink exactly once",
                  once == pc->messages && !dup ? "yes" : "no", "yes");
    uint64_t injected = r->inject_ns ? 1 : 0, real = t->throttled > injected ? t->throttled - injected : 0;
    snprintf(v, sizeof v, "%" PRIu64, real);
    if (pc->max_429_per_10k) {
        double per_10k = (double)real * 10000.0 / pc->messages;
        snprintf(v, sizeof v, "%" PRIu64 " (%.2f/10k)", real, per_10k);
        ok &= row(per_10k <= pc->max_429_per_10k, "429s at the sink", v, "<= 1 / 10,000");
    } else {
        ok &= row(real == 0, r->inject_ns ? "429s at the sink beside the injected one" : "429s at the sink", v, "0");
    }
    snprintf(v, sizeof v, "%.1f %%", util * 100);
    snprintf(target, sizeof target, ">= %.0f %%", pc->min_util * 100);
    if (pc->min_util)
        ok &= row(util >= pc->min_util, "utilisation of the sink (200s / span / rate)", v, target);
    else
        row(true, "utilisation of the sink (200s / span / rate)", v, "-");
    snprintf(v, sizeof v, "%" PRIu64, w01);
    snprintf(target, sizeof target, "<= %.0f", pc->sink_rate * 0.1 + pc->sink_burst);
    ok &= row((double)w01 <= pc->sink_rate * 0.1 + pc->sink_burst, "busiest 0.1 s window at the sink", v, target);
    snprintf(v, sizeof v, "%" PRIu64, w1);
    snprintf(target, sizeof target, "<= %u", pc->sink_rate + pc->sink_burst);
    ok &= row(w1 <= pc->sink_rate + pc->sink_burst, "busiest 1 s window at the sink", v, target);
    if (pc->inject_after_s) {
        double rec = r->inject_ns ? recovery_s(r, pc->broker_rate) : -1;
        snprintf(v, sizeof v, rec < 0 ? "never" : "%.1f s", rec);
        ok &= row(rec >= 0 && rec <= 3.0, "after the 429: 0.5 s rate back to >= 95 %", v, "<= 3 s");
    }
    return ok ? 0 : -1;
}

int scen_pace_run(const scen_opts *o)
{
    const pace_case *pc = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].name, o->scenario) == 0)
            pc = &cases[i];
    if (!pc)
        return scen_fail("no pacing scenario '%s'", o->scenario);
    pace_case c = *pc;
    if (o->sink_burst)
        c.sink_burst = o->sink_burst;
    if (o->broker_burst)
        c.broker_burst = o->broker_burst;
    pace_run r = {.log = NULL};
    uint64_t throttled = 0;
    int failed = drain(o, &c, &r, &throttled);
    if (r.log) {
        int drawn = csv_chart(o, &c, &r);
        if (summary(&c, &r, throttled) != 0)
            failed = -1;
        printf("  files: %s/%s.csv, %s/%s.png%s\n", o->out, c.name, o->out, c.name, drawn ? " (no chart: see above)" : "");
    }
    scen_log_destroy(&r.log);
    return failed;
}
