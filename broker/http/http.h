/*
 * http.h - the broker's one HTTP server: the web console at /, the JSON API
 * under /api/v1/, and Prometheus metrics at /metrics (libmicrohttpd, threads
 * of its own).
 *
 * The server never touches the broker. It reads what the loop publishes (a
 * snapshot, snap.h, every HTTP_PUBLISH_NS) and sends everything else to the
 * loop as protocol messages over the bridge (net/bridge.h), with the
 * session's principal, so that the loop's one auth check applies the same
 * roles as on ZeroMQ. The loop reaches into it only through the functions
 * below, each holding the server's lock for a copy.
 */
#ifndef SLUICE_HTTP_H
#define SLUICE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "snap.h"

#define HTTP_PUBLISH_NS 1000000000ULL /* how often the loop publishes a snapshot (cron): once a second */
#define HTTP_TOKEN_CHARS 43          /* a login token: 32 random bytes in base64url */
#define HTTP_MAX_TTL_MS (7ULL * 24 * 3600 * 1000) /* the longest a login link and its session last */

typedef struct http http;
struct bridge;

typedef struct http_cfg {
    const char *addr_port;        /* --http ADDR:PORT (IPv4; port 0 picks one) */
    const char *cert_file;        /* HTTPS: the certificate chain (PEM), or NULL: plain HTTP */
    const char *key_file;         /* ... and its key */
    unsigned max_conns;           /* connections at once */
    unsigned max_conns_per_addr;  /* ... from one address */
    uint32_t header_timeout_ms;   /* a whole request within this long of the connection going idle */
    uint32_t idle_timeout_ms;     /* nothing moving for this long: closed */
    uint32_t session_idle_ms;     /* a session unused this long ends */
    int auth;                     /* --auth: the API needs a session */
    uint32_t max_body;            /* the broker's --max-body: the largest body a publish may carry */
    struct bridge *bridge;        /* the loop's door (net/bridge.h); NULL: the API answers reads only */
} http_cfg;

/* http_open serves cfg->addr_port from threads of its own. An empty or NULL
 * address means no server: *out is NULL and SL_OK. Returns SL_OK, SL_EINVAL
 * for an address it cannot read or a certificate or key it cannot read,
 * SL_EIO when it cannot listen, SL_ENOMEM. Logs the address it serves
 * ("serving http://ADDR:PORT/metrics" among its lines). */
int http_open(const http_cfg *cfg, http **out);

/* http_port returns the TCP port h listens on (0 when h is NULL). */
unsigned http_port(const http *h);

/* http_staging returns the snapshot the loop fills before http_publish
 * (NULL when h is NULL). The loop's thread only. */
snap *http_staging(http *h);

/* http_publish makes the staging snapshot the one the server reads and
 * wakes the server's ticker. The loop's thread only (cron, every
 * HTTP_PUBLISH_NS); it holds h's locks for one copy and a signal and never
 * waits for a request, which works on a copy. Accepts h NULL. */
void http_publish(http *h);

/* http_login_mint makes a one-time login token for principal (its name,
 * its CURVE key or "" without auth, its role), valid until now_ns + ttl_ms
 * (at most ten minutes for the link itself; the session it opens lasts
 * ttl_ms from the login, at most HTTP_MAX_TTL_MS). Writes the token
 * (HTTP_TOKEN_CHARS + 1 bytes) and the server's base URL
 * ("http://127.0.0.1:9470") into url (url_len bytes). The loop's thread;
 * holds h's session lock briefly. Returns SL_OK, SL_ESTATE when h is NULL
 * (no --http), SL_EFULL when too many tokens wait unused, SL_EIO when the
 * system has no randomness to give. */
int http_login_mint(http *h, const char *principal, const char *key, proto_role role, uint64_t ttl_ms,
                    uint64_t now_ns, char *token, char *url, size_t url_len);

/* http_role_fn tells the role of the principal whose key is key now, or -1
 * when the key is no longer known. */
typedef int (*http_role_fn)(void *ctx, const char *key);

/* http_sessions_refresh applies a reloaded auth table to the open sessions
 * and unused login tokens: those whose key is gone end at once, the others
 * take their principal's role now. The loop's thread (after SIGHUP);
 * O(sessions) lookups. Accepts h NULL. */
void http_sessions_refresh(http *h, http_role_fn role_of, void *ctx);

/* http_close stops the server: requests waiting for the loop are answered
 * SL_ESHUTDOWN, live streams end, the threads stop; frees h and NULLs *hp.
 * Accepts NULL. Call it before the bridge closes. */
void http_close(http **hp);

#endif /* SLUICE_HTTP_H */
