/*
 * sluice.h - the Sluice client library.
 *
 * Sluice is a persistent priority message broker. This library speaks its wire
 * protocol (proto/PROTOCOL.md) over ZeroMQ, so an application can publish
 * messages, consume them with credit, acknowledge them, and read statistics.
 *
 * BUILDING
 *   cc app.c $(pkg-config --cflags --libs sluice)     (static libsluice.a)
 *
 * THREADING
 *   An sl_client is not thread-safe: use each one from one thread at a time,
 *   like a ZeroMQ socket. Different clients are independent and may be used
 *   from different threads at once. Each has its own ZeroMQ socket; the
 *   clients of a process share one ZeroMQ context (one I/O thread), made
 *   with the first client and ended when the last one is closed: that
 *   context is the library's only global state. After fork(), a child must
 *   not use its parent's clients; it may open clients of its own.
 *
 * ERRORS
 *   Every fallible function returns an sl_err code (sluice_errors.h): SL_OK
 *   (0) on success. Codes that come from the broker carry the same numbers on
 *   the wire. sl_strerror() gives a message and sl_errname() the symbol. When
 *   a call fails, the broker's explanation (if any) is available from
 *   sl_last_error() until the next call on that client.
 *
 * DELIVERY GUARANTEES
 *   A publish is confirmed only after the broker has durably committed it. A
 *   delivery is at least once: a message whose consumer dies, whose lease
 *   expires, or which is negatively acknowledged is delivered again, up to the
 *   broker's attempt limit, after which it moves to its level's dead letters.
 *
 * LEVELS
 *   Priority levels are numbered 0 (highest) to N-1 and have names (by
 *   default high, normal, low). sl_level_parse accepts either form.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stddef.h>
#include <stdint.h>

#include "sluice_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_DEFAULT_ENDPOINT "tcp://127.0.0.1:7470"

/* The wire protocol version this library speaks (proto/PROTOCOL.md). A broker
 * speaking another version refuses HELLO with SL_EVERSION. */
#define SL_WIRE_VERSION 2
#define SL_MAX_LEVELS 16
#define SL_LEVEL_DEFAULT (-1) /* sl_put.level: let the broker choose */

/* An opaque connection to one broker. */
typedef struct sl_client sl_client;

/* Connection options. Zero fields take the defaults shown. */
typedef struct sl_options {
    int timeout_ms;   /* how long a synchronous call waits for its reply; 5000 */
    int heartbeat_ms; /* transport heartbeat interval; 1000. A peer silent for
                         three intervals is treated as gone. */
    /* CURVE (authenticated encryption), for a broker started with --auth:
     * all three NULL for plaintext, or all three set, each a key of 40 Z85
     * characters (NUL-terminated; copied): the broker's public key and this
     * client's key pair, whose public half the broker's auth file lists.
     * sl_key_read reads them from the files `sluice keygen` writes. A broker
     * that does not know the key refuses the handshake, and so does a broker
     * with CURVE when the client has no keys (and the other way round): as
     * long as no handshake has succeeded on this client, calls that wait for
     * the broker then fail SL_EPERM at once (libzmq keeps retrying, so one
     * succeeds once the broker's auth file lists the key). */
    const char *server_key;
    const char *public_key;
    const char *secret_key;
} sl_options;

