/*
 * scen_quiz.c - throttle-quiz and priorities: more load than the sink
 * allows, in bursts and lulls, metered by the broker.
 *
 * The sink simulator admits RATE requests a second (gcra, SINK_BURST deep:
 * the slack a real API's bucket has, which absorbs the few milliseconds of
 * jitter between the broker's dispatch and the consumer's POST); the
 * broker's sink bucket is RATE a second with burst BROKER_BURST, so it sends
 * evenly spaced requests. Load, from the start: STEADY producers that
 * publish and sleep 0..SLEEP_MAX_MS (about 600/s), pausing SILENCE_FOR_S
 * every SILENCE_EVERY_S; a paced burst of BURST_RATE a second for
 * BURST_FOR_S every BURST_EVERY_S; and, in priorities, a trickle of
 * TRICKLE_RATE a second on level 2, with the bursts on level 0 and the
 * steady load on level 1 (all on level 1 in throttle-quiz). After the
 * load, sampling goes on while the backlog drains (at most max(30, load)
 * seconds more).
 *
 * The main thread is the sampler: at every whole second from the start it
 * reads the broker's depths, reads the new lines of the sink's log, and
 * writes the CSV rows the log has completed (the sink flushes its log every
 * 100 ms, so the row of second s is written at s + 1). The row of second s
 * covers (s - 1, s]: publishes attempted in it (and whether they were
 * confirmed or failed), the sink's 200s and 429s decided in it and the mean
 * time from publish to 200 of those 200s, and the backlog at its end.
 *
 * The summary is computed from the sink's log (conformance, 429s,
 * exactly-once, latency) and the samples (utilisation while backlogged: the
 * sink's 200s in the seconds that had a backlog at both ends, over RATE
 * times those seconds).
 */
#include "scen_quiz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scen_load.h"
#include "scen_log.h"
#include "scen_plot.h"
#include "scen_rig.h"

#define RATE             500
#define SINK_BURST       20
#define BROKER_BURST     1
#define CONSUMERS        2
#define WORKERS          16
#define STEADY           30
#define SLEEP_MAX_MS     99
#define BURST_RATE       500
#define BURST_EVERY_S    17
#define BURST_FOR_S      2
#define SILENCE_EVERY_S  21
#define SILENCE_FOR_S    3
#define TRICKLE_RATE     5
#define DEFAULT_SECONDS  120
#define MIN_DRAIN_S      30
#define MAX_PER_S        4000 /* bound on messages per second of load */
#define START_DELAY_NS   (300 * SCEN_NS_PER_MS) /* lets the producers start */

typedef struct sample {
    uint64_t depth[SCEN_LEVELS], total, inflight;
} sample;

typedef struct quiz {
    const scen_opts *o;
    bool prio;
    const char *name;
    int seconds, drain_max;
    uint32_t sink_burst, broker_burst;
    int64_t start_ns;
    scen_rig rig;
    scen_load *load;
    scen_log *log;
    FILE *csv;
    sample *samples; /* [s]: at the end of second s; [0] at the start */
    int sampled, written;
    sl_stats last;   /* the broker's statistics at the end */
} quiz;

static void csv_header(quiz *q)
{
    fprintf(q->csv, "Second,TotalRequests,SuccessRequests,FailRequests,ExecutedRequests,"
                    "AverageExecuteTime,Sink429,Backlog");
    if (q->prio)
        fprintf(q->csv, ",Executed0,Executed1,Executed2,Backlog0,Backlog1,Backlog2");
    fputc('\n', q->csv);
}

static void csv_row(quiz *q, int s)
{
    scen_load_second p = scen_load_second_get(q->load, (size_t)s - 1);
    const scen_log_bin *b = scen_log_bin_at(q->log, (size_t)s - 1);
    const sample *m = &q->samples[s];
    fprintf(q->csv, "%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,", s, p.attempted, p.confirmed,
            p.failed, b->ok);
    if (b->latency_n)
        fprintf(q->csv, "%.1f", b->latency_ms_sum / b->latency_n);
    fprintf(q->csv, ",%u,%" PRIu64, b->throttled, m->total);
    if (q->prio)
        fprintf(q->csv, ",%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64, b->ok_level[0], b->ok_level[1],
                b->ok_level[2], m->depth[0], m->depth[1], m->depth[2]);
    fputc('\n', q->csv);
}

