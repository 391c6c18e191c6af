/*
 * test_client_local.c - the client library against a scripted peer, no broker.
 *
 * Each test binds a real ZeroMQ ROUTER socket on ipc:// in its own temporary
 * directory and, where it needs answers, serves it from a thread running a
 * small handler: the "fake broker" speaks the wire protocol through proto/,
 * so what is tested is the library's behaviour on the wire (timeouts, seq
 * matching, error mapping, confirmation order, reconnection, credit windows,
 * administration requests and the POOL messages that tell a share), not a
 * mock.
 *
 * The fake records what it received (scalars only, since strings point into
 * frames it frees). The test reads the record after fake_stop has joined the
 * thread, or through the atomic counter while it runs. Every test is bounded
 * by the client's timeouts and, as a backstop, by alarm(): a hung test kills
 * the run rather than stalling it. Nothing here is random.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "proto.h"
#include "sluice.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define TEST_ALARM_S 20
#define SEEN_MAX     32

/* fake.variant: how the admin handlers answer */
enum { VARIANT_NORMAL, VARIANT_TOO_MANY_LEVELS, VARIANT_RAGGED_COLUMNS, VARIANT_NO_RATES };

typedef struct seen {
    proto_type type;
    proto_mask present;
    uint64_t seq, token, credit, delay_ms, lease_ms, n;
    uint64_t id, level, size, enabled, deadline_ms, aging_ms, min, max, target_wait_ms;
    uint64_t cost, retry_ms, rate_milli, min_rate_milli, burst, max_inflight;
    char pool[PROTO_MAX_NAME + 1];
    char cmd[PROTO_MAX_NAME + 1];
    char body[64];
} seen;

typedef struct fake fake;
typedef void (*fake_fn)(fake *f, const proto_msg *m);

struct fake {
    char dir[64];
    char endpoint[128];
    void *ctx, *router;
    pthread_t thread;
    bool running;
    atomic_int stop;
    fake_fn on_msg;
    unsigned char peer[256];
    size_t peer_len;
    uint64_t held_seq; /* for handlers that answer late */
    uint64_t puts;
    uint64_t delivered; /* by answer_credit */
    int variant;       /* for handlers that can answer in more than one way */
    atomic_int nseen;
    seen seen[SEEN_MAX];
};

/* ---- the fake broker ---- */

static void router_open(fake *f)
{
    int linger_ms = 0;
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    assert_non_null(f->router);
    assert_int_equal(zmq_setsockopt(f->router, ZMQ_LINGER, &linger_ms, sizeof linger_ms), 0);
    assert_int_equal(zmq_bind(f->router, f->endpoint), 0);
}

static void fake_send(fake *f, const proto_msg *m)
{
    proto_wbuf b = {0};
    assert_int_equal(proto_encode(m, &b), SL_OK);
    zmq_send(f->router, f->peer, f->peer_len, ZMQ_SNDMORE);
    zmq_send(f->router, b.data, b.len, 0);
    proto_wbuf_free(&b);
}

static void record(fake *f, const proto_msg *m)
{
    int n = atomic_load(&f->nseen);
    if (n >= SEEN_MAX)
        return;
    seen *s = &f->seen[n];
    *s = (seen){.type = m->type, .present = m->present, .seq = m->seq, .token = m->token,
                .credit = m->credit, .delay_ms = m->delay_ms, .lease_ms = m->lease_ms, .n = m->n,
                .id = m->id, .level = m->level, .size = m->size, .enabled = m->enabled,
                .deadline_ms = m->deadline_ms, .aging_ms = m->aging_ms, .min = m->min,
                .max = m->max, .target_wait_ms = m->target_wait_ms, .cost = m->cost,
                .retry_ms = m->retry_ms, .rate_milli = m->rate_milli,
                .min_rate_milli = m->min_rate_milli, .burst = m->burst,
                .max_inflight = m->max_inflight};
    if (proto_has(m, PROTO_F_pool))
        memcpy(s->pool, m->pool.ptr, m->pool.len);
    if (proto_has(m, PROTO_F_cmd))
        memcpy(s->cmd, m->cmd.ptr, m->cmd.len);
    if (proto_has(m, PROTO_F_body) && m->body.len < sizeof s->body && m->body.len)
        memcpy(s->body, m->body.ptr, m->body.len);
    atomic_store(&f->nseen, n + 1);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t item = {.socket = f->router, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, 20) <= 0)
            continue;
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, f->router, 0) >= 0 && zmq_msg_more(&id) &&
            zmq_msg_recv(&body, f->router, 0) >= 0 && zmq_msg_size(&id) <= sizeof f->peer) {
            proto_msg m;
            f->peer_len = zmq_msg_size(&id);
            memcpy(f->peer, zmq_msg_data(&id), f->peer_len);
            if (proto_decode(zmq_msg_data(&body), zmq_msg_size(&body), &m, NULL) == SL_OK) {
                record(f, &m);
                if (f->on_msg)
                    f->on_msg(f, &m);
            }
        }
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
    return NULL;
}

