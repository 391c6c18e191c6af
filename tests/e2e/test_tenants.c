/*
 * test_tenants.c - levels served fair by tag in the real sluiced: the
 * deficit round robin's exact order across tags (FIFO within each, the
 * untagged messages one tenant of their own), strict precedence of levels
 * kept with a fair level below a FIFO one, a returned message going back to
 * the head of its own tag, a delayed return back at the head of its own tag
 * and a requeued dead letter at the tail of its own, the layout change
 * refused while a level holds messages, and the fair setting and each tag's
 * order across a restart.
 *
 * The consumer has credit for the whole backlog (or takes one at a time),
 * so the broker releases in the order it picks; every assert is on that
 * order. The one wait: a delayed return due in 100 ms is given 2 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "queue.h"
#include "sluice.h"
#include "store.h"
#include "store_fixture.h"

#define MAX_GOT 128

typedef struct got {
    char tag[16];
    char body[16];
    unsigned level;
} got;

static void put(sl_client *c, int level, const char *tag, const char *body)
{
    sl_put m = {.body = body, .body_len = strlen(body), .level = level, .tag = tag};
    assert_int_equal(sl_send(c, &m, NULL), SL_OK);
}

/* take receives up to want deliveries into g (acking them when ack), within
 * a generous limit; returns how many. */
static unsigned take(sl_client *c, got *g, unsigned want, int ack)
{
    unsigned n = 0;
    uint64_t end = th_now_ms() + 20000;
    while (n < want && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        snprintf(g[n].tag, sizeof g[n].tag, "%s", d->tag);
        snprintf(g[n].body, sizeof g[n].body, "%.*s", (int)d->body_len, (const char *)d->body);
        g[n].level = d->level;
        n++;
        if (ack)
            assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    return n;
}

static void round_robin_across_tags(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char body[16];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    for (int i = 0; i < 20; i++) { /* a noisy tenant first, then two quiet ones */
        snprintf(body, sizeof body, "a%d", i);
        put(f->c, 1, "acme", body);
    }
    uint64_t b2 = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof body, "b%d", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1, .tag = "bolt"};
        assert_int_equal(sl_send(f->c, &m, &b2), SL_OK);
        snprintf(body, sizeof body, "u%d", i);
        put(f->c, 1, NULL, body);
    }
    /* explain: its place is in its tag's queue (2 of bolt ahead), not behind acme's 20 */
    sl_explain_info ex;
    assert_int_equal(sl_explain(f->c, b2, &ex), SL_OK);
    fprintf(stderr, "# explain: %s, position %llu: %s\n", ex.state, (unsigned long long)ex.position, ex.why);
    assert_string_equal(ex.state, "ready");
    assert_int_equal(ex.position, 2);
    assert_non_null(strstr(ex.why, "tag 'bolt'"));
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 26), SL_OK);
    got g[MAX_GOT];
    assert_int_equal(take(c, g, 26, 1), 26);
    /* one each in turn while all three wait, then the rest of acme */
    const char *want[9] = {"a0", "b0", "u0", "a1", "b1", "u1", "a2", "b2", "u2"};
    for (int i = 0; i < 9; i++) {
        fprintf(stderr, "# %d: %s (tag '%s')\n", i, g[i].body, g[i].tag);
        assert_string_equal(g[i].body, want[i]);
    }
    assert_string_equal(g[0].tag, "acme");
    assert_string_equal(g[2].tag, "");
    for (int i = 9; i < 26; i++) {
        snprintf(body, sizeof body, "a%d", i - 6);
        assert_string_equal(g[i].body, body);
    }
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void levels_keep_precedence(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    put(f->c, 1, "acme", "a0");
    put(f->c, 1, "bolt", "b0");
    put(f->c, 2, NULL, "low");
    put(f->c, 0, "acme", "top0");
    put(f->c, 0, "bolt", "top1");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 5), SL_OK);
    got g[MAX_GOT];
    assert_int_equal(take(c, g, 5, 1), 5);
    const char *want[5] = {"top0", "top1", "a0", "b0", "low"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(g[i].body, want[i]);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void returned_goes_back_to_its_tag(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    put(f->c, 1, "acme", "a0");
    put(f->c, 1, "acme", "a1");
    put(f->c, 1, "bolt", "b0");
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 1), SL_OK);
    sl_delivery *d = NULL;
    uint64_t end = th_now_ms() + 20000;
    while (!d && th_now_ms() < end)
        sl_recv(c, 100, &d);
    assert_non_null(d);
    assert_string_equal((const char *)d->body, "a0");
    assert_int_equal(sl_nack(c, d, 0), SL_OK); /* back at once, at the head of acme */
    sl_delivery_free(&d);
    got g[MAX_GOT];
    assert_int_equal(take(c, g, 3, 1), 3);
    /* acme's turn ended with a0; bolt next, then acme from its head */
    assert_string_equal(g[0].body, "b0");
    assert_string_equal(g[1].body, "a0");
    assert_string_equal(g[2].body, "a1");
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* recv1 waits (generously) for one delivery and checks its body. */
static sl_delivery *recv1(sl_client *c, const char *body)
{
    sl_delivery *d = NULL;
    uint64_t end = th_now_ms() + 20000;
    while (!d && th_now_ms() < end)
        sl_recv(c, 100, &d);
    assert_non_null(d);
    fprintf(stderr, "# got %s (tag '%s')\n", (const char *)d->body, d->tag);
    assert_string_equal((const char *)d->body, body);
    return d;
}

