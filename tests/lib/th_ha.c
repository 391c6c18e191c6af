/*
 * th_ha.c - the set-up every high-availability test program shares.
 */
#include "th_ha.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

int th_ha_arm(char *dir, size_t dir_size, const char *tmpl, char repl[2][TH_HA_REPL_BYTES], th_redis *redis,
              unsigned alarm_s)
{
    alarm(alarm_s);
    if ((size_t)snprintf(dir, dir_size, "%s", tmpl) >= dir_size || !mkdtemp(dir))
        return -1;
    for (int i = 0; i < 2; i++)
        snprintf(repl[i], TH_HA_REPL_BYTES, "ipc://%s/repl%d.sock", dir, i + 1);
    return th_redis_start(redis, dir, NULL);
}

void th_ha_disarm(const char *dir, th_redis *redis)
{
    alarm(0);
    th_redis_stop(redis);
    th_rmrf(dir);
}

long long th_ha_serving(const th_broker *b, const sl_options *o, unsigned timeout_ms, long *took_ms)
{
    uint64_t t0 = th_now_ms();
    while (th_now_ms() - t0 <= timeout_ms) {
        sl_client *c = NULL;
        sl_stats s;
        int rc = SL_EINVAL;
        if (o) {
            sl_options with = *o;
            with.timeout_ms = 300;
            rc = sl_connect(b->endpoint, &with, &c);
        } else {
            c = th_client(b, 300); /* (aborts rather than fail) */
            rc = SL_OK;
        }
        if (rc == SL_OK)
            rc = sl_stats_get(c, &s);
        sl_close(&c);
        if (rc == SL_OK) {
            if (took_ms)
                *took_ms = (long)(th_now_ms() - t0);
            return (long long)s.level[1].depth;
        }
        th_ha_pause_ms(50);
    }
    return -1;
}

void th_ha_pause_ms(unsigned ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}