/* sl_connect creates a client for the broker at endpoint (a ZeroMQ endpoint
 * such as "tcp://127.0.0.1:7470" or "ipc:///run/sluice.sock"; NULL means
 * SL_DEFAULT_ENDPOINT). opts may be NULL. Endpoints joined by '|'
 * ("tcp://a:7470|tcp://b:7470", at most 8) are one broker at alternative
 * addresses, the two nodes of a high-availability group: the client follows
 * the primary (a standby's SL_EREDIRECT, or a lost or refused connection,
 * moves it to the primary named, or to the next address, within about
 * 100 ms) and sends again every publish not yet confirmed and the request
 * being waited for; a publish with an idempotency key is stored once, one
 * without at least once. An admin command a second run would change more
 * (msg.move, a switchover: see the client's README) is not sent again: its
 * call fails SL_ECONNECT, saying it may have run. Such a client never fails
 * SL_ECONNECT for a refused address: its calls wait up to timeout_ms while
 * it looks for the primary. Connecting is asynchronous in
 * ZeroMQ, so nothing is known here: the first call that waits for a reply
 * says. When nothing listens at the endpoint (the connection is refused, as
 * tcp and ipc tell at once) and no connection has ever succeeded, that call
 * fails SL_ECONNECT about 0.3 s after the first refusal (ZeroMQ retries
 * meanwhile, so a broker that is just starting is still reached), with
 * sl_last_error saying "connection refused"; a broker that cannot be reached
 * otherwise (a host that drops packets, a broker that never answers) shows
 * as SL_ETIMEDOUT once timeout_ms has passed. Once connected, a lost
 * connection is retried by ZeroMQ and calls wait up to timeout_ms.
 * An endpoint written stream+tcp://HOST:PORT or stream+ipc:///PATH is a
 * broker's stream endpoint (sluiced --stream-listen): the same API over a
 * plain socket that the calling thread writes and reads, with no ZeroMQ I/O
 * thread at either end (a waiting publish returns sooner). It takes no CURVE
 * keys and no alternatives; it connects at the first call that sends, and
 * a refused connection fails that call at once with SL_ECONNECT; a lost
 * connection ends what waited on it with SL_ECONNECT, the next send connects
 * anew, and a subscribed client connects again and subscribes anew by itself.
 * Returns SL_OK and sets *out, SL_EINVAL (bad endpoint, or keys that are
 * not all three valid, or CURVE asked of a libzmq without it, or keys or
 * alternatives with a stream endpoint), SL_ENOMEM.
 * With auth on, a command the client's role may not send fails SL_EPERM. */
int sl_connect(const char *endpoint, const sl_options *opts, sl_client **out);

/* sl_keygen makes a new CURVE key pair: pub and sec (SL_KEY_BYTES each)
 * receive the public and secret keys in Z85, NUL-terminated. Returns SL_OK,
 * or SL_EINVAL when the ZeroMQ library lacks CURVE. */
#define SL_KEY_BYTES 41
int sl_keygen(char *pub, char *sec);

/* sl_key_read reads a key file as `sluice keygen` writes it ("public = Z85"
 * and, in a .key file, "secret = Z85"; "#" comments) into pub and sec
 * (SL_KEY_BYTES each, may be NULL); a key the file lacks reads as "".
 * Returns SL_OK, SL_ENOTFOUND (cannot be read), SL_EINVAL (not a key file). */
int sl_key_read(const char *path, char *pub, char *sec);

/* sl_close closes the client and sets *c to NULL; accepts NULL or *c == NULL.
 * A consumer says BYE first: the broker returns its unacknowledged deliveries
 * to the head of their levels at once, without charging an attempt. (A client
 * that dies without closing is noticed by heartbeats instead, and those
 * returns are charged.) Unconfirmed publishes may or may not have been
 * committed: their fate is unknown to this client. Settlements already sent
 * reach the broker before the BYE; their answers are not waited for (call
 * sl_flush first for that). Frames not yet sent are flushed for up to one
 * second to a broker that is connected, and dropped at once when the
 * connection is gone, so closing never waits for a broker that has gone
 * away. */
void sl_close(sl_client **c);

/* sl_strerror returns a static message for any code. */
const char *sl_strerror(int err);

/* sl_errname returns the code's symbol, such as "SL_ESTALE". */
const char *sl_errname(int err);

/* sl_last_error returns the broker's text for the last failed call on c, or
 * the generic message for its code. Valid until the next call on c. */
const char *sl_last_error(const sl_client *c);

/* ---- levels ---- */

/* sl_levels returns the broker's level count and names, asking the broker
 * once (HELLO) and caching the answer. names[i] is NUL-terminated and lives as
 * long as c. Returns SL_OK, SL_ETIMEDOUT, SL_EVERSION, SL_ECONNECT. */
int sl_levels(sl_client *c, unsigned *count, const char *const **names);

