/*
 * sluice.c - the Sluice client library: one broker connection per sl_client.
 *
 * This file implements sluice.h but for the administration calls (admin.c).
 * It checks arguments, builds requests, interprets replies, and keeps what
 * the application sees: the level cache and the subscription with its
 * credit. client.c keeps the error record and the credit rule; wire.c moves
 * the frames: it sends, runs the pump that routes everything received, and
 * renews the subscription after a reconnection (client.h shows which fields
 * each file owns).
 *
 * Publishing. sl_send is one request. sl_send_async numbers its publishes
 * with tickets, a counter of their own so that they increase by one per call,
 * and wire.c queues each answer as a confirmation. A publish's cost goes on
 * the wire only when it is not 1, the broker's default. sl_send_pending
 * counts publishes whose confirmation sl_send_wait has not yet returned,
 * whether or not the broker has answered, so "while pending, wait" drains
 * everything. When sl_send_wait returns a failed confirmation, sl_last_error
 * gives the broker's text for it.
 *
 * Credit. A subscription asks for a window of deliveries. Each ACK, NACK or
 * THROTTLED gives one credit back and grants what client_credit_due says is
 * then due: one, normally; none while a shrunk window is still too full or
 * once the limit of sl_set_limit is reached. sl_set_window grants the
 * difference at once when the window grows. The POOL messages the pump
 * records tell the consumer its share of its pool (sl_share), which it may
 * follow by resizing its window. A THROTTLED delivery goes back to the
 * broker like a NACK, but the broker charges no attempt and slows the sink;
 * the credit it returns is granted again at once, since the broker, not the
 * window, holds the sink back. sl_throttled_scope(SL_SCOPE_TAG) says the
 * service limited the delivery's tag alone: the wire's THROTTLED then
 * carries scope "tag" (SL_SCOPE_SINK sends none, as sl_throttled does).
 *
 * Statistics are in stats.c.
 *
 * Levels. Every WELCOME carries the broker's level names and body limit;
 * the latest is cached. Calls that need the levels before any WELCOME came
 * ask for one with a producer's HELLO.
 *
 * Errors. Broker ERROR replies carry a wire code that is returned as is, and
 * a text kept for sl_last_error; local failures keep the generic message
 * (client.c). Each fallible call clears the record first.
 *
 * Time. Synchronous calls wait up to the client's timeout, the others up to
 * the timeout they are given; wire.c keeps the deadlines.
 */
#include "sluice.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto.h"

_Static_assert(SL_WIRE_VERSION == PROTO_VERSION, "sluice.h states the wire version the library speaks");
#include "wire.h"

#define DEFAULT_TIMEOUT_MS   5000
#define DEFAULT_HEARTBEAT_MS 1000
#define MAX_CREDIT           100000   /* the broker's cap per connection */

/* ---- errors ---- */

const char *sl_strerror(int err)
{
    return proto_strerror(err);
}

const char *sl_errname(int err)
{
    return proto_errname(err);
}

const char *sl_last_error(const sl_client *c)
{
    if (!c)
        return sl_strerror(SL_EINVAL);
    return c->last_msg[0] ? c->last_msg : sl_strerror(c->last_code);
}

/* ---- connection ---- */

int sl_connect(const char *endpoint, const sl_options *opts, sl_client **out)
{
    if (!out)
        return SL_EINVAL;
    *out = NULL;
    int timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    int heartbeat_ms = opts && opts->heartbeat_ms ? opts->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
    if (timeout_ms < 0 || heartbeat_ms < 0)
        return SL_EINVAL;

    sl_client *c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    int rc = wire_open(c, endpoint ? endpoint : SL_DEFAULT_ENDPOINT, timeout_ms, heartbeat_ms, opts);
    if (rc) {
        sl_close(&c);
        return rc;
    }
    *out = c;
    return SL_OK;
}

void sl_close(sl_client **cp)
{
    if (!cp || !*cp)
        return;
    wire_close(*cp);
    free(*cp);
    *cp = NULL;
}

