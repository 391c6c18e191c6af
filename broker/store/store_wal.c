/*
 * store_wal.c - the write-ahead log: one flush per confirmed batch.
 *
 * An LMDB commit is two device flushes (the data pages' fdatasync, then the
 * meta page through O_DSYNC), whatever its size, and a lone publish waits
 * for both. With the log, a batch is confirmed once one record holding its
 * changes is durable in wal.log: one pwrite into space written beforehand,
 * through a descriptor opened O_DIRECT | O_DSYNC, which returns once the
 * device has the record: no page cache to dirty and write back, no file
 * metadata to write (20-25 % more records a second than a buffered pwrite
 * and fdatasync of the same 4 KiB here). Where the file system has no
 * O_DIRECT (tmpfs), or refuses a write through it, and always with
 * --wal-buffered, the record is written through the page cache and
 * flushed with fdatasync: the same promise. LMDB keeps the
 * batch in its open write transaction, which the loop goes on using (reads
 * see it), and commits everything logged so far at a checkpoint, every
 * --checkpoint-ms or when the log is half used: that commit is durable
 * (LMDB's default flags), after which the log's space is free again.
 *
 * The file and its records, replay at open and after a lost transaction:
 * store_wal_file.c.
 *
 * What a record holds is the final state of every key the batch touched:
 * each mdb wrapper notes the key (store_wal_touch), and sealing reads each
 * noted put's value in the transaction then (or its absence). So a put
 * with MDB_RESERVE, a cursor delete, or a key written twice in a batch all
 * log correctly, and replaying a record twice changes nothing. A delete's
 * note needs no read: the entries replay in order, so a key's last note
 * decides, and when that is a delete the key is absent; a put noted after a
 * delete of the same key reads the final value (a key noted twice in a row
 * is one note, a put).
 *
 * Invariants:
 *   - every confirmed batch is in LMDB's last durable commit or in a
 *     record between meta "wal"'s place and the ring's write position;
 *   - records are written one at a time, each after the last one's flush,
 *     in increasing sequence; sequence numbers never repeat for a file id;
 *   - the space of records a checkpoint has not committed is never
 *     written (used + the next record's room stays below the ring).
 *
 * A lost transaction (a failed checkpoint, a poisoned pass) loses logged
 * batches from LMDB but not from the log: store_wal_reapply reads them
 * back into a new transaction, the same code as replay.
 *
 * Costs: a note (7 bytes + key) per write; sealing one mdb_get per noted
 * put and a copy of the values; one copy of the record into a page-aligned
 * buffer and one 4 KiB-padded O_DSYNC pwrite per batch (or a pwrite and an
 * fdatasync); each logged byte written twice (the log, then LMDB at the
 * checkpoint); replay at start reads at most the ring.
 */
#include "store_wal_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "grow.h"
#include "log.h"
#include "store_int.h"

/* transfer moves len bytes at off whole, writing or reading. */
static int transfer(int fd, unsigned char *p, size_t len, uint64_t off, int write)
{
    while (len) {
        ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        p += n, len -= (size_t)n, off += (uint64_t)n;
    }
    return 0;
}

int store_wal_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
    return transfer(fd, (unsigned char *)(uintptr_t)buf, len, off, 1);
}

int store_wal_pread(int fd, void *buf, size_t len, uint64_t off)
{
    return transfer(fd, buf, len, off, 0);
}

/* ---- notes and the record ---- */

