/*
 * bench_bare_zmq.c - the bare paced dispatcher: what a burst-1 bucket keeps
 * of its rate on this host when every release needs a wake of its own and
 * a trip through ZeroMQ, with no broker.
 *
 * At burst 1 a dispatcher must wake for each slot, and a wake more than
 * half an interval late loses the slot (rl_take_late). How late the wakes
 * come is the host's: on a quiet machine they keep nearly every slot of
 * 5,000/s; on two shared cores with other work they lose several percent,
 * whatever runs in them. So the `consume -c 64` rows of the sink used at
 * its limit are set beside this one, run right before each of them: one
 * thread with the broker loop's timer slack (1 us) sleeping in ppoll on a
 * ROUTER socket's descriptor until the bucket's next slot, releasing one
 * 100-byte message per slot by the broker's own bucket (broker/meter/rl.c,
 * rl_take_late) while the consumer has credit; the consumer a thread with a
 * context of its own on a DEALER over ipc, credit 64, answering each
 * message with a one-byte acknowledgement that gives the credit back. That
 * is the broker's loop and a consumer with nothing else: no store, no
 * scheduler, no protocol. The row's target is the issue's, 97 % of the
 * rate, scaled by what this dispatcher kept in the same run (at most all):
 * on a host that keeps its slots, the target unchanged.
 *
 * Costs: two threads and two ZeroMQ contexts (one I/O thread each) for the
 * run's length; an ipc socket file in the run's directory.
 */
#include "bench_bare.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <zmq.h>

#include "bench_core.h"
#include "rl.h"

#define ZB_CREDIT      64
#define ZB_BODY_BYTES  100
#define ZB_IDLE_NS     (100 * BENCH_CORE_NS_PER_MS) /* the longest sleep: the stop flag is read this often */
#define ZB_HELLO       "credit"

typedef struct zb {
    char endpoint[200];
    unsigned rate;
    atomic_uint_fast64_t acked;
    atomic_bool stop;
    int failed;
} zb;

static uint64_t mono(void)
{
    return (uint64_t)bench_core_now_ns();
}

/* events reads the socket's ZMQ_EVENTS (0 on error). */
static int events(void *s)
{
    int ev = 0;
    size_t len = sizeof ev;
    return zmq_getsockopt(s, ZMQ_EVENTS, &ev, &len) == 0 ? ev : 0;
}

/* take_input receives what waits on the ROUTER: the consumer's hello (its
 * routing id and credit) and its acknowledgements. */
static void take_input(zb *z, void *s, unsigned char *id, size_t *id_len, unsigned *credit)
{
    for (int i = 0; i < 4096 && (events(s) & ZMQ_POLLIN); i++) {
        unsigned char who[256], what[16];
        int n = zmq_recv(s, who, sizeof who, ZMQ_DONTWAIT);
        if (n < 0)
            return;
        int m = zmq_recv(s, what, sizeof what, ZMQ_DONTWAIT);
        if (m < 0)
            return;
        if (m == (int)strlen(ZB_HELLO) && memcmp(what, ZB_HELLO, (size_t)m) == 0) {
            *id_len = (size_t)n < sizeof who ? (size_t)n : sizeof who;
            memcpy(id, who, *id_len);
            *credit = ZB_CREDIT;
        } else {
            (*credit)++;
            atomic_fetch_add(&z->acked, 1);
        }
    }
}

