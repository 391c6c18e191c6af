/*
 * scen_tenants.c - the tenant rows of sluice-bench: what serving a level
 * fair by tag buys a quiet tenant, and what it costs.
 *
 * Each row starts a broker of its own (bench_spawn, in a subdirectory of
 * the run's directory), so that a 100,000-message backlog never reaches
 * another row and the RSS rows start from a fresh process; the broker is
 * stopped (SIGTERM, by PID) when the row ends, whatever happened.
 *
 *   noisy neighbour   Level "normal" (1), the broker's sink at
 *                     SCEN_TENANTS_SINK_PER_S. Tenant A (tag "A") has
 *                     SCEN_TENANTS_BACKLOG messages waiting, published with
 *                     WINDOW publishes outstanding (5-6 s here); tenant B publishes
 *                     SCEN_TENANTS_B_PER_S a second for SCEN_TENANTS_B_SECONDS
 *                     (confirmed sends, open loop). One consumer thread in
 *                     this process (credit CREDIT, acking each) notes when
 *                     each of B's messages arrives: B's publish->deliver p99.
 *                     FIFO: B waits behind A's whole backlog (100 s at
 *                     1,000/s), so its messages are not delivered within
 *                     the run; they count at their age when it ends, a lower
 *                     bound, and the row says how many were still waiting.
 *   1,000 tags        SCEN_TENANTS_TAGS x SCEN_TENANTS_PER_TAG messages,
 *                     tags interleaved, no sink limit, drained by one
 *                     consumer thread with credit CREDIT_DRAIN acking each:
 *                     messages per second from the first delivery to the
 *                     last ack, FIFO then fair, each on a fresh broker,
 *                     twice, alternating (on a shared machine a single short
 *                     run swings either way by 2x); the best of each, and
 *                     their ratio.
 *   RSS per tag       The broker's VmRSS (/proc/PID/status) with
 *                     SCEN_TENANTS_BACKLOG messages, each with a tag of its
 *                     own, waiting in a FIFO level, then, on a fresh broker,
 *                     the same in a fair level: the difference per waiting
 *                     tag is what a tenant costs beyond its message. Then
 *                     the same difference of RssAnon after each broker
 *                     restarts on its directory: the heap alone, without
 *                     the pages LMDB keeps from its last transactions (the
 *                     interning of 100,000 names, written in the open
 *                     transaction of a checkpoint interval).
 *
 * Every loop is bounded by a deadline and a count, and looks at the stop
 * flag. Costs: about 40 s with the defaults, most of it B's 10 s twice.
 */
#include "scen_tenants.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_spawn.h"
#include "sluice.h"

#define LEVEL        1u    /* "normal", of the broker's default levels */
#define WINDOW       1000  /* publishes outstanding when building a backlog */
#define CREDIT       8     /* the noisy-neighbour consumer's credit */
#define CREDIT_DRAIN 64    /* the dispatch rows' consumer's credit */
#define B_MAX        (SCEN_TENANTS_B_PER_S * SCEN_TENANTS_B_SECONDS)
#define TAIL_MS      2000  /* B's last messages may take this long to arrive */
#define DRAIN_TIMEOUT_S 60
#define TAG_BYTES    16
#define ROUNDS       2     /* dispatch: FIFO, fair, FIFO, fair; the best of each */

/* ---- a broker of the row's own ---- */

static int broker_start(bench *b, const char *name, bench_spawn *s, sl_client **c)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", b->dir, name);
    if (mkdir(dir, 0700) != 0)
        return bench_core_fail("cannot create %s: %s", dir, strerror(errno));
    if (bench_spawn_start_with(s, b->sluiced, dir, NULL, NULL, 0) != 0)
        return -1;
    if (bench_client_open(s->endpoint, c) != 0) {
        bench_spawn_stop(s);
        return -1;
    }
    return 0;
}

static int broker_stop(bench_spawn *s, sl_client **c)
{
    sl_close(c);
    return bench_spawn_stop(s);
}

