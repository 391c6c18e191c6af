/*
 * test_http_parts.c - the HTTP server's parts that need no server: every
 * admin command has one route, derived from the model, that leads back to
 * it (and web.login none); escapes in a path segment stay in their segment;
 * the history keeps 900 seconds and makes a minute point of each whole
 * minute, rates from counters over the broker's own uptime; the connection
 * table's limits on socket pairs: an address past its share pushes out its
 * connection idle longest, never one in a request, and the deadline cuts
 * what waits or receives too long.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "series.h"
#include "http_int.h"
#include "proto_json.h"
#include "route.h"

static void every_command_has_one_route_back_to_it(void **state)
{
    (void)state;
    int routed = 0;
    for (int c = 0; c < PROTO_CMD_COUNT_; c++) {
        char tmpl[128], path[160] = "";
        int get = route_path((proto_cmd)c, tmpl, sizeof tmpl);
        if (c == PROTO_CMD_web_login) {
            assert_int_equal(get, -1);
            continue;
        }
        assert_true(get == 0 || get == 1);
        assert_int_equal(get, proto_cmd_role((proto_cmd)c) == PROTO_ROLE_MONITOR);
        const char *b = strchr(tmpl, '{');
        if (b) { /* the key: a value with an escaped slash, which stays in its segment */
            snprintf(path, sizeof path, "%.*sa%%2Fb%s", (int)(b - tmpl), tmpl, strchr(b, '}') + 1);
        } else {
            snprintf(path, sizeof path, "%s", tmpl);
        }
        route_hit hit;
        if (!route_of(path, &hit) || hit.cmd != (proto_cmd)c)
            fail_msg("%s (%s) does not lead back to %s", path, tmpl, proto_cmd_name((proto_cmd)c));
        if (b) {
            assert_int_equal(hit.key_len, 3);
            assert_memory_equal(hit.key_text, "a/b", 3);
        }
        routed++;
    }
    assert_int_equal(routed, PROTO_CMD_COUNT_ - 1);
    char t[128];
    assert_int_equal(route_path(PROTO_CMD_level_pause, t, sizeof t), 0);
    assert_string_equal(t, "/levels/{level}/pause");
    assert_int_equal(route_path(PROTO_CMD_level_list, t, sizeof t), 1);
    assert_string_equal(t, "/levels");
    assert_int_equal(route_path(PROTO_CMD_sink_show, t, sizeof t), 1);
    assert_string_equal(t, "/sink");
    assert_int_equal(route_path(PROTO_CMD_dead_requeue, t, sizeof t), 0);
    assert_string_equal(t, "/dead/requeue");
    assert_int_equal(route_path(PROTO_CMD_explain, t, sizeof t), 1);
    assert_string_equal(t, "/explain");
    route_hit hit;
    assert_false(route_of("/levels/high/messages", &hit)); /* publish is api.c's */
    assert_false(route_of("/levels/high/pause/more", &hit));
    assert_false(route_of("/levels//pause", &hit));
    assert_false(route_of("/levels/a%00b/pause", &hit));
    assert_false(route_of("/levels/%zz/pause", &hit));
    assert_false(route_of("/web/login", &hit));
    char out[16];
    assert_int_equal(route_unescape("a+b%20c", 7, out, sizeof out, 1), 5);
    assert_memory_equal(out, "a b c", 5);
    assert_int_equal(route_unescape("a+b", 3, out, sizeof out, 0), 3);
    assert_int_equal(route_unescape("%4", 2, out, sizeof out, 0), -1);
}

static void snap_at(snap *s, uint64_t t_s, uint64_t enqueued)
{
    memset(s, 0, sizeof *s);
    s->nlevels = 2;
    s->wall_ms = t_s * 1000;
    s->uptime_ns = t_s * 1000000000ULL;
    s->lv[0].enqueued = enqueued;
    s->lv[0].dispatched = enqueued / 2;
    s->lv[1].depth = t_s;
    s->sink_rate_milli = 200000;
}

/* points counts the items of the "t" array. */
static int points(const char *json)
{
    const char *t = strstr(json, "\"t\": ["), *end = t ? strchr(t, ']') : NULL;
    int n = end && end[-1] != '[';
    for (const char *p = t; p && p < end; p++)
        n += *p == ',';
    return n;
}

