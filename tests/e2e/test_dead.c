/*
 * test_dead.c - dead letters end to end: `sluice dead list|peek|requeue|
 * purge` against the real sluiced, a requeue of 100,000 dead letters cut by
 * kill -9 (neither lost nor duplicated), and retention by count and by age.
 *
 * Dead letters are made two ways: through the broker (messages whose time to
 * live runs out), and, for the large and the aged sets, written beforehand
 * into the broker's data directory with the store's own functions (the
 * same code the broker buries with), which is what makes 100,000 of them, or
 * ones that died hours ago, quick to set up. Every check after that goes
 * through the running broker, or reads its LMDB files once it is stopped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "proc.h"
#include "store.h"

#define NS_PER_S 1000000000ULL

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* bury_many writes n dead letters into level of the data directory dir,
 * with ids from the store's counter, body "body-<id>", died at died_ns, in
 * transactions of 10,000. The broker must not be running. */
static void bury_many(const char *dir, unsigned level, unsigned n, uint64_t died_ns)
{
    store_cfg cfg = {.dir = dir, .levels = 3, .map_bytes = 1ULL << 30};
    store *s = NULL;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    for (unsigned i = 0; i < n; i++) {
        char body[32];
        uint64_t id = store_next_id(s), key;
        int len = snprintf(body, sizeof body, "body-%" PRIu64, id);
        store_rec rec = {.id = id, .enq_ns = died_ns, .cost = 1, .attempt = 5, .level = (uint8_t)level,
                         .tag = "bulk", .tag_len = 4, .body = body, .body_len = (uint32_t)len};
        assert_int_equal(store_append(s, &rec, &key), SL_OK);
        assert_int_equal(store_bury(s, level, key, "test: buried", died_ns), SL_OK);
        if (i % 10000 == 9999)
            assert_int_equal(store_commit(s), SL_OK);
    }
    assert_int_equal(store_commit(s), SL_OK);
    store_close(&s);
}

/* level_stats reads level's figures from the broker. */
static sl_level_stats level_stats(sl_client *c, unsigned level)
{
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_true(level < st.nlevels);
    return st.level[level];
}

/* wait_dead waits (up to 20 s) until the broker's dead letters of level
 * number want; returns the last count seen. */
static uint64_t wait_dead(sl_client *c, unsigned level, uint64_t want)
{
    uint64_t dead = 0, until = th_now_ms() + 20000;
    while (th_now_ms() < until && (dead = level_stats(c, level).dead) != want)
        usleep(20000);
    return dead;
}

/* ---- the commands, as an operator types them ---- */

static void sluice(const th_broker *b, char *out, size_t out_len, int want_status, ...)
{
    const char *argv[16] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    va_list ap;
    va_start(ap, want_status);
    for (const char *a; n < 15 && (a = va_arg(ap, const char *)); )
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    int st = th_run(argv, NULL, out, out_len);
    if (st != want_status)
        print_error("%s %s %s: exit %d, wanted %d; output: %s\n", argv[3], argv[4] ? argv[4] : "",
                    argv[5] ? argv[5] : "", st, want_status, out);
    assert_int_equal(st, want_status);
}

