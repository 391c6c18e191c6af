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
 *   from different threads at once; each owns its own ZeroMQ context and
 *   socket. Nothing in this library keeps global state.
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
 * SL_DEFAULT_ENDPOINT). opts may be NULL. Connecting is asynchronous in
 * ZeroMQ: an unreachable broker shows as SL_ETIMEDOUT on the first call that
 * waits for a reply, not here.
 * Returns SL_OK and sets *out, SL_EINVAL (bad endpoint, or keys that are
 * not all three valid, or CURVE asked of a libzmq without it), SL_ENOMEM.
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

/* One confirmation of an asynchronous publish. */
typedef struct sl_confirm {
    uint64_t ticket; /* as returned by sl_send_async */
    int err;         /* SL_OK when stored, else why not */
    uint64_t id;     /* the message id when err == SL_OK */
    int duplicate;   /* the key was seen before: id is the first message's */
} sl_confirm;

/* sl_send_wait waits up to timeout_ms (-1 forever, 0 poll) for the next
 * confirmation of an asynchronous publish, in the order they arrive (the
 * broker confirms in the order it received them). When the connection to the
 * broker is lost and made again (a broker restart, say), every publish still
 * waiting is confirmed with err SL_ECONNECT: it may or may not have been
 * stored. Returns SL_OK with *out filled, SL_ETIMEDOUT when none arrived in
 * time, SL_ESTATE when no publish is outstanding. */
int sl_send_wait(sl_client *c, int timeout_ms, sl_confirm *out);

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
} sl_delivery;

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

/* sl_delivery_free frees *d and sets it to NULL; accepts NULL. */
void sl_delivery_free(sl_delivery **d);

/* Settlements (sl_ack, sl_nack, sl_touch, sl_throttled, sl_reject) are
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
 * it uses (AIMD). Returns as sl_ack. */
int sl_throttled(sl_client *c, const sl_delivery *d, uint32_t retry_after_ms);

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

/* ---- administration ----
 *
 * Every change below takes effect at once, is stored in the broker's data
 * directory, and survives a restart. Each returns SL_OK, SL_ETIMEDOUT, or an
 * error from the broker: SL_ENOLEVEL, SL_ENOTFOUND (no such pool), SL_EINVAL
 * (a value out of range; sl_last_error says which).
 */

/* One window of a rate limit: at most count units per period, burst of them
 * at once (a GCRA bucket: over any span tau, at most count / period x tau +
 * burst). A limit may have up to SL_MAX_WINDOWS, in series ("10/s and
 * 500/min"): a message goes when every window admits it. */
#define SL_MAX_WINDOWS 4
typedef struct sl_window {
    uint64_t count_milli;  /* units per period x 1000 (1500: 1.5 units) */
    uint64_t period_ms;    /* 1 ms .. 86,400,000 (a day); 1000 for a rate per second */
    uint32_t burst;        /* units at once; 0: a per-second window keeps the limit's burst, another takes 1 */
    uint64_t tokens_milli; /* shown only: units the window would let through now, x 1000 */
} sl_window;

/* One level's scheduling settings and state. */
typedef struct sl_level_info {
    char name[65];
    uint64_t deadline_ms;  /* 0: none. A head older than this is served first */
    uint64_t aging_ms;     /* 0: none. Waiting this long lifts a message one level */
    int paused;            /* nothing is delivered from a paused level */
    uint64_t depth;        /* ready messages */
    uint64_t oldest_ms;    /* age of the oldest ready message */
    uint64_t max_rate_milli;  /* ceiling, units/s x 1000; 0 = none */
    uint64_t min_rate_milli;  /* guaranteed rate, units/s x 1000; 0 = none */
    uint32_t burst;           /* the ceiling's burst */
    uint64_t tokens_milli;    /* units the ceiling would let through now, x 1000 */
    uint64_t eta_ms;          /* expected drain time of the ready backlog */
    unsigned nwindows;        /* the ceiling's windows: its per-second one (max_rate_milli) first */
    sl_window windows[SL_MAX_WINDOWS];
    int fair;                 /* 1: served fair by tag; 0: FIFO */
} sl_level_info;

