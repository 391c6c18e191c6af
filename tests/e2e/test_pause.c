/*
 * test_pause.c - a pause after THROTTLED has an end, against the real
 * sluiced:
 *
 *   - a THROTTLED asking ten years pauses the sink for --max-throttle-pause
 *     (5 minutes by default), no more: `sink show`, `stats --json` and
 *     explain say what is left and where it came from, the log names the
 *     message, level and pool; `sluice sink resume` ends it at once (and
 *     says what it had left), and the message goes out again, uncharged;
 *   - `sink set` ends a pause too;
 *   - a THROTTLED for a tag in a FIFO level asking ten years holds that
 *     level for --max-throttle-pause (2 s here), shown in `level list`
 *     (PAUSED "429 ...", throttled_ms) and explain, while the level above
 *     flows; `level resume` ends it at once.
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

#define TEN_YEARS_MS 315360000000ULL

static uint64_t put(sl_client *c, int level, const char *tag)
{
    uint64_t id = 0;
    sl_put m = {.body = "x", .body_len = 1, .level = level, .tag = tag};
    assert_int_equal(sl_send(c, &m, &id), SL_OK);
    return id;
}

/* cli runs `sluice -b ENDPOINT args...` and returns its exit status, its
 * standard output in out. */
static int cli(const th_broker *b, const char *const *args, char *out, size_t len)
{
    const char *argv[16] = {th_bin("sluice"), "-b", b->endpoint};
    int n = 3;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return th_run(argv, NULL, out, len);
}

/* log_has waits up to 5 s for text in the broker's log. */
static int log_has(const th_broker *b, const char *text)
{
    static char log[1 << 16];
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until; usleep(10000)) {
        th_read_file(b->log, log, sizeof log);
        if (strstr(log, text))
            return 1;
    }
    return 0;
}

/* A consumer that speaks the wire, for a retry-after the C API cannot
 * carry (ten years; sl_throttled takes 32 bits of ms). */
typedef struct raw {
    void *ctx, *sock;
    uint64_t seq;
} raw;

/* raw_next waits up to 5 s for the next message of type want (others are
 * skipped) and decodes it into *m, whose strings point into *keep. */
static void raw_next(raw *w, proto_type want, proto_msg *m, zmq_msg_t *keep)
{
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until;) {
        zmq_pollitem_t it = {.socket = w->sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 20) <= 0)
            continue;
        zmq_msg_close(keep);
        zmq_msg_init(keep);
        assert_true(zmq_msg_recv(keep, w->sock, 0) >= 0);
        if (proto_decode(zmq_msg_data(keep), zmq_msg_size(keep), m, NULL) == SL_OK && m->type == want)
            return;
    }
    fail_msg("no %s within 5 s", proto_name(want));
}

static void raw_send(raw *w, const proto_msg *m)
{
    proto_wbuf out = {0};
    assert_int_equal(proto_encode(m, &out), SL_OK);
    assert_int_equal(zmq_send(w->sock, out.data, out.len, 0), (int)out.len);
    proto_wbuf_free(&out);
}

/* throttle_ten_years takes one delivery in pool on a connection of its own
 * and answers it THROTTLED asking ten years; returns the message's id. */
static uint64_t throttle_ten_years(const th_broker *b, const char *pool)
{
    raw w = {.ctx = zmq_ctx_new(), .seq = 100};
    int linger = 0;
    w.sock = zmq_socket(w.ctx, ZMQ_DEALER);
    assert_int_equal(zmq_setsockopt(w.sock, ZMQ_LINGER, &linger, sizeof linger), 0);
    assert_int_equal(zmq_connect(w.sock, b->endpoint), 0);
    proto_msg m, r;
    zmq_msg_t f;
    zmq_msg_init(&f);
    proto_init(&m, PROTO_HELLO);
    proto_set(&m, seq, ++w.seq);
    proto_set(&m, v, PROTO_VERSION);
    proto_set_str(&m, PROTO_F_pool, pool, strlen(pool));
    proto_set(&m, credit, 1);
    raw_send(&w, &m);
    raw_next(&w, PROTO_DELIVER, &r, &f);
    uint64_t id = r.id, token = r.token;
    proto_init(&m, PROTO_THROTTLED);
    proto_set(&m, seq, ++w.seq);
    proto_set(&m, token, token);
    proto_set(&m, retry_ms, TEN_YEARS_MS);
    raw_send(&w, &m);
    raw_next(&w, PROTO_OK, &r, &f);
    zmq_msg_close(&f);
    zmq_close(w.sock);
    zmq_ctx_term(w.ctx);
    return id;
}

/* A THROTTLED that asks for ten years: the sink pauses for five minutes, no
 * more, and `sink resume` ends that at once. */
