/*
 * store_wal_file.c - the write-ahead log's file (see store_wal.c for what
 * the log is for and what a record holds).
 *
 * The file: a 4 KiB header (magic, version, a random file id, the ring's
 * size; CRC-32C) and then a ring of records, written with zeros when the
 * file is made. A record is a 32-byte header (magic, CRC-32C of everything
 * after the CRC, the file id, a sequence number, its length, its entry
 * count) and entries (op put or delete, the database's name, the key, the
 * value), padded to the next 4 KiB so that no write ever touches a page of
 * an older record: a torn write can only tear the record being written,
 * which was never confirmed. A record that does not fit before the ring's
 * end goes to its start.
 *
 * Replay: meta "wal" (committed with each checkpoint) names the file id,
 * the next sequence number and the place of the first record no checkpoint
 * covers. At open, records are read from there while each is valid and
 * carries the next number (a record that is not tries the ring's start
 * once: the writer wrapped); they are applied in one transaction, which
 * the open commits, with meta "wal" naming the ring's start. A record
 * written but never confirmed (its flush did not finish) may be replayed:
 * at-least-once, as an LMDB commit that reached the disk unconfirmed.
 *
 * Opening: meta "wal" says which file the replay reads (its random id);
 * a file of another id, or missing after an unclean stop, is named in the
 * broker's log and a new one made once the replay is committed (made as
 * wal.log.new, synced, renamed, the directory synced, so a crash never
 * leaves half a file under the name). A log that cannot be made (no room
 * for --wal-mb) is reported and the broker runs without it. --wal-mb 0
 * replays what a log holds, then removes it. The file is flocked while open
 * (a second process is refused, as for data.mdb), and a replay that would
 * write a quarantined level's trees (store_check.c) refuses the open: only
 * salvage reads such a log.
 *
 * The record format here is the log's own (WAL_VERSION), independent of
 * STORE_FORMAT: an entry carries a key's value as the store holds it (a
 * record, a sealed meta value) in whatever format the store writes.
 *
 * Costs: replay reads at most the ring and applies each record's entries
 * (a put or a delete each); making a log writes its size in zeros once.
 */
#include "store_wal_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "grow.h"
#include "log.h"
#include "store_int.h"

#define ZERO_CHUNK ((size_t)1 << 20)

/* ---- the file ---- */

static void header_fill(unsigned char h[WAL_PAGE], uint64_t file_id, uint64_t ring)
{
    memset(h, 0, WAL_PAGE);
    memcpy(h, WAL_MAGIC, 8);
    put_le32(h + 8, WAL_VERSION);
    put_le64(h + 16, file_id);
    put_le64(h + 24, ring);
    put_le32(h + 12, crc32c_value(h + 16, 16));
}

/* file_make writes a new log of ring bytes at path (through path.new and a
 * rename, so that a crash never leaves half a file under the name), synced
 * with its directory. Returns 0 or an errno value. */
static int file_make(const char *dir, const char *path, uint64_t file_id, uint64_t ring)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return errno;
    unsigned char *zero = calloc(1, ZERO_CHUNK);
    int e = zero ? 0 : ENOMEM;
    if (!e) {
        header_fill(zero, file_id, ring);
        e = store_wal_pwrite(fd, zero, WAL_PAGE, 0);
        memset(zero, 0, WAL_PAGE);
    }
    for (uint64_t off = WAL_START; !e && off < WAL_START + ring; off += ZERO_CHUNK) {
        uint64_t n = WAL_START + ring - off;
        e = store_wal_pwrite(fd, zero, n < ZERO_CHUNK ? (size_t)n : ZERO_CHUNK, off);
    }
    free(zero);
    if (!e && fsync(fd) != 0)
        e = errno;
    close(fd);
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e) {
        unlink(tmp);
        return e;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0)
            e = errno;
        close(dfd);
    }
    return e;
}

/* file_open opens an existing log and reads its header: 0, ENOENT, or
 * EINVAL for a header that is not a log's (logged by the caller). */
