/*
 * loop.c - one thread, one pass at a time; the disk's waits on another.
 *
 * A pass: compute the timeout to the next timer (cron_next_wake); wait for
 * input, or for the writer's commit to end; finish that commit if it has
 * (its confirmations leave now, or its errors); receive up to RECV_BATCH
 * messages without blocking and handle each (handlers only change memory
 * and the pass's write transaction, which only LMDB's memory holds until
 * the commit); run due timers (cron_tick); dispatch (deliver_dispatch); and
 * hand the transaction to the writer thread (store_commit_start: group
 * commit, every publish of the batch shares its flushes), or, when replies
 * wait and the disk flushes fast, write the record here (store_log_inline:
 * two thread wake-ups fewer per batch) and pass again at once.
 *
 * While a commit is out (the store is frozen, store.h) and has been out for
 * LOOP_PATIENCE_NS (a slow flush: receiving), the loop goes on receiving:
 * what neither writes nor reads the store is handled at once
 * (pings, credit, TOUCH, a THROTTLED for the sink, ACKs, whose deletes follow the commit:
 * queue_settle), so consumers get their credit back while the disk
 * flushes; the rest (a PUT, a NACK, a setting, STATS) is parked (park.c)
 * and handled first when the commit ends, forming the next batch. A full park stops receiving until
 * then. It goes on dispatching committed messages, metering, pinging and
 * sending; cron leaves what writes for later. At most one commit is out;
 * its confirmations wait in net's NET_AFTER_COMMIT queue, which nothing
 * else fills while it is out (replies that wait for a commit come from
 * parked requests, handled after it).
 *
 * Replies that promise nothing about the disk (deliveries, OK to ACK/NACK/
 * TOUCH, stats) leave at the end of their pass. A pass that only
 * acknowledged messages does not commit at all until its oldest write is
 * ack_flush_ms old (or a publish needs a commit sooner): acknowledgements are
 * made durable in batches, and a crash in that window only means the message
 * is delivered again, which at-least-once delivery allows.
 *
 * A failed commit: for want of space (ENOSPC, MDB_MAP_FULL) the batch's
 * replies become SL_ENOSPC with a retry-after, the queue puts its view back
 * (queue_commit_ended) and the broker goes on; when LMDB failed on a damaged
 * page of one level's trees, that level is quarantined (store_recheck) and
 * the batch's replies become SL_ECORRUPT, and the broker goes on too; any
 * other failure turns every
 * reply of the batch into SL_EIO and the broker stops rather than guess what
 * reached the disk (fsync errors are not reliably retryable). Signals only
 * set a flag; the loop notices it at the end of a pass and lets the commit
 * that is out end and be confirmed; SIGHUP's reload (reload.c) runs with no
 * commit out: right after a commit ends, or between passes.
 */
#include "loop.h"
#include "loop_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "coord.h"
#include "cron.h"
#include "deliver.h"
#include "gather.h"
#include "grow.h"
#include "ha_node.h"
#include "handle.h"
#include "hist.h"
#include "net.h"
#include "park.h"
#include "queue.h"
#include "reload.h"
#include "settings.h"
#include "settle.h"
#include "store.h"
#include "store_backup.h"
#include "units.h"
#include "log.h"

#define RECV_BATCH 4096
#define DISPATCH_BATCH 4096
#define MAX_WAIT_NS NS_PER_S
#define LOOP_PATIENCE_NS 1000000u  /* 1 ms: a commit out longer than this no longer keeps requests waiting */
#define LOOP_INLINE_MAX_REPLIES 1  /* a record at most this many replies wait for may be written on the loop */
#define LOOP_INLINE_CLEAR_NS 1000000u /* ... and only when no metered release is due sooner than this */


