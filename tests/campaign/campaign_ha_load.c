/*
 * campaign_ha_load.c - the load of the high-availability campaign's trials:
 * a producer, consumers, the sink's record of arrivals, and the look at the
 * group's record in Redis (campaign_ha.h).
 *
 * The producer publishes unique bodies with 64 in flight, to n1 alone or,
 * in the cases that follow the primary, to "n1|n2" with an idempotency key
 * on each publish (the client library sends again what was not confirmed,
 * and a keyed publish is stored once whichever node took it first). Every
 * attempt and answer goes into the trial's history.
 *
 * A consumer takes deliveries from its endpoint, records and acknowledges
 * each, and notes its arrival for the sink. One that follows the primary
 * ("n1|n2") is the client library's to move; one pinned to a node waits
 * while that node is a standby (it is redirected), and takes what the node
 * dispatches once it is primary, or while it is a deposed primary that has
 * not yet stopped: that is what a metered trial's sink check is there to
 * catch. A client that stops answering is replaced.
 *
 * The sink check: deliveries that arrive within a window were either
 * released within it, by each node's meter (the sink's rate over the window
 * plus its burst, per node dispatching), or released before it and still
 * unacknowledged when it began (at most the consumers' credit); so the
 * most arrivals in any window has a bound that needs no allowance for the
 * machine's scheduling (campaign_ha.c).
 */
#include "campaign_ha.h"

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW           64
#define PUT_TIMEOUT_MS   1500
#define REPLACE_AFTER_MS 3000

void *ha_produce(void *arg)
{
    ha_trial *tr = arg;
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
        atomic_store(&tr->confirmed, tr->pub.confirmed);
    }
    uint64_t end = th_now_ms() + PUT_TIMEOUT_MS;
    while (tr->pub.npend && tr->pub.c && th_now_ms() < end)
        campaign_pub_collect(&tr->pub, 50);
    campaign_pub_close(&tr->pub);
    return NULL;
}

static void arrived(ha_sink *s, uint64_t at)
{
    pthread_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        uint64_t *v = realloc(s->at_ms, cap * sizeof *v);
        if (v) {
            s->at_ms = v;
            s->cap = cap;
        }
    }
    if (s->n < s->cap)
        s->at_ms[s->n++] = at;
    pthread_mutex_unlock(&s->mu);
}

static void *consume(void *arg)
{
    ha_consumer *k = arg;
    ha_trial *tr = k->tr;
    sl_client *c = NULL;
    int subscribed = 0;
    uint64_t quiet_since = th_now_ms();
    while (!atomic_load(&tr->cstop)) {
        if (!c && campaign_client(k->endpoint, 1000, &c) != SL_OK) {
            c = NULL;
            campaign_sleep_ms(50);
            continue;
        }
        if (!subscribed && !(subscribed = sl_subscribe(c, NULL, NULL, 0, k->credit) == SL_OK)) {
            campaign_sleep_ms(50);
            if (th_now_ms() - quiet_since > REPLACE_AFTER_MS) { /* replaced: it finds the node from scratch */
                sl_close(&c);
                quiet_since = th_now_ms();
            }
            continue;
        }
        sl_delivery *d = NULL;
        int rc = sl_recv(c, 100, &d);
        if (rc == SL_OK) {
            arrived(&tr->sink, th_now_ms());
            history_deliver(tr->h, d->id, d->body, d->body_len, d->attempt);
            if (sl_ack(c, d) == SL_OK)
                history_ack(tr->h, d->id);
            sl_delivery_free(&d);
            atomic_fetch_add(&tr->consumed, 1);
            quiet_since = th_now_ms();
        } else if (rc != SL_ETIMEDOUT) {
            campaign_sleep_ms(20);
            if (th_now_ms() - quiet_since > REPLACE_AFTER_MS) {
                sl_close(&c);
                subscribed = 0;
                quiet_since = th_now_ms();
            }
        }
    }
    sl_close(&c);
    return NULL;
}

void ha_consumers_start(ha_trial *tr, const char *const *endpoints, unsigned n, unsigned credit)
{
    for (unsigned i = 0; i < n && i < HA_CONSUMERS_MAX; i++) {
        ha_consumer *k = &tr->cons[tr->ncons];
        *k = (ha_consumer){.tr = tr, .endpoint = endpoints[i], .credit = credit};
        k->running = pthread_create(&k->t, NULL, consume, k) == 0;
        tr->ncons++;
    }
}

void ha_consumers_stop(ha_trial *tr)
{
    atomic_store(&tr->cstop, 1);
    for (unsigned i = 0; i < tr->ncons; i++)
        if (tr->cons[i].running)
            pthread_join(tr->cons[i].t, NULL);
    tr->ncons = 0;
}

void ha_field(const ha_trial *tr, const char *f, char *out, size_t cap)
{
    redisReply *r = th_redis_cmd(&tr->redis, "HGET sluice:ha:{c} %s", f);
    out[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING)
        snprintf(out, cap, "%s", r->str);
    if (r)
        freeReplyObject(r);
}

int ha_wait_field(const ha_trial *tr, const char *f, const char *want, unsigned ms)
{
    char v[64];
    for (uint64_t t0 = th_now_ms(); th_now_ms() - t0 <= ms && !ha_interrupted; campaign_sleep_ms(20)) {
        ha_field(tr, f, v, sizeof v);
        if (!strcmp(v, want))
            return 0;
    }
    return -1;
}

long ha_serving(const ha_trial *tr, int i, unsigned max_ms)
{
    uint64_t t0 = th_now_ms();
    while (th_now_ms() - t0 <= max_ms && !ha_interrupted) {
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

static int by_time(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t ha_sink_most(ha_sink *s, uint64_t window_ms)
{
    pthread_mutex_lock(&s->mu);
    qsort(s->at_ms, s->n, sizeof *s->at_ms, by_time);
    uint64_t most = 0;
    for (size_t lo = 0, hi = 0; hi < s->n; hi++) { /* [at[lo], at[hi]] spans less than window_ms */
        while (s->at_ms[hi] - s->at_ms[lo] >= window_ms)
            lo++;
        if (hi - lo + 1 > most)
            most = hi - lo + 1;
    }
    pthread_mutex_unlock(&s->mu);
    return most;
}
