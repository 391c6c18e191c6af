/*
 * store_tag.c - interned tag ids, and the order keys of levels served fair
 * by tag (see store.h for the layout).
 *
 * Invariants:
 *   - meta "tagid/<tag>" and "tagname/<be32 id>" name each other, and meta
 *     "tag_next" is above every id handed out; all three are written in the
 *     same transaction as the record that first used the id, so an aborted
 *     pass hands the id out again.
 *   - For a fair level, last_key[L] holds the largest seq handed out (not a
 *     key): every new record of the level takes the next seq, so within one
 *     tag's run keys grow in publish order, and "committed" compares seqs.
 *
 * Costs: interning is one meta read per publish (plus three puts the first
 * time a tag is seen); a tagged append is one B-tree insert (not at the
 * tree's tail, so no MDB_APPEND); store_tag_span is two cursor seeks.
 * store_tag_head, a fair take's read, is one seek plus one step of the same
 * cursor to the next key (whether the tag's run goes on, without a second
 * seek or reading that record); store_tag_ahead the same seek, then a step
 * and a copy per record read ahead (queue_fair_ahead.c); store_tag_peek is
 * a seek for a key alone, store_tag_count one seek and a step per key
 * counted.
 */
#include "store.h"

#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

#define TAGID_PREFIX "tagid/"
#define TAGNAME_PREFIX "tagname/"

int store_tag_intern(store *s, const char *tag, size_t len, uint32_t *id)
{
    unsigned char kb[sizeof TAGID_PREFIX + PROTO_MAX_TAG], nb[sizeof TAGNAME_PREFIX - 1 + 4], ib[4], b8[8];
    MDB_val v;
    if (len == 0) {
        *id = 0;
        return SL_OK;
    }
    if (len > PROTO_MAX_TAG)
        return SL_EINVAL;
    memcpy(kb, TAGID_PREFIX, sizeof TAGID_PREFIX - 1);
    memcpy(kb + sizeof TAGID_PREFIX - 1, tag, len);
    size_t klen = sizeof TAGID_PREFIX - 1 + len;
    int err = store_meta_read(s, kb, klen, &v);
    if (err == SL_OK && v.mv_size == 4) {
        *id = get_le32(v.mv_data);
        return SL_OK;
    }
    if (err != SL_ENOTFOUND)
        return err == SL_OK ? SL_ECORRUPT : err;
    uint32_t next = 1;
    err = store_meta_read(s, "tag_next", sizeof "tag_next" - 1, &v);
    if (err == SL_OK && v.mv_size == 4)
        next = get_le32(v.mv_data);
    else if (err != SL_ENOTFOUND)
        return err == SL_OK ? SL_ECORRUPT : err;
    if (next == 0 || next > STORE_TAG_MAX)
        return SL_ENOSPC;
    put_le32(ib, next);
    err = store_meta_write(s, kb, klen, ib, sizeof ib);
    memcpy(nb, TAGNAME_PREFIX, sizeof TAGNAME_PREFIX - 1);
    put_be64(b8, next);
    memcpy(nb + sizeof TAGNAME_PREFIX - 1, b8 + 4, 4);
    if (err == SL_OK)
        err = store_meta_write(s, nb, sizeof nb, tag, len);
    put_le32(ib, next + 1);
    if (err == SL_OK)
        err = store_meta_write(s, "tag_next", sizeof "tag_next" - 1, ib, sizeof ib);
    if (err == SL_OK)
        *id = next;
    return err;
}

int store_tag_find(store *s, const char *tag, size_t len, uint32_t *id)
{
    unsigned char kb[sizeof TAGID_PREFIX + PROTO_MAX_TAG];
    MDB_val v;
    if (len == 0) {
        *id = 0;
        return SL_OK;
    }
    if (len > PROTO_MAX_TAG)
        return SL_ENOTFOUND;
    memcpy(kb, TAGID_PREFIX, sizeof TAGID_PREFIX - 1);
    memcpy(kb + sizeof TAGID_PREFIX - 1, tag, len);
    int err = store_meta_read(s, kb, sizeof TAGID_PREFIX - 1 + len, &v);
    if (err == SL_OK && v.mv_size == 4) {
        *id = get_le32(v.mv_data);
        return SL_OK;
    }
    return err == SL_OK ? SL_ECORRUPT : err;
}

int store_tag_name(store *s, uint32_t id, char *buf, size_t cap)
{
    unsigned char nb[sizeof TAGNAME_PREFIX - 1 + 4], b8[8];
    MDB_val v;
    if (cap == 0)
        return SL_EINVAL;
    buf[0] = 0;
    if (id == 0)
        return SL_OK;
    memcpy(nb, TAGNAME_PREFIX, sizeof TAGNAME_PREFIX - 1);
    put_be64(b8, id);
    memcpy(nb + sizeof TAGNAME_PREFIX - 1, b8 + 4, 4);
    int err = store_meta_read(s, nb, sizeof nb, &v);
    if (err != SL_OK)
        return err;
    size_t n = v.mv_size < cap - 1 ? v.mv_size : cap - 1;
    memcpy(buf, v.mv_data, n);
    buf[n] = 0;
    return SL_OK;
}

