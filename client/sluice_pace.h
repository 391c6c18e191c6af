/*
 * sluice_pace.h - how fast a consumer of the Sluice client library works:
 * the share of its pool's size the broker gives it (how many deliveries to
 * work on at once), pacing each request at the moment it leaves for the
 * sink, and its credit window. Part of sluice.h, which includes it (include
 * <sluice.h>, not this file); the threading rules, errors and guarantees
 * stated there hold here too.
 */
#ifndef SLUICE_PACE_H
#define SLUICE_PACE_H

#ifndef SLUICE_H
#error "include <sluice.h>, which includes this header"
#endif

/* sl_share reports the share of its pool's size the broker last gave this
 * consumer: how many deliveries it should work on at once (0 when not told
 * yet, or when the pool has no size). A consumer that runs workers starts or
 * stops them to match. The value changes when the pool is resized or members
 * join or leave; it is read from messages the client has already received,
 * so call it after sl_recv. */
unsigned sl_share(const sl_client *c);

/* Pacing at the moment a request leaves. The broker meters what it
 * dispatches, but the sink sees when each request arrives; workers the
 * scheduler delays send late, then together. A consumer that calls the sink
 * takes a token again just before each request leaves, from an sl_pacer at
 * the share of the sink the broker gives it (its part of the recent
 * deliveries, at least an even part, times 1.5, of the sink's rate and
 * burst; re-balanced as consumers come, go or idle).
 *
 * sl_pace_share reads that share from messages already received (call it
 * after sl_recv): *rate_milli in units per second x 1000 (0: unpaced, the
 * sink is unlimited) and *burst. Returns 1 once the broker has told one, else
 * 0 (the outputs are then 0). */
int sl_pace_share(const sl_client *c, uint64_t *rate_milli, uint32_t *burst);

/* sl_pace_peers returns how many consumers (this one included) the broker
 * said pace the same sink (0 before it said: a broker before the field);
 * above 1, hand it to sl_pacer_peers so that they all keep the broker's
 * spacing between them. */
unsigned sl_pace_peers(const sl_client *c);

/* An sl_pacer is safe to share between threads: sl_pacer_wait takes the
 * token for cost units (0 reads as 1) at the moment it is due, sleeping
 * until then; call it just before the request leaves. Callers are served
 * in the order they asked (first come, first served). Returns the ns it
 * waited. sl_pacer_set changes the rate (0: unpaced) and
 * burst without creating tokens; it keeps a quarter of a burst above 1 (at
 * least one unit) as slack for the time between the token and the arrival
 * at the sink, and at a burst of 1, where no unit can be kept, spaces the
 * requests 1/SL_PACER_MARGIN of an interval wider than the rate instead. A
 * token is taken when the request leaves, so each request leaves at least
 * a full interval after the one before, however late the one before was
 * (a burst-1 sink refuses any closer pair). A thread that sleeps in
 * sl_pacer_wait has its timer slack set to 1 us (PR_SET_TIMERSLACK), so
 * that it wakes on time. A new
 * pacer is unpaced. sl_pacer_new
 * returns SL_OK or SL_ENOMEM; sl_pacer_free accepts NULL and sets *p NULL.
 *
 * sl_pacer_wait_released does what sl_pacer_wait does and also keeps the
 * broker's spacing: given the delivery's released_ns (0: as sl_pacer_wait)
 * while other consumers pace the same sink (sl_pacer_peers above 1) it holds
 * the request until its release plus the longest lag between release and
 * this call seen in the last one to two seconds (the spread above the
 * shortest, at most 25 ms, and at least SL_PACER_SHARED_HOLD_MS), so that
 * requests a worker took late do not arrive bunched with those taken on
 * time, whichever process sends them; then it takes the token in turn, as
 * with sl_pacer_wait. The hold grows at once and shrinks by at most 1 ms a
 * second while requests keep coming. Alone, a consumer's share is the
 * whole sink and its bucket alone bounds what reaches the sink: nothing is
 * held. Use one pacer per broker (the lag is measured on its clock).
 *
 * sl_pacer_peers(p, n) says how many consumers share the sink (from
 * sl_pace_peers). With more than one, each process's bucket holds only its
 * share, and two processes holding for different times (each its own
 * spread) send their requests shifted against each other, and the sink
 * sees pairs. So every request is then held at least
 * SL_PACER_SHARED_HOLD_MS past its release: processes on one host leave in
 * the broker's order and spacing whatever their own lags (up to that
 * hold). It costs each request that much latency, and a worker that much
 * time per request. */
#define SL_PACER_SHARED_HOLD_MS 5
#define SL_PACER_MARGIN 50 /* at burst 1: each request 1/50 of an interval later than the rate */
typedef struct sl_pacer sl_pacer;
int sl_pacer_new(sl_pacer **out);
void sl_pacer_set(sl_pacer *p, uint64_t rate_milli, uint32_t burst);
void sl_pacer_peers(sl_pacer *p, unsigned n);
uint64_t sl_pacer_wait(sl_pacer *p, uint32_t cost);
uint64_t sl_pacer_wait_released(sl_pacer *p, uint32_t cost, uint64_t released_ns);
void sl_pacer_free(sl_pacer **p);

/* sl_set_window changes the consumer's credit window (1..100000): growing
 * grants the difference at once; shrinking withholds the credit that acks
 * would return until fewer than window deliveries are outstanding. */
int sl_set_window(sl_client *c, unsigned window);

#endif /* SLUICE_PACE_H */
