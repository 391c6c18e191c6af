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

/* loop_run serves until *stop becomes non-zero, then refuses what is still
 * queued with SL_ESHUTDOWN. Returns SL_OK, or SL_EIO after a failed commit
 * (every reply of that pass was turned into an error first). */
int loop_run(bk *b, volatile sig_atomic_t *stop);

/* loop_hup is set by the SIGHUP handler; the loop clears it between two
 * passes and re-reads the auth file (auth_reload). */
extern volatile sig_atomic_t loop_hup;

#endif /* SLUICE_LOOP_H */
