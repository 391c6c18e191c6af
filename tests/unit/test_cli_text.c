/*
 * test_cli_text.c - the command line's text functions (tools/cli/cli_text.c)
 * in place: cli_text_safe shows any bytes as text a terminal does not act
 * on (controls, C1 controls, bidirectional overrides and invalid UTF-8
 * escaped, valid UTF-8 as it is, idempotent, cut at whole escapes), and
 * cli_text_duration_parse reads durations with units while plain numbers
 * keep their option's unit. Nothing here is random.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cli_text.h"

static const char *safe(const char *s, size_t len)
{
    static char buf[512];
    return cli_text_safe(s, len, buf, sizeof buf);
}

static void controls_and_invalid_utf8_are_escaped(void **state)
{
    (void)state;
    assert_string_equal(safe("a\033[2Jb", 6), "a\\e[2Jb");
    assert_string_equal(safe("bell\a\n\t\r", 8), "bell\\x07\\n\\t\\r");
    assert_string_equal(safe("nul\0x", 5), "nul\\x00x");
    assert_string_equal(safe("del\x7f", 4), "del\\x7f");
    assert_string_equal(safe("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(safe("\xff\xfe", 2), "\\xff\\xfe");
    assert_string_equal(safe("\xc0\xaf", 2), "\\xc0\\xaf");         /* overlong '/' */
    assert_string_equal(safe("\xed\xa0\x80", 3), "\\xed\\xa0\\x80"); /* a surrogate */
    assert_string_equal(safe("\xf4\x90\x80\x80", 4), "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    assert_string_equal(safe("cut\xe2\x82", 5), "cut\\xe2\\x82");   /* cut short */
    assert_string_equal(safe("\xc2\x9b" "31m", 5), "\\xc2\\x9b31m");  /* C1 CSI */
    assert_string_equal(safe("\xe2\x80\xae" "txt", 6), "\\xe2\\x80\\xaetxt"); /* RIGHT-TO-LEFT OVERRIDE */
    assert_string_equal(safe("back\\slash", 10), "back\\slash");    /* stays: safe text is its own escape */
    /* idempotent, and is_safe agrees */
    const char *once = safe("x\033y\xff", 4);
    char copy[64];
    strcpy(copy, once);
    assert_true(cli_text_is_safe(copy));
    assert_string_equal(safe(copy, strlen(copy)), copy);
    assert_false(cli_text_is_safe("a\nb"));
    assert_false(cli_text_is_safe("\xff"));
    assert_true(cli_text_is_safe("caf\xc3\xa9"));
    /* cut at a whole escape or character, always terminated */
    char small[8];
    assert_string_equal(cli_text_safe("ab\033cd", 5, small, 5), "ab\\e");
    assert_string_equal(cli_text_safe("ab\acd", 5, small, 6), "ab");
    assert_string_equal(cli_text_safe("\xc3\xa9\xc3\xa9\xc3\xa9", 6, small, 6), "\xc3\xa9\xc3\xa9");
    char *dup = cli_text_safe_dup("\a\a\a", 3);
    assert_string_equal(dup, "\\x07\\x07\\x07");
    free(dup);
}

static void durations_take_units(void **state)
{
    (void)state;
    uint64_t ms = 0;
    assert_true(cli_text_duration_parse("500ms", 1000, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 500);
    assert_true(cli_text_duration_parse("30s", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 30000);
    assert_true(cli_text_duration_parse("5m", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 300000);
    assert_true(cli_text_duration_parse("5min", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 300000);
    assert_true(cli_text_duration_parse("1h", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 3600000);
    assert_true(cli_text_duration_parse("1.5d", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 129600000);
    assert_true(cli_text_duration_parse("0.25s", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 250);
    /* plain numbers: the option's unit */
    assert_true(cli_text_duration_parse("2000", 1, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 2000);
    assert_true(cli_text_duration_parse("2", 1000, false, UINT64_MAX / 2, &ms));
    assert_int_equal(ms, 2000);
    assert_true(cli_text_seconds_parse("0.5", false, &ms));
    assert_int_equal(ms, 500);
    assert_true(cli_text_seconds_parse("off", true, &ms));
    assert_int_equal(ms, 0);
    /* refused */
    assert_false(cli_text_duration_parse("1.5", 1, false, 1000000, &ms));   /* finer than a ms */
    assert_false(cli_text_duration_parse("1.5ms", 1000, false, 1000000, &ms));
    assert_false(cli_text_duration_parse("5x", 1, false, 1000000, &ms));
    assert_false(cli_text_duration_parse("s", 1, false, 1000000, &ms));
    assert_false(cli_text_duration_parse("-5s", 1, false, 1000000, &ms));
    assert_false(cli_text_duration_parse(" 5s", 1, false, 1000000, &ms));
    assert_false(cli_text_duration_parse("5 s", 1, false, 1000000, &ms));
    assert_false(cli_text_duration_parse("2s", 1, false, 1999, &ms));      /* above max */
    assert_false(cli_text_duration_parse("off", 1, false, 1000, &ms));
    assert_false(cli_text_duration_parse("99999999999999999999d", 1, false, UINT64_MAX, &ms));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(controls_and_invalid_utf8_are_escaped),
        cmocka_unit_test(durations_take_units),
    };
    return cmocka_run_group_tests_name("cli_text", tests, NULL, NULL);
}
