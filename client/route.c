/*
 * route.c - what each frame from the broker means for the client: the
 * routing half of the pump (wire.c receives the frame, this file reads it).
 *
 *   DELIVER                     queued for sl_recv (one malloc each, the
 *                               headers' array and text in it); its
 *                               cost, absent on the wire, reads as 1
 *   PUT_OK/ERROR of an async    matched by seq to its ticket and queued for
 *     publish                   sl_send_wait, whoever happens to be pumping;
 *                               a PUT_OK for a run (confirms > 1) confirms each
 *                               publish it names, with its own id
 *   OK/ERROR of a settlement    matched by seq in the settles ring and
 *                               taken out; an ERROR is counted and kept for
 *                               the next settling call to report
 *   the awaited reply           handed to the synchronous caller
 *   POOL                        its share recorded for sl_share, and the
 *                               sink's pacing share for sl_pace_share
 *   PING                        answered with PONG (best effort)
 *   a malformed reply           read as ERROR SL_EPROTO for its seq
 *   anything else               dropped
 *
 * No clock, no waiting: one decode and at most one queue operation per
 * frame; a publish's reply is found in O(1) in practice (the broker answers
 * in order), O(outstanding) at worst.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "failover.h"
#include "wire.h"

/* delivery_cost reads a DELIVER's cost: absent means 1, and so does 0,
 * which no publish can carry; wider than 32 bits is clamped. */
static uint32_t delivery_cost(const proto_msg *m)
{
    if (!proto_has(m, PROTO_F_cost) || m->cost == 0)
        return 1;
    return m->cost > UINT32_MAX ? UINT32_MAX : (uint32_t)m->cost;
}

static int delivery_queue(sl_client *c, const proto_msg *m)
{
    if (m->level >= SL_MAX_LEVELS)
        return SL_OK; /* nonsense from the broker: its lease will run out */
    size_t tag_len = proto_has(m, PROTO_F_tag) ? m->tag.len : 0;
    uint32_t nh = proto_has(m, PROTO_F_headers) ? m->headers.n : 0;
    size_t hdr_text = 0; /* the headers' names and values, each NUL-terminated */
    for (uint32_t i = 0; i < nh; i++)
        hdr_text += m->headers.name[i].len + 1 + m->headers.value[i].len + 1;
    _Static_assert(sizeof(sl_delivery) % _Alignof(sl_header) == 0, "the header array follows the struct");
    size_t key_len = proto_has(m, PROTO_F_key) ? m->key.len : 0;
    sl_delivery *d = malloc(sizeof *d + nh * sizeof(sl_header) + m->body.len + 1 + tag_len + 1 + hdr_text + key_len + 1);
    if (!d)
        return SL_ENOMEM;
    sl_header *hdrs = (sl_header *)(d + 1);
    char *body = (char *)(hdrs + nh);
    char *tag = body + m->body.len + 1;
    char *text = tag + tag_len + 1;
    for (uint32_t i = 0; i < nh; i++) {
        const proto_buf *n = &m->headers.name[i], *v = &m->headers.value[i];
        hdrs[i].name = memcpy(text, n->ptr, n->len);
        text[n->len] = '\0';
        text += n->len + 1;
        hdrs[i].value = text;
        if (v->len)
            memcpy(text, v->ptr, v->len);
        text[v->len] = '\0';
        text += v->len + 1;
    }
    char *key = text;
    if (key_len)
        memcpy(key, m->key.ptr, key_len);
    key[key_len] = '\0';
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
        .cost = delivery_cost(m),
        .released_ns = proto_has(m, PROTO_F_released_ns) ? m->released_ns : 0,
        .headers = nh ? hdrs : NULL,
        .nheaders = nh,
        .wait_ms = proto_has(m, PROTO_F_wait_ms) ? m->wait_ms : 0,
        .key = key,
    };
    if (fifo_push(&c->deliveries, &d)) {
        free(d);
        return SL_ENOMEM;
    }
    return SL_OK;
}

/* confirm_queue turns the reply to async publish number i into a queued
 * confirmation; a PUT_OK confirms it as message id. */
