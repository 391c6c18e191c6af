/*
 * admin.c - what operators change and ask while the broker runs.
 *
 * The commands, their arguments and their results are one list in proto/
 * (PROTO_ADMIN_CMDS); the table here is derived from it, one cmd_<id>
 * function per command. admin_run checks a request's arguments against that
 * list before the command runs (every required argument present, nothing the
 * command does not take), so a command only checks values. Every change
 * takes effect at once and is written to the store's meta database in the
 * same pass (settings.c), so the ADMIN_OK (sent after the commit) means
 * "applied and durable". Pauses a THROTTLED caused are not settings (they
 * end by themselves): sink.resume and level.resume end them at once
 * (pause.c), and so does sink.set for the sink's. List results (level.list, pool.list) are rows, one
 * per level or pool, their columns from proto's PROTO_COLS_ tables. explain
 * lives in explain.c, the dead-letter commands (dead.*) in dead.c, those on
 * waiting messages (msg.*) in waiting.c, backup and backup.status in
 * backup.c, settings.export in decl_export.c, the tag commands in
 * admin_tag.c, web.login in admin_web.c.
 */
#include "admin.h"

#include <stdio.h>
#include <string.h>

#include "backup.h"
#include "dead.h"
#include "decl.h"
#include "coord.h"
#include "deliver.h"
#include "explain.h"
#include "log.h"
#include "member.h"
#include "pause.h"
#include "poolend.h"
#include "settings.h"
#include "units.h"
#include "waiting.h"

#define MAX_SIZE 100000u

/* ---- argument helpers ---- */

typedef struct cmd_ctx {
    bk *b;
    const proto_msg *req;
    const admin_caller *who;
    proto_msg *rep;
    char *text;
    size_t text_len;
} cmd_ctx;

static int fail(cmd_ctx *x, int code, const char *fmt, const char *arg)
{
    snprintf(x->text, x->text_len, fmt, arg);
    return code;
}

static int str_is(proto_buf b, const char *s)
{
    return b.len == strlen(s) && memcmp(b.ptr, s, b.len) == 0;
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
                    create ? "cannot create pool %s: --pool-max pools exist" : "no pool named %s", name);
    return SL_OK;
}

/* ---- the windows of a limit ---- */

#define MAX_BURST ADMIN_MAX_BURST
#define MAX_COUNT_MILLI UINT64_C(100000000000) /* 100,000,000 units per period */

static int text_fail(char *text, size_t text_len, int code, const char *fmt, const char *arg)
{
    snprintf(text, text_len, fmt, arg);
    return code;
}

int admin_windows_take(const proto_rows_window *rows, admin_limit *out, char *text, size_t text_len)
{
    char n[24];
    *out = (admin_limit){0};
    if (rows->n == 0)
        return text_fail(text, text_len, SL_EINVAL, "%s needs at least one window (count 0 alone: no limit)",
                         "window_rows");
    if (rows->n > PROTO_MAX_WINDOWS) {
        snprintf(n, sizeof n, "%d", PROTO_MAX_WINDOWS);
        return text_fail(text, text_len, SL_EINVAL, "a limit takes at most %s windows", n);
    }
    int have_base = 0;
    for (unsigned i = 0; i < rows->n; i++) {
        const proto_row_window *r = &rows->v[i];
        if (r->count_milli == 0) {
            if (rows->n != 1)
                return text_fail(text, text_len, SL_EINVAL, "%s", "a window of 0 (no limit) must be the only one");
            return SL_OK;
        }
        if (r->count_milli > MAX_COUNT_MILLI)
            return text_fail(text, text_len, SL_EINVAL, "%s",
                             "a window's count must be at most 100000000 per period");
        if (r->period_ms == 0 || r->period_ms > RL_MAX_PERIOD_MS)
            return text_fail(text, text_len, SL_EINVAL, "%s",
                             "a window's period must be from 1 ms to a day (86400000 ms)");
        if (r->burst > MAX_BURST)
            return text_fail(text, text_len, SL_EINVAL, "burst must be at most %s", "1000000");
        uint32_t burst = r->burst ? (uint32_t)r->burst : 1;
        if (r->period_ms == 1000 && !have_base) {
            have_base = 1;
            out->rate_milli = r->count_milli;
            out->burst = (uint32_t)r->burst; /* 0: the limit keeps its burst */
        } else if (out->nmore == METER_MORE_WINDOWS) {
            snprintf(n, sizeof n, "%d", METER_MORE_WINDOWS);
            return text_fail(text, text_len, SL_EINVAL, "a limit takes at most %s windows besides its per-second one", n);
        } else {
            out->more[out->nmore++] = (rl_window){r->count_milli, r->period_ms, burst};
        }
    }
    return SL_OK;
}

