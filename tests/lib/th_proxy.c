/*
 * th_proxy.c - a Unix-socket proxy a test can cut: what one process sees
 * when its link to another (a node to Redis) breaks while the rest go on.
 *
 * One thread accepts on the proxy's path and copies bytes both ways
 * between each accepted connection and a new connection to the target
 * path, with poll over every descriptor (at most TH_PROXY_PAIRS pairs).
 * th_proxy_cut closes every pair at once and, until th_proxy_heal, closes
 * each new connection as soon as it is accepted: to the client the peer
 * is gone, as when a link fails and its connections are reset.
 *
 * Costs: one thread; a copy of every byte through a 64 KiB buffer.
 */
#include "th_proxy.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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
}

/* accept_one takes a new connection and joins it to the target, or closes
 * it when the proxy is cut (or the target refuses). */
static void accept_one(th_proxy *p)
{
    int c = accept(p->lfd, NULL, NULL);
    if (c < 0)
        return;
    struct sockaddr_un a;
    int t = -1;
    if (!atomic_load(&p->cut) && unix_addr(p->target, &a) == 0 && (t = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0 &&
        connect(t, (struct sockaddr *)&a, sizeof a) == 0) {
        for (int i = 0; i < TH_PROXY_PAIRS; i++)
            if (p->pair[i][0] < 0) {
                p->pair[i][0] = c;
                p->pair[i][1] = t;
                return;
            }
    }
    if (t >= 0)
        close(t);
    close(c);
}

static void *run(void *arg)
{
    th_proxy *p = arg;
    static char buf[64 * 1024];
    while (!atomic_load(&p->stop)) {
        if (atomic_load(&p->cut))
            for (int i = 0; i < TH_PROXY_PAIRS; i++)
                if (p->pair[i][0] >= 0)
                    close_pair(p, i);
        struct pollfd pfd[1 + 2 * TH_PROXY_PAIRS];
        int n = 0;
        pfd[n++] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
        for (int i = 0; i < TH_PROXY_PAIRS; i++)
            for (int k = 0; k < 2; k++)
                if (p->pair[i][k] >= 0)
                    pfd[n++] = (struct pollfd){.fd = p->pair[i][k], .events = POLLIN};
        if (poll(pfd, (nfds_t)n, 20) <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            accept_one(p);
        for (int j = 1; j < n; j++) {
            if (!pfd[j].revents)
                continue;
            for (int i = 0; i < TH_PROXY_PAIRS; i++)
                for (int k = 0; k < 2; k++)
                    if (p->pair[i][k] == pfd[j].fd) {
                        ssize_t got = read(pfd[j].fd, buf, sizeof buf);
                        if (got <= 0 || write(p->pair[i][!k], buf, (size_t)got) != got)
                            close_pair(p, i);
                        k = 2, i = TH_PROXY_PAIRS; /* found */
                    }
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
