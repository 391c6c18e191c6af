/*
 * test_slowdisk.c - the slow disk on demand (tools/slowdisk/slowdisk.c), in
 * the real sluiced: with the shim preloaded and a delay set, every
 * confirmed publish waits at least that delay (a commit flushes at least
 * once), the shim counts the flushes it slowed, and the data it let through
 * are the real disk's: a broker started afterwards without it delivers
 * every confirmed message. This is what `make bench`'s slow-disk rows rely
 * on. With the write-ahead log (the default) a confirmation waits for one
 * flush, its record's; without it (--wal-mb 0) for an LMDB commit's two.
 * The go-on tests run both ways: a log record leaves the store writable
 * while it flushes, an LMDB commit (without the log, and the log's
 * checkpoints) freezes it, and the loop must go on in both.
 *
 * The shim lives beside the tests' folder ($(BUILD)/slowdisk.so, found from
 * this program's own path) and is never sanitized; under ASan the broker
 * is told not to insist on its runtime coming first in the library list.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"
#include "sluice_admin.h"

enum { MSGS = 5, DELAY_MS = 30 };
enum { GO_ON_MSGS = 40, GO_ON_DELAY_MS = 150 };

static const char *const no_log[] = {"--wal-mb", "0", NULL};

static void confirms_wait_for_slowed_flushes(const char *const *extra, unsigned flushes_per_confirm)
{
    char count_file[400], count_env[440];
    char delay[48], text[64];
    th_broker b;
    assert_int_equal(th_broker_init(&b, extra), 0);
    snprintf(delay, sizeof delay, "SLUICE_SLOW_FLUSH_US=%d", DELAY_MS * 1000);
    snprintf(count_file, sizeof count_file, "%s/flushes", b.dir);
    snprintf(count_env, sizeof count_env, "SLUICE_SLOW_FLUSH_COUNT_FILE=%s", count_file);
    const char *env[] = {delay, count_env, NULL};
    th_broker_preload(&b, "slowdisk.so", env);
    assert_int_equal(th_broker_start(&b), 0);

    sl_client *c = th_client(&b, 5000);
    uint64_t fastest_ms = UINT64_MAX;
    for (int i = 0; i < MSGS; i++) {
        char body[16];
        snprintf(body, sizeof body, "m%d", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        uint64_t t0 = th_now_ms();
        assert_int_equal(sl_send(c, &m, NULL), SL_OK);
        uint64_t took = th_now_ms() - t0;
        if (took < fastest_ms)
            fastest_ms = took;
    }
    fprintf(stderr, "# fastest confirm with %d ms flushes, %s: %llu ms\n", DELAY_MS,
            extra ? "no log" : "the log", (unsigned long long)fastest_ms);
    assert_true(fastest_ms >= flushes_per_confirm * DELAY_MS);
    if (flushes_per_confirm == 1) /* the log: one flush, not an LMDB commit's two (the fastest of five) */
        assert_true(fastest_ms < 2 * DELAY_MS);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);

    unsigned long flushes = 0;
    assert_true(th_read_file(count_file, text, sizeof text) > 0);
    assert_int_equal(sscanf(text, "flushes %lu", &flushes), 1);
    fprintf(stderr, "# flushes slowed: %lu\n", flushes);
    assert_true(flushes >= MSGS);

    /* The same data, without the shim: everything confirmed is there. */
    memset(b.wrap, 0, sizeof b.wrap);
    assert_int_equal(th_broker_start(&b), 0);
    c = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 16), SL_OK);
    sl_delivery *d = NULL;
    int seen = 0;
    for (int i = 0; i < MSGS; i++) {
        assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
        snprintf(text, sizeof text, "m%d", i);
        assert_int_equal(d->body_len, strlen(text));
        assert_memory_equal(d->body, text, d->body_len);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        seen++;
    }
    assert_int_equal(seen, MSGS);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void a_confirm_waits_for_one_slowed_flush(void **state)
{
    (void)state;
    confirms_wait_for_slowed_flushes(NULL, 1);
}

static void without_the_log_a_confirm_waits_for_two(void **state)
{
    (void)state;
    confirms_wait_for_slowed_flushes(no_log, 2);
}

/* publish_low sends one publish to level 2 without waiting: the commit it
 * joins keeps the writer busy. */
static void publish_low(sl_client *p)
{
    sl_put m = {.body = "busy", .body_len = 4, .level = 2};
    assert_int_equal(sl_send_async(p, &m, NULL), SL_OK);
}

