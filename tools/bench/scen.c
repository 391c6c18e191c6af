/*
 * scen.c - `sluice-bench --scenario NAME`: the load scenarios' command
 * line, and the ground its scenario files share.
 *
 * A scenario runs end to end on this machine and nowhere else: it starts
 * its own broker on an ipc:// endpoint in a temporary directory and its own
 * throttled sink (sluice-sink) on a free 127.0.0.1 port, so the global -b
 * is not used. The programs are the ones next to the running executable
 * (/proc/self/exe), so a build tree's bench runs that tree's broker.
 * Output goes to a directory (default ./bench-out/NAME): the CSV, the
 * gnuplot script and PNG, and the log of every process; the summary goes to
 * stdout, progress to stderr.
 *
 * This file parses the options, resolves the directories, catches SIGINT
 * and SIGTERM (the stop flag: every loop of every scenario looks at it, and
 * the scenario then stops what it started and still reports what it has)
 * and hands over to the scenario: scen_quiz.c (throttle-quiz,
 * priorities), scen_ingest.c (ingest), scen_shared.c (shared-sink),
 * scen_pace.c (pace, pace-stress, pace-exact, pace-429) or
 * scen_taglimits.c (tag-limits).
 */
#include "scen.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scen_ingest.h"
#include "scen_pace.h"
#include "scen_proc.h"
#include "scen_quiz.h"
#include "scen_shared.h"
#include "scen_taglimits.h"

#define BURST_MAX      100000 /* --sink-burst, --broker-burst */
#define SLEEP_SLICE_NS (100 * SCEN_NS_PER_MS) /* how often a sleeper looks at the stop flag */

enum { OPT_SCENARIO = 256, OPT_OUT, OPT_SECONDS, OPT_SEED, OPT_INPROC, OPT_SINK_BURST, OPT_BROKER_BURST };

