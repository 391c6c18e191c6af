/*
 * sluice.c - the Sluice client library: one broker connection per sl_client.
 *
 * An sl_client owns a ZeroMQ context with one I/O thread, a DEALER socket
 * connected to the broker, and a PAIR socket that receives the DEALER's
 * monitor events. Every message is one frame holding one msgpack map, built
 * and parsed by proto/ (proto_encode, proto_decode); this file never touches
 * msgpack itself.
 *
 * Everything the broker sends goes through one pump, which every waiting call
 * runs until its own condition holds or its deadline passes:
 *
 *   DELIVER                     queued for sl_recv (one malloc each)
 *   PUT_OK/ERROR of an async    matched by seq to its ticket and queued for
 *     publish                   sl_send_wait, whoever happens to be pumping
 *   the awaited reply           handed to the synchronous caller
 *   PING                        answered with PONG
 *   anything else               dropped, including late replies to requests
 *                               that already timed out: replies are matched
 *                               by seq, so a stray never passes for the
 *                               current answer
 *
 * Requests share one seq counter starting at 1. Tickets are a second counter
 * so that they increase by one per sl_send_async; the pending ring maps each
 * outstanding publish's seq to its ticket. The broker answers a connection in
 * order, so the reply for the oldest outstanding publish is nearly always the
 * next one: the lookup is O(1) in practice, O(outstanding) at worst.
 *
 * sl_send_pending counts publishes whose confirmation sl_send_wait has not
 * yet returned, whether or not the broker has answered, so "while pending,
 * wait" drains everything. When sl_send_wait returns a failed confirmation,
 * sl_last_error gives the broker's text for it.
 *
 * Reconnection. ZeroMQ reconnects the DEALER by itself when the broker
 * restarts or heartbeats time out, but the broker forgets a connection's
 * subscription and ends its leases when it goes. The monitor reports each
 * completed handshake; from the second one on, the client drops deliveries it
 * has queued but not handed out (their leases ended with the old connection)
 * and, if subscribed, sends its HELLO again. The window it asks for leaves out
 * the deliveries the application still holds, because their ACK or NACK will
 * carry one credit each. Requests in flight when a connection drops are not
 * resent: they time out, and a publish's fate is then unknown.
 *
 * Errors. Broker ERROR replies carry a wire code that is returned as is, and
 * a text kept for sl_last_error; local failures keep the generic message. The
 * library prints nothing.
 *
 * Time. Every wait is bounded by a CLOCK_MONOTONIC deadline and every send by
 * ZMQ_SNDTIMEO. Cost per publish: one encode (a copy of the body) and one copy
 * into ZeroMQ; per delivery: one decode and one copy.
 */
#include "sluice.h"

#include "proto.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define DEFAULT_TIMEOUT_MS   5000
#define DEFAULT_HEARTBEAT_MS 1000
#define LINGER_MS            1000     /* lets a final ACK leave on sl_close */
#define HWM_MSGS             100000
#define MAX_CREDIT           100000   /* the broker's cap per connection */
#define MAX_HEARTBEAT_TTL_MS 6553599  /* ZMQ_HEARTBEAT_TTL's ceiling */
#define WBUF_KEEP_BYTES      (1u << 20) /* larger encode buffers are freed after use */
#define LATE_FRAMES_MAX      1024     /* frames still drained once the deadline passed */
#define MONITOR_BATCH        64       /* monitor events handled per pump pass */
#define MONITOR_ENDPOINT     "inproc://sluice-monitor"

/* ---- a growable ring of fixed-size items, oldest first ---- */

typedef struct fifo {
    unsigned char *items;
    size_t item_bytes, head, count, cap;
} fifo;

static void *fifo_at(const fifo *f, size_t i)
{
    return f->items + ((f->head + i) % f->cap) * f->item_bytes;
}

static int fifo_push(fifo *f, const void *item)
{
    if (f->count == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        if (cap > SIZE_MAX / f->item_bytes)
            return SL_ENOMEM;
        unsigned char *p = malloc(cap * f->item_bytes);
        if (!p)
            return SL_ENOMEM;
        for (size_t i = 0; i < f->count; i++)
            memcpy(p + i * f->item_bytes, fifo_at(f, i), f->item_bytes);
        free(f->items);
        f->items = p;
        f->head = 0;
        f->cap = cap;
    }
    f->count++;
    memcpy(fifo_at(f, f->count - 1), item, f->item_bytes);
    return SL_OK;
}

