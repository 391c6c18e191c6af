/*
 * test_multi.c - clients over several brokers (sl_multi, sluice -b a,b):
 * a key always meets the same broker, keys spread over every broker, and
 * removing a broker moves only its own keys (rendezvous hashing); keyless
 * messages go round and skip a broker killed with kill -9, while a keyed one
 * whose broker is down fails; consumers on every broker settle each delivery
 * on its own broker and nothing is lost; `sluice -b a,b stats --json` shows a
 * row per broker and totals, and `sluice -b a,b send` spreads messages;
 * `sluice -b a,b consume` (printing, --exec and --post to a real sluice-sink)
 * takes every broker's messages and settles each on its own broker.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "proc.h"

static int arm(void **state)
{
    (void)state;
    alarm(90);
    return 0;
}

static int disarm(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

static void keys_route_consistently_and_spread(void **state)
{
    (void)state;
    sl_multi *three, *two;
    sl_options o = {.timeout_ms = 500};
    assert_int_equal(sl_multi_connect("ipc:///tmp/sl-m-a,ipc:///tmp/sl-m-b,ipc:///tmp/sl-m-c", &o, &three), SL_OK);
    assert_int_equal(sl_multi_connect("ipc:///tmp/sl-m-a,ipc:///tmp/sl-m-b", &o, &two), SL_OK);
    assert_int_equal(sl_multi_count(three), 3);
    unsigned per[3] = {0}, moved = 0;
    for (int i = 0; i < 900; i++) {
        char key[32];
        snprintf(key, sizeof key, "order-%d", i);
        unsigned b = sl_multi_route(three, key, NULL);
        assert_int_equal(sl_multi_route(three, key, "some-tag"), b); /* the key wins over the tag */
        per[b]++;
        unsigned b2 = sl_multi_route(two, key, NULL);
        if (b < 2)
            assert_int_equal(b2, b); /* only c's keys move when c goes */
        else
            moved++;
    }
    fprintf(stderr, "# 900 keys over 3 brokers: %u %u %u; %u moved when one went\n", per[0], per[1], per[2], moved);
    for (int i = 0; i < 3; i++)
        assert_true(per[i] >= 200);
    unsigned rr[2] = {0};
    for (int i = 0; i < 10; i++)
        rr[sl_multi_route(two, NULL, NULL)]++;
    assert_int_equal(rr[0], 5); /* no key, no tag: in turn */
    sl_multi_close(&three);
    sl_multi_close(&two);
    assert_null(three);
    assert_int_equal(sl_multi_connect("ipc:///tmp/x,,ipc:///tmp/y", &o, &two), SL_EINVAL);
}

static void keyless_skip_a_dead_broker_and_consumers_settle_on_their_own(void **state)
{
    (void)state;
    th_broker *a, *b;
    assert_int_equal(th_broker_new(NULL, &a), 0);
    assert_int_equal(th_broker_new(NULL, &b), 0);
    char list[700];
    snprintf(list, sizeof list, "%s,%s", a->endpoint, b->endpoint);
    sl_options o = {.timeout_ms = 1000};
    sl_multi *m;
    assert_int_equal(sl_multi_connect(list, &o, &m), SL_OK);
    unsigned per[2] = {0};
    for (int i = 0; i < 40; i++) {
        sl_put p = {.body = "x", .body_len = 1, .level = SL_LEVEL_DEFAULT};
        unsigned at;
        uint64_t id;
        assert_int_equal(sl_multi_send(m, &p, &id, &at), SL_OK);
        per[at]++;
    }
    assert_int_equal(per[0], 20);
    assert_int_equal(per[1], 20);

    /* consumers on every broker: each delivery acknowledged where it came from */
    sl_multi *cons;
    assert_int_equal(sl_multi_connect(list, &o, &cons), SL_OK);
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(sl_subscribe(sl_multi_at(cons, i), NULL, NULL, 0, 8), SL_OK);
    unsigned got = 0;
    uint64_t t0 = th_now_ms();
    while (got < 40 && th_now_ms() - t0 < 10000)
        for (unsigned i = 0; i < 2; i++) {
            sl_delivery *d;
            if (sl_recv(sl_multi_at(cons, i), 50, &d) == SL_OK) {
                assert_int_equal(sl_ack(sl_multi_at(cons, i), d), SL_OK);
                sl_delivery_free(&d);
                got++;
            }
        }
    assert_int_equal(got, 40);
    for (unsigned i = 0; i < 2; i++) /* acks do not wait for their answer: wait before counting */
        assert_int_equal(sl_flush(sl_multi_at(cons, i), 5000), SL_OK);
    sl_multi_close(&cons);
    for (unsigned i = 0; i < 2; i++) {
        sl_stats st;
        assert_int_equal(sl_stats_get(sl_multi_at(m, i), &st), SL_OK);
        uint64_t acked = 0, depth = 0;
        for (unsigned l = 0; l < st.nlevels; l++)
            acked += st.level[l].acked, depth += st.level[l].depth;
        assert_int_equal(acked, 20);
        assert_int_equal(depth, 0);
    }

    th_broker_kill9(b);
    for (int i = 0; i < 6; i++) { /* keyless: all reach a */
        sl_put p = {.body = "y", .body_len = 1, .level = SL_LEVEL_DEFAULT};
        unsigned at = 9;
        uint64_t id;
        assert_int_equal(sl_multi_send(m, &p, &id, &at), SL_OK);
        assert_int_equal(at, 0);
    }
    /* a key whose broker is b: it fails rather than go elsewhere */
    char key[32];
    int i = 0;
    do
        snprintf(key, sizeof key, "k%d", i++);
    while (sl_multi_route(m, key, NULL) != 1);
    sl_put p = {.body = "z", .body_len = 1, .level = SL_LEVEL_DEFAULT, .key = key};
    uint64_t id;
    int rc = sl_multi_send(m, &p, &id, NULL);
    assert_true(rc == SL_ETIMEDOUT || rc == SL_ECONNECT);
    sl_multi_close(&m);
    th_broker_destroy(&b);
    assert_int_equal(th_broker_destroy(&a), 0);
}

