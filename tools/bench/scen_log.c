/*
 * scen_log.c - read sluice-sink's request log as it grows.
 *
 * The sink writes one line per POST, "<CLOCK_MONOTONIC ns> <status>
 * <body>" ("<ns> <status> <key> <body>" when it limits per key: see
 * scen_log_keyed), in the order it decided them (it reads the clock and
 * writes the line under one lock), and flushes at least every 100 ms. Each
 * poll reads what was added since the last one, in READ_BYTES chunks (at
 * most MAX_CHUNKS per poll, so a poll is bounded), and keeps an unfinished
 * last line for the next poll. A line longer than LINE_BYTES cannot come from the
 * sink (it cuts bodies at 256 bytes, escaped at most 4x) and is counted as
 * unparsed.
 *
 * Bodies are the bench's own: "s=SEQ t=PUBLISH_NS l=LEVEL" (see
 * scen_log_body; written and read only here). The publish time is on
 * the same monotonic clock as the sink's, so their difference is the time
 * from publish to the sink's decision.
 *
 * Memory: the bins and the per-message counters are sized at creation; the
 * arrival times and the publish-to-200 times grow with the log, up to
 * MAX_SAMPLES each (8 and 8 bytes per entry); past that they stop growing
 * and the conformance and percentile figures cover the first MAX_SAMPLES.
 * Costs: O(1) per line; the window maximum is O(arrivals) per window size;
 * a percentile sorts the times of its level (O(n log n)).
 */
#include "scen_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BYTES  65536
#define MAX_CHUNKS  4096               /* 256 MB per poll at most */
#define LINE_BYTES  2048
#define MAX_SAMPLES (16u << 20)

typedef struct sample_vec {
    void *v;
    size_t n, cap, size; /* size: bytes per entry */
} sample_vec;

typedef struct latency {
    float ms;
    int8_t level;
} latency;

struct scen_log {
    char path[SCEN_PATH_BYTES];
    int fd;
    int64_t origin_ns, bin_ns;
    size_t nbins;
    scen_log_bin *bins;
    uint64_t nseq;
    uint8_t *seq_ok;
    scen_log_totals t;
    sample_vec arrivals;  /* int64_t ns */
    sample_vec latencies; /* latency */
    char buf[READ_BYTES];
    char line[LINE_BYTES];
    size_t line_len;
    int line_too_long;
    scen_log_key_fn key_fn; /* set: the lines carry a key */
    void *key_arg;
};

size_t scen_log_body(char *buf, uint64_t seq, int64_t pub_ns, unsigned level)
{
    int n = snprintf(buf, SCEN_LOG_BODY_BYTES, "s=%" PRIu64 " t=%" PRId64 " l=%u", seq, pub_ns,
                     level);
    return n > 0 && n < SCEN_LOG_BODY_BYTES ? (size_t)n : 0;
}

static void vec_push(sample_vec *s, const void *item)
{
    if (s->n == s->cap) {
        if (s->cap >= MAX_SAMPLES)
            return;
        size_t cap = s->cap ? s->cap * 2 : 4096;
        void *v = realloc(s->v, cap * s->size);
        if (!v)
            return; /* the figures then cover what fitted */
        s->v = v;
        s->cap = cap;
    }
    memcpy((char *)s->v + s->n * s->size, item, s->size);
    s->n++;
}

int scen_log_new(const char *path, int64_t origin_ns, int64_t bin_ns, size_t nbins,
                      uint64_t nseq, scen_log **out)
{
    *out = NULL;
    scen_log *l = calloc(1, sizeof *l);
    if (!l)
        return scen_fail("out of memory");
    l->bins = calloc(nbins + 1, sizeof *l->bins); /* + a zero bin for any index past the end */
    l->seq_ok = calloc(nseq ? nseq : 1, 1);
    if (!l->bins || !l->seq_ok) {
        scen_log_destroy(&l);
        return scen_fail("out of memory for %zu bins and %" PRIu64 " messages", nbins, nseq);
    }
    snprintf(l->path, sizeof l->path, "%s", path);
    l->fd = -1;
    l->origin_ns = origin_ns;
    l->bin_ns = bin_ns > 0 ? bin_ns : SCEN_NS_PER_S;
    l->nbins = nbins;
    l->nseq = nseq;
    l->arrivals.size = sizeof(int64_t);
    l->latencies.size = sizeof(latency);
    *out = l;
    return 0;
}

