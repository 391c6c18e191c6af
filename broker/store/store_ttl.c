/*
 * store_ttl.c - the time-to-live index: (expires, id) -> where the message
 * now is (a level and its order key, or delayed and its due time).
 *
 * Invariant: entries are hints. They are not removed when a message is
 * acknowledged or moved (that would cost every ack a read), so the sweep
 * (queue_expire, queue_expire_delayed) checks the id of what it finds. Each
 * append of a message with a time to live, and each move of one into q.<L>
 * or delayed, adds an entry for its new place (store_ttl_note, called by
 * store_msg.c in the same transaction).
 *
 * Costs: a note is one B-tree insert; store_ttl_next takes the earliest
 * entry: O(log n) per entry consumed. A corrupt entry is dropped and
 * reported (SL_ECORRUPT): it is an index entry, not a message.
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

/* Entries are not removed when the message is acknowledged (that would cost
 * every ack a read); the sweep drops the stale ones it finds. */
int store_ttl_note(store *s, const store_rec *rec, unsigned where, uint64_t loc)
{
    unsigned char kb[16], vb[9];
    if (!rec->expires_ns)
        return SL_OK;
    MDB_val k = {sizeof kb, kb}, v = {sizeof vb, vb};
    put_be64(kb, rec->expires_ns);
    put_be64(kb + 8, rec->id);
    vb[0] = (unsigned char)where;
    put_le64(vb + 1, loc);
    return store_mdb_put(s, s->ttl, &k, &v, 0);
}

int store_ttl_next(store *s, uint64_t now_ns, store_ttl_item *out)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_cursor_open(s->txn, s->ttl, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open a cursor on ttl");
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (rc == MDB_SUCCESS && (k.mv_size != 16 || v.mv_size != 9)) {
        log_error("store", "corrupt time-to-live entry (%zu/%zu bytes)", k.mv_size, v.mv_size);
        store_wal_touch(s, s->ttl, k.mv_data, k.mv_size, 0);
        rc = mdb_cursor_del(cur, 0); /* an index entry only: drop it */
        err = rc == MDB_SUCCESS ? SL_ECORRUPT : store_fail(s, rc, "drop a corrupt ttl entry");
        s->dirty = 1;
    } else if (rc == MDB_NOTFOUND || (rc == MDB_SUCCESS && get_be64(k.mv_data) > now_ns)) {
        err = SL_ENOTFOUND;
    } else if (rc != MDB_SUCCESS) {
        err = store_fail(s, rc, "read ttl");
    } else {
        out->expires_ns = get_be64(k.mv_data);
        out->id = get_be64((const unsigned char *)k.mv_data + 8);
        out->where = ((const unsigned char *)v.mv_data)[0];
        out->loc = get_le64((const unsigned char *)v.mv_data + 1);
        store_wal_touch(s, s->ttl, k.mv_data, k.mv_size, 0);
        rc = mdb_cursor_del(cur, 0);
        err = rc == MDB_SUCCESS ? SL_OK : store_fail(s, rc, "consume a ttl entry");
        s->dirty = 1;
    }
    mdb_cursor_close(cur);
    return err;
}