static void commands_list_peek_requeue_and_purge(void **state)
{
    (void)state;
    const char *const extra[] = {"--max-attempts", "1", NULL};
    th_fixture *f;
    assert_int_equal(th_fixture_start(extra, &f), SL_OK);
    /* three messages die of their time to live in level 1 (normal) */
    static const char odd[] = "line one\nline \"two\" \xc3\xa9\x01 end";
    const char *bodies[3] = {"hello", odd, "third"};
    uint64_t ids[3];
    for (int i = 0; i < 3; i++) {
        sl_put p = {.body = bodies[i], .body_len = strlen(bodies[i]), .level = 1, .tag = "orders",
                    .ttl_ms = 1};
        assert_int_equal(sl_send(f->c, &p, &ids[i]), SL_OK);
    }
    assert_int_equal(wait_dead(f->c, 1, 3), 3);

    char out[65536];
    sluice(&f->b, out, sizeof out, 0, "dead", "list", "normal", NULL);
    assert_non_null(strstr(out, "ATTEMPTS"));
    assert_non_null(strstr(out, "orders"));
    assert_non_null(strstr(out, "expired"));
    assert_non_null(strstr(out, "hello"));

    sluice(&f->b, out, sizeof out, 0, "dead", "list", "normal", "--json", NULL);
    assert_true(out[0] == '[');
    char key[64];
    snprintf(key, sizeof key, "{\"id\":%" PRIu64 ",", ids[0]);
    assert_non_null(strstr(out, key));
    assert_non_null(strstr(out, "\"tag\":\"orders\""));
    assert_non_null(strstr(out, "\"attempts\":"));
    assert_non_null(strstr(out, "\"when\":\""));
    assert_non_null(strstr(out, "\"reason\":\"expired"));
    assert_non_null(strstr(out, "\"body_preview\":\"hello\""));

    /* --limit and --after page through them */
    char after[24];
    snprintf(after, sizeof after, "%" PRIu64, ids[0]);
    sluice(&f->b, out, sizeof out, 0, "dead", "list", "1", "--after", after, "--limit", "1", "--json", NULL);
    snprintf(key, sizeof key, "{\"id\":%" PRIu64 ",", ids[1]);
    assert_non_null(strstr(out, key));
    snprintf(key, sizeof key, "{\"id\":%" PRIu64 ",", ids[2]);
    assert_null(strstr(out, key));

    /* peek: the whole body, byte for byte */
    char id1[24];
    snprintf(id1, sizeof id1, "%" PRIu64, ids[1]);
    sluice(&f->b, out, sizeof out, 0, "dead", "peek", id1, NULL);
    assert_string_equal(out, odd);

    /* requeue one by id to level 0: delivered again, attempt count fresh
     * (a plain number is an id when a dead letter has it) */
    sluice(&f->b, out, sizeof out, 0, "dead", "requeue", id1, "--to", "high", NULL);
    assert_int_equal(level_stats(f->c, 1).dead, 2);
    assert_int_equal(level_stats(f->c, 0).depth, 1);
    sl_client *cons = th_client(&f->b, 5000);
    unsigned levels[1] = {0};
    assert_int_equal(sl_subscribe(cons, "default", levels, 1, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(cons, 5000, &d), SL_OK);
    assert_int_equal(d->id, ids[1]);
    assert_int_equal(d->body_len, strlen(odd));
    assert_memory_equal(d->body, odd, strlen(odd));
    assert_int_equal(d->attempt, 1);
    /* given back with --max-attempts 1: a dead letter again, whose list row
     * counts the attempt it used */
    assert_int_equal(sl_nack(cons, d, 0), SL_OK);
    assert_int_equal(sl_flush(cons, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_close(&cons);
    assert_int_equal(wait_dead(f->c, 0, 1), 1);
    sluice(&f->b, out, sizeof out, 0, "dead", "list", "high", "--json", NULL);
    assert_non_null(strstr(out, "\"attempts\":1,"));

    /* purge: --older-than keeps the young ones, then all go */
    sluice(&f->b, out, sizeof out, 0, "dead", "purge", "normal", "--older-than", "3600", NULL);
    assert_non_null(strstr(out, "purged 0 "));
    assert_int_equal(level_stats(f->c, 1).dead, 2);
    sluice(&f->b, out, sizeof out, 0, "dead", "purge", "normal", "--limit", "1", "--json", NULL);
    assert_string_equal(out, "{\"purged\":1}\n");
    sluice(&f->b, out, sizeof out, 0, "dead", "purge", "normal", NULL);
    sl_level_stats ls = level_stats(f->c, 1);
    assert_int_equal(ls.dead, 0);
    assert_int_equal(ls.dead_purged, 2);
    assert_int_equal(ls.dead_requeued, 1);

    /* no level: every level's (test_exec has two levels'), with a LEVEL column */
    sluice(&f->b, out, sizeof out, 0, "dead", "list", NULL);
    assert_non_null(strstr(out, "LEVEL"));
    /* errors: unknown id (1), ambiguous number (2), bad level (2) */
    sluice(&f->b, out, sizeof out, 1, "dead", "peek", "999999", NULL);
    sluice(&f->b, out, sizeof out, 2, "dead", "list", "nosuch", NULL);
    sluice(&f->b, out, sizeof out, 1, "dead", "requeue", "id:999999", NULL);
    sluice(&f->b, out, sizeof out, 2, "dead", "purge", "normal", "--older-than", "soon", NULL);
    sluice(&f->b, out, sizeof out, 0, "dead", "--help", NULL);
    assert_non_null(strstr(out, "sluice dead requeue LEVEL|ID"));

    /* the library refuses what the broker would */
    sl_dead_letter page[SL_DEAD_PAGE];
    unsigned n;
    assert_int_equal(sl_dead_list(f->c, 7, 0, 0, page, &n), SL_ENOLEVEL);
    sl_dead_message m;
    assert_int_equal(sl_dead_peek(f->c, 424242, &m), SL_ENOTFOUND);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* ---- kill -9 in the middle of a requeue of 100,000 ---- */

#define MANY 100000u

/* count_ids reads, with the broker stopped, every record of q.<level> and
 * dead.<level> and counts how often each id 1..MANY occurs in either. */
static void count_ids(const char *dir, unsigned level, uint8_t *seen, uint64_t *queued, uint64_t *dead)
{
    store_cfg cfg = {.dir = dir, .levels = 3, .map_bytes = 1ULL << 30};
    store *s = NULL;
    store_rec rec;
    uint64_t key = 0, id = 0;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    memset(seen, 0, MANY + 1);
    *queued = *dead = 0;
    while (store_seek(s, level, key, &key, &rec) == SL_OK) {
        assert_true(rec.id >= 1 && rec.id <= MANY);
        assert_int_equal(rec.attempt, 0); /* revived */
        seen[rec.id]++;
        (*queued)++;
        key++;
    }
    while (store_dead_next(s, level, id, &id, &rec) == SL_OK) {
        assert_true(id >= 1 && id <= MANY);
        seen[id]++;
        (*dead)++;
    }
    store_close(&s);
}

/* A publisher beside a long requeue: how long its confirmations wait shows
 * how long the broker's loop is held by one chunk. */
typedef struct beside {
    const th_broker *b;
    atomic_bool stop;
    uint64_t sent, worst_ms;
    int rc;
} beside;

static void *publish_beside(void *arg)
{
    beside *x = arg;
    sl_client *c = th_client(x->b, 10000);
    while (c && !atomic_load(&x->stop) && x->rc == SL_OK) {
        sl_put p = {.body = "beside", .body_len = 6, .level = 0};
        uint64_t id, t0 = th_now_ms();
        x->rc = sl_send(c, &p, &id);
        uint64_t took = th_now_ms() - t0;
        x->worst_ms = took > x->worst_ms ? took : x->worst_ms;
        x->sent++;
        usleep(1000);
    }
    sl_close(&c);
    return NULL;
}

static void kill9_mid_requeue_loses_and_duplicates_nothing(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), SL_OK);
    bury_many(b.data, 1, MANY, wall_ns());
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(level_stats(c, 1).dead, MANY);

    /* sluice dead requeue normal, killed under it once some have moved */
    char log[400];
    snprintf(log, sizeof log, "%s/requeue.out", b.dir);
    const char *argv[] = {th_bin("sluice"), "-b", b.endpoint, "dead", "requeue", "normal", NULL};
    proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true, .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "requeue", &spec), 0);
    uint64_t dead = MANY, until = th_now_ms() + 60000;
    while (th_now_ms() < until && (dead = level_stats(c, 1).dead) > MANY / 4 * 3)
        usleep(2000);
    assert_true(dead < MANY);
    th_broker_kill9(&b);
    sl_close(&c);
    proc_wait(&p, 20000);
    proc_kill(&p);

    uint8_t *seen = malloc(MANY + 1);
    uint64_t queued, left;
    assert_non_null(seen);
    count_ids(b.data, 1, seen, &queued, &left);
    print_message("killed with %" PRIu64 " requeued, %" PRIu64 " still dead\n", queued, left);
    for (unsigned id = 1; id <= MANY; id++)
        if (seen[id] != 1) {
            print_error("message %u is in %u places\n", id, seen[id]);
            fail();
        }
    assert_int_equal(queued + left, MANY);
    assert_true(queued > 0 && left > 0);
    /* the command said how many it had requeued before it lost the broker:
     * every chunk it counted is in the store, and at most the chunk whose
     * answer was lost besides */
    static char said[1 << 14];
    th_read_file(log, said, sizeof said);
    const char *at = strstr(said, "stopped after requeuing ");
    if (!at)
        fail_msg("the interrupted requeue did not say how many moved:\n%s", said);
    uint64_t told = strtoull(at + strlen("stopped after requeuing "), NULL, 10);
    print_message("the command said %" PRIu64 " requeued, the store holds %" PRIu64 "\n", told, queued);
    assert_true(told <= queued && queued <= told + 1000);

    /* running it again finishes the job */
    assert_int_equal(th_broker_start(&b), SL_OK);
    c = th_client(&b, 5000);
    char out[256];
    beside x = {.b = &b};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, publish_beside, &x), 0);
    uint64_t t0 = th_now_ms();
    sluice(&b, out, sizeof out, 0, "dead", "requeue", "normal", NULL);
    uint64_t took_ms = th_now_ms() - t0, chunks = (left + 999) / 1000;
    atomic_store(&x.stop, true);
    pthread_join(th, NULL);
    print_message("requeued the other %" PRIu64 " in %" PRIu64 " ms: %.1f ms per chunk of 1000, commit and round "
                  "trip included; %" PRIu64 " publishes beside it, the slowest confirmed in %" PRIu64 " ms\n",
                  left, took_ms, (double)took_ms / (double)(chunks ? chunks : 1), x.sent, x.worst_ms);
    /* the loop served others between chunks (a generous floor, not a rate) */
    assert_int_equal(x.rc, SL_OK);
    assert_true(x.sent > 0);
    assert_true(x.worst_ms < 5000);
    sl_level_stats ls = level_stats(c, 1);
    assert_int_equal(ls.dead, 0);
    assert_int_equal(ls.depth, MANY);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    count_ids(b.data, 1, seen, &queued, &left);
    assert_int_equal(queued, MANY);
    assert_int_equal(left, 0);
    for (unsigned id = 1; id <= MANY; id++)
        assert_int_equal(seen[id], 1);
    free(seen);
    th_broker_fini(&b);
}

