/*
 * scen_load.c - producer threads on a schedule.
 *
 * The load owns its threads, one sl_client per thread, the per-second
 * counters and the per-message confirmation marks. Counters are atomics,
 * incremented by the producers and read by the sampler while they run; the
 * marks are written by the one thread that published the message and read
 * only after the threads are joined.
 *
 * Steady threads publish synchronously, so the time a publish takes (a
 * group commit) adds to their sleep: N threads sleeping a mean of
 * sleep_max_ms / 2 offer a little less than N * 2000 / sleep_max_ms
 * messages a second. Paced streams keep their spacing whatever the commit
 * takes, with sl_send_async and at most PACED_WINDOW publishes in flight;
 * one that falls behind catches up back to back.
 *
 * Bounds: every loop stops at end_ns, at a signal, at max_messages
 * sequence numbers, and after MAX_STEPS iterations; a paced thread then
 * waits at most DRAIN_MS for its last confirmations, and counts the ones
 * that did not come as failed. Random sleeps come from a xorshift generator
 * per thread, seeded from the run's seed and the thread's index.
 */
#include "scen_load.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "scen_log.h"
#include "sluice.h"

#define PACED_WINDOW 1024          /* publishes in flight per paced stream */
#define CLIENT_TIMEOUT_MS 5000
#define DRAIN_MS     5000
#define MAX_STEPS    100000000

typedef struct producer {
    struct scen_load *l;
    sl_client *c;
    pthread_t thread;
    bool started;
    unsigned index;
    const scen_load_paced *paced; /* NULL: a steady producer */
    uint64_t rng;
} producer;

typedef struct pending {
    uint64_t ticket, seq;
    size_t second;
    unsigned level;
} pending;

struct scen_load {
    scen_load_cfg cfg;
    size_t nseconds;
    _Atomic uint64_t (*counts)[3]; /* per second: attempted, confirmed, failed */
    _Atomic uint64_t next_seq;
    atomic_bool stop;              /* set when the load is torn down early */
    uint8_t *marks;                /* per message: 0, or its level + 1 once confirmed */
    producer prod[SCEN_LOAD_MAX_STEADY + SCEN_LOAD_MAX_PACED];
    unsigned nprod;
    bool finished;
};

enum { ATTEMPTED, CONFIRMED, FAILED };

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static bool running(const scen_load *l)
{
    return !scen_stopping() && !atomic_load(&l->stop);
}

static size_t second_of(const scen_load *l, int64_t t_ns)
{
    int64_t rel = t_ns - l->cfg.start_ns;
    size_t i = rel > 0 ? (size_t)(rel / SCEN_NS_PER_S) : 0;
    return i < l->nseconds ? i : l->nseconds - 1;
}

static void count(scen_load *l, size_t second, int what)
{
    atomic_fetch_add(&l->counts[second][what], 1);
}

/* window_end returns the end of the window "every for len" holding rel, or
 * -1 when rel is outside every window. */
static int64_t window_end(int64_t rel, int64_t every, int64_t len)
{
    if (every <= 0)
        return INT64_MAX;
    int64_t k = rel / every;
    return k >= 1 && rel - k * every < len ? k * every + len : -1;
}

/* window_next returns the start of the first window at or after rel. */
static int64_t window_next(int64_t rel, int64_t every, int64_t len)
{
    if (every <= 0 || window_end(rel, every, len) >= 0)
        return rel;
    return (rel / every + 1) * every;
}

static void *steady_run(void *arg)
{
    producer *p = arg;
    scen_load *l = p->l;
    const scen_load_cfg *cfg = &l->cfg;
    char body[SCEN_LOG_BODY_BYTES];
    for (int step = 0; step < MAX_STEPS && running(l); step++) {
        int64_t now = scen_now_ns();
        if (now >= cfg->end_ns)
            break;
        if (now < cfg->start_ns) {
            scen_sleep_until(cfg->start_ns);
            continue;
        }
        int64_t pause_end = window_end(now - cfg->start_ns, cfg->pause_every_ns, cfg->pause_for_ns);
        if (cfg->pause_every_ns > 0 && pause_end >= 0) {
            int64_t until = cfg->start_ns + pause_end;
            scen_sleep_until(until < cfg->end_ns ? until : cfg->end_ns);
            continue;
        }
        uint64_t seq = atomic_fetch_add(&l->next_seq, 1);
        if (seq >= cfg->max_messages)
            break;
        size_t second = second_of(l, now);
        count(l, second, ATTEMPTED);
        sl_put m = {.body = body, .level = (int)cfg->steady_level, .cost = 1};
        m.body_len = scen_log_body(body, seq, now, cfg->steady_level);
        if (sl_send(p->c, &m, NULL) == SL_OK) {
            l->marks[seq] = (uint8_t)(cfg->steady_level + 1);
            count(l, second, CONFIRMED);
        } else {
            count(l, second, FAILED);
        }
        int64_t nap_ns = (int64_t)(rng_next(&p->rng) % (cfg->sleep_max_ms + 1)) * SCEN_NS_PER_MS;
        int64_t until = scen_now_ns() + nap_ns;
        scen_sleep_until(until < cfg->end_ns ? until : cfg->end_ns);
    }
    return NULL;
}

