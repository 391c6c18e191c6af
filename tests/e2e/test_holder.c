/*
 * test_holder.c - a delivery belongs to the connection it went to, against
 * the real sluiced with CURVE on:
 *
 *   - settlements by anyone else are refused: a second consumer and a
 *     principal limited to another level try ACK, NACK (ten years), TOUCH
 *     (a day), REJECT and THROTTLED (ten years) on another's delivery, with
 *     its real token (leaked) and with guessed ones: every one SL_ESTALE,
 *     counted (settle_refused, settle_foreign), the sink not paused, and the
 *     message still out with its holder, who acknowledges it;
 *   - a routing id is not an identity: a principal limited to low that
 *     connects with the routing id of a vanished high consumer, and says a
 *     word, gets none of its deliveries and none of its credit, and those
 *     deliveries come back uncharged (attempt 1) to the next high
 *     consumer; one that says nothing gets nothing either, however long it
 *     listens while high messages arrive;
 *   - a consumer made by a bare CREDIT (no HELLO) is served its
 *     principal's levels only;
 *   - NACK's delay and TOUCH's lease are cut at --max-nack-delay and
 *     --max-lease, and TOUCH's OK says the lease granted;
 *   - a consumer may pause only what it may consume: a principal limited
 *     to low that says THROTTLED pauses low alone (the sink neither paused
 *     nor cut, high flowing), until `level resume`; and a THROTTLED for a
 *     tag pauses that tag in low only, not in high.
 *
 * The routing-id cases speak the wire (a CURVE DEALER with ZMQ_ROUTING_ID
 * and proto/), since the client library never chooses its routing id.
 */
#include <setjmp.h>
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

/* ---- keys, the auth file and the broker ---- */

typedef struct keys {
    char pub[SL_KEY_BYTES], sec[SL_KEY_BYTES];
} keys;

enum { K_ADMIN, K_WORKER, K_OTHER, K_LOW, K_HIGH, K_COUNT };
static const char *const names[K_COUNT] = {"ops", "worker", "other", "lowonly", "highonly"};
static const char *const roles[K_COUNT] = {"admin", "consumer", "consumer", "consumer", "consumer"};
static const char *const limits[K_COUNT] = {"", "", "", " levels=low", " levels=high"};

typedef struct rig {
    th_broker b;
    keys server, k[K_COUNT];
} rig;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* rig_new makes the keys and files and starts a broker with auth, a long
 * heartbeat (so that a PING never races what a test does), --max-lease
 * 60 s (the lease is 30 s) and --max-nack-delay 2 s. */
static rig *rig_new(void)
{
    static char key_path[300], auth_path[300];
    rig *r = calloc(1, sizeof *r);
    assert_non_null(r);
    assert_int_equal(th_broker_init(&r->b, NULL), 0);
    assert_int_equal(sl_keygen(r->server.pub, r->server.sec), SL_OK);
    char text[4096] = "";
    for (int i = 0; i < K_COUNT; i++) {
        assert_int_equal(sl_keygen(r->k[i].pub, r->k[i].sec), SL_OK);
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s %s %s%s\n", names[i], roles[i], r->k[i].pub,
                 limits[i]);
    }
    snprintf(auth_path, sizeof auth_path, "%s/auth.txt", r->b.dir);
    write_text(auth_path, text);
    snprintf(key_path, sizeof key_path, "%s/broker.key", r->b.dir);
    snprintf(text, sizeof text, "public = %s\nsecret = %s\n", r->server.pub, r->server.sec);
    write_text(key_path, text);
    chmod(key_path, 0600);
    const char *extra[] = {"--curve-secret", key_path, "--auth", auth_path, "--heartbeat-ms", "60000",
                           "--max-lease", "60000", "--max-nack-delay", "2000", NULL};
    for (int i = 0; extra[i]; i++)
        r->b.extra[i] = extra[i];
    assert_int_equal(th_broker_start(&r->b), 0);
    return r;
}

static void rig_destroy(rig **r)
{
    assert_int_equal(th_broker_stop(&(*r)->b), 0);
    th_broker_fini(&(*r)->b);
    free(*r);
    *r = NULL;
}

