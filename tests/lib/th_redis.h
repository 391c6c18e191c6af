/*
 * th_redis.h - a real redis-server for a test: on a Unix socket in the
 * test's directory (--port 0, --save ''), ready when it answers PING.
 */
#ifndef SLUICE_TH_REDIS_H
#define SLUICE_TH_REDIS_H

#include <stddef.h>

#include "proc.h"

typedef struct th_redis {
    proc p;
    char sock[300];     /* DIR/redis.sock */
    char url[320];      /* unix://DIR/redis.sock, for sluiced --coord */
} th_redis;

/* th_redis_start starts redis-server in dir (extra arguments may be NULL)
 * and waits up to 10 s for PING. Returns 0 or -1. */
int th_redis_start(th_redis *r, const char *dir, const char *const *extra);

/* th_redis_stop stops it (SIGTERM, then SIGKILL); SIGCONT first if stopped. */
void th_redis_stop(th_redis *r);

/* th_redis_cmd runs one command (printf-style, as redisCommand) and returns
 * the reply (freeReplyObject it), or NULL when Redis does not answer. */
void *th_redis_cmd(const th_redis *r, const char *fmt, ...);

/* th_redis_hget reads field of the hash at key into out ("" when absent or
 * when Redis does not answer). */
void th_redis_hget(const th_redis *r, const char *key, const char *field, char *out, size_t cap);

/* th_redis_wait_hget waits up to timeout_ms (looking every 20 ms) for field
 * of the hash at key to read want. Returns the ms it took, or -1. */
long th_redis_wait_hget(const th_redis *r, const char *key, const char *field, const char *want,
                        unsigned timeout_ms);

/* th_redis_script_path returns the lease script's path in the checkout. */
const char *th_redis_script_path(void);

#endif /* SLUICE_TH_REDIS_H */
