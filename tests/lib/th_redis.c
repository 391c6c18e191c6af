/*
 * th_redis.c - start, query and stop a test's own redis-server.
 */
#include "th_redis.h"

#include "harness.h"

#include <hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int th_redis_start(th_redis *r, const char *dir, const char *const *extra)
{
    char log[400];
    const char *argv[24] = {"redis-server", "--port", "0", "--unixsocket", r->sock, "--save", "", "--appendonly", "no"};
    int n = 9;
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", dir);
    snprintf(r->url, sizeof r->url, "unix://%s", r->sock);
    snprintf(log, sizeof log, "%s/redis.log", dir);
    for (int i = 0; extra && extra[i] && n < 22; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    proc_spec s = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true, .die_with_parent = true};
    if (proc_start(&r->p, "redis-server", &s) != 0)
        return -1;
    for (int i = 0; i < 400; i++) { /* bounded: 10 s */
        redisReply *rep = th_redis_cmd(r, "PING");
        int up = rep != NULL; /* PONG, or NOAUTH with --requirepass: either way it serves */
        if (rep)
            freeReplyObject(rep);
        if (up)
            return 0;
        if (!proc_running(&r->p))
            return -1;
        nanosleep(&(struct timespec){0, 25000000}, NULL);
    }
    th_redis_stop(r);
    return -1;
}

void th_redis_stop(th_redis *r)
{
    if (r->p.pid > 0)
        kill(r->p.pid, SIGCONT);
    proc_stop(&r->p, 5000);
}

void *th_redis_cmd(const th_redis *r, const char *fmt, ...)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectUnixWithTimeout(r->sock, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    va_list ap;
    va_start(ap, fmt);
    void *rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return rep;
}

void th_redis_hget(const th_redis *r, const char *key, const char *field, char *out, size_t cap)
{
    redisReply *rep = th_redis_cmd(r, "HGET %s %s", key, field);
    out[0] = '\0';
    if (rep && rep->type == REDIS_REPLY_STRING)
        snprintf(out, cap, "%s", rep->str);
    if (rep)
        freeReplyObject(rep);
}

long th_redis_wait_hget(const th_redis *r, const char *key, const char *field, const char *want,
                        unsigned timeout_ms)
{
    uint64_t t0 = th_now_ms();
    char v[256];
    while (th_now_ms() - t0 <= timeout_ms) {
        th_redis_hget(r, key, field, v, sizeof v);
        if (!strcmp(v, want))
            return (long)(th_now_ms() - t0);
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return -1;
}

const char *th_redis_script_path(void)
{
    return "broker/coord/coord.lua";
}
