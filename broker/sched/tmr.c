/*
 * tmr.c - binary min-heap of (at, id).
 *
 * Pure: time is whatever the caller says it is, so tests drive it with
 * hand-picked numbers. Ties on `at` are broken by `id`, which makes the order
 * of equal deadlines deterministic. Push and pop are O(log n); the array
 * doubles when full and never shrinks (its size tracks the peak of leases or
 * returned messages, both bounded by credit).
 */
#include "tmr.h"

#include <stdlib.h>

#include "grow.h"
#include "sluice_errors.h"

static int less(const tmr_entry *a, const tmr_entry *b)
{
    return a->at < b->at || (a->at == b->at && a->id < b->id);
}

void tmr_init(tmr *t)
{
    t->v = NULL;
    t->len = t->cap = 0;
}

void tmr_fini(tmr *t)
{
    free(t->v);
    tmr_init(t);
}

void tmr_clear(tmr *t)
{
    t->len = 0;
}

int tmr_push(tmr *t, uint64_t at, uint64_t id)
{
    tmr_entry *v = grow_array(t->v, &t->cap, t->len + 1, sizeof *v, 64);
    if (!v)
        return SL_ENOMEM;
    t->v = v;
    size_t i = t->len++;
    tmr_entry e = {at, id};
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!less(&e, &t->v[parent]))
            break;
        t->v[i] = t->v[parent];
        i = parent;
    }
    t->v[i] = e;
    return SL_OK;
}

uint64_t tmr_next(const tmr *t)
{
    return t->len ? t->v[0].at : TMR_NEVER;
}

int tmr_pop(tmr *t, uint64_t limit, tmr_entry *out)
{
    if (t->len == 0 || t->v[0].at > limit)
        return 0;
    *out = t->v[0];
    tmr_entry last = t->v[--t->len];
    size_t i = 0, n = t->len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && less(&t->v[c + 1], &t->v[c]))
            c++;
        if (!less(&t->v[c], &last))
            break;
        t->v[i] = t->v[c];
        i = c;
    }
    if (n)
        t->v[i] = last;
    return 1;
}
