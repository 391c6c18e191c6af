/*
 * store_map.c - the map's size and how much of it holds data: the figures
 * admission and the map growth in cron.c work from (room.c turns them into
 * room), and the growth itself.
 *
 * It owns no state of its own: it reads and sets fields of the store
 * (used_bytes, page_bytes, txn_added_bytes, the environment's map size)
 * that store.c opens and the pass's writes (store_msg.c) update.
 *
 * Invariants:
 *   - used_bytes is what the last store_measure found (0 before the first:
 *     the high-water mark stands in), plus what appends have counted since;
 *     it is an estimate that only a measure corrects, never a promise.
 *   - The map grows only between transactions (store_grow refuses with
 *     SL_ESTATE while one is open, as LMDB requires), and never shrinks.
 *
 * Costs: store_measure opens a read transaction and walks LMDB's free list
 * (O(free list records)); the other figures are one mdb_env_info or a field.
 */
#include "store.h"
#include "store_backup.h"

#include <inttypes.h>
#include <lmdb.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "store_int.h"

uint64_t store_used_bytes(store *s)
{
    if (s->used_bytes)
        return s->used_bytes;
    MDB_envinfo info; /* before the first measure: the high-water mark */
    return mdb_env_info(s->env, &info) == MDB_SUCCESS ? (info.me_last_pgno + 1) * (uint64_t)s->page_bytes : 0;
}

/* LMDB keeps freed pages in its free database (dbi 0): each record is a list
 * of page numbers whose first word is its length. The high-water mark minus
 * those pages is what the data really occupies; deletions lower it, so
 * admission resumes as consumers drain. The pages the last commit freed are
 * not free yet: LMDB reuses a commit's freed pages only from the commit
 * after the next (without reader slots it assumes the snapshot before the
 * last may still be read), so they count as used (held_bytes) until one
 * more commit; cron asks for that commit when they are many and room is
 * short. */
int store_measure(store *s)
{
    MDB_txn *rt;
    MDB_cursor *cur;
    MDB_envinfo info;
    MDB_val k, v;
    uint64_t free_pages = 0, held_pages = 0;
    if (mdb_env_info(s->env, &info) != MDB_SUCCESS)
        return SL_EIO;
    /* a read transaction (a write one may not open a cursor on the free
     * list): it sees the last commit; what the open write transaction has
     * appended is added (what it deleted is not yet free) */
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &rt) != MDB_SUCCESS)
        return SL_EIO;
    if (mdb_cursor_open(rt, 0, &cur) == MDB_SUCCESS) {
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
            if (v.mv_size >= sizeof(size_t) && k.mv_size == sizeof(size_t)) {
                size_t txnid, n;
                memcpy(&txnid, k.mv_data, sizeof txnid);
                memcpy(&n, v.mv_data, sizeof n);
                if (txnid >= info.me_last_txnid)
                    held_pages += n; /* freed by the last commit: not reusable before the next */
                else
                    free_pages += n;
            }
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(rt);
    uint64_t pages = info.me_last_pgno + 1;
    s->used_bytes = (pages > free_pages ? pages - free_pages : 1) * (uint64_t)s->page_bytes + s->txn_added_bytes;
    s->held_bytes = held_pages * (uint64_t)s->page_bytes;
    return SL_OK;
}

uint64_t store_held_bytes(const store *s)
{
    return s->held_bytes;
}

uint64_t store_file_bytes(store *s)
{
    MDB_envinfo info;
    return mdb_env_info(s->env, &info) == MDB_SUCCESS ? (info.me_last_pgno + 1) * (uint64_t)s->page_bytes : 0;
}

uint64_t store_file_ahead_bytes(store *s)
{
    mdb_filehandle_t fd;
    struct stat st;
    if (mdb_env_get_fd(s->env, &fd) != MDB_SUCCESS || fstat(fd, &st) != 0)
        return 0;
    uint64_t lmdb = store_file_bytes(s);
    return (uint64_t)st.st_size > lmdb ? (uint64_t)st.st_size - lmdb : 0;
}

size_t store_page_bytes(const store *s)
{
    return s->page_bytes;
}

uint64_t store_txn_added_bytes(const store *s)
{
    return s->txn_added_bytes;
}

uint64_t store_map_bytes(store *s)
{
    MDB_envinfo info;
    return mdb_env_info(s->env, &info) == MDB_SUCCESS ? info.me_mapsize : 0;
}

int store_grow(store *s, uint64_t map_bytes)
{
    if (s->txn || store_copying(s))
        return SL_ESTATE; /* only between transactions, and not under a backup copy's reads */
    int rc = mdb_env_set_mapsize(s->env, map_bytes);
    if (rc != MDB_SUCCESS)
        return store_fail(s, rc, "grow the map to %" PRIu64 " bytes", map_bytes);
    log_info("store", "map grown to %" PRIu64 " MiB", map_bytes >> 20);
    return SL_OK;
}
