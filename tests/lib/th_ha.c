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

void th_ha_pause_ms(unsigned ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}
