/*
 * tagthrottle.c - the table of throttled tags and cut tag buckets (see
 * tagthrottle.h for what an entry means, the bound and the costs).
 *
 * Entries sit in one dense array; two open-addressing tables (linear
 * probing, load at most 1/2) find them: by tag id, for the fair pick's
 * question "is this tag paused", and by kind and name, for settlements,
 * tag.list and explain. Both tables are rebuilt whenever an entry comes or
 * goes: that happens at the rate of 429s from new tags and of recoveries,
 * never per pick, and the table holds at most TAGTHROTTLE_MAX entries. A
 * rebuild reuses the tables when they are big enough, so only a growth can
 * fail; they go with the last entry.
 *
 * An entry is kept while it matters: its pause has not ended, its bucket
 * runs below its base, or its last cut is under AIMD_CALM_NS old (a 429
 * then is a repeated one, which cuts harder). When the table is full, a
 * new entry takes the place of one that holds only that last memory (the
 * oldest cut first); an entry that still pauses or cuts is never evicted,
 * since nothing would then lift what it holds.
 */
#include "tagthrottle.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "sluice_errors.h"

void tagthrottle_init(tagthrottle *t)
{
    memset(t, 0, sizeof *t);
    t->next_ns = TAGTHROTTLE_NEVER;
}

void tagthrottle_fini(tagthrottle *t)
{
    free(t->v);
    free(t->by_id);
    free(t->by_name);
    uint32_t gen = t->gen;
    tagthrottle_init(t);
    t->gen = gen;
}

/* name_hash is FNV-1a over kind and name, finished by hash_u32. */
static uint32_t name_hash(int pattern, const char *name, size_t len)
{
    uint32_t h = 2166136261u ^ (uint32_t)(pattern != 0);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return hash_u32(h);
}

static int same(const tagthrottle_entry *e, int pattern, const char *name, size_t len)
{
    return e->pattern == (pattern != 0) && strlen(e->name) == len && memcmp(e->name, name, len) == 0;
}

/* rebuild fills both tables again for the n entries, in place when they
 * are big enough for a load of at most 1/2 (so a rebuild after entries
 * went, or with as many as before, cannot fail), else in new ones twice the
 * size. SL_ENOMEM leaves the old tables as they were. */
static int rebuild(tagthrottle *t)
{
    uint32_t want = t->nslots ? t->nslots : 16;
    while (want < 2 * t->n)
        want *= 2;
    if (want != t->nslots) {
        uint32_t *id = calloc(want, sizeof *id), *nm = calloc(want, sizeof *nm);
        if (!id || !nm) {
            free(id);
            free(nm);
            return SL_ENOMEM;
        }
        free(t->by_id);
        free(t->by_name);
        t->by_id = id;
        t->by_name = nm;
        t->nslots = want;
    } else {
        memset(t->by_id, 0, want * sizeof *t->by_id);
        memset(t->by_name, 0, want * sizeof *t->by_name);
    }
    uint32_t mask = want - 1;
    for (uint32_t i = 0; i < t->n; i++) {
        const tagthrottle_entry *e = &t->v[i];
        uint32_t j = name_hash(e->pattern, e->name, strlen(e->name)) & mask;
        while (t->by_name[j])
            j = (j + 1) & mask;
        t->by_name[j] = i + 1;
        if (e->pattern || !e->id)
            continue;
        for (j = hash_u32(e->id) & mask; t->by_id[j]; j = (j + 1) & mask)
            ;
        t->by_id[j] = i + 1;
    }
    return SL_OK;
}

tagthrottle_entry *tagthrottle_find(const tagthrottle *t, int pattern, const char *name, size_t len)
{
    if (!t->n)
        return NULL;
    uint32_t mask = t->nslots - 1;
    for (uint32_t j = name_hash(pattern, name, len) & mask; t->by_name[j]; j = (j + 1) & mask)
        if (same(&t->v[t->by_name[j] - 1], pattern, name, len))
            return &t->v[t->by_name[j] - 1];
    return NULL;
}

uint64_t tagthrottle_paused_until(const tagthrottle *t, uint32_t id, uint64_t now_ns)
{
    if (!t->n || !id)
        return 0;
    uint32_t mask = t->nslots - 1;
    for (uint32_t j = hash_u32(id) & mask; t->by_id[j]; j = (j + 1) & mask) {
        const tagthrottle_entry *e = &t->v[t->by_id[j] - 1];
        if (e->id == id)
            return e->paused_until_ns > now_ns ? e->paused_until_ns : 0;
    }
    return 0;
}

/* done tells whether e holds nothing any more at now_ns. */
static int done(const tagthrottle_entry *e, uint64_t now_ns)
{
    return e->paused_until_ns <= now_ns && e->rate_milli >= e->base_milli && aimd_calm(&e->aimd, now_ns);
}

/* idle tells whether e holds only the memory of its last cut: nothing
 * lifts what it holds if it goes, and a 429 after it is only counted as
 * isolated. */
static int idle(const tagthrottle_entry *e, uint64_t now_ns)
{
    return e->paused_until_ns <= now_ns && e->rate_milli >= e->base_milli;
}

/* due_of returns when e next needs the tick: its next step while it is
 * cut, else when it has nothing left (its pause over, its last cut calm). */
