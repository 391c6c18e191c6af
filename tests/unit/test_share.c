/*
 * test_share.c - the fair split of a shared sink's slices: one table of
 * cases run against the pure C function (broker/coord/share.c) and against the
 * lease script (broker/coord/coord.lua) in a real redis-server started by the test;
 * then the script's renewals themselves: brokers converge on their fair
 * shares without ever holding more than the slices between them, a dead
 * broker's slices come back after its TTL, a new epoch grants only what is
 * already held, and a limit below the reserved rates is refused.
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
#include "share.h"
#include "th_redis.h"

#define KEY "sluice:{t}"

typedef struct split_case {
    uint32_t total;
    unsigned n;
    uint32_t demand[6], fair[6];
} split_case;

static const split_case cases[] = {
    {100, 4, {100, 100, 100, 100}, {25, 25, 25, 25}},
    {100, 4, {100, 0, 0, 0}, {100, 0, 0, 0}},
    {100, 3, {10, 100, 100}, {10, 45, 45}},
    {100, 3, {30, 30, 100}, {30, 30, 40}},
    {10, 3, {100, 100, 100}, {4, 3, 3}},
    {100, 2, {20, 20}, {20, 20}},
    {7, 4, {1, 100, 2, 100}, {1, 2, 2, 2}},
    {1, 2, {5, 5}, {1, 0}},
    {100, 1, {0}, {0}},
    {100, 5, {3, 50, 7, 100, 20}, {3, 35, 7, 35, 20}},
    {64, 6, {64, 64, 64, 64, 64, 64}, {11, 11, 11, 11, 10, 10}},
};
#define NCASES (sizeof cases / sizeof cases[0])

typedef struct grant_case {
    uint32_t total, fair, claimed, others;
    int learning;
    uint32_t want;
} grant_case;

static const grant_case grants[] = {
    {100, 50, 0, 0, 0, 50},    /* fair share, all free */
    {100, 50, 0, 80, 0, 20},   /* grows only into free slices */
    {100, 10, 60, 30, 0, 10},  /* a shrink applies at once */
    {100, 50, 20, 0, 1, 20},   /* learning: only what it says it holds */
    {100, 50, 70, 0, 1, 70},   /* learning: even above its fair share (it may be using it) */
    {100, 50, 40, 90, 1, 10},  /* learning: nor above what others do not hold */
    {100, 50, 0, 120, 0, 0},   /* others over-hold: nothing */
};
#define NGRANTS (sizeof grants / sizeof grants[0])

static char dir[64];
static th_redis redis;
static char *script;

static int group_setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/sluice-share-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    size_t cap = 1 << 16;
    script = calloc(1, cap);
    FILE *f = fopen(th_redis_script_path(), "r"); /* run from the repository root */
    if (!f || !script)
        return -1;
    fread(script, 1, cap - 1, f);
    fclose(f);
    return th_redis_start(&redis, dir, NULL);
}

static int group_teardown(void **state)
{
    (void)state;
    th_redis_stop(&redis);
    th_rmrf(dir);
    free(script);
    return 0;
}

static int arm(void **state)
{
    (void)state;
    alarm(60);
    redisReply *r = th_redis_cmd(&redis, "DEL %s", KEY);
    if (r)
        freeReplyObject(r);
    return r ? 0 : -1;
}

