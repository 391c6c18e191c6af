/*
 * bench_meter.h - the metering rows of sluice-bench: how close the broker's
 * buckets come to their rates while backlogged, measured where deliveries
 * arrive (a consumer in this process).
 */
#ifndef SLUICE_BENCH_METER_H
#define SLUICE_BENCH_METER_H

#include "bench_table.h"

#define BENCH_METER_CREDIT    64 /* the consumer's credit: it never holds the buckets back */
#define BENCH_METER_TIMEOUT_S 60 /* each scenario gives up after this */

/* bench_meter_run runs the metering scenarios against the broker at
 * endpoint (NULL: SL_DEFAULT_ENDPOINT) and adds five rows to t, each against
 * the target the tests used to assert: the delivered share of a 200/s
 * burst-1 sink bucket; a 50/s level ceiling and a 60/s level guarantee
 * under a saturated 300/s sink; messages of cost 10 under 1000 units/s; and
 * deliveries in the second second after a live change from 100 to 400/s.
 * The queue should be idle: it is drained first and left empty, and the
 * sink and level limits the scenarios set are removed on every path (a
 * broker stores them). Returns 0, also when a signal cut it short (the
 * caller drops the rows); -1 (reported) on an error, including deliveries
 * that do not come within BENCH_METER_TIMEOUT_S. */
int bench_meter_run(const char *endpoint, bench_table *t);

/* bench_meter_beside_run adds one row to t (its scenario named with pass,
 * such as ", flushes +1 ms"): the delivered share of a 2,000/s sink bucket
 * over a backlogged level while this process publishes 1,000/s to another
 * level beside it, so that a commit is nearly always flushing; target 97 %.
 * The same conditions and results as bench_meter_run. */
int bench_meter_beside_run(const char *endpoint, bench_table *t, const char *pass);

#endif /* SLUICE_BENCH_METER_H */
