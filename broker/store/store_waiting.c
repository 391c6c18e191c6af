/*
 * store_waiting.c - what an operator does with waiting messages: delete
 * one now (sluice purge, sluice delete), move one to the tail of another
 * level (sluice move), delete a delayed one.
 *
 * Like store_dead.c for dead letters, every write here is one operation in
 * the pass's open write transaction: a chunk of them (admin/waiting.c)
 * commits or vanishes as a whole with the pass, so a purge or a move cut
 * short by a crash leaves each message in exactly one place.
 *
 * Invariants:
 *   - A delete here is at once, also in a fair level: an acknowledgement's
 *     delete in a fair level waits for its batch (store_gone.c) because
 *     its key lies below its tenant's cursor, where nothing reads; a
 *     waiting record may lie past the cursor, where the next take reads.
 *   - A moved record keeps every byte but its level (the same id, tag,
 *     body, cost, attempt count, enqueue time and expiry) and takes a
 *     fresh tail key of its new level (of its tag's run in a fair level),
 *     so it waits for the commit like any append (store_key_committed),
 *     and is ready past every cursor. A message with a time to live has
 *     its new place noted in the expiry index (store_ttl_note).
 *   - Reads check the record (store_decode): a corrupt one is reported,
 *     never moved (it is moved aside when a take meets it).
 *
 * Costs: a delete is one B-tree delete; a move copies the record to the
 * scratch buffer, deletes it and puts it again (two B-tree writes and a CRC
 * each way, O(record bytes)); store_delayed_del one lookup and one delete.
 */
#include "store.h"

#include <lmdb.h>

#include "rec.h"
#include "store_int.h"

int store_drop(store *s, unsigned level, uint64_t key)
{
    int err = store_txn_level(s, level);
    return err != SL_OK ? err : store_mdb_del(s, s->q[level], key);
}

int store_move(store *s, unsigned level, uint64_t key, unsigned to_level, uint64_t *new_key)
{
    MDB_val copy;
    store_rec rec;
    uint32_t tag_id;
    int err = store_txn_level(s, level);
    if (err == SL_OK)
        err = store_txn_level(s, to_level);
    if (err == SL_OK)
        err = store_mdb_get(s, s->q[level], key, &rec, &copy, 0); /* rec points into the scratch copy */
    if (err == SL_OK)
        err = store_mdb_del(s, s->q[level], key);
    if (err != SL_OK)
        return err;
    rec.level = (uint8_t)to_level;
    int fair = (s->fair_mask >> to_level) & 1; /* a tag-led key, at its tag's tail (store_tag.c) */
    if (fair && (err = store_tag_intern(s, rec.tag, rec.tag_len, &tag_id)) != SL_OK)
        return err;
    err = store_rec_put(s, &rec, fair ? &tag_id : NULL, new_key);
    return err != SL_OK ? err : store_ttl_note(s, &rec, to_level, *new_key);
}

int store_delayed_del(store *s, uint64_t due_ns, uint64_t id, unsigned *level_out)
{
    unsigned char kb[16];
    MDB_val k = {sizeof kb, kb}, v;
    store_rec rec;
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, id);
    int rc = mdb_get(s->txn, s->delayed, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read delayed message %llu", (unsigned long long)id);
    if ((err = store_decode(s, s->delayed, &k, &v, &rec)) != SL_OK)
        return err;
    *level_out = rec.level;
    rc = mdb_del(s->txn, s->delayed, &k, NULL);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "delete delayed message %llu", (unsigned long long)id);
    store_wal_touch(s, s->delayed, kb, sizeof kb, 0);
    s->dirty = 1;
    return SL_OK;
}