/* fifo_remove takes out item i (copied to out if not NULL), keeping order. */
static void fifo_remove(fifo *f, size_t i, void *out)
{
    if (out)
        memcpy(out, fifo_at(f, i), f->item_bytes);
    if (i == 0) {
        f->head = (f->head + 1) % f->cap;
    } else {
        for (; i + 1 < f->count; i++)
            memcpy(fifo_at(f, i), fifo_at(f, i + 1), f->item_bytes);
    }
    f->count--;
}

static void fifo_fini(fifo *f)
{
    free(f->items);
    f->items = NULL;
    f->head = f->count = f->cap = 0;
}

/* ---- the client ---- */

typedef struct pending_put {
    uint64_t seq, ticket;
} pending_put;

typedef struct queued_confirm {
    sl_confirm confirm;
    char *msg; /* the broker's text when confirm.err != SL_OK; else NULL */
} queued_confirm;

typedef enum wait_for { WAIT_REPLY, WAIT_CONFIRM, WAIT_DELIVERY } wait_for;

struct sl_client {
    void *ctx, *sock, *mon;
    int timeout_ms;
    zmq_msg_t frame; /* the frame last received */
    proto_wbuf out;  /* encode buffer */
    uint64_t next_seq, last_ticket;

    uint64_t await_seq; /* the synchronous request waited for; 0 for none */
    bool have_reply;
    proto_msg reply;    /* its reply; strings point into frame */

    fifo puts;       /* pending_put: async publishes the broker has not answered */
    fifo confirms;   /* queued_confirm: answered, not yet returned */
    fifo deliveries; /* sl_delivery *: received, not yet returned */

    bool have_levels; /* from a WELCOME */
    unsigned nlevels;
    char level_names[SL_MAX_LEVELS][PROTO_MAX_NAME + 1];
    const char *level_ptrs[SL_MAX_LEVELS];
    uint64_t max_body_bytes;

    /* The subscription, kept to renew it after a reconnection. */
    bool subscribed;
    bool has_pool;
    char pool[PROTO_MAX_NAME + 1];
    proto_u64s levels;
    unsigned window;   /* credit window */
    size_t unsettled;  /* deliveries handed out and not yet acked or nacked */
    uint64_t limit;    /* most deliveries to ask for in all; 0 = no limit */
    uint64_t granted;  /* credit granted so far */
    uint64_t received; /* deliveries handed out so far */
    uint64_t handshakes;

    int last_code;
    char last_msg[PROTO_MAX_STR + 1];
};

/* ---- errors ---- */

const char *sl_strerror(int err)
{
    return proto_strerror(err);
}

const char *sl_errname(int err)
{
    return proto_errname(err);
}

const char *sl_last_error(const sl_client *c)
{
    if (!c)
        return sl_strerror(SL_EINVAL);
    return c->last_msg[0] ? c->last_msg : sl_strerror(c->last_code);
}

static void err_clear(sl_client *c)
{
    c->last_code = SL_OK;
    c->last_msg[0] = '\0';
}

/* fail_text records code with text (not NUL-terminated) and returns code. */
static int fail_text(sl_client *c, int code, const char *text, size_t len)
{
    if (len > sizeof c->last_msg - 1)
        len = sizeof c->last_msg - 1;
    c->last_code = code;
    if (len)
        memcpy(c->last_msg, text, len);
    c->last_msg[len] = '\0';
    return code;
}

/* fail records code with its generic message and returns it. */
static int fail(sl_client *c, int code)
{
    const char *text = sl_strerror(code);
    return fail_text(c, code, text, strlen(text));
}

/* wire_code turns an ERROR's code into a return value. Codes are only ever
 * appended, so one newer than this library is passed through unchanged. */
static int wire_code(uint64_t code)
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

/* msg_send encodes m and sends it as one frame. A blocking send gives up
 * after ZMQ_SNDTIMEO (the client's timeout) with SL_ETIMEDOUT. */