static sl_client *client_as(const rig *r, int who)
{
    sl_client *c = NULL;
    sl_options o = {.timeout_ms = 5000, .heartbeat_ms = 200, .server_key = r->server.pub,
                    .public_key = r->k[who].pub, .secret_key = r->k[who].sec};
    assert_int_equal(sl_connect(r->b.endpoint, &o, &c), SL_OK);
    return c;
}

static uint64_t put(sl_client *c, unsigned level, const char *body)
{
    uint64_t id = 0;
    sl_put m = {.body = body, .body_len = strlen(body), .level = (int)level};
    assert_int_equal(sl_send(c, &m, &id), SL_OK);
    return id;
}

static void explain(sl_client *admin, uint64_t id, sl_explain_info *e)
{
    assert_int_equal(sl_explain(admin, id, e), SL_OK);
}

/* ---- the wire ---- */

typedef struct raw {
    void *ctx, *sock;
    uint64_t seq;
} raw;

/* raw_open connects a CURVE DEALER with k's keys and, when rid is not
 * NULL, that routing id. */
static void raw_open(raw *w, const rig *r, int who, const char *rid)
{
    int linger = 0;
    w->ctx = zmq_ctx_new();
    w->sock = zmq_socket(w->ctx, ZMQ_DEALER);
    w->seq = 1000;
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof linger), 0);
    if (rid)
        assert_int_equal(zmq_setsockopt(w->sock, ZMQ_ROUTING_ID, rid, strlen(rid)), 0);
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_CURVE_SERVERKEY, r->server.pub, 40), 0);
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_CURVE_PUBLICKEY, r->k[who].pub, 40), 0);
    assert_int_equal(zmq_setsockopt(w->sock, ZMQ_CURVE_SECRETKEY, r->k[who].sec, 40), 0);
    assert_int_equal(zmq_connect(w->sock, r->b.endpoint), 0);
}

/* raw_open_watched is raw_open, then waits (5 s) for the CURVE handshake to
 * complete, on a monitor of the socket: the connection is up without a
 * byte sent to the broker by the application. */
