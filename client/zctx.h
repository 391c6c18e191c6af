/*
 * zctx.h - the process's ZeroMQ context, shared by its clients (zctx.c).
 */
#ifndef SLUICE_ZCTX_H
#define SLUICE_ZCTX_H

#include <stdint.h>

/* zctx_take returns the process's context, made if need be, and a number
 * unique within it for the caller's monitor endpoint; NULL when it cannot
 * be made. Every context taken is given back with zctx_give. */
void *zctx_take(uint64_t *monitor);

/* zctx_give ends a client's use of ctx; the last user terminates it. */
void zctx_give(void *ctx);

#endif