static int msg_send(sl_client *c, const proto_msg *m, int flags)
{
    int64_t deadline_ns = deadline_after(c->timeout_ms);
    proto_wbuf_reset(&c->out);
    int rc = proto_encode(m, &c->out);
    while (rc == SL_OK && zmq_send(c->sock, c->out.data, c->out.len, flags) < 0) {
        if (errno == EINTR && !(flags & ZMQ_DONTWAIT) && now_ns() < deadline_ns)
            continue;
        rc = errno == EAGAIN || errno == EINTR ? SL_ETIMEDOUT : SL_ECONNECT;
    }
    if (c->out.cap > WBUF_KEEP_BYTES)
        proto_wbuf_free(&c->out);
    return rc;
}

/* hello_init fills m with the HELLO of the client's subscription, asking for
 * credit (none when 0). The caller sets seq. */
static void hello_init(const sl_client *c, proto_msg *m, uint64_t credit)
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

static void deliveries_drop(sl_client *c)
{
    sl_delivery *d;
    while (c->deliveries.count) {
        fifo_remove(&c->deliveries, 0, &d);
        free(d);
    }
}

/* reconnected runs on every handshake after the first: the broker has
 * forgotten this connection, so renew the subscription (see the top). */
static void reconnected(sl_client *c)
{
    deliveries_drop(c);
    if (!c->subscribed)
        return;
    size_t held = c->unsettled < c->window ? c->unsettled : c->window;
    uint64_t credit = c->window - held;
    if (c->limit) {
        uint64_t left = c->limit > c->received + held ? c->limit - c->received - held : 0;
        credit = credit < left ? credit : left;
    }
    c->granted = c->received + held + credit;
    proto_msg m;
    hello_init(c, &m, credit);
    proto_set(&m, seq, c->next_seq++); /* its WELCOME is dropped as a stray */
    msg_send(c, &m, ZMQ_DONTWAIT);     /* if it fails, nothing better to do */
}

/* monitor_drain counts completed handshakes and, unless closing, reacts to
 * reconnections. */
static void monitor_drain(sl_client *c, bool closing)
{
    for (int i = 0; i < MONITOR_BATCH; i++) {
        zmq_msg_t ev;
        uint16_t event = 0;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        if (zmq_msg_size(&ev) >= sizeof event)
            memcpy(&event, zmq_msg_data(&ev), sizeof event);
        /* an event is two frames: id and value, then the endpoint */
        while (zmq_msg_more(&ev) && zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) >= 0)
            ;
        zmq_msg_close(&ev);
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && ++c->handshakes > 1 && !closing)
            reconnected(c);
    }
}

static int delivery_queue(sl_client *c, const proto_msg *m)
{
    if (m->level >= SL_MAX_LEVELS)
        return SL_OK; /* nonsense from the broker: its lease will run out */
    size_t tag_len = proto_has(m, PROTO_F_tag) ? m->tag.len : 0;
    sl_delivery *d = malloc(sizeof *d + m->body.len + 1 + tag_len + 1);
    if (!d)
        return SL_ENOMEM;
    char *body = (char *)(d + 1);
    char *tag = body + m->body.len + 1;
    if (m->body.len)
        memcpy(body, m->body.ptr, m->body.len);
    body[m->body.len] = '\0';
    if (tag_len)
        memcpy(tag, m->tag.ptr, tag_len);
    tag[tag_len] = '\0';
    *d = (sl_delivery){
        .id = m->id,
        .token = m->token,
        .level = (unsigned)m->level,
        .attempt = m->attempt > UINT_MAX ? UINT_MAX : (unsigned)m->attempt,
        .lease_ms = m->lease_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)m->lease_ms,
        .tag = tag,
        .body = body,
        .body_len = m->body.len,
    };
    if (fifo_push(&c->deliveries, &d)) {
        free(d);
        return SL_ENOMEM;
    }
    return SL_OK;
}

/* confirm_queue turns the reply to async publish number i into a queued
 * confirmation. */
