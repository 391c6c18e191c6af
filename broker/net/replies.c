/*
 * replies.c - the queues replies wait in, sending them, and runs of
 * confirmations.
 *
 * net_queue encodes each reply into one of three queues, each a growing
 * arena plus records of where each message is: NET_NOW for replies that may
 * leave before the pass's commit, NET_AFTER_COMMIT for those that must not
 * (publish confirmations, deliveries of messages not yet durable), and
 * NET_AFTER_NEXT_COMMIT for those whose writes missed the commit that is
 * out. net_flush walks one queue with ZMQ_DONTWAIT. Each record names its
 * endpoint (the main one, the admin one of --admin-listen, the HTTP bridge,
 * the stream endpoint). Costs: one encode into the arena and one copy into
 * ZeroMQ per message; the arenas keep their peak size, so a steady load
 * allocates nothing.
 *
 * Runs. A producer keeping many publishes outstanding is confirmed a commit
 * at a time, and each PUT_OK is a message of its own for both sides to
 * move; with CURVE, a box to seal and one to open. A connection that asked
 * (HELLO with runs) is instead sent one PUT_OK per run of its publishes:
 * {seq, id, confirms} confirms its requests seq .. seq + confirms - 1,
 * stored as ids id .. id + confirms - 1. Every PUT_OK to such a connection
 * carries confirms, written in msgpack's five-byte form and last (it is the
 * model's last field), so net_queue_confirm grows the run a connection
 * holds open in a queue by rewriting four bytes where it lies, when the
 * next confirmation continues it: the next seq and the next id, the same
 * epoch, not a duplicate. Consecutive seqs mean no other request of that
 * connection came in between, so no reply of its is overtaken; a run
 * leaves when its queue does, never later than its PUT_OKs would have. A
 * run is held open by its queue's gen and its record's index; anything
 * that moves or drops a queue's records gives the queue a new gen, which
 * closes the runs it held.
 *
 * Who asked is kept per descriptor with the routing id it asked with
 * (run_peer): a descriptor reused by another connection comes with another
 * routing id (libzmq counts them; stream ids are never reused), so nothing
 * needs clearing when a connection ends. Costs: an array index and a
 * routing id compare per PUT_OK, four bytes rewritten per confirmation a
 * run takes in; 56 bytes per descriptor up to the highest that asked.
 */
#include "net_int.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "grow.h"
#include "log.h"
#include "peers.h"

int net_queue(net *n, const uint8_t *rid, size_t rid_len, const proto_msg *m, uint64_t token, net_when when)
{
    return net_queue_via(n, NET_MAIN, rid, rid_len, m, token, when);
}

static int enqueue(net *n, net_sock sock, const uint8_t *rid, size_t rid_len, const proto_msg *m, uint64_t token,
                   net_when when, int fd, uint64_t ino);

int net_queue_guarded(net *n, net_sock sock, const uint8_t *rid, size_t rid_len, const proto_msg *m,
                      uint64_t token, net_when when, int fd, uint64_t ino)
{
    return enqueue(n, sock, rid, rid_len, m, token, when, fd, fd >= 0 ? ino : 0);
}

int net_queue_via(net *n, net_sock sock, const uint8_t *rid, size_t rid_len, const proto_msg *m, uint64_t token,
                  net_when when)
{
    return enqueue(n, sock, rid, rid_len, m, token, when, -1, 0);
}

/* queue_for is the queue a reply for `when` goes to. */
static outq *queue_for(net *n, net_when when)
{
    if (when == NET_AFTER_COMMIT && n->sealed)
        when = NET_AFTER_NEXT_COMMIT; /* its write is not in the commit that is out */
    return &n->q[when];
}

