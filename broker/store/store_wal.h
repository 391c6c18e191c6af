/*
 * store_wal.h - the write-ahead log (store_wal.c), for the store's own files.
 *
 * A batch is confirmed once one record holding its changes is durable in
 * the log (one flush); LMDB keeps those changes in its open transaction and
 * commits them later, at a checkpoint, which is what lets the log's space
 * be used again. See store_wal.c for the file, the record and the rules.
 */
#ifndef SLUICE_STORE_WAL_H
#define SLUICE_STORE_WAL_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store store;
typedef struct store_wal store_wal;

#define STORE_WAL_FILE "wal.log"

/* store_wal_open opens the log of the data directory dir and replays into
 * the open transaction every record past the checkpoint that meta "wal"
 * names (a crash's confirmed batches); ring_bytes sizes a new log (0: no log
 * from now on, after replaying any left). buffered (--wal-buffered): write
 * records through the page cache and fdatasync, never O_DIRECT. Sets s->wal
 * (NULL when off).
 * Returns SL_OK, SL_ECORRUPT (a log of another data directory), SL_EIO or
 * SL_ENOMEM, logged. */
int store_wal_open(store *s, const char *dir, uint64_t ring_bytes, int buffered);

/* store_wal_close frees the log (store_close); the file stays. */
void store_wal_close(store *s);

/* store_wal_touch notes that the open batch put (put 1) or deleted (put 0)
 * key in dbi (an mdb wrapper calls it after each); the batch's record will
 * hold the key's value as the transaction then has it, or its absence.
 * put STORE_WAL_GONE notes a delete the transaction does later
 * (store_gone.c): a note of its own, never merged with one beside it, so
 * the record says "deleted" although the key is still there at sealing. */
#define STORE_WAL_GONE 2
void store_wal_touch(store *s, MDB_dbi dbi, const void *key, size_t key_bytes, int put);

/* store_wal_forget drops the open batch's notes (its transaction is gone). */
void store_wal_forget(store *s);

/* store_wal_seal builds the open batch's record (reads each noted key's
 * value in the transaction) into the buffer the writer thread writes, with
 * the next sequence number. Returns SL_OK, or SL_EFULL when it does not fit
 * in the log's free space (the caller checkpoints instead: an LMDB commit
 * carries it), SL_ENOMEM, or the transaction's error. */
int store_wal_seal(store *s);

/* store_wal_build is store_wal_seal's first half: the open batch's record
 * (header and entries, checksummed, numbered with the next sequence number)
 * built into the log's buffer, the notes consumed. whole: build it however
 * large (for the replication stream), else SL_EFULL past half the ring.
 * store_wal_record then shows its bytes. Returns SL_OK, SL_EFULL, SL_ENOMEM
 * (a note was lost: the batch cannot be a record) or the transaction's error. */
int store_wal_build(store *s, int whole);

/* store_wal_place is store_wal_seal's second half: the built record given
 * its place in the ring. SL_OK, SL_EFULL (no room: a checkpoint carries the
 * batch), SL_ENOMEM, SL_ESTATE (nothing built). */
int store_wal_place(store *s);

/* store_wal_record shows the record built last (unpadded): its bytes stay
 * valid until the next build or seal. */
void store_wal_record(const store *s, const unsigned char **p, size_t *len);

/* store_wal_apply checks a record's header and checksum and puts its
 * entries into the open transaction (replay's code). note: also note each
 * key, so that the batch is logged here in turn (a standby applying its
 * primary's records). SL_OK, SL_ECORRUPT (a bad record), or a store error. */
int store_wal_apply(store *s, const unsigned char *p, size_t len, int note);

/* store_wal_write writes the sealed record and fdatasyncs the log: on the
 * writer thread. Returns 0 or an errno value. */
int store_wal_write(store_wal *w);

/* store_wal_void makes the record that failed to write unreadable (zeros
 * over its header, flushed), so that a refused batch never replays: 0 or an
 * errno value (then the broker must stop). */
int store_wal_void(store *s);

/* store_wal_written ends a store_wal_write on the loop: with ok, the record
 * is durable and its space used until a checkpoint. */
void store_wal_written(store *s, int ok);

/* store_wal_held tells whether the open transaction holds logged changes
 * that no checkpoint has committed yet. */
int store_wal_held(const store *s);

/* store_wal_due tells whether a checkpoint should be made now: the log
 * holds batches and is half used, or interval_ns passed since the last
 * checkpoint, or one is wanted (the map must grow); never before the
 * back-off that follows a failed one. */
int store_wal_due(const store *s, uint64_t now_ns, uint64_t interval_ns, int wanted);

/* store_wal_stuck tells whether the log is half used and its last
 * checkpoint failed: admission then refuses publishes (room.c) rather than
 * have each batch try a checkpoint that fails. */
int store_wal_stuck(const store *s);

/* store_wal_due_at returns when store_wal_due becomes true by time alone
 * (UINT64_MAX when nothing is held). */
uint64_t store_wal_due_at(const store *s, uint64_t interval_ns, int wanted);

/* store_wal_ckpt_put writes meta "wal" (where replay would start after this
 * commit) into the open transaction, right before a checkpoint's commit. */
int store_wal_ckpt_put(store *s);

/* store_wal_ckpt_done ends a checkpoint's commit: with ok, every record so
 * far is in LMDB and the whole log is free again. */
void store_wal_ckpt_done(store *s, int ok, uint64_t now_ns);

/* store_wal_reapply puts the logged changes no checkpoint has committed back
 * into a new transaction, after the open one was lost (a failed commit, a
 * poisoned transaction): they are confirmed, and only the log holds them.
 * Returns SL_OK or an error (the broker must stop: restart replays them). */
int store_wal_reapply(store *s);

/* store_wal_stats reports records written and bytes, for stats. */
void store_wal_stats(const store *s, uint64_t *records, uint64_t *bytes, uint64_t *checkpoints);

#endif /* SLUICE_STORE_WAL_H */
