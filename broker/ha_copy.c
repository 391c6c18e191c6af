/*
 * ha_copy.c - a primary makes a copy of its store for a standby that
 * cannot resume the stream (too far behind, or diverged).
 *
 * The copy is the backup's (admin/backup.c): a checkpoint, so that every
 * batch made before the request is in LMDB, then LMDB's compacting copy of
 * that commit on a thread of its own, flushed; the loop goes on serving
 * meanwhile (what it holds back while the copy reads is backup.c's and
 * store_backup.c's). It goes into DATA/ha-copy, is opened, and removed
 * from the directory at once: the stream (ha/ha_prim.c) reads the open
 * file as it sends it, and closes it when done. The copy holds meta "repl",
 * the position of the last record in it; the stream keeps every record
 * made from the request on (ha_prim_copy_making), so the standby resumes
 * from there.
 *
 * A copy is made only once Redis records no standby in sync: the standby
 * being copied cannot promote meanwhile. A backup already running (sluice
 * backup) is waited for; one that fails is logged and tried again a moment
 * later (ha_prim_copy_failed). A leftover DATA/ha-copy (a primary stopped
 * while making one) is removed before the next.
 *
 * State: one copy at a time per process, as one backup (backup.c).
 * Costs: a checkpoint and a read of every live page once per copy; nothing
 * per pass but a test.
 */
#include "ha_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup.h"
#include "ha_prim.h"
#include "log.h"

#define COPY_DIR "ha-copy"

static struct {
    int making;
    char dir[PATH_MAX];
} cp;

/* clear removes the copy's directory and its file. */
static void clear(const char *dir)
{
    char f[PATH_MAX + 16];
    snprintf(f, sizeof f, "%s/data.mdb", dir);
    unlink(f);
    rmdir(dir);
}

void ha_copy_tick(bk *b, struct ha_prim *prim, int alone)
{
    char why[PATH_MAX + 256];
    if (!cp.making) {
        if (!alone || !ha_prim_copy_wanted(prim, b->mono_ns))
            return;
        if (snprintf(cp.dir, sizeof cp.dir, "%s/" COPY_DIR, b->cfg.data_dir) >= (int)sizeof cp.dir - 16) {
            log_error("ha", "the data directory's name is too long for a copy in it");
            ha_prim_copy_failed(prim, b->mono_ns);
            return;
        }
        clear(cp.dir);
        int rc = backup_begin(b, cp.dir, why, sizeof why);
        if (rc == SL_ESTATE)
            return; /* a backup runs: after it */
        if (rc != SL_OK) {
            log_error("ha", "cannot make a copy of this store for the standby: %s", why);
            ha_prim_copy_failed(prim, b->mono_ns);
            return;
        }
        ha_prim_copy_making(prim);
        cp.making = 1;
        log_info("ha", "making a copy of this store for the standby in %s", cp.dir);
        return;
    }
    int rc = SL_OK;
    uint64_t bytes = 0;
    int ended = backup_result(cp.dir, &rc, &bytes, why, sizeof why);
    if (ended == 0)
        return;
    cp.making = 0;
    char f[PATH_MAX + 16];
    snprintf(f, sizeof f, "%s/data.mdb", cp.dir);
    int fd = ended == 1 && rc == SL_OK ? open(f, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        close(fd);
        fd = -1;
    }
    if (ended == 1 && rc == SL_OK && fd < 0)
        snprintf(why, sizeof why, "cannot open %s: %s", f, strerror(errno));
    clear(cp.dir); /* (the open file stays readable) */
    if (fd < 0) {
        log_error("ha", "the copy of this store for the standby failed: %s; another is made shortly",
                  ended == 1 ? why : "another backup took its place");
        ha_prim_copy_failed(prim, b->mono_ns);
        return;
    }
    if (ha_prim_copy_send(prim, fd, (uint64_t)st.st_size, b->mono_ns) != SL_OK) {
        close(fd);
        log_info("ha", "the copy of this store is not sent: its standby went away meanwhile");
    }
}
