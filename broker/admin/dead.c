/*
 * dead.c - dead letters after they died: the admin commands dead.list,
 * dead.peek, dead.requeue and dead.purge, and retention
 * (--dead-max-messages, --dead-max-age).
 *
 * Dead letters live in the store's dead.<L>, one database per level, keyed
 * by message id; queue.c is the door to them (queue_dead_*), and keeps the
 * per-level counters (dead, dead_requeued, dead_purged, dead_dropped) in
 * step with every change. This file decides what to change; it never
 * commits.
 *
 * Batches. Every write here happens in the loop's pass, in the pass's one
 * write transaction, and the ADMIN_OK leaves only after that commit. A
 * request changes at most DEAD_CHUNK (1,000) dead letters, so the batch is
 * one transaction: after a kill -9, each message of it is either still dead
 * or requeued, never both, never neither. A requeue or purge of a whole
 * level is a series of requests (the client loops, `sluice dead requeue`
 * does): each answers how many it changed and, in "after", where the next
 * may go on (0 when the level's end was reached). A series cut short is
 * resumed by simply running it again: requeue takes from the head of
 * dead.<L>, and purge walks by id, so nothing is done twice. Between two
 * chunks the loop serves everyone else; a chunk of 1,000 requeues takes 5
 * to 11 ms end to end, commit and round trip included, a chunk of purges 7
 * to 15 ms (broker/README.md, "Dead letters"): the longest a request of
 * this file holds the loop.
 *
 * No read here depends on the chunk's own writes: every walk goes on from
 * the last id it saw (queue_dead_next after it), never from "the first one
 * left", so a chunk does the same when its writes are handed to a writer
 * thread and reads see only committed data. Each write is one store
 * operation (store_dead_requeue, store_dead_del): one op type each.
 *
 * A dry run (dry_run 1) changes nothing and answers how many would change:
 * a whole level's count at once (and one by id); a purge by age counts as
 * it would purge, DEAD_SCAN records a request, "after" going on.
 *
 * Requeueing revives a message (rec_revive): same id, tag, body and cost,
 * attempt 0 and no time to live, at the tail of its level (or --to LEVEL),
 * ready at once. A purge with an age looks at up to DEAD_SCAN (10,000) dead
 * letters per request, deleting those that died long enough ago.
 *
 * Retention. "Oldest" is the smallest id: the order dead.<L> keeps, and the
 * order messages were published in. Past --dead-max-messages (all levels
 * together), dead_retain drops the dead letter with the smallest id among
 * the levels' first ones, up to DEAD_CHUNK per pass, and cron wakes the
 * loop again while a full chunk left some over (dead_pending).
 * --dead-max-age is a sweep of up to DEAD_SCAN records a second across the
 * levels, resuming where it stopped (bk's dead_age_level and
 * dead_age_after), so that every dead letter is looked at once per cycle:
 * one that died too long ago goes at the latest one cycle later. What
 * retention drops is counted per level (stats: dead_dropped) and logged
 * once a second at most.
 *
 * Costs: list O(rows x log n); peek and requeue by id O(levels x log n);
 * a chunk O(DEAD_CHUNK x (log n + record bytes)); retention's check
 * O(levels) a pass, and O(levels) per record it drops by count.
 */
#include "dead.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bk.h"
#include "log.h"
#include "queue.h"
#include "units.h"

static int fail(char *text, size_t text_len, int code, const char *fmt, uint64_t v)
{
    snprintf(text, text_len, fmt, v);
    return code;
}

/* level_arg reads req's level field (required) into *level. */
static int level_arg(const struct bk *b, const proto_msg *req, proto_field f, unsigned *level, char *text,
                     size_t text_len)
{
    uint64_t v = f == PROTO_F_to_level ? req->to_level : req->level;
    if (v >= b->cfg.levels)
        return fail(text, text_len, SL_ENOLEVEL, "level %" PRIu64 " does not exist", v);
    *level = (unsigned)v;
    return SL_OK;
}

/* find_level looks for dead letter id in every level. */
static int find_level(struct bk *b, uint64_t id, unsigned *level, store_rec *rec, char *text, size_t text_len)
{
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        int rc = queue_dead_get(&b->q, l, id, rec);
        if (rc == SL_OK) {
            *level = l;
            return SL_OK;
        }
        if (rc != SL_ENOTFOUND)
            return fail(text, text_len, rc, "reading dead letter %" PRIu64 " failed", id);
    }
    return fail(text, text_len, SL_ENOTFOUND, "no dead letter with id %" PRIu64, id);
}

static uint64_t chunk_of(const proto_msg *req)
{
    return (req->present & PF(n)) && req->n > 0 && req->n < DEAD_CHUNK ? req->n : DEAD_CHUNK;
}

/* ---- list and peek ---- */

