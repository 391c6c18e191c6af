/*
 * sink_http.h - the HTTP side of sluice-sink: one or two libmicrohttpd
 * daemons that answer POSTs through a sink_limit (and, when keyed, a
 * sink_keys limiter per key), serve the control paths
 * (/_limit, /_stats), write the request log and keep per-second counts.
 *
 * Threads: the daemons run on their own internal threads; every function
 * here is called from one thread, the program's main loop. Signals must be
 * blocked in that thread before sink_http_open, so that the daemons' threads
 * inherit the mask and signals reach only the main loop.
 */
#ifndef SLUICE_SINK_HTTP_H
#define SLUICE_SINK_HTTP_H

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>

#include "sink_keys.h"
#include "sink_limit.h"
#include "sink_log.h"

#define SINK_HTTP_LOG_BODY_BYTES SINK_LOG_BODY_BYTES /* body bytes written per log line */
#define SINK_HTTP_FLUSH_NS 100000000ull /* the log is flushed at least this often */

typedef struct sink_http_cfg {
    struct sockaddr_in listen;   /* address and port of the service; port 0 picks one */
    uint16_t control_port;       /* 0: control paths on the service port; else only there */
    sink_limit_mode mode;
    uint32_t rate_per_s;
    uint32_t burst;
    int retry_after_s;           /* < 0: computed from the limiter; else this fixed value */
    sink_keys_source key_source; /* SINK_KEYS_NONE: no per-key limit */
    const char *key_header;      /* SINK_KEYS_HEADER: the header's name */
    uint32_t key_rate_per_s;     /* every key's limit (gcra), when keyed */
    uint32_t key_burst;
    const char *log_path;        /* request log, truncated at open; NULL: none */
    const char *dedup_header;    /* --dedup-header: apply each key of this header once; NULL: off */
    FILE *counts;                /* where the per-second lines go (stdout) */
} sink_http_cfg;

typedef struct sink_http sink_http;

/* sink_http_open checks cfg, opens the log, builds the limiter at now_ns and
 * starts listening; requests are served from then on. The configuration is
 * copied. Problems are reported on stderr. Returns SL_OK with *out set, or
 * SL_EINVAL (a value out of range), SL_EIO (the log cannot be opened or the
 * address cannot be bound) or SL_ENOMEM, with *out NULL and nothing left
 * running. */
int sink_http_open(const sink_http_cfg *cfg, uint64_t now_ns, sink_http **out);

/* sink_http_port returns the bound port of the service (control = 0) or of
 * the control daemon (control = 1; the service port when there is none). */
uint16_t sink_http_port(const sink_http *s, int control);

/* sink_http_tick prints a count line for every whole second finished by
 * now_ns and flushes the log. Returns the time by which it wants to be
 * called again: at most SINK_HTTP_FLUSH_NS later. */
uint64_t sink_http_tick(sink_http *s, uint64_t now_ns);

/* sink_http_close stops serving (waiting for requests in flight), prints
 * the seconds not yet printed including the unfinished one when it counted
 * anything, flushes and closes the log, frees *s and sets it to NULL;
 * accepts NULL and *s == NULL. Returns SL_OK, or SL_EIO when a log write
 * failed at any time (already reported). */
int sink_http_close(sink_http **s, uint64_t now_ns);

#endif /* SLUICE_SINK_HTTP_H */
