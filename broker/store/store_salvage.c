/*
 * store_salvage.c - a damaged store read without LMDB, and every record
 * whose checksum holds copied into a new one (`sluiced --salvage DIR --to
 * NEWDIR`, which `sluice salvage` runs).
 *
 * What it reads. The data file, page by page (store_pages.c): the main
 * tree's list of named trees, the free list, meta, then each tree of
 * records (q.<L>, dead.<L>, delayed) and the idempotency keys. A tree that
 * fails a check is read up to its fault; every page in use that no walk
 * reached (the rest of such a tree, a subtree below a damaged branch page,
 * a page whose header was damaged) is then carved: read node by node at
 * every even offset, each candidate believed only if it decodes as a record
 * whose checksum covers its key (rec.c), so a damaged page yields every
 * record but the one the damage hit. Pages the free list names hold stale
 * copies and are left alone; when the free list itself is damaged they
 * cannot be told apart, and a stale copy of a message acknowledged before
 * the damage may come back (delivered again: at least once).
 * Then the write-ahead log (store_salvage_log.c), from where meta "wal"
 * says, as the broker's replay would.
 *
 * What it writes. A new data directory, with LMDB (nothing of the old one
 * is written): every record under the key it had (so FIFO order and a fair
 * level's tag runs survive), sealed again for that key; every meta value
 * whose seal holds (settings, tag names), except what it rebuilds: the
 * store format, the level count (the old one, or the highest level found),
 * the next id (above every id found), the tag names that records need and
 * meta lost (from the records' own tags), and the TTL index (from the
 * records). Records the old store had set aside (meta "skip/",
 * store_skip.c) stay behind; their copies among the dead letters come
 * along. Then store_open opens the result once, as a broker would, and
 * counts it.
 *
 * Invariant: nothing that fails its check is copied; no record is copied
 * twice (a key met again is counted, not written).
 *
 * Costs: one read of every page of the data file (and of the log), a CRC
 * per record, one LMDB transaction for the new store; carving tries every
 * even offset of a page it carves (a few microseconds a page).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "grow.h"
#include "log.h"
#include "rec.h"
#include "store_int.h"
#include "store_pages.h"
#include "store_salvage.h"

#define SALVAGE_TREES 64

typedef struct named_tree {
    char name[16];
    pg_db db;
} named_tree;

/* ---- the new store ---- */

int salvage_dbi(salvage *sv, const char *name, MDB_dbi *dbi)
{
    for (unsigned i = 0; i < sv->ndbs; i++)
        if (strcmp(sv->dbs[i].name, name) == 0) {
            *dbi = sv->dbs[i].dbi;
            return SL_OK;
        }
    if (sv->ndbs == SALVAGE_DBS)
        return SL_ENOMEM;
    int rc = mdb_dbi_open(sv->txn, name, MDB_CREATE, dbi);
    if (rc != MDB_SUCCESS) {
        log_error("salvage", "cannot open %s in the new store: %s", name, mdb_strerror(rc));
        return SL_EIO;
    }
    snprintf(sv->dbs[sv->ndbs].name, sizeof sv->dbs[0].name, "%s", name);
    sv->dbs[sv->ndbs++].dbi = *dbi;
    return SL_OK;
}

int salvage_put(salvage *sv, const char *name, const void *key, size_t klen, const void *val, size_t vlen,
                unsigned flags)
{
    MDB_dbi dbi;
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    int err = salvage_dbi(sv, name, &dbi);
    if (err != SL_OK)
        return err;
    int rc = mdb_put(sv->txn, dbi, &k, &v, flags);
    if (rc == MDB_KEYEXIST)
        return SL_EFULL; /* (the caller counts it) */
    if (rc != MDB_SUCCESS) {
        log_error("salvage", "cannot write to %s in the new store: %s", name, mdb_strerror(rc));
        return rc == MDB_MAP_FULL ? SL_ENOSPC : SL_EIO;
    }
    return SL_OK;
}

int salvage_meta_put(salvage *sv, const void *key, size_t klen, const void *val, size_t vlen)
{
    unsigned char *b = grow_array(sv->buf, &sv->buf_cap, vlen + STORE_META_SEAL, 1, 4096);
    if (!b)
        return SL_ENOMEM;
    sv->buf = b;
    memmove(b, val, vlen);
    put_le32(b + vlen, crc32c_extend(crc32c_value(key, klen), b, vlen));
    return salvage_put(sv, "meta", key, klen, b, vlen + STORE_META_SEAL, 0);
}

