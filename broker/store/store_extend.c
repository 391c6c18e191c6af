/*
 * store_extend.c - keeps LMDB's data file extended by written zeros a chunk
 * ahead of its last used page, so that a commit's fdatasync has only data
 * to flush.
 *
 * Why. LMDB writes a commit's new pages past the end of data.mdb when the
 * free list cannot hold them: the file grows, and the commit's fdatasync
 * must then also make the new size and the new blocks durable (on ext4 a
 * journal commit: on the test machine's disk an appending 4 KiB write plus
 * fdatasync costs about 1.8 times an overwrite of a written block). A batch
 * of about 100 messages appends pages on every commit. Writing zeros over
 * the next chunk beforehand, and syncing them once, turns those commits'
 * writes into overwrites of allocated, written blocks: broker/DESIGN.md,
 * "The data file extended ahead", has the numbers. Zeros are written, not fallocate'd: an
 * fallocate'd range is "unwritten" on ext4 and its first write is a
 * metadata change again.
 *
 * What it owns: its own write-only descriptor of data.mdb (a separate open
 * file, so that a write-back error stays visible to LMDB's descriptor as
 * well) and the plan of the next chunk. It never reads or writes a page
 * LMDB uses: it writes only at or past the end of the file and past the
 * last page of the newest commit (LMDB 0.9 never gives the file's tail
 * back, so both meta pages point below it).
 *
 * When. On the writer thread only (store_writer.c), between commits:
 * store_extend_plan and store_extend_run right after a successful commit,
 * before the writer posts its result: the loop still waits for it (so
 * mdb_env_info cannot race a map resize, and no write transaction of the
 * loop is open that could spill pages into the range being zeroed: LMDB
 * writes a transaction's dirty pages to the file once it holds about 128K),
 * and nothing else writes the file meanwhile. That commit's confirmations
 * wait for the chunk, once per chunk (8 MiB of zeros and their flush took
 * about 40 ms on the test machine's disk).
 *
 * Sizes. A chunk is an eighth of the used file, at least
 * STORE_EXTEND_MIN_BYTES and at most STORE_EXTEND_MAX_BYTES, and never
 * reaches past the map size; the next one is planned when less than half a
 * chunk of zeros is left. A young broker writes 1 MiB once; a busy one an
 * 8 MiB chunk per 8 MiB of data.
 *
 * Power loss. The chunk is durable (fdatasync) before LMDB writes into it;
 * a loss during a chunk leaves zeros or a shorter file, both past LMDB's
 * last page, which LMDB ignores. The power-loss shim tracks this descriptor
 * like LMDB's (its path ends in data.mdb).
 *
 * Costs: per commit one mdb_env_info and one fstat; per chunk one pwritev
 * of zeros (the bytes are written twice: zeros, then data) and one flush.
 * The file on disk is up to a chunk and a half larger than LMDB's last page
 * (store_file_bytes reports LMDB's figure).
 */
#include "store_extend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"

#define ZERO_BYTES ((size_t)1 << 20) /* one iovec's worth; a chunk is a few of them */

static unsigned char zeros[ZERO_BYTES]; /* never written: the source of every chunk */

_Static_assert(STORE_EXTEND_MAX_BYTES / (off_t)ZERO_BYTES <= IOV_MAX, "a chunk must fit one pwritev");

/* give_up turns the extender off for the life of the process. */
static void give_up(store_extend *x)
{
    if (x->fd >= 0)
        close(x->fd);
    x->fd = -1;
    x->off = 1;
    x->to = 0;
}

/* extend_open opens data.mdb in the environment's directory, write-only. */
static int extend_open(store_extend *x, MDB_env *env)
{
    const char *dir = NULL;
    char path[PATH_MAX];
    x->opened = 1;
    x->fd = -1;
    if (mdb_env_get_path(env, &dir) != MDB_SUCCESS || !dir ||
        snprintf(path, sizeof path, "%s/data.mdb", dir) >= (int)sizeof path) {
        log_warn("store", "cannot name the data file to keep it extended: LMDB extends it itself");
        x->off = 1;
        return -1;
    }
    if ((x->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
        log_warn("store", "cannot open %s to keep it extended (%s): LMDB extends it itself", path,
                 strerror(errno));
        x->off = 1;
        return -1;
    }
    return 0;
}

int store_extend_plan(store_extend *x, MDB_env *env)
{
    MDB_envinfo info;
    MDB_stat st;
    struct stat fst;
    x->to = 0;
    if (x->off || (!x->opened && extend_open(x, env) != 0))
        return 0;
    if (mdb_env_info(env, &info) != MDB_SUCCESS || mdb_env_stat(env, &st) != MDB_SUCCESS ||
        fstat(x->fd, &fst) != 0) {
        log_warn("store", "cannot size the data file to keep it extended: LMDB extends it itself");
        give_up(x);
        return 0;
    }
    off_t page = (off_t)st.ms_psize;
    off_t used = ((off_t)info.me_last_pgno + 1) * page;
    off_t map = (off_t)info.me_mapsize / page * page;
    off_t chunk = used / 8 / page * page;
    if (chunk < STORE_EXTEND_MIN_BYTES)
        chunk = STORE_EXTEND_MIN_BYTES;
    if (chunk > STORE_EXTEND_MAX_BYTES)
        chunk = STORE_EXTEND_MAX_BYTES;
    off_t end = fst.st_size > used ? fst.st_size : used;
    if (used < x->wait_used || end - used >= chunk / 2 || end >= map)
        return 0;
    x->from = end;
    x->to = end + chunk < map ? end + chunk : map;
    x->wait_used = 0;
    return 1;
}

void store_extend_run(store_extend *x)
{
    struct iovec iov[STORE_EXTEND_MAX_BYTES / (off_t)ZERO_BYTES + 1];
    off_t at = x->from;
    if (x->off || x->to <= at)
        return;
    while (at < x->to) {
        int n = 0;
        for (off_t left = x->to - at; left > 0 && n < (int)(sizeof iov / sizeof iov[0]); n++) {
            size_t len = (size_t)left < ZERO_BYTES ? (size_t)left : ZERO_BYTES;
            iov[n] = (struct iovec){.iov_base = zeros, .iov_len = len};
            left -= (off_t)len;
        }
        ssize_t done = pwritev(x->fd, iov, n, at);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            if (done < 0 && (errno == ENOSPC || errno == EDQUOT)) {
                /* no room now: LMDB's own writes will tell; try again one chunk of data later */
                log_warn("store", "no space to extend the data file past %" PRId64 " MiB: trying again after "
                         "%" PRId64 " MiB more data", (int64_t)(at >> 20), (int64_t)((x->to - x->from) >> 20));
                x->wait_used = x->to;
                x->to = 0;
                return;
            }
            log_error("store", "cannot extend the data file (%s): LMDB extends it itself from now on",
                      done < 0 ? strerror(errno) : "nothing written");
            give_up(x);
            return;
        }
        at += done;
    }
    while (fdatasync(x->fd) != 0) {
        if (errno == EINTR)
            continue;
        log_error("store", "cannot sync the data file's extension (%s): LMDB extends it itself from now on",
                  strerror(errno));
        give_up(x);
        return;
    }
    x->to = 0;
}

void store_extend_close(store_extend *x)
{
    if (x->opened && x->fd >= 0)
        close(x->fd);
    x->fd = -1;
    x->opened = 0;
    x->off = 0;
    x->to = 0;
}
