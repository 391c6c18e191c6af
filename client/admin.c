/*
 * admin.c - the administration calls of sluice.h: level settings and rates,
 * pools, the sink, and explaining a message.
 *
 * Every call here is one ADMIN request: "cmd" names the command and the
 * other fields are its arguments, an absent field meaning "leave it as it
 * is". The broker answers ADMIN_OK with the results, or ERROR, whose code
 * and text client_request records. The commands and their fields:
 *
 *   level.list                    names, level_deadline_ms, level_aging_ms,
 *                                 level_paused, depth, oldest_ms, and
 *                                 level_max_rate_milli, level_min_rate_milli,
 *                                 level_burst, level_tokens_milli, eta_ms:
 *                                 one item per level
 *   level.set {level, deadline_ms?, aging_ms?, rate_milli?, min_rate_milli?,
 *              burst?}            rate_milli is the level's ceiling
 *   level.pause, level.resume {level}
 *   pool.list                     pool_names, pool_levels, pool_size,
 *                                 pool_members, pool_inflight,
 *                                 pool_rate_milli, pool_recommended,
 *                                 pool_flags: one item per pool
 *   pool.resize {pool, size}
 *   pool.pause, pool.resume {pool}
 *   pool.autoscale {pool, enabled, min?, max?, target_wait_ms?}
 *   sink.set {rate_milli?, burst?, max_inflight?}
 *   sink.show                     rate_milli, effective_rate_milli, burst,
 *                                 max_inflight, sink_inflight, tokens_milli,
 *                                 paused_ms
 *   explain {id}                  state, level, position, until_ms, msg
 *
 * Replies are checked before anything is copied out: a list whose columns
 * disagree in length, or that holds more items than the caller's array has
 * room for, is SL_EPROTO and leaves the output untouched. The rate columns
 * of level.list came later than the others: a broker that sends none of
 * them reads as having no rate limits, but one it sends must be whole.
 * Strings are copied NUL-terminated and truncated to their field. Numbers
 * wider than their field are clamped, except bit masks, which keep their low
 * bits.
 *
 * This file keeps no state: the reply it reads lives in c->reply until the
 * next receive. Cost: one round trip per call.
 */
#include "sluice.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "client.h"
#include "proto.h"

#define POOL_FLAG_PAUSED    (UINT64_C(1) << 0)
#define POOL_FLAG_AUTOSCALE (UINT64_C(1) << 1)

/* admin_init makes m an ADMIN request for cmd, with no arguments yet. */
static void admin_init(proto_msg *m, const char *cmd)
{
    proto_init(m, PROTO_ADMIN);
    proto_set_str(m, PROTO_F_cmd, cmd, strlen(cmd));
}

/* admin_call sends m and waits for its ADMIN_OK (in c->reply). */
static int admin_call(sl_client *c, proto_msg *m)
{
    return client_request(c, m, PROTO_ADMIN_OK);
}

/* level_check refuses a level the broker cannot have, or, once its levels
 * are known, does not have. */
static int level_check(sl_client *c, unsigned level)
{
    if (level >= SL_MAX_LEVELS || (c->have_levels && level >= c->nlevels))
        return client_fail(c, SL_ENOLEVEL);
    return SL_OK;
}

/* pool_arg checks a pool name and sets it as m's pool. m borrows it. */
static int pool_arg(sl_client *c, proto_msg *m, const char *pool)
{
    size_t len = pool ? strnlen(pool, PROTO_MAX_NAME + 1) : 0;
    if (len == 0 || len > PROTO_MAX_NAME)
        return client_fail(c, SL_EINVAL);
    proto_set_str(m, PROTO_F_pool, pool, len);
    return SL_OK;
}

/* columns_match tells whether r carries every field of want and each array
 * in cols holds exactly n items. */
static bool columns_match(const proto_msg *r, proto_mask want, const proto_u64s *const *cols,
                          size_t ncols, uint32_t n)
{
    if ((r->present & want) != want)
        return false;
    for (size_t k = 0; k < ncols; k++)
        if (cols[k]->n != n)
            return false;
    return true;
}

/* optional_match tells whether each array in cols that r carries (its
 * field in fields[k]) holds exactly n items. */
static bool optional_match(const proto_msg *r, const proto_field *fields,
                           const proto_u64s *const *cols, size_t ncols, uint32_t n)
{
    for (size_t k = 0; k < ncols; k++)
        if (proto_has(r, fields[k]) && cols[k]->n != n)
            return false;
    return true;
}

/* column_at is item i of an optional column: 0 when r does not carry it. */
static uint64_t column_at(const proto_msg *r, proto_field f, const proto_u64s *col, unsigned i)
{
    return proto_has(r, f) ? col->v[i] : 0;
}

