/*
 * bench_args.c - sluice-bench's --help and its options: what each row
 * measures, in the user's words, and the checks of the command line. The
 * rows themselves are defined in sluice-bench.c.
 */
#include "bench_args.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_core.h"
#include "bench_latency.h"
#include "bench_pick.h"
#include "bench_sched.h"
#include "sluice.h"


static void usage(FILE *f)
{
    fprintf(f,
"usage: sluice-bench [--spawn PATH_TO_SLUICED [--slowdisk SHIM]\n"
"                     | -b ENDPOINT [--force]]\n"
"                    [--seconds S] [--quick] [--tenants | --sink | --http | --peer]\n"
"\n"
"sluice-bench measures a Sluice broker against its performance targets, next to\n"
"the raw limits of this machine, and prints one table on stdout (progress goes\n"
"to stderr). Every message body is %d bytes. The rows:\n"
"\n"
"  confirmed enqueue   sl_send in a loop from 1 and from %d connections, then\n"
"                      sl_send_async keeping %d publishes outstanding. A publish\n"
"                      counts once the broker confirms it is durably stored.\n"
"                      Then the windowed one with 4 headers of 64 B on every\n"
"                      message and without, in paired turns: their ratio.\n"
"  drain               %d consumers with credit 1 ack every delivery until the\n"
"                      queue is empty; it is first topped up to %d messages.\n"
"                      Again with 1 consumer of credit 64, and (second broker)\n"
"                      with every ack durable before its OK (--ack-flush-ms 0).\n"
"  sluice consume      `sluice consume -c 64 > /dev/null` over the same backlog.\n"
"  latency             publish -> deliver at a steady %d msgs/s: p50 and p99.\n"
"  dispatch            %d consumers, each in its own pool (pool-0..2 serve one\n"
"                      level each, the rest every level), credit %d, ack every\n"
"                      delivery of %d messages spread over the levels.\n"
"  starvation          one consumer (pool starve) acks about %d ms of level-0\n"
"                      messages; how long one message on the lowest level waits\n"
"                      behind them, with no deadline and with a %d ms deadline.\n"
"  metering            sink and level buckets while backlogged: delivered rates.\n"
"  beanstalkd -f 0     with --spawn, when beanstalkd is installed: the peer,\n"
"                      on a loopback port, measured right after each enqueue,\n"
"                      drain and latency row (reserve + delete for an ack);\n"
"                      ratio rows state Sluice against it; the 1 x 1 and\n"
"                      4 x 1 ones in alternating 1 s turns (which goes first\n"
"                      turning about), beside the raw flush, a --wal-buffered\n"
"                      broker and, as the control, a second beanstalkd.\n"
"  ..., CURVE          with --spawn: the windowed enqueue and the drain again,\n"
"                      against a broker with --curve-secret and --auth; the\n"
"                      windowed one also in turns, a fresh CURVE broker and\n"
"                      a fresh plaintext one side by side.\n"
"  pick rule           the broker's pick rule alone, over %d levels holding\n"
"                      1,000,000 messages, with deadlines and aging; no broker.\n"
"  fair pick           deficit round robin inside one level over 100,000 waiting\n"
"                      tags (broker/sched/drr.c), one pick in 16 held by its tag's limit.\n"
"  tenants             with --spawn, brokers of their own: tenant B's p99 wait\n"
"                      beside tenant A's 100,000 backlog at a 1,000/s sink, FIFO\n"
"                      and fair by tag; dispatch with 1,000 tags waiting, FIFO\n"
"                      and fair; broker RSS per waiting tag (100,000 tags), live\n"
"                      and, after a restart, the heap alone.\n"
"  sink used           with --spawn, on processes of their own: a sink set with\n"
"                      the defaults (burst 1) at 100, 1,000, 2,000 and 5,000/s\n"
"                      over a backlog: the share of the rate delivered through\n"
"                      one `sluice consume -c 64`; through `consume --post\n"
"                      --workers 8` into `sluice-sink --burst 1` at the same\n"
"                      rate, and its 429s; through three brokers sharing the\n"
"                      rate in Redis (redis-server), one consume -c 64 each.\n"
"  HTTP                with --spawn, a broker with --http: publish over HTTP\n"
"                      (POST /api/v1/levels/low/messages, one at a time) against\n"
"                      the ZeroMQ 1 x 1 row, in turns; the 1 x 100 row with and\n"
"                      without four consoles open (each an event stream); what\n"
"                      publishing the snapshot costs the broker's loop.\n"
"  raw: LMDB           durable commits with 1 and with %d puts per transaction.\n"
"  raw: ZeroMQ         DEALER/ROUTER round trips over ipc://.\n"
"  raw: one flush      a 100-byte append and fdatasync; the 1 x 1 enqueue row is\n"
"                      stated against one flush plus one round trip.\n"
"  raw: ideal log      %d arrivals a second, one thread writing a 4 KiB record\n"
"                      and fdatasync for whatever waits: the least publish ->\n"
"                      durable can take on this disk, p50 and p99, beside the\n"
"                      latency row (which adds the sockets, dispatch, consumer).\n"
"\n"
"The raw rows measure the machine, not Sluice: they bound what any broker built\n"
"on LMDB and ZeroMQ can do here. A row with a target shows yes or MISS.\n"
"\n"
"Options:\n"
"      --spawn PATH    start PATH (a sluiced binary) on an ipc:// endpoint in a\n"
"                      fresh directory under /tmp, and stop and remove it at the end;\n"
"                      then a second one with --ack-flush-ms 0 for the durable drain\n"
"      --slowdisk SO   with --spawn: run the enqueue, drain and latency rows once more\n"
"                      on a broker whose every flush takes 1 ms longer (SO is the\n"
"                      slow-disk shim, build/rel/slowdisk.so; make bench passes it)\n"
"  -b, --broker EP     use the running broker at EP (default $SLUICE_BROKER,\n"
"                      else %s).\n"
"                      The bench refuses a broker with messages waiting,\n"
"                      delayed or in flight, or with consumers. It tags\n"
"                      what it publishes sluice-bench-PID and takes nothing else\n"
"                      (a message without its tag stops it, unacknowledged); it\n"
"                      skips the metering rows (they set the sink's limits),\n"
"                      and deletes the pools its scheduler rows make (pool-0..7,\n"
"                      starve); the starvation row changes the lowest level's\n"
"                      deadline while it runs (it is put back).\n"
"      --force         with -b: run beside the broker's messages and consumers:\n"
"                      the rows keep to a level that holds nothing (rows that\n"
"                      need a level that does are skipped); consumers there may\n"
"                      take the bench's messages\n"
"  -s, --seconds S     length of each timed row, 1..%d (default %d)\n"
"      --tenants       with --spawn: run only the tenant rows (about 40 s)\n"
"      --sink          with --spawn: run only the rows of the sink used at its\n"
"                      limit (about 25 s a rate with --seconds 3)\n"
"      --http          with --spawn: run only the HTTP server's rows (about 40 s)\n"
"      --ha            with --spawn: run only the high-availability rows (a ZeroMQ\n"
"                      round trip and a flush, then a lone broker and a group\n"
"                      of two with redis-server: about 1 minute)\n"
"      --peer          with --spawn: run only the rows compared with beanstalkd -f 0\n"
"                      (the enqueue, drain and latency rows, each beside the\n"
"                      peer's, one flush, the ideal log) and their ratios\n"
"  -q, --quick         smoke run: 1 s per row, at most %d publishes in the\n"
"                      1 x 100 row and a %d-message drain, %d messages to\n"
"                      dispatch and a %d-message starvation backlog\n"
"  -h, --help          show this help\n"
"      --version       show the version\n"
"\n"
"Exit status: 0 when every row ran, whether or not it met its target; 1 on an\n"
"error (broker unreachable, a publish refused, a message lost); 2 on a usage\n"
"error; 130 when interrupted.\n"
"\n"
"Examples:\n"
"  sluice-bench --spawn bin/sluiced\n"
"  sluice-bench --spawn bin/sluiced --quick\n"
"  sluice-bench --spawn bin/sluiced --tenants\n"
"  sluice-bench -b tcp://127.0.0.1:7470 --seconds 10\n"
"\n"
"Load scenarios (a broker, a throttled sink and consumers, end to end, with a\n"
"CSV, a chart and a summary): sluice-bench --scenario NAME [options], NAME one\n"
"of throttle-quiz, priorities, ingest, shared-sink, pace, pace-stress,\n"
"pace-exact, pace-429, tag-limits; see sluice-bench --scenario NAME --help.\n",
            BENCH_CORE_BODY_BYTES, PRODUCERS, WINDOW_MSGS, CONSUMERS, DRAIN_MSGS,
            BENCH_LATENCY_RATE_PER_S, BENCH_SCHED_POOLS, BENCH_SCHED_CREDIT, DISPATCH_MSGS,
            BENCH_SCHED_BUSY_MS, BENCH_SCHED_DEADLINE_MS, BENCH_PICK_LEVELS, LMDB_BATCH_PUTS, BENCH_LATENCY_RATE_PER_S,
            SL_DEFAULT_ENDPOINT, MAX_SECONDS, DEFAULT_SECONDS, DRAIN_MSGS_QUICK, DRAIN_MSGS_QUICK,
            DISPATCH_MSGS_QUICK, STARVE_MSGS_QUICK);
}

