/*
 * admin.c - the administration calls of sluice.h: level settings and rates,
 * pools, the sink, and explaining a message.
 *
 * Every call here is one ADMIN request: "cmd" names the command and the
 * other fields are its arguments, an absent field meaning "leave it as it
 * is". The broker answers ADMIN_OK with the results, or ERROR, whose code
 * and text client_request records. The commands, their arguments and their
 * results are proto's PROTO_ADMIN_CMDS list, which the broker's table is
 * made from too; this file names commands by their PROTO_CMD_ number only.
 * A request is checked against the list before it leaves (admin_call), and
 * a reply must carry every result field the list promises for its command.
 *
 * A limit's windows travel as window rows: every window in a set (which
 * replaces them all), and in level.list one row per window with its level,
 * sorted into each sl_level_info here (rows naming a level the list lacks
 * are dropped).
 *
 * List results (level.list, pool.list) are rows, one per level or pool. The
 * decoder has already checked every row against its kind's column table
 * (proto's PROTO_COLS_ lists): no unknown, duplicate or mistyped column,
 * every required one present, no more rows than the kind allows (16 levels,
 * 64 pools), so that a malformed reply is SL_EPROTO and leaves the output
 * untouched. The copy into sl_level_info and sl_pool_info is then one
 * assignment per column. Strings are copied NUL-terminated and truncated to
 * their field. Numbers wider than their field are clamped, except bit masks,
 * which keep their low bits.
 *
 * This file keeps no state: the reply it reads lives in c->reply until the
 * next receive. Cost: one round trip per call. The dead-letter calls are in
 * dead.c, through admin_init and admin_call (client.h).
 */
#include "sluice.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "client.h"
#include "proto.h"

_Static_assert(PROTO_MAX_LEVELS <= SL_MAX_LEVELS, "a level list fits sl_level_list's array");
_Static_assert(PROTO_MAX_POOLS <= SL_MAX_POOLS, "a pool list fits sl_pool_list's array");

void admin_init(proto_msg *m, proto_cmd cmd)
{
    const char *name = proto_cmd_name(cmd);
    proto_init(m, PROTO_ADMIN);
    proto_set_str(m, PROTO_F_cmd, name, strlen(name));
}

int admin_call(sl_client *c, proto_msg *m)
{
    char text[PROTO_MAX_STR];
    proto_cmd cmd;
    proto_mask results;
    int rc = proto_cmd_check(m, &cmd, text, sizeof text);
    if (rc)
        return client_fail_text(c, SL_EINVAL, text, strlen(text));
    c->await_once = proto_cmd_repeatable(cmd) ? NULL : proto_cmd_name(cmd);
    rc = client_request(c, m, PROTO_ADMIN_OK);
    c->await_once = NULL;
    if (rc)
        return rc;
    proto_cmd_def(cmd, NULL, NULL, NULL, &results);
    results &= ~(PROTO_RESULTS_OPTIONAL | PROTO_RESULTS_OPTIONAL_IN(cmd));
    if ((c->reply.present & results) != results)
        return client_fail(c, SL_EPROTO);
    return SL_OK;
}

/* level_check refuses a level the broker cannot have, or, once its levels
 * are known, does not have. */
static int level_check(sl_client *c, unsigned level)
{
    if (level >= SL_MAX_LEVELS || (c->have_levels && level >= c->nlevels))
        return client_fail(c, SL_ENOLEVEL);
    return SL_OK;
}

/* level_msg starts a request for cmd about one level: clears the last
 * error, checks the level and makes m a cmd request naming it. */
static int level_msg(sl_client *c, proto_msg *m, proto_cmd cmd, unsigned level)
{
    if (!client_begin(c))
        return SL_EINVAL;
    int rc = level_check(c, level);
    if (rc)
        return rc;
    admin_init(m, cmd);
    proto_set(m, level, level);
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

static uint32_t clamp_u32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* query runs an ADMIN command that takes no arguments and answers into out
 * (which must not be NULL); the reply is then in c->reply. */
static int query(sl_client *c, const void *out, proto_cmd cmd)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, cmd);
    return admin_call(c, &m);
}

/* ---- windows ---- */

_Static_assert(PROTO_MAX_WINDOWS == SL_MAX_WINDOWS, "a limit's windows fit sl_window arrays");

