/*
 * store_check.c - the data file checked before LMDB opens it, and what a
 * damaged tree costs: one level set aside, or a clear refusal, never a
 * crash.
 *
 * store_check walks every tree of data.mdb with store_pages.c (the main
 * tree of named trees, the free list, then each named tree), each page
 * checked before anything reads past it, and decides:
 *
 *   - q.<L> or dead.<L> fails: level L is quarantined. The store never
 *     touches those two trees again while it runs (store_txn_level refuses
 *     the level: nothing is read, appended, delivered or dead-lettered
 *     there), the queue counts nothing in it, and the messages LMDB counted
 *     in them (entries of both trees, the anchor left out) are reported as
 *     "quarantined" (stats, level list, explain). One log line per level.
 *     The other levels go on. `sluice salvage` rebuilds a store with every
 *     record whose checksum holds.
 *   - the main tree, the free list (or a page both a tree and the free list
 *     claim), meta, delayed, the TTL index or the idempotency keys fail:
 *     the broker refuses to start, once, naming the tree and the page and
 *     pointing at `sluice salvage`. These serve every level (the free list
 *     decides which pages LMDB writes next), so no level could be trusted
 *     without them.
 *
 * After LMDB has opened the file, store_check_meta reads every meta value
 * (sealed with a CRC since STORE_FORMAT 3) and refuses the same way when
 * one fails: a damaged next id, log position or tag name must not be
 * believed.
 *
 * While the broker runs, an LMDB call that fails on a damaged page
 * (MDB_PAGE_NOTFOUND, MDB_CORRUPTED: store_fail notes it) loses the pass's
 * transaction; store_recheck then walks the file again: a level whose trees
 * now fail is quarantined and the batch refused (SL_ECORRUPT, the broker
 * goes on, the log's batches put back), damage elsewhere stops the broker,
 * whose next start refuses the store here, once.
 *
 * What this does not protect: damage that arrives while the broker runs
 * and that liblmdb reads without failing (a node whose sizes point outside
 * its page may still crash it: only what is on disk at open, or at a
 * recheck, is walked first); and values whose shape is right (a named tree's counts
 * that add up, an idempotency key's id, a TTL index entry, which are
 * checked when used: see DESIGN.md).
 *
 * Costs: one pread of every page in use and a bit per page of the file, at
 * open: 0.2 s for a file of 1 GiB in the page cache (DESIGN.md).
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"
#include "store_pages.h"

#define CHECK_TREES 64

typedef struct named {
    char name[16];
    pg_db db;
} named;

typedef struct trees {
    named v[CHECK_TREES];
    unsigned n;
} trees;

static int collect(void *ctx, const void *key, size_t key_len, const void *val, size_t len)
{
    trees *t = ctx;
    (void)len;
    if (t->n == CHECK_TREES || key_len >= sizeof t->v[0].name)
        return 0; /* not one of ours: LMDB is never asked for it */
    memcpy(t->v[t->n].name, key, key_len);
    t->v[t->n].name[key_len] = '\0';
    pg_db_decode(val, &t->v[t->n].db);
    t->n++;
    return 0;
}

/* level_of returns L for "q.L" and "dead.L", else -1. */
static int level_of(const char *name)
{
    const char *dot = strchr(name, '.');
    if (!dot || (strncmp(name, "q.", 2) != 0 && strncmp(name, "dead.", 5) != 0))
        return -1;
    char *end;
    long l = strtol(dot + 1, &end, 10);
    return *end || end == dot + 1 || l < 0 || l >= PROTO_MAX_LEVELS ? -1 : (int)l;
}

static size_t key_len_of(const char *name)
{
    if (level_of(name) >= 0)
        return 8;
    return strcmp(name, "delayed") == 0 || strcmp(name, "ttl") == 0 ? 16 : 0;
}

static int refuse(const char *dir, const char *why)
{
    log_error("store", "the data file in %s is corrupt: %s; the broker does not start on it. Rebuild it with "
              "`sluice salvage --data %s --to NEWDIR` (every record whose checksum holds is kept), or restore it "
              "from a backup", dir, why, dir);
    return SL_ECORRUPT;
}

/* check walks dir's data file as store_check says; runtime: the broker is
 * running (store_recheck): only levels not yet quarantined are logged. */
