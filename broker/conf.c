/*
 * conf.c - the broker's settings: their embedded defaults.
 */
#include "conf.h"

#include <stdio.h>
#include <string.h>

void conf_defaults(conf *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    strcpy(cfg->data_dir, "./sluice-data");
    strcpy(cfg->listen, "tcp://127.0.0.1:7470");
    cfg->levels = 3;
    strcpy(cfg->level_names[0], "high");
    strcpy(cfg->level_names[1], "normal");
    strcpy(cfg->level_names[2], "low");
    for (unsigned l = 3; l < PROTO_MAX_LEVELS; l++)
        snprintf(cfg->level_names[l], sizeof cfg->level_names[l], "p%u", l);
    cfg->default_level = 1;
    cfg->lease_ms = 30000;
    cfg->ack_flush_ms = 10;
    cfg->max_attempts = 5;
    cfg->heartbeat_ms = 1000;
    cfg->map_bytes = 8ULL << 30;
    cfg->max_body = 1u << 20;
    cfg->soft_limit_pct = 90;
    cfg->overdue_share_pct = 50;
    cfg->throttle_backoff_ms = 1000;
    cfg->breaker_threshold_pct = 50;
    cfg->breaker_window = 20;
    cfg->breaker_cooldown_ms = 5000;
    cfg->idem_window_ms = 300000;
    cfg->consumer_max_inflight = 10000;
}
