/*
 * test_ha_follow.c - clients that follow the primary of a high-availability
 * group: two real sluiced nodes, a real redis-server on a Unix socket in the
 * test's directory, the stream on ipc:// sockets there too; the clients
 * name both nodes ("A|B").
 *
 * Pinned down: a client given both addresses (standby first) reaches the
 * primary and, across a kill -9 of it, has every keyed publish confirmed
 * and stored once; `sluice send` reading its standard input from a pipe
 * keeps going across a kill -9 of the primary, prints an id for every line
 * and exits 0, and the new primary holds every line; a consumer holding
 * deliveries when the primary is killed settles them after the failover
 * (refused: the new primary never leased them) and is given them again by
 * the new primary, without an attempt charged (each comes with attempt 1),
 * and every message once acknowledged is gone; a command that must not run
 * twice (msg.move), waiting on a primary that is stopped and then killed,
 * is not sent again to the new primary (SL_ECONNECT, "may have run"),
 * while one that may (level.list) is, and answered; one whose first
 * address refuses (nothing listens there) goes on to the next and runs
 * there once. TTL 1500 ms, standby timeout 3000 ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"
#include "th_ha.h"
#include "th_redis.h"

#define TTL_MS 1500
#define KEY "sluice:ha:{f}"

static char dir[64], repl[2][TH_HA_REPL_BYTES];
static th_redis redis;

static int arm(void **state)
{
    (void)state;
    return th_ha_arm(dir, sizeof dir, "/tmp/sluice-haf-XXXXXX", repl, &redis, 120);
}

static int disarm(void **state)
{
    (void)state;
    th_ha_disarm(dir, &redis);
    return 0;
}

/* node starts node i (1 or 2) of group f. */
static th_broker *node(int i)
{
    static const char *names[] = {"n1", "n2"};
    const char *extra[] = {"--ha", redis.url, "--ha-group", "f", "--ha-node", names[i - 1], "--repl-listen",
                           repl[i - 1], "--ha-ttl-ms", "1500", "--repl-standby-timeout-ms", "3000", NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    return b;
}

static long wait_sync(const char *want, unsigned timeout_ms)
{
    return th_redis_wait_hget(&redis, KEY, "sync", want, timeout_ms);
}

/* both joins "A|B" of the two nodes' endpoints, in the order given. */
static void both(const th_broker *a, const th_broker *b, char *out, size_t cap)
{
    snprintf(out, cap, "%s|%s", a->endpoint, b->endpoint);
}

/* group_holding starts both nodes, waits for n2 in sync and publishes n
 * messages to level 1 on n1, the primary. */
static void group_holding(unsigned n, th_broker **n1, th_broker **n2)
{
    *n1 = node(1);
    *n2 = node(2);
    assert_true(wait_sync("n2", 10000) >= 0);
    sl_client *p = th_client(*n1, 5000);
    assert_int_equal(th_put_many(p, 1, n, 1), SL_OK);
    sl_close(&p);
}

/* done stops the new primary n2 and frees the killed n1. */
static void done(th_broker *n1, th_broker *n2)
{
    assert_int_equal(th_broker_destroy(&n2), 0);
    th_broker_fini(n1);
    free(n1);
}


static void a_client_given_both_addresses_follows_the_primary_across_a_failover(void **state)
{
    (void)state;
    th_broker *n1 = node(1), *n2 = node(2);
    assert_true(wait_sync("n2", 10000) >= 0);
    char ep[700];
    both(n2, n1, ep, sizeof ep); /* the standby first: its redirect leads to the primary */
    sl_options o = {.timeout_ms = 15000, .heartbeat_ms = 200};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(ep, &o, &c), SL_OK);
    sl_stats s;
    assert_int_equal(sl_stats_get(c, &s), SL_OK);
    /* keyed publishes, 32 in flight; the primary is killed halfway: every one
     * is confirmed in the end (re-sent to the new primary), none twice */
    enum { N = 600 };
    char key[32];
    unsigned confirmed = 0, failed = 0;
    for (unsigned i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%u", i);
        sl_put m = {.body = key, .body_len = strlen(key), .level = 1, .key = key};
        uint64_t ticket;
        assert_int_equal(sl_send_async(c, &m, &ticket), SL_OK);
        if (i == N / 2)
            th_broker_kill9(n1);
        while (sl_send_pending(c) >= 32 || (i + 1 == N && sl_send_pending(c))) {
            sl_confirm cf;
            assert_int_equal(sl_send_wait(c, 15000, &cf), SL_OK);
            if (cf.err == SL_OK)
                confirmed++;
            else
                failed++;
        }
    }
    print_message("# a client of n2|n1: %u keyed publishes confirmed across the failover, %u failed\n", confirmed,
                  failed);
    assert_int_equal(failed, 0);
    assert_int_equal(confirmed, N);
    assert_int_equal(sl_stats_get(c, &s), SL_OK); /* now on n2, the new primary */
    assert_int_equal(s.level[1].depth, N);        /* every key once */
    sl_close(&c);
    done(n1, n2);
}

