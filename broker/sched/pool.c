/*
 * pool.c - the pool table and its arithmetic.
 *
 * Pools are few (at most 64) and looked up by name only on HELLO and admin
 * commands, so the table is a plain array. Measurements are smoothed with an
 * exponential moving average over samples taken at least 250 ms apart
 * (weight 0.3 for the newest), enough to follow a load change within a few
 * seconds without chasing every burst.
 *
 * The recommended size follows Little's law: a pool that receives lambda
 * messages per second, each held S seconds, keeps lambda x S of them in
 * flight; to also clear a backlog B within the target wait T it needs
 * (lambda + B / T) x S. The recommendation is computed whether autoscaling is
 * on or not, so an operator can see what it would do before turning it on.
 */
#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_NS 250000000ULL
#define EWMA_NEW 0.3

void pool_table_init(pool_table *t)
{
    memset(t, 0, sizeof *t);
}

void pool_table_fini(pool_table *t)
{
    for (unsigned i = 0; i < t->n; i++)
        free(t->v[i]);
    memset(t, 0, sizeof *t);
}

pool *pool_find(pool_table *t, const char *name, size_t len)
{
    for (unsigned i = 0; i < t->n; i++)
        if (strlen(t->v[i]->name) == len && memcmp(t->v[i]->name, name, len) == 0)
            return t->v[i];
    return NULL;
}

pool *pool_require(pool_table *t, const char *name, size_t len, uint32_t levels_mask)
{
    pool *p = pool_find(t, name, len);
    if (p || len == 0 || len > PROTO_MAX_NAME || t->n >= (t->max ? t->max : PROTO_MAX_POOLS))
        return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    memcpy(p->name, name, len);
    p->levels_mask = levels_mask;
    p->min_size = 1;
    p->max_size = 64;
    p->target_wait_ms = 1000;
    t->v[t->n++] = p;
    return p;
}

void pool_remove(pool_table *t, pool *p)
{
    for (unsigned i = 0; i < t->n; i++)
        if (t->v[i] == p) {
            memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof t->v[0]);
            t->n--;
            free(p);
            return;
        }
}

int pool_open(const pool *p)
{
    return !p->paused && (p->size == 0 || p->inflight < p->size);
}

uint32_t pool_share(const pool *p, uint32_t index)
{
    if (p->size == 0 || p->members == 0)
        return 0;
    return p->size / p->members + (index < p->size % p->members ? 1 : 0);
}

uint32_t pool_recommend(double arrival_per_s, double service_s, uint64_t backlog, uint64_t target_wait_ms,
                        uint32_t lo, uint32_t hi)
{
    double wait_s = target_wait_ms ? (double)target_wait_ms / 1000.0 : 1.0;
    double need = (arrival_per_s + (double)backlog / wait_s) * service_s;
    double n = ceil(need);
    if (n < lo)
        n = lo;
    if (n > hi)
        n = hi;
    return (uint32_t)n;
}

int pool_sample(pool *p, uint64_t now_ns, double arrival_per_s, uint64_t backlog)
{
    if (p->sample_ns == 0) {
        p->sample_ns = now_ns;
        p->sample_delivered = p->delivered;
        p->sample_settled = p->settled;
        p->sample_held_ns = p->held_ns;
        return 0;
    }
    if (now_ns < p->sample_ns + SAMPLE_NS)
        return 0;
    double dt = (double)(now_ns - p->sample_ns) / 1e9;
    double rate = (double)(p->delivered - p->sample_delivered) / dt;
    uint64_t settled = p->settled - p->sample_settled;
    p->rate_per_s = EWMA_NEW * rate + (1 - EWMA_NEW) * p->rate_per_s;
    if (settled) {
        double service = (double)(p->held_ns - p->sample_held_ns) / 1e9 / (double)settled;
        p->service_s = p->service_s > 0 ? EWMA_NEW * service + (1 - EWMA_NEW) * p->service_s : service;
    }
    p->sample_ns = now_ns;
    p->sample_delivered = p->delivered;
    p->sample_settled = p->settled;
    p->sample_held_ns = p->held_ns;
    uint32_t lo = p->autoscale ? p->min_size : 1, hi = p->autoscale ? p->max_size : 100000;
    /* before the first settlement there is no service time: keep the size */
    double service = p->service_s > 0 ? p->service_s : 0;
    p->recommended = service > 0 ? pool_recommend(arrival_per_s, service, backlog, p->target_wait_ms, lo, hi)
                                 : (p->size ? p->size : lo);
    if (p->autoscale && p->recommended != p->size) {
        p->size = p->recommended;
        return 1;
    }
    return 0;
}