static int enqueue(net *n, net_sock sock, const uint8_t *rid, size_t rid_len, const proto_msg *m, uint64_t token,
                   net_when when, int fd, uint64_t ino)
{
    outq *q = queue_for(n, when);
    out_rec *r = grow_array(q->recs, &q->caprecs, q->nrecs + 1, sizeof *r, 256);
    if (!r)
        return SL_ENOMEM;
    q->recs = r;
    size_t start = q->arena.len;
    /* the routing id goes first, through the same growth path as the body */
    proto_wbuf *a = &q->arena;
    char *p = grow_array(a->data, &a->cap, a->len + rid_len, 1, 4096);
    if (!p)
        return SL_ENOMEM;
    a->data = p;
    memcpy(a->data + a->len, rid, rid_len);
    a->len += rid_len;
    int rc = proto_encode(m, a);
    if (rc != SL_OK) {
        a->len = start;
        log_error("net", "cannot encode %s: %s", proto_name(m->type), proto_strerror(rc));
        return rc;
    }
    q->recs[q->nrecs++] = (out_rec){
        .off = start,
        .rid_len = rid_len,
        .body_len = a->len - start - rid_len,
        .sock = sock,
        .token = token,
        .seq = m->seq,
        .has_seq = (m->present & PF(seq)) != 0,
        .fd = fd,
        .ino = ino,
    };
    return SL_OK;
}

size_t net_queued(const net *n, net_when when)
{
    return n->q[when].nrecs;
}

/* send_stream queues a message for a stream connection (stream_push
 * writes it): SL_OK, SL_ECONNECT (the connection is gone), SL_EFULL (it
 * does not read), SL_ENOMEM (reported as SL_EFULL: not sent). */
static int send_stream(net *n, const uint8_t *rid, size_t rid_len, const void *body, size_t len)
{
    uint64_t id = 0;
    for (size_t i = 0; i < rid_len && i < 8; i++)
        id = id << 8 | rid[i];
    int rc = n->stream && rid_len == 8 ? stream_send(n->stream, id, body, len) : SL_ECONNECT;
    return rc == SL_ENOMEM ? SL_EFULL : rc;
}

