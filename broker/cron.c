/*
 * cron.c - what runs when. Every timer of the broker is here; the loop calls
 * cron_tick once per pass (after handling input, before dispatch) and sleeps
 * until cron_next_wake. Times are b->mono_ns (timers) and b->wall_ns (what
 * is stored), set by the loop.
 *
 *   every pass       leases whose time ran out end (up to 10,000 a pass);
 *                    delayed messages that are due return to the head of
 *                    their level (up to 10,000); the meter's additive
 *                    increase (meter_tick), and the throttled tags'
 *                    (settle_tag_tick: a step or a drop when due)
 *   every pass       past --dead-max-messages, drop up to 1,000 dead
 *                    letters, oldest first (dead.c); with a shared sink, coord's I/O
 *                    and the granted rate handed to the meter (TTL/3: a
 *                    renewal asking for the slices this broker could use)
 *   every second     forget up to 1,000 idempotency keys whose window ended;
 *                    bury up to 1,000 messages whose time to live ran out;
 *                    look at up to 10,000 dead letters for --dead-max-age;
 *                    delete the pools idle and unconfigured for
 *                    --pool-reap-ms (poolend.c)
 *   every 250 ms     each consumer's pacing share of the sink (member.c)
 *   every 250 ms     sample arrival and dispatch rates per level and each
 *                    pool's load; an autoscaled pool that changes size is
 *                    told and persisted
 *   heartbeat_ms     PING every connection
 *   WATCHDOG_USEC/2  WATCHDOG=1 to the service manager (notify.c), with a
 *                    wake of its own; every 5 s a STATUS line. Not while a
 *                    commit has been out longer than WATCHDOG_USEC/2: a
 *                    writer stuck in a flush confirms nothing, so the
 *                    manager is left to restart the broker
 *   every second     publish the HTTP server's snapshot (with --http), riding
 *                    on the other wakes (the loop wakes at least once a second)
 *   between commits  recount the map's use (every 100 ms) and grow it at 75 %
 *                    (after the writer's commit ended, none being out); after
 *                    a commit refused for want of space, recount and double
 *                    the map at once (up to --map-max-mb, if the disk has room)
 *   while a commit is out (store_committing): only what writes nothing runs
 *                    (the meter and the throttled tags, heartbeats, the watchdog, the snapshot, coord);
 *                    lease expiry, delayed releases and the sweeps wait for
 *                    the commit's end, which wakes the loop
 *   every pass       a backup (backup.c): its copy starts once its
 *                    checkpoint has ended, and its end is noted; every
 *                    10 ms while one runs. While the copy reads, LMDB
 *                    commits wait (store_backup.c): checkpoints are not
 *                    due, and a commit that could only be one is held
 *   ack_flush_ms     after the oldest uncommitted write, a commit is due
 *                    (cron_commit_due), even if no reply waits for it; after
 *                    a commit refused for want of space that no reply
 *                    waited for, not before a back-off (doubling per such
 *                    refusal up to 1 s; only a waiting reply makes one due)
 *
 * cron_next_wake is the earliest of: the next heartbeat, the watchdog ping, the meter's
 * (dispatch held back by a bucket, a pause, a breaker; the additive
 * increase), the throttled tags' (a step of a cut tag bucket, an entry to
 * forget), coord's (a renewal, a grant's expiry, a reply), the ack flush,
 * the first lease deadline and the first delayed message; at once while
 * retention is over --dead-max-messages. The sweeps
 * ride on those wakes (they are not worth a wake of
 * their own).
 *
 * Costs: per pass O(expired leases x log leases + due delayed + levels);
 * per sweep O(keys and entries dropped x log n); per sample O(levels x pools).
 */
#include "cron.h"

#include <sys/statvfs.h>

#include "backup.h"
#include "dead.h"
#include "coord.h"
#include "lease.h"
#include "log.h"
#include "member.h"
#include "meter.h"
#include "http.h"
#include "publish.h"
#include "net.h"
#include "notify.h"
#include "pool.h"
#include "room.h"
#include "poolend.h"
#include "queue.h"
#include "settings.h"
#include "settle.h"
#include "settle_tag.h"
#include "store.h"
#include "store_backup.h"
#include "units.h"

#define SWEEP_EVERY_NS (1000 * NS_PER_MS)
#define SAMPLE_EVERY_NS (250 * NS_PER_MS)
#define MEASURE_EVERY_NS (100 * NS_PER_MS)

/* expire_due moves messages whose time to live ran out to the dead letters,
 * wherever they wait: queued (even mid-queue) or delayed. One out with a
 * consumer is left to its delivery, and checked again if it comes back. */
