/*
 * loop_back.h - which publishers of a log record are back: the count a
 * record written on the loop tells its gather (loop_back.c). Pure.
 */
#ifndef SLUICE_LOOP_BACK_H
#define SLUICE_LOOP_BACK_H

#include <stddef.h>
#include <stdint.h>

#define LOOP_BACK_PEERS   64 /* publishers remembered per batch; past this, none is told apart */
#define LOOP_BACK_RID_MAX 16 /* routing ids up to this long (ZeroMQ's own are 5 bytes, the stream's 8) */

typedef struct loop_peer {
    uint8_t sock, len, back; /* back: it has published again since its record ended */
    uint8_t rid[LOOP_BACK_RID_MAX];
} loop_peer;

/* Zeroed, it knows nobody. */
typedef struct loop_back {
    loop_peer batch[LOOP_BACK_PEERS];  /* the open batch's publishers */
    loop_peer sealed[LOOP_BACK_PEERS]; /* the sealed record's */
    size_t nbatch, nsealed;
    int batch_over, sealed_over;       /* more than fit, or a routing id too long: counts only */
    int watching;                      /* the sealed record ended: publishes of its publishers count as back */
    size_t back;                       /* how many of its publishers are back */
} loop_back;

/* loop_back_put notes a publish from peer (sock, rid) into the open batch,
 * and counts it as back when it comes from a publisher of the record that
 * ended (once per publisher). */
void loop_back_put(loop_back *lb, unsigned sock, const uint8_t *rid, size_t rid_len);

/* loop_back_seal makes the open batch the sealed record's. */
void loop_back_seal(loop_back *lb);

/* loop_back_ended starts counting the sealed record's publishers back. */
void loop_back_ended(loop_back *lb);

/* loop_back_waiting returns how many of waiting publishes (those received
 * since the record ended) are from others than its publishers, and stops
 * counting: waiting itself when they cannot be told apart. */
size_t loop_back_waiting(loop_back *lb, size_t waiting);

#endif /* SLUICE_LOOP_BACK_H */
