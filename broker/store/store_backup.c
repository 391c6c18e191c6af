/*
 * store_backup.c - a consistent copy of the running store, made on a
 * thread of its own (sluice backup).
 *
 * The copy is LMDB's own: mdb_env_copy2 with MDB_CP_COMPACT walks the
 * last committed snapshot in one read transaction and writes its live
 * pages, renumbered, into DIR/data.mdb, which another sluiced opens as its
 * data directory. The caller makes a checkpoint first (admin/backup.c),
 * so that the snapshot holds every batch confirmed before the request;
 * the copy then needs no log. The file and the directory are flushed
 * before the copy counts as done.
 *
 * What it holds. The environment runs with MDB_NOLOCK (store_writer.c):
 * LMDB keeps no reader table, so nothing tells a write transaction that
 * the copy still reads the pages a later commit freed. A write transaction
 * with id n reuses only pages freed by commits before n - 1, so the loop's
 * open transaction (the one after the snapshot) may write, and spill, at
 * will; but no LMDB commit may happen while the copy reads: its pages
 * could be rewritten by the transaction after it, and its meta page could
 * be read half written by the copy's begin. So while copying, store_commit_
 * start writes batches as log records only and postpones checkpoints (due
 * by time, by the log's fill, or wanted for the map's growth: store_grow
 * refuses meanwhile). A commit that can only be an LMDB commit (no log, the
 * log half used, a batch larger than half the log) is held:
 * store_commit_held tells the loop, which leaves the batch growing (its
 * confirmations wait) until the copy ends; one that gets there all the
 * same (a record that did not fit) waits for the copy on the loop's thread.
 *
 * Costs: a thread for the copy's length, which reads every live page once
 * and writes it once; nothing on the loop but a poll per pass.
 */
#include "store_backup.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"
#include "store_wal_int.h"

struct store_copy {
    pthread_t th;
    MDB_env *env;
    char dir[PATH_MAX];
    atomic_int done;  /* set by the thread as its last act */
    int joined;       /* the thread is joined: the result waits for store_backup_poll */
    int rc;           /* SL_OK, or the error, once done */
    char why[256];    /* the error's text */
    uint64_t bytes;
};

/* sync_path flushes path (a file, made private as the store's own file
 * is (0640: it holds message bodies), or a directory). Returns 0 or errno. */
static int sync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = !dir && fchmod(fd, 0640) != 0 ? errno : fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err;
}

static void *copy_main(void *arg)
{
    struct store_copy *c = arg;
    char file[PATH_MAX + 16];
    struct stat st;
    int rc = mdb_env_copy2(c->env, c->dir, MDB_CP_COMPACT);
    snprintf(file, sizeof file, "%s/data.mdb", c->dir);
    if (rc != MDB_SUCCESS) {
        snprintf(c->why, sizeof c->why, "the copy failed: %s", mdb_strerror(rc));
        c->rc = rc == ENOSPC || rc == MDB_MAP_FULL ? SL_ENOSPC : SL_EIO;
    } else if ((rc = sync_path(file, 0)) != 0 || (rc = sync_path(c->dir, 1)) != 0) {
        snprintf(c->why, sizeof c->why, "flushing the copy failed: %s", strerror(rc));
        c->rc = SL_EIO;
    } else {
        c->rc = SL_OK;
        c->bytes = stat(file, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    atomic_store(&c->done, 1);
    return NULL;
}

int store_backup_start(store *s, const char *dir)
{
    if (s->copy || s->frozen)
        return SL_ESTATE; /* one at a time, and never while an LMDB commit is out */
    if (strlen(dir) >= PATH_MAX)
        return SL_EINVAL;
    struct store_copy *c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    c->env = s->env;
    strcpy(c->dir, dir);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to the loop's thread */
    int made = pthread_create(&c->th, NULL, copy_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (made != 0) {
        free(c);
        return SL_ENOMEM;
    }
    s->copy = c;
    return SL_OK;
}

int store_copying(const store *s)
{
    return s->copy && !s->copy->joined;
}

void store_backup_wait(store *s)
{
    if (store_copying(s)) {
        pthread_join(s->copy->th, NULL);
        s->copy->joined = 1;
    }
}

int store_backup_poll(store *s, int *rc, uint64_t *bytes, char *why, size_t why_len)
{
    struct store_copy *c = s->copy;
    if (!c || (!c->joined && !atomic_load(&c->done)))
        return 0;
    store_backup_wait(s);
    *rc = c->rc;
    *bytes = c->bytes;
    snprintf(why, why_len, "%s", c->why);
    free(c);
    s->copy = NULL;
    return 1;
}

int store_commit_held(const store *s)
{
    if (!store_copying(s) || s->frozen || s->logging)
        return 0;
    return !s->wal || s->wal_nomem || s->wal->used * 2 >= s->wal->ring;
}

void store_backup_close(store *s)
{
    int rc;
    uint64_t bytes;
    char why[256];
    if (store_copying(s))
        log_info("store", "waiting for the backup copy to end before closing");
    store_backup_wait(s);
    if (store_backup_poll(s, &rc, &bytes, why, sizeof why) && rc != SL_OK)
        log_warn("store", "the backup copy failed: %s", why);
}