static int confirm_queue(sl_client *c, size_t i, const proto_msg *m)
{
    pending_put *p = fifo_at(&c->puts, i);
    queued_confirm q = {.confirm = {.ticket = p->ticket}};
    if (m->type == PROTO_PUT_OK) {
        q.confirm.id = m->id;
    } else {
        q.confirm.err = wire_code(m->code);
        q.msg = strndup(m->msg.len ? m->msg.ptr : "", m->msg.len);
        if (!q.msg)
            return SL_ENOMEM;
    }
    if (fifo_push(&c->confirms, &q)) {
        free(q.msg);
        return SL_ENOMEM;
    }
    fifo_remove(&c->puts, i, NULL);
    return SL_OK;
}

static int reply_route(sl_client *c, const proto_msg *m)
{
    bool has_seq = proto_has(m, PROTO_F_seq);
    /* An ERROR without seq answers a request the broker could not parse. It
     * is attributed to the awaited request only when no publish could own it. */
    bool awaited = has_seq ? m->seq == c->await_seq
                           : m->type == PROTO_ERROR && c->puts.count == 0;
    if (c->await_seq && !c->have_reply && awaited) {
        c->reply = *m;
        c->have_reply = true;
        return SL_OK;
    }
    if (!has_seq || (m->type != PROTO_PUT_OK && m->type != PROTO_ERROR))
        return SL_OK;
    for (size_t i = 0; i < c->puts.count; i++)
        if (((pending_put *)fifo_at(&c->puts, i))->seq == m->seq)
            return confirm_queue(c, i, m);
    return SL_OK; /* a stray */
}

static int frame_route(sl_client *c)
{
    proto_msg m;
    if (proto_decode(zmq_msg_data(&c->frame), zmq_msg_size(&c->frame), &m, NULL) != SL_OK)
        return SL_OK; /* undecodable: dropped, and whoever waits times out */
    switch (m.type) {
    case PROTO_DELIVER:
        return delivery_queue(c, &m);
    case PROTO_PING: {
        proto_msg pong;
        proto_init(&pong, PROTO_PONG);
        if (proto_has(&m, PROTO_F_seq))
            proto_set(&pong, seq, m.seq);
        msg_send(c, &pong, ZMQ_DONTWAIT); /* best effort: PONG is optional */
        return SL_OK;
    }
    case PROTO_PUT_OK:
    case PROTO_ERROR:
    case PROTO_WELCOME:
    case PROTO_OK:
    case PROTO_STATS_OK:
        return reply_route(c, &m);
    default:
        return SL_OK;
    }
}

/* frame_take receives and routes one frame if one is ready; *got tells. */
static int frame_take(sl_client *c, bool *got)
{
    *got = false;
    if (zmq_msg_recv(&c->frame, c->sock, ZMQ_DONTWAIT) < 0)
        return errno == EAGAIN || errno == EINTR ? SL_OK : SL_ECONNECT;
    *got = true;
    bool had_reply = c->have_reply;
    int rc = SL_OK;
    if (zmq_msg_more(&c->frame)) {
        /* not one frame: a protocol violation, dropped whole (the parts of a
         * message arrive together) */
        while (zmq_msg_more(&c->frame) && zmq_msg_recv(&c->frame, c->sock, ZMQ_DONTWAIT) >= 0)
            ;
    } else {
        rc = frame_route(c);
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
    }
    return true;
}

/* pump routes incoming frames until w holds (SL_OK) or deadline_ns passes
 * (SL_ETIMEDOUT). Past the deadline it still drains up to LATE_FRAMES_MAX
 * frames that are already there, so a zero timeout sees them. */
static int pump(sl_client *c, int64_t deadline_ns, wait_for w)
{
    unsigned late = 0;
    for (;;) {
        monitor_drain(c, false);
        if (waited(c, w))
            return SL_OK;
        long wait_ms = wait_ms_until(deadline_ns);
        bool got;
        int rc = frame_take(c, &got);
        if (rc)
            return rc;
        if (got) {
            if (wait_ms == 0 && ++late > LATE_FRAMES_MAX && !waited(c, w))
                return SL_ETIMEDOUT;
            continue;
        }
        if (wait_ms == 0)
            return SL_ETIMEDOUT;
        zmq_pollitem_t items[] = {
            {.socket = c->sock, .events = ZMQ_POLLIN},
            {.socket = c->mon, .events = ZMQ_POLLIN},
        };
        if (zmq_poll(items, 2, wait_ms) < 0 && errno != EINTR)
            return SL_ECONNECT;
    }
}

