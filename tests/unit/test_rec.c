/*
 * test_rec.c - the record format without a store: round trips, the exact
 * bytes of the documented layout, and damage of every kind a disk can do
 * (flipped bits, short values, lengths that lie) rejected as SL_ECORRUPT.
 *
 * Records under test sit in buffers of exactly their length on the heap, so
 * that the sanitizer build catches any read past the end. Lengths that lie are
 * made with a valid checksum (reseal below), so that they reach the length
 * checks instead of stopping at the CRC. A record's checksum covers the key
 * it is filed under too: every live record here is filed under KEY, every
 * dead letter under DEAD_KEY, and one read under another key is damage. Every test runs under alarm(60 s)
 * (th_timeout_arm); the random test prints its seed (th_seed), and
 * SLUICE_SEED replays it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "harness.h"
#include "proto.h"
#include "rec.h"

/* The layout as rec.c documents it; these tests pin it. */
enum { L_CRC = 0, L_SEALED = 4, L_TAG_LEN = 6, L_BODY_LEN = 12, L_HEAD_BYTES = 48 };

static const char reason_text[] = "max attempts exceeded";

/* The keys records are filed under: an order key, a dead letter's id. */
static const unsigned char key_bytes[8] = {0x80, 0, 0, 0, 0, 0, 0x01, 0x07};
static const unsigned char dead_key_bytes[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
#define KEY ((rec_key){key_bytes, sizeof key_bytes})
#define DEAD_KEY ((rec_key){dead_key_bytes, sizeof dead_key_bytes})

/* key_of is the key a record of kind is filed under here. */
static rec_key key_of(rec_kind kind)
{
    return kind == REC_DEAD ? DEAD_KEY : KEY;
}

static rec_msg sample(const char *tag, const char *body)
{
    return (rec_msg){
        .id = 0x0102030405060708u, .enq_ns = 0x1112131415161718u, .expires_ns = 0x2122232425262728u,
        .attempt = 0x31323334u, .cost = 0x41424344u, .level = PROTO_MAX_LEVELS - 1,
        .tag = tag, .tag_len = tag ? (uint32_t)strlen(tag) : 0,
        .body = body, .body_len = (uint32_t)strlen(body),
    };
}

/* encode returns m as a freshly allocated live record; *len is its size. */
static unsigned char *encode(const rec_msg *m, size_t *len)
{
    assert_int_equal(rec_size(m, len), SL_OK);
    unsigned char *buf = malloc(*len);
    assert_non_null(buf);
    rec_encode(m, KEY, buf, *len);
    return buf;
}

/* bury returns m as a freshly allocated dead letter; *len is its size. */
static unsigned char *bury(const rec_msg *m, const char *reason, uint64_t died_ns, size_t *len)
{
    size_t live_len, reason_len = reason ? strlen(reason) : 0;
    unsigned char *live = encode(m, &live_len);
    size_t cap = live_len + rec_tail_bytes(reason_len);
    unsigned char *buf = malloc(cap);
    assert_non_null(buf);
    memcpy(buf, live, live_len);
    free(live);
    *len = rec_bury(buf, live_len, cap, reason, reason_len, died_ns, DEAD_KEY);
    assert_int_equal(*len, cap);
    return buf;
}

/* copy returns src[0..len) in a heap buffer of exactly len bytes. */
static unsigned char *copy(const unsigned char *src, size_t len)
{
    unsigned char *p = malloc(len ? len : 1);
    assert_non_null(p);
    memcpy(p, src, len);
    return p;
}

static void put_le(unsigned char *p, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* reseal_under gives p[0..len) a valid checksum under key, whatever its
 * other bytes say; reseal under KEY. */
static void reseal_under(unsigned char *p, size_t len, rec_key key)
{
    put_le(p + L_CRC, crc32c_extend(crc32c_value(key.bytes, key.len), p + L_SEALED, len - L_SEALED), 4);
}

static void reseal(unsigned char *p, size_t len)
{
    reseal_under(p, len, KEY);
}

/* expect_corrupt decodes p[0..len) from an exactly sized copy and checks it
 * is refused with a reason. */
static void expect_corrupt(const unsigned char *p, size_t len, rec_kind kind)
{
    unsigned char *exact = copy(p, len);
    const char *why = NULL;
    rec_msg out;
    assert_int_equal(rec_decode(exact, len, kind, key_of(kind), &out, &why), SL_ECORRUPT);
    assert_non_null(why);
    free(exact);
}

static void assert_same_message(const rec_msg *a, const rec_msg *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->enq_ns, b->enq_ns);
    assert_int_equal(a->expires_ns, b->expires_ns);
    assert_int_equal(a->attempt, b->attempt);
    assert_int_equal(a->cost, b->cost);
    assert_int_equal(a->level, b->level);
    assert_int_equal(a->tag_len, b->tag_len);
    if (a->tag_len)
        assert_memory_equal(a->tag, b->tag, a->tag_len);
    assert_int_equal(a->body_len, b->body_len);
    if (a->body_len)
        assert_memory_equal(a->body, b->body, a->body_len);
}

/* ---- tests ---- */

static void round_trip_with_and_without_tag(void **state)
{
    (void)state;
    const rec_msg cases[] = {
        sample("orders.eu", "a body of some length"),
        sample(NULL, "untagged"),
        sample("tag only", ""),
        sample(NULL, ""),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        unsigned char *buf = encode(&cases[i], &len);
        const char *why = "unset";
        rec_msg out;
        assert_int_equal(len, L_HEAD_BYTES + cases[i].tag_len + cases[i].body_len);
        assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, &why), SL_OK);
        assert_null(why);
        assert_same_message(&cases[i], &out);
        assert_ptr_equal(out.tag, buf + L_HEAD_BYTES);
        assert_ptr_equal(out.body, buf + L_HEAD_BYTES + out.tag_len);
        assert_int_equal(out.reason_len, 0);
        assert_int_equal(out.died_ns, 0);
        assert_int_equal(rec_peek_level(buf, len), cases[i].level);
        /* A live record is not a dead letter: its tail is missing. */
        assert_int_equal(rec_decode(buf, len, REC_DEAD, DEAD_KEY, &out, NULL), SL_ECORRUPT);
        free(buf);
    }
}