static void fake_start(fake *f, fake_fn on_msg)
{
    f->on_msg = on_msg;
    atomic_store(&f->stop, 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
    f->running = true;
}

static void fake_stop(fake *f)
{
    if (!f->running)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    f->running = false;
}

static void reply_error(fake *f, uint64_t seq, uint64_t code, const char *text)
{
    proto_msg r;
    proto_init(&r, PROTO_ERROR);
    proto_set(&r, seq, seq);
    proto_set(&r, code, code);
    proto_set_str(&r, PROTO_F_msg, text, strlen(text));
    fake_send(f, &r);
}

static void reply_seq(fake *f, proto_type type, uint64_t seq)
{
    proto_msg r;
    proto_init(&r, type);
    proto_set(&r, seq, seq);
    if (type == PROTO_PUT_OK)
        proto_set(&r, id, 100 + f->puts);
    fake_send(f, &r);
}

/* names_set sets m's level names to n names: high, normal, low, then l3,
 * l4, ... */
static void names_set(proto_msg *m, uint32_t n)
{
    static const char *const names[] = {"high", "normal", "low", "l3",  "l4",  "l5",
                                        "l6",   "l7",     "l8",  "l9",  "l10", "l11",
                                        "l12",  "l13",    "l14", "l15", "l16"};
    assert_true(n <= sizeof names / sizeof names[0]);
    m->names.n = n;
    for (uint32_t i = 0; i < n; i++)
        m->names.v[i] = (proto_buf){names[i], (uint32_t)strlen(names[i])};
    m->present |= PF(names);
}

/* column_set sets the array field f of m to v[0..n). */
static void column_set(proto_msg *m, proto_field f, proto_u64s *col, uint32_t n, const uint64_t *v)
{
    col->n = n;
    memcpy(col->v, v, n * sizeof *v);
    m->present |= (proto_mask)1 << f;
}

static void send_pool(fake *f, const char *pool, uint64_t size, uint64_t share)
{
    proto_msg r;
    proto_init(&r, PROTO_POOL);
    proto_set_str(&r, PROTO_F_pool, pool, strlen(pool));
    proto_set(&r, size, size);
    proto_set(&r, share, share);
    fake_send(f, &r);
}

static void reply_welcome(fake *f, uint64_t seq)
{
    proto_msg r;
    proto_init(&r, PROTO_WELCOME);
    proto_set(&r, seq, seq);
    proto_set(&r, v, PROTO_VERSION);
    names_set(&r, f->variant == VARIANT_TOO_MANY_LEVELS ? 17 : 3);
    proto_set(&r, heartbeat_ms, 1000);
    proto_set(&r, lease_ms, 30000);
    proto_set(&r, max_body, 1024);
    fake_send(f, &r);
}

/* send_deliver_cost sends a DELIVER; cost 0 leaves the field out. */
static void send_deliver_cost(fake *f, uint64_t id, uint64_t token, const char *body,
                              const char *tag, uint64_t cost)
{
    proto_msg r;
    proto_init(&r, PROTO_DELIVER);
    proto_set(&r, id, id);
    proto_set(&r, token, token);
    proto_set(&r, level, 1);
    proto_set(&r, attempt, 2);
    proto_set(&r, lease_ms, 5000);
    proto_set_str(&r, PROTO_F_body, body, strlen(body));
    if (tag)
        proto_set_str(&r, PROTO_F_tag, tag, strlen(tag));
    if (cost)
        proto_set(&r, cost, cost);
    fake_send(f, &r);
}

static void send_deliver(fake *f, uint64_t id, uint64_t token, const char *body, const char *tag)
{
    send_deliver_cost(f, id, token, body, tag, 0);
}

/* ---- fixtures ---- */

static int setup(void **state)
{
    fake *f = calloc(1, sizeof *f);
    assert_non_null(f);
    alarm(TEST_ALARM_S);
    strcpy(f->dir, "/tmp/sluice-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->endpoint, sizeof f->endpoint, "ipc://%s/s.sock", f->dir);
    f->ctx = zmq_ctx_new();
    assert_non_null(f->ctx);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fake *f = *state;
    char path[160];
    fake_stop(f);
    if (f->router)
        zmq_close(f->router);
    zmq_ctx_term(f->ctx);
    snprintf(path, sizeof path, "%s/s.sock", f->dir);
    unlink(path);
    rmdir(f->dir);
    free(f);
    alarm(0);
    return 0;
}

static sl_client *client_open(const fake *f, int timeout_ms)
{
    sl_options o = {.timeout_ms = timeout_ms};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(f->endpoint, &o, &c), SL_OK);
    assert_non_null(c);
    return c;
}

static double elapsed_s(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- handlers ---- */

static void answer_everything(fake *f, const proto_msg *m)
{
    switch (m->type) {
    case PROTO_HELLO:
        reply_welcome(f, m->seq);
        break;
    case PROTO_PUT:
        if (m->body.len == 4 && memcmp(m->body.ptr, "fail", 4) == 0)
            reply_error(f, m->seq, SL_EFULL, "level is full");
        else
            reply_seq(f, PROTO_PUT_OK, m->seq);
        f->puts++;
        break;
    case PROTO_ACK:
    case PROTO_NACK:
    case PROTO_TOUCH:
        reply_seq(f, PROTO_OK, m->seq);
        break;
    default:
        break;
    }
}

static void answer_stale(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_ACK)
        reply_error(f, m->seq, SL_ESTALE, "x");
}

/* The first request goes unanswered; the second gets, in this order, a late
 * error for the first, a reply for a seq never used, then its own reply. */
static void answer_late(fake *f, const proto_msg *m)
{
    if (!f->held_seq) {
        f->held_seq = m->seq;
        return;
    }
    reply_error(f, f->held_seq, SL_ESTALE, "late");
    reply_seq(f, PROTO_OK, m->seq + 1000);
    reply_seq(f, PROTO_OK, m->seq);
}

static void answer_subscriber(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        proto_msg ping;
        reply_welcome(f, m->seq);
        proto_init(&ping, PROTO_PING);
        proto_set(&ping, seq, 5);
        fake_send(f, &ping);
        send_deliver(f, 7, 70, "hello", "t");
        return;
    }
    answer_everything(f, m);
}

static void reply_level_list(fake *f, uint64_t seq)
{
    static const uint64_t deadline_ms[] = {0, 500, 60000}, aging_ms[] = {0, 0, 2500},
                          paused[] = {0, 0, 1}, depth[] = {4, 0, 17}, oldest_ms[] = {12, 0, 90000};
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    uint32_t n = f->variant == VARIANT_TOO_MANY_LEVELS ? 17 : 3;
    names_set(&r, n);
    uint64_t wide[17] = {0};
    bool big = n > 3;
    column_set(&r, PROTO_F_level_deadline_ms, &r.level_deadline_ms, n, big ? wide : deadline_ms);
    column_set(&r, PROTO_F_level_aging_ms, &r.level_aging_ms, n, big ? wide : aging_ms);
    column_set(&r, PROTO_F_level_paused, &r.level_paused, n, big ? wide : paused);
    column_set(&r, PROTO_F_depth, &r.depth, n, big ? wide : depth);
    /* a ragged reply: one column short */
    uint32_t last = f->variant == VARIANT_RAGGED_COLUMNS ? n - 1 : n;
    column_set(&r, PROTO_F_oldest_ms, &r.oldest_ms, last, big ? wide : oldest_ms);
    if (f->variant != VARIANT_NO_RATES && !big) {
        static const uint64_t max_rate[] = {0, 500, 20000000}, min_rate[] = {100000, 0, 0},
                              burst[] = {0, 3, UINT64_C(1) << 33}, tokens[] = {0, 2500, 7},
                              eta_ms[] = {40, 0, 123456};
        column_set(&r, PROTO_F_level_max_rate, &r.level_max_rate, n, max_rate);
        column_set(&r, PROTO_F_level_min_rate, &r.level_min_rate, n, min_rate);
        column_set(&r, PROTO_F_level_burst, &r.level_burst, n, burst);
        column_set(&r, PROTO_F_level_tokens, &r.level_tokens, n, tokens);
        column_set(&r, PROTO_F_eta_ms, &r.eta_ms, n, eta_ms);
    }
    fake_send(f, &r);
}

