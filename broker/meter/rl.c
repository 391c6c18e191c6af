/*
 * rl.c - GCRA arithmetic (see rl.h).
 *
 * All sums saturate instead of wrapping, so an absurd cost or a far-future
 * pause degrades to "not allowed for a long time" rather than to "allowed".
 *
 * A cost above the burst could never fit under B*T, and such a message,
 * never sent, would hold its level and every level below it for good (and
 * a burst lowered under a stored message's cost would strand it). So the
 * question checks at most the burst: a message whose cost exceeds it goes
 * once the bucket is full (TAT <= now), and its charge, the whole cost,
 * puts the bucket into debt: TAT = now + cost*T, so what follows waits
 * until the debt is paid. The bound over a window tau becomes rate*tau +
 * max(B, the largest cost sent); see rl.h.
 * The emission interval is rounded to the nearest nanosecond; at 1,000,000/s
 * that is exact, at 3/s the error is under 1 ns per unit; a window of
 * count per period rounds the same way (500/min: exactly 120 ms a unit).
 *
 * A late take (rl_take_late): the loop wakes for a bucket's slot (its TAT)
 * some microseconds after it, and a take charged from that moment moves
 * every later slot by the lateness: 30 us a release lost 6 % of a 1,900/s
 * sink. Charged from the slot instead, as long as it is at most T/2 late,
 * a late release costs nothing; the price is that it and the next, on
 * time, may leave T/2 apart, and the bound over a window tau becomes
 * rate*(tau + T/2) + burst, which for windows of whole intervals is still
 * rate*tau + burst (the half unit cannot be counted).
 *
 * Several windows on one limit are plain buckets side by side; the series
 * helpers ask them all and charge them all, so "allowed" is the AND of the
 * windows and the retry time their latest: O(windows) per question.
 */
#include "rl.h"

#define NS_PER_S_MILLI 1000000000000ULL /* 1e9 ns x 1000 */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* mul_div returns a * b / c (c > 0) without overflow in between,
 * saturated. Windows of minutes or days have intervals of seconds to hours,
 * whose products overflow 64 bits. */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
    __extension__ unsigned __int128 r = (unsigned __int128)a * b / c;
    return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

/* set_interval moves b to a new emission interval (0 = unlimited). */
static void set_interval(rl_bucket *b, uint64_t interval, uint64_t rate_milli, uint32_t burst, uint64_t now_ns)
{
    uint64_t old = b->interval_ns;
    if (old && interval && b->tat_ns > now_ns) {
        /* carry the debt over at the new pace */
        uint64_t debt = b->tat_ns - now_ns;
        b->tat_ns = sat_add(now_ns, mul_div(debt, interval, old));
    } else if (!old && interval) {
        b->tat_ns = now_ns; /* from unlimited: start full, as a fresh bucket */
    }
    b->interval_ns = interval;
    b->rate_milli = rate_milli;
    b->burst = burst ? burst : 1;
}

void rl_set(rl_bucket *b, uint64_t rate_milli, uint32_t burst, uint64_t now_ns)
{
    uint64_t interval = rate_milli ? (NS_PER_S_MILLI + rate_milli / 2) / rate_milli : 0;
    if (rate_milli && interval == 0)
        interval = 1;
    set_interval(b, interval, rate_milli, burst, now_ns);
}

void rl_set_window(rl_bucket *b, const rl_window *w, uint64_t now_ns)
{
    uint64_t period = w->period_ms ? w->period_ms : 1000;
    if (period > RL_MAX_PERIOD_MS)
        period = RL_MAX_PERIOD_MS;
    /* ns per unit = period_ms x 1e6 x 1000 / count_milli; period x 1e9 fits */
    uint64_t interval = w->count_milli ? (period * 1000000000ULL + w->count_milli / 2) / w->count_milli : 0;
    if (w->count_milli && interval == 0)
        interval = 1;
    set_interval(b, interval, rl_window_rate_milli(w), w->burst, now_ns);
}

