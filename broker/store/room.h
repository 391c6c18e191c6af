/*
 * room.h - whether the store has room for one more message: the map's room
 * and the disk's, with a reserve for what commits and acknowledgements need.
 */
#ifndef SLUICE_ROOM_H
#define SLUICE_ROOM_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The disk's free space as last read (statvfs of the data directory), and
 * the data file's size then, so that growth since is subtracted; and the
 * limits it checks against (room_init). */
typedef struct room_disk {
    const char *dir;        /* the data directory (statvfs) */
    unsigned soft_limit_pct; /* of the map, at most this used */
    uint64_t map_max_bytes; /* the most the map may grow to */
    uint64_t free_bytes;
    uint64_t file_bytes;
    uint64_t read_ns;       /* 0: never read */
    uint64_t measured_ns;   /* when a refusal last measured the map's use */
    int grow_wanted;        /* a publish did not fit in the map, which may grow: grow it at the next chance */
} room_disk;

/* ROOM_RESERVE_PAGES is what admission keeps free below the map's end and on
 * the disk for the next commits: the pages a commit copies before it frees
 * (the B-tree paths it touches, the free list, the meta), and the
 * acknowledgements that let consumers drain a full store. */
#define ROOM_RESERVE_PAGES 64

/* room_init sets the limits d checks against: the data directory dir (kept
 * as a pointer: it must outlive d), the map's soft limit in percent, and the
 * most the map may grow to. */
void room_init(room_disk *d, const char *dir, unsigned soft_limit_pct, uint64_t map_max_bytes);

/* room_check tells whether a message whose record is rec_bytes (plus
 * index_bytes for its idempotency key and expiry entries) fits: the map
 * below its soft limit and ROOM_RESERVE_PAGES from its end, and the disk
 * with room for the data file's growth. Freed pages in the file count as
 * room (LMDB reuses them); the disk only for growth. Returns SL_OK, or
 * SL_ENOSPC with the reason in text. Reads the disk's free space at most
 * every few milliseconds. */
int room_check(room_disk *d, store *st, uint64_t now_ns, size_t rec_bytes, size_t index_bytes, char *text, size_t text_len);

/* room_short tells whether room is short enough for the pages the last
 * commit freed to matter: the map half used, or less than 16 MiB free on the
 * disk. LMDB reuses those pages only after one more commit, so while room is
 * short cron measures after every commit and asks for that commit at once
 * when they are many (cron_between_commits). */
int room_short(room_disk *d, store *st, uint64_t now_ns);

#endif /* SLUICE_ROOM_H */
