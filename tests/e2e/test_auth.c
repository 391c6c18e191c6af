/*
 * test_auth.c - who may do what, against the real sluiced with CURVE on:
 * the role matrix (every command the broker takes, for every role), keys
 * the broker does not know, plaintext clients, a client that claims another
 * User-Id, revocation by SIGHUP, level and tag allow-lists, malformed auth
 * files at start and on reload, a non-loopback listener without --auth, and
 * `sluice keygen` with the CLI's --key and --server-key.
 *
 * Keys are made fresh for each test (sl_keygen). The matrix speaks the wire
 * itself (a CURVE DEALER socket and proto/), so that every message type is
 * sent as it is, not through what the library happens to offer; what each
 * role may do is written out below from the specification, independently of
 * the broker's tables, and the test fails if a command has no line in it.
 */
#include <setjmp.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>

#include "harness.h"
#include "proto.h"
#include "sluice.h"

#ifndef ZMQ_METADATA
#define ZMQ_METADATA 95 /* libzmq 4.3 (draft API) */
#endif

/* ---- keys, files and the broker ---- */

typedef struct keys {
    char name[16];
    char pub[SL_KEY_BYTES], sec[SL_KEY_BYTES];
} keys;

enum { K_PRODUCER, K_CONSUMER, K_MONITOR, K_ADMIN, K_LIMITED, K_READER, K_STRANGER, K_COUNT };
static const char *const key_names[K_COUNT] = {"producer", "consumer", "monitor", "admin",
                                               "limited",  "reader",   "stranger"};

typedef struct rig {
    th_broker b;
    keys server, k[K_COUNT];
    char key_path[300], auth_path[300];
} rig;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* auth_write writes the auth file: every key but the stranger's, minus the
 * one numbered without (-1: none), then extra lines. */
static void auth_write(rig *r, int without, const char *extra)
{
    char text[4096] = "# principals of the test\n\n";
    for (int i = 0; i < K_COUNT; i++) {
        if (i == K_STRANGER || i == without)
            continue;
        const char *role = i == K_LIMITED ? "producer" : i == K_READER ? "consumer" : key_names[i];
        const char *opts = i == K_LIMITED ? " levels=low tags=order.*,audit" : i == K_READER ? " levels=low" : "";
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s %s %s%s   # %s\n", key_names[i], role,
                 r->k[i].pub, opts, role);
    }
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s", extra ? extra : "");
    write_text(r->auth_path, text);
}

/* rig_new makes the keys and files and starts the broker (start = 0: not). */
static rig *rig_new(int start)
{
    rig *r = calloc(1, sizeof *r);
    assert_non_null(r);
    assert_int_equal(th_broker_init(&r->b, NULL), 0);
    assert_int_equal(sl_keygen(r->server.pub, r->server.sec), SL_OK);
    for (int i = 0; i < K_COUNT; i++) {
        snprintf(r->k[i].name, sizeof r->k[i].name, "%s", key_names[i]);
        assert_int_equal(sl_keygen(r->k[i].pub, r->k[i].sec), SL_OK);
    }
    char text[300];
    snprintf(r->key_path, sizeof r->key_path, "%s/broker.key", r->b.dir);
    snprintf(r->auth_path, sizeof r->auth_path, "%s/auth.txt", r->b.dir);
    snprintf(text, sizeof text, "# the broker\npublic = %s\nsecret = %s\n", r->server.pub, r->server.sec);
    write_text(r->key_path, text);
    chmod(r->key_path, 0600);
    auth_write(r, -1, NULL);
    const char *extra[] = {"--curve-secret", r->key_path, "--auth", r->auth_path, NULL};
    for (int i = 0; extra[i]; i++)
        r->b.extra[i] = extra[i];
    if (start)
        assert_int_equal(th_broker_start(&r->b), 0);
    return r;
}

static void rig_destroy(rig **r)
{
    if ((*r)->b.pid)
        assert_int_equal(th_broker_stop(&(*r)->b), 0);
    th_broker_fini(&(*r)->b);
    free(*r);
    *r = NULL;
}

/* client_at connects to endpoint with k's keys (NULL: plaintext). */
static sl_client *client_at(const rig *r, const char *endpoint, const keys *k, int timeout_ms)
{
    sl_client *c = NULL;
    sl_options o = {.timeout_ms = timeout_ms, .heartbeat_ms = 200};
    if (k)
        o.server_key = r->server.pub, o.public_key = k->pub, o.secret_key = k->sec;
    assert_int_equal(sl_connect(endpoint, &o, &c), SL_OK);
    return c;
}