/* Ctrl-C in the middle of a requeue stops it between chunks and says how
 * many moved: exactly those now back in their level. */
static void interrupted_requeue_says_how_many_moved(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), SL_OK);
    bury_many(b.data, 1, MANY, wall_ns());
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    char out[400], err[400];
    snprintf(out, sizeof out, "%s/requeue.out", b.dir);
    snprintf(err, sizeof err, "%s/requeue.err", b.dir);
    const char *argv[] = {th_bin("sluice"), "-b", b.endpoint, "dead", "requeue", "normal", NULL};
    proc_spec spec = {.argv = argv, .out_path = out, .err_path = err, .truncate = true, .null_stdin = true,
                      .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "requeue", &spec), 0);
    uint64_t dead = MANY, until = th_now_ms() + 60000;
    while (th_now_ms() < until && (dead = level_stats(c, 1).dead) > MANY / 4 * 3)
        usleep(2000);
    assert_true(dead < MANY);
    assert_int_equal(kill(p.pid, SIGINT), 0);
    assert_int_equal(proc_wait(&p, 20000), 1);
    static char said[1 << 14];
    th_read_file(err, said, sizeof said);
    const char *at = strstr(said, "interrupted after requeuing ");
    if (!at)
        fail_msg("no count after Ctrl-C:\n%s", said);
    uint64_t told = strtoull(at + strlen("interrupted after requeuing "), NULL, 10);
    sl_level_stats ls = level_stats(c, 1);
    print_message("interrupted with %" PRIu64 " requeued, %" PRIu64 " still dead\n", told, ls.dead);
    assert_true(told > 0 && told < MANY);
    assert_int_equal(ls.depth, told);
    assert_int_equal(ls.dead + told, MANY);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void purge_of_many_goes_by_chunks(void **state)
{
    (void)state;
    enum { N = 20000 };
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), SL_OK);
    bury_many(b.data, 2, N, wall_ns() - 10 * NS_PER_S);
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    char out[256];
    /* --older-than 60 spares them all, looking at every one */
    sluice(&b, out, sizeof out, 0, "dead", "purge", "low", "--older-than", "60", NULL);
    assert_string_equal(out, "purged 0 dead letters of level low\n");
    uint64_t t0 = th_now_ms();
    sluice(&b, out, sizeof out, 0, "dead", "purge", "low", "--older-than", "5", NULL);
    uint64_t took_ms = th_now_ms() - t0;
    print_message("purged %u in %" PRIu64 " ms: %.1f ms per chunk of 1000, commit and round trip included\n", N,
                  took_ms, (double)took_ms / (N / 1000));
    assert_string_equal(out, "purged 20000 dead letters of level low\n");
    sl_level_stats ls = level_stats(c, 2);
    assert_int_equal(ls.dead, 0);
    assert_int_equal(ls.dead_purged, N);
    sl_close(&c);
    th_broker_fini(&b);
}

