/*
 * cli_crew.c - worker threads that take jobs one at a time.
 *
 * One mutex guards everything shared: two FIFO lists of nodes (jobs waiting
 * for a worker, and finished jobs with their results), the number of workers
 * wanted and running, and the stop flag. Two condition variables go with it:
 * "work" wakes workers (a job was queued, the crew shrank, or it stops) and
 * "done" wakes the owner (a job finished). A node moves from the first list
 * to the second, so a job costs one allocation however long it runs.
 *
 * Workers. Each thread has a slot: FREE, RUNNING, or EXITED (returned, not
 * yet joined). "running" counts the RUNNING workers that have not decided to
 * exit. A worker decides only when idle: before taking a job it compares
 * running with the number wanted and exits if it is surplus. So shrinking
 * never interrupts a job, and growing again before a surplus worker has
 * noticed simply keeps it. The owner joins EXITED slots whenever it resizes
 * or stops; by then their threads have released the mutex for good, so the
 * join is immediate.
 *
 * Starting. A new worker runs the start function (if any) before it takes
 * its first job, whether it is one of the first or one a resize added, and
 * "starting" counts those still at it: the owner waits for it to reach 0
 * (cli_crew_started) before it asks for the work those workers will take,
 * so that, with --post, no request waits for a connection to open while
 * the ones after it do not.
 *
 * The owner waits on "done" against CLOCK_MONOTONIC, so a clock change
 * cannot stretch or cut its waits.
 */
#include "cli_crew.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct node {
    void *job;
    int result;
    struct node *next;
} node;

typedef struct list {
    node *head, *tail;
} list;

typedef enum slot_state { SLOT_FREE, SLOT_RUNNING, SLOT_EXITED } slot_state;

typedef struct slot {
    pthread_t thread;
    slot_state state;
    cli_crew *crew;
} slot;

struct cli_crew {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    list queued, finished;
    unsigned wanted, running;
    unsigned starting, start_failed; /* running their start function; failed since asked */
    bool stopping;
    cli_crew_fn fn;
    cli_crew_start_fn start;
    void *ctx;
    unsigned max_workers;
    slot slots[];
};

static void list_push(list *l, node *n)
{
    n->next = NULL;
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
}

static node *list_pop(list *l)
{
    node *n = l->head;
    if (n) {
        l->head = n->next;
        if (!l->head)
            l->tail = NULL;
    }
    return n;
}

static void *worker_main(void *arg)
{
    slot *s = arg;
    cli_crew *w = s->crew;
    int failed = w->start ? w->start(w->ctx) : 0; /* fixed before any worker runs */
    pthread_mutex_lock(&w->lock);
    if (w->start) {
        w->starting--;
        w->start_failed += failed != 0;
        pthread_cond_broadcast(&w->done);
    }
    for (;;) {
        while (!w->queued.head && !w->stopping && w->running <= w->wanted)
            pthread_cond_wait(&w->work, &w->lock);
        if (w->stopping || w->running > w->wanted)
            break;
        node *n = list_pop(&w->queued);
        pthread_mutex_unlock(&w->lock);
        n->result = w->fn(w->ctx, n->job);
        pthread_mutex_lock(&w->lock);
        list_push(&w->finished, n);
        pthread_cond_signal(&w->done);
    }
    w->running--;
    s->state = SLOT_EXITED;
    pthread_cond_signal(&w->done); /* cli_crew_stop may be waiting for it */
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* reap joins the workers that have exited. Called with the lock held. */
static void reap(cli_crew *w)
{
    for (unsigned i = 0; i < w->max_workers; i++) {
        if (w->slots[i].state == SLOT_EXITED) {
            pthread_join(w->slots[i].thread, NULL);
            w->slots[i].state = SLOT_FREE;
        }
    }
}

/* worker_start starts a thread in a free slot, with the asynchronous
 * signals blocked. Called with the lock held. Returns 0 or an errno value. */
static int worker_start(cli_crew *w)
{
    slot *s = NULL;
    for (unsigned i = 0; i < w->max_workers && !s; i++)
        if (w->slots[i].state == SLOT_FREE)
            s = &w->slots[i];
    if (!s)
        return EAGAIN;
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    sigset_t blocked, old;
    sigfillset(&blocked);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&blocked, faults[i]);
    pthread_sigmask(SIG_BLOCK, &blocked, &old);
    s->crew = w;
    int err = pthread_create(&s->thread, NULL, worker_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err)
        return err;
    s->state = SLOT_RUNNING;
    w->running++;
    w->starting += w->start != NULL;
    return 0;
}

