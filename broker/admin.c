/*
 * admin.c - what operators change and ask while the broker runs.
 *
 * One table maps each command name ("pool.resize", "level.set", ...) to its
 * function. Every change takes effect at once and is written to the store's
 * meta database in the same pass, so the ADMIN_OK (sent after the commit)
 * means "applied and durable". Settings are small fixed binary records:
 *
 *   level/NN  u8 version(2) u8 flags(bit0 paused) u16 0 u32 burst
 *             u64 deadline_ms u64 aging_ms
 *             u64 max_rate_milli u64 min_rate_milli                 (40 bytes)
 *             (version 1 was the first 24 bytes, burst 0, no rates)
 *   pool/NAME u8 version(1) u8 flags(bit0 paused, bit1 autoscale) u16 0
 *             u32 levels_mask u32 size u32 min u32 max u64 target_wait_ms
 *                                                                   (28 bytes)
 *   sink      u8 version(1) u8 0 u16 0 u32 burst u64 rate_milli
 *             u64 max_inflight                                      (24 bytes)
 * all little-endian. Change a layout: bump its version byte and read both.
 *
 * explain answers "where is message N and why is it not delivered yet". It
 * looks through leases (O(leases)), then each level from the head (O(position),
 * capped), the delayed set and the dead letters: an operator's question, not
 * a hot path.
 */
#include "admin.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#define NS_PER_MS 1000000ULL
#define LEVEL_REC_V1 24
#define LEVEL_REC 40
#define POOL_REC 28
#define SINK_REC 24
#define FIND_LIMIT 10000000ULL
#define MAX_SIZE 100000u

