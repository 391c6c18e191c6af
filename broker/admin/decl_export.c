/*
 * decl_export.c - the running settings as sluice.conf declarations: what
 * `sluice settings export` prints, and what decl.c compares a declaration
 * with before applying it.
 *
 * decl_running reads one object's settings out of the broker (the meter's
 * limits, the levels' policies, the pool table, the tag patterns) into a
 * decl_obj; decl_value_text writes each value canonically, so an export
 * loaded into a fresh broker (at start, or on SIGHUP) exports the same
 * text again.
 *
 * What is written: the sink; every level; the pools an operator set
 * something on (a size, a pause, autoscaling: the ones that do not go away
 * by themselves, poolend.c), by name; the tag patterns in
 * their order, then the paused tags that are not patterns. A pool's size is
 * left out while autoscaling sets it, and its autoscale bounds while it
 * does not; a pattern's burst without a per-second rate, which it then
 * does not have; a tag's pause only when paused. Levels are named, pools
 * named (quoted when the name needs it), tags always quoted.
 *
 * Costs: O(levels + pools + patterns + paused tags); the text is kept in
 * one buffer, grown as needed, until the next export.
 */
#include "decl_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk.h"
#include "tagset.h"

void decl_running(bk *b, const decl_obj *o, decl_obj *out)
{
    memset(out, 0, sizeof *out);
    out->kind = o->kind;
    out->level = o->level;
    memcpy(out->name, o->name, o->name_len);
    out->name_len = o->name_len;
    out->exists = 1;
    if (o->kind == DECL_SINK || o->kind == DECL_LEVEL) {
        const meter_sink *s = &b->meter.sink;
        const meter_level *ml = &b->meter.lv[o->level];
        uint64_t rate = o->kind == DECL_SINK ? s->rate_milli : ml->max_rate_milli;
        unsigned nmore = o->kind == DECL_SINK ? s->nmore : ml->nmore;
        const rl_window *more = o->kind == DECL_SINK ? s->more : ml->more;
        if (rate)
            out->win[out->nwin++] = (rl_window){rate, 1000, 0};
        for (unsigned i = 0; i < nmore && out->nwin < DECL_MAX_WINDOWS; i++)
            out->win[out->nwin++] = more[i];
        out->burst = o->kind == DECL_SINK ? s->burst : ml->burst;
        out->inflight = s->max_inflight;
        if (o->kind == DECL_LEVEL) {
            out->deadline_ms = b->policy[o->level].deadline_ms;
            out->aging_ms = b->policy[o->level].aging_ms;
            out->min_rate_milli = ml->min_rate_milli;
            out->fair = b->q.lv[o->level].fair != NULL;
            out->paused = b->policy[o->level].paused;
        }
        return;
    }
    if (o->kind == DECL_POOL) {
        const pool *p = pool_find(&b->pools, o->name, o->name_len);
        out->exists = p != NULL;
        out->size = p ? p->size : 0;
        out->paused = p ? p->paused : 0;
        out->autoscale = p ? p->autoscale : 0;
        out->min = p ? p->min_size : 1;
        out->max = p ? p->max_size : 64;
        out->target_wait_ms = p ? p->target_wait_ms : 1000;
        return;
    }
    const tagset *ts = b->q.tags;
    int at = ts ? tagset_find(ts, o->name, o->name_len) : TAGSET_NONE;
    out->exists = at != TAGSET_NONE;
    out->paused = ts && tagset_is_paused(ts, o->name, o->name_len);
    out->weight = 1;
    if (at == TAGSET_NONE)
        return;
    const tagset_rule *r = &ts->rules[at];
    out->weight = r->weight;
    out->inflight = r->max_inflight;
    out->each = r->each;
    for (unsigned i = 0; i < r->nwin && out->nwin < DECL_MAX_WINDOWS; i++)
        out->win[out->nwin++] = r->win[i];
    if (out->nwin && out->win[0].period_ms == 1000) { /* its burst is the burst key's */
        out->burst = out->win[0].burst;
        out->win[0].burst = 0;
    }
}

/* ---- the text ---- */

static struct {
    char *v;
    size_t len, cap;
    int failed;
} out;

