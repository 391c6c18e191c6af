/*
 * store_gone.c - acknowledged records of fair levels, deleted in key order
 * and in batches.
 *
 * Why. A level served fair by tag acknowledges its records in turn across
 * its tags, so each delete lands on a leaf page that no recent operation
 * touched: a descent that misses the caches, a page copied for the first
 * write of the transaction, a node moved inside a cold page. Deleting the
 * same records later, sorted, visits each page once for a run of its keys,
 * with a cursor that stays on the page from one key to the next. Draining
 * 1,000 tags, with the read-ahead of queue_fair_ahead.c, the loop's CPU per
 * fair message beyond a FIFO one fell from 24 to 9 clock ticks per 200,000
 * messages (broker/DESIGN.md, "Fair levels: read ahead, delete in batches").
 *
 * How. store_del of a fair level's record notes the delete in the open
 * batch of the write-ahead log at once (STORE_WAL_GONE: the batch's record
 * says "deleted", so what is confirmed after it is durable as before) and
 * keeps the key here. The keys are deleted from LMDB, sorted, when
 * STORE_GONE_BATCH of them wait, before every LMDB commit, and before any
 * read or write of a level other than the fair take's, the publish's and
 * this delete's own (store_txn_level; store_txn_lazy is those three). So
 * nothing reads a record that was acknowledged: a fair take reads at or
 * after its tenant's cursor, and every acknowledged key lies below it.
 *
 * When the transaction goes (a failed commit, a poisoned pass) the keys go
 * with it: the log's batches that noted them are replayed into the next
 * transaction, deletes included, and the rest were never confirmed.
 *
 * Costs: 16 bytes per waiting key, at most STORE_GONE_BATCH; a batch is a
 * sort and one cursor per level, a descent only where the next key is off
 * the cursor's page: 4.3-5.5 ms of the loop for 16,384 keys over 1,000
 * tags, about half that for a batch of 8,192. --level-max-bytes reads LMDB's pages, waiting keys included.
 */
#include <lmdb.h>
#include <stdlib.h>

#include "grow.h"
#include "log.h"
#include "store_int.h"

#define STORE_GONE_BATCH 8192

int store_gone_add(store *s, unsigned level, uint64_t key)
{
    struct store_gone *g = grow_array(s->gone, &s->gone_cap, s->ngone + 1, sizeof *g, 256);
    if (!g) /* no room to wait: delete now */
        return store_mdb_del(s, s->q[level], key);
    s->gone = g;
    g[s->ngone++] = (struct store_gone){key, level};
    unsigned char kb[8];
    MDB_val k;
    key_u64(&k, kb, key);
    store_wal_touch(s, s->q[level], kb, sizeof kb, STORE_WAL_GONE);
    s->dirty = 1;
    return s->ngone >= STORE_GONE_BATCH ? store_gone_apply(s) : SL_OK;
}

static int by_key(const void *a, const void *b)
{
    const struct store_gone *x = a, *y = b;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

int store_gone_apply(store *s)
{
    if (!s->ngone)
        return SL_OK;
    if (s->failed || !s->txn) { /* the transaction is lost: so are they (see above) */
        s->ngone = 0;
        return s->failed;
    }
    qsort(s->gone, s->ngone, sizeof *s->gone, by_key);
    MDB_cursor *cur = NULL;
    unsigned level = 0;
    int rc = MDB_SUCCESS;
    for (size_t i = 0; i < s->ngone && rc == MDB_SUCCESS; i++) {
        if (!cur || s->gone[i].level != level) {
            if (cur)
                mdb_cursor_close(cur);
            level = s->gone[i].level;
            if ((rc = mdb_cursor_open(s->txn, s->q[level], &cur)) != MDB_SUCCESS) {
                cur = NULL;
                break;
            }
        }
        unsigned char kb[8];
        MDB_val k, v;
        key_u64(&k, kb, s->gone[i].key);
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET); /* on the cursor's page: no descent */
        if (rc == MDB_SUCCESS)
            rc = mdb_cursor_del(cur, 0);
        else if (rc == MDB_NOTFOUND)
            rc = MDB_SUCCESS; /* gone already (expired in flight, say): nothing to do */
    }
    if (cur)
        mdb_cursor_close(cur);
    s->ngone = 0;
    return rc == MDB_SUCCESS ? SL_OK : store_fail(s, rc, "delete acknowledged records of q.%u", level);
}

int store_gone_flush(store *s)
{
    return s->ngone ? store_gone_apply(s) : SL_OK;
}

void store_gone_drop(store *s)
{
    s->ngone = 0;
}