/* confirm_take settles the oldest in-flight publish of a paced stream. */
static void confirm_take(scen_load *l, pending *ring, size_t *head, size_t *n,
                         const sl_confirm *k)
{
    /* confirmations come in publish order; a ticket not at the head is skipped past */
    for (size_t i = 0; i < *n && i < PACED_WINDOW; i++) {
        pending *q = &ring[(*head + i) % PACED_WINDOW];
        if (q->ticket != k->ticket)
            continue;
        if (k->err == SL_OK)
            l->marks[q->seq] = (uint8_t)(q->level + 1);
        count(l, q->second, k->err == SL_OK ? CONFIRMED : FAILED);
        q->ticket = 0;
        break;
    }
    while (*n && ring[*head].ticket == 0) {
        *head = (*head + 1) % PACED_WINDOW;
        (*n)--;
    }
}

static void *paced_run(void *arg)
{
    producer *p = arg;
    scen_load *l = p->l;
    const scen_load_cfg *cfg = &l->cfg;
    const scen_load_paced *s = p->paced;
    pending *ring = calloc(PACED_WINDOW, sizeof *ring);
    char body[SCEN_LOG_BODY_BYTES];
    size_t head = 0, n = 0;
    sl_confirm k;
    int64_t interval_ns = SCEN_NS_PER_S / s->rate_per_s;
    int64_t next_ns = cfg->start_ns + window_next(0, s->every_ns, s->for_ns);
    for (int step = 0; ring && step < MAX_STEPS && running(l); step++) {
        while (n && sl_send_wait(p->c, 0, &k) == SL_OK)
            confirm_take(l, ring, &head, &n, &k);
        int64_t now = scen_now_ns();
        if (now >= cfg->end_ns || next_ns >= cfg->end_ns)
            break;
        if (now < next_ns) {
            int64_t wait_ms = (next_ns - now) / SCEN_NS_PER_MS;
            if (n && wait_ms > 0 && sl_send_wait(p->c, (int)wait_ms, &k) == SL_OK)
                confirm_take(l, ring, &head, &n, &k);
            else
                scen_sleep_until(next_ns);
            continue;
        }
        if (n == PACED_WINDOW) {
            if (sl_send_wait(p->c, 100, &k) == SL_OK)
                confirm_take(l, ring, &head, &n, &k);
            continue;
        }
        uint64_t seq = atomic_fetch_add(&l->next_seq, 1);
        if (seq >= cfg->max_messages)
            break;
        size_t second = second_of(l, now);
        uint64_t ticket = 0;
        sl_put m = {.body = body, .level = (int)s->level, .cost = 1};
        m.body_len = scen_log_body(body, seq, now, s->level);
        count(l, second, ATTEMPTED);
        if (sl_send_async(p->c, &m, &ticket) != SL_OK || ticket == 0) {
            count(l, second, FAILED);
        } else {
            ring[(head + n) % PACED_WINDOW] = (pending){ticket, seq, second, s->level};
            n++;
        }
        next_ns += interval_ns;
        next_ns = cfg->start_ns + window_next(next_ns - cfg->start_ns, s->every_ns, s->for_ns);
    }
    int64_t drain_end = scen_now_ns() + DRAIN_MS * SCEN_NS_PER_MS;
    for (int step = 0; ring && n && step < MAX_STEPS; step++) {
        int64_t left_ms = (drain_end - scen_now_ns()) / SCEN_NS_PER_MS;
        if (left_ms <= 0 || sl_send_wait(p->c, (int)left_ms, &k) != SL_OK)
            break;
        confirm_take(l, ring, &head, &n, &k);
    }
    for (size_t i = 0; ring && i < n; i++) /* never confirmed: failed */
        if (ring[(head + i) % PACED_WINDOW].ticket)
            count(l, ring[(head + i) % PACED_WINDOW].second, FAILED);
    free(ring);
    return NULL;
}