/* request sends m, setting its seq, and waits for the reply to it. On SL_OK
 * c->reply holds a reply of type want, valid until the next receive. An ERROR
 * reply returns its code and keeps its text for sl_last_error. */
static int request(sl_client *c, proto_msg *m, proto_type want)
{
    int64_t deadline_ns = deadline_after(c->timeout_ms);
    uint64_t seq = c->next_seq++;
    proto_set(m, seq, seq);
    int rc = msg_send(c, m, 0);
    if (rc)
        return fail(c, rc);
    c->await_seq = seq;
    c->have_reply = false;
    rc = pump(c, deadline_ns, WAIT_REPLY);
    c->await_seq = 0;
    if (rc)
        return fail(c, rc);
    if (c->reply.type == PROTO_ERROR)
        return fail_text(c, wire_code(c->reply.code), c->reply.msg.ptr, c->reply.msg.len);
    if (c->reply.type != want)
        return fail(c, SL_EPROTO);
    return SL_OK;
}

/* ---- connection ---- */

static int socket_setup(void *sock, int timeout_ms, int heartbeat_ms)
{
    int linger_ms = LINGER_MS, hwm = HWM_MSGS;
    int64_t ttl = 3 * (int64_t)heartbeat_ms;
    int hb_timeout_ms = ttl > INT_MAX ? INT_MAX : (int)ttl;
    int hb_ttl_ms = ttl > MAX_HEARTBEAT_TTL_MS ? MAX_HEARTBEAT_TTL_MS : (int)ttl;
    int64_t max_frame_bytes = PROTO_MAX_FRAME;
    if (zmq_setsockopt(sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms) ||
        zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max_frame_bytes, sizeof max_frame_bytes) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_IVL, &heartbeat_ms, sizeof heartbeat_ms) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout_ms, sizeof hb_timeout_ms) ||
        zmq_setsockopt(sock, ZMQ_HEARTBEAT_TTL, &hb_ttl_ms, sizeof hb_ttl_ms))
        return SL_EINVAL;
    return SL_OK;
}

int sl_connect(const char *endpoint, const sl_options *opts, sl_client **out)
{
    if (!out)
        return SL_EINVAL;
    *out = NULL;
    int timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    int heartbeat_ms = opts && opts->heartbeat_ms ? opts->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
    if (timeout_ms < 0 || heartbeat_ms < 0)
        return SL_EINVAL;

    sl_client *c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    c->timeout_ms = timeout_ms;
    c->next_seq = 1;
    c->puts.item_bytes = sizeof(pending_put);
    c->confirms.item_bytes = sizeof(queued_confirm);
    c->deliveries.item_bytes = sizeof(sl_delivery *);
    zmq_msg_init(&c->frame);

    int rc = SL_ENOMEM;
    int mon_linger_ms = 0;
    if (!(c->ctx = zmq_ctx_new()) || zmq_ctx_set(c->ctx, ZMQ_IO_THREADS, 1) ||
        !(c->sock = zmq_socket(c->ctx, ZMQ_DEALER)))
        goto close;
    if ((rc = socket_setup(c->sock, timeout_ms, heartbeat_ms)))
        goto close;
    /* the monitor is in place before connecting, so it sees the first handshake */
    rc = SL_ENOMEM;
    if (zmq_socket_monitor(c->sock, MONITOR_ENDPOINT, ZMQ_EVENT_HANDSHAKE_SUCCEEDED) ||
        !(c->mon = zmq_socket(c->ctx, ZMQ_PAIR)) ||
        zmq_setsockopt(c->mon, ZMQ_LINGER, &mon_linger_ms, sizeof mon_linger_ms) ||
        zmq_connect(c->mon, MONITOR_ENDPOINT))
        goto close;
    if (zmq_connect(c->sock, endpoint ? endpoint : SL_DEFAULT_ENDPOINT)) {
        rc = errno == ENOMEM || errno == EMTHREAD ? SL_ENOMEM : SL_EINVAL;
        goto close;
    }
    *out = c;
    return SL_OK;

close:
    sl_close(&c);
    return rc;
}

