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
 * one unit kept, on a machine with a load average of 7); a burst of 1 has
 * no unit to keep, so its bucket keeps a margin in time instead
 * (pace_rate_at: each request 2 % of an interval later than the rate). The
 * main thread, which alone uses
 * the sl_client, reads sl_pace_share after each receive and hands a change
 * to sl_pacer_set.
 *
 * Late wakes. A sink of burst 1 judges each request against the one before
 * it, so a token is never taken less than an interval after the last one,
 * however late that one left: the lateness of every wake is lost to the
 * rate, and the sleeping thread's timer slack is set to 1 us (Linux's
 * default, 50 us, was a tenth of a 2,000/s sink).
 *
 * The broker's spacing. While other consumers pace the same sink
 * (sl_pacer_peers above 1; alone, this pacer's bucket is the whole sink's
 * and bounds what reaches it, and holding only cost a worker its time:
 * with 8 workers and a hold of a few milliseconds the pacer could not keep
 * a 2,000/s sink busy), sl_pacer_wait_released also holds a request until
 * its release time plus the longest recent lag between release and worker
 * (pace.c's pace_lag, noted as each worker asks): then every request
 * leaves as late as the slowest recent one and they keep the spacing the
 * broker gave them, which is what bounds what the sink sees when several
 * processes share it (each one's bucket holds only its own share). Each
 * held request sleeps on its own (the release times already keep the
 * broker's order), then takes the bucket's token in turn like any other.
 * A request that finds no other waiting is not held (pace.c). A variant
 * that let a request woken on time leave without the bucket kept the
 * spacing better under a share below the full rate (80 % of the requests
 * left more than 1 ms after their time in a traced throttle-quiz run, 0.17
 * ms at the median without the bucket), but it also lost the bucket's
 * slack: a broker burst of 5 left at once into a sink whose burst is 5,
 * and the pace shape saw 1 to 4 x 429 a run on a loaded machine.
 * Several processes (sl_pacer_peers above 1): each one's hold is its own
 * spread, and two processes with different spreads send shifted against
 * each other (throttle-quiz, two consumers: pairs of requests 20-90 us apart
 * where the broker released them 2 ms apart, one over the bound in the
 * busiest 0.1 s window). So every request is then held at least
 * SL_PACER_SHARED_HOLD_MS past its release, idle or not: the same hold in
 * every process, and on one host the same clock.
 * Costs: one uncontended lock and at most two sleeps per send.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "client.h"
#include "pace.h"
#include "sluice.h"

struct sl_pacer {
    pthread_mutex_t lock;
    pthread_cond_t turn; /* signalled when the oldest asker took its token */
    uint64_t next_ticket, serving;
    unsigned waiting; /* requests between asking and leaving */
    pace bucket;
    pace_lag lag;
    uint64_t shared_hold_ns; /* others pace the same sink: every request held at least this */
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
    uint64_t now = mono_ns();
    pace_set(&p->bucket, pace_rate_at(rate_milli, burst), burst - pacer_slack(burst), now);
    pthread_mutex_unlock(&p->lock);
}

void sl_pacer_peers(sl_pacer *p, unsigned n)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->shared_hold_ns = n > 1 ? (uint64_t)SL_PACER_SHARED_HOLD_MS * 1000000u : 0;
    pthread_mutex_unlock(&p->lock);
}

uint64_t sl_pacer_wait(sl_pacer *p, uint32_t cost)
{
    return sl_pacer_wait_released(p, cost, 0);
}

/* sleep_until sleeps until the monotonic time due_ns. The first time a
 * thread sleeps here its timer slack becomes 1 us: with Linux's default,
 * 50 us, every wake for a token came that much late, and at burst 1 each
 * send is spaced a full interval after the one before, so the lateness was
 * lost to the rate (10 % of a 2,000/s sink). */
static void sleep_until(uint64_t due_ns)
{
    static _Thread_local int slack_set;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
        slack_set = 1;
    }
    struct timespec ts = {.tv_sec = (time_t)(due_ns / 1000000000ull), .tv_nsec = (long)(due_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

uint64_t sl_pacer_wait_released(sl_pacer *p, uint32_t cost, uint64_t released_ns)
{
    if (!p)
        return 0;
    cost = cost ? cost : 1;
    pthread_mutex_lock(&p->lock);
    uint64_t start = mono_ns(), now = start;
    pace_lag_note(&p->lag, released_ns, start);
    /* the hold keeps the broker's spacing between processes; alone, this
     * pacer's bucket is the whole sink's and bounds what reaches it */
    uint64_t keep = p->shared_hold_ns ? pace_lag_due(&p->lag, released_ns, start, p->waiting == 0, p->shared_hold_ns)
                                      : 0;
    int waited = keep > start;
    p->waiting++;
    if (waited) { /* the hold: each on its own, the release times keep the order */
        pthread_mutex_unlock(&p->lock);
        sleep_until(keep);
        pthread_mutex_lock(&p->lock);
    }
    uint64_t ticket = p->next_ticket++;
    for (; ticket != p->serving; waited = 1) /* first asked, first served */
        pthread_cond_wait(&p->turn, &p->lock);
    for (;;) { /* the oldest asker: take the token, or sleep (unlocked) until one is due */
        now = mono_ns();
        uint64_t due = pace_next(&p->bucket, cost, now);
        if (due <= now)
            break;
        waited = 1;
        pthread_mutex_unlock(&p->lock);
        sleep_until(due);
        pthread_mutex_lock(&p->lock);
    }
    pace_take(&p->bucket, cost, now);
    p->waiting--;
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

unsigned sl_pace_peers(const sl_client *c)
{
    return c ? c->pace_pacers : 0;
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
