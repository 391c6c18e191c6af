/*
 * scen_tenants.h - the tenant rows of sluice-bench: a level served fair by
 * tag against the same level FIFO (scen_tenants.c).
 */
#ifndef SLUICE_SCEN_TENANTS_H
#define SLUICE_SCEN_TENANTS_H

#include "bench_run.h"

#define SCEN_TENANTS_BACKLOG     100000 /* tenant A's waiting messages; also the RSS rows' count */
#define SCEN_TENANTS_SINK_PER_S  1000   /* the broker's sink rate in the noisy-neighbour rows */
#define SCEN_TENANTS_B_PER_S     10     /* tenant B's publishes per second */
#define SCEN_TENANTS_B_SECONDS   10     /* ... for this long */
#define SCEN_TENANTS_TAGS        1000   /* the dispatch rows' tags */
#define SCEN_TENANTS_PER_TAG     100    /* ... messages waiting in each */
#define TARGET_TENANTS_B_P99_MS  50.0
#define TARGET_TENANTS_VS_FIFO   0.9    /* fair dispatch / FIFO dispatch */
#define TARGET_TENANTS_TAG_BYTES 256.0  /* broker RSS per waiting tag beyond FIFO */

/* scen_tenants_rows runs the tenant rows on brokers of their own (started
 * from b->sluiced in subdirectories of b->dir, stopped after each row; with
 * --spawn only) and adds ten rows to b->table: tenant B's publish->deliver
 * p99 beside a 100,000 backlog of tenant A, FIFO and fair (and fair's p50);
 * the end-to-end dispatch rate with 1,000 tags of 100 messages waiting, FIFO
 * and fair, and their ratio; the broker's RSS with 100,000 tags of one
 * message each, FIFO and fair, the bytes per waiting tag, and the same of
 * the heap after a restart. Returns 0, or -1 (reported). */
int scen_tenants_rows(bench *b);

#endif /* SLUICE_SCEN_TENANTS_H */