static int file_open(store_wal *w)
{
    unsigned char h[WAL_PAGE];
    struct stat st;
    if (w->dfd >= 0) /* the file before this one's */
        close(w->dfd);
    w->dfd = -1;
    w->direct_tried = w->buffered; /* (so never tried) */
    w->fd = open(w->path, O_RDWR | O_CLOEXEC);
    if (w->fd < 0)
        return errno;
    if (flock(w->fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) { /* another broker writes it */
        close(w->fd);
        w->fd = -1;
        return EWOULDBLOCK;
    }
    if (fstat(w->fd, &st) != 0 || store_wal_pread(w->fd, h, WAL_PAGE, 0) != 0 || memcmp(h, WAL_MAGIC, 8) != 0 ||
        get_le32(h + 8) != WAL_VERSION || get_le32(h + 12) != crc32c_value(h + 16, 16) ||
        get_le64(h + 24) < 4 * WAL_PAGE || (uint64_t)st.st_size < WAL_START + get_le64(h + 24)) {
        close(w->fd);
        w->fd = -1;
        return EINVAL;
    }
    w->file_id = get_le64(h + 16);
    w->ring = get_le64(h + 24);
    return 0;
}

/* ---- replay ---- */

/* db_named finds (or opens, creating it) the database called name. */
static int db_named(store *s, const char *name, MDB_dbi *dbi)
{
    for (MDB_dbi i = 0; i < sizeof s->db / sizeof s->db[0]; i++)
        if (s->db[i].name[0] && strcmp(s->db[i].name, name) == 0) {
            *dbi = i;
            return SL_OK;
        }
    return store_db_open_named(s, name, dbi);
}

/* apply puts one record's entries into the open transaction. */
static int apply(store *s, const unsigned char *p, size_t len, uint32_t n, int note)
{
    size_t off = REC_HDR;
    for (uint32_t i = 0; i < n; i++) {
        if (off + ENT_HDR > len)
            return SL_ECORRUPT;
        const unsigned char *e = p + off;
        size_t nlen = e[1], klen = (size_t)e[2] | (size_t)e[3] << 8, vlen = get_le32(e + 4);
        if (nlen == 0 || nlen >= sizeof s->db[0].name || off + ENT_HDR + nlen + klen + vlen > len ||
            (e[0] != OP_PUT && e[0] != OP_DEL))
            return SL_ECORRUPT;
        char name[sizeof s->db[0].name];
        memcpy(name, e + ENT_HDR, nlen);
        name[nlen] = '\0';
        MDB_dbi dbi;
        int err = db_named(s, name, &dbi);
        if (err != SL_OK)
            return err;
        if (s->db[dbi].level >= 0 && store_level_quarantined(s, (unsigned)s->db[dbi].level)) {
            /* confirmed batches for a tree that failed its checks (store_check.c): LMDB must not write it */
            log_error("store", "the log holds confirmed changes to %s, whose level is quarantined: the broker does "
                      "not start; `sluice salvage` rebuilds the store from the data file and the log", name);
            return SL_ECORRUPT;
        }
        MDB_val k = {.mv_size = klen, .mv_data = (void *)(e + ENT_HDR + nlen)};
        MDB_val v = {.mv_size = vlen, .mv_data = (void *)(e + ENT_HDR + nlen + klen)};
        int rc = e[0] == OP_PUT ? mdb_put(s->txn, dbi, &k, &v, 0) : mdb_del(s->txn, dbi, &k, NULL);
        if (rc != MDB_SUCCESS && !(rc == MDB_NOTFOUND && e[0] == OP_DEL))
            return store_fail(s, rc, "replay the log into %s", name);
        if (note) {
            store_wal_touch(s, dbi, k.mv_data, klen, e[0] == OP_PUT);
            s->dirty = 1;
        }
        off += ENT_HDR + nlen + klen + vlen;
    }
    return SL_OK;
}

int store_wal_apply(store *s, const unsigned char *p, size_t len, int note)
{
    if (len < REC_HDR || get_le32(p) != REC_MAGIC || get_le32(p + 24) != len ||
        get_le32(p + 4) != crc32c_value(p + 8, len - 8))
        return SL_ECORRUPT;
    int err = store_txn_need(s);
    return err == SL_OK ? apply(s, p, len, get_le32(p + 28), note) : err;
}

/* read_rec reads the record at at, if it is valid and numbered seq, into
 * w->rec: 1 when it is, 0 when not, -errno on a read error. */
static int read_rec(store_wal *w, uint64_t at, uint64_t seq, uint32_t *n)
{
    unsigned char h[REC_HDR];
    uint64_t end = WAL_START + w->ring;
    if (at < WAL_START || at + WAL_PAGE > end)
        return 0;
    int e = store_wal_pread(w->fd, h, REC_HDR, at);
    if (e)
        return -e;
    uint32_t len = get_le32(h + 24);
    if (get_le32(h) != REC_MAGIC || get_le64(h + 8) != w->file_id || get_le64(h + 16) != seq || len < REC_HDR ||
        at + store_wal_pad(len) > end)
        return 0;
    unsigned char *p = grow_array(w->rec, &w->rec_cap, len, 1, 16384);
    if (!p)
        return -ENOMEM;
    w->rec = p;
    if ((e = store_wal_pread(w->fd, p, len, at)) != 0)
        return -e;
    if (get_le32(p + 4) != crc32c_value(p + 8, len - 8))
        return 0;
    w->rec_len = len;
    *n = get_le32(h + 28);
    return 1;
}

/* replay applies the records from (pos, seq) on, up to but not including
 * until, into the open transaction; w->pos and w->seq end past the last. */
static int replay(store *s, uint64_t pos, uint64_t seq, uint64_t until, uint64_t *count)
{
    store_wal *w = s->wal;
    *count = 0;
    while (seq < until) {
        uint32_t n = 0;
        int got = read_rec(w, pos, seq, &n);
        if (got == 0 && pos != WAL_START) { /* the writer may have wrapped */
            pos = WAL_START;
            got = read_rec(w, pos, seq, &n);
        }
        if (got < 0) {
            log_error("store", "cannot read the log %s: %s", w->path, strerror(-got));
            return SL_EIO;
        }
        if (got == 0)
            break;
        int err = apply(s, w->rec, w->rec_len, n, 0);
        if (err != SL_OK) {
            if (err == SL_ECORRUPT)
                log_error("store", "record %" PRIu64 " of the log %s is damaged past its checksum", seq, w->path);
            return err;
        }
        pos += store_wal_pad(w->rec_len);
        seq++;
        (*count)++;
    }
    w->pos = pos;
    w->seq = seq;
    return SL_OK;
}

int store_wal_reapply(store *s)
{
    store_wal *w = s->wal;
    uint64_t until = w->seq, pos = w->pos, count;
    int err = store_txn_need(s);
    if (err == SL_OK)
        err = replay(s, w->ckpt_pos, w->ckpt_seq, until, &count);
    if (err == SL_OK && w->seq != until)
        err = SL_EIO; /* a record that was durable reads back wrong */
    w->pos = pos;
    w->seq = until;
    if (err != SL_OK) {
        log_error("store", "cannot put the logged changes back after a lost transaction (%s): stopping; they "
                  "are replayed from the log at the next start", proto_strerror(err));
        return SL_EIO;
    }
    s->dirty = 0; /* logged: nothing of it waits for the log */
    if (!w->reapply_logged++)
        log_warn("store", "put %" PRIu64 " logged batch(es) back into a new transaction after losing the last one "
                 "(logged once until a checkpoint succeeds)", count);
    return SL_OK;
}

/* ---- open and close ---- */

static uint64_t new_file_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id || id == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40) ^ 1;
    }
    return id;
}

