/*
 * test_auth_file.c - the auth file and the key file, read without a broker:
 * every kind of malformed line is refused with its file and line, comments
 * and blank lines are skipped, a "#" inside a key is part of the key,
 * principals are found by their key only, and a key file's text reads back
 * as `sluice keygen` wrote it; every admin command has a role, and every
 * one a monitor may send may be sent again after a lost answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "auth.h"
#include "conf.h"
#include "harness.h"
#include "sluice.h"

#define KEY_A "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
#define KEY_B "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
#define KEY_H "kn2T9K+<#AYCRA$Jw0=J2dmiUfwSTvPQjs5avRUT" /* holds a '#' */

typedef struct fx {
    char dir[64], path[96];
    conf cfg;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/sluice-authf-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/auth.txt", f->dir);
    conf_defaults(&f->cfg);
    char err[256];
    if (conf_finish(&f->cfg, err, sizeof err) != SL_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    th_rmrf(f->dir);
    free(f);
    return 0;
}

/* load writes text as the auth file and loads it. */
static int load(fx *f, const char *text, auth_table *t, char *err, size_t errlen)
{
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    err[0] = '\0';
    return auth_table_load(f->path, &f->cfg, t, err, errlen);
}

static void a_good_file_reads_every_principal(void **state)
{
    fx *f = *state;
    auth_table t;
    char err[512];
    assert_int_equal(load(f,
                          "# comment\n\n   \n"
                          "ingest producer " KEY_A " levels=low,1 tags=order.*,audit   # trailing comment\n"
                          "ops\tadmin\t" KEY_H "\n"
                          "watch monitor " KEY_B "\n",
                          &t, err, sizeof err),
                     SL_OK);
    assert_int_equal(t.n, 3);
    const auth_principal *p = auth_find(&t, KEY_A, 40);
    assert_non_null(p);
    assert_string_equal(p->name, "ingest");
    assert_int_equal(p->role, PROTO_ROLE_PRODUCER);
    assert_int_equal(p->levels_mask, (1u << 2) | (1u << 1));
    assert_int_equal(p->ntags, 2);
    assert_string_equal(p->tags[1], "audit");
    p = auth_find(&t, KEY_H, 40);
    assert_non_null(p);
    assert_string_equal(p->name, "ops");
    assert_int_equal(p->role, PROTO_ROLE_ADMIN);
    assert_int_equal(p->levels_mask, 0); /* all */
    assert_null(auth_find(&t, "ingest", 6)); /* by key only, never by name */
    assert_null(auth_find(&t, KEY_A, 39));
    auth_table_fini(&t);
}

static void each_malformed_line_is_named(void **state)
{
    fx *f = *state;
    static const struct {
        const char *text, *line, *why;
    } bad[] = {
        {"a producer\n", ":1:", "expected NAME ROLE PUBLIC-KEY"},
        {"# c\na superuser " KEY_A "\n", ":2:", "not a role"},
        {"a any " KEY_A "\n", ":1:", "not a role"},
        {"a producer short\n", ":1:", "not a public key"},
        {"a producer Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hI~\n", ":1:", "not a public key"},
        {"a producer " KEY_A "\na consumer " KEY_B "\n", ":2:", "name 'a' appears twice"},
        {"a producer " KEY_A "\nb consumer " KEY_A "\n", ":2:", "appears twice"},
        {"a producer " KEY_A " levels=urgent\n", ":1:", "'urgent' is not a level"},
        {"a producer " KEY_A " levels=3\n", ":1:", "'3' is not a level"},
        {"a producer " KEY_A " levels=low levels=high\n", ":1:", "once each"},
        {"a producer " KEY_A " colour=red\n", ":1:", "expected levels="},
        {"a producer " KEY_A " tags=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\n", ":1:", "at most 16 globs"},
        {"a producer " KEY_A " levels=\n", ":1:", "names no level"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        auth_table t = {0};
        char err[512];
        assert_int_equal(load(f, bad[i].text, &t, err, sizeof err), SL_EINVAL);
        if (!strstr(err, f->path) || !strstr(err, bad[i].line) || !strstr(err, bad[i].why))
            fail_msg("case %zu: '%s' lacks %s or '%s'", i, err, bad[i].line, bad[i].why);
        assert_null(t.v); /* untouched */
    }
}

static void a_missing_file_is_not_found(void **state)
{
    fx *f = *state;
    auth_table t = {0};
    char err[512];
    assert_int_equal(auth_table_load("/nonexistent/auth.txt", &f->cfg, &t, err, sizeof err), SL_ENOTFOUND);
    assert_non_null(strstr(err, "/nonexistent/auth.txt"));
}

static void key_files_read_back(void **state)
{
    (void)state;
    char pub[41], sec[41];
    assert_int_equal(proto_key_parse("# x\npublic = " KEY_H "\n  secret=" KEY_B "  \r\n", pub, sec), SL_OK);
    assert_string_equal(pub, KEY_H);
    assert_string_equal(sec, KEY_B);
    assert_int_equal(proto_key_parse("public = " KEY_A "\n", pub, sec), SL_OK);
    assert_string_equal(sec, ""); /* a .pub file */
    assert_int_equal(proto_key_parse("public = short\n", pub, sec), SL_EINVAL);
    assert_int_equal(proto_key_parse("private = " KEY_A "\n", pub, sec), SL_EINVAL);
    assert_int_equal(proto_key_parse("public " KEY_A "\n", pub, sec), SL_EINVAL);
    char p2[SL_KEY_BYTES], s2[SL_KEY_BYTES];
    assert_int_equal(sl_keygen(p2, s2), SL_OK);
    assert_int_equal(strlen(p2), 40);
    assert_int_equal(strlen(s2), 40);
}

static void every_command_has_a_role(void **state)
{
    (void)state;
    for (int c = 0; c < PROTO_CMD_COUNT_; c++) {
        proto_role r = proto_cmd_role((proto_cmd)c);
        /* reading or changing; web.login, any principal's link for itself, the one exception */
        assert_true(r == PROTO_ROLE_MONITOR || r == PROTO_ROLE_ADMIN || c == PROTO_CMD_web_login);
    }
    assert_int_equal(proto_cmd_role(PROTO_CMD_web_login), PROTO_ROLE_ANY);
    assert_true(proto_role_allows(PROTO_ROLE_ADMIN, PROTO_ROLE_MONITOR));
    assert_true(proto_role_allows(PROTO_ROLE_MONITOR, PROTO_ROLE_MONITOR));
    assert_true(proto_role_allows(PROTO_ROLE_PRODUCER, PROTO_ROLE_ANY));
    assert_false(proto_role_allows(PROTO_ROLE_MONITOR, PROTO_ROLE_ADMIN));
    assert_false(proto_role_allows(PROTO_ROLE_PRODUCER, PROTO_ROLE_MONITOR));
    assert_int_equal(proto_msg_role(PROTO_PUT), PROTO_ROLE_PRODUCER);
    assert_int_equal(proto_role_of("consumer", 8), PROTO_ROLE_CONSUMER);
    assert_int_equal(proto_role_of("root", 4), -1);
    assert_string_equal(proto_role_name(PROTO_ROLE_MONITOR), "monitor");
}

/* What a client may send again after a lost answer (proto_repeat.h): every
 * command a monitor may send reads, so every one may; those a second run
 * would change more may not. */
static void reading_commands_may_be_sent_again(void **state)
{
    (void)state;
    for (int c = 0; c < PROTO_CMD_COUNT_; c++)
        if (proto_cmd_role((proto_cmd)c) == PROTO_ROLE_MONITOR)
            assert_true(proto_cmd_repeatable((proto_cmd)c));
    assert_true(proto_cmd_repeatable(PROTO_CMD_level_set));
    assert_false(proto_cmd_repeatable(PROTO_CMD_msg_move));
    assert_false(proto_cmd_repeatable(PROTO_CMD_ha_switchover));
    assert_false(proto_cmd_repeatable((proto_cmd)-1));
    assert_false(proto_cmd_repeatable(PROTO_CMD_COUNT_));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_good_file_reads_every_principal, setup, teardown),
        cmocka_unit_test_setup_teardown(each_malformed_line_is_named, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_file_is_not_found, setup, teardown),
        cmocka_unit_test(key_files_read_back),
        cmocka_unit_test(every_command_has_a_role),
        cmocka_unit_test(reading_commands_may_be_sent_again),
    };
    th_seed();
    return cmocka_run_group_tests_name("auth_file", tests, NULL, NULL);
}