typedef admin_limit limit_req;

/* take_windows reads the request's window rows (admin_windows_take). */
static int take_windows(cmd_ctx *x, limit_req *out)
{
    return admin_windows_take(&x->req->window_rows, out, x->text, x->text_len);
}

/* windows_show appends a limit's windows to rows: its per-second one (when
 * rate_milli is set) and the others, each with the tokens it holds now. A
 * limit with only its per-second window adds nothing (its rate and burst
 * say it all), so replies to older clients change only once a limit has
 * several windows. */
static void windows_show(proto_rows_window *rows, int level, uint64_t rate_milli, uint32_t burst,
                         const rl_bucket *base, const rl_window *more, const rl_bucket *more_b, unsigned nmore,
                         uint64_t now_ns)
{
    if (!nmore)
        return;
    for (unsigned i = 0; i <= nmore && rows->n < PROTO_MAX_WINDOW_ROWS; i++) {
        if (i == 0 && !rate_milli)
            continue;
        const rl_bucket *b = i ? &more_b[i - 1] : base;
        uint64_t tokens = rl_tokens_milli(b, now_ns);
        proto_row_window *r = &rows->v[rows->n++];
        *r = (proto_row_window){
            .present = PROTO_ROW_ALL(window),
            .level = level < 0 ? 0 : (uint64_t)level,
            .count_milli = i ? more[i - 1].count_milli : rate_milli,
            .period_ms = i ? more[i - 1].period_ms : 1000,
            .burst = i ? more[i - 1].burst : burst ? burst : 1,
            .tokens_milli = tokens == UINT64_MAX ? 0 : tokens,
        };
        if (level < 0)
            r->present &= ~(1u << PROTO_COL_window_level);
    }
}

/* windows_text writes a limit's further windows for a log line. */
static const char *windows_text(const rl_window *w, unsigned n, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n && at < size; i++) {
        int k = snprintf(buf + at, size - at, ", and %.3f per %llu ms (burst %u)", (double)w[i].count_milli / 1000.0,
                         (unsigned long long)w[i].period_ms, w[i].burst);
        at += k > 0 ? (size_t)k : 0;
    }
    return buf;
}

/* ---- levels ---- */

static int cmd_level_list(cmd_ctx *x)
{
    bk *b = x->b;
    proto_rows_level *rows = &x->rep->level_rows;
    unsigned n = b->cfg.levels;
    x->rep->present |= PF(level_rows);
    rows->n = n;
    for (unsigned l = 0; l < n; l++) {
        const queue_level *lv = &b->q.lv[l];
        const meter_level *ml = &b->meter.lv[l];
        proto_row_level *r = &rows->v[l];
        uint64_t oldest = queue_oldest_ns(&b->q, l);
        uint64_t tokens = rl_tokens_milli(&ml->ceiling, b->mono_ns);
        *r = (proto_row_level){
            .present = PROTO_ROW_ALL(level), /* fair: 1 when served fair by tag */
            .name = {b->cfg.level_names[l], (uint32_t)strlen(b->cfg.level_names[l])},
            .deadline_ms = b->policy[l].deadline_ms,
            .aging_ms = b->policy[l].aging_ms,
            .paused = (uint64_t)b->policy[l].paused,
            .depth = queue_ready(&b->q, l),
            .oldest_ms = oldest && b->wall_ns > oldest ? (b->wall_ns - oldest) / NS_PER_MS : 0,
            .max_rate_milli = ml->max_rate_milli,
            .min_rate_milli = ml->min_rate_milli,
            .burst = ml->burst ? ml->burst : 1,
            .tokens_milli = tokens == UINT64_MAX ? 0 : tokens,
            .eta_ms = deliver_eta_ms(b, l),
        };
        r->throttled_ms = pause_left_ms(b, l); /* a pause after THROTTLED: sent only while there is one */
        if (!r->throttled_ms)
            r->present &= ~(1u << PROTO_COL_level_throttled_ms);
        if (lv->fair) { /* fair by tag: how many tags it knows (waiting or leased) */
            uint32_t tenants;
            queue_fair_bytes(&b->q, l, &tenants);
            r->fair_tenants = tenants + 1; /* 0: FIFO */
            r->fair = 1;
        }
        if (queue_quarantined(&b->q, l)) /* its trees failed the store's checks at start (stats: how many) */
            r->state = (proto_buf){"quarantined", 11};
        else
            r->present &= ~(1u << PROTO_COL_level_state);
        windows_show(&x->rep->window_rows, (int)l, ml->max_rate_milli, ml->burst, &ml->ceiling, ml->more,
                     ml->more_b, ml->nmore, b->mono_ns);
    }
    if (x->rep->window_rows.n)
        x->rep->present |= PF(window_rows);
    return SL_OK;
}