static void encoding_is_the_documented_layout(void **state)
{
    (void)state;
    rec_msg m = sample("ab", "xyz");
    unsigned char want[L_HEAD_BYTES + 5 + 2 + 3 + 8] = {0};
    size_t len, dead_len;
    want[4] = 3; /* REC_VERSION */
    want[5] = m.level;
    put_le(want + 6, m.tag_len, 2);
    put_le(want + 8, m.attempt, 4);
    put_le(want + 12, m.body_len, 4);
    put_le(want + 16, m.cost, 4);
    put_le(want + 24, m.id, 8);
    put_le(want + 32, m.enq_ns, 8);
    put_le(want + 40, m.expires_ns, 8);
    memcpy(want + 48, "abxyz", 5);
    reseal(want, L_HEAD_BYTES + 5);

    unsigned char *buf = encode(&m, &len);
    assert_int_equal(len, L_HEAD_BYTES + 5);
    assert_memory_equal(buf, want, len);
    free(buf);

    put_le(want + 53, 3, 2);
    memcpy(want + 55, "why", 3);
    put_le(want + 58, 0x5152535455565758u, 8);
    reseal_under(want, sizeof want, DEAD_KEY);
    buf = bury(&m, "why", 0x5152535455565758u, &dead_len);
    assert_int_equal(dead_len, sizeof want);
    assert_memory_equal(buf, want, sizeof want);
    free(buf);
}

/* A message's headers ride after the body as a block the record only
 * measures: flag 1 at offset 20, a u16 length, the block; a dead letter's
 * tail follows them, and reviving keeps them. A record of format 2 (no
 * flags) reads as a message without headers; one of format 2 with the flag
 * set, or a block length that overruns, is damage. */
