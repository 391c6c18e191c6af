/*
 * series.c - the history: the console's charts' memory: a point a second for 15
 * minutes and a point a minute for 24 hours, in two rings, fed by the
 * server's ticker from the snapshots the loop publishes (never from the
 * broker itself).
 *
 * A point's rates are the counters' differences between two snapshots over
 * the broker's own uptime between them, so a late tick does not skew them;
 * a minute point holds the mean of its seconds' rates and its last second's
 * gauges. The rings start empty at each start of the broker: the history
 * is the console's, not a store (Prometheus keeps the long view).
 *
 * Only the ticker writes; readers (requests for /api/v1/history) hold the
 * live lock (live.c) while they format. Costs: O(levels) per point; a
 * format is O(points x levels); 2.2 MiB of memory for 16 levels.
 */
#include "series.h"

#include <stdlib.h>
#include <string.h>

#include "proto_json.h"
#include "units.h"

struct series {
    series_point sec[SERIES_SECONDS];
    series_point min[SERIES_MINUTES];
    unsigned nsec, sec_at, nmin, min_at; /* how many, and where the next goes */
    series_point acc;                   /* the minute being summed */
    unsigned acc_n;
};

series *series_new(void)
{
    return calloc(1, sizeof(series));
}

void series_destroy(series **hp)
{
    if (hp && *hp) {
        free(*hp);
        *hp = NULL;
    }
}

static float per_s(uint64_t a, uint64_t b, uint64_t ns)
{
    return b > a && ns ? (float)((double)(b - a) * 1e9 / (double)ns) : 0.0f;
}

void series_point_of(const snap *prev, const snap *cur, series_point *out)
{
    memset(out, 0, sizeof *out);
    out->t_ms = cur->wall_ms;
    out->nlevels = cur->nlevels;
    uint64_t ns = prev && cur->uptime_ns > prev->uptime_ns ? cur->uptime_ns - prev->uptime_ns : 0;
    int same = prev && prev->nlevels == cur->nlevels;
    for (unsigned l = 0; l < cur->nlevels; l++) {
        const snap_level *c = &cur->lv[l], *p = same ? &prev->lv[l] : NULL;
        series_level *o = &out->lv[l];
        o->ready = c->depth;
        o->inflight = c->inflight;
        o->delayed = c->delayed;
        o->dead = c->dead;
        if (p) {
            o->in_per_s = per_s(p->enqueued, c->enqueued, ns);
            o->out_per_s = per_s(p->dispatched, c->dispatched, ns);
            o->acked_per_s = per_s(p->acked, c->acked, ns);
            o->throttled_per_s = per_s(p->throttled, c->throttled, ns);
        }
        out->sink_out_per_s += o->out_per_s;
    }
    out->sink_limit_per_s = (float)cur->sink_rate_milli / 1000.0f;
    out->sink_effective_per_s = (float)cur->sink_effective_milli / 1000.0f;
    out->sink_inflight = cur->sink_inflight;
}

static void push(series_point *ring, unsigned size, unsigned *n, unsigned *at, const series_point *p)
{
    ring[*at] = *p;
    *at = (*at + 1) % size;
    if (*n < size)
        (*n)++;
}

void series_add(series *h, const series_point *p)
{
    if (h->acc_n && p->t_ms / 60000 != h->acc.t_ms / 60000) { /* a new minute: the last one is whole */
        series_point m = h->acc;
        for (unsigned l = 0; l < m.nlevels; l++) {
            m.lv[l].in_per_s /= (float)h->acc_n;
            m.lv[l].out_per_s /= (float)h->acc_n;
            m.lv[l].acked_per_s /= (float)h->acc_n;
            m.lv[l].throttled_per_s /= (float)h->acc_n;
        }
        m.sink_out_per_s /= (float)h->acc_n;
        push(h->min, SERIES_MINUTES, &h->nmin, &h->min_at, &m);
        h->acc_n = 0;
    }
    push(h->sec, SERIES_SECONDS, &h->nsec, &h->sec_at, p);
    if (!h->acc_n || h->acc.nlevels != p->nlevels) {
        h->acc = *p;
        h->acc_n = 1;
        return;
    }
    series_point sum = *p; /* the last second's gauges and limits, the seconds' rates summed */
    for (unsigned l = 0; l < p->nlevels; l++) {
        sum.lv[l].in_per_s += h->acc.lv[l].in_per_s;
        sum.lv[l].out_per_s += h->acc.lv[l].out_per_s;
        sum.lv[l].acked_per_s += h->acc.lv[l].acked_per_s;
        sum.lv[l].throttled_per_s += h->acc.lv[l].throttled_per_s;
    }
    sum.sink_out_per_s += h->acc.sink_out_per_s;
    h->acc = sum;
    h->acc_n++;
}

