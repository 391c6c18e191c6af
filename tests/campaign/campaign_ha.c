/*
 * campaign_ha.c - failures of a high-availability group under load: no
 * confirmed publish is ever lost.
 *
 *   campaign_ha [TRIALS] [--quiet] [--redis-down-ms MS] [--case NAME]
 *
 * Each trial runs in a fresh directory: a real redis-server (Unix socket),
 * two real sluiced nodes of one group (--ha-ttl-ms 1000,
 * --repl-standby-timeout-ms 500, every socket ipc://), the first the
 * primary, the second its standby, waited for in sync. A producer thread
 * publishes unique bodies to the primary with 64 in flight, recording every
 * attempt and answer into a history (history.h). Then, by turns, one case:
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
 *   cut      the primary's link to Redis is cut (n1 reaches Redis through a
 *            Unix-socket proxy, th_proxy.c, whose connections are closed and
 *            new ones refused) while its clients and its standby still reach
 *            it: it fences itself by its own clock, n2 promotes (epoch 2)
 *            once the lease has ended, and, the link healed, n1 follows it
 *            in sync; with a producer and a consumer following the primary.
 *
 * The cases run by turns, or only NAME's with --case.
 *
 * In the first three cases the producer publishes to n1 alone; in redis,
 * aba and cut the producer and the consumer name both nodes ("n1|n2": the
 * client library follows the primary and sends again what was not
 * confirmed) and every publish has its own idempotency key, so it is
 * stored once whichever node took it first.
 *
 * After the failure the producer (and consumer) stop, the primary Redis
 * names is drained (consume and ack until its statistics show nothing),
 * and the history is classified: lost (confirmed, never delivered),
 * unexpected and corrupt must be 0; every confirmation names the node and
 * the epoch that gave it (PUT_OK's node and epoch), and at most one node may
 * confirm in any epoch (split epochs 0); a failover case must end in the
 * epoch it should (2; aba 3) within FAILOVER_MAX_MS of each kill or stop.
 * The failover time, kill or stop to the new primary's first answer (for
 * redis: SIGCONT to the primary serving again), is printed per case: p50
 * and max.
 *
 * Not covered here (broker/README.md, High availability, Limits): a cut
 * between the nodes, the primary cut off from everything, Redis restarted
 * without its data, the sink during a split.
 *
 * Exit status: 0 when every trial held; 1 otherwise; 2 when the campaign
 * could not run or was interrupted. Every process is started and stopped by
 * its PID; each trial's directory is removed. Seeded by $SLUICE_SEED.
 */
#include <hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign.h"
#include "harness.h"
#include "history.h"
#include "sluice.h"
#include "th_proxy.h"
#include "th_redis.h"

#define TTL_MS           1000
#define PUT_TIMEOUT_MS   1500
#define WINDOW           64
#define LOAD_MS          800      /* load before the failure */
#define FAILOVER_MAX_MS  8000     /* generous: a busy 2-core machine */
#define DRAIN_MAX_MS     60000
#define MAX_MSGS         400000
#define CONSUMER_CREDIT  32

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

enum { CASE_KILL9, CASE_STOP, CASE_STANDBY, CASE_REDIS, CASE_ABA, CASE_CUT, CASES };
static const char *case_names[CASES] = {"kill9", "stop", "standby", "redis", "aba", "cut"};
static unsigned redis_down_ms = 30000;

typedef struct trial {
    char dir[64], repl[2][128], redis_via[160];
    th_redis redis;
    th_proxy to_redis;        /* n1's way to Redis (every case), which "cut" breaks */
    th_broker node[2];
    history *h;
    campaign_pub pub;
    pthread_t t, ct;
    atomic_int stop, cstop;
    int open_failed, follow, consuming;
    char both[700];           /* "n1|n2": a client that follows the primary */
    unsigned seed;
    uint64_t consumed;
} trial;

static void *produce(void *arg)
{
    trial *tr = arg;
    if (campaign_pub_open(&tr->pub, tr->follow ? tr->both : tr->node[0].endpoint, tr->h, WINDOW, PUT_TIMEOUT_MS,
                          tr->seed) != 0) {
        tr->open_failed = 1;
        return NULL;
    }
    tr->pub.keyed = tr->follow;
    while (!atomic_load(&tr->stop)) {
        if (!tr->pub.full)
            campaign_pub_fill(&tr->pub, th_now_ms());
        if (tr->pub.npend)
            campaign_pub_collect(&tr->pub, 20);
        else
            campaign_sleep_ms(5);
        campaign_pub_expire(&tr->pub, th_now_ms());
    }
    uint64_t end = th_now_ms() + PUT_TIMEOUT_MS;
    while (tr->pub.npend && tr->pub.c && th_now_ms() < end)
        campaign_pub_collect(&tr->pub, 50);
    campaign_pub_close(&tr->pub);
    return NULL;
}