void scen_log_destroy(scen_log **lp)
{
    scen_log *l = lp ? *lp : NULL;
    if (!l)
        return;
    *lp = NULL;
    if (l->fd >= 0)
        close(l->fd);
    free(l->bins);
    free(l->seq_ok);
    free(l->arrivals.v);
    free(l->latencies.v);
    free(l);
}

/* body_parse reads "s=SEQ t=NS l=LEVEL". Returns 1 when all three are there. */
static int body_parse(const char *s, uint64_t *seq, int64_t *pub_ns, unsigned *level)
{
    char *end;
    if (strncmp(s, "s=", 2) != 0)
        return 0;
    *seq = strtoull(s + 2, &end, 10);
    if (strncmp(end, " t=", 3) != 0)
        return 0;
    *pub_ns = strtoll(end + 3, &end, 10);
    if (strncmp(end, " l=", 3) != 0)
        return 0;
    *level = (unsigned)strtoul(end + 3, &end, 10);
    return 1;
}

void scen_log_keyed(scen_log *l, scen_log_key_fn fn, void *arg)
{
    l->key_fn = fn;
    l->key_arg = arg;
}

static void line_take(scen_log *l, char *s)
{
    char *end;
    errno = 0;
    long long ns = strtoll(s, &end, 10);
    if (errno || end == s || *end != ' ') {
        l->t.unparsed++;
        return;
    }
    long status = strtol(end + 1, &end, 10);
    if (*end != ' ' && *end != '\0') {
        l->t.unparsed++;
        return;
    }
    char *body = *end ? end + 1 : end;
    const char *key = NULL;
    if (l->key_fn) { /* "<key> <body>": the key holds no space */
        key = body;
        char *space = strchr(body, ' ');
        body = space ? space + 1 : body + strlen(body);
        if (space)
            *space = '\0';
    }
    scen_log_totals *t = &l->t;
    int64_t at_ns = (int64_t)ns;
    uint64_t seq;
    int64_t pub_ns;
    unsigned level;
    int parsed = body_parse(body, &seq, &pub_ns, &level);
    if (key)
        l->key_fn(l->key_arg, at_ns, (int)status, key, parsed ? seq : UINT64_MAX);
    size_t i = at_ns <= l->origin_ns ? 0 : (size_t)((at_ns - l->origin_ns) / l->bin_ns);
    scen_log_bin past = {0}; /* after the last bin: counted in the totals only */
    scen_log_bin *b = i < l->nbins ? &l->bins[i] : &past;
    if (!t->first_ns)
        t->first_ns = at_ns;
    t->last_ns = at_ns;
    t->arrived++;
    b->arrived++;
    vec_push(&l->arrivals, &at_ns);
    if (status == 429) {
        t->throttled++;
        b->throttled++;
    } else if (status != 200) {
        t->other++;
    }
    if (status != 200)
        return;
    t->ok++;
    b->ok++;
    t->last_ok_ns = at_ns;
    if (!parsed) {
        t->foreign++;
        return;
    }
    if (seq < l->nseq && l->seq_ok[seq] < UINT8_MAX)
        l->seq_ok[seq]++;
    if (level < SCEN_LEVELS) {
        b->ok_level[level]++;
        t->ok_level[level]++;
    }
    latency lat = {.ms = (float)((double)(at_ns - pub_ns) / (double)SCEN_NS_PER_MS),
                   .level = (int8_t)(level < SCEN_LEVELS ? (int)level : -1)};
    b->latency_ms_sum += lat.ms;
    b->latency_n++;
    vec_push(&l->latencies, &lat);
}

/* chunk_take splits buf into lines, carrying an unfinished one over. */
static void chunk_take(scen_log *l, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        if (c != '\n') {
            if (l->line_len < sizeof l->line - 1)
                l->line[l->line_len++] = c;
            else
                l->line_too_long = 1;
            continue;
        }
        l->line[l->line_len] = '\0';
        if (l->line_too_long)
            l->t.unparsed++;
        else if (l->line_len)
            line_take(l, l->line);
        l->line_len = 0;
        l->line_too_long = 0;
    }
}

