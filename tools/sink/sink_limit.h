/*
 * sink_limit.h - the rate limiters of sluice-sink: GCRA, fixed window and
 * exact sliding window, behind one interface; pure, no clock.
 *
 * Every call takes `now_ns` from the caller (any monotonic nanosecond clock;
 * tests use a hand clock). Calls on one sink_limit must not overlap: the
 * caller serialises them (sluice-sink holds a mutex), and should pass
 * non-decreasing times. A time earlier than one already seen is treated as
 * that earlier time would be, never as a wrap.
 */
#ifndef SLUICE_SINK_LIMIT_H
#define SLUICE_SINK_LIMIT_H

#include <stdint.h>

#define SINK_LIMIT_WINDOW_NS 1000000000ull  /* the 1 s of "per second" */
#define SINK_LIMIT_MAX_RATE_PER_S 1000000u  /* bounds the sliding ring: 8 MB */
#define SINK_LIMIT_MAX_BURST 1000000u

typedef enum sink_limit_mode {
    SINK_LIMIT_GCRA = 0,       /* rate per second with a burst of B */
    SINK_LIMIT_FIXED_WINDOW,   /* at most rate per aligned 1 s window */
    SINK_LIMIT_SLIDING_WINDOW, /* at most rate in any trailing 1 s */
} sink_limit_mode;

typedef struct sink_limit {
    sink_limit_mode mode;
    uint32_t rate_per_s;
    uint32_t burst;           /* used by gcra only; kept for reporting */
    /* gcra */
    uint64_t interval_ns;     /* emission interval: 1 s / rate, rounded up */
    uint64_t tat_ns;          /* theoretical arrival time of the next request */
    /* fixed window */
    uint64_t origin_ns;       /* start of window 0: the time of init */
    uint64_t window_index;    /* the window window_count belongs to */
    uint32_t window_count;
    /* sliding window: ring of the last rate_per_s admission times */
    uint64_t *stamps_ns;      /* rate_per_s slots; oldest at head */
    uint32_t head, count;
} sink_limit;

/* sink_limit_init makes a limiter in `mode` admitting rate_per_s requests
 * per second (1..SINK_LIMIT_MAX_RATE_PER_S) with the given burst
 * (1..SINK_LIMIT_MAX_BURST; gcra only), starting at now_ns with its whole
 * burst available; fixed windows are aligned to now_ns. l needs no setup.
 * Returns SL_OK, SL_EINVAL for a value out of range (l is then empty and
 * sink_limit_fini is still safe), or SL_ENOMEM. */
int sink_limit_init(sink_limit *l, sink_limit_mode mode, uint32_t rate_per_s, uint32_t burst,
                    uint64_t now_ns);

/* sink_limit_fini frees l's memory; safe on a zeroed or finished limiter. */
void sink_limit_fini(sink_limit *l);

/* sink_limit_set changes the rate and the burst of a running limiter
 * without forgetting what it has admitted: gcra keeps the tokens in use (its
 * debt is rescaled to the new interval), fixed-window keeps the current
 * window's count, sliding-window keeps the newest admissions that fit the
 * new ring. Returns SL_OK, SL_EINVAL (l unchanged) or SL_ENOMEM (l
 * unchanged). */
int sink_limit_set(sink_limit *l, uint32_t rate_per_s, uint32_t burst, uint64_t now_ns);

/* sink_limit_take asks to admit one request at now_ns. Returns 1 and
 * records it when admitted; returns 0 when refused, with *wait_ns (may be
 * NULL) set to the time from now_ns until a request would be admitted
 * (always > 0). */
int sink_limit_take(sink_limit *l, uint64_t now_ns, uint64_t *wait_ns);

/* sink_limit_retry_after_s turns a wait into a Retry-After value: whole
 * seconds, rounded up, at least 1. */
uint64_t sink_limit_retry_after_s(uint64_t wait_ns);

/* sink_limit_mode_name returns "gcra", "fixed-window" or "sliding-window"
 * (a static string; "?" for a value outside the enum). */
const char *sink_limit_mode_name(sink_limit_mode mode);

/* sink_limit_mode_parse reads one of those names into *out. Returns SL_OK
 * or SL_EINVAL. */
int sink_limit_mode_parse(const char *name, sink_limit_mode *out);

#endif /* SLUICE_SINK_LIMIT_H */
