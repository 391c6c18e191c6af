/*
 * campaign_ha.h - what the high-availability campaign's trials
 * (campaign_ha.c) share with their load (campaign_ha_load.c).
 *
 * A trial is a directory, a real redis-server, two real sluiced nodes of one
 * group and the proxies a case cuts (the cases: campaign_ha_cases.c): n1's way to Redis, and the way to each
 * node's replication stream (each node advertises its proxy, so the other
 * node reaches its stream only through it). Its load is one producer and one
 * or two consumers, threads of this process; the consumers' deliveries are
 * also what a metered trial's sink sees: every arrival's time is kept, and
 * the check says whether any window held more than the sink's limit allows.
 */
#ifndef SLUICE_TEST_CAMPAIGN_HA_H
#define SLUICE_TEST_CAMPAIGN_HA_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "campaign.h"
#include "harness.h"
#include "history.h"
#include "th_proxy.h"
#include "th_redis.h"

#define HA_TTL_MS          1000
#define HA_CONSUMERS_MAX   2
#define LOAD_MS            800      /* load before the failure, and after each step */
#define FAILOVER_MAX_MS    8000     /* generous: a busy 2-core machine */

enum {
    HA_CASE_KILL9, HA_CASE_STOP, HA_CASE_STANDBY, HA_CASE_REDIS, HA_CASE_ABA, HA_CASE_CUT, HA_CASE_SPLIT,
    HA_CASE_ISOLATED, HA_CASE_WIPED, HA_CASES
};
extern const char *const ha_case_names[HA_CASES];
extern volatile sig_atomic_t ha_interrupted;
extern unsigned ha_redis_down_ms; /* how long the redis case stops Redis */

struct ha_trial;

typedef struct ha_consumer {
    struct ha_trial *tr;
    const char *endpoint; /* "n1|n2" (it follows the primary) or one node's own */
    unsigned credit;
    pthread_t t;
    int running;
} ha_consumer;

/* Every delivery's arrival at the consumers, in ms (monotonic), as the sink
 * would see it. */
typedef struct ha_sink {
    pthread_mutex_t mu;
    uint64_t *at_ms;
    size_t n, cap;
} ha_sink;

typedef struct ha_trial {
    char dir[64], repl[2][128], stream_via[2][128], redis_via[160];
    th_redis redis;
    th_proxy to_redis;        /* n1's way to Redis (cut and isolated break it) */
    th_proxy to_stream[2];    /* the way to node i's stream, its --repl-advertise (split and isolated) */
    th_broker node[2];
    history *h;
    campaign_pub pub;
    pthread_t t;
    atomic_int stop, cstop;
    int open_failed, follow, metered;
    char both[700];           /* "n1|n2": a client that follows the primary */
    unsigned seed;
    ha_consumer cons[HA_CONSUMERS_MAX];
    unsigned ncons;
    atomic_ullong consumed, confirmed; /* deliveries taken; publishes confirmed so far (the producer's) */
    ha_sink sink;
} ha_trial;

/* ha_produce is the producer thread: publishes with a window until stop. */
void *ha_produce(void *arg);

/* ha_consumers_start starts a consumer on each endpoint given (1 or 2),
 * with credit; ha_consumers_stop tells them to stop and joins them. */
void ha_consumers_start(ha_trial *tr, const char *const *endpoints, unsigned n, unsigned credit);
void ha_consumers_stop(ha_trial *tr);

/* ha_field reads one field of the group's hash into out ("" when absent);
 * ha_wait_field waits up to ms for it to read want (0, or -1). */
void ha_field(const ha_trial *tr, const char *f, char *out, size_t cap);
int ha_wait_field(const ha_trial *tr, const char *f, const char *want, unsigned ms);

/* ha_serving waits for node i to answer STATS as a primary; ms taken, or -1. */
long ha_serving(const ha_trial *tr, int i, unsigned max_ms);

/* ha_sink_most returns the most arrivals any window of window_ms held. */
uint64_t ha_sink_most(ha_sink *s, uint64_t window_ms);

/* ha_failed says which step of case kase did not come (printf's format);
 * the trial then fails. */
void ha_failed(int kase, const char *fmt, ...);

/* The failures (campaign_ha_cases.c), under the trial's load: each returns
 * the failover's time in ms, or -1. ha_fail_over_from_n1 kills n1 (or stops
 * it, in the stop case) once n2 is in sync, and waits for n2 serving; ha_case_cut_off cuts n1 from Redis
 * (cut), or from Redis and its standby (isolated), then heals it;
 * ha_case_split cuts the nodes from each other, heals them, then kills n1;
 * ha_case_wiped empties Redis and recovers naming n1; ha_case_aba fails
 * over twice; ha_case_redis_down stops Redis for ha_redis_down_ms and
 * returns the node serving after (0 or 1, or -1), its time in *ms. */
long ha_fail_over_from_n1(ha_trial *tr, int kase);
long ha_case_cut_off(ha_trial *tr, int kase);
long ha_case_split(ha_trial *tr);
long ha_case_wiped(ha_trial *tr);
long ha_case_aba(ha_trial *tr);
int ha_case_redis_down(ha_trial *tr, long *ms);

#endif /* SLUICE_TEST_CAMPAIGN_HA_H */
