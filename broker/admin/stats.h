/*
 * stats.h - the STATS reply.
 */
#ifndef SLUICE_STATS_H
#define SLUICE_STATS_H

#include "proto.h"

struct bk;

/* stats_fill fills r, a STATS_OK made by proto_init, from b's counters.
 * Strings in r point into b and live until b changes. */
void stats_fill(struct bk *b, proto_msg *r);

#endif /* SLUICE_STATS_H */
