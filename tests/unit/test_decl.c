/*
 * test_decl.c - settings declared in sluice.conf, read without a broker
 * (admin/decl.c, decl_text.c): each kind of section and value, the
 * canonical text of each value (what a declaration is compared with, and
 * what an export writes), every kind of bad line named with its file and
 * line, the broker's own reading of the same file (conf.c) leaving the
 * declarations to decl.c, and broker/README.md's example read. Run from the
 * repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "decl_int.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_decl_%d.conf", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static conf *config(void)
{
    static conf c;
    char err[256];
    conf_defaults(&c);
    assert_int_equal(conf_finish(&c, err, sizeof err), SL_OK);
    return &c;
}

/* read_ok reads text, which must read, into *l. */
static void read_ok(const char *text, decl_list **l)
{
    char err[512] = "";
    write_file(text);
    int rc = decl_read(config(), path, l, err, sizeof err);
    if (rc != SL_OK)
        print_error("%s\n", err);
    assert_int_equal(rc, SL_OK);
}

/* read_fails reads text, which must not, and checks the error names line
 * and holds want. */
static void read_fails(const char *text, int line, const char *want)
{
    char err[512] = "", at[96];
    decl_list *l = NULL;
    write_file(text);
    assert_int_equal(decl_read(config(), path, &l, err, sizeof err), SL_EINVAL);
    snprintf(at, sizeof at, "%s:%d: ", path, line);
    if (strncmp(err, at, strlen(at)) || !strstr(err, want))
        print_error("got \"%s\", wanted %s...%s\n", err, at, want);
    assert_int_equal(strncmp(err, at, strlen(at)), 0);
    assert_non_null(strstr(err, want));
    decl_free(&l);
}

static void text_of(const decl_obj *o, int key, const char *want)
{
    char buf[512];
    decl_value_text(o, key, buf, sizeof buf);
    if (strcmp(buf, want))
        print_error("key %s: \"%s\", wanted \"%s\"\n", decl_keys[key].name, buf, want);
    assert_string_equal(buf, want);
}

static void every_kind_of_section_and_value(void **state)
{
    (void)state;
    decl_list *l = NULL;
    read_ok("# a comment\n"
            "[broker]\n"
            "log_level = info\n"
            "[sink]\n"
            "breaker_threshold_pct = 40   ; the broker's own: conf.c's\n"
            "rate = 100:20\n"
            "max-rate = 500/min\n"
            "inflight = 8\n"
            "[level high]\n"
            "deadline = 30\n"
            "aging-step = 1.5\n"
            "max-rate = 8/10s\n"
            "max-rate = 50\n"
            "min-rate = 2.25\n"
            "fair = tag\n"
            "paused = yes\n"
            "[level 2]\n"
            "deadline = 120s\n"
            "aging-step = 90000ms\n"
            "max-rate = off\n"
            "[pool  render ]\n"
            "size = 8\n"
            "autoscale = on\n"
            "min = 2\n"
            "max = 9\n"
            "target-wait = 2.5s\n"
            "[tag \"gold-*\"]\n"
            "weight = 4\n"
            "max-rate = 5\n"
            "burst = 3\n"
            "each = yes\n"
            "[tag \"a \\\"b\\\" \\\\ c\\x01]\"]\n"
            "paused = on\n"
            "[level high]\n"
            "burst = 7\n",
            &l);
    assert_int_equal(l->n, 6);
    const decl_obj *sink = &l->v[0], *high = &l->v[1], *low = &l->v[2], *pool = &l->v[3], *gold = &l->v[4],
                   *odd = &l->v[5];
    assert_int_equal(sink->kind, DECL_SINK);
    text_of(sink, DECL_K_max_rate, "100\n500/min:500");
    text_of(sink, DECL_K_burst, "20"); /* RATE:BURST is the limit's burst */
    text_of(sink, DECL_K_inflight, "8");
    assert_true(sink->set >> DECL_K_burst & 1);
    assert_int_equal(high->kind, DECL_LEVEL);
    assert_int_equal(high->level, 0);
    text_of(high, DECL_K_deadline, "30s");
    text_of(high, DECL_K_aging, "1500ms");
    text_of(high, DECL_K_max_rate, "50\n8/10s:8"); /* the per-second window first, the others' burst their count */
    text_of(high, DECL_K_min_rate, "2.25");
    text_of(high, DECL_K_fair, "tag");
    text_of(high, DECL_K_paused, "yes");
    text_of(high, DECL_K_burst, "7"); /* a second [level high] adds to the first */
    assert_int_equal(low->level, 2);
    text_of(low, DECL_K_deadline, "2m");
    text_of(low, DECL_K_aging, "90s");
    text_of(low, DECL_K_max_rate, "off");
    assert_false(low->set >> DECL_K_fair & 1);
    assert_int_equal(pool->kind, DECL_POOL);
    assert_int_equal(pool->name_len, 6);
    assert_memory_equal(pool->name, "render", 6);
    text_of(pool, DECL_K_size, "8");
    text_of(pool, DECL_K_autoscale, "on");
    text_of(pool, DECL_K_target_wait, "2500ms");
    assert_int_equal(gold->kind, DECL_TAG);
    text_of(gold, DECL_K_weight, "4");
    text_of(gold, DECL_K_max_rate, "5");
    text_of(gold, DECL_K_burst, "3");
    text_of(gold, DECL_K_each, "yes");
    assert_int_equal(odd->name_len, 11);
    assert_memory_equal(odd->name, "a \"b\" \\ c\x01]", 11);
    assert_int_equal(odd->set, 1u << DECL_K_paused);
    char head[128];
    decl_section_text(odd, NULL, head, sizeof head);
    assert_string_equal(head, "[tag \"a \\\"b\\\" \\\\ c\\x01]\"]"); /* written back as it was read */
    decl_section_text(pool, NULL, head, sizeof head);
    assert_string_equal(head, "[pool render]");
    decl_section_text(high, "high", head, sizeof head);
    assert_string_equal(head, "[level high]");
    decl_free(&l);

    /* a pattern of 255 bytes in a header (beyond inih's lines), and no config file at all */
    char text[400] = "[tag \"";
    memset(text + 6, 'p', 255);
    strcpy(text + 261, "\"]\nweight = 2\n");
    read_ok(text, &l);
    assert_int_equal(l->v[0].name_len, 255);
    decl_free(&l);
    char err[64];
    assert_int_equal(decl_read(config(), "", &l, err, sizeof err), SL_OK);
    assert_int_equal(l->n, 0);
    decl_free(&l);
}

