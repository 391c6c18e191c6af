/*
 * test_cli_safe.c - what clients wrote reaches an operator's terminal as
 * text, never as control: a tag, a pool name and a reject reason holding an
 * escape sequence, a bell, a newline that would forge a table row and a byte
 * of invalid UTF-8 are shown escaped (\e, \x07, \n, \xff) by `tag list`,
 * `explain`, `pool list` and `dead list`, and by consume --verbose (the
 * wire carries names as UTF-8: invalid bytes come in bodies, shown by dead
 * list as \xHH); valid UTF-8 passes as it is; the --json forms stay valid JSON with the exact
 * text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sluice_admin.h"

#define EVIL      "ev\033[31mil\a\nFORGED 9 9 9 caf\xc3\xa9"
#define EVIL_SHOW "ev\\e[31mil\\x07\\nFORGED 9 9 9 caf\xc3\xa9"
#define POOL      "p\033[2J\rq"
#define POOL_SHOW "p\\e[2J\\rq"
#define REASON    "bad\033[H\nrow \xc2\x9b" /* U+009B: a C1 control, CSI to some terminals */

static char out[1 << 16];

/* clean checks that text holds no control byte but newlines, no ESC, BEL
 * or C1 control, and no line starting with the forged row. */
static void clean(const char *text, const char *what)
{
    for (const char *p = text; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if ((ch < 0x20 && ch != '\n') || ch == 0x7f)
            fail_msg("%s: a raw control byte 0x%02x in: %s", what, ch, text);
        if (ch == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] < 0xa0)
            fail_msg("%s: a raw C1 control in: %s", what, text);
        if (ch == 0xff)
            fail_msg("%s: a raw invalid byte in: %s", what, text);
    }
    if (strstr(text, "\nFORGED"))
        fail_msg("%s: a forged row: %s", what, text);
}

static void clients_text_is_shown_escaped(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    const char *ep = f->b.endpoint;
    const char *fair[] = {th_bin("sluice"), "-b", ep, "level", "set", "low", "--fair", "tag", NULL};
    assert_int_equal(th_run(fair, NULL, out, sizeof out), 0);

    /* a waiting message of the tag, its tag paused: tag list and explain */
    uint64_t id = 0;
    sl_put m = {.body = "x", .body_len = 1, .level = 2, .tag = EVIL};
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    assert_int_equal(sl_tag_pause(f->c, EVIL, 1), SL_OK);
    const char *tags[] = {th_bin("sluice"), "-b", ep, "tag", "list", NULL};
    assert_int_equal(th_run(tags, NULL, out, sizeof out), 0);
    clean(out, "tag list");
    if (!strstr(out, EVIL_SHOW))
        fail_msg("tag list does not show the tag escaped: %s", out);
    const char *tags_json[] = {th_bin("sluice"), "-b", ep, "tag", "list", "--json", NULL};
    assert_int_equal(th_run(tags_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\\u001b[31mil\\u0007\\u000aFORGED")); /* JSON, exact */
    char idt[32];
    snprintf(idt, sizeof idt, "%" PRIu64, id);
    const char *explain[] = {th_bin("sluice"), "-b", ep, "explain", idt, NULL};
    assert_int_equal(th_run(explain, NULL, out, sizeof out), 0);
    clean(out, "explain");
    if (!strstr(out, EVIL_SHOW))
        fail_msg("explain does not name the tag escaped: %s", out);

    /* a pool named by a consumer: pool list */
    sl_client *k = NULL;
    assert_int_equal(sl_connect(ep, NULL, &k), SL_OK);
    unsigned normal = 1;
    assert_int_equal(sl_subscribe(k, POOL, &normal, 1, 1), SL_OK);
    const char *pools[] = {th_bin("sluice"), "-b", ep, "pool", "list", NULL};
    assert_int_equal(th_run(pools, NULL, out, sizeof out), 0);
    clean(out, "pool list");
    if (!strstr(out, POOL_SHOW))
        fail_msg("pool list does not show the pool escaped: %s", out);

    /* a dead letter rejected with such a reason, its body and tag too */
    sl_put d = {.body = "body\033]0;title\a\xff", .body_len = 16, .level = 1, .tag = EVIL};
    assert_int_equal(sl_send(f->c, &d, NULL), SL_OK);
    sl_delivery *got = NULL;
    assert_int_equal(sl_recv(k, 5000, &got), SL_OK);
    assert_int_equal(sl_reject(k, got, REASON), SL_OK);
    sl_delivery_free(&got);
    const char *dead[] = {th_bin("sluice"), "-b", ep, "dead", "list", "normal", NULL};
    uint64_t t0 = th_now_ms();
    do /* the rejection is settled asynchronously: until the row shows */
        assert_int_equal(th_run(dead, NULL, out, sizeof out), 0);
    while (!strstr(out, "bad") && th_now_ms() - t0 < 5000);
    clean(out, "dead list");
    if (!strstr(out, EVIL_SHOW) || !strstr(out, "bad\\e[H\\nrow \\xc2\\x9b") || !strstr(out, "body\\e]0;title\\x07"))
        fail_msg("dead list does not show tag, reason and body escaped: %s", out);
    const char *dead_json[] = {th_bin("sluice"), "-b", ep, "dead", "list", "normal", "--json", NULL};
    assert_int_equal(th_run(dead_json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "bad\\u001b[H\\u000arow"));
    sl_close(&k);

    /* consume --verbose: the tag escaped, the body byte for byte */
    sl_put v = {.body = "plain", .body_len = 5, .level = 0, .tag = EVIL};
    assert_int_equal(sl_send(f->c, &v, NULL), SL_OK);
    const char *consume[] = {th_bin("sluice"), "-b", ep, "consume", "-p", "high", "-n", "1", "-v", NULL};
    assert_int_equal(th_run(consume, NULL, out, sizeof out), 0);
    clean(out, "consume -v");
    assert_non_null(strstr(out, "tag=" EVIL_SHOW " attempt=1 plain\n"));
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clients_text_is_shown_escaped),
    };
    return cmocka_run_group_tests_name("cli_safe", tests, NULL, NULL);
}
