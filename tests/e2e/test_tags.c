/*
 * test_tags.c - per-tag settings of a level served fair by tag in the real
 * sluiced: weights 4:1 while both tags are backlogged; a paused tag held
 * while another of its level flows (and named by explain); a tag held to its rate never holding up
 * another (measured on released_ns, the broker's release times: at most
 * rate x tau + burst in every span); --each giving each matching tag its
 * own bucket; an in-flight cap respected without blocking others; the
 * patterns, their order and the pauses across a restart; bad input refused
 * with SL_EINVAL and nothing changed; a tag held by its limit counted in
 * its level's oldest age and ETA, and the untagged tenant listed as such.
 *
 * Every wait is bounded (a few seconds at most); the consumer has credit
 * for the whole backlog, so the broker releases in the order it picks.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define MAX_GOT 512

typedef struct got {
    char tag[32];
    uint64_t released_ns;
} got;

static void put_n(sl_client *c, const char *tag, int n)
{
    for (int i = 0; i < n; i++) {
        sl_put m = {.body = "x", .body_len = 1, .level = 1, .tag = tag};
        assert_int_equal(sl_send(c, &m, NULL), SL_OK);
    }
}

/* take receives up to want deliveries within ms (acking them when ack). */
static unsigned take(sl_client *c, got *g, unsigned want, int ack, uint64_t ms)
{
    unsigned n = 0;
    uint64_t end = th_now_ms() + ms;
    while (n < want && th_now_ms() < end) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 50, &d) != SL_OK)
            continue;
        snprintf(g[n].tag, sizeof g[n].tag, "%s", d->tag);
        g[n].released_ns = d->released_ns;
        n++;
        if (ack)
            assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    return n;
}

static unsigned count_tag(const got *g, unsigned n, const char *tag)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++)
        k += strcmp(g[i].tag, tag) == 0;
    return k;
}

static sl_client *consumer(th_fixture *f, unsigned credit)
{
    sl_client *c = th_client(&f->b, 5000);
    unsigned one = 1;
    assert_non_null(c);
    assert_int_equal(sl_subscribe(c, NULL, &one, 1, credit), SL_OK);
    return c;
}

static void set_weight(sl_client *c, const char *pattern, uint64_t w)
{
    sl_tag_settings s;
    sl_tag_settings_init(&s);
    s.weight = w;
    assert_int_equal(sl_tag_set(c, pattern, &s), SL_OK);
}

static void set_rate(sl_client *c, const char *pattern, uint64_t rate_milli, int each)
{
    sl_tag_settings s;
    sl_tag_settings_init(&s);
    s.nwindows = 1;
    s.windows[0] = (sl_window){.count_milli = rate_milli, .period_ms = 1000, .burst = 1};
    if (each)
        s.each = 1;
    assert_int_equal(sl_tag_set(c, pattern, &s), SL_OK);
}