int cli_crew_new(cli_crew_fn fn, cli_crew_start_fn start, void *ctx, unsigned max_workers,
                 cli_crew **out)
{
    *out = NULL;
    if (max_workers == 0)
        return EINVAL;
    cli_crew *w = calloc(1, sizeof *w + max_workers * sizeof w->slots[0]);
    if (!w)
        return ENOMEM;
    pthread_condattr_t attr;
    int err = pthread_condattr_init(&attr);
    if (err) {
        free(w);
        return err;
    }
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, &attr);
    pthread_condattr_destroy(&attr);
    w->fn = fn;
    w->start = start;
    w->ctx = ctx;
    w->max_workers = max_workers;
    *out = w;
    return 0;
}

unsigned cli_crew_resize(cli_crew *w, unsigned workers)
{
    int err = 0;
    pthread_mutex_lock(&w->lock);
    w->wanted = workers < w->max_workers ? workers : w->max_workers;
    reap(w);
    while (!w->stopping && w->running < w->wanted && !(err = worker_start(w)))
        ;
    if (w->running < w->wanted)
        w->wanted = w->running;       /* could not start them all */
    pthread_cond_broadcast(&w->work); /* surplus workers: time to go */
    unsigned wanted = w->wanted;
    pthread_mutex_unlock(&w->lock);
    if (err)
        errno = err;
    return wanted;
}

int cli_crew_push(cli_crew *w, void *job)
{
    node *n = malloc(sizeof *n);
    if (!n)
        return ENOMEM;
    n->job = job;
    n->result = 0;
    pthread_mutex_lock(&w->lock);
    list_push(&w->queued, n);
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->lock);
    return 0;
}

/* deadline returns CLOCK_MONOTONIC's now plus wait_ms. */
static struct timespec deadline(int wait_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    return until;
}

unsigned cli_crew_started(cli_crew *w, int wait_ms, unsigned *pending)
{
    struct timespec until = deadline(wait_ms);
    pthread_mutex_lock(&w->lock);
    while (w->starting && wait_ms > 0 && pthread_cond_timedwait(&w->done, &w->lock, &until) != ETIMEDOUT)
        ;
    unsigned failed = w->start_failed;
    w->start_failed = 0;
    *pending = w->starting;
    pthread_mutex_unlock(&w->lock);
    return failed;
}

bool cli_crew_wait(cli_crew *w, int wait_ms)
{
    struct timespec until = deadline(wait_ms);
    pthread_mutex_lock(&w->lock);
    while (!w->finished.head && wait_ms > 0 &&
           pthread_cond_timedwait(&w->done, &w->lock, &until) != ETIMEDOUT)
        ;
    bool ready = w->finished.head != NULL;
    pthread_mutex_unlock(&w->lock);
    return ready;
}

bool cli_crew_take(cli_crew *w, void **job, int *result)
{
    pthread_mutex_lock(&w->lock);
    node *n = list_pop(&w->finished);
    pthread_mutex_unlock(&w->lock);
    if (!n)
        return false;
    *job = n->job;
    *result = n->result;
    free(n);
    return true;
}

void cli_crew_stop(cli_crew *w)
{
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->work);
    /* each worker marks its slot EXITED as it leaves, and says so on "done" */
    for (;;) {
        reap(w);
        bool alive = false;
        for (unsigned i = 0; i < w->max_workers && !alive; i++)
            alive = w->slots[i].state == SLOT_RUNNING;
        if (!alive)
            break;
        pthread_cond_wait(&w->done, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
}

void cli_crew_destroy(cli_crew **wp, void (*drop)(void *job))
{
    if (!wp || !*wp)
        return;
    cli_crew *w = *wp;
    cli_crew_stop(w);
    list *lists[] = {&w->queued, &w->finished};
    for (size_t k = 0; k < 2; k++) {
        node *n;
        while ((n = list_pop(lists[k]))) {
            if (drop)
                drop(n->job);
            free(n);
        }
    }
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->lock);
    free(w);
    *wp = NULL;
}
