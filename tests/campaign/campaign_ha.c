/*
 * campaign_ha.c - failures of a high-availability group under load: no
 * confirmed publish is ever lost, and a sink is never sent more than its
 * limit allows.
 *
 *   campaign_ha [TRIALS] [--quiet] [--redis-down-ms MS] [--case NAME] [--keep-failed]
 *
 * Each trial runs in a fresh directory: a real redis-server (Unix socket),
 * two real sluiced nodes of one group (--ha-ttl-ms 1000,
 * --repl-standby-timeout-ms 500, every socket ipc://), the first the
 * primary, the second its standby, waited for in sync. n1 reaches Redis
 * through a proxy (tests/lib/th_proxy.c: a Unix-socket proxy whose
 * connections a case closes, refusing new ones until it heals it), and each
 * node's stream is reached through a proxy of its own, which the node
 * advertises (--repl-advertise). A producer publishes unique bodies with 64
 * in flight, recording every attempt and answer into a history (history.h;
 * the load is campaign_ha_load.c). Then, by turns, one case (each made by
 * campaign_ha_cases.c):
 *
 *   kill9    the primary is killed (SIGKILL) under load;
 *   stop     the primary is stopped (SIGSTOP) past its TTL, so the standby
 *            promotes, then resumed (SIGCONT): fenced by its own clock, it
 *            must confirm nothing more, and it goes back as the standby;
 *   standby  the standby is killed under load (the primary confirms alone
 *            once Redis records sync = none), started again (it resumes from
 *            its own position) and waited for in sync; then the primary is
 *            killed under load;
 *   redis    Redis is stopped (SIGSTOP) for --redis-down-ms (30 s by default)
 *            while a producer and a consumer run, then resumed (SIGCONT): the
 *            primary fences itself when its lease runs out by its own clock
 *            (no confirmation, no delivery), and once Redis answers again
 *            either it renews (epoch 1) or its standby in sync promotes
 *            (epoch 2) and it follows;
 *   aba      fail over twice: the primary n1 is killed, n2 promotes (epoch
 *            2), n1 comes back as its standby and is waited for in sync,
 *            then n2 is killed and n1 promotes (epoch 3), with a producer
 *            and a consumer running throughout;
 *   cut      the primary's link to Redis is cut while its clients and its
 *            standby still reach it: it fences itself by its own clock, n2
 *            promotes (epoch 2) once the lease has ended, and, the link
 *            healed, n1 follows it in sync;
 *   split    the nodes are cut from each other (both streams' proxies): the
 *            primary, hearing nothing from its standby, records sync = none
 *            and confirms alone, and the standby, no longer in sync, must not
 *            promote; healed, the standby catches up and is in sync again;
 *            then the primary is killed, and the standby promotes with
 *            everything confirmed while it was cut off;
 *   isolated the primary is cut from Redis and from its standby at once,
 *            while its clients still reach it: it can neither confirm (no
 *            acknowledgement, and no way to record sync = none) nor keep
 *            its lease; n2 promotes (epoch 2) once the lease has ended, and,
 *            healed, n1 follows it in sync;
 *   wiped    Redis loses its data (FLUSHALL) under load: the primary cannot
 *            renew and stops, and nothing promotes for two TTLs (no node
 *            serves, Redis names no leader); then `ha recover --node n1`
 *            (sl_ha_recover, asked of n2) makes n1 primary at epoch 2, and
 *            n2 follows it in sync.
 *
 * The cases run by turns, or only NAME's with --case.
 *
 * In kill9, stop and standby the producer publishes to n1 alone; in the
 * others the producer names both nodes ("n1|n2": the client library
 * follows the primary and sends again what was not confirmed) and every
 * publish has its own idempotency key, so it is stored once whichever node
 * took it first; a consumer follows the primary the same way.
 *
 * cut and isolated are metered: both nodes share the sink's limit through
 * Redis (--coord, with n1 through its proxy), the sink is set to SINK_RATE
 * with a burst of SINK_BURST, and there is a consumer on each node's own
 * endpoint instead (credit SINK_CREDIT), so that a deposed primary still
 * dispatching would be seen beside the new one. The most deliveries any
 * second saw must stay within the rate, a burst per node and what the
 * consumers may hold unacknowledged (campaign_ha_load.c says why that
 * bound needs no allowance for scheduling).
 *
 * After the failure the load stops, the sink's limit is lifted, the primary
 * Redis names is drained (consume and ack until its statistics show
 * nothing), the other node (started again if the case killed it) is
 * waited for in sync and made primary by a switchover, and must hold the
 * same: nothing waiting, leased or delayed, and as many dead letters; and
 * the history is classified: lost (confirmed, never
 * delivered), unexpected and corrupt must be 0; every confirmation names
 * the node and the epoch that gave it (PUT_OK's node and epoch), and at
 * most one node may confirm in any epoch (split epochs 0); a failover case
 * must end in the epoch it should (2; aba 3; split 2, after the kill;
 * wiped 2, n1 primary)
 * within FAILOVER_MAX_MS of each kill, stop or cut, and every step a case
 * waits for (back in sync, sync = none recorded) must come. The failover
 * time, kill, stop or cut to the new primary's first answer (for redis:
 * SIGCONT to the primary serving again; for wiped: the recovery to n1
 * serving), is printed per case: p50 and max.
 *
 * Exit status: 0 when every trial held; 1 otherwise; 2 when the campaign
 * could not run or was interrupted. Every process is started and stopped by
 * its PID; each trial's directory is removed, and each node's, except a
 * failed trial's with --keep-failed (their paths are printed: the nodes'
 * logs, stores and logs of records, for a look). Seeded by $SLUICE_SEED.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign_ha.h"
#include "sluice.h"
#include "sluice_admin.h"

#define DRAIN_MAX_MS     60000
#define MAX_MSGS         400000
#define CONSUMER_CREDIT  32
#define SINK_RATE        400      /* per second */
#define SINK_BURST       8
#define SINK_CREDIT      4

