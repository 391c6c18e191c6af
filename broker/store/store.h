/*
 * store.h - durable storage for Sluice: the only module that calls mdb_*.
 *
 * One LMDB environment per data directory, with these named databases:
 *
 *   q.<L>      one per level L: the level's messages in FIFO order, keyed by a
 *              big-endian u64 order key (tail keys grow up from 2^63, head keys
 *              grow down from it, so "put at head" and "append" are both O(log n)
 *              and a cursor's MDB_FIRST is the head).
 *   dead.<L>   one per level: dead letters, keyed by big-endian u64 message id.
 *   delayed    messages waiting for a due time, keyed by (big-endian u64 due
 *              wall-clock ns, big-endian u64 message id).
 *   meta       "format" (u32 STORE_FORMAT), "levels" (u32 level count),
 *              "next_id" (u64), the log's place, settings, tag names, the
 *              keys set aside ("skip/"); every value sealed (store_meta.c).
 *
 * q.<L> and delayed also hold an anchor, a one-byte key that is never
 * deleted, so that emptying them does not cost a page per message
 * (store_int.h); no function below returns or counts it (store_level_bytes
 * counts 0 for a level that holds only it).
 *
 * In-flight deliveries are NOT written: a leased message stays in its q.<L>
 * record; the lease lives in memory (lease.c). So dispatch costs no write, an
 * ack is one delete, and after a crash every in-flight message is simply still
 * at the head of its level. See broker/DESIGN.md, "Dispatch writes nothing".
 *
 * Transactions: the store keeps at most one write transaction open. Every
 * operation below runs inside it, beginning it lazily; store_commit commits
 * it on the calling thread, store_commit_start on the writer thread (reads
 * then see the last committed snapshot, and writes wait for the commit's
 * end). Reads see the transaction's own writes. The loop commits once per
 * pass (group commit). Pointers in a store_rec returned by a read are valid only
 * until the next call into the store (any may write: store_txn_level deletes
 * acknowledged records first, store_gone.c): copy what you keep.
 *
 * Every record value starts with a CRC32C of its key and the rest of the
 * record; reads verify it, and the record's lengths, and return SL_ECORRUPT
 * on mismatch. rec.h defines the record's bytes. Meta values end with a
 * CRC32C of their key and bytes (store_meta.c).
 *
 * Errors: functions return sl_err codes. A failing mdb_* call is logged once
 * in the store, with its LMDB message, and mapped: MDB_MAP_FULL -> SL_ENOSPC,
 * MDB_PANIC and I/O errors -> SL_EIO, MDB_NOTFOUND -> SL_ENOTFOUND. After any
 * write error the transaction is unusable: store_commit then aborts it and
 * returns the error (store_failed reports it), and the caller must not
 * confirm anything from that pass.
 *
 * The module's files: store.c (the environment, open, the lock),
 * store_io.c (the pass, the wrappers), store_msg.c (messages, delayed ones
 * included), store_dead.c (what is done with dead letters: walk, requeue,
 * delete), store_meta.c (sealed meta values, settings blobs, lookups, level
 * sizes), store_idem.c (idempotency keys), store_ttl.c (the expiry index),
 * store_check.c, store_pages.c, store_skip.c, store_corrupt.c (damage),
 * store_upgrade.c (older formats), store_salvage*.c (salvage); store_int.h
 * is what they share, for them only.
 *
 * Callers: queue.c is the only caller of the message operations (messages,
 * delayed, idempotency keys, the expiry index, level sizes). Others may use
 * the pass (store_commit, store_dirty: loop, cron), space (cron, admit),
 * the settings blobs (settings.c) and explain's read-only lookups
 * (store_find, store_delayed_find, store_dead_get).
 */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "rec.h"

/* Change the record layout (rec.c), the key layout or meta's: bump
 * STORE_FORMAT, and upgrade older stores at open (store_upgrade.c). */
