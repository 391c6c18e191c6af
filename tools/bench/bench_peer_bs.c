/*
 * bench_peer_bs.c - beanstalkd as the bench's peer: its process and a
 * minimal client of its text protocol.
 *
 * Why beanstalkd: it is the simplest durable work queue Debian ships, and
 * with -f 0 it fsyncs its binlog on every put and delete before it answers,
 * which is what Sluice promises for a confirmed publish. Rows measured
 * against it in the same run, on the same disk, say where Sluice stands on
 * whatever machine the bench runs on; absolute rates alone do not (the
 * disk's flush rate changes several times over).
 *
 * The process: a port is found by binding 127.0.0.1:0 and closing it, then
 * beanstalkd is started on it with its binlog in the run's directory, in a
 * process group of its own, and polled with connect() until it accepts
 * (bounded in count and time; a port taken in between is tried again with
 * another). It is stopped by its PID.
 *
 * The protocol (beanstalkd's protocol.txt): each command is one line ending
 * in CRLF; put carries its body on the next line. Replies are one line,
 * and RESERVED is followed by the job's body and CRLF. The client keeps one
 * read buffer per connection and parses exactly the replies it asked for;
 * anything else is an error, reported with the line. Every read and write
 * is bounded by SO_RCVTIMEO / SO_SNDTIMEO, so a stuck peer fails the row.
 */
#include "bench_peer_bs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bench_core.h"

#define START_TRIES   3    /* ports tried before giving up */
#define CONNECT_POLLS 250  /* connect attempts after a start, PROC_POLL_MS apart */
#define CONNECT_POLL_MS 20

int bench_peer_bs_available(void)
{
    const char *path = getenv("PATH");
    char buf[PROC_PATH_BYTES];
    if (!path)
        return 0;
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/beanstalkd", (int)n, p);
        if (access(buf, X_OK) == 0)
            return 1;
        p += n + (colon ? 1 : 0);
    }
    return 0;
}

/* free_port asks the kernel for a free loopback port. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int connect_port(int port, int quiet)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return quiet ? -1 : bench_core_fail("socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = BENCH_CORE_CLIENT_TIMEOUT_MS / 1000,
                         .tv_usec = (BENCH_CORE_CLIENT_TIMEOUT_MS % 1000) * 1000};
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        return quiet ? -1 : bench_core_fail("beanstalkd: connect to port %d: %s", port, strerror(e));
    }
    return fd;
}

int bench_peer_bs_start(bench_peer_bs *s, const char *dir)
{
    char binlog[PROC_PATH_BYTES], log[PROC_PATH_BYTES], port_s[16];
    snprintf(binlog, sizeof binlog, "%s/binlog", dir);
    snprintf(log, sizeof log, "%s/beanstalkd.log", dir);
    *s = (bench_peer_bs){.port = 0};
    for (int t = 0; t < START_TRIES && !bench_core_stopping(); t++) {
        int port = free_port();
        if (port <= 0)
            return bench_core_fail("beanstalkd: no free loopback port");
        snprintf(port_s, sizeof port_s, "%d", port);
        const char *argv[] = {"beanstalkd", "-f", "0", "-b", binlog, "-l", "127.0.0.1", "-p", port_s, NULL};
        const proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true,
                                .own_group = true, .die_with_parent = true};
        if (proc_start(&s->p, "beanstalkd", &spec) != 0)
            return -1;
        for (int i = 0; i < CONNECT_POLLS && proc_running(&s->p); i++) {
            int fd = connect_port(port, 1);
            if (fd >= 0) {
                close(fd);
                s->port = port;
                return 0;
            }
            nanosleep(&(struct timespec){.tv_nsec = CONNECT_POLL_MS * BENCH_CORE_NS_PER_MS}, NULL);
        }
        proc_kill(&s->p); /* exited (port taken?) or never answered: another port */
    }
    return bench_core_fail("beanstalkd did not start (its log: %s)", log);
}

int bench_peer_bs_stop(bench_peer_bs *s)
{
    if (!s->p.pid)
        return 0;
    /* beanstalkd has no handler for SIGTERM: dying of it is its clean exit. */
    int st = PROC_RUNNING;
    if (kill(s->p.pid, SIGTERM) == 0)
        st = proc_wait(&s->p, 5000);
    s->port = 0;
    if (st == 128 + SIGTERM || st == 0)
        return 0;
    if (st == PROC_RUNNING)
        proc_kill(&s->p);
    proc_tail(&s->p, PROC_TAIL_BYTES);
    return bench_core_fail("beanstalkd: %s (status %d)", st == PROC_RUNNING ? "killed after 5 s" : "exited", st);
}

static int write_all(bench_peer_conn *c, const void *data, size_t len)
{
    const char *p = data;
    for (size_t off = 0; off < len;) {
        ssize_t n = send(c->fd, p + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return bench_core_fail("beanstalkd: send: %s", n < 0 ? strerror(errno) : "closed");
        off += (size_t)n;
    }
    return 0;
}

/* fill reads more into the buffer, compacting it first. */
static int fill(bench_peer_conn *c)
{
    if (c->off > 0) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->len == sizeof c->buf)
        return bench_core_fail("beanstalkd: reply longer than %zu bytes", sizeof c->buf);
    for (int k = 0; k < 16; k++) {
        ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return bench_core_fail("beanstalkd: recv: %s", n < 0 ? strerror(errno) : "closed");
        c->len += (size_t)n;
        return 0;
    }
    return bench_core_fail("beanstalkd: recv interrupted");
}