/* ---- records ---- */

/* level_of_tree returns L for "q.L" or "dead.L" (*dead says which), -1 else. */
static int level_of_tree(const char *name, int *dead)
{
    *dead = strncmp(name, "dead.", 5) == 0;
    if (!*dead && strncmp(name, "q.", 2) != 0)
        return -1;
    char *end;
    long l = strtol(name + (*dead ? 5 : 2), &end, 10);
    return *end || l < 0 || l >= PROTO_MAX_LEVELS ? -1 : (int)l;
}

int salvage_skipped(const salvage *sv, unsigned level, uint64_t key)
{
    for (size_t i = 0; i < sv->nskip; i++)
        if (sv->skip[i].level == level && sv->skip[i].key == key)
            return 1;
    return 0;
}

int salvage_record(salvage *sv, const char *tree, const unsigned char *k, size_t klen, const unsigned char *v,
                   size_t vlen, unsigned flags)
{
    rec_msg m;
    rec_key key = {k, klen};
    char name[16];
    int dead = 0, want = tree ? level_of_tree(tree, &dead) : -1;
    if (klen == 16 && (!tree || strcmp(tree, "delayed") == 0) &&
        rec_decode(v, vlen, REC_LIVE, key, &m, NULL) == SL_OK) {
        snprintf(name, sizeof name, "delayed");
    } else if (klen == 8 && (!tree || !dead) && rec_decode(v, vlen, REC_LIVE, key, &m, NULL) == SL_OK &&
               (want < 0 || m.level == want)) {
        if (salvage_skipped(sv, m.level, get_be64(k)))
            return SL_OK; /* set aside by the broker, its copy among the dead letters */
        snprintf(name, sizeof name, "q.%u", m.level);
    } else if (klen == 8 && (!tree || dead) && rec_decode(v, vlen, REC_DEAD, key, &m, NULL) == SL_OK &&
               (want < 0 || m.level == want) && get_be64(k) == m.id) {
        snprintf(name, sizeof name, "dead.%u", m.level);
    } else {
        sv->r->records_bad += tree != NULL; /* (carving tries every offset: its misses are no records) */
        return SL_OK;
    }
    unsigned char *b = grow_array(sv->buf, &sv->buf_cap, vlen, 1, 4096);
    if (!b)
        return SL_ENOMEM;
    sv->buf = b;
    memcpy(b, v, vlen);
    rec_reseal(b, vlen, key); /* (a record of the first format comes out of the current one) */
    int err = salvage_put(sv, name, k, klen, b, vlen, flags);
    if (err == SL_EFULL) { /* a key met again: a clean walk's copy stays */
        sv->r->dupes++;
        return SL_OK;
    }
    if (err != SL_OK)
        return err;
    sv->r->records++;
    if (m.id >= sv->next_id)
        sv->next_id = m.id + 1;
    if (m.level + 1u > sv->levels_seen)
        sv->levels_seen = m.level + 1u;
    return SL_OK;
}

/* ---- the walks ---- */

typedef struct walk_ctx {
    salvage *sv;
    const char *tree;
} walk_ctx;

static int on_record(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    walk_ctx *c = ctx;
    if (klen == STORE_ANCHOR_BYTES)
        return 0;
    return salvage_record(c->sv, c->tree, key, klen, val, vlen, MDB_NOOVERWRITE) == SL_OK ? 0 : -2;
}

static int on_carved(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    salvage *sv = ctx;
    return salvage_record(sv, NULL, key, klen, val, vlen, MDB_NOOVERWRITE) == SL_OK ? 0 : -2;
}

static int on_copy(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    walk_ctx *c = ctx;
    return salvage_put(c->sv, c->tree, key, klen, val, vlen, MDB_NOOVERWRITE) == SL_OK ? 0 : 0;
}

static int on_meta(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    walk_ctx *c = ctx;
    return salvage_meta(c->sv, key, klen, val, vlen) == SL_OK ? 0 : -2;
}

