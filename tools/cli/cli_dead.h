/*
 * cli_dead.h - `sluice dead`: list, peek, requeue and purge dead letters.
 */
#ifndef SLUICE_CLI_DEAD_H
#define SLUICE_CLI_DEAD_H

#include "cli_core.h"

/* cli_dead_help is `sluice dead --help`. */
extern const cli_core_help cli_dead_help;

/* cli_dead_main runs `sluice dead SUBCOMMAND ...` (argv[0] is "dead").
 * Returns the exit status. */
int cli_dead_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_DEAD_H */
