/*
 * handle.c - the handler table, derived from PROTO_MSGS.
 *
 * Each handler checks what the message alone cannot tell (level numbers in a
 * HELLO, tokens against the lease table and their holder), calls the module that does the
 * work (admit for PUT, settle for ACK, NACK, THROTTLED, REJECT, TOUCH and
 * BYE, member for pools, admin, stats) and queues the reply. A handler
 * routes; it does no work of its own.
 *
 * When replies leave: PUT_OK and errors to PUT, and ADMIN_OK, after the
 * pass's commit (a publish or a setting is confirmed once durable; a
 * read, or web.login, which writes nothing, at once); the OK to
 * an ACK at once, before its delete is committed, unless ack_flush_ms is 0
 * (then after the commit); everything else at once. An ACK whose delete is
 * lost in a crash only means a redelivery, which at-least-once allows.
 * A connection whose HELLO asked for runs has its PUT_OKs merged into one
 * per run of consecutive publishes (net_queue_confirm), leaving at the
 * same moment the single ones would have.
 *
 * While the writer thread commits, the store cannot be written, so only what
 * writes and reads nothing is handled (handle_now); the rest waits for the commit's
 * end (HANDLE_WAIT; the loop parks it, park.c). An ACK's delete is the one
 * write that may follow later (queue_deferred_apply), so ACKs are taken at
 * once and their credit counts at once; with ack_flush_ms 0 the OK then
 * waits for the commit after the one that is out, which carries the delete
 * (NET_AFTER_NEXT_COMMIT).
 *
 * When auth is on, every message passes auth_check (auth.c) before its
 * handler: a refused one is answered SL_EPERM and never reaches it.
 *
 * A consumer is a connection, not a routing id: member_find (member.c)
 * finds the conn of a message's connection, by routing id, endpoint, key
 * and descriptor, for every message that passes auth_check, so that any
 * word from a connection that took a vanished consumer's routing id ends
 * that consumer; a settlement is taken only from the connection that
 * holds its lease (settle_holder), anything else is SL_ESTALE. A conn made
 * here is narrowed to its principal's levels at once (auth_note_conn),
 * whether a HELLO or a bare CREDIT made it.
 *
 * Bad input is counted and logged at a limited rate (the first ten, then one
 * in a thousand), so a misbehaving client cannot flood the log.
 */
#include "handle.h"

#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "admit.h"
#include "auth.h"
#include "ha_node.h"
#include "log.h"
#include "member.h"
#include "net.h"
#include "settings.h"
#include "settle.h"
#include "stats.h"
#include "store.h"

typedef void (*handler_fn)(bk *b, const net_in *in, const proto_msg *m);

static void log_bad(bk *b, const char *what, const char *why)
{
    b->rx_bad++;
    if (b->rx_bad <= 10 || b->rx_bad % 1000 == 0)
        log_warn("handle", "bad input #%llu: %s: %s", (unsigned long long)b->rx_bad, what,
                 why ? why : "?");
}

/* Replies to PUT, success or not, leave after the commit, so that one
 * producer's replies keep the order of its publishes. ADMIN replies to a
 * command that changes something wait for the commit too: a setting is
 * reported changed once it is stored. Those that only read (the MONITOR
 * role's) promise nothing about the disk and leave at once, so a commit
 * refused for want of space does not fail them; so does a switchover's,
 * which writes nothing: held for a commit, it is never sent if Redis's
 * answer deposes this node while that commit is out, and a client
 * following the group then asks the new primary to switch back. ACK's OK
 * waits for the commit that carries its delete only when ack_flush_ms is
 * 0; everything else leaves at once. */
static net_when when_for(const bk *b, const proto_msg *m)
{
    if (m->type == PROTO_ADMIN) {
        int c = proto_cmd_of(m->cmd.ptr, m->cmd.len);
        proto_role role = c >= 0 ? proto_cmd_role((proto_cmd)c) : PROTO_ROLE_ADMIN;
        if (c == PROTO_CMD_ha_switchover) /* writes nothing, and may depose this node before the next commit ends */
            return NET_NOW;
        return role == PROTO_ROLE_MONITOR || role == PROTO_ROLE_ANY ? NET_NOW : NET_AFTER_COMMIT;
    }
    if (m->type == PROTO_ACK && b->cfg.ack_flush_ms == 0) /* taken while a commit is out: its delete joins the next */
        return store_committing(b->st) ? NET_AFTER_NEXT_COMMIT : NET_AFTER_COMMIT;
    if (m->type == PROTO_PUT)
        return NET_AFTER_COMMIT;
    return NET_NOW;
}

