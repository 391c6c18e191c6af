/*
 * admin_tag.c - the tag commands: tag.set, tag.list, tag.pause and
 * tag.resume, the per-tag settings of levels served fair by tag.
 *
 * tag.set names a pattern (the request's tag field, a glob) and carries
 * what changes in one tag row (weight, max_inflight, each, off, burst) and
 * the rate's windows as window rows, as level.set does. The settings live in
 * q.tags (tagset.h), are written to meta in the same pass (settings.c) and
 * take effect at once: queue_fair_tags_changed counts the tags in flight
 * again and lets every tag held by a pause or a cap be looked at again.
 *
 * tag.list answers with a row per pattern (the first LIST_PATTERNS, in their
 * order) and then a row per tag, the tags with the most messages waiting
 * first: every tag with something ready or in flight in a fair level, and
 * the paused ones and those throttled by their service (a THROTTLED for
 * their tag alone: the pause left and the cut rate, settle_tag.c). A tag's
 * depth is counted when asked, not kept: one seek for its head's age and
 * its run's keys stepped by one cursor, no record read (up to
 * QUEUE_FAIR_COUNT_MAX each, LIST_COUNT_BUDGET keys in all: past it, the
 * other tags show the ready messages counted so far, at least their
 * returned ones); nothing is spent on it while messages flow. Matching
 * each tag to its pattern is a compare of literal ends per pattern
 * (tagset_match), not an fnmatch each.
 *
 * Bad input (an empty pattern, a weight of 0 or over 1,000, a bad window,
 * more than TAGSET_MAX_RULES patterns or TAGSET_MAX_PAUSED paused tags) is
 * SL_EINVAL with a sentence and a log line; nothing changes.
 */
#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "settle_tag.h"
#include "store.h"
#include "tagset.h"
#include "tagthrottle.h"
#include "units.h"

#define LIST_PATTERNS 16          /* pattern rows in tag.list; the tags fill the rest */
#define LIST_ROWS 48              /* rows in all, and at most LIST_WINDOWS window rows: a reply of */
#define LIST_WINDOWS 32           /* 48 x 31 + 32 x 11 msgpack objects stays below PROTO_MAX_OBJECTS */
#define MAX_INFLIGHT 1000000u
#define LIST_COUNT_BUDGET 1000000 /* keys counted per tag.list: a few tens of ms of the loop at most */

/* Strings the reply's rows point at (one broker per process, one command at a time). */
static char row_text[PROTO_MAX_ARRAY][2][PROTO_MAX_NAME + 1];

/* fail writes why a tag command is refused into text, logs it, and
 * returns code. */
static int fail(char *text, size_t text_len, int code, const char *fmt, const char *arg)
{
    snprintf(text, text_len, fmt, arg);
    log_warn("admin", "tag command refused (%s): %s", proto_errname(code), text);
    return code;
}

/* name_of copies s[0..len) into text, cut at a UTF-8 boundary to
 * PROTO_MAX_NAME bytes, and returns it as a proto_buf. */
static proto_buf name_of(char *text, const char *s, size_t len)
{
    if (len > PROTO_MAX_NAME)
        len = proto_utf8_prefix(s, PROTO_MAX_NAME);
    memcpy(text, s, len);
    text[len] = '\0';
    return (proto_buf){text, (uint32_t)len};
}

/* pattern_arg reads the request's pattern (or tag) into buf. */
static int pattern_arg(const proto_msg *req, char *buf, char *text, size_t text_len)
{
    if (req->tag.len == 0)
        return fail(text, text_len, SL_EINVAL, "%s", "a tag pattern must not be empty");
    memcpy(buf, req->tag.ptr, req->tag.len);
    buf[req->tag.len] = '\0';
    if (strlen(buf) != req->tag.len)
        return fail(text, text_len, SL_EINVAL, "%s", "a tag pattern must not hold a NUL byte");
    return SL_OK;
}

