/*
 * store_pages.h - LMDB's data file read without LMDB: its meta pages, and
 * the walk of one tree that checks every page before anything believes it
 * (store_pages.c). For the store's own files: the checks at open
 * (store_check.c) and salvage (store_salvage.c).
 *
 * The format is liblmdb 0.9's (the one Debian 12 ships, 0.9.24) on a 64-bit
 * little-endian machine, MDB_DEVEL off: 8-byte page numbers, 16-byte page
 * headers, 8-byte node headers. It is written out in store_pages.c.
 */
#ifndef SLUICE_STORE_PAGES_H
#define SLUICE_STORE_PAGES_H

#include <stddef.h>
#include <stdint.h>

#define PG_INVALID UINT64_MAX    /* the root of an empty tree */
#define PG_MAX_DEPTH 32          /* LMDB's CURSOR_STACK */
#define PG_MAX_KEY 511           /* LMDB's MDB_MAXKEYSIZE */
#define PG_UNWRITTEN_MAX (1u << 17) /* LMDB's MDB_IDL_UM_MAX: most pages one transaction holds dirty */
#define PG_META_LAST_PG 136u     /* where a meta page holds LMDB's last page number (mm_last_pg) */

/* One tree's record (LMDB's MDB_db): in a meta page for the two core trees,
 * as a leaf value of the main tree for a named one. */
typedef struct pg_db {
    uint32_t pad;
    uint16_t flags, depth;
    uint64_t branch_pages, leaf_pages, overflow_pages, entries, root;
} pg_db;

#define PG_DB_BYTES 48

/* An open data file. */
typedef struct pg_file {
    int fd;
    uint64_t file_bytes;
    uint32_t psize;
    uint64_t last_pg, txnid;     /* of the meta page LMDB would use */
    pg_db free_db, main_db;
    unsigned char *buf;          /* PG_MAX_DEPTH + 2 pages: one per level of a walk, an overflow head, a spare */
    unsigned char *seen;         /* a bit per page 0..last_pg: reached by a walk or the free list */
    unsigned char *free;         /* a bit per page: named by the free list (pg_free_walk) */
    int conflict;                /* a walk reached a page the free list names */
    unsigned char *bigval;       /* an overflow value being read (salvage) */
    size_t bigval_cap;
} pg_file;

/* pg_db_decode reads an MDB_db record from p[0..PG_DB_BYTES). */
void pg_db_decode(const unsigned char *p, pg_db *db);

/* pg_open opens the data file at path read-only and reads its two meta
 * pages as LMDB does (each must carry LMDB's flags, magic and version; the
 * one with the larger transaction id is in use). Returns 0, or -1 with why
 * (a sentence) when the file cannot be read or a meta page is not LMDB's. */
int pg_open(pg_file *f, const char *path, char *why, size_t why_len);

/* pg_open_raw opens the data file at path read-only as pages of psize
 * bytes, its meta pages not believed: no tree is known (both roots empty),
 * and every page up to the file's end counts as in use. For salvage, when
 * pg_open refuses the meta pages. 0, or -1 with why. */
int pg_open_raw(pg_file *f, const char *path, uint32_t psize, char *why, size_t why_len);

/* pg_close closes the file and frees f's buffers. Accepts a zeroed f. */
void pg_close(pg_file *f);

/* pg_read reads page pgno into buf (psize bytes). 0, or -1 with why. */
int pg_read(pg_file *f, uint64_t pgno, unsigned char *buf, char *why, size_t why_len);

/* pg_seen and pg_mark test and set page pgno's bit (pgno <= last_pg). */
int pg_seen(const pg_file *f, uint64_t pgno);
void pg_mark(pg_file *f, uint64_t pgno);

/* How keys of a tree compare and how long they may be. */
typedef enum pg_keys {
    PG_KEYS_BYTES,   /* memcmp, then the shorter first (LMDB's default) */
    PG_KEYS_INTEGER, /* 8-byte native integers (MDB_INTEGERKEY: the free tree) */
} pg_keys;

typedef struct pg_tree {
    const char *name;   /* for why */
    pg_db db;
    pg_keys keys;
    size_t key_len;     /* every key's length, or 0: any; a 1-byte zero key (an anchor) is allowed too */
    int subdata;        /* the main tree: leaves are named trees (F_SUBDATA) */
} pg_tree;

/* pg_leaf_fn is called for each leaf node in key order: its key, and its
 * value (read from its overflow pages for a large one), valid during the
 * call. A non-zero return stops the walk and is pg_walk's. */
typedef int (*pg_leaf_fn)(void *ctx, const void *key, size_t key_len, const void *val, size_t val_len);

/* pg_walk walks tree t from its root, checking every page it reaches
 * before it reads further (see store_pages.c for the checks), marks each
 * page it reaches in f->seen, and calls fn (may be NULL: overflow values are
 * then not read, only their first page's header checked) for every leaf
 * node. Returns 0 when the whole tree passed, -1 with why naming the first
 * fault and its page, or fn's non-zero return. O(pages of the tree). */
int pg_walk(pg_file *f, const pg_tree *t, pg_leaf_fn fn, void *ctx, char *why, size_t why_len);

/* pg_free_walk walks the free tree (LMDB's list of pages free for reuse) as
 * pg_walk does and marks every page it lists (in f->seen and f->free),
 * checking that each lies within the file and was not reached already. A
 * later walk that reaches a listed page fails and sets f->conflict: the
 * free list or that tree is wrong, and LMDB would hand the page out again.
 * 0, or -1 with why. */
int pg_free_walk(pg_file *f, char *why, size_t why_len);

/* A node found by pg_carve. */
typedef struct pg_node {
    const unsigned char *key;
    size_t key_len;
    const unsigned char *val;    /* in the page, or f->bigval for a large one */
    size_t val_len;
} pg_node;

/* pg_carve calls fn for every node-shaped run of bytes in the leaf page buf
 * (page pgno), found by its slots when they hold, else by trying every even
 * offset: a key of key_len bytes (0: 8 or 16), a value within the page or
 * a large one whose overflow pages check out. Nothing is believed: the
 * caller checks each candidate (a record's checksum covers its key and
 * bytes). Returns fn's first non-zero return, or 0. */
int pg_carve(pg_file *f, uint64_t pgno, const unsigned char *buf, pg_leaf_fn fn, void *ctx);

/* pg_page_flags returns the flags of the page in buf. */
unsigned pg_page_flags(const unsigned char *buf);

#define PG_P_BRANCH   0x01
#define PG_P_LEAF     0x02
#define PG_P_OVERFLOW 0x04
#define PG_P_META     0x08

#endif /* SLUICE_STORE_PAGES_H */