uint64_t rl_window_rate_milli(const rl_window *w)
{
    uint64_t period = w->period_ms ? w->period_ms : 1000;
    return w->count_milli > UINT64_MAX / 1000 ? UINT64_MAX / period : w->count_milli * 1000 / period;
}

int rl_series_allows(const rl_bucket *b, unsigned n, uint64_t cost, uint64_t now_ns, uint64_t *retry_ns)
{
    int ok = 1;
    uint64_t at = now_ns;
    for (unsigned i = 0; i < n; i++) {
        if (rl_allows(&b[i], cost, now_ns))
            continue;
        ok = 0;
        uint64_t t = rl_next_ns(&b[i], cost, now_ns);
        if (t > at)
            at = t;
    }
    if (!ok)
        *retry_ns = at;
    return ok;
}

void rl_series_take(rl_bucket *b, unsigned n, uint64_t cost, uint64_t now_ns)
{
    for (unsigned i = 0; i < n; i++)
        rl_take(&b[i], cost, now_ns);
}

/* after returns the TAT once cost is charged at now. */
static uint64_t after(const rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    uint64_t base = b->tat_ns > now_ns ? b->tat_ns : now_ns;
    return sat_add(base, sat_mul(cost, b->interval_ns));
}

/* asked returns the part of cost the question checks: all of it up to the
 * burst, the burst above it (such a message needs a full bucket, and its
 * charge puts the bucket into debt for the rest). */
static uint64_t asked(const rl_bucket *b, uint64_t cost)
{
    return cost < b->burst ? cost : b->burst;
}

int rl_allows(const rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (!b->interval_ns)
        return 1;
    uint64_t limit = sat_add(now_ns, sat_mul(b->burst, b->interval_ns));
    return after(b, asked(b, cost), now_ns) <= limit;
}

void rl_take(rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (b->interval_ns)
        b->tat_ns = after(b, cost, now_ns);
}

void rl_take_late(rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (!b->interval_ns)
        return;
    /* woken at most one interval after its slot: charged from the slot,
     * or from now less T/2 at most, so a late wake costs the rate only
     * what it exceeds T/2 by and the next release comes at least T/2 after
     * this one; later than that the bucket was idle, and a take is charged
     * from now, as rl_take does (no half interval granted after an idle
     * spell: no two releases bunched at a strict sink, and a cost above
     * the burst owes its whole debt) */
    uint64_t from = b->tat_ns;
    if (now_ns > b->tat_ns) {
        uint64_t late = now_ns - b->tat_ns, half = b->interval_ns / 2;
        from = late > b->interval_ns ? now_ns : late > half ? now_ns - half : b->tat_ns;
    }
    b->tat_ns = sat_add(from, sat_mul(cost, b->interval_ns));
}

uint64_t rl_next_ns(const rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (!b->interval_ns || rl_allows(b, cost, now_ns))
        return now_ns;
    /* allowed at t when after(t) - t <= B*T, i.e. t >= TAT + c*T - B*T
     * (c at most B: a larger cost waits for a full bucket, t >= TAT) */
    uint64_t t = sat_add(b->tat_ns, sat_mul(asked(b, cost), b->interval_ns));
    uint64_t room = sat_mul(b->burst, b->interval_ns);
    t = t > room ? t - room : 0;
    return t > now_ns ? t : now_ns;
}

uint64_t rl_tokens_milli(const rl_bucket *b, uint64_t now_ns)
{
    if (!b->interval_ns)
        return UINT64_MAX;
    uint64_t full = sat_mul(b->burst, b->interval_ns);
    uint64_t debt = b->tat_ns > now_ns ? b->tat_ns - now_ns : 0;
    if (debt >= full)
        return 0;
    return mul_div(full - debt, 1000, b->interval_ns);
}

void rl_pause_until(rl_bucket *b, uint64_t until_ns)
{
    if (!b->interval_ns)
        return;
    uint64_t tat = sat_add(until_ns, sat_mul(b->burst - 1, b->interval_ns));
    if (tat > b->tat_ns)
        b->tat_ns = tat;
}
