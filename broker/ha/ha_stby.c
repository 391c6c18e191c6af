/*
 * ha_stby.c - a standby's side of the replication stream: records applied
 * to its own store, made durable, acknowledged.
 *
 * The standby connects to the primary's --repl-listen (as Redis names it)
 * and says HELLO with the last record durable in its store (meta "repl",
 * which each record writes, so the position is exactly what the store
 * holds) and a new session number. Records then come in order; each is
 * checked (its epoch, its sequence, its checksum: store_repl_apply) and
 * put into the store's transaction with notes, so that the standby's own
 * log makes what came in one pass durable with one flush; then ACK names
 * the last one. Nothing is acknowledged before it is durable here.
 *
 * Epochs: a record of an epoch below the highest this node has seen is
 * refused for good (a deposed primary's); a higher one is persisted
 * (ha_epoch.c) before the record is applied. A record already applied is
 * skipped (a resend); a gap starts a new session from the last durable
 * record. FAR (the primary no longer holds what this store lacks, or
 * this store diverged) stops the stream; the primary then sends a copy of
 * its store (COPY_BEGIN, COPY_CHUNKs, COPY_END), written beside the data
 * directory and checked by ha_recv.c, each chunk acknowledged once
 * written. Once it is flushed and checked, COPY_END goes back and
 * ha_stby_loaded says so: the caller closes the store, swaps the copy in
 * (ha_recv_swap) and starts again on it, resuming the stream from the
 * position it holds. A copy that fails its checks is discarded and a new
 * session asked for after COPY_RETRY_NS (one that cannot be written here,
 * after COPY_DISK_RETRY_NS: each costs the primary a whole copy); one cut
 * short is discarded at the next session. The store is not touched by a
 * copy until the swap.
 *
 * Costs: per pass, one flush of the standby's log for all the records
 * that came; one ACK; a HELLO every HA_HELLO_MS; a copy's bytes written
 * once.
 */
#include "ha_stby.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ha_epoch.h"
#include "ha_recv.h"
#include "ha_wire.h"
#include "log.h"
#include "repl_link.h"
#include "store.h"
#include "units.h"

#define APPLY_BATCH 1024
#define COPY_RETRY_NS (2 * NS_PER_S)
#define COPY_DISK_RETRY_NS (30 * NS_PER_S)

struct ha_stby {
    store *st;
    char dir[4096], node[PROTO_MAX_NAME + 1], ep[1024];
    repl_link *link;
    uint64_t epoch, applied, applied_epoch, session;
    uint32_t sum;
    uint64_t next_hello_ns, last_record_ns;
    uint64_t records, refused;
    uint64_t primary_seq, primary_lag_ms, pos_ns; /* the primary's last POS, and when it came */
    int streaming, far, refused_logged, switch_asked;
    ha_recv *copy;           /* a copy of the primary's store being received */
    uint64_t copy_t0_ns, retry_ns, copy_acked;
    int loaded;              /* a copy is complete beside the store: swap it in */
    char secret[41];         /* the group's CURVE secret key (Z85); "": a plaintext stream */
    char mine[41];           /* the key this standby presents, when not the group's (--repl-key); "" */
};

/* new_session numbers a connection: the time, the process and a count, mixed. */
static uint64_t new_session(uint64_t now_ns)
{
    static uint64_t count;
    uint64_t x = now_ns ^ ((uint64_t)getpid() << 40) ^ (++count * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x | 1;
}

int ha_stby_new(store *st, const char *dir, const char *node, uint64_t known_epoch, ha_stby **out)
{
    ha_stby *s = calloc(1, sizeof *s);
    if (!s)
        return SL_ENOMEM;
    int rc = store_repl_pos(st, &s->applied_epoch, &s->applied);
    if (rc != SL_OK) {
        log_error("ha", "cannot read how far this store has applied the stream: %s", proto_strerror(rc));
        free(s);
        return rc;
    }
    s->st = st;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->node, sizeof s->node, "%s", node);
    s->epoch = known_epoch;
    *out = s;
    return SL_OK;
}

