/*
 * stream.c - the stream endpoint: plain TCP or Unix-socket connections,
 * read and written by the loop's thread, carrying the same messages as
 * ZeroMQ (framing and why: proto_stream.h).
 *
 * One epoll set holds the listener and every connection, level-triggered,
 * so the loop's wait polls one descriptor however many connect. Each
 * connection has an input buffer and an output buffer. stream_recv hands out
 * one whole message at a time, in place in the input buffer, from a ring of
 * connections that hold one: a connection whose message was handed out goes
 * to the back of the ring if it holds another, so the connections take
 * turns as the ROUTER's peers do. Only when the ring is empty does it ask
 * epoll what is readable (accepting, reading up to STREAM_READS x 64 KiB a
 * connection, writing what waited for room), and a connection with a
 * message in the ring is not read further: a loop that stops receiving
 * (its park full) leaves the rest in the kernel's buffers, which then push
 * back on the producer, as ZeroMQ's high-water mark does.
 *
 * Replies are appended to the connection's output buffer (stream_send) and
 * written together at stream_push, once per net_flush: a pass's replies to
 * one connection cost one send(2). What the kernel does not take waits for
 * EPOLLOUT; more than STREAM_OUT_MAX waiting bytes fail the next send with
 * SL_EFULL, as a full ZeroMQ pipe does.
 *
 * A connection that closes, breaks, does not open with the greeting, or
 * announces a message over the limit (told with an ERROR first) is marked
 * gone and taken out of epoll at once; its descriptor is closed and its
 * memory freed at the next stream_recv that no longer holds its messages, so
 * a message already handed out stays valid and what it sent before closing
 * is still served. Connection ids count up from 1 and are never reused;
 * net.c turns them into routing ids.
 *
 * Costs: per message one header parse, no copy in (the body is read in
 * place), one copy out into the output buffer; a binary search by id per
 * reply and per epoll event. The buffers keep their peak size while the
 * connection lives.
 */
#include "stream.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "endpoint.h"
#include "grow.h"
#include "log.h"
#include "proto.h"
#include "proto_stream.h"

#define STREAM_MAX_CONNS  4096
#define STREAM_READ_BYTES 65536
#define STREAM_READS      4            /* reads per connection per epoll round */
#define STREAM_OUT_MAX    (64u << 20)  /* bytes waiting for one connection before sends fail */
#define STREAM_EVENTS     64
#define LISTENER_ID       0            /* epoll's tag for the listener; connections count from 1 */

typedef struct sconn {
    uint64_t id;
    int fd;
    int greeted, gone, queued, dirty, want_out;
    unsigned char *in, *out;
    size_t in_off, in_len, in_cap;
    size_t out_off, out_len, out_cap;
} sconn;

typedef struct plist { /* a list of connections */
    sconn **v;
    size_t head, n, cap;
} plist;

struct stream {
    int lfd, ep;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* an ipc path to remove at close, or "" */
    size_t max_body;
    uint64_t next_id;
    unsigned long refused; /* connections refused at STREAM_MAX_CONNS */
    plist conns;           /* by id, ascending */
    plist ready;           /* a FIFO: connections holding a whole message */
    plist dirty;           /* connections with output to push */
    plist gone;            /* connections to free */
    sconn *held;           /* the connection whose message was handed out last */
    size_t held_len;
};

static int plist_push(plist *l, sconn *c)
{
    if (l->head && (l->head == l->n || l->n == l->cap)) { /* a FIFO's taken front is reused */
        memmove(l->v, l->v + l->head, (l->n - l->head) * sizeof *l->v);
        l->n -= l->head;
        l->head = 0;
    }
    sconn **v = grow_array(l->v, &l->cap, l->n + 1, sizeof *v, 16);
    if (!v)
        return SL_ENOMEM;
    l->v = v;
    l->v[l->n++] = c;
    return SL_OK;
}

static void plist_remove(plist *l, const sconn *c)
{
    for (size_t i = l->head; i < l->n; i++)
        if (l->v[i] == c) {
            memmove(l->v + i, l->v + i + 1, (l->n - i - 1) * sizeof *l->v);
            l->n--;
            return;
        }
}

