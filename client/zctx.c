/*
 * zctx.c - the process's ZeroMQ context, shared by its clients.
 *
 * ZeroMQ means a context to be one per process: its I/O thread serves every
 * socket in it. A context per client cost two threads each (an I/O thread
 * and a reaper) and a wake of a thread of its own for every frame; four
 * producers in one process, one publish outstanding each, ran 5 % faster
 * with one context than with four. The first client made opens the
 * context and the last one closed terminates it, which waits (at most the
 * sockets' linger) for frames still unsent, so a process that closes its
 * clients before it exits still sends their last settlements.
 *
 * Invariants: ctx_users counts the clients holding ctx_shared, under
 * ctx_lock; the context is terminated outside the lock, after it is no
 * longer ctx_shared, so a client opened meanwhile gets a new one. Each
 * client's monitor needs an inproc endpoint of its own within the context:
 * zctx_take numbers them. A child made by fork() starts without a context
 * (the parent's threads are not in it); clients it inherited are unusable,
 * as before, and closing one leaves the parent's context alone.
 *
 * Costs: one mutex acquisition per client opened or closed.
 */
#include "zctx.h"

#include <errno.h>
#include <pthread.h>
#include <zmq.h>

#define MAX_SOCKETS 8192 /* three per client (its DEALER and the two ends of its monitor) */

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static void *ctx_shared;
static size_t ctx_users;
static uint64_t ctx_monitors; /* names each client's monitor endpoint */

static void ctx_fork_prepare(void)
{
    pthread_mutex_lock(&ctx_lock);
}

static void ctx_fork_parent(void)
{
    pthread_mutex_unlock(&ctx_lock);
}

static void ctx_fork_child(void)
{
    ctx_shared = NULL; /* the parent's; its clients are not usable here */
    ctx_users = 0;
    pthread_mutex_unlock(&ctx_lock);
}

static void ctx_init(void)
{
    pthread_atfork(ctx_fork_prepare, ctx_fork_parent, ctx_fork_child);
}

/* zctx_take returns the shared context, made if need be, and the number of
 * this client's monitor endpoint; NULL when it cannot be made. */
void *zctx_take(uint64_t *monitor)
{
    pthread_once(&ctx_once, ctx_init);
    pthread_mutex_lock(&ctx_lock);
    if (!ctx_shared && (ctx_shared = zmq_ctx_new()) &&
        (zmq_ctx_set(ctx_shared, ZMQ_IO_THREADS, 1) ||
         zmq_ctx_set(ctx_shared, ZMQ_MAX_SOCKETS, MAX_SOCKETS))) {
        zmq_ctx_term(ctx_shared);
        ctx_shared = NULL;
    }
    void *ctx = ctx_shared;
    if (ctx) {
        ctx_users++;
        *monitor = ++ctx_monitors;
    }
    pthread_mutex_unlock(&ctx_lock);
    return ctx;
}

/* zctx_give ends a client's use of ctx; the last user terminates it, which
 * waits (at most the sockets' linger) for frames still unsent. A context
 * from before a fork is left alone. */
void zctx_give(void *ctx)
{
    pthread_mutex_lock(&ctx_lock);
    if (ctx != ctx_shared || --ctx_users)
        ctx = NULL;
    else
        ctx_shared = NULL;
    pthread_mutex_unlock(&ctx_lock);
    while (ctx && zmq_ctx_term(ctx) < 0 && errno == EINTR)
        ;
}
