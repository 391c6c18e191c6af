/*
 * tagset.c - the patterns of per-tag settings and the paused tags (see
 * tagset.h for the rule, the state and the costs).
 *
 * Rules sit in one array in their order (first set, first matched); a
 * deleted rule's successors move up one, so rule indexes change with
 * tagset.gen and callers that cache an index check the generation. Paused
 * tags are a second array of names. Both are bounded (TAGSET_MAX_RULES,
 * TAGSET_MAX_PAUSED), so a match is at most a few thousand compares.
 *
 * A rule's buckets follow its windows with rl_set_window, which carries the
 * debt already owed, so setting a pattern again never lets a burst through.
 * With --each, the per-tag states are an open-addressing table (linear
 * probing, load at most 1/2) that only grows: a tag keeps its state until
 * its rule changes or goes, when the table is dropped with it.
 *
 * tagset_cut lowers a bucket's first window for a while (the cut after a
 * tag's own 429, kept and climbed back by tagthrottle.c through
 * settle_tag.c): the same period at a lower count, debt carried, so the
 * settings here stay as stored and a change of them writes the window
 * afresh (the next tick writes the cut again).
 */
#include "tagset.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "sluice_errors.h"


/* A rule's per-tag states by tag id (hash.h). */
static uint32_t state_hash(const void *owner, uint32_t pos)
{
    return hash_u32(((const tagset_rule *)owner)->states[pos].tag);
}

static int state_is(const void *owner, uint32_t pos, const void *tag)
{
    return ((const tagset_rule *)owner)->states[pos].tag == *(const uint32_t *)tag;
}

static const hash_ops state_ops = {state_hash, state_is};

/* rule_states_free forgets r's per-tag states. */
static void rule_states_free(tagset_rule *r)
{
    free(r->states);
    r->states = NULL;
    r->nstates = 0;
    r->states_cap = 0;
    hash_fini(&r->index);
}

void tagset_init(tagset *s)
{
    memset(s, 0, sizeof *s);
    s->next_order = 1;
    s->gen = 1; /* a tag that never matched holds 0 */
}

void tagset_fini(tagset *s)
{
    for (unsigned i = 0; i < s->n; i++)
        rule_states_free(&s->rules[i]);
    free(s->rules);
    free(s->paused);
    uint32_t gen = s->gen;
    tagset_init(s);
    s->gen = gen + 1; /* what was matched before is stale */
}

static int text_ok(const char *t, size_t len)
{
    return len > 0 && len <= PROTO_MAX_TAG && memchr(t, '\0', len) == NULL;
}

int tagset_find(const tagset *s, const char *pattern, size_t len)
{
    for (unsigned i = 0; i < s->n; i++)
        if (strlen(s->rules[i].pattern) == len && memcmp(s->rules[i].pattern, pattern, len) == 0)
            return (int)i;
    return TAGSET_NONE;
}

/* is_glob tells whether fnmatch (flags 0) may read ch as more than itself. */
static int is_glob(char ch)
{
    return ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '\\';
}

/* literal_ends finds x's literal prefix and suffix: the characters before
 * its first glob character and after its last. A tag the pattern matches
 * starts with the one and ends with the other, so a tag that does not is
 * refused without fnmatch. */
static void literal_ends(tagset_rule *x)
{
    size_t len = strlen(x->pattern), p = 0, q = len;
    while (p < len && !is_glob(x->pattern[p]))
        p++;
    x->literal = p == len;
    while (q > p && !is_glob(x->pattern[q - 1]))
        q--;
    x->len = (uint16_t)len;
    x->plen = (uint16_t)p;
    x->slen = (uint16_t)(x->literal ? 0 : len - q);
}

/* state_follow makes st's buckets follow windows w[0..n) at now_ns. */
static void state_follow(tagset_state *st, const rl_window *w, unsigned n, uint64_t now_ns)
{
    for (unsigned i = 0; i < n; i++)
        rl_set_window(&st->b[i], &w[i], now_ns);
}

