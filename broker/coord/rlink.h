/*
 * rlink.h - one non-blocking connection to Redis on the loop's poll
 * (rlink.c), shared by the capacity leases (coord.c) and the
 * high-availability lease (ha_lease.c). Internal to broker/coord.
 */
#ifndef SLUICE_RLINK_H
#define SLUICE_RLINK_H

#include <stddef.h>
#include <stdint.h>

struct redisReply;
typedef struct rlink rlink;

/* What a failure was, for the owner's state and log line. */
typedef enum rlink_fail { RLINK_UNREACHABLE, RLINK_AUTH } rlink_fail;

/* rlink_reply_fn handles one reply to a command of kind (the owner's
 * number, given to rlink_send); returns -1 when the connection must go. */
typedef int (*rlink_reply_fn)(void *ctx, int kind, const struct redisReply *r, uint64_t now_ns);
/* rlink_fail_fn hears that the connection was dropped (before the retry
 * is scheduled), once per drop. */
typedef void (*rlink_fail_fn)(void *ctx, uint64_t now_ns, rlink_fail what, const char *why);

typedef struct rlink_cfg {
    const char *url;              /* redis://HOST:PORT[/DB] or unix:///PATH[?db=N] */
    const char *user, *password;  /* or NULL */
    uint64_t connect_timeout_ns;  /* a connect() longer than this fails; also the backoff's ceiling */
    rlink_reply_fn on_reply;
    rlink_fail_fn on_fail;
    void *ctx;
} rlink_cfg;

/* rlink_new parses cfg->url (strings copied); nothing is connected until
 * rlink_tick. SL_OK, SL_EINVAL (a bad URL), SL_ENOMEM. */
int rlink_new(const rlink_cfg *cfg, rlink **out);

/* rlink_destroy closes and frees; accepts NULL, NULLs *l; wipes the password. */
void rlink_destroy(rlink **l);

/* rlink_tick connects when a retry is due, writes what is queued and reads
 * the replies that came (each handed to on_reply). Never blocks. */
void rlink_tick(rlink *l, uint64_t now_ns);

/* rlink_up tells whether a connection is open (or opening). */
int rlink_up(const rlink *l);

/* rlink_ready tells whether the connection is made (not still opening). */
int rlink_ready(const rlink *l);

/* rlink_send queues one command whose reply is of kind. 0, or -1 when
 * not connected or too many replies are pending (nothing queued). */
int rlink_send(rlink *l, int kind, int argc, const char **argv);

/* rlink_pending returns how many replies are awaited. */
unsigned rlink_pending(const rlink *l);

/* rlink_drop drops the connection (why logged by the owner through
 * on_fail) and schedules the next try with backoff. */
void rlink_drop(rlink *l, uint64_t now_ns, const char *why);

/* rlink_connected_ok resets the backoff after a good reply. */
void rlink_connected_ok(rlink *l);

/* rlink_next_try returns when a closed link next connects, or when an
 * opening one times out (UINT64_MAX when neither). */
uint64_t rlink_next_wake(const rlink *l);

/* rlink_pollfd returns the socket to wait on and *events, or -1. */
int rlink_pollfd(const rlink *l, short *events);

/* rlink_flush_wait waits at most wait_ms (blocking: only after the loop has
 * ended) for every pending reply, handing each to on_reply. */
void rlink_flush_wait(rlink *l, int wait_ms, uint64_t now_ns);

/* rlink_ops counts commands sent. */
uint64_t rlink_ops(const rlink *l);

#endif /* SLUICE_RLINK_H */