static sl_client *client_as(const rig *r, const keys *k, int timeout_ms)
{
    return client_at(r, r->b.endpoint, k, timeout_ms);
}

static sl_stats stats_as_admin(const rig *r)
{
    sl_stats st;
    sl_client *c = client_as(r, &r->k[K_ADMIN], 5000);
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    sl_close(&c);
    return st;
}

/* log_wait waits up to 10 s for text to appear in the broker's log. */
static int log_wait(const rig *r, const char *text)
{
    static char buf[1 << 16];
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; usleep(10000)) {
        th_read_file(r->b.log, buf, sizeof buf);
        if (strstr(buf, text))
            return 1;
    }
    return 0;
}

static int put(sl_client *c, int level, const char *tag)
{
    uint64_t id;
    sl_put m = {.body = "x", .body_len = 1, .level = level, .tag = tag};
    return sl_send(c, &m, &id);
}

/* ---- the wire, for the matrix ---- */

typedef struct raw {
    void *ctx, *sock;
    uint64_t seq;
} raw;

static void raw_open(raw *w, const rig *r, const keys *k, const char *metadata)
{
    int linger = 0;
    w->ctx = zmq_ctx_new();
    w->sock = zmq_socket(w->ctx, ZMQ_DEALER);
    w->seq = 1000;
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof linger), 0);
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_CURVE_SERVERKEY, r->server.pub, 40), 0);
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_CURVE_PUBLICKEY, k->pub, 40), 0);
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_CURVE_SECRETKEY, k->sec, 40), 0);
    if (metadata)
        assert_int_equal(zmq_setsockopt(w->sock, ZMQ_METADATA, metadata, strlen(metadata)), 0);
    assert_int_equal(zmq_connect(w->sock, r->b.endpoint), 0);
}

static void raw_close(raw *w)
{
    zmq_close(w->sock);
    zmq_ctx_term(w->ctx);
}

static void raw_send(raw *w, const proto_msg *m)
{
    th_wire_send(w->sock, m);
}

/* raw_answer waits (5 s) for the reply carrying seq and returns its type;
 * *code is the ERROR's code (0 otherwise). */
static proto_type raw_answer(raw *w, uint64_t seq, uint64_t *code)
{
    uint64_t until = th_now_ms() + 5000;
    *code = 0;
    while (th_now_ms() < until) {
        zmq_pollitem_t it = {.socket = w->sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 100) <= 0)
            continue;
        zmq_msg_t f;
        zmq_msg_init(&f);
        assert_true(zmq_msg_recv(&f, w->sock, 0) >= 0);
        proto_msg m;
        int rc = proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &m, NULL);
        zmq_msg_close(&f);
        if (rc == SL_OK && (m.present & PF(seq)) && m.seq == seq) {
            *code = m.type == PROTO_ERROR ? m.code : 0;
            return m.type;
        }
    }
    fail_msg("no reply to seq %llu within 5 s", (unsigned long long)seq);
    return PROTO_NONE;
}

/* ---- the matrix ---- */

enum { R_P = 1, R_C = 2, R_M = 4, R_A = 8, R_ALL = 15 };

/* What each role may send, from the specification: producer publishes;
 * consumer subscribes and settles; monitor reads stats, lists, explain;
 * admin everything; the handshake (HELLO without a subscription), PING, PONG
 * and BYE anyone. */
typedef struct expect {
    const char *what; /* a message type's name, or an admin command's */
    unsigned roles;
} expect;

static const expect msg_expect[] = {
    {"HELLO", R_ALL}, {"PUT", R_P | R_A},       {"CREDIT", R_C | R_A},    {"ACK", R_C | R_A},
    {"NACK", R_C | R_A}, {"TOUCH", R_C | R_A},  {"THROTTLED", R_C | R_A}, {"REJECT", R_C | R_A},
    {"STATS", R_M | R_A}, {"BYE", R_ALL},       {"PING", R_ALL},          {"PONG", R_ALL},
    {"ADMIN", 0 /* by command, below */},
};
static const expect cmd_expect[] = {
    {"level.list", R_M | R_A},  {"level.set", R_A},    {"level.pause", R_A},    {"level.resume", R_A},
    {"pool.list", R_M | R_A},   {"pool.resize", R_A},  {"pool.pause", R_A},     {"pool.resume", R_A},
    {"pool.autoscale", R_A},    {"sink.set", R_A},     {"sink.show", R_M | R_A}, {"explain", R_M | R_A},
    {"dead.list", R_M | R_A},   {"dead.peek", R_A},    {"dead.requeue", R_A},   {"dead.purge", R_A},
    {"pool.delete", R_A},
    {"tag.set", R_A},           {"tag.list", R_M | R_A}, {"tag.pause", R_A},    {"tag.resume", R_A},
    {"msg.peek", R_A},          {"msg.delete", R_A},   {"msg.purge", R_A},      {"msg.move", R_A},
    {"backup", R_A},            {"backup.status", R_M | R_A}, {"settings.export", R_M | R_A},
    {"sink.resume", R_A},
    {"web.login", R_ALL /* a console link, each principal its own */},
    {"ha.status", R_M | R_A},   {"ha.switchover", R_A}, {"ha.recover", R_A},
};

