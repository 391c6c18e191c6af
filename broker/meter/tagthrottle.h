/*
 * tagthrottle.h - the tags a consumer reported throttled on their own
 * (THROTTLED with scope tag: the service limits that tenant, not everyone):
 * each such tag's pause, and the cut of the bucket its rate limit uses,
 * with the climb back (AIMD per tag, aimd.h's policy, the sink's). Pure: no
 * clock, no I/O, no logging; time is a parameter. settle_tag.c feeds it,
 * cron.c ticks it, queue_fair_tag.c asks it at each pick of a fair level.
 *
 * Entries are of two kinds. A tag entry holds a tag's pause, level by
 * level (no delivery of the tag from level L before level_until_ns[L]: a
 * consumer's THROTTLED pauses the tag only in the levels its principal
 * may consume) and, when the tag's pattern gives
 * each tag its own bucket (--each), that bucket's cut. A pattern entry
 * holds the cut of a pattern's shared bucket: every tag of the pattern
 * passes it, so the 429s of any of them cut it, as one service limit. A
 * tag whose pattern has no rate limit (or that has no pattern) is paused
 * only: its entry has no base.
 *
 * Bounded: at most TAGTHROTTLE_MAX entries; an entry goes once its pause
 * is over, its rate is back at its base and no cut came for AIMD_CALM_NS
 * (so a 429 after it counts as isolated either way). With the table full,
 * entries that have nothing left but that memory go first; when none has,
 * tagthrottle_pause answers NULL and the caller treats the 429 as the
 * sink's.
 *
 * Costs: a lookup by tag id (the pick's question) is one hash probe, and
 * nothing at all while the table is empty; by name a hash probe and a
 * compare; inserting or dropping an entry rebuilds both hash tables
 * (O(entries), at most TAGTHROTTLE_MAX: at the rate of new 429s, never per
 * pick); a tick O(entries). Memory: about 470 bytes an entry (the name is
 * stored whole, and a pause per level), so 1.9 MB with the table full,
 * nothing while it is empty.
 */
#ifndef SLUICE_TAGTHROTTLE_H
#define SLUICE_TAGTHROTTLE_H

#include <stddef.h>
#include <stdint.h>

#include "aimd.h"
#include "hash.h"
#include "proto.h"

#define TAGTHROTTLE_MAX 4096
#define TAGTHROTTLE_NEVER UINT64_MAX

typedef struct tagthrottle_entry {
    char name[PROTO_MAX_TAG + 1]; /* the tag, or the pattern whose shared bucket is cut */
    int pattern;               /* 1: a pattern entry; 0: a tag entry */
    uint32_t id;               /* a tag entry's id in the fair levels; 0: not known (seen in FIFO levels only) */
    uint64_t paused_until_ns;  /* a tag entry: the latest of its levels' pauses; 0: none */
    uint64_t level_until_ns[PROTO_MAX_LEVELS]; /* ... none of the tag leaves level L before [L] */
    uint64_t base_milli;       /* the bucket's rate (its first window's, per second); 0: no cut, a pause only */
    uint64_t rate_milli;       /* the rate in use: cut by aimd_cut, climbing back to base_milli */
    aimd aimd;
    uint64_t throttles;        /* tag-scoped THROTTLEDs counted on this entry */
    int rule;                  /* the caller's cache: the entry's pattern in its tagset ... */
    uint32_t gen;              /* ... as of this tagset generation (0: never looked up) */
} tagthrottle_entry;

typedef struct tagthrottle {
    tagthrottle_entry *v;      /* dense: [0, n) */
    uint32_t n;
    size_t cap;
    hash_index by_id;          /* tag entries with an id, by id */
    hash_index by_name;        /* every entry, by (kind, name) */
    uint64_t next_ns;          /* when tagthrottle_tick next has work: a step, or an entry to drop */
    uint32_t gen;              /* the caller's: the tagset generation the entries were looked up at */
} tagthrottle;

/* What a tick reports, for each entry whose rate moved (the caller applies
 * it to the bucket: rate_milli, or the bucket's own window when it is back
 * at base_milli). */
typedef void (*tagthrottle_apply_fn)(void *ctx, tagthrottle_entry *e);

void tagthrottle_init(tagthrottle *t);
void tagthrottle_fini(tagthrottle *t);

/* tagthrottle_find returns the entry of kind pattern (1) or tag (0) named
 * name[0..len), or NULL. */
tagthrottle_entry *tagthrottle_find(const tagthrottle *t, int pattern, const char *name, size_t len);

/* tagthrottle_paused_until returns when tag id's pause in level ends, if
 * it is paused there at now_ns (a time > now_ns), else 0. O(1); 0 at once
 * when the table is empty. */
uint64_t tagthrottle_paused_until(const tagthrottle *t, uint32_t id, unsigned level, uint64_t now_ns);

/* tagthrottle_pause pauses tag (1..PROTO_MAX_TAG bytes) in the levels of
 * levels_mask until until_ns (in each, the later of that and any pause it
 * has there), notes id (0: keep the one known), counts the throttle, and
 * returns its entry; NULL when the table is full of entries still in use,
 * or out of memory (*err SL_EFULL or SL_ENOMEM; may be NULL). */
tagthrottle_entry *tagthrottle_pause(tagthrottle *t, const char *tag, size_t len, uint32_t id, uint32_t levels_mask,
                                     uint64_t until_ns, uint64_t now_ns, int *err);

/* tagthrottle_cut cuts the bucket of kind pattern named name (its rate
 * limit's first window, base_milli per second), making its entry if need
 * be, at now_ns: aimd_cut's rule. A new entry (or one whose base moved)
 * starts at base_milli. Returns the entry with *cut 1 when the rate was cut
 * (0: within a second of the last cut, or no base); NULL as tagthrottle_pause. */
tagthrottle_entry *tagthrottle_cut(tagthrottle *t, int pattern, const char *name, size_t len, uint64_t base_milli,
                                   uint64_t now_ns, int *cut, int *err);

/* tagthrottle_rebase sets the base of t's entry e to base_milli (its limit
 * changed; 0: it has none now), keeping the rate in use at most the base. */
void tagthrottle_rebase(tagthrottle *t, tagthrottle_entry *e, uint64_t base_milli);

/* tagthrottle_tick is the additive increase at now_ns: each cut entry whose
 * step is due climbs (aimd_raise) and fn(ctx, e) is called for it; then the
 * entries with nothing left (tagthrottle.h's rule) are dropped. O(entries):
 * call it when tagthrottle_next_ns has come. Returns tagthrottle_next_ns. */
uint64_t tagthrottle_tick(tagthrottle *t, uint64_t now_ns, tagthrottle_apply_fn fn, void *ctx);

/* tagthrottle_next_ns returns when tagthrottle_tick next has work: a step
 * due, or an entry with nothing left to drop (TAGTHROTTLE_NEVER: none). */
uint64_t tagthrottle_next_ns(const tagthrottle *t);

/* tagthrottle_cut_of returns the rate e's bucket runs at now, when it is
 * cut (rate below base), else 0. */
uint64_t tagthrottle_cut_of(const tagthrottle_entry *e);

#endif /* SLUICE_TAGTHROTTLE_H */
