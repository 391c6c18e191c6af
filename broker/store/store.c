/*
 * store.c - the LMDB environment: opening it, its named databases, and the
 * checks that guard a data directory at open. Every read and write goes
 * through the wrappers of store_io.c; records are encoded, sealed and
 * checked by rec.c; store_msg.c, store_meta.c, store_idem.c and store_ttl.c
 * decide where they live, through the helpers declared in store_int.h; the
 * commit is store_writer.c's.
 *
 * Only the store's own files (store*.c, store_int.h) include lmdb.h. This
 * file owns one environment, its named databases (listed in store.h) and at
 * most one write transaction, which the first operation of a loop pass
 * begins (reads too, so that they see the pass's own writes) and
 * store_commit ends, or the writer thread (store_writer.c) commits. Nothing
 * is durable before that commit; the environment uses LMDB's fully
 * synchronous flags, with MDB_NOLOCK and MDB_NOTLS so that a transaction
 * may be committed by another thread than the one that built it.
 *
 * Invariants:
 *   - next_id only grows in memory, even across an aborted pass; meta
 *     "next_id" commits with the records that use the ids, so no id that
 *     reached the disk is ever handed out again.
 *   - committed_key[L] is last_key[L] as of the last successful commit: tail
 *     keys up to it belong to records that reached the disk. Head keys the
 *     open transaction put (a delayed message come due) lie below every
 *     committed key of their level; head_hi[L] is the largest of them, and
 *     keys up to it are not durable until the transaction commits (a refused
 *     commit drops them, and the key may be handed out again).
 *   - After a failed mdb_* call LMDB refuses more work in that transaction:
 *     `failed` keeps the mapped error, every operation returns it, and
 *     store_commit aborts and reports it. Each failure is logged once, by
 *     store_fail.
 *   - Every record read for use goes through store_decode, which checks its
 *     CRC-32C and lengths (rec_decode) and that its level byte matches the
 *     q.<L> or dead.<L> it is found in. Scans that only count peek at the
 *     level byte.
 *
 * Lifecycle: store_open locks the data directory and file (flocks on both,
 * held until store_close: one process per store), checks every page of it before
 * LMDB reads one (store_check.c: a damaged level is quarantined, other
 * damage refused), creates the databases, checks the format (upgrading an
 * older one, store_upgrade.c), every meta value's seal and the level count
 * (refusing to drop a level that still holds messages) and commits; the loop then runs passes, each ending in store_commit. Between
 * passes the broker measures the space in use and grows the map as it
 * fills: store_map.c.
 *
 * Costs: a read is one lookup plus a CRC. Open reads every page in use once
 * (store_check.c) and every meta value; the check when levels are dropped
 * walks the whole delayed database.
 */
#include "store.h"
#include "store_backup.h"

#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "rec.h"
#include "store_int.h"

#define STORE_DIR_MODE   0750
#define STORE_FILE_MODE  0640

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
        return store_fail(s, rc, "open database %s", name);
    SL_ASSERT(*dbi < sizeof s->db / sizeof s->db[0]);
    store_db *db = &s->db[*dbi];
    memcpy(db->name, name, sizeof name);
    db->level = level;
    db->dead = strcmp(prefix, "dead") == 0;
    return SL_OK;
}

int store_db_open_named(store *s, const char *name, MDB_dbi *dbi)
{
    char prefix[sizeof s->db[0].name];
    const char *dot = strchr(name, '.');
    int level = -1;
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    if (len >= sizeof prefix)
        return SL_ECORRUPT;
    memcpy(prefix, name, len);
    prefix[len] = '\0';
    if (dot) {
        char *end;
        long l = strtol(dot + 1, &end, 10);
        if (*end || end == dot + 1 || l < 0 || l >= PROTO_MAX_LEVELS)
            return SL_ECORRUPT;
        level = (int)l;
    }
    return dbi_open(s, prefix, level, 1, dbi);
}

/* meta_get reads meta name, which must hold size bytes (SL_EINVAL, logged,
 * otherwise). */
