/*
 * drr.c - deficit round robin over the waiting tenants of one level (see
 * drr.h for the rule, its costs and its memory).
 *
 * Three structures over one dense array of records, all by index:
 *   - a hash table (open addressing, linear probing, backward-shift delete)
 *     from key to index, so the caller needs no per-tenant state of its own;
 *   - the ring of ready tenants, a circular doubly linked list through the
 *     records; `head` is whose turn it is, the tail is head->prev;
 *   - a binary min-heap of blocked tenants with a time, on ready_ns.
 * A record leaves by swap-remove (the last record moves into its place and
 * the three structures are told its new index), so the array stays dense
 * and can shrink: a tenant that went idle leaves nothing behind.
 *
 * Invariants: every record is in the hash; a READY record is in the ring and
 * not in the heap; a BLOCKED record is out of the ring, and in the heap iff
 * its ready_ns is not DRR_NEVER; nready counts the ring.
 *
 * Credit stays bounded: weights are at most DRR_MAX_WEIGHT, the quantum at
 * most 2^32 and a cost is clamped to that too, so a credit lies between
 * 1 - 2^32 and 2^32 x weight (far inside int64). Since the quantum rises to
 * the largest cost charged, a credit at or below 0 becomes positive with
 * one turn's credit: drr_pick passes over each tenant at most once before
 * it finds one that may send.
 */
#include "drr.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sluice_errors.h"

#define MIN_CAP 16u
#define MAX_QUANTUM (UINT64_C(1) << 32)
#define MAX_COST ((int64_t)MAX_QUANTUM) /* a cost is clamped to the largest quantum */

/* ---- the index by key (hash.h) ---- */

static uint32_t rec_hash(const void *owner, uint32_t pos)
{
    return hash_u64(((const drr *)owner)->t[pos].key);
}

static int rec_is(const void *owner, uint32_t pos, const void *key)
{
    return ((const drr *)owner)->t[pos].key == *(const uint64_t *)key;
}

static const hash_ops rec_ops = {rec_hash, rec_is};

static int find_index(const drr *d, uint64_t key, uint32_t *i)
{
    return hash_find(&d->index, hash_u64(key), &key, &rec_ops, d, i);
}

/* ---- the ring ---- */

/* ring_insert puts i in the ring just before next (DRR_NIL: the ring is
 * empty, i alone in it becomes the head). */
static void ring_insert(drr *d, uint32_t i, uint32_t next)
{
    drr_tenant *t = &d->t[i];
    if (next == DRR_NIL) {
        t->next = t->prev = i;
        d->head = i;
    } else {
        uint32_t prev = d->t[next].prev;
        t->next = next;
        t->prev = prev;
        d->t[prev].next = i;
        d->t[next].prev = i;
    }
    t->state = DRR_READY;
    d->nready++;
}

/* the tail is just before the head */
static void ring_insert_tail(drr *d, uint32_t i)
{
    ring_insert(d, i, d->head);
}

/* ring_return puts a tenant back in the ring when its block ends. One held
 * in the middle of its own turn resumes it, as the head; any other goes to
 * the tail. Sent back to the tail, a tag its own bucket held waited a whole
 * round after each release (tag-limits: 1,000 tags, those limited to 2/s
 * got 1.01/s); resumed, it gets the lesser of its limit and its weighted
 * share, and no more: the credit of that one turn bounds what it takes
 * before the turn moves on. after is the tenant that resumed last in the
 * same batch of returns (DRR_NIL for the first): resumed tenants keep the
 * order they come back in. Returns the new value of after. */
static uint32_t ring_return(drr *d, uint32_t i, uint32_t after)
{
    drr_tenant *t = &d->t[i];
    int resume = t->resume != 0;
    t->resume = 0;
    if (!resume) {
        ring_insert_tail(d, i);
        return after;
    }
    if (after != DRR_NIL) {
        ring_insert(d, i, d->t[after].next);
    } else {
        ring_insert_tail(d, i);
        d->head = i; /* just before the head: now the head */
    }
    return i;
}

static void ring_remove(drr *d, uint32_t i)
{
    drr_tenant *t = &d->t[i];
    if (t->next == i) {
        d->head = DRR_NIL;
    } else {
        d->t[t->prev].next = t->next;
        d->t[t->next].prev = t->prev;
        if (d->head == i)
            d->head = t->next;
    }
    t->next = t->prev = DRR_NIL;
    d->nready--;
}

