/*
 * sink_dedup.h - sluice-sink --dedup-header NAME: a service that applies
 * each idempotency key once. A request admitted by the limiters whose
 * header NAME holds a key not seen before is applied; one whose key was
 * applied already is a repeat, answered 200 as well (the service absorbs
 * it: its effect happened once) and counted. What a consumer that crashed
 * after the service applied a request, but before its ACK, looks like from
 * the service's side.
 */
#ifndef SLUICE_SINK_DEDUP_H
#define SLUICE_SINK_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#define SINK_DEDUP_KEY_BYTES 1024 /* a longer key is kept as its first this many bytes */

typedef struct sink_dedup {
    char header[128];  /* the header's name; "" when off */
    char **slots;      /* open addressing; each a malloc'd length-prefixed key, or NULL */
    size_t cap, count; /* slots (a power of two), keys held */
    uint64_t applied;  /* requests applied: a new key, or no key at all */
    uint64_t repeats;  /* requests whose key was applied before: absorbed */
    uint64_t unkeyed;  /* of applied, those without the header */
} sink_dedup;

/* sink_dedup_init turns d on for the header named header (or leaves it off
 * for NULL). Returns 0, or -1 when out of memory. */
int sink_dedup_init(sink_dedup *d, const char *header);

/* sink_dedup_on tells whether d counts anything. */
static inline int sink_dedup_on(const sink_dedup *d)
{
    return d->header[0] != '\0';
}

/* sink_dedup_note counts one admitted request with key[0..len) (key NULL:
 * the request had no such header). Returns 1 when it is applied (a new
 * key, or none), 0 for a repeat; -1 when out of memory (counted as
 * applied, not remembered). Not thread-safe: the sink's lock is held. */
int sink_dedup_note(sink_dedup *d, const char *key, size_t len);

/* sink_dedup_fini frees every key. */
void sink_dedup_fini(sink_dedup *d);

#endif /* SLUICE_SINK_DEDUP_H */