/* sluice send reading a pipe, the primary killed halfway: it goes on with
 * the new primary (sending again what was not confirmed: at least once),
 * prints an id for every line and exits 0. */
static void sluice_send_from_a_pipe_keeps_going_across_a_failover(void **state)
{
    (void)state;
    th_broker *n1 = node(1), *n2 = node(2);
    assert_true(wait_sync("n2", 10000) >= 0);
    static char cmd[2048], out[1 << 16];
    char ep[700], out_path[128];
    both(n1, n2, ep, sizeof ep);
    snprintf(out_path, sizeof out_path, "%s/send.out", dir);
    snprintf(cmd, sizeof cmd, "exec '%s' -b '%s' send -p 1 > '%s' 2>&1", th_bin("sluice"), ep, out_path);
    FILE *p = popen(cmd, "w");
    assert_non_null(p);
    enum { N = 400 };
    for (int i = 0; i < N; i++) { /* a few lines at a time, as a program writing them would */
        fprintf(p, "line-%d\n", i);
        fflush(p);
        if (i % 20 == 19)
            th_ha_pause_ms(20);
        if (i == N / 2)
            th_broker_kill9(n1);
    }
    int status = pclose(p);
    th_read_file(out_path, out, sizeof out);
    unsigned ids = 0;
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        ids += strspn(line, "0123456789") == strlen(line);
    print_message("# sluice send across a failover: exit %d, %u ids for %d lines\n",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, ids, N);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(ids, N);

    /* every line is on the new primary (an unconfirmed one maybe twice) */
    static unsigned char seen[N];
    memset(seen, 0, sizeof seen);
    sl_client *c = th_client(n2, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    unsigned distinct = 0;
    for (uint64_t until = th_now_ms() + 20000; distinct < N && th_now_ms() < until;) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        int i = -1;
        if (d->body_len > 5 && !memcmp(d->body, "line-", 5))
            i = atoi((const char *)d->body + 5);
        assert_true(i >= 0 && i < N);
        distinct += !seen[i];
        seen[i] = 1;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(distinct, N);
    sl_close(&c);
    done(n1, n2);
}

/* A consumer that names both nodes holds five deliveries, unsettled, when
 * the primary is killed: the new primary gives them again, without an
 * attempt charged, and the consumer's subscription follows by itself. */
static void deliveries_held_at_a_failover_come_again_uncharged(void **state)
{
    (void)state;
    enum { N = 20, HELD = 5 };
    th_broker *n1, *n2;
    group_holding(N, &n1, &n2);
    char ep[700];
    both(n2, n1, ep, sizeof ep);
    sl_options o = {.timeout_ms = 15000, .heartbeat_ms = 200};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(ep, &o, &c), SL_OK);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, HELD), SL_OK);
    uint64_t held[HELD];
    sl_delivery *work[HELD];
    for (int k = 0; k < HELD; k++) {
        assert_int_equal(sl_recv(c, 5000, &work[k]), SL_OK);
        assert_int_equal(work[k]->attempt, 1);
        held[k] = work[k]->id;
    }
    th_broker_kill9(n1);
    /* the work in hand ends after the failover: its acknowledgements reach a
     * primary that never leased these deliveries (they are refused, and
     * give their credit back), and the messages come again */
    assert_true(th_ha_serving(n2, NULL, TTL_MS + 10000, NULL) >= 0);
    for (int k = 0; k < HELD; k++) {
        sl_ack(c, work[k]);
        sl_delivery_free(&work[k]);
    }
    uint64_t acked[N];
    unsigned n = 0, again = 0, reports = 0;
    for (uint64_t until = th_now_ms() + 20000; n < N && th_now_ms() < until;) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) != SL_OK)
            continue;
        assert_int_equal(d->attempt, 1); /* a failover charges nothing */
        for (int k = 0; k < HELD; k++)
            again += d->id == held[k];
        int dup = 0;
        for (unsigned k = 0; k < n; k++)
            dup |= acked[k] == d->id;
        assert_false(dup);
        reports += sl_ack(c, d) != SL_OK; /* (a settling call reports an earlier one's refusal) */
        acked[n++] = d->id;
        sl_delivery_free(&d);
    }
    print_message("# a consumer of n2|n1: %u of %d acknowledged after the failover, %u of the %d it held again\n", n,
                  N, again, HELD);
    assert_int_equal(n, N);
    assert_int_equal(again, HELD);
    assert_true(reports <= HELD); /* the held ones' refusals, at most: the others were applied (below) */
    sl_stats s;
    assert_int_equal(sl_stats_get(c, &s), SL_OK); /* on n2 */
    assert_int_equal(s.level[1].depth, 0);
    assert_int_equal(s.level[1].inflight, 0);
    sl_close(&c);
    done(n1, n2);
}