static sconn *find(const stream *s, uint64_t id)
{
    size_t lo = 0, hi = s->conns.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t m = s->conns.v[mid]->id;
        if (m == id)
            return s->conns.v[mid];
        if (m < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* mark_gone takes c out of epoll and puts it on the gone list (freed by
 * reap once nothing of it is held). */
static void mark_gone(stream *s, sconn *c)
{
    if (c->gone)
        return;
    c->gone = 1;
    epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (plist_push(&s->gone, c) != SL_OK) /* cannot be freed later: shut it now, free it at close */
        shutdown(c->fd, SHUT_RDWR);
}

static void want_out(stream *s, sconn *c, int on)
{
    if (c->want_out == on || c->gone)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u64 = c->id};
    if (epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->want_out = on;
}

/* write_out sends what c has waiting; what the kernel does not take waits
 * for EPOLLOUT. */
static void write_out(stream *s, sconn *c)
{
    while (c->out_off < c->out_len && !c->gone) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0)
            c->out_off += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            want_out(s, c, 1);
            return;
        } else {
            mark_gone(s, c); /* reset by the peer: its replies have nowhere to go */
        }
    }
    c->out_off = c->out_len = 0;
    want_out(s, c, 0);
}

/* too_big answers a message announced over the limit with an ERROR and
 * ends the connection: the bytes after it cannot be framed. */
static void too_big(stream *s, sconn *c, size_t len)
{
    static unsigned long told;
    char msg[160];
    snprintf(msg, sizeof msg, "a message of %zu bytes is over this broker's limit of %zu (--max-body)", len,
             s->max_body);
    if (++told <= 10 || told % 1000 == 0)
        log_warn("stream", "connection %llu: %s; closing it", (unsigned long long)c->id, msg);
    proto_msg m;
    proto_wbuf b = {0};
    proto_init(&m, PROTO_ERROR);
    proto_set(&m, code, (uint64_t)SL_ETOOBIG);
    proto_set_str(&m, PROTO_F_msg, msg, strlen(msg));
    if (proto_encode(&m, &b) == SL_OK && stream_send(s, c->id, b.data, b.len) == SL_OK)
        write_out(s, c);
    proto_wbuf_free(&b);
    mark_gone(s, c);
}

/* check_input reads the greeting, and queues c when it holds a whole
 * message. */
static void check_input(stream *s, sconn *c)
{
    if (!c->greeted) {
        if (c->in_len < PROTO_STREAM_MAGIC_LEN)
            return;
        if (memcmp(c->in, PROTO_STREAM_MAGIC, PROTO_STREAM_MAGIC_LEN) != 0) {
            static unsigned long told;
            if (++told <= 10 || told % 1000 == 0)
                log_warn("stream", "connection %llu did not open with the stream greeting (a ZeroMQ client, "
                         "or another protocol, at --stream-listen?); closing it", (unsigned long long)c->id);
            mark_gone(s, c);
            return;
        }
        c->greeted = 1;
        c->in_off = PROTO_STREAM_MAGIC_LEN;
    }
    size_t len;
    int r = proto_stream_frame(c->in + c->in_off, c->in_len - c->in_off, s->max_body, &len);
    if (r < 0)
        too_big(s, c, len);
    else if (r > 0 && !c->queued && plist_push(&s->ready, c) == SL_OK)
        c->queued = 1;
}

/* read_in reads what c has sent, up to STREAM_READS buffers full. */
static void read_in(stream *s, sconn *c)
{
    for (int k = 0; k < STREAM_READS && !c->gone && !c->queued; k++) {
        if (c->in_off && c->in_off == c->in_len)
            c->in_off = c->in_len = 0;
        if (c->in_off > c->in_cap / 2) { /* keep the partial message at the front */
            memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
            c->in_len -= c->in_off;
            c->in_off = 0;
        }
        unsigned char *p = grow_array(c->in, &c->in_cap, c->in_len + STREAM_READ_BYTES, 1, STREAM_READ_BYTES);
        if (!p) {
            log_error("stream", "connection %llu: out of memory for its input; closing it", (unsigned long long)c->id);
            mark_gone(s, c);
            return;
        }
        c->in = p;
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) { /* closed, or reset: what it sent before is still served */
            mark_gone(s, c);
            return;
        }
        c->in_len += (size_t)n;
        check_input(s, c);
        if ((size_t)n < STREAM_READ_BYTES)
            return;
    }
}

