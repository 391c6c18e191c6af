/*
 * coord.h - capacity leases for a sink shared by several brokers, held in
 * Redis (coord.c; the script is coord.lua, the split share.c).
 */
#ifndef SLUICE_COORD_H
#define SLUICE_COORD_H

#include <stddef.h>
#include <stdint.h>

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

/* What coord_show reports. */
typedef struct coord_view {
    const char *state;           /* leased, learning, connecting, unreachable, auth failed, script error */
    int reachable;               /* the last request was answered */
    uint32_t slices_held;        /* valid now */
    uint64_t granted_milli;      /* slices_held x slice rate */
    uint64_t lease_left_ms;      /* until the grant expires locally; 0: none */
    uint64_t epoch;              /* the Redis hash's epoch (server ms when it was created) */
    uint64_t limit_milli;        /* the sink's limit, as Redis holds it */
    uint64_t sum_reserved_milli; /* the reserved rates of every broker Redis knows */
    uint32_t brokers;            /* live brokers sharing the sink */
    uint64_t ops;                /* Redis commands sent */
} coord_view;

/* coord_new parses cfg->url and sets up; the connection is made by
 * coord_tick, never blocking. SL_OK, SL_EINVAL (a bad URL, said in err),
 * SL_ENOMEM. */
int coord_new(const coord_cfg *cfg, coord **out, char *err, size_t errlen);

/* coord_destroy closes the connection (slices are returned by their TTL);
 * accepts NULL and NULLs *c. */
void coord_destroy(coord **c);

/* coord_tick does what is due at now_ns without blocking: connect, send,
 * read replies, renew every TTL/3 asking for want slices, drop a grant whose
 * local validity ended, give up on a silent Redis and retry with backoff.
 * Returns when it next has work (COORD_NEVER: none). */
uint64_t coord_tick(coord *c, uint64_t now_ns, uint32_t want);

/* coord_granted_milli returns the rate this broker may add to its reserved
 * one at now_ns (0 when no grant is valid). */
uint64_t coord_granted_milli(const coord *c, uint64_t now_ns);

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

/* coord_show fills v at now_ns. */
void coord_show(const coord *c, uint64_t now_ns, coord_view *v);

#endif /* SLUICE_COORD_H */