static int cmd_level_set(cmd_ctx *x)
{
    unsigned level;
    int rc = need_level(x, &level);
    if (rc)
        return rc;
    queue_level *lv = &x->b->q.lv[level];
    meter_level *ml = &x->b->meter.lv[level];
    limit_req lim;
    if ((x->req->present & PF(window_rows)) && (rc = take_windows(x, &lim)) != SL_OK)
        return rc;
    if ((x->req->present & PF(burst)) && x->req->burst > MAX_BURST)
        return fail(x, SL_EINVAL, "burst must be at most %s", "1000000");
    /* durations are kept in ns: bounded here, so that none wraps (a deadline
     * of 2^64 ms would make every message overdue at once) */
    if ((x->req->present & PF(deadline_ms)) && x->req->deadline_ms > PROTO_MAX_TIME_MS)
        return fail(x, SL_EINVAL, "deadline_ms must be at most %s (ten years)", "315360000000");
    if ((x->req->present & PF(aging_ms)) && x->req->aging_ms > PROTO_MAX_TIME_MS)
        return fail(x, SL_EINVAL, "aging_ms must be at most %s (ten years)", "315360000000");
    if (x->req->present & PF(state)) { /* how the level is served: "tag" (fair by tag) or "fifo" */
        int fair = str_is(x->req->state, "tag");
        if (!fair && !str_is(x->req->state, "fifo"))
            return fail(x, SL_EINVAL, "a level is served fair by %s", "\"tag\" or \"fifo\" (in order)");
        rc = queue_fair_set(&x->b->q, level, fair, 0);
        if (rc == SL_ESTATE) {
            const char *name = x->b->cfg.level_names[level];
            snprintf(x->text, x->text_len, "level %s holds messages: a level changes how it is served only while it is "
                     "empty; move its waiting messages to another level first (sluice move %s --to LEVEL) and let "
                     "those in flight or delayed settle", name, name);
            return rc;
        }
        if (rc != SL_OK)
            return fail(x, rc, "level %s: out of memory for its tags", x->b->cfg.level_names[level]);
    }
    if (x->req->present & PF(deadline_ms))
        x->b->policy[level].deadline_ms = x->req->deadline_ms;
    if (x->req->present & PF(aging_ms))
        x->b->policy[level].aging_ms = x->req->aging_ms;
    if (x->req->present & PF(rate_milli))
        ml->max_rate_milli = x->req->rate_milli;
    if (x->req->present & PF(min_rate_milli))
        ml->min_rate_milli = x->req->min_rate_milli;
    if (x->req->present & PF(burst))
        ml->burst = (uint32_t)x->req->burst;
    if (x->req->present & PF(window_rows)) { /* every window of the ceiling, replacing what it had */
        ml->max_rate_milli = lim.rate_milli;
        if (lim.burst)
            ml->burst = lim.burst;
        meter_windows_set(&x->b->meter, level, lim.more, lim.nmore, x->b->mono_ns);
    }
    meter_level_apply(&x->b->meter, level, x->b->mono_ns);
    settings_save_level(x->b, level);
    char more[256];
    log_info("admin", "level %s (%s): deadline %llu ms, aging step %llu ms, max rate %.3f/s, min rate %.3f/s, burst %u%s",
             x->b->cfg.level_names[level], lv->fair ? "fair by tag" : "fifo", (unsigned long long)x->b->policy[level].deadline_ms,
             (unsigned long long)x->b->policy[level].aging_ms,
             (double)ml->max_rate_milli / 1000.0, (double)ml->min_rate_milli / 1000.0, ml->burst ? ml->burst : 1,
             windows_text(ml->more, ml->nmore, more, sizeof more));
    return SL_OK;
}

