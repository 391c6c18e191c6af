/*
 * queue_fair.c - levels served fair by tag: one FIFO per tag inside a
 * level, and a deficit round robin (drr.c) choosing among them.
 *
 * A fair level's records sit under keys tag_id << 40 | seq (store.h), so a
 * tag's messages are one run of keys in publish order. Each tenant (a tag
 * with something ready or leased) has, like a FIFO level, a cursor and a
 * heap of returned keys: every record of its run at or above the cursor is
 * ready, the ready ones below it are exactly those in `returned`, the rest
 * below it are leased. Taking from a tenant is one heap pop or one seek.
 *
 * Which tenant: the drr set holds the tenants that may have something
 * ready. It learns of a tenant when a record of it becomes ready (append,
 * return, a delayed message coming due) and forgets it when a take leaves
 * nothing after it in its run, or when a pick finds its run empty (its
 * records expired while they waited): so nothing has to count a tag's
 * records, and a restart needs no count either. "Nothing after it" costs
 * no second seek: the seek that reads a tenant's head from its run steps
 * its cursor one key further (store_tag_head: a key, no record, almost
 * always on the same page); a head taken from `returned` looks past the
 * tenant's cursor for a key (store_tag_peek). A tenant whose run goes on
 * past its head gets a read-ahead buffer (queue_fair_ahead.c): its next
 * records, copied by one seek, serve its next takes without one; that file
 * says what drops a copy. Its acknowledged records are deleted from LMDB
 * in batches, in key order (store_gone.c): they lie below its cursor, and
 * a new tenant, whose reads start at its run's first key, has them deleted
 * first (get). A tenant whose head is not committed yet
 * (or, while a commit is out, missing from the snapshot) is blocked until
 * the next commit ends, so it holds up no one and no clock is involved.
 *
 * explain's place for a ready record (queue_fair_place): its tenant's
 * returned keys below it, plus the keys of its run between the cursor and
 * it, counted by stepping one cursor from one seek (store_tag_count), up to
 * explain's limit.
 *
 * Restart (queue_fair_set while loading): one store_tag_span per tag that
 * has records: two seeks each, O(tags log n), never reading every message.
 *
 * Per-tag settings (queue_fair_tag.c): a tenant takes its weight from the
 * pattern that matches its tag, and the pick asks queue_fair_tag_gate
 * about the head of the tag whose turn it is; a tag held by its pause,
 * rate or in-flight cap is set aside in the drr and the next tag's turn
 * comes (no head-of-line blocking). A take charges the tag's bucket.
 *
 * Memory: a tenant is 48 bytes in a dense array plus a 4-byte hash slot at
 * a load of at most 1/2, plus its drr record (drr.h, at most 240 bytes
 * before a shrink) while it waits, plus 16 bytes per returned key. A tenant
 * with nothing ready or leased is forgotten.
 *
 * A delayed message coming due goes back to the head of its own tag's run,
 * a dead letter requeued into a fair level to its tail (store_tag_key);
 * queue_fair_ready then puts it among the tenant's returned keys or past
 * its cursor, like any record made ready.
 */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

#include "drr.h"
#include "grow.h"
#include "hash.h"
#include "log.h"
#include "queue_fair_int.h"
#include "tagset.h"

const hash_ops queue_fair_tenant_ops = {queue_fair_tenant_hash, queue_fair_tenant_is};

/* tenant_require finds tag's tenant, or makes it: a new tenant's reads
 * start at its run's first key, so making one applies the store's waiting
 * deletes first (store_gone_flush). NULL when out of memory. */
static tenant *tenant_require(store *st, struct queue_fair *f, uint32_t tag)
{
    tenant *tn = queue_fair_find(f, tag);
    if (tn)
        return tn;
    if (f->n == f->cap) {
        tenant *t = grow_array(f->t, &f->cap, (size_t)f->n + 1, sizeof *t, 16);
        if (!t)
            return NULL;
        f->t = t;
    }
    if (hash_fit(&f->index, f->n + 1, &queue_fair_tenant_ops, f) != SL_OK)
        return NULL;
    /* its reads start at its run's first key: acknowledged records must be
     * gone from the store by then, not waiting for their batch (store_gone.c;
     * a failure poisons the pass, whose reads and commit then fail) */
    store_gone_flush(st);
    tn = &f->t[f->n];
    memset(tn, 0, sizeof *tn);
    tn->tag = tag;
    tn->cursor = (uint64_t)tag << STORE_TAG_SHIFT;
    tmr_init(&tn->returned);
    hash_put(&f->index, hash_u32(tag), &tag, &queue_fair_tenant_ops, f, f->n++);
    return tn;
}

