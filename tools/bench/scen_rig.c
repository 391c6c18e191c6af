/*
 * scen_rig.c - start, configure and stop what a scenario runs against.
 *
 * Order of life: the broker (its data in a fresh /tmp directory, an ipc://
 * endpoint there, ready when it writes READY on --ready-fd), the sink (a
 * free 127.0.0.1 port found by binding port 0, tried up to PORT_TRIES times
 * should another program take it first; ready the same way; limiting per
 * key as well when the scenario asks), the rig's admin connection and the
 * broker's sink limits; later the consumers, which
 * count as ready once the broker reports them connected. Closing runs the
 * other way: consumers (so what they hold returns to the broker), sink,
 * connection, broker, directory. Logs of every process go to the output
 * directory, each truncated at the start of the run.
 *
 * In-process consumers (the fallback) are threads with a client each,
 * subscribed to pool "bench" with a window of one: receive, POST (with the
 * message's tag as X-Sluice-Tag, as consume --post sends it), settle.
 * They look at a stop flag every RECV_SLICE_MS; closing the client says
 * BYE, so nothing they hold waits for a lease to expire.
 *
 * Waits are bounded: READY_MS for a start, STOP_MS for a stop (then
 * SIGKILL), CONSUMERS_MS for the consumers to connect.
 */
#include "scen_rig.h"
#include "scen_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define READY_MS       20000
#define STOP_MS        20000
#define CONSUMERS_MS   10000
#define PORT_TRIES     3
#define RECV_SLICE_MS  100
#define INPROC_MAX     16 /* in-process consumer threads at most */
#define MAX_STEPS      100000000
#define POOL           "bench"
#define CLIENT_TIMEOUT_MS 5000
#define NACK_DELAY_MS  100 /* no answer from the sink: try again after this */
#define HTTP_TIMEOUT_MS 5000 /* for each request to the sink */

/* out_path writes OUT/name into buf and removes what a previous run left. */
static const char *out_path(const scen_opts *o, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", o->out, name);
    unlink(buf);
    return buf;
}

/* sink_start is scen_rig_sink_start, keyed when cfg says so. */
static int sink_start(const scen_opts *o, uint32_t rate_per_s, uint32_t burst, const scen_rig_cfg *cfg,
                      const char *log_name, const char *out_name, proc *sink, uint16_t *port)
{
    char exe[SCEN_PATH_BYTES + 16], listen[32], rate[16], burst_text[16], key_rate[16], key_burst[16];
    char log[SCEN_PATH_BYTES + 64], out[SCEN_PATH_BYTES + 64];
    snprintf(exe, sizeof exe, "%s/sluice-sink", o->bin);
    snprintf(rate, sizeof rate, "%u", (unsigned)rate_per_s);
    snprintf(burst_text, sizeof burst_text, "%u", (unsigned)burst);
    snprintf(key_rate, sizeof key_rate, "%u", cfg ? (unsigned)cfg->key_rate_per_s : 0u);
    snprintf(key_burst, sizeof key_burst, "%u", cfg && cfg->key_burst ? (unsigned)cfg->key_burst : 1u);
    out_path(o, log_name, log, sizeof log);
    out_path(o, out_name, out, sizeof out);
    for (int i = 0; i < PORT_TRIES; i++) {
        unsigned p = scen_proc_free_port();
        if (!p)
            return scen_fail("no free TCP port on 127.0.0.1");
        snprintf(listen, sizeof listen, "127.0.0.1:%u", p);
        char *argv[20] = {exe, "--listen", listen, "--rate", rate, "--burst", burst_text,
                          "--mode", "gcra", "--log", log};
        size_t n = 11;
        if (cfg && cfg->key_header) {
            argv[n++] = "--key-header", argv[n++] = (char *)cfg->key_header;
            argv[n++] = "--key-rate", argv[n++] = key_rate, argv[n++] = "--key-burst", argv[n++] = key_burst;
        }
        argv[n] = NULL;
        if (scen_proc_start(sink, "sluice-sink", argv, out, true, READY_MS) == 0) {
            *port = (uint16_t)p;
            return 0;
        }
        if (scen_stopping())
            break;
    }
    return scen_fail("sluice-sink did not start (see %s)", out);
}

int scen_rig_sink_start(const scen_opts *o, uint32_t rate_per_s, uint32_t burst,
                             const char *log_name, const char *out_name, proc *sink,
                             uint16_t *port)
{
    return sink_start(o, rate_per_s, burst, NULL, log_name, out_name, sink, port);
}

