/*
 * store_meta.c - what the store keeps besides messages for the operator:
 * settings blobs in meta (settings.c decides their bytes), and the read-only
 * lookups behind explain and the level limits.
 *
 * meta holds the store's own keys ("format", "levels", "next_id", store.c)
 * and the settings ("level/NN", "pool/NAME", "sink"). Puts run in the pass's
 * write transaction, so a setting commits with the pass that changed it.
 *
 * Costs: store_meta_put is one B-tree insert; store_meta_scan O(matching
 * keys); store_find O(position) and store_delayed_find O(delayed), for
 * explain only; store_level_bytes O(1) (LMDB's page counts).
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

int store_meta_put(store *s, const char *key, const void *val, size_t len)
{
    MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)val};
    int err = store_txn_need(s);
    return err != SL_OK ? err : store_mdb_put(s, s->meta, &k, &v, 0);
}

int store_meta_del(store *s, const char *key)
{
    MDB_val k = {strlen(key), (void *)key};
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_del(s->txn, s->meta, &k, NULL);
    if (rc == MDB_SUCCESS)
        store_wal_touch(s, s->meta, k.mv_data, k.mv_size, 0);
    return rc == MDB_SUCCESS || rc == MDB_NOTFOUND ? SL_OK : store_fail(s, rc, "delete setting %s", key);
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

uint64_t store_level_bytes(store *s, unsigned level)
{
    MDB_stat st;
    uint64_t n = 0;
    if (level >= s->levels || store_txn_lazy(s, level) != SL_OK || store_stat(s, s->q[level], &st, &n) != SL_OK ||
        n == 0)
        return 0; /* (the anchor's page is no message's) */
    return (uint64_t)(st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * st.ms_psize;
}

uint64_t store_level_count(store *s, unsigned level)
{
    uint64_t n = 0;
    if (store_txn_level(s, level) == SL_OK)
        store_entries(s, s->q[level], &n);
    return n;
}