/* forget drops tn when nothing of it is ready or leased any more. */
static void forget(struct queue_fair *f, tenant *tn)
{
    if (tn->leased || tn->returned.len || drr_find(&f->d, tn->tag))
        return;
    tmr_fini(&tn->returned);
    queue_fair_ahead_drop(f, tn->tag);
    uint32_t tag = tn->tag;
    hash_remove(&f->index, hash_u32(tag), &tag, &queue_fair_tenant_ops, f);
    /* out of the dense array: the last tenant takes its place */
    uint32_t at = (uint32_t)(tn - f->t), last = f->n - 1;
    if (at != last) {
        uint32_t moved = f->t[last].tag;
        hash_moved(&f->index, hash_u32(moved), &moved, &queue_fair_tenant_ops, f, at);
        f->t[at] = f->t[last];
    }
    f->n--;
    f->t = grow_shrink(f->t, &f->cap, f->n, sizeof *f->t, 256);
    (void)hash_fit(&f->index, f->n, &queue_fair_tenant_ops, f); /* (shrinks: a failure leaves it right) */
}

static int activate(queue *q, struct queue_fair *f, tenant *tn)
{
    if (drr_find(&f->d, tn->tag))
        return SL_OK;
    queue_fair_tag_resolve(q, f, tn);
    return drr_active(&f->d, tn->tag, q->tags ? tagset_weight(q->tags, tn->rule) : 1);
}

static struct queue_fair *fair_new(void)
{
    struct queue_fair *f = calloc(1, sizeof *f);
    if (f)
        drr_init(&f->d, 1);
    return f;
}

static void fair_free(struct queue_fair *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->n; i++)
        tmr_fini(&f->t[i].returned);
    queue_fair_ahead_reset(f);
    free(f->t);
    hash_fini(&f->index);
    free(f->held);
    free(f->capped);
    free(f->paused);
    drr_fini(&f->d);
    free(f);
}

void queue_fair_close(queue *q, unsigned level)
{
    fair_free(q->lv[level].fair);
    q->lv[level].fair = NULL;
}

int queue_fair_set(queue *q, unsigned level, int fair, int loading)
{
    queue_level *lv = &q->lv[level];
    if (!!fair == !!lv->fair)
        return SL_OK;
    if (!loading && (lv->count || lv->leased || lv->delayed))
        return SL_ESTATE;
    if (!fair) {
        queue_fair_close(q, level);
        store_fair_keys(q->st, level, 0, 0);
        lv->cursor = 0; /* FIFO keys start again from the middle: the old cursor may be past them */
        lv->head_known = 0;
        return SL_OK;
    }
    struct queue_fair *f = fair_new();
    if (!f)
        return SL_ENOMEM;
    uint64_t max_seq = 0, last;
    uint32_t tag, from = 0;
    int rc = SL_OK;
    while (from <= STORE_TAG_MAX && !queue_quarantined(q, level) && /* (its trees are never read) */
           (rc = store_tag_span(q->st, level, from, &tag, &last)) == SL_OK) {
        tenant *tn = tenant_require(q->st, f, tag);
        if (!tn || activate(q, f, tn) != SL_OK) {
            rc = SL_ENOMEM;
            break;
        }
        if ((last & STORE_SEQ_MASK) > max_seq)
            max_seq = last & STORE_SEQ_MASK;
        from = tag + 1;
    }
    if (rc != SL_OK && rc != SL_ENOTFOUND) {
        fair_free(f);
        return rc;
    }
    lv->fair = f;
    lv->head_known = 0;
    store_fair_keys(q->st, level, 1, max_seq);
    return SL_OK;
}

