/*
 * sink_keys.h - the per-key limits of sluice-sink: one GCRA limiter per key
 * (a tenant, say), created on a key's first request, beside the sink's
 * global limiter; and where a request's key comes from (a header or the
 * last segment of the URL path). Pure apart from memory: every call takes
 * `now_ns` from the caller, and the caller serialises calls on one table.
 */
#ifndef SLUICE_SINK_KEYS_H
#define SLUICE_SINK_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "sink_limit.h"

#define SINK_KEYS_KEY_BYTES 128    /* the longest key; a longer one is a bad request */
#define SINK_KEYS_MAX       100000 /* keys held at once; idle ones are forgotten first */
#define SINK_KEYS_TEXT_BYTES (4 * SINK_KEYS_KEY_BYTES + 1) /* a key escaped by sink_keys_escape */

typedef enum sink_keys_source {
    SINK_KEYS_NONE = 0,  /* no per-key limit */
    SINK_KEYS_HEADER,    /* the value of a request header (--key-header NAME) */
    SINK_KEYS_PATH,      /* the last segment of the URL path (--key-path) */
} sink_keys_source;

/* What sink_keys_take decided. */
typedef enum sink_keys_verdict {
    SINK_KEYS_ADMITTED = 1, /* the key had a token; it is taken */
    SINK_KEYS_REFUSED = 0,  /* the key is over its limit; *wait_ns says how long for */
    SINK_KEYS_FULL = -1,    /* SINK_KEYS_MAX busy keys: this new key cannot be held */
} sink_keys_verdict;

typedef struct sink_keys_entry sink_keys_entry;

typedef struct sink_keys {
    uint32_t rate_per_s, burst; /* every key's limit */
    sink_keys_entry **buckets;  /* chained hash table, nbuckets heads */
    size_t nbuckets, count;
} sink_keys;

/* sink_keys_init makes an empty table whose keys each get rate_per_s
 * (1..SINK_LIMIT_MAX_RATE_PER_S) with burst (1..SINK_LIMIT_MAX_BURST).
 * Returns SL_OK, SL_EINVAL (t is then empty; sink_keys_fini is safe) or
 * SL_ENOMEM. */
int sink_keys_init(sink_keys *t, uint32_t rate_per_s, uint32_t burst);

/* sink_keys_fini frees every key; safe on a zeroed or finished table. */
void sink_keys_fini(sink_keys *t);

/* sink_keys_set changes every key's limit, each keeping the tokens it has
 * in use (as sink_limit_set). O(keys). Returns SL_OK or SL_EINVAL (t
 * unchanged). */
int sink_keys_set(sink_keys *t, uint32_t rate_per_s, uint32_t burst, uint64_t now_ns);

/* sink_keys_take asks key's limiter (key_len bytes, 1..SINK_KEYS_KEY_BYTES)
 * to admit one request at now_ns, making the limiter on the key's first
 * request. *wait_ns (may be NULL) is set on SINK_KEYS_REFUSED. */
sink_keys_verdict sink_keys_take(sink_keys *t, const char *key, size_t key_len, uint64_t now_ns,
                                 uint64_t *wait_ns);

/* sink_keys_give_back returns the token the last admitting sink_keys_take
 * of key took, when the global limit then refused the request: a request
 * refused anywhere costs no key anything. A key not held is ignored. */
void sink_keys_give_back(sink_keys *t, const char *key, size_t key_len);

/* sink_keys_from_path finds the key in a URL path: its last segment, not
 * empty ("/orders/acme" and "/orders/acme/" give "acme"). Returns its
 * length with *key pointing into path, or 0 when the path has none. */
size_t sink_keys_from_path(const char *path, const char **key);

/* sink_keys_escape writes key as the log and the X-Limit-Key header show
 * it into out (SINK_KEYS_TEXT_BYTES at least): bytes 0x21..0x7e as they
 * are except the backslash ("\\"), every other byte as "\xNN"; an empty
 * key as "-" and the key "-" as "\x2d". Returns the length written, NUL
 * excluded. */
size_t sink_keys_escape(const char *key, size_t key_len, char *out);

/* sink_keys_source_name returns "none", "header" or "path". */
const char *sink_keys_source_name(sink_keys_source source);

#endif /* SLUICE_SINK_KEYS_H */