static void cli_send_and_stats_over_two_brokers(void **state)
{
    (void)state;
    th_broker *a, *b;
    assert_int_equal(th_broker_new(NULL, &a), 0);
    assert_int_equal(th_broker_new(NULL, &b), 0);
    char list[700], out[8192];
    snprintf(list, sizeof list, "%s,%s", a->endpoint, b->endpoint);
    const char *send[] = {th_bin("sluice"), "-b", list, "send", NULL};
    assert_int_equal(th_run(send, "1\n2\n3\n4\n5\n6\n", out, sizeof out), 0);
    const char *stats[] = {th_bin("sluice"), "-b", list, "stats", "--json", NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"brokers\":["));
    assert_non_null(strstr(out, "\"totals\":{\"brokers\":2,\"down\":0,\"depth\":6"));
    assert_non_null(strstr(out, a->endpoint));
    assert_non_null(strstr(out, b->endpoint));
    const char *table[] = {th_bin("sluice"), "-b", list, "stats", NULL};
    assert_int_equal(th_run(table, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "TOTAL (2 brokers)"));
    th_broker_kill9(b);
    const char *quick[] = {th_bin("sluice"), "-b", list, "--timeout", "500", "stats", NULL};
    assert_int_equal(th_run(quick, NULL, out, sizeof out), 1); /* one down: a row says so, exit 1 */
    assert_non_null(strstr(out, "down"));
    th_broker_destroy(&b);
    assert_int_equal(th_broker_destroy(&a), 0);
}

/* put_bodies publishes n messages "<prefix><i>" to c. */
static void put_bodies(sl_client *c, const char *prefix, int n)
{
    for (int i = 0; i < n; i++) {
        char body[32];
        int len = snprintf(body, sizeof body, "%s%d", prefix, i);
        sl_put p = {.body = body, .body_len = (size_t)len, .level = SL_LEVEL_DEFAULT};
        uint64_t id;
        assert_int_equal(sl_send(c, &p, &id), SL_OK);
    }
}

/* occurrences counts the places where what starts in text. */
static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* assert_settled_here asserts that broker b acknowledged exactly acked
 * messages in all and holds none, stored or in flight. */
static void assert_settled_here(const th_broker *b, uint64_t acked)
{
    sl_client *c = th_client(b, 2000);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    uint64_t a = 0, held = 0;
    for (unsigned l = 0; l < st.nlevels; l++)
        a += st.level[l].acked, held += st.level[l].depth + st.level[l].inflight;
    assert_int_equal(a, acked);
    assert_int_equal(held, 0);
    sl_close(&c);
}