volatile sig_atomic_t ha_interrupted;
unsigned ha_redis_down_ms = 30000;
const char *const ha_case_names[HA_CASES] = {"kill9", "stop",  "standby",  "redis", "aba",
                                             "cut",   "split", "isolated", "wiped"};
static int step_failed;

static void on_interrupt(int sig)
{
    (void)sig;
    ha_interrupted = 1;
}

void ha_failed(int kase, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("ha: %s: ", ha_case_names[kase]);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    step_failed = 1;
}

static int node_init(ha_trial *tr, int i)
{
    static const char *names[] = {"n1", "n2"};
    const char *redis = i == 0 ? tr->redis_via : tr->redis.url;
    const char *extra[24] = {"--ha", redis, "--ha-group", "c", "--ha-node", names[i], "--repl-listen", tr->repl[i],
                             "--repl-advertise", tr->stream_via[i], "--ha-ttl-ms", "1000",
                             "--repl-standby-timeout-ms", "500", "--log-level", "warn", NULL};
    if (tr->metered) {
        const char *coord[] = {"--coord", redis, "--coord-ttl-ms", "1000", NULL};
        memcpy(&extra[16], coord, sizeof coord);
    }
    return th_broker_init(&tr->node[i], extra);
}

/* sink_limit sets the sink's rate and burst on node i (0: no limit),
 * retrying while the node is not yet connected to Redis. */
static int sink_limit(const ha_trial *tr, int i, uint64_t rate, uint64_t burst)
{
    for (uint64_t t0 = th_now_ms(); th_now_ms() - t0 <= 5000 && !ha_interrupted; campaign_sleep_ms(100)) {
        sl_client *c = NULL;
        if (campaign_client(tr->node[i].endpoint, 1000, &c) != SL_OK)
            continue;
        int rc = sl_sink_set(c, rate * 1000, burst, SL_UNCHANGED);
        sl_close(&c);
        if (rc == SL_OK)
            return 0;
    }
    return -1;
}

