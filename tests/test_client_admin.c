/*
 * test_client_admin.c - the client library's administration and metering
 * calls against a scripted peer, no broker: the arguments each ADMIN request
 * carries, how results are decoded (and clamped), malformed and partial
 * results refused or read as "no limit", the POOL messages that tell a
 * consumer its share, costs in PUT and DELIVER, and THROTTLED.
 *
 * As in test_client_local.c, each test binds a real ZeroMQ ROUTER socket on
 * ipc:// in its own temporary directory and serves it from the fake broker's
 * thread (th_fake, in harness.c) with one of the handlers below, which play
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

#define TEST_ALARM_S 20

/* th_fake.variant: how the handlers below answer */
enum { VARIANT_NORMAL, VARIANT_TOO_MANY_LEVELS, VARIANT_RAGGED_COLUMNS, VARIANT_NO_RATES };

/* levels_of is how many levels f announces: more than SL_MAX_LEVELS for
 * VARIANT_TOO_MANY_LEVELS, else high, normal and low. */
static uint32_t levels_of(const th_fake *f)
{
    return f->variant == VARIANT_TOO_MANY_LEVELS ? 17 : 3;
}

/* ---- the broker's answers ---- */

/* column_set sets the array field f of m to v[0..n). */
static void column_set(proto_msg *m, proto_field f, proto_u64s *col, uint32_t n, const uint64_t *v)
{
    col->n = n;
    memcpy(col->v, v, n * sizeof *v);
    m->present |= (proto_mask)1 << f;
}

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
    static const uint64_t deadline_ms[] = {0, 500, 60000}, aging_ms[] = {0, 0, 2500},
                          paused[] = {0, 0, 1}, depth[] = {4, 0, 17}, oldest_ms[] = {12, 0, 90000};
    proto_msg r;
    proto_init(&r, PROTO_ADMIN_OK);
    proto_set(&r, seq, seq);
    uint32_t n = levels_of(f);
    th_fake_names(&r, n);
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
    th_fake_send(f, &r);
}

static void reply_pool_list(th_fake *f, uint64_t seq)
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
    th_fake_send(f, &r);
}

/* reply_sink_show answers sink.show; a broker of VARIANT_NO_RATES leaves
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
    if (f->variant != VARIANT_NO_RATES)
        proto_set(&r, paused_ms, 750);
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
        static const uint64_t zero[3], prio[] = {10, 20, 30}, aged[] = {0, 4, 5},
                              overdue[] = {0, 0, 6}, throttled[] = {0, 9, 0},
                              eta_ms[] = {0, 0, 61000};
        proto_msg r;
        proto_init(&r, PROTO_STATS_OK);
        proto_set(&r, seq, m->seq);
        proto_set(&r, uptime_ms, 1000);
        proto_set(&r, consumers, 2);
        uint32_t n = levels_of(f);
        uint64_t wide[17] = {0};
        th_fake_names(&r, n);
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
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    f->variant = VARIANT_RAGGED_COLUMNS;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    sl_client *c = th_fake_client(f, 2000);
    sl_level_info levels[SL_MAX_LEVELS];
    unsigned n = 99;
    assert_int_equal(sl_level_list(c, levels, &n), SL_EPROTO);
    assert_int_equal(n, 0);
    sl_close(&c);
    th_fake_stop(f);

    /* more levels than SL_MAX_LEVELS fit the wire (64 items) but not the
     * caller's arrays: every reply that lists levels refuses them */
    f->variant = VARIANT_TOO_MANY_LEVELS;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    c = th_fake_client(f, 2000);
    assert_int_equal(sl_level_list(c, levels, &n), SL_EPROTO);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_EPROTO);
    assert_int_equal(sl_levels(c, NULL, NULL), SL_EPROTO);
    sl_close(&c);
}

static void test_level_list_without_rate_columns_reads_as_no_limits(void **state)
{
    th_fake *f = *state;
    assert_int_equal(th_fake_bind(f), 0);
    f->variant = VARIANT_NO_RATES;
    assert_int_equal(th_fake_start(f, answer_admin), 0);
    sl_client *c = th_fake_client(f, 2000);
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

#define T(name) cmocka_unit_test_setup_teardown(name, th_fake_setup, th_fake_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_admin_requests_carry_their_arguments),
        T(test_admin_results_are_decoded),
        T(test_malformed_admin_results_are_refused),
        T(test_level_list_without_rate_columns_reads_as_no_limits),
        T(test_cost_travels_in_put_and_deliver),
        T(test_throttled_returns_credit_and_retry_after),
        T(test_pool_message_sets_share_and_is_no_reply),
        T(test_admin_reply_after_pool_message),
    };
    th_timeout_s = TEST_ALARM_S;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