/* consume takes deliveries from whichever node is primary ("n1|n2"),
 * recording and acknowledging each, until told to stop; a client that
 * stops answering is replaced. */
static void *consume(void *arg)
{
    trial *tr = arg;
    sl_client *c = NULL;
    int subscribed = 0;
    uint64_t quiet_since = th_now_ms();
    while (!atomic_load(&tr->cstop)) {
        if (!c && campaign_client(tr->both, 1000, &c) != SL_OK) {
            c = NULL;
            campaign_sleep_ms(50);
            continue;
        }
        if (!subscribed && !(subscribed = sl_subscribe(c, NULL, NULL, 0, CONSUMER_CREDIT) == SL_OK)) {
            campaign_sleep_ms(50);
            if (th_now_ms() - quiet_since > 3000) { /* replaced: it follows the primary from scratch */
                sl_close(&c);
                quiet_since = th_now_ms();
            }
            continue;
        }
        sl_delivery *d = NULL;
        int rc = sl_recv(c, 100, &d);
        if (rc == SL_OK) {
            history_deliver(tr->h, d->id, d->body, d->body_len, d->attempt);
            if (sl_ack(c, d) == SL_OK)
                history_ack(tr->h, d->id);
            sl_delivery_free(&d);
            tr->consumed++;
            quiet_since = th_now_ms();
        } else if (rc != SL_ETIMEDOUT) {
            campaign_sleep_ms(20);
            if (th_now_ms() - quiet_since > 3000) {
                sl_close(&c);
                subscribed = 0;
                quiet_since = th_now_ms();
            }
        }
    }
    sl_close(&c);
    return NULL;
}

/* field reads one field of the group's hash into out ("" when absent). */
static void field(const trial *tr, const char *f, char *out, size_t cap)
{
    redisReply *r = th_redis_cmd(&tr->redis, "HGET sluice:ha:{c} %s", f);
    out[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING)
        snprintf(out, cap, "%s", r->str);
    if (r)
        freeReplyObject(r);
}

static int wait_field(const trial *tr, const char *f, const char *want, unsigned ms)
{
    char v[64];
    for (uint64_t t0 = th_now_ms(); th_now_ms() - t0 <= ms && !interrupted; campaign_sleep_ms(20)) {
        field(tr, f, v, sizeof v);
        if (!strcmp(v, want))
            return 0;
    }
    return -1;
}

static int node_init(trial *tr, int i)
{
    static const char *names[] = {"n1", "n2"};
    const char *extra[] = {"--ha", i == 0 ? tr->redis_via : tr->redis.url, "--ha-group", "c", "--ha-node", names[i],
                           "--repl-listen",
                           tr->repl[i], "--ha-ttl-ms", "1000", "--repl-standby-timeout-ms", "500",
                           "--log-level", "warn", NULL};
    return th_broker_init(&tr->node[i], extra);
}

/* serving waits for node i to answer STATS as a primary; ms taken, or -1. */
static long serving(const trial *tr, int i, unsigned max_ms)
{
    uint64_t t0 = th_now_ms();
    while (th_now_ms() - t0 <= max_ms && !interrupted) {
        sl_client *c = NULL;
        if (campaign_client(tr->node[i].endpoint, 300, &c) == SL_OK) {
            sl_stats s;
            int rc = sl_stats_get(c, &s);
            sl_close(&c);
            if (rc == SL_OK)
                return (long)(th_now_ms() - t0);
        }
        campaign_sleep_ms(20);
    }
    return -1;
}

/* run_trial runs one case; 0 when it held, 1 when it did not, 2 when it
 * could not run. *failover_ms gets the failover's time. */