void ha_stby_secret(ha_stby *s, const char *secret, const char *mine)
{
    snprintf(s->secret, sizeof s->secret, "%s", secret ? secret : "");
    snprintf(s->mine, sizeof s->mine, "%s", mine ? mine : "");
}

void ha_stby_destroy(ha_stby **sp)
{
    ha_stby *s = sp ? *sp : NULL;
    if (!s)
        return;
    ha_recv_free(&s->copy);
    repl_link_close(&s->link);
    free(s);
    *sp = NULL;
}

static int see_epoch(ha_stby *s, uint64_t epoch)
{
    if (epoch <= s->epoch)
        return SL_OK;
    int rc = ha_epoch_save(s->dir, epoch);
    if (rc == SL_OK)
        s->epoch = epoch;
    return rc;
}

static void send_msg(ha_stby *s, int type)
{
    ha_msg m = {.type = type, .epoch = s->epoch, .seq = s->applied,
                .sum = type == HA_HELLO ? s->applied_epoch : s->sum, .session = s->session};
    snprintf(m.name, sizeof m.name, "%s", s->node);
    unsigned char hdr[HA_WIRE_MAX];
    repl_link_send(s->link, hdr, ha_wire_encode(&m, hdr), NULL, 0);
}

/* restart begins a new session: the primary streams again from applied + 1. */
static void restart(ha_stby *s, uint64_t now_ns)
{
    ha_recv_free(&s->copy); /* (a copy is a session's) */
    s->retry_ns = 0;
    s->far = 0;
    s->session = new_session(now_ns);
    s->sum = 0;
    s->streaming = 0;
    send_msg(s, HA_HELLO);
    s->next_hello_ns = now_ns + HA_HELLO_MS * NS_PER_MS;
}

int ha_stby_follow(ha_stby *s, const char *repl_ep, uint64_t epoch, uint64_t now_ns)
{
    int rc = see_epoch(s, epoch);
    if (rc != SL_OK)
        return rc;
    if (s->link && !strcmp(s->ep, repl_ep))
        return SL_OK;
    repl_link_close(&s->link);
    s->ep[0] = '\0';
    if (!repl_ep[0])
        return SL_OK;
    if ((rc = repl_link_connect(repl_ep, s->secret[0] ? s->secret : NULL, s->mine[0] ? s->mine : NULL, &s->link)) !=
        SL_OK)
        return rc;
    snprintf(s->ep, sizeof s->ep, "%s", repl_ep);
    s->far = 0;
    log_info("ha", "following the primary's stream at %s from record %llu", repl_ep,
             (unsigned long long)s->applied + 1);
    restart(s, now_ns);
    return SL_OK;
}

/* take handles one record; 1 applied, 0 skipped, -1 refused (restart
 * wanted), or a store error as -2 with *err. */
static int take(ha_stby *s, const ha_msg *m, const unsigned char *rec, size_t len, int *err)
{
    if (m->session != s->session || s->far)
        return 0; /* an earlier session's, still in flight; or one told FAR */
    if (m->epoch < s->epoch) {
        s->refused++;
        if (!s->refused_logged++)
            log_warn("ha", "refused a record of epoch %llu: this node has seen epoch %llu (a deposed primary)",
                     (unsigned long long)m->epoch, (unsigned long long)s->epoch);
        return 0;
    }
    if (m->seq <= s->applied)
        return 0; /* a resend: applied already */
    if (m->seq != s->applied + 1)
        return -1; /* a gap: resume from what is durable */
    if ((*err = see_epoch(s, m->epoch)) != SL_OK)
        return -2;
    uint32_t sum = crc32c_extend(s->sum, rec, len);
    if ((uint32_t)m->sum != sum) {
        s->refused++;
        log_error("ha", "record %llu does not continue this session's checksum (%08x, the primary's %08x): "
                  "resuming from record %llu", (unsigned long long)m->seq, (unsigned)sum, (unsigned)m->sum,
                  (unsigned long long)s->applied + 1);
        return -1;
    }
    *err = store_repl_apply(s->st, rec, len);
    if (*err == SL_ECORRUPT) {
        s->refused++;
        return -1;
    }
    if (*err != SL_OK)
        return -2;
    s->sum = sum;
    s->applied = m->seq;
    s->applied_epoch = m->epoch;
    s->records++;
    return 1;
}

