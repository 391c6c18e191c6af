/*
 * store_pages.c - LMDB's data file read without LMDB, every page checked
 * before it is believed.
 *
 * Why. LMDB 0.9 trusts its pages: a node size, a slot or a child page
 * number damaged on disk sends it reading or moving memory wherever the
 * bytes say (a flipped node header once corrupted the heap, and the broker
 * then crashed inside liblmdb at every start), and a child pointer past the
 * file's end fails the whole transaction (MDB_PAGE_NOTFOUND). liblmdb
 * 0.9.24 has no page checksums and no option to check pages as it reads
 * them (mdb_env_set_checksum and MDB_PREVSNAPSHOT are not in 0.9). So the
 * store walks each tree itself, with pread, before LMDB opens it
 * (store_check.c), and salvage reads a damaged file the same way
 * (store_salvage.c).
 *
 * The format (liblmdb 0.9, 64-bit little-endian, MDB_DEVEL off; mdb.c's
 * MDB_page, MDB_node, MDB_db and MDB_meta):
 *
 *   page header, 16 bytes: u64 pgno | u16 pad | u16 flags | u16 lower |
 *     u16 upper (an overflow page: u32 page count instead of lower/upper)
 *   flags: P_BRANCH 0x01, P_LEAF 0x02, P_OVERFLOW 0x04, P_META 0x08
 *     (P_DIRTY 0x10, P_LEAF2 0x20, P_SUBP 0x40 never reach the file here:
 *     no tree of ours is MDB_DUPSORT)
 *   slots: u16 offsets from the page's start at [16, lower), one per node,
 *     in key order; the nodes fill [upper, page size) with no gap, each
 *     rounded up to an even size
 *   node, 8 bytes then the key then the value: u16 lo | u16 hi | u16 flags
 *     | u16 key size. In a leaf, lo|hi<<16 is the value's size, flags
 *     F_BIGDATA 0x01 (the value is an 8-byte page number of its overflow
 *     pages, which hold it after one page header: OVPAGES = (15 + size) /
 *     psize + 1 pages) or F_SUBDATA 0x02 (the value is a named tree's
 *     48-byte MDB_db, in the main tree). In a branch, lo|hi<<16|flags<<32
 *     is a child's page number and there is no value; slot 0's key is not
 *     compared (it stands for everything below slot 1's)
 *   meta pages 0 and 1, after their header: u32 magic 0xBEEFC0DE | u32
 *     version 1 | u64 address | u64 map size | MDB_db free tree | MDB_db
 *     main tree | u64 last page | u64 transaction id; the one with the
 *     larger id is in use, and its free tree's pad is the page size
 *   MDB_db, 48 bytes: u32 pad | u16 flags | u16 depth | u64 branch pages
 *     | u64 leaf pages | u64 overflow pages | u64 entries | u64 root
 *     (~0: empty)
 *
 * The checks of a walk, each page's before anything reads past it: its
 * number in range (2..last page) and reached once; its header names it and
 * its kind (branch above the tree's depth, leaf at it); slots and nodes
 * inside the page and tiling [upper, end) exactly; node flags known; keys
 * of the tree's size, in strictly increasing order and inside the range
 * the parent's keys give the page; a large value's overflow pages in range,
 * reached once, their header naming them with a count at least what the
 * value needs (LMDB keeps a value's pages when it shrinks it in place: a
 * put over a dirty overflow value that fits, and mdb_freelist_save's last
 * records, so the header may count more, never fewer, and the tree's
 * overflow total counts what the headers say); and at the
 * end the tree's page and entry counts equal to its MDB_db's. What passes
 * cannot make LMDB read outside the map or loop: every offset and page
 * number it will follow was checked. What it cannot see is a wrong value
 * that keeps the shape (a record's bytes, a named tree's counts that still
 * add up): the records' checksums (rec.c) and meta's seals catch those.
 *
 * Costs: a walk reads every page of a tree once (pread), sorts each page's
 * slots (O(n log n) for its n nodes) and compares each key with the one
 * before it; overflow values are read only when asked (salvage). Memory:
 * PG_MAX_DEPTH + 2 page buffers and a bit per page of the file.
 */