static void put32(unsigned char *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* ---- persistence ---- */

void admin_save_level(bk *b, unsigned level)
{
    unsigned char r[LEVEL_REC] = {2};
    char key[16];
    const queue_level *lv = &b->q.lv[level];
    r[1] = lv->paused ? 1 : 0;
    put32(r + 4, lv->burst);
    put64(r + 8, lv->deadline_ms);
    put64(r + 16, lv->aging_ms);
    put64(r + 24, lv->max_rate_milli);
    put64(r + 32, lv->min_rate_milli);
    snprintf(key, sizeof key, "level/%02u", level);
    if (store_meta_put(b->st, key, r, sizeof r) != SL_OK)
        log_error("admin", "cannot store the settings of level %u", level);
}

void admin_save_pool(bk *b, const pool *p)
{
    unsigned char r[POOL_REC] = {1};
    char key[8 + PROTO_MAX_NAME];
    r[1] = (p->paused ? 1 : 0) | (p->autoscale ? 2 : 0);
    put32(r + 4, p->levels_mask);
    put32(r + 8, p->size);
    put32(r + 12, p->min_size);
    put32(r + 16, p->max_size);
    put64(r + 20, p->target_wait_ms);
    snprintf(key, sizeof key, "pool/%s", p->name);
    if (store_meta_put(b->st, key, r, sizeof r) != SL_OK)
        log_error("admin", "cannot store the settings of pool %s", p->name);
}

static void load_level(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *r = val;
    unsigned level = 0;
    if (key_len != 8 || sscanf(key + 6, "%2u", &level) != 1 ||
        !((len == LEVEL_REC_V1 && r[0] == 1) || (len == LEVEL_REC && r[0] == 2))) {
        log_warn("admin", "ignoring an unreadable level setting (%zu bytes)", len);
        return;
    }
    if (level >= b->cfg.levels)
        return; /* kept for when the level comes back */
    queue_level *lv = &b->q.lv[level];
    lv->paused = r[1] & 1;
    lv->deadline_ms = get64(r + 8);
    lv->aging_ms = get64(r + 16);
    if (r[0] == 2) {
        lv->burst = get32(r + 4);
        lv->max_rate_milli = get64(r + 24);
        lv->min_rate_milli = get64(r + 32);
    }
}

void admin_save_sink(bk *b)
{
    unsigned char r[SINK_REC] = {1};
    put32(r + 4, b->sink.burst);
    put64(r + 8, b->sink.rate_milli);
    put64(r + 16, b->sink.max_inflight);
    if (store_meta_put(b->st, "sink", r, sizeof r) != SL_OK)
        log_error("admin", "cannot store the sink settings");
}

static void load_sink(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *r = val;
    if (key_len != 4 || memcmp(key, "sink", 4) != 0)
        return; /* another key that merely starts with "sink" */
    if (len != SINK_REC || r[0] != 1) {
        log_warn("admin", "ignoring an unreadable sink setting (%zu bytes)", len);
        return;
    }
    b->sink.burst = get32(r + 4);
    b->sink.rate_milli = get64(r + 8);
    b->sink.max_inflight = get64(r + 16);
}

static void load_pool(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *r = val;
    if (key_len <= 5 || key_len - 5 > PROTO_MAX_NAME || len != POOL_REC || r[0] != 1) {
        log_warn("admin", "ignoring an unreadable pool setting (%zu bytes)", len);
        return;
    }
    uint32_t mask = get32(r + 4) & b->all_mask;
    pool *p = pool_require(&b->pools, key + 5, key_len - 5, mask ? mask : b->all_mask);
    if (!p)
        return;
    p->paused = r[1] & 1;
    p->autoscale = (r[1] >> 1) & 1;
    p->size = get32(r + 8);
    p->min_size = get32(r + 12);
    p->max_size = get32(r + 16);
    p->target_wait_ms = get64(r + 20);
}

int admin_load(bk *b)
{
    int rc = store_meta_scan(b->st, "level/", load_level, b);
    if (rc == SL_OK)
        rc = store_meta_scan(b->st, "pool/", load_pool, b);
    if (rc == SL_OK)
        rc = store_meta_scan(b->st, "sink", load_sink, b);
    if (rc == SL_OK && b->pools.n)
        log_info("admin", "%u pools restored", b->pools.n);
    return rc;
}

/* ---- argument helpers ---- */

typedef struct cmd_ctx {
    bk *b;
    const proto_msg *req;
    proto_msg *rep;
    char *text;
    size_t text_len;
} cmd_ctx;

static int fail(cmd_ctx *x, int code, const char *fmt, const char *arg)
{
    snprintf(x->text, x->text_len, fmt, arg);
    return code;
}

static int need_level(cmd_ctx *x, unsigned *level)
{
    char n[24];
    if (!(x->req->present & PF(level)))
        return fail(x, SL_EINVAL, "%s needs a level", "this command");
    if (x->req->level >= x->b->cfg.levels) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)x->req->level);
        return fail(x, SL_ENOLEVEL, "level %s does not exist", n);
    }
    *level = (unsigned)x->req->level;
    return SL_OK;
}

static int need_pool(cmd_ctx *x, pool **out, int create)
{
    char name[PROTO_MAX_NAME + 1];
    const proto_msg *m = x->req;
    if (!(m->present & PF(pool)) || m->pool.len == 0)
        return fail(x, SL_EINVAL, "%s needs a pool name", "this command");
    memcpy(name, m->pool.ptr, m->pool.len);
    name[m->pool.len] = '\0';
    *out = create ? pool_require(&x->b->pools, m->pool.ptr, m->pool.len, x->b->all_mask)
                  : pool_find(&x->b->pools, m->pool.ptr, m->pool.len);
    if (!*out)
        return fail(x, create ? SL_EFULL : SL_ENOTFOUND,
                    create ? "cannot create pool %s: 64 pools exist" : "no pool named %s", name);
    return SL_OK;
}

/* ---- levels ---- */