/* sl_level_parse turns "high", "2", ... into a level number, checking it
 * against the broker's levels. Returns SL_OK, SL_ENOLEVEL, or an error of
 * sl_levels. */
int sl_level_parse(sl_client *c, const char *text, unsigned *level);

/* ---- publishing ---- */

/* One message to publish. body may hold any bytes. */
typedef struct sl_put {
    const void *body;
    size_t body_len;
    int level;       /* 0..N-1, or SL_LEVEL_DEFAULT */
    const char *tag; /* NUL-terminated, up to 255 bytes; NULL for none */
    uint32_t cost;   /* units charged to every rate limit it passes
                        (request units, rows, ...); 0 means 1 */
    const char *key; /* idempotency key, 1..255 bytes, NUL-terminated; NULL for
                        none. A publish repeating a key seen within the broker's
                        window (default 5 minutes) stores nothing and is
                        confirmed with the first message's id. */
    uint64_t delay_ms; /* deliver no sooner than this from now; 0: at once */
    uint64_t ttl_ms;   /* time to live: a message not delivered within this
                          moves to its level's dead letters (checked about once
                          a second, wherever it waits); 0: forever */
} sl_put;

/* ---- headers ----
 *
 * A message may carry up to SL_MAX_HEADERS headers, name/value pairs kept
 * in the order given and returned byte for byte on every delivery, by
 * sl_explain_ex and by sl_dead_peek_ex. The rules (checked by the library
 * before sending, and by the broker):
 *   - a name is 1..64 token characters (letters, digits and
 *     !#$%&'*+-.^_`|~), compared case-insensitively, each name once;
 *   - a value is 0..1024 bytes of UTF-8 text with no control character but
 *     tab, and no space or tab at its start or end;
 *   - names and values together are at most 8192 bytes;
 *   - hop-by-hop names (Connection, Keep-Alive, TE, Trailer,
 *     Transfer-Encoding, Upgrade, Proxy-*) and the names a consumer's POST
 *     sets itself (Host, Content-Length, Expect, Idempotency-Key, X-Sluice-*)
 *     are refused.
 * A break of a size rule is SL_ETOOBIG, of another rule SL_EINVAL; either
 * way sl_last_error names the rule and the header. W3C trace context
 * travels as the headers "traceparent" and "tracestate".
 */
#define SL_MAX_HEADERS 32
#define SL_MAX_HEADER_NAME 64
#define SL_MAX_HEADER_VALUE 1024
#define SL_MAX_HEADER_BYTES 8192

/* One header: name and value NUL-terminated. */
typedef struct sl_header {
    const char *name;
    const char *value;
} sl_header;

/* sl_send publishes one message and waits until the broker confirms that it
 * is durably stored; *id (may be NULL) receives its id. Confirmations of
 * earlier sl_send_async calls that arrive meanwhile are kept for
 * sl_send_wait. Returns SL_OK; SL_EINVAL (bad argument), SL_ETOOBIG (body or
 * tag too large), SL_ENOLEVEL, SL_ENOSPC, SL_EFULL (retry later), SL_EIO (the
 * broker failed to commit: not stored), SL_ESHUTDOWN, SL_ETIMEDOUT (outcome
 * unknown: it may have been stored). */
int sl_send(sl_client *c, const sl_put *m, uint64_t *id);

/* sl_send_async sends one message without waiting, so that many publishes
 * can be outstanding at once; *ticket (may be NULL) receives a number that
 * its confirmation will carry. Tickets increase by one per call. Returns
 * SL_OK or a local error (SL_EINVAL, SL_ETOOBIG, SL_ENOMEM). */
int sl_send_async(sl_client *c, const sl_put *m, uint64_t *ticket);

/* sl_send_ex is sl_send with the message's headers: headers[0..nheaders)
 * (headers may be NULL when nheaders is 0), borrowed for the call. Returns
 * sl_send's codes; a header that breaks a rule (see "headers" above) is
 * SL_EINVAL or SL_ETOOBIG before anything is sent. */
