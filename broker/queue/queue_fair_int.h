/*
 * queue_fair_int.h - between queue_fair.c (the tenants of a fair level and
 * the fair pick) and queue_fair_tag.c (what the per-tag settings of
 * tagset.h hold back): the level's structures and the hooks the pick calls.
 */
#ifndef SLUICE_QUEUE_FAIR_INT_H
#define SLUICE_QUEUE_FAIR_INT_H

#include "drr.h"
#include "hash.h"
#include "queue_int.h"

typedef struct tenant {
    uint32_t tag;
    uint32_t leased;
    uint64_t cursor; /* next key of its run to seek from */
    tmr returned;
    uint32_t gen;    /* tagset generation rule and paused were matched at (0: never) */
    int16_t rule;    /* its pattern in q->tags, or TAGSET_NONE */
    uint8_t paused : 1;
    uint8_t run : 2; /* RUN_*: what is known of its run past the cursor (the level's oldest) */
    uint8_t gated;   /* GATED_PAUSE or GATED_CAP: in that list of blocked tags */
} tenant;

enum { GATED_PAUSE = 1, GATED_CAP = 2 };

/* What a tenant knows of its run past its cursor, without a read: nothing
 * (RUN_UNKNOWN: a look finds its first key), that a ready record sits at the
 * cursor's very key (RUN_AT_CURSOR), or that nothing does (RUN_EMPTY). */
enum { RUN_UNKNOWN = 0, RUN_AT_CURSOR = 1, RUN_EMPTY = 2 };

struct queue_fair {
    drr d;
    tenant *t;
    uint32_t n;
    size_t cap;
    hash_index index; /* the tenants by tag */
    uint32_t *held;  /* tags blocked until the next commit ends (head not committed) */
    uint32_t nheld;
    size_t heldcap;
    uint32_t *capped; /* tags blocked by their in-flight cap: looked at again on a settlement */
    uint32_t ncapped;
    size_t cappedcap;
    uint32_t *paused; /* tags blocked by a pause: looked at again on a change of the tags' settings */
    uint32_t npaused;
    size_t pausedcap;
    int gone;                 /* a ready record left other than by a take since the last commit ended */
    uint64_t oldest_ns;       /* the level's oldest, as last found (fair_oldest) */
    struct ahead_buf *ahead;  /* tenants' read-ahead buffers (queue_fair_ahead.c), or NULL */
    uint32_t nahead;          /* buffers held */
    hash_index ahead_index;   /* ... by tag */
};

/* A head that is not committed yet (or may be in the commit that is out):
 * its tenant tries again next pass. */
#define QUEUE_FAIR_NOT_YET (-1)

/* The tenants' index by tag (hash.h). */
static inline uint32_t queue_fair_tenant_hash(const void *owner, uint32_t pos)
{
    return hash_u32(((const struct queue_fair *)owner)->t[pos].tag);
}

static inline int queue_fair_tenant_is(const void *owner, uint32_t pos, const void *tag)
{
    return ((const struct queue_fair *)owner)->t[pos].tag == *(const uint32_t *)tag;
}

extern const hash_ops queue_fair_tenant_ops;

/* queue_fair_find returns tag's tenant in f, or NULL. */
static inline tenant *queue_fair_find(const struct queue_fair *f, uint32_t tag)
{
    uint32_t pos;
    return hash_find(&f->index, hash_u32(tag), &tag, &queue_fair_tenant_ops, f, &pos) ? &f->t[pos] : NULL;
}

/* The fair view's operations (queue_int.h), for queue_fair_view. */
int queue_fair_append(queue *q, const store_rec *rec);
int queue_fair_take(queue *q, unsigned level, uint64_t *key, store_rec *rec);
int queue_fair_ready(queue *q, unsigned level, uint64_t key);
void queue_fair_unlease(queue *q, unsigned level, uint64_t key);
int queue_fair_head(queue *q, unsigned level, uint64_t *enq_ns, uint32_t *cost);
void queue_fair_close(queue *q, unsigned level);
void queue_fair_commit_ended(queue *q, unsigned level, int rc);
/* queue_fair_ahead_gone follows the ready record at key of a fair level
 * leaving the store other than by a take (expired): its tenant's read-ahead
 * is dropped. */
void queue_fair_ahead_gone(queue *q, unsigned level, uint64_t key);

/* queue_fair_tag_resolve matches tn against q->tags when they changed since
 * it last was (one meta read for its name, O(patterns); nothing when there
 * are no patterns and no pauses) and gives its drr record its weight from
 * its next turn on. */
void queue_fair_tag_resolve(queue *q, struct queue_fair *f, tenant *tn);

/* queue_fair_tag_gate asks tn's tag settings (and its pause in level after
 * a THROTTLED for it alone) whether its head (of cost) may go at q->now_ns:
 * 0 yes; 1 no, and tn is set aside (until its bucket admits again, its
 * pause ends, a settlement, or a change of the settings); -1 out of
 * memory. */
int queue_fair_tag_gate(queue *q, struct queue_fair *f, unsigned level, tenant *tn, uint64_t cost);

/* queue_fair_tag_unleased ends one of tn's deliveries in flight under its
 * settings and lets the tags held by a cap be looked at again. */
void queue_fair_tag_unleased(queue *q, struct queue_fair *f, tenant *tn);

/* ---- read-ahead (queue_fair_ahead.c) ---- */

/* queue_fair_ahead_head finds the first ready record of tn's run at or
 * after its cursor, as store_tag_head, from tn's buffer when it holds one,
 * else by a read that fills one; QUEUE_FAIR_NOT_YET when that record is not
 * committed yet. */
int queue_fair_ahead_head(queue *q, unsigned level, struct queue_fair *f, tenant *tn, uint64_t *key,
                          store_rec *rec, int *more);

/* queue_fair_ahead_taken notes that the take of key moved tn's cursor past
 * it; returns 1 with *next the key of the record its buffer serves next,
 * when it holds one, else 0. */
int queue_fair_ahead_taken(const struct queue_fair *f, const tenant *tn, uint64_t key, uint64_t *next);

/* queue_fair_ahead_appended follows a record of tn's tag published: its
 * run goes on past tn's buffer. */
void queue_fair_ahead_appended(const struct queue_fair *f, const tenant *tn);

/* queue_fair_ahead_ready follows key of tn made ready past its cursor: a
 * key inside its buffer's drops the buffer; one past them means the run
 * goes on. */
void queue_fair_ahead_ready(struct queue_fair *f, const tenant *tn, uint64_t key);

/* queue_fair_ahead_drop frees tag's buffer, if it has one (its tenant
 * forgotten, or its copy no longer right); _reset drops every tenant's. */
void queue_fair_ahead_drop(struct queue_fair *f, uint32_t tag);
void queue_fair_ahead_reset(struct queue_fair *f);

/* queue_fair_ahead_bytes returns the bytes f's buffers hold. */
size_t queue_fair_ahead_bytes(const struct queue_fair *f);

#endif /* SLUICE_QUEUE_FAIR_INT_H */
