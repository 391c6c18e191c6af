/*
 * bench_client.c - how sluice-bench uses the Sluice client library.
 *
 * These are the steps the rows share; the rows decide how many clients run,
 * on which threads and for how long. They go through sluice.h only.
 *
 * A connection is not trusted until the broker has answered a stats
 * request: ZeroMQ connects lazily, so without that check an unreachable
 * broker would show up as a timeout in the middle of a row. Every call that
 * waits for the broker waits BENCH_CORE_CLIENT_TIMEOUT_MS at most, and every
 * loop here is bounded by BENCH_CORE_MAX_OPS as well.
 *
 * Publishing with a window: publish until window publishes are unconfirmed,
 * then take confirmations until one slot is free, and so on. Once the
 * deadline or the count is reached no more are sent, and the loop waits for
 * every outstanding confirmation, so what it counts has all been stored. A
 * refused publish is an error, not a slow result.
 *
 * Taking a delivery acks it before the next is taken, as an application
 * would; the ack waits for the broker's answer. On a broker the bench did
 * not start only its own messages are taken (bench_guard.h): one without
 * its tag stops the row unacknowledged, and the bench publishes with its
 * tag to its home level, whose counts alone the totals read.
 */
#include "bench_client.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "bench_core.h"
#include "bench_guard.h"

int bench_client_fail(const char *what, const sl_client *c, int rc)
{
    return bench_core_fail("%s: %s (%s)", what, c ? sl_last_error(c) : sl_strerror(rc),
                           sl_errname(rc));
}

/* The CURVE keys every client of the bench uses, when set. */
static char server_key[SL_KEY_BYTES], public_key[SL_KEY_BYTES], secret_key[SL_KEY_BYTES];

void bench_client_keys_set(const char *server, const char *pub, const char *sec)
{
    snprintf(server_key, sizeof server_key, "%s", server ? server : "");
    snprintf(public_key, sizeof public_key, "%s", pub ? pub : "");
    snprintf(secret_key, sizeof secret_key, "%s", sec ? sec : "");
}

int bench_client_open(const char *endpoint, sl_client **out)
{
    sl_options opts = {.timeout_ms = BENCH_CORE_CLIENT_TIMEOUT_MS};
    if (server_key[0])
        opts.server_key = server_key, opts.public_key = public_key, opts.secret_key = secret_key;
    const char *ep = endpoint ? endpoint : SL_DEFAULT_ENDPOINT;
    int rc = sl_connect(ep, &opts, out);
    if (rc != SL_OK)
        return bench_core_fail("cannot connect to %s: %s", ep, sl_strerror(rc));
    sl_stats stats;
    rc = sl_stats_get(*out, &stats);
    if (rc == SL_ETIMEDOUT || rc == SL_ECONNECT)
        rc = bench_core_fail("broker not reachable at %s: no answer within %d ms", ep,
                             BENCH_CORE_CLIENT_TIMEOUT_MS);
    else if (rc != SL_OK)
        rc = bench_client_fail("asking the broker for its stats", *out, rc);
    if (rc != SL_OK)
        sl_close(out);
    return rc;
}

int bench_client_totals_get(const char *endpoint, bench_client_totals *t)
{
    sl_client *c = NULL;
    sl_stats stats;
    if (bench_client_open(endpoint, &c) != 0)
        return -1;
    int rc = sl_stats_get(c, &stats);
    if (rc != SL_OK) {
        bench_client_fail("sl_stats_get", c, rc);
        sl_close(&c);
        return -1;
    }
    *t = (bench_client_totals){0};
    const unsigned *only;
    size_t nonly;
    bench_guard_levels(&only, &nonly); /* beside a broker's own messages: the bench's level alone */
    for (unsigned l = 0; l < stats.nlevels && l < SL_MAX_LEVELS; l++) {
        if (nonly && l != only[0])
            continue;
        t->ready += stats.level[l].depth;
        t->inflight += stats.level[l].inflight;
        t->delayed += stats.level[l].delayed;
    }
    sl_close(&c);
    return 0;
}

int bench_client_confirms(sl_client *c, size_t max_pending, uint64_t *confirmed)
{
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS; i++) {
        size_t pending = sl_send_pending(c);
        if (pending == 0)
            return 0;
        sl_confirm cf;
        bool must_wait = pending > max_pending;
        int rc = sl_send_wait(c, must_wait ? BENCH_CORE_CLIENT_TIMEOUT_MS : 0, &cf);
        if (rc == SL_ETIMEDOUT && !must_wait)
            return 0;
        if (rc != SL_OK)
            return bench_client_fail("waiting for publish confirmations", c, rc);
        if (cf.err != SL_OK)
            return bench_core_fail("publish %" PRIu64 " refused: %s (%s)", cf.ticket,
                                   sl_last_error(c), sl_errname(cf.err));
        ++*confirmed;
    }
    return 0;
}

