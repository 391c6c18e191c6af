/*
 * ha_prim.c - a primary's side of the replication stream: the records kept
 * until acknowledged, the standby's position, and whether it is in sync.
 *
 * Each batch the primary commits is one record (store_repl.c), numbered
 * seq. ha_prim_ship keeps a copy and sends it at once, in parallel with the
 * primary's own flush; the loop confirms the batch's publishes only when
 * both are done (ha_prim_acked) while the standby is in sync. Records stay
 * here until acknowledged, and past that up to --repl-buffer-mb, so that a
 * standby that reconnects resumes from its own last durable record (its
 * HELLO says which): the missing records are sent again, in order.
 * Applying is idempotent (a record is the final value of the keys it
 * touched), so a record sent twice does no harm.
 *
 * In sync: the standby has acknowledged every record made (so its store
 * equals the primary's confirmed state), and acks keep coming: a record
 * left unacknowledged for the timeout drops it from sync. The caller
 * records the change in Redis (sync = NAME / none) before it relies on it.
 *
 * Divergence: each session's records carry a running CRC-32C; the standby
 * acknowledges with its own, and a mismatch drops it from sync (counted,
 * logged): its store no longer equals the stream.
 *
 * A copy: a standby that cannot resume (FAR: what it lacks is no longer
 * held, or its store diverged) is sent a copy of this store. The broker
 * makes it (ha_copy.c: a checkpoint, then the backup's copier) once
 * ha_prim_copy_wanted says so and Redis records no standby in sync, and
 * hands the file over (ha_prim_copy_send); from ha_prim_copy_making on,
 * the records from the copy's position are kept whatever the buffer's
 * size (the pin), so that the standby resumes the stream from the
 * position the copy holds. The file goes in chunks of HA_COPY_CHUNK, at
 * most HA_COPY_WINDOW unacknowledged and COPY_PER_POLL per poll, read
 * from the file as they go (memory: one chunk, plus ZeroMQ's queue of the
 * window). The standby is in sync again only once it has loaded the copy,
 * said HELLO from its position and acknowledged every record since. A
 * standby silent for COPY_SILENCE_NS ends the copy and the pin.
 *
 * Costs: a copy of each record, kept until acknowledged and within the
 * buffer (and while a copy is under way, from its position); one send per
 * record; O(1) per ack; a copy reads the file once and sends it once.
 */
#include "ha_prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "grow.h"
#include "ha_wire.h"
#include "log.h"
#include "repl_link.h"
#include "units.h"

typedef struct held {
    uint64_t seq;
    unsigned char *p;
    size_t len;
    uint64_t shipped_ns;
} held;

struct ha_prim {
    repl_link *link;
    uint64_t epoch, seq, buffer_bytes, timeout_ns, epoch_start;
    held *h;                 /* records seq - n + 1 .. seq, oldest first, from index head */
    size_t head, n, cap;
    uint64_t bytes;
    /* the standby */
    int peer, in_sync, dead;
    char name[PROTO_MAX_NAME + 1];
    uint64_t session, sent, acked, sess_start;
    uint32_t sum;            /* running CRC-32C of the session's records sent, up to sent */
    uint32_t *sums;          /* per held record: the session's sum after it (valid for seq > sess_start) */
    size_t sums_cap;
    uint64_t diverged, far;
    /* a copy of the store for the standby (COPY_*) */
    int copy;                /* COPY_NONE .. COPY_LOADED */
    uint64_t copy_session;   /* the standby session it is for */
    uint64_t pin;            /* records from pin on are kept while a copy is under way (0: none) */
    uint64_t heard_ns;       /* the standby's last message */
    uint64_t copy_after_ns;  /* a failed copy is tried again from then */
    int copy_fd;
    uint64_t copy_size, copy_off, copy_acked, copy_t0_ns, copies;
    uint64_t now_ns;          /* the last poll's */
    uint32_t copy_sum;
    unsigned char *copy_buf;
};

enum { COPY_NONE, COPY_WANTED, COPY_MAKING, COPY_SENDING, COPY_SENT, COPY_LOADED };

#define COPY_PER_POLL 8
#define COPY_SILENCE_NS (10 * NS_PER_S)
#define COPY_RETRY_NS (2 * NS_PER_S)
#define COPY_WAKE_NS (5 * NS_PER_MS)

