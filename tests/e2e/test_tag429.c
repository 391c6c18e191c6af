/*
 * test_tag429.c - a THROTTLED for one tag alone (scope tag) in the real
 * sluiced: the tag pauses for its retry-after while the other tags of its
 * fair level keep leaving (measured on released_ns, the broker's release
 * times), comes back after it uncharged, nothing lost or twice, and the
 * sink neither paused nor cut; a tag with a rate limit has its bucket cut
 * and climbing back (tag list --json), a repeated 429 cutting harder; a
 * FIFO level waits out the pause while a higher level flows; end to end,
 * sluice-sink's per-key limit answered through consume --post
 * --tag-limit-header X-Limit-Scope=key throttles the hot tag alone while
 * another tag's POSTs arrive on time; --exec exit 76; bad input refused
 * with SL_EINVAL and a log line, an untagged message taken as the sink's.
 *
 * Every wait is bounded; bounds are generous (a loaded 2-core machine).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zmq.h>

#include "harness.h"
#include "proto.h"
#include "sluice.h"

#define MAX_GOT 512
#define MS 1000000ull

typedef struct got {
    uint64_t id;
    char tag[32];
    unsigned attempt;
    uint64_t released_ns;
} got;

static void put_tag(sl_client *c, int level, const char *tag, int n)
{
    for (int i = 0; i < n; i++) {
        char body[48];
        snprintf(body, sizeof body, "%s-%d", tag, i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = level, .tag = tag[0] ? tag : NULL};
        assert_int_equal(sl_send(c, &m, NULL), SL_OK);
    }
}

static sl_client *consumer(th_fixture *f, unsigned level, unsigned credit)
{
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, &level, 1, credit), SL_OK);
    return c;
}

static void note(got *g, const sl_delivery *d)
{
    g->id = d->id;
    snprintf(g->tag, sizeof g->tag, "%s", d->tag);
    g->attempt = d->attempt;
    g->released_ns = d->released_ns;
}

static void sink_untouched(sl_client *c, uint64_t rate_milli)
{
    sl_sink_info s;
    assert_int_equal(sl_sink_show(c, &s), SL_OK);
    assert_int_equal(s.paused_ms, 0);
    assert_int_equal(s.effective_rate_milli, rate_milli);
    assert_string_equal(s.reason, "configured");
}

/* tag_row finds tag's row in a tag list (-1: none). */
static int tag_row(const sl_tag_info *v, unsigned n, const char *tag)
{
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(v[i].tag, tag))
            return (int)i;
    return -1;
}

