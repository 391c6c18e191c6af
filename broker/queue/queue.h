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
 *
 * queue is the only caller of the store's message operations (append, take,
 * settle, return, bury, expire, delay, the TTL index, idempotency keys, level
 * sizes): whoever changes a message changes the counters with it. The store's
 * commit, its settings blobs and the read-only lookups of explain are used
 * directly by loop, settings and explain.
 */
#ifndef SLUICE_QUEUE_H
#define SLUICE_QUEUE_H

#include <stdint.h>

#include "proto.h"
#include "store.h"
#include "tmr.h"

/* A level's counters since start: what stats and /metrics report. The
 * queue counts what it does; settle and deliver count the rest. */
typedef struct queue_counters {
    uint64_t enqueued, dispatched, acked, nacked, expired, buried;
    uint64_t dead_requeued, dead_purged, dead_dropped; /* dead letters requeued, purged, dropped by retention */
    uint64_t corrupt;   /* records that failed their check, set aside with a copy in dead letters */
    uint64_t throttled; /* deliveries the sink refused (THROTTLED), whatever the scope */
    uint64_t throttled_tag; /* ... of them, for their tag alone (scope tag; settle_tag.c) */
} queue_counters;

/* A level's view of its records: how many, where the next ready one is,
 * what a commit that is out holds back; and its counters. How a level is
 * served (its scheduling settings) is not the queue's: see disp_policy. */
typedef struct queue_level {
    uint64_t count;     /* records in q.<L>: ready + leased */
    uint64_t leased;
    uint64_t delayed;
    uint64_t dead;
    uint64_t cursor;    /* next key to seek from */
    uint64_t head_ns;   /* cached: enqueue time of the next message to leave */
    uint32_t head_cost; /* cached: its cost */
    int head_known;     /* head_ns and head_cost are valid */
    tmr returned;       /* ready keys below cursor (at = key) */
    int hold;           /* frozen: nothing more from this level until the commit ends */
    int commit_wait;    /* frozen: a confirmed message of it is only in the commit that is out */
    double cost_avg;    /* smoothed cost of appended messages, for the ETA */
    struct queue_fair *fair; /* served fair by tag (queue_fair.c); NULL: FIFO */
    queue_counters counters;
} queue_level;

typedef struct queue {
    store *st;
    unsigned nlevels;
    uint64_t next_due_ns; /* earliest delayed record (wall clock) or TMR_NEVER */
    uint64_t now_wall_ns; /* the pass's wall clock, set by the loop: dates quarantined records */
    int unsafe;           /* a write since the last LMDB commit made a record ready that the snapshot shows otherwise */
    int frozen_unsafe;    /* the transaction being committed did: no dispatch until it ends */
    struct queue_undo *undo; /* leased records the open transaction settled: ready again if it fails */
    uint64_t delayed_committed[PROTO_MAX_LEVELS]; /* lv[].delayed as last committed */
    uint64_t delayed_sent[PROTO_MAX_LEVELS];      /* lv[].delayed as of the commit out */
    size_t nundo, capundo;
    size_t nundo_sealed;  /* the first nundo_sealed belong to the commit that is out */
    struct queue_undo *deferred; /* deletes of ACKs taken while a commit was out (queue_deferred_apply) */
    size_t ndeferred, capdeferred;
    struct tagset *tags;  /* per-tag settings of fair levels (tagset.h); NULL: none */
    struct tagthrottle *throttled; /* tags throttled on their own (tagthrottle.h); NULL: none yet */
    uint64_t now_ns;      /* the dispatch's monotonic clock, set by deliver.c: tag buckets */
    queue_level lv[PROTO_MAX_LEVELS];
} queue;

/* queue_open builds the view from what store_open found. O(levels +
 * delayed). Returns SL_OK. */
int queue_open(queue *q, store *st, unsigned nlevels, const store_level_info *info);
void queue_close(queue *q);

/* queue_ready returns the messages of level that may be delivered now. */
static inline uint64_t queue_ready(const queue *q, unsigned level)
{
    const queue_level *lv = &q->lv[level];
    return lv->count > lv->leased ? lv->count - lv->leased : 0;
}

/* queue_quarantined tells whether level's stored trees failed the store's
 * checks at open (store_check.c): nothing is read from it, it counts
 * nothing ready, and queue_quarantined_msgs says how many messages
 * (queued and dead) it holds as LMDB counted them. O(1). */
static inline int queue_quarantined(const queue *q, unsigned level)
{
    return store_level_quarantined(q->st, level);
}