static int meta_get(store *s, const char *name, size_t size, MDB_val *v)
{
    int err = store_meta_read(s, name, strlen(name), v);
    if (err != SL_OK || v->mv_size == size)
        return err;
    log_error("store", "meta %s holds %zu bytes, expected %zu", name, v->mv_size, size);
    return SL_EINVAL;
}

/* meta_put writes value as a little-endian integer of size (4 or 8) bytes. */
static int meta_put(store *s, const char *name, uint64_t value, size_t size)
{
    unsigned char b[8];
    if (size == 4)
        put_le32(b, (uint32_t)value);
    else
        put_le64(b, value);
    return store_meta_write(s, name, strlen(name), b, size);
}

/* ---- open and close ---- */

/* lock_one takes an exclusive, non-blocking flock on path (a directory
 * when flags has O_DIRECTORY; else made if missing), into *fd. SL_ESTATE
 * (logged) when another process holds it, SL_EIO. */
static int lock_one(const char *dir, const char *path, int flags, int *fd_out)
{
    int fd = open(path, flags | O_CLOEXEC, STORE_FILE_MODE);
    if (fd < 0) {
        log_error("store", "cannot open %s: %s", path, strerror(errno));
        return SL_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK) {
            log_error("store", "another process is using %s (%s is locked): one broker per data directory", dir,
                      path);
            return SL_ESTATE;
        }
        log_error("store", "cannot lock %s: %s", path, strerror(e));
        return SL_EIO;
    }
    *fd_out = fd;
    return SL_OK;
}

/* store_lock takes exclusive flocks, kept until store_close, on the data
 * directory itself and on its data file (made empty if missing: LMDB takes
 * an empty file for a new one); the log's file takes its own
 * (store_wal_file.c). LMDB runs with MDB_NOLOCK, so nothing else stops a
 * second process from opening the same files; a lock on a file of its own
 * (sluiced.lock) can be deleted away while the broker runs, and the next
 * broker would lock a new file of that name. Neither the directory nor
 * data.mdb can go without the store going with it. SL_ESTATE (logged) when
 * another process holds one. */
static int store_lock(store *s, const char *dir)
{
    char path[4200];
    int err = lock_one(dir, dir, O_RDONLY | O_DIRECTORY, &s->dir_lock_fd);
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    return err == SL_OK ? lock_one(dir, path, O_RDWR | O_CREAT, &s->lock_fd) : err;
}