static void reply_pool_list(fake *f, uint64_t seq)
{
    static const uint64_t levels[] = {0x3, UINT64_C(0x100000007)}, size[] = {0, UINT64_C(1) << 40},
                          members[] = {2, 1}, inflight[] = {1, 9}, rate_milli[] = {12345, 0},
                          recommended[] = {3, 8}, flags[] = {0x1, 0x2};
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    r.pool_names.n = 2;
    r.pool_names.v[0] = (proto_buf){"workers", 7};
    r.pool_names.v[1] = (proto_buf){"batch", 5};
    r.present |= PF(pool_names);
    column_set(&r, PROTO_F_pool_levels, &r.pool_levels, 2, levels);
    column_set(&r, PROTO_F_pool_size, &r.pool_size, 2, size);
    column_set(&r, PROTO_F_pool_members, &r.pool_members, 2, members);
    column_set(&r, PROTO_F_pool_inflight, &r.pool_inflight, 2, inflight);
    column_set(&r, PROTO_F_pool_rate, &r.pool_rate, 2, rate_milli);
    column_set(&r, PROTO_F_pool_recommended, &r.pool_recommended, 2, recommended);
    column_set(&r, PROTO_F_pool_flags, &r.pool_flags, 2, flags);
    fake_send(f, &r);
}

/* reply_sink_show answers sink.show; a broker of VARIANT_NO_RATES leaves
 * paused_ms out. */
static void reply_sink_show(fake *f, uint64_t seq)
{
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    proto_set(&r, rate_milli, 100000);
    proto_set(&r, effective_rate_milli, 50000);
    proto_set(&r, burst, 20);
    proto_set(&r, max_inflight, 8);
    proto_set(&r, sink_inflight, 3);
    proto_set(&r, tokens_milli, 1500);
    if (f->variant != VARIANT_NO_RATES)
        proto_set(&r, paused_ms, 750);
    fake_send(f, &r);
}

static void reply_explain(fake *f, uint64_t seq)
{
    /* longer than sl_explain_info.state: it must arrive truncated */
    static const char state[] = "ready-and-waiting-for-a-very-long-time";
    static const char why[] = "level low is paused";
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    proto_set_str(&r, PROTO_F_state, state, strlen(state));
    proto_set(&r, level, 2);
    proto_set(&r, position, 17);
    proto_set(&r, until_ms, 0);
    proto_set_str(&r, PROTO_F_msg, why, strlen(why));
    fake_send(f, &r);
}

/* answer_admin plays the broker's ADMIN side. A pool named "nope" does not
 * exist; every command that changes something is answered with a POOL
 * message first, as a broker does when a resize changes its members'
 * shares, and then with its ADMIN_OK. */
static void answer_admin(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        reply_welcome(f, m->seq);
        return;
    }
    if (m->type == PROTO_STATS) {
        static const uint64_t zero[3], prio[] = {10, 20, 30}, aged[] = {0, 4, 5},
                              overdue[] = {0, 0, 6}, throttled[] = {0, 9, 0},
                              eta_ms[] = {0, 0, 61000};
        proto_msg r;
        proto_init(&r, PROTO_STATS_OK);
        proto_set(&r, seq, m->seq);
        proto_set(&r, uptime_ms, 1000);
        proto_set(&r, consumers, 2);
        uint32_t n = f->variant == VARIANT_TOO_MANY_LEVELS ? 17 : 3;
        uint64_t wide[17] = {0};
        names_set(&r, n);
        proto_u64s *cols[] = {&r.depth, &r.inflight, &r.delayed, &r.dead, &r.oldest_ms,
                              &r.enqueued, &r.dispatched, &r.acked, &r.nacked, &r.expired};
        proto_field fields[] = {PROTO_F_depth, PROTO_F_inflight, PROTO_F_delayed, PROTO_F_dead,
                                PROTO_F_oldest_ms, PROTO_F_enqueued, PROTO_F_dispatched,
                                PROTO_F_acked, PROTO_F_nacked, PROTO_F_expired};
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
            column_set(&r, fields[k], cols[k], n, n > 3 ? wide : zero);
        column_set(&r, PROTO_F_picks_priority, &r.picks_priority, n, n > 3 ? wide : prio);
        column_set(&r, PROTO_F_picks_aged, &r.picks_aged, n, n > 3 ? wide : aged);
        column_set(&r, PROTO_F_picks_overdue, &r.picks_overdue, n, n > 3 ? wide : overdue);
        column_set(&r, PROTO_F_picks_guaranteed, &r.picks_guaranteed, n, n > 3 ? wide : zero);
        column_set(&r, PROTO_F_throttled, &r.throttled, n, n > 3 ? wide : throttled);
        column_set(&r, PROTO_F_eta_ms, &r.eta_ms, n, n > 3 ? wide : eta_ms);
        fake_send(f, &r);
        return;
    }
    if (m->type != PROTO_ADMIN)
        return;
    char cmd[PROTO_MAX_NAME + 1] = "", pool[PROTO_MAX_NAME + 1] = "";
    memcpy(cmd, m->cmd.ptr, m->cmd.len);
    if (proto_has(m, PROTO_F_pool))
        memcpy(pool, m->pool.ptr, m->pool.len);
    if (strcmp(cmd, "level.list") == 0) {
        reply_level_list(f, m->seq);
    } else if (strcmp(cmd, "pool.list") == 0) {
        reply_pool_list(f, m->seq);
    } else if (strcmp(cmd, "explain") == 0) {
        reply_explain(f, m->seq);
    } else if (strcmp(cmd, "sink.show") == 0) {
        reply_sink_show(f, m->seq);
    } else if (strcmp(pool, "nope") == 0) {
        reply_error(f, m->seq, SL_ENOTFOUND, "no pool named nope");
    } else {
        send_pool(f, "workers", 8, 3);
        reply_seq(f, PROTO_ADMIN_OK, m->seq);
    }
}

/* answer_window delivers four messages when a consumer says HELLO, and
 * answers ACKs and ADMIN requests (a way to wait until everything sent
 * before has arrived). */
static void answer_window(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        reply_welcome(f, m->seq);
        for (uint64_t i = 1; i <= 4; i++)
            send_deliver(f, i, 10 + i, "w", NULL);
    } else if (m->type == PROTO_ACK || m->type == PROTO_ADMIN) {
        reply_seq(f, m->type == PROTO_ACK ? PROTO_OK : PROTO_ADMIN_OK, m->seq);
    }
}

/* answer_pool_only answers a subscription with a POOL message and a
 * delivery, and every ADMIN request with nothing but a POOL message. */
