/*
 * admit.c - the publish policy, in the order it is applied to a PUT:
 *
 *   1. the level: the one asked for, or the default; a tag rule (the first
 *      glob that matches) wins when no level was asked for, or always when
 *      tag_rules_override is set
 *   2. limits: the level exists, the body fits max_body
 *   3. idempotency: a key seen within idem_window_ms answers with the first
 *      message's id and stores nothing
 *   4. room: the level below level_max_messages and level_max_bytes
 *   5. cost from 1 to 2^32-1, times within the protocol's bound; headers
 *      were checked by the decoder (proto_hdrs.h) and are stored as a
 *      packed block after the body (rec.c)
 *   5b. the store's room for this record (room.c): the map below its soft
 *      limit and a reserve from its end, the disk with room to grow the
 *      file; SL_ENOSPC with a retry-after otherwise
 *   6. store it (queue): at the tail, or delayed by delay_ms; with an expiry
 *      when ttl_ms is set; and the idempotency key with it, in the same
 *      transaction, so that both commit or neither does
 *
 * Nothing here commits or replies: handle.c replies after the pass's commit.
 * Costs: O(tag rules) glob matches, one B-tree read for a key, one write (two
 * with a key, three with a time to live).
 */
#include "admit.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "queue.h"
#include "rec.h"
#include "room.h"
#include "store.h"
#include "units.h"

int admit_level_rule(const bk *b, const char *tag)
{
    for (unsigned i = 0; i < b->cfg.ntag_rules; i++)
        if (fnmatch(b->cfg.tag_rules[i].pattern, tag, 0) == 0)
            return (int)b->cfg.tag_rules[i].level;
    return -1;
}

uint64_t admit_level(const bk *b, const proto_msg *m)
{
    uint64_t level = (m->present & PF(level)) ? m->level : b->cfg.default_level;
    if (b->cfg.ntag_rules && m->tag.len && (!(m->present & PF(level)) || b->cfg.tag_rules_override)) {
        char tag[PROTO_MAX_TAG + 1];
        memcpy(tag, m->tag.ptr, m->tag.len);
        tag[m->tag.len] = '\0';
        int ruled = admit_level_rule(b, tag);
        if (ruled >= 0)
            level = (uint64_t)ruled;
    }
    return level;
}

/* check_level refuses a publish the level has no room for, or whose stored
 * trees failed the store's checks at start (quarantined: never written). */
static int check_level(bk *b, uint64_t level, char *text, size_t text_len)
{
    const queue_level *lv = &b->q.lv[level];
    if (queue_quarantined(&b->q, (unsigned)level)) {
        snprintf(text, text_len, "level %s is quarantined: its stored trees failed the broker's checks at start; "
                 "publishes to it are refused until `sluice salvage` rebuilds the store", b->cfg.level_names[level]);
        return SL_ECORRUPT;
    }
    if (b->cfg.level_max_messages && lv->count + lv->delayed >= b->cfg.level_max_messages) {
        snprintf(text, text_len, "level %s is full: %llu messages (the limit)", b->cfg.level_names[level],
                 (unsigned long long)b->cfg.level_max_messages);
        return SL_EFULL;
    }
    if (b->cfg.level_max_bytes && queue_level_bytes(&b->q, (unsigned)level) >= b->cfg.level_max_bytes) {
        snprintf(text, text_len, "level %s is full: %llu bytes on disk (the limit)", b->cfg.level_names[level],
                 (unsigned long long)b->cfg.level_max_bytes);
        return SL_EFULL;
    }
    return SL_OK;
}

