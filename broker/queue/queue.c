/*
 * queue.c - levels over the store.
 *
 * See queue.h for the invariant that keeps taking O(log n). Every function
 * that changes a record does so inside the store's open write transaction;
 * nothing here commits. Counters are updated only after the store call
 * succeeded. A failed commit (or a failed write, which fails the commit)
 * is undone by queue_commit_ended (queue_commit.c): the leased records the
 * transaction settled, buried or delayed (noted with queue_unleased as they
 * lose their lease) are made ready again, and the counts are read again
 * from the store, which holds its previous state. Records the open
 * transaction put in a level (appended at the tail, or a delayed message
 * come due at the head) are never taken before it commits
 * (store_key_committed; take steps over such keys in `returned`), so no
 * lease points at a record a failed commit did not store.
 *
 * While a commit is out, reads see the last committed snapshot: see
 * queue_commit_started in queue.h for what taking does then.
 *
 * Costs: taking's are in queue.h; the undo list's (16 bytes per
 * settlement of the open transaction) and a failed commit's recount are in
 * queue_commit.c.
 */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

#define TAKE_LATER 64 /* uncommitted returned keys one take steps over */

/* unlease tells a fair level's tenant that its record at key left its
 * lease (before the record is made ready again, if it is). */
static void unlease(queue *q, unsigned level, uint64_t key)
{
    if (q->lv[level].fair)
        queue_fair_unlease(q, level, key);
}

int queue_open(queue *q, store *st, unsigned nlevels, const store_level_info *info)
{
    uint64_t delayed[PROTO_MAX_LEVELS] = {0};
    memset(q, 0, sizeof *q);
    q->st = st;
    q->nlevels = nlevels;
    store_delayed_counts(st, delayed);
    for (unsigned l = 0; l < nlevels; l++) {
        q->lv[l].count = info[l].count;
        q->lv[l].dead = info[l].dead;
        q->lv[l].delayed = q->delayed_committed[l] = delayed[l];
        tmr_init(&q->lv[l].returned);
    }
    if (store_delayed_first(st, &q->next_due_ns) != SL_OK)
        q->next_due_ns = TMR_NEVER;
    return SL_OK;
}

void queue_close(queue *q)
{
    free(q->undo);
    free(q->deferred);
    q->undo = NULL;
    for (unsigned l = 0; l < q->nlevels; l++) {
        tmr_fini(&q->lv[l].returned);
        queue_fair_close(q, l);
    }
    queue_fair_tags_free(q);
}

uint64_t queue_ready(const queue *q, unsigned level)
{
    const queue_level *lv = &q->lv[level];
    return lv->count > lv->leased ? lv->count - lv->leased : 0;
}

int queue_append(queue *q, const store_rec *rec)
{
    uint64_t key;
    if (q->lv[rec->level].fair)
        return queue_fair_append(q, rec);
    int rc = store_append(q->st, rec, &key);
    if (rc == SL_OK) {
        queue_level *lv = &q->lv[rec->level];
        if (queue_ready(q, rec->level) == 0)
            lv->head_known = 0;
        lv->cost_avg = lv->cost_avg > 0 ? 0.99 * lv->cost_avg + 0.01 * rec->cost : rec->cost;
        q->lv[rec->level].count++;
        q->lv[rec->level].enqueued++;
    }
    return rc;
}

int queue_append_delayed(queue *q, const store_rec *rec, uint64_t due_ns)
{
    int rc = store_append_delayed(q->st, rec, due_ns);
    if (rc == SL_OK) {
        q->lv[rec->level].delayed++;
        q->lv[rec->level].enqueued++;
        if (due_ns < q->next_due_ns)
            q->next_due_ns = due_ns;
    }
    return rc;
}

/* A take or a head look moves at most this many corrupt records out of the
 * way before giving up for the pass (the next pass goes on). */
#define QUEUE_CORRUPT_SKIP 64

static int take(queue *q, unsigned level, uint64_t *key, store_rec *rec);

/* quarantine moves the ready record at key, which failed its check, to the
 * level's dead letters (store_quarantine), so the level goes on with the
 * next one. The record counted as ready; it now counts as dead. */
