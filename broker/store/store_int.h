/*
 * store_int.h - what the store's own files share: the store object, the key
 * layout and the helpers around every mdb_* call.
 *
 * The store module is store.h and the files behind it: store.c (the
 * environment, open, the lock), store_io.c (the pass's transaction and the
 * mdb wrappers below), store_msg.c (messages in q.<L>, dead.<L> and
 * delayed), store_dead.c (walking, requeueing and deleting dead letters),
 * store_meta.c (sealed meta values, settings blobs, explain's lookups,
 * level sizes), store_idem.c (idempotency keys), store_ttl.c (the
 * time-to-live index), store_check.c, store_pages.c, store_skip.c and
 * store_corrupt.c (damage), store_upgrade.c (older formats), store_salvage*.c
 * (salvage), and the log's and writer's files. Only those files include this
 * header: struct store and lmdb.h stay out of sight of the rest of the
 * broker.
 *
 * The store_* helpers below return an sl_err. Those that call LMDB log a
 * failure once, through store_fail, and leave the transaction poisoned.
 */
#ifndef SLUICE_STORE_INT_H
#define SLUICE_STORE_INT_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "byteorder.h"
#include "rec.h"
#include "store.h"
#include "store_wal.h"

#define STORE_MAXDBS     64            /* named databases; room for later ones */
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
    uint64_t head_hi[PROTO_MAX_LEVELS];   /* largest head key the open transaction put */
    unsigned char head_open[PROTO_MAX_LEVELS]; /* head_hi is set: keys up to it are not durable */
    uint32_t fair_mask;                   /* levels with tag-led keys (store_tag.c) */
    struct store_gone {                   /* acknowledged, deleted from LMDB later (store_gone.c) */
        uint64_t key;
        unsigned level;
    } *gone;
    size_t ngone, gone_cap;
    uint64_t next_id;                     /* next message id to hand out */
    uint64_t next_id_saved;               /* meta "next_id" as last committed */
    int dirty;                            /* the transaction holds writes */
    int failed;                           /* sl_err that poisoned the transaction */
    int panic_logged;
    int nospace_logged;                   /* a no-space failure was logged; again after a commit */
    /* the writer (store_writer.c): while a commit is out, wtxn is the
     * transaction being committed on the writer thread and txn is rtxn, a
     * read-only snapshot of the last committed state (frozen = 1) */
    MDB_txn *rtxn;
    MDB_txn *wtxn;
    int frozen;
    int commit_err;                       /* the finished commit's mapped result */
    uint64_t commit_next_id;              /* next_id written with the commit that is out */
    struct store_writer *writer;          /* NULL until the first asynchronous commit */
    int writer_failed;                    /* the thread could not start: commits stay on the loop */
    /* the write-ahead log (store_wal.c), NULL when off. While a record is
     * out (logging = 1) the store is not frozen: the loop goes on writing
     * the next batch into txn, and sealed_* keep what the record carries */
    struct store_wal *wal;
    int wal_nomem;                        /* a note could not be kept: the batch goes with a checkpoint */
    int logging;                          /* a record is being written on the writer thread */
    int log_inline_ok;                    /* the next record may be written on the loop (store_log_inline) */
    uint64_t ckpt_started_ns;             /* when the checkpoint that is out was handed over */
    uint64_t checkpoint_ns;               /* store_cfg's */
    uint64_t lmdb_commits;                /* successful LMDB commits (with the log: checkpoints) */
    uint64_t lmdb_forced;                 /* LMDB commits asked for with nothing to write (meta "ckpt") */
    uint64_t sealed_key[PROTO_MAX_LEVELS];     /* last_key as the record out was sealed */
    uint64_t sealed_head_hi[PROTO_MAX_LEVELS]; /* head keys that record carries */
    unsigned char sealed_head_open[PROTO_MAX_LEVELS];
    uint64_t sealed_next_id;              /* next_id that record carries */
    /* replication (store_repl.c): a primary turns every batch into a record */
    int repl_on, repl_ready;
    uint64_t repl_epoch, repl_seq;        /* stamped into meta "repl" with each record */
    unsigned char *repl_buf;              /* the last record, for store_repl_take */
    size_t repl_len, repl_cap;
    int meta_sealed;                      /* meta values carry their CRC (STORE_FORMAT 3): store_meta.c */
    uint32_t quarantined;                 /* levels whose trees failed their checks (store_check.c) */
    uint64_t quarantined_msgs[PROTO_MAX_LEVELS]; /* what LMDB counted in them as they were set aside */
    uint64_t quarantined_delayed[PROTO_MAX_LEVELS]; /* their delayed messages (store_delayed_counts) */
    uint64_t skip_hint[PROTO_MAX_LEVELS]; /* keys skipped per level, a hint (store_skip.c) */
    struct store_skip *skip;              /* the skipped keys, a superset of meta's "skip/" */
    int lock_fd;                          /* data.mdb, flocked for as long as the store is open */
    int dir_lock_fd;                      /* the data directory, flocked likewise */
    int damage_seen;                      /* an LMDB call failed on a damaged page: store_recheck at the commit */
    int abandoned;                        /* store_abandon: close writes nothing; the log replays at the next open */
    char *dir;                            /* the data directory */
    size_t page_bytes;
    uint64_t used_bytes;                  /* from the last store_measure; 0 before */
    uint64_t held_bytes;                  /* of those, freed by the last commit: reusable after the next */
    uint64_t txn_added_bytes;             /* what the open transaction appended */
    struct store_copy *copy;              /* a backup copy (store_backup.c), or NULL */
    unsigned char *scratch;               /* a record being moved or rewritten */
    size_t scratch_bytes;
};

