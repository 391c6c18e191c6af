/*
 * backup.h - sluice backup: the admin commands backup and backup.status,
 * and the timer that drives a backup (a checkpoint, then the copy).
 */
#ifndef SLUICE_BACKUP_H
#define SLUICE_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct bk;

/* backup_start runs admin command backup: req's path (absolute, on the
 * broker's machine) must not exist (it is made, mode 0700) or be an empty
 * directory. It asks for a checkpoint and returns; the copy follows
 * (backup_tick). SL_ESTATE while a backup runs, SL_EINVAL for a bad path,
 * with a sentence in text (text_len bytes). */
int backup_start(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);

/* backup_begin starts a backup into dir (absolute; absent, then made, or
 * an empty directory): a checkpoint, then the copy (backup_tick). SL_OK;
 * SL_ESTATE while a backup runs; SL_EINVAL (the directory), with a sentence
 * in text. */
int backup_begin(struct bk *b, const char *dir, char *text, size_t text_len);

/* backup_result tells how the backup into dir went: 1 ended (*rc SL_OK, or
 * SL_EIO with its reason in why; *bytes the copy's size), 0 still running,
 * -1 the last backup was not into dir. */
int backup_result(const char *dir, int *rc, uint64_t *bytes, char *why, size_t why_len);

/* backup_status runs backup.status: the last backup's state, path, bytes,
 * elapsed time and message into r. Returns SL_OK. */
int backup_status(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);

/* backup_tick moves a backup on: starts the copy once its checkpoint has
 * ended, and notes the copy's end. Called by cron every pass. */
void backup_tick(struct bk *b);

/* backup_next_wake returns when backup_tick wants to run again (every
 * 10 ms while a backup runs), or UINT64_MAX. */
uint64_t backup_next_wake(const struct bk *b);

#endif /* SLUICE_BACKUP_H */