/* ---- levels ---- */

/* welcome_take caches what c->reply, a WELCOME, tells. */
static int welcome_take(sl_client *c)
{
    const proto_msg *w = &c->reply;
    if (w->v != PROTO_VERSION)
        return client_fail(c, SL_EVERSION);
    if (w->names.n == 0 || w->names.n > SL_MAX_LEVELS)
        return client_fail(c, SL_EPROTO);
    c->nlevels = w->names.n;
    for (unsigned i = 0; i < c->nlevels; i++) {
        client_str_copy(c->level_names[i], sizeof c->level_names[i], w->names.v[i]);
        c->level_ptrs[i] = c->level_names[i];
    }
    c->max_body_bytes = w->max_body < PROTO_MAX_BODY ? w->max_body : PROTO_MAX_BODY;
    c->have_levels = true;
    return SL_OK;
}

/* levels_load asks the broker for its levels once: a HELLO with no pool,
 * levels or credit, which the broker treats as a producer's. */
static int levels_load(sl_client *c)
{
    if (c->have_levels)
        return SL_OK;
    proto_msg m;
    proto_init(&m, PROTO_HELLO);
    proto_set(&m, v, PROTO_VERSION);
    int rc = client_request(c, &m, PROTO_WELCOME);
    return rc ? rc : welcome_take(c);
}

int sl_levels(sl_client *c, unsigned *count, const char *const **names)
{
    if (!client_begin(c))
        return SL_EINVAL;
    int rc = levels_load(c);
    if (rc)
        return rc;
    if (count)
        *count = c->nlevels;
    if (names)
        *names = c->level_ptrs;
    return SL_OK;
}

/* number_parse reads a short run of decimal digits and nothing else. */
static bool number_parse(const char *text, unsigned *out)
{
    unsigned v = 0;
    size_t n = 0;
    for (; text[n] >= '0' && text[n] <= '9'; n++) {
        if (n == 9)
            return false;
        v = v * 10 + (unsigned)(text[n] - '0');
    }
    *out = v;
    return n > 0 && text[n] == '\0';
}

int sl_level_parse(sl_client *c, const char *text, unsigned *level)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!text || !level)
        return client_fail(c, SL_EINVAL);
    int rc = levels_load(c);
    if (rc)
        return rc;
    unsigned n;
    if (number_parse(text, &n) && n < c->nlevels) {
        *level = n;
        return SL_OK;
    }
    for (unsigned i = 0; i < c->nlevels; i++) {
        if (strcmp(text, c->level_names[i]) == 0) {
            *level = i;
            return SL_OK;
        }
    }
    return client_fail(c, SL_ENOLEVEL);
}

/* ---- publishing ---- */

/* put_build checks p and fills m with its PUT, all but the seq that wire.c
 * sets. m borrows p's body and tag, and headers[0..nh). A header that
 * breaks a rule is recorded on c with its sentence. */
