/*
 * test_runs.c - publishes confirmed in runs, against the real sluiced:
 *
 *   - a connection whose HELLO asks for runs, sending 300 PUTs without
 *     waiting, is confirmed by fewer PUT_OKs than PUTs: each {seq, id,
 *     confirms} covers the next `confirms` requests in order, every request
 *     exactly once, the ids one apart; another connection, which did not
 *     ask, gets a PUT_OK of its own for every PUT, without confirms; a
 *     duplicate (a key seen before) is confirmed alone and breaks the run;
 *     and a consumer then receives all 602, in each connection's order,
 *     under the ids their confirmations named;
 *   - the client library asks by itself: 2,000 publishes kept 200
 *     outstanding are confirmed in ticket order, each with the id its
 *     message is delivered under, none twice and none lost; a synchronous
 *     publish every 250, sent behind the window (its confirmation may end
 *     the window's run), returns the id its message is delivered under;
 *   - a broker that cannot store a run refuses each of its publishes: with
 *     the disk full (the nospace shim, as test_nospace), every PUT of a
 *     window gets its own ERROR SL_ENOSPC, in order, none a PUT_OK.
 *
 * The first and last cases speak the wire (a DEALER and proto/), to see
 * the runs themselves; the second uses the library, as producers do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>

#include "harness.h"
#include "proto.h"
#include "sluice.h"

#define RAW_PUTS 300
#define LIB_PUTS 2000
#define LIB_WINDOW 200

typedef struct raw {
    void *ctx, *sock;
} raw;

static void raw_open(raw *w, const char *endpoint)
{
    int linger = 0;
    w->ctx = zmq_ctx_new();
    w->sock = zmq_socket(w->ctx, ZMQ_DEALER);
    zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_connect(w->sock, endpoint), 0);
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

/* raw_reply waits up to 10 s for the next reply (a PING is skipped) and
 * decodes it into *m, which points into *keep. */
static void raw_reply(raw *w, proto_msg *m, zmq_msg_t *keep)
{
    uint64_t until = th_now_ms() + 10000;
    while (th_now_ms() < until) {
        zmq_pollitem_t it = {.socket = w->sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 50) <= 0)
            continue;
        zmq_msg_close(keep);
        zmq_msg_init(keep);
        assert_true(zmq_msg_recv(keep, w->sock, 0) >= 0);
        assert_int_equal(proto_decode(zmq_msg_data(keep), zmq_msg_size(keep), m, NULL), SL_OK);
        if (m->type != PROTO_PING)
            return;
    }
    fail_msg("no reply within 10 s");
}

/* confirmed reads the replies to puts PUTs with seqs first.., checking that
 * they cover each exactly once, in order, ids one apart from first_id on;
 * writes each request's id to ids[] and returns how many PUT_OKs it took. */
static unsigned confirmed(raw *w, uint64_t first, unsigned puts, uint64_t ids[], int runs_allowed)
{
    unsigned replies = 0, got = 0;
    zmq_msg_t keep;
    zmq_msg_init(&keep);
    while (got < puts) {
        proto_msg m;
        raw_reply(w, &m, &keep);
        assert_int_equal(m.type, PROTO_PUT_OK);
        assert_int_equal(m.seq, first + got);
        /* every PUT_OK to a connection that asked says how many it confirms; none to another */
        assert_int_equal(proto_has(&m, PROTO_F_confirms), runs_allowed);
        uint64_t n = runs_allowed ? m.confirms : 1;
        assert_true(n >= 1 && n <= puts - got);
        for (uint64_t k = 0; k < n; k++)
            ids[got + k] = m.id + k;
        got += (unsigned)n;
        replies++;
    }
    zmq_msg_close(&keep);
    return replies;
}

/* ask_runs sends HELLO {seq 1, runs 1} and checks its WELCOME (in *r). */
static void ask_runs(raw *w, proto_msg *r, zmq_msg_t *keep)
{
    proto_msg m;
    proto_init(&m, PROTO_HELLO);
    proto_set(&m, seq, 1);
    proto_set(&m, v, PROTO_VERSION);
    proto_set(&m, runs, 1);
    raw_send(w, &m);
    raw_reply(w, r, keep);
    assert_int_equal(r->type, PROTO_WELCOME);
}

