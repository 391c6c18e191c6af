/*
 * multi.c - one client over several brokers: a sl_client per endpoint, and
 * the routing of publishes among them.
 *
 * Owns: the clients (opened together, closed together), the round-robin
 * cursor for messages with neither key nor tag, and for each broker the time
 * until which keyless messages skip it (it failed to answer).
 *
 * Routing: rendezvous (highest random weight) hashing. A message with an
 * idempotency key goes to the broker whose FNV-1a 64 hash of (endpoint, key)
 * is highest; the same for a tag when there is no key; so the same key always
 * meets the same broker's duplicate check, and adding or removing a broker
 * moves only the keys whose highest hash it was. A keyless message whose
 * broker is down goes to the next one in turn; a keyed one does not (its
 * duplicate check lives on its broker) and returns the error.
 *
 * Costs: O(brokers) hashes of the key per publish; no allocation after
 * connect. The clock is read only to skip a broker that just failed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "sluice.h"

#define SKIP_NS 5000000000ULL

struct sl_multi {
    unsigned n, next;
    sl_client *c[SL_MAX_BROKERS];
    char *endpoint[SL_MAX_BROKERS];
    uint64_t skip_until_ns[SL_MAX_BROKERS];
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

int sl_multi_connect(const char *endpoints, const sl_options *opts, sl_multi **out)
{
    *out = NULL;
    sl_multi *m = calloc(1, sizeof *m);
    char *list = strdup(endpoints ? endpoints : SL_DEFAULT_ENDPOINT);
    int rc = SL_OK;
    if (!m || !list) {
        rc = SL_ENOMEM;
        goto fail;
    }
    char *rest = list;
    for (char *e = strsep(&rest, ","); e; e = strsep(&rest, ",")) { /* an empty one is an error */
        while (*e == ' ')
            e++;
        if (!*e || m->n == SL_MAX_BROKERS) {
            rc = SL_EINVAL;
            goto fail;
        }
        m->endpoint[m->n] = strdup(e);
        if (!m->endpoint[m->n]) {
            rc = SL_ENOMEM;
            goto fail;
        }
        rc = sl_connect(e, opts, &m->c[m->n]);
        m->n++;
        if (rc != SL_OK)
            goto fail;
    }
    if (m->n == 0) {
        rc = SL_EINVAL;
        goto fail;
    }
    free(list);
    *out = m;
    return SL_OK;
fail:
    free(list);
    sl_multi_close(&m);
    return rc;
}

void sl_multi_close(sl_multi **mp)
{
    sl_multi *m = mp ? *mp : NULL;
    if (!m)
        return;
    for (unsigned i = 0; i < m->n; i++) {
        sl_close(&m->c[i]);
        free(m->endpoint[i]);
    }
    free(m);
    *mp = NULL;
}

unsigned sl_multi_count(const sl_multi *m)
{
    return m->n;
}

sl_client *sl_multi_at(sl_multi *m, unsigned i)
{
    return i < m->n ? m->c[i] : NULL;
}

const char *sl_multi_endpoint(const sl_multi *m, unsigned i)
{
    return i < m->n ? m->endpoint[i] : NULL;
}

unsigned sl_multi_route(sl_multi *m, const char *key, const char *tag)
{
    const char *by = key && *key ? key : tag && *tag ? tag : NULL;
    if (!by) {
        uint64_t t = now_ns();
        for (unsigned k = 0; k < m->n; k++) {
            unsigned i = m->next++ % m->n;
            if (m->skip_until_ns[i] <= t)
                return i;
        }
        return m->next++ % m->n;
    }
    unsigned best = 0;
    uint64_t best_h = 0;
    for (unsigned i = 0; i < m->n; i++) {
        uint64_t h = fnv(fnv(14695981039346656037ULL, m->endpoint[i]) ^ 0xff, by);
        h ^= h >> 33; /* finish: spread the last bytes over the high bits */
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        if (i == 0 || h > best_h)
            best = i, best_h = h;
    }
    return best;
}

static int unreachable(int rc)
{
    return rc == SL_ETIMEDOUT || rc == SL_ECONNECT || rc == SL_ESHUTDOWN;
}

int sl_multi_send(sl_multi *m, const sl_put *p, uint64_t *id, unsigned *broker)
{
    return sl_multi_send_ex(m, p, NULL, 0, id, broker);
}

int sl_multi_send_ex(sl_multi *m, const sl_put *p, const sl_header *headers, size_t nheaders, uint64_t *id,
                     unsigned *broker)
{
    if (!m || !p)
        return SL_EINVAL;
    int keyed = p->key && p->key[0];
    unsigned i = sl_multi_route(m, p->key, p->tag);
    int rc = SL_ECONNECT;
    for (unsigned tries = 0; tries < (keyed ? 1u : m->n); tries++, i = (i + 1) % m->n) {
        if (!keyed && tries && m->skip_until_ns[i] > now_ns())
            continue;
        rc = sl_send_ex(m->c[i], p, headers, nheaders, id);
        if (!unreachable(rc)) {
            if (broker)
                *broker = i;
            return rc;
        }
        m->skip_until_ns[i] = now_ns() + SKIP_NS;
    }
    return rc;
}