static int sample_take(quiz *q, int s)
{
    sl_stats st;
    if (scen_rig_stats(&q->rig, &st) != 0)
        return -1;
    sample *m = &q->samples[s];
    *m = (sample){.total = 0};
    for (unsigned l = 0; l < st.nlevels; l++) {
        if (l < SCEN_LEVELS)
            m->depth[l] = st.level[l].depth;
        m->total += st.level[l].depth;
        m->inflight += st.level[l].inflight;
    }
    q->last = st;
    return 0;
}

static int load_start(quiz *q)
{
    scen_load_cfg c = {
        .endpoint = q->rig.endpoint,
        .start_ns = q->start_ns,
        .end_ns = q->start_ns + q->seconds * SCEN_NS_PER_S,
        .seed = q->o->seed,
        .max_messages = (uint64_t)q->seconds * MAX_PER_S,
        .steady_threads = STEADY,
        .steady_level = 1,
        .sleep_max_ms = SLEEP_MAX_MS,
        .pause_every_ns = SILENCE_EVERY_S * SCEN_NS_PER_S,
        .pause_for_ns = SILENCE_FOR_S * SCEN_NS_PER_S,
    };
    c.paced[0] = (scen_load_paced){.level = q->prio ? 0 : 1, .rate_per_s = BURST_RATE,
                                        .every_ns = BURST_EVERY_S * SCEN_NS_PER_S,
                                        .for_ns = BURST_FOR_S * SCEN_NS_PER_S};
    if (q->prio)
        c.paced[1] = (scen_load_paced){.level = 2, .rate_per_s = TRICKLE_RATE};
    return scen_load_new(&c, &q->load);
}

/* progress prints a line every 10 s of the run on stderr. */
static void progress(quiz *q, int s)
{
    if (s % 10)
        return;
    uint64_t published = 0, executed = 0;
    for (int i = s - 10; i < s; i++) {
        published += scen_load_second_get(q->load, (size_t)i).attempted;
        executed += scen_log_bin_at(q->log, (size_t)i)->ok;
    }
    scen_note("t=%ds: published %.0f/s, executed %.0f/s, backlog %" PRIu64, s,
                   published / 10.0, executed / 10.0, q->samples[s].total);
}

/* sample_loop samples every second until the load is over and the backlog
 * has drained, drain_max seconds more have passed, or a signal. */
static int sample_loop(quiz *q)
{
    for (int s = 1; s <= q->seconds + q->drain_max && !scen_stopping(); s++) {
        scen_sleep_until(q->start_ns + s * SCEN_NS_PER_S);
        if (scen_stopping())
            break;
        if (sample_take(q, s) != 0 || scen_log_poll(q->log) != 0)
            return -1;
        q->sampled = s;
        for (; q->written < s - 1; q->written++)
            csv_row(q, q->written + 1);
        fflush(q->csv);
        progress(q, s);
        if (!scen_rig_consumers_alive(&q->rig))
            return scen_fail("a consumer exited during the run");
        if (s == q->seconds)
            scen_note("load over at %ds; waiting for the backlog of %" PRIu64 " to drain", s,
                           q->samples[s].total);
        if (s > q->seconds && q->samples[s].total == 0 && q->samples[s].inflight == 0)
            break;
    }
    return 0;
}

