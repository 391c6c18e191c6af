/*
 * ha_recv.c - a standby's copy of its primary's store: received into a
 * directory beside its data, checked, flushed, then swapped in for its
 * store.
 *
 * A standby that cannot resume the stream (FAR) is sent a copy of the
 * primary's store: LMDB's compacting copy of a checkpoint, one data.mdb
 * holding meta "repl", the position to resume from. It is written into
 * DATA.copy (beside the data directory DATA, on the same file system, so
 * that the swap is a rename), with a marker file, copy.partial, that says
 * it is not complete: a copy cut short (the connection lost, either node
 * killed) is only ever a directory with that marker, removed at the next
 * copy's start; the standby's store is not touched until the copy is whole.
 * Each chunk is checked (its offset, its size, its CRC-32C) and the whole
 * (its size and CRC-32C, against COPY_END's); then the file and the
 * directory are flushed, the node's epoch file written there, the marker
 * removed and the directory flushed again: complete.
 *
 * The swap (the store closed): rename(2) with RENAME_EXCHANGE puts DATA.copy
 * at DATA and the old store at DATA.copy in one step, then the old one is
 * renamed DATA.replaced-EPOCH-SEQ-TIME (the position it held) and the
 * parent directory flushed. The old store is kept, never deleted: an
 * operator removes it. Where the exchange is not supported, two renames;
 * a crash between them leaves no DATA (the node starts on an empty store
 * and is sent a copy again) and the old store at DATA.replaced-*.
 * Anything found at DATA.copy without the marker (a complete copy not swapped
 * in, or the old store between the two renames) is renamed
 * DATA.kept-TIME, not deleted.
 *
 * Costs: the copy's bytes written once, read never (the checksum is
 * summed as they come), one flush of the file and two of directories.
 */
#include "ha_recv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "ha_epoch.h"
#include "log.h"
#include "proto.h"

#define MARK "copy.partial"

struct ha_recv {
    char dir[PATH_MAX];
    int fd;
    uint64_t size, got;
    uint32_t sum;
    int complete;
};

/* paths writes DATA (without trailing slashes) and the name beside it with suffix. */
static int beside(const char *data_dir, const char *suffix, char *out, size_t cap)
{
    size_t n = strlen(data_dir);
    while (n > 1 && data_dir[n - 1] == '/')
        n--;
    int w = snprintf(out, cap, "%.*s%s", (int)n, data_dir, suffix);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

static int sync_fd_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err;
}

/* parent_sync flushes the directory holding path. */
static int parent_sync(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    char *slash = strrchr(p, '/');
    if (!slash)
        return sync_fd_path(".");
    if (slash == p)
        slash[1] = '\0';
    else
        *slash = '\0';
    return sync_fd_path(p);
}

/* remove_partial removes dir when it holds a cut-short copy: 1 removed, 0
 * it is not one (kept), -1 it cannot be. */
static int remove_partial(const char *dir)
{
    char f[PATH_MAX + 32];
    snprintf(f, sizeof f, "%s/" MARK, dir);
    if (access(f, F_OK) != 0)
        return 0;
    static const char *const files[] = {"data.mdb", HA_EPOCH_FILE, MARK};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(f, sizeof f, "%s/%s", dir, files[i]);
        if (unlink(f) != 0 && errno != ENOENT)
            return -1;
    }
    return rmdir(dir) == 0 ? 1 : -1;
}

int ha_recv_begin(const char *data_dir, uint64_t size, ha_recv **out)
{
    ha_recv *r = calloc(1, sizeof *r);
    if (!r)
        return SL_ENOMEM;
    r->fd = -1;
    r->size = size;
    char f[PATH_MAX + 32];
    if (beside(data_dir, ".copy", r->dir, sizeof r->dir) != 0) {
        log_error("ha", "the data directory's name is too long for a copy beside it");
        free(r);
        return SL_EINVAL;
    }
    int gone = remove_partial(r->dir);
    if (gone == 0 && access(r->dir, F_OK) == 0) { /* not a cut-short copy: kept aside */
        char kept[PATH_MAX];
        char suffix[64];
        snprintf(suffix, sizeof suffix, ".kept-%lld", (long long)time(NULL));
        if (beside(data_dir, suffix, kept, sizeof kept) != 0 || rename(r->dir, kept) != 0) {
            log_error("ha", "cannot move %s aside to receive a copy: %s", r->dir, strerror(errno));
            free(r);
            return SL_EIO;
        }
        log_warn("ha", "%s was not a copy being received: kept as %s", r->dir, kept);
    } else if (gone < 0) {
        log_error("ha", "cannot remove the cut-short copy in %s: %s", r->dir, strerror(errno));
        free(r);
        return SL_EIO;
    }
    int fd = -1;
    if (mkdir(r->dir, 0750) != 0 || (snprintf(f, sizeof f, "%s/" MARK, r->dir),
                                     fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) < 0) {
        log_error("ha", "cannot make %s to receive a copy: %s", r->dir, strerror(errno));
        free(r);
        return SL_EIO;
    }
    close(fd);
    snprintf(f, sizeof f, "%s/data.mdb", r->dir);
    if ((r->fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) < 0) {
        log_error("ha", "cannot create %s: %s", f, strerror(errno));
        ha_recv_free(&r);
        return SL_EIO;
    }
    *out = r;
    return SL_OK;
}

