/*
 * queue_waiting.c - a level's waiting messages as an operator sees them:
 * walked in key order without taking them (sluice peek), deleted (sluice
 * purge, sluice delete) or moved to another level's tail (sluice move).
 *
 * A message is waiting when it is ready: stored in its level and not out
 * with a consumer. The level's view says which by its invariant (a record
 * at or past its cursor, or among its returned keys, is ready; the rest
 * below the cursor are leased: queue_int.h, waiting), so telling costs no
 * lookup in the lease table. Leased messages are never touched here: one
 * acknowledged is gone, one given back is ready again in the level it was
 * taken from, where the next walk finds it.
 *
 * A message deleted or moved here leaves its view as an expired one does:
 * its level's count drops, its head cache is dropped, a fair tenant's
 * read-ahead copy is dropped (the view's gone), and the snapshot a later
 * commit reads from is marked unsafe (it still holds the record). A key
 * left among a level's returned keys is passed over when a take pops it
 * (its record is gone), as for an expired message. A moved message joins
 * its new level's view as a requeued dead letter does (made ready at its
 * new tail key, taken once the commit stores it). A refused commit puts
 * all of it back (queue_commit_ended reads the counts again).
 *
 * Costs: a step of a walk is one B-tree seek and a CRC, plus O(returned
 * keys of the level, or of the tag's tenant) to tell whether it waits; a
 * delete one B-tree delete; a move O(record bytes) (store_move).
 */
#include "queue_int.h"

#include "log.h"

int queue_waiting_span(queue *q, unsigned level, const char *tag, size_t len, uint64_t *from, uint64_t *below)
{
    uint32_t id;
    *from = 0;
    *below = UINT64_MAX;
    if (!tag || !q->lv[level].fair)
        return SL_OK;
    int rc = store_tag_find(q->st, tag, len, &id);
    if (rc != SL_OK)
        return rc;
    *from = (uint64_t)id << STORE_TAG_SHIFT;
    *below = (uint64_t)(id + 1) << STORE_TAG_SHIFT;
    return SL_OK;
}

int queue_record_next(queue *q, unsigned level, uint64_t from, uint64_t below, uint64_t *key, store_rec *rec,
                      int *waiting)
{
    if (from >= below)
        return SL_ENOTFOUND;
    int rc = store_seek(q->st, level, from, key, rec);
    if (rc == SL_OK && *key >= below)
        return SL_ENOTFOUND;
    if (rc == SL_OK)
        *waiting = queue_view_of(&q->lv[level])->waiting(q, level, *key);
    return rc;
}

/* left notes that the ready record at key of level is no longer there. */
static void left(queue *q, unsigned level, uint64_t key)
{
    queue_level *lv = &q->lv[level];
    lv->count--;
    lv->head_known = 0;
    q->unsafe = 1; /* a ready record gone that the snapshot still holds */
    queue_view_of(lv)->gone(q, level, key);
}

int queue_waiting_drop(queue *q, unsigned level, uint64_t key)
{
    int rc = store_drop(q->st, level, key);
    if (rc == SL_OK)
        left(q, level, key);
    return rc;
}

int queue_waiting_move(queue *q, unsigned level, uint64_t key, unsigned to_level)
{
    uint64_t to_key;
    int rc = store_move(q->st, level, key, to_level, &to_key);
    if (rc != SL_OK)
        return rc;
    left(q, level, key);
    queue_level *to = &q->lv[to_level];
    if (queue_ready(q, to_level) == 0)
        to->head_known = 0;
    to->count++;
    if (queue_view_of(to)->ready(q, to_level, to_key) != SL_OK) /* (at the tail: a FIFO seek finds it) */
        log_error("queue", "out of memory noting a moved message; it is delivered after a restart");
    return SL_OK;
}

int queue_delayed_drop(queue *q, uint64_t due_ns, uint64_t id, unsigned *level)
{
    int rc = store_delayed_del(q->st, due_ns, id, level);
    if (rc == SL_OK && *level < q->nlevels && q->lv[*level].delayed)
        q->lv[*level].delayed--;
    return rc;
}
