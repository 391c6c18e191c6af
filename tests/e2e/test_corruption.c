/*
 * test_corruption.c - damage on disk, against the real sluiced: a damaged
 * meta page is named as corruption, with what to do, and the broker does
 * not start; records corrupted at the head, the middle and the tail of
 * every level are set aside (left in place, stepped over, a copy among
 * their level's dead letters with reason "corrupt"), logged once each, and
 * everything else is delivered, and a restart sets nothing aside twice; a
 * level whose tree is damaged is quarantined (counted in stats, level list
 * and explain, publishes to it refused, the other levels served, no restart
 * loop), and `sluice salvage` brings its messages back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "store_pages.h"

/* count_lines counts the lines of the broker's log that hold what. */
static unsigned count_lines(const th_broker *b, const char *what)
{
    static char text[1 << 20];
    th_read_file(b->log, text, sizeof text);
    unsigned n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* A damaged meta page is named as corruption, with what to do, and the
 * broker does not start (it said "MDB_VERSION_MISMATCH"). */
static void corrupt_meta_pages_are_named_as_corruption(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    assert_int_equal(th_broker_start(&b), 0);
    assert_int_equal(th_broker_stop(&b), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/data.mdb", b.data);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    long page = sysconf(_SC_PAGESIZE);
    static const unsigned char junk[4] = {0x5a, 0x5a, 0x5a, 0x5a};
    for (int meta = 0; meta < 2; meta++) /* mm_version of both meta pages */
        assert_int_equal(pwrite(fd, junk, sizeof junk, meta * page + 20), (ssize_t)sizeof junk);
    assert_int_equal(close(fd), 0);
    assert_int_equal(th_broker_start(&b), -1);
    assert_true(count_lines(&b, "is corrupt: its meta pages fail") == 1);
    th_broker_fini(&b);
}

/* flip_all changes the last byte of every copy of pattern in the file at
 * path (LMDB may keep old copies in freed pages). Returns how many. */
static int flip_all(const char *path, const char *pattern)
{
    static char data[64 << 20];
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    ssize_t n = pread(fd, data, sizeof data, 0);
    assert_true(n > 0);
    size_t len = strlen(pattern);
    int flips = 0;
    for (char *p = data; (p = memmem(p, (size_t)(data + n - p), pattern, len)); p += len) {
        char c = (char)(p[len - 1] ^ 0x20);
        assert_int_equal(pwrite(fd, &c, 1, (off_t)(p - data) + (off_t)len - 1), 1);
        flips++;
    }
    assert_int_equal(close(fd), 0);
    return flips;
}

/* Records corrupted on disk at several positions of every level (the head,
 * the middle, the tail) are set aside, a copy each among their level's dead
 * letters with reason "corrupt", logged once each, and everything else is
 * delivered, on every level; after a restart nothing is set aside twice. Before, the first bad record stopped its level for good, and
 * through strict priority the pick kept choosing it. */
static void corrupt_records_are_set_aside_and_delivery_goes_on(void **state)
{
    (void)state;
    enum { PER_LEVEL = 50 };
    static const struct { unsigned level, pos; } bad[] = {{0, 0}, {0, 17}, {0, 49}, {1, 5}, {2, 0}, {2, 25}};
    const unsigned nbad = sizeof bad / sizeof bad[0];
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    for (unsigned l = 0; l < 3; l++)
        for (unsigned i = 0; i < PER_LEVEL; i++) {
            char body[64];
            int corrupt = 0;
            for (unsigned k = 0; k < nbad; k++)
                corrupt |= bad[k].level == l && bad[k].pos == i;
            int len = snprintf(body, sizeof body, corrupt ? "CORRUPT-ME-%u-%u-padding" : "ok-%u-%u", l, i);
            sl_put m = {.body = body, .body_len = (size_t)len, .level = (int)l};
            assert_int_equal(sl_send(f->c, &m, NULL), SL_OK);
        }
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/data.mdb", f->b.data);
    for (unsigned k = 0; k < nbad; k++) {
        char pattern[64];
        snprintf(pattern, sizeof pattern, "CORRUPT-ME-%u-%u-padding", bad[k].level, bad[k].pos);
        assert_true(flip_all(path, pattern) >= 1);
    }
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 10), SL_OK);
    unsigned got = 0, want = 3 * PER_LEVEL - nbad;
    uint64_t deadline = th_now_ms() + 20000;
    while (got < want && th_now_ms() < deadline) {
        sl_delivery *d = NULL;
        if (sl_recv(f->c, 500, &d) != SL_OK)
            continue;
        if (strncmp(d->body, "ok-", 3) != 0)
            fail_msg("delivered a record that should have failed its check: %.40s", d->body);
        assert_int_equal(sl_ack(f->c, d), SL_OK);
        sl_delivery_free(&d);
        got++;
    }
    assert_int_equal(got, want);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].dead, 3);
    assert_int_equal(st.level[1].dead, 1);
    assert_int_equal(st.level[2].dead, 2);
    assert_int_equal(st.level[0].corrupt, 3);
    assert_int_equal(st.level[1].corrupt, 1);
    assert_int_equal(st.level[2].corrupt, 2);
    for (unsigned l = 0; l < 3; l++)
        assert_int_equal(st.level[l].depth, 0);
    assert_int_equal(count_lines(&f->b, "failed its checksum; left in place and skipped"), nbad);
    /* the dead letters say why */
    char out[8192];
    const char *list[] = {th_bin("sluice"), "-b", f->b.endpoint, "dead", "list", "high", "--json", NULL};
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "corrupt: stored record failed its checksum"));
    /* a restart sets nothing aside twice: the same dead letters, nothing to deliver */
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].dead + st.level[1].dead + st.level[2].dead, nbad);
    for (unsigned l = 0; l < 3; l++)
        assert_int_equal(st.level[l].depth, 0);
    assert_int_equal(count_lines(&f->b, "failed its checksum; left in place and skipped"), nbad);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* ---- a damaged tree ---- */

