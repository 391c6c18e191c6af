/*
 * scen_rig.h - the test rig of a scenario: its own sluiced (temporary
 * data directory, ipc:// endpoint), its own sluice-sink on a free
 * 127.0.0.1 port, the broker's sink limits set through the admin API, and
 * the consumers that carry messages from one to the other.
 *
 * Consumers are `sluice consume --post http://127.0.0.1:PORT/` processes,
 * found next to the running executable, when that binary has --post and
 * the run did not ask for --inproc; otherwise threads in this process that
 * POST with httpc (the same client) and settle each message as `consume --post`
 * does (2xx ack, 429 or 503 THROTTLED with the Retry-After, else nack).
 *
 * The rig is used by one thread. Everything it starts it stops, by PID.
 */
#ifndef SLUICE_SCEN_RIG_H
#define SLUICE_SCEN_RIG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "scen.h"
#include "httpc.h"
#include "scen_proc.h"
#include "sluice.h"

#define SCEN_RIG_MAX_CONSUMERS 64 /* processes, or threads when in process */
#define SCEN_RIG_SEND_WINDOW   256 /* publishes in flight in scen_rig_publish */

typedef struct scen_rig_cfg {
    uint32_t sink_rate_per_s, sink_burst; /* the simulator: gcra, requests */
    uint64_t rate_milli;                  /* the broker's sink bucket, units/s x 1000 */
    uint32_t burst;                       /* ... and its burst, in units */
    unsigned consumers, workers;          /* processes x workers each */
    const char *key_header;               /* set: the sink limits per key, the key from this header */
    uint32_t key_rate_per_s, key_burst;   /* ... each key's limit (gcra) */
    unsigned tags;                        /* > 0: scen_rig_publish tags message seq scen_rig_tag(seq % tags) */
} scen_rig_cfg;

typedef struct scen_rig {
    const scen_opts *o;
    scen_rig_cfg cfg;
    char tmp[64];                          /* the broker's directory, removed at close */
    char endpoint[SCEN_PATH_BYTES];
    char url[64];                          /* http://127.0.0.1:PORT/ */
    uint16_t port;
    httpc *http;                           /* the in-process consumers' client of url */
    proc broker, sink;
    proc consumer[SCEN_RIG_MAX_CONSUMERS];
    sl_client *admin;                      /* the rig's own connection */
    bool post;                             /* consumers are `sluice consume --post` */
    pthread_t thread[SCEN_RIG_MAX_CONSUMERS];
    unsigned threads;                      /* in-process consumers running */
    unsigned inproc;                       /* in-process consumers started */
    atomic_bool threads_stop;
} scen_rig;

/* scen_rig_sink_start starts a sluice-sink (gcra, rate_per_s, burst) on
 * a free loopback port, logging every request to OUT/log_name and its own
 * output to OUT/out_name, and waits for it to be ready. Returns 0 with
 * *sink and *port set, or -1, reported. */
int scen_rig_sink_start(const scen_opts *o, uint32_t rate_per_s, uint32_t burst,
                             const char *log_name, const char *out_name, proc *sink,
                             uint16_t *port);

/* scen_rig_open starts the broker and the sink (its log in
 * OUT/sink.log; keyed when cfg->key_header is set) and sets the broker's
 * sink rate and burst. r needs no setup.
 * Returns 0, or -1, reported, with everything it started stopped again. */
int scen_rig_open(scen_rig *r, const scen_opts *o, const scen_rig_cfg *cfg);

/* scen_rig_consumers_start starts the consumers and waits until the
 * broker counts them all (10 s at most). Returns 0 or -1, reported. */
int scen_rig_consumers_start(scen_rig *r);

/* scen_rig_consumers_stop stops the consumers: each finishes and
 * settles what it is sending, and what it held unstarted returns to the
 * broker. Returns 0, or -1 when one had to be killed or failed. */
int scen_rig_consumers_stop(scen_rig *r);

/* scen_rig_consumers_alive tells whether every consumer still runs
 * (in-process ones always do). */
bool scen_rig_consumers_alive(scen_rig *r);

/* scen_rig_stats reads the broker's statistics on the rig's
 * connection. Returns 0 or -1, reported. */
int scen_rig_stats(scen_rig *r, sl_stats *out);

/* scen_rig_tag writes the tag of tenant i, "t" and four or more digits
 * ("t0042"), into buf (SCEN_RIG_TAG_BYTES). */
#define SCEN_RIG_TAG_BYTES 16
void scen_rig_tag(char *buf, unsigned i);

/* scen_rig_publish publishes n messages to level on the rig's connection,
 * each of cost (0: the default, 1) with a scen_log_body body (message seq
 * tagged scen_rig_tag(seq % cfg.tags) when cfg.tags > 0), at most
 * SCEN_RIG_SEND_WINDOW in flight. Stops at a failed send or wait, or a
 * signal. Returns how many the broker confirmed. */
uint64_t scen_rig_publish(scen_rig *r, uint64_t n, unsigned level, uint32_t cost);

/* scen_rig_sink_stop stops the sink, which flushes and closes its log.
 * Returns 0, or -1 when it did not stop cleanly. */
int scen_rig_sink_stop(scen_rig *r);

/* scen_rig_close stops whatever still runs (consumers, sink, broker),
 * closes the connection and removes the broker's directory. Returns 0, or
 * -1 when something did not stop cleanly. */
int scen_rig_close(scen_rig *r);

#endif /* SLUICE_SCEN_RIG_H */