/* rss_bytes reads field (VmRSS, RssAnon) of pid's status; 0 when it
 * cannot. */
static uint64_t rss_bytes(int pid, const char *field)
{
    char path[64], line[256];
    uint64_t kb = 0;
    size_t flen = strlen(field);
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    for (int i = 0; i < 200 && fgets(line, sizeof line, f); i++)
        if (strncmp(line, field, flen) == 0 && line[flen] == ':' &&
            sscanf(line + flen + 1, " %" SCNu64 " kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* publish_n publishes n messages to LEVEL with WINDOW outstanding; tag_of
 * names message i's tag (NULL: untagged). */
static int publish_n(sl_client *c, uint64_t n, void (*tag_of)(uint64_t i, char *tag))
{
    unsigned char body[BENCH_CORE_BODY_BYTES];
    char tag[TAG_BYTES];
    uint64_t confirmed = 0;
    bench_core_body_fill(body);
    for (uint64_t i = 0; i < n && !bench_core_stopping(); i++) {
        if (tag_of)
            tag_of(i, tag);
        const sl_put put = {.body = body, .body_len = sizeof body, .level = LEVEL, .tag = tag_of ? tag : NULL};
        int rc = sl_send_async(c, &put, NULL);
        if (rc != SL_OK)
            return bench_client_fail("publishing", c, rc);
        if (bench_client_confirms(c, WINDOW - 1, &confirmed) != 0)
            return -1;
    }
    if (bench_client_confirms(c, 0, &confirmed) != 0)
        return -1;
    return 0;
}

static void tag_a(uint64_t i, char *tag)
{
    (void)i;
    strcpy(tag, "A");
}

static void tag_spread(uint64_t i, char *tag)
{
    snprintf(tag, TAG_BYTES, "t%04" PRIu64, i % SCEN_TENANTS_TAGS);
}

static void tag_own(uint64_t i, char *tag)
{
    snprintf(tag, TAG_BYTES, "t%06" PRIu64, i);
}

static void sleep_until(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / BENCH_CORE_NS_PER_S),
                          .tv_nsec = (long)(deadline_ns % BENCH_CORE_NS_PER_S)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !bench_core_stopping())
        ;
}

/* ---- the consumer thread ---- */

typedef struct consumer {
    sl_client *c;
    atomic_bool stop;
    uint64_t want;              /* stop after this many (0: until told) */
    atomic_uint_fast64_t got;   /* read by the main thread while it runs */
    int64_t first_ns, last_ns;  /* the first delivery, the last ack */
    uint64_t b_id[B_MAX];       /* B's deliveries: id and arrival */
    int64_t b_got_ns[B_MAX];
    atomic_uint b_n;            /* distinct ones */
    atomic_uint b_again;        /* B's deliveries of an id already seen */
    atomic_int failed;
} consumer;

static void *consume(void *arg)
{
    consumer *k = arg;
    int64_t idle_since_ns = bench_core_now_ns();
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !atomic_load(&k->stop) && !bench_core_stopping(); i++) {
        sl_delivery *d = NULL;
        int rc = sl_recv(k->c, BENCH_CORE_POLL_MS, &d);
        int64_t now_ns = bench_core_now_ns();
        if (rc == SL_ETIMEDOUT) {
            if (k->want && now_ns - idle_since_ns > BENCH_CORE_IDLE_TIMEOUT_MS * BENCH_CORE_NS_PER_MS) {
                k->failed = bench_core_fail("tenants: no delivery for %d ms", BENCH_CORE_IDLE_TIMEOUT_MS);
                return NULL;
            }
            continue;
        }
        if (rc != SL_OK) {
            k->failed = bench_client_fail("receiving", k->c, rc);
            return NULL;
        }
        idle_since_ns = now_ns;
        if (atomic_fetch_add(&k->got, 1) == 0)
            k->first_ns = now_ns;
        unsigned n = atomic_load(&k->b_n);
        unsigned seen = 0;
        for (unsigned j = 0; strcmp(d->tag, "B") == 0 && j < n && !seen; j++)
            seen = k->b_id[j] == d->id;
        if (seen)
            atomic_fetch_add(&k->b_again, 1);
        else if (strcmp(d->tag, "B") == 0 && n < B_MAX) {
            k->b_id[n] = d->id;
            k->b_got_ns[n] = now_ns;
            atomic_store(&k->b_n, n + 1);
        }
        rc = sl_ack(k->c, d);
        sl_delivery_free(&d);
        if (rc != SL_OK) {
            k->failed = bench_client_fail("acking", k->c, rc);
            return NULL;
        }
        k->last_ns = bench_core_now_ns();
        if (k->want && k->got >= k->want)
            break;
    }
    sl_flush(k->c, BENCH_CORE_CLIENT_TIMEOUT_MS);
    return NULL;
}

