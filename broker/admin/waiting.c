/*
 * waiting.c - the operations a queue is expected to have, on the messages
 * waiting in a level: msg.peek (read them without taking them, as
 * beanstalkd's peek-ready), msg.delete (one, by id), msg.purge (all, or
 * those of a tag, or published long enough ago) and msg.move (to the tail
 * of another level: so a level can be emptied, for instance to change how
 * it is served).
 *
 * Waiting means ready: stored in the level and not out with a consumer.
 * queue_waiting.c is the door (its view knows what is leased without a
 * lookup). A leased message is left alone and counted in the reply
 * ("leased"): acknowledged, it is gone; given back, it is ready again in the
 * level it came from, and running the command again finds it there.
 * Delayed messages (a NACK with a delay, a publish with one) join their
 * level when due and are not part of a walk; msg.delete deletes one by id.
 *
 * Batches, as dead.c's: every write happens in the loop's pass, in its one
 * write transaction, and the ADMIN_OK leaves after that commit. A request
 * changes at most WAITING_CHUNK (1,000) messages and looks at no more than
 * WAITING_SCAN (10,000), so a request is one transaction: after a kill -9,
 * each message of it is where it was or where it went, never both, never
 * neither. A whole level is a series of requests, each going on from the
 * last reply's "after" (a place in the level: an order key); a series cut
 * short is run again from the start, and since what was deleted or moved
 * is no longer in the level, nothing is done twice. A series that runs
 * while publishers append goes on to the level's end as it finds it; the
 * CLI bounds it by the depth it saw at its start.
 *
 * The walk is in key order: a FIFO level's delivery order (returned and
 * delayed messages back at the head first), a fair level's tag by tag. A
 * tag narrows a fair level's walk to its tag's run of keys; in a FIFO level
 * every record is read and compared. Moves and purges do not pass the
 * publish policy: a level's --level-max-messages does not refuse a move.
 *
 * Costs: a request O(WAITING_SCAN x (log n + record bytes)) at most, plus
 * O(returned keys) per record to tell it waits; msg.delete O(leases) and
 * O(position) per level (store_find, as explain: at most FIND_LIMIT
 * records), then O(delayed).
 */
#include "waiting.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bk.h"
#include "log.h"
#include "queue.h"
#include "units.h"

#define FIND_LIMIT 1000000ULL

static int fail(char *text, size_t text_len, int code, const char *fmt, uint64_t v)
{
    snprintf(text, text_len, fmt, v);
    return code;
}

/* A walk over a level's waiting messages, as a request asks for it. */
typedef struct walk {
    unsigned level;
    const char *tag;    /* NULL: every tag */
    size_t tag_len;
    int compare;        /* compare each record's tag (a FIFO level) */
    uint64_t pos;       /* the next key to look at */
    uint64_t below;     /* the span's end */
    unsigned seen;      /* records looked at */
    int end;            /* the span's end was reached */
} walk;

/* walk_start reads the request's level, tag and after into w. */
static int walk_start(struct bk *b, const proto_msg *req, walk *w, char *text, size_t text_len)
{
    memset(w, 0, sizeof *w);
    if (req->level >= b->cfg.levels)
        return fail(text, text_len, SL_ENOLEVEL, "level %" PRIu64 " does not exist", req->level);
    w->level = (unsigned)req->level;
    if (req->present & PF(tag)) {
        w->tag = req->tag.ptr;
        w->tag_len = req->tag.len;
        w->compare = !b->q.lv[w->level].fair;
    }
    uint64_t from;
    int rc = queue_waiting_span(&b->q, w->level, w->tag, w->tag_len, &from, &w->below);
    if (rc == SL_ENOTFOUND) { /* a fair level that never saw the tag: nothing of it */
        w->end = 1;
        return SL_OK;
    }
    if (rc != SL_OK)
        return fail(text, text_len, rc, "reading level %" PRIu64 " failed", req->level);
    uint64_t after = (req->present & PF(after)) ? req->after : 0;
    w->pos = after && after + 1 > from ? after + 1 : from;
    if (after == UINT64_MAX)
        w->end = 1;
    return SL_OK;
}