/* ---- retention ---- */

static void retention_keeps_the_newest_and_counts_what_it_drops(void **state)
{
    (void)state;
    const char *const extra[] = {"--dead-max-messages", "30", "--dead-max-age", "3600", NULL};
    th_broker b;
    assert_int_equal(th_broker_init(&b, extra), SL_OK);
    uint64_t now = wall_ns();
    bury_many(b.data, 0, 20, now - 7200 * NS_PER_S); /* ids 1..20, died two hours ago */
    bury_many(b.data, 2, 40, now);                   /* ids 21..60 */
    bury_many(b.data, 0, 10, now);                   /* ids 61..70 */
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    uint64_t total = 0, until = th_now_ms() + 20000;
    sl_stats st;
    while (th_now_ms() < until) {
        assert_int_equal(sl_stats_get(c, &st), SL_OK);
        total = st.level[0].dead + st.level[1].dead + st.level[2].dead;
        if (total == 30)
            break;
        usleep(20000);
    }
    assert_int_equal(total, 30);
    assert_int_equal(st.level[0].dead_dropped + st.level[2].dead_dropped, 40);
    /* the newest 30 are left: ids 41..70 */
    sl_dead_letter page[SL_DEAD_PAGE];
    unsigned n;
    assert_int_equal(sl_dead_list(c, 2, 0, 0, page, &n), SL_OK);
    assert_int_equal(n, 20);
    assert_int_equal(page[0].id, 41);
    assert_int_equal(sl_dead_list(c, 0, 0, 0, page, &n), SL_OK);
    assert_int_equal(n, 10);
    assert_int_equal(page[0].id, 61);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    char text[65536];
    th_read_file(b.log, text, sizeof text);
    assert_non_null(strstr(text, "retention dropped"));
    th_broker_fini(&b);
}