static int quarantine(queue *q, unsigned level, uint64_t key)
{
    queue_level *lv = &q->lv[level];
    uint64_t id;
    int rc = store_quarantine(q->st, level, key, q->now_wall_ns, &id);
    if (rc != SL_OK)
        return rc;
    lv->count--;
    lv->dead++;
    lv->corrupt++;
    lv->head_known = 0;
    q->unsafe = 1;
    return SL_OK;
}

/* take_frozen is queue_take while a commit is out: reads only (see queue.h). */
static int take_frozen(queue *q, unsigned level, uint64_t *key, store_rec *rec)
{
    queue_level *lv = &q->lv[level];
    if (q->frozen_unsafe)
        lv->commit_wait = 1; /* the snapshot cannot be trusted: what is ready waits for the commit */
    if (q->frozen_unsafe || lv->hold)
        return SL_ENOTFOUND;
    int rc = take(q, level, key, rec);
    if (rc == SL_ECORRUPT || (rc == SL_OK && rec->expires_ns && rec->expires_ns <= q->now_wall_ns)) {
        if (rc == SL_OK) {
            lv->leased--;
            lv->dispatched--;
            unlease(q, level, *key);
        }
        queue_make_ready(q, level, *key); /* below the cursor now: first out of returned */
        lv->commit_wait = 1; /* dealt with (a write) once the commit ends */
        rc = SL_ENOTFOUND;
    }
    if (rc != SL_OK)
        lv->hold = 1;
    return rc;
}

int queue_take(queue *q, unsigned level, uint64_t *key, store_rec *rec)
{
    if (store_committing(q->st))
        return take_frozen(q, level, key, rec);
    for (int tries = 0; tries < QUEUE_CORRUPT_SKIP; tries++) {
        int rc = take(q, level, key, rec);
        if (rc != SL_ECORRUPT)
            return rc;
        if ((rc = quarantine(q, level, *key)) != SL_OK)
            return rc;
    }
    return SL_ECORRUPT;
}

/* take reads the next ready record of level; SL_ECORRUPT with *key naming a
 * record that failed its check (popped from returned, or the cursor moved
 * past it). */
static int take_from(queue *q, unsigned level, uint64_t *key, store_rec *rec, tmr_entry *later,
                     unsigned *nlaterp)
{
    queue_level *lv = &q->lv[level];
    tmr_entry e;
    int rc;
    if (lv->fair)
        return queue_fair_take(q, level, key, rec);
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
    lv->dispatched++;
    lv->head_known = 0;
    return SL_OK;
}

/* take is take_from, with the returned keys that wait for the open
 * transaction's commit (a delayed message come due: store_key_committed)
 * stepped over and put back: nothing is leased that a refused commit would
 * not have stored. */
static int take(queue *q, unsigned level, uint64_t *key, store_rec *rec)
{
    tmr_entry later[TAKE_LATER];
    unsigned nlater = 0;
    int rc = take_from(q, level, key, rec, later, &nlater);
    for (unsigned i = 0; i < nlater; i++)
        tmr_push(&q->lv[level].returned, later[i].at, later[i].id); /* popped: room is there */
    return rc;
}

int queue_make_ready(queue *q, unsigned level, uint64_t key)
{
    queue_level *lv = &q->lv[level];
    lv->head_known = 0;
    if (lv->fair)
        return queue_fair_ready(q, level, key);
    if (key >= lv->cursor)
        return SL_OK; /* the seek will find it */
    return tmr_push(&lv->returned, key, key);
}

int queue_untake(queue *q, unsigned level, uint64_t key)
{
    unlease(q, level, key);
    int rc = queue_make_ready(q, level, key);
    if (rc == SL_OK) {
        q->lv[level].leased--;
        q->lv[level].dispatched--;
    }
    return rc;
}

int queue_requeue(queue *q, unsigned level, uint64_t key)
{
    unlease(q, level, key);
    int rc = queue_make_ready(q, level, key);
    if (rc == SL_OK)
        q->lv[level].leased--;
    return rc;
}

int queue_settle(queue *q, unsigned level, uint64_t key)
{
    if (store_committing(q->st)) { /* the lease ends now, the delete after the commit */
        q->lv[level].leased--;
        unlease(q, level, key);
        q->lv[level].acked++;
        return queue_deferred_add(q, level, key);
    }
    int rc = store_del(q->st, level, key);
    q->lv[level].leased--;
    unlease(q, level, key);
    if (rc == SL_OK || rc == SL_ENOTFOUND) {
        q->lv[level].count--;
        q->lv[level].acked++;
    }
    if (rc != SL_ENOTFOUND)
        queue_unleased(q, level, key);
    return rc;
}

