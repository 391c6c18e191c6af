/*
 * queue_commit.c - the queue's side of the commit hand-over: what a commit
 * going out freezes, and what a refused or failed commit puts back.
 *
 * It owns the undo list: queue.c notes here (queue_unleased) each leased
 * record that a write of the open transaction settled, buried or delayed
 * (or a write that failed). queue_commit_started keeps what the commit
 * carries (the delayed counts, whether it made a record ready the snapshot
 * shows otherwise); queue_commit_ended lifts the holds and, on failure,
 * makes the noted records ready again and reads the counts back from the
 * store, which holds its state as of the last successful commit.
 *
 * It also owns the deferred deletes: an ACK taken while a commit is out
 * ends its lease at once (the consumer's credit and its pool's room come
 * back without waiting for the disk), but the store cannot write until the
 * commit ends, so the delete is noted here and made part of the next
 * transaction by queue_deferred_apply, right after the commit ends. The
 * record stays in the store (and in its level's count) until then; nothing
 * takes it meanwhile: it is below its level's cursor (or its tenant's) and
 * in no returned heap, exactly like a leased record. A crash before the
 * delete is committed delivers the message again, as for any ACK within
 * ack_flush_ms (with ack_flush_ms 0 the OK of such an ACK waits for the
 * commit that carries its delete: NET_AFTER_NEXT_COMMIT). A delete that
 * fails (the map full) fails the next commit, whose undo makes the record
 * ready again, as for any settlement.
 *
 * Invariants:
 *   - The undo list holds exactly the settlements no successful commit (or
 *     log record) carries yet: the first nundo_sealed those of the commit
 *     that is out, dropped when it succeeds; with the log, the next batch's
 *     follow, noted while the record flushes. A failed commit puts them all
 *     back: the log's failure stops the broker, and while a checkpoint is out
 *     nothing settles into the store. A deferred delete joins the list only
 *     when applied, so a commit that fails never puts back an ACK it did not
 *     carry.
 *   - delayed_committed is lv[].delayed as of the last successful commit
 *     (delayed_sent as of the commit out), so a failure restores the
 *     delayed counts without scanning the delayed database.
 *
 * Costs: an undo entry (16 bytes) per settlement of the open transaction,
 * and per ACK taken while a commit is out; a failed commit puts back
 * O(undo) keys and recounts in O(levels).
 */
#include "queue_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"

struct queue_undo {
    unsigned level;
    uint64_t key;
};

/* note appends (level, key) to a list of (v, n, cap). SL_OK, SL_ENOMEM. */
static int note(struct queue_undo **v, size_t *n, size_t *cap, unsigned level, uint64_t key)
{
    if (*n == *cap) {
        struct queue_undo *u = grow_array(*v, cap, *n + 1, sizeof *u, 256);
        if (!u)
            return SL_ENOMEM;
        *v = u;
    }
    (*v)[(*n)++] = (struct queue_undo){level, key};
    return SL_OK;
}

int queue_deferred_add(queue *q, unsigned level, uint64_t key)
{
    if (note(&q->deferred, &q->ndeferred, &q->capdeferred, level, key) == SL_OK)
        return SL_OK;
    log_error("queue", "out of memory noting an acknowledgement taken during a commit; message at key %llu of "
              "level %u stays stored and is delivered again after a restart", (unsigned long long)key, level);
    return SL_ENOMEM;
}

void queue_deferred_apply(queue *q)
{
    if (!q->ndeferred)
        return; /* (after every batch's record: most often nothing waited) */
    for (size_t i = 0; i < q->ndeferred; i++) {
        unsigned level = q->deferred[i].level;
        uint64_t key = q->deferred[i].key;
        int rc = store_del(q->st, level, key);
        if (rc == SL_OK || rc == SL_ENOTFOUND)
            q->lv[level].count--;
        if (rc != SL_ENOTFOUND) /* as queue_settle: if its commit fails (this delete's too), it is ready again */
            queue_unleased(q, level, key);
        if (rc != SL_OK && rc != SL_ENOTFOUND)
            log_error("queue", "cannot delete acknowledged message at key %llu of level %u (%s); the commit "
                      "fails and it is delivered again", (unsigned long long)key, level, proto_strerror(rc));
    }
    q->ndeferred = 0;
    /* deleted now, not with a later batch: a failed commit's undo may just
     * have made their tenants anew, reading from their runs' first keys */
    if (store_gone_flush(q->st) != SL_OK)
        log_error("queue", "cannot delete the acknowledgements taken during a commit; the next commit fails "
                  "and they are delivered again");
}

/* queue_unleased notes that the leased record at key left its lease
 * through a write of the open transaction (settled, buried, delayed), or
 * through one that failed: if the commit fails, the record is still stored
 * and is made ready again. */
void queue_unleased(queue *q, unsigned level, uint64_t key)
{
    if (note(&q->undo, &q->nundo, &q->capundo, level, key) != SL_OK)
        log_error("queue", "out of memory noting a settlement; if its commit fails, message at key %llu of "
                  "level %u is delivered again only after a restart", (unsigned long long)key, level);
}

void queue_commit_started(queue *q)
{
    q->frozen_unsafe = q->unsafe;
    q->nundo_sealed = q->nundo; /* with the log, settlements go on into the next batch meanwhile */
    for (unsigned l = 0; l < q->nlevels; l++)
        q->delayed_sent[l] = q->lv[l].delayed;
}

void queue_commit_frozen(queue *q)
{
    q->unsafe = 0; /* the next freeze's snapshot is this commit's state */
}

void queue_commit_ended(queue *q, int rc)
{
    q->frozen_unsafe = 0;
    if (rc != SL_OK)
        q->unsafe = 1; /* with the log, the snapshot may still lack batches it carried: be safe */
    for (unsigned l = 0; l < q->nlevels; l++) {
        q->lv[l].hold = 0;
        q->lv[l].commit_wait = 0;
        queue_view_of(&q->lv[l])->commit_ended(q, l, rc);
    }
    if (rc == SL_OK)
        memcpy(q->delayed_committed, q->delayed_sent, sizeof q->delayed_committed);
    if (rc != SL_OK) {
        for (size_t i = q->nundo; i-- > 0;)
            if (queue_make_ready(q, q->undo[i].level, q->undo[i].key) != SL_OK)
                log_error("queue", "out of memory putting back a settlement whose commit failed; message at key "
                          "%llu is delivered again after a restart", (unsigned long long)q->undo[i].key);
        for (unsigned l = 0; l < q->nlevels; l++) {
            q->lv[l].count = store_level_count(q->st, l);
            q->lv[l].dead = store_dead_count(q->st, l);
            q->lv[l].delayed = q->delayed_committed[l]; /* kept, not counted: O(levels) */
            q->lv[l].head_known = 0;
        }
        if (store_delayed_first(q->st, &q->next_due_ns) != SL_OK)
            q->next_due_ns = TMR_NEVER;
        store_txn_release(q->st); /* the counts only read */
        q->nundo = 0;
    } else if (q->nundo_sealed) { /* what the next batch settled meanwhile stays noted for its commit */
        if (q->nundo > q->nundo_sealed)
            memmove(q->undo, q->undo + q->nundo_sealed, (q->nundo - q->nundo_sealed) * sizeof *q->undo);
        q->nundo -= q->nundo_sealed;
    }
    q->nundo_sealed = 0;
}

int queue_committed(const queue *q, unsigned level, uint64_t key)
{
    return queue_view_of(&q->lv[level])->committed(q, level, key);
}