static void put_init(proto_msg *m, uint64_t seq, const char *body)
{
    proto_init(m, PROTO_PUT);
    proto_set(m, seq, seq);
    proto_set(m, level, 0);
    proto_set_str(m, PROTO_F_body, body, strlen(body));
}

static void a_connection_that_asked_is_confirmed_in_runs(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start((const char *[]){"--levels", "2", NULL}, &f), 0);
    raw a, b;
    raw_open(&a, f->b.endpoint);
    raw_open(&b, f->b.endpoint);

    proto_msg m, r;
    zmq_msg_t keep;
    zmq_msg_init(&keep);
    ask_runs(&a, &r, &keep);

    /* each sends its PUTs without waiting (another producer's in between
     * would make the ids not one apart, and the runs shorter) */
    char body[32];
    static uint64_t ids_a[RAW_PUTS], ids_b[RAW_PUTS];
    for (unsigned i = 0; i < RAW_PUTS; i++) {
        snprintf(body, sizeof body, "a%u", i);
        put_init(&m, 2 + i, body);
        raw_send(&a, &m);
    }
    unsigned replies_a = confirmed(&a, 2, RAW_PUTS, ids_a, 1);

    /* a duplicate is confirmed alone, with the first message's id, and
     * breaks the run: the PUT behind it starts another */
    const char *keys[3] = {"k1", "k1", NULL};
    for (unsigned i = 0; i < 3; i++) {
        put_init(&m, 2 + RAW_PUTS + i, "keyed");
        if (keys[i])
            proto_set_str(&m, PROTO_F_key, keys[i], strlen(keys[i]));
        raw_send(&a, &m);
    }
    uint64_t first_id = 0;
    for (unsigned i = 0; i < 3; i++) {
        raw_reply(&a, &r, &keep);
        assert_int_equal(r.type, PROTO_PUT_OK);
        assert_int_equal(r.seq, 2 + RAW_PUTS + i);
        assert_true(proto_has(&r, PROTO_F_confirms));
        assert_int_equal(r.confirms, 1);
        assert_int_equal(proto_has(&r, PROTO_F_duplicate), i == 1);
        if (i == 0)
            first_id = r.id;
        assert_int_equal(r.id, i == 2 ? first_id + 1 : first_id);
    }
    zmq_msg_close(&keep);
    for (unsigned i = 0; i < RAW_PUTS; i++) {
        snprintf(body, sizeof body, "b%u", i);
        put_init(&m, 1 + i, body);
        raw_send(&b, &m);
    }
    unsigned replies_b = confirmed(&b, 1, RAW_PUTS, ids_b, 0);
    fprintf(stderr, "# %u PUTs: %u PUT_OKs to the connection that asked, %u to the one that did not\n", RAW_PUTS,
            replies_a, replies_b);
    assert_true(replies_a < RAW_PUTS);
    assert_int_equal(replies_b, RAW_PUTS);
    raw_close(&a);
    raw_close(&b);

    /* every one stored, under the id its confirmation named */
    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 64), SL_OK);
    unsigned seen_a = 0, seen_b = 0, keyed = 0;
    for (unsigned i = 0; i < 2 * RAW_PUTS + 2; i++) { /* the duplicate stored nothing */
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(f->c, 10000, &d), SL_OK);
        const char *text = d->body;
        if (text[0] == 'k') {
            keyed++;
            assert_int_equal(sl_ack(f->c, d), SL_OK);
            sl_delivery_free(&d);
            continue;
        }
        unsigned k = (unsigned)atoi(text + 1);
        assert_true(k < RAW_PUTS);
        if (text[0] == 'a') {
            assert_int_equal(k, seen_a++); /* FIFO within the connection */
            assert_int_equal(d->id, ids_a[k]);
        } else {
            assert_int_equal(k, seen_b++);
            assert_int_equal(d->id, ids_b[k]);
        }
        assert_int_equal(sl_ack(f->c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(seen_a, RAW_PUTS);
    assert_int_equal(seen_b, RAW_PUTS);
    assert_int_equal(keyed, 2);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void the_library_takes_runs_apart(void **state)
{
    (void)state;
    th_fixture *f;
    assert_int_equal(th_fixture_start((const char *[]){"--levels", "2", NULL}, &f), 0);
    static uint64_t id_of[LIB_PUTS + 1], sync_id[LIB_PUTS / 250 + 1];
    char body[32];
    uint64_t sent = 0, next_ticket = 1;
    while (next_ticket <= LIB_PUTS) {
        while (sent < LIB_PUTS && sl_send_pending(f->c) < LIB_WINDOW) {
            snprintf(body, sizeof body, "%llu", (unsigned long long)(sent + 1));
            sl_put p = {.body = body, .body_len = strlen(body), .level = 1};
            uint64_t ticket;
            assert_int_equal(sl_send_async(f->c, &p, &ticket), SL_OK);
            assert_int_equal(ticket, ++sent);
            if (sent % 250 == 0) { /* a synchronous publish right behind them may end their run */
                snprintf(body, sizeof body, "s%llu", (unsigned long long)(sent / 250));
                p = (sl_put){.body = body, .body_len = strlen(body), .level = 1};
                assert_int_equal(sl_send(f->c, &p, &sync_id[sent / 250]), SL_OK);
            }
        }
        sl_confirm cf;
        assert_int_equal(sl_send_wait(f->c, 10000, &cf), SL_OK);
        assert_int_equal(cf.err, SL_OK);
        assert_int_equal(cf.ticket, next_ticket); /* in order, each once */
        if (next_ticket > 1)
            assert_true(cf.id > id_of[next_ticket - 1]);
        id_of[next_ticket++] = cf.id;
    }
    assert_int_equal(sl_send_pending(f->c), 0);

    assert_int_equal(sl_subscribe(f->c, NULL, NULL, 0, 64), SL_OK);
    unsigned next = 1, syncs = 0;
    for (unsigned i = 0; i < LIB_PUTS + LIB_PUTS / 250; i++) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(f->c, 10000, &d), SL_OK);
        const char *text = d->body;
        if (text[0] == 's') { /* stored under the id sl_send returned */
            unsigned long k = strtoul(text + 1, NULL, 10);
            assert_true(k >= 1 && k <= LIB_PUTS / 250);
            assert_int_equal(d->id, sync_id[k]);
            syncs++;
        } else {
            unsigned long k = strtoul(text, NULL, 10);
            assert_int_equal(k, next++); /* FIFO */
            assert_int_equal(d->id, id_of[k]);
        }
        assert_int_equal(sl_ack(f->c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(syncs, LIB_PUTS / 250);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(f->c, 300, &d), SL_ETIMEDOUT); /* nothing more */
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* With the disk full (the nospace shim, no log: every batch an LMDB
 * commit), a window of publishes from a connection that asked for runs is
 * refused: an ERROR SL_ENOSPC for each request, in order, none confirmed. */
static void a_refused_run_is_refused_request_by_request(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, (const char *[]){"--levels", "2", "--wal-mb", "0", NULL}), 0);
    static char flag[400], flag_env[440];
    snprintf(flag, sizeof flag, "%s/disk-full", b.dir);
    snprintf(flag_env, sizeof flag_env, "SLUICE_NOSPACE_FLAG=%s", flag);
    th_broker_preload(&b, "tests/lib/nospace_shim.so", (const char *[]){flag_env, NULL});
    assert_int_equal(th_broker_start(&b), 0);
    FILE *full = fopen(flag, "w");
    assert_non_null(full);
    fclose(full);

    raw a;
    raw_open(&a, b.endpoint);
    proto_msg m, r;
    zmq_msg_t keep;
    zmq_msg_init(&keep);
    ask_runs(&a, &r, &keep);
    for (unsigned i = 0; i < 50; i++) {
        put_init(&m, 2 + i, "refused");
        raw_send(&a, &m);
    }
    for (unsigned i = 0; i < 50; i++) {
        raw_reply(&a, &r, &keep);
        assert_int_equal(r.type, PROTO_ERROR);
        assert_int_equal(r.seq, 2 + i);
        assert_int_equal(r.code, SL_ENOSPC);
    }
    zmq_msg_close(&keep);
    raw_close(&a);
    assert_int_equal(unlink(flag), 0);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_connection_that_asked_is_confirmed_in_runs, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_library_takes_runs_apart, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_refused_run_is_refused_request_by_request, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