int ha_recv_write(ha_recv *r, uint64_t off, const unsigned char *p, size_t len, uint32_t sum)
{
    if (r->complete || off != r->got || len > r->size - r->got || crc32c_extend(0, p, len) != sum) {
        log_error("ha", "a chunk of the copy is bad (at byte %llu, %zu bytes; expected byte %llu of %llu): the "
                  "copy is discarded", (unsigned long long)off, len, (unsigned long long)r->got,
                  (unsigned long long)r->size);
        return SL_ECORRUPT;
    }
    for (size_t done = 0; done < len;) {
        ssize_t w = pwrite(r->fd, p + done, len - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            log_error("ha", "cannot write the copy in %s: %s; it is discarded", r->dir, strerror(e));
            return e == ENOSPC ? SL_ENOSPC : SL_EIO;
        }
        done += (size_t)w;
    }
    r->sum = crc32c_extend(r->sum, p, len);
    r->got += len;
    return SL_OK;
}

int ha_recv_end(ha_recv *r, uint64_t size, uint32_t sum, uint64_t epoch)
{
    char f[PATH_MAX + 32];
    if (size != r->size || r->got != r->size || sum != r->sum) {
        log_error("ha", "the copy does not check: %llu bytes of %llu (announced %llu), checksum %08x, the "
                  "primary's %08x; it is discarded", (unsigned long long)r->got, (unsigned long long)size,
                  (unsigned long long)r->size, (unsigned)r->sum, (unsigned)sum);
        return SL_ECORRUPT;
    }
    int err = fsync(r->fd) == 0 ? 0 : errno;
    if (!err)
        err = sync_fd_path(r->dir);
    if (!err && ha_epoch_save(r->dir, epoch) != SL_OK)
        err = EIO;
    snprintf(f, sizeof f, "%s/" MARK, r->dir);
    if (!err && unlink(f) != 0)
        err = errno;
    if (!err)
        err = sync_fd_path(r->dir);
    if (err) {
        log_error("ha", "cannot flush the copy in %s: %s; it is discarded", r->dir, strerror(err));
        return SL_EIO;
    }
    r->complete = 1;
    return SL_OK;
}

uint64_t ha_recv_got(const ha_recv *r)
{
    return r->got;
}

uint32_t ha_recv_sum(const ha_recv *r)
{
    return r->sum;
}

void ha_recv_free(ha_recv **rp)
{
    ha_recv *r = rp ? *rp : NULL;
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    if (!r->complete && remove_partial(r->dir) < 0)
        log_warn("ha", "cannot remove the cut-short copy in %s: %s (the next copy tries again)", r->dir,
                 strerror(errno));
    free(r);
    *rp = NULL;
}

int ha_recv_swap(const char *data_dir, uint64_t old_epoch, uint64_t old_seq, char *aside, size_t aside_len)
{
    char copy[PATH_MAX], data[PATH_MAX], mark[PATH_MAX + 32], suffix[96];
    snprintf(suffix, sizeof suffix, ".replaced-%llu-%llu-%lld", (unsigned long long)old_epoch,
             (unsigned long long)old_seq, (long long)time(NULL));
    if (beside(data_dir, ".copy", copy, sizeof copy) != 0 || beside(data_dir, "", data, sizeof data) != 0 ||
        beside(data_dir, suffix, aside, aside_len) != 0)
        return SL_EINVAL;
    snprintf(mark, sizeof mark, "%s/" MARK, copy);
    char file[PATH_MAX + 16];
    snprintf(file, sizeof file, "%s/data.mdb", copy);
    if (access(file, F_OK) != 0 || access(mark, F_OK) == 0)
        return SL_ENOTFOUND;
    if (renameat2(AT_FDCWD, copy, AT_FDCWD, data, RENAME_EXCHANGE) == 0) {
        if (rename(copy, aside) != 0) {
            log_error("ha", "the copy is in place at %s, but the old store stays at %s: %s", data, copy,
                      strerror(errno));
            snprintf(aside, aside_len, "%s", copy);
        }
    } else if (rename(data, aside) != 0 || rename(copy, data) != 0) {
        log_error("ha", "cannot swap the copy %s in for %s: %s", copy, data, strerror(errno));
        return SL_EIO;
    }
    int err = parent_sync(data);
    if (err)
        log_warn("ha", "cannot flush the directory holding %s: %s", data, strerror(err));
    return SL_OK;
}