int admin_tag_set(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len)
{
    tagset *ts = b->q.tags;
    char pattern[PROTO_MAX_TAG + 1], num[32];
    (void)rep;
    int rc = pattern_arg(req, pattern, text, text_len);
    if (rc)
        return rc;
    if ((req->present & PF(tag_rows)) && req->tag_rows.n > 1)
        return fail(text, text_len, SL_EINVAL, "%s", "tag.set takes one tag row");
    const proto_row_tag *row = (req->present & PF(tag_rows)) && req->tag_rows.n ? &req->tag_rows.v[0] : NULL;
    uint32_t has = row ? row->present : 0;
#define HAS(col) (has & (1u << PROTO_COL_tag_##col))
    int at = tagset_find(ts, pattern, req->tag.len);
    if (HAS(off) && row->off) {
        if (at == TAGSET_NONE)
            return fail(text, text_len, SL_ENOTFOUND, "no settings for tag pattern '%s'", pattern);
        uint32_t order = ts->rules[at].order;
        tagset_del(ts, pattern, req->tag.len);
        settings_del_tag_rule(b, order);
        queue_fair_tags_changed(&b->q);
        log_info("admin", "tag pattern '%s': settings removed (%u patterns left)", pattern, ts->n);
        return SL_OK;
    }
    tagset_rule r;
    if (at != TAGSET_NONE) {
        r = ts->rules[at];
        r.states = NULL; /* (settings only: the table keeps its states) */
        r.nstates = 0;
        r.states_cap = 0;
        r.index = (hash_index){0};
    } else {
        memset(&r, 0, sizeof r);
        memcpy(r.pattern, pattern, req->tag.len + 1);
        r.weight = 1;
    }
    if (HAS(weight)) {
        if (row->weight < 1 || row->weight > TAGSET_MAX_WEIGHT) {
            snprintf(num, sizeof num, "%d", TAGSET_MAX_WEIGHT);
            return fail(text, text_len, SL_EINVAL, "a tag's weight is a whole number from 1 to %s", num);
        }
        r.weight = (uint32_t)row->weight;
    }
    if (HAS(max_inflight)) {
        if (row->max_inflight > MAX_INFLIGHT)
            return fail(text, text_len, SL_EINVAL, "a tag's in-flight cap must be at most %s (0: none)", "1000000");
        r.max_inflight = (uint32_t)row->max_inflight;
    }
    if (HAS(each))
        r.each = row->each != 0;
    if (req->present & PF(window_rows)) { /* every window, replacing what the pattern had */
        admin_limit lim;
        if ((rc = admin_windows_take(&req->window_rows, &lim, text, text_len)) != SL_OK) {
            log_warn("admin", "tag command refused (%s): %s", proto_errname(rc), text);
            return rc;
        }
        uint32_t old_burst = r.nwin && r.win[0].period_ms == 1000 ? r.win[0].burst : 1;
        r.nwin = 0;
        if (lim.rate_milli)
            r.win[r.nwin++] = (rl_window){lim.rate_milli, 1000, lim.burst ? lim.burst : old_burst};
        for (unsigned i = 0; i < lim.nmore; i++)
            r.win[r.nwin++] = lim.more[i];
    }
    if (HAS(burst)) {
        if (row->burst > ADMIN_MAX_BURST)
            return fail(text, text_len, SL_EINVAL, "burst must be at most %s", "1000000");
        if (!r.nwin || r.win[0].period_ms != 1000)
            return fail(text, text_len, SL_EINVAL, "%s", "a burst needs a per-second rate (--max-rate N)");
        r.win[0].burst = row->burst ? (uint32_t)row->burst : 1;
    }
    rc = tagset_put(ts, &r, b->mono_ns);
    if (rc == SL_EFULL) {
        snprintf(num, sizeof num, "%d", TAGSET_MAX_RULES);
        return fail(text, text_len, SL_EINVAL, "at most %s tag patterns: remove one (tag set PATTERN --off) first",
                    num);
    }
    if (rc != SL_OK)
        return fail(text, text_len, rc == SL_ENOMEM ? SL_ENOMEM : SL_EINVAL, "cannot set tag pattern '%s'", pattern);
    at = tagset_find(ts, pattern, req->tag.len);
    settings_save_tag_rule(b, &ts->rules[at]);
    queue_fair_tags_changed(&b->q);
    const tagset_rule *x = &ts->rules[at];
    log_info("admin", "tag pattern '%s' (#%d of %u): weight %u, in-flight cap %u, rate %.3f/s (%u windows), %s",
             pattern, at + 1, ts->n, x->weight, x->max_inflight, (double)tagset_rate_milli(ts, at) / 1000.0,
             x->nwin, x->each ? "a bucket per tag" : "one bucket shared");
#undef HAS
    return SL_OK;
}

int admin_tag_pause(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len, int paused)
{
    char tag[PROTO_MAX_TAG + 1], num[32];
    (void)rep;
    int rc = pattern_arg(req, tag, text, text_len);
    if (rc)
        return rc;
    rc = tagset_pause(b->q.tags, tag, req->tag.len, paused);
    if (rc == SL_EFULL) {
        snprintf(num, sizeof num, "%d", TAGSET_MAX_PAUSED);
        return fail(text, text_len, SL_EINVAL, "at most %s paused tags: resume one first", num);
    }
    if (rc != SL_OK)
        return fail(text, text_len, rc, "cannot pause tag '%s'", tag);
    settings_save_tag_pause(b, tag, req->tag.len, paused);
    queue_fair_tags_changed(&b->q);
    log_info("admin", "tag '%s' %s", tag, paused ? "paused" : "resumed");
    return SL_OK;
}