void sl_close(sl_client **cp)
{
    if (!cp || !*cp)
        return;
    sl_client *c = *cp;
    if (c->sock && c->mon) {
        /* linger only flushes to a broker that was reached at least once */
        monitor_drain(c, true);
        if (c->subscribed && c->handshakes > 0) {
            /* leave at once, rather than when the broker's next PING fails */
            proto_msg bye;
            proto_init(&bye, PROTO_BYE);
            msg_send(c, &bye, ZMQ_DONTWAIT);
        }
        if (c->handshakes == 0) {
            int linger_ms = 0;
            zmq_setsockopt(c->sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
        }
    }
    if (c->sock)
        zmq_socket_monitor(c->sock, NULL, 0);
    if (c->mon)
        zmq_close(c->mon);
    if (c->sock)
        zmq_close(c->sock);
    /* waits at most LINGER_MS for unsent frames; retried after a signal */
    while (c->ctx && zmq_ctx_term(c->ctx) < 0 && errno == EINTR)
        ;
    zmq_msg_close(&c->frame);
    proto_wbuf_free(&c->out);

    queued_confirm q;
    while (c->confirms.count) {
        fifo_remove(&c->confirms, 0, &q);
        free(q.msg);
    }
    deliveries_drop(c);
    fifo_fini(&c->confirms);
    fifo_fini(&c->deliveries);
    fifo_fini(&c->puts);
    free(c);
    *cp = NULL;
}

/* ---- levels ---- */

/* welcome_take caches what c->reply, a WELCOME, tells. */
static int welcome_take(sl_client *c)
{
    const proto_msg *w = &c->reply;
    if (w->v != PROTO_VERSION)
        return fail(c, SL_EVERSION);
    if (w->names.n == 0)
        return fail(c, SL_EPROTO);
    c->nlevels = w->names.n;
    for (unsigned i = 0; i < c->nlevels; i++) {
        size_t len = w->names.v[i].len;
        if (len)
            memcpy(c->level_names[i], w->names.v[i].ptr, len);
        c->level_names[i][len] = '\0';
        c->level_ptrs[i] = c->level_names[i];
    }
    c->max_body_bytes = w->max_body < PROTO_MAX_BODY ? w->max_body : PROTO_MAX_BODY;
    c->have_levels = true;
    return SL_OK;
}

/* levels_load asks the broker for its levels once: a HELLO with no pool,
 * levels or credit, which the broker treats as a producer's. */
static int levels_load(sl_client *c)
{
    if (c->have_levels)
        return SL_OK;
    proto_msg m;
    proto_init(&m, PROTO_HELLO);
    proto_set(&m, v, PROTO_VERSION);
    int rc = request(c, &m, PROTO_WELCOME);
    return rc ? rc : welcome_take(c);
}

int sl_levels(sl_client *c, unsigned *count, const char *const **names)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    int rc = levels_load(c);
    if (rc)
        return rc;
    if (count)
        *count = c->nlevels;
    if (names)
        *names = c->level_ptrs;
    return SL_OK;
}

/* number_parse reads a short run of decimal digits and nothing else. */
static bool number_parse(const char *text, unsigned *out)
{
    unsigned v = 0;
    size_t n = 0;
    for (; text[n] >= '0' && text[n] <= '9'; n++) {
        if (n == 9)
            return false;
        v = v * 10 + (unsigned)(text[n] - '0');
    }
    *out = v;
    return n > 0 && text[n] == '\0';
}

int sl_level_parse(sl_client *c, const char *text, unsigned *level)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    if (!text || !level)
        return fail(c, SL_EINVAL);
    int rc = levels_load(c);
    if (rc)
        return rc;
    unsigned n;
    if (number_parse(text, &n) && n < c->nlevels) {
        *level = n;
        return SL_OK;
    }
    for (unsigned i = 0; i < c->nlevels; i++) {
        if (strcmp(text, c->level_names[i]) == 0) {
            *level = i;
            return SL_OK;
        }
    }
    return fail(c, SL_ENOLEVEL);
}

/* ---- publishing ---- */

/* put_build checks p and fills m with its PUT; the caller sets seq. m
 * borrows p's body and tag. */
