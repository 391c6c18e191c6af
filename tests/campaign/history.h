/*
 * history.h - a record of what a reliability campaign did to a broker, and
 * the classifier that judges it against the durability promise.
 *
 * Producers ask history_attempt for a message number and a body unique to it,
 * publish the body, and report what the broker said (history_confirm with
 * the id, or history_reject for a definite refusal); anything else leaves the
 * message "attempted, unconfirmed", its fate unknown. Consumers report every
 * delivery (history_deliver) and every acknowledgement the broker accepted
 * (history_ack). history_classify then sorts every message:
 *
 *   ok          confirmed and delivered, with the body that was published
 *   lost        confirmed and never delivered                 (must be 0)
 *   duplicated  delivered more than once (at-least-once allows it; reported)
 *   unexpected  a delivery of nothing ever attempted, or of a publish the
 *               broker refused                                (must be 0)
 *   corrupt     delivered with a body other than the one published, or under
 *               an id other than the one confirmed            (must be 0)
 *
 * Who confirmed: a confirmation from a high-availability group's primary
 * names its node and epoch (history_confirm_by); the report counts the
 * confirmations per (epoch, node) and the epochs in which more than one
 * node confirmed (split epochs, must be 0: a second node confirming in an
 * epoch is two primaries at once).
 *
 * Bodies are a function of (tag, message number): "H<tag>:<number>:" and
 * filler, so any delivery names the message it claims to be and can be
 * checked byte for byte without storing the bodies. The tag tells one run
 * (or trial) from another.
 *
 * Threading: every function may be called from any thread; one mutex guards
 * the record. Memory is allocated once, by history_new: max_msgs message
 * slots, a small table of deliveries that name no message, and a scratch
 * body. Nothing here reads the clock.
 */
#ifndef SLUICE_TEST_HISTORY_H
#define SLUICE_TEST_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HISTORY_HEADER_BYTES 21 /* "H" 8 hex ":" 10 digits ":" */
#define HISTORY_EXAMPLES     4  /* message numbers kept per bad class */
#define HISTORY_CONFIRMERS   16 /* (epoch, node) pairs kept; more are counted in overflow */
#define HISTORY_NODE_BYTES   65

typedef struct history history;

typedef struct history_cfg {
    uint64_t max_msgs;   /* message slots, preallocated */
    uint32_t tag;        /* tells this run's bodies from any other's */
    size_t body_min;     /* body length range, bytes; at least HISTORY_HEADER_BYTES */
    size_t body_max;
    unsigned big_every;  /* about one message in big_every gets big_bytes (0: none) */
    size_t big_bytes;
} history_cfg;

/* The class of one attempted message (history_class_of). */
typedef enum history_class {
    HISTORY_UNCONFIRMED,  /* attempted, no answer, never delivered: fate unknown */
    HISTORY_REJECTED,     /* the broker refused it and it never showed up */
    HISTORY_OK,           /* delivered once, correct; confirmed or not */
    HISTORY_DUPLICATED,   /* delivered more than once, correct */
    HISTORY_LOST,         /* confirmed, never delivered */
    HISTORY_UNEXPECTED,   /* refused by the broker, delivered all the same */
    HISTORY_CORRUPT,      /* a delivery under its name had another body or id */
} history_class;

typedef struct history_report {
    uint64_t attempted, confirmed, rejected;
    uint64_t deliveries;              /* delivery events */
    uint64_t delivered;               /* attempted messages delivered at least once */
    uint64_t unconfirmed_delivered;   /* of those, never confirmed (allowed) */
    uint64_t acked;                   /* acknowledgements the broker accepted */
    uint64_t ok, lost, duplicated, unexpected, corrupt;
    uint64_t lost_ex[HISTORY_EXAMPLES], corrupt_ex[HISTORY_EXAMPLES];
    uint64_t unexpected_id_ex[HISTORY_EXAMPLES]; /* ids of unexpected deliveries */
    int full;                         /* history_attempt ran out of slots */
    struct {
        uint64_t epoch, confirmed;
        char node[HISTORY_NODE_BYTES];
    } by[HISTORY_CONFIRMERS];         /* who confirmed: per (epoch, node), in the order first seen */
    unsigned nby;
    uint64_t by_overflow;             /* confirmations of pairs beyond the table */
    uint64_t split_epochs;            /* epochs confirmed by more than one node (must be 0) */
} history_report;

/* history_new allocates a history for cfg. Returns 0, or -1 (bad cfg, no
 * memory). */
int history_new(const history_cfg *cfg, history **out);

/* history_destroy frees *h and sets it to NULL; accepts NULL. */
void history_destroy(history **h);

/* history_body writes message msg's body into buf (cap bytes) and returns its
 * length, or 0 when cap is too small. Pure: the same for every call. */
size_t history_body(const history *h, uint64_t msg, char *buf, size_t cap);

/* history_max_body returns the longest body history_body can write. */
size_t history_max_body(const history *h);

/* history_attempt takes the next message number into *msg and writes its
 * body into buf (cap bytes; *len its length). Call it before publishing.
 * Returns 0, or -1 when the slots are used up or buf is too small. */
int history_attempt(history *h, uint64_t *msg, char *buf, size_t cap, size_t *len);

/* history_confirm records that the broker confirmed message msg as id. */
void history_confirm(history *h, uint64_t msg, uint64_t id);

/* history_confirm_by records a confirmation as history_confirm does, and
 * who gave it: node, the primary of a high-availability group, in epoch
 * (as the confirmation said; epoch 0: not said, nothing more is kept). */
void history_confirm_by(history *h, uint64_t msg, uint64_t id, uint64_t epoch, const char *node);

/* history_reject records that the broker refused message msg with err (it
 * says the message was not stored). */
void history_reject(history *h, uint64_t msg, int err);

/* history_deliver records one delivery as the consumer saw it. body need not
 * be one of ours: a stranger is kept (up to a fixed number) for the
 * classifier. */
void history_deliver(history *h, uint64_t id, const void *body, size_t len, unsigned attempt);

/* history_ack records that the broker accepted the acknowledgement of id. */
void history_ack(history *h, uint64_t id);

/* history_backlog returns attempted messages not yet delivered, a cheap gauge
 * producers use to stay a bounded distance ahead of consumers. */
uint64_t history_backlog(history *h);

/* history_class_of classifies attempted message msg (msg < attempted). */
history_class history_class_of(history *h, uint64_t msg);

/* history_classify classifies every message into *r. */
void history_classify(history *h, history_report *r);

/* history_bad returns the failures in r that the promise forbids: lost +
 * unexpected + corrupt + split epochs. */
uint64_t history_bad(const history_report *r);

/* history_print writes r in one or two lines, each starting with prefix. */
void history_print(const history_report *r, const char *prefix, FILE *f);

#endif /* SLUICE_TEST_HISTORY_H */