static int set_level_paused(cmd_ctx *x, int paused)
{
    unsigned level;
    int rc = need_level(x, &level);
    if (rc)
        return rc;
    x->b->policy[level].paused = paused;
    settings_save_level(x->b, level);
    log_info("admin", "level %s %s", x->b->cfg.level_names[level], paused ? "paused" : "resumed");
    if (!paused) /* and a pause a THROTTLED caused, if it has one */
        pause_resume(x->b, level, "level resume");
    return SL_OK;
}

static int cmd_level_pause(cmd_ctx *x) { return set_level_paused(x, 1); }
static int cmd_level_resume(cmd_ctx *x) { return set_level_paused(x, 0); }

/* ---- pools ---- */

static int cmd_pool_list(cmd_ctx *x)
{
    bk *b = x->b;
    proto_rows_pool *rows = &x->rep->pool_rows;
    x->rep->present |= PF(pool_rows);
    rows->n = b->pools.n;
    for (unsigned i = 0; i < b->pools.n; i++) {
        const pool *p = b->pools.v[i];
        rows->v[i] = (proto_row_pool){
            .present = PROTO_ROW_ALL(pool),
            .name = {p->name, (uint32_t)strlen(p->name)},
            .levels_mask = p->levels_mask,
            .size = p->size,
            .members = p->members,
            .inflight = p->inflight,
            .rate_milli = (uint64_t)(p->rate_per_s * 1000.0 + 0.5),
            .recommended = p->recommended,
            .paused = p->paused ? 1 : 0,
            .autoscale = p->autoscale ? 1 : 0,
        };
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
    settings_save_pool(x->b, p);
    member_pool_changed(x->b, p);
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
    settings_save_pool(x->b, p);
    log_info("admin", "pool %s %s", p->name, paused ? "paused" : "resumed");
    return SL_OK;
}

static int cmd_pool_pause(cmd_ctx *x) { return set_pool_paused(x, 1); }
static int cmd_pool_resume(cmd_ctx *x) { return set_pool_paused(x, 0); }

static int cmd_pool_delete(cmd_ctx *x)
{
    pool *p;
    int rc = need_pool(x, &p, 0);
    if (rc != SL_OK)
        return rc;
    char text[PROTO_MAX_NAME + 128];
    int force = (x->req->present & PF(force)) && x->req->force;
    if ((rc = poolend_delete(x->b, p, force, text, sizeof text)) != SL_OK)
        return fail(x, rc, "%s", text);
    return SL_OK;
}

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
    if ((m->present & PF(target_wait_ms)) && m->target_wait_ms > PROTO_MAX_TIME_MS)
        return fail(x, SL_EINVAL, "target_wait_ms must be at most %s (ten years)", "315360000000");
    p->min_size = (uint32_t)lo;
    p->max_size = (uint32_t)hi;
    if (m->present & PF(target_wait_ms))
        p->target_wait_ms = m->target_wait_ms ? m->target_wait_ms : 1;
    p->autoscale = !(m->present & PF(enabled)) || m->enabled != 0;
    settings_save_pool(x->b, p);
    log_info("admin", "pool %s autoscale %s (min %u, max %u, target wait %llu ms)", p->name,
             p->autoscale ? "on" : "off", p->min_size, p->max_size, (unsigned long long)p->target_wait_ms);
    return SL_OK;
}

/* ---- the sink ---- */

