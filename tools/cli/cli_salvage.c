/*
 * cli_salvage.c - `sluice salvage --data DIR --to NEWDIR`.
 *
 * Salvage reads a stopped broker's data file page by page and its
 * write-ahead log, which takes the store's own knowledge of its format
 * (LMDB's pages, the records, the log): code this program, which sees only
 * the public client headers, does not have. So, as `sluice bench` runs
 * sluice-bench, this runs `sluiced --salvage DIR --to NEWDIR` from the
 * directory of this executable, and waits for it: sluiced logs each step
 * on stderr and prints what it recovered on stdout. No broker is involved;
 * DIR is only read (a broker still running on it is refused: its data file
 * is locked).
 *
 * Exit status: 0 when the new store was made, 1 when salvage could not
 * make it, 2 for a usage error.
 */
#include "cli_salvage.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_text.h"

enum { OPT_DATA = 256, OPT_TO };

const cli_core_help cli_salvage_help = {
    .summary = "rebuild a damaged store into a new data directory",
    .body =
        "  sluice salvage --data DIR --to NEWDIR\n"
        "      Rebuild a damaged store: read the stopped broker's data directory DIR\n"
        "      (every page of its data file checked, damaged pages read record by\n"
        "      record, then its write-ahead log), copy every message, dead letter and\n"
        "      setting whose checksum holds into a new data directory NEWDIR, and say\n"
        "      what could not be recovered. DIR is only read. Runs sluiced --salvage\n"
        "      from this program's directory; then start sluiced --data NEWDIR. For a\n"
        "      broker that refuses its store as corrupt, or one with a level\n"
        "      QUARANTINED (see 'sluice stats').\n"
        "      -d, --data DIR       the damaged store (a stopped broker's)\n"
        "      --to NEWDIR          where the rebuilt store goes (new, or empty)\n",
    .examples =
        "  sluice salvage --data /var/lib/sluice --to /var/lib/sluice.new\n",
};

int cli_salvage_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"to", required_argument, NULL, OPT_TO},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *data = NULL, *to = NULL;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":d:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd':
        case OPT_DATA: data = optarg; break;
        case OPT_TO: to = optarg; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!data || !to || !data[0] || !to[0])
        return cli_text_usage_error(cmd, "give the damaged store and a new directory: --data DIR --to NEWDIR");
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
    if (!slash) {
        cli_text_say(cmd, "cannot find this program's directory: %s", strerror(errno));
        return CLI_TEXT_EXIT_FAILURE;
    }
    strcpy(slash + 1, "sluiced");
    char *const args[] = {path, "--salvage", (char *)data, "--to", (char *)to, NULL};
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv(path, args);
        fprintf(stderr, "sluice: %s: cannot run %s: %s\n", cmd, path, strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        cli_text_say(cmd, "%s was not rebuilt (see the messages above); %s is as it was", to, data);
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}
