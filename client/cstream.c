/*
 * cstream.c - the client's stream transport (cstream.h): one plain socket
 * to the broker's --stream-listen, written and read by the caller's own
 * thread.
 *
 * Over ZeroMQ a synchronous publish crosses the client's I/O thread and
 * the broker's on the way out and back; here the caller writes the socket
 * and the broker's loop reads it, so a request and its reply cost two
 * thread wake-ups instead of six. Nothing else changes: the same messages,
 * the same pump (wire.c), the same seq matching.
 *
 * Connecting is lazy: cstream_open resolves the address, and the first
 * send connects (non-blocking, bounded by the send's deadline) and writes
 * the greeting. A connection that closes or breaks is reported through
 * c->stream_lost; wire.c then ends what waited on it, and the next send
 * connects anew. There is no heartbeat: a broker that goes away closes the
 * socket (the kernel does, even for one killed with -9), and a request
 * still waiting for its reply ends at its timeout as over ZeroMQ.
 *
 * Costs: per message one send(2) of header and body (sendmsg, no copy),
 * and per read one recv(2) of up to 64 KiB, then one copy of each message
 * into c->frame for the router (route.c reads it there).
 */
#include "cstream.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto_stream.h"

#define READ_BYTES 65536

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* wait_fd polls c's socket for events until deadline_ns: 1 when ready, 0
 * when the deadline passed. */
static int wait_fd(const sl_client *c, short events, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = deadline_ns - mono_ns();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = c->sfd, .events = events};
        int n = poll(&p, 1, left / 1000000 > 60000 ? 60000 : (int)((left + 999999) / 1000000));
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 1; /* the send or connect that follows reports the error */
    }
}

bool cstream_is(const char *endpoint)
{
    return endpoint && !strncmp(endpoint, CSTREAM_SCHEME, sizeof CSTREAM_SCHEME - 1);
}

int cstream_open(sl_client *c, const char *endpoint)
{
    const char *rest = endpoint + sizeof CSTREAM_SCHEME - 1;
    c->over_stream = true;
    c->sfd = -1;
    if (!strncmp(rest, "ipc://", 6)) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        const char *path = rest + 6;
        if (!path[0] || strlen(path) >= sizeof sa.sun_path)
            return SL_EINVAL;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        memcpy(c->s_addr, &sa, sizeof sa);
        c->s_addrlen = sizeof sa;
        c->s_family = AF_UNIX;
        return SL_OK;
    }
    if (strncmp(rest, "tcp://", 6))
        return SL_EINVAL;
    char host[256];
    const char *port;
    if (proto_stream_hostport(rest + 6, host, sizeof host, &port) != 0)
        return SL_EINVAL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return SL_EINVAL;
    int rc = SL_EINVAL;
    if (ai->ai_addrlen <= sizeof c->s_addr) {
        memcpy(c->s_addr, ai->ai_addr, ai->ai_addrlen);
        c->s_addrlen = (unsigned)ai->ai_addrlen;
        c->s_family = ai->ai_family;
        rc = SL_OK;
    }
    freeaddrinfo(ai);
    return rc;
}