#define STORE_FORMAT 4 /* 4: a record may carry the message's headers (rec.c); 3: checksums cover keys, meta
                        * values sealed; 2: an anchor key in q.<L> and delayed (store_int.h); 1 to 3 are
                        * upgraded at open */

#define STORE_KEY_MID (UINT64_C(1) << 63)

typedef struct store store;

typedef struct store_cfg {
    const char *dir;      /* data directory; created if missing */
    unsigned levels;      /* 1..PROTO_MAX_LEVELS */
    uint64_t map_bytes;   /* LMDB map size */
    uint64_t wal_bytes;   /* the write-ahead log's ring (store_wal.c); 0: none, every batch an LMDB commit */
    int wal_buffered;     /* write its records through the page cache and fdatasync, never O_DIRECT (--wal-buffered) */
    uint64_t checkpoint_ns; /* with the log: an LMDB commit of what it holds at least this often */
} store_cfg;

/* A message record (fields in rec.h). On read, tag/body/reason point into
 * LMDB memory. */
typedef rec_msg store_rec;

/* What store_open found on disk. */
typedef struct store_level_info {
    uint64_t count;       /* records in q.<L> */
    uint64_t dead;        /* records in dead.<L> */
    uint64_t first_key;   /* head order key, or 0 when empty */
    uint64_t last_key;    /* tail order key, or 0 when empty */
} store_level_info;

/* ---- the environment and the pass (store.c) ---- */

/* store_open opens or creates the environment in cfg->dir with durable flags
 * only (no NOSYNC, NOMETASYNC or WRITEMAP), creates the databases, checks the
 * format, and fills info[0..levels) (info may be NULL). It refuses
 * (SL_EINVAL, logged) a directory whose format differs, or whose stored level
 * count is larger than cfg->levels while a dropped level still holds data.
 * Returns SL_OK, SL_EINVAL, SL_EIO, SL_ENOMEM. */
int store_open(const store_cfg *cfg, store **out, store_level_info *info);

/* store_close ends the store: it waits for a commit or a backup that is
 * out, checkpoints the log (unless abandoned), aborts any open
 * transaction, closes the environment and NULLs *s. Accepts NULL. */
void store_close(store **s);

/* store_abandon makes store_close leave the store as a crash would: the
 * changes of the open transaction that no log record holds are dropped,
 * nothing is checkpointed, and the next open replays the log. For a
 * primary deposed from its group: what it did not log was never
 * replicated, and must not reach its store, or its store would differ from
 * the new primary's at the same stream position (a divergence no position
 * or epoch check can see). */
void store_abandon(store *s);

/* ---- replication (store_repl.c) ---- */

/* store_repl_on makes every batch committed from now on one record of the
 * replication stream, stamped with epoch and numbered from seq + 1 (meta
 * "repl", written in the batch). store_repl_off stops it. */
void store_repl_on(store *s, uint64_t epoch, uint64_t seq);
void store_repl_off(store *s);

/* store_repl_pos reads the last record's position as committed (0, 0 when
 * none): the stream's place on a primary, how far a standby has applied. */
int store_repl_pos(store *s, uint64_t *epoch, uint64_t *seq);

/* store_repl_take hands out the record of the batch whose commit has just
 * started (store_commit_start): 1 with its bytes (valid until the next
 * commit starts) and its sequence number, 0 when that commit carried none. */
int store_repl_take(store *s, const unsigned char **p, size_t *len, uint64_t *seq);

/* store_repl_apply puts a primary's record into the open transaction, to be
 * logged and committed as this store's own batch. SL_OK, SL_ECORRUPT (its
 * checksum or layout fails, logged), SL_ESTATE (no log here), or a store
 * error. */
int store_repl_apply(store *s, const unsigned char *p, size_t len);

/* ---- damage (store_check.c, store_skip.c, store_salvage.c) ----
 *
 * store_open checks every page of the data file before LMDB reads it and
 * refuses (SL_ECORRUPT, logged) damage it cannot confine, and quarantines
 * a level whose trees (q.<L>, dead.<L>) fail: every operation on that
 * level then returns SL_ECORRUPT without touching them. The store holds
 * exclusive flocks on its directory and its data file while open
 * (SL_ESTATE when another process holds one). */

