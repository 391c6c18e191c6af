/*
 * park.c - requests that wait for the commit that is out.
 *
 * While the writer thread commits, the loop keeps receiving: most requests
 * are answered at once (pings, credit, TOUCH, THROTTLED, and ACKs whose
 * delete may follow: queue_deferred_apply), so consumers get their credit
 * back and deliveries go on while the disk flushes. A request whose handling
 * writes the store (PUT, NACK, REJECT, HELLO, BYE, an admin command that
 * changes something) or reads it (STATS, a read-only admin command: the
 * snapshot lags what the loop has done) is parked here: a copy of the
 * message as received, handled as if it had just arrived once the commit
 * ends, before anything newer. Such requests then join the next commit,
 * exactly as when they waited in ZeroMQ's queue.
 *
 * Order: a peer's requests are handled in the order it sent them. Once one
 * of them is parked, every later one from the same peer (same endpoint,
 * same routing id) is parked behind it, whatever its type.
 *
 * Bounds: PARK_MAX_MSGS requests and PARK_MAX_BYTES of them; when full, the
 * loop stops receiving until the commit ends, and the rest waits in
 * ZeroMQ's queue (as before this module existed).
 *
 * The descriptor a request came in on may be closed, and reused by another
 * connection, before the commit ends: its socket's inode is noted when it
 * is parked, and a request handed back whose descriptor is another socket
 * by then comes back with fd -1 (not known), so that nothing is noted on
 * the new connection in its name (peers.c, path/member.c).
 *
 * Costs: one malloc'd copy per parked request (its body, routing id and
 * User-Id), and an fstat(2) when parked and when handed back (one per run
 * of requests from the same descriptor when parked). park_holds_peer first tests a 4096-bit filter of the parked
 * peers' hashes, so a peer with nothing parked is usually answered in O(1);
 * otherwise it scans the parked requests, newest first (at most
 * PARK_MAX_MSGS compares of a routing id, five bytes from a ROUTER).
 */
#include "park.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "peers.h"
#include "proto.h"

typedef struct parked {
    net_in in;          /* pointers into buf */
    unsigned char *buf; /* rid, body, User-Id and its NUL */
    uint64_t ino;       /* in.fd's socket's inode when parked; 0: none */
} parked;

#define PARK_FILTER_BITS 4096 /* a bit per hash of a peer that has something parked */

struct park {
    parked *v;
    size_t n, cap;
    size_t bytes;
    uint64_t filter[PARK_FILTER_BITS / 64];
};

/* peer_bit hashes (sock, rid) to a bit of the filter (FNV-1a). */
static unsigned peer_bit(net_sock sock, const uint8_t *rid, size_t rid_len)
{
    uint32_t h = 2166136261u ^ (uint32_t)sock;
    for (size_t i = 0; i < rid_len; i++)
        h = (h ^ rid[i]) * 16777619u;
    return h % PARK_FILTER_BITS;
}

park *park_new(void)
{
    return calloc(1, sizeof(park));
}

static void clear(park *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].buf);
    p->n = 0;
    p->bytes = 0;
    memset(p->filter, 0, sizeof p->filter);
}

void park_destroy(park **pp)
{
    if (!pp || !*pp)
        return;
    clear(*pp);
    free((*pp)->v);
    free(*pp);
    *pp = NULL;
}

int park_full(const park *p)
{
    return p->n >= PARK_MAX_MSGS || p->bytes >= PARK_MAX_BYTES;
}

size_t park_count(const park *p)
{
    return p->n;
}

int park_holds_peer(const park *p, net_sock sock, const uint8_t *rid, size_t rid_len)
{
    unsigned bit = peer_bit(sock, rid, rid_len);
    if (!(p->filter[bit / 64] & (UINT64_C(1) << (bit % 64))))
        return 0; /* no request of a peer with this hash is parked */
    for (size_t i = p->n; i-- > 0;) {
        const net_in *in = &p->v[i].in;
        if (in->sock == sock && in->rid_len == rid_len && memcmp(in->rid, rid, rid_len) == 0)
            return 1;
    }
    return 0;
}

int park_add(park *p, const net_in *in)
{
    if (park_full(p))
        return SL_EFULL;
    if (p->n == p->cap) {
        parked *v = grow_array(p->v, &p->cap, p->n + 1, sizeof *v, 64);
        if (!v)
            return SL_ENOMEM;
        p->v = v;
    }
    size_t uid = in->user_id ? in->user_id_len + 1 : 0;
    size_t size = in->rid_len + in->body_len + uid;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf)
        return SL_ENOMEM;
    parked *k = &p->v[p->n++];
    k->buf = buf;
    k->in = *in;
    memcpy(buf, in->rid, in->rid_len);
    k->in.rid = buf;
    if (in->body_len)
        memcpy(buf + in->rid_len, in->body, in->body_len);
    k->in.body = buf + in->rid_len;
    /* the descriptor may be closed and reused before the commit ends: its socket is known again by its inode */
    if (p->n >= 2 && in->fd >= 0 && p->v[p->n - 2].in.fd == in->fd)
        k->ino = p->v[p->n - 2].ino;
    else
        k->ino = peers_inode(in->fd);
    if (in->user_id) {
        char *u = (char *)buf + in->rid_len + in->body_len;
        memcpy(u, in->user_id, in->user_id_len);
        u[in->user_id_len] = '\0';
        k->in.user_id = u;
    }
    p->bytes += size;
    unsigned bit = peer_bit(in->sock, in->rid, in->rid_len);
    p->filter[bit / 64] |= UINT64_C(1) << (bit % 64);
    return SL_OK;
}

void park_drain(park *p, void (*fn)(void *ctx, const net_in *in), void *ctx)
{
    int seen_fd = -1;
    uint64_t seen_ino = 0;
    for (size_t i = 0; i < p->n; i++) {
        net_in *in = &p->v[i].in;
        if (in->fd >= 0 && in->fd != seen_fd) {
            seen_fd = in->fd;
            seen_ino = peers_inode(in->fd);
        }
        if (in->fd >= 0 && (!p->v[i].ino || seen_ino != p->v[i].ino))
            in->fd = -1; /* closed, or another connection's now */
        fn(ctx, in);
    }
    clear(p);
}
