/*
 * scen_taglimits.c - tag-limits: a level served fair by tag, TAGS tags each
 * limited to TAG_RATE/s by a bucket of its own, in front of a sink at
 * SINK_RATE/s. Measured at the sink: does every tag keep within its limit
 * in every 1 s and 10 s window, and is the sink still used to the full?
 *
 * The rig (scen_rig.c): one sluiced; level "normal" (1) served fair by tag;
 * two tag patterns, both TAG_RATE/s burst TAG_BURST with --each (a bucket
 * per tag): HEAVY_PATTERN (t0000..t0199) at weight HEAVY_WEIGHT, then '*'
 * at weight 1; the broker's sink at SINK_RATE/s burst BROKER_BURST. One
 * sluice-sink at SINK_RATE/s (gcra, burst SINK_BURST) keyed on X-Sluice-Tag,
 * the header `consume --post` carries each message's tag in; its per-key
 * limit is its global rate, so it never refuses a request for its key (a
 * per-key 429 would come back as THROTTLED for the whole sink, and change
 * what is measured): it only logs each request's key, and the per-tag
 * figures are computed here. CONSUMERS `sluice consume --post` processes
 * of WORKERS workers each.
 *
 * Why the weights: with equal weights the round robin alone gives each of
 * the 1,000 tags 1,500/1,000 = 1.5/s, below its 2/s, and the per-tag limit
 * would never be what holds a tag (the windows would pass with no limit
 * set). At weight 4 the round robin would give t0000..t0199 3.75/s each:
 * their own buckets are what keeps them to 2/s, while the sink stays the
 * bottleneck for everyone.
 *
 * The load: TAGS x per_tag messages (per_tag = TAG_RATE x --seconds + 2,
 * so that even a tag served at its full rate keeps a backlog to the end of
 * the load), tags interleaved, published before the consumers start. The
 * tags may take TAGS x TAG_RATE = 2,000/s together, the sink 1,500/s: the
 * sink is the bottleneck for the whole load phase and every tag has
 * messages waiting throughout. After --seconds (default 30) the consumers
 * carry the rest (the drain: fewer and fewer tags are left, each at its
 * own limit) until the level is empty, DRAIN_S at most, so that
 * exactly-once covers every message.
 *
 * Figures, from the sink's log (scen_log.c, keyed): per tag, the most
 * arrivals (any status) in any 1 s and 10 s window over the whole run
 * against rate x window + burst; the worst tag and how many are over; per
 * weight, the rate during the load and the median gap between a tag's
 * arrivals; the burst a TAG_RATE/s gcra bucket would need for each tag's
 * arrivals (how much the path from the broker's release to the sink bunched
 * them); the sink's 429s; utilisation: the 200s of the load phase's
 * seconds over SINK_RATE; exactly once. Also checked: every request carried
 * its message's tag. The CSV has a row per second of load and drain:
 * requests, 200s, 429s, backlog (the level's ready messages at the end of
 * the second) and the distinct tags that got a 200 in it; the chart draws
 * them.
 *
 * Costs: under a second to publish the backlog, --seconds of load, about
 * 20 s of drain; memory 8 bytes per arrival (kept per tag) besides
 * scen_log's.
 */
#include "scen_taglimits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scen_log.h"
#include "scen_plot.h"
#include "scen_rig.h"
#include "sluice.h"

#define TAGS         1000
#define TAG_RATE     2
#define TAG_BURST    1
#define HEAVY_TAGS   200        /* t0000..t0199 ... */
#define HEAVY_PATTERN "t0[01]*" /* ... matched by this */
#define HEAVY_WEIGHT 4          /* the round robin alone would give them more than TAG_RATE */
#define SINK_RATE    1500
#define SINK_BURST   30   /* the simulator's bucket: the broker's burst and the consumers' jitter */
#define BROKER_BURST 10   /* the broker's sink burst, in messages */
#define CONSUMERS    2
#define WORKERS      32
#define LEVEL        1u   /* "normal" */
#define DEFAULT_S    30
#define DRAIN_S      60   /* the drain's longest */
#define UTIL_TARGET  95.0
#define NAME         "tag-limits"

typedef struct tag_log {
    int64_t *ns; /* arrivals at the sink, in the log's order */
    uint32_t n, cap;
    uint32_t ok_load;    /* 200s during the load phase */
    int64_t last_ok_bin; /* the last bin counted in distinct[] */
} tag_log;

