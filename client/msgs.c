/*
 * msgs.c - the calls of sluice.h on a level's waiting messages (peek,
 * delete, purge, move), backups and the settings as declarations.
 *
 * Each call is one ADMIN request (msg.peek, msg.delete, msg.purge,
 * msg.move, backup, backup.status, settings.export in proto's
 * PROTO_ADMIN_CMDS), made and checked by admin.c's admin_init and
 * admin_call. Purge and move change at most one chunk (SL_MSG_CHUNK) per
 * call, one transaction in the broker; the caller loops on *after. Peek's
 * rows were checked by the decoder against PROTO_COLS_msg and are copied
 * one column at a time, strings cut to their fields.
 *
 * No state; one round trip per call. Pointers handed back (the export's
 * text) point into the client's last reply.
 */
#include "sluice.h"

#include <string.h>

#include "client.h"
#include "proto.h"

_Static_assert(SL_MSG_PAGE == PROTO_MAX_ARRAY, "a page of waiting messages is one ROWS field");
_Static_assert(SL_MSG_TEXT == PROTO_MAX_NAME, "peek's strings are string columns");

/* start checks c and out and makes m an ADMIN request for cmd. */
static int start(sl_client *c, proto_msg *m, proto_cmd cmd, const void *out)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    admin_init(m, cmd);
    return SL_OK;
}

/* where sets m's level (and to_level, when to is not NULL) and tag. */
static int where(sl_client *c, proto_msg *m, unsigned level, const unsigned *to, const char *tag)
{
    if (level >= PROTO_MAX_LEVELS || (to && *to >= PROTO_MAX_LEVELS))
        return client_fail(c, SL_ENOLEVEL);
    proto_set(m, level, level);
    if (to)
        proto_set(m, to_level, *to);
    if (tag) {
        size_t len = strnlen(tag, PROTO_MAX_TAG + 1);
        if (len > PROTO_MAX_TAG)
            return client_fail(c, SL_EINVAL);
        proto_set_str(m, PROTO_F_tag, tag, len);
    }
    return SL_OK;
}

int sl_msg_peek(sl_client *c, unsigned level, const char *tag, uint64_t after, unsigned max, sl_waiting *out,
                unsigned *n, uint64_t *next)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_msg_peek, n && next ? (const void *)out : NULL);
    if (rc)
        return rc;
    *n = 0;
    *next = 0;
    if ((rc = where(c, &m, level, NULL, tag)))
        return rc;
    client_page_ask(&m, after, max);
    if ((rc = admin_call(c, &m)))
        return rc;
    const proto_rows_msg *rows = &c->reply.msg_rows;
    if (!client_page_fits(rows->n, max)) /* more than asked for: out has no room for them */
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < rows->n; i++) {
        const proto_row_msg *r = &rows->v[i];
        sl_waiting *w = &out[i];
        memset(w, 0, sizeof *w);
        w->id = r->id;
        client_str_copy(w->tag, sizeof w->tag, r->tag);
        w->attempts = r->attempts;
        w->age_ms = r->age_ms;
        w->cost = r->cost > UINT32_MAX ? UINT32_MAX : (uint32_t)r->cost;
        w->body_bytes = r->body_bytes;
        w->preview_len = r->preview.len < sizeof w->preview ? r->preview.len : sizeof w->preview;
        memcpy(w->preview, r->preview.ptr, w->preview_len);
        w->pos = r->pos;
    }
    *n = rows->n;
    *next = c->reply.after;
    return SL_OK;
}

int sl_msg_delete(sl_client *c, uint64_t id, unsigned *level)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_msg_delete, &m);
    if (rc)
        return rc;
    proto_set(&m, id, id);
    if ((rc = admin_call(c, &m)))
        return rc;
    if (level)
        *level = c->reply.level < PROTO_MAX_LEVELS ? (unsigned)c->reply.level : 0;
    return SL_OK;
}

/* chunk sends a msg.purge or msg.move request m and reads its answer. */
static int chunk(sl_client *c, proto_msg *m, uint64_t max, uint64_t *after, uint64_t *done, uint64_t *leased)
{
    if (max)
        proto_set(m, n, max > SL_MSG_CHUNK ? SL_MSG_CHUNK : max);
    if (*after)
        proto_set(m, after, *after);
    int rc = admin_call(c, m);
    if (rc)
        return rc;
    *done = c->reply.n;
    *after = c->reply.after;
    if (leased)
        *leased = c->reply.leased;
    return SL_OK;
}

int sl_msg_purge(sl_client *c, unsigned level, const char *tag, uint64_t older_than_ms, int dry_run,
                 uint64_t max, uint64_t *after, uint64_t *purged, uint64_t *leased)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_msg_purge, after && purged ? (const void *)after : NULL);
    if (rc == SL_OK)
        rc = where(c, &m, level, NULL, tag);
    if (rc)
        return rc;
    if (older_than_ms)
        proto_set(&m, older_than_ms, older_than_ms);
    if (dry_run)
        proto_set(&m, dry_run, 1);
    return chunk(c, &m, max, after, purged, leased);
}

int sl_msg_move(sl_client *c, unsigned level, unsigned to_level, const char *tag, uint64_t max, uint64_t *after,
                uint64_t *moved, uint64_t *leased)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_msg_move, after && moved ? (const void *)after : NULL);
    if (rc == SL_OK)
        rc = where(c, &m, level, &to_level, tag);
    return rc ? rc : chunk(c, &m, max, after, moved, leased);
}

int sl_backup(sl_client *c, const char *dir)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_backup, dir);
    if (rc)
        return rc;
    size_t len = strnlen(dir, PROTO_MAX_STR + 1);
    if (len == 0 || len > PROTO_MAX_STR)
        return client_fail(c, SL_EINVAL);
    proto_set_str(&m, PROTO_F_path, dir, len);
    return admin_call(c, &m);
}

int sl_backup_status(sl_client *c, sl_backup_info *out)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_backup_status, out);
    if (rc || (rc = admin_call(c, &m)))
        return rc;
    const proto_msg *r = &c->reply;
    memset(out, 0, sizeof *out);
    client_str_copy(out->state, sizeof out->state, r->state);
    client_str_copy(out->path, sizeof out->path, r->path);
    out->bytes = r->bytes;
    out->elapsed_ms = r->elapsed_ms;
    client_str_copy(out->msg, sizeof out->msg, r->msg);
    return SL_OK;
}

int sl_settings_export(sl_client *c, const char **text, size_t *len)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_settings_export, text && len ? (const void *)text : NULL);
    if (rc || (rc = admin_call(c, &m)))
        return rc;
    *text = c->reply.body.ptr;
    *len = c->reply.body.len;
    return SL_OK;
}