int tagset_put(tagset *s, const tagset_rule *r, uint64_t now_ns)
{
    size_t len = strnlen(r->pattern, sizeof r->pattern);
    if (!text_ok(r->pattern, len) || r->weight < 1 || r->weight > TAGSET_MAX_WEIGHT || r->nwin > RL_MAX_WINDOWS)
        return SL_EINVAL;
    rl_window w[RL_MAX_WINDOWS];
    unsigned nw = 0;
    for (unsigned i = 0; i < r->nwin; i++)
        if (r->win[i].count_milli)
            w[nw++] = r->win[i];
    int at = tagset_find(s, r->pattern, len);
    tagset_rule *x;
    if (at == TAGSET_NONE) {
        if (s->n >= TAGSET_MAX_RULES)
            return SL_EFULL;
        if (s->n == s->cap) {
            tagset_rule *v = grow_array(s->rules, &s->cap, (size_t)s->n + 1, sizeof *v, 8);
            if (!v)
                return SL_ENOMEM;
            s->rules = v;
        }
        x = &s->rules[s->n++];
        memset(x, 0, sizeof *x);
        memcpy(x->pattern, r->pattern, len);
        literal_ends(x);
        x->order = r->order ? r->order : s->next_order;
        if (x->order >= s->next_order)
            s->next_order = x->order + 1;
    } else {
        x = &s->rules[at];
    }
    int was_each = x->each;
    x->weight = r->weight;
    x->max_inflight = r->max_inflight;
    x->each = r->each != 0;
    if (nw != x->nwin || memcmp(w, x->win, nw * sizeof *w) != 0 || was_each != x->each) {
        if (nw != x->nwin) /* a window added or gone: fresh buckets for the new shape */
            memset(x->shared.b, 0, sizeof x->shared.b);
        x->nwin = nw;
        memcpy(x->win, w, nw * sizeof *w);
        rule_states_free(x); /* per-tag states start again under the new windows */
    }
    state_follow(&x->shared, x->win, x->nwin, now_ns);
    s->gen++;
    return SL_OK;
}

int tagset_del(tagset *s, const char *pattern, size_t len)
{
    int at = tagset_find(s, pattern, len);
    if (at == TAGSET_NONE)
        return SL_ENOTFOUND;
    rule_states_free(&s->rules[at]);
    memmove(&s->rules[at], &s->rules[at + 1], (s->n - (unsigned)at - 1) * sizeof *s->rules);
    s->n--;
    s->gen++;
    return SL_OK;
}

static int paused_at(const tagset *s, const char *tag, size_t len)
{
    for (unsigned i = 0; i < s->npaused; i++)
        if (strlen(s->paused[i]) == len && memcmp(s->paused[i], tag, len) == 0)
            return (int)i;
    return -1;
}

int tagset_is_paused(const tagset *s, const char *tag, size_t len)
{
    return paused_at(s, tag, len) >= 0;
}

int tagset_pause(tagset *s, const char *tag, size_t len, int paused)
{
    if (!text_ok(tag, len))
        return SL_EINVAL;
    int at = paused_at(s, tag, len);
    if (!paused) {
        if (at >= 0) {
            memmove(s->paused[at], s->paused[at + 1], (s->npaused - (unsigned)at - 1) * sizeof *s->paused);
            s->npaused--;
            s->gen++;
        }
        return SL_OK;
    }
    if (at >= 0)
        return SL_OK;
    if (s->npaused >= TAGSET_MAX_PAUSED)
        return SL_EFULL;
    if (s->npaused == s->paused_cap) {
        char(*v)[PROTO_MAX_TAG + 1] = grow_array(s->paused, &s->paused_cap, (size_t)s->npaused + 1, sizeof *v, 8);
        if (!v)
            return SL_ENOMEM;
        s->paused = v;
    }
    memcpy(s->paused[s->npaused], tag, len);
    s->paused[s->npaused++][len] = '\0';
    s->gen++;
    return SL_OK;
}

int tagset_match(const tagset *s, const char *tag, size_t len)
{
    char t[PROTO_MAX_TAG + 1];
    if (len > PROTO_MAX_TAG)
        len = PROTO_MAX_TAG;
    memcpy(t, tag, len);
    t[len] = '\0';
    for (unsigned i = 0; i < s->n; i++) {
        const tagset_rule *x = &s->rules[i];
        if (x->literal) { /* an exact tag */
            if (x->plen == len && memcmp(x->pattern, t, len) == 0)
                return (int)i;
            continue;
        }
        if (x->plen + x->slen > len || memcmp(x->pattern, t, x->plen) != 0 ||
            memcmp(x->pattern + x->len - x->slen, t + len - x->slen, x->slen) != 0)
            continue; /* its literal ends do not fit: fnmatch could not match */
        if (fnmatch(x->pattern, t, 0) == 0)
            return (int)i;
    }
    return TAGSET_NONE;
}

uint32_t tagset_weight(const tagset *s, int rule)
{
    return rule >= 0 && (unsigned)rule < s->n ? s->rules[rule].weight : 1;
}

uint64_t tagset_rate_milli(const tagset *s, int rule)
{
    if (rule < 0 || (unsigned)rule >= s->n || !s->rules[rule].nwin)
        return 0;
    return rl_window_rate_milli(&s->rules[rule].win[0]);
}

/* ---- states ---- */