static void delayed_and_requeued_find_their_tag(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    put(f->c, 1, "acme", "a0");
    put(f->c, 1, "acme", "a1");
    put(f->c, 1, "acme", "a2");
    put(f->c, 1, "bolt", "b0");
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 1), SL_OK);
    sl_delivery *d = recv1(c, "a0");
    assert_int_equal(sl_nack(c, d, 100), SL_OK); /* back in 100 ms, at the head of acme */
    sl_delivery_free(&d);
    d = recv1(c, "b0");
    assert_int_equal(sl_reject(c, d, "test"), SL_OK); /* a dead letter */
    sl_delivery_free(&d);
    d = recv1(c, "a1");
    uint64_t until = th_now_ms() + 2000; /* hold a1 until a0 has surely come due */
    while (th_now_ms() < until) {
        sl_delivery *none = NULL;
        assert_int_not_equal(sl_recv(c, 100, &none), SL_OK); /* credit 1: nothing more meanwhile */
    }
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    d = recv1(c, "a0"); /* before a2: the head of its own tag */
    assert_string_equal(d->tag, "acme");
    assert_true(d->attempt == 2);
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    d = recv1(c, "a2");
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    uint64_t moved = 0, after = 0;
    assert_int_equal(sl_dead_requeue(f->c, 1, SL_SAME_LEVEL, 10, &moved, &after), SL_OK);
    assert_int_equal(moved, 1);
    d = recv1(c, "b0");
    assert_string_equal(d->tag, "bolt");
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    put(f->c, 1, "bolt", "b1"); /* the broker serves on */
    d = recv1(c, "b1");
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void layout_changes_only_when_empty(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    put(f->c, 1, "acme", "a0");
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_ESTATE);
    /* level 2 served FIFO first, so that its cursor has moved on (by a
     * consumer of level 2 only: the default pool still serves every level) */
    got g[MAX_GOT];
    unsigned two = 2;
    put(f->c, 2, "acme", "p0");
    put(f->c, 2, "acme", "p1");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, &two, 1, 2), SL_OK);
    assert_int_equal(take(c, g, 2, 1), 2);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_close(&c);
    assert_int_equal(sl_level_fair(f->c, 2, 1), SL_OK);
    put(f->c, 2, "acme", "x");
    assert_int_equal(sl_level_fair(f->c, 2, 0), SL_ESTATE);
    assert_int_equal(sl_level_fair(f->c, 99, 1), SL_ENOLEVEL);
    /* the broker serves on: both messages come out */
    c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 2), SL_OK);
    assert_int_equal(take(c, g, 2, 1), 2);
    assert_int_equal(sl_flush(c, 5000), SL_OK); /* the acks taken by the broker: nothing in flight */
    sl_close(&c);
    /* empty again: back to FIFO, and FIFO order holds */
    assert_int_equal(sl_level_fair(f->c, 2, 0), SL_OK);
    put(f->c, 2, "acme", "f0");
    put(f->c, 2, "bolt", "f1");
    put(f->c, 2, "acme", "f2");
    c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, &two, 1, 3), SL_OK);
    assert_int_equal(take(c, g, 3, 1), 3);
    assert_string_equal(g[0].body, "f0");
    assert_string_equal(g[1].body, "f1");
    assert_string_equal(g[2].body, "f2");
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void restart_keeps_fair_order(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char body[16];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    for (int i = 0; i < 6; i++) {
        snprintf(body, sizeof body, "a%d", i);
        put(f->c, 1, "acme", body);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof body, "b%d", i);
        put(f->c, 1, "bolt", body);
    }
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_non_null(f->c);
    /* still fair: a new tag published after the restart joins the turns */
    put(f->c, 1, "cask", "c0");
    assert_int_equal(sl_level_fair(f->c, 1, 0), SL_ESTATE); /* and still holding messages */
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 10), SL_OK);
    got g[MAX_GOT];
    assert_int_equal(take(c, g, 9, 1), 9);
    const char *want[9] = {"a0", "b0", "c0", "a1", "b1", "a2", "a3", "a4", "a5"};
    for (int i = 0; i < 9; i++) {
        fprintf(stderr, "# after restart %d: %s\n", i, g[i].body);
        assert_string_equal(g[i].body, want[i]);
    }
    /* and a new publish after all that still finds its tag's place */
    put(f->c, 1, "acme", "a6");
    assert_int_equal(take(c, g, 1, 1), 1);
    assert_string_equal(g[0].body, "a6");
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Publishes reaching a consumer that is already waiting: each head is
 * appended in the pass that would deliver it, so its tag waits for the
 * commit and comes back after it. Nothing is lost, each tag stays FIFO. */