/* ---- tag.list ---- */

typedef struct listed {
    queue_fair_tag t;
    unsigned level;
} listed;

static int by_depth(const void *a, const void *b)
{
    const listed *x = a, *y = b;
    if (x->t.depth != y->t.depth)
        return x->t.depth < y->t.depth ? 1 : -1;
    if (x->t.leased != y->t.leased)
        return x->t.leased < y->t.leased ? 1 : -1;
    return x->t.tag < y->t.tag ? -1 : x->t.tag > y->t.tag;
}

/* limit_cols fills a row's settings from rule (weight, cap, rate, burst,
 * each) and the tokens of state st (NULL: a full bucket). */
static void limit_cols(const tagset *ts, int rule, const tagset_state *st, uint64_t now_ns, proto_row_tag *r)
{
    r->weight = tagset_weight(ts, rule);
    r->present |= 1u << PROTO_COL_tag_weight;
    if (rule == TAGSET_NONE)
        return;
    const tagset_rule *x = &ts->rules[rule];
    r->max_inflight = x->max_inflight;
    r->each = (uint64_t)x->each;
    r->rate_milli = tagset_rate_milli(ts, rule);
    r->burst = x->nwin ? x->win[0].burst : 0;
    r->present |= 1u << PROTO_COL_tag_max_inflight | 1u << PROTO_COL_tag_each | 1u << PROTO_COL_tag_rate_milli |
                  1u << PROTO_COL_tag_burst;
    if (x->nwin) {
        uint64_t tokens = st ? rl_tokens_milli(&st->b[0], now_ns) : (uint64_t)x->win[0].burst * 1000;
        r->tokens_milli = tokens == UINT64_MAX ? 0 : tokens;
        r->present |= 1u << PROTO_COL_tag_tokens_milli;
    }
}

/* throttle_cols fills a tag row's throttled_ms and effective_rate_milli
 * from what THROTTLEDs for the tag alone left on it (absent: nothing). */
static void throttle_cols(const bk *b, const char *tag, int rule, proto_row_tag *r)
{
    uint64_t paused_ms, rate_milli;
    if (!settle_tag_state(b, tag, strlen(tag), rule, &paused_ms, &rate_milli))
        return;
    if (paused_ms) {
        r->throttled_ms = paused_ms;
        r->present |= 1u << PROTO_COL_tag_throttled_ms;
    }
    if (rate_milli) {
        r->effective_rate_milli = rate_milli;
        r->present |= 1u << PROTO_COL_tag_effective_rate_milli;
    }
}

/* listed_already tells whether rows[0..n) has a tag row for tag. */
static int listed_already(const proto_rows_tag *rows, const char *tag)
{
    for (uint32_t k = 0; k < rows->n; k++)
        if ((rows->v[k].present & (1u << PROTO_COL_tag_tag)) && rows->v[k].tag.len == strlen(tag) &&
            memcmp(rows->v[k].tag.ptr, tag, rows->v[k].tag.len) == 0)
            return 1;
    return 0;
}

/* extra_row adds a row, without a level, for tag (paused, or throttled by
 * its service, with nothing waiting in a fair level). */
static void extra_row(bk *b, proto_rows_tag *rows, const char *tag, int paused)
{
    const tagset *ts = b->q.tags;
    proto_row_tag *r = &rows->v[rows->n];
    *r = (proto_row_tag){.present = 1u << PROTO_COL_tag_tag | 1u << PROTO_COL_tag_paused, .paused = (uint64_t)paused};
    r->tag = name_of(row_text[rows->n][0], tag, strlen(tag));
    int rule = tagset_match(ts, tag, strlen(tag));
    if (rule != TAGSET_NONE) {
        const char *pat = ts->rules[rule].pattern;
        r->pattern = name_of(row_text[rows->n][1], pat, strlen(pat));
        r->present |= 1u << PROTO_COL_tag_pattern;
    }
    limit_cols(ts, rule, NULL, b->mono_ns, r);
    throttle_cols(b, tag, rule, r);
    rows->n++;
}

