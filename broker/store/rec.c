/*
 * rec.c - the on-disk format of a message record.
 *
 * This file owns the bytes of one stored message: where each field sits, how
 * the record is sealed, and what makes a record acceptable when it is read
 * back. It owns no memory and no state. The store calls it on every append,
 * read and move, with LMDB values and its scratch buffer; the tests call it
 * with plain arrays.
 *
 * Invariants:
 *   - The first four bytes are the CRC-32C of the record's key followed by
 *     every byte after them, so a record is only good under the key it was
 *     sealed for: a damaged key fails the check as a damaged body does, and
 *     a record moved to another key is sealed again for it. Every function
 *     here that changes a record reseals it before returning.
 *   - A record decodes only if its header, tag, body and (for dead letters)
 *     tail account for exactly its length: no byte is unexplained.
 *   - A dead letter is a live record with a tail appended. Burying changes no
 *     byte of the live part except the checksum, so a dead letter holds,
 *     byte for byte, the record it was in its queue.
 *
 *   - A record's headers are bytes to it: a block whose length it checks;
 *     proto_hdrs_unpack reads the pairs where they are used. Its
 *     idempotency key is kept too (the idempotency index maps a key to an
 *     id only for its window), so a delivery can carry it to the sink.
 *
 *   - Reviving a dead letter (rec_revive) restores the live part it was
 *     buried with, except level, attempt and expiry, which it resets.
 *
 * Costs: encoding, decoding, rec_set_attempt, rec_reseal, rec_bury and
 * rec_revive each run a CRC over the key and the whole record, O(record
 * bytes); rec_peek_level reads one byte. Decoding
 * copies nothing: the tag, body and reason it returns point into the buffer.
 */
#include "rec.h"

#include <string.h>

#include "byteorder.h"
#include "crc32c.h"
#include "log.h"
#include "proto.h"

/*
 * Record value layout (integers little-endian, no padding).
 * Change this layout: bump STORE_FORMAT (store.h) and REC_VERSION.
 *
 *   offset bytes field
 *        0     4 crc32c of the key, then of every byte after this field
 *                (format 1: of every byte after this field alone)
 *        4     1 format, REC_VERSION
 *        5     1 level
 *        6     2 tag_len
 *        8     4 attempt
 *       12     4 body_len
 *       16     4 cost
 *       20     4 flags: REC_F_HEADERS, REC_F_KEY (format 3); 0 in formats 1 and 2
 *       24     8 id
 *       32     8 enq_ns
 *       40     8 expires_ns
 *       48       tag bytes, then body bytes
 *   with REC_F_HEADERS, after the body:
 *                u16 headers_len | the headers' packed block (proto_hdrs.h)
 *   with REC_F_KEY, after those:
 *                u8 key_len (1..255) | the idempotency key it was published with
 *   dead letters only, after that:
 *                u16 reason_len | reason bytes | u64 died_ns
 *
 * A record without headers is laid out as in format 2; format 3 only gave
 * the flag its meaning, so a store's format-2 records are read as they are
 * (no headers) and rewritten only when something reseals them.
 */
#define REC_VERSION 3 /* 3: REC_F_HEADERS and REC_F_KEY; 2: the checksum covers the key; 1 (read, never written): it did not */
#define REC_VERSION_NOKEY 1
#define REC_F_HEADERS 1u
#define REC_F_KEY 2u
enum {
    REC_CRC = 0, REC_FORMAT = 4, REC_LEVEL = 5, REC_TAG_LEN = 6, REC_ATTEMPT = 8, REC_BODY_LEN = 12,
    REC_COST = 16, REC_FLAGS = 20, REC_ID = 24, REC_ENQ_NS = 32, REC_EXPIRES_NS = 40,
    REC_HEAD_BYTES = 48,
    REC_SEALED = 4,               /* the checksum covers [REC_SEALED, end) */
    REC_TAIL_FIXED_BYTES = 2 + 8, /* reason_len and died_ns */
};

/* sum returns the checksum of key and p[REC_SEALED..n). */
static uint32_t sum(const unsigned char *p, size_t n, rec_key key)
{
    return crc32c_extend(crc32c_value(key.bytes, key.len), p + REC_SEALED, n - REC_SEALED);
}

/* seal writes the current format and the checksum of key and
 * p[REC_SEALED..n) into p; n >= REC_HEAD_BYTES. */
