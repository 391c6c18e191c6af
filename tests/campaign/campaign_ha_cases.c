/*
 * campaign_ha_cases.c - the failures of the high-availability campaign
 * (campaign_ha.c says what each case does and what must hold): each
 * function makes its failure under the trial's load, waits for what must
 * follow (a promotion, a node back in sync), says through ha_failed which
 * step did not come, and returns the failover's time in ms, or -1.
 */
#include <hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "campaign_ha.h"
#include "sluice.h"
#include "sluice_admin.h"

/* fail_over_from_n1 kills n1 (or stops it: the stop case) and waits for n2 serving: the
 * failover's time, or -1. Only a standby in sync may promote, and a
 * standby held up on a loaded machine past the standby timeout is dropped
 * from sync, rightly: so n2 is waited for in sync right before. */
long ha_fail_over_from_n1(ha_trial *tr, int kase)
{
    if (ha_wait_field(tr, "sync", "n2", 10000) != 0) {
        ha_failed(kase, "n2 was not in sync before n1 was killed or stopped");
        return -1;
    }
    uint64_t t0 = th_now_ms();
    if (kase == HA_CASE_STOP)
        kill(tr->node[0].pid, SIGSTOP);
    else
        th_broker_kill9(&tr->node[0]);
    if (ha_serving(tr, 1, FAILOVER_MAX_MS) < 0)
        return -1;
    return (long)(th_now_ms() - t0);
}

/* cut_off cuts n1 off (from Redis: cut; from its standby too: isolated)
 * while its clients still reach it, waits for n2 to serve, then heals and
 * waits for n1 back in sync as n2's standby. The failover's time, or -1. */
long ha_case_cut_off(ha_trial *tr, int kase)
{
    uint64_t t0 = th_now_ms();
    long ms = -1;
    th_proxy_cut(&tr->to_redis);
    if (kase == HA_CASE_ISOLATED)
        th_proxy_cut(&tr->to_stream[0]);
    if (ha_serving(tr, 1, FAILOVER_MAX_MS) >= 0)
        ms = (long)(th_now_ms() - t0);
    campaign_sleep_ms(LOAD_MS);
    th_proxy_heal(&tr->to_redis);
    th_proxy_heal(&tr->to_stream[0]);
    if (ha_wait_field(tr, "sync", "n1", 10000) != 0)
        ha_failed(kase, "n1 did not come back in sync as the standby once healed");
    campaign_sleep_ms(LOAD_MS);
    return ms;
}

/* split cuts the nodes from each other: n1 must record sync = none and
 * confirm alone, n2 must not promote; healed, n2 must be in sync again.
 * Then the failover from n1 (kill -9): its time, or -1. */
long ha_case_split(ha_trial *tr)
{
    th_proxy_cut(&tr->to_stream[0]);
    th_proxy_cut(&tr->to_stream[1]);
    if (ha_wait_field(tr, "sync", "", 5000) != 0)
        ha_failed(HA_CASE_SPLIT, "n1 did not record sync = none once its standby was cut off");
    uint64_t before = atomic_load(&tr->confirmed);
    campaign_sleep_ms(LOAD_MS); /* n1 confirms alone */
    char leader[64], epoch[32];
    ha_field(tr, "leader", leader, sizeof leader);
    ha_field(tr, "epoch", epoch, sizeof epoch);
    if (strcmp(leader, "n1") || strcmp(epoch, "1"))
        ha_failed(HA_CASE_SPLIT, "n2, cut off and not in sync, took over (leader %s, epoch %s)", leader, epoch);
    if (atomic_load(&tr->confirmed) == before)
        ha_failed(HA_CASE_SPLIT, "n1 confirmed nothing alone");
    th_proxy_heal(&tr->to_stream[0]);
    th_proxy_heal(&tr->to_stream[1]);
    if (ha_wait_field(tr, "sync", "n2", 10000) != 0)
        ha_failed(HA_CASE_SPLIT, "n2 did not come back in sync once healed");
    campaign_sleep_ms(LOAD_MS);
    return ha_fail_over_from_n1(tr, HA_CASE_SPLIT);
}