static void accept_all(stream *s)
{
    for (int k = 0; k < STREAM_EVENTS; k++) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                log_warn("stream", "accept failed: %s", strerror(errno));
            return;
        }
        if (s->conns.n >= STREAM_MAX_CONNS) {
            if (++s->refused <= 10 || s->refused % 1000 == 0)
                log_warn("stream", "refused a connection: %d are open (the most)", STREAM_MAX_CONNS);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* (fails harmlessly on a Unix socket) */
        sconn *c = calloc(1, sizeof *c);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = s->next_id};
        if (!c || plist_push(&s->conns, c) != SL_OK) {
            log_error("stream", "out of memory accepting a connection; closing it");
            free(c);
            close(fd);
            continue;
        }
        c->id = s->next_id++;
        c->fd = fd;
        if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            log_error("stream", "cannot watch a connection: %s; closing it", strerror(errno));
            s->conns.n--;
            free(c);
            close(fd);
        }
    }
}

static void poll_once(stream *s)
{
    struct epoll_event ev[STREAM_EVENTS];
    int n = epoll_wait(s->ep, ev, STREAM_EVENTS, 0);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == LISTENER_ID) {
            accept_all(s);
            continue;
        }
        sconn *c = find(s, ev[i].data.u64);
        if (!c || c->gone)
            continue;
        if (ev[i].events & EPOLLOUT)
            write_out(s, c);
        if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
            read_in(s, c);
    }
}

static void conn_free(sconn *c)
{
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
}

/* reap frees the gone connections that hold nothing handed out or queued. */
static void reap(stream *s)
{
    size_t keep = 0;
    for (size_t i = 0; i < s->gone.n; i++) {
        sconn *c = s->gone.v[i];
        if (c->queued || c == s->held) {
            s->gone.v[keep++] = c;
            continue;
        }
        if (c->dirty)
            plist_remove(&s->dirty, c);
        plist_remove(&s->conns, c);
        conn_free(c);
    }
    s->gone.n = keep;
}

/* release_held moves past the message handed out last. */
static void release_held(stream *s)
{
    sconn *c = s->held;
    s->held = NULL;
    if (!c)
        return;
    c->in_off += s->held_len;
    if (!c->gone || c->in_off < c->in_len)
        check_input(s, c);
}

int stream_recv(stream *s, uint64_t *id, int *fd, const void **body, size_t *len)
{
    release_held(s);
    if (s->gone.n)
        reap(s);
    for (int pass = 0; pass < 2; pass++) {
        while (s->ready.head < s->ready.n) {
            sconn *c = s->ready.v[s->ready.head++];
            c->queued = 0;
            size_t blen;
            if (proto_stream_frame(c->in + c->in_off, c->in_len - c->in_off, s->max_body, &blen) != 1)
                continue;
            *id = c->id;
            *fd = c->fd;
            *body = c->in + c->in_off + PROTO_STREAM_HDR;
            *len = blen;
            s->held = c;
            s->held_len = PROTO_STREAM_HDR + blen;
            return 1;
        }
        if (pass == 0)
            poll_once(s);
    }
    return 0;
}

int stream_send(stream *s, uint64_t id, const void *body, size_t len)
{
    sconn *c = find(s, id);
    if (!c || c->gone)
        return SL_ECONNECT;
    if (c->out_len - c->out_off + PROTO_STREAM_HDR + len > STREAM_OUT_MAX)
        return SL_EFULL;
    unsigned char *p = grow_array(c->out, &c->out_cap, c->out_len + PROTO_STREAM_HDR + len, 1, 4096);
    if (!p)
        return SL_ENOMEM;
    c->out = p;
    proto_stream_put_len(c->out + c->out_len, (uint32_t)len);
    memcpy(c->out + c->out_len + PROTO_STREAM_HDR, body, len);
    c->out_len += PROTO_STREAM_HDR + len;
    if (!c->dirty && !c->want_out) { /* (one waiting for EPOLLOUT is written then) */
        if (plist_push(&s->dirty, c) != SL_OK)
            return SL_ENOMEM;
        c->dirty = 1;
    }
    return SL_OK;
}