/* windows_arg sets w[0..n) as m's window rows (n 0: one window of 0, no
 * limit). */
static int windows_arg(sl_client *c, proto_msg *m, const sl_window *w, unsigned n)
{
    if (n > SL_MAX_WINDOWS || (n && !w))
        return client_fail(c, SL_EINVAL);
    proto_rows_window *rows = &m->window_rows;
    m->present |= PF(window_rows);
    rows->n = n ? n : 1;
    for (unsigned i = 0; i < rows->n; i++)
        rows->v[i] = (proto_row_window){
            .present = PROTO_ROW_ALL(window) & ~(1u << PROTO_COL_window_level) &
                       ~(1u << PROTO_COL_window_tokens_milli),
            .count_milli = n ? w[i].count_milli : 0,
            .period_ms = n ? w[i].period_ms : 1000,
            .burst = n ? w[i].burst : 0,
        };
    return SL_OK;
}

/* base_window is a limit's per-second window as the reply's rate and burst
 * give it, when the broker sent no window rows for it (it had no other). */
static void base_window(sl_window *w, unsigned *n, uint64_t rate_milli, uint32_t burst, uint64_t tokens_milli)
{
    *n = 0;
    if (rate_milli)
        w[(*n)++] = (sl_window){rate_milli, 1000, burst ? burst : 1, tokens_milli};
}

/* window_copy copies a reply's window row. */
static void window_copy(sl_window *w, const proto_row_window *r)
{
    *w = (sl_window){.count_milli = r->count_milli, .period_ms = r->period_ms, .burst = clamp_u32(r->burst),
                     .tokens_milli = r->tokens_milli};
}

/* ---- levels ---- */

int sl_level_list(sl_client *c, sl_level_info *out, unsigned *n)
{
    return sl_level_list_ex(c, out, NULL, n);
}

int sl_level_list_ex(sl_client *c, sl_level_info *out, uint64_t *throttled_ms, unsigned *n)
{
    if (n)
        *n = 0;
    int rc = query(c, n ? (const void *)out : NULL, PROTO_CMD_level_list);
    if (rc)
        return rc;
    const proto_rows_level *rows = &c->reply.level_rows;
    if (rows->n > SL_MAX_LEVELS)
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < rows->n; i++) {
        const proto_row_level *r = &rows->v[i];
        sl_level_info *l = &out[i];
        memset(l, 0, sizeof *l);
        client_str_copy(l->name, sizeof l->name, r->name);
        l->deadline_ms = r->deadline_ms;
        l->aging_ms = r->aging_ms;
        l->paused = r->paused != 0;
        l->depth = r->depth;
        l->oldest_ms = r->oldest_ms;
        l->max_rate_milli = r->max_rate_milli;
        l->min_rate_milli = r->min_rate_milli;
        l->burst = clamp_u32(r->burst);
        l->tokens_milli = r->tokens_milli;
        l->eta_ms = r->eta_ms;
        l->fair = r->fair || r->fair_tenants;
        if (throttled_ms)
            throttled_ms[i] = r->throttled_ms; /* an optional column: 0 when absent */
    }
    const proto_rows_window *win = &c->reply.window_rows;
    bool listed[SL_MAX_LEVELS] = {false};
    for (unsigned i = 0; (c->reply.present & PF(window_rows)) && i < win->n; i++) {
        uint64_t lv = win->v[i].level;
        if (lv < rows->n && out[lv].nwindows < SL_MAX_WINDOWS) {
            window_copy(&out[lv].windows[out[lv].nwindows++], &win->v[i]);
            listed[lv] = true;
        }
    }
    for (unsigned i = 0; i < rows->n; i++)
        if (!listed[i])
            base_window(out[i].windows, &out[i].nwindows, out[i].max_rate_milli, out[i].burst,
                        out[i].tokens_milli);
    *n = rows->n;
    return SL_OK;
}

int sl_level_set(sl_client *c, unsigned level, uint64_t deadline_ms, uint64_t aging_ms)
{
    proto_msg m;
    int rc = level_msg(c, &m, PROTO_CMD_level_set, level);
    if (rc)
        return rc;
    if (deadline_ms != SL_UNCHANGED)
        proto_set(&m, deadline_ms, deadline_ms);
    if (aging_ms != SL_UNCHANGED)
        proto_set(&m, aging_ms, aging_ms);
    return admin_call(c, &m);
}

