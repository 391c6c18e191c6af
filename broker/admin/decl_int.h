/*
 * decl_int.h - inside the declared settings (decl.c, decl_text.c,
 * decl_export.c): one object's settings as values, the table of keys, and
 * the text of each value, the same for what the file declares and what
 * the broker runs, so that the two compare as text.
 */
#ifndef SLUICE_DECL_INT_H
#define SLUICE_DECL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "decl.h"
#include "rl.h"

/* The kinds of object a section declares. */
enum decl_kind { DECL_SINK, DECL_LEVEL, DECL_POOL, DECL_TAG, DECL_KINDS };

/* X(ID, "key", "alias" or NULL, kinds (bits of enum decl_kind), type): the
 * keys of the sections, named as the CLI's options (sluice level set
 * --aging-step: aging-step). Their order is the order export writes them. */
#define DECL_KEYS(X)                                                                  \
    X(deadline,    "deadline",    NULL,   1u << DECL_LEVEL, DURATION)                 \
    X(aging,       "aging-step",  NULL,   1u << DECL_LEVEL, DURATION)                 \
    X(size,        "size",        NULL,   1u << DECL_POOL, COUNT)                     \
    X(weight,      "weight",      NULL,   1u << DECL_TAG, COUNT)                      \
    X(max_rate,    "max-rate",    "rate", 1u << DECL_LEVEL | 1u << DECL_SINK | 1u << DECL_TAG, WINDOWS) \
    X(min_rate,    "min-rate",    NULL,   1u << DECL_LEVEL, RATE)                     \
    X(burst,       "burst",       NULL,   1u << DECL_LEVEL | 1u << DECL_SINK | 1u << DECL_TAG, COUNT) \
    X(inflight,    "inflight",    NULL,   1u << DECL_SINK | 1u << DECL_TAG, COUNT)    \
    X(each,        "each",        NULL,   1u << DECL_TAG, BOOL)                       \
    X(fair,        "fair",        NULL,   1u << DECL_LEVEL, FAIR)                     \
    X(autoscale,   "autoscale",   NULL,   1u << DECL_POOL, BOOL)                      \
    X(min,         "min",         NULL,   1u << DECL_POOL, COUNT)                     \
    X(max,         "max",         NULL,   1u << DECL_POOL, COUNT)                     \
    X(target_wait, "target-wait", NULL,   1u << DECL_POOL, DURATION)                  \
    X(paused,      "paused",      NULL,   1u << DECL_LEVEL | 1u << DECL_POOL | 1u << DECL_TAG, BOOL)

enum decl_key {
#define DECL_KEY_ENUM_(id, name, alias, kinds, type) DECL_K_##id,
    DECL_KEYS(DECL_KEY_ENUM_)
#undef DECL_KEY_ENUM_
    DECL_K_COUNT_
};

enum decl_type { DECL_DURATION, DECL_COUNT, DECL_RATE, DECL_WINDOWS, DECL_BOOL, DECL_FAIR };

typedef struct decl_key_def {
    const char *name, *alias;
    unsigned kinds;
    int type;
} decl_key_def;
extern const decl_key_def decl_keys[DECL_K_COUNT_];

#define DECL_MAX_WINDOWS RL_MAX_WINDOWS

/* One object's settings: a section of the file (set: the keys it
 * declares), or the broker's running state (every key its kind has). */
typedef struct decl_obj {
    int kind;
    char name[PROTO_MAX_TAG + 1]; /* a pool's name, a tag pattern; a level's as written */
    size_t name_len;
    unsigned level;
    int line;                     /* the section's line in the file */
    uint32_t set;                 /* bit per decl_key declared */
    int key_line[DECL_K_COUNT_];
    int exists;                   /* running: the pool or pattern exists */
    uint64_t deadline_ms, aging_ms, min_rate_milli, target_wait_ms;
    uint64_t size, weight, burst, inflight, min, max;
    int each, fair, autoscale, paused;
    unsigned nwin;                /* 0: no rate limit; a per-second window first, then the others */
    rl_window win[DECL_MAX_WINDOWS];
} decl_obj;

struct decl_list {
    decl_obj *v;
    size_t n, cap;
    char path[4096];
};

/* ---- values as text (decl_text.c) ---- */

/* decl_value_parse reads text as key's value into o (a window adds one to
 * o's windows). Returns NULL, or why it is refused (static text). */
const char *decl_value_parse(decl_obj *o, int key, const char *text);

/* decl_value_finish puts o's declared windows in their canonical order
 * (the first per-second one first), and takes a per-second window's own
 * ":BURST" as the burst. Returns NULL, or why the windows are refused. */
const char *decl_value_finish(decl_obj *o);

/* decl_value_text writes key's value of o as the file would say it,
 * canonically (the same value, the same text): a limit's windows one per
 * line, joined by '\n'. */
void decl_value_text(const decl_obj *o, int key, char *buf, size_t size);

/* decl_section_text writes o's section header ("[level high]": level_name
 * names a level; "[tag \"gold-*\"]"), quoting and escaping a name that
 * needs it. */
void decl_section_text(const decl_obj *o, const char *level_name, char *buf, size_t size);

/* ---- the running state (decl_export.c) ---- */

/* decl_running fills out with the running settings of the object o names
 * (kind, level, name), every key of its kind; exists says whether a pool
 * or pattern of that name exists (else out holds the defaults). */
void decl_running(struct bk *b, const decl_obj *o, decl_obj *out);

#endif /* SLUICE_DECL_INT_H */