/* ha_case_redis_down stops Redis for ha_redis_down_ms and waits for a primary serving
 * again once it is resumed: that primary (0 or 1), or -1; *ms gets the
 * time from SIGCONT. */
int ha_case_redis_down(ha_trial *tr, long *ms)
{
    kill(tr->redis.p.pid, SIGSTOP);
    campaign_sleep_ms(ha_redis_down_ms);
    kill(tr->redis.p.pid, SIGCONT);
    uint64_t t0 = th_now_ms();
    char leader[64];
    while (th_now_ms() - t0 <= FAILOVER_MAX_MS && !ha_interrupted) {
        ha_field(tr, "leader", leader, sizeof leader);
        int i = !strcmp(leader, "n1") ? 0 : !strcmp(leader, "n2") ? 1 : -1;
        if (i >= 0 && ha_serving(tr, i, 300) >= 0) {
            *ms = (long)(th_now_ms() - t0);
            return i;
        }
    }
    return -1;
}

/* wiped: Redis loses the group's record; nothing may serve until an
 * operator recovers it, naming n1. The time from the recovery to n1
 * serving, or -1. */
long ha_case_wiped(ha_trial *tr)
{
    redisReply *r = th_redis_cmd(&tr->redis, "FLUSHALL");
    if (r)
        freeReplyObject(r);
    campaign_sleep_ms(2 * HA_TTL_MS);
    char leader[64];
    ha_field(tr, "leader", leader, sizeof leader);
    if (leader[0])
        ha_failed(HA_CASE_WIPED, "Redis names leader %s after losing its data, with no recovery", leader);
    for (int i = 0; i < 2; i++)
        if (ha_serving(tr, i, 300) >= 0)
            ha_failed(HA_CASE_WIPED, "n%d serves after Redis lost its data, with no recovery", i + 1);
    sl_client *c = NULL;
    int rc = campaign_client(tr->node[1].endpoint, 2000, &c);
    uint64_t t0 = th_now_ms();
    if (rc == SL_OK)
        rc = sl_ha_recover(c, "n1");
    sl_close(&c);
    if (rc != SL_OK) {
        ha_failed(HA_CASE_WIPED, "ha recover --node n1 failed: %s", sl_strerror(rc));
        return -1;
    }
    if (ha_serving(tr, 0, FAILOVER_MAX_MS) < 0)
        return -1;
    long ms = (long)(th_now_ms() - t0);
    if (ha_wait_field(tr, "sync", "n2", 10000) != 0)
        ha_failed(HA_CASE_WIPED, "n2 did not follow n1 in sync after the recovery");
    campaign_sleep_ms(LOAD_MS);
    return ms;
}

/* aba fails over twice, n1 to n2 and back: the second failover's time, or
 * -1. */
long ha_case_aba(ha_trial *tr)
{
    uint64_t t0 = th_now_ms();
    th_broker_kill9(&tr->node[0]);
    if (ha_serving(tr, 1, FAILOVER_MAX_MS) < 0 || (long)(th_now_ms() - t0) > FAILOVER_MAX_MS) {
        ha_failed(HA_CASE_ABA, "n2 did not promote within %d ms", FAILOVER_MAX_MS);
        return -1;
    }
    if (th_broker_start(&tr->node[0]) != 0 || ha_wait_field(tr, "sync", "n1", 10000) != 0) {
        ha_failed(HA_CASE_ABA, "n1 did not come back in sync as the standby");
        return -1;
    }
    campaign_sleep_ms(LOAD_MS);
    t0 = th_now_ms();
    th_broker_kill9(&tr->node[1]);
    if (ha_serving(tr, 0, FAILOVER_MAX_MS) < 0)
        return -1;
    return (long)(th_now_ms() - t0);
}
