/*
 * sink_keys.c - per-key limits for sluice-sink: a GCRA limiter per key.
 *
 * A downstream service often limits each of its clients (a tenant, an API
 * key) as well as itself as a whole. sluice-sink simulates that with a key
 * taken from each request (a header, or the last segment of the URL path:
 * the caller finds it; sink_keys_from_path is the path rule) and this
 * table of limiters, one per key, all with the same rate and burst.
 *
 * The table is a chained hash table (FNV-1a) of a fixed SINK_KEYS_BUCKETS
 * heads; an entry holds a sink_limit in gcra mode (one number of state, no
 * allocation beside the entry) and the key's bytes. A key's limiter is made
 * on its first request with its whole burst available.
 *
 * Forgetting. A gcra limiter whose theoretical arrival time is not after
 * `now` is in exactly the state of a fresh one, so forgetting it changes no
 * decision. When SINK_KEYS_MAX keys are held and a new one arrives, the
 * table sweeps out every such idle key (O(keys), once per fill); if none is
 * idle the new key is refused as SINK_KEYS_FULL (the caller answers 503).
 *
 * Both-or-neither. sluice-sink asks the key first and the global limiter
 * second; when the global one refuses, sink_keys_give_back returns the
 * key's token (TAT moves back one interval), so a refused request costs no
 * limiter anything, as a refusal by one limiter alone never does.
 *
 * Costs: O(1) expected per request (one hash, one short chain); about
 * 100 + key bytes of memory per key held, plus 8 bytes per bucket.
 * Invariants: count <= SINK_KEYS_MAX; every entry's limiter is gcra with
 * the table's rate and burst.
 */
#include "sink_keys.h"

#include <stdlib.h>
#include <string.h>

#include "sluice_errors.h"

#define SINK_KEYS_BUCKETS (1u << 16)

struct sink_keys_entry {
    sink_keys_entry *next;
    sink_limit limit;
    size_t key_len;
    char key[];
};

static uint32_t hash(const char *key, size_t key_len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < key_len; i++) {
        h ^= (unsigned char)key[i];
        h *= 16777619u;
    }
    return h;
}

int sink_keys_init(sink_keys *t, uint32_t rate_per_s, uint32_t burst)
{
    memset(t, 0, sizeof *t);
    if (rate_per_s < 1 || rate_per_s > SINK_LIMIT_MAX_RATE_PER_S || burst < 1 || burst > SINK_LIMIT_MAX_BURST)
        return SL_EINVAL;
    t->buckets = calloc(SINK_KEYS_BUCKETS, sizeof *t->buckets);
    if (!t->buckets)
        return SL_ENOMEM;
    t->nbuckets = SINK_KEYS_BUCKETS;
    t->rate_per_s = rate_per_s;
    t->burst = burst;
    return SL_OK;
}

void sink_keys_fini(sink_keys *t)
{
    for (size_t b = 0; b < t->nbuckets; b++)
        for (sink_keys_entry *e = t->buckets[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(t->buckets);
    memset(t, 0, sizeof *t);
}

int sink_keys_set(sink_keys *t, uint32_t rate_per_s, uint32_t burst, uint64_t now_ns)
{
    if (rate_per_s < 1 || rate_per_s > SINK_LIMIT_MAX_RATE_PER_S || burst < 1 || burst > SINK_LIMIT_MAX_BURST)
        return SL_EINVAL;
    for (size_t b = 0; b < t->nbuckets; b++)
        for (sink_keys_entry *e = t->buckets[b]; e; e = e->next)
            sink_limit_set(&e->limit, rate_per_s, burst, now_ns); /* gcra: cannot fail */
    t->rate_per_s = rate_per_s;
    t->burst = burst;
    return SL_OK;
}

static sink_keys_entry **find(sink_keys *t, const char *key, size_t key_len)
{
    sink_keys_entry **p = &t->buckets[hash(key, key_len) & (t->nbuckets - 1)];
    while (*p && !((*p)->key_len == key_len && memcmp((*p)->key, key, key_len) == 0))
        p = &(*p)->next;
    return p;
}

/* sweep forgets every key whose limiter is as good as fresh at now_ns. */
static void sweep(sink_keys *t, uint64_t now_ns)
{
    for (size_t b = 0; b < t->nbuckets; b++)
        for (sink_keys_entry **p = &t->buckets[b]; *p;) {
            sink_keys_entry *e = *p;
            if (e->limit.tat_ns <= now_ns) {
                *p = e->next;
                free(e);
                t->count--;
            } else {
                p = &e->next;
            }
        }
}

sink_keys_verdict sink_keys_take(sink_keys *t, const char *key, size_t key_len, uint64_t now_ns,
                                 uint64_t *wait_ns)
{
    sink_keys_entry **p = find(t, key, key_len);
    if (!*p) {
        if (t->count >= SINK_KEYS_MAX) {
            sweep(t, now_ns);
            if (t->count >= SINK_KEYS_MAX)
                return SINK_KEYS_FULL;
            p = find(t, key, key_len);
        }
        sink_keys_entry *e = malloc(sizeof *e + key_len);
        if (!e || sink_limit_init(&e->limit, SINK_LIMIT_GCRA, t->rate_per_s, t->burst, now_ns) != SL_OK) {
            free(e);
            return SINK_KEYS_FULL;
        }
        e->next = NULL;
        e->key_len = key_len;
        memcpy(e->key, key, key_len);
        *p = e;
        t->count++;
    }
    return sink_limit_take(&(*p)->limit, now_ns, wait_ns) ? SINK_KEYS_ADMITTED : SINK_KEYS_REFUSED;
}

void sink_keys_give_back(sink_keys *t, const char *key, size_t key_len)
{
    sink_keys_entry *e = *find(t, key, key_len);
    if (e && e->limit.tat_ns >= e->limit.interval_ns)
        e->limit.tat_ns -= e->limit.interval_ns;
}

size_t sink_keys_from_path(const char *path, const char **key)
{
    size_t len = strlen(path);
    while (len && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start && path[start - 1] != '/')
        start--;
    *key = path + start;
    return len - start;
}

size_t sink_keys_escape(const char *key, size_t key_len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (key_len == 0 || (key_len == 1 && key[0] == '-')) {
        strcpy(out, key_len ? "\\x2d" : "-");
        return strlen(out);
    }
    for (size_t i = 0; i < key_len && i < SINK_KEYS_KEY_BYTES; i++) {
        unsigned char ch = (unsigned char)key[i];
        if (ch == '\\') {
            out[n++] = '\\';
            out[n++] = '\\';
        } else if (ch >= 0x21 && ch <= 0x7e) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = '\0';
    return n;
}

const char *sink_keys_source_name(sink_keys_source source)
{
    return source == SINK_KEYS_HEADER ? "header" : source == SINK_KEYS_PATH ? "path" : "none";
}