static void expire_due(bk *b)
{
    static const char reason[] = "expired: its time to live ran out";
    queue_ttl_item it;
    for (unsigned n = 0; n < 1000 && queue_ttl_next(&b->q, b->wall_ns, &it) == SL_OK; n++) {
        if (it.where == QUEUE_TTL_DELAYED) {
            queue_expire_delayed(&b->q, it.loc, it.id, reason, b->wall_ns);
            continue;
        }
        if (it.where >= b->cfg.levels || lease_holds(&b->leases, it.where, it.loc))
            continue;
        if (queue_expire(&b->q, it.where, it.loc, it.id, reason, b->wall_ns) == SL_OK)
            log_debug("cron", "message %llu expired", (unsigned long long)it.id);
    }
}

/* sample refreshes arrival rates per level and each pool's measurements and
 * recommended size, every 250 ms; an autoscaled pool that changes size tells
 * its members and is persisted. */
static void sample(bk *b)
{
    if (b->sample_ns && b->mono_ns < b->sample_ns + SAMPLE_EVERY_NS)
        return;
    double dt = b->sample_ns ? (double)(b->mono_ns - b->sample_ns) / 1e9 : 0;
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        uint64_t enq = b->q.lv[l].counters.enqueued, disp = b->q.lv[l].counters.dispatched;
        if (dt > 0) {
            b->arrival_per_s[l] = 0.3 * (double)(enq - b->sample_enqueued[l]) / dt + 0.7 * b->arrival_per_s[l];
            /* deliveries returned uncharged (queue_untake) count down: never below 0 */
            uint64_t sent = disp > b->sample_dispatched[l] ? disp - b->sample_dispatched[l] : 0;
            b->dispatch_per_s[l] = 0.3 * (double)sent / dt + 0.7 * b->dispatch_per_s[l];
        }
        b->sample_enqueued[l] = enq;
        b->sample_dispatched[l] = disp;
    }
    b->sample_ns = b->mono_ns;
    for (unsigned i = 0; i < b->pools.n; i++) {
        pool *p = b->pools.v[i];
        double arrival = 0;
        uint64_t backlog = 0;
        for (unsigned l = 0; l < b->cfg.levels; l++)
            if ((p->levels_mask >> l) & 1) {
                arrival += b->arrival_per_s[l];
                backlog += queue_ready(&b->q, l);
            }
        if (pool_sample(p, b->mono_ns, arrival, backlog)) {
            log_info("cron", "autoscale: pool %s size now %u", p->name, p->size);
            settings_save_pool(b, p);
            member_pool_changed(b, p);
        }
    }
}

static void heartbeat(bk *b)
{
    proto_msg m;
    proto_init(&m, PROTO_PING);
    for (size_t i = 0; i < b->conns.len; i++) { /* to its connection only: one gone is dropped (member.c) */
        const conn *c = b->conns.all[i];
        net_queue_guarded(b->net, (net_sock)c->sock, c->rid, c->rid_len, &m, 0, NET_NOW, c->fd, c->fd_ino);
    }
    b->next_hb_ns = b->mono_ns + b->cfg.heartbeat_ms * NS_PER_MS;
}

/* notify_status tells the service manager the backlog, every 5 s. */
static void notify_status(bk *b)
{
    uint64_t ready = 0, leased = 0, delayed = 0, dead = 0;
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        ready += queue_ready(&b->q, l);
        leased += b->q.lv[l].leased;
        delayed += b->q.lv[l].delayed;
        dead += b->q.lv[l].dead;
    }
    notify_sendf(&b->notify, "STATUS=serving: %llu ready, %llu in flight, %llu delayed, %llu dead; %zu consumers",
                 (unsigned long long)ready, (unsigned long long)leased, (unsigned long long)delayed,
                 (unsigned long long)dead, member_consumers(b));
    b->notify.next_status_ns = b->mono_ns + 5 * NS_PER_S;
}

/* coord_want returns the slices this broker asks for: all of them while it
 * has consumers and a backlog, else what its recent dispatch rate needs
 * beyond the reserved rate, with a quarter to spare. */
static uint32_t coord_want(const bk *b)
{
    uint32_t all = coord_slices(b->coord);
    uint64_t slice = coord_slice_milli(b->coord);
    double rate = 0;
    int backlog = 0;
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        backlog |= queue_ready(&b->q, l) > 0;
        rate += b->dispatch_per_s[l];
    }
    if ((backlog && member_consumers(b) > 0) || !slice)
        return backlog ? all : 0;
    double extra = rate * 1250.0 - (double)b->meter.sink.reserved_milli; /* milli, +25 % */
    if (extra <= 0)
        return 0;
    double n = extra / (double)slice + 1;
    return n >= all ? all : (uint32_t)n;
}

