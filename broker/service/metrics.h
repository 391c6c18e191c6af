/*
 * metrics.h - the Prometheus /metrics endpoint (libmicrohttpd, its own
 * thread), serving the last snapshot the loop published.
 */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <stdint.h>

#include "snap.h"

#define METRICS_PUBLISH_NS 250000000ULL /* how often the loop publishes a snapshot (cron) */

typedef struct metrics metrics;

/* metrics_open serves http://ADDR:PORT/metrics (IPv4; port 0 picks one) from
 * a thread of its own. addr_port "" means no endpoint: *out is NULL and
 * SL_OK. Returns SL_OK, SL_EINVAL for an address it cannot read, SL_EIO when
 * it cannot listen, SL_ENOMEM. Logs the address it serves. */
int metrics_open(const char *addr_port, metrics **out);

/* metrics_port returns the TCP port m listens on. */
unsigned metrics_port(const metrics *m);

/* metrics_staging returns the snapshot the loop fills before
 * metrics_publish (NULL when m is NULL). The loop's thread only. */
snap *metrics_staging(metrics *m);

/* metrics_publish makes the staging snapshot the one scrapes see. Called by
 * the loop's thread only (cron, every METRICS_PUBLISH_NS); it holds m's lock
 * for one memcpy and never waits for a scrape, which works on a copy.
 * Accepts m NULL. */
void metrics_publish(metrics *m);

/* metrics_close stops the thread (an ongoing scrape completes), frees m and
 * NULLs *m; accepts NULL. */
void metrics_close(metrics **m);

#endif /* SLUICE_METRICS_H */
