/*
 * loop.h - the event loop: the only wait for input and the only clock reads.
 */
#ifndef SLUICE_LOOP_H
#define SLUICE_LOOP_H

#include <signal.h>

#include "bk.h"

/* loop_now_mono / loop_now_wall read CLOCK_MONOTONIC / CLOCK_REALTIME in ns. */
uint64_t loop_now_mono(void);
uint64_t loop_now_wall(void);

/* loop_cpu_ns reads the calling thread's CPU time in ns: what a piece of
 * the loop's work costs, whatever else runs on the machine (publish.c). */
uint64_t loop_cpu_ns(void);

/* loop_run serves until *stop becomes non-zero, then refuses what is still
 * queued with SL_ESHUTDOWN. Returns SL_OK, or SL_EIO after a failed commit
 * (every reply of that pass was turned into an error first). */
int loop_run(bk *b, volatile sig_atomic_t *stop);

/* loop_wait_net sleeps until n's sockets may have input, one of extra
 * (at most 8) is ready, or timeout_ns passes (a standby's wait:
 * standby.c). 0, or -1 when the poll failed. */
struct pollfd;
struct net;
int loop_wait_net(struct net *n, struct pollfd *extra, unsigned nextra, uint64_t timeout_ns);

#endif /* SLUICE_LOOP_H */