int store_append_tagged(store *s, const store_rec *rec, uint32_t id, uint64_t *key)
{
    int err = store_rec_put(s, rec, &id, key);
    if (err != SL_OK)
        return err;
    return store_ttl_note(s, rec, rec->level, *key);
}

int store_tag_span(store *s, unsigned level, uint32_t from, uint32_t *tag, uint64_t *last_key)
{
    unsigned char kb[8];
    MDB_val k, v;
    MDB_cursor *cur = NULL;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    key_u64(&k, kb, (uint64_t)from << STORE_TAG_SHIFT);
    err = store_cursor_at(s, s->q[level], MDB_SET_RANGE, &k, &v, NULL);
    if (err != SL_OK)
        return err;
    uint64_t first = get_be64(k.mv_data);
    if (first >= STORE_KEY_MID)
        return SL_ENOTFOUND; /* FIFO keys: none of a fair layout */
    uint32_t t = (uint32_t)(first >> STORE_TAG_SHIFT);
    key_u64(&k, kb, (uint64_t)(t + 1) << STORE_TAG_SHIFT);
    err = store_cursor_at(s, s->q[level], MDB_SET_RANGE, &k, &v, &cur);
    int rc;
    if (err == SL_OK) {
        rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
        mdb_cursor_close(cur);
        if (rc != MDB_SUCCESS)
            return store_fail(s, rc, "step back a cursor on q.%u", level);
        *last_key = get_be64(k.mv_data);
    } else if (err == SL_ENOTFOUND) {
        err = store_edge_key(s, level, MDB_LAST, last_key);
        if (err != SL_OK)
            return err;
    } else {
        return err;
    }
    *tag = t;
    return SL_OK;
}

/* run_seek opens *cur on q.<level> at the first key at or after from, for
 * a fair take's read: lazily, since every acknowledged key waiting for its
 * delete lies below from (store_gone.c). kb holds the sought key. */
static int run_seek(store *s, unsigned level, uint64_t from, unsigned char kb[8], MDB_val *k, MDB_val *v,
                    MDB_cursor **cur)
{
    int err = store_txn_lazy(s, level);
    if (err != SL_OK)
        return err;
    key_u64(k, kb, from);
    return store_cursor_at(s, s->q[level], MDB_SET_RANGE, k, v, cur);
}

int store_tag_head(store *s, unsigned level, uint64_t from, uint64_t *key, store_rec *rec, int *more)
{
    unsigned char kb[8];
    MDB_val k, v, nk, nv;
    MDB_cursor *cur = NULL;
    uint64_t tag = from >> STORE_TAG_SHIFT;
    int err = run_seek(s, level, from, kb, &k, &v, &cur);
    if (err == SL_OK)
        err = store_skip_past(s, level, cur, &k, &v); /* records set aside (store_skip.c) */
    if (err != SL_OK) {
        if (cur)
            mdb_cursor_close(cur);
        return err;
    }
    *key = get_be64(k.mv_data);
    *more = 1; /* unless the step below says otherwise */
    if (*key >> STORE_TAG_SHIFT != tag) {
        mdb_cursor_close(cur);
        return SL_ENOTFOUND;
    }
    /* the next key of the run, not its record: pages next to this one */
    int rc = mdb_cursor_get(cur, &nk, &nv, MDB_NEXT);
    mdb_cursor_close(cur);
    int other = rc == MDB_SUCCESS && nk.mv_size == 8 && get_be64(nk.mv_data) >> STORE_TAG_SHIFT != tag;
    if (rc == MDB_NOTFOUND || other)
        *more = 0;
    else if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "step a cursor on q.%u", level);
    key_u64(&k, kb, *key);
    return store_decode(s, s->q[level], &k, &v, rec);
}

int store_tag_peek(store *s, unsigned level, uint64_t from, uint64_t *key)
{
    MDB_val v;
    int err = store_seek_key(s, level, from, key, &v);
    if (err != SL_OK)
        return err;
    return *key >> STORE_TAG_SHIFT == from >> STORE_TAG_SHIFT ? SL_OK : SL_ENOTFOUND;
}

