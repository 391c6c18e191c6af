/*
 * ha_copy.h - the copy of a primary's store sent to a standby that cannot
 * resume the stream (ha_copy.c).
 */
#ifndef SLUICE_HA_COPY_H
#define SLUICE_HA_COPY_H

#include "bk.h"

struct ha_prim;

/* ha_copy_tick makes the copy the stream asks for (ha_prim_copy_wanted)
 * once alone (Redis records no standby in sync), and hands its file to the
 * stream once made. Called by ha_node_tick every pass. */
void ha_copy_tick(bk *b, struct ha_prim *prim, int alone);

#endif /* SLUICE_HA_COPY_H */