static void seal(unsigned char *p, size_t n, rec_key key)
{
    p[REC_FORMAT] = REC_VERSION;
    put_le32(p + REC_CRC, sum(p, n, key));
}

/* parse is rec_decode returning why the record is rejected, or NULL. */
static const char *parse(const unsigned char *p, size_t len, rec_kind kind, rec_key key, rec_msg *out)
{
    uint64_t n = len;
    if (n < REC_HEAD_BYTES)
        return "shorter than a record header";
    if (p[REC_FORMAT] == REC_VERSION_NOKEY ? get_le32(p + REC_CRC) != crc32c_value(p + REC_SEALED, len - REC_SEALED)
                                           : get_le32(p + REC_CRC) != sum(p, len, key))
        return "checksum mismatch (of the record or of its key)";
    if (p[REC_FORMAT] < REC_VERSION_NOKEY || p[REC_FORMAT] > REC_VERSION)
        return "unknown record format";
    uint32_t flags = get_le32(p + REC_FLAGS);
    if (flags & ~(p[REC_FORMAT] >= 3 ? REC_F_HEADERS | REC_F_KEY : 0u))
        return "unknown flags";
    memset(out, 0, sizeof *out);
    out->level = p[REC_LEVEL];
    out->tag_len = get_le16(p + REC_TAG_LEN);
    out->attempt = get_le32(p + REC_ATTEMPT);
    out->body_len = get_le32(p + REC_BODY_LEN);
    out->cost = get_le32(p + REC_COST);
    out->id = get_le64(p + REC_ID);
    out->enq_ns = get_le64(p + REC_ENQ_NS);
    out->expires_ns = get_le64(p + REC_EXPIRES_NS);
    if (out->level >= PROTO_MAX_LEVELS)
        return "level out of range";
    uint64_t used = (uint64_t)REC_HEAD_BYTES + out->tag_len + out->body_len;
    if (used + (kind == REC_DEAD ? REC_TAIL_FIXED_BYTES : 0) > n)
        return "tag and body lengths overrun the record";
    out->tag = (const char *)p + REC_HEAD_BYTES;
    out->body = p + REC_HEAD_BYTES + out->tag_len;
    if (flags & REC_F_HEADERS) {
        if (used + 2 > n)
            return "headers length overruns the record";
        out->headers_len = get_le16(p + used);
        out->headers = p + used + 2;
        used += 2 + out->headers_len;
        if (out->headers_len == 0 || used + (kind == REC_DEAD ? REC_TAIL_FIXED_BYTES : 0) > n)
            return "headers length overruns the record";
    }
    if (flags & REC_F_KEY) {
        if (used + 1 > n)
            return "key length overruns the record";
        out->key_len = p[used];
        out->key = (const char *)p + used + 1;
        used += 1 + out->key_len;
        if (out->key_len == 0 || used + (kind == REC_DEAD ? REC_TAIL_FIXED_BYTES : 0) > n)
            return "key length overruns the record";
    }
    if (kind == REC_DEAD) {
        out->reason_len = get_le16(p + used);
        out->reason = (const char *)p + used + 2;
        used += REC_TAIL_FIXED_BYTES + out->reason_len;
        if (used > n)
            return "reason length overruns the record";
        out->died_ns = get_le64(p + used - 8);
    }
    return used == n ? NULL : "record longer than its lengths";
}

int rec_size(const rec_msg *m, size_t *bytes)
{
    if ((m->tag_len && !m->tag) || (m->body_len && !m->body) || (m->headers_len && !m->headers) ||
        (m->key_len && !m->key))
        return SL_EINVAL;
    if (m->tag_len > PROTO_MAX_TAG || m->body_len > PROTO_MAX_BODY || m->headers_len > PROTO_MAX_HEADER_BLOCK ||
        m->key_len > PROTO_MAX_TAG)
        return SL_ETOOBIG;
    if (m->level >= PROTO_MAX_LEVELS)
        return SL_EINVAL;
    *bytes = (size_t)REC_HEAD_BYTES + m->tag_len + m->body_len + (m->headers_len ? 2 + (size_t)m->headers_len : 0) +
             (m->key_len ? 1 + (size_t)m->key_len : 0);
    return SL_OK;
}

