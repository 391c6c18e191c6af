/*
 * test_client_admin.c - the client library's administration and metering
 * calls against a scripted peer, no broker: the arguments each ADMIN request
 * carries, how results are decoded (and clamped), malformed rows and
 * partial results refused with SL_EPROTO and the output untouched, the POOL
 * messages that tell a consumer its share, costs in PUT and DELIVER, and THROTTLED.
 *
 * As in test_client_local.c, each test binds a real ZeroMQ ROUTER socket on
 * ipc:// in its own temporary directory and serves it from the fake broker's
 * thread (th_fake, in tests/lib/th_fake.c) with one of the handlers below, which play
 * the broker's ADMIN side with fixed figures. The test reads what the fake
 * received after th_fake_stop has joined the thread. Every test is bounded by
 * the client's timeouts and, as a backstop, by alarm(). Nothing here is
 * random.
 */
#include <setjmp.h> /* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"
#include "proto.h"
#include "sluice.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <zmq.h>

#define TEST_ALARM_S 20

/* th_fake.variant: how the handlers below answer */
enum { VARIANT_NORMAL, VARIANT_TOO_MANY_LEVELS, VARIANT_MISSING_COLUMN, VARIANT_BAD_ROWS,
       VARIANT_PARTIAL };

/* levels_of is how many levels f announces: more than SL_MAX_LEVELS for
 * VARIANT_TOO_MANY_LEVELS, else high, normal and low. */
static uint32_t levels_of(const th_fake *f)
{
    return f->variant == VARIANT_TOO_MANY_LEVELS ? 17 : 3;
}

/* ---- raw msgpack, for replies the fake's encoder would refuse ---- */

typedef struct raw {
    uint8_t b[1024];
    size_t len;
} raw;

static void raw_byte(raw *r, uint8_t v)
{
    if (r->len >= sizeof r->b)
        th_fatal("fake broker: raw reply too long");
    r->b[r->len++] = v;
}

static void raw_str(raw *r, const char *s)
{
    size_t n = strlen(s);
    raw_byte(r, (uint8_t)(0xa0 | n)); /* fixstr: every key here is short */
    for (size_t i = 0; i < n; i++)
        raw_byte(r, (uint8_t)s[i]);
}

static void raw_u64(raw *r, uint64_t v)
{
    raw_byte(r, 0xcf);
    for (int i = 7; i >= 0; i--)
        raw_byte(r, (uint8_t)(v >> (8 * i)));
}

/* raw_reply starts {"op": op, "seq": seq, <key>: [ with nrows rows to
 * follow; the map has 3 pairs. */
static void raw_reply(raw *r, const char *op, uint64_t seq, const char *key, uint8_t nrows)
{
    raw_byte(r, 0x83);
    raw_str(r, "op");
    raw_str(r, op);
    raw_str(r, "seq");
    raw_u64(r, seq);
    raw_str(r, key);
    raw_byte(r, 0xdc); /* array16 */
    raw_byte(r, 0);
    raw_byte(r, nrows);
}

static void raw_send(th_fake *f, const raw *r)
{
    zmq_send(f->router, f->peer, f->peer_len, ZMQ_SNDMORE);
    zmq_send(f->router, r->b, r->len, 0);
}

/* send_bad_rows answers seq with a list of op whose rows the client must
 * refuse: 17 empty rows (VARIANT_TOO_MANY_LEVELS), a row missing required
 * columns (VARIANT_MISSING_COLUMN), or one with a string where a number
 * belongs (VARIANT_BAD_ROWS). */
static void send_bad_rows(th_fake *f, const char *op, uint64_t seq, const char *key)
{
    raw r = {.len = 0};
    if (f->variant == VARIANT_TOO_MANY_LEVELS) {
        raw_reply(&r, op, seq, key, 17);
        for (int i = 0; i < 17; i++)
            raw_byte(&r, 0x80);
    } else {
        raw_reply(&r, op, seq, key, 1);
        raw_byte(&r, 0x82);
        raw_str(&r, "name");
        raw_str(&r, "high");
        raw_str(&r, f->variant == VARIANT_MISSING_COLUMN ? "paused" : "size");
        if (f->variant == VARIANT_MISSING_COLUMN)
            raw_u64(&r, 1);
        else
            raw_str(&r, "big");
    }
    raw_send(f, &r);
}

/* ---- the broker's answers ---- */

