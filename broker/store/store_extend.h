/*
 * store_extend.h - keeping LMDB's data file extended by written zeros ahead
 * of its last used page, on the writer thread (store_extend.c). Included by
 * store_writer.c only.
 */
#ifndef SLUICE_STORE_EXTEND_H
#define SLUICE_STORE_EXTEND_H

#include <lmdb.h>
#include <stdint.h>
#include <sys/types.h>

#define STORE_EXTEND_MIN_BYTES ((off_t)1 << 20) /* the smallest chunk (a young data file) */
#define STORE_EXTEND_MAX_BYTES ((off_t)8 << 20) /* the largest chunk: one chunk delays one commit */

/* The extender's state; zeroed is "not opened yet". Owned by the writer
 * thread: no other thread reads or writes it. */
typedef struct store_extend {
    int fd;          /* data.mdb, write-only, our own descriptor; -1 when off */
    int off;         /* given up (a failed open, write or sync: logged once) */
    int opened;      /* store_extend_plan has run once */
    off_t from;      /* the planned chunk: [from, to); to == 0 when none */
    off_t to;
    off_t wait_used; /* after a refusal (no space): try again when used passes this */
} store_extend;

/* store_extend_plan decides, right after a successful commit and before the
 * loop hears of it (so that nothing else reads or remaps the environment),
 * whether the data file's zeros run out soon: it reads LMDB's last used
 * page and the map size (mdb_env_info) and the file's size (fstat), and
 * plans at most one chunk. The first call opens the extender's own
 * descriptor of data.mdb. Returns 1 when a chunk is planned (call
 * store_extend_run), 0 otherwise. Never fails: a failure is logged once and
 * turns the extender off. */
int store_extend_plan(store_extend *x, MDB_env *env);

/* store_extend_run writes the planned chunk's zeros with one pwritev and
 * makes them durable with one fdatasync. It must run while nothing writes
 * to the data file: on the writer thread, before it takes the next commit,
 * with the loop kept from committing itself (store_writer.c). ENOSPC from
 * the write is logged once and retried only after the data grew by another
 * chunk; any other failure is logged and turns the extender off. LMDB then
 * simply extends the file itself, as without the extender. */
void store_extend_run(store_extend *x);

/* store_extend_close closes the descriptor (store_writer_close). */
void store_extend_close(store_extend *x);

#endif /* SLUICE_STORE_EXTEND_H */
