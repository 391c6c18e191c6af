/*
 * test_conf.c - sluiced's settings: the defaults, an INI file, the command
 * line beating the file, bounds errors (the message; the real binary's exit
 * status is tests/e2e/test_cli.c's), unknown options and keys, tag rules,
 * level names, --help; and the example INI file of broker/README.md loaded
 * (the options themselves are checked against their man page by
 * tests/e2e/test_install.c).
 *
 * Deterministic: no random input, no seed. Each test writes its INI files in
 * its own temporary directory. Run from the repository root (README.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"
#include "harness.h"
#include "log.h"

static char err[1024];
static char dir[64];

static int setup(void **state)
{
    conf *c = calloc(1, sizeof *c);
    conf_defaults(c);
    *state = c;
    err[0] = '\0';
    snprintf(dir, sizeof dir, "/tmp/sluice-conf-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    free(*state);
    th_rmrf(dir);
    return 0;
}

/* ini writes text to dir/name and returns the path (static buffer). */
static const char *ini(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* args parses a NULL-terminated command line (without the program name). */
static int args(conf *c, ...)
{
    char *argv[32] = {"sluiced"};
    int argc = 1;
    va_list ap;
    va_start(ap, c);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    return conf_parse_args(c, argc, argv, err, sizeof err);
}

static void defaults_are_the_documented_ones(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, NULL), SL_OK);
    assert_string_equal(c->data_dir, "./sluice-data");
    assert_string_equal(c->listen, "tcp://127.0.0.1:7470");
    assert_int_equal(c->levels, 3);
    assert_string_equal(c->level_names[0], "high");
    assert_string_equal(c->level_names[2], "low");
    assert_int_equal(c->default_level, 1);
    assert_int_equal(c->lease_ms, 30000);
    assert_int_equal(c->max_attempts, 5);
    assert_int_equal(c->heartbeat_ms, 1000);
    assert_int_equal(c->ack_flush_ms, 10);
    assert_true(c->map_bytes == 8ULL << 30);
    assert_true(c->map_max_bytes == 32ULL << 30); /* 4 x the map */
    assert_int_equal(c->max_body, 1u << 20);
    assert_int_equal(c->soft_limit_pct, 90);
    assert_int_equal(c->overdue_share_pct, 50);
    assert_int_equal(c->breaker_threshold_pct, 50);
    assert_int_equal(c->breaker_window, 20);
    assert_int_equal(c->breaker_cooldown_ms, 5000);
    assert_int_equal(c->throttle_backoff_ms, 1000);
    assert_true(c->idem_window_ms == 300000);
    assert_int_equal(c->consumer_max_inflight, 10000);
    assert_true(c->level_max_messages == 0 && c->level_max_bytes == 0);
    assert_int_equal(c->ntag_rules, 0);
    assert_int_equal(c->tag_rules_override, 0);
    assert_int_equal(c->log_level, LOG_INFO);
    assert_int_equal(c->ready_fd, -1);
    assert_int_equal(c->action, CONF_RUN);
}

static void ini_file_sets_every_kind_of_setting(void **state)
{
    conf *c = *state;
    const char *path = ini("a.ini", "; a comment\n"
                                    "[broker]\ndata = /srv/q\nlog_level = debug\nmap_size_mb = 64\n"
                                    "[levels]\ncount = 4\nnames = now,soon,later,whenever\ndefault = later\n"
                                    "tag_rules_override = yes\n"
                                    "[leases]\nlease_ms = 1500\n"
                                    "[sink]\nbreaker_threshold_pct = 0\n"
                                    "[tag_rules]\nrule = paying-* now\nrule = batch:* 3\n");
    assert_int_equal(conf_load_ini(c, path, err, sizeof err), SL_OK);
    assert_int_equal(conf_finish(c, err, sizeof err), SL_OK);
    assert_string_equal(c->data_dir, "/srv/q");
    assert_int_equal(c->log_level, LOG_DEBUG);
    assert_true(c->map_bytes == 64ULL << 20);
    assert_true(c->map_max_bytes == 256ULL << 20);
    assert_int_equal(c->levels, 4);
    assert_string_equal(c->level_names[3], "whenever");
    assert_int_equal(c->default_level, 2);
    assert_int_equal(c->tag_rules_override, 1);
    assert_int_equal(c->lease_ms, 1500);
    assert_int_equal(c->breaker_threshold_pct, 0);
    assert_int_equal(c->ntag_rules, 2);
    assert_string_equal(c->tag_rules[0].pattern, "paying-*");
    assert_int_equal(c->tag_rules[0].level, 0);
    assert_string_equal(c->tag_rules[1].pattern, "batch:*");
    assert_int_equal(c->tag_rules[1].level, 3);
}

