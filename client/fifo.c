/*
 * fifo.c - a growable ring of fixed-size items.
 *
 * Items live in one array of cap slots; the oldest is at head and the others
 * follow it, wrapping at the end. A full ring doubles (starting at 16 slots)
 * and is unwrapped as it is copied, so head returns to 0. It never shrinks:
 * its size follows the peak of what was queued.
 *
 * Removing the oldest item only moves head. Removing any other shifts the
 * items after it down one slot, which keeps the order and costs nothing for
 * the newest.
 */
#include "fifo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice_errors.h"

#define FIFO_FIRST_CAP 16

void fifo_init(fifo *f, size_t item_bytes)
{
    *f = (fifo){.item_bytes = item_bytes};
}

void fifo_fini(fifo *f)
{
    free(f->items);
    f->items = NULL;
    f->head = f->count = f->cap = 0;
}

void *fifo_at(const fifo *f, size_t i)
{
    return f->items + ((f->head + i) % f->cap) * f->item_bytes;
}

int fifo_push(fifo *f, const void *item)
{
    if (f->count == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : FIFO_FIRST_CAP;
        if (cap > SIZE_MAX / f->item_bytes)
            return SL_ENOMEM;
        unsigned char *p = malloc(cap * f->item_bytes);
        if (!p)
            return SL_ENOMEM;
        for (size_t i = 0; i < f->count; i++)
            memcpy(p + i * f->item_bytes, fifo_at(f, i), f->item_bytes);
        free(f->items);
        f->items = p;
        f->head = 0;
        f->cap = cap;
    }
    f->count++;
    memcpy(fifo_at(f, f->count - 1), item, f->item_bytes);
    return SL_OK;
}

void fifo_remove(fifo *f, size_t i, void *out)
{
    if (out)
        memcpy(out, fifo_at(f, i), f->item_bytes);
    if (i == 0) {
        f->head = (f->head + 1) % f->cap;
    } else {
        for (; i + 1 < f->count; i++)
            memcpy(fifo_at(f, i), fifo_at(f, i + 1), f->item_bytes);
    }
    f->count--;
}