static void send_pool(th_fake *f, const char *pool, uint64_t size, uint64_t share)
{
    proto_msg r;
    proto_init(&r, PROTO_POOL);
    proto_set_str(&r, PROTO_F_pool, pool, strlen(pool));
    proto_set(&r, size, size);
    proto_set(&r, share, share);
    th_fake_send(f, &r);
}

static void reply_level_list(th_fake *f, uint64_t seq)
{
    static const char *const names[] = {"high", "normal", "low"};
    static const uint64_t deadline_ms[] = {0, 500, 60000}, aging_ms[] = {0, 0, 2500},
                          paused[] = {0, 0, 1}, depth[] = {4, 0, 17}, oldest_ms[] = {12, 0, 90000},
                          max_rate[] = {0, 500, 20000000}, min_rate[] = {100000, 0, 0},
                          burst[] = {0, 3, UINT64_C(1) << 33}, tokens[] = {0, 2500, 7},
                          eta_ms[] = {40, 0, 123456};
    if (f->variant != VARIANT_NORMAL) {
        send_bad_rows(f, "ADMIN_OK", seq, "level_rows");
        return;
    }
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    r.present |= PF(level_rows);
    r.level_rows.n = 3;
    for (uint32_t i = 0; i < 3; i++)
        r.level_rows.v[i] = (proto_row_level){
            .present = PROTO_ROW_ALL(level),
            .name = {names[i], (uint32_t)strlen(names[i])},
            .deadline_ms = deadline_ms[i], .aging_ms = aging_ms[i], .paused = paused[i],
            .depth = depth[i], .oldest_ms = oldest_ms[i], .max_rate_milli = max_rate[i],
            .min_rate_milli = min_rate[i], .burst = burst[i], .tokens_milli = tokens[i],
            .eta_ms = eta_ms[i]};
    th_fake_send(f, &r);
}

static void reply_pool_list(th_fake *f, uint64_t seq)
{
    if (f->variant == VARIANT_BAD_ROWS) {
        send_bad_rows(f, "ADMIN_OK", seq, "pool_rows");
        return;
    }
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    r.present |= PF(pool_rows);
    r.pool_rows.n = 2;
    r.pool_rows.v[0] = (proto_row_pool){
        .present = PROTO_ROW_ALL(pool), .name = {"workers", 7}, .levels_mask = 0x3, .size = 0,
        .members = 2, .inflight = 1, .rate_milli = 12345, .recommended = 3, .paused = 1,
        .autoscale = 0};
    r.pool_rows.v[1] = (proto_row_pool){
        .present = PROTO_ROW_ALL(pool), .name = {"batch", 5}, .levels_mask = UINT64_C(0x100000007),
        .size = UINT64_C(1) << 40, .members = 1, .inflight = 9, .rate_milli = 0, .recommended = 8,
        .paused = 0, .autoscale = 1};
    th_fake_send(f, &r);
}

/* reply_sink_show answers sink.show; a broker of VARIANT_PARTIAL leaves
 * paused_ms out. */
static void reply_sink_show(th_fake *f, uint64_t seq)
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
    proto_set_str(&r, PROTO_F_breaker, "half-open", 9);
    proto_set(&r, breaker_trips, 4);
    if (f->variant != VARIANT_PARTIAL)
        proto_set(&r, paused_ms, 750);
    if (f->variant != VARIANT_PARTIAL) /* optional: a broker from before the reason sends none */
        proto_set_str(&r, PROTO_F_state, "recovering", 10);
    th_fake_send(f, &r);
}

static void reply_explain(th_fake *f, uint64_t seq)
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
    if (f->variant != VARIANT_PARTIAL)
        proto_set_str(&r, PROTO_F_msg, why, strlen(why));
    th_fake_send(f, &r);
}

/* answer_admin plays the broker's ADMIN side. A pool named "nope" does not
 * exist; every command that changes something is answered with a POOL
 * message first, as a broker does when a resize changes its members'
 * shares, and then with its ADMIN_OK. */