static void command_line_beats_the_ini_file(void **state)
{
    conf *c = *state;
    const char *path = ini("b.ini", "[leases]\nlease_ms = 1500\nmax_attempts = 9\n"
                                    "[tag_rules]\nrule = a* low\n");
    /* the option comes before --config on the line and still wins */
    assert_int_equal(args(c, "--lease-ms", "700", "-c", (char *)path, "--tag-rule", "b*=0", NULL), SL_OK);
    assert_int_equal(c->lease_ms, 700);
    assert_int_equal(c->max_attempts, 9);
    assert_int_equal(c->ntag_rules, 2); /* the file's rules first, then the command line's */
    assert_string_equal(c->tag_rules[0].pattern, "a*");
    assert_int_equal(c->tag_rules[0].level, 2);
    assert_string_equal(c->tag_rules[1].pattern, "b*");
    assert_int_equal(c->tag_rules[1].level, 0);
}

static void bounds_errors_name_the_setting(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--lease-ms", "99", NULL), SL_EINVAL);
    assert_string_equal(err, "--lease-ms: '99' is not a number from 100 to 86400000");
    assert_int_equal(args(c, "--levels", "17", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "--levels: '17'"));
    assert_int_equal(args(c, "--max-body", "-1", NULL), SL_EINVAL);
    assert_int_equal(args(c, "--heartbeat-ms", "1e3", NULL), SL_EINVAL);
    assert_int_equal(args(c, "--map-size-mb", "", NULL), SL_EINVAL);
    const char *path = ini("c.ini", "[broker]\nlisten = tcp://127.0.0.1:0\n\n[leases]\nheartbeat_ms = 70000\n");
    assert_int_equal(conf_load_ini(c, path, err, sizeof err), SL_EINVAL);
    char want[256];
    snprintf(want, sizeof want, "%s:5: heartbeat_ms: '70000' is not a number from 100 to 60000", path);
    assert_string_equal(err, want);
}

/* A node of a group records where it is reached: by default what it binds;
 * a wildcard bind needs the address given, which is then what is recorded. */
static void a_group_node_advertises_where_it_is_reached(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--ha", "redis://127.0.0.1:6379", "--ha-group", "g", "--ha-node", "n1",
                          "--repl-listen", "tcp://127.0.0.1:7481", NULL), SL_OK);
    assert_string_equal(c->advertise, "tcp://127.0.0.1:7470");
    assert_string_equal(c->repl_advertise, "tcp://127.0.0.1:7481");

    conf_defaults(c);
    assert_int_equal(args(c, "--ha", "redis://127.0.0.1:6379", "--ha-group", "g", "--ha-node", "n1", "--listen",
                          "tcp://127.0.0.1:7471", "--repl-listen", "tcp://0.0.0.0:7481", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "--repl-listen tcp://0.0.0.0:7481 binds every address"));
    assert_non_null(strstr(err, "give --repl-advertise"));
    conf_defaults(c);
    assert_int_equal(args(c, "--ha", "redis://127.0.0.1:6379", "--ha-group", "g", "--ha-node", "n1", "--listen",
                          "tcp://127.0.0.1:7471", "--repl-listen", "tcp://0.0.0.0:7481", "--repl-advertise",
                          "tcp://[::]:7481", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "--repl-advertise tcp://[::]:7481 binds every address"));
    conf_defaults(c);
    assert_int_equal(args(c, "--ha", "redis://127.0.0.1:6379", "--ha-group", "g", "--ha-node", "n1", "--listen",
                          "tcp://127.0.0.1:7471", "--repl-listen", "tcp://0.0.0.0:7481", "--repl-advertise",
                          "tcp://10.0.0.1:7481", NULL), SL_OK);
    assert_string_equal(c->repl_advertise, "tcp://10.0.0.1:7481");
    assert_string_equal(c->advertise, "tcp://127.0.0.1:7471");

    conf_defaults(c);
    assert_int_equal(args(c, "--ha", "redis://127.0.0.1:6379", "--ha-group", "g", "--ha-node", "n1", "--listen",
                          "tcp://*:7471", "--insecure", "--repl-listen", "ipc:///tmp/r.sock", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "--listen tcp://*:7471 binds every address"));
    assert_non_null(strstr(err, "give --advertise"));
}

