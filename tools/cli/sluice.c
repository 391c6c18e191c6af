/*
 * sluice.c - the `sluice` command: publish, consume, inspect and administer
 * a broker from a shell.
 *
 * A thin program over the public client library (client/sluice.h), libc and
 * pthreads; it never speaks ZeroMQ or msgpack itself. main parses the global
 * options, then hands the rest of argv to one command:
 *
 *   send     publishes messages (cli_send.c).
 *   stats    prints the broker's per-level figures as a table or as JSON
 *            (cli_stats.c); with --watch, again and again (cli_top.c).
 *   top      a full-screen live view (cli_top.c).
 *   consume  receives messages for a crew of worker threads (cli_consume.c).
 *   pool, level, explain
 *            look after the broker's scheduling (cli_admin.c).
 *   sink     sets and shows the sink's rate limits (cli_sink.c).
 *   dead     lists, shows, requeues and purges dead letters (cli_dead.c).
 *   web      a one-time login link to the web console (cli_web.c).
 *   bench    runs sluice-bench from the same directory (the benchmark and
 *            its load scenarios live there).
 *
 * The global options -b, --timeout, --client-key (alias --key) and
 * --server-key are also taken after the command's name
 * (cli_core_globals_take), so `sluice stats -b EP` works for every command;
 * after `send`, --key is the idempotency key and only --client-key names the
 * key file.
 *
 * What the commands share is cli_core.c's; text in and out is cli_text.c's
 * and cli_table.c's. Exit status: 0 success, 1 a failure reported by or
 * about the broker (or while reading input or writing output), 2 a usage
 * error. Every message on stderr starts with "sluice: " and names the
 * command.
 *
 * Costs: see each command's file.
 */
#include "sluice.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_admin.h"
#include "cli_level.h"
#include "cli_tag.h"
#include "cli_consume.h"
#include "cli_dead.h"
#include "cli_core.h"
#include "cli_keygen.h"
#include "cli_send.h"
#include "cli_sink.h"
#include "cli_stats.h"
#include "cli_text.h"
#include "cli_top.h"
#include "cli_web.h"

#define DEFAULT_TIMEOUT_MS 5000

/* Long-only options get values outside the char range. */
enum { OPT_TIMEOUT = 256, OPT_VERSION };
enum { OPT_KEY = 300, OPT_SERVER_KEY };