static uint64_t due_of(const tagthrottle_entry *e)
{
    uint64_t at = aimd_raise_due(&e->aimd, e->rate_milli, e->base_milli);
    if (at != AIMD_NEVER)
        return at;
    at = e->paused_until_ns;
    if (e->aimd.cuts && e->aimd.last_cut_ns + AIMD_CALM_NS > at)
        at = e->aimd.last_cut_ns + AIMD_CALM_NS;
    return at;
}

static void note_due(tagthrottle *t, const tagthrottle_entry *e)
{
    uint64_t at = due_of(e);
    if (at < t->next_ns)
        t->next_ns = at;
}

/* drop removes entry i (the last one takes its place); the caller rebuilds. */
static void drop(tagthrottle *t, uint32_t i)
{
    if (i != t->n - 1)
        t->v[i] = t->v[t->n - 1];
    t->n--;
}

/* require finds or makes the entry (kind, name). */
static tagthrottle_entry *require(tagthrottle *t, int pattern, const char *name, size_t len, uint64_t now_ns,
                                  int *err)
{
    int e_ = SL_OK;
    int *rc = err ? err : &e_;
    tagthrottle_entry *e = tagthrottle_find(t, pattern, name, len);
    if (e)
        return e;
    if (len == 0 || len > PROTO_MAX_TAG || memchr(name, '\0', len)) {
        *rc = SL_EINVAL;
        return NULL;
    }
    if (t->n >= TAGTHROTTLE_MAX) { /* the idle entry with the oldest cut makes room */
        uint32_t best = UINT32_MAX;
        for (uint32_t i = 0; i < t->n; i++)
            if (idle(&t->v[i], now_ns) &&
                (best == UINT32_MAX || t->v[i].aimd.last_cut_ns < t->v[best].aimd.last_cut_ns))
                best = i;
        if (best == UINT32_MAX) {
            *rc = SL_EFULL;
            return NULL;
        }
        drop(t, best);
    } else if (t->n == t->cap) {
        tagthrottle_entry *v = grow_array(t->v, &t->cap, (size_t)t->n + 1, sizeof *v, 16);
        if (!v) {
            *rc = SL_ENOMEM;
            return NULL;
        }
        t->v = v;
    }
    e = &t->v[t->n++];
    memset(e, 0, sizeof *e);
    memcpy(e->name, name, len);
    e->pattern = pattern != 0;
    e->rule = -1;
    if (rebuild(t) != SL_OK) {
        t->n--; /* the old tables still name the others right */
        *rc = SL_ENOMEM;
        return NULL;
    }
    return e;
}

tagthrottle_entry *tagthrottle_pause(tagthrottle *t, const char *tag, size_t len, uint32_t id, uint64_t until_ns,
                                     uint64_t now_ns, int *err)
{
    tagthrottle_entry *e = require(t, 0, tag, len, now_ns, err);
    if (!e)
        return NULL;
    if (until_ns > e->paused_until_ns)
        e->paused_until_ns = until_ns;
    e->throttles++;
    if (id && e->id != id) {
        e->id = id;
        rebuild(t); /* as many entries: in place, it cannot fail */
    }
    note_due(t, e);
    return e;
}

static void set_base(tagthrottle_entry *e, uint64_t base_milli)
{
    e->base_milli = base_milli;
    if (e->rate_milli > base_milli || !e->rate_milli)
        e->rate_milli = base_milli;
}

void tagthrottle_rebase(tagthrottle *t, tagthrottle_entry *e, uint64_t base_milli)
{
    set_base(e, base_milli);
    note_due(t, e);
}

tagthrottle_entry *tagthrottle_cut(tagthrottle *t, int pattern, const char *name, size_t len, uint64_t base_milli,
                                   uint64_t now_ns, int *cut, int *err)
{
    *cut = 0;
    tagthrottle_entry *e = require(t, pattern, name, len, now_ns, err);
    if (!e)
        return NULL;
    if (e->base_milli != base_milli)
        set_base(e, base_milli);
    if (pattern)
        e->throttles++;
    *cut = aimd_cut(&e->aimd, &e->rate_milli, e->base_milli, now_ns);
    note_due(t, e);
    return e;
}

uint64_t tagthrottle_next_ns(const tagthrottle *t)
{
    return t->next_ns;
}

uint64_t tagthrottle_tick(tagthrottle *t, uint64_t now_ns, tagthrottle_apply_fn fn, void *ctx)
{
    int gone = 0;
    t->next_ns = TAGTHROTTLE_NEVER;
    for (uint32_t i = 0; i < t->n;) {
        tagthrottle_entry *e = &t->v[i];
        if (aimd_raise(&e->aimd, &e->rate_milli, e->base_milli, now_ns) && fn)
            fn(ctx, e);
        if (done(e, now_ns)) {
            drop(t, i);
            gone = 1;
            continue;
        }
        note_due(t, e);
        i++;
    }
    if (gone && !t->n)
        tagthrottle_fini(t); /* an empty table holds no memory */
    else if (gone)
        rebuild(t); /* fewer entries: in place, it cannot fail */
    return t->next_ns;
}

uint64_t tagthrottle_cut_of(const tagthrottle_entry *e)
{
    return e->rate_milli < e->base_milli ? e->rate_milli : 0;
}