int admin_tag_list(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len)
{
    tagset *ts = b->q.tags;
    proto_rows_tag *rows = &rep->tag_rows;
    proto_rows_window *wins = &rep->window_rows;
    (void)req;
    rep->present |= PF(tag_rows);
    rows->n = 0;
    for (unsigned i = 0; i < ts->n && rows->n < LIST_PATTERNS; i++) {
        const tagset_rule *x = &ts->rules[i];
        proto_row_tag *r = &rows->v[rows->n];
        *r = (proto_row_tag){.present = 1u << PROTO_COL_tag_pattern | 1u << PROTO_COL_tag_order,
                             .order = i + 1};
        r->pattern = name_of(row_text[rows->n][0], x->pattern, strlen(x->pattern));
        limit_cols(ts, (int)i, x->each ? NULL : &x->shared, b->mono_ns, r);
        if (!x->each) {
            r->inflight = x->shared.inflight;
            r->effective_rate_milli = settle_tag_pattern_cut(b, x->pattern); /* its shared bucket, cut */
            r->present |= 1u << PROTO_COL_tag_inflight |
                          (r->effective_rate_milli ? 1u << PROTO_COL_tag_effective_rate_milli : 0);
        }
        for (unsigned w = 0; w < x->nwin && wins->n < LIST_WINDOWS; w++) {
            uint64_t tokens = x->each ? (uint64_t)x->win[w].burst * 1000 : rl_tokens_milli(&x->shared.b[w], b->mono_ns);
            wins->v[wins->n++] = (proto_row_window){.present = PROTO_ROW_ALL(window), .level = rows->n,
                                                    .count_milli = x->win[w].count_milli,
                                                    .period_ms = x->win[w].period_ms, .burst = x->win[w].burst,
                                                    .tokens_milli = tokens == UINT64_MAX ? 0 : tokens};
        }
        rows->n++;
    }
    /* the tags: every fair level's, then the paused ones not among them;
     * their depths counted within LIST_COUNT_BUDGET keys in all */
    size_t total = 0, n = 0;
    uint64_t budget = LIST_COUNT_BUDGET;
    for (unsigned l = 0; l < b->cfg.levels; l++)
        total += queue_fair_tags(&b->q, l, NULL, 0, &budget);
    listed *v = malloc((total + ts->npaused + 1) * sizeof *v);
    queue_fair_tag *buf = malloc((total + 1) * sizeof *buf);
    if (!v || !buf) {
        free(v);
        free(buf);
        return fail(text, text_len, SL_ENOMEM, "%s", "out of memory listing the tags");
    }
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        uint32_t k = queue_fair_tags(&b->q, l, buf, (uint32_t)(total - n), &budget);
        for (uint32_t i = 0; i < k && n < total; i++)
            v[n++] = (listed){buf[i], l};
    }
    free(buf);
    qsort(v, n, sizeof *v, by_depth);
    for (size_t i = 0; i < n && rows->n < LIST_ROWS; i++) {
        char name[PROTO_MAX_TAG + 1];
        const listed *t = &v[i];
        proto_row_tag *r = &rows->v[rows->n];
        if (store_tag_name(b->st, t->t.tag, name, sizeof name) != SL_OK)
            snprintf(name, sizeof name, "#%u", t->t.tag);
        *r = (proto_row_tag){.present = 1u << PROTO_COL_tag_tag | 1u << PROTO_COL_tag_level |
                                        1u << PROTO_COL_tag_depth | 1u << PROTO_COL_tag_inflight |
                                        1u << PROTO_COL_tag_oldest_ms | 1u << PROTO_COL_tag_paused,
                             .level = t->level, .depth = t->t.depth, .inflight = t->t.leased,
                             .paused = (uint64_t)t->t.paused,
                             .oldest_ms = t->t.oldest_ns && b->wall_ns > t->t.oldest_ns
                                              ? (b->wall_ns - t->t.oldest_ns) / NS_PER_MS : 0};
        r->tag = name_of(row_text[rows->n][0], name, strlen(name));
        if (t->t.rule != TAGSET_NONE) {
            const char *p = ts->rules[t->t.rule].pattern;
            r->pattern = name_of(row_text[rows->n][1], p, strlen(p));
            r->present |= 1u << PROTO_COL_tag_pattern;
        }
        limit_cols(ts, t->t.rule, tagset_state_of(ts, t->t.rule, t->t.tag), b->mono_ns, r);
        throttle_cols(b, name, t->t.rule, r);
        rows->n++;
    }
    /* paused tags, and tags throttled by their service, with nothing waiting: a row each, without a level */
    for (unsigned i = 0; i < ts->npaused && rows->n < LIST_ROWS; i++)
        if (!listed_already(rows, ts->paused[i]))
            extra_row(b, rows, ts->paused[i], 1);
    const tagthrottle *tt = b->q.throttled;
    for (uint32_t i = 0; tt && i < tt->n && rows->n < LIST_ROWS; i++)
        if (!tt->v[i].pattern && tt->v[i].paused_until_ns > b->mono_ns && !listed_already(rows, tt->v[i].name))
            extra_row(b, rows, tt->v[i].name, tagset_is_paused(ts, tt->v[i].name, strlen(tt->v[i].name)));
    free(v);
    if (wins->n)
        rep->present |= PF(window_rows);
    return SL_OK;
}