static void answer_admin(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        th_fake_welcome(f, m->seq, levels_of(f));
        return;
    }
    if (m->type == PROTO_STATS) {
        static const char *const names[] = {"high", "normal", "low"};
        static const uint64_t prio[] = {10, 20, 30}, aged[] = {0, 4, 5}, overdue[] = {0, 0, 6},
                              throttled[] = {0, 9, 0}, eta_ms[] = {0, 0, 61000};
        if (f->variant != VARIANT_NORMAL) {
            send_bad_rows(f, "STATS_OK", m->seq, "level_stats");
            return;
        }
        proto_msg r;
        proto_init(&r, PROTO_STATS_OK);
        proto_set(&r, seq, m->seq);
        proto_set(&r, uptime_ms, 1000);
        proto_set(&r, consumers, 2);
        proto_set_str(&r, PROTO_F_breaker, "closed", 6);
        proto_set(&r, breaker_trips, 1);
        proto_set(&r, rx_bad, 5);
        proto_set(&r, tx_failed, 7);
        r.present |= PF(level_stats);
        r.level_stats.n = 3;
        for (uint32_t i = 0; i < 3; i++)
            r.level_stats.v[i] = (proto_row_level_stat){
                .present = PROTO_ROW_ALL(level_stat),
                .name = {names[i], (uint32_t)strlen(names[i])},
                .depth = i, .enqueued = 100 + i, .picks_priority = prio[i], .picks_aged = aged[i],
                .picks_overdue = overdue[i], .throttled = throttled[i], .eta_ms = eta_ms[i]};
        th_fake_send(f, &r);
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
        th_fake_error(f, m->seq, SL_ENOTFOUND, "no pool named nope");
    } else {
        send_pool(f, "workers", 8, 3);
        th_fake_reply(f, PROTO_ADMIN_OK, m->seq);
    }
}

/* answer_pool_only answers a subscription with a POOL message and a
 * delivery, and every ADMIN request with nothing but a POOL message. */
static void answer_pool_only(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        th_fake_welcome(f, m->seq, levels_of(f));
        send_pool(f, "workers", 6, 3);
        th_fake_deliver(f, 1, 11, "p", NULL, 0);
    } else if (m->type == PROTO_ADMIN) {
        send_pool(f, "workers", 10, 5);
    }
}

/* answer_rated answers publishes, and a subscription with two deliveries:
 * id 7 (token 70) costing 5, and id 8 (token 80) whose DELIVER carries no
 * cost. THROTTLED is answered OK for token 70 and SL_ESTALE otherwise. */
static void answer_rated(th_fake *f, const proto_msg *m)
{
    if (m->type == PROTO_HELLO) {
        th_fake_welcome(f, m->seq, levels_of(f));
        th_fake_deliver(f, 7, 70, "costly", NULL, 5);
        th_fake_deliver(f, 8, 80, "cheap", NULL, 0);
    } else if (m->type == PROTO_PUT) {
        th_fake_reply(f, PROTO_PUT_OK, m->seq);
        f->puts++;
    } else if (m->type == PROTO_THROTTLED && m->token == 70) {
        th_fake_reply(f, PROTO_OK, m->seq);
    } else if (m->type == PROTO_THROTTLED) {
        th_fake_error(f, m->seq, SL_ESTALE, "no such lease");
    }
}

/* ---- tests ---- */

static void test_admin_requests_carry_their_arguments(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    sl_client *c = th_fake_client(f, 2000);
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
    th_fake_stop(f);

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
        i = th_fake_find(f, PROTO_ADMIN, i + 1);
        assert_true(i >= 0);
        const th_seen *s = &f->seen[i];
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
    assert_int_equal(th_fake_find(f, PROTO_ADMIN, i + 1), -1);
}

static void test_admin_results_are_decoded(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    sl_client *c = th_fake_client(f, 2000);

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
    assert_string_equal(st.level[1].name, "normal");
    assert_int_equal(st.level[2].depth, 2);
    assert_int_equal(st.level[1].enqueued, 101);
    assert_string_equal(st.breaker, "closed");
    assert_int_equal(st.breaker_trips, 1);
    assert_int_equal(st.rx_bad, 5);
    assert_int_equal(st.tx_failed, 7);

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
    assert_string_equal(sink.breaker, "half-open");
    assert_int_equal(sink.breaker_trips, 4);
    assert_string_equal(sink.reason, "recovering");

    /* the broker's refusal comes back with its code and its words */
    assert_int_equal(sl_pool_pause(c, "nope", 1), SL_ENOTFOUND);
    assert_string_equal(sl_last_error(c), "no pool named nope");
    sl_close(&c);
}

/* list_refused runs the three list calls against f's variant and checks
 * each fails with SL_EPROTO, leaving its output untouched. */