static int env_open(store *s, const store_cfg *cfg)
{
    MDB_stat st;
    int stale = 0;
    int rc = mdb_env_create(&s->env);
    if (rc != MDB_SUCCESS) {
        s->env = NULL;
        return store_fail(s, rc, "create the LMDB environment");
    }
    rc = mdb_env_set_maxdbs(s->env, STORE_MAXDBS);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_mapsize(s->env, (size_t)cfg->map_bytes);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_open(s->env, cfg->dir, MDB_NOLOCK | MDB_NOTLS, STORE_FILE_MODE); /* see store_writer.c */
    if (rc == MDB_SUCCESS)
        rc = mdb_env_stat(s->env, &st);
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_CORRUPTED) {
        /* LMDB names a damaged meta page by the check it failed (a bad magic
         * reads "not an LMDB file", a bad version "version mismatch") */
        log_error("store", "the data file in %s is corrupt: its meta pages fail LMDB's checks (%s); restore it "
                  "from a backup, or move it aside to start empty", cfg->dir, mdb_strerror(rc));
        s->failed = SL_ECORRUPT;
        return SL_ECORRUPT;
    }
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open the LMDB environment in %s", cfg->dir);
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
    int err = stored_levels > s->levels ? store_delayed_scan(s, delayed) : SL_OK;
    for (unsigned l = PROTO_MAX_LEVELS; l-- > s->levels && err == SL_OK;) {
        MDB_dbi dbi;
        uint64_t queued = 0, dead = 0;
        if (store_level_quarantined(s, l)) { /* its trees are not read: whatever LMDB counted in them */
            queued = s->quarantined_msgs[l];
        } else {
            err = dbi_open(s, "q", (int)l, 0, &dbi);
            if (err == SL_OK)
                err = store_entries(s, dbi, &queued);
            if (err == SL_OK || err == SL_ENOTFOUND)
                err = dbi_open(s, "dead", (int)l, 0, &dbi);
            if (err == SL_OK)
                err = store_entries(s, dbi, &dead);
            if (err == SL_ENOTFOUND)
                err = SL_OK;
        }
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

/* format_read reads meta "format" as it was written: 4 bytes, unsealed,
 * before format 3; sealed since (store_meta.c). *format is 0 for a new
 * store. Another format, or damage, is refused (logged). */
static int format_read(store *s, const char *dir, unsigned *format)
{
    MDB_val k = {6, "format"}, v;
    int rc = mdb_get(s->txn, s->meta, &k, &v);
    *format = 0;
    s->meta_sealed = 1;
    if (rc == MDB_NOTFOUND)
        return SL_OK;
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "read meta format");
    if (v.mv_size == 4) { /* formats 1 and 2: upgraded at open (store_upgrade.c) */
        s->meta_sealed = 0;
        *format = get_le32(v.mv_data);
        if (*format >= 3 && *format <= STORE_FORMAT)
            *format = UINT32_MAX; /* from format 3 on, "format" is sealed: this is damage, or foreign */
    } else if (v.mv_size == 4 + STORE_META_SEAL && store_meta_open(s, &k, &v) == SL_OK) {
        *format = get_le32(v.mv_data);
        if (*format < 3)
            *format = UINT32_MAX;
    } else {
        log_error("store", "data dir %s: meta \"format\" is damaged (%zu bytes); rebuild the store with "
                  "`sluice salvage --data %s --to NEWDIR`", dir, v.mv_size, dir);
        return SL_ECORRUPT;
    }
    if (*format >= 1 && *format <= STORE_FORMAT)
        return SL_OK;
    if (*format == UINT32_MAX)
        log_error("store", "data dir %s: meta \"format\" names no format this build knows (it reads formats 1 to %d)",
                  dir, STORE_FORMAT);
    else
        log_error("store", "data dir %s holds store format %u; this build reads formats 1 to %d", dir, *format,
                  STORE_FORMAT);
    return SL_EINVAL;
}

/* level_open opens q.<l> and dead.<l> and reads what they hold into *li;
 * a quarantined level's trees are opened (LMDB reads only their records in
 * the main tree) but never read (store_check.c). */
static int level_open(store *s, unsigned l, store_level_info *li)
{
    int err = dbi_open(s, "q", (int)l, 1, &s->q[l]);
    if (err == SL_OK)
        err = dbi_open(s, "dead", (int)l, 1, &s->dead[l]);
    if (err != SL_OK || store_level_quarantined(s, l)) {
        s->last_key[l] = s->committed_key[l] = STORE_KEY_MID;
        return err;
    }
    err = store_anchor_put(s, s->q[l]);
    if (err == SL_OK)
        err = store_entries(s, s->q[l], &li->count);
    if (err == SL_OK)
        li->count -= store_skip_count(s, l); /* records set aside in place (store_skip.c) */
    if (err == SL_OK)
        err = store_entries(s, s->dead[l], &li->dead);
    if (err == SL_OK && li->count > 0)
        err = store_edge_key(s, l, MDB_FIRST, &li->first_key);
    if (err == SL_OK && li->count > 0)
        err = store_edge_key(s, l, MDB_LAST, &li->last_key);
    if (err == SL_ENOTFOUND) /* only skipped records at an edge */
        err = SL_OK;
    s->last_key[l] = li->count > 0 ? li->last_key : STORE_KEY_MID;
    s->committed_key[l] = s->last_key[l];
    return err;
}

/* schema_open checks the format and level count in meta, then opens (and
 * creates) the databases and reads each level's state. */
