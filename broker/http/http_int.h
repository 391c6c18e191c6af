/*
 * http_int.h - the HTTP server's private header: the server object and what
 * its files share (http.c routes and answers; conns.c keeps the connection
 * limits; live.c runs the ticker, the history and the event streams;
 * session.c the logins; api.c and route.c the JSON API; metrics.c and
 * overview.c format a snapshot; assets.c holds the console's files).
 * Nothing outside broker/http/ includes it.
 */
#ifndef SLUICE_HTTP_INT_H
#define SLUICE_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "http.h"
#include "proto.h"
#include "proto_json.h"
#include "snap.h"

/* ---- connections (conns.c) ---- */

typedef enum conn_phase { CONN_WAITING = 0, CONN_RECEIVING, CONN_BUSY } conn_phase;

typedef struct conn_rec {
    int fd;               /* -1: a free record */
    uint8_t addr[16];     /* the peer's address (not its port) */
    uint8_t alen;         /* 4 or 16; 0: unknown */
    conn_phase phase;
    int killed;           /* shut down by a limit or the deadline; no longer counted */
    uint64_t since_ns;    /* WAITING (or RECEIVING) since; BUSY since */
} conn_rec;

typedef struct conns {
    pthread_mutex_t lock;
    conn_rec *v;
    unsigned cap, live;
    unsigned max_total, max_per_addr;
    uint64_t header_timeout_ns;
    uint64_t evicted, refused, timed_out;
} conns;

typedef struct conns_stats {
    uint64_t live, evicted, refused, timed_out;
} conns_stats;

/* conns_capacity returns how many records a table with these limits keeps
 * (libmicrohttpd's own connection limit is set to it). */
unsigned conns_capacity(unsigned max_total, unsigned max_per_addr);

/* conns_init prepares t. Returns SL_OK or SL_ENOMEM. */
int conns_init(conns *t, unsigned max_total, unsigned max_per_addr, uint64_t header_timeout_ns);
void conns_fini(conns *t);

/* conns_open records a new connection (descriptor fd, peer sa) and applies
 * the limits: it may shut down another connection, or this one. Returns the
 * record, kept in the connection's socket context until conns_close; NULL
 * only when the table is full (the connection was shut down). */
conn_rec *conns_open(conns *t, int fd, const struct sockaddr *sa, uint64_t now_ns);

/* conns_phase moves c (may be NULL) to phase p at now_ns. */
void conns_phase(conns *t, conn_rec *c, conn_phase p, uint64_t now_ns);

/* conns_close forgets c (may be NULL): its connection is closing. */
void conns_close(conns *t, conn_rec *c);

/* conns_sweep shuts down the connections past the header deadline. */
void conns_sweep(conns *t, uint64_t now_ns);

/* conns_counts copies the table's counters. */
void conns_counts(conns *t, conns_stats *out);

/* ---- the server ---- */

#define HTTP_BODIES_MAX (256u << 20) /* request bodies held at once, all requests together */

typedef struct session session;
typedef struct hreq hreq;

struct http {
    http_cfg cfg;
    char addr[64];                /* as given: ADDR:PORT */
    char host[64];                /* ADDR */
    char base_url[96];            /* http(s)://ADDR:PORT */
    char cert_path[4096], key_path[4096];
    struct MHD_Daemon *d;
    unsigned port;
    int tls;
    char *cert_pem, *key_pem;     /* read at open, kept while the daemon runs */
    conns conns;

    pthread_mutex_t snap_lock;    /* the snapshot the loop published */
    snap shared;
    uint64_t shared_gen;          /* bumped by each http_publish */
    snap staging;                 /* the loop's */

    struct live *live;            /* the ticker, the history, the event streams (live.c) */
    struct sessions *sessions;    /* logins and sessions (session.c) */

    atomic_size_t body_bytes;     /* request bodies held, all together (at most HTTP_BODIES_MAX) */
    pthread_mutex_t call_lock;    /* requests waiting for the loop: their state (hreq's call_*) */
    hreq *waiting;                /* ... linked through next_waiting, not yet answered */
    unsigned calls_open;          /* requests whose call is out or whose answer is not yet used */
    int stopping;                 /* under call_lock: no new call; waiting ones answered SL_ESHUTDOWN */
};

/* http_now_ns reads the monotonic clock (the server's own: the loop's
 * clock is the loop's). */
