/*
 * bench_guard.c - sluice-bench on a broker it did not start.
 *
 * The bench consumes and acknowledges what its rows publish, sets pools up
 * and, against a broker of its own, drains the queue between rows. Against
 * someone else's broker that would eat real messages (a drain takes
 * whatever is queued) and leave pools behind. So, unless the bench spawned
 * the broker:
 *
 *   - before any row, bench_guard_check asks the broker what it holds and
 *     refuses one with messages waiting, delayed or in flight, or with
 *     consumers connected (they would take the bench's messages, and their
 *     sink with them), unless --force;
 *   - every message the bench publishes carries the tag sluice-bench-PID,
 *     and bench_client_take, the one place the bench takes a delivery,
 *     acknowledges only those: a delivery without it (someone published
 *     while the bench ran) stops the row, unacknowledged, and the consumer's
 *     leaving returns it to its place uncharged (the broker's BYE);
 *   - with --force, the levels that held anything stay the broker's: the
 *     single-level rows publish to and consume from the lowest level that
 *     held nothing (the home level: the broker's own consumers, if --force
 *     let the bench run beside them, serve their higher levels first), and
 *     a row that needs a level that did
 *     hold something (dispatch over every level, starvation on the first
 *     and the last) is skipped, saying why; the counts the rows read are
 *     those of the home level alone;
 *   - the metering rows, which set the sink's and the levels' limits (a
 *     broker stores them), never run on it;
 *   - at the end the pools the rows made (pool-0 .. pool-7, starve) are
 *     deleted, those that were there before left as they were.
 *
 * State is the run's: one broker at a time, read by the rows' threads only
 * after bench_guard_check has returned.
 */
#include "bench_guard.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_sched.h"

#define STARVE_POOL_NAME "starve" /* bench_sched.c's */

static struct {
    bool on;                  /* the broker is not the bench's own */
    char tag[48];
    uint32_t held;            /* levels that held something at the check */
    unsigned nlevels;
    unsigned home;            /* the first level that held nothing */
    bool have_home;
    char pools[SL_MAX_POOLS][65]; /* the pools there at the check */
    unsigned npools;
} g;

static bool bench_pool(const char *name)
{
    unsigned i;
    char end;
    return strcmp(name, STARVE_POOL_NAME) == 0 ||
           (sscanf(name, "pool-%u%c", &i, &end) == 1 && i < BENCH_SCHED_POOLS);
}

int bench_guard_check(const char *endpoint, bool force)
{
    sl_client *c = NULL;
    sl_stats s;
    sl_pool_info pools[SL_MAX_POOLS];
    unsigned np = 0;
    if (bench_client_open(endpoint, &c) != 0)
        return -1;
    int rc = sl_stats_get(c, &s);
    if (rc == SL_OK)
        rc = sl_pool_list(c, pools, &np);
    if (rc != SL_OK) {
        bench_client_fail("asking the broker what it holds", c, rc);
        sl_close(&c);
        return -1;
    }
    sl_close(&c);
    uint64_t ready = 0, delayed = 0, inflight = 0;
    g.held = 0;
    g.nlevels = s.nlevels < SL_MAX_LEVELS ? s.nlevels : SL_MAX_LEVELS;
    for (unsigned l = 0; l < g.nlevels; l++) {
        ready += s.level[l].depth, delayed += s.level[l].delayed, inflight += s.level[l].inflight;
        if (s.level[l].depth || s.level[l].delayed || s.level[l].inflight)
            g.held |= UINT32_C(1) << l;
    }
    const char *ep = endpoint ? endpoint : SL_DEFAULT_ENDPOINT;
    if ((g.held || s.consumers) && !force)
        return bench_core_fail("the broker at %s is in use: messages %" PRIu64 " waiting, %" PRIu64
                               " delayed, %" PRIu64 " in flight; consumers connected: %" PRIu64 ". The bench "
                               "publishes, consumes and makes pools: run it on an idle broker, on one of its "
                               "own (--spawn PATH_TO_SLUICED), or give --force to run beside them (it then "
                               "takes only the messages it publishes, on levels that hold nothing now)",
                               ep, ready, delayed, inflight, (uint64_t)s.consumers);
    g.on = true;
    snprintf(g.tag, sizeof g.tag, "sluice-bench-%ld", (long)getpid());
    g.have_home = false;
    for (unsigned l = g.nlevels; l-- > 0 && !g.have_home;) /* the lowest that holds nothing: behind the broker's own */
        if (!(g.held >> l & 1))
            g.home = l, g.have_home = true;
    g.npools = 0;
    for (unsigned i = 0; i < np && i < SL_MAX_POOLS; i++)
        snprintf(g.pools[g.npools++], sizeof g.pools[0], "%.64s", pools[i].name);
    if (g.held || s.consumers)
        fprintf(stderr, "# --force: beside %" PRIu64 " waiting, %" PRIu64 " delayed, %" PRIu64
                        " in flight and %" PRIu64 " consumers; the bench's messages are tagged %s%s\n",
                ready, delayed, inflight, (uint64_t)s.consumers, g.tag,
                g.held ? ", and its rows keep off the levels that hold messages" : "");

    return 0;
}

bool bench_guard_on(void)
{
    return g.on;
}

const char *bench_guard_tag(void)
{
    return g.on ? g.tag : NULL;
}

bool bench_guard_own(const sl_delivery *d)
{
    return !g.on || (d->tag && strcmp(d->tag, g.tag) == 0);
}

int bench_guard_home(void)
{
    if (!g.on || !g.held)
        return SL_LEVEL_DEFAULT;
    return g.have_home ? (int)g.home : -2;
}

void bench_guard_levels(const unsigned **levels, size_t *n)
{
    bool one = g.on && g.held && g.have_home;
    *levels = one ? &g.home : NULL;
    *n = one ? 1 : 0;
}

bool bench_guard_free(uint32_t mask)
{
    return !g.on || !(g.held & mask);
}

int bench_guard_skip(const char *row, const char *why)
{
    fprintf(stderr, "# skipped: %s: %s\n", row, why);
    return 0;
}

/* was_there tells whether pool name was there at the check. */
static bool was_there(const char *name)
{
    for (unsigned i = 0; i < g.npools; i++)
        if (strcmp(g.pools[i], name) == 0)
            return true;
    return false;
}

int bench_guard_pools_delete(const char *endpoint)
{
    sl_client *c = NULL;
    sl_pool_info pools[SL_MAX_POOLS];
    unsigned np = 0;
    if (!g.on)
        return 0;
    if (bench_client_open(endpoint, &c) != 0)
        return -1;
    int rc = sl_pool_list(c, pools, &np), failed = 0;
    if (rc != SL_OK)
        failed = bench_client_fail("sl_pool_list", c, rc);
    for (unsigned i = 0; i < np && rc == SL_OK; i++) {
        if (!bench_pool(pools[i].name) || was_there(pools[i].name))
            continue;
        int err = sl_pool_delete(c, pools[i].name, 0);
        for (int k = 0; k < 100 && err == SL_ESTATE; k++) { /* its members' leaving is on its way */
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            err = sl_pool_delete(c, pools[i].name, 0);
        }
        if (err != SL_OK && err != SL_ENOTFOUND) {
            char what[96];
            snprintf(what, sizeof what, "deleting the bench's pool %s", pools[i].name);
            failed = bench_client_fail(what, c, err);
        }
    }
    sl_close(&c);
    return failed ? -1 : 0;
}