static int broker_start(scen_rig *r)
{
    char exe[SCEN_PATH_BYTES + 16], data[SCEN_PATH_BYTES + 16];
    char log[SCEN_PATH_BYTES + 64];
    snprintf(r->tmp, sizeof r->tmp, "/tmp/sluice-bench-XXXXXX");
    if (!mkdtemp(r->tmp)) {
        r->tmp[0] = '\0';
        return scen_fail("cannot create a directory in /tmp: %s", strerror(errno));
    }
    snprintf(exe, sizeof exe, "%s/sluiced", r->o->bin);
    snprintf(data, sizeof data, "%s/data", r->tmp);
    snprintf(r->endpoint, sizeof r->endpoint, "ipc://%s/s.sock", r->tmp);
    out_path(r->o, "sluiced.log", log, sizeof log);
    char *const argv[] = {exe, "--data", data, "--listen", r->endpoint, NULL};
    return scen_proc_start(&r->broker, "sluiced", argv, log, true, READY_MS);
}

int scen_rig_open(scen_rig *r, const scen_opts *o, const scen_rig_cfg *cfg)
{
    *r = (scen_rig){.o = o, .cfg = *cfg};
    if (cfg->consumers > SCEN_RIG_MAX_CONSUMERS)
        return scen_fail("at most %d consumers", SCEN_RIG_MAX_CONSUMERS);
    if (broker_start(r) != 0)
        goto fail;
    if (sink_start(o, cfg->sink_rate_per_s, cfg->sink_burst, cfg, "sink.log", "sink.out", &r->sink,
                   &r->port) != 0)
        goto fail;
    snprintf(r->url, sizeof r->url, "http://127.0.0.1:%u/", (unsigned)r->port);
    sl_options opts = {.timeout_ms = CLIENT_TIMEOUT_MS};
    int rc = sl_connect(r->endpoint, &opts, &r->admin);
    if (rc == SL_OK)
        rc = sl_sink_set(r->admin, cfg->rate_milli, cfg->burst, SL_UNCHANGED);
    if (rc != SL_OK) {
        scen_fail("setting the broker's sink limits: %s (%s)", sl_strerror(rc),
                       r->admin ? sl_last_error(r->admin) : "");
        goto fail;
    }
    return 0;
fail:
    scen_rig_close(r);
    return -1;
}

/* post_available tells whether the sluice binary has `consume --post`: the
 * option parses (an unknown one is a usage error) before --help ends it. */
static bool post_available(const scen_rig *r)
{
    char exe[SCEN_PATH_BYTES + 16];
    proc p;
    snprintf(exe, sizeof exe, "%s/sluice", r->o->bin);
    char *const argv[] = {exe, "consume", "--post", "http://127.0.0.1:1/", "--help", NULL};
    if (scen_proc_start(&p, "sluice consume --help", argv, "/dev/null", false, 0) != 0)
        return false;
    int st = proc_wait(&p, 5000);
    if (st == PROC_RUNNING)
        proc_stop(&p, 1000);
    return st == 0;
}

/* inproc_settle maps the sink's answer to a settlement, as consume --post does. */
static void inproc_settle(sl_client *c, const sl_delivery *d, const httpc_result *a)
{
    switch (a->verdict) {
    case HTTPC_DELIVERED: sl_ack(c, d); break;
    case HTTPC_THROTTLED: sl_throttled(c, d, a->retry_after_ms); break;
    case HTTPC_RETRY: sl_nack(c, d, a->status ? 0 : NACK_DELAY_MS); break;
    case HTTPC_REFUSED: sl_nack(c, d, 0); break;
    }
}

static void *inproc_run(void *arg)
{
    scen_rig *r = arg;
    sl_options opts = {.timeout_ms = CLIENT_TIMEOUT_MS};
    sl_client *c = NULL;
    if (sl_connect(r->endpoint, &opts, &c) != SL_OK || sl_subscribe(c, POOL, NULL, 0, 1) != SL_OK) {
        scen_fail("an in-process consumer cannot subscribe: %s", c ? sl_last_error(c) : "");
        sl_close(&c);
        return NULL;
    }
    for (int step = 0; step < MAX_STEPS && !atomic_load(&r->threads_stop); step++) {
        sl_delivery *d = NULL;
        int rc = sl_recv(c, RECV_SLICE_MS, &d);
        if (rc == SL_ETIMEDOUT)
            continue;
        if (rc != SL_OK)
            break;
        httpc_result a;
        if (httpc_send_tagged(r->http, d->tag, d->body, d->body_len, &a) == SL_OK)
            inproc_settle(c, d, &a);
        else
            sl_nack(c, d, NACK_DELAY_MS); /* no memory for a handle */
        sl_delivery_free(&d);
    }
    sl_close(&c); /* BYE: what it held returns at once */
    return NULL;
}

static int consumers_wait(scen_rig *r, uint64_t want)
{
    sl_stats st = {.consumers = 0};
    int64_t deadline_ns = scen_now_ns() + CONSUMERS_MS * SCEN_NS_PER_MS;
    for (int i = 0; i < CONSUMERS_MS; i++) {
        if (scen_rig_stats(r, &st) != 0)
            return -1;
        if (st.consumers >= want)
            return 0;
        if (scen_now_ns() > deadline_ns || scen_stopping() || !scen_rig_consumers_alive(r))
            break;
        scen_sleep_until(scen_now_ns() + 20 * SCEN_NS_PER_MS);
    }
    return scen_fail("the broker counts %llu consumers of the %llu started",
                          (unsigned long long)st.consumers, (unsigned long long)want);
}