static const expect *expect_find(const expect *t, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].what, what))
            return &t[i];
    return NULL;
}

/* build fills m as a valid message of type t (for ADMIN: command cmd), with
 * seq; subscribe makes a HELLO that joins a pool. */
static void build(proto_msg *m, proto_type t, int cmd, int subscribe, uint64_t seq)
{
    proto_mask req = 0, opt = 0;
    proto_init(m, t);
    assert_int_equal(proto_fields_of(t, &req, &opt), 0);
    if ((req | opt) & PF(seq))
        proto_set(m, seq, seq);
    if (req & PF(v))
        proto_set(m, v, PROTO_VERSION);
    if (req & PF(body))
        proto_set_str(m, PROTO_F_body, "x", 1);
    if (req & PF(token))
        proto_set(m, token, 123456789);
    if (req & PF(n))
        proto_set(m, n, 1);
    if (subscribe)
        proto_set_str(m, PROTO_F_pool, "matrix", 6);
    if (t == PROTO_PUT)
        proto_set(m, level, 2);
    if (t == PROTO_ADMIN) {
        proto_mask args = 0;
        const char *name = proto_cmd_name((proto_cmd)cmd);
        proto_set_str(m, PROTO_F_cmd, name, strlen(name));
        assert_int_equal(proto_cmd_def((proto_cmd)cmd, &args, NULL, NULL, NULL), 0);
        if (args & PF(level))
            proto_set(m, level, 0);
        if (args & PF(pool))
            proto_set_str(m, PROTO_F_pool, "matrix", 6);
        if (args & PF(size))
            proto_set(m, size, 1);
        if (args & PF(id))
            proto_set(m, id, 1);
        if (args & PF(tag))
            proto_set_str(m, PROTO_F_tag, "matrix", 6);
        if (args & PF(to_level))
            proto_set(m, to_level, 1);
        if (args & PF(path)) /* relative: refused by backup's own check, after the role's */
            proto_set_str(m, PROTO_F_path, "matrix", 6);
        if (args & PF(node)) /* not a node of a group: refused by ha.recover's own check, after the role's */
            proto_set_str(m, PROTO_F_node, "matrix", 6);
        args &= ~(PF(level) | PF(pool) | PF(size) | PF(id) | PF(tag) | PF(to_level) | PF(path) | PF(node));
        if (args)
            fail_msg("ADMIN %s requires an argument this test does not fill: add it to build()", name);
    }
}

/* refused sends m on w and reports whether it was refused with SL_EPERM.
 * Messages that are not answered when accepted (CREDIT, PONG) are followed
 * by a PING, whose PONG leaves after any refusal of them. */
static int refused(raw *w, proto_msg *m)
{
    uint64_t code, seq = m->seq;
    raw_send(w, m);
    if (m->type == PROTO_CREDIT || m->type == PROTO_PONG) {
        proto_msg ping;
        proto_init(&ping, PROTO_PING);
        proto_set(&ping, seq, seq + 1);
        raw_send(w, &ping);
        uint64_t until = th_now_ms() + 5000;
        int saw = 0;
        while (th_now_ms() < until) {
            zmq_pollitem_t it = {.socket = w->sock, .events = ZMQ_POLLIN};
            if (zmq_poll(&it, 1, 100) <= 0)
                continue;
            zmq_msg_t f;
            zmq_msg_init(&f);
            assert_true(zmq_msg_recv(&f, w->sock, 0) >= 0);
            proto_msg r;
            int rc = proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &r, NULL);
            zmq_msg_close(&f);
            if (rc != SL_OK || !(r.present & PF(seq)))
                continue;
            if (r.type == PROTO_ERROR && r.seq == seq && r.code == SL_EPERM)
                saw = 1;
            if (r.type == PROTO_PONG && r.seq == seq + 1)
                return saw;
        }
        fail_msg("no PONG within 5 s");
    }
    proto_type t = raw_answer(w, seq, &code);
    return t == PROTO_ERROR && code == SL_EPERM;
}