/* walk_next reads the next record of the walk that matches its tag into
 * *key, *rec and *waiting. Returns 1 with one, 0 at the span's end or once
 * WAITING_SCAN records were looked at, -1 on a store error (rc). */
static int walk_next(struct bk *b, walk *w, uint64_t *key, store_rec *rec, int *waiting, int *rc)
{
    while (!w->end && w->seen < WAITING_SCAN) {
        *rc = queue_record_next(&b->q, w->level, w->pos, w->below, key, rec, waiting);
        if (*rc == SL_ENOTFOUND) {
            w->end = 1;
            return 0;
        }
        if (*rc != SL_OK && *rc != SL_ECORRUPT)
            return -1;
        w->seen++;
        w->pos = *key + 1;
        if (*key == UINT64_MAX)
            w->end = 1;
        if (*rc == SL_ECORRUPT) /* moved aside when a take meets it */
            continue;
        if (w->compare && (rec->tag_len != w->tag_len || memcmp(rec->tag, w->tag, w->tag_len) != 0))
            continue;
        return 1;
    }
    return 0;
}

/* walk_after is where the next request goes on: 0 at the span's end. A
 * request that stopped at its chunk looks one record further, so that a
 * series ends without an empty last request. */
static uint64_t walk_after(struct bk *b, walk *w)
{
    uint64_t key;
    store_rec rec;
    int waiting;
    if (!w->end && queue_record_next(&b->q, w->level, w->pos, w->below, &key, &rec, &waiting) == SL_ENOTFOUND)
        w->end = 1;
    return w->end || w->pos == 0 ? 0 : w->pos - 1;
}

static uint64_t chunk_of(const proto_msg *req)
{
    return (req->present & PF(n)) && req->n > 0 && req->n < WAITING_CHUNK ? req->n : WAITING_CHUNK;
}

int waiting_peek(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    walk w;
    int rc = walk_start(b, req, &w, text, text_len);
    if (rc != SL_OK)
        return rc;
    uint64_t most = (req->present & PF(n)) && req->n > 0 && req->n < PROTO_MAX_ARRAY ? req->n : PROTO_MAX_ARRAY;
    proto_rows_msg *rows = &r->msg_rows;
    r->present |= PF(msg_rows);
    rows->n = 0;
    uint64_t key;
    store_rec rec;
    int waiting, got = 0;
    while (rows->n < most && (got = walk_next(b, &w, &key, &rec, &waiting, &rc)) == 1) {
        if (!waiting)
            continue;
        const char *body = rec.body;
        rows->v[rows->n++] = (proto_row_msg){
            .present = PROTO_ROW_ALL(msg),
            .id = rec.id,
            .tag = {rec.tag, proto_utf8_head(rec.tag, rec.tag_len, PROTO_MAX_NAME)},
            .attempts = rec.attempt,
            .age_ms = b->wall_ns > rec.enq_ns ? (b->wall_ns - rec.enq_ns) / NS_PER_MS : 0,
            .cost = rec.cost ? rec.cost : 1,
            .body_bytes = rec.body_len,
            /* a str column: the body's start up to its first byte that is not UTF-8 */
            .preview = {body, proto_utf8_head(body, rec.body_len, PROTO_MAX_NAME)},
            .pos = key,
        };
    }
    if (got < 0)
        return fail(text, text_len, rc, "reading level %" PRIu64 " failed", w.level);
    proto_set(r, after, w.end ? 0 : w.pos - 1);
    return SL_OK;
}