/* reply queues m for the peer that sent in, on its endpoint (a failure is
 * counted and dropped). */
static void reply(bk *b, const net_in *in, const proto_msg *m, net_when when)
{
    if (net_queue_via(b->net, in->sock, in->rid, in->rid_len, m, 0, when) != SL_OK)
        b->tx_failed++;
}

/* reply_error queues ERROR {code, msg, seq (when has_seq)}. */
static void reply_error(bk *b, const net_in *in, int has_seq, uint64_t seq, int code,
                        const char *msg, net_when when)
{
    proto_msg m;
    proto_init(&m, PROTO_ERROR);
    if (has_seq)
        proto_set(&m, seq, seq);
    proto_set(&m, code, (uint64_t)code);
    proto_set_str(&m, PROTO_F_msg, msg, strnlen(msg, PROTO_MAX_STR));
    if (code == SL_ENOSPC)
        proto_set(&m, retry_ms, 1000);
    reply(b, in, &m, when);
}

static void reply_err(bk *b, const net_in *in, const proto_msg *m, int code, const char *msg)
{
    reply_error(b, in, (m->present & PF(seq)) != 0, m->seq, code, msg, when_for(b, m));
}

static void reply_ok(bk *b, const net_in *in, const proto_msg *req, proto_msg *rep)
{
    proto_set(rep, seq, req->seq);
    reply(b, in, rep, when_for(b, req));
}

/* add_credit gives in's connection n more credit, making it a consumer
 * (in the default pool, within its principal's levels) if it was not one;
 * returns its conn, or NULL when out of memory. */
static conn *add_credit(bk *b, const net_in *in, uint64_t n)
{
    int created = 0;
    conn *c = member_require(b, in, &created);
    if (!c)
        return NULL;
    if (created)
        auth_note_conn(b, c, in);
    c->credit = c->credit + n > BK_CREDIT_CAP ? BK_CREDIT_CAP : c->credit + n;
    if (n)
        c->consumer = 1;
    return c;
}

static int join(bk *b, const net_in *in, const proto_msg *m, uint32_t mask);
static void welcome(bk *b, const net_in *in, const proto_msg *m);

static void h_HELLO(bk *b, const net_in *in, const proto_msg *m)
{
    uint32_t mask = b->all_mask;
    char text[160];
    if (m->v != PROTO_VERSION) {
        snprintf(text, sizeof text, "protocol version %llu is not supported; this broker speaks %d",
                 (unsigned long long)m->v, PROTO_VERSION);
        reply_err(b, in, m, SL_EVERSION, text);
        return;
    }
    if (m->present & PF(levels)) {
        mask = 0;
        for (uint32_t i = 0; i < m->levels.n; i++) {
            if (m->levels.v[i] >= b->cfg.levels) {
                snprintf(text, sizeof text, "level %llu does not exist; levels are 0..%u",
                         (unsigned long long)m->levels.v[i], b->cfg.levels - 1);
                reply_err(b, in, m, SL_ENOLEVEL, text);
                return;
            }
            mask |= 1u << m->levels.v[i];
        }
        if (!mask)
            mask = b->all_mask;
    }
    if ((m->present & PF(pool)) && m->pool.len == 0) {
        reply_err(b, in, m, SL_EINVAL, "pool name is empty");
        return;
    }
    if ((m->present & (PF(pool) | PF(levels) | PF(credit))) && join(b, in, m, mask) != SL_OK)
        return;
    if ((m->present & PF(runs)) && m->runs)
        net_runs_ask(b->net, in);
    welcome(b, in, m);
}

/* join makes the peer a member of the pool its HELLO names; on failure it
 * has replied with the error. */