static void weights_share_deliveries(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    set_weight(f->c, "gold-*", 4);
    put_n(f->c, "free-1", 60);
    put_n(f->c, "gold-1", 60);
    sl_client *c = consumer(f, 50);
    got g[MAX_GOT];
    assert_int_equal(take(c, g, 50, 1, 10000), 50);
    unsigned gold = count_tag(g, 50, "gold-1"), free1 = count_tag(g, 50, "free-1");
    fprintf(stderr, "# weight 4:1, first 50 deliveries: gold %u, free %u\n", gold, free1);
    assert_true(gold >= 39 && gold <= 41); /* 4/5 of 50, give or take one turn */
    assert_int_equal(gold + free1, 50);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void pause_holds_only_that_tag(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    assert_int_equal(sl_tag_pause(f->c, "a", 1), SL_OK);
    put_n(f->c, "a", 4);
    uint64_t id = 0;
    sl_put m = {.body = "x", .body_len = 1, .level = 1, .tag = "a"};
    assert_int_equal(sl_send(f->c, &m, &id), SL_OK);
    put_n(f->c, "b", 5);
    sl_client *c = consumer(f, 20);
    got g[MAX_GOT];
    unsigned n = take(c, g, 10, 1, 1500);
    assert_int_equal(n, 5);
    assert_int_equal(count_tag(g, n, "b"), 5);
    sl_explain_info ex; /* explain names the tag's pause */
    assert_int_equal(sl_explain(f->c, id, &ex), SL_OK);
    fprintf(stderr, "# explain: %s\n", ex.why);
    assert_non_null(strstr(ex.why, "tag 'a' is paused"));
    assert_int_equal(sl_tag_pause(f->c, "a", 0), SL_OK);
    n = take(c, g, 5, 1, 5000);
    assert_int_equal(n, 5);
    assert_int_equal(count_tag(g, n, "a"), 5);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* max_in_span returns the most releases of tag in any span of span_ns. */
static unsigned max_in_span(const got *g, unsigned n, const char *tag, uint64_t span_ns)
{
    unsigned most = 0;
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(g[i].tag, tag))
            continue;
        unsigned k = 0;
        for (unsigned j = 0; j < n; j++)
            k += !strcmp(g[j].tag, tag) && g[j].released_ns >= g[i].released_ns &&
                 g[j].released_ns - g[i].released_ns < span_ns;
        if (k > most)
            most = k;
    }
    return most;
}