typedef struct find {
    const char *name;
    pg_db db;
} find;

static int find_tree(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    find *x = ctx;
    (void)vlen;
    if (klen == strlen(x->name) && memcmp(key, x->name, klen) == 0)
        pg_db_decode(val, &x->db);
    return 0;
}

/* damage_root gives the root page of tree name of dir's data file bounds
 * that cannot be, as a flipped header byte would. */
static void damage_root(const char *dir, const char *name)
{
    char path[400], why[300];
    pg_file pf;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    assert_int_equal(pg_open(&pf, path, why, sizeof why), 0);
    find x = {.name = name, .db = {.root = PG_INVALID}};
    pg_tree t = {.name = "main", .db = pf.main_db, .subdata = 1};
    assert_int_equal(pg_walk(&pf, &t, find_tree, &x, why, sizeof why), 0);
    uint64_t at = x.db.root * pf.psize + 14;
    pg_close(&pf);
    assert_true(x.db.root != PG_INVALID);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    static const unsigned char upper[2] = {0xff, 0xff};
    assert_int_equal(pwrite(fd, upper, 2, (off_t)at), 2);
    assert_int_equal(close(fd), 0);
}

/* drain consumes and acknowledges up to want messages (5 s at most after
 * the last), checking each body starts with prefix; returns how many. */
static unsigned drain(sl_client *c, unsigned want, const char *prefix)
{
    unsigned got = 0;
    uint64_t deadline = th_now_ms() + 20000;
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 20), SL_OK);
    while (got < want && th_now_ms() < deadline) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 500, &d) != SL_OK)
            continue;
        if (prefix && strncmp(d->body, prefix, strlen(prefix)) != 0)
            fail_msg("delivered %.20s, which should not have been", d->body);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        got++;
    }
    /* every ACK answered, so applied, before the caller stops the broker:
     * ACKs still on their way at a stop are refused, and their messages
     * (at least once) come back, which the salvage below would count */
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    return got;
}

