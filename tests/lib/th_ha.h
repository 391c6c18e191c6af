/*
 * th_ha.h - the set-up every high-availability test program shares
 * (th_ha.c): a fresh directory, the two nodes' replication endpoints in
 * it, and a real redis-server there deciding which node is primary.
 */
#ifndef SLUICE_TH_HA_H
#define SLUICE_TH_HA_H

#include <stddef.h>

#include "harness.h"
#include "th_redis.h"

#define TH_HA_REPL_BYTES 128

/* th_ha_arm arms alarm_s, makes a fresh directory from tmpl (mkdtemp: it
 * ends in XXXXXX) into dir (dir_size bytes), writes the two nodes'
 * ipc:// replication endpoints in it into repl, and starts redis there.
 * Returns 0 or -1. */
int th_ha_arm(char *dir, size_t dir_size, const char *tmpl, char repl[2][TH_HA_REPL_BYTES], th_redis *redis,
              unsigned alarm_s);

/* th_ha_disarm disarms the alarm, stops redis and removes dir. */
void th_ha_disarm(const char *dir, th_redis *redis);

/* th_ha_serving waits up to timeout_ms for b to answer STATS as a
 * primary, asking every 50 ms on a fresh client (with o's keys when o is
 * not NULL; a 300 ms timeout), and returns level 1's depth, or -1 when it
 * never did; *took_ms (may be NULL) gets the time it took. */
long long th_ha_serving(const th_broker *b, const sl_options *o, unsigned timeout_ms, long *took_ms);

/* th_ha_pause_ms sleeps ms milliseconds. */
void th_ha_pause_ms(unsigned ms);

#endif /* SLUICE_TH_HA_H */
