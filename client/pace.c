/*
 * pace.c - the consumer's own GCRA, for pacing at the moment a request
 * leaves for the sink.
 *
 * Why here. The broker meters when it dispatches; between that moment and
 * the moment the sink sees a request sit a socket, a consumer process, its
 * worker threads and their HTTP connections. A worker the scheduler delayed
 * sends late, and the next one on time: the two arrive together and a sink
 * with a small burst answers 429. So the process that sends takes a token
 * again, just before it sends, from a bucket at the share of the sink the
 * broker gave it (member.c): what leaves it is at most share * tau + burst
 * over any window tau, whatever happened upstream.
 *
 * The token is taken at the moment of sending, not booked ahead: a worker
 * asks when it may go (pace_next), sleeps until then, asks again, and takes
 * the token (pace_take) only when it is due now. Booking a slot ahead and
 * sleeping to it is not enough: a process the scheduler stalls wakes its
 * workers late, and they would all send at once with slots from the past
 * (the sink saw six requests in 2 ms after a 30 ms stall, with a burst of
 * 5). Taken at the moment of sending, a late token moves the bucket's TAT
 * as a late arrival moves the sink's. Invariant: the take times satisfy the
 * GCRA: next = max(now, TAT + cost*T - burst*T); take sets TAT =
 * max(TAT, now) + cost*T.
 *
 * Pure: no clock, no sleep, no lock (pacer.c). Costs: O(1) per booking.
 */
#include "pace.h"

#define NS_PER_S_ 1000000000ull

/* interval returns 1 s / rate, rounded up so that the pace never runs fast. */
static uint64_t interval(uint64_t rate_milli)
{
    if (!rate_milli)
        return 0;
    return (NS_PER_S_ * 1000 + rate_milli - 1) / rate_milli;
}

void pace_set(pace *p, uint64_t rate_milli, uint32_t burst, uint64_t now_ns)
{
    uint64_t t = interval(rate_milli);
    if (p->interval_ns && t && p->tat_ns > now_ns) {
        /* debt owed, rescaled to the new pace */
        unsigned __int128 debt = (unsigned __int128)(p->tat_ns - now_ns) * t / p->interval_ns;
        p->tat_ns = now_ns + (uint64_t)debt;
    } else if (!t || !p->interval_ns) {
        p->tat_ns = now_ns;
    }
    p->interval_ns = t;
    p->rate_milli = rate_milli;
    p->burst = burst ? burst : 1;
}

uint64_t pace_next(const pace *p, uint32_t cost, uint64_t now_ns)
{
    if (!p->interval_ns || p->tat_ns <= now_ns)
        return now_ns; /* unpaced, or full: even a cost above the burst goes */
    uint32_t burst = p->burst ? p->burst : 1;
    uint64_t need = (uint64_t)cost * p->interval_ns, room = (uint64_t)burst * p->interval_ns;
    if (need > room)
        need = room; /* above the burst: waits for a full bucket */
    return p->tat_ns + need > now_ns + room ? p->tat_ns + need - room : now_ns;
}

void pace_take(pace *p, uint32_t cost, uint64_t now_ns)
{
    if (!p->interval_ns)
        return;
    uint64_t from = p->tat_ns > now_ns ? p->tat_ns : now_ns;
    p->tat_ns = from + (uint64_t)cost * p->interval_ns;
}
