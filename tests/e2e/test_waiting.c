/*
 * test_waiting.c - the operations on a level's waiting messages end to end:
 * `sluice peek|delete|purge|move` against the real sluiced, in FIFO levels
 * and levels served fair by tag, with a message out with a consumer beside
 * them (left alone, and back in its level when given back), the figures
 * right afterwards; and a move of 100,000 cut by kill -9: every message in
 * exactly one level, and the move run again finishing the job.
 *
 * The large set is written beforehand into the broker's data directory with
 * the store's own functions (as test_dead does), the rest through the
 * broker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
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

static sl_level_stats level_stats(sl_client *c, unsigned level)
{
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_true(level < st.nlevels);
    return st.level[level];
}

/* sluice runs the CLI against b with the arguments after want_status
 * (NULL-ended) and checks its exit status; its stdout is in out. */
static void sluice(const th_broker *b, char *out, size_t out_len, int want_status, ...)
{
    const char *argv[20] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    va_list ap;
    va_start(ap, want_status);
    for (const char *a; n < 19 && (a = va_arg(ap, const char *));)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    int st = th_run(argv, NULL, out, out_len);
    if (st != want_status)
        print_error("%s %s %s: exit %d, wanted %d; output: %s\n", argv[3], argv[4] ? argv[4] : "",
                    argv[5] ? argv[5] : "", st, want_status, out);
    assert_int_equal(st, want_status);
}

static uint64_t put(sl_client *c, unsigned level, const char *tag, const char *body, uint64_t ttl_ms)
{
    uint64_t id;
    sl_put p = {.body = body, .body_len = strlen(body), .level = (int)level, .tag = tag, .ttl_ms = ttl_ms};
    assert_int_equal(sl_send(c, &p, &id), SL_OK);
    return id;
}

/* peek_ids reads level's waiting messages (of tag, when not NULL) through
 * the library, every page, into ids; returns how many. */
static unsigned peek_ids(sl_client *c, unsigned level, const char *tag, uint64_t *ids, unsigned max)
{
    unsigned got = 0;
    uint64_t after = 0;
    for (int pages = 0; pages < 1000; pages++) {
        sl_waiting page[SL_MSG_PAGE];
        unsigned n;
        assert_int_equal(sl_msg_peek(c, level, tag, after, 5, page, &n, &after), SL_OK);
        for (unsigned i = 0; i < n && got < max; i++)
            ids[got++] = page[i].id;
        if (!after)
            break;
    }
    return got;
}