static void list_refused(th_fake *f, bool pools, bool stats)
{
    sl_client *c = th_fake_client(f, 2000);
    sl_level_info levels[SL_MAX_LEVELS], lv_before[SL_MAX_LEVELS];
    sl_pool_info pl[SL_MAX_POOLS], pl_before[SL_MAX_POOLS];
    sl_stats st, st_before;
    memset(levels, 0x55, sizeof levels);
    memset(pl, 0x55, sizeof pl);
    memset(&st, 0x55, sizeof st);
    memcpy(lv_before, levels, sizeof levels);
    memcpy(pl_before, pl, sizeof pl);
    memcpy(&st_before, &st, sizeof st);
    unsigned n = 99;
    assert_int_equal(sl_level_list(c, levels, &n), SL_EPROTO);
    assert_int_equal(n, 0);
    assert_memory_equal(levels, lv_before, sizeof levels);
    if (pools) {
        n = 99;
        assert_int_equal(sl_pool_list(c, pl, &n), SL_EPROTO);
        assert_int_equal(n, 0);
        assert_memory_equal(pl, pl_before, sizeof pl);
    }
    if (stats) {
        assert_int_equal(sl_stats_get(c, &st), SL_EPROTO);
        assert_memory_equal(&st, &st_before, sizeof st);
    }
    sl_close(&c);
}

static void test_malformed_admin_results_are_refused(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);

    /* a row without its required columns */
    f->variant = VARIANT_MISSING_COLUMN;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    list_refused(f, false, true);
    th_fake_stop(f);

    /* a column of the wrong type (pools), an unknown column (levels) */
    f->variant = VARIANT_BAD_ROWS;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    list_refused(f, true, false);
    th_fake_stop(f);

    /* more levels than SL_MAX_LEVELS fit the wire's arrays (64 items) but
     * not a level list (16 rows) nor the caller's arrays: every reply that
     * lists levels refuses them */
    f->variant = VARIANT_TOO_MANY_LEVELS;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    list_refused(f, false, true);
    sl_client *c = th_fake_client(f, 2000);
    assert_int_equal(sl_levels(c, NULL, NULL), SL_EPROTO);
    sl_close(&c);
}

static void test_partial_results_are_refused(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    f->variant = VARIANT_PARTIAL;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    sl_client *c = th_fake_client(f, 2000);
    /* sink.show's and explain's answers must carry every result the command
     * list names for them */
    sl_sink_info sink;
    assert_int_equal(sl_sink_show(c, &sink), SL_EPROTO);
    sl_explain_info e;
    assert_int_equal(sl_explain(c, 42, &e), SL_EPROTO);
    sl_close(&c);
}

static void test_cost_travels_in_put_and_deliver(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_rated), 0);
    sl_client *c = th_fake_client(f, 2000);
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
    th_fake_stop(f);

    /* a cost of 1 (or 0, meaning 1) is the wire's default, so it is left out */
    const bool carried[] = {true, false, false, true};
    int i = -1;
    for (size_t j = 0; j < 4; j++) {
        i = th_fake_find(f, PROTO_PUT, i + 1);
        assert_true(i >= 0);
        assert_int_equal((f->seen[i].present & PF(cost)) != 0, carried[j]);
        if (carried[j])
            assert_int_equal(f->seen[i].cost, costs[j]);
    }
}

static void test_throttled_returns_credit_and_retry_after(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_rated), 0);
    sl_client *c = th_fake_client(f, 2000);
    sl_delivery stray = {.token = 80, .tag = "", .body = ""};
    /* not subscribed: no credit, as for ACK */
    assert_int_equal(sl_throttled(c, &stray, 0), SL_OK);
    assert_int_equal(sl_flush(c, 2000), SL_ESTALE);
    assert_int_equal(sl_throttled(c, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 2), SL_OK);
    sl_delivery *d[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(sl_recv(c, 2000, &d[k]), SL_OK);
    assert_int_equal(sl_throttled(c, d[0], 1500), SL_OK);
    assert_int_equal(sl_throttled(c, d[1], 0), SL_OK);
    assert_int_equal(sl_flush(c, 2000), SL_ESTALE);
    assert_string_equal(sl_last_error(c), "an earlier settlement was refused: no such lease");
    for (int k = 0; k < 2; k++)
        sl_delivery_free(&d[k]);
    sl_close(&c);
    th_fake_stop(f);

    int i = th_fake_find(f, PROTO_THROTTLED, 0);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 80);
    assert_false(f->seen[i].present & (PF(credit) | PF(retry_ms)));
    i = th_fake_find(f, PROTO_THROTTLED, i + 1);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 70);
    assert_int_equal(f->seen[i].credit, 1);
    assert_true(f->seen[i].present & PF(retry_ms));
    assert_int_equal(f->seen[i].retry_ms, 1500);
    i = th_fake_find(f, PROTO_THROTTLED, i + 1);
    assert_true(i >= 0);
    assert_int_equal(f->seen[i].token, 80);
    assert_int_equal(f->seen[i].credit, 1); /* given back even though the lease was gone */
    assert_false(f->seen[i].present & PF(retry_ms)); /* 0: the broker's default */
}