static int schema_open(store *s, const char *dir, uint64_t wal_bytes, int wal_buffered, store_level_info *info)
{
    MDB_val v;
    unsigned stored_levels = 0, format = 0;
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
        err = format_read(s, dir, &format);
    if (err == SL_OK) /* a crash's confirmed batches, before anything is read */
        err = store_wal_open(s, dir, wal_bytes, wal_buffered);
    if (err == SL_OK && format != STORE_FORMAT) /* a new store, or an older format */
        err = store_upgrade(s, dir, format);
    if (err == SL_OK) /* every meta value's seal, before any is believed */
        err = store_check_meta(s, dir);
    if (err == SL_OK)
        err = store_skip_load(s);
    if (err == SL_OK && (err = meta_get(s, "levels", 4, &v)) == SL_OK)
        stored_levels = get_le32(v.mv_data);
    if (err == SL_OK || err == SL_ENOTFOUND)
        err = meta_get(s, "next_id", 8, &v);
    s->next_id = s->next_id_saved = err == SL_OK ? get_le64(v.mv_data) : 1;
    if (err == SL_OK || err == SL_ENOTFOUND)
        err = levels_check(s, dir, stored_levels);
    if (err == SL_OK && stored_levels != s->levels)
        err = meta_put(s, "levels", s->levels, 4);
    if (err == SL_OK)
        err = store_anchor_put(s, s->delayed);

    for (unsigned l = 0; l < s->levels && err == SL_OK; l++) {
        store_level_info li = {0};
        err = level_open(s, l, &li);
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
    s->checkpoint_ns = cfg->checkpoint_ns;
    s->lock_fd = s->dir_lock_fd = -1;
    err = SL_ENOMEM;
    if (!(s->dir = strdup(cfg->dir)))
        goto done;
    err = SL_EIO;
    if (mkdir(cfg->dir, STORE_DIR_MODE) != 0 && errno != EEXIST) {
        log_error("store", "cannot create data dir %s: %s", cfg->dir, strerror(errno));
        goto done;
    }
    err = store_lock(s, cfg->dir);
    if (err == SL_OK) /* every page checked before LMDB reads one (store_check.c) */
        err = store_check(s, cfg->dir);
    if (err == SL_OK)
        err = env_open(s, cfg);
    if (err == SL_OK)
        err = store_txn_need(s);
    if (err == SL_OK)
        err = schema_open(s, cfg->dir, cfg->wal_bytes, cfg->wal_buffered, info);
    if (err == SL_OK)
        err = store_commit(s);
    if (err == SL_OK && s->wal && store_wal_settle(s, cfg->dir) == 1) { /* a new (or resized) log */
        if ((err = store_txn_need(s)) == SL_OK)
            err = store_commit(s); /* meta "wal" names the new file */
    }
    if (err == SL_OK)
        log_info("store", "opened %s: format %d, %u levels%s, map %" PRIu64 " MiB, next id %" PRIu64,
                 cfg->dir, STORE_FORMAT, s->levels, s->quarantined ? " (some quarantined: see above)" : "",
                 store_map_bytes(s) >> 20, s->next_id);
done:
    if (err != SL_OK)
        store_close(&s);
    *out = s;
    return err;
}

void store_abandon(store *s)
{
    if (s)
        s->abandoned = 1;
}

void store_close(store **sp)
{
    store *s = sp ? *sp : NULL;
    if (!s)
        return;
    store_backup_close(s); /* waits for a backup copy that runs */
    store_writer_close(s); /* waits for a commit that is out */
    if (s->abandoned)
        log_info("store", "closed without a checkpoint: what was not logged is dropped, the log replays at the next "
                 "start");
    else if (store_wal_held(s) && s->failed == SL_OK && store_commit_sync(s) == SL_OK)
        log_info("store", "checkpointed the log: nothing to replay at the next start");
    if (s->txn)
        mdb_txn_abort(s->txn);
    store_wal_close(s);
    store_repl_free(s);
    if (s->env)
        mdb_env_close(s->env);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* (after LMDB's own descriptors: the locks outlive every write) */
    if (s->dir_lock_fd >= 0)
        close(s->dir_lock_fd);
    store_skip_free(s);
    free(s->dir);
    free(s->scratch);
    free(s->gone);
    free(s);
    *sp = NULL;
}
