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
 *   pool     looks after consumer pools (cli_pool.c).
 *   level    sets and shows how each level is served (cli_level.c).
 *   tag      per-tag settings of fair levels (cli_tag.c).
 *   explain  says where a message is and why (cli_explain.c).
 *   sink     sets and shows the sink's rate limits (cli_sink.c).
 *   dead     lists, shows, requeues and purges dead letters (cli_dead.c).
 *   web      a one-time login link to the web console (cli_web.c).
 *   bench    runs sluice-bench from the same directory (the benchmark and
 *            its load scenarios live there).
 *   salvage  runs sluiced --salvage from the same directory (cli_salvage.c).
 *   help     the overview (sluice --help), a command's help, or every
 *            command's (help --all, what the manual page is made from).
 *
 * Each command's help lives in its file beside its code (a cli_core_help);
 * the table below names the command, its function and its help, so a new
 * command is a file and a line (tools/cli/README.md).
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

#include "cli_explain.h"
#include "cli_pool.h"
#include "cli_level.h"
#include "cli_msgs.h"
#include "cli_tag.h"
#include "cli_consume.h"
#include "cli_backup.h"
#include "cli_dead.h"
#include "cli_core.h"
#include "cli_keygen.h"
#include "cli_salvage.h"
#include "cli_send.h"
#include "cli_sink.h"
#include "cli_stats.h"
#include "cli_text.h"
#include "cli_top.h"
#include "cli_ha.h"
#include "cli_web.h"

#define DEFAULT_TIMEOUT_MS 5000

/* Long-only options get values outside the char range. */
enum { OPT_TIMEOUT = 256, OPT_VERSION };
enum { OPT_KEY = 300, OPT_SERVER_KEY };

/* The overview's top: `sluice --help` and `sluice help --all` start with it. */
static const char help_head[] =
"Usage: sluice [-b ENDPOINT] [--timeout DURATION] <command> [options]\n"
"\n"
"Publish to, consume from, inspect and administer a Sluice broker (sluiced).\n"
"\n"
"Global options (before the command or after its name, up to a \"--\"):\n"
"  -b, --broker ENDPOINT  the broker's ZeroMQ endpoint, tcp://HOST:PORT or\n"
"                         ipc://PATH (default: $SLUICE_BROKER, else\n"
"                         " SL_DEFAULT_ENDPOINT "), or its stream endpoint\n"
"                         (sluiced --stream-listen) as stream+tcp://HOST:PORT\n"
"                         or stream+ipc://PATH; several, comma-separated,\n"
"                         for the commands that take them (send, consume,\n"
"                         stats)\n"
"      --timeout DURATION\n"
"                         how long to wait for each broker reply (default\n"
"                         5000 ms; a plain number is milliseconds, or 5s)\n"
"      --client-key FILE, --key FILE\n"
"                         this client's CURVE key pair, a .key file from\n"
"                         `sluice keygen` (default: $SLUICE_KEY); for a broker\n"
"                         started with --auth, with --server-key. After `send`\n"
"                         only --client-key (`send --key` is an idempotency key)\n"
"      --server-key FILE  the broker's public key, its .pub file (default:\n"
"                         $SLUICE_SERVER_KEY)\n"
"  -h, --help             show this help and exit\n"
"      --version          show the version and exit\n";

/* The overview's end. */
static const char help_tail[] =
"Durations:\n"
"  Every option that takes a duration takes a unit: 500ms, 30s, 5m (or\n"
"  5min), 1h, 1d, fractions allowed (0.5s); a plain number keeps the unit\n"
"  its option names (milliseconds for --timeout, --delay, --ttl,\n"
"  --idle-exit and --http-timeout; seconds for the others).\n"
"\n"
"Environment:\n"
"  SLUICE_BROKER  the broker endpoint when -b is not given\n"
"  SLUICE_KEY, SLUICE_SERVER_KEY  the key files when --client-key and\n"
"                 --server-key are not given\n"
"\n"
"Exit status:\n"
"  0  success\n"
"  1  the broker failed, refused or did not answer; or reading input or\n"
"     writing output failed\n"
"  2  usage error: unknown command or option, bad value, unknown level\n";

/* `sluice bench --help` and `sluice help --help`; the layout is cli_core.h's */
static const cli_core_help cli_bench_help = {
    .summary = "run sluice-bench: the benchmark and the load scenarios",
    .body =
        "  sluice bench ARGS...\n"
        "      Runs sluice-bench ARGS... from this program's directory: the\n"
        "      benchmark table, and the load scenarios (sluice-bench --scenario\n"
        "      NAME; the nine are listed by 'sluice-bench --help').\n",
    .examples =
        "  sluice bench --quick                         a short run on its own broker\n",
};

static const cli_core_help cli_help_help = {
    .summary = "show the help of a command, or of every command",
    .body =
        "  sluice help [COMMAND | --all]\n"
        "      With no operand, what 'sluice --help' shows: the global options and\n"
        "      each command in one line. With COMMAND, what 'sluice COMMAND --help'\n"
        "      shows. With --all, every command's help, as the manual page\n"
        "      sluice(1) holds it.\n",
    .examples =
        "  sluice help send                             as sluice send --help\n",
};

