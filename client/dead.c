/*
 * dead.c - the dead-letter calls of sluice.h: list, peek, requeue, purge.
 *
 * Each call is one ADMIN request (dead.list, dead.peek, dead.requeue,
 * dead.purge in proto's PROTO_ADMIN_CMDS), made and checked by admin.c's
 * admin_init and admin_call. Requeue and purge change at most one chunk
 * (SL_DEAD_CHUNK) per call, one transaction in the broker; the caller loops
 * on *after. List rows were checked by the decoder against PROTO_COLS_dead
 * and are copied one column at a time, strings cut to their fields.
 *
 * No state; one round trip per call.
 */
#include "sluice.h"

#include <string.h>

#include "client.h"
#include "proto.h"

_Static_assert(SL_DEAD_PAGE == PROTO_MAX_ARRAY, "a page of dead letters is one ROWS field");
_Static_assert(SL_DEAD_TEXT == PROTO_MAX_NAME, "list strings are string columns");

/* start checks c and makes m an ADMIN request for cmd. */
static int start(sl_client *c, proto_msg *m, proto_cmd cmd, const void *out)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    admin_init(m, cmd);
    return SL_OK;
}

static int level_arg(sl_client *c, proto_msg *m, proto_field f, unsigned level)
{
    if (level >= PROTO_MAX_LEVELS)
        return client_fail(c, SL_ENOLEVEL);
    if (f == PROTO_F_to_level)
        proto_set(m, to_level, level);
    else
        proto_set(m, level, level);
    return SL_OK;
}

int sl_dead_list(sl_client *c, unsigned level, uint64_t after, unsigned max, sl_dead_letter *out, unsigned *n)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_dead_list, n ? (const void *)out : NULL);
    if (rc)
        return rc;
    *n = 0;
    if ((rc = level_arg(c, &m, PROTO_F_level, level)))
        return rc;
    client_page_ask(&m, after, max);
    if ((rc = admin_call(c, &m)))
        return rc;
    const proto_rows_dead *rows = &c->reply.dead_rows;
    if (!client_page_fits(rows->n, max)) /* more than asked for: out has no room for them */
        return client_fail(c, SL_EPROTO);
    for (unsigned i = 0; i < rows->n; i++) {
        const proto_row_dead *r = &rows->v[i];
        sl_dead_letter *d = &out[i];
        memset(d, 0, sizeof *d);
        d->id = r->id;
        client_str_copy(d->tag, sizeof d->tag, r->tag);
        d->attempts = r->attempts;
        d->died_ms = r->died_ms;
        client_str_copy(d->reason, sizeof d->reason, r->reason);
        d->preview_len = r->preview.len < sizeof d->preview ? r->preview.len : sizeof d->preview;
        memcpy(d->preview, r->preview.ptr, d->preview_len);
        d->body_bytes = r->body_bytes;
    }
    *n = rows->n;
    return SL_OK;
}

int sl_dead_peek(sl_client *c, uint64_t id, sl_dead_message *out)
{
    return sl_dead_peek_ex(c, id, out, NULL);
}

int sl_dead_peek_ex(sl_client *c, uint64_t id, sl_dead_message *out, sl_msg_more *more)
{
    if (c && more && more->size < sizeof more->size)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_dead_peek, out);
    if (rc)
        return rc;
    proto_set(&m, id, id);
    if ((rc = admin_call(c, &m)))
        return rc;
    const proto_msg *r = &c->reply;
    if (r->level >= PROTO_MAX_LEVELS)
        return client_fail(c, SL_EPROTO);
    *out = (sl_dead_message){
        .id = r->id,
        .level = (unsigned)r->level,
        .attempts = r->attempt,
        .tag = r->tag.ptr,
        .tag_len = r->tag.len,
        .body = r->body.ptr,
        .body_len = r->body.len,
        .reason = r->msg.ptr,
        .reason_len = r->msg.len,
    };
    if (more)
        client_more_fill(c, r, more);
    return SL_OK;
}

/* chunk sends a dead.requeue or dead.purge request m and reads its answer. */
static int chunk(sl_client *c, proto_msg *m, uint64_t max, uint64_t *done, uint64_t *after)
{
    if (max)
        proto_set(m, n, max > SL_DEAD_CHUNK ? SL_DEAD_CHUNK : max);
    int rc = admin_call(c, m);
    if (rc)
        return rc;
    if (done)
        *done = c->reply.n;
    if (after)
        *after = c->reply.after;
    return SL_OK;
}

int sl_dead_requeue(sl_client *c, unsigned level, unsigned to_level, uint64_t max, uint64_t *moved,
                    uint64_t *after)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_dead_requeue, &m);
    if (rc == SL_OK)
        rc = level_arg(c, &m, PROTO_F_level, level);
    if (rc == SL_OK && to_level != SL_SAME_LEVEL)
        rc = level_arg(c, &m, PROTO_F_to_level, to_level);
    return rc ? rc : chunk(c, &m, max, moved, after);
}

int sl_dead_requeue_id(sl_client *c, uint64_t id, unsigned to_level)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_dead_requeue, &m);
    if (rc)
        return rc;
    proto_set(&m, id, id);
    if (to_level != SL_SAME_LEVEL && (rc = level_arg(c, &m, PROTO_F_to_level, to_level)))
        return rc;
    return chunk(c, &m, 0, NULL, NULL);
}

int sl_dead_purge(sl_client *c, unsigned level, uint64_t older_than_ms, uint64_t max, uint64_t *after,
                  uint64_t *purged)
{
    proto_msg m;
    int rc = start(c, &m, PROTO_CMD_dead_purge, after);
    if (rc == SL_OK)
        rc = level_arg(c, &m, PROTO_F_level, level);
    if (rc)
        return rc;
    if (older_than_ms)
        proto_set(&m, older_than_ms, older_than_ms);
    if (*after)
        proto_set(&m, after, *after);
    return chunk(c, &m, max, purged, after);
}
