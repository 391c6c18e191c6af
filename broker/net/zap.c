/*
 * zap.c - the ZAP handler: a thread that says yes or no to CURVE handshakes.
 *
 * Owns: a REP socket bound on inproc://zeromq.zap.01 in the broker's
 * context, the thread that serves it, and the set of accepted public keys
 * (sorted Z85 strings, behind a mutex, replaced whole by zap_set_keys when
 * the auth file is loaded or reloaded).
 *
 * A request (RFC 27) is version "1.0", a request id, the domain, the
 * address, the routing id, the mechanism and its credentials. The answer is
 * 200 with User-Id = the client's public key in Z85 when the mechanism is
 * CURVE, the domain is ZAP_DOMAIN and the key is in the set; 400 otherwise
 * (a malformed request gets 500). libzmq holds the handshake until the
 * answer, so a refused client never gets a message through: the loop never
 * sees it. Because the listening socket sets ZMQ_ZAP_ENFORCE_DOMAIN, a
 * handler that is missing or does not answer refuses, never admits.
 *
 * Not every refused client reaches ZAP: a client without CURVE (mechanism
 * mismatch) or with the wrong server key (its HELLO cannot be opened) fails
 * the handshake inside libzmq. zap_watch puts a socket monitor on each
 * listening socket, read by the same thread, and every failed handshake it
 * reports that ZAP did not refuse itself (not HANDSHAKE_FAILED_AUTH, which
 * follows a ZAP refusal) is counted too, so handshakes_refused counts every
 * refused client, once per attempt.
 *
 * The thread polls with a 100 ms timeout to notice zap_close; costs are one
 * Z85 encode and one binary search over the keys per handshake, nothing per
 * message.
 */
#include "zap.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "log.h"
#include "proto.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_FRAMES 7
#define POLL_MS 100
#define ZAP_MONITORS 2 /* the listening sockets: --listen and --admin-listen */

struct zap {
    void *sock;
    pthread_t thread;
    pthread_mutex_t lock;
    char (*keys)[ZAP_KEY_LEN + 1]; /* sorted */
    size_t nkeys;
    atomic_int stop;
    atomic_uint_least64_t refused;
    void *mon[ZAP_MONITORS]; /* PAIR sockets reading the listening sockets' monitors */
    atomic_int nmon;         /* set by zap_watch, read by the thread */
};

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, ZAP_KEY_LEN);
}

/* known reports whether the Z85 key is in the set. */
static int known(zap *z, const char *key)
{
    pthread_mutex_lock(&z->lock);
    int found = z->nkeys && bsearch(key, z->keys, z->nkeys, sizeof *z->keys, key_cmp) != NULL;
    pthread_mutex_unlock(&z->lock);
    return found;
}

/* answer sends the reply to request id rid: status, text and User-Id. */
static void answer(zap *z, const zmq_msg_t *rid, const char *status, const char *text, const char *user)
{
    zmq_send(z->sock, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(z->sock, zmq_msg_data((zmq_msg_t *)rid), zmq_msg_size((zmq_msg_t *)rid), ZMQ_SNDMORE);
    zmq_send(z->sock, status, strlen(status), ZMQ_SNDMORE);
    zmq_send(z->sock, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(z->sock, user, strlen(user), ZMQ_SNDMORE);
    zmq_send(z->sock, "", 0, 0);
}

static int frame_is(zmq_msg_t *f, const char *s)
{
    size_t len = strlen(s);
    return zmq_msg_size(f) == len && memcmp(zmq_msg_data(f), s, len) == 0;
}

/* serve_one reads one request (all its frames) and answers it. */
static void serve_one(zap *z)
{
    zmq_msg_t f[ZAP_FRAMES + 1];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t *dst = &f[n < ZAP_FRAMES ? n : ZAP_FRAMES];
        zmq_msg_init(dst);
        if (zmq_msg_recv(dst, z->sock, 0) < 0) {
            zmq_msg_close(dst);
            break;
        }
        more = zmq_msg_more(dst);
        if (n < ZAP_FRAMES)
            n++;
        else
            zmq_msg_close(dst); /* extra credentials: ignored */
    }
    if (n < 6) { /* REP must answer every request; a torn one is a bug in libzmq */
        zmq_msg_t empty;
        zmq_msg_init(&empty);
        answer(z, &empty, "500", "malformed ZAP request", "");
        zmq_msg_close(&empty);
        atomic_fetch_add(&z->refused, 1);
        goto close;
    }
    /* 0 version, 1 request id, 2 domain, 3 address, 4 routing id, 5 mechanism, 6 key */
    char key[ZAP_KEY_LEN + 1] = "";
    int ok = frame_is(&f[0], "1.0") && frame_is(&f[2], ZAP_DOMAIN) && frame_is(&f[5], "CURVE") && n == 7 &&
             zmq_msg_size(&f[6]) == 32 && zmq_z85_encode(key, zmq_msg_data(&f[6]), 32) && known(z, key);
    if (ok) {
        answer(z, &f[1], "200", "OK", key);
    } else {
        uint64_t count = atomic_fetch_add(&z->refused, 1) + 1;
        if (count <= 10 || count % 1000 == 0)
            log_warn("zap", "handshake #%llu refused (%.*s from %.*s): %s", (unsigned long long)count,
                     (int)zmq_msg_size(&f[5]), (const char *)zmq_msg_data(&f[5]), (int)zmq_msg_size(&f[3]),
                     (const char *)zmq_msg_data(&f[3]),
                     !frame_is(&f[2], ZAP_DOMAIN) ? "wrong ZAP domain"
                     : !frame_is(&f[5], "CURVE")  ? "not CURVE"
                                                  : "key not in the auth file");
        answer(z, &f[1], "400", "not authorised", "");
    }
close:
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

/* monitor_one reads one event of a listening socket's monitor and counts
 * a handshake that failed before ZAP was asked (ZAP's own refusals are
 * counted by serve_one). */
static void monitor_one(zap *z, void *mon)
{
    zmq_msg_t f;
    int more = 1, first = 1;
    uint16_t event = 0;
    while (more) {
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, mon, 0) < 0) {
            zmq_msg_close(&f);
            return;
        }
        if (first && zmq_msg_size(&f) >= 6)
            memcpy(&event, zmq_msg_data(&f), sizeof event);
        first = 0;
        more = zmq_msg_more(&f);
        zmq_msg_close(&f);
    }
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
        uint64_t count = atomic_fetch_add(&z->refused, 1) + 1;
        if (count <= 10 || count % 1000 == 0)
            log_warn("zap", "handshake #%llu refused: %s", (unsigned long long)count,
                     event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                         ? "the client does not speak CURVE with this broker's key"
                         : "the handshake failed");
    }
}