static void answer_pool_only(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        reply_welcome(f, m->seq);
        send_pool(f, "workers", 6, 3);
        send_deliver(f, 1, 11, "p", NULL);
    } else if (m->type == PROTO_ADMIN) {
        send_pool(f, "workers", 10, 5);
    }
}

/* answer_credit plays a broker that delivers exactly as many messages as it
 * is granted credit, in HELLO and in ACKs, and answers every ACK. */
static void answer_credit(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO)
        reply_welcome(f, m->seq);
    else if (m->type == PROTO_ACK)
        reply_seq(f, PROTO_OK, m->seq);
    else
        return;
    for (uint64_t i = 0; i < m->credit; i++, f->delivered++)
        send_deliver(f, 100 + f->delivered, 1000 + f->delivered, "c", NULL);
}

/* answer_rated answers publishes, and a subscription with two deliveries:
 * id 7 (token 70) costing 5, and id 8 (token 80) whose DELIVER carries no
 * cost. THROTTLED is answered OK for token 70 and SL_ESTALE otherwise. */
static void answer_rated(fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        reply_welcome(f, m->seq);
        send_deliver_cost(f, 7, 70, "costly", NULL, 5);
        send_deliver(f, 8, 80, "cheap", NULL);
    } else if (m->type == PROTO_PUT) {
        reply_seq(f, PROTO_PUT_OK, m->seq);
        f->puts++;
    } else if (m->type == PROTO_THROTTLED && m->token == 70) {
        reply_seq(f, PROTO_OK, m->seq);
    } else if (m->type == PROTO_THROTTLED) {
        reply_error(f, m->seq, SL_ESTALE, "no such lease");
    }
}

static int seen_find(const fake *f, proto_type type, int from)
{
    for (int i = from; i < atomic_load(&f->nseen); i++)
        if (f->seen[i].type == type)
            return i;
    return -1;
}

/* ---- tests ---- */

static void test_send_times_out_against_silent_router(void **state)
{
    fake *f = *state;
    router_open(f); /* bound, never read */
    sl_client *c = client_open(f, 200);
    sl_put p = {.body = "b", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    uint64_t id = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(sl_send(c, &p, &id), SL_ETIMEDOUT);
    double s = elapsed_s(&t0);
    assert_true(s >= 0.19);
    assert_true(s < 2.0);
    assert_string_equal(sl_last_error(c), sl_strerror(SL_ETIMEDOUT));
    sl_close(&c);
    assert_null(c);
}

static void test_error_reply_maps_code_and_text(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_stale);
    sl_client *c = client_open(f, 2000);
    sl_delivery d = {.token = 42, .tag = "", .body = ""};
    assert_int_equal(sl_ack(c, &d), SL_ESTALE);
    assert_string_equal(sl_last_error(c), "x");
    assert_string_equal(sl_errname(SL_ESTALE), "SL_ESTALE");
    sl_close(&c);
    fake_stop(f);
    int i = seen_find(f, PROTO_ACK, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 42);
    /* a client that is not subscribed must not grant itself credit */
    assert_false(f->seen[i].present & PF(credit));
}

static void test_stray_reply_with_old_seq_is_ignored(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_late);
    sl_client *c = client_open(f, 300);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_ETIMEDOUT);
    sl_delivery d = {.token = 1, .tag = "", .body = ""};
    assert_int_equal(sl_ack(c, &d), SL_OK);
    sl_close(&c);
}

static void test_async_confirmations_keep_tickets_in_order(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_everything);
    sl_client *c = client_open(f, 2000);
    const char *bodies[] = {"a", "fail", "b"};
    for (uint64_t i = 0; i < 3; i++) {
        sl_put p = {.body = bodies[i], .body_len = strlen(bodies[i]), .level = 2, .tag = "t"};
        uint64_t ticket = 0;
        assert_int_equal(sl_send_async(c, &p, &ticket), SL_OK);
        assert_int_equal(ticket, i + 1);
    }
    assert_int_equal(sl_send_pending(c), 3);

    /* a synchronous publish meanwhile keeps the confirmations it sees */
    sl_put p = {.body = "c", .body_len = 1, .level = SL_LEVEL_DEFAULT};
    uint64_t id = 0;
    assert_int_equal(sl_send(c, &p, &id), SL_OK);
    assert_int_equal(id, 103);
    assert_int_equal(sl_send_pending(c), 3);

    sl_confirm k;
    assert_int_equal(sl_send_wait(c, 1000, &k), SL_OK);
    assert_int_equal(k.ticket, 1);
    assert_int_equal(k.err, SL_OK);
    assert_int_equal(k.id, 100);
    assert_int_equal(sl_send_wait(c, 1000, &k), SL_OK);
    assert_int_equal(k.ticket, 2);
    assert_int_equal(k.err, SL_EFULL);
    assert_string_equal(sl_last_error(c), "level is full");
    assert_int_equal(sl_send_wait(c, 0, &k), SL_OK);
    assert_int_equal(k.ticket, 3);
    assert_int_equal(k.id, 102);
    assert_int_equal(sl_send_pending(c), 0);
    assert_int_equal(sl_send_wait(c, 0, &k), SL_ESTATE);

    /* tickets keep counting after a synchronous publish */
    uint64_t ticket = 0;
    assert_int_equal(sl_send_async(c, &p, &ticket), SL_OK);
    assert_int_equal(ticket, 4);
    assert_int_equal(sl_send_wait(c, 1000, &k), SL_OK);
    assert_int_equal(k.ticket, 4);
    sl_close(&c);

    fake_stop(f);
    int i = seen_find(f, PROTO_PUT, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].present & (PF(level) | PF(tag)), PF(level) | PF(tag));
    i = seen_find(f, PROTO_PUT, i + 1);
    i = seen_find(f, PROTO_PUT, i + 1);
    i = seen_find(f, PROTO_PUT, i + 1);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].body, "c");
    assert_false(f->seen[i].present & (PF(level) | PF(tag))); /* default level, no tag */
}

