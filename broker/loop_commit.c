/*
 * loop_commit.c - the end of a commit, the writer's or one made on the
 * loop: its confirmations sent, or every one of them turned into the
 * error that says why (loop.c runs the passes around it).
 *
 * A commit that succeeded: its confirmations leave at once, before the
 * bookkeeping (the queue's view, settings, the map's measure, the deletes
 * of acknowledgements that waited), and sends that fail meanwhile are held
 * until after it (loop_hold_send_failed), since ending a consumer's leases
 * writes the store. The replies that waited for the next commit join the
 * queue of the one about to be made (net_promote), and a record's gather
 * is told (gather.c; for a record written on the loop, in the next pass,
 * with the producers that are back told apart by loop_back.c).
 *
 * A commit that failed: for want of space the batch (and, with the log,
 * the next one, whose record was lost with it) is refused with SL_ENOSPC
 * and a retry-after, and the broker goes on, backing off commits that no
 * publisher asked for; a level damaged under LMDB's reads is quarantined
 * and the batch refused with SL_ECORRUPT; any other failure refuses with
 * SL_EIO and stops the broker, since what reached the disk is unknown.
 *
 * Costs: one pass over the commit's replies; nothing else per message.
 */
#include "loop.h"
#include "loop_int.h"

#include <string.h>

#include "cron.h"
#include "gather.h"
#include "grow.h"
#include "hist.h"
#include "log.h"
#include "net.h"
#include "queue.h"
#include "settings.h"
#include "settle.h"
#include "store.h"
#include "units.h"

#define LOOP_NOSPACE_RETRY_MS 1000 /* the retry-after of a publish whose commit found no space */

void loop_hold_send_failed(void *ctx, unsigned sock, const uint8_t *rid, size_t rid_len, uint64_t token, int err)
{
    bk *b = ctx;
    loop_state *ls = b->loop;
    if (ls->nheld == ls->capheld && rid_len <= sizeof ls->held[0].rid) {
        held_fail *v = grow_array(ls->held, &ls->capheld, ls->nheld + 1, sizeof *v, 256);
        if (v)
            ls->held = v;
    }
    if (ls->nheld == ls->capheld || rid_len > sizeof ls->held[0].rid) {
        log_warn("loop", "cannot hold a failed send until the commit ends (out of memory, or a %zu-byte "
                 "routing id): its delivery is returned uncharged", rid_len);
        if (token) /* returns the delivery uncharged: writes nothing */
            settle_send_failed(ctx, sock, rid, rid_len, token, SL_EFULL);
        return;
    }
    held_fail *h = &ls->held[ls->nheld++];
    h->sock = sock;
    memcpy(h->rid, rid, rid_len);
    h->rid_len = rid_len;
    h->token = token;
    h->err = err;
}

/* commit_ended finishes a commit, the writer's or one made at once: the
 * histogram, and the pass's confirmations sent, or all turned into errors.
 * logged: it was a log record, whose refusal also lost what the next batch
 * had written meanwhile (its replies are refused too). Returns SL_OK or the
 * commit's error. */