static void cli_consume_over_two_brokers_settles_each_where_it_came_from(void **state)
{
    (void)state;
    th_broker *a, *b;
    assert_int_equal(th_broker_new(NULL, &a), 0);
    assert_int_equal(th_broker_new(NULL, &b), 0);
    char list[700], out[8192];
    snprintf(list, sizeof list, "%s,%s", a->endpoint, b->endpoint);
    sl_client *ca = th_client(a, 2000), *cb = th_client(b, 2000);
    put_bodies(ca, "a", 10);
    put_bodies(cb, "b", 7);

    /* printing, -n over both: all 17, each once, and each acked on its broker */
    const char *print[] = {th_bin("sluice"), "-b", list, "consume", "-n", "17", "-c", "4", NULL};
    assert_int_equal(th_run(print, NULL, out, sizeof out), 0);
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 17);
    for (int i = 0; i < 10; i++) {
        char want[16];
        snprintf(want, sizeof want, "a%d\n", i);
        assert_non_null(strstr(out, want));
        if (i < 7) {
            snprintf(want, sizeof want, "b%d\n", i);
            assert_non_null(strstr(out, want));
        }
    }
    assert_settled_here(a, 10);
    assert_settled_here(b, 7);

    /* --exec with workers, ending when both brokers are idle */
    put_bodies(ca, "x", 6);
    put_bodies(cb, "y", 9);
    const char *exec[] = {th_bin("sluice"), "-b",    list,         "consume", "--workers", "3", "--exec",
                          "cat >/dev/null", "--idle-exit", "1500", NULL};
    assert_int_equal(th_run(exec, NULL, out, sizeof out), 0);
    assert_settled_here(a, 16);
    assert_settled_here(b, 16);

    /* --post to a real sink: every POST logged, each acked on its broker.
     * The sink must never push back here: a burst of 1 at 100,000/s would
     * answer 429 to two of the four workers' POSTs arriving within 10 us
     * of each other, and a throttled message is settled (it counts toward
     * -n) but returned to its broker, not posted */
    th_sink sink;
    const char *const sink_opts[] = {"--rate", "100000", "--burst", "100000", NULL};
    assert_int_equal(th_sink_start(&sink, a->dir, sink_opts), 0);
    put_bodies(ca, "p", 5);
    put_bodies(cb, "q", 8);
    const char *post[] = {th_bin("sluice"), "-b", list, "consume", "--workers", "2", "--post", sink.url,
                          "-n", "13", NULL};
    assert_int_equal(th_run(post, NULL, out, sizeof out), 0);
    assert_int_equal(th_sink_stop(&sink), 0);
    static char log[65536];
    th_read_file(sink.log, log, sizeof log);
    int posts = occurrences(log, " 200 "), once = 0;
    for (int i = 0; i < 13; i++) { /* every body answered 200 exactly once */
        char want[24];
        snprintf(want, sizeof want, " 200 %c%d\n", i < 5 ? 'p' : 'q', i < 5 ? i : i - 5);
        once += occurrences(log, want) == 1;
    }
    if (posts != 13 || once != 13 || strstr(log, " 429 "))
        fprintf(stderr, "---- the sink's log ----\n%s----\n", log);
    assert_null(strstr(log, " 429 ")); /* a throttled one counts toward -n but is not posted */
    assert_int_equal(posts, 13);
    assert_int_equal(once, 13);
    assert_settled_here(a, 21);
    assert_settled_here(b, 24);

    /* SLUICE_BROKER holding the list does the same */
    put_bodies(ca, "e", 2);
    put_bodies(cb, "f", 3);
    setenv("SLUICE_BROKER", list, 1);
    const char *env[] = {th_bin("sluice"), "consume", "-n", "5", NULL};
    int env_st = th_run(env, NULL, out, sizeof out);
    unsetenv("SLUICE_BROKER");
    assert_int_equal(env_st, 0);
    assert_non_null(strstr(out, "e1\n"));
    assert_non_null(strstr(out, "f2\n"));
    assert_settled_here(a, 23);
    assert_settled_here(b, 27);

    /* a malformed list is a usage error */
    const char *bad[] = {th_bin("sluice"), "-b", "ipc:///nonexistent,", "consume", "-n", "1", NULL};
    assert_int_equal(th_run(bad, NULL, out, sizeof out), 2);
    sl_close(&ca);
    sl_close(&cb);
    assert_int_equal(th_broker_destroy(&b), 0);
    assert_int_equal(th_broker_destroy(&a), 0);
}

