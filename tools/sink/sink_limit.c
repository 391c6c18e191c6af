/*
 * sink_limit.c - three rate limiters, pure: the caller says what time it is.
 *
 * sluice-sink answers each request with whatever sink_limit_take decides,
 * so these functions are the whole behaviour of the simulated downstream
 * service, and tests/unit/test_sink_limit.c drives them with a hand clock. Each mode keeps
 * only what it needs:
 *
 *   gcra            Generic cell rate algorithm. The emission interval T is
 *                   1 s / rate (rounded up, so the rate is never exceeded)
 *                   and the tolerance is (burst - 1) * T. State is one
 *                   number, the theoretical arrival time (TAT) of the next
 *                   request: a request at `now` is admitted when
 *                   max(TAT, now) - now <= tolerance, and then TAT becomes
 *                   max(TAT, now) + T. So an idle limiter admits `burst`
 *                   requests back to back and then one every T. O(1).
 *   fixed-window    Windows of 1 s aligned to the time of init; at most
 *                   `rate` admissions per window, the count resets when a
 *                   request falls in a later window. Burst is ignored. O(1).
 *   sliding-window  Exact: a ring holds the times of the last `rate`
 *                   admissions. A request is admitted when fewer than `rate`
 *                   have been admitted ever, or the oldest of the last
 *                   `rate` is at least 1 s old; it then replaces that oldest
 *                   entry. So no trailing second ever holds more than `rate`
 *                   admissions. O(1) per request, 8 bytes per unit of rate.
 *
 * A refusal reports how long until a request would be admitted: the time
 * until max(TAT, now) - tolerance for gcra, the end of the window for
 * fixed-window, and the moment the oldest ring entry turns 1 s old for
 * sliding-window. Refusals change no state.
 *
 * Changing the limit (sink_limit_set) keeps what was admitted: gcra
 * rescales its debt (TAT - now, in units of T) to the new T, so a limiter
 * that had used k tokens still has k in use; fixed-window keeps the count
 * of the current window (a lower rate can refuse the rest of it); the
 * sliding ring is copied, newest entries first, into a ring of the new
 * size, which keeps the check exact. Only set and init allocate, never take.
 *
 * Invariants: 1 <= rate_per_s <= SINK_LIMIT_MAX_RATE_PER_S, 1 <= burst <=
 * SINK_LIMIT_MAX_BURST, count <= rate_per_s, head < rate_per_s.
 */
#include "sink_limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice_errors.h"

static const char *const mode_names[] = {
    [SINK_LIMIT_GCRA] = "gcra",
    [SINK_LIMIT_FIXED_WINDOW] = "fixed-window",
    [SINK_LIMIT_SLIDING_WINDOW] = "sliding-window",
};

#define MODE_COUNT (sizeof mode_names / sizeof mode_names[0])

static int valid(sink_limit_mode mode, uint32_t rate_per_s, uint32_t burst)
{
    return (unsigned)mode < MODE_COUNT && rate_per_s >= 1 && rate_per_s <= SINK_LIMIT_MAX_RATE_PER_S &&
           burst >= 1 && burst <= SINK_LIMIT_MAX_BURST;
}

static uint64_t interval_for(uint32_t rate_per_s)
{
    return (SINK_LIMIT_WINDOW_NS + rate_per_s - 1) / rate_per_s;
}

/* scale returns v * num / den without overflow for v up to about 2^63 and
 * num, den up to 2^32. */
static uint64_t scale(uint64_t v, uint64_t num, uint64_t den)
{
    return (v / den) * num + (v % den) * num / den;
}

int sink_limit_init(sink_limit *l, sink_limit_mode mode, uint32_t rate_per_s, uint32_t burst,
                    uint64_t now_ns)
{
    memset(l, 0, sizeof *l);
    if (!valid(mode, rate_per_s, burst))
        return SL_EINVAL;
    if (mode == SINK_LIMIT_SLIDING_WINDOW) {
        l->stamps_ns = calloc(rate_per_s, sizeof *l->stamps_ns);
        if (!l->stamps_ns)
            return SL_ENOMEM;
    }
    l->mode = mode;
    l->rate_per_s = rate_per_s;
    l->burst = burst;
    l->interval_ns = interval_for(rate_per_s);
    l->tat_ns = now_ns;
    l->origin_ns = now_ns;
    return SL_OK;
}

void sink_limit_fini(sink_limit *l)
{
    free(l->stamps_ns);
    memset(l, 0, sizeof *l);
}

/* resize_ring moves the newest min(count, rate_per_s) entries into a fresh
 * ring of rate_per_s slots, oldest first at slot 0. */