int scen_log_poll(scen_log *l)
{
    if (l->fd < 0) {
        l->fd = open(l->path, O_RDONLY | O_CLOEXEC);
        if (l->fd < 0)
            return errno == ENOENT ? 0 : scen_fail("cannot open %s: %s", l->path, strerror(errno));
    }
    for (int i = 0; i < MAX_CHUNKS; i++) {
        ssize_t n = read(l->fd, l->buf, sizeof l->buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return scen_fail("reading %s: %s", l->path, strerror(errno));
        if (n == 0)
            break;
        chunk_take(l, l->buf, (size_t)n);
    }
    return 0;
}

const scen_log_bin *scen_log_bin_at(const scen_log *l, size_t i)
{
    return &l->bins[i < l->nbins ? i : l->nbins];
}

const scen_log_totals *scen_log_totals_get(const scen_log *l)
{
    return &l->t;
}

unsigned scen_log_seq_ok(const scen_log *l, uint64_t seq)
{
    return seq < l->nseq ? l->seq_ok[seq] : 0;
}

uint64_t scen_log_window_max_of(const int64_t *a, size_t n, int64_t window_ns)
{
    size_t j = 0;
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        while (j < i && a[i] - a[j] >= window_ns)
            j++;
        if (i - j + 1 > best)
            best = i - j + 1;
    }
    return best;
}

uint64_t scen_log_window_max(const scen_log *l, int64_t window_ns)
{
    return scen_log_window_max_of(l->arrivals.v, l->arrivals.n, window_ns);
}

double scen_log_burst_needed_of(const int64_t *a, size_t n, double rate_per_s)
{
    double interval_ns = 1e9 / rate_per_s, tat = 0, most = 0;
    for (size_t i = 0; i < n; i++) {
        double t = (double)a[i];
        if (i == 0 || tat < t)
            tat = t;
        double need = (tat - t) / interval_ns + 1;
        if (need > most)
            most = need;
        tat += interval_ns;
    }
    return most;
}

static int float_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double scen_log_latency(scen_log *l, int level, double pct)
{
    const latency *v = l->latencies.v;
    size_t n = 0;
    float *ms = malloc((l->latencies.n ? l->latencies.n : 1) * sizeof *ms);
    if (!ms)
        return 0;
    for (size_t i = 0; i < l->latencies.n; i++)
        if (level < 0 || v[i].level == level)
            ms[n++] = v[i].ms;
    double r = 0;
    if (n) {
        qsort(ms, n, sizeof *ms, float_cmp);
        size_t k = (size_t)ceil(pct / 100.0 * (double)n);
        r = ms[k ? (k > n ? n : k) - 1 : 0];
    }
    free(ms);
    return r;
}

int scen_log_conformance(const scen_log *l, FILE *f, double rate_per_s, double burst,
                              double sink_rate_per_s, double sink_burst)
{
    static const int64_t windows_ms[] = {100, 1000, 10000};
    int over = 0;
    fprintf(f, "  conformance (arrivals at the sink in any window, from its log):\n");
    for (size_t i = 0; i < sizeof windows_ms / sizeof windows_ms[0]; i++) {
        double tau_s = (double)windows_ms[i] / 1000.0;
        uint64_t seen = scen_log_window_max(l, windows_ms[i] * SCEN_NS_PER_MS);
        double bound = rate_per_s * tau_s + burst, sink = sink_rate_per_s * tau_s + sink_burst;
        int ok = (double)seen <= bound + 1e-9;
        over += !ok;
        fprintf(f, "    %5.1f s: max %6" PRIu64 "   broker bound rate*t+burst %8.1f %s   sink allows %8.1f\n",
                tau_s, seen, bound, ok ? "(within)" : "(above) ", sink);
    }
    fprintf(f, "    the arrivals fit a gcra bucket of %.0f/s with a burst of %.1f (the sink's is %.0f);\n"
               "    above the broker's burst is the consumers' jitter: a consumer that stalls sends what it\n"
               "    holds back to back\n",
            rate_per_s, scen_log_burst_needed_of(l->arrivals.v, l->arrivals.n, rate_per_s), sink_burst);
    if (l->arrivals.n >= MAX_SAMPLES)
        fprintf(f, "    (over the first %u arrivals only)\n", MAX_SAMPLES);
    return over;
}