static void test_argument_validation(void **state)
{
    fake *f = *state; /* nothing listens: every check here is local */
    sl_client *c = NULL;
    assert_int_equal(sl_connect(f->endpoint, NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_connect("nonsense", NULL, &c), SL_EINVAL);
    assert_null(c);
    sl_options bad = {.timeout_ms = -5};
    assert_int_equal(sl_connect(f->endpoint, &bad, &c), SL_EINVAL);
    c = client_open(f, 200);

    sl_put p = {.body = NULL, .body_len = 3, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send(c, &p, NULL), SL_EINVAL);
    assert_string_equal(sl_last_error(c), sl_strerror(SL_EINVAL));
    assert_int_equal(sl_send_async(c, &p, NULL), SL_EINVAL);
    assert_int_equal(sl_send(c, NULL, NULL), SL_EINVAL);

    char tag[257];
    memset(tag, 'x', 256);
    tag[256] = '\0';
    p = (sl_put){.body = "b", .body_len = 1, .level = SL_LEVEL_DEFAULT, .tag = tag};
    assert_int_equal(sl_send(c, &p, NULL), SL_ETOOBIG);
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ETOOBIG);
    p.tag = NULL;
    p.body_len = PROTO_MAX_BODY + 1;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ETOOBIG);
    p.body_len = 1;
    p.level = SL_MAX_LEVELS;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ENOLEVEL);
    p.level = -2;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ENOLEVEL);
    assert_int_equal(sl_send_pending(c), 0);

    sl_confirm k;
    sl_delivery *d = NULL;
    assert_int_equal(sl_send_wait(c, 0, &k), SL_ESTATE);
    assert_int_equal(sl_recv(c, 0, &d), SL_ESTATE);
    assert_null(d);
    assert_int_equal(sl_ack(c, NULL), SL_EINVAL);
    char pool[PROTO_MAX_NAME + 2];
    memset(pool, 'p', sizeof pool - 1);
    pool[sizeof pool - 1] = '\0';
    assert_int_equal(sl_subscribe(c, pool, NULL, 0, 1), SL_EINVAL);
    assert_int_equal(sl_subscribe(c, "", NULL, 0, 1), SL_EINVAL);
    unsigned levels[SL_MAX_LEVELS + 1] = {0};
    assert_int_equal(sl_subscribe(c, NULL, levels, SL_MAX_LEVELS + 1, 1), SL_EINVAL);

    assert_int_equal(sl_send(NULL, &p, NULL), SL_EINVAL);
    assert_int_equal(sl_send_pending(NULL), 0);
    sl_close(&c);
    sl_close(&c);
    sl_close(NULL);
    sl_delivery_free(NULL);
    sl_delivery_free(&d);
}

static void test_level_parse_names_and_numbers(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_everything);
    sl_client *c = client_open(f, 2000);
    unsigned n = 0, level = 99;
    const char *const *names = NULL;
    assert_int_equal(sl_levels(c, &n, &names), SL_OK);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "high");
    assert_string_equal(names[2], "low");

    assert_int_equal(sl_level_parse(c, "high", &level), SL_OK);
    assert_int_equal(level, 0);
    assert_int_equal(sl_level_parse(c, "low", &level), SL_OK);
    assert_int_equal(level, 2);
    assert_int_equal(sl_level_parse(c, "1", &level), SL_OK);
    assert_int_equal(level, 1);
    const char *bad[] = {"3", "High", "", "-1", " 1", "1x", "+1", "99999999999999999999", "norma"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        level = 99;
        assert_int_equal(sl_level_parse(c, bad[i], &level), SL_ENOLEVEL);
        assert_int_equal(level, 99);
    }
    assert_int_equal(sl_level_parse(c, NULL, &level), SL_EINVAL);

    /* the WELCOME's max_body (1024) now bounds bodies, checked locally */
    static char big[1025];
    sl_put p = {.body = big, .body_len = sizeof big, .level = SL_LEVEL_DEFAULT};
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ETOOBIG);
    p.level = 3;
    p.body_len = 1;
    assert_int_equal(sl_send_async(c, &p, NULL), SL_ENOLEVEL);
    sl_close(&c);

    fake_stop(f);
    /* asked once, then cached */
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_int_equal(seen_find(f, PROTO_HELLO, i + 1), -1);
    assert_false(f->seen[i].present & (PF(pool) | PF(levels) | PF(credit)));
}

static void test_subscribe_receive_ack(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_subscriber);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_subscribe(c, "workers", NULL, 0, 4), SL_OK);
    assert_int_equal(sl_subscribe(c, "workers", NULL, 0, 4), SL_ESTATE);

    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    assert_non_null(d);
    assert_int_equal(d->id, 7);
    assert_int_equal(d->token, 70);
    assert_int_equal(d->level, 1);
    assert_int_equal(d->attempt, 2);
    assert_int_equal(d->lease_ms, 5000);
    assert_int_equal(d->body_len, 5);
    assert_string_equal((const char *)d->body, "hello"); /* NUL-terminated */
    assert_string_equal(d->tag, "t");
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_touch(c, d, 9000), SL_OK);
    assert_int_equal(sl_nack(c, d, 250), SL_OK);
    sl_delivery_free(&d);
    assert_null(d);
    assert_int_equal(sl_recv(c, 0, &d), SL_ETIMEDOUT);
    sl_close(&c);

    fake_stop(f);
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].pool, "workers");
    assert_int_equal(f->seen[i].credit, 4);
    int pong = seen_find(f, PROTO_PONG, 0);
    assert_true(pong >= 0);
    assert_int_equal(f->seen[pong].seq, 5);
    i = seen_find(f, PROTO_ACK, 0);
    assert_true(i > pong);
    assert_int_equal(f->seen[i].token, 70);
    assert_int_equal(f->seen[i].credit, 1);
    i = seen_find(f, PROTO_TOUCH, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].lease_ms, 9000);
    assert_false(f->seen[i].present & PF(credit));
    i = seen_find(f, PROTO_NACK, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].delay_ms, 250);
    assert_int_equal(f->seen[i].credit, 1);
}

static void test_resubscribes_after_reconnect(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_subscriber);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_subscribe(c, "p", NULL, 0, 3), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK); /* held: its ack owes a credit */

    /* the broker goes away and comes back on the same endpoint */
    fake_stop(f);
    zmq_close(f->router);
    f->router = NULL;
    atomic_store(&f->nseen, 0);
    router_open(f);
    fake_start(f, NULL);

    sl_delivery *none = NULL;
    for (int i = 0; i < 50 && seen_find(f, PROTO_HELLO, 0) < 0; i++)
        assert_int_equal(sl_recv(c, 100, &none), SL_ETIMEDOUT);
    fake_stop(f);
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_true(i >= 0);
    assert_string_equal(f->seen[i].pool, "p");
    assert_int_equal(f->seen[i].credit, 2);
    sl_delivery_free(&d);
    sl_close(&c);
}

