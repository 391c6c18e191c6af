/*
 * store_io.c - the wrappers through which every record read and write of
 * the store goes, and the pass's write transaction they run in.
 *
 * Errors: every failed mdb_* call goes through store_fail, which maps it to
 * the one error currency (SL_*), logs it once, and marks the transaction
 * failed: LMDB refuses more work in a transaction after a failure, so every
 * later operation returns the same error and store_commit aborts. A write
 * while a commit is out is a bug and is refused without poisoning the
 * snapshot.
 *
 * Records: every record read for use goes through store_decode, which
 * checks its CRC-32C (over its key and bytes) and lengths (rec_decode) and
 * that its level byte matches the q.<L> or dead.<L> it was found in.
 *
 * Levels: every operation on a level's trees comes through store_txn_level
 * or store_txn_lazy, which refuse a quarantined level (SL_ECORRUPT): its
 * trees failed their checks (store_check.c) and are never read again. An
 * LMDB failure on a damaged page is noted for store_recheck.
 *
 * The anchor: a key below every record key of a queue database, written
 * once, keeps an emptied queue from giving back (and then taking again) a
 * page per message; counts and cursors step over it (store_stat,
 * store_cursor_at).
 *
 * Costs: a read is one lookup plus a CRC; a count is O(1) (mdb_stat).
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "rec.h"
#include "store_int.h"

/* ---- errors and the pass's transaction ---- */

static int err_from_mdb(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:  return SL_OK;
    case MDB_NOTFOUND: return SL_ENOTFOUND;
    case MDB_MAP_FULL: return SL_ENOSPC;
    case ENOSPC:       return SL_ENOSPC; /* the disk itself is full */
    case ENOMEM:       return SL_ENOMEM;
    default:           return SL_EIO;    /* MDB_PANIC, EIO, MDB_CORRUPTED, ... */
    }
}

int store_fail(store *s, int rc, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (s->frozen) { /* a write while the commit is out: a bug, refused; the snapshot stays usable */
        log_error("store", "cannot %s while a commit is in progress: %s", what, mdb_strerror(rc));
        return rc == EACCES ? SL_ESTATE : err_from_mdb(rc);
    }
    s->damage_seen |= rc == MDB_PAGE_NOTFOUND || rc == MDB_CORRUPTED; /* which tree: store_recheck */
    int nospace = err_from_mdb(rc) == SL_ENOSPC;
    if (nospace && s->nospace_logged)
        ; /* once until a commit succeeds: the loop counts the refusals in a rate-limited line */
    else if (rc != MDB_PANIC)
        log_error("store", "%s: %s", what, mdb_strerror(rc));
    else if (!s->panic_logged)
        log_error("store", "%s: %s: the LMDB environment is unusable; restart the broker",
                  what, mdb_strerror(rc));
    s->panic_logged |= rc == MDB_PANIC;
    s->nospace_logged |= nospace;
    if (s->failed == SL_OK)
        s->failed = err_from_mdb(rc);
    return err_from_mdb(rc);
}

int store_txn_need(store *s)
{
    if (s->failed != SL_OK)
        return s->failed;
    if (s->txn)
        return SL_OK;
    int rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
    if (rc != MDB_SUCCESS) {
        s->txn = NULL;
        return store_fail(s, rc, "begin a write transaction");
    }
    return SL_OK;
}

int store_txn_lazy(store *s, unsigned level)
{
    if (level >= s->levels)
        return SL_EINVAL;
    if ((s->quarantined >> level) & 1)
        return SL_ECORRUPT; /* its trees failed their checks: never read (store_check.c) */
    return store_txn_need(s);
}

int store_txn_level(store *s, unsigned level)
{
    int err = store_txn_lazy(s, level);
    return err == SL_OK && s->ngone ? store_gone_apply(s) : err;
}

/* ---- records ---- */

int store_decode(store *s, MDB_dbi dbi, const MDB_val *k, const MDB_val *v, store_rec *out)
{
    const store_db *db = &s->db[dbi];
    const char *why;
    int err = rec_decode(v->mv_data, v->mv_size, db->dead ? REC_DEAD : REC_LIVE, store_rec_key(k), out, &why);
    if (err == SL_OK && db->level >= 0 && out->level != db->level) {
        why = "level field does not match the database";
        err = SL_ECORRUPT;
    }
    if (err != SL_OK) {
        uint64_t key = k->mv_size == 8 ? get_be64(k->mv_data) : k->mv_size == 16 ? get_be64((const unsigned char *)k->mv_data + 8) : 0;
        log_error("store", "corrupt record in %s, %s %" PRIu64 ": %s", db->name,
                  db->level >= 0 && !db->dead ? "key" : "id", key, why);
    }
    return err;
}

int store_scratch_copy(store *s, const MDB_val *v, size_t extra, MDB_val *copy)
{
    unsigned char *p = grow_array(s->scratch, &s->scratch_bytes, v->mv_size + extra, 1, 4096);
    if (!p) {
        log_error("store", "out of memory copying a record of %zu bytes", v->mv_size);
        return SL_ENOMEM;
    }
    s->scratch = p;
    memcpy(s->scratch, v->mv_data, v->mv_size);
    copy->mv_data = s->scratch;
    copy->mv_size = v->mv_size;
    return SL_OK;
}

