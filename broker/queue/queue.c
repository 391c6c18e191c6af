/*
 * queue.c - levels over the store: the front every caller uses.
 *
 * What is the same however a level is served is done here (the counts a
 * settlement, an expiry or a dead letter changes, the corrupt records set
 * aside, delayed ones too, what a commit that is out allows); the rest is asked of the
 * level's view, FIFO (queue_fifo.c) or fair by tag (queue_fair.c), through
 * the table in queue_int.h. See queue.h for the invariant that keeps taking
 * O(log n). Every function
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
#include "queue_int.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

/* unlease tells the level's view that its record at key left its lease
 * (before the record is made ready again, if it is). */
static void unlease(queue *q, unsigned level, uint64_t key)
{
    queue_view_of(&q->lv[level])->unlease(q, level, key);
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
        queue_view_of(&q->lv[l])->close(q, l);
    }
    queue_fair_tags_free(q);
}

int queue_append(queue *q, const store_rec *rec)
{
    return queue_view_of(&q->lv[rec->level])->append(q, rec);
}

int queue_append_delayed(queue *q, const store_rec *rec, uint64_t due_ns)
{
    int rc = store_append_delayed(q->st, rec, due_ns);
    if (rc == SL_OK) {
        q->lv[rec->level].delayed++;
        q->lv[rec->level].counters.enqueued++;
        if (due_ns < q->next_due_ns)
            q->next_due_ns = due_ns;
    }
    return rc;
}

/* A take or a head look moves at most this many corrupt records out of the
 * way before giving up for the pass (the next pass goes on). */
#define QUEUE_CORRUPT_SKIP 64

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
    lv->counters.corrupt++;
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
    int rc = queue_view_of(lv)->take(q, level, key, rec);
    if (rc == SL_ECORRUPT || (rc == SL_OK && rec->expires_ns && rec->expires_ns <= q->now_wall_ns)) {
        if (rc == SL_OK) {
            lv->leased--;
            lv->counters.dispatched--;
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
    const queue_view *v = queue_view_of(&q->lv[level]);
    for (int tries = 0; tries < QUEUE_CORRUPT_SKIP; tries++) {
        int rc = v->take(q, level, key, rec);
        if (rc != SL_ECORRUPT)
            return rc;
        if ((rc = quarantine(q, level, *key)) != SL_OK)
            return rc;
    }
    return SL_ECORRUPT;
}

int queue_untake(queue *q, unsigned level, uint64_t key)
{
    unlease(q, level, key);
    int rc = queue_make_ready(q, level, key);
    if (rc == SL_OK) {
        q->lv[level].leased--;
        q->lv[level].counters.dispatched--;
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
        q->lv[level].counters.acked++;
        return queue_deferred_add(q, level, key);
    }
    int rc = store_del(q->st, level, key);
    q->lv[level].leased--;
    unlease(q, level, key);
    if (rc == SL_OK || rc == SL_ENOTFOUND) {
        q->lv[level].count--;
        q->lv[level].counters.acked++;
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
        q->lv[level].counters.buried++;
        q->lv[level].head_known = 0;
        q->unsafe = 1; /* a ready record gone that the snapshot still holds */
        queue_view_of(&q->lv[level])->gone(q, level, key);
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
        q->lv[level].counters.buried++;
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
        q->lv[level].counters.buried++;
    }
    return rc;
}

unsigned queue_release_due(queue *q, uint64_t wall_ns, unsigned max)
{
    unsigned moved = 0;
    if (q->next_due_ns > wall_ns)
        return 0;
    for (unsigned tries = 0; moved < max && tries < 2 * max; tries++) {
        unsigned level, counted;
        uint64_t key, id;
        int rc = store_delayed_pop(q->st, wall_ns, &level, &key);
        if (rc == SL_ECORRUPT && store_delayed_set_aside(q->st, wall_ns, &counted, &level, &id) == SL_OK) {
            /* failed its check: skipped in place, a copy among the dead letters; the rest go on coming due */
            if (counted < q->nlevels && q->lv[counted].delayed)
                q->lv[counted].delayed--;
            q->lv[level].dead++;
            q->lv[level].counters.corrupt++;
            continue;
        }
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
    const queue_view *v = queue_view_of(&q->lv[level]);
    for (int tries = 0; tries < QUEUE_CORRUPT_SKIP && queue_ready(q, level); tries++) {
        uint64_t bad;
        int rc = v->head(q, level, enq_ns, cost, &bad);
        if (rc == SL_OK)
            return 1;
        if (rc != SL_ECORRUPT || quarantine(q, level, bad) != SL_OK)
            return 0;
    }
    return 0;
}

uint64_t queue_oldest_ns(queue *q, unsigned level)
{
    if (queue_ready(q, level) == 0)
        return 0;
    return queue_view_of(&q->lv[level])->oldest(q, level);
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
        if (queue_view_of(to)->ready(q, to_level, key) != SL_OK) /* (at the tail: a FIFO seek finds it) */
            log_error("queue", "out of memory noting a requeued message; it is delivered after a restart");
        q->lv[level].dead--;
        q->lv[level].counters.dead_requeued++;
    }
    return rc;
}

int queue_dead_drop(queue *q, unsigned level, uint64_t id, queue_drop why)
{
    int rc = store_dead_del(q->st, level, id);
    if (rc == SL_OK) {
        q->lv[level].dead--;
        if (why == QUEUE_DROP_RETENTION)
            q->lv[level].counters.dead_dropped++;
        else
            q->lv[level].counters.dead_purged++;
    }
    return rc;
}