static int setup(ha_trial *tr, int kase, unsigned seed)
{
    tr->seed = seed;
    strcpy(tr->dir, "/tmp/sluice-hacamp-XXXXXX");
    if (!mkdtemp(tr->dir))
        return -1;
    char via[140], dir[sizeof tr->dir]; /* (a copy: gcc takes members of one struct to overlap) */
    memcpy(dir, tr->dir, sizeof dir);
    for (int i = 0; i < 2; i++) {
        snprintf(tr->repl[i], sizeof tr->repl[i], "ipc://%s/repl%d.sock", dir, i + 1);
        snprintf(tr->stream_via[i], sizeof tr->stream_via[i], "ipc://%s/repl%d-via.sock", dir, i + 1);
        if (th_proxy_start(&tr->to_stream[i], tr->stream_via[i] + 6, tr->repl[i] + 6) != 0)
            return -1;
    }
    history_cfg hc = {.max_msgs = MAX_MSGS, .tag = seed, .body_min = 24, .body_max = 200};
    snprintf(via, sizeof via, "%s/redis-n1.sock", tr->dir);
    snprintf(tr->redis_via, sizeof tr->redis_via, "unix://%s", via);
    pthread_mutex_init(&tr->sink.mu, NULL);
    tr->metered = kase == HA_CASE_CUT || kase == HA_CASE_ISOLATED;
    tr->follow = kase >= HA_CASE_REDIS;
    if (th_redis_start(&tr->redis, tr->dir, NULL) != 0 || th_proxy_start(&tr->to_redis, via, tr->redis.sock) != 0 ||
        history_new(&hc, &tr->h) != 0)
        return -1;
    if (node_init(tr, 0) || node_init(tr, 1) || th_broker_start(&tr->node[0]) || th_broker_start(&tr->node[1]) ||
        ha_wait_field(tr, "sync", "n2", 10000) != 0)
        return -1;
    if (tr->metered && sink_limit(tr, 0, SINK_RATE, SINK_BURST) != 0)
        return -1;
    snprintf(tr->both, sizeof tr->both, "%s|%s", tr->node[0].endpoint, tr->node[1].endpoint);
    return 0;
}

static void teardown(ha_trial *tr)
{
    for (int i = 0; i < 2; i++)
        if (tr->node[i].pid > 0)
            kill(tr->node[i].pid, SIGCONT);
    for (int i = 0; i < 2; i++)
        th_broker_fini(&tr->node[i]);
    th_proxy_stop(&tr->to_redis);
    for (int i = 0; i < 2; i++)
        th_proxy_stop(&tr->to_stream[i]);
    th_redis_stop(&tr->redis);
    history_destroy(&tr->h);
    free(tr->sink.at_ms);
    pthread_mutex_destroy(&tr->sink.mu);
    if (tr->dir[0] == '/')
        th_rmrf(tr->dir);
}

/* agree checks that the two nodes hold the same once healed: the node
 * that is not primary (started again if a case killed it) is waited for
 * in sync, then a switchover makes it primary, and what it holds must be
 * what the drained primary held: nothing waiting, leased or delayed, and
 * the same dead letters. */
static int agree(ha_trial *tr, int kase, int last, uint64_t dead)
{
    static const char *names[] = {"n1", "n2"};
    int other = !last;
    if (tr->node[other].pid <= 0 && th_broker_start(&tr->node[other]) != 0) {
        printf("ha: %s: %s could not be started again\n", ha_case_names[kase], names[other]);
        return 0;
    }
    if (ha_wait_field(tr, "sync", names[other], 15000) != 0) {
        printf("ha: %s: %s did not come back in sync after the drain\n", ha_case_names[kase], names[other]);
        return 0;
    }
    /* the drain's last deletes are committed within --ack-flush-ms (10 ms;
     * their OKs leave before): then the standby must have every record */
    campaign_sleep_ms(100);
    sl_client *c = NULL;
    int rc = campaign_client(tr->node[last].endpoint, 2000, &c);
    for (uint64_t t0 = th_now_ms(); rc == SL_OK && th_now_ms() - t0 <= 10000; campaign_sleep_ms(20)) {
        sl_ha_status hs;
        if (sl_ha_status_get(c, &hs) != SL_OK)
            continue;
        int behind = 1;
        for (unsigned i = 0; i < hs.nnodes && i < SL_HA_NODES_MAX; i++)
            if (!strcmp(hs.nodes[i].node, names[other]))
                behind = !hs.nodes[i].in_sync || hs.nodes[i].lag_records > 0;
        if (!behind)
            break;
    }
    if (rc == SL_OK)
        rc = sl_ha_switchover(c);
    sl_close(&c);
    int empty = 0;
    uint64_t its_dead = 0;
    sl_stats st = {0};
    if (rc == SL_OK && ha_serving(tr, other, FAILOVER_MAX_MS) >= 0 &&
        (rc = campaign_client(tr->node[other].endpoint, 2000, &c)) == SL_OK) {
        rc = campaign_levels_empty(c, &empty, &its_dead);
        if (rc == SL_OK && !empty)
            sl_stats_get(c, &st); /* what it holds, said below */
        sl_close(&c);
    }
    for (unsigned l = 0; l < st.nlevels && l < SL_MAX_LEVELS; l++)
        if (st.level[l].depth + st.level[l].inflight + st.level[l].delayed)
            printf("ha: %s: %s's level %u: %llu waiting, %llu leased, %llu delayed\n", ha_case_names[kase],
                   names[other], l, (unsigned long long)st.level[l].depth, (unsigned long long)st.level[l].inflight,
                   (unsigned long long)st.level[l].delayed);
    if (rc != SL_OK || !empty || its_dead != dead) {
        printf("ha: %s: after a switchover %s holds %s and %llu dead letters (%s had nothing and %llu): %s\n",
               ha_case_names[kase], names[other], empty ? "nothing" : "messages", (unsigned long long)its_dead,
               names[last], (unsigned long long)dead, sl_strerror(rc));
        return 0;
    }
    return 1;
}

