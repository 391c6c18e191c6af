/*
 * th_proxy.h - a Unix-socket proxy a test can cut and heal (th_proxy.c).
 */
#ifndef SLUICE_TH_PROXY_H
#define SLUICE_TH_PROXY_H

#include <pthread.h>
#include <stdatomic.h>

#define TH_PROXY_PAIRS 32

typedef struct th_proxy {
    char path[300], target[300];
    int lfd, running;
    int pair[TH_PROXY_PAIRS][2]; /* accepted, and its connection to the target; -1 when free */
    char *buf[TH_PROXY_PAIRS][2];       /* what each side read and the other has not yet taken */
    size_t len[TH_PROXY_PAIRS][2], off[TH_PROXY_PAIRS][2];
    atomic_int cut, stop;
    pthread_t thread;
} th_proxy;

/* th_proxy_start listens on path and joins each connection to target (both
 * Unix socket paths). Returns 0 or -1. */
int th_proxy_start(th_proxy *p, const char *path, const char *target);

/* th_proxy_cut closes every joined connection and, until th_proxy_heal,
 * every new one at once. */
void th_proxy_cut(th_proxy *p);
void th_proxy_heal(th_proxy *p);

/* th_proxy_stop stops the thread, closes everything and removes path. */
void th_proxy_stop(th_proxy *p);

#endif /* SLUICE_TH_PROXY_H */