static void test_pool_message_sets_share_and_is_no_reply(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_pool_only), 0);
    sl_client *c = th_fake_client(f, 300);
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
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    sl_client *c = th_fake_client(f, 2000);
    assert_int_equal(sl_pool_resize(c, "workers", 8), SL_OK); /* POOL, then ADMIN_OK */
    assert_int_equal(sl_share(c), 3);
    sl_close(&c);
}

/* What the fake broker saw of the window requests, in order (read after
 * th_fake_stop, which joins its thread). */
static struct {
    unsigned n;
    uint64_t level[8];
    int has_level[8];
    proto_rows_window rows[8];
} windows_seen;

/* answer_windows records each window request and answers sink.show with
 * two windows, or, once a sink.set with no window came, with none; and
 * level.list with rows for levels 1 and 7 (which the list does not have). */
static void answer_windows(th_fake *f, const proto_msg *m)
{
    static int plain_sink;
    if (m->type == PROTO_HELLO) {
        plain_sink = 0;
        th_fake_welcome(f, m->seq, levels_of(f));
        return;
    }
    if (m->type != PROTO_ADMIN)
        return;
    char cmd[PROTO_MAX_NAME + 1] = "";
    memcpy(cmd, m->cmd.ptr, m->cmd.len);
    if (strcmp(cmd, "sink.set") == 0 || strcmp(cmd, "level.set") == 0) {
        unsigned k = windows_seen.n++ % 8;
        windows_seen.has_level[k] = proto_has(m, PROTO_F_level);
        windows_seen.level[k] = m->level;
        windows_seen.rows[k] = m->window_rows;
        plain_sink = m->window_rows.n == 1 && m->window_rows.v[0].count_milli == 0;
        th_fake_reply(f, PROTO_ADMIN_OK, m->seq);
    } else if (strcmp(cmd, "sink.show") == 0) {
        proto_msg r;
        proto_init(&r, PROTO_ADMIN_OK);
        proto_set(&r, seq, m->seq);
        proto_set(&r, rate_milli, 5000);
        proto_set(&r, effective_rate_milli, 5000);
        proto_set(&r, burst, 2);
        proto_set(&r, max_inflight, 0);
        proto_set(&r, sink_inflight, 0);
        proto_set(&r, tokens_milli, 1500);
        proto_set(&r, paused_ms, 0);
        proto_set_str(&r, PROTO_F_breaker, "closed", 6);
        proto_set(&r, breaker_trips, 0);
        if (!plain_sink) {
            r.present |= PF(window_rows);
            r.window_rows.n = 2;
            r.window_rows.v[0] = (proto_row_window){.present = PROTO_ROW_ALL(window) & ~1u, .count_milli = 5000,
                                                    .period_ms = 1000, .burst = 2, .tokens_milli = 1500};
            r.window_rows.v[1] = (proto_row_window){.present = PROTO_ROW_ALL(window) & ~1u,
                                                    .count_milli = 500000, .period_ms = 60000,
                                                    .burst = UINT64_C(1) << 40, .tokens_milli = 7};
        }
        th_fake_send(f, &r);
    } else if (strcmp(cmd, "level.list") == 0) {
        proto_msg r;
        proto_init(&r, PROTO_ADMIN_OK);
        proto_set(&r, seq, m->seq);
        r.present |= PF(level_rows) | PF(window_rows);
        r.level_rows.n = 3;
        static const uint64_t max_rate[] = {0, 10000, 3000};
        for (uint32_t i = 0; i < 3; i++)
            r.level_rows.v[i] = (proto_row_level){.present = PROTO_ROW_ALL(level), .name = {"l", 1},
                                                  .max_rate_milli = max_rate[i], .burst = 1, .tokens_milli = 900};
        r.window_rows.n = 3;
        r.window_rows.v[0] = (proto_row_window){.present = PROTO_ROW_ALL(window), .level = 1, .count_milli = 10000,
                                                .period_ms = 1000, .burst = 1};
        r.window_rows.v[1] = (proto_row_window){.present = PROTO_ROW_ALL(window), .level = 1, .count_milli = 8000,
                                                .period_ms = 10000, .burst = 8, .tokens_milli = 3000};
        r.window_rows.v[2] = (proto_row_window){.present = PROTO_ROW_ALL(window), .level = 7, .count_milli = 1,
                                                .period_ms = 1, .burst = 1};
        th_fake_send(f, &r);
    }
}