int bench_client_publish_window(sl_client *c, size_t window, int64_t deadline_ns,
                                uint64_t max_msgs, uint64_t *confirmed, int64_t *last_ns)
{
    return bench_client_publish_window_ex(c, window, deadline_ns, max_msgs, NULL, 0, 0, confirmed, last_ns);
}

/* window_run connects to endpoint, publishes with window outstanding for
 * up to for_ns or max_msgs publishes (headers and body_bytes as for
 * bench_client_publish_window_ex) and stores the confirmed rate. */
static int window_run(const char *endpoint, size_t window, int64_t for_ns, uint64_t max_msgs,
                      const sl_header *headers, size_t nheaders, size_t body_bytes, double *per_s)
{
    sl_client *c = NULL;
    uint64_t confirmed;
    int64_t last_ns;
    if (bench_client_open(endpoint, &c) != 0)
        return -1;
    int64_t start_ns = bench_core_now_ns();
    int rc = bench_client_publish_window_ex(c, window, start_ns + for_ns, max_msgs, headers, nheaders, body_bytes,
                                            &confirmed, &last_ns);
    sl_close(&c);
    *per_s = bench_core_per_s(confirmed, last_ns - start_ns);
    return rc;
}

int bench_client_window_rate(const char *endpoint, int seconds, size_t window, double *per_s)
{
    return window_run(endpoint, window, seconds * BENCH_CORE_NS_PER_S, BENCH_CORE_MAX_OPS, NULL, 0, 0, per_s);
}

int bench_client_window_turn(const char *endpoint, size_t window, uint64_t msgs, const sl_header *headers,
                             size_t nheaders, size_t body_bytes, double *per_s)
{
    return window_run(endpoint, window, 60 * BENCH_CORE_NS_PER_S, msgs, headers, nheaders, body_bytes, per_s);
}

int bench_client_publish_window_ex(sl_client *c, size_t window, int64_t deadline_ns, uint64_t max_msgs,
                                   const sl_header *headers, size_t nheaders, size_t body_bytes,
                                   uint64_t *confirmed, int64_t *last_ns)
{
    unsigned char body[BENCH_CLIENT_BODY_MAX];
    bench_core_body_fill(body); /* the bench's body, then more of the same bytes */
    for (size_t i = BENCH_CORE_BODY_BYTES; i < sizeof body; i++)
        body[i] = body[i % BENCH_CORE_BODY_BYTES];
    if (!body_bytes)
        body_bytes = BENCH_CORE_BODY_BYTES;
    if (body_bytes > sizeof body)
        return bench_core_fail("a body of %zu bytes: the bench's are at most %zu", body_bytes, sizeof body);
    const sl_put put = {.body = body, .body_len = body_bytes, .level = bench_guard_home(),
                        .tag = bench_guard_tag()};
    uint64_t sent = 0;
    *confirmed = 0;
    *last_ns = bench_core_now_ns();
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS; i++) {
        bool open = sent < max_msgs && *last_ns < deadline_ns && !bench_core_stopping();
        for (size_t n = sl_send_pending(c); open && n < window && sent < max_msgs; n++, sent++) {
            int rc = nheaders ? sl_send_async_ex(c, &put, headers, nheaders, NULL) : sl_send_async(c, &put, NULL);
            if (rc != SL_OK)
                return bench_client_fail("sl_send_async", c, rc);
        }
        if (sl_send_pending(c) == 0)
            return 0;
        if (bench_client_confirms(c, open ? window - 1 : 0, confirmed) != 0)
            return -1;
        *last_ns = bench_core_now_ns();
    }
    return 0;
}

int bench_client_take(sl_client *c, bench_client_look *look, void *ctx)
{
    sl_delivery *d = NULL;
    int rc = sl_recv(c, BENCH_CORE_POLL_MS, &d);
    int64_t got_ns = bench_core_now_ns();
    if (rc == SL_ETIMEDOUT)
        return 0;
    if (rc != SL_OK)
        return bench_client_fail("sl_recv", c, rc);
    if (!bench_guard_own(d)) { /* someone else's: never acknowledged; the consumer's leaving returns it */
        rc = bench_core_fail("level %u delivered message %" PRIu64 ", which the bench did not publish (its "
                             "messages are tagged %s): someone publishes to this broker. The bench stops; "
                             "the message returns to its place uncharged as its consumer leaves",
                             d->level, d->id, bench_guard_tag());
        sl_delivery_free(&d);
        return rc;
    }
    if (look)
        look(ctx, d, got_ns);
    rc = sl_ack(c, d);
    sl_delivery_free(&d);
    if (rc != SL_OK)
        return bench_client_fail("sl_ack", c, rc);
    return 1;
}
