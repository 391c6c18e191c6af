/*
 * history.c - the campaign record and its classifier (see history.h).
 *
 * The record is one slot per attempted message, indexed by message number,
 * plus a bounded table of "strangers": deliveries whose body names no message
 * of this history (another tag, a number never handed out, or bytes that do
 * not parse). A slot keeps what the classifier needs, not the events
 * themselves: the id (confirmed, or first seen on a delivery), how often it
 * was delivered and acknowledged, the highest attempt seen, its state, and
 * why it is corrupt, if it is. A delivery's body is checked against the body
 * regenerated from its number when the delivery is recorded, so nothing of a
 * body is stored.
 *
 * Invariants: slots [0, attempted) are initialised; the state of a slot only
 * moves from ATTEMPTED to CONFIRMED or REJECTED; corrupt bits are only ever
 * set. Every public function takes the one mutex, so the classifier sees a
 * consistent record even while threads still record.
 *
 * Who confirmed is a small table of (epoch, node) pairs with their counts,
 * filled by history_confirm_by; the classifier counts the epochs that hold
 * two nodes.
 *
 * Costs: an attempt or a delivery is O(body bytes) (generating or checking
 * the body); history_classify sorts the confirmed ids once, O(n log n), to
 * find ids confirmed twice and to give strangers with a known id to the
 * message that owns it. Memory: 24 bytes per slot, allocated by history_new.
 */
#include "history.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define STRANGERS_MAX 1024

enum { ST_ATTEMPTED = 1, ST_CONFIRMED, ST_REJECTED };

/* why a message is corrupt */
enum {
    BAD_BODY = 1,      /* a delivery naming it carried other bytes */
    BAD_ID = 2,        /* delivered or confirmed under two ids */
    BAD_SHARED_ID = 4, /* another message was confirmed with its id */
    BAD_STRANGER = 8,  /* an unparsable delivery came under its confirmed id */
};

typedef struct slot {
    uint64_t id;          /* confirmed id, else the first delivered id; 0: none */
    uint32_t deliveries;
    uint16_t acks;        /* saturates */
    uint8_t state;
    uint8_t bad;
    uint32_t max_attempt;
    uint32_t reject_err;
} slot;

typedef struct stranger {
    uint64_t id;
    int resolved;         /* given to a message as corruption */
} stranger;

typedef struct confirmer {
    uint64_t epoch, confirmed;
    char node[HISTORY_NODE_BYTES];
} confirmer;

struct history {
    pthread_mutex_t mu;
    confirmer by[HISTORY_CONFIRMERS];
    unsigned nby;
    uint64_t by_overflow;
    history_cfg cfg;
    slot *slots;
    uint64_t attempted, confirmed, rejected, deliveries, delivered, acked;
    stranger strangers[STRANGERS_MAX];
    uint64_t nstrangers;  /* all of them; the first STRANGERS_MAX are kept */
    int full;
    char *scratch;        /* a regenerated body, max_body_bytes */
    size_t scratch_bytes;
};

