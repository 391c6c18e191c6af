/*
 * cli_coord.c - a shared sink's capacity lease, as text and as JSON: whether
 * the broker shares its sink, the lease's state and Redis's reachability,
 * slices held, the reserved and granted rates, when the grant expires, the
 * epoch, and whether the operator's rule (every reserved rate together no
 * more than the sink's limit) holds: "learning" while it cannot be told
 * (Redis's first lease period, or a limit set on another broker that has
 * not reached this one yet: within its next renewal, TTL/3), never a false
 * "DOES NOT FIT".
 */
#include "cli_coord.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli_text.h"

/* learning tells whether c cannot judge the reserved rates yet: Redis's
 * first lease period (state "learning"), or no limit known here yet (set on
 * another broker, it arrives with this one's next renewal). */
static bool learning(const sl_coord_info *c)
{
    return strcmp(c->state, "learning") == 0 || c->limit_milli == 0;
}

void cli_coord_json(const sl_coord_info *c)
{
    if (!c->coordinated) {
        printf(",\"coord\":null");
        return;
    }
    printf(",\"coord\":{\"coordinated\":true,\"state\":");
    cli_text_json_string(c->state);
    printf(",\"reachable\":%s,\"slices_held\":%" PRIu64 ",\"slices\":%" PRIu64 ",\"reserved_milli\":%" PRIu64
           ",\"granted_milli\":%" PRIu64 ",\"lease_left_ms\":%" PRIu64 ",\"epoch\":%" PRIu64
           ",\"limit_milli\":%" PRIu64 ",\"sum_reserved_milli\":%" PRIu64 ",\"reserved_fits\":%s"
           ",\"brokers\":%" PRIu64 ",\"redis_ops\":%" PRIu64 "}",
           c->reachable ? "true" : "false", c->slices_held, c->slices, c->reserved_milli, c->granted_milli,
           c->lease_left_ms, c->epoch, c->limit_milli, c->sum_reserved_milli,
           learning(c) ? "null" : c->sum_reserved_milli <= c->limit_milli ? "true" : "false", c->brokers, c->ops);
}

void cli_coord_print(const sl_coord_info *c)
{
    char reserved[40], granted[40], limit[40], sum[40];
    if (!c->coordinated)
        return;
    cli_text_rate_format(c->reserved_milli, "0/s", reserved, sizeof reserved);
    cli_text_rate_format(c->granted_milli, "0/s", granted, sizeof granted);
    cli_text_rate_format(c->limit_milli, "unset", limit, sizeof limit);
    cli_text_rate_format(c->sum_reserved_milli, "0/s", sum, sizeof sum);
    printf("shared     yes: %s, Redis %s, epoch %" PRIu64 "\n", c->state, c->reachable ? "reachable" : "unreachable",
           c->epoch);
    printf("slices     %" PRIu64 " of %" PRIu64 " held, the grant expires in %" PRIu64 " ms\n", c->slices_held,
           c->slices, c->lease_left_ms);
    printf("reserved   %s + granted %s\n", reserved, granted);
    printf("limit      %s for %" PRIu64 " brokers; reserved in all %s: %s\n", limit, c->brokers, sum,
           learning(c) ? "learning (the limit and the brokers are known after the first lease period)"
           : c->sum_reserved_milli <= c->limit_milli ? "fits (reserved + shared <= limit)"
                                                     : "DOES NOT FIT: lower --reserved-rate or raise the rate");
}
