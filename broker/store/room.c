/*
 * room.c - the store's room for one more message, as admission asks it
 * before every PUT.
 *
 * Three figures, in bytes:
 *
 *   used   the map's pages holding data: measured now and then (the pages
 *          ever used minus LMDB's free list, store_measure) and counted up
 *          by every append since, with LMDB's real footprint (a node in a
 *          leaf, or whole overflow pages for a large body)
 *   file   the data file: the pages ever used; it never shrinks, and its
 *          freed pages are reused before it grows
 *   disk   free space on the data directory's file system (statvfs), plus
 *          the zeros already written past the file's last page
 *          (store_extend.c: LMDB grows into them without taking more of
 *          the disk), read at most every ROOM_DISK_EVERY_NS and lowered by
 *          the file's growth since
 *
 * A message of need bytes is admitted when
 *
 *   used + need <= map * soft_limit_pct / 100
 *   used + need + reserve <= map                      (a tiny map)
 *   pass + need + reserve <= disk                     (a small disk)
 *   pass + need + 2 * reserve <= disk                 (the same, when the
 *                                                      file must grow:
 *                                                      used + need + reserve
 *                                                      > file)
 *
 * where reserve is ROOM_RESERVE_PAGES pages and pass what the open
 * transaction has appended. A commit copies the pages it changes before the
 * old ones are free, and the pages the last commit freed are not reused by
 * the next one, so a store filled to the last page would fail its next
 * commit (LMDB's MAP_FULL, or the disk's ENOSPC) and could not even take the
 * acknowledgements that drain it. Freed pages count as room in the map; on
 * the disk they count only so far: a large body needs a run of contiguous
 * free pages, and when the free list is fragmented LMDB puts it at the end
 * of the file, so the disk must hold the whole pass even when the file has
 * free pages. Growth the accounting foresees stops a reserve earlier than a
 * pass into the file's free pages does, so that once consumers drain, publishing resumes by itself
 * though the file never shrinks: in passes no larger than the disk's free
 * space less the reserve (until fragmentation has grown the file into it).
 *
 * LMDB reuses the pages a commit freed only from the commit after the next
 * (store_measure counts them as used until then). A drain can free most of
 * the map in one commit (with the write-ahead log, one checkpoint carries
 * every acknowledgement since the last): while room is short (room_short)
 * cron measures after every commit and, when those pages are many, has the
 * next commit made at once, before anything else is handled, so that a
 * refill right after a drain is admitted into room LMDB can really use, and
 * never meets MDB_MAP_FULL. For the file's growth they count as room (the
 * reserve covers the few left between two such commits).
 *
 * A publish that does not fit in a map that may still grow is refused and
 * asks cron to grow the map between the next commits (room.grow_wanted), at
 * once rather than at 75 % measured use: a body larger than a quarter of
 * the map would otherwise never fit.
 *
 * The measure is cron's, every 100 ms; a refusal measures first (at most
 * every ROOM_MEASURE_EVERY_NS), so that a publish right after a drain is not
 * refused on a stale figure.
 *
 * A publish is also refused while the write-ahead log is half used and its
 * last checkpoint failed (store_log_stuck): the disk is full, most likely,
 * and only the log holds what it confirmed since.
 *
 * Costs: O(1) per PUT; one statvfs per ROOM_DISK_EVERY_NS; O(free list) per
 * refusal, rate-limited, and per commit while room is short.
 */
#include "room.h"

#include <stdio.h>
#include <sys/statvfs.h>

#include "store.h"
#include "units.h"

#define ROOM_DISK_EVERY_NS    (10 * NS_PER_MS)
#define ROOM_MEASURE_EVERY_NS (10 * NS_PER_MS)
#define ROOM_SHORT_DISK_BYTES ((uint64_t)16 << 20)

/* disk_free returns the bytes the data file may still grow by on the disk:
 * the disk's free bytes and the zeros already written ahead of LMDB's use
 * (store_extend.c), as last read, less the file's growth since; read again
 * when older than ROOM_DISK_EVERY_NS. */
