/*
 * drr.h - the fair pick inside one level: deficit round robin over the
 * tenants (tags) that have a message waiting. Pure: no clock, no I/O, no
 * logging; time is a parameter.
 *
 * A tenant is named by a 64-bit key the caller chooses (a tag's interned
 * id; untagged messages are one tenant of their own, any key the caller
 * reserves for them). Only tenants with something waiting are known here:
 * the caller says when one becomes active (drr_active) and when it has
 * nothing left (drr_idle). FIFO within a tenant is the caller's: this module
 * only says whose turn it is.
 *
 * The rule (deficit round robin, the variant whose deficit may go negative,
 * so the head's cost need not be known before its tenant is chosen): the
 * tenants that may send sit in a ring. A tenant gets quantum x weight units
 * of credit when it enters the ring and each time its turn ends; the head of
 * the ring is served while its credit is positive; a delivery's cost is
 * taken from its tenant's credit (drr_charge), and when the credit reaches 0
 * or less the turn passes to the next tenant. The quantum rises to the
 * largest cost ever charged, as DRR needs (quantum >= the largest message)
 * to stay O(1). Over any stretch where a set of tenants stays backlogged,
 * each gets units in proportion to its weight, give or take one quantum x
 * weight plus one message's cost.
 *
 * Blocked tenants (a tag's limit or in-flight cap holds them) leave the
 * ring, so they never hold up the others (no head-of-line blocking): with a
 * time they go into a min-heap of "ready again at" and come back by
 * themselves at the first pick at or after it; without one (DRR_NEVER: only
 * a settlement can free them) they wait for drr_unblock. A blocked tenant
 * keeps its credit; nothing accrues while it is out. One blocked in the
 * middle of its own turn (as the head: the broker blocks a tag when its pick
 * finds it held) resumes that turn when it returns, ahead of the others, so
 * a tenant its own limit holds gets the lesser of that limit and its
 * weighted share; any other returns at the tail.
 *
 * Costs: active, idle, block, unblock, weight change: O(1) expected (hash
 * lookup) plus O(log blocked) for the heap. drr_pick: O(1) amortised, plus
 * O(log blocked) per tenant whose time has come; a tenant whose credit is
 * used up is passed over once per turn (one turn's credit always covers a
 * message, since the quantum is at least the largest cost). Nothing ever
 * scans the backlog or the set of tenants.
 *
 * Memory: one 48-byte record per known tenant in a dense array, a 4-byte
 * hash slot at a load of at most 1/2, and 4 bytes of heap while blocked.
 * Arrays double when full and halve when a quarter full (the hash table: an
 * eighth), so per known tenant that is about 110 bytes after a growth and at
 * most 4 x 48 + 8 x 4 + 4 x 4 = 240 bytes just before a shrink, under
 * DRR_BYTES_PER_TENANT_MAX (256). A tenant with nothing waiting costs
 * nothing: drr_idle removes its record and the arrays shrink behind it.
 */
#ifndef SLUICE_DRR_H
#define SLUICE_DRR_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"

#define DRR_NEVER UINT64_MAX
#define DRR_MAX_WEIGHT 1000000u
#define DRR_BYTES_PER_TENANT_MAX 256 /* the bound above; tests/unit/test_drr.c checks it */

typedef enum drr_state {
    DRR_READY = 1,   /* in the ring */
    DRR_BLOCKED,     /* out of the ring until its time, or until drr_unblock */
} drr_state;

/* One waiting tenant (48 bytes). */
typedef struct drr_tenant {
    uint64_t key;
    uint64_t ready_ns;  /* blocked: when it comes back; DRR_NEVER: on drr_unblock */
    int64_t credit;     /* units it may still send this turn; may go negative */
    uint32_t weight;
    uint32_t next, prev; /* the ring, by index; DRR_NIL when out of it */
    uint32_t heap_pos;   /* its place in the heap; DRR_NIL when not there */
    uint32_t state;      /* drr_state */
    uint32_t resume;     /* blocked in the middle of its own turn: resumes it on return */
} drr_tenant;

#define DRR_NIL UINT32_MAX

typedef struct drr {
    drr_tenant *t;       /* dense: [0, n) */
    uint32_t n;
    size_t cap;
    hash_index index;    /* the records by key */
    uint32_t *heap;      /* blocked tenants with a time, min-heap on ready_ns */
    uint32_t nheap;
    size_t heap_cap;
    uint32_t head;       /* the ring's head (whose turn it is); DRR_NIL when empty */
    uint32_t nready;
    uint64_t quantum;    /* units per turn per unit of weight */
} drr;

/* drr_init sets up an empty set with the given quantum (0 is taken as 1;
 * it rises to the largest cost charged, at most 2^32). */
void drr_init(drr *d, uint64_t quantum);

/* drr_fini frees everything drr holds; d may then be drr_init'ed again. */
void drr_fini(drr *d);

/* drr_active makes tenant key known, with weight (1..DRR_MAX_WEIGHT), at the
 * ring's tail with one turn's credit. Returns SL_OK, SL_EINVAL for a weight
 * out of range, SL_ESTATE when key is already known, SL_ENOMEM. */
int drr_active(drr *d, uint64_t key, uint32_t weight);

/* drr_idle forgets tenant key (nothing left waiting); unknown keys are
 * ignored. Returns 1 when it was known. */
int drr_idle(drr *d, uint64_t key);

/* drr_pick returns the tenant whose turn it is at now_ns (blocked tenants
 * whose time has come rejoin the ring first), in *key; SL_OK, or
 * SL_ENOTFOUND when no tenant may send (then drr_next_ns says when one may).
 * It does not charge: the caller sends the tenant's head and calls
 * drr_charge, or finds it held and calls drr_block. */
int drr_pick(drr *d, uint64_t now_ns, uint64_t *key);

/* drr_charge takes cost units (at most 2^32 are counted) from key's credit
 * after a delivery, raising the quantum to cost if it is larger; when the
 * credit is used up the turn passes on. Unknown keys are ignored. */
void drr_charge(drr *d, uint64_t key, uint64_t cost);

/* drr_block takes key out of the ring until until_ns (DRR_NEVER: until
 * drr_unblock). Blocking a blocked tenant moves its time. Returns SL_OK or
 * SL_ENOTFOUND, or SL_ENOMEM (then it stays in the ring). */
int drr_block(drr *d, uint64_t key, uint64_t until_ns);

/* drr_unblock puts a blocked key back at the ring's tail now (a settlement
 * freed its cap). A ready or unknown key is left as it is. */
void drr_unblock(drr *d, uint64_t key);

/* drr_set_weight changes key's weight from its next turn on. SL_EINVAL for
 * a weight out of range, SL_ENOTFOUND for an unknown key. */
int drr_set_weight(drr *d, uint64_t key, uint32_t weight);

/* drr_find returns key's record (read only), or NULL. */
const drr_tenant *drr_find(const drr *d, uint64_t key);

/* drr_next_ns returns when the earliest timed blocked tenant comes back
 * (DRR_NEVER: none). */
uint64_t drr_next_ns(const drr *d);

/* drr_count returns the tenants known (ready + blocked). */
uint32_t drr_count(const drr *d);

/* drr_bytes returns the bytes drr holds now. */
size_t drr_bytes(const drr *d);

#endif /* SLUICE_DRR_H */