static void a_stream_endpoint_carries_no_curve(void **state)
{
    conf *c = *state;
    conf_defaults(c);
    assert_int_equal(args(c, "--stream-listen", "ipc:///tmp/x.sock", "--auth", "/nonexistent/auth", "--curve-secret",
                          "/nonexistent/key", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "carries no CURVE, so it cannot serve a broker with --auth"));
    conf_defaults(c);
    assert_int_equal(args(c, "--stream-listen", "tcp://0.0.0.0:7499", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "is reachable from other machines, and it carries no CURVE"));
    conf_defaults(c);
    assert_int_equal(args(c, "--stream-listen", "tcp://0.0.0.0:7499", "--insecure", NULL), SL_OK);
    conf_defaults(c);
    assert_int_equal(args(c, "--stream-listen", "tcp://127.0.0.1:7499", NULL), SL_OK);
    assert_string_equal(c->stream_listen, "tcp://127.0.0.1:7499");
}

static void the_log_is_written_direct_unless_buffered(void **state)
{
    conf *c = *state;
    conf_defaults(c);
    assert_int_equal(args(c, NULL), SL_OK);
    assert_int_equal(c->wal_buffered, 0); /* O_DIRECT | O_DSYNC by default */
    conf_defaults(c);
    assert_int_equal(args(c, "--wal-buffered", NULL), SL_OK);
    assert_int_equal(c->wal_buffered, 1);
}

static void unknown_options_and_keys_are_refused(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--frobs", "3", NULL), SL_EINVAL);
    assert_string_equal(err, "unknown option '--frobs'; try sluiced --help");
    assert_int_equal(args(c, "--lease-ms", NULL), SL_EINVAL);
    assert_string_equal(err, "option '--lease-ms' needs a value; try sluiced --help");
    assert_int_equal(args(c, "--tag-rules-override=yes", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "takes no value"));
    assert_int_equal(args(c, "stray", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "unexpected argument 'stray'"));
    const char *key = ini("k.ini", "[broker]\nlisten = tcp://127.0.0.1:0\nfrobs = 3\n");
    assert_int_equal(conf_load_ini(c, key, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, ".ini:3: unknown key 'frobs' in [broker]"));
    const char *sect = ini("s.ini", "[brokers]\nlisten = tcp://127.0.0.1:0\n");
    assert_int_equal(conf_load_ini(c, sect, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, ".ini:2: unknown section [brokers]"));
    const char *cli_only = ini("o.ini", "[broker]\nready_fd = 3\n");
    assert_int_equal(conf_load_ini(c, cli_only, err, sizeof err), SL_EINVAL);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none.ini", dir);
    assert_int_equal(args(c, "--config", missing, NULL), SL_EINVAL);
    assert_non_null(strstr(err, "cannot read config file"));
}

static void tag_rules_take_names_or_numbers(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--tag-rule", "pay=ing-*=high", "--tag-rule", "*=2", "--tag-rules-override", NULL),
                     SL_OK);
    assert_int_equal(c->ntag_rules, 2);
    assert_string_equal(c->tag_rules[0].pattern, "pay=ing-*"); /* split at the last '=' */
    assert_int_equal(c->tag_rules[0].level, 0);
    assert_int_equal(c->tag_rules[1].level, 2);
    assert_int_equal(c->tag_rules_override, 1);
    conf_defaults(c);
    assert_int_equal(args(c, "--tag-rule", "x*", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "expected GLOB=LEVEL"));
    conf_defaults(c);
    assert_int_equal(args(c, "--tag-rule", "x*=urgent", NULL), SL_EINVAL);
    assert_string_equal(err, "tag rule 'x*': 'urgent' is not a level name or a number from 0 to 2");
    conf_defaults(c);
    assert_int_equal(args(c, "--tag-rule", "=low", NULL), SL_EINVAL);
    conf_defaults(c);
    for (int i = 0; i < CONF_MAX_TAG_RULES; i++)
        assert_int_equal(args(c, "--tag-rule", "t=low", NULL), SL_OK);
    assert_int_equal(args(c, "--tag-rule", "t=low", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "more than 64 tag rules"));
}