int ha_prim_open(const ha_prim_cfg *cfg, ha_prim **out)
{
    ha_prim *p = calloc(1, sizeof *p);
    if (!p)
        return SL_ENOMEM;
    int rc = repl_link_bind(cfg->endpoint, cfg->curve_secret, cfg->replicas, cfg->nreplicas, &p->link);
    if (rc != SL_OK) {
        free(p);
        return rc;
    }
    p->epoch = cfg->epoch;
    p->epoch_start = cfg->epoch_start;
    p->seq = p->acked = p->sent = cfg->seq;
    p->buffer_bytes = cfg->buffer_bytes;
    p->timeout_ns = cfg->timeout_ns;
    p->copy_fd = -1;
    *out = p;
    return SL_OK;
}

void ha_prim_close(ha_prim **pp)
{
    ha_prim *p = pp ? *pp : NULL;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->h[(p->head + i) % p->cap].p);
    free(p->h);
    free(p->sums);
    if (p->copy_fd >= 0)
        close(p->copy_fd);
    free(p->copy_buf);
    repl_link_close(&p->link);
    free(p);
    *pp = NULL;
}

static held *at(const ha_prim *p, uint64_t seq)
{
    uint64_t first = p->seq - p->n + 1;
    if (!p->n || seq < first || seq > p->seq)
        return NULL;
    return &p->h[(p->head + (seq - first)) % p->cap];
}

/* trim drops acknowledged records beyond the buffer's size. */
static void trim(ha_prim *p)
{
    while (p->n && p->bytes > p->buffer_bytes) {
        held *o = &p->h[p->head];
        if ((o->seq > p->acked && p->peer) || (p->pin && o->seq >= p->pin))
            break; /* never what the standby still needs while it streams, or will after its copy */
        p->bytes -= o->len;
        free(o->p);
        p->head = (p->head + 1) % p->cap;
        p->n--;
    }
}

/* send_rec sends record seq; 0, or -1 when the link cannot take it now. */
static int send_rec(ha_prim *p, uint64_t seq)
{
    held *r = at(p, seq);
    if (!r)
        return -1;
    uint32_t sum = crc32c_extend(p->sum, r->p, r->len);
    ha_msg m = {.type = HA_RECORD, .epoch = p->epoch, .seq = seq, .sum = sum, .session = p->session};
    unsigned char hdr[HA_WIRE_MAX];
    size_t hl = ha_wire_encode(&m, hdr);
    if (repl_link_send(p->link, hdr, hl, r->p, r->len) != SL_OK)
        return -1;
    p->sum = sum;
    p->sums[(p->head + (seq - (p->seq - p->n + 1))) % p->cap] = sum;
    p->sent = seq;
    return 0;
}

/* pump sends what the standby lacks, in order. */
static void pump(ha_prim *p)
{
    while (p->peer && !p->dead && p->sent < p->seq && send_rec(p, p->sent + 1) == 0)
        ;
}

int ha_prim_ship(ha_prim *p, uint64_t seq, const unsigned char *rec, size_t len, uint64_t now_ns)
{
    if (seq != p->seq + 1)
        return SL_EINVAL;
    if (p->n == p->cap) { /* grow the ring, keeping order */
        size_t cap = p->cap ? p->cap * 2 : 256;
        held *h = malloc(cap * sizeof *h);
        uint32_t *s = malloc(cap * sizeof *s);
        if (!h || !s) {
            free(h);
            free(s);
            return SL_ENOMEM;
        }
        for (size_t i = 0; i < p->n; i++) {
            h[i] = p->h[(p->head + i) % p->cap];
            s[i] = p->sums[(p->head + i) % p->cap];
        }
        free(p->h);
        free(p->sums);
        p->h = h;
        p->sums = s;
        p->cap = cap;
        p->head = 0;
    }
    unsigned char *c = malloc(len ? len : 1);
    if (!c)
        return SL_ENOMEM;
    memcpy(c, rec, len);
    p->h[(p->head + p->n) % p->cap] = (held){.seq = seq, .p = c, .len = len, .shipped_ns = now_ns};
    p->n++;
    p->bytes += len;
    p->seq = seq;
    pump(p);
    trim(p);
    return SL_OK;
}

/* copy_end ends a copy (sent, loaded, or given up) and its pin. */
static void copy_end(ha_prim *p)
{
    if (p->copy_fd >= 0)
        close(p->copy_fd);
    p->copy_fd = -1;
    p->copy = COPY_NONE;
    p->copy_session = 0;
    p->pin = 0;
}