/* sl_level_list fills out[0..*n) (room for SL_MAX_LEVELS), one item per
 * level. A malformed reply (a row missing a column, a column of the wrong
 * type, more rows than SL_MAX_LEVELS) is SL_EPROTO with out untouched and *n
 * 0. */
int sl_level_list(sl_client *c, sl_level_info *out, unsigned *n);

/* sl_level_set changes a level's deadline and aging step. Pass
 * SL_UNCHANGED to leave one as it is, 0 to switch it off. */
#define SL_UNCHANGED UINT64_MAX
int sl_level_set(sl_client *c, unsigned level, uint64_t deadline_ms, uint64_t aging_ms);

/* sl_level_rate sets a level's ceiling (max_rate_milli: the most units per
 * second x 1000 that leave it, with burst) and its guaranteed rate
 * (min_rate_milli: a reserved share of the sink the level gets before lower
 * levels; unused, it is lent to others). SL_UNCHANGED leaves a value as it
 * is; 0 switches a limit off. Takes effect within a second, without a burst. */
int sl_level_rate(sl_client *c, unsigned level, uint64_t max_rate_milli, uint64_t min_rate_milli,
                  uint64_t burst);

/* sl_level_windows sets every window of a level's ceiling, replacing those
 * it had: w[0..n), n at most SL_MAX_WINDOWS (0: no ceiling). The first
 * window with a period of 1000 ms becomes max_rate_milli and burst; at most
 * SL_MAX_WINDOWS - 1 may have another period. Like every rate change it
 * takes effect without a burst. SL_EINVAL for a count above 100,000,000 per
 * period, a period outside 1 ms .. a day, a burst above 1,000,000. */
int sl_level_windows(sl_client *c, unsigned level, const sl_window *w, unsigned n);

/* sl_level_pause stops (paused = 1) or resumes (0) deliveries from a level.
 * Publishing to a paused level still works. */
int sl_level_pause(sl_client *c, unsigned level, int paused);

#define SL_MAX_POOLS 64

/* One consumer pool. */
typedef struct sl_pool_info {
    char name[65];
    uint32_t levels_mask;   /* bit L: subscribed to level L */
    uint32_t size;          /* most deliveries its members hold at once; 0 = no limit */
    uint32_t members;       /* connected member consumers */
    uint32_t inflight;      /* deliveries its members hold now */
    double rate_per_s;      /* deliveries per second, recent average */
    uint32_t recommended;   /* the size autoscaling would choose (always computed) */
    int paused;
    int autoscale;          /* autoscaling is on */
} sl_pool_info;

/* sl_pool_list fills out[0..*n) (room for SL_MAX_POOLS), one item per pool;
 * a malformed reply is SL_EPROTO as for sl_level_list. */
int sl_pool_list(sl_client *c, sl_pool_info *out, unsigned *n);

/* sl_pool_resize sets a pool's size, creating the pool (subscribed to all
 * levels) if it does not exist. Growing grants credit at once; shrinking stops
 * new deliveries until the pool holds fewer than size, and never takes back a
 * delivery in progress. Members are told their share (sl_share). */
int sl_pool_resize(sl_client *c, const char *pool, uint32_t size);

/* sl_pool_pause stops (1) or resumes (0) deliveries to a pool's members. */
int sl_pool_pause(sl_client *c, const char *pool, int paused);

/* sl_pool_delete deletes a pool and its stored settings. A pool with members
 * is refused (SL_ESTATE) unless force is 1: its members are then dropped as
 * on BYE (their deliveries return uncharged; a member's next credit puts it
 * in the default pool). Returns SL_OK, SL_ENOTFOUND (no such pool), SL_ESTATE,
 * SL_EINVAL (the default pool, or a bad name), or a transport error. */
int sl_pool_delete(sl_client *c, const char *pool, int force);

/* sl_pool_autoscale lets the broker set the pool's size within [min, max]
 * from its backlog, arrival rate and service time, aiming for a wait of
 * target_wait_ms; enabled = 0 switches it off (the size stays). */
int sl_pool_autoscale(sl_client *c, const char *pool, uint32_t min, uint32_t max,
                      uint64_t target_wait_ms, int enabled);

/* sl_share reports the share of its pool's size the broker last gave this
 * consumer: how many deliveries it should work on at once (0 when not told
 * yet, or when the pool has no size). A consumer that runs workers starts or
 * stops them to match. The value changes when the pool is resized or members
 * join or leave; it is read from messages the client has already received,
 * so call it after sl_recv. */