static void headers_ride_after_the_body(void **state)
{
    (void)state;
    proto_hdrs h = {.n = 2};
    h.name[0] = (proto_buf){"traceparent", 11};
    h.value[0] = (proto_buf){"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 55};
    h.name[1] = (proto_buf){"X-Empty", 7};
    h.value[1] = (proto_buf){"", 0};
    size_t hb = proto_hdrs_packed_bytes(&h), len, dead_len;
    assert_int_equal(hb, 3 + 11 + 55 + 3 + 7);
    unsigned char block[128];
    proto_hdrs_pack(&h, block);
    rec_msg m = sample("ab", "xyz"), out;
    m.headers = block;
    m.headers_len = (uint32_t)hb;
    unsigned char *buf = encode(&m, &len);
    assert_int_equal(len, L_HEAD_BYTES + 5 + 2 + hb);
    assert_int_equal(buf[4], 3);
    assert_int_equal(buf[20], 1); /* REC_F_HEADERS */
    assert_int_equal(buf[L_HEAD_BYTES + 5] | buf[L_HEAD_BYTES + 6] << 8, hb);
    assert_memory_equal(buf + L_HEAD_BYTES + 7, block, hb);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    assert_same_message(&m, &out);
    assert_int_equal(out.headers_len, hb);
    assert_memory_equal(out.headers, block, hb);
    proto_hdrs back;
    assert_int_equal(proto_hdrs_unpack(out.headers, out.headers_len, &back), SL_OK);
    assert_int_equal(back.n, 2);
    assert_memory_equal(back.value[0].ptr, h.value[0].ptr, 55);
    assert_int_equal(back.value[1].len, 0);
    /* a length that overruns, read with a good checksum */
    unsigned char *bad = copy(buf, len);
    bad[L_HEAD_BYTES + 5] = (unsigned char)(hb + 1);
    reseal(bad, len);
    expect_corrupt(bad, len, REC_LIVE);
    free(bad);
    /* format 2 never had the flag */
    bad = copy(buf, len);
    bad[4] = 2;
    reseal(bad, len);
    expect_corrupt(bad, len, REC_LIVE);
    free(bad);
    free(buf);

    /* buried: the tail after the headers; revived: the headers kept */
    buf = bury(&m, reason_text, 77, &dead_len);
    assert_int_equal(dead_len, len + rec_tail_bytes(strlen(reason_text)));
    assert_int_equal(rec_decode(buf, dead_len, REC_DEAD, DEAD_KEY, &out, NULL), SL_OK);
    assert_int_equal(out.headers_len, hb);
    assert_memory_equal(out.headers, block, hb);
    assert_memory_equal(out.reason, reason_text, strlen(reason_text));
    size_t live_len = rec_revive(buf, dead_len, 1, KEY);
    assert_int_equal(live_len, len);
    assert_int_equal(rec_decode(buf, live_len, REC_LIVE, KEY, &out, NULL), SL_OK);
    assert_int_equal(out.headers_len, hb);
    assert_memory_equal(out.headers, block, hb);
    free(buf);

    /* a record of format 2: no headers */
    rec_msg plain = sample("t", "old");
    buf = encode(&plain, &len);
    buf[4] = 2;
    reseal(buf, len);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    assert_int_equal(out.headers_len, 0);
    assert_null(out.headers);
    free(buf);

    /* a block over the most a message may carry */
    m.headers_len = PROTO_MAX_HEADER_BLOCK + 1;
    assert_int_equal(rec_size(&m, &len), SL_ETOOBIG);
}

static void dead_letter_tail_round_trip(void **state)
{
    (void)state;
    const char *reasons[] = {reason_text, "", NULL};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        rec_msg m = sample("tag", "doomed"), out;
        size_t len, reason_len = reasons[i] ? strlen(reasons[i]) : 0;
        unsigned char *buf = bury(&m, reasons[i], 424242, &len);
        assert_int_equal(len, L_HEAD_BYTES + 3 + 6 + rec_tail_bytes(reason_len));
        assert_int_equal(rec_decode(buf, len, REC_DEAD, DEAD_KEY, &out, NULL), SL_OK);
        assert_same_message(&m, &out);
        assert_int_equal(out.reason_len, reason_len);
        if (reason_len)
            assert_memory_equal(out.reason, reasons[i], reason_len);
        assert_int_equal(out.died_ns, 424242);
        /* Read as a live record, the tail is bytes nothing accounts for. */
        assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_ECORRUPT);
        free(buf);
    }
}

