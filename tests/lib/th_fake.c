/*
 * th_fake.c - a scripted fake broker for the client library's own tests:
 * a real ZeroMQ ROUTER socket in a thread of the test, answering with
 * whatever the test's callback sends (see harness.h, th_fake_*). It is not a
 * mock of ZeroMQ: the client talks to a real socket; only the broker's side
 * is scripted, to reach the client's error paths.
 */
#include "harness.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

/* ---- the fake broker ---- */

int th_fake_setup(void **state)
{
    th_fake *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    alarm(th_timeout_s);
    strcpy(f->dir, "/tmp/sluice-test-XXXXXX");
    if (!mkdtemp(f->dir)) {
        fprintf(stderr, "harness: fake broker: %s\n", strerror(errno));
        goto free_fake;
    }
    f->ctx = zmq_ctx_new();
    if (!f->ctx) {
        fprintf(stderr, "harness: fake broker: zmq_ctx_new: %s\n", zmq_strerror(zmq_errno()));
        goto remove_dir;
    }
    snprintf(f->endpoint, sizeof f->endpoint, "ipc://%s/s.sock", f->dir);
    *state = f;
    return 0;
remove_dir:
    rmdir(f->dir);
free_fake:
    free(f);
    alarm(0);
    return -1;
}

int th_fake_teardown(void **state)
{
    th_fake *f = *state;
    char path[160];
    th_fake_stop(f);
    if (f->router)
        zmq_close(f->router);
    zmq_ctx_term(f->ctx);
    snprintf(path, sizeof path, "%s/s.sock", f->dir);
    unlink(path);
    rmdir(f->dir);
    free(f);
    alarm(0);
    return 0;
}

int th_fake_bind(th_fake *f)
{
    int linger_ms = 0;
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    if (!f->router || zmq_setsockopt(f->router, ZMQ_LINGER, &linger_ms, sizeof linger_ms) != 0 ||
        zmq_bind(f->router, f->endpoint) != 0) {
        fprintf(stderr, "harness: fake broker on %s: %s\n", f->endpoint, zmq_strerror(zmq_errno()));
        return -1;
    }
    return 0;
}

void th_fake_send(th_fake *f, const proto_msg *m)
{
    proto_wbuf b = {0};
    int rc = proto_encode(m, &b);
    if (rc != SL_OK)
        th_fatal("fake broker: a %s does not encode: %s", proto_name(m->type), sl_errname(rc));
    zmq_send(f->router, f->peer, f->peer_len, ZMQ_SNDMORE);
    zmq_send(f->router, b.data, b.len, 0);
    proto_wbuf_free(&b);
}

/* record keeps m's scalars (and copies of its short strings) in f->seen. */
static void record(th_fake *f, const proto_msg *m)
{
    int n = atomic_load(&f->nseen);
    if (n >= TH_SEEN_MAX)
        return;
    th_seen *s = &f->seen[n];
    *s = (th_seen){.type = m->type, .present = m->present, .seq = m->seq, .token = m->token,
                   .credit = m->credit, .delay_ms = m->delay_ms, .lease_ms = m->lease_ms, .n = m->n,
                   .id = m->id, .level = m->level, .size = m->size, .enabled = m->enabled,
                   .deadline_ms = m->deadline_ms, .aging_ms = m->aging_ms, .min = m->min,
                   .max = m->max, .target_wait_ms = m->target_wait_ms, .cost = m->cost,
                   .retry_ms = m->retry_ms, .rate_milli = m->rate_milli,
                   .min_rate_milli = m->min_rate_milli, .burst = m->burst,
                   .max_inflight = m->max_inflight};
    if (proto_has(m, PROTO_F_pool))
        memcpy(s->pool, m->pool.ptr, m->pool.len);
    if (proto_has(m, PROTO_F_cmd))
        memcpy(s->cmd, m->cmd.ptr, m->cmd.len);
    if (proto_has(m, PROTO_F_body) && m->body.len < sizeof s->body && m->body.len)
        memcpy(s->body, m->body.ptr, m->body.len);
    atomic_store(&f->nseen, n + 1);
}

