/*
 * coord.h - capacity leases for a sink shared by several brokers, held in
 * Redis (coord.c; the script is coord.lua, the split share.c).
 */
#ifndef SLUICE_COORD_H
#define SLUICE_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define COORD_NEVER UINT64_MAX

typedef struct coord coord;

/* What coord_new needs; strings are copied. */
typedef struct coord_cfg {
    const char *url;             /* redis://HOST:PORT[/DB] or unix:///PATH[?db=N] */
    const char *sink;            /* the sink's name: brokers naming the same one share it */
    const char *broker;          /* this broker's name among them (unique, stable across restarts) */
    const char *user;            /* ACL user, or NULL */
    const char *password;        /* or NULL */
    uint64_t reserved_milli;     /* this broker's reserved rate */
    uint64_t limit_milli;        /* the sink's limit, written to Redis when it has none (0: none) */
    uint32_t ttl_ms;             /* a grant's lifetime; renewed every ttl_ms / 3 */
    uint32_t slices;             /* the shared rate is cut into this many slices */
} coord_cfg;


/* coord_new parses cfg->url and sets up; the connection is made by
 * coord_tick, never blocking. SL_OK, SL_EINVAL (a bad URL, said in err),
 * SL_ENOMEM. */
int coord_new(const coord_cfg *cfg, coord **out, char *err, size_t errlen);

/* coord_destroy returns this broker's slices to Redis (waiting at most
 * 200 ms; otherwise their TTL returns them) and closes the connection;
 * accepts NULL and NULLs *c. Call it after the loop has ended. */
void coord_destroy(coord **c);

/* coord_tick does what is due at now_ns without blocking: connect, send,
 * read replies, renew every TTL/3 asking for want slices, drop a grant whose
 * local validity ended, give up on a silent Redis and retry with backoff.
 * Returns when it next has work (COORD_NEVER: none). */
uint64_t coord_tick(coord *c, uint64_t now_ns, uint32_t want);

/* coord_granted_milli returns the rate this broker may add to its reserved
 * one at now_ns (0 when no grant is valid). */
uint64_t coord_granted_milli(const coord *c, uint64_t now_ns);

/* coord_unlimited says whether, at now_ns, the shared sink has no limit: a
 * valid grant, past learning, from a Redis that holds no limit (none was
 * ever set, or it was removed: `sink set --max-rate off`). A broker that
 * knew a limit sends it with every renewal, so one that Redis forgot is
 * set again rather than read as none. */
int coord_unlimited(const coord *c, uint64_t now_ns);

/* coord_slice_milli returns the rate of one slice, as last heard (0: not yet). */
uint64_t coord_slice_milli(const coord *c);

/* coord_slices returns the number of slices the shared rate is cut into. */
uint32_t coord_slices(const coord *c);

/* coord_pollfd returns the socket to wait on and sets *events (POLLIN,
 * POLLOUT), or returns -1 when coord waits for nothing but time. */
int coord_pollfd(const coord *c, short *events);

/* coord_set_limit asks Redis to make limit_milli the sink's limit for every
 * broker. SL_OK when sent; SL_EINVAL (said in err) when it is below the
 * reserved rates Redis last reported; SL_ESTATE when Redis is unreachable. */
int coord_set_limit(coord *c, uint64_t limit_milli, char *err, size_t errlen);

/* coord_row fills the coord row of sink.show and STATS_OK at now_ns: state
 * (leased, learning, connecting, unreachable, auth failed, script error),
 * Redis reachable, slices held now and in all, reserved and granted rates,
 * ms until the grant expires locally, the epoch, the sink's limit and the
 * reserved rates as Redis last reported them, live brokers, commands sent. */
void coord_row(const coord *c, uint64_t now_ns, proto_row_coord *row);

#endif /* SLUICE_COORD_H */
