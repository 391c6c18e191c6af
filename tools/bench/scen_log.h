/*
 * scen_log.h - what reached the sink: sluice-sink's request log, read
 * while it grows, counted in time bins, matched to the bench's messages.
 *
 * The bench writes every body it publishes with scen_log_body: a
 * sequence number, the monotonic time of the publish and the level. The
 * sink logs "<monotonic ns> <status> <body>" per POST; this module reads
 * those lines ("<ns> <status> <key> <body>" from a sink limiting per key,
 * each line's key handed to a callback) and keeps, per bin, the arrivals,
 * 200s and 429s (per level too) and the publish-to-200 times; per sequence
 * number, how many 200s it got; and every arrival time, for the window
 * conformance check.
 *
 * One thread uses a scen_log at a time.
 */
#ifndef SLUICE_SCEN_LOG_H
#define SLUICE_SCEN_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scen.h"

#define SCEN_LOG_BODY_BYTES 64 /* room for scen_log_body */

/* One time bin: requests the sink decided in [origin + i*bin, origin + (i+1)*bin). */
typedef struct scen_log_bin {
    uint32_t arrived, ok, throttled;
    uint32_t ok_level[SCEN_LEVELS];
    double latency_ms_sum; /* publish to 200, over the 200s whose body names a publish time */
    uint32_t latency_n;
} scen_log_bin;

/* Totals over the whole log. Times are CLOCK_MONOTONIC ns; 0 when none. */
typedef struct scen_log_totals {
    uint64_t arrived, ok, throttled, other; /* other: any status but 200 and 429 */
    uint64_t unparsed;                      /* lines that are not "<ns> <status> ..." */
    uint64_t foreign;                       /* 200s whose body has no sequence number */
    int64_t first_ns, last_ns, last_ok_ns;
    uint64_t ok_level[SCEN_LEVELS];
} scen_log_totals;

typedef struct scen_log scen_log;

/* scen_log_body writes the body of message seq, published at pub_ns
 * to level, into buf (SCEN_LOG_BODY_BYTES). Returns its length. */
size_t scen_log_body(char *buf, uint64_t seq, int64_t pub_ns, unsigned level);

/* scen_log_new reads the log at path (which may not exist yet) into
 * nbins bins of bin_ns from origin_ns, and counts 200s for sequence numbers
 * below nseq. Lines before origin_ns count in bin 0, lines after the last
 * bin only in the totals. Returns 0 with *out set, or -1, reported. */
int scen_log_new(const char *path, int64_t origin_ns, int64_t bin_ns, size_t nbins,
                      uint64_t nseq, scen_log **out);

/* scen_log_key_fn receives one line of a keyed log: the sink's time, the
 * status, the key as the sink wrote it (escaped, no space; "-" for none)
 * and the sequence number the body names (UINT64_MAX when it names none). */
typedef void (*scen_log_key_fn)(void *arg, int64_t at_ns, int status, const char *key, uint64_t seq);

/* scen_log_keyed says that l's lines carry a key (sluice-sink --key-header
 * or --key-path) and hands every line read from now on to fn with arg, in
 * the order of the log, before it is counted. */
void scen_log_keyed(scen_log *l, scen_log_key_fn fn, void *arg);

/* scen_log_poll reads the lines written since the last call. Returns
 * 0, or -1, reported, when the log cannot be read. */
int scen_log_poll(scen_log *l);

/* scen_log_bin returns bin i (a zero bin past the last). */
const scen_log_bin *scen_log_bin_at(const scen_log *l, size_t i);

/* scen_log_totals_get returns the totals so far. */
const scen_log_totals *scen_log_totals_get(const scen_log *l);

/* scen_log_seq_ok returns how many 200s message seq got (at most 255). */
unsigned scen_log_seq_ok(const scen_log *l, uint64_t seq);

/* scen_log_window_max returns the most arrivals in any window of
 * window_ns (arrivals a, b in one window when b - a < window_ns). */
uint64_t scen_log_window_max(const scen_log *l, int64_t window_ns);

/* scen_log_window_max_of is scen_log_window_max over a[0..n), times in
 * ns in ascending order. */
uint64_t scen_log_window_max_of(const int64_t *a, size_t n, int64_t window_ns);

/* scen_log_burst_needed_of returns the smallest burst with which a gcra
 * bucket of rate_per_s admits every arrival of a[0..n) (ascending ns). */
double scen_log_burst_needed_of(const int64_t *a, size_t n, double rate_per_s);

/* scen_log_latency returns the pct-th percentile (0..100) of the
 * publish-to-200 times in ms of level (or of all when level < 0); 0 when
 * there are none. */
double scen_log_latency(scen_log *l, int level, double pct);

/* scen_log_conformance prints, for windows of 0.1 s, 1 s and 10 s, the
 * most arrivals seen and the bound rate x window + burst, for the broker's
 * bucket (rate_per_s, burst, in messages) and for the sink's
 * (sink_rate_per_s, sink_burst), to f. Returns how many windows exceeded
 * the broker's bound. */
int scen_log_conformance(const scen_log *l, FILE *f, double rate_per_s, double burst,
                              double sink_rate_per_s, double sink_burst);

/* scen_log_destroy frees *l and sets it to NULL; accepts NULL. */
void scen_log_destroy(scen_log **l);

#endif /* SLUICE_SCEN_LOG_H */