static int put_build(sl_client *c, const sl_put *p, const sl_header *headers, size_t nh, proto_msg *m)
{
    static const char empty[1];
    if (!p || (!p->body && p->body_len))
        return SL_EINVAL;
    uint64_t max_body_bytes = c->max_body_bytes ? c->max_body_bytes : PROTO_MAX_BODY;
    if (p->body_len > max_body_bytes)
        return SL_ETOOBIG;
    size_t tag_len = p->tag ? strnlen(p->tag, PROTO_MAX_TAG + 1) : 0;
    size_t key_len = p->key ? strnlen(p->key, PROTO_MAX_TAG + 1) : 0;
    if (tag_len > PROTO_MAX_TAG || key_len > PROTO_MAX_TAG)
        return SL_ETOOBIG;
    if (p->key && key_len == 0)
        return SL_EINVAL;
    if (p->level != SL_LEVEL_DEFAULT &&
        (p->level < 0 || p->level >= SL_MAX_LEVELS ||
         (c->have_levels && (unsigned)p->level >= c->nlevels)))
        return SL_ENOLEVEL;
    proto_init(m, PROTO_PUT);
    proto_set_str(m, PROTO_F_body, p->body ? p->body : empty, p->body_len);
    if (p->level != SL_LEVEL_DEFAULT)
        proto_set(m, level, (uint64_t)p->level);
    if (tag_len)
        proto_set_str(m, PROTO_F_tag, p->tag, tag_len);
    if (p->cost > 1) /* 0 and 1 both mean 1, the wire's default */
        proto_set(m, cost, p->cost);
    if (key_len)
        proto_set_str(m, PROTO_F_key, p->key, key_len);
    if (p->delay_ms)
        proto_set(m, delay_ms, p->delay_ms);
    if (p->ttl_ms)
        proto_set(m, ttl_ms, p->ttl_ms);
    if (nh) {
        int rc = client_hdrs_build(c, headers, nh, &m->headers);
        if (rc)
            return rc;
        m->present |= PF(headers);
    }
    return SL_OK;
}

int sl_send(sl_client *c, const sl_put *p, uint64_t *id)
{
    return sl_send_ex(c, p, NULL, 0, id);
}

int sl_send_ex(sl_client *c, const sl_put *p, const sl_header *headers, size_t nheaders, uint64_t *id)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    int rc = put_build(c, p, headers, nheaders, &m);
    if (rc)
        return client_fail(c, rc);
    rc = client_request(c, &m, PROTO_PUT_OK);
    if ((rc == SL_EINVAL || rc == SL_ETOOBIG) && nheaders) /* the encoder refused: which header rule? */
        rc = client_hdrs_why(c, &m.headers, rc);
    if (rc == SL_OK && id)
        *id = c->reply.id;
    return rc;
}

int sl_send_async(sl_client *c, const sl_put *p, uint64_t *ticket)
{
    return sl_send_async_ex(c, p, NULL, 0, ticket);
}

int sl_send_async_ex(sl_client *c, const sl_put *p, const sl_header *headers, size_t nheaders, uint64_t *ticket)
{
    if (!client_begin(c))
        return SL_EINVAL;
    proto_msg m;
    int rc = put_build(c, p, headers, nheaders, &m);
    if (rc)
        return client_fail(c, rc);
    uint64_t next_ticket = c->last_ticket + 1;
    rc = wire_publish(c, &m, next_ticket);
    if (rc && (rc == SL_EINVAL || rc == SL_ETOOBIG) && nheaders) /* the encoder refused: which header rule? */
        return client_hdrs_why(c, &m.headers, client_fail(c, rc));
    if (rc)
        return client_fail(c, rc);
    c->last_ticket = next_ticket;
    if (ticket)
        *ticket = next_ticket;
    return SL_OK;
}

int sl_send_wait(sl_client *c, int timeout_ms, sl_confirm *out)
{
    return sl_send_wait_origin(c, timeout_ms, out, NULL);
}

int sl_send_wait_origin(sl_client *c, int timeout_ms, sl_confirm *out, sl_origin *origin)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    if (c->confirms.count == 0) {
        if (c->puts.count == 0)
            return client_fail(c, SL_ESTATE);
        int rc = wire_wait_confirm(c, timeout_ms);
        if (rc)
            return client_fail(c, rc);
    }
    client_confirm q;
    fifo_remove(&c->confirms, 0, &q);
    *out = q.confirm;
    if (origin)
        *origin = q.origin;
    if (q.msg)
        client_fail_text(c, q.confirm.err, q.msg, strlen(q.msg));
    free(q.msg);
    return SL_OK;
}

size_t sl_send_pending(const sl_client *c)
{
    return c ? c->puts.count + c->confirms.count : 0;
}

/* ---- consuming ---- */