static inline uint64_t queue_quarantined_msgs(const queue *q, unsigned level)
{
    return store_quarantined_msgs(q->st, level);
}

/* queue_append stores rec at the tail of rec->level. */
int queue_append(queue *q, const store_rec *rec);

/* queue_append_delayed stores rec among the delayed records, due at due_ns
 * (wall clock). */
int queue_append_delayed(queue *q, const store_rec *rec, uint64_t due_ns);

/* queue_take marks the next ready message of level as leased and reads it:
 * *key and *rec (rec's pointers valid until the next call into the queue or the store). Returns
 * SL_OK, SL_ENOTFOUND (nothing ready), or a store error. */
int queue_take(queue *q, unsigned level, uint64_t *key, store_rec *rec);

/* queue_untake undoes a take that never reached the consumer: the message is
 * ready again at its place and no attempt is charged. */
int queue_untake(queue *q, unsigned level, uint64_t key);

/* queue_requeue makes a leased message ready again at its place, charging
 * nothing (a delivery the sink refused). */
int queue_requeue(queue *q, unsigned level, uint64_t key);

/* queue_settle deletes a leased message (it was acknowledged). While a
 * commit is out the lease ends at once and the delete waits for the commit's
 * end (queue_deferred_apply); the level's count drops with the delete.
 * SL_ENOMEM when the deferred delete cannot be noted (logged: the message
 * stays stored, and is delivered again after a restart). */
int queue_settle(queue *q, unsigned level, uint64_t key);

/* queue_return gives a leased message back, charging attempt (its new stored
 * attempt count), at once (due_ns == 0) or delayed until due_ns (wall). */
int queue_return(queue *q, unsigned level, uint64_t key, uint32_t attempt, uint64_t due_ns);

/* queue_expire moves the ready (not leased) message id at key of level to
 * its level's dead letters: its time to live ran out while it waited.
 * SL_ENOTFOUND when no record with that id is there any more (a stale
 * index entry). */
int queue_expire(queue *q, unsigned level, uint64_t key, uint64_t id, const char *reason, uint64_t now_ns);

/* queue_expire_delayed moves delayed message id, due at due_ns, to its
 * level's dead letters. SL_ENOTFOUND when it is no longer delayed there. */
int queue_expire_delayed(queue *q, uint64_t due_ns, uint64_t id, const char *reason, uint64_t now_ns);

/* An entry of the expiry index (store_ttl_item): where is a level (loc: the
 * order key) or QUEUE_TTL_DELAYED (loc: the due time). May be stale. */
typedef store_ttl_item queue_ttl_item;
#define QUEUE_TTL_DELAYED STORE_TTL_DELAYED

/* queue_ttl_next takes the earliest expiry-index entry due at now_ns (wall)
 * into *out. SL_ENOTFOUND when none is due. */
int queue_ttl_next(queue *q, uint64_t now_ns, queue_ttl_item *out);

/* queue_next_id returns a new message id (persisted with the pass). */
uint64_t queue_next_id(queue *q);

/* While a commit is out (store_committing), reads see the last committed
 * snapshot, which can lag the view: records appended or moved by the
 * transaction being committed are missing from it. queue_take then never
 * writes: a record that would need a write (expired, corrupt), or one
 * missing from the snapshot, is put back and its level held until the
 * commit ends; and when the transaction made records ready through writes
 * the snapshot cannot show (a NACK's new attempt count, a delayed message
 * come due, an expiry), nothing is taken at all. queue_commit_started and
 * queue_commit_ended bracket the commit (loop.c). */
void queue_commit_started(queue *q);

/* queue_commit_frozen tells the queue that the commit that started is an
 * LMDB commit (the store is frozen; store_committing): the snapshot reads
 * will see after it is what the open transaction holds now. A log record
 * (store_logging) leaves no snapshot behind: what the batches since the last
 * LMDB commit made ready differently stays noted (unsafe) until one. */
void queue_commit_frozen(queue *q);

/* queue_commit_ended ends the commit with its result rc. When it failed
 * (the store's previous state is intact), the view is put back: each leased
 * record the transaction deleted, buried or delayed is ready again at its
 * place, and the counts are read again from the store. */
void queue_commit_ended(queue *q, int rc);

/* queue_deferred_apply makes the deletes that ACKs noted while the commit
 * was out part of the open transaction (after queue_commit_ended, once the
 * store may write again). A failure to delete is logged: the message stays
 * stored and is delivered again after a restart. O(deferred). */
void queue_deferred_apply(queue *q);

