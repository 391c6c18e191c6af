/*
 * test_hdrs.c - the rules of a message's headers (proto/proto_hdrs.c)
 * without a broker: every fault of PROTO_HDR_FAULTS found with its code and
 * the pair it is in, the limits exact (32 pairs, 64-byte names, 1024-byte
 * values, 8192 bytes in all), every refused name in any case, a bad byte
 * at every place of a value (the check reads 8 bytes at a time), and the
 * stored block: packed and unpacked byte for byte, refused when its
 * lengths lie. Every test runs under alarm(60 s) (th_timeout_arm).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "proto.h"

static proto_hdrs one(const char *name, const char *value)
{
    proto_hdrs h = {.n = 1};
    h.name[0] = (proto_buf){name, (uint32_t)strlen(name)};
    h.value[0] = (proto_buf){value, (uint32_t)strlen(value)};
    return h;
}

static void expect(const proto_hdrs *h, proto_hdr_fault want, uint32_t at)
{
    proto_hdr_fault f;
    uint32_t where;
    assert_int_equal(proto_hdrs_check(h, &f, &where), proto_hdr_fault_code(want));
    assert_int_equal(f, want);
    if (want != PROTO_HDR_OK)
        assert_int_equal(where, at);
}

static void each_rule_has_its_fault(void **state)
{
    (void)state;
    static char name64[65], name65[66], v1024[1025], v1025[1026];
    memset(name64, 'n', 64);
    memset(name65, 'n', 65);
    memset(v1024, 'v', 1024);
    memset(v1025, 'v', 1025);
    proto_hdrs h = one("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    expect(&h, PROTO_HDR_OK, 0);
    h = one(name64, v1024);
    expect(&h, PROTO_HDR_OK, 0);
    h = one("", "v");
    expect(&h, PROTO_HDR_NAME_EMPTY, 0);
    h = one(name65, "v");
    expect(&h, PROTO_HDR_NAME_LEN, 0);
    h = one("a b", "v");
    expect(&h, PROTO_HDR_NAME_CHAR, 0);
    h = one("a:b", "v");
    expect(&h, PROTO_HDR_NAME_CHAR, 0);
    h = one("a", v1025);
    expect(&h, PROTO_HDR_VALUE_LEN, 0);
    h = one("a", "");
    expect(&h, PROTO_HDR_OK, 0);
    h = one("a", "x\ty");
    expect(&h, PROTO_HDR_OK, 0);
    h = one("a", "\tx");
    expect(&h, PROTO_HDR_VALUE_CHAR, 0);
    h = one("a", "x ");
    expect(&h, PROTO_HDR_VALUE_CHAR, 0);
    h = one("a", "caf\xc3\xa9");
    expect(&h, PROTO_HDR_OK, 0);
    h = one("a", "caf\xc3");
    expect(&h, PROTO_HDR_VALUE_CHAR, 0);
    /* duplicates in any case, at the second */
    h = one("X-A", "1");
    h.name[1] = (proto_buf){"x-a", 3};
    h.value[1] = (proto_buf){"2", 1};
    h.n = 2;
    expect(&h, PROTO_HDR_DUPLICATE, 1);
    /* 32 pairs pass, 33 do not */
    static char names[40][16];
    proto_hdrs many = {.n = 33}; /* a count past the array: refused before any pair is read */
    for (int i = 0; i < 32; i++) {
        snprintf(names[i], sizeof names[i], "h%d", i);
        many.name[i] = (proto_buf){names[i], (uint32_t)strlen(names[i])};
        many.value[i] = (proto_buf){"v", 1};
    }
    expect(&many, PROTO_HDR_COUNT, 33);
    many.n = 32;
    expect(&many, PROTO_HDR_OK, 0);
    /* 8192 bytes of names and values pass, one more does not */
    static char big[8][1025];
    proto_hdrs total = {.n = 8};
    for (int i = 0; i < 8; i++) {
        memset(big[i], 'a' + i, 1024);
        total.name[i] = (proto_buf){names[i], 2}; /* "h0".."h7" */
        total.value[i] = (proto_buf){big[i], 1022};
    }
    expect(&total, PROTO_HDR_OK, 0); /* 8 x (2 + 1022) = 8192 */
    total.value[7].len = 1023;
    expect(&total, PROTO_HDR_TOTAL, 8);
}