static int check(store *s, const char *dir, int runtime)
{
    char path[4200], why[320];
    pg_file f;
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &st) != 0 ? errno == ENOENT : st.st_size == 0)
        return SL_OK; /* a new store (store_lock made the file empty) */
    if (pg_open(&f, path, why, sizeof why) != 0) {
        pg_close(&f);
        return refuse(dir, why);
    }
    trees *t = calloc(1, sizeof *t);
    int err = t ? SL_OK : SL_ENOMEM;
    pg_tree main_tree = {.name = "the main tree", .db = f.main_db, .subdata = 1};
    if (err == SL_OK && pg_walk(&f, &main_tree, collect, t, why, sizeof why) != 0)
        err = refuse(dir, why);
    if (err == SL_OK && pg_free_walk(&f, why, sizeof why) != 0)
        err = refuse(dir, why);
    uint64_t held[PROTO_MAX_LEVELS] = {0};
    uint32_t bad = 0;
    for (unsigned i = 0; err == SL_OK && i < t->n; i++) {
        pg_tree tree = {.name = t->v[i].name, .db = t->v[i].db, .key_len = key_len_of(t->v[i].name)};
        int level = level_of(tree.name);
        if (level >= 0) /* what LMDB counts in it (a queue's anchor left out) */
            held[level] += tree.db.entries - (tree.db.entries && tree.name[0] == 'q');
        if (pg_walk(&f, &tree, NULL, NULL, why, sizeof why) == 0)
            continue;
        if (f.conflict)
            err = refuse(dir, why); /* a page the free list names too: LMDB would write over it */
        else if (level < 0)
            err = refuse(dir, why);
        else {
            if (!((bad >> level) & 1) && !store_level_quarantined(s, (unsigned)level))
                log_error("store", "level %d is quarantined%s: %s. Its trees are not read while the broker runs "
                          "(nothing is delivered from it, publishes to it are refused); the other levels go on. "
                          "`sluice salvage --data %s --to NEWDIR` rebuilds the store with every record whose "
                          "checksum holds", level, runtime ? " (LMDB failed on its pages as the broker ran)" : "", why,
                          dir);
            bad |= 1u << level;
        }
    }
    if (err == SL_OK) {
        for (unsigned l = 0; l < PROTO_MAX_LEVELS; l++)
            if ((bad >> l) & 1 && !store_level_quarantined(s, l))
                s->quarantined_msgs[l] = held[l];
        s->quarantined |= bad;
    }
    free(t);
    pg_close(&f);
    return err;
}

int store_check(store *s, const char *dir)
{
    return check(s, dir, 0);
}

int store_recheck(store *s)
{
    uint32_t before = s->quarantined;
    s->damage_seen = 0;
    int err = check(s, s->dir, 1);
    if (err != SL_OK || s->quarantined == before) {
        log_error("store", "LMDB failed on a page of %s as the broker ran, and %s: stopping", s->dir,
                  err != SL_OK ? "the damage is outside the levels' trees (see above)"
                               : "no level's tree fails the checks on disk");
        return SL_EIO;
    }
    return SL_ECORRUPT;
}

int store_check_meta(store *s, const char *dir)
{
    MDB_cursor *cur;
    MDB_val k, v;
    if (!s->meta_sealed)
        return SL_OK;
    int rc = mdb_cursor_open(s->txn, s->meta, &cur);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "open a cursor on meta");
    int err = SL_OK;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS && err == SL_OK;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        if (store_meta_open(s, &k, &v) != SL_OK) { /* (logged, with the key) */
            char name[96], why[160];
            store_meta_key_text(k.mv_data, k.mv_size, name, sizeof name);
            snprintf(why, sizeof why, "meta record \"%s\" failed its check", name);
            err = refuse(dir, why);
        }
    mdb_cursor_close(cur);
    if (err == SL_OK && rc != MDB_NOTFOUND)
        err = store_fail(s, rc, "read meta");
    return err;
}

int store_level_quarantined(const store *s, unsigned level)
{
    return level < PROTO_MAX_LEVELS && ((s->quarantined >> level) & 1);
}

uint64_t store_quarantined_msgs(const store *s, unsigned level)
{
    return store_level_quarantined(s, level) ? s->quarantined_msgs[level] + s->quarantined_delayed[level] : 0;
}
