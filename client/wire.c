/*
 * wire.c - the client's connection to its broker, and the pump.
 *
 * wire_open (wire_open.c) gives an sl_client a DEALER socket connected to the broker, in
 * the process's one ZeroMQ context (zctx.c: one I/O thread for every
 * client), and a PAIR socket that receives the DEALER's monitor events;
 * wire_close takes them down. Every message is one frame holding one
 * msgpack map, built and parsed by proto/ (proto_encode, proto_decode);
 * the library never touches msgpack itself.
 *
 * Everything the broker sends goes through one pump, which every waiting call
 * runs until its own condition holds or its deadline passes; what each frame
 * means (a delivery, a confirmation, a settlement's answer, the awaited
 * reply, POOL, PING, a malformed reply) is route.c's. Late replies to
 * requests that already timed out are dropped: replies are matched by seq,
 * so a stray never passes for the current answer.
 *
 * Requests share one seq counter starting at 1. The puts ring maps each
 * outstanding publish's seq to the ticket its caller chose. The broker
 * answers a connection in order, so the reply for the oldest outstanding
 * publish is nearly always the next one: the lookup is O(1) in practice,
 * O(outstanding) at worst. Settlements (wire_settle) are sent without
 * waiting and tracked the same way, by seq, in the settles ring; a
 * disconnection or a reconnection empties it, since their answers went to a
 * connection that is gone, and wire_close then lingers for nobody.
 *
 * Reconnection. ZeroMQ reconnects the DEALER by itself when the broker
 * restarts or heartbeats time out, but the broker forgets a connection's
 * subscription and ends its leases when it goes. The monitor reports each
 * completed handshake; from the second one on, the client drops deliveries it
 * has queued but not handed out (their leases ended with the old connection)
 * and, if subscribed, sends its HELLO again. The credit it asks for follows
 * client_credit_due with only the deliveries the application still holds
 * outstanding, because their ACK, NACK or THROTTLED will give credit back.
 * Requests in flight when a connection drops are not resent: they time out,
 * and a publish's fate is then unknown. The pool share is kept: the broker
 * tells it again when it has changed.
 *
 * Errors are returned, never recorded or printed here: sluice.c keeps the
 * record. A failed confirmation carries the broker's text in its queue entry.
 *
 * The stream transport (stream+tcp://, stream+ipc://; cstream.c) takes
 * ZeroMQ's place under the same pump: frames come from cstream_take, sends
 * go through cstream_send, and a connection that closes or breaks ends
 * what waited on it at once, as a reconnection would (wire_lost.c, which
 * also holds what a ZeroMQ reconnection ends).
 *
 * Time. This file, cstream.c, failover.c, multi.c and pacer.c read the clock. Every wait is bounded by
 * a CLOCK_MONOTONIC deadline, a send's too: a send never blocks in ZeroMQ
 * (ZMQ_DONTWAIT), and one that finds no connection to queue on waits in
 * send_wait, which also sees a refused handshake at once. Cost per
 * publish: one encode (a copy of the body) and one copy into ZeroMQ; per
 * delivery: one decode and one copy. The monitor is read after each wait
 * and at most once a millisecond between frames (monitor_look), not per
 * frame.
 */
#include "wire.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "cstream.h"
#include "failover.h"
#include "zctx.h"

#define WBUF_KEEP_BYTES      (1u << 20) /* larger encode buffers are freed after use */
#define LATE_FRAMES_MAX      1024     /* frames still drained once the deadline passed */
#define MONITOR_BATCH        64       /* monitor events handled per pump pass */
#define MONITOR_EVERY_NS     1000000  /* between frames, the monitor is looked at this often */
#define REFUSED_GRACE_NS     300000000 /* a refused first connection fails the call this long after */

typedef enum wait_for { WAIT_REPLY, WAIT_CONFIRM, WAIT_DELIVERY, WAIT_SETTLED } wait_for;

int wire_code(uint64_t code)
{
    return code == SL_OK || code > INT_MAX ? SL_EPROTO : (int)code;
}