/* store_level_quarantined tells whether level's trees failed their checks
 * at open; store_quarantined_msgs how many messages (queued and dead) LMDB
 * counted in them then (0 for a level that is not quarantined). */
int store_level_quarantined(const store *s, unsigned level);
uint64_t store_quarantined_msgs(const store *s, unsigned level);

/* What salvage did (store_salvage). */
typedef struct store_salvage_report {
    uint64_t pages, pages_carved;             /* pages of the data file; read node by node */
    uint64_t trees_bad;                       /* trees that failed a check (read up to the fault) */
    uint64_t records, records_bad, dupes;     /* records copied; failing their check; seen twice */
    uint64_t meta, meta_bad;                  /* meta values copied; dropped */
    uint64_t log_records, log_entries;        /* log records replayed, and their entries */
    unsigned levels;                          /* the new store's */
    uint64_t next_id;
    uint64_t per_level[PROTO_MAX_LEVELS];     /* messages per level (queued, dead and delayed) */
} store_salvage_report;

/* store_salvage reads the data file and the log of the stopped broker's
 * dir without LMDB, every page checked (store_pages.c), and copies every
 * record whose checksum holds (and every meta value whose seal holds) into
 * a new store in to (which must not hold one), then replays the log's
 * records on top. Damaged trees are read node by node. Each step is logged
 * (log.h), and *r says what it did. Returns SL_OK, SL_EINVAL (to holds a
 * store, or dir none), SL_ESTATE (a broker holds dir), SL_ECORRUPT (the
 * data file's meta pages are not LMDB's: nothing to read), SL_EIO,
 * SL_ENOMEM. */
int store_salvage(const char *dir, const char *to, uint64_t map_bytes, store_salvage_report *r);

/* store_commit commits the open write transaction, if any, durably (an LMDB
 * commit: with the log, a checkpoint). Returns SL_OK (also when nothing was
 * open), or SL_EIO/SL_ENOSPC: then nothing of the pass reached the disk
 * (batches the log holds are put back: store_wal_reapply). */
int store_commit(store *s);

/* The writer thread (store_writer.c). store_commit_start makes the pass's
 * writes (the batch) durable on the writer thread and returns SL_OK with
 * *started = 1, in one of two ways:
 *   - with the log (store_wal.c), the usual way: the batch's record is
 *     written and flushed; the store is not frozen meanwhile, and the next
 *     batch goes on growing in the same transaction (store_logging);
 *   - a checkpoint, when the log is off, full, or due (checkpoint_ns since
 *     the last, or force): the open transaction is handed to the thread,
 *     which calls mdb_txn_commit; the store is then frozen (store_committing):
 *     reads see a snapshot of the last committed state and writes are
 *     refused (SL_ESTATE, logged).
 * Either way store_commit_poll, called when store_commit_fd is readable,
 * reports the result (returns 1, *result SL_OK, SL_ENOSPC or SL_EIO; a failed
 * commit left LMDB's previous state as it was, and a failed record stops the
 * broker). With nothing to commit, a poisoned transaction, or no thread, it
 * commits (or aborts) at once, as store_commit, and *started = 0; with the log
 * and nothing new since the last record, it does nothing. now_ns (monotonic)
 * dates checkpoints. store_commit_wait blocks until what is out has finished
 * (whatever poll does: it never returns with it still out) and sets *result
 * as store_commit_poll does. store_busy tells whether anything is out. */