int scen_rig_consumers_start(scen_rig *r)
{
    char exe[SCEN_PATH_BYTES + 16], workers[16], log[SCEN_PATH_BYTES + 64], name[32];
    r->post = !r->o->inproc && post_available(r);
    if (!r->post) {
        unsigned n = r->cfg.consumers * r->cfg.workers;
        n = n < INPROC_MAX ? n : INPROC_MAX;
        int rc = httpc_new(r->url, NULL, 0, HTTP_TIMEOUT_MS, &r->http);
        if (rc != SL_OK)
            return scen_fail("cannot make an HTTP client for %s: %s", r->url, sl_strerror(rc));
        atomic_store(&r->threads_stop, false);
        r->inproc = n;
        for (unsigned i = 0; i < n; i++) {
            int err = pthread_create(&r->thread[i], NULL, inproc_run, r);
            if (err)
                return scen_fail("cannot start a consumer thread: %s", strerror(err));
            r->threads++;
        }
        return consumers_wait(r, n);
    }
    snprintf(exe, sizeof exe, "%s/sluice", r->o->bin);
    snprintf(workers, sizeof workers, "%u", r->cfg.workers);
    for (unsigned i = 0; i < r->cfg.consumers; i++) {
        char *const argv[] = {exe, "-b", r->endpoint, "consume", "--pool", POOL, "--post", r->url,
                              "--workers", workers, NULL};
        snprintf(name, sizeof name, "consumer-%u", i + 1);
        char file[40];
        snprintf(file, sizeof file, "%s.log", name);
        if (scen_proc_start(&r->consumer[i], name, argv, out_path(r->o, file, log, sizeof log),
                                 false, 0) != 0)
            return -1;
    }
    return consumers_wait(r, r->cfg.consumers);
}

bool scen_rig_consumers_alive(scen_rig *r)
{
    for (unsigned i = 0; r->post && i < r->cfg.consumers; i++)
        if (!proc_running(&r->consumer[i]))
            return false;
    return true;
}

int scen_rig_consumers_stop(scen_rig *r)
{
    int rc = 0;
    for (unsigned i = 0; i < SCEN_RIG_MAX_CONSUMERS; i++)
        if (r->consumer[i].pid > 0 && proc_stop(&r->consumer[i], STOP_MS) != 0)
            rc = -1;
    atomic_store(&r->threads_stop, true);
    for (unsigned i = 0; i < r->threads; i++)
        pthread_join(r->thread[i], NULL);
    r->threads = 0;
    httpc_destroy(&r->http); /* the threads have ended: their handles are freed */
    return rc;
}

void scen_rig_tag(char *buf, unsigned i)
{
    snprintf(buf, SCEN_RIG_TAG_BYTES, "t%04u", i);
}

uint64_t scen_rig_publish(scen_rig *r, uint64_t n, unsigned level, uint32_t cost)
{
    char body[SCEN_LOG_BODY_BYTES], tag[SCEN_RIG_TAG_BYTES];
    uint64_t sent = 0, settled = 0, confirmed = 0;
    sl_confirm k;
    for (uint64_t step = 0; step < 4 * n && settled < n && !scen_stopping(); step++) {
        if (sent < n && sent - settled < SCEN_RIG_SEND_WINDOW) {
            sl_put m = {.body = body, .level = (int)level, .cost = cost};
            m.body_len = scen_log_body(body, sent, scen_now_ns(), level);
            if (r->cfg.tags) {
                scen_rig_tag(tag, (unsigned)(sent % r->cfg.tags));
                m.tag = tag;
            }
            if (sl_send_async(r->admin, &m, NULL) != SL_OK)
                break;
            sent++;
            continue;
        }
        if (sl_send_wait(r->admin, 5000, &k) != SL_OK)
            break;
        settled++;
        confirmed += k.err == SL_OK;
    }
    return confirmed;
}

int scen_rig_stats(scen_rig *r, sl_stats *out)
{
    int rc = sl_stats_get(r->admin, out);
    if (rc != SL_OK)
        return scen_fail("reading the broker's statistics: %s", sl_strerror(rc));
    return 0;
}

int scen_rig_sink_stop(scen_rig *r)
{
    return r->sink.pid > 0 && proc_stop(&r->sink, STOP_MS) != 0 ? -1 : 0;
}

int scen_rig_close(scen_rig *r)
{
    int rc = scen_rig_consumers_stop(r);
    if (scen_rig_sink_stop(r) != 0)
        rc = -1;
    sl_close(&r->admin);
    if (r->broker.pid > 0 && proc_stop(&r->broker, STOP_MS) != 0)
        rc = -1;
    if (r->tmp[0])
        scen_proc_rmtree(r->tmp);
    r->tmp[0] = '\0';
    return rc;
}
