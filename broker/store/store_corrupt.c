/*
 * store_corrupt.c - a record that fails its check is moved out of the way.
 *
 * LMDB 0.9 has no page checksums, so every record carries a CRC32C (rec.c).
 * A record in q.<L> that fails it cannot be delivered, and left in place it
 * would stop its level for good: it is always the head. store_quarantine
 * takes it out of q.<L> in the pass's transaction and keeps its bytes as a
 * dead letter of the same level, so that an operator can see it with
 * `sluice dead list` and `dead peek` (and purge it) like any other:
 *
 *   id      a new id (the stored one cannot be trusted)
 *   tag     "corrupt"
 *   body    the record's raw bytes, as they were on disk
 *   reason  "corrupt: stored record failed its checksum (queue key K)"
 *
 * Requeueing it would publish those raw bytes as a message: that is the
 * operator's call, as for every dead letter.
 *
 * Invariant: nothing that passed its check is ever quarantined; the
 * quarantined bytes are never decoded as a message. Cost: one read, one
 * delete and one write of the record's size, plus a malloc of it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

int store_quarantine(store *s, unsigned level, uint64_t key, uint64_t died_ns, uint64_t *id_out)
{
    unsigned char kb[8];
    MDB_val k = {sizeof kb, kb}, v;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    put_be64(kb, key);
    int rc = mdb_get(s->txn, s->q[level], &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read corrupt record %" PRIu64 " of level %u", key, level);
    size_t raw_len = v.mv_size > PROTO_MAX_BODY ? PROTO_MAX_BODY : v.mv_size;
    char reason[96];
    int reason_len = snprintf(reason, sizeof reason, "corrupt: stored record failed its checksum (queue key %" PRIu64 ")",
                              key);
    rec_msg m = {.id = store_next_id(s), .enq_ns = died_ns, .cost = 1, .level = (uint8_t)level,
                 .tag = "corrupt", .tag_len = 7, .body_len = (uint32_t)raw_len};
    size_t bytes = 0;
    void *raw = malloc(raw_len ? raw_len : 1);
    if (!raw)
        return SL_ENOMEM;
    memcpy(raw, v.mv_data, raw_len);
    m.body = raw;
    err = rec_size(&m, &bytes);
    size_t cap = bytes + rec_tail_bytes((size_t)reason_len);
    unsigned char *buf = err == SL_OK ? malloc(cap) : NULL;
    if (err == SL_OK && !buf)
        err = SL_ENOMEM;
    if (err == SL_OK)
        err = store_mdb_del(s, s->q[level], key);
    if (err == SL_OK) {
        rec_encode(&m, buf, bytes);
        MDB_val dv = {rec_bury(buf, bytes, cap, reason, (size_t)reason_len, died_ns), buf};
        unsigned char ib[8];
        MDB_val dk = {sizeof ib, ib};
        put_be64(ib, m.id);
        err = store_mdb_put(s, s->dead[level], &dk, &dv, MDB_NOOVERWRITE);
    }
    if (err == SL_OK) {
        *id_out = m.id;
        log_error("store", "level %u: the record at queue key %" PRIu64 " failed its checksum; moved to the "
                  "level's dead letters as id %" PRIu64 " (tag \"corrupt\", its raw bytes as the body)",
                  level, key, m.id);
    }
    free(buf);
    free(raw);
    return err;
}