/* ---- main ---- */

/* cmd_bench keeps `sluice bench ...` working: it runs sluice-bench, from the
 * directory of this executable, with the same arguments and this command's
 * broker (-b, or $SLUICE_BROKER) as its $SLUICE_BROKER, which sluice-bench
 * uses unless given -b or --spawn. */
static int cmd_bench(cli_core *g, const char *cmd, int argc, char **argv)
{
    (void)argc;
    if (g->endpoint && setenv("SLUICE_BROKER", g->endpoint, 1) != 0) {
        cli_text_say(cmd, "cannot pass the broker on: %s", strerror(errno));
        return CLI_TEXT_EXIT_FAILURE;
    }
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

/* The commands: a line each. A new command is one file, cli_NAME.c, with
 * its cli_core_fn and its cli_core_help, and one line here (see README.md). */
static int cmd_help(cli_core *g, const char *cmd, int argc, char **argv);

static const cli_core_command commands[] = {
    {"keygen", cli_keygen_main, &cli_keygen_help},
    {"send", cli_send_main, &cli_send_help},
    {"consume", cli_consume_main, &cli_consume_help},
    {"stats", cli_stats_main, &cli_stats_help},
    {"top", cli_top_main, &cli_top_help},
    {"pool", cli_pool_main, &cli_pool_help},
    {"level", cli_level_main, &cli_level_help},
    {"tag", cli_tag_main, &cli_tag_help},
    {"sink", cli_sink_main, &cli_sink_help},
    {"explain", cli_explain_main, &cli_explain_help},
    {"dead", cli_dead_main, &cli_dead_help},
    {"peek", cli_msgs_peek, &cli_peek_help},
    {"delete", cli_msgs_delete, &cli_delete_help},
    {"purge", cli_msgs_purge, &cli_purge_help},
    {"move", cli_msgs_move, &cli_move_help},
    {"backup", cli_backup_main, &cli_backup_help},
    {"settings", cli_settings_main, &cli_settings_help},
    {"salvage", cli_salvage_main, &cli_salvage_help},
    {"web", cli_web_main, &cli_web_help},
    {"ha", cli_ha_main, &cli_ha_help},
    {"bench", cmd_bench, &cli_bench_help},
    {"help", cmd_help, &cli_help_help},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* overview prints `sluice --help`: the global options, a line per command. */
static void overview(FILE *out)
{
    fprintf(out, "%s\nCommands:\n", help_head);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].help->summary);
    fprintf(out, "\n'sluice COMMAND --help' (or 'sluice help COMMAND') shows a command's\n"
                 "options and examples; 'sluice help --all' shows every command's, as\n"
                 "the manual page sluice(1) does.\n\n%s",
            help_tail);
}

/* all prints `sluice help --all`: the global options, every command's help
 * under "Commands:" and every example under "Examples:", in the layout
 * tools/dist/help2man.sh makes sluice(1) from. */
static void all(FILE *out)
{
    fprintf(out, "%s\nCommands:\n", help_head);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "%s%s", i ? "\n" : "", commands[i].help->body);
    fprintf(out, "\n%s\nExamples:\n", help_tail);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].help->examples)
            fputs(commands[i].help->examples, out);
}

/* cmd_help is `sluice help [COMMAND | --all]`. */
static int cmd_help(cli_core *g, const char *cmd, int argc, char **argv)
{
    (void)g;
    if (argc > 2)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[2]);
    if (argc < 2) {
        overview(stdout);
    } else if (strcmp(argv[1], "--all") == 0) {
        all(stdout);
    } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_core_help_print(&cli_help_help, stdout);
    } else {
        size_t i = 0;
        while (i < NCOMMANDS && strcmp(commands[i].name, argv[1]) != 0)
            i++;
        if (i == NCOMMANDS) {
            const char *near = cli_core_nearest(commands, NCOMMANDS, argv[1]);
            if (near)
                return cli_text_usage_error(cmd, "no command '%s': did you mean '%s'?", argv[1], near);
            return cli_text_usage_error(cmd, "no command '%s'", argv[1]);
        }
        cli_core_help_print(commands[i].help, stdout);
    }
    return cli_core_output_done(cmd);
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
    const char *env = getenv("SLUICE_BROKER");
    cli_core g = {.endpoint = env && env[0] ? env : SL_DEFAULT_ENDPOINT,
                  .timeout_ms = DEFAULT_TIMEOUT_MS};
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
        case 'h': overview(stdout); return cli_core_output_done(NULL);
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
    if (rest == 0) {
        overview(stderr);
        return CLI_TEXT_EXIT_USAGE;
    }
    int st = cli_core_run(&g, NULL, commands, NCOMMANDS, rest, argv + optind);
    sl_close(&g.c);
    return st;
}