/* commit_stalled tells whether the commit that is out has been out longer
 * than half the watchdog period: the writer may be stuck in a flush, and no
 * publish is confirmed meanwhile, so the watchdog is no longer fed (the
 * service manager restarts a broker that cannot commit). Counted and logged
 * once per commit. */
static int commit_stalled(bk *b)
{
    if (!b->commit_out_ns || !b->notify.watchdog_ns || b->mono_ns < b->commit_out_ns + b->notify.watchdog_ns / 2)
        return 0;
    if (!b->commit_stall_noted) {
        b->commit_stall_noted = 1;
        b->commit_stalls++;
        log_error("cron", "a commit has been out for %llu ms (the disk does not finish its flush): watchdog pings "
                  "stop until it ends", (unsigned long long)((b->mono_ns - b->commit_out_ns) / NS_PER_MS));
    }
    return 1;
}

void cron_tick(bk *b)
{
    if (b->coord) {
        b->coord_wake_ns = coord_tick(b->coord, b->mono_ns, coord_want(b));
        uint64_t granted = coord_unlimited(b->coord, b->mono_ns) ? METER_GRANT_UNLIMITED
                                                                  : coord_granted_milli(b->coord, b->mono_ns);
        if (meter_sink_lease(&b->meter, granted, b->mono_ns))
            log_debug("cron", "shared sink: now %llu.%03llu/s", (unsigned long long)b->meter.sink.effective_rate_milli / 1000,
                      (unsigned long long)b->meter.sink.effective_rate_milli % 1000);
    }
    if (!store_committing(b->st)) { /* what writes the store waits for the writer */
        settle_expire_leases(b, 10000);
        queue_release_due(&b->q, b->wall_ns, 10000);
        int sweep = b->mono_ns >= b->next_sweep_ns;
        if (sweep) {
            queue_idem_forget(&b->q, b->wall_ns, 1000);
            expire_due(b);
            poolend_reap(b);
            b->next_sweep_ns = b->mono_ns + SWEEP_EVERY_NS;
        }
        dead_retain(b, sweep);
        sample(b);
    }
    backup_tick(b); /* a backup's copy starts after its checkpoint, and its end is noted */
    meter_tick(&b->meter, b->mono_ns);
    settle_tag_tick(b); /* the throttled tags' buckets climb back */
    member_pace_shares(b, 0);
    if (b->mono_ns >= b->next_hb_ns)
        heartbeat(b);
    if (!commit_stalled(b))
        notify_watchdog_tick(&b->notify, b->mono_ns);
    if (b->mono_ns >= b->notify.next_status_ns)
        notify_status(b);
    if (b->http && b->mono_ns >= b->next_publish_ns) {
        publish_figures(b);
        b->next_publish_ns = b->mono_ns + HTTP_PUBLISH_NS;
    }
}