static void set_attempt_rewrites_and_reseals(void **state)
{
    (void)state;
    rec_msg m = sample("t", "retry me"), out;
    size_t len, dead_len;
    unsigned char *live = encode(&m, &len);
    rec_set_attempt(live, len, KEY, 7);
    assert_int_equal(rec_decode(live, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    m.attempt = 7;
    assert_same_message(&m, &out);
    free(live);

    unsigned char *dead = bury(&m, reason_text, 99, &dead_len);
    rec_set_attempt(dead, dead_len, DEAD_KEY, 8);
    assert_int_equal(rec_decode(dead, dead_len, REC_DEAD, DEAD_KEY, &out, NULL), SL_OK);
    assert_int_equal(out.attempt, 8);
    assert_int_equal(out.died_ns, 99);
    assert_memory_equal(out.reason, reason_text, strlen(reason_text));
    free(dead);
}

static void revive_gives_back_the_live_record_fresh(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "come back"), out;
    m.attempt = 5;
    m.expires_ns = 777;
    size_t dead_len;
    unsigned char *dead = bury(&m, reason_text, 99, &dead_len);
    size_t len = rec_revive(dead, dead_len, 2, KEY);
    assert_int_equal(len, L_HEAD_BYTES + 3 + 9);
    assert_int_equal(rec_decode(dead, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    m.attempt = 0;
    m.expires_ns = 0;
    m.level = 2;
    assert_same_message(&m, &out);
    free(dead);
}

static void every_flipped_bit_is_detected(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "a body to damage");
    size_t lens[2];
    unsigned char *recs[2] = {encode(&m, &lens[0]), bury(&m, reason_text, 5, &lens[1])};
    const rec_kind kinds[2] = {REC_LIVE, REC_DEAD};
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < lens[r]; i++)
            for (int bit = 0; bit < 8; bit++) {
                recs[r][i] ^= (unsigned char)(1u << bit);
                expect_corrupt(recs[r], lens[r], kinds[r]);
                recs[r][i] ^= (unsigned char)(1u << bit);
            }
    for (int r = 0; r < 2; r++) {
        rec_msg out;
        assert_int_equal(rec_decode(recs[r], lens[r], kinds[r], key_of(kinds[r]), &out, NULL), SL_OK);
        free(recs[r]);
    }
}

static void every_truncation_is_rejected(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "a body to cut short");
    size_t lens[2];
    unsigned char *recs[2] = {encode(&m, &lens[0]), bury(&m, reason_text, 5, &lens[1])};
    const rec_kind kinds[2] = {REC_LIVE, REC_DEAD};
    for (int r = 0; r < 2; r++) {
        for (size_t len = 0; len < lens[r]; len++) {
            expect_corrupt(recs[r], len, kinds[r]);
            if (len >= L_SEALED) { /* with a checksum that fits what is left */
                unsigned char *cut = copy(recs[r], len);
                reseal_under(cut, len, key_of(kinds[r]));
                expect_corrupt(cut, len, kinds[r]);
                free(cut);
            }
            assert_int_equal(rec_peek_level(recs[r], len), len < L_HEAD_BYTES ? -1 : m.level);
        }
        free(recs[r]);
    }
}

static void lengths_that_overrun_are_rejected(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "body"), out;
    size_t len, dead_len;
    unsigned char *buf = encode(&m, &len);
    const struct { size_t at, bytes; uint64_t value; } lies[] = {
        {L_TAG_LEN, 2, 4},            /* tag grows into the body: one byte too many */
        {L_TAG_LEN, 2, 0xFFFF},
        {L_BODY_LEN, 4, 5},
        {L_BODY_LEN, 4, 0xFFFFFFFFu},
        {L_TAG_LEN, 2, 2},            /* too short: a byte nothing accounts for */
        {L_BODY_LEN, 4, 3},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        unsigned char *bad = copy(buf, len);
        put_le(bad + lies[i].at, lies[i].value, lies[i].bytes);
        reseal(bad, len);
        expect_corrupt(bad, len, REC_LIVE);
        free(bad);
    }
    free(buf);

    /* The reason's length, in a dead letter, must land exactly on died_ns. */
    buf = bury(&m, reason_text, 5, &dead_len);
    size_t reason_at = L_HEAD_BYTES + m.tag_len + m.body_len;
    const uint64_t reason_lies[] = {strlen(reason_text) + 1, strlen(reason_text) - 1, 0xFFFF};
    for (size_t i = 0; i < sizeof reason_lies / sizeof reason_lies[0]; i++) {
        unsigned char *bad = copy(buf, dead_len);
        put_le(bad + reason_at, reason_lies[i], 2);
        reseal_under(bad, dead_len, DEAD_KEY);
        expect_corrupt(bad, dead_len, REC_DEAD);
        free(bad);
    }
    assert_int_equal(rec_decode(buf, dead_len, REC_DEAD, DEAD_KEY, &out, NULL), SL_OK);
    free(buf);
}