/* ---- time ---- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* deadline_after: timeout_ms < 0 means never. */
static int64_t deadline_after(int timeout_ms)
{
    return timeout_ms < 0 ? INT64_MAX : now_ns() + (int64_t)timeout_ms * 1000000;
}

/* wait_ms_until returns the milliseconds left before deadline_ns, rounded up
 * so that a wait never ends just short of it; 0 once it passed, -1 for never. */
static long wait_ms_until(int64_t deadline_ns)
{
    if (deadline_ns == INT64_MAX)
        return -1;
    int64_t left_ns = deadline_ns - now_ns();
    if (left_ns <= 0)
        return 0;
    int64_t left_ms = (left_ns + 999999) / 1000000;
    return left_ms > INT_MAX ? INT_MAX : (long)left_ms;
}

/* ---- sending ---- */

static void monitor_drain(sl_client *c, bool closing);
static int handshake_refused(sl_client *c);

/* send_wait waits, up to deadline_ns, for the socket to take a frame: a
 * DEALER has nowhere to queue one between a connection that closed and
 * the next. It looks at the monitor while it waits, so that a broker that
 * refuses the handshake (a plaintext client at a CURVE broker, an unknown
 * key) fails the send at once with SL_EPERM instead of at the deadline.
 * With alternative addresses it also moves to the next one when due
 * (failover.c). SL_OK: try again. */
static int send_wait(sl_client *c, int64_t deadline_ns)
{
    monitor_drain(c, false);
    int rc = handshake_refused(c);
    if (rc)
        return rc;
    long wait_ms = wait_ms_until(deadline_ns);
    if (wait_ms == 0)
        return SL_ETIMEDOUT;
    if (failover_on(c)) {
        failover_tick(c, now_ns());
        long move_ms = failover_wake_ms(c, now_ns());
        if (move_ms >= 0 && (wait_ms < 0 || move_ms < wait_ms))
            wait_ms = move_ms;
    }
    zmq_pollitem_t items[] = {
        {.socket = c->sock, .events = ZMQ_POLLOUT},
        {.socket = c->mon, .events = ZMQ_POLLIN},
    };
    if (zmq_poll(items, 2, wait_ms) < 0 && errno != EINTR)
        return SL_ECONNECT;
    return SL_OK;
}

/* msg_send_keep encodes m and sends it as one frame; when keep is not NULL
 * it also copies the encoded frame there (*keep_len its length) for
 * failover.c. A send that may wait (flags without ZMQ_DONTWAIT) gives up
 * after the client's timeout with SL_ETIMEDOUT, or at once with SL_EPERM
 * when the broker refuses the handshake (send_wait). */
static int msg_send_keep(sl_client *c, const proto_msg *m, int flags, void **keep, size_t *keep_len)
{
    int64_t deadline_ns = deadline_after(c->timeout_ms), now = 0, until = 0;
    if (c->over_stream) { /* a connection lost since: its waiters end, and a subscription is renewed first */
        now = now_ns();
        until = (flags & ZMQ_DONTWAIT) ? now : deadline_ns;
        wire_stream_hup_take(c);
        wire_stream_lost_end(c);
        int rc = wire_stream_revive(c, now, until);
        if (rc)
            return rc;
    }
    proto_wbuf_reset(&c->out);
    int rc = proto_encode(m, &c->out);
    if (rc == SL_OK && keep)
        rc = failover_keep(c, keep, keep_len);
    if (rc == SL_OK && c->over_stream) /* (connecting if it is not) */
        rc = wire_stream_send(c, now, until);
    while (rc == SL_OK && !c->over_stream && zmq_send(c->sock, c->out.data, c->out.len, ZMQ_DONTWAIT) < 0) {
        if (errno != EAGAIN && errno != EINTR)
            rc = SL_ECONNECT;
        else if (flags & ZMQ_DONTWAIT)
            rc = SL_ETIMEDOUT;
        else
            rc = send_wait(c, deadline_ns);
    }
    if (rc != SL_OK && keep) {
        free(*keep);
        *keep = NULL;
    }
    if (c->out.cap > WBUF_KEEP_BYTES)
        proto_wbuf_free(&c->out);
    return rc;
}

