/*
 * bench_bare.c - the bare paced poster: what a burst-1 sink lets through on
 * this machine, in this hour, to a sender with no broker behind it.
 *
 * A sink simulator as strict as its limit (sluice-sink --burst 1, a GCRA
 * that refuses any arrival closer than one interval to the last it
 * admitted) judges arrival times, and the way from a sender's token to the
 * sink's handler (libcurl, loopback TCP, the sink's thread, the scheduler)
 * adds jitter that no sender can take out: a request delayed in transit and
 * the next on time arrive closer than an interval, and that is a 429 and a
 * pause of a whole second (Retry-After is in seconds). How many such pairs a
 * run meets is the machine's, not Sluice's: on a quiet host none, on a
 * loaded virtual machine several a second.
 *
 * So the --post row is set beside this one, run right after it against a
 * fresh sink of the same rate: the same sl_pacer (its 2 % margin at burst
 * 1, its 1 us timer slack), the same eight workers each with one keep-alive
 * libcurl handle (httpc, the code `consume --post` sends with), the same
 * 100-byte bodies, and the same answer to a 429 as the broker gives its
 * consumers: every sender paused for the Retry-After, the rate cut and
 * climbing back by the broker's own AIMD (broker/meter/aimd.c). What this
 * poster does not have is the broker: dispatch, credit, the delivery and
 * the acknowledgement. The ratio of the two is what Sluice costs a sender
 * at the sink, decided in one run whatever the host.
 *
 * Costs: eight threads for the run's length; one mutex taken per 429 and
 * per AIMD step, none per request besides the pacer's own.
 */
#include "bench_bare.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "aimd.h"
#include "bench_core.h"
#include "httpc.h"
#include "sluice.h"

#define BARE_WORKERS      8
#define BARE_BODY_BYTES   100
#define BARE_TIMEOUT_MS   5000
#define BARE_NAP_NS       (5 * BENCH_CORE_NS_PER_MS) /* a paused worker looks again this often */
#define BARE_STEP_NS      (10 * BENCH_CORE_NS_PER_MS) /* the AIMD steps are looked for this often */

typedef struct bare {
    httpc *http;
    sl_pacer *pacer;
    pthread_mutex_t mu;   /* the fields below, up to the counters */
    aimd a;
    uint64_t base_milli, rate_milli;
    int64_t paused_until_ns;
    atomic_uint_fast64_t delivered, refused;
    atomic_bool stop;
} bare;

static void nap_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / BENCH_CORE_NS_PER_S), (long)(ns % BENCH_CORE_NS_PER_S)};
    nanosleep(&ts, NULL);
}

static int64_t paused_for(bare *p, int64_t now)
{
    pthread_mutex_lock(&p->mu);
    int64_t left = p->paused_until_ns > now ? p->paused_until_ns - now : 0;
    pthread_mutex_unlock(&p->mu);
    return left;
}

/* throttled answers a 429 as the broker answers its consumer's THROTTLED:
 * a pause of the Retry-After for every sender, and the AIMD cut. */
static void throttled(bare *p, uint32_t retry_after_ms)
{
    int64_t now = bench_core_now_ns();
    pthread_mutex_lock(&p->mu);
    int64_t until = now + (int64_t)(retry_after_ms ? retry_after_ms : 1000) * BENCH_CORE_NS_PER_MS;
    if (until > p->paused_until_ns)
        p->paused_until_ns = until;
    if (aimd_cut(&p->a, &p->rate_milli, p->base_milli, (uint64_t)now))
        sl_pacer_set(p->pacer, p->rate_milli, 1);
    pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg)
{
    bare *p = arg;
    char body[BARE_BODY_BYTES];
    memset(body, 'b', sizeof body);
    while (!atomic_load(&p->stop) && !bench_core_stopping()) {
        int64_t left = paused_for(p, bench_core_now_ns());
        if (left > 0) {
            nap_ns(left < BARE_NAP_NS ? left : BARE_NAP_NS);
            continue;
        }
        sl_pacer_wait(p->pacer, 1);
        httpc_result r;
        if (httpc_send(p->http, body, sizeof body, &r) != 0)
            break;
        if (r.verdict == HTTPC_DELIVERED)
            atomic_fetch_add(&p->delivered, 1);
        else if (r.verdict == HTTPC_THROTTLED) {
            atomic_fetch_add(&p->refused, 1);
            throttled(p, r.retry_after_ms);
        } else {
            nap_ns(BARE_NAP_NS); /* no answer: the sink is going away */
        }
    }
    return NULL;
}

/* run_for lets the workers send for ms, taking the AIMD steps as they fall due. */
static void run_for(bare *p, int64_t ms)
{
    int64_t until = bench_core_now_ns() + ms * BENCH_CORE_NS_PER_MS;
    for (int i = 0; i < 1000000 && !bench_core_stopping() && bench_core_now_ns() < until; i++) {
        pthread_mutex_lock(&p->mu);
        if (aimd_raise(&p->a, &p->rate_milli, p->base_milli, (uint64_t)bench_core_now_ns()))
            sl_pacer_set(p->pacer, p->rate_milli, 1);
        pthread_mutex_unlock(&p->mu);
        nap_ns(BARE_STEP_NS);
    }
}

int bench_bare_run(const char *url, unsigned rate, int64_t warm_ms, int64_t window_ms, double *pct,
                   uint64_t *refused)
{
    bare p = {.base_milli = (uint64_t)rate * 1000, .rate_milli = (uint64_t)rate * 1000};
    pthread_t t[BARE_WORKERS];
    unsigned started = 0;
    int rc = -1;
    pthread_mutex_init(&p.mu, NULL);
    atomic_init(&p.delivered, 0);
    atomic_init(&p.refused, 0);
    atomic_init(&p.stop, false);
    if (httpc_new(url, NULL, 0, BARE_TIMEOUT_MS, &p.http) != 0) {
        bench_core_fail("bare poster: cannot set up libcurl for %s", url);
        goto out;
    }
    if (sl_pacer_new(&p.pacer) != SL_OK) {
        bench_core_fail("bare poster: out of memory");
        goto out;
    }
    sl_pacer_set(p.pacer, p.rate_milli, 1);
    for (; started < BARE_WORKERS; started++)
        if (pthread_create(&t[started], NULL, worker, &p) != 0) {
            bench_core_fail("bare poster: cannot start a worker thread");
            goto out;
        }
    run_for(&p, warm_ms);
    uint64_t d1 = atomic_load(&p.delivered);
    int64_t t1 = bench_core_now_ns();
    run_for(&p, window_ms);
    uint64_t d2 = atomic_load(&p.delivered);
    int64_t t2 = bench_core_now_ns();
    *pct = bench_core_per_s(d2 - d1, t2 - t1) / rate * 100;
    *refused = atomic_load(&p.refused);
    rc = 0;
out:
    atomic_store(&p.stop, true);
    for (unsigned i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    sl_pacer_free(&p.pacer);
    httpc_destroy(&p.http);
    pthread_mutex_destroy(&p.mu);
    return rc;
}
