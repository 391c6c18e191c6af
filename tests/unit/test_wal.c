/*
 * test_wal.c - the store's write-ahead log (broker/store/store_wal.c) against a
 * real LMDB environment and a real log file.
 *
 * A crash is a child process that opens the store, makes batches durable
 * through the log (store_commit_start with the writer thread, then
 * store_commit_wait) and leaves with _exit, never closing the store (which
 * would checkpoint). The parent then opens the same directory and looks:
 * whatever the log confirmed must be there, in order, and nothing else.
 * Corruption is made from outside, with pwrite on wal.log.
 *
 * Each test has its own mkdtemp directory under /tmp, removed afterwards,
 * and runs under alarm(SFIX_TIMEOUT_S) (store_fixture.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "store_fixture.h"
#include "log.h"
#include "store.h"

#define NEVER_NS (UINT64_C(1) << 62) /* a checkpoint interval that never comes */
#define WAL_PAGE 4096

/* wal_path writes the path of dir's log into path. */
static const char *wal_path(const char *dir, char path[160])
{
    snprintf(path, 160, "%s/wal.log", dir);
    return path;
}

static int open_store(const char *dir, uint64_t wal_bytes, store **s)
{
    store_cfg cfg = {.dir = dir, .levels = 2, .map_bytes = SFIX_MAP_BYTES, .wal_bytes = wal_bytes,
                     .checkpoint_ns = NEVER_NS};
    return store_open(&cfg, s, NULL);
}

/* append_one adds message "m<n>" to level 0. */
static int append_one(store *s, unsigned n)
{
    char body[32];
    snprintf(body, sizeof body, "m%u", n);
    store_rec rec = {.id = store_next_id(s), .enq_ns = 1, .cost = 1, .level = 0, .body = body,
                     .body_len = (uint32_t)strlen(body)};
    uint64_t key;
    return store_append(s, &rec, &key);
}

/* durable makes the open batch durable on the writer thread, as the loop
 * does (checkpoint: an LMDB commit; else a log record), and says which it
 * was. Returns the result, or -1 if nothing started. */
static int durable(store *s, int checkpoint, int *logged)
{
    int started = 0, rc = SL_OK;
    *logged = 0;
    if (store_commit_start(s, 1, checkpoint, &started) != SL_OK || !started)
        return -1;
    *logged = store_logging(s);
    store_commit_wait(s, &rc);
    return rc;
}

/* crash_after runs in a child: opens dir with a log of wal_bytes, logs
 * batches [0, n) of one message each (every ckpt_every-th one a checkpoint
 * instead, 0: none), then leaves without closing. Returns the child's exit
 * status: 0 when every batch went as asked. */
