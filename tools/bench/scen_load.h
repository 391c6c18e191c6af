/*
 * scen_load.h - the producers of a load scenario: threads that publish
 * through the client library on a schedule, and their counts per second.
 *
 * Two shapes of producer:
 *   steady  N threads, each publishing one message (sl_send, waiting for its
 *           confirmation), then sleeping a uniformly random 0..sleep_max_ms;
 *           they all pause during the silence windows.
 *   paced   one thread per stream, publishing rate_per_s messages a second,
 *           evenly spaced, during its on-windows (always, when every_ns is
 *           0), with up to PACED_WINDOW publishes in flight (sl_send_async).
 * A window "every E for L" is [k*E, k*E + L) from the start, for k >= 1.
 *
 * Every message gets the next sequence number and a body from
 * scen_log_body. Each publish is counted in the second (from start_ns)
 * it was attempted in: attempted, then confirmed or failed. Each thread has
 * its own sl_client. The counts may be read by any thread while the load
 * runs; the rest after scen_load_finish.
 */
#ifndef SLUICE_SCEN_LOAD_H
#define SLUICE_SCEN_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scen.h"

#define SCEN_LOAD_MAX_STEADY 256
#define SCEN_LOAD_MAX_PACED  4

typedef struct scen_load_paced {
    unsigned level;
    uint32_t rate_per_s;         /* 0: no such stream */
    int64_t every_ns, for_ns;    /* on-windows; every_ns 0: always on */
} scen_load_paced;

typedef struct scen_load_cfg {
    const char *endpoint;
    int64_t start_ns, end_ns;    /* the load runs in [start, end) */
    unsigned seed;
    uint64_t max_messages;       /* the count bound over all producers */
    /* steady producers */
    unsigned steady_threads;
    unsigned steady_level;
    unsigned sleep_max_ms;
    int64_t pause_every_ns, pause_for_ns; /* silence windows; pause_every_ns 0: none */
    /* paced streams */
    scen_load_paced paced[SCEN_LOAD_MAX_PACED];
} scen_load_cfg;

/* One second's publishes, by the second they were attempted in. */
typedef struct scen_load_second {
    uint64_t attempted, confirmed, failed;
} scen_load_second;

typedef struct scen_load scen_load;

/* scen_load_new connects every producer's client, checks the broker
 * answers, and starts the threads; they publish from cfg->start_ns (which
 * should leave them a moment to start) until cfg->end_ns, a signal, or
 * max_messages. Returns 0 with *out set, or -1, reported, with nothing left
 * running. */
int scen_load_new(const scen_load_cfg *cfg, scen_load **out);

/* scen_load_second_get reads second i's counts (zero past the end). */
scen_load_second scen_load_second_get(const scen_load *l, size_t i);

/* scen_load_stop asks every producer to stop before end_ns; each does
 * at its next step (within a pause at most: 3 s in the scenarios). */
void scen_load_stop(scen_load *l);

/* scen_load_finish waits for every producer to end (each ends by
 * itself at end_ns; the paced ones then wait up to the client timeout for
 * their last confirmations) and joins them. Safe to call twice. */
void scen_load_finish(scen_load *l);

/* scen_load_messages returns how many sequence numbers were used. */
uint64_t scen_load_messages(const scen_load *l);

/* scen_load_confirmed tells whether message seq was confirmed; call
 * after scen_load_finish. */
bool scen_load_confirmed(const scen_load *l, uint64_t seq);

/* scen_load_level_counts adds the confirmed messages per level into
 * out[SCEN_LEVELS]; call after scen_load_finish. */
void scen_load_level_counts(const scen_load *l, uint64_t *out);

/* scen_load_destroy finishes the load if needed, closes the clients,
 * frees *l and sets it to NULL; accepts NULL. */
void scen_load_destroy(scen_load **l);

#endif /* SLUICE_SCEN_LOAD_H */
