/*
 * store_skip.c - records that failed their check, stepped over in place.
 *
 * A record of q.<L> whose checksum (over its key and its bytes, rec.c)
 * fails cannot be delivered, and it is not deleted either: the check says
 * the bytes of its node are not what was written, and LMDB's delete moves
 * the page's other nodes by the sizes that node claims, which would damage
 * the page further (a flipped node header once corrupted the heap this way,
 * and the broker then crashed inside LMDB at every start). So
 * store_quarantine (store_corrupt.c) leaves the record where it is, copies
 * its bytes to the level's dead letters and notes its key here, in the same
 * transaction: meta "skip/LL/KKKKKKKKKKKKKKKK" (level and key in hex) holds
 * the dead letter's id. Every read that walks a level (the seeks of FIFO
 * and fair takes, explain's scans and counts) steps over the keys noted
 * here, so the level goes on past the record, and a restart neither
 * delivers it nor sets it aside twice. `sluice salvage` leaves it out of
 * the store it builds.
 *
 * In memory, a sorted array of keys per level: a hint, a superset of what
 * meta holds (a key added by a transaction that failed stays until the next
 * open), so a key found in it is looked up in meta before it is stepped
 * over. A level with nothing skipped pays one compare per seek.
 *
 * A delayed record that fails its check when it comes due is set aside the
 * same way (meta "skip/dd/" and its 16-byte key), its copy in the dead
 * letters of the level its bytes name (or the first level that is not
 * quarantined), so the delayed messages behind it go on coming due.
 *
 * Invariants: a key is noted only with its dead letter, in one
 * transaction; a noted key is never deleted from q.<L> (nothing takes or
 * leases it), so the records a level counts are LMDB's entries minus the
 * noted keys still present (store_skip_count).
 *
 * Costs: a seek of a level with skipped keys, a binary search per key it
 * meets and a meta lookup per skipped one; store_skip_count a meta scan of
 * the level's entries and a lookup each; loading, one scan of "skip/" at
 * open.
 */
#include "store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "store_int.h"

#define SKIP_PREFIX "skip/"
#define SKIP_KEY_LEN (sizeof SKIP_PREFIX - 1 + 3 + 16) /* "skip/" LL "/" 16 hex digits */
#define SKIP_DELAYED_LEN (sizeof SKIP_PREFIX - 1 + 3 + 32) /* "skip/dd/": a delayed key, due and id */

struct store_skip {
    uint64_t *key[PROTO_MAX_LEVELS]; /* sorted */
    size_t n[PROTO_MAX_LEVELS], cap[PROTO_MAX_LEVELS];
    uint64_t (*delayed)[2];          /* delayed keys (due, id), few: searched in turn */
    size_t ndelayed, delayed_cap;
};

static void skip_name(char buf[SKIP_KEY_LEN + 1], unsigned level, uint64_t key)
{
    snprintf(buf, SKIP_KEY_LEN + 1, SKIP_PREFIX "%02x/%016" PRIx64, level, key);
}

static void skip_delayed_name(char buf[SKIP_DELAYED_LEN + 1], uint64_t due, uint64_t id)
{
    snprintf(buf, SKIP_DELAYED_LEN + 1, SKIP_PREFIX "dd/%016" PRIx64 "%016" PRIx64, due, id);
}