/* ---- the heap ---- */

static int heap_less(const drr *d, uint32_t a, uint32_t b)
{
    return d->t[d->heap[a]].ready_ns < d->t[d->heap[b]].ready_ns;
}

static void heap_swap(drr *d, uint32_t a, uint32_t b)
{
    uint32_t x = d->heap[a];
    d->heap[a] = d->heap[b];
    d->heap[b] = x;
    d->t[d->heap[a]].heap_pos = a;
    d->t[d->heap[b]].heap_pos = b;
}

static void heap_up(drr *d, uint32_t p)
{
    while (p && heap_less(d, p, (p - 1) / 2)) {
        heap_swap(d, p, (p - 1) / 2);
        p = (p - 1) / 2;
    }
}

static void heap_down(drr *d, uint32_t p)
{
    for (;;) {
        uint32_t l = 2 * p + 1, r = l + 1, m = p;
        if (l < d->nheap && heap_less(d, l, m))
            m = l;
        if (r < d->nheap && heap_less(d, r, m))
            m = r;
        if (m == p)
            return;
        heap_swap(d, p, m);
        p = m;
    }
}

static int heap_push(drr *d, uint32_t i)
{
    if (d->nheap == d->heap_cap) {
        uint32_t *h = grow_array(d->heap, &d->heap_cap, (size_t)d->nheap + 1, sizeof *h, MIN_CAP);
        if (!h)
            return SL_ENOMEM;
        d->heap = h;
    }
    d->heap[d->nheap] = i;
    d->t[i].heap_pos = d->nheap++;
    heap_up(d, d->nheap - 1);
    return SL_OK;
}

static void heap_remove(drr *d, uint32_t i)
{
    uint32_t p = d->t[i].heap_pos, last = --d->nheap;
    d->t[i].heap_pos = DRR_NIL;
    if (p != last) {
        d->heap[p] = d->heap[last];
        d->t[d->heap[p]].heap_pos = p;
        heap_down(d, p);
        heap_up(d, p);
    }
    d->heap = grow_shrink(d->heap, &d->heap_cap, d->nheap, sizeof *d->heap, MIN_CAP);
}

/* ---- records ---- */

static int64_t turn_credit(const drr *d, const drr_tenant *t)
{
    return (int64_t)(d->quantum * t->weight);
}

/* pass_turn ends the head's turn: its next turn's credit, and the next
 * tenant's turn. */
static void pass_turn(drr *d)
{
    drr_tenant *h = &d->t[d->head];
    h->credit += turn_credit(d, h);
    d->head = h->next;
}

/* moved tells the structures that record from now lives at index to. */
static void moved(drr *d, uint32_t from, uint32_t to)
{
    drr_tenant *t = &d->t[to];
    *t = d->t[from];
    hash_moved(&d->index, hash_u64(t->key), &t->key, &rec_ops, d, to);
    if (t->state == DRR_READY) {
        if (t->next == from) { /* alone in the ring */
            t->next = t->prev = to;
        } else {
            d->t[t->prev].next = to;
            d->t[t->next].prev = to;
        }
        if (d->head == from)
            d->head = to;
    }
    if (t->heap_pos != DRR_NIL)
        d->heap[t->heap_pos] = to;
}

void drr_init(drr *d, uint64_t quantum)
{
    memset(d, 0, sizeof *d);
    d->head = DRR_NIL;
    d->quantum = !quantum ? 1 : quantum > MAX_QUANTUM ? MAX_QUANTUM : quantum;
}

void drr_fini(drr *d)
{
    free(d->t);
    hash_fini(&d->index);
    free(d->heap);
    uint64_t q = d->quantum;
    drr_init(d, q);
}

int drr_active(drr *d, uint64_t key, uint32_t weight)
{
    uint32_t i;
    if (weight < 1 || weight > DRR_MAX_WEIGHT)
        return SL_EINVAL;
    if (find_index(d, key, &i))
        return SL_ESTATE;
    if (d->n == d->cap) {
        if (d->cap >= UINT32_MAX / 4)
            return SL_ENOMEM;
        drr_tenant *t = grow_array(d->t, &d->cap, (size_t)d->n + 1, sizeof *t, MIN_CAP);
        if (!t)
            return SL_ENOMEM;
        d->t = t;
    }
    int rc = hash_fit(&d->index, d->n + 1, &rec_ops, d);
    if (rc != SL_OK)
        return rc;
    i = d->n++;
    d->t[i] = (drr_tenant){.key = key, .ready_ns = 0, .weight = weight, .next = DRR_NIL,
                           .prev = DRR_NIL, .heap_pos = DRR_NIL};
    d->t[i].credit = turn_credit(d, &d->t[i]);
    hash_put(&d->index, hash_u64(key), &key, &rec_ops, d, i);
    ring_insert_tail(d, i);
    return SL_OK;
}

