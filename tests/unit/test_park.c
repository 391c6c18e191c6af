/*
 * test_park.c - the requests parked while a commit is out (broker/net/park.c):
 * copies that outlive the received message, handed back oldest first; a
 * peer is known to have something parked (on its endpoint only) until the
 * park is drained; the count bound; and a thousand peers parked and looked
 * up without one false answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "park.h"
#include "sluice_errors.h"

typedef struct seen {
    char bodies[8][32];
    char users[8][32];
    unsigned n;
} seen;

static void look(void *ctx, const net_in *in)
{
    seen *s = ctx;
    if (s->n < 8) {
        snprintf(s->bodies[s->n], sizeof s->bodies[0], "%.*s", (int)in->body_len, (const char *)in->body);
        snprintf(s->users[s->n], sizeof s->users[0], "%s", in->user_id ? in->user_id : "-");
    }
    s->n++;
}

static net_in msg(const uint8_t *rid, size_t rid_len, const char *body, net_sock sock)
{
    return (net_in){.rid = rid, .rid_len = rid_len, .body = body, .body_len = strlen(body), .frames = 1,
                    .sock = sock, .fd = -1};
}

static void copies_come_back_in_order(void **state)
{
    (void)state;
    park *p = park_new();
    assert_non_null(p);
    uint8_t a[5] = {0, 1, 2, 3, 4}, b[5] = {0, 1, 2, 3, 5};
    char body[16];
    strcpy(body, "first");
    net_in in = msg(a, sizeof a, body, NET_MAIN);
    in.user_id = "alice";
    in.user_id_len = 5;
    assert_int_equal(park_add(p, &in), SL_OK);
    strcpy(body, "XXXXX"); /* the received message is gone: the park holds a copy */
    in = msg(b, sizeof b, "second", NET_MAIN);
    assert_int_equal(park_add(p, &in), SL_OK);
    assert_int_equal(park_count(p), 2);
    assert_true(park_holds_peer(p, NET_MAIN, a, sizeof a));
    assert_true(park_holds_peer(p, NET_MAIN, b, sizeof b));
    assert_false(park_holds_peer(p, NET_ADMIN, a, sizeof a)); /* the same id on the other endpoint: another peer */
    uint8_t c[5] = {9, 9, 9, 9, 9};
    assert_false(park_holds_peer(p, NET_MAIN, c, sizeof c));
    seen s = {0};
    park_drain(p, look, &s);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.bodies[0], "first");
    assert_string_equal(s.users[0], "alice");
    assert_string_equal(s.bodies[1], "second");
    assert_string_equal(s.users[1], "-");
    assert_int_equal(park_count(p), 0);
    assert_false(park_holds_peer(p, NET_MAIN, a, sizeof a)); /* drained: nothing waits */
    park_destroy(&p);
    assert_null(p);
    park_destroy(&p); /* accepts NULL */
}

static void full_at_its_bound(void **state)
{
    (void)state;
    park *p = park_new();
    uint8_t rid[4];
    for (unsigned i = 0; i < PARK_MAX_MSGS; i++) {
        memcpy(rid, &i, sizeof rid);
        net_in in = msg(rid, sizeof rid, "x", NET_MAIN);
        assert_false(park_full(p));
        assert_int_equal(park_add(p, &in), SL_OK);
    }
    assert_true(park_full(p));
    net_in in = msg(rid, sizeof rid, "x", NET_MAIN);
    assert_int_equal(park_add(p, &in), SL_EFULL);
    /* every parked peer is found, and peers never parked are not */
    for (unsigned i = 0; i < PARK_MAX_MSGS; i++) {
        memcpy(rid, &i, sizeof rid);
        assert_true(park_holds_peer(p, NET_MAIN, rid, sizeof rid));
        unsigned j = i + PARK_MAX_MSGS;
        memcpy(rid, &j, sizeof rid);
        assert_false(park_holds_peer(p, NET_MAIN, rid, sizeof rid));
    }
    seen s = {0};
    park_drain(p, look, &s);
    assert_int_equal(s.n, PARK_MAX_MSGS);
    assert_false(park_full(p));
    park_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copies_come_back_in_order),
        cmocka_unit_test(full_at_its_bound),
    };
    return cmocka_run_group_tests_name("park", tests, NULL, NULL);
}