void rec_encode(const rec_msg *m, rec_key key, void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t want;
    SL_ASSERT(rec_size(m, &want) == SL_OK && len == want);
    p[REC_LEVEL] = m->level;
    put_le16(p + REC_TAG_LEN, (uint16_t)m->tag_len);
    put_le32(p + REC_ATTEMPT, m->attempt);
    put_le32(p + REC_BODY_LEN, m->body_len);
    put_le32(p + REC_COST, m->cost);
    put_le32(p + REC_FLAGS, (m->headers_len ? REC_F_HEADERS : 0) | (m->key_len ? REC_F_KEY : 0));
    put_le64(p + REC_ID, m->id);
    put_le64(p + REC_ENQ_NS, m->enq_ns);
    put_le64(p + REC_EXPIRES_NS, m->expires_ns);
    if (m->tag_len)
        memcpy(p + REC_HEAD_BYTES, m->tag, m->tag_len);
    if (m->body_len)
        memcpy(p + REC_HEAD_BYTES + m->tag_len, m->body, m->body_len);
    unsigned char *at = p + REC_HEAD_BYTES + m->tag_len + m->body_len;
    if (m->headers_len) {
        put_le16(at, (uint16_t)m->headers_len);
        memcpy(at + 2, m->headers, m->headers_len);
        at += 2 + m->headers_len;
    }
    if (m->key_len) {
        at[0] = (unsigned char)m->key_len;
        memcpy(at + 1, m->key, m->key_len);
    }
    seal(p, len, key);
}

int rec_decode(const void *buf, size_t len, rec_kind kind, rec_key key, rec_msg *out, const char **why)
{
    const char *fault = parse(buf, len, kind, key, out);
    if (why)
        *why = fault;
    return fault ? SL_ECORRUPT : SL_OK;
}

int rec_peek_level(const void *buf, size_t len)
{
    return len >= REC_HEAD_BYTES ? ((const unsigned char *)buf)[REC_LEVEL] : -1;
}

void rec_set_attempt(void *buf, size_t len, rec_key key, uint32_t attempt)
{
    SL_ASSERT(len >= REC_HEAD_BYTES);
    put_le32((unsigned char *)buf + REC_ATTEMPT, attempt);
    seal(buf, len, key);
}

void rec_reseal(void *buf, size_t len, rec_key key)
{
    SL_ASSERT(len >= REC_HEAD_BYTES);
    seal(buf, len, key);
}

size_t rec_tail_bytes(size_t reason_len)
{
    return REC_TAIL_FIXED_BYTES + reason_len;
}

size_t rec_bury(void *buf, size_t len, size_t cap, const char *reason, size_t reason_len,
                uint64_t died_ns, rec_key key)
{
    SL_ASSERT(len >= REC_HEAD_BYTES && reason_len <= REC_MAX_REASON);
    SL_ASSERT(cap >= len && cap - len >= rec_tail_bytes(reason_len));
    unsigned char *tail = (unsigned char *)buf + len;
    put_le16(tail, (uint16_t)reason_len);
    if (reason_len)
        memcpy(tail + 2, reason, reason_len);
    put_le64(tail + 2 + reason_len, died_ns);
    len += rec_tail_bytes(reason_len);
    seal(buf, len, key);
    return len;
}

size_t rec_revive(void *buf, size_t len, unsigned level, rec_key key)
{
    unsigned char *p = buf;
    SL_ASSERT(len >= REC_HEAD_BYTES && level < PROTO_MAX_LEVELS);
    size_t live = REC_HEAD_BYTES + get_le16(p + REC_TAG_LEN) + (size_t)get_le32(p + REC_BODY_LEN);
    if (get_le32(p + REC_FLAGS) & REC_F_HEADERS) {
        SL_ASSERT(live + 2 <= len);
        live += 2 + (size_t)get_le16(p + live);
    }
    if (get_le32(p + REC_FLAGS) & REC_F_KEY) {
        SL_ASSERT(live + 1 <= len);
        live += 1 + (size_t)p[live];
    }
    SL_ASSERT(live + REC_TAIL_FIXED_BYTES <= len);
    p[REC_LEVEL] = (unsigned char)level;
    put_le32(p + REC_ATTEMPT, 0);
    put_le64(p + REC_EXPIRES_NS, 0);
    seal(buf, live, key);
    return live;
}