int sl_subscribe(sl_client *c, const char *pool, const unsigned *levels, size_t nlevels,
                 unsigned credit)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (c->subscribed)
        return client_fail(c, SL_ESTATE);
    if (!levels)
        nlevels = 0;
    size_t pool_len = pool ? strnlen(pool, PROTO_MAX_NAME + 1) : 0;
    if (nlevels > SL_MAX_LEVELS || (pool && (pool_len == 0 || pool_len > PROTO_MAX_NAME)))
        return client_fail(c, SL_EINVAL);
    if (nlevels) {
        int rc = levels_load(c);
        if (rc)
            return rc;
        for (size_t i = 0; i < nlevels; i++)
            if (levels[i] >= c->nlevels)
                return client_fail(c, SL_ENOLEVEL);
    }

    c->has_pool = pool != NULL;
    if (pool)
        memcpy(c->pool, pool, pool_len + 1);
    c->levels.n = (uint32_t)nlevels;
    for (size_t i = 0; i < nlevels; i++)
        c->levels.v[i] = levels[i];
    c->window = credit == 0 ? 1 : credit > MAX_CREDIT ? MAX_CREDIT : credit;
    c->unsettled = 0;
    c->granted = c->outstanding = 0; /* so the whole window is due */
    uint64_t due = client_credit_due(c);
    c->granted = c->outstanding = due;

    proto_msg m;
    wire_hello_init(c, &m, due);
    int rc = client_request(c, &m, PROTO_WELCOME);
    if (rc == SL_OK)
        rc = welcome_take(c);
    if (rc == SL_OK)
        c->subscribed = true;
    return rc;
}

int sl_recv(sl_client *c, int timeout_ms, sl_delivery **out)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!out)
        return client_fail(c, SL_EINVAL);
    *out = NULL;
    if (!c->subscribed)
        return client_fail(c, SL_ESTATE);
    if (c->deliveries.count == 0) {
        int rc = wire_wait_delivery(c, timeout_ms);
        if (rc)
            return client_fail(c, rc);
    }
    fifo_remove(&c->deliveries, 0, out);
    c->unsettled++;
    c->received++;
    return SL_OK;
}

int sl_set_limit(sl_client *c, uint64_t max_deliveries)
{
    if (!client_begin(c))
        return SL_EINVAL;
    c->limit = max_deliveries;
    return SL_OK;
}

int sl_set_window(sl_client *c, unsigned window)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (window == 0 || window > MAX_CREDIT)
        return client_fail(c, SL_EINVAL);
    if (!c->subscribed)
        return client_fail(c, SL_ESTATE);
    c->window = window;
    uint64_t due = client_credit_due(c);
    if (due == 0)
        return SL_OK; /* shrinking: settlements will hold credit back */
    proto_msg m;
    proto_init(&m, PROTO_CREDIT);
    proto_set(&m, n, due);
    int rc = wire_post(c, &m);
    if (rc)
        return client_fail(c, rc);
    c->granted += due;
    c->outstanding += due;
    return SL_OK;
}

int sl_connected(const sl_client *c)
{
    return c && c->connected;
}

unsigned sl_share(const sl_client *c)
{
    return c ? c->share : 0;
}

void sl_delivery_free(sl_delivery **d)
{
    if (!d)
        return;
    free(*d);
    *d = NULL;
}

/* refusal_take returns the first refused settlement not yet reported, as
 * c's error, or SL_OK. */
static int refusal_take(sl_client *c)
{
    if (!c->refused_unreported)
        return SL_OK;
    c->refused_unreported = false;
    return client_fail_text(c, c->refused_code, c->refused_msg, strlen(c->refused_msg));
}

/* SETTLES_MAX_PENDING bounds the settlements sent and not yet answered: past
 * it, a settling call first waits for the answers (a consumer that never
 * reads its socket would otherwise keep them all). */
#define SETTLES_MAX_PENDING 4096