/* read_line copies the next line, CRLF dropped, to line (cap bytes). */
static int read_line(bench_peer_conn *c, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
        if (nl) {
            size_t n = (size_t)(nl - (c->buf + c->off));
            if (n > 0 && nl[-1] == '\r')
                n--;
            snprintf(line, cap, "%.*s", (int)n, c->buf + c->off);
            c->off = (size_t)(nl - c->buf) + 1;
            return 0;
        }
        if (fill(c) != 0)
            return -1;
    }
}

/* read_body takes len bytes and the CRLF after them, copying up to cap. */
static int read_body(bench_peer_conn *c, void *body, size_t cap, size_t len)
{
    size_t want = len + 2, got = 0;
    while (got < want) {
        if (c->off == c->len && fill(c) != 0)
            return -1;
        size_t n = c->len - c->off < want - got ? c->len - c->off : want - got;
        if (got < cap && body)
            memcpy((char *)body + got, c->buf + c->off, got + n <= cap ? n : cap - got);
        c->off += n;
        got += n;
    }
    return 0;
}

/* command writes line and expects a reply starting with want. */
static int command(bench_peer_conn *c, const char *line, const char *want, char *reply, size_t cap)
{
    if (write_all(c, line, strlen(line)) != 0 || read_line(c, reply, cap) != 0)
        return -1;
    if (strncmp(reply, want, strlen(want)) != 0)
        return bench_core_fail("beanstalkd: %.*s: answered \"%s\"", (int)strcspn(line, "\r"), line, reply);
    return 0;
}

int bench_peer_conn_open(bench_peer_conn *c, int port, const char *tube)
{
    char line[128], reply[128];
    c->off = c->len = 0;
    c->fd = connect_port(port, 0);
    if (c->fd < 0)
        return -1;
    if (tube) {
        snprintf(line, sizeof line, "use %s\r\n", tube);
        int rc = command(c, line, "USING", reply, sizeof reply);
        snprintf(line, sizeof line, "watch %s\r\n", tube);
        if (rc == 0)
            rc = command(c, line, "WATCHING", reply, sizeof reply);
        if (rc == 0)
            rc = command(c, "ignore default\r\n", "WATCHING", reply, sizeof reply);
        if (rc != 0) {
            bench_peer_conn_close(c);
            return -1;
        }
    }
    return 0;
}

void bench_peer_conn_close(bench_peer_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

int bench_peer_put_send(bench_peer_conn *c, const void *body, size_t len)
{
    char msg[64 + BENCH_CORE_BODY_BYTES * 4];
    if (len > sizeof msg - 64)
        return bench_core_fail("beanstalkd: body of %zu bytes too long for the bench", len);
    int h = snprintf(msg, sizeof msg, "put 1024 0 60 %zu\r\n", len);
    memcpy(msg + h, body, len);
    memcpy(msg + h + len, "\r\n", 2);
    return write_all(c, msg, (size_t)h + len + 2);
}

int bench_peer_put_recv(bench_peer_conn *c)
{
    char reply[128];
    if (read_line(c, reply, sizeof reply) != 0)
        return -1;
    if (strncmp(reply, "INSERTED ", 9) != 0)
        return bench_core_fail("beanstalkd: put: answered \"%s\"", reply);
    return 0;
}

int bench_peer_put(bench_peer_conn *c, const void *body, size_t len)
{
    return bench_peer_put_send(c, body, len) == 0 ? bench_peer_put_recv(c) : -1;
}

int bench_peer_reserve(bench_peer_conn *c, int timeout_s, uint64_t *id, void *body, size_t cap,
                       size_t *len)
{
    char line[64], reply[128];
    uint64_t got_id;
    size_t got_len;
    snprintf(line, sizeof line, "reserve-with-timeout %d\r\n", timeout_s);
    if (write_all(c, line, strlen(line)) != 0 || read_line(c, reply, sizeof reply) != 0)
        return -1;
    if (strcmp(reply, "TIMED_OUT") == 0 || strcmp(reply, "DEADLINE_SOON") == 0)
        return 0;
    if (sscanf(reply, "RESERVED %" SCNu64 " %zu", &got_id, &got_len) != 2)
        return bench_core_fail("beanstalkd: reserve: answered \"%s\"", reply);
    if (read_body(c, body, cap, got_len) != 0)
        return -1;
    *id = got_id;
    if (len)
        *len = got_len;
    return 1;
}

int bench_peer_delete(bench_peer_conn *c, uint64_t id)
{
    char line[64], reply[128];
    snprintf(line, sizeof line, "delete %" PRIu64 "\r\n", id);
    return command(c, line, "DELETED", reply, sizeof reply);
}

int bench_peer_ready(bench_peer_conn *c, const char *tube, uint64_t *ready)
{
    char line[128], reply[128], yaml[4096];
    size_t n;
    snprintf(line, sizeof line, "stats-tube %s\r\n", tube);
    if (command(c, line, "OK ", reply, sizeof reply) != 0)
        return -1;
    if (sscanf(reply, "OK %zu", &n) != 1 || n >= sizeof yaml)
        return bench_core_fail("beanstalkd: stats-tube: answered \"%s\"", reply);
    if (read_body(c, yaml, sizeof yaml, n) != 0)
        return -1;
    yaml[n] = '\0';
    const char *k = strstr(yaml, "current-jobs-ready: ");
    if (!k)
        return bench_core_fail("beanstalkd: stats-tube without current-jobs-ready");
    *ready = strtoull(k + 20, NULL, 10);
    return 0;
}
