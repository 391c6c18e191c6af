/*
 * store.c - the LMDB environment: key layout, group commit, and the checks
 * that guard a data directory at open. Records are encoded, sealed and
 * checked by rec.c; this file decides where they live.
 *
 * This is the only file that includes lmdb.h. It owns one environment, its
 * named databases (listed in store.h) and at most one write transaction,
 * which the first operation of a loop pass begins (reads too, so that they
 * see the pass's own writes) and store_commit ends. Nothing is durable before
 * that commit; the environment uses LMDB's default, fully synchronous flags.
 *
 * Invariants:
 *   - last_key[L] is at least the largest order key this process has put in
 *     q.<L>, so ++last_key[L] is always a free key past the tail, and appends
 *     can use MDB_APPEND (which fills pages instead of splitting them). Keys
 *     burnt by an aborted pass leave harmless gaps.
 *   - next_id only grows in memory, even across an aborted pass; meta
 *     "next_id" commits with the records that use the ids, so no id that
 *     reached the disk is ever handed out again.
 *   - After a failed mdb_* call LMDB refuses more work in that transaction:
 *     `failed` keeps the mapped error, every operation returns it, and
 *     store_commit aborts and reports it. Each failure is logged once.
 *   - Every record is sealed with a CRC-32C of its remaining bytes, checked
 *     with its lengths (rec_decode) whenever it is read or moved, and its
 *     level byte matches the q.<L> or dead.<L> it is found in.
 *
 * Costs: an append is one B-tree insert plus a CRC over the record; a read
 * is one lookup plus a CRC. Moves and rewrites (bury, delay, delayed pop,
 * set_attempt) first copy the record to a scratch buffer, since LMDB may move
 * or free the source page while writing: O(record bytes), on slow paths only.
 * The scratch buffer is kept, at the size of the largest record moved.
 * store_delayed_counts, and the open-time check when levels are dropped,
 * walk the whole delayed database.
 */
#include "store.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "rec.h"

#define STORE_MAXDBS     64            /* named databases; room for later ones */
#define STORE_DIR_MODE   0750
#define STORE_FILE_MODE  0640
#define STORE_MAX_REASON PROTO_MAX_STR /* longer dead-letter reasons are cut */
_Static_assert(STORE_MAX_REASON <= REC_MAX_REASON, "a dead-letter reason must fit its record");

/* What a database handle names, for checks and log lines. */
typedef struct store_db {
    char name[12];
    int level;  /* level of q.<L> or dead.<L>; -1 for delayed and meta */
    int dead;   /* records carry the dead-letter tail */
} store_db;

struct store {
    MDB_env *env;
    MDB_txn *txn;                         /* the pass's write transaction, or NULL */
    MDB_dbi q[PROTO_MAX_LEVELS];
    MDB_dbi dead[PROTO_MAX_LEVELS];
    MDB_dbi delayed;
    MDB_dbi meta;
    MDB_dbi idem;      /* idempotency key -> (id, expires) */
    MDB_dbi idem_exp;  /* (expires, key) -> nothing: what to forget when */
    MDB_dbi ttl;       /* (expires, id) -> where: messages with a time to live */
    store_db db[STORE_MAXDBS + 2];        /* by MDB_dbi; LMDB's 2 core dbs first */
    unsigned levels;
    uint64_t last_key[PROTO_MAX_LEVELS];  /* largest order key handed out */
    uint64_t committed_key[PROTO_MAX_LEVELS]; /* largest tail key known durable */
    uint64_t next_id;                     /* next message id to hand out */
    uint64_t next_id_saved;               /* meta "next_id" as last committed */
    int dirty;                            /* the transaction holds writes */
    int failed;                           /* sl_err that poisoned the transaction */
    int panic_logged;
    size_t page_bytes;
    uint64_t used_bytes;                  /* from the last store_measure; 0 before */
    unsigned char *scratch;               /* a record being moved or rewritten */
    size_t scratch_bytes;
};

/*
 * Key layout. Change it: bump STORE_FORMAT. (Record values: see rec.c.)
 *
 * q.<L> by big-endian u64 order key, dead.<L> by big-endian u64 id, delayed
 * by big-endian u64 due_ns then big-endian u64 id. Big-endian makes LMDB's
 * default memcmp order the numeric order. Meta values are little-endian u32
 * or u64.
 */
static void put_le32(unsigned char *p, uint32_t v) { v = htole32(v); memcpy(p, &v, sizeof v); }
static void put_le64(unsigned char *p, uint64_t v) { v = htole64(v); memcpy(p, &v, sizeof v); }
static void put_be64(unsigned char *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, sizeof v); }
static uint32_t get_le32(const unsigned char *p) { uint32_t v; memcpy(&v, p, sizeof v); return le32toh(v); }
static uint64_t get_le64(const unsigned char *p) { uint64_t v; memcpy(&v, p, sizeof v); return le64toh(v); }
static uint64_t get_be64(const unsigned char *p) { uint64_t v; memcpy(&v, p, sizeof v); return be64toh(v); }