int sl_send_ex(sl_client *c, const sl_put *m, const sl_header *headers, size_t nheaders, uint64_t *id);

/* sl_send_async_ex is sl_send_async with the message's headers, as
 * sl_send_ex takes them (copied before it returns). */
int sl_send_async_ex(sl_client *c, const sl_put *m, const sl_header *headers, size_t nheaders, uint64_t *ticket);

/* One confirmation of an asynchronous publish. */
typedef struct sl_confirm {
    uint64_t ticket; /* as returned by sl_send_async */
    int err;         /* SL_OK when stored, else why not */
    uint64_t id;     /* the message id when err == SL_OK */
    int duplicate;   /* the key was seen before: id is the first message's */
} sl_confirm;

/* Which primary of a high-availability group confirmed a publish
 * (sl_send_wait_origin); a struct of its own, so that sl_confirm keeps the
 * size programs built against this library allocate. */
typedef struct sl_origin {
    uint64_t epoch;  /* the epoch the primary confirmed in; 0 from a broker without a group */
    char node[65];   /* that primary's --ha-node (cut to 64 bytes); "" without a group */
} sl_origin;

/* sl_send_wait waits up to timeout_ms (-1 forever, 0 poll) for the next
 * confirmation of an asynchronous publish, in the order they arrive (the
 * broker confirms in the order it received them). When the connection to the
 * broker is lost and made again (a broker restart, say), every publish still
 * waiting is confirmed with err SL_ECONNECT: it may or may not have been
 * stored (one ZeroMQ had not yet written to the lost connection goes out on
 * the new one, and may be stored after this; an idempotency key makes a
 * retry safe). Returns SL_OK with *out filled, SL_ETIMEDOUT when none
 * arrived in time, SL_ESTATE when no publish is outstanding. */
int sl_send_wait(sl_client *c, int timeout_ms, sl_confirm *out);

/* sl_send_wait_origin is sl_send_wait that also fills *origin (NULL: not
 * wanted) with the group's epoch and the node that confirmed, from a
 * high-availability primary's PUT_OK (zero and "" otherwise, and for a
 * publish that failed). */
int sl_send_wait_origin(sl_client *c, int timeout_ms, sl_confirm *out, sl_origin *origin);

/* sl_send_pending returns the number of asynchronous publishes not yet
 * confirmed or failed. */
size_t sl_send_pending(const sl_client *c);

/* ---- consuming ---- */

/* ---- several brokers ----
 *
 * A multi-client holds one sl_client per broker of a comma-separated list
 * ("tcp://a:7470,tcp://b:7470", as -b and SLUICE_BROKER take it). Producers
 * route each message by a consistent hash of its idempotency key, else of
 * its tag, else spread evenly (round robin); a broker that is down is skipped
 * for messages with no key (a keyed message must reach its broker, or its
 * duplicate check would not see it). The hash is rendezvous hashing: adding
 * or removing one broker moves only the keys that hash to it. Consumers
 * subscribe on every broker's client (sl_multi_at) and settle each delivery
 * on the client it came from. The same threading rules as sl_client hold.
 */
#define SL_MAX_BROKERS 32
typedef struct sl_multi sl_multi;

/* sl_multi_connect connects to every endpoint of the comma-separated list
 * (at most SL_MAX_BROKERS; NULL means SL_DEFAULT_ENDPOINT). Returns SL_OK and
 * sets *out, SL_EINVAL (an empty or bad endpoint, too many), SL_ENOMEM. */
int sl_multi_connect(const char *endpoints, const sl_options *opts, sl_multi **out);

/* sl_multi_close closes every client and sets *m to NULL; accepts NULL. */
void sl_multi_close(sl_multi **m);

/* sl_multi_count returns the number of brokers. */
unsigned sl_multi_count(const sl_multi *m);

/* sl_multi_at returns broker i's client (i < count), owned by m. */
sl_client *sl_multi_at(sl_multi *m, unsigned i);

/* sl_multi_endpoint returns broker i's endpoint, owned by m. */
const char *sl_multi_endpoint(const sl_multi *m, unsigned i);

