/*
 * cli_stats.h - the `sluice stats` command.
 */
#ifndef SLUICE_CLI_STATS_H
#define SLUICE_CLI_STATS_H

#include "cli_core.h"

/* cli_stats_help is `sluice stats --help`. */
extern const cli_core_help cli_stats_help;

/* cli_stats_main runs `sluice stats` (a cli_core_fn). */
int cli_stats_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_STATS_H */