/* key_u64 points *k at buf, holding key big-endian. */
static void key_u64(MDB_val *k, unsigned char buf[8], uint64_t key)
{
    put_be64(buf, key);
    k->mv_size = 8;
    k->mv_data = buf;
}

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

/* fail logs a failed mdb_* call with what was being done, marks the
 * transaction unusable, and returns the mapped error. */
__attribute__((format(printf, 3, 4)))
static int fail(store *s, int rc, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (rc != MDB_PANIC)
        log_error("store", "%s: %s", what, mdb_strerror(rc));
    else if (!s->panic_logged)
        log_error("store", "%s: %s: the LMDB environment is unusable; restart the broker",
                  what, mdb_strerror(rc));
    s->panic_logged |= rc == MDB_PANIC;
    if (s->failed == SL_OK)
        s->failed = err_from_mdb(rc);
    return err_from_mdb(rc);
}

/* txn_need makes sure the pass's write transaction is open. */
static int txn_need(store *s)
{
    if (s->failed != SL_OK)
        return s->failed;
    if (s->txn)
        return SL_OK;
    int rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
    if (rc != MDB_SUCCESS) {
        s->txn = NULL;
        return fail(s, rc, "begin a write transaction");
    }
    return SL_OK;
}

/* txn_level is txn_need for an operation on one level. */
static int txn_level(store *s, unsigned level)
{
    return level < s->levels ? txn_need(s) : SL_EINVAL;
}

/* ---- records ---- */

/* decode checks a record value read from dbi and points out into it; a
 * rejected record is logged and gives SL_ECORRUPT. key is the order key, or
 * the message id for dead and delayed records. */
static int decode(store *s, MDB_dbi dbi, const MDB_val *v, uint64_t key, store_rec *out)
{
    const store_db *db = &s->db[dbi];
    const char *why;
    int err = rec_decode(v->mv_data, v->mv_size, db->dead ? REC_DEAD : REC_LIVE, out, &why);
    if (err == SL_OK && db->level >= 0 && out->level != db->level) {
        why = "level field does not match the database";
        err = SL_ECORRUPT;
    }
    if (err != SL_OK)
        log_error("store", "corrupt record in %s, %s %" PRIu64 ": %s", db->name,
                  db->level >= 0 && !db->dead ? "key" : "id", key, why);
    return err;
}

/* scratch_copy copies v to the scratch buffer, leaving extra bytes of room
 * after it, and points *copy at the copy. */
static int scratch_copy(store *s, const MDB_val *v, size_t extra, MDB_val *copy)
{
    if (v->mv_size + extra > s->scratch_bytes) {
        unsigned char *p = realloc(s->scratch, v->mv_size + extra);
        if (!p) {
            log_error("store", "out of memory copying a record of %zu bytes", v->mv_size);
            return SL_ENOMEM;
        }
        s->scratch = p;
        s->scratch_bytes = v->mv_size + extra;
    }
    memcpy(s->scratch, v->mv_data, v->mv_size);
    copy->mv_data = s->scratch;
    copy->mv_size = v->mv_size;
    return SL_OK;
}

/* ---- mdb wrappers; the transaction must be open ---- */

/* get reads and checks the record at key in dbi. With copy, it first copies
 * the record to the scratch buffer (extra bytes of room after it) and out
 * points into that copy. */
static int get(store *s, MDB_dbi dbi, uint64_t key, store_rec *out, MDB_val *copy, size_t extra)
{
    unsigned char kb[8];
    MDB_val k, v;
    key_u64(&k, kb, key);
    int rc = mdb_get(s->txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "read %s key %" PRIu64, s->db[dbi].name, key);
    int err = copy ? scratch_copy(s, &v, extra, copy) : SL_OK;
    return err != SL_OK ? err : decode(s, dbi, copy ? copy : &v, key, out);
}

static int put(store *s, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags)
{
    int rc = mdb_put(s->txn, dbi, k, v, flags);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "write %zu bytes to %s", v->mv_size, s->db[dbi].name);
    s->dirty = 1;
    return SL_OK;
}

static int del(store *s, MDB_dbi dbi, uint64_t key)
{
    unsigned char kb[8];
    MDB_val k;
    key_u64(&k, kb, key);
    int rc = mdb_del(s->txn, dbi, &k, NULL);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "delete %s key %" PRIu64, s->db[dbi].name, key);
    s->dirty = 1;
    return SL_OK;
}

/* cursor_at positions a new cursor on dbi with op (for MDB_SET_RANGE, *k is
 * where to start) and checks the key's size. k and v point into the map and
 * outlive the cursor, which is handed back in *keep, or else closed. */