/* consumer holds one delivery of level (credit 1): out with a consumer. */
static sl_delivery *hold_one(const th_broker *b, sl_client **cc, unsigned level)
{
    *cc = th_client(b, 5000);
    assert_int_equal(sl_set_limit(*cc, 1), SL_OK); /* given back, it is not delivered to it again */
    assert_int_equal(sl_subscribe(*cc, "holder", &level, 1, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(*cc, 5000, &d), SL_OK);
    assert_non_null(d);
    return d;
}

static void peek_reads_without_taking_and_skips_the_leased(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), SL_OK);
    uint64_t a1 = put(f->c, 1, "a", "first", 0), a2 = put(f->c, 1, "a", "second", 0);
    uint64_t b1 = put(f->c, 1, "b", "x\x1b[31my\x07z", 0), a3 = put(f->c, 1, "a", "third", 0);
    sl_client *cc;
    sl_delivery *held = hold_one(&f->b, &cc, 1); /* the head, a1, is out with a consumer */
    assert_int_equal(held->id, a1);

    uint64_t ids[16];
    assert_int_equal(peek_ids(f->c, 1, NULL, ids, 16), 3);
    assert_int_equal(ids[0], a2);
    assert_int_equal(ids[1], b1);
    assert_int_equal(ids[2], a3);
    assert_int_equal(peek_ids(f->c, 1, "a", ids, 16), 2); /* a FIFO level: the tag compared */
    assert_int_equal(ids[0], a2);
    assert_int_equal(ids[1], a3);
    assert_int_equal(peek_ids(f->c, 1, "nobody", ids, 16), 0);
    sl_level_stats ls = level_stats(f->c, 1);
    assert_int_equal(ls.depth, 3); /* nothing taken */
    assert_int_equal(ls.inflight, 1);

    /* the CLI: a table with every column, the control bytes escaped, and --json */
    char out[8192], id[32];
    sluice(&f->b, out, sizeof out, 0, "peek", "normal", NULL);
    assert_non_null(strstr(out, "ATTEMPTS"));
    assert_non_null(strstr(out, "x\\e[31my\\x07z"));
    assert_null(strchr(out, '\x1b'));
    snprintf(id, sizeof id, "%" PRIu64, a1);
    assert_null(strstr(out, "first")); /* the leased one is not waiting */
    sluice(&f->b, out, sizeof out, 0, "peek", "normal", "--tag", "b", "--json", NULL);
    snprintf(id, sizeof id, "{\"id\":%" PRIu64 ",", b1);
    assert_non_null(strstr(out, id));
    assert_non_null(strstr(out, "\"level\":\"normal\",\"tag\":\"b\",\"attempts\":0,\"age_ms\":"));
    assert_non_null(strstr(out, "\"body_preview\":\"x\\\\e[31my\\\\x07z\""));
    sluice(&f->b, out, sizeof out, 0, "peek", "normal", "--limit", "1", NULL);
    assert_non_null(strstr(out, "second"));
    assert_null(strstr(out, "third"));
    sluice(&f->b, out, sizeof out, 2, "peek", NULL);                     /* no level */
    sluice(&f->b, out, sizeof out, 2, "peek", "nowhere", NULL);          /* an unknown level */

    /* peek in a level served fair by tag: tag by tag, the tag's run only */
    assert_int_equal(sl_level_fair(f->c, 2, 1), SL_OK);
    uint64_t x1 = put(f->c, 2, "x", "1", 0), y1 = put(f->c, 2, "y", "2", 0), x2 = put(f->c, 2, "x", "3", 0);
    assert_int_equal(peek_ids(f->c, 2, "x", ids, 16), 2);
    assert_int_equal(ids[0], x1);
    assert_int_equal(ids[1], x2);
    assert_int_equal(peek_ids(f->c, 2, NULL, ids, 16), 3);
    assert_int_equal(ids[2], y1);
    sl_delivery_free(&held);
    sl_close(&cc);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void delete_purge_and_move_leave_the_leased_alone(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), SL_OK);
    char out[8192];
    uint64_t held_id = put(f->c, 1, "a", "held", 0);
    uint64_t ids[8];
    for (int i = 0; i < 8; i++)
        ids[i] = put(f->c, 1, i % 2 ? "odd" : "even", "m", i == 7 ? 600000 : 0);
    uint64_t later = 0;
    sl_put p = {.body = "later", .body_len = 5, .level = 1, .delay_ms = 600000};
    assert_int_equal(sl_send(f->c, &p, &later), SL_OK);
    sl_client *cc;
    sl_delivery *held = hold_one(&f->b, &cc, 1);
    assert_int_equal(held->id, held_id);

    /* delete: the leased one refused, a waiting one and a delayed one deleted */
    char arg[32];
    snprintf(arg, sizeof arg, "%" PRIu64, held_id);
    sluice(&f->b, out, sizeof out, 1, "delete", arg, NULL);
    unsigned level = 9;
    assert_int_equal(sl_msg_delete(f->c, held_id, &level), SL_ESTATE);
    assert_int_equal(sl_msg_delete(f->c, ids[0], &level), SL_OK);
    assert_int_equal(level, 1);
    assert_int_equal(sl_msg_delete(f->c, ids[0], &level), SL_ENOTFOUND);
    snprintf(arg, sizeof arg, "%" PRIu64, later);
    sluice(&f->b, out, sizeof out, 0, "delete", arg, NULL);
    assert_non_null(strstr(out, "deleted message"));
    sl_level_stats ls = level_stats(f->c, 1);
    assert_int_equal(ls.depth, 7);
    assert_int_equal(ls.delayed, 0);
    assert_int_equal(ls.inflight, 1);

    /* purge: a dry run counts, a tag's go, the leased one stays out */
    sluice(&f->b, out, sizeof out, 0, "purge", "normal", "--tag", "even", "--dry-run", NULL);
    assert_non_null(strstr(out, "would purge 3 waiting messages"));
    assert_int_equal(level_stats(f->c, 1).depth, 7);
    sluice(&f->b, out, sizeof out, 0, "purge", "normal", "--tag", "even", "--json", NULL);
    assert_non_null(strstr(out, "\"purged\":3"));
    ls = level_stats(f->c, 1);
    assert_int_equal(ls.depth, 4);
    assert_int_equal(ls.inflight, 1);
    sluice(&f->b, out, sizeof out, 0, "purge", "normal", "--older-than", "3600", NULL);
    assert_non_null(strstr(out, "purged 0 waiting messages"));

    /* move: the odd ones to low, in their order, keeping attempts and their
     * time to live; the leased one left alone, and said so */
    sluice(&f->b, out, sizeof out, 0, "move", "normal", "--to", "low", NULL);
    assert_non_null(strstr(out, "moved 4 waiting messages of level normal to level low"));
    assert_non_null(strstr(out, "left 1 in flight alone"));
    ls = level_stats(f->c, 1);
    assert_int_equal(ls.depth, 0);
    assert_int_equal(ls.oldest_ms, 0);
    assert_int_equal(level_stats(f->c, 2).depth, 4);
    uint64_t got[8];
    assert_int_equal(peek_ids(f->c, 2, NULL, got, 8), 4);
    assert_int_equal(got[0], ids[1]);
    assert_int_equal(got[3], ids[7]);
    sl_explain_info ex;
    assert_int_equal(sl_explain(f->c, ids[7], &ex), SL_OK);
    assert_string_equal(ex.state, "ready");
    assert_int_equal(ex.level, 2);

    /* the leased one given back: ready again in normal, where a second run finds it */
    assert_int_equal(sl_nack(cc, held, 0), SL_OK);
    assert_int_equal(sl_flush(cc, 5000), SL_OK);
    uint64_t until = th_now_ms() + 5000;
    while (level_stats(f->c, 1).depth != 1 && th_now_ms() < until)
        usleep(10000);
    assert_int_equal(level_stats(f->c, 1).depth, 1);
    sl_delivery_free(&held);
    sl_close(&cc);
    /* and so normal can change how it is served once emptied */
    sluice(&f->b, out, sizeof out, 1, "level", "set", "normal", "--fair", "tag", NULL);
    sluice(&f->b, out, sizeof out, 0, "move", "normal", "--to", "low", NULL);
    assert_non_null(strstr(out, "moved 1 waiting message of level normal"));
    sluice(&f->b, out, sizeof out, 0, "level", "set", "normal", "--fair", "tag", NULL);

    /* fair to FIFO and back, a tag at a time: each tag's order kept */
    uint64_t t[6];
    for (int i = 0; i < 6; i++)
        t[i] = put(f->c, 1, i < 3 ? "p" : "q", "f", 0);
    sluice(&f->b, out, sizeof out, 0, "move", "normal", "--to", "high", "--tag", "q", NULL);
    assert_non_null(strstr(out, "moved 3 waiting messages"));
    assert_int_equal(peek_ids(f->c, 0, NULL, got, 8), 3);
    assert_int_equal(got[0], t[3]);
    assert_int_equal(got[2], t[5]);
    assert_int_equal(level_stats(f->c, 1).depth, 3);
    sl_tag_info tags[SL_MAX_TAG_ROWS];
    unsigned ntags, p_depth = 0, q_depth = 0;
    assert_int_equal(sl_tag_list(f->c, tags, &ntags), SL_OK); /* the fair level's tags, counted afresh */
    for (unsigned i = 0; i < ntags; i++)
        if (tags[i].has_level && tags[i].level == 1) {
            p_depth += !strcmp(tags[i].tag, "p") ? (unsigned)tags[i].depth : 0;
            q_depth += !strcmp(tags[i].tag, "q") ? (unsigned)tags[i].depth : 0;
        }
    assert_int_equal(p_depth, 3);
    assert_int_equal(q_depth, 0);
    sluice(&f->b, out, sizeof out, 0, "move", "high", "--to", "normal", NULL);
    assert_int_equal(peek_ids(f->c, 1, "q", got, 8), 3);
    assert_int_equal(got[0], t[3]);
    assert_int_equal(level_stats(f->c, 0).depth, 0);
    assert_int_equal(level_stats(f->c, 1).depth, 6);

    /* every one delivered once, by its tag's order; nothing purged comes back */
    sl_client *d = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(d, NULL, NULL, 0, 20), SL_OK);
    unsigned n = 0;
    for (sl_delivery *m = NULL; n < 11 && sl_recv(d, 3000, &m) == SL_OK; n++) {
        assert_true(m->id != ids[0] && m->id != ids[2] && m->id != later);
        assert_int_equal(sl_ack(d, m), SL_OK);
        sl_delivery_free(&m);
    }
    assert_int_equal(n, 11); /* 6 in normal, 5 in low (4 odd and the held one) */
    sl_delivery *none = NULL;
    assert_int_equal(sl_recv(d, 300, &none), SL_ETIMEDOUT);
    sl_close(&d);

    /* bad input: the same level, an unknown one, no --to */
    sluice(&f->b, out, sizeof out, 2, "move", "normal", "--to", "normal", NULL);
    sluice(&f->b, out, sizeof out, 2, "move", "normal", NULL);
    assert_int_equal(sl_msg_move(f->c, 1, 1, NULL, 0, &(uint64_t){0}, &(uint64_t){0}, NULL), SL_EINVAL);
    assert_int_equal(sl_msg_move(f->c, 1, 7, NULL, 0, &(uint64_t){0}, &(uint64_t){0}, NULL), SL_ENOLEVEL);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void a_moved_message_keeps_its_time_to_live(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start(NULL, &f), SL_OK);
    uint64_t id = put(f->c, 2, "t", "short-lived", 1500);
    uint64_t after = 0, moved = 0;
    assert_int_equal(sl_msg_move(f->c, 2, 0, NULL, 0, &after, &moved, NULL), SL_OK);
    assert_int_equal(moved, 1);
    assert_int_equal(after, 0);
    uint64_t until = th_now_ms() + 10000;
    while (level_stats(f->c, 0).dead != 1 && th_now_ms() < until)
        usleep(20000);
    assert_int_equal(level_stats(f->c, 0).dead, 1); /* expired in its new level */
    assert_int_equal(level_stats(f->c, 0).depth, 0);
    sl_dead_message m;
    assert_int_equal(sl_dead_peek(f->c, id, &m), SL_OK);
    assert_int_equal(m.level, 0);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* ---- kill -9 in the middle of a move of 100,000 ---- */

