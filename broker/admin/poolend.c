/*
 * poolend.c - pools end: `pool.delete`, and empty pools going away.
 *
 * Any consumer creates a pool by naming it in HELLO, and pools persist, so
 * without an end the table (--pool-max, at most 64) could fill for good and
 * no consumer could join a new pool. Two ends:
 *
 *   - pool.delete NAME: refused while the pool has members, unless forced;
 *     forced, each member is dropped as on BYE (deliveries back uncharged).
 *   - reaping: a pool that is idle (no members, nothing in flight) and
 *     unconfigured (size 0, not paused, autoscale off: nothing an operator
 *     set) is deleted once it has stayed so for --pool-reap-ms. A pool an
 *     operator sized, paused or autoscaled stays until deleted. "default"
 *     always stays.
 *
 * Invariant: a pool is freed only when no conn and no lease points at it
 * (members == 0 and inflight == 0, checked here). Deletion removes its
 * stored settings in the pass's transaction, so it is durable with the
 * pass's commit. Cost: cron calls poolend_reap every pass, O(pools) (at
 * most 64 comparisons); a forced delete is O(connections + their leases).
 */
#include "poolend.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "settle.h"
#include "store.h"
#include "units.h"

static int is_default(const pool *p)
{
    return strcmp(p->name, "default") == 0;
}

static int forget(bk *b, pool *p)
{
    char key[8 + PROTO_MAX_NAME];
    snprintf(key, sizeof key, "pool/%s", p->name);
    int rc = store_meta_del(b->st, key);
    if (rc == SL_OK)
        pool_remove(&b->pools, p);
    return rc;
}

int poolend_delete(bk *b, pool *p, int force, char *text, size_t text_len)
{
    if (is_default(p)) {
        snprintf(text, text_len, "the default pool cannot be deleted");
        return SL_EINVAL;
    }
    if (p->members && !force) {
        snprintf(text, text_len, "pool %s has %u member(s); stop them first, or force it (--force)", p->name,
                 p->members);
        return SL_ESTATE;
    }
    for (size_t i = b->conns.len; i-- > 0;) /* dropping removes from the dense array */
        if (i < b->conns.len && b->conns.all[i]->pool == p)
            settle_drop_conn(b, b->conns.all[i], SETTLE_END_LEFT);
    if (p->members || p->inflight) {
        snprintf(text, text_len, "pool %s still has %u delivery(ies) in flight; try again when they end",
                 p->name, p->inflight);
        return SL_ESTATE;
    }
    char name[PROTO_MAX_NAME + 1];
    memcpy(name, p->name, sizeof name);
    int rc = forget(b, p);
    if (rc != SL_OK) {
        snprintf(text, text_len, "%s", proto_strerror(rc));
        return rc;
    }
    log_info("pool", "pool %s deleted%s", name, force ? " (forced)" : "");
    return SL_OK;
}

void poolend_reap(bk *b)
{
    uint64_t grace_ns = (uint64_t)b->cfg.pool_reap_ms * NS_PER_MS;
    for (unsigned i = b->pools.n; i-- > 0;) {
        pool *p = b->pools.v[i];
        int idle = !p->members && !p->inflight && !p->size && !p->paused && !p->autoscale && !is_default(p);
        if (!idle) {
            p->empty_since_ns = 0;
            continue;
        }
        if (!p->empty_since_ns) {
            p->empty_since_ns = b->mono_ns ? b->mono_ns : 1;
            continue;
        }
        if (b->mono_ns - p->empty_since_ns < grace_ns)
            continue;
        char name[PROTO_MAX_NAME + 1];
        memcpy(name, p->name, sizeof name);
        if (forget(b, p) == SL_OK)
            log_info("pool", "pool %s removed: nobody has used it for %u ms and nothing about it was set", name,
                     b->cfg.pool_reap_ms);
    }
}
