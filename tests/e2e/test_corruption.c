/*
 * test_corruption.c - damage on disk, against the real sluiced: a damaged
 * meta page is named as corruption, with what to do, and the broker does
 * not start; records corrupted at the head, the middle and the tail of
 * every level are moved to their level's dead letters with reason
 * "corrupt", logged once each, and everything else is delivered.
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
 * the middle, the tail) are moved to their level's dead letters with reason
 * "corrupt", logged once each, and everything else is delivered, on every
 * level. Before, the first bad record stopped its level for good, and
 * through strict priority the pick kept choosing it. */
static void corrupt_records_are_moved_aside_and_delivery_goes_on(void **state)
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
    assert_int_equal(count_lines(&f->b, "failed its checksum; moved to the level's dead letters"), nbad);
    /* the dead letters say why */
    char out[8192];
    const char *list[] = {th_bin("sluice"), "-b", f->b.endpoint, "dead", "list", "high", "--json", NULL};
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "corrupt: stored record failed its checksum"));
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(corrupt_meta_pages_are_named_as_corruption, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(corrupt_records_are_moved_aside_and_delivery_goes_on, th_timeout_arm,
                                        th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("corruption", tests, NULL, NULL);
}