static int cursor_at(store *s, MDB_dbi dbi, MDB_cursor_op op, MDB_val *k, MDB_val *v,
                     MDB_cursor **keep)
{
    MDB_cursor *cur;
    int err = SL_OK;
    int rc = mdb_cursor_open(s->txn, dbi, &cur);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "open a cursor on %s", s->db[dbi].name);
    rc = mdb_cursor_get(cur, k, v, op);
    if (rc == MDB_NOTFOUND)
        err = SL_ENOTFOUND;
    else if (rc != MDB_SUCCESS)
        err = fail(s, rc, "move a cursor on %s", s->db[dbi].name);
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

/* edge_key reads the first or last (op) order key of q.<level>. */
static int edge_key(store *s, unsigned level, MDB_cursor_op op, uint64_t *key)
{
    MDB_val k, v;
    int err = cursor_at(s, s->q[level], op, &k, &v, NULL);
    if (err == SL_OK)
        *key = get_be64(k.mv_data);
    return err;
}

/* dbi_open opens prefix.<level> (just prefix for level -1), creating it if
 * create; SL_ENOTFOUND if it does not exist and create is 0. */
static int dbi_open(store *s, const char *prefix, int level, int create, MDB_dbi *dbi)
{
    char name[sizeof s->db[0].name];
    snprintf(name, sizeof name, level >= 0 ? "%s.%d" : "%s", prefix, level);
    int rc = mdb_dbi_open(s->txn, name, create ? MDB_CREATE : 0, dbi);
    if (rc == MDB_NOTFOUND && !create)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "open database %s", name);
    SL_ASSERT(*dbi < sizeof s->db / sizeof s->db[0]);
    store_db *db = &s->db[*dbi];
    memcpy(db->name, name, sizeof name);
    db->level = level;
    db->dead = strcmp(prefix, "dead") == 0;
    return SL_OK;
}

static int entries(store *s, MDB_dbi dbi, uint64_t *n)
{
    MDB_stat st;
    int rc = mdb_stat(s->txn, dbi, &st);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "count %s", s->db[dbi].name);
    *n = st.ms_entries;
    return SL_OK;
}

/* delayed_scan counts delayed records per level from their level bytes,
 * without checking checksums (popping a record checks it). */
static int delayed_scan(store *s, uint64_t counts[PROTO_MAX_LEVELS])
{
    MDB_cursor *cur;
    MDB_val k, v;
    memset(counts, 0, PROTO_MAX_LEVELS * sizeof counts[0]);
    int err = cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err == SL_ENOTFOUND ? SL_OK : err;
    int rc;
    do {
        int level = rec_peek_level(v.mv_data, v.mv_size);
        if (level >= 0 && level < PROTO_MAX_LEVELS)
            counts[level]++;
    } while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == MDB_SUCCESS);
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? SL_OK : fail(s, rc, "scan delayed");
}

static int meta_get(store *s, const char *name, size_t size, MDB_val *v)
{
    MDB_val k = {strlen(name), (void *)name};
    int rc = mdb_get(s->txn, s->meta, &k, v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "read meta %s", name);
    if (v->mv_size == size)
        return SL_OK;
    log_error("store", "meta %s holds %zu bytes, expected %zu", name, v->mv_size, size);
    return SL_EINVAL;
}

/* meta_put writes value as a little-endian integer of size (4 or 8) bytes. */
static int meta_put(store *s, const char *name, uint64_t value, size_t size)
{
    unsigned char b[8];
    MDB_val k = {strlen(name), (void *)name}, v = {size, b};
    if (size == 4)
        put_le32(b, (uint32_t)value);
    else
        put_le64(b, value);
    int err = txn_need(s);
    return err != SL_OK ? err : put(s, s->meta, &k, &v, 0);
}

/* ---- open and close ---- */

static int env_open(store *s, const store_cfg *cfg)
{
    MDB_stat st;
    int stale = 0;
    int rc = mdb_env_create(&s->env);
    if (rc != MDB_SUCCESS) {
        s->env = NULL;
        return fail(s, rc, "create the LMDB environment");
    }
    rc = mdb_env_set_maxdbs(s->env, STORE_MAXDBS);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_mapsize(s->env, (size_t)cfg->map_bytes);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_open(s->env, cfg->dir, 0, STORE_FILE_MODE);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_stat(s->env, &st);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "open the LMDB environment in %s", cfg->dir);
    s->page_bytes = st.ms_psize;
    /* Reader slots left by crashed tools would pin old pages for good. */
    if (mdb_reader_check(s->env, &stale) == MDB_SUCCESS && stale > 0)
        log_info("store", "cleared %d stale reader slot(s) in %s", stale, cfg->dir);
    return SL_OK;
}

/* levels_check refuses to drop a level that holds messages, queued or
 * delayed (a delayed one would come due with no level to return to). Dead
 * letters stay in their database, untouched, until the level comes back. */