int queue_return(queue *q, unsigned level, uint64_t key, uint32_t attempt, uint64_t due_ns)
{
    queue_level *lv = &q->lv[level];
    int rc = store_set_attempt(q->st, level, key, attempt);
    if (rc == SL_OK && due_ns)
        rc = store_delay(q->st, level, key, due_ns);
    if (rc != SL_OK || due_ns) {
        lv->leased--;
        queue_unleased(q, level, key);
    }
    unlease(q, level, key);
    if (rc != SL_OK)
        return rc;
    if (due_ns) {
        lv->count--;
        lv->delayed++;
        if (due_ns < q->next_due_ns)
            q->next_due_ns = due_ns;
        return SL_OK;
    }
    rc = queue_make_ready(q, level, key);
    if (rc != SL_OK)
        return rc;
    q->unsafe = 1; /* ready again, with an attempt count the snapshot lacks */
    lv->leased--;
    return SL_OK;
}

int queue_expire(queue *q, unsigned level, uint64_t key, uint64_t id, const char *reason, uint64_t now_ns)
{
    store_rec rec;
    int rc = store_get(q->st, level, key, &rec);
    if (rc == SL_OK && rec.id != id)
        rc = SL_ENOTFOUND; /* moved: the key holds another message now */
    if (rc == SL_OK)
        rc = store_bury(q->st, level, key, reason, now_ns);
    if (rc == SL_OK) {
        q->lv[level].count--;
        q->lv[level].dead++;
        q->lv[level].buried++;
        q->lv[level].head_known = 0;
        q->unsafe = 1; /* a ready record gone that the snapshot still holds */
        if (q->lv[level].fair)
            queue_fair_ahead_gone(q, level, key);
    }
    return rc;
}

int queue_expire_delayed(queue *q, uint64_t due_ns, uint64_t id, const char *reason, uint64_t now_ns)
{
    unsigned level;
    int rc = store_bury_delayed(q->st, due_ns, id, reason, now_ns, &level);
    if (rc == SL_OK && level < q->nlevels) {
        q->lv[level].delayed--;
        q->lv[level].dead++;
        q->lv[level].buried++;
    }
    return rc;
}

int queue_ttl_next(queue *q, uint64_t now_ns, queue_ttl_item *out)
{
    return store_ttl_next(q->st, now_ns, out);
}

uint64_t queue_next_id(queue *q)
{
    return store_next_id(q->st);
}

uint64_t queue_level_bytes(queue *q, unsigned level)
{
    return store_level_bytes(q->st, level);
}

int queue_idem_get(queue *q, const void *key, size_t len, uint64_t now_ns, uint64_t *id)
{
    return store_idem_get(q->st, key, len, now_ns, id);
}

int queue_idem_put(queue *q, const void *key, size_t len, uint64_t id, uint64_t expires_ns)
{
    return store_idem_put(q->st, key, len, id, expires_ns);
}

unsigned queue_idem_forget(queue *q, uint64_t now_ns, unsigned max)
{
    return store_idem_expire(q->st, now_ns, max);
}

int queue_bury(queue *q, unsigned level, uint64_t key, uint32_t attempt, const char *reason, uint64_t now_ns)
{
    int rc = store_set_attempt(q->st, level, key, attempt); /* what the dead letter shows */
    if (rc == SL_OK)
        rc = store_bury(q->st, level, key, reason, now_ns);
    q->lv[level].leased--;
    unlease(q, level, key);
    queue_unleased(q, level, key);
    if (rc == SL_OK) {
        q->lv[level].count--;
        q->lv[level].dead++;
        q->lv[level].buried++;
    }
    return rc;
}