int store_tag_count(store *s, unsigned level, uint64_t from, uint64_t below, uint64_t max, uint64_t *n)
{
    unsigned char kb[8];
    MDB_val k, v;
    MDB_cursor *cur = NULL;
    *n = 0;
    if (from >= below || max == 0)
        return SL_OK;
    int err = store_txn_level(s, level);
    if (err != SL_OK)
        return err;
    key_u64(&k, kb, from);
    err = store_cursor_at(s, s->q[level], MDB_SET_RANGE, &k, &v, &cur);
    if (err == SL_ENOTFOUND)
        return SL_OK;
    if (err != SL_OK)
        return err;
    int rc = MDB_SUCCESS;
    while (rc == MDB_SUCCESS && k.mv_size == 8 && get_be64(k.mv_data) < below && *n < max) {
        *n += !store_skipped(s, level, get_be64(k.mv_data));
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_SUCCESS || rc == MDB_NOTFOUND ? SL_OK : store_fail(s, rc, "step a cursor on q.%u", level);
}

int store_tag_key(store *s, unsigned level, const store_rec *rec, int head, uint64_t *key)
{
    unsigned char kb[8];
    MDB_val k, v;
    uint32_t id;
    int err = store_tag_intern(s, rec->tag, rec->tag_len, &id);
    if (err != SL_OK)
        return err;
    uint64_t run = (uint64_t)id << STORE_TAG_SHIFT;
    if (head) {
        key_u64(&k, kb, run);
        err = store_cursor_at(s, s->q[level], MDB_SET_RANGE, &k, &v, NULL);
        if (err == SL_OK && (get_be64(k.mv_data) >> STORE_TAG_SHIFT) == id &&
            (get_be64(k.mv_data) & STORE_SEQ_MASK) > 1) {
            *key = get_be64(k.mv_data) - 1;
            return SL_OK;
        }
        if (err != SL_OK && err != SL_ENOTFOUND)
            return err;
    }
    uint64_t seq = (s->last_key[level] & STORE_SEQ_MASK) + 1;
    if (seq > STORE_SEQ_MASK)
        return SL_ENOSPC;
    s->last_key[level] = seq;
    *key = run | seq;
    return SL_OK;
}

void store_fair_keys(store *s, unsigned level, int fair, uint64_t max_seq)
{
    if (level >= s->levels)
        return;
    s->fair_mask = fair ? s->fair_mask | 1u << level : s->fair_mask & ~(1u << level);
    if (fair) {
        uint64_t seq = s->last_key[level] & STORE_SEQ_MASK;
        s->last_key[level] = max_seq > seq ? max_seq : seq;
    } else {
        s->last_key[level] = STORE_KEY_MID;
    }
    s->committed_key[level] = s->last_key[level];
}

int store_key_committed_fair(const store *s, unsigned level, uint64_t key)
{
    return level < s->levels && (key & STORE_SEQ_MASK) <= (s->committed_key[level] & STORE_SEQ_MASK);
}

int store_tag_ahead(store *s, unsigned level, uint64_t from, store_ahead *a, size_t cap, uint64_t *key,
                    store_rec *rec, int *more)
{
    unsigned char kb[8];
    MDB_val k, v, big = {0, NULL};
    MDB_cursor *cur = NULL;
    uint64_t tag = from >> STORE_TAG_SHIFT;
    size_t used = 0;
    a->n = a->i = 0;
    a->more = 0;
    a->off[0] = 0;
    int err = run_seek(s, level, from, kb, &k, &v, &cur);
    if (err != SL_OK)
        return err;
    int rc = MDB_SUCCESS;
    while (rc == MDB_SUCCESS) {
        if (k.mv_size != 8 || get_be64(k.mv_data) >> STORE_TAG_SHIFT != tag)
            break; /* the run ends (a key of another size ends it, as for store_tag_head) */
        uint64_t at = get_be64(k.mv_data);
        if (store_skipped(s, level, at)) { /* set aside (store_skip.c) */
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
            continue;
        }
        int committed = store_key_committed_fair(s, level, at);
        if (a->n == STORE_AHEAD_MAX || !committed || used + v.mv_size > cap) {
            a->more = 1; /* the run goes on past what a holds */
            if (a->n == 0 && committed) { /* the head alone is too large: read in place */
                big = v;
                *key = at;
                rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
                *more = rc == MDB_SUCCESS && k.mv_size == 8 && get_be64(k.mv_data) >> STORE_TAG_SHIFT == tag;
            }
            break;
        }
        memcpy(a->data + used, v.mv_data, v.mv_size);
        used += v.mv_size;
        a->key[a->n++] = at;
        a->off[a->n] = (uint32_t)used;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
        return store_fail(s, rc, "step a cursor on q.%u", level);
    if (big.mv_data) {
        key_u64(&k, kb, *key);
        err = store_decode(s, s->q[level], &k, &big, rec);
        return err != SL_OK ? err : SL_ETOOBIG;
    }
    return a->n || a->more ? SL_OK : SL_ENOTFOUND;
}

int store_ahead_rec(store *s, unsigned level, const store_ahead *a, unsigned i, store_rec *out)
{
    unsigned char kb[8];
    MDB_val k, v = {a->off[i + 1] - a->off[i], (void *)(a->data + a->off[i])};
    key_u64(&k, kb, a->key[i]);
    return store_decode(s, s->q[level], &k, &v, out);
}