static tagset_state *slot_find(const tagset_rule *r, uint32_t tag)
{
    uint32_t pos;
    return hash_find(&r->index, hash_u32(tag), &tag, &state_ops, r, &pos) ? &r->states[pos] : NULL;
}

static tagset_state *slot_require(tagset_rule *r, uint32_t tag, uint64_t now_ns)
{
    tagset_state *st = slot_find(r, tag);
    if (st)
        return st;
    tagset_state *v = grow_array(r->states, &r->states_cap, (size_t)r->nstates + 1, sizeof *v, 16);
    if (!v)
        return NULL;
    r->states = v;
    if (hash_fit(&r->index, r->nstates + 1, &state_ops, r) != SL_OK)
        return NULL;
    st = &r->states[r->nstates];
    memset(st, 0, sizeof *st);
    st->tag = tag;
    state_follow(st, r->win, r->nwin, now_ns); /* a new tag's buckets start full */
    hash_put(&r->index, hash_u32(tag), &tag, &state_ops, r, r->nstates++);
    return st;
}

const tagset_state *tagset_state_of(const tagset *s, int rule, uint32_t tag)
{
    if (rule < 0 || (unsigned)rule >= s->n)
        return NULL;
    const tagset_rule *r = &s->rules[rule];
    return r->each ? slot_find(r, tag) : &r->shared;
}

tagset_hold tagset_admit(tagset *s, int rule, int paused, uint32_t tag, uint64_t cost, uint64_t now_ns,
                         uint64_t *retry_ns)
{
    if (paused)
        return TAGSET_PAUSED;
    const tagset_state *st = tagset_state_of(s, rule, tag);
    if (!st) /* no rule, or a tag its --each rule has not charged yet: all full */
        return TAGSET_GO;
    const tagset_rule *r = &s->rules[rule];
    if (r->max_inflight && st->inflight >= r->max_inflight)
        return TAGSET_INFLIGHT;
    if (r->nwin && !rl_series_allows(st->b, r->nwin, cost, now_ns, retry_ns))
        return TAGSET_RATE;
    return TAGSET_GO;
}

int tagset_cut(tagset *s, int rule, uint32_t tag, uint64_t rate_milli, uint64_t pause_until_ns, uint64_t now_ns)
{
    if (rule < 0 || (unsigned)rule >= s->n || !s->rules[rule].nwin)
        return SL_ENOTFOUND;
    tagset_rule *r = &s->rules[rule];
    tagset_state *st = r->each ? slot_require(r, tag, now_ns) : &r->shared;
    if (!st)
        return SL_ENOMEM;
    rl_window w = r->win[0];
    if (rate_milli && rate_milli < rl_window_rate_milli(&w)) { /* the same period, a lower count */
        uint64_t count = rate_milli * w.period_ms / 1000;
        w.count_milli = count ? count : 1;
    }
    rl_set_window(&st->b[0], &w, now_ns);
    if (pause_until_ns)
        rl_pause_until(&st->b[0], pause_until_ns);
    return SL_OK;
}

static tagset_state *state_require(tagset *s, int rule, uint32_t tag, uint64_t now_ns)
{
    if (rule < 0 || (unsigned)rule >= s->n)
        return NULL;
    tagset_rule *r = &s->rules[rule];
    if (!r->each)
        return &r->shared;
    if (!r->nwin && !r->max_inflight)
        return NULL; /* nothing to keep per tag */
    return slot_require(r, tag, now_ns);
}

int tagset_charge(tagset *s, int rule, uint32_t tag, uint64_t cost, uint64_t now_ns)
{
    if (rule < 0 || (unsigned)rule >= s->n)
        return SL_OK;
    tagset_state *st = state_require(s, rule, tag, now_ns);
    if (!st)
        return s->rules[rule].each && (s->rules[rule].nwin || s->rules[rule].max_inflight) ? SL_ENOMEM : SL_OK;
    st->inflight++;
    rl_series_take(st->b, s->rules[rule].nwin, cost, now_ns);
    return SL_OK;
}

void tagset_release(tagset *s, int rule, uint32_t tag)
{
    if (rule < 0 || (unsigned)rule >= s->n)
        return;
    tagset_rule *r = &s->rules[rule];
    tagset_state *st = r->each ? slot_find(r, tag) : &r->shared;
    if (st && st->inflight)
        st->inflight--;
}

void tagset_inflight_reset(tagset *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        tagset_rule *r = &s->rules[i];
        r->shared.inflight = 0;
        for (uint32_t k = 0; k < r->nstates; k++)
            r->states[k].inflight = 0;
    }
}

void tagset_inflight_add(tagset *s, int rule, uint32_t tag, uint32_t n)
{
    tagset_state *st = state_require(s, rule, tag, 0);
    if (st)
        st->inflight += n;
}