int queue_fair_append(queue *q, const store_rec *rec)
{
    queue_level *lv = &q->lv[rec->level];
    uint32_t tag;
    uint64_t key;
    int rc = store_tag_intern(q->st, rec->tag, rec->tag_len, &tag);
    if (rc == SL_OK)
        rc = store_append_tagged(q->st, rec, tag, &key);
    if (rc != SL_OK)
        return rc;
    lv->cost_avg = lv->cost_avg > 0 ? 0.99 * lv->cost_avg + 0.01 * rec->cost : rec->cost;
    lv->count++;
    lv->counters.enqueued++;
    tenant *tn = queue_fair_find(lv->fair, tag);
    int fresh = !tn;
    if (!tn)
        tn = tenant_require(q->st, lv->fair, tag);
    if (tn) {
        queue_fair_ahead_appended(lv->fair, tn);
        if ((fresh || tn->run == RUN_EMPTY) && !lv->fair->gone) { /* nothing of its run before it */
            tn->cursor = key;
            tn->run = RUN_AT_CURSOR;
        }
    }
    if (!tn || activate(q, lv->fair, tn) != SL_OK)
        log_error("queue", "out of memory noting tag %u of level %u; its messages wait for a restart",
                  tag, rec->level);
    return SL_OK;
}

int queue_fair_ready(queue *q, unsigned level, uint64_t key)
{
    struct queue_fair *f = q->lv[level].fair;
    uint32_t tag = (uint32_t)(key >> STORE_TAG_SHIFT);
    tenant *tn = tenant_require(q->st, f, tag);
    if (!tn)
        return SL_ENOMEM;
    if (key < tn->cursor) {
        int rc = tmr_push(&tn->returned, key, key);
        if (rc != SL_OK)
            return rc;
    } else {
        queue_fair_ahead_ready(f, tn, key);
        if (tn->run == RUN_EMPTY && !f->gone) { /* the only one past its cursor */
            tn->cursor = key;
            tn->run = RUN_AT_CURSOR;
        }
    }
    if (!tn->gated)
        drr_unblock(&f->d, tag); /* one its pause or cap holds stays held */
    return activate(q, f, tn);
}

void queue_fair_unlease(queue *q, unsigned level, uint64_t key)
{
    struct queue_fair *f = q->lv[level].fair;
    tenant *tn = queue_fair_find(f, (uint32_t)(key >> STORE_TAG_SHIFT));
    if (tn && tn->leased) {
        tn->leased--;
        queue_fair_tag_unleased(q, f, tn);
        forget(f, tn);
    }
}

/* Tenants looked at by one take or head look before it gives up for the
 * pass (each one either has its head or is found empty and forgotten, one
 * seek each). Empty tenants stay in the turns only when their last take
 * came while a commit was out, or their messages expired: up to 1024 of
 * them cost about a millisecond, and the next pass goes on. */
#define FAIR_TRIES 1024

/* head finds the next ready record of tenant tn without taking it: from
 * returned (*from_returned = 1) or the run past its cursor, and then says
 * in *more whether that run goes on after it (the same seek's next step).
 * SL_ENOTFOUND when its run is empty; SL_ECORRUPT with *key naming a bad
 * record. */
static int head(queue *q, unsigned level, tenant *tn, uint64_t *key, store_rec *rec, int *from_returned,
                int *more)
{
    int rc;
    while (tn->returned.len) {
        *key = tn->returned.v[0].id;
        rc = store_get(q->st, level, *key, rec);
        if (rc == SL_ENOTFOUND && store_committing(q->st)) {
            q->lv[level].commit_wait = 1;
            return QUEUE_FAIR_NOT_YET;
        }
        if (rc != SL_ENOTFOUND) {
            *from_returned = 1;
            return rc;
        }
        tmr_entry e; /* gone while it waited (expired): drop it */
        tmr_pop(&tn->returned, TMR_NEVER, &e);
    }
    *from_returned = 0;
    if (store_committing(q->st) && tn->cursor == (uint64_t)tn->tag << STORE_TAG_SHIFT) {
        /* made anew since it last took (or never took): the snapshot, the
         * last commit's state, may still hold records of its run that were
         * acknowledged since, and its reads would start below them */
        q->lv[level].commit_wait = 1;
        return QUEUE_FAIR_NOT_YET;
    }
    rc = queue_fair_ahead_head(q, level, q->lv[level].fair, tn, key, rec, more);
    if (rc == QUEUE_FAIR_NOT_YET)
        return rc;
    if (rc == SL_ENOTFOUND && store_committing(q->st)) {
        q->lv[level].commit_wait = 1;
        return QUEUE_FAIR_NOT_YET; /* perhaps in the commit that is out */
    }
    if (rc == SL_OK && !store_key_committed_fair(q->st, level, *key))
        return QUEUE_FAIR_NOT_YET;
    return rc;
}

