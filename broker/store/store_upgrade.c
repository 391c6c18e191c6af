/*
 * store_upgrade.c - an older store brought to STORE_FORMAT at open.
 *
 * Format 1 had no anchors; format 2 added one to each queue (store_int.h:
 * store_open puts a missing anchor into every queue, whatever the format);
 * format 3 made every checksum cover its key and sealed meta:
 *
 *   - every record of q.<L>, dead.<L> and delayed is sealed again for its
 *     key (rec_reseal: the record's format byte becomes 2), in place, the
 *     same size;
 *   - every meta value gets its seal (store_meta.c), "format" included.
 *
 * It runs once, inside the open's transaction, after the log's replay (a
 * replayed batch of an older broker carries the older format too), so the
 * store is of one format or the other, never half of each: a crash during
 * the upgrade leaves format 2, and the next open upgrades again. A record
 * that fails its check is left as it is (its level's reads set it aside
 * later, store_corrupt.c); a quarantined level's trees are not read
 * (store_check.c) and keep their records as they are, which salvage reads
 * too.
 *
 * Format 4 let a record carry the message's headers (rec.c: a flag, and a
 * block after the body). A record of format 3 reads as a message with no
 * headers, byte for byte as it was written, so a store of format 3 only
 * gets "format" written: no record is read or rewritten, and an older
 * broker, which would take a record with headers for a damaged one, refuses
 * the directory by its format instead. Formats 1 and 2 get the pass above,
 * which writes the records in the current format (without headers).
 *
 * A new store (format 0 here) only gets "format" written.
 *
 * Costs: one pass over every record (a CRC each and a write in place) and
 * over meta; memory for meta's entries while it is sealed. One transaction:
 * LMDB keeps the pages it touched in memory until the open commit, about
 * the store's size for a store of small records (DESIGN.md).
 */
#include "store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "rec.h"
#include "store_int.h"

/* reseal_tree seals every record of tree name (dead: dead letters) for its
 * key. *done counts records rewritten, *bad those that failed their check. */
static int reseal_tree(store *s, const char *name, int dead, uint64_t *done, uint64_t *bad)
{
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v, copy;
    int err = store_db_open_named(s, name, &dbi);
    if (err != SL_OK)
        return err;
    int rc = mdb_cursor_open(s->txn, dbi, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open a cursor on %s", name);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        rec_msg m;
        if (k.mv_size == STORE_ANCHOR_BYTES)
            continue;
        if (rec_decode(v.mv_data, v.mv_size, dead ? REC_DEAD : REC_LIVE, store_rec_key(&k), &m, NULL) != SL_OK) {
            ++*bad;
            continue;
        }
        if ((err = store_scratch_copy(s, &v, 0, &copy)) != SL_OK)
            break;
        rec_reseal(copy.mv_data, copy.mv_size, store_rec_key(&k));
        if ((rc = mdb_cursor_put(cur, &k, &copy, MDB_CURRENT)) != MDB_SUCCESS)
            break;
        ++*done;
    }
    mdb_cursor_close(cur);
    if (err != SL_OK)
        return err;
    return rc == MDB_NOTFOUND ? SL_OK : store_fail(s, rc, "upgrade the records of %s", name);
}

/* A copy of meta's entries, to seal them without writing under a cursor. */
typedef struct meta_copy {
    unsigned char *bytes;
    size_t len, cap;
    size_t n;
} meta_copy;

static int meta_copy_add(meta_copy *c, const MDB_val *k, const MDB_val *v)
{
    unsigned char *p = grow_array(c->bytes, &c->cap, c->len + 8 + k->mv_size + v->mv_size, 1, 4096);
    if (!p)
        return SL_ENOMEM;
    c->bytes = p;
    put_le32(p + c->len, (uint32_t)k->mv_size);
    put_le32(p + c->len + 4, (uint32_t)v->mv_size);
    memcpy(p + c->len + 8, k->mv_data, k->mv_size);
    memcpy(p + c->len + 8 + k->mv_size, v->mv_data, v->mv_size);
    c->len += 8 + k->mv_size + v->mv_size;
    c->n++;
    return SL_OK;
}

/* seal_meta seals every meta value (s->meta_sealed is 0 until it is done). */
static int seal_meta(store *s, size_t *n)
{
    meta_copy c = {0};
    MDB_cursor *cur;
    MDB_val k, v;
    int err = SL_OK, rc = mdb_cursor_open(s->txn, s->meta, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open a cursor on meta");
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS && err == SL_OK;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        err = meta_copy_add(&c, &k, &v);
    mdb_cursor_close(cur);
    if (err == SL_OK && rc != MDB_NOTFOUND)
        err = store_fail(s, rc, "read meta");
    s->meta_sealed = 1;
    for (size_t off = 0; err == SL_OK && off < c.len;) {
        size_t klen = get_le32(c.bytes + off), vlen = get_le32(c.bytes + off + 4);
        err = store_meta_write(s, c.bytes + off + 8, klen, c.bytes + off + 8 + klen, vlen);
        off += 8 + klen + vlen;
    }
    *n = c.n;
    free(c.bytes);
    return err;
}

int store_upgrade(store *s, const char *dir, unsigned from)
{
    unsigned char b[4];
    put_le32(b, STORE_FORMAT);
    if (from == 0) { /* a new store */
        s->meta_sealed = 1;
        return store_meta_write(s, "format", 6, b, sizeof b);
    }
    if (from >= 3) { /* records and meta as they are: format 4 only gave a record's flag a meaning */
        int err = store_meta_write(s, "format", 6, b, sizeof b);
        if (err == SL_OK)
            log_info("store", "data dir %s: store format %u becomes %d (records may carry headers); no record "
                     "rewritten: the stored messages have none", dir, from, STORE_FORMAT);
        return err;
    }
    uint64_t done = 0, bad = 0;
    size_t nmeta = 0;
    MDB_dbi main_dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    char names[STORE_MAXDBS][sizeof s->db[0].name];
    unsigned nnames = 0;
    int rc = mdb_dbi_open(s->txn, NULL, 0, &main_dbi);
    if (rc == MDB_SUCCESS)
        rc = mdb_cursor_open(s->txn, main_dbi, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "list the databases");
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS && nnames < STORE_MAXDBS;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        if (k.mv_size < sizeof names[0]) {
            memcpy(names[nnames], k.mv_data, k.mv_size);
            names[nnames++][k.mv_size] = '\0';
        }
    mdb_cursor_close(cur);
    int err = SL_OK;
    for (unsigned i = 0; i < nnames && err == SL_OK; i++) {
        const char *name = names[i];
        int dead = strncmp(name, "dead.", 5) == 0;
        unsigned level = (unsigned)atoi(name + (dead ? 5 : 2));
        if (!dead && strncmp(name, "q.", 2) != 0 && strcmp(name, "delayed") != 0)
            continue;
        if (strcmp(name, "delayed") != 0 && store_level_quarantined(s, level))
            continue; /* never read (store_check.c): salvage reads both formats */
        err = reseal_tree(s, name, dead, &done, &bad);
    }
    if (err == SL_OK)
        err = seal_meta(s, &nmeta);
    if (err == SL_OK)
        err = store_meta_write(s, "format", 6, b, sizeof b);
    if (err == SL_OK)
        log_info("store", "data dir %s: store format %u becomes %d (every record's checksum covers its key, every "
                 "meta value is sealed): %" PRIu64 " records and %zu meta values rewritten%s", dir, from,
                 STORE_FORMAT, done, nmeta, bad ? "; some records failed their check and were left as they are" : "");
    return err;
}