/*
 * Key layout. Change it: bump STORE_FORMAT. (Record values: see rec.c.)
 *
 * q.<L> by big-endian u64 order key, dead.<L> by big-endian u64 id, delayed
 * by big-endian u64 due_ns then big-endian u64 id; q.<L> and delayed also
 * hold the anchor, one zero byte (below). Big-endian makes LMDB's
 * default memcmp order the numeric order. Meta values are little-endian u32
 * or u64.
 *
 * idem by the key's bytes, holding little-endian u64 id then u64 expires_ns;
 * idem_exp by big-endian u64 expires_ns then the key's bytes, holding
 * nothing; ttl by big-endian u64 expires_ns then big-endian u64 id, holding
 * one byte where (level, or STORE_TTL_DELAYED) then little-endian u64 loc.
 */

/* key_u64 points *k at buf, holding key big-endian. */
static inline void key_u64(MDB_val *k, unsigned char buf[8], uint64_t key)
{
    put_be64(buf, key);
    k->mv_size = 8;
    k->mv_data = buf;
}

/* ---- store.c: errors and the pass's transaction ---- */

/* store_fail logs a failed mdb_* call (rc) with what was being done (fmt),
 * marks the transaction unusable, and returns rc mapped to an sl_err:
 * SL_ENOTFOUND, SL_ENOSPC, SL_ENOMEM or SL_EIO. An MDB_PANIC is logged once
 * per store. */
__attribute__((format(printf, 3, 4)))
int store_fail(store *s, int rc, const char *fmt, ...);

/* store_db_open_named opens (creating it) the database called name, as
 * open does for q.<L>, dead.<L> and the others, for the log's replay. */
int store_db_open_named(store *s, const char *name, MDB_dbi *dbi);

/* store_wal_settle makes or removes the log file after the open commit
 * (store_wal.c): a log that is new, resized or switched off. Returns 1 when
 * it made a file (the caller commits meta "wal" naming it), SL_OK when it
 * had nothing to make. */
int store_wal_settle(store *s, const char *dir);

/* store_txn_drop aborts the open transaction and forgets what it held (a
 * refused batch); the caller puts logged batches back (store_wal_reapply). */
void store_txn_drop(store *s);

