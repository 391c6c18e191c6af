/*
 * wire_lost.c - what a lost connection ends, and how a connection is made
 * again: the pump's bookkeeping around reconnections (wire.c).
 *
 * Over ZeroMQ the library never sees a connection go; the monitor reports
 * each new handshake, and from the second on (wire_reconnected) the broker
 * has forgotten the old connection: deliveries queued and not handed out
 * are dropped (their leases ended with it), publishes waiting for their
 * confirmation are confirmed SL_ECONNECT (or sent again, to one broker at
 * several addresses), settlements waiting for their answer are reported
 * lost, and a subscribed client sends its HELLO again.
 *
 * Over the stream transport (cstream.c) the library sees the end itself:
 * a read that finds the connection closed, or a send that finds it gone,
 * sets c->stream_lost, and wire_stream_lost_end ends the same things at
 * once; the next send connects anew (a frame none of which had left is
 * sent on the new connection: wire_stream_send), and a subscribed client
 * connects again by itself, at most every STREAM_RETRY_NS, and subscribes
 * anew (wire_stream_revive). Before each send over the stream one poll(2)
 * looks for a close, so that what the broker sent before closing (a
 * graceful stop's confirmations) is taken first (wire_stream_hup_take).
 *
 * Costs: nothing per message but that poll(2) over the stream; the rest
 * runs once per lost connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cstream.h"
#include "failover.h"
#include "wire.h"

#define STREAM_RETRY_NS 100000000 /* a subscribed stream client connects again at most this often */
#define HUP_FRAMES_MAX  1024      /* frames taken, at most, before a send that found the connection closed */

void wire_deliveries_drop(sl_client *c)
{
    sl_delivery *d;
    while (c->deliveries.count) {
        fifo_remove(&c->deliveries, 0, &d);
        free(d);
    }
}

/* puts_abandon ends every publish still waiting for its confirmation: its
 * reply, if any, went to the connection that is gone. Each is confirmed with
 * SL_ECONNECT, so that waiting for them ends; whether the broker stored it is
 * unknown (an idempotency key makes the retry safe). */
static void puts_abandon(sl_client *c)
{
    static const char text[] = "the connection to the broker was lost before the confirmation arrived; "
                               "the message may or may not have been stored";
    while (c->puts.count) {
        pending_put *p = fifo_at(&c->puts, 0);
        client_confirm q = {.confirm = {.ticket = p->ticket, .err = SL_ECONNECT}, .msg = strdup(text)};
        if (!q.msg || fifo_push(&c->confirms, &q)) {
            free(q.msg);
            return; /* out of memory: they stay pending, as before */
        }
        free(p->frame);
        fifo_remove(&c->puts, 0, NULL);
    }
}

/* wire_settles_lost forgets the settlements whose answers can no longer come
 * (their connection is gone) and reports them as refused with SL_ECONNECT:
 * the broker may never have received them, so the messages may be
 * delivered again, and sl_flush must not say they were accepted. */
void wire_settles_lost(sl_client *c)
{
    size_t lost = c->settles.count;
    while (c->settles.count)
        fifo_remove(&c->settles, 0, NULL);
    if (!lost)
        return;
    c->refused += lost;
    if (c->refused_unreported)
        return;
    c->refused_unreported = true;
    c->refused_code = SL_ECONNECT;
    snprintf(c->refused_msg, sizeof c->refused_msg,
             "%zu settlements were sent on a connection that was lost before the broker answered: they may "
             "not have been applied, and their messages may be delivered again", lost);
}

/* wire_reconnected: the broker has forgotten the old connection (see the
 * top); renew the subscription with the credit client_credit_due asks. */
void wire_reconnected(sl_client *c)
{
    c->runs_asked = false; /* the new connection asks again at its first publish */
    wire_deliveries_drop(c);
    if (failover_on(c))
        failover_resend(c); /* one broker at several addresses: what waits is sent again */
    else
        puts_abandon(c);
    wire_settles_lost(c); /* their answers went to the connection that is gone */
    if (!c->subscribed)
        return;
    /* the new connection starts with no credit; every delivery so far was
     * handed out (the rest were just dropped), and those still held will
     * give their credit back when settled */
    c->outstanding = c->unsettled;
    c->granted = c->received;
    uint64_t credit = client_credit_due(c);
    c->outstanding += credit;
    c->granted += credit;
    proto_msg m;
    wire_hello_init(c, &m, credit);
    proto_set(&m, seq, c->next_seq++); /* its WELCOME is dropped as a stray */
    wire_msg_send(c, &m, ZMQ_DONTWAIT);     /* if it fails, nothing better to do */
}

/* wire_stream_lost_end ends what waited on a stream connection that closed or
 * broke (c->stream_lost): as on a ZeroMQ reconnection, the deliveries
 * queued are dropped, the publishes waiting are confirmed with SL_ECONNECT
 * and the settlements reported lost. The next send connects anew. */
void wire_stream_lost_end(sl_client *c)
{
    if (!c->stream_lost)
        return;
    c->stream_lost = false;
    cstream_drop(c);
    wire_deliveries_drop(c);
    puts_abandon(c);
    wire_settles_lost(c);
}

/* wire_stream_send sends the frame in c->out over the stream. A connection
 * found gone before any of the frame left (the broker restarted between two
 * publishes, say) ends what waited on it and is made anew, once: the frame
 * was not sent, so sending it now sends it once, as a ZeroMQ reconnection
 * would. */
int wire_stream_send(sl_client *c, int64_t now, int64_t deadline_ns)
{
    int rc = cstream_send(c, c->out.data, c->out.len, deadline_ns);
    if (rc != SL_ECONNECT || !c->stream_unsent)
        return rc;
    wire_stream_lost_end(c);
    if ((rc = wire_stream_revive(c, now, deadline_ns)) != SL_OK)
        return rc;
    return cstream_send(c, c->out.data, c->out.len, deadline_ns);
}

/* wire_stream_revive connects a subscribed stream client again once its
 * connection was lost, and subscribes anew as a ZeroMQ reconnection does
 * (wire_reconnected); not more often than every STREAM_RETRY_NS. SL_OK when
 * connected (or nothing to revive), else the attempt's error. */
int wire_stream_revive(sl_client *c, int64_t now, int64_t deadline_ns)
{
    if (c->sfd >= 0 || !c->subscribed || c->handshakes == 0)
        return SL_OK;
    if (now < c->stream_retry_ns)
        return SL_ECONNECT;
    c->stream_retry_ns = now + STREAM_RETRY_NS;
    int rc = cstream_connect(c, deadline_ns < c->stream_retry_ns ? deadline_ns : c->stream_retry_ns);
    if (rc == SL_OK)
        wire_reconnected(c);
    return rc;
}

/* wire_stream_hup_take, before a send over the stream: when the broker has
 * closed the connection, what it sent before closing (the confirmations of
 * a graceful stop) is taken first, and the close is seen (stream_lost).
 * One poll(2) per send. */
void wire_stream_hup_take(sl_client *c)
{
    if (!cstream_hup(c))
        return;
    bool got = true;
    for (int i = 0; got && !c->stream_lost && i < HUP_FRAMES_MAX; i++)
        if (wire_frame_take(c, &got) != SL_OK)
            break;
    if (!got) /* all read, and not yet at the end: it is */
        c->stream_lost = true;
}