static uint32_t clamp_u32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* query runs an ADMIN command that takes no arguments and answers into out
 * (which must not be NULL); the reply is then in c->reply. */
static int query(sl_client *c, const void *out, const char *cmd)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    if (!out)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, cmd);
    return admin_call(c, &m);
}

/* ---- levels ---- */

int sl_level_list(sl_client *c, sl_level_info *out, unsigned *n)
{
    if (n)
        *n = 0;
    int rc = query(c, n ? (const void *)out : NULL, "level.list");
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
    const proto_u64s *const cols[] = {&r->level_deadline_ms, &r->level_aging_ms,
                                      &r->level_paused, &r->depth, &r->oldest_ms};
    proto_mask want = PF(names) | PF(level_deadline_ms) | PF(level_aging_ms) |
                      PF(level_paused) | PF(depth) | PF(oldest_ms);
    static const proto_field rate_fields[] = {PROTO_F_level_max_rate, PROTO_F_level_min_rate,
                                              PROTO_F_level_burst, PROTO_F_level_tokens,
                                              PROTO_F_eta_ms};
    const proto_u64s *const rate_cols[] = {&r->level_max_rate, &r->level_min_rate,
                                           &r->level_burst, &r->level_tokens, &r->eta_ms};
    if (r->names.n > SL_MAX_LEVELS ||
        !columns_match(r, want, cols, sizeof cols / sizeof cols[0], r->names.n) ||
        !optional_match(r, rate_fields, rate_cols, sizeof rate_cols / sizeof rate_cols[0],
                        r->names.n))
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < r->names.n; i++) {
        sl_level_info *l = &out[i];
        memset(l, 0, sizeof *l);
        client_str_copy(l->name, sizeof l->name, r->names.v[i]);
        l->deadline_ms = r->level_deadline_ms.v[i];
        l->aging_ms = r->level_aging_ms.v[i];
        l->paused = r->level_paused.v[i] != 0;
        l->depth = r->depth.v[i];
        l->oldest_ms = r->oldest_ms.v[i];
        l->max_rate_milli = column_at(r, PROTO_F_level_max_rate, &r->level_max_rate, i);
        l->min_rate_milli = column_at(r, PROTO_F_level_min_rate, &r->level_min_rate, i);
        l->burst = clamp_u32(column_at(r, PROTO_F_level_burst, &r->level_burst, i));
        l->tokens_milli = column_at(r, PROTO_F_level_tokens, &r->level_tokens, i);
        l->eta_ms = column_at(r, PROTO_F_eta_ms, &r->eta_ms, i);
    }
    *n = r->names.n;
    return SL_OK;
}

int sl_level_set(sl_client *c, unsigned level, uint64_t deadline_ms, uint64_t aging_ms)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    int rc = level_check(c, level);
    if (rc)
        return rc;
    proto_msg m;
    admin_init(&m, "level.set");
    proto_set(&m, level, level);
    if (deadline_ms != SL_UNCHANGED)
        proto_set(&m, deadline_ms, deadline_ms);
    if (aging_ms != SL_UNCHANGED)
        proto_set(&m, aging_ms, aging_ms);
    return admin_call(c, &m);
}

int sl_level_rate(sl_client *c, unsigned level, uint64_t max_rate_milli, uint64_t min_rate_milli,
                  uint64_t burst)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    int rc = level_check(c, level);
    if (rc)
        return rc;
    proto_msg m;
    admin_init(&m, "level.set");
    proto_set(&m, level, level);
    if (max_rate_milli != SL_UNCHANGED)
        proto_set(&m, rate_milli, max_rate_milli);
    if (min_rate_milli != SL_UNCHANGED)
        proto_set(&m, min_rate_milli, min_rate_milli);
    if (burst != SL_UNCHANGED)
        proto_set(&m, burst, burst);
    return admin_call(c, &m);
}

int sl_level_pause(sl_client *c, unsigned level, int paused)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    int rc = level_check(c, level);
    if (rc)
        return rc;
    proto_msg m;
    admin_init(&m, paused ? "level.pause" : "level.resume");
    proto_set(&m, level, level);
    return admin_call(c, &m);
}

/* ---- pools ---- */