/* ---- mdb wrappers; the transaction must be open ---- */

int store_mdb_get(store *s, MDB_dbi dbi, uint64_t key, store_rec *out, MDB_val *copy, size_t extra)
{
    unsigned char kb[8];
    MDB_val k, v;
    key_u64(&k, kb, key);
    int rc = mdb_get(s->txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read %s key %" PRIu64, s->db[dbi].name, key);
    int err = copy ? store_scratch_copy(s, &v, extra, copy) : SL_OK;
    return err != SL_OK ? err : store_decode(s, dbi, &k, copy ? copy : &v, out);
}

int store_mdb_put(store *s, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags)
{
    int rc = mdb_put(s->txn, dbi, k, v, flags);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "write %zu bytes to %s", v->mv_size, s->db[dbi].name);
    store_wal_touch(s, dbi, k->mv_data, k->mv_size, 1);
    s->dirty = 1;
    return SL_OK;
}

int store_mdb_del(store *s, MDB_dbi dbi, uint64_t key)
{
    unsigned char kb[8];
    MDB_val k;
    key_u64(&k, kb, key);
    int rc = mdb_del(s->txn, dbi, &k, NULL);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "delete %s key %" PRIu64, s->db[dbi].name, key);
    store_wal_touch(s, dbi, kb, sizeof kb, 0);
    s->dirty = 1;
    return SL_OK;
}

/* ---- the anchor (store_int.h) ---- */

static const unsigned char anchor_byte = 0;

static int is_anchor(const MDB_val *k)
{
    return k->mv_size == STORE_ANCHOR_BYTES && *(const unsigned char *)k->mv_data == anchor_byte;
}

static int anchor_present(store *s, MDB_dbi dbi)
{
    MDB_val k = {STORE_ANCHOR_BYTES, (void *)&anchor_byte}, v;
    return mdb_get(s->txn, dbi, &k, &v) == MDB_SUCCESS;
}

int store_anchor_put(store *s, MDB_dbi dbi)
{
    MDB_val k = {STORE_ANCHOR_BYTES, (void *)&anchor_byte}, v = {1, (void *)&anchor_byte};
    return anchor_present(s, dbi) ? SL_OK : store_mdb_put(s, dbi, &k, &v, 0);
}

int store_cursor_at(store *s, MDB_dbi dbi, MDB_cursor_op op, MDB_val *k, MDB_val *v,
                    MDB_cursor **keep)
{
    MDB_cursor *cur;
    int err = SL_OK;
    int rc = mdb_cursor_open(s->txn, dbi, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open a cursor on %s", s->db[dbi].name);
    rc = mdb_cursor_get(cur, k, v, op);
    if (rc == MDB_SUCCESS && is_anchor(k)) /* the smallest key: past it, or nothing below it */
        rc = op == MDB_LAST ? MDB_NOTFOUND : mdb_cursor_get(cur, k, v, MDB_NEXT);
    if (rc == MDB_NOTFOUND)
        err = SL_ENOTFOUND;
    else if (rc != MDB_SUCCESS)
        err = store_fail(s, rc, "move a cursor on %s", s->db[dbi].name);
    else if (k->mv_size != (dbi == s->delayed ? 16u : 8u)) {
        log_error("store", "corrupt key of %zu bytes in %s", k->mv_size, s->db[dbi].name);
        err = SL_ECORRUPT;
    }
    if (keep && err == SL_OK)
        *keep = cur;
    else
        mdb_cursor_close(cur);
    return err;
}

int store_edge_key(store *s, unsigned level, MDB_cursor_op op, uint64_t *key)
{
    MDB_val k, v;
    int err = store_cursor_at(s, s->q[level], op, &k, &v, NULL);
    if (err == SL_OK)
        *key = get_be64(k.mv_data);
    return err;
}

int store_stat(store *s, MDB_dbi dbi, MDB_stat *st, uint64_t *n)
{
    int rc = mdb_stat(s->txn, dbi, st);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "count %s", s->db[dbi].name);
    *n = st->ms_entries;
    if (*n && anchor_present(s, dbi))
        (*n)--;
    return SL_OK;
}

int store_entries(store *s, MDB_dbi dbi, uint64_t *n)
{
    MDB_stat st;
    return store_stat(s, dbi, &st, n);
}

int store_delayed_scan(store *s, uint64_t counts[PROTO_MAX_LEVELS])
{
    MDB_cursor *cur;
    MDB_val k, v;
    memset(counts, 0, PROTO_MAX_LEVELS * sizeof counts[0]);
    int err = store_cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err == SL_ENOTFOUND ? SL_OK : err;
    int rc;
    do {
        int level = rec_peek_level(v.mv_data, v.mv_size);
        if (level >= 0 && level < PROTO_MAX_LEVELS && !store_skipped_delayed(s, &k))
            counts[level]++;
    } while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == MDB_SUCCESS);
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? SL_OK : store_fail(s, rc, "scan delayed");
}
