/*
 * store_msg.c - messages in the store: appends at the tail of q.<L>, reads,
 * deletes (acks), attempt rewrites, burials into dead.<L>, and the trips
 * through the delayed database and back to the head of a level.
 *
 * Every operation here runs in the pass's write transaction (store.c begins
 * it, store_commit ends it) and reaches LMDB through the wrappers in
 * store_int.h; any failed mdb_* call goes through store_fail, which logs it
 * once and poisons the transaction.
 *
 * Invariants:
 *   - last_key[L] is at least the largest order key this process has put in
 *     q.<L>, so ++last_key[L] is always a free key past the tail, and appends
 *     can use MDB_APPEND (which fills pages instead of splitting them). Keys
 *     burnt by an aborted pass leave harmless gaps.
 *   - Head keys grow down from the first key: a delayed message that comes
 *     due goes back before everything queued in its level (store.h).
 *   - A record is checked (store_decode) whenever it is read or moved, so a
 *     corrupt record is reported, never moved elsewhere or delivered.
 *   - Each append of a message with a time to live, and each move of one
 *     into q.<L> or delayed, notes its new place in the expiry index
 *     (store_ttl_note), in the same transaction.
 *
 * Costs: an append is one B-tree insert plus a CRC over the record; a read
 * is one lookup plus a CRC; an ack is one delete. Moves and rewrites (bury,
 * delay, delayed pop, set_attempt) first copy the record to the scratch
 * buffer, since LMDB may move or free the source page while writing:
 * O(record bytes), on slow paths only. The scratch buffer is kept, at the
 * size of the largest record moved. store_delayed_counts walks the whole
 * delayed database, once at open.
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

/* ---- messages ---- */

/* LMDB's layout: a leaf node is an 8-byte header, the key and the value,
 * plus a 2-byte slot; a node over (page - 16 header bytes) / 2 moves its
 * value to overflow pages of its own (a 16-byte header, then the value). */
uint64_t store_value_bytes(const store *s, size_t value_bytes)
{
    uint64_t node = 8 + 8 + (uint64_t)value_bytes;
    if (node <= (s->page_bytes - 16) / 2)
        return node + 2;
    uint64_t pages = (value_bytes + 16 + s->page_bytes - 1) / s->page_bytes;
    return pages * s->page_bytes + 8 + 8 + 8 + 2;
}

int store_rec_put(store *s, const store_rec *rec, const uint32_t *tag_id, uint64_t *key)
{
    unsigned char kb[8];
    MDB_val k, v = {0, NULL};
    int err = rec_size(rec, &v.mv_size);
    if (err == SL_OK)
        err = store_txn_lazy(s, rec->level); /* a new key, past every acknowledged one */
    if (err != SL_OK)
        return err;
    uint64_t last = s->last_key[rec->level] + 1, next = last;
    unsigned flags = MDB_APPEND;
    if (tag_id) {
        last = (s->last_key[rec->level] & STORE_SEQ_MASK) + 1;
        if (last > STORE_SEQ_MASK || *tag_id > STORE_TAG_MAX)
            return SL_ENOSPC;
        next = (uint64_t)*tag_id << STORE_TAG_SHIFT | last;
        flags = MDB_NOOVERWRITE;
    }
    key_u64(&k, kb, next);
    err = store_mdb_put(s, s->q[rec->level], &k, &v, flags | MDB_RESERVE);
    if (err != SL_OK)
        return err;
    rec_encode(rec, v.mv_data, v.mv_size);
    s->last_key[rec->level] = last;
    *key = next;
    /* counted until the next measure, and as this pass's growth (room.c) */
    s->used_bytes = store_used_bytes(s) + store_value_bytes(s, v.mv_size);
    s->txn_added_bytes += store_value_bytes(s, v.mv_size);
    return SL_OK;
}

int store_append(store *s, const store_rec *rec, uint64_t *key)
{
    int err = store_rec_put(s, rec, NULL, key);
    if (err != SL_OK)
        return err;
    return store_ttl_note(s, rec, rec->level, *key);
}