static int join(bk *b, const net_in *in, const proto_msg *m, uint32_t mask)
{
    conn *c = member_conn(b, in, NULL);
    const char *name = (m->present & PF(pool)) ? m->pool.ptr : "default";
    size_t name_len = (m->present & PF(pool)) ? m->pool.len : 7;
    pool *p = pool_find(&b->pools, name, name_len);
    /* "default" serves every level, whichever consumer comes first: each of
     * its members is served the levels it asked for */
    int dflt = !(m->present & PF(pool)) || (name_len == 7 && memcmp(name, "default", 7) == 0);
    if (!p && (p = pool_require(&b->pools, name, name_len, dflt ? b->all_mask : mask)))
        settings_save_pool(b, p);
    if (!c || !p) {
        reply_err(b, in, m, c ? SL_EFULL : SL_ENOMEM,
                  c ? "too many pools (--pool-max); an operator can delete one (sluice pool delete)" : "out of memory");
        return SL_ENOMEM;
    }
    c->levels_mask = mask; /* it is served the levels it asked for that its pool serves */
    auth_note_conn(b, c, in);
    member_join(b, c, p);
    if (m->present & PF(credit))
        add_credit(b, in, m->credit);
    return SL_OK;
}

static void welcome(bk *b, const net_in *in, const proto_msg *m)
{
    proto_msg w;
    proto_init(&w, PROTO_WELCOME);
    proto_set(&w, v, PROTO_VERSION);
    w.present |= PF(names);
    w.names.n = b->cfg.levels;
    for (unsigned l = 0; l < b->cfg.levels; l++)
        w.names.v[l] = (proto_buf){b->cfg.level_names[l], (uint32_t)strlen(b->cfg.level_names[l])};
    proto_set(&w, heartbeat_ms, b->cfg.heartbeat_ms);
    proto_set(&w, lease_ms, b->cfg.lease_ms);
    proto_set(&w, max_body, b->cfg.max_body);
    reply_ok(b, in, m, &w);
}

static void h_PUT(bk *b, const net_in *in, const proto_msg *m)
{
    char text[160];
    uint64_t id = 0;
    int duplicate;
    int rc = admit_put(b, m, &id, &duplicate, text, sizeof text);
    b->puts_unsealed++; /* answered after the next commit either way */
    if (rc != SL_OK) {
        reply_err(b, in, m, rc, text);
        return;
    }
    proto_msg r;
    proto_init(&r, PROTO_PUT_OK);
    proto_set(&r, id, id);
    if (duplicate)
        proto_set(&r, duplicate, 1);
    if (b->ha) { /* who confirms, under which leadership (a group's primary) */
        proto_set(&r, epoch, ha_node_epoch(b));
        proto_set_str(&r, PROTO_F_node, b->cfg.ha_node, strlen(b->cfg.ha_node));
    }
    proto_set(&r, seq, m->seq);
    if (net_queue_confirm(b->net, in, &r, when_for(b, m)) != SL_OK) /* within a run when it asked for runs */
        b->tx_failed++;
}

static void h_CREDIT(bk *b, const net_in *in, const proto_msg *m)
{
    add_credit(b, in, m->n);
}

/* find_lease returns the lease m settles when in's connection holds it,
 * and otherwise answers SL_ESTALE itself (settle_holder counts and logs
 * the refusal). Credit it carries is taken either way. */
static lease *find_lease(bk *b, const net_in *in, const proto_msg *m)
{
    conn *c = (m->present & PF(credit)) ? add_credit(b, in, m->credit) : member_find(b, in);
    lease *l = settle_holder(b, c, m->token, proto_name(m->type));
    if (!l)
        reply_err(b, in, m, SL_ESTALE,
                  "unknown or expired lease token, or a lease this connection does not hold; the message may be "
                  "redelivered");
    return l;
}

static void h_ACK(bk *b, const net_in *in, const proto_msg *m)
{
    lease *l = find_lease(b, in, m);
    if (!l)
        return;
    int rc = settle_ack(b, l);
    if (rc != SL_OK) {
        reply_err(b, in, m, rc, proto_strerror(rc));
        return;
    }
    proto_msg r;
    proto_init(&r, PROTO_OK);
    reply_ok(b, in, m, &r);
}

static void h_NACK(bk *b, const net_in *in, const proto_msg *m)
{
    if ((m->present & PF(delay_ms)) && m->delay_ms > PROTO_MAX_TIME_MS) {
        reply_err(b, in, m, SL_EINVAL, "delay_ms must be at most 315360000000 (ten years)");
        return;
    }
    lease *l = find_lease(b, in, m);
    if (!l)
        return;
    settle_nack(b, l, (m->present & PF(delay_ms)) ? m->delay_ms : 0); /* cut at --max-nack-delay */
    proto_msg r;
    proto_init(&r, PROTO_OK);
    reply_ok(b, in, m, &r);
}