static int collect(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    named_tree *t = ctx;
    (void)vlen;
    unsigned n = 0;
    while (n < SALVAGE_TREES && t[n].name[0])
        n++;
    if (n == SALVAGE_TREES || klen >= sizeof t[0].name)
        return 0;
    memcpy(t[n].name, key, klen);
    t[n].name[klen] = '\0';
    pg_db_decode(val, &t[n].db);
    return 0;
}

/* walk_trees reads the data file's trees into the new store. */
static int walk_trees(salvage *sv)
{
    pg_file *f = &sv->f;
    char why[320];
    named_tree *t = calloc(SALVAGE_TREES, sizeof *t);
    if (!t)
        return SL_ENOMEM;
    pg_tree main_tree = {.name = "the main tree", .db = f->main_db, .subdata = 1};
    if (f->main_db.root != PG_INVALID && pg_walk(f, &main_tree, collect, t, why, sizeof why) != 0)
        log_warn("salvage", "%s: the trees it names past that are read page by page", why);
    if (f->free_db.root != PG_INVALID && pg_free_walk(f, why, sizeof why) != 0) {
        sv->free_bad = 1;
        log_warn("salvage", "%s: pages it would have named are read too; a copy of a message acknowledged "
                 "before the damage may come back", why);
    }
    int err = SL_OK;
    for (int pass = 0; pass < 2 && err == SL_OK; pass++) /* meta first: the format, the skipped keys */
        for (unsigned i = 0; i < SALVAGE_TREES && t[i].name[0] && err == SL_OK; i++) {
            int dead, meta = strcmp(t[i].name, "meta") == 0;
            int records = level_of_tree(t[i].name, &dead) >= 0 || strcmp(t[i].name, "delayed") == 0;
            int copy = strcmp(t[i].name, "idem") == 0 || strcmp(t[i].name, "idem_exp") == 0;
            if (meta != (pass == 0) || (!meta && !records && !copy))
                continue; /* the TTL index is rebuilt from the records */
            pg_tree tree = {.name = t[i].name, .db = t[i].db,
                            .key_len = records ? (strcmp(t[i].name, "delayed") == 0 ? 16 : 8) : 0};
            walk_ctx c = {sv, t[i].name};
            int rc = pg_walk(f, &tree, meta ? on_meta : records ? on_record : on_copy, &c, why, sizeof why);
            if (rc == -2)
                err = SL_EIO; /* (the new store's write failed: logged) */
            else if (rc != 0) {
                sv->r->trees_bad++;
                log_warn("salvage", "%s%s", why, records ? ": its pages past the fault are read node by node" :
                         meta ? ": meta past the fault is lost (settings; the rest is rebuilt)" : "");
            }
        }
    free(t);
    return err;
}

/* carve reads every page in use that no walk reached, node by node. */
static int carve(salvage *sv)
{
    pg_file *f = &sv->f;
    char why[200];
    unsigned char *page = f->buf + (size_t)(PG_MAX_DEPTH + 1) * f->psize;
    uint64_t written = f->file_bytes / f->psize; /* (LMDB's last page may be past them: never written) */
    for (uint64_t p = 2; p <= f->last_pg && p < written; p++) {
        if (pg_seen(f, p))
            continue;
        if (pg_read(f, p, page, why, sizeof why) != 0) {
            log_warn("salvage", "%s", why);
            continue;
        }
        if (pg_page_flags(page) == PG_P_OVERFLOW) /* a large value's: read through its node, if any */
            continue;
        sv->r->pages_carved++;
        if (pg_carve(f, p, page, on_carved, sv) != 0)
            return SL_EIO;
    }
    return SL_OK;
}

/* ---- the whole ---- */

static int lock_source(const char *dir, int *fd_out)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        log_error("salvage", "cannot open %s: %s", path, strerror(errno));
        return errno == ENOENT ? SL_EINVAL : SL_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        log_error("salvage", "a broker is using %s (its data file is locked): stop it first", dir);
        close(fd);
        return SL_ESTATE;
    }
    *fd_out = fd;
    return SL_OK;
}