/* find returns the index of the first hint of level >= key. */
static size_t find(const struct store_skip *k, unsigned level, uint64_t key)
{
    size_t lo = 0, hi = k->n[level];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->key[level][mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* hint_add notes key of level in memory. SL_OK, SL_ENOMEM. */
static int hint_add(store *s, unsigned level, uint64_t key)
{
    struct store_skip *k = s->skip;
    if (!k && !(k = s->skip = calloc(1, sizeof *k)))
        return SL_ENOMEM;
    size_t at = find(k, level, key);
    if (at < k->n[level] && k->key[level][at] == key)
        return SL_OK;
    uint64_t *v = grow_array(k->key[level], &k->cap[level], k->n[level] + 1, sizeof *v, 8);
    if (!v)
        return SL_ENOMEM;
    k->key[level] = v;
    memmove(v + at + 1, v + at, (k->n[level] - at) * sizeof *v);
    v[at] = key;
    k->n[level]++;
    s->skip_hint[level] = k->n[level];
    return SL_OK;
}

/* hint_add_delayed notes a delayed key in memory. SL_OK, SL_ENOMEM. */
static int hint_add_delayed(store *s, uint64_t due, uint64_t id)
{
    struct store_skip *k = s->skip;
    if (!k && !(k = s->skip = calloc(1, sizeof *k)))
        return SL_ENOMEM;
    uint64_t(*v)[2] = grow_array(k->delayed, &k->delayed_cap, k->ndelayed + 1, sizeof *v, 4);
    if (!v)
        return SL_ENOMEM;
    k->delayed = v;
    v[k->ndelayed][0] = due;
    v[k->ndelayed++][1] = id;
    return SL_OK;
}

static void load_one(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    store *s = ctx;
    char name[SKIP_DELAYED_LEN + 1];
    unsigned level;
    uint64_t k, id;
    (void)val, (void)len;
    if (key_len == SKIP_DELAYED_LEN) {
        memcpy(name, key, key_len);
        name[key_len] = '\0';
        if (sscanf(name, SKIP_PREFIX "dd/%16" SCNx64 "%16" SCNx64, &k, &id) == 2 && hint_add_delayed(s, k, id) != SL_OK)
            log_error("store", "out of memory noting a skipped delayed record; it is set aside again");
        return;
    }
    if (key_len != SKIP_KEY_LEN)
        return;
    memcpy(name, key, key_len);
    name[key_len] = '\0';
    if (sscanf(name, SKIP_PREFIX "%2x/%16" SCNx64, &level, &k) == 2 && level < PROTO_MAX_LEVELS &&
        hint_add(s, level, k) != SL_OK)
        log_error("store", "out of memory noting a skipped record of level %u; it is set aside again", level);
}

int store_skip_load(store *s)
{
    return store_meta_scan(s, SKIP_PREFIX, load_one, s);
}

void store_skip_free(store *s)
{
    if (!s->skip)
        return;
    for (unsigned l = 0; l < PROTO_MAX_LEVELS; l++)
        free(s->skip->key[l]);
    free(s->skip->delayed);
    free(s->skip);
    s->skip = NULL;
}

int store_skip_add(store *s, unsigned level, uint64_t key, uint64_t dead_id)
{
    char name[SKIP_KEY_LEN + 1];
    unsigned char v[8];
    skip_name(name, level, key);
    put_le64(v, dead_id);
    int err = store_meta_write(s, name, SKIP_KEY_LEN, v, sizeof v);
    return err == SL_OK ? hint_add(s, level, key) : err;
}

int store_skipped(store *s, unsigned level, uint64_t key)
{
    const struct store_skip *k = s->skip;
    if (!s->skip_hint[level])
        return 0;
    size_t at = find(k, level, key);
    if (at == k->n[level] || k->key[level][at] != key)
        return 0;
    char name[SKIP_KEY_LEN + 1];
    MDB_val v;
    skip_name(name, level, key);
    return store_meta_read(s, name, SKIP_KEY_LEN, &v) == SL_OK; /* the hint may hold a failed transaction's */
}

int store_skip_past(store *s, unsigned level, MDB_cursor *cur, MDB_val *k, MDB_val *v)
{
    int rc = MDB_SUCCESS;
    while (rc == MDB_SUCCESS && k->mv_size == 8 && store_skipped(s, level, get_be64(k->mv_data)))
        rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    return rc == MDB_SUCCESS ? SL_OK : store_fail(s, rc, "step a cursor on q.%u", level);
}

uint64_t store_skip_count(store *s, unsigned level)
{
    const struct store_skip *k = s->skip;
    uint64_t n = 0;
    if (!s->skip_hint[level])
        return 0;
    for (size_t i = 0; i < k->n[level]; i++) {
        unsigned char kb[8];
        MDB_val key, v;
        key_u64(&key, kb, k->key[level][i]);
        n += store_skipped(s, level, k->key[level][i]) && mdb_get(s->txn, s->q[level], &key, &v) == MDB_SUCCESS;
    }
    return n;
}

int store_skip_add_delayed(store *s, uint64_t due, uint64_t id, uint64_t dead_id)
{
    char name[SKIP_DELAYED_LEN + 1];
    unsigned char v[8];
    skip_delayed_name(name, due, id);
    put_le64(v, dead_id);
    int err = store_meta_write(s, name, SKIP_DELAYED_LEN, v, sizeof v);
    return err == SL_OK ? hint_add_delayed(s, due, id) : err;
}

int store_skipped_delayed(store *s, const MDB_val *k)
{
    const struct store_skip *h = s->skip;
    if (!h || !h->ndelayed || k->mv_size != 16)
        return 0;
    uint64_t due = get_be64(k->mv_data), id = get_be64((const unsigned char *)k->mv_data + 8);
    for (size_t i = 0; i < h->ndelayed; i++)
        if (h->delayed[i][0] == due && h->delayed[i][1] == id) {
            char name[SKIP_DELAYED_LEN + 1];
            MDB_val v;
            skip_delayed_name(name, due, id);
            return store_meta_read(s, name, SKIP_DELAYED_LEN, &v) == SL_OK;
        }
    return 0;
}
