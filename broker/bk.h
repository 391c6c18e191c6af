/*
 * bk.h - the broker object: configuration, modules, and the work that spans
 * them (dispatch, ending leases, timers).
 *
 * Only the loop reads the clock: it stores mono_ns and wall_ns here before
 * each step, and everything below takes time from there.
 */
#ifndef SLUICE_BK_H
#define SLUICE_BK_H

#include <stdint.h>

#include "breaker.h"
#include "conf.h"
#include "conn.h"
#include "disp.h"
#include "lease.h"
#include "pool.h"
#include "net.h"
#include "proto.h"
#include "queue.h"
#include "rl.h"
#include "store.h"

#define BK_CREDIT_CAP 100000u
/* The sink: the throttled service every delivery ends up calling. */
typedef struct bk_sink {
    uint64_t rate_milli;      /* configured, units/s x 1000; 0 = unlimited (persisted) */
    uint32_t burst;           /* (persisted) */
    uint64_t max_inflight;    /* most deliveries out at once; 0 = no cap (persisted) */
    uint64_t effective_milli; /* the rate in use: lowered by THROTTLED, raised back (AIMD) */
    uint64_t inflight;        /* deliveries out now */
    rl_bucket bucket;         /* effective rate, burst */
    uint64_t paused_until_ns; /* monotonic: no dispatch before (THROTTLED) */
    uint64_t last_cut_ns, last_raise_ns;
    breaker breaker;          /* stops dispatch when too many deliveries fail */
} bk_sink;

/* Why a lease ended without an ACK. */
typedef enum bk_end {
    BK_END_NACK,       /* the consumer gave it back: charged */
    BK_END_EXPIRED,    /* the lease ran out: charged */
    BK_END_GONE,       /* the consumer disconnected: charged */
    BK_END_UNSENT,     /* the delivery never left the broker: not charged */
    BK_END_LEFT,       /* the consumer said BYE before settling: not charged */
    BK_END_THROTTLED,  /* the sink said "too many requests": not charged */
    BK_END_REJECTED,   /* the consumer says it can never succeed: a dead letter now */
} bk_end;

typedef struct bk {
    conf cfg;
    store *st;
    net *net;
    queue q;
    conn_table conns;
    lease_table leases;
    pool_table pools;
    disp_state disp;
    bk_sink sink;
    uint64_t meter_wake_ns;       /* when dispatch held back by a bucket may go on */
    double dispatch_per_s[PROTO_MAX_LEVELS];  /* smoothed, for the ETA without limits */
    uint64_t sample_dispatched[PROTO_MAX_LEVELS];
    uint64_t picks[PROTO_MAX_LEVELS][DISP_REASON_COUNT_];
    double arrival_per_s[PROTO_MAX_LEVELS];  /* smoothed enqueue rate */
    uint64_t sample_ns, sample_enqueued[PROTO_MAX_LEVELS];
    uint32_t all_mask;            /* bit per configured level */
    int lock_fd;
    uint64_t mono_ns, wall_ns;    /* set by the loop */
    uint64_t started_mono_ns;
    uint64_t next_hb_ns;
    uint64_t next_sweep_ns;       /* idempotency keys to forget */
    uint64_t next_measure_ns;     /* when to recount the map's use */
    uint64_t dirty_since_ns;      /* when the open transaction got its first write */
    uint64_t rx[PROTO_TYPE_COUNT_];
    uint64_t rx_bad, tx_failed;
} bk;

/* bk_open takes the data directory's lock, opens the store, rebuilds the
 * in-memory view and binds. Returns SL_OK or an error (logged). */
int bk_open(const conf *cfg, uint64_t mono_ns, uint64_t wall_ns, bk **out);

/* bk_close releases everything; accepts NULL. */
void bk_close(bk **b);

/* bk_tick runs what is due: expired leases, delayed messages whose time has
 * come, heartbeats. */
void bk_tick(bk *b);

/* bk_dispatch delivers to consumers with credit, round-robin, at most max
 * deliveries. Returns how many it made. */
unsigned bk_dispatch(bk *b, unsigned max);

/* bk_between_commits runs what needs no open transaction: growing the map
 * when it is filling and the disk has room. */
void bk_between_commits(bk *b);

/* bk_next_wake returns the monotonic time of the next timer. */
uint64_t bk_next_wake(bk *b);

/* bk_end_lease ends l without an ACK: requeue (charged unless UNSENT), or
 * bury when the attempts are used up. delay_ms applies to NACK. */
void bk_end_lease(bk *b, lease *l, bk_end why, uint64_t delay_ms);

/* bk_reject buries l's message at once with the consumer's reason. */
void bk_reject(bk *b, lease *l, const char *reason, size_t reason_len);

/* bk_drop_conn ends every lease of c (why: BK_END_GONE, or BK_END_LEFT for
 * a BYE), leaves its pool and forgets c. */
void bk_drop_conn(bk *b, conn *c, bk_end why);

/* bk_throttled ends l after THROTTLED: the message goes back to the head of
 * its level uncharged, dispatch to the sink pauses for retry_ms (0: the
 * configured backoff) and the sink rate is cut, at most once per second. */
void bk_throttled(bk *b, lease *l, uint64_t retry_ms);

/* bk_sink_apply makes the sink bucket follow its settings (after a change). */
void bk_sink_apply(bk *b);

/* bk_level_apply makes level's buckets follow its rate settings. */
void bk_level_apply(bk *b, unsigned level);

/* bk_eta_ms returns the expected time to drain level's ready backlog. */
uint64_t bk_eta_ms(const bk *b, unsigned level);

/* bk_ack settles l after an ACK: the message is deleted. */
int bk_ack(bk *b, lease *l);

/* bk_join_pool moves c into pool p (leaving its old pool) and tells both
 * pools' members their new shares. */
void bk_join_pool(bk *b, conn *c, pool *p);

/* bk_pool_changed tells every member of p its share (POOL). */
void bk_pool_changed(bk *b, pool *p);

/* bk_level_rule returns the level of the first tag rule matching tag (a
 * NUL-terminated string), or -1. */
int bk_level_rule(const bk *b, const char *tag);

/* bk_send_failed is net_flush's failure callback. */
void bk_send_failed(void *ctx, const uint8_t *rid, size_t rid_len, uint64_t token, int err);

/* bk_reply queues m for the peer rid, to leave now or after the commit
 * (ENOMEM is counted and dropped). */
void bk_reply(bk *b, const uint8_t *rid, size_t rid_len, const proto_msg *m, net_when when);

/* bk_reply_error queues ERROR {code, msg, seq (when has_seq)}. */
void bk_reply_error(bk *b, const uint8_t *rid, size_t rid_len, int has_seq, uint64_t seq, int code,
                    const char *msg, net_when when);

/* bk_consumers returns the connections that have granted credit. */
size_t bk_consumers(const bk *b);

/* bk_commit_due tells whether the loop must commit this pass: a reply waits
 * for it, or the oldest uncommitted write is ack_flush_ms old. */
int bk_commit_due(bk *b);

#endif /* SLUICE_BK_H */