typedef struct taglimits {
    const scen_opts *o;
    int seconds;
    uint32_t sink_burst, broker_burst;
    uint64_t per_tag, messages;
    size_t nbins;
    int64_t start_ns, load_end_ns;
    tag_log tag[TAGS];
    uint32_t *distinct; /* per bin: tags that got a 200 in it */
    uint64_t *backlog;  /* per bin: the level's ready messages at its end; UINT64_MAX: not sampled */
    uint64_t bad_key, lost; /* requests not under their message's tag; arrivals not kept (memory) */
    int drained_s;      /* seconds of drain */
    unsigned inproc;    /* > 0: the consumers were this many threads in this process (scen_rig's fallback) */
} taglimits;

/* on_line takes one line of the keyed log: the arrival under its tag, read
 * back as scen_rig_tag wrote it ("t0042"). */
static void on_line(void *arg, int64_t at_ns, int status, const char *key, uint64_t seq)
{
    taglimits *s = arg;
    char *end = NULL;
    unsigned long i = key[0] == 't' ? strtoul(key + 1, &end, 10) : TAGS;
    if (i >= TAGS || *end || (seq != UINT64_MAX && seq % TAGS != i)) {
        s->bad_key++;
        return;
    }
    tag_log *t = &s->tag[i];
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        int64_t *ns = realloc(t->ns, cap * sizeof *ns);
        if (!ns) {
            s->lost++;
            return;
        }
        t->ns = ns, t->cap = cap;
    }
    t->ns[t->n++] = at_ns;
    if (status != 200)
        return;
    int64_t bin = at_ns <= s->start_ns ? 0 : (at_ns - s->start_ns) / SCEN_NS_PER_S;
    if (bin < (int64_t)s->nbins && bin != t->last_ok_bin) {
        s->distinct[bin]++;
        t->last_ok_bin = bin;
    }
    t->ok_load += at_ns < s->load_end_ns;
}

/* broker_setup makes level 1 fair by tag, gives every tag its own bucket
 * and publishes the backlog. Returns 0 or -1, reported. */
static int broker_setup(taglimits *s, scen_rig *rig)
{
    int rc = sl_level_fair(rig->admin, LEVEL, 1);
    static const char *const patterns[] = {HEAVY_PATTERN, "*"}; /* the first that matches a tag wins */
    for (size_t i = 0; i < 2 && rc == SL_OK; i++) {
        sl_tag_settings t;
        sl_tag_settings_init(&t);
        t.each = 1;
        t.weight = i == 0 ? HEAVY_WEIGHT : 1;
        t.nwindows = 1;
        t.windows[0] = (sl_window){.count_milli = TAG_RATE * 1000, .period_ms = 1000, .burst = TAG_BURST};
        rc = sl_tag_set(rig->admin, patterns[i], &t);
    }
    if (rc != SL_OK)
        return scen_fail("setting up the fair level and the tag limit: %s (%s)", sl_strerror(rc),
                         sl_last_error(rig->admin));
    scen_note("publishing %" PRIu64 " messages, %" PRIu64 " to each of %d tags", s->messages, s->per_tag, TAGS);
    int64_t t0 = scen_now_ns();
    uint64_t confirmed = scen_rig_publish(rig, s->messages, LEVEL, 0);
    if (confirmed != s->messages)
        return scen_fail("only %" PRIu64 " of %" PRIu64 " messages were confirmed", confirmed, s->messages);
    scen_note("published in %.1f s", (double)(scen_now_ns() - t0) / 1e9);
    return 0;
}

/* level_left reads the level's ready messages into *depth, and whether
 * anything is left in it (ready, in flight or delayed). */
static int level_left(scen_rig *rig, uint64_t *depth, bool *left)
{
    sl_stats st;
    if (scen_rig_stats(rig, &st) != 0)
        return -1;
    const sl_level_stats *l = &st.level[LEVEL];
    *depth = l->depth;
    *left = l->depth + l->inflight + l->delayed > 0;
    return 0;
}

/* run starts the consumers, runs the load phase and the drain, and stops
 * the consumers and the sink, the log read to its end. */