unsigned sl_share(const sl_client *c);

/* Pacing at the moment a request leaves. The broker meters what it
 * dispatches, but the sink sees when each request arrives; workers the
 * scheduler delays send late, then together. A consumer that calls the sink
 * takes a token again just before each request leaves, from an sl_pacer at
 * the share of the sink the broker gives it (its part of the recent
 * deliveries, at least an even part, times 1.5, of the sink's rate and
 * burst; re-balanced as consumers come, go or idle).
 *
 * sl_pace_share reads that share from messages already received (call it
 * after sl_recv): *rate_milli in units per second x 1000 (0: unpaced, the
 * sink is unlimited) and *burst. Returns 1 once the broker has told one, else
 * 0 (the outputs are then 0). */
int sl_pace_share(const sl_client *c, uint64_t *rate_milli, uint32_t *burst);

/* An sl_pacer is safe to share between threads: sl_pacer_wait takes the
 * token for cost units (0 reads as 1) at the moment it is due, sleeping
 * until then; call it just before the request leaves. Callers are served
 * in the order they asked (first come, first served). Returns the ns it
 * waited. sl_pacer_set changes the rate (0: unpaced) and
 * burst without creating tokens; it keeps a quarter of a burst above 1 (at
 * least one unit) as slack for the time between the token and the arrival
 * at the sink. A new
 * pacer is unpaced. sl_pacer_new
 * returns SL_OK or SL_ENOMEM; sl_pacer_free accepts NULL and sets *p NULL.
 *
 * sl_pacer_wait_released does what sl_pacer_wait does and also keeps the
 * broker's spacing: given the delivery's released_ns (0: as sl_pacer_wait)
 * it holds the request until its release plus the longest lag between
 * release and this call seen in the last one to two seconds (the spread
 * above the shortest, at most 25 ms), so that requests a worker took late
 * do not arrive bunched with those taken on time, whichever process sends
 * them; then it takes the token in turn, as with sl_pacer_wait. The hold
 * grows at once and shrinks by at most 1 ms a second while requests keep
 * coming; a request that finds no other waiting in the pacer is not held
 * (one at a time, there is no spacing to keep). Use one pacer per broker
 * (the lag is measured on its clock). */
typedef struct sl_pacer sl_pacer;
int sl_pacer_new(sl_pacer **out);
void sl_pacer_set(sl_pacer *p, uint64_t rate_milli, uint32_t burst);
uint64_t sl_pacer_wait(sl_pacer *p, uint32_t cost);
uint64_t sl_pacer_wait_released(sl_pacer *p, uint32_t cost, uint64_t released_ns);
void sl_pacer_free(sl_pacer **p);

/* sl_set_window changes the consumer's credit window (1..100000): growing
 * grants the difference at once; shrinking withholds the credit that acks
 * would return until fewer than window deliveries are outstanding. */
int sl_set_window(sl_client *c, unsigned window);

/* The sink: the throttled service consumers call. */
typedef struct sl_sink_info {
    uint64_t rate_milli;           /* configured, units/s x 1000; 0 = unlimited */
    uint64_t effective_rate_milli; /* what the broker uses now (lower after THROTTLED) */
    uint32_t burst;
    uint64_t max_inflight;         /* most deliveries out at once; 0 = no cap */
    uint64_t inflight;             /* deliveries out now */
    uint64_t tokens_milli;         /* units that could go now, x 1000 */
    uint64_t paused_ms;            /* ms until dispatch resumes after THROTTLED; 0 = running */
    char breaker[16];              /* "closed", "open" or "half-open" */
    uint64_t breaker_trips;        /* times the breaker opened */
    char reason[48];               /* why the effective rate is where it is: "configured",
                                      "cut after 429 (isolated)", "cut after repeated 429s",
                                      "recovering", "coordinated share" */
    sl_coord_info coord;           /* a shared sink's lease */
    unsigned nwindows;             /* the sink's windows: its per-second one (rate_milli) first */
    sl_window windows[SL_MAX_WINDOWS];
} sl_sink_info;

