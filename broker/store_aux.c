/*
 * store_aux.c - the store's side databases and its slower lookups: settings
 * blobs in meta, the searches behind explain, idempotency keys, the
 * time-to-live index, publishes with a delay, burials of delayed messages,
 * and the size of a level.
 *
 * Like store_msg.c, everything here runs in the pass's write transaction,
 * so idempotency keys and expiry entries commit with the messages they name.
 * It reaches LMDB through the wrappers in store_int.h, or directly where its
 * keys are not single u64s or it walks a cursor.
 *
 * Invariants:
 *   - An idempotency key has one idem record (id, expires) and an idem_exp
 *     entry (expires, key) for each time it was put; only the entry whose
 *     expiry matches the record forgets the key, so a key put again keeps
 *     its newer window.
 *   - Time-to-live entries are hints: they are not removed when a message is
 *     acknowledged or moved, so the sweep checks the id of what it finds.
 *     Each append of such a message, and each move into q.<L> or delayed,
 *     adds an entry for its new place.
 *
 * Costs: store_find is O(position) and store_delayed_find O(delayed), for
 * explain only. store_idem_expire and store_ttl_next take the earliest
 * entries: O(log n) per key forgotten or entry consumed.
 * store_level_bytes is O(1).
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

/* ---- settings and lookups for administration ---- */

int store_meta_put(store *s, const char *key, const void *val, size_t len)
{
    MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)val};
    int err = store_txn_need(s);
    return err != SL_OK ? err : store_mdb_put(s, s->meta, &k, &v, 0);
}

int store_meta_scan(store *s, const char *prefix, store_meta_fn fn, void *ctx)
{
    size_t plen = strlen(prefix);
    MDB_cursor *cur;
    MDB_val k = {plen, (void *)prefix}, v;
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_cursor_open(s->txn, s->meta, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open a cursor on meta");
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
    }
    mdb_cursor_close(cur);
    return rc == MDB_SUCCESS || rc == MDB_NOTFOUND ? SL_OK : store_fail(s, rc, "scan meta");
}

int store_find(store *s, unsigned level, uint64_t id, uint64_t limit, uint64_t *key, uint64_t *rank)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    err = store_cursor_at(s, s->q[level], MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err;
    int rc = MDB_SUCCESS;
    err = SL_ENOTFOUND;
    for (uint64_t n = 0; n < limit && rc == MDB_SUCCESS; n++) {
        store_rec rec;
        if (store_decode(s, s->q[level], &v, get_be64(k.mv_data), &rec) == SL_OK && rec.id == id) {
            *key = get_be64(k.mv_data);
            *rank = n;
            err = SL_OK;
            break;
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
        return store_fail(s, rc, "scan q.%u", level);
    return err;
}

int store_delayed_find(store *s, uint64_t id, unsigned *level, uint64_t *due_ns)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    err = store_cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err;
    int rc;
    err = SL_ENOTFOUND;
    do {
        if (get_be64((const unsigned char *)k.mv_data + 8) == id) {
            *due_ns = get_be64(k.mv_data);
            int l = rec_peek_level(v.mv_data, v.mv_size);
            *level = l < 0 ? 0 : (unsigned)l;
            err = SL_OK;
            break;
        }
    } while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == MDB_SUCCESS);
    mdb_cursor_close(cur);
    return err;
}

/* ---- the time-to-live index ---- */

/* Entries are not removed when the message is acknowledged (that would cost
 * every ack a read); the sweep drops the stale ones it finds. */
int store_aux_ttl_note(store *s, const store_rec *rec, unsigned where, uint64_t loc)
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
        rc = mdb_cursor_del(cur, 0);
        err = rc == MDB_SUCCESS ? SL_OK : store_fail(s, rc, "consume a ttl entry");
        s->dirty = 1;
    }
    mdb_cursor_close(cur);
    return err;
}

/* ---- publishing extras: delayed appends and idempotency keys ---- */

int store_append_delayed(store *s, const store_rec *rec, uint64_t due_ns)
{
    unsigned char kb[16];
    MDB_val k = {sizeof kb, kb}, v = {0, NULL};
    int err = rec_size(rec, &v.mv_size);
    if (err == SL_OK)
        err = store_txn_level(s, rec->level);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, rec->id);
    err = store_mdb_put(s, s->delayed, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (err == SL_OK)
        rec_encode(rec, v.mv_data, v.mv_size);
    return err == SL_OK ? store_aux_ttl_note(s, rec, STORE_TTL_DELAYED, due_ns) : err;
}

