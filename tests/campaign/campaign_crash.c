/*
 * campaign_crash.c - kill -9 the broker over and over under a pipelined load
 * and prove that no confirmed message is lost.
 *
 *   campaign_crash [DURATION_S] [--producers N] [--consumers N]
 *                  [--kill-every-ms MS] [--window N] [--fair] [--quiet]
 *
 * A supervisor (main) starts the real sluiced ($SLUICE_BIN, default bin/) on
 * an ipc:// endpoint in a fresh directory under /tmp and waits for its READY
 * line. Producer threads publish unique bodies with up to --window publishes
 * in flight each; consumer threads consume and acknowledge; every publish,
 * confirmation, delivery and accepted ack goes into one history (history.h).
 * Every --kill-every-ms (2000) the supervisor sends SIGKILL, reaps the broker
 * and starts it again at once, timing restart-to-READY. The clients are never
 * told: the library reconnects by itself, and a publish that gets no answer
 * within PUT_TIMEOUT_MS is left "attempted, unconfirmed".
 *
 * After DURATION_S (60) the producers stop, the broker is killed and
 * restarted once more, and the consumers drain until the broker's statistics
 * show nothing ready, leased or delayed. Then the history is classified and
 * printed with the kills and restart times. Exit status: 0 when nothing
 * confirmed was lost and nothing unexpected or corrupt was delivered; 1 when
 * something was, or the broker died on its own, could not be restarted, kept
 * messages it would not deliver (dead letters, an unfinished drain) or did
 * not stop cleanly on SIGTERM at the end; 2 when the campaign could not run
 * or was interrupted (SIGINT, SIGTERM). The broker is stopped by its PID and
 * the directory removed in every case.
 *
 * With --fair, every level is served fair by tag and each publish carries
 * one of FAIR_TAGS tags: the same promise through the fair take's
 * read-ahead and the batched deletes of acknowledged records.
 *
 * Producers stay at most BACKLOG_MAX messages ahead of the consumers, so the
 * final drain is short whatever the duration. Seeded by $SLUICE_SEED.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "campaign.h"
#include "harness.h"
#include "history.h"
#include "proc.h"
#include "sluice.h"
#include "sluice_admin.h"

#define PUT_TIMEOUT_MS   1000
#define BACKLOG_MAX      20000
#define CONSUMER_CREDIT  32
#define DRAIN_MAX_MS     120000
#define MSGS_PER_SECOND  60000   /* history slots per second of duration, generously */
#define THREADS_MAX      16
#define FAIR_TAGS        50

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct opts {
    unsigned duration_s, producers, consumers, kill_every_ms, window;
    int quiet, fair;
} opts;

typedef struct shared {
    th_broker b;
    unsigned tags; /* per publish, with --fair */
    history *h;
    atomic_int stop_producers, stop_consumers;
} shared;

typedef struct producer {
    shared *s;
    pthread_t t;
    unsigned seed;
    campaign_pub pub;
    int open_failed;
} producer;

typedef struct consumer {
    shared *s;
    pthread_t t;
    uint64_t deliveries, acked, stale, ack_failed, resubscribes;
} consumer;

static void *produce(void *arg)
{
    producer *p = arg;
    shared *s = p->s;
    unsigned window = p->pub.window;
    if (campaign_pub_open(&p->pub, s->b.endpoint, s->h, window, PUT_TIMEOUT_MS, p->seed) != 0) {
        p->open_failed = 1;
        return NULL;
    }
    p->pub.tags = s->tags;
    while (!atomic_load(&s->stop_producers)) {
        uint64_t now = th_now_ms();
        if (!p->pub.full && history_backlog(s->h) < BACKLOG_MAX)
            campaign_pub_fill(&p->pub, now);
        if (p->pub.npend)
            campaign_pub_collect(&p->pub, 20);
        else
            campaign_sleep_ms(5);
        campaign_pub_expire(&p->pub, th_now_ms());
    }
    /* the last answers: wait for them as long as any other publish */
    uint64_t end = th_now_ms() + PUT_TIMEOUT_MS;
    while (p->pub.npend && p->pub.c && th_now_ms() < end)
        campaign_pub_collect(&p->pub, 50);
    campaign_pub_close(&p->pub);
    return NULL;
}

