/*
 * httpc.h - the one HTTP client of the tools (libcurl): POST one body to a
 * URL and say what the answer means for the message. Used by `sluice
 * consume --post` and by the load scenarios of sluice-bench (their
 * in-process consumers and the naive retry loop of the ingest baseline).
 *
 * An httpc is the target: the URL, the extra request headers and the
 * timeout. It is built whole by one thread before any sender starts, then
 * shared read-only. Each thread that sends gets its own libcurl handle, made
 * on its first send and kept for the thread's life, so its connection stays
 * open between requests (keep-alive). libcurl is initialised by httpc_new
 * and cleaned up by httpc_destroy: have one httpc at a time.
 */
#ifndef SLUICE_HTTPC_H
#define SLUICE_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HTTPC_TIMEOUT_MS_DEFAULT 10000 /* well inside the default 30 s lease */
#define HTTPC_TIMEOUT_MS_MAX     3600000  /* an hour */
#define HTTPC_RETRY_AFTER_MS_MAX 86400000 /* a day: longer Retry-After values are cut */
#define HTTPC_BACKOFF_MS_FIRST   500
#define HTTPC_BACKOFF_MS_MAX     60000
#define HTTPC_WHAT_BYTES         1024

/* What an answer means for the message. */
typedef enum httpc_verdict {
    HTTPC_DELIVERED, /* 2xx */
    HTTPC_THROTTLED, /* 429 or 503: the service asks for a pause */
    HTTPC_RETRY,     /* another 5xx, 1xx or 3xx, no answer, or the timeout */
    HTTPC_REFUSED,   /* another 4xx: sending it again cannot help */
} httpc_verdict;

typedef struct httpc_result {
    httpc_verdict verdict;
    long status;             /* the HTTP status; 0 when there was no answer */
    uint32_t retry_after_ms; /* THROTTLED: from Retry-After; 0 when absent or unreadable */
    bool tag_limited;        /* THROTTLED: the answer carries the header httpc_tag_limit_set
                                names: the service limited the tag, not itself */
    char what[HTTPC_WHAT_BYTES]; /* "HTTP 404 from URL", or "no answer from
                                       URL: " and why */
} httpc_result;

typedef struct httpc httpc;

/* httpc_header_check says whether line is a request header the way
 * --header takes it: "Name: value", a header name (letters, digits and
 * !#$%&'*+-.^_`|~), a colon, and a value without CR, LF or NUL. An empty
 * value ("Expect:") removes a header libcurl would send. */
bool httpc_header_check(const char *line);

/* httpc_new initialises libcurl and makes a target for url (http or
 * https) that sends the nheaders headers (each passing
 * httpc_header_check; copied) with every request and allows timeout_ms
 * for a whole request (1..HTTPC_TIMEOUT_MS_MAX). Bodies are sent as
 * application/octet-stream, and without "Expect: 100-continue", unless a
 * header says otherwise. Returns SL_OK with *out set; SL_EINVAL when url is
 * not an http(s) URL, a header is malformed or the timeout is out of range;
 * SL_ENOMEM; SL_EIO when libcurl cannot start. On error *out is NULL and
 * libcurl is cleaned up. */
int httpc_new(const char *url, const char *const *headers, size_t nheaders, long timeout_ms,
                 httpc **out);

/* httpc_send POSTs body_len bytes of body to p's URL from the calling
 * thread, on that thread's handle, reads and drops the answer's body, and
 * fills *out. Any thread may call it; each uses its own handle. Returns
 * SL_OK with *out filled (a failed request is a verdict, not an error), or
 * SL_ENOMEM when no handle could be made. */
int httpc_send(httpc *p, const void *body, size_t body_len, httpc_result *out);