static void test_admin_requests_carry_their_arguments(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_admin);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_level_set(c, 2, 500, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_level_set(c, 1, SL_UNCHANGED, 0), SL_OK);
    assert_int_equal(sl_level_pause(c, 0, 1), SL_OK);
    assert_int_equal(sl_level_pause(c, 0, 0), SL_OK);
    assert_int_equal(sl_pool_resize(c, "workers", 8), SL_OK);
    assert_int_equal(sl_pool_pause(c, "workers", 1), SL_OK);
    assert_int_equal(sl_pool_pause(c, "workers", 0), SL_OK);
    assert_int_equal(sl_pool_autoscale(c, "workers", 2, 16, 1500, 1), SL_OK);
    assert_int_equal(sl_pool_autoscale(c, "workers", 0, 0, 0, 0), SL_OK);
    sl_explain_info e;
    assert_int_equal(sl_explain(c, 42, &e), SL_OK);
    assert_int_equal(sl_level_rate(c, 1, 20000, SL_UNCHANGED, 40), SL_OK);
    assert_int_equal(sl_level_rate(c, 0, 0, 500, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_sink_set(c, 100000, SL_UNCHANGED, 0), SL_OK);
    assert_int_equal(sl_sink_set(c, SL_UNCHANGED, 7, SL_UNCHANGED), SL_OK);

    /* refused locally: none of these reaches the broker */
    char long_name[PROTO_MAX_NAME + 2];
    memset(long_name, 'p', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    assert_int_equal(sl_pool_resize(c, "", 1), SL_EINVAL);
    assert_int_equal(sl_pool_resize(c, NULL, 1), SL_EINVAL);
    assert_int_equal(sl_pool_pause(c, long_name, 1), SL_EINVAL);
    assert_int_equal(sl_pool_autoscale(c, "workers", 5, 4, 100, 1), SL_EINVAL);
    assert_int_equal(sl_level_set(c, SL_MAX_LEVELS, 1, 1), SL_ENOLEVEL);
    assert_int_equal(sl_level_pause(c, SL_MAX_LEVELS, 1), SL_ENOLEVEL);
    assert_int_equal(sl_level_rate(c, SL_MAX_LEVELS, 1, 1, 1), SL_ENOLEVEL);
    assert_int_equal(sl_sink_show(c, NULL), SL_EINVAL);
    assert_int_equal(sl_sink_set(NULL, 1, 1, 1), SL_EINVAL);
    assert_int_equal(sl_explain(c, 1, NULL), SL_EINVAL);
    assert_int_equal(sl_level_list(c, NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_pool_list(NULL, NULL, NULL), SL_EINVAL);
    sl_close(&c);
    fake_stop(f);

    static const struct {
        const char *cmd;
        proto_mask args; /* which PROTO_ADMIN_ARGS are present */
        uint64_t level, size, enabled, deadline_ms, aging_ms, min, max, target_wait_ms, id;
        uint64_t rate_milli, min_rate_milli, burst, max_inflight;
    } want[] = {
        {.cmd = "level.set", .args = PF(level) | PF(deadline_ms), .level = 2, .deadline_ms = 500},
        {.cmd = "level.set", .args = PF(level) | PF(aging_ms), .level = 1, .aging_ms = 0},
        {.cmd = "level.pause", .args = PF(level), .level = 0},
        {.cmd = "level.resume", .args = PF(level), .level = 0},
        {.cmd = "pool.resize", .args = PF(pool) | PF(size), .size = 8},
        {.cmd = "pool.pause", .args = PF(pool)},
        {.cmd = "pool.resume", .args = PF(pool)},
        {.cmd = "pool.autoscale",
         .args = PF(pool) | PF(enabled) | PF(min) | PF(max) | PF(target_wait_ms),
         .enabled = 1, .min = 2, .max = 16, .target_wait_ms = 1500},
        {.cmd = "pool.autoscale", .args = PF(pool) | PF(enabled), .enabled = 0},
        {.cmd = "explain", .args = PF(id), .id = 42},
        {.cmd = "level.set", .args = PF(level) | PF(rate_milli) | PF(burst), .level = 1,
         .rate_milli = 20000, .burst = 40},
        {.cmd = "level.set", .args = PF(level) | PF(rate_milli) | PF(min_rate_milli),
         .level = 0, .rate_milli = 0, .min_rate_milli = 500},
        {.cmd = "sink.set", .args = PF(rate_milli) | PF(max_inflight), .rate_milli = 100000,
         .max_inflight = 0},
        {.cmd = "sink.set", .args = PF(burst), .burst = 7},
    };
    int i = -1;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        i = seen_find(f, PROTO_ADMIN, i + 1);
        assert_true(i >= 0);
        const seen *s = &f->seen[i];
        assert_string_equal(s->cmd, want[k].cmd);
        assert_int_equal(s->present & PROTO_ADMIN_ARGS, want[k].args);
        if (want[k].args & PF(pool))
            assert_string_equal(s->pool, "workers");
        assert_int_equal(s->level, want[k].level);
        assert_int_equal(s->size, want[k].size);
        assert_int_equal(s->enabled, want[k].enabled);
        assert_int_equal(s->deadline_ms, want[k].deadline_ms);
        assert_int_equal(s->aging_ms, want[k].aging_ms);
        assert_int_equal(s->min, want[k].min);
        assert_int_equal(s->max, want[k].max);
        assert_int_equal(s->target_wait_ms, want[k].target_wait_ms);
        assert_int_equal(s->id, want[k].id);
        assert_int_equal(s->rate_milli, want[k].rate_milli);
        assert_int_equal(s->min_rate_milli, want[k].min_rate_milli);
        assert_int_equal(s->burst, want[k].burst);
        assert_int_equal(s->max_inflight, want[k].max_inflight);
    }
    assert_int_equal(seen_find(f, PROTO_ADMIN, i + 1), -1);
}

static void test_admin_results_are_decoded(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_admin);
    sl_client *c = client_open(f, 2000);

    sl_level_info levels[SL_MAX_LEVELS];
    unsigned n = 99;
    assert_int_equal(sl_level_list(c, levels, &n), SL_OK);
    assert_int_equal(n, 3);
    assert_string_equal(levels[0].name, "high");
    assert_string_equal(levels[2].name, "low");
    assert_int_equal(levels[1].deadline_ms, 500);
    assert_int_equal(levels[0].deadline_ms, 0);
    assert_int_equal(levels[2].aging_ms, 2500);
    assert_false(levels[1].paused);
    assert_true(levels[2].paused);
    assert_int_equal(levels[2].depth, 17);
    assert_int_equal(levels[2].oldest_ms, 90000);
    assert_int_equal(levels[0].max_rate_milli, 0);
    assert_int_equal(levels[2].max_rate_milli, 20000000);
    assert_int_equal(levels[0].min_rate_milli, 100000);
    assert_int_equal(levels[1].burst, 3);
    assert_int_equal(levels[2].burst, UINT32_MAX); /* clamped */
    assert_int_equal(levels[1].tokens_milli, 2500);
    assert_int_equal(levels[0].eta_ms, 40);
    assert_int_equal(levels[2].eta_ms, 123456);

    sl_pool_info pools[SL_MAX_POOLS];
    assert_int_equal(sl_pool_list(c, pools, &n), SL_OK);
    assert_int_equal(n, 2);
    assert_string_equal(pools[0].name, "workers");
    assert_string_equal(pools[1].name, "batch");
    assert_int_equal(pools[0].levels_mask, 0x3);
    assert_int_equal(pools[1].levels_mask, 0x7); /* a mask keeps its low bits */
    assert_int_equal(pools[0].size, 0);
    assert_int_equal(pools[1].size, UINT32_MAX); /* a count is clamped */
    assert_int_equal(pools[0].members, 2);
    assert_int_equal(pools[1].inflight, 9);
    assert_true(pools[0].rate_per_s > 12.344 && pools[0].rate_per_s < 12.346);
    assert_int_equal(pools[1].recommended, 8);
    assert_true(pools[0].paused);
    assert_false(pools[0].autoscale);
    assert_false(pools[1].paused);
    assert_true(pools[1].autoscale);

    sl_explain_info e;
    memset(&e, 0x55, sizeof e);
    assert_int_equal(sl_explain(c, 42, &e), SL_OK);
    assert_int_equal(strlen(e.state), sizeof e.state - 1);
    assert_memory_equal(e.state, "ready-and-waiting", 17);
    assert_int_equal(e.level, 2);
    assert_int_equal(e.position, 17);
    assert_int_equal(e.until_ms, 0);
    assert_string_equal(e.why, "level low is paused");

    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_int_equal(st.nlevels, 3);
    assert_int_equal(st.level[0].picks_priority, 10);
    assert_int_equal(st.level[2].picks_priority, 30);
    assert_int_equal(st.level[1].picks_aged, 4);
    assert_int_equal(st.level[2].picks_overdue, 6);
    assert_int_equal(st.level[1].throttled, 9);
    assert_int_equal(st.level[0].eta_ms, 0);
    assert_int_equal(st.level[2].eta_ms, 61000);

    sl_sink_info sink;
    memset(&sink, 0x55, sizeof sink);
    assert_int_equal(sl_sink_show(c, &sink), SL_OK);
    assert_int_equal(sink.rate_milli, 100000);
    assert_int_equal(sink.effective_rate_milli, 50000);
    assert_int_equal(sink.burst, 20);
    assert_int_equal(sink.max_inflight, 8);
    assert_int_equal(sink.inflight, 3);
    assert_int_equal(sink.tokens_milli, 1500);
    assert_int_equal(sink.paused_ms, 750);

    /* the broker's refusal comes back with its code and its words */
    assert_int_equal(sl_pool_pause(c, "nope", 1), SL_ENOTFOUND);
    assert_string_equal(sl_last_error(c), "no pool named nope");
    sl_close(&c);
}

