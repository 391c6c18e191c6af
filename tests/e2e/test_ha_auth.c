/*
 * test_ha_auth.c - a high-availability group with CURVE and an auth file:
 * two real sluiced nodes holding the same key pair (--curve-secret) and
 * the same --auth file, a real redis-server deciding which is primary.
 *
 * Pinned down: the stream between the nodes is CURVE-encrypted and only a
 * node holding the group's key joins it: the standby comes in sync (Redis
 * says sync = n2), every publish a producer's key had confirmed is served
 * by it after kill -9 of the primary; the standby's own client endpoint is
 * a CURVE server admitting the auth file's keys, so a principal's client
 * that reaches the standby is sent to the primary (SL_EREDIRECT), where a
 * stranger's key completes no handshake; and a standby started with
 * another key pair never joins the stream (the primary confirms alone,
 * Redis names no standby in sync, and that node holds no record), where a
 * client that knows the group's public key but holds another pair is
 * refused at the handshake and logged; a standby presenting a key of its
 * own (--repl-key) that the auth file names `replica` joins the stream,
 * and that key may do nothing on a client endpoint (SL_EPERM). TTL 1500 ms.
 */
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
#include <zmq.h>

#include "harness.h"
#include "th_ha.h"
#include "th_redis.h"

#define KEY "sluice:ha:{t}"
#define PUBLISHES 200

typedef struct keys {
    char pub[SL_KEY_BYTES], sec[SL_KEY_BYTES];
} keys;

static char dir[64], repl[2][TH_HA_REPL_BYTES], key_path[2][128], auth_path[128], replica_path[128];
static th_redis redis;
static keys group, other, producer, ops, stranger, replica;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0600), 0);
}

static void key_file(const char *path, const keys *k)
{
    char text[256];
    snprintf(text, sizeof text, "public = %s\nsecret = %s\n", k->pub, k->sec);
    write_text(path, text);
}

