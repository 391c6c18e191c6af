/*
 * test_sched.c - scheduling against the real sluiced: both pool shapes,
 * starvation under deadlines, strict order without them, live resize, pause
 * and resume, tag rules, explain in each state, and settings that survive a
 * restart.
 */
#include <pthread.h>
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

/* put publishes body with tag (may be NULL) synchronously and returns its id. */
static uint64_t put(sl_client *c, int level, const char *tag, const char *body)
{
    uint64_t id = 0;
    sl_put m = {.body = body, .body_len = strlen(body), .level = level, .tag = tag};
    int rc = sl_send(c, &m, &id);
    if (rc != SL_OK)
        fail_msg("sl_send: %s: %s", sl_errname(rc), sl_last_error(c));
    return id;
}

static sl_pool_info find_pool(sl_client *c, const char *name)
{
    sl_pool_info pools[SL_MAX_POOLS];
    unsigned n = 0;
    assert_int_equal(sl_pool_list(c, pools, &n), SL_OK);
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(pools[i].name, name))
            return pools[i];
    fail_msg("no pool %s", name);
    return pools[0];
}

/* Shape 1: a pool per priority, each with its own size. */
static void pool_per_priority_each_sized(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_client *u = th_client(&f->b, 5000), *k = th_client(&f->b, 5000);
    unsigned l0 = 0, l2 = 2;
    /* the first member creates each pool, serving the levels it names */
    assert_int_equal(sl_subscribe(u, "urgent", &l0, 1, 8), SL_OK);
    assert_int_equal(sl_subscribe(k, "bulk", &l2, 1, 8), SL_OK);
    assert_int_equal(sl_pool_resize(f->c, "urgent", 2), SL_OK);
    assert_int_equal(sl_pool_resize(f->c, "bulk", 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 0, 6, 0), SL_OK);
    assert_int_equal(th_put_many(f->c, 2, 3, 0), SL_OK);
    sl_delivery *d[8] = {0};
    for (int i = 0; i < 2; i++) {
        d[i] = NULL;
        assert_int_equal(sl_recv(u, 5000, &d[i]), SL_OK);
        assert_int_equal(d[i]->level, 0);
    }
    assert_int_equal(sl_recv(u, 300, &d[2]), SL_ETIMEDOUT); /* pool size 2, not credit 8 */
    assert_int_equal(sl_recv(k, 5000, &d[3]), SL_OK);
    assert_int_equal(d[3]->level, 2);
    assert_int_equal(sl_recv(k, 300, &d[4]), SL_ETIMEDOUT); /* pool size 1 */
    sl_pool_info pi = find_pool(f->c, "urgent");
    assert_int_equal(pi.inflight, 2);
    assert_int_equal(pi.members, 1);
    assert_int_equal(pi.levels_mask, 0x1);
    assert_int_equal(sl_ack(u, d[0]), SL_OK);
    assert_int_equal(sl_recv(u, 5000, &d[5]), SL_OK); /* room again */
    for (int i = 0; i < 8; i++)
        sl_delivery_free(&d[i]);
    sl_close(&u);
    sl_close(&k);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* wait_share polls c (sl_recv drives its socket) until its share is want. */
static unsigned wait_share(sl_client *c, unsigned want)
{
    uint64_t end = th_now_ms() + 5000;
    while (sl_share(c) != want && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 50, &d) == SL_OK)
            sl_delivery_free(&d);
    }
    return sl_share(c);
}

static void members_are_told_their_share(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_client *a = th_client(&f->b, 5000), *b2 = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(a, "crew", NULL, 0, 1), SL_OK);
    assert_int_equal(sl_pool_resize(f->c, "crew", 3), SL_OK);
    assert_int_equal(wait_share(a, 3), 3);
    assert_int_equal(sl_subscribe(b2, "crew", NULL, 0, 1), SL_OK); /* a second member joins */
    assert_int_equal(wait_share(a, 2) + wait_share(b2, 1), 3);
    sl_close(&b2); /* it leaves: a gets the whole pool again */
    assert_int_equal(wait_share(a, 3), 3);
    assert_int_equal(sl_pool_resize(f->c, "crew", 1), SL_OK);
    assert_int_equal(wait_share(a, 1), 1);
    sl_close(&a);
    assert_int_equal(th_fixture_finish(&f), 0);
}