int store_wal_open(store *s, const char *dir, uint64_t ring_bytes, int buffered)
{
    store_wal *w = calloc(1, sizeof *w);
    if (!w)
        return SL_ENOMEM;
    w->fd = w->dfd = -1;
    w->buffered = buffered;
    snprintf(w->path, sizeof w->path, "%s/%s", dir, STORE_WAL_FILE);
    s->wal = w;
    MDB_val v;
    int rc = store_meta_read(s, "wal", 3, &v), have_meta = rc == SL_OK && v.mv_size == 24;
    if (rc != SL_OK && rc != SL_ENOTFOUND) { /* where the replay starts is not known: nothing is guessed */
        log_error("store", "meta \"wal\" (where the log's replay starts) cannot be read: %s", proto_strerror(rc));
        store_wal_close(s);
        return SL_ECORRUPT;
    }
    uint64_t meta_id = have_meta ? get_le64(v.mv_data) : 0, seq = have_meta ? get_le64((const unsigned char *)v.mv_data + 8) : 1;
    uint64_t pos = have_meta ? get_le64((const unsigned char *)v.mv_data + 16) : WAL_START, count = 0;
    int e = file_open(w);
    if (e == EWOULDBLOCK) {
        log_error("store", "another process is using the log %s: one broker per data directory", w->path);
        store_wal_close(s);
        return SL_ESTATE;
    }
    if (e == 0 && have_meta && w->file_id == meta_id) {
        int err = replay(s, pos, seq, UINT64_MAX, &count);
        if (err != SL_OK) {
            store_wal_close(s);
            return err;
        }
        if (count)
            log_info("store", "replayed %" PRIu64 " batch(es) from the log %s", count, w->path);
        seq = w->seq;
    } else if (have_meta && meta_id != 0) { /* (0: a log was being made, or none is kept: nothing to replay) */
        log_error("store", "the log %s is %s: batches confirmed after the last checkpoint (at most a checkpoint "
                  "interval before the broker stopped) may be lost; starting with a new log",
                  w->path, e == ENOENT ? "missing" : e ? "unreadable" : "from another data directory");
    }
    w->seq = w->ckpt_seq = seq;
    w->pos = w->ckpt_pos = count ? w->pos : pos; /* the open commit covers every record: the ring is free */
    if (w->pos < WAL_START || w->pos >= WAL_START + w->ring)
        w->pos = w->ckpt_pos = WAL_START;
    uint64_t ring = ring_bytes ? store_wal_pad(ring_bytes) : 0;
    if (ring && ring < 4 * WAL_PAGE)
        ring = 4 * WAL_PAGE;
    if (!ring)
        w->settle = e == ENOENT ? 0 : 2; /* no log from now on: remove it once the replay is committed */
    else if (e != 0 || !have_meta || w->file_id != meta_id || w->ring != ring)
        w->settle = 1; /* a new file, once the replay (if any) is committed */
    if (!ring || w->settle) { /* the open commit says "nothing to replay" (file id 0) until a new file is made */
        if (w->fd >= 0)
            close(w->fd);
        if (w->dfd >= 0)
            close(w->dfd);
        w->fd = w->dfd = -1;
        w->ring = ring;
        w->file_id = 0;
    }
    return SL_OK;
}