static void paused_tag_lets_the_others_flow(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    assert_int_equal(sl_sink_set(f->c, 20000, 1, SL_UNCHANGED), SL_OK); /* 20/s: the pause spans ~10 of b */
    put_tag(f->c, 1, "a", 4);
    put_tag(f->c, 1, "b", 30);
    sl_client *c = consumer(f, 1, 2);
    static got g[MAX_GOT];
    unsigned n = 0, acked = 0;
    uint64_t acked_ids[64], thr_id = 0, thr_ms = 0, done_ms = 0, end = th_now_ms() + 15000;
    while (acked < 34 && n < MAX_GOT && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 50, &d) != SL_OK)
            continue;
        note(&g[n++], d);
        if (!thr_id && !strcmp(d->tag, "a")) {
            thr_id = d->id;
            thr_ms = th_now_ms();
            assert_int_equal(sl_throttled_scope(c, d, 500, SL_SCOPE_TAG), SL_OK);
            assert_int_equal(sl_flush(c, 5000), SL_OK);
            done_ms = th_now_ms(); /* the broker took it between thr_ms and now */
            sink_untouched(f->c, 20000); /* the sink goes on, at its rate */
            sl_tag_info v[SL_MAX_TAG_ROWS];
            sl_tag_throttle thr[SL_MAX_TAG_ROWS];
            unsigned k = 0;
            assert_int_equal(sl_tag_list_ex(f->c, v, thr, &k), SL_OK);
            int row = tag_row(v, k, "a");
            assert_true(row >= 0);
            fprintf(stderr, "# tag list: a paused %llu ms more\n", (unsigned long long)thr[row].throttled_ms);
            assert_true(thr[row].throttled_ms > 0 && thr[row].throttled_ms <= 500);
            assert_int_equal(thr[row].effective_rate_milli, 0); /* no rate limit: paused only */
        } else {
            assert_int_equal(sl_ack(c, d), SL_OK);
            acked_ids[acked++] = d->id;
        }
        sl_delivery_free(&d);
    }
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    assert_true(thr_id != 0);
    assert_int_equal(acked, 34); /* nothing lost ... */
    for (unsigned i = 0; i < acked; i++)
        for (unsigned j = i + 1; j < acked; j++)
            assert_true(acked_ids[i] != acked_ids[j]); /* ... nor twice */
    /* the pause ran from when the broker took the THROTTLED (between thr_ns and done_ns) for 500 ms */
    uint64_t thr_ns = thr_ms * MS, done_ns = (done_ms + 1) * MS, pause_end = thr_ns + 500 * MS;
    uint64_t first_b = UINT64_MAX;
    unsigned b_in_pause = 0, a_after = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!strcmp(g[i].tag, "b") && g[i].released_ns >= thr_ns) {
            b_in_pause += g[i].released_ns < pause_end;
            if (g[i].released_ns < first_b)
                first_b = g[i].released_ns;
        }
        if (!strcmp(g[i].tag, "a") && g[i].released_ns >= done_ns) {
            a_after++;
            assert_true(g[i].released_ns + MS >= pause_end); /* none of a before its pause ends */
            if (g[i].id == thr_id)
                assert_int_equal(g[i].attempt, 1); /* back uncharged */
        }
    }
    fprintf(stderr, "# during a's 500 ms pause: %u of b released, the first %.1f ms after the throttle; "
            "%u of a after it\n", b_in_pause, (double)(first_b - thr_ns) / 1e6, a_after);
    assert_true(b_in_pause >= 3);                 /* ~10 at 20/s */
    assert_true(first_b < thr_ns + 250 * MS);     /* b did not wait for a */
    assert_true(a_after >= 1);                    /* the throttled one, at least, came back */
    sl_stats st;
    sl_stats_ex ex;
    assert_int_equal(sl_stats_get_ex(f->c, &st, &ex), SL_OK);
    assert_int_equal(st.level[1].throttled, 1);
    assert_int_equal(ex.throttled_tag[1], 1);
    sink_untouched(f->c, 20000);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* row_rate returns tag's effective_rate_milli in a tag list (UINT64_MAX: no row). */
static uint64_t row_rate(sl_client *c, const char *tag)
{
    sl_tag_info v[SL_MAX_TAG_ROWS];
    sl_tag_throttle thr[SL_MAX_TAG_ROWS];
    unsigned k = 0;
    assert_int_equal(sl_tag_list_ex(c, v, thr, &k), SL_OK);
    int row = tag_row(v, k, tag);
    return row < 0 ? UINT64_MAX : thr[row].effective_rate_milli;
}

