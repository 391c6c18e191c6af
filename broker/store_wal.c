/*
 * store_wal.c - the write-ahead log: one flush per confirmed batch.
 *
 * An LMDB commit is two device flushes (the data pages' fdatasync, then the
 * meta page through O_DSYNC), whatever its size, and a lone publish waits
 * for both. With the log, a batch is confirmed once one record holding its
 * changes is durable in wal.log: one pwrite into space written beforehand
 * and one fdatasync, which has no file metadata to write. LMDB keeps the
 * batch in its open write transaction, which the loop goes on using (reads
 * see it), and commits everything logged so far at a checkpoint, every
 * --checkpoint-ms or when the log is half used: that commit is durable
 * (LMDB's default flags), after which the log's space is free again.
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
 * Replay: meta "wal" (committed with each checkpoint) names the file id,
 * the next sequence number and the place of the first record no checkpoint
 * covers. At open, records are read from there while each is valid and
 * carries the next number (a record that is not tries the ring's start
 * once: the writer wrapped); they are applied in one transaction, which
 * the open commits, with meta "wal" naming the ring's start. A record
 * written but never confirmed (its flush did not finish) may be replayed:
 * at-least-once, as an LMDB commit that reached the disk unconfirmed.
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
 * Costs: a note (6 bytes + key) per write; sealing one mdb_get per note
 * and a copy of the values; one 4 KiB-padded pwrite and one fdatasync per
 * batch; each logged byte written twice (the log, then LMDB at the
 * checkpoint); replay at start reads at most the ring.
 */
#include "store_wal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "grow.h"
#include "log.h"
#include "store_int.h"

#define WAL_PAGE 4096u
#define WAL_START ((uint64_t)WAL_PAGE)           /* the ring starts after the header page */
#define WAL_MAGIC "SLUICWAL"
#define WAL_VERSION 1u
#define REC_MAGIC 0x314c5753u                    /* "SWL1" */
#define REC_HDR 32u
#define ENT_HDR 8u                               /* op, name length, key length, value length */
#define NOTE_HDR 7u                              /* a note: u32 dbi, u8 put, u16 key length */
#define OP_PUT 1
#define OP_DEL 2
#define ZERO_CHUNK ((size_t)1 << 20)
#define CKPT_BACKOFF_MIN_NS 100000000ull   /* 100 ms: batches go on into the log meanwhile */
#define CKPT_BACKOFF_MAX_NS 1000000000ull  /* 1 s */

struct store_wal {
    int fd;
    char path[PATH_MAX];
    uint64_t file_id;
    uint64_t ring;          /* bytes of records: [WAL_START, WAL_START + ring) */
    uint64_t pos;           /* where the next record goes */
    uint64_t seq;           /* the next record's number */
    uint64_t used;          /* bytes of records (and wrap waste) since the checkpoint */
    uint64_t ckpt_pos, ckpt_seq; /* the first record no checkpoint covers */
    uint64_t ckpt_at_ns;    /* when the last checkpoint was handed over */
    uint64_t retry_ns;      /* after a failed one: no checkpoint by time before this */
    uint64_t backoff_ns;    /* doubles with each failure in a row, up to CKPT_BACKOFF_MAX_NS */
    int reapply_logged;     /* a put-back was logged: again only after a checkpoint succeeds */
    int settle;             /* after the open commit: 1 make a new file, 2 remove it */
    unsigned char *notes;   /* the open batch's keys: u32 dbi, u8 put, u16 length, bytes */
    size_t notes_len, notes_cap;
    size_t last_note;       /* offset of the last note, for a repeat */
    unsigned char *rec;     /* the sealed record, padded */
    size_t rec_len, rec_cap;
    uint64_t rec_pos, rec_waste;
    uint64_t records, bytes, checkpoints;
};

static uint64_t pad(uint64_t n)
{
    return (n + WAL_PAGE - 1) / WAL_PAGE * WAL_PAGE;
}