int sl_level_rate(sl_client *c, unsigned level, uint64_t max_rate_milli, uint64_t min_rate_milli,
                  uint64_t burst)
{
    proto_msg m;
    int rc = level_msg(c, &m, PROTO_CMD_level_set, level);
    if (rc)
        return rc;
    if (max_rate_milli != SL_UNCHANGED)
        proto_set(&m, rate_milli, max_rate_milli);
    if (min_rate_milli != SL_UNCHANGED)
        proto_set(&m, min_rate_milli, min_rate_milli);
    if (burst != SL_UNCHANGED)
        proto_set(&m, burst, burst);
    return admin_call(c, &m);
}

int sl_level_windows(sl_client *c, unsigned level, const sl_window *w, unsigned n)
{
    proto_msg m;
    int rc = level_msg(c, &m, PROTO_CMD_level_set, level);
    if (rc)
        return rc;
    if ((rc = windows_arg(c, &m, w, n)) != SL_OK)
        return rc;
    return admin_call(c, &m);
}

int sl_level_pause(sl_client *c, unsigned level, int paused)
{
    proto_msg m;
    int rc = level_msg(c, &m, paused ? PROTO_CMD_level_pause : PROTO_CMD_level_resume, level);
    if (rc)
        return rc;
    return admin_call(c, &m);
}

/* ---- pools ---- */

int sl_pool_list(sl_client *c, sl_pool_info *out, unsigned *n)
{
    if (n)
        *n = 0;
    int rc = query(c, n ? (const void *)out : NULL, PROTO_CMD_pool_list);
    if (rc)
        return rc;
    const proto_rows_pool *rows = &c->reply.pool_rows;
    if (rows->n > SL_MAX_POOLS)
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < rows->n; i++) {
        const proto_row_pool *r = &rows->v[i];
        sl_pool_info *p = &out[i];
        memset(p, 0, sizeof *p);
        client_str_copy(p->name, sizeof p->name, r->name);
        p->levels_mask = (uint32_t)(r->levels_mask & UINT32_MAX);
        p->size = clamp_u32(r->size);
        p->members = clamp_u32(r->members);
        p->inflight = clamp_u32(r->inflight);
        p->rate_per_s = (double)r->rate_milli / 1000.0;
        p->recommended = clamp_u32(r->recommended);
        p->paused = r->paused != 0;
        p->autoscale = r->autoscale != 0;
    }
    *n = rows->n;
    return SL_OK;
}

int sl_pool_resize(sl_client *c, const char *pool, uint32_t size)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_pool_resize);
    int rc = pool_arg(c, &m, pool);
    if (rc)
        return rc;
    proto_set(&m, size, size);
    return admin_call(c, &m);
}

int sl_pool_pause(sl_client *c, const char *pool, int paused)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, paused ? PROTO_CMD_pool_pause : PROTO_CMD_pool_resume);
    int rc = pool_arg(c, &m, pool);
    if (rc)
        return rc;
    return admin_call(c, &m);
}

int sl_pool_delete(sl_client *c, const char *pool, int force)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_pool_delete);
    int rc = pool_arg(c, &m, pool);
    if (rc)
        return rc;
    if (force)
        proto_set(&m, force, 1);
    return admin_call(c, &m);
}

int sl_pool_autoscale(sl_client *c, const char *pool, uint32_t min, uint32_t max,
                      uint64_t target_wait_ms, int enabled)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_pool_autoscale);
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
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_sink_set);
    if (rate_milli != SL_UNCHANGED)
        proto_set(&m, rate_milli, rate_milli);
    if (burst != SL_UNCHANGED)
        proto_set(&m, burst, burst);
    if (max_inflight != SL_UNCHANGED)
        proto_set(&m, max_inflight, max_inflight);
    return admin_call(c, &m);
}

int sl_sink_windows(sl_client *c, const sl_window *w, unsigned n)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_sink_set);
    int rc = windows_arg(c, &m, w, n);
    if (rc)
        return rc;
    return admin_call(c, &m);
}