/* ---- bodies ---- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t body_len_of(const history_cfg *cfg, uint64_t msg)
{
    uint64_t s = ((uint64_t)cfg->tag << 32) ^ (msg * 0xd6e8feb86659fd93ull);
    uint64_t r = splitmix64(&s);
    if (cfg->big_every && r % cfg->big_every == 0)
        return cfg->big_bytes;
    return cfg->body_min + (size_t)((r >> 16) % (cfg->body_max - cfg->body_min + 1));
}

static size_t body_make(const history_cfg *cfg, uint64_t msg, char *buf, size_t cap)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    size_t len = body_len_of(cfg, msg);
    if (len > cap)
        return 0;
    char head[HISTORY_HEADER_BYTES + 1];
    snprintf(head, sizeof head, "H%08" PRIx32 ":%010" PRIu64 ":", cfg->tag, (uint64_t)(msg % 10000000000ull));
    memcpy(buf, head, HISTORY_HEADER_BYTES);
    uint64_t s = ((uint64_t)cfg->tag << 32) ^ msg ^ 0x5bd1e995ull;
    for (size_t i = HISTORY_HEADER_BYTES; i < len;) {
        uint64_t r = splitmix64(&s);
        for (int k = 0; k < 8 && i < len; k++, i++, r >>= 8)
            buf[i] = alphabet[(r & 0xff) % (sizeof alphabet - 1)];
    }
    return len;
}

/* body_parse reads the tag and message number from a body's header. */
static int body_parse(const void *body, size_t len, uint32_t *tag, uint64_t *msg)
{
    const char *p = body;
    if (len < HISTORY_HEADER_BYTES || p[0] != 'H' || p[9] != ':' || p[20] != ':')
        return -1;
    uint32_t t = 0;
    for (int i = 1; i <= 8; i++) {
        char c = p[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        t = t << 4 | (uint32_t)v;
    }
    uint64_t m = 0;
    for (int i = 10; i < 20; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        m = m * 10 + (uint64_t)(p[i] - '0');
    }
    *tag = t;
    *msg = m;
    return 0;
}

/* ---- lifecycle ---- */

int history_new(const history_cfg *cfg, history **out)
{
    *out = NULL;
    if (!cfg->max_msgs || cfg->body_min < HISTORY_HEADER_BYTES || cfg->body_max < cfg->body_min ||
        (cfg->big_every && cfg->big_bytes < HISTORY_HEADER_BYTES))
        return -1;
    history *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->cfg = *cfg;
    h->scratch_bytes = cfg->big_every && cfg->big_bytes > cfg->body_max ? cfg->big_bytes : cfg->body_max;
    h->slots = calloc(cfg->max_msgs, sizeof *h->slots);
    h->scratch = malloc(h->scratch_bytes);
    if (!h->slots || !h->scratch || pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h->slots);
        free(h->scratch);
        free(h);
        return -1;
    }
    *out = h;
    return 0;
}

void history_destroy(history **h)
{
    if (!h || !*h)
        return;
    pthread_mutex_destroy(&(*h)->mu);
    free((*h)->slots);
    free((*h)->scratch);
    free(*h);
    *h = NULL;
}

size_t history_body(const history *h, uint64_t msg, char *buf, size_t cap)
{
    return body_make(&h->cfg, msg, buf, cap);
}

size_t history_max_body(const history *h)
{
    return h->scratch_bytes;
}

/* ---- recording ---- */