int dead_list(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    unsigned level;
    int rc = level_arg(b, req, PROTO_F_level, &level, text, text_len);
    if (rc)
        return rc;
    uint64_t after = (req->present & PF(after)) ? req->after : 0;
    uint64_t most = (req->present & PF(n)) && req->n > 0 && req->n < PROTO_MAX_ARRAY ? req->n : PROTO_MAX_ARRAY;
    proto_rows_dead *rows = &r->dead_rows;
    r->present |= PF(dead_rows);
    rows->n = 0;
    while (rows->n < most) {
        uint64_t id;
        store_rec rec;
        rc = queue_dead_next(&b->q, level, after, &id, &rec);
        if (rc == SL_ENOTFOUND)
            break;
        if (rc)
            return fail(text, text_len, rc, "reading the dead letters after id %" PRIu64 " failed", after);
        const char *body = rec.body;
        rows->v[rows->n++] = (proto_row_dead){
            .present = PROTO_ROW_ALL(dead),
            .id = id,
            .tag = {rec.tag, proto_utf8_head(rec.tag, rec.tag_len, PROTO_MAX_NAME)},
            .attempts = rec.attempt,
            .died_ms = rec.died_ns / NS_PER_MS,
            .reason = {rec.reason, proto_utf8_head(rec.reason, rec.reason_len, PROTO_MAX_NAME)},
            /* a str column: the body's start up to its first byte that is not UTF-8 */
            .preview = {body, proto_utf8_head(body, rec.body_len, PROTO_MAX_NAME)},
            .body_bytes = rec.body_len,
        };
        after = id;
    }
    return SL_OK;
}

int dead_peek(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    unsigned level;
    store_rec rec;
    int rc = find_level(b, req->id, &level, &rec, text, text_len);
    if (rc)
        return rc;
    proto_set(r, id, rec.id);
    proto_set(r, level, level);
    proto_set(r, attempt, rec.attempt);
    proto_set_str(r, PROTO_F_tag, rec.tag, rec.tag_len);
    proto_set_str(r, PROTO_F_body, rec.body, rec.body_len);
    proto_set_str(r, PROTO_F_msg, rec.reason, rec.reason_len);
    if (rec.headers_len && proto_hdrs_unpack(rec.headers, rec.headers_len, &r->headers) == SL_OK)
        r->present |= PF(headers); /* as published: they point into the record, as tag and body do */
    return SL_OK;
}

/* ---- requeue and purge ---- */

int dead_requeue(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    unsigned level, to;
    uint64_t moved = 0, after = 0, id = 0;
    store_rec rec;
    int rc;
    if (!!(req->present & PF(level)) == !!(req->present & PF(id))) {
        snprintf(text, text_len, "dead.requeue needs a level or a message id, not both");
        return SL_EINVAL;
    }
    if (req->present & PF(id)) {
        rc = find_level(b, req->id, &level, &rec, text, text_len);
    } else {
        rc = level_arg(b, req, PROTO_F_level, &level, text, text_len);
    }
    if (rc)
        return rc;
    to = level;
    if ((req->present & PF(to_level)) && (rc = level_arg(b, req, PROTO_F_to_level, &to, text, text_len)))
        return rc;
    if ((req->present & PF(dry_run)) && req->dry_run) { /* how many it would move: all of them, or the one */
        proto_set(r, n, (req->present & PF(id)) ? 1 : b->q.lv[level].dead);
        proto_set(r, after, 0);
        return SL_OK;
    }
    if (req->present & PF(id)) {
        rc = queue_dead_requeue(&b->q, level, req->id, to);
        if (rc)
            return fail(text, text_len, rc, "requeueing dead letter %" PRIu64 " failed", req->id);
        moved = 1;
    } else {
        for (uint64_t most = chunk_of(req); moved < most; moved++) {
            rc = queue_dead_next(&b->q, level, after, &id, &rec);
            if (rc == SL_ENOTFOUND)
                break;
            if (rc == SL_OK)
                rc = queue_dead_requeue(&b->q, level, id, to);
            if (rc)
                return fail(text, text_len, rc, "requeueing dead letter %" PRIu64 " failed", id);
            after = id;
        }
        if (after && queue_dead_next(&b->q, level, after, &id, &rec) != SL_OK)
            after = 0; /* the level's end: nothing left to requeue */
    }
    log_info("dead", "requeued %" PRIu64 " dead letter%s of level %s to level %s", moved, moved == 1 ? "" : "s",
             b->cfg.level_names[level], b->cfg.level_names[to]);
    proto_set(r, n, moved);
    proto_set(r, after, after);
    return SL_OK;
}