static int open_target(salvage *sv, const char *to, uint64_t map_bytes)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", to);
    if (stat(path, &st) == 0) {
        log_error("salvage", "%s holds a store already: salvage writes a new one, into a directory without one", to);
        return SL_EINVAL;
    }
    snprintf(path, sizeof path, "%s", to);
    for (char *slash = path + 1; (slash = strchr(slash, '/')); *slash++ = '/') { /* its parents too */
        *slash = '\0';
        if (mkdir(path, 0750) != 0 && errno != EEXIST)
            break;
    }
    if (mkdir(to, 0750) != 0 && errno != EEXIST) {
        log_error("salvage", "cannot create %s: %s", to, strerror(errno));
        return SL_EIO;
    }
    int rc = mdb_env_create(&sv->env);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_maxdbs(sv->env, STORE_MAXDBS);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_mapsize(sv->env, (size_t)map_bytes);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_open(sv->env, to, MDB_NOLOCK, 0640);
    if (rc == MDB_SUCCESS)
        rc = mdb_txn_begin(sv->env, NULL, 0, &sv->txn);
    if (rc != MDB_SUCCESS) {
        log_error("salvage", "cannot make a store in %s: %s", to, mdb_strerror(rc));
        return SL_EIO;
    }
    return SL_OK;
}

/* count fills r->per_level from the new store, opened as a broker would. */
static int count(const char *to, uint64_t map_bytes, store_salvage_report *r)
{
    store *s = NULL;
    store_level_info info[PROTO_MAX_LEVELS];
    uint64_t delayed[PROTO_MAX_LEVELS] = {0};
    store_cfg cfg = {.dir = to, .levels = r->levels, .map_bytes = map_bytes};
    int err = store_open(&cfg, &s, info);
    if (err != SL_OK)
        return err;
    store_delayed_counts(s, delayed);
    for (unsigned l = 0; l < r->levels; l++)
        r->per_level[l] = info[l].count + info[l].dead + delayed[l];
    store_close(&s);
    return SL_OK;
}

int store_salvage(const char *dir, const char *to, uint64_t map_bytes, store_salvage_report *r)
{
    char path[4200], why[320];
    salvage sv = {.r = r, .next_id = 1, .meta_sealed = -1};
    int lock_fd = -1;
    memset(r, 0, sizeof *r);
    sv.f.fd = -1;
    int err = lock_source(dir, &lock_fd);
    if (err == SL_OK)
        err = open_target(&sv, to, map_bytes);
    if (err != SL_OK)
        goto done;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (pg_open(&sv.f, path, why, sizeof why) != 0) {
        log_warn("salvage", "%s: every page is read node by node, as pages of %ld bytes", why, sysconf(_SC_PAGESIZE));
        pg_close(&sv.f);
        if (pg_open_raw(&sv.f, path, (uint32_t)sysconf(_SC_PAGESIZE), why, sizeof why) != 0) {
            log_error("salvage", "%s", why);
            err = SL_ECORRUPT;
            goto done;
        }
    }
    r->pages = sv.f.last_pg + 1;
    err = walk_trees(&sv);
    if (err == SL_OK)
        err = carve(&sv);
    if (err == SL_OK)
        err = salvage_log(&sv, dir);
    if (err == SL_OK)
        err = salvage_finish(&sv);
    if (err == SL_OK) {
        int rc = mdb_txn_commit(sv.txn);
        sv.txn = NULL;
        if (rc != MDB_SUCCESS) {
            log_error("salvage", "cannot commit the new store: %s", mdb_strerror(rc));
            err = SL_EIO;
        }
    }
done:
    if (sv.txn)
        mdb_txn_abort(sv.txn);
    if (sv.env)
        mdb_env_close(sv.env);
    pg_close(&sv.f);
    free(sv.buf);
    free(sv.skip);
    if (lock_fd >= 0)
        close(lock_fd);
    if (err == SL_OK)
        err = count(to, map_bytes, r);
    r->records = 0;
    for (unsigned l = 0; l < r->levels; l++)
        r->records += r->per_level[l];
    if (err == SL_OK)
        log_info("salvage", "%s: %" PRIu64 " records copied to %s (%" PRIu64 " failed their check, %" PRIu64
                 " met twice), %" PRIu64 " pages read node by node, %" PRIu64 " log records replayed; %u levels, "
                 "next id %" PRIu64, dir, r->records, to, r->records_bad, r->dupes, r->pages_carved, r->log_records,
                 r->levels, r->next_id);
    return err;
}