static void raw_open_watched(raw *w, const rig *r, int who, const char *rid)
{
    static unsigned n;
    char ep[64];
    w->ctx = zmq_ctx_new();
    snprintf(ep, sizeof ep, "inproc://holder-mon-%u", ++n);
    void *sock = zmq_socket(w->ctx, ZMQ_DEALER);
    assert_int_equal(zmq_socket_monitor(sock, ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);
    void *mon = zmq_socket(w->ctx, ZMQ_PAIR);
    assert_int_equal(zmq_connect(mon, ep), 0);
    int linger = 0, timeout = 5000;
    w->sock = sock;
    w->seq = 1000;
    assert_int_equal(zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger), 0);
    assert_int_equal(zmq_setsockopt(sock, ZMQ_ROUTING_ID, rid, strlen(rid)), 0);
    assert_int_equal(zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, r->server.pub, 40), 0);
    assert_int_equal(zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, r->k[who].pub, 40), 0);
    assert_int_equal(zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, r->k[who].sec, 40), 0);
    assert_int_equal(zmq_connect(sock, r->b.endpoint), 0);
    assert_int_equal(zmq_setsockopt(mon, ZMQ_RCVTIMEO, &timeout, sizeof timeout), 0);
    zmq_msg_t ev;
    zmq_msg_init(&ev);
    assert_true(zmq_msg_recv(&ev, mon, 0) >= 6); /* HANDSHAKE_SUCCEEDED: the only event asked for */
    uint16_t event;
    memcpy(&event, zmq_msg_data(&ev), sizeof event);
    assert_int_equal(event, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    while (zmq_msg_more(&ev) && zmq_msg_recv(&ev, mon, 0) >= 0)
        ;
    zmq_msg_close(&ev);
    zmq_socket_monitor(sock, NULL, 0);
    zmq_setsockopt(mon, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(mon);
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

/* raw_next waits up to timeout_ms for the next message of type want (other
 * types are skipped; PING answered), decoded into *m. Returns 1, or 0 when
 * none came. */
static int raw_next(raw *w, proto_type want, int timeout_ms, proto_msg *m, zmq_msg_t *keep)
{
    uint64_t until = th_now_ms() + (uint64_t)timeout_ms;
    while (th_now_ms() < until) {
        zmq_pollitem_t it = {.socket = w->sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 20) <= 0)
            continue;
        zmq_msg_close(keep);
        zmq_msg_init(keep);
        assert_true(zmq_msg_recv(keep, w->sock, 0) >= 0);
        if (proto_decode(zmq_msg_data(keep), zmq_msg_size(keep), m, NULL) != SL_OK)
            continue;
        if (m->type == want)
            return 1;
    }
    return 0;
}

/* raw_ping_within sends PING and waits up to timeout_ms for its PONG: the
 * broker has read this connection. Returns whether it came. */
static int raw_ping_within(raw *w, int timeout_ms)
{
    proto_msg m, r;
    zmq_msg_t f;
    zmq_msg_init(&f);
    proto_init(&m, PROTO_PING);
    proto_set(&m, seq, ++w->seq);
    raw_send(w, &m);
    int got = 0;
    while (!got && raw_next(w, PROTO_PONG, timeout_ms, &r, &f))
        got = (r.present & PF(seq)) && r.seq == w->seq;
    zmq_msg_close(&f);
    return got;
}

/* raw_subscribe sends HELLO with pool and credit and waits for WELCOME. */
static void raw_subscribe(raw *w, const char *pool, uint64_t credit)
{
    proto_msg m, r;
    zmq_msg_t f;
    zmq_msg_init(&f);
    proto_init(&m, PROTO_HELLO);
    proto_set(&m, seq, ++w->seq);
    proto_set(&m, v, PROTO_VERSION);
    proto_set_str(&m, PROTO_F_pool, pool, strlen(pool));
    proto_set(&m, credit, credit);
    raw_send(w, &m);
    assert_true(raw_next(w, PROTO_WELCOME, 5000, &r, &f));
    zmq_msg_close(&f);
}

/* ---- settlements by anyone but the holder ---- */

/* forge sends every settlement with token t from c and returns how many
 * were sent; each must be refused (sl_flush). */
static unsigned forge(sl_client *c, uint64_t t)
{
    sl_delivery d = {.token = t, .lease_ms = 30000};
    int rc;
    unsigned n = 0;
    assert_int_equal(sl_ack(c, &d), SL_OK);
    n++;
    rc = sl_nack(c, &d, 4000000000u); /* 46 days, past --max-nack-delay anyway */
    assert_true(rc == SL_OK || rc == SL_ESTALE); /* the ACK's refusal may be reported here */
    n++;
    rc = sl_touch(c, &d, 86400000); /* a day */
    assert_true(rc == SL_OK || rc == SL_ESTALE);
    n++;
    rc = sl_reject(c, &d, "forged");
    assert_true(rc == SL_OK || rc == SL_ESTALE);
    n++;
    rc = sl_throttled(c, &d, 4000000000u);
    assert_true(rc == SL_OK || rc == SL_ESTALE);
    n++;
    rc = sl_flush(c, 5000);
    assert_true(rc == SL_ESTALE || rc == SL_OK);
    return n;
}

static void settlements_by_anyone_but_the_holder_are_refused(void **state)
{
    (void)state;
    rig *r = rig_new();
    sl_client *admin = client_as(r, K_ADMIN), *worker = client_as(r, K_WORKER), *other = client_as(r, K_OTHER),
              *low = client_as(r, K_LOW);
    assert_int_equal(sl_subscribe(worker, "work", NULL, 0, 1), SL_OK);
    assert_int_equal(sl_subscribe(other, "work", NULL, 0, 4), SL_OK);
    assert_int_equal(sl_subscribe(low, "low", NULL, 0, 4), SL_OK);
    uint64_t id = put(admin, 0, "charge card");
    sl_delivery *d = NULL, *none = NULL;
    assert_int_equal(sl_recv(worker, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    uint64_t refusals = 0, foreign = 0;
    uint64_t guesses[] = {d->token + 1, d->token - 1, d->token ^ 1, (d->token & ~0xFFFFFULL) | 1, 1, 2, 3};
    sl_client *forgers[] = {other, low};
    for (int f = 0; f < 2; f++) {
        uint64_t before = sl_refused(forgers[f]);
        unsigned n = forge(forgers[f], d->token); /* the real token, leaked */
        foreign += n;
        for (size_t g = 0; g < sizeof guesses / sizeof guesses[0]; g++)
            n += forge(forgers[f], guesses[g]);
        refusals += n;
        assert_int_equal(sl_refused(forgers[f]) - before, n); /* every one refused */
    }
    /* the message is still out with its holder: not deleted, not dead, not
     * hidden, its lease not stretched; nobody else got it; the sink runs */
    sl_explain_info e;
    explain(admin, id, &e);
    assert_string_equal(e.state, "leased");
    assert_true(e.until_ms <= 30000);
    assert_non_null(strstr(e.why, "pool work"));
    assert_int_equal(sl_recv(other, 200, &none), SL_ETIMEDOUT);
    sl_sink_info sink;
    assert_int_equal(sl_sink_show(admin, &sink), SL_OK);
    assert_int_equal(sink.paused_ms, 0);
    assert_true(sink.effective_rate_milli == sink.rate_milli);
    sl_stats st;
    sl_stats_more more = {.size = sizeof more};
    assert_int_equal(sl_stats_get_more(admin, &st, NULL, &more), SL_OK);
    assert_int_equal(more.settle_refused, refusals);
    assert_int_equal(more.settle_foreign, foreign);
    assert_int_equal(st.level[0].dead, 0);
    /* and its holder settles it */
    assert_int_equal(sl_ack(worker, d), SL_OK);
    assert_int_equal(sl_flush(worker, 5000), SL_OK);
    assert_int_equal(sl_refused(worker), 0);
    explain(admin, id, &e);
    assert_string_equal(e.state, "gone");
    printf("# %llu forged settlements refused, %llu of them with the real token\n", (unsigned long long)refusals,
           (unsigned long long)foreign);
    sl_delivery_free(&d);
    sl_close(&low);
    sl_close(&other);
    sl_close(&worker);
    sl_close(&admin);
    rig_destroy(&r);
}

/* ---- a routing id is not an identity ---- */

static void routing_id_of_a_vanished_consumer_gets_nothing(void **state)
{
    (void)state;
    rig *r = rig_new();
    sl_client *admin = client_as(r, K_ADMIN);
    proto_msg m;
    zmq_msg_t f;
    zmq_msg_init(&f);
    /* a high consumer with a routing id of its own takes two deliveries */
    raw victim;
    raw_open(&victim, r, K_HIGH, "fixed-rid-7");
    raw_subscribe(&victim, "urgent", 10);
    uint64_t a = put(admin, 0, "a"), b = put(admin, 0, "b");
    for (int i = 0; i < 2; i++) {
        assert_true(raw_next(&victim, PROTO_DELIVER, 5000, &m, &f));
        assert_int_equal(m.attempt, 1);
    }
    raw_close(&victim); /* it vanishes, its deliveries unsettled */
    /* a principal limited to low takes its routing id and says a word */
    raw thief;
    raw_open(&thief, r, K_LOW, "fixed-rid-7");
    /* until the broker has let the victim's connection go, a second one
     * with its routing id is turned away (libzmq's ROUTER): on a loaded
     * machine that can outlast a ping, so the thief comes back until one is
     * answered */
    int heard = raw_ping_within(&thief, 2000);
    for (int i = 0; i < 10 && !heard; i++) {
        raw_close(&thief);
        raw_open(&thief, r, K_LOW, "fixed-rid-7");
        heard = raw_ping_within(&thief, 2000);
    }
    assert_true(heard);
    uint64_t c = put(admin, 0, "c");
    assert_false(raw_next(&thief, PROTO_DELIVER, 1500, &m, &f)); /* nothing: not a, b nor c */
    /* a and b came back uncharged: the next high consumer gets them first, attempt 1 */
    sl_client *next = client_as(r, K_HIGH);
    assert_int_equal(sl_subscribe(next, "urgent", NULL, 0, 8), SL_OK);
    uint64_t want[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(next, 5000, &d), SL_OK);
        assert_int_equal(d->id, want[i]);
        assert_int_equal(d->attempt, 1);
        assert_int_equal(sl_ack(next, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(sl_flush(next, 5000), SL_OK);
    sl_close(&next);
    raw_close(&thief);

    /* one that takes the routing id and says nothing gets nothing either */
    raw_open(&victim, r, K_HIGH, "fixed-rid-8");
    raw_subscribe(&victim, "urgent", 10);
    uint64_t d1 = put(admin, 0, "d");
    assert_true(raw_next(&victim, PROTO_DELIVER, 5000, &m, &f));
    assert_int_equal(m.id, d1);
    raw_close(&victim);
    raw listener;
    raw_open_watched(&listener, r, K_LOW, "fixed-rid-8"); /* connected, and silent */
    uint64_t e1 = put(admin, 0, "e"), e2 = put(admin, 0, "f");
    assert_false(raw_next(&listener, PROTO_DELIVER, 1500, &m, &f));
    next = client_as(r, K_HIGH);
    assert_int_equal(sl_subscribe(next, "urgent", NULL, 0, 8), SL_OK);
    uint64_t got = 0;
    for (int i = 0; i < 3; i++) { /* d (charged: its consumer vanished with it), e and f */
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(next, 5000, &d), SL_OK);
        got |= d->id == d1 ? 1 : d->id == e1 ? 2 : d->id == e2 ? 4 : 0;
        assert_int_equal(sl_ack(next, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(got, 7);
    assert_int_equal(sl_flush(next, 5000), SL_OK);
    sl_close(&next);
    raw_close(&listener);
    zmq_msg_close(&f);
    sl_close(&admin);
    rig_destroy(&r);
}

/* A consumer that grants credit without HELLO is a member of the default
 * pool, within its principal's levels. */
static void bare_credit_is_served_its_levels_only(void **state)
{
    (void)state;
    rig *r = rig_new();
    sl_client *admin = client_as(r, K_ADMIN);
    uint64_t high = put(admin, 0, "high"), low = put(admin, 2, "low");
    raw w;
    raw_open(&w, r, K_LOW, NULL);
    proto_msg m;
    zmq_msg_t f;
    zmq_msg_init(&f);
    proto_init(&m, PROTO_CREDIT);
    proto_set(&m, n, 5);
    raw_send(&w, &m);
    assert_true(raw_next(&w, PROTO_DELIVER, 5000, &m, &f));
    assert_int_equal(m.id, low);
    assert_false(raw_next(&w, PROTO_DELIVER, 1000, &m, &f));
    sl_explain_info e;
    explain(admin, high, &e);
    assert_string_equal(e.state, "ready");
    zmq_msg_close(&f);
    raw_close(&w);
    sl_close(&admin);
    rig_destroy(&r);
}

/* NACK's delay and TOUCH's lease are bounded (--max-nack-delay 2 s,
 * --max-lease 60 s), and TOUCH's OK says the lease granted. */
static void nack_delay_and_touch_are_bounded(void **state)
{
    (void)state;
    rig *r = rig_new();
    sl_client *admin = client_as(r, K_ADMIN), *worker = client_as(r, K_WORKER);
    uint64_t id = put(admin, 1, "job");
    raw w;
    raw_open(&w, r, K_WORKER, NULL);
    raw_subscribe(&w, "work", 1);
    proto_msg m, ok;
    zmq_msg_t f;
    zmq_msg_init(&f);
    assert_true(raw_next(&w, PROTO_DELIVER, 5000, &m, &f));
    uint64_t token = m.token;
    proto_init(&m, PROTO_TOUCH);
    proto_set(&m, seq, ++w.seq);
    proto_set(&m, token, token);
    proto_set(&m, lease_ms, 36000000); /* ten hours */
    raw_send(&w, &m);
    assert_true(raw_next(&w, PROTO_OK, 5000, &ok, &f));
    assert_true(ok.present & PF(lease_ms));
    assert_int_equal(ok.lease_ms, 60000);
    sl_explain_info e;
    explain(admin, id, &e);
    assert_true(e.until_ms > 30000 && e.until_ms <= 60000);
    proto_init(&m, PROTO_NACK);
    proto_set(&m, seq, ++w.seq);
    proto_set(&m, token, token);
    proto_set(&m, delay_ms, 315360000000ULL); /* ten years */
    raw_send(&w, &m);
    assert_true(raw_next(&w, PROTO_OK, 5000, &ok, &f));
    explain(admin, id, &e);
    assert_string_equal(e.state, "delayed");
    assert_true(e.until_ms <= 2000);
    raw_close(&w);
    /* back within the bound */
    assert_int_equal(sl_subscribe(worker, "work", NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(worker, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    assert_int_equal(d->attempt, 2);
    assert_int_equal(sl_ack(worker, d), SL_OK);
    assert_int_equal(sl_flush(worker, 5000), SL_OK);
    sl_delivery_free(&d);
    zmq_msg_close(&f);
    sl_close(&worker);
    sl_close(&admin);
    rig_destroy(&r);
}

/* What a THROTTLED may pause follows the consumer's principal. */
static void limited_consumer_pauses_only_its_levels(void **state)
{
    (void)state;
    rig *r = rig_new();
    sl_client *admin = client_as(r, K_ADMIN), *worker = client_as(r, K_WORKER), *low = client_as(r, K_LOW);
    assert_int_equal(sl_sink_set(admin, 1000 * 1000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_level_fair(admin, 0, 1), SL_OK);
    assert_int_equal(sl_level_fair(admin, 2, 1), SL_OK);
    assert_int_equal(sl_subscribe(low, "low", NULL, 0, 1), SL_OK);
    uint64_t l1 = put(admin, 2, "l1");
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(low, 5000, &d), SL_OK);
    assert_int_equal(d->id, l1);
    assert_int_equal(sl_throttled(low, d, 600000), SL_OK); /* ten minutes, for the sink */
    assert_int_equal(sl_flush(low, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_close(&low);
    sl_sink_info s;
    assert_int_equal(sl_sink_show(admin, &s), SL_OK);
    assert_int_equal(s.paused_ms, 0);                      /* not the sink */
    assert_true(s.effective_rate_milli == 1000 * 1000);    /* nor its rate */
    sl_level_info lv[SL_MAX_LEVELS];
    uint64_t thr[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list_ex(admin, lv, thr, &n), SL_OK);
    assert_true(thr[2] > 290000 && thr[2] <= 300000); /* low, at most --max-throttle-pause */
    assert_true(thr[0] == 0 && thr[1] == 0);
    sl_stats st;
    sl_stats_more more = {.size = sizeof more};
    assert_int_equal(sl_stats_get_more(admin, &st, NULL, &more), SL_OK);
    assert_true(more.throttled_ms[2] > 0 && more.throttled_ms[0] == 0);
    /* high flows; low waits */
    assert_int_equal(sl_subscribe(worker, "work", NULL, 0, 1), SL_OK);
    uint64_t h1 = put(admin, 0, "h1");
    assert_int_equal(sl_recv(worker, 5000, &d), SL_OK);
    assert_int_equal(d->id, h1);
    assert_int_equal(sl_ack(worker, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(worker, 300, &d), SL_ETIMEDOUT);
    assert_int_equal(sl_level_pause(admin, 2, 0), SL_OK); /* level resume low */
    assert_int_equal(sl_recv(worker, 5000, &d), SL_OK);
    assert_int_equal(d->id, l1);
    assert_int_equal(d->attempt, 1);
    assert_int_equal(sl_ack(worker, d), SL_OK);
    assert_int_equal(sl_flush(worker, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_close(&worker);
    /* a tag's pause from it holds the tag in low only */
    uint64_t a_low = 0, a_high;
    sl_put m = {.body = "a", .body_len = 1, .level = 2, .tag = "acme"};
    assert_int_equal(sl_send(admin, &m, &a_low), SL_OK);
    low = client_as(r, K_LOW);
    assert_int_equal(sl_subscribe(low, "low", NULL, 0, 1), SL_OK);
    assert_int_equal(sl_recv(low, 5000, &d), SL_OK);
    assert_int_equal(d->id, a_low);
    assert_int_equal(sl_throttled_scope(low, d, 600000, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(low, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_close(&low);
    m.level = 0;
    assert_int_equal(sl_send(admin, &m, &a_high), SL_OK);
    worker = client_as(r, K_WORKER);
    assert_int_equal(sl_subscribe(worker, "work", NULL, 0, 1), SL_OK);
    assert_int_equal(sl_recv(worker, 5000, &d), SL_OK);
    assert_int_equal(d->id, a_high); /* acme goes in high */
    assert_int_equal(sl_ack(worker, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(worker, 300, &d), SL_ETIMEDOUT); /* and waits in low */
    sl_explain_info e;
    explain(admin, a_low, &e);
    assert_non_null(strstr(e.why, "tag 'acme' was throttled by its service"));
    sl_close(&worker);
    sl_close(&admin);
    rig_destroy(&r);
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(settlements_by_anyone_but_the_holder_are_refused, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(routing_id_of_a_vanished_consumer_gets_nothing, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(bare_credit_is_served_its_levels_only, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(nack_delay_and_touch_are_bounded, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(limited_consumer_pauses_only_its_levels, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("holder", tests, NULL, NULL);
}