/* THROTTLED: the sink refused the delivery; the message goes back uncharged
 * and the sink is given a rest, or, with scope "tag", only the message's
 * tag (the service limits that tenant). An unknown scope or an absurd
 * retry-after changes nothing. */
static void h_THROTTLED(bk *b, const net_in *in, const proto_msg *m)
{
    int tag_scope = 0;
    if (m->present & PF(scope)) {
        tag_scope = m->scope.len == 3 && memcmp(m->scope.ptr, "tag", 3) == 0;
        if (!tag_scope && !(m->scope.len == 4 && memcmp(m->scope.ptr, "sink", 4) == 0)) {
            log_bad(b, "THROTTLED", "scope is neither \"sink\" nor \"tag\"");
            reply_err(b, in, m, SL_EINVAL, "THROTTLED's scope must be \"sink\" or \"tag\"");
            return;
        }
    }
    if ((m->present & PF(retry_ms)) && m->retry_ms > PROTO_MAX_TIME_MS) {
        log_bad(b, "THROTTLED", "retry_after_ms over ten years");
        reply_err(b, in, m, SL_EINVAL, "retry_after_ms must be at most 315360000000 (ten years)");
        return;
    }
    lease *l = find_lease(b, in, m);
    if (!l)
        return;
    settle_throttled(b, l, (m->present & PF(retry_ms)) ? m->retry_ms : 0, tag_scope);
    proto_msg r;
    proto_init(&r, PROTO_OK);
    reply_ok(b, in, m, &r);
}

/* REJECT: the consumer says the message can never succeed (an HTTP 4xx, a
 * malformed payload): a dead letter now, with its reason. */
static void h_REJECT(bk *b, const net_in *in, const proto_msg *m)
{
    lease *l = find_lease(b, in, m);
    if (!l)
        return;
    settle_reject(b, l, m->msg.ptr, m->msg.len);
    proto_msg r;
    proto_init(&r, PROTO_OK);
    reply_ok(b, in, m, &r);
}

static void h_TOUCH(bk *b, const net_in *in, const proto_msg *m)
{
    lease *l = find_lease(b, in, m);
    if (!l)
        return;
    uint64_t ms = settle_touch(b, l, (m->present & PF(lease_ms)) ? m->lease_ms : 0);
    proto_msg r;
    proto_init(&r, PROTO_OK);
    proto_set(&r, lease_ms, ms);
    reply_ok(b, in, m, &r);
}

static void h_STATS(bk *b, const net_in *in, const proto_msg *m)
{
    proto_msg r;
    proto_init(&r, PROTO_STATS_OK);
    stats_fill(b, &r);
    reply_ok(b, in, m, &r);
}

/* BYE: the consumer leaves. What it held goes back uncharged: it was never
 * processed, or the consumer would have settled it. */
static void h_BYE(bk *b, const net_in *in, const proto_msg *m)
{
    conn *c = member_find(b, in);
    if (c)
        settle_drop_conn(b, c, SETTLE_END_LEFT);
    if (m->present & PF(seq)) {
        proto_msg r;
        proto_init(&r, PROTO_OK);
        reply_ok(b, in, m, &r);
    }
}

static void h_ADMIN(bk *b, const net_in *in, const proto_msg *m)
{
    proto_msg r;
    char text[PROTO_MAX_STR];
    /* who sent it: auth_check found its principal (without auth, anyone is the admin) */
    const auth_principal *p = b->auth && in->user_id ? auth_find(b->auth, in->user_id, in->user_id_len) : NULL;
    admin_caller who = {p ? p->name : "anonymous", p ? p->key : "", p ? p->role : PROTO_ROLE_ADMIN, (int)in->sock};
    proto_init(&r, PROTO_ADMIN_OK);
    int rc = admin_run(b, m, &who, &r, text, sizeof text);
    if (rc != SL_OK) {
        reply_err(b, in, m, rc, text);
        return;
    }
    reply_ok(b, in, m, &r);
}

static void h_PING(bk *b, const net_in *in, const proto_msg *m)
{
    proto_msg r;
    proto_init(&r, PROTO_PONG);
    if (m->present & PF(seq))
        proto_set(&r, seq, m->seq);
    reply(b, in, &r, NET_NOW);
}