#define T_C2B 1
#define T_ANY 1
#define T_B2C 0

static void role_matrix_every_command_every_role(void **state)
{
    (void)state;
    static const struct {
        proto_type type;
        const char *name;
        int to_broker;
    } types[] = {
#define TYPE_(ID, name, dir, req, opt) {PROTO_##ID, name, T_##dir},
        PROTO_MSGS(TYPE_)
#undef TYPE_
    };
    static const int role_keys[4] = {K_PRODUCER, K_CONSUMER, K_MONITOR, K_ADMIN};
    rig *r = rig_new(1);
    uint64_t refusals = 0, checked = 0;
    for (int ri = 0; ri < 4; ri++) {
        unsigned bit = 1u << ri;
        raw w;
        raw_open(&w, r, &r->k[role_keys[ri]], NULL);
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            if (!types[i].to_broker)
                continue;
            const expect *e = expect_find(msg_expect, sizeof msg_expect / sizeof msg_expect[0], types[i].name);
            if (!e)
                fail_msg("%s has no line in this test's msg_expect: say which roles may send it", types[i].name);
            int ncases = types[i].type == PROTO_ADMIN ? PROTO_CMD_COUNT_ : types[i].type == PROTO_HELLO ? 2 : 1;
            for (int k = 0; k < ncases; k++) {
                proto_msg m;
                unsigned roles = e->roles;
                const char *what = types[i].name;
                if (types[i].type == PROTO_ADMIN) {
                    what = proto_cmd_name((proto_cmd)k);
                    const expect *ce = expect_find(cmd_expect, sizeof cmd_expect / sizeof cmd_expect[0], what);
                    if (!ce)
                        fail_msg("ADMIN %s has no line in this test's cmd_expect", what);
                    roles = ce->roles;
                }
                if (types[i].type == PROTO_HELLO && k == 1) {
                    what = "HELLO (subscribing)";
                    roles = R_C | R_A;
                }
                build(&m, types[i].type, k, types[i].type == PROTO_HELLO && k == 1, w.seq += 2);
                int was_refused = refused(&w, &m);
                int allowed = (roles & bit) != 0;
                if (was_refused == allowed)
                    fail_msg("%s as %s: %s, expected %s", what, key_names[role_keys[ri]],
                             was_refused ? "refused" : "allowed", allowed ? "allowed" : "refused");
                refusals += !allowed;
                checked++;
            }
        }
        raw_close(&w);
    }
    printf("# role matrix: %llu cases, %llu refused as specified\n", (unsigned long long)checked,
           (unsigned long long)refusals);
    assert_true(refusals > 0 && checked > refusals);
    sl_stats st = stats_as_admin(r);
    assert_int_equal(st.auth_refused, refusals); /* each refusal counted once */
    rig_destroy(&r);
}

static void unknown_key_is_refused_at_the_handshake(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    sl_client *c = client_as(r, &r->k[K_STRANGER], 5000);
    uint64_t t0 = th_now_ms();
    assert_int_equal(put(c, 2, NULL), SL_EPERM); /* told, not left to time out */
    assert_true(th_now_ms() - t0 < 4000);
    sl_close(&c);
    sl_stats st = stats_as_admin(r);
    assert_true(st.handshakes_refused >= 1);
    assert_int_equal(st.auth_refused, 0); /* nothing reached the command check */
    for (unsigned l = 0; l < st.nlevels; l++)
        assert_int_equal(st.level[l].enqueued, 0);
    rig_destroy(&r);
}

static void plaintext_client_is_refused(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    sl_client *c = client_as(r, NULL, 5000);
    assert_int_equal(put(c, 2, NULL), SL_EPERM);
    sl_close(&c);
    /* a client left idle while its connection is closed and made again: the
     * send may find no connection to queue on, and is told at once rather
     * than blocked for its whole timeout (one in ten did under load) */
    for (int i = 0; i < 12; i++) {
        c = client_as(r, NULL, 10000);
        usleep((useconds_t)(i % 4) * 70 * 1000);
        uint64_t t0 = th_now_ms();
        assert_int_equal(put(c, 2, NULL), SL_EPERM);
        assert_true(th_now_ms() - t0 < 8000);
        sl_close(&c);
    }
    sl_stats st = stats_as_admin(r);
    assert_int_equal(st.auth_refused, 0);
    for (unsigned l = 0; l < st.nlevels; l++)
        assert_int_equal(st.level[l].enqueued, 0);
    rig_destroy(&r);
}

