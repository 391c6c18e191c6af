/*
 * store_corrupt.c - a record that fails its check is set aside, in place.
 *
 * LMDB 0.9 has no page checksums, so every record carries a CRC32C of its
 * key and bytes (rec.c). A record in q.<L> that fails it cannot be
 * delivered, and left as it is it would stop its level for good: it is
 * always the head. store_quarantine keeps a copy of its bytes as a dead
 * letter of the same level, so that an operator can see it with `sluice
 * dead list` and `dead peek` (and purge the copy) like any other:
 *
 *   id      a new id (the stored one cannot be trusted)
 *   tag     "corrupt"
 *   body    the record's raw bytes, as they are on disk
 *   reason  "corrupt: stored record failed its checksum (queue key K)"
 *
 * and notes its key on the level's skip list (store_skip.c), in the same
 * transaction, which every walk of the level steps over. The record itself
 * is never deleted: its bytes are not what was written, the node that holds
 * them may be damaged too, and LMDB's delete would move the page's other
 * nodes by what that node claims. `sluice salvage` builds a store without
 * it.
 *
 * A delayed record that fails its check when it comes due is set aside the
 * same way (store_delayed_set_aside, store_msg.c), so the delayed messages
 * behind it go on coming due.
 *
 * Requeueing the copy would publish those raw bytes as a message: that is
 * the operator's call, as for every dead letter.
 *
 * Invariant: nothing that passed its check is ever set aside; the bytes
 * set aside are never decoded as a message. Cost: one read, one write of
 * the record's size and a meta put, plus a malloc of it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

int store_set_aside(store *s, unsigned level, const MDB_val *raw_val, const char *reason, uint64_t died_ns,
                    uint64_t *id_out)
{
    size_t raw_len = raw_val->mv_size > PROTO_MAX_BODY ? PROTO_MAX_BODY : raw_val->mv_size;
    size_t reason_len = strlen(reason);
    rec_msg m = {.id = store_next_id(s), .enq_ns = died_ns, .cost = 1, .level = (uint8_t)level,
                 .tag = "corrupt", .tag_len = 7, .body_len = (uint32_t)raw_len};
    size_t bytes = 0;
    void *raw = malloc(raw_len ? raw_len : 1); /* (the value may move with the put below) */
    if (!raw)
        return SL_ENOMEM;
    memcpy(raw, raw_val->mv_data, raw_len);
    m.body = raw;
    int err = rec_size(&m, &bytes);
    size_t cap = bytes + rec_tail_bytes(reason_len);
    unsigned char *buf = err == SL_OK ? malloc(cap) : NULL;
    if (err == SL_OK && !buf)
        err = SL_ENOMEM;
    if (err == SL_OK) {
        unsigned char ib[8];
        MDB_val dk = {sizeof ib, ib};
        put_be64(ib, m.id);
        rec_encode(&m, store_rec_key(&dk), buf, bytes);
        MDB_val dv = {rec_bury(buf, bytes, cap, reason, reason_len, died_ns, store_rec_key(&dk)), buf};
        err = store_mdb_put(s, s->dead[level], &dk, &dv, MDB_NOOVERWRITE);
    }
    if (err == SL_OK)
        *id_out = m.id;
    free(buf);
    free(raw);
    return err;
}

int store_quarantine(store *s, unsigned level, uint64_t key, uint64_t died_ns, uint64_t *id_out)
{
    unsigned char kb[8];
    MDB_val k = {sizeof kb, kb}, v;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    if (store_skipped(s, level, key))
        return SL_ENOTFOUND; /* set aside already */
    put_be64(kb, key);
    int rc = mdb_get(s->txn, s->q[level], &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read corrupt record %" PRIu64 " of level %u", key, level);
    char reason[96];
    snprintf(reason, sizeof reason, "corrupt: stored record failed its checksum (queue key %" PRIu64 ")", key);
    err = store_set_aside(s, level, &v, reason, died_ns, id_out);
    if (err == SL_OK)
        err = store_skip_add(s, level, key, *id_out);
    if (err == SL_OK)
        log_error("store", "level %u: the record at queue key %" PRIu64 " failed its checksum; left in place and "
                  "skipped, its copy in the level's dead letters as id %" PRIu64 " (tag \"corrupt\", its raw "
                  "bytes as the body)", level, key, *id_out);
    return err;
}
