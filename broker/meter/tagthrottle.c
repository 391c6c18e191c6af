/*
 * tagthrottle.c - the table of throttled tags and cut tag buckets (see
 * tagthrottle.h for what an entry means, the bound and the costs).
 *
 * Entries sit in one dense array; two indexes (hash.h) find them: by tag id, for the fair pick's
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
    hash_fini(&t->by_id);
    hash_fini(&t->by_name);
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

/* The two indexes' questions. A key by name is a (kind, name) pair. */
typedef struct name_key {
    int pattern;
    const char *name;
    size_t len;
} name_key;

static uint32_t by_name_hash(const void *owner, uint32_t pos)
{
    const tagthrottle_entry *e = &((const tagthrottle *)owner)->v[pos];
    return name_hash(e->pattern, e->name, strlen(e->name));
}

static int by_name_is(const void *owner, uint32_t pos, const void *key)
{
    const name_key *k = key;
    return same(&((const tagthrottle *)owner)->v[pos], k->pattern, k->name, k->len);
}

static uint32_t by_id_hash(const void *owner, uint32_t pos)
{
    return hash_u32(((const tagthrottle *)owner)->v[pos].id);
}

static int by_id_is(const void *owner, uint32_t pos, const void *id)
{
    const tagthrottle_entry *e = &((const tagthrottle *)owner)->v[pos];
    return !e->pattern && e->id && e->id == *(const uint32_t *)id;
}

static const hash_ops name_ops = {by_name_hash, by_name_is}, id_ops = {by_id_hash, by_id_is};

/* rebuild indexes the n entries again, in place when the indexes are big
 * enough (so a rebuild after entries went, or with as many as before,
 * cannot fail). SL_ENOMEM leaves the old indexes as they were, or (when
 * only the second could not grow) the first rebuilt over the same entries,
 * which the caller then takes back to the old count. Entries without an id
 * are indexed by id too, under id 0, which no lookup asks for. */
static int rebuild(tagthrottle *t)
{
    int rc = hash_build(&t->by_name, t->n, &name_ops, t);
    if (rc == SL_OK)
        rc = hash_build(&t->by_id, t->n, &id_ops, t);
    return rc;
}

tagthrottle_entry *tagthrottle_find(const tagthrottle *t, int pattern, const char *name, size_t len)
{
    uint32_t pos;
    name_key k = {pattern != 0, name, len};
    if (!t->n || !hash_find(&t->by_name, name_hash(pattern, name, len), &k, &name_ops, t, &pos))
        return NULL;
    return &t->v[pos];
}

uint64_t tagthrottle_paused_until(const tagthrottle *t, uint32_t id, unsigned level, uint64_t now_ns)
{
    uint32_t pos;
    if (!t->n || !id || level >= PROTO_MAX_LEVELS || !hash_find(&t->by_id, hash_u32(id), &id, &id_ops, t, &pos))
        return 0;
    const tagthrottle_entry *e = &t->v[pos];
    return e->level_until_ns[level] > now_ns ? e->level_until_ns[level] : 0;
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
        t->n--;
        (void)rebuild(t); /* as many entries as before: in place, it cannot fail */
        *rc = SL_ENOMEM;
        return NULL;
    }
    return e;
}

tagthrottle_entry *tagthrottle_pause(tagthrottle *t, const char *tag, size_t len, uint32_t id, uint32_t levels_mask,
                                     uint64_t until_ns, uint64_t now_ns, int *err)
{
    tagthrottle_entry *e = require(t, 0, tag, len, now_ns, err);
    if (!e)
        return NULL;
    for (unsigned l = 0; l < PROTO_MAX_LEVELS; l++)
        if ((levels_mask >> l & 1) && until_ns > e->level_until_ns[l])
            e->level_until_ns[l] = until_ns;
    if (levels_mask && until_ns > e->paused_until_ns)
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