static const char help_text[] =
"Usage: sluice [-b ENDPOINT] [--timeout MS] <command> [options]\n"
"\n"
"Publish to, consume from, inspect and administer a Sluice broker (sluiced).\n"
"\n"
"Global options (before the command or after its name, up to a \"--\"):\n"
"  -b, --broker ENDPOINT  the broker's ZeroMQ endpoint, tcp://HOST:PORT or\n"
"                         ipc://PATH (default: $SLUICE_BROKER, else\n"
"                         " SL_DEFAULT_ENDPOINT ")\n"
"      --timeout MS       how long to wait for each broker reply (default 5000)\n"
"      --client-key FILE, --key FILE\n"
"                         this client's CURVE key pair, a .key file from\n"
"                         `sluice keygen` (default: $SLUICE_KEY); for a broker\n"
"                         started with --auth, with --server-key. After `send`\n"
"                         only --client-key (`send --key` is an idempotency key)\n"
"      --server-key FILE  the broker's public key, its .pub file (default:\n"
"                         $SLUICE_SERVER_KEY)\n"
"  -h, --help             show this help and exit\n"
"      --version          show the version and exit\n"
"\n"
"Commands:\n"
"  sluice keygen NAME [--force] [--json]\n"
"      Write a new CURVE key pair here: NAME.key (public and secret keys,\n"
"      mode 0600; for sluiced --curve-secret or sluice --key) and NAME.pub\n"
"      (the public key; for the broker's --auth file, or --server-key).\n"
"      Refuses to replace existing files unless --force.\n"
"\n"
"  sluice send [-p LEVEL] [-t TAG] [--cost N] [-k KEY] [--delay MS] [--ttl MS]\n"
"              [BODY...]\n"
"      Publish messages. Each BODY argument is one message; with none, each\n"
"      line of standard input is one (without its newline; a line longer than\n"
"      the broker's largest body is an error). Prints the id of each message\n"
"      once the broker has durably stored it, one per line, in input order.\n"
"      Stops at the first failure; messages sent after the failed one may\n"
"      have been stored, and the error says how many.\n"
"      -p, --level LEVEL    priority level, by name or number (default: the\n"
"                           broker's default level)\n"
"      -t, --tag TAG        tag every message with TAG (up to 255 bytes)\n"
"      --cost N             units each message uses of every rate limit it\n"
"                           passes (requests, rows, ...; default 1)\n"
"      -k, --key KEY        idempotency key: a repeat within the broker's window\n"
"                           (default 5 minutes) stores nothing and prints the\n"
"                           first message's id. With several messages, message\n"
"                           N gets the key KEY:N\n"
"      --delay MS           deliver no sooner than MS milliseconds from now\n"
"      --ttl MS             time to live: not delivered within MS milliseconds,\n"
"                           the message becomes a dead letter\n"
"\n"
"  sluice consume [--pool NAME] [-p LEVELS] [-n COUNT] [--workers N]\n"
"                 [-c CREDIT] [--exec CMD | --post URL [--header H]...\n"
"                 [--http-timeout MS] [--tag-limit-header NAME[=VALUE]]]\n"
"                 [--verbose] [--idle-exit MS]\n"
"      Receive messages, print each body on its own line, and acknowledge it\n"
"      once printed. Runs until SIGINT or SIGTERM unless -n or --idle-exit\n"
"      ends it; messages being processed are then finished and settled, and\n"
"      the others return to the broker (a second signal stops at once).\n"
"      With -b A,B: one consumer per broker, each settling on its own broker;\n"
"      -n counts over all of them, --idle-exit ends each broker's on its own.\n"
"      --pool NAME          consumer pool to join (default: \"default\")\n"
"      -p, --levels LEVELS  comma-separated level names or numbers, such as\n"
"                           high,normal or 0,2 (default: all levels)\n"
"      -n, --count COUNT    stop after COUNT messages acked, nacked or\n"
"                           returned as throttled\n"
"      --workers N          process up to N messages at once, each in its own\n"
"                           thread (default 1, at most 256; with more than one,\n"
"                           output follows completion, not arrival). When the\n"
"                           pool has a size, the broker gives each member a\n"
"                           share of it, and the number of workers follows\n"
"                           that share (see 'sluice pool resize').\n"
"      -c, --credit CREDIT  deliveries to hold unacknowledged at once, those\n"
"                           waiting for a worker included (default: the\n"
"                           number of workers; at most 100000)\n"
"      --exec CMD           run /bin/sh -c CMD for each message with the body\n"
"                           on its standard input: exit status 0 acks it; 75\n"
"                           (EX_TEMPFAIL: the sink said \"too many requests\")\n"
"                           returns it without charging an attempt, and the\n"
"                           broker pauses and slows the sink; 76 (the sink\n"
"                           limited this message's tag, not itself) does the\n"
"                           same for its tag alone: that tag pauses and its\n"
"                           rate is cut, the rest flows on (an untagged\n"
"                           message: as 75); anything else nacks it (the\n"
"                           broker redelivers it up to its attempt limit).\n"
"                           Bodies are not printed.\n"
"      --post URL           POST each body to URL (http or https): 2xx acks;\n"
"                           429 or 503 returns it as throttled, honouring\n"
"                           Retry-After (seconds or an HTTP date); another\n"
"                           5xx, no answer or a timeout nacks with backoff\n"
"                           (0.5 s doubling per attempt, at most 60 s);\n"
"                           another 4xx rejects it: a dead letter at once,\n"
"                           with the status as its reason. Not with --exec.\n"
"      --header 'Name: value'  add a request header (repeatable)\n"
"      --http-timeout MS    limit for each request (default 10000)\n"
"      --tag-limit-header NAME[=VALUE]\n"
"                           a 429 or 503 carrying header NAME (with VALUE,\n"
"                           any case, when given) hit a per-tag limit of the\n"
"                           service: the message returns as throttled for its\n"
"                           tag alone (as exit 76 of --exec) and the other\n"
"                           tags flow on. Default: off, every 429 throttles\n"
"                           the sink. For sluice-sink --key-header\n"
"                           X-Sluice-Tag: --tag-limit-header X-Limit-Scope=key\n"
"      -v, --verbose        prefix each body with\n"
"                           \"id=ID level=NAME tag=TAG attempt=N \", and\n"
"                           \"cost=N \" after them when the cost is not 1;\n"
"                           with --post, say what each 429 and 5xx did (a\n"
"                           throttle's scope: sink or tag)\n"
"      --idle-exit MS       exit once no message has arrived or been in\n"
"                           progress for MS milliseconds\n"
"\n"
"  sluice bench ARGS...\n"
"      Runs sluice-bench ARGS... (the benchmark table, and the load scenarios:\n"
"      sluice-bench --scenario NAME; the nine are listed by\n"
"      'sluice-bench --help').\n"
"\n"
"  sluice stats [--json]\n"
"      Show each level's depth, in-flight, delayed and dead-letter counts, the\n"
"      age of its oldest ready message, its counters since the broker started,\n"
"      how many deliveries it won by priority (PRIO), by aging (AGED) and by\n"
"      being past its deadline (OVERDUE), how many the sink refused\n"
"      (THROTTLED; BY-TAG: of them, those for their tag alone), and how long\n"
"      its ready messages should take to leave at the rate it gets (ETA);\n"
"      and, as 'sink show' says it, the sink's rate, the rate in use now and\n"
"      why (configured, coordinated share, cut after 429, recovering); as a\n"
"      table or as one JSON object (key \"sink\").\n"
"  sluice stats --watch [S] [--count N] [--json]\n"
"      The same every S seconds (default 2, fractions allowed), each table\n"
"      after a line with the time (with --json, one object per line), until\n"
"      Ctrl-C or N times. No escape sequences: for plain terminals and logs.\n"
"  sluice top [--interval S]\n"
"      A full-screen live view, refreshed every S seconds (default 1): levels\n"
"      with rates in, out and acknowledged over the last interval, pools, the\n"
"      sink. Press q to quit. Fits an 80x24 terminal; works over ssh.\n"
"\n"
"  sluice pool list [--json]\n"
"      Show each consumer pool: the levels it serves, its size (the most\n"
"      deliveries its members hold at once; \"-\" for no limit), its members,\n"
"      the deliveries they hold, deliveries per second, the size autoscaling\n"
"      would choose, and whether it is paused or autoscaled.\n"
"  sluice pool resize NAME SIZE\n"
"      Let pool NAME hold at most SIZE deliveries at once (0: no limit),\n"
"      creating it, for all levels, if needed. Shrinking never takes back a\n"
"      delivery in progress. Members are told their share of the size.\n"
"  sluice pool pause NAME\n"
"  sluice pool resume NAME\n"
"      Stop, or restart, deliveries to the pool's members.\n"
"  sluice pool delete NAME [--force] [--json]\n"
"      Delete pool NAME and its settings. A pool with members is refused\n"
"      unless --force, which drops them as if they had said goodbye (their\n"
"      deliveries return uncharged). A pool consumers created by naming it,\n"
"      and nobody sized, paused or autoscaled, goes away by itself once idle\n"
"      for --pool-reap-ms (a minute); the broker holds --pool-max pools.\n"
"  sluice pool autoscale NAME --min A --max B --target-wait SECONDS\n"
"  sluice pool autoscale NAME --off\n"
"      Let the broker size the pool between A and B from its backlog, its\n"
"      arrival rate and how long messages take, so that a message waits\n"
"      about SECONDS (fractions allowed) before it is delivered. --off\n"
"      stops that and keeps the current size.\n"
"\n"
"  sluice level list [--json]\n"
"      Show each level's deadline and aging step, whether it is paused, its\n"
"      ready messages and the age of the oldest, its rate ceiling (MAX-RATE,\n"
"      each window joined by +) with its burst and the tokens it holds now,\n"
"      its guaranteed rate\n"
"      (MIN-RATE), and how long its ready messages should take to leave (ETA).\n"
"  sluice level set LEVEL [--deadline SECONDS] [--aging-step SECONDS]\n"
"                   [--max-rate WINDOW]... [--min-rate RATE] [--burst N]\n"
"                   [--fair tag|fifo]\n"
"      --deadline: a message that has waited longer than this is served\n"
"      before higher levels. --aging-step: each time a message has waited\n"
"      this long, it counts as one level higher. --max-rate: the most units\n"
"      per second (message costs; see send --cost) that leave the level, with\n"
"      bursts of up to --burst units; or, repeated, several windows that\n"
"      all hold (see WINDOW below). --min-rate: units per second of the\n"
"      sink's rate the level gets before lower levels; what it leaves unused\n"
"      goes to others. SECONDS and RATE may be fractional (0.5); \"off\" or 0\n"
"      switches a setting off; an option not given leaves its setting as it\n"
"      is. --fair tag: serve the level fair by tag (deficit round robin over\n"
"      the tags with messages waiting, FIFO within a tag; untagged messages\n"
"      are one tenant of their own); --fair fifo: in publish order (the\n"
"      default). Only while the level holds no messages.\n"
"  sluice level pause LEVEL\n"
"  sluice level resume LEVEL\n"
"      Stop, or restart, deliveries from a level; publishing to it goes on.\n"
"      LEVEL is a name or a number, here and in 'level set'.\n"
"\n"
"  sluice tag set PATTERN [--max-rate WINDOW]... [--burst B] [--inflight N]\n"
"                 [--weight W] [--each] [--off]\n"
"      Per-tag settings of levels served fair by tag: a rate limit, an\n"
"      in-flight cap and a weight (1..1000, turns per round) for the tags\n"
"      PATTERN (a glob, or an exact tag) matches; the first pattern set that\n"
"      matches a tag wins. --each: a bucket and cap per tag instead of one\n"
"      shared. --off removes them. Stored; applies at once.\n"
"  sluice tag list [--json]\n"
"      The patterns, then the tags with the most waiting: level, depth, in\n"
"      flight, rate, tokens, weight, paused, oldest age.\n"
"  sluice tag pause TAG\n"
"  sluice tag resume TAG\n"
"      Stop, or restart, deliveries of one tag; the others flow on.\n"
"      Example: sluice tag set 'gold-*' --weight 4; sluice tag --help.\n"
"\n"
"  sluice sink set [--max-rate WINDOW]... [--burst N] [--inflight N]\n"
"      Limit the sink, the service consumers call: at most RATE units per\n"
"      second (fractions allowed) with bursts of up to N, and at most\n"
"      --inflight deliveries out at once. Give at least one; \"off\" or 0\n"
"      removes a limit; an option not given leaves its limit as it is. When\n"
"      the sink refuses a message (consume --exec exits 75), the broker pauses\n"
"      and lowers the rate it uses, then climbs back to RATE. --rate is the\n"
"      same option as --max-rate.\n"
"      WINDOW, for --max-rate here and in 'level set': RATE (per second, as\n"
"      always; its burst is --burst, else the one it had), or COUNT/PERIOD as\n"
"      500/min or 8/10s (periods ms, s, min, h, d; its burst is COUNT: that\n"
"      many may go at once), either followed by :BURST to say its burst.\n"
"      Repeat --max-rate for up to 4 windows, all of which hold (\"10/s and\n"
"      500/min\"); together they replace the windows the limit had.\n"
"  sluice sink show [--json]\n"
"      Show the sink's limits, the rate the broker uses now, the deliveries\n"
"      out, the tokens in its bucket, and how long dispatch stays paused.\n"
"\n"
"  sluice explain ID\n"
"      Say where message ID is (ready, leased, delayed, dead or gone) and why\n"
"      it has not been delivered yet.\n"
"\n"
"  sluice dead list LEVEL [--limit N] [--after ID] [--json]\n"
"      List the dead letters of LEVEL (messages that used up their attempts,\n"
"      or whose time to live ran out), oldest (smallest id) first: id, tag,\n"
"      attempts, when it died (UTC), reason and the start of the body.\n"
"      --limit N   show at most N (default 100)\n"
"      --after ID  start after ID\n"
"      --json      an array of objects: id, level, tag, attempts, when,\n"
"                  died_ms, reason, body_preview, body_bytes\n"
"  sluice dead peek ID\n"
"      Write dead letter ID's whole body to standard output, byte for byte.\n"
"  sluice dead requeue LEVEL|ID [--to LEVEL] [--limit N] [--json]\n"
"      Put the dead letters of LEVEL (or the one with id ID) back at the tail\n"
"      of their level, or of --to LEVEL, as new: attempt 0, no time to live.\n"
"      A plain number is a dead letter's id if there is one, else a level;\n"
"      level:N and id:N say which. Works in chunks of 1000, each one\n"
"      transaction: if it is cut short, run it again; no message is lost or\n"
"      requeued twice.\n"
"  sluice dead purge LEVEL [--older-than S] [--limit N] [--json]\n"
"      Delete dead letters of LEVEL for good: all, or those that died more\n"
"      than S seconds ago; at most N. Chunks of 1000, like requeue.\n"
"\n"
"  sluice web login [--ttl DURATION] [--json]\n"
"      Print a one-time link, http://ADDR:PORT/#login=TOKEN, to the broker's\n"
"      web console (sluiced --http) for this client's principal; the session\n"
"      has its role and lasts DURATION (default 8h; 30m, 1d, ...).\n"
"\n"
"  Changes made with pool, level and sink take effect at once (new rates\n"
"  within a second) and survive a broker restart.\n"
"\n"
"Environment:\n"
"  SLUICE_BROKER  the broker endpoint when -b is not given\n"
"  Several brokers: -b tcp://a:7470,tcp://b:7470 (or SLUICE_BROKER alike);\n"
"  `sluice stats` then shows one table, a row per broker and the totals.\n"
"\n"
"Exit status:\n"
"  0  success\n"
"  1  the broker failed, refused or did not answer; or reading input or\n"
"     writing output failed\n"
"  2  usage error: unknown command or option, bad value, unknown level\n"
"\n"
"Examples:\n"
"  sluice send -p high 'rebuild index'          publish one urgent message\n"
"  seq 1000 | sluice send -t batch7             publish 1000 messages\n"
"  sluice consume -p high,normal --exec ./job.sh --idle-exit 2000\n"
"  sluice consume --pool render --workers 4 --exec ./render.sh\n"
"  sluice pool resize render 8                  8 at once across the pool\n"
"  sluice level set low --aging-step 30         low waits at most ~1 min\n"
"  sluice level set low --min-rate 5            low is never starved below 5/s\n"
"  sluice sink set --rate 100 --burst 20        the sink takes 100 a second\n"
"  sluice sink set --max-rate 10/s --max-rate 500/min  10 a second, 500 a minute\n"
"  sluice explain 42                            why is message 42 waiting?\n";