static int cmd_sink_set(cmd_ctx *x)
{
    meter_sink *s = &x->b->meter.sink;
    const proto_msg *m = x->req;
    limit_req lim;
    int rc;
    if ((m->present & PF(burst)) && m->burst > MAX_BURST)
        return fail(x, SL_EINVAL, "burst must be at most %s", "1000000");
    if ((m->present & PF(window_rows)) && (rc = take_windows(x, &lim)) != SL_OK)
        return rc;
    int rate_set = (m->present & (PF(rate_milli) | PF(window_rows))) != 0;
    uint64_t rate = (m->present & PF(window_rows)) ? lim.rate_milli : m->rate_milli;
    if (rate_set && x->b->coord) { /* shared: for every broker, through Redis */
        rc = coord_set_limit(x->b->coord, rate, x->text, x->text_len);
        if (rc != SL_OK)
            return rc;
    }
    if (rate_set)
        s->rate_milli = rate;
    if (m->present & PF(burst))
        s->burst = (uint32_t)m->burst;
    if (m->present & PF(window_rows)) { /* every window of the sink, replacing what it had */
        if (lim.burst)
            s->burst = lim.burst;
        meter_windows_set(&x->b->meter, METER_SINK, lim.more, lim.nmore, x->b->mono_ns);
    }
    if (m->present & PF(max_inflight))
        s->max_inflight = m->max_inflight;
    pause_resume(x->b, PAUSE_SINK, "sink set"); /* a new limit applies at once: no pause after THROTTLED stands */
    meter_sink_apply(&x->b->meter, x->b->mono_ns);
    member_pace_shares(x->b, 1);
    settings_save_sink(x->b);
    char more[256];
    log_info("admin", "sink: rate %.3f/s, burst %u, in flight at most %llu%s", (double)s->rate_milli / 1000.0,
             s->burst ? s->burst : 1, (unsigned long long)s->max_inflight,
             windows_text(s->more, s->nmore, more, sizeof more));
    return SL_OK;
}

static int cmd_sink_show(cmd_ctx *x)
{
    const bk *b = x->b;
    const meter_sink *s = &b->meter.sink;
    proto_msg *r = x->rep;
    uint64_t tokens = rl_tokens_milli(&s->bucket, b->mono_ns);
    r->present |= PF(rate_milli) | PF(effective_rate_milli) | PF(burst) | PF(max_inflight) | PF(sink_inflight) |
                  PF(tokens_milli) | PF(paused_ms);
    r->rate_milli = s->rate_milli;
    r->effective_rate_milli = s->effective_rate_milli;
    r->burst = s->burst ? s->burst : 1;
    r->max_inflight = s->max_inflight;
    r->sink_inflight = s->inflight;
    r->tokens_milli = tokens == UINT64_MAX ? 0 : tokens;
    r->paused_ms = s->paused_until_ns > b->mono_ns ? (s->paused_until_ns - b->mono_ns) / NS_PER_MS : 0;
    const char *state = breaker_name(b->meter.breaker.state);
    proto_set_str(r, PROTO_F_breaker, state, strlen(state));
    proto_set(r, breaker_trips, b->meter.breaker.trips);
    windows_show(&r->window_rows, -1, s->rate_milli, s->burst, &s->bucket, s->more, s->more_b, s->nmore, b->mono_ns);
    if (r->window_rows.n)
        r->present |= PF(window_rows);
    const char *why = meter_reason_name(meter_sink_reason(&b->meter, b->mono_ns)); /* why the rate is where it is */
    proto_set_str(r, PROTO_F_state, why, strlen(why));
    if (b->coord) { /* a shared sink: its lease (an optional result); the limit as Redis holds it */
        r->present |= PF(coord_rows);
        r->coord_rows.n = 1;
        coord_row(b->coord, b->mono_ns, &r->coord_rows.v[0]);
        if (r->coord_rows.v[0].limit_milli)
            r->rate_milli = r->coord_rows.v[0].limit_milli;
    }
    return SL_OK;
}

/* sink.resume ends the sink's pause after THROTTLED at once and answers
 * the ms it had left (0: it was not paused). Its rate stays as it is
 * (sink.set restores it). Nothing is stored: a pause is not a setting, and
 * a restart ends it anyway. */
