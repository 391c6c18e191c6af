/*
 * conn.c - the consumer connection table.
 *
 * Two indexes over the same conns: a chained hash by endpoint and routing
 * id, for the handlers (O(1) per ACK/CREDIT), and a dense array for the dispatcher's
 * round-robin walk. Removal swaps the last element into the hole, so both
 * stay O(1). The table grows its buckets when the load passes 1; consumer
 * counts are small (hundreds), so nothing here is tuned further.
 */
#include "conn.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"

static uint64_t rid_hash(unsigned sock, const void *rid, size_t len)
{
    const uint8_t *p = rid;
    uint64_t h = (1469598103934665603ULL ^ sock) * 1099511628211ULL; /* FNV-1a, the endpoint first */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

int conn_table_init(conn_table *t)
{
    memset(t, 0, sizeof *t);
    t->nbuckets = 64;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    return t->buckets ? SL_OK : SL_ENOMEM;
}

void conn_table_fini(conn_table *t)
{
    for (size_t i = 0; i < t->len; i++)
        free(t->all[i]);
    free(t->all);
    free(t->buckets);
    memset(t, 0, sizeof *t);
}

conn *conn_find(conn_table *t, unsigned sock, const void *rid, size_t rid_len)
{
    conn *c = t->buckets[rid_hash(sock, rid, rid_len) % t->nbuckets];
    for (; c; c = c->hnext)
        if (c->sock == sock && c->rid_len == rid_len && memcmp(c->rid, rid, rid_len) == 0)
            return c;
    return NULL;
}

static void rehash(conn_table *t)
{
    size_t n = t->nbuckets * 2;
    conn **b = calloc(n, sizeof *b);
    if (!b)
        return; /* keep the old buckets: slower, still correct */
    for (size_t i = 0; i < t->len; i++) {
        conn *c = t->all[i];
        size_t h = rid_hash(c->sock, c->rid, c->rid_len) % n;
        c->hnext = b[h];
        b[h] = c;
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

conn *conn_require(conn_table *t, unsigned sock, const void *rid, size_t rid_len, uint32_t all_mask)
{
    if (rid_len == 0 || rid_len > CONN_MAX_RID)
        return NULL;
    conn *c = conn_find(t, sock, rid, rid_len);
    if (c)
        return c;
    conn **all = grow_array(t->all, &t->cap, t->len + 1, sizeof *all, 16);
    if (!all)
        return NULL;
    t->all = all;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    memcpy(c->rid, rid, rid_len);
    c->rid_len = (uint8_t)rid_len;
    c->sock = (uint8_t)sock;
    c->fd = -1;
    c->levels_mask = c->allowed_mask = all_mask;
    c->slot = t->len;
    t->all[t->len++] = c;
    size_t h = rid_hash(sock, rid, rid_len) % t->nbuckets;
    c->hnext = t->buckets[h];
    t->buckets[h] = c;
    if (t->len > t->nbuckets)
        rehash(t);
    return c;
}

void conn_remove(conn_table *t, conn *c)
{
    SL_ASSERT(c->leases == NULL && c->nleases == 0);
    conn **pp = &t->buckets[rid_hash(c->sock, c->rid, c->rid_len) % t->nbuckets];
    while (*pp != c)
        pp = &(*pp)->hnext;
    *pp = c->hnext;
    conn *last = t->all[--t->len];
    t->all[c->slot] = last;
    last->slot = c->slot;
    free(c);
}