/* ---- main ---- */

static int cmd_help(cli_core *g, const char *cmd, int argc, char **argv)
{
    (void)argc, (void)argv;
    fputs(g->help, stdout);
    return cli_core_output_done(cmd);
}

/* cmd_bench keeps `sluice bench ...` working: it runs sluice-bench, from the
 * directory of this executable, with the same arguments. */
static int cmd_bench(cli_core *g, const char *cmd, int argc, char **argv)
{
    (void)g, (void)argc;
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
    if (!slash) {
        cli_text_say(cmd, "cannot find this program's directory: %s", strerror(errno));
        return CLI_TEXT_EXIT_FAILURE;
    }
    strcpy(slash + 1, "sluice-bench");
    argv[0] = path;
    fflush(NULL);
    execv(path, argv);
    cli_text_say(cmd, "cannot run %s: %s", path, strerror(errno));
    return CLI_TEXT_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"broker", required_argument, NULL, 'b'},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {"key", required_argument, NULL, OPT_KEY},
        {"client-key", required_argument, NULL, OPT_KEY},
        {"server-key", required_argument, NULL, OPT_SERVER_KEY},
        {NULL, 0, NULL, 0},
    };
    static const cli_core_command commands[] = {
        {"keygen", cli_keygen_main},
        {"send", cli_send_main},       {"consume", cli_consume_main}, {"stats", cli_stats_main},
        {"pool", cli_admin_pool}, {"level", cli_level_main},    {"explain", cli_admin_explain},
        {"sink", cli_sink_main},  {"bench", cmd_bench},          {"help", cmd_help},
        {"dead", cli_dead_main},
        {"top", cli_top_main},
        {"tag", cli_tag_main},
        {"web", cli_web_main},
    };
    const char *env = getenv("SLUICE_BROKER");
    cli_core g = {.endpoint = env && env[0] ? env : SL_DEFAULT_ENDPOINT,
                  .timeout_ms = DEFAULT_TIMEOUT_MS,
                  .help = help_text};
    const char *key_env = getenv("SLUICE_KEY"), *server_env = getenv("SLUICE_SERVER_KEY");
    g.key_file = key_env && key_env[0] ? key_env : NULL;
    g.server_key_file = server_env && server_env[0] ? server_env : NULL;
    int ch;
    opterr = 0;
    /* '+': stop at the command, whose options are its own */
    while ((ch = getopt_long(argc, argv, "+:b:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'b':
        case OPT_TIMEOUT: {
            int st = cli_core_global_set(&g, ch == 'b' ? "broker" : "timeout", optarg);
            if (st != CLI_CORE_GO_ON)
                return st;
            break;
        }
        case OPT_KEY:
        case OPT_SERVER_KEY: {
            int st = cli_core_global_set(&g, ch == OPT_KEY ? "key" : "server-key", optarg);
            if (st != CLI_CORE_GO_ON)
                return st;
            break;
        }
        case 'h': fputs(help_text, stdout); return cli_core_output_done(NULL);
        case OPT_VERSION:
            printf("sluice %s (wire protocol %d)\n", SLUICE_VERSION, SL_WIRE_VERSION);
            return 0;
        default: return cli_text_option_error(NULL, ch, argv);
        }
    }
    int rest = argc - optind;
    if (rest > 0) {
        rest = cli_core_globals_take(&g, rest, argv + optind);
        if (rest < 0)
            return -rest;
    }
    int st = cli_core_run(&g, NULL, commands, sizeof commands / sizeof commands[0], rest,
                          argv + optind);
    sl_close(&g.c);
    return st;
}
