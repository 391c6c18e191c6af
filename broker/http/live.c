/*
 * live.c - the server's ticker and what it keeps up to date: the history,
 * the overview every reader shares, and the event streams that carry it to
 * open consoles.
 *
 * The ticker is a thread of the server's. Every LIVE_TICK_NS it closes the
 * connections past their deadline (conns.c) and ends idle sessions
 * (session.c); when the loop has published a new snapshot (once a second;
 * the publish wakes it, live_kick), it copies the snapshot, computes the point
 * (the rates since the last one), adds it to the history, formats the
 * overview once, bumps the generation and resumes every event stream
 * waiting for it. A request for the overview copies those bytes; a stream
 * sends them as one Server-Sent Event ("event: overview").
 *
 * An event stream is a response whose body libmicrohttpd pulls from
 * stream_read: the event not yet sent, else (nothing new) the connection is
 * suspended until the next generation. One stream per console tab; at most
 * LIVE_MAX_STREAMS in all and LIVE_MAX_STREAMS_PER_ADDR from one address.
 * A console that cannot keep one open polls /api/v1/overview instead.
 *
 * Locks: live's own (the overview, the history, the streams); suspend and
 * resume are never called with it held. A resume that overtakes its
 * suspend is absorbed by libmicrohttpd, and the stream is read again.
 *
 * Shutdown (live_stop): the ticker stops, calls to the loop end, every
 * stream is resumed to its end, and live_stop waits (at most 2 s) until
 * libmicrohttpd has let go of them all, so that no connection is suspended
 * when the daemon stops.
 *
 * Costs: per second O(levels + pools) to format and O(streams) to wake;
 * per event a copy of a few KiB per stream.
 */
#include "live.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "log.h"
#include "overview.h"
#include "proto_json.h"
#include "session.h"
#include "units.h"

#define LIVE_TICK_NS (250 * NS_PER_MS)
#define LIVE_POINT_NS NS_PER_S
#define LIVE_MAX_STREAMS 256
#define LIVE_MAX_STREAMS_PER_ADDR 16
#define LIVE_STOP_WAIT_MS 2000

typedef struct stream {
    http *h;
    struct MHD_Connection *c;
    conn_rec *conn;
    uint64_t sent_gen;
    char *buf;
    size_t len, off;
    int suspended;          /* under live's lock */
    int hello;              /* the first event (retry: and the overview) is out */
    struct stream *next;
} stream;

struct live {
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    series *hist;
    snap *prev, *cur;       /* the ticker's: the last two snapshots it made points of */
    uint64_t snap_gen;      /* the snapshot generation cur is */
    uint64_t last_point_ns;
    char *overview;         /* under lock: the formatted overview, shared by every reader */
    size_t overview_len;
    uint64_t gen;           /* bumped with each overview */
    stream *streams;
    unsigned nstreams;
};

int live_open(http *h)
{
    live *lv = calloc(1, sizeof *lv);
    if (!lv || !(lv->hist = series_new()) || !(lv->prev = malloc(sizeof(snap))) ||
        !(lv->cur = malloc(sizeof(snap)))) {
        if (lv) {
            series_destroy(&lv->hist);
            free(lv->prev);
            free(lv);
        }
        return SL_ENOMEM;
    }
    pthread_mutex_init(&lv->lock, NULL);
    pthread_cond_init(&lv->wake, NULL);
    h->live = lv;
    return SL_OK;
}

/* wake_streams resumes every stream waiting for news (or for the end). */
static void wake_streams(live *lv)
{
    struct MHD_Connection *todo[LIVE_MAX_STREAMS];
    unsigned n = 0;
    pthread_mutex_lock(&lv->lock);
    for (stream *s = lv->streams; s && n < LIVE_MAX_STREAMS; s = s->next)
        if (s->suspended) {
            s->suspended = 0;
            todo[n++] = s->c;
        }
    pthread_mutex_unlock(&lv->lock);
    for (unsigned i = 0; i < n; i++)
        MHD_resume_connection(todo[i]);
}

