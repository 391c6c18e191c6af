/*
 * conn.h - consumer connections: who may receive deliveries, and how many.
 *
 * A conn is created by HELLO or CREDIT from a ZeroMQ routing id and lives
 * until the broker finds the peer gone (a PING or DELIVER cannot be routed,
 * or the descriptor it came in on is another socket now) or it leaves.
 * It holds the consumer's pool, subscribed levels and remaining credit, and
 * the list of its leases (owned by lease.c, linked through the lease).
 *
 * A conn is one connection, not one routing id: it records the endpoint
 * (sock), the descriptor its messages come in on and that socket's inode,
 * and the CURVE key of its principal. The table is indexed by endpoint and
 * routing id; path/member.c decides, per message, whether a conn found by
 * its routing id is still the same connection (a peer may choose its own
 * routing id, and libzmq gives a routing id to the next connection once the
 * old one is gone).
 */
#ifndef SLUICE_CONN_H
#define SLUICE_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define CONN_MAX_RID 255

struct lease;
struct pool;

typedef struct conn {
    uint8_t rid[CONN_MAX_RID];
    uint8_t rid_len;
    uint8_t sock;          /* the endpoint its messages come in on (net_sock) */
    int fd;                /* the descriptor they come in on (ZMQ_SRCFD); -1: not known yet */
    uint64_t fd_ino;       /* that socket's inode when it was noted; 0: not known */
    uint32_t allowed_mask; /* the levels its principal may consume (all without auth or levels=) */
    char principal[PROTO_MAX_NAME + 1]; /* its principal's name (auth on), else "" */
    struct pool *pool;     /* its pool (counted in pool->members), or NULL */
    uint32_t levels_mask;  /* the levels it asked for; it is served those its pool serves */
    uint64_t credit;       /* deliveries it may still receive */
    uint32_t nleases;      /* deliveries outstanding */
    uint64_t last_rx_ns;   /* monotonic, when it last sent anything (settle_expire_leases) */
    int consumer;          /* has granted credit at least once */
    uint64_t last_sent_ns; /* when it was last sent a delivery (member.c's pacing shares) */
    uint32_t sent_recent;  /* deliveries sent since member.c last looked */
    uint32_t pace_part_milli; /* its part of the recent deliveries, x 1000, smoothed */
    uint64_t pace_rate_milli; /* its share of the sink's rate, as last announced (0: unpaced) */
    uint32_t pace_burst;   /* ... and of its burst */
    char user_id[41];      /* its principal's CURVE key (Z85) when auth is on, else "" */
    struct lease *leases;  /* list of outstanding leases */
    struct conn *hnext;    /* hash chain */
    size_t slot;           /* index in conn_table.all */
} conn;

typedef struct conn_table {
    conn **buckets;
    size_t nbuckets;
    conn **all;            /* dense array, for round-robin iteration */
    size_t len, cap;
    size_t rr;             /* round-robin start */
} conn_table;

/* conn_table_init makes an empty table: SL_OK or SL_ENOMEM. conn_table_fini
 * frees every conn (and accepts what a failed init left). */
int conn_table_init(conn_table *t);
void conn_table_fini(conn_table *t);

/* conn_find returns the conn for a routing id on endpoint sock, or NULL. */
conn *conn_find(conn_table *t, unsigned sock, const void *rid, size_t rid_len);

/* conn_require finds or creates the conn (no pool, all levels of all_mask
 * asked for and allowed, no credit, descriptor unknown). Returns NULL when
 * out of memory or rid_len is 0 or over CONN_MAX_RID. */
conn *conn_require(conn_table *t, unsigned sock, const void *rid, size_t rid_len, uint32_t all_mask);

/* conn_remove unlinks and frees c. Its leases must have been released. */
void conn_remove(conn_table *t, conn *c);

#endif /* SLUICE_CONN_H */
