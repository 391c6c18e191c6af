/*
 * queue.h - the levels: what is ready, what is out, what waits.
 *
 * queue owns the in-memory view of each level over the store: how many
 * records it holds, how many are leased, and where the next ready message is.
 * Invariant, per level: every record whose key is >= cursor is ready; the
 * ready records below cursor are exactly the keys in `returned`; every other
 * record below cursor is leased. So taking the next message is one heap pop or
 * one B-tree seek, never a scan, and a broker restart (cursor 0, heap empty)
 * makes every record ready again in key order.
 */
#ifndef SLUICE_QUEUE_H
#define SLUICE_QUEUE_H

#include <stdint.h>

#include "proto.h"
#include "rl.h"
#include "store.h"
#include "tmr.h"

typedef struct queue_level {
    uint64_t count;     /* records in q.<L>: ready + leased */
    uint64_t leased;
    uint64_t delayed;
    uint64_t dead;
    uint64_t cursor;    /* next key to seek from */
    uint64_t head_ns;   /* cached: enqueue time of the next message to leave */
    uint32_t head_cost; /* cached: its cost */
    int head_known;     /* head_ns and head_cost are valid */
    /* scheduling settings (admin.c persists them) */
    uint64_t deadline_ms, aging_ms;
    int paused;
    /* metering: settings (persisted) and buckets (memory) */
    uint64_t max_rate_milli, min_rate_milli;
    uint32_t burst;
    rl_bucket ceiling;  /* max_rate, burst */
    rl_bucket guarantee;/* min_rate, burst 1: tokens while served below it */
    double cost_avg;    /* smoothed cost of appended messages, for the ETA */
    uint64_t throttled;
    tmr returned;       /* ready keys below cursor (at = key) */
    /* counters since start */
    uint64_t enqueued, dispatched, acked, nacked, expired, buried;
} queue_level;

typedef struct queue {
    store *st;
    unsigned nlevels;
    uint64_t next_due_ns; /* earliest delayed record (wall clock) or TMR_NEVER */
    queue_level lv[PROTO_MAX_LEVELS];
} queue;

/* queue_open builds the view from what store_open found. O(levels +
 * delayed). Returns SL_OK. */
int queue_open(queue *q, store *st, unsigned nlevels, const store_level_info *info);
void queue_close(queue *q);

/* queue_ready returns the messages of level that may be delivered now. */
uint64_t queue_ready(const queue *q, unsigned level);

/* queue_append stores rec at the tail of rec->level. */
int queue_append(queue *q, const store_rec *rec);

/* queue_append_delayed stores rec among the delayed records, due at due_ns
 * (wall clock). */
int queue_append_delayed(queue *q, const store_rec *rec, uint64_t due_ns);

/* queue_take marks the next ready message of level as leased and reads it:
 * *key and *rec (rec's pointers valid until the next store write). Returns
 * SL_OK, SL_ENOTFOUND (nothing ready), or a store error. */
int queue_take(queue *q, unsigned level, uint64_t *key, store_rec *rec);

/* queue_untake undoes a take that never reached the consumer: the message is
 * ready again at its place and no attempt is charged. */
int queue_untake(queue *q, unsigned level, uint64_t key);

/* queue_requeue makes a leased message ready again at its place, charging
 * nothing (a delivery the sink refused). */
int queue_requeue(queue *q, unsigned level, uint64_t key);

/* queue_settle deletes a leased message (it was acknowledged). */
int queue_settle(queue *q, unsigned level, uint64_t key);

/* queue_return gives a leased message back, charging attempt (its new stored
 * attempt count), at once (due_ns == 0) or delayed until due_ns (wall). */
int queue_return(queue *q, unsigned level, uint64_t key, uint32_t attempt, uint64_t due_ns);

/* queue_expire moves a ready (not leased) message to its level's dead
 * letters: its time to live ran out while it waited. */
int queue_expire(queue *q, unsigned level, uint64_t key, const char *reason, uint64_t now_ns);

/* queue_bury moves a leased message to its level's dead letters. */
int queue_bury(queue *q, unsigned level, uint64_t key, const char *reason, uint64_t now_ns);

/* queue_release_due moves every delayed message due at or before wall_ns to
 * the head of its level (at most max of them). Returns how many moved. */
unsigned queue_release_due(queue *q, uint64_t wall_ns, unsigned max);

/* queue_oldest_ns returns the enqueue time (wall ns) of level's oldest ready
 * message, or 0 when none is ready. Two B-tree reads. */
uint64_t queue_oldest_ns(queue *q, unsigned level);

/* queue_head reads the enqueue time and cost of the message queue_take would
 * take next, cached until the level's head changes. Returns 0 (and sets
 * nothing) when none is ready. */
int queue_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost);

#endif /* SLUICE_QUEUE_H */
