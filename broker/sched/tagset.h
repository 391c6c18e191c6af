/*
 * tagset.h - per-tag settings of levels served fair by tag: patterns with a
 * weight, a rate limit (windows in series), an in-flight cap and whether
 * each matching tag gets its own bucket and cap (--each) or all share one;
 * and the paused tags. Pure: no clock, no I/O, no logging; time is a
 * parameter. settings.c persists what is here, queue_fair.c asks it.
 *
 * Matching: a tag takes the settings of the first pattern (fnmatch glob, in
 * the order the patterns were first set) that matches it; a pattern set
 * again keeps its place. A tag no pattern matches has weight 1, no limit and
 * no cap, and costs nothing here. A paused tag is named exactly (no glob).
 *
 * State: a rule's shared bucket and in-flight count live in the rule; with
 * --each, one state per matching tag that has been charged (a small hash by
 * tag id, 8 + 4 x 32 bytes a tag, kept until the rule changes or goes). The
 * in-flight counts are derived from the fair levels' leased counts: after
 * any change (tagset.gen moves), queue_fair_tags_changed zeroes them and
 * adds each leased tag's count back (tagset_inflight_reset, _add).
 *
 * Costs: tagset_match O(rules) compares of a literal prefix and suffix (a
 * pattern with no glob character is one compare; fnmatch runs only for
 * patterns whose literal ends fit the tag), done once per tag per change
 * (queue_fair.c caches the answer); tagset_is_paused O(paused) compares; admit, charge and release
 * O(windows) plus one hash lookup with --each.
 */
#ifndef SLUICE_TAGSET_H
#define SLUICE_TAGSET_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"
#include "proto.h"
#include "rl.h"

#define TAGSET_MAX_RULES 1024   /* patterns; one more is SL_EFULL */
#define TAGSET_MAX_PAUSED 1024  /* paused tags; one more is SL_EFULL */
#define TAGSET_MAX_WEIGHT 1000  /* --weight 1..this */
#define TAGSET_NONE (-1)        /* no pattern matches */

/* A bucket series and the deliveries in flight under it. */
typedef struct tagset_state {
    uint32_t tag;       /* --each: the tag's id */
    uint32_t inflight;
    rl_bucket b[RL_MAX_WINDOWS];
} tagset_state;

/* One pattern and its settings (the first five persisted). */
typedef struct tagset_rule {
    char pattern[PROTO_MAX_TAG + 1];
    uint16_t len, plen, slen; /* its length, its literal prefix and suffix (no glob character) */
    uint8_t literal;        /* no glob character at all: an exact tag */
    uint32_t order;         /* its place: first set, first matched */
    uint32_t weight;        /* 1..TAGSET_MAX_WEIGHT */
    uint32_t max_inflight;  /* 0: no cap */
    int each;               /* a bucket and a cap per matching tag */
    unsigned nwin;          /* 0: no rate limit */
    rl_window win[RL_MAX_WINDOWS];
    tagset_state shared;    /* without --each */
    tagset_state *states;   /* with --each: one per tag charged, dense */
    uint32_t nstates;
    size_t states_cap;
    hash_index index;       /* ... by tag id */
} tagset_rule;

typedef struct tagset {
    tagset_rule *rules;     /* in order */
    unsigned n;
    size_t cap;
    char (*paused)[PROTO_MAX_TAG + 1];
    unsigned npaused;
    size_t paused_cap;
    uint32_t gen;           /* moves with every change: cached matches are stale */
    uint32_t next_order;
} tagset;

/* What holds a tag back (tagset_admit). */
typedef enum tagset_hold {
    TAGSET_GO = 0,
    TAGSET_PAUSED,    /* paused by name: until tag resume */
    TAGSET_RATE,      /* its bucket: until *retry_ns */
    TAGSET_INFLIGHT,  /* its in-flight cap: until a delivery settles */
} tagset_hold;

void tagset_init(tagset *s);
void tagset_fini(tagset *s);