/* store_commit_sync commits the open transaction on the calling thread
 * (store_open, shutdown, tests; store_writer.c): store_commit's old body. */
int store_commit_sync(store *s);

/* store_backup_close waits for a backup copy that runs, if any
 * (store_close, before the environment closes). */
void store_backup_close(store *s);

/* store_writer_close stops the writer thread, if any (store_close). */
void store_writer_close(store *s);

/* store_txn_need makes sure the pass's write transaction is open. Returns
 * SL_OK, the error that poisoned the transaction, or store_fail's. */
int store_txn_need(store *s);

/* store_repl_capture builds the open batch's record for the replication
 * stream (store_repl.c), at store_commit_start. SL_OK or an error. */
int store_repl_capture(store *s);

/* store_repl_free frees its buffer (store_close). */
void store_repl_free(store *s);

/* store_txn_level is store_txn_need for an operation on one level: SL_EINVAL
 * for a level past the store's. */
int store_txn_level(store *s, unsigned level);

/* store_txn_lazy is store_txn_level for the three operations that leave
 * acknowledged records of fair levels waiting for their batched delete:
 * a publish (keys past every run), a fair take (at or after its tenant's
 * cursor, past every acknowledged key of the tag) and an acknowledgement;
 * and store_level_bytes, which counts LMDB's pages as they are. Every
 * other operation on a level goes through store_txn_level, which deletes
 * them first (store_gone.c). */
int store_txn_lazy(store *s, unsigned level);

/* ---- acknowledged records of fair levels (store_gone.c) ---- */

/* store_gone_add deletes the record at key of fair level: noted in the
 * log's open batch now, deleted from LMDB with the next batch. */
int store_gone_add(store *s, unsigned level, uint64_t key);

/* store_gone_apply deletes the waiting keys from LMDB, in key order. */
int store_gone_apply(store *s);

/* store_gone_drop forgets them with the transaction they were noted in. */
void store_gone_drop(store *s);

/* ---- store.c: records ---- */

/* store_rec_key is the record key (rec.h) of LMDB key k. */
static inline rec_key store_rec_key(const MDB_val *k)
{
    return (rec_key){k->mv_data, k->mv_size};
}

/* store_decode checks a record value v read from dbi under key k (whose
 * bytes its checksum covers) and points out into it; a rejected record is
 * logged and gives SL_ECORRUPT. */
int store_decode(store *s, MDB_dbi dbi, const MDB_val *k, const MDB_val *v, store_rec *out);

/* store_scratch_copy copies v to the scratch buffer, leaving extra bytes of
 * room after it, and points *copy at the copy, valid until the next copy.
 * SL_ENOMEM (logged) when the buffer cannot grow. */
int store_scratch_copy(store *s, const MDB_val *v, size_t extra, MDB_val *copy);

/* ---- store_meta.c: sealed meta values ---- */

#define STORE_META_SEAL 4 /* a meta value's CRC-32C of its key and bytes, after them */

/* store_meta_read reads meta key[0..key_len) into *v, its seal checked and
 * left out. SL_ENOTFOUND when absent, SL_ECORRUPT (logged) when its seal
 * fails, or store_fail's. */
int store_meta_read(store *s, const void *key, size_t key_len, MDB_val *v);

/* store_meta_write puts val[0..len), sealed, under meta key[0..key_len) in
 * the open transaction (through store_mdb_put: logged). val must not point
 * into the map. */
int store_meta_write(store *s, const void *key, size_t key_len, const void *val, size_t len);

/* store_meta_open checks the seal of meta value *v found under *k and takes
 * it off *v: SL_OK, or SL_ECORRUPT (logged). */
int store_meta_open(store *s, const MDB_val *k, MDB_val *v);

/* store_meta_key_text writes meta key[0..len) printably into buf (cap
 * bytes; bytes outside printable ASCII as \xHH), for log lines. */
void store_meta_key_text(const void *key, size_t len, char *buf, size_t cap);

/* ---- store_check.c, store_upgrade.c: at open ---- */

