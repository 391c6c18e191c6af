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
 * Keeping the broker's spacing (pace_lag). The broker's releases hold
 * rate * tau + burst in every window; the sink sees them shifted by each
 * one's lag through the socket, the consumer's threads and the pacer. A
 * constant lag changes nothing; a varying one bunches them: a request that
 * waited 8 ms for a worker arrives with the next one sent on time, and at
 * 500/s that is four more in a window than the broker released in it. The
 * local bucket cannot take that out when several processes share the sink
 * (each holds only its own share, with headroom). So a request also waits
 * until its release time plus the longest lag seen in the last second or
 * two (pace_lag_due): each then leaves as late as the slowest recent one,
 * and the requests of every process keep the spacing the broker gave them,
 * up to the lags longer than that. The lag is measured between the
 * broker's released_ns and this process's clock, so their offset (and the
 * quickest way through) is the least lag seen, and the hold is the spread
 * between the least and the most, capped at PACE_LAG_MAX_NS: a consumer
 * taking one delivery at a time holds each for microseconds; one whose
 * workers the scheduler delays by 8 ms holds each for 8 ms. Epochs of
 * PACE_LAG_EPOCH_NS let a stall's lag go after one to two of them, and a
 * clock offset that drifts (another host) be learnt again. The hold in use
 * grows at once but shrinks slowly (1 ms a second, PACE_LAG_DECAY): one
 * that dropped from 25 ms to 2 ms at once sent the requests still held for
 * 25 ms together with the next ones, held for 2 (a few 429s in every run
 * of a sink whose burst the broker's equals). A request that finds nothing
 * else waiting to leave (idle) is not held at all: a consumer that sends
 * one at a time has nothing to keep the spacing with, and holding each of
 * its requests cost it more than half its rate on a loaded machine.
 *
 * Pure: no clock, no sleep, no lock (pacer.c). Costs: O(1) per booking.
 */
#include "pace.h"

#include "sluice.h"

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

uint64_t pace_rate_at(uint64_t rate_milli, uint32_t burst)
{
    if (burst > 1 || rate_milli < SL_PACER_MARGIN + 1)
        return rate_milli;
    return rate_milli / (SL_PACER_MARGIN + 1) * SL_PACER_MARGIN +
           rate_milli % (SL_PACER_MARGIN + 1) * SL_PACER_MARGIN / (SL_PACER_MARGIN + 1);
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
    /* at burst 1, the first request after a lull: the next leaves an interval later still */
    int cold = p->burst <= 1 && now_ns >= p->tat_ns + PACE_COLD_NS;
    p->tat_ns = from + ((uint64_t)cost + (uint64_t)cold) * p->interval_ns;
}

void pace_lag_note(pace_lag *l, uint64_t released_ns, uint64_t now_ns)
{
    if (!released_ns)
        return;
    if (!l->epoch_ns || now_ns >= l->epoch_ns + PACE_LAG_EPOCH_NS) {
        /* a new epoch; after a long gap the one before is as stale as none */
        int fresh = l->epoch_ns && now_ns < l->epoch_ns + 2 * PACE_LAG_EPOCH_NS;
        l->lo[1] = l->lo[0], l->hi[1] = l->hi[0], l->seen[1] = fresh ? l->seen[0] : 0;
        l->seen[0] = 0;
        l->epoch_ns = now_ns;
    }
    int64_t lag = (int64_t)(now_ns - released_ns); /* the clocks may be apart: modular, then signed */
    if (!l->seen[0] || lag < l->lo[0])
        l->lo[0] = lag;
    if (!l->seen[0] || lag > l->hi[0])
        l->hi[0] = lag;
    l->seen[0]++;
}

uint64_t pace_lag_due(pace_lag *l, uint64_t released_ns, uint64_t now_ns, int idle, uint64_t shared_ns)
{
    if (!released_ns || (!l->seen[0] && !l->seen[1]))
        return 0;
    if (shared_ns) /* others pace the same sink: a hold they all keep, idle or not */
        idle = 0;
    int both = l->seen[0] && l->seen[1];
    int64_t lo = l->seen[0] ? l->lo[0] : l->lo[1], hi = l->seen[0] ? l->hi[0] : l->hi[1];
    if (both) {
        lo = l->lo[1] < lo ? l->lo[1] : lo;
        hi = l->hi[1] > hi ? l->hi[1] : hi;
    }
    uint64_t spread = (uint64_t)(hi - lo);
    spread = spread < PACE_LAG_MAX_NS ? spread : PACE_LAG_MAX_NS;
    uint64_t shrink = now_ns > l->hold_at_ns ? (now_ns - l->hold_at_ns) / PACE_LAG_DECAY : 0;
    if (idle)
        l->hold_ns = 0; /* nothing to keep the spacing with */
    else if (spread >= l->hold_ns)
        l->hold_ns = spread;
    else
        l->hold_ns = l->hold_ns - spread > shrink ? l->hold_ns - shrink : spread;
    l->hold_at_ns = now_ns;
    return released_ns + (uint64_t)lo + (l->hold_ns > shared_ns ? l->hold_ns : shared_ns);
}