/* copy_msg handles a COPY message; returns 1 when the session must start
 * over (the copy was discarded: a bad chunk), 2 likewise but later (this
 * disk refused it), a store error as -2 with *err, else 0. */
static int copy_msg(ha_stby *s, const ha_msg *m, const unsigned char *body, size_t len, uint64_t now_ns, int *err)
{
    if (m->session != s->session || m->epoch < s->epoch || s->loaded)
        return 0;
    if (m->type == HA_COPY_BEGIN) {
        if ((*err = see_epoch(s, m->epoch)) != SL_OK)
            return -2;
        ha_recv_free(&s->copy);
        if (ha_recv_begin(s->dir, m->seq, &s->copy) != SL_OK)
            return 2;
        s->copy_t0_ns = now_ns;
        s->copy_acked = 0;
        log_info("ha", "receiving a copy of the primary's store (%llu bytes) beside %s", (unsigned long long)m->seq,
                 s->dir);
        return 0;
    }
    if (!s->copy)
        return 0;
    if (m->type == HA_COPY_CHUNK_T) {
        int rc = ha_recv_write(s->copy, m->seq, body, len, (uint32_t)m->sum);
        return rc == SL_OK ? 0 : rc == SL_ECORRUPT ? 1 : 2;
    }
    if (ha_recv_end(s->copy, m->seq, (uint32_t)m->sum, s->epoch) != SL_OK)
        return 1;
    ha_msg e = {.type = HA_COPY_END, .epoch = s->epoch, .seq = ha_recv_got(s->copy),
                .sum = ha_recv_sum(s->copy), .session = s->session};
    snprintf(e.name, sizeof e.name, "%s", s->node);
    unsigned char hdr[HA_WIRE_MAX];
    repl_link_send(s->link, hdr, ha_wire_encode(&e, hdr), NULL, 0);
    log_info("ha", "the copy of the primary's store (%llu bytes) came in %llu ms, flushed and checked: loading it",
             (unsigned long long)m->seq, (unsigned long long)((now_ns - s->copy_t0_ns) / NS_PER_MS));
    s->loaded = 1;
    return 0;
}