/* sl_sink_set changes the sink's rate, burst and in-flight cap
 * (SL_UNCHANGED leaves one as it is; 0 removes a limit). On a broker sharing
 * its sink (coord.coordinated), the rate is the sink's limit for every
 * broker, set through Redis: SL_EINVAL when it is below the brokers'
 * reserved rates, SL_ESTATE when Redis is unreachable. */
int sl_sink_set(sl_client *c, uint64_t rate_milli, uint64_t burst, uint64_t max_inflight);

/* sl_sink_windows sets every window of the sink's limit, replacing those it
 * had, as sl_level_windows does for a level (n 0: unlimited). On a broker
 * sharing its sink, the per-second window's rate is the limit for every
 * broker (as in sl_sink_set); the other windows are this broker's own. */
int sl_sink_windows(sl_client *c, const sl_window *w, unsigned n);

/* sl_sink_show reads the sink's settings and state. */
int sl_sink_show(sl_client *c, sl_sink_info *out);

/* Where a message is and why it has not been delivered. */
typedef struct sl_explain_info {
    char state[32];     /* "ready", "leased", "delayed", "dead" or "gone" */
    unsigned level;
    uint64_t position;  /* ready: messages ahead of it in its level */
    uint64_t until_ms;  /* leased or delayed: ms until the lease ends or it is due */
    char why[1025];     /* a sentence for humans: paused level or pool, no credit, ... */
} sl_explain_info;

/* sl_explain tells where message id is and why it has not been dispatched.
 * A message that was acknowledged (or never existed) is "gone". */
int sl_explain(sl_client *c, uint64_t id, sl_explain_info *out);

/* ---- dead letters ----
 *
 * A message that used up its attempts, or whose time to live ran out, is a
 * dead letter of its level, kept by message id. These calls list, read,
 * requeue and purge them. Requeue and purge work in chunks: one call
 * changes at most SL_DEAD_CHUNK dead letters, in one transaction of the
 * broker (a crash leaves each message of the chunk either dead or
 * requeued), and tells in *after whether more remain; call again to go on.
 * Running a series again after it was cut short does nothing twice. */

#define SL_DEAD_CHUNK     1000u     /* most dead letters one call changes */
#define SL_DEAD_PAGE      64u       /* most dead letters one sl_dead_list returns */
#define SL_DEAD_TEXT      64u       /* bytes of tag, reason and preview in a list */
#define SL_SAME_LEVEL     ((unsigned)-1) /* sl_dead_requeue*: back to the level it died in */

/* A dead letter as sl_dead_list shows it. tag and reason are cut to
 * SL_DEAD_TEXT bytes (at a UTF-8 character's start) and NUL-terminated;
 * preview holds the first preview_len bytes of the body, any bytes. */
typedef struct sl_dead_letter {
    uint64_t id;
    char tag[SL_DEAD_TEXT + 1];
    uint64_t attempts;       /* deliveries charged before it died */
    uint64_t died_ms;        /* when it died, ms since the Unix epoch */
    char reason[SL_DEAD_TEXT + 1];
    unsigned char preview[SL_DEAD_TEXT];
    size_t preview_len;
    uint64_t body_bytes;     /* the whole body's size */
} sl_dead_letter;

/* sl_dead_list reads up to max (at most SL_DEAD_PAGE; 0 means that many)
 * dead letters of level whose id is above after, in id order, into
 * out[0..*n). Fewer than asked means the end of the level. Returns SL_OK,
 * SL_ENOLEVEL, SL_EINVAL, SL_EPROTO, SL_ETIMEDOUT. */
int sl_dead_list(sl_client *c, unsigned level, uint64_t after, unsigned max, sl_dead_letter *out, unsigned *n);

/* One dead letter, whole. The pointers point into the client's last reply:
 * valid until the next call on c. body holds body_len bytes, unchanged. */
typedef struct sl_dead_message {
    uint64_t id;
    unsigned level;
    uint64_t attempts;
    const char *tag;         /* tag_len bytes, not NUL-terminated */
    size_t tag_len;
    const void *body;
    size_t body_len;
    const char *reason;      /* reason_len bytes, not NUL-terminated */
    size_t reason_len;
} sl_dead_message;

/* sl_dead_peek reads dead letter id, whatever its level. SL_ENOTFOUND when
 * no dead letter has that id. */
int sl_dead_peek(sl_client *c, uint64_t id, sl_dead_message *out);

