/*
 * bench_sched.h - the scheduler through a Sluice broker: dispatch to many
 * consumer pools at once, and how long the lowest level waits behind a
 * backlog on the top level, with and without a deadline.
 */
#ifndef SLUICE_BENCH_SCHED_H
#define SLUICE_BENCH_SCHED_H

#include <stdint.h>

#define BENCH_SCHED_POOLS         8   /* dispatch: consumers, one pool each */
#define BENCH_SCHED_CREDIT        8   /* dispatch: each consumer's credit */
#define BENCH_SCHED_DEADLINE_MS   500 /* starvation: the lowest level's deadline */
#define BENCH_SCHED_BUSY_MS       2000 /* starvation: the top-level backlog, in work */
#define BENCH_SCHED_TIMEOUT_S     30  /* starvation: each measurement gives up after this */

/* bench_sched_dispatch publishes msgs messages to endpoint (NULL:
 * SL_DEFAULT_ENDPOINT), spread evenly over the broker's levels, then has
 * BENCH_SCHED_POOLS consumers, each on its own thread and client and in its
 * own pool ("pool-0" ...; the first three serve one level each, the others
 * every level), with credit BENCH_SCHED_CREDIT, ack every delivery until the
 * broker reports its queue empty. *acked counts the acks and *elapsed_ns
 * runs from the start of consuming to the last ack. Returns 0, also when a
 * signal cut it short; -1 (reported) on an error, including a queue that
 * does not empty. */
int bench_sched_dispatch(const char *endpoint, uint64_t msgs, uint64_t *acked,
                         int64_t *elapsed_ns);

/* bench_sched_starvation measures twice, on one consumer (pool "starve",
 * size 1, credit 1) that acks as fast as it can: how long one message
 * published to the lowest level after top_msgs top-level messages waits for
 * its delivery, first with no deadline on the lowest level, then with
 * BENCH_SCHED_DEADLINE_MS. top_msgs 0 means enough for BENCH_SCHED_BUSY_MS
 * of work, as measured by a short probe. The queue must be empty when it
 * starts, or be emptied by the consumer, and is left empty; the lowest
 * level's deadline is restored on every path. Returns 0 with both waits in
 * milliseconds (left 0 when a signal cut the run short); -1 (reported) on an
 * error, including a message not delivered within BENCH_SCHED_TIMEOUT_S. */
int bench_sched_starvation(const char *endpoint, uint64_t top_msgs, double *plain_ms,
                           double *deadline_ms);

#endif /* SLUICE_BENCH_SCHED_H */