int store_get(store *s, unsigned level, uint64_t key, store_rec *out)
{
    int err = store_txn_level(s, level);
    return err != SL_OK ? err : store_mdb_get(s, s->q[level], key, out, NULL, 0);
}

int store_seek_key(store *s, unsigned level, uint64_t from, uint64_t *key, MDB_val *v)
{
    unsigned char kb[8];
    MDB_val k;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    key_u64(&k, kb, from);
    err = store_cursor_at(s, s->q[level], MDB_SET_RANGE, &k, v, NULL);
    if (err == SL_OK)
        *key = get_be64(k.mv_data);
    return err;
}

int store_seek(store *s, unsigned level, uint64_t from, uint64_t *key, store_rec *out)
{
    MDB_val v;
    int err = store_seek_key(s, level, from, key, &v);
    return err != SL_OK ? err : store_decode(s, s->q[level], &v, *key, out);
}

int store_del(store *s, unsigned level, uint64_t key)
{
    int err = store_txn_lazy(s, level);
    if (err != SL_OK)
        return err;
    if ((s->fair_mask >> level) & 1 && !s->frozen)
        return store_gone_add(s, level, key); /* deleted with the next batch (store_gone.c) */
    return store_mdb_del(s, s->q[level], key);
}

int store_set_attempt(store *s, unsigned level, uint64_t key, uint32_t attempt)
{
    unsigned char kb[8];
    MDB_val k, copy;
    store_rec rec;
    int err = store_txn_level(s, level);
    if (err == SL_OK)
        err = store_mdb_get(s, s->q[level], key, &rec, &copy, 0);
    if (err != SL_OK)
        return err;
    rec_set_attempt(copy.mv_data, copy.mv_size, attempt);
    key_u64(&k, kb, key);
    return store_mdb_put(s, s->q[level], &k, &copy, 0);
}

int store_bury(store *s, unsigned level, uint64_t key, const char *reason, uint64_t died_ns)
{
    unsigned char kb[8];
    MDB_val k, copy;
    store_rec rec;
    size_t reason_len = reason ? strnlen(reason, STORE_MAX_REASON) : 0;
    int err = store_txn_level(s, level);
    if (err == SL_OK)
        err = store_mdb_get(s, s->q[level], key, &rec, &copy, rec_tail_bytes(reason_len));
    if (err == SL_OK)
        err = store_mdb_del(s, s->q[level], key);
    if (err != SL_OK)
        return err;
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns);
    key_u64(&k, kb, rec.id);
    return store_mdb_put(s, s->dead[level], &k, &copy, MDB_NOOVERWRITE);
}

int store_dead_get(store *s, unsigned level, uint64_t id, store_rec *out)
{
    int err = store_txn_level(s, level);
    return err != SL_OK ? err : store_mdb_get(s, s->dead[level], id, out, NULL, 0);
}

uint64_t store_dead_count(store *s, unsigned level)
{
    uint64_t n = 0;
    if (store_txn_level(s, level) == SL_OK)
        store_entries(s, s->dead[level], &n);
    return n;
}

/* ---- delayed messages ---- */

int store_delay(store *s, unsigned level, uint64_t key, uint64_t due_ns)
{
    unsigned char kb[16];
    MDB_val k = {sizeof kb, kb}, copy;
    store_rec rec;
    int err = store_txn_level(s, level);
    if (err == SL_OK)
        err = store_mdb_get(s, s->q[level], key, &rec, &copy, 0);
    if (err == SL_OK)
        err = store_mdb_del(s, s->q[level], key);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, rec.id);
    err = store_mdb_put(s, s->delayed, &k, &copy, MDB_NOOVERWRITE);
    return err == SL_OK ? store_ttl_note(s, &rec, STORE_TTL_DELAYED, due_ns) : err;
}