/* chart_windows shades the burst and silence windows of the load. */
static void chart_windows(quiz *q, FILE *f)
{
    static const char rect[] =
        "set object %d rect from %d, graph 0 to %d, graph 1 fc rgb '%s' fs solid 0.5 noborder behind\n";
    int id = 1;
    for (int k = 1; k * BURST_EVERY_S < q->seconds; k++)
        fprintf(f, rect, id++, k * BURST_EVERY_S, k * BURST_EVERY_S + BURST_FOR_S, "#f8d0d0");
    for (int k = 1; k * SILENCE_EVERY_S < q->seconds; k++)
        fprintf(f, rect, id++, k * SILENCE_EVERY_S, k * SILENCE_EVERY_S + SILENCE_FOR_S, "#d8d8d8");
}

static int chart(quiz *q)
{
    char title[256], data[SCEN_PATH_BYTES + 64], file[64];
    snprintf(file, sizeof file, "%s.csv", q->name);
    scen_plot_data(q->o, file, data, sizeof data);
    snprintf(title, sizeof title,
             "%s: sink %d/s (gcra, burst %d), broker sink rate %d/s; shaded: bursts (red), "
             "silences (grey)",
             q->name, RATE, q->sink_burst, RATE);
    FILE *f = scen_plot_open(q->o, q->name, title);
    if (!f)
        return -1;
    fprintf(f, "set xlabel 'second'\nset xrange [0:%d]\n", q->sampled);
    chart_windows(q, f);
    if (!q->prio) {
        fprintf(f,
                "set key below horizontal\n"
                "set ylabel 'requests per second'\nset y2label 'backlog (messages)'\n"
                "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\n"
                "plot '%s' using ($1-0.5):2 with lines lw 1.2 lc rgb '#1f77b4' title 'published/s', \\\n"
                "     '' using ($1-0.5):5 with lines lw 2 lc rgb '#2ca02c' title 'executed/s (sink 200)', \\\n"
                "     '' using ($1-0.5):($7 > 0 ? $7 : 1/0) with impulses lw 3 lc rgb '#d62728' title '429/s at the sink', \\\n"
                "     '' using ($1-0.5):($7 > 0 ? $7 : 1/0) with points pt 7 ps 1 lc rgb '#d62728' notitle, \\\n"
                "     '' using 1:8 axes x1y2 with lines lw 2 dt 2 lc rgb '#7f7f7f' title 'backlog (right axis)', \\\n"
                "     %d with lines dt 3 lc rgb '#000000' notitle\n",
                data, RATE);
        return scen_plot_close(q->o, f, q->name);
    }
    fprintf(f,
            "set multiplot layout 2,1 title \"%s\" noenhanced\nunset title\nset lmargin 10\n"
            "set ylabel 'executed per second'\nset yrange [0:%d]\n"
            "plot '%s' using ($1-0.5):9 with lines lw 2 lc rgb '#d62728' title 'level 0 (bursts)', \\\n"
            "     '' using ($1-0.5):10 with lines lw 2 lc rgb '#1f77b4' title 'level 1 (steady)', \\\n"
            "     '' using ($1-0.5):11 with lines lw 2 lc rgb '#2ca02c' title 'level 2 (trickle)', \\\n"
            "     '' using ($1-0.5):($7 > 0 ? $7 : 1/0) with impulses lw 3 lc rgb '#ff7f0e' title '429/s', \\\n"
            "     '' using ($1-0.5):($7 > 0 ? $7 : 1/0) with points pt 7 ps 1 lc rgb '#ff7f0e' notitle\n"
            "set ylabel 'backlog (messages)'\nset yrange [0:*]\n"
            "plot '%s' using 1:12 with lines lw 2 lc rgb '#d62728' title 'level 0', \\\n"
            "     '' using 1:13 with lines lw 2 lc rgb '#1f77b4' title 'level 1', \\\n"
            "     '' using 1:14 with lines lw 2 lc rgb '#2ca02c' title 'level 2'\n"
            "unset multiplot\n",
            title, RATE * 5 / 4, data, data);
    return scen_plot_close(q->o, f, q->name);
}

/* latency_mean is the mean publish-to-200 time over the whole log. */
static double latency_mean(const quiz *q)
{
    double sum = 0;
    uint64_t n = 0;
    for (int s = 0; s < q->sampled + 1; s++) {
        const scen_log_bin *b = scen_log_bin_at(q->log, (size_t)s);
        sum += b->latency_ms_sum;
        n += b->latency_n;
    }
    return n ? sum / (double)n : 0;
}

