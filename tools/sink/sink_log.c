/*
 * sink_log.c - write sluice-sink's request log.
 *
 * One line per limited request (a POST to the service), in the order they
 * were decided: "<CLOCK_MONOTONIC ns> <status> <body>", or, when the sink
 * limits per key, "<ns> <status> <key> <body>" with the key escaped so that
 * it holds no space ("-" for a request without one). The body is cut at
 * SINK_LOG_BODY_BYTES bytes, with "\n" for a newline, "\\" for a backslash
 * and "\xNN" (lower-case hex) for any other byte outside 0x20..0x7e. Change
 * this format, update tests/e2e/test_sink.c, scen_log.c (which reads it) and the
 * --help text.
 *
 * Writes go to a 64 KB stdio buffer, flushed by the main loop's tick (at
 * least every 100 ms) and at close; the caller holds its lock around every
 * call, so lines never interleave. A failed write is reported once and the
 * log stops; the sink keeps serving. Cost: one formatted line (at most
 * ~1.6 KB) per request.
 */
#include "sink_log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sink_keys.h"
#include "sluice_errors.h"

#define LOG_BUFFER_BYTES (1 << 16)
#define LINE_BYTES (48 + SINK_KEYS_TEXT_BYTES + 4 * SINK_LOG_BODY_BYTES)

int sink_log_open(sink_log *l, const char *path)
{
    memset(l, 0, sizeof *l);
    if (!path)
        return SL_OK;
    l->f = fopen(path, "w");
    l->buf = malloc(LOG_BUFFER_BYTES);
    if (!l->f || !l->buf) {
        fprintf(stderr, "sluice-sink: cannot open the log %s: %s\n", path, strerror(errno));
        if (l->f)
            fclose(l->f);
        free(l->buf);
        memset(l, 0, sizeof *l);
        return SL_EIO;
    }
    setvbuf(l->f, l->buf, _IOFBF, LOG_BUFFER_BYTES);
    return SL_OK;
}

static size_t escape(const unsigned char *in, size_t in_len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (size_t i = 0; i < in_len; i++) {
        unsigned char ch = in[i];
        if (ch == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else if (ch == '\\') {
            out[n++] = '\\';
            out[n++] = '\\';
        } else if (ch >= 0x20 && ch <= 0x7e) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    return n;
}

static void failed(sink_log *l, const char *what)
{
    fprintf(stderr, "sluice-sink: cannot %s the log: %s; logging stops\n", what, strerror(errno));
    l->failed = 1;
}

void sink_log_write(sink_log *l, uint64_t now_ns, unsigned status, int keyed, const char *key, size_t key_len,
                    const unsigned char *body, size_t body_len)
{
    char line[LINE_BYTES];
    if (!l->f || l->failed)
        return;
    size_t n = (size_t)snprintf(line, sizeof line, "%" PRIu64 " %u ", now_ns, status);
    if (keyed) {
        n += sink_keys_escape(key, key_len, line + n);
        line[n++] = ' ';
    }
    n += escape(body, body_len < SINK_LOG_BODY_BYTES ? body_len : SINK_LOG_BODY_BYTES, line + n);
    line[n++] = '\n';
    if (fwrite(line, 1, n, l->f) != n)
        failed(l, "write");
}

void sink_log_flush(sink_log *l)
{
    if (l->f && !l->failed && fflush(l->f) != 0)
        failed(l, "write");
}

int sink_log_close(sink_log *l)
{
    sink_log_flush(l);
    int rc = l->failed ? SL_EIO : SL_OK;
    if (l->f && fclose(l->f) != 0 && rc == SL_OK) {
        fprintf(stderr, "sluice-sink: cannot close the log: %s\n", strerror(errno));
        rc = SL_EIO;
    }
    free(l->buf);
    memset(l, 0, sizeof *l);
    return rc;
}
