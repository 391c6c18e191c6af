/*
 * scen_http.h - a minimal HTTP/1.1 client over a loopback TCP socket,
 * for the bench's own requests to sluice-sink: the naive retry loop of the
 * ingest baseline, the in-process consumers, and the control paths.
 *
 * One scen_http is one keep-alive connection, used by one thread at a
 * time. It speaks just enough HTTP for sluice-sink: requests with a
 * Content-Length body, answers with a Content-Length body (no chunked
 * encoding), and the Retry-After and Connection headers.
 */
#ifndef SLUICE_SCEN_HTTP_H
#define SLUICE_SCEN_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define SCEN_HTTP_TIMEOUT_MS 5000 /* per send and per receive */
#define SCEN_HTTP_BODY_BYTES 512  /* of an answer's body kept; the rest is dropped */

typedef struct scen_http {
    int fd;         /* -1 when not connected */
    uint16_t port;  /* on 127.0.0.1 */
} scen_http;

/* One answer. */
typedef struct scen_http_reply {
    int status;                 /* the HTTP status */
    uint32_t retry_after_ms;    /* Retry-After in seconds x 1000; 0 when absent */
    char body[SCEN_HTTP_BODY_BYTES]; /* NUL-terminated, cut to fit */
} scen_http_reply;

/* scen_http_init makes h a client of 127.0.0.1:port; it connects on its
 * first request. */
void scen_http_init(scen_http *h, uint16_t port);

/* scen_http_request sends METHOD path with body_len bytes of body (body
 * may be NULL when body_len is 0) and reads the answer into *out. A request
 * on a kept-alive connection that the server closed is sent once more on a
 * new one. Returns 0, or -1 when there was no answer (connection refused or
 * reset, a malformed answer, or SCEN_HTTP_TIMEOUT_MS without progress);
 * the connection is then closed. */
int scen_http_request(scen_http *h, const char *method, const char *path,
                           const void *body, size_t body_len, scen_http_reply *out);

/* scen_http_close closes h's connection, if any; h can be used again. */
void scen_http_close(scen_http *h);

#endif /* SLUICE_SCEN_HTTP_H */
