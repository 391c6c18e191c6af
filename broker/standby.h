/*
 * standby.h - sluiced as the standby of a high-availability group
 * (standby.c).
 */
#ifndef SLUICE_STANDBY_H
#define SLUICE_STANDBY_H

#include <signal.h>
#include <stdint.h>

#include "conf.h"

struct ha_lease;

/* What standby_run returns besides an sl_err: this node was promoted
 * (main starts it again, as the primary). */
#define STANDBY_PROMOTED 1001
#define STANDBY_RELOAD 1002

/* standby_run follows the primary Redis names through hl, its lease (owned by the
 * caller) until *stop, or until this node is promoted. known_epoch is the
 * epoch persisted in the data directory. Writes READY to ready_fd once it
 * answers clients. web (owned by the caller, may be NULL) is its HTTP
 * server, given its figures at every pass. Returns SL_OK (stopped),
 * STANDBY_PROMOTED, or an error. */
struct standby_http;
int standby_run(const conf *cfg, struct ha_lease *hl, uint64_t known_epoch, volatile sig_atomic_t *stop,
                void (*ready)(const conf *cfg), struct standby_http *web);

#endif /* SLUICE_STANDBY_H */