static void *consume(void *arg)
{
    consumer *k = arg;
    shared *s = k->s;
    sl_client *c = NULL;
    while (!atomic_load(&s->stop_consumers)) {
        if (!c) {
            if (campaign_client(s->b.endpoint, 1000, &c) != SL_OK) {
                campaign_sleep_ms(50);
                continue;
            }
            if (sl_subscribe(c, NULL, NULL, 0, CONSUMER_CREDIT) != SL_OK) {
                sl_close(&c); /* the broker was down: start over */
                k->resubscribes++;
                continue;
            }
        }
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        history_deliver(s->h, d->id, d->body, d->body_len, d->attempt);
        k->deliveries++;
        int rc = sl_ack(c, d);
        if (rc == SL_OK) {
            history_ack(s->h, d->id);
            k->acked++;
        } else if (rc == SL_ESTALE) {
            k->stale++; /* issued before a restart: it will come again */
        } else {
            k->ack_failed++; /* lost with its connection: it will come again */
        }
        sl_delivery_free(&d);
    }
    sl_close(&c);
    return NULL;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.duration_s = 60, .producers = 2, .consumers = 2, .kill_every_ms = 2000, .window = 64};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        unsigned *dst = NULL;
        if (strcmp(a, "--quiet") == 0 || strcmp(a, "--fair") == 0) {
            *(a[2] == 'q' ? &o->quiet : &o->fair) = 1;
            continue;
        }
        if (strcmp(a, "--producers") == 0)
            dst = &o->producers;
        else if (strcmp(a, "--consumers") == 0)
            dst = &o->consumers;
        else if (strcmp(a, "--kill-every-ms") == 0)
            dst = &o->kill_every_ms;
        else if (strcmp(a, "--window") == 0)
            dst = &o->window;
        char *end;
        const char *v = dst ? (i + 1 < argc ? argv[++i] : "") : a;
        unsigned long n = strtoul(v, &end, 10);
        if (*v == '\0' || *end != '\0' || n == 0 || n > 100000000) {
            fprintf(stderr,
                    "usage: campaign_crash [DURATION_S] [--producers N] [--consumers N] "
                    "[--kill-every-ms MS] [--window N] [--fair] [--quiet]\n");
            return -1;
        }
        *(dst ? dst : &o->duration_s) = (unsigned)n;
    }
    if (o->producers > THREADS_MAX || o->consumers > THREADS_MAX || o->window > CAMPAIGN_WINDOW_MAX) {
        fprintf(stderr, "campaign_crash: at most %d producers and consumers, window %d\n", THREADS_MAX,
                CAMPAIGN_WINDOW_MAX);
        return -1;
    }
    return 0;
}

/* log_tail prints the end of the broker's log, for a broker that misbehaved. */
static void log_tail(const th_broker *b)
{
    proc p = {.name = "sluiced"};
    snprintf(p.log, sizeof p.log, "%s", b->log);
    proc_tail(&p, 4096);
}

typedef struct restarts {
    unsigned kills, deaths;
    double sum_ms, max_ms;
} restarts;

/* restart kills the broker (unless it already died) and starts it again,
 * timing restart-to-READY. Returns 0 or -1. */
static int restart(shared *s, restarts *r)
{
    int status = 0;
    if (campaign_exited(s->b.pid, &status) == 1) {
        r->deaths++;
        fprintf(stderr, "crash: the broker died on its own (wait status %d)\n", status);
        log_tail(&s->b);
    }
    th_broker_kill9(&s->b);
    uint64_t t0 = th_now_ms();
    if (th_broker_start(&s->b) != 0)
        return -1;
    double ms = (double)(th_now_ms() - t0);
    r->kills++;
    r->sum_ms += ms;
    if (ms > r->max_ms)
        r->max_ms = ms;
    return 0;
}

/* fair_levels serves every level of the broker fair by tag (a setting
 * that persists across its restarts). Returns 0 or -1. */