void net_flush(net *n, net_when when, net_fail_fn fail, void *ctx)
{
    outq *q = &n->q[when];
    int seen_fd = -1;      /* the last descriptor looked at, and its socket's inode */
    uint64_t seen_ino = 0;
    for (size_t i = 0; i < q->nrecs; i++) {
        const out_rec *r = &q->recs[i];
        const uint8_t *rid = (const uint8_t *)q->arena.data + r->off;
        /* the admin endpoint and the bridge hold no consumers: nothing to settle there */
        net_fail_fn on_fail = r->sock == NET_MAIN || r->sock == NET_STREAM ? fail : NULL;
        if (r->ino) { /* for one connection: is its descriptor still that socket? */
            if (r->fd != seen_fd) {
                seen_fd = r->fd;
                seen_ino = peers_inode(r->fd);
            }
            if (seen_ino != r->ino) {
                if (on_fail)
                    on_fail(ctx, r->sock, rid, r->rid_len, r->token, SL_ESTALE);
                continue;
            }
        }
        if (r->sock == NET_STREAM) {
            int rc = send_stream(n, rid, r->rid_len, rid + r->rid_len, r->body_len);
            if (rc != SL_OK && on_fail)
                on_fail(ctx, r->sock, rid, r->rid_len, r->token, rc);
            continue;
        }
        void *sock = n->sock[r->sock];
        if (zmq_send(sock, rid, r->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
            int e = zmq_errno();
            if (on_fail)
                on_fail(ctx, r->sock, rid, r->rid_len, r->token, e == EAGAIN ? SL_EFULL : SL_ECONNECT);
            continue;
        }
        /* ROUTER accepted the envelope, so the body part cannot block */
        if (zmq_send(sock, rid + r->rid_len, r->body_len, ZMQ_DONTWAIT) < 0) {
            log_error("net", "send of a message body failed: %s", zmq_strerror(zmq_errno()));
            if (on_fail)
                on_fail(ctx, r->sock, rid, r->rid_len, r->token, SL_ECONNECT);
        }
    }
    q->nrecs = 0;
    q->gen = ++n->gen_next; /* the open runs it held are gone */
    proto_wbuf_reset(&q->arena);
    if (n->stream)
        stream_push(n->stream);
}

void net_seal(net *n, int sealed)
{
    n->sealed = sealed;
}

void net_promote(net *n)
{
    outq *now = &n->q[NET_AFTER_COMMIT], *next = &n->q[NET_AFTER_NEXT_COMMIT];
    if (now->nrecs == 0) { /* the usual case: swap the empty queue and the waiting one */
        outq t = *now;
        *now = *next;
        *next = t;
        return;
    }
    for (size_t i = 0; i < next->nrecs; i++) { /* copy each behind what is there */
        const out_rec *r = &next->recs[i];
        size_t bytes = r->rid_len + r->body_len;
        out_rec *v = grow_array(now->recs, &now->caprecs, now->nrecs + 1, sizeof *v, 256);
        if (v)
            now->recs = v;
        char *p = v ? grow_array(now->arena.data, &now->arena.cap, now->arena.len + bytes, 1, 4096) : NULL;
        if (!p) {
            log_error("net", "out of memory keeping %zu replies for the next commit; they are dropped (their "
                      "requests are settled: a client waiting in sl_flush times out)", next->nrecs - i);
            break;
        }
        now->arena.data = p;
        memcpy(now->arena.data + now->arena.len, next->arena.data + r->off, bytes);
        now->recs[now->nrecs] = *r;
        now->recs[now->nrecs].off = now->arena.len;
        now->arena.len += bytes;
        now->nrecs++;
    }
    next->nrecs = 0;
    next->gen = ++n->gen_next;
    proto_wbuf_reset(&next->arena);
}

void net_fail_queued(net *n, int code, const char *msg, uint64_t retry_ms)
{
    outq old = n->q[1];
    memset(&n->q[1], 0, sizeof n->q[1]);
    n->q[1].gen = ++n->gen_next;
    proto_msg m;
    proto_init(&m, PROTO_ERROR);
    proto_set(&m, code, (uint64_t)code);
    proto_set_str(&m, PROTO_F_msg, msg, strlen(msg));
    if (retry_ms)
        proto_set(&m, retry_ms, retry_ms);
    for (size_t i = 0; i < old.nrecs; i++) {
        const out_rec *r = &old.recs[i];
        if (!r->has_seq || r->token)
            continue;
        for (uint32_t k = 0; k < (r->run_n > 1 ? r->run_n : 1); k++) { /* a run: an ERROR for each request */
            proto_set(&m, seq, r->seq + k);
            net_queue_via(n, r->sock, (const uint8_t *)old.arena.data + r->off, r->rid_len, &m, 0, NET_AFTER_COMMIT);
        }
    }
    proto_wbuf_free(&old.arena);
    free(old.recs);
}

/* ---- runs of confirmations ---- */

#define RUNS_MAX_FD (1 << 20)

void net_runs_ask(net *n, const net_in *in)
{
    if (in->fd < 0 || in->fd >= RUNS_MAX_FD || in->rid_len == 0 || in->rid_len > NET_RUN_RID)
        return; /* (the bridge, or a routing id a peer chose too long): confirmed one by one */
    size_t fd = (size_t)in->fd, had = n->runs_cap;
    if (fd >= had) {
        run_peer *v = grow_array(n->runs, &n->runs_cap, fd + 1, sizeof *v, 64);
        if (!v)
            return; /* out of memory: confirmed one by one, as before it asked */
        n->runs = v;
        memset(v + had, 0, (n->runs_cap - had) * sizeof *v);
    }
    run_peer *p = &n->runs[fd];
    *p = (run_peer){.asked = 1, .sock = (uint8_t)in->sock, .rid_len = (uint8_t)in->rid_len};
    memcpy(p->rid, in->rid, in->rid_len);
}

/* run_peer_of returns in's entry when its connection asked for runs, else
 * NULL. */
static run_peer *run_peer_of(net *n, const net_in *in)
{
    if (in->fd < 0 || (size_t)in->fd >= n->runs_cap)
        return NULL;
    run_peer *p = &n->runs[in->fd];
    int same = p->asked && p->sock == in->sock && p->rid_len == in->rid_len &&
               memcmp(p->rid, in->rid, in->rid_len) == 0;
    return same ? p : NULL;
}

/* run_count_at returns where r's confirms value is: its last four bytes,
 * after msgpack's uint32 marker, which the caller checks. */
static unsigned char *run_count_at(outq *q, const out_rec *r)
{
    return (unsigned char *)q->arena.data + r->off + r->rid_len + r->body_len - 4;
}

static void run_count_set(unsigned char *at, uint32_t count)
{
    at[0] = (unsigned char)(count >> 24);
    at[1] = (unsigned char)(count >> 16);
    at[2] = (unsigned char)(count >> 8);
    at[3] = (unsigned char)count;
}

/* run_grows tells whether m, a PUT_OK for p's connection, continues the
 * run p holds open in queue q. */
static int run_grows(const run_peer *p, const outq *q, const proto_msg *m, uint64_t epoch)
{
    if (p->gen != q->gen || p->rec >= q->nrecs)
        return 0;
    const out_rec *o = &q->recs[p->rec];
    return o->run_n && o->run_n < UINT32_MAX && o->run_epoch == epoch && m->seq == o->seq + o->run_n &&
           m->id == o->run_id + o->run_n && o->sock == (net_sock)p->sock && o->rid_len == p->rid_len &&
           memcmp(q->arena.data + o->off, p->rid, p->rid_len) == 0;
}

int net_queue_confirm(net *n, const net_in *in, proto_msg *m, net_when when)
{
    run_peer *p = m->type == PROTO_PUT_OK ? run_peer_of(n, in) : NULL;
    if (!p)
        return net_queue_via(n, in->sock, in->rid, in->rid_len, m, 0, when);
    if ((m->present & PF(duplicate)) && m->duplicate) { /* its id is an older message's: a run of its own */
        proto_set(m, confirms, 1);
        int rc = net_queue_via(n, in->sock, in->rid, in->rid_len, m, 0, when);
        m->present &= ~PF(confirms);
        return rc;
    }
    outq *q = queue_for(n, when);
    uint64_t epoch = (m->present & PF(epoch)) ? m->epoch : 0;
    if (run_grows(p, q, m, epoch)) {
        out_rec *r = &q->recs[p->rec];
        r->run_n++;
        run_count_set(run_count_at(q, r), r->run_n);
        return SL_OK;
    }
    /* a new run: confirms written as 2^32 - 1, msgpack's five-byte form, then set to 1 */
    proto_set(m, confirms, UINT32_MAX);
    int rc = net_queue_via(n, in->sock, in->rid, in->rid_len, m, 0, when);
    m->present &= ~PF(confirms);
    if (rc != SL_OK)
        return rc;
    out_rec *r = &q->recs[q->nrecs - 1];
    unsigned char *at = run_count_at(q, r);
    if (r->body_len < 5 || at[-1] != 0xce || memcmp(at, "\xff\xff\xff\xff", 4) != 0) {
        log_error("net", "a PUT_OK did not end in its confirms count; sent without it");
        q->arena.len = r->off;
        q->nrecs--;
        return net_queue_via(n, in->sock, in->rid, in->rid_len, m, 0, when);
    }
    run_count_set(at, 1);
    r->run_n = 1;
    r->run_id = m->id;
    r->run_epoch = epoch;
    p->gen = q->gen;
    p->rec = q->nrecs - 1;
    return SL_OK;
}

void net_replies_free(net *n)
{
    for (int i = 0; i < NET_WHENS; i++) {
        proto_wbuf_free(&n->q[i].arena);
        free(n->q[i].recs);
    }
    free(n->runs);
}
