/*
 * loop_ha.c - the loop as the primary of a high-availability group: a
 * commit that ended here is confirmed only once its record may be (the
 * standby has it durable, or Redis records that no standby is in sync, and
 * the lease is valid: ha_node_confirmable).
 *
 * While such a commit is held no other commit starts (loop.c's end_pass),
 * so at most one record's confirmations wait, as at most one commit is out
 * without a group; the next batch grows meanwhile. At shutdown the held
 * commit waits at most the standby timeout and a lease, then its publishes
 * are refused: never confirmed without their record on both nodes.
 *
 * Costs: nothing without --ha; with it, a check per pass.
 */
#include <poll.h>

#include "ha_node.h"
#include "log.h"
#include "loop.h"
#include "loop_int.h"
#include "net.h"
#include "units.h"

int loop_finish(bk *b, int rc, int wrote, uint64_t t0_ns, int logged)
{
    loop_state *ls = b->loop;
    if (b->ha && rc == SL_OK && !ha_node_confirmable(b)) {
        ls->ha_held = 1;
        ls->ha_rc = rc;
        ls->ha_wrote = wrote;
        ls->ha_t0_ns = t0_ns;
        ls->ha_logged = logged;
        return SL_OK;
    }
    if (b->ha && rc != SL_OK)
        ha_node_forget(b);
    return loop_commit_ended(b, rc, wrote, t0_ns, logged);
}

int loop_ha_release(bk *b)
{
    loop_state *ls = b->loop;
    if (!ls->ha_held || !ha_node_confirmable(b))
        return SL_OK;
    ls->ha_held = 0;
    return loop_commit_ended(b, ls->ha_rc, ls->ha_wrote, ls->ha_t0_ns, ls->ha_logged);
}

int loop_ha_drain(bk *b)
{
    loop_state *ls = b->loop;
    uint64_t until = loop_now_mono() + ((uint64_t)b->cfg.repl_standby_timeout_ms + b->cfg.ha_ttl_ms) * NS_PER_MS;
    while (ls->ha_held && loop_now_mono() < until) {
        loop_set_clock(b);
        b->ha_wake_ns = ha_node_tick(b);
        if (ha_node_deposed(b))
            return SL_EDEPOSED;
        int rc = loop_ha_release(b);
        if (rc != SL_OK || !ls->ha_held)
            return rc;
        struct pollfd pfd[4];
        int ready = 0, n = ha_node_pollfds(b, pfd, &ready);
        if (!ready)
            poll(pfd, (nfds_t)n, 5);
    }
    if (ls->ha_held) {
        ls->ha_held = 0;
        ha_node_forget(b);
        log_warn("loop", "shutting down with a batch its standby never acknowledged: its publishes are refused");
        for (int i = 0; i < 2; i++) {
            net_fail_queued(b->net, SL_ESHUTDOWN, "the primary stopped before its standby had this batch: it is "
                            "not confirmed; retry it", 0);
            net_flush(b->net, NET_AFTER_COMMIT, NULL, NULL);
            net_promote(b->net);
        }
    }
    return SL_OK;
}