int store_commit_start(store *s, uint64_t now_ns, int want_checkpoint, int *started);
/* store_log_inline lets the next store_commit_start write its log record
 * on the calling thread (the loop), when the recent records flushed in less
 * than STORE_INLINE_FLUSH_NS: the hand-off to the writer thread and back
 * costs two thread wake-ups, more than the flush on a fast disk, and the
 * loop would only wait for the record anyway. store_commit_start then
 * returns with *started = 1 and the record left to the caller:
 * store_commit_ready tells so, and the next store_commit_poll (or
 * store_commit_wait) writes and flushes it on the calling thread, as
 * durable as on the writer's, and takes its result. In between the caller
 * does what should overlap the flush (a primary ships the record to its
 * standby). A checkpoint always goes to the thread. The permission lasts
 * for one store_commit_start. */
#define STORE_INLINE_FLUSH_NS 400000u
void store_log_inline(store *s, int allow);
int store_commit_ready(const store *s);
int store_committing(const store *s);
int store_logging(const store *s);
int store_busy(const store *s);
int store_commit_fd(const store *s);
int store_commit_poll(store *s, int *result);
int store_commit_wait(store *s, int *result);

/* store_checkpoint_due tells whether the log holds batches that a
 * checkpoint should commit now (checkpoint_ns since the last one, the log
 * half used, or wanted: the map must grow), not before the back-off that
 * follows a failed one: the loop then commits even without new writes. */
int store_checkpoint_due(const store *s, uint64_t now_ns, int wanted);

/* store_checkpoint_at returns when the log's batches are due for a
 * checkpoint (UINT64_MAX when it holds none), for the loop's wake; and
 * store_held whether the open transaction holds logged batches (or one is
 * being logged) that only a checkpoint puts into LMDB. */
uint64_t store_checkpoint_at(const store *s, int wanted);
int store_held(const store *s);

/* store_log_stuck tells whether the log is half used and its last
 * checkpoint failed (the disk is full, most likely): admission refuses
 * publishes until a checkpoint succeeds. */
int store_log_stuck(const store *s);

/* (a backup of the running store: store_backup.h) */

/* What made batches durable since open: log records (one flush each) and
 * LMDB commits (two; with the log, the checkpoints). */
typedef struct store_counts {
    uint64_t log_records, log_bytes, lmdb_commits;
} store_counts;

/* store_durability_counts fills *out. */
void store_durability_counts(const store *s, store_counts *out);

/* store_txn_release ends the open write transaction if it has only read
 * (so that the map may be measured and grown between commits), even when
 * next_id has moved: the next commit writes it. */
void store_txn_release(store *s);

/* store_dirty tells whether store_commit has work to do: the open
 * transaction holds writes (a new next_id counts), or an operation of this
 * pass failed and store_commit must abort and report it. */
int store_dirty(const store *s);

/* store_failed returns the error that made the open transaction unusable
 * (SL_EIO, SL_ENOSPC, SL_ENOMEM), or SL_OK. Once it is set, every operation
 * returns it until store_commit aborts the transaction and clears it. */
int store_failed(const store *s);

/* store_key_committed tells whether the record at key in level was put by a
 * committed transaction: not a tail key appended since the last commit, nor
 * a head key put since (a delayed message come due, whose move a refused
 * commit undoes). Deliveries of such records wait for the commit, so that
 * nobody consumes what was never confirmed and no lease names a key that a
 * refused commit frees. */
int store_key_committed(const store *s, unsigned level, uint64_t key);

/* store_next_id returns a new message id and advances the persisted counter
 * (written at commit). */
uint64_t store_next_id(store *s);

/* ---- space (store_map.c; store_value_bytes in store_msg.c) ---- */

/* store_used_bytes returns the bytes of the map holding data, as of the
 * last store_measure (the high-water mark before the first), and
 * store_map_bytes the map size. */
uint64_t store_used_bytes(store *s);
uint64_t store_map_bytes(store *s);

/* store_file_bytes returns the size of the data file as the last commit left
 * it (the pages ever used; it never shrinks), and store_page_bytes LMDB's
 * page size. */
uint64_t store_file_bytes(store *s);

/* store_file_ahead_bytes returns how far the data file reaches past
 * store_file_bytes: zeros written ahead of LMDB's use (store_extend.c),
 * already on the disk, which LMDB's growth fills before it needs more. */
