/*
 * cli_bench_load.h - the producers of a load scenario: threads that publish
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
 * cli_bench_log_body. Each publish is counted in the second (from start_ns)
 * it was attempted in: attempted, then confirmed or failed. Each thread has
 * its own sl_client. The counts may be read by any thread while the load
 * runs; the rest after cli_bench_load_finish.
 */
#ifndef SLUICE_CLI_BENCH_LOAD_H
#define SLUICE_CLI_BENCH_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_bench.h"

#define CLI_BENCH_LOAD_MAX_STEADY 256
#define CLI_BENCH_LOAD_MAX_PACED  4

typedef struct cli_bench_load_paced {
    unsigned level;
    uint32_t rate_per_s;         /* 0: no such stream */
    int64_t every_ns, for_ns;    /* on-windows; every_ns 0: always on */
} cli_bench_load_paced;

typedef struct cli_bench_load_cfg {
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
    cli_bench_load_paced paced[CLI_BENCH_LOAD_MAX_PACED];
} cli_bench_load_cfg;

/* One second's publishes, by the second they were attempted in. */
typedef struct cli_bench_load_second {
    uint64_t attempted, confirmed, failed;
} cli_bench_load_second;

typedef struct cli_bench_load cli_bench_load;

/* cli_bench_load_new connects every producer's client, checks the broker
 * answers, and starts the threads; they publish from cfg->start_ns (which
 * should leave them a moment to start) until cfg->end_ns, a signal, or
 * max_messages. Returns 0 with *out set, or -1, reported, with nothing left
 * running. */
int cli_bench_load_new(const cli_bench_load_cfg *cfg, cli_bench_load **out);

/* cli_bench_load_second_get reads second i's counts (zero past the end). */
cli_bench_load_second cli_bench_load_second_get(const cli_bench_load *l, size_t i);

/* cli_bench_load_stop asks every producer to stop before end_ns; each does
 * at its next step (within a pause at most: 3 s in the scenarios). */
void cli_bench_load_stop(cli_bench_load *l);

/* cli_bench_load_finish waits for every producer to end (each ends by
 * itself at end_ns; the paced ones then wait up to the client timeout for
 * their last confirmations) and joins them. Safe to call twice. */
void cli_bench_load_finish(cli_bench_load *l);

/* cli_bench_load_messages returns how many sequence numbers were used. */
uint64_t cli_bench_load_messages(const cli_bench_load *l);

/* cli_bench_load_confirmed tells whether message seq was confirmed; call
 * after cli_bench_load_finish. */
bool cli_bench_load_confirmed(const cli_bench_load *l, uint64_t seq);

/* cli_bench_load_level_counts adds the confirmed messages per level into
 * out[CLI_BENCH_LEVELS]; call after cli_bench_load_finish. */
void cli_bench_load_level_counts(const cli_bench_load *l, uint64_t *out);

/* cli_bench_load_destroy finishes the load if needed, closes the clients,
 * frees *l and sets it to NULL; accepts NULL. */
void cli_bench_load_destroy(cli_bench_load **l);

#endif /* SLUICE_CLI_BENCH_LOAD_H */