/* pick_head chooses a tenant (drr) and finds its head; empty tenants are
 * forgotten, uncommitted ones wait for the next pass. */
static int pick_head(queue *q, unsigned level, tenant **out, uint64_t *key, store_rec *rec, int *from_returned,
                     int *more)
{
    struct queue_fair *f = q->lv[level].fair;
    for (int tries = 0; tries < FAIR_TRIES; tries++) {
        uint64_t t;
        if (drr_pick(&f->d, q->now_ns, &t) != SL_OK)
            return SL_ENOTFOUND;
        tenant *tn = tenant_require(q->st, f, (uint32_t)t);
        if (!tn)
            return SL_ENOMEM;
        queue_fair_tag_resolve(q, f, tn);
        int rc = head(q, level, tn, key, rec, from_returned, more);
        if (rc == SL_ENOTFOUND) {
            drr_idle(&f->d, t);
            forget(f, tn);
            continue;
        }
        if (rc == QUEUE_FAIR_NOT_YET) { /* out of the ring until a commit ends (queue_fair_commit_ended) */
            if (f->nheld == f->heldcap) {
                uint32_t *h = grow_array(f->held, &f->heldcap, (size_t)f->nheld + 1, sizeof *h, 16);
                if (!h)
                    return SL_ENOTFOUND; /* the level waits for the next pass */
                f->held = h;
            }
            if (drr_block(&f->d, t, DRR_NEVER) != SL_OK)
                return SL_ENOTFOUND;
            f->held[f->nheld++] = (uint32_t)t;
            continue;
        }
        if (rc == SL_OK) { /* its tag's pause, rate or cap: set aside, the next tag's turn */
            int g = queue_fair_tag_gate(q, f, level, tn, rec->cost ? rec->cost : 1);
            if (g < 0)
                return SL_ENOTFOUND; /* out of memory: the level waits for the next pass */
            if (g)
                continue;
        }
        *out = tn;
        return rc;
    }
    return SL_ENOTFOUND;
}

int queue_fair_take(queue *q, unsigned level, uint64_t *key, store_rec *rec)
{
    queue_level *lv = &q->lv[level];
    tenant *tn;
    int from_returned, more = 1;
    if (queue_ready(q, level) == 0)
        return SL_ENOTFOUND;
    int rc = pick_head(q, level, &tn, key, rec, &from_returned, &more);
    if (rc != SL_OK && rc != SL_ECORRUPT)
        return rc;
    if (from_returned) {
        tmr_entry e;
        tmr_pop(&tn->returned, TMR_NEVER, &e);
    } else {
        uint64_t next;
        tn->cursor = *key + 1;
        tn->run = RUN_UNKNOWN;
        if (queue_fair_ahead_taken(lv->fair, tn, *key, &next) && !lv->fair->gone) {
            tn->cursor = next; /* its read-ahead knows its next: nothing lies between */
            tn->run = RUN_AT_CURSOR;
        }
    }
    if (rc == SL_ECORRUPT)
        return rc; /* out of the way; queue.c quarantines it */
    tn->leased++;
    lv->leased++;
    lv->counters.dispatched++;
    lv->head_known = 0;
    drr_charge(&lv->fair->d, tn->tag, rec->cost ? rec->cost : 1);
    if (q->tags && tn->rule != TAGSET_NONE &&
        tagset_charge(q->tags, tn->rule, tn->tag, rec->cost ? rec->cost : 1, q->now_ns) != SL_OK)
        log_error("queue", "out of memory for the bucket of tag %u: it goes unmetered", tn->tag);
    if (!tn->returned.len && !store_committing(q->st)) {
        /* its last ready one? then out of the turns now, and forgotten when
         * settled, so the ring holds no empty tenants for picks to pass by
         * (not while a commit is out: the snapshot may lack some of its run).
         * Taken from its run, the seek that read it has said so already;
         * taken from returned, a look past its cursor (a key, no record). */
        uint64_t next;
        if (from_returned)
            more = store_tag_peek(q->st, level, tn->cursor, &next) != SL_ENOTFOUND;
        if (!more) {
            drr_idle(&lv->fair->d, tn->tag);
            tn->run = RUN_EMPTY;
        }
    }
    return SL_OK;
}