int admit_put(bk *b, const proto_msg *m, uint64_t *id, int *duplicate, char *text, size_t text_len)
{
    uint64_t level = admit_level(b, m);
    int rc;
    *duplicate = 0;
    if (level >= b->cfg.levels) {
        snprintf(text, text_len, "level %llu does not exist; levels are 0..%u", (unsigned long long)level,
                 b->cfg.levels - 1);
        return SL_ENOLEVEL;
    }
    if (m->body.len > b->cfg.max_body) {
        snprintf(text, text_len, "body of %u bytes exceeds max_body %u", m->body.len, b->cfg.max_body);
        return SL_ETOOBIG;
    }
    if (m->present & PF(key)) {
        rc = m->key.len ? queue_idem_get(&b->q, m->key.ptr, m->key.len, b->wall_ns, id) : SL_EINVAL;
        if (rc == SL_OK) { /* a repeat within the window: the original id, nothing stored */
            *duplicate = 1;
            return SL_OK;
        }
        if (rc != SL_ENOTFOUND) {
            snprintf(text, text_len, "%s", rc == SL_EINVAL ? "the idempotency key is empty" : proto_strerror(rc));
            return rc;
        }
    }
    if ((rc = check_level(b, level, text, text_len)) != SL_OK)
        return rc;
    if ((m->present & PF(cost)) && (m->cost == 0 || m->cost > UINT32_MAX)) {
        snprintf(text, text_len, "cost must be from 1 to 4294967295");
        return SL_EINVAL;
    }
    if (((m->present & PF(ttl_ms)) && m->ttl_ms > PROTO_MAX_TIME_MS) ||
        ((m->present & PF(delay_ms)) && m->delay_ms > PROTO_MAX_TIME_MS)) {
        snprintf(text, text_len, "ttl_ms and delay_ms must be at most %llu (ten years)",
                 (unsigned long long)PROTO_MAX_TIME_MS);
        return SL_EINVAL;
    }
    unsigned char hdr_block[PROTO_MAX_HEADER_BLOCK]; /* checked by the decoder (proto_hdrs_check) */
    size_t hdr_bytes = (m->present & PF(headers)) ? proto_hdrs_packed_bytes(&m->headers) : 0;
    if (hdr_bytes > sizeof hdr_block) { /* not reached: the decoder's limits keep it below */
        snprintf(text, text_len, "%s", proto_hdr_fault_text(PROTO_HDR_TOTAL));
        return SL_ETOOBIG;
    }
    if (hdr_bytes)
        proto_hdrs_pack(&m->headers, hdr_block);
    store_rec rec = {
        .id = queue_next_id(&b->q),
        .enq_ns = b->wall_ns,
        .cost = (m->present & PF(cost)) ? (uint32_t)m->cost : 1,
        .expires_ns = (m->present & PF(ttl_ms)) && m->ttl_ms ? units_after_ms(b->wall_ns, m->ttl_ms) : 0,
        .level = (uint8_t)level,
        .tag = m->tag.ptr,
        .tag_len = m->tag.len,
        .body = m->body.ptr,
        .body_len = m->body.len,
        .headers = hdr_bytes ? hdr_block : NULL,
        .headers_len = (uint32_t)hdr_bytes,
        .key = (m->present & PF(key)) ? m->key.ptr : NULL, /* delivered with it (Idempotency-Key of --post) */
        .key_len = (m->present & PF(key)) ? m->key.len : 0,
    };
    size_t rec_bytes = 0; /* the store's room: the record, and its key's and expiry's index entries */
    if ((rc = rec_size(&rec, &rec_bytes)) != SL_OK) {
        snprintf(text, text_len, "%s", proto_strerror(rc));
        return rc;
    }
    size_t index_bytes = ((m->present & PF(key)) ? 64 + m->key.len : 0) + (rec.expires_ns ? 64 : 0) +
                         ((m->present & PF(delay_ms)) && m->delay_ms ? 64 : 0);
    if ((rc = room_check(&b->room, b->st, b->mono_ns, rec_bytes, index_bytes, text, text_len)) != SL_OK)
        return rc;
    rc = (m->present & PF(delay_ms)) && m->delay_ms
             ? queue_append_delayed(&b->q, &rec, units_after_ms(b->wall_ns, m->delay_ms))
             : queue_append(&b->q, &rec);
    if (rc == SL_OK && (m->present & PF(key))) /* committed with the message */
        rc = queue_idem_put(&b->q, m->key.ptr, m->key.len, rec.id, b->wall_ns + b->cfg.idem_window_ms * NS_PER_MS);
    if (rc != SL_OK) {
        snprintf(text, text_len, "%s", proto_strerror(rc));
        return rc;
    }
    *id = rec.id;
    return SL_OK;
}