uint64_t store_file_ahead_bytes(store *s);
size_t store_page_bytes(const store *s);

/* store_txn_added_bytes returns what the open transaction has appended
 * (store_value_bytes each), 0 between transactions. */
uint64_t store_txn_added_bytes(const store *s);

/* store_value_bytes returns what a stored value of value_bytes occupies in
 * the map with its 8-byte key: its node in a leaf page, or, past LMDB's
 * node limit (about half a page), whole overflow pages. */
uint64_t store_value_bytes(const store *s, size_t value_bytes);

/* store_measure recounts the bytes in use: pages ever used minus the pages
 * LMDB has freed for reuse, as of the last commit, plus what the open
 * transaction has appended. Pages the last commit freed count as used: LMDB
 * reuses them only from the commit after the next. O(free list); at any
 * time. store_held_bytes returns those pages' bytes, as last measured. */
int store_measure(store *s);
uint64_t store_held_bytes(const store *s);

/* store_grow sets a larger map size; only between transactions (SL_ESTATE
 * otherwise). */
int store_grow(store *s, uint64_t map_bytes);

/* ---- messages (store_msg.c) ---- */

/* store_append writes rec at the tail of level rec->level and returns its
 * order key in *key. The store owns key assignment: tail keys come from an
 * in-memory counter initialised from the last key at open. Returns SL_OK,
 * rec_size's SL_EINVAL or SL_ETOOBIG, SL_EINVAL for a level past the store's,
 * or the transaction's error. */
int store_append(store *s, const store_rec *rec, uint64_t *key);

/* store_get reads the record at key in level. SL_ENOTFOUND if absent. */
int store_get(store *s, unsigned level, uint64_t key, store_rec *out);

/* store_seek finds the first record of level whose key is >= from. Returns
 * SL_OK with *key and *out set, or SL_ENOTFOUND. */
int store_seek(store *s, unsigned level, uint64_t from, uint64_t *key, store_rec *out);

/* store_del deletes the record at key in level. SL_ENOTFOUND if absent. */
int store_del(store *s, unsigned level, uint64_t key);

/* store_set_attempt rewrites the attempt count of the record at key. */
int store_set_attempt(store *s, unsigned level, uint64_t key, uint32_t attempt);

/* store_bury moves the record at key in level to dead.<level>, with reason
 * (a short text) and died_ns. */
int store_bury(store *s, unsigned level, uint64_t key, const char *reason, uint64_t died_ns);

/* store_quarantine sets the record at key in level, which failed its
 * check, aside: it stays in q.<level>, never deleted, and every read steps
 * over it (store_skip.c); a copy goes to dead.<level> under a new id
 * (*id_out), tag "corrupt", its raw bytes as the body, reason "corrupt:
 * ..." and died_ns (store_corrupt.c). Returns SL_OK, SL_ENOTFOUND (absent,
 * or set aside already), SL_ENOMEM or an LMDB failure. */
int store_quarantine(store *s, unsigned level, uint64_t key, uint64_t died_ns, uint64_t *id_out);

/* store_dead_get reads the dead letter with message id in dead.<level>,
 * reason and died_ns included. SL_ENOTFOUND if absent. */
int store_dead_get(store *s, unsigned level, uint64_t id, store_rec *out);

/* store_dead_count returns the records in dead.<level>. */
uint64_t store_dead_count(store *s, unsigned level);

/* ---- dead letters (store_dead.c) ---- */

/* store_dead_next reads the dead letter of level with the smallest id above
 * after: *id and *out (reason and died_ns included; pointers valid until the
 * next write). A dead letter that fails its check is logged and stepped
 * over, left in place (up to 64 in a row; past them SL_ECORRUPT).
 * SL_ENOTFOUND when there is none. O(log n). */
int store_dead_next(store *s, unsigned level, uint64_t after, uint64_t *id, store_rec *out);