int queue_fair_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost)
{
    tenant *tn;
    uint64_t key;
    store_rec rec;
    int from_returned, more;
    if (queue_ready(q, level) == 0)
        return 0;
    if (pick_head(q, level, &tn, &key, &rec, &from_returned, &more) != SL_OK)
        return 0;
    *enq_ns = rec.enq_ns;
    *cost = rec.cost ? rec.cost : 1;
    return 1;
}

void queue_fair_commit_ended(queue *q, unsigned level, int rc)
{
    struct queue_fair *f = q->lv[level].fair;
    f->gone = 0;
    if (rc != SL_OK) {
        queue_fair_ahead_reset(f); /* the store went back to what its log holds */
        for (uint32_t i = 0; i < f->n; i++) /* records of the batch may be gone, others back */
            f->t[i].run = RUN_UNKNOWN;
    }
    for (uint32_t i = f->nheld; i-- > 0;) /* each resumes as the head: the first held ends first */
        drr_unblock(&f->d, f->held[i]);
    f->nheld = 0;
}

size_t queue_fair_bytes(const queue *q, unsigned level, uint32_t *tenants)
{
    const struct queue_fair *f = q->lv[level].fair;
    if (!f) {
        *tenants = 0;
        return 0;
    }
    size_t b = sizeof *f + f->cap * sizeof *f->t + hash_bytes(&f->index) + drr_bytes(&f->d) +
               queue_fair_ahead_bytes(f);
    for (uint32_t i = 0; i < f->n; i++)
        b += f->t[i].returned.cap * sizeof(tmr_entry);
    *tenants = f->n;
    return b;
}

int queue_fair_place(queue *q, unsigned level, uint64_t key, uint32_t *tag, uint64_t *ahead, uint64_t max)
{
    const struct queue_fair *f = q->lv[level].fair;
    if (!f)
        return SL_ENOTFOUND;
    *tag = (uint32_t)(key >> STORE_TAG_SHIFT);
    *ahead = 0;
    const tenant *tn = queue_fair_find(f, *tag);
    uint64_t from = tn ? tn->cursor : (uint64_t)*tag << STORE_TAG_SHIFT, run = 0;
    if (tn)
        for (size_t i = 0; i < tn->returned.len; i++)
            *ahead += tn->returned.v[i].id < key;
    if (*ahead < max && store_tag_count(q->st, level, from, key, max - *ahead, &run) == SL_OK)
        *ahead += run; /* the run's keys between its cursor and key: one seek, then steps */
    return SL_OK;
}

/* ---- the fair view (queue_int.h) ---- */

static int fair_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost, uint64_t *bad)
{
    (void)bad; /* a corrupt head is moved aside by the take that meets it */
    return queue_fair_head(q, level, enq_ns, cost) ? SL_OK : SL_ENOTFOUND;
}

/* seq_of orders keys of different tags: by publish order (their seq). */
static uint64_t seq_of(uint64_t key)
{
    return key & STORE_SEQ_MASK;
}

/* head_key finds the key of tn's head, the first of its ready records in
 * publish order, when it is known without a read: its least returned key
 * (below the cursor, so below its run), else the cursor's when a record sits
 * there. 0 when not known. */
static uint64_t head_key(const tenant *tn)
{
    if (tn->returned.len)
        return tn->returned.v[0].id;
    return tn->run == RUN_AT_CURSOR ? tn->cursor : 0;
}