static void foreign_format_and_level_are_rejected(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "body");
    size_t len;
    unsigned char *buf = encode(&m, &len);
    const struct { size_t at; unsigned char value; } faults[] = {
        {4, 0}, {4, 4},                   /* format byte */
        {20, 2}, {23, 0x80},              /* flags no format defines */
        {5, PROTO_MAX_LEVELS}, {5, 0xFF}, /* level byte */
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        unsigned char *bad = copy(buf, len);
        bad[faults[i].at] = faults[i].value;
        reseal(bad, len);
        expect_corrupt(bad, len, REC_LIVE);
        free(bad);
    }
    free(buf);
}

/* The checksum covers the key: a record read under any other key (every
 * flipped bit of its own, another length) is damage; and a record moved to
 * another key and sealed again for it is good there and only there. */
static void a_record_under_another_key_is_rejected(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "filed under one key"), out;
    size_t len;
    unsigned char *buf = encode(&m, &len), other[16];
    assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    for (size_t i = 0; i < sizeof key_bytes; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(other, key_bytes, sizeof key_bytes);
            other[i] ^= (unsigned char)(1u << bit);
            const char *why = NULL;
            assert_int_equal(rec_decode(buf, len, REC_LIVE, (rec_key){other, sizeof key_bytes}, &out, &why),
                             SL_ECORRUPT);
            assert_non_null(strstr(why, "checksum"));
        }
    memcpy(other, key_bytes, sizeof key_bytes);
    memset(other + 8, 0, 8);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, (rec_key){other, 16}, &out, NULL), SL_ECORRUPT);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, (rec_key){other, 7}, &out, NULL), SL_ECORRUPT);
    memset(other, 0x42, sizeof other); /* moved (a delayed record's 16-byte key), sealed again for it */
    rec_reseal(buf, len, (rec_key){other, 16});
    assert_int_equal(rec_decode(buf, len, REC_LIVE, (rec_key){other, 16}, &out, NULL), SL_OK);
    assert_same_message(&m, &out);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_ECORRUPT);
    free(buf);
}

/* A record of the first format (STORE_FORMAT 2 and older: format byte 1, a
 * checksum of its bytes alone) still reads, under any key, until
 * rec_reseal writes it in the current format for its key. */
static void first_format_records_are_read_and_resealed(void **state)
{
    (void)state;
    rec_msg m = sample("tag", "written by an older broker"), out;
    size_t len;
    unsigned char *buf = encode(&m, &len);
    buf[4] = 1;
    put_le(buf + L_CRC, crc32c_value(buf + L_SEALED, len - L_SEALED), 4);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, DEAD_KEY, &out, NULL), SL_OK);
    assert_same_message(&m, &out);
    buf[len - 1] ^= 1; /* its checksum still holds it */
    expect_corrupt(buf, len, REC_LIVE);
    buf[len - 1] ^= 1;
    rec_reseal(buf, len, KEY);
    assert_int_equal(buf[4], 3);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, KEY, &out, NULL), SL_OK);
    assert_int_equal(rec_decode(buf, len, REC_LIVE, DEAD_KEY, &out, NULL), SL_ECORRUPT);
    free(buf);
}