static void h_PONG(bk *b, const net_in *in, const proto_msg *m)
{
    (void)b, (void)in, (void)m; /* liveness is the transport's business; that it
                                 * came at all is noted in handle_message */
}

static void h_unexpected(bk *b, const net_in *in, const proto_msg *m)
{
    char text[96];
    snprintf(text, sizeof text, "%s is sent by the broker, not to it", proto_name(m->type));
    log_bad(b, "unexpected message", text);
    reply_err(b, in, m, SL_EPROTO, text);
}

#define HANDLER_C2B(ID) h_##ID
#define HANDLER_ANY(ID) h_##ID
#define HANDLER_B2C(ID) h_unexpected
static const handler_fn handlers[PROTO_TYPE_COUNT_] = {
#define HANDLER_(ID, name, dir, req, opt) [PROTO_##ID] = HANDLER_##dir(ID),
    PROTO_MSGS(HANDLER_)
#undef HANDLER_
};

/* handle_now tells whether m may be handled while a commit is out: it
 * writes nothing to the store (or only an ACK's delete, which may wait),
 * reads nothing from it, and its reply promises nothing about a write of
 * its own. A THROTTLED for a tag reads its delivery's tag from the store,
 * which a commit out does not show whole (a message delivered from the log
 * before its checkpoint was read back as not found, and the sink paused
 * instead of the tag): it waits for the commit's end. */
static int handle_now(bk *b, const net_in *in, const proto_msg *m)
{
    switch (m->type) {
    case PROTO_PING:
    case PROTO_PONG:
    case PROTO_TOUCH:
        return 1;
    case PROTO_THROTTLED:
        return !(m->present & PF(scope)) || m->scope.len != 3 || memcmp(m->scope.ptr, "tag", 3) != 0;
    case PROTO_CREDIT: { /* credit from a peer not yet known would make a member, which may write */
        const conn *c = conn_find(&b->conns, in->sock, in->rid, in->rid_len);
        return c && member_same(c, in);
    }
    case PROTO_ACK: /* its delete waits for the commit's end, its OK (ack_flush_ms 0) for the next one's */
        return 1;
    default: /* PUT, NACK, REJECT, HELLO, BYE and admin commands write, or may; STATS and the read-only
              * admin commands would read the snapshot, which lags what the loop has done (a sweep's
              * deletes, an ACK's): they wait, so that what they show includes every earlier request */
        return 0;
    }
}

int handle_message(bk *b, const net_in *in)
{
    proto_msg m;
    const char *why = NULL;
    if (in->frames != 1) {
        log_bad(b, "framing", "expected exactly one frame after the routing id");
        reply_error(b, in, 0, 0, SL_EPROTO,
                       "expected exactly one frame (a msgpack map) per message", NET_NOW);
        return HANDLE_DONE;
    }
    int rc = proto_decode(in->body, in->body_len, &m, &why);
    if (rc != SL_OK) {
        log_bad(b, "decode", why);
        reply_err(b, in, &m, rc, why ? why : proto_strerror(rc));
        return HANDLE_DONE;
    }
    if (store_committing(b->st) && !handle_now(b, in, &m))
        return HANDLE_WAIT; /* nothing done yet: it is handed in again after the commit */
    char text[PROTO_MAX_STR];
    if (auth_check(b, in, &m, text, sizeof text) != SL_OK) {
        reply_err(b, in, &m, SL_EPERM, text);
        return HANDLE_DONE;
    }
    b->rx[m.type]++;
    (void)member_find(b, in); /* a routing id another connection held: that consumer is gone (member.c) */
    handlers[m.type](b, in, &m);
    conn *c = conn_find(&b->conns, in->sock, in->rid, in->rid_len);
    if (c && member_same(c, in)) /* it is reading: see settle_expire_leases */
        c->last_rx_ns = b->mono_ns;
    return HANDLE_DONE;
}

void handle_refuse(bk *b, const net_in *in)
{
    proto_msg m;
    if (in->frames == 1 && proto_decode(in->body, in->body_len, &m, NULL) == SL_OK &&
        (m.present & PF(seq)) && m.type != PROTO_PONG && m.type != PROTO_PING)
        reply_err(b, in, &m, SL_ESHUTDOWN, "broker is shutting down; retry against its successor");
}
