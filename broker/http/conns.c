/*
 * conns.c - who holds the server's connections, and for how long: the
 * limits that keep /metrics and the console answering when clients hold
 * sockets open and say nothing (idle) or say it a byte at a time (slow).
 *
 * Owns one record per open connection: its descriptor, its peer address,
 * its phase and since when. The phases:
 *
 *   WAITING    no request yet: just accepted, or its last reply sent (the
 *              request's headers may be arriving, slowly);
 *   RECEIVING  the headers are in, the body is arriving;
 *   BUSY       the request is whole: being answered, waiting for the loop,
 *              or streaming events.
 *
 * Three rules, applied without libmicrohttpd's help (it has no header
 * deadline, and its per-address limit refuses the newcomer):
 *
 *   - Per address: a new connection from an address that already holds
 *     max_per_addr closes that address's connection WAITING longest; when
 *     none is WAITING, the new one is refused. A client that opens
 *     connections and sends nothing only ever pushes out its own; a scrape
 *     from it (or from anyone) gets in, its request arrives at once, and a
 *     connection past WAITING is never pushed out.
 *   - In total: the same, over every address, at max_total.
 *   - Deadline: a connection WAITING or RECEIVING longer than the header
 *     deadline is closed (conns_sweep, every sweep period): a slowloris
 *     client that trickles a header line every few seconds is gone after
 *     the deadline whatever it sends. Nothing moving at all is the idle
 *     timeout's business (libmicrohttpd's connection timeout).
 *
 * Closing is shutdown(2) on the descriptor: libmicrohttpd's thread then
 * sees the end and closes it itself. The record is removed in the
 * close notification, which libmicrohttpd gives before it closes the
 * descriptor, under the same lock as the shutdown, so a descriptor is never
 * shut down after it was closed (and maybe reused).
 *
 * Threads: libmicrohttpd's thread opens, moves and closes records; the
 * server's ticker sweeps. One mutex.
 *
 * Costs: O(connections) per new connection and per sweep (a scan of a
 * fixed array of max_total + max_per_addr + slack records): a few
 * microseconds at the default 1,024.
 */
#include "http_int.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int conns_init(conns *t, unsigned max_total, unsigned max_per_addr, uint64_t header_timeout_ns)
{
    memset(t, 0, sizeof *t);
    t->cap = conns_capacity(max_total, max_per_addr);
    t->v = calloc(t->cap, sizeof *t->v);
    if (!t->v)
        return SL_ENOMEM;
    for (unsigned i = 0; i < t->cap; i++)
        t->v[i].fd = -1;
    t->max_total = max_total;
    t->max_per_addr = max_per_addr;
    t->header_timeout_ns = header_timeout_ns;
    pthread_mutex_init(&t->lock, NULL);
    return SL_OK;
}

unsigned conns_capacity(unsigned max_total, unsigned max_per_addr)
{
    return max_total + max_per_addr + 16;
}

void conns_fini(conns *t)
{
    if (!t->v)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->v);
    t->v = NULL;
}

/* addr_of copies sa's address (not its port) into c. */
static void addr_of(conn_rec *c, const struct sockaddr *sa)
{
    c->alen = 0;
    if (sa && sa->sa_family == AF_INET) {
        memcpy(c->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        c->alen = 4;
    } else if (sa && sa->sa_family == AF_INET6) {
        memcpy(c->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        c->alen = 16;
    }
}

static int same_addr(const conn_rec *a, const conn_rec *b)
{
    return a->alen == b->alen && memcmp(a->addr, b->addr, a->alen) == 0;
}

/* kill shuts c's connection down (once): it no longer counts. Lock held. */
static void kill(conns *t, conn_rec *c)
{
    if (c->killed || c->fd < 0)
        return;
    c->killed = 1;
    t->live--;
    shutdown(c->fd, SHUT_RDWR);
}

/* oldest_waiting returns the live WAITING record idle longest (of address
 * like's, when like is not NULL), or NULL. Lock held. */
static conn_rec *oldest_waiting(conns *t, const conn_rec *like)
{
    conn_rec *best = NULL;
    for (unsigned i = 0; i < t->cap; i++) {
        conn_rec *c = &t->v[i];
        if (c->fd < 0 || c->killed || c->phase != CONN_WAITING || (like && !same_addr(c, like)))
            continue;
        if (!best || c->since_ns < best->since_ns)
            best = c;
    }
    return best;
}

conn_rec *conns_open(conns *t, int fd, const struct sockaddr *sa, uint64_t now_ns)
{
    pthread_mutex_lock(&t->lock);
    conn_rec *slot = NULL;
    for (unsigned i = 0; i < t->cap && !slot; i++)
        if (t->v[i].fd < 0)
            slot = &t->v[i];
    if (!slot) { /* libmicrohttpd's own limit is the capacity: cannot happen */
        pthread_mutex_unlock(&t->lock);
        shutdown(fd, SHUT_RDWR);
        return NULL;
    }
    *slot = (conn_rec){.fd = fd, .phase = CONN_WAITING, .since_ns = now_ns};
    addr_of(slot, sa);
    unsigned same = 0;
    for (unsigned i = 0; i < t->cap; i++)
        if (&t->v[i] != slot && t->v[i].fd >= 0 && !t->v[i].killed && same_addr(&t->v[i], slot))
            same++;
    t->live++;
    int refuse = 0;
    if (same >= t->max_per_addr) {
        conn_rec *old = oldest_waiting(t, slot);
        if (old && old != slot) {
            kill(t, old);
            t->evicted++;
        } else {
            refuse = 1;
        }
    }
    if (!refuse && t->live > t->max_total) {
        conn_rec *old = oldest_waiting(t, NULL);
        if (old && old != slot) {
            kill(t, old);
            t->evicted++;
        } else {
            refuse = 1;
        }
    }
    if (refuse) {
        kill(t, slot);
        t->refused++;
    }
    pthread_mutex_unlock(&t->lock);
    return slot;
}

void conns_phase(conns *t, conn_rec *c, conn_phase p, uint64_t now_ns)
{
    if (!c)
        return;
    pthread_mutex_lock(&t->lock);
    if (p == CONN_WAITING || c->phase == CONN_BUSY)
        c->since_ns = now_ns; /* RECEIVING keeps the WAITING start: one deadline for the whole request */
    c->phase = p;
    pthread_mutex_unlock(&t->lock);
}

void conns_close(conns *t, conn_rec *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&t->lock);
    if (!c->killed)
        t->live--;
    c->fd = -1;
    c->killed = 0;
    pthread_mutex_unlock(&t->lock);
}

void conns_sweep(conns *t, uint64_t now_ns)
{
    pthread_mutex_lock(&t->lock);
    for (unsigned i = 0; i < t->cap; i++) {
        conn_rec *c = &t->v[i];
        if (c->fd < 0 || c->killed || c->phase == CONN_BUSY || now_ns < c->since_ns + t->header_timeout_ns)
            continue;
        kill(t, c);
        t->timed_out++;
    }
    pthread_mutex_unlock(&t->lock);
}

void conns_counts(conns *t, conns_stats *out)
{
    pthread_mutex_lock(&t->lock);
    out->live = t->live;
    out->evicted = t->evicted;
    out->refused = t->refused;
    out->timed_out = t->timed_out;
    pthread_mutex_unlock(&t->lock);
}