static int run(taglimits *s, scen_rig *rig, scen_log **lp)
{
    char path[SCEN_PATH_BYTES + 64];
    snprintf(path, sizeof path, "%s/sink.log", s->o->out);
    if (scen_rig_consumers_start(rig) != 0)
        return -1;
    s->inproc = rig->post ? 0 : rig->inproc;
    s->start_ns = scen_now_ns();
    s->load_end_ns = s->start_ns + s->seconds * SCEN_NS_PER_S;
    if (scen_log_new(path, s->start_ns, SCEN_NS_PER_S, s->nbins, s->messages, lp) != 0)
        return -1;
    scen_log_keyed(*lp, on_line, s);
    scen_note("load: %d s; then the drain, %d s at most", s->seconds, DRAIN_S);
    bool left = true;
    for (size_t sec = 0; sec < s->nbins && left && !scen_stopping(); sec++) {
        scen_sleep_until(s->start_ns + (int64_t)(sec + 1) * SCEN_NS_PER_S);
        if (scen_log_poll(*lp) != 0 || level_left(rig, &s->backlog[sec], &left) != 0)
            return -1;
        if (!scen_rig_consumers_alive(rig))
            return scen_fail("a consumer exited during the run (see %s/consumer-*.log)", s->o->out);
        s->drained_s = (int)sec + 1 - s->seconds;
    }
    if (left)
        scen_note("the level still held messages after %d s of drain", DRAIN_S);
    int rc = scen_rig_consumers_stop(rig);
    if (scen_rig_sink_stop(rig) != 0)
        rc = -1;
    return scen_log_poll(*lp) != 0 ? -1 : rc;
}

static int csv_and_chart(taglimits *s, const scen_log *l)
{
    char path[SCEN_PATH_BYTES + 64], data[SCEN_PATH_BYTES + 64], title[240];
    snprintf(path, sizeof path, "%s/" NAME ".csv", s->o->out);
    FILE *f = fopen(path, "w");
    if (!f)
        return scen_fail("cannot write %s: %s", path, strerror(errno));
    size_t rows = (size_t)(s->seconds + (s->drained_s > 0 ? s->drained_s : 0));
    rows = rows < s->nbins ? rows : s->nbins;
    fprintf(f, "Second,Requests,Success,Throttled,Backlog,Tags\n");
    for (size_t sec = 0; sec < rows; sec++) {
        const scen_log_bin *b = scen_log_bin_at(l, sec);
        fprintf(f, "%zu,%u,%u,%u,", sec + 1, b->arrived, b->ok, b->throttled);
        if (s->backlog[sec] != UINT64_MAX)
            fprintf(f, "%" PRIu64, s->backlog[sec]);
        fprintf(f, ",%u\n", s->distinct[sec]);
    }
    if (fclose(f) != 0)
        return scen_fail("writing %s: %s", path, strerror(errno));
    scen_plot_data(s->o, NAME ".csv", data, sizeof data);
    snprintf(title, sizeof title,
             NAME ": %d tags fair by tag, each at most %d/s (burst %d), sink at %d/s; the load, then the drain",
             TAGS, TAG_RATE, TAG_BURST, SINK_RATE);
    FILE *g = scen_plot_open(s->o, NAME, title);
    if (!g)
        return -1;
    fprintf(g,
            "set xlabel 'seconds from the start of the consumers'\nset ylabel 'per second at the sink'\n"
            "set yrange [0:%d]\nset y2label 'backlog (messages waiting)'\nset y2range [0:*]\nset y2tics\n"
            "set ytics nomirror\nset key below horizontal\n"
            "set arrow from %d, graph 0 to %d, graph 1 nohead dt 4 lc rgb '#7f7f7f'\n"
            "plot '%s' using 1:2 with lines lw 2.5 lc rgb '#1f77b4' title 'requests/s', \\\n"
            "     '' using 1:3 with lines lw 1.5 lc rgb '#2ca02c' title '200/s', \\\n"
            "     '' using 1:($4 > 0 ? $4 : 1/0) with points pt 7 lc rgb '#d62728' title '429/s', \\\n"
            "     '' using 1:6 with lines lw 1.5 lc rgb '#9467bd' title 'tags served', \\\n"
            "     %d with lines dt 3 lc rgb '#000000' title 'sink limit', \\\n"
            "     '' using 1:5 axes x1y2 with lines dt 2 lc rgb '#ff7f0e' title 'backlog'\n",
            SINK_RATE * 4 / 3, s->seconds, s->seconds, data, SINK_RATE);
    return scen_plot_close(s->o, g, NAME);
}