#include "store_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byteorder.h"
#include "grow.h"

#define PAGEHDRSZ 16u
#define NODESIZE 8u
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02
#define MDB_MAGIC 0xBEEFC0DEu
#define MDB_DATA_VERSION 1u
#define META_OFF PAGEHDRSZ
#define META_DBS (META_OFF + 24)
#define META_LAST_PG (META_DBS + 2 * PG_DB_BYTES)
_Static_assert(META_LAST_PG == PG_META_LAST_PG, "store_pages.h's offset of the last page");
#define META_TXNID (META_LAST_PG + 8)
#define META_END (META_TXNID + 8)
#define SLOT_MAX 32768 /* more slots than a 64 KiB page can hold */

static uint64_t ovpages(uint64_t size, uint32_t psize)
{
    return (PAGEHDRSZ - 1 + size) / psize + 1;
}

unsigned pg_page_flags(const unsigned char *buf)
{
    return get_le16(buf + 10);
}

void pg_db_decode(const unsigned char *p, pg_db *db)
{
    db->pad = get_le32(p);
    db->flags = get_le16(p + 4);
    db->depth = get_le16(p + 6);
    db->branch_pages = get_le64(p + 8);
    db->leaf_pages = get_le64(p + 16);
    db->overflow_pages = get_le64(p + 24);
    db->entries = get_le64(p + 32);
    db->root = get_le64(p + 40);
}

