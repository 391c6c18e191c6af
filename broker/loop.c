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
 * commit, every publish of the batch shares its flushes).
 *
 * While a commit is out (the store is frozen, store.h) the loop does not
 * receive: requests wait in ZeroMQ's queue and form the next batch, handed
 * over as soon as the commit ends. It goes on dispatching committed
 * messages, metering, pinging and sending; cron leaves what writes for
 * later. At most one commit is out; its confirmations wait in net's
 * NET_AFTER_COMMIT queue, which nothing else fills while it is out.
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
 * (queue_commit_ended) and the broker goes on; any other failure turns every
 * reply of the batch into SL_EIO and the broker stops rather than guess what
 * reached the disk (fsync errors are not reliably retryable). Signals only
 * set a flag; the loop notices it at the end of a pass and lets the commit
 * that is out end and be confirmed; SIGHUP's reload (reload.c) runs between
 * passes with no commit out.
 */
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "coord.h"
#include "cron.h"
#include "deliver.h"
#include "handle.h"
#include "hist.h"
#include "net.h"
#include "queue.h"
#include "reload.h"
#include "settle.h"
#include "store.h"
#include "units.h"
#include "log.h"

#define RECV_BATCH 4096
#define DISPATCH_BATCH 4096
#define MAX_WAIT_NS NS_PER_S
#define LOOP_NOSPACE_RETRY_MS 1000 /* the retry-after of a publish whose commit found no space */


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

static void set_clock(bk *b)
{
    b->mono_ns = loop_now_mono();
    b->wall_ns = loop_now_wall();
    b->q.now_wall_ns = b->wall_ns; /* dates records the queue moves aside as corrupt */
}

