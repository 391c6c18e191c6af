/*
 * bench_workers.c - the workers of sluice-bench's enqueue and drain rows.
 *
 * A worker is one thread and one client. bench_workers_run connects every
 * client on the calling thread (and subscribes consumers), hands them to
 * the workers with pthread_create from one common start, takes them back
 * with pthread_join and closes them, as sluice.h's threading rule asks: a
 * client belongs to one thread at a time.
 *
 * Producers are bench_core_timed loops of confirmed publishes, bounded by
 * the row's deadline. Consumers ack until all of them together have acked
 * the row's target, counted in one atomic shared by the row's workers; each
 * looks at it when a poll comes back empty, so the last messages end every
 * consumer within BENCH_CORE_POLL_MS. A consumer that sees no progress by
 * any worker for BENCH_CORE_IDLE_TIMEOUT_MS reports a stalled drain.
 */
#include "bench_workers.h"

#include <inttypes.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_guard.h"

typedef struct send_one {
    sl_client *c;
    sl_put put;
} send_one;

/* send_one_step is one timed step of a producer: a confirmed publish. */
static int send_one_step(void *arg)
{
    send_one *s = arg;
    int rc = sl_send(s->c, &s->put, NULL);
    return rc == SL_OK ? 0 : bench_client_fail("sl_send", s->c, rc);
}

void *bench_workers_produce(void *arg)
{
    bench_worker *w = arg;
    unsigned char body[BENCH_CORE_BODY_BYTES];
    bench_core_body_fill(body);
    send_one s = {.c = w->c,
                  .put = {.body = body, .body_len = sizeof body, .level = bench_guard_home(),
                          .tag = bench_guard_tag()}};
    w->rc = bench_core_timed(send_one_step, &s, w->start_ns, w->deadline_ns, &w->msgs,
                             &w->last_ns);
    return NULL;
}

void *bench_workers_consume(void *arg)
{
    bench_worker *w = arg;
    uint64_t seen = 0;
    int64_t seen_ns = bench_core_now_ns();
    w->last_ns = w->start_ns;
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !bench_core_stopping(); i++) {
        int took = bench_client_take(w->c, NULL, NULL);
        if (took < 0) {
            w->rc = -1;
            break;
        }
        if (took == 0) {
            uint64_t done = atomic_load(w->done_all);
            if (done >= w->target_msgs)
                break;
            if (done != seen) {
                seen = done;
                seen_ns = bench_core_now_ns();
            } else if (bench_core_now_ns() - seen_ns >
                       BENCH_CORE_IDLE_TIMEOUT_MS * BENCH_CORE_NS_PER_MS) {
                w->rc = bench_core_fail("drain stalled: no delivery for %d ms with %" PRIu64
                                        " of %" PRIu64 " messages acked",
                                        BENCH_CORE_IDLE_TIMEOUT_MS, done, w->target_msgs);
                break;
            }
            continue;
        }
        w->msgs++;
        atomic_fetch_add(w->done_all, 1);
        w->last_ns = bench_core_now_ns();
    }
    return NULL;
}

int bench_workers_run(const char *endpoint, int seconds, bench_worker *w, size_t n,
                      unsigned credit, void *(*fn)(void *), uint64_t *msgs, int64_t *elapsed_ns)
{
    bench_core_thread t[BENCH_WORKERS_MAX] = {{0}};
    int rc = 0;
    const unsigned *levels;
    size_t nlevels;
    bench_guard_levels(&levels, &nlevels);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = bench_client_open(endpoint, &w[i].c);
        if (rc == 0 && credit && (rc = sl_subscribe(w[i].c, NULL, levels, nlevels, credit)) != SL_OK)
            rc = bench_client_fail("sl_subscribe", w[i].c, rc);
    }
    int64_t start_ns = bench_core_now_ns(), last_ns = start_ns;
    for (size_t i = 0; i < n; i++) {
        w[i].start_ns = start_ns;
        w[i].deadline_ns = start_ns + seconds * BENCH_CORE_NS_PER_S;
        t[i] = (bench_core_thread){.fn = fn, .arg = &w[i]};
    }
    if (rc == 0)
        rc = bench_core_threads_start(t, n); /* those started still end on their own */
    bench_core_threads_join(t, n);
    *msgs = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= w[i].rc;
        *msgs += w[i].msgs;
        if (w[i].last_ns > last_ns)
            last_ns = w[i].last_ns;
        int flushed = w[i].c ? sl_flush(w[i].c, BENCH_CORE_CLIENT_TIMEOUT_MS) : SL_OK; /* acks answered */
        if (flushed != SL_OK && rc == 0)
            rc = bench_client_fail("sl_flush", w[i].c, flushed);
        sl_close(&w[i].c);
    }
    *elapsed_ns = last_ns - start_ns;
    return rc;
}
