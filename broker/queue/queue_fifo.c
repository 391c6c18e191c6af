/*
 * queue_fifo.c - the FIFO view of a level (queue_int.h): its ready records
 * in key order, which is publish order.
 *
 * A FIFO level keeps a cursor and a heap of returned keys: every record at
 * or after the cursor is ready, and the ready records below it are exactly
 * the returned keys (queue.h). Taking pops the smallest returned key, or
 * seeks from the cursor and moves it past what it read; making a record
 * ready again below the cursor pushes its key. The head (the next record's
 * enqueue time and cost, which the pick asks for on every pass) is cached
 * in the level until it changes.
 *
 * Costs: a take is one heap pop or one B-tree seek; a head look is free
 * while cached, else one read; oldest is two reads.
 */
#include "queue_int.h"

#include "log.h"

#define TAKE_LATER 64 /* uncommitted returned keys one take steps over */

/* take_from reads the next ready record of level; SL_ECORRUPT with *key naming a
 * record that failed its check (popped from returned, or the cursor moved
 * past it). */
static int take_from(queue *q, unsigned level, uint64_t *key, store_rec *rec, tmr_entry *later,
                     unsigned *nlaterp)
{
    queue_level *lv = &q->lv[level];
    tmr_entry e;
    int rc;
    if (queue_ready(q, level) == 0)
        return SL_ENOTFOUND;
    int found = 0;
    unsigned nlater = 0;
    while (!found && nlater < TAKE_LATER && tmr_pop(&lv->returned, TMR_NEVER, &e)) {
        if (!store_key_committed(q->st, level, e.id)) {
            later[nlater++] = e;
            *nlaterp = nlater;
            continue;
        }
        rc = store_get(q->st, level, e.id, rec);
        if (rc == SL_ENOTFOUND && store_committing(q->st)) {
            tmr_push(&lv->returned, e.at, e.id); /* perhaps not committed yet: after the commit */
            lv->commit_wait = 1;
            return rc;
        }
        if (rc == SL_ENOTFOUND)
            continue; /* its time to live ran out while it waited here */
        if (rc == SL_ECORRUPT) {
            *key = e.id;
            return rc;
        }
        if (rc != SL_OK) {
            tmr_push(&lv->returned, e.at, e.id);
            return rc;
        }
        *key = e.id;
        found = 1;
        /* a key can be in the heap twice (a refused commit's head key, put
         * again by a later move, or made ready by its undo too): once out */
        tmr_entry dup;
        while (lv->returned.len && lv->returned.v[0].id == e.id && tmr_pop(&lv->returned, TMR_NEVER, &dup))
            ;
    }
    if (!found) {
        rc = store_seek(q->st, level, lv->cursor, key, rec);
        if (rc == SL_ENOTFOUND && (store_committing(q->st) || nlater)) {
            lv->commit_wait |= store_committing(q->st);
            return rc; /* the rest is in the commit that is out, or the open transaction put it */
        }
        if (rc == SL_ENOTFOUND) {
            log_error("queue", "level %u counts %llu ready but none is stored past its cursor",
                      level, (unsigned long long)queue_ready(q, level));
            lv->count = lv->leased; /* resynchronise rather than spin */
            return SL_ENOTFOUND;
        }
        if (rc == SL_ECORRUPT)
            lv->cursor = *key + 1;
        if (rc != SL_OK)
            return rc;
        if (!store_key_committed(q->st, level, *key))
            return SL_ENOTFOUND; /* appended by the open transaction: taken once it commits */
        lv->cursor = *key + 1;
    }
    lv->leased++;
    lv->counters.dispatched++;
    lv->head_known = 0;
    return SL_OK;
}

/* fifo_take is take_from, with the returned keys that wait for the open
 * transaction's commit (a delayed message come due: store_key_committed)
 * stepped over and put back: nothing is leased that a refused commit would
 * not have stored. */
