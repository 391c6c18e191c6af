/*
 * client.h - the state of one sl_client, shared by the library's files.
 *
 * sluice.h keeps the struct opaque; this header is not installed. wire.c owns
 * the connection and what the pump fills in, from wire_open to wire_close.
 * sluice.c owns the level cache and the subscription, and takes items off the
 * queues; admin.c only sends requests and reads their replies. client.c keeps
 * what all of them share: the error record, the request helper and the
 * credit rule. Across those lines, the API files read the reply of their last
 * request, the queue lengths and the pool share, and wire.c reads the
 * subscription, to renew it after a reconnection.
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
    sl_origin origin;  /* a group's primary: its epoch and node */
    char *msg; /* the broker's text when confirm.err != SL_OK; else NULL */
} client_confirm;

struct sl_client {
    /* The connection (wire.c). */
    void *ctx, *sock, *mon;
    int timeout_ms;
    zmq_msg_t frame; /* the frame last received */
    proto_wbuf out;  /* encode buffer */
    uint64_t next_seq;
    bool runs_asked;    /* this connection has sent its HELLO asking for PUT_OKs in runs (wire_publish) */
    uint64_t handshakes;
    bool connected;     /* the last monitor event was a handshake, not a disconnect */
    int auth_refused;   /* the broker refused our handshake: SL_EPERM until one succeeds */
    int64_t refused_since_ns; /* before any handshake, a connection was refused (nothing listens): when first */
    bool reached;             /* a connection was ever made (something listens), whatever its handshake did */
    unsigned early_closes;    /* connections closed by the peer before any handshake succeeded */
    int64_t mon_looked_ns; /* when the monitor was last drained (wire.c, monitor_look) */

    /* The stream transport instead (cstream.c): a stream+tcp:// or
     * stream+ipc:// endpoint; no ZeroMQ socket, no monitor. */
    bool over_stream;
    bool stream_lost;          /* the connection closed or broke; wire.c ends what waited on it */
    bool stream_unsent;        /* ... found so by a send before any of its bytes left */
    int sfd;                   /* its socket, or -1 while not connected */
    unsigned char s_addr[128]; /* the broker's address (a struct sockaddr_storage's room) */
    unsigned s_addrlen;
    int s_family;
    unsigned char *sin;        /* what was read and not yet taken */
    size_t sin_off, sin_len, sin_cap;
    int64_t stream_retry_ns;   /* a subscribed client's next attempt to connect again */

    uint64_t await_seq; /* the synchronous request waited for; 0 for none */
    bool have_reply;
    proto_msg reply;    /* its reply; strings point into frame */

    /* The queues (wire.c fills them, sluice.c empties the last two). */
    fifo puts;       /* async publishes the broker has not answered */
    fifo confirms;   /* client_confirm: answered, not yet returned */
    fifo deliveries; /* sl_delivery *: received, not yet returned */
    fifo settles;    /* uint64_t seq of each settlement the broker has not answered */
    uint64_t refused;        /* settlements the broker refused, since sl_connect */
    bool refused_unreported; /* one was refused since the last call that reported it */
    int refused_code;        /* the first refusal not yet reported, and its text */
    char refused_msg[PROTO_MAX_STR + 64];

    unsigned share;  /* from the latest POOL message; 0 until one came */
    uint64_t pace_rate_milli; /* its share of the sink (POOL rate_milli); 0: unpaced */
    uint32_t pace_burst;      /* ... and of the sink's burst */
    int pace_told;            /* a POOL message carried a pacing share */
    uint32_t pace_pacers;     /* consumers the broker says pace the same sink (POOL pacers; 0: not told) */

    /* The headers of the last sl_explain_ex or sl_dead_peek_ex, NUL-terminated
     * copies (admin.c, dead.c: client_hdrs_view). */
    sl_header hdr_view[SL_MAX_HEADERS];
    char hdr_text[PROTO_MAX_HEADER_BYTES + 2 * PROTO_MAX_HEADERS];

    /* Everything below is sluice.c's. */
    uint64_t last_ticket;

    bool have_levels; /* from a WELCOME */
    unsigned nlevels;
    char level_names[SL_MAX_LEVELS][PROTO_MAX_NAME + 1];
    const char *level_ptrs[SL_MAX_LEVELS];
    uint64_t max_body_bytes;

    /* The subscription, kept to renew it after a reconnection. Credit
     * granted on this connection and not yet given back by an ACK, NACK or
     * THROTTLED is outstanding: the broker holds it or has spent it on a
     * delivery that is queued, held by the application, or on its way.
     * client_credit_due keeps outstanding at the window. */
    bool subscribed;
    bool has_pool;
    char pool[PROTO_MAX_NAME + 1];
    proto_u64s levels;
    unsigned window;      /* credit window */
    uint64_t outstanding; /* credit granted and not yet settled */
    size_t unsettled;     /* deliveries handed out and not yet settled */
    uint64_t limit;       /* most deliveries to ask for in all; 0 = no limit */
    uint64_t granted;     /* credit that counts toward the limit */
    uint64_t received;    /* deliveries handed out so far */