static int consumer_start(const char *endpoint, unsigned credit, uint64_t want, consumer *k, pthread_t *t)
{
    memset(k, 0, sizeof *k);
    k->want = want;
    if (bench_client_open(endpoint, &k->c) != 0)
        return -1;
    const unsigned level = LEVEL;
    int rc = sl_subscribe(k->c, NULL, &level, 1, credit);
    if (rc != SL_OK || pthread_create(t, NULL, consume, k) != 0) {
        bench_client_fail("subscribing", k->c, rc);
        sl_close(&k->c);
        return -1;
    }
    return 0;
}

static int consumer_join(consumer *k, pthread_t t)
{
    atomic_store(&k->stop, true);
    pthread_join(t, NULL);
    sl_close(&k->c);
    return k->failed;
}

/* ---- noisy neighbour ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* noisy runs one noisy-neighbour row: *p99_ms of B's waits, *waiting of
 * B's messages not delivered by the end (counted at their age). */
static int noisy(bench *b, int fair, double *p50_ms, double *p99_ms, unsigned *waiting, double *backlog_s)
{
    bench_spawn s = {0};
    sl_client *c = NULL;
    consumer *k = calloc(1, sizeof *k);
    pthread_t t;
    uint64_t b_id[B_MAX];
    int64_t b_sent_ns[B_MAX], wait_ns[B_MAX];
    unsigned sent = 0;
    int rc = -1;
    if (!k)
        return bench_core_fail("out of memory");
    if (broker_start(b, fair ? "noisy-fair" : "noisy-fifo", &s, &c) != 0)
        goto free_k;
    if ((rc = sl_level_fair(c, LEVEL, fair)) != SL_OK ||
        (rc = sl_sink_set(c, SCEN_TENANTS_SINK_PER_S * UINT64_C(1000), 1, SL_UNCHANGED)) != SL_OK) {
        rc = bench_client_fail("setting the level and the sink", c, rc);
        goto stop;
    }
    int64_t t0_ns = bench_core_now_ns();
    if ((rc = publish_n(c, SCEN_TENANTS_BACKLOG, tag_a)) != 0)
        goto stop;
    *backlog_s = (double)(bench_core_now_ns() - t0_ns) / BENCH_CORE_NS_PER_S;
    if ((rc = consumer_start(s.endpoint, CREDIT, 0, k, &t)) != 0)
        goto stop;
    static const char body[] = "tenant B";
    const sl_put put = {.body = body, .body_len = sizeof body - 1, .level = LEVEL, .tag = "B"};
    int64_t start_ns = bench_core_now_ns();
    for (unsigned i = 0; i < B_MAX && !bench_core_stopping(); i++) {
        sleep_until(start_ns + (int64_t)i * BENCH_CORE_NS_PER_S / SCEN_TENANTS_B_PER_S);
        b_sent_ns[sent] = bench_core_now_ns();
        int err = sl_send(c, &put, &b_id[sent]);
        if (err != SL_OK) {
            rc = bench_client_fail("publishing for tenant B", c, err);
            consumer_join(k, t);
            goto stop;
        }
        sent++;
    }
    int64_t end_ns = bench_core_now_ns() + TAIL_MS * BENCH_CORE_NS_PER_MS;
    for (int i = 0; i < TAIL_MS / 10 && atomic_load(&k->b_n) < sent && bench_core_now_ns() < end_ns; i++)
        usleep(10000);
    end_ns = bench_core_now_ns();
    rc = consumer_join(k, t);
    if (k->b_again)
        bench_core_progress("tenant B: %u deliveries of a message already delivered", (unsigned)k->b_again);
    *waiting = 0;
    for (unsigned i = 0; i < sent; i++) {
        wait_ns[i] = end_ns - b_sent_ns[i];
        (*waiting)++;
        for (unsigned j = 0; j < k->b_n; j++)
            if (k->b_id[j] == b_id[i]) {
                wait_ns[i] = k->b_got_ns[j] - b_sent_ns[i];
                (*waiting)--;
                break;
            }
        if (fair && wait_ns[i] == end_ns - b_sent_ns[i]) /* rare: say which, for whoever looks into it */
            bench_core_progress("B's message %u of %u (id %" PRIu64 ", sent %.1f s in) not delivered in %.1f s", i + 1,
                                sent, b_id[i], (double)(b_sent_ns[i] - start_ns) / BENCH_CORE_NS_PER_S,
                                (double)(end_ns - b_sent_ns[i]) / BENCH_CORE_NS_PER_S);
    }
    qsort(wait_ns, sent, sizeof wait_ns[0], cmp_i64);
    *p99_ms = sent ? (double)wait_ns[(sent * 99 + 99) / 100 - 1] / BENCH_CORE_NS_PER_MS : 0;
    *p50_ms = sent ? (double)wait_ns[(sent + 1) / 2 - 1] / BENCH_CORE_NS_PER_MS : 0;
stop:
    if (broker_stop(&s, &c) != 0)
        rc = -1;
free_k:
    free(k);
    return rc;
}