static void test_windows_travel_as_rows(void **state)
{
    th_fake *f = *state;
    memset(&windows_seen, 0, sizeof windows_seen);
    assert_int_equal(th_fake_bind(f), 0);
    assert_int_equal(th_fake_start(f, answer_windows), 0);
    sl_client *c = th_fake_client(f, 2000);
    const sl_window w[3] = {{5000, 1000, 1, 99}, {8000, 10000, 8, 0}, {500000, 60000, 500, 0}};
    assert_int_equal(sl_sink_windows(c, w, 2), SL_OK);
    assert_int_equal(sl_level_windows(c, 1, w, 3), SL_OK);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(c, &si), SL_OK);
    assert_int_equal(si.nwindows, 2);
    assert_true(si.windows[0].count_milli == 5000 && si.windows[0].period_ms == 1000 && si.windows[0].burst == 2 &&
                si.windows[0].tokens_milli == 1500);
    assert_true(si.windows[1].count_milli == 500000 && si.windows[1].period_ms == 60000 &&
                si.windows[1].burst == UINT32_MAX && si.windows[1].tokens_milli == 7); /* burst clamped */
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(c, lv, &n), SL_OK);
    assert_int_equal(n, 3);
    assert_int_equal(lv[0].nwindows, 0);                  /* no ceiling */
    assert_int_equal(lv[1].nwindows, 2);                  /* its rows; the row of level 7 is dropped */
    assert_true(lv[1].windows[1].period_ms == 10000 && lv[1].windows[1].tokens_milli == 3000);
    assert_int_equal(lv[2].nwindows, 1);                  /* no rows: its per-second rate */
    assert_true(lv[2].windows[0].count_milli == 3000 && lv[2].windows[0].period_ms == 1000 &&
                lv[2].windows[0].tokens_milli == 900);
    assert_int_equal(sl_sink_windows(c, NULL, 0), SL_OK); /* no limit: one window of 0 */
    assert_int_equal(sl_sink_show(c, &si), SL_OK);
    assert_true(si.nwindows == 1 && si.windows[0].count_milli == 5000); /* from rate_milli and burst */
    /* refused locally */
    sl_window five[5] = {{1000, 1000, 1, 0}};
    assert_int_equal(sl_sink_windows(c, five, 5), SL_EINVAL);
    assert_int_equal(sl_sink_windows(c, NULL, 2), SL_EINVAL);
    assert_int_equal(sl_level_windows(c, SL_MAX_LEVELS, w, 1), SL_ENOLEVEL);
    assert_int_equal(sl_sink_windows(NULL, w, 1), SL_EINVAL);
    sl_close(&c);
    th_fake_stop(f);

    assert_int_equal(windows_seen.n, 3);
    const proto_rows_window *r = &windows_seen.rows[0];
    assert_false(windows_seen.has_level[0]);
    assert_int_equal(r->n, 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_true(r->v[i].count_milli == w[i].count_milli && r->v[i].period_ms == w[i].period_ms &&
                    r->v[i].burst == w[i].burst);
        assert_int_equal(r->v[i].present, (1u << PROTO_COL_window_count_milli) |
                                              (1u << PROTO_COL_window_period_ms) | (1u << PROTO_COL_window_burst));
    }
    assert_true(windows_seen.has_level[1] && windows_seen.level[1] == 1 && windows_seen.rows[1].n == 3);
    assert_true(windows_seen.rows[1].v[2].period_ms == 60000);
    assert_true(windows_seen.rows[2].n == 1 && windows_seen.rows[2].v[0].count_milli == 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, th_fake_setup, th_fake_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_admin_requests_carry_their_arguments),
        T(test_admin_results_are_decoded),
        T(test_malformed_admin_results_are_refused),
        T(test_partial_results_are_refused),
        T(test_cost_travels_in_put_and_deliver),
        T(test_throttled_returns_credit_and_retry_after),
        T(test_pool_message_sets_share_and_is_no_reply),
        T(test_admin_reply_after_pool_message),
        T(test_windows_travel_as_rows),
    };
    th_timeout_s = TEST_ALARM_S;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
