/*
 * bench_sched.c - the scheduler rows of sluice-bench: dispatch through many
 * consumer pools, and starvation of the lowest level behind the top one.
 *
 * Both go through sluice.h only, like every row that talks to Sluice, and
 * both start by publishing a backlog with publishes outstanding (publish(),
 * SCHED_WINDOW_MSGS at a time, each message to a level of its own choosing,
 * which bench_client_publish_window does not offer). They end when the
 * broker says its queue is empty, asked with sl_stats_get on a client that
 * does not consume.
 *
 * Dispatch. The backlog is spread evenly over every level. Then
 * BENCH_SCHED_POOLS consumers, each on its own thread and client and in a
 * pool of its own, ack every delivery: pool-0, pool-1 and pool-2 serve
 * level 0, 1 and 2, the others every level, so the broker picks for
 * single-level and all-level pools at once. The main thread connects and
 * subscribes them, then watches the queue every BENCH_CORE_POLL_MS; when it
 * is empty it tells the workers to stop. The rate is all acks over the time
 * from the start to the last ack. A queue that stops shrinking for
 * BENCH_CORE_IDLE_TIMEOUT_MS, or is not empty after DISPATCH_TIMEOUT_S, is
 * an error.
 *
 * Starvation. One consumer, alone in pool "starve" of size 1, with credit
 * 1, acks as fast as it can. Behind top_msgs messages on level 0 (by
 * default BENCH_SCHED_BUSY_MS of its work, sized by a probe of
 * STARVE_PROBE_MSGS messages) one message goes to the lowest level, and the
 * row is how long it waits: from just before its sl_send to its sl_recv,
 * on the one monotonic clock of this process. With strict priority it waits
 * for the whole backlog; with a deadline on its level it is overdue after
 * the deadline and served at the next pick (the overdue share permitting).
 * The consumer and the publisher are two clients on the calling thread:
 * the backlog is published while the consumer sits on its one delivery,
 * then the consumer takes over. Each measurement starts with the queue
 * empty (draining what is there) and ends with it empty, and gives up after
 * BENCH_SCHED_TIMEOUT_S.
 *
 * Side effects on the broker: pools pool-0 ... pool-7 and starve are created
 * (a broker stores pools: on a broker the bench did not start,
 * bench_guard_pools_delete deletes them at the end), and the lowest level's
 * deadline is set for the measurement and then put back as it was, on
 * every path. On a broker the bench did not start, both rows run only when
 * no level held messages at the start (bench_guard.h).
 */
#include "bench_sched.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_guard.h"

#define SCHED_WINDOW_MSGS   100    /* publishes outstanding while publishing a backlog */
#define DISPATCH_ONE_LEVEL  3      /* pool-0 .. pool-2 serve one level each */
#define DISPATCH_TIMEOUT_S  120
#define STARVE_POOL         "starve"
#define STARVE_PROBE_MSGS   2000
#define STARVE_MIN_MSGS     1000   /* bounds of the probe's answer */
#define STARVE_MAX_MSGS     200000

/* ---- shared steps ---- */

/* queue_left asks the broker, on c, how many messages it holds: ready, in
 * flight and delayed, over every level. */
static int queue_left(sl_client *c, uint64_t *left)
{
    sl_stats s;
    int rc = sl_stats_get(c, &s);
    if (rc != SL_OK)
        return bench_client_fail("sl_stats_get", c, rc);
    *left = 0;
    for (unsigned l = 0; l < s.nlevels && l < SL_MAX_LEVELS; l++)
        *left += s.level[l].depth + s.level[l].inflight + s.level[l].delayed;
    return 0;
}

/* publish sends n bodies on c, message i to level first + i % nlevels, with
 * up to SCHED_WINDOW_MSGS unconfirmed, and waits until all are confirmed.
 * Returns 0 (also when a signal stopped it early), or -1 (reported) when a
 * publish failed or give_up_ns passed first. */
static int publish(sl_client *c, unsigned first, unsigned nlevels, uint64_t n, int64_t give_up_ns)
{
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    sl_put put = {.body = body, .body_len = sizeof body, .tag = bench_guard_tag()};
    uint64_t sent = 0, confirmed = 0;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && confirmed < n; i++) {
        if (bench_core_stopping())
            return 0;
        if (bench_core_now_ns() > give_up_ns)
            return bench_core_fail("publishing a backlog: only %" PRIu64 " of %" PRIu64
                                   " publishes confirmed in time",
                                   confirmed, n);
        for (size_t k = sl_send_pending(c); k < SCHED_WINDOW_MSGS && sent < n; k++, sent++) {
            put.level = (int)(first + sent % nlevels);
            int rc = sl_send_async(c, &put, NULL);
            if (rc != SL_OK)
                return bench_client_fail("sl_send_async", c, rc);
        }
        if (bench_client_confirms(c, sent < n ? SCHED_WINDOW_MSGS - 1 : 0, &confirmed) != 0)
            return -1;
    }
    return 0;
}