/* go_on: while the writer flushes, the loop goes on: a consumer's ACKs are
 * taken and its next deliveries sent while a commit is out. A producer
 * keeps a commit out nearly all the time (each of its publishes waits for
 * two slowed flushes, and the next leaves as soon as it is confirmed); a
 * consumer with credit 1 takes `take` of `msgs` committed messages one by
 * one, and sl_flush waits for every OK. Were its ACKs left in the socket
 * until each commit ended, each delivery would wait for a commit (two
 * slowed flushes); they take a fraction of one. With extra
 * "--ack-flush-ms 0" each OK follows the commit that carries its delete:
 * the broker is then killed with SIGKILL, and started again without the
 * shim, every acknowledged message is gone and every other one is there. */
static void go_on(const char *const *extra, unsigned msgs, unsigned take, int kill_after)
{
    char delay[48];
    th_broker b;
    assert_int_equal(th_broker_init(&b, extra), 0);
    snprintf(delay, sizeof delay, "SLUICE_SLOW_FLUSH_US=%d", GO_ON_DELAY_MS * 1000);
    const char *env[] = {delay, NULL};
    th_broker_preload(&b, "slowdisk.so", env);
    assert_int_equal(th_broker_start(&b), 0);

    sl_client *p = th_client(&b, 20000);
    sl_confirm conf;
    for (unsigned i = 0; i < msgs; i++) {
        char body[16];
        snprintf(body, sizeof body, "w%u", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        assert_int_equal(sl_send_async(p, &m, NULL), SL_OK);
    }
    for (unsigned i = 0; i < msgs; i++) {
        assert_int_equal(sl_send_wait(p, 20000, &conf), SL_OK);
        assert_int_equal(conf.err, SL_OK);
    }
    sl_client *c = th_client(&b, 5000);
    const unsigned normal = 1;
    assert_int_equal(sl_subscribe(c, NULL, &normal, 1, 1), SL_OK);
    publish_low(p);
    unsigned commits = 0, got = 0;
    uint64_t t0 = th_now_ms();
    while (got < take && th_now_ms() - t0 < 60000) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(c, 10000, &d), SL_OK);
        assert_int_equal(d->level, 1);
        char want[16];
        snprintf(want, sizeof want, "w%u", got);
        assert_string_equal(d->body, want);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        got++;
        if (sl_send_wait(p, 0, &conf) == SL_OK) { /* its commit ended: the next one */
            assert_int_equal(conf.err, SL_OK);
            commits++;
            publish_low(p);
        }
    }
    uint64_t took = th_now_ms() - t0;
    fprintf(stderr, "# %u deliveries, credit 1, while %u commits of %d ms flushes ended: %llu ms\n", got,
            commits, GO_ON_DELAY_MS, (unsigned long long)took);
    assert_int_equal(got, take);
    assert_true(took < 10 * GO_ON_DELAY_MS); /* one commit per delivery: take x 2 flushes */
    assert_int_equal(sl_flush(c, 10000), SL_OK);
    if (kill_after) {
        th_broker_kill9(&b);
        sl_close(&c);
        sl_close(&p);
        memset(b.wrap, 0, sizeof b.wrap);
        assert_int_equal(th_broker_start(&b), 0);
        c = th_client(&b, 5000);
        assert_int_equal(sl_subscribe(c, NULL, &normal, 1, 16), SL_OK);
        for (unsigned i = take; i < msgs; i++) {
            sl_delivery *d = NULL;
            char want[16];
            assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
            snprintf(want, sizeof want, "w%u", i);
            assert_string_equal(d->body, want); /* never one that was acknowledged */
            assert_int_equal(sl_ack(c, d), SL_OK);
            sl_delivery_free(&d);
        }
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(c, 300, &d), SL_ETIMEDOUT);
        assert_int_equal(sl_flush(c, 5000), SL_OK);
    } else {
        while (sl_send_pending(p) && sl_send_wait(p, 10000, &conf) == SL_OK)
            assert_int_equal(conf.err, SL_OK);
        sl_close(&p);
    }
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void deliveries_go_on_while_a_commit_flushes(void **state)
{
    (void)state;
    go_on(no_log, GO_ON_MSGS, GO_ON_MSGS, 0);
}

static void deliveries_go_on_while_a_log_record_flushes(void **state)
{
    (void)state;
    go_on(NULL, GO_ON_MSGS, GO_ON_MSGS, 0);
}

static void acks_taken_during_a_commit_are_durable_at_their_ok(void **state)
{
    (void)state;
    static const char *const extra[] = {"--ack-flush-ms", "0", "--wal-mb", "0", NULL};
    go_on(extra, GO_ON_MSGS, GO_ON_MSGS / 2, 1);
}

static void acks_taken_during_a_log_record_are_durable_at_their_ok(void **state)
{
    (void)state;
    static const char *const extra[] = {"--ack-flush-ms", "0", NULL};
    go_on(extra, GO_ON_MSGS, GO_ON_MSGS / 2, 1);
}