/* in_flight returns what broker b has delivered and not yet had settled. */
/* level_sum sums one figure over b's levels: in flight (acked 0) or
 * acknowledged (acked 1). */
static uint64_t level_sum(const th_broker *b, int acked)
{
    sl_client *c = th_client(b, 2000);
    sl_stats st;
    uint64_t n = 0;
    if (sl_stats_get(c, &st) == SL_OK)
        for (unsigned l = 0; l < st.nlevels; l++)
            n += acked ? st.level[l].acked : st.level[l].inflight;
    sl_close(&c);
    return n;
}

static uint64_t in_flight(const th_broker *b)
{
    return level_sum(b, 0);
}

static void cli_consume_over_two_brokers_stops_cleanly_on_sigterm(void **state)
{
    (void)state;
    th_broker *a, *b;
    assert_int_equal(th_broker_new(NULL, &a), 0);
    assert_int_equal(th_broker_new(NULL, &b), 0);
    char list[700], log[400];
    snprintf(list, sizeof list, "%s,%s", a->endpoint, b->endpoint);
    snprintf(log, sizeof log, "%s/consume.log", a->dir);
    sl_client *ca = th_client(a, 2000), *cb = th_client(b, 2000);
    assert_int_equal(th_put_many(ca, SL_LEVEL_DEFAULT, 40, 0), SL_OK);
    assert_int_equal(th_put_many(cb, SL_LEVEL_DEFAULT, 40, 0), SL_OK);
    /* slow work on both brokers at once, then SIGTERM: what is in hand is
     * finished and acked on its own broker, the rest returns; nothing lost */
    const char *argv[] = {th_bin("sluice"), "-b", list, "consume", "--workers", "2", "--exec", "sleep 0.2", NULL};
    proc p;
    proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true, .die_with_parent = true};
    assert_int_equal(proc_start(&p, "sluice consume", &spec), 0);
    /* at work on both: some acknowledged on each, more in hand (a loaded
     * machine may take a while to start the first commands) */
    uint64_t t0 = th_now_ms();
    while ((level_sum(a, 1) == 0 || level_sum(b, 1) == 0 || in_flight(a) == 0 || in_flight(b) == 0) &&
           th_now_ms() - t0 < 20000)
        usleep(20000);
    assert_true(level_sum(a, 1) > 0 && level_sum(b, 1) > 0 && in_flight(a) > 0 && in_flight(b) > 0);
    int stop_st = proc_stop(&p, 20000);
    if (stop_st != 0) {
        static char text[16384];
        th_read_file(log, text, sizeof text);
        fprintf(stderr, "---- %s (exit %d) ----\n%s----\n", log, stop_st, text);
    }
    assert_int_equal(stop_st, 0);
    sl_close(&ca);
    sl_close(&cb);
    const th_broker *both[] = {a, b};
    for (int i = 0; i < 2; i++) {
        /* the consumer's goodbye travels on its own connection: wait for it */
        uint64_t t1 = th_now_ms();
        while (in_flight(both[i]) > 0 && th_now_ms() - t1 < 10000)
            usleep(20000);
        sl_client *c = th_client(both[i], 2000);
        sl_stats st;
        assert_int_equal(sl_stats_get(c, &st), SL_OK);
        uint64_t acked = 0, depth = 0, inflight = 0;
        for (unsigned l = 0; l < st.nlevels; l++)
            acked += st.level[l].acked, depth += st.level[l].depth, inflight += st.level[l].inflight;
        assert_true(acked >= 1);
        assert_int_equal(inflight, 0);
        assert_int_equal(acked + depth, 40);
        sl_close(&c);
    }
    assert_int_equal(th_broker_destroy(&b), 0);
    assert_int_equal(th_broker_destroy(&a), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
#define T(name) cmocka_unit_test_setup_teardown(name, arm, disarm)
    const struct CMUnitTest tests[] = {
        T(keys_route_consistently_and_spread),
        T(keyless_skip_a_dead_broker_and_consumers_settle_on_their_own),
        T(cli_send_and_stats_over_two_brokers),
        T(cli_consume_over_two_brokers_settles_each_where_it_came_from),
        T(cli_consume_over_two_brokers_stops_cleanly_on_sigterm),
    };
#undef T
    th_seed();
    return cmocka_run_group_tests_name("multi", tests, NULL, NULL);
}