uint64_t http_now_ns(void);

/* http_snap_copy copies the last published snapshot into out; returns its
 * generation (0: none published yet). */
uint64_t http_snap_copy(http *h, snap *out);

/* ---- one request ---- */

typedef enum hmethod { HM_OTHER = 0, HM_GET, HM_HEAD, HM_POST, HM_PUT, HM_DELETE } hmethod;

/* What a request that waits for the loop does with the answer, on
 * libmicrohttpd's thread once resumed: rc is the bridge's (SL_OK: reply
 * holds the loop's answer). */
typedef enum MHD_Result (*hreq_reply_fn)(hreq *r, int rc, const void *reply, size_t len);

struct hreq {
    http *h;
    struct MHD_Connection *c;
    conn_rec *conn;
    hmethod method;
    char path[512];               /* the URL's path, not unescaped */
    int path_too_long;
    char *body;                   /* the request body (POST, PUT, DELETE) */
    size_t body_len, body_cap, body_max;
    int body_too_big;
    int handled;                  /* a response is queued, or a call is out */
    /* the caller, from its session (or the open console without --auth) */
    int authed;                   /* a session (or no --auth) */
    char principal[PROTO_MAX_NAME + 1];
    char key[48];                 /* its CURVE key; "" without --auth */
    proto_role role;
    char csrf[48];
    /* a call to the loop (under h->call_lock) */
    hreq_reply_fn on_reply;
    int call_out, call_done, call_rc, suspended;
    char *reply;
    size_t reply_len;
    hreq *next_waiting;
    char set_cookie[200];         /* a Set-Cookie for the response (session.c) */
    unsigned retry_after;         /* a Retry-After for the response, in seconds; 0: none */
};

/* ---- answers (reply.c) ----
 * Each adds the security headers, queues the response and returns
 * libmicrohttpd's result. reply_static's body must outlive the response. */
enum MHD_Result reply_static(hreq *r, unsigned status, const char *ctype, const void *body, size_t len);
enum MHD_Result reply_free(hreq *r, unsigned status, const char *ctype, char *body, size_t len);
enum MHD_Result reply_json(hreq *r, unsigned status, char *json, size_t len);

/* reply_queue adds the security headers (and r's cookie and Retry-After)
 * to rs, queues it with status and destroys the caller's reference. */
enum MHD_Result reply_queue(hreq *r, unsigned status, const char *ctype, struct MHD_Response *rs);

/* reply_fail answers the same error object with a status of the caller's
 * choosing (403 for a cross-site request, 415, 405). */
enum MHD_Result reply_fail(hreq *r, unsigned status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* http_level_names copies the level names of the last snapshot; returns
 * how many. */
unsigned http_level_names(http *h, char names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1]);

/* reply_error answers {"error": {"code": "SL_...", "message": text}} with the
 * HTTP status that fits code (reply_status_of). */
enum MHD_Result reply_error(hreq *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* reply_status_of maps an error code to an HTTP status: a client's mistake
 * is a 4xx, the broker's state a 503, only the broker's own failure a 500. */
unsigned reply_status_of(int code);

/* ---- calls to the loop (call.c) ---- */

/* call_loop sends m (its seq set by the bridge) to the loop as r's caller
 * (r->key) and suspends r until the answer; on_reply builds the response
 * then, on libmicrohttpd's thread. Returns what the handler returns. */
enum MHD_Result call_loop(hreq *r, proto_msg *m, hreq_reply_fn on_reply);

/* call_resumed is the handler of a request called again after call_loop:
 * it answers with on_reply once the answer is in, or waits on. */
enum MHD_Result call_resumed(hreq *r);

/* call_ended notes that r's request ended (its connection may have closed
 * with the call's answer unused). */
void call_ended(hreq *r);

/* call_stop_all refuses new calls and ends those out with SL_ESHUTDOWN. */
void call_stop_all(http *h);

/* call_open_count returns how many requests still wait for, or have not
 * yet used, their call's answer. */
unsigned call_open_count(http *h);

/* http_header returns request header name's value, or NULL. */
const char *http_header(hreq *r, const char *name);

/* ---- metrics.c ---- */

/* metrics_render writes s in the Prometheus text format (0.0.4). */
void metrics_render(FILE *f, const snap *s);

#endif /* SLUICE_HTTP_INT_H */