static int levels_check(store *s, const char *dir, unsigned stored_levels)
{
    uint64_t delayed[PROTO_MAX_LEVELS] = {0};
    int err = stored_levels > s->levels ? delayed_scan(s, delayed) : SL_OK;
    for (unsigned l = PROTO_MAX_LEVELS; l-- > s->levels && err == SL_OK;) {
        MDB_dbi dbi;
        uint64_t queued = 0, dead = 0;
        err = dbi_open(s, "q", (int)l, 0, &dbi);
        if (err == SL_OK)
            err = entries(s, dbi, &queued);
        if (err == SL_OK || err == SL_ENOTFOUND)
            err = dbi_open(s, "dead", (int)l, 0, &dbi);
        if (err == SL_OK)
            err = entries(s, dbi, &dead);
        if (err == SL_ENOTFOUND)
            err = SL_OK;
        if (err == SL_OK && (queued || delayed[l])) {
            log_error("store", "data dir %s has %u levels with %s in level %u; start with --levels %u "
                      "or drain it first", dir, stored_levels > l ? stored_levels : l + 1,
                      queued ? "messages" : "delayed messages", l, l + 1);
            err = SL_EINVAL;
        } else if (err == SL_OK && dead)
            log_warn("store", "dead.%u keeps %" PRIu64 " dead letter(s), hidden until --levels %u", l, dead,
                     l + 1);
    }
    return err;
}

/* schema_open checks the format and level count in meta, then opens (and
 * creates) the databases and reads each level's state. */
static int schema_open(store *s, const char *dir, store_level_info *info)
{
    MDB_val v;
    unsigned stored_levels = 0;
    int err = dbi_open(s, "meta", -1, 1, &s->meta);
    if (err == SL_OK)
        err = dbi_open(s, "delayed", -1, 1, &s->delayed);
    if (err == SL_OK)
        err = dbi_open(s, "idem", -1, 1, &s->idem);
    if (err == SL_OK)
        err = dbi_open(s, "idem_exp", -1, 1, &s->idem_exp);
    if (err == SL_OK)
        err = dbi_open(s, "ttl", -1, 1, &s->ttl);
    if (err == SL_OK)
        err = meta_get(s, "format", 4, &v);
    if (err == SL_ENOTFOUND)
        err = meta_put(s, "format", STORE_FORMAT, 4);
    else if (err == SL_OK && get_le32(v.mv_data) != STORE_FORMAT) {
        log_error("store", "data dir %s holds store format %" PRIu32 "; this build reads format %d only",
                  dir, get_le32(v.mv_data), STORE_FORMAT);
        err = SL_EINVAL;
    }
    if (err == SL_OK && (err = meta_get(s, "levels", 4, &v)) == SL_OK)
        stored_levels = get_le32(v.mv_data);
    if (err == SL_OK || err == SL_ENOTFOUND)
        err = meta_get(s, "next_id", 8, &v);
    s->next_id = s->next_id_saved = err == SL_OK ? get_le64(v.mv_data) : 1;
    if (err == SL_OK || err == SL_ENOTFOUND)
        err = levels_check(s, dir, stored_levels);
    if (err == SL_OK && stored_levels != s->levels)
        err = meta_put(s, "levels", s->levels, 4);

    for (unsigned l = 0; l < s->levels && err == SL_OK; l++) {
        store_level_info li = {0};
        err = dbi_open(s, "q", (int)l, 1, &s->q[l]);
        if (err == SL_OK)
            err = dbi_open(s, "dead", (int)l, 1, &s->dead[l]);
        if (err == SL_OK)
            err = entries(s, s->q[l], &li.count);
        if (err == SL_OK)
            err = entries(s, s->dead[l], &li.dead);
        if (err == SL_OK && li.count > 0)
            err = edge_key(s, l, MDB_FIRST, &li.first_key);
        if (err == SL_OK && li.count > 0)
            err = edge_key(s, l, MDB_LAST, &li.last_key);
        s->last_key[l] = li.count > 0 ? li.last_key : STORE_KEY_MID;
        s->committed_key[l] = s->last_key[l];
        if (info)
            info[l] = li;
    }
    return err;
}

int store_open(const store_cfg *cfg, store **out, store_level_info *info)
{
    store *s = NULL;
    int err = SL_EINVAL;
    if (!cfg || !cfg->dir || cfg->levels < 1 || cfg->levels > PROTO_MAX_LEVELS ||
        cfg->map_bytes == 0 || cfg->map_bytes > SIZE_MAX) {
        log_error("store", "bad configuration: need a data dir, 1..%d levels and a map size",
                  PROTO_MAX_LEVELS);
        goto done;
    }
    err = SL_ENOMEM;
    if (!(s = calloc(1, sizeof *s)))
        goto done;
    s->levels = cfg->levels;
    err = SL_EIO;
    if (mkdir(cfg->dir, STORE_DIR_MODE) != 0 && errno != EEXIST) {
        log_error("store", "cannot create data dir %s: %s", cfg->dir, strerror(errno));
        goto done;
    }
    err = env_open(s, cfg);
    if (err == SL_OK)
        err = txn_need(s);
    if (err == SL_OK)
        err = schema_open(s, cfg->dir, info);
    if (err == SL_OK)
        err = store_commit(s);
    if (err == SL_OK)
        log_info("store", "opened %s: format %d, %u levels, map %" PRIu64 " MiB, next id %" PRIu64,
                 cfg->dir, STORE_FORMAT, s->levels, store_map_bytes(s) >> 20, s->next_id);
done:
    if (err != SL_OK)
        store_close(&s);
    *out = s;
    return err;
}