/* change runs a purge (to_level < 0) or a move of one chunk. */
static int change(struct bk *b, const proto_msg *req, proto_msg *r, int to_level, char *text, size_t text_len)
{
    walk w;
    int rc = walk_start(b, req, &w, text, text_len);
    if (rc != SL_OK)
        return rc;
    int dry = (req->present & PF(dry_run)) && req->dry_run;
    uint64_t age_ns = (req->present & PF(older_than_ms)) ? req->older_than_ms * NS_PER_MS : 0;
    uint64_t most = chunk_of(req), done = 0, leased = 0, key;
    store_rec rec;
    int waiting, got = 0;
    while (done < most && (got = walk_next(b, &w, &key, &rec, &waiting, &rc)) == 1) {
        if (age_ns && rec.enq_ns + age_ns > b->wall_ns)
            continue;
        if (!waiting) {
            leased++;
            continue;
        }
        uint64_t id = rec.id;
        if (!dry && (rc = to_level < 0 ? queue_waiting_drop(&b->q, w.level, key)
                                       : queue_waiting_move(&b->q, w.level, key, (unsigned)to_level)) != SL_OK)
            return fail(text, text_len, rc, to_level < 0 ? "deleting message %" PRIu64 " failed"
                                                         : "moving message %" PRIu64 " failed", id);
        done++;
    }
    if (got < 0)
        return fail(text, text_len, rc, "reading level %" PRIu64 " failed", w.level);
    const char *name = b->cfg.level_names[w.level];
    if (done && !dry && to_level < 0)
        log_info("waiting", "purged %" PRIu64 " waiting message%s of level %s", done, done == 1 ? "" : "s", name);
    else if (done && !dry)
        log_info("waiting", "moved %" PRIu64 " waiting message%s of level %s to level %s", done,
                 done == 1 ? "" : "s", name, b->cfg.level_names[to_level]);
    proto_set(r, n, done);
    proto_set(r, after, walk_after(b, &w));
    proto_set(r, leased, leased);
    return SL_OK;
}

int waiting_purge(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    return change(b, req, r, -1, text, text_len);
}

int waiting_move(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    if (req->to_level >= b->cfg.levels)
        return fail(text, text_len, SL_ENOLEVEL, "level %" PRIu64 " does not exist", req->to_level);
    if (req->to_level == req->level)
        return fail(text, text_len, SL_EINVAL, "msg.move needs another level to move to than level %" PRIu64,
                    req->level);
    return change(b, req, r, (int)req->to_level, text, text_len);
}

int waiting_delete(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    uint64_t id = req->id, key, rank, due;
    unsigned level;
    store_rec rec;
    int waiting;
    if (lease_of_id(&b->leases, id))
        return fail(text, text_len, SL_ESTATE,
                    "message %" PRIu64 " is out with a consumer (leased): acknowledged it is gone, given back "
                    "it can be deleted then", id);
    for (level = 0; level < b->cfg.levels; level++) {
        int rc = store_find(b->st, level, id, FIND_LIMIT, &key, &rank);
        if (rc == SL_ENOTFOUND)
            continue;
        if (rc == SL_OK && (rc = queue_record_next(&b->q, level, key, key + 1, &key, &rec, &waiting)) == SL_OK &&
            !waiting)
            return fail(text, text_len, SL_ESTATE, "message %" PRIu64 " is out with a consumer (leased)", id);
        if (rc == SL_OK)
            rc = queue_waiting_drop(&b->q, level, key);
        if (rc != SL_OK)
            return fail(text, text_len, rc, "deleting message %" PRIu64 " failed", id);
        log_info("waiting", "deleted message %" PRIu64 " of level %s", id, b->cfg.level_names[level]);
        proto_set(r, level, level);
        proto_set_str(r, PROTO_F_state, "ready", 5);
        return SL_OK;
    }
    if (store_delayed_find(b->st, id, &level, &due, NULL) == SL_OK) {
        int rc = queue_delayed_drop(&b->q, due, id, &level);
        if (rc != SL_OK)
            return fail(text, text_len, rc, "deleting delayed message %" PRIu64 " failed", id);
        log_info("waiting", "deleted delayed message %" PRIu64, id);
        proto_set(r, level, level);
        proto_set_str(r, PROTO_F_state, "delayed", 7);
        return SL_OK;
    }
    for (level = 0; level < b->cfg.levels; level++)
        if (store_dead_get(b->st, level, id, &rec) == SL_OK) {
            snprintf(text, text_len, "message %" PRIu64 " is a dead letter of level %s: delete it with sluice dead "
                     "purge", id, b->cfg.level_names[level]);
            return SL_ENOTFOUND;
        }
    return fail(text, text_len, SL_ENOTFOUND,
                "no waiting message has id %" PRIu64 " (acknowledged, never published, or past the first million "
                "of its level)", id);
}