__attribute__((format(printf, 1, 2))) static void put(const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2 && !out.failed; tries++) {
        va_start(ap, fmt);
        int n = vsnprintf(out.v ? out.v + out.len : NULL, out.v ? out.cap - out.len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            out.failed = 1;
            return;
        }
        if (out.v && out.len + (size_t)n < out.cap) {
            out.len += (size_t)n;
            return;
        }
        size_t cap = (out.cap ? out.cap : 4096) * 2;
        while (cap < out.len + (size_t)n + 1)
            cap *= 2;
        char *v = realloc(out.v, cap);
        if (!v) {
            out.failed = 1;
            return;
        }
        out.v = v;
        out.cap = cap;
    }
}

/* section writes o's header and the keys of its kind that export writes. */
static void section(bk *b, const decl_obj *o)
{
    char text[1024];
    decl_section_text(o, o->kind == DECL_LEVEL ? b->cfg.level_names[o->level] : NULL, text, sizeof text);
    put("\n%s\n", text);
    for (int k = 0; k < DECL_K_COUNT_; k++) {
        if (!(decl_keys[k].kinds >> o->kind & 1))
            continue;
        if (o->kind == DECL_POOL && (k == DECL_K_size ? o->autoscale
                                     : (k == DECL_K_min || k == DECL_K_max || k == DECL_K_target_wait) && !o->autoscale))
            continue;
        if (o->kind == DECL_TAG && ((k == DECL_K_paused && !o->paused) || (k != DECL_K_paused && !o->exists) ||
                                    (k == DECL_K_burst && !(o->nwin && o->win[0].period_ms == 1000))))
            continue; /* a paused tag that is no pattern: its pause alone */
        decl_value_text(o, k, text, sizeof text);
        for (char *line = text, *next; line; line = next) { /* a limit's windows: the key once each */
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            put("%s = %s\n", decl_keys[k].name, line);
        }
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const pool *const *)a)->name, (*(const pool *const *)b)->name);
}

int decl_export(bk *b, proto_msg *rep, char *text, size_t text_len)
{
    decl_obj which, now;
    out.len = 0;
    out.failed = 0;
    put("# The running settings of levels, the sink, pools and tag patterns, as sluice.conf declarations\n"
        "# (sluice settings export; sluice.conf(5)). At start and on SIGHUP sluiced applies what a\n"
        "# config file declares; what it does not declare keeps its stored value.\n");
    memset(&which, 0, sizeof which);
    which.kind = DECL_SINK;
    decl_running(b, &which, &now);
    section(b, &now);
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        which.kind = DECL_LEVEL;
        which.level = l;
        decl_running(b, &which, &now);
        section(b, &now);
    }
    which.kind = DECL_POOL;
    const pool *sorted[PROTO_MAX_POOLS];
    unsigned np = b->pools.n < PROTO_MAX_POOLS ? b->pools.n : PROTO_MAX_POOLS;
    memcpy(sorted, b->pools.v, np * sizeof sorted[0]);
    qsort(sorted, np, sizeof sorted[0], by_name); /* the table's order is not kept across a restart */
    for (unsigned i = 0; i < np; i++) {
        const pool *p = sorted[i];
        if (!p->size && !p->paused && !p->autoscale)
            continue; /* made by a consumer naming it, and reaped once idle: nothing set on it */
        which.name_len = strlen(p->name);
        memcpy(which.name, p->name, which.name_len);
        decl_running(b, &which, &now);
        section(b, &now);
    }
    const tagset *ts = b->q.tags;
    which.kind = DECL_TAG;
    for (unsigned i = 0; ts && i < ts->n; i++) {
        which.name_len = strlen(ts->rules[i].pattern);
        memcpy(which.name, ts->rules[i].pattern, which.name_len);
        decl_running(b, &which, &now);
        section(b, &now);
    }
    for (unsigned i = 0; ts && i < ts->npaused; i++) {
        which.name_len = strlen(ts->paused[i]);
        memcpy(which.name, ts->paused[i], which.name_len);
        if (tagset_find(ts, which.name, which.name_len) != TAGSET_NONE)
            continue; /* in its pattern's section */
        decl_running(b, &which, &now);
        section(b, &now);
    }
    if (out.failed) {
        snprintf(text, text_len, "out of memory writing the settings");
        return SL_ENOMEM;
    }
    proto_set_str(rep, PROTO_F_body, out.v, out.len);
    return SL_OK;
}