int store_bury_delayed(store *s, uint64_t due_ns, uint64_t id, const char *reason, uint64_t died_ns,
                       unsigned *level_out)
{
    unsigned char kb[16], ib[8];
    MDB_val k = {sizeof kb, kb}, v, copy, dk = {sizeof ib, ib};
    store_rec rec;
    size_t reason_len = reason ? strnlen(reason, STORE_MAX_REASON) : 0;
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, id);
    int rc = mdb_get(s->txn, s->delayed, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read delayed message %" PRIu64, id);
    err = store_scratch_copy(s, &v, rec_tail_bytes(reason_len), &copy);
    if (err == SL_OK)
        err = store_decode(s, s->delayed, &copy, id, &rec);
    if (err == SL_OK && rec.level >= s->levels)
        err = SL_ECORRUPT;
    if (err != SL_OK)
        return err;
    rc = mdb_del(s->txn, s->delayed, &k, NULL);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "delete delayed message %" PRIu64, id);
    s->dirty = 1;
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns);
    put_be64(ib, id);
    *level_out = rec.level;
    return store_mdb_put(s, s->dead[rec.level], &dk, &copy, MDB_NOOVERWRITE);
}

int store_idem_get(store *s, const void *key, size_t len, uint64_t now_ns, uint64_t *id)
{
    MDB_val k = {len, (void *)key}, v;
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_get(s->txn, s->idem, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read an idempotency key");
    if (v.mv_size != 16) {
        log_error("store", "corrupt idempotency record of %zu bytes", v.mv_size);
        return SL_ECORRUPT;
    }
    if (get_le64((const unsigned char *)v.mv_data + 8) <= now_ns)
        return SL_ENOTFOUND; /* expired, not yet swept */
    *id = get_le64(v.mv_data);
    return SL_OK;
}

int store_idem_put(store *s, const void *key, size_t len, uint64_t id, uint64_t expires_ns)
{
    unsigned char val[16], ek[8 + PROTO_MAX_TAG];
    if (len == 0 || len > PROTO_MAX_TAG)
        return SL_EINVAL;
    MDB_val k = {len, (void *)key}, v = {sizeof val, val};
    MDB_val xk = {8 + len, ek}, xv = {0, NULL};
    put_le64(val, id);
    put_le64(val + 8, expires_ns);
    put_be64(ek, expires_ns);
    memcpy(ek + 8, key, len);
    int err = store_txn_need(s);
    if (err == SL_OK)
        err = store_mdb_put(s, s->idem, &k, &v, 0);
    if (err == SL_OK)
        err = store_mdb_put(s, s->idem_exp, &xk, &xv, 0);
    return err;
}

unsigned store_idem_expire(store *s, uint64_t now_ns, unsigned max)
{
    MDB_cursor *cur;
    MDB_val k, v;
    unsigned n = 0;
    if (store_txn_need(s) != SL_OK)
        return 0;
    if (mdb_cursor_open(s->txn, s->idem_exp, &cur) != MDB_SUCCESS)
        return 0;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (rc == MDB_SUCCESS && n < max && k.mv_size > 8) {
        uint64_t expires = get_be64(k.mv_data);
        if (expires > now_ns)
            break;
        /* forget the key unless it was used again since (a later expiry) */
        MDB_val ik = {k.mv_size - 8, (unsigned char *)k.mv_data + 8}, iv;
        if (mdb_get(s->txn, s->idem, &ik, &iv) == MDB_SUCCESS && iv.mv_size == 16 &&
            get_le64((const unsigned char *)iv.mv_data + 8) == expires) {
            rc = mdb_del(s->txn, s->idem, &ik, NULL);
            if (rc != MDB_SUCCESS) {
                store_fail(s, rc, "forget an idempotency key");
                break;
            }
        }
        rc = mdb_cursor_del(cur, 0);
        if (rc != MDB_SUCCESS) {
            store_fail(s, rc, "forget an idempotency key's expiry");
            break;
        }
        s->dirty = 1;
        n++;
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); /* expiries go in key order */
    }
    mdb_cursor_close(cur);
    return n;
}

/* ---- space ---- */

uint64_t store_level_bytes(store *s, unsigned level)
{
    MDB_stat st;
    if (level >= s->levels || store_txn_level(s, level) != SL_OK || mdb_stat(s->txn, s->q[level], &st) != MDB_SUCCESS)
        return 0;
    return (uint64_t)(st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * st.ms_psize;
}
