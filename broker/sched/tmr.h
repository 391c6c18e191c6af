/*
 * tmr.h - a binary min-heap of (at, id) pairs; pure, no clock.
 *
 * The broker uses it for lease deadlines (at = deadline ns, id = token) and
 * for each level's returned messages (at = order key). Entries are never
 * removed from the middle: owners cancel lazily by ignoring a popped entry
 * that no longer matches their own state.
 */
#ifndef SLUICE_TMR_H
#define SLUICE_TMR_H

#include <stddef.h>
#include <stdint.h>

#define TMR_NEVER UINT64_MAX

typedef struct tmr_entry {
    uint64_t at;  /* the order: a time in ns (lease deadlines) or an order key (returned messages) */
    uint64_t id;
} tmr_entry;

typedef struct tmr {
    tmr_entry *v;
    size_t len, cap;
} tmr;

/* tmr_init makes an empty heap; tmr_fini frees it (both accept any state
 * tmr_init left). */
void tmr_init(tmr *t);
void tmr_fini(tmr *t);

/* tmr_push adds (at, id). O(log n). Returns SL_OK or SL_ENOMEM. */
int tmr_push(tmr *t, uint64_t at, uint64_t id);

/* tmr_next returns the smallest at, or TMR_NEVER when empty. O(1). */
uint64_t tmr_next(const tmr *t);

/* tmr_pop removes the smallest entry into *out if its at <= limit; returns 1
 * when it did, 0 otherwise. tmr_pop(t, TMR_NEVER, &e) pops unconditionally. */
int tmr_pop(tmr *t, uint64_t limit, tmr_entry *out);

/* tmr_clear empties the heap, keeping its memory. */
void tmr_clear(tmr *t);

#endif /* SLUICE_TMR_H */