static void rate_limited_tag_blocks_no_one(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    set_rate(f->c, "slow", 5000, 0); /* 5/s, burst 1 */
    put_n(f->c, "slow", 8);
    put_n(f->c, "fast", 100);
    sl_client *c = consumer(f, 200);
    got g[MAX_GOT];
    unsigned n = take(c, g, 108, 1, 4000);
    unsigned slow = count_tag(g, n, "slow"), fast = count_tag(g, n, "fast");
    uint64_t first = UINT64_MAX, fast_done = 0, slow_last = 0;
    for (unsigned i = 0; i < n; i++) {
        if (g[i].released_ns < first)
            first = g[i].released_ns;
        if (!strcmp(g[i].tag, "fast") && g[i].released_ns > fast_done)
            fast_done = g[i].released_ns;
        if (!strcmp(g[i].tag, "slow") && g[i].released_ns > slow_last)
            slow_last = g[i].released_ns;
    }
    fprintf(stderr, "# fast: %u done in %.1f ms; slow: %u, last at %.1f ms\n", fast,
            (double)(fast_done - first) / 1e6, slow, (double)(slow_last - first) / 1e6);
    assert_int_equal(fast, 100);
    assert_true(slow >= 8 * 1 / 2 && slow <= 8);
    assert_true(fast_done - first < 1000000000ull); /* never waited behind slow's 1.4 s */
    /* the bound: rate x tau + burst in every span */
    assert_true(max_in_span(g, n, "slow", 100000000ull) <= 1 + 1);
    assert_true(max_in_span(g, n, "slow", 1000000000ull) <= 5 + 1);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void each_tag_its_own_bucket(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    set_rate(f->c, "free-*", 2000, 1); /* 2/s, burst 1, for each tag */
    set_rate(f->c, "shared-*", 2000, 0); /* 2/s, burst 1, for them all */
    put_n(f->c, "free-a", 4);
    put_n(f->c, "free-b", 4);
    put_n(f->c, "shared-a", 4);
    put_n(f->c, "shared-b", 4);
    sl_client *c = consumer(f, 40);
    got g[MAX_GOT];
    unsigned n = take(c, g, 16, 1, 1200);
    unsigned fa = count_tag(g, n, "free-a"), fb = count_tag(g, n, "free-b");
    unsigned sh = count_tag(g, n, "shared-a") + count_tag(g, n, "shared-b");
    fprintf(stderr, "# in 1.2 s: free-a %u, free-b %u (each 2/s), shared-* %u (2/s for both)\n", fa, fb, sh);
    assert_true(fa >= 2 && fa <= 4 && fb >= 2 && fb <= 4); /* each its own: 1 + 2/s x 1.2 s */
    assert_true(sh <= 4);                                  /* together: at most 1 + 2/s x (1.2 s + slack) */
    assert_true(fa + fb > sh);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void inflight_cap_blocks_no_one(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    sl_tag_settings s;
    sl_tag_settings_init(&s);
    s.max_inflight = 2;
    assert_int_equal(sl_tag_set(f->c, "capped", &s), SL_OK);
    put_n(f->c, "capped", 6);
    put_n(f->c, "other", 6);
    sl_client *c = consumer(f, 20);
    got g[MAX_GOT];
    sl_delivery *held[16];
    unsigned n = 0, nheld = 0;
    uint64_t end = th_now_ms() + 1000;
    while (th_now_ms() < end && n < 12) { /* hold every delivery: nothing settles */
        sl_delivery *d = NULL;
        if (sl_recv(c, 50, &d) != SL_OK)
            continue;
        snprintf(g[n++].tag, sizeof g[0].tag, "%s", d->tag);
        held[nheld++] = d;
    }
    assert_int_equal(count_tag(g, n, "capped"), 2);
    assert_int_equal(count_tag(g, n, "other"), 6);
    for (unsigned i = 0; i < nheld; i++) { /* settle: the cap lets the rest through, two at a time */
        assert_int_equal(sl_ack(c, held[i]), SL_OK);
        sl_delivery_free(&held[i]);
    }
    n = take(c, g, 4, 1, 5000);
    assert_int_equal(n, 4);
    assert_int_equal(count_tag(g, n, "capped"), 4);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void restart_keeps_settings_and_order(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 1, 1), SL_OK);
    set_weight(f->c, "ab*", 3);
    set_weight(f->c, "a*", 2);
    set_rate(f->c, "z", 7000, 1);
    set_weight(f->c, "ab*", 5); /* set again: keeps its place */
    assert_int_equal(sl_tag_pause(f->c, "q", 1), SL_OK);
    sl_close(&f->c);
    assert_int_equal(th_broker_stop(&f->b), 0);
    assert_int_equal(th_broker_start(&f->b), 0);
    f->c = th_client(&f->b, 5000);
    assert_non_null(f->c);
    sl_tag_info v[SL_MAX_TAG_ROWS];
    unsigned n = 0;
    assert_int_equal(sl_tag_list(f->c, v, &n), SL_OK);
    assert_int_equal(n, 4);
    assert_string_equal(v[0].pattern, "ab*");
    assert_int_equal(v[0].weight, 5);
    assert_string_equal(v[1].pattern, "a*");
    assert_int_equal(v[1].weight, 2);
    assert_string_equal(v[2].pattern, "z");
    assert_int_equal(v[2].rate_milli, 7000);
    assert_true(v[2].each);
    assert_string_equal(v[3].tag, "q");
    assert_true(v[3].paused);
    /* and they act: q held, abc at weight 5 */
    put_n(f->c, "q", 2);
    put_n(f->c, "abc", 2);
    sl_client *c = consumer(f, 10);
    got g[MAX_GOT];
    unsigned k = take(c, g, 4, 1, 1000);
    assert_int_equal(k, 2);
    assert_int_equal(count_tag(g, k, "abc"), 2);
    sl_close(&c);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void bad_input_refused(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_tag_settings s;
    sl_tag_settings_init(&s);
    s.weight = 0;
    assert_int_equal(sl_tag_set(f->c, "w", &s), SL_EINVAL);
    fprintf(stderr, "# weight 0: %s\n", sl_last_error(f->c));
    s.weight = 1001;
    assert_int_equal(sl_tag_set(f->c, "w", &s), SL_EINVAL);
    sl_tag_settings_init(&s);
    s.nwindows = 2; /* a window of 0 beside another */
    s.windows[0] = (sl_window){.count_milli = 0, .period_ms = 1000};
    s.windows[1] = (sl_window){.count_milli = 1000, .period_ms = 60000, .burst = 1};
    assert_int_equal(sl_tag_set(f->c, "w", &s), SL_EINVAL);
    assert_int_equal(sl_tag_set(f->c, "", &s), SL_EINVAL);
    assert_int_equal(sl_tag_pause(f->c, "", 1), SL_EINVAL);
    assert_int_equal(sl_tag_off(f->c, "never-set"), SL_ENOTFOUND);
    /* 1,024 patterns, then one more refused; the broker serves on */
    char p[32];
    uint64_t t0 = th_now_ms();
    for (int i = 0; i < 1024; i++) {
        snprintf(p, sizeof p, "p%04d-*", i);
        set_weight(f->c, p, 2);
    }
    assert_true(sl_tag_set(f->c, "one-too-many", &(sl_tag_settings){.weight = 2, .max_inflight = SL_UNCHANGED,
                                                                   .each = SL_UNCHANGED, .burst = SL_UNCHANGED,
                                                                   .nwindows = -1}) == SL_EINVAL);
    fprintf(stderr, "# 1,024 patterns set in %llu ms; the next: %s\n", (unsigned long long)(th_now_ms() - t0),
            sl_last_error(f->c));
    sl_tag_info v[SL_MAX_TAG_ROWS];
    unsigned n = 0;
    assert_int_equal(sl_tag_list(f->c, v, &n), SL_OK);
    assert_int_equal(n, 16); /* the first 16 patterns are listed */
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* A tag held by its own limit is the level's oldest, and its backlog sets
 * the level's ETA: after 200 untagged messages and four of twenty at 2/s
 * went, stats and level list show the held tag's head's age (not the age
 * of the head whose turn it is, or 0) and an ETA of at least the tag's
 * backlog at its rate (not the pace the level was served at). Then the untagged
 * messages waiting are a row of their own in tag list, (untagged), with
 * their depth, in --json too. */
static void a_held_tag_is_in_the_level_figures(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char out[16384];
    got g[MAX_GOT];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    sl_client *admin = th_client(&f->b, 5000);
    assert_non_null(admin);
    assert_int_equal(sl_level_fair(admin, 1, 1), SL_OK);
    set_rate(admin, "slow", 2 * 1000, 0);
    uint64_t published_ms = th_now_ms();
    put_n(admin, "slow", 20);
    put_n(admin, NULL, 200);
    sl_client *c = consumer(f, 64);
    unsigned n = take(c, g, MAX_GOT, 1, 1500); /* the 200 untagged at once, and the slow ones at 2/s */
    sl_close(&c);
    unsigned slow = count_tag(g, n, "slow");
    assert_int_equal(n - slow, 200);
    assert_true(slow >= 1 && slow <= 6);
    uint64_t waiting = 20 - slow, age_ms = th_now_ms() - published_ms;
    sl_stats st;
    assert_int_equal(sl_stats_get(admin, &st), SL_OK);
    fprintf(stderr, "# %" PRIu64 " of tag slow waiting, published %" PRIu64 " ms ago: level oldest %" PRIu64
            " ms, ETA %" PRIu64 " ms\n", waiting, age_ms, st.level[1].oldest_ms, st.level[1].eta_ms);
    assert_int_equal(st.level[1].depth, waiting);
    assert_true(st.level[1].oldest_ms + 500 >= age_ms && st.level[1].oldest_ms <= age_ms + 1000);
    assert_true(st.level[1].eta_ms >= waiting * 1000 / 2); /* at 2/s */
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned nl = 0;
    assert_int_equal(sl_level_list(admin, lv, &nl), SL_OK);
    assert_true(lv[1].oldest_ms + 500 >= age_ms && lv[1].eta_ms >= waiting * 1000 / 2);
    /* the untagged tenant: a row named (untagged), never a pattern with no name */
    put_n(admin, NULL, 2);
    const char *table[] = {th_bin("sluice"), "-b", f->b.endpoint, "tag", "list", NULL};
    assert_int_equal(th_run(table, NULL, out, sizeof out), 0);
    fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "(untagged)  normal      2"));
    assert_null(strstr(out, "\n1           -"));
    const char *json[] = {th_bin("sluice"), "-b", f->b.endpoint, "tag", "list", "--json", NULL};
    assert_int_equal(th_run(json, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "{\"tag\":\"\",\"untagged\":true,\"level\":\"normal\",\"pattern\":null,\"depth\":2,"));
    sl_close(&admin);
    assert_int_equal(th_fixture_finish(&f), 0);
}

static void cli_as_typed(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    char out[16384];
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    const char *ep = f->b.endpoint;
    const char *fair[] = {th_bin("sluice"), "-b", ep, "level", "set", "normal", "--fair", "tag", NULL};
    assert_int_equal(th_run(fair, NULL, out, sizeof out), 0);
    const char *gold[] = {th_bin("sluice"), "-b", ep, "tag", "set", "gold-*", "--weight", "4", NULL};
    assert_int_equal(th_run(gold, NULL, out, sizeof out), 0);
    assert_string_equal(out, "tag pattern gold-*: weight 4\n");
    const char *free_[] = {th_bin("sluice"), "-b", ep, "tag", "set", "free-*", "--max-rate", "10/s", "--max-rate",
                           "500/min", "--burst", "3", "--inflight", "2", "--each", NULL};
    assert_int_equal(th_run(free_, NULL, out, sizeof out), 0);
    assert_string_equal(out, "tag pattern free-*: max rate 10/s+500/min:500, in-flight cap 2, a bucket per tag\n");
    const char *pause[] = {th_bin("sluice"), "-b", ep, "tag", "pause", "free-9", NULL};
    assert_int_equal(th_run(pause, NULL, out, sizeof out), 0);
    assert_string_equal(out, "tag free-9: paused\n");
    const char *list[] = {th_bin("sluice"), "-b", ep, "tag", "list", "--json", NULL};
    assert_int_equal(th_run(list, NULL, out, sizeof out), 0);
    fprintf(stderr, "# %s", out);
    assert_non_null(strstr(out, "{\"patterns\":[{\"pattern\":\"gold-*\",\"weight\":4,"));
    assert_non_null(strstr(out, "\"pattern\":\"free-*\",\"weight\":1,\"max_inflight\":2,\"rate_milli\":10000,"
                                "\"burst\":3,"));
    assert_non_null(strstr(out, "\"tags\":[{\"tag\":\"free-9\",\"level\":null,\"pattern\":\"free-*\""));
    assert_non_null(strstr(out, "\"paused\":true"));
    const char *table[] = {th_bin("sluice"), "-b", ep, "tag", "list", NULL};
    assert_int_equal(th_run(table, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "PATTERN"));
    assert_non_null(strstr(out, "OLDEST"));
    const char *levels[] = {th_bin("sluice"), "-b", ep, "level", "list", "--json", NULL};
    assert_int_equal(th_run(levels, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"name\":\"normal\""));
    assert_non_null(strstr(out, "\"fair\":true"));
    assert_non_null(strstr(out, "\"fair\":false"));
    const char *off[] = {th_bin("sluice"), "-b", ep, "tag", "set", "gold-*", "--off", NULL};
    assert_int_equal(th_run(off, NULL, out, sizeof out), 0);
    /* a broker's refusal exits 1, a usage error 2 */
    const char *w0[] = {th_bin("sluice"), "-b", ep, "tag", "set", "x", "--weight", "0", NULL};
    assert_int_equal(th_run(w0, NULL, out, sizeof out), 1);
    const char *neg[] = {th_bin("sluice"), "-b", ep, "tag", "set", "x", "--max-rate", "-5", NULL};
    assert_int_equal(th_run(neg, NULL, out, sizeof out), 2);
    const char *empty[] = {th_bin("sluice"), "-b", ep, "tag", "set", "", "--weight", "2", NULL};
    assert_int_equal(th_run(empty, NULL, out, sizeof out), 2);
    const char *nothing[] = {th_bin("sluice"), "-b", ep, "tag", "set", "x", NULL};
    assert_int_equal(th_run(nothing, NULL, out, sizeof out), 2);
    const char *help[] = {th_bin("sluice"), "tag", "set", "--help", NULL};
    assert_int_equal(th_run(help, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "--each"));
    assert_non_null(strstr(out, "Examples:\n"));
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* publish_tagged publishes n messages of tag to level, pipelined, and waits
 * for every confirmation. */
static void publish_tagged(sl_client *c, int level, const char *tag, unsigned n)
{
    sl_put m = {.body = "m", .body_len = 1, .level = level, .tag = tag};
    unsigned sent = 0, confirmed = 0;
    while (confirmed < n) {
        uint64_t ticket;
        while (sent < n && sent - confirmed < 200) {
            assert_int_equal(sl_send_async(c, &m, &ticket), SL_OK);
            sent++;
        }
        sl_confirm k;
        assert_int_equal(sl_send_wait(c, 5000, &k), SL_OK);
        assert_int_equal(k.err, SL_OK);
        confirmed++;
    }
}

/* tag.list counts a tag's waiting messages by their keys: 100,000 of one
 * tag (the most counted), 60,000 and 40,000 of two others, each exact; and
 * with 1,024 patterns, a new tag matched once is cheap (the figures are
 * printed: the time of tag.list, and of a publish of a new tag). */
static void tag_list_counts_many_and_patterns_match_fast(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    assert_int_equal(sl_level_fair(f->c, 2, 1), SL_OK);
    publish_tagged(f->c, 2, "alpha", 100000);
    publish_tagged(f->c, 2, "beta", 60000);
    publish_tagged(f->c, 2, "gamma", 40000);
    sl_tag_info rows[SL_MAX_TAG_ROWS];
    unsigned n = 0;
    uint64_t t0 = th_now_ms();
    assert_int_equal(sl_tag_list(f->c, rows, &n), SL_OK);
    uint64_t took = th_now_ms() - t0;
    print_message("tag.list over 200,000 waiting messages of 3 tags: %llu ms\n", (unsigned long long)took);
    uint64_t seen[3] = {0};
    for (unsigned i = 0; i < n; i++)
        for (unsigned k = 0; k < 3; k++)
            if (strcmp(rows[i].tag, (const char *[]){"alpha", "beta", "gamma"}[k]) == 0)
                seen[k] = rows[i].depth;
    assert_int_equal(seen[0], 100000);
    assert_int_equal(seen[1], 60000);
    assert_int_equal(seen[2], 40000);

    /* 1,024 patterns, then new tags: each matched against them once */
    sl_tag_settings ts;
    for (unsigned i = 0; i < 1024; i++) {
        char pattern[64];
        snprintf(pattern, sizeof pattern, i % 2 ? "tenant-%u-*" : "*-region-%u", i);
        sl_tag_settings_init(&ts);
        ts.weight = 2;
        assert_int_equal(sl_tag_set(f->c, pattern, &ts), SL_OK);
    }
    t0 = th_now_ms();
    for (unsigned i = 0; i < 2000; i++) {
        char tag[64];
        snprintf(tag, sizeof tag, "new-%u", i);
        publish_tagged(f->c, 2, tag, 1);
    }
    took = th_now_ms() - t0;
    print_message("2,000 publishes of new tags among 1,024 patterns: %.1f us each, a round trip and a commit included\n",
                  (double)took * 1000.0 / 2000);
    t0 = th_now_ms();
    assert_int_equal(sl_tag_list(f->c, rows, &n), SL_OK);
    print_message("tag.list over 2,003 tags and 1,024 patterns: %llu ms\n", (unsigned long long)(th_now_ms() - t0));
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tag_list_counts_many_and_patterns_match_fast),
        cmocka_unit_test(weights_share_deliveries),
        cmocka_unit_test(pause_holds_only_that_tag),
        cmocka_unit_test(rate_limited_tag_blocks_no_one),
        cmocka_unit_test(each_tag_its_own_bucket),
        cmocka_unit_test(inflight_cap_blocks_no_one),
        cmocka_unit_test(restart_keeps_settings_and_order),
        cmocka_unit_test(bad_input_refused),
        cmocka_unit_test(a_held_tag_is_in_the_level_figures),
        cmocka_unit_test(cli_as_typed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