static void test_malformed_admin_results_are_refused(void **state)
{
    fake *f = *state;
    router_open(f);
    f->variant = VARIANT_RAGGED_COLUMNS;
    fake_start(f, answer_admin);
    sl_client *c = client_open(f, 2000);
    sl_level_info levels[SL_MAX_LEVELS];
    unsigned n = 99;
    assert_int_equal(sl_level_list(c, levels, &n), SL_EPROTO);
    assert_int_equal(n, 0);
    sl_close(&c);
    fake_stop(f);

    /* more levels than SL_MAX_LEVELS fit the wire (64 items) but not the
     * caller's arrays: every reply that lists levels refuses them */
    f->variant = VARIANT_TOO_MANY_LEVELS;
    fake_start(f, answer_admin);
    c = client_open(f, 2000);
    assert_int_equal(sl_level_list(c, levels, &n), SL_EPROTO);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_EPROTO);
    assert_int_equal(sl_levels(c, NULL, NULL), SL_EPROTO);
    sl_close(&c);
}

static void test_level_list_without_rate_columns_reads_as_no_limits(void **state)
{
    fake *f = *state;
    router_open(f);
    f->variant = VARIANT_NO_RATES;
    fake_start(f, answer_admin);
    sl_client *c = client_open(f, 2000);
    sl_level_info levels[SL_MAX_LEVELS];
    memset(levels, 0x55, sizeof levels);
    unsigned n = 0;
    assert_int_equal(sl_level_list(c, levels, &n), SL_OK);
    assert_int_equal(n, 3);
    assert_int_equal(levels[1].deadline_ms, 500);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(levels[i].max_rate_milli, 0);
        assert_int_equal(levels[i].min_rate_milli, 0);
        assert_int_equal(levels[i].burst, 0);
        assert_int_equal(levels[i].tokens_milli, 0);
        assert_int_equal(levels[i].eta_ms, 0);
    }
    /* sink.show's answer must be whole */
    sl_sink_info sink;
    assert_int_equal(sl_sink_show(c, &sink), SL_EPROTO);
    sl_close(&c);
}

static void test_cost_travels_in_put_and_deliver(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_rated);
    sl_client *c = client_open(f, 2000);
    const uint32_t costs[] = {5, 1, 0, UINT32_MAX};
    for (size_t k = 0; k < 4; k++) {
        sl_put p = {.body = "b", .body_len = 1, .level = SL_LEVEL_DEFAULT, .cost = costs[k]};
        assert_int_equal(k % 2 ? sl_send_async(c, &p, NULL) : sl_send(c, &p, NULL), SL_OK);
    }
    sl_confirm k;
    while (sl_send_pending(c))
        assert_int_equal(sl_send_wait(c, 2000, &k), SL_OK);

    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 2), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    assert_int_equal(d->id, 7);
    assert_int_equal(d->cost, 5);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    assert_int_equal(d->id, 8);
    assert_int_equal(d->cost, 1); /* absent on the wire */
    sl_delivery_free(&d);
    sl_close(&c);
    fake_stop(f);

    /* a cost of 1 (or 0, meaning 1) is the wire's default, so it is left out */
    const bool carried[] = {true, false, false, true};
    int i = -1;
    for (size_t j = 0; j < 4; j++) {
        i = seen_find(f, PROTO_PUT, i + 1);
        assert_true(i >= 0);
        assert_int_equal((f->seen[i].present & PF(cost)) != 0, carried[j]);
        if (carried[j])
            assert_int_equal(f->seen[i].cost, costs[j]);
    }
}