static const char help_text[] =
"Usage: sluice-bench --scenario NAME [--out DIR] [--seconds S] [--seed N] [--inproc]\n"
"                          [--sink-burst B] [--broker-burst B]\n"
"\n"
"Run a load scenario end to end on this machine: start a broker (sluiced,\n"
"on an ipc:// endpoint in a temporary directory) and a throttled sink\n"
"(sluice-sink, on a free 127.0.0.1 port, logging every request), set the\n"
"broker's sink limits, start consumers that POST each message to the sink\n"
"(sluice consume --post), publish from producer threads, and record what\n"
"happens. Writes a CSV row per second, a chart (PNG, drawn by gnuplot) and\n"
"the logs to the output directory, and prints a summary.\n"
"\n"
"Scenarios:\n"
"  throttle-quiz  sink at 500/s (gcra), broker sink rate 500/s. 30 producers\n"
"                 each publish then sleep 0-99 ms (about 600/s), plus a 2 s\n"
"                 burst at 500/s every 17 s, and 3 s of silence every 21 s;\n"
"                 120 s, then the backlog drains. CSV columns: Second,\n"
"                 TotalRequests, SuccessRequests, FailRequests,\n"
"                 ExecutedRequests, AverageExecuteTime (ms, publish to the\n"
"                 sink's 200), Sink429, Backlog.\n"
"  priorities     throttle-quiz with the bursts on level 0, the steady load\n"
"                 on level 1 and a trickle of 5/s on level 2; adds per-level\n"
"                 executed and backlog columns.\n"
"  ingest         10,000 records of cost 10 into a sink allowing 20,000\n"
"                 units/s (2,000 requests/s): checks every record arrives\n"
"                 exactly once, none is throttled, and the broker's ETA;\n"
"                 then a naive retry loop (4 threads POSTing directly,\n"
"                 retrying at once on 429) for comparison.\n"
"  shared-sink    4 brokers sharing one sink at 2,000/s through capacity\n"
"                 leases in a redis-server of its own (reserved 100/s each),\n"
"                 each with its own backlog and consume --post consumer:\n"
"                 429s, the most arrivals in 1 s and 10 s windows against\n"
"                 rate x window + the brokers' bursts, utilisation while\n"
"                 backlogged, Redis commands per broker per second (40 s).\n"
"  pace           broker 190/s burst 5, sink 200/s burst 5, one consume --post\n"
"                 with 8 workers, 1,500 messages: 429s (target 0) and the\n"
"                 sink's utilisation (target >= 95 %), at the sink's log.\n"
"  pace-stress    the same beside stress-ng --cpu 2 (target >= 90 %).\n"
"  pace-exact     the broker exactly at the sink's 200/s burst 5, 10,000\n"
"                 messages: at most 1 x 429 per 10,000.\n"
"  pace-429       500/s; the sink answers one request 429 after 5 s: the\n"
"                 rate is back to >= 95 % within 3 s of it.\n"
"  tag-limits     level normal fair by tag, 1,000 tags (t0000..t0999) each\n"
"                 limited to 2/s burst 1 by a bucket of its own (tag set '*'\n"
"                 --max-rate 2 --burst 1 --each); the broker's sink 1,500/s\n"
"                 burst 10, the sink 1,500/s (gcra, burst 30) keyed on\n"
"                 X-Sluice-Tag; 2 consume --post x 32 workers. A backlog of\n"
"                 2 x S + 2 messages a tag, published first; S seconds of\n"
"                 load (default 30), then the drain. Per tag, the most\n"
"                 arrivals at the sink in any 1 s and 10 s window against\n"
"                 2 x window + 1, the worst tag and how many are over; 429s;\n"
"                 utilisation of the sink during the load (target >= 95 %);\n"
"                 exactly once. CSV columns: Second, Requests, Success,\n"
"                 Throttled, Backlog, Tags (distinct tags with a 200).\n"
"\n"
"Options:\n"
"  --scenario NAME  throttle-quiz, priorities, ingest, shared-sink, pace,\n"
"                   pace-stress, pace-exact, pace-429 or tag-limits\n"
"  --out DIR        output directory, created if needed (default\n"
"                   ./bench-out/NAME); earlier results in it are replaced\n"
"  --seconds S      length of the load, 1 to 3600 (default 120; 40 for\n"
"                   shared-sink, 30 for tag-limits); for ingest, the most\n"
"                   each half may take (default 60)\n"
"  --seed N         seed of the producers' random sleeps (default: the time;\n"
"                   printed)\n"
"  --inproc         consumers as threads in this process, with the same\n"
"                   HTTP client (libcurl), instead of sluice consume --post\n"
"                   processes\n"
"                   (the default when this sluice has no consume --post)\n"
"  --sink-burst B   the sink simulator's bucket depth, in requests (default:\n"
"                   20 for throttle-quiz and priorities, 50 for ingest,\n"
"                   80 for shared-sink, 30 for tag-limits)\n"
"  --broker-burst B the broker's sink burst, in messages (default 1: evenly\n"
"                   spaced requests; 10 for shared-sink and tag-limits)\n"
"\n"
"Charts need gnuplot (make deps installs it). Exit status: 0 when the run\n"
"finished and its checks passed, 1 when a check failed or something could\n"
"not be started, stopped or written, 2 for a usage error.\n";

static atomic_int stop_signal;

static void on_signal(int sig)
{
    atomic_store(&stop_signal, sig);
}

bool scen_stopping(void)
{
    return atomic_load(&stop_signal) != 0;
}

int64_t scen_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SCEN_NS_PER_S + ts.tv_nsec;
}

void scen_sleep_until(int64_t deadline_ns)
{
    for (int i = 0; i < 1000000 && !scen_stopping(); i++) {
        int64_t now = scen_now_ns();
        if (now >= deadline_ns)
            return;
        int64_t until = deadline_ns - now > SLEEP_SLICE_NS ? now + SLEEP_SLICE_NS : deadline_ns;
        struct timespec ts = {.tv_sec = (time_t)(until / SCEN_NS_PER_S),
                              .tv_nsec = (long)(until % SCEN_NS_PER_S)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}

int scen_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sluice-bench: scenario: %s\n", msg);
    return -1;
}

void scen_note(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "# %s\n", msg);
}