/* point makes a point and an overview of a new snapshot. */
static void point(http *h, live *lv, uint64_t now)
{
    series_point pt;
    snap *t = lv->prev;
    lv->prev = lv->cur, lv->cur = t;
    uint64_t gen = http_snap_copy(h, lv->cur);
    int have_prev = lv->snap_gen != 0;
    lv->snap_gen = gen;
    lv->last_point_ns = now;
    series_point_of(have_prev ? lv->prev : NULL, lv->cur, &pt);
    overview_in in = {.cur = lv->cur, .prev = have_prev ? lv->prev : NULL, .point = &pt, .auth = h->cfg.auth};
    conns_counts(&h->conns, &in.conns);
    pthread_mutex_lock(&lv->lock);
    in.streams = lv->nstreams;
    series_add(lv->hist, &pt);
    pthread_mutex_unlock(&lv->lock);
    proto_wbuf o = {0};
    if (overview_json(&in, &o) != SL_OK) {
        proto_wbuf_free(&o);
        log_warn("http", "out of memory formatting the overview; the console keeps the last one");
        return;
    }
    pthread_mutex_lock(&lv->lock);
    free(lv->overview);
    lv->overview = o.data;
    lv->overview_len = o.len;
    lv->gen++;
    pthread_mutex_unlock(&lv->lock);
    wake_streams(lv);
}

static void *tick(void *arg)
{
    http *h = arg;
    live *lv = h->live;
    for (;;) {
        uint64_t now = http_now_ns();
        conns_sweep(&h->conns, now);
        session_sweep(h, now);
        pthread_mutex_lock(&h->snap_lock);
        uint64_t gen = h->shared_gen;
        pthread_mutex_unlock(&h->snap_lock);
        if (gen && gen != lv->snap_gen && (lv->snap_gen == 0 || now >= lv->last_point_ns + LIVE_POINT_NS / 2))
            point(h, lv, now);
        pthread_mutex_lock(&lv->lock);
        if (!lv->stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t at = (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec + LIVE_TICK_NS;
            ts.tv_sec = (time_t)(at / NS_PER_S);
            ts.tv_nsec = (long)(at % NS_PER_S);
            pthread_cond_timedwait(&lv->wake, &lv->lock, &ts);
        }
        int stop = lv->stop;
        pthread_mutex_unlock(&lv->lock);
        if (stop)
            return NULL;
    }
}

int live_start(http *h)
{
    live *lv = h->live;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&lv->thread, NULL, tick, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("http", "cannot start the server's ticker: %s", strerror(rc));
        return SL_ENOMEM;
    }
    lv->started = 1;
    return SL_OK;
}

void live_kick(http *h)
{
    live *lv = h->live;
    pthread_mutex_lock(&lv->lock);
    pthread_cond_signal(&lv->wake);
    pthread_mutex_unlock(&lv->lock);
}