/* refused_grows waits up to 5 s for handshakes_refused to pass before. */
static uint64_t refused_grows(const rig *r, uint64_t before)
{
    uint64_t now = before;
    for (uint64_t until = th_now_ms() + 5000; now <= before && th_now_ms() < until; usleep(20000))
        now = stats_as_admin(r).handshakes_refused;
    return now;
}

/* Every refused client is counted in handshakes_refused, whichever way it
 * was refused: by ZAP (a key not in the auth file), or inside libzmq before
 * ZAP is asked (a plaintext client: mechanism mismatch; a CURVE client with
 * the wrong server key: its HELLO cannot be opened). Before, only the first
 * of the three counted. */
static void every_refused_client_is_counted(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    uint64_t before = stats_as_admin(r).handshakes_refused, now;
    sl_client *c = client_as(r, &r->k[K_STRANGER], 2000);
    put(c, 2, NULL);
    sl_close(&c);
    now = refused_grows(r, before);
    assert_true(now > before);
    before = now;
    c = client_as(r, NULL, 2000); /* plaintext */
    put(c, 2, NULL);
    sl_close(&c);
    now = refused_grows(r, before);
    if (now <= before)
        fail_msg("a plaintext client's refusal is not counted (%llu)", (unsigned long long)now);
    before = now;
    sl_options o = {.timeout_ms = 1000, .heartbeat_ms = 200, .server_key = r->k[K_ADMIN].pub,
                    .public_key = r->k[K_ADMIN].pub, .secret_key = r->k[K_ADMIN].sec}; /* not the broker's key */
    assert_int_equal(sl_connect(r->b.endpoint, &o, &c), SL_OK);
    put(c, 2, NULL);
    sl_close(&c);
    now = refused_grows(r, before);
    if (now <= before)
        fail_msg("a client with the wrong server key is not counted (%llu)", (unsigned long long)now);
    sl_stats st = stats_as_admin(r);
    for (unsigned l = 0; l < st.nlevels; l++)
        assert_int_equal(st.level[l].enqueued, 0);
    rig_destroy(&r);
}

/* A client cannot name itself: libzmq will not send a User-Id property, and
 * a look-alike property is not the ZAP handler's User-Id. */
static void forged_user_id_is_refused(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    char forged[80];
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    snprintf(forged, sizeof forged, "User-Id:%s", r->k[K_ADMIN].pub);
    assert_int_equal(zmq_setsockopt(s, ZMQ_METADATA, forged, strlen(forged)), -1);
    zmq_close(s);
    zmq_ctx_term(ctx);
    snprintf(forged, sizeof forged, "X-User-Id:%s", r->k[K_ADMIN].pub);
    raw w;
    raw_open(&w, r, &r->k[K_PRODUCER], forged);
    proto_msg m;
    build(&m, PROTO_ADMIN, PROTO_CMD_pool_resize, 0, 7);
    assert_true(refused(&w, &m));
    raw_close(&w);
    rig_destroy(&r);
}