void store_wal_touch(store *s, MDB_dbi dbi, const void *key, size_t key_bytes, int put)
{
    store_wal *w = s->wal;
    if (!w || key_bytes > UINT16_MAX)
        return;
    int repeat = put != STORE_WAL_GONE && !w->last_gone && w->notes_len; /* a gone note merges with nothing */
    if (repeat && w->last_note + NOTE_HDR + key_bytes == w->notes_len && get_le32(w->notes + w->last_note) == dbi &&
        memcmp(w->notes + w->last_note + NOTE_HDR, key, key_bytes) == 0) {
        w->notes[w->last_note + 4] = 1; /* the same key again: one note, whose value is read at sealing */
        return;
    }
    unsigned char *p = grow_array(w->notes, &w->notes_cap, w->notes_len + NOTE_HDR + key_bytes, 1, 4096);
    if (!p) { /* the batch cannot be logged: it goes with a checkpoint */
        s->wal_nomem = 1;
        return;
    }
    w->notes = p;
    w->last_note = w->notes_len;
    put_le32(p + w->notes_len, dbi);
    p[w->notes_len + 4] = put == 1;
    p[w->notes_len + 5] = (unsigned char)(key_bytes & 0xff);
    p[w->notes_len + 6] = (unsigned char)(key_bytes >> 8);
    memcpy(p + w->notes_len + NOTE_HDR, key, key_bytes);
    w->notes_len += NOTE_HDR + key_bytes;
    w->last_gone = put == STORE_WAL_GONE;
}

void store_wal_forget(store *s)
{
    if (s->wal)
        s->wal->notes_len = 0;
    s->wal_nomem = 0;
}

/* rec_append adds one entry to the record being built. SL_ENOMEM. */
static int rec_append(store_wal *w, int op, const char *name, const void *key, size_t klen, const MDB_val *v)
{
    size_t nlen = strlen(name), vlen = v ? v->mv_size : 0;
    unsigned char *p = grow_array(w->rec, &w->rec_cap, w->rec_len + ENT_HDR + nlen + klen + vlen, 1, 16384);
    if (!p)
        return SL_ENOMEM;
    w->rec = p;
    p += w->rec_len;
    p[0] = (unsigned char)op;
    p[1] = (unsigned char)nlen;
    p[2] = (unsigned char)(klen & 0xff);
    p[3] = (unsigned char)(klen >> 8);
    put_le32(p + 4, (uint32_t)vlen);
    memcpy(p + ENT_HDR, name, nlen);
    memcpy(p + ENT_HDR + nlen, key, klen);
    if (vlen)
        memcpy(p + ENT_HDR + nlen + klen, v->mv_data, vlen);
    w->rec_len += ENT_HDR + nlen + klen + vlen;
    return SL_OK;
}

int store_wal_build(store *s, int whole)
{
    store_wal *w = s->wal;
    uint32_t n = 0;
    int err = s->wal_nomem ? SL_ENOMEM : SL_OK;
    w->rec_len = REC_HDR;
    w->built = 0;
    unsigned char *h = grow_array(w->rec, &w->rec_cap, REC_HDR, 1, 16384);
    if (!h)
        err = SL_ENOMEM;
    else
        w->rec = h;
    for (size_t off = 0; err == SL_OK && off < w->notes_len;) {
        MDB_dbi dbi = get_le32(w->notes + off);
        int put = w->notes[off + 4];
        size_t klen = (size_t)w->notes[off + 5] | (size_t)w->notes[off + 6] << 8;
        MDB_val k = {.mv_size = klen, .mv_data = w->notes + off + NOTE_HDR}, v;
        off += NOTE_HDR + klen;
        int rc = put ? mdb_get(s->txn, dbi, &k, &v) : MDB_NOTFOUND;
        if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
            err = store_fail(s, rc, "read a key of %s for the log", s->db[dbi].name);
        else
            err = rec_append(w, rc == MDB_SUCCESS ? OP_PUT : OP_DEL, s->db[dbi].name, k.mv_data, klen,
                             rc == MDB_SUCCESS ? &v : NULL);
        n++;
        if (err == SL_OK && !whole && store_wal_pad(w->rec_len) > w->ring / 2)
            err = SL_EFULL; /* a batch this large is cheaper as a checkpoint */
    }
    store_wal_forget(s); /* logged now, or carried by the checkpoint that follows a refusal */
    if (err != SL_OK)
        return err;
    unsigned char *p = w->rec;
    put_le32(p, REC_MAGIC);
    put_le64(p + 8, w->file_id);
    put_le64(p + 16, w->seq);
    put_le32(p + 24, (uint32_t)w->rec_len);
    put_le32(p + 28, n);
    put_le32(p + 4, crc32c_value(p + 8, w->rec_len - 8));
    w->built = 1;
    return SL_OK;
}