static int cmd_sink_resume(cmd_ctx *x)
{
    proto_set(x->rep, paused_ms, pause_resume(x->b, PAUSE_SINK, "sink resume"));
    if (!x->rep->paused_ms)
        log_info("admin", "sink resume: the sink was not paused");
    return SL_OK;
}

/* ---- explain ---- */

static int cmd_explain(cmd_ctx *x)
{
    if (!(x->req->present & PF(id)))
        return fail(x, SL_EINVAL, "%s needs a message id", "explain");
    return explain_message(x->b, x->req->id, x->rep, x->text, x->text_len);
}

/* ---- dead letters (dead.c) ---- */

static int cmd_dead_list(cmd_ctx *x) { return dead_list(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_dead_peek(cmd_ctx *x) { return dead_peek(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_dead_requeue(cmd_ctx *x) { return dead_requeue(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_dead_purge(cmd_ctx *x) { return dead_purge(x->b, x->req, x->rep, x->text, x->text_len); }

/* ---- per-tag settings (admin_tag.c) ---- */

static int cmd_tag_set(cmd_ctx *x) { return admin_tag_set(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_tag_list(cmd_ctx *x) { return admin_tag_list(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_tag_pause(cmd_ctx *x) { return admin_tag_pause(x->b, x->req, x->rep, x->text, x->text_len, 1); }
static int cmd_tag_resume(cmd_ctx *x) { return admin_tag_pause(x->b, x->req, x->rep, x->text, x->text_len, 0); }

/* ---- waiting messages (waiting.c), backups (backup.c), settings (decl.c) ---- */

static int cmd_msg_peek(cmd_ctx *x) { return waiting_peek(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_msg_delete(cmd_ctx *x) { return waiting_delete(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_msg_purge(cmd_ctx *x) { return waiting_purge(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_msg_move(cmd_ctx *x) { return waiting_move(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_backup(cmd_ctx *x) { return backup_start(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_backup_status(cmd_ctx *x) { return backup_status(x->b, x->req, x->rep, x->text, x->text_len); }
static int cmd_settings_export(cmd_ctx *x) { return decl_export(x->b, x->rep, x->text, x->text_len); }

/* ---- the console's login links (admin_web.c) ---- */

static int cmd_web_login(cmd_ctx *x) { return admin_web_login(x->b, x->req, x->who, x->rep, x->text, x->text_len); }

/* ---- high availability (broker/ha_node.c, through b->ha_admin) ---- */

static int ha_cmd(cmd_ctx *x, int cmd)
{
    if (!x->b->ha_admin)
        return fail(x, SL_ESTATE, "%s", "this broker is not a node of a high-availability group (--ha)");
    return x->b->ha_admin(x->b, cmd, x->rep, x->text, x->text_len);
}

static int cmd_ha_status(cmd_ctx *x) { return ha_cmd(x, PROTO_CMD_ha_status); }
static int cmd_ha_switchover(cmd_ctx *x) { return ha_cmd(x, PROTO_CMD_ha_switchover); }
static int cmd_ha_recover(cmd_ctx *x) { return ha_cmd(x, PROTO_CMD_ha_recover); }

/* ---- the table ---- */

typedef int (*cmd_fn)(cmd_ctx *x);

static const cmd_fn commands[PROTO_CMD_COUNT_] = {
#define CMD_FN_(ID, name, req, opt, res, fields) [PROTO_CMD_##ID] = cmd_##ID,
    PROTO_ADMIN_CMDS(CMD_FN_)
#undef CMD_FN_
};

int admin_run(bk *b, const proto_msg *req, const admin_caller *who, proto_msg *rep, char *text, size_t text_len)
{
    cmd_ctx x = {b, req, who, rep, text, text_len};
    proto_cmd cmd;
    proto_mask results;
    text[0] = '\0';
    int rc = proto_cmd_check(req, &cmd, text, text_len);
    if (rc)
        return rc;
    rc = commands[cmd](&x);
    /* a command answers only with what the list says it answers */
    proto_cmd_def(cmd, NULL, NULL, NULL, &results);
    SL_ASSERT(rc != SL_OK || (rep->present & ~PF(seq) & ~results) == 0);
    return rc;
}