static int rows_noisy(bench *b)
{
    char scenario[96];
    for (int fair = 0; fair <= 1; fair++) {
        double p50_ms = 0, p99_ms = 0, backlog_s = 0;
        unsigned waiting = 0;
        bench_core_progress("noisy neighbour, %s: tenant A %d waiting, B at %d/s for %d s, sink %d/s",
                            fair ? "fair" : "FIFO", SCEN_TENANTS_BACKLOG, SCEN_TENANTS_B_PER_S,
                            SCEN_TENANTS_B_SECONDS, SCEN_TENANTS_SINK_PER_S);
        if (noisy(b, fair, &p50_ms, &p99_ms, &waiting, &backlog_s) != 0)
            return -1;
        bench_core_progress("A's backlog published in %.1f s; %u of B's %d still waiting at the end", backlog_s,
                            waiting, B_MAX);
        if (waiting)
            snprintf(scenario, sizeof scenario, "noisy neighbour, %s: B's p99 wait (%u of %d undelivered, aged)",
                     fair ? "fair" : "FIFO", waiting, B_MAX);
        else
            snprintf(scenario, sizeof scenario, "noisy neighbour, %s: B's publish->deliver p99 (A: 100k waiting)",
                     fair ? "fair" : "FIFO");
        bench_table_add(&b->table, scenario, p99_ms, 1, "ms", fair ? BENCH_TABLE_AT_MOST : BENCH_TABLE_NO_GOAL,
                        TARGET_TENANTS_B_P99_MS);
        if (fair) {
            bench_table_add(&b->table, "noisy neighbour, fair: B's publish->deliver p50", p50_ms, 1, "ms",
                            BENCH_TABLE_NO_GOAL, 0);
        }
    }
    return 0;
}

/* ---- 1,000 tags: dispatch ---- */

static int drain_on(bench_spawn *s, sl_client *c, int fair, double *per_s);