void cron_between_commits(bk *b, int nospace)
{
    int short_of_room = room_short(&b->room, b->st, b->mono_ns);
    if (nospace || short_of_room || b->mono_ns >= b->next_measure_ns) { /* exact now and then, estimated in between */
        b->next_measure_ns = b->mono_ns + MEASURE_EVERY_NS;
        store_measure(b->st); /* after a refusal: forgets what the refused appends added */
    }
    uint64_t map = store_map_bytes(b->st), used = store_used_bytes(b->st);
    /* what the last LMDB commit freed is reusable only after the next: when
     * room is short and that is much, the next commit comes at once (loop.c
     * starts it before anything else is handled) */
    if (!nospace && short_of_room && !store_held(b->st) &&
        store_held_bytes(b->st) > (uint64_t)ROOM_RESERVE_PAGES / 4 * store_page_bytes(b->st))
        b->checkpoint_wanted = 1;
    int wanted = b->room.grow_wanted; /* admission refused a publish the map could hold once grown */
    if (!nospace && !wanted && used < map / 4 * 3)
        return; /* under 75 %; a refused batch or publish did not fit in what is free, whatever the use */
    if (store_held(b->st)) { /* the map grows only between LMDB commits: ask the log for a checkpoint */
        b->checkpoint_wanted = !nospace; /* (after a checkpoint refused for want of space: its back-off) */
        return;
    }
    b->room.grow_wanted = 0;
    if (map >= b->cfg.map_max_bytes)
        return;
    uint64_t grown = map * 2 > b->cfg.map_max_bytes ? b->cfg.map_max_bytes : map * 2;
    struct statvfs fs;
    if (statvfs(b->cfg.data_dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < grown - used) {
        uint64_t held = 0; /* true on every pass until space is freed: once a minute */
        if (log_limit_pass(&b->no_room_log, b->mono_ns, 60 * NS_PER_S, &held))
            log_warn("cron", "the map is %llu%% used but the disk has no room to grow it; publishes stop at %u%%"
                     " (%llu such warnings held back)", (unsigned long long)(used * 100 / map),
                     b->cfg.soft_limit_pct, (unsigned long long)held);
        return;
    }
    store_grow(b->st, grown);
}

/* flush_at is when the open transaction's writes are due for a commit
 * although no reply waits for it: ack_flush_ms after the first, and not
 * before the back-off that follows a commit refused for want of space (a
 * refused batch of timers' writes would otherwise be tried again every
 * ack_flush_ms, each refusal logging and recounting). */
static uint64_t flush_at(const bk *b)
{
    uint64_t at = b->dirty_since_ns + b->cfg.ack_flush_ms * NS_PER_MS;
    return at < b->nospace_until_ns ? b->nospace_until_ns : at;
}

/* ckpt_wanted: an LMDB commit is wanted (b->checkpoint_wanted), and none
 * waits for a backup copy to end (store_backup.c: checkpoints wait then). */
static int ckpt_wanted(const bk *b)
{
    return b->checkpoint_wanted && !store_copying(b->st);
}

int cron_commit_due(bk *b)
{
    if (store_commit_held(b->st))
        return 0; /* it could only be an LMDB commit, and a backup copy reads: after the copy */
    if (store_checkpoint_due(b->st, b->mono_ns, ckpt_wanted(b)) || (ckpt_wanted(b) && !store_held(b->st)))
        return 1; /* an LMDB commit: the log's batches, or to reuse what the last one freed */
    if (!store_dirty(b->st))
        return net_queued(b->net, NET_AFTER_COMMIT) > 0;
    if (!b->dirty_since_ns)
        b->dirty_since_ns = b->mono_ns;
    return net_queued(b->net, NET_AFTER_COMMIT) > 0 || b->mono_ns >= flush_at(b);
}

uint64_t cron_next_wake(bk *b)
{
    uint64_t wake = b->next_hb_ns;
    uint64_t meter_ns = meter_next_ns(&b->meter); /* the next additive step */
    if (b->meter_wake_ns < wake)
        wake = b->meter_wake_ns;
    if (b->coord && b->coord_wake_ns < wake)
        wake = b->coord_wake_ns;
    if (b->ha && b->ha_wake_ns < wake) /* the lease's renewal and fence, the standby's timeout (loop.c ticks it) */
        wake = b->ha_wake_ns;
    if (meter_ns < wake)
        wake = meter_ns;
    if (settle_tag_next_ns(b) < wake)
        wake = settle_tag_next_ns(b);
    if (b->http && b->next_publish_ns < wake) /* the HTTP server's snapshot, once a second */
        wake = b->next_publish_ns;
    if (store_committing(b->st)) { /* the rest waits for the commit's end, which wakes the loop */
        uint64_t stall = b->commit_out_ns && b->notify.watchdog_ns ? b->commit_out_ns + b->notify.watchdog_ns / 2
                                                                    : UINT64_MAX;
        if (b->notify.next_ping_ns < wake && b->notify.next_ping_ns < stall && b->mono_ns < stall)
            wake = b->notify.next_ping_ns; /* a ping past the stall is withheld: no wake for it */
        return wake;
    }
    if (backup_next_wake(b) < wake)
        wake = backup_next_wake(b); /* a backup: its checkpoint, then its copy, looked at */
    if (!store_busy(b->st) && !store_commit_held(b->st)) { /* a log record's end wakes the loop for the next */
        uint64_t ckpt = ckpt_wanted(b) && !store_held(b->st) ? b->mono_ns
                                                             : store_checkpoint_at(b->st, ckpt_wanted(b));
        if (b->dirty_since_ns && flush_at(b) < wake)
            wake = flush_at(b);
        if (ckpt < wake)
            wake = ckpt;
    }
    if (dead_pending(b))
        wake = b->mono_ns; /* retention has more to drop */
    if (b->notify.next_ping_ns < wake)
        wake = b->notify.next_ping_ns;
    uint64_t lease_ns = lease_next_deadline(&b->leases);
    if (lease_ns < wake)
        wake = lease_ns;
    if (b->q.next_due_ns != TMR_NEVER) {
        uint64_t due = b->q.next_due_ns <= b->wall_ns ? b->mono_ns
                                                      : b->mono_ns + (b->q.next_due_ns - b->wall_ns);
        if (due < wake)
            wake = due;
    }
    return wake;
}