/* sl_multi_route returns the broker a message with key (or, without one,
 * tag; both may be NULL) goes to: the highest rendezvous hash, or, with
 * neither, the next broker in turn. */
unsigned sl_multi_route(sl_multi *m, const char *key, const char *tag);

/* sl_multi_send publishes m like sl_send on the broker sl_multi_route picks;
 * a message without a key whose broker cannot be reached (SL_ETIMEDOUT,
 * SL_ECONNECT, SL_ESHUTDOWN) is tried on the next brokers in turn, and that
 * broker is skipped for keyless messages for 5 s. *broker (may be NULL) is
 * the index that confirmed it. Returns sl_send's codes. A timeout does not
 * prove the first broker stored nothing (its commit may merely have been
 * slow), so such a retry can store the message twice: at least once, as
 * with any retry after SL_ETIMEDOUT. Give the message a key where a
 * duplicate matters: a keyed message is never sent to a second broker. */
int sl_multi_send(sl_multi *m, const sl_put *p, uint64_t *id, unsigned *broker);

/* sl_multi_send_ex is sl_multi_send with the message's headers, as
 * sl_send_ex takes them. */
int sl_multi_send_ex(sl_multi *m, const sl_put *p, const sl_header *headers, size_t nheaders, uint64_t *id,
                     unsigned *broker);

/* sl_subscribe makes c a consumer in pool (NULL: "default") of the given
 * levels (NULL or nlevels == 0: all levels), with a credit window of credit
 * deliveries (0 means 1). The broker never has more unacknowledged
 * deliveries outstanding to c than the window; each sl_ack or sl_nack returns
 * one credit. Call once per client. Returns SL_OK, SL_EINVAL, SL_ENOLEVEL,
 * SL_ESTATE (already subscribed), SL_ETIMEDOUT, SL_EVERSION. */
int sl_subscribe(sl_client *c, const char *pool, const unsigned *levels, size_t nlevels,
                 unsigned credit);

/* A message delivered to a consumer. Owned by the caller: free it with
 * sl_delivery_free, after acknowledging it. */
typedef struct sl_delivery {
    uint64_t id;        /* the message id, stable across redeliveries */
    uint64_t token;     /* this delivery's lease token */
    unsigned level;
    unsigned attempt;   /* 1 on the first delivery */
    uint32_t lease_ms;  /* the lease: ack, nack or touch within this */
    const char *tag;    /* NUL-terminated; "" when none */
    const void *body;   /* body_len bytes, followed by a NUL for convenience */
    size_t body_len;
    uint32_t cost;      /* as published (1 by default) */
    uint64_t released_ns; /* the broker's CLOCK_MONOTONIC when it released this
                           * delivery, charged to its rate limits (0 from a
                           * broker that does not send it); comparable with
                           * this host's CLOCK_MONOTONIC only on the same host */
    /* Members added after the layout above was fixed: the library allocates
     * every sl_delivery, so a program built against an older sluice.h
     * simply does not read them. */
    const sl_header *headers; /* nheaders headers as published, in their order;
                               * NULL when none. Owned by the delivery. */
    size_t nheaders;
    uint64_t wait_ms;         /* the broker's clock from the message's publish to
                               * this delivery (0 from a broker that does not send it) */
    const char *key;          /* the idempotency key it was published with,
                               * NUL-terminated; "" when none */
} sl_delivery;

/* sl_delivery_header returns the value of d's header named name (compared
 * case-insensitively), NUL-terminated and owned by d, or NULL when d has
 * no such header. */
const char *sl_delivery_header(const sl_delivery *d, const char *name);

/* sl_set_limit caps the deliveries c asks for in all, counting from
 * sl_subscribe (0, the default, means no cap). Once the credit c has granted
 * reaches max_deliveries, acknowledgements return no credit, so the broker
 * sends nothing more: a consumer that wants exactly N messages sets N and
 * never receives an N+1st. Call it before sl_subscribe so that it caps the
 * first window too. Returns SL_OK or SL_EINVAL. */
int sl_set_limit(sl_client *c, uint64_t max_deliveries);

