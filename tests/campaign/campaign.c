/*
 * campaign.c - the publisher, drain and process checks the reliability
 * campaigns share (see campaign.h).
 *
 * The publisher keeps its own table of outstanding publishes (ticket,
 * message number, when sent), because it must decide when one will never be
 * answered: the client library does not resend a request that was in flight
 * when its connection dropped, and keeps waiting for it. A publish whose
 * connection survived is answered in order, so the oldest entry is the one to
 * watch; when it has waited put_timeout_ms, every entry is abandoned (each
 * stays "attempted, unconfirmed" in the history) and the client replaced.
 * The table holds at most CAMPAIGN_WINDOW_MAX entries; a lookup by ticket is
 * a scan, O(window), and almost always ends at the first entry.
 *
 * Answers: PUT_OK records a confirmation with its id (and, from a
 * high-availability group's primary, the node and epoch that confirmed it);
 * an ERROR from the broker is a definite refusal (the message was not
 * stored) and is recorded as one. A keyed publisher (keyed) gives each
 * message its own idempotency key, so that a client following a group's
 * primary ("a|b"), which sends again what was not confirmed, stores it once.
 *
 * The drain is one consumer: it takes deliveries, records each, acknowledges
 * it, records the accepted ack, and after each quiet interval asks the
 * broker's statistics whether anything is left (ready, leased or delayed).
 * Every loop is bounded by a deadline.
 */
#include "campaign.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

#define CLIENT_HEARTBEAT_MS 500
#define DRAIN_QUIET_MS      100

int campaign_client(const char *endpoint, int timeout_ms, sl_client **out)
{
    sl_options o = {.timeout_ms = timeout_ms, .heartbeat_ms = CLIENT_HEARTBEAT_MS};
    return sl_connect(endpoint, &o, out);
}

void campaign_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int campaign_exited(pid_t pid, int *status)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (pid <= 0)
        return -1;
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return -1;
    if (si.si_pid != pid)
        return 0;
    if (status)
        *status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
    return 1;
}

/* ---- the publisher ---- */

int campaign_pub_open(campaign_pub *p, const char *endpoint, history *h, unsigned window,
                      int put_timeout_ms, unsigned seed)
{
    memset(p, 0, sizeof *p);
    if (window == 0 || window > CAMPAIGN_WINDOW_MAX)
        return -1;
    p->endpoint = endpoint;
    p->h = h;
    p->window = window;
    p->put_timeout_ms = put_timeout_ms;
    p->seed = seed;
    p->buf_bytes = history_max_body(h);
    p->buf = malloc(p->buf_bytes);
    if (!p->buf || campaign_client(endpoint, 1000, &p->c) != SL_OK) {
        free(p->buf);
        p->buf = NULL;
        return -1;
    }
    return 0;
}

unsigned campaign_pub_fill(campaign_pub *p, uint64_t now_ms)
{
    unsigned sent = 0;
    if (!p->c && campaign_client(p->endpoint, 1000, &p->c) != SL_OK) {
        p->c = NULL; /* try again on the next call */
        return 0;
    }
    while (p->npend < p->window) {
        uint64_t msg, ticket;
        size_t len;
        if (history_attempt(p->h, &msg, p->buf, p->buf_bytes, &len) != 0) {
            p->full = 1;
            break;
        }
        char tag[16];
        sl_put m = {.body = p->buf, .body_len = len,
                    .level = (int)((unsigned)rand_r(&p->seed) % CAMPAIGN_LEVELS)};
        if (p->tags) {
            snprintf(tag, sizeof tag, "t%u", (unsigned)rand_r(&p->seed) % p->tags);
            m.tag = tag;
        }
        char key[32];
        if (p->keyed) {
            snprintf(key, sizeof key, "k%llu", (unsigned long long)msg);
            m.key = key;
        }
        int rc = sl_send_async(p->c, &m, &ticket);
        if (rc != SL_OK) {
            /* it may or may not have left: attempted, fate unknown */
            p->send_errors++;
            break;
        }
        p->pend[p->npend++] = (campaign_pending){ticket, msg, now_ms};
        p->sent++;
        sent++;
    }
    return sent;
}

/* answer takes one confirmation off the client's queue and records it,
 * with the group's epoch and node that gave it. */
