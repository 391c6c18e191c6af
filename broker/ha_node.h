/*
 * ha_node.h - a primary of a high-availability group, inside the broker
 * (ha_node.c): its lease, its stream, and what it may confirm and dispatch.
 */
#ifndef SLUICE_HA_NODE_H
#define SLUICE_HA_NODE_H

#include <poll.h>
#include <stdint.h>

#include "bk.h"

/* What loop_run returns when this node was deposed: main starts it again,
 * as a standby (not an sl_err: it never reaches a client). */
#define SL_EDEPOSED 1000

struct ha_lease;

/* ha_node_start makes the open broker b the primary of epoch (already
 * persisted, as Redis granted it through lease, which b now owns): its
 * store turns every batch into a record, and its stream is served on
 * --repl-listen. promotions is the times this node went from standby to
 * primary (its metrics). SL_OK or an error (logged; lease is destroyed). */
int ha_node_start(bk *b, struct ha_lease *hl, uint64_t epoch, uint64_t promotions);

/* ha_node_stop closes the stream and the lease (b->ha NULL after). */
void ha_node_stop(bk *b);

/* ha_node_tick renews the lease, reads the standby's acks, and records a
 * change of sync in Redis; sets deposed when Redis names another primary.
 * Returns when it next has work (cron). */
uint64_t ha_node_tick(bk *b);

/* ha_node_shipped sends the record of the commit just started (if any) to
 * the standby, and notes it as the one whose confirmations wait. */
void ha_node_shipped(bk *b);

/* ha_node_confirmable tells whether the batch whose commit ended locally
 * may be confirmed now: the lease is valid here (not fenced), and its
 * record is durable on the in-sync standby, or Redis records that no
 * standby is in sync (and --repl-strict is off). 1 also when no record waits. */
int ha_node_confirmable(bk *b);

/* ha_node_forget drops the waiting record (its commit failed: nothing of
 * it is confirmed). */
void ha_node_forget(bk *b);

/* ha_node_may_dispatch tells whether deliveries may go out: the lease is
 * valid here. */
int ha_node_may_dispatch(const bk *b);

/* ha_node_epoch returns the epoch this primary serves in (0: not a node
 * of a group); it does not change while the broker runs. */
uint64_t ha_node_epoch(const bk *b);

/* ha_node_deposed tells whether Redis named another primary (or lost its
 * data): the broker must stop serving at once. */
int ha_node_deposed(const bk *b);

/* ha_node_figures fills s's high-availability figures (publish.c). */
struct snap;
void ha_node_figures(const bk *b, struct snap *s);

/* ha_node_pollfds adds the stream's and Redis's descriptors to pfd (at most
 * 2), returning how many; *ready when the stream already holds input. */
int ha_node_pollfds(bk *b, struct pollfd *pfd, int *ready);

/* ha_node_wait_ns tells how long the loop may sleep while confirmations
 * wait for the standby (0: none wait). */
int ha_node_waiting(const bk *b);

#endif /* SLUICE_HA_NODE_H */
