/*
 * bridge.c - the HTTP server's calls to the loop, over inproc.
 *
 * The server's threads never touch the broker: what they cannot answer from
 * the published snapshot they send to the loop as the protocol messages a
 * ZeroMQ client would send (PUT, ADMIN, STATS), through this bridge, and
 * the loop handles them as it handles any client's: the same decoder, the
 * same auth check (the message carries the session's principal in a frame
 * the loop trusts, since only this process can reach the socket), the same
 * handlers, and the same "confirmed after the durable commit" for a PUT.
 *
 * One thread owns the DEALER socket. bridge_call (any thread) encodes the
 * message with the next seq, appends it to a queue under the lock, and
 * writes to an eventfd; the thread waits on the socket and the eventfd
 * (zmq_poll), sends what is queued as [User-Id][body], receives answers,
 * matches each to its call by seq (decoding only the seq) and calls its
 * done function with the answer's bytes. A call not answered within the
 * timeout ends with SL_ETIMEDOUT (its late answer is then dropped);
 * bridge_shutdown ends all with SL_ESHUTDOWN.
 *
 * Invariants: every call ends exactly once; done runs on the bridge's
 * thread, never under the lock; the socket is touched by that thread only.
 *
 * Costs: per call one encode, two copies, one eventfd write and a decode of
 * the answer; O(calls out) to match an answer and to find the next
 * deadline (a handful: the HTTP server has at most its connections out).
 */
#include "bridge.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "log.h"
#include "units.h"

typedef struct call {
    uint64_t seq;
    uint64_t deadline_ns;
    char uid[48];
    char *msg;          /* the encoded request, until sent */
    size_t len;
    bridge_done_fn done;
    void *ctx;
    struct call *next;
} call;