static int producer_add(scen_load *l, const scen_load_paced *paced)
{
    if (l->nprod >= sizeof l->prod / sizeof l->prod[0])
        return scen_fail("too many producers");
    producer *p = &l->prod[l->nprod];
    sl_options o = {.timeout_ms = CLIENT_TIMEOUT_MS};
    *p = (producer){.l = l, .index = l->nprod, .paced = paced};
    p->rng = ((uint64_t)l->cfg.seed << 32 | (p->index + 1)) * 0x9E3779B97F4A7C15ull;
    if (!p->rng)
        p->rng = 1;
    int rc = sl_connect(l->cfg.endpoint, &o, &p->c);
    if (rc == SL_OK)
        rc = sl_levels(p->c, NULL, NULL); /* the broker answers */
    if (rc != SL_OK) {
        sl_close(&p->c);
        return scen_fail("producer %u: cannot reach the broker: %s", p->index, sl_strerror(rc));
    }
    l->nprod++;
    return 0;
}

int scen_load_new(const scen_load_cfg *cfg, scen_load **out)
{
    *out = NULL;
    if (cfg->steady_threads > SCEN_LOAD_MAX_STEADY || cfg->end_ns <= cfg->start_ns)
        return scen_fail("bad load: %u steady producers", cfg->steady_threads);
    scen_load *l = calloc(1, sizeof *l);
    if (!l)
        return scen_fail("out of memory");
    l->cfg = *cfg;
    l->nseconds = (size_t)((cfg->end_ns - cfg->start_ns) / SCEN_NS_PER_S) + 2;
    l->counts = calloc(l->nseconds, sizeof *l->counts);
    l->marks = calloc(cfg->max_messages ? cfg->max_messages : 1, 1);
    int rc = l->counts && l->marks ? 0 : scen_fail("out of memory");
    for (unsigned i = 0; rc == 0 && i < cfg->steady_threads; i++)
        rc = producer_add(l, NULL);
    for (unsigned i = 0; rc == 0 && i < SCEN_LOAD_MAX_PACED; i++)
        if (cfg->paced[i].rate_per_s)
            rc = producer_add(l, &l->cfg.paced[i]);
    for (unsigned i = 0; rc == 0 && i < l->nprod; i++) {
        producer *p = &l->prod[i];
        int err = pthread_create(&p->thread, NULL, p->paced ? paced_run : steady_run, p);
        if (err)
            rc = scen_fail("cannot start producer %u: %s", i, strerror(err));
        p->started = err == 0;
    }
    if (rc) {
        scen_load_destroy(&l);
        return -1;
    }
    *out = l;
    return 0;
}

scen_load_second scen_load_second_get(const scen_load *l, size_t i)
{
    if (i >= l->nseconds)
        return (scen_load_second){0};
    return (scen_load_second){atomic_load(&l->counts[i][ATTEMPTED]),
                                   atomic_load(&l->counts[i][CONFIRMED]),
                                   atomic_load(&l->counts[i][FAILED])};
}

void scen_load_stop(scen_load *l)
{
    atomic_store(&l->stop, true);
}

void scen_load_finish(scen_load *l)
{
    if (l->finished)
        return;
    for (unsigned i = 0; i < l->nprod; i++)
        if (l->prod[i].started)
            pthread_join(l->prod[i].thread, NULL);
    l->finished = true;
}

uint64_t scen_load_messages(const scen_load *l)
{
    uint64_t n = atomic_load(&l->next_seq);
    return n < l->cfg.max_messages ? n : l->cfg.max_messages;
}

bool scen_load_confirmed(const scen_load *l, uint64_t seq)
{
    return seq < l->cfg.max_messages && l->marks[seq] != 0;
}

void scen_load_level_counts(const scen_load *l, uint64_t *out)
{
    uint64_t n = scen_load_messages(l);
    for (uint64_t i = 0; i < n; i++)
        if (l->marks[i] && l->marks[i] <= SCEN_LEVELS)
            out[l->marks[i] - 1]++;
}

void scen_load_destroy(scen_load **lp)
{
    scen_load *l = lp ? *lp : NULL;
    if (!l)
        return;
    *lp = NULL;
    scen_load_stop(l);
    scen_load_finish(l);
    for (unsigned i = 0; i < l->nprod; i++)
        sl_close(&l->prod[i].c);
    free(l->counts);
    free(l->marks);
    free(l);
}