/* sl_recv waits up to timeout_ms (-1 forever, 0 poll) for the next delivery.
 * Returns SL_OK with *out set, SL_ETIMEDOUT, SL_ESTATE (not subscribed). */
int sl_recv(sl_client *c, int timeout_ms, sl_delivery **out);

/* sl_connected tells whether c's connection to the broker is up, as the
 * last call that waited saw it (sl_recv, a request, a flush): 1 once a
 * handshake has succeeded and no disconnection has been seen since, else 0.
 * While it is down ZeroMQ reconnects by itself (every 100 ms), a consumer's
 * subscription and credit are renewed on the new connection, and its
 * deliveries not settled are delivered again by the broker; a consumer may
 * use it to tell its user that it waits for the broker. */
int sl_connected(const sl_client *c);

/* sl_delivery_free frees *d and sets it to NULL; accepts NULL. */
void sl_delivery_free(sl_delivery **d);

/* Settlements (sl_ack, sl_nack, sl_touch, sl_throttled, sl_throttled_scope, sl_reject) are
 * sent without waiting for the broker's answer: each returns once its
 * message is handed to the socket, so a consumer settles and takes the
 * next delivery without a round trip (credit rides along, as before). The
 * broker answers every settlement in order; those answers are read by
 * whatever call of c next reads the socket (sl_recv, sl_send_wait, any
 * request, sl_flush). A settlement the broker refuses (SL_ESTALE: the lease
 * had expired or the token is unknown, so the message may be delivered
 * again; SL_ESHUTDOWN; SL_EIO) is never lost silently: it is counted
 * (sl_refused), and the next settling call or sl_flush returns its code,
 * sl_last_error naming it "an earlier settlement was refused: ...", once
 * per refusal reported. That call's own settlement has been sent all the
 * same. Answers of a connection that was lost are not waited for: those
 * settlements count as refused with SL_ECONNECT (the broker may never have
 * received them; it returns the leases of a vanished consumer by itself, so
 * their messages may be delivered again). A settling call on a client whose
 * key was revoked (its connection closed by the broker, its reconnection
 * refused at the handshake) returns SL_EPERM at once, sending nothing. With
 * the broker's --ack-flush-ms 0, the broker answers an ACK only after its
 * deletion is committed, so sl_flush returning SL_OK means every ACK sent
 * before it is durable.
 *
 * sl_ack acknowledges d: the broker deletes the message. Returns SL_OK
 * (sent), SL_EINVAL (c or d NULL), SL_ETIMEDOUT (the send timed out),
 * SL_ECONNECT, SL_ENOMEM, or the code of an earlier refused settlement
 * (above). */
int sl_ack(sl_client *c, const sl_delivery *d);

/* sl_nack returns d to the head of its level, to be delivered again after
 * delay_ms (0: at once). The attempt counts toward the attempt limit. Returns
 * as sl_ack. */
int sl_nack(sl_client *c, const sl_delivery *d, uint32_t delay_ms);

/* sl_touch extends d's lease to lease_ms from now (0: the broker's default
 * lease). Returns as sl_ack. */
int sl_touch(sl_client *c, const sl_delivery *d, uint32_t lease_ms);

/* sl_throttled tells the broker that the sink refused d as "too many
 * requests" (HTTP 429 or 503). The broker returns d to the head of its level
 * without charging an attempt, pauses all dispatch to the sink for
 * retry_after_ms (0: the broker's default backoff), and lowers the sink rate
 * it uses (AIMD). Returns as sl_ack. The same as sl_throttled_scope with
 * SL_SCOPE_SINK. */
int sl_throttled(sl_client *c, const sl_delivery *d, uint32_t retry_after_ms);

/* What the service limited when it answered "too many requests". */
typedef enum sl_scope {
    SL_SCOPE_SINK = 0, /* the service itself: every delivery waits (sl_throttled) */
    SL_SCOPE_TAG = 1,  /* only d's tag, a per-tenant limit of the service (a 429
                          naming a per-key scope, say) */
} sl_scope;