void stream_push(stream *s)
{
    for (size_t i = 0; i < s->dirty.n; i++) {
        sconn *c = s->dirty.v[i];
        c->dirty = 0;
        write_out(s, c);
    }
    s->dirty.n = 0;
}

int stream_pollfd(const stream *s, int *ready)
{
    *ready = s->ready.head < s->ready.n;
    return s->ep;
}

size_t stream_conns(const stream *s)
{
    return s->conns.n;
}

/* ---- the listener ---- */

static int sl_from_errno(int e)
{
    switch (e) {
    case EADDRINUSE:
        return SL_ESTATE;
    case EADDRNOTAVAIL: case EINVAL: case EAFNOSUPPORT: case ENAMETOOLONG: case EACCES:
        return SL_EINVAL;
    case ENOMEM: case EMFILE: case ENFILE: case ENOBUFS:
        return SL_ENOMEM;
    default:
        return SL_EIO;
    }
}

/* listen_ipc binds a Unix socket at path. */
static int listen_ipc(stream *s, const char *endpoint, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!path[0] || strlen(path) >= sizeof sa.sun_path) {
        log_error("stream", "cannot listen on %s: the path is empty or longer than %zu bytes", endpoint,
                  sizeof sa.sun_path - 1);
        return SL_EINVAL;
    }
    int rc = endpoint_claim(endpoint);
    if (rc != SL_OK)
        return rc;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        log_error("stream", "cannot listen on %s: %s", endpoint, strerror(e));
        return sl_from_errno(e);
    }
    memcpy(s->path, path, strlen(path) + 1);
    return SL_OK;
}

/* listen_tcp binds HOST:PORT (HOST * for every address, [v6] for IPv6). */
static int listen_tcp(stream *s, const char *endpoint, const char *hostport)
{
    char host[256];
    const char *port;
    if (proto_stream_hostport(hostport, host, sizeof host, &port) != 0) {
        log_error("stream", "cannot listen on %s: give tcp://HOST:PORT", endpoint);
        return SL_EINVAL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
    int g = getaddrinfo(strcmp(host, "*") ? host : NULL, port, &hints, &ai);
    if (g != 0) {
        log_error("stream", "cannot listen on %s: %s", endpoint, gai_strerror(g));
        return SL_EINVAL;
    }
    int one = 1, e = 0;
    s->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(s->lfd, ai->ai_addr, ai->ai_addrlen) != 0)
        e = errno;
    freeaddrinfo(ai);
    if (e) {
        log_error("stream", "cannot listen on %s: %s", endpoint, strerror(e));
        return sl_from_errno(e);
    }
    return SL_OK;
}

int stream_open(const char *endpoint, size_t max_body, stream **out)
{
    *out = NULL;
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return SL_ENOMEM;
    s->lfd = s->ep = -1;
    s->max_body = max_body;
    s->next_id = LISTENER_ID + 1;
    int rc;
    if (!strncmp(endpoint, "ipc://", 6))
        rc = listen_ipc(s, endpoint, endpoint + 6);
    else if (!strncmp(endpoint, "tcp://", 6))
        rc = listen_tcp(s, endpoint, endpoint + 6);
    else {
        log_error("stream", "cannot listen on %s: give tcp://HOST:PORT or ipc:///PATH", endpoint);
        rc = SL_EINVAL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTENER_ID};
    if (rc == SL_OK && (listen(s->lfd, 128) != 0 || (s->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
                        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &ev) != 0)) {
        int e = errno;
        log_error("stream", "cannot listen on %s: %s", endpoint, strerror(e));
        rc = sl_from_errno(e);
    }
    if (rc != SL_OK) {
        stream_close(&s);
        return rc;
    }
    *out = s;
    return SL_OK;
}

void stream_close(stream **sp)
{
    stream *s = sp ? *sp : NULL;
    if (!s)
        return;
    for (size_t i = 0; i < s->conns.n; i++)
        conn_free(s->conns.v[i]);
    free(s->conns.v);
    free(s->ready.v);
    free(s->dirty.v);
    free(s->gone.v);
    if (s->ep >= 0)
        close(s->ep);
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->path[0])
        unlink(s->path);
    free(s);
    *sp = NULL;
}