#define MANY 100000u

/* append_many writes n messages into level of the data directory dir (the
 * broker stopped), ids from the store's counter, body "body-<id>". */
static void append_many(const char *dir, unsigned level, unsigned n)
{
    store_cfg cfg = {.dir = dir, .levels = 3, .map_bytes = 1ULL << 30};
    store *s = NULL;
    uint64_t now = wall_ns();
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    for (unsigned i = 0; i < n; i++) {
        char body[32];
        uint64_t id = store_next_id(s), key;
        int len = snprintf(body, sizeof body, "body-%" PRIu64, id);
        store_rec rec = {.id = id, .enq_ns = now, .cost = 1, .attempt = 2, .level = (uint8_t)level,
                         .tag = "bulk", .tag_len = 4, .body = body, .body_len = (uint32_t)len};
        assert_int_equal(store_append(s, &rec, &key), SL_OK);
        if (i % 10000 == 9999)
            assert_int_equal(store_commit(s), SL_OK);
    }
    assert_int_equal(store_commit(s), SL_OK);
    store_close(&s);
}

/* count_ids reads, with the broker stopped, every record of q.<1> and q.<2>
 * and counts how often each id 1..MANY occurs; and checks each level's
 * order (ids rise) and that every record kept its attempts and body. */
static void count_ids(const char *dir, uint8_t *seen, uint64_t *in1, uint64_t *in2)
{
    store_cfg cfg = {.dir = dir, .levels = 3, .map_bytes = 1ULL << 30};
    store *s = NULL;
    store_rec rec;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    memset(seen, 0, MANY + 1);
    for (unsigned level = 1; level <= 2; level++) {
        uint64_t key = 0, last = 0, *n = level == 1 ? in1 : in2;
        *n = 0;
        while (store_seek(s, level, key, &key, &rec) == SL_OK) {
            char body[32];
            assert_true(rec.id >= 1 && rec.id <= MANY && rec.id > last);
            assert_int_equal(rec.attempt, 2);
            assert_int_equal(rec.body_len, (uint32_t)snprintf(body, sizeof body, "body-%" PRIu64, rec.id));
            assert_memory_equal(rec.body, body, rec.body_len);
            last = rec.id;
            seen[rec.id]++;
            (*n)++;
            key++;
        }
    }
    store_close(&s);
}