/* sl_throttled_scope is sl_throttled with the limit's scope. With
 * SL_SCOPE_SINK it is sl_throttled exactly (the message carries no scope,
 * so any broker of wire version 2 takes it). With SL_SCOPE_TAG the broker
 * returns d to the head of its level without charging an attempt and
 * pauses only d's tag for retry_after_ms (0: its default backoff; at most
 * a day): the sink is neither paused nor cut, and the level's other tags
 * and the other levels go on. In a level served fair by tag the tag is set
 * aside for the pause and, when a tag setting gives it a rate limit, the
 * bucket it passes is cut and climbs back (AIMD per tag: its own with
 * --each, else its pattern's shared one); a tag with no rate limit is only
 * paused. A FIFO level, which cannot skip its head, waits for the pause
 * instead (its other levels and the sink go on). An untagged d is taken as
 * SL_SCOPE_SINK. A broker older than the scope refuses SL_SCOPE_TAG with
 * SL_EPROTO (reported like any refused settlement), so fall back to
 * sl_throttled there. Returns as sl_ack, and SL_EINVAL (nothing sent) for
 * a scope that is neither. */
int sl_throttled_scope(sl_client *c, const sl_delivery *d, uint32_t retry_after_ms, sl_scope scope);

/* sl_reject tells the broker that d can never succeed (the sink answered
 * 4xx, the payload is malformed, ...): the message moves to its level's dead
 * letters at once, with reason (NUL-terminated, may be NULL) recorded.
 * Returns as sl_ack. */
int sl_reject(sl_client *c, const sl_delivery *d, const char *reason);

/* sl_flush waits up to timeout_ms (-1 forever) until the broker has
 * answered every settlement c has sent. Returns SL_OK when all were
 * accepted; the code of a refused one not yet reported (see above);
 * SL_ETIMEDOUT when answers are still missing; SL_ECONNECT; SL_EINVAL (c
 * NULL). */
int sl_flush(sl_client *c, int timeout_ms);

/* sl_refused returns how many settlements the broker has refused on c
 * since sl_connect (0 for NULL). */
uint64_t sl_refused(const sl_client *c);

/* ---- statistics ---- */

/* One level's figures. Counters count since the broker started. */
typedef struct sl_level_stats {
    char name[65];
    uint64_t depth;      /* ready to deliver */
    uint64_t inflight;   /* delivered, not yet acknowledged */
    uint64_t delayed;    /* waiting for a due time */
    uint64_t dead;       /* dead letters */
    uint64_t oldest_ms;  /* age of the oldest ready message; 0 when empty */
    uint64_t enqueued, dispatched, acked, nacked, expired;
    /* deliveries by the reason the dispatcher picked this level */
    uint64_t picks_priority, picks_aged, picks_overdue, picks_guaranteed;
    uint64_t throttled;  /* deliveries the sink refused (THROTTLED) */
    uint64_t eta_ms;     /* expected time to drain the ready backlog at the
                            level's effective rate; 0 when empty or unknown */
    /* dead letters requeued and purged by operators, dropped by retention */
    uint64_t dead_requeued, dead_purged, dead_dropped;
    uint64_t corrupt;    /* records that failed their check, moved to dead letters */
} sl_level_stats;

/* A broker sharing its sink with others through Redis (sluiced --coord):
 * its capacity lease. coordinated is 0 (and the rest zero) otherwise. Rates
 * are units/s x 1000. */
typedef struct sl_coord_info {
    int coordinated;
    char state[24];              /* leased, learning (Redis lost its keys: a
                                    new epoch), connecting, unreachable, auth
                                    failed, script error */
    int reachable;               /* Redis answered the last request */
    uint64_t slices_held, slices;/* held now, of the sink's slices in all */
    uint64_t reserved_milli;     /* this broker's reserved rate */
    uint64_t granted_milli;      /* what its slices add now */
    uint64_t lease_left_ms;      /* until the grant expires here; 0: none */
    uint64_t epoch;              /* Redis's epoch (server ms when its keys were made) */
    uint64_t limit_milli;        /* the sink's limit, for every broker */
    uint64_t sum_reserved_milli; /* every broker's reserved rate; holds when <= limit */
    uint64_t brokers;            /* live brokers sharing the sink */
    uint64_t ops;                /* Redis commands sent */
} sl_coord_info;