static int disarm(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

/* eval runs the script with args (a space-separated list; no spaces inside). */
static redisReply *eval(const char *args)
{
    const char *argv[40] = {"EVAL", script, "1", KEY};
    char buf[512];
    int n = 4;
    snprintf(buf, sizeof buf, "%s", args);
    for (char *tok = strtok(buf, " "); tok && n < 40; tok = strtok(NULL, " "))
        argv[n++] = tok;
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectUnixWithTimeout(redis.sock, tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommandArgv(c, n, argv, NULL);
    redisFree(c);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("script error: %s", r->str);
    return r;
}

static void split_table_in_c(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCASES; i++) {
        const split_case *k = &cases[i];
        uint32_t fair[6];
        uint32_t given = share_split(k->total, k->n, k->demand, fair), sum = 0;
        for (unsigned j = 0; j < k->n; j++) {
            if (fair[j] != k->fair[j])
                fail_msg("case %zu broker %u: %u, want %u", i, j, fair[j], k->fair[j]);
            sum += fair[j];
        }
        assert_int_equal(given, sum);
        assert_true(sum <= k->total);
    }
    for (size_t i = 0; i < NGRANTS; i++) {
        const grant_case *g = &grants[i];
        uint32_t got = share_grant(g->total, g->fair, g->claimed, g->others, g->learning);
        if (got != g->want)
            fail_msg("grant case %zu: %u, want %u", i, got, g->want);
    }
}

static void split_table_in_lua(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCASES; i++) {
        const split_case *k = &cases[i];
        char args[256];
        int o = snprintf(args, sizeof args, "split %u", k->total);
        for (unsigned j = 0; j < k->n; j++)
            o += snprintf(args + o, sizeof args - (size_t)o, " %u", k->demand[j]);
        redisReply *r = eval(args);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, k->n);
        for (unsigned j = 0; j < k->n; j++)
            if ((uint32_t)r->element[j]->integer != k->fair[j])
                fail_msg("lua case %zu broker %u: %lld, want %u", i, j, r->element[j]->integer, k->fair[j]);
        freeReplyObject(r);
    }
    for (size_t i = 0; i < NGRANTS; i++) {
        const grant_case *g = &grants[i];
        char args[128];
        snprintf(args, sizeof args, "grant %u %u %u %u %d", g->total, g->fair, g->claimed, g->others, g->learning);
        redisReply *r = eval(args);
        if ((uint32_t)r->integer != g->want)
            fail_msg("lua grant case %zu: %lld, want %u", i, r->integer, g->want);
        freeReplyObject(r);
    }
}

/* renew asks for want slices as broker id; returns the reply's 8 integers. */
static void renew(const char *id, uint32_t want, uint32_t held, uint32_t ttl_ms, uint32_t slices, long long v[8])
{
    char args[200];
    snprintf(args, sizeof args, "renew %s 0 %u %u %u %u 100000", id, want, held, ttl_ms, slices);
    redisReply *r = eval(args);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 8);
    for (int i = 0; i < 8; i++)
        v[i] = r->element[i]->integer;
    freeReplyObject(r);
}

/* held_sum reads every live broker's held slices from the hash. */
static uint32_t held_sum(void)
{
    redisReply *r = th_redis_cmd(&redis, "HGETALL %s", KEY);
    assert_non_null(r);
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (!strncmp(r->element[i]->str, "b:", 2))
            sum += (uint32_t)atoi(r->element[i + 1]->str);
    freeReplyObject(r);
    return sum;
}

static void end_learning(void)
{
    redisReply *r = th_redis_cmd(&redis, "HSET %s learn_until 0", KEY);
    assert_non_null(r);
    freeReplyObject(r);
}

static void renewals_converge_to_the_split_and_never_overgrant(void **state)
{
    (void)state;
    unsigned seed = th_seed();
    const char *ids[4] = {"a", "b", "c", "d"};
    uint32_t held[4] = {0}, want[4];
    long long v[8];
    srand(seed);
    renew("a", 100, 0, 60000, 100, v);
    assert_int_equal(v[3], 1); /* a new hash: learning */
    assert_int_equal(v[1], 0); /* and a broker holding nothing gets nothing */
    end_learning();
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 4; i++)
            want[i] = round < 20 ? (uint32_t)(rand() % 120) : 100;
        for (int k = 0; k < 4; k++) {
            int i = rand() % 4;
            renew(ids[i], want[i], held[i], 60000, 100, v);
            held[i] = (uint32_t)v[1];
            assert_true(held_sum() <= 100);
            assert_int_equal(v[2], 1000); /* limit 100/s over 100 slices */
        }
    }
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < 4; i++) {
            renew(ids[i], 100, held[i], 60000, 100, v);
            held[i] = (uint32_t)v[1];
        }
    for (int i = 0; i < 4; i++)
        assert_int_equal(held[i], 25);
}