static void the_history_keeps_seconds_and_makes_minutes(void **state)
{
    (void)state;
    series *h = series_new();
    assert_non_null(h);
    static snap prev, cur;
    series_point p;
    snap_at(&prev, 60 * 1000, 0); /* a whole minute's start */
    for (uint64_t t = 1; t <= 1000; t++) {
        snap_at(&cur, 60 * 1000 + t, t * 10); /* 10 a second in, 5 out */
        series_point_of(&prev, &cur, &p);
        assert_true(p.lv[0].in_per_s > 9.99f && p.lv[0].in_per_s < 10.01f);
        assert_true(p.lv[0].out_per_s > 4.99f && p.lv[0].out_per_s < 5.01f);
        assert_true(p.sink_out_per_s > 4.99f && p.sink_out_per_s < 5.01f);
        assert_true(p.sink_limit_per_s > 199.9f);
        series_add(h, &p);
        prev = cur;
    }
    proto_wbuf o = {0};
    assert_int_equal(series_json(h, 0, &o), SL_OK);
    assert_int_equal(points(o.data), SERIES_SECONDS); /* the last 900 of 1000 */
    assert_non_null(strstr(o.data, "\"t\": [60101000,60102000,"));
    proto_wbuf_free(&o);
    assert_int_equal(series_json(h, 1, &o), SL_OK);
    assert_int_equal(points(o.data), 16); /* 1000 s: 16 whole minutes, the 17th still open */
    assert_non_null(strstr(o.data, "\"in_per_s\": [10,10,"));
    assert_non_null(strstr(o.data, "\"step_s\": 60"));
    proto_wbuf_free(&o);
    series_destroy(&h);
    assert_null(h);
}

static int pair_fd(int *other)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    *other = sv[1];
    return sv[0];
}

/* cut tells whether the connection behind other was shut down. */
static int cut(int other)
{
    char c;
    return recv(other, &c, 1, MSG_DONTWAIT) == 0;
}

static void the_connection_table_holds_its_limits(void **state)
{
    (void)state;
    conns t;
    assert_int_equal(conns_init(&t, 6, 3, 1000), SL_OK);
    struct sockaddr_in a = {.sin_family = AF_INET}, b = a;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    inet_pton(AF_INET, "127.0.0.2", &b.sin_addr);
    int peer[10];
    conn_rec *c[10];
    for (int i = 0; i < 3; i++)
        c[i] = conns_open(&t, pair_fd(&peer[i]), (struct sockaddr *)&a, 100 + (uint64_t)i);
    conns_phase(&t, c[0], CONN_BUSY, 110); /* the oldest is in a request: never pushed out */
    c[3] = conns_open(&t, pair_fd(&peer[3]), (struct sockaddr *)&a, 200);
    assert_false(cut(peer[0]));
    assert_true(cut(peer[1])); /* the idle one waiting longest */
    assert_false(cut(peer[2]));
    assert_false(cut(peer[3]));
    conns_phase(&t, c[2], CONN_RECEIVING, 210);
    conns_phase(&t, c[3], CONN_BUSY, 210);
    c[4] = conns_open(&t, pair_fd(&peer[4]), (struct sockaddr *)&a, 300); /* none idle: the newcomer goes */
    assert_true(cut(peer[4]));
    conns_stats st;
    conns_counts(&t, &st);
    assert_int_equal(st.live, 3);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.refused, 1);
    /* the total: 3 of a, 3 of b; the 7th pushes out the idle one waiting longest anywhere */
    for (int i = 5; i < 8; i++)
        c[i] = conns_open(&t, pair_fd(&peer[i]), (struct sockaddr *)&b, 400 + (uint64_t)i);
    conns_counts(&t, &st);
    assert_int_equal(st.live, 6);
    c[8] = conns_open(&t, pair_fd(&peer[8]), (struct sockaddr *)&b, 500); /* b is full too: its own oldest */
    assert_true(cut(peer[5]));
    /* the deadline: RECEIVING keeps its WAITING start; BUSY is never cut */
    conns_sweep(&t, 1105);
    assert_false(cut(peer[0]));
    assert_true(cut(peer[2])); /* waiting since 102, still receiving at 1,105 */
    assert_false(cut(peer[3]));
    assert_false(cut(peer[6]));
    conns_sweep(&t, 1500);
    assert_true(cut(peer[6]) && cut(peer[7]) && cut(peer[8]));
    for (int i = 0; i < 9; i++) {
        conns_close(&t, c[i]);
        close(peer[i]);
    }
    conns_counts(&t, &st);
    assert_int_equal(st.live, 0);
    conns_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_command_has_one_route_back_to_it),
        cmocka_unit_test(the_history_keeps_seconds_and_makes_minutes),
        cmocka_unit_test(the_connection_table_holds_its_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