/* store_check walks every tree of dir's data file before LMDB opens it
 * (store_pages.c): a damaged q.<L> or dead.<L> quarantines level L
 * (s->quarantined, logged once), damage anywhere else is refused. SL_OK,
 * SL_ECORRUPT (logged, naming the page and `sluice salvage`), SL_ENOMEM. */
int store_check(store *s, const char *dir);

/* store_recheck walks the data file again after an LMDB call failed on a
 * damaged page while the broker ran (damage_seen): SL_ECORRUPT when a level
 * not quarantined before now is (logged; the batch is refused and the
 * broker goes on), SL_EIO when the damage is elsewhere or not found
 * (logged: the broker stops). */
int store_recheck(store *s);

/* store_check_meta checks every meta value's seal (a store of format 3):
 * SL_OK, or SL_ECORRUPT (logged as store_check's). */
int store_check_meta(store *s, const char *dir);

/* store_upgrade brings a store of format `from` (0: new) to STORE_FORMAT in
 * the open transaction: records sealed for their keys, meta values sealed,
 * "format" written. Logged. */
int store_upgrade(store *s, const char *dir, unsigned from);

/* ---- store_corrupt.c ---- */

/* store_set_aside writes a dead letter of level holding raw_val's bytes
 * (tag "corrupt", reason, died_ns) under a new id (*id_out): the copy of a
 * record that failed its check. */
int store_set_aside(store *s, unsigned level, const MDB_val *raw_val, const char *reason, uint64_t died_ns,
                    uint64_t *id_out);

/* ---- store_skip.c: records set aside in place ---- */

/* store_skip_load reads meta's skipped keys at open; store_skip_free frees
 * them (store_close). */
int store_skip_load(store *s);
void store_skip_free(store *s);

/* store_skip_add notes key of level as set aside, its copy dead letter
 * dead_id, in the open transaction. */
int store_skip_add(store *s, unsigned level, uint64_t key, uint64_t dead_id);

/* store_skipped tells whether key of level is set aside. */
int store_skipped(store *s, unsigned level, uint64_t key);

/* store_skip_past steps cursor cur (on q.<level>, at *k and *v) past keys
 * set aside: SL_OK on a key that is not, SL_ENOTFOUND at the end, or
 * store_fail's. */
int store_skip_past(store *s, unsigned level, MDB_cursor *cur, MDB_val *k, MDB_val *v);

/* store_skip_count returns the keys of level set aside and still in q.<L>. */
uint64_t store_skip_count(store *s, unsigned level);

/* store_skip_add_delayed notes the delayed record filed under (due, id) as
 * set aside, its copy dead letter dead_id; store_skipped_delayed tells
 * whether the delayed key k is. */
int store_skip_add_delayed(store *s, uint64_t due, uint64_t id, uint64_t dead_id);
int store_skipped_delayed(store *s, const MDB_val *k);

/* ---- store.c: mdb wrappers; the transaction must be open ---- */

/* store_mdb_get reads and checks the record at key in dbi. With copy, it
 * first copies the record to the scratch buffer (extra bytes of room after
 * it) and out points into that copy. SL_ENOTFOUND if absent. */
int store_mdb_get(store *s, MDB_dbi dbi, uint64_t key, store_rec *out, MDB_val *copy, size_t extra);

/* store_mdb_put is mdb_put that marks the transaction dirty. */
int store_mdb_put(store *s, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags);

/* store_mdb_del deletes the record at u64 key in dbi and marks the
 * transaction dirty. SL_ENOTFOUND if absent. */
int store_mdb_del(store *s, MDB_dbi dbi, uint64_t key);