/* A synchronous call on a thread of its own: msg.move, which must not run
 * twice, or level.list, which may. */
typedef struct call {
    sl_client *c;
    int once, rc;
    char err[256];
} call;

static void *call_run(void *arg)
{
    call *k = arg;
    if (k->once) {
        uint64_t after = 0, moved = 0;
        k->rc = sl_msg_move(k->c, 1, 2, NULL, 0, &after, &moved, NULL);
    } else {
        sl_level_info lv[SL_MAX_LEVELS];
        unsigned n = SL_MAX_LEVELS;
        k->rc = sl_level_list(k->c, lv, &n);
    }
    snprintf(k->err, sizeof k->err, "%s", sl_last_error(k->c));
    return NULL;
}

/* The primary stopped while two clients wait on it (a msg.move, a
 * level.list), then killed: the level.list is asked of the new primary and
 * answered; the msg.move is not sent again (a second run would move what
 * came since), its call ends SL_ECONNECT saying it may have run, and the
 * new primary has moved nothing. */
static void a_command_that_must_not_run_twice_is_not_sent_again(void **state)
{
    (void)state;
    enum { N = 10 };
    th_broker *n1, *n2;
    group_holding(N, &n1, &n2);
    char ep[700];
    both(n1, n2, ep, sizeof ep);
    sl_options o = {.timeout_ms = 15000, .heartbeat_ms = 200};
    call k[2] = {{.once = 1}, {.once = 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        sl_stats s;
        assert_int_equal(sl_connect(ep, &o, &k[i].c), SL_OK);
        assert_int_equal(sl_stats_get(k[i].c, &s), SL_OK); /* connected to n1 */
    }
    assert_int_equal(kill(n1->pid, SIGSTOP), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, call_run, &k[i]), 0);
    th_ha_pause_ms(500); /* both requests are out, to a node that cannot run them */
    th_broker_kill9(n1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    print_message("# msg.move: %s (%s); level.list: %s\n", sl_errname(k[0].rc), k[0].err, sl_errname(k[1].rc));
    assert_int_equal(k[1].rc, SL_OK);        /* asked again of n2 */
    assert_int_equal(k[0].rc, SL_ECONNECT);  /* not asked again */
    assert_non_null(strstr(k[0].err, "msg.move"));
    assert_non_null(strstr(k[0].err, "may have run"));
    sl_stats s;
    assert_int_equal(sl_stats_get(k[0].c, &s), SL_OK); /* the client goes on, on n2 */
    assert_int_equal(s.level[1].depth, N);              /* nothing moved */
    assert_int_equal(s.level[2].depth, 0);
    for (int i = 0; i < 2; i++)
        sl_close(&k[i].c);
    done(n1, n2);
}

/* The first address refuses (nothing listens there): a command that must
 * not run twice never reached a node, so the client goes on to the next
 * address with it, where it runs once. */
static void a_command_that_must_not_run_twice_goes_on_past_a_refused_address(void **state)
{
    (void)state;
    enum { N = 10 };
    th_broker *b;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    sl_client *p = th_client(b, 5000);
    assert_int_equal(th_put_many(p, 1, N, 1), SL_OK);
    sl_close(&p);
    char ep[700];
    snprintf(ep, sizeof ep, "ipc://%s/nobody.sock|%s", b->dir, b->endpoint);
    sl_options o = {.timeout_ms = 15000, .heartbeat_ms = 200};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(ep, &o, &c), SL_OK);
    uint64_t after = 0, moved = 0;
    assert_int_equal(sl_msg_move(c, 1, 2, NULL, 0, &after, &moved, NULL), SL_OK);
    assert_int_equal(moved, N);
    sl_stats s;
    assert_int_equal(sl_stats_get(c, &s), SL_OK);
    assert_int_equal(s.level[1].depth, 0);
    assert_int_equal(s.level[2].depth, N);
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_client_given_both_addresses_follows_the_primary_across_a_failover, arm,
                                        disarm),
        cmocka_unit_test_setup_teardown(sluice_send_from_a_pipe_keeps_going_across_a_failover, arm, disarm),
        cmocka_unit_test_setup_teardown(deliveries_held_at_a_failover_come_again_uncharged, arm, disarm),
        cmocka_unit_test_setup_teardown(a_command_that_must_not_run_twice_is_not_sent_again, arm, disarm),
        cmocka_unit_test(a_command_that_must_not_run_twice_goes_on_past_a_refused_address),
    };
    th_seed();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