int cstream_connect(sl_client *c, int64_t deadline_ns)
{
    int fd = socket(c->s_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno == EMFILE || errno == ENFILE || errno == ENOMEM ? SL_ENOMEM : SL_ECONNECT;
    c->sfd = fd;
    int err = 0;
    if (connect(fd, (const struct sockaddr *)c->s_addr, c->s_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS || err == EAGAIN) {
            socklen_t len = sizeof err;
            if (!wait_fd(c, POLLOUT, deadline_ns)) {
                cstream_drop(c);
                return SL_ETIMEDOUT;
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
        }
    }
    if (err) {
        cstream_drop(c);
        if (err == ECONNREFUSED || err == ENOENT) {
            static const char why[] = "connection refused: nothing listens at the broker's stream endpoint";
            return client_fail_text(c, SL_ECONNECT, why, sizeof why - 1);
        }
        return SL_ECONNECT;
    }
    int one = 1;
    if (c->s_family != AF_UNIX)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* a fresh socket's buffer always takes the 4 bytes */
    if (send(fd, PROTO_STREAM_MAGIC, PROTO_STREAM_MAGIC_LEN, MSG_NOSIGNAL) != PROTO_STREAM_MAGIC_LEN) {
        cstream_drop(c);
        return SL_ECONNECT;
    }
    c->connected = true;
    c->reached = true;
    c->handshakes++;
    return SL_OK;
}

int cstream_send(sl_client *c, const void *body, size_t len, int64_t deadline_ns)
{
    if (c->sfd < 0) {
        int rc = cstream_connect(c, deadline_ns);
        if (rc)
            return rc;
    }
    c->stream_unsent = false;
    unsigned char hdr[PROTO_STREAM_HDR];
    proto_stream_put_len(hdr, (uint32_t)len);
    size_t total = sizeof hdr + len, done = 0;
    while (done < total) {
        struct iovec iov[2];
        int n = 0;
        if (done < sizeof hdr)
            iov[n++] = (struct iovec){hdr + done, sizeof hdr - done};
        size_t in_body = done > sizeof hdr ? done - sizeof hdr : 0;
        iov[n++] = (struct iovec){(char *)body + in_body, len - in_body};
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->sfd, &mh, MSG_NOSIGNAL);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(c, POLLOUT, deadline_ns))
            continue;
        int timed_out = w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        /* a message cut short leaves the stream unframed: this connection is done */
        c->stream_lost = true;
        c->stream_unsent = done == 0 && !timed_out;
        if (timed_out && done == 0) {
            c->stream_lost = false; /* nothing of it left: the connection is still whole */
            return SL_ETIMEDOUT;
        }
        return timed_out ? SL_ETIMEDOUT : SL_ECONNECT;
    }
    return SL_OK;
}

bool cstream_hup(const sl_client *c)
{
    struct pollfd p = {.fd = c->sfd, .events = POLLRDHUP};
    return c->sfd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* frame_out copies the whole message at the front of the input into
 * c->frame: 1, 0 when there is none, -1 out of memory. A broker never
 * announces more than PROTO_MAX_FRAME; one that does is not believed. */
static int frame_out(sl_client *c)
{
    size_t len;
    int r = proto_stream_frame(c->sin + c->sin_off, c->sin_len - c->sin_off, PROTO_MAX_FRAME, &len);
    if (r < 0) {
        c->stream_lost = true;
        return 0;
    }
    if (r == 0)
        return 0;
    zmq_msg_close(&c->frame);
    if (zmq_msg_init_size(&c->frame, len) != 0) {
        zmq_msg_init(&c->frame);
        return -1;
    }
    memcpy(zmq_msg_data(&c->frame), c->sin + c->sin_off + PROTO_STREAM_HDR, len);
    c->sin_off += PROTO_STREAM_HDR + len;
    if (c->sin_off == c->sin_len)
        c->sin_off = c->sin_len = 0;
    return 1;
}

int cstream_take(sl_client *c, bool *got)
{
    *got = false;
    if (c->sfd < 0 || c->stream_lost)
        return SL_OK;
    int r = frame_out(c);
    if (r != 0) {
        *got = r > 0;
        return r < 0 ? SL_ENOMEM : SL_OK;
    }
    if (c->sin_off > 0) { /* keep the partial message at the front */
        memmove(c->sin, c->sin + c->sin_off, c->sin_len - c->sin_off);
        c->sin_len -= c->sin_off;
        c->sin_off = 0;
    }
    if (c->sin_cap - c->sin_len < READ_BYTES) {
        size_t cap = c->sin_cap ? c->sin_cap * 2 : 2 * READ_BYTES;
        unsigned char *p = realloc(c->sin, cap);
        if (!p)
            return SL_ENOMEM;
        c->sin = p;
        c->sin_cap = cap;
    }
    ssize_t n;
    do
        n = recv(c->sfd, c->sin + c->sin_len, c->sin_cap - c->sin_len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return SL_OK;
    if (n <= 0) {
        c->stream_lost = true; /* closed by the broker, or broken */
        return SL_OK;
    }
    c->sin_len += (size_t)n;
    r = frame_out(c);
    *got = r > 0;
    return r < 0 ? SL_ENOMEM : SL_OK;
}

void cstream_drop(sl_client *c)
{
    if (c->sfd >= 0)
        close(c->sfd);
    c->sfd = -1;
    c->sin_off = c->sin_len = 0;
    c->connected = false;
}

void cstream_close(sl_client *c)
{
    cstream_drop(c);
    free(c->sin);
    c->sin = NULL;
    c->sin_cap = 0;
}