/* wait_ns returns how long the next poll may sleep. */
static uint64_t wait_ns(bk *b)
{
    if (net_queued(b->net, NET_NOW) || (!store_committing(b->st) && net_queued(b->net, NET_AFTER_COMMIT)))
        return 0;
    uint64_t wake = cron_next_wake(b);
    if (wake <= b->mono_ns)
        return 0;
    uint64_t ns = wake - b->mono_ns;
    return ns > MAX_WAIT_NS ? MAX_WAIT_NS : ns;
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
 * a commit is out the sockets are left alone (requests wait in ZeroMQ's
 * queue and form the next batch): the wait is on the commit's end. */
static int wait_input(net *n, struct coord *co, int commit_fd, uint64_t timeout_ns)
{
    struct pollfd pfd[NET_SOCKETS + 2];
    nfds_t nfds = 0;
    for (int i = 0; i < NET_SOCKETS && commit_fd < 0; i++) {
        void *sock = net_socket(n, (net_sock)i);
        int fd, events = 0;
        size_t fd_len = sizeof fd, ev_len = sizeof events;
        if (!sock)
            continue;
        if (zmq_getsockopt(sock, ZMQ_EVENTS, &events, &ev_len) != 0 ||
            zmq_getsockopt(sock, ZMQ_FD, &fd, &fd_len) != 0) {
            if (zmq_errno() == EINTR)
                return 0; /* a signal: the loop looks at its flag and comes back */
            log_error("loop", "cannot read the socket's state: %s", zmq_strerror(zmq_errno()));
            return -1;
        }
        if (events & ZMQ_POLLIN)
            return 0;
        pfd[nfds++] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    if (commit_fd >= 0)
        pfd[nfds++] = (struct pollfd){.fd = commit_fd, .events = POLLIN};
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

/* While a commit is out, a send that fails is held here and handed to
 * settle_send_failed after the commit's end: ending a consumer's leases
 * charges attempts, which writes the store. */
#define HELD_FAILS 256
typedef struct held_fail {
    uint8_t rid[256];
    size_t rid_len;
    uint64_t token;
    int err;
} held_fail;
static held_fail held[HELD_FAILS];
static unsigned nheld;

static void hold_send_failed(void *ctx, const uint8_t *rid, size_t rid_len, uint64_t token, int err)
{
    if (nheld == HELD_FAILS || rid_len > sizeof held[0].rid) {
        if (token) /* returns the delivery uncharged: writes nothing */
            settle_send_failed(ctx, rid, rid_len, token, SL_EFULL);
        return;
    }
    held_fail *h = &held[nheld++];
    memcpy(h->rid, rid, rid_len);
    h->rid_len = rid_len;
    h->token = token;
    h->err = err;
}

static void flush_now(bk *b)
{
    net_flush(b->net, NET_NOW, store_committing(b->st) ? hold_send_failed : settle_send_failed, b);
}

/* commit_ended finishes a commit, the writer's or one made at once: the
 * histogram, and the pass's confirmations sent, or all turned into errors.
 * Returns SL_OK or the commit's error. */
static int commit_ended(bk *b, int rc, int wrote, uint64_t t0_ns)
{
    queue_commit_ended(&b->q, rc); /* a failed commit puts the view back */
    if (wrote && rc == SL_OK) {
        hist_add(&b->commit_hist, HIST_COMMIT, loop_now_mono() - t0_ns);
        b->commits++;
    }
    for (unsigned i = 0; i < nheld; i++)
        settle_send_failed(b, held[i].rid, held[i].rid_len, held[i].token, held[i].err);
    nheld = 0;
    if (rc == SL_ENOSPC) { /* LMDB's previous state is intact: refuse the batch, keep serving */
        uint64_t held_back = 0;
        b->commits_nospace++;
        if (log_limit_pass(&b->nospace_log, b->mono_ns, 10 * NS_PER_S, &held_back))
            log_warn("loop", "commit failed: no space left (the disk or the map); this batch's publishes are "
                     "refused with SL_ENOSPC and the broker goes on (%llu such failures held back)",
                     (unsigned long long)held_back);
        net_fail_queued(b->net, SL_ENOSPC,
                        "the broker's storage is full: this batch was not committed (nothing of it is stored); "
                        "retry after consumers drain", LOOP_NOSPACE_RETRY_MS);
        cron_between_commits(b); /* measure again; grow the map if the disk has room */
        net_flush(b->net, NET_AFTER_COMMIT, settle_send_failed, b);
        return SL_OK;
    }
    if (rc != SL_OK) {
        log_error("loop", "commit failed (%s): refusing every confirmation of this pass and stopping",
                  proto_strerror(rc));
        net_fail_queued(b->net, SL_EIO,
                        "the broker failed to commit this batch and stopped: the request is not confirmed, and "
                        "whether it reached the disk is unknown; retry it", 0);
        net_flush(b->net, NET_AFTER_COMMIT, NULL, NULL);
        return rc;
    }
    cron_between_commits(b); /* no transaction is open now */
    net_flush(b->net, NET_AFTER_COMMIT, settle_send_failed, b);
    return SL_OK;
}

static int commit_wrote;
static uint64_t commit_t0_ns;

/* end_pass sends what need not wait, and hands the pass's transaction to the
 * writer when a reply waits for it or the oldest write is due (always when
 * force), unless a commit is still out. Returns SL_OK or a commit's error. */
static int end_pass(bk *b, int force)
{
    flush_now(b);
    if (store_committing(b->st))
        return SL_OK; /* the next batch goes on growing */
    if (!force && !cron_commit_due(b))
        return SL_OK;
    int started = 0;
    commit_wrote = store_dirty(b->st);
    commit_t0_ns = commit_wrote ? loop_now_mono() : 0;
    b->dirty_since_ns = 0;
    queue_commit_started(&b->q);
    int rc = store_commit_start(b->st, &started);
    return started ? SL_OK : commit_ended(b, rc, commit_wrote, commit_t0_ns);
}

/* commit_poll finishes the writer's commit if it has ended (wait: block
 * until it has). Returns SL_OK or the commit's error. */
static int commit_poll(bk *b, int wait)
{
    int rc = SL_OK;
    if (!store_committing(b->st))
        return SL_OK;
    if (wait) {
        store_commit_wait(b->st, &rc);
        return commit_ended(b, rc, commit_wrote, commit_t0_ns);
    }
    if (!store_commit_poll(b->st, &rc))
        return SL_OK;
    set_clock(b);
    return commit_ended(b, rc, commit_wrote, commit_t0_ns);
}

int loop_run(bk *b, volatile sig_atomic_t *stop)
{
    net_in in;
    int rc;
    /* Linux lets a sleep overrun by up to 50 us by default; a bucket that
     * releases a message every 2.5 ms would lose 2 % of its rate to that. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    while (!*stop) {
        set_clock(b);
        int commit_fd = store_committing(b->st) ? store_commit_fd(b->st) : -1;
        if (wait_input(b->net, b->coord, commit_fd, wait_ns(b)) != 0)
            return SL_EIO;
        set_clock(b);
        if ((rc = commit_poll(b, 0)) != SL_OK)
            return rc;
        if (!store_committing(b->st)) /* handlers write: only with no commit out */
            for (int i = 0; i < RECV_BATCH && net_recv(b->net, &in) == 1; i++)
                handle_message(b, &in);
        cron_tick(b);
        deliver_dispatch(b, DISPATCH_BATCH);
        if ((rc = end_pass(b, 0)) != SL_OK)
            return rc;
        if (reload_pending() && !store_committing(b->st)) /* SIGHUP: between passes, no commit out */
            reload_run(b);
    }
    /* Shutdown: the commit that is out ends and is confirmed; what arrived
     * after the last pass is refused, not dropped. */
    if ((rc = commit_poll(b, 1)) != SL_OK)
        return rc;
    unsigned refused = 0;
    for (int i = 0; i < 100000 && net_recv(b->net, &in) == 1; i++, refused++)
        handle_refuse(b, &in);
    if (refused)
        log_info("loop", "refused %u requests that arrived during shutdown", refused);
    if ((rc = end_pass(b, 1)) != SL_OK)
        return rc;
    return commit_poll(b, 1);
}