int store_wal_settle(store *s, const char *dir)
{ /* 1: a new file was made, whose id meta "wal" must name */
    store_wal *w = s->wal;
    if (w && !w->ring) { /* no log from now on: meta "wal" already says there is nothing to replay */
        if (w->settle == 2 && unlink(w->path) != 0 && errno != ENOENT)
            log_warn("store", "cannot remove the log %s: %s", w->path, strerror(errno));
        store_wal_close(s);
        return SL_OK;
    }
    if (!w || !w->settle)
        return SL_OK;
    w->file_id = new_file_id();
    int e = file_make(dir, w->path, w->file_id, w->ring);
    if (e == 0)
        e = file_open(w);
    if (e != 0) { /* the same promise without it, at two flushes a batch */
        log_warn("store", "cannot make the log %s (%" PRIu64 " MiB): %s; running without it (each batch an LMDB "
                 "commit); a smaller --wal-mb may fit", w->path, w->ring >> 20, strerror(e));
        store_wal_close(s);
        return SL_OK;
    }
    w->settle = 0;
    w->pos = w->ckpt_pos = WAL_START;
    log_info("store", "the log %s holds %" PRIu64 " MiB", w->path, w->ring >> 20);
    return 1;
}

void store_wal_close(store *s)
{
    store_wal *w = s->wal;
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->dfd >= 0)
        close(w->dfd);
    free(w->dbuf);
    free(w->notes);
    free(w->rec);
    free(w);
    s->wal = NULL;
}

