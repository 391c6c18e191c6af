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

/* The kinds of object, and the keys: core's table (conf_decl.h), from which
 * sluice.conf(5) documents them too. */
#include "conf_decl.h"

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
