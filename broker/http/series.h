/*
 * series.h - the history: what the console's charts draw: the broker's figures over
 * time, kept in memory by the HTTP server from the snapshots it reads.
 */
#ifndef SLUICE_SERIES_H
#define SLUICE_SERIES_H

#include <stdint.h>

#include "proto.h"
#include "snap.h"

#define SERIES_SECONDS 900  /* 1 s points: 15 minutes */
#define SERIES_MINUTES 1440 /* 1 min points: 24 hours */

/* One point: each level's gauges at its time and its rates (per second)
 * over the interval it ends; the sink's limits and rate. A minute point
 * holds its last second's gauges and its seconds' mean rates. */
typedef struct series_level {
    uint64_t ready, inflight, delayed, dead;
    float in_per_s, out_per_s, acked_per_s, throttled_per_s;
} series_level;

typedef struct series_point {
    uint64_t t_ms;       /* the wall clock at its end */
    unsigned nlevels;
    series_level lv[PROTO_MAX_LEVELS];
    float sink_limit_per_s, sink_effective_per_s, sink_out_per_s; /* limit 0: none */
    uint64_t sink_inflight;
} series_point;

typedef struct series series;

/* series_new allocates the two rings (about 2 MiB). NULL when out of memory. */
series *series_new(void);
void series_destroy(series **hp);

/* series_point_of computes the point that ends at cur from the snapshot
 * before it (prev NULL: rates 0). */
void series_point_of(const snap *prev, const snap *cur, series_point *out);

/* series_add appends a 1 s point, and a minute point each time the wall
 * clock's minute changes. */
void series_add(series *h, const series_point *p);

/* series_json appends the points of the last span (minutes: the minute
 * ring, else the second ring) to o as one JSON object of columns (see
 * proto/HTTP.md). Returns SL_OK or SL_ENOMEM. */
int series_json(const series *h, int minutes, proto_wbuf *o);

#endif /* SLUICE_SERIES_H */
