/*
 * client.h - the state of one sl_client, shared by the library's files.
 *
 * sluice.h keeps the struct opaque; this header is not installed. Two files
 * work on it. wire.c owns the connection and the queues it fills, from
 * wire_open to wire_close. sluice.c owns the level cache, the subscription
 * and the error record, and takes items off the queues. Across that line,
 * sluice.c reads the reply of its last request and the queue lengths, and
 * wire.c reads the subscription, to renew it after a reconnection.
 */
#ifndef SLUICE_CLIENT_H
#define SLUICE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "fifo.h"
#include "proto.h"
#include "sluice.h"

/* A confirmation queued for sl_send_wait. */
typedef struct client_confirm {
    sl_confirm confirm;
    char *msg; /* the broker's text when confirm.err != SL_OK; else NULL */
} client_confirm;

struct sl_client {
    /* The connection (wire.c). */
    void *ctx, *sock, *mon;
    int timeout_ms;
    zmq_msg_t frame; /* the frame last received */
    proto_wbuf out;  /* encode buffer */
    uint64_t next_seq;
    uint64_t handshakes;

    uint64_t await_seq; /* the synchronous request waited for; 0 for none */
    bool have_reply;
    proto_msg reply;    /* its reply; strings point into frame */

    /* The queues (wire.c fills them, sluice.c empties the last two). */
    fifo puts;       /* async publishes the broker has not answered */
    fifo confirms;   /* client_confirm: answered, not yet returned */
    fifo deliveries; /* sl_delivery *: received, not yet returned */

    /* Everything below is sluice.c's. */
    uint64_t last_ticket;

    bool have_levels; /* from a WELCOME */
    unsigned nlevels;
    char level_names[SL_MAX_LEVELS][PROTO_MAX_NAME + 1];
    const char *level_ptrs[SL_MAX_LEVELS];
    uint64_t max_body_bytes;

    /* The subscription, kept to renew it after a reconnection. */
    bool subscribed;
    bool has_pool;
    char pool[PROTO_MAX_NAME + 1];
    proto_u64s levels;
    unsigned window;   /* credit window */
    size_t unsettled;  /* deliveries handed out and not yet acked or nacked */
    uint64_t limit;    /* most deliveries to ask for in all; 0 = no limit */
    uint64_t granted;  /* credit granted so far */
    uint64_t received; /* deliveries handed out so far */

    int last_code;
    char last_msg[PROTO_MAX_STR + 1];
};

#endif /* SLUICE_CLIENT_H */