/* store_dead_requeue moves dead letter id of dead.<level> to the tail of
 * q.<to_level>, revived (rec_revive: attempt and expiry 0, the reason
 * dropped), and returns its new order key in *key. SL_ENOTFOUND if absent,
 * SL_EINVAL for a level past the store's, SL_ECORRUPT, or the
 * transaction's error. */
int store_dead_requeue(store *s, unsigned level, uint64_t id, unsigned to_level, uint64_t *key);

/* store_dead_del deletes dead letter id of dead.<level>. SL_ENOTFOUND if
 * absent. */
int store_dead_del(store *s, unsigned level, uint64_t id);

/* ---- waiting messages, for operators (store_waiting.c) ---- */

/* store_drop deletes the record at key in level at once (also in a fair
 * level, where an acknowledgement's delete waits for its batch).
 * SL_ENOTFOUND if absent. */
int store_drop(store *s, unsigned level, uint64_t key);

/* store_move moves the record at key in level to the tail of to_level (of
 * its tag's run there, when to_level is fair), unchanged but for its level,
 * and returns its new order key in *new_key. SL_ENOTFOUND if absent,
 * SL_ECORRUPT, SL_EINVAL for a level past the store's, or the
 * transaction's error. */
int store_move(store *s, unsigned level, uint64_t key, unsigned to_level, uint64_t *new_key);

/* store_delayed_del deletes delayed message id, due at due_ns; its level
 * into *level_out. SL_ENOTFOUND if it is not there. */
int store_delayed_del(store *s, uint64_t due_ns, uint64_t id, unsigned *level_out);

/* store_delay moves the record at key in level to the delayed database, due at
 * due_ns (wall clock). */
int store_delay(store *s, unsigned level, uint64_t key, uint64_t due_ns);

/* store_delayed_first reports the earliest delayed record's due time
 * (SL_ENOTFOUND when none). */
int store_delayed_first(store *s, uint64_t *due_ns);

/* store_delayed_pop moves the earliest delayed record, if due at or before
 * now_ns, to the head of its level (key = first key - 1, or the next tail key
 * when the level is empty): its new order key is *key_out and its level
 * *level_out. SL_ENOTFOUND when nothing is due. */
int store_delayed_pop(store *s, uint64_t now_ns, unsigned *level_out, uint64_t *key_out);

/* store_delayed_set_aside sets the earliest due delayed record, which
 * store_delayed_pop found failing its check (SL_ECORRUPT), aside: it stays
 * in delayed, skipped from now on (store_skip.c), and a copy of its bytes
 * becomes dead letter *id_out of level *dead_level (the level its bytes
 * name, or the first that is not quarantined). *counted is the level
 * store_delayed_counts counted it in (its level byte; PROTO_MAX_LEVELS or
 * more: none). SL_ENOTFOUND when nothing is due (or every level is
 * quarantined), or a write's error. */
int store_delayed_set_aside(store *s, uint64_t now_ns, unsigned *counted, unsigned *dead_level, uint64_t *id_out);

/* store_delayed_counts returns the number of delayed records per level into
 * counts[0..levels). O(delayed); called once at open. */
void store_delayed_counts(store *s, uint64_t *counts);

/* ---- settings and lookups for administration (store_meta.c) ---- */

/* store_meta_put writes an opaque settings blob under key in meta (in the
 * open transaction). Keys "sink", "pool/..." and "level/..." belong to
 * settings.c. */
int store_meta_put(store *s, const char *key, const void *val, size_t len);

/* store_meta_del removes the setting key in the pass's transaction (absent:
 * nothing to do). Returns SL_OK or an LMDB failure (logged). */
int store_meta_del(store *s, const char *key);

/* store_meta_scan calls fn for every meta record whose key starts with
 * prefix, in key order. The pointers are valid only during the call. */
typedef void (*store_meta_fn)(void *ctx, const char *key, size_t key_len, const void *val, size_t len);
int store_meta_scan(store *s, const char *prefix, store_meta_fn fn, void *ctx);