/* ---- dispatch ---- */

typedef struct dispatch_worker {
    sl_client *c;
    atomic_int *done;                /* set once the queue is empty or a worker failed */
    atomic_uint_fast64_t *acked_all; /* acks by every worker */
    uint64_t msgs;                   /* acks by this one */
    int64_t last_ns;                 /* when its last ack was answered */
    int rc;
} dispatch_worker;

/* dispatch_consume takes and acks deliveries until it is told to stop. */
static void *dispatch_consume(void *arg)
{
    dispatch_worker *w = arg;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !atomic_load(w->done) && !bench_core_stopping();
         i++) {
        int took = bench_client_take(w->c, NULL, NULL);
        if (took < 0) {
            w->rc = -1;
            atomic_store(w->done, 1);
            break;
        }
        if (took > 0) {
            w->msgs++;
            w->last_ns = bench_core_now_ns();
            atomic_fetch_add(w->acked_all, 1);
        }
    }
    return NULL;
}

/* dispatch_join connects consumer i and subscribes it to pool-i: level i
 * alone for the first DISPATCH_ONE_LEVEL (levels permitting), else every
 * level. */
static int dispatch_join(const char *endpoint, unsigned i, unsigned nlevels, sl_client **out)
{
    char pool[16];
    unsigned level = i;
    bool one = i < DISPATCH_ONE_LEVEL && i < nlevels;
    snprintf(pool, sizeof pool, "pool-%u", i);
    if (bench_client_open(endpoint, out) != 0)
        return -1;
    int rc = sl_subscribe(*out, pool, one ? &level : NULL, one ? 1 : 0, BENCH_SCHED_CREDIT);
    return rc == SL_OK ? 0 : bench_client_fail("sl_subscribe", *out, rc);
}

/* dispatch_watch asks the broker on mon every BENCH_CORE_POLL_MS what is
 * left, until nothing is, done is set (a worker failed and says so), a
 * signal, or an error: no ack for BENCH_CORE_IDLE_TIMEOUT_MS, or give_up_ns
 * passed. */
static int dispatch_watch(sl_client *mon, atomic_uint_fast64_t *acked_all, atomic_int *done,
                          int64_t give_up_ns)
{
    const struct timespec poll = {.tv_nsec = BENCH_CORE_POLL_MS * BENCH_CORE_NS_PER_MS};
    uint64_t seen = 0, left;
    int64_t seen_ns = bench_core_now_ns();
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS; i++) {
        nanosleep(&poll, NULL);
        if (atomic_load(done) || bench_core_stopping())
            return 0;
        if (queue_left(mon, &left) != 0)
            return -1;
        if (left == 0)
            return 0;
        int64_t t_ns = bench_core_now_ns();
        uint64_t acked = atomic_load(acked_all);
        if (acked != seen) {
            seen = acked;
            seen_ns = t_ns;
        } else if (t_ns - seen_ns > BENCH_CORE_IDLE_TIMEOUT_MS * BENCH_CORE_NS_PER_MS) {
            return bench_core_fail("dispatch stalled: no ack for %d ms with %" PRIu64
                                   " messages left",
                                   BENCH_CORE_IDLE_TIMEOUT_MS, left);
        }
        if (t_ns > give_up_ns)
            return bench_core_fail("dispatch: %" PRIu64 " messages still queued after %d s", left,
                                   DISPATCH_TIMEOUT_S);
    }
    return 0;
}