static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t loop_now_mono(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

uint64_t loop_now_wall(void)
{
    return read_clock(CLOCK_REALTIME);
}

uint64_t loop_cpu_ns(void)
{
    return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

void loop_set_clock(bk *b)
{
    b->mono_ns = loop_now_mono();
    b->wall_ns = loop_now_wall();
    b->q.now_wall_ns = b->wall_ns; /* dates records the queue moves aside as corrupt */
}

/* gathering tells whether the next record waits for more of its batch. */
static int gathering(const bk *b)
{
    return gather_holds(&b->loop->gath, b->mono_ns, b->puts_unsealed);
}

/* handle_parked hands in again a request parked while a commit was out. */
static void handle_parked(void *ctx, const net_in *in)
{
    bk *b = ctx;
    size_t puts = b->puts_unsealed;
    handle_message(b, in);
    if (b->puts_unsealed > puts)
        loop_back_put(&b->loop->back, in->sock, in->rid, in->rid_len);
}

static int commit_poll(bk *b, int wait);

/* receive handles a request, or parks it while a commit is out: when it
 * must wait for the commit, or a request of its peer already waits (a
 * peer's requests keep their order). Parking that fails (out of memory)
 * waits for the commit here, so nothing received is dropped. Returns SL_OK
 * or a commit's error. */
static int receive(bk *b, const net_in *in)
{
    int park_it = store_committing(b->st) && park_holds_peer(b->loop->parked, in->sock, in->rid, in->rid_len);
    size_t puts = b->puts_unsealed;
    if (!park_it && handle_message(b, in) == HANDLE_DONE) {
        if (b->puts_unsealed > puts) /* a publish: whose, for the gather (loop_back.c) */
            loop_back_put(&b->loop->back, in->sock, in->rid, in->rid_len);
        return SL_OK;
    }
    if (park_add(b->loop->parked, in) == SL_OK)
        return SL_OK;
    log_warn("loop", "cannot park a request until the commit ends (out of memory): waiting for the commit");
    int rc = commit_poll(b, 1);
    if (rc != SL_OK)
        return rc;
    park_drain(b->loop->parked, handle_parked, b);
    handle_message(b, in);
    return SL_OK;
}

/* receiving tells whether the loop reads its sockets now: always with no
 * commit out; while one is out, once it has been out LOOP_PATIENCE_NS and
 * while the park has room. A commit on a fast disk ends sooner: waiting for
 * it takes its requests in one pass, where receiving them one by one as
 * they come costs a pass (a wake, a poll, a dispatch, a send) each, which
 * on two busy cores showed as a doubled p99 publish->deliver at 2,000/s. A
 * slow commit (a slow or busy disk) is worked around: consumers get their
 * credit back, and deliveries go on, while it flushes. */
static int receiving(bk *b)
{
    if (!store_committing(b->st))
        return 1;
    return !park_full(b->loop->parked) && b->mono_ns >= b->commit_out_ns + LOOP_PATIENCE_NS;
}

/* wait_ns returns how long the next poll may sleep. */
static uint64_t wait_ns(bk *b)
{
    if (b->loop->ended_inline || net_queued(b->net, NET_NOW) ||
        (!store_busy(b->st) && !store_commit_held(b->st) &&
         ((net_queued(b->net, NET_AFTER_COMMIT) && !gathering(b) && !b->loop->ha_held) ||
          park_count(b->loop->parked))))
        return 0;
    uint64_t wake = cron_next_wake(b);
    if (gathering(b) && gather_deadline(&b->loop->gath) < wake)
        wake = gather_deadline(&b->loop->gath);
    if (!store_committing(b->st) && reload_wake_ns() < wake) /* SIGHUPs coalesced into a due reload (a commit out wakes the loop when it ends) */
        wake = reload_wake_ns();
    if (store_committing(b->st) && b->commit_out_ns + LOOP_PATIENCE_NS > b->mono_ns &&
        b->commit_out_ns + LOOP_PATIENCE_NS < wake)
        wake = b->commit_out_ns + LOOP_PATIENCE_NS; /* from then on it receives (receiving) */
    if (wake <= b->mono_ns)
        return 0;
    uint64_t ns = wake - b->mono_ns;
    return ns > MAX_WAIT_NS ? MAX_WAIT_NS : ns;
}

/* sockets_pollfds adds the pollfd of each of n's sockets, and of its
 * stream endpoint, to pfd[*nfds...].
 * Returns 1 when one has input already (ZeroMQ's edge-triggered fd would
 * not wake a poll for it), 0, or -1 when a socket's state cannot be read
 * (errno EINTR: a signal). */
static int sockets_pollfds(net *n, struct pollfd *pfd, nfds_t *nfds)
{
    for (int i = 0; i < NET_SOCKETS; i++) {
        void *sock = net_socket(n, (net_sock)i);
        int fd, events = 0;
        size_t fd_len = sizeof fd, ev_len = sizeof events;
        if (!sock)
            continue;
        if (zmq_getsockopt(sock, ZMQ_EVENTS, &events, &ev_len) != 0 ||
            zmq_getsockopt(sock, ZMQ_FD, &fd, &fd_len) != 0) {
            errno = zmq_errno();
            return -1;
        }
        if (events & ZMQ_POLLIN)
            return 1;
        pfd[(*nfds)++] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    int ready, sfd = net_stream_pollfd(n, &ready); /* the stream endpoint: one epoll set */
    if (ready)
        return 1;
    if (sfd >= 0)
        pfd[(*nfds)++] = (struct pollfd){.fd = sfd, .events = POLLIN};
    return 0;
}

/* wait_input sleeps until the socket may have input, the writer's commit
 * ends (commit_fd, when >= 0) or timeout_ns passes.
 * zmq_poll counts in whole milliseconds, which would make a bucket at 200
 * messages a second, one every 5 ms, wait 6 ms each; so the wait is ppoll on
 * ZMQ_FD, to the nanosecond. ZMQ_FD only signals that the socket's state may
 * have changed: ZMQ_EVENTS is read first, and the caller drains the socket
 * until it would block, which re-arms the signal. With an admin endpoint
 * there are two sockets, and the wait is on both. Redis's socket (coord.c)
 * joins the same wait while a request is out; cron_tick does its I/O. While
 * a commit is out the wait is also on its end (commit_fd); the sockets are
 * left alone only when the park is full (sockets 0): requests then wait in
 * ZeroMQ's queue until the commit ends. */
static int wait_input(bk *b, net *n, struct coord *co, int sockets, int commit_fd, uint64_t timeout_ns)
{
    struct pollfd pfd[NET_SOCKETS + 4];
    nfds_t nfds = 0;
    int got = sockets ? sockets_pollfds(n, pfd, &nfds) : 0;
    if (got < 0 && errno == EINTR)
        return 0; /* a signal: the loop looks at its flag and comes back */
    if (got < 0) {
        log_error("loop", "cannot read the socket's state: %s", zmq_strerror(errno));
        return -1;
    }
    if (got)
        return 0;
    if (commit_fd >= 0)
        pfd[nfds++] = (struct pollfd){.fd = commit_fd, .events = POLLIN};
    if (b->ha) { /* the replication stream and the lease's Redis */
        int ready = 0;
        nfds += (nfds_t)ha_node_pollfds(b, pfd + nfds, &ready);
        if (ready)
            return 0;
    }
    if (timeout_ns == 0)
        return 0;
    short co_events = 0;
    int co_fd = co ? coord_pollfd(co, &co_events) : -1; /* Redis, when coord waits on it */
    if (co_fd >= 0)
        pfd[nfds++] = (struct pollfd){.fd = co_fd, .events = co_events};
    struct timespec ts = {(time_t)(timeout_ns / NS_PER_S), (long)(timeout_ns % NS_PER_S)};
    if (ppoll(pfd, nfds, &ts, NULL) < 0 && errno != EINTR) {
        log_error("loop", "poll failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int loop_wait_net(struct net *n, struct pollfd *extra, unsigned nextra, uint64_t timeout_ns)
{
    struct pollfd pfd[NET_SOCKETS + 8];
    nfds_t nfds = 0;
    int got = sockets_pollfds(n, pfd, &nfds);
    if (got != 0)
        return got < 0 && errno != EINTR ? -1 : 0;
    for (unsigned i = 0; i < nextra && i < 8; i++)
        pfd[nfds++] = extra[i];
    struct timespec ts = {(time_t)(timeout_ns / NS_PER_S), (long)(timeout_ns % NS_PER_S)};
    if (timeout_ns && ppoll(pfd, nfds, &ts, NULL) < 0 && errno != EINTR)
        return -1;
    return 0;
}

static void flush_now(bk *b)
{
    net_flush(b->net, NET_NOW, store_committing(b->st) ? loop_hold_send_failed : settle_send_failed, b);
}

/* end_pass sends what need not wait, and hands the pass's transaction to the
 * writer when a reply waits for it or the oldest write is due (always when
 * force), unless a commit is still out. Returns SL_OK or a commit's error. */
static int end_pass(bk *b, int force)
{
    flush_now(b);
    loop_state *ls = b->loop;
    if (ls->gather_pending) { /* a record written on the loop: what came during its flush is received now */
        ls->gather_pending = 0;
        gather_record_ended(&ls->gath, b->mono_ns, ls->gather_confirmed,
                            loop_back_waiting(&ls->back, b->puts_unsealed));
    }
    if (store_busy(b->st) || ls->ha_held)
        return SL_OK; /* the next batch goes on growing */
    if (store_commit_held(b->st) && !force)
        return SL_OK; /* a backup copy reads, and it could only be an LMDB commit: after the copy (shutdown waits) */
    if (!force && (!cron_commit_due(b) || gathering(b)))
        return SL_OK;
    gather_stop(&ls->gath); /* (forced: what is there goes) */
    int started = 0;
    ls->commit_wrote = store_dirty(b->st);
    ls->commit_t0_ns = ls->commit_wrote ? loop_now_mono() : 0;
    b->dirty_since_ns = 0;
    queue_commit_started(&b->q);
    settings_commit_started(b);
    size_t puts = b->puts_unsealed;
    b->puts_unsealed = 0;
    loop_back_seal(&ls->back);
    /* A record that one reply waits for (a sequential producer) may be
     * written right here when the disk flushes fast (store_log_inline): two
     * thread wake-ups fewer. Dispatch has just run; what arrives during the
     * flush waits in the socket for it (at most a fast flush), where with
     * the writer thread the loop would take it at once. So does a record
     * whose gather filled (gather_full): every client the last record
     * confirmed is back, and none of them sends again before this one
     * confirms it. Any other larger batch means clients whose next
     * publishes are arriving: handling them while the writer flushes is
     * worth more than the wake-ups. Its replies leave at once below. Never
     * while the meter holds a release due within LOOP_INLINE_CLEAR_NS: a
     * flush on the loop makes that wake late, and a sink's slot missed by
     * more than half an interval is lost (rl_take_late): a backlog paced at
     * the sink lost a fifth of 1,000/s and a third of 5,000/s to its
     * consumers' acknowledgements so written. */
    size_t waiting = net_queued(b->net, NET_AFTER_COMMIT);
    int release_soon = b->meter_wake_ns != TMR_NEVER && b->meter_wake_ns < b->mono_ns + LOOP_INLINE_CLEAR_NS;
    int here = waiting > 0 && (waiting <= LOOP_INLINE_MAX_REPLIES || gather_full(&ls->gath));
    store_log_inline(b->st, here && !release_soon);
    int rc = store_commit_start(b->st, b->mono_ns, b->checkpoint_wanted && !store_copying(b->st), &started);
    if (b->ha)
        ha_node_shipped(b); /* the batch's record to the standby, while this node flushes it */
    if (!started)
        return loop_finish(b, rc, ls->commit_wrote, ls->commit_t0_ns, 0);
    b->commit_out_ns = loop_now_mono();
    net_seal(b->net, 1); /* replies of writes made from now on wait for the next commit */
    ls->sealed_puts = store_logging(b->st) ? puts : 0;
    if (store_committing(b->st)) { /* an LMDB commit (a checkpoint, with the log) */
        queue_commit_frozen(&b->q);
        b->checkpoint_wanted = 0;
    }
    if (store_commit_ready(b->st)) { /* the loop's to write: commit_poll writes and flushes it now, */
        ls->ended_inline = 1;          /* its confirmations go, and the next pass, at once, */
        return commit_poll(b, 0);      /* dispatches what it committed */
    }
    return SL_OK;
}

/* commit_poll finishes the writer's commit if it has ended (wait: block
 * until it has). Returns SL_OK or the commit's error. */
static int commit_poll(bk *b, int wait)
{
    int rc = SL_OK, logged = store_logging(b->st);
    if (!store_busy(b->st))
        return SL_OK;
    loop_state *ls = b->loop;
    if (wait) {
        store_commit_wait(b->st, &rc);
        return loop_finish(b, rc, ls->commit_wrote, ls->commit_t0_ns, logged);
    }
    if (!store_commit_poll(b->st, &rc))
        return SL_OK;
    loop_set_clock(b);
    return loop_finish(b, rc, ls->commit_wrote, ls->commit_t0_ns, logged);
}

/* run passes until *stop, then shuts down (loop_run). */
static int run(bk *b, volatile sig_atomic_t *stop)
{
    net_in in;
    int rc;
    while (!*stop) {
        loop_set_clock(b);
        int commit_fd = store_busy(b->st) ? store_commit_fd(b->st) : -1;
        if (wait_input(b, b->net, b->coord, receiving(b), commit_fd, wait_ns(b)) != 0)
            return SL_EIO;
        b->loop->ended_inline = 0;
        loop_set_clock(b);
        if ((rc = commit_poll(b, 0)) != SL_OK)
            return rc;
        if (b->ha) { /* the standby's acks, the lease; then what they let through */
            b->ha_wake_ns = ha_node_tick(b);
            if (ha_node_deposed(b))
                return SL_EDEPOSED;
            if ((rc = loop_ha_release(b)) != SL_OK)
                return rc;
        }
        if (b->checkpoint_wanted && !store_busy(b->st) && !store_held(b->st) && !store_copying(b->st) &&
            (rc = end_pass(b, 1)) != SL_OK)
            return rc; /* an LMDB commit so that what the last one freed is reusable (cron_between_commits) */
        if (!store_committing(b->st)) /* what waited for the commit, before anything newer */
            park_drain(b->loop->parked, handle_parked, b);
        if (reload_due(b->mono_ns) && !store_committing(b->st)) /* SIGHUP: as soon as no commit is out */
            reload_run(b);
        for (int i = 0; i < RECV_BATCH && receiving(b) && net_recv(b->net, &in) == 1; i++)
            if ((rc = receive(b, &in)) != SL_OK)
                return rc;
        cron_tick(b);
        if (ha_node_may_dispatch(b)) /* a primary of a group: only while its lease is valid (fencing) */
            deliver_dispatch(b, DISPATCH_BATCH);
        if ((rc = end_pass(b, 0)) != SL_OK)
            return rc;
        if (reload_due(b->mono_ns) && !store_committing(b->st)) /* SIGHUP: between passes, no commit out */
            reload_run(b);
    }
    /* Shutdown: the commit that is out ends and is confirmed; what arrived
     * after the last pass is refused, not dropped. */
    if ((rc = commit_poll(b, 1)) != SL_OK || (rc = loop_ha_drain(b)) != SL_OK)
        return rc;
    park_drain(b->loop->parked, handle_parked, b); /* received before the stop: handled, not refused */
    unsigned refused = 0;
    for (int i = 0; i < 100000 && net_recv(b->net, &in) == 1; i++, refused++)
        handle_refuse(b, &in);
    if (refused)
        log_info("loop", "refused %u requests that arrived during shutdown", refused);
    /* The last commit may have ended with deletes of ACKs taken while it
     * was out, and their OKs (ack_flush_ms 0): one more commit carries them. */
    for (int i = 0; i < 3; i++) {
        if ((rc = end_pass(b, 1)) != SL_OK || (rc = commit_poll(b, 1)) != SL_OK || (rc = loop_ha_drain(b)) != SL_OK)
            break;
        if (!store_dirty(b->st) && !net_queued(b->net, NET_AFTER_COMMIT) &&
            !net_queued(b->net, NET_AFTER_NEXT_COMMIT))
            break;
    }
    return rc;
}

int loop_run(bk *b, volatile sig_atomic_t *stop)
{
    /* Linux lets a sleep overrun by up to 50 us by default; a bucket that
     * releases a message every 2.5 ms would lose 2 % of its rate to that. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    loop_state *ls = calloc(1, sizeof *ls);
    if (!ls || !(ls->parked = park_new())) {
        free(ls);
        log_error("loop", "out of memory");
        return SL_ENOMEM;
    }
    gather_init(&ls->gath);
    b->loop = ls;
    int rc = run(b, stop);
    b->loop = NULL;
    park_destroy(&ls->parked);
    free(ls->held);
    free(ls);
    return rc;
}
