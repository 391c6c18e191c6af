/*
 * cli_post.h - HTTP delivery for `sluice consume --post`: POST one body to
 * a URL and say what the answer means for the message.
 *
 * A cli_post is the target: the URL, the extra request headers and the
 * timeout. It is built whole by one thread before any worker starts, then
 * shared read-only. Each thread that sends gets its own libcurl handle, made on its
 * first send and kept for the thread's life, so its connection stays open
 * between requests (keep-alive). libcurl is initialised by cli_post_new and
 * cleaned up by cli_post_destroy: have one cli_post at a time.
 */
#ifndef SLUICE_CLI_POST_H
#define SLUICE_CLI_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CLI_POST_TIMEOUT_MS_DEFAULT 10000 /* well inside the default 30 s lease */
#define CLI_POST_TIMEOUT_MS_MAX     3600000  /* an hour */
#define CLI_POST_RETRY_AFTER_MS_MAX 86400000 /* a day: longer Retry-After values are cut */
#define CLI_POST_BACKOFF_MS_FIRST   500
#define CLI_POST_BACKOFF_MS_MAX     60000
#define CLI_POST_WHAT_BYTES         1024

/* What an answer means for the message. */
typedef enum cli_post_verdict {
    CLI_POST_DELIVERED, /* 2xx */
    CLI_POST_THROTTLED, /* 429 or 503: the service asks for a pause */
    CLI_POST_RETRY,     /* another 5xx, 1xx or 3xx, no answer, or the timeout */
    CLI_POST_REFUSED,   /* another 4xx: sending it again cannot help */
} cli_post_verdict;

typedef struct cli_post_result {
    cli_post_verdict verdict;
    long status;             /* the HTTP status; 0 when there was no answer */
    uint32_t retry_after_ms; /* THROTTLED: from Retry-After; 0 when absent or unreadable */
    char what[CLI_POST_WHAT_BYTES]; /* "HTTP 404 from URL", or "no answer from
                                       URL: " and why */
} cli_post_result;

typedef struct cli_post cli_post;

/* cli_post_header_check says whether line is a request header the way
 * --header takes it: "Name: value", a header name (letters, digits and
 * !#$%&'*+-.^_`|~), a colon, and a value without CR, LF or NUL. An empty
 * value ("Expect:") removes a header libcurl would send. */
bool cli_post_header_check(const char *line);

/* cli_post_new initialises libcurl and makes a target for url (http or
 * https) that sends the nheaders headers (each passing
 * cli_post_header_check; copied) with every request and allows timeout_ms
 * for a whole request (1..CLI_POST_TIMEOUT_MS_MAX). Bodies are sent as
 * application/octet-stream, and without "Expect: 100-continue", unless a
 * header says otherwise. Returns SL_OK with *out set; SL_EINVAL when url is
 * not an http(s) URL, a header is malformed or the timeout is out of range;
 * SL_ENOMEM; SL_EIO when libcurl cannot start. On error *out is NULL and
 * libcurl is cleaned up. */
int cli_post_new(const char *url, const char *const *headers, size_t nheaders, long timeout_ms,
                 cli_post **out);

/* cli_post_send POSTs body_len bytes of body to p's URL from the calling
 * thread, on that thread's handle, reads and drops the answer's body, and
 * fills *out. Any thread may call it; each uses its own handle. Returns
 * SL_OK with *out filled (a failed request is a verdict, not an error), or
 * SL_ENOMEM when no handle could be made. */
int cli_post_send(cli_post *p, const void *body, size_t body_len, cli_post_result *out);

/* cli_post_destroy frees *p, the calling thread's handle, and libcurl's
 * global state, and sets *p to NULL; accepts NULL and *p == NULL. Every
 * other thread that sent must have ended first: a thread's handle is freed
 * when the thread ends. */
void cli_post_destroy(cli_post **p);

/* cli_post_backoff_ms returns how long to wait before delivery attempt
 * attempt + 1 after attempt failed (attempt >= 1; 0 reads as 1):
 * CLI_POST_BACKOFF_MS_FIRST doubled per attempt, at most
 * CLI_POST_BACKOFF_MS_MAX. */
uint32_t cli_post_backoff_ms(unsigned attempt);

/* cli_post_retry_after_ms reads a Retry-After value, delta-seconds or an
 * HTTP date, as milliseconds from now_s (seconds since the epoch), at most
 * CLI_POST_RETRY_AFTER_MS_MAX. Returns 0 for a date already past, and for a
 * value it cannot read. */
uint32_t cli_post_retry_after_ms(const char *value, time_t now_s);

#endif /* SLUICE_CLI_POST_H */
