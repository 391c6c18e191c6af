/*
 * store_meta.c - what the store keeps besides messages for the operator:
 * settings blobs in meta (settings.c decides their bytes), and the read-only
 * lookups behind explain and the level limits.
 *
 * meta holds the store's own keys ("format", "levels", "next_id", "wal",
 * "ckpt", store.c and the log; "tagid/", "tagname/", "tag_next",
 * store_tag.c; "skip/", store_skip.c) and the settings ("level/NN",
 * "pool/NAME", "sink", "tagrule/", "tagpause/"). Puts run in the pass's
 * write transaction, so a setting commits with the pass that changed it.
 *
 * Every meta value is sealed (STORE_FORMAT 3): its bytes are followed by a
 * CRC-32C of the key and the value, so a damaged next id, log position or
 * setting is found instead of believed. Every read and write of meta goes
 * through store_meta_read, store_meta_write and store_meta_scan, which add
 * and check the seal; a store of format 2 or older (no seals) is read
 * without them until its upgrade at open seals every value
 * (store_upgrade.c).
 *
 * Costs: store_meta_put is one B-tree insert and a CRC of the value;
 * store_meta_scan O(matching keys); store_find O(position) and
 * store_delayed_find O(delayed), for explain only; store_level_bytes O(1)
 * (LMDB's page counts).
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "log.h"
#include "rec.h"
#include "store_int.h"

/* ---- sealed meta values ---- */

static uint32_t meta_sum(const MDB_val *k, const void *val, size_t len)
{
    return crc32c_extend(crc32c_value(k->mv_data, k->mv_size), val, len);
}

void store_meta_key_text(const void *key, size_t len, char *buf, size_t cap)
{
    const unsigned char *p = key;
    size_t n = 0;
    for (size_t i = 0; i < len && n + 5 < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' ? "%c" : "\\x%02x", p[i]);
    buf[n < cap ? n : cap - 1] = '\0';
}

int store_meta_open(store *s, const MDB_val *k, MDB_val *v)
{
    if (!s->meta_sealed)
        return SL_OK;
    if (v->mv_size >= STORE_META_SEAL &&
        get_le32((const unsigned char *)v->mv_data + v->mv_size - STORE_META_SEAL) ==
            meta_sum(k, v->mv_data, v->mv_size - STORE_META_SEAL)) {
        v->mv_size -= STORE_META_SEAL;
        return SL_OK;
    }
    char name[96];
    store_meta_key_text(k->mv_data, k->mv_size, name, sizeof name);
    log_error("store", "meta record \"%s\" failed its check (%zu bytes): it was damaged on disk", name, v->mv_size);
    return SL_ECORRUPT;
}

int store_meta_read(store *s, const void *key, size_t key_len, MDB_val *v)
{
    MDB_val k = {key_len, (void *)key};
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_get(s->txn, s->meta, &k, v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS) {
        char name[96];
        store_meta_key_text(key, key_len, name, sizeof name);
        return store_fail(s, rc, "read meta %s", name);
    }
    return store_meta_open(s, &k, v);
}

int store_meta_write(store *s, const void *key, size_t key_len, const void *val, size_t len)
{
    MDB_val k = {key_len, (void *)key}, v = {len + (s->meta_sealed ? STORE_META_SEAL : 0), NULL};
    int err = store_txn_need(s);
    if (err == SL_OK)
        err = store_mdb_put(s, s->meta, &k, &v, MDB_RESERVE);
    if (err != SL_OK)
        return err;
    unsigned char *p = v.mv_data;
    if (len)
        memmove(p, val, len);
    if (s->meta_sealed)
        put_le32(p + len, meta_sum(&k, p, len));
    return SL_OK;
}

/* ---- settings ---- */

int store_meta_put(store *s, const char *key, const void *val, size_t len)
{
    return store_meta_write(s, key, strlen(key), val, len);
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
        if (store_meta_open(s, &k, &v) != SL_OK) {
            err = SL_ECORRUPT; /* (logged) every meta value was checked at open: damage since */
            break;
        }
        fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
    }
    mdb_cursor_close(cur);
    if (err != SL_OK)
        return err;
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
    for (uint64_t n = 0; n < limit && rc == MDB_SUCCESS;) {
        store_rec rec;
        if (k.mv_size != 8 || store_skipped(s, level, get_be64(k.mv_data))) {
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT); /* set aside (store_skip.c) */
            continue;
        }
        if (store_decode(s, s->q[level], &k, &v, &rec) == SL_OK && rec.id == id) {
            *key = get_be64(k.mv_data);
            *rank = n;
            err = SL_OK;
            break;
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        n++;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
        return store_fail(s, rc, "scan q.%u", level);
    return err;
}

int store_delayed_find(store *s, uint64_t id, unsigned *level, uint64_t *due_ns, store_rec *rec)
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
            if (rec && rec_decode(v.mv_data, v.mv_size, REC_LIVE, store_rec_key(&k), rec, NULL) != SL_OK)
                memset(rec, 0, sizeof *rec); /* found, but not readable: no headers to show */
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
    if (store_txn_level(s, level) == SL_OK && store_entries(s, s->q[level], &n) == SL_OK)
        n -= store_skip_count(s, level); /* records set aside in place (store_skip.c) */
    return n;
}