/*
 * The anchor. LMDB frees a database's root page when its last key is
 * deleted and takes a new page at the next put, and does not reuse a page
 * freed that way within the same transaction. A queue that empties between
 * messages (the usual state of a broker that keeps up) so took a fresh page
 * per message, and the checkpoint wrote them all: 500 ms at 2,000 msgs/s made 3.3 MB of empty leaf pages, and the
 * checkpoint that froze publishes lasted 4-9 ms instead of about 1. So
 * q.<L> and delayed each hold one key that is never deleted, the anchor: one
 * zero byte, which sorts before every 8- or 16-byte key. store_cursor_at
 * steps past it, store_entries does not count it and store_level_bytes
 * counts nothing for a level that holds only it; every other access is by a
 * whole key, or steps from a real key to another one that sorts after the
 * anchor (store_tag_span steps back, but only within a tag's run), so
 * nothing else meets it.
 * Store format 2 has anchors; format 1 stores get them at open.
 */
#define STORE_ANCHOR_BYTES 1

/* store_anchor_put writes dbi's anchor, if it has none, into the open
 * transaction. */
int store_anchor_put(store *s, MDB_dbi dbi);

/* store_cursor_at positions a new cursor on dbi with op (MDB_FIRST,
 * MDB_LAST or MDB_SET_RANGE, where *k is where to start; never on an
 * anchor) and checks the key's size. k and v point into the map
 * and outlive the cursor, which is handed back in *keep (keep may be NULL),
 * or else closed; the caller closes a cursor it keeps. SL_ENOTFOUND when op
 * finds nothing, SL_ECORRUPT (logged) for a key of the wrong size. */
int store_cursor_at(store *s, MDB_dbi dbi, MDB_cursor_op op, MDB_val *k, MDB_val *v,
                    MDB_cursor **keep);

/* store_edge_key reads the first or last (op) order key of q.<level>.
 * SL_ENOTFOUND when the level is empty. */
int store_edge_key(store *s, unsigned level, MDB_cursor_op op, uint64_t *key);

/* store_tag_key chooses the key of a record of rec's tag moved into fair
 * level (store_tag.c): just before its tag's first key (head != 0, when
 * that key's seq leaves room) or after everything (a new seq). */
int store_tag_key(store *s, unsigned level, const store_rec *rec, int head, uint64_t *key);

/* store_stat reads dbi's LMDB statistics into *st and its records, not
 * counting an anchor, into *n. */
int store_stat(store *s, MDB_dbi dbi, MDB_stat *st, uint64_t *n);

/* store_entries counts the records in dbi into *n (store_stat's count). */
int store_entries(store *s, MDB_dbi dbi, uint64_t *n);

/* store_delayed_scan counts delayed records per level from their level
 * bytes, without checking checksums (popping a record checks it).
 * O(delayed). */
int store_delayed_scan(store *s, uint64_t counts[PROTO_MAX_LEVELS]);

/* ---- store_msg.c: appends, and the seek both kinds of key use ---- */

/* store_seek_key positions on the first record of q.<level> whose key is >=
 * from: its key into *key and its value (unchecked) into *v. SL_ENOTFOUND
 * when there is none. */
int store_seek_key(store *s, unsigned level, uint64_t from, uint64_t *key, MDB_val *v);

/* store_rec_put puts rec into q.<L> of its level: with tag_id NULL past
 * the tail (last_key[L] + 1, MDB_APPEND, and last_key[L] becomes the key);
 * else in tag *tag_id's run with the level's next seq (MDB_NOOVERWRITE, and
 * last_key[L] becomes the seq; SL_ENOSPC when seqs or ids ran out). Sets
 * *key, and counts the record's footprint in used_bytes and in the pass's
 * txn_added_bytes (room.c's figures), the same for both kinds of key. */
int store_rec_put(store *s, const store_rec *rec, const uint32_t *tag_id, uint64_t *key);

/* ---- store_ttl.c: the time-to-live index ---- */

/* store_ttl_note records where rec, if it has a time to live, now is:
 * where is its level and loc its order key, or where is STORE_TTL_DELAYED and
 * loc its due time. SL_OK at once for a record without one. */
int store_ttl_note(store *s, const store_rec *rec, unsigned where, uint64_t loc);

#endif /* SLUICE_STORE_INT_H */