static int answer(campaign_pub *p, const sl_confirm *cf, const sl_origin *by)
{
    for (unsigned i = 0; i < p->npend; i++) {
        if (p->pend[i].ticket != cf->ticket)
            continue;
        uint64_t msg = p->pend[i].msg;
        memmove(&p->pend[i], &p->pend[i + 1], (p->npend - i - 1) * sizeof p->pend[0]);
        p->npend--;
        if (cf->err == SL_OK) {
            history_confirm_by(p->h, msg, cf->id, by->epoch, by->node);
            p->confirmed++;
            return 1;
        }
        /* a lost connection, a timeout or a failed commit leave the outcome
         * unknown: the message stays "attempted", neither kept nor refused */
        if (cf->err == SL_ECONNECT || cf->err == SL_ETIMEDOUT || cf->err == SL_EIO)
            return 0;
        history_reject(p->h, msg, cf->err);
        p->rejected++;
        return 0;
    }
    return 0; /* abandoned before its answer came */
}

unsigned campaign_pub_collect(campaign_pub *p, int wait_ms)
{
    unsigned confirmed = 0;
    sl_confirm cf;
    sl_origin by;
    if (!p->c || !p->npend)
        return 0;
    int wait = wait_ms;
    for (unsigned i = 0; i < CAMPAIGN_WINDOW_MAX && p->npend; i++) {
        if (sl_send_wait_origin(p->c, wait, &cf, &by) != SL_OK)
            break;
        confirmed += (unsigned)answer(p, &cf, &by);
        wait = 0;
    }
    return confirmed;
}

unsigned campaign_pub_expire(campaign_pub *p, uint64_t now_ms)
{
    if (!p->npend || now_ms < p->pend[0].sent_ms + (uint64_t)p->put_timeout_ms)
        return 0;
    unsigned n = p->npend;
    p->abandoned += n;
    p->npend = 0;
    sl_close(&p->c);
    if (campaign_client(p->endpoint, 1000, &p->c) != SL_OK)
        p->c = NULL;
    p->reconnects++;
    return n;
}

void campaign_pub_close(campaign_pub *p)
{
    p->abandoned += p->npend;
    p->npend = 0;
    sl_close(&p->c);
    free(p->buf);
    p->buf = NULL;
}

/* ---- draining ---- */

int campaign_levels_empty(sl_client *c, int *empty, uint64_t *dead)
{
    sl_stats st;
    int rc = sl_stats_get(c, &st);
    if (rc != SL_OK)
        return rc;
    uint64_t held = 0, d = 0;
    for (unsigned l = 0; l < st.nlevels && l < SL_MAX_LEVELS; l++) {
        held += st.level[l].depth + st.level[l].inflight + st.level[l].delayed;
        d += st.level[l].dead;
    }
    *empty = held == 0;
    if (dead)
        *dead = d;
    return SL_OK;
}

int campaign_drain(const char *endpoint, history *h, unsigned credit, int max_ms, pid_t broker,
                   campaign_drain_result *out)
{
    memset(out, 0, sizeof *out);
    uint64_t end = th_now_ms() + (uint64_t)max_ms;
    sl_client *c = NULL;
    if (campaign_client(endpoint, 1000, &c) != SL_OK)
        return -1;
    int subscribed = 0;
    while (th_now_ms() < end && !out->empty) {
        if (broker > 0 && campaign_exited(broker, NULL) == 1) {
            out->broker_gone = 1;
            break;
        }
        if (!subscribed) {
            subscribed = sl_subscribe(c, NULL, NULL, 0, credit) == SL_OK;
            continue;
        }
        sl_delivery *d = NULL;
        int rc = sl_recv(c, DRAIN_QUIET_MS, &d);
        if (rc == SL_OK) {
            history_deliver(h, d->id, d->body, d->body_len, d->attempt);
            out->deliveries++;
            if (sl_ack(c, d) == SL_OK) {
                history_ack(h, d->id);
                out->acked++;
            }
            sl_delivery_free(&d);
            continue;
        }
        int empty = 0;
        if (campaign_levels_empty(c, &empty, &out->dead) == SL_OK)
            out->empty = empty;
    }
    if (out->empty) /* its acknowledgements answered: taken by the broker, their deletes in its next commit */
        sl_flush(c, 5000);
    sl_close(&c);
    return out->empty ? 0 : -1;
}