static int crash_after(const char *dir, uint64_t wal_bytes, unsigned n, unsigned ckpt_every)
{
    pid_t pid = fork();
    if (pid == 0) {
        store *s = NULL;
        if (open_store(dir, wal_bytes, &s) != SL_OK)
            _exit(10);
        for (unsigned i = 0; i < n; i++) {
            int ckpt = ckpt_every && i % ckpt_every == ckpt_every - 1, logged;
            if (append_one(s, i) != SL_OK)
                _exit(11);
            if (durable(s, ckpt, &logged) != SL_OK)
                _exit(12);
            if (logged == ckpt)
                _exit(13); /* a log record where a checkpoint was asked, or the reverse */
        }
        _exit(0); /* the crash: no close, no checkpoint */
    }
    int status = -1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

/* expect_messages opens dir (log of wal_bytes) and checks level 0 holds
 * exactly m0..m<n-1>, in order. */
static void expect_messages(const char *dir, uint64_t wal_bytes, unsigned n)
{
    store *s = NULL;
    assert_int_equal(open_store(dir, wal_bytes, &s), SL_OK);
    assert_int_equal(store_level_count(s, 0), n);
    uint64_t from = 0, key;
    store_rec rec;
    for (unsigned i = 0; i < n; i++) {
        char body[32];
        snprintf(body, sizeof body, "m%u", i);
        assert_int_equal(store_seek(s, 0, from, &key, &rec), SL_OK);
        assert_int_equal(rec.body_len, strlen(body));
        assert_memory_equal(rec.body, body, rec.body_len);
        from = key + 1;
    }
    assert_int_equal(store_seek(s, 0, from, &key, &rec), SL_ENOTFOUND);
    store_close(&s);
}

/* crash_after_inline opens dir, makes message m0 durable with a checkpoint
 * (which never goes anywhere but the writer thread, even when allowed on the
 * calling thread), then logs m1..m<n> one record each with every record
 * allowed on the calling thread (store_log_inline, as the loop allows it
 * when replies wait), and leaves without closing. The first record is
 * written there (no flush time is known yet), the rest there or on the
 * writer thread as the disk's flush time decides; either way
 * store_commit_poll takes the result, and it must be as durable. */
static int crash_after_inline(const char *dir, unsigned n)
{
    pid_t pid = fork();
    if (pid == 0) {
        store *s = NULL;
        int started = 0, rc = SL_OK;
        if (open_store(dir, 1 << 20, &s) != SL_OK)
            _exit(10);
        store_log_inline(s, 1);
        if (append_one(s, 0) != SL_OK || store_commit_start(s, 1, 1, &started) != SL_OK || !started ||
            !store_committing(s) || store_commit_ready(s))
            _exit(11);
        store_commit_wait(s, &rc);
        for (unsigned i = 1; i <= n && rc == SL_OK; i++) {
            if (append_one(s, i) != SL_OK)
                _exit(12);
            store_log_inline(s, 1);
            if (store_commit_start(s, 1, 0, &started) != SL_OK || !started || !store_logging(s))
                _exit(13);
            if (i == 1 && !store_commit_ready(s))
                _exit(14);
            if (store_commit_ready(s) && (store_commit_poll(s, &rc) != 1 || store_busy(s)))
                _exit(15); /* written here: its result is there at once */
            store_commit_wait(s, &rc);
            if (store_commit_ready(s))
                _exit(16);
        }
        _exit(rc == SL_OK ? 0 : 17); /* the crash: no close, no checkpoint */
    }
    int status = -1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static void records_written_on_the_loop_come_back_after_a_crash(void **state)
{
    sfix *f = *state;
    assert_int_equal(crash_after_inline(f->dir, 25), 0);
    expect_messages(f->dir, 1 << 20, 26);
}

static void logged_batches_come_back_after_a_crash(void **state)
{
    sfix *f = *state;
    assert_int_equal(crash_after(f->dir, 1 << 20, 25, 0), 0);
    expect_messages(f->dir, 1 << 20, 25);
    expect_messages(f->dir, 1 << 20, 25); /* the replay was committed: the same again, once */
}

/* meta_seen records what store_meta_scan found for one key. */
typedef struct meta_seen {
    char val[16];
    int found;
} meta_seen;

static void meta_one(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    (void)key, (void)key_len;
    meta_seen *m = ctx;
    snprintf(m->val, sizeof m->val, "%.*s", (int)len, (const char *)val);
    m->found = 1;
}

static meta_seen meta_read(store *s, const char *key)
{
    meta_seen m = {{0}, 0};
    assert_int_equal(store_meta_scan(s, key, meta_one, &m), SL_OK);
    return m;
}

/* A key put, deleted and put again in one batch, and another put then
 * deleted, with other keys between (so that no two notes of a key follow
 * each other): the replay ends with each key's last state. */
static void a_key_written_back_and_forth_in_one_batch_replays_to_its_last_state(void **state)
{
    sfix *f = *state;
    pid_t pid = fork();
    if (pid == 0) {
        store *s = NULL;
        int logged;
        if (open_store(f->dir, 1 << 20, &s) != SL_OK)
            _exit(10);
        if (store_meta_put(s, "test/x", "one", 3) != SL_OK || store_meta_put(s, "test/y", "why", 3) != SL_OK ||
            append_one(s, 0) != SL_OK || store_meta_del(s, "test/x") != SL_OK || append_one(s, 1) != SL_OK ||
            store_meta_put(s, "test/x", "three", 5) != SL_OK || append_one(s, 2) != SL_OK ||
            store_meta_del(s, "test/y") != SL_OK)
            _exit(11);
        if (durable(s, 0, &logged) != SL_OK || !logged)
            _exit(12);
        _exit(0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    expect_messages(f->dir, 1 << 20, 3);
    store *s = NULL;
    assert_int_equal(open_store(f->dir, 1 << 20, &s), SL_OK);
    meta_seen x = meta_read(s, "test/x"), y = meta_read(s, "test/y");
    assert_true(x.found);
    assert_string_equal(x.val, "three");
    assert_false(y.found);
    store_close(&s);
}

static void a_torn_record_ends_the_replay(void **state)
{
    sfix *f = *state;
    assert_int_equal(crash_after(f->dir, 1 << 20, 3, 0), 0);
    /* each one-message batch is one record of one page, from the first page
     * after the header: damage the third (the crash tore its write) */
    char wal[160];
    int fd = open(wal_path(f->dir, wal), O_RDWR);
    assert_true(fd >= 0);
    unsigned char b = 0;
    assert_int_equal(pread(fd, &b, 1, 3 * WAL_PAGE + 40), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, 3 * WAL_PAGE + 40), 1);
    close(fd);
    expect_messages(f->dir, 1 << 20, 2);
}

static void the_ring_wraps_and_replays_across_its_end(void **state)
{
    sfix *f = *state;
    /* 20 KiB: five pages of records, one a batch; a checkpoint is due once
     * half is used, so every fourth batch is one (the ring is free again).
     * After six rounds (18 records) the next record goes to its fourth page,
     * so the last three, which no checkpoint covers, sit on pages 4, 5 and
     * 1: replay must follow the wrap. */
    assert_int_equal(crash_after(f->dir, 5 * WAL_PAGE, 4 * 6 + 3, 4), 0);
    expect_messages(f->dir, 5 * WAL_PAGE, 4 * 6 + 3);
}

static void a_batch_the_log_cannot_hold_goes_with_a_checkpoint(void **state)
{
    sfix *f = *state;
    store *s = NULL;
    int logged;
    assert_int_equal(open_store(f->dir, 4 * WAL_PAGE, &s), SL_OK);
    for (unsigned i = 0; i < 400; i++) /* far more than half of four pages */
        assert_int_equal(append_one(s, i), SL_OK);
    assert_int_equal(durable(s, 0, &logged), SL_OK);
    assert_int_equal(logged, 0); /* an LMDB commit carried it */
    store_close(&s);
    expect_messages(f->dir, 4 * WAL_PAGE, 400);
}

static void a_log_of_another_directory_is_not_replayed(void **state)
{
    sfix *f = *state;
    char other[128], cmd[400], wal[160];
    snprintf(other, sizeof other, "%s/other", f->tmp);
    assert_int_equal(crash_after(other, 1 << 20, 5, 0), 0); /* its log holds m0..m4 */
    assert_int_equal(crash_after(f->dir, 1 << 20, 2, 0), 0);
    snprintf(cmd, sizeof cmd, "cp %s/wal.log %s", other, wal_path(f->dir, wal));
    assert_int_equal(system(cmd), 0);
    /* the log names another file id: not replayed (and the broker says so);
     * what this directory's last checkpoint holds stays: nothing, here */
    expect_messages(f->dir, 1 << 20, 0);
}

static void switching_the_log_off_replays_it_first(void **state)
{
    sfix *f = *state;
    struct stat st;
    char wal[160];
    assert_int_equal(crash_after(f->dir, 1 << 20, 7, 0), 0);
    assert_int_equal(stat(wal_path(f->dir, wal), &st), 0);
    expect_messages(f->dir, 0, 7);
    assert_int_equal(stat(wal, &st), -1); /* removed once its batches were committed */
    expect_messages(f->dir, 1 << 20, 7);     /* and on again: a new log, nothing lost */
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(logged_batches_come_back_after_a_crash, sfix_setup, sfix_teardown),
        cmocka_unit_test_setup_teardown(records_written_on_the_loop_come_back_after_a_crash, sfix_setup,
                                        sfix_teardown),
        cmocka_unit_test_setup_teardown(a_key_written_back_and_forth_in_one_batch_replays_to_its_last_state, sfix_setup,
                                        sfix_teardown),
        cmocka_unit_test_setup_teardown(a_torn_record_ends_the_replay, sfix_setup, sfix_teardown),
        cmocka_unit_test_setup_teardown(the_ring_wraps_and_replays_across_its_end, sfix_setup, sfix_teardown),
        cmocka_unit_test_setup_teardown(a_batch_the_log_cannot_hold_goes_with_a_checkpoint, sfix_setup, sfix_teardown),
        cmocka_unit_test_setup_teardown(a_log_of_another_directory_is_not_replayed, sfix_setup, sfix_teardown),
        cmocka_unit_test_setup_teardown(switching_the_log_off_replays_it_first, sfix_setup, sfix_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
