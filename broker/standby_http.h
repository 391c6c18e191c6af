/*
 * standby_http.h - a standby's HTTP server and the figures it serves
 * (standby_http.c).
 */
#ifndef SLUICE_STANDBY_HTTP_H
#define SLUICE_STANDBY_HTTP_H

#include <stdint.h>

#include "conf.h"

struct ha_view;
struct ha_stby_stats;
typedef struct standby_http standby_http;

/* standby_http_open serves --http for a standby (nothing when cfg->http is
 * empty: *out NULL and SL_OK); promotions is the times this node went
 * from standby to primary (kept across its restarts in place, main.c).
 * SL_OK, or http_open's error (logged). */
int standby_http_open(const conf *cfg, uint64_t promotions, standby_http **out);

/* standby_http_tick publishes the standby's figures, from the last answer
 * of Redis (v) and the stream's (ss), once every HTTP_PUBLISH_NS; cheap
 * otherwise. The standby's loop, at every pass; accepts h NULL. */
void standby_http_tick(standby_http *h, uint64_t now_ns, const struct ha_view *v,
                       const struct ha_stby_stats *ss);

/* standby_http_close stops the server (before a restart in place, which
 * serves the same address); accepts NULL, NULLs *hp. */
void standby_http_close(standby_http **hp);

#endif /* SLUICE_STANDBY_HTTP_H */