int wire_msg_send(sl_client *c, const proto_msg *m, int flags)
{
    return msg_send_keep(c, m, flags, NULL, NULL);
}

void wire_hello_init(const sl_client *c, proto_msg *m, uint64_t credit)
{
    proto_init(m, PROTO_HELLO);
    proto_set(m, v, PROTO_VERSION);
    if (c->has_pool)
        proto_set_str(m, PROTO_F_pool, c->pool, strlen(c->pool));
    if (c->levels.n)
        proto_set(m, levels, c->levels);
    if (credit)
        proto_set(m, credit, credit);
}

/* ---- the pump: everything received is routed here ---- */

static void frame_release(sl_client *c)
{
    zmq_msg_close(&c->frame);
    zmq_msg_init(&c->frame);
}

/* monitor_drain counts completed handshakes and, unless closing, reacts to
 * reconnections. */
static void monitor_drain(sl_client *c, bool closing)
{
    if (!c->mon) /* the stream transport: no monitor */
        return;
    for (int i = 0; i < MONITOR_BATCH; i++) {
        zmq_msg_t ev;
        uint16_t event = 0;
        uint32_t value = 0;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        if (zmq_msg_size(&ev) >= sizeof event + sizeof value) {
            memcpy(&event, zmq_msg_data(&ev), sizeof event);
            memcpy(&value, (const char *)zmq_msg_data(&ev) + sizeof event, sizeof value);
        }
        /* refused by the broker's ZAP handler (unknown key), or CURVE on one
         * side only: no retry will succeed until the broker's auth changes */
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ||
            (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH))
            c->auth_refused = 1;
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            c->auth_refused = 0, c->refused_since_ns = 0;
        /* never connected, and the attempt failed (refused: nothing listens
         * there); libzmq retries it. A retry after a connection was made
         * (a broker that closed it, as one with CURVE does to a plaintext
         * client) is no refusal: the handshake's own event says why. */
        if (event == ZMQ_EVENT_CONNECTED)
            c->reached = true, c->refused_since_ns = 0;
        if (event == ZMQ_EVENT_CONNECT_RETRIED && c->handshakes == 0 && !c->reached && !c->refused_since_ns)
            c->refused_since_ns = now_ns();
        if (failover_on(c) && !closing && (event == ZMQ_EVENT_CONNECT_RETRIED || event == ZMQ_EVENT_DISCONNECTED))
            failover_lost(c); /* another address, shortly, unless this one answers first */
        /* an event is two frames: id and value, then the endpoint */
        while (zmq_msg_more(&ev) && zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) >= 0)
            ;
        zmq_msg_close(&ev);
        if (event == ZMQ_EVENT_DISCONNECTED) {
            c->connected = false;
            wire_settles_lost(c); /* their answers will never come */
            /* A broker with CURVE closes a plaintext client's connection
             * during the greeting, and may do so before the client has read
             * the mechanism that would name the mismatch: the client then
             * sees only the close. Twice before any handshake succeeded is
             * that refusal, not a broker going away. */
            if (c->handshakes == 0 && c->reached && ++c->early_closes >= 2)
                c->auth_refused = 1;
        }
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            c->connected = true;
            c->await_reached |= c->await_seq != 0; /* what waited in the pipe goes out now */
            c->move_due = false; /* it answers: stay (a redirect may move it again) */
        }
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && ++c->handshakes > 1 && !closing)
            wire_reconnected(c);
        else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && c->resend_due && !closing)
            failover_resend(c); /* the first handshake, on an address moved to */
    }
}

/* monitor_look drains the monitor after a wait in zmq_poll (forced: the
 * wait may have ended for its sake) and otherwise at most every
 * MONITOR_EVERY_NS. An empty non-blocking read of the monitor costs ZeroMQ
 * a poll(2) and a getpid(2); done before every frame, it took a sixth of a
 * publishing client's main thread. So a burst of frames already received is
 * routed before an event that came during it, at most 1 ms late, which
 * changes nothing: a new connection's first frames answer requests sent
 * on it, and its deliveries wait for the HELLO that the event sends. */