typedef struct tag_worst {
    uint64_t most;     /* the most arrivals of one tag in one window */
    unsigned tag;      /* ... of this tag */
    unsigned over;     /* tags above the bound */
    unsigned hist[5];  /* tags by their busiest window: 0..3, 4 and more (printed for 1 s) */
} tag_worst;

/* windows_scan finds the busiest window of window_ns of tags [from, to). */
static void windows_scan(const taglimits *s, unsigned from, unsigned to, int64_t window_ns, double bound,
                         tag_worst *w)
{
    *w = (tag_worst){.most = 0, .tag = from};
    for (unsigned i = from; i < to; i++) {
        uint64_t m = scen_log_window_max_of(s->tag[i].ns, s->tag[i].n, window_ns);
        if (m > w->most)
            w->most = m, w->tag = i;
        w->over += (double)m > bound + 1e-9;
        w->hist[m < 4 ? m : 4]++;
    }
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* group_show prints what the tags [from, to) got during the load (their
 * rate, and the median gap between two arrivals of one tag: its bucket's
 * spacing, or the ring's turn, whichever is longer) and their busiest
 * windows over the whole run. */
static void group_show(const taglimits *s, const char *what, unsigned from, unsigned to)
{
    uint64_t ok = 0;
    size_t n = 0, cap = 0;
    for (unsigned i = from; i < to; i++)
        ok += s->tag[i].ok_load, cap += s->tag[i].n;
    int64_t *gap = malloc((cap ? cap : 1) * sizeof *gap);
    for (unsigned i = from; i < to && gap; i++)
        for (uint32_t k = 1; k < s->tag[i].n && s->tag[i].ns[k] < s->load_end_ns; k++)
            gap[n++] = s->tag[i].ns[k] - s->tag[i].ns[k - 1];
    if (n)
        qsort(gap, n, sizeof *gap, i64_cmp);
    tag_worst w1, w10;
    windows_scan(s, from, to, SCEN_NS_PER_S, 0, &w1);
    windows_scan(s, from, to, 10 * SCEN_NS_PER_S, 0, &w10);
    printf("    %s:\n      %.2f/s each, median gap between a tag's arrivals %.0f ms; busiest 1 s / 10 s window "
           "of the run %" PRIu64 " / %" PRIu64 "\n",
           what, (double)ok / (double)(to - from) / s->seconds, n ? (double)gap[n / 2] / 1e6 : 0.0, w1.most,
           w10.most);
    free(gap);
}

/* busiest_show prints tag i's arrivals in its busiest window of window_ns
 * (seconds from the start of the consumers). */
static void busiest_show(const taglimits *s, unsigned i, int64_t window_ns)
{
    const tag_log *t = &s->tag[i];
    uint32_t j = 0, best = 0, from = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        while (t->ns[k] - t->ns[j] >= window_ns)
            j++;
        if (k - j + 1 > best)
            best = k - j + 1, from = j;
    }
    printf("    t%04u's arrivals in its busiest %.0f s window (s):", i, (double)window_ns / 1e9);
    for (uint32_t k = from; k < from + best && k < from + 24; k++)
        printf(" %.3f", (double)(t->ns[k] - s->start_ns) / 1e9);
    printf("\n");
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* gcra_refused counts the arrivals a gcra bucket of rate/s, burst b would
 * refuse (a refusal takes no token). */
static uint64_t gcra_refused(const int64_t *a, uint32_t n, double rate, double b)
{
    double interval = 1e9 / rate, tat = 0;
    uint64_t refused = 0;
    for (uint32_t k = 0; k < n; k++) {
        double t = (double)a[k], start = tat > t ? tat : t;
        if (start - t > (b - 1) * interval + 1e-3) {
            refused++;
            continue;
        }
        tat = start + interval;
    }
    return refused;
}

/* jitter_show prints the bursts a TAG_RATE/s bucket would need per tag. */
static void jitter_show(const taglimits *s)
{
    double need[TAGS];
    unsigned worst = 0, refused_tags = 0;
    uint64_t refused = 0;
    for (unsigned i = 0; i < TAGS; i++) {
        need[i] = scen_log_burst_needed_of(s->tag[i].ns, s->tag[i].n, TAG_RATE);
        worst = need[i] > need[worst] ? i : worst;
        uint64_t r = gcra_refused(s->tag[i].ns, s->tag[i].n, TAG_RATE, TAG_BURST);
        refused += r, refused_tags += r > 0;
    }
    double most = need[worst];
    qsort(need, TAGS, sizeof need[0], double_cmp);
    printf("  per tag, the burst a %d/s gcra bucket would need for its arrivals at the sink: median %.2f, "
           "p99 %.2f, most %.2f (t%04u)\n",
           TAG_RATE, need[TAGS / 2], need[TAGS * 99 / 100], most, worst);
    printf("    a sink limiting each key to %d/s burst %d would have refused %" PRIu64 " requests, of %u tags\n",
           TAG_RATE, TAG_BURST, refused, refused_tags);
}

static bool check(bool ok, const char *what)
{
    printf("  check: %-62s %s\n", what, ok ? "PASS" : "FAIL");
    return ok;
}

/* summary prints the figures and returns whether the checks passed. */
static bool summary(const taglimits *s, const scen_log *l)
{
    const scen_log_totals *t = scen_log_totals_get(l);
    uint64_t once = 0, dup = 0, missing = 0, ok_load = 0;
    for (uint64_t i = 0; i < s->messages; i++) {
        unsigned k = scen_log_seq_ok(l, i);
        once += k == 1, dup += k > 1, missing += k == 0;
    }
    unsigned emptied = 0, served_min = TAGS;
    for (unsigned i = 0; i < TAGS; i++)
        emptied += s->tag[i].ok_load >= s->per_tag;
    for (int sec = 0; sec < s->seconds; sec++) {
        ok_load += scen_log_bin_at(l, (size_t)sec)->ok;
        served_min = s->distinct[sec] < served_min ? s->distinct[sec] : served_min;
    }
    double util = 100.0 * (double)ok_load / ((double)s->seconds * SINK_RATE);
    double bound1 = TAG_RATE * 1.0 + TAG_BURST, bound10 = TAG_RATE * 10.0 + TAG_BURST;
    char consumers[64];
    if (s->inproc)
        snprintf(consumers, sizeof consumers, "%u consumer threads in this process", s->inproc);
    else
        snprintf(consumers, sizeof consumers, "%d consume --post x %d workers", CONSUMERS, WORKERS);
    tag_worst w1, w10;
    windows_scan(s, 0, TAGS, SCEN_NS_PER_S, bound1, &w1);
    windows_scan(s, 0, TAGS, 10 * SCEN_NS_PER_S, bound10, &w10);
    printf("tag-limits: level normal fair by tag, %d tags each at most %d/s burst %d (tag set '%s' --weight %d "
           "--each, then '*' --each), "
           "broker sink %d/s burst %" PRIu32 ", sink %d/s (gcra, burst %" PRIu32 ") keyed on X-Sluice-Tag, "
           "%s; %" PRIu64 " messages (%" PRIu64 " a tag), %d s of load, then %d s of "
           "drain\n",
           TAGS, TAG_RATE, TAG_BURST, HEAVY_PATTERN, HEAVY_WEIGHT, SINK_RATE, s->broker_burst, SINK_RATE,
           s->sink_burst, consumers, s->messages, s->per_tag, s->seconds, s->drained_s > 0 ? s->drained_s : 0);
    printf("  sink: %" PRIu64 " requests, %" PRIu64 " x 200, %" PRIu64 " x 429, %" PRIu64 " other; "
           "%" PRIu64 " not under their message's tag\n",
           t->arrived, t->ok, t->throttled, t->other, s->bad_key);
    printf("  exactly once: %" PRIu64 " once, %" PRIu64 " more than once, %" PRIu64 " missing\n", once, dup,
           missing);
    printf("  per tag, most arrivals in any 1 s window: %" PRIu64 " (t%04u), bound %d x 1 + %d = %.0f; "
           "tags above it: %u; tags by their busiest 1 s: 1: %u, 2: %u, 3: %u, 4 or more: %u\n",
           w1.most, w1.tag, TAG_RATE, TAG_BURST, bound1, w1.over, w1.hist[1], w1.hist[2], w1.hist[3], w1.hist[4]);
    if (w1.over)
        busiest_show(s, w1.tag, SCEN_NS_PER_S);
    printf("  per tag, most arrivals in any 10 s window: %" PRIu64 " (t%04u), bound %d x 10 + %d = %.0f; "
           "tags above it: %u\n",
           w10.most, w10.tag, TAG_RATE, TAG_BURST, bound10, w10.over);
    if (w10.over)
        busiest_show(s, w10.tag, 10 * SCEN_NS_PER_S);
    char what[160];
    printf("  during the load, by weight:\n");
    double unit = (double)SINK_RATE / (HEAVY_TAGS * HEAVY_WEIGHT + (TAGS - HEAVY_TAGS));
    snprintf(what, sizeof what, "t0000..t%04u, weight %d (the round robin alone would give each %.2f/s)",
             HEAVY_TAGS - 1, HEAVY_WEIGHT, unit * HEAVY_WEIGHT);
    group_show(s, what, 0, HEAVY_TAGS);
    snprintf(what, sizeof what, "t%04u..t%04u, weight 1", HEAVY_TAGS, TAGS - 1);
    group_show(s, what, HEAVY_TAGS, TAGS);
    jitter_show(s);
    printf("  utilisation while every tag was backlogged (seconds 1-%d, the load): %.1f %% of %d/s "
           "(%" PRIu64 " x 200); tags served a second: at least %u; tags whose backlog ran out: %u\n",
           s->seconds, util, SINK_RATE, ok_load, served_min, emptied);
    if (s->lost)
        printf("  (%" PRIu64 " arrivals not kept per tag: out of memory)\n", s->lost);
    bool pass = check(w1.over == 0, "every tag within 2 x 1 s + burst in every 1 s window");
    pass &= check(w10.over == 0, "every tag within 2 x 10 s + burst in every 10 s window");
    pass &= check(util >= UTIL_TARGET && emptied == 0, "utilisation >= 95 % while backlogged");
    pass &= check(once == s->messages && !dup, "every message reached the sink exactly once");
    pass &= check(s->bad_key == 0 && !s->lost, "every request carried its message's tag");
    printf("  files: %s/" NAME ".csv, %s/" NAME ".png\n", s->o->out, s->o->out);
    return pass;
}

int scen_taglimits_run(const scen_opts *o)
{
    taglimits *s = calloc(1, sizeof *s);
    if (!s)
        return scen_fail("out of memory");
    s->o = o;
    s->seconds = o->seconds ? o->seconds : DEFAULT_S;
    s->sink_burst = o->sink_burst ? o->sink_burst : SINK_BURST;
    s->broker_burst = o->broker_burst ? o->broker_burst : BROKER_BURST;
    s->per_tag = (uint64_t)TAG_RATE * (uint64_t)s->seconds + 2;
    s->messages = s->per_tag * TAGS;
    s->nbins = (size_t)s->seconds + DRAIN_S;
    for (unsigned i = 0; i < TAGS; i++)
        s->tag[i].last_ok_bin = -1;
    s->distinct = calloc(s->nbins, sizeof *s->distinct);
    s->backlog = malloc(s->nbins * sizeof *s->backlog);
    scen_log *l = NULL;
    scen_rig rig;
    int rc = -1, opened = -1;
    if (!s->distinct || !s->backlog) {
        scen_fail("out of memory");
        goto out;
    }
    memset(s->backlog, 0xff, s->nbins * sizeof *s->backlog);
    const scen_rig_cfg cfg = {.sink_rate_per_s = SINK_RATE, .sink_burst = s->sink_burst,
                              .rate_milli = SINK_RATE * 1000ull, .burst = s->broker_burst,
                              .consumers = CONSUMERS, .workers = WORKERS, .key_header = "X-Sluice-Tag",
                              .key_rate_per_s = SINK_RATE, .key_burst = s->sink_burst, .tags = TAGS};
    scen_note(NAME ": starting sluiced and sluice-sink; output in %s", o->out);
    opened = scen_rig_open(&rig, o, &cfg);
    if (opened != 0 || broker_setup(s, &rig) != 0)
        goto out;
    int ran = run(s, &rig, &l);
    if (l && scen_log_totals_get(l)->arrived) {
        int plotted = csv_and_chart(s, l);
        rc = summary(s, l) && plotted == 0 && ran == 0 ? 0 : -1;
    }
out:
    if (opened == 0 && scen_rig_close(&rig) != 0)
        rc = -1;
    scen_log_destroy(&l);
    for (unsigned i = 0; i < TAGS; i++)
        free(s->tag[i].ns);
    free(s->distinct);
    free(s->backlog);
    free(s);
    return rc;
}