/* The columns of each level, by JSON key: X(key, member, is_rate). */
#define SERIES_LEVEL_COLS(X) \
    X("ready", ready, 0)      \
    X("inflight", inflight, 0) \
    X("delayed", delayed, 0)  \
    X("dead", dead, 0)        \
    X("in_per_s", in_per_s, 1) \
    X("out_per_s", out_per_s, 1) \
    X("acked_per_s", acked_per_s, 1) \
    X("throttled_per_s", throttled_per_s, 1)

static int num(proto_wbuf *o, int first, double v, int rate)
{
    return rate ? proto_json_printf(o, first ? "%.5g" : ",%.5g", v)
                : proto_json_printf(o, first ? "%.0f" : ",%.0f", v);
}

int series_json(const series *h, int minutes, proto_wbuf *o)
{
    const series_point *ring = minutes ? h->min : h->sec;
    unsigned size = minutes ? SERIES_MINUTES : SERIES_SECONDS;
    unsigned n = minutes ? h->nmin : h->nsec, at = minutes ? h->min_at : h->sec_at;
    unsigned first = (at + size - n) % size;
    unsigned nlevels = n ? ring[(at + size - 1) % size].nlevels : 0;
    int rc = proto_json_printf(o, "{\"step_s\": %d, \"t\": [", minutes ? 60 : 1);
    for (unsigned i = 0; i < n && rc == SL_OK; i++)
        rc = proto_json_printf(o, i ? ",%llu" : "%llu", (unsigned long long)ring[(first + i) % size].t_ms);
    if (rc == SL_OK)
        rc = proto_json_raw(o, "], \"levels\": [");
    for (unsigned l = 0; l < nlevels && rc == SL_OK; l++) {
        rc = proto_json_raw(o, l ? ", {" : "{");
#define SERIES_COL_(key, member, rate)                                                                    \
    if (rc == SL_OK)                                                                                       \
        rc = proto_json_raw(o, strcmp(key, "ready") ? ", \"" key "\": [" : "\"" key "\": [");              \
    for (unsigned i = 0; i < n && rc == SL_OK; i++) {                                                      \
        const series_point *p = &ring[(first + i) % size];                                                \
        rc = num(o, i == 0, l < p->nlevels ? (double)p->lv[l].member : 0.0, rate);                         \
    }                                                                                                      \
    if (rc == SL_OK)                                                                                       \
        rc = proto_json_raw(o, "]");
        SERIES_LEVEL_COLS(SERIES_COL_)
#undef SERIES_COL_
        if (rc == SL_OK)
            rc = proto_json_raw(o, "}");
    }
    static const char *const sink_keys[] = {"sink_limit_per_s", "sink_effective_per_s", "sink_out_per_s", "sink_inflight"};
    for (unsigned k = 0; k < 4 && rc == SL_OK; k++) {
        rc = proto_json_printf(o, "], \"%s\": [", sink_keys[k]);
        for (unsigned i = 0; i < n && rc == SL_OK; i++) {
            const series_point *p = &ring[(first + i) % size];
            double v = k == 0 ? p->sink_limit_per_s : k == 1 ? p->sink_effective_per_s : k == 2 ? p->sink_out_per_s
                                                                                             : (double)p->sink_inflight;
            rc = num(o, i == 0, v, k < 3);
        }
    }
    return rc == SL_OK ? proto_json_raw(o, "]}") : rc;
}