static void monitor_look(sl_client *c, bool forced)
{
    int64_t now = now_ns();
    if (!forced && now - c->mon_looked_ns < MONITOR_EVERY_NS)
        return;
    c->mon_looked_ns = now;
    monitor_drain(c, false);
}

/* frame_take receives and routes one frame if one is ready; *got tells. */
int wire_frame_take(sl_client *c, bool *got)
{
    *got = false;
    if (c->over_stream) {
        int rc = cstream_take(c, got);
        if (rc || !*got)
            return rc;
    } else if (zmq_msg_recv(&c->frame, c->sock, ZMQ_DONTWAIT) < 0) {
        return errno == EAGAIN || errno == EINTR ? SL_OK : SL_ECONNECT;
    }
    *got = true;
    bool had_reply = c->have_reply;
    int rc = SL_OK;
    if (!c->over_stream && zmq_msg_more(&c->frame)) {
        /* not one frame: a protocol violation, dropped whole (the parts of a
         * message arrive together) */
        while (zmq_msg_more(&c->frame) && zmq_msg_recv(&c->frame, c->sock, ZMQ_DONTWAIT) >= 0)
            ;
    } else {
        rc = wire_route(c);
    }
    if (had_reply || !c->have_reply)
        frame_release(c); /* a new reply is read from the frame, so it stays */
    return rc;
}

static bool waited(const sl_client *c, wait_for w)
{
    switch (w) {
    case WAIT_REPLY: return c->have_reply;
    case WAIT_CONFIRM: return c->confirms.count > 0;
    case WAIT_DELIVERY: return c->deliveries.count > 0;
    case WAIT_SETTLED: return c->settles.count == 0;
    }
    return true;
}

/* handshake_refused fails the call (SL_EPERM) when the broker refused the
 * handshake: the first, or a reconnection's (its key was revoked and its
 * connection closed); else 0. */
static int handshake_refused(sl_client *c)
{
    if (!c->auth_refused || (c->handshakes > 0 && c->connected))
        return 0;
    static const char why[] = "the broker refused the handshake: this client's key is not in its auth "
                              "file, or CURVE is on at one end only (check --key and --server-key)";
    return client_fail_text(c, SL_EPERM, why, sizeof why - 1);
}

/* pump routes incoming frames until w holds (SL_OK) or deadline_ns passes
 * (SL_ETIMEDOUT), or the broker refused the handshake (SL_EPERM): the first,
 * or a reconnection's (its key was revoked and its connection closed). Past the deadline it still drains up to LATE_FRAMES_MAX
 * frames that are already there, so a zero timeout sees them. */
