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
 * Delayed records of a quarantined level are stepped over (never moved
 * into its trees), and a delayed record that fails its check when it comes
 * due is set aside (store_delayed_set_aside), so what is behind it goes on.
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
#include <stdio.h>
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
    rec_encode(rec, store_rec_key(&k), v.mv_data, v.mv_size);
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
    if (err == SL_OK && store_skipped(s, level, key))
        return SL_ENOTFOUND; /* set aside (store_skip.c) */
    return err != SL_OK ? err : store_mdb_get(s, s->q[level], key, out, NULL, 0);
}

int store_seek_key(store *s, unsigned level, uint64_t from, uint64_t *key, MDB_val *v)
{
    unsigned char kb[8];
    MDB_val k;
    MDB_cursor *cur = NULL;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    key_u64(&k, kb, from);
    err = store_cursor_at(s, s->q[level], MDB_SET_RANGE, &k, v, &cur);
    if (err == SL_OK)
        err = store_skip_past(s, level, cur, &k, v); /* records set aside (store_skip.c) */
    if (err == SL_OK && k.mv_size != 8)
        err = SL_ECORRUPT; /* (checked at open: a key of another size is damage since) */
    if (err == SL_OK)
        *key = get_be64(k.mv_data);
    if (cur)
        mdb_cursor_close(cur);
    return err;
}

int store_seek(store *s, unsigned level, uint64_t from, uint64_t *key, store_rec *out)
{
    MDB_val v;
    unsigned char kb[8];
    MDB_val k;
    int err = store_seek_key(s, level, from, key, &v);
    key_u64(&k, kb, *key);
    return err != SL_OK ? err : store_decode(s, s->q[level], &k, &v, out);
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
    key_u64(&k, kb, key);
    rec_set_attempt(copy.mv_data, copy.mv_size, store_rec_key(&k), attempt);
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
    key_u64(&k, kb, rec.id);
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns,
                            store_rec_key(&k));
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
    rec_reseal(copy.mv_data, copy.mv_size, store_rec_key(&k)); /* for its new key */
    err = store_mdb_put(s, s->delayed, &k, &copy, MDB_NOOVERWRITE);
    return err == SL_OK ? store_ttl_note(s, &rec, STORE_TTL_DELAYED, due_ns) : err;
}

/* Delayed records of a quarantined level (store_check.c) are stepped over:
 * they stay where they are, counted among its quarantined messages, and are
 * never moved into its trees. Up to this many are stepped over per look;
 * past them the next look is DELAYED_RETRY_NS away. */
#define DELAYED_SKIP 4096
#define DELAYED_RETRY_NS UINT64_C(1000000000)

/* delayed_serveable moves cur (at *k, *v, a delayed record) past records of
 * quarantined levels. SL_OK on one that is not, SL_ENOTFOUND at the end,
 * SL_EAGAIN-like SL_EFULL after DELAYED_SKIP of them, or store_fail's. */
static int delayed_serveable(store *s, MDB_cursor *cur, MDB_val *k, MDB_val *v)
{
    int rc = MDB_SUCCESS;
    for (unsigned n = 0; rc == MDB_SUCCESS; n++) {
        int level = rec_peek_level(v->mv_data, v->mv_size);
        if ((level < 0 || !store_level_quarantined(s, (unsigned)level)) && !store_skipped_delayed(s, k))
            return SL_OK;
        if (n == DELAYED_SKIP)
            return SL_EFULL;
        rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
    }
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    return rc == MDB_SUCCESS ? SL_OK : store_fail(s, rc, "step a cursor on delayed");
}

int store_delayed_first(store *s, uint64_t *due_ns)
{
    MDB_val k, v;
    MDB_cursor *cur = NULL;
    int err = store_txn_need(s);
    if (err == SL_OK)
        err = store_cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err == SL_OK)
        err = delayed_serveable(s, cur, &k, &v);
    if (err == SL_OK)
        *due_ns = get_be64(k.mv_data);
    if (err == SL_EFULL) { /* a quarantined level's: look again later */
        *due_ns = get_be64(k.mv_data) + DELAYED_RETRY_NS;
        err = SL_OK;
    }
    if (cur)
        mdb_cursor_close(cur);
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
    if (err == SL_OK)
        err = delayed_serveable(s, cur, &k, &v);
    if (err != SL_OK) {
        if (cur)
            mdb_cursor_close(cur);
        return err == SL_EFULL ? SL_ENOTFOUND : err;
    }
    if (get_be64(k.mv_data) > now_ns)
        err = SL_ENOTFOUND;
    if (err == SL_OK)
        err = store_scratch_copy(s, &v, 0, &copy);
    if (err == SL_OK)
        err = store_decode(s, s->delayed, &k, &copy, &rec);
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
    rec_reseal(copy.mv_data, copy.mv_size, store_rec_key(&k)); /* for its new key */
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