/* sl_dead_requeue moves up to max (0 or more than SL_DEAD_CHUNK mean
 * SL_DEAD_CHUNK) dead letters of level, smallest id first, to the tail of
 * to_level (SL_SAME_LEVEL: level) as new: attempt 0, no time to live.
 * *moved says how many moved, and *after is 0 when level has no dead letter
 * left, nonzero when more remain. sl_dead_requeue_id moves one, by id
 * (SL_ENOTFOUND when it is not a dead letter). */
int sl_dead_requeue(sl_client *c, unsigned level, unsigned to_level, uint64_t max, uint64_t *moved,
                    uint64_t *after);
int sl_dead_requeue_id(sl_client *c, uint64_t id, unsigned to_level);

/* sl_dead_purge deletes dead letters of level for good: those with an id
 * above *after (0: from the first) that died at least older_than_ms ago (0:
 * all), up to max of them (as for requeue). It looks at no more than 10,000
 * per call: *purged says how many it deleted and *after where the next call
 * goes on, or 0 at the end of the level. */
int sl_dead_purge(sl_client *c, unsigned level, uint64_t older_than_ms, uint64_t max, uint64_t *after,
                  uint64_t *purged);

/* ---- per-tag settings of levels served fair by tag ---- */

/* The settings sl_tag_set changes for a pattern: each field SL_UNCHANGED
 * leaves it as it is (a new pattern starts at weight 1, no cap, no rate,
 * one bucket shared by the tags it matches). */
typedef struct sl_tag_settings {
    uint64_t weight;        /* 1..1000: turns per round of the fair pick */
    uint64_t max_inflight;  /* deliveries out at once; 0: no cap */
    uint64_t each;          /* 1: a bucket and a cap per matching tag; 0: one shared */
    uint64_t burst;         /* the per-second window's burst (with no windows given) */
    int nwindows;           /* -1: rate unchanged; 0: no rate limit; else windows[0..n) */
    sl_window windows[SL_MAX_WINDOWS];
} sl_tag_settings;

/* sl_tag_settings_init sets every field of s to "unchanged". */
void sl_tag_settings_init(sl_tag_settings *s);

/* sl_tag_set sets the settings of pattern (a glob such as "gold-*", or an
 * exact tag; 1..255 bytes); the first pattern set that matches a tag gives
 * it its settings. SL_EINVAL for a bad value (the broker's text says
 * which), or past 1,024 patterns. */
int sl_tag_set(sl_client *c, const char *pattern, const sl_tag_settings *s);

/* sl_tag_off removes pattern's settings. SL_ENOTFOUND when it has none. */
int sl_tag_off(sl_client *c, const char *pattern);

/* sl_tag_pause stops (paused 1) or resumes (0) deliveries of one tag (exact
 * text) from every level served fair by tag. */
int sl_tag_pause(sl_client *c, const char *tag, int paused);

/* One row of sl_tag_list: a pattern (pattern set, tag empty) or a tag (tag
 * set; pattern: the one it matches, or empty). */
typedef struct sl_tag_info {
    char pattern[65];
    char tag[65];
    int has_level;          /* a tag waiting or in flight in a level */
    unsigned level;
    uint64_t depth, inflight, oldest_ms;
    uint64_t weight, max_inflight, rate_milli, burst, tokens_milli;
    int each, paused, limited; /* limited: rate_milli and tokens_milli mean something */
    unsigned nwindows;
    sl_window windows[SL_MAX_WINDOWS]; /* a pattern's windows */
} sl_tag_info;
#define SL_MAX_TAG_ROWS 64

/* sl_tag_list fills out[0..*n) (room for SL_MAX_TAG_ROWS): the patterns in
 * their order, then the tags with the most messages waiting. */
int sl_tag_list(sl_client *c, sl_tag_info *out, unsigned *n);

/* sl_level_fair serves level fair by tag (fair != 0: deficit round robin
 * over the tags with messages waiting, FIFO within a tag, untagged messages
 * one tenant of their own) or FIFO (0, the default). Persisted. SL_ESTATE
 * when the level holds messages (ready, in flight or delayed): a level
 * changes how it is served only while it is empty. */
int sl_level_fair(sl_client *c, unsigned level, int fair);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