/* queue_committed tells whether the record at key of level is durable (a
 * DELIVER of it may leave before the pass's commit). */
int queue_committed(const queue *q, unsigned level, uint64_t key);

/* queue_level_bytes returns the bytes of pages level occupies on disk. */
uint64_t queue_level_bytes(queue *q, unsigned level);

/* queue_idem_get finds an idempotency key still within its window at now_ns
 * (wall): SL_OK with the id it first named, or SL_ENOTFOUND. */
int queue_idem_get(queue *q, const void *key, size_t len, uint64_t now_ns, uint64_t *id);

/* queue_idem_put records key -> id until expires_ns, committed with the
 * message it names. Keys are 1..255 bytes (SL_EINVAL otherwise). */
int queue_idem_put(queue *q, const void *key, size_t len, uint64_t id, uint64_t expires_ns);

/* queue_idem_forget forgets at most max keys whose window ended by now_ns;
 * returns how many. */
unsigned queue_idem_forget(queue *q, uint64_t now_ns, unsigned max);

/* queue_bury moves a leased message to its level's dead letters, recording
 * attempt, the deliveries charged to it, and reason. */
int queue_bury(queue *q, unsigned level, uint64_t key, uint32_t attempt, const char *reason, uint64_t now_ns);

/* queue_release_due moves every delayed message due at or before wall_ns to
 * the head of its level (at most max of them). Returns how many moved. */
unsigned queue_release_due(queue *q, uint64_t wall_ns, unsigned max);

/* queue_oldest_ns returns the enqueue time (wall ns) of level's oldest ready
 * message of any tag (a tag held by its limit or pause included), or 0
 * when none is ready. FIFO: two B-tree reads. Fair: the least of the
 * tenants' heads in publish order, O(tenants) in memory, plus a seek for
 * each tenant whose head moved since the last call without its read-ahead
 * knowing where to (queue_fair.c), and one read. */
uint64_t queue_oldest_ns(queue *q, unsigned level);

/* queue_head reads the enqueue time and cost of the message queue_take would
 * take next, cached until the level's head changes. Returns 0 (and sets
 * nothing) when none is ready. */
int queue_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost);

/* ---- dead letters (dead.c is their only user) ---- */

/* queue_dead_next reads the dead letter of level with the smallest id above
 * after (store_dead_next). SL_ENOTFOUND when none. */
int queue_dead_next(queue *q, unsigned level, uint64_t after, uint64_t *id, store_rec *rec);

/* queue_dead_get reads dead letter id of level. SL_ENOTFOUND if absent. */
int queue_dead_get(queue *q, unsigned level, uint64_t id, store_rec *rec);

/* queue_dead_requeue moves dead letter id of level to the tail of to_level,
 * revived (attempt and expiry 0), ready at once. */
int queue_dead_requeue(queue *q, unsigned level, uint64_t id, unsigned to_level);

/* queue_dead_drop deletes dead letter id of level: purged by an operator,
 * or dropped by retention (counted apart). */
typedef enum queue_drop { QUEUE_DROP_PURGE, QUEUE_DROP_RETENTION } queue_drop;
int queue_dead_drop(queue *q, unsigned level, uint64_t id, queue_drop why);

/* ---- waiting messages, for operators (queue_waiting.c) ----
 *
 * A waiting message is a ready one: stored in its level, not out with a
 * consumer. Leased messages are never touched by these. */

/* queue_waiting_span gives the keys of level that may hold tag's messages,
 * [*from, *below): tag's run in a fair level; the whole level for a FIFO
 * level (whose caller compares tags) or when tag is NULL. SL_ENOTFOUND
 * when a fair level cannot hold the tag (it never had an id). */
int queue_waiting_span(queue *q, unsigned level, const char *tag, size_t len, uint64_t *from, uint64_t *below);

/* queue_record_next reads the first record of level with a key in
 * [from, below) into *key and *rec (valid until the next call into the
 * queue or the store) and says in *waiting whether it is ready (0: out
 * with a consumer). SL_ENOTFOUND past the span's last; SL_ECORRUPT with
 * *key naming a record that failed its check (step past it). One seek. */
int queue_record_next(queue *q, unsigned level, uint64_t from, uint64_t below, uint64_t *key, store_rec *rec,
                      int *waiting);

/* queue_waiting_drop deletes the waiting message at key of level (purge, delete);
 * queue_waiting_move moves it to the tail of to_level (another level), keeping id,
 * tag, body, cost, attempts and time to live. Store errors as
 * store_drop and store_move. */