int ha_stby_poll(ha_stby *s, uint64_t now_ns)
{
    if (!s->link)
        return SL_OK;
    unsigned char hdr[HA_WIRE_MAX];
    size_t hl, bl;
    const unsigned char *body;
    int applied = 0, again = 0, err = SL_OK;
    if (s->retry_ns && now_ns >= s->retry_ns)
        restart(s, now_ns); /* after a copy that failed */
    for (int i = 0; i < APPLY_BATCH && !s->loaded && !s->retry_ns; i++) {
        int got = repl_link_recv(s->link, hdr, sizeof hdr, &hl, &body, &bl);
        if (got <= 0)
            break;
        ha_msg m;
        if (ha_wire_decode(hdr, hl, &m) != 0)
            continue;
        if (m.type == HA_FAR && m.session == s->session) {
            if (!s->far)
                log_warn("ha", "the primary cannot resume the stream after record %llu (it no longer holds what "
                         "this store lacks, or this store diverged): waiting for a copy of its store",
                         (unsigned long long)s->applied);
            s->far = 1;
            s->streaming = 0;
            continue;
        }
        if (m.type == HA_COPY_BEGIN || m.type == HA_COPY_CHUNK_T || m.type == HA_COPY_END) {
            int r = copy_msg(s, &m, body, bl, now_ns, &err);
            if (r == -2)
                break;
            if (r >= 1) { /* discarded: a new session a moment later (the disk: much later) */
                ha_recv_free(&s->copy);
                s->retry_ns = now_ns + (r == 1 ? COPY_RETRY_NS : COPY_DISK_RETRY_NS);
                break;
            }
            continue;
        }
        if (m.type == HA_SWITCH) {
            s->switch_asked = 1;
            continue;
        }
        if (m.type == HA_POS) {
            if (m.session == s->session && m.epoch >= s->epoch) {
                s->primary_seq = m.seq;
                s->primary_lag_ms = m.sum;
                s->pos_ns = now_ns;
            }
            continue;
        }
        if (m.type != HA_RECORD)
            continue;
        int r = take(s, &m, body, bl, &err);
        if (r == -2)
            break;
        if (r == -1) {
            again = 1;
            break;
        }
        if (r == 1) {
            applied++;
            s->streaming = 1;
            s->last_record_ns = now_ns;
        }
    }
    if (applied && err == SL_OK) { /* durable, then acknowledged */
        store_log_inline(s->st, 1); /* it waits for the record anyway: no hand-off to the writer and back */
        int started = 0, rc = store_commit_start(s->st, now_ns, 0, &started);
        if (started)
            store_commit_wait(s->st, &rc);
        if (rc != SL_OK) {
            log_error("ha", "cannot make the replicated records durable: %s", proto_strerror(rc));
            return rc;
        }
        send_msg(s, HA_ACK);
    }
    if (err != SL_OK) {
        log_error("ha", "cannot apply a replicated record: %s", proto_strerror(err));
        return err;
    }
    if (s->copy && !s->loaded && ha_recv_got(s->copy) != s->copy_acked) { /* the bytes written, once a pass */
        s->copy_acked = ha_recv_got(s->copy);
        ha_msg a = {.type = HA_COPY_ACK, .epoch = s->epoch, .seq = ha_recv_got(s->copy), .session = s->session};
        snprintf(a.name, sizeof a.name, "%s", s->node);
        repl_link_send(s->link, hdr, ha_wire_encode(&a, hdr), NULL, 0);
    }
    if (again)
        restart(s, now_ns);
    else if (now_ns >= s->next_hello_ns && !s->retry_ns && !s->loaded) {
        send_msg(s, HA_HELLO); /* (also while told FAR: the primary sees this node wait for its copy) */
        s->next_hello_ns = now_ns + HA_HELLO_MS * NS_PER_MS;
    }
    return SL_OK;
}

int ha_stby_loaded(const ha_stby *s)
{
    return s->loaded;
}

int ha_stby_switch_asked(ha_stby *s)
{
    int a = s->switch_asked;
    s->switch_asked = 0;
    return a;
}

int ha_stby_fd(ha_stby *s, int *ready)
{
    *ready = 0;
    return s->link ? repl_link_fd(s->link, ready) : -1;
}

uint64_t ha_stby_next_wake(const ha_stby *s)
{
    return s->link ? s->next_hello_ns : UINT64_MAX;
}

uint64_t ha_stby_epoch(const ha_stby *s)
{
    return s->epoch;
}

void ha_stby_stats_get(const ha_stby *s, ha_stby_stats *out)
{
    *out = (ha_stby_stats){.epoch = s->epoch, .applied = s->applied, .applied_epoch = s->applied_epoch,
                           .records = s->records, .refused = s->refused, .streaming = s->streaming,
                           .far = s->far, .last_record_ns = s->last_record_ns,
                           .behind = s->primary_seq > s->applied ? s->primary_seq - s->applied : 0,
                           .lag_ms = s->primary_lag_ms, .pos_ns = s->pos_ns,
                           .copying = s->copy != NULL, .copy_bytes = s->copy ? ha_recv_got(s->copy) : 0};
}
