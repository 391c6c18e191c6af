/*
 * test_ha_snap.c - a standby that cannot resume the stream catches up from
 * a copy of the primary's store: two real sluiced nodes of one group and a
 * real redis-server (on a Unix socket in the test's directory), the stream
 * on ipc:// sockets there too; --repl-buffer-mb 1.
 *
 * Pinned down: a standby stopped while the primary writes more than its
 * buffer, started again, is told FAR, receives a copy of the primary's
 * store, swaps it in (its old store kept aside as DATA.replaced-*), is in
 * sync again (`sluice ha status --json` says in_sync true) and, after kill
 * -9 of the primary, promotes and delivers every confirmed publish; a
 * standby whose store diverged (a deposed primary's, holding a batch never
 * confirmed: the standby killed, a publish, the primary killed, the
 * standby started again promotes) catches up by a copy too, and after a failover to it holds
 * exactly the confirmed publishes, not the one that never was; a copy cut
 * short (the standby killed, then the primary killed, while a copy of some
 * 40 MB streams) leaves the standby's store in place: it starts on it, and
 * catches up by a new copy later; the primary that sent it stops cleanly
 * and the standby promotes with everything confirmed.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "th_ha.h"
#include "th_redis.h"

#define TTL_MS 1500
#define KEY "sluice:ha:{t}"

static char dir[64], repl[2][TH_HA_REPL_BYTES];
static th_redis redis;
static const char *timeout_ms = "500";

static int arm(void **state)
{
    (void)state;
    timeout_ms = "500";
    return th_ha_arm(dir, sizeof dir, "/tmp/sluice-hasnap-XXXXXX", repl, &redis, 240);
}

static int disarm(void **state)
{
    (void)state;
    th_ha_disarm(dir, &redis);
    return 0;
}

static void pause_ms(unsigned ms)
{
    th_ha_pause_ms(ms);
}

/* node starts node i (1 or 2) of group t, its buffer 1 MB. */
static th_broker *node(int i)
{
    static const char *names[] = {"n1", "n2"};
    const char *extra[] = {"--ha", redis.url, "--ha-group", "t", "--ha-node", names[i - 1], "--repl-listen",
                           repl[i - 1], "--ha-ttl-ms", "1500", "--repl-standby-timeout-ms", timeout_ms,
                           "--repl-buffer-mb", "1", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    return b;
}

/* field reads one field of the group's hash ("" when absent). */
static void field(const char *f, char *out, size_t cap)
{
    th_redis_hget(&redis, KEY, f, out, cap);
}

/* wait_field waits up to ms for field f to read want; returns the ms it took, or -1. */
static long wait_field(const char *f, const char *want, unsigned ms)
{
    return th_redis_wait_hget(&redis, KEY, f, want, ms);
}

/* logged counts text in b's log. */
static int logged(const th_broker *b, const char *text)
{
    static char buf[1 << 20];
    size_t n = th_read_file(b->log, buf, sizeof buf - 1);
    buf[n] = '\0';
    int count = 0;
    for (const char *p = buf; (p = strstr(p, text)); p++)
        count++;
    return count;
}

/* wait_log waits up to ms for text to be in b's log more than before times: 1 it is, 0 not. */
static int wait_log(const th_broker *b, const char *text, int before, unsigned ms)
{
    uint64_t t0 = th_now_ms();
    while (th_now_ms() - t0 <= ms) {
        if (logged(b, text) > before)
            return 1;
        pause_ms(5);
    }
    return 0;
}

/* copy_figures prints the primary's last "has the copy" line's size and time. */
static void copy_figures(const th_broker *b, const char *what)
{
    static char buf[1 << 20];
    size_t n = th_read_file(b->log, buf, sizeof buf - 1);
    buf[n] = '\0';
    const char *at = NULL, *p = buf;
    while ((p = strstr(p, "has the copy of this store (")))
        at = p++;
    unsigned long long bytes = 0, ms = 0;
    if (at && sscanf(at, "has the copy of this store (%llu bytes, sent in %llu ms)", &bytes, &ms) == 2)
        print_message("# %s: a copy of %llu bytes sent in %llu ms\n", what, bytes, ms);
}

/* count_beside counts the entries of b's temporary directory whose names
 * start with "data" + suffix. */
static int count_beside(const th_broker *b, const char *suffix)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "data%s", suffix);
    DIR *d = opendir(b->dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

/* put publishes n bodies of size bytes at level 1, 64 in flight; every one confirmed. */
static void put(sl_client *c, unsigned n, size_t size)
{
    static char body[65536];
    memset(body, 'x', sizeof body);
    for (unsigned i = 0; i < n; i++) {
        sl_put m = {.body = body, .body_len = size, .level = 1};
        assert_int_equal(sl_send_async(c, &m, NULL), SL_OK);
        while (sl_send_pending(c) >= 64 || (i + 1 == n && sl_send_pending(c))) {
            sl_confirm cf;
            assert_int_equal(sl_send_wait(c, 15000, &cf), SL_OK);
            assert_int_equal(cf.err, SL_OK);
        }
    }
}

/* serving waits up to ms for b to answer STATS as a primary; returns level 1's depth, or -1. */
static long long serving(const th_broker *b, unsigned ms)
{
    return th_ha_serving(b, NULL, ms, NULL);
}

/* n2_in_sync tells whether `sluice ha status --json` on b says n2 is in sync. */
static int in_sync_says(const th_broker *b, const char *name)
{
    char out[4096], want[128];
    const char *argv[] = {th_bin("sluice"), "-b", b->endpoint, "ha", "status", "--json", NULL};
    if (th_run(argv, NULL, out, sizeof out) != 0)
        return 0;
    snprintf(want, sizeof want, "\"node\": \"%s\", \"role\": \"standby\"", name);
    const char *at = strstr(out, want);
    const char *end = at ? strchr(at, '}') : NULL;
    const char *yes = at ? strstr(at, "\"in_sync\": true") : NULL;
    return yes && yes < end;
}

static void a_standby_too_far_behind_catches_up_by_a_copy(void **state)
{
    (void)state;
    th_broker *n1 = node(1), *n2 = node(2);
    assert_true(wait_field("sync", "n2", 10000) >= 0);
    sl_client *c = th_client(n1, 15000);
    put(c, 200, 100);
    assert_int_equal(th_broker_stop(n2), 0);
    put(c, 1500, 2048); /* some 3 MB: more than the 1 MB the primary keeps; alone (sync none) */
    assert_true(wait_field("sync", "", 10000) >= 0);
    uint64_t t0 = th_now_ms();
    assert_int_equal(th_broker_start(n2), 0);
    long took = wait_field("sync", "n2", 60000);
    assert_true(took >= 0);
    print_message("# a standby 1,500 publishes (3 MB) behind a 1 MB buffer: in sync again by a copy in %llu ms\n",
                  (unsigned long long)(th_now_ms() - t0));
    assert_true(logged(n1, "sending standby n2 a copy of this store"));
    copy_figures(n1, "too far behind");
    assert_true(logged(n2, "flushed and checked: loading it"));
    assert_int_equal(count_beside(n2, ".replaced-"), 1); /* the old store, kept */
    assert_int_equal(count_beside(n2, ".copy"), 0);
    assert_true(in_sync_says(n1, "n2"));
    put(c, 100, 100); /* confirmed on both */
    sl_close(&c);
    th_broker_kill9(n1);
    assert_int_equal(serving(n2, TTL_MS + 15000), 1800);
    assert_int_equal(th_broker_destroy(&n2), 0);
    th_broker_fini(n1);
    free(n1);
}

static void a_diverged_standby_catches_up_by_a_copy(void **state)
{
    (void)state;
    timeout_ms = "5000"; /* the killed standby stays named in sync until the primary is killed */
    th_broker *n1 = node(1), *n2 = node(2);
    assert_true(wait_field("sync", "n2", 10000) >= 0);
    sl_client *c = th_client(n1, 15000);
    put(c, 300, 100);
    /* a batch written on n1 only, never confirmed: n2 killed, then n1 */
    th_broker_kill9(n2);
    sl_put m = {.body = "never", .body_len = 5, .level = 1};
    assert_int_equal(sl_send_async(c, &m, NULL), SL_OK);
    pause_ms(400);
    th_broker_kill9(n1);
    sl_close(&c);
    char sync[64];
    field("sync", sync, sizeof sync);
    assert_string_equal(sync, "n2");
    assert_int_equal(th_broker_start(n2), 0);
    assert_int_equal(serving(n2, TTL_MS + 15000), 300); /* promoted (epoch 2) without it */
    /* n1 again: its store holds a record of epoch 1 past where epoch 2 began */
    assert_int_equal(th_broker_start(n1), 0);
    assert_true(wait_field("sync", "n1", 60000) >= 0);
    assert_true(logged(n2, "of epoch 1 (this primary holds"));
    assert_true(logged(n1, "flushed and checked: loading it"));
    assert_int_equal(count_beside(n1, ".replaced-1-"), 1);
    assert_true(in_sync_says(n2, "n1"));
    c = th_client(n2, 15000);
    put(c, 50, 100);
    sl_close(&c);
    th_broker_kill9(n2);
    assert_int_equal(serving(n1, TTL_MS + 15000), 350); /* the confirmed ones, not the batch that never was */
    assert_int_equal(th_broker_destroy(&n1), 0);
    th_broker_fini(n2);
    free(n2);
}

static void a_copy_cut_short_leaves_the_standby_whole(void **state)
{
    (void)state;
    th_broker *n1 = node(1), *n2 = node(2);
    assert_true(wait_field("sync", "n2", 10000) >= 0);
    sl_client *c = th_client(n1, 15000);
    put(c, 100, 100);
    assert_int_equal(th_broker_stop(n2), 0);
    put(c, 2500, 16384); /* some 40 MB */
    /* the standby killed as soon as the copy comes */
    int before = logged(n2, "receiving a copy of the primary's store");
    assert_int_equal(th_broker_start(n2), 0);
    assert_true(wait_log(n2, "receiving a copy of the primary's store", before, 60000));
    th_broker_kill9(n2);
    int cut = !logged(n2, "flushed and checked");
    /* started again on its old store: it catches up by a new copy, the primary serving meanwhile */
    assert_int_equal(th_broker_start(n2), 0);
    uint64_t t0 = th_now_ms();
    unsigned during = 0;
    char sync[64] = "";
    while (strcmp(sync, "n2") != 0 && th_now_ms() - t0 < 60000) {
        put(c, 20, 2048);
        during += 20;
        field("sync", sync, sizeof sync);
    }
    assert_string_equal(sync, "n2");
    print_message("# in sync after %llu ms; %u publishes confirmed meanwhile (alone)\n",
                  (unsigned long long)(th_now_ms() - t0), during);
    copy_figures(n1, "after a copy cut short");
    assert_int_equal(count_beside(n2, ".copy"), 0);
    assert_int_equal(count_beside(n2, ".replaced-"), 1);
    /* the same again, the primary killed while the copy streams */
    assert_int_equal(th_broker_stop(n2), 0);
    put(c, 600, 4096);
    sl_close(&c);
    before = logged(n1, "sending standby n2 a copy");
    int loaded = logged(n2, "flushed and checked");
    assert_int_equal(th_broker_start(n2), 0);
    assert_true(wait_log(n1, "sending standby n2 a copy", before, 60000));
    th_broker_kill9(n1);
    int cut2 = logged(n2, "flushed and checked") == loaded;
    field("sync", sync, sizeof sync);
    assert_string_equal(sync, ""); /* n2 cannot promote */
    pause_ms(TTL_MS + 500);
    assert_true(serving(n2, 300) < 0);
    /* n1 again (its store is the group's): n2 catches up by a copy and holds everything */
    assert_int_equal(th_broker_start(n1), 0);
    assert_true(serving(n1, 20000) == 3200 + during);
    assert_true(wait_field("sync", "n2", 60000) >= 0);
    print_message("# copies cut short: the standby killed while it received one (%s), the primary killed while it "
                  "sent one (%s); caught up each time\n", cut ? "cut short" : "it had ended",
                  cut2 ? "cut short" : "it had ended");
    assert_int_equal(th_broker_stop(n1), 0); /* a clean exit after sending copies (under ASan: no leaks) */
    assert_int_equal(serving(n2, TTL_MS + 15000), 3200 + during);
    assert_int_equal(count_beside(n2, ".copy"), 0);
    assert_int_equal(th_broker_destroy(&n2), 0);
    th_broker_fini(n1);
    free(n1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_standby_too_far_behind_catches_up_by_a_copy, arm, disarm),
        cmocka_unit_test_setup_teardown(a_diverged_standby_catches_up_by_a_copy, arm, disarm),
        cmocka_unit_test_setup_teardown(a_copy_cut_short_leaves_the_standby_whole, arm, disarm),
    };
    th_seed();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
