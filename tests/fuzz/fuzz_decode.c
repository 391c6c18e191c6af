/*
 * fuzz_decode.c - libFuzzer target for the wire decoder (proto_guard,
 * proto_decode, proto_encode).
 *
 * Each input is one frame as the broker would receive it. The sanitizers
 * (ASan, UBSan) catch memory and undefined-behaviour errors in the codec;
 * beyond that, the target checks properties and aborts when one fails:
 *
 *   - proto_decode returns one of its documented codes, names the problem on
 *     error and not on success, and on error leaves at most "seq" set;
 *   - the guard and the decoder agree: when proto_guard rejects, proto_decode
 *     rejects with the same code; when proto_decode accepts, the guard did;
 *     input the guard passes always parses as msgpack (the guard's model of
 *     msgpack matches msgpack-c's);
 *   - an accepted message re-encodes, the encoding decodes to the same
 *     message field by field (and row by row, column by column), and
 *     encoding that again gives the same bytes;
 *   - msgpack is self-delimiting, so a strict prefix of an accepted message
 *     is rejected.
 *
 * No I/O and no global state: libFuzzer may run inputs in any order. A failed
 * property aborts; libFuzzer then writes the input as crash-<sha1>.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed property is a broken invariant: abort with the line in the stack. */
#define CHECK(cond) \
    do { \
        if (!(cond)) \
            abort(); \
    } while (0)

static int same_buf(proto_buf a, proto_buf b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* same_rows_K aborts unless two lists of kind K hold the same rows. */
#define COL_CMP_U64(mm) CHECK(x->mm == y->mm);
#define COL_CMP_STR(mm) CHECK(same_buf(x->mm, y->mm));
#define COL_CMP_(K, mm, k, t, req) \
    if (x->present & (1u << PROTO_COL_##K##_##mm)) { \
        COL_CMP_##t(mm) \
    }
#define CMP_KIND_(K, most) \
    static void same_rows_##K(const proto_rows_##K *a, const proto_rows_##K *b) \
    { \
        CHECK(a->n == b->n && a->n <= (most)); \
        for (uint32_t i = 0; i < a->n; i++) { \
            const proto_row_##K *x = &a->v[i], *y = &b->v[i]; \
            CHECK(x->present == y->present); \
            PROTO_COLS_##K(COL_CMP_, K) \
        } \
    }
PROTO_ROW_KINDS(CMP_KIND_)
#undef CMP_KIND_

/* check_same aborts unless a and b hold the same type, fields and values. */
static void check_same(const proto_msg *a, const proto_msg *b)
{
    CHECK(a->type == b->type);
    CHECK(a->present == b->present);
#define CMP_U64(mm, x)  CHECK(a->mm == b->mm);
#define CMP_STR(mm, x)  CHECK(same_buf(a->mm, b->mm));
#define CMP_BIN(mm, x)  CHECK(same_buf(a->mm, b->mm));
#define CMP_U64S(mm, x) \
    CHECK(a->mm.n == b->mm.n && a->mm.n <= PROTO_MAX_ARRAY); \
    for (uint32_t i = 0; i < a->mm.n; i++) \
        CHECK(a->mm.v[i] == b->mm.v[i]);
#define CMP_STRS(mm, x) \
    CHECK(a->mm.n == b->mm.n && a->mm.n <= PROTO_MAX_ARRAY); \
    for (uint32_t i = 0; i < a->mm.n; i++) \
        CHECK(same_buf(a->mm.v[i], b->mm.v[i]));
#define CMP_ROWS(mm, kind) same_rows_##kind(&a->mm, &b->mm);
#define CMP_HDRS(mm, x) \
    CHECK(a->mm.n == b->mm.n && a->mm.n <= PROTO_MAX_HEADERS); \
    for (uint32_t i = 0; i < a->mm.n; i++) \
        CHECK(same_buf(a->mm.name[i], b->mm.name[i]) && same_buf(a->mm.value[i], b->mm.value[i]));
#define CMP_(mm, k, t, max) \
    if (a->present & PF(mm)) { \
        CMP_##t(mm, max) \
    }
    PROTO_FIELDS(CMP_)
#undef CMP_
}

/* check_error aborts unless an error result has the documented shape. */
static void check_error(int rc, const proto_msg *m, const char *why)
{
    CHECK(rc == SL_EPROTO || rc == SL_ETOOBIG || rc == SL_EINVAL || rc == SL_EUNKNOWN);
    CHECK(why != NULL);
    CHECK((m->present & ~PF(seq)) == 0);
    CHECK(m->type >= PROTO_NONE && m->type < PROTO_TYPE_COUNT_);
    if (rc == SL_EUNKNOWN)
        CHECK(m->type == PROTO_NONE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *gwhy = NULL, *why = NULL;
    int grc = proto_guard(data, size, &gwhy);
    CHECK(grc == SL_OK || grc == SL_EPROTO || grc == SL_ETOOBIG);
    CHECK((grc == SL_OK) == (gwhy == NULL));

    proto_msg m;
    int rc = proto_decode(data, size, &m, &why);
    if (grc != SL_OK) {
        CHECK(rc == grc);
        CHECK(m.type == PROTO_NONE && m.present == 0);
    } else if (rc != SL_OK) {
        CHECK(why != NULL && strcmp(why, "msgpack parse error") != 0);
    }
    if (rc != SL_OK) {
        check_error(rc, &m, why);
        return 0;
    }
    CHECK(grc == SL_OK);
    CHECK(why == NULL);
    CHECK(m.type > PROTO_NONE && m.type < PROTO_TYPE_COUNT_);
    CHECK(m.present & PF(op));

    proto_msg trunc;
    CHECK(proto_decode(data, size - 1, &trunc, NULL) != SL_OK);

    proto_wbuf enc = {0}, enc2 = {0};
    proto_msg back, again;
    CHECK(proto_encode(&m, &enc) == SL_OK);
    CHECK(proto_decode(enc.data, enc.len, &back, NULL) == SL_OK);
    check_same(&m, &back);
    CHECK(proto_encode(&back, &enc2) == SL_OK);
    CHECK(enc2.len == enc.len && memcmp(enc2.data, enc.data, enc.len) == 0);
    CHECK(proto_decode(enc2.data, enc2.len, &again, NULL) == SL_OK);
    check_same(&back, &again);
    proto_wbuf_free(&enc);
    proto_wbuf_free(&enc2);
    return 0;
}