void store_close(store **sp)
{
    store *s = sp ? *sp : NULL;
    if (!s)
        return;
    if (s->txn)
        mdb_txn_abort(s->txn);
    if (s->env)
        mdb_env_close(s->env);
    free(s->scratch);
    free(s);
    *sp = NULL;
}

/* ---- the pass ---- */

int store_commit(store *s)
{
    uint64_t next_id = s->next_id;
    int err = s->failed;
    if (err == SL_OK && next_id != s->next_id_saved)
        err = meta_put(s, "next_id", next_id, 8);
    if (err == SL_OK && s->txn) {
        int rc = mdb_txn_commit(s->txn);
        s->txn = NULL; /* LMDB frees it, committed or not */
        if (rc == MDB_SUCCESS) {
            s->next_id_saved = next_id;
            memcpy(s->committed_key, s->last_key, sizeof s->committed_key);
        } else
            err = fail(s, rc, "commit");
    }
    if (s->txn)
        mdb_txn_abort(s->txn);
    s->txn = NULL;
    s->failed = SL_OK;
    s->dirty = 0;
    return err;
}

int store_dirty(const store *s)
{
    return s->dirty || s->failed != SL_OK || s->next_id != s->next_id_saved;
}

int store_key_committed(const store *s, unsigned level, uint64_t key)
{
    return level < s->levels && key <= s->committed_key[level];
}

int store_failed(const store *s)
{
    return s->failed;
}

uint64_t store_next_id(store *s)
{
    return s->next_id++;
}

/* ---- messages ---- */

/* ttl_note records where a message with a time to live now is: level and
 * order key, or STORE_TTL_DELAYED and its due time. Entries are not removed
 * when the message is acknowledged (that would cost every ack a read); the
 * sweep drops the stale ones it finds. */
static int ttl_note(store *s, const store_rec *rec, unsigned where, uint64_t loc)
{
    unsigned char kb[16], vb[9];
    if (!rec->expires_ns)
        return SL_OK;
    MDB_val k = {sizeof kb, kb}, v = {sizeof vb, vb};
    put_be64(kb, rec->expires_ns);
    put_be64(kb + 8, rec->id);
    vb[0] = (unsigned char)where;
    put_le64(vb + 1, loc);
    return put(s, s->ttl, &k, &v, 0);
}

int store_append(store *s, const store_rec *rec, uint64_t *key)
{
    unsigned char kb[8];
    MDB_val k, v = {0, NULL};
    int err = rec_size(rec, &v.mv_size);
    if (err == SL_OK)
        err = txn_level(s, rec->level);
    if (err != SL_OK)
        return err;
    uint64_t next = s->last_key[rec->level] + 1;
    key_u64(&k, kb, next);
    err = put(s, s->q[rec->level], &k, &v, MDB_APPEND | MDB_RESERVE);
    if (err != SL_OK)
        return err;
    rec_encode(rec, v.mv_data, v.mv_size);
    s->last_key[rec->level] = next;
    if (s->used_bytes) /* until the next measure, count what is added */
        s->used_bytes += v.mv_size + 16;
    *key = next;
    return ttl_note(s, rec, rec->level, next);
}

int store_get(store *s, unsigned level, uint64_t key, store_rec *out)
{
    int err = txn_level(s, level);
    return err != SL_OK ? err : get(s, s->q[level], key, out, NULL, 0);
}

int store_seek(store *s, unsigned level, uint64_t from, uint64_t *key, store_rec *out)
{
    unsigned char kb[8];
    MDB_val k, v;
    int err = txn_level(s, level);
    if (err != SL_OK)
        return err;
    key_u64(&k, kb, from);
    err = cursor_at(s, s->q[level], MDB_SET_RANGE, &k, &v, NULL);
    if (err != SL_OK)
        return err;
    *key = get_be64(k.mv_data);
    return decode(s, s->q[level], &v, *key, out);
}

int store_del(store *s, unsigned level, uint64_t key)
{
    int err = txn_level(s, level);
    return err != SL_OK ? err : del(s, s->q[level], key);
}

int store_set_attempt(store *s, unsigned level, uint64_t key, uint32_t attempt)
{
    unsigned char kb[8];
    MDB_val k, copy;
    store_rec rec;
    int err = txn_level(s, level);
    if (err == SL_OK)
        err = get(s, s->q[level], key, &rec, &copy, 0);
    if (err != SL_OK)
        return err;
    rec_set_attempt(copy.mv_data, copy.mv_size, attempt);
    key_u64(&k, kb, key);
    return put(s, s->q[level], &k, &copy, 0);
}