static void live_publishes_all_arrive_in_tag_order(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char body[16];
    const char *tags[4] = {"acme", "bolt", "cask", NULL};
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, 200), SL_OK);
    for (int i = 0; i < 120; i++) {
        snprintf(body, sizeof body, "%d:%d", i % 4, i / 4);
        put(f->c, 1, tags[i % 4], body);
    }
    got g[MAX_GOT];
    assert_int_equal(take(c, g, 120, 1), 120);
    int next[4] = {0};
    for (int i = 0; i < 120; i++) {
        int t, k;
        assert_int_equal(sscanf(g[i].body, "%d:%d", &t, &k), 2);
        assert_int_equal(k, next[t]); /* FIFO within each tag */
        next[t]++;
        assert_string_equal(g[i].tag, tags[t] ? tags[t] : "");
    }
    for (int t = 0; t < 4; t++)
        assert_int_equal(next[t], 30);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

#define MANY_TAGS 100000u

static double secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The broker's own structures, without a broker: 100,000 tags with one
 * message each waiting in one fair level, their memory, and the rebuild at
 * open (two seeks per tag) with its time printed. */
static void memory_per_waiting_tag(void **state)
{
    (void)state;
    char tmp[] = "/tmp/sluice-tenants-XXXXXX", dir[64], tag[16], body[16];
    assert_non_null(mkdtemp(tmp));
    snprintf(dir, sizeof dir, "%s/data", tmp);
    store *st = NULL;
    queue q;
    sfix_queue_open(dir, 512ull << 20, &st, &q);
    assert_int_equal(queue_fair_set(&q, 0, 1, 0), SL_OK);
    double t0 = secs();
    for (unsigned i = 0; i < MANY_TAGS; i++) {
        snprintf(tag, sizeof tag, "t%06u", i);
        snprintf(body, sizeof body, "m%u", i);
        store_rec rec = {.id = queue_next_id(&q), .enq_ns = 1000 + i, .cost = 1, .tag = tag,
                         .tag_len = (uint32_t)strlen(tag), .body = body, .body_len = (uint32_t)strlen(body)};
        assert_int_equal(queue_append(&q, &rec), SL_OK);
        if (i % 10000 == 9999)
            assert_int_equal(store_commit(st), SL_OK);
    }
    uint32_t tenants = 0;
    size_t bytes = queue_fair_bytes(&q, 0, &tenants);
    fprintf(stderr, "# %u waiting tags appended in %.2f s: %zu bytes, %.1f per tag (bound 256)\n", tenants,
            secs() - t0, bytes, (double)bytes / tenants);
    assert_int_equal(tenants, MANY_TAGS);
    assert_true(bytes <= 256ull * tenants);
    queue_close(&q);
    store_close(&st);
    t0 = secs();
    sfix_queue_open(dir, 512ull << 20, &st, &q);
    assert_int_equal(queue_fair_set(&q, 0, 1, 1), SL_OK); /* as settings_load does */
    double rebuild = secs() - t0;
    bytes = queue_fair_bytes(&q, 0, &tenants);
    fprintf(stderr, "# reopened: %u waiting tags rebuilt in %.2f s: %zu bytes, %.1f per tag\n", tenants, rebuild,
            bytes, (double)bytes / tenants);
    assert_int_equal(tenants, MANY_TAGS);
    assert_true(bytes <= 256ull * tenants);
    uint64_t key;
    store_rec rec;
    for (unsigned i = 0; i < MANY_TAGS; i++) { /* one turn each, in tag order; all settled */
        assert_int_equal(queue_take(&q, 0, &key, &rec), SL_OK);
        snprintf(body, sizeof body, "m%u", i);
        assert_int_equal(rec.body_len, strlen(body));
        assert_memory_equal(rec.body, body, rec.body_len);
        assert_int_equal(queue_settle(&q, 0, key), SL_OK);
    }
    /* each tag left the turns with its last take and was forgotten when
     * settled: a new tag is served at once, and the memory went with them */
    store_rec late = {.id = queue_next_id(&q), .enq_ns = 1, .cost = 1, .tag = "late", .tag_len = 4,
                      .body = "late", .body_len = 4};
    assert_int_equal(queue_append(&q, &late), SL_OK);
    assert_int_equal(store_commit(st), SL_OK);
    int rc = SL_ENOTFOUND;
    t0 = secs();
    for (unsigned tries = 0; tries < 2 && rc == SL_ENOTFOUND; tries++)
        rc = queue_take(&q, 0, &key, &rec);
    assert_int_equal(rc, SL_OK);
    assert_memory_equal(rec.body, "late", 4);
    bytes = queue_fair_bytes(&q, 0, &tenants);
    fprintf(stderr, "# 100,000 tags drained; a new one served in %.2f s: %u left, %zu bytes\n", secs() - t0, tenants,
            bytes);
    assert_true(tenants <= 1);
    assert_true(bytes < 16384);
    queue_close(&q);
    store_close(&st);
    th_rmrf(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_robin_across_tags),
        cmocka_unit_test(levels_keep_precedence),
        cmocka_unit_test(returned_goes_back_to_its_tag),
        cmocka_unit_test(delayed_and_requeued_find_their_tag),
        cmocka_unit_test(layout_changes_only_when_empty),
        cmocka_unit_test(restart_keeps_fair_order),
        cmocka_unit_test(live_publishes_all_arrive_in_tag_order),
        cmocka_unit_test(memory_per_waiting_tag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
