/*
 * test_proto_json.c - the wire model in JSON (proto/proto_json.c): a
 * message with every kind of field written and read back the same; strict
 * parsing (grammar, escapes, UTF-8, surrogates, depth, size); what a read
 * refuses (unknown and repeated keys, wrong types, negative or fractional
 * numbers, bad base64) with a sentence naming the key; level names; text
 * that could close a script escaped on the way out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto.h"
#include "proto_json.h"

static proto_json_doc doc;
static char arena[65536];
static char why[256];

static int parse(const char *text)
{
    return proto_json_parse(text, strlen(text), &doc, why, sizeof why);
}

static int read_admin(const char *text, proto_msg *m)
{
    static const char *const names[] = {"high", "normal", "low"};
    proto_json_names nm = {names, 3};
    proto_init(m, PROTO_ADMIN);
    int rc = parse(text);
    if (rc != SL_OK)
        return rc;
    return proto_json_read(&doc, 0, ~(proto_mask)0, &nm, m, arena, sizeof arena, why, sizeof why);
}

static void a_message_goes_out_and_back_the_same(void **state)
{
    (void)state;
    proto_msg m, back;
    proto_init(&m, PROTO_ADMIN);
    proto_set(&m, level, 2);
    proto_set(&m, rate_milli, 1500);
    proto_set_str(&m, PROTO_F_tag, "gold-<1>", 8);
    proto_set_str(&m, PROTO_F_body, "\x00\x01\xfe\xff", 4);
    m.present |= PF(window_rows) | PF(tag_rows);
    m.window_rows.n = 2;
    m.window_rows.v[0] = (proto_row_window){.present = PROTO_ROW_ALL(window), .level = 1, .count_milli = 10000,
                                            .period_ms = 1000, .burst = 5, .tokens_milli = 7};
    m.window_rows.v[1] = (proto_row_window){.present = 1u << PROTO_COL_window_count_milli | 1u << PROTO_COL_window_period_ms |
                                                       1u << PROTO_COL_window_burst,
                                            .count_milli = 500000, .period_ms = 60000, .burst = 500};
    m.tag_rows.n = 1;
    m.tag_rows.v[0] = (proto_row_tag){.present = 1u << PROTO_COL_tag_pattern | 1u << PROTO_COL_tag_weight,
                                      .pattern = {"a\"b\\c\n", 6}, .weight = 4};
    proto_wbuf o = {0};
    assert_int_equal(proto_json_msg(&o, &m, 0), SL_OK);
    assert_non_null(strstr(o.data, "\"level\": 2"));
    assert_non_null(strstr(o.data, "\"tag\": \"gold-\\u003c1\\u003e\""));
    assert_null(strstr(o.data, "\"body\": ")); /* not UTF-8: base64 only */
    assert_non_null(strstr(o.data, "\"body_base64\": \"AAH+/w==\""));
    assert_null(strstr(o.data, "\"op\""));
    assert_int_equal(read_admin(o.data, &back), SL_OK);
    assert_true(back.present == m.present);
    assert_int_equal(back.level, 2);
    assert_int_equal(back.rate_milli, 1500);
    assert_int_equal(back.tag.len, 8);
    assert_memory_equal(back.tag.ptr, "gold-<1>", 8);
    assert_int_equal(back.body.len, 4);
    assert_memory_equal(back.body.ptr, "\x00\x01\xfe\xff", 4);
    assert_int_equal(back.window_rows.n, 2);
    assert_int_equal(back.window_rows.v[0].present, m.window_rows.v[0].present);
    assert_int_equal(back.window_rows.v[0].tokens_milli, 7);
    assert_int_equal(back.window_rows.v[1].present, m.window_rows.v[1].present);
    assert_int_equal(back.window_rows.v[1].period_ms, 60000);
    assert_int_equal(back.tag_rows.v[0].pattern.len, 6);
    assert_memory_equal(back.tag_rows.v[0].pattern.ptr, "a\"b\\c\n", 6);
    assert_int_equal(back.tag_rows.v[0].weight, 4);
    proto_wbuf_free(&o);

    /* text bodies are written as text too; a line separator and a script's end are escaped */
    proto_init(&m, PROTO_ADMIN);
    proto_set_str(&m, PROTO_F_body, "</script>\xe2\x80\xa8", 12);
    assert_int_equal(proto_json_msg(&o, &m, 0), SL_OK);
    assert_non_null(strstr(o.data, "\"body\": \"\\u003c/script\\u003e\\u2028\""));
    assert_null(strstr(o.data, "</"));
    proto_wbuf_free(&o);
}

