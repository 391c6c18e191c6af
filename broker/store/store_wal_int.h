/*
 * store_wal_int.h - what the write-ahead log's two files share
 * (store_wal.c: the ring in use; store_wal_file.c: the file, replay).
 */
#ifndef SLUICE_STORE_WAL_INT_H
#define SLUICE_STORE_WAL_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "store_wal.h"

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
#define CKPT_BACKOFF_MIN_NS 100000000ull   /* 100 ms: batches go on into the log meanwhile */
#define CKPT_BACKOFF_MAX_NS 1000000000ull  /* 1 s */

struct store_wal {
    int fd;
    int dfd;                /* the same file opened O_DIRECT | O_DSYNC for records, once tried; -1: none */
    int direct_tried;       /* dfd was tried on this file (file_open resets it) */
    int buffered;           /* --wal-buffered: never O_DIRECT */
    unsigned char *dbuf;    /* a page-aligned copy of the record for dfd */
    size_t dbuf_cap;
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
    int last_gone;          /* the last note is a STORE_WAL_GONE one: no repeat merges with it */
    unsigned char *rec;     /* the sealed record, padded */
    size_t rec_len, rec_cap;
    uint64_t rec_pos, rec_waste;
    int built;              /* rec holds a built record not yet placed (store_wal_place) */
    uint64_t records, bytes, checkpoints;
};

/* pad rounds n up to whole pages: records never share a page. */
static inline uint64_t store_wal_pad(uint64_t n)
{
    return (n + WAL_PAGE - 1) / WAL_PAGE * WAL_PAGE;
}

/* store_wal_pwrite and store_wal_pread move len bytes at off, whole
 * (retrying short transfers and EINTR): 0 or an errno value (EIO for an
 * end of file). */
int store_wal_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int store_wal_pread(int fd, void *buf, size_t len, uint64_t off);

#endif /* SLUICE_STORE_WAL_INT_H */