int store_wal_place(store *s)
{
    store_wal *w = s->wal;
    if (!w->built)
        return SL_ESTATE;
    w->built = 0;
    if (store_wal_pad(w->rec_len) > w->ring / 2)
        return SL_EFULL; /* (a whole record built for the replication stream) */
    uint64_t len = store_wal_pad(w->rec_len), end = WAL_START + w->ring, at = w->pos, waste = 0;
    if (at + len > end) {
        waste = end - at;
        at = WAL_START;
    }
    if (w->used + waste + len + WAL_PAGE > w->ring)
        return SL_EFULL; /* the space of records not yet checkpointed */
    unsigned char *p = grow_array(w->rec, &w->rec_cap, len, 1, 16384);
    if (!p)
        return SL_ENOMEM;
    w->rec = p;
    memset(p + w->rec_len, 0, len - w->rec_len);
    w->rec_pos = at;
    w->rec_waste = waste;
    return SL_OK;
}

void store_wal_record(const store *s, const unsigned char **p, size_t *len)
{
    *p = s->wal->rec;
    *len = s->wal->rec_len;
}

int store_wal_seal(store *s)
{
    int err = store_wal_build(s, 0);
    return err == SL_OK ? store_wal_place(s) : err;
}

/* direct_fd returns the log opened O_DIRECT | O_DSYNC, opened at the first
 * record written to this file, or -1 where that cannot be had. */