/* sink_held checks a metered trial's arrivals against the sink's bound. */
static int sink_held(ha_trial *tr, int kase, int quiet)
{
    uint64_t most = ha_sink_most(&tr->sink, 1000);
    uint64_t bound = SINK_RATE + 2 * SINK_BURST + 2 * SINK_CREDIT;
    if (!quiet || most > bound)
        printf("ha: %s: the sink saw at most %" PRIu64 " deliveries in a second, %zu in all (bound %" PRIu64
               ": %d/s, a burst of %d per node, %d unacknowledged per consumer)\n",
               ha_case_names[kase], most, tr->sink.n, bound, SINK_RATE, SINK_BURST, SINK_CREDIT);
    return most <= bound;
}

static int keep_failed; /* --keep-failed */

/* run_trial runs one case; 0 when it held, 1 when it did not, 2 when it
 * could not run. *failover_ms gets the failover's time. */
static int run_trial(int kase, unsigned seed, int quiet, long *failover_ms)
{
    static ha_trial tr;
    memset(&tr, 0, sizeof tr);
    step_failed = 0;
    *failover_ms = -1;
    if (setup(&tr, kase, seed) != 0) {
        printf("ha: %s: could not set the trial up in %s\n", ha_case_names[kase], tr.dir);
        teardown(&tr);
        return 2;
    }
    pthread_create(&tr.t, NULL, ha_produce, &tr);
    const char *pinned[] = {tr.node[0].endpoint, tr.node[1].endpoint}, *following[] = {tr.both};
    if (tr.metered)
        ha_consumers_start(&tr, pinned, 2, SINK_CREDIT);
    else if (tr.follow)
        ha_consumers_start(&tr, following, 1, CONSUMER_CREDIT);
    campaign_sleep_ms(LOAD_MS);
    const char *want = "2"; /* the epoch it must end in */
    int last = 1;           /* the node that must end primary */
    switch (kase) {
    case HA_CASE_REDIS:
        last = ha_case_redis_down(&tr, failover_ms);
        want = last == 1 ? "2" : "1"; /* renewed, or its standby promoted */
        campaign_sleep_ms(LOAD_MS);   /* load again, on whichever serves */
        break;
    case HA_CASE_CUT:
    case HA_CASE_ISOLATED:
        *failover_ms = ha_case_cut_off(&tr, kase);
        break;
    case HA_CASE_SPLIT:
        *failover_ms = ha_case_split(&tr);
        break;
    case HA_CASE_WIPED:
        *failover_ms = ha_case_wiped(&tr);
        last = 0;
        break;
    case HA_CASE_ABA:
        *failover_ms = ha_case_aba(&tr);
        want = "3";
        last = 0;
        campaign_sleep_ms(LOAD_MS);
        break;
    case HA_CASE_STANDBY:
        th_broker_kill9(&tr.node[1]);
        campaign_sleep_ms(LOAD_MS + 500); /* the primary goes on alone */
        if (th_broker_start(&tr.node[1]) != 0 || ha_wait_field(&tr, "sync", "n2", 10000) != 0)
            ha_failed(kase, "the standby did not come back in sync");
        campaign_sleep_ms(LOAD_MS);
        *failover_ms = ha_fail_over_from_n1(&tr, kase);
        break;
    default:
        *failover_ms = ha_fail_over_from_n1(&tr, kase);
        if (kase == HA_CASE_STOP) {
            kill(tr.node[0].pid, SIGCONT); /* fenced: it must confirm nothing more, and go back as standby */
            campaign_sleep_ms(HA_TTL_MS);
        }
    }
    atomic_store(&tr.stop, 1);
    pthread_join(tr.t, NULL);
    ha_consumers_stop(&tr);
    int rc = 1;
    char epoch[32];
    ha_field(&tr, "epoch", epoch, sizeof epoch);
    if (*failover_ms < 0 || last < 0 || strcmp(epoch, want) != 0) {
        printf("ha: %s: no primary served within %d ms in epoch %s (Redis says epoch %s)\n", ha_case_names[kase],
               FAILOVER_MAX_MS, want, epoch);
        goto out;
    }
    int sink_ok = !tr.metered || sink_held(&tr, kase, quiet);
    if (tr.metered && sink_limit(&tr, last, 0, SL_UNCHANGED) != 0) /* drained at once */
        printf("ha: %s: the sink's limit could not be lifted; draining at %d/s\n", ha_case_names[kase], SINK_RATE);
    campaign_drain_result dr;
    if (campaign_drain(tr.node[last].endpoint, tr.h, 256, DRAIN_MAX_MS, tr.node[last].pid, &dr) != 0) {
        printf("ha: %s: the new primary could not be drained\n", ha_case_names[kase]);
        goto out;
    }
    int agreed = agree(&tr, kase, last, dr.dead);
    history_report hr;
    history_classify(tr.h, &hr);
    uint64_t consumed = atomic_load(&tr.consumed);
    int consuming = tr.follow || tr.metered;
    int bad = history_bad(&hr) > 0 || tr.open_failed || (consuming && !consumed) || !sink_ok || step_failed ||
              !agreed;
    if (!quiet || bad)
        history_print(&hr, "ha: ", stdout);
    if (consuming && (!quiet || !consumed)) /* the consumers ran through the failure */
        printf("ha: %s: the consumers took %llu deliveries while the producer ran\n", ha_case_names[kase],
               (unsigned long long)consumed);
    rc = bad ? 1 : 0;
out:
    th_keep_dirs = rc != 0 && keep_failed; /* teardown names each directory it keeps */
    teardown(&tr);
    th_keep_dirs = 0;
    return rc;
}