typedef struct worker {
    const th_broker *b;
    const char *pool;
    unsigned sleep_ms;
    volatile int stop;
    volatile unsigned done;
    uint64_t level2_at_ms; /* when the first level-2 message arrived */
    uint64_t level2_released_ns; /* and when the broker released it */
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    sl_client *c = th_client(w->b, 5000);
    if (sl_subscribe(c, w->pool, NULL, 0, 1) != SL_OK)
        return NULL;
    uint64_t end = th_now_ms() + 60000;
    while (!w->stop && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        if (d->level == 2 && !w->level2_at_ms) {
            w->level2_released_ns = d->released_ns;
            w->level2_at_ms = th_now_ms();
        }
        usleep(w->sleep_ms * 1000);
        if (sl_ack(c, d) == SL_OK)
            w->done++;
        sl_delivery_free(&d);
    }
    sl_close(&c);
    return NULL;
}

/* Shape 2, with a deadline: level 0 saturates one worker, and a level-2
 * message with a 2 s deadline still goes out within 3 s. Measured where the
 * promise is made, on the broker's release time: once overdue it takes the
 * next credit, which comes back within one 2 ms job; the rest of the 3 s is
 * an allowance for a descheduled worker on a busy machine. */
static void deadline_prevents_starvation(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_set(f->c, 2, 2000, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_pool_resize(f->c, "one", 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 0, 3000, 0), SL_OK); /* 3000 x 2 ms: 6 s of level-0 work */
    worker w = {.b = &f->b, .pool = "one", .sleep_ms = 2};
    pthread_t t;
    pthread_create(&t, NULL, work, &w);
    usleep(300 * 1000);
    uint64_t sent = th_now_ms();
    put(f->c, 2, NULL, "patient");
    uint64_t end = sent + 10000;
    while (!w.level2_at_ms && th_now_ms() < end)
        usleep(20 * 1000);
    w.stop = 1;
    pthread_join(t, NULL);
    assert_true(w.level2_at_ms != 0);
    assert_true(w.level2_released_ns > 0);
    double waited_ms = (double)w.level2_released_ns / 1e6 - (double)sent;
    fprintf(stderr, "# level 2 with a 2 s deadline was released %.1f ms after its publish (arrived after %llu ms) "
            "under a saturating level 0\n", waited_ms, (unsigned long long)(w.level2_at_ms - sent));
    assert_true(waited_ms <= 3000);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_true(st.level[2].picks_overdue == 1);
    assert_true(st.level[0].depth > 0); /* level 0 was still saturated */
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Without deadlines or aging: strict order, 0 inversions. */
static void strict_order_without_deadlines(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(th_put_many(f->c, 2, 50, 0), SL_OK);
    assert_int_equal(th_put_many(f->c, 0, 200, 0), SL_OK);
    assert_int_equal(th_put_many(f->c, 1, 50, 0), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 8), SL_OK);
    unsigned inversions = 0, last = 0;
    for (int i = 0; i < 300; i++) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
        inversions += d->level < last;
        last = d->level;
        assert_int_equal(sl_ack(c, d), SL_OK);
        assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
        sl_delivery_free(&d);
    }
    assert_int_equal(inversions, 0);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    for (unsigned l = 0; l < 3; l++) {
        assert_true(st.level[l].picks_aged == 0 && st.level[l].picks_overdue == 0);
        assert_true(st.level[l].picks_priority == st.level[l].dispatched);
    }
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Resize 1 -> 4 under load: a sleep-bound pool at least doubles its rate. */
static void resize_under_load_doubles_throughput(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_pool_resize(f->c, "w", 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 1, 2000, 0), SL_OK);
    worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.b = &f->b, .pool = "w", .sleep_ms = 20};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    usleep(300 * 1000);
    unsigned before = 0, after = 0;
    for (int i = 0; i < 4; i++)
        before -= w[i].done;
    usleep(1000 * 1000);
    for (int i = 0; i < 4; i++)
        before += w[i].done;
    assert_int_equal(sl_pool_resize(f->c, "w", 4), SL_OK);
    usleep(200 * 1000);
    for (int i = 0; i < 4; i++)
        after -= w[i].done;
    usleep(1000 * 1000);
    for (int i = 0; i < 4; i++)
        after += w[i].done;
    for (int i = 0; i < 4; i++) {
        w[i].stop = 1;
        pthread_join(t[i], NULL);
    }
    fprintf(stderr, "# pool of 20 ms jobs: %u/s at size 1, %u/s at size 4\n", before, after);
    assert_true(after >= 2 * before); /* a floor of half the 4x that sleep-bound jobs give */
    /* nothing lost: every message is acked or still queued */
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_true(st.level[1].acked + st.level[1].depth + st.level[1].inflight == 2000);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void level_and_pool_pause_and_resume(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t id = put(f->c, 1, NULL, "held back");
    assert_int_equal(sl_level_pause(f->c, 1, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, "p", NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 300, &d), SL_ETIMEDOUT);
    sl_explain_info ex;
    assert_int_equal(sl_explain(f->c, id, &ex), SL_OK);
    assert_string_equal(ex.state, "ready");
    assert_non_null(strstr(ex.why, "paused"));
    assert_int_equal(sl_pool_pause(f->c, "p", 1), SL_OK);
    assert_int_equal(sl_level_pause(f->c, 1, 0), SL_OK);
    assert_int_equal(sl_recv(c, 300, &d), SL_ETIMEDOUT); /* now the pool is paused */
    assert_int_equal(sl_explain(f->c, id, &ex), SL_OK);
    assert_non_null(strstr(ex.why, "paused"));
    assert_int_equal(sl_pool_pause(f->c, "p", 0), SL_OK);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_true(d->id == id);
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&d);
    assert_int_equal(sl_pool_pause(f->c, "nosuchpool", 1), SL_ENOTFOUND);
    assert_int_equal(sl_level_pause(f->c, 7, 1), SL_ENOLEVEL);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void tag_rules_choose_the_level(void **state)
{
    (void)state;
    static const char *const extra[] = {"--tag-rule", "paying-*=high", "--tag-rule", "batch:*=low", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    put(f->c, SL_LEVEL_DEFAULT, "paying-42", "a");
    put(f->c, SL_LEVEL_DEFAULT, "batch:nightly", "b");
    put(f->c, SL_LEVEL_DEFAULT, "other", "c");
    put(f->c, 2, "paying-7", "d"); /* an explicit level wins by default */
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 1);
    assert_int_equal(st.level[1].depth, 1);
    assert_int_equal(st.level[2].depth, 2);
    assert_int_equal(th_fixture_finish(&f), 0);
    static const char *const over[] = {"--tag-rule", "paying-*=high", "--tag-rules-override", NULL};
    assert_int_equal(th_fixture_start(over, &f), 0);
    put(f->c, 2, "paying-7", "d");
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[0].depth, 1);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void explain_in_each_state(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-attempts", "1", NULL};
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    sl_explain_info ex;
    uint64_t a = put(f->c, 2, NULL, "a"), b = put(f->c, 2, NULL, "b"), c3 = put(f->c, 2, NULL, "c");
    assert_int_equal(sl_explain(f->c, c3, &ex), SL_OK);
    assert_string_equal(ex.state, "ready");
    assert_int_equal(ex.level, 2);
    assert_int_equal(ex.position, 2);
    assert_non_null(strstr(ex.why, "no consumer pool")); /* nobody consumes yet */
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_true(d->id == a);
    assert_int_equal(sl_explain(f->c, a, &ex), SL_OK);
    assert_string_equal(ex.state, "leased");
    assert_true(ex.until_ms > 0 && ex.until_ms <= 30000);
    assert_int_equal(sl_explain(f->c, c3, &ex), SL_OK);
    assert_int_equal(ex.position, 1); /* a is out, b is ahead */
    assert_non_null(strstr(ex.why, "credit"));
    assert_int_equal(sl_nack(c, d, 60000), SL_OK); /* one attempt allowed: a dead letter */
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&d);
    assert_int_equal(sl_explain(f->c, a, &ex), SL_OK);
    assert_string_equal(ex.state, "dead");
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_true(d->id == b);
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&d);
    assert_int_equal(sl_explain(f->c, b, &ex), SL_OK);
    assert_string_equal(ex.state, "gone");
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
    /* delayed: a NACK with a delay */
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t id = put(f->c, 0, NULL, "later");
    c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_nack(c, d, 60000), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* settlements do not wait */
    sl_delivery_free(&d);
    assert_int_equal(sl_explain(f->c, id, &ex), SL_OK);
    assert_string_equal(ex.state, "delayed");
    assert_true(ex.until_ms > 50000 && ex.until_ms <= 60000);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void settings_survive_restart(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_set(f->c, 1, 1500, 250), SL_OK);
    assert_int_equal(sl_level_pause(f->c, 2, 1), SL_OK);
    assert_int_equal(sl_pool_resize(f->c, "kept", 7), SL_OK);
    assert_int_equal(sl_pool_pause(f->c, "kept", 1), SL_OK);
    assert_int_equal(sl_pool_autoscale(f->c, "kept", 2, 9, 4000, 0), SL_OK);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(f->c, lv, &n), SL_OK);
    assert_int_equal(n, 3);
    assert_true(lv[1].deadline_ms == 1500 && lv[1].aging_ms == 250 && !lv[1].paused);
    assert_true(lv[2].paused && lv[2].deadline_ms == 0);
    sl_pool_info p = find_pool(f->c, "kept");
    assert_int_equal(p.size, 7);
    assert_true(p.paused);
    assert_false(p.autoscale);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void autoscale_sizes_from_backlog(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_pool_resize(f->c, "auto", 1), SL_OK);
    assert_int_equal(th_put_many(f->c, 1, 3000, 0), SL_OK);
    worker w[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (worker){.b = &f->b, .pool = "auto", .sleep_ms = 10};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    usleep(1500 * 1000); /* let the broker measure the service time */
    sl_pool_info p = find_pool(f->c, "auto");
    assert_true(p.recommended > 1); /* shown even with autoscale off */
    assert_int_equal(p.size, 1);
    assert_int_equal(sl_pool_autoscale(f->c, "auto", 1, 6, 1000, 1), SL_OK);
    uint64_t end = th_now_ms() + 5000;
    while (th_now_ms() < end && find_pool(f->c, "auto").size < 4)
        usleep(100 * 1000);
    p = find_pool(f->c, "auto");
    fprintf(stderr, "# autoscale: size %u (recommended %u) for 3000 x 10 ms within 1 s\n", p.size, p.recommended);
    assert_true(p.size >= 4 && p.size <= 6);
    assert_true(p.autoscale);
    for (int i = 0; i < 6; i++) {
        w[i].stop = 1;
        pthread_join(t[i], NULL);
    }
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_per_priority_each_sized),
        cmocka_unit_test(deadline_prevents_starvation),
        cmocka_unit_test(strict_order_without_deadlines),
        cmocka_unit_test(resize_under_load_doubles_throughput),
        cmocka_unit_test(members_are_told_their_share),
        cmocka_unit_test(level_and_pool_pause_and_resume),
        cmocka_unit_test(tag_rules_choose_the_level),
        cmocka_unit_test(explain_in_each_state),
        cmocka_unit_test(settings_survive_restart),
        cmocka_unit_test(autoscale_sizes_from_backlog),
    };
    th_seed();
    return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
