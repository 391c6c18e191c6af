/*
 * bench_ha.h - the high-availability rows (bench_ha.c): confirmed enqueue
 * with a synchronous standby against the same without, and the time from
 * kill -9 of the primary to the first confirmation by the new one.
 */
#ifndef SLUICE_BENCH_HA_H
#define SLUICE_BENCH_HA_H

#include "bench_run.h"

/* bench_ha_rows starts a redis-server, a lone broker and a group of two
 * (the binary at b->sluiced) in directories of b's, adds the rows to b's
 * table and stops everything. Returns 0, or -1 (reported). */
int bench_ha_rows(bench *b);

#endif /* SLUICE_BENCH_HA_H */
