/*
 * backup.c - sluice backup: a consistent copy of the running broker's
 * store, in a directory on its machine, that another sluiced opens.
 *
 * Three steps, each in the loop's passes, none blocking it:
 *   1. the command (backup_start) checks the directory (absolute; absent,
 *      then made, or empty) and asks for an LMDB checkpoint
 *      (b->checkpoint_wanted): every batch confirmed before the request is
 *      in the open transaction or in LMDB, so the first LMDB commit that
 *      starts after it (one more than the count at the request: none is out
 *      while a command runs) holds them all;
 *   2. once that commit has ended, with none out, backup_tick starts the
 *      copy on its own thread (store_backup_start: mdb_env_copy2 with
 *      MDB_CP_COMPACT in one read transaction). While it copies, batches
 *      are confirmed by log records as usual and checkpoints wait; a batch
 *      that could only go by an LMDB commit (no log, or the log half used)
 *      waits for the copy's end (store_backup.c says why);
 *   3. backup_tick notices the copy's end (a poll per pass, and a wake
 *      every COPY_POLL_NS while one is out) and records the result, which
 *      backup.status reports (the CLI polls it).
 * A copy that has not got its checkpoint within CHECKPOINT_PATIENCE_NS (the
 * disk refused it for want of space, say) fails.
 *
 * The same steps make the copy a standby of a high-availability group is
 * sent when it cannot resume the stream (ha_copy.c: backup_begin, then
 * backup_result), so that there is one copier.
 *
 * One backup at a time, per process (as settings.c, the state is this
 * file's: one broker per process). Costs: nothing per pass but a field
 * test and, while one runs, a poll.
 */
#include "backup.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bk.h"
#include "log.h"
#include "store.h"
#include "store_backup.h"
#include "units.h"

#define COPY_POLL_NS (10 * NS_PER_MS)
#define CHECKPOINT_PATIENCE_NS (60 * NS_PER_S)

enum { NONE, CHECKPOINT, COPYING, DONE, FAILED };
static const char *const state_names[] = {"none", "checkpoint", "copying", "done", "failed"};

static struct {
    int state;
    char path[PATH_MAX];
    uint64_t target;       /* LMDB commits the checkpoint brings the count to */
    uint64_t t0_ns, t1_ns; /* asked, ended (monotonic) */
    uint64_t copy_ns;      /* when the copy started */
    uint64_t held_ns, held_since_ns; /* commits held for the copy (store_commit_held): in all, and since */
    uint64_t bytes;
    char msg[PATH_MAX + 256];
} job;

/* empty_dir tells whether path is a directory holding nothing: 1 yes, 0 it
 * holds something, -1 it cannot be read (errno). */
static int empty_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

int backup_start(bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    char path[PATH_MAX];
    (void)r;
    if (req->path.len == 0 || req->path.ptr[0] != '/' || req->path.len >= sizeof path - 16) {
        snprintf(text, text_len, "backup needs an absolute directory on the broker's machine, at most %d bytes",
                 (int)sizeof path - 17);
        return SL_EINVAL;
    }
    memcpy(path, req->path.ptr, req->path.len);
    path[req->path.len] = '\0';
    return backup_begin(b, path, text, text_len);
}

int backup_begin(bk *b, const char *dir, char *text, size_t text_len)
{
    char path[PATH_MAX];
    struct stat st;
    if (job.state == CHECKPOINT || job.state == COPYING) {
        snprintf(text, text_len, "a backup into %s is running (sluice backup status)", job.path);
        return SL_ESTATE;
    }
    if (strlen(dir) >= sizeof path - 16) {
        snprintf(text, text_len, "a backup's directory has at most %d bytes", (int)sizeof path - 17);
        return SL_EINVAL;
    }
    strcpy(path, dir);
    while (strlen(path) > 1 && path[strlen(path) - 1] == '/')
        path[strlen(path) - 1] = '\0';
    if (stat(path, &st) == 0) {
        int empty = S_ISDIR(st.st_mode) ? empty_dir(path) : 0;
        if (empty != 1) {
            snprintf(text, text_len, "%s exists and is not an empty directory: back up into a new one", path);
            return SL_EINVAL;
        }
    } else if (errno != ENOENT || mkdir(path, 0700) != 0) {
        snprintf(text, text_len, "cannot make %s: %s (its parent must exist, and the broker may write there)",
                 path, strerror(errno));
        return SL_EINVAL;
    }
    store_counts c;
    store_durability_counts(b->st, &c);
    job.state = CHECKPOINT;
    strcpy(job.path, path);
    job.target = c.lmdb_commits + 1;
    job.t0_ns = b->mono_ns;
    job.t1_ns = 0;
    job.bytes = 0;
    snprintf(job.msg, sizeof job.msg, "waiting for a checkpoint");
    b->checkpoint_wanted = 1;
    log_info("backup", "backup into %s: a checkpoint, then the copy", path);
    return SL_OK;
}