static void refused_names_in_any_case(void **state)
{
    (void)state;
    static const char *const hop[] = {"Connection", "keep-alive", "TE", "trailer", "TRANSFER-ENCODING", "Upgrade",
                                      "Proxy-Authorization", "proxy-connection"};
    static const char *const reserved[] = {"Host", "content-length", "Expect", "idempotency-key", "X-Sluice-Id",
                                           "x-sluice-anything"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++) {
        proto_hdrs h = one(hop[i], "v");
        expect(&h, PROTO_HDR_HOP, 0);
    }
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        proto_hdrs h = one(reserved[i], "v");
        expect(&h, PROTO_HDR_RESERVED, 0);
    }
    static const char *const fine[] = {"Content-Type", "TEA", "Proxy", "X-Sluice", "Hosts", "Connections", "tracestate"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        proto_hdrs h = one(fine[i], "v");
        expect(&h, PROTO_HDR_OK, 0);
    }
}

/* A bad byte anywhere in a value is found, whichever 8-byte word it is in. */
static void a_bad_byte_anywhere_is_found(void **state)
{
    (void)state;
    static const unsigned char bad[] = {0x00, 0x01, 0x0a, 0x0d, 0x1f, 0x7f, 0x80, 0xff};
    char v[40];
    for (size_t len = 3; len < sizeof v; len++)
        for (size_t at = 1; at + 1 < len; at++)
            for (size_t b = 0; b < sizeof bad; b++) {
                memset(v, 'x', len);
                v[at] = (char)bad[b];
                proto_hdrs h = {.n = 1};
                h.name[0] = (proto_buf){"a", 1};
                h.value[0] = (proto_buf){v, (uint32_t)len};
                proto_hdr_fault f;
                if (proto_hdrs_check(&h, &f, NULL) != SL_EINVAL || f != PROTO_HDR_VALUE_CHAR)
                    fail_msg("byte 0x%02x at %zu of %zu passed", bad[b], at, len);
                v[at] = '~'; /* the highest plain byte, and space: fine */
                assert_int_equal(proto_hdrs_check(&h, NULL, NULL), SL_OK);
                v[at] = ' ';
                assert_int_equal(proto_hdrs_check(&h, NULL, NULL), SL_OK);
            }
}

static void the_block_packs_and_unpacks_byte_for_byte(void **state)
{
    (void)state;
    proto_hdrs h = one("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), back;
    h.name[1] = (proto_buf){"X-Empty", 7};
    h.value[1] = (proto_buf){NULL, 0};
    h.n = 2;
    size_t n = proto_hdrs_packed_bytes(&h);
    assert_int_equal(n, 3 + 11 + 55 + 3 + 7);
    unsigned char buf[128];
    proto_hdrs_pack(&h, buf);
    assert_int_equal(buf[0], 11);
    assert_memory_equal(buf + 1, "traceparent", 11);
    assert_int_equal(buf[12] | buf[13] << 8, 55);
    assert_int_equal(proto_hdrs_unpack(buf, n, &back), SL_OK);
    assert_int_equal(back.n, 2);
    assert_memory_equal(back.name[0].ptr, "traceparent", 11);
    assert_memory_equal(back.value[0].ptr, h.value[0].ptr, 55);
    assert_int_equal(back.value[1].len, 0);
    assert_int_equal(proto_hdrs_find(&back, "X-EMPTY", 7), 1);
    assert_int_equal(proto_hdrs_find(&back, "nope", 4), -1);
    for (size_t cut = 1; cut < n; cut++) /* every shorter block lies about a length, or ends a pair early */
        if (proto_hdrs_unpack(buf, cut, &back) == SL_OK)
            assert_true(cut == 3 + 11 + 55); /* the first pair alone is a block too */
    assert_int_equal(proto_hdrs_unpack(buf, 0, &back), SL_OK);
    assert_int_equal(back.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(each_rule_has_its_fault, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(refused_names_in_any_case, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_bad_byte_anywhere_is_found, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_block_packs_and_unpacks_byte_for_byte, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("hdrs", tests, NULL, NULL);
}
