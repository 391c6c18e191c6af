/*
 * failover.c - one broker at alternative addresses: the client finds the
 * primary of a high-availability group and follows it.
 *
 * An endpoint written "tcp://a:7470|tcp://b:7470" names one broker reachable
 * at either address (a "," list still names several brokers: multi.c). The
 * client connects its one DEALER to the first address. It moves to another
 * when the node there answers SL_EREDIRECT (a standby: it moves to the
 * primary the reply names, or to the next address when it names none), or
 * when the connection is lost or refused (to the next address, round the
 * list). A move waits FAILOVER_PAUSE_NS, so that two nodes that both
 * redirect (a failover in progress) are asked a few times a second, not in
 * a loop, and until nothing more is to be read (wire.c's pump): the old
 * connection's last replies are taken before zmq_disconnect would drop
 * them, so that a switchover's OK from the node it deposes is not asked of
 * the new primary again. The redirect itself is never returned to the
 * caller.
 *
 * Nothing confirmed is re-sent, and nothing unconfirmed is lost by a move:
 * each publish's encoded frame is kept until its confirmation comes, and
 * once the new connection's handshake succeeds every publish still waiting
 * is sent again, in order, with its seq, and so is the request being waited
 * for. A publish with an idempotency key is then stored once whatever the
 * old primary did; one without may be stored twice (at least once). An
 * admin command a second run would change more (a msg.move, a switchover:
 * PROTO_CMD_REPEATS) is not sent again once a connection stood while it
 * was out, unless a standby refused it: the call ends SL_ECONNECT at the
 * move, saying it may have run, since the old primary may have run it and
 * its standby taken the effect before the answer was lost. One that never
 * had a connection (the first address refused) goes on. A consumer's subscription is renewed by the
 * reconnection itself (wire.c).
 *
 * Costs: with alternatives only, a copy of each publish's frame while it is
 * unconfirmed; nothing without them.
 */
#include "failover.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "wire.h"

#define FAILOVER_PAUSE_NS 100000000 /* 100 ms between moves */

int failover_open(sl_client *c, const char *endpoint, const char **first)
{
    *first = endpoint;
    if (!strchr(endpoint, '|'))
        return SL_OK;
    const char *p = endpoint;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (!n || c->nalts >= FAILOVER_MAX_ALTS)
            return SL_EINVAL;
        char *a = strndup(p, n);
        if (!a)
            return SL_ENOMEM;
        c->alts[c->nalts++] = a;
        if (!bar)
            break;
        p = bar + 1;
        if (!*p)
            return SL_EINVAL;
    }
    *first = c->alts[0];
    snprintf(c->cur_ep, sizeof c->cur_ep, "%s", c->alts[0]);
    return SL_OK;
}

void failover_close(sl_client *c)
{
    for (unsigned i = 0; i < c->nalts; i++)
        free(c->alts[i]);
    c->nalts = 0;
    free(c->await_frame);
    c->await_frame = NULL;
}

int failover_keep(sl_client *c, void **copy, size_t *len)
{
    *copy = malloc(c->out.len ? c->out.len : 1);
    if (!*copy)
        return SL_ENOMEM;
    memcpy(*copy, c->out.data, c->out.len);
    *len = c->out.len;
    return SL_OK;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* schedule makes the move to target (NULL: the next alternative) due. */
static void schedule(sl_client *c, const char *target, size_t len)
{
    if (c->move_due)
        return; /* one move at a time */
    if (target && len && len < sizeof c->move_to && (len != strlen(c->cur_ep) || memcmp(target, c->cur_ep, len))) {
        memcpy(c->move_to, target, len);
        c->move_to[len] = '\0';
    } else {
        unsigned next = 0;
        for (unsigned i = 0; i < c->nalts; i++)
            if (!strcmp(c->alts[i], c->cur_ep))
                next = (i + 1) % c->nalts;
        snprintf(c->move_to, sizeof c->move_to, "%s", c->alts[next]);
    }
    int64_t earliest = c->moved_ns + FAILOVER_PAUSE_NS, now = mono_ns();
    c->move_at_ns = now > earliest ? now : earliest;
    c->move_due = true;
}

void failover_redirect(sl_client *c, const char *url, size_t len)
{
    schedule(c, url, len);
}

void failover_lost(sl_client *c)
{
    schedule(c, NULL, 0);
}

bool failover_lost_once(const sl_client *c)
{
    return c->await_seq && c->await_seq < c->move_seq && !c->have_reply && c->await_once && !c->await_redirected &&
           c->await_reached;
}

bool failover_tick(sl_client *c, int64_t now_ns)
{
    if (!c->move_due || now_ns < c->move_at_ns)
        return false;
    c->move_due = false;
    c->moved_ns = now_ns;
    zmq_disconnect(c->sock, c->cur_ep); /* (what waited in its pipe is sent again after the handshake) */
    if (zmq_connect(c->sock, c->move_to) != 0)
        return false;
    snprintf(c->cur_ep, sizeof c->cur_ep, "%s", c->move_to);
    c->move_seq = c->next_seq;
    c->connected = false;
    c->refused_since_ns = 0;
    c->resend_due = true;
    return true;
}

void failover_resend(sl_client *c)
{
    c->resend_due = false;
    for (size_t i = 0; i < c->puts.count; i++) { /* (those sent since the move went to the new address) */
        pending_put *p = fifo_at(&c->puts, i);
        if (p->frame && p->seq < c->move_seq)
            zmq_send(c->sock, p->frame, p->frame_len, ZMQ_DONTWAIT);
    }
    if (c->await_seq && c->await_seq < c->move_seq && !c->have_reply && c->await_frame) {
        zmq_send(c->sock, c->await_frame, c->await_frame_len, ZMQ_DONTWAIT);
        c->await_redirected = false; /* sent to a node that may run it */
    }
}

long failover_wake_ms(const sl_client *c, int64_t now_ns)
{
    if (!c->move_due)
        return -1;
    return c->move_at_ns <= now_ns ? 0 : (long)((c->move_at_ns - now_ns) / 1000000) + 1;
}