/* httpc_send_tagged is httpc_send with the header "X-Sluice-Tag: TAG"
 * added to this one request when tag is neither NULL nor empty: the tag's
 * bytes as they are, except bytes outside 0x21..0x7e and '%', which are
 * percent-encoded (%XX, upper-case hex), cut at HTTPC_TAG_BYTES. Same
 * threads and returns as httpc_send. */
#define HTTPC_TAG_HEADER "X-Sluice-Tag"
#define HTTPC_TAG_BYTES 255
#define HTTPC_TAG_LINE_BYTES (sizeof HTTPC_TAG_HEADER + 2 + 3 * HTTPC_TAG_BYTES + 1)
int httpc_send_tagged(httpc *p, const char *tag, const void *body, size_t body_len, httpc_result *out);

/* httpc_value_encode writes s (at most max bytes of it) into out (3 * max
 * + 1 bytes) as a header value: bytes outside 0x21..0x7e and '%'
 * percent-encoded (%XX, upper-case hex), as the tag is; returns the length
 * written, without the NUL. */
size_t httpc_value_encode(const char *s, size_t max, char *out);

/* httpc_send_with is httpc_send with the nlines header lines ("Name:
 * value", each passing httpc_header_check: the caller's duty) added to this
 * one request, in their order, before the target's: a line whose name is
 * one of the headers httpc_new was given is left out (the operator's
 * header wins), and a default header (Content-Type) a line names is left
 * out instead. Same threads and returns as httpc_send (SL_ENOMEM also for
 * the request's list). */
int httpc_send_with(httpc *p, const char *const *lines, size_t nlines, const void *body, size_t body_len,
                    httpc_result *out);

/* httpc_warm opens (or checks) the calling thread's connection before any
 * message is at stake: a HEAD request to p's URL on that thread's handle,
 * whatever its answer (a 405 still leaves the connection open for the
 * POSTs). Returns SL_OK with *status the HTTP status, SL_EIO when no answer
 * came (*status 0), or SL_ENOMEM. */
int httpc_warm(httpc *p, long *status);

/* httpc_tag_limit_set tells p which answers mark a per-tag limit: a 429
 * or 503 that carries the header named by spec, "NAME" (any value) or
 * "NAME=VALUE" (this value, compared without case, spaces around it
 * ignored), is THROTTLED with tag_limited set; say, "X-Limit-Scope=key"
 * for sluice-sink's per-key limit. Call it before any thread sends.
 * Returns SL_OK, or SL_EINVAL when NAME is not a header name (letters,
 * digits and !#$%&'*+-.^_`|~; at most HTTPC_TAG_LIMIT_NAME_BYTES) or
 * VALUE is empty, longer than HTTPC_TAG_LIMIT_VALUE_BYTES or holds a
 * control character (p unchanged). */
#define HTTPC_TAG_LIMIT_NAME_BYTES 64
#define HTTPC_TAG_LIMIT_VALUE_BYTES 128
int httpc_tag_limit_set(httpc *p, const char *spec);

/* httpc_destroy frees *p, the calling thread's handle, and libcurl's
 * global state, and sets *p to NULL; accepts NULL and *p == NULL. Every
 * other thread that sent must have ended first: a thread's handle is freed
 * when the thread ends. */
void httpc_destroy(httpc **p);

/* httpc_backoff_ms returns how long to wait before delivery attempt
 * attempt + 1 after attempt failed (attempt >= 1; 0 reads as 1):
 * HTTPC_BACKOFF_MS_FIRST doubled per attempt, at most
 * HTTPC_BACKOFF_MS_MAX. */
uint32_t httpc_backoff_ms(unsigned attempt);

/* httpc_retry_after_ms reads a Retry-After value, delta-seconds or an
 * HTTP date, as milliseconds from now_s (seconds since the epoch), at most
 * HTTPC_RETRY_AFTER_MS_MAX. Returns 0 for a date already past, and for a
 * value it cannot read. */
uint32_t httpc_retry_after_ms(const char *value, time_t now_s);

#endif /* SLUICE_HTTPC_H */
