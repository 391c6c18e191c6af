/*
 * test_proto.c - the codec: a round trip for every message type, and a
 * catalogue of malformed input (rows included) that must each get its typed
 * error. The admin command list's checks and PROTOCOL.md's coverage of the
 * model are in test_proto_model.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto.h"

#include <stdio.h>

static const char text[] = "abcdefghijklmnopqrstuvwxyz";

/* fill_rows_K sets three rows of kind K (fewer when K allows fewer), every
 * column set. */
#define COL_FILL_U64(K, mm) r->mm = 100 + PROTO_COL_##K##_##mm + i;
#define COL_FILL_STR(K, mm) r->mm = (proto_buf){text, 2 + i};
#define COL_FILL_(K, mm, k, t, req) COL_FILL_##t(K, mm)
#define FILL_KIND_(K, most)                                    \
    static void fill_rows_##K(proto_rows_##K *rows)            \
    {                                                          \
        rows->n = (most) < 3 ? (most) : 3;                     \
        for (uint32_t i = 0; i < rows->n; i++) {               \
            proto_row_##K *r = &rows->v[i];                    \
            r->present = PROTO_ROW_ALL(K);                     \
            PROTO_COLS_##K(COL_FILL_, K)                       \
        }                                                      \
    }
PROTO_ROW_KINDS(FILL_KIND_)
#undef FILL_KIND_

/* fill sets every field in mask to a value derived from its index. */
static void fill(proto_msg *m, proto_mask mask)
{
#define FILL_U64(mm, x)  m->mm = 1000 + PROTO_F_##mm;
#define FILL_STR(mm, x)  m->mm = (proto_buf){text, 3 + PROTO_F_##mm % 20};
#define FILL_BIN(mm, x)  m->mm = (proto_buf){text, 5};
#define FILL_U64S(mm, x) m->mm.n = 3; for (int i = 0; i < 3; i++) m->mm.v[i] = (uint64_t)i * 7 + PROTO_F_##mm;
#define FILL_STRS(mm, x) m->mm.n = 2; m->mm.v[0] = (proto_buf){text, 4}; m->mm.v[1] = (proto_buf){text + 4, 6};
#define FILL_ROWS(mm, kind) fill_rows_##kind(&m->mm);
#define FILL_HDRS(mm, x) m->mm.n = 2; m->mm.name[0] = (proto_buf){"traceparent", 11}; \
    m->mm.value[0] = (proto_buf){text, 6}; m->mm.name[1] = (proto_buf){"X-Custom", 8}; m->mm.value[1] = (proto_buf){"", 0};
#define FILL_(mm, k, t, max) if (mask & PF(mm)) { FILL_##t(mm, max) }
    PROTO_FIELDS(FILL_)
#undef FILL_
    m->present |= mask;
}

