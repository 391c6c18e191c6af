/*
 * campaign.h - what the reliability campaigns (campaign_crash.c,
 * campaign_powerloss.c) share: a pipelined publisher that records every
 * attempt and answer into a history, a drain that consumes and acknowledges
 * until the broker holds nothing, and a look at a child process that does
 * not reap it.
 *
 * All of it goes through client/sluice.h. Each campaign_pub is used by one
 * thread. Functions that depend on time take now_ms (monotonic) from the
 * caller.
 */
#ifndef SLUICE_TEST_CAMPAIGN_H
#define SLUICE_TEST_CAMPAIGN_H

#include <stdint.h>
#include <sys/types.h>

#include "history.h"
#include "sluice.h"

#define CAMPAIGN_WINDOW_MAX 1024
#define CAMPAIGN_LEVELS     3    /* publishes go to levels 0..2 at random */

typedef struct campaign_pending {
    uint64_t ticket, msg, sent_ms;
} campaign_pending;

/* A pipelined publisher. Publishes that get no answer within put_timeout_ms
 * are abandoned as "attempted, unconfirmed" and the client is replaced: the
 * client library never resends a request lost with its connection. */
typedef struct campaign_pub {
    const char *endpoint;
    history *h;
    sl_client *c;
    unsigned window;
    int put_timeout_ms;
    unsigned seed;
    unsigned tags; /* each publish gets one of this many tags ("t0".."t<tags-1>"); 0: none */
    int keyed;     /* each publish carries the key "k<message number>": sent again, stored once */
    campaign_pending pend[CAMPAIGN_WINDOW_MAX];
    unsigned npend;
    char *buf;
    size_t buf_bytes;
    uint64_t sent, confirmed, rejected, abandoned, reconnects, send_errors;
    int full; /* the history has no slot left */
} campaign_pub;

/* campaign_client opens a client on endpoint with a timeout suited to a
 * broker that comes and goes. Returns SL_OK or an sl_connect error. */
int campaign_client(const char *endpoint, int timeout_ms, sl_client **out);

/* campaign_pub_open readies p (window 1..CAMPAIGN_WINDOW_MAX) and connects.
 * Returns 0 or -1. */
int campaign_pub_open(campaign_pub *p, const char *endpoint, history *h, unsigned window,
                      int put_timeout_ms, unsigned seed);

/* campaign_pub_fill publishes new messages until the window is full, the
 * history is full or a local send fails; returns how many it sent. */
unsigned campaign_pub_fill(campaign_pub *p, uint64_t now_ms);

/* campaign_pub_collect waits up to wait_ms for an answer, then takes every
 * answer already there; returns how many confirmations came. */
unsigned campaign_pub_collect(campaign_pub *p, int wait_ms);

/* campaign_pub_expire abandons every outstanding publish and reconnects when
 * the oldest has waited put_timeout_ms; returns how many it abandoned. */
unsigned campaign_pub_expire(campaign_pub *p, uint64_t now_ms);

/* campaign_pub_close abandons what is outstanding and closes the client. */
void campaign_pub_close(campaign_pub *p);

/* campaign_levels_empty asks c for statistics: *empty is 1 when no level
 * holds a ready, leased or delayed message; *dead (may be NULL) gets the dead
 * letters. Returns SL_OK or the sl_stats_get error. */
int campaign_levels_empty(sl_client *c, int *empty, uint64_t *dead);

typedef struct campaign_drain_result {
    uint64_t deliveries, acked, dead;
    int empty;         /* the broker said it holds nothing */
    int broker_gone;   /* the broker exited while draining */
} campaign_drain_result;

/* campaign_drain consumes from endpoint with a window of credit, recording
 * every delivery and ack into h, until the broker says it holds nothing,
 * max_ms pass, or broker (if > 0) exits; once drained, it waits (up to
 * 5 s) for the broker's answers to its acknowledgements, so that the
 * broker has taken them all (their deletes then reach the store within
 * --ack-flush-ms). Returns 0 when drained, else -1. */
int campaign_drain(const char *endpoint, history *h, unsigned credit, int max_ms, pid_t broker,
                   campaign_drain_result *out);

/* campaign_exited tells whether child pid has exited, without reaping it
 * (so the harness still reaps it by PID); *status (may be NULL) gets its
 * wait status. Returns 1 if it exited, 0 if it runs, -1 on error. */
int campaign_exited(pid_t pid, int *status);

/* campaign_sleep_ms sleeps ms milliseconds. */
void campaign_sleep_ms(unsigned ms);

#endif /* SLUICE_TEST_CAMPAIGN_H */