static int run_trial(int kase, unsigned seed, int quiet, long *failover_ms)
{
    static trial tr;
    memset(&tr, 0, sizeof tr);
    tr.seed = seed;
    strcpy(tr.dir, "/tmp/sluice-hacamp-XXXXXX");
    if (!mkdtemp(tr.dir))
        return 2;
    for (int i = 0; i < 2; i++)
        snprintf(tr.repl[i], sizeof tr.repl[i], "ipc://%s/repl%d.sock", tr.dir, i + 1);
    int rc = 2;
    history_cfg hc = {.max_msgs = MAX_MSGS, .tag = seed, .body_min = 24, .body_max = 200};
    char via[140];
    snprintf(via, sizeof via, "%s/redis-n1.sock", tr.dir);
    snprintf(tr.redis_via, sizeof tr.redis_via, "unix://%s", via);
    if (th_redis_start(&tr.redis, tr.dir, NULL) != 0 || th_proxy_start(&tr.to_redis, via, tr.redis.sock) != 0 ||
        history_new(&hc, &tr.h) != 0)
        goto out;
    if (node_init(&tr, 0) || node_init(&tr, 1) || th_broker_start(&tr.node[0]) || th_broker_start(&tr.node[1]) ||
        wait_field(&tr, "sync", "n2", 10000) != 0)
        goto out;
    rc = 1;
    tr.follow = kase == CASE_REDIS || kase == CASE_ABA || kase == CASE_CUT;
    snprintf(tr.both, sizeof tr.both, "%s|%s", tr.node[0].endpoint, tr.node[1].endpoint);
    pthread_create(&tr.t, NULL, produce, &tr);
    if (tr.follow)
        tr.consuming = pthread_create(&tr.ct, NULL, consume, &tr) == 0;
    campaign_sleep_ms(LOAD_MS);
    const char *want = "2"; /* the epoch it must end in */
    int last = 1;           /* the node that must end primary */
    *failover_ms = -1;
    if (kase == CASE_REDIS) {
        kill(tr.redis.p.pid, SIGSTOP);
        campaign_sleep_ms(redis_down_ms);
        kill(tr.redis.p.pid, SIGCONT);
        uint64_t t0 = th_now_ms();
        last = -1;
        char leader[64];
        while (last < 0 && th_now_ms() - t0 <= FAILOVER_MAX_MS && !interrupted) {
            field(&tr, "leader", leader, sizeof leader);
            int i = !strcmp(leader, "n1") ? 0 : !strcmp(leader, "n2") ? 1 : -1;
            if (i >= 0 && serving(&tr, i, 300) >= 0)
                last = i;
        }
        if (last >= 0)
            *failover_ms = (long)(th_now_ms() - t0);
        want = last == 1 ? "2" : "1"; /* renewed, or its standby promoted */
        campaign_sleep_ms(LOAD_MS);   /* load again, on whichever serves */
        goto stop;
    }
    if (kase == CASE_CUT) {
        /* n1 can no longer reach Redis, while clients and its standby still
         * reach it: it must stop confirming by its own clock before its
         * lease can end, and n2 promote once it has; healed, n1 follows */
        uint64_t t0 = th_now_ms();
        th_proxy_cut(&tr.to_redis);
        if (serving(&tr, 1, FAILOVER_MAX_MS) >= 0)
            *failover_ms = (long)(th_now_ms() - t0);
        campaign_sleep_ms(LOAD_MS);
        th_proxy_heal(&tr.to_redis);
        if (wait_field(&tr, "sync", "n1", 10000) != 0) {
            printf("ha: cut: n1 did not come back in sync as the standby once it reached Redis again\n");
            goto stop;
        }
        campaign_sleep_ms(LOAD_MS);
        goto stop;
    }
    if (kase == CASE_ABA) {
        uint64_t t0 = th_now_ms();
        th_broker_kill9(&tr.node[0]);
        if (serving(&tr, 1, FAILOVER_MAX_MS) < 0 || (long)(th_now_ms() - t0) > FAILOVER_MAX_MS) {
            printf("ha: aba: n2 did not promote within %d ms\n", FAILOVER_MAX_MS);
            goto stop;
        }
        if (th_broker_start(&tr.node[0]) != 0 || wait_field(&tr, "sync", "n1", 10000) != 0) {
            printf("ha: aba: n1 did not come back in sync as the standby\n");
            goto stop;
        }
        campaign_sleep_ms(LOAD_MS);
        t0 = th_now_ms();
        th_broker_kill9(&tr.node[1]);
        if (serving(&tr, 0, FAILOVER_MAX_MS) >= 0)
            *failover_ms = (long)(th_now_ms() - t0);
        want = "3";
        last = 0;
        campaign_sleep_ms(LOAD_MS);
        goto stop;
    }
    if (kase == CASE_STANDBY) {
        th_broker_kill9(&tr.node[1]);
        campaign_sleep_ms(LOAD_MS + 500); /* the primary goes on alone */
        if (th_broker_start(&tr.node[1]) != 0 || wait_field(&tr, "sync", "n2", 10000) != 0) {
            printf("ha: the standby did not come back in sync\n");
            goto stop;
        }
        campaign_sleep_ms(LOAD_MS);
    }
    uint64_t t0 = th_now_ms();
    if (kase == CASE_STOP)
        kill(tr.node[0].pid, SIGSTOP);
    else
        th_broker_kill9(&tr.node[0]);
    *failover_ms = serving(&tr, 1, FAILOVER_MAX_MS);
    if (*failover_ms >= 0)
        *failover_ms = (long)(th_now_ms() - t0);
    if (kase == CASE_STOP) {
        kill(tr.node[0].pid, SIGCONT); /* fenced: it must confirm nothing more, and go back as standby */
        campaign_sleep_ms(TTL_MS);
    }
stop:
    atomic_store(&tr.stop, 1);
    pthread_join(tr.t, NULL);
    atomic_store(&tr.cstop, 1);
    if (tr.consuming)
        pthread_join(tr.ct, NULL);
    char epoch[32];
    field(&tr, "epoch", epoch, sizeof epoch);
    if (*failover_ms < 0 || last < 0 || strcmp(epoch, want) != 0) {
        printf("ha: %s: no primary served within %d ms in epoch %s (Redis says epoch %s)\n", case_names[kase],
               FAILOVER_MAX_MS, want, epoch);
        goto out;
    }
    campaign_drain_result dr;
    if (campaign_drain(tr.node[last].endpoint, tr.h, 256, DRAIN_MAX_MS, tr.node[last].pid, &dr) != 0) {
        printf("ha: %s: the new primary could not be drained\n", case_names[kase]);
        goto out;
    }
    history_report hr;
    history_classify(tr.h, &hr);
    int bad = history_bad(&hr) > 0 || tr.open_failed || (tr.follow && !tr.consumed);
    if (!quiet || bad)
        history_print(&hr, "ha: ", stdout);
    if (tr.follow && (!quiet || !tr.consumed)) /* the consumer ran through the failure, following the primary */
        printf("ha: %s: the consumer took %llu deliveries while the producer ran\n", case_names[kase],
               (unsigned long long)tr.consumed);
    rc = bad ? 1 : 0;
out:
    if (rc == 2)
        printf("ha: %s: could not set the trial up in %s\n", case_names[kase], tr.dir);
    for (int i = 0; i < 2; i++)
        if (tr.node[i].pid > 0)
            kill(tr.node[i].pid, SIGCONT);
    for (int i = 0; i < 2; i++)
        th_broker_fini(&tr.node[i]);
    th_proxy_stop(&tr.to_redis);
    th_redis_stop(&tr.redis);
    history_destroy(&tr.h);
    th_rmrf(tr.dir);
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
        else if (!strcmp(argv[i], "--redis-down-ms") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            redis_down_ms = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            for (int k = 0; k < CASES; k++)
                if (!strcmp(argv[i + 1], case_names[k]))
                    only = k;
            if (only < 0) {
                fprintf(stderr, "campaign_ha: no case %s (kill9, stop, standby, redis, aba, cut)\n", argv[i + 1]);
                return 2;
            }
            i++;
        }
        else if (atoi(argv[i]) > 0)
            trials = (unsigned)atoi(argv[i]);
        else {
            fprintf(stderr, "usage: campaign_ha [TRIALS] [--quiet] [--redis-down-ms MS] [--case NAME]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    unsigned seed = th_seed();
    static long fo[CASES][1000];
    int nfo[CASES] = {0}, failed = 0, broken = 0;
    for (unsigned t = 0; t < trials && t < 3000 && !interrupted; t++) {
        int kase = only >= 0 ? only : (int)(t % CASES);
        long ms = -1;
        int rc = run_trial(kase, seed * 31 + t, quiet, &ms);
        if (rc == 1)
            failed++;
        if (rc == 2)
            broken++;
        if (rc == 0 && ms >= 0 && nfo[kase] < 1000)
            fo[kase][nfo[kase]++] = ms;
        if (!quiet)
            printf("ha: trial %u (%s): %s, failover %ld ms\n", t + 1, case_names[kase],
                   rc == 0 ? "ok" : rc == 1 ? "FAIL" : "could not run", ms);
        fflush(stdout);
    }
    for (int k = 0; k < CASES; k++)
        if (nfo[k])
            printf("ha: %s: %d trials held, failover p50 %.0f ms, max %.0f ms (TTL %d ms)\n", case_names[k], nfo[k],
                   at(fo[k], nfo[k], 0.5), at(fo[k], nfo[k], 1.0), TTL_MS);
    if (interrupted) {
        printf("ha: interrupted\n");
        return 2;
    }
    printf("ha: %s: %u trials, %d failed, %d could not run (seed %u)\n", failed || broken ? "FAIL" : "ok", trials,
           failed, broken, seed);
    return failed ? 1 : broken ? 2 : 0;
}
