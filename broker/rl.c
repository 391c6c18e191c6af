/*
 * rl.c - GCRA arithmetic (see rl.h).
 *
 * All sums saturate instead of wrapping, so an absurd cost or a far-future
 * pause degrades to "not allowed for a long time" rather than to "allowed".
 * The emission interval is rounded to the nearest nanosecond; at 1,000,000/s
 * that is exact, at 3/s the error is under 1 ns per unit.
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

void rl_set(rl_bucket *b, uint64_t rate_milli, uint32_t burst, uint64_t now_ns)
{
    uint64_t old = b->interval_ns;
    uint64_t interval = rate_milli ? (NS_PER_S_MILLI + rate_milli / 2) / rate_milli : 0;
    if (rate_milli && interval == 0)
        interval = 1;
    if (old && interval && b->tat_ns > now_ns) {
        /* carry the debt over at the new pace */
        uint64_t debt = b->tat_ns - now_ns;
        b->tat_ns = sat_add(now_ns, sat_mul(debt / old, interval) + (debt % old) * interval / old);
    } else if (!old && interval) {
        b->tat_ns = now_ns; /* from unlimited: start full, as a fresh bucket */
    }
    b->interval_ns = interval;
    b->rate_milli = rate_milli;
    b->burst = burst ? burst : 1;
}

/* after returns the TAT once cost is charged at now. */
static uint64_t after(const rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    uint64_t base = b->tat_ns > now_ns ? b->tat_ns : now_ns;
    return sat_add(base, sat_mul(cost, b->interval_ns));
}

int rl_allows(const rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (!b->interval_ns)
        return 1;
    uint64_t limit = sat_add(now_ns, sat_mul(b->burst, b->interval_ns));
    return after(b, cost, now_ns) <= limit;
}

void rl_take(rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (b->interval_ns)
        b->tat_ns = after(b, cost, now_ns);
}

uint64_t rl_next_ns(const rl_bucket *b, uint64_t cost, uint64_t now_ns)
{
    if (!b->interval_ns || rl_allows(b, cost, now_ns))
        return now_ns;
    /* allowed at t when after(t) - t <= B*T, i.e. t >= TAT + c*T - B*T */
    uint64_t t = sat_add(b->tat_ns, sat_mul(cost, b->interval_ns));
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
    return (full - debt) * 1000 / b->interval_ns;
}

void rl_pause_until(rl_bucket *b, uint64_t until_ns)
{
    if (!b->interval_ns)
        return;
    uint64_t tat = sat_add(until_ns, sat_mul(b->burst - 1, b->interval_ns));
    if (tat > b->tat_ns)
        b->tat_ns = tat;
}
