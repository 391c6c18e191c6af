/*
 * scen.h - `sluice-bench --scenario`: load scenarios run end to end on this
 * machine, against a broker and a throttled sink the command starts itself,
 * with a CSV row per second, a chart and a printed summary.
 *
 * This header is also the ground the scenario files (scen_*.c) share:
 * the options of a run, the stop flag that SIGINT and SIGTERM set, the
 * monotonic clock and messages on stderr. Every function here may be called
 * from any thread.
 */
#ifndef SLUICE_SCEN_H
#define SLUICE_SCEN_H

#include <stdbool.h>
#include <stdint.h>


#define SCEN_NS_PER_S   INT64_C(1000000000)
#define SCEN_NS_PER_MS  INT64_C(1000000)
#define SCEN_LEVELS     3      /* the broker's default levels: high, normal, low */
#define SCEN_PATH_BYTES 512
#define SCEN_MAX_SECONDS 3600  /* the longest --seconds */

/* One run: what the command line asked for, resolved. */
typedef struct scen_opts {
    const char *scenario;
    char out[SCEN_PATH_BYTES]; /* the output directory, created */
    char bin[SCEN_PATH_BYTES]; /* the directory holding sluiced, sluice-sink and sluice */
    int seconds;                    /* 0: the scenario's default */
    unsigned seed;                  /* for the producers' random sleeps */
    bool inproc;                    /* consumer threads in this process, not `consume --post` */
    uint32_t sink_burst;            /* the simulator's burst; 0: the scenario's default */
    uint32_t broker_burst;          /* the broker's sink burst, in messages; 0: the default */
} scen_opts;

/* scen_main runs `sluice-bench --scenario ...` with main's argc and argv. Exit status 0 when the
 * scenario ran and every check it makes passed, 1 when a check failed or
 * something could not be started, stopped or written, 2 for a usage error. */
int scen_main(int argc, char **argv);

/* scen_now_ns reads CLOCK_MONOTONIC in nanoseconds: the clock the sink
 * writes in its log, so times from both can be subtracted. */
int64_t scen_now_ns(void);

/* scen_stopping tells whether SIGINT or SIGTERM asked the run to stop.
 * Every loop looks at it. */
bool scen_stopping(void);

/* scen_sleep_until sleeps until the monotonic time deadline_ns, or
 * less when a signal arrives. */
void scen_sleep_until(int64_t deadline_ns);

/* scen_fail writes "sluice-bench: scenario: MESSAGE" on stderr and returns -1,
 * so that an error is reported and returned in one statement. */
int scen_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* scen_note writes "# MESSAGE" on stderr: progress, kept off stdout,
 * which carries the summary. */
void scen_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* SLUICE_SCEN_H */