/* store_find looks for message id in q.<level>, scanning from the head at
 * most limit records: O(position). *key is its order key and *rank the
 * number of records before it. SL_ENOTFOUND when absent (or past limit). */
int store_find(store *s, unsigned level, uint64_t id, uint64_t limit, uint64_t *key, uint64_t *rank);

/* store_delayed_find looks for message id among delayed records: O(delayed).
 * *rec (may be NULL) receives its record, pointing into the read
 * transaction (all zero when it fails its check). */
int store_delayed_find(store *s, uint64_t id, unsigned *level, uint64_t *due_ns, store_rec *rec);

/* ---- delayed publishes (store_msg.c), the expiry index (store_ttl.c),
 * idempotency keys (store_idem.c), level sizes (store_meta.c) ---- */

/* store_append_delayed stores rec (with rec->id set) among the delayed
 * records, due at due_ns (wall clock): a publish with a delay. */
int store_append_delayed(store *s, const store_rec *rec, uint64_t due_ns);

/* A message whose time to live has run out, from the expiry index: where
 * is 0..15 (level; loc = order key) or STORE_TTL_DELAYED (loc = due time).
 * The entry may be stale: check the record's id before acting. */
#define STORE_TTL_DELAYED 0xFF
typedef struct store_ttl_item {
    uint64_t expires_ns, id, loc;
    unsigned where;
} store_ttl_item;

/* store_ttl_next takes the earliest expiry-index entry due at now_ns out of
 * the index into *out. SL_ENOTFOUND when none is due. */
int store_ttl_next(store *s, uint64_t now_ns, store_ttl_item *out);

/* store_bury_delayed moves delayed message id (due at due_ns) to its
 * level's dead letters with reason; *level_out is its level. */
int store_bury_delayed(store *s, uint64_t due_ns, uint64_t id, const char *reason, uint64_t died_ns,
                       unsigned *level_out);

/* store_idem_get finds an idempotency key still within its window at now_ns:
 * SL_OK with the id it was first used for, or SL_ENOTFOUND. */
int store_idem_get(store *s, const void *key, size_t len, uint64_t now_ns, uint64_t *id);

/* store_idem_put records key -> id until expires_ns, in the open
 * transaction, so that it commits with the message it names. Keys are 1..255
 * bytes. */
int store_idem_put(store *s, const void *key, size_t len, uint64_t id, uint64_t expires_ns);

/* store_idem_expire forgets at most max keys whose window ended by now_ns;
 * returns how many. */
unsigned store_idem_expire(store *s, uint64_t now_ns, unsigned max);

/* store_level_count returns the records in q.<level>. O(1). */
uint64_t store_level_count(store *s, unsigned level);

/* store_level_bytes returns the bytes of pages q.<level> occupies. O(1). */
uint64_t store_level_bytes(store *s, unsigned level);

/* ---- tags (store_tag.c): interned tag ids and the keys of fair levels ----
 *
 * A level served fair by tag keeps its records under order keys
 * tag_id << STORE_TAG_SHIFT | seq, so each tag's messages are one contiguous
 * run in FIFO order (seq grows per level) and a tag's head is one seek. Tag
 * ids are interned in meta ("tagid/<tag>" -> u32, "tagname/<be32 id>" ->
 * the tag); 0 is the untagged tenant. Such keys stay below 2^63, so they
 * never meet a FIFO level's keys (which start at STORE_KEY_MID); a level
 * changes layout only while it is empty. */
#define STORE_TAG_SHIFT 40
#define STORE_SEQ_MASK ((UINT64_C(1) << STORE_TAG_SHIFT) - 1)
#define STORE_TAG_MAX ((UINT32_C(1) << 23) - 1) /* tag ids 1..this */

/* store_tag_intern returns tag's id in *id, giving it a new one (in the
 * open transaction) when it has none. An empty tag is 0. SL_ENOSPC when
 * every id is taken. */