static uint64_t disk_free(room_disk *d, store *st, uint64_t now_ns, uint64_t file)
{
    if (!d->read_ns || now_ns >= d->read_ns + ROOM_DISK_EVERY_NS) {
        struct statvfs fs;
        if (statvfs(d->dir, &fs) != 0)
            return UINT64_MAX; /* cannot tell: the commit's own ENOSPC is the guard */
        d->free_bytes = (uint64_t)fs.f_bavail * fs.f_frsize + store_file_ahead_bytes(st);
        d->file_bytes = file;
        d->read_ns = now_ns ? now_ns : 1;
    }
    uint64_t grown = file > d->file_bytes ? file - d->file_bytes : 0;
    return d->free_bytes > grown ? d->free_bytes - grown : 0;
}

/* fits applies the three rules with the figures as they are. */
static int fits(room_disk *d, store *st, uint64_t now_ns, size_t rec_bytes, size_t index_bytes, char *text, size_t text_len)
{
    uint64_t map = store_map_bytes(st), used = store_used_bytes(st);
    uint64_t reserve = (uint64_t)ROOM_RESERVE_PAGES * store_page_bytes(st);
    uint64_t need = store_value_bytes(st, rec_bytes) + index_bytes;
    if (store_log_stuck(st)) {
        snprintf(text, text_len, "the write-ahead log is full and its last checkpoint into LMDB failed (the disk "
                 "is full?); retry later");
        return SL_ENOSPC;
    }
    if (used + need > map / 100 * d->soft_limit_pct || used + need + reserve > map) {
        if (map < d->map_max_bytes) { /* it may grow: cron grows it between commits, if the disk has room */
            d->grow_wanted = 1;
            snprintf(text, text_len, "storage is at its soft limit (%llu of %llu KiB used); the map grows if the "
                     "disk has room: retry", (unsigned long long)(used >> 10), (unsigned long long)(map >> 10));
        } else {
            snprintf(text, text_len, "storage is at its soft limit (%llu of %llu KiB used); retry after consumers "
                     "drain", (unsigned long long)(used >> 10), (unsigned long long)(map >> 10));
        }
        return SL_ENOSPC;
    }
    uint64_t file = store_file_bytes(st);
    uint64_t pass = store_txn_added_bytes(st) + need;
    /* the pages the last commit freed are taken after the next commit, which
     * comes at once when they are many (cron.c): for the file's growth they
     * are room, and the reserve covers the rest */
    uint64_t settled = used - (store_held_bytes(st) < used ? store_held_bytes(st) : 0);
    uint64_t keep = settled + need + reserve > file ? 2 * reserve : reserve; /* the file must grow: stop earlier */
    uint64_t free = disk_free(d, st, now_ns, file);
    if (free != UINT64_MAX && pass + keep > free) {
        snprintf(text, text_len, "the disk holding the data directory is full (%llu KiB free); retry after "
                 "consumers drain or space is freed", (unsigned long long)(free >> 10));
        return SL_ENOSPC;
    }
    return SL_OK;
}

void room_init(room_disk *d, const char *dir, unsigned soft_limit_pct, uint64_t map_max_bytes)
{
    d->dir = dir;
    d->soft_limit_pct = soft_limit_pct;
    d->map_max_bytes = map_max_bytes;
}

int room_short(room_disk *d, store *st, uint64_t now_ns)
{
    uint64_t map = store_map_bytes(st), used = store_used_bytes(st);
    return used >= map / 2 || disk_free(d, st, now_ns, store_file_bytes(st)) < ROOM_SHORT_DISK_BYTES;
}

int room_check(room_disk *d, store *st, uint64_t now_ns, size_t rec_bytes, size_t index_bytes, char *text, size_t text_len)
{
    int rc = fits(d, st, now_ns, rec_bytes, index_bytes, text, text_len);
    if (rc == SL_OK || (d->measured_ns && now_ns < d->measured_ns + ROOM_MEASURE_EVERY_NS))
        return rc;
    /* before refusing, count what consumers freed since the last measure */
    d->measured_ns = now_ns ? now_ns : 1;
    if (store_measure(st) != SL_OK)
        return rc;
    d->read_ns = 0;
    return fits(d, st, now_ns, rec_bytes, index_bytes, text, text_len);
}