static int cmd_level_list(cmd_ctx *x)
{
    bk *b = x->b;
    proto_msg *r = x->rep;
    unsigned n = b->cfg.levels;
    r->present |= PF(names) | PF(level_deadline_ms) | PF(level_aging_ms) | PF(level_paused) | PF(depth) |
                  PF(oldest_ms) | PF(level_max_rate) | PF(level_min_rate) | PF(level_burst) | PF(level_tokens) |
                  PF(eta_ms);
    r->names.n = r->level_deadline_ms.n = r->level_aging_ms.n = r->level_paused.n = r->depth.n = r->oldest_ms.n = n;
    r->level_max_rate.n = r->level_min_rate.n = r->level_burst.n = r->level_tokens.n = r->eta_ms.n = n;
    for (unsigned l = 0; l < n; l++) {
        const queue_level *lv = &b->q.lv[l];
        uint64_t oldest = queue_oldest_ns(&b->q, l);
        r->names.v[l] = (proto_buf){b->cfg.level_names[l], (uint32_t)strlen(b->cfg.level_names[l])};
        r->level_deadline_ms.v[l] = lv->deadline_ms;
        r->level_aging_ms.v[l] = lv->aging_ms;
        r->level_paused.v[l] = (uint64_t)lv->paused;
        r->depth.v[l] = queue_ready(&b->q, l);
        r->oldest_ms.v[l] = oldest && b->wall_ns > oldest ? (b->wall_ns - oldest) / NS_PER_MS : 0;
        r->level_max_rate.v[l] = lv->max_rate_milli;
        r->level_min_rate.v[l] = lv->min_rate_milli;
        r->level_burst.v[l] = lv->burst ? lv->burst : 1;
        uint64_t tokens = rl_tokens_milli(&lv->ceiling, b->mono_ns);
        r->level_tokens.v[l] = tokens == UINT64_MAX ? 0 : tokens;
        r->eta_ms.v[l] = bk_eta_ms(b, l);
    }
    return SL_OK;
}

static int cmd_level_set(cmd_ctx *x)
{
    unsigned level;
    int rc = need_level(x, &level);
    if (rc)
        return rc;
    queue_level *lv = &x->b->q.lv[level];
    if (x->req->present & PF(deadline_ms))
        lv->deadline_ms = x->req->deadline_ms;
    if (x->req->present & PF(aging_ms))
        lv->aging_ms = x->req->aging_ms;
    if (x->req->present & PF(rate_milli))
        lv->max_rate_milli = x->req->rate_milli;
    if (x->req->present & PF(min_rate_milli))
        lv->min_rate_milli = x->req->min_rate_milli;
    if (x->req->present & PF(burst)) {
        if (x->req->burst > 1000000)
            return fail(x, SL_EINVAL, "burst must be at most %s", "1000000");
        lv->burst = (uint32_t)x->req->burst;
    }
    bk_level_apply(x->b, level);
    admin_save_level(x->b, level);
    log_info("admin", "level %s: deadline %llu ms, aging step %llu ms, max rate %.3f/s, min rate %.3f/s, burst %u",
             x->b->cfg.level_names[level], (unsigned long long)lv->deadline_ms, (unsigned long long)lv->aging_ms,
             (double)lv->max_rate_milli / 1000.0, (double)lv->min_rate_milli / 1000.0, lv->burst ? lv->burst : 1);
    return SL_OK;
}

static int set_level_paused(cmd_ctx *x, int paused)
{
    unsigned level;
    int rc = need_level(x, &level);
    if (rc)
        return rc;
    x->b->q.lv[level].paused = paused;
    admin_save_level(x->b, level);
    log_info("admin", "level %s %s", x->b->cfg.level_names[level], paused ? "paused" : "resumed");
    return SL_OK;
}

static int cmd_level_pause(cmd_ctx *x) { return set_level_paused(x, 1); }
static int cmd_level_resume(cmd_ctx *x) { return set_level_paused(x, 0); }

/* ---- pools ---- */

