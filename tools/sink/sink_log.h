/*
 * sink_log.h - the request log of sluice-sink: one line per limited
 * request, buffered, flushed by the main loop's tick and at close.
 */
#ifndef SLUICE_SINK_LOG_H
#define SLUICE_SINK_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SINK_LOG_BODY_BYTES 256 /* body bytes written per line */

typedef struct sink_log {
    FILE *f;       /* NULL: no log */
    char *buf;
    int failed;    /* a write failed: logging has stopped (reported once) */
} sink_log;

/* sink_log_open truncates and opens path (NULL: no log; l is then inert).
 * Returns SL_OK, or SL_EIO (reported) with l inert. */
int sink_log_open(sink_log *l, const char *path);

/* sink_log_write writes one line: "<now_ns> <status> [<key>] <body>", the
 * key only when keyed (escaped by sink_keys_escape: "-" for none), the body
 * cut at SINK_LOG_BODY_BYTES and escaped ("\n", "\\", "\xNN" for any byte
 * outside 0x20..0x7e). The first failed write is reported; then the log
 * stops. Callers serialise calls. */
void sink_log_write(sink_log *l, uint64_t now_ns, unsigned status, int keyed, const char *key, size_t key_len,
                    const unsigned char *body, size_t body_len);

/* sink_log_flush flushes the buffer. */
void sink_log_flush(sink_log *l);

/* sink_log_close flushes and closes the log; safe on an inert one. Returns
 * SL_OK, or SL_EIO when any write failed (already reported). */
int sink_log_close(sink_log *l);

#endif /* SLUICE_SINK_LOG_H */