static void the_parser_is_strict(void **state)
{
    (void)state;
    static const char *const good[] = {"{}", "[]", " {\"a\" : [1, -2.5e3, true, false, null, \"x\"]} ", "0",
                                       "\"\\u00e9\\ud83d\\ude00\"", "{\"a\":{\"b\":[[{}]]}}"};
    static const char *const bad[] = {"", "{", "{\"a\"}", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.", "-",
                                      "1e", "tru", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
                                      "\"a\tb\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "{} {}",
                                      "{\"a\" 1}", "[1 2]", "'a'"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (parse(good[i]) != SL_OK)
            fail_msg("refused %s: %s", good[i], why);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(bad[i]) != SL_EINVAL)
            fail_msg("accepted %s", bad[i]);
    char deep[64] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, "[");
    assert_int_equal(parse(deep), SL_ETOOBIG);
    size_t n = 3 * PROTO_JSON_MAX_TOKENS + 16;
    char *many = malloc(n);
    char *w = many;
    *w++ = '[';
    for (int i = 0; i < PROTO_JSON_MAX_TOKENS + 1; i++) {
        if (i)
            *w++ = ',';
        *w++ = '0';
    }
    *w++ = ']';
    *w = '\0';
    assert_int_equal(parse(many), SL_ETOOBIG);
    free(many);
    char text[32];
    size_t len;
    assert_int_equal(parse("{\"k\": \"a\\n\\u00e9\\ud83d\\ude00\"}"), SL_OK);
    assert_int_equal(proto_json_string(&doc, proto_json_get(&doc, 0, "k"), text, sizeof text, &len), SL_OK);
    assert_int_equal(len, 1 + 1 + 2 + 4);
    assert_memory_equal(text, "a\n\xc3\xa9\xf0\x9f\x98\x80", len);
    assert_int_equal(proto_json_get(&doc, 0, "nope"), -1);
}

static void a_read_refuses_what_the_model_does_not_take(void **state)
{
    (void)state;
    proto_msg m;
    static const struct { const char *json; const char *names; } bad[] = {
        {"{\"bogus\": 1}", "bogus"},
        {"{\"level\": 1, \"level\": 2}", "twice"},
        {"{\"level\": -1}", "level"},
        {"{\"level\": 1.5}", "level"},
        {"{\"level\": \"nowhere\"}", "nowhere"},
        {"{\"rate_milli\": \"12\"}", "rate_milli"},
        {"{\"rate_milli\": 18446744073709551616}", "rate_milli"},
        {"{\"tag\": 5}", "tag"},
        {"{\"body_base64\": \"!!\"}", "body"},
        {"{\"tag_base64\": \"AA==\"}", "tag_base64"},
        {"{\"levels\": [0, \"x\"]}", "levels"},
        {"{\"window_rows\": [{\"count_milli\": 1, \"bogus\": 2}]}", "bogus"},
        {"{\"window_rows\": {}}", "window_rows"},
        {"[1]", "object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (read_admin(bad[i].json, &m) != SL_EINVAL)
            fail_msg("accepted %s", bad[i].json);
        if (!strstr(why, bad[i].names))
            fail_msg("for %s the reason does not name %s: %s", bad[i].json, bad[i].names, why);
    }
    /* names for levels, booleans for flags, null for absent, base64 without padding */
    assert_int_equal(read_admin("{\"level\": \"low\", \"to_level\": \"high\", \"dry_run\": true, \"force\": false, "
                                "\"n\": null, \"levels\": [\"normal\", 2], \"body_base64\": \"AAE\"}", &m),
                     SL_OK);
    assert_int_equal(m.level, 2);
    assert_int_equal(m.to_level, 0);
    assert_int_equal(m.dry_run, 1);
    assert_int_equal(m.force, 0);
    assert_false(m.present & PF(n));
    assert_int_equal(m.levels.n, 2);
    assert_int_equal(m.levels.v[0], 1);
    assert_int_equal(m.body.len, 2);
    assert_memory_equal(m.body.ptr, "\x00\x01", 2);
    /* a field the request does not allow is refused even when the model has it */
    proto_init(&m, PROTO_PUT);
    assert_int_equal(parse("{\"body\": \"x\", \"pool\": \"p\"}"), SL_OK);
    assert_int_equal(proto_json_read(&doc, 0, PF(body) | PF(tag), NULL, &m, arena, sizeof arena, why, sizeof why),
                     SL_EINVAL);
    assert_non_null(strstr(why, "pool"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_message_goes_out_and_back_the_same),
        cmocka_unit_test(the_parser_is_strict),
        cmocka_unit_test(a_read_refuses_what_the_model_does_not_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