/* want_copy asks the broker for a copy of the store for session (one being
 * made serves it: it holds everything up to its pin). */
static void want_copy(ha_prim *p, uint64_t session, uint64_t now_ns)
{
    p->heard_ns = now_ns;
    if (p->copy == COPY_MAKING) {
        p->copy_session = session;
        return;
    }
    if (p->copy != COPY_NONE && p->copy != COPY_WANTED)
        copy_end(p); /* a copy under way for an earlier session: start over */
    p->copy = COPY_WANTED;
    p->copy_session = session;
}

static void send_far(ha_prim *p, uint64_t seq, uint64_t session)
{
    ha_msg far = {.type = HA_FAR, .epoch = p->epoch, .seq = seq, .session = session};
    unsigned char hdr[HA_WIRE_MAX];
    repl_link_send(p->link, hdr, ha_wire_encode(&far, hdr), NULL, 0);
}

/* hello starts (or keeps) a standby's session. */
static void hello(ha_prim *p, const ha_msg *m, uint64_t now_ns)
{
    p->heard_ns = now_ns;
    if (p->peer && m->session == p->session) { /* a keepalive: answered with where the stream is */
        if (m->seq > p->acked && m->seq <= p->seq)
            p->acked = m->seq;
        held *w = at(p, p->acked + 1);
        ha_msg pos = {.type = HA_POS, .epoch = p->epoch, .seq = p->seq, .session = p->session,
                      .sum = w && now_ns > w->shipped_ns ? (now_ns - w->shipped_ns) / NS_PER_MS : 0};
        unsigned char hdr[HA_WIRE_MAX];
        repl_link_send(p->link, hdr, ha_wire_encode(&pos, hdr), NULL, 0);
        return;
    }
    if (p->copy != COPY_NONE && m->session == p->copy_session)
        return; /* a keepalive of a standby that waits for its copy, or loads it */
    uint64_t first = p->seq - p->n + 1;
    int was = p->peer;
    snprintf(p->name, sizeof p->name, "%s", m->name);
    p->session = m->session;
    p->in_sync = 0;
    p->dead = 0;
    p->sum = 0;
    /* a store that applied records of an older epoch past where this one
     * began holds what was never confirmed (a deposed primary's): diverged */
    int diverged = m->sum < p->epoch && m->seq > p->epoch_start;
    if (diverged || m->seq > p->seq || (m->seq < p->seq && (!p->n || m->seq + 1 < first))) {
        send_far(p, p->n ? first - 1 : p->seq, m->session);
        if (!p->far++ || !was)
            log_warn("ha", "standby %s cannot resume from record %llu of epoch %llu (this primary holds %llu..%llu, "
                     "epoch %llu from record %llu): it is sent a copy of this store", m->name,
                     (unsigned long long)m->seq, (unsigned long long)m->sum,
                     (unsigned long long)(p->n ? first : p->seq + 1), (unsigned long long)p->seq,
                     (unsigned long long)p->epoch, (unsigned long long)p->epoch_start + 1);
        p->peer = 0;
        want_copy(p, m->session, now_ns);
        return;
    }
    if (p->copy != COPY_NONE)
        copy_end(p); /* (from here the standby's position keeps what it lacks) */
    p->peer = 1;
    p->acked = m->seq;
    p->sent = p->sess_start = m->seq;
    log_info("ha", "standby %s streams from record %llu (%llu behind)", m->name, (unsigned long long)m->seq + 1,
             (unsigned long long)(p->seq - m->seq));
    pump(p);
}

static void ack(ha_prim *p, const ha_msg *m, uint64_t now_ns)
{
    if (!p->peer || m->session != p->session || m->seq <= p->acked || m->seq > p->sent)
        return;
    p->heard_ns = now_ns;
    held *r = at(p, m->seq);
    if (r && m->seq > p->sess_start && p->sums[r - p->h] != (uint32_t)m->sum) {
        if (!p->dead)
            log_error("ha", "standby %s diverged: its checksum after record %llu is %08x, this primary's %08x; "
                      "it is sent a copy of this store", p->name, (unsigned long long)m->seq,
                      (unsigned)m->sum, (unsigned)p->sums[r - p->h]);
        p->diverged++;
        p->dead = 1;
        p->in_sync = 0;
        p->peer = 0;
        send_far(p, m->seq, m->session);
        want_copy(p, m->session, now_ns);
        return;
    }
    p->acked = m->seq;
}