static int cmd_pool_list(cmd_ctx *x)
{
    bk *b = x->b;
    proto_msg *r = x->rep;
    unsigned n = b->pools.n;
    r->present |= PF(pool_names) | PF(pool_levels) | PF(pool_size) | PF(pool_members) | PF(pool_inflight) |
                  PF(pool_rate) | PF(pool_recommended) | PF(pool_flags);
    r->pool_names.n = r->pool_levels.n = r->pool_size.n = r->pool_members.n = n;
    r->pool_inflight.n = r->pool_rate.n = r->pool_recommended.n = r->pool_flags.n = n;
    for (unsigned i = 0; i < n; i++) {
        const pool *p = b->pools.v[i];
        r->pool_names.v[i] = (proto_buf){p->name, (uint32_t)strlen(p->name)};
        r->pool_levels.v[i] = p->levels_mask;
        r->pool_size.v[i] = p->size;
        r->pool_members.v[i] = p->members;
        r->pool_inflight.v[i] = p->inflight;
        r->pool_rate.v[i] = (uint64_t)(p->rate_per_s * 1000.0 + 0.5);
        r->pool_recommended.v[i] = p->recommended;
        r->pool_flags.v[i] = (uint64_t)(p->paused ? 1 : 0) | (uint64_t)(p->autoscale ? 2 : 0);
    }
    return SL_OK;
}

static int cmd_pool_resize(cmd_ctx *x)
{
    pool *p;
    char n[24];
    if (!(x->req->present & PF(size)) || x->req->size > MAX_SIZE) {
        snprintf(n, sizeof n, "%u", MAX_SIZE);
        return fail(x, SL_EINVAL, "pool.resize needs a size from 0 (no limit) to %s", n);
    }
    int rc = need_pool(x, &p, 1);
    if (rc)
        return rc;
    p->size = (uint32_t)x->req->size;
    admin_save_pool(x->b, p);
    bk_pool_changed(x->b, p);
    log_info("admin", "pool %s resized to %u", p->name, p->size);
    return SL_OK;
}

static int set_pool_paused(cmd_ctx *x, int paused)
{
    pool *p;
    int rc = need_pool(x, &p, 0);
    if (rc)
        return rc;
    p->paused = paused;
    admin_save_pool(x->b, p);
    log_info("admin", "pool %s %s", p->name, paused ? "paused" : "resumed");
    return SL_OK;
}

static int cmd_pool_pause(cmd_ctx *x) { return set_pool_paused(x, 1); }
static int cmd_pool_resume(cmd_ctx *x) { return set_pool_paused(x, 0); }

static int cmd_pool_autoscale(cmd_ctx *x)
{
    pool *p;
    const proto_msg *m = x->req;
    int rc = need_pool(x, &p, 0);
    if (rc)
        return rc;
    uint64_t lo = (m->present & PF(min)) ? m->min : p->min_size;
    uint64_t hi = (m->present & PF(max)) ? m->max : p->max_size;
    if (lo < 1 || hi < lo || hi > MAX_SIZE)
        return fail(x, SL_EINVAL, "autoscale needs 1 <= min <= max <= 100000 (pool %s)", p->name);
    p->min_size = (uint32_t)lo;
    p->max_size = (uint32_t)hi;
    if (m->present & PF(target_wait_ms))
        p->target_wait_ms = m->target_wait_ms ? m->target_wait_ms : 1;
    p->autoscale = !(m->present & PF(enabled)) || m->enabled != 0;
    admin_save_pool(x->b, p);
    log_info("admin", "pool %s autoscale %s (min %u, max %u, target wait %llu ms)", p->name,
             p->autoscale ? "on" : "off", p->min_size, p->max_size, (unsigned long long)p->target_wait_ms);
    return SL_OK;
}

/* ---- the sink ---- */