/* tagset_find returns the index of pattern (exact text), or TAGSET_NONE. */
int tagset_find(const tagset *s, const char *pattern, size_t len);

/* tagset_put sets pattern's settings (a new pattern goes last, with order
 * `order`, or the next when order is 0; an existing one keeps its place and
 * its buckets' debt: a change never lets a burst through). Windows with a
 * count of 0 are dropped. SL_EINVAL for an empty or too long pattern, a
 * weight out of 1..TAGSET_MAX_WEIGHT or more than RL_MAX_WINDOWS windows;
 * SL_EFULL past TAGSET_MAX_RULES; SL_ENOMEM. */
int tagset_put(tagset *s, const tagset_rule *r, uint64_t now_ns);

/* tagset_del forgets pattern's settings. SL_ENOTFOUND when it has none. */
int tagset_del(tagset *s, const char *pattern, size_t len);

/* tagset_pause pauses (paused 1) or resumes tag (exact text). Returns SL_OK,
 * SL_EINVAL (empty or too long), SL_EFULL past TAGSET_MAX_PAUSED, SL_ENOMEM. */
int tagset_pause(tagset *s, const char *tag, size_t len, int paused);

/* tagset_is_paused tells whether tag is paused. */
int tagset_is_paused(const tagset *s, const char *tag, size_t len);

/* tagset_match returns the index of the first rule whose pattern matches
 * tag, or TAGSET_NONE. */
int tagset_match(const tagset *s, const char *tag, size_t len);

/* tagset_weight returns rule's weight (1 for TAGSET_NONE). */
uint32_t tagset_weight(const tagset *s, int rule);

/* tagset_admit tells whether a delivery of cost from tag id (matching rule;
 * paused: its cached pause) may go at now_ns: TAGSET_GO, or what holds it,
 * with *retry_ns when it may go (TAGSET_RATE). */
tagset_hold tagset_admit(tagset *s, int rule, int paused, uint32_t tag, uint64_t cost, uint64_t now_ns,
                         uint64_t *retry_ns);

/* tagset_charge charges a delivery of cost from tag to rule's bucket(s)
 * and counts it in flight. tagset_release ends one in flight. SL_ENOMEM
 * (an --each state could not be made: that tag goes unmetered) or SL_OK. */
int tagset_charge(tagset *s, int rule, uint32_t tag, uint64_t cost, uint64_t now_ns);
void tagset_release(tagset *s, int rule, uint32_t tag);

/* tagset_inflight_reset zeroes every in-flight count; tagset_inflight_add
 * adds n for tag under rule (after a change, from the leased counts). */
void tagset_inflight_reset(tagset *s);
void tagset_inflight_add(tagset *s, int rule, uint32_t tag, uint32_t n);

/* tagset_state_of returns the state tag uses under rule (NULL: none yet, or
 * TAGSET_NONE). */
const tagset_state *tagset_state_of(const tagset *s, int rule, uint32_t tag);

/* tagset_cut makes the bucket tag uses under rule (its own with --each,
 * made if need be; else the rule's shared one) run its first window at
 * rate_milli per second from now_ns (0, or the window's own rate or more:
 * the window as set), carrying the debt it owes, so no burst comes of it;
 * with pause_until_ns not 0 nothing passes that window before then, and
 * one unit at a time after (rl_pause_until). The after-429 cut of a tag
 * (tagthrottle.h); tagset_put puts a rule's shared window back as set.
 * SL_ENOTFOUND when rule has no rate limit; SL_ENOMEM. */
int tagset_cut(tagset *s, int rule, uint32_t tag, uint64_t rate_milli, uint64_t pause_until_ns, uint64_t now_ns);

/* tagset_rate_milli returns rule's per-second rate (its first window's long
 * run rate; 0: no limit). */
uint64_t tagset_rate_milli(const tagset *s, int rule);

#endif /* SLUICE_TAGSET_H */