int store_tag_intern(store *s, const char *tag, size_t len, uint32_t *id);

/* store_tag_find reads tag's id into *id without giving it one (an empty
 * tag is 0). SL_ENOTFOUND when the tag never had one. */
int store_tag_find(store *s, const char *tag, size_t len, uint32_t *id);

/* store_tag_name copies tag id's name to buf (at most cap - 1 bytes, NUL
 * ended). SL_ENOTFOUND for an id never handed out. */
int store_tag_name(store *s, uint32_t id, char *buf, size_t cap);

/* store_append_tagged stores rec at the tail of tag id's run in the fair
 * level rec->level and returns its key. */
int store_append_tagged(store *s, const store_rec *rec, uint32_t id, uint64_t *key);

/* store_tag_span finds the first tag id >= from with records in q.<level>,
 * and the largest key of its run. SL_ENOTFOUND when none. */
int store_tag_span(store *s, unsigned level, uint32_t from, uint32_t *tag, uint64_t *last_key);

/* store_tag_head reads the first record of a tag's run in q.<level> at or
 * after key from (the run is from's tag's): *key and *rec as store_seek,
 * and in *more whether the run goes on after it, from the cursor's next
 * step (the next key is looked at, its record is not read). SL_ENOTFOUND
 * when the run holds nothing at or after from; SL_ECORRUPT with *key set
 * (*more then says nothing). One seek. */
int store_tag_head(store *s, unsigned level, uint64_t from, uint64_t *key, store_rec *rec, int *more);

/* store_gone_flush deletes now the acknowledged records of fair levels that
 * wait for their batched delete (store_gone.c). */
int store_gone_flush(store *s);

/* store_ahead holds the next records of one tag's run, copied out of the
 * store by one seek (store_tag_ahead), for a fair level's takes to serve
 * without a seek each. */
#define STORE_AHEAD_MAX 8
typedef struct store_ahead {
    unsigned n, i;  /* records held; the next one to serve */
    int more;       /* the run goes on after the last one held */
    uint64_t key[STORE_AHEAD_MAX];
    uint32_t off[STORE_AHEAD_MAX + 1];
    unsigned char data[];
} store_ahead;

/* store_tag_ahead copies into a (data of cap bytes) the committed records
 * of from's tag's run at or after from, up to STORE_AHEAD_MAX or cap bytes.
 * SL_OK with a->n == 0 when the first is not committed yet; SL_ENOTFOUND
 * when the run holds nothing at or after from; SL_ETOOBIG when the first
 * alone is larger than cap: a holds nothing, and *key, *rec and *more are
 * that record's, read in place, as store_tag_head gives them (key, rec and
 * more are not touched otherwise). One seek, then steps. */
int store_tag_ahead(store *s, unsigned level, uint64_t from, store_ahead *a, size_t cap, uint64_t *key,
                    store_rec *rec, int *more);

/* store_ahead_rec decodes a's record i (checked as store_decode). */
int store_ahead_rec(store *s, unsigned level, const store_ahead *a, unsigned i, store_rec *out);

/* store_tag_peek finds the first key of from's tag's run at or after from
 * without reading its record. SL_ENOTFOUND when there is none. One seek. */
int store_tag_peek(store *s, unsigned level, uint64_t from, uint64_t *key);

/* store_tag_count counts the keys of q.<level> in [from, below), up to
 * max, into *n, stepping one cursor from one seek (no record is read).
 * O(log n + *n). */
int store_tag_count(store *s, unsigned level, uint64_t from, uint64_t below, uint64_t max, uint64_t *n);

/* store_fair_keys sets level's key counter for a fair (fair != 0, from the
 * largest seq stored, max_seq) or a FIFO layout (an empty level only). */
void store_fair_keys(store *s, unsigned level, int fair, uint64_t max_seq);

/* store_key_committed_fair is store_key_committed for a fair level. */
int store_key_committed_fair(const store *s, unsigned level, uint64_t key);

#endif /* SLUICE_STORE_H */
