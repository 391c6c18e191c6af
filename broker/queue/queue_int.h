/*
 * queue_int.h - inside the queue folder: the table between queue.c (the
 * front every caller uses) and the two ways a level keeps its ready
 * records, its views: in key order (FIFO, queue_fifo.c) or by tag in turn
 * (fair, queue_fair.c); and the undo list's hooks (queue_commit.c).
 *
 * queue.c does what is the same for both views (the counts a settlement
 * changes, dead letters, expiry, the corrupt records it moves aside) and
 * asks the level's view for the rest through queue_view_of. A view never
 * calls queue.c, and queue_commit.c reaches the views through the same
 * table, so the files call one way: queue.c -> queue_commit.c -> views.
 */
#ifndef SLUICE_QUEUE_INT_H
#define SLUICE_QUEUE_INT_H

#include "queue.h"

typedef struct queue_view {
    const char *name;
    /* append stores rec at the tail of rec->level and counts it. */
    int (*append)(queue *q, const store_rec *rec);
    /* take reads and leases the next ready record (queue_take's contract);
     * SL_ECORRUPT with *key naming a record that failed its check, already
     * out of the view's way, for the front to quarantine. */
    int (*take)(queue *q, unsigned level, uint64_t *key, store_rec *rec);
    /* ready makes the record at key ready again at its place. SL_ENOMEM. */
    int (*ready)(queue *q, unsigned level, uint64_t key);
    /* unlease follows the record at key leaving its lease. */
    void (*unlease)(queue *q, unsigned level, uint64_t key);
    /* head reads the enqueue time and cost of the record take would take:
     * SL_OK, SL_ENOTFOUND, or SL_ECORRUPT with *bad out of the way. */
    int (*head)(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost, uint64_t *bad);
    /* oldest returns the enqueue time (wall ns) of the oldest ready record,
     * 0 when it cannot tell. Called only when some are ready. */
    uint64_t (*oldest)(queue *q, unsigned level);
    /* gone follows the ready record at key leaving other than by a take. */
    void (*gone)(queue *q, unsigned level, uint64_t key);
    /* commit_ended follows the end of the commit that was out (rc its result). */
    void (*commit_ended)(queue *q, unsigned level, int rc);
    /* committed tells whether the record at key is durable. */
    int (*committed)(const queue *q, unsigned level, uint64_t key);
    /* close frees what the view holds for level. */
    void (*close)(queue *q, unsigned level);
    /* waiting tells whether the stored record at key is ready (not out
     * with a consumer), by the view's invariant: at or past its cursor, or
     * among its returned keys. O(returned keys) at worst. */
    int (*waiting)(const queue *q, unsigned level, uint64_t key);
} queue_view;

extern const queue_view queue_fifo_view, queue_fair_view;

/* queue_view_of returns the view lv is served by. */
static inline const queue_view *queue_view_of(const queue_level *lv)
{
    return lv->fair ? &queue_fair_view : &queue_fifo_view;
}

/* queue_make_ready makes the record at key of level ready again at its
 * place, through the level's view. SL_OK, SL_ENOMEM. */
static inline int queue_make_ready(queue *q, unsigned level, uint64_t key)
{
    q->lv[level].head_known = 0;
    return queue_view_of(&q->lv[level])->ready(q, level, key);
}

/* queue_unleased notes a leased record that a write of the open transaction
 * took out of its lease, to be made ready again if the commit fails
 * (queue_commit_ended). */
void queue_unleased(queue *q, unsigned level, uint64_t key);

/* queue_deferred_add notes the delete of an ACK taken while a commit is out,
 * for queue_deferred_apply. SL_OK, SL_ENOMEM (logged). */
int queue_deferred_add(queue *q, unsigned level, uint64_t key);

#endif /* SLUICE_QUEUE_INT_H */
