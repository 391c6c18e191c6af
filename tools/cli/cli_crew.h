/*
 * cli_crew.h - a crew of worker threads that take jobs one at a time.
 *
 * The thread that owns the crew pushes jobs, which idle workers take in the
 * order pushed, and takes back each finished job with the result its worker
 * returned. The number of workers changes while jobs run: a worker that is
 * no longer wanted finishes the job it holds, then exits. Only the owning
 * thread may call these functions; the workers only run the job function.
 *
 * Workers start with the asynchronous signals blocked, so that signals such
 * as SIGINT reach the owning thread. A job that starts a child process must
 * unblock them in the child.
 */
#ifndef SLUICE_CLI_CREW_H
#define SLUICE_CLI_CREW_H

#include <stdbool.h>
#include <stddef.h>

/* A job function: runs on a worker thread, returns the job's result. */
typedef int (*cli_crew_fn)(void *ctx, void *job);

/* A start function: runs on each new worker thread before it takes a job
 * (to open its connection, say); returns 0, or nonzero when it failed. */
typedef int (*cli_crew_start_fn)(void *ctx);

typedef struct cli_crew cli_crew;

/* cli_crew_new makes a crew with no workers yet that runs fn(ctx, job) for
 * each job, with room for up to max_workers (> 0) threads; every worker,
 * the first ones and those a later resize adds, runs start(ctx) first
 * (start may be NULL). Returns 0 with *out set, or an errno value. */
int cli_crew_new(cli_crew_fn fn, cli_crew_start_fn start, void *ctx, unsigned max_workers,
                 cli_crew **out);

/* cli_crew_resize asks for workers threads (at most max_workers). Growing
 * starts threads at once; shrinking lets the surplus workers finish their
 * jobs and exit. Returns the number of workers the crew now aims for, which
 * is lower than asked when max_workers caps it or a thread could not start
 * (errno then tells why). */
unsigned cli_crew_resize(cli_crew *w, unsigned workers);

/* cli_crew_started waits up to wait_ms until every worker started so far
 * has run its start function. Returns how many of those start functions
 * failed since the last call (0 when all were fine or none ran); sets
 * *pending to how many are still running theirs (0 unless it timed out). */
unsigned cli_crew_started(cli_crew *w, int wait_ms, unsigned *pending);

/* cli_crew_push queues job for the next idle worker. Returns 0 or ENOMEM. */
int cli_crew_push(cli_crew *w, void *job);

/* cli_crew_wait waits up to wait_ms (0: not at all) until a finished job is
 * ready to take. Returns whether one is. */
bool cli_crew_wait(cli_crew *w, int wait_ms);

/* cli_crew_take takes the oldest finished job and its result, without
 * waiting. Returns false when none is ready. */
bool cli_crew_take(cli_crew *w, void **job, int *result);

/* cli_crew_stop lets every worker finish the job it holds, starts no new
 * ones, and joins all threads. Finished jobs stay for cli_crew_take; queued
 * jobs stay unstarted. */
void cli_crew_stop(cli_crew *w);

/* cli_crew_destroy stops the crew if needed, passes every job it still holds
 * (queued or finished and not taken) to drop (may be NULL), frees it and
 * sets *w to NULL; accepts NULL. */
void cli_crew_destroy(cli_crew **w, void (*drop)(void *job));

#endif /* SLUICE_CLI_CREW_H */