static void canonical_text_reads_back_the_same(void **state)
{
    (void)state;
    static const struct {
        int key;
        const char *in, *out;
    } cases[] = {
        {DECL_K_deadline, "0", "off"},       {DECL_K_deadline, "0.5", "500ms"}, {DECL_K_deadline, "60", "1m"},
        {DECL_K_deadline, "3600s", "1h"},    {DECL_K_deadline, "1.5m", "90s"},  {DECL_K_deadline, "2d", "48h"},
        {DECL_K_deadline, "250ms", "250ms"}, {DECL_K_min_rate, "0.5", "0.5"},   {DECL_K_min_rate, "off", "off"},
        {DECL_K_min_rate, "3.000", "3"},     {DECL_K_max_rate, "0.125/s", "0.125"},
        {DECL_K_max_rate, "10/min", "10/min:10"}, {DECL_K_max_rate, "500/1min:50", "500/min:50"},
        {DECL_K_max_rate, "8/10000ms", "8/10s:8"},  {DECL_K_max_rate, "1/d", "1/d:1"},
        {DECL_K_paused, "true", "yes"},      {DECL_K_paused, "off", "no"},     {DECL_K_inflight, "off", "0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char once[128], twice[128];
        decl_obj a = {.kind = cases[i].key == DECL_K_inflight ? DECL_SINK : DECL_LEVEL}, b = a;
        assert_null(decl_value_parse(&a, cases[i].key, cases[i].in));
        a.set |= 1u << cases[i].key;
        assert_null(decl_value_finish(&a));
        decl_value_text(&a, cases[i].key, once, sizeof once);
        if (strcmp(once, cases[i].out))
            print_error("%s = %s: \"%s\", wanted \"%s\"\n", decl_keys[cases[i].key].name, cases[i].in, once,
                        cases[i].out);
        assert_string_equal(once, cases[i].out);
        assert_null(decl_value_parse(&b, cases[i].key, once));
        b.set |= 1u << cases[i].key;
        assert_null(decl_value_finish(&b));
        decl_value_text(&b, cases[i].key, twice, sizeof twice);
        assert_string_equal(twice, once);
    }
}

static void bad_lines_are_named_with_file_and_line(void **state)
{
    (void)state;
    read_fails("[level high]\nfrobs = 1\n", 2, "unknown key 'frobs' in a [level] section");
    read_fails("[sink]\nbreaker_threshold_pct = 5\nweight = 2\n", 3, "unknown key 'weight' in a [sink] section");
    read_fails("[sink]\nnonsense = 1\n", 2, "unknown key 'nonsense'");
    read_fails("\n[level urgent]\n", 2, "[level urgent]: no such level");
    read_fails("[level 3]\n", 1, "no such level");
    read_fails("[level high]\ndeadline = 5x\n", 2, "deadline = 5x: a duration is off");
    read_fails("[level high]\ndeadline = 0.5ms\n", 2, "a duration is");
    read_fails("[level high]\nmax-rate = 10/fortnight\n", 2, "a window's period");
    read_fails("[level high]\nmax-rate = 10/2d\n", 2, "a window's period");
    read_fails("[level high]\nmax-rate = 10\nmax-rate = off\n", 3, "\"off\" is a limit's only window");
    read_fails("[level high]\nmax-rate = 1\nmax-rate = 1/s\nmax-rate = 1/min\nmax-rate = 1/h\nmax-rate = 1/d\n", 6,
               "at most 4 windows");
    read_fails("[level high]\ndeadline = 1\ndeadline = 2\n", 3, "'deadline' given twice");
    read_fails("[level high]\nfair = round-robin\n", 2, "fair by tag (tag) or in order (fifo)");
    read_fails("[tag \"t\"]\nweight = 0\n", 2, "a weight is a whole number from 1 to 1000");
    read_fails("[tag \"t\"]\nburst = 0\n", 2, "a burst is");
    read_fails("[tag \"t\"]\nmax-rate = 5/min\nburst = 2\n", 2, "a tag's burst needs a per-second rate");
    read_fails("[pool x]\nsize = 100001\n", 2, "up to 100000");
    read_fails("[tag \"open\n", 1, "closing quote");
    read_fails("[tag t\n", 1, "expected ]");
    read_fails("[pool ]\n", 1, "a pool name of 1 to 64 bytes");
    read_fails("[level high]\njust words\n", 2, "expected [section] or key = value");
}

static void the_broker_reading_leaves_declarations_to_decl(void **state)
{
    (void)state;
    char err[512];
    conf *c = config();
    write_file("[broker]\nlog_level = debug\n"
               "[level high]\n"
               "frobs = anything: conf.c does not read it\n"
               "[tag \"a very long pattern of more than two hundred bytes ........................................"
               "........................................................................................"
               "...........\"]\nweight = 2\n"
               "[sink]\nbreaker_threshold_pct = 40\nmax-rate = 100\n"
               "[leases]\nmax_attempts = 7\n");
    assert_int_equal(conf_load_ini(c, path, err, sizeof err), SL_OK);
    assert_int_equal(c->log_level, 3);
    assert_int_equal(c->breaker_threshold_pct, 40);
    assert_int_equal(c->max_attempts, 7);
    /* the broker's own sections still refuse what they do not know */
    write_file("[level high]\ndeadline = 1\n[broker]\nfrobs = 1\n");
    assert_int_equal(conf_load_ini(config(), path, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, ":4: unknown key 'frobs' in [broker]"));
}

/* The declarations of broker/README.md's example read, and the broker's
 * own reading of it leaves them alone. */
static void the_documented_example_reads(void **state)
{
    (void)state;
    FILE *f = fopen("broker/README.md", "r"), *out = NULL;
    assert_non_null(f);
    char line[1024], err[512];
    int seen = 0;
    while (fgets(line, sizeof line, f)) {
        if (out && !strncmp(line, "```", 3))
            break;
        if (out)
            fputs(line, out);
        else if (strstr(line, "**Settings declared in the file.**"))
            seen = 1;
        else if (seen && !strncmp(line, "```ini", 6))
            out = fopen(path, "w");
    }
    fclose(f);
    assert_non_null(out);
    fclose(out);
    decl_list *l = NULL;
    int rc = decl_read(config(), path, &l, err, sizeof err);
    if (rc != SL_OK)
        print_error("%s\n", err);
    assert_int_equal(rc, SL_OK);
    assert_true(l->n >= 5);
    text_of(&l->v[0], DECL_K_max_rate, "100\n5000/min:5000");
    decl_free(&l);
    assert_int_equal(conf_load_ini(config(), path, err, sizeof err), SL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_kind_of_section_and_value, setup, teardown),
        cmocka_unit_test_setup_teardown(canonical_text_reads_back_the_same, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_lines_are_named_with_file_and_line, setup, teardown),
        cmocka_unit_test_setup_teardown(the_broker_reading_leaves_declarations_to_decl, setup, teardown),
        cmocka_unit_test_setup_teardown(the_documented_example_reads, setup, teardown),
    };
    return cmocka_run_group_tests_name("decl", tests, NULL, NULL);
}