static void revocation_by_sighup_refuses_the_next_command(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    sl_client *p = client_as(r, &r->k[K_PRODUCER], 5000), *c = client_as(r, &r->k[K_CONSUMER], 5000);
    assert_int_equal(put(p, 2, NULL), SL_OK);
    unsigned lv = 2;
    assert_int_equal(sl_subscribe(c, "revoked", &lv, 1, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    /* remove both, and reload */
    char text[4096];
    snprintf(text, sizeof text, "monitor monitor %s\nadmin admin %s\n", r->k[K_MONITOR].pub, r->k[K_ADMIN].pub);
    write_text(r->auth_path, text);
    assert_int_equal(kill(r->b.pid, SIGHUP), 0);
    assert_true(log_wait(r, "reloaded"));
    assert_int_equal(put(p, 2, NULL), SL_EPERM);     /* the open connection's next command */
    /* its connection is closed: the settlement cannot be applied. Either it
     * left before the client saw the connection go (settlements do not wait:
     * the refusal, or the lost connection, comes back on the flush), or the
     * send itself finds no connection (ZeroMQ holds it until its timeout) */
    int acked = sl_ack(c, d);
    int flushed = acked == SL_OK ? sl_flush(c, 5000) : acked;
    if (flushed != SL_EPERM && flushed != SL_ECONNECT && flushed != SL_ETIMEDOUT)
        fail_msg("settling after revocation: %s", sl_errname(flushed));
    sl_stats st = stats_as_admin(r);
    assert_int_equal(st.level[2].depth, 1);          /* its delivery went back */
    assert_int_equal(st.level[2].inflight, 0);
    assert_int_equal(st.consumers, 0);               /* its consumer was dropped */
    sl_delivery_free(&d);
    sl_close(&c);
    sl_close(&p);
    rig_destroy(&r);
}

static void level_and_tag_allow_lists(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    sl_client *c = client_as(r, &r->k[K_LIMITED], 5000);
    assert_int_equal(put(c, 0, "order.1"), SL_EPERM); /* high: not its level */
    assert_string_equal(sl_errname(SL_EPERM), "SL_EPERM");
    assert_non_null(strstr(sl_last_error(c), "high"));
    assert_int_equal(put(c, 2, "order.1"), SL_OK);
    assert_int_equal(put(c, 2, "audit"), SL_OK);
    assert_int_equal(put(c, 2, "invoice.9"), SL_EPERM); /* not its tags */
    assert_int_equal(put(c, 2, NULL), SL_EPERM);
    unsigned high = 0; /* a producer cannot subscribe at all */
    assert_int_equal(sl_subscribe(c, "w", &high, 1, 1), SL_EPERM);
    sl_close(&c);
    sl_stats st = stats_as_admin(r);
    assert_int_equal(st.level[0].enqueued, 0);
    assert_int_equal(st.level[2].enqueued, 2);
    /* a consumer limited to low: naming high is refused, naming nothing
     * subscribes it to low only */
    sl_client *admin = client_as(r, &r->k[K_ADMIN], 5000), *reader = client_as(r, &r->k[K_READER], 5000);
    assert_int_equal(put(admin, 0, "urgent"), SL_OK);
    assert_int_equal(sl_subscribe(reader, "readers", &high, 1, 4), SL_EPERM);
    sl_close(&reader);
    reader = client_as(r, &r->k[K_READER], 5000);
    assert_int_equal(sl_subscribe(reader, "readers", NULL, 0, 4), SL_OK);
    for (int i = 0; i < 2; i++) { /* the two low messages, never the high one */
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(reader, 5000, &d), SL_OK);
        assert_int_equal(d->level, 2);
        assert_int_equal(sl_ack(reader, d), SL_OK);
        sl_delivery_free(&d);
    }
    sl_delivery *none = NULL;
    assert_int_equal(sl_recv(reader, 300, &none), SL_ETIMEDOUT);
    st = stats_as_admin(r);
    assert_int_equal(st.level[0].depth, 1);
    sl_close(&reader);
    sl_close(&admin);
    rig_destroy(&r);
}

static void malformed_auth_file_stops_the_start_and_is_refused_on_reload(void **state)
{
    (void)state;
    rig *r = rig_new(0);
    auth_write(r, -1, "eve superuser 0123456789012345678901234567890123456789\n");
    assert_int_equal(th_broker_start(&r->b), -1);
    char log[1 << 14], where[320];
    th_read_file(r->b.log, log, sizeof log);
    snprintf(where, sizeof where, "auth.txt:%d", 9); /* 2 header lines + 6 principals + eve */
    assert_non_null(strstr(log, where));
    assert_non_null(strstr(log, "superuser"));
    /* now start well, then reload a broken file: the old table stays */
    auth_write(r, -1, NULL);
    assert_int_equal(th_broker_start(&r->b), 0);
    auth_write(r, -1, "eve admin not-a-key\n");
    assert_int_equal(kill(r->b.pid, SIGHUP), 0);
    assert_true(log_wait(r, "reload refused"));
    sl_client *c = client_as(r, &r->k[K_PRODUCER], 5000);
    assert_int_equal(put(c, 2, NULL), SL_OK);
    sl_close(&c);
    rig_destroy(&r);
}

/* --admin-listen: admin commands on the admin endpoint only, publishing and
 * consuming on the main one only; with auth on, and with auth off. */
static void admin_endpoint_serves_admin_only(void **state)
{
    (void)state;
    for (int with_auth = 1; with_auth >= 0; with_auth--) {
        rig *r = rig_new(0);
        char admin_ep[320];
        snprintf(admin_ep, sizeof admin_ep, "ipc://%s/admin.sock", r->b.dir);
        int n = with_auth ? 4 : 0;
        r->b.extra[n] = "--admin-listen";
        r->b.extra[n + 1] = admin_ep;
        r->b.extra[n + 2] = NULL;
        assert_int_equal(th_broker_start(&r->b), 0);
        const keys *admin = with_auth ? &r->k[K_ADMIN] : NULL, *monitor = with_auth ? &r->k[K_MONITOR] : NULL;
        sl_client *main_c = client_as(r, admin, 5000), *admin_c = client_at(r, admin_ep, admin, 5000);
        assert_int_equal(sl_level_pause(main_c, 0, 1), SL_EPERM);
        assert_non_null(strstr(sl_last_error(main_c), "admin endpoint"));
        assert_int_equal(sl_level_pause(admin_c, 0, 1), SL_OK);
        assert_int_equal(sl_level_pause(admin_c, 0, 0), SL_OK);
        assert_int_equal(put(admin_c, 2, NULL), SL_EPERM); /* publish on the main endpoint */
        assert_int_equal(put(main_c, 2, NULL), SL_OK);
        sl_client *mon = client_at(r, admin_ep, monitor, 5000);
        sl_stats st;
        assert_int_equal(sl_stats_get(mon, &st), SL_OK); /* reading: either endpoint */
        assert_int_equal(st.level[2].enqueued, 1);
        assert_int_equal(sl_stats_get(main_c, &st), SL_OK);
        sl_close(&mon);
        sl_close(&admin_c);
        sl_close(&main_c);
        rig_destroy(&r);
    }
}

static void exposed_listener_needs_auth(void **state)
{
    (void)state;
    char out[256];
    const char *argv[] = {th_bin("sluiced"), "--listen", "tcp://0.0.0.0:1", "--data", "/nonexistent/x", NULL};
    assert_int_equal(th_run(argv, NULL, out, sizeof out), 2);
    const char *half[] = {th_bin("sluiced"), "--auth", "/nonexistent/a", "--data", "/nonexistent/x", NULL};
    assert_int_equal(th_run(half, NULL, out, sizeof out), 2);
}

static void keygen_and_the_cli_keys(void **state)
{
    (void)state;
    rig *r = rig_new(0);
    char cmd[8500], out[1024], path[400];
    char bin[PATH_MAX];
    assert_non_null(realpath(th_bin("sluice"), bin));
    snprintf(cmd, sizeof cmd, "cd %s && %s keygen cli --json", r->b.dir, bin);
    const char *sh[] = {"/bin/sh", "-c", cmd, NULL};
    assert_int_equal(th_run(sh, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"key_file\":\"cli.key\""));
    struct stat st;
    snprintf(path, sizeof path, "%s/cli.key", r->b.dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    keys cli;
    assert_int_equal(sl_key_read(path, cli.pub, cli.sec), SL_OK);
    assert_int_equal(strlen(cli.sec), 40);
    assert_int_equal(th_run(sh, NULL, out, sizeof out), 1); /* never overwrites */
    char text[300], server_pub[400];
    snprintf(text, sizeof text, "monitor-cli monitor %s\n", cli.pub);
    auth_write(r, -1, text);
    snprintf(server_pub, sizeof server_pub, "%s/broker.pub", r->b.dir);
    snprintf(text, sizeof text, "public = %s\n", r->server.pub);
    write_text(server_pub, text);
    assert_int_equal(th_broker_start(&r->b), 0);
    const char *stats[] = {th_bin("sluice"), "-b", r->b.endpoint, "--key", path, "stats", "--json",
                           "--server-key", server_pub, NULL};
    assert_int_equal(th_run(stats, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"levels\""));
    assert_non_null(strstr(out, "\"auth_refused\":0"));
    const char *send[] = {th_bin("sluice"), "-b", r->b.endpoint, "--key", path, "--server-key", server_pub,
                          "send", "x", NULL};
    assert_int_equal(th_run(send, NULL, out, sizeof out), 1); /* a monitor may not publish */
    rig_destroy(&r);
}

/* ---- revocation closes connections ---- */

/* A raw CURVE DEALER and a monitor of its events. */
typedef struct watched {
    raw w;
    void *mon;
    unsigned events; /* every event seen so far, or-ed */
} watched;

static void watched_open(watched *x, const rig *r, const keys *k, const char *name)
{
    char ep[64];
    raw_open(&x->w, r, k, NULL);
    snprintf(ep, sizeof ep, "inproc://mon-%s", name);
    assert_int_equal(zmq_socket_monitor(x->w.sock, ep, ZMQ_EVENT_ALL), 0);
    x->mon = zmq_socket(x->w.ctx, ZMQ_PAIR);
    assert_int_equal(zmq_connect(x->mon, ep), 0);
    x->events = 0;
}

/* watched_wait collects events for up to timeout_ms, returning early once
 * one of want has been seen; returns the events seen (all of them). */
static unsigned watched_wait(watched *x, unsigned want, int timeout_ms)
{
    uint64_t until = th_now_ms() + (uint64_t)timeout_ms;
    while (!(x->events & want) && th_now_ms() < until) {
        zmq_pollitem_t it = {.socket = x->mon, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 50) <= 0)
            continue;
        zmq_msg_t f;
        zmq_msg_init(&f);
        assert_true(zmq_msg_recv(&f, x->mon, 0) >= 6);
        uint16_t ev;
        memcpy(&ev, zmq_msg_data(&f), sizeof ev);
        x->events |= ev;
        assert_true(zmq_msg_recv(&f, x->mon, 0) >= 0); /* the address */
        zmq_msg_close(&f);
    }
    return x->events;
}

static void watched_close(watched *x)
{
    zmq_close(x->mon);
    raw_close(&x->w);
}

/* ping sends PING {seq} on x and waits for its PONG (or an ERROR); returns
 * the answer's type. */
static proto_type ping(watched *x, uint64_t seq, uint64_t *code)
{
    proto_msg m;
    proto_init(&m, PROTO_PING);
    proto_set(&m, seq, seq);
    raw_send(&x->w, &m);
    return raw_answer(&x->w, seq, code);
}

/* After a SIGHUP removes a key, its open connections are closed by the
 * broker (the peer's monitor sees DISCONNECTED) and their reconnection is
 * refused at the handshake; one that had sent nothing yet is closed at its
 * first message; other keys' connections stay up and keep their answers. */
static void revocation_by_sighup_closes_open_connections(void **state)
{
    (void)state;
    rig *r = rig_new(1);
    watched prod, mon, quiet;
    uint64_t code;
    watched_open(&prod, r, &r->k[K_PRODUCER], "prod");
    watched_open(&mon, r, &r->k[K_MONITOR], "mon");
    watched_open(&quiet, r, &r->k[K_CONSUMER], "quiet");
    assert_int_equal(ping(&prod, 1, &code), PROTO_PONG);
    assert_int_equal(ping(&mon, 2, &code), PROTO_PONG);
    assert_true(watched_wait(&quiet, ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 5000) & ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    char text[4096];
    snprintf(text, sizeof text, "monitor monitor %s\nadmin admin %s\n", r->k[K_MONITOR].pub, r->k[K_ADMIN].pub);
    write_text(r->auth_path, text);
    assert_int_equal(kill(r->b.pid, SIGHUP), 0);
    assert_true(log_wait(r, "1 connections of removed keys closed"));
    /* the producer's connection is gone, and so is its way back in */
    assert_true(watched_wait(&prod, ZMQ_EVENT_DISCONNECTED, 5000) & ZMQ_EVENT_DISCONNECTED);
    assert_true(watched_wait(&prod, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, 5000) & ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    /* the quiet one: closed at its first message (refused, but the refusal
     * may not get out before the connection goes) */
    assert_false(watched_wait(&quiet, ZMQ_EVENT_DISCONNECTED, 300) & ZMQ_EVENT_DISCONNECTED);
    proto_msg m;
    proto_init(&m, PROTO_PING);
    proto_set(&m, seq, 3);
    raw_send(&quiet.w, &m);
    assert_true(watched_wait(&quiet, ZMQ_EVENT_DISCONNECTED, 5000) & ZMQ_EVENT_DISCONNECTED);
    /* the monitor's stays up and is answered */
    assert_false(watched_wait(&mon, ZMQ_EVENT_DISCONNECTED, 300) & ZMQ_EVENT_DISCONNECTED);
    assert_int_equal(ping(&mon, 4, &code), PROTO_PONG);
    assert_false(mon.events & ZMQ_EVENT_DISCONNECTED);
    watched_close(&quiet);
    watched_close(&mon);
    watched_close(&prod);
    rig_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(role_matrix_every_command_every_role, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(unknown_key_is_refused_at_the_handshake, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(plaintext_client_is_refused, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(every_refused_client_is_counted, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(forged_user_id_is_refused, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(revocation_by_sighup_refuses_the_next_command, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(revocation_by_sighup_closes_open_connections, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(level_and_tag_allow_lists, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(malformed_auth_file_stops_the_start_and_is_refused_on_reload,
                                        th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(admin_endpoint_serves_admin_only, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(exposed_listener_needs_auth, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(keygen_and_the_cli_keys, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("auth", tests, NULL, NULL);
}
