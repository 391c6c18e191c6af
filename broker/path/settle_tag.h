/*
 * settle_tag.h - a THROTTLED for one tag alone (scope tag): the service
 * limits that tenant, not everyone, so that tag pauses and its bucket is
 * cut while the sink, the other tags and the other levels go on.
 */
#ifndef SLUICE_SETTLE_TAG_H
#define SLUICE_SETTLE_TAG_H

#include <stddef.h>
#include <stdint.h>

#include "bk.h"
#include "pause.h"

#define SETTLE_TAG_PAUSE_MAX_MS (24ULL * 3600 * 1000) /* a tag's pause is cut at a day */

/* settle_tag_of reads the tag of the record at key of level (a delivery
 * being settled) into tag (PROTO_MAX_TAG + 1 bytes, NUL-terminated, cut at
 * its UTF-8 start) and returns its length: 0 when it has none, or it
 * cannot be read (logged). One B-tree read. */
size_t settle_tag_of(bk *b, unsigned level, uint64_t key, char *tag);

/* settle_tag_throttled follows a THROTTLED with scope tag of the message
 * at key of level (already back at its place), whose tag is tag[0..len),
 * asking retry_ms (0: the backoff), from origin, whose principal may
 * consume the levels of allowed: that tag alone pauses in those levels
 * (cut at SETTLE_TAG_PAUSE_MAX_MS), and in a fair level the bucket of its
 * rate limit, if it has one, is cut (AIMD: its own with --each, else its
 * pattern's shared one; only when allowed is every level, since the bucket
 * is shared by all); a FIFO level, which cannot skip its head, waits out
 * the pause instead (a level pause, at most --max-throttle-pause: pause.c).
 * Counted in the level's throttled_tag. Returns SL_OK; SL_EFULL or
 * SL_ENOMEM when the tag could not be noted (logged at a limited rate):
 * the caller then treats the THROTTLED as the sink's. */
int settle_tag_throttled(bk *b, unsigned level, uint64_t key, const char *tag, size_t len, uint64_t retry_ms,
                         const bk_pause *origin, uint32_t allowed);

/* settle_tag_tick is cron's: when the table of throttled tags has work (a
 * step of a cut bucket's climb back, an entry to forget) or the per-tag
 * settings changed, it does it and applies the rates to the buckets.
 * Nothing while no tag is throttled. */
void settle_tag_tick(bk *b);

/* settle_tag_next_ns returns when settle_tag_tick next has work (UINT64_MAX:
 * none). */
uint64_t settle_tag_next_ns(const bk *b);

/* settle_tag_state tells what tag-scoped THROTTLEDs left on tag (its name;
 * rule: its pattern in q.tags, or TAGSET_NONE) at b's clock: *paused_ms
 * until its pause ends (0: none) and *rate_milli the rate its bucket runs
 * at while cut (its own with --each, else its pattern's shared one; 0: not
 * cut). Returns 1 when either is set. */
int settle_tag_state(const bk *b, const char *tag, size_t len, int rule, uint64_t *paused_ms, uint64_t *rate_milli);

/* settle_tag_pattern_cut returns the rate pattern's shared bucket runs at
 * while cut, or 0. */
uint64_t settle_tag_pattern_cut(const bk *b, const char *pattern);

#endif /* SLUICE_SETTLE_TAG_H */
