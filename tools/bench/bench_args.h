/*
 * bench_args.h - sluice-bench's command line and the shape of its run: how
 * many producers and consumers, how deep the backlogs, how long each row.
 */
#ifndef SLUICE_BENCH_ARGS_H
#define SLUICE_BENCH_ARGS_H

#include <stdint.h>

#define DEFAULT_SECONDS     3
#define MAX_SECONDS         3600
#define PRODUCERS           4
#define CONSUMERS           4
#define WINDOW_MSGS         100       /* row 3: publishes outstanding */
#define DRAIN_MSGS          100000    /* row 4: backlog at least this deep */
#define DRAIN_MSGS_QUICK    20000
#define TOPUP_TIMEOUT_S     300
#define DISPATCH_MSGS       80000     /* row 6 */
#define DISPATCH_MSGS_QUICK 20000
#define STARVE_MSGS_QUICK   10000     /* row 7; the full run sizes it by a probe */
#define LMDB_BATCH_PUTS     100

typedef struct bench_args {
    const char *endpoint;   /* -b, else $SLUICE_BROKER; NULL for the default or with --spawn */
    const char *spawn;      /* --spawn: the sluiced to start, or NULL */
    const char *slowdisk;   /* --slowdisk: the slow-disk shim, or NULL */
    int seconds;
    int quick;              /* --quick */
    int tenants_only;       /* --tenants: only the tenant rows */
    int sink_only;          /* --sink: only the rows of the sink used at its limit */
    int force;              /* --force: run beside a broker's own messages and consumers */
    int http_only;          /* --http: only the HTTP server's rows */
    int ha_only;            /* --ha: only the high-availability rows */
    int peer_only;          /* --peer: only the rows beside beanstalkd, and their ratios */
    uint64_t drain_msgs, dispatch_msgs, starve_msgs; /* starve_msgs 0: sized by a probe */
} bench_args;

/* bench_args_parse fills *b (zeroed by the caller) from the command line.
 * It prints the help and exits 0 on --help, and exits 2 with a message on
 * a usage error. */
void bench_args_parse(int argc, char **argv, bench_args *b);

#endif /* SLUICE_BENCH_ARGS_H */