static int cmd_sink_set(cmd_ctx *x)
{
    bk_sink *s = &x->b->sink;
    const proto_msg *m = x->req;
    if ((m->present & PF(burst)) && m->burst > 1000000)
        return fail(x, SL_EINVAL, "burst must be at most %s", "1000000");
    if (m->present & PF(rate_milli))
        s->rate_milli = m->rate_milli;
    if (m->present & PF(burst))
        s->burst = (uint32_t)m->burst;
    if (m->present & PF(max_inflight))
        s->max_inflight = m->max_inflight;
    bk_sink_apply(x->b);
    admin_save_sink(x->b);
    log_info("admin", "sink: rate %.3f/s, burst %u, in flight at most %llu", (double)s->rate_milli / 1000.0,
             s->burst ? s->burst : 1, (unsigned long long)s->max_inflight);
    return SL_OK;
}

static int cmd_sink_show(cmd_ctx *x)
{
    const bk *b = x->b;
    const bk_sink *s = &b->sink;
    proto_msg *r = x->rep;
    uint64_t tokens = rl_tokens_milli(&s->bucket, b->mono_ns);
    r->present |= PF(rate_milli) | PF(effective_rate_milli) | PF(burst) | PF(max_inflight) | PF(sink_inflight) |
                  PF(tokens_milli) | PF(paused_ms);
    r->rate_milli = s->rate_milli;
    r->effective_rate_milli = s->effective_milli;
    r->burst = s->burst ? s->burst : 1;
    r->max_inflight = s->max_inflight;
    r->sink_inflight = s->inflight;
    r->tokens_milli = tokens == UINT64_MAX ? 0 : tokens;
    r->paused_ms = s->paused_until_ns > b->mono_ns ? (s->paused_until_ns - b->mono_ns) / NS_PER_MS : 0;
    const char *state = breaker_name(s->breaker.state);
    proto_set_str(r, PROTO_F_breaker, state, strlen(state));
    proto_set(r, breaker_trips, s->breaker.trips);
    return SL_OK;
}

/* ---- explain ---- */

/* why_waiting writes why a ready message at position pos of level is not out. */
static void why_waiting(cmd_ctx *x, unsigned level, uint64_t pos)
{
    bk *b = x->b;
    const char *name = b->cfg.level_names[level];
    int serving = 0, open = 0, credit = 0;
    uint64_t above = 0;
    for (unsigned i = 0; i < b->pools.n; i++) {
        const pool *p = b->pools.v[i];
        if (!((p->levels_mask >> level) & 1) || p->members == 0)
            continue;
        serving = 1;
        open |= pool_open(p);
    }
    for (size_t i = 0; i < b->conns.len; i++) {
        const conn *c = b->conns.all[i];
        credit |= c->credit > 0 && c->pool && ((c->pool->levels_mask & c->levels_mask) >> level & 1) &&
                  pool_open(c->pool);
    }
    for (unsigned l = 0; l < level; l++)
        above += b->q.lv[l].paused ? 0 : queue_ready(&b->q, l);
    if (b->q.lv[level].paused)
        snprintf(x->text, x->text_len, "level %s is paused", name);
    else if (!serving)
        snprintf(x->text, x->text_len, "no consumer pool with members serves level %s", name);
    else if (!open)
        snprintf(x->text, x->text_len, "every pool serving level %s is paused or full", name);
    else if (!credit)
        snprintf(x->text, x->text_len, "no consumer serving level %s has credit: all are busy", name);
    else if (pos > 0)
        snprintf(x->text, x->text_len, "%llu messages are ahead of it in level %s", (unsigned long long)pos, name);
    else if (above > 0)
        snprintf(x->text, x->text_len, "higher levels are served first (%llu messages ready above it)",
                 (unsigned long long)above);
    else
        snprintf(x->text, x->text_len, "it is next in level %s", name);
}