/* ---- the file ---- */

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        p += n, len -= (size_t)n, off += (uint64_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len, uint64_t off)
{
    unsigned char *p = buf;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        p += n, len -= (size_t)n, off += (uint64_t)n;
    }
    return 0;
}

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
        e = write_all(fd, zero, WAL_PAGE, 0);
        memset(zero, 0, WAL_PAGE);
    }
    for (uint64_t off = WAL_START; !e && off < WAL_START + ring; off += ZERO_CHUNK) {
        uint64_t n = WAL_START + ring - off;
        e = write_all(fd, zero, n < ZERO_CHUNK ? (size_t)n : ZERO_CHUNK, off);
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
    w->fd = open(w->path, O_RDWR | O_CLOEXEC);
    if (w->fd < 0)
        return errno;
    if (fstat(w->fd, &st) != 0 || read_all(w->fd, h, WAL_PAGE, 0) != 0 || memcmp(h, WAL_MAGIC, 8) != 0 ||
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

/* ---- notes and the record ---- */

void store_wal_touch(store *s, MDB_dbi dbi, const void *key, size_t key_bytes, int put)
{
    store_wal *w = s->wal;
    if (!w || key_bytes > UINT16_MAX)
        return;
    if (w->notes_len && w->last_note + NOTE_HDR + key_bytes == w->notes_len &&
        get_le32(w->notes + w->last_note) == dbi &&
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
    p[w->notes_len + 4] = put ? 1 : 0;
    p[w->notes_len + 5] = (unsigned char)(key_bytes & 0xff);
    p[w->notes_len + 6] = (unsigned char)(key_bytes >> 8);
    memcpy(p + w->notes_len + NOTE_HDR, key, key_bytes);
    w->notes_len += NOTE_HDR + key_bytes;
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

int store_wal_seal(store *s)
{
    store_wal *w = s->wal;
    uint32_t n = 0;
    int err = s->wal_nomem ? SL_ENOMEM : SL_OK;
    w->rec_len = REC_HDR;
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
        if (err == SL_OK && pad(w->rec_len) > w->ring / 2)
            err = SL_EFULL; /* a batch this large is cheaper as a checkpoint */
    }
    store_wal_forget(s); /* logged now, or carried by the checkpoint that follows a refusal */
    if (err != SL_OK)
        return err;
    uint64_t len = pad(w->rec_len), end = WAL_START + w->ring, at = w->pos, waste = 0;
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
    put_le32(p, REC_MAGIC);
    put_le64(p + 8, w->file_id);
    put_le64(p + 16, w->seq);
    put_le32(p + 24, (uint32_t)w->rec_len);
    put_le32(p + 28, n);
    put_le32(p + 4, crc32c_value(p + 8, w->rec_len - 8));
    w->rec_pos = at;
    w->rec_waste = waste;
    return SL_OK;
}

int store_wal_write(store_wal *w)
{
    int e = write_all(w->fd, w->rec, pad(w->rec_len), w->rec_pos);
    if (!e && fdatasync(w->fd) != 0)
        e = errno;
    return e;
}

int store_wal_void(store *s)
{
    store_wal *w = s->wal;
    static const unsigned char zero[REC_HDR];
    int e = write_all(w->fd, zero, sizeof zero, w->rec_pos);
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
    uint64_t len = pad(w->rec_len);
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
    MDB_val k = {.mv_size = 3, .mv_data = "wal"}, val = {.mv_size = sizeof v, .mv_data = v}, old;
    put_le64(v, w->file_id);
    put_le64(v + 8, w->seq);
    put_le64(v + 16, w->pos);
    int err = store_txn_need(s);
    if (err != SL_OK)
        return err;
    if (mdb_get(s->txn, s->meta, &k, &old) == MDB_SUCCESS && old.mv_size == sizeof v &&
        memcmp(old.mv_data, v, sizeof v) == 0)
        return SL_OK; /* the same: a commit with nothing else to write stays free (no flush) */
    int rc = mdb_put(s->txn, s->meta, &k, &val, 0);
    return rc == MDB_SUCCESS ? SL_OK : store_fail(s, rc, "write the log's checkpoint");
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
static int apply(store *s, const unsigned char *p, size_t len, uint32_t n)
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
        MDB_val k = {.mv_size = klen, .mv_data = (void *)(e + ENT_HDR + nlen)};
        MDB_val v = {.mv_size = vlen, .mv_data = (void *)(e + ENT_HDR + nlen + klen)};
        int rc = e[0] == OP_PUT ? mdb_put(s->txn, dbi, &k, &v, 0) : mdb_del(s->txn, dbi, &k, NULL);
        if (rc != MDB_SUCCESS && !(rc == MDB_NOTFOUND && e[0] == OP_DEL))
            return store_fail(s, rc, "replay the log into %s", name);
        off += ENT_HDR + nlen + klen + vlen;
    }
    return SL_OK;
}

/* read_rec reads the record at at, if it is valid and numbered seq, into
 * w->rec: 1 when it is, 0 when not, -errno on a read error. */
static int read_rec(store_wal *w, uint64_t at, uint64_t seq, uint32_t *n)
{
    unsigned char h[REC_HDR];
    uint64_t end = WAL_START + w->ring;
    if (at < WAL_START || at + WAL_PAGE > end)
        return 0;
    int e = read_all(w->fd, h, REC_HDR, at);
    if (e)
        return -e;
    uint32_t len = get_le32(h + 24);
    if (get_le32(h) != REC_MAGIC || get_le64(h + 8) != w->file_id || get_le64(h + 16) != seq || len < REC_HDR ||
        at + pad(len) > end)
        return 0;
    unsigned char *p = grow_array(w->rec, &w->rec_cap, len, 1, 16384);
    if (!p)
        return -ENOMEM;
    w->rec = p;
    if ((e = read_all(w->fd, p, len, at)) != 0)
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
        int err = apply(s, w->rec, w->rec_len, n);
        if (err != SL_OK) {
            if (err == SL_ECORRUPT)
                log_error("store", "record %" PRIu64 " of the log %s is damaged past its checksum", seq, w->path);
            return err;
        }
        pos += pad(w->rec_len);
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

int store_wal_open(store *s, const char *dir, uint64_t ring_bytes)
{
    store_wal *w = calloc(1, sizeof *w);
    if (!w)
        return SL_ENOMEM;
    w->fd = -1;
    snprintf(w->path, sizeof w->path, "%s/%s", dir, STORE_WAL_FILE);
    s->wal = w;
    MDB_val k = {.mv_size = 3, .mv_data = "wal"}, v;
    int rc = mdb_get(s->txn, s->meta, &k, &v), have_meta = rc == MDB_SUCCESS && v.mv_size == 24;
    uint64_t meta_id = have_meta ? get_le64(v.mv_data) : 0, seq = have_meta ? get_le64((const unsigned char *)v.mv_data + 8) : 1;
    uint64_t pos = have_meta ? get_le64((const unsigned char *)v.mv_data + 16) : WAL_START, count = 0;
    int e = file_open(w);
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
    uint64_t ring = ring_bytes ? pad(ring_bytes) : 0;
    if (ring && ring < 4 * WAL_PAGE)
        ring = 4 * WAL_PAGE;
    if (!ring)
        w->settle = e == ENOENT ? 0 : 2; /* no log from now on: remove it once the replay is committed */
    else if (e != 0 || !have_meta || w->file_id != meta_id || w->ring != ring)
        w->settle = 1; /* a new file, once the replay (if any) is committed */
    if (!ring || w->settle) { /* the open commit says "nothing to replay" (file id 0) until a new file is made */
        if (w->fd >= 0)
            close(w->fd);
        w->fd = -1;
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
    free(w->notes);
    free(w->rec);
    free(w);
    s->wal = NULL;
}

void store_wal_stats(const store *s, uint64_t *records, uint64_t *bytes, uint64_t *checkpoints)
{
    const store_wal *w = s->wal;
    *records = w ? w->records : 0;
    *bytes = w ? w->bytes : 0;
    *checkpoints = w ? w->checkpoints : 0;
}