    int last_code;
    char last_msg[PROTO_MAX_STR + 1];

    /* One broker at alternative addresses, "a|b" (failover.c). */
    char *alts[8];
    unsigned nalts;
    char cur_ep[PROTO_MAX_STR + 1];  /* the address connected to */
    char move_to[PROTO_MAX_STR + 1]; /* the next one, when move_due */
    bool move_due, resend_due;
    uint64_t move_seq;               /* requests from this seq on went to the new address */
    int64_t move_at_ns, moved_ns;
    void *await_frame;               /* the awaited request's frame, to send again after a move */
    size_t await_frame_len;
    const char *await_once;          /* the awaited command's name when it must not run twice, or NULL */
    bool await_redirected;           /* a standby answered it: it ran nowhere, so it may be sent again */
    bool await_reached;              /* a connection stood while it was out: it may have reached a node */
};

/* client_err_clear empties c's error record. */
void client_err_clear(sl_client *c);

/* client_begin is how every fallible API call starts: 0 when c is NULL
 * (the call returns SL_EINVAL, with no error record to fill), else it
 * empties c's error record and returns 1. */
static inline int client_begin(sl_client *c)
{
    if (!c)
        return 0;
    client_err_clear(c);
    return 1;
}

/* client_fail_text records code with text[0..len) (truncated to fit; text
 * may be NULL when len is 0) and returns code. */
int client_fail_text(sl_client *c, int code, const char *text, size_t len);

/* client_fail records code with its generic message and returns code;
 * when the same code was recorded with a text during this call (by wire.c),
 * that text stays. */
int client_fail(sl_client *c, int code);

/* client_request sends m and waits for the reply to it. On SL_OK c->reply
 * holds a reply of type want, valid until the next receive. An ERROR reply
 * returns its code and keeps its text for sl_last_error; any other failure
 * (SL_ETIMEDOUT, SL_ECONNECT, SL_EPROTO for a reply of another type, ...) is
 * recorded with its generic message. */
int client_request(sl_client *c, proto_msg *m, proto_type want);

/* client_credit_due returns the credit c should grant now: enough to bring
 * its outstanding credit up to the window, but never past the limit. The
 * caller that sends it adds it to granted and outstanding. */
uint64_t client_credit_due(const sl_client *c);

/* client_page_ask asks for one page of rows (PROTO_MAX_ARRAY at most: a
 * ROWS field) going on after `after` (0: from the start), at most max of
 * them (0: a whole page). */
void client_page_ask(proto_msg *m, uint64_t after, unsigned max);

/* client_page_fits tells whether a reply's n rows fit the room such a page
 * left (more is a broker's error: SL_EPROTO). */
int client_page_fits(unsigned n, unsigned max);

/* client_hdrs_view copies h into c's header view (NUL-terminated names and
 * values) and points *out at it (NULL when h has none), valid until the
 * next such call on c. */
void client_hdrs_view(sl_client *c, const proto_hdrs *h, const sl_header **out, size_t *n);

/* client_more_fill fills what fits of *more (its size set, at least its
 * first member's) from reply r: its headers (client_hdrs_view) and wait. */
void client_more_fill(sl_client *c, const proto_msg *r, sl_msg_more *more);

/* client_hdrs_build points h at headers[0..n) (at most PROTO_MAX_HEADERS,
 * each name and value measured up to one byte past its limit); the rules
 * are the encoder's to check. Returns SL_OK, or SL_ETOOBIG (more than 32)
 * or SL_EINVAL (headers NULL with n > 0, a NULL name or value), recorded
 * on c with a sentence. */
int client_hdrs_build(sl_client *c, const sl_header *headers, size_t n, proto_hdrs *h);

/* client_hdrs_why records on c, after proto_encode refused a message with
 * rc, which of h's rules broke (proto_hdrs_explain) and returns its code;
 * rc when h breaks none (another field was refused). */
int client_hdrs_why(sl_client *c, const proto_hdrs *h, int rc);

/* client_str_copy copies s into dst (size bytes, > 0), truncating it to
 * size - 1 bytes, and NUL-terminates it. */
void client_str_copy(char *dst, size_t size, proto_buf s);

/* admin_init makes m an ADMIN request for cmd, with no arguments yet
 * (admin.c). */
void admin_init(proto_msg *m, proto_cmd cmd);

/* admin_call checks m against the command list, sends it and waits for its
 * ADMIN_OK (in c->reply), which must carry the command's results. Returns
 * SL_OK or the error, recorded on c (admin.c). */
int admin_call(sl_client *c, proto_msg *m);
/* client_coord_copy fills out from a reply's coord row (zero when none). */
void client_coord_copy(sl_coord_info *out, const proto_msg *r);

#endif /* SLUICE_CLIENT_H */
