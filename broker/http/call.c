/*
 * call.c - a request that needs the loop: sent over the bridge, the
 * request suspended until the answer comes, then answered.
 *
 * On libmicrohttpd's thread, call_loop sends the message (bridge_call) and
 * suspends the connection unless the answer is already there. On the
 * bridge's thread, done stores the answer and resumes the connection if it
 * was suspended. libmicrohttpd then calls the handler again (http.c hands
 * it to call_resumed), which builds the response from the answer with the
 * route's on_reply. Both sides meet under h->call_lock, and libmicrohttpd
 * is never called with that lock held. A resume that overtakes its suspend
 * is absorbed by libmicrohttpd (the suspend that follows it does nothing),
 * and the handler, called again, finds the answer.
 *
 * Every call ends: the bridge answers each once (the loop's answer, a
 * timeout, or SL_ESHUTDOWN at close). call_stop_all, at close, refuses new
 * calls; the bridge's shutdown ends those out.
 *
 * Costs: one lock round per side; the answer is copied once.
 */
#include "http_int.h"

#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "log.h"

/* done receives the loop's answer on the bridge's thread. */
static void done(void *ctx, int rc, const void *reply, size_t len)
{
    hreq *r = ctx;
    http *h = r->h;
    char *copy = reply && len ? malloc(len) : NULL;
    if (copy)
        memcpy(copy, reply, len);
    else if (reply && len)
        rc = SL_ENOMEM;
    pthread_mutex_lock(&h->call_lock);
    r->call_done = 1;
    r->call_rc = rc;
    r->reply = copy;
    r->reply_len = copy ? len : 0;
    int resume = r->suspended;
    struct MHD_Connection *c = r->c; /* read under the lock: r lives until its request ends, after the resume */
    r->suspended = 0;
    for (hreq **p = &h->waiting; *p; p = &(*p)->next_waiting) /* no longer waiting */
        if (*p == r) {
            *p = r->next_waiting;
            break;
        }
    pthread_mutex_unlock(&h->call_lock);
    if (resume)
        MHD_resume_connection(c);
}

enum MHD_Result call_loop(hreq *r, proto_msg *m, hreq_reply_fn on_reply)
{
    http *h = r->h;
    if (!h->cfg.bridge)
        return reply_error(r, SL_ESTATE, "this server has no way to the loop");
    r->on_reply = on_reply;
    r->handled = 1;
    pthread_mutex_lock(&h->call_lock);
    if (h->stopping) {
        pthread_mutex_unlock(&h->call_lock);
        return reply_error(r, SL_ESHUTDOWN, "the broker is shutting down");
    }
    r->call_out = 1;
    h->calls_open++;
    r->next_waiting = h->waiting;
    h->waiting = r;
    pthread_mutex_unlock(&h->call_lock);
    int rc = bridge_call(h->cfg.bridge, r->key[0] ? r->key : NULL, m, done, r);
    if (rc != SL_OK) {
        pthread_mutex_lock(&h->call_lock);
        r->call_out = 0;
        h->calls_open--;
        for (hreq **p = &h->waiting; *p; p = &(*p)->next_waiting)
            if (*p == r) {
                *p = r->next_waiting;
                break;
            }
        pthread_mutex_unlock(&h->call_lock);
        r->handled = 0;
        return reply_error(r, rc, "cannot ask the loop: %s", proto_strerror(rc));
    }
    pthread_mutex_lock(&h->call_lock);
    int answered = r->call_done;
    if (!answered)
        r->suspended = 1;
    pthread_mutex_unlock(&h->call_lock);
    if (!answered)
        MHD_suspend_connection(r->c);
    else
        return call_resumed(r);
    return MHD_YES;
}

enum MHD_Result call_resumed(hreq *r)
{
    http *h = r->h;
    pthread_mutex_lock(&h->call_lock);
    int out = r->call_out, answered = r->call_done;
    if (out && !answered)
        r->suspended = 1; /* called again before the answer: wait on */
    if (out && answered) {
        r->call_out = 0;
        h->calls_open--;
    }
    pthread_mutex_unlock(&h->call_lock);
    if (!out)
        return MHD_YES; /* a response is queued already */
    if (!answered) {
        MHD_suspend_connection(r->c);
        return MHD_YES;
    }
    return r->on_reply(r, r->call_rc, r->reply, r->reply_len);
}

void call_stop_all(http *h)
{
    pthread_mutex_lock(&h->call_lock);
    h->stopping = 1;
    pthread_mutex_unlock(&h->call_lock);
    bridge_shutdown(h->cfg.bridge); /* every call out ends: done resumes its request */
}

void call_ended(hreq *r)
{
    http *h = r->h;
    pthread_mutex_lock(&h->call_lock);
    if (r->call_out) { /* its connection closed before the answer was used */
        r->call_out = 0;
        h->calls_open--;
    }
    pthread_mutex_unlock(&h->call_lock);
}

unsigned call_open_count(http *h)
{
    pthread_mutex_lock(&h->call_lock);
    unsigned n = h->calls_open;
    pthread_mutex_unlock(&h->call_lock);
    return n;
}