/* drain_rate measures one drain on a fresh broker (its own directory,
 * name-ROUND). Fresh, not the same level switched back: a level switched
 * fair -> FIFO on a running broker kept its fair-mode cursor in the build
 * this was written against, and new FIFO messages stayed undelivered. */
static int drain_rate(bench *b, int round, int fair, double *per_s)
{
    bench_spawn sp = {0}, *s = &sp;
    sl_client *c = NULL;
    char name[32];
    snprintf(name, sizeof name, "tags-%s-%d", fair ? "fair" : "fifo", round);
    if (broker_start(b, name, s, &c) != 0)
        return -1;
    int rc = drain_on(s, c, fair, per_s);
    if (broker_stop(s, &c) != 0)
        rc = -1;
    return rc;
}

static int drain_on(bench_spawn *s, sl_client *c, int fair, double *per_s)
{
    consumer *k = calloc(1, sizeof *k);
    pthread_t t;
    uint64_t n = (uint64_t)SCEN_TENANTS_TAGS * SCEN_TENANTS_PER_TAG;
    int rc = sl_level_fair(c, LEVEL, fair);
    if (!k)
        return bench_core_fail("out of memory");
    if (rc != SL_OK) {
        free(k);
        return bench_client_fail("setting the level's service", c, rc);
    }
    if (publish_n(c, n, tag_spread) != 0 || consumer_start(s->endpoint, CREDIT_DRAIN, n, k, &t) != 0) {
        free(k);
        return -1;
    }
    int64_t end_ns = bench_core_now_ns() + DRAIN_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    while (!atomic_load(&k->failed) && atomic_load(&k->got) < n && !bench_core_stopping() &&
           bench_core_now_ns() < end_ns)
        usleep(10000); /* the consumer ends by itself at n; this wait is its bound */
    rc = consumer_join(k, t);
    uint64_t got = atomic_load(&k->got);
    if (rc == 0 && got < n && !bench_core_stopping())
        rc = bench_core_fail("tenants: %" PRIu64 " of %" PRIu64 " delivered in %d s", got, n, DRAIN_TIMEOUT_S);
    *per_s = bench_core_per_s(got, k->last_ns - k->first_ns);
    bench_core_progress("%s: %" PRIu64 " of %" PRIu64 " delivered, %.0f msgs/s", fair ? "fair" : "FIFO", got, n,
                        *per_s);
    free(k);
    return rc;
}

