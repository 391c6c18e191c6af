/*
 * cli_backup.c - `sluice backup` and `sluice settings`: taking a copy of a
 * running broker, and writing its settings down.
 *
 *   backup --to DIR [--json]
 *       asks the broker for a backup into DIR, a directory on the broker's
 *       machine that does not exist or is empty (a relative DIR is made
 *       absolute here, from this command's directory: the same machine),
 *       then asks for its state every POLL_MS until the copy is done or
 *       failed. The broker makes a checkpoint and copies its store on a
 *       thread of its own while it serves (broker/README.md, Backups).
 *   backup status [--json]
 *       the last backup's state.
 *   settings export
 *       the running settings of the sink, the levels, the pools and the tag
 *       patterns as sluice.conf declarations, which a config file may hold
 *       (applied at start and on SIGHUP).
 *
 * Costs: a round trip per poll; the copy itself is the broker's.
 */
#include "cli_backup.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_text.h"

const cli_core_help cli_backup_help = {
    .summary = "copy a running broker's store into a directory",
    .body =
        "  sluice backup --to DIR [--json]\n"
        "  sluice backup status [--json]\n"
        "      Copy the running broker's store into DIR on the broker's machine (new,\n"
        "      or empty; a relative DIR is taken from here), consistent as of a\n"
        "      checkpoint made first, while the broker serves; 'sluiced --data DIR'\n"
        "      opens the copy. Waits until the copy is done; 'status' shows the last\n"
        "      one.\n"
        "      --to DIR             where the copy goes\n"
        "      --json               the result as an object\n",
    .examples =
        "  sluice backup --to /var/backups/sluice/today  a hot copy\n",
};

const cli_core_help cli_settings_help = {
    .summary = "print the running settings as sluice.conf declarations",
    .body =
        "  sluice settings export\n"
        "      Print the running settings of the sink, levels, pools and tags as\n"
        "      sluice.conf declarations ([sink], [level NAME], [pool NAME],\n"
        "      [tag \"P\"]), which a broker started with that file applies.\n",
    .examples =
        "  sluice settings export >> /etc/sluice/sluice.conf\n",
};

#define POLL_MS 100

enum { OPT_TO = 256, OPT_JSON };

static void status_print(const sl_backup_info *s, bool json)
{
    if (json) {
        printf("{\"state\":");
        cli_text_json_string(s->state);
        printf(",\"path\":");
        cli_text_json_string(s->path);
        printf(",\"bytes\":%" PRIu64 ",\"elapsed_ms\":%" PRIu64 ",\"message\":", s->bytes, s->elapsed_ms);
        cli_text_json_string(s->msg);
        printf("}\n");
    } else if (!strcmp(s->state, "none")) {
        printf("no backup since the broker started\n");
    } else {
        char took[32];
        cli_text_seconds_format(s->elapsed_ms, took, sizeof took);
        printf("backup into %s: %s after %s", s->path, s->state, took);
        if (!strcmp(s->state, "done"))
            printf(", %" PRIu64 " bytes", s->bytes);
        printf("\n%s\n", s->msg);
    }
}

static int status(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json;
    sl_backup_info s;
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    int rc = sl_backup_status(g->c, &s);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    status_print(&s, json);
    return cli_core_output_done(cmd);
}

int cli_backup_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"to", required_argument, NULL, OPT_TO},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc > 1 && !strcmp(argv[1], "status"))
        return status(g, "backup status", argc - 1, argv + 1);
    const char *to = NULL;
    bool json = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_TO: to = optarg; break;
        case OPT_JSON: json = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!to || !to[0])
        return cli_text_usage_error(cmd, "expected --to DIR, a new or empty directory on the broker's machine");
    char dir[PATH_MAX + 1];
    if (to[0] == '/') {
        snprintf(dir, sizeof dir, "%s", to);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(dir, sizeof dir, "%s/%s", cwd, to) >= sizeof dir) {
            cli_text_say(cmd, "cannot make %s absolute: %s", to, cli_text_strerror(errno));
            return CLI_TEXT_EXIT_FAILURE;
        }
    }
    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    int rc = sl_backup(g->c, dir);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, dir, NULL);
    sl_backup_info s;
    for (;;) {
        if ((rc = sl_backup_status(g->c, &s)))
            return cli_core_broker_error(g, cmd, rc, dir, "; the backup may go on in the broker (sluice backup "
                                         "status)");
        if (strcmp(s.state, "checkpoint") && strcmp(s.state, "copying"))
            break;
        nanosleep(&(struct timespec){0, POLL_MS * 1000000L}, NULL);
    }
    status_print(&s, json);
    if (strcmp(s.state, "done")) {
        cli_text_say(cmd, "the backup into %s failed: %s", dir, s.msg);
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

static int settings_export(cli_core *g, const char *cmd, int argc, char **argv)
{
    const char *text;
    size_t len;
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 0, "nothing");
    if (st != CLI_CORE_GO_ON || (st = cli_core_connect(g, cmd)))
        return st;
    int rc = sl_settings_export(g->c, &text, &len);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    if (len && fwrite(text, 1, len, stdout) != len) {
        cli_text_say(cmd, "writing the settings failed");
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

int cli_settings_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"export", settings_export, &cli_settings_help},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
