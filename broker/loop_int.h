/*
 * loop_int.h - what loop.c shares with loop_commit.c and loop_ha.c: the
 * loop's own state and the end of a commit. Not for the rest of the broker.
 */
#ifndef SLUICE_LOOP_INT_H
#define SLUICE_LOOP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "bk.h"
#include "gather.h"
#include "loop_back.h"
#include "park.h"

/* While a commit is out, a send that fails is held here and handed to
 * settle_send_failed after the commit's end: ending a consumer's leases
 * charges attempts, which writes the store. */
typedef struct held_fail {
    unsigned sock;
    uint8_t rid[256];
    size_t rid_len;
    uint64_t token;
    int err;
} held_fail;

/* The loop's own state, while loop_run runs (b->loop). */
typedef struct loop_state loop_state;
struct loop_state {
    park *parked;         /* requests received while a commit was out that wait for its end (park.c) */
    /* A log record waits for the rest of its batch (gather.c): the producers
     * its predecessor confirmed, which come back a round trip later. Only
     * publishes count: a consumer does not wait for a settlement's answer,
     * nor for a delivery that leaves with the record, before its next
     * request. */
    size_t sealed_puts;   /* publishes the record out will confirm */
    gather gath;
    held_fail *held;      /* sends that failed while the commit was out */
    size_t nheld, capheld;
    int commit_wrote;     /* the commit that is out wrote (its latency counts) */
    uint64_t commit_t0_ns; /* ... and when it started */
    /* A primary of a group (ha_node.c): a commit that ended here waits for
     * its record to be durable on the standby before commit_ended confirms
     * it; no other commit starts meanwhile. */
    int ha_held, ha_rc, ha_wrote, ha_logged;
    uint64_t ha_t0_ns;
    int ended_inline;     /* a record written on the loop ended this pass: pass again at once */
    /* ... and its gather, told in that next pass once it has received what
     * came during the flush (with the writer thread it is received meanwhile) */
    int gather_pending;
    size_t gather_confirmed;
    loop_back back;       /* whose publishes are in the batch and the record, and who is back (loop_back.c) */
};

/* loop_hold_send_failed is net_flush's failure callback while a commit is
 * out or ending: the failure is held and handed to settle_send_failed once
 * the commit has ended (loop_commit.c). */
void loop_hold_send_failed(void *ctx, unsigned sock, const uint8_t *rid, size_t rid_len, uint64_t token, int err);

/* loop_set_clock reads the clocks into b (the only reads, with loop.h's). */
void loop_set_clock(bk *b);

/* loop_commit_ended finishes a commit, the writer's or one made at once:
 * the histogram, and the pass's confirmations sent, or all turned into
 * errors (loop_commit.c). Returns SL_OK or the commit's error. */
int loop_commit_ended(bk *b, int rc, int wrote, uint64_t t0_ns, int logged);

/* loop_finish ends a commit, unless its record waits for the standby (a
 * primary of a group): then it is held until loop_ha_release (loop_ha.c). */
int loop_finish(bk *b, int rc, int wrote, uint64_t t0_ns, int logged);

/* loop_ha_release confirms the held commit once its record may be
 * confirmed. SL_OK or the commit's error. */
int loop_ha_release(bk *b);

/* loop_ha_drain, at shutdown, waits for the held commit's record to be
 * confirmable, at most the standby timeout and a lease; after that its
 * publishes are refused, never confirmed. SL_OK, or SL_EDEPOSED. */
int loop_ha_drain(bk *b);

#endif /* SLUICE_LOOP_INT_H */