/* oldest_key finds the key of the level's oldest ready record (0: none):
 * the least head of all tenants in publish order, whatever holds them back.
 * A tenant whose head is not known, and whose cursor says it could be older
 * than the best known, is looked up (one seek for its first key); outside
 * a commit, and with no gap a failed commit could fill (f->gone), its
 * cursor then moves to that key, so it is known until its next take. */
static uint64_t oldest_key(queue *q, unsigned level, struct queue_fair *f)
{
    uint64_t best = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        uint64_t k = head_key(&f->t[i]);
        if (k && (!best || seq_of(k) < seq_of(best)))
            best = k;
    }
    int keep = !store_committing(q->st) && !f->gone;
    for (uint32_t i = 0; i < f->n; i++) {
        tenant *tn = &f->t[i];
        uint64_t k;
        if (tn->returned.len || tn->run != RUN_UNKNOWN || (best && seq_of(tn->cursor) >= seq_of(best)))
            continue;
        int rc = store_tag_peek(q->st, level, tn->cursor, &k);
        if (rc == SL_ENOTFOUND && keep)
            tn->run = RUN_EMPTY; /* only leased ones */
        if (rc != SL_OK)
            continue;
        if (keep) {
            tn->cursor = k; /* nothing of its run between */
            tn->run = RUN_AT_CURSOR;
        }
        if (!best || seq_of(k) < seq_of(best))
            best = k;
    }
    return best;
}

/* fair_oldest: the level's oldest ready record of any tag, a tag held by
 * its limit or pause included (oldest_key); while a commit is out, reads
 * see the last commit's state, so the figure found last is kept. */
static uint64_t fair_oldest(queue *q, unsigned level)
{
    struct queue_fair *f = q->lv[level].fair;
    if (store_committing(q->st) && f->oldest_ns)
        return f->oldest_ns;
    for (int tries = 0; tries < 2; tries++) {
        store_rec rec;
        uint64_t key = oldest_key(q, level, f);
        if (!key)
            break;
        if (store_get(q->st, level, key, &rec) == SL_OK)
            return f->oldest_ns = rec.enq_ns;
        tenant *tn = queue_fair_find(f, (uint32_t)(key >> STORE_TAG_SHIFT));
        if (tn && !tn->returned.len)
            tn->run = RUN_UNKNOWN; /* not there after all: look again */
    }
    return f->oldest_ns = 0;
}

static int fair_committed(const queue *q, unsigned level, uint64_t key)
{
    return store_key_committed_fair(q->st, level, key);
}

/* fair_gone follows a ready record leaving other than by a take (it
 * expired): its tenant's read-ahead is dropped, its cursor no longer known
 * to hold a record, and no cursor moves over a gap until the commit that
 * carries its delete ends (a failed one would bring the record back). */
static void fair_gone(queue *q, unsigned level, uint64_t key)
{
    struct queue_fair *f = q->lv[level].fair;
    if (!f)
        return;
    queue_fair_ahead_gone(q, level, key);
    tenant *tn = queue_fair_find(f, (uint32_t)(key >> STORE_TAG_SHIFT));
    if (tn && tn->cursor == key)
        tn->run = RUN_UNKNOWN;
    f->gone = 1;
}

/* fair_waiting: a tag with no tenant has nothing leased (a tenant is
 * forgotten only then), so its stored records are all ready; acknowledged
 * ones waiting for their batched delete are gone by the time anything
 * reads the level (store_txn_level deletes them first). */
static int fair_waiting(const queue *q, unsigned level, uint64_t key)
{
    const tenant *tn = queue_fair_find(q->lv[level].fair, (uint32_t)(key >> STORE_TAG_SHIFT));
    if (!tn || key >= tn->cursor)
        return 1;
    for (size_t i = 0; i < tn->returned.len; i++)
        if (tn->returned.v[i].id == key)
            return 1;
    return 0;
}

const queue_view queue_fair_view = {
    "fair",      queue_fair_append, queue_fair_take,         queue_fair_ready, queue_fair_unlease, fair_head,
    fair_oldest, fair_gone,         queue_fair_commit_ended, fair_committed,   queue_fair_close,
    fair_waiting,
};
