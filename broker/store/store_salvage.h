/*
 * store_salvage.h - what salvage's two files share (store_salvage.c: the
 * data file's trees and pages; store_salvage_log.c: meta, the log, and the
 * new store's last touches). See store_salvage.c.
 */
#ifndef SLUICE_STORE_SALVAGE_H
#define SLUICE_STORE_SALVAGE_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_pages.h"

#define SALVAGE_DBS 48

typedef struct salvage {
    store_salvage_report *r;
    pg_file f;                  /* the damaged data file */
    MDB_env *env;               /* the new store */
    MDB_txn *txn;
    struct {
        char name[16];
        MDB_dbi dbi;
    } dbs[SALVAGE_DBS];
    unsigned ndbs;
    int meta_sealed;            /* the old store's meta values carry seals: 1, 0, or -1 not known */
    int free_bad;               /* the free list failed its check */
    int have_wal;               /* wal_* hold meta "wal" */
    uint64_t wal_id, wal_seq, wal_pos;
    int have_levels, have_next_id;
    unsigned levels_old, levels_seen;
    uint64_t next_id;           /* above every id met, and the old meta's */
    struct salvage_skip {
        unsigned level;
        uint64_t key;
    } *skip;                    /* keys the old store set aside (meta "skip/") */
    size_t nskip, skip_cap;
    unsigned char *buf;         /* a value being written */
    size_t buf_cap;
} salvage;

/* salvage_dbi finds (or opens, creating it) the new store's tree name. */
int salvage_dbi(salvage *sv, const char *name, MDB_dbi *dbi);

/* salvage_put writes key -> val into the new store's tree name with flags:
 * SL_OK, SL_EFULL for an existing key under MDB_NOOVERWRITE, SL_ENOSPC,
 * SL_EIO (logged). */
int salvage_put(salvage *sv, const char *name, const void *key, size_t klen, const void *val, size_t vlen,
                unsigned flags);

/* salvage_meta_put writes val sealed under meta key. */
int salvage_meta_put(salvage *sv, const void *key, size_t klen, const void *val, size_t vlen);

/* salvage_record copies the record key -> val found in tree (NULL: carved,
 * its tree told by its key and kind) into the new store if it passes its
 * check, counting it. SL_OK (also for one that failed: counted), or a
 * write's error. */
int salvage_record(salvage *sv, const char *tree, const unsigned char *key, size_t klen, const unsigned char *val,
                   size_t vlen, unsigned flags);

/* salvage_skipped tells whether the old store had set key of level aside. */
int salvage_skipped(const salvage *sv, unsigned level, uint64_t key);

/* salvage_meta takes one old meta value: what it rebuilds is noted (the
 * format, the level count, the next id, the log's place, the skipped keys),
 * the rest copied if its seal holds. */
int salvage_meta(salvage *sv, const void *key, size_t klen, const void *val, size_t vlen);

/* salvage_log replays dir's log on top of the new store, from the place
 * meta "wal" named (nothing when meta lost it). SL_OK (a damaged log ends
 * the replay where it is: logged), or a write's error. */
int salvage_log(salvage *sv, const char *dir);

/* salvage_finish writes what salvage rebuilds: tag names the records need,
 * the TTL index, the next id, the level count and the format. */
int salvage_finish(salvage *sv);

#endif /* SLUICE_STORE_SALVAGE_H */
