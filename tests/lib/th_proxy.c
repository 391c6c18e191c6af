/*
 * th_proxy.c - a Unix-socket proxy a test can cut: what one process sees
 * when its link to another (a node to Redis, or to the other node's
 * replication stream) breaks while the rest go on.
 *
 * One thread accepts on the proxy's path and copies bytes both ways
 * between each accepted connection and a new connection to the target
 * path, with poll over every descriptor (at most TH_PROXY_PAIRS pairs).
 * th_proxy_cut closes every pair at once and, until th_proxy_heal, closes
 * each new connection as soon as it is accepted: to the client the peer
 * is gone, as when a link fails and its connections are reset.
 *
 * Nothing blocks: every descriptor is non-blocking, and each direction of
 * a pair holds what it read until the other side takes it (its buffer
 * full, that side is not read meanwhile). A proxy that wrote with a
 * blocking write stopped both directions of every pair while one peer did
 * not read: a replication stream catching up (a thousand records one way,
 * acknowledgements the other) stalled behind it.
 *
 * Costs: one thread; a copy of every byte through a 64 KiB buffer per
 * direction of each pair, allocated while the pair lives.
 */
#include "th_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define TH_PROXY_BUF (64 * 1024)

static int unix_addr(const char *path, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        return -1;
    strcpy(a->sun_path, path);
    return 0;
}

static void close_pair(th_proxy *p, int i)
{
    close(p->pair[i][0]);
    close(p->pair[i][1]);
    p->pair[i][0] = p->pair[i][1] = -1;
    for (int k = 0; k < 2; k++) {
        free(p->buf[i][k]);
        p->buf[i][k] = NULL;
        p->len[i][k] = p->off[i][k] = 0;
    }
}

static int nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* accept_one takes a new connection and joins it to the target, or closes
 * it when the proxy is cut (or the target refuses, or no pair is free). */
static void accept_one(th_proxy *p)
{
    int c = accept(p->lfd, NULL, NULL);
    if (c < 0)
        return;
    struct sockaddr_un a;
    int t = -1;
    if (!atomic_load(&p->cut) && unix_addr(p->target, &a) == 0 && (t = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0 &&
        connect(t, (struct sockaddr *)&a, sizeof a) == 0 && nonblocking(c) == 0 && nonblocking(t) == 0) {
        for (int i = 0; i < TH_PROXY_PAIRS; i++)
            if (p->pair[i][0] < 0) {
                p->buf[i][0] = malloc(TH_PROXY_BUF);
                p->buf[i][1] = malloc(TH_PROXY_BUF);
                p->pair[i][0] = c;
                p->pair[i][1] = t;
                if (!p->buf[i][0] || !p->buf[i][1])
                    close_pair(p, i);
                return;
            }
    }
    if (t >= 0)
        close(t);
    close(c);
}

/* flush writes what direction k of pair i holds (read from side k) to the
 * other side, as far as it takes it; -1 when that side is gone. */
static int flush(th_proxy *p, int i, int k)
{
    while (p->off[i][k] < p->len[i][k]) {
        ssize_t n = write(p->pair[i][!k], p->buf[i][k] + p->off[i][k], p->len[i][k] - p->off[i][k]);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        p->off[i][k] += (size_t)n;
    }
    p->len[i][k] = p->off[i][k] = 0;
    return 0;
}

/* pump moves what side k of pair i has to say: a read when its direction
 * is empty, then as much of it as the other side takes. -1: gone. */
static int pump(th_proxy *p, int i, int k)
{
    if (p->len[i][k] == 0) {
        ssize_t got = read(p->pair[i][k], p->buf[i][k], TH_PROXY_BUF);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
            return -1;
        if (got > 0)
            p->len[i][k] = (size_t)got;
    }
    return flush(p, i, k);
}

static void *run(void *arg)
{
    th_proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        if (atomic_load(&p->cut))
            for (int i = 0; i < TH_PROXY_PAIRS; i++)
                if (p->pair[i][0] >= 0)
                    close_pair(p, i);
        struct pollfd pfd[1 + 2 * TH_PROXY_PAIRS];
        int at[1 + 2 * TH_PROXY_PAIRS][2], n = 0; /* pfd[j] is side at[j][1] of pair at[j][0] */
        pfd[n++] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
        for (int i = 0; i < TH_PROXY_PAIRS; i++)
            for (int k = 0; k < 2 && p->pair[i][0] >= 0; k++) {
                short ev = (short)((p->len[i][k] == 0 ? POLLIN : 0) | (p->len[i][!k] ? POLLOUT : 0));
                at[n][0] = i, at[n][1] = k;
                pfd[n++] = (struct pollfd){.fd = p->pair[i][k], .events = ev};
            }
        if (poll(pfd, (nfds_t)n, 20) <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            accept_one(p);
        for (int j = 1; j < n; j++) {
            int i = at[j][0], k = at[j][1];
            if (!pfd[j].revents || p->pair[i][0] < 0)
                continue;
            if (((pfd[j].revents & POLLOUT) && flush(p, i, !k) != 0) ||
                ((pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) && pump(p, i, k) != 0))
                close_pair(p, i);
        }
    }
    for (int i = 0; i < TH_PROXY_PAIRS; i++)
        if (p->pair[i][0] >= 0)
            close_pair(p, i);
    return NULL;
}

int th_proxy_start(th_proxy *p, const char *path, const char *target)
{
    struct sockaddr_un a;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < TH_PROXY_PAIRS; i++)
        p->pair[i][0] = p->pair[i][1] = -1;
    snprintf(p->path, sizeof p->path, "%s", path);
    snprintf(p->target, sizeof p->target, "%s", target);
    atomic_init(&p->cut, 0);
    atomic_init(&p->stop, 0);
    unlink(path);
    if (unix_addr(path, &a) != 0 || (p->lfd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
        return -1;
    if (bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->lfd, 64) != 0 ||
        pthread_create(&p->thread, NULL, run, p) != 0) {
        close(p->lfd);
        return -1;
    }
    p->running = 1;
    return 0;
}

void th_proxy_cut(th_proxy *p)
{
    atomic_store(&p->cut, 1);
}

void th_proxy_heal(th_proxy *p)
{
    atomic_store(&p->cut, 0);
}

void th_proxy_stop(th_proxy *p)
{
    if (!p->running)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    close(p->lfd);
    unlink(p->path);
    p->running = 0;
}