int bench_sched_dispatch(const char *endpoint, uint64_t msgs, uint64_t *acked,
                         int64_t *elapsed_ns)
{
    dispatch_worker w[BENCH_SCHED_POOLS] = {{0}};
    bench_core_thread t[BENCH_SCHED_POOLS] = {{0}};
    atomic_int done = 0;
    atomic_uint_fast64_t acked_all = 0;
    sl_client *mon = NULL;
    const char *const *names;
    unsigned nlevels;
    int64_t give_up_ns = bench_core_now_ns() + DISPATCH_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    int64_t start_ns, last_ns;
    int rc, err;
    *acked = 0;
    *elapsed_ns = 0;
    if (bench_client_open(endpoint, &mon) != 0)
        return -1;
    if ((err = sl_levels(mon, &nlevels, &names)) != SL_OK) {
        rc = bench_client_fail("sl_levels", mon, err);
        goto clients_close;
    }
    if ((rc = publish(mon, 0, nlevels, msgs, give_up_ns)) != 0 || bench_core_stopping())
        goto clients_close;
    for (unsigned i = 0; i < BENCH_SCHED_POOLS && rc == 0; i++)
        rc = dispatch_join(endpoint, i, nlevels, &w[i].c);
    if (rc != 0)
        goto clients_close;

    start_ns = last_ns = bench_core_now_ns();
    for (size_t i = 0; i < BENCH_SCHED_POOLS; i++) {
        w[i].done = &done;
        w[i].acked_all = &acked_all;
        t[i] = (bench_core_thread){.fn = dispatch_consume, .arg = &w[i]};
    }
    rc = bench_core_threads_start(t, BENCH_SCHED_POOLS);
    if (rc == 0)
        rc = dispatch_watch(mon, &acked_all, &done, give_up_ns);
    atomic_store(&done, 1);
    bench_core_threads_join(t, BENCH_SCHED_POOLS);
    for (size_t i = 0; i < BENCH_SCHED_POOLS; i++) {
        rc |= w[i].rc;
        *acked += w[i].msgs;
        if (w[i].msgs && w[i].last_ns > last_ns)
            last_ns = w[i].last_ns;
    }
    *elapsed_ns = last_ns - start_ns;
clients_close:
    for (size_t i = 0; i < BENCH_SCHED_POOLS; i++)
        sl_close(&w[i].c);
    sl_close(&mon);
    return rc;
}

/* ---- starvation ---- */

typedef struct starve_run {
    sl_client *admin;     /* publishes, asks for stats, sets the deadline */
    sl_client *consumer;  /* pool STARVE_POOL, credit 1 */
    unsigned lowest;      /* the lowest level: the one that starves */
    uint64_t saved_deadline_ms;
    uint64_t acked, acked_at_send;
    int64_t last_ns;      /* when the consumer's last ack was answered */
    int64_t sent_ns;      /* the lowest level's message: 0 until it is sent */
    int64_t got_ns;       /* ... and 0 until it arrives */
} starve_run;

/* starve_look notes when the lowest level's message arrives. */
static void starve_look(void *ctx, const sl_delivery *d, int64_t got_ns)
{
    starve_run *r = ctx;
    if (r->sent_ns && !r->got_ns && d->level == r->lowest)
        r->got_ns = got_ns;
}

/* starve_late reports why starve_drain gave up. */
static int starve_late(const starve_run *r, int64_t t_ns)
{
    if (r->sent_ns && !r->got_ns)
        return bench_core_fail("starvation: the level-%u message has not been delivered %.1f s"
                               " after it was published (%" PRIu64 " messages acked since);"
                               " giving up",
                               r->lowest, (double)(t_ns - r->sent_ns) / BENCH_CORE_NS_PER_S,
                               r->acked - r->acked_at_send);
    return bench_core_fail("starvation: the queue is not empty after %d s; giving up",
                           BENCH_SCHED_TIMEOUT_S);
}

/* starve_drain has the consumer ack all it is given until the broker holds
 * nothing and, once the lowest level's message is out, that message has
 * arrived. Returns 0 (also on a signal), or -1 (reported) on an error or
 * when give_up_ns passes first. */
static int starve_drain(starve_run *r, int64_t give_up_ns)
{
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        int64_t t_ns = bench_core_now_ns();
        if (t_ns > give_up_ns)
            return starve_late(r, t_ns);
        int took = bench_client_take(r->consumer, starve_look, r);
        uint64_t left;
        if (took < 0)
            return -1;
        if (took > 0) {
            r->acked++;
            r->last_ns = bench_core_now_ns();
            continue;
        }
        if (queue_left(r->admin, &left) != 0)
            return -1;
        if (left == 0 && (!r->sent_ns || r->got_ns))
            return 0;
    }
    return 0;
}

/* starve_probe measures how many messages a second the consumer acks and
 * sets *top_msgs to BENCH_SCHED_BUSY_MS of them, within bounds. */
static int starve_probe(starve_run *r, uint64_t *top_msgs)
{
    int64_t give_up_ns = bench_core_now_ns() + BENCH_SCHED_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    bench_core_progress("starvation: probing the consumer's rate with %d messages",
                        STARVE_PROBE_MSGS);
    if (starve_drain(r, give_up_ns) != 0 ||
        publish(r->admin, 0, 1, STARVE_PROBE_MSGS, give_up_ns) != 0)
        return -1;
    uint64_t acked_before = r->acked;
    int64_t start_ns = r->last_ns = bench_core_now_ns();
    if (starve_drain(r, give_up_ns) != 0)
        return -1;
    double per_s = bench_core_per_s(r->acked - acked_before, r->last_ns - start_ns);
    double n = per_s * BENCH_SCHED_BUSY_MS / 1000.0;
    *top_msgs = n < STARVE_MIN_MSGS ? STARVE_MIN_MSGS
              : n > STARVE_MAX_MSGS ? STARVE_MAX_MSGS
                                    : (uint64_t)n;
    return 0;
}