static int fair_levels(shared *s)
{
    sl_client *c = NULL;
    int rc = campaign_client(s->b.endpoint, 5000, &c);
    for (unsigned l = 0; rc == SL_OK && l < CAMPAIGN_LEVELS; l++)
        rc = sl_level_fair(c, l, 1);
    sl_close(&c);
    if (rc != SL_OK) {
        fprintf(stderr, "crash: cannot serve the levels fair by tag: %s\n", sl_strerror(rc));
        return -1;
    }
    s->tags = FAIR_TAGS;
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    unsigned seed = th_seed();
    static shared s;
    static const char *const extra[] = {"--max-attempts", "1000", "--log-level", "warn", NULL};
    if (th_broker_init(&s.b, extra) != 0 || th_broker_start(&s.b) != 0) {
        fprintf(stderr, "crash: cannot start sluiced (%s)\n", th_bin("sluiced"));
        th_broker_fini(&s.b);
        return 2;
    }
    if (o.fair && fair_levels(&s) != 0) {
        th_broker_fini(&s.b);
        return 2;
    }
    history_cfg hc = {.max_msgs = (uint64_t)o.duration_s * MSGS_PER_SECOND + 100000, .tag = seed,
                      .body_min = 24, .body_max = 300, .big_every = 200, .big_bytes = 8000};
    if (history_new(&hc, &s.h) != 0) {
        fprintf(stderr, "crash: no memory for the history\n");
        th_broker_fini(&s.b);
        return 2;
    }
    if (!o.quiet)
        printf("crash: %u s, %u producers (window %u), %u consumers, kill -9 every %u ms, %s, data in %s\n",
               o.duration_s, o.producers, o.window, o.consumers, o.kill_every_ms,
               o.fair ? "levels fair by tag" : "levels FIFO", s.b.dir);

    static producer prod[THREADS_MAX];
    static consumer cons[THREADS_MAX];
    for (unsigned i = 0; i < o.consumers; i++) {
        cons[i].s = &s;
        pthread_create(&cons[i].t, NULL, consume, &cons[i]);
    }
    for (unsigned i = 0; i < o.producers; i++) {
        prod[i].s = &s;
        prod[i].seed = seed * 31 + i;
        prod[i].pub.window = o.window;
        pthread_create(&prod[i].t, NULL, produce, &prod[i]);
    }

    restarts r = {0};
    int broken = 0;
    uint64_t start = th_now_ms(), end = start + (uint64_t)o.duration_s * 1000;
    uint64_t next_kill = start + o.kill_every_ms, next_report = start + 10000;
    while (!broken && !interrupted && th_now_ms() < end) {
        uint64_t now = th_now_ms();
        if (now >= next_kill) {
            broken = restart(&s, &r) != 0;
            next_kill = th_now_ms() + o.kill_every_ms;
        } else if (campaign_exited(s.b.pid, NULL) == 1) {
            broken = restart(&s, &r) != 0; /* counts and shows the death */
        }
        if (!o.quiet && now >= next_report) {
            history_report hr;
            history_classify(s.h, &hr);
            printf("crash: %3" PRIu64 " s: %u kills, %" PRIu64 " attempted, %" PRIu64 " confirmed, %" PRIu64
                   " delivered\n",
                   (now - start) / 1000, r.kills, hr.attempted, hr.confirmed, hr.delivered);
            fflush(stdout);
            next_report += 10000;
        }
        campaign_sleep_ms(20);
    }

    /* Stop publishing, crash once more, and drain what is left. */
    atomic_store(&s.stop_producers, 1);
    uint64_t abandoned = 0, reconnects = 0;
    for (unsigned i = 0; i < o.producers; i++) {
        pthread_join(prod[i].t, NULL);
        broken |= prod[i].open_failed;
        abandoned += prod[i].pub.abandoned;
        reconnects += prod[i].pub.reconnects;
    }
    if (!broken && !interrupted)
        broken = restart(&s, &r) != 0;
    int drained = 0;
    uint64_t dead = 0, drain_start = th_now_ms();
    sl_client *admin = NULL;
    if (!broken && !interrupted && campaign_client(s.b.endpoint, 1000, &admin) == SL_OK) {
        int empty_twice = 0;
        while (!interrupted && th_now_ms() < drain_start + DRAIN_MAX_MS && empty_twice < 2) {
            int empty = 0;
            if (campaign_exited(s.b.pid, NULL) == 1 && restart(&s, &r) != 0)
                break;
            if (campaign_levels_empty(admin, &empty, &dead) == SL_OK)
                empty_twice = empty ? empty_twice + 1 : 0;
            campaign_sleep_ms(200);
        }
        drained = empty_twice >= 2;
        sl_close(&admin);
    }
    uint64_t drain_ms = th_now_ms() - drain_start;
    atomic_store(&s.stop_consumers, 1);
    uint64_t stale = 0, ack_failed = 0;
    for (unsigned i = 0; i < o.consumers; i++) {
        pthread_join(cons[i].t, NULL);
        stale += cons[i].stale;
        ack_failed += cons[i].ack_failed;
    }
    if (interrupted) {
        fprintf(stderr, "crash: interrupted; broker stopped, %s removed\n", s.b.dir);
        history_destroy(&s.h);
        th_broker_fini(&s.b);
        return 2;
    }
    int stop_status = th_broker_stop(&s.b);

    history_report hr;
    history_classify(s.h, &hr);
    unsigned survived = r.kills - r.deaths;
    printf("crash: %u s, %u kills survived, restart-to-ready mean %.1f ms max %.1f ms; %" PRIu64
           " publishes unanswered across kills, %" PRIu64 " producer reconnects, %" PRIu64
           " acks stale or lost\n",
           o.duration_s, survived, r.kills ? r.sum_ms / r.kills : 0.0, r.max_ms, abandoned, reconnects,
           stale + ack_failed);
    history_print(&hr, "crash: ", stdout);
    int fail = history_bad(&hr) > 0 || broken || !drained || r.deaths || dead || stop_status != 0;
    if (!drained)
        printf("crash: the broker still held messages after %" PRIu64 " ms of draining\n", drain_ms);
    if (dead)
        printf("crash: %" PRIu64 " dead letters (counted as lost if confirmed)\n", dead);
    if (r.deaths)
        printf("crash: the broker died on its own %u time(s)\n", r.deaths);
    if (broken)
        printf("crash: the broker could not be restarted\n");
    if (stop_status != 0)
        printf("crash: the broker did not stop cleanly on SIGTERM (status %d)\n", stop_status);
    printf("crash: %s (seed %u)\n", fail ? "FAIL" : "ok", seed);
    if (fail)
        log_tail(&s.b);
    history_destroy(&s.h);
    th_broker_fini(&s.b);
    return fail ? 1 : 0;
}