int drr_idle(drr *d, uint64_t key)
{
    uint32_t i;
    if (!find_index(d, key, &i))
        return 0;
    if (d->t[i].state == DRR_READY)
        ring_remove(d, i);
    if (d->t[i].heap_pos != DRR_NIL)
        heap_remove(d, i);
    hash_remove(&d->index, hash_u64(key), &key, &rec_ops, d);
    uint32_t last = --d->n;
    if (i != last)
        moved(d, last, i);
    d->t = grow_shrink(d->t, &d->cap, d->n, sizeof *d->t, MIN_CAP);
    (void)hash_fit(&d->index, d->n, &rec_ops, d); /* (shrinks: on failure the bigger table stays) */
    return 1;
}

int drr_pick(drr *d, uint64_t now_ns, uint64_t *key)
{
    uint32_t after = DRR_NIL;
    while (d->nheap && d->t[d->heap[0]].ready_ns <= now_ns) {
        uint32_t i = d->heap[0];
        heap_remove(d, i);
        after = ring_return(d, i, after);
    }
    if (d->head == DRR_NIL)
        return SL_ENOTFOUND;
    /* a tenant passed over gets one turn's credit, at least one message's
     * cost: each is passed over at most once here */
    while (d->t[d->head].credit <= 0)
        pass_turn(d);
    *key = d->t[d->head].key;
    return SL_OK;
}

void drr_charge(drr *d, uint64_t key, uint64_t cost)
{
    uint32_t i;
    if (!find_index(d, key, &i))
        return;
    drr_tenant *t = &d->t[i];
    if (cost > (uint64_t)MAX_COST)
        cost = (uint64_t)MAX_COST;
    if (cost > d->quantum)
        d->quantum = cost; /* so one turn's credit always covers one message */
    t->credit -= (int64_t)cost;
    if (t->credit <= 0 && d->head == i)
        pass_turn(d);
}

int drr_block(drr *d, uint64_t key, uint64_t until_ns)
{
    uint32_t i;
    if (!find_index(d, key, &i))
        return SL_ENOTFOUND;
    drr_tenant *t = &d->t[i];
    if (t->heap_pos != DRR_NIL)
        heap_remove(d, i);
    t->ready_ns = until_ns;
    if (until_ns != DRR_NEVER) {
        int rc = heap_push(d, i);
        if (rc) {
            if (t->state == DRR_BLOCKED) /* it cannot wait for a time: let it try again now */
                (void)ring_return(d, i, DRR_NIL);
            return rc;
        }
    }
    if (t->state == DRR_READY) {
        t->resume = d->head == i;
        ring_remove(d, i);
        t->state = DRR_BLOCKED;
    }
    return SL_OK;
}

void drr_unblock(drr *d, uint64_t key)
{
    uint32_t i;
    if (!find_index(d, key, &i) || d->t[i].state != DRR_BLOCKED)
        return;
    if (d->t[i].heap_pos != DRR_NIL)
        heap_remove(d, i);
    (void)ring_return(d, i, DRR_NIL);
}

int drr_set_weight(drr *d, uint64_t key, uint32_t weight)
{
    uint32_t i;
    if (weight < 1 || weight > DRR_MAX_WEIGHT)
        return SL_EINVAL;
    if (!find_index(d, key, &i))
        return SL_ENOTFOUND;
    d->t[i].weight = weight;
    return SL_OK;
}

const drr_tenant *drr_find(const drr *d, uint64_t key)
{
    uint32_t i;
    return find_index(d, key, &i) ? &d->t[i] : NULL;
}

uint64_t drr_next_ns(const drr *d)
{
    return d->nheap ? d->t[d->heap[0]].ready_ns : DRR_NEVER;
}

uint32_t drr_count(const drr *d)
{
    return d->n;
}

size_t drr_bytes(const drr *d)
{
    return sizeof *d + (size_t)d->cap * sizeof *d->t + hash_bytes(&d->index) +
           (size_t)d->heap_cap * sizeof *d->heap;
}
