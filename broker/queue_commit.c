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
 * Invariants:
 *   - The undo list holds exactly the open transaction's settlements: it is
 *     emptied when its commit ends, committed or not.
 *   - delayed_committed is lv[].delayed as of the last successful commit
 *     (delayed_sent as of the commit out), so a failure restores the
 *     delayed counts without scanning the delayed database.
 *
 * Costs: an undo entry (16 bytes) per settlement of the open transaction; a
 * failed commit puts back O(undo) keys and recounts in O(levels).
 */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

struct queue_undo {
    unsigned level;
    uint64_t key;
};

/* queue_unleased notes that the leased record at key left its lease
 * through a write of the open transaction (settled, buried, delayed), or
 * through one that failed: if the commit fails, the record is still stored
 * and is made ready again. */
void queue_unleased(queue *q, unsigned level, uint64_t key)
{
    if (q->nundo == q->capundo) {
        size_t cap = q->capundo ? q->capundo * 2 : 256;
        struct queue_undo *u = realloc(q->undo, cap * sizeof *u);
        if (!u) {
            log_error("queue", "out of memory noting a settlement; if its commit fails, message at key %llu of "
                      "level %u is delivered again only after a restart", (unsigned long long)key, level);
            return;
        }
        q->undo = u;
        q->capundo = cap;
    }
    q->undo[q->nundo++] = (struct queue_undo){level, key};
}

void queue_commit_started(queue *q)
{
    q->frozen_unsafe = q->unsafe;
    q->unsafe = 0;
    for (unsigned l = 0; l < q->nlevels; l++)
        q->delayed_sent[l] = q->lv[l].delayed;
}

void queue_commit_ended(queue *q, int rc)
{
    q->frozen_unsafe = 0;
    for (unsigned l = 0; l < q->nlevels; l++) {
        q->lv[l].hold = 0;
        if (q->lv[l].fair)
            queue_fair_commit_ended(q, l);
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
    }
    q->nundo = 0;
}

int queue_committed(const queue *q, unsigned level, uint64_t key)
{
    if (q->lv[level].fair)
        return store_key_committed_fair(q->st, level, key);
    return store_key_committed(q->st, level, key);
}