static void rate_cut_and_recovery_in_tag_list(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char out[16384];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    assert_int_equal(sl_sink_set(f->c, 100000, 10, SL_UNCHANGED), SL_OK);
    sl_tag_settings s;
    sl_tag_settings_init(&s);
    s.nwindows = 1;
    s.windows[0] = (sl_window){.count_milli = 20000, .period_ms = 1000, .burst = 1}; /* 20/s */
    s.each = 1;
    assert_int_equal(sl_tag_set(f->c, "r-*", &s), SL_OK);
    put_tag(f->c, 1, "r-1", 30);
    sl_client *c = consumer(f, 1, 1);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_throttled_scope(c, d, 1000, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    uint64_t cut_ms = th_now_ms();
    sl_delivery_free(&d);
    const char *list[] = {th_bin("sluice"), "-b", f->b.endpoint, "tag", "list", "--json", NULL};
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    uint64_t listed_ms = th_now_ms() - cut_ms;
    fprintf(stderr, "# %s# (answered %llu ms after the cut)\n", out, (unsigned long long)listed_ms);
    assert_non_null(strstr(out, "\"tag\":\"r-1\""));
    assert_non_null(strstr(out, "\"effective_rate_milli\":18000}")); /* an isolated 429: 90 % of 20/s */
    if (listed_ms < 900) /* a loaded machine may start the CLI after the pause has ended */
        assert_null(strstr(out, "\"throttled_ms\":0,")); /* its pause still runs */
    /* it climbs back: 20 % of the limit a second, from a second after the cut */
    uint64_t rate = 18000, back_ms = 0;
    while (th_now_ms() < cut_ms + 8000) {
        rate = row_rate(f->c, "r-1");
        if (rate == 0) {
            back_ms = th_now_ms() - cut_ms;
            break;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "# r-1's bucket back at 20/s %llu ms after the cut\n", (unsigned long long)back_ms);
    assert_int_equal(rate, 0);
    assert_true(back_ms >= 1300); /* 1 s before the first step, then 5 steps of 100 ms */
    /* another 429 within 10 s of the last cut: repeated, the full AIMD */
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_string_equal(d->tag, "r-1");
    uint64_t id = d->id;
    assert_int_equal(sl_throttled_scope(c, d, 300, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(row_rate(f->c, "r-1"), 14000);
    sl_explain_info ex;
    assert_int_equal(sl_explain(f->c, id, &ex), SL_OK);
    fprintf(stderr, "# explain: %s (until %llu ms)\n", ex.why, (unsigned long long)ex.until_ms);
    assert_non_null(strstr(ex.why, "tag 'r-1' was throttled by its service"));
    assert_non_null(strstr(ex.why, "rate cut to 14.000/s"));
    assert_true(ex.until_ms > 0 && ex.until_ms <= 300);
    sink_untouched(f->c, 100000);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void fifo_level_waits_out_the_pause(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 50000, 5, SL_UNCHANGED), SL_OK);
    put_tag(f->c, 1, "a", 2);
    put_tag(f->c, 1, "b", 2);
    sl_client *c = th_client(&f->b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 1), SL_OK); /* every level */
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_string_equal(d->tag, "a");
    uint64_t id = d->id, thr_ns = th_now_ms() * MS;
    assert_int_equal(sl_throttled_scope(c, d, 600, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    put_tag(f->c, 0, "h", 1); /* a higher level is not held */
    got g[8];
    unsigned n = 0;
    uint64_t end = th_now_ms() + 10000;
    while (n < 5 && th_now_ms() < end) {
        if (sl_recv(c, 50, &d) != SL_OK)
            continue;
        note(&g[n++], d);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(n, 5);
    assert_string_equal(g[0].tag, "h");
    assert_true(g[0].released_ns < thr_ns + 400 * MS);
    assert_int_equal(g[1].id, id); /* FIFO: the head again, uncharged, once the pause is over */
    assert_int_equal(g[1].attempt, 1);
    assert_true(g[1].released_ns + MS >= thr_ns + 600 * MS);
    fprintf(stderr, "# high went %.1f ms after the throttle; the FIFO level's head again at %.1f ms\n",
            (double)(g[0].released_ns - thr_ns) / 1e6, (double)(g[1].released_ns - thr_ns) / 1e6);
    sl_stats st;
    sl_stats_ex ex;
    assert_int_equal(sl_stats_get_ex(f->c, &st, &ex), SL_OK);
    assert_int_equal(ex.throttled_tag[1], 1);
    sink_untouched(f->c, 50000);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A publisher of the cool tag: one message every 100 ms, its publish
 * times noted (monotonic ms), while consume runs. */
typedef struct cool {
    const th_broker *b;
    int n;
    uint64_t sent_ms[32];
} cool;

static void *cool_publisher(void *arg)
{
    cool *p = arg;
    sl_client *c = th_client(p->b, 5000);
    for (int i = 0; i < p->n; i++) {
        char body[24];
        snprintf(body, sizeof body, "cool-%d", i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1, .tag = "cool"};
        p->sent_ms[i] = th_now_ms();
        if (sl_send(c, &m, NULL) != SL_OK)
            p->sent_ms[i] = 0;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    sl_close(&c);
    return NULL;
}

static char text[1 << 17];

/* consume_run runs a shell command line on a thread of its own. */
typedef struct consume_run {
    char cmdline[1024];
    char *out;
    size_t len;
    int rc;
} consume_run;

static void *consume_thread(void *arg)
{
    consume_run *r = arg;
    const char *argv[] = {"/bin/sh", "-c", r->cmdline, NULL};
    r->rc = th_run(argv, NULL, r->out, r->len);
    return NULL;
}

static void sink_key_limit_end_to_end(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    th_sink p;
    char out[1 << 14];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    assert_int_equal(sl_sink_set(f->c, 500000, 50, SL_UNCHANGED), SL_OK); /* 500/s: a sink-wide cut would show */
    const char *extra[] = {"--rate", "1000", "--burst", "100", "--key-header", "X-Sluice-Tag", "--key-rate", "20",
                           "--key-burst", "5", NULL};
    assert_int_equal(th_sink_start(&p, f->b.dir, extra), 0);
    put_tag(f->c, 1, "hot", 30);
    cool pub = {.b = &f->b, .n = 20};
    consume_run run = {.out = out, .len = sizeof out};
    snprintf(run.cmdline, sizeof run.cmdline,
             "%s -b %s consume --post %s --workers 4 --tag-limit-header X-Limit-Scope=key -v --idle-exit 2500 "
             "2>&1 >/dev/null", th_bin("sluice"), f->b.endpoint, p.url);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, consume_thread, &run), 0);
    uint64_t end = th_now_ms() + 10000; /* cool starts once the consumer POSTs */
    while (!th_read_file(p.log, text, sizeof text) && th_now_ms() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cool_publisher(&pub);
    pthread_join(th, NULL);
    assert_int_equal(th_sink_stop(&p), 0);
    assert_int_equal(run.rc, 0);
    assert_non_null(strstr(out, "returned as throttled, scope tag")); /* -v says the scope */
    assert_null(strstr(out, "scope sink"));
    /* at the sink: every message admitted once; the 429s all hot's, cool's POSTs on time */
    th_read_file(p.log, text, sizeof text);
    unsigned ok_hot = 0, ok_cool = 0, refused_hot = 0, other = 0;
    uint64_t worst_ms = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long long ns;
        unsigned status;
        char key[32], body[32];
        assert_int_equal(sscanf(line, "%llu %u %31s %31s", &ns, &status, key, body), 4);
        if (status == 200 && !strcmp(key, "hot"))
            ok_hot++;
        else if (status == 429 && !strcmp(key, "hot"))
            refused_hot++;
        else if (status == 200 && !strcmp(key, "cool")) {
            int i = atoi(body + 5);
            assert_true(i >= 0 && i < pub.n && pub.sent_ms[i]);
            uint64_t lag = ns / MS > pub.sent_ms[i] ? ns / MS - pub.sent_ms[i] : 0;
            worst_ms = lag > worst_ms ? lag : worst_ms;
            ok_cool++;
        } else {
            other++;
        }
    }
    fprintf(stderr, "# sink: hot %u admitted, %u refused (per key); cool %u admitted, the latest %llu ms after its "
            "publish; %u other\n", ok_hot, refused_hot, ok_cool, (unsigned long long)worst_ms, other);
    assert_int_equal(ok_hot, 30);
    assert_int_equal(ok_cool, 20);
    assert_int_equal(other, 0);   /* no global 429, no 429 for cool */
    assert_true(refused_hot >= 1);
    assert_true(worst_ms < 700);  /* hot's pauses (Retry-After 1 s each) never held cool */
    sl_stats st;
    sl_stats_ex ex;
    assert_int_equal(sl_stats_get_ex(f->c, &st, &ex), SL_OK);
    assert_int_equal(st.level[1].throttled, refused_hot);
    assert_int_equal(ex.throttled_tag[1], refused_hot); /* every one for the tag alone */
    sink_untouched(f->c, 500000);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void exec_exit_76_throttles_the_tag(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char out[4096], cmd[1024], flag[400];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    assert_int_equal(sl_sink_set(f->c, 100000, 10, SL_UNCHANGED), SL_OK);
    put_tag(f->c, 1, "a", 1);
    put_tag(f->c, 1, "b", 1);
    snprintf(flag, sizeof flag, "%s/thrown", f->b.dir);
    /* a-0 once exits 76: its tag alone is throttled (for the backoff, 1 s) */
    snprintf(cmd, sizeof cmd, "x=$(cat); if [ \"$x\" = a-0 ] && [ ! -e %s ]; then touch %s; exit 76; fi", flag, flag);
    const char *argv[] = {th_bin("sluice"), "-b", f->b.endpoint, "consume", "--exec", cmd, "-n", "3",
                          "--idle-exit", "5000", NULL};
    assert_int_equal(th_run(argv, NULL, out, sizeof out), 0);
    sl_stats st;
    sl_stats_ex ex;
    assert_int_equal(sl_stats_get_ex(f->c, &st, &ex), SL_OK);
    assert_int_equal(st.level[1].throttled, 1);
    assert_int_equal(ex.throttled_tag[1], 1);
    assert_int_equal(st.level[1].acked, 2); /* a-0 came back after its pause */
    sink_untouched(f->c, 100000);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* raw sends m on a DEALER of its own and returns the reply's error code
 * (0: not an ERROR, -1: no reply in 5 s). */
static int raw(const th_broker *b, proto_msg *m)
{
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, wait_ms = 5000, code = -1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms);
    assert_int_equal(zmq_connect(s, b->endpoint), 0);
    proto_wbuf buf = {0};
    assert_int_equal(proto_encode(m, &buf), SL_OK);
    assert_true(zmq_send(s, buf.data, buf.len, 0) >= 0);
    char reply[1024];
    int n = zmq_recv(s, reply, sizeof reply, 0);
    proto_msg r;
    if (n > 0 && proto_decode(reply, (size_t)n, &r, NULL) == SL_OK)
        code = r.type == PROTO_ERROR ? (int)r.code : 0;
    proto_wbuf_free(&buf);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return code;
}

static void bad_scope_refused_untagged_is_the_sinks(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char log[1 << 16];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_sink_set(f->c, 100000, 10, SL_UNCHANGED), SL_OK);
    proto_msg m;
    proto_init(&m, PROTO_THROTTLED);
    proto_set(&m, seq, 1);
    proto_set(&m, token, 12345);
    proto_set_str(&m, PROTO_F_scope, "everyone", 8);
    assert_int_equal(raw(&f->b, &m), SL_EINVAL);
    proto_set_str(&m, PROTO_F_scope, "tag", 3);
    proto_set(&m, retry_ms, UINT64_MAX); /* more than ten years */
    assert_int_equal(raw(&f->b, &m), SL_EINVAL);
    th_read_file(f->b.log, log, sizeof log);
    assert_non_null(strstr(log, "scope is neither"));
    /* the client library refuses a scope it does not know, sending nothing */
    put_tag(f->c, 1, "", 1); /* untagged */
    sl_client *c = th_client(&f->b, 5000);
    unsigned level = 1;
    assert_int_equal(sl_subscribe(c, NULL, &level, 1, 1), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(sl_throttled_scope(c, d, 0, (sl_scope)7), SL_EINVAL);
    /* scope tag on an untagged message: the sink's */
    assert_int_equal(sl_throttled_scope(c, d, 2000, SL_SCOPE_TAG), SL_OK);
    assert_int_equal(sl_flush(c, 5000), SL_OK);
    sl_delivery_free(&d);
    sl_sink_info si;
    assert_int_equal(sl_sink_show(f->c, &si), SL_OK);
    assert_true(si.paused_ms > 0);
    assert_true(si.effective_rate_milli < 100000);
    sl_stats st;
    sl_stats_ex ex;
    assert_int_equal(sl_stats_get_ex(f->c, &st, &ex), SL_OK); /* and it serves on */
    assert_int_equal(st.level[1].throttled, 1);
    assert_int_equal(ex.throttled_tag[1], 0);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(paused_tag_lets_the_others_flow, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(rate_cut_and_recovery_in_tag_list, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(fifo_level_waits_out_the_pause, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(sink_key_limit_end_to_end, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(exec_exit_76_throttles_the_tag, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(bad_scope_refused_untagged_is_the_sinks, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