static int fifo_take(queue *q, unsigned level, uint64_t *key, store_rec *rec)
{
    tmr_entry later[TAKE_LATER];
    unsigned nlater = 0;
    int rc = take_from(q, level, key, rec, later, &nlater);
    for (unsigned i = 0; i < nlater; i++)
        tmr_push(&q->lv[level].returned, later[i].at, later[i].id); /* popped: room is there */
    return rc;
}

static int fifo_append(queue *q, const store_rec *rec)
{
    uint64_t key;
    int rc = store_append(q->st, rec, &key);
    if (rc == SL_OK) {
        queue_level *lv = &q->lv[rec->level];
        if (queue_ready(q, rec->level) == 0)
            lv->head_known = 0;
        lv->cost_avg = lv->cost_avg > 0 ? 0.99 * lv->cost_avg + 0.01 * rec->cost : rec->cost;
        lv->count++;
        lv->counters.enqueued++;
    }
    return rc;
}

static int fifo_ready(queue *q, unsigned level, uint64_t key)
{
    queue_level *lv = &q->lv[level];
    if (key >= lv->cursor)
        return SL_OK; /* the seek will find it */
    return tmr_push(&lv->returned, key, key);
}

static void fifo_unlease(queue *q, unsigned level, uint64_t key)
{
    (void)q, (void)level, (void)key;
}

static int fifo_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost, uint64_t *bad)
{
    queue_level *lv = &q->lv[level];
    if (!lv->head_known && store_committing(q->st) && (q->frozen_unsafe || lv->hold))
        return SL_ENOTFOUND;
    if (!lv->head_known) {
        store_rec rec;
        uint64_t key = lv->returned.len ? lv->returned.v[0].id : 0;
        int rc = lv->returned.len ? store_get(q->st, level, key, &rec) : store_seek(q->st, level, lv->cursor, &key, &rec);
        if (rc == SL_ECORRUPT && store_committing(q->st))
            return SL_ENOTFOUND; /* moved out of the way after the commit */
        if (rc == SL_ECORRUPT) { /* out of the way, or it would hide the level from the pick */
            if (lv->returned.len) {
                tmr_entry e;
                tmr_pop(&lv->returned, TMR_NEVER, &e);
            } else {
                lv->cursor = key + 1;
            }
            *bad = key;
            return SL_ECORRUPT;
        }
        if (rc != SL_OK)
            return SL_ENOTFOUND;
        lv->head_ns = rec.enq_ns;
        lv->head_cost = rec.cost ? rec.cost : 1;
        lv->head_known = 1;
    }
    *enq_ns = lv->head_ns;
    *cost = lv->head_cost;
    return SL_OK;
}

static uint64_t fifo_oldest(queue *q, unsigned level)
{
    queue_level *lv = &q->lv[level];
    uint64_t oldest = 0, key;
    store_rec rec;
    if (lv->returned.len && store_get(q->st, level, lv->returned.v[0].id, &rec) == SL_OK)
        oldest = rec.enq_ns;
    if (store_seek(q->st, level, lv->cursor, &key, &rec) == SL_OK && (!oldest || rec.enq_ns < oldest))
        oldest = rec.enq_ns;
    return oldest;
}

static void fifo_gone(queue *q, unsigned level, uint64_t key)
{
    (void)q, (void)level, (void)key;
}

static void fifo_commit_ended(queue *q, unsigned level, int rc)
{
    (void)q, (void)level, (void)rc;
}

static int fifo_committed(const queue *q, unsigned level, uint64_t key)
{
    return store_key_committed(q->st, level, key);
}

static void fifo_close(queue *q, unsigned level)
{
    (void)q, (void)level;
}

static int fifo_waiting(const queue *q, unsigned level, uint64_t key)
{
    const queue_level *lv = &q->lv[level];
    if (key >= lv->cursor)
        return 1;
    for (size_t i = 0; i < lv->returned.len; i++)
        if (lv->returned.v[i].id == key)
            return 1;
    return 0;
}

const queue_view queue_fifo_view = {
    "fifo",        fifo_append, fifo_take, fifo_ready,        fifo_unlease,   fifo_head,
    fifo_oldest,   fifo_gone,   fifo_commit_ended, fifo_committed, fifo_close, fifo_waiting,
};
