/*
 * breaker.c - circuit breaker arithmetic (see breaker.h).
 *
 * The window is a ring of the last outcomes with a running failure count, so
 * recording is O(1). Requiring half a window of outcomes before tripping
 * keeps one early failure from opening the breaker on a quiet sink.
 */
#include "breaker.h"

#include <string.h>

static void set_state(breaker *b, breaker_state s, uint64_t now_ns)
{
    if (b->state == s)
        return;
    if (s == BREAKER_OPEN) {
        b->opened_ns = now_ns;
        if (b->state == BREAKER_CLOSED)
            b->trips++;
    }
    if (s == BREAKER_CLOSED) {
        b->n = b->next = b->failures = 0;
        memset(b->ring, 0, sizeof b->ring);
    }
    b->probe_out = 0;
    b->state = s;
    b->transitions++;
}

void breaker_init(breaker *b, uint32_t threshold_pct, uint32_t window, uint64_t cooldown_ns)
{
    memset(b, 0, sizeof *b);
    b->threshold_pct = threshold_pct > 100 ? 100 : threshold_pct;
    b->window = window < 2 ? 2 : window > BREAKER_MAX_WINDOW ? BREAKER_MAX_WINDOW : window;
    b->cooldown_ns = cooldown_ns;
}

int breaker_allows(breaker *b, uint64_t now_ns)
{
    if (b->state == BREAKER_OPEN && now_ns >= b->opened_ns + b->cooldown_ns)
        set_state(b, BREAKER_HALF_OPEN, now_ns);
    if (b->state == BREAKER_HALF_OPEN)
        return !b->probe_out;
    return b->state == BREAKER_CLOSED;
}

void breaker_sent(breaker *b)
{
    if (b->state == BREAKER_HALF_OPEN)
        b->probe_out = 1;
}

void breaker_record(breaker *b, int failed, uint64_t now_ns)
{
    if (b->state == BREAKER_HALF_OPEN) {
        set_state(b, failed ? BREAKER_OPEN : BREAKER_CLOSED, now_ns);
        return;
    }
    if (b->state == BREAKER_OPEN || b->threshold_pct == 0)
        return; /* late outcomes of deliveries sent before it opened */
    if (b->n == b->window)
        b->failures -= b->ring[b->next];
    else
        b->n++;
    b->ring[b->next] = failed ? 1 : 0;
    b->failures += b->ring[b->next];
    b->next = (b->next + 1) % b->window;
    if (b->n >= b->window / 2 && (uint64_t)b->failures * 100 > (uint64_t)b->threshold_pct * b->n)
        set_state(b, BREAKER_OPEN, now_ns);
}

uint64_t breaker_next_ns(const breaker *b)
{
    return b->state == BREAKER_OPEN ? b->opened_ns + b->cooldown_ns : UINT64_MAX;
}

const char *breaker_name(breaker_state s)
{
    switch (s) {
    case BREAKER_CLOSED: return "closed";
    case BREAKER_OPEN: return "open";
    case BREAKER_HALF_OPEN: return "half-open";
    }
    return "?";
}
