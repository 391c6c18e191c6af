/*
 * net_int.h - what net.c (the sockets, receiving) and replies.c (the queues
 * replies wait in, sending) share: the net object itself. Nothing outside
 * broker/net includes it.
 */
#ifndef SLUICE_NET_INT_H
#define SLUICE_NET_INT_H

#include <zmq.h>

#include "net.h"
#include "stream.h"
#include "zap.h"

/* One queued message. A PUT_OK to a connection that asked for runs keeps
 * run_n >= 1: the PUTs it confirms (seq .. seq + run_n - 1, stored as ids
 * run_id ..), so that the next confirmation to that connection may grow
 * it instead of following it (replies.c). */
typedef struct out_rec {
    size_t off;        /* rid bytes, then body bytes */
    size_t rid_len, body_len;
    net_sock sock;
    uint64_t token;
    uint64_t seq;
    int has_seq;
    int fd;            /* net_queue_guarded: sent only while fd is the socket of inode ino */
    uint64_t ino;      /* 0: no check */
    uint32_t run_n;    /* a PUT_OK that may grow into a run: how many PUTs it confirms; 0 otherwise */
    uint64_t run_id;   /* ... the first one's id */
    uint64_t run_epoch; /* ... and the epoch it confirms them under (0 without high availability) */
} out_rec;

typedef struct outq {
    proto_wbuf arena;
    out_rec *recs;
    size_t nrecs, caprecs;
    uint64_t gen;      /* changes whenever its records move or go (replies.c: runs held open) */
} outq;

/* A descriptor's connection that asked for runs (HELLO with runs): the
 * endpoint and routing id it asked with. A descriptor reused by another
 * connection brings another routing id, which does not match. */
#define NET_RUN_RID 32
typedef struct run_peer {
    uint8_t asked;     /* 0: nothing recorded */
    uint8_t sock;
    uint8_t rid_len;
    uint8_t rid[NET_RUN_RID];
    uint64_t gen;      /* its open run: record rec of the queue whose gen this is */
    size_t rec;
} run_peer;

struct net {
    void *ctx, *sock[NET_SOCKETS]; /* NET_MAIN, and NET_ADMIN and NET_HTTP or NULL */
    char bridge_uid[64];           /* the last bridge message's User-Id frame, NUL-terminated */
    int next_sock;     /* which socket net_recv tries first */
    zap *zap;          /* the ZAP handler when CURVE is on */
    stream *stream;    /* the stream endpoint, or NULL */
    uint8_t stream_rid[8]; /* the last stream message's routing id: its connection id, big-endian */
    zmq_msg_t rid, body;
    int have_msgs;
    outq q[NET_WHENS]; /* NET_NOW, NET_AFTER_COMMIT, NET_AFTER_NEXT_COMMIT */
    int sealed;        /* NET_AFTER_COMMIT is the commit out's: newer replies wait for the next */
    uint64_t gen_next; /* the last outq gen given */
    run_peer *runs;    /* by descriptor: who asked for runs (replies.c) */
    size_t runs_cap;
};

/* net_replies_free frees the queues and the runs table (net_close). */
void net_replies_free(net *n);

#endif /* SLUICE_NET_INT_H */