int sl_pool_list(sl_client *c, sl_pool_info *out, unsigned *n)
{
    if (n)
        *n = 0;
    int rc = query(c, n ? (const void *)out : NULL, "pool.list");
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
    const proto_u64s *const cols[] = {&r->pool_levels,   &r->pool_size, &r->pool_members,
                                      &r->pool_inflight, &r->pool_rate, &r->pool_recommended,
                                      &r->pool_flags};
    proto_mask want = PF(pool_names) | PF(pool_levels) | PF(pool_size) | PF(pool_members) |
                      PF(pool_inflight) | PF(pool_rate) | PF(pool_recommended) | PF(pool_flags);
    if (r->pool_names.n > SL_MAX_POOLS ||
        !columns_match(r, want, cols, sizeof cols / sizeof cols[0], r->pool_names.n))
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < r->pool_names.n; i++) {
        sl_pool_info *p = &out[i];
        memset(p, 0, sizeof *p);
        client_str_copy(p->name, sizeof p->name, r->pool_names.v[i]);
        p->levels_mask = (uint32_t)(r->pool_levels.v[i] & UINT32_MAX);
        p->size = clamp_u32(r->pool_size.v[i]);
        p->members = clamp_u32(r->pool_members.v[i]);
        p->inflight = clamp_u32(r->pool_inflight.v[i]);
        p->rate_per_s = (double)r->pool_rate.v[i] / 1000.0;
        p->recommended = clamp_u32(r->pool_recommended.v[i]);
        p->paused = (r->pool_flags.v[i] & POOL_FLAG_PAUSED) != 0;
        p->autoscale = (r->pool_flags.v[i] & POOL_FLAG_AUTOSCALE) != 0;
    }
    *n = r->pool_names.n;
    return SL_OK;
}

int sl_pool_resize(sl_client *c, const char *pool, uint32_t size)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    proto_msg m;
    admin_init(&m, "pool.resize");
    int rc = pool_arg(c, &m, pool);
    if (rc)
        return rc;
    proto_set(&m, size, size);
    return admin_call(c, &m);
}

int sl_pool_pause(sl_client *c, const char *pool, int paused)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    proto_msg m;
    admin_init(&m, paused ? "pool.pause" : "pool.resume");
    int rc = pool_arg(c, &m, pool);
    if (rc)
        return rc;
    return admin_call(c, &m);
}

int sl_pool_autoscale(sl_client *c, const char *pool, uint32_t min, uint32_t max,
                      uint64_t target_wait_ms, int enabled)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    proto_msg m;
    admin_init(&m, "pool.autoscale");
    int rc = pool_arg(c, &m, pool);
    if (rc)
        return rc;
    proto_set(&m, enabled, enabled ? 1 : 0);
    if (enabled) {
        if (min > max)
            return client_fail(c, SL_EINVAL);
        proto_set(&m, min, min);
        proto_set(&m, max, max);
        proto_set(&m, target_wait_ms, target_wait_ms);
    }
    return admin_call(c, &m);
}

/* ---- the sink ---- */

int sl_sink_set(sl_client *c, uint64_t rate_milli, uint64_t burst, uint64_t max_inflight)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    proto_msg m;
    admin_init(&m, "sink.set");
    if (rate_milli != SL_UNCHANGED)
        proto_set(&m, rate_milli, rate_milli);
    if (burst != SL_UNCHANGED)
        proto_set(&m, burst, burst);
    if (max_inflight != SL_UNCHANGED)
        proto_set(&m, max_inflight, max_inflight);
    return admin_call(c, &m);
}

int sl_sink_show(sl_client *c, sl_sink_info *out)
{
    int rc = query(c, out, "sink.show");
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
    proto_mask want = PF(rate_milli) | PF(effective_rate_milli) | PF(burst) | PF(max_inflight) |
                      PF(sink_inflight) | PF(tokens_milli) | PF(paused_ms);
    if ((r->present & want) != want)
        return client_fail(c, SL_EPROTO);
    *out = (sl_sink_info){
        .rate_milli = r->rate_milli,
        .effective_rate_milli = r->effective_rate_milli,
        .burst = clamp_u32(r->burst),
        .max_inflight = r->max_inflight,
        .inflight = r->sink_inflight,
        .tokens_milli = r->tokens_milli,
        .paused_ms = r->paused_ms,
        .breaker_trips = r->breaker_trips,
    };
    client_str_copy(out->breaker, sizeof out->breaker, (r->present & PF(breaker)) ? r->breaker : (proto_buf){"", 0});
    return SL_OK;
}

/* ---- explain ---- */

int sl_explain(sl_client *c, uint64_t id, sl_explain_info *out)
{
    if (!c)
        return SL_EINVAL;
    client_err_clear(c);
    if (!out)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, "explain");
    proto_set(&m, id, id);
    int rc = admin_call(c, &m);
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
    if (!proto_has(r, PROTO_F_state))
        return client_fail(c, SL_EPROTO);
    memset(out, 0, sizeof *out);
    client_str_copy(out->state, sizeof out->state, r->state);
    out->level = r->level > UINT_MAX ? UINT_MAX : (unsigned)r->level;
    out->position = r->position;
    out->until_ms = r->until_ms;
    if (proto_has(r, PROTO_F_msg))
        client_str_copy(out->why, sizeof out->why, r->msg);
    return SL_OK;
}