int dead_purge(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len)
{
    unsigned level;
    int rc = level_arg(b, req, PROTO_F_level, &level, text, text_len);
    if (rc)
        return rc;
    if ((req->present & PF(older_than_ms)) && req->older_than_ms > PROTO_MAX_TIME_MS) /* ns must not wrap */
        return fail(text, text_len, SL_EINVAL, "older_than_ms must be at most %" PRIu64 " (ten years)",
                    (uint64_t)PROTO_MAX_TIME_MS);
    uint64_t after = (req->present & PF(after)) ? req->after : 0, purged = 0, id = after;
    uint64_t age_ns = (req->present & PF(older_than_ms)) ? req->older_than_ms * NS_PER_MS : 0;
    uint64_t most = chunk_of(req);
    int dry = (req->present & PF(dry_run)) && req->dry_run;
    store_rec rec;
    int end = 0;
    if (dry && !age_ns) { /* every one of the level's */
        proto_set(r, n, b->q.lv[level].dead);
        proto_set(r, after, 0);
        return SL_OK;
    }
    if (dry)
        most = UINT64_MAX; /* counting: as far as DEAD_SCAN takes it, then "after" goes on */
    for (unsigned seen = 0; purged < most && seen < DEAD_SCAN; seen++) {
        rc = queue_dead_next(&b->q, level, after, &id, &rec);
        if (rc == SL_ENOTFOUND) {
            end = 1;
            break;
        }
        if (rc == SL_OK && (!age_ns || rec.died_ns + age_ns <= b->wall_ns)) {
            rc = dry ? SL_OK : queue_dead_drop(&b->q, level, id, QUEUE_DROP_PURGE);
            purged += rc == SL_OK;
        }
        if (rc)
            return fail(text, text_len, rc, "purging dead letter %" PRIu64 " failed", id);
        after = id;
    }
    if (!end && queue_dead_next(&b->q, level, after, &id, &rec) == SL_ENOTFOUND)
        end = 1;
    if (purged && !dry)
        log_info("dead", "purged %" PRIu64 " dead letter%s of level %s", purged, purged == 1 ? "" : "s",
                 b->cfg.level_names[level]);
    proto_set(r, n, purged);
    proto_set(r, after, end ? 0 : after);
    return SL_OK;
}

/* ---- retention ---- */

static uint64_t dead_total(const struct bk *b)
{
    uint64_t n = 0;
    for (unsigned l = 0; l < b->cfg.levels; l++)
        n += b->q.lv[l].dead;
    return n;
}

static int over(const struct bk *b)
{
    return b->cfg.dead_max_messages && dead_total(b) > b->cfg.dead_max_messages;
}

int dead_pending(const struct bk *b)
{
    return b->dead_more;
}

/* retain_count drops the smallest ids past --dead-max-messages. Returns 1
 * when it stopped at its chunk with more to drop. */
static int retain_count(struct bk *b)
{
    uint64_t first[PROTO_MAX_LEVELS];
    store_rec rec;
    unsigned levels = b->cfg.levels;
    for (unsigned l = 0; l < levels; l++)
        if (b->q.lv[l].dead == 0 || queue_dead_next(&b->q, l, 0, &first[l], &rec) != SL_OK)
            first[l] = UINT64_MAX;
    for (unsigned n = 0; over(b); n++) {
        if (n == DEAD_CHUNK)
            return 1;
        unsigned oldest = 0;
        for (unsigned l = 1; l < levels; l++)
            if (first[l] < first[oldest])
                oldest = l;
        if (first[oldest] == UINT64_MAX ||
            queue_dead_drop(&b->q, oldest, first[oldest], QUEUE_DROP_RETENTION) != SL_OK)
            return 0; /* the counts disagree with the store, or a store error (logged there) */
        b->dead_unlogged++;
        if (queue_dead_next(&b->q, oldest, first[oldest], &first[oldest], &rec) != SL_OK)
            first[oldest] = UINT64_MAX;
    }
    return 0;
}

/* retain_age looks at up to DEAD_SCAN dead letters, from where the last
 * sweep stopped, and drops those that died more than --dead-max-age ago. */
static void retain_age(struct bk *b)
{
    uint64_t age_ns = b->cfg.dead_max_age_s * NS_PER_S, id;
    store_rec rec;
    unsigned seen = 0;
    for (unsigned k = 0; k < b->cfg.levels && seen < DEAD_SCAN; k++) {
        unsigned l = b->dead_age_level % b->cfg.levels;
        uint64_t *after = &b->dead_age_after[l];
        while (seen < DEAD_SCAN) {
            int rc = queue_dead_next(&b->q, l, *after, &id, &rec);
            if (rc != SL_OK) {
                *after = 0; /* the level's end (or an error, logged): the next level */
                b->dead_age_level = (l + 1) % b->cfg.levels;
                break;
            }
            seen++;
            *after = id;
            if (rec.died_ns + age_ns <= b->wall_ns) {
                if (queue_dead_drop(&b->q, l, id, QUEUE_DROP_RETENTION) != SL_OK)
                    return;
                b->dead_unlogged++;
            }
        }
    }
}

void dead_retain(struct bk *b, int sweep)
{
    b->dead_more = over(b) ? retain_count(b) : 0;
    if (!sweep)
        return;
    if (b->cfg.dead_max_age_s && dead_total(b) > 0)
        retain_age(b);
    if (b->dead_unlogged) {
        log_info("dead", "retention dropped %" PRIu64 " dead letter%s (oldest first; at most %" PRIu64
                 " kept, for at most %" PRIu64 " s; 0 = no limit)",
                 b->dead_unlogged, b->dead_unlogged == 1 ? "" : "s", b->cfg.dead_max_messages,
                 b->cfg.dead_max_age_s);
        b->dead_unlogged = 0;
    }
}