/* deadline_set sets the lowest level's deadline, leaving its aging. */
static int deadline_set(starve_run *r, uint64_t deadline_ms)
{
    int rc = sl_level_set(r->admin, r->lowest, deadline_ms, SL_UNCHANGED);
    return rc == SL_OK ? 0 : bench_client_fail("sl_level_set", r->admin, rc);
}

/* send_lowest publishes the one message to the lowest level, confirmed. */
static int send_lowest(starve_run *r)
{
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    const sl_put put = {.body = body, .body_len = sizeof body, .level = (int)r->lowest, .tag = bench_guard_tag()};
    r->acked_at_send = r->acked;
    r->sent_ns = bench_core_now_ns();
    int rc = sl_send(r->admin, &put, NULL);
    return rc == SL_OK ? 0 : bench_client_fail("sl_send", r->admin, rc);
}

/* starve_once measures the lowest level's wait behind top_msgs level-0
 * messages with its deadline set to deadline_ms (0: none). */
static int starve_once(starve_run *r, uint64_t top_msgs, uint64_t deadline_ms, double *wait_ms)
{
    int64_t give_up_ns = bench_core_now_ns() + BENCH_SCHED_TIMEOUT_S * BENCH_CORE_NS_PER_S;
    r->sent_ns = r->got_ns = 0;
    if (starve_drain(r, give_up_ns) != 0 || bench_core_stopping())
        return bench_core_stopping() ? 0 : -1;
    int rc = deadline_set(r, deadline_ms);
    if (rc == 0)
        rc = publish(r->admin, 0, 1, top_msgs, give_up_ns);
    if (rc == 0 && !bench_core_stopping())
        rc = send_lowest(r);
    if (rc == 0 && !bench_core_stopping())
        rc = starve_drain(r, give_up_ns);
    if (deadline_set(r, r->saved_deadline_ms) != 0)
        rc = -1;
    if (rc == 0 && r->got_ns)
        *wait_ms = (double)(r->got_ns - r->sent_ns) / BENCH_CORE_NS_PER_MS;
    return rc;
}

int bench_sched_starvation(const char *endpoint, uint64_t top_msgs, double *plain_ms,
                           double *deadline_ms)
{
    starve_run r = {.admin = NULL};
    sl_level_info info[SL_MAX_LEVELS];
    unsigned nlevels;
    int rc = -1, err;
    *plain_ms = *deadline_ms = 0;
    if (bench_client_open(endpoint, &r.admin) != 0)
        return -1;
    if ((err = sl_level_list(r.admin, info, &nlevels)) != SL_OK) {
        bench_client_fail("sl_level_list", r.admin, err);
        goto clients_close;
    }
    if (nlevels < 2) {
        bench_core_fail("starvation: needs two levels or more; the broker has %u", nlevels);
        goto clients_close;
    }
    r.lowest = nlevels - 1;
    r.saved_deadline_ms = info[r.lowest].deadline_ms;
    if ((err = sl_pool_resize(r.admin, STARVE_POOL, 1)) != SL_OK) {
        bench_client_fail("sl_pool_resize", r.admin, err);
        goto clients_close;
    }
    if (bench_client_open(endpoint, &r.consumer) != 0)
        goto clients_close;
    if ((err = sl_subscribe(r.consumer, STARVE_POOL, NULL, 0, 1)) != SL_OK) {
        bench_client_fail("sl_subscribe", r.consumer, err);
        goto clients_close;
    }
    rc = top_msgs ? 0 : starve_probe(&r, &top_msgs);
    if (rc == 0 && !bench_core_stopping()) {
        bench_core_progress("starvation: %" PRIu64 " level-0 messages, then 1 on level %u,"
                            " no deadline", top_msgs, r.lowest);
        rc = starve_once(&r, top_msgs, 0, plain_ms);
    }
    if (rc == 0 && !bench_core_stopping()) {
        bench_core_progress("starvation: %" PRIu64 " level-0 messages, then 1 on level %u,"
                            " %d ms deadline", top_msgs, r.lowest, BENCH_SCHED_DEADLINE_MS);
        rc = starve_once(&r, top_msgs, BENCH_SCHED_DEADLINE_MS, deadline_ms);
    }
clients_close:
    sl_close(&r.consumer);
    sl_close(&r.admin);
    return rc;
}