static void kill9_mid_move_loses_and_duplicates_nothing(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), SL_OK);
    append_many(b.data, 1, MANY);
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 5000);
    assert_int_equal(level_stats(c, 1).depth, MANY);
    assert_int_equal(sl_level_fair(c, 2, 1), SL_OK); /* from a FIFO level into a fair one */

    char log[400];
    snprintf(log, sizeof log, "%s/move.out", b.dir);
    const char *argv[] = {th_bin("sluice"), "-b", b.endpoint, "move", "normal", "--to", "low", NULL};
    proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true, .die_with_parent = true};
    proc p;
    assert_int_equal(proc_start(&p, "move", &spec), 0);
    uint64_t left = MANY, until = th_now_ms() + 60000;
    while (th_now_ms() < until && (left = level_stats(c, 1).depth) > MANY / 4 * 3)
        usleep(2000);
    assert_true(left < MANY);
    th_broker_kill9(&b);
    sl_close(&c);
    proc_wait(&p, 20000);
    proc_kill(&p);

    uint8_t *seen = malloc(MANY + 1);
    uint64_t in1, in2;
    assert_non_null(seen);
    count_ids(b.data, seen, &in1, &in2);
    print_message("killed with %" PRIu64 " moved, %" PRIu64 " still in normal\n", in2, in1);
    for (unsigned id = 1; id <= MANY; id++)
        if (seen[id] != 1) {
            print_error("message %u is in %u places\n", id, seen[id]);
            fail();
        }
    assert_int_equal(in1 + in2, MANY);
    assert_true(in1 > 0 && in2 > 0);

    /* running it again finishes the job, and a restart's figures agree */
    assert_int_equal(th_broker_start(&b), SL_OK);
    c = th_client(&b, 5000);
    char out[512];
    uint64_t t0 = th_now_ms();
    sluice(&b, out, sizeof out, 0, "move", "normal", "--to", "low", NULL);
    print_message("moved the other %" PRIu64 " in %" PRIu64 " ms\n", in1, th_now_ms() - t0);
    assert_int_equal(level_stats(c, 1).depth, 0);
    assert_int_equal(level_stats(c, 2).depth, MANY);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    count_ids(b.data, seen, &in1, &in2);
    assert_int_equal(in1, 0);
    assert_int_equal(in2, MANY);
    for (unsigned id = 1; id <= MANY; id++)
        assert_int_equal(seen[id], 1);
    free(seen);
    th_broker_fini(&b);
}

int main(void)
{
    th_timeout_s = 180;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(peek_reads_without_taking_and_skips_the_leased, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(delete_purge_and_move_leave_the_leased_alone, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_moved_message_keeps_its_time_to_live, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(kill9_mid_move_loses_and_duplicates_nothing, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("waiting", tests, NULL, NULL);
}
