/*
 * queue_fair_ahead.c - read-ahead for levels served fair by tag: the next
 * records of a tenant's run, copied out by the seek that finds its head.
 *
 * Why. A fair level serves its tags in turn, so a take lands on the leaf
 * page of a tag that was last read a whole round earlier: its seek misses
 * the caches at every step inside that page, where a FIFO take finds its
 * page hot. The seek that reads a tenant's head steps on to the next key
 * anyway (to learn whether the run goes on); copying the records it steps
 * over, on the same page, costs a copy each and saves the tenant's next
 * takes a seek each.
 *
 * What is held. A tenant whose run went on past its head when a take last
 * sought it gets a buffer (store_ahead: at most STORE_AHEAD_MAX records in
 * AHEAD_BYTES), filled by its next read with the committed records of its
 * run at or after its cursor, in key order, and whether the run went on
 * past them. A level lends at most AHEAD_TENANTS buffers; a tenant beyond
 * them, or one whose head alone is larger than a buffer, seeks for each
 * take as before. A tenant with a single record waiting never gets one, so
 * a level of 100,000 tags with a message each holds no buffer at all.
 *
 * Why a copy stays right. It holds ready records past the cursor whose
 * publish is durable. The only writes to such records, and what they do:
 *   - expiry buries one (queue_expire): queue_fair_ahead_gone drops the
 *     buffer of that tenant;
 *   - a record made ready past the cursor (a requeued dead letter): the
 *     buffer is dropped when its key falls inside the keys held, and
 *     otherwise notes that the run goes on (queue_fair_ahead_ready);
 *   - a failed commit (the store goes back to what its log holds): every
 *     buffer of the level is dropped (queue_fair_ahead_reset).
 * Publishes append past every key of their run, so a buffer stays a prefix
 * of the run (queue_fair_ahead_appended notes that the run goes on, for the
 * take that empties the buffer); a take moves the cursor past what it
 * serves; settlements touch leased records, below the cursor. And nothing
 * is copied while a checkpoint is out: reads then see the last commit's
 * snapshot, which may still hold records expired or acknowledged since, so
 * a read takes the head alone and keeps nothing (a buffer filled before
 * stays right, since nothing writes until the commit ends).
 *
 * A record decoded from a buffer points into it, and lives until the
 * tenant's next read, as a record read from LMDB lives until the
 * transaction's next write: the take's caller encodes it before either.
 *
 * Where a buffer is: an array of the level's own (AHEAD_TENANTS entries)
 * with an index by tag (hash.h), not the tenant, whose 48 bytes are what
 * every waiting tag costs; the array exists while a buffer is lent.
 *
 * Costs: a read copies up to AHEAD_BYTES and steps a cursor once per record
 * copied; a take served from a buffer decodes (checks the CRC of) its copy
 * and does no seek; finding a tenant's buffer is a probe of the table.
 * Memory: at most AHEAD_TENANTS buffers of AHEAD_BYTES and about 120 bytes
 * each, plus the array's 16 KiB and the index's 8 KiB at most: 1.1 MiB per
 * fair level, freed as tenants are forgotten, counted in the level's tenant
 * bytes (queue_fair_bytes).
 */
#include "queue.h"

#include <stdlib.h>

#include "hash.h"
#include "queue_fair_int.h"

#define AHEAD_BYTES   1024 /* room for records per buffer */
#define AHEAD_TENANTS 1024 /* buffers a level lends at most */

struct ahead_buf {
    uint32_t tag; /* the tenant's */
    store_ahead *a;
};

/* The buffers' index by tag (hash.h). */
static uint32_t buf_hash(const void *owner, uint32_t pos)
{
    return hash_u32(((const struct queue_fair *)owner)->ahead[pos].tag);
}

static int buf_is(const void *owner, uint32_t pos, const void *tag)
{
    return ((const struct queue_fair *)owner)->ahead[pos].tag == *(const uint32_t *)tag;
}

static const hash_ops buf_ops = {buf_hash, buf_is};

static store_ahead *buffer_of(const struct queue_fair *f, const tenant *tn)
{
    uint32_t pos;
    if (!f->nahead || !hash_find(&f->ahead_index, hash_u32(tn->tag), &tn->tag, &buf_ops, f, &pos))
        return NULL;
    return f->ahead[pos].a;
}

/* unlend frees what a level holds for its buffers once none is lent. */
static void unlend(struct queue_fair *f)
{
    free(f->ahead);
    f->ahead = NULL;
    hash_fini(&f->ahead_index);
}

