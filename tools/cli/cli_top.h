/*
 * cli_top.h - the live views: `sluice top` (full screen) and `sluice stats
 * --watch [S]` (plain lines, for any terminal or a log).
 */
#ifndef SLUICE_CLI_TOP_H
#define SLUICE_CLI_TOP_H

#include <stdbool.h>

#include "cli_core.h"

/* cli_top_help is `sluice top --help`. */
extern const cli_core_help cli_top_help;

/* cli_top_main runs `sluice top [--interval S]`. Returns the exit status. */
int cli_top_main(cli_core *g, const char *cmd, int argc, char **argv);

/* cli_top_watch_take takes `--watch [S]` and `--count N` out of argv
 * (closing the gap; argv stays NULL-terminated) into *interval_ms (0: not
 * watching; S defaults to 2, fractions allowed) and *count (0: until
 * interrupted). Returns the new argc, or minus the exit status of a usage
 * error, reported. */
int cli_top_watch_take(const char *cmd, int argc, char **argv, int *interval_ms, long *count);

/* A function that prints one stats snapshot; returns 0 or -1 (out of memory). */
typedef int (*cli_top_print_fn)(const sl_stats *st, const sl_stats_ex *ex, bool json);

/* cli_top_watch prints the broker's stats with print every interval_ms,
 * count times (0: until SIGINT or SIGTERM), each table after a line with the
 * time; with json, one object per line. g must be connected. Returns the
 * exit status. */
int cli_top_watch(cli_core *g, const char *cmd, int interval_ms, long count, bool json, cli_top_print_fn print);

#endif /* SLUICE_CLI_TOP_H */