typedef struct sl_stats {
    unsigned nlevels;
    sl_level_stats level[SL_MAX_LEVELS];
    uint64_t uptime_ms;
    uint64_t consumers;  /* connected consumer connections */
    char breaker[16];    /* the sink's circuit breaker: "closed", "open", "half-open" */
    uint64_t breaker_trips; /* times it opened */
    uint64_t rx_bad;     /* messages the broker refused as malformed or unexpected */
    uint64_t tx_failed;  /* replies and deliveries the broker could not send */
    uint64_t auth_refused;       /* commands refused with SL_EPERM (auth on; else 0) */
    uint64_t handshakes_refused; /* CURVE handshakes refused: unknown keys (auth on) */
    sl_coord_info coord; /* a shared sink's lease */
} sl_stats;

/* sl_stats_get fills *out from the broker. Returns SL_OK, SL_ETIMEDOUT, or
 * SL_EPROTO (a malformed reply, or more levels than SL_MAX_LEVELS; *out is
 * then untouched). */
int sl_stats_get(sl_client *c, sl_stats *out);

/* Figures of STATS added after sl_stats's layout was fixed: they come in a
 * struct of their own so that sl_stats keeps its size in libsluice.so.1. A
 * broker that does not send one reports 0. */
typedef struct sl_stats_ex {
    uint64_t throttled_tag[SL_MAX_LEVELS]; /* per level: of `throttled`, the
                                              deliveries refused for their tag
                                              alone (SL_SCOPE_TAG) */
} sl_stats_ex;

/* sl_stats_get_ex is sl_stats_get, also filling *ex (may be NULL) from the
 * same reply. Returns as sl_stats_get. */
int sl_stats_get_ex(sl_client *c, sl_stats *out, sl_stats_ex *ex);

/* Figures of STATS added after sl_stats_ex's layout was fixed. The struct
 * starts with its own size, which the caller sets (size = sizeof *more):
 * the library fills only the members that fit in it, so that members may
 * be added at its end without a new call, and a program built against an
 * older sluice.h keeps working with libsluice.so.1. A broker that does not
 * send a figure reports 0. */
typedef struct sl_stats_more {
    size_t size;             /* set by the caller: sizeof (sl_stats_more) */
    uint64_t settle_refused; /* settlements refused with SL_ESTALE: a token no lease has
                                (expired, settled, from before a restart, never given),
                                or a lease another connection holds */
    uint64_t settle_foreign; /* of those, a lease another connection holds */
    uint64_t throttled_ms[SL_MAX_LEVELS]; /* per level: what its pause after a THROTTLED
                                             has left (sl_level_list_ex); 0: none */
    int quarantined_level[SL_MAX_LEVELS]; /* per level: 1 when its stored trees failed the
                                             broker's checks (state "quarantined"): nothing
                                             is delivered from it, a publish to it is
                                             SL_ECORRUPT */
    uint64_t quarantined[SL_MAX_LEVELS];  /* per level: the messages (queued, delayed and
                                             dead letters) it held then, which the broker
                                             does not serve; `sluice salvage` recovers them */
    uint64_t quarantined_total;           /* the sum over the levels */
} sl_stats_more;

/* sl_stats_get_more is sl_stats_get_ex, also filling *more (may be NULL;
 * its size set) from the same reply. Returns as sl_stats_get, and
 * SL_EINVAL when more's size is below that of its first member. */
int sl_stats_get_more(sl_client *c, sl_stats *out, sl_stats_ex *ex, sl_stats_more *more);

/* A consumer's share, its pacing at the sink and its credit window are
 * declared in sluice_pace.h; the administration calls (levels, pools, the
 * sink, explain, dead letters, per-tag settings) in sluice_admin.h. Both
 * are part of this header. */
#include "sluice_pace.h"
#include "sluice_admin.h"

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