static void signals_catch(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

typedef int (*scenario_fn)(const scen_opts *o);

static int run_quiz(const scen_opts *o)
{
    return scen_quiz_run(o, false);
}

static int run_priorities(const scen_opts *o)
{
    return scen_quiz_run(o, true);
}

static const struct {
    const char *name;
    scenario_fn fn;
} scenarios[] = {
    {"throttle-quiz", run_quiz},
    {"priorities", run_priorities},
    {"ingest", scen_ingest_run},
    {"shared-sink", scen_shared_run},
    {"pace", scen_pace_run},
    {"pace-stress", scen_pace_run},
    {"pace-exact", scen_pace_run},
    {"pace-429", scen_pace_run},
    {"tag-limits", scen_taglimits_run},
};

/* binaries_check makes sure the programs a scenario runs are there. */
static int binaries_check(const scen_opts *o)
{
    static const char *const names[] = {"sluiced", "sluice-sink", "sluice"};
    char path[SCEN_PATH_BYTES + 32];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", o->bin, names[i]);
        if (access(path, X_OK) != 0)
            return scen_fail("%s is missing: the bench runs the programs next to itself "
                                  "(build them with make)",
                                  path);
    }
    return 0;
}

/* usage_error says what is wrong with the command line. Returns 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("; try --help\n", stderr);
    va_end(ap);
    return 2;
}

/* number_parse reads a whole decimal number from min to max into *v. */
static bool number_parse(const char *text, long min, long max, long *v)
{
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (errno || end == text || *end || n < min || n > max)
        return false;
    *v = n;
    return true;
}

int scen_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"scenario", required_argument, NULL, OPT_SCENARIO},
        {"out", required_argument, NULL, OPT_OUT},
        {"seconds", required_argument, NULL, OPT_SECONDS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"inproc", no_argument, NULL, OPT_INPROC},
        {"sink-burst", required_argument, NULL, OPT_SINK_BURST},
        {"broker-burst", required_argument, NULL, OPT_BROKER_BURST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    scen_opts o = {.seed = (unsigned)time(NULL)};
    const char *out = NULL;
    long v;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_SCENARIO: o.scenario = optarg; break;
        case OPT_OUT: out = optarg; break;
        case OPT_SECONDS:
            if (!number_parse(optarg, 1, SCEN_MAX_SECONDS, &v))
                return usage_error("bad --seconds '%s' (expected 1 to %d)", optarg,
                                            SCEN_MAX_SECONDS);
            o.seconds = (int)v;
            break;
        case OPT_SEED:
            if (!number_parse(optarg, 0, UINT_MAX, &v))
                return usage_error("bad --seed '%s' (expected 0 to %u)", optarg,
                                            UINT_MAX);
            o.seed = (unsigned)v;
            break;
        case OPT_INPROC: o.inproc = true; break;
        case OPT_SINK_BURST:
        case OPT_BROKER_BURST:
            if (!number_parse(optarg, 1, BURST_MAX, &v))
                return usage_error("bad --%s '%s' (expected 1 to %d)",
                                            ch == OPT_SINK_BURST ? "sink-burst" : "broker-burst",
                                            optarg, BURST_MAX);
            *(ch == OPT_SINK_BURST ? &o.sink_burst : &o.broker_burst) = (uint32_t)v;
            break;
        case 'h': fputs(help_text, stdout); return fflush(stdout) == 0 ? 0 : 1;
        default: return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!o.scenario)
        return usage_error("--scenario is required (throttle-quiz, priorities, ingest, shared-sink, pace, pace-stress, pace-exact, pace-429 or tag-limits)");
    size_t which = 0, n = sizeof scenarios / sizeof scenarios[0];
    while (which < n && strcmp(scenarios[which].name, o.scenario) != 0)
        which++;
    if (which == n)
        return usage_error("no scenario '%s' (throttle-quiz, priorities, ingest, shared-sink, pace, pace-stress, pace-exact, pace-429 or tag-limits)",
                                    o.scenario);
    int len = out ? snprintf(o.out, sizeof o.out, "%s", out)
                  : snprintf(o.out, sizeof o.out, "bench-out/%s", o.scenario);
    if (len <= 0 || len >= (int)sizeof o.out - 64)
        return usage_error("--out is too long (at most %zu bytes)", sizeof o.out - 64);
    if (scen_proc_exe_dir(o.bin, sizeof o.bin) != 0 || binaries_check(&o) != 0 ||
        scen_proc_mkdirs(o.out) != 0)
        return 1;
    signals_catch();
    int rc = scenarios[which].fn(&o);
    fflush(stdout);
    if (scen_stopping()) {
        scen_fail("interrupted");
        return 1;
    }
    return rc == 0 ? 0 : 1;
}
