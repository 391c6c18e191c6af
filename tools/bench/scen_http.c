/*
 * scen_http.c - one keep-alive HTTP/1.1 connection to 127.0.0.1.
 *
 * A request is written with one send (headers and body in one buffer, and
 * TCP_NODELAY set, so no Nagle delay sits between them). The answer is read
 * into a fixed buffer until the blank line that ends its headers; the
 * status line, Content-Length, Retry-After and Connection are read from it,
 * then the body is read to its length and kept up to
 * SCEN_HTTP_BODY_BYTES. Memory per connection is fixed; a header
 * section longer than HEAD_BYTES is a malformed answer.
 *
 * Every socket call is bounded by SO_SNDTIMEO / SO_RCVTIMEO, and every read
 * loop by a count, so a silent server costs at most the timeout. A request
 * that fails before any byte of the answer arrived, on a connection that had
 * served before (the server may have closed it while idle), is sent once
 * more on a fresh connection: sluice-sink decides a request only once its
 * body arrived, so this never counts a request twice unless the first copy
 * was read and decided and the answer lost, which loopback does not do.
 */
#include "scen_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HEAD_BYTES    4096
#define REQUEST_BYTES 2048 /* request line, headers and body */
#define MAX_READS     100000

void scen_http_init(scen_http *h, uint16_t port)
{
    h->fd = -1;
    h->port = port;
}

void scen_http_close(scen_http *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
}

static int http_connect(scen_http *h)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(h->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {.tv_sec = SCEN_HTTP_TIMEOUT_MS / 1000,
                         .tv_usec = (SCEN_HTTP_TIMEOUT_MS % 1000) * 1000};
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    h->fd = fd;
    return 0;
}

static int send_all(int fd, const char *buf, size_t len)
{
    for (int i = 0; len > 0 && i < MAX_READS; i++) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return len ? -1 : 0;
}

/* header_value finds "\r\nName:" in head (case-insensitive) and returns the
 * value after the colon and blanks, or NULL. */
static const char *header_value(const char *head, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':') {
            const char *v = p + 3 + len;
            while (*v == ' ' || *v == '\t')
                v++;
            return v;
        }
    }
    return NULL;
}

/* answer_read reads one answer. Returns 0; -1 when nothing arrived; -2 when
 * the answer broke off or is malformed. */
static int answer_read(scen_http *h, scen_http_reply *out, int *keep)
{
    char head[HEAD_BYTES + 1];
    size_t got = 0;
    char *end = NULL;
    for (int i = 0; !end && i < MAX_READS; i++) {
        if (got == HEAD_BYTES)
            return -2;
        ssize_t n = recv(h->fd, head + got, HEAD_BYTES - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return got ? -2 : -1;
        got += (size_t)n;
        head[got] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if (!end || sscanf(head, "HTTP/1.%*d %d", &out->status) != 1)
        return -2;
    *end = '\0';
    const char *v = header_value(head, "Content-Length");
    long long length = v ? strtoll(v, NULL, 10) : 0;
    v = header_value(head, "Retry-After");
    out->retry_after_ms = v ? (uint32_t)(strtoul(v, NULL, 10) * 1000u) : 0;
    v = header_value(head, "Connection");
    *keep = !(v && strncasecmp(v, "close", 5) == 0);
    if (length < 0)
        return -2;
    /* the body: what came with the headers, then the rest */
    size_t have = got - (size_t)(end + 4 - head), kept = 0;
    size_t need = (size_t)length;
    const char *body = end + 4;
    for (int i = 0; i < MAX_READS; i++) {
        size_t take = have < need ? have : need;
        size_t room = sizeof out->body - 1 - kept;
        memcpy(out->body + kept, body, take < room ? take : room);
        kept += take < room ? take : room;
        need -= take;
        if (!need)
            break;
        ssize_t n = recv(h->fd, head, HEAD_BYTES, 0);
        if (n < 0 && errno == EINTR) {
            have = 0;
            continue;
        }
        if (n <= 0)
            return -2;
        body = head;
        have = (size_t)n;
    }
    out->body[kept] = '\0';
    return need ? -2 : 0;
}

int scen_http_request(scen_http *h, const char *method, const char *path,
                           const void *body, size_t body_len, scen_http_reply *out)
{
    char req[REQUEST_BYTES];
    int head = snprintf(req, sizeof req,
                        "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Type: text/plain\r\n"
                        "Content-Length: %zu\r\n\r\n",
                        method, path, (unsigned)h->port, body_len);
    if (head < 0 || (size_t)head + body_len > sizeof req)
        return -1;
    if (body_len)
        memcpy(req + head, body, body_len);
    *out = (scen_http_reply){.status = 0};
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = h->fd >= 0, keep = 1;
        if (!reused && http_connect(h) != 0)
            return -1;
        int rc = send_all(h->fd, req, (size_t)head + body_len);
        if (rc == 0)
            rc = answer_read(h, out, &keep);
        if (rc == 0) {
            if (!keep)
                scen_http_close(h);
            return 0;
        }
        scen_http_close(h);
        if (!reused || rc == -2)
            return -1; /* a fresh connection failed, or an answer broke off */
    }
    return -1;
}