/* summary prints the figures tools/bench/README.md quotes. */
static void summary(quiz *q, int ok)
{
    const scen_log_totals *t = scen_log_totals_get(q->log);
    scen_load_second all = {0};
    int loaded = q->sampled < q->seconds ? q->sampled : q->seconds;
    for (int s = 0; s <= q->seconds; s++) {
        scen_load_second p = scen_load_second_get(q->load, (size_t)s);
        all.attempted += p.attempted, all.confirmed += p.confirmed, all.failed += p.failed;
    }
    uint64_t backlogged = 0, executed_backlogged = 0, once = 0, dup = 0, missing = 0, extra = 0;
    for (int s = 1; s <= q->sampled; s++)
        if (q->samples[s - 1].total > 0 && q->samples[s].total > 0) {
            backlogged++;
            executed_backlogged += scen_log_bin_at(q->log, (size_t)s - 1)->ok;
        }
    uint64_t n = scen_load_messages(q->load);
    for (uint64_t i = 0; i < n; i++) {
        unsigned k = scen_log_seq_ok(q->log, i);
        if (!scen_load_confirmed(q->load, i))
            extra += k > 0;
        else if (k == 1)
            once++;
        else if (k > 1)
            dup++;
        else
            missing++;
    }
    uint64_t throttled = 0;
    for (unsigned l = 0; l < q->last.nlevels; l++)
        throttled += q->last.level[l].throttled;
    printf("\n== %s: %d s of load, then %d s of drain; seed %u ==\n", q->name, loaded,
           q->sampled > q->seconds ? q->sampled - q->seconds : 0, q->o->seed);
    char consumers[64];
    if (q->rig.post)
        snprintf(consumers, sizeof consumers, "%d x `sluice consume --post` x %d workers", CONSUMERS, WORKERS);
    else
        snprintf(consumers, sizeof consumers, "%u in-process threads", q->rig.inproc);
    printf("  sink: sluice-sink gcra %d/s burst %u; broker sink rate %d/s burst %u; consumers: %s\n",
           RATE, q->sink_burst, RATE, q->broker_burst, consumers);
    printf("  published: %" PRIu64 " attempted, %" PRIu64 " confirmed, %" PRIu64 " failed (%.0f/s over the load)\n",
           all.attempted, all.confirmed, all.failed, loaded ? (double)all.attempted / loaded : 0.0);
    printf("  sink: %" PRIu64 " requests, %" PRIu64 " 200s, %" PRIu64 " 429s, %" PRIu64
           " other; broker THROTTLED reports: %" PRIu64 "\n",
           t->arrived, t->ok, t->throttled, t->other, throttled);
    printf("  utilisation while backlogged: %" PRIu64 " executed in %" PRIu64 " backlogged seconds = %.1f%% of %d/s\n",
           executed_backlogged, backlogged,
           backlogged ? 100.0 * (double)executed_backlogged / ((double)RATE * (double)backlogged) : 0.0, RATE);
    printf("  delivery: %" PRIu64 " confirmed messages reached the sink exactly once, %" PRIu64
           " more than once, %" PRIu64 " not (yet); %" PRIu64 " unconfirmed ones reached it\n",
           once, dup, missing, extra);
    printf("  publish to 200 (ms): mean %.1f, p50 %.1f, p99 %.1f, max %.1f\n",
           latency_mean(q), scen_log_latency(q->log, -1, 50), scen_log_latency(q->log, -1, 99),
           scen_log_latency(q->log, -1, 100));
    if (q->prio) {
        uint64_t confirmed[SCEN_LEVELS] = {0};
        scen_load_level_counts(q->load, confirmed);
        static const char *const what[] = {"bursts", "steady", "trickle"};
        for (int l = 0; l < SCEN_LEVELS; l++)
            printf("    level %d (%s): %" PRIu64 " confirmed, %" PRIu64 " executed, p50 %.1f ms, "
                   "p99 %.1f ms, max %.1f ms; backlog at the end of the load %" PRIu64 "\n",
                   l, what[l], confirmed[l], t->ok_level[l], scen_log_latency(q->log, l, 50),
                   scen_log_latency(q->log, l, 99), scen_log_latency(q->log, l, 100),
                   q->samples[q->sampled < q->seconds ? q->sampled : q->seconds].depth[l]);
    }
    scen_log_conformance(q->log, stdout, RATE, q->broker_burst, RATE, q->sink_burst);
    printf("  files: %s/%s.csv, %s/%s.png%s\n", q->o->out, q->name, q->o->out, q->name,
           ok ? "" : " (no chart: see above)");
}

