/*
 * publish.h - handing the broker's figures to the threads that serve them
 * (publish.c).
 */
#ifndef SLUICE_PUBLISH_H
#define SLUICE_PUBLISH_H

#include "bk.h"

/* publish_figures copies b's figures into a snapshot and makes it the one
 * the /metrics thread serves. Does nothing when b serves no metrics. The
 * loop's thread only. */
void publish_figures(bk *b);

#endif /* SLUICE_PUBLISH_H */