/* lend gives tn an empty buffer, when the level has one to lend. */
static void lend(struct queue_fair *f, const tenant *tn)
{
    if (f->nahead >= AHEAD_TENANTS || (!f->ahead && !(f->ahead = calloc(AHEAD_TENANTS, sizeof *f->ahead))))
        return;
    store_ahead *a = malloc(sizeof *a + AHEAD_BYTES);
    if (!a || hash_fit(&f->ahead_index, f->nahead + 1, &buf_ops, f) != SL_OK) {
        free(a);
        if (!f->nahead) /* nothing lent: no array either */
            unlend(f);
        return;
    }
    a->n = a->i = 0;
    a->more = 0;
    f->ahead[f->nahead] = (struct ahead_buf){tn->tag, a};
    hash_put(&f->ahead_index, hash_u32(tn->tag), &tn->tag, &buf_ops, f, f->nahead++);
}

/* serve points key, rec and more at a's next record. */
static int serve(queue *q, unsigned level, const store_ahead *a, uint64_t *key, store_rec *rec, int *more)
{
    *key = a->key[a->i];
    *more = a->i + 1 < a->n || a->more;
    return store_ahead_rec(q->st, level, a, a->i, rec);
}

int queue_fair_ahead_head(queue *q, unsigned level, struct queue_fair *f, tenant *tn, uint64_t *key,
                          store_rec *rec, int *more)
{
    store_ahead *a = buffer_of(f, tn);
    if (a && a->i < a->n) /* (filled before a commit went out, still right while it is) */
        return serve(q, level, a, key, rec, more);
    if (store_committing(q->st)) /* the snapshot of the last commit: read it, keep nothing of it */
        return store_tag_head(q->st, level, tn->cursor, key, rec, more);
    if (!a) { /* a seek; a buffer for the next reads if the run goes on */
        int rc = store_tag_head(q->st, level, tn->cursor, key, rec, more);
        if (rc == SL_OK && *more)
            lend(f, tn);
        return rc;
    }
    int rc = store_tag_ahead(q->st, level, tn->cursor, a, AHEAD_BYTES, key, rec, more);
    if (rc == SL_ETOOBIG) /* its head alone fills the buffer: read in place, as store_tag_head */
        return SL_OK;
    if (rc != SL_OK)
        return rc;
    if (a->n == 0)
        return QUEUE_FAIR_NOT_YET; /* its head is not committed yet */
    return serve(q, level, a, key, rec, more);
}

int queue_fair_ahead_taken(const struct queue_fair *f, const tenant *tn, uint64_t key, uint64_t *next)
{
    store_ahead *a = buffer_of(f, tn);
    if (a && a->i < a->n && a->key[a->i] == key)
        a->i++;
    if (!a || a->i >= a->n)
        return 0;
    *next = a->key[a->i];
    return 1;
}

void queue_fair_ahead_appended(const struct queue_fair *f, const tenant *tn)
{
    store_ahead *a = buffer_of(f, tn);
    if (a)
        a->more = 1;
}

void queue_fair_ahead_ready(struct queue_fair *f, const tenant *tn, uint64_t key)
{
    store_ahead *a = buffer_of(f, tn);
    if (!a || a->i >= a->n)
        return;
    if (key <= a->key[a->n - 1])
        queue_fair_ahead_drop(f, tn->tag); /* inside the keys held: read again */
    else
        a->more = 1;
}

void queue_fair_ahead_drop(struct queue_fair *f, uint32_t tag)
{
    uint32_t at;
    if (!f->nahead || !hash_find(&f->ahead_index, hash_u32(tag), &tag, &buf_ops, f, &at))
        return;
    free(f->ahead[at].a);
    hash_remove(&f->ahead_index, hash_u32(tag), &tag, &buf_ops, f);
    uint32_t last = --f->nahead; /* the last buffer takes its place */
    if (at != last) {
        uint32_t moved = f->ahead[last].tag;
        hash_moved(&f->ahead_index, hash_u32(moved), &moved, &buf_ops, f, at);
        f->ahead[at] = f->ahead[last];
    }
    if (!f->nahead) /* nothing lent: the array goes too */
        unlend(f);
    else
        (void)hash_fit(&f->ahead_index, f->nahead, &buf_ops, f);
}

void queue_fair_ahead_gone(queue *q, unsigned level, uint64_t key)
{
    struct queue_fair *f = q->lv[level].fair;
    if (f)
        queue_fair_ahead_drop(f, (uint32_t)(key >> STORE_TAG_SHIFT));
}

void queue_fair_ahead_reset(struct queue_fair *f)
{
    for (uint32_t i = 0; i < f->nahead; i++)
        free(f->ahead[i].a);
    f->nahead = 0;
    unlend(f);
}

size_t queue_fair_ahead_bytes(const struct queue_fair *f)
{
    return f->nahead * (sizeof(store_ahead) + AHEAD_BYTES) + (f->ahead ? AHEAD_TENANTS * sizeof *f->ahead : 0) +
           hash_bytes(&f->ahead_index);
}