static int pump(sl_client *c, int64_t deadline_ns, wait_for w)
{
    unsigned late = 0;
    bool polled = false;
    for (;;) {
        monitor_look(c, polled);
        polled = false;
        if (waited(c, w))
            return SL_OK;
        int refused = handshake_refused(c);
        if (refused)
            return refused;
        int64_t refused_until = c->refused_since_ns && c->handshakes == 0 && !failover_on(c)
                                    ? c->refused_since_ns + REFUSED_GRACE_NS : 0;
        if (refused_until && now_ns() >= refused_until) { /* refused, retried for a while: nothing listens */
            static const char why[] = "connection refused: nothing listens at the broker's endpoint";
            return client_fail_text(c, SL_ECONNECT, why, sizeof why - 1);
        }
        long wait_ms = wait_ms_until(deadline_ns);
        if (refused_until) { /* wake when the grace ends */
            long grace_ms = (long)((refused_until - now_ns()) / 1000000) + 1;
            if (wait_ms < 0 || grace_ms < wait_ms)
                wait_ms = grace_ms;
        }
        bool got;
        int rc = wire_frame_take(c, &got);
        if (rc)
            return rc;
        if (c->stream_lost) { /* its replies will never come */
            static const char why[] = "the connection to the broker was lost before the reply arrived";
            wire_stream_lost_end(c);
            if (w == WAIT_REPLY && !c->have_reply)
                return client_fail_text(c, SL_ECONNECT, why, sizeof why - 1);
            continue;
        }
        if (got) {
            if (wait_ms == 0 && ++late > LATE_FRAMES_MAX && !waited(c, w))
                return SL_ETIMEDOUT;
            continue;
        }
        /* a move only once nothing more is to be read: zmq_disconnect drops
         * what the old connection delivered, and a reply the broker sent
         * just before it went (a switchover's OK, from the node it deposes)
         * would be asked of the new primary again */
        if (failover_on(c) && failover_tick(c, now_ns())) {
            if (w == WAIT_REPLY && failover_lost_once(c)) { /* not sent again (proto_repeat.h) */
                char why[PROTO_MAX_STR];
                int n = snprintf(why, sizeof why,
                                 "the connection to the broker was lost before %s was answered: it may have run "
                                 "there; look before asking again", c->await_once);
                return client_fail_text(c, SL_ECONNECT, why, n < (int)sizeof why ? (size_t)n : sizeof why - 1);
            }
            continue;
        }
        if (wait_ms == 0)
            return SL_ETIMEDOUT;
        long move_ms = failover_on(c) ? failover_wake_ms(c, now_ns()) : -1;
        if (move_ms >= 0 && (wait_ms < 0 || move_ms < wait_ms))
            wait_ms = move_ms;
        zmq_pollitem_t items[] = {
            {.socket = c->sock, .events = ZMQ_POLLIN},
            {.socket = c->mon, .events = ZMQ_POLLIN},
        };
        int nitems = 2;
        if (c->over_stream) { /* its socket alone */
            static const char why[] = "not connected to the broker's stream endpoint: nothing can arrive";
            if (c->sfd < 0 && !c->subscribed)
                return client_fail_text(c, SL_ECONNECT, why, sizeof why - 1);
            if (c->sfd < 0 && wire_stream_revive(c, now_ns(), deadline_ns) != SL_OK) { /* a consumer: try again shortly */
                long retry_ms = (long)((c->stream_retry_ns - now_ns()) / 1000000) + 1;
                if (wait_ms < 0 || retry_ms < wait_ms)
                    wait_ms = retry_ms;
                nitems = 0;
            } else {
                items[0] = (zmq_pollitem_t){.fd = c->sfd, .events = ZMQ_POLLIN};
                nitems = 1;
            }
        }
        if (zmq_poll(items, nitems, wait_ms) < 0 && errno != EINTR)
            return SL_ECONNECT;
        /* the monitor is drained at once only when the wait ended for its
         * sake: a reply alone (a synchronous send's usual wake) costs no
         * read of it, which is a poll(2) and a getpid(2) */
        polled = nitems == 2 && (items[1].revents & ZMQ_POLLIN) != 0;
    }
}

int wire_wait_confirm(sl_client *c, int timeout_ms)
{
    return pump(c, deadline_after(timeout_ms), WAIT_CONFIRM);
}

int wire_wait_delivery(sl_client *c, int timeout_ms)
{
    return pump(c, deadline_after(timeout_ms), WAIT_DELIVERY);
}

int wire_request(sl_client *c, proto_msg *m)
{
    int64_t deadline_ns = deadline_after(c->timeout_ms);
    uint64_t seq = c->next_seq++;
    proto_set(m, seq, seq);
    free(c->await_frame);
    c->await_frame = NULL;
    int rc = msg_send_keep(c, m, 0, failover_on(c) ? &c->await_frame : NULL, &c->await_frame_len);
    if (rc)
        return rc;
    c->await_seq = seq;
    c->have_reply = false;
    c->await_redirected = false;
    c->await_reached = c->connected;
    rc = pump(c, deadline_ns, WAIT_REPLY);
    c->await_seq = 0;
    return rc;
}

