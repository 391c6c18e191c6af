/*
 * test_coord.c - brokers sharing one sink through capacity leases in a real
 * redis-server (started by each test on a Unix socket in its directory):
 * an unreachable Redis at start (the broker serves on its reserved rate and
 * says so), a lone busy broker takes every slice, SIGSTOP of Redis drops it
 * to the reserved rate within a TTL and SIGCONT restores it, FLUSHALL shows
 * learning and a new epoch, two brokers share one limit set on either, a
 * limit below the reserved rates is refused, kill -9 of one broker hands its
 * slices to the other after its TTL, a wrong password and a script error
 * leave the broker on its reserved rate; when one broker goes idle the busy
 * one gets 90 % of the slices within 2 TTLs; a broker stopped gracefully
 * returns its slices at once; a shared sink with no limit (none set, or one
 * removed) holds nothing back. Bounds are generous (TTL 900 ms).
 */
#include <hiredis.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "th_redis.h"

#define TTL_MS 900
#define RESERVED_MILLI 50000ULL

static char dir[64];
static th_redis redis;

static int arm(void **state)
{
    (void)state;
    alarm(90);
    strcpy(dir, "/tmp/sluice-coord-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int disarm(void **state)
{
    (void)state;
    alarm(0);
    th_redis_stop(&redis);
    th_rmrf(dir);
    return 0;
}

static th_broker *broker(const char *url)
{
    const char *extra[] = {"--coord", url, "--coord-name", "t", "--reserved-rate", "50", "--coord-ttl-ms", "900", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    return b;
}

static void pause_ms(unsigned ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}

/* wait_sink polls sink.show (and drains deliveries) every 20 ms until ok(s)
 * or timeout_ms; returns the ms it took, or -1. */
static long wait_sink(sl_client *c, int (*ok)(const sl_sink_info *), sl_sink_info *s, unsigned timeout_ms)
{
    uint64_t t0 = th_now_ms();
    for (unsigned i = 0; i < timeout_ms / 20 + 1; i++) {
        assert_int_equal(sl_sink_show(c, s), SL_OK);
        if (ok(s))
            return (long)(th_now_ms() - t0);
        if (th_now_ms() - t0 > timeout_ms)
            break;
        pause_ms(20);
    }
    return -1;
}

static int on_reserved(const sl_sink_info *s)
{
    return s->coord.coordinated && s->coord.granted_milli == 0 && s->effective_rate_milli == RESERVED_MILLI;
}
static int holds_all(const sl_sink_info *s)
{
    return s->coord.reachable && s->coord.slices_held == s->coord.slices;
}
static int learning(const sl_sink_info *s)
{
    return !strcmp(s->coord.state, "learning");
}
static int auth_failed(const sl_sink_info *s)
{
    return !strcmp(s->coord.state, "auth failed");
}
static int script_error(const sl_sink_info *s)
{
    return !strcmp(s->coord.state, "script error");
}
static int leased(const sl_sink_info *s)
{
    return !strcmp(s->coord.state, "leased") && s->coord.reachable;
}
static int holds_90(const sl_sink_info *s)
{
    return s->coord.reachable && s->coord.slices_held >= 90;
}
static int limit_400(const sl_sink_info *s)
{
    return s->coord.limit_milli == 400000;
}

/* busy makes b backlogged with a consumer: it then asks for every slice. */
static sl_client *busy(th_broker *b)
{
    sl_client *c = th_client(b, 5000);
    assert_int_equal(th_put_many(c, 1, 300, 1), SL_OK);
    sl_client *cons = th_client(b, 5000);
    assert_int_equal(sl_subscribe(cons, NULL, NULL, 0, 5), SL_OK);
    sl_close(&c);
    return cons;
}

static void an_unreachable_redis_at_start_leaves_the_reserved_rate(void **state)
{
    (void)state;
    char url[128];
    snprintf(url, sizeof url, "unix://%s/nobody.sock", dir);
    th_broker *b = broker(url);
    sl_client *c = th_client(b, 5000);
    sl_sink_info s;
    assert_true(wait_sink(c, on_reserved, &s, 3000) >= 0);
    assert_false(s.coord.reachable);
    assert_string_equal(s.coord.state, "unreachable");
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_true(st.coord.coordinated);
    char log[8192];
    th_read_file(b->log, log, sizeof log);
    assert_non_null(strstr(log, "reserved"));
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void a_busy_broker_leases_all_falls_to_reserved_when_redis_stops_and_recovers(void **state)
{
    (void)state;
    assert_int_equal(th_redis_start(&redis, dir, NULL), 0);
    th_broker *b = broker(redis.url);
    sl_client *c = th_client(b, 5000);
    assert_int_equal(sl_sink_set(c, 1000000, SL_UNCHANGED, SL_UNCHANGED), SL_OK); /* the sink: 1000/s */
    sl_client *cons = busy(b);
    sl_sink_info s;
    long took = wait_sink(c, holds_all, &s, 5000);
    fprintf(stderr, "# the busy broker held every slice after %ld ms\n", took);
    assert_true(took >= 0);
    assert_int_equal(s.coord.granted_milli, 950000); /* 1000/s - 50/s reserved */
    assert_int_equal(s.effective_rate_milli, 1000000);
    assert_true(s.coord.lease_left_ms > 0 && s.coord.lease_left_ms <= TTL_MS);

    kill(redis.p.pid, SIGSTOP);
    took = wait_sink(c, on_reserved, &s, 3 * TTL_MS);
    fprintf(stderr, "# SIGSTOP of Redis: on the reserved rate after %ld ms (TTL %d)\n", took, TTL_MS);
    assert_true(took >= 0 && took <= TTL_MS + 200);
    kill(redis.p.pid, SIGCONT);
    took = wait_sink(c, holds_all, &s, 6 * TTL_MS);
    fprintf(stderr, "# SIGCONT: every slice back after %ld ms\n", took);
    assert_true(took >= 0 && took <= 2 * TTL_MS + 500);

    uint64_t epoch = s.coord.epoch;
    redisReply *r = th_redis_cmd(&redis, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
    took = wait_sink(c, learning, &s, 3 * TTL_MS);
    assert_true(took >= 0);
    assert_true(s.coord.epoch > epoch);
    assert_true(s.coord.slices_held <= s.coord.slices);
    assert_true(wait_sink(c, holds_all, &s, 4 * TTL_MS) >= 0);
    assert_int_equal(s.coord.limit_milli, 1000000); /* the limit came back from the broker */
    sl_close(&cons);
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void two_brokers_share_one_limit_and_the_survivor_takes_the_slices(void **state)
{
    (void)state;
    assert_int_equal(th_redis_start(&redis, dir, NULL), 0);
    th_broker *a = broker(redis.url), *b = broker(redis.url);
    sl_client *ca = th_client(a, 5000), *cb = th_client(b, 5000);
    sl_sink_info s;
    assert_true(wait_sink(ca, leased, &s, 3000) >= 0);
    assert_true(wait_sink(cb, leased, &s, 3000) >= 0);
    assert_int_equal(sl_sink_set(ca, 400000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    assert_true(wait_sink(cb, limit_400, &s, 3000) >= 0); /* set on a, seen by b */
    assert_int_equal(s.coord.sum_reserved_milli, 2 * RESERVED_MILLI);
    /* below the reserved rates together: a clear error */
    assert_int_equal(sl_sink_set(cb, 60000, SL_UNCHANGED, SL_UNCHANGED), SL_EINVAL);
    assert_non_null(strstr(sl_last_error(cb), "reserved"));

    sl_client *qa = busy(a), *qb = busy(b);
    sl_sink_info sa, sb;
    for (int i = 0; i < 200; i++) { /* both busy: about half each, never more than all */
        assert_int_equal(sl_sink_show(ca, &sa), SL_OK);
        assert_int_equal(sl_sink_show(cb, &sb), SL_OK);
        assert_true(sa.coord.slices_held + sb.coord.slices_held <= 100);
        if (sa.coord.slices_held >= 45 && sb.coord.slices_held >= 45)
            break;
        pause_ms(20);
    }
    assert_true(sa.coord.slices_held >= 45 && sb.coord.slices_held >= 45);
    sl_close(&qa);
    sl_close(&ca);
    th_broker_kill9(a);
    long took = wait_sink(cb, holds_all, &sb, 4 * TTL_MS);
    fprintf(stderr, "# kill -9 of one broker: the other held every slice after %ld ms (TTL %d)\n", took, TTL_MS);
    assert_true(took >= 0 && took <= TTL_MS + TTL_MS / 3 + 400);
    sl_close(&qb);
    sl_close(&cb);
    th_broker_destroy(&a);
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* Uneven demand: a broker whose consumer left (returning its deliveries
 * uncharged) stops asking, and the busy one gets 90 % within 2 TTLs. */
static void the_busy_broker_gets_the_shared_rate_when_the_other_goes_idle(void **state)
{
    (void)state;
    assert_int_equal(th_redis_start(&redis, dir, NULL), 0);
    th_broker *a = broker(redis.url), *b = broker(redis.url);
    sl_client *ca = th_client(a, 5000), *cb = th_client(b, 5000);
    sl_sink_info s;
    assert_int_equal(sl_sink_set(ca, 1000000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    sl_client *qa = busy(a);
    assert_true(wait_sink(ca, holds_90, &s, 4000) >= 0);
    sl_close(&qa); /* a goes idle: its five deliveries return uncharged */
    sl_client *qb = busy(b);
    long took = wait_sink(cb, holds_90, &s, 6 * TTL_MS);
    fprintf(stderr, "# uneven demand: the busy broker held %llu slices %ld ms after the other went idle (TTL %d)\n",
            (unsigned long long)s.coord.slices_held, took, TTL_MS);
    assert_true(took >= 0 && took <= 2 * TTL_MS + 500);
    sl_close(&qb);
    sl_close(&ca);
    sl_close(&cb);
    assert_int_equal(th_broker_destroy(&a), 0);
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* take receives on c for up to ms, acking, and returns how many came. */
static unsigned take(sl_client *c, unsigned ms, unsigned most)
{
    unsigned n = 0;
    uint64_t until = th_now_ms() + ms;
    while (n < most && th_now_ms() < until) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 20, &d) == SL_OK) {
            assert_int_equal(sl_ack(c, d), SL_OK);
            sl_delivery_free(&d);
            n++;
        }
    }
    return n;
}

/* A shared sink with no limit, none set or one removed, holds nothing back
 * (a broker with no reserved rate delivered nothing at all before); a limit
 * set through it applies to it at once. */
static void a_shared_sink_without_a_limit_holds_nothing_back(void **state)
{
    (void)state;
    assert_int_equal(th_redis_start(&redis, dir, NULL), 0);
    const char *extra[] = {"--coord", redis.url, "--coord-name", "t", "--coord-ttl-ms", "900", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    sl_client *c = th_client(b, 5000), *cons = th_client(b, 5000);
    assert_int_equal(sl_subscribe(cons, NULL, NULL, 0, 50), SL_OK);
    assert_int_equal(th_put_many(c, 1, 2000, 1), SL_OK);
    assert_int_equal(take(cons, 15000, 2000), 2000); /* no limit was ever set */

    assert_int_equal(sl_sink_set(c, 100000, 5, SL_UNCHANGED), SL_OK);
    assert_int_equal(th_put_many(c, 1, 1000, 1), SL_OK);
    uint64_t t0 = th_now_ms();
    unsigned limited = take(cons, 1500, 1000);
    uint64_t took = th_now_ms() - t0;
    fprintf(stderr, "# 100/s shared: %u delivered in %llu ms\n", limited, (unsigned long long)took);
    assert_true(limited <= 100 * took / 1000 + 5 + 50 + 1);

    assert_int_equal(sl_sink_set(c, 0, SL_UNCHANGED, SL_UNCHANGED), SL_OK); /* removed */
    assert_int_equal(take(cons, 15000, 1000 - limited), 1000 - limited);
    sl_sink_info s;
    assert_int_equal(sl_sink_show(c, &s), SL_OK);
    assert_int_equal(s.coord.limit_milli, 0);
    sl_close(&cons);
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);
}

/* A broker stopped gracefully returns its slices at once, not after its TTL. */
static void a_graceful_stop_returns_the_slices_at_once(void **state)
{
    (void)state;
    assert_int_equal(th_redis_start(&redis, dir, NULL), 0);
    th_broker *a = broker(redis.url), *b = broker(redis.url);
    sl_client *ca = th_client(a, 5000), *cb = th_client(b, 5000);
    sl_sink_info s;
    assert_int_equal(sl_sink_set(ca, 1000000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    sl_client *qa = busy(a), *qb = busy(b);
    assert_true(wait_sink(ca, leased, &s, 3000) >= 0);
    for (int i = 0; i < 100 && !(s.coord.slices_held >= 40); i++) {
        pause_ms(20);
        assert_int_equal(sl_sink_show(ca, &s), SL_OK);
    }
    assert_true(s.coord.slices_held >= 40); /* a holds about half */
    sl_close(&qa);
    sl_close(&ca);
    uint64_t t0 = th_now_ms();
    assert_int_equal(th_broker_stop(a), 0);
    long took = wait_sink(cb, holds_all, &s, 3 * TTL_MS);
    took = took < 0 ? -1 : (long)(th_now_ms() - t0);
    fprintf(stderr, "# graceful stop: the other held every slice %ld ms after SIGTERM (TTL %d)\n", took, TTL_MS);
    assert_true(took >= 0 && took < 2 * TTL_MS / 3); /* its TTL would have taken >= 2/3 TTL */
    sl_close(&qb);
    sl_close(&cb);
    th_broker_destroy(&a);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void a_wrong_password_and_a_script_error_leave_the_reserved_rate(void **state)
{
    (void)state;
    const char *extra[] = {"--requirepass", "s3cret", NULL};
    assert_int_equal(th_redis_start(&redis, dir, extra), 0);
    setenv("SLUICE_COORD_PASSWORD", "wrong", 1);
    th_broker *b = broker(redis.url);
    unsetenv("SLUICE_COORD_PASSWORD");
    sl_client *c = th_client(b, 5000);
    sl_sink_info s;
    assert_true(wait_sink(c, auth_failed, &s, 3000) >= 0);
    assert_true(on_reserved(&s));
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);

    char path[128];
    snprintf(path, sizeof path, "%s/password", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("s3cret\n", f);
    fclose(f);
    const char *with_file[] = {"--coord", redis.url, "--coord-name", "t", "--reserved-rate", "50",
                               "--coord-ttl-ms", "900", "--coord-password-file", path, NULL};
    assert_int_equal(th_broker_new(with_file, &b), 0);
    c = th_client(b, 5000);
    assert_true(wait_sink(c, leased, &s, 3000) >= 0);
    /* someone else's value where the sink's hash belongs: the script fails */
    redisContext *rc = redisConnectUnix(redis.sock);
    assert_non_null(rc);
    redisReply *r = redisCommand(rc, "AUTH s3cret");
    freeReplyObject(r);
    r = redisCommand(rc, "SET sluice:{t} x");
    freeReplyObject(r);
    redisFree(rc);
    assert_true(wait_sink(c, script_error, &s, 3000) >= 0);
    assert_true(wait_sink(c, on_reserved, &s, 2 * TTL_MS) >= 0);
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
#define T(name) cmocka_unit_test_setup_teardown(name, arm, disarm)
    const struct CMUnitTest tests[] = {
        T(an_unreachable_redis_at_start_leaves_the_reserved_rate),
        T(a_busy_broker_leases_all_falls_to_reserved_when_redis_stops_and_recovers),
        T(two_brokers_share_one_limit_and_the_survivor_takes_the_slices),
        T(a_wrong_password_and_a_script_error_leave_the_reserved_rate),
        T(the_busy_broker_gets_the_shared_rate_when_the_other_goes_idle),
        T(a_graceful_stop_returns_the_slices_at_once),
        T(a_shared_sink_without_a_limit_holds_nothing_back),
    };
#undef T
    th_seed();
    return cmocka_run_group_tests_name("coord", tests, NULL, NULL);
}