int history_attempt(history *h, uint64_t *msg, char *buf, size_t cap, size_t *len)
{
    pthread_mutex_lock(&h->mu);
    int rc = -1;
    if (h->attempted >= h->cfg.max_msgs) {
        h->full = 1;
    } else {
        uint64_t m = h->attempted;
        size_t n = body_make(&h->cfg, m, buf, cap);
        if (n) {
            h->slots[m].state = ST_ATTEMPTED;
            h->attempted++;
            *msg = m;
            *len = n;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

void history_confirm(history *h, uint64_t msg, uint64_t id)
{
    pthread_mutex_lock(&h->mu);
    if (msg < h->attempted) {
        slot *s = &h->slots[msg];
        if (s->id && s->id != id)
            s->bad |= BAD_ID;
        s->id = id;
        if (s->state == ST_ATTEMPTED)
            h->confirmed++;
        s->state = ST_CONFIRMED;
    }
    pthread_mutex_unlock(&h->mu);
}

void history_confirm_by(history *h, uint64_t msg, uint64_t id, uint64_t epoch, const char *node)
{
    history_confirm(h, msg, id);
    if (!epoch)
        return;
    pthread_mutex_lock(&h->mu);
    unsigned i = 0;
    while (i < h->nby && !(h->by[i].epoch == epoch && !strncmp(h->by[i].node, node, HISTORY_NODE_BYTES - 1)))
        i++;
    if (i == h->nby && h->nby < HISTORY_CONFIRMERS) {
        h->by[i] = (confirmer){.epoch = epoch};
        snprintf(h->by[i].node, sizeof h->by[i].node, "%s", node);
        h->nby++;
    }
    if (i < h->nby)
        h->by[i].confirmed++;
    else
        h->by_overflow++;
    pthread_mutex_unlock(&h->mu);
}

void history_reject(history *h, uint64_t msg, int err)
{
    pthread_mutex_lock(&h->mu);
    if (msg < h->attempted && h->slots[msg].state == ST_ATTEMPTED) {
        h->slots[msg].state = ST_REJECTED;
        h->slots[msg].reject_err = (uint32_t)err;
        h->rejected++;
    }
    pthread_mutex_unlock(&h->mu);
}

static void stranger_add(history *h, uint64_t id)
{
    if (h->nstrangers < STRANGERS_MAX)
        h->strangers[h->nstrangers] = (stranger){.id = id};
    h->nstrangers++;
}

void history_deliver(history *h, uint64_t id, const void *body, size_t len, unsigned attempt)
{
    uint32_t tag;
    uint64_t msg;
    pthread_mutex_lock(&h->mu);
    h->deliveries++;
    if (body_parse(body, len, &tag, &msg) != 0 || tag != h->cfg.tag || msg >= h->attempted) {
        stranger_add(h, id);
    } else {
        slot *s = &h->slots[msg];
        size_t want = body_make(&h->cfg, msg, h->scratch, h->scratch_bytes);
        if (want != len || memcmp(h->scratch, body, len) != 0)
            s->bad |= BAD_BODY;
        if (s->id && s->id != id)
            s->bad |= BAD_ID;
        if (!s->id)
            s->id = id;
        if (s->deliveries++ == 0)
            h->delivered++;
        if (attempt > s->max_attempt)
            s->max_attempt = attempt;
    }
    pthread_mutex_unlock(&h->mu);
}

void history_ack(history *h, uint64_t id)
{
    (void)id; /* acks are counted; their ids are the deliveries' */
    pthread_mutex_lock(&h->mu);
    h->acked++;
    pthread_mutex_unlock(&h->mu);
}

uint64_t history_backlog(history *h)
{
    pthread_mutex_lock(&h->mu);
    uint64_t n = h->attempted - h->delivered;
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* ---- classifying ---- */

typedef struct id_msg {
    uint64_t id, msg;
} id_msg;

static int id_msg_cmp(const void *a, const void *b)
{
    const id_msg *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : x->msg < y->msg ? -1 : x->msg > y->msg;
}

static const id_msg *id_find(const id_msg *v, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].id == id ? &v[lo] : NULL;
}

/* cross_check marks messages confirmed under a shared id, and gives each
 * stranger whose id a confirmed message holds to that message. Locked. */
static void cross_check(history *h)
{
    size_t n = 0;
    for (uint64_t m = 0; m < h->attempted; m++)
        n += h->slots[m].state == ST_CONFIRMED;
    id_msg *v = n ? malloc(n * sizeof *v) : NULL;
    if (n && !v) {
        fprintf(stderr, "history: out of memory for the id check; skipped\n");
        return;
    }
    size_t k = 0;
    for (uint64_t m = 0; m < h->attempted; m++)
        if (h->slots[m].state == ST_CONFIRMED)
            v[k++] = (id_msg){h->slots[m].id, m};
    if (n)
        qsort(v, n, sizeof *v, id_msg_cmp);
    for (size_t i = 1; i < n; i++)
        if (v[i].id == v[i - 1].id) {
            h->slots[v[i].msg].bad |= BAD_SHARED_ID;
            h->slots[v[i - 1].msg].bad |= BAD_SHARED_ID;
        }
    uint64_t kept = h->nstrangers < STRANGERS_MAX ? h->nstrangers : STRANGERS_MAX;
    for (uint64_t i = 0; i < kept; i++) {
        stranger *st = &h->strangers[i];
        const id_msg *hit = st->resolved ? NULL : id_find(v, n, st->id);
        if (hit) {
            h->slots[hit->msg].bad |= BAD_STRANGER;
            st->resolved = 1;
        }
    }
    free(v);
}

static history_class class_locked(const history *h, uint64_t msg)
{
    const slot *s = &h->slots[msg];
    if (s->bad)
        return HISTORY_CORRUPT;
    if (s->state == ST_REJECTED)
        return s->deliveries ? HISTORY_UNEXPECTED : HISTORY_REJECTED;
    if (s->deliveries == 0)
        return s->state == ST_CONFIRMED ? HISTORY_LOST : HISTORY_UNCONFIRMED;
    return s->deliveries == 1 ? HISTORY_OK : HISTORY_DUPLICATED;
}

history_class history_class_of(history *h, uint64_t msg)
{
    pthread_mutex_lock(&h->mu);
    cross_check(h);
    history_class c = msg < h->attempted ? class_locked(h, msg) : HISTORY_UNEXPECTED;
    pthread_mutex_unlock(&h->mu);
    return c;
}

static void example(uint64_t ex[HISTORY_EXAMPLES], uint64_t count, uint64_t value)
{
    if (count <= HISTORY_EXAMPLES)
        ex[count - 1] = value;
}

void history_classify(history *h, history_report *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_lock(&h->mu);
    cross_check(h);
    r->attempted = h->attempted;
    r->confirmed = h->confirmed;
    r->rejected = h->rejected;
    r->deliveries = h->deliveries;
    r->delivered = h->delivered;
    r->acked = h->acked;
    r->full = h->full;
    for (uint64_t m = 0; m < h->attempted; m++) {
        const slot *s = &h->slots[m];
        switch (class_locked(h, m)) {
        case HISTORY_CORRUPT:
            example(r->corrupt_ex, ++r->corrupt, m);
            break;
        case HISTORY_LOST:
            example(r->lost_ex, ++r->lost, m);
            break;
        case HISTORY_UNEXPECTED:
            example(r->unexpected_id_ex, ++r->unexpected, s->id);
            break;
        case HISTORY_DUPLICATED:
            r->duplicated++;
            /* fall through */
        case HISTORY_OK:
            if (s->state == ST_CONFIRMED)
                r->ok++;
            else
                r->unconfirmed_delivered++;
            break;
        case HISTORY_UNCONFIRMED:
        case HISTORY_REJECTED:
            break;
        }
    }
    uint64_t kept = h->nstrangers < STRANGERS_MAX ? h->nstrangers : STRANGERS_MAX;
    for (uint64_t i = 0; i < kept; i++)
        if (!h->strangers[i].resolved)
            example(r->unexpected_id_ex, ++r->unexpected, h->strangers[i].id);
    r->unexpected += h->nstrangers - kept; /* beyond the table: unattributed */
    for (unsigned i = 0; i < h->nby; i++) {
        r->by[i].epoch = h->by[i].epoch;
        r->by[i].confirmed = h->by[i].confirmed;
        memcpy(r->by[i].node, h->by[i].node, sizeof r->by[i].node);
        int first = 1; /* the first pair of its epoch counts the epoch once if another node has it too */
        for (unsigned j = 0; j < i && first; j++)
            first = h->by[j].epoch != h->by[i].epoch;
        for (unsigned j = i + 1; j < h->nby && first; j++)
            if (h->by[j].epoch == h->by[i].epoch) {
                r->split_epochs++;
                break;
            }
    }
    r->nby = h->nby;
    r->by_overflow = h->by_overflow;
    pthread_mutex_unlock(&h->mu);
}

uint64_t history_bad(const history_report *r)
{
    return r->lost + r->unexpected + r->corrupt + r->split_epochs;
}

static void examples_print(FILE *f, const char *what, const uint64_t *ex, uint64_t count)
{
    if (!count)
        return;
    fprintf(f, " %s:", what);
    for (uint64_t i = 0; i < count && i < HISTORY_EXAMPLES; i++)
        fprintf(f, " %" PRIu64, ex[i]);
    if (count > HISTORY_EXAMPLES)
        fprintf(f, " ...");
}

void history_print(const history_report *r, const char *prefix, FILE *f)
{
    fprintf(f,
            "%sattempted %" PRIu64 " confirmed %" PRIu64 " rejected %" PRIu64 " delivered %" PRIu64
            " (unconfirmed %" PRIu64 ") deliveries %" PRIu64 " acked %" PRIu64 "%s\n",
            prefix, r->attempted, r->confirmed, r->rejected, r->delivered, r->unconfirmed_delivered,
            r->deliveries, r->acked, r->full ? " (history full)" : "");
    fprintf(f,
            "%sok %" PRIu64 " lost %" PRIu64 " duplicated %" PRIu64 " unexpected %" PRIu64
            " corrupt %" PRIu64,
            prefix, r->ok, r->lost, r->duplicated, r->unexpected, r->corrupt);
    examples_print(f, "lost msgs", r->lost_ex, r->lost);
    examples_print(f, "unexpected ids", r->unexpected_id_ex, r->unexpected);
    examples_print(f, "corrupt msgs", r->corrupt_ex, r->corrupt);
    fputc('\n', f);
    if (!r->nby)
        return;
    fprintf(f, "%sconfirmed by:", prefix);
    for (unsigned i = 0; i < r->nby; i++)
        fprintf(f, "%s %s in epoch %" PRIu64 " (%" PRIu64 ")", i ? "," : "", r->by[i].node, r->by[i].epoch,
                r->by[i].confirmed);
    if (r->by_overflow)
        fprintf(f, ", %" PRIu64 " more", r->by_overflow);
    fprintf(f, "; split epochs %" PRIu64 "\n", r->split_epochs);
}