static int resize_ring(sink_limit *l, uint32_t rate_per_s)
{
    uint64_t *ring = calloc(rate_per_s, sizeof *ring);
    if (!ring)
        return SL_ENOMEM;
    uint32_t keep = l->count < rate_per_s ? l->count : rate_per_s;
    uint32_t skip = l->count - keep;
    for (uint32_t i = 0; i < keep; i++)
        ring[i] = l->stamps_ns[((uint64_t)l->head + skip + i) % l->rate_per_s];
    free(l->stamps_ns);
    l->stamps_ns = ring;
    l->head = 0;
    l->count = keep;
    return SL_OK;
}

int sink_limit_set(sink_limit *l, uint32_t rate_per_s, uint32_t burst, uint64_t now_ns)
{
    if (!valid(l->mode, rate_per_s, burst))
        return SL_EINVAL;
    if (l->mode == SINK_LIMIT_SLIDING_WINDOW && rate_per_s != l->rate_per_s) {
        int rc = resize_ring(l, rate_per_s);
        if (rc != SL_OK)
            return rc;
    }
    uint64_t interval_ns = interval_for(rate_per_s);
    if (l->tat_ns > now_ns)
        l->tat_ns = now_ns + scale(l->tat_ns - now_ns, interval_ns, l->interval_ns);
    l->interval_ns = interval_ns;
    l->rate_per_s = rate_per_s;
    l->burst = burst;
    return SL_OK;
}

static int take_gcra(sink_limit *l, uint64_t now_ns, uint64_t *wait_ns)
{
    uint64_t tat_ns = l->tat_ns > now_ns ? l->tat_ns : now_ns;
    uint64_t tolerance_ns = (uint64_t)(l->burst - 1) * l->interval_ns;
    if (tat_ns - now_ns > tolerance_ns) {
        *wait_ns = tat_ns - now_ns - tolerance_ns;
        return 0;
    }
    l->tat_ns = tat_ns + l->interval_ns;
    return 1;
}

static int take_fixed(sink_limit *l, uint64_t now_ns, uint64_t *wait_ns)
{
    uint64_t since_ns = now_ns > l->origin_ns ? now_ns - l->origin_ns : 0;
    uint64_t index = since_ns / SINK_LIMIT_WINDOW_NS;
    if (index > l->window_index) {
        l->window_index = index;
        l->window_count = 0;
    }
    if (l->window_count < l->rate_per_s) {
        l->window_count++;
        return 1;
    }
    uint64_t end_ns = (l->window_index + 1) * SINK_LIMIT_WINDOW_NS;
    *wait_ns = end_ns > since_ns ? end_ns - since_ns : 1;
    return 0;
}

static int take_sliding(sink_limit *l, uint64_t now_ns, uint64_t *wait_ns)
{
    if (l->count < l->rate_per_s) {
        l->stamps_ns[((uint64_t)l->head + l->count) % l->rate_per_s] = now_ns;
        l->count++;
        return 1;
    }
    uint64_t oldest_ns = l->stamps_ns[l->head];
    uint64_t age_ns = now_ns > oldest_ns ? now_ns - oldest_ns : 0;
    if (age_ns < SINK_LIMIT_WINDOW_NS) {
        *wait_ns = SINK_LIMIT_WINDOW_NS - age_ns;
        return 0;
    }
    l->stamps_ns[l->head] = now_ns;
    l->head = (l->head + 1) % l->rate_per_s;
    return 1;
}

int sink_limit_take(sink_limit *l, uint64_t now_ns, uint64_t *wait_ns)
{
    uint64_t ignored;
    if (!wait_ns)
        wait_ns = &ignored;
    *wait_ns = 0;
    switch (l->mode) {
    case SINK_LIMIT_GCRA:
        return take_gcra(l, now_ns, wait_ns);
    case SINK_LIMIT_FIXED_WINDOW:
        return take_fixed(l, now_ns, wait_ns);
    case SINK_LIMIT_SLIDING_WINDOW:
        return take_sliding(l, now_ns, wait_ns);
    }
    fprintf(stderr, "%s:%d: limiter in unknown mode %d\n", __FILE__, __LINE__, (int)l->mode);
    abort(); /* a broken invariant */
}

uint64_t sink_limit_retry_after_s(uint64_t wait_ns)
{
    uint64_t s = wait_ns / SINK_LIMIT_WINDOW_NS + (wait_ns % SINK_LIMIT_WINDOW_NS != 0);
    return s ? s : 1;
}

const char *sink_limit_mode_name(sink_limit_mode mode)
{
    return (unsigned)mode < MODE_COUNT ? mode_names[mode] : "?";
}

int sink_limit_mode_parse(const char *name, sink_limit_mode *out)
{
    for (unsigned i = 0; i < MODE_COUNT; i++)
        if (strcmp(name, mode_names[i]) == 0) {
            *out = (sink_limit_mode)i;
            return SL_OK;
        }
    return SL_EINVAL;
}