static int direct_fd(store_wal *w)
{
    if (w->direct_tried)
        return w->dfd;
    w->direct_tried = 1;
    w->dfd = open(w->path, O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
    if (w->dfd < 0)
        log_info("store", "the log %s cannot be opened with O_DIRECT (%s): records are written through the page "
                 "cache and flushed with fdatasync", w->path, strerror(errno));
    return w->dfd;
}

/* direct_write writes the record through dfd from a page-aligned copy:
 * 0, an errno value, or EINVAL when O_DIRECT refuses it (the caller then
 * writes it through the page cache, and so do later records). */
static int direct_write(store_wal *w, int dfd, size_t len)
{
    if (len > w->dbuf_cap) {
        void *p = NULL;
        size_t cap = len > 2 * w->dbuf_cap ? len : 2 * w->dbuf_cap;
        if (posix_memalign(&p, WAL_PAGE, cap) != 0)
            return EINVAL; /* (the page cache needs no aligned copy) */
        free(w->dbuf);
        w->dbuf = p;
        w->dbuf_cap = cap;
    }
    memcpy(w->dbuf, w->rec, len); /* the padding too: store_wal_place zeroed it */
    int e = store_wal_pwrite(dfd, w->dbuf, len, w->rec_pos);
    if (e == EINVAL) {
        log_warn("store", "the log %s refused a write through O_DIRECT: records are written through the page "
                 "cache and flushed with fdatasync from now on", w->path);
        close(w->dfd);
        w->dfd = -1;
    }
    return e;
}

int store_wal_write(store_wal *w)
{
    size_t len = store_wal_pad(w->rec_len);
    int dfd = direct_fd(w);
    if (dfd >= 0) {
        int e = direct_write(w, dfd, len);
        if (e != EINVAL)
            return e; /* durable when it returned (O_DSYNC), or failed */
    }
    int e = store_wal_pwrite(w->fd, w->rec, len, w->rec_pos);
    if (!e && fdatasync(w->fd) != 0)
        e = errno;
    return e;
}

int store_wal_void(store *s)
{
    store_wal *w = s->wal;
    static const unsigned char zero[REC_HDR];
    int e = store_wal_pwrite(w->fd, zero, sizeof zero, w->rec_pos);
    if (!e && fdatasync(w->fd) != 0)
        e = errno;
    if (e)
        log_error("store", "cannot void a log record that failed (%s): stopping", strerror(e));
    return e;
}

void store_wal_written(store *s, int ok)
{
    store_wal *w = s->wal;
    if (!ok)
        return;
    uint64_t len = store_wal_pad(w->rec_len);
    w->pos = w->rec_pos + len;
    w->used += w->rec_waste + len;
    w->seq++;
    w->records++;
    w->bytes += len;
}

int store_wal_held(const store *s)
{
    return s->wal && s->wal->used > 0;
}

int store_wal_due(const store *s, uint64_t now_ns, uint64_t interval_ns, int wanted)
{
    const store_wal *w = s->wal;
    return w && w->used > 0 && now_ns >= w->retry_ns &&
           (wanted || w->used * 2 >= w->ring || now_ns >= w->ckpt_at_ns + interval_ns);
}

int store_wal_stuck(const store *s)
{
    const store_wal *w = s->wal;
    return w && w->backoff_ns && w->used * 2 >= w->ring;
}

uint64_t store_wal_due_at(const store *s, uint64_t interval_ns, int wanted)
{
    const store_wal *w = s->wal;
    if (!w || !w->used)
        return UINT64_MAX;
    uint64_t at = wanted || w->used * 2 >= w->ring ? 0 : w->ckpt_at_ns + interval_ns;
    return at > w->retry_ns ? at : w->retry_ns;
}

/* ---- checkpoints ---- */

int store_wal_ckpt_put(store *s)
{
    store_wal *w = s->wal;
    unsigned char v[24];
    MDB_val old;
    put_le64(v, w->file_id);
    put_le64(v + 8, w->seq);
    put_le64(v + 16, w->pos);
    int err = store_meta_read(s, "wal", 3, &old);
    if (err == SL_OK && old.mv_size == sizeof v && memcmp(old.mv_data, v, sizeof v) == 0)
        return SL_OK; /* the same: a commit with nothing else to write stays free (no flush) */
    if (err != SL_OK && err != SL_ENOTFOUND && err != SL_ECORRUPT)
        return err;
    /* (not through the log: this is the checkpoint's own mark, read only at open) */
    MDB_val k = {.mv_size = 3, .mv_data = "wal"}, val = {.mv_size = sizeof v + (s->meta_sealed ? STORE_META_SEAL : 0)};
    int rc = mdb_put(s->txn, s->meta, &k, &val, MDB_RESERVE);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "write the log's checkpoint");
    memcpy(val.mv_data, v, sizeof v);
    if (s->meta_sealed)
        put_le32((unsigned char *)val.mv_data + sizeof v, crc32c_extend(crc32c_value("wal", 3), v, sizeof v));
    return SL_OK;
}

void store_wal_ckpt_done(store *s, int ok, uint64_t now_ns)
{
    store_wal *w = s->wal;
    store_wal_forget(s);
    if (!ok) { /* no space, most likely: do not try again at once */
        w->backoff_ns = w->backoff_ns ? w->backoff_ns * 2 : CKPT_BACKOFF_MIN_NS;
        if (w->backoff_ns > CKPT_BACKOFF_MAX_NS)
            w->backoff_ns = CKPT_BACKOFF_MAX_NS;
        w->retry_ns = now_ns + w->backoff_ns;
        return;
    }
    w->backoff_ns = w->retry_ns = 0;
    w->reapply_logged = 0;
    w->ckpt_pos = w->pos;
    w->ckpt_seq = w->seq;
    w->used = 0;
    w->ckpt_at_ns = now_ns;
    w->checkpoints++;
}

void store_wal_stats(const store *s, uint64_t *records, uint64_t *bytes, uint64_t *checkpoints)
{
    const store_wal *w = s->wal;
    *records = w ? w->records : 0;
    *bytes = w ? w->bytes : 0;
    *checkpoints = w ? w->checkpoints : 0;
}