static int put_build(const sl_client *c, const sl_put *p, proto_msg *m)
{
    static const char empty[1];
    if (!p || (!p->body && p->body_len))
        return SL_EINVAL;
    uint64_t max_body_bytes = c->max_body_bytes ? c->max_body_bytes : PROTO_MAX_BODY;
    if (p->body_len > max_body_bytes)
        return SL_ETOOBIG;
    size_t tag_len = p->tag ? strnlen(p->tag, PROTO_MAX_TAG + 1) : 0;
    if (tag_len > PROTO_MAX_TAG)
        return SL_ETOOBIG;
    if (p->level != SL_LEVEL_DEFAULT &&
        (p->level < 0 || p->level >= SL_MAX_LEVELS ||
         (c->have_levels && (unsigned)p->level >= c->nlevels)))
        return SL_ENOLEVEL;
    proto_init(m, PROTO_PUT);
    proto_set_str(m, PROTO_F_body, p->body ? p->body : empty, p->body_len);
    if (p->level != SL_LEVEL_DEFAULT)
        proto_set(m, level, (uint64_t)p->level);
    if (tag_len)
        proto_set_str(m, PROTO_F_tag, p->tag, tag_len);
    return SL_OK;
}

int sl_send(sl_client *c, const sl_put *p, uint64_t *id)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    proto_msg m;
    int rc = put_build(c, p, &m);
    if (rc)
        return fail(c, rc);
    rc = request(c, &m, PROTO_PUT_OK);
    if (rc == SL_OK && id)
        *id = c->reply.id;
    return rc;
}

int sl_send_async(sl_client *c, const sl_put *p, uint64_t *ticket)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    proto_msg m;
    int rc = put_build(c, p, &m);
    if (rc)
        return fail(c, rc);
    pending_put pp = {.seq = c->next_seq++, .ticket = c->last_ticket + 1};
    if (fifo_push(&c->puts, &pp))
        return fail(c, SL_ENOMEM);
    proto_set(&m, seq, pp.seq);
    rc = msg_send(c, &m, 0);
    if (rc) {
        fifo_remove(&c->puts, c->puts.count - 1, NULL);
        return fail(c, rc);
    }
    c->last_ticket = pp.ticket;
    if (ticket)
        *ticket = pp.ticket;
    return SL_OK;
}

int sl_send_wait(sl_client *c, int timeout_ms, sl_confirm *out)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    if (!out)
        return fail(c, SL_EINVAL);
    if (c->confirms.count == 0) {
        if (c->puts.count == 0)
            return fail(c, SL_ESTATE);
        int rc = pump(c, deadline_after(timeout_ms), WAIT_CONFIRM);
        if (rc)
            return fail(c, rc);
    }
    queued_confirm q;
    fifo_remove(&c->confirms, 0, &q);
    *out = q.confirm;
    if (q.msg)
        fail_text(c, q.confirm.err, q.msg, strlen(q.msg));
    free(q.msg);
    return SL_OK;
}

size_t sl_send_pending(const sl_client *c)
{
    return c ? c->puts.count + c->confirms.count : 0;
}

/* ---- consuming ---- */

int sl_subscribe(sl_client *c, const char *pool, const unsigned *levels, size_t nlevels,
                 unsigned credit)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    if (c->subscribed)
        return fail(c, SL_ESTATE);
    if (!levels)
        nlevels = 0;
    size_t pool_len = pool ? strnlen(pool, PROTO_MAX_NAME + 1) : 0;
    if (nlevels > SL_MAX_LEVELS || (pool && (pool_len == 0 || pool_len > PROTO_MAX_NAME)))
        return fail(c, SL_EINVAL);
    if (nlevels) {
        int rc = levels_load(c);
        if (rc)
            return rc;
        for (size_t i = 0; i < nlevels; i++)
            if (levels[i] >= c->nlevels)
                return fail(c, SL_ENOLEVEL);
    }

    c->has_pool = pool != NULL;
    if (pool)
        memcpy(c->pool, pool, pool_len + 1);
    c->levels.n = (uint32_t)nlevels;
    for (size_t i = 0; i < nlevels; i++)
        c->levels.v[i] = levels[i];
    c->window = credit == 0 ? 1 : credit > MAX_CREDIT ? MAX_CREDIT : credit;
    c->unsettled = 0;
    c->granted = c->limit && c->limit < c->window ? c->limit : c->window;

    proto_msg m;
    hello_init(c, &m, c->granted);
    int rc = request(c, &m, PROTO_WELCOME);
    if (rc == SL_OK)
        rc = welcome_take(c);
    if (rc == SL_OK)
        c->subscribed = true;
    return rc;
}