__attribute__((format(printf, 3, 4))) static int fault(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the file ---- */

static int read_at(pg_file *f, void *buf, size_t len, uint64_t off)
{
    unsigned char *p = buf;
    while (len) {
        ssize_t n = pread(f->fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        p += n, len -= (size_t)n, off += (uint64_t)n;
    }
    return 0;
}

int pg_read(pg_file *f, uint64_t pgno, unsigned char *buf, char *why, size_t why_len)
{
    if (pgno >= f->file_bytes / f->psize)
        return fault(why, why_len, "page %" PRIu64 " is past the end of the file (%" PRIu64 " pages)", pgno,
                     f->file_bytes / f->psize);
    int e = read_at(f, buf, f->psize, pgno * f->psize);
    return e ? fault(why, why_len, "page %" PRIu64 " cannot be read: %s", pgno, strerror(e)) : 0;
}

int pg_seen(const pg_file *f, uint64_t pgno)
{
    return (f->seen[pgno >> 3] >> (pgno & 7)) & 1;
}

void pg_mark(pg_file *f, uint64_t pgno)
{
    f->seen[pgno >> 3] |= (unsigned char)(1u << (pgno & 7));
}

int pg_open(pg_file *f, const char *path, char *why, size_t why_len)
{
    unsigned char m[2][META_END];
    struct stat st;
    memset(f, 0, sizeof *f);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return fault(why, why_len, "cannot open %s: %s", path, strerror(errno));
    if (fstat(f->fd, &st) != 0 || read_at(f, m[0], sizeof m[0], 0) != 0)
        return fault(why, why_len, "cannot read %s's first meta page", path);
    f->file_bytes = (uint64_t)st.st_size;
    f->psize = get_le32(m[0] + META_DBS); /* the free tree's pad */
    if (f->psize < 512 || f->psize > 32768 || (f->psize & (f->psize - 1)) ||
        read_at(f, m[1], sizeof m[1], f->psize) != 0)
        return fault(why, why_len, "%s: its meta pages cannot be read (a page size of %u)", path, f->psize);
    for (int i = 0; i < 2; i++)
        if (!(pg_page_flags(m[i]) & PG_P_META) || get_le32(m[i] + META_OFF) != MDB_MAGIC ||
            get_le32(m[i] + META_OFF + 4) != MDB_DATA_VERSION)
            return fault(why, why_len, "its meta pages fail LMDB's checks (meta page %d: flags, magic or version)", i);
    int use = get_le64(m[1] + META_TXNID) > get_le64(m[0] + META_TXNID); /* LMDB's mdb_env_pick_meta */
    pg_db_decode(m[use] + META_DBS, &f->free_db);
    pg_db_decode(m[use] + META_DBS + PG_DB_BYTES, &f->main_db);
    f->last_pg = get_le64(m[use] + META_LAST_PG);
    f->txnid = get_le64(m[use] + META_TXNID);
    /* LMDB may count pages past the end of the file: a page it allocated at
     * the end and freed in the same transaction (a loose page) is never
     * written, yet is counted in the last page and named by the free list.
     * Pages in use are read, so one past the end fails where it is reached;
     * a last page further past the end than a transaction can hold pages is
     * damage. */
    uint64_t pages = f->file_bytes / f->psize;
    if (f->last_pg < 1 || pages < 2 || f->last_pg >= pages + PG_UNWRITTEN_MAX)
        return fault(why, why_len, "%s: meta page %d names page %" PRIu64 " as the last, but the file holds %" PRIu64,
                     path, use, f->last_pg, pages);
    f->buf = malloc((size_t)(PG_MAX_DEPTH + 2) * f->psize);
    f->seen = calloc((size_t)(f->last_pg >> 3) + 1, 1);
    f->free = calloc((size_t)(f->last_pg >> 3) + 1, 1);
    if (!f->buf || !f->seen || !f->free)
        return fault(why, why_len, "out of memory reading %s", path);
    pg_mark(f, 0);
    pg_mark(f, 1);
    return 0;
}

int pg_open_raw(pg_file *f, const char *path, uint32_t psize, char *why, size_t why_len)
{
    struct stat st;
    memset(f, 0, sizeof *f);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0 || fstat(f->fd, &st) != 0)
        return fault(why, why_len, "cannot open %s: %s", path, strerror(errno));
    f->file_bytes = (uint64_t)st.st_size;
    f->psize = psize;
    if (f->file_bytes / psize < 3)
        return fault(why, why_len, "%s holds no page past its meta pages", path);
    f->last_pg = f->file_bytes / psize - 1;
    f->free_db.root = f->main_db.root = PG_INVALID;
    f->buf = malloc((size_t)(PG_MAX_DEPTH + 2) * f->psize);
    f->seen = calloc((size_t)(f->last_pg >> 3) + 1, 1);
    f->free = calloc((size_t)(f->last_pg >> 3) + 1, 1);
    if (!f->buf || !f->seen || !f->free)
        return fault(why, why_len, "out of memory reading %s", path);
    pg_mark(f, 0);
    pg_mark(f, 1);
    return 0;
}

void pg_close(pg_file *f)
{
    if (f->fd > 0)
        close(f->fd);
    free(f->buf);
    free(f->seen);
    free(f->free);
    free(f->bigval);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

/* ---- one page ---- */

typedef struct slot {
    uint16_t off, size; /* the node's offset and even size */
    uint16_t index;
} slot;

static int slot_cmp(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

static int key_cmp(pg_keys keys, const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    if (keys == PG_KEYS_INTEGER) {
        uint64_t x = get_le64(a), y = get_le64(b);
        return (x > y) - (x < y);
    }
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

typedef struct walk {
    pg_file *f;
    const pg_tree *t;
    pg_leaf_fn fn;
    void *ctx;
    char *why;
    size_t why_len;
    uint64_t branch, leaf, overflow, entries;
    slot *slots;
    size_t slots_cap;
} walk;

/* node_at reads the node of slot i of page p: its key and, in a leaf, its
 * value's stored size and flags; *size is its even size in the page. */
static void node_at(const unsigned char *p, unsigned i, int leaf, unsigned *off, size_t *ksize, uint64_t *dsize,
                    unsigned *flags, uint64_t *child)
{
    *off = get_le16(p + PAGEHDRSZ + 2 * i);
    const unsigned char *n = p + *off;
    uint64_t lo = get_le16(n), hi = get_le16(n + 2), fl = get_le16(n + 4);
    *ksize = get_le16(n + 6);
    *flags = leaf ? (unsigned)fl : 0;
    *dsize = lo | hi << 16;
    *child = lo | hi << 16 | fl << 32;
}

/* page_check checks the header, slots and nodes of page pgno in p (not its
 * keys' order, nor what its nodes point at). Returns the node count, or -1
 * with w->why. */
static int page_check(walk *w, const unsigned char *p, uint64_t pgno, int leaf)
{
    pg_file *f = w->f;
    const char *name = w->t->name;
    if (get_le64(p) != pgno)
        return fault(w->why, w->why_len, "%s: page %" PRIu64 " names itself page %" PRIu64, name, pgno, get_le64(p));
    unsigned flags = pg_page_flags(p), lower = get_le16(p + 12), upper = get_le16(p + 14);
    if (flags != (leaf ? PG_P_LEAF : PG_P_BRANCH))
        return fault(w->why, w->why_len, "%s: page %" PRIu64 " has flags 0x%x where a %s page belongs", name, pgno, flags,
                     leaf ? "leaf" : "branch");
    if (lower < PAGEHDRSZ + 2 || (lower & 1) || lower > upper || upper > f->psize)
        return fault(w->why, w->why_len, "%s: page %" PRIu64 " has bounds %u..%u", name, pgno, lower, upper);
    unsigned n = (lower - PAGEHDRSZ) / 2;
    slot *s = grow_array(w->slots, &w->slots_cap, n, sizeof *s, 64);
    if (!s)
        return fault(w->why, w->why_len, "out of memory checking %s", name);
    w->slots = s;
    for (unsigned i = 0; i < n; i++) {
        unsigned off, fl;
        size_t ksize;
        uint64_t dsize, child;
        node_at(p, i, leaf, &off, &ksize, &dsize, &fl, &child);
        if (off < upper || off > f->psize - NODESIZE)
            return fault(w->why, w->why_len, "%s: page %" PRIu64 " slot %u points at %u, outside %u..%u", name, pgno,
                         i, off, upper, f->psize);
        uint64_t size = NODESIZE + ksize + (leaf ? (fl & F_BIGDATA ? 8 : dsize) : 0);
        size += size & 1;
        if (size > f->psize - off)
            return fault(w->why, w->why_len, "%s: page %" PRIu64 " node %u (%" PRIu64 " bytes at %u) runs past the page",
                         name, pgno, i, size, off);
        s[i] = (slot){(uint16_t)off, (uint16_t)size, (uint16_t)i};
    }
    qsort(s, n, sizeof *s, slot_cmp);
    unsigned at = upper;
    for (unsigned i = 0; i < n; i++) {
        if (s[i].off != at)
            return fault(w->why, w->why_len, "%s: page %" PRIu64 " nodes do not tile it (a node at %u, %u expected)",
                         name, pgno, s[i].off, at);
        at += s[i].size;
    }
    if (at != f->psize)
        return fault(w->why, w->why_len, "%s: page %" PRIu64 " nodes end at %u, not at the page's end", name, pgno, at);
    return (int)n;
}

/* key_check checks a key's size for the tree. */
static int key_ok(const pg_tree *t, const unsigned char *k, size_t len)
{
    if (len == 1 && k[0] == 0)
        return 1; /* an anchor (store_int.h) */
    if (t->keys == PG_KEYS_INTEGER)
        return len == 8;
    return len >= 1 && len <= PG_MAX_KEY && (!t->key_len || len == t->key_len);
}

/* overflow checks the overflow pages of a large value of size bytes at
 * pgno, marks them (claim: a walk; carving only reads), and reads the value
 * into f->bigval when asked. */
static int overflow(walk *w, uint64_t from, uint64_t pgno, uint64_t size, int read, int claim)
{
    pg_file *f = w->f;
    unsigned char *p = f->buf + (size_t)PG_MAX_DEPTH * f->psize;
    uint64_t pages = ovpages(size, f->psize);
    if (pgno < 2 || pgno > f->last_pg || pages > f->last_pg - pgno + 1)
        return fault(w->why, w->why_len, "%s: page %" PRIu64 " points at %" PRIu64 " overflow page(s) from %" PRIu64
                     ", outside the file's %" PRIu64, w->t->name, from, pages, pgno, f->last_pg + 1);
    if (pg_read(f, pgno, p, w->why, w->why_len) != 0)
        return -1;
    uint64_t counted = get_le32(p + 12); /* (at least pages: a value shrunk in place keeps its pages) */
    if (get_le64(p) != pgno || pg_page_flags(p) != PG_P_OVERFLOW || counted < pages || counted > f->last_pg - pgno + 1)
        return fault(w->why, w->why_len, "%s: overflow page %" PRIu64 " (from page %" PRIu64 ") has a wrong header",
                     w->t->name, pgno, from);
    pages = counted;
    for (uint64_t i = 0; claim && i < pages; i++)
        if (pg_seen(f, pgno + i)) {
            f->conflict |= (f->free[(pgno + i) >> 3] >> ((pgno + i) & 7)) & 1;
            return fault(w->why, w->why_len, "%s: overflow page %" PRIu64 " is reached twice", w->t->name, pgno + i);
        }
    for (uint64_t i = 0; claim && i < pages; i++)
        pg_mark(f, pgno + i);
    w->overflow += pages;
    if (!read)
        return 0;
    unsigned char *b = grow_array(f->bigval, &f->bigval_cap, (size_t)size, 1, 4096);
    if (!b)
        return fault(w->why, w->why_len, "out of memory reading a value of %" PRIu64 " bytes", size);
    f->bigval = b;
    int e = read_at(f, b, (size_t)size, pgno * f->psize + PAGEHDRSZ);
    return e ? fault(w->why, w->why_len, "overflow page %" PRIu64 " cannot be read: %s", pgno, strerror(e)) : 0;
}

static int visit_nodes(walk *w, const unsigned char *p, uint64_t pgno, unsigned depth, int n, const unsigned char *lo,
                       size_t lo_len, const unsigned char *hi, size_t hi_len);

/* visit checks page pgno at depth (1: the root) and what it points at;
 * every key in it must be in [lo, hi) when given. */
static int visit(walk *w, uint64_t pgno, unsigned depth, const unsigned char *lo, size_t lo_len,
                 const unsigned char *hi, size_t hi_len)
{
    pg_file *f = w->f;
    const pg_tree *t = w->t;
    unsigned char *p = f->buf + (size_t)(depth - 1) * f->psize;
    int leaf = depth == t->db.depth;
    if (pgno < 2 || pgno > f->last_pg)
        return fault(w->why, w->why_len, "%s: a page number %" PRIu64 " outside the file's %" PRIu64 " pages", t->name,
                     pgno, f->last_pg + 1);
    if (pg_seen(f, pgno)) {
        f->conflict |= (f->free[pgno >> 3] >> (pgno & 7)) & 1;
        return fault(w->why, w->why_len, "%s: page %" PRIu64 " is reached twice", t->name, pgno);
    }
    if (pg_read(f, pgno, p, w->why, w->why_len) != 0)
        return -1;
    int n = page_check(w, p, pgno, leaf);
    if (n < 0)
        return -1;
    pg_mark(f, pgno);
    int rc = visit_nodes(w, p, pgno, depth, n, lo, lo_len, hi, hi_len);
    if (rc != 0) /* a fault in it: not reached, as far as salvage's carving is concerned */
        f->seen[pgno >> 3] &= (unsigned char)~(1u << (pgno & 7));
    return rc;
}

/* visit_nodes checks the n nodes of page pgno (in p, at depth) and what
 * they point at, as visit says. */
static int visit_nodes(walk *w, const unsigned char *p, uint64_t pgno, unsigned depth, int n, const unsigned char *lo,
                       size_t lo_len, const unsigned char *hi, size_t hi_len)
{
    pg_file *f = w->f;
    const pg_tree *t = w->t;
    int leaf = depth == t->db.depth;
    const unsigned char *prev = NULL;
    size_t prev_len = 0;
    for (int i = 0; i < n; i++) {
        unsigned off, fl;
        size_t ksize;
        uint64_t dsize, child;
        node_at(p, (unsigned)i, leaf, &off, &ksize, &dsize, &fl, &child);
        const unsigned char *key = p + off + NODESIZE;
        if (leaf || i > 0) { /* a branch's slot 0 has no key that counts */
            if (!key_ok(t, key, ksize))
                return fault(w->why, w->why_len, "%s: page %" PRIu64 " node %d has a key of %zu bytes", t->name, pgno, i,
                             ksize);
            if ((prev && key_cmp(t->keys, prev, prev_len, key, ksize) >= 0) ||
                (lo && key_cmp(t->keys, key, ksize, lo, lo_len) < 0) ||
                (hi && key_cmp(t->keys, key, ksize, hi, hi_len) >= 0))
                return fault(w->why, w->why_len, "%s: page %" PRIu64 " node %d: its key is out of order", t->name, pgno,
                             i);
            prev = key;
            prev_len = ksize;
        }
        if (!leaf)
            continue;
        unsigned want = t->subdata ? F_SUBDATA : 0;
        if (fl != want && fl != F_BIGDATA)
            return fault(w->why, w->why_len, "%s: page %" PRIu64 " node %d has flags 0x%x", t->name, pgno, i, fl);
        if (t->subdata && fl != F_BIGDATA && dsize != PG_DB_BYTES)
            return fault(w->why, w->why_len, "%s: page %" PRIu64 " node %d holds a value of %" PRIu64 " bytes", t->name,
                         pgno, i, dsize);
        const unsigned char *val = key + ksize;
        if (fl == F_BIGDATA) {
            if (overflow(w, pgno, get_le64(val), dsize, w->fn != NULL, 1) != 0)
                return -1;
            val = f->bigval;
        }
        w->entries++;
        int rc = w->fn ? w->fn(w->ctx, key, ksize, val, (size_t)dsize) : 0;
        if (rc)
            return rc;
    }
    if (leaf) {
        w->leaf++;
        return 0;
    }
    w->branch++;
    for (int i = 0; i < n; i++) {
        unsigned off, fl, noff;
        size_t ksize, nksize;
        uint64_t dsize, child, ndsize, nchild;
        node_at(p, (unsigned)i, 0, &off, &ksize, &dsize, &fl, &child);
        const unsigned char *clo = i ? p + off + NODESIZE : lo, *chi = hi;
        size_t clo_len = i ? ksize : lo_len, chi_len = hi_len;
        if (i + 1 < n) {
            node_at(p, (unsigned)i + 1, 0, &noff, &nksize, &ndsize, &fl, &nchild);
            chi = p + noff + NODESIZE;
            chi_len = nksize;
        }
        int rc = visit(w, child, depth + 1, clo, clo_len, chi, chi_len);
        if (rc)
            return rc;
    }
    return 0;
}

int pg_walk(pg_file *f, const pg_tree *t, pg_leaf_fn fn, void *ctx, char *why, size_t why_len)
{
    walk w = {.f = f, .t = t, .fn = fn, .ctx = ctx, .why = why, .why_len = why_len};
    const pg_db *db = &t->db;
    int rc = 0;
    if (db->root == PG_INVALID) {
        if (db->depth || db->entries || db->branch_pages || db->leaf_pages || db->overflow_pages)
            rc = fault(why, why_len, "%s: an empty tree with counts", t->name);
    } else if (db->depth < 1 || db->depth > PG_MAX_DEPTH) {
        rc = fault(why, why_len, "%s: a depth of %u", t->name, db->depth);
    } else {
        rc = visit(&w, db->root, 1, NULL, 0, NULL, 0);
        if (rc == 0 && (w.branch != db->branch_pages || w.leaf != db->leaf_pages ||
                        w.overflow != db->overflow_pages || w.entries != db->entries))
            rc = fault(why, why_len, "%s: holds %" PRIu64 "/%" PRIu64 "/%" PRIu64 " pages and %" PRIu64
                       " entries; its record says %" PRIu64 "/%" PRIu64 "/%" PRIu64 " and %" PRIu64, t->name,
                       w.branch, w.leaf, w.overflow, w.entries, db->branch_pages, db->leaf_pages,
                       db->overflow_pages, db->entries);
    }
    free(w.slots);
    return rc;
}

/* ---- the free tree ---- */

typedef struct free_ctx {
    pg_file *f;
    char *why;
    size_t why_len;
} free_ctx;

static int free_list(void *ctx, const void *key, size_t key_len, const void *val, size_t len)
{
    free_ctx *c = ctx;
    pg_file *f = c->f;
    const unsigned char *p = val;
    (void)key, (void)key_len;
    if (len < 8 || len % 8 || get_le64(p) != len / 8 - 1)
        return fault(c->why, c->why_len, "the free list holds a record of %zu bytes", len);
    for (size_t i = 1; i < len / 8; i++) {
        uint64_t pgno = get_le64(p + 8 * i);
        if (pgno < 2 || pgno > f->last_pg)
            return fault(c->why, c->why_len, "the free list names page %" PRIu64 ", outside the file", pgno);
        if (pg_seen(f, pgno))
            return fault(c->why, c->why_len, "the free list names page %" PRIu64 ", which is in use (or named twice)",
                         pgno);
        pg_mark(f, pgno);
        f->free[pgno >> 3] |= (unsigned char)(1u << (pgno & 7));
    }
    return 0;
}

int pg_free_walk(pg_file *f, char *why, size_t why_len)
{
    pg_tree t = {.name = "the free list", .db = f->free_db, .keys = PG_KEYS_INTEGER, .key_len = 8};
    free_ctx c = {f, why, why_len};
    return pg_walk(f, &t, free_list, &c, why, why_len);
}

/* ---- carving (salvage) ---- */

int pg_carve(pg_file *f, uint64_t pgno, const unsigned char *buf, pg_leaf_fn fn, void *ctx)
{
    char why[160];
    for (unsigned off = PAGEHDRSZ; off + NODESIZE + 8 <= f->psize; off += 2) {
        const unsigned char *n = buf + off;
        uint64_t dsize = get_le16(n) | (uint64_t)get_le16(n + 2) << 16;
        unsigned fl = get_le16(n + 4), ksize = get_le16(n + 6);
        if ((ksize != 8 && ksize != 16) || (fl != 0 && fl != F_BIGDATA))
            continue;
        const unsigned char *key = n + NODESIZE, *val = key + ksize;
        if (fl == 0 && (dsize == 0 || off + NODESIZE + ksize + dsize > f->psize))
            continue;
        if (fl == F_BIGDATA) {
            if (off + NODESIZE + ksize + 8 > f->psize)
                continue;
            uint64_t at = get_le64(val), pages = ovpages(dsize, f->psize);
            walk w = {.f = f, .t = &(pg_tree){.name = "carving"}, .why = why, .why_len = sizeof why};
            if (at < 2 || at > f->last_pg || pages > f->last_pg - at + 1 || dsize > (64u << 20))
                continue;
            if (overflow(&w, pgno, at, dsize, 1, 0) != 0)
                continue;
            val = f->bigval;
        }
        int rc = fn(ctx, key, ksize, val, (size_t)dsize);
        if (rc)
            return rc;
    }
    return 0;
}