static void level_names_and_the_default_level(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--levels", "5", NULL), SL_OK);
    assert_string_equal(c->level_names[0], "p0");
    assert_string_equal(c->level_names[4], "p4");
    assert_int_equal(c->default_level, 2); /* the middle */
    conf_defaults(c);
    assert_int_equal(args(c, "--levels", "2", "--level-names", "fast,slow", "--default-level", "slow", NULL),
                     SL_OK);
    assert_string_equal(c->level_names[1], "slow");
    assert_int_equal(c->default_level, 1);
    conf_defaults(c);
    assert_int_equal(args(c, "--default-level", "0", NULL), SL_OK);
    assert_int_equal(c->default_level, 0);
    conf_defaults(c);
    assert_int_equal(args(c, "--levels", "2", "--level-names", "a,b,c", NULL), SL_EINVAL);
    assert_string_equal(err, "level names: 3 names given for 2 levels (--levels)");
    conf_defaults(c);
    assert_int_equal(args(c, "--level-names", "a,b,a", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "'a' appears twice"));
    conf_defaults(c);
    assert_int_equal(args(c, "--level-names", "a,7,c", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "not all digits"));
    conf_defaults(c);
    assert_int_equal(args(c, "--default-level", "3", NULL), SL_EINVAL);
    assert_non_null(strstr(err, "default level: '3'"));
    conf_defaults(c);
    assert_int_equal(args(c, "--log-level", "loud", NULL), SL_EINVAL);
    assert_string_equal(err, "--log-level: 'loud' is not error, warn, info or debug");
    assert_int_equal(args(c, "--log-level", "warn", NULL), SL_OK);
    assert_int_equal(c->log_level, LOG_WARN);
}

static void map_sizes_are_megabytes_stored_as_bytes(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--map-size-mb", "16", "--map-max-mb", "8", NULL), SL_OK);
    assert_true(c->map_bytes == 16ULL << 20);
    assert_true(c->map_max_bytes == 16ULL << 20); /* never below the map */
    conf_defaults(c);
    assert_int_equal(args(c, "--map-max-mb", "100000", NULL), SL_OK);
    assert_true(c->map_max_bytes == 100000ULL << 20);
}

static void help_and_version_only_set_the_action(void **state)
{
    conf *c = *state;
    assert_int_equal(args(c, "--lease-ms", "1", "--help", NULL), SL_OK); /* help wins over a bad value */
    assert_int_equal(c->action, CONF_HELP);
    conf_defaults(c);
    assert_int_equal(args(c, "--version", NULL), SL_OK);
    assert_int_equal(c->action, CONF_VERSION);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    conf_usage(f);
    fclose(f);
    for (size_t i = 0; i < conf_setting_count(); i++) {
        char opt[80];
        snprintf(opt, sizeof opt, "--%s", conf_setting_at(i)->long_opt);
        assert_non_null(strstr(text, opt));
    }
    assert_non_null(strstr(text, "Priority levels [levels]:"));
    assert_non_null(strstr(text, "100..86400000]")); /* lease-ms: bounds shown */
    assert_non_null(strstr(text, "Examples:"));
    for (char *line = text; *line;) { /* fits a terminal */
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        if (nl - line > 88)
            fail_msg("--help line too long: %.*s", (int)(nl - line), line);
        line = nl + 1;
    }
    free(text);
}

/* The example INI file of broker/README.md is one sluiced accepts. */
static void the_documented_example_ini_file_loads(void **state)
{
    conf *c = *state;
    FILE *f = fopen("broker/README.md", "r"), *out = NULL;
    assert_non_null(f);
    char line[1024], path[128];
    snprintf(path, sizeof path, "%s/example.ini", dir);
    while (fgets(line, sizeof line, f)) {
        if (out && !strncmp(line, "```", 3))
            break;
        if (out)
            fputs(line, out);
        else if (!strncmp(line, "```ini", 6))
            out = fopen(path, "w");
    }
    fclose(f);
    assert_non_null(out);
    fclose(out);
    assert_int_equal(conf_load_ini(c, path, err, sizeof err), SL_OK);
    assert_int_equal(conf_finish(c, err, sizeof err), SL_OK);
    assert_string_equal(c->listen, "tcp://0.0.0.0:7470");
    assert_int_equal(c->ntag_rules, 2);
}

int main(void)
{
    alarm(120);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(defaults_are_the_documented_ones, setup, teardown),
        cmocka_unit_test_setup_teardown(ini_file_sets_every_kind_of_setting, setup, teardown),
        cmocka_unit_test_setup_teardown(command_line_beats_the_ini_file, setup, teardown),
        cmocka_unit_test_setup_teardown(bounds_errors_name_the_setting, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_options_and_keys_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(tag_rules_take_names_or_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(level_names_and_the_default_level, setup, teardown),
        cmocka_unit_test_setup_teardown(map_sizes_are_megabytes_stored_as_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(a_group_node_advertises_where_it_is_reached, setup, teardown),
        cmocka_unit_test_setup_teardown(a_stream_endpoint_carries_no_curve, setup, teardown),
        cmocka_unit_test_setup_teardown(the_log_is_written_direct_unless_buffered, setup, teardown),
        cmocka_unit_test_setup_teardown(help_and_version_only_set_the_action, setup, teardown),
        cmocka_unit_test_setup_teardown(the_documented_example_ini_file_loads, setup, teardown),
    };
    return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