int store_bury(store *s, unsigned level, uint64_t key, const char *reason, uint64_t died_ns)
{
    unsigned char kb[8];
    MDB_val k, copy;
    store_rec rec;
    size_t reason_len = reason ? strnlen(reason, STORE_MAX_REASON) : 0;
    int err = txn_level(s, level);
    if (err == SL_OK)
        err = get(s, s->q[level], key, &rec, &copy, rec_tail_bytes(reason_len));
    if (err == SL_OK)
        err = del(s, s->q[level], key);
    if (err != SL_OK)
        return err;
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns);
    key_u64(&k, kb, rec.id);
    return put(s, s->dead[level], &k, &copy, MDB_NOOVERWRITE);
}

int store_dead_get(store *s, unsigned level, uint64_t id, store_rec *out)
{
    int err = txn_level(s, level);
    return err != SL_OK ? err : get(s, s->dead[level], id, out, NULL, 0);
}

uint64_t store_dead_count(store *s, unsigned level)
{
    uint64_t n = 0;
    if (txn_level(s, level) == SL_OK)
        entries(s, s->dead[level], &n);
    return n;
}

/* ---- delayed messages ---- */

int store_delay(store *s, unsigned level, uint64_t key, uint64_t due_ns)
{
    unsigned char kb[16];
    MDB_val k = {sizeof kb, kb}, copy;
    store_rec rec;
    int err = txn_level(s, level);
    if (err == SL_OK)
        err = get(s, s->q[level], key, &rec, &copy, 0);
    if (err == SL_OK)
        err = del(s, s->q[level], key);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, rec.id);
    err = put(s, s->delayed, &k, &copy, MDB_NOOVERWRITE);
    return err == SL_OK ? ttl_note(s, &rec, STORE_TTL_DELAYED, due_ns) : err;
}

int store_delayed_first(store *s, uint64_t *due_ns)
{
    MDB_val k, v;
    int err = txn_need(s);
    if (err == SL_OK)
        err = cursor_at(s, s->delayed, MDB_FIRST, &k, &v, NULL);
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
    int err = txn_need(s);
    if (err == SL_OK)
        err = cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err;
    if (get_be64(k.mv_data) > now_ns)
        err = SL_ENOTFOUND;
    if (err == SL_OK)
        err = scratch_copy(s, &v, 0, &copy);
    if (err == SL_OK)
        err = decode(s, s->delayed, &copy, get_be64((const unsigned char *)k.mv_data + 8), &rec);
    if (err == SL_OK && rec.level >= s->levels) {
        log_error("store", "delayed message %" PRIu64 " belongs to level %u of %u", rec.id, rec.level,
                  s->levels);
        err = SL_ECORRUPT;
    }
    if (err != SL_OK)
        goto cursor_close;
    int rc = mdb_cursor_del(cur, 0);
    if (rc != MDB_SUCCESS) {
        err = fail(s, rc, "delete delayed message %" PRIu64, rec.id);
        goto cursor_close;
    }
    s->dirty = 1;
    /* Back at the head: before the first key, or past the last if empty. */
    err = edge_key(s, rec.level, MDB_FIRST, &key);
    if (err == SL_OK) {
        SL_ASSERT(key > 0); /* would take 2^63 head inserts */
        key--;
    } else if (err == SL_ENOTFOUND) {
        key = ++s->last_key[rec.level];
        err = SL_OK;
    }
    if (err != SL_OK)
        goto cursor_close;
    key_u64(&k, kb, key);
    err = put(s, s->q[rec.level], &k, &copy, MDB_NOOVERWRITE);
    if (err == SL_OK)
        err = ttl_note(s, &rec, rec.level, key);
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
    if (txn_need(s) == SL_OK)
        delayed_scan(s, all);
    memcpy(counts, all, s->levels * sizeof counts[0]);
}

/* ---- space ---- */

uint64_t store_used_bytes(store *s)
{
    if (s->used_bytes)
        return s->used_bytes;
    MDB_envinfo info; /* before the first measure: the high-water mark */
    return mdb_env_info(s->env, &info) == MDB_SUCCESS ? (info.me_last_pgno + 1) * (uint64_t)s->page_bytes : 0;
}

/* LMDB keeps freed pages in its free database (dbi 0): each record is a list
 * of page numbers whose first word is its length. The high-water mark minus
 * those pages is what the data really occupies; deletions lower it, so
 * admission resumes as consumers drain. */