int wire_settle(sl_client *c, proto_msg *m)
{
    monitor_look(c, false);
    if (c->auth_refused && !c->connected) /* revoked: its reconnection is refused; do not wait to send */
        return SL_EPERM;
    uint64_t seq = c->next_seq++;
    if (fifo_push(&c->settles, &seq))
        return SL_ENOMEM;
    proto_set(m, seq, seq);
    int rc = wire_msg_send(c, m, 0);
    if (rc)
        fifo_remove(&c->settles, c->settles.count - 1, NULL);
    return rc;
}

int wire_wait_settled(sl_client *c, int timeout_ms)
{
    return pump(c, deadline_after(timeout_ms), WAIT_SETTLED);
}

int wire_post(sl_client *c, proto_msg *m)
{
    proto_set(m, seq, c->next_seq++);
    return wire_msg_send(c, m, 0);
}

/* runs_ask sends, once per connection before its first async publish, a
 * producer's HELLO with runs: the broker may then confirm a run of
 * consecutive publishes with one PUT_OK (route.c reads its confirms). Best
 * effort, tried once (a full pipe is no time to try again with every
 * publish): its WELCOME is dropped as a stray, and so is an older broker's
 * ERROR for a field it does not know, which then confirms one by one. Not
 * over the stream transport, where a send that cannot wait may cut a frame
 * short and end the connection; its confirmations of a pass already leave
 * in one write. */
static void runs_ask(sl_client *c)
{
    proto_msg h;
    proto_init(&h, PROTO_HELLO);
    proto_set(&h, v, PROTO_VERSION);
    proto_set(&h, runs, 1);
    proto_set(&h, seq, c->next_seq++);
    wire_msg_send(c, &h, ZMQ_DONTWAIT);
    c->runs_asked = true;
}

int wire_publish(sl_client *c, proto_msg *m, uint64_t ticket)
{
    if (!c->runs_asked && !c->over_stream)
        runs_ask(c);
    pending_put pp = {.seq = c->next_seq++, .ticket = ticket};
    proto_set(m, seq, pp.seq);
    int rc = msg_send_keep(c, m, 0, failover_on(c) ? &pp.frame : NULL, &pp.frame_len);
    if (rc == SL_OK && fifo_push(&c->puts, &pp)) {
        free(pp.frame);
        return SL_ENOMEM; /* (sent, but its confirmation will be a stray) */
    }
    return rc;
}

/* ---- closing (wire_open.c opens) ---- */

void wire_close(sl_client *c)
{
    if (c->sock && c->mon) {
        /* linger only flushes to a broker that was reached at least once */
        monitor_drain(c, true);
        if (c->subscribed && c->handshakes > 0) {
            /* leave at once, rather than when the broker's next PING fails */
            proto_msg bye;
            proto_init(&bye, PROTO_BYE);
            wire_msg_send(c, &bye, ZMQ_DONTWAIT);
        }
        if (c->handshakes == 0 || !c->connected) { /* never reached, or gone: nobody to flush to */
            int linger_ms = 0;
            zmq_setsockopt(c->sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
        }
    }
    if (c->over_stream && c->subscribed && c->sfd >= 0) { /* leave at once (as below) */
        proto_msg bye;
        proto_init(&bye, PROTO_BYE);
        wire_msg_send(c, &bye, ZMQ_DONTWAIT);
    }
    if (c->over_stream)
        cstream_close(c);
    if (c->sock)
        zmq_socket_monitor(c->sock, NULL, 0);
    if (c->mon)
        zmq_close(c->mon);
    if (c->sock)
        zmq_close(c->sock);
    if (c->ctx)
        zctx_give(c->ctx);
    c->ctx = NULL;
    zmq_msg_close(&c->frame);
    proto_wbuf_free(&c->out);
    for (size_t i = 0; i < c->puts.count; i++)
        free(((pending_put *)fifo_at(&c->puts, i))->frame);
    failover_close(c);

    client_confirm q;
    while (c->confirms.count) {
        fifo_remove(&c->confirms, 0, &q);
        free(q.msg);
    }
    wire_deliveries_drop(c);
    fifo_fini(&c->confirms);
    fifo_fini(&c->deliveries);
    fifo_fini(&c->puts);
    fifo_fini(&c->settles);
}
