/*
 * bench_client.h - sluice-bench's side of the Sluice client library:
 * connecting with a check that the broker answers, reading the queue's
 * totals, publishing with confirmations outstanding, and taking deliveries.
 *
 * Every function here uses its sl_client from the calling thread only, as
 * sluice.h requires. Errors are reported on stderr (bench_core_fail) where
 * they happen and returned as -1.
 */
#ifndef SLUICE_BENCH_CLIENT_H
#define SLUICE_BENCH_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* What the broker holds, summed over its levels. */
typedef struct bench_client_totals {
    uint64_t ready, inflight, delayed;
} bench_client_totals;

/* bench_client_fail reports that the call what failed on c with rc, with
 * the broker's explanation when c is not NULL. Returns -1. */
int bench_client_fail(const char *what, const sl_client *c, int rc);

/* bench_client_keys_set makes every client opened from now on use CURVE
 * with these keys (40 Z85 characters each; copied); NULLs: plaintext again.
 * Call it while no worker thread runs. */
void bench_client_keys_set(const char *server, const char *pub, const char *sec);

/* bench_client_open connects to endpoint (NULL: SL_DEFAULT_ENDPOINT) with
 * replies timed out after BENCH_CORE_CLIENT_TIMEOUT_MS, and checks that the
 * broker answers a stats request. Returns 0 with *out set, for the caller to
 * sl_close; or -1 (reported), with nothing left open. */
int bench_client_open(const char *endpoint, sl_client **out);

/* bench_client_totals_get asks the broker at endpoint, on a connection of
 * its own, what it holds. Returns 0 with *t set, or -1 (reported). */
int bench_client_totals_get(const char *endpoint, bench_client_totals *t);

/* bench_client_confirms takes every confirmation that has arrived on c,
 * waiting for more (BENCH_CORE_CLIENT_TIMEOUT_MS each) while more than
 * max_pending publishes are unconfirmed; each adds one to *confirmed.
 * Returns 0, or -1 (reported) when waiting failed or the broker refused a
 * publish. */
int bench_client_confirms(sl_client *c, size_t max_pending, uint64_t *confirmed);

/* bench_client_publish_window publishes the bench's body on c with up to
 * window publishes unconfirmed, until deadline_ns, a signal, or max_msgs
 * publishes, and then waits for the rest. *confirmed counts the confirmed
 * publishes and *last_ns is when the last confirmation arrived. Returns 0,
 * or -1 (reported). */
int bench_client_publish_window(sl_client *c, size_t window, int64_t deadline_ns,
                                uint64_t max_msgs, uint64_t *confirmed, int64_t *last_ns);

/* bench_client_window_rate connects to endpoint, publishes with window
 * outstanding for seconds (bench_client_publish_window) and stores the
 * confirmed rate in *per_s. Returns 0, or -1 (reported). */
int bench_client_window_rate(const char *endpoint, int seconds, size_t window, double *per_s);

/* bench_client_publish_window_ex is bench_client_publish_window with
 * headers[0..nheaders) on every message (sl_send_async_ex) and bodies of
 * body_bytes (0: BENCH_CORE_BODY_BYTES; at most BENCH_CLIENT_BODY_MAX). */
#define BENCH_CLIENT_BODY_MAX 4096
int bench_client_publish_window_ex(sl_client *c, size_t window, int64_t deadline_ns, uint64_t max_msgs,
                                   const sl_header *headers, size_t nheaders, size_t body_bytes,
                                   uint64_t *confirmed, int64_t *last_ns);

/* bench_client_window_turn connects to endpoint, publishes msgs messages
 * with window outstanding (headers and body_bytes as for
 * bench_client_publish_window_ex) and stores the confirmed rate in *per_s:
 * one turn of the rows that compare two ways of publishing in paired
 * turns of a fixed count, so that what the turns leave in the backlog is
 * bounded whatever the machine's speed. Returns 0, or -1 (reported). */
int bench_client_window_turn(const char *endpoint, size_t window, uint64_t msgs, const sl_header *headers,
                             size_t nheaders, size_t body_bytes, double *per_s);

/* bench_client_look is shown each delivery bench_client_take takes, with
 * the monotonic time it arrived; d is valid only during the call. */
typedef void bench_client_look(void *ctx, const sl_delivery *d, int64_t got_ns);

/* bench_client_take waits up to BENCH_CORE_POLL_MS for a delivery on a
 * subscribed c, shows it to look (unless look is NULL) and acks it, waiting
 * for the broker's answer. Returns 1 when it took one, 0 when none came in
 * time, -1 (reported) when receiving or acking failed. */
int bench_client_take(sl_client *c, bench_client_look *look, void *ctx);

#endif /* SLUICE_BENCH_CLIENT_H */