/* copy_pump sends the copy's next chunks, within the window. */
static void copy_pump(ha_prim *p, uint64_t now_ns)
{
    if (p->copy != COPY_SENDING)
        return;
    unsigned char hdr[HA_WIRE_MAX];
    if (!p->copy_off && !p->copy_acked && p->copy_t0_ns == 0) {
        ha_msg b = {.type = HA_COPY_BEGIN, .epoch = p->epoch, .seq = p->copy_size, .session = p->copy_session};
        if (repl_link_send(p->link, hdr, ha_wire_encode(&b, hdr), NULL, 0) != SL_OK)
            return;
        p->copy_t0_ns = now_ns | 1;
    }
    for (int i = 0; i < COPY_PER_POLL && p->copy_off < p->copy_size && p->copy_off - p->copy_acked < HA_COPY_WINDOW;
         i++) {
        uint64_t left = p->copy_size - p->copy_off;
        size_t n = left < HA_COPY_CHUNK ? (size_t)left : HA_COPY_CHUNK;
        ssize_t got = pread(p->copy_fd, p->copy_buf, n, (off_t)p->copy_off);
        if (got != (ssize_t)n) {
            log_error("ha", "cannot read the copy for standby %s at byte %llu: %s; a new one is made", p->name,
                      (unsigned long long)p->copy_off, got < 0 ? strerror(errno) : "cut short");
            copy_end(p);
            p->copy_after_ns = now_ns + COPY_RETRY_NS;
            return;
        }
        ha_msg c = {.type = HA_COPY_CHUNK_T, .epoch = p->epoch, .seq = p->copy_off,
                    .sum = crc32c_extend(0, p->copy_buf, n), .session = p->copy_session};
        if (repl_link_send(p->link, hdr, ha_wire_encode(&c, hdr), p->copy_buf, n) != SL_OK)
            return; /* its queue is full, or it is gone: again at the next poll */
        p->copy_sum = crc32c_extend(p->copy_sum, p->copy_buf, n);
        p->copy_off += n;
    }
    if (p->copy_off == p->copy_size) {
        ha_msg e = {.type = HA_COPY_END, .epoch = p->epoch, .seq = p->copy_size, .sum = p->copy_sum,
                    .session = p->copy_session};
        if (repl_link_send(p->link, hdr, ha_wire_encode(&e, hdr), NULL, 0) == SL_OK)
            p->copy = COPY_SENT;
    }
}

/* copy_reply takes a COPY_ACK (bytes written) or a COPY_END (flushed and checked). */
static void copy_reply(ha_prim *p, const ha_msg *m, uint64_t now_ns)
{
    if (m->session != p->copy_session || (p->copy != COPY_SENDING && p->copy != COPY_SENT))
        return;
    p->heard_ns = now_ns;
    if (m->type == HA_COPY_ACK) {
        if (m->seq > p->copy_acked && m->seq <= p->copy_off)
            p->copy_acked = m->seq;
        return;
    }
    if (p->copy != COPY_SENT || m->seq != p->copy_size || (uint32_t)m->sum != p->copy_sum) {
        log_error("ha", "standby %s refused the copy (%llu bytes, checksum %08x; it found %08x): a new one is made",
                  p->name, (unsigned long long)p->copy_size, (unsigned)p->copy_sum, (unsigned)m->sum);
        copy_end(p);
        p->copy_after_ns = now_ns + COPY_RETRY_NS;
        return;
    }
    close(p->copy_fd);
    p->copy_fd = -1;
    p->copy = COPY_LOADED;
    p->copies++;
    log_info("ha", "standby %s has the copy of this store (%llu bytes, sent in %llu ms), flushed and checked: it "
             "loads it and resumes from its position", p->name, (unsigned long long)p->copy_size,
             (unsigned long long)((now_ns - p->copy_t0_ns) / NS_PER_MS));
}