static double at(long *v, int n, double q)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            long x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n ? (double)v[(int)(q * (n - 1) + 0.5)] : 0;
}

int main(int argc, char **argv)
{
    unsigned trials = 30;
    int quiet = 0, only = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!strcmp(argv[i], "--keep-failed"))
            keep_failed = 1;
        else if (!strcmp(argv[i], "--redis-down-ms") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            ha_redis_down_ms = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            for (int k = 0; k < HA_CASES; k++)
                if (!strcmp(argv[i + 1], ha_case_names[k]))
                    only = k;
            if (only < 0) {
                fprintf(stderr, "campaign_ha: no case %s (kill9, stop, standby, redis, aba, cut, split, isolated, wiped)\n", argv[i + 1]);
                return 2;
            }
            i++;
        }
        else if (atoi(argv[i]) > 0)
            trials = (unsigned)atoi(argv[i]);
        else {
            fprintf(stderr, "usage: campaign_ha [TRIALS] [--quiet] [--redis-down-ms MS] [--case NAME] [--keep-failed]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    unsigned seed = th_seed();
    static long fo[HA_CASES][1000];
    int nfo[HA_CASES] = {0}, failed = 0, broken = 0;
    for (unsigned t = 0; t < trials && t < 3000 && !ha_interrupted; t++) {
        int kase = only >= 0 ? only : (int)(t % HA_CASES);
        long ms = -1;
        int rc = run_trial(kase, seed * 31 + t, quiet, &ms);
        if (rc == 1)
            failed++;
        if (rc == 2)
            broken++;
        if (rc == 0 && ms >= 0 && nfo[kase] < 1000)
            fo[kase][nfo[kase]++] = ms;
        if (!quiet)
            printf("ha: trial %u (%s): %s, failover %ld ms\n", t + 1, ha_case_names[kase],
                   rc == 0 ? "ok" : rc == 1 ? "FAIL" : "could not run", ms);
        fflush(stdout);
    }
    for (int k = 0; k < HA_CASES; k++)
        if (nfo[k])
            printf("ha: %s: %d trials held, failover p50 %.0f ms, max %.0f ms (TTL %d ms)\n", ha_case_names[k], nfo[k],
                   at(fo[k], nfo[k], 0.5), at(fo[k], nfo[k], 1.0), HA_TTL_MS);
    if (ha_interrupted) {
        printf("ha: interrupted\n");
        return 2;
    }
    printf("ha: %s: %u trials, %d failed, %d could not run (seed %u)\n", failed || broken ? "FAIL" : "ok", trials,
           failed, broken, seed);
    return failed ? 1 : broken ? 2 : 0;
}
