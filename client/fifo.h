/*
 * fifo.h - a growable ring of fixed-size items, oldest first.
 *
 * The client keeps its queues in these: publishes awaiting the broker's
 * answer, confirmations and deliveries awaiting the application. Items are
 * copied in and out by value; a queue of pointers stores the pointers and
 * leaves what they point to to its owner.
 */
#ifndef SLUICE_FIFO_H
#define SLUICE_FIFO_H

#include <stddef.h>

/* count is the number of items; read it, never write it. */
typedef struct fifo {
    unsigned char *items;
    size_t item_bytes, head, count, cap;
} fifo;

/* fifo_init makes f an empty queue of items of item_bytes (> 0) each. It
 * allocates nothing. */
void fifo_init(fifo *f, size_t item_bytes);

/* fifo_fini frees f's memory, not what its items may point to, and leaves
 * f empty and usable. */
void fifo_fini(fifo *f);

/* fifo_push copies item in at the back, doubling the ring when it is full.
 * O(1) amortized. Returns SL_OK or SL_ENOMEM (f unchanged). */
int fifo_push(fifo *f, const void *item);

/* fifo_at returns item i (0 is the oldest; i < count), which stays valid
 * until f next changes. */
void *fifo_at(const fifo *f, size_t i);

/* fifo_remove takes out item i (i < count), copying it to out unless out is
 * NULL, and keeps the others in order. O(1) for the oldest, O(count - i)
 * otherwise. */
void fifo_remove(fifo *f, size_t i, void *out);

#endif /* SLUICE_FIFO_H */