int store_measure(store *s)
{
    MDB_txn *rt;
    MDB_cursor *cur;
    MDB_envinfo info;
    MDB_val k, v;
    uint64_t free_pages = 0;
    if (s->txn)
        return SL_ESTATE;
    if (mdb_env_info(s->env, &info) != MDB_SUCCESS || mdb_txn_begin(s->env, NULL, MDB_RDONLY, &rt) != MDB_SUCCESS)
        return SL_EIO;
    if (mdb_cursor_open(rt, 0, &cur) == MDB_SUCCESS) {
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
            if (v.mv_size >= sizeof(size_t))
                free_pages += *(const size_t *)v.mv_data;
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(rt);
    uint64_t pages = info.me_last_pgno + 1;
    s->used_bytes = (pages > free_pages ? pages - free_pages : 1) * (uint64_t)s->page_bytes;
    return SL_OK;
}

uint64_t store_map_bytes(store *s)
{
    MDB_envinfo info;
    return mdb_env_info(s->env, &info) == MDB_SUCCESS ? info.me_mapsize : 0;
}

/* ---- settings and lookups for administration ---- */

int store_meta_put(store *s, const char *key, const void *val, size_t len)
{
    MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)val};
    int err = txn_need(s);
    return err != SL_OK ? err : put(s, s->meta, &k, &v, 0);
}

int store_meta_scan(store *s, const char *prefix, store_meta_fn fn, void *ctx)
{
    size_t plen = strlen(prefix);
    MDB_cursor *cur;
    MDB_val k = {plen, (void *)prefix}, v;
    int err = txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_cursor_open(s->txn, s->meta, &cur);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "open a cursor on meta");
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
    }
    mdb_cursor_close(cur);
    return rc == MDB_SUCCESS || rc == MDB_NOTFOUND ? SL_OK : fail(s, rc, "scan meta");
}

int store_find(store *s, unsigned level, uint64_t id, uint64_t limit, uint64_t *key, uint64_t *rank)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int err = txn_level(s, level);
    if (err != SL_OK)
        return err;
    err = cursor_at(s, s->q[level], MDB_FIRST, &k, &v, &cur);
    if (err != SL_OK)
        return err;
    int rc = MDB_SUCCESS;
    err = SL_ENOTFOUND;
    for (uint64_t n = 0; n < limit && rc == MDB_SUCCESS; n++) {
        store_rec rec;
        if (decode(s, s->q[level], &v, get_be64(k.mv_data), &rec) == SL_OK && rec.id == id) {
            *key = get_be64(k.mv_data);
            *rank = n;
            err = SL_OK;
            break;
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
        return fail(s, rc, "scan q.%u", level);
    return err;
}

int store_delayed_find(store *s, uint64_t id, unsigned *level, uint64_t *due_ns)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int err = txn_need(s);
    if (err != SL_OK)
        return err;
    err = cursor_at(s, s->delayed, MDB_FIRST, &k, &v, &cur);
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

/* ---- publishing extras: delayed appends and idempotency keys ---- */

int store_append_delayed(store *s, const store_rec *rec, uint64_t due_ns)
{
    unsigned char kb[16];
    MDB_val k = {sizeof kb, kb}, v = {0, NULL};
    int err = rec_size(rec, &v.mv_size);
    if (err == SL_OK)
        err = txn_level(s, rec->level);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, rec->id);
    err = put(s, s->delayed, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (err == SL_OK)
        rec_encode(rec, v.mv_data, v.mv_size);
    return err == SL_OK ? ttl_note(s, rec, STORE_TTL_DELAYED, due_ns) : err;
}

int store_ttl_next(store *s, uint64_t now_ns, store_ttl_item *out)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int err = txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_cursor_open(s->txn, s->ttl, &cur);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "open a cursor on ttl");
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (rc == MDB_SUCCESS && (k.mv_size != 16 || v.mv_size != 9)) {
        log_error("store", "corrupt time-to-live entry (%zu/%zu bytes)", k.mv_size, v.mv_size);
        rc = mdb_cursor_del(cur, 0); /* an index entry only: drop it */
        err = rc == MDB_SUCCESS ? SL_ECORRUPT : fail(s, rc, "drop a corrupt ttl entry");
        s->dirty = 1;
    } else if (rc == MDB_NOTFOUND || (rc == MDB_SUCCESS && get_be64(k.mv_data) > now_ns)) {
        err = SL_ENOTFOUND;
    } else if (rc != MDB_SUCCESS) {
        err = fail(s, rc, "read ttl");
    } else {
        out->expires_ns = get_be64(k.mv_data);
        out->id = get_be64((const unsigned char *)k.mv_data + 8);
        out->where = ((const unsigned char *)v.mv_data)[0];
        out->loc = get_le64((const unsigned char *)v.mv_data + 1);
        rc = mdb_cursor_del(cur, 0);
        err = rc == MDB_SUCCESS ? SL_OK : fail(s, rc, "consume a ttl entry");
        s->dirty = 1;
    }
    mdb_cursor_close(cur);
    return err;
}

