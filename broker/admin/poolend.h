/*
 * poolend.h - deleting pools, by command and by themselves.
 */
#ifndef SLUICE_POOLEND_H
#define SLUICE_POOLEND_H

#include <stddef.h>

#include "bk.h"

/* poolend_delete removes pool p and its stored settings. With members it
 * is refused (SL_ESTATE, why in text) unless force: then each member is
 * dropped as on BYE (its deliveries return uncharged; its next CREDIT joins
 * the default pool). "default" cannot be deleted (SL_EINVAL). Returns SL_OK,
 * SL_EINVAL, SL_ESTATE, or a store error. */
int poolend_delete(bk *b, pool *p, int force, char *text, size_t text_len);

/* poolend_reap deletes the pools that consumers created by naming them and
 * that have been idle (no members, nothing in flight) and unconfigured (no
 * size, not paused, no autoscale) for --pool-reap-ms. Called by cron. */
void poolend_reap(bk *b);

#endif /* SLUICE_POOLEND_H */