/* A level whose queue tree is damaged on disk is quarantined at start: the
 * broker starts, logs it once, says it in `stats --json` ("quarantined": its
 * 40 messages, the level's "state"), in `level list` and in `explain` of one
 * of its messages; refuses publishes to it (SL_ECORRUPT); serves the other
 * levels; starts again the same way (no restart loop). `sluice salvage`
 * then rebuilds a store in which all 40 come back. Before, such damage
 * failed every start (MDB_PAGE_NOTFOUND, exit 1) or crashed inside LMDB. */
static void a_damaged_tree_quarantines_its_level_and_salvage_brings_it_back(void **state)
{
    (void)state;
    enum { PER_LEVEL = 40 };
    th_fixture *f = NULL;
    uint64_t ids[3][PER_LEVEL];
    char out[16384], newdir[400];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    for (unsigned l = 0; l < 3; l++)
        for (unsigned i = 0; i < PER_LEVEL; i++) {
            char body[32];
            int len = snprintf(body, sizeof body, "L%u-%u", l, i);
            sl_put m = {.body = body, .body_len = (size_t)len, .level = (int)l};
            assert_int_equal(sl_send(f->c, &m, &ids[l][i]), SL_OK);
        }
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    damage_root(f->b.data, "q.1");

    for (int start = 0; start < 2; start++) {
        assert_int_equal(th_broker_start(&f->b), 0);
        f->c = th_client(&f->b, 5000);
        const char *stats[] = {th_bin("sluice"), "-b", f->b.endpoint, "stats", "--json", NULL};
        assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
        assert_non_null(strstr(out, "\"quarantined\":40,\"levels\""));
        assert_non_null(strstr(out, "\"state\":\"quarantined\",\"quarantined\":40}"));
        const char *levels[] = {th_bin("sluice"), "-b", f->b.endpoint, "level", "list", "--json", NULL};
        assert_int_equal(th_run(levels, NULL, out, sizeof out), 0);
        assert_non_null(strstr(out, "\"state\":\"quarantined\""));
        sl_explain_info ex;
        assert_int_equal(sl_explain(f->c, ids[1][3], &ex), SL_OK);
        assert_string_equal(ex.state, "quarantined");
        sl_put m = {.body = "refused", .body_len = 7, .level = 1};
        assert_int_equal(sl_send(f->c, &m, NULL), SL_ECORRUPT);
        if (start == 0) /* levels 0 and 2 are served */
            assert_int_equal(drain(f->c, 2 * PER_LEVEL, NULL), 2 * PER_LEVEL);
        sl_close(&f->c);
        assert_int_equal(th_broker_stop(&f->b), 0);
        assert_int_equal(count_lines(&f->b, "level 1 is quarantined"), (unsigned)start + 1);
    }

    snprintf(newdir, sizeof newdir, "%s/salvaged", f->b.dir);
    const char *salvage[] = {th_bin("sluice"), "salvage", "--data", f->b.data, "--to", newdir, NULL};
    assert_int_equal(th_run(salvage, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "salvaged"));
    strcpy(f->b.data, newdir);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, PER_LEVEL);
    assert_int_equal(st.level[0].depth + st.level[2].depth, 0);
    assert_int_equal(drain(f->c, PER_LEVEL, "L1-"), PER_LEVEL);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* `sluice salvage` without both directories is a usage error (exit 2). */
static void salvage_needs_both_directories(void **state)
{
    (void)state;
    char out[4096];
    const char *none[] = {th_bin("sluice"), "salvage", "--data", "/nonexistent", NULL};
    assert_int_equal(th_run(none, NULL, out, sizeof out), 2);
    const char *missing[] = {th_bin("sluice"), "salvage", "--data", "/nonexistent/x", "--to", "/nonexistent/y", NULL};
    assert_int_equal(th_run(missing, NULL, out, sizeof out), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(corrupt_meta_pages_are_named_as_corruption, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(corrupt_records_are_set_aside_and_delivery_goes_on, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_damaged_tree_quarantines_its_level_and_salvage_brings_it_back,
                                        th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(salvage_needs_both_directories, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("corruption", tests, NULL, NULL);
}
