/*
 * pause.h - the pauses a THROTTLED causes, of the sink and of levels: their
 * cap, their origin, what is left of them, and ending them at once.
 */
#ifndef SLUICE_PAUSE_H
#define SLUICE_PAUSE_H

#include <stddef.h>
#include <stdint.h>

#include "bk.h"

/* pause_length_ms returns the pause one THROTTLED asking retry_ms causes
 * (0: --throttle-backoff-ms), cut at --max-throttle-pause. */
uint64_t pause_length_ms(const bk *b, uint64_t retry_ms);

/* pause_origin fills o with where a THROTTLED of l (a lease not yet
 * released) asking retry_ms comes from: its message, level, consumer's
 * principal and pool; until_ns and applied_ms are left 0, tag "". */
void pause_origin(const lease *l, uint64_t retry_ms, bk_pause *o);

/* pause_sink pauses the sink for ms from b's clock (the later of that and
 * a pause it has) and cuts its rate at most once a second (meter_throttled),
 * noting o as the pause's origin when it extends it. Logged at most once a
 * second, with the origin. */
void pause_sink(bk *b, const bk_pause *o, uint64_t ms);

/* pause_level pauses level for ms from b's clock (the later of that and a
 * pause it has), noting o as its origin when it extends it: nothing of the
 * level is delivered until then, and the levels below it go on. Logged at
 * most once a second, with the origin. */
void pause_level(bk *b, unsigned level, const bk_pause *o, uint64_t ms);

/* pause_level_held tells whether level is paused by a THROTTLED at b's
 * clock, and if so sets *until_ns. */
int pause_level_held(const bk *b, unsigned level, uint64_t *until_ns);

/* pause_left_ms returns the ms level's pause has left (rounded up), or the
 * sink's with level PAUSE_SINK; 0: none. */
#define PAUSE_SINK UINT32_MAX
uint64_t pause_left_ms(const bk *b, unsigned level);

/* pause_resume ends level's pause (PAUSE_SINK: the sink's) at once: the
 * operator's `sluice level resume` and `sluice sink resume`, and `sink set`.
 * The sink's rate stays where it is (meter_resume); a FIFO level waiting
 * for a tag goes on, the tag's own pause is left alone. Logged when there
 * was one. Returns the ms it had left (0: none). */
uint64_t pause_resume(bk *b, unsigned level, const char *by);

/* pause_describe writes where the pause p came from, for explain and the
 * log: "after THROTTLED of message 12 (level high, pool p, principal w;
 * asked 86400000 ms, cut to 300000 ms)". Returns buf. */
const char *pause_describe(const bk *b, const bk_pause *p, char *buf, size_t len);

#endif /* SLUICE_PAUSE_H */
