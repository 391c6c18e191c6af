/*
 * gather.h - how long a write-ahead log record waits for the rest of its
 * batch (gather.c). Pure: every call takes now.
 */
#ifndef SLUICE_GATHER_H
#define SLUICE_GATHER_H

#include <stddef.h>
#include <stdint.h>

#define GATHER_MAX_NS    250000u /* the longest a record waits for the clients the last one confirmed */
#define GATHER_PAUSE_MIN 2       /* records without gathering after a wait ran out, */
#define GATHER_PAUSE_MAX 64      /* doubling while waits keep running out */

/* Zeroed, a gather is idle; gather_init sets its first pause. */
typedef struct gather {
    size_t want;       /* publishes the next record waits for */
    uint64_t until_ns; /* when it stops waiting; 0: not waiting */
    unsigned paused;   /* records left before gathering is tried again */
    unsigned pause;    /* the next run-out's pause */
    int full;          /* the last gather ended full: every client it waited for came */
} gather;

void gather_init(gather *g);

/* gather_record_ended is told, when a log record has ended and its replies
 * are sent, how many publishes it confirmed (confirmed) and how many
 * already wait for the next one (waiting). The next record then waits for
 * waiting + confirmed, until now + GATHER_MAX_NS, unless gathering is
 * paused (one record less of the pause) or the record confirmed nothing. */
void gather_record_ended(gather *g, uint64_t now, size_t confirmed, size_t waiting);

/* gather_holds tells whether a record with waiting publishes ready should
 * wait for more of its batch. With none waiting it holds nothing (there is
 * nothing to write) and goes on waiting for the batch. A gather that is
 * full or has run out ends; one that ran out with part of its batch pauses
 * gathering for the next records. */
int gather_holds(gather *g, uint64_t now, size_t waiting);

/* gather_deadline returns when the gather stops waiting, 0 when it is not. */
uint64_t gather_deadline(const gather *g);

/* gather_stop ends a gather (a record starts anyway: what is there goes). */
void gather_stop(gather *g);

/* gather_full tells whether the gather that ended last ended full: every
 * client the last record confirmed is back, so nothing more is expected
 * while the next record flushes (until the next record ends). */
int gather_full(const gather *g);

#endif