int queue_waiting_drop(queue *q, unsigned level, uint64_t key);
int queue_waiting_move(queue *q, unsigned level, uint64_t key, unsigned to_level);

/* queue_delayed_drop deletes delayed message id (due at due_ns); its level
 * into *level. SL_ENOTFOUND when it is not delayed there. */
int queue_delayed_drop(queue *q, uint64_t due_ns, uint64_t id, unsigned *level);

/* ---- levels served fair by tag (queue_fair.c) ----
 *
 * A fair level keeps its records under tag-led keys (store.h) and, in
 * memory, one tenant per tag with something ready or leased: a cursor (the
 * tag's invariant is the level's, above, within its run of keys), its
 * returned keys, and its leased count. Taking asks the deficit round robin
 * (drr.h) whose turn it is and takes that tag's head, so one tag's backlog
 * never delays the others. queue.c reaches it through the level's view
 * (queue_int.h), as it reaches a FIFO level's (queue_fifo.c). */

/* queue_fair_set makes level fair (fair != 0) or FIFO. SL_ESTATE unless the
 * level holds nothing (ready, leased or delayed) when its layout changes;
 * SL_ENOMEM. Enabling on a level with records rebuilds the waiting tags by
 * jumping from tag to tag (only at load: settings_load). */
int queue_fair_set(queue *q, unsigned level, int fair, int loading);

/* queue_fair_bytes returns the bytes level's tenants hold in memory, and
 * their number in *tenants. */
size_t queue_fair_bytes(const queue *q, unsigned level, uint32_t *tenants);

/* queue_fair_place tells, for the ready record at key of fair level, its
 * tag's id and how many of that tag's ready records are ahead of it
 * (counted up to max, then max). SL_ENOTFOUND when the level is FIFO. */
int queue_fair_place(queue *q, unsigned level, uint64_t key, uint32_t *tag, uint64_t *ahead, uint64_t max);


/* queue_fair_tags_changed follows a change of q->tags (tag.set, tag.pause,
 * a reload): the in-flight counts are counted again from the leased tags,
 * every tag held by a pause or a cap is looked at again, and each tag takes
 * its new weight at its next pick. O(tenants of fair levels). */
void queue_fair_tags_changed(queue *q);

/* queue_fair_next_ns returns when the earliest tag of level held by its rate
 * may go again (DRR_NEVER / UINT64_MAX: none); 0 for a FIFO level. */
uint64_t queue_fair_next_ns(const queue *q, unsigned level);

/* One waiting or leased tag of a fair level, for tag.list. */
typedef struct queue_fair_tag {
    uint32_t tag;
    int rule;           /* its pattern (tagset index), or TAGSET_NONE */
    int paused;
    uint64_t depth;     /* ready records, counted up to QUEUE_FAIR_COUNT_MAX (and the budget) */
    uint64_t leased;
    uint64_t oldest_ns; /* enqueue time of its head (wall), 0 when none ready */
} queue_fair_tag;
#define QUEUE_FAIR_COUNT_MAX 100000

/* queue_fair_tags fills out[0..max) with level's tags, at most max; returns
 * how many there are in all (which may be more). Each tag's depth costs a
 * seek for its head and a cursor step per ready key (no record read), up to
 * QUEUE_FAIR_COUNT_MAX a tag and *budget steps in all (*budget goes down by
 * what was counted; a tag the budget cut has counted 0). */
uint32_t queue_fair_tags(queue *q, unsigned level, queue_fair_tag *out, uint32_t max, uint64_t *budget);

/* queue_fair_limits_ms returns how long level's waiting records of tags
 * with a rate limit need at those rates, at least: the longest of each
 * bucket's backlog (the tags of a shared pattern together, a tag with
 * --each alone) times cost_avg over its slowest window's rate; 0 when no
 * waiting tag is limited. Their records are counted key by key, at most
 * QUEUE_FAIR_ETA_KEYS a call (past that, a lower bound). */
#define QUEUE_FAIR_ETA_KEYS 20000
uint64_t queue_fair_limits_ms(queue *q, unsigned level, double cost_avg);

/* queue_fair_hold names what holds tag of fair level (a pause, its rate, its
 * in-flight cap) at the dispatch's last clock: TAGSET_GO (0) when nothing. */
int queue_fair_hold(queue *q, unsigned level, uint32_t tag);

/* queue_fair_tags_free frees q->tags and q->throttled (queue_close). */
void queue_fair_tags_free(queue *q);

#endif /* SLUICE_QUEUE_H */