int scen_quiz_run(const scen_opts *o, bool priorities)
{
    quiz q = {.o = o, .prio = priorities, .name = priorities ? "priorities" : "throttle-quiz"};
    q.seconds = o->seconds ? o->seconds : DEFAULT_SECONDS;
    q.drain_max = q.seconds > MIN_DRAIN_S ? q.seconds : MIN_DRAIN_S;
    q.sink_burst = o->sink_burst ? o->sink_burst : SINK_BURST;
    q.broker_burst = o->broker_burst ? o->broker_burst : BROKER_BURST;
    const scen_rig_cfg rc = {.sink_rate_per_s = RATE, .sink_burst = q.sink_burst,
                                  .rate_milli = RATE * 1000ull, .burst = q.broker_burst,
                                  .consumers = CONSUMERS, .workers = WORKERS};
    char path[SCEN_PATH_BYTES + 64];
    int failed = 0;
    size_t rows = (size_t)(q.seconds + q.drain_max) + 2;
    q.samples = calloc(rows, sizeof *q.samples);
    if (!q.samples)
        return scen_fail("out of memory");
    scen_note("%s: starting sluiced and sluice-sink; output in %s", q.name, o->out);
    if (scen_rig_open(&q.rig, o, &rc) != 0) {
        free(q.samples);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s.csv", o->out, q.name);
    q.csv = fopen(path, "w");
    if (!q.csv) {
        failed = scen_fail("cannot create %s: %s", path, strerror(errno));
        goto close;
    }
    csv_header(&q);
    if (scen_rig_consumers_start(&q.rig) != 0) {
        failed = -1;
        goto close;
    }
    scen_note("consumers: %s; load for %d s", q.rig.post ? "sluice consume --post" : "in process",
                   q.seconds);
    q.start_ns = scen_now_ns() + START_DELAY_NS;
    snprintf(path, sizeof path, "%s/sink.log", o->out);
    if (scen_log_new(path, q.start_ns, SCEN_NS_PER_S, rows, (uint64_t)q.seconds * MAX_PER_S,
                          &q.log) != 0 ||
        load_start(&q) != 0) {
        failed = -1;
        goto close;
    }
    failed = sample_loop(&q);
    if (failed)
        scen_load_stop(q.load);
    scen_load_finish(q.load);
    if (scen_rig_consumers_stop(&q.rig) != 0 || scen_rig_stats(&q.rig, &q.last) != 0 ||
        scen_rig_sink_stop(&q.rig) != 0 || scen_log_poll(q.log) != 0)
        failed = -1;
    for (; q.written < q.sampled; q.written++)
        csv_row(&q, q.written + 1);
close:
    if (q.csv && (fclose(q.csv) != 0) && !failed)
        failed = scen_fail("writing the CSV: %s", strerror(errno));
    if (scen_rig_close(&q.rig) != 0)
        failed = -1;
    if (q.log && q.load && q.sampled > 0) {
        int drawn = chart(&q) == 0;
        summary(&q, drawn);
        if (!drawn)
            failed = -1;
    }
    scen_load_destroy(&q.load);
    scen_log_destroy(&q.log);
    free(q.samples);
    return failed ? -1 : 0;
}