static int same_buf(proto_buf a, proto_buf b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* same_rows_K compares two lists of kind K column by column. */
#define COL_CMP_U64(mm) assert_true(x->mm == y->mm);
#define COL_CMP_STR(mm) assert_true(same_buf(x->mm, y->mm));
#define COL_CMP_(K, mm, k, t, req) \
    if (x->present & (1u << PROTO_COL_##K##_##mm)) { COL_CMP_##t(mm) }
#define CMP_KIND_(K, most)                                                   \
    static void same_rows_##K(const proto_rows_##K *a, const proto_rows_##K *b) \
    {                                                                        \
        assert_int_equal(a->n, b->n);                                        \
        for (uint32_t i = 0; i < a->n; i++) {                                \
            const proto_row_##K *x = &a->v[i], *y = &b->v[i];                \
            assert_int_equal(x->present, y->present);                        \
            PROTO_COLS_##K(COL_CMP_, K)                                      \
        }                                                                    \
    }
PROTO_ROW_KINDS(CMP_KIND_)
#undef CMP_KIND_

static void check_same(const proto_msg *a, const proto_msg *b)
{
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->present & ~PF(op), b->present & ~PF(op));
#define CMP_U64(mm, x)  assert_true(a->mm == b->mm);
#define CMP_STR(mm, x)  assert_true(same_buf(a->mm, b->mm));
#define CMP_BIN(mm, x)  assert_true(same_buf(a->mm, b->mm));
#define CMP_U64S(mm, x) assert_int_equal(a->mm.n, b->mm.n); \
    for (uint32_t i = 0; i < a->mm.n; i++) assert_true(a->mm.v[i] == b->mm.v[i]);
#define CMP_STRS(mm, x) assert_int_equal(a->mm.n, b->mm.n); \
    for (uint32_t i = 0; i < a->mm.n; i++) assert_true(same_buf(a->mm.v[i], b->mm.v[i]));
#define CMP_ROWS(mm, kind) same_rows_##kind(&a->mm, &b->mm);
#define CMP_HDRS(mm, x) assert_int_equal(a->mm.n, b->mm.n); \
    for (uint32_t i = 0; i < a->mm.n; i++) \
        assert_true(same_buf(a->mm.name[i], b->mm.name[i]) && same_buf(a->mm.value[i], b->mm.value[i]));
#define CMP_(mm, k, t, max) if (a->present & PF(mm)) { CMP_##t(mm, max) }
    PROTO_FIELDS(CMP_)
#undef CMP_
}

static void round_trip_every_type(void **state)
{
    (void)state;
    for (int t = PROTO_NONE + 1; t < PROTO_TYPE_COUNT_; t++) {
        proto_mask req, opt;
        assert_int_equal(proto_fields_of((proto_type)t, &req, &opt), 0);
        for (int variant = 0; variant < 2; variant++) {
            proto_msg in, out;
            proto_wbuf buf = {0};
            proto_init(&in, (proto_type)t);
            fill(&in, variant ? req | opt : req);
            assert_int_equal(proto_encode(&in, &buf), SL_OK);
            assert_int_equal(proto_decode(buf.data, buf.len, &out, NULL), SL_OK);
            check_same(&in, &out);
            assert_string_equal(proto_name(out.type), proto_name((proto_type)t));
            proto_wbuf_free(&buf);
        }
    }
}

static void encode_refuses_missing_or_foreign_fields(void **state)
{
    (void)state;
    proto_msg m;
    proto_wbuf buf = {0};
    proto_init(&m, PROTO_PUT);
    proto_set(&m, seq, 1); /* no body */
    assert_int_equal(proto_encode(&m, &buf), SL_EINVAL);
    proto_set_str(&m, PROTO_F_body, "x", 1);
    proto_set(&m, token, 5); /* not a PUT field */
    assert_int_equal(proto_encode(&m, &buf), SL_EINVAL);
    assert_int_equal(buf.len, 0);
    proto_wbuf_free(&buf);
}

/* A valid PUT to cut and bend. */
static size_t valid_put(proto_wbuf *buf)
{
    proto_msg m;
    proto_init(&m, PROTO_PUT);
    proto_set(&m, seq, 42);
    proto_set(&m, level, 2);
    proto_set_str(&m, PROTO_F_tag, "paying", 6);
    proto_set_str(&m, PROTO_F_body, "hello world", 11);
    assert_int_equal(proto_encode(&m, buf), SL_OK);
    return buf->len;
}

static void truncated_at_every_offset(void **state)
{
    (void)state;
    proto_wbuf buf = {0};
    size_t len = valid_put(&buf);
    for (size_t cut = 0; cut < len; cut++) {
        proto_msg m;
        const char *why = NULL;
        int rc = proto_decode(buf.data, cut, &m, &why);
        assert_int_equal(rc, SL_EPROTO);
        assert_non_null(why);
    }
    proto_msg m;
    assert_int_equal(proto_decode(buf.data, len, &m, NULL), SL_OK);
    assert_true(m.seq == 42 && m.level == 2);
    proto_wbuf_free(&buf);
}

static void expect(const void *bytes, size_t len, int code)
{
    proto_msg m;
    const char *why = NULL;
    int rc = proto_decode(bytes, len, &m, &why);
    if (rc != code)
        fail_msg("expected %s, got %s (%s)", proto_errname(code), proto_errname(rc), why ? why : "-");
    if (rc)
        assert_non_null(why);
}

/* expect_why is expect, and the decoder must also name the problem why. */
static void expect_why(const void *bytes, size_t len, int code, const char *why_want)
{
    proto_msg m;
    const char *why = NULL;
    int rc = proto_decode(bytes, len, &m, &why);
    if (rc != code || !why || strcmp(why, why_want) != 0)
        fail_msg("expected %s (%s), got %s (%s)", proto_errname(code), why_want, proto_errname(rc),
                 why ? why : "-");
}

static void huge_declared_sizes(void **state)
{
    (void)state;
    /* map32 claiming 4 billion pairs: the 5 bytes that would make msgpack-c
     * reserve gigabytes */
    static const uint8_t map32[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t arr32[] = {0x81, 0xa2, 'o', 'p', 0xdd, 0x7f, 0xff, 0xff, 0xff};
    static const uint8_t bin32[] = {0x81, 0xa2, 'o', 'p', 0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00};
    static const uint8_t str32[] = {0x81, 0xa2, 'o', 'p', 0xdb, 0x00, 0x10, 0x00, 0x00, 'P'};
    static const uint8_t map16[] = {0xde, 0xff, 0xff, 0xa2, 'o', 'p'};
    expect(map32, sizeof map32, SL_EPROTO);
    expect(arr32, sizeof arr32, SL_EPROTO);
    expect(bin32, sizeof bin32, SL_ETOOBIG);
    expect(str32, sizeof str32, SL_EPROTO);
    expect(map16, sizeof map16, SL_EPROTO);
}

static void deep_nesting_and_object_count(void **state)
{
    (void)state;
    /* {"op": [[[1]]]}: map > array > array > array */
    static const uint8_t deep[] = {0x81, 0xa2, 'o', 'p', 0x91, 0x91, 0x91, 0x01};
    expect(deep, sizeof deep, SL_EPROTO);
    /* {"op": <array16 of 2100 ints>}: longer than any array may be */
    uint8_t longer[4 + 3 + 2100];
    memcpy(longer, (uint8_t[]){0x81, 0xa2, 'o', 'p', 0xdc, 0x08, 0x34}, 7);
    memset(longer + 7, 0x01, 2100);
    expect_why(longer, sizeof longer, SL_ETOOBIG, "array longer than 64");
    /* {"op": [40 x [60 x 1]]}: every array within bounds, 2443 objects */
    uint8_t many[4 + 3 + 40 * (3 + 60)];
    size_t len = 0;
    memcpy(many, (uint8_t[]){0x81, 0xa2, 'o', 'p', 0xdc, 0x00, 40}, 7);
    len = 7;
    for (int i = 0; i < 40; i++) {
        memcpy(many + len, (uint8_t[]){0xdc, 0x00, 60}, 3);
        memset(many + len + 3, 0x01, 60);
        len += 63;
    }
    expect_why(many, len, SL_ETOOBIG, "too many objects");
}

static void encode_raw(proto_wbuf *b, const uint8_t *bytes, size_t len)
{
    b->data = malloc(len);
    memcpy(b->data, bytes, len);
    b->len = b->cap = len;
}

static void wrong_types_and_ranges(void **state)
{
    (void)state;
    /* {"op":"PUT","seq":-1,"body":"x"} : negative seq */
    static const uint8_t neg[] = {0x83, 0xa2, 'o', 'p', 0xa3, 'P', 'U', 'T', 0xa3, 's', 'e', 'q', 0xff,
                                  0xa4, 'b', 'o', 'd', 'y', 0xa1, 'x'};
    expect(neg, sizeof neg, SL_EPROTO);
    /* seq as a string */
    static const uint8_t str_seq[] = {0x83, 0xa2, 'o', 'p', 0xa3, 'P', 'U', 'T', 0xa3, 's', 'e', 'q', 0xa1, '1',
                                      0xa4, 'b', 'o', 'd', 'y', 0xa1, 'x'};
    expect(str_seq, sizeof str_seq, SL_EPROTO);
    /* op as an integer */
    static const uint8_t int_op[] = {0x81, 0xa2, 'o', 'p', 0x05};
    expect(int_op, sizeof int_op, SL_EPROTO);
    /* float where an integer belongs */
    static const uint8_t flt[] = {0x83, 0xa2, 'o', 'p', 0xa3, 'P', 'U', 'T', 0xa3, 's', 'e', 'q',
                                  0xcb, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0xa4, 'b', 'o', 'd', 'y', 0xa1, 'x'};
    expect(flt, sizeof flt, SL_EPROTO);
    /* a tag over 255 bytes */
    proto_msg m;
    proto_wbuf buf = {0};
    char tag[300];
    memset(tag, 't', sizeof tag);
    proto_init(&m, PROTO_PUT);
    proto_set(&m, seq, 1);
    proto_set_str(&m, PROTO_F_body, "x", 1);
    m.tag = (proto_buf){tag, sizeof tag};
    m.present |= PF(tag);
    assert_int_equal(proto_encode(&m, &buf), SL_ETOOBIG);
    proto_wbuf_free(&buf);
}

static void unknown_missing_duplicate(void **state)
{
    (void)state;
    static const uint8_t unknown_op[] = {0x82, 0xa2, 'o', 'p', 0xa4, 'Z', 'A', 'P', '!', 0xa3, 's', 'e', 'q', 0x07};
    proto_msg m;
    assert_int_equal(proto_decode(unknown_op, sizeof unknown_op, &m, NULL), SL_EUNKNOWN);
    assert_true(m.present & PF(seq)); /* kept for the error reply */
    assert_true(m.seq == 7);
    static const uint8_t no_op[] = {0x81, 0xa3, 's', 'e', 'q', 0x01};
    expect(no_op, sizeof no_op, SL_EPROTO);
    static const uint8_t missing_body[] = {0x82, 0xa2, 'o', 'p', 0xa3, 'P', 'U', 'T', 0xa3, 's', 'e', 'q', 0x01};
    expect(missing_body, sizeof missing_body, SL_EPROTO);
    static const uint8_t foreign[] = {0x83, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0xa3, 's', 'e', 'q', 0x01,
                                      0xa5, 't', 'o', 'k', 'e', 'n', 0x01};
    expect(foreign, sizeof foreign, SL_EPROTO);
    static const uint8_t nokey[] = {0x82, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0xa3, 'z', 'z', 'z', 0x01};
    expect(nokey, sizeof nokey, SL_EPROTO);
    static const uint8_t dup[] = {0x83, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0xa3, 's', 'e', 'q', 0x01,
                                  0xa3, 's', 'e', 'q', 0x02};
    expect(dup, sizeof dup, SL_EPROTO);
    static const uint8_t intkey[] = {0x82, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0x01, 0x01};
    expect(intkey, sizeof intkey, SL_EPROTO);
}

static void not_a_map_and_oddities(void **state)
{
    (void)state;
    expect("", 0, SL_EPROTO);
    static const uint8_t arr[] = {0x91, 0x01};
    expect(arr, sizeof arr, SL_EPROTO);
    static const uint8_t nil[] = {0xc0};
    expect(nil, sizeof nil, SL_EPROTO);
    static const uint8_t c1[] = {0x81, 0xa2, 'o', 'p', 0xc1};
    expect(c1, sizeof c1, SL_EPROTO);
    static const uint8_t ext[] = {0x81, 0xa2, 'o', 'p', 0xd4, 0x01, 0x02};
    expect(ext, sizeof ext, SL_EPROTO);
    static const uint8_t ping[] = {0x81, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G'};
    expect(ping, sizeof ping, SL_OK);
    uint8_t trailing[sizeof ping + 1];
    memcpy(trailing, ping, sizeof ping);
    trailing[sizeof ping] = 0x00;
    expect(trailing, sizeof trailing, SL_EPROTO);
    proto_wbuf b = {0};
    encode_raw(&b, ping, sizeof ping);
    proto_msg m;
    assert_int_equal(proto_decode(b.data, b.len, &m, NULL), SL_OK);
    assert_int_equal(m.type, PROTO_PING);
    proto_wbuf_free(&b);
}

static void random_bytes_never_crash(void **state)
{
    (void)state;
    uint8_t buf[64];
    srand(1234);
    for (int i = 0; i < 20000; i++) {
        size_t len = (size_t)(rand() % (int)sizeof buf);
        for (size_t j = 0; j < len; j++)
            buf[j] = (uint8_t)rand();
        if (len)
            buf[0] = (uint8_t)(0x80 | (rand() & 0x0f)); /* mostly maps */
        proto_msg m;
        int rc = proto_decode(buf, len, &m, NULL);
        assert_true(rc == SL_OK || rc == SL_EPROTO || rc == SL_ETOOBIG || rc == SL_EUNKNOWN);
    }
}

static void error_table(void **state)
{
    (void)state;
    assert_string_equal(proto_errname(SL_ESTALE), "SL_ESTALE");
    assert_int_equal(SL_ESTALE, 6);
    assert_string_equal(proto_strerror(SL_OK), "success");
    assert_string_equal(proto_strerror(9999), "unknown error");
    assert_int_equal(proto_type_of("PUT", 3), PROTO_PUT);
    assert_int_equal(proto_type_of("PUTX", 4), PROTO_NONE);
}

/* ---- rows ---- */

/* A hand-made message, for input the encoder would refuse. */
typedef struct raw {
    uint8_t b[4096];
    size_t len;
} raw;

static void raw_bytes(raw *r, const void *p, size_t n)
{
    assert_true(r->len + n <= sizeof r->b);
    memcpy(r->b + r->len, p, n);
    r->len += n;
}

static void raw_byte(raw *r, uint8_t v)
{
    raw_bytes(r, &v, 1);
}

static void raw_str(raw *r, const char *s)
{
    size_t n = strlen(s);
    if (n < 32) {
        raw_byte(r, (uint8_t)(0xa0 | n));
    } else {
        raw_byte(r, 0xd9);
        raw_byte(r, (uint8_t)n);
    }
    raw_bytes(r, s, n);
}

/* raw_rows starts {"op": "ADMIN_OK", "seq": 7, key: [ with n rows to follow. */
static void raw_rows(raw *r, const char *key, uint8_t n)
{
    r->len = 0;
    raw_byte(r, 0x83);
    raw_str(r, "op");
    raw_str(r, "ADMIN_OK");
    raw_str(r, "seq");
    raw_byte(r, 7);
    raw_str(r, key);
    raw_byte(r, 0xdc);
    raw_byte(r, 0);
    raw_byte(r, n);
}

static void rows_round_trip_and_empty_lists(void **state)
{
    (void)state;
    proto_msg in, out;
    proto_wbuf buf = {0};
    proto_init(&in, PROTO_ADMIN_OK);
    proto_set(&in, seq, 3);
    in.present |= PF(pool_rows);
    in.pool_rows.n = 0;
    assert_int_equal(proto_encode(&in, &buf), SL_OK);
    assert_int_equal(proto_decode(buf.data, buf.len, &out, NULL), SL_OK);
    assert_true(out.present & PF(pool_rows));
    assert_int_equal(out.pool_rows.n, 0);
    proto_wbuf_reset(&buf);

    /* the most rows a kind holds, each with every column */
    proto_init(&in, PROTO_STATS_OK);
    fill(&in, PF(seq) | PF(uptime_ms) | PF(consumers) | PF(breaker) | PF(breaker_trips) | PF(rx_bad) |
                  PF(tx_failed));
    in.present |= PF(level_stats);
    in.level_stats.n = PROTO_MAX_LEVELS;
    for (uint32_t i = 0; i < PROTO_MAX_LEVELS; i++)
        in.level_stats.v[i] = (proto_row_level_stat){.present = PROTO_ROW_ALL(level_stat),
                                                     .name = {text, i + 1},
                                                     .depth = UINT64_MAX - i,
                                                     .eta_ms = i};
    assert_int_equal(proto_encode(&in, &buf), SL_OK);
    assert_int_equal(proto_decode(buf.data, buf.len, &out, NULL), SL_OK);
    check_same(&in, &out);
    assert_true(out.level_stats.v[15].depth == UINT64_MAX - 15);
    proto_wbuf_reset(&buf);

    /* the encoder refuses what the decoder would */
    in.level_stats.n = PROTO_MAX_LEVELS + 1;
    assert_int_equal(proto_encode(&in, &buf), SL_EINVAL);
    in.level_stats.n = 2;
    in.level_stats.v[1].present &= ~(1u << PROTO_COL_level_stat_depth);
    assert_int_equal(proto_encode(&in, &buf), SL_EINVAL);
    in.level_stats.v[1].present = PROTO_ROW_ALL(level_stat);
    char name[PROTO_MAX_NAME + 1];
    memset(name, 'n', sizeof name);
    in.level_stats.v[1].name = (proto_buf){name, sizeof name};
    assert_int_equal(proto_encode(&in, &buf), SL_ETOOBIG);
    assert_int_equal(buf.len, 0);
    proto_wbuf_free(&buf);
}

static void malformed_rows(void **state)
{
    (void)state;
    raw r;
    /* 17 level rows: more than a level list holds */
    raw_rows(&r, "level_rows", 17);
    for (int i = 0; i < 17; i++)
        raw_byte(&r, 0x80);
    expect_why(r.b, r.len, SL_ETOOBIG, "too many rows");
    /* 65 pool rows: more than any array holds, refused before allocation */
    raw_rows(&r, "pool_rows", 65);
    for (int i = 0; i < 65; i++)
        raw_byte(&r, 0x80);
    assert_int_equal(proto_guard(r.b, r.len, NULL), SL_ETOOBIG);
    expect_why(r.b, r.len, SL_ETOOBIG, "array longer than 64");
    /* a row holding an array: map > array > map > array is too deep */
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "name");
    raw_bytes(&r, "\x91\x01", 2);
    assert_int_equal(proto_guard(r.b, r.len, NULL), SL_EPROTO);
    expect_why(r.b, r.len, SL_EPROTO, "nesting too deep");
    /* a column of the wrong type */
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "size");
    raw_str(&r, "big");
    expect_why(r.b, r.len, SL_EPROTO, "expected a non-negative integer");
    raw_rows(&r, "level_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "name");
    raw_byte(&r, 0x05);
    expect_why(r.b, r.len, SL_EPROTO, "expected a string");
    /* an unknown column; a column of another kind is unknown too */
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "zzz");
    raw_byte(&r, 0x01);
    expect_why(r.b, r.len, SL_EPROTO, "unknown column");
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "picks_aged");
    raw_byte(&r, 0x01);
    expect_why(r.b, r.len, SL_EPROTO, "unknown column");
    /* a column twice */
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x82);
    raw_str(&r, "size");
    raw_byte(&r, 0x01);
    raw_str(&r, "size");
    raw_byte(&r, 0x02);
    expect_why(r.b, r.len, SL_EPROTO, "duplicate column");
    /* a required column missing */
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "size");
    raw_byte(&r, 0x01);
    expect_why(r.b, r.len, SL_EPROTO, "required column missing");
    /* a row that is not a map; rows that are not an array */
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x01);
    expect_why(r.b, r.len, SL_EPROTO, "a row is not a map");
    raw_rows(&r, "pool_rows", 0);
    r.len -= 3;
    raw_byte(&r, 0x01);
    expect_why(r.b, r.len, SL_EPROTO, "expected an array of rows");
    /* a string column over its limit */
    char name[PROTO_MAX_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x81);
    raw_str(&r, "name");
    raw_str(&r, name);
    expect_why(r.b, r.len, SL_ETOOBIG, "string or body exceeds its limit");
    /* rows in a message type that does not carry them */
    raw_rows(&r, "pool_rows", 0);
    memcpy(r.b + 5, "STATS_OK", 8);
    expect_why(r.b, r.len, SL_EPROTO, "field not allowed for this message type");
    /* and an error keeps only seq, for the error reply */
    proto_msg m;
    raw_rows(&r, "pool_rows", 1);
    raw_byte(&r, 0x80);
    assert_int_equal(proto_decode(r.b, r.len, &m, NULL), SL_EPROTO);
    assert_int_equal(m.type, PROTO_ADMIN_OK);
    assert_true(m.present == PF(seq) && m.seq == 7);
}

/* ---- admin commands ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_every_type),
        cmocka_unit_test(encode_refuses_missing_or_foreign_fields),
        cmocka_unit_test(truncated_at_every_offset),
        cmocka_unit_test(huge_declared_sizes),
        cmocka_unit_test(deep_nesting_and_object_count),
        cmocka_unit_test(wrong_types_and_ranges),
        cmocka_unit_test(unknown_missing_duplicate),
        cmocka_unit_test(not_a_map_and_oddities),
        cmocka_unit_test(random_bytes_never_crash),
        cmocka_unit_test(error_table),
        cmocka_unit_test(rows_round_trip_and_empty_lists),
        cmocka_unit_test(malformed_rows),
    };
    return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