/* settle sends ACK, NACK (ms = delay), THROTTLED (ms = retry after; scope
 * "tag" when not NULL) or TOUCH (ms = lease) for d without waiting for the
 * answer (see sluice.h); ms 0 is left out, so the broker applies its
 * default. All but TOUCH end the delivery, so they give back one
 * credit and carry what is then due, but only for a subscribed client:
 * credit would make a producer's connection a consumer. */
static int settle_why(sl_client *c, const sl_delivery *d, proto_type type, uint32_t ms, const char *why,
                      const char *scope)
{
    if (!client_begin(c))
        return SL_EINVAL;
    if (!d)
        return client_fail(c, SL_EINVAL);
    proto_msg m;
    proto_init(&m, type);
    proto_set(&m, token, d->token);
    if (type != PROTO_TOUCH && c->subscribed) {
        if (c->unsettled)
            c->unsettled--;
        if (c->outstanding)
            c->outstanding--;
        uint64_t due = client_credit_due(c);
        if (due) {
            proto_set(&m, credit, due);
            c->granted += due;
            c->outstanding += due;
        }
    }
    if (ms && type == PROTO_NACK)
        proto_set(&m, delay_ms, ms);
    if (ms && type == PROTO_TOUCH)
        proto_set(&m, lease_ms, ms);
    if (ms && type == PROTO_THROTTLED)
        proto_set(&m, retry_ms, ms);
    if (why)
        proto_set_str(&m, PROTO_F_msg, why, strnlen(why, PROTO_MAX_STR));
    if (scope)
        proto_set_str(&m, PROTO_F_scope, scope, strlen(scope));
    if (c->settles.count) /* take the answers already there, without waiting */
        (void)wire_wait_settled(c, 0);
    int rc = c->settles.count >= SETTLES_MAX_PENDING ? wire_wait_settled(c, c->timeout_ms) : SL_OK;
    if (rc == SL_OK)
        rc = wire_settle(c, &m);
    if (rc != SL_OK)
        return client_fail(c, rc);
    return refusal_take(c);
}

int sl_flush(sl_client *c, int timeout_ms)
{
    if (!client_begin(c))
        return SL_EINVAL;
    int rc = wire_wait_settled(c, timeout_ms);
    int refused = refusal_take(c);
    if (refused != SL_OK)
        return refused;
    return rc == SL_OK ? SL_OK : client_fail(c, rc);
}

uint64_t sl_refused(const sl_client *c)
{
    return c ? c->refused : 0;
}

static int settle(sl_client *c, const sl_delivery *d, proto_type type, uint32_t ms)
{
    return settle_why(c, d, type, ms, NULL, NULL);
}

int sl_reject(sl_client *c, const sl_delivery *d, const char *reason)
{
    return settle_why(c, d, PROTO_REJECT, 0, reason ? reason : "", NULL);
}

int sl_ack(sl_client *c, const sl_delivery *d)
{
    return settle(c, d, PROTO_ACK, 0);
}

int sl_nack(sl_client *c, const sl_delivery *d, uint32_t delay_ms)
{
    return settle(c, d, PROTO_NACK, delay_ms);
}

int sl_touch(sl_client *c, const sl_delivery *d, uint32_t lease_ms)
{
    return settle(c, d, PROTO_TOUCH, lease_ms);
}

int sl_throttled(sl_client *c, const sl_delivery *d, uint32_t retry_after_ms)
{
    return settle(c, d, PROTO_THROTTLED, retry_after_ms);
}

int sl_throttled_scope(sl_client *c, const sl_delivery *d, uint32_t retry_after_ms, sl_scope scope)
{
    if (scope == SL_SCOPE_SINK) /* as sl_throttled: no scope on the wire, which any broker reads so */
        return settle(c, d, PROTO_THROTTLED, retry_after_ms);
    if (scope != SL_SCOPE_TAG) {
        if (!c)
            return SL_EINVAL;
        client_err_clear(c);
        return client_fail(c, SL_EINVAL); /* nothing sent */
    }
    return settle_why(c, d, PROTO_THROTTLED, retry_after_ms, NULL, "tag");
}