int backup_result(const char *dir, int *rc, uint64_t *bytes, char *why, size_t why_len)
{
    if (strcmp(dir, job.path) != 0 || job.state == NONE)
        return -1;
    if (job.state == CHECKPOINT || job.state == COPYING)
        return 0;
    *rc = job.state == DONE ? SL_OK : SL_EIO;
    *bytes = job.bytes;
    snprintf(why, why_len, "%s", job.msg);
    return 1;
}

int backup_status(bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    (void)req, (void)text, (void)text_len;
    const char *state = state_names[job.state];
    uint64_t end = job.t1_ns ? job.t1_ns : b->mono_ns;
    proto_set_str(r, PROTO_F_state, state, strlen(state));
    proto_set_str(r, PROTO_F_path, job.path, strlen(job.path));
    proto_set(r, bytes, job.bytes);
    proto_set(r, elapsed_ms, job.state == NONE ? 0 : (end - job.t0_ns) / NS_PER_MS);
    size_t n = strlen(job.msg);
    proto_set_str(r, PROTO_F_msg, job.msg, n > PROTO_MAX_STR ? proto_utf8_prefix(job.msg, PROTO_MAX_STR) : n);
    return SL_OK;
}

static void end(bk *b, int state)
{
    job.state = state;
    job.t1_ns = b->mono_ns;
    if (state == DONE)
        log_info("backup", "backup into %s done: %llu bytes in %llu ms (the checkpoint %llu ms, the copy %llu ms; "
                 "commits held for the copy %llu ms)", job.path, (unsigned long long)job.bytes,
                 (unsigned long long)((job.t1_ns - job.t0_ns) / NS_PER_MS),
                 (unsigned long long)((job.copy_ns - job.t0_ns) / NS_PER_MS),
                 (unsigned long long)((job.t1_ns - job.copy_ns) / NS_PER_MS),
                 (unsigned long long)(job.held_ns / NS_PER_MS));
    else
        log_error("backup", "backup into %s failed: %s", job.path, job.msg);
}

void backup_tick(bk *b)
{
    if (job.state == CHECKPOINT && !store_committing(b->st)) {
        store_counts c;
        store_durability_counts(b->st, &c);
        if (c.lmdb_commits < job.target) {
            b->checkpoint_wanted = 1; /* until it comes (a refused one is tried again) */
            if (b->mono_ns > job.t0_ns + CHECKPOINT_PATIENCE_NS) {
                snprintf(job.msg, sizeof job.msg, "no checkpoint succeeded within %llu s (see the log)",
                         (unsigned long long)(CHECKPOINT_PATIENCE_NS / NS_PER_S));
                end(b, FAILED);
            }
            return;
        }
        int rc = store_backup_start(b->st, job.path);
        if (rc != SL_OK) {
            snprintf(job.msg, sizeof job.msg, "cannot start the copy: %s", proto_strerror(rc));
            end(b, FAILED);
            return;
        }
        job.state = COPYING;
        job.copy_ns = b->mono_ns;
        job.held_ns = job.held_since_ns = 0;
        snprintf(job.msg, sizeof job.msg, "copying");
    }
    if (job.state != COPYING)
        return;
    int held = store_commit_held(b->st), rc;
    if (held && !job.held_since_ns)
        job.held_since_ns = b->mono_ns;
    if (!held && job.held_since_ns) {
        job.held_ns += b->mono_ns - job.held_since_ns;
        job.held_since_ns = 0;
    }
    char why[256];
    if (store_backup_poll(b->st, &rc, &job.bytes, why, sizeof why)) {
        if (job.held_since_ns)
            job.held_ns += b->mono_ns - job.held_since_ns;
        if (rc == SL_OK)
            snprintf(job.msg, sizeof job.msg, "a consistent copy of the store as of the checkpoint (%llu ms), copied in "
                     "%llu ms, commits held for %llu ms meanwhile: start a broker on it with sluiced --data %s",
                     (unsigned long long)((job.copy_ns - job.t0_ns) / NS_PER_MS),
                     (unsigned long long)((b->mono_ns - job.copy_ns) / NS_PER_MS),
                     (unsigned long long)(job.held_ns / NS_PER_MS), job.path);
        else
            snprintf(job.msg, sizeof job.msg, "%s", why);
        end(b, rc == SL_OK ? DONE : FAILED);
    }
}

uint64_t backup_next_wake(const bk *b)
{
    return job.state == CHECKPOINT || job.state == COPYING ? b->mono_ns + COPY_POLL_NS : UINT64_MAX;
}