static int rows_dispatch(bench *b)
{
    double fifo_per_s = 0, fair_per_s = 0;
    char scenario[96];
    bench_core_progress("end-to-end dispatch, %d tags x %d waiting, FIFO then fair", SCEN_TENANTS_TAGS,
                        SCEN_TENANTS_PER_TAG);
    int rc = 0;
    for (int round = 0; round < ROUNDS && rc == 0; round++) { /* alternate; keep the best of each */
        double fifo = 0, fair = 0;
        rc = drain_rate(b, round, 0, &fifo);
        if (rc == 0)
            rc = drain_rate(b, round, 1, &fair);
        fifo_per_s = fifo > fifo_per_s ? fifo : fifo_per_s;
        fair_per_s = fair > fair_per_s ? fair : fair_per_s;
    }
    if (rc != 0)
        return -1;
    snprintf(scenario, sizeof scenario, "dispatch, %d tags waiting, level FIFO, credit %d, best of %d",
             SCEN_TENANTS_TAGS, CREDIT_DRAIN, ROUNDS);
    bench_table_add(&b->table, scenario, fifo_per_s, 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    snprintf(scenario, sizeof scenario, "dispatch, %d tags waiting, level fair by tag, best of %d",
             SCEN_TENANTS_TAGS, ROUNDS);
    bench_table_add(&b->table, scenario, fair_per_s, 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "dispatch, 1,000 tags: fair / FIFO", fifo_per_s > 0 ? fair_per_s / fifo_per_s : 0,
                    2, "x", BENCH_TABLE_AT_LEAST, TARGET_TENANTS_VS_FIFO);
    return 0;
}

/* ---- RSS per waiting tag ---- */

typedef struct {
    uint64_t live, rested;
} rss_pair;

/* rss_with measures a broker holding SCEN_TENANTS_BACKLOG messages, each
 * of a tag of its own, in LEVEL served FIFO or fair: live->VmRSS once they
 * are stored, then, the broker stopped and started again on the same
 * directory, rested->RssAnon (its heap alone: no LMDB pages, mapped from
 * the file, and no copy of what the last transactions wrote). */

static int rss_with(bench *b, int fair, rss_pair *r)
{
    bench_spawn s = {0};
    sl_client *c = NULL;
    const char *name = fair ? "rss-fair" : "rss-fifo";
    if (broker_start(b, name, &s, &c) != 0)
        return -1;
    int rc = sl_level_fair(c, LEVEL, fair);
    if (rc != SL_OK)
        rc = bench_client_fail("setting the level's service", c, rc);
    else
        rc = publish_n(c, SCEN_TENANTS_BACKLOG, tag_own); /* the same messages both ways */
    usleep(200000); /* let the broker settle what it just stored */
    r->live = rss_bytes((int)s.p.pid, "VmRSS");
    if (broker_stop(&s, &c) != 0)
        rc = -1;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", b->dir, name);
    if (rc == 0 && bench_spawn_start_with(&s, b->sluiced, dir, NULL, NULL, 0) != 0)
        return -1;
    if (rc == 0) {
        if (bench_client_open(s.endpoint, &c) != 0) {
            bench_spawn_stop(&s);
            return -1;
        }
        sl_level_info lv[SL_MAX_LEVELS];
        unsigned n = 0;
        rc = sl_level_list(c, lv, &n); /* answered once the queue is rebuilt */
        if (rc != SL_OK || n <= LEVEL || lv[LEVEL].depth != SCEN_TENANTS_BACKLOG)
            rc = bench_core_fail("the restarted broker does not hold the %d messages", SCEN_TENANTS_BACKLOG);
        r->rested = rss_bytes((int)s.p.pid, "RssAnon");
        if (broker_stop(&s, &c) != 0)
            rc = -1;
    }
    if (rc == 0 && (r->live == 0 || r->rested == 0))
        rc = bench_core_fail("cannot read the broker's VmRSS or RssAnon");
    return rc;
}

static int rows_rss(bench *b)
{
    rss_pair fifo = {0, 0}, fair = {0, 0};
    bench_core_progress("broker RSS: %d messages each of a tag of its own, in a FIFO level, then in a fair one",
                        SCEN_TENANTS_BACKLOG);
    if (rss_with(b, 0, &fifo) != 0 || rss_with(b, 1, &fair) != 0)
        return -1;
    bench_table_add(&b->table, "broker RSS, 100,000 waiting tags x 1 message, FIFO", (double)fifo.live / (1 << 20),
                    1, "MiB", BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "broker RSS, 100,000 waiting tags x 1 message, fair", (double)fair.live / (1 << 20),
                    1, "MiB", BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "broker RSS per waiting tag, fair beyond FIFO",
                    ((double)fair.live - (double)fifo.live) / SCEN_TENANTS_BACKLOG, 0, "B", BENCH_TABLE_AT_MOST,
                    TARGET_TENANTS_TAG_BYTES);
    bench_table_add(&b->table, "the same after a restart, heap alone (RssAnon)",
                    ((double)fair.rested - (double)fifo.rested) / SCEN_TENANTS_BACKLOG, 0, "B",
                    BENCH_TABLE_AT_MOST, TARGET_TENANTS_TAG_BYTES);
    return 0;
}

int scen_tenants_rows(bench *b)
{
    if (!b->sluiced)
        return 0; /* -b: no broker of our own to start */
    if (rows_noisy(b) != 0 || rows_dispatch(b) != 0 || rows_rss(b) != 0)
        return -1;
    return 0;
}