int loop_commit_ended(bk *b, int rc, int wrote, uint64_t t0_ns, int logged)
{
    net_seal(b->net, 0); /* its replies, and the next batch's, are sorted out below */
    if (rc == SL_OK) /* durable: its confirmations leave before the bookkeeping (failures held until after it) */
        net_flush(b->net, NET_AFTER_COMMIT, loop_hold_send_failed, b);
    if (b->commit_stall_noted)
        log_warn("loop", "the stalled commit ended after %llu ms; watchdog pings resume",
                 (unsigned long long)((loop_now_mono() - b->commit_out_ns) / NS_PER_MS));
    b->commit_out_ns = 0;
    b->commit_stall_noted = 0;
    queue_commit_ended(&b->q, rc); /* a failed commit puts the view back */
    settings_commit_ended(b, rc);  /* and the settings it changed (all since the last durable batch) */
    if (rc == SL_OK || rc == SL_ENOSPC || rc == SL_ECORRUPT) { /* no transaction is open yet: measure, grow */
        cron_between_commits(b, rc == SL_ENOSPC); /* (at once after ENOSPC) */
        queue_deferred_apply(&b->q); /* the deletes of ACKs taken while it was out open the next one */
    }
    if (wrote && rc == SL_OK) {
        hist_add(&b->commit_hist, HIST_COMMIT, loop_now_mono() - t0_ns);
        b->commits++;
    }
    loop_state *ls = b->loop;
    for (size_t i = 0; i < ls->nheld; i++)
        settle_send_failed(b, ls->held[i].sock, ls->held[i].rid, ls->held[i].rid_len, ls->held[i].token,
                           ls->held[i].err);
    ls->nheld = 0;
    if (rc == SL_ENOSPC) { /* LMDB's previous state is intact: refuse the batch, keep serving */
        uint64_t held_back = 0;
        b->commits_nospace++;
        if (!net_queued(b->net, NET_AFTER_COMMIT) && !store_held(b->st)) {
            /* no publisher asked: back off (cron_commit_due); after a failed checkpoint the log goes on
             * taking batches, and the store backs off checkpoints itself */
            uint64_t ns = b->nospace_backoff_ns * 2, floor = b->cfg.ack_flush_ms * NS_PER_MS + NS_PER_MS;
            ns = ns < floor ? floor : ns > LOOP_NOSPACE_RETRY_MS * NS_PER_MS ? LOOP_NOSPACE_RETRY_MS * NS_PER_MS : ns;
            b->nospace_backoff_ns = ns;
            b->nospace_until_ns = b->mono_ns + ns;
        }
        if (log_limit_pass(&b->nospace_log, b->mono_ns, 10 * NS_PER_S, &held_back))
            log_warn("loop", "commit failed: no space left (the disk or the map); this batch's publishes are "
                     "refused with SL_ENOSPC and the broker goes on (%llu such failures held back)",
                     (unsigned long long)held_back);
        for (int i = 0; i < 1 + logged; i++) {
            net_fail_queued(b->net, SL_ENOSPC,
                            "the broker's storage is full: this batch was not committed (nothing of it is stored); "
                            "retry later (the map grows if the disk has room, or consumers drain it)",
                            LOOP_NOSPACE_RETRY_MS);
            net_flush(b->net, NET_AFTER_COMMIT, settle_send_failed, b);
            net_promote(b->net);
        }
        if (logged) /* the next batch's publishes were refused with it: none waits now */
            b->puts_unsealed = 0;
        return SL_OK;
    }
    if (rc == SL_ECORRUPT) { /* a level's tree failed as LMDB read it: quarantined (store_recheck), the rest go on */
        for (int i = 0; i < 1 + logged; i++) {
            net_fail_queued(b->net, SL_ECORRUPT,
                            "a level's stored tree turned out damaged while this batch was made: the level is "
                            "quarantined and this batch was not committed (nothing of it is stored); retry", 0);
            net_flush(b->net, NET_AFTER_COMMIT, settle_send_failed, b);
            net_promote(b->net);
        }
        if (logged)
            b->puts_unsealed = 0;
        return SL_OK;
    }
    if (rc != SL_OK) {
        log_error("loop", "commit failed (%s): refusing every confirmation of this pass and stopping",
                  proto_strerror(rc));
        for (int i = 0; i < 2; i++) { /* this batch's replies, then the next one's (with the log) */
            net_fail_queued(b->net, SL_EIO,
                            "the broker failed to commit this batch and stopped: the request is not confirmed, "
                            "and whether it reached the disk is unknown; retry it", 0);
            net_flush(b->net, NET_AFTER_COMMIT, NULL, NULL);
            net_promote(b->net);
        }
        return rc;
    }
    b->nospace_until_ns = b->nospace_backoff_ns = 0;
    net_flush(b->net, NET_AFTER_COMMIT, settle_send_failed, b);
    net_promote(b->net); /* OKs to ACKs taken while it was out: after the next commit, which deletes */
    if (logged && b->loop->ended_inline) { /* nothing received during its flush yet: told next pass */
        b->loop->gather_pending = 1;
        b->loop->gather_confirmed = b->loop->sealed_puts;
        loop_back_ended(&b->loop->back); /* its publishers' next publishes are theirs, not waiting */
    } else if (logged) { /* those it confirmed come back: gather them */
        gather_record_ended(&b->loop->gath, b->mono_ns, b->loop->sealed_puts, b->puts_unsealed);
    }
    b->loop->sealed_puts = 0;
    return SL_OK;
}