static int cmd_explain(cmd_ctx *x)
{
    bk *b = x->b;
    proto_msg *r = x->rep;
    uint64_t id = x->req->id, key, rank, due;
    unsigned level;
    store_rec rec;
    if (!(x->req->present & PF(id)))
        return fail(x, SL_EINVAL, "%s needs a message id", "explain");
    r->present |= PF(state) | PF(level) | PF(position) | PF(until_ms) | PF(msg);
    for (size_t i = 0; i < b->leases.nbuckets; i++)
        for (const lease *l = b->leases.buckets[i]; l; l = l->hnext) {
            if (l->id != id)
                continue;
            uint64_t left = l->deadline_ns > b->mono_ns ? (l->deadline_ns - b->mono_ns) / NS_PER_MS : 0;
            r->state = (proto_buf){"leased", 6};
            r->level = l->level;
            r->until_ms = left;
            snprintf(x->text, x->text_len, "delivered (attempt %u) to a consumer in pool %s; lease ends in %llu ms",
                     l->attempt, l->pool ? l->pool->name : "-", (unsigned long long)left);
            r->msg = (proto_buf){x->text, (uint32_t)strlen(x->text)};
            return SL_OK;
        }
    for (level = 0; level < b->cfg.levels; level++) {
        int rc = store_find(b->st, level, id, FIND_LIMIT, &key, &rank);
        if (rc == SL_ENOTFOUND)
            continue;
        if (rc != SL_OK)
            return fail(x, rc, "cannot read level %s", b->cfg.level_names[level]);
        uint64_t leased_before = 0; /* leased records ahead of it are not waiting */
        for (size_t i = 0; i < b->leases.nbuckets; i++)
            for (const lease *l = b->leases.buckets[i]; l; l = l->hnext)
                leased_before += l->level == level && l->key < key;
        r->state = (proto_buf){"ready", 5};
        r->level = level;
        r->position = rank - leased_before;
        why_waiting(x, level, r->position);
        r->msg = (proto_buf){x->text, (uint32_t)strlen(x->text)};
        return SL_OK;
    }
    if (store_delayed_find(b->st, id, &level, &due) == SL_OK) {
        uint64_t left = due > b->wall_ns ? (due - b->wall_ns) / NS_PER_MS : 0;
        r->state = (proto_buf){"delayed", 7};
        r->level = level;
        r->until_ms = left;
        snprintf(x->text, x->text_len, "delayed: it returns to the head of its level in %llu ms",
                 (unsigned long long)left);
        r->msg = (proto_buf){x->text, (uint32_t)strlen(x->text)};
        return SL_OK;
    }
    for (level = 0; level < b->cfg.levels; level++)
        if (store_dead_get(b->st, level, id, &rec) == SL_OK) {
            r->state = (proto_buf){"dead", 4};
            r->level = level;
            snprintf(x->text, x->text_len, "a dead letter: %.*s", (int)rec.reason_len, rec.reason);
            r->msg = (proto_buf){x->text, (uint32_t)strlen(x->text)};
            return SL_OK;
        }
    r->state = (proto_buf){"gone", 4};
    snprintf(x->text, x->text_len, "not in the broker: acknowledged, or never published");
    r->msg = (proto_buf){x->text, (uint32_t)strlen(x->text)};
    return SL_OK;
}

/* ---- the table ---- */

static const struct {
    const char *name;
    int (*fn)(cmd_ctx *x);
} commands[] = {
    {"level.list", cmd_level_list},     {"level.set", cmd_level_set},
    {"level.pause", cmd_level_pause},   {"level.resume", cmd_level_resume},
    {"pool.list", cmd_pool_list},       {"pool.resize", cmd_pool_resize},
    {"pool.pause", cmd_pool_pause},     {"pool.resume", cmd_pool_resume},
    {"pool.autoscale", cmd_pool_autoscale},
    {"sink.set", cmd_sink_set},         {"sink.show", cmd_sink_show},
    {"explain", cmd_explain},
};

int admin_run(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len)
{
    cmd_ctx x = {b, req, rep, text, text_len};
    char name[PROTO_MAX_NAME + 1];
    memcpy(name, req->cmd.ptr, req->cmd.len);
    name[req->cmd.len] = '\0';
    text[0] = '\0';
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return commands[i].fn(&x);
    return fail(&x, SL_EUNKNOWN, "unknown admin command '%s'", name);
}