static void a_dead_brokers_slices_return_after_its_ttl(void **state)
{
    (void)state;
    long long v[8];
    renew("a", 100, 0, 400, 100, v);
    end_learning();
    renew("a", 100, 0, 400, 100, v);
    assert_int_equal(v[1], 100);
    renew("b", 100, 0, 400, 100, v);
    assert_int_equal(v[1], 0); /* nothing free while a's lease lives */
    uint64_t t0 = th_now_ms();
    while (v[1] != 100 && th_now_ms() - t0 < 5000) { /* a never renews: it died */
        renew("b", 100, 0, 400, 100, v);
        if (v[1] == 0)
            nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    uint64_t took = th_now_ms() - t0;
    fprintf(stderr, "# b got a's slices %llu ms after a's last renewal (TTL 400 ms)\n", (unsigned long long)took);
    assert_int_equal(v[1], 100);
    assert_true(took >= 350);
}

static void a_new_epoch_grants_only_what_is_held(void **state)
{
    (void)state;
    long long v[8];
    renew("a", 100, 0, 60000, 100, v);
    end_learning();
    renew("a", 50, 0, 60000, 100, v);
    renew("b", 50, 0, 60000, 100, v);
    long long epoch = v[0];
    assert_int_equal(v[1], 50);
    redisReply *r = th_redis_cmd(&redis, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
    nanosleep(&(struct timespec){0, 2000000}, NULL); /* the epoch is the server's ms clock */
    renew("b", 100, 50, 60000, 100, v); /* b says it holds 50 */
    assert_true(v[0] > epoch);
    assert_int_equal(v[3], 1);
    assert_int_equal(v[1], 50);
    renew("c", 100, 0, 60000, 100, v); /* c holds nothing: nothing while learning */
    assert_int_equal(v[1], 0);
    renew("a", 100, 50, 60000, 100, v);
    assert_int_equal(v[1], 50);
    assert_true(held_sum() <= 100);
}

static void a_limit_below_the_reserved_rates_is_refused(void **state)
{
    (void)state;
    redisReply *r = eval("renew a 300000 10 0 60000 100 0");
    freeReplyObject(r);
    r = eval("limit b 300000 500000");
    assert_int_equal(r->element[0]->integer, 0); /* 600/s reserved > 500/s */
    assert_int_equal(r->element[1]->integer, 600000);
    freeReplyObject(r);
    r = eval("limit b 300000 1000000");
    assert_int_equal(r->element[0]->integer, 1);
    freeReplyObject(r);
    long long v[8];
    char args[] = "renew a 300000 100 0 60000 100 0";
    r = eval(args);
    for (int i = 0; i < 8; i++)
        v[i] = r->element[i]->integer;
    freeReplyObject(r);
    assert_int_equal(v[4], 1000000);
    assert_int_equal(v[2], (1000000 - 300000) / 100); /* b's reserve counts once it renews */
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
#define T(name) cmocka_unit_test_setup_teardown(name, arm, disarm)
    const struct CMUnitTest tests[] = {
        T(split_table_in_c),
        T(split_table_in_lua),
        T(renewals_converge_to_the_split_and_never_overgrant),
        T(a_dead_brokers_slices_return_after_its_ttl),
        T(a_new_epoch_grants_only_what_is_held),
        T(a_limit_below_the_reserved_rates_is_refused),
    };
#undef T
    return cmocka_run_group_tests_name("share", tests, group_setup, group_teardown);
}
