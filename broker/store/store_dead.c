/*
 * store_dead.c - the dead letters' own operations: walking dead.<L> in id
 * order, bringing a dead letter back to the tail of a level, and deleting
 * one. Burying (store_bury, store_bury_delayed) and reading one dead letter
 * by id (store_dead_get) stay in store_msg.c with the other moves of a
 * message; this file is what an operator, or retention, does with them
 * afterwards.
 *
 * Every write here is one operation in the pass's open write transaction,
 * like store_bury: a batch of them (dead.c) commits or vanishes as a whole
 * with the pass, so a requeue interrupted by a crash leaves each message in
 * exactly one place, dead.<L> or q.<L>. Each write is one function, so that
 * a writer thread can carry it as one operation type.
 *
 * Invariants:
 *   - A requeued record is the dead letter revived (rec_revive): the same id,
 *     tag, body, cost and enqueue time; attempt and expiry 0; the level it
 *     goes to. It takes a fresh tail key of that level, so it is ready at
 *     once (past every cursor) and waits for the commit like any append
 *     (store_key_committed).
 *   - Reads check the record (store_decode): a corrupt dead letter is
 *     reported, never moved or deleted; a walk (store_dead_next) steps over
 *     it, so listing, requeueing, purging and retention go on past it.
 *
 * Costs: store_dead_next is one cursor seek plus a CRC over the record;
 * store_dead_requeue copies the record to the scratch buffer, deletes it and
 * appends it (two B-tree writes and two CRCs, O(record bytes));
 * store_dead_del is one B-tree delete.
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

/* Dead letters failing their check one walk steps over at most, logging
 * each; past them it answers SL_ECORRUPT. */
#define DEAD_SKIP 64

int store_dead_next(store *s, unsigned level, uint64_t after, uint64_t *id, store_rec *out)
{
    unsigned char kb[8];
    MDB_val k, v;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    if (after == UINT64_MAX)
        return SL_ENOTFOUND;
    key_u64(&k, kb, after + 1);
    MDB_cursor *cur = NULL;
    err = store_cursor_at(s, s->dead[level], MDB_SET_RANGE, &k, &v, &cur);
    for (unsigned n = 0; err == SL_OK; n++) {
        *id = get_be64(k.mv_data);
        if ((err = store_decode(s, s->dead[level], &k, &v, out)) != SL_ECORRUPT || n == DEAD_SKIP)
            break;
        /* failed its check (logged): stepped over, left in place, so the walk goes on */
        int rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        err = rc == MDB_SUCCESS ? SL_OK : rc == MDB_NOTFOUND ? SL_ENOTFOUND : store_fail(s, rc, "step dead.%u", level);
    }
    if (cur)
        mdb_cursor_close(cur);
    return err;
}

int store_dead_requeue(store *s, unsigned level, uint64_t id, unsigned to_level, uint64_t *key)
{
    unsigned char kb[8];
    MDB_val k, copy;
    store_rec rec;
    int err = store_txn_level(s, level);
    if (err == SL_OK)
        err = store_txn_level(s, to_level);
    if (err == SL_OK)
        err = store_mdb_get(s, s->dead[level], id, &rec, &copy, 0);
    if (err == SL_OK)
        err = store_mdb_del(s, s->dead[level], id);
    if (err != SL_OK)
        return err;
    uint64_t next = s->last_key[to_level] + 1;
    int fair = (s->fair_mask >> to_level) & 1; /* a tag-led key, at its tag's tail (store_tag.c) */
    if (fair && (err = store_tag_key(s, to_level, &rec, 0, &next)) != SL_OK)
        return err;
    key_u64(&k, kb, next);
    copy.mv_size = rec_revive(copy.mv_data, copy.mv_size, to_level, store_rec_key(&k));
    err = store_mdb_put(s, s->q[to_level], &k, &copy, fair ? MDB_NOOVERWRITE : MDB_APPEND);
    if (err != SL_OK)
        return err;
    if (!fair)
        s->last_key[to_level] = next;
    *key = next;
    return SL_OK;
}

int store_dead_del(store *s, unsigned level, uint64_t id)
{
    int err = store_txn_level(s, level);
    return err != SL_OK ? err : store_mdb_del(s, s->dead[level], id);
}