static void retention_by_age_drops_only_the_old(void **state)
{
    (void)state;
    const char *const extra[] = {"--dead-max-age", "3600", NULL};
    th_broker b;
    assert_int_equal(th_broker_init(&b, extra), SL_OK);
    uint64_t now = wall_ns();
    bury_many(b.data, 1, 5, now);                    /* ids 1..5: young, yet the smallest */
    bury_many(b.data, 1, 25, now - 7200 * NS_PER_S); /* ids 6..30 */
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(wait_dead(c, 1, 5), 5);
    sl_dead_letter page[SL_DEAD_PAGE];
    unsigned n;
    assert_int_equal(sl_dead_list(c, 1, 0, 0, page, &n), SL_OK);
    assert_int_equal(n, 5);
    assert_int_equal(page[4].id, 5);
    assert_int_equal(level_stats(c, 1).dead_dropped, 25);
    sl_close(&c);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(commands_list_peek_requeue_and_purge, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(interrupted_requeue_says_how_many_moved, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(kill9_mid_requeue_loses_and_duplicates_nothing, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(purge_of_many_goes_by_chunks, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(retention_keeps_the_newest_and_counts_what_it_drops, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(retention_by_age_drops_only_the_old, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    th_timeout_s = 300; /* 100,000 dead letters written, requeued and read back twice, sanitized, on a busy machine */
    return cmocka_run_group_tests_name("dead", tests, NULL, NULL);
}