static void *fake_main(void *arg)
{
    th_fake *f = arg;
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t item = {.socket = f->router, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, 20) <= 0)
            continue;
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, f->router, 0) >= 0 && zmq_msg_more(&id) &&
            zmq_msg_recv(&body, f->router, 0) >= 0 && zmq_msg_size(&id) <= sizeof f->peer) {
            proto_msg m;
            f->peer_len = zmq_msg_size(&id);
            memcpy(f->peer, zmq_msg_data(&id), f->peer_len);
            if (proto_decode(zmq_msg_data(&body), zmq_msg_size(&body), &m, NULL) == SL_OK) {
                record(f, &m);
                if (f->on_msg)
                    f->on_msg(f, &m);
            }
        }
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
    return NULL;
}

int th_fake_start(th_fake *f, th_fake_fn on_msg)
{
    f->on_msg = on_msg;
    atomic_store(&f->stop, 0);
    if (pthread_create(&f->thread, NULL, fake_main, f) != 0)
        return -1;
    f->running = true;
    return 0;
}

void th_fake_stop(th_fake *f)
{
    if (!f->running)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    f->running = false;
}

int th_fake_restart(th_fake *f, th_fake_fn on_msg)
{
    th_fake_stop(f);
    if (f->router)
        zmq_close(f->router);
    f->router = NULL;
    atomic_store(&f->nseen, 0);
    if (th_fake_bind(f) != 0)
        return -1;
    return th_fake_start(f, on_msg);
}

int th_fake_find(const th_fake *f, proto_type type, int from)
{
    for (int i = from; i < atomic_load(&f->nseen); i++)
        if (f->seen[i].type == type)
            return i;
    return -1;
}

sl_client *th_fake_client(const th_fake *f, int timeout_ms)
{
    sl_options o = {.timeout_ms = timeout_ms};
    sl_client *c = NULL;
    int rc = sl_connect(f->endpoint, &o, &c);
    if (rc != SL_OK || !c)
        th_fatal("sl_connect(%s): %s", f->endpoint, sl_errname(rc));
    return c;
}

void th_fake_error(th_fake *f, uint64_t seq, uint64_t code, const char *text)
{
    proto_msg r;
    proto_init(&r, PROTO_ERROR);
    proto_set(&r, seq, seq);
    proto_set(&r, code, code);
    proto_set_str(&r, PROTO_F_msg, text, strlen(text));
    th_fake_send(f, &r);
}

void th_fake_reply(th_fake *f, proto_type type, uint64_t seq)
{
    proto_msg r;
    proto_init(&r, type);
    proto_set(&r, seq, seq);
    if (type == PROTO_PUT_OK)
        proto_set(&r, id, 100 + f->puts);
    th_fake_send(f, &r);
}

void th_fake_names(proto_msg *m, uint32_t n)
{
    static const char *const names[] = {"high", "normal", "low", "l3",  "l4",  "l5",
                                        "l6",   "l7",     "l8",  "l9",  "l10", "l11",
                                        "l12",  "l13",    "l14", "l15", "l16"};
    if (n > sizeof names / sizeof names[0])
        th_fatal("fake broker: %u level names asked for, %zu known", (unsigned)n,
              sizeof names / sizeof names[0]);
    m->names.n = n;
    for (uint32_t i = 0; i < n; i++)
        m->names.v[i] = (proto_buf){names[i], (uint32_t)strlen(names[i])};
    m->present |= PF(names);
}

void th_fake_welcome(th_fake *f, uint64_t seq, uint32_t nlevels)
{
    proto_msg r;
    proto_init(&r, PROTO_WELCOME);
    proto_set(&r, seq, seq);
    proto_set(&r, v, PROTO_VERSION);
    th_fake_names(&r, nlevels);
    proto_set(&r, heartbeat_ms, 1000);
    proto_set(&r, lease_ms, 30000);
    proto_set(&r, max_body, 1024);
    th_fake_send(f, &r);
}

void th_fake_deliver(th_fake *f, uint64_t id, uint64_t token, const char *body, const char *tag,
                     uint64_t cost)
{
    proto_msg r;
    proto_init(&r, PROTO_DELIVER);
    proto_set(&r, id, id);
    proto_set(&r, token, token);
    proto_set(&r, level, 1);
    proto_set(&r, attempt, 2);
    proto_set(&r, lease_ms, 5000);
    proto_set_str(&r, PROTO_F_body, body, strlen(body));
    if (tag)
        proto_set_str(&r, PROTO_F_tag, tag, strlen(tag));
    if (cost)
        proto_set(&r, cost, cost);
    th_fake_send(f, &r);
}