unsigned queue_release_due(queue *q, uint64_t wall_ns, unsigned max)
{
    unsigned moved = 0;
    if (q->next_due_ns > wall_ns)
        return 0;
    while (moved < max) {
        unsigned level;
        uint64_t key;
        int rc = store_delayed_pop(q->st, wall_ns, &level, &key);
        if (rc != SL_OK)
            break;
        if (level >= q->nlevels) {
            log_error("queue", "delayed record for level %u beyond the %u levels; left in place",
                      level, q->nlevels);
            break;
        }
        q->lv[level].delayed--;
        q->lv[level].count++;
        if (queue_make_ready(q, level, key) != SL_OK)
            log_error("queue", "out of memory returning a delayed message; it is delivered after restart");
        moved++;
        q->unsafe = 1; /* a ready record the snapshot does not hold yet */
    }
    if (store_delayed_first(q->st, &q->next_due_ns) != SL_OK)
        q->next_due_ns = TMR_NEVER;
    return moved;
}

int queue_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost)
{
    queue_level *lv = &q->lv[level];
    if (lv->fair)
        return queue_fair_head(q, level, enq_ns, cost);
    if (queue_ready(q, level) == 0)
        return 0;
    if (!lv->head_known && store_committing(q->st) && (q->frozen_unsafe || lv->hold))
        return 0;
    if (!lv->head_known) {
        store_rec rec;
        uint64_t key;
        int rc = SL_ECORRUPT;
        for (int tries = 0; tries < QUEUE_CORRUPT_SKIP && rc == SL_ECORRUPT; tries++) {
            key = lv->returned.len ? lv->returned.v[0].id : 0;
            rc = lv->returned.len ? store_get(q->st, level, key, &rec)
                                  : store_seek(q->st, level, lv->cursor, &key, &rec);
            if (rc == SL_ECORRUPT && store_committing(q->st))
                return 0; /* moved out of the way after the commit */
            if (rc == SL_ECORRUPT) { /* out of the way, or it would hide the level from the pick */
                if (lv->returned.len) {
                    tmr_entry e;
                    tmr_pop(&lv->returned, TMR_NEVER, &e);
                } else {
                    lv->cursor = key + 1;
                }
                if (quarantine(q, level, key) != SL_OK || queue_ready(q, level) == 0)
                    return 0;
            }
        }
        if (rc != SL_OK)
            return 0;
        lv->head_ns = rec.enq_ns;
        lv->head_cost = rec.cost ? rec.cost : 1;
        lv->head_known = 1;
    }
    *enq_ns = lv->head_ns;
    *cost = lv->head_cost;
    return 1;
}

uint64_t queue_oldest_ns(queue *q, unsigned level)
{
    queue_level *lv = &q->lv[level];
    uint64_t oldest = 0, key;
    store_rec rec;
    uint32_t cost;
    if (queue_ready(q, level) == 0)
        return 0;
    if (lv->fair) /* the head of the tag whose turn it is */
        return queue_fair_head(q, level, &oldest, &cost) ? oldest : 0;
    if (lv->returned.len && store_get(q->st, level, lv->returned.v[0].id, &rec) == SL_OK)
        oldest = rec.enq_ns;
    if (store_seek(q->st, level, lv->cursor, &key, &rec) == SL_OK && (!oldest || rec.enq_ns < oldest))
        oldest = rec.enq_ns;
    return oldest;
}

/* ---- dead letters ---- */

int queue_dead_next(queue *q, unsigned level, uint64_t after, uint64_t *id, store_rec *rec)
{
    return store_dead_next(q->st, level, after, id, rec);
}

int queue_dead_get(queue *q, unsigned level, uint64_t id, store_rec *rec)
{
    return store_dead_get(q->st, level, id, rec);
}

int queue_dead_requeue(queue *q, unsigned level, uint64_t id, unsigned to_level)
{
    uint64_t key;
    int rc = store_dead_requeue(q->st, level, id, to_level, &key);
    if (rc == SL_OK) {
        queue_level *to = &q->lv[to_level];
        if (queue_ready(q, to_level) == 0)
            to->head_known = 0;
        to->count++;
        if (to->fair && queue_fair_ready(q, to_level, key) != SL_OK)
            log_error("queue", "out of memory noting a requeued message; it is delivered after a restart");
        q->lv[level].dead--;
        q->lv[level].dead_requeued++;
    }
    return rc;
}

int queue_dead_drop(queue *q, unsigned level, uint64_t id, queue_drop why)
{
    int rc = store_dead_del(q->st, level, id);
    if (rc == SL_OK) {
        q->lv[level].dead--;
        if (why == QUEUE_DROP_RETENTION)
            q->lv[level].dead_dropped++;
        else
            q->lv[level].dead_purged++;
    }
    return rc;
}