int ha_prim_poll(ha_prim *p, uint64_t now_ns)
{
    int was = p->in_sync;
    unsigned char hdr[HA_WIRE_MAX];
    size_t hl, bl;
    const unsigned char *body;
    for (int i = 0; i < 10000; i++) {
        int got = repl_link_recv(p->link, hdr, sizeof hdr, &hl, &body, &bl);
        if (got <= 0)
            break;
        ha_msg m;
        if (ha_wire_decode(hdr, hl, &m) != 0)
            continue;
        if (m.type == HA_HELLO)
            hello(p, &m, now_ns);
        else if (m.type == HA_ACK)
            ack(p, &m, now_ns);
        else if (m.type == HA_COPY_ACK || m.type == HA_COPY_END)
            copy_reply(p, &m, now_ns);
    }
    if (p->copy != COPY_NONE && now_ns > p->heard_ns + COPY_SILENCE_NS) {
        log_warn("ha", "standby %s said nothing for %llu s: its copy of this store is given up", p->name,
                 (unsigned long long)(COPY_SILENCE_NS / NS_PER_S));
        copy_end(p);
    }
    copy_pump(p, now_ns);
    p->now_ns = now_ns;
    pump(p);
    trim(p);
    if (p->peer && !p->dead && p->acked == p->seq)
        p->in_sync = 1;
    held *w = at(p, p->acked + 1);
    if (p->in_sync && w && now_ns >= w->shipped_ns + p->timeout_ns) {
        log_warn("ha", "standby %s acknowledged nothing for %llu ms (record %llu waits): out of sync", p->name,
                 (unsigned long long)(p->timeout_ns / NS_PER_MS), (unsigned long long)(p->acked + 1));
        p->in_sync = 0;
        p->peer = 0; /* a new HELLO resumes it */
    }
    return was != p->in_sync;
}

int ha_prim_copy_wanted(const ha_prim *p, uint64_t now_ns)
{
    return p->copy == COPY_WANTED && now_ns >= p->copy_after_ns;
}

void ha_prim_copy_making(ha_prim *p)
{
    p->copy = COPY_MAKING;
    p->pin = p->seq ? p->seq : 1;
}

int ha_prim_copy_send(ha_prim *p, int fd, uint64_t size, uint64_t now_ns)
{
    if (p->copy != COPY_MAKING)
        return SL_ESTATE; /* given up meanwhile */
    if (!p->copy_buf && !(p->copy_buf = malloc(HA_COPY_CHUNK)))
        return SL_ENOMEM;
    p->copy = COPY_SENDING;
    p->copy_fd = fd;
    p->copy_size = size;
    p->copy_off = p->copy_acked = p->copy_t0_ns = 0;
    p->copy_sum = 0;
    log_info("ha", "sending standby %s a copy of this store: %llu bytes", p->name, (unsigned long long)size);
    copy_pump(p, now_ns);
    return SL_OK;
}

void ha_prim_copy_failed(ha_prim *p, uint64_t now_ns)
{
    copy_end(p);
    p->copy_after_ns = now_ns + COPY_RETRY_NS;
}

void ha_prim_switch(ha_prim *p)
{
    ha_msg m = {.type = HA_SWITCH, .epoch = p->epoch, .seq = p->seq, .session = p->session};
    unsigned char hdr[HA_WIRE_MAX];
    repl_link_send(p->link, hdr, ha_wire_encode(&m, hdr), NULL, 0);
}

int ha_prim_acked(const ha_prim *p, uint64_t seq)
{
    return p->acked >= seq;
}

const char *ha_prim_in_sync(const ha_prim *p)
{
    return p->in_sync ? p->name : NULL;
}

uint64_t ha_prim_next_wake(const ha_prim *p)
{
    held *w = at(p, p->acked + 1);
    uint64_t t = p->in_sync && w ? w->shipped_ns + p->timeout_ns : UINT64_MAX;
    if (p->copy != COPY_NONE && p->copy != COPY_SENT && p->copy != COPY_LOADED && p->now_ns + COPY_WAKE_NS < t)
        t = p->now_ns + COPY_WAKE_NS; /* the copy: made, then sent (acks also wake the loop) */
    return t;
}

int ha_prim_fd(ha_prim *p, int *ready)
{
    return repl_link_fd(p->link, ready);
}

void ha_prim_stats_get(const ha_prim *p, uint64_t now_ns, ha_prim_stats *out)
{
    held *w = at(p, p->acked + 1);
    *out = (ha_prim_stats){.peer = p->peer, .in_sync = p->in_sync, .seq = p->seq, .acked = p->acked,
                           .lag_ns = w && now_ns > w->shipped_ns ? now_ns - w->shipped_ns : 0,
                           .diverged = p->diverged, .far = p->far, .held_records = p->n, .held_bytes = p->bytes,
                           .copying = p->copy != COPY_NONE, .copies = p->copies};
    snprintf(out->name, sizeof out->name, "%s", p->name);
}