/* take_acking receives and acks deliveries for ms milliseconds (or until
 * want level-0 ones came, when want > 0), counting level 0's and the level-2
 * ones that came between level 0's first and its last. */
static void take_acking(sl_client *c, uint64_t ms, unsigned want, unsigned *high, unsigned *low_among_high)
{
    uint64_t t0 = th_now_ms();
    while (th_now_ms() - t0 < ms && (!want || *high < want)) {
        sl_delivery *d = NULL;
        int rc = sl_recv(c, 100, &d);
        if (rc == SL_ETIMEDOUT)
            continue;
        assert_int_equal(rc, SL_OK);
        if (d->level == 0)
            (*high)++;
        else if (*high)
            (*low_among_high)++;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
}

/* A checkpoint (an LMDB commit, with the log) freezes reads at the last
 * committed state, which lacks what was logged since. Here level 2's
 * messages are in that state and level 0's, logged after the checkpoint
 * before, are not: a paced release during the freeze must wait for level 0
 * rather than send level 2. The sink (20/s) goes on releasing through the
 * freeze, which lasts two slowed flushes (200 ms), so a broker that fell
 * back to the next level delivers level-2 messages among level 0's. The
 * consumer acks all along, so the log takes records between checkpoints
 * (every 1,000 ms): one before level 0 is published, the next while its
 * 40 messages are being released (2 s at 20/s). Were level 0's publishes
 * split over two records (a loaded machine), a release between them could
 * rightly send level 2 (the second record's messages are not confirmed
 * yet): that run says so and does not count. (Pausing level 2 meanwhile
 * would not do: the admin command's commit takes level 0 into LMDB.) */
static void priority_round(void)
{
    enum { LOW = 80, HIGH = 40 };
    static const char *const extra[] = {"--checkpoint-ms", "1000", NULL};
    char delay[48];
    th_broker b;
    assert_int_equal(th_broker_init(&b, extra), 0);
    snprintf(delay, sizeof delay, "SLUICE_SLOW_FLUSH_US=%d", 100 * 1000);
    const char *env[] = {delay, NULL};
    th_broker_preload(&b, "slowdisk.so", env);
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *p = th_client(&b, 20000);
    assert_int_equal(sl_sink_set(p, 20 * 1000, 1, SL_UNCHANGED), SL_OK);
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 16), SL_OK);
    sl_confirm conf;
    unsigned high = 0, low_among_high = 0;
    uint64_t first_ms = 0, last_ms = 0; /* level 0's first and last confirmation */
    for (unsigned level = 2, n = LOW;; level = 0, n = HIGH) {
        for (unsigned i = 0; i < n; i++) {
            sl_put m = {.body = "m", .body_len = 1, .level = level};
            assert_int_equal(sl_send_async(p, &m, NULL), SL_OK);
        }
        for (unsigned i = 0; i < n; i++) {
            assert_int_equal(sl_send_wait(p, 20000, &conf), SL_OK);
            assert_int_equal(conf.err, SL_OK);
            last_ms = th_now_ms();
            first_ms = i ? first_ms : last_ms;
        }
        if (level == 0)
            break;
        take_acking(c, 1500, 0, &high, &low_among_high); /* a checkpoint takes level 2 into LMDB */
    }
    take_acking(c, 30000, HIGH, &high, &low_among_high);
    fprintf(stderr, "# level 2 delivered among level 0's: %u\n", low_among_high);
    assert_int_equal(high, HIGH);
    if (last_ms - first_ms < 50) /* one record (a 100 ms flush) */
        assert_int_equal(low_among_high, 0);
    else
        fprintf(stderr, "# level 0's publishes went in two records (confirmed over %llu ms): not the case "
                "tested this time\n", (unsigned long long)(last_ms - first_ms));
    sl_close(&c);
    sl_close(&p);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* Twice, each on a broker of its own: where the checkpoints fall is a matter
 * of timing (before the fix, one round showed the inversion in 2 of 3). */
static void priority_order_holds_while_a_checkpoint_flushes(void **state)
{
    (void)state;
    priority_round();
    priority_round();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_confirm_waits_for_one_slowed_flush),
        cmocka_unit_test(without_the_log_a_confirm_waits_for_two),
        cmocka_unit_test(deliveries_go_on_while_a_commit_flushes),
        cmocka_unit_test(deliveries_go_on_while_a_log_record_flushes),
        cmocka_unit_test(acks_taken_during_a_commit_are_durable_at_their_ok),
        cmocka_unit_test(acks_taken_during_a_log_record_are_durable_at_their_ok),
        cmocka_unit_test(priority_order_holds_while_a_checkpoint_flushes),
    };
    th_seed();
    return cmocka_run_group_tests_name("slowdisk", tests, NULL, NULL);
}