static void *run(void *arg)
{
    zap *z = arg;
    while (!atomic_load(&z->stop)) {
        zmq_pollitem_t item[1 + ZAP_MONITORS] = {{.socket = z->sock, .events = ZMQ_POLLIN}};
        int nmon = atomic_load(&z->nmon);
        for (int i = 0; i < nmon; i++)
            item[1 + i] = (zmq_pollitem_t){.socket = z->mon[i], .events = ZMQ_POLLIN};
        int rc = zmq_poll(item, 1 + nmon, POLL_MS);
        if (rc < 0 && zmq_errno() == ETERM)
            break;
        if (rc <= 0)
            continue;
        if (item[0].revents & ZMQ_POLLIN)
            serve_one(z);
        for (int i = 0; i < nmon; i++)
            if (item[1 + i].revents & ZMQ_POLLIN)
                monitor_one(z, z->mon[i]);
    }
    return NULL;
}

int zap_watch(zap *z, void *ctx, void *listener)
{
    int at = atomic_load(&z->nmon);
    if (at >= ZAP_MONITORS)
        return SL_EFULL;
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "inproc://sluice-zap-monitor-%d", at);
    if (zmq_socket_monitor(listener, endpoint,
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0) {
        log_warn("zap", "cannot monitor the listening socket (%s): handshakes refused inside libzmq go uncounted",
                 zmq_strerror(zmq_errno()));
        return SL_EIO;
    }
    void *mon = zmq_socket(ctx, ZMQ_PAIR);
    int linger = 0;
    if (!mon || zmq_setsockopt(mon, ZMQ_LINGER, &linger, sizeof linger) || zmq_connect(mon, endpoint) != 0) {
        log_warn("zap", "cannot read the listening socket's monitor (%s)", zmq_strerror(zmq_errno()));
        if (mon)
            zmq_close(mon);
        zmq_socket_monitor(listener, NULL, 0);
        return SL_EIO;
    }
    z->mon[at] = mon;
    atomic_store(&z->nmon, at + 1); /* hands the socket to the thread */
    return SL_OK;
}

int zap_open(void *ctx, zap **out)
{
    zap *z = calloc(1, sizeof *z);
    if (!z)
        return SL_ENOMEM;
    int linger = 0, rc = SL_EIO;
    pthread_mutex_init(&z->lock, NULL);
    z->sock = zmq_socket(ctx, ZMQ_REP);
    if (!z->sock) {
        log_error("zap", "cannot create the ZAP socket: %s", zmq_strerror(zmq_errno()));
        goto free_z;
    }
    zmq_setsockopt(z->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(z->sock, ZAP_ENDPOINT) != 0) {
        int e = zmq_errno();
        log_error("zap", "cannot bind %s: %s", ZAP_ENDPOINT, zmq_strerror(e));
        rc = e == EADDRINUSE ? SL_ESTATE : SL_EIO;
        goto sock_close;
    }
    /* the thread inherits this mask: SIGTERM and SIGHUP go to the loop's
     * thread, whose ppoll they interrupt */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int started = pthread_create(&z->thread, NULL, run, z);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started != 0) {
        log_error("zap", "cannot start the ZAP thread");
        rc = SL_ENOMEM;
        goto sock_close;
    }
    *out = z;
    return SL_OK;

sock_close:
    zmq_close(z->sock);
free_z:
    pthread_mutex_destroy(&z->lock);
    free(z);
    return rc;
}

void zap_close(zap **zp)
{
    zap *z = zp ? *zp : NULL;
    if (!z)
        return;
    atomic_store(&z->stop, 1);
    pthread_join(z->thread, NULL);
    for (int i = 0; i < atomic_load(&z->nmon); i++)
        zmq_close(z->mon[i]);
    zmq_close(z->sock);
    pthread_mutex_destroy(&z->lock);
    free(z->keys);
    free(z);
    *zp = NULL;
}

int zap_set_keys(zap *z, const char *const *keys, size_t n)
{
    char (*set)[ZAP_KEY_LEN + 1] = n ? calloc(n, sizeof *set) : NULL;
    if (n && !set)
        return SL_ENOMEM;
    for (size_t i = 0; i < n; i++)
        memcpy(set[i], keys[i], ZAP_KEY_LEN);
    if (n)
        qsort(set, n, sizeof *set, key_cmp);
    pthread_mutex_lock(&z->lock);
    char (*old)[ZAP_KEY_LEN + 1] = z->keys;
    z->keys = set;
    z->nkeys = n;
    pthread_mutex_unlock(&z->lock);
    free(old);
    return SL_OK;
}

uint64_t zap_refused(const zap *z)
{
    return atomic_load(&((zap *)z)->refused);
}