static int confirm_queue(sl_client *c, size_t i, const proto_msg *m, uint64_t id)
{
    pending_put *p = fifo_at(&c->puts, i);
    client_confirm q = {.confirm = {.ticket = p->ticket}};
    if (m->type == PROTO_PUT_OK) {
        q.confirm.id = id;
        q.confirm.duplicate = (m->present & PF(duplicate)) && m->duplicate;
        if (m->present & PF(epoch))
            q.origin.epoch = m->epoch;
        if (m->present & PF(node)) {
            size_t n = m->node.len < sizeof q.origin.node ? m->node.len : sizeof q.origin.node - 1;
            memcpy(q.origin.node, m->node.ptr, n);
            q.origin.node[n] = '\0';
        }
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
    free(p->frame);
    fifo_remove(&c->puts, i, NULL);
    return SL_OK;
}

/* confirm_run takes a PUT_OK for a run, {seq, id, confirms}: the publishes
 * seq .. seq + confirms - 1, stored as ids id .. id + confirms - 1, each
 * confirmed as if by a PUT_OK of its own. A synchronous publish sent right
 * after asynchronous ones may end their run: the awaited reply is then
 * made from it. The asynchronous ones wait in seq order, so one pass over
 * them finds every one the run names (a seq not waiting is a stray). */
static int confirm_run(sl_client *c, const proto_msg *run)
{
    uint64_t first = run->seq, end = run->seq + run->confirms < run->seq ? UINT64_MAX : run->seq + run->confirms;
    if (c->await_seq && !c->have_reply && c->await_seq >= first && c->await_seq < end) {
        c->reply = *run;
        c->reply.seq = c->await_seq;
        c->reply.id = run->id + (c->await_seq - first);
        c->reply.present &= ~PF(confirms);
        c->have_reply = true;
    }
    for (size_t i = 0; i < c->puts.count;) {
        uint64_t seq = ((pending_put *)fifo_at(&c->puts, i))->seq;
        if (seq >= end)
            break;
        if (seq < first) {
            i++;
            continue;
        }
        int rc = confirm_queue(c, i, run, run->id + (seq - first)); /* it leaves the queue: i is the next */
        if (rc)
            return rc;
    }
    return SL_OK;
}

/* settle_refused counts a settlement the broker refused and keeps the
 * first one not yet reported, for the next settling call to return. */
static void settle_refused(sl_client *c, const proto_msg *m)
{
    c->refused++;
    if (c->refused_unreported)
        return;
    c->refused_unreported = true;
    c->refused_code = wire_code(m->code);
    snprintf(c->refused_msg, sizeof c->refused_msg, "an earlier settlement was refused: %.*s",
             proto_has(m, PROTO_F_msg) ? (int)m->msg.len : 0, proto_has(m, PROTO_F_msg) ? m->msg.ptr : "");
}

static int reply_route(sl_client *c, const proto_msg *m)
{
    bool has_seq = proto_has(m, PROTO_F_seq);
    if (m->type == PROTO_PUT_OK && has_seq && proto_has(m, PROTO_F_confirms) && m->confirms > 1)
        return confirm_run(c, m);
    /* An ERROR without seq answers a request the broker could not parse. It
     * is attributed to the awaited request only when no publish could own it. */
    bool awaited = has_seq ? m->seq == c->await_seq
                           : m->type == PROTO_ERROR && c->puts.count == 0;
    if (failover_on(c) && m->type == PROTO_ERROR && m->code == SL_EREDIRECT) {
        /* a standby: move to the primary it names, and send again there */
        if (c->await_seq && awaited)
            c->await_redirected = true;
        failover_redirect(c, proto_has(m, PROTO_F_url) ? m->url.ptr : NULL, proto_has(m, PROTO_F_url) ? m->url.len : 0);
        return SL_OK;
    }
    if (c->await_seq && !c->have_reply && awaited) {
        c->reply = *m;
        c->have_reply = true;
        return SL_OK;
    }
    if (has_seq && (m->type == PROTO_OK || m->type == PROTO_ERROR))
        for (size_t i = 0; i < c->settles.count; i++)
            if (*(uint64_t *)fifo_at(&c->settles, i) == m->seq) {
                fifo_remove(&c->settles, i, NULL);
                if (m->type == PROTO_ERROR)
                    settle_refused(c, m);
                return SL_OK;
            }
    if (!has_seq || (m->type != PROTO_PUT_OK && m->type != PROTO_ERROR))
        return SL_OK;
    for (size_t i = 0; i < c->puts.count; i++)
        if (((pending_put *)fifo_at(&c->puts, i))->seq == m->seq)
            return confirm_queue(c, i, m, m->id);
    return SL_OK; /* a stray */
}

static void pool_take(sl_client *c, const proto_msg *m)
{
    c->share = m->share > UINT_MAX ? UINT_MAX : (unsigned)m->share;
    if (m->present & PF(rate_milli)) { /* the pacing share (pacer.c) */
        c->pace_rate_milli = m->rate_milli;
        c->pace_burst = m->burst > UINT32_MAX ? UINT32_MAX : (uint32_t)m->burst;
        c->pace_told = 1;
    }
    if (m->present & PF(pacers))
        c->pace_pacers = m->pacers > UINT32_MAX ? UINT32_MAX : (uint32_t)m->pacers;
}

/* malformed_reply turns m, a reply of a known type with a seq that did not
 * decode (why says why), into an ERROR SL_EPROTO for that seq, so that the
 * request it answers fails at once instead of timing out. */
static void malformed_reply(proto_msg *m, const char *why)
{
    uint64_t seq = m->seq;
    proto_init(m, PROTO_ERROR);
    proto_set(m, seq, seq);
    proto_set(m, code, SL_EPROTO);
    proto_set_str(m, PROTO_F_msg, why, strlen(why)); /* a static string */
}

int wire_route(sl_client *c)
{
    proto_msg m;
    const char *why = NULL;
    if (proto_decode(zmq_msg_data(&c->frame), zmq_msg_size(&c->frame), &m, &why) != SL_OK) {
        bool reply = m.type == PROTO_PUT_OK || m.type == PROTO_WELCOME || m.type == PROTO_OK ||
                     m.type == PROTO_STATS_OK || m.type == PROTO_ADMIN_OK;
        if (!reply || !proto_has(&m, PROTO_F_seq))
            return SL_OK; /* undecodable and unattributable: dropped */
        malformed_reply(&m, why ? why : "malformed reply");
    }
    switch (m.type) {
    case PROTO_DELIVER:
        return delivery_queue(c, &m);
    case PROTO_POOL:
        pool_take(c, &m);
        return SL_OK;
    case PROTO_PING: {
        proto_msg pong;
        proto_init(&pong, PROTO_PONG);
        if (proto_has(&m, PROTO_F_seq))
            proto_set(&pong, seq, m.seq);
        wire_msg_send(c, &pong, ZMQ_DONTWAIT); /* best effort: PONG is optional */
        return SL_OK;
    }
    case PROTO_PUT_OK:
    case PROTO_ERROR:
    case PROTO_WELCOME:
    case PROTO_OK:
    case PROTO_STATS_OK:
    case PROTO_ADMIN_OK:
        return reply_route(c, &m);
    default:
        return SL_OK;
    }
}
