/*
 * pacer.c - sl_pacer: pace.c's bucket behind a mutex and a clock, for the
 * threads of a consumer that send to the sink; and sl_pace_share, the share
 * of the sink the broker gave this consumer.
 *
 * A worker calls sl_pacer_wait just before its request leaves: under the
 * lock (never sleeping there) it takes the token when one is due now, else
 * learns when one will be and sleeps outside the lock until then
 * (CLOCK_MONOTONIC, absolute), and asks again; the token is taken at the
 * moment of sending, so a worker woken late takes a late token (pace.c).
 * Workers take tokens in the order they asked (a ticket each; only the
 * oldest asker sleeps for the token, the others wait their turn on a
 * condition variable), so a request handed out first is not overtaken by
 * later ones that happened to wake first: the broker's priority order
 * survives the pacer, up to the scheduler's order of the asks. The pacer keeps
 * a quarter of its burst (at least one unit of a burst above 1) as slack
 * for the transit after the token (pacer_slack): paced exactly at a sink's
 * rate and burst, a request that reaches the sink faster than the one
 * before it was refused (11 in 10,000 in an early run of pace-exact; 1 with
 * one unit kept, on a machine with a load average of 7). The main thread, which alone uses
 * the sl_client, reads sl_pace_share after each receive and hands a change
 * to sl_pacer_set. Costs: one uncontended lock and at most one sleep per
 * send.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "client.h"
#include "pace.h"
#include "sluice.h"

struct sl_pacer {
    pthread_mutex_t lock;
    pthread_cond_t turn; /* signalled when the oldest asker took its token */
    uint64_t next_ticket, serving;
    pace bucket;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* pacer_slack returns the units of a burst kept back as slack for the time
 * between the token and the arrival at the sink: a quarter, rounded up, and
 * at least one of a burst above 1. Spent exactly, the burst makes any
 * request that reaches the sink faster than the one before it a 429 once
 * the buckets are in step; and a request whose token was taken before the
 * process stalled arrives with the burst taken after it. */
static uint32_t pacer_slack(uint32_t burst)
{
    return burst > 1 ? (burst + 3) / 4 : 0;
}

int sl_pacer_new(sl_pacer **out)
{
    sl_pacer *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return SL_ENOMEM;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return SL_ENOMEM;
    }
    if (pthread_cond_init(&p->turn, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        return SL_ENOMEM;
    }
    *out = p;
    return SL_OK;
}

void sl_pacer_set(sl_pacer *p, uint64_t rate_milli, uint32_t burst)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    pace_set(&p->bucket, rate_milli, burst - pacer_slack(burst), mono_ns());
    pthread_mutex_unlock(&p->lock);
}

uint64_t sl_pacer_wait(sl_pacer *p, uint32_t cost)
{
    if (!p)
        return 0;
    cost = cost ? cost : 1;
    pthread_mutex_lock(&p->lock);
    uint64_t start = mono_ns(), now = start, ticket = p->next_ticket++;
    int waited = 0;
    for (; ticket != p->serving; waited = 1) /* first asked, first served */
        pthread_cond_wait(&p->turn, &p->lock);
    for (;;) { /* the oldest asker: take the token, or sleep (unlocked) until one is due */
        now = mono_ns();
        uint64_t due = pace_next(&p->bucket, cost, now);
        if (due <= now)
            break;
        waited = 1;
        pthread_mutex_unlock(&p->lock);
        struct timespec ts = {.tv_sec = (time_t)(due / 1000000000ull), .tv_nsec = (long)(due % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        pthread_mutex_lock(&p->lock);
    }
    pace_take(&p->bucket, cost, now);
    p->serving++;
    pthread_cond_broadcast(&p->turn);
    pthread_mutex_unlock(&p->lock);
    return waited ? now - start : 0;
}

void sl_pacer_free(sl_pacer **pp)
{
    if (!pp || !*pp)
        return;
    pthread_cond_destroy(&(*pp)->turn);
    pthread_mutex_destroy(&(*pp)->lock);
    free(*pp);
    *pp = NULL;
}

int sl_pace_share(const sl_client *c, uint64_t *rate_milli, uint32_t *burst)
{
    if (!c)
        return 0;
    if (rate_milli)
        *rate_milli = c->pace_rate_milli;
    if (burst)
        *burst = c->pace_burst;
    return c->pace_told;
}
