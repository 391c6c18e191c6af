/*
 * hist.h - latency histograms with fixed bucket bounds: the publish-to-
 * deliver wait (deliver fills one per level) and the commit latency (loop
 * fills it); metrics.c serves them. Pure: no clock, no I/O.
 */
#ifndef SLUICE_HIST_H
#define SLUICE_HIST_H

#include <stdint.h>

/* The shapes, each with its own bucket bounds (hist.c). */
typedef enum hist_kind { HIST_WAIT = 0, HIST_COMMIT, HIST_KIND_COUNT_ } hist_kind;

#define HIST_BUCKETS 16 /* upper bounds, the +Inf bucket included */

/* A histogram: counts per bucket (not cumulative), their sum in ns. */
typedef struct hist {
    uint64_t bucket[HIST_BUCKETS];
    uint64_t count;
    uint64_t sum_ns;
} hist;

/* hist_add counts one observation of ns in h, whose shape is kind: in the
 * first bucket whose bound is >= ns, else in the +Inf bucket. O(buckets). */
void hist_add(hist *h, hist_kind kind, uint64_t ns);

/* hist_bounds returns kind's upper bounds in ns, HIST_BUCKETS long; the
 * first 0 stands for +Inf and ends them. */
const uint64_t *hist_bounds(hist_kind kind);

#endif /* SLUICE_HIST_H */