static void test_throttled_returns_credit_and_retry_after(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_rated);
    sl_client *c = client_open(f, 2000);
    sl_delivery stray = {.token = 80, .tag = "", .body = ""};
    /* not subscribed: no credit, as for ACK */
    assert_int_equal(sl_throttled(c, &stray, 0), SL_ESTALE);
    assert_int_equal(sl_throttled(c, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 2), SL_OK);
    sl_delivery *d[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(sl_recv(c, 2000, &d[k]), SL_OK);
    assert_int_equal(sl_throttled(c, d[0], 1500), SL_OK);
    assert_int_equal(sl_throttled(c, d[1], 0), SL_ESTALE);
    assert_string_equal(sl_last_error(c), "no such lease");
    for (int k = 0; k < 2; k++)
        sl_delivery_free(&d[k]);
    sl_close(&c);
    fake_stop(f);

    int i = seen_find(f, PROTO_THROTTLED, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 80);
    assert_false(f->seen[i].present & (PF(credit) | PF(retry_ms)));
    i = seen_find(f, PROTO_THROTTLED, i + 1);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 70);
    assert_int_equal(f->seen[i].credit, 1);
    assert_true(f->seen[i].present & PF(retry_ms));
    assert_int_equal(f->seen[i].retry_ms, 1500);
    i = seen_find(f, PROTO_THROTTLED, i + 1);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 80);
    assert_int_equal(f->seen[i].credit, 1); /* given back even though the lease was gone */
    assert_false(f->seen[i].present & PF(retry_ms)); /* 0: the broker's default */
}

static void test_pool_message_sets_share_and_is_no_reply(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_pool_only);
    sl_client *c = client_open(f, 300);
    assert_int_equal(sl_share(c), 0);
    assert_int_equal(sl_share(NULL), 0);
    assert_int_equal(sl_subscribe(c, "workers", NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    assert_int_equal(d->id, 1);
    assert_int_equal(sl_share(c), 3);
    sl_delivery_free(&d);

    /* a request answered only by a POOL message is not answered */
    assert_int_equal(sl_pool_resize(c, "workers", 10), SL_ETIMEDOUT);
    assert_int_equal(sl_share(c), 5);
    sl_close(&c);
}

static void test_admin_reply_after_pool_message(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_admin);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_pool_resize(c, "workers", 8), SL_OK); /* POOL, then ADMIN_OK */
    assert_int_equal(sl_share(c), 3);
    sl_close(&c);
}

static void test_set_window_grows_by_credit_and_shrinks_by_withholding(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_window);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_set_window(c, 2), SL_ESTATE); /* not a consumer yet */
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    assert_int_equal(sl_set_window(c, 0), SL_EINVAL);
    assert_int_equal(sl_set_window(c, 100001), SL_EINVAL);

    sl_delivery *d[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(sl_recv(c, 2000, &d[i]), SL_OK);
    /* four outstanding, window two: the first two acks return nothing */
    assert_int_equal(sl_set_window(c, 2), SL_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sl_ack(c, d[i]), SL_OK);
        sl_delivery_free(&d[i]);
    }
    /* two outstanding again; growing to five grants three at once */
    assert_int_equal(sl_set_window(c, 5), SL_OK);
    assert_int_equal(sl_level_pause(c, 0, 1), SL_OK); /* everything before it has arrived */
    sl_close(&c);
    fake_stop(f);

    int i = seen_find(f, PROTO_HELLO, 0);
    assert_int_equal(f->seen[i].credit, 4);
    static const bool credit_back[] = {false, false, true, true};
    for (int k = 0; k < 4; k++) {
        i = seen_find(f, PROTO_ACK, i + 1);
        assert_true(i >= 0);
        assert_int_equal(f->seen[i].token, 11 + k);
        assert_int_equal((f->seen[i].present & PF(credit)) != 0, credit_back[k]);
        if (credit_back[k])
            assert_int_equal(f->seen[i].credit, 1);
    }
    i = seen_find(f, PROTO_CREDIT, i + 1);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].n, 3);
    assert_int_equal(seen_find(f, PROTO_CREDIT, i + 1), -1);
}

static void test_set_window_stops_at_the_limit(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_window);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_set_limit(c, 6), SL_OK);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    assert_int_equal(sl_set_window(c, 10), SL_OK); /* only two more are allowed */
    assert_int_equal(sl_set_window(c, 20), SL_OK); /* none */
    sl_delivery *d = NULL;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    sl_close(&c);
    fake_stop(f);

    int i = seen_find(f, PROTO_HELLO, 0);
    assert_int_equal(f->seen[i].credit, 4);
    i = seen_find(f, PROTO_CREDIT, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].n, 2);
    assert_int_equal(seen_find(f, PROTO_CREDIT, i + 1), -1);
    for (i = seen_find(f, PROTO_ACK, 0); i >= 0; i = seen_find(f, PROTO_ACK, i + 1))
        assert_false(f->seen[i].present & PF(credit));
}

static void test_limit_holds_across_reconnect(void **state)
{
    fake *f = *state;
    router_open(f);
    fake_start(f, answer_credit);
    sl_client *c = client_open(f, 2000);
    assert_int_equal(sl_set_limit(c, 3), SL_OK);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 2000, &d), SL_OK); /* held across the restart */

    /* the broker restarts; the renewed subscription asks for nothing, since
     * the held delivery fills the window */
    fake_stop(f);
    zmq_close(f->router);
    f->router = NULL;
    atomic_store(&f->nseen, 0);
    router_open(f);
    fake_start(f, answer_credit);
    sl_delivery *none = NULL;
    for (int i = 0; i < 50 && seen_find(f, PROTO_HELLO, 0) < 0; i++)
        assert_int_equal(sl_recv(c, 100, &none), SL_ETIMEDOUT);
    assert_true(seen_find(f, PROTO_HELLO, 0) >= 0);

    /* one delivery so far: the limit still allows exactly two more */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
        assert_int_equal(sl_recv(c, 2000, &d), SL_OK);
    }
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 200, &d), SL_ETIMEDOUT);
    sl_close(&c);
    fake_stop(f);
    int i = seen_find(f, PROTO_HELLO, 0);
    assert_false(f->seen[i].present & PF(credit));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_send_times_out_against_silent_router, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_reply_maps_code_and_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stray_reply_with_old_seq_is_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_confirmations_keep_tickets_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_argument_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_parse_names_and_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribe_receive_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resubscribes_after_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_requests_carry_their_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_results_are_decoded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_admin_results_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_list_without_rate_columns_reads_as_no_limits,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_travels_in_put_and_deliver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled_returns_credit_and_retry_after, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pool_message_sets_share_and_is_no_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_reply_after_pool_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_window_grows_by_credit_and_shrinks_by_withholding,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_window_stops_at_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_holds_across_reconnect, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