int sl_recv(sl_client *c, int timeout_ms, sl_delivery **out)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    if (!out)
        return fail(c, SL_EINVAL);
    *out = NULL;
    if (!c->subscribed)
        return fail(c, SL_ESTATE);
    if (c->deliveries.count == 0) {
        int rc = pump(c, deadline_after(timeout_ms), WAIT_DELIVERY);
        if (rc)
            return fail(c, rc);
    }
    fifo_remove(&c->deliveries, 0, out);
    c->unsettled++;
    c->received++;
    return SL_OK;
}

int sl_set_limit(sl_client *c, uint64_t max_deliveries)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    c->limit = max_deliveries;
    return SL_OK;
}

void sl_delivery_free(sl_delivery **d)
{
    if (!d)
        return;
    free(*d);
    *d = NULL;
}

/* settle sends ACK, NACK (ms = delay) or TOUCH (ms = lease) for d and waits
 * for OK. ACK and NACK return one credit, but only to a subscribed client
 * (credit would make a producer's connection a consumer) that is below its
 * limit. */
static int settle(sl_client *c, const sl_delivery *d, proto_type type, uint32_t ms)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    if (!d)
        return fail(c, SL_EINVAL);
    proto_msg m;
    proto_init(&m, type);
    proto_set(&m, token, d->token);
    if (type != PROTO_TOUCH && c->subscribed) {
        if (!c->limit || c->granted < c->limit) {
            proto_set(&m, credit, 1);
            c->granted++;
        }
        if (c->unsettled)
            c->unsettled--;
    }
    if (ms && type == PROTO_NACK)
        proto_set(&m, delay_ms, ms);
    if (ms && type == PROTO_TOUCH)
        proto_set(&m, lease_ms, ms);
    return request(c, &m, PROTO_OK);
}

int sl_ack(sl_client *c, const sl_delivery *d)
{
    return settle(c, d, PROTO_ACK, 0);
}

int sl_nack(sl_client *c, const sl_delivery *d, uint32_t delay_ms)
{
    return settle(c, d, PROTO_NACK, delay_ms);
}

int sl_touch(sl_client *c, const sl_delivery *d, uint32_t lease_ms)
{
    return settle(c, d, PROTO_TOUCH, lease_ms);
}

/* ---- statistics ---- */

int sl_stats_get(sl_client *c, sl_stats *out)
{
    if (!c)
        return SL_EINVAL;
    err_clear(c);
    if (!out)
        return fail(c, SL_EINVAL);
    proto_msg m;
    proto_init(&m, PROTO_STATS);
    int rc = request(c, &m, PROTO_STATS_OK);
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
    const proto_u64s *cols[] = {&r->depth,    &r->inflight,   &r->delayed, &r->dead,
                                &r->oldest_ms, &r->enqueued,  &r->dispatched,
                                &r->acked,    &r->nacked,     &r->expired};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        if (cols[k]->n != r->names.n)
            return fail(c, SL_EPROTO);
    memset(out, 0, sizeof *out);
    out->nlevels = r->names.n;
    out->uptime_ms = r->uptime_ms;
    out->consumers = r->consumers;
    for (unsigned i = 0; i < out->nlevels; i++) {
        sl_level_stats *s = &out->level[i];
        size_t len = r->names.v[i].len < sizeof s->name - 1 ? r->names.v[i].len : sizeof s->name - 1;
        if (len)
            memcpy(s->name, r->names.v[i].ptr, len);
        s->name[len] = '\0';
        s->depth = r->depth.v[i];
        s->inflight = r->inflight.v[i];
        s->delayed = r->delayed.v[i];
        s->dead = r->dead.v[i];
        s->oldest_ms = r->oldest_ms.v[i];
        s->enqueued = r->enqueued.v[i];
        s->dispatched = r->dispatched.v[i];
        s->acked = r->acked.v[i];
        s->nacked = r->nacked.v[i];
        s->expired = r->expired.v[i];
    }
    return SL_OK;
}