static void size_refuses_what_cannot_be_stored(void **state)
{
    (void)state;
    size_t len = 0;
    rec_msg m = sample("tag", "body");
    m.tag = NULL;
    assert_int_equal(rec_size(&m, &len), SL_EINVAL);
    m = sample("tag", "body");
    m.body = NULL;
    assert_int_equal(rec_size(&m, &len), SL_EINVAL);
    m = sample("tag", "body");
    m.level = PROTO_MAX_LEVELS;
    assert_int_equal(rec_size(&m, &len), SL_EINVAL);
    m = sample("tag", "body");
    m.tag_len = PROTO_MAX_TAG + 1;
    assert_int_equal(rec_size(&m, &len), SL_ETOOBIG);
    m = sample("tag", "body");
    m.body_len = PROTO_MAX_BODY + 1;
    assert_int_equal(rec_size(&m, &len), SL_ETOOBIG);
    assert_int_equal(len, 0);
    m = sample(NULL, "");
    assert_int_equal(rec_size(&m, &len), SL_OK);
    assert_int_equal(len, L_HEAD_BYTES);
}

/* Random damage with a valid checksum: whatever decodes must describe bytes
 * inside the record, and account for all of them. About one case in 200
 * decodes; the test insists that some do, so the checks are not vacuous. */
static void random_resealed_damage_stays_inside(void **state)
{
    (void)state;
    rec_msg m = sample("some tag", "some body bytes"), out;
    size_t len;
    int accepted = 0;
    unsigned char *dead = bury(&m, reason_text, 5, &len);
    size_t reason_at = L_HEAD_BYTES + m.tag_len + m.body_len;
    const size_t lengths[] = {L_TAG_LEN, L_TAG_LEN + 1, L_BODY_LEN, L_BODY_LEN + 1, reason_at, reason_at + 1};
    srand(th_seed());
    for (int i = 0; i < 20000; i++) {
        size_t cut = L_SEALED + (size_t)rand() % (len - L_SEALED + 1);
        unsigned char *bad = copy(dead, cut);
        for (int hits = 1 + rand() % 3; hits > 0; hits--) { /* mostly small values in length fields */
            size_t at = rand() % 2 ? lengths[(size_t)rand() % (sizeof lengths / sizeof lengths[0])]
                                   : (size_t)rand() % cut;
            if (at < cut)
                bad[at] = (unsigned char)(rand() % 4 ? rand() % 32 : rand());
        }
        rec_kind kind = rand() % 2 ? REC_DEAD : REC_LIVE;
        reseal_under(bad, cut, key_of(kind));
        if (rec_decode(bad, cut, kind, key_of(kind), &out, NULL) == SL_OK) {
            const unsigned char *end = bad + cut;
            /* the body, then the headers and the key when their flags say so: the last
             * of them ends the live record, the dead letter's tail follows it */
            const unsigned char *last = out.key_len       ? (const unsigned char *)out.key + out.key_len
                                        : out.headers_len ? out.headers + out.headers_len
                                                          : (const unsigned char *)out.body + out.body_len;
            accepted++;
            assert_true((const unsigned char *)out.body + out.body_len <= last && last <= end);
            if (kind == REC_DEAD)
                assert_true((const unsigned char *)out.reason == last + 2 &&
                            (const unsigned char *)out.reason + out.reason_len + 8 == end);
            else
                assert_true(last == end);
        }
        free(bad);
    }
    assert_true(accepted > 0);
    free(dead);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, th_timeout_arm, th_timeout_disarm)
    const struct CMUnitTest tests[] = {
        T(round_trip_with_and_without_tag),
        T(encoding_is_the_documented_layout),
        T(dead_letter_tail_round_trip),
        T(set_attempt_rewrites_and_reseals),
        T(revive_gives_back_the_live_record_fresh),
        T(every_flipped_bit_is_detected),
        T(every_truncation_is_rejected),
        T(lengths_that_overrun_are_rejected),
        T(foreign_format_and_level_are_rejected),
        T(headers_ride_after_the_body),
        T(a_record_under_another_key_is_rejected),
        T(first_format_records_are_read_and_resealed),
        T(size_refuses_what_cannot_be_stored),
        T(random_resealed_damage_stays_inside),
    };
#undef T
    return cmocka_run_group_tests_name("rec", tests, NULL, NULL);
}