enum { OPT_SPAWN = 256, OPT_SLOWDISK, OPT_TENANTS, OPT_SINK, OPT_FORCE, OPT_HTTP, OPT_HA, OPT_PEER, OPT_VERSION };

static const struct option options[] = {
    {"spawn", required_argument, NULL, OPT_SPAWN},
    {"slowdisk", required_argument, NULL, OPT_SLOWDISK},
    {"broker", required_argument, NULL, 'b'},
    {"seconds", required_argument, NULL, 's'},
    {"quick", no_argument, NULL, 'q'},
    {"tenants", no_argument, NULL, OPT_TENANTS},
    {"sink", no_argument, NULL, OPT_SINK},
    {"force", no_argument, NULL, OPT_FORCE},
    {"http", no_argument, NULL, OPT_HTTP},
    {"ha", no_argument, NULL, OPT_HA},
    {"peer", no_argument, NULL, OPT_PEER},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

void bench_args_parse(int argc, char **argv, bench_args *b)
{
    const char **spawn = &b->spawn;
    int opt, seconds = 0;
    bool quick = false;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "b:s:qh", options, NULL)) != -1) {
        char *end;
        long v;
        switch (opt) {
        case OPT_SPAWN:
            *spawn = optarg;
            break;
        case OPT_SLOWDISK:
            b->slowdisk = optarg;
            break;
        case OPT_TENANTS:
            b->tenants_only = 1;
            break;
        case OPT_SINK:
            b->sink_only = 1;
            break;
        case OPT_FORCE:
            b->force = 1;
            break;
        case OPT_HTTP:
            b->http_only = 1;
            break;
        case OPT_HA:
            b->ha_only = 1;
            break;
        case OPT_PEER:
            b->peer_only = 1;
            break;
        case 'b':
            b->endpoint = optarg;
            break;
        case 's':
            errno = 0;
            v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > MAX_SECONDS) {
                fprintf(stderr, "sluice-bench: --seconds: '%s' is not a number from 1 to %d\n",
                        optarg, MAX_SECONDS);
                exit(2);
            }
            seconds = (int)v;
            break;
        case 'q':
            quick = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case OPT_VERSION:
            printf("sluice-bench %s (wire protocol %d)\n", SLUICE_VERSION, SL_WIRE_VERSION);
            exit(0);
        default:
            fprintf(stderr, "sluice-bench: unknown or incomplete option '%s'; try --help\n",
                    argv[optind - 1]);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-bench: unexpected argument '%s'; try --help\n", argv[optind]);
        exit(2);
    }
    if (b->slowdisk && !*spawn) {
        fprintf(stderr, "sluice-bench: --slowdisk needs --spawn (it preloads the shim into the broker)\n");
        exit(2);
    }
    if (b->ha_only && !*spawn) {
        fprintf(stderr, "sluice-bench: --ha needs --spawn (its rows start Redis and brokers of their own)\n");
        exit(2);
    }
    if (b->http_only && !*spawn) {
        fprintf(stderr, "sluice-bench: --http needs --spawn (its rows start a broker of their own)\n");
        exit(2);
    }
    if (b->peer_only && !*spawn) {
        fprintf(stderr, "sluice-bench: --peer needs --spawn (its rows start a broker and beanstalkd of their own)\n");
        exit(2);
    }
    if (b->tenants_only && !*spawn) {
        fprintf(stderr, "sluice-bench: --tenants needs --spawn (its rows start brokers of their own)\n");
        exit(2);
    }
    if (b->sink_only && !*spawn) {
        fprintf(stderr, "sluice-bench: --sink needs --spawn (its rows start brokers, sinks and Redis of their own)\n");
        exit(2);
    }
    if (b->sink_only && b->tenants_only) {
        fprintf(stderr, "sluice-bench: --tenants and --sink exclude each other; give neither for every row\n");
        exit(2);
    }
    if (*spawn && b->endpoint) {
        fprintf(stderr, "sluice-bench: --spawn and -b exclude each other\n");
        exit(2);
    }
    if (*spawn && b->force) {
        fprintf(stderr, "sluice-bench: --force is for a broker the bench did not start (-b); with --spawn the "
                        "broker is its own\n");
        exit(2);
    }
    const char *env = getenv("SLUICE_BROKER");
    if (!*spawn && !b->endpoint && env && env[0])
        b->endpoint = env; /* as sluice does */
    if (b->endpoint && strchr(b->endpoint, ',')) {
        fprintf(stderr, "sluice-bench: '%s': the bench measures one broker; give one endpoint\n", b->endpoint);
        exit(2);
    }
    b->seconds = seconds ? seconds : quick ? 1 : DEFAULT_SECONDS;
    b->quick = quick;
    b->drain_msgs = quick ? DRAIN_MSGS_QUICK : DRAIN_MSGS;
    b->dispatch_msgs = quick ? DISPATCH_MSGS_QUICK : DISPATCH_MSGS;
    b->starve_msgs = quick ? STARVE_MSGS_QUICK : 0;
}

