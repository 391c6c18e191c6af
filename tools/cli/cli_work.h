/*
 * cli_work.h - what one `sluice consume` worker does with a job, and the
 * state a consumer shares with its workers.
 */
#ifndef SLUICE_CLI_WORK_H
#define SLUICE_CLI_WORK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_core.h"
#include "cli_post.h"

typedef struct job {
    sl_delivery *d;
    uint32_t delay_ms; /* NACK: redeliver after this; THROTTLED: the pause
                          asked for (0: the broker's default) */
    char why[384];     /* REFUSED: the reason the dead letter records (--exec: with a line of stderr) */
} job;

typedef struct consumer {
    cli_core *g;
    const char *cmd;           /* for messages: "consume", or "consume (ENDPOINT)" with several */
    pthread_mutex_t *out_lock; /* a worker prints one whole line under it (shared by brokers) */
    atomic_long *settled;      /* settled messages, over every broker's consumer */
    bool signals_set;          /* the stop signals are already handled */
    /* read by the workers, fixed before they start */
    const char *exec;
    httpc *http;      /* --post: the target, shared by every broker's consumer */
    cli_post post;    /* --post: the target and this consumer's pacer */
    bool verbose;
    unsigned nlevels;
    char level_names[SL_MAX_LEVELS][72];
    /* the main thread's */
    unsigned credit;  /* the least window, from -c */
    unsigned workers; /* the crew's size */
    unsigned share;   /* the pool share the crew was last matched to */
    size_t held;      /* received and not yet settled */
    int64_t last_ms; /* when a message last arrived or was settled */
    bool broken;     /* settling failed: settle no more */
    bool was_connected; /* the connection was up once */
    int64_t lost_ms;    /* when it was seen down, 0 while it is up */
} consumer;


/* cli_work_run handles one job on a worker thread (a cli_crew_fn; ctx is the
 * consumer): a delivery is POSTed, given to the command, or printed as one
 * whole line under out_lock. It never touches the client. Returns a
 * CLI_OUTCOME_*. */
int cli_work_run(void *ctx, void *arg);

/* cli_work_warm opens a new worker thread's HTTP connection with --post (a
 * cli_crew_start_fn; ctx is the consumer), before it takes a job. Returns
 * 0, or -1 when no answer came (its POSTs then try again on their own). */
int cli_work_warm(void *ctx);

/* cli_work_drop frees a delivery's job. */
void cli_work_drop(void *arg);

#endif /* SLUICE_CLI_WORK_H */