static void ten_year_throttled_is_capped_and_sink_resume_ends_it(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t id = put(f->c, 0, NULL);
    assert_int_equal(throttle_ten_years(&f->b, "payments"), id);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, "payments", NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    sl_sink_info s;
    assert_int_equal(sl_sink_show(f->c, &s), SL_OK);
    printf("# a THROTTLED asking ten years paused the sink for %llu ms\n", (unsigned long long)s.paused_ms);
    assert_true(s.paused_ms > 290000 && s.paused_ms <= 300000); /* --max-throttle-pause: 5 minutes */
    char out[8192];
    const char *stats[] = {"stats", "--json", NULL};
    assert_int_equal(cli(&f->b, stats, out, sizeof out), 0);
    const char *p = strstr(out, "\"sink\":{");
    assert_non_null(p);
    assert_non_null(strstr(p, "\"paused_ms\":2")); /* 2xxxxx ms left */
    sl_explain_info e;
    assert_int_equal(sl_explain(f->c, id, &e), SL_OK);
    assert_string_equal(e.state, "ready");
    assert_non_null(strstr(e.why, "the sink is paused for"));
    assert_non_null(strstr(e.why, "sluice sink resume"));
    assert_true(e.until_ms > 290000 && e.until_ms <= 300000);
    char line[256];
    snprintf(line, sizeof line, "sink paused for 300000 ms after THROTTLED of message %llu (level high, pool payments",
             (unsigned long long)id);
    assert_true(log_has(&f->b, line));
    assert_true(log_has(&f->b, "asked 315360000000 ms, cut at --max-throttle-pause to 300000 ms"));
    /* nothing goes while paused */
    assert_int_equal(sl_recv(c, 300, &d), SL_ETIMEDOUT);
    const char *resume[] = {"sink", "resume", NULL};
    assert_int_equal(cli(&f->b, resume, out, sizeof out), 0);
    assert_non_null(strstr(out, "sink: resumed (its pause after THROTTLED had "));
    assert_int_equal(sl_sink_show(f->c, &s), SL_OK);
    assert_int_equal(s.paused_ms, 0);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK); /* at once */
    assert_int_equal(d->id, id);
    assert_int_equal(d->attempt, 1); /* THROTTLED charges nothing */
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(cli(&f->b, resume, out, sizeof out), 0); /* again: nothing to end */
    assert_non_null(strstr(out, "sink: not paused"));
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* sink set applies a new limit at once: a pause does not stand behind it. */
static void sink_set_ends_a_pause(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    uint64_t id = put(f->c, 1, NULL);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_throttled(c, d, 60000), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_sink_info s;
    assert_int_equal(sl_sink_show(f->c, &s), SL_OK);
    assert_true(s.paused_ms > 50000);
    assert_int_equal(sl_sink_set(f->c, 100 * 1000, SL_UNCHANGED, SL_UNCHANGED), SL_OK);
    assert_int_equal(sl_sink_show(f->c, &s), SL_OK);
    assert_int_equal(s.paused_ms, 0);
    assert_true(s.effective_rate_milli == 100 * 1000); /* and the cut is undone */
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    assert_true(log_has(&f->b, "sink set: the sink's pause ended with"));
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A FIFO level waits out its head's tag's pause: a level pause, so at most
 * --max-throttle-pause (5 s here: long enough for the checks below to
 * see it on a loaded machine), shown in level list, ended by level resume;
 * the level above flows meanwhile. */
static void fifo_level_pause_is_capped_shown_and_resumed(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    const char *extra[] = {"--max-throttle-pause", "5000", NULL};
    assert_int_equal(th_fixture_start(extra, &f), 0);
    uint64_t id = put(f->c, 1, "acme");
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, "work", NULL, 0, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_throttled_scope(c, d, (uint32_t)4000000000u, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_level_info lv[SL_MAX_LEVELS];
    uint64_t thr[SL_MAX_LEVELS] = {0};
    unsigned n = 0;
    /* the THROTTLED went on c's connection, the question goes on f->c's:
     * the broker may answer the second first, so ask until it shows */
    for (uint64_t t0 = th_now_ms(); th_now_ms() - t0 < 5000; usleep(20000)) {
        assert_int_equal(sl_level_list_ex(f->c, lv, thr, &n), SL_OK);
        if (thr[1] > 0)
            break;
    }
    assert_true(thr[1] > 0 && thr[1] <= 5000);
    assert_int_equal(thr[0], 0);
    char out[8192];
    const char *list[] = {"level", "list", NULL};
    assert_int_equal(cli(&f->b, list, out, sizeof out), 0);
    assert_non_null(strstr(out, "429 "));
    const char *json[] = {"level", "list", "--json", NULL};
    assert_int_equal(cli(&f->b, json, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"throttled_ms\":"));
    sl_explain_info e;
    assert_int_equal(sl_explain(f->c, id, &e), SL_OK);
    assert_non_null(strstr(e.why, "level normal is paused for"));
    assert_non_null(strstr(e.why, "for its tag 'acme'"));
    assert_non_null(strstr(e.why, "sluice level resume normal"));
    /* high flows while normal waits */
    uint64_t high = put(f->c, 0, NULL);
    assert_int_equal(sl_recv(c, 1000, &d), SL_OK);
    assert_int_equal(d->id, high);
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    const char *resume[] = {"level", "resume", "normal", NULL};
    uint64_t t0 = th_now_ms();
    assert_int_equal(cli(&f->b, resume, out, sizeof out), 0);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id);
    printf("# level normal resumed: its message out %llu ms after the command was started\n",
           (unsigned long long)(th_now_ms() - t0));
    assert_true(log_has(&f->b, "level resume: level normal's pause ended with"));
    assert_int_equal(sl_level_list_ex(f->c, lv, thr, &n), SL_OK);
    assert_int_equal(thr[1], 0);
    /* and once more, left to run out: back within the cap */
    assert_int_equal(sl_throttled_scope(c, d, (uint32_t)4000000000u, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    t0 = th_now_ms();
    assert_int_equal(sl_recv(c, 10000, &d), SL_OK);
    assert_int_equal(d->id, id);
    assert_true(th_now_ms() - t0 <= 8000);
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    th_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ten_year_throttled_is_capped_and_sink_resume_ends_it, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(sink_set_ends_a_pause, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(fifo_level_pause_is_capped_shown_and_resumed, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("pause", tests, NULL, NULL);
}
