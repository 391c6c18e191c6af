/*
 * deliver.h - dispatch: matching ready messages to consumers with credit.
 */
#ifndef SLUICE_DELIVER_H
#define SLUICE_DELIVER_H

#include <stdint.h>

#include "bk.h"

/* deliver_dispatch delivers to consumers with credit, round-robin, at most
 * max deliveries, as the pick rule and the meter allow. Sets
 * b->meter_wake_ns to when a held-back delivery may go. Returns how many it
 * made. */
unsigned deliver_dispatch(bk *b, unsigned max);

/* deliver_eta_ms returns the expected time to drain level's ready backlog,
 * at the rate the meter allows it (or the rate it has been served); in a
 * level served fair by tag, no sooner than its rate-limited tags' backlogs
 * drain at their own rates (queue_fair_limits_ms: counted up to
 * QUEUE_FAIR_ETA_KEYS records a call, a lower bound beyond). */
uint64_t deliver_eta_ms(bk *b, unsigned level);

#endif /* SLUICE_DELIVER_H */
