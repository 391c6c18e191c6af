/*
 * ha_lease.h - leadership of a high-availability group, held in Redis
 * (ha_lease.c; the script is ha.lua).
 */
#ifndef SLUICE_HA_LEASE_H
#define SLUICE_HA_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

typedef struct ha_lease ha_lease;

/* What ha_lease_new needs; strings are copied. */
typedef struct ha_lease_cfg {
    const char *url;        /* redis://HOST:PORT[/DB] or unix:///PATH[?db=N] */
    const char *group;      /* the group: one hash, sluice:ha:{GROUP} */
    const char *node;       /* this node's name */
    const char *user, *password;
    const char *client_ep;  /* where clients reach this node (its --listen) */
    const char *repl_ep;    /* where its standby reaches its stream (its --repl-listen) */
    uint32_t ttl_ms;        /* the primary's lease; renewed every ttl_ms / 3 */
} ha_lease_cfg;

typedef enum ha_role { HA_ROLE_UNKNOWN = 0, HA_ROLE_PRIMARY, HA_ROLE_STANDBY, HA_ROLE_LOST } ha_role;

#define HA_NAME_MAX 1024
#define HA_NODES_MAX 4

/* A node as the group's record knows it. */
typedef struct ha_node_seen {
    char name[PROTO_MAX_NAME + 1], ep[HA_NAME_MAX];
    uint64_t silent_ms;              /* since it last asked Redis */
} ha_node_seen;

/* The last answer heard from Redis. */
typedef struct ha_view {
    ha_role role;
    uint64_t epoch;
    char leader[PROTO_MAX_NAME + 1], leader_ep[HA_NAME_MAX], leader_repl[HA_NAME_MAX];
    char sync[PROTO_MAX_NAME + 1];   /* the standby named in sync, "" none */
    uint64_t lease_left_ms;          /* as Redis said */
    uint64_t valid_until_ns;         /* a primary's lease, locally: the renewal's send time + TTL - TTL/10 */
    uint64_t heard_ns;               /* when this answer came (0: never) */
    uint64_t answers;                /* answers heard in all */
    ha_node_seen nodes[HA_NODES_MAX];
    unsigned nnodes;
    int handover;                    /* ha_lease_handover: 0 none or pending, 1 done, -1 refused */
} ha_view;

/* ha_lease_new parses the URL and sets up; nothing is connected until
 * ha_lease_tick. SL_OK, SL_EINVAL (said in err), SL_ENOMEM. */
int ha_lease_new(const ha_lease_cfg *cfg, ha_lease **out, char *err, size_t errlen);

/* ha_lease_destroy closes; accepts NULL, NULLs *l. */
void ha_lease_destroy(ha_lease **l);

/* ha_lease_tick renews (a primary) or asks (a standby) every TTL/3, or at
 * once after ha_lease_poke; known_epoch is the highest epoch this node has
 * persisted; want_sync: NULL keeps the record's sync, "" sets none, else the
 * standby's name; lag the standby's lag in records (for status). Never
 * blocks. Returns when it next has work. */
uint64_t ha_lease_tick(ha_lease *l, uint64_t now_ns, uint64_t known_epoch, const char *want_sync, uint64_t lag);

/* ha_lease_poke makes the next tick ask at once (a change to report). */
void ha_lease_poke(ha_lease *l);

/* ha_lease_ask_at makes the next ask no later than at_ns (a standby in
 * sync asks right when the primary's lease ends, not up to TTL/3 later). */
void ha_lease_ask_at(ha_lease *l, uint64_t at_ns);

/* ha_lease_view returns the last answer. */
const ha_view *ha_lease_view(const ha_lease *l);

/* ha_lease_pollfd returns Redis's socket to wait on and *events, or -1. */
int ha_lease_pollfd(const ha_lease *l, short *events);

/* ha_lease_release ends this node's lease at once, if it is the leader, so
 * that its in-sync standby promotes without waiting for the TTL; waits at
 * most wait_ms for Redis (blocking: after the loop, or for a switchover). */
void ha_lease_release(ha_lease *l, int wait_ms);

/* ha_lease_handover asks Redis to make the standby in sync the leader at
 * the next epoch (a switchover; never blocks): ha_view.handover says how it
 * went. -1 when it could not be sent. */
int ha_lease_handover(ha_lease *l);

/* ha_lease_recover writes the group's record again after Redis lost it:
 * node leads at max(known_epoch, Redis's epoch) + 1 (an operator's step:
 * `sluice ha recover`; never blocks). -1 when it could not be sent. */
int ha_lease_recover(ha_lease *l, const char *node, uint64_t known_epoch);

/* ha_lease_handover_clear forgets a handover's outcome. */
void ha_lease_handover_clear(ha_lease *l);

/* ha_lease_reachable tells whether the last request was answered. */
int ha_lease_reachable(const ha_lease *l);

#endif /* SLUICE_HA_LEASE_H */
