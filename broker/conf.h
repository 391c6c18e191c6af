/*
 * conf.h - the broker's configuration: what sluiced was started with.
 */
#ifndef SLUICE_CONF_H
#define SLUICE_CONF_H

#include <stdint.h>

#include "proto.h"

#define CONF_MAX_TAG_RULES 64

/* A tag rule: messages whose tag matches the glob go to level. */
typedef struct conf_tag_rule {
    char pattern[PROTO_MAX_TAG + 1];
    unsigned level;
} conf_tag_rule;

typedef struct conf {
    char data_dir[4096];
    char listen[1024];
    unsigned levels;                                      /* 1..16 */
    char level_names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1];
    unsigned default_level;
    uint32_t lease_ms;
    uint32_t ack_flush_ms;                                /* longest an ACK's delete waits for a commit */
    uint32_t max_attempts;
    uint32_t heartbeat_ms;
    uint64_t map_bytes;
    uint32_t max_body;
    unsigned soft_limit_pct;                              /* refuse PUT above this map use */
    unsigned overdue_share_pct;                           /* most overdue picks per 100 */
    uint32_t throttle_backoff_ms;                         /* pause after THROTTLED without retry-after */
    uint32_t breaker_threshold_pct;                       /* 0: no circuit breaker */
    uint32_t breaker_window;
    uint32_t breaker_cooldown_ms;
    uint64_t idem_window_ms;                              /* how long an idempotency key is remembered */
    uint64_t level_max_messages;                          /* per level; 0 = no limit */
    uint64_t level_max_bytes;                             /* per level, pages on disk; 0 = no limit */
    uint32_t consumer_max_inflight;                       /* deliveries one consumer may hold */
    uint64_t map_max_bytes;                               /* the map grows up to this */
    conf_tag_rule tag_rules[CONF_MAX_TAG_RULES];
    unsigned ntag_rules;
    int tag_rules_override;                               /* a matching rule beats an explicit level */
} conf;

/* conf_defaults fills the embedded defaults: ./sluice-data,
 * tcp://127.0.0.1:7470, three levels high/normal/low (default normal), 30 s
 * leases, 5 attempts, 1 s heartbeats, 8 GiB map, 1 MiB bodies. */
void conf_defaults(conf *cfg);

#endif /* SLUICE_CONF_H */