int store_delayed_set_aside(store *s, uint64_t now_ns, unsigned *counted, unsigned *dead_level, uint64_t *id_out)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int err = store_txn_need(s);
    if (err == SL_OK)
        err = store_cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err == SL_OK)
        err = delayed_serveable(s, cur, &k, &v);
    if (err == SL_OK && get_be64(k.mv_data) > now_ns)
        err = SL_ENOTFOUND;
    unsigned char kb[16];
    if (err == SL_OK) {
        memcpy(kb, k.mv_data, sizeof kb);
        int peeked = rec_peek_level(v.mv_data, v.mv_size); /* what store_delayed_counts counted it as */
        *counted = peeked < 0 ? PROTO_MAX_LEVELS : (unsigned)peeked;
        *dead_level = *counted;
        if (*dead_level >= s->levels || store_level_quarantined(s, *dead_level)) { /* the first one that can */
            *dead_level = PROTO_MAX_LEVELS;
            for (unsigned l = 0; l < s->levels && *dead_level == PROTO_MAX_LEVELS; l++)
                *dead_level = store_level_quarantined(s, l) ? PROTO_MAX_LEVELS : l;
        }
        if (*dead_level >= PROTO_MAX_LEVELS)
            err = SL_ENOTFOUND; /* every level is quarantined: nowhere to copy it */
    }
    if (err == SL_OK) {
        char reason[128];
        snprintf(reason, sizeof reason, "corrupt: stored delayed record failed its checksum (due %" PRIu64 ", id %"
                 PRIu64 ")", get_be64(kb), get_be64(kb + 8));
        err = store_set_aside(s, *dead_level, &v, reason, now_ns, id_out);
    }
    if (cur)
        mdb_cursor_close(cur);
    if (err == SL_OK)
        err = store_skip_add_delayed(s, get_be64(kb), get_be64(kb + 8), *id_out);
    if (err == SL_OK)
        log_error("store", "a delayed record (due %" PRIu64 ", id %" PRIu64 ") failed its checksum; left in place and "
                  "skipped, its copy in level %u's dead letters as id %" PRIu64 " (tag \"corrupt\")", get_be64(kb),
                  get_be64(kb + 8), *dead_level, *id_out);
    return err;
}

void store_delayed_counts(store *s, uint64_t *counts)
{
    uint64_t all[PROTO_MAX_LEVELS] = {0};
    if (store_txn_need(s) == SL_OK)
        store_delayed_scan(s, all);
    for (unsigned l = 0; l < PROTO_MAX_LEVELS; l++)
        if (store_level_quarantined(s, l)) { /* never released into its trees: quarantined with them */
            s->quarantined_delayed[l] = all[l];
            all[l] = 0;
        }
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
        rec_encode(rec, store_rec_key(&k), v.mv_data, v.mv_size);
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
        err = store_decode(s, s->delayed, &k, &copy, &rec);
    if (err == SL_OK && rec.level >= s->levels)
        err = SL_ECORRUPT;
    if (err == SL_OK && store_level_quarantined(s, rec.level))
        err = SL_ECORRUPT; /* its dead letters' tree is never written (store_check.c) */
    if (err != SL_OK)
        return err;
    rc = mdb_del(s->txn, s->delayed, &k, NULL);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "delete delayed message %" PRIu64, id);
    store_wal_touch(s, s->delayed, k.mv_data, k.mv_size, 0);
    s->dirty = 1;
    put_be64(ib, id);
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns,
                            store_rec_key(&dk));
    *level_out = rec.level;
    return store_mdb_put(s, s->dead[rec.level], &dk, &copy, MDB_NOOVERWRITE);
}