struct bridge {
    void *sock;
    int wake_fd;
    pthread_t thread;
    pthread_mutex_t lock;
    call *out;          /* queued or sent, not yet answered (under lock) */
    uint64_t next_seq;
    uint64_t timeout_ns;
    int shut, stop;     /* under lock */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int bridge_call(bridge *br, const char *user_id, proto_msg *m, bridge_done_fn done, void *ctx)
{
    proto_wbuf w = {0};
    call *c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    pthread_mutex_lock(&br->lock);
    uint64_t seq = ++br->next_seq;
    pthread_mutex_unlock(&br->lock);
    proto_set(m, seq, seq);
    int rc = proto_encode(m, &w);
    if (rc != SL_OK) {
        free(c);
        proto_wbuf_free(&w);
        return rc;
    }
    c->seq = seq;
    c->msg = w.data;
    c->len = w.len;
    c->done = done;
    c->ctx = ctx;
    c->deadline_ns = now_ns() + br->timeout_ns;
    snprintf(c->uid, sizeof c->uid, "%s", user_id ? user_id : "");
    pthread_mutex_lock(&br->lock);
    if (br->shut) {
        pthread_mutex_unlock(&br->lock);
        free(c->msg);
        free(c);
        return SL_ESHUTDOWN;
    }
    c->next = br->out;
    br->out = c;
    pthread_mutex_unlock(&br->lock);
    uint64_t one = 1;
    if (write(br->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_warn("bridge", "cannot wake the bridge's thread: %s", strerror(errno));
    return SL_OK;
}

/* take removes and returns the calls that match: seq (when seq != 0), or
 * those past their deadline at now (when now != 0), or all. Lock held. */
static call *take(bridge *br, uint64_t seq, uint64_t now)
{
    call *hit = NULL, **p = &br->out;
    while (*p) {
        call *c = *p;
        if ((seq && c->seq != seq) || (now && c->deadline_ns > now)) {
            p = &c->next;
            continue;
        }
        *p = c->next;
        c->next = hit;
        hit = c;
    }
    return hit;
}

static void end_all(call *list, int rc, const void *reply, size_t len)
{
    while (list) {
        call *next = list->next;
        list->done(list->ctx, rc, reply, len);
        free(list->msg);
        free(list);
        list = next;
    }
}

/* send_queued sends every call not yet sent. Lock not held. */
static void send_queued(bridge *br)
{
    for (;;) {
        char *msg = NULL, uid[48] = "";
        size_t len = 0;
        pthread_mutex_lock(&br->lock);
        for (call *c = br->out; c; c = c->next)
            if (c->msg) {
                msg = c->msg, len = c->len;
                memcpy(uid, c->uid, sizeof uid);
                c->msg = NULL;
                break;
            }
        pthread_mutex_unlock(&br->lock);
        if (!msg)
            return;
        if (zmq_send(br->sock, uid, strlen(uid), ZMQ_SNDMORE) < 0 || zmq_send(br->sock, msg, len, 0) < 0)
            log_warn("bridge", "cannot send to the loop: %s (the call will time out)", zmq_strerror(zmq_errno()));
        free(msg);
    }
}

/* receive takes every answer waiting and ends its call. */
static void receive(bridge *br)
{
    for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, br->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            return;
        }
        proto_msg m;
        const void *data = zmq_msg_data(&msg);
        size_t len = zmq_msg_size(&msg);
        int rc = proto_decode(data, len, &m, NULL);
        uint64_t seq = (rc == SL_OK || m.type != PROTO_NONE) && (m.present & PF(seq)) ? m.seq : 0;
        if (seq) {
            pthread_mutex_lock(&br->lock);
            call *c = take(br, seq, 0);
            pthread_mutex_unlock(&br->lock);
            end_all(c, SL_OK, data, len);
        }
        zmq_msg_close(&msg);
    }
}

static void *run(void *arg)
{
    bridge *br = arg;
    for (;;) {
        pthread_mutex_lock(&br->lock);
        int stop = br->stop;
        uint64_t next = UINT64_MAX;
        for (call *c = br->out; c; c = c->next)
            if (c->deadline_ns < next)
                next = c->deadline_ns;
        pthread_mutex_unlock(&br->lock);
        if (stop)
            return NULL;
        uint64_t now = now_ns();
        long timeout_ms = next == UINT64_MAX ? 1000 : next <= now ? 0 : (long)((next - now) / NS_PER_MS + 1);
        zmq_pollitem_t items[2] = {{br->sock, 0, ZMQ_POLLIN, 0}, {NULL, br->wake_fd, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, 2, timeout_ms > 1000 ? 1000 : timeout_ms) < 0 && zmq_errno() != EINTR) {
            log_error("bridge", "poll failed: %s", zmq_strerror(zmq_errno()));
            return NULL;
        }
        if (items[1].revents & ZMQ_POLLIN) {
            uint64_t v;
            if (read(br->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
                log_warn("bridge", "cannot read the wake-up: %s", strerror(errno));
        }
        send_queued(br);
        receive(br);
        pthread_mutex_lock(&br->lock);
        call *late = take(br, 0, now_ns());
        pthread_mutex_unlock(&br->lock);
        end_all(late, SL_ETIMEDOUT, NULL, 0);
    }
}

int bridge_open(net *n, uint32_t timeout_ms, bridge **out)
{
    static const char rid[] = "\x01http"; /* not a generated routing id (those start with a zero byte) */
    int linger = 0, hwm = 100000;
    *out = NULL;
    bridge *br = calloc(1, sizeof *br);
    if (!br)
        return SL_ENOMEM;
    br->timeout_ns = (uint64_t)timeout_ms * NS_PER_MS;
    br->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    br->sock = zmq_socket(net_context(n), ZMQ_DEALER);
    if (br->wake_fd < 0 || !br->sock || zmq_setsockopt(br->sock, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(br->sock, ZMQ_ROUTING_ID, rid, sizeof rid - 1) ||
        zmq_setsockopt(br->sock, ZMQ_SNDHWM, &hwm, sizeof hwm) || zmq_setsockopt(br->sock, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_connect(br->sock, NET_BRIDGE_ENDPOINT)) {
        log_error("bridge", "cannot connect the HTTP server to the loop: %s",
                  br->wake_fd < 0 ? strerror(errno) : zmq_strerror(zmq_errno()));
        goto fail;
    }
    pthread_mutex_init(&br->lock, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to the loop's thread */
    int rc = pthread_create(&br->thread, NULL, run, br);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("bridge", "cannot start the bridge's thread: %s", strerror(rc));
        pthread_mutex_destroy(&br->lock);
        goto fail;
    }
    *out = br;
    return SL_OK;

fail:
    if (br->sock)
        zmq_close(br->sock);
    if (br->wake_fd >= 0)
        close(br->wake_fd);
    free(br);
    return SL_EIO;
}

void bridge_shutdown(bridge *br)
{
    if (!br)
        return;
    pthread_mutex_lock(&br->lock);
    br->shut = 1;
    call *all = take(br, 0, 0);
    pthread_mutex_unlock(&br->lock);
    end_all(all, SL_ESHUTDOWN, NULL, 0);
}

void bridge_close(bridge **bp)
{
    bridge *br = bp ? *bp : NULL;
    if (!br)
        return;
    bridge_shutdown(br);
    pthread_mutex_lock(&br->lock);
    br->stop = 1;
    pthread_mutex_unlock(&br->lock);
    uint64_t one = 1;
    if (write(br->wake_fd, &one, sizeof one) < 0)
        log_warn("bridge", "cannot wake the bridge's thread to stop: %s", strerror(errno));
    pthread_join(br->thread, NULL);
    zmq_close(br->sock);
    close(br->wake_fd);
    pthread_mutex_destroy(&br->lock);
    free(br);
    *bp = NULL;
}