int store_delayed_first(store *s, uint64_t *due_ns)
{
    MDB_val k, v;
    int err = store_txn_need(s);
    if (err == SL_OK)
        err = store_cursor_at(s, s->delayed, MDB_FIRST, &k, &v, NULL);
    if (err == SL_OK)
        *due_ns = get_be64(k.mv_data);
    return err;
}

int store_delayed_pop(store *s, uint64_t now_ns, unsigned *level_out, uint64_t *key_out)
{
    unsigned char kb[8];
    MDB_cursor *cur = NULL;
    MDB_val k, v, copy;
    store_rec rec;
    uint64_t key;
    int err = store_txn_need(s);
    if (err == SL_OK) /* it writes a head key of q.<L>: acknowledged keys are deleted first (store_gone.c) */
        err = store_gone_flush(s);
    if (err == SL_OK)
        err = store_cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err;
    if (get_be64(k.mv_data) > now_ns)
        err = SL_ENOTFOUND;
    if (err == SL_OK)
        err = store_scratch_copy(s, &v, 0, &copy);
    if (err == SL_OK)
        err = store_decode(s, s->delayed, &copy, get_be64((const unsigned char *)k.mv_data + 8), &rec);
    if (err == SL_OK && rec.level >= s->levels) {
        log_error("store", "delayed message %" PRIu64 " belongs to level %u of %u", rec.id, rec.level,
                  s->levels);
        err = SL_ECORRUPT;
    }
    if (err != SL_OK)
        goto cursor_close;
    store_wal_touch(s, s->delayed, k.mv_data, k.mv_size, 0); /* before the delete: k points into the page */
    int rc = mdb_cursor_del(cur, 0);
    if (rc != MDB_SUCCESS) {
        err = store_fail(s, rc, "delete delayed message %" PRIu64, rec.id);
        goto cursor_close;
    }
    s->dirty = 1;
    /* Back at the head: before the first key, or past the last if empty
     * (of its tag's run, in a level served fair by tag). */
    int fair = (s->fair_mask >> rec.level) & 1;
    err = fair ? store_tag_key(s, rec.level, &rec, 1, &key) : store_edge_key(s, rec.level, MDB_FIRST, &key);
    if (err == SL_OK && !fair) {
        SL_ASSERT(key > 0); /* would take 2^63 head inserts */
        key--;
    } else if (err == SL_ENOTFOUND) {
        key = ++s->last_key[rec.level];
        err = SL_OK;
    }
    if (err != SL_OK)
        goto cursor_close;
    key_u64(&k, kb, key);
    err = store_mdb_put(s, s->q[rec.level], &k, &copy, MDB_NOOVERWRITE);
    if (err == SL_OK && (!s->head_open[rec.level] || key > s->head_hi[rec.level])) {
        s->head_open[rec.level] = 1; /* below every committed key: not durable until the commit */
        s->head_hi[rec.level] = key;
    }
    if (err == SL_OK)
        err = store_ttl_note(s, &rec, rec.level, key);
    if (err == SL_OK) {
        *level_out = rec.level;
        *key_out = key;
    }
cursor_close:
    mdb_cursor_close(cur);
    return err;
}

void store_delayed_counts(store *s, uint64_t *counts)
{
    uint64_t all[PROTO_MAX_LEVELS] = {0};
    if (store_txn_need(s) == SL_OK)
        store_delayed_scan(s, all);
    memcpy(counts, all, s->levels * sizeof counts[0]);
}

/* ---- publishes with a delay, and burials of delayed messages ---- */

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
    return err == SL_OK ? store_ttl_note(s, rec, STORE_TTL_DELAYED, due_ns) : err;
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
    store_wal_touch(s, s->delayed, k.mv_data, k.mv_size, 0);
    s->dirty = 1;
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns);
    put_be64(ib, id);
    *level_out = rec.level;
    return store_mdb_put(s, s->dead[rec.level], &dk, &copy, MDB_NOOVERWRITE);
}