static int arm(void **state)
{
    (void)state;
    if (th_ha_arm(dir, sizeof dir, "/tmp/sluice-haauth-XXXXXX", repl, &redis, 120) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        snprintf(key_path[i], sizeof key_path[i], "%s/node%d.key", dir, i + 1);
    snprintf(auth_path, sizeof auth_path, "%s/auth.txt", dir);
    snprintf(replica_path, sizeof replica_path, "%s/replica.key", dir);
    if (sl_keygen(group.pub, group.sec) != SL_OK || sl_keygen(other.pub, other.sec) != SL_OK ||
        sl_keygen(producer.pub, producer.sec) != SL_OK || sl_keygen(ops.pub, ops.sec) != SL_OK ||
        sl_keygen(stranger.pub, stranger.sec) != SL_OK || sl_keygen(replica.pub, replica.sec) != SL_OK)
        return -1;
    char text[512];
    snprintf(text, sizeof text, "# the group's principals\nprod producer %s\nops admin %s\nn2 replica %s\n",
             producer.pub, ops.pub, replica.pub);
    write_text(auth_path, text);
    return 0;
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

/* node_with starts node i (1 or 2) of group t with the key file of
 * key_path[i-1] and, when repl_key, the stream's key pair of replica_path. */
static th_broker *node_with(int i, int repl_key)
{
    static const char *names[] = {"n1", "n2"};
    const char *extra[] = {"--ha", redis.url, "--ha-group", "t", "--ha-node", names[i - 1], "--repl-listen",
                           repl[i - 1], "--ha-ttl-ms", "1500", "--repl-standby-timeout-ms", "3000",
                           "--curve-secret", key_path[i - 1], "--auth", auth_path,
                           repl_key ? "--repl-key" : NULL, replica_path, NULL};
    th_broker *b;
    assert_int_equal(th_broker_new(extra, &b), 0);
    return b;
}

static th_broker *node(int i)
{
    return node_with(i, 0);
}

/* field reads one field of the group's hash ("" when absent). */
static void field(const char *f, char *out, size_t cap)
{
    th_redis_hget(&redis, KEY, f, out, cap);
}

/* wait_field waits up to timeout_ms for field f to read want; returns the ms, or -1. */
static long wait_field(const char *f, const char *want, unsigned timeout_ms)
{
    return th_redis_wait_hget(&redis, KEY, f, want, timeout_ms);
}

/* client connects to endpoint as k, the broker's key being server's. */
static sl_client *client(const char *endpoint, const keys *server, const keys *k, int timeout_ms)
{
    sl_client *c = NULL;
    sl_options o = {.timeout_ms = timeout_ms, .heartbeat_ms = 200, .server_key = server->pub,
                    .public_key = k->pub, .secret_key = k->sec};
    assert_int_equal(sl_connect(endpoint, &o, &c), SL_OK);
    return c;
}

/* depth waits up to timeout_ms for b to answer an admin's STATS as a
 * primary and returns the normal level's depth (-1: it never did). */
static long long depth(const th_broker *b, unsigned timeout_ms)
{
    sl_options o = {.server_key = group.pub, .public_key = ops.pub, .secret_key = ops.sec, .heartbeat_ms = 200};
    return th_ha_serving(b, &o, timeout_ms, NULL);
}

static void the_stream_is_encrypted_and_the_standby_redirects_principals(void **state)
{
    (void)state;
    key_file(key_path[0], &group);
    key_file(key_path[1], &group);
    th_broker *a = node(1);
    assert_true(wait_field("leader", "n1", 10000) >= 0);
    th_broker *b = node(2);
    assert_true(wait_field("sync", "n2", 15000) >= 0); /* the standby joined the CURVE stream */

    sl_client *p = client(a->endpoint, &group, &producer, 5000);
    for (int i = 0; i < PUBLISHES; i++) {
        char body[32];
        snprintf(body, sizeof body, "m%d", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        assert_int_equal(sl_send(p, &m, NULL), SL_OK);
    }
    sl_close(&p);

    /* the standby's endpoint: a principal's handshake passes and is redirected */
    sl_client *at_standby = client(b->endpoint, &group, &producer, 3000);
    sl_put m = {.body = "x", .body_len = 1, .level = 1};
    assert_int_equal(sl_send(at_standby, &m, NULL), SL_EREDIRECT);
    sl_close(&at_standby);
    /* a stranger's key completes no handshake there: nothing comes back */
    sl_client *s = client(b->endpoint, &group, &stranger, 1000);
    assert_int_not_equal(sl_send(s, &m, NULL), SL_OK);
    assert_int_not_equal(sl_send(s, &m, NULL), SL_EREDIRECT);
    sl_close(&s);

    assert_true(wait_field("sync", "n2", 10000) >= 0); /* (still: only a standby in sync promotes) */
    th_broker_kill9(a);
    assert_true(wait_field("leader", "n2", 15000) >= 0);
    assert_int_equal(depth(b, 15000), PUBLISHES); /* every confirmed publish, served by the promoted node */
    assert_int_equal(th_broker_destroy(&b), 0);
    th_broker_destroy(&a);
}

static void a_standby_with_another_key_never_joins(void **state)
{
    (void)state;
    key_file(key_path[0], &group);
    key_file(key_path[1], &other);
    th_broker *a = node(1);
    assert_true(wait_field("leader", "n1", 10000) >= 0);
    th_broker *b = node(2);
    /* the primary confirms alone (Redis records no standby in sync), and
     * the other key's node never becomes one */
    sl_client *p = client(a->endpoint, &group, &producer, 5000);
    sl_put m = {.body = "alone", .body_len = 5, .level = 1};
    for (int i = 0; i < 20; i++)
        assert_int_equal(sl_send(p, &m, NULL), SL_OK);
    sl_close(&p);
    char sync[64];
    for (int i = 0; i < 30; i++, pause_ms(100)) { /* 3 s: a standby in reach joins within a few hundred ms */
        field("sync", sync, sizeof sync);
        assert_string_equal(sync, "");
    }
    /* a client that knows the group's public key but holds another pair is
     * refused by the stream's ZAP handler, and the primary says so */
    void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_setsockopt(d, ZMQ_CURVE_SERVERKEY, group.pub, 40), 0);
    assert_int_equal(zmq_setsockopt(d, ZMQ_CURVE_PUBLICKEY, stranger.pub, 40), 0);
    assert_int_equal(zmq_setsockopt(d, ZMQ_CURVE_SECRETKEY, stranger.sec, 40), 0);
    assert_int_equal(zmq_connect(d, repl[0]), 0);
    zmq_send(d, "hello", 5, ZMQ_DONTWAIT);
    static char log[1 << 16];
    int refused = 0;
    for (int i = 0; i < 100 && !refused; i++, pause_ms(50)) {
        th_read_file(a->log, log, sizeof log);
        refused = strstr(log, "refused (CURVE") != NULL;
    }
    zmq_close(d);
    zmq_ctx_term(ctx);
    assert_true(refused);
    /* the stranger node holds no record: promoted by hand it would serve nothing */
    assert_int_equal(th_broker_stop(b), 0);
    assert_int_equal(th_broker_destroy(&a), 0);
    const char *plain[] = {"--curve-secret", key_path[1], "--auth", auth_path, NULL}; /* alone, no group */
    th_broker alone;
    assert_int_equal(th_broker_init(&alone, plain), 0);
    snprintf(alone.data, sizeof alone.data, "%s", b->data); /* the stranger node's own store */
    assert_int_equal(th_broker_start(&alone), 0);
    sl_client *c = client(alone.endpoint, &other, &ops, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, 0);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&alone), 0);
    th_broker_fini(&alone);
    th_broker_destroy(&b);
}

static void a_standby_presenting_a_replica_key_joins(void **state)
{
    (void)state;
    key_file(key_path[0], &group);
    key_file(key_path[1], &group);
    key_file(replica_path, &replica);
    th_broker *a = node(1);
    assert_true(wait_field("leader", "n1", 10000) >= 0);
    th_broker *b = node_with(2, 1);
    assert_true(wait_field("sync", "n2", 15000) >= 0); /* admitted by the auth file's replica line */
    sl_client *p = client(a->endpoint, &group, &producer, 5000);
    sl_put m = {.body = "r", .body_len = 1, .level = 1};
    assert_int_equal(sl_send(p, &m, NULL), SL_OK);
    sl_close(&p);
    /* the replica key may do nothing on a client endpoint */
    sl_client *r = client(a->endpoint, &group, &replica, 5000);
    assert_int_equal(sl_send(r, &m, NULL), SL_EPERM);
    sl_close(&r);
    assert_true(wait_field("sync", "n2", 10000) >= 0); /* (still: only a standby in sync promotes) */
    th_broker_kill9(a);
    assert_true(wait_field("leader", "n2", 15000) >= 0);
    assert_int_equal(depth(b, 15000), 1);
    assert_int_equal(th_broker_destroy(&b), 0);
    th_broker_destroy(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_stream_is_encrypted_and_the_standby_redirects_principals, arm, disarm),
        cmocka_unit_test_setup_teardown(a_standby_with_another_key_never_joins, arm, disarm),
        cmocka_unit_test_setup_teardown(a_standby_presenting_a_replica_key_joins, arm, disarm),
    };
    return cmocka_run_group_tests_name("ha_auth", tests, NULL, NULL);
}
