/*
 * store_idem.c - idempotency keys: key -> (id, expires) in idem, and
 * (expires, key) -> nothing in idem_exp, the order to forget them in.
 *
 * Invariant: a key has one idem record and an idem_exp entry for each time
 * it was put; only the entry whose expiry matches the record forgets the
 * key, so a key put again keeps its newer window. Puts run in the pass's
 * write transaction, so a key commits with the message it names.
 *
 * Costs: get and put are one or two B-tree operations; store_idem_expire
 * takes the earliest entries: O(log n) per key forgotten.
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

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
            store_wal_touch(s, s->idem, ik.mv_data, ik.mv_size, 0);
        }
        store_wal_touch(s, s->idem_exp, k.mv_data, k.mv_size, 0); /* before the delete: k points into the page */
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