int store_bury_delayed(store *s, uint64_t due_ns, uint64_t id, const char *reason, uint64_t died_ns,
                       unsigned *level_out)
{
    unsigned char kb[16], ib[8];
    MDB_val k = {sizeof kb, kb}, v, copy, dk = {sizeof ib, ib};
    store_rec rec;
    size_t reason_len = reason ? strnlen(reason, STORE_MAX_REASON) : 0;
    int err = txn_need(s);
    if (err != SL_OK)
        return err;
    put_be64(kb, due_ns);
    put_be64(kb + 8, id);
    int rc = mdb_get(s->txn, s->delayed, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "read delayed message %" PRIu64, id);
    err = scratch_copy(s, &v, rec_tail_bytes(reason_len), &copy);
    if (err == SL_OK)
        err = decode(s, s->delayed, &copy, id, &rec);
    if (err == SL_OK && rec.level >= s->levels)
        err = SL_ECORRUPT;
    if (err != SL_OK)
        return err;
    rc = mdb_del(s->txn, s->delayed, &k, NULL);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "delete delayed message %" PRIu64, id);
    s->dirty = 1;
    copy.mv_size = rec_bury(copy.mv_data, copy.mv_size, s->scratch_bytes, reason, reason_len, died_ns);
    put_be64(ib, id);
    *level_out = rec.level;
    return put(s, s->dead[rec.level], &dk, &copy, MDB_NOOVERWRITE);
}

int store_idem_get(store *s, const void *key, size_t len, uint64_t now_ns, uint64_t *id)
{
    MDB_val k = {len, (void *)key}, v;
    int err = txn_need(s);
    if (err != SL_OK)
        return err;
    int rc = mdb_get(s->txn, s->idem, &k, &v);
    if (rc == MDB_NOTFOUND)
        return SL_ENOTFOUND;
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "read an idempotency key");
    if (v.mv_size != 16) {
        log_error("store", "corrupt idempotency record of %zu bytes", v.mv_size);
        return SL_ECORRUPT;
    }
    if (get_le64((const unsigned char *)v.mv_data + 8) <= now_ns)
        return SL_ENOTFOUND; /* expired, not yet swept */
    *id = get_le64(v.mv_data);
    return SL_OK;
}

int store_idem_put(store *s, const void *key, size_t len, uint64_t id, uint64_t expires_ns)
{
    unsigned char val[16], ek[8 + PROTO_MAX_TAG];
    if (len == 0 || len > PROTO_MAX_TAG)
        return SL_EINVAL;
    MDB_val k = {len, (void *)key}, v = {sizeof val, val};
    MDB_val xk = {8 + len, ek}, xv = {0, NULL};
    put_le64(val, id);
    put_le64(val + 8, expires_ns);
    put_be64(ek, expires_ns);
    memcpy(ek + 8, key, len);
    int err = txn_need(s);
    if (err == SL_OK)
        err = put(s, s->idem, &k, &v, 0);
    if (err == SL_OK)
        err = put(s, s->idem_exp, &xk, &xv, 0);
    return err;
}

unsigned store_idem_expire(store *s, uint64_t now_ns, unsigned max)
{
    MDB_cursor *cur;
    MDB_val k, v;
    unsigned n = 0;
    if (txn_need(s) != SL_OK)
        return 0;
    if (mdb_cursor_open(s->txn, s->idem_exp, &cur) != MDB_SUCCESS)
        return 0;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (rc == MDB_SUCCESS && n < max && k.mv_size > 8) {
        uint64_t expires = get_be64(k.mv_data);
        if (expires > now_ns)
            break;
        /* forget the key unless it was used again since (a later expiry) */
        MDB_val ik = {k.mv_size - 8, (unsigned char *)k.mv_data + 8}, iv;
        if (mdb_get(s->txn, s->idem, &ik, &iv) == MDB_SUCCESS && iv.mv_size == 16 &&
            get_le64((const unsigned char *)iv.mv_data + 8) == expires) {
            rc = mdb_del(s->txn, s->idem, &ik, NULL);
            if (rc != MDB_SUCCESS) {
                fail(s, rc, "forget an idempotency key");
                break;
            }
        }
        rc = mdb_cursor_del(cur, 0);
        if (rc != MDB_SUCCESS) {
            fail(s, rc, "forget an idempotency key's expiry");
            break;
        }
        s->dirty = 1;
        n++;
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); /* expiries go in key order */
    }
    mdb_cursor_close(cur);
    return n;
}

uint64_t store_level_bytes(store *s, unsigned level)
{
    MDB_stat st;
    if (level >= s->levels || txn_level(s, level) != SL_OK || mdb_stat(s->txn, s->q[level], &st) != MDB_SUCCESS)
        return 0;
    return (uint64_t)(st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * st.ms_psize;
}

int store_grow(store *s, uint64_t map_bytes)
{
    if (s->txn)
        return SL_ESTATE; /* only between transactions */
    int rc = mdb_env_set_mapsize(s->env, map_bytes);
    if (rc != MDB_SUCCESS)
        return fail(s, rc, "grow the map to %" PRIu64 " bytes", map_bytes);
    log_info("store", "map grown to %" PRIu64 " MiB", map_bytes >> 20);
    return SL_OK;
}