static void *dispatcher(void *arg)
{
    zb *z = arg;
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* as the broker's loop */
    void *ctx = zmq_ctx_new(), *s = ctx ? zmq_socket(ctx, ZMQ_ROUTER) : NULL;
    int fd = -1, linger = 0;
    size_t fd_len = sizeof fd;
    if (!s || zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) != 0 || zmq_bind(s, z->endpoint) != 0 ||
        zmq_getsockopt(s, ZMQ_FD, &fd, &fd_len) != 0) {
        z->failed = 1;
        atomic_store(&z->stop, true);
    }
    rl_bucket bucket;
    memset(&bucket, 0, sizeof bucket);
    rl_set(&bucket, (uint64_t)z->rate * 1000, 1, mono());
    unsigned char id[256], body[ZB_BODY_BYTES];
    size_t id_len = 0;
    unsigned credit = 0;
    memset(body, 'z', sizeof body);
    while (!atomic_load(&z->stop) && !bench_core_stopping()) {
        uint64_t now = mono();
        take_input(z, s, id, &id_len, &credit);
        while (credit && id_len && rl_allows(&bucket, 1, now)) {
            if (zmq_send(s, id, id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
                zmq_send(s, body, sizeof body, ZMQ_DONTWAIT) < 0)
                break;
            rl_take_late(&bucket, 1, now);
            credit--;
        }
        if (events(s) & ZMQ_POLLIN)
            continue;
        uint64_t wake = credit && id_len ? rl_next_ns(&bucket, 1, now) : now + ZB_IDLE_NS;
        now = mono();
        uint64_t ns = wake > now ? wake - now : 0;
        if (ns > ZB_IDLE_NS)
            ns = ZB_IDLE_NS;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        if (ns)
            ppoll(&p, 1, &ts, NULL);
    }
    if (s)
        zmq_close(s);
    if (ctx)
        zmq_ctx_term(ctx);
    return NULL;
}

static void *consumer(void *arg)
{
    zb *z = arg;
    void *ctx = zmq_ctx_new(), *s = ctx ? zmq_socket(ctx, ZMQ_DEALER) : NULL;
    int linger = 0, timeout_ms = 100;
    if (!s || zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms) != 0 || zmq_connect(s, z->endpoint) != 0 ||
        zmq_send(s, ZB_HELLO, strlen(ZB_HELLO), 0) < 0) {
        z->failed = 1;
        atomic_store(&z->stop, true);
    }
    unsigned char buf[ZB_BODY_BYTES];
    while (!atomic_load(&z->stop) && !bench_core_stopping())
        if (zmq_recv(s, buf, sizeof buf, 0) >= 0 && zmq_send(s, "a", 1, 0) < 0)
            break;
    if (s)
        zmq_close(s);
    if (ctx)
        zmq_ctx_term(ctx);
    return NULL;
}

static void nap_ms(int64_t ms)
{
    int64_t until = bench_core_now_ns() + ms * BENCH_CORE_NS_PER_MS;
    for (int i = 0; i < 1000000 && !bench_core_stopping() && bench_core_now_ns() < until; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int bench_bare_dispatch(const char *dir, unsigned rate, int64_t warm_ms, int64_t window_ms, double *pct)
{
    zb z = {.rate = rate};
    atomic_init(&z.acked, 0);
    atomic_init(&z.stop, false);
    snprintf(z.endpoint, sizeof z.endpoint, "ipc://%s/bare.sock", dir);
    pthread_t d, c;
    if (pthread_create(&d, NULL, dispatcher, &z) != 0)
        return bench_core_fail("bare dispatcher: cannot start a thread");
    if (pthread_create(&c, NULL, consumer, &z) != 0) {
        atomic_store(&z.stop, true);
        pthread_join(d, NULL);
        return bench_core_fail("bare dispatcher: cannot start a thread");
    }
    nap_ms(warm_ms);
    uint64_t a1 = atomic_load(&z.acked);
    int64_t t1 = bench_core_now_ns();
    nap_ms(window_ms);
    uint64_t a2 = atomic_load(&z.acked);
    int64_t t2 = bench_core_now_ns();
    atomic_store(&z.stop, true);
    pthread_join(c, NULL);
    pthread_join(d, NULL);
    if (z.failed)
        return bench_core_fail("bare dispatcher: ZeroMQ refused %s: %s", z.endpoint, zmq_strerror(zmq_errno()));
    *pct = bench_core_per_s(a2 - a1, t2 - t1) / rate * 100;
    return 0;
}
