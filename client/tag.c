/*
 * tag.c - the per-tag calls of sluice.h: sl_tag_set, sl_tag_off,
 * sl_tag_pause and sl_tag_list, one ADMIN request each (tag.set, tag.list,
 * tag.pause, tag.resume); sl_tag_list_ex adds what THROTTLEDs for a tag
 * alone left on each row (sl_tag_throttle, beside sl_tag_info).
 *
 * A pattern or tag travels in the request's tag field; what tag.set changes
 * in one tag row (a column present per setting given) and the rate's
 * windows as window rows, as sl_level_windows sends them. tag.list's rows
 * were checked by the decoder against their column table; a pattern row's
 * windows come as window rows whose level column names the row. Strings are
 * copied NUL-terminated (the broker cuts them to 64 bytes). No state; one
 * round trip per call.
 */
#include "sluice.h"

#include <string.h>

#include "client.h"
#include "proto.h"

static int tag_msg(sl_client *c, proto_msg *m, proto_cmd cmd, const char *tag)
{
    if (!client_begin(c))
        return SL_EINVAL;
    size_t len = tag ? strnlen(tag, PROTO_MAX_TAG + 1) : 0;
    if (len == 0 || len > PROTO_MAX_TAG)
        return client_fail(c, SL_EINVAL);
    admin_init(m, cmd);
    proto_set_str(m, PROTO_F_tag, tag, len);
    return SL_OK;
}

void sl_tag_settings_init(sl_tag_settings *s)
{
    memset(s, 0, sizeof *s);
    s->weight = s->max_inflight = s->each = s->burst = SL_UNCHANGED;
    s->nwindows = -1;
}

int sl_tag_set(sl_client *c, const char *pattern, const sl_tag_settings *s)
{
    proto_msg m;
    int rc = tag_msg(c, &m, PROTO_CMD_tag_set, pattern);
    if (rc)
        return rc;
    if (!s || s->nwindows > SL_MAX_WINDOWS)
        return client_fail(c, SL_EINVAL);
    proto_row_tag *r = &m.tag_rows.v[0];
    memset(r, 0, sizeof *r);
#define COL(col, v)                                    \
    if ((v) != SL_UNCHANGED) {                         \
        r->col = (v);                                  \
        r->present |= 1u << PROTO_COL_tag_##col;       \
    }
    COL(weight, s->weight)
    COL(max_inflight, s->max_inflight)
    COL(each, s->each)
    COL(burst, s->burst)
#undef COL
    if (r->present) {
        m.tag_rows.n = 1;
        m.present |= PF(tag_rows);
    }
    if (s->nwindows >= 0) {
        unsigned n = (unsigned)s->nwindows;
        m.present |= PF(window_rows);
        m.window_rows.n = n ? n : 1;
        for (unsigned i = 0; i < m.window_rows.n; i++)
            m.window_rows.v[i] = (proto_row_window){
                .present = PROTO_ROW_ALL(window) & ~(1u << PROTO_COL_window_level) &
                           ~(1u << PROTO_COL_window_tokens_milli),
                .count_milli = n ? s->windows[i].count_milli : 0,
                .period_ms = n ? s->windows[i].period_ms : 1000,
                .burst = n ? s->windows[i].burst : 0,
            };
    }
    return admin_call(c, &m);
}

int sl_tag_off(sl_client *c, const char *pattern)
{
    proto_msg m;
    int rc = tag_msg(c, &m, PROTO_CMD_tag_set, pattern);
    if (rc)
        return rc;
    m.tag_rows.n = 1;
    m.tag_rows.v[0] = (proto_row_tag){.present = 1u << PROTO_COL_tag_off, .off = 1};
    m.present |= PF(tag_rows);
    return admin_call(c, &m);
}

int sl_tag_pause(sl_client *c, const char *tag, int paused)
{
    proto_msg m;
    int rc = tag_msg(c, &m, paused ? PROTO_CMD_tag_pause : PROTO_CMD_tag_resume, tag);
    if (rc)
        return rc;
    return admin_call(c, &m);
}

int sl_tag_list(sl_client *c, sl_tag_info *out, unsigned *n)
{
    return sl_tag_list_ex(c, out, NULL, n);
}

int sl_tag_list_ex(sl_client *c, sl_tag_info *out, sl_tag_throttle *thr, unsigned *n)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out || !n)
        return client_fail(c, SL_EINVAL);
    *n = 0;
    proto_msg m;
    admin_init(&m, PROTO_CMD_tag_list);
    int rc = admin_call(c, &m);
    if (rc)
        return rc;
    const proto_rows_tag *rows = &c->reply.tag_rows;
    if (rows->n > SL_MAX_TAG_ROWS)
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < rows->n; i++) {
        const proto_row_tag *r = &rows->v[i];
        sl_tag_info *t = &out[i];
        memset(t, 0, sizeof *t);
        client_str_copy(t->pattern, sizeof t->pattern, r->pattern);
        client_str_copy(t->tag, sizeof t->tag, r->tag);
        t->has_level = (r->present >> PROTO_COL_tag_level) & 1;
        t->level = r->level > 255 ? 255 : (unsigned)r->level;
        t->depth = r->depth;
        t->inflight = r->inflight;
        t->oldest_ms = r->oldest_ms;
        t->weight = r->weight ? r->weight : 1;
        t->max_inflight = r->max_inflight;
        t->rate_milli = r->rate_milli;
        t->burst = r->burst;
        t->tokens_milli = r->tokens_milli;
        t->each = r->each != 0;
        t->paused = r->paused != 0;
        t->limited = (r->present >> PROTO_COL_tag_tokens_milli) & 1;
        if (thr)
            thr[i] = (sl_tag_throttle){.throttled_ms = r->throttled_ms,
                                       .effective_rate_milli = r->effective_rate_milli};
    }
    const proto_rows_window *w = &c->reply.window_rows;
    for (unsigned i = 0; (c->reply.present & PF(window_rows)) && i < w->n; i++) {
        uint64_t at = w->v[i].level;
        if (at < rows->n && out[at].nwindows < SL_MAX_WINDOWS)
            out[at].windows[out[at].nwindows++] =
                (sl_window){.count_milli = w->v[i].count_milli, .period_ms = w->v[i].period_ms,
                            .burst = w->v[i].burst > UINT32_MAX ? UINT32_MAX : (uint32_t)w->v[i].burst,
                            .tokens_milli = w->v[i].tokens_milli};
    }
    *n = rows->n;
    return SL_OK;
}