int sl_sink_show(sl_client *c, sl_sink_info *out)
{
    int rc = query(c, out, PROTO_CMD_sink_show);
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
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
    client_str_copy(out->breaker, sizeof out->breaker, r->breaker);
    client_str_copy(out->reason, sizeof out->reason, r->state);
    client_coord_copy(&out->coord, r);
    if (!(r->present & PF(window_rows)) || r->window_rows.n == 0)
        base_window(out->windows, &out->nwindows, out->rate_milli, out->burst, out->tokens_milli);
    for (unsigned i = 0; (r->present & PF(window_rows)) && i < r->window_rows.n && i < SL_MAX_WINDOWS; i++)
        window_copy(&out->windows[out->nwindows++], &r->window_rows.v[i]);
    return SL_OK;
}

int sl_sink_resume(sl_client *c, uint64_t *left_ms)
{
    if (left_ms)
        *left_ms = 0;
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_sink_resume);
    int rc = admin_call(c, &m);
    if (rc == SL_OK && left_ms)
        *left_ms = c->reply.paused_ms;
    return rc;
}

/* ---- explain ---- */

int sl_explain(sl_client *c, uint64_t id, sl_explain_info *out)
{
    return sl_explain_ex(c, id, out, NULL);
}

int sl_explain_ex(sl_client *c, uint64_t id, sl_explain_info *out, sl_msg_more *more)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out || (more && more->size < sizeof more->size))
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, PROTO_CMD_explain);
    proto_set(&m, id, id);
    int rc = admin_call(c, &m);
    if (rc)
        return rc;

    const proto_msg *r = &c->reply;
    memset(out, 0, sizeof *out);
    client_str_copy(out->state, sizeof out->state, r->state);
    out->level = r->level > UINT_MAX ? UINT_MAX : (unsigned)r->level;
    out->position = r->position;
    out->until_ms = r->until_ms;
    client_str_copy(out->why, sizeof out->why, r->msg);
    if (more)
        client_more_fill(c, r, more);
    return SL_OK;
}

int sl_level_fair(sl_client *c, unsigned level, int fair)
{
    proto_msg m;
    int rc = level_msg(c, &m, PROTO_CMD_level_set, level);
    if (rc)
        return rc;
    const char *how = fair ? "tag" : "fifo";
    proto_set_str(&m, PROTO_F_state, how, (uint32_t)strlen(how));
    return admin_call(c, &m);
}

int sl_ha_status_get(sl_client *c, sl_ha_status *out)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, PROTO_CMD_ha_status);
    int rc = admin_call(c, &m);
    if (rc)
        return rc;
    const proto_msg *r = &c->reply;
    memset(out, 0, sizeof *out);
    out->epoch = r->epoch;
    for (uint32_t i = 0; i < r->ha_rows.n && i < SL_HA_NODES_MAX; i++) {
        const proto_row_ha *row = &r->ha_rows.v[i];
        sl_ha_node *n = &out->nodes[out->nnodes++];
        client_str_copy(n->node, sizeof n->node, row->node);
        client_str_copy(n->role, sizeof n->role, row->role);
        client_str_copy(n->endpoint, sizeof n->endpoint, row->endpoint);
        n->in_sync = row->in_sync != 0;
        n->lag_records = row->lag_records;
    }
    return SL_OK;
}

int sl_ha_switchover(sl_client *c)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    admin_init(&m, PROTO_CMD_ha_switchover);
    return admin_call(c, &m);
}

int sl_ha_recover(sl_client *c, const char *node)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!node || !node[0] || strlen(node) > PROTO_MAX_NAME)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, PROTO_CMD_ha_recover);
    proto_set_str(&m, PROTO_F_node, node, (uint32_t)strlen(node));
    return admin_call(c, &m);
}

int sl_web_login(sl_client *c, uint64_t ttl_ms, sl_web_link *out)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    admin_init(&m, PROTO_CMD_web_login);
    if (ttl_ms)
        proto_set(&m, ttl_ms, ttl_ms);
    int rc = admin_call(c, &m);
    if (rc)
        return rc;
    const proto_msg *r = &c->reply;
    memset(out, 0, sizeof *out);
    client_str_copy(out->url, sizeof out->url, r->url);
    client_str_copy(out->token, sizeof out->token, r->login_token);
    client_str_copy(out->role, sizeof out->role, r->state);
    out->ttl_ms = r->ttl_ms;
    return SL_OK;
}
