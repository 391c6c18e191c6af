/*
 * store_backup.h - a backup of the running store (store_backup.c): a
 * compacted copy of the last committed state, made on a thread of its own
 * while the broker goes on; the copy a high-availability primary sends its
 * standby is made the same way. Apart from store.h, which every user of
 * the store includes, since only the backup command, the loop and the
 * store's own commit paths need it.
 */
#ifndef SLUICE_STORE_BACKUP_H
#define SLUICE_STORE_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* store_backup_start starts copying the last committed state, compacted,
 * into dir/data.mdb (dir exists and is empty: the caller checks) on a
 * thread of its own; make a checkpoint first, so that the last commit
 * holds every confirmed batch. SL_ESTATE while an LMDB commit is out or a
 * copy exists, SL_ENOMEM, SL_EINVAL for a path too long. While it copies
 * (store_copying), no LMDB commit runs: batches go to the log and
 * checkpoints wait; store_commit_held tells the loop that the next commit
 * could only be an LMDB commit (no log, the log half used) and must wait
 * for the copy, and store_commit_start waits for it itself should one come
 * all the same. store_backup_poll reports a finished copy once (1: *rc
 * SL_OK, SL_ENOSPC or SL_EIO, *bytes the copy's size, why the error's
 * text), 0 while it runs or when there is none; store_backup_wait blocks
 * until a running copy ends (its result then waits for store_backup_poll).
 * store_close waits for a copy that runs. */
int store_backup_start(store *s, const char *dir);
int store_copying(const store *s);
int store_commit_held(const store *s);
int store_backup_poll(store *s, int *rc, uint64_t *bytes, char *why, size_t why_len);
void store_backup_wait(store *s);

#endif /* SLUICE_STORE_BACKUP_H */