void live_stop(http *h)
{
    live *lv = h->live;
    if (!lv)
        return;
    pthread_mutex_lock(&lv->lock);
    lv->stop = 1;
    pthread_cond_signal(&lv->wake);
    pthread_mutex_unlock(&lv->lock);
    if (lv->started)
        pthread_join(lv->thread, NULL);
    lv->started = 0;
    call_stop_all(h);
    for (int i = 0; i < LIVE_STOP_WAIT_MS / 5; i++) {
        wake_streams(lv);
        pthread_mutex_lock(&lv->lock);
        unsigned n = lv->nstreams;
        pthread_mutex_unlock(&lv->lock);
        if (n == 0 && call_open_count(h) == 0)
            return;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    log_warn("http", "requests still open at shutdown; closing them");
}

void live_close(http *h)
{
    live *lv = h->live;
    if (!lv)
        return;
    if (lv->started)
        live_stop(h);
    series_destroy(&lv->hist);
    free(lv->prev);
    free(lv->cur);
    free(lv->overview);
    pthread_cond_destroy(&lv->wake);
    pthread_mutex_destroy(&lv->lock);
    free(lv);
    h->live = NULL;
}

/* first_overview formats an overview from the last snapshot, without rates:
 * for a request that comes before the ticker's first. */
static char *first_overview(http *h, size_t *len)
{
    snap *s = malloc(sizeof *s);
    proto_wbuf o = {0};
    if (!s || http_snap_copy(h, s) == 0) {
        free(s);
        return NULL;
    }
    overview_in in = {.cur = s, .auth = h->cfg.auth};
    conns_counts(&h->conns, &in.conns);
    int rc = overview_json(&in, &o);
    free(s);
    if (rc != SL_OK) {
        proto_wbuf_free(&o);
        return NULL;
    }
    *len = o.len;
    return o.data;
}

char *live_overview(http *h, size_t *len)
{
    live *lv = h->live;
    char *copy = NULL;
    int none;
    pthread_mutex_lock(&lv->lock);
    none = lv->overview == NULL;
    if (!none && (copy = malloc(lv->overview_len + 1))) {
        memcpy(copy, lv->overview, lv->overview_len + 1);
        *len = lv->overview_len;
    }
    pthread_mutex_unlock(&lv->lock);
    return none ? first_overview(h, len) : copy;
}

int live_history(http *h, int minutes, proto_wbuf *o)
{
    live *lv = h->live;
    pthread_mutex_lock(&lv->lock);
    int rc = series_json(lv->hist, minutes, o);
    pthread_mutex_unlock(&lv->lock);
    return rc;
}

/* ---- event streams ---- */

/* stream_read gives libmicrohttpd the next bytes of s's stream: what is left
 * of the last event, else the newest overview as an event, else nothing
 * (the connection is suspended until the ticker's next overview). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *s = cls;
    live *lv = s->h->live;
    (void)pos;
    pthread_mutex_lock(&lv->lock);
    if (s->off == s->len && lv->stop) {
        pthread_mutex_unlock(&lv->lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (s->off == s->len && lv->overview && s->sent_gen != lv->gen) {
        size_t need = lv->overview_len + 64;
        char *p = need > s->len ? realloc(s->buf, need) : s->buf;
        if (p) {
            s->buf = p;
            int n = snprintf(p, need, "%sevent: overview\ndata: ", s->hello ? "" : "retry: 2000\n\n");
            memcpy(p + n, lv->overview, lv->overview_len);
            memcpy(p + n + lv->overview_len, "\n\n", 2);
            s->len = (size_t)n + lv->overview_len + 2;
            s->off = 0;
            s->sent_gen = lv->gen;
            s->hello = 1;
        }
    }
    if (s->off < s->len) {
        size_t n = s->len - s->off < max ? s->len - s->off : max;
        memcpy(buf, s->buf + s->off, n);
        s->off += n;
        if (s->off == s->len)
            s->off = s->len = 0;
        pthread_mutex_unlock(&lv->lock);
        return (ssize_t)n;
    }
    s->suspended = 1;
    pthread_mutex_unlock(&lv->lock);
    MHD_suspend_connection(s->c);
    return 0;
}

static void stream_free(void *cls)
{
    stream *s = cls;
    live *lv = s->h->live;
    pthread_mutex_lock(&lv->lock);
    for (stream **p = &lv->streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            lv->nstreams--;
            break;
        }
    pthread_mutex_unlock(&lv->lock);
    free(s->buf);
    free(s);
}

enum MHD_Result live_stream(hreq *r)
{
    live *lv = r->h->live;
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return reply_error(r, SL_ENOMEM, "out of memory");
    s->h = r->h;
    s->c = r->c;
    s->conn = r->conn;
    unsigned same = 0;
    pthread_mutex_lock(&lv->lock);
    for (stream *o = lv->streams; o; o = o->next)
        if (o->conn && r->conn && o->conn->alen == r->conn->alen &&
            !memcmp(o->conn->addr, r->conn->addr, r->conn->alen))
            same++;
    int full = lv->nstreams >= LIVE_MAX_STREAMS || same >= LIVE_MAX_STREAMS_PER_ADDR || lv->stop;
    if (!full) {
        s->next = lv->streams;
        lv->streams = s;
        lv->nstreams++;
    }
    pthread_mutex_unlock(&lv->lock);
    if (full) {
        free(s);
        return reply_error(r, SL_EFULL, "too many event streams open (%d in all, %d from one address); "
                          "the console polls /api/v1/overview instead", LIVE_MAX_STREAMS, LIVE_MAX_STREAMS_PER_ADDR);
    }
    struct MHD_Response *rs = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s,
                                                                stream_free);
    if (!rs) {
        stream_free(s);
        return reply_error(r, SL_ENOMEM, "out of memory");
    }
    MHD_add_response_header(rs, "X-Accel-Buffering", "no");
    return reply_queue(r, MHD_HTTP_OK, "text/event-stream; charset=utf-8", rs);
}
